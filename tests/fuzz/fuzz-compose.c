/*
 * Fuzz target: plane composition (render/compose.c).
 *
 * Input, little-endian:
 *   u8 dst format (index into the 32-bit formats of the table), u8 width - 1,
 *   u8 height - 1 (dst up to 64x64), u8 layers: bits 0..2 their number % 5;
 *   bit 7 set: layer (bits 4..5 % number) is made invalid in the way the
 *   next byte picks (% 5: src outside the fb, empty src, dst over 32767,
 *   stride not a multiple of 4, unknown format);
 *   per layer: u8 format (index into the table), u16 fb width - 1, u16 fb
 *   height - 1 (width up to 32767, the height cut so the fb stays within
 *   256 KiB), u8 stride padding (% 4 words), u32 src_w, u32 src_x, u32 src_h,
 *   u32 src_y (16.16, reduced to a non-empty src inside the fb), i16 dst_x,
 *   u16 dst_w, i16 dst_y, u16 dst_h (reduced to -32767 <= dst and
 *   dst + size <= 32767, the range the atomic check lets through);
 *   the remaining bytes, repeated, are the pixels of every fb.
 *
 * Invariants:
 *   - valid layers compose (true, no error); an invalid one is refused with
 *     one error line, and nothing is read or written out of bounds (ASan);
 *   - pixels no layer covers are opaque black;
 *   - the same geometry with opaque probe pixels (a colour per layer inside
 *     each source crop, a poison colour outside it): every covered pixel shows
 *     the crop of the topmost layer covering it, so no sample comes from
 *     outside the source crop or the fb, and z-order and clipping hold.
 */
#include <drm_fourcc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "render/compose.h"
#include "render/format.h"
#include "wlatomic/capture.h"

#define MAX_LAYERS 4
#define DST_MAX 64
#define FB_BUDGET (256 * 1024)
#define COORD_LIMIT 32767

struct fb {
	struct wla_compose_layer layer;
	uint32_t bpp;
	size_t size;
	uint8_t *pixels, *probe;
	/* Clipped dst rectangle, empty if x0 >= x1. */
	int32_t x0, x1, y0, y1;
	/* Columns and rows of fb pixels the crop touches: [cx0, cx1) x [cy0, cy1). */
	uint32_t cx0, cx1, cy0, cy1;
};

static const struct wla_format_info *format_at(uint8_t index, bool only_32bit)
{
	const struct wla_format_info *table = wla_format_table();
	size_t n = 0;
	for (const struct wla_format_info *f = table; f->drm_format; f++) {
		n += !only_32bit || f->bytes_per_pixel == 4;
	}
	size_t want = index % n;
	for (const struct wla_format_info *f = table; f->drm_format; f++) {
		if (!only_32bit || f->bytes_per_pixel == 4) {
			if (want-- == 0) {
				return f;
			}
		}
	}
	return NULL;
}

static void clip(int32_t pos, uint32_t len, uint32_t limit, int32_t *start, int32_t *end)
{
	int64_t s = pos < 0 ? 0 : pos, e = (int64_t)pos + len;
	e = e > limit ? limit : e;
	*start = (int32_t)s;
	*end = (int32_t)(e > s ? e : s);
}

/* Reads one layer; false if the input cannot make one (out of memory). */
static bool read_layer(struct fuzz_input *in, struct fb *fb, uint32_t dst_w, uint32_t dst_h)
{
	const struct wla_format_info *fmt = format_at(fuzz_u8(in), false);
	struct wla_compose_layer *l = &fb->layer;
	fb->bpp = fmt->bytes_per_pixel;
	l->format = fmt->drm_format;
	l->width = 1 + fuzz_u16(in) % COORD_LIMIT;
	l->height = 1 + fuzz_u16(in) % COORD_LIMIT;
	l->stride = (l->width * fb->bpp + 3) / 4 * 4 + (fuzz_u8(in) % 4) * 4;
	if ((uint64_t)l->stride * l->height > FB_BUDGET) {
		l->height = FB_BUDGET / l->stride ? FB_BUDGET / l->stride : 1;
	}
	uint64_t fw = (uint64_t)l->width << 16, fh = (uint64_t)l->height << 16;
	l->src_w = (uint32_t)(1 + fuzz_u32(in) % fw);
	l->src_x = (uint32_t)(fuzz_u32(in) % (fw - l->src_w + 1));
	l->src_h = (uint32_t)(1 + fuzz_u32(in) % fh);
	l->src_y = (uint32_t)(fuzz_u32(in) % (fh - l->src_h + 1));
	int32_t x = (int16_t)fuzz_u16(in), w = fuzz_u16(in);
	int32_t y = (int16_t)fuzz_u16(in), h = fuzz_u16(in);
	l->dst_x = x < -COORD_LIMIT ? -COORD_LIMIT : x == COORD_LIMIT ? COORD_LIMIT - 1 : x;
	l->dst_y = y < -COORD_LIMIT ? -COORD_LIMIT : y == COORD_LIMIT ? COORD_LIMIT - 1 : y;
	/* The composer takes at most 32767 either way (pixman's 16.16 coordinates). */
	l->dst_w = 1 + (uint32_t)w % (uint32_t)(l->dst_x < 0 ? COORD_LIMIT : COORD_LIMIT - l->dst_x);
	l->dst_h = 1 + (uint32_t)h % (uint32_t)(l->dst_y < 0 ? COORD_LIMIT : COORD_LIMIT - l->dst_y);

	clip(l->dst_x, l->dst_w, dst_w, &fb->x0, &fb->x1);
	clip(l->dst_y, l->dst_h, dst_h, &fb->y0, &fb->y1);
	fb->cx0 = l->src_x >> 16;
	fb->cx1 = (uint32_t)(((uint64_t)l->src_x + l->src_w + 0xffff) >> 16);
	fb->cy0 = l->src_y >> 16;
	fb->cy1 = (uint32_t)(((uint64_t)l->src_y + l->src_h + 0xffff) >> 16);

	/* Exactly the fb's bytes, so that ASan sees a read beyond them. */
	fb->size = (size_t)l->stride * l->height;
	fb->pixels = malloc(fb->size);
	fb->probe = calloc(1, fb->size);
	return fb->pixels && fb->probe;
}

