/* Images: allocation limits, pixel access, CRC-32 and PNG files. */
#include <errno.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "render-helpers.h"

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return path;
}

/* Writes a PNG with libpng's own simplified API, independent of ours. */
static bool write_ref_png(const char *path, uint32_t w, uint32_t h, uint32_t format,
	const void *pixels, const void *colormap, uint32_t colors)
{
	png_image png = { .version = PNG_IMAGE_VERSION, .width = w, .height = h,
		.format = format, .colormap_entries = colors };
	return png_image_write_to_file(&png, path, 0, pixels, 0, colormap);
}

static void test_image_create_is_zeroed_xrgb(void)
{
	struct wla_image *img = wla_image_create(3, 2);
	CHECK(img != NULL);
	CHECK_INT(img->width, 3);
	CHECK_INT(img->height, 2);
	CHECK_INT(img->stride, 12);
	CHECK_INT(img->format, DRM_FORMAT_XRGB8888);
	for (uint32_t i = 0; i < 6; i++) {
		CHECK_PIXEL(img->data[i], 0);
	}
	wla_image_destroy(img);

	img = wla_image_create(16384, 1);
	CHECK(img != NULL && img->stride == 16384 * 4);
	wla_image_destroy(img);
	wla_image_destroy(NULL);
}

static void test_image_create_refuses_bad_sizes(void)
{
	CHECK(wla_image_create(0, 1) == NULL);
	CHECK_LOGGED("image", "0x1");
	CHECK(wla_image_create(1, 0) == NULL);
	CHECK_LOGGED("image", "1x0");
	CHECK(wla_image_create(16385, 1) == NULL);
	CHECK_LOGGED("image", "16385x1");
	CHECK(wla_image_create(1, 16385) == NULL);
	CHECK_LOGGED("image", "1x16385");
}

static void test_image_pixel_reads_xrgb_as_opaque(void)
{
	struct wla_image *img = wla_image_create(2, 2);
	set_px(img, 1, 1, 0x00123456);
	CHECK_PIXEL(wla_image_pixel(img, 1, 1), 0xff123456);
	img->format = DRM_FORMAT_ARGB8888;
	CHECK_PIXEL(wla_image_pixel(img, 1, 1), 0x00123456);
	CHECK_PIXEL(wla_image_pixel(img, 2, 0), 0);
	CHECK_LOGGED("pixel 2,0", "2x2");
	wla_image_destroy(img);
}

static void test_crc32_of_a_known_image(void)
{
	struct wla_image *img = wla_image_create(2, 1);
	set_px(img, 0, 0, 0x00ff0000);
	set_px(img, 1, 0, 0x12345678);
	/* XRGB8888 hashes with alpha forced to 0xff, little-endian:
	 * python3 -c 'import zlib; print(hex(zlib.crc32(bytes(
	 *     [0x00,0x00,0xff,0xff, 0x78,0x56,0x34,0xff]))))'  -> 0x1b107522 */
	CHECK_PIXEL(wla_image_crc32(img), 0x1b107522);
	/* ARGB8888 hashes the stored alpha:
	 * python3 -c 'import zlib; print(hex(zlib.crc32(bytes(
	 *     [0x00,0x00,0xff,0x00, 0x78,0x56,0x34,0x12]))))'  -> 0x0fcf2c6b */
	img->format = DRM_FORMAT_ARGB8888;
	CHECK_PIXEL(wla_image_crc32(img), 0x0fcf2c6b);
	wla_image_destroy(img);
}

static void test_crc32_skips_stride_padding(void)
{
	/* The same 2x1 pixels with 8 bytes of junk after the row. */
	uint32_t rows[4] = { 0x00ff0000, 0x12345678, 0xdeadbeef, 0xdeadbeef };
	struct wla_image img = { .width = 2, .height = 1, .stride = 16,
		.format = DRM_FORMAT_XRGB8888, .data = rows };
	CHECK_PIXEL(wla_image_crc32(&img), 0x1b107522);
}

static void test_png_round_trip(void)
{
	struct wla_image *img = wla_image_create(7, 5);
	for (uint32_t y = 0; y < 5; y++) {
		for (uint32_t x = 0; x < 7; x++) {
			/* Junk X byte: it must neither reach the file nor the crc. */
			set_px(img, x, y, 0x5a000000 | ((x * 37 + y * 91) * 0x010307 & 0xffffff));
		}
	}
	const char *path = tmp_path("round-trip.png");
	CHECK_INT(wla_image_write_png(img, path), 0);
	struct wla_image *back = wla_image_read_png(path);
	CHECK(back != NULL);
	if (back) {
		CHECK_INT(back->width, 7);
		CHECK_INT(back->height, 5);
		CHECK_INT(back->format, DRM_FORMAT_XRGB8888);
		for (uint32_t y = 0; y < 5; y++) {
			for (uint32_t x = 0; x < 7; x++) {
				CHECK_PIXEL(wla_image_pixel(back, x, y),
					wla_image_pixel(img, x, y));
			}
		}
		CHECK_PIXEL(wla_image_crc32(back), wla_image_crc32(img));
	}
	wla_image_destroy(back);
	wla_image_destroy(img);
	unlink(path);
}

static void test_png_write_of_argb_is_the_image_over_black(void)
{
	struct wla_image *img = wla_image_create(1, 1);
	img->format = DRM_FORMAT_ARGB8888;
	set_px(img, 0, 0, 0x80804000); /* premultiplied: over black it is 804000 */
	const char *path = tmp_path("argb.png");
	CHECK_INT(wla_image_write_png(img, path), 0);
	struct wla_image *back = wla_image_read_png(path);
	CHECK(back && back->format == DRM_FORMAT_XRGB8888);
	if (back) {
		CHECK_PIXEL(wla_image_pixel(back, 0, 0), 0xff804000);
	}
	wla_image_destroy(back);
	wla_image_destroy(img);
	unlink(path);
}

