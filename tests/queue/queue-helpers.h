/*
 * Helpers for the flip queue tests: fake framebuffers that count their
 * scanout references, a VDC on an injected clock (vblanks happen only when a
 * test advances the clock), nonblocking commits built step by step, a
 * recorder of present events, lock-count oracles computed from what the VDC
 * scans out and queues, and a reference model of the queue and the VDC's
 * vblanks written from the rules.
 */
#ifndef TESTS_QUEUE_HELPERS_H
#define TESTS_QUEUE_HELPERS_H

#include <drm_fourcc.h>
#include <errno.h>
#include <inttypes.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include "backend/atomic.h"
#include "backend/vdc.h"
#include "harness.h"
#include "util.h"
#include "lib/vblank-grid.h"
#include "lib/fake-fb.h"
#include "lib/legacy.h"
#include "lib/vdc-fixture.h"

#define QW 64
#define QH 48
#define SMALL 32
#define MHZ_60 60000
#define MHZ_30 30000
#define MODE_60 { QW, QH, MHZ_60 }
#define MODE_30 { SMALL, SMALL, MHZ_30 }
/* The VDC's timing of a configured mode. */
static inline struct wla_mode qf_mode(struct wla_config_mode m)
{
	struct wla_mode mode;
	if (!wla_mode_cvt_exact(&mode, m.width, m.height, m.refresh_mhz)) {
		abort();
	}
	return mode;
}
#define QMODE(...) qf_mode((struct wla_config_mode)__VA_ARGS__)
/* What present events report as refresh_ns: 1e12 / refresh rounded. The
 * vblanks themselves are on the exact grid (vblank-grid.h). */
#define PERIOD_60 UINT64_C(16666667)
#define PERIOD_30 UINT64_C(33333333)
#define T0 UINT64_C(1000000000)

/* Fake framebuffers (tests/lib/fake-fb.h) with their probes in a table: the
 * record outlives the fb, so a test can see that an fb was destroyed. */

#define MAX_FAKE_FBS 64

static struct fake_fb_probe fake_recs[MAX_FAKE_FBS];
static int fake_n;

static inline void fake_reset(void)
{
	memset(fake_recs, 0, sizeof(fake_recs));
	fake_n = 0;
}

/* Cleanups without a lock and fbs freed with locks, over every fake fb. */
static inline int fake_bad_cleanups(void)
{
	int n = 0;
	for (int i = 0; i < fake_n; i++) {
		n += fake_recs[i].bad_cleanups;
	}
	return n;
}

/* A w x h fb of one colour; the caller owns the one wrapper reference. */
static inline struct wla_fb *fake_fb_new(uint32_t w, uint32_t h, uint32_t format,
	uint32_t color)
{
	if (fake_n == MAX_FAKE_FBS) {
		fprintf(stderr, "too many fake fbs\n");
		abort();
	}
	struct wla_fb *fb = fake_fb_create(w, h, format, color, &fake_recs[fake_n++]);
	if (!fb) {
		fprintf(stderr, "out of memory for a fake fb\n");
		abort();
	}
	return fb;
}

static inline struct wla_fb *qf_screen_fb(uint32_t color)
{
	return fake_fb_new(QW, QH, DRM_FORMAT_XRGB8888, color);
}

static inline struct fake_fb_probe *rec_of(struct wla_fb *fb)
{
	return fake_fb_from_fb(fb)->probe;
}

static inline int locks_of(struct wla_fb *fb)
{
	return rec_of(fb)->locks;
}

/* Drop the creator's reference (the client is gone). */
static inline void fake_drop(struct wla_fb *fb)
{
	wla_fb_put(fb);
}

/* Present events */

/* A VDC with one output (modes 64x48@60 and 32x32@30, one overlay plane,
 * a 64x64 cursor) on f's clock, nothing enabled: the tests' one VDC
 * fixture (lib/vdc-fixture.h) with the queue's configuration. */
static inline bool qf_init(struct fixture *f, uint32_t depth, bool mailbox)
{
	memset(f, 0, sizeof(*f));
	fake_reset();
	wla_config_init(&f->cfg);
	f->cfg.outputs[0].modes[0] = (struct wla_config_mode)MODE_60;
	f->cfg.outputs[0].modes[1] = (struct wla_config_mode)MODE_30;
	f->cfg.outputs[0].modes[2] = (struct wla_config_mode){ QW, QH, 59940 };
	f->cfg.outputs[0].n_modes = 3;
	f->cfg.overlay_planes = 1;
	f->cfg.cursor_size = 64;
	f->cfg.flip_depth = depth;
	f->cfg.flip_mailbox = mailbox;
	return fixture_setup_config_at(f, T0);
}

