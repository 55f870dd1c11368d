/*
 * The flip queue's questions, answered by the core for the glue and every
 * driver, as the kernel's vblank code answers them for its drivers: whether
 * a frame fits the queue, when the armed states latch, when a frame
 * committed now would latch and by when it must be committed. A driver only
 * reports its vblanks (wla_driver_funcs.vblank_at: the first vblank at or
 * after a time on the timing it runs) and its latches; a mode change still
 * in the queue restarts the timing where it latches, on the grid below.
 */
#include <assert.h>
#include "backend/atomic.h"

#define NS_PER_S_MHZ UINT64_C(1000000000000) /* ns per second, times 1000 */

uint64_t wla_vblank_grid_ns(const struct wla_vblank_grid *grid, uint64_t k)
{
	assert(grid->refresh_mhz > 0);
	unsigned __int128 r = (uint32_t)grid->refresh_mhz;
	return grid->origin_ns + (uint64_t)(((unsigned __int128)k * NS_PER_S_MHZ + r / 2) / r);
}

uint64_t wla_vblank_grid_index(const struct wla_vblank_grid *grid, uint64_t t)
{
	if (t < grid->origin_ns) {
		return 0;
	}
	unsigned __int128 d = t - grid->origin_ns;
	uint64_t k = (uint64_t)(d * (uint32_t)grid->refresh_mhz / NS_PER_S_MHZ);
	while (wla_vblank_grid_ns(grid, k + 1) <= t) {
		k++;
	}
	while (k > 0 && wla_vblank_grid_ns(grid, k) > t) {
		k--;
	}
	return k;
}

uint64_t wla_vblank_grid_first_from(const struct wla_vblank_grid *grid, uint64_t k,
	uint64_t t)
{
	if (t > grid->origin_ns) {
		/* The vblank after the last one before t. */
		uint64_t j = wla_vblank_grid_index(grid, t - 1) + 1;
		if (j > k) {
			k = j;
		}
	}
	return k;
}

unsigned wla_crtc_queue_depth(const struct wla_crtc *crtc)
{
	return crtc->queue_depth ? crtc->queue_depth : 1;
}

bool wla_crtc_frame_fits(const struct wla_crtc *crtc)
{
	unsigned depth = wla_crtc_queue_depth(crtc);
	return crtc->mailbox ? crtc->waiting_frames < depth : crtc->pending_frames < depth;
}

/*
 * Playing the queue forward: where the next latch after `after` (0: none
 * yet) happens for a state ready (written, plus the latch minimum) at
 * `ready`, on the driver's timing or, past a queued mode change, on the
 * grid that starts where that change latches.
 */
struct queue_walk {
	struct wla_crtc *crtc;
	bool own_grid;
	struct wla_vblank_grid grid;
	uint64_t after;
};

static bool walk_latch(struct queue_walk *w, uint64_t ready, uint64_t *t)
{
	if (w->after >= ready) {
		ready = w->after + 1;
	}
	if (w->own_grid) {
		/* Vblank 0 is where the mode change latched. */
		*t = wla_vblank_grid_ns(&w->grid, wla_vblank_grid_first_from(&w->grid, 1, ready));
	} else {
		struct wla_device *dev = w->crtc->dev;
		uint64_t seq;
		if (!dev->funcs->vblank_at ||
				!dev->funcs->vblank_at(dev, w->crtc, ready, &seq, t)) {
			return false;
		}
	}
	w->after = *t;
	return true;
}

/* A mode change of a running CRTC restarts its timing where it latches (an
 * enable starts it when the driver is handed it: the driver's grid). */
static void walk_mode(struct queue_walk *w, const struct wla_crtc_entry *e, uint64_t t)
{
	const struct wla_crtc_state *new = e->new_state;
	if (new->active && e->old_state->active && new->mode.refresh_mhz > 0 &&
			!wla_mode_equal(&e->old_state->mode, &new->mode)) {
		w->own_grid = true;
		w->grid = (struct wla_vblank_grid){
			.origin_ns = t,
			.refresh_mhz = new->mode.refresh_mhz,
		};
	}
}

/* The armed states' ready time: with rearm they latch as one, at the first
 * vblank early enough for the last one written. */
