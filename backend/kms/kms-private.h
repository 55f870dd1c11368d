/*
 * What the files of the KMS driver share (private to backend/kms/; the
 * driver's interface to the glue is include/backend/kms.h): the types of an
 * fb import, a mode blob, a property lookup, a writeback job and a request,
 * and each file's functions the others call, grouped by the file that
 * defines them (their comments are there).
 */
#ifndef BACKEND_KMS_PRIVATE_H
#define BACKEND_KMS_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <wayland-server-core.h>
#include <xf86drmMode.h>
#include <wlr/util/log.h>
#include "backend/kms.h"

/* A line about the card, or about one of its objects (a CRTC, plane or
 * connector: anything with a base.name), named first as wlroots'
 * wlr_drm_conn_log does. */
#define wla_kms_log(kms, level, fmt, ...) \
	wlr_log(level, "kms %s: " fmt, (kms)->path, ##__VA_ARGS__)
#define wla_kms_log_errno(kms, level, fmt, ...) \
	wlr_log_errno(level, "kms %s: " fmt, (kms)->path, ##__VA_ARGS__)
#define wla_kms_obj_log(kms, obj, level, fmt, ...) \
	wlr_log(level, "kms %s: %s: " fmt, (kms)->path, (obj)->base.name, ##__VA_ARGS__)
#define wla_kms_obj_log_errno(kms, obj, level, fmt, ...) \
	wlr_log_errno(level, "kms %s: %s: " fmt, (kms)->path, (obj)->base.name, ##__VA_ARGS__)

struct wla_capture;
struct wla_image;

struct wla_kms_blob {
	struct wla_mode mode;
	uint32_t id;
};

/* The driver's import of a wla_fb: a DRM framebuffer, kept while the fb
 * lives (fb.c). */
struct kms_fb {
	uint32_t fb_id;
	struct wla_fb *fb;
	struct wl_list link; /* struct wla_kms.imports */
	/* On a card without PRIME: the dumb buffer the fb's pixels are
	 * copied into at each prepare, mapped. */
	uint32_t dumb_handle, dumb_pitch;
	void *dumb_map;
	uint64_t dumb_size;
};

struct prop_want {
	const char *name;
	uint32_t *id;
	uint64_t *value; /* may be NULL */
};

/* What one writeback commit writes into: a dumb buffer of the mode's size,
 * for every capture that waited on its CRTC when it went out. */
struct kms_wb_job {
	struct wla_kms *kms;
	struct wla_kms_crtc *kc;
	uint32_t width, height, stride, handle, fb_id;
	uint64_t size;
	void *map;
	int32_t fence_fd;
	struct wl_event_source *fence_source;
	uint64_t serial; /* the commit that carries it */
	uint64_t seq;
	bool flipped, fenced;
	struct wl_list captures; /* struct wla_capture.link */
	/* The fbs on the CRTC when it went out, held (locked) until the
	 * writeback is done: a display engine that composes late (vkms' worker)
	 * still reads them after the next flip released them. */
	struct wla_fb *held[WLA_MAX_PLANES];
	size_t n_held;
	/* Fires when the writeback has not completed in time (a display
	 * engine that dropped it: vkms' composer under load); without a loop
	 * the page-flip events look (wla_kms_check_stall). */
	struct wl_event_source *stall_timer;
	uint64_t started_ns;
	/* Injected (kms->fail_writebacks): taken as never completing. */
	bool dropped;
};


/* One atomic request being built. */
struct kms_req {
	struct wla_kms *kms;
	drmModeAtomicReq *req;
	int err;
	/* The writeback connector attached (crtc id) or detached (0). */
	bool wb_routes;
	uint32_t wb_crtc;
	/* A writeback job the request carries. */
	struct kms_wb_job *job;
	/* The restore after an inactive session: every modeset is forced. */
	bool restore;
	/* FB_DAMAGE_CLIPS blobs of its planes, let go once it was sent. */
	uint32_t damage_blobs[WLA_MAX_PLANES];
	size_t n_damage_blobs;
};

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* properties.c */
bool wla_kms_get_props(int fd, uint32_t obj, uint32_t type, const struct prop_want *want,
	size_t n_want);

/* mode.c */
bool wla_kms_mode_from_drm(const drmModeModeInfo *info, struct wla_mode *mode);
/* writeback.c: give the writeback in flight up if it is overdue. */
void wla_kms_check_stall(struct wla_kms *kms);

/* atomic.c: the session went inactive (nothing goes to the card; states
 * handed over wait) or active again (every object programmed as the core
 * has it, in one modeset; the states that waited latch with it). */
void wla_kms_pause(struct wla_kms *kms);
void wla_kms_resume(struct wla_kms *kms);
/* atomic.c: free kc's black framebuffer (at the driver's end). */
void wla_kms_blank_free(struct wla_kms *kms, struct wla_kms_crtc *kc);
uint32_t wla_kms_mode_blob(struct wla_kms *kms, const struct wla_mode *mode);
/* The cached MODE_ID blob of mode made of the kernel's info as it is
 * (a mode kept lit at start: flags ours would not carry keep the kernel
 * from seeing another mode). false (logged) on failure. */
bool wla_kms_mode_blob_keep(struct wla_kms *kms, const struct wla_mode *mode,
	const drmModeModeInfo *info);
uint32_t wla_kms_gamma_blob(struct wla_kms *kms, struct wla_kms_crtc *kc,
	struct wla_gamma_lut *lut);
/* Let go of kc's n oldest GAMMA_LUT blobs. */
void wla_kms_gamma_blobs_release(struct wla_kms *kms, struct wla_kms_crtc *kc, size_t n);

/* fb.c */
/* fb's import on this card, made now if it has none (for a TEST_ONLY or a
 * prepare_fb); NULL, logged, if the card cannot take it. */
struct kms_fb *wla_kms_import_fb(struct wla_kms *kms, struct wla_fb *fb);
int wla_kms_prepare_fb(struct wla_device *dev, struct wla_fb *fb);
void wla_kms_cleanup_fb(struct wla_device *dev, struct wla_fb *fb);
void wla_kms_release_fb(struct wla_device *dev, struct wla_fb *fb);
/* Every import kept of an fb not scanned out (the driver goes). */
void wla_kms_release_imports(struct wla_kms *kms);

/* atomic.c */
void wla_kms_add_prop(struct kms_req *r, const char *what, uint32_t obj, uint32_t prop,
	uint64_t value);
void wla_kms_finish_request(struct kms_req *r);
int wla_kms_atomic_check(struct wla_device *dev, struct wla_atomic_state *state);
int wla_kms_program(struct wla_kms *kms, struct wla_atomic_state *state, uint32_t mask);
int wla_kms_commit_tail(struct wla_device *dev, struct wla_atomic_state *state);

/* events.c */
struct wla_kms_flip *wla_kms_flip_take(struct wla_kms *kms, uint64_t serial, uint32_t crtcs);
void wla_kms_flip_drop(struct wla_kms_flip *flip);
int wla_kms_handle_fd(int fd, uint32_t mask, void *data);
void wla_kms_sync(struct wla_device *dev);
void wla_kms_deliver(struct wla_device *dev);
void wla_kms_schedule_idle(struct wla_kms *kms);
void wla_kms_mark_lost(struct wla_kms *kms, int err);
bool wla_kms_vblank_at(struct wla_device *dev, struct wla_crtc *crtc, uint64_t t,
	uint64_t *seq, uint64_t *vblank_ns);
bool wla_kms_vblank_counters(struct wla_device *dev, struct wla_crtc *crtc,
	struct wla_vblank_counters *counters);
/* The sequence number of a refresh cycle at when_ns on a CRTC whose card
 * has no vblank counter: counted on the mode's period from the last one. */
uint64_t wla_kms_counted_seq(const struct wla_kms_crtc *kc, uint64_t when_ns);

/* writeback.c */
void wla_kms_job_free(struct kms_wb_job *job);
void wla_kms_fail_captures(struct wla_kms *kms, struct wla_kms_crtc *kc);
void wla_kms_deliver_failed(struct wla_kms *kms);
void wla_kms_check_job(struct wla_kms *kms);
void wla_kms_start_job(struct wla_kms *kms, struct kms_wb_job *job, uint64_t serial,
	struct wla_atomic_state *state);
void wla_kms_add_writeback_route(struct kms_req *r, struct wla_kms_crtc *kc,
	const struct wla_crtc_state *cs, bool with_wb);
void wla_kms_add_writeback_job(struct kms_req *r, struct wla_kms_crtc *kc,
	const struct wla_crtc_state *cs);
void wla_kms_kick_captures(struct wla_kms *kms);
struct wla_capture *wla_kms_capture(struct wla_device *dev, struct wla_crtc *crtc,
	void (*func)(struct wla_capture *capture, const struct wla_image *image, uint64_t seq,
		void *data), void *data);
void wla_kms_capture_cancel(struct wla_device *dev, struct wla_capture *capture);
void wla_kms_init_writeback(struct wla_kms *kms, const drmModeConnector *conn);

/* probe.c */
bool wla_kms_init_crtcs(struct wla_kms *kms, const drmModeRes *res);
bool wla_kms_init_planes(struct wla_kms *kms);
bool wla_kms_init_connectors(struct wla_kms *kms, const drmModeRes *res);
uint32_t wla_kms_connector_crtcs(struct wla_kms *kms, const drmModeConnector *conn);

/* card.c */
/* Check that the fd handed over is a KMS device with atomic modesetting
 * (and set the client caps the driver needs): 0, or a negative errno,
 * logged naming the card, the fd and the refused call. */
int wla_kms_check_fd(struct wla_kms *kms);
void wla_kms_listen_card(struct wla_kms *kms);
void wla_kms_unlisten_card(struct wla_kms *kms);

#endif
