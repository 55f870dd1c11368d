/*
 * Committing an atomic state: prepare, the point of no return, swap, the one
 * flip queue per CRTC, handing states to the driver (commit_tail), and
 * completion when the driver reports the latch.
 *
 * The queue of a CRTC holds, oldest first, the committed states that latch
 * on it: first those the driver was handed (armed, at most max_slots), then
 * those waiting for a free slot. Only the core changes it. Every completion
 * queues its present event; events are delivered once the books are
 * consistent (wla_device_deliver_events), so a handler may commit again.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include "backend/atomic.h"
#include "backend/log.h"
#include "util.h"

/* Entries a CRTC's queue may hold, frames or not: far beyond any depth. */
#define WLA_QUEUE_MAX 16

static int prepare_planes(struct wla_atomic_state *state)
{
	wla_for_each_plane_in_state(state, e) {
		int ret = wla_plane_state_prepare_fb(state->dev, e->new_state);
		if (ret < 0) {
			wla_plane_log(e->ptr, WLA_LOG_ERROR, "prepare_fb failed: %s",
				strerror(-ret));
			wla_for_each_plane_in_state(state, c) {
				wla_plane_state_cleanup_fb(c->new_state);
			}
			return ret;
		}
	}
	return 0;
}

static void swap_state(struct wla_atomic_state *state)
{
	assert(!state->swapped);
	wla_for_each_crtc_in_state(state, e) {
		e->ptr->state = e->new_state;
		e->ptr->commit = state;
		e->ptr->swaps++;
	}
	wla_for_each_plane_in_state(state, e) {
		e->ptr->state = e->new_state;
		e->ptr->commit = state;
		e->ptr->swaps++;
	}
	wla_for_each_connector_in_state(state, e) {
		e->ptr->state = e->new_state;
		e->ptr->commit = state;
		e->ptr->swaps++;
	}
	state->swapped = true;
}

static void maybe_free(struct wla_atomic_state *state)
{
	if (state->pending_crtcs == 0 && state->pending_events == 0 && state->busy == 0) {
		wla_atomic_state_free(state);
	}
}

/*
 * The driver may read the object states of a state it was handed until that
 * state latched on every CRTC. A completed state whose old object state is
 * the new one of a state that has not (a CRTC the other state latched on
 * first, a plane off in both, a connector: the two were not ordered on a
 * CRTC) hands it over: that state frees it, fb and all, when it is freed
 * itself. With a state over several CRTCs this keeps the fb locked until the
 * last of them latched.
 */
enum object_kind { KIND_CRTC, KIND_PLANE, KIND_CONNECTOR };

static bool *new_state_owned_by(struct wla_atomic_state *other, const void *object_state,
	enum object_kind kind, unsigned index)
{
	switch (kind) {
	case KIND_CRTC:
		return other->crtcs[index].new_state == object_state ?
			&other->crtcs[index].adopted : NULL;
	case KIND_PLANE:
		return other->planes[index].new_state == object_state ?
			&other->planes[index].adopted : NULL;
	case KIND_CONNECTOR:
		return other->connectors[index].new_state == object_state ?
			&other->connectors[index].adopted : NULL;
	}
	return NULL;
}

/* Hand object_state over to the state still pending that holds it as its
 * new one; whether there was one. */
static bool hand_over(struct wla_atomic_state *state, const void *object_state,
	enum object_kind kind, unsigned index)
{
	if (!object_state) {
		return false;
	}
	struct wla_atomic_state *other;
	wl_list_for_each(other, &state->dev->states, link) {
		if (other == state || !other->swapped || other->pending_crtcs == 0) {
			continue;
		}
		bool *adopted = new_state_owned_by(other, object_state, kind, index);
		if (adopted) {
			assert(!*adopted);
			*adopted = true;
			return true;
		}
	}
	return false;
}

static void adopt_replaced_states(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		if (hand_over(state, e->old_state, KIND_CRTC, e->ptr->index)) {
			e->old_state = NULL;
		}
	}
	wla_for_each_plane_in_state(state, e) {
		if (hand_over(state, e->old_state, KIND_PLANE, e->ptr->index)) {
			e->old_state = NULL;
		}
	}
	wla_for_each_connector_in_state(state, e) {
		if (hand_over(state, e->old_state, KIND_CONNECTOR, e->ptr->index)) {
			e->old_state = NULL;
		}
	}
}