static inline void qf_finish(struct fixture *f)
{
	wla_vdc_destroy(f->vdc);
	f->vdc = NULL;
	CHECK_INT(fake_bad_cleanups(), 0);
	for (int i = 0; i < fake_n; i++) {
		if (fake_recs[i].locks != 0 || !fake_recs[i].destroyed) {
			fprintf(stderr, "  fake fb %d: %d locks, destroyed %d at the end\n", i,
				fake_recs[i].locks, fake_recs[i].destroyed);
			harness_test_failures++;
		}
	}
}

static inline void qf_clear_events(struct fixture *f)
{
	f->n_events = 0;
}

/* Turn the CRTC on with fb full screen (blocking set_config): it latches at
 * the next vblank with commit_seq seq. */
static inline int qf_enable_mode(struct fixture *f, struct wla_mode mode, struct wla_fb *fb,
	uint64_t seq)
{
	int ret = wla_atomic_set_config(f->crtc, &f->out->connector, &mode, fb, seq);
	if (ret == 0) {
		f->epoch = f->now;
	}
	return ret;
}

static inline int qf_enable(struct fixture *f, struct wla_fb *fb, uint64_t seq)
{
	return qf_enable_mode(f, QMODE(MODE_60), fb, seq);
}

static inline int qf_disable(struct fixture *f)
{
	return wla_atomic_set_config(f->crtc, &f->out->connector, NULL, NULL, 0);
}

/* Let the clock read t and run the vblank processing. */
static inline void qf_advance_to(struct fixture *f, uint64_t t)
{
	fixture_advance_to(f, t);
}

/* The time of the k-th vblank (k >= 1) of the 60 Hz timing started by the
 * last enable. */
static inline uint64_t qf_vblank_ns(const struct fixture *f, uint64_t k)
{
	return vblank_grid_ns(f->epoch, MHZ_60, k);
}

/* The clock onto that vblank, exactly. */
static inline void qf_vblank(struct fixture *f, uint64_t k)
{
	qf_advance_to(f, qf_vblank_ns(f, k));
}

/* qf_enable with commit_seq 1, then the clock at vblank 1, where fb
 * latched; qf_enable's result. */
static inline int qf_enable_latched(struct fixture *f, struct wla_fb *fb)
{
	int ret = qf_enable(f, fb, 1);
	qf_vblank(f, 1);
	return ret;
}

/* Building a commit */

static inline struct wla_atomic_state *qf_begin(struct fixture *f, uint64_t seq, bool frame)
{
	return test_state(f->dev, f->crtc, seq, frame);
}

/* fb at (x, y) unscaled on plane, or the plane off with fb NULL. */
static inline void qf_plane(struct fixture *f, struct wla_atomic_state *state,
	struct wla_plane *plane, struct wla_fb *fb, int32_t x, int32_t y)
{
	test_put(state, f->crtc, plane, fb, x, y);
}

/* Commit through the flip queue; the state is freed if refused. */
static inline int qf_commit(struct wla_atomic_state *state)
{
	return test_commit_nonblocking(state);
}

/* A nonblocking page flip: fb on the primary plane, a frame with seq. */
static inline int qf_flip(struct fixture *f, struct wla_fb *fb, uint64_t seq)
{
	return test_flip(f->dev, f->crtc, fb, seq);
}

/* What the output shows now, at (x, y). */
static inline uint32_t qf_pixel(struct fixture *f, uint32_t x, uint32_t y)
{
	struct wla_image *image = wla_vdc_compose(f->out);
	if (!image) {
		return 0xdeadbeef;
	}
	uint32_t px = x < image->width && y < image->height ? wla_image_pixel(image, x, y) :
		0xdeadbeef;
	wla_image_destroy(image);
	return px;
}

/* Lock oracles */

static inline void add_unique(const struct wla_plane_state **set, size_t *n,
	const struct wla_plane_state *ps)
{
	if (!ps || !ps->fb) {
		return;
	}
	for (size_t i = 0; i < *n; i++) {
		if (set[i] == ps) {
			return;
		}
	}
	set[(*n)++] = ps;
}

