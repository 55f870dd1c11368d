/*
 * Fuzz target: the atomic core over the VDC. The input is a program of
 * operations (commits built from its bytes, blocking and through the flip
 * queue, mode sets, cursor updates, clock steps with and without the VDC
 * running, captures, present handlers that commit, clients dropping their
 * buffers, driver failures, destroy midway). After every operation the
 * invariants the core documents are checked; a violation aborts.
 *
 * - A refused commit changes nothing: current states and every fb's locks.
 * - Every fb's scanout references equal the prepared plane states naming it,
 *   counted from the core's own lists (current states, and the replaced
 *   states of queued commits), and its driver import exists exactly then.
 * - The queue's counters equal the queue; the VDC holds a state armed
 *   exactly when the core handed one over.
 * - One present event per frame, never earlier than its commit.
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

#define N_FBS 8
#define MAX_SEQ 4096

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

struct ffb {
	struct wla_fb base;
	uint32_t *pixels;
	int locks;
	bool destroyed;
	bool held; /* the fuzzer's own reference */
};

struct fuzz {
	uint64_t now;
	struct wla_vdc *vdc;
	struct ffb *fbs[N_FBS];
	uint64_t next_seq;
	/* Per commit_seq: a frame was accepted, its events, its commit time. */
	bool frame[MAX_SEQ];
	int events[MAX_SEQ];
	uint64_t commit_ns[MAX_SEQ];
	struct input *in;
	int handler_commits; /* present handlers that commit, left */
	int depth;
};

static struct fuzz *g;

static struct ffb *ffb_of(struct wla_fb *fb)
{
	return (struct ffb *)fb;
}

static int ffb_prepare(struct wla_fb *fb)
{
	ffb_of(fb)->locks++;
	return 0;
}

static void ffb_cleanup(struct wla_fb *fb)
{
	CHECK(ffb_of(fb)->locks > 0);
	ffb_of(fb)->locks--;
}

static bool ffb_begin(struct wla_fb *fb, const void **data, uint32_t *stride)
{
	CHECK(!ffb_of(fb)->destroyed);
	*data = ffb_of(fb)->pixels;
	*stride = fb->width * 4;
	return true;
}

static void ffb_end(struct wla_fb *fb)
{
}

static void ffb_destroy(struct wla_fb *fb)
{
	struct ffb *f = ffb_of(fb);
	CHECK(f->locks == 0);
	for (size_t i = 0; i < N_FBS; i++) {
		if (g->fbs[i] == f) {
			g->fbs[i] = NULL;
		}
	}
	free(f->pixels);
	free(f);
}

static const struct wla_fb_impl ffb_impl = {
	.prepare = ffb_prepare,
	.cleanup = ffb_cleanup,
	.begin_access = ffb_begin,
	.end_access = ffb_end,
	.destroy = ffb_destroy,
};

static const uint32_t fb_sizes[][2] = { { 64, 48 }, { 32, 32 }, { 16, 16 }, { 64, 64 },
	{ 8, 100 } };
static const uint32_t fb_formats[] = { DRM_FORMAT_XRGB8888, DRM_FORMAT_ARGB8888,
	DRM_FORMAT_NV12 };

static struct wla_fb *fuzz_fb(struct fuzz *f)
{
	size_t i = take(f->in, N_FBS);
	if (!f->fbs[i]) {
		struct ffb *fb = calloc(1, sizeof(*fb));
		const uint32_t *sz = fb_sizes[take(f->in, 5)];
		uint32_t format = fb_formats[take(f->in, 3)];
		fb->pixels = calloc((size_t)sz[0] * sz[1], 4);
		wla_fb_init(&fb->base, &ffb_impl, sz[0], sz[1], format);
		fb->held = true;
		f->fbs[i] = fb;
	}
	return &f->fbs[i]->base;
}

static uint64_t fuzz_clock(void *data)
{
	return ((struct fuzz *)data)->now;
}

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
		s->states[n++] = dev->crtcs[i]->state;
		s->queued[i] = dev->crtcs[i]->queued;
	}
	for (size_t i = 0; i < dev->n_planes; i++) {
		s->states[n++] = dev->planes[i]->state;
	}
	for (size_t i = 0; i < dev->n_connectors; i++) {
		s->states[n++] = dev->connectors[i]->state;
	}
	for (size_t i = 0; i < N_FBS; i++) {
		s->locks[i] = f->fbs[i] ? f->fbs[i]->locks : -1;
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
		if (g->fbs[i] && &g->fbs[i]->base == ps->fb) {
			counts[i]++;
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
		count_prepared(dev->planes[i]->state, counts);
	}
	for (size_t c = 0; c < dev->n_crtcs; c++) {
		struct wla_crtc *crtc = dev->crtcs[c];
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
				}
			}
		}
		CHECK(crtc->queued == queued);
		CHECK(crtc->armed == armed);
		CHECK(crtc->pending_frames == frames);
		CHECK(crtc->waiting_frames == waiting);
		CHECK(f->vdc->outputs[c]->armed == (armed > 0));
		CHECK(armed <= crtc->max_slots || crtc->rearm);
		if (crtc->mailbox) {
			CHECK(waiting <= crtc->queue_depth);
		} else {
			CHECK(frames <= crtc->queue_depth);
		}
	}
	for (size_t i = 0; i < N_FBS; i++) {
		if (!f->fbs[i]) {
			continue;
		}
		struct ffb *fb = f->fbs[i];
		CHECK(fb->locks == counts[i]);
		CHECK(fb->base.prepared == counts[i]);
		CHECK((fb->base.import != NULL) == (counts[i] > 0));
	}
	for (uint64_t s = 0; s < f->next_seq && s < MAX_SEQ; s++) {
		CHECK(f->events[s] <= 1);
	}
}