/* Every CRTC of the state completed: what it replaced has left the screen. */
static void state_completed(struct wla_atomic_state *state)
{
	adopt_replaced_states(state);
	wla_for_each_crtc_in_state(state, e) {
		if (e->ptr->commit == state) {
			e->ptr->commit = NULL;
		}
	}
	wla_for_each_plane_in_state(state, e) {
		if (e->ptr->commit == state) {
			e->ptr->commit = NULL;
		}
		wla_plane_state_cleanup_fb(e->old_state);
	}
	wla_for_each_connector_in_state(state, e) {
		if (e->ptr->commit == state) {
			e->ptr->commit = NULL;
		}
	}
}

static void dequeue(struct wla_crtc_entry *e)
{
	struct wla_crtc *crtc = e->ptr;
	if (e->stage == WLA_QUEUE_NONE) {
		return;
	}
	wl_list_remove(&e->link);
	assert(crtc->queued > 0);
	crtc->queued--;
	if (e->stage == WLA_QUEUE_ARMED) {
		assert(crtc->armed > 0);
		crtc->armed--;
	} else if (e->frame) {
		assert(crtc->waiting_frames > 0);
		crtc->waiting_frames--;
	}
	if (e->frame) {
		assert(crtc->pending_frames > 0);
		crtc->pending_frames--;
	}
	e->stage = WLA_QUEUE_NONE;
	crtc->idle_pending |= crtc->queued == 0;
}

/* Complete one CRTC entry: off the queue, its event queued, and the state
 * cleaned up and freed once nothing waits for it. */
static void complete_entry(struct wla_crtc_entry *e, const struct wla_present *event)
{
	struct wla_atomic_state *state = e->state;
	assert(!e->done);
	dequeue(e);
	e->done = true;
	if (e->want_event) {
		e->event = *event;
		e->event.commit_seq = e->commit_seq;
		wl_list_insert(state->dev->events.prev, &e->event_link);
		e->event_queued = true;
		state->pending_events++;
	}
	assert(state->pending_crtcs > 0);
	if (--state->pending_crtcs == 0) {
		state_completed(state);
	}
	maybe_free(state);
}

void wla_crtc_drop_events(struct wla_crtc *crtc)
{
	struct wla_device *dev = crtc->dev;
	struct wla_crtc_entry *e, *tmp;
	wl_list_for_each_safe(e, tmp, &dev->events, event_link) {
		if (e->ptr != crtc) {
			continue;
		}
		wl_list_remove(&e->event_link);
		e->event_queued = false;
		e->state->pending_events--;
		maybe_free(e->state);
	}
}

bool wla_crtc_has_events(const struct wla_crtc *crtc)
{
	const struct wla_crtc_entry *e;
	wl_list_for_each(e, &crtc->dev->events, event_link) {
		if (e->ptr == crtc) {
			return true;
		}
	}
	return false;
}

void wla_device_deliver_events(struct wla_device *dev)
{
	/* A handler's commit delivers nothing itself: this loop goes on with
	 * whatever it queued, in order. */
	if (dev->delivering) {
		return;
	}
	/* A callback may end the device (a listener destroying the backend):
	 * it waits for the release. The caller holds it too if it goes on
	 * with the device after this returns. */
	wla_device_hold(dev);
	dev->delivering = true;
	do {
		while (!wl_list_empty(&dev->events)) {
			struct wla_crtc_entry *e =
				wl_container_of(dev->events.next, e, event_link);
			wl_list_remove(&e->event_link);
			e->event_queued = false;
			struct wla_present event = e->event;
			struct wla_crtc *crtc = e->ptr;
			struct wla_atomic_state *state = e->state;
			state->pending_events--;
			maybe_free(state);
			if (crtc->present) {
				crtc->present(crtc, &event, crtc->present_data);
			}
		}
		/* Queues that drained. A handler's commit that drains at once
		 * is told at the next delivery. */
		for (size_t i = 0; i < dev->n_crtcs; i++) {
			struct wla_crtc *crtc = dev->crtcs[i];
			if (!crtc || !crtc->idle_pending) {
				continue;
			}
			crtc->idle_pending = false;
			if (crtc->idle && crtc->queued == 0) {
				crtc->idle(crtc, crtc->present_data);
			}
		}
		/* The driver's own callbacks (failed captures), as late. */
		if (dev->funcs->deliver) {
			dev->funcs->deliver(dev);
		}
	} while (!wl_list_empty(&dev->events));
	dev->delivering = false;
	wla_device_release(dev);
}

static unsigned crtcs_in_state(struct wla_atomic_state *state)
{
	unsigned n = 0;
	wla_for_each_crtc_in_state(state, e) {
		n++;
	}
	return n;
}