static void fill_pixels(struct fb *fb, const uint8_t *bytes, size_t n, size_t *offset)
{
	for (size_t i = 0; i < fb->size; i++) {
		fb->pixels[i] = n ? bytes[(*offset)++ % n] : (uint8_t)(i * 131 + 7);
	}
}

/* Blue 5-bit k as RGB565 expands it to 8 bits, so both probe formats agree. */
static uint32_t probe_blue(uint32_t k)
{
	return k << 3 | k >> 2;
}

static uint32_t probe_colour(size_t layer)
{
	return 0x00ff00u | probe_blue((uint32_t)layer + 1);
}

#define POISON 0xff0000u

/* Opaque probe pixels: the layer's colour inside the crop, poison outside. */
static void fill_probe(struct fb *fb, size_t index)
{
	struct wla_compose_layer *l = &fb->layer;
	for (uint32_t y = 0; y < l->height; y++) {
		uint8_t *row = fb->probe + (size_t)y * l->stride;
		for (uint32_t x = 0; x < l->width; x++) {
			bool inside = x >= fb->cx0 && x < fb->cx1 && y >= fb->cy0 && y < fb->cy1;
			if (fb->bpp == 4) {
				uint32_t v = inside ? probe_colour(index) : POISON;
				memcpy(row + 4 * x, &v, 4);
			} else {
				uint16_t v = inside ? (uint16_t)(0x07e0 | (index + 1)) : 0xf800;
				memcpy(row + 2 * x, &v, 2);
			}
		}
	}
}

/* The opaque black that the composer clears dst_format to. */
static uint32_t black_in(uint32_t dst_format)
{
	struct wla_image *one = wla_image_create(1, 1);
	FUZZ_CHECK(one, "out of memory");
	one->format = dst_format;
	FUZZ_CHECK(wla_compose(one, NULL, 0), "composing nothing failed");
	uint32_t v = one->data[0];
	wla_image_destroy(one);
	return v;
}

static void describe(const struct fb *fbs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct wla_compose_layer *l = &fbs[i].layer;
		char name[16];
		fprintf(stderr, "  layer %zu: %s fb %ux%u stride %u src %u,%u %ux%u (16.16) "
			"dst %d,%d %ux%u\n", i, wla_format_name(l->format, name), l->width,
			l->height, l->stride, l->src_x, l->src_y, l->src_w, l->src_h, l->dst_x,
			l->dst_y, l->dst_w, l->dst_h);
	}
}

static void make_invalid(struct fb *fb, uint8_t kind)
{
	struct wla_compose_layer *l = &fb->layer;
	switch (kind % 5) {
	case 0:
		l->src_x = (uint32_t)(((uint64_t)l->width << 16) - l->src_w + 1);
		break;
	case 1:
		l->src_w = 0;
		break;
	case 2:
		l->dst_w = COORD_LIMIT + 1;
		break;
	case 3:
		l->stride += 2;
		break;
	case 4:
		l->format = DRM_FORMAT_NV12;
		break;
	}
}

