/* The reference composer: blending, cropping, scaling, z-order and clipping,
 * each against pixels worked out by hand in the comments. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "render-helpers.h"
#include "util.h"

#define RED 0x00ff0000u
#define GREEN 0x0000ff00u
#define BLUE 0x000000ffu
#define WHITE 0x00ffffffu

/* A pattern in which every pixel of a fb up to 16x16 differs from the others
 * and from black; the X byte is junk on purpose, the composer must ignore it. */
static uint32_t unique(uint32_t x, uint32_t y)
{
	return 0x5a000000u | (x * 0x10u + 0x08u) << 16 | (y * 0x10u + 0x08u) << 8 | 0x33u;
}

static struct wla_image *unique_fb(uint32_t w, uint32_t h)
{
	struct wla_image *fb = wla_image_create(w, h);
	for (uint32_t y = 0; y < h; y++) {
		for (uint32_t x = 0; x < w; x++) {
			set_px(fb, x, y, unique(x, y));
		}
	}
	return fb;
}

/* Each channel of got within 1 of want. */
static bool near_pixel(uint32_t got, uint32_t want)
{
	for (int shift = 0; shift < 32; shift += 8) {
		int g = (got >> shift) & 0xff, w = (want >> shift) & 0xff;
		if (abs(g - w) > 1) {
			return false;
		}
	}
	return true;
}

/* A w x h image of l composed alone (a failure of the test if refused). */
static struct wla_image *compose_layer(const struct wla_compose_layer *l, uint32_t w, uint32_t h)
{
	struct wla_image *dst = wla_image_create(w, h);
	CHECK(wla_compose(dst, l, 1));
	return dst;
}

static void test_compose_clears_to_opaque_black(void)
{
	struct wla_image *dst = solid_fb(3, 2, 0x12345678);
	CHECK(wla_compose(dst, NULL, 0));
	for (uint32_t y = 0; y < 2; y++) {
		for (uint32_t x = 0; x < 3; x++) {
			CHECK_PIXEL(wla_image_pixel(dst, x, y), BLACK);
		}
	}
	/* With an alpha channel in dst, opaque must be stored, not just implied. */
	dst->format = DRM_FORMAT_ARGB8888;
	set_px(dst, 1, 1, 0x12345678);
	CHECK(wla_compose(dst, NULL, 0));
	CHECK_PIXELS(dst, { 1, 1, BLACK }, { 2, 0, BLACK });
	wla_image_destroy(dst);
}

static void test_cursor_alpha_blends_over_primary(void)
{
	/* Primary: R 0x50, G 0xc8, B 0xff everywhere except (2,1), which is magenta. */
	struct wla_image *primary = solid_fb(4, 4, 0x0050c8ff);
	set_px(primary, 2, 1, 0x00ff00ff);

	/* Premultiplied cursor at (1,1). OVER is src + dst * (255 - src_a) / 255. */
	struct wla_image *cursor = wla_image_create(2, 2);
	cursor->format = DRM_FORMAT_ARGB8888;
	/* a 0x33: 255 - 0x33 = 204, and 0x50, 0xc8, 0xff times 204/255 = 4/5 are
	 * the integers 64, 160, 204: 0x33 + 64, 0x00 + 160, 0x1a + 204. */
	set_px(cursor, 0, 0, 0x3333001a);
	/* a 0x80, half transparent: 255 - 128 = 127, over magenta 0xff * 127 / 255 =
	 * 127 exactly and 0x00 stays 0: R 0 + 0x7f, G 0x80 + 0, B 0x40 + 0x7f. */
	set_px(cursor, 1, 0, 0x80008040);
	/* Fully transparent: the primary shows through unchanged. */
	set_px(cursor, 0, 1, 0x00000000);
	/* a 0x80 over 0x50c8ff: 0x50 * 127 / 255 = 39.84 and 0xc8 * 127 / 255 =
	 * 99.61 round to 40 and 100: R 0x40 + 40, G 0x40 + 100, B 0x40 + 127. */
	set_px(cursor, 1, 1, 0x80404040);

	struct wla_compose_layer layers[] = {
		whole_layer(primary, DRM_FORMAT_XRGB8888, 0, 0),
		whole_layer(cursor, DRM_FORMAT_ARGB8888, 1, 1),
	};
	struct wla_image *dst = wla_image_create(4, 4);
	CHECK(wla_compose(dst, layers, 2));

	CHECK_PIXELS(dst, { 1, 1, 0xff73a0e6 }, { 2, 1, 0xff7f80bf }, { 1, 2, 0xff50c8ff });
	/* The only product that is not an integer: a composer must round it to one
	 * of its two neighbours, and which one is pixman's business (its C and SIMD
	 * paths are free to use different /255 approximations), hence +-1. */
	uint32_t got = wla_image_pixel(dst, 2, 2);
	if (!near_pixel(got, 0xff68a4bf)) {
		fprintf(stderr, "  (2,2) == 0x%08x, expected 0xff68a4bf +-1\n", got);
		harness_test_failures++;
	}
	/* Outside the cursor the primary is copied as is. */
	CHECK_PIXELS(dst, { 0, 0, 0xff50c8ff }, { 3, 3, 0xff50c8ff }, { 3, 1, 0xff50c8ff });

	wla_image_destroy(dst);
	wla_image_destroy(cursor);
	wla_image_destroy(primary);
}

