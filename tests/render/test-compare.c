/* Golden images with tolerance (wla_image_compare): what a one-pixel change
 * does at tolerance 0 and 1, pixels allowed to differ, ignored rectangles,
 * the diff image, and the refusals. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "render-helpers.h"

#define W 16
#define H 12

static struct wla_image *filled(uint32_t color)
{
	struct wla_image *img = wla_image_create(W, H);
	CHECK(img != NULL);
	for (size_t i = 0; img && i < (size_t)W * H; i++) {
		img->data[i] = color;
	}
	return img;
}

static void a_one_pixel_change_is_caught_at_0_and_passes_at_1(void)
{
	struct wla_image *ref = filled(0xff336699);
	struct wla_image *img = filled(0xff336699);
	img->data[5 * W + 7] = 0xff33669a; /* blue one step up */
	struct wla_compare_result r;
	CHECK_INT(wla_image_compare(img, ref, NULL, &r, NULL), 0);
	CHECK(!r.match);
	CHECK_INT(r.differing, 1);
	CHECK_INT(r.compared, W * H);
	CHECK_INT(r.ignored, 0);
	CHECK_INT(r.max_delta, 1);
	CHECK_INT(r.first_x, 7);
	CHECK_INT(r.first_y, 5);
	struct wla_compare_options opt = { .tolerance = 1 };
	CHECK_INT(wla_image_compare(img, ref, &opt, &r, NULL), 0);
	CHECK(r.match);
	CHECK_INT(r.differing, 0);
	CHECK_INT(r.max_delta, 1);
	/* Each colour channel counts, red and green as blue. */
	img->data[0] = 0xff356699;
	img->data[1] = 0xff336499;
	CHECK_INT(wla_image_compare(img, ref, &opt, &r, NULL), 0);
	CHECK(!r.match);
	CHECK_INT(r.differing, 2);
	CHECK_INT(r.max_delta, 2);
	CHECK_INT(r.first_x, 0);
	CHECK_INT(r.first_y, 0);
	wla_image_destroy(img);
	wla_image_destroy(ref);
}

static void pixels_allowed_to_differ_and_alpha_not_compared(void)
{
	struct wla_image *ref = filled(0xff000000);
	struct wla_image *img = filled(0xff000000);
	img->data[0] = img->data[W + 1] = img->data[2 * W + 2] = 0xffffffff;
	struct wla_compare_options opt = { .max_pixels = 3 };
	struct wla_compare_result r;
	CHECK_INT(wla_image_compare(img, ref, &opt, &r, NULL), 0);
	CHECK(r.match);
	CHECK_INT(r.differing, 3);
	CHECK_INT(r.max_delta, 255);
	opt.max_pixels = 2;
	CHECK_INT(wla_image_compare(img, ref, &opt, &r, NULL), 0);
	CHECK(!r.match);
	/* A reference read from a PNG with alpha: only the colour counts. */
	struct wla_image *argb = filled(0x00000000);
	argb->format = DRM_FORMAT_ARGB8888;
	CHECK_INT(wla_image_compare(ref, argb, NULL, &r, NULL), 0);
	CHECK(r.match);
	CHECK_INT(r.differing, 0);
	wla_image_destroy(argb);
	wla_image_destroy(img);
	wla_image_destroy(ref);
}

static void an_ignored_rectangle_is_ignored(void)
{
	struct wla_image *ref = filled(0xff102030);
	struct wla_image *img = filled(0xff102030);
	/* A "cursor" at 2,3 of 4x2, and one pixel changed outside it. */
	for (int y = 3; y < 5; y++) {
		for (int x = 2; x < 6; x++) {
			img->data[y * W + x] = 0xffffffff;
		}
	}
	struct wla_image_rect cursor = { 2, 3, 4, 2 };
	struct wla_compare_options opt = { .ignore = &cursor, .n_ignore = 1 };
	struct wla_compare_result r;
	CHECK_INT(wla_image_compare(img, ref, &opt, &r, NULL), 0);
	CHECK(r.match);
	CHECK_INT(r.ignored, 8);
	CHECK_INT(r.compared, W * H - 8);
	CHECK_INT(r.max_delta, 0);
	/* One pixel short of the cursor: caught. */
	cursor.width = 3;
	CHECK_INT(wla_image_compare(img, ref, &opt, &r, NULL), 0);
	CHECK(!r.match);
	CHECK_INT(r.differing, 2);
	CHECK_INT(r.first_x, 5);
	CHECK_INT(r.first_y, 3);
	/* A rectangle reaching outside the image is clipped, not refused. */
	struct wla_image_rect corner = { -5, -5, 8, 9 };
	opt.ignore = &corner;
	img->data[0] = 0xff000000;
	for (int y = 3; y < 5; y++) {
		for (int x = 2; x < 6; x++) {
			img->data[y * W + x] = 0xff102030;
		}
	}
	CHECK_INT(wla_image_compare(img, ref, &opt, &r, NULL), 0);
	CHECK(r.match);
	CHECK_INT(r.ignored, 3 * 4);
	wla_image_destroy(img);
	wla_image_destroy(ref);
}