static unsigned latching_crtcs(struct wla_atomic_state *state)
{
	unsigned n = 0;
	wla_for_each_crtc_in_state(state, e) {
		n += e->new_state->active;
	}
	return n;
}

/* The frame a mailbox commit on crtc may replace: the newest entry, not yet
 * handed to the driver, a frame, and of a state that touched no other CRTC
 * (its other CRTCs would lose their part). */
static struct wla_crtc_entry *replaceable_frame(struct wla_crtc *crtc)
{
	if (wl_list_empty(&crtc->queue)) {
		return NULL;
	}
	struct wla_crtc_entry *e = wl_container_of(crtc->queue.prev, e, link);
	if (e->stage != WLA_QUEUE_WAITING || !e->frame || crtcs_in_state(e->state) != 1) {
		return NULL;
	}
	return e;
}

/*
 * A plane or connector whose current state was swapped in by a state still
 * waiting for the driver: this state replaces (and once it completes frees)
 * that state's new object state, which the driver has yet to read, so it
 * must come after it. Put it on the queues of that state's CRTCs. (An owner
 * the driver holds armed keeps what this state replaces alive itself:
 * adopt_replaced_states.)
 */
static int add_ordering_crtcs(struct wla_atomic_state *state)
{
	struct wla_atomic_state *owners[WLA_MAX_PLANES + WLA_MAX_CONNECTORS];
	size_t n = 0;
	wla_for_each_plane_in_state(state, e) {
		if (e->ptr->commit) {
			owners[n++] = e->ptr->commit;
		}
	}
	wla_for_each_connector_in_state(state, e) {
		if (e->ptr->commit) {
			owners[n++] = e->ptr->commit;
		}
	}
	for (size_t i = 0; i < n; i++) {
		bool waiting = false;
		wla_for_each_crtc_in_state(owners[i], c) {
			waiting |= c->stage == WLA_QUEUE_WAITING;
		}
		if (!waiting) {
			continue;
		}
		wla_for_each_crtc_in_state(owners[i], c) {
			if (c->done || c->stage == WLA_QUEUE_NONE) {
				continue;
			}
			if (!wla_atomic_get_crtc_state(state, c->ptr)) {
				return -ENOMEM;
			}
		}
	}
	return 0;
}

/* Whether the queue can take the state, filling in its entries' roles and
 * the frames it replaces. Changes nothing else. */
static int plan_queue(struct wla_atomic_state *state, bool nonblock,
	struct wla_crtc_entry *victims[static WLA_MAX_CRTCS])
{
	const char *disabled = NULL;
	const char *waits = NULL;
	unsigned latching = latching_crtcs(state);
	wla_for_each_crtc_in_state(state, e) {
		struct wla_crtc *crtc = e->ptr;
		const struct wla_crtc_state *new = e->new_state;
		victims[crtc->index] = NULL;
		e->commit_seq = new->commit_seq;
		e->want_event = new->want_event;
		e->latch = new->active;
		e->frame = e->latch && new->want_event;
		if (!e->latch) {
			if (e->old_state->active) {
				disabled = crtc->name;
			}
			continue;
		}
		if (crtc->queued > 0 && !nonblock) {
			wla_crtc_log(crtc, WLA_LOG_ERROR,
				"%u state(s) still waiting to latch; blocking commit "
				"refused (commit_seq %" PRIu64 ")", crtc->queued,
				e->commit_seq);
			return -EBUSY;
		}
		if (crtc->queued > 0 && latching > 1) {
			wla_crtc_log(crtc, WLA_LOG_ERROR,
				"%u state(s) queued; a commit that latches on %u "
				"CRTCs waits for all of them to be idle (commit_seq %" PRIu64 ")",
				crtc->queued, latching, e->commit_seq);
			return -EBUSY;
		}
		if (crtc->queued >= WLA_QUEUE_MAX) {
			wla_crtc_log(crtc, WLA_LOG_ERROR, "%u states queued, at most %d; commit refused "
				"(commit_seq %" PRIu64 ")", crtc->queued, WLA_QUEUE_MAX,
				e->commit_seq);
			return -EBUSY;
		}
		unsigned depth = wla_crtc_queue_depth(crtc);
		bool fits = !e->frame || wla_crtc_frame_fits(crtc);
		if (!fits && crtc->mailbox) {
			victims[crtc->index] = replaceable_frame(crtc);
			if (!victims[crtc->index]) {
				wla_crtc_log(crtc, WLA_LOG_ERROR,
					"%u frame(s) waiting and none the mailbox may "
					"replace; commit refused (commit_seq %" PRIu64 ")",
					crtc->waiting_frames, e->commit_seq);
				return -EBUSY;
			}
		} else if (!fits && !(crtc->pending_frames == depth && (new->mode_changed ||
					new->active_changed || new->connectors_changed))) {
			/* A modeset is not refused for a full queue: as a kernel
			 * modeset waits for the flips in flight, it waits behind the
			 * queue and latches after it. One past the depth, no more. */
			wla_crtc_log(crtc, WLA_LOG_ERROR,
				"flip queue full (%u of %u frames waiting); commit "
				"refused (commit_seq %" PRIu64 ")", crtc->pending_frames,
				depth, e->commit_seq);
			return -EBUSY;
		}
		if (crtc->queued > 0) {
			waits = crtc->name;
		}
	}
	if (disabled && waits) {
		/* The CRTC turned off cannot wait for the other's queue, and the
		 * state cannot reach the hardware in two parts. */
		wla_log(WLA_LOG_ERROR, "%s: turning it off in a commit that waits behind the queue "
			"of %s; commit them apart", disabled, waits);
		return -EBUSY;
	}
	return 0;
}

