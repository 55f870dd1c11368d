/*
 * The KMS driver as the glue makes it (a session opens the card, the
 * driver is handed it), and dumb buffers as wla_fbs for the KMS tests:
 * made on the card, exported as a dmabuf (as wlroots' dumb allocator does)
 * and mapped for the CPU.
 */
#ifndef TESTS_KERNEL_KMS_HELPERS_H
#define TESTS_KERNEL_KMS_HELPERS_H

#include <drm_fourcc.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xf86drm.h>
#include "backend/atomic.h"
#include "backend/kms.h"
#include "backend/session.h"

/* The driver on the card cfg names (or the first usable one), opened by a
 * session without a seat or a loop, as the glue's create_kms_device does:
 * NULL when the session finds no card or the driver refuses it (both
 * logged). kms_close destroys the driver, then closes the card. */
static inline struct wla_kms *kms_open_loop(const struct wla_config *cfg,
	struct wl_event_loop *loop)
{
	struct wla_session *session = wla_session_create(NULL, NULL);
	struct wla_card *card = session ? wla_session_open_card(session, cfg) : NULL;
	struct wla_kms *kms = card ? wla_kms_create(loop, card) : NULL;
	if (!kms) {
		wla_session_destroy(session);
	}
	return kms;
}

/* The same with the driver on an event loop (its fd and idle sources). */
static inline struct wla_kms *kms_open(const struct wla_config *cfg)
{
	return kms_open_loop(cfg, NULL);
}

/* What the console left lit, kept at open (keep_lit in backend/kms/kms.c):
 * turned off, for a test that starts from nothing on. false if a commit
 * was refused. */
static inline bool kms_turn_off_lit(struct wla_kms *kms)
{
	bool ok = true;
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_crtc *lit = &kms->crtcs[c].base;
		if (!lit->state->active) {
			continue;
		}
		struct wla_atomic_state *state = wla_atomic_state_alloc(&kms->dev);
		state->allow_modeset = true;
		struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, lit);
		cs->enable = cs->active = false;
		for (size_t i = 0; i < kms->n_connectors; i++) {
			struct wla_connector *conn = &kms->connectors[i]->base;
			if (conn->state->crtc == lit) {
				wla_atomic_set_crtc_for_connector(state,
					wla_atomic_get_connector_state(state, conn), NULL);
			}
		}
		if (wla_atomic_commit(state) < 0) {
			wla_atomic_state_free(state);
			ok = false;
		}
	}
	return ok;
}

static inline void kms_close(struct wla_kms *kms)
{
	if (kms) {
		struct wla_session *session = kms->card->session;
		wla_kms_destroy(kms);
		wla_session_destroy(session);
	}
}

/* A dumb buffer as a wla_fb. */
struct dumb_fb {
	struct wla_fb base;
	int fd;
	uint32_t handle;
	int prime_fd;
	uint32_t stride;
	uint64_t size;
	uint32_t *map;
	int prepares, cleanups;
};

static inline void dumb_destroy(struct wla_fb *fb);
/* Dumb buffers not yet destroyed: each one's mapping keeps the card's fd,
 * and with it DRM master, open. */
static int live_dumbs;

static inline int dumb_prepare(struct wla_fb *fb)
{
	struct dumb_fb *d = wl_container_of(fb, d, base);
	d->prepares++;
	return 0;
}

static inline void dumb_cleanup(struct wla_fb *fb)
{
	struct dumb_fb *d = wl_container_of(fb, d, base);
	d->cleanups++;
}

static inline bool dumb_begin(struct wla_fb *fb, const void **data, uint32_t *stride)
{
	struct dumb_fb *d = wl_container_of(fb, d, base);
	*data = d->map;
	*stride = d->stride;
	return true;
}

static inline void dumb_end(struct wla_fb *fb)
{
}

static inline bool dumb_dmabuf(struct wla_fb *fb, struct wla_dmabuf *dmabuf)
{
	struct dumb_fb *d = wl_container_of(fb, d, base);
	*dmabuf = (struct wla_dmabuf){ .n_planes = 1, .fd = { d->prime_fd },
		.stride = { d->stride } };
	return true;
}

static const struct wla_fb_funcs dumb_funcs = {
	.prepare = dumb_prepare,
	.cleanup = dumb_cleanup,
	.begin_access = dumb_begin,
	.end_access = dumb_end,
	.get_dmabuf = dumb_dmabuf,
	.destroy = dumb_destroy,
};

static inline void dumb_destroy(struct wla_fb *fb)
{
	struct dumb_fb *d = wl_container_of(fb, d, base);
	munmap(d->map, d->size);
	close(d->prime_fd);
	struct drm_mode_destroy_dumb destroy = { .handle = d->handle };
	drmIoctl(d->fd, DRM_IOCTL_MODE_DESTROY_DUMB, &destroy);
	free(d);
	live_dumbs--;
}

static inline struct dumb_fb *dumb_create(int fd, uint32_t w, uint32_t h, uint32_t format,
	uint32_t color)
{
	struct dumb_fb *d = calloc(1, sizeof(*d));
	struct drm_mode_create_dumb create = { .width = w, .height = h, .bpp = 32 };
	if (!d || drmIoctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &create) != 0) {
		fprintf(stderr, "  CREATE_DUMB %ux%u: %s\n", w, h, strerror(errno));
		free(d);
		return NULL;
	}
	d->fd = fd;
	d->handle = create.handle;
	d->stride = create.pitch;
	d->size = create.size;
	struct drm_mode_map_dumb map = { .handle = d->handle };
	drmIoctl(fd, DRM_IOCTL_MODE_MAP_DUMB, &map);
	d->map = mmap(NULL, d->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)map.offset);
	drmPrimeHandleToFD(fd, d->handle, DRM_CLOEXEC | DRM_RDWR, &d->prime_fd);
	for (uint32_t y = 0; y < h; y++) {
		for (uint32_t x = 0; x < w; x++) {
			d->map[y * (d->stride / 4) + x] = color;
		}
	}
	live_dumbs++;
	wla_fb_init(&d->base, &dumb_funcs, w, h, format);
	d->base.modifier = DRM_FORMAT_MOD_LINEAR;
	return d;
}

#endif