static void check_probe(const struct wla_image *dst, const struct fb *fbs, size_t n)
{
	for (uint32_t y = 0; y < dst->height; y++) {
		for (uint32_t x = 0; x < dst->width; x++) {
			size_t top = n;
			for (size_t i = 0; i < n; i++) {
				const struct fb *fb = &fbs[i];
				if ((int32_t)x >= fb->x0 && (int32_t)x < fb->x1 && (int32_t)y >= fb->y0 &&
						(int32_t)y < fb->y1) {
					top = i;
				}
			}
			uint32_t got = dst->data[y * dst->width + x] & 0xffffff;
			uint32_t want = top < n ? probe_colour(top) : 0;
			if (got == want) {
				continue;
			}
			const char *why = top == n ? "a pixel no layer covers is not black" :
				got == POISON ? "sampled a pixel outside the source crop" :
				got == 0 ? "sampled outside the fb, or did not draw" :
				"shows another layer than the topmost one covering it";
			describe(fbs, n);
			FUZZ_CHECK(got == want, "dst pixel %u,%u is 0x%06x, want 0x%06x (layer %zu): %s",
				x, y, got, want, top, why);
		}
	}
}

/* One layer made invalid: refused with one error line, nothing composed. */
static void check_refused(struct wla_image *dst, struct fb *fbs, size_t n, size_t bad,
	uint8_t kind)
{
	struct wla_compose_layer layers[MAX_LAYERS];
	make_invalid(&fbs[bad], kind);
	for (size_t i = 0; i < n; i++) {
		layers[i] = fbs[i].layer;
		layers[i].data = fbs[i].pixels;
	}
	fuzz_log_clear();
	bool ret = wla_compose(dst, layers, n);
	if (ret || fuzz_log_errors != 1) {
		describe(fbs, n);
	}
	FUZZ_CHECK(!ret && fuzz_log_errors == 1, "invalid layer %zu (kind %u) composed %d with "
		"%d error lines", bad, kind % 5, ret, fuzz_log_errors);
}

static void check_composed(struct wla_image *dst, uint32_t dst_format, const struct fb *fbs,
	size_t n)
{
	struct wla_compose_layer layers[MAX_LAYERS], probes[MAX_LAYERS];
	for (size_t i = 0; i < n; i++) {
		layers[i] = fbs[i].layer;
		layers[i].data = fbs[i].pixels;
		probes[i] = fbs[i].layer;
		probes[i].data = fbs[i].probe;
		probes[i].format = fbs[i].bpp == 4 ? DRM_FORMAT_XRGB8888 : DRM_FORMAT_RGB565;
	}

	dst->format = dst_format;
	uint32_t black = black_in(dst_format);
	fuzz_log_clear();
	bool ret = wla_compose(dst, layers, n);
	if (!ret || fuzz_log_errors) {
		describe(fbs, n);
	}
	FUZZ_CHECK(ret && fuzz_log_errors == 0, "valid layers did not compose (%d, %d errors)",
		ret, fuzz_log_errors);
	for (uint32_t y = 0; y < dst->height; y++) {
		for (uint32_t x = 0; x < dst->width; x++) {
			bool covered = false;
			for (size_t i = 0; i < n; i++) {
				covered |= (int32_t)x >= fbs[i].x0 && (int32_t)x < fbs[i].x1 &&
					(int32_t)y >= fbs[i].y0 && (int32_t)y < fbs[i].y1;
			}
			uint32_t got = dst->data[y * dst->width + x];
			FUZZ_CHECK(covered || got == black, "uncovered pixel %u,%u is 0x%08x, black is "
				"0x%08x", x, y, got, black);
		}
	}

	dst->format = DRM_FORMAT_XRGB8888;
	FUZZ_CHECK(wla_compose(dst, probes, n), "the probe layers did not compose");
	check_probe(dst, fbs, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_init();
	struct fuzz_input in = { .data = data, .size = size };
	const struct wla_format_info *dst_fmt = format_at(fuzz_u8(&in), true);
	uint32_t dst_w = 1 + fuzz_u8(&in) % DST_MAX, dst_h = 1 + fuzz_u8(&in) % DST_MAX;
	uint8_t flags = fuzz_u8(&in);
	size_t n = (flags & 7) % (MAX_LAYERS + 1);
	bool invalid = (flags & 0x80) && n > 0;
	size_t bad = ((flags >> 4) & 3) % (n ? n : 1);
	uint8_t bad_kind = invalid ? fuzz_u8(&in) : 0;

	struct fb fbs[MAX_LAYERS] = { 0 };
	struct wla_image *dst = wla_image_create(dst_w, dst_h);
	bool ok = dst != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		ok = read_layer(&in, &fbs[i], dst_w, dst_h);
	}
	FUZZ_CHECK(ok, "out of memory");
	size_t offset = 0;
	for (size_t i = 0; i < n; i++) {
		fill_pixels(&fbs[i], data + in.pos, size - in.pos, &offset);
		fill_probe(&fbs[i], i);
	}

	if (invalid) {
		check_refused(dst, fbs, n, bad, bad_kind);
	} else {
		check_composed(dst, dst_fmt->drm_format, fbs, n);
	}
	for (size_t i = 0; i < n; i++) {
		free(fbs[i].pixels);
		free(fbs[i].probe);
	}
	wla_image_destroy(dst);
	return 0;
}
