#include <stdint.h>
#include <pixman.h>
#include <wlr/util/log.h>
#include "render/compose.h"
#include "render/format.h"
#include "wlatomic/capture.h"

/*
 * pixman samples sources through 16.16 fixed-point coordinates, so neither a
 * framebuffer nor a destination rectangle (whose local coordinates go through
 * the transform) may reach 32768 pixels.
 */
#define WLA_COMPOSE_MAX_SIZE 32767

static bool check_layer(const struct wla_layer *l, size_t i, const struct wla_format_info *fmt)
{
	if (!l->data) {
		wlr_log(WLR_ERROR, "compose: layer %zu has no pixel data", i);
		return false;
	}
	if (l->width == 0 || l->height == 0 || l->width > WLA_COMPOSE_MAX_SIZE ||
			l->height > WLA_COMPOSE_MAX_SIZE) {
		wlr_log(WLR_ERROR, "compose: layer %zu fb size %ux%u is outside 1..%d",
			i, l->width, l->height, WLA_COMPOSE_MAX_SIZE);
		return false;
	}
	/* pixman addresses rows in 32-bit words. */
	if (l->stride % 4 != 0 || (uint64_t)l->stride < (uint64_t)l->width * fmt->bytes_per_pixel) {
		wlr_log(WLR_ERROR, "compose: layer %zu stride %u is not a multiple of 4 of at "
			"least %u bytes (%s, width %u)", i, l->stride,
			l->width * fmt->bytes_per_pixel, fmt->name, l->width);
		return false;
	}
	if ((uintptr_t)l->data % 4 != 0) {
		wlr_log(WLR_ERROR, "compose: layer %zu data %p is not 4-byte aligned", i, l->data);
		return false;
	}
	if (l->src_w == 0 || l->src_h == 0 ||
			(uint64_t)l->src_x + l->src_w > (uint64_t)l->width << 16 ||
			(uint64_t)l->src_y + l->src_h > (uint64_t)l->height << 16) {
		wlr_log(WLR_ERROR, "compose: layer %zu src %.4f,%.4f %.4fx%.4f is empty or "
			"outside its %ux%u fb", i, l->src_x / 65536.0, l->src_y / 65536.0,
			l->src_w / 65536.0, l->src_h / 65536.0, l->width, l->height);
		return false;
	}
	if (l->dst_w > WLA_COMPOSE_MAX_SIZE || l->dst_h > WLA_COMPOSE_MAX_SIZE) {
		wlr_log(WLR_ERROR, "compose: layer %zu dst_w x dst_h %ux%u exceeds %d", i,
			l->dst_w, l->dst_h, WLA_COMPOSE_MAX_SIZE);
		return false;
	}
	return true;
}

/* Clip [pos, pos + len) to [0, limit); false if nothing is left. */
static bool clip_span(int32_t pos, uint32_t len, uint32_t limit, int32_t *start, int32_t *end)
{
	int64_t s = pos, e = (int64_t)pos + len;
	if (s < 0) {
		s = 0;
	}
	if (e > limit) {
		e = limit;
	}
	if (s >= e) {
		return false;
	}
	*start = (int32_t)s;
	*end = (int32_t)e;
	return true;
}

static bool compose_layer(pixman_image_t *dst_img, const struct wla_image *dst,
	const struct wla_layer *l, size_t i)
{
	char name[16];
	const struct wla_format_info *fmt = wla_format_get(l->format);
	if (!fmt) {
		wlr_log(WLR_ERROR, "compose: layer %zu format %s (0x%08x) is not supported",
			i, wla_format_name(l->format, name), l->format);
		return false;
	}
	if (!check_layer(l, i, fmt)) {
		return false;
	}

	int32_t x0, x1, y0, y1;
	if (!clip_span(l->dst_x, l->dst_w, dst->width, &x0, &x1) ||
			!clip_span(l->dst_y, l->dst_h, dst->height, &y0, &y1)) {
		return true;
	}

	/* pixman never writes to a source image; the cast only satisfies its API. */
	pixman_image_t *src = pixman_image_create_bits_no_clear(fmt->pixman_format,
		(int)l->width, (int)l->height, (uint32_t *)(uintptr_t)l->data, (int)l->stride);
	if (!src) {
		wlr_log(WLR_ERROR, "compose: layer %zu: cannot wrap %ux%u %s fb", i,
			l->width, l->height, fmt->name);
		return false;
	}

	/*
	 * Map dst-rectangle-local coordinates to fb coordinates. The scale is
	 * rounded down so that the last sample stays inside the source rectangle
	 * instead of picking up the fb pixel beyond the crop.
	 */
	pixman_transform_t t;
	pixman_transform_init_identity(&t);
	t.matrix[0][0] = (pixman_fixed_t)(l->src_w / l->dst_w);
	t.matrix[1][1] = (pixman_fixed_t)(l->src_h / l->dst_h);
	t.matrix[0][2] = (pixman_fixed_t)l->src_x;
	t.matrix[1][2] = (pixman_fixed_t)l->src_y;
	pixman_image_set_transform(src, &t);
	pixman_image_set_filter(src, PIXMAN_FILTER_NEAREST, NULL, 0);

	pixman_image_composite32(fmt->has_alpha ? PIXMAN_OP_OVER : PIXMAN_OP_SRC, src, NULL,
		dst_img, x0 - l->dst_x, y0 - l->dst_y, 0, 0, x0, y0, x1 - x0, y1 - y0);
	pixman_image_unref(src);
	return true;
}

bool wla_compose(struct wla_image *dst, const struct wla_layer *layers, size_t n_layers)
{
	char name[16];
	const struct wla_format_info *dst_fmt = wla_format_get(dst->format);
	if (!dst_fmt || dst_fmt->bytes_per_pixel != 4) {
		wlr_log(WLR_ERROR, "compose: dst image format %s (0x%08x) is not a 32-bit "
			"table format", wla_format_name(dst->format, name), dst->format);
		return false;
	}
	if (dst->width == 0 || dst->height == 0 || dst->width > WLA_COMPOSE_MAX_SIZE ||
			dst->height > WLA_COMPOSE_MAX_SIZE || dst->stride % 4 != 0 ||
			dst->stride < dst->width * 4) {
		wlr_log(WLR_ERROR, "compose: dst image %ux%u stride %u is not composable",
			dst->width, dst->height, dst->stride);
		return false;
	}

	pixman_image_t *dst_img = pixman_image_create_bits_no_clear(dst_fmt->pixman_format,
		(int)dst->width, (int)dst->height, dst->data, (int)dst->stride);
	if (!dst_img) {
		wlr_log(WLR_ERROR, "compose: cannot wrap %ux%u dst image", dst->width, dst->height);
		return false;
	}

	/* Where no plane covers the CRTC, the display controller scans out black. */
	pixman_color_t black = { .red = 0, .green = 0, .blue = 0, .alpha = 0xffff };
	pixman_box32_t all = { 0, 0, (int32_t)dst->width, (int32_t)dst->height };
	bool ok = pixman_image_fill_boxes(PIXMAN_OP_SRC, dst_img, &black, 1, &all);
	if (!ok) {
		wlr_log(WLR_ERROR, "compose: cannot clear %ux%u dst image", dst->width,
			dst->height);
	}

	for (size_t i = 0; ok && i < n_layers; i++) {
		ok = compose_layer(dst_img, dst, &layers[i], i);
	}
	pixman_image_unref(dst_img);
	return ok;
}
