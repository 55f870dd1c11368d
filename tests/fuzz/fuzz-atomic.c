/*
 * Fuzz target: the atomic core over the VDC. The input is a program of
 * operations (commits built from its bytes, blocking and through the flip
 * queue, on one CRTC or several at once, mode sets, DPMS-style states
 * (enable=1 active=0), page flips, cursor updates, planes disabled, clock
 * steps with and without the VDC running, captures between them, present
 * handlers and capture callbacks that commit, capture or unplug, clients
 * dropping their buffers, driver failures, forced offs, connectors
 * unplugged and plugged in between commit and latch, destroy midway). After
 * every operation the invariants the core documents are checked; a
 * violation aborts.
 *
 * - A refused commit changes nothing: current states and every fb's locks.
 * - Every fb's scanout references equal the prepared plane states naming it,
 *   counted from the core's own lists (current states, and the replaced
 *   states of queued commits), and its driver import exists exactly then.
 * - The queue's counters equal the queue; the VDC holds a state armed
 *   exactly when the core handed one over.
 * - What a driver may read is alive (include/backend/atomic.h: "a state is
 *   only freed once the one replacing it latched"): every CRTC, plane and
 *   connector state of an armed state, old and new, and the VDC's scanout and shadow registers,
 *   read after every operation and in every callback (AddressSanitizer
 *   reports a freed one; the fields are checked too). No queued state holds
 *   an object that was removed.
 * - A capture's image is of a vblank after the request: its sequence is
 *   greater than the output's vblank count when it was asked for.
 * - A CRTC forced off, or whose connector is unplugged, is off with its
 *   connector unrouted and its planes off, nothing prepared, nothing queued
 *   (checked when the listener hears "connector removed").
 * - One present event per frame, never earlier than its commit; a frame on
 *   a connector unplugged gets its event before the unplug returns.
 * - Nothing leaked: no atomic state or fb left at the end.
 */
#include <assert.h>
#include <drm_fourcc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlatomic/config.h>
#include <wlr/util/log.h>
#include "backend/atomic.h"
#include "backend/vdc.h"
#include "fuzz.h"
#include "lib/fake-fb.h"
#include "lib/legacy.h"

#define N_FBS 8
#define MAX_SEQ 4096
/* Outputs plugged in at once, at most. */
#define MAX_LIVE 4

/* The core's invariants, in fuzz.h's form. */
#define CHECK(cond) FUZZ_CHECK(cond, "atomic core")

struct input {
	const uint8_t *data;
	size_t size, pos;
};

static uint32_t take(struct input *in, uint32_t below)
{
	if (below == 0) {
		return 0;
	}
	uint32_t v = 0;
	for (int i = 0; i < 2; i++) {
		v = (v << 8) | (in->pos < in->size ? in->data[in->pos] : 0);
		in->pos++;
	}
	return v % below;
}


struct fuzz {
	uint64_t now;
	struct wla_vdc *vdc;
	/* The fbs the fuzzer holds a reference to (tests/lib/fake-fb.h); one
	 * it let go of lives on, out of this table, while states hold it. */
	struct wla_fb *fbs[N_FBS];
	struct fake_fb_probe *probes[N_FBS]; /* of fbs[i] */
	uint64_t next_seq;
	/* Per commit_seq: a frame was accepted, its events, its commit time,
	 * the output (by id) whose CRTC it was for. */
	bool frame[MAX_SEQ];
	int events[MAX_SEQ];
	uint64_t commit_ns[MAX_SEQ];
	uint32_t seq_out[MAX_SEQ];
	/* The id of the output in each CRTC slot (a new one at each plug). */
	uint32_t out_id[WLA_MAX_CRTCS];
	uint32_t next_out_id;
	unsigned plugs;
	struct input *in;
	int handler_ops; /* callbacks that act, left */
	int depth;
	/* A CRTC being forced off or unplugged: callbacks leave it alone. */
	struct wla_crtc *leaving;
	unsigned removed_calls;
	unsigned unplugs; /* begun, counting those inside callbacks */
	unsigned captures_open;
};

static struct fuzz *g;

static int fb_locks(struct wla_fb *fb)
{
	return fake_fb_from_fb(fb)->probe->locks;
}

/* A fake fb went: its probe with it, and out of the table if it is there. */
static void fb_destroyed(struct fake_fb_probe *probe, void *data)
{
	CHECK(probe->bad_cleanups == 0);
	struct fuzz *f = data;
	for (size_t i = 0; i < N_FBS; i++) {
		if (f->fbs[i] && f->probes[i] == probe) {
			f->fbs[i] = NULL;
		}
	}
	free(probe);
}

static const uint32_t fb_sizes[][2] = { { 64, 48 }, { 32, 32 }, { 16, 16 }, { 64, 64 },
	{ 8, 100 } };