static struct wla_image *quadrant_fb(void)
{
	/* 4x4: red top-left, green top-right, blue bottom-left, white bottom-right. */
	struct wla_image *fb = wla_image_create(4, 4);
	for (uint32_t y = 0; y < 4; y++) {
		for (uint32_t x = 0; x < 4; x++) {
			set_px(fb, x, y, y < 2 ? (x < 2 ? RED : GREEN) : (x < 2 ? BLUE : WHITE));
		}
	}
	return fb;
}

static void test_overlay_cropped_and_scaled(void)
{
	/* The 2x2 middle of the quadrant pattern, one pixel of each colour, shown
	 * 4x as large at (4,4): each source pixel becomes a 4x4 block. */
	struct wla_image *fb = quadrant_fb();
	struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, 4, 4);
	l.src_x = 1 << 16;
	l.src_y = 1 << 16;
	l.src_w = 2 << 16;
	l.src_h = 2 << 16;
	l.dst_w = 8;
	l.dst_h = 8;
	struct wla_image *dst = compose_layer(&l, 16, 16);

	CHECK_PIXELS(dst, { 4, 4, 0xffff0000 }, { 7, 7, 0xffff0000 }, { 8, 4, 0xff00ff00 },
		{ 11, 7, 0xff00ff00 }, { 4, 8, 0xff0000ff }, { 7, 11, 0xff0000ff },
		{ 8, 8, 0xffffffff }, { 11, 11, 0xffffffff });
	/* Just outside the destination rectangle. */
	CHECK_PIXELS(dst, { 3, 4, BLACK }, { 4, 3, BLACK }, { 12, 11, BLACK }, { 11, 12, BLACK });

	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