static void test_png_read_rgba_premultiplies(void)
{
	/* Straight R ff G 80 B 00 at alpha 0x80: 255 * 128 / 255 = 128 and
	 * 128 * 128 / 255 = 64.25, so 0x80 0x40 0x00. The opaque one is unchanged. */
	static const uint8_t rgba[] = { 0xff, 0x80, 0x00, 0x80, 0x10, 0x20, 0x30, 0xff };
	const char *path = tmp_path("rgba.png");
	CHECK(write_ref_png(path, 2, 1, PNG_FORMAT_RGBA, rgba, NULL, 0));
	struct wla_image *img = wla_image_read_png(path);
	CHECK(img && img->format == DRM_FORMAT_ARGB8888);
	if (img) {
		CHECK_PIXEL(wla_image_pixel(img, 0, 0), 0x80804000);
		CHECK_PIXEL(wla_image_pixel(img, 1, 0), 0xff102030);
	}
	wla_image_destroy(img);
	unlink(path);
}

static void test_png_read_expands_grey_and_palette(void)
{
	static const uint8_t ga[] = { 0x40, 0xff, 0xff, 0x00 };
	const char *path = tmp_path("ga.png");
	CHECK(write_ref_png(path, 2, 1, PNG_FORMAT_GA, ga, NULL, 0));
	struct wla_image *img = wla_image_read_png(path);
	CHECK(img && img->format == DRM_FORMAT_ARGB8888);
	if (img) {
		CHECK_PIXEL(wla_image_pixel(img, 0, 0), 0xff404040);
		CHECK_PIXEL(wla_image_pixel(img, 1, 0), 0x00000000);
	}
	wla_image_destroy(img);
	unlink(path);

	static const uint8_t grey[] = { 0x40, 0xc0 };
	path = tmp_path("grey.png");
	CHECK(write_ref_png(path, 1, 2, PNG_FORMAT_GRAY, grey, NULL, 0));
	img = wla_image_read_png(path);
	CHECK(img && img->format == DRM_FORMAT_XRGB8888);
	if (img) {
		CHECK_PIXEL(wla_image_pixel(img, 0, 0), 0xff404040);
		CHECK_PIXEL(wla_image_pixel(img, 0, 1), 0xffc0c0c0);
	}
	wla_image_destroy(img);
	unlink(path);

	static const uint8_t colormap[] = { 0x12, 0x34, 0x56, 0xff, 0x00, 0x80 };
	static const uint8_t index[] = { 1, 0, 1 };
	path = tmp_path("palette.png");
	CHECK(write_ref_png(path, 3, 1, PNG_FORMAT_RGB_COLORMAP, index, colormap, 2));
	img = wla_image_read_png(path);
	CHECK(img && img->format == DRM_FORMAT_XRGB8888);
	if (img) {
		CHECK_PIXEL(wla_image_pixel(img, 0, 0), 0xffff0080);
		CHECK_PIXEL(wla_image_pixel(img, 1, 0), 0xff123456);
		CHECK_PIXEL(wla_image_pixel(img, 2, 0), 0xffff0080);
	}
	wla_image_destroy(img);
	unlink(path);
}

static void test_png_read_missing_file_logs_path(void)
{
	const char *path = tmp_path("does-not-exist.png");
	CHECK(wla_image_read_png(path) == NULL);
	CHECK_LOGGED(path, strerror(ENOENT));
}

static void test_png_read_of_a_non_png_fails(void)
{
	const char *path = tmp_path("not-a.png");
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("this is not a PNG file\n", f);
		fclose(f);
	}
	CHECK(wla_image_read_png(path) == NULL);
	CHECK_LOGGED(path);
	unlink(path);
}

static void test_png_write_errors(void)
{
	struct wla_image *img = wla_image_create(1, 1);
	const char *path = tmp_path("no-such-dir/out.png");
	CHECK_INT(wla_image_write_png(img, path), -ENOENT);
	CHECK_LOGGED(path, strerror(ENOENT));

	harness_log_clear();
	img->format = DRM_FORMAT_RGB565;
	path = tmp_path("rgb565.png");
	CHECK_INT(wla_image_write_png(img, path), -EINVAL);
	CHECK_LOGGED(path, "format");
	CHECK(access(path, F_OK) != 0);

	/* A device that is always full: the error shows up when the data is flushed. */
	harness_log_clear();
	img->format = DRM_FORMAT_XRGB8888;
	if (access("/dev/full", W_OK) == 0) {
		CHECK_INT(wla_image_write_png(img, "/dev/full"), -ENOSPC);
		CHECK_LOGGED("/dev/full", strerror(ENOSPC));
	}
	wla_image_destroy(img);
}

int main(void)
{
	harness_init();
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/wla-test-image-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_image_create_is_zeroed_xrgb);
	RUN_TEST(test_image_create_refuses_bad_sizes);
	RUN_TEST(test_image_pixel_reads_xrgb_as_opaque);
	RUN_TEST(test_crc32_of_a_known_image);
	RUN_TEST(test_crc32_skips_stride_padding);
	RUN_TEST(test_png_round_trip);
	RUN_TEST(test_png_write_of_argb_is_the_image_over_black);
	RUN_TEST(test_png_read_rgba_premultiplies);
	RUN_TEST(test_png_read_expands_grey_and_palette);
	RUN_TEST(test_png_read_missing_file_logs_path);
	RUN_TEST(test_png_read_of_a_non_png_fails);
	RUN_TEST(test_png_write_errors);
	rmdir(tmpdir);
	HARNESS_EXIT();
}