static const uint32_t fb_formats[] = { DRM_FORMAT_XRGB8888, DRM_FORMAT_ARGB8888,
	DRM_FORMAT_NV12 };

/* The modes of every connector, the preferred first: two sizes, and a
 * second rate of the first size (a retiming with the same fbs). */
static const struct wla_config_mode fuzz_modes[] = {
	{ 64, 48, 60000 },
	{ 32, 32, 30000 },
	{ 64, 48, 75000 },
};
#define N_MODES (sizeof(fuzz_modes) / sizeof(fuzz_modes[0]))

static struct wla_fb *new_fb(struct fuzz *f, size_t i, uint32_t w, uint32_t h, uint32_t format)
{
	struct fake_fb_probe *probe = calloc(1, sizeof(*probe));
	CHECK(probe);
	struct wla_fb *fb = fake_fb_create(w, h, format, 0, probe);
	CHECK(fb);
	probe->on_destroy = fb_destroyed;
	probe->on_destroy_data = f;
	f->fbs[i] = fb;
	f->probes[i] = probe;
	return fb;
}

static struct wla_fb *fuzz_fb(struct fuzz *f)
{
	size_t i = take(f->in, N_FBS);
	if (!f->fbs[i]) {
		const uint32_t *sz = fb_sizes[take(f->in, 5)];
		return new_fb(f, i, sz[0], sz[1], fb_formats[take(f->in, 3)]);
	}
	return f->fbs[i];
}

/* An fb for a primary plane showing mode: a new one is of its size. */
static struct wla_fb *fuzz_fb_for(struct fuzz *f, const struct wla_mode *mode)
{
	size_t i = take(f->in, N_FBS);
	if (!f->fbs[i]) {
		return new_fb(f, i, (uint32_t)mode->width, (uint32_t)mode->height,
			take(f->in, 2) ? DRM_FORMAT_XRGB8888 : DRM_FORMAT_ARGB8888);
	}
	return f->fbs[i];
}

static uint64_t fuzz_clock(void *data)
{
	return ((struct fuzz *)data)->now;
}

static struct wla_vdc_output *output_of(struct wla_crtc *crtc)
{
	return wla_vdc_output_from_crtc(crtc);
}

/* A CRTC of the device that is there, chosen by the input; NULL if none. */
static struct wla_crtc *pick_crtc(struct fuzz *f)
{
	struct wla_device *dev = &f->vdc->dev;
	uint32_t i = take(f->in, WLA_MAX_CRTCS);
	for (size_t n = 0; n < dev->n_crtcs; n++) {
		struct wla_crtc *crtc = dev->crtcs[(i + n) % dev->n_crtcs];
		if (crtc && crtc != f->leaving && !output_of(crtc)->unplugging) {
			return crtc;
		}
	}
	return NULL;
}

/* Whether ptr is one of the n objects of list now (pointers compared only:
 * a removed object's memory may be gone). */
static bool is_one_of(void *const *list, size_t n, const void *ptr)
{
	for (size_t i = 0; i < n; i++) {
		if (list[i] == ptr) {
			return true;
		}
	}
	return false;
}

#define is_crtc(f, p) is_one_of((void *const *)(f)->vdc->dev.crtcs, (f)->vdc->dev.n_crtcs, (p))
#define is_plane(f, p) is_one_of((void *const *)(f)->vdc->dev.planes, (f)->vdc->dev.n_planes, (p))
#define is_connector(f, p) is_one_of((void *const *)(f)->vdc->dev.connectors, \
	(f)->vdc->dev.n_connectors, (p))

/* Snapshot of what a refused commit must leave alone. */
struct snapshot {
	void *states[WLA_MAX_CRTCS + WLA_MAX_PLANES + WLA_MAX_CONNECTORS];
	int locks[N_FBS];
	size_t live;
	unsigned queued[WLA_MAX_CRTCS];
};

static void take_snapshot(struct fuzz *f, struct snapshot *s)
{
	struct wla_device *dev = &f->vdc->dev;
	size_t n = 0;
	for (size_t i = 0; i < dev->n_crtcs; i++) {
		s->states[n++] = dev->crtcs[i] ? dev->crtcs[i]->state : NULL;
		s->queued[i] = dev->crtcs[i] ? dev->crtcs[i]->queued : 0;
	}
	for (size_t i = 0; i < dev->n_planes; i++) {
		s->states[n++] = dev->planes[i] ? dev->planes[i]->state : NULL;
	}
	for (size_t i = 0; i < dev->n_connectors; i++) {
		s->states[n++] = dev->connectors[i] ? dev->connectors[i]->state : NULL;
	}
	for (size_t i = 0; i < N_FBS; i++) {
		s->locks[i] = f->fbs[i] ? fb_locks(f->fbs[i]) : -1;
	}
	s->live = dev->live_states;
}