/*
 * The frame of victim never reaches the screen: replace (already swapped)
 * takes its place. Every object state victim swapped in is still current or
 * was replaced by replace alone (a later state touching them would be queued
 * behind victim, which is the newest): those replace replaced are destroyed
 * now, fbs cleaned up, and replace frees victim's old states in their place
 * when it completes; those still current replace adopts. The CRTC state's
 * computed changes are merged, so that the driver sees the mode change it
 * now carries.
 */
static void discard_frame(struct wla_crtc_entry *victim, struct wla_atomic_state *replace)
{
	struct wla_atomic_state *v = victim->state;
	for (size_t i = 0; i < v->dev->n_planes; i++) {
		struct wla_plane_entry *pe = &v->planes[i], *r = &replace->planes[i];
		if (!pe->ptr) {
			continue;
		}
		if (r->ptr) {
			assert(r->old_state == pe->new_state);
			/* What changed since the screen's frame is both frames'
			 * changes. */
			wla_plane_state_merge_damage(r->new_state, pe->new_state);
			wla_plane_state_cleanup_fb(pe->new_state);
			wla_plane_state_destroy(pe->new_state);
			r->old_state = pe->old_state;
		} else {
			assert(pe->ptr->state == pe->new_state);
			*r = *pe;
			pe->ptr->commit = replace;
		}
		pe->ptr = NULL;
	}
	for (size_t i = 0; i < v->dev->n_connectors; i++) {
		struct wla_connector_entry *ce = &v->connectors[i];
		struct wla_connector_entry *r = &replace->connectors[i];
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
			ce->ptr->commit = replace;
		}
		ce->ptr = NULL;
	}
	struct wla_crtc_entry *re = &replace->crtcs[victim->ptr->index];
	assert(re->ptr && re->old_state == victim->new_state);
	struct wla_crtc_state *old = victim->old_state, *new = re->new_state;
	new->mode_changed = old->enable != new->enable ||
		(new->enable && !wla_mode_equal(&old->mode, &new->mode));
	new->active_changed = old->active != new->active;
	new->gamma_changed = !wla_gamma_lut_equal(old->gamma, new->gamma);
	new->connectors_changed |= victim->new_state->connectors_changed;
	/* The victim's modeset is the replacement's now; commit_common gave
	 * it the leave before its check (KMS: ALLOW_MODESET). */
	assert(!(new->mode_changed || new->active_changed || new->connectors_changed) ||
		replace->allow_modeset);
	new->planes_changed |= victim->new_state->planes_changed;
	wla_crtc_state_destroy(victim->new_state);
	re->old_state = old;
	victim->old_state = NULL;
	victim->new_state = NULL;
	struct wla_present event = { .discarded = true };
	complete_entry(victim, &event);
}

/* Whether the driver may write a state over what it holds armed on crtc:
 * only non-frames, and only while the result still latches with them. */
static bool can_rearm(struct wla_crtc *crtc)
{
	if (!crtc->rearm || crtc->pending_frames != crtc->waiting_frames) {
		return false;
	}
	struct wla_device *dev = crtc->dev;
	uint64_t latch;
	if (!dev->funcs->now || !wla_crtc_armed_latch(crtc, &latch)) {
		return true;
	}
	return dev->funcs->now(dev) + dev->latch_slack_ns <= latch;
}

