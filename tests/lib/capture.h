/*
 * What a test's capture callback keeps: the one copy of a captured image
 * the tests make (the image a callback gets is the backend's until it
 * returns).
 */
#ifndef TESTS_LIB_CAPTURE_H
#define TESTS_LIB_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wlatomic/capture.h>

struct test_capture {
	int calls;
	bool done; /* the callback ran since the last reset */
	uint64_t seq;
	struct wla_image *image; /* a copy; NULL if the capture failed */
};

/* Forget the last capture (and free its copy). */
static inline void test_capture_reset(struct test_capture *c)
{
	wla_image_destroy(c->image);
	c->image = NULL;
	c->done = false;
}

/* A wla_capture_func_t: data is a struct test_capture. */
static inline void test_capture_done(struct wla_capture *capture, const struct wla_image *image,
	uint64_t seq, void *data)
{
	struct test_capture *c = data;
	wla_image_destroy(c->image);
	c->image = NULL;
	c->calls++;
	c->done = true;
	c->seq = seq;
	if (!image) {
		return;
	}
	c->image = wla_image_create(image->width, image->height);
	if (!c->image) {
		abort();
	}
	for (uint32_t y = 0; y < image->height; y++) {
		memcpy((char *)c->image->data + (size_t)y * c->image->stride,
			(const char *)image->data + (size_t)y * image->stride,
			(size_t)image->width * 4);
	}
}

#endif