static void check_unchanged(struct fuzz *f, const struct snapshot *s)
{
	struct snapshot now = { 0 };
	take_snapshot(f, &now);
	struct wla_device *dev = &f->vdc->dev;
	size_t n = dev->n_crtcs + dev->n_planes + dev->n_connectors;
	CHECK(memcmp(now.states, s->states, n * sizeof(void *)) == 0);
	CHECK(memcmp(now.locks, s->locks, sizeof(s->locks)) == 0);
	CHECK(memcmp(now.queued, s->queued, sizeof(s->queued)) == 0);
	CHECK(now.live == s->live);
}

static void count_prepared(const struct wla_plane_state *ps, int *counts)
{
	if (!ps || !ps->prepared) {
		return;
	}
	for (size_t i = 0; i < N_FBS; i++) {
		if (g->fbs[i] && g->fbs[i] == ps->fb) {
			counts[i]++;
		}
	}
}

/* Read a plane state as a driver holding it would: under ASan a freed one
 * is reported here; without, its overwritten fields are. */
static void read_plane_state(const struct wla_plane_state *ps, const struct wla_plane *plane,
	bool prepared)
{
	CHECK(ps->plane == plane);
	CHECK(!ps->crtc == !ps->fb);
	if (ps->fb) {
		CHECK(ps->fb->refs > 0);
		CHECK(!prepared || (ps->prepared && ps->fb->prepared > 0));
		CHECK(ps->fb->width > 0 && ps->fb->height > 0);
	}
}

/*
 * What a driver may read at any vblank: the plane states, old and new, of
 * every state armed on a CRTC (it may keep pointers to them until the latch
 * after), and the VDC's own registers. No queued state holds an object that
 * is gone.
 */
static void check_driver_view(struct fuzz *f)
{
	struct wla_device *dev = &f->vdc->dev;
	for (size_t c = 0; c < dev->n_crtcs; c++) {
		struct wla_crtc *crtc = dev->crtcs[c];
		if (!crtc) {
			continue;
		}
		struct wla_crtc_entry *e;
		wl_list_for_each(e, &crtc->queue, link) {
			CHECK(e->ptr == crtc);
			struct wla_atomic_state *s = e->state;
			CHECK(s->dev == dev && s->committed && s->swapped);
			for (size_t i = 0; i < dev->n_crtcs; i++) {
				const struct wla_crtc_entry *ce = &s->crtcs[i];
				CHECK(!ce->ptr || is_crtc(f, ce->ptr));
				/* Armed here: its CRTC states, also of a CRTC it
				 * already latched on, old and new. */
				if (ce->ptr && e->stage == WLA_QUEUE_ARMED) {
					CHECK(ce->new_state->crtc == ce->ptr);
					CHECK(!ce->new_state->active || ce->new_state->enable);
					CHECK(!ce->old_state || ce->old_state->crtc == ce->ptr);
				}
			}
			for (size_t i = 0; i < dev->n_planes; i++) {
				const struct wla_plane_entry *pe = &s->planes[i];
				CHECK(!pe->ptr || is_plane(f, pe->ptr));
				/* A state armed here: the planes this CRTC can show
				 * (those of a CRTC the state no longer waits on were
				 * released with it). */
				if (pe->ptr && e->stage == WLA_QUEUE_ARMED &&
						(pe->ptr->possible_crtcs & (1u << crtc->index))) {
					read_plane_state(pe->new_state, pe->ptr, true);
					read_plane_state(pe->old_state, pe->ptr, false);
				}
			}
			for (size_t i = 0; i < dev->n_connectors; i++) {
				const struct wla_connector_entry *ce = &s->connectors[i];
				CHECK(!ce->ptr || is_connector(f, ce->ptr));
				if (ce->ptr && e->stage == WLA_QUEUE_ARMED &&
						(ce->ptr->possible_crtcs & (1u << crtc->index))) {
					CHECK(ce->new_state->connector == ce->ptr);
				}
			}
		}
		struct wla_vdc_output *out = output_of(crtc);
		if (!out->running) {
			continue;
		}
		for (size_t i = 0; i < out->n_planes; i++) {
			const struct wla_plane_state *regs[] = { out->scanout.planes[i],
				out->shadow.planes[i] };
			for (size_t r = 0; r < 2; r++) {
				if (regs[r]) {
					read_plane_state(regs[r], out->zorder[i], true);
					CHECK(regs[r]->visible && regs[r]->crtc == crtc);
				}
			}
		}
	}
}