#define MAX_LIVE_PLANE_STATES 512

/* Whether a plane state a queued state swapped in still exists, decided
 * without reading it: the plane's current state, or replaced by a state
 * still queued (which owns it until it completes). A plane that stays off
 * may be replaced by a state that completes at once while the driver holds
 * the state that turned it off (the ordering rule only waits for states
 * the driver has not been handed); that state's plane state is then gone. */
static inline bool plane_state_exists(struct fixture *f, const struct wla_plane_state *ps,
	const struct wla_plane *plane)
{
	if (plane->state == ps) {
		return true;
	}
	for (size_t c = 0; c < f->dev->n_crtcs; c++) {
		struct wla_crtc_entry *e;
		wl_list_for_each(e, &f->dev->crtcs[c]->queue, link) {
			if (e->state->planes[plane->index].ptr &&
					e->state->planes[plane->index].old_state == ps) {
				return true;
			}
		}
	}
	return false;
}

/*
 * The hardware's view: every plane state the VDC scans out or has in its
 * shadow registers, those the queued states will program, and the current
 * ones. With every plane state visible this is exactly the set of plane
 * states that must hold a scanout reference. want[i] gets the count per
 * fake fb record. A state still waiting for the driver must have all its
 * plane states (the driver has yet to read them): a missing one is a
 * failure.
 */
static inline void locks_from_scanout(struct fixture *f, int want[MAX_FAKE_FBS])
{
	const struct wla_plane_state *set[MAX_LIVE_PLANE_STATES];
	size_t n = 0;
	struct wla_vdc_output *out = f->out;
	for (size_t p = 0; p < WLA_VDC_PLANES; p++) {
		add_unique(set, &n, out->scanout.planes[p]);
		add_unique(set, &n, out->shadow.planes[p]);
	}
	for (size_t i = 0; i < f->dev->n_planes; i++) {
		add_unique(set, &n, f->dev->planes[i]->state);
	}
	struct wla_crtc_entry *e;
	wl_list_for_each(e, &f->crtc->queue, link) {
		wla_for_each_plane_in_state(e->state, pe) {
			if (plane_state_exists(f, pe->new_state, pe->ptr)) {
				add_unique(set, &n, pe->new_state);
			} else if (e->stage == WLA_QUEUE_WAITING) {
				fprintf(stderr, "  commit_seq %" PRIu64 " waits for the driver "
					"but its %s state is gone\n", e->commit_seq,
					pe->ptr->name);
				harness_test_failures++;
			}
		}
	}
	memset(want, 0, sizeof(int) * MAX_FAKE_FBS);
	for (size_t i = 0; i < n; i++) {
		want[rec_of(set[i]->fb) - fake_recs]++;
	}
}

/* The core's view: current plane states and the replaced ones that commits
 * still waiting to latch keep until they do. */
static inline void locks_from_states(struct fixture *f, int want[MAX_FAKE_FBS])
{
	const struct wla_plane_state *set[MAX_LIVE_PLANE_STATES];
	size_t n = 0;
	for (size_t i = 0; i < f->dev->n_planes; i++) {
		add_unique(set, &n, f->dev->planes[i]->state);
	}
	for (size_t c = 0; c < f->dev->n_crtcs; c++) {
		struct wla_crtc_entry *e;
		wl_list_for_each(e, &f->dev->crtcs[c]->queue, link) {
			wla_for_each_plane_in_state(e->state, pe) {
				add_unique(set, &n, pe->old_state);
			}
		}
	}
	memset(want, 0, sizeof(int) * MAX_FAKE_FBS);
	for (size_t i = 0; i < n; i++) {
		want[rec_of(set[i]->fb) - fake_recs]++;
	}
}

/* Pending commits of the CRTC (each holds one live atomic state here). */
static inline size_t qf_pending(struct fixture *f)
{
	return (size_t)wl_list_length(&f->crtc->queue);
}

/* Seeded randomness: WLA_TEST_SEED=<n> replays a run; the seed is printed
 * either way. */

static uint64_t rng_state;

