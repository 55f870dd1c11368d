/*
 * Golden images with tolerance: a frame compared with a reference channel
 * by channel, some pixels allowed to differ, rectangles left out (a
 * cursor, a clock), and a picture of where they differ for a failed test.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <wlr/util/log.h>
#include "util.h"
#include "wlatomic/capture.h"

/* A differing pixel in the diff image, and an ignored one. */
#define DIFF_RED 0xffff0000u
#define DIFF_IGNORED 0xff202060u

static uint32_t channel_delta(uint32_t a, uint32_t b, int shift)
{
	uint32_t x = (a >> shift) & 0xff, y = (b >> shift) & 0xff;
	return x > y ? x - y : y - x;
}

/* The largest difference of the colour channels (alpha is not compared: a
 * capture has none, a reference PNG may). */
static uint32_t pixel_delta(uint32_t a, uint32_t b)
{
	uint32_t d = channel_delta(a, b, 16);
	uint32_t g = channel_delta(a, b, 8), bl = channel_delta(a, b, 0);
	d = g > d ? g : d;
	return bl > d ? bl : d;
}

static bool ignored(const struct wla_compare_options *opt, uint32_t x, uint32_t y)
{
	for (size_t i = 0; i < opt->n_ignore; i++) {
		const struct wla_image_rect *r = &opt->ignore[i];
		if ((int64_t)x >= r->x && (int64_t)x < (int64_t)r->x + r->width &&
				(int64_t)y >= r->y && (int64_t)y < (int64_t)r->y + r->height) {
			return true;
		}
	}
	return false;
}

/* The reference at a quarter of its brightness: where the images agree. */
static uint32_t dimmed(uint32_t p)
{
	return 0xff000000u | ((p >> 2) & 0x003f3f3fu);
}

WLA_EXPORT int wla_image_compare(const struct wla_image *image,
	const struct wla_image *reference, const struct wla_compare_options *options,
	struct wla_compare_result *result, struct wla_image **diff)
{
	static const struct wla_compare_options exact = { 0 };
	const struct wla_compare_options *opt = options ? options : &exact;
	*result = (struct wla_compare_result){ 0 };
	if (diff) {
		*diff = NULL;
	}
	if (image->width != reference->width || image->height != reference->height) {
		wlr_log(WLR_ERROR, "image compare: the image is %" PRIu32 "x%" PRIu32 ", the "
			"reference %" PRIu32 "x%" PRIu32 ": sizes differ", image->width,
			image->height, reference->width, reference->height);
		return -EINVAL;
	}
	if (opt->tolerance > 255) {
		wlr_log(WLR_ERROR, "image compare: tolerance %" PRIu32 " is outside 0..255",
			opt->tolerance);
		return -EINVAL;
	}
	for (size_t i = 0; i < opt->n_ignore; i++) {
		const struct wla_image_rect *r = &opt->ignore[i];
		if (r->width <= 0 || r->height <= 0) {
			wlr_log(WLR_ERROR, "image compare: ignored rectangle %zu (%" PRId32 ",%"
				PRId32 " %" PRId32 "x%" PRId32 ") is empty", i, r->x, r->y,
				r->width, r->height);
			return -EINVAL;
		}
	}
	struct wla_image *out = NULL;
	if (diff && !(out = wla_image_create(image->width, image->height))) {
		return -ENOMEM; /* logged */
	}
	for (uint32_t y = 0; y < image->height; y++) {
		for (uint32_t x = 0; x < image->width; x++) {
			uint32_t ref = wla_image_pixel(reference, x, y);
			uint32_t *o = out ? (uint32_t *)((uint8_t *)out->data +
				(size_t)y * out->stride) + x : NULL;
			if (opt->n_ignore && ignored(opt, x, y)) {
				result->ignored++;
				if (o) {
					*o = DIFF_IGNORED;
				}
				continue;
			}
			result->compared++;
			uint32_t d = pixel_delta(wla_image_pixel(image, x, y), ref);
			result->max_delta = d > result->max_delta ? d : result->max_delta;
			bool differs = d > opt->tolerance;
			if (differs && result->differing++ == 0) {
				result->first_x = x;
				result->first_y = y;
			}
			if (o) {
				*o = differs ? DIFF_RED : dimmed(ref);
			}
		}
	}
	result->match = result->differing <= opt->max_pixels;
	if (diff) {
		*diff = out;
	}
	return 0;
}