static void check_invariants(struct fuzz *f)
{
	struct wla_device *dev = &f->vdc->dev;
	int counts[N_FBS] = { 0 };
	/* States already counted: one state may be queued on several CRTCs. */
	struct wla_atomic_state *seen[WLA_MAX_CRTCS * 32];
	size_t n_seen = 0;
	for (size_t i = 0; i < dev->n_planes; i++) {
		if (dev->planes[i]) {
			count_prepared(dev->planes[i]->state, counts);
		}
	}
	for (size_t c = 0; c < dev->n_crtcs; c++) {
		struct wla_crtc *crtc = dev->crtcs[c];
		if (!crtc) {
			continue;
		}
		unsigned queued = 0, armed = 0, frames = 0, waiting = 0;
		bool seen_waiting = false;
		struct wla_crtc_entry *e;
		wl_list_for_each(e, &crtc->queue, link) {
			queued++;
			CHECK(!e->done && e->state->committed);
			if (e->stage == WLA_QUEUE_ARMED) {
				CHECK(!seen_waiting);
				armed++;
			} else {
				CHECK(e->stage == WLA_QUEUE_WAITING);
				seen_waiting = true;
				waiting += e->frame;
			}
			frames += e->frame;
			bool dup = false;
			for (size_t s = 0; s < n_seen; s++) {
				dup |= seen[s] == e->state;
			}
			if (!dup && n_seen < sizeof(seen) / sizeof(seen[0])) {
				seen[n_seen++] = e->state;
				wla_for_each_plane_in_state(e->state, pe) {
					count_prepared(pe->old_state, counts);
					/* Handed over by a state that completed first
					 * (commit.c, hand_over). */
					if (pe->adopted) {
						count_prepared(pe->new_state, counts);
					}
				}
			}
		}
		CHECK(crtc->queued == queued);
		CHECK(crtc->armed == armed);
		CHECK(crtc->pending_frames == frames);
		CHECK(crtc->waiting_frames == waiting);
		CHECK(output_of(crtc)->armed == (armed > 0));
		CHECK(armed <= crtc->max_slots || crtc->rearm);
		if (crtc->mailbox) {
			CHECK(waiting <= crtc->queue_depth);
		} else {
			/* A modeset waits behind a full queue, one past it. */
			CHECK(frames <= crtc->queue_depth + 1);
		}
	}
	for (size_t i = 0; i < N_FBS; i++) {
		if (!f->fbs[i]) {
			continue;
		}
		struct wla_fb *fb = f->fbs[i];
		CHECK(fb_locks(fb) == counts[i]);
		CHECK(fake_fb_from_fb(fb)->probe->bad_cleanups == 0);
		CHECK(fb->prepared == counts[i]);
		CHECK((fb->import != NULL) == (counts[i] > 0));
	}
	for (uint64_t s = 0; s < f->next_seq && s < MAX_SEQ; s++) {
		CHECK(f->events[s] <= 1);
	}
	check_driver_view(f);
}

/* A frame for crtc is about to be committed as seq. */
static void expect_frame(struct fuzz *f, struct wla_crtc *crtc, uint64_t seq)
{
	if (seq < MAX_SEQ) {
		f->frame[seq] = true;
		f->commit_ns[seq] = f->now;
		f->seq_out[seq] = f->out_id[crtc->index];
	}
}

static int commit(struct fuzz *f, struct wla_atomic_state *state, bool nonblock)
{
	/* The latches that already happened are reported before the
	 * snapshot, as the commit would (what the driver could not program
	 * then may make the state stale: it is refused). */
	wla_atomic_state_sync_latches(state);
	struct snapshot snap = { 0 };
	take_snapshot(f, &snap);
	/* A state being built counts as live. */
	uint64_t seqs[WLA_MAX_CRTCS];
	bool frames[WLA_MAX_CRTCS];
	size_t n = 0;
	wla_for_each_crtc_in_state(state, e) {
		seqs[n] = e->new_state->commit_seq;
		frames[n] = e->new_state->want_event;
		/* Marked before: the event may come from inside the commit. */
		if (frames[n]) {
			expect_frame(f, e->ptr, seqs[n]);
		}
		n++;
	}
	FUZZ_TRACE("  commit %s, %zu crtc(s)\n", nonblock ? "nonblocking" : "blocking", n);
	int ret = nonblock ? wla_atomic_nonblocking_commit(state) : wla_atomic_commit(state);
	if (ret < 0) {
		for (size_t i = 0; i < n; i++) {
			if (seqs[i] < MAX_SEQ) {
				CHECK(f->events[seqs[i]] == 0);
				f->frame[seqs[i]] = false;
			}
		}
		check_unchanged(f, &snap);
		wla_atomic_state_free(state);
		snap.live--;
		check_unchanged(f, &snap);
		return ret;
	}
	return 0;
}

