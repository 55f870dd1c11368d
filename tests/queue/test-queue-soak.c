/*
 * A 10,000-frame soak on the injected clock: random frames (primary, overlay,
 * cursor planes), legacy cursor updates, vblank timings (on time, early,
 * late), depths 1..3 with and without mailbox, and the odd disable, each step
 * checked against a model of the queue: accepted, refused or replaced as the
 * model says, present events in order with the right sequence numbers, lock
 * counts equal to the references, live states bounded.
 *
 * WLA_TEST_SEED=<n> replays a run (the seed is printed), WLA_SOAK_TRACE=1
 * prints every step.
 */
#include <stdarg.h>
#include "queue-helpers.h"

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

/* The soak's model of one CRTC's flip queue. */

#define SOAK_FRAMES 10000
#define SOAK_SCREEN_FBS 6
#define SOAK_OVERLAY_FBS 2
#define SOAK_CURSOR_FBS 2
#define MODEL_MAX 8

struct model_frame {
	uint64_t commit_seq;
	bool cursor; /* changes the cursor plane */
};

struct soak {
	struct qf f;
	struct wla_fb *screen[SOAK_SCREEN_FBS];
	struct wla_fb *overlay[SOAK_OVERLAY_FBS];
	struct wla_fb *cursor[SOAK_CURSOR_FBS];
	bool enabled;
	struct model_frame q[MODEL_MAX];
	size_t n_q;
	uint64_t next_seq;
	uint64_t next_index; /* of the next vblank since the last enable */
	uint64_t vdc_seq;
	uint64_t vblanks, missed, presented, discarded, cancelled, refused;
	unsigned amendments; /* cursor updates since the last vblank */
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

static void model_pop(struct soak *s)
{
	memmove(&s->q[0], &s->q[1], (s->n_q - 1) * sizeof(s->q[0]));
	s->n_q--;
}

static void soak_enable(struct soak *s)
{
	struct qf *f = &s->f;
	uint64_t seq = s->next_seq++;
	if (qf_enable(f, s->screen[rng_below(SOAK_SCREEN_FBS)], seq) != 0) {
		soak_fail(s, "enable refused");
		return;
	}
	s->enabled = true;
	s->q[0] = (struct model_frame){ .commit_seq = seq };
	s->n_q = 1;
	s->next_index = 1;
	s->amendments = 0;
	if (f->n_events != 0) {
		soak_fail(s, "events at enable");
	}
}

static void soak_frame(struct soak *s)
{
	struct qf *f = &s->f;
	uint64_t seq = s->next_seq++;
	struct wla_atomic_state *state = qf_begin(f, seq, true);
	qf_plane(f, state, f->crtc->primary, s->screen[rng_below(SOAK_SCREEN_FBS)], 0, 0);
	if (rng_below(4) == 0) {
		struct wla_fb *fb = rng_below(4) ? s->overlay[rng_below(SOAK_OVERLAY_FBS)] : NULL;
		qf_plane(f, state, &f->out->overlays[0], fb, (int32_t)rng_below(QW - 8 + 1),
			(int32_t)rng_below(QH - 8 + 1));
	}
	bool cursor = rng_below(10) == 0;
	if (cursor) {
		struct wla_fb *fb = rng_below(4) ? s->cursor[rng_below(SOAK_CURSOR_FBS)] : NULL;
		qf_plane(f, state, f->crtc->cursor, fb, (int32_t)rng_below(QW - 16 + 1),
			(int32_t)rng_below(QH - 16 + 1));
	}
	soak_trace("%zu: frame %" PRIu64 "%s (queued %zu, depth %u%s)\n", s->step, seq,
		cursor ? " with cursor" : "", s->n_q, f->crtc->queue_depth,
		f->crtc->mailbox ? ", mailbox" : "");
	unsigned depth = f->crtc->queue_depth;
	bool replace = s->n_q >= depth && f->crtc->mailbox;
	bool accept = s->n_q < depth || replace;
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
	if (replace) {
		struct model_frame *victim = &s->q[s->n_q - 1];
		if (f->n_events != 1 || f->events[0].commit_seq != victim->commit_seq ||
				f->events[0].presented || !f->events[0].discarded) {
			soak_fail(s, "the replaced frame was not reported discarded at once");
		}
		s->discarded++;
		/* The replacement takes over the planes of the frame it replaces. */
		victim->commit_seq = seq;
		victim->cursor |= cursor;
	} else {
		if (f->n_events != 0) {
			soak_fail(s, "events from a queued frame");
		}
		s->q[s->n_q++] = (struct model_frame){ .commit_seq = seq, .cursor = cursor };
	}
}

static void soak_cursor(struct soak *s)
{
	struct qf *f = &s->f;
	if (s->amendments >= 2) {
		return;
	}
	bool busy = false;
	for (size_t i = 0; i < s->n_q; i++) {
		busy |= s->q[i].cursor;
	}
	int ret;
	if (rng_below(8) == 0) {
		ret = wla_atomic_disable_plane(f->crtc->cursor);
	} else {
		struct wla_fb *fb = s->cursor[rng_below(SOAK_CURSOR_FBS)];
		ret = move_cursor(f, fb, (int32_t)rng_below(QW - 16 + 1),
			(int32_t)rng_below(QH - 16 + 1));
	}
	soak_trace("%zu: cursor update -> %d\n", s->step, ret);
	if (ret != (busy ? -EBUSY : 0)) {
		soak_fail(s, "cursor update: unexpected result");
	}
	if (ret == 0) {
		s->amendments++;
	}
	if (f->n_events != 0) {
		soak_fail(s, "events from a cursor update");
	}
}

static void soak_advance(struct soak *s)
{
	struct qf *f = &s->f;
	uint64_t due = qf_vblank_ns(f, s->next_index);
	uint64_t t;
	switch (rng_below(6)) {
	case 0:
		t = due; /* a wake-up right on time */
		break;
	case 1:
		t = due - 1 - rng_below(PERIOD_60 / 2); /* too early */
		break;
	case 2:
		t = due + PERIOD_60 + rng_below(3 * PERIOD_60); /* late: missed vblanks */
		break;
	default:
		t = due + rng_below(PERIOD_60);
		break;
	}
	if (t < f->now) {
		t = f->now;
	}
	qf_advance_to(f, t);
	uint64_t index = vblank_grid_count(f->epoch, MHZ_60, t);
	soak_trace("%zu: advance to vblank index %" PRIu64 " (next %" PRIu64 ")\n", s->step,
		index, s->next_index);
	if (index < s->next_index) {
		if (f->n_events != 0) {
			soak_fail(s, "an event before the vblank");
		}
		return;
	}
	uint64_t passed = index - s->next_index + 1;
	s->vblanks += passed;
	s->missed += passed - 1;
	s->vdc_seq += passed;
	s->next_index = index + 1;
	s->amendments = 0;
	if (s->n_q == 0) {
		if (f->n_events != 0) {
			soak_fail(s, "an event with nothing queued");
		}
		return;
	}
	const struct ev *e = &f->events[0];
	if (f->n_events != 1 || e->commit_seq != s->q[0].commit_seq || !e->presented ||
			e->discarded || e->seq != s->vdc_seq ||
			e->when_ns != qf_vblank_ns(f, index) || e->refresh_ns != PERIOD_60) {
		soak_fail(s, "the vblank did not present the oldest queued frame");
		if (f->n_events > 0) {
			fprintf(stderr, "    got commit_seq %" PRIu64 " seq %" PRIu64 " when %"
				PRIu64 ", want %" PRIu64 " %" PRIu64 " %" PRIu64 " (%zu events)\n",
				e->commit_seq, e->seq, e->when_ns, s->q[0].commit_seq, s->vdc_seq,
				qf_vblank_ns(f, index), f->n_events);
		}
	}
	s->presented++;
	model_pop(s);
}

static void soak_disable(struct soak *s)
{
	struct qf *f = &s->f;
	if (qf_disable(f) != 0) {
		soak_fail(s, "disable refused");
		return;
	}
	if (f->n_events != s->n_q) {
		soak_fail(s, "disable did not report every queued frame");
	}
	for (size_t i = 0; i < f->n_events && i < s->n_q; i++) {
		if (f->events[i].commit_seq != s->q[i].commit_seq || f->events[i].presented ||
				f->events[i].discarded) {
			soak_fail(s, "disable reported the queue out of order or presented");
		}
	}
	s->cancelled += s->n_q;
	s->n_q = 0;
	s->enabled = false;
	if (f->dev->live_states != 0) {
		soak_fail(s, "states left after disable");
	}
}

static void soak_check(struct soak *s)
{
	struct qf *f = &s->f;
	int a[MAX_FAKE_FBS], b[MAX_FAKE_FBS];
	locks_from_scanout(f, a);
	locks_from_states(f, b);
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
	if (f->crtc->pending_frames != s->n_q) {
		soak_fail(s, "pending_frames differs from the model");
	}
	/* Live states: the queued frames, the cursor updates waiting for the next
	 * vblank, nothing else. */
	size_t pending = qf_pending(f);
	if (f->dev->live_states != pending || pending > s->n_q + s->amendments ||
			pending > 3 + 2) {
		soak_fail(s, "live states grow");
		fprintf(stderr, "    live %zu pending %zu queued %zu amendments %u\n",
			f->dev->live_states, pending, s->n_q, s->amendments);
	}
	if (fake_bad_cleanups) {
		soak_fail(s, "a cleanup without a prepare");
	}
	qf_clear_events(f);
}

static void soak_of_10000_frames_keeps_locks_equal_to_references(void)
{
	rng_state = test_seed(__func__);
	trace = getenv("WLA_SOAK_TRACE") != NULL;
	struct soak s = { .next_seq = 1 };
	struct qf *f = &s.f;
	CHECK(qf_init(f, 2, false));
	for (size_t i = 0; i < SOAK_SCREEN_FBS; i++) {
		s.screen[i] = screen_fb(0xff000000 | (uint32_t)(i * 0x111111));
	}
	for (size_t i = 0; i < SOAK_OVERLAY_FBS; i++) {
		s.overlay[i] = fake_fb_create(8, 8, DRM_FORMAT_XRGB8888, 0xff808000 + (uint32_t)i);
	}
	for (size_t i = 0; i < SOAK_CURSOR_FBS; i++) {
		s.cursor[i] = fake_fb_create(16, 16, DRM_FORMAT_ARGB8888, 0xffff0000 + (uint32_t)i);
	}
	size_t frames = 0;
	while (frames < SOAK_FRAMES && !s.failed) {
		s.step++;
		if (!s.enabled) {
			soak_enable(&s);
		} else {
			uint64_t r = rng_below(1000);
			if (r < 400) {
				soak_frame(&s);
				frames++;
			} else if (r < 550) {
				soak_cursor(&s);
			} else if (r < 970) {
				soak_advance(&s);
			} else if (r < 997) {
				f->crtc->queue_depth = 1 + (unsigned)rng_below(3);
				f->crtc->mailbox = rng_below(2);
			} else {
				soak_disable(&s);
			}
		}
		soak_check(&s);
	}
	printf("# %zu steps: %" PRIu64 " presented, %" PRIu64 " discarded, %" PRIu64
		" cancelled, %" PRIu64 " refused, %" PRIu64 " vblanks (%" PRIu64 " missed)\n",
		s.step, s.presented, s.discarded, s.cancelled, s.refused, s.vblanks, s.missed);
	CHECK_INT(frames, SOAK_FRAMES);
	CHECK(s.presented > SOAK_FRAMES / 4);
	CHECK(s.discarded > 0 && s.refused > 0 && s.cancelled > 0);
	CHECK_INT(f->out->counters.vblanks, s.vblanks);
	CHECK_INT(f->out->counters.missed, s.missed);
	CHECK_INT(f->out->counters.latched, s.presented);
	if (s.enabled) {
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