static int commit(struct fuzz *f, struct wla_atomic_state *state, bool nonblock)
{
	struct snapshot snap = { 0 };
	take_snapshot(f, &snap);
	/* A state being built counts as live. */
	uint64_t seqs[WLA_MAX_CRTCS];
	bool frames[WLA_MAX_CRTCS];
	size_t n = 0;
	wla_for_each_crtc_in_state(state, e) {
		seqs[n] = e->new_state->commit_seq;
		frames[n++] = e->new_state->want_event;
	}
	/* Marked before: the event may come from inside the commit. */
	for (size_t i = 0; i < n; i++) {
		if (frames[i] && seqs[i] < MAX_SEQ) {
			f->frame[seqs[i]] = true;
			f->commit_ns[seqs[i]] = f->now;
		}
	}
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
	struct wla_atomic_state *state = wla_atomic_state_alloc(dev);
	struct wla_crtc *crtc = dev->crtcs[take(f->in, (uint32_t)dev->n_crtcs)];
	struct wla_vdc_output *out = f->vdc->outputs[crtc->index];
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
	if (f->handler_commits > 0 && f->depth < 4) {
		f->handler_commits--;
		f->depth++;
		op_commit(f);
		f->depth--;
	}
}

static void capture_done(struct wla_capture *cap, const struct wla_image *image, uint64_t seq,
	void *data)
{
	struct fuzz *f = data;
	if (f->handler_commits > 0 && f->depth < 4) {
		f->handler_commits--;
		f->depth++;
		op_commit(f);
		f->depth--;
	}
}

static void run(struct fuzz *f)
{
	struct wla_device *dev = &f->vdc->dev;
	size_t steps = 0;
	while (f->in->pos < f->in->size && steps++ < 200) {
		uint32_t op = take(f->in, 12);
		struct wla_crtc *crtc = dev->crtcs[take(f->in, (uint32_t)dev->n_crtcs)];
		struct wla_vdc_output *out = f->vdc->outputs[crtc->index];
		switch (op) {
		case 0:
		case 1:
		case 2:
			op_commit(f);
			break;
		case 3: {
			/* Legacy mode set or disable. */
			uint64_t seq = f->next_seq++;
			bool on = take(f->in, 3) != 0;
			struct wla_fb *fb = take(f->in, 3) ? fuzz_fb(f) : NULL;
			if (on && seq < MAX_SEQ) {
				f->frame[seq] = true;
				f->commit_ns[seq] = f->now;
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
		case 7: {
			struct wla_capture *cap = wla_vdc_capture(out, capture_done, f);
			if (cap && take(f->in, 3) == 0) {
				wla_vdc_capture_cancel(cap);
			}
			break;
		}
		case 8: {
			/* A client lets go of its buffer. */
			size_t i = take(f->in, N_FBS);
			if (f->fbs[i] && f->fbs[i]->held) {
				f->fbs[i]->held = false;
				struct ffb *fb = f->fbs[i];
				/* Not ours any more: forget it, the states keep it. */
				f->fbs[i] = NULL;
				wla_fb_put(&fb->base);
			}
			break;
		}
		case 9:
			f->handler_commits = (int)take(f->in, 4);
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
		}
		check_invariants(f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_init();
	struct input in = { .data = data, .size = size };
	struct fuzz *f = calloc(1, sizeof(*f));
	g = f;
	f->in = &in;
	f->now = UINT64_C(1000000000);
	f->next_seq = 1;
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.n_outputs = 2;
	for (size_t i = 0; i < 2; i++) {
		snprintf(cfg.outputs[i].name, sizeof(cfg.outputs[i].name), "F-%zu", i);
		cfg.outputs[i].modes[0] = (struct wla_config_mode){ 64, 48, 60000 };
		cfg.outputs[i].modes[1] = (struct wla_config_mode){ 32, 32, 30000 };
		cfg.outputs[i].n_modes = 2;
	}
	cfg.overlay_planes = 1;
	cfg.cursor_size = 64;
	f->vdc = wla_vdc_create(NULL, &cfg, fuzz_clock, f);
	CHECK(f->vdc);
	for (size_t i = 0; i < 2; i++) {
		struct wla_crtc *crtc = &f->vdc->outputs[i]->crtc;
		crtc->present = present_handler;
		crtc->present_data = f;
		crtc->queue_depth = 1 + take(&in, 3);
		crtc->mailbox = take(&in, 2);
	}
	run(f);
	/* Turn everything off while handlers listen: every frame accepted has
	 * had exactly one event by then. */
	f->handler_commits = 0;
	for (size_t i = 0; i < 2; i++) {
		wla_crtc_force_off(&f->vdc->outputs[i]->crtc);
	}
	check_invariants(f);
	for (uint64_t s = 0; s < f->next_seq && s < MAX_SEQ; s++) {
		CHECK(!f->frame[s] || f->events[s] == 1);
	}
	CHECK(f->vdc->dev.live_states == 0);
	wla_vdc_destroy(f->vdc);
	for (size_t i = 0; i < N_FBS; i++) {
		if (f->fbs[i]) {
			CHECK(f->fbs[i]->locks == 0);
			wla_fb_put(&f->fbs[i]->base);
		}
	}
	for (size_t i = 0; i < N_FBS; i++) {
		CHECK(f->fbs[i] == NULL);
	}
	free(f);
	g = NULL;
	return 0;
}