static void fuzz_plane(struct fuzz *f, struct wla_atomic_state *state, struct wla_plane *plane,
	struct wla_crtc *crtc)
{
	struct wla_plane_state *ps = wla_atomic_get_plane_state(state, plane);
	if (!ps) {
		return;
	}
	if (take(f->in, 4) == 0) {
		wla_atomic_set_crtc_for_plane(state, ps, NULL);
		wla_atomic_set_fb_for_plane(ps, NULL);
		return;
	}
	struct wla_fb *fb = fuzz_fb(f);
	wla_atomic_set_crtc_for_plane(state, ps, take(f->in, 8) ? crtc : NULL);
	wla_atomic_set_fb_for_plane(ps, fb);
	wla_plane_state_set_full(ps, (int32_t)take(f->in, 100) - 20, (int32_t)take(f->in, 80) - 20);
	if (take(f->in, 2)) {
		ps->src_x = take(f->in, fb->width << 16);
		ps->src_y = take(f->in, fb->height << 16);
		ps->src_w = take(f->in, (fb->width << 16) + 2);
		ps->src_h = take(f->in, (fb->height << 16) + 2);
		ps->crtc_w = take(f->in, 130);
		ps->crtc_h = take(f->in, 130);
	}
}

static void op_commit(struct fuzz *f)
{
	struct wla_device *dev = &f->vdc->dev;
	struct wla_crtc *crtc = pick_crtc(f);
	if (!crtc) {
		return;
	}
	struct wla_atomic_state *state = wla_atomic_state_alloc(dev);
	CHECK(state);
	struct wla_vdc_output *out = output_of(crtc);
	uint32_t what = take(f->in, 16);
	state->allow_modeset = what & 1;
	state->legacy_cursor_update = (what & 6) == 6;
	if (what & 8) {
		struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
		cs->commit_seq = f->next_seq++;
		cs->want_event = take(f->in, 4) != 0;
		if (take(f->in, 4) == 0) {
			cs->active = take(f->in, 2);
			cs->enable = cs->active || take(f->in, 2);
			cs->mode = out->connector.modes[take(f->in, (uint32_t)out->connector.n_modes)];
			struct wla_connector_state *cos =
				wla_atomic_get_connector_state(state, &out->connector);
			if (cos) {
				wla_atomic_set_crtc_for_connector(state, cos,
					cs->enable ? crtc : NULL);
			}
		}
	}
	uint32_t planes = take(f->in, 8);
	if (planes & 1) {
		fuzz_plane(f, state, &out->primary, crtc);
	}
	if (planes & 2) {
		fuzz_plane(f, state, &out->cursor, crtc);
	}
	if ((planes & 4) && out->n_overlays > 0) {
		fuzz_plane(f, state, &out->overlays[0], crtc);
	}
	commit(f, state, take(f->in, 4) != 0);
}

/*
 * One state over several CRTCs (those of mask, 0: all): each on, off, or
 * enabled but inactive (DPMS off), with its connector routed accordingly and
 * its primary plane showing an fb of its mode or off.
 */
static void op_commit_multi(struct fuzz *f)
{
	struct wla_device *dev = &f->vdc->dev;
	uint32_t mask = take(f->in, 1u << WLA_MAX_CRTCS);
	struct wla_atomic_state *state = wla_atomic_state_alloc(dev);
	CHECK(state);
	state->allow_modeset = take(f->in, 8) != 0;
	for (size_t i = 0; i < dev->n_crtcs; i++) {
		struct wla_crtc *crtc = dev->crtcs[i];
		if (!crtc || crtc == f->leaving || output_of(crtc)->unplugging ||
				(mask && !(mask & (1u << i)))) {
			continue;
		}
		struct wla_vdc_output *out = output_of(crtc);
		struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
		CHECK(cs);
		cs->commit_seq = f->next_seq++;
		cs->want_event = take(f->in, 4) != 0;
		/* 0..4 on, 5 DPMS off, 6 off, 7 as it is. */
		uint32_t how = take(f->in, 8);
		if (how < 7) {
			cs->enable = how != 6;
			cs->active = how < 5;
			if (cs->enable) {
				cs->mode = out->connector.modes[take(f->in,
					(uint32_t)out->connector.n_modes)];
			}
			struct wla_connector_state *cos =
				wla_atomic_get_connector_state(state, &out->connector);
			CHECK(cos);
			wla_atomic_set_crtc_for_connector(state, cos, cs->enable ? crtc : NULL);
		}
		if (take(f->in, 4) != 0) {
			struct wla_plane_state *ps = wla_atomic_get_plane_state(state, &out->primary);
			CHECK(ps);
			if (cs->enable && take(f->in, 4) != 0) {
				wla_atomic_set_crtc_for_plane(state, ps, crtc);
				wla_atomic_set_fb_for_plane(ps, fuzz_fb_for(f, &cs->mode));
				wla_plane_state_set_full(ps, 0, 0);
			} else {
				wla_atomic_set_crtc_for_plane(state, ps, NULL);
				wla_atomic_set_fb_for_plane(ps, NULL);
			}
		}
		if (take(f->in, 4) == 0) {
			fuzz_plane(f, state, &out->cursor, crtc);
		}
	}
	commit(f, state, take(f->in, 4) != 0);
}