/* splitmix64 */
static inline uint64_t rng_next(void)
{
	uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline uint64_t rng_below(uint64_t n)
{
	return rng_next() % n;
}

static inline uint64_t test_seed(const char *test)
{
	const char *env = getenv("WLA_TEST_SEED");
	uint64_t seed;
	if (env) {
		seed = strtoull(env, NULL, 0);
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * UINT64_C(1000000007) + (uint64_t)ts.tv_nsec;
	}
	printf("# %s: seed %" PRIu64 " (WLA_TEST_SEED=%" PRIu64 " to replay)\n", test, seed,
		seed);
	fflush(stdout);
	return seed;
}

/* Checks shared by the tests */

#define VSYNC_FLAGS (WLA_PRESENT_VSYNC | WLA_PRESENT_HW_CLOCK | WLA_PRESENT_HW_COMPLETION)

/* Event i, or NULL after recording a failure if there are fewer. */
static inline const struct fixture_event *event_at(const struct fixture *f, size_t i)
{
	if (i >= f->n_events) {
		fprintf(stderr, "  event %zu missing (%zu events)\n", i, f->n_events);
		harness_test_failures++;
		return NULL;
	}
	return &f->events[i];
}

static inline void check_event(const struct fixture *f, size_t i, uint64_t commit_seq, bool presented,
	uint64_t seq, uint64_t when, uint64_t refresh)
{
	const struct fixture_event *e = event_at(f, i);
	if (!e) {
		return;
	}
	CHECK_INT(e->commit_seq, commit_seq);
	CHECK_INT(e->presented, presented);
	CHECK_INT(e->discarded, false);
	if (presented) {
		CHECK_INT(e->seq, seq);
		CHECK_INT(e->when_ns, when);
		CHECK_INT(e->refresh_ns, refresh);
		CHECK_INT(e->flags, VSYNC_FLAGS);
	}
}

static inline void check_discarded(const struct fixture *f, size_t i, uint64_t commit_seq)
{
	const struct fixture_event *e = event_at(f, i);
	if (!e) {
		return;
	}
	CHECK_INT(e->commit_seq, commit_seq);
	CHECK_INT(e->presented, false);
	CHECK_INT(e->discarded, true);
}

/* Both oracles agree with the fake fbs' lock counts. */
static inline void check_oracles(struct fixture *f)
{
	int a[MAX_FAKE_FBS], b[MAX_FAKE_FBS];
	locks_from_scanout(f, a);
	locks_from_states(f, b);
	for (int i = 0; i < fake_n; i++) {
		if (fake_recs[i].locks != a[i] || fake_recs[i].locks != b[i]) {
			fprintf(stderr, "  fake fb %d: %d locks, scanout view %d, state view %d\n",
				i, fake_recs[i].locks, a[i], b[i]);
			harness_test_failures++;
		}
	}
}

/* A mode change on a CRTC that is on, as a frame through the queue. */
static inline int qf_modeset(struct fixture *f, struct wla_mode mode, struct wla_fb *fb, uint64_t seq)
{
	struct wla_atomic_state *state = qf_begin(f, seq, true);
	state->allow_modeset = true;
	wla_atomic_get_crtc_state(state, f->crtc)->mode = mode;
	qf_plane(f, state, f->crtc->primary, fb, 0, 0);
	return qf_commit(state);
}

/*
 * A reference model of one CRTC's flip queue on the VDC, written from the
 * rules (not from the VDC's code) with the grid of vblank-grid.h: states
 * latch at the first vblank that starts at least the slack after they were
 * committed, one armed frame at a time, non-frames (cursor updates) armed
 * at once and written over by the frame after them (rearm) if it still
 * makes their vblank (else it waits for their latch), a late wake-up
 * replaying every vblank that passed, a vblank missed only by a state
 * committed before it but within the slack (armed, or waiting behind
 * non-frames it came too late to be written over).
 */

#define QM_MAX 16
#define QM_MAX_EVENTS 64

struct qm_entry {
	uint64_t commit_seq;
	uint64_t commit_ns;
	bool frame;
	bool armed;
};

struct qm_present {
	uint64_t commit_seq;
	uint64_t seq, when_ns;
};

struct qmodel {
	uint64_t epoch;
	int32_t mhz;
	uint64_t slack;
	bool on;
	uint64_t processed; /* index of the last vblank the driver looked at */
	uint64_t armed_ns;  /* the last write of the armed states */
	struct qm_entry q[QM_MAX];
	size_t n;
	/* The driver's counters. */
	uint64_t seq, vblanks, missed, latched;
	/* Presents the replay produced, for the test to compare and clear. */
	struct qm_present ev[QM_MAX_EVENTS];
	size_t n_ev;
	bool overflow;
};

static inline uint64_t qm_vblank_ns(const struct qmodel *m, uint64_t k)
{
	return vblank_grid_ns(m->epoch, m->mhz, k);
}

static inline size_t qm_armed(const struct qmodel *m)
{
	size_t n = 0;
	for (size_t i = 0; i < m->n; i++) {
		n += m->q[i].armed;
	}
	return n;
}

static inline size_t qm_frames(const struct qmodel *m, bool waiting_only)
{
	size_t n = 0;
	for (size_t i = 0; i < m->n; i++) {
		n += m->q[i].frame && !(waiting_only && m->q[i].armed);
	}
	return n;
}

/* The vblanks up to index k (the driver's wake-up, or its catch-up). */
static inline void qm_replay(struct qmodel *m, uint64_t k)
{
	while (m->on && m->processed < k) {
		if (qm_armed(m) == 0) {
			m->seq += k - m->processed;
			m->vblanks += k - m->processed;
			m->processed = k;
			break;
		}
		uint64_t j = ++m->processed;
		uint64_t t = qm_vblank_ns(m, j);
		m->seq++;
		m->vblanks++;
		if (m->armed_ns + m->slack > t) {
			/* Only a frame misses a vblank (not a cursor update). */
			bool armed_frame = false;
			for (size_t i = 0; i < m->n; i++) {
				armed_frame |= m->q[i].armed && m->q[i].frame;
			}
			m->missed += armed_frame && m->armed_ns < t;
			continue;
		}
		m->latched++;
		bool latched_frame = false;
		while (m->n > 0 && m->q[0].armed) {
			latched_frame |= m->q[0].frame;
			if (m->q[0].frame) {
				if (m->n_ev == QM_MAX_EVENTS) {
					m->overflow = true;
				} else {
					m->ev[m->n_ev++] = (struct qm_present){
						.commit_seq = m->q[0].commit_seq,
						.seq = m->seq,
						.when_ns = t,
					};
				}
			}
			memmove(&m->q[0], &m->q[1], (m->n - 1) * sizeof(m->q[0]));
			m->n--;
		}
		/* The next waiting state goes to the driver at the latch. */
		if (m->n > 0) {
			m->q[0].armed = true;
			m->armed_ns = m->q[0].commit_ns;
			m->missed += !latched_frame && m->q[0].frame && m->armed_ns < t;
		}
	}
}

static inline void qm_advance(struct qmodel *m, uint64_t now)
{
	qm_replay(m, vblank_grid_count(m->epoch, m->mhz, now));
}

/* A state committed at now joins the queue; the driver is handed it at
 * once if nothing waits ahead of it and no frame is armed. Returns whether
 * it was. */
static inline bool qm_commit(struct qmodel *m, uint64_t commit_seq, uint64_t now, bool frame)
{
	bool waiting = false, armed_frame = false;
	for (size_t i = 0; i < m->n; i++) {
		waiting |= !m->q[i].armed;
		armed_frame |= m->q[i].armed && m->q[i].frame;
	}
	bool arm = !waiting && !armed_frame;
	if (arm && qm_armed(m) > 0) {
		/* Written over armed non-frames only while that still makes the
		 * vblank they latch at. */
		uint64_t k = m->processed + 1;
		while (qm_vblank_ns(m, k) < m->armed_ns + m->slack) {
			k++;
		}
		arm = now + m->slack <= qm_vblank_ns(m, k);
	}
	if (arm) {
		/* Vblanks that passed before this write latched what the
		 * registers held then (nothing, or a non-frame armed in time). */
		qm_advance(m, now);
		m->armed_ns = qm_armed(m) > 0 && m->armed_ns > now ? m->armed_ns : now;
	}
	if (m->n == QM_MAX) {
		m->overflow = true;
		return false;
	}
	m->q[m->n++] = (struct qm_entry){
		.commit_seq = commit_seq,
		.commit_ns = now,
		.frame = frame,
		.armed = arm,
	};
	return arm;
}

/* Turned on at now by a blocking commit (a frame): a new timing. */
static inline void qm_enable(struct qmodel *m, int32_t mhz, uint64_t now, uint64_t commit_seq)
{
	m->epoch = now;
	m->mhz = mhz;
	m->on = true;
	m->processed = 0;
	m->n = 0;
	qm_commit(m, commit_seq, now, true);
}

/* Turned off: everything queued is cancelled. */
static inline void qm_disable(struct qmodel *m)
{
	m->on = false;
	m->n = 0;
}

static inline void qm_init(struct qmodel *m)
{
	memset(m, 0, sizeof(*m));
	m->slack = WLA_VDC_COMMIT_SLACK_NS;
}

/* Where a frame committed now would latch: on a copy, commit it and replay
 * until it has. */
static inline uint64_t qm_next_latch(const struct qmodel *m, uint64_t now)
{
	struct qmodel c = *m;
	c.n_ev = 0;
	const uint64_t probe = UINT64_MAX;
	qm_commit(&c, probe, now, true);
	for (uint64_t k = vblank_grid_count(c.epoch, c.mhz, now) + 1;; k++) {
		qm_replay(&c, k);
		if (c.n_ev > 0 && c.ev[c.n_ev - 1].commit_seq == probe) {
			return c.ev[c.n_ev - 1].when_ns;
		}
	}
}

/* The recorded events are exactly the model's presents, in order; then
 * both are cleared. false (with the difference printed) otherwise. */
static inline bool qm_check_events(struct fixture *f, struct qmodel *m, uint64_t refresh_ns,
	const char *where)
{
	bool ok = f->n_events == m->n_ev && !m->overflow;
	for (size_t i = 0; ok && i < m->n_ev; i++) {
		const struct fixture_event *e = &f->events[i];
		const struct qm_present *w = &m->ev[i];
		ok = e->presented && !e->discarded && e->commit_seq == w->commit_seq &&
			e->seq == w->seq && e->when_ns == w->when_ns &&
			e->refresh_ns == refresh_ns && e->flags == VSYNC_FLAGS;
	}
	if (!ok) {
		fprintf(stderr, "  %s: events (commit_seq presented seq when):", where);
		for (size_t i = 0; i < f->n_events; i++) {
			fprintf(stderr, " [%" PRIu64 " %d %" PRIu64 " %" PRIu64 "]",
				f->events[i].commit_seq, f->events[i].presented, f->events[i].seq,
				f->events[i].when_ns);
		}
		fprintf(stderr, "; want:");
		for (size_t i = 0; i < m->n_ev; i++) {
			fprintf(stderr, " [%" PRIu64 " 1 %" PRIu64 " %" PRIu64 "]",
				m->ev[i].commit_seq, m->ev[i].seq, m->ev[i].when_ns);
		}
		fprintf(stderr, "%s\n", m->overflow ? " (model overflow)" : "");
	}
	f->n_events = 0;
	m->n_ev = 0;
	return ok;
}

/* The VDC's counters and the core's queue are the model's. */
static inline bool qm_check_books(struct fixture *f, const struct qmodel *m, const char *where)
{
	const struct wla_vdc_output *out = f->out;
	bool ok = out->seq == m->seq && out->counters.seq == m->seq &&
		out->counters.vblanks == m->vblanks &&
		wla_crtc_missed(f->crtc, out->seq) == m->missed && f->crtc->latches == m->latched &&
		f->crtc->queued == m->n &&
		f->crtc->armed == qm_armed(m) && f->crtc->pending_frames == qm_frames(m, false) &&
		f->crtc->waiting_frames == qm_frames(m, true);
	if (!ok) {
		fprintf(stderr, "  %s: seq %" PRIu64 "/%" PRIu64 " vblanks %" PRIu64 " missed %"
			PRIu64 " latched %" PRIu64 ", queued %u armed %u frames %u waiting %u; "
			"want seq %" PRIu64 " vblanks %" PRIu64 " missed %" PRIu64 " latched %"
			PRIu64 ", queued %zu armed %zu frames %zu waiting %zu\n", where, out->seq,
			out->counters.seq, out->counters.vblanks, wla_crtc_missed(f->crtc, out->seq),
			f->crtc->latches, f->crtc->queued, f->crtc->armed,
			f->crtc->pending_frames, f->crtc->waiting_frames, m->seq, m->vblanks,
			m->missed, m->latched, m->n, qm_armed(m), qm_frames(m, false),
			qm_frames(m, true));
	}
	return ok;
}

#endif