/* Whether the state's waiting entries can all go to the driver now. */
static bool state_ready(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		if (e->stage != WLA_QUEUE_WAITING) {
			continue;
		}
		struct wla_crtc *crtc = e->ptr;
		if (crtc->stopping) {
			return false;
		}
		struct wla_crtc_entry *first = NULL, *q;
		wl_list_for_each(q, &crtc->queue, link) {
			if (q->stage == WLA_QUEUE_WAITING) {
				first = q;
				break;
			}
		}
		if (first != e) {
			return false;
		}
		if (crtc->armed >= crtc->max_slots && !can_rearm(crtc)) {
			/* The slots are taken, and not by non-frames the driver
			 * may still write over in time. */
			return false;
		}
	}
	return true;
}

static void cancel_queue(struct wla_crtc *crtc, struct wla_atomic_state *failed);
static void force_off(struct wla_crtc *crtc, struct wla_atomic_state *failed);

/*
 * Where a frame just armed starts missing vblanks: handed over at a latch
 * it was committed before, the vblank after that latch, or that latch's
 * own vblank if only non-frames latched there (it came too late to be
 * written over them); else the first vblank after its commit.
 */
static void note_first_seq(struct wla_crtc_entry *e)
{
	struct wla_crtc *crtc = e->ptr;
	struct wla_device *dev = crtc->dev;
	uint64_t commit_ns = e->state->commit_ns, seq, ns;
	e->counts_missed = false;
	const struct wla_crtc_state *cs = e->new_state;
	if (dev->modeset_untimed && (cs->mode_changed || cs->active_changed)) {
		return;
	}
	if (dev->inactive) {
		/* Held until the session is back: no vblank of the time away
		 * is one it missed. */
		return;
	}
	if (crtc->in_latch && commit_ns < crtc->last_latch_ns) {
		/* Without rearm nothing is written over a state in flight: a
		 * frame behind non-frames misses nothing there either. */
		bool behind_frame = crtc->last_latch_frame || !crtc->rearm;
		e->first_seq = crtc->last_latch_seq + (behind_frame ? 1 : 0);
		e->counts_missed = true;
	} else if (dev->funcs->vblank_at &&
			dev->funcs->vblank_at(dev, crtc, commit_ns + 1, &seq, &ns)) {
		e->first_seq = seq;
		e->counts_missed = true;
	}
}

/* Before crtc is turned off, while its grid is known: the vblanks its armed
 * frames missed so far are counted for good (they will never latch). */
static void settle_missed(struct wla_crtc *crtc)
{
	struct wla_device *dev = crtc->dev;
	uint64_t seq, ns;
	if (!dev->funcs->now || !dev->funcs->vblank_at ||
			!dev->funcs->vblank_at(dev, crtc, dev->funcs->now(dev) + 1, &seq, &ns)) {
		return;
	}
	/* seq is the first vblank still to come: the one before it passed. */
	if (seq > 0) {
		crtc->missed = wla_crtc_missed(crtc, seq - 1);
	}
	struct wla_crtc_entry *e;
	wl_list_for_each(e, &crtc->queue, link) {
		e->counts_missed = false;
	}
}

void wla_device_set_inactive(struct wla_device *dev, bool inactive)
{
	if (inactive && !dev->inactive) {
		for (size_t c = 0; c < dev->n_crtcs; c++) {
			struct wla_crtc *crtc = dev->crtcs[c];
			if (!crtc || !crtc->state || !crtc->state->active) {
				continue;
			}
			/* Up to the driver's settled vblank where it says: a flip
			 * that latched at the last vblank, its event unread,
			 * missed nothing. (A flip late past that, its event not
			 * come, is then not counted: a miss less, not one
			 * invented.) */
			struct wla_vblank_counters counters;
			if (dev->funcs->vblank_counters &&
					dev->funcs->vblank_counters(dev, crtc, &counters)) {
				crtc->missed = wla_crtc_missed(crtc, counters.settled_seq);
				struct wla_crtc_entry *e;
				wl_list_for_each(e, &crtc->queue, link) {
					e->counts_missed = false;
				}
			} else {
				settle_missed(crtc);
			}
		}
	}
	dev->inactive = inactive;
}

