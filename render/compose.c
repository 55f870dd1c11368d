#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pixman.h>
#include <wlr/util/log.h>
#include "render/compose.h"
#include "render/format.h"
#include "wlatomic/capture.h"

/*
 * Below 32768 pixels, a framebuffer's 16.16 source coordinates fit in 31 bits
 * and a destination rectangle's in 15, which nearest() relies on; planes
 * cannot be larger anyway.
 */
#define WLA_COMPOSE_MAX_SIZE 32767

static bool check_layer(const struct wla_compose_layer *l, size_t i, const struct wla_format_info *fmt)
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

/*
 * The fb pixel that nearest sampling picks for pixel u of a span of dst_len
 * pixels showing [src_pos, src_pos + src_len) (16.16): the one under the
 * centre of u, src_pos + src_len * (u + 0.5) / dst_len, and on an exact pixel
 * edge the one on its left, as pixman picks. Worked out exactly in 64 bits
 * (src values are below 2^31, dst_len and u below 2^15) instead of through
 * pixman's 16.16 transform: a 16.16 step per dst pixel cannot be smaller than
 * 1/65536 px, so at more than 65536x magnification it is 0 and every sample
 * lands on src_pos itself, the edge of the crop, which picks the pixel left of
 * it; at lower ratios the rounded step drifts across the span. The centre lies
 * strictly inside the crop, so the pixel is always one the crop covers.
 */
static uint32_t nearest(uint32_t src_pos, uint32_t src_len, uint32_t dst_len, uint64_t u)
{
	uint64_t num = (uint64_t)src_pos * 2 * dst_len + (uint64_t)src_len * (2 * u + 1);
	uint64_t pixel = (num - 1) / ((uint64_t)dst_len << 17);
	assert(pixel >= src_pos >> 16 && pixel <= ((uint64_t)src_pos + src_len - 1) >> 16);
	return (uint32_t)pixel;
}

static pixman_op_t layer_op(const struct wla_format_info *fmt)
{
	return fmt->has_alpha ? PIXMAN_OP_OVER : PIXMAN_OP_SRC;
}

/*
 * pixman refuses, without a word, to read a source image 0x7fff pixels wide
 * or high or more: an unscaled layer is composited from tiles of its fb no
 * larger than this, each wrapped where it starts.
 */
#define WLA_COMPOSE_TILE 4096

/* A layer shown 1:1 from a whole fb pixel on: its fb is composited as it is. */
static bool composite_direct(pixman_image_t *dst_img, const struct wla_compose_layer *l, size_t i,
	const struct wla_format_info *fmt, uint32_t src_x, uint32_t src_y, int32_t x0, int32_t y0,
	size_t w, size_t h)
{
	uint32_t bpp = fmt->bytes_per_pixel;
	if (layer_op(fmt) == PIXMAN_OP_SRC &&
			pixman_image_get_format(dst_img) == fmt->pixman_format) {
		/* A copy of rows: what pixman would do, with libc's memcpy,
		 * which is faster for long rows (a full-screen primary). */
		uint8_t *dst = (uint8_t *)pixman_image_get_data(dst_img);
		size_t dst_stride = (size_t)pixman_image_get_stride(dst_img);
		for (size_t y = 0; y < h; y++) {
			memcpy(dst + (size_t)(y0 + (int32_t)y) * dst_stride + (size_t)x0 * bpp,
				(const uint8_t *)l->data + (src_y + y) * l->stride + (size_t)src_x * bpp,
				w * bpp);
		}
		return true;
	}
	/* Tiles start on a 32-bit word: pixman addresses rows in words. */
	uint32_t px_per_word = 4 / bpp;
	for (size_t ty = 0; ty < h; ty += WLA_COMPOSE_TILE) {
		size_t th = h - ty < WLA_COMPOSE_TILE ? h - ty : WLA_COMPOSE_TILE;
		for (size_t tx = 0; tx < w; tx += WLA_COMPOSE_TILE) {
			size_t tw = w - tx < WLA_COMPOSE_TILE ? w - tx : WLA_COMPOSE_TILE;
			size_t col = src_x + tx, row = src_y + ty;
			size_t lead = col % px_per_word;
			const uint8_t *base = (const uint8_t *)l->data + row * l->stride +
				(col - lead) * bpp;
			/* pixman never writes to a source image; the cast only
			 * satisfies its API. */
			pixman_image_t *src = pixman_image_create_bits_no_clear(
				fmt->pixman_format, (int)(lead + tw), (int)th,
				(uint32_t *)(uintptr_t)base, (int)l->stride);
			if (!src) {
				wlr_log(WLR_ERROR, "compose: layer %zu: cannot wrap a %zux%zu "
					"tile of its %ux%u %s fb", i, lead + tw, th, l->width,
					l->height, fmt->name);
				return false;
			}
			pixman_image_composite32(layer_op(fmt), src, NULL, dst_img, (int32_t)lead,
				0, 0, 0, x0 + (int32_t)tx, y0 + (int32_t)ty, (int32_t)tw,
				(int32_t)th);
			pixman_image_unref(src);
		}
	}
	return true;
}

/*
 * A scaled layer: each dst row is gathered from the fb pixels that nearest
 * sampling picks into a one-row image in the fb's format, then composited
 * onto dst, so blending and format conversion stay pixman's.
 */
