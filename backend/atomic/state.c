/*
 * Atomic states: collecting duplicated object states, routing setters.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include "backend/atomic.h"
#include "backend/log.h"

struct wla_atomic_state *wla_atomic_state_alloc(struct wla_device *dev)
{
	struct wla_atomic_state *state = calloc(1, sizeof(*state));
	if (!state) {
		wla_dev_log(dev, WLA_LOG_ERROR, "out of memory for an atomic state");
		return NULL;
	}
	state->dev = dev;
	dev->live_states++;
	wl_list_insert(&dev->states, &state->link);
	return state;
}

void wla_atomic_state_free(struct wla_atomic_state *state)
{
	if (!state) {
		return;
	}
	assert(state->pending_crtcs == 0 && state->pending_events == 0 && state->busy == 0);
	wla_for_each_crtc_in_state(state, e) {
		assert(e->stage == WLA_QUEUE_NONE && !e->event_queued);
		wla_crtc_state_destroy(state->swapped ? e->old_state : e->new_state);
		if (e->adopted) {
			wla_crtc_state_destroy(e->new_state);
		}
	}
	wla_for_each_plane_in_state(state, e) {
		wla_plane_state_destroy(state->swapped ? e->old_state : e->new_state);
		if (e->adopted) {
			wla_plane_state_cleanup_fb(e->new_state);
			wla_plane_state_destroy(e->new_state);
		}
	}
	wla_for_each_connector_in_state(state, e) {
		wla_connector_state_destroy(state->swapped ? e->old_state : e->new_state);
		if (e->adopted) {
			wla_connector_state_destroy(e->new_state);
		}
	}
	assert(state->dev->live_states > 0);
	state->dev->live_states--;
	wl_list_remove(&state->link);
	free(state);
}

struct wla_crtc_state *wla_atomic_get_crtc_state(struct wla_atomic_state *state,
	struct wla_crtc *crtc)
{
	assert(!state->swapped);
	struct wla_crtc_entry *e = &state->crtcs[crtc->index];
	if (e->ptr) {
		return e->new_state;
	}
	struct wla_crtc_state *copy = wla_crtc_state_duplicate(crtc->state);
	if (!copy) {
		wla_crtc_log(crtc, WLA_LOG_ERROR, "out of memory duplicating its state");
		return NULL;
	}
	e->ptr = crtc;
	e->old_state = crtc->state;
	e->swaps = crtc->swaps;
	e->new_state = copy;
	e->state = state;
	return copy;
}

struct wla_plane_state *wla_atomic_get_plane_state(struct wla_atomic_state *state,
	struct wla_plane *plane)
{
	assert(!state->swapped);
	struct wla_plane_entry *e = &state->planes[plane->index];
	if (e->ptr) {
		return e->new_state;
	}
	struct wla_plane_state *copy = wla_plane_state_duplicate(plane->state);
	if (!copy) {
		wla_plane_log(plane, WLA_LOG_ERROR, "out of memory duplicating its state");
		return NULL;
	}
	e->ptr = plane;
	e->old_state = plane->state;
	e->swaps = plane->swaps;
	e->new_state = copy;
	/* A plane change is a change of the CRTC it is on. */
	if (copy->crtc && !wla_atomic_get_crtc_state(state, copy->crtc)) {
		return NULL;
	}
	return copy;
}

struct wla_connector_state *wla_atomic_get_connector_state(struct wla_atomic_state *state,
	struct wla_connector *conn)
{
	assert(!state->swapped);
	struct wla_connector_entry *e = &state->connectors[conn->index];
	if (e->ptr) {
		return e->new_state;
	}
	struct wla_connector_state *copy = wla_connector_state_duplicate(conn->state);
	if (!copy) {
		wla_conn_log(conn, WLA_LOG_ERROR, "out of memory duplicating its state");
		return NULL;
	}
	e->ptr = conn;
	e->old_state = conn->state;
	e->swaps = conn->swaps;
	e->new_state = copy;
	if (copy->crtc && !wla_atomic_get_crtc_state(state, copy->crtc)) {
		return NULL;
	}
	return copy;
}

struct wla_crtc_state *wla_atomic_new_crtc_state(struct wla_atomic_state *state,
	struct wla_crtc *crtc)
{
	struct wla_crtc_entry *e = &state->crtcs[crtc->index];
	return e->ptr ? e->new_state : NULL;
}

struct wla_plane_state *wla_atomic_new_plane_state(struct wla_atomic_state *state,
	struct wla_plane *plane)
{
	struct wla_plane_entry *e = &state->planes[plane->index];
	return e->ptr ? e->new_state : NULL;
}

int wla_atomic_set_crtc_for_plane(struct wla_atomic_state *state,
	struct wla_plane_state *ps, struct wla_crtc *crtc)
{
	if (ps->crtc == crtc) {
		return 0;
	}
	uint32_t bit = 1u << ps->plane->index;
	if (ps->crtc) {
		struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, ps->crtc);
		if (!cs) {
			return -ENOMEM;
		}
		cs->plane_mask &= ~bit;
	}
	if (crtc) {
		struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
		if (!cs) {
			return -ENOMEM;
		}
		cs->plane_mask |= bit;
	}
	ps->crtc = crtc;
	return 0;
}

void wla_atomic_set_fb_for_plane(struct wla_plane_state *ps, struct wla_fb *fb)
{
	assert(!ps->prepared);
	if (fb) {
		wla_fb_get(fb);
	}
	wla_fb_put(ps->fb);
	ps->fb = fb;
}

int wla_atomic_set_crtc_for_connector(struct wla_atomic_state *state,
	struct wla_connector_state *cs, struct wla_crtc *crtc)
{
	if (cs->crtc == crtc) {
		return 0;
	}
	uint32_t bit = 1u << cs->connector->index;
	if (cs->crtc) {
		struct wla_crtc_state *crtc_state = wla_atomic_get_crtc_state(state, cs->crtc);
		if (!crtc_state) {
			return -ENOMEM;
		}
		crtc_state->connector_mask &= ~bit;
	}
	if (crtc) {
		struct wla_crtc_state *crtc_state = wla_atomic_get_crtc_state(state, crtc);
		if (!crtc_state) {
			return -ENOMEM;
		}
		crtc_state->connector_mask |= bit;
	}
	cs->crtc = crtc;
	return 0;
}

void wla_plane_state_set_full(struct wla_plane_state *ps, int32_t x, int32_t y)
{
	uint32_t w = ps->fb ? ps->fb->width : 0;
	uint32_t h = ps->fb ? ps->fb->height : 0;
	ps->src_x = ps->src_y = 0;
	ps->src_w = w << 16;
	ps->src_h = h << 16;
	ps->crtc_x = x;
	ps->crtc_y = y;
	ps->crtc_w = w;
	ps->crtc_h = h;
}
