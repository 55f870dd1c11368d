/*
 * Committing an atomic state: prepare, the point of no return, swap, the
 * programming sequence, and completion at the latching vblank.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <wlr/util/log.h>
#include "backend/atomic.h"

int wla_atomic_prepare_planes(struct wla_atomic_state *state)
{
	assert(!state->swapped);
	wla_for_each_plane_in_state(state, e) {
		struct wla_plane_state *ps = e->new_state;
		int ret = wla_plane_state_prepare_fb(ps);
		if (ret < 0) {
			wlr_log(WLR_ERROR, "plane %s: prepare_fb failed: %s", e->ptr->name,
				strerror(-ret));
			wla_atomic_cleanup_planes(state);
			return ret;
		}
	}
	return 0;
}

void wla_atomic_cleanup_planes(struct wla_atomic_state *state)
{
	/* Before swap the state's own new planes (a failed commit), after swap
	 * the replaced ones (they left the screen). */
	wla_for_each_plane_in_state(state, e) {
		wla_plane_state_cleanup_fb(state->swapped ? e->old_state : e->new_state);
	}
}

void wla_atomic_swap_state(struct wla_atomic_state *state)
{
	assert(!state->swapped);
	wla_for_each_crtc_in_state(state, e) {
		e->ptr->state = e->new_state;
	}
	wla_for_each_plane_in_state(state, e) {
		e->ptr->state = e->new_state;
	}
	wla_for_each_connector_in_state(state, e) {
		e->ptr->state = e->new_state;
	}
	state->swapped = true;
}

static bool crtc_needs_modeset(const struct wla_crtc_state *s)
{
	return s->mode_changed || s->active_changed || s->connectors_changed;
}

void wla_atomic_commit_modeset_disables(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		const struct wla_crtc_state *old = e->old_state;
		const struct wla_crtc_state *new = e->ptr->state;
		if (old->active && (!new->active || crtc_needs_modeset(new)) &&
				e->ptr->funcs->atomic_disable) {
			e->ptr->funcs->atomic_disable(e->ptr, old);
		}
	}
}

void wla_atomic_commit_planes(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		if (e->ptr->state->active && e->ptr->funcs->atomic_begin) {
			e->ptr->funcs->atomic_begin(e->ptr, e->old_state);
		}
	}
	wla_for_each_plane_in_state(state, e) {
		struct wla_plane *plane = e->ptr;
		const struct wla_plane_state *ps = plane->state;
		struct wla_crtc *crtc = ps->crtc ? ps->crtc : e->old_state->crtc;
		/* Planes of CRTCs that are off were switched off with them. */
		if (!crtc || !crtc->state->active || !plane->funcs) {
			continue;
		}
		if (ps->crtc && ps->visible) {
			plane->funcs->atomic_update(plane, e->old_state);
		} else {
			plane->funcs->atomic_disable(plane, e->old_state);
		}
	}
	wla_for_each_crtc_in_state(state, e) {
		if (e->ptr->state->active && e->ptr->funcs->atomic_flush) {
			e->ptr->funcs->atomic_flush(e->ptr, e->old_state);
		}
	}
}

void wla_atomic_commit_modeset_enables(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		const struct wla_crtc_state *new = e->ptr->state;
		if (new->active && (!e->old_state->active || crtc_needs_modeset(new)) &&
				e->ptr->funcs->atomic_enable) {
			e->ptr->funcs->atomic_enable(e->ptr, e->old_state);
		}
	}
}

/* A frame takes the CRTC's one slot until it latches: a commit that wants
 * its present event. Cursor updates and commits that only change the
 * configuration latch with whatever comes next. */
static bool is_frame(const struct wla_atomic_state *state, const struct wla_crtc_state *cs)
{
	return cs->want_event && !state->legacy_cursor_update;
}

