/*
 * The kernel's legacy entry points (update_plane, disable_plane, set_config,
 * page_flip) written on the atomic core, as the kernel's helpers are: only
 * tests use them, to drive the core and the drivers without the glue.
 */
#ifndef TESTS_LIB_LEGACY_H
#define TESTS_LIB_LEGACY_H

#include "backend/atomic.h"

/*
 * Legacy entry points built on atomic: each builds a state, commits it
 * (blocking: -EBUSY while something is queued), and returns 0 or a negative
 * errno (logged); the caller's fb reference is not consumed.
 */
int wla_atomic_update_plane(struct wla_plane *plane, struct wla_crtc *crtc, struct wla_fb *fb,
	int32_t crtc_x, int32_t crtc_y, uint32_t crtc_w, uint32_t crtc_h, uint32_t src_x,
	uint32_t src_y, uint32_t src_w, uint32_t src_h);
int wla_atomic_disable_plane(struct wla_plane *plane);
/* Mode set: mode NULL disables the CRTC and unroutes conn. With a mode, fb
 * (may be NULL only when disabling) goes full screen on the primary plane. */
int wla_atomic_set_config(struct wla_crtc *crtc, struct wla_connector *conn,
	const struct wla_mode *mode, struct wla_fb *fb, uint64_t commit_seq);
/* New fb on the primary plane, latched at the next vblank. */
int wla_atomic_page_flip(struct wla_crtc *crtc, struct wla_fb *fb, uint64_t commit_seq);

#endif