static bool armed_ready(const struct wla_crtc *crtc, uint64_t *ready)
{
	uint64_t newest = 0;
	bool any = false;
	struct wla_crtc_entry *e;
	wl_list_for_each(e, &crtc->queue, link) {
		if (e->stage != WLA_QUEUE_ARMED) {
			break;
		}
		any = true;
		if (e->state->commit_ns > newest) {
			newest = e->state->commit_ns;
		}
	}
	*ready = newest + crtc->dev->latch_slack_ns;
	return any;
}

bool wla_crtc_armed_latch(struct wla_crtc *crtc, uint64_t *latch_ns)
{
	uint64_t ready;
	if (!armed_ready(crtc, &ready)) {
		return false;
	}
	struct queue_walk w = { .crtc = crtc };
	return walk_latch(&w, ready, latch_ns);
}

bool wla_crtc_next_latch(struct wla_crtc *crtc, uint64_t *latch_ns, uint64_t *commit_by_ns)
{
	struct wla_device *dev = crtc->dev;
	if (!crtc->state->active || !dev->funcs->now) {
		return false;
	}
	uint64_t slack = dev->latch_slack_ns;
	uint64_t now = dev->funcs->now(dev);
	struct queue_walk w = { .crtc = crtc };
	bool armed_seen = false, waiting_seen = false;
	uint64_t armed_t = 0;
	/* Mailbox with the queue full: a frame now replaces the newest
	 * waiting frame and takes its place (plan_queue, replaceable_frame). */
	struct wla_crtc_entry *victim = NULL;
	if (crtc->mailbox && !wla_crtc_frame_fits(crtc) && !wl_list_empty(&crtc->queue)) {
		struct wla_crtc_entry *last = wl_container_of(crtc->queue.prev, last, link);
		if (last->stage == WLA_QUEUE_WAITING && last->frame) {
			victim = last;
		}
	}
	struct wla_crtc_entry *e;
	wl_list_for_each(e, &crtc->queue, link) {
		if (e == victim) {
			break;
		}
		uint64_t t;
		if (e->stage == WLA_QUEUE_ARMED && crtc->rearm) {
			/* Written over one another: one latch for them all. */
			if (armed_seen) {
				walk_mode(&w, e, armed_t);
				continue;
			}
			uint64_t ready;
			armed_ready(crtc, &ready);
			if (!walk_latch(&w, ready, &t)) {
				return false;
			}
			armed_seen = true;
			armed_t = t;
		} else {
			/* Each waiting state is handed over at the latch before
			 * it and takes the first vblank after it that is early
			 * enough for its commit. */
			waiting_seen |= e->stage == WLA_QUEUE_WAITING;
			if (!walk_latch(&w, e->state->commit_ns + slack, &t)) {
				return false;
			}
		}
		walk_mode(&w, e, t);
	}
	if (armed_seen && !waiting_seen && crtc->pending_frames == 0 && now + slack <= armed_t) {
		/* A frame now is written over the armed non-frames and still
		 * makes their vblank. */
		*latch_ns = armed_t;
	} else if (!walk_latch(&w, now + slack, latch_ns)) {
		return false;
	}
	*commit_by_ns = *latch_ns - slack;
	return true;
}

uint64_t wla_crtc_missed(const struct wla_crtc *crtc, uint64_t seq_now)
{
	uint64_t missed = crtc->missed;
	struct wla_crtc_entry *e;
	wl_list_for_each(e, &crtc->queue, link) {
		if (e->stage == WLA_QUEUE_ARMED && e->frame && e->counts_missed &&
				seq_now >= e->first_seq) {
			missed += seq_now - e->first_seq + 1;
		}
	}
	return missed;
}

bool wla_crtc_get_counters(struct wla_crtc *crtc, struct wla_vblank_counters *counters)
{
	struct wla_device *dev = crtc->dev;
	*counters = (struct wla_vblank_counters){ 0 };
	bool ok = dev->funcs->vblank_counters &&
		dev->funcs->vblank_counters(dev, crtc, counters);
	counters->missed = wla_crtc_missed(crtc, counters->settled_seq);
	counters->latched = crtc->latches;
	return ok;
}