static void finish_entry(struct wla_crtc_entry *e, const struct wla_present *event)
{
	struct wla_atomic_state *state = e->state;
	struct wla_crtc *crtc = e->ptr;
	bool want_event = e->want_event;
	if (e->waiting) {
		wl_list_remove(&e->link);
		e->waiting = false;
		if (e->frame) {
			assert(crtc->pending_frames > 0);
			crtc->pending_frames--;
		}
	}
	assert(state->pending_crtcs > 0);
	if (--state->pending_crtcs == 0) {
		wla_atomic_cleanup_planes(state);
		wla_atomic_state_free(state);
	}
	/* Last: the handler may well commit the next frame from here. */
	if (want_event && crtc->present) {
		crtc->present(crtc, event, crtc->present_data);
	}
}

int wla_atomic_commit(struct wla_atomic_state *state)
{
	int ret = wla_atomic_check(state);
	if (ret < 0) {
		return ret;
	}
	wla_for_each_crtc_in_state(state, e) {
		if (is_frame(state, e->new_state) && e->ptr->pending_frames > 0 &&
				!crtc_needs_modeset(e->new_state)) {
			wlr_log(WLR_ERROR, "%s: a frame is already waiting to latch; commit "
				"refused (commit_seq %" PRIu64 ")", e->ptr->name,
				e->new_state->commit_seq);
			return -EBUSY;
		}
	}
	ret = wla_atomic_prepare_planes(state);
	if (ret < 0) {
		return ret;
	}

	/* Point of no return: from here the commit cannot fail. */
	wla_for_each_crtc_in_state(state, e) {
		e->commit_seq = e->new_state->commit_seq;
		e->want_event = e->new_state->want_event;
		e->frame = is_frame(state, e->new_state);
		state->pending_crtcs++;
	}
	wla_atomic_swap_state(state);
	wla_atomic_commit_modeset_disables(state);
	wla_atomic_commit_planes(state);
	wla_atomic_commit_modeset_enables(state);

	/* Collect the CRTCs that will latch at a vblank before completing the
	 * others, since completing the last one frees the state. */
	struct wla_crtc_entry *done[WLA_MAX_CRTCS];
	size_t n_done = 0;
	wla_for_each_crtc_in_state(state, e) {
		if (e->ptr->state->active) {
			wl_list_insert(e->ptr->pending.prev, &e->link);
			e->waiting = true;
			if (e->frame) {
				e->ptr->pending_frames++;
			}
		} else {
			done[n_done++] = e;
		}
	}
	if (state->pending_crtcs == 0) {
		/* No CRTC in the state (planes that stay off): nothing to wait for. */
		wla_atomic_cleanup_planes(state);
		wla_atomic_state_free(state);
		return 0;
	}
	for (size_t i = 0; i < n_done; i++) {
		struct wla_present event = { .commit_seq = done[i]->commit_seq };
		finish_entry(done[i], &event);
	}
	return 0;
}

/* Complete the commits waiting on crtc now, not those that the present
 * handlers commit while this runs (they wait for the next vblank). */
static void complete_waiting(struct wla_crtc *crtc, const struct wla_present *latch)
{
	struct wl_list batch;
	wl_list_init(&batch);
	wl_list_insert_list(&batch, &crtc->pending);
	wl_list_init(&crtc->pending);
	while (!wl_list_empty(&batch)) {
		struct wla_crtc_entry *e = wl_container_of(batch.next, e, link);
		struct wla_present event = *latch;
		event.commit_seq = e->commit_seq;
		finish_entry(e, &event);
	}
}

void wla_crtc_handle_vblank(struct wla_crtc *crtc, uint64_t seq, const struct timespec *when,
	uint64_t refresh_ns, uint32_t flags)
{
	/* Everything programmed before this vblank latched at it. */
	struct wla_present latch = {
		.presented = true,
		.seq = seq,
		.when = *when,
		.refresh_ns = refresh_ns,
		.flags = flags,
	};
	complete_waiting(crtc, &latch);
}

void wla_crtc_complete_commit(struct wla_crtc *crtc)
{
	struct wla_present latch = { .presented = false };
	complete_waiting(crtc, &latch);
}