/* Hand the state to the driver. A failure turns its CRTCs off. */
static void program_state(struct wla_atomic_state *state)
{
	struct wla_device *dev = state->dev;
	bool any = false;
	wla_for_each_crtc_in_state(state, e) {
		e->program = !e->done && (e->stage == WLA_QUEUE_WAITING || !e->latch);
		if (e->stage == WLA_QUEUE_WAITING) {
			e->stage = WLA_QUEUE_ARMED;
			e->ptr->armed++;
			if (e->frame) {
				e->ptr->waiting_frames--;
			}
		}
		any |= e->program;
	}
	int ret = any ? dev->funcs->commit_tail(dev, state) : 0;
	wla_for_each_crtc_in_state(state, e) {
		/* After commit_tail: an enable starts the driver's grid. */
		if (ret == 0 && e->program && e->frame && e->stage == WLA_QUEUE_ARMED) {
			note_first_seq(e);
		}
		e->program = false;
	}
	if (ret == 0) {
		return;
	}
	/* Nothing of it reached the hardware: CRTCs it was to turn off still
	 * scan out, the others wait for a state that never comes. Turn them
	 * all off for real (that cannot fail) before their queues go. */
	state->busy++;
	wla_for_each_crtc_in_state(state, e) {
		if ((e->latch && !e->done) || (!e->latch && e->old_state->active)) {
			wla_crtc_log(e->ptr, WLA_LOG_ERROR,
				"the driver could not program commit_seq %" PRIu64
				": %s; the crtc is off", e->commit_seq, strerror(-ret));
			force_off(e->ptr, state);
		}
	}
	state->busy--;
	maybe_free(state);
}

/* The oldest waiting state on crtc, to the driver if it can take it. */
static void try_program(struct wla_crtc *crtc)
{
	struct wla_crtc_entry *e;
	wl_list_for_each(e, &crtc->queue, link) {
		if (e->stage != WLA_QUEUE_WAITING) {
			continue;
		}
		if (state_ready(e->state)) {
			program_state(e->state);
		}
		return;
	}
}

/* The point of no return and everything after it. */
/* Which of the state's CRTCs it gives a client's own buffer (wla_fb.client),
 * on the primary plane or on any: what their present events say, worked
 * out now, while the state's plane states are sure to exist. */
static void note_client_buffers(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		e->client_primary = e->client_plane = false;
	}
	wla_for_each_plane_in_state(state, pe) {
		const struct wla_plane_state *ps = pe->new_state;
		if (!ps->crtc || !ps->fb || !ps->fb->client) {
			continue;
		}
		struct wla_crtc_entry *e = &state->crtcs[ps->crtc->index];
		if (e->ptr) {
			e->client_plane = true;
			e->client_primary |= pe->ptr == e->ptr->primary;
		}
	}
}

static void commit_swapped(struct wla_atomic_state *state,
	struct wla_crtc_entry **victims, struct wla_atomic_state *failed)
{
	struct wla_device *dev = state->dev;
	note_client_buffers(state);
	state->committed = true;
	state->busy++;
	state->commit_ns = dev->funcs->now ? dev->funcs->now(dev) : 0;
	swap_state(state);
	wla_for_each_crtc_in_state(state, e) {
		state->pending_crtcs++;
		if (victims && victims[e->ptr->index]) {
			discard_frame(victims[e->ptr->index], state);
		}
	}
	wla_for_each_crtc_in_state(state, e) {
		struct wla_crtc *crtc = e->ptr;
		if (!e->latch) {
			continue;
		}
		wl_list_insert(crtc->queue.prev, &e->link);
		e->stage = WLA_QUEUE_WAITING;
		crtc->queued++;
		crtc->pending_frames += e->frame;
		crtc->waiting_frames += e->frame;
	}
	wla_for_each_crtc_in_state(state, e) {
		if (!e->latch && e->old_state->active) {
			settle_missed(e->ptr);
		}
	}
	if (state_ready(state)) {
		program_state(state);
	}
	/* CRTCs that are off now: the driver has stopped them, so what was
	 * queued on them can go, and so can this state's part there. */
	wla_for_each_crtc_in_state(state, e) {
		if (e->latch || e->done) {
			continue;
		}
		if (e->old_state->active) {
			cancel_queue(e->ptr, failed);
		}
		struct wla_present event = { .presented = false };
		complete_entry(e, &event);
	}
	if (crtcs_in_state(state) == 0) {
		/* Planes that stay off and belong to no commit in flight:
		 * nothing to wait for. */
		state_completed(state);
	}
	state->busy--;
	maybe_free(state);
}

/* Whether replacing victim with the state's new CRTC state is a modeset
 * for the hardware, which still holds what came before victim. */
static bool replacement_is_modeset(const struct wla_crtc_entry *victim,
	const struct wla_crtc_state *new)
{
	const struct wla_crtc_state *old = victim->old_state;
	return old->enable != new->enable ||
		(new->enable && !wla_mode_equal(&old->mode, &new->mode)) ||
		old->active != new->active || new->connectors_changed ||
		victim->new_state->connectors_changed;
}