static void the_diff_image_shows_where(void)
{
	struct wla_image *ref = filled(0xff8080c0);
	struct wla_image *img = filled(0xff8080c0);
	img->data[3 * W + 4] = 0xff000000;
	struct wla_image_rect clock = { 10, 0, 6, 2 };
	struct wla_compare_options opt = { .ignore = &clock, .n_ignore = 1 };
	struct wla_compare_result r;
	struct wla_image *diff = NULL;
	CHECK_INT(wla_image_compare(img, ref, &opt, &r, &diff), 0);
	CHECK(diff != NULL);
	if (diff) {
		CHECK_INT(diff->width, W);
		CHECK_INT(diff->height, H);
		CHECK_PIXEL(wla_image_pixel(diff, 4, 3), 0xffff0000);
		CHECK_PIXEL(wla_image_pixel(diff, 12, 1), 0xff202060);
		CHECK_PIXEL(wla_image_pixel(diff, 0, 0), 0xff202030); /* a quarter */
	}
	wla_image_destroy(diff);
	wla_image_destroy(img);
	wla_image_destroy(ref);
}

static void sizes_tolerances_and_rectangles_are_checked(void)
{
	struct wla_image *ref = filled(0xff000000);
	struct wla_image *small = wla_image_create(W - 1, H);
	struct wla_compare_result r;
	struct wla_image *diff = (struct wla_image *)&r; /* must become NULL */
	harness_log_clear();
	CHECK_INT(wla_image_compare(small, ref, NULL, &r, &diff), -EINVAL);
	CHECK_LOGGED("image compare: the image is 15x12, the reference 16x12");
	CHECK(diff == NULL);
	struct wla_compare_options opt = { .tolerance = 256 };
	CHECK_INT(wla_image_compare(ref, ref, &opt, &r, NULL), -EINVAL);
	CHECK_LOGGED("tolerance 256 is outside 0..255");
	struct wla_image_rect empty = { 1, 2, 0, 4 };
	opt = (struct wla_compare_options){ .ignore = &empty, .n_ignore = 1 };
	CHECK_INT(wla_image_compare(ref, ref, &opt, &r, &diff), -EINVAL);
	CHECK_LOGGED("ignored rectangle 0 (1,2 0x4) is empty");
	CHECK(diff == NULL);
	wla_image_destroy(small);
	wla_image_destroy(ref);
}

/* Rectangles at the ends of int32: no overflow in where they reach. */
static void rectangles_at_the_limits(void)
{
	struct wla_image *ref = filled(0xff000000);
	struct wla_image *img = filled(0xffffffff);
	const struct wla_image_rect none[] = {
		{ INT32_MAX - 1, 0, INT32_MAX, 1 },
		{ INT32_MIN, INT32_MIN, INT32_MAX, INT32_MAX },
	};
	struct wla_compare_options opt = { .ignore = none, .n_ignore = 2 };
	struct wla_compare_result r;
	CHECK_INT(wla_image_compare(img, ref, &opt, &r, NULL), 0);
	CHECK_INT(r.ignored, 0);
	CHECK_INT(r.differing, W * H);
	const struct wla_image_rect all = { -10, -10, INT32_MAX, INT32_MAX };
	opt = (struct wla_compare_options){ .ignore = &all, .n_ignore = 1 };
	CHECK_INT(wla_image_compare(img, ref, &opt, &r, NULL), 0);
	CHECK_INT(r.ignored, W * H);
	CHECK(r.match);
	wla_image_destroy(img);
	wla_image_destroy(ref);
}

/* Rows padded past width * 4 (an image of a plane's buffer): the padding is
 * no pixel. */
static void padded_rows_are_compared_by_their_pixels(void)
{
	struct wla_image *ref = filled(0xff123456);
	uint32_t stride = W * 4 + 16;
	uint32_t *data = malloc((size_t)stride * H);
	CHECK(data != NULL);
	if (!data) {
		wla_image_destroy(ref);
		return;
	}
	memset(data, 0x77, (size_t)stride * H);
	for (uint32_t y = 0; y < H; y++) {
		uint32_t *row = (uint32_t *)((uint8_t *)data + (size_t)y * stride);
		for (uint32_t x = 0; x < W; x++) {
			row[x] = 0xff123456;
		}
	}
	struct wla_image img = { .width = W, .height = H, .stride = stride,
		.format = DRM_FORMAT_XRGB8888, .data = data };
	struct wla_compare_result r;
	CHECK_INT(wla_image_compare(&img, ref, NULL, &r, NULL), 0);
	CHECK(r.match);
	CHECK_INT(r.differing, 0);
	((uint32_t *)((uint8_t *)data + 3 * (size_t)stride))[W - 1] = 0xff000000;
	CHECK_INT(wla_image_compare(&img, ref, NULL, &r, NULL), 0);
	CHECK_INT(r.differing, 1);
	CHECK_INT(r.first_x, W - 1);
	CHECK_INT(r.first_y, 3);
	free(data);
	wla_image_destroy(ref);
}

int main(void)
{
	harness_init();
	RUN_TEST(a_one_pixel_change_is_caught_at_0_and_passes_at_1);
	RUN_TEST(pixels_allowed_to_differ_and_alpha_not_compared);
	RUN_TEST(an_ignored_rectangle_is_ignored);
	RUN_TEST(the_diff_image_shows_where);
	RUN_TEST(sizes_tolerances_and_rectangles_are_checked);
	RUN_TEST(rectangles_at_the_limits);
	RUN_TEST(padded_rows_are_compared_by_their_pixels);
	HARNESS_EXIT();
}