static void test_overlay_fractional_source_offset(void)
{
	/*
	 * src x 1.5 + 2.0 wide onto 8 pixels: dst column u samples fb x at
	 * 1.5 + (u + 0.5) / 4 = 1.625, 1.875, 2.125 ... 3.375, i.e. fb columns
	 * 1 1 2 2 2 2 3 3. src y 0.25 + 3.0 onto 3 rows: 0.75, 1.75, 2.75, rows 0 1 2.
	 */
	static const uint32_t col[8] = { 1, 1, 2, 2, 2, 2, 3, 3 };
	struct wla_image *fb = unique_fb(4, 4);
	struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
	l.src_x = 0x18000;
	l.src_y = 0x04000;
	l.src_w = 0x20000;
	l.src_h = 0x30000;
	l.dst_w = 8;
	l.dst_h = 3;
	struct wla_image *dst = compose_layer(&l, 8, 3);
	for (uint32_t v = 0; v < 3; v++) {
		for (uint32_t u = 0; u < 8; u++) {
			CHECK_PIXEL(wla_image_pixel(dst, u, v), unique(col[u], v) | BLACK);
		}
	}
	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

static void test_overlay_downscaled(void)
{
	/* 6x6 onto 2x2: samples at (u + 0.5) * 3 = 1.5 and 4.5, fb pixels 1 and 4. */
	struct wla_image *fb = unique_fb(6, 6);
	struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
	l.dst_w = 2;
	l.dst_h = 2;
	struct wla_image *dst = compose_layer(&l, 2, 2);
	CHECK_PIXELS(dst, { 0, 0, unique(1, 1) | BLACK }, { 1, 0, unique(4, 1) | BLACK },
		{ 0, 1, unique(1, 4) | BLACK }, { 1, 1, unique(4, 4) | BLACK });
	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

static void test_z_order_topmost_wins(void)
{
	/* Red at (0,0), green at (2,2), blue at (4,4), each 6x6, on 12x12. */
	struct wla_image *r = solid_fb(6, 6, RED), *g = solid_fb(6, 6, GREEN);
	struct wla_image *b = solid_fb(6, 6, BLUE);
	struct wla_compose_layer layers[] = {
		whole_layer(r, DRM_FORMAT_XRGB8888, 0, 0),
		whole_layer(g, DRM_FORMAT_XRGB8888, 2, 2),
		whole_layer(b, DRM_FORMAT_XRGB8888, 4, 4),
	};
	struct wla_image *dst = wla_image_create(12, 12);
	CHECK(wla_compose(dst, layers, 3));
	CHECK_PIXEL(wla_image_pixel(dst, 1, 1), 0xffff0000); /* red only */
	CHECK_PIXEL(wla_image_pixel(dst, 3, 1), 0xffff0000); /* red only, above green */
	CHECK_PIXEL(wla_image_pixel(dst, 3, 3), 0xff00ff00); /* red and green */
	CHECK_PIXEL(wla_image_pixel(dst, 7, 3), 0xff00ff00); /* green only */
	CHECK_PIXEL(wla_image_pixel(dst, 5, 5), 0xff0000ff); /* all three */
	CHECK_PIXEL(wla_image_pixel(dst, 7, 7), 0xff0000ff); /* green and blue */
	CHECK_PIXEL(wla_image_pixel(dst, 9, 9), 0xff0000ff); /* blue only */
	CHECK_PIXELS(dst, { 11, 11, BLACK }, { 0, 11, BLACK });

	/* The same layers in the opposite order: red is now on top everywhere it is. */
	struct wla_compose_layer reversed[] = { layers[2], layers[1], layers[0] };
	CHECK(wla_compose(dst, reversed, 3));
	CHECK_PIXELS(dst, { 5, 5, 0xffff0000 }, { 3, 3, 0xffff0000 }, { 7, 7, 0xff00ff00 },
		{ 9, 9, 0xff0000ff });

	wla_image_destroy(dst);
	wla_image_destroy(b);
	wla_image_destroy(g);
	wla_image_destroy(r);
}

/* Pixels opened one layer at a time: what each layer's begin gave. */
struct one_open {
	struct wla_image *fbs[3];
	int open; /* the layer open now, -1: none */
	int begun, ended, fail_at;
};

static bool one_open_begin(void *data, size_t i, const void **pixels, uint32_t *stride)
{
	struct one_open *o = data;
	CHECK_INT(o->open, -1); /* never two open at once */
	CHECK_INT((int)i, o->begun);
	o->begun++;
	if ((int)i == o->fail_at) {
		/* As a driver's begin: it names the object. */
		wlr_log(WLR_ERROR, "fb %zu: pixels are not readable for capture", i);
		return false;
	}
	o->open = (int)i;
	*pixels = o->fbs[i]->data;
	*stride = o->fbs[i]->stride;
	return true;
}

static void one_open_end(void *data, size_t i)
{
	struct one_open *o = data;
	CHECK_INT(o->open, (int)i);
	o->open = -1;
	o->ended++;
}

/*
 * A client's wl_shm buffers may only be read one pool at a time (libwayland
 * aborts otherwise; two clients' windows on two planes, captured, did):
 * wla_compose_each opens each layer only while it composites it, in order,
 * and gives the same pixels as wla_compose; a layer that cannot be opened
 * fails the composition with its index named, nothing left open.
 */
static void test_layers_are_opened_one_at_a_time(void)
{
	struct one_open o = { .open = -1, .fail_at = -1 };
	o.fbs[0] = solid_fb(6, 6, RED);
	o.fbs[1] = solid_fb(6, 6, GREEN);
	o.fbs[2] = solid_fb(6, 6, BLUE);
	struct wla_compose_layer layers[] = {
		whole_layer(o.fbs[0], DRM_FORMAT_XRGB8888, 0, 0),
		whole_layer(o.fbs[1], DRM_FORMAT_XRGB8888, 2, 2),
		whole_layer(o.fbs[2], DRM_FORMAT_XRGB8888, 4, 4),
	};
	struct wla_image *want = wla_image_create(12, 12), *got = wla_image_create(12, 12);
	CHECK(wla_compose(want, layers, 3));
	struct wla_compose_layer blind[3];
	for (size_t i = 0; i < 3; i++) {
		blind[i] = layers[i];
		blind[i].data = NULL; /* only what begin gives is read */
		blind[i].stride = 0;
	}
	const struct wla_compose_access access = { one_open_begin, one_open_end, &o };
	CHECK(wla_compose_each(got, blind, 3, &access));
	CHECK_INT(o.begun, 3);
	CHECK_INT(o.ended, 3);
	CHECK_INT(o.open, -1);
	CHECK(memcmp(want->data, got->data, (size_t)want->stride * want->height) == 0);

	o = (struct one_open){ .fbs = { o.fbs[0], o.fbs[1], o.fbs[2] }, .open = -1, .fail_at = 1 };
	harness_log_clear();
	CHECK(!wla_compose_each(got, blind, 3, &access));
	CHECK_INT(o.begun, 2);
	CHECK_INT(o.ended, 1);
	CHECK_INT(o.open, -1);
	/* One line for one failure: begin's, not a second one of compose's. */
	CHECK_INT(harness_log_n, 1);
	CHECK_LOGGED("fb 1: pixels are not readable for capture");

	wla_image_destroy(got);
	wla_image_destroy(want);
	for (size_t i = 0; i < 3; i++) {
		wla_image_destroy(o.fbs[i]);
	}
}

/* Compose the 4x4 unique fb 1:1 at (x, y) on 8x8 and compare every pixel with
 * the fb shifted by (x, y), black where it does not reach. */
static void check_clipped_at(int32_t x, int32_t y)
{
	struct wla_image *fb = unique_fb(4, 4);
	struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, x, y);
	struct wla_image *dst = wla_image_create(8, 8);
	bool ok = wla_compose(dst, &l, 1);
	if (!ok) {
		fprintf(stderr, "  layer at %d,%d refused\n", x, y);
		harness_test_failures++;
	}
	for (int64_t iy = 0; ok && iy < 8; iy++) {
		for (int64_t ix = 0; ix < 8; ix++) {
			int64_t fx = ix - x, fy = iy - y;
			uint32_t want = fx >= 0 && fx < 4 && fy >= 0 && fy < 4 ?
				unique((uint32_t)fx, (uint32_t)fy) | BLACK : BLACK;
			uint32_t got = wla_image_pixel(dst, (uint32_t)ix, (uint32_t)iy);
			if (got != want) {
				fprintf(stderr, "  layer at %d,%d: (%d,%d) == 0x%08x, expected "
					"0x%08x\n", x, y, (int)ix, (int)iy, got, want);
				harness_test_failures++;
			}
		}
	}
	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

static void test_clipping_at_every_edge(void)
{
	/* Partly off the left, right, top and bottom edge, and off each corner. */
	check_clipped_at(-3, 2);
	check_clipped_at(6, 2);
	check_clipped_at(2, -3);
	check_clipped_at(2, 6);
	check_clipped_at(-2, -2);
	check_clipped_at(6, -2);
	check_clipped_at(-2, 6);
	check_clipped_at(6, 6);
	/* Just touching each edge from outside: nothing visible. */
	check_clipped_at(-4, 0);
	check_clipped_at(8, 0);
	check_clipped_at(0, -4);
	check_clipped_at(0, 8);
	/* Far away, where dst_x + dst_w overflows 32 bits. */
	check_clipped_at(INT32_MAX - 1, 0);
	check_clipped_at(0, INT32_MAX - 1);
	check_clipped_at(INT32_MIN, INT32_MIN);
}

static void test_clipping_scaled_layer_keeps_source_offset(void)
{
	/* The quadrants' 2x2 corner pixels (red, green, blue, white) scaled 4x to 8x8
	 * at (-3,-3): dst column ix is local column ix + 3, which shows fb column
	 * (ix + 3) / 4 of the four, so column 0 is red and 1..4 green; 5.. is off
	 * the layer. */
	struct wla_image *fb = wla_image_create(2, 2);
	set_px(fb, 0, 0, RED);
	set_px(fb, 1, 0, GREEN);
	set_px(fb, 0, 1, BLUE);
	set_px(fb, 1, 1, WHITE);
	struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, -3, -3);
	l.dst_w = 8;
	l.dst_h = 8;
	struct wla_image *dst = compose_layer(&l, 8, 8);
	CHECK_PIXELS(dst, { 0, 0, 0xffff0000 }, { 1, 0, 0xff00ff00 }, { 4, 0, 0xff00ff00 },
		{ 0, 1, 0xff0000ff }, { 0, 4, 0xff0000ff }, { 1, 1, 0xffffffff },
		{ 4, 4, 0xffffffff }, { 5, 0, BLACK }, { 0, 5, BLACK }, { 5, 5, BLACK });
	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

static void test_clipping_far_into_a_large_layer(void)
{
	/* 4 pixels stretched over 32000 with only the last 4 on screen: all of them
	 * must come from the last fb pixel, 31996.5 * 4 / 32000 = 3.9996. */
	struct wla_image *fb = unique_fb(4, 1);
	struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, -31996, 0);
	l.dst_w = 32000;
	struct wla_image *dst = compose_layer(&l, 4, 1);
	for (uint32_t x = 0; x < 4; x++) {
		CHECK_PIXEL(wla_image_pixel(dst, x, 0), unique(3, 0) | BLACK);
	}
	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

/* Which fb column of the unique pattern a composed pixel came from, -1 if none. */
static int unique_column(uint32_t px, uint32_t fb_width, uint32_t y)
{
	for (uint32_t x = 0; x < fb_width; x++) {
		if (px == (unique(x, y) | BLACK)) {
			return (int)x;
		}
	}
	return -1;
}

/* Pixels (x, y) for x in [x0, x1) of dst are all want; reports the first that is not. */
static void check_span(const struct wla_image *dst, uint32_t x0, uint32_t x1, uint32_t y,
	uint32_t want)
{
	for (uint32_t x = x0; x < x1; x++) {
		uint32_t got = wla_image_pixel(dst, x, y);
		if (got != want) {
			fprintf(stderr, "  (%u,%u) == 0x%08x, expected 0x%08x\n", x, y, got, want);
			harness_test_failures++;
			return;
		}
	}
}

static void test_extreme_magnification_samples_inside_the_crop(void)
{
	/* A crop 1/65536 px wide at the left edge of fb column 1, 100 px wide on
	 * screen: every pixel must show column 1, not column 0 on its left. */
	struct wla_image *fb = unique_fb(3, 3);
	struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
	l.src_x = 1 << 16;
	l.src_w = 1;
	l.dst_w = 100;
	struct wla_image *dst = compose_layer(&l, 100, 3);
	check_span(dst, 0, 100, 1, unique(1, 1) | BLACK);

	/* The same vertically, with the crop in the last 1/65536 of row 1. */
	l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
	l.src_y = (2 << 16) - 1;
	l.src_h = 1;
	l.dst_h = 3;
	l.dst_w = 3;
	CHECK(wla_compose(dst, &l, 1));
	for (uint32_t y = 0; y < 3; y++) {
		CHECK_PIXEL(wla_image_pixel(dst, 2, y), unique(2, 1) | BLACK);
	}
	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

static void test_a_crop_across_a_pixel_edge_shows_both_sides(void)
{
	/* 100/65536 px across the edge between columns 0 and 1, half on each side,
	 * onto 100 px: sample u sits at 65486 + u + 0.5 in 1/65536 px. */
	struct wla_image *fb = unique_fb(3, 1);
	struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
	l.src_x = (1 << 16) - 50;
	l.src_w = 100;
	l.dst_w = 100;
	struct wla_image *dst = compose_layer(&l, 100, 1);
	check_span(dst, 0, 50, 0, unique(0, 0) | BLACK);
	check_span(dst, 50, 100, 0, unique(1, 0) | BLACK);
	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

#define RATIO_DST_WIDTH 2048

/*
 * Compose l (one row of the 5x1 unique fb) at dst_x and check each pixel on
 * the 2048 wide dst: it comes from a column the crop covers, and from the one
 * nearest sampling picks (the centre of layer pixel u maps to
 * src_x + src_w * (u + 0.5) / dst_w; on an exact pixel edge, the left one, as
 * pixman does). Returns false after the first wrong pixel.
 */
static bool check_ratio_at(struct wla_image *dst, struct wla_compose_layer l, int32_t dst_x)
{
	l.dst_x = dst_x;
	if (!wla_compose(dst, &l, 1)) {
		fprintf(stderr, "  src_x 0x%x src_w 0x%x dst_w %u refused\n", l.src_x, l.src_w,
			l.dst_w);
		harness_test_failures++;
		return false;
	}
	int first = (int)(l.src_x >> 16);
	int last = (int)(((uint64_t)l.src_x + l.src_w - 1) >> 16);
	for (uint32_t x = 0; x < RATIO_DST_WIDTH; x++) {
		int64_t u = (int64_t)x - dst_x;
		if (u < 0 || u >= l.dst_w) {
			continue;
		}
		uint64_t num = (uint64_t)l.src_x * 2 * l.dst_w + (uint64_t)l.src_w * (2 * u + 1);
		int want = (int)((num - 1) / ((uint64_t)l.dst_w << 17));
		int got = unique_column(wla_image_pixel(dst, x, 0), 5, 0);
		if (got < first || got > last || got != want) {
			fprintf(stderr, "  src_x 0x%x src_w 0x%x dst_w %u: layer pixel %" PRId64
				" shows column %d, expected %d (the crop covers %d..%d)\n", l.src_x,
				l.src_w, l.dst_w, u, got, want, first, last);
			harness_test_failures++;
			return false;
		}
	}
	return true;
}

static void test_every_ratio_samples_inside_the_crop(void)
{
	/* Crops from 1/65536 px to 3 px wide, at and around pixel edges, onto 1 to
	 * 32767 px, the largest destination a plane may have; of the wide ones
	 * both ends are checked. */
	static const uint32_t src_xs[] = { 1 << 16, (1 << 16) + 1, (2 << 16) - 1, 0x18000 };
	static const uint32_t src_ws[] = { 1, 2, 3, 7, 100, 0x7fff, 0x8000, 0xffff, 0x10000,
		0x10001, 0x1ffff, 0x20000, 0x2ffff };
	static const uint32_t dst_ws[] = { 1, 2, 3, 100, 2047, 2049, 32767 };
	struct wla_image *fb = unique_fb(5, 1);
	struct wla_image *dst = wla_image_create(RATIO_DST_WIDTH, 1);
	for (size_t a = 0; a < WLA_ARRAY_SIZE(src_xs); a++) {
		for (size_t b = 0; b < WLA_ARRAY_SIZE(src_ws); b++) {
			for (size_t c = 0; c < WLA_ARRAY_SIZE(dst_ws); c++) {
				struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
				l.src_x = src_xs[a];
				l.src_w = src_ws[b];
				l.dst_w = dst_ws[c];
				if (check_ratio_at(dst, l, 0) && l.dst_w > RATIO_DST_WIDTH) {
					check_ratio_at(dst, l, RATIO_DST_WIDTH - (int32_t)l.dst_w);
				}
			}
		}
	}
	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

static void test_unscaled_layers_of_the_largest_fbs_are_drawn(void)
{
	/* pixman reads no source image 32767 px wide or high: the composer
	 * must still show 1:1 crops of such fbs, from their far end too, and
	 * of a 16-bit format from an odd column. */
	struct {
		uint32_t w, h, src_x, src_y, format;
	} cases[] = {
		{ 32767, 1, 0, 0, DRM_FORMAT_XRGB8888 },
		{ 32767, 1, 32767 - 40, 0, DRM_FORMAT_XRGB8888 },
		{ 1, 32767, 0, 32767 - 40, DRM_FORMAT_XRGB8888 },
		{ 32767, 3, 32767 - 41, 1, DRM_FORMAT_RGB565 },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint32_t bpp = cases[c].format == DRM_FORMAT_RGB565 ? 2 : 4;
		uint32_t stride = (cases[c].w * bpp + 3) & ~3u;
		uint8_t *data = calloc(cases[c].h, stride);
		uint32_t w = cases[c].w - cases[c].src_x < 40 ? cases[c].w - cases[c].src_x : 40;
		uint32_t h = cases[c].h - cases[c].src_y < 40 ? cases[c].h - cases[c].src_y : 40;
		/* White where the crop is, black elsewhere. */
		for (uint32_t y = cases[c].src_y; y < cases[c].src_y + h; y++) {
			memset(data + (size_t)y * stride + (size_t)cases[c].src_x * bpp, 0xff,
				(size_t)w * bpp);
		}
		struct wla_compose_layer l = {
			.data = data, .stride = stride, .width = cases[c].w, .height = cases[c].h,
			.format = cases[c].format,
			.src_x = cases[c].src_x << 16, .src_y = cases[c].src_y << 16,
			.src_w = w << 16, .src_h = h << 16, .dst_w = w, .dst_h = h,
		};
		struct wla_image *dst = compose_layer(&l, w, h);
		for (uint32_t y = 0; y < h; y++) {
			check_span(dst, 0, w, y, WHITE | BLACK);
		}
		wla_image_destroy(dst);
		free(data);
	}
}

static void test_empty_dst_rect_draws_nothing(void)
{
	struct wla_image *fb = solid_fb(2, 2, WHITE);
	struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
	l.dst_w = 0;
	struct wla_image *dst = compose_layer(&l, 2, 2);
	CHECK_PIXEL(wla_image_pixel(dst, 0, 0), BLACK);
	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

static void test_invalid_layers_are_refused(void)
{
	struct wla_image *fb = solid_fb(4, 4, WHITE);
	struct wla_image *dst = wla_image_create(4, 4);

	struct wla_compose_layer l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
	l.src_x = 1 << 16; /* 1 + 4 wide reaches past the fb */
	CHECK(!wla_compose(dst, &l, 1));
	CHECK_LOGGED("layer 0", "src", "4x4 fb");

	harness_log_clear();
	l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
	l.stride = 8; /* less than 4 pixels of 4 bytes */
	CHECK(!wla_compose(dst, &l, 1));
	CHECK_LOGGED("layer 0", "stride 8");

	harness_log_clear();
	l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
	l.dst_w = 40000;
	struct wla_compose_layer two[] = { whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0), l };
	CHECK(!wla_compose(dst, two, 2));
	CHECK_LOGGED("layer 1", "dst_w", "40000");

	harness_log_clear();
	l = whole_layer(fb, DRM_FORMAT_XRGB8888, 0, 0);
	l.data = NULL;
	CHECK(!wla_compose(dst, &l, 1));
	CHECK_LOGGED("layer 0", "no pixel data");

	wla_image_destroy(dst);
	wla_image_destroy(fb);
}

int main(void)
{
	harness_init();
	RUN_TEST(test_compose_clears_to_opaque_black);
	RUN_TEST(test_cursor_alpha_blends_over_primary);
	RUN_TEST(test_overlay_cropped_and_scaled);
	RUN_TEST(test_overlay_fractional_source_offset);
	RUN_TEST(test_overlay_downscaled);
	RUN_TEST(test_z_order_topmost_wins);
	RUN_TEST(test_layers_are_opened_one_at_a_time);
	RUN_TEST(test_clipping_at_every_edge);
	RUN_TEST(test_clipping_scaled_layer_keeps_source_offset);
	RUN_TEST(test_clipping_far_into_a_large_layer);
	RUN_TEST(test_extreme_magnification_samples_inside_the_crop);
	RUN_TEST(test_a_crop_across_a_pixel_edge_shows_both_sides);
	RUN_TEST(test_every_ratio_samples_inside_the_crop);
	RUN_TEST(test_unscaled_layers_of_the_largest_fbs_are_drawn);
	RUN_TEST(test_empty_dst_rect_draws_nothing);
	RUN_TEST(test_invalid_layers_are_refused);
	HARNESS_EXIT();
}
