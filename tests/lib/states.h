/*
 * Building what tests commit, on any driver (the VDC fixture, the core-only
 * test driver, the fuzzer): a state for one commit of a CRTC, planes put in
 * it, and a nonblocking commit that frees what it refused.
 */
#ifndef TESTS_LIB_STATES_H
#define TESTS_LIB_STATES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "backend/atomic.h"

/* A state of commit_seq seq holding crtc; a frame (frame: its present event
 * is wanted) or not. */
static inline struct wla_atomic_state *test_state(struct wla_device *dev, struct wla_crtc *crtc,
	uint64_t seq, bool frame)
{
	struct wla_atomic_state *state = wla_atomic_state_alloc(dev);
	struct wla_crtc_state *cs = state ? wla_atomic_get_crtc_state(state, crtc) : NULL;
	if (!cs) {
		abort();
	}
	cs->commit_seq = seq;
	cs->want_event = frame;
	return state;
}

/* fb on plane for crtc at (x, y), unscaled and whole; with fb NULL the
 * plane off. */
static inline struct wla_plane_state *test_put(struct wla_atomic_state *state,
	struct wla_crtc *crtc, struct wla_plane *plane, struct wla_fb *fb, int32_t x, int32_t y)
{
	struct wla_plane_state *ps = wla_atomic_get_plane_state(state, plane);
	if (!ps || wla_atomic_set_crtc_for_plane(state, ps, fb ? crtc : NULL) != 0) {
		abort();
	}
	wla_atomic_set_fb_for_plane(ps, fb);
	wla_plane_state_set_full(ps, x, y);
	return ps;
}

/* A modeset in state (allow_modeset is set): crtc on with mode, driving
 * conn; with mode NULL crtc off and conn routed nowhere. Returns crtc's
 * state, to change further. */
static inline struct wla_crtc_state *test_route_crtc(struct wla_atomic_state *state,
	struct wla_crtc *crtc, struct wla_connector *conn, const struct wla_mode *mode)
{
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	struct wla_connector_state *conn_state =
		cs ? wla_atomic_get_connector_state(state, conn) : NULL;
	if (!conn_state || wla_atomic_set_crtc_for_connector(state, conn_state,
			mode ? crtc : NULL) != 0) {
		abort();
	}
	cs->enable = cs->active = mode != NULL;
	if (mode) {
		cs->mode = *mode;
	}
	state->allow_modeset = true;
	return cs;
}

/* A nonblocking commit; the state is freed if refused. */
static inline int test_commit_nonblocking(struct wla_atomic_state *state)
{
	int ret = wla_atomic_nonblocking_commit(state);
	if (ret < 0) {
		wla_atomic_state_free(state);
	}
	return ret;
}

/* A frame of fb on crtc's primary plane, through the flip queue. */
static inline int test_flip(struct wla_device *dev, struct wla_crtc *crtc, struct wla_fb *fb,
	uint64_t seq)
{
	struct wla_atomic_state *state = test_state(dev, crtc, seq, true);
	test_put(state, crtc, crtc->primary, fb, 0, 0);
	return test_commit_nonblocking(state);
}

#endif
