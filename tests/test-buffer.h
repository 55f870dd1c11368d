/*
 * A wlr_buffer for tests: one colour, CPU-readable (data-ptr access), and a
 * flag the test owns that is set when wlroots frees it.
 */
#ifndef TESTS_TEST_BUFFER_H
#define TESTS_TEST_BUFFER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <wlr/types/wlr_buffer.h>

struct test_buffer {
	struct wlr_buffer base;
	uint32_t format;
	uint32_t stride;
	uint32_t *pixels;
	bool *destroyed; /* set when wlroots frees the buffer */
};

static void test_buffer_destroy(struct wlr_buffer *wlr_buffer)
{
	struct test_buffer *buf = wl_container_of(wlr_buffer, buf, base);
	if (buf->destroyed) {
		*buf->destroyed = true;
	}
	free(buf->pixels);
	free(buf);
}

static bool test_buffer_begin(struct wlr_buffer *wlr_buffer, uint32_t flags, void **data,
	uint32_t *format, size_t *stride)
{
	struct test_buffer *buf = wl_container_of(wlr_buffer, buf, base);
	*data = buf->pixels;
	*format = buf->format;
	*stride = buf->stride;
	return true;
}

static void test_buffer_end(struct wlr_buffer *wlr_buffer)
{
}

static const struct wlr_buffer_impl test_buffer_impl = {
	.destroy = test_buffer_destroy,
	.begin_data_ptr_access = test_buffer_begin,
	.end_data_ptr_access = test_buffer_end,
};

/* A w x h buffer of one colour in format; the caller owns it and lets go of
 * it with wlr_buffer_drop. destroyed (may be NULL) is set to false now and
 * to true when the buffer is freed. */
static inline struct test_buffer *test_buffer_create(int w, int h, uint32_t format,
	uint32_t color, bool *destroyed)
{
	struct test_buffer *buf = calloc(1, sizeof(*buf));
	buf->format = format;
	buf->stride = (uint32_t)w * 4;
	buf->pixels = calloc((size_t)w * (size_t)h, 4);
	for (int i = 0; i < w * h; i++) {
		buf->pixels[i] = color;
	}
	buf->destroyed = destroyed;
	if (destroyed) {
		*destroyed = false;
	}
	wlr_buffer_init(&buf->base, &test_buffer_impl, w, h);
	return buf;
}

#endif
