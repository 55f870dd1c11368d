/* The format table: every row composes a known pixel to the right colour, and
 * formats outside it are refused by name. */
#include <stdint.h>
#include <string.h>
#include "harness.h"
#include "render-helpers.h"
#include "render/format.h"
#include "util.h"

/*
 * One pixel per vector, written as the bytes in memory so that the DRM
 * little-endian layout is spelled out rather than computed. The 8888 colours
 * are R 0x12 G 0x34 B 0x56 with a junk X byte 0xab, or premultiplied
 * R 0x40 G 0x20 B 0x10 at alpha 0x80, which over black stays as it is.
 */
static const struct vector {
	uint32_t format;
	uint8_t bytes[4];
	uint32_t want;
} vectors[] = {
	{ DRM_FORMAT_XRGB8888, { 0x56, 0x34, 0x12, 0xab }, 0xff123456 }, /* B G R X */
	{ DRM_FORMAT_ARGB8888, { 0x10, 0x20, 0x40, 0x80 }, 0xff402010 }, /* B G R A */
	{ DRM_FORMAT_XBGR8888, { 0x12, 0x34, 0x56, 0xab }, 0xff123456 }, /* R G B X */
	{ DRM_FORMAT_ABGR8888, { 0x40, 0x20, 0x10, 0x80 }, 0xff402010 }, /* R G B A */
	{ DRM_FORMAT_RGBX8888, { 0xab, 0x56, 0x34, 0x12 }, 0xff123456 }, /* X B G R */
	{ DRM_FORMAT_RGBA8888, { 0x80, 0x10, 0x20, 0x40 }, 0xff402010 }, /* A B G R */
	{ DRM_FORMAT_BGRX8888, { 0xab, 0x12, 0x34, 0x56 }, 0xff123456 }, /* X R G B */
	{ DRM_FORMAT_BGRA8888, { 0x80, 0x40, 0x20, 0x10 }, 0xff402010 }, /* A R G B */
	/* x:R:G:B 2:10:10:10 = 3:0x3ff:0x200:0x100 = 0xfff80100; 10 bits to 8 keeps
	 * the top 8 (and rounding 0x200 * 255 / 1023 agrees): ff 80 40. */
	{ DRM_FORMAT_XRGB2101010, { 0x00, 0x01, 0xf8, 0xff }, 0xffff8040 },
	{ DRM_FORMAT_ARGB2101010, { 0x00, 0x01, 0xf8, 0xff }, 0xffff8040 }, /* a = 3 */
	/* x:B:G:R = 3:0x100:0x200:0x3ff = 0xd00803ff. */
	{ DRM_FORMAT_XBGR2101010, { 0xff, 0x03, 0x08, 0xd0 }, 0xffff8040 },
	{ DRM_FORMAT_ABGR2101010, { 0xff, 0x03, 0x08, 0xd0 }, 0xffff8040 }, /* a = 3 */
	/* R:G:B 5:6:5. 0xf800 is pure red; 0x8410 is 16:32:16, which widens by
	 * repeating the top bits: 10000 100 = 0x84, 100000 10 = 0x82. */
	{ DRM_FORMAT_RGB565, { 0x00, 0xf8 }, 0xffff0000 },
	{ DRM_FORMAT_RGB565, { 0x10, 0x84 }, 0xff848284 },
	/* B:G:R 5:6:5: the same top bits are blue, the middle ones still green. */
	{ DRM_FORMAT_BGR565, { 0x00, 0xf8 }, 0xff0000ff },
	{ DRM_FORMAT_BGR565, { 0xe0, 0x07 }, 0xff00ff00 },
};

static bool compose_one(uint32_t format, const uint8_t bytes[4], uint32_t *out)
{
	/* 4 bytes hold one pixel of any table format and keep the stride a
	 * multiple of 4, as pixman wants. */
	uint32_t fb = 0;
	memcpy(&fb, bytes, 4);
	struct wla_compose_layer l = {
		.data = &fb, .stride = 4, .width = 1, .height = 1, .format = format,
		.src_w = 1 << 16, .src_h = 1 << 16, .dst_w = 1, .dst_h = 1,
	};
	struct wla_image *dst = wla_image_create(1, 1);
	bool ok = wla_compose(dst, &l, 1);
	*out = wla_image_pixel(dst, 0, 0);
	wla_image_destroy(dst);
	return ok;
}