/* Screen off and on again the DPMS way: the mode and the connector stay,
 * active goes. */
static void op_dpms(struct fuzz *f, struct wla_crtc *crtc)
{
	struct wla_vdc_output *out = output_of(crtc);
	struct wla_atomic_state *state = wla_atomic_state_alloc(&f->vdc->dev);
	CHECK(state);
	state->allow_modeset = true;
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	CHECK(cs);
	if (!cs->enable || take(f->in, 4) == 0) {
		cs->enable = true;
		cs->mode = out->connector.modes[take(f->in, (uint32_t)out->connector.n_modes)];
		struct wla_connector_state *cos =
			wla_atomic_get_connector_state(state, &out->connector);
		CHECK(cos);
		wla_atomic_set_crtc_for_connector(state, cos, crtc);
	}
	cs->active = take(f->in, 2);
	cs->commit_seq = f->next_seq++;
	cs->want_event = cs->active && take(f->in, 4) != 0;
	commit(f, state, take(f->in, 4) != 0);
}

/* A CRTC forced off, or unplugged: off, its connector unrouted, its planes
 * off, nothing held. */
static void check_off(struct fuzz *f, struct wla_vdc_output *out)
{
	struct wla_device *dev = &f->vdc->dev;
	struct wla_crtc *crtc = &out->crtc;
	CHECK(!crtc->state->active && !crtc->state->enable);
	CHECK(crtc->state->connector_mask == 0 && crtc->state->plane_mask == 0);
	CHECK(wl_list_empty(&crtc->queue) && crtc->queued == 0);
	CHECK(!out->running && !out->armed);
	for (size_t i = 0; i < dev->n_connectors; i++) {
		struct wla_connector *conn = dev->connectors[i];
		CHECK(!conn || conn->state->crtc != crtc);
	}
	for (size_t i = 0; i < out->n_planes; i++) {
		const struct wla_plane_state *ps = out->zorder[i]->state;
		CHECK(!ps->crtc && !ps->fb && !ps->prepared);
	}
}

static void connector_removed(struct wla_device *dev, struct wla_connector *conn, void *data)
{
	struct fuzz *f = data;
	struct wla_vdc_output *out = conn->driver_data;
	FUZZ_TRACE("  listener: connector %s removed\n", conn->name);
	f->removed_calls++;
	CHECK(out->unplugging && conn->status == WLA_CONNECTOR_DISCONNECTED);
	CHECK(conn->state->crtc == NULL);
	check_off(f, out);
}

static void setup_crtc(struct fuzz *f, struct wla_crtc *crtc);
static void request_capture(struct fuzz *f, struct wla_vdc_output *out);

static void unplug(struct fuzz *f, struct wla_vdc_output *out)
{
	struct wla_device *dev = &f->vdc->dev;
	unsigned index = out->crtc.index;
	uint32_t id = f->out_id[index];
	bool delivering = dev->delivering;
	uint64_t before = f->next_seq;
	unsigned removed = f->removed_calls;
	unsigned unplugs = f->unplugs++;
	FUZZ_TRACE("  unplug %s (crtc %u)%s\n", out->connector.name, index,
		delivering ? " from a present handler" : "");
	wla_vdc_unplug(out);
	/* out may be freed: only pointers are compared from here. */
	/* One "removed" each: this one's and those of the unplugs a
	 * callback made while this one ran. */
	CHECK(f->removed_calls - removed == f->unplugs - unplugs);
	CHECK(index >= dev->n_crtcs || dev->crtcs[index] == NULL);
	for (uint64_t s = 0; s < f->next_seq && s < MAX_SEQ; s++) {
		if (!f->frame[s] || f->seq_out[s] != id || f->events[s] > 0) {
			continue;
		}
		/* The unplug delivers the events of what it cancelled, unless
		 * the device is delivering already (a present handler): then
		 * they go with the CRTC. A frame committed during the unplug
		 * (a callback) may go unreported too. */
		CHECK(delivering || s >= before);
		f->frame[s] = false;
	}
}

static void op_plug(struct fuzz *f)
{
	struct wla_device *dev = &f->vdc->dev;
	unsigned live = 0;
	for (size_t i = 0; i < dev->n_crtcs; i++) {
		live += dev->crtcs[i] != NULL;
	}
	if (live >= MAX_LIVE) {
		return;
	}
	char name[16];
	snprintf(name, sizeof(name), "P-%u", f->plugs++);
	size_t n_modes = 1 + take(f->in, N_MODES);
	struct wla_vdc_output *out = wla_vdc_plug(f->vdc, name, fuzz_modes, n_modes);
	FUZZ_TRACE("  plug %s: crtc %d\n", name, out ? (int)out->crtc.index : -1);
	CHECK(out);
	setup_crtc(f, &out->crtc);
}

