/*
 * A 10,000-frame soak on the injected clock: random frames (primary, overlay,
 * cursor planes), legacy cursor updates and hides, vblank timings (on time,
 * early, late) and late timers (the clock past a vblank, commits before the
 * wake-up), depths 1..3 with and without mailbox, and the odd disable. Each
 * step is checked against the reference model of queue-helpers.h: accepted,
 * refused or replaced as the rules say, present events in order with their
 * own vblank's sequence number and time, the VDC's counters and the queue's
 * books, and after every step both lock oracles equal to the fake fbs' lock
 * counts, live states bounded.
 *
 * WLA_TEST_SEED=<n> replays a run (the seed is printed), WLA_SOAK_TRACE=1
 * prints every step. Frames are also written over a cursor update after a
 * vblank the VDC has not processed yet (they must not change how that
 * vblank is judged).
 */
#include <stdarg.h>
#include "queue-helpers.h"
#include "lib/legacy.h"

static bool trace;

/* WLA_SOAK_TRACE=1 prints every step of the soak. */
__attribute__((format(printf, 1, 2)))
static void soak_trace(const char *fmt, ...)
{
	if (!trace) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

#define SOAK_FRAMES 10000
#define SOAK_SCREEN_FBS 6
#define SOAK_OVERLAY_FBS 2
#define SOAK_CURSOR_FBS 2
/* Queued states at most: an armed cursor update, an armed frame and three
 * waiting (mailbox at depth 3). */
#define SOAK_MAX_QUEUED 5

struct soak {
	struct fixture f;
	struct qmodel m;
	/* Which queued entries of the model touch the cursor plane. */
	bool touches_cursor[QM_MAX];
	bool cursor_on; /* the cursor plane's current state shows it */
	struct wla_fb *screen[SOAK_SCREEN_FBS];
	struct wla_fb *overlay[SOAK_OVERLAY_FBS];
	struct wla_fb *cursor[SOAK_CURSOR_FBS];
	uint64_t next_seq;
	uint64_t presented, discarded, cancelled, refused, cursor_refused, hides_alone;
	uint64_t late_timers, rearms;
	size_t step;
	bool failed;
};

static void soak_fail(struct soak *s, const char *what)
{
	if (!s->failed) {
		fprintf(stderr, "  soak step %zu: %s\n", s->step, what);
	}
	s->failed = true;
	harness_test_failures++;
}

/* The model's queue changed shape: keep the cursor flags with it. */
static void model_dropped_front(struct soak *s, size_t n)
{
	memmove(&s->touches_cursor[0], &s->touches_cursor[n],
		(QM_MAX - n) * sizeof(s->touches_cursor[0]));
}

/* Advance the model to now; the flags follow the entries it completed. */
static void model_advance(struct soak *s, uint64_t now)
{
	size_t before = s->m.n;
	qm_advance(&s->m, now);
	model_dropped_front(s, before - s->m.n);
}

static void soak_enable(struct soak *s)
{
	struct fixture *f = &s->f;
	uint64_t seq = s->next_seq++;
	struct wla_fb *fb = s->screen[rng_below(SOAK_SCREEN_FBS)];
	soak_trace("%zu: enable %" PRIu64 "\n", s->step, seq);
	if (qf_enable(f, fb, seq) != 0) {
		soak_fail(s, "enable refused");
		return;
	}
	qm_enable(&s->m, MHZ_60, f->now, seq);
	s->touches_cursor[0] = false;
	if (f->n_events != 0) {
		soak_fail(s, "events at enable");
	}
}

static void soak_frame(struct soak *s)
{
	struct fixture *f = &s->f;
	uint64_t seq = s->next_seq++;
	struct wla_atomic_state *state = qf_begin(f, seq, true);
	qf_plane(f, state, f->crtc->primary, s->screen[rng_below(SOAK_SCREEN_FBS)], 0, 0);
	if (rng_below(4) == 0) {
		struct wla_fb *fb = rng_below(4) ? s->overlay[rng_below(SOAK_OVERLAY_FBS)] : NULL;
		qf_plane(f, state, &f->out->overlays[0], fb, (int32_t)rng_below(QW - 8 + 1),
			(int32_t)rng_below(QH - 8 + 1));
	}
	bool cursor = rng_below(10) == 0;
	bool cursor_fb = false;
	if (cursor) {
		struct wla_fb *fb = rng_below(4) ? s->cursor[rng_below(SOAK_CURSOR_FBS)] : NULL;
		cursor_fb = fb != NULL;
		qf_plane(f, state, f->crtc->cursor, fb, (int32_t)rng_below(QW - 16 + 1),
			(int32_t)rng_below(QH - 16 + 1));
	}
	struct qmodel *m = &s->m;
	unsigned depth = f->crtc->queue_depth;
	bool mailbox = f->crtc->mailbox;
	bool replace = mailbox && qm_frames(m, true) >= depth;
	bool accept = mailbox || qm_frames(m, false) < depth;
	soak_trace("%zu: frame %" PRIu64 "%s at %" PRIu64 " (queued %zu, depth %u%s)\n", s->step,
		seq, cursor ? " with cursor" : "", f->now, m->n, depth, mailbox ? ", mailbox" : "");
	harness_log_clear();
	int ret = qf_commit(state);
	if (!accept) {
		s->refused++;
		if (ret != -EBUSY || !LOGGED("crtc-0", "flip queue full")) {
			soak_fail(s, "a frame beyond the depth was not refused as queue full");
		}
		if (f->n_events != 0) {
			soak_fail(s, "events from a refused frame");
		}
		return;
	}
	if (ret != 0) {
		soak_fail(s, "a frame with room in the queue was refused");
		return;
	}
	bool touches = cursor;
	if (replace) {
		/* The newest waiting frame never reaches the screen; this one
		 * takes over its planes. */
		struct qm_entry *victim = &m->q[m->n - 1];
		if (victim->armed || !victim->frame) {
			soak_fail(s, "model: nothing to replace");
			return;
		}
		if (f->n_events != 1 || f->events[0].commit_seq != victim->commit_seq ||
				f->events[0].presented || !f->events[0].discarded) {
			soak_fail(s, "the replaced frame was not reported discarded at once");
		}
		s->discarded++;
		touches |= s->touches_cursor[m->n - 1];
		m->n--;
	} else if (f->n_events != 0) {
		soak_fail(s, "events from a queued frame");
	}
	bool rearm = qm_armed(m) > 0 && qm_frames(m, false) == 0 && m->n == qm_armed(m);
	size_t before = m->n;
	bool armed = qm_commit(m, seq, f->now, true);
	/* A catch-up before the write may have completed a cursor update. */
	model_dropped_front(s, before + 1 - m->n);
	s->touches_cursor[m->n - 1] = touches;
	s->rearms += rearm && armed;
	if (cursor) {
		s->cursor_on = cursor_fb;
	}
	f->n_events = 0;
}

static void soak_cursor(struct soak *s)
{
	struct fixture *f = &s->f;
	struct qmodel *m = &s->m;
	bool hide = rng_below(8) == 0;
	int ret;
	if (hide) {
		ret = wla_atomic_disable_plane(f->crtc->cursor);
	} else {
		struct wla_fb *fb = s->cursor[rng_below(SOAK_CURSOR_FBS)];
		ret = move_cursor(f, fb, (int32_t)rng_below(QW - 16 + 1),
			(int32_t)rng_below(QH - 16 + 1));
	}
	soak_trace("%zu: cursor %s at %" PRIu64 " -> %d (queued %zu)\n", s->step,
		hide ? (s->cursor_on ? "hide" : "hide (hidden)") : "update", f->now, ret, m->n);
	/* A cursor update is an ordinary blocking state on the cursor's CRTC:
	 * refused while anything is queued. Hiding a hidden cursor names no
	 * CRTC: it waits for nothing (done at once), unless a state the driver
	 * has not been handed changes the cursor plane. */
	int want;
	if (hide && !s->cursor_on) {
		bool waiting_owner = false;
		for (size_t i = 0; i < m->n; i++) {
			waiting_owner |= !m->q[i].armed && s->touches_cursor[i];
		}
		want = waiting_owner ? -EBUSY : 0;
		if (want == 0) {
			s->hides_alone++;
		}
	} else {
		want = m->n > 0 ? -EBUSY : 0;
		if (want == 0) {
			size_t before = m->n;
			qm_commit(m, 0, f->now, false);
			model_dropped_front(s, before + 1 - m->n);
			s->touches_cursor[m->n - 1] = true;
			s->cursor_on = !hide;
		}
	}
	if (ret != want) {
		fprintf(stderr, "    cursor %s: got %d, want %d\n", hide ? "hide" : "update", ret,
			want);
		soak_fail(s, "cursor update: unexpected result");
	}
	s->cursor_refused += ret == -EBUSY;
	if (f->n_events != 0) {
		soak_fail(s, "events from a cursor update");
	}
}

/* A wake-up at t: every vblank that passed, each latch with its own. */
static void soak_wake(struct soak *s, uint64_t t)
{
	struct fixture *f = &s->f;
	model_advance(s, t);
	s->presented += s->m.n_ev;
	soak_trace("%zu: wake-up at %" PRIu64 " (vblank %" PRIu64 "): %zu presents\n", s->step, t,
		s->m.processed, s->m.n_ev);
	qf_advance_to(f, t);
	if (!qm_check_events(f, &s->m, PERIOD_60, "wake-up")) {
		soak_fail(s, "the wake-up did not present the frames the rules say");
	}
}

/* A wake-up time around the next vblank. */
static uint64_t soak_time(struct soak *s)
{
	struct fixture *f = &s->f;
	uint64_t due = qm_vblank_ns(&s->m, s->m.processed + 1);
	uint64_t t;
	switch (rng_below(7)) {
	case 0:
		t = due; /* a wake-up right on time */
		break;
	case 1:
		t = due - 1 - rng_below(PERIOD_60 / 2); /* too early */
		break;
	case 2:
		t = due + PERIOD_60 + rng_below(3 * PERIOD_60); /* late: vblanks replayed */
		break;
	case 3:
		/* Within the slack before the next vblank: a commit now misses it. */
		t = due - 1 - rng_below(s->m.slack - 1);
		break;
	default:
		t = due + rng_below(PERIOD_60);
		break;
	}
	return t < f->now ? f->now : t;
}

static void soak_advance(struct soak *s)
{
	soak_wake(s, soak_time(s));
}

/* The timer fires late: the clock passes a vblank, frames and cursor
 * updates come in before the wake-up, then it comes. */
static void soak_late_timer(struct soak *s)
{
	struct fixture *f = &s->f;
	f->now = soak_time(s);
	s->late_timers++;
	soak_trace("%zu: the clock at %" PRIu64 ", no wake-up\n", s->step, f->now);
	for (uint64_t i = 1 + rng_below(3); i > 0 && !s->failed; i--) {
		if (rng_below(3) == 0) {
			soak_cursor(s);
		} else {
			soak_frame(s);
		}
	}
	soak_wake(s, f->now);
}

static void soak_disable(struct soak *s)
{
	struct fixture *f = &s->f;
	struct qmodel *m = &s->m;
	soak_trace("%zu: disable (queued %zu)\n", s->step, m->n);
	if (qf_disable(f) != 0) {
		soak_fail(s, "disable refused");
		return;
	}
	size_t frames = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (!m->q[i].frame) {
			continue;
		}
		if (frames >= f->n_events || f->events[frames].commit_seq != m->q[i].commit_seq ||
				f->events[frames].presented || f->events[frames].discarded) {
			soak_fail(s, "disable reported the queue out of order or presented");
			break;
		}
		frames++;
	}
	if (f->n_events != frames) {
		soak_fail(s, "disable did not report every queued frame once");
	}
	s->cancelled += frames;
	qm_disable(m);
	/* Its planes went off with it. */
	s->cursor_on = false;
	f->n_events = 0;
	if (f->dev->live_states != 0) {
		soak_fail(s, "states left after disable");
	}
}

