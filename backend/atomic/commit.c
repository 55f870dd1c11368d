/*
 * Committing an atomic state: prepare, the point of no return, swap, the
 * programming sequence, the flip queue, and completion at the latching
 * vblank.
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
		if (state->legacy_cursor_update) {
			/* A cursor update changes nothing of its CRTC but which planes
			 * are on it: keep the current state, so that it never outlives
			 * or replaces the state of a frame still queued behind it. */
			e->ptr->state->plane_mask = e->new_state->plane_mask;
			continue;
		}
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

void wla_atomic_commit_modeset_disables(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		if (e->old_state->active && !e->ptr->state->active &&
				e->ptr->funcs->atomic_disable) {
			e->ptr->funcs->atomic_disable(e->ptr, e->old_state);
		}
	}
}

static enum wla_latch entry_latch(const struct wla_atomic_state *state,
	const struct wla_crtc_entry *e)
{
	if (!e->slot) {
		return WLA_LATCH_AMEND;
	}
	return e->replaces ? WLA_LATCH_REPLACE : WLA_LATCH_QUEUE;
}

void wla_atomic_commit_planes(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		if (e->ptr->state->active && e->ptr->funcs->atomic_begin) {
			e->ptr->funcs->atomic_begin(e->ptr, e->old_state, entry_latch(state, e));
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
			e->ptr->funcs->atomic_flush(e->ptr, e->old_state, entry_latch(state, e));
		}
	}
}

void wla_atomic_commit_modeset_enables(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		if (!e->old_state->active && e->ptr->state->active &&
				e->ptr->funcs->atomic_enable) {
			e->ptr->funcs->atomic_enable(e->ptr, e->old_state);
		}
	}
}