/* Actions of present handlers and capture callbacks, while handler_ops
 * lasts: commit, capture, unplug. */
static void handler_act(struct fuzz *f)
{
	if (f->handler_ops <= 0 || f->depth >= 4) {
		return;
	}
	f->handler_ops--;
	f->depth++;
	uint32_t what = take(f->in, 8);
	if (what == 6) {
		struct wla_crtc *crtc = pick_crtc(f);
		if (crtc) {
			request_capture(f, output_of(crtc));
		}
	} else if (what == 7) {
		struct wla_crtc *crtc = pick_crtc(f);
		if (crtc) {
			unplug(f, output_of(crtc));
		}
	} else if (what == 5) {
		op_commit_multi(f);
	} else {
		op_commit(f);
	}
	check_driver_view(f);
	f->depth--;
}

static void present_handler(struct wla_crtc *crtc, const struct wla_present *ev, void *data)
{
	struct fuzz *f = data;
	if (ev->commit_seq < MAX_SEQ) {
		CHECK(f->frame[ev->commit_seq]);
		f->events[ev->commit_seq]++;
		CHECK(f->events[ev->commit_seq] == 1);
		if (ev->presented) {
			uint64_t when = (uint64_t)ev->when.tv_sec * 1000000000u +
				(uint64_t)ev->when.tv_nsec;
			CHECK(when >= f->commit_ns[ev->commit_seq]);
		}
	}
	check_driver_view(f);
	handler_act(f);
}

struct capture_req {
	struct fuzz *f;
	uint64_t seq_at_request;
};

static void capture_done(struct wla_capture *cap, const struct wla_image *image, uint64_t seq,
	void *data)
{
	struct capture_req *req = data;
	struct fuzz *f = req->f;
	FUZZ_TRACE("  capture done: %s, seq %llu (asked at %llu)\n", image ? "image" : "failed",
		(unsigned long long)seq, (unsigned long long)req->seq_at_request);
	/* capture.h: the frame on screen after the next vblank. */
	CHECK(!image || seq > req->seq_at_request);
	free(req);
	f->captures_open--;
	check_driver_view(f);
	handler_act(f);
}

static void request_capture(struct fuzz *f, struct wla_vdc_output *out)
{
	struct capture_req *req = calloc(1, sizeof(*req));
	CHECK(req);
	req->f = f;
	struct wla_capture *cap = wla_vdc_capture(out, capture_done, req);
	if (!cap) {
		free(req);
		return;
	}
	f->captures_open++;
	/* The vblanks up to now were counted by the request (when nothing was
	 * armed; otherwise the count may be behind, a weaker bound). */
	req->seq_at_request = out->seq;
	FUZZ_TRACE("  capture asked on %s at seq %llu\n", out->connector.name,
		(unsigned long long)out->seq);
	if (f->depth == 0 && take(f->in, 3) == 0) {
		wla_vdc_capture_cancel(cap);
		free(req);
		f->captures_open--;
	}
}

static void setup_crtc(struct fuzz *f, struct wla_crtc *crtc)
{
	crtc->present = present_handler;
	crtc->present_data = f;
	crtc->queue_depth = 1 + take(f->in, 3);
	crtc->mailbox = take(f->in, 2);
	f->out_id[crtc->index] = ++f->next_out_id;
}