static void soak_check(struct soak *s)
{
	struct fixture *f = &s->f;
	int a[MAX_FAKE_FBS], b[MAX_FAKE_FBS];
	int failures = harness_test_failures;
	locks_from_scanout(f, a);
	locks_from_states(f, b);
	if (harness_test_failures != failures) {
		soak_fail(s, "a waiting state lost a plane state");
	}
	for (int i = 0; i < fake_n; i++) {
		if (fake_recs[i].locks != a[i] || fake_recs[i].locks != b[i]) {
			if (!s->failed) {
				fprintf(stderr, "  fake fb %d: %d locks, referenced by %d "
					"(scanout) / %d (states)\n", i, fake_recs[i].locks, a[i],
					b[i]);
			}
			soak_fail(s, "lock count differs from the referencing states");
			break;
		}
	}
	if (!qm_check_books(f, &s->m, "books")) {
		soak_fail(s, "the queue or the counters differ from the model");
	}
	/* Live states: the queued ones (a frame, cursor updates), nothing
	 * else. */
	size_t pending = qf_pending(f);
	if (f->dev->live_states != pending || pending != s->m.n || pending > SOAK_MAX_QUEUED) {
		fprintf(stderr, "    live %zu pending %zu model %zu\n", f->dev->live_states,
			pending, s->m.n);
		soak_fail(s, "live states grow");
	}
	const struct wla_plane_state *cs = f->crtc->cursor->state;
	if (s->m.on && (cs->crtc != NULL) != s->cursor_on) {
		soak_fail(s, "the cursor plane's current state differs from the model");
	}
	if (fake_bad_cleanups()) {
		soak_fail(s, "a cleanup without a prepare");
	}
	if (f->n_events != 0) {
		soak_fail(s, "events nobody expected");
	}
	qf_clear_events(f);
}

