/*
 * The one fake framebuffer of the tests (unit, queue, fuzz): a wla_fb with
 * its own pixels whose funcs count scanout references ("locks") and CPU
 * accesses in a probe that the test owns, so that they can still be read
 * after the wrapper was freed (a use of the freed wrapper itself is ASan's).
 */
#ifndef TESTS_LIB_FAKE_FB_H
#define TESTS_LIB_FAKE_FB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "backend/atomic.h"

struct fake_fb_probe {
	int locks;        /* prepare minus cleanup */
	int prepares;     /* successful prepare calls */
	int accesses;     /* begin_access minus end_access */
	int fail_prepare; /* a negative errno: every prepare fails with it */
	int fail_prepare_once; /* a negative errno: the next prepare fails with it */
	bool unreadable;  /* begin_access fails */
	bool destroyed;   /* the wrapper was freed */
	/* A cleanup without a lock, or the wrapper freed with locks held. */
	int bad_cleanups;
	uint32_t pixel;   /* what it was filled with */
	/* Told when the wrapper is freed (the fuzz target forgets it). */
	void (*on_destroy)(struct fake_fb_probe *probe, void *data);
	void *on_destroy_data;
};

struct fake_fb {
	struct wla_fb base;
	uint32_t *pixels;
	uint32_t stride;
	struct fake_fb_probe *probe;
};

static inline struct fake_fb *fake_fb_from_fb(struct wla_fb *fb)
{
	return (struct fake_fb *)((char *)fb - offsetof(struct fake_fb, base));
}

static inline int fake_fb_prepare(struct wla_fb *fb)
{
	struct fake_fb_probe *probe = fake_fb_from_fb(fb)->probe;
	if (probe->fail_prepare_once) {
		int ret = probe->fail_prepare_once;
		probe->fail_prepare_once = 0;
		return ret;
	}
	if (probe->fail_prepare) {
		return probe->fail_prepare;
	}
	probe->locks++;
	probe->prepares++;
	return 0;
}

static inline void fake_fb_cleanup(struct wla_fb *fb)
{
	struct fake_fb_probe *probe = fake_fb_from_fb(fb)->probe;
	if (probe->locks <= 0) {
		probe->bad_cleanups++;
	}
	probe->locks--;
}

static inline bool fake_fb_begin_access(struct wla_fb *fb, const void **data, uint32_t *stride)
{
	struct fake_fb *ffb = fake_fb_from_fb(fb);
	if (ffb->probe->unreadable) {
		return false;
	}
	ffb->probe->accesses++;
	*data = ffb->pixels;
	*stride = ffb->stride;
	return true;
}

static inline void fake_fb_end_access(struct wla_fb *fb)
{
	fake_fb_from_fb(fb)->probe->accesses--;
}

static inline void fake_fb_destroy(struct wla_fb *fb)
{
	struct fake_fb *ffb = fake_fb_from_fb(fb);
	struct fake_fb_probe *probe = ffb->probe;
	if (probe->locks != 0) {
		probe->bad_cleanups++;
	}
	probe->destroyed = true;
	free(ffb->pixels);
	free(ffb);
	if (probe->on_destroy) {
		probe->on_destroy(probe, probe->on_destroy_data);
	}
}

static const struct wla_fb_funcs fake_fb_funcs = {
	.prepare = fake_fb_prepare,
	.cleanup = fake_fb_cleanup,
	.begin_access = fake_fb_begin_access,
	.end_access = fake_fb_end_access,
	.destroy = fake_fb_destroy,
};

/* What the bytes past a row's pixels hold in a padded fb: a reader that
 * ignores the stride shows it. */
#define FAKE_FB_PADDING 0x5a5a5a5au

/* A width x height fb of a 32-bit format filled with pixel, rows stride
 * bytes apart (a multiple of 4; less than width * 4 only to be refused),
 * with one wrapper reference owned by the caller (wla_fb_put). NULL on
 * ENOMEM. */
static inline struct wla_fb *fake_fb_create_strided(uint32_t width, uint32_t height,
	uint32_t format, uint32_t pixel, uint32_t stride, struct fake_fb_probe *probe)
{
	struct fake_fb *ffb = calloc(1, sizeof(*ffb));
	if (!ffb) {
		return NULL;
	}
	ffb->stride = stride;
	size_t pitch = stride > width * 4 ? stride : width * 4;
	size_t words = pitch / 4 * height;
	ffb->pixels = malloc(words * 4);
	if (!ffb->pixels) {
		free(ffb);
		return NULL;
	}
	for (size_t i = 0; i < words; i++) {
		ffb->pixels[i] = FAKE_FB_PADDING;
	}
	for (size_t y = 0; y < height; y++) {
		for (size_t x = 0; x < width; x++) {
			ffb->pixels[y * (stride / 4) + x] = pixel;
		}
	}
	ffb->probe = probe;
	*probe = (struct fake_fb_probe){ .pixel = pixel };
	wla_fb_init(&ffb->base, &fake_fb_funcs, width, height, format);
	return &ffb->base;
}

/* The same, rows packed (stride width * 4). */
static inline struct wla_fb *fake_fb_create(uint32_t width, uint32_t height, uint32_t format,
	uint32_t pixel, struct fake_fb_probe *probe)
{
	return fake_fb_create_strided(width, height, format, pixel, width * 4, probe);
}

static inline void fake_fb_set_pixel(struct wla_fb *fb, uint32_t x, uint32_t y, uint32_t pixel)
{
	struct fake_fb *ffb = fake_fb_from_fb(fb);
	ffb->pixels[y * (ffb->stride / 4) + x] = pixel;
}

#endif