static void run(struct fuzz *f)
{
	size_t steps = 0;
	while (f->in->pos < f->in->size && steps++ < 200) {
		uint32_t op = take(f->in, 20);
		struct wla_crtc *crtc = pick_crtc(f);
		struct wla_vdc_output *out = crtc ? output_of(crtc) : NULL;
		FUZZ_TRACE("op %u on %s, now %llu\n", op, crtc ? crtc->name : "-",
			(unsigned long long)f->now);
		switch (op) {
		case 0:
		case 1:
		case 2:
			op_commit(f);
			break;
		case 3: {
			if (!crtc) {
				break;
			}
			/* Legacy mode set or disable. */
			uint64_t seq = f->next_seq++;
			bool on = take(f->in, 3) != 0;
			struct wla_fb *fb = take(f->in, 3) ? fuzz_fb(f) : NULL;
			if (on) {
				expect_frame(f, crtc, seq);
			}
			int ret = wla_atomic_set_config(crtc, &out->connector, on ?
				&out->connector.modes[take(f->in,
					(uint32_t)out->connector.n_modes)] : NULL, fb, seq);
			if (ret < 0 && seq < MAX_SEQ) {
				CHECK(f->events[seq] == 0);
				f->frame[seq] = false;
			}
			break;
		}
		case 4: {
			if (!crtc) {
				break;
			}
			struct wla_fb *fb = fuzz_fb(f);
			wla_atomic_update_plane(&out->cursor, crtc, fb, (int32_t)take(f->in, 80),
				(int32_t)take(f->in, 60), fb->width, fb->height, 0, 0, fb->width << 16,
				fb->height << 16);
			break;
		}
		case 5:
			/* Vblanks: a few, or a stall. */
			f->now += take(f->in, 4) == 0 ? 40000000 : take(f->in, 20000000);
			wla_vdc_advance(f->vdc, f->now);
			break;
		case 6:
			/* The clock moves, the timer has not run yet. */
			f->now += take(f->in, 17000000);
			break;
		case 7:
			if (out) {
				request_capture(f, out);
			}
			break;
		case 8: {
			/* A client lets go of its buffer. */
			size_t i = take(f->in, N_FBS);
			if (f->fbs[i]) {
				struct wla_fb *fb = f->fbs[i];
				/* Not ours any more: forget it, the states keep it. */
				f->fbs[i] = NULL;
				wla_fb_put(fb);
			}
			break;
		}
		case 9:
			f->handler_ops = (int)take(f->in, 4);
			break;
		case 10:
			if (take(f->in, 2)) {
				f->vdc->fail_commit_tail = 5;
			} else {
				f->vdc->fail_prepare_fb = 12;
			}
			break;
		case 11:
			if (take(f->in, 8) == 0) {
				return; /* destroy midway */
			}
			break;
		case 12:
		case 19:
			op_commit_multi(f);
			break;
		case 13:
			if (out) {
				unplug(f, out);
			}
			break;
		case 14:
			op_plug(f);
			break;
		case 15:
			if (crtc) {
				op_dpms(f, crtc);
			}
			break;
		case 16:
			if (crtc) {
				/* A driver that lost the CRTC. */
				f->leaving = crtc;
				wla_crtc_force_off(crtc);
				f->leaving = NULL;
				check_off(f, out);
			}
			break;
		case 17:
			if (out) {
				uint32_t p = take(f->in, 3);
				wla_atomic_disable_plane(p == 0 ? &out->primary : p == 1 ?
					&out->cursor : out->zorder[1]);
			}
			break;
		case 18:
			if (crtc) {
				uint64_t seq = f->next_seq++;
				expect_frame(f, crtc, seq);
				struct wla_fb *fb = crtc->state->enable ?
					fuzz_fb_for(f, &crtc->state->mode) : fuzz_fb(f);
				int ret = wla_atomic_page_flip(crtc, fb, seq);
				if (ret < 0 && seq < MAX_SEQ) {
					CHECK(f->events[seq] == 0);
					f->frame[seq] = false;
				}
			}
			break;
		}
		check_invariants(f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_init();
	struct input in = { .data = data, .size = size };
	struct fuzz *f = calloc(1, sizeof(*f));
	CHECK(f);
	g = f;
	f->in = &in;
	f->now = UINT64_C(1000000000);
	f->next_seq = 1;
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.n_outputs = 2 + take(&in, 2);
	for (size_t i = 0; i < cfg.n_outputs; i++) {
		snprintf(cfg.outputs[i].name, sizeof(cfg.outputs[i].name), "F-%zu", i);
		memcpy(cfg.outputs[i].modes, fuzz_modes, sizeof(fuzz_modes));
		cfg.outputs[i].n_modes = N_MODES;
	}
	cfg.overlay_planes = 1;
	cfg.cursor_size = 64;
	f->vdc = wla_vdc_create(NULL, &cfg, fuzz_clock, f);
	CHECK(f->vdc);
	f->vdc->dev.listener = (struct wla_device_listener){
		.connector_removed = connector_removed,
		.data = f,
	};
	for (size_t i = 0; i < cfg.n_outputs; i++) {
		setup_crtc(f, &f->vdc->outputs[i]->crtc);
	}
	run(f);
	/* Turn everything off while handlers listen: every frame accepted has
	 * had exactly one event by then. */
	f->handler_ops = 0;
	struct wla_device *dev = &f->vdc->dev;
	for (size_t i = 0; i < dev->n_crtcs; i++) {
		if (dev->crtcs[i]) {
			wla_crtc_force_off(dev->crtcs[i]);
			check_off(f, output_of(dev->crtcs[i]));
		}
	}
	check_invariants(f);
	for (uint64_t s = 0; s < f->next_seq && s < MAX_SEQ; s++) {
		CHECK(!f->frame[s] || f->events[s] == 1);
	}
	CHECK(dev->live_states == 0);
	wla_vdc_destroy(f->vdc);
	CHECK(f->captures_open == 0);
	for (size_t i = 0; i < N_FBS; i++) {
		if (f->fbs[i]) {
			struct wla_fb *fb = f->fbs[i];
			CHECK(fb_locks(fb) == 0);
			f->fbs[i] = NULL;
			wla_fb_put(fb);
		}
	}
	for (size_t i = 0; i < N_FBS; i++) {
		CHECK(f->fbs[i] == NULL);
	}
	free(f);
	g = NULL;
	return 0;
}