/* A state replacing a queued frame carries that frame's modeset, and with
 * it its leave to change modes: give it the leave before the driver checks
 * it (KMS: a TEST_ONLY without ALLOW_MODESET fails). Whether it did. */
static bool adopt_victims_leave(struct wla_atomic_state *state,
	struct wla_crtc_entry *victims[static WLA_MAX_CRTCS])
{
	if (state->allow_modeset) {
		return false;
	}
	wla_for_each_crtc_in_state(state, e) {
		struct wla_crtc_entry *v = victims[e->ptr->index];
		if (v && v->state->allow_modeset && replacement_is_modeset(v, e->new_state)) {
			state->allow_modeset = true;
			return true;
		}
	}
	return false;
}

/* Latches the driver has not reported yet, reported now. */
static void sync_latches(struct wla_device *dev)
{
	if (dev->funcs->sync) {
		dev->funcs->sync(dev);
	}
}

bool wla_atomic_state_is_stale(struct wla_atomic_state *state)
{
	const char *name = NULL;
	uint64_t now = 0, took = 0;
#define STALE(e) \
	if ((e)->swaps != (e)->ptr->swaps) { \
		name = (e)->ptr->name; \
		now = (e)->ptr->swaps; \
		took = (e)->swaps; \
	}
	wla_for_each_crtc_in_state(state, e) {
		STALE(e)
	}
	wla_for_each_plane_in_state(state, e) {
		STALE(e)
	}
	wla_for_each_connector_in_state(state, e) {
		STALE(e)
	}
#undef STALE
	if (name) {
		wla_dev_log(state->dev, state->quiet ? WLA_LOG_DEBUG : WLA_LOG_ERROR,
			"%s: swaps %" PRIu64 ", the atomic state took its state at %"
			PRIu64 "; refused, build it again", name, now, took);
	}
	return name != NULL;
}

bool wla_atomic_state_sync_latches(struct wla_atomic_state *state)
{
	/* A state turning a CRTC off cancels what is queued there: what
	 * already latched must be reported as such first. */
	wla_for_each_crtc_in_state(state, e) {
		if (e->old_state->active && !e->new_state->active) {
			sync_latches(state->dev);
			return true;
		}
	}
	return false;
}