static void finish_entry(struct wla_crtc_entry *e, const struct wla_present *event)
{
	struct wla_atomic_state *state = e->state;
	struct wla_crtc *crtc = e->ptr;
	bool want_event = e->want_event;
	if (e->waiting) {
		wl_list_remove(&e->link);
		e->waiting = false;
		if (e->slot) {
			assert(crtc->pending_slots > 0);
			crtc->pending_slots--;
		}
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

/* The newest frame waiting on crtc, if a new frame may replace it: it is
 * the last slot in the queue and touches no other CRTC. */
static struct wla_crtc_entry *replaceable_frame(struct wla_crtc *crtc)
{
	struct wla_crtc_entry *e;
	wl_list_for_each_reverse(e, &crtc->pending, link) {
		if (!e->slot) {
			continue;
		}
		return e->frame && e->state->pending_crtcs == 1 ? e : NULL;
	}
	return NULL;
}

/* A cursor update latches before the frames queued on its CRTC, so it may not
 * touch a plane that one of them changes: that frame's plane state would be
 * replaced (and freed) before it ever reached the screen. */
static int check_amend(struct wla_atomic_state *state, struct wla_crtc *crtc)
{
	struct wla_crtc_entry *q;
	wl_list_for_each(q, &crtc->pending, link) {
		if (!q->slot) {
			continue;
		}
		wla_for_each_plane_in_state(state, pe) {
			if (q->state->planes[pe->ptr->index].ptr) {
				wlr_log(WLR_DEBUG, "plane %s: a queued frame (commit_seq %" PRIu64
					") changes it; the cursor update waits", pe->ptr->name,
					q->commit_seq);
				return -EBUSY;
			}
		}
	}
	return 0;
}

/* Which queue each CRTC entry goes to; refuses what the queue cannot take. */
static int plan_queue(struct wla_atomic_state *state, bool nonblock)
{
	/* Every CRTC: a cursor already off has none in the state, but a frame
	 * queued on its last CRTC may still hold its plane. */
	for (size_t i = 0; state->legacy_cursor_update && i < state->dev->n_crtcs; i++) {
		int ret = check_amend(state, state->dev->crtcs[i]);
		if (ret < 0) {
			return ret;
		}
	}
	wla_for_each_crtc_in_state(state, e) {
		struct wla_crtc *crtc = e->ptr;
		const struct wla_crtc_state *new = e->new_state;
		e->commit_seq = new->commit_seq;
		e->want_event = new->want_event;
		e->replaces = false;
		e->slot = new->active && !state->legacy_cursor_update;
		e->frame = e->slot && new->want_event;
		if (!e->slot) {
			continue;
		}
		if (!nonblock && crtc->pending_slots > 0) {
			wlr_log(WLR_ERROR, "%s: %u commit(s) still waiting to latch; blocking "
				"commit refused (commit_seq %" PRIu64 ")", crtc->name,
				crtc->pending_slots, e->commit_seq);
			return -EBUSY;
		}
		unsigned depth = crtc->queue_depth ? crtc->queue_depth : 1;
		if (e->frame && crtc->pending_frames >= depth) {
			if (crtc->mailbox && replaceable_frame(crtc)) {
				e->replaces = true;
				continue;
			}
			wlr_log(WLR_ERROR, "%s: flip queue full (%u of %u frames waiting); commit "
				"refused (commit_seq %" PRIu64 ")", crtc->name, crtc->pending_frames,
				depth, e->commit_seq);
			return -EBUSY;
		}
		if (crtc->pending_slots >= (crtc->max_slots ? crtc->max_slots : 1)) {
			wlr_log(WLR_ERROR, "%s: %u commits waiting to latch, the driver holds at "
				"most %u; commit refused (commit_seq %" PRIu64 ")", crtc->name,
				crtc->pending_slots, crtc->max_slots, e->commit_seq);
			return -EBUSY;
		}
	}
	return 0;
}

/*
 * The frame of victim never reaches the screen: replace_state (already
 * swapped) takes its place. Nothing but replace_state can have replaced
 * victim's new states since (cursor updates keep off queued frames' planes
 * and do not swap CRTC states): those replace_state replaced are destroyed
 * now, fbs cleaned up, and replace_state frees victim's old states in their
 * place when it latches; those still current replace_state adopts.
 */
static void discard_frame(struct wla_crtc_entry *victim, struct wla_atomic_state *replace_state)
{
	struct wla_atomic_state *v = victim->state;
	struct wla_present event = { .commit_seq = victim->commit_seq, .discarded = true };

	for (size_t i = 0; i < v->dev->n_planes; i++) {
		struct wla_plane_entry *pe = &v->planes[i], *r = &replace_state->planes[i];
		if (!pe->ptr) {
			continue;
		}
		if (r->ptr) {
			assert(r->old_state == pe->new_state);
			wla_plane_state_cleanup_fb(pe->new_state);
			wla_plane_state_destroy(pe->new_state);
			r->old_state = pe->old_state;
		} else {
			assert(pe->ptr->state == pe->new_state);
			*r = *pe;
		}
		pe->ptr = NULL;
	}
	for (size_t i = 0; i < v->dev->n_connectors; i++) {
		struct wla_connector_entry *ce = &v->connectors[i];
		struct wla_connector_entry *r = &replace_state->connectors[i];
		if (!ce->ptr) {
			continue;
		}
		if (r->ptr) {
			assert(r->old_state == ce->new_state);
			wla_connector_state_destroy(ce->new_state);
			r->old_state = ce->old_state;
		} else {
			assert(ce->ptr->state == ce->new_state);
			*r = *ce;
		}
		ce->ptr = NULL;
	}
	/* replace_state is a frame on the same CRTC, so it has the CRTC. */
	struct wla_crtc_entry *re = &replace_state->crtcs[victim->ptr->index];
	assert(re->ptr && re->old_state == victim->new_state);
	wla_crtc_state_destroy(victim->new_state);
	re->old_state = victim->old_state;
	victim->old_state = NULL;
	victim->new_state = NULL;
	/* Now empty but for its CRTC entry, whose states moved on: free it
	 * like any completed commit. */
	finish_entry(victim, &event);
}

static int commit_common(struct wla_atomic_state *state, bool nonblock)
{
	int ret = wla_atomic_check(state);
	if (ret == 0) {
		ret = plan_queue(state, nonblock);
	}
	if (ret == 0) {
		ret = wla_atomic_prepare_planes(state);
	}
	if (ret < 0) {
		return ret;
	}

	/* Point of no return: from here the commit cannot fail. */
	struct wla_crtc_entry *victims[WLA_MAX_CRTCS];
	wla_for_each_crtc_in_state(state, e) {
		victims[e->ptr->index] = e->replaces ? replaceable_frame(e->ptr) : NULL;
		state->pending_crtcs++;
	}
	wla_atomic_swap_state(state);
	wla_atomic_commit_modeset_disables(state);
	wla_atomic_commit_modeset_enables(state);
	wla_atomic_commit_planes(state);

	wla_for_each_crtc_in_state(state, e) {
		if (victims[e->ptr->index]) {
			discard_frame(victims[e->ptr->index], state);
		}
	}

	/* Queue the CRTCs that latch at a vblank before completing the others,
	 * since completing the last one frees the state. */
	struct wla_crtc_entry *done[WLA_MAX_CRTCS];
	size_t n_done = 0;
	wla_for_each_crtc_in_state(state, e) {
		if (e->ptr->state->active) {
			wl_list_insert(e->ptr->pending.prev, &e->link);
			e->waiting = true;
			e->ptr->pending_slots += e->slot;
			e->ptr->pending_frames += e->frame;
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

int wla_atomic_commit(struct wla_atomic_state *state)
{
	return commit_common(state, false);
}

int wla_atomic_nonblocking_commit(struct wla_atomic_state *state)
{
	return commit_common(state, true);
}

/* Complete the entries moved to list, in order. Handlers may commit (new
 * entries go to crtc->pending) or disable the CRTC (which completes what is
 * left in crtc->pending, not this list). */
static void complete_list(struct wl_list *list, const struct wla_present *latch)
{
	while (!wl_list_empty(list)) {
		struct wla_crtc_entry *e = wl_container_of(list->next, e, link);
		struct wla_present event = *latch;
		event.commit_seq = e->commit_seq;
		finish_entry(e, &event);
	}
}

void wla_crtc_handle_vblank(struct wla_crtc *crtc, bool latched_slot, uint64_t seq,
	const struct timespec *when, uint64_t refresh_ns, uint32_t flags)
{
	/* The oldest slot (if it latched) and every amendment. */
	struct wl_list batch;
	wl_list_init(&batch);
	bool slot_done = !latched_slot;
	struct wla_crtc_entry *e, *tmp;
	wl_list_for_each_safe(e, tmp, &crtc->pending, link) {
		if (e->slot && slot_done) {
			continue;
		}
		slot_done |= e->slot;
		wl_list_remove(&e->link);
		wl_list_insert(batch.prev, &e->link);
	}
	struct wla_present latch = {
		.presented = true,
		.seq = seq,
		.when = *when,
		.refresh_ns = refresh_ns,
		.flags = flags,
	};
	complete_list(&batch, &latch);
}

void wla_crtc_complete_commit(struct wla_crtc *crtc)
{
	struct wl_list list;
	wl_list_init(&list);
	wl_list_insert_list(&list, &crtc->pending);
	wl_list_init(&crtc->pending);
	struct wla_present latch = { .presented = false };
	complete_list(&list, &latch);
}