static bool composite_rows(pixman_image_t *dst_img, const struct wla_compose_layer *l, size_t i,
	const struct wla_format_info *fmt, const uint32_t *columns, int32_t x0, int32_t y0,
	size_t w, size_t h)
{
	uint32_t bpp = fmt->bytes_per_pixel;
	/* pixman addresses rows in 32-bit words. */
	size_t stride = (w * bpp + 3) & ~(size_t)3;
	uint32_t *row = malloc(stride);
	pixman_image_t *row_img = row ? pixman_image_create_bits_no_clear(fmt->pixman_format,
		(int)w, 1, row, (int)stride) : NULL;
	if (!row_img) {
		wlr_log(WLR_ERROR, "compose: layer %zu: cannot allocate a %zu pixel %s row", i, w,
			fmt->name);
		free(row);
		return false;
	}

	const uint8_t *data = l->data;
	uint8_t *out = (uint8_t *)row;
	uint64_t filled = UINT64_MAX;
	for (size_t y = 0; y < h; y++) {
		uint32_t fb_y = nearest(l->src_y, l->src_h, l->dst_h, (uint32_t)(y0 - l->dst_y) + y);
		/* Magnified rows repeat the row above: gather it once. */
		if (fb_y != filled) {
			const uint8_t *in = data + (size_t)fb_y * l->stride;
			for (size_t x = 0; x < w; x++) {
				memcpy(out + x * bpp, in + (size_t)columns[x] * bpp, bpp);
			}
			filled = fb_y;
		}
		pixman_image_composite32(layer_op(fmt), row_img, NULL, dst_img, 0, 0, 0, 0, x0,
			y0 + (int32_t)y, (int32_t)w, 1);
	}
	pixman_image_unref(row_img);
	free(row);
	return true;
}

static bool compose_layer(pixman_image_t *dst_img, const struct wla_image *dst,
	const struct wla_compose_layer *l, size_t i)
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

	size_t w = (size_t)(x1 - x0), h = (size_t)(y1 - y0);
	uint32_t src_x = l->src_x >> 16, src_y = l->src_y >> 16;
	bool unscaled = (l->src_x & 0xffff) == 0 && (l->src_y & 0xffff) == 0 &&
		l->src_w == l->dst_w << 16 && l->src_h == l->dst_h << 16;
	if (unscaled) {
		return composite_direct(dst_img, l, i, fmt, src_x + (uint32_t)(x0 - l->dst_x),
			src_y + (uint32_t)(y0 - l->dst_y), x0, y0, w, h);
	}

	/* One fb column per dst column, looked up once; rows are looked up as
	 * they are drawn. */
	uint32_t *columns = calloc(w, sizeof(*columns));
	if (!columns) {
		wlr_log(WLR_ERROR, "compose: layer %zu: cannot allocate %zu columns", i, w);
		return false;
	}
	for (size_t x = 0; x < w; x++) {
		columns[x] = nearest(l->src_x, l->src_w, l->dst_w, (uint32_t)(x0 - l->dst_x) + x);
	}
	bool ok = composite_rows(dst_img, l, i, fmt, columns, x0, y0, w, h);
	free(columns);
	return ok;
}

/* Whether layer l (NULL: none) is opaque and covers all of dst: it is then
 * composited with SRC over every pixel. */
static bool covers(const struct wla_image *dst, const struct wla_compose_layer *l)
{
	const struct wla_format_info *fmt = l ? wla_format_get(l->format) : NULL;
	return fmt && !fmt->has_alpha && l->dst_x <= 0 && l->dst_y <= 0 &&
		(int64_t)l->dst_x + l->dst_w >= (int64_t)dst->width &&
		(int64_t)l->dst_y + l->dst_h >= (int64_t)dst->height;
}

static bool compose(struct wla_image *dst, const struct wla_compose_layer *layers,
	size_t n_layers, const struct wla_compose_access *access)
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

	/* Where no plane covers the CRTC, the display controller scans out black;
	 * a bottom layer without alpha that covers it all replaces every pixel
	 * anyway (a full-screen primary: the clear would double the work). */
	bool ok = true;
	if (!covers(dst, n_layers > 0 ? &layers[0] : NULL)) {
		pixman_color_t black = { .red = 0, .green = 0, .blue = 0, .alpha = 0xffff };
		pixman_box32_t all = { 0, 0, (int32_t)dst->width, (int32_t)dst->height };
		ok = pixman_image_fill_boxes(PIXMAN_OP_SRC, dst_img, &black, 1, &all);
		if (!ok) {
			wlr_log(WLR_ERROR, "compose: cannot clear %ux%u dst image", dst->width,
				dst->height);
		}
	}

	for (size_t i = 0; ok && i < n_layers; i++) {
		struct wla_compose_layer l = layers[i];
		if (access && !access->begin(access->data, i, &l.data, &l.stride)) {
			/* begin said which object's pixels. */
			ok = false;
			break;
		}
		ok = compose_layer(dst_img, dst, &l, i);
		if (access) {
			access->end(access->data, i);
		}
	}
	pixman_image_unref(dst_img);
	return ok;
}

bool wla_compose(struct wla_image *dst, const struct wla_compose_layer *layers, size_t n_layers)
{
	return compose(dst, layers, n_layers, NULL);
}

bool wla_compose_each(struct wla_image *dst, const struct wla_compose_layer *layers,
	size_t n_layers, const struct wla_compose_access *access)
{
	return compose(dst, layers, n_layers, access);
}