static int commit_common(struct wla_atomic_state *state, bool nonblock)
{
	assert(!state->committed && !state->swapped);
	if (state->removed[0]) {
		wla_dev_log(state->dev, WLA_LOG_ERROR, "%s was removed after an atomic state named it; "
			"commit refused", state->removed);
		return -ENODEV;
	}
	if (wla_atomic_state_is_stale(state)) {
		return -EAGAIN;
	}
	struct wla_crtc_entry *victims[WLA_MAX_CRTCS];
	bool synced = wla_atomic_state_sync_latches(state);
	/* What the sync handed to the driver may have failed, and turned a
	 * CRTC off under this state. */
	int ret = synced && wla_atomic_state_is_stale(state) ? -EAGAIN : 0;
	if (ret == 0) {
		ret = add_ordering_crtcs(state);
	}
	if (ret == 0) {
		ret = wla_atomic_check(state);
	}
	if (ret == 0) {
		ret = plan_queue(state, nonblock, victims);
	}
	if (ret == 0 && adopt_victims_leave(state, victims)) {
		/* Checked again as what it now is; the queue is unchanged. */
		ret = wla_atomic_check(state);
		if (ret == 0) {
			ret = plan_queue(state, nonblock, victims);
		}
		if (ret < 0) {
			state->allow_modeset = false;
		}
	}
	if (ret == 0) {
		ret = prepare_planes(state);
	}
	if (ret < 0) {
		/* What the sync reported is told by the driver's next wake-up
		 * (vdc_sync's idle, KMS' idle), not from in here: a caller
		 * inside its own commit (the glue, inside wlroots') must not
		 * see present events of this CRTC. */
		return ret;
	}
	/* Point of no return: from here the commit cannot fail (a driver that
	 * cannot program it turns the CRTC off and reports the frames). */
	struct wla_device *dev = state->dev;
	commit_swapped(state, victims, NULL);
	wla_device_deliver_events(dev);
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

/* Complete everything queued on crtc as not presented (the driver has
 * stopped it); failed: the state whose programming failed. */
static void cancel_queue(struct wla_crtc *crtc, struct wla_atomic_state *failed)
{
	while (!wl_list_empty(&crtc->queue)) {
		struct wla_crtc_entry *e = wl_container_of(crtc->queue.next, e, link);
		struct wla_present event = { .failed = e->state == failed };
		complete_entry(e, &event);
	}
}

/* An off state for crtc, committed past every queue rule. */
static void force_off(struct wla_crtc *crtc, struct wla_atomic_state *failed)
{
	struct wla_device *dev = crtc->dev;
	struct wla_atomic_state *state = wla_atomic_state_alloc(dev);
	struct wla_crtc_state *cs = state ? wla_atomic_get_crtc_state(state, crtc) : NULL;
	int ret = cs ? 0 : -ENOMEM;
	if (ret == 0) {
		cs->enable = cs->active = false;
		for (size_t i = 0; ret == 0 && i < dev->n_connectors; i++) {
			struct wla_connector *conn = dev->connectors[i];
			if (conn && conn->state->crtc == crtc) {
				struct wla_connector_state *cos =
					wla_atomic_get_connector_state(state, conn);
				ret = cos ? wla_atomic_set_crtc_for_connector(state, cos, NULL) :
					-ENOMEM;
			}
		}
	}
	if (ret == 0) {
		state->allow_modeset = true;
		ret = wla_atomic_check(state);
	}
	if (ret < 0) {
		wla_crtc_log(crtc, WLA_LOG_ERROR,
			"cannot build the state that turns it off: %s",
			strerror(-ret));
		wla_atomic_state_free(state);
		return;
	}
	wla_for_each_crtc_in_state(state, e) {
		e->latch = e->frame = false;
		e->want_event = false;
	}
	commit_swapped(state, NULL, failed);
}

void wla_crtc_force_off(struct wla_crtc *crtc)
{
	struct wla_device *dev = crtc->dev;
	wla_device_hold(dev);
	/* What already latched is reported as such; what waits is not armed
	 * now, only to be reported presented on a CRTC going off. */
	bool was_stopping = crtc->stopping; /* a force-off inside the sync */
	crtc->stopping = true;
	sync_latches(dev);
	crtc->stopping = was_stopping;
	/* Enabled but inactive too: its connectors and planes go (the check
	 * turns off the planes of a CRTC that is disabled). */
	if (crtc->state->enable || crtc->state->active || !wl_list_empty(&crtc->queue)) {
		force_off(crtc, NULL);
	}
	/* What the sync held back goes on: here if the off state could not
	 * be built, elsewhere where a state also on this CRTC waited. */
	for (size_t i = 0; i < dev->n_crtcs; i++) {
		if (dev->crtcs[i]) {
			try_program(dev->crtcs[i]);
		}
	}
	wla_device_deliver_events(dev);
	wla_device_release(dev);
}

void wla_crtc_handle_latch(struct wla_crtc *crtc, uint64_t seq, const struct timespec *when,
	uint64_t refresh_ns, uint32_t flags)
{
	assert(crtc->armed > 0 && !wl_list_empty(&crtc->queue));
	struct wla_present event = {
		.presented = true,
		.seq = seq,
		.when = *when,
		.refresh_ns = refresh_ns,
		.flags = flags,
	};
	/* With max_slots above 1 the driver reports each latch on its own;
	 * states written over others (rearm) latch with them. */
	unsigned n = crtc->rearm ? crtc->armed : 1;
	bool frame = false;
	for (unsigned i = 0; i < n; i++) {
		struct wla_crtc_entry *e = wl_container_of(crtc->queue.next, e, link);
		assert(e->stage == WLA_QUEUE_ARMED);
		if (e->frame) {
			frame = true;
			if (e->counts_missed && seq > e->first_seq) {
				crtc->missed += seq - e->first_seq;
				wla_log(WLA_LOG_DEBUG, "%s: frame committed at %" PRIu64 " ns latched at "
					"vblank %" PRIu64 " (%" PRIu64 " ns), %" PRIu64 " after its first "
					"(%" PRIu64 "): missed %" PRIu64, crtc->name, e->state->commit_ns,
					seq, wla_timespec_to_ns(when), seq - e->first_seq, e->first_seq,
					crtc->missed);
			}
		}
		struct wla_present ev = event;
		if (!e->client_primary) {
			ev.flags &= ~(uint32_t)WLA_PRESENT_ZERO_COPY;
		}
		if (e->client_plane) {
			ev.flags |= WLA_PRESENT_CLIENT_PLANE;
		}
		complete_entry(e, &ev);
	}
	crtc->latches++;
	crtc->last_latch_seq = seq;
	crtc->last_latch_ns = wla_timespec_to_ns(when);
	crtc->last_latch_frame = frame;
	crtc->in_latch = true;
	try_program(crtc);
	crtc->in_latch = false;
}
