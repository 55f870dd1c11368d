/* Building blocks shared by the render tests: framebuffers as wla_images and
 * layers that show them. */
#ifndef TESTS_RENDER_HELPERS_H
#define TESTS_RENDER_HELPERS_H

#include <drm_fourcc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "harness.h"
#include "render/compose.h"
#include "wlatomic/capture.h"

#define BLACK 0xff000000u

/* A pixel a check expects: (x, y) reads want. */
struct want_px {
	uint32_t x, y, want;
};

/* Each listed pixel of img reads what it wants; every one that does not is
 * a failure at file:line naming its x, y and both values. */
static inline void check_pixels(const char *file, int line, const struct wla_image *img,
	const struct want_px *wants, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t got = wla_image_pixel(img, wants[i].x, wants[i].y);
		if (got != wants[i].want) {
			fprintf(stderr, "  %s:%d: pixel %u,%u == 0x%08x, expected 0x%08x\n", file,
				line, wants[i].x, wants[i].y, got, wants[i].want);
			harness_test_failures++;
		}
	}
}
/* CHECK_PIXELS(img, { x, y, want }, ...) */
#define CHECK_PIXELS(img, ...) \
	check_pixels(__FILE__, __LINE__, (img), (const struct want_px[]){ __VA_ARGS__ }, \
		sizeof((const struct want_px[]){ __VA_ARGS__ }) / sizeof(struct want_px))

static inline void set_px(struct wla_image *img, uint32_t x, uint32_t y, uint32_t v)
{
	img->data[y * (img->stride / 4) + x] = v;
}

static inline struct wla_image *solid_fb(uint32_t w, uint32_t h, uint32_t v)
{
	struct wla_image *img = wla_image_create(w, h);
	for (uint32_t y = 0; img && y < h; y++) {
		for (uint32_t x = 0; x < w; x++) {
			set_px(img, x, y, v);
		}
	}
	return img;
}

/* A layer showing all of fb 1:1 with its top-left corner at (x, y). */
static inline struct wla_compose_layer whole_layer(const struct wla_image *fb, uint32_t format,
	int32_t x, int32_t y)
{
	return (struct wla_compose_layer){
		.data = fb->data,
		.stride = fb->stride,
		.width = fb->width,
		.height = fb->height,
		.format = format,
		.src_w = fb->width << 16,
		.src_h = fb->height << 16,
		.dst_x = x,
		.dst_y = y,
		.dst_w = fb->width,
		.dst_h = fb->height,
	};
}

#endif