static void test_each_table_format_composes_a_known_pixel(void)
{
	int rows = 0;
	for (const struct wla_format_info *f = wla_format_table(); f->drm_format; f++) {
		rows++;
		int tested = 0;
		for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
			const struct vector *v = &vectors[i];
			if (v->format != f->drm_format) {
				continue;
			}
			tested++;
			uint32_t got = 0;
			CHECK(compose_one(v->format, v->bytes, &got));
			if (got != v->want) {
				fprintf(stderr, "  %s %02x %02x %02x %02x -> 0x%08x, "
					"expected 0x%08x\n", f->name, v->bytes[0], v->bytes[1],
					v->bytes[2], v->bytes[3], got, v->want);
				harness_test_failures++;
			}
		}
		/* A row added to the table must come with a vector here. */
		if (tested == 0) {
			fprintf(stderr, "  %s has no test vector\n", f->name);
			harness_test_failures++;
		}
	}
	/* Pinned so that a dropped row shows up as well as an untested new one. */
	CHECK_INT(rows, 14);
}

static void test_required_formats_are_in_the_table(void)
{
	static const uint32_t required[] = {
		DRM_FORMAT_XRGB8888, DRM_FORMAT_ARGB8888, DRM_FORMAT_XBGR8888,
		DRM_FORMAT_ABGR8888, DRM_FORMAT_RGB565,
	};
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		CHECK(wla_format_get(required[i]) != NULL);
	}
	const struct wla_format_info *f = wla_format_get(DRM_FORMAT_ARGB8888);
	CHECK(f && f->pixman_format == PIXMAN_a8r8g8b8 && f->has_alpha &&
		f->bytes_per_pixel == 4);
	f = wla_format_get(DRM_FORMAT_RGB565);
	CHECK(f && f->pixman_format == PIXMAN_r5g6b5 && !f->has_alpha &&
		f->bytes_per_pixel == 2);
	/* 0 terminates the table; it must not be found as a format. */
	CHECK(wla_format_get(0) == NULL);
	CHECK(wla_format_get(DRM_FORMAT_NV12) == NULL);
}

static void test_table_rows_agree_with_pixman(void)
{
	for (const struct wla_format_info *f = wla_format_table(); f->drm_format; f++) {
		CHECK_INT(f->bytes_per_pixel * 8, PIXMAN_FORMAT_BPP(f->pixman_format));
		CHECK_INT(f->has_alpha, PIXMAN_FORMAT_A(f->pixman_format) != 0);
		CHECK(pixman_format_supported_source(f->pixman_format));
		CHECK(wla_format_get(f->drm_format) == f); /* no duplicate rows */
	}
}

static void test_format_names(void)
{
	char buf[16];
	CHECK(strcmp(wla_format_name(DRM_FORMAT_XRGB8888, buf), "XRGB8888") == 0);
	CHECK(strcmp(wla_format_name(DRM_FORMAT_RGB565, buf), "RGB565") == 0);
	/* Not in the table: the fourcc's characters, trailing pad spaces dropped. */
	CHECK(strcmp(wla_format_name(DRM_FORMAT_NV12, buf), "NV12") == 0);
	CHECK(strcmp(wla_format_name(DRM_FORMAT_R8, buf), "R8") == 0);
	/* Not a fourcc at all. */
	CHECK(strcmp(wla_format_name(0x01020304, buf), "0x01020304") == 0);
}

/* The project's one fourcc printer (util.h), for the core's refusals and
 * the control socket's replies. */
static void test_fourcc_str(void)
{
	char buf[5];
	CHECK(strcmp(wla_fourcc_str(DRM_FORMAT_XRGB8888, buf), "XR24") == 0);
	CHECK(strcmp(wla_fourcc_str(DRM_FORMAT_NV12, buf), "NV12") == 0);
	CHECK(strcmp(wla_fourcc_str(DRM_FORMAT_R8, buf), "R8") == 0);
	CHECK(strcmp(wla_fourcc_str(0x01412020, buf), "  A?") == 0);
}

static void test_unknown_format_is_refused_by_name(void)
{
	uint32_t fb[4] = { 0 };
	struct wla_compose_layer l = {
		.data = fb, .stride = 8, .width = 2, .height = 2, .format = DRM_FORMAT_NV12,
		.src_w = 2 << 16, .src_h = 2 << 16, .dst_w = 2, .dst_h = 2,
	};
	struct wla_image *dst = wla_image_create(2, 2);
	CHECK(!wla_compose(dst, &l, 1));
	CHECK_LOGGED("layer 0", "format", "NV12");

	harness_log_clear();
	l.format = 0x01020304;
	CHECK(!wla_compose(dst, &l, 1));
	CHECK_LOGGED("layer 0", "format", "0x01020304");
	wla_image_destroy(dst);
}

int main(void)
{
	harness_init();
	RUN_TEST(test_each_table_format_composes_a_known_pixel);
	RUN_TEST(test_required_formats_are_in_the_table);
	RUN_TEST(test_table_rows_agree_with_pixman);
	RUN_TEST(test_format_names);
	RUN_TEST(test_fourcc_str);
	RUN_TEST(test_unknown_format_is_refused_by_name);
	HARNESS_EXIT();
}