static void soak_of_10000_frames_keeps_locks_equal_to_references(void)
{
	rng_state = test_seed(__func__);
	trace = getenv("WLA_SOAK_TRACE") != NULL;
	struct soak s = { .next_seq = 1 };
	struct fixture *f = &s.f;
	CHECK(qf_init(f, 2, false));
	qm_init(&s.m);
	for (size_t i = 0; i < SOAK_SCREEN_FBS; i++) {
		s.screen[i] = qf_screen_fb(0xff000000 | (uint32_t)(i * 0x111111));
	}
	for (size_t i = 0; i < SOAK_OVERLAY_FBS; i++) {
		s.overlay[i] = fake_fb_new(8, 8, DRM_FORMAT_XRGB8888, 0xff808000 + (uint32_t)i);
	}
	for (size_t i = 0; i < SOAK_CURSOR_FBS; i++) {
		s.cursor[i] = fake_fb_new(16, 16, DRM_FORMAT_ARGB8888, 0xffff0000 + (uint32_t)i);
	}
	size_t frames = 0;
	while (frames < SOAK_FRAMES && !s.failed) {
		s.step++;
		if (!s.m.on) {
			soak_enable(&s);
		} else {
			uint64_t r = rng_below(1000);
			if (r < 400) {
				soak_frame(&s);
				frames++;
			} else if (r < 550) {
				soak_cursor(&s);
			} else if (r < 900) {
				soak_advance(&s);
			} else if (r < 970) {
				soak_late_timer(&s);
			} else if (r < 997) {
				f->crtc->queue_depth = 1 + (unsigned)rng_below(3);
				f->crtc->mailbox = rng_below(2);
				soak_trace("%zu: depth %u%s\n", s.step, f->crtc->queue_depth,
					f->crtc->mailbox ? ", mailbox" : "");
			} else {
				soak_disable(&s);
			}
		}
		soak_check(&s);
	}
	printf("# %zu steps: %" PRIu64 " presented, %" PRIu64 " discarded, %" PRIu64
		" cancelled, %" PRIu64 " refused; cursor updates: %" PRIu64 " refused, %" PRIu64
		" hides of a hidden cursor done at once, %" PRIu64 " frames written over one; %"
		PRIu64 " late timers; %" PRIu64 " vblanks (%" PRIu64 " missed), %" PRIu64
		" latches\n", s.step, s.presented, s.discarded, s.cancelled, s.refused,
		s.cursor_refused, s.hides_alone, s.rearms, s.late_timers, s.m.vblanks, s.m.missed,
		s.m.latched);
	CHECK_INT(frames, SOAK_FRAMES);
	/* The run went through what it is about. */
	CHECK(s.presented > SOAK_FRAMES / 4);
	CHECK(s.discarded > 0 && s.refused > 0 && s.cancelled > 0);
	CHECK(s.cursor_refused > 0 && s.hides_alone > 0 && s.rearms > 0);
	CHECK(s.m.missed > 0 && s.late_timers > 0);
	CHECK_INT(f->out->counters.vblanks, s.m.vblanks);
	CHECK_INT(wla_crtc_missed(&f->out->crtc, f->out->seq), s.m.missed);
	CHECK_INT(f->out->crtc.latches, s.m.latched);
	if (s.m.on) {
		soak_disable(&s);
	}
	int locked = 0;
	for (int i = 0; i < fake_n; i++) {
		locked += fake_recs[i].locks;
	}
	CHECK_INT(locked, 0);
	CHECK_INT(f->dev->live_states, 0);
	for (size_t i = 0; i < SOAK_SCREEN_FBS; i++) {
		fake_drop(s.screen[i]);
	}
	for (size_t i = 0; i < SOAK_OVERLAY_FBS; i++) {
		fake_drop(s.overlay[i]);
	}
	for (size_t i = 0; i < SOAK_CURSOR_FBS; i++) {
		fake_drop(s.cursor[i]);
	}
	qf_finish(f);
}

int main(void)
{
	harness_init();
	RUN_TEST(soak_of_10000_frames_keeps_locks_equal_to_references);
	HARNESS_EXIT();
}
