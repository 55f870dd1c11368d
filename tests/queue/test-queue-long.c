/*
 * 59.94 Hz sequence accounting on the injected clock: a million vblanks with
 * late (and early) wake-ups, a frame committed from every present handler,
 * every sequence number, latch time and missed vblank checked against the
 * exact grid (vblank-grid.h): no drift however long the run.
 *
 * WLA_TEST_SEED=<n> replays a run; the seed is printed either way.
 */
#include "queue-helpers.h"

/* 59.94 Hz */

#define NTSC_MHZ 59940
#define LONG_VBLANKS UINT64_C(1000000)

struct ntsc {
	struct wla_fb *fb[2];
	uint64_t next_seq;
	uint64_t want_commit; /* the frame that latches next */
	unsigned flip;
	bool refused;
};

/* Like a compositor: the next frame as soon as the last one is on screen. */
static void ntsc_present(struct qf *f, const struct wla_present *ev)
{
	struct ntsc *n = f->hook_data;
	if (!ev->presented) {
		return;
	}
	n->flip ^= 1;
	uint64_t seq = n->next_seq++;
	if (qf_flip(f, n->fb[n->flip], seq) != 0) {
		n->refused = true;
	}
	n->want_commit = seq;
}

static void vblank_sequence_at_59_94_hz_counts_every_vblank_without_drift(void)
{
	rng_state = test_seed(__func__);
	struct qf f;
	CHECK(qf_init(&f, 1, false));
	struct ntsc n = { .next_seq = 2, .want_commit = 1 };
	n.fb[0] = screen_fb(0xff000010);
	n.fb[1] = screen_fb(0xff000020);
	f.hook = ntsc_present;
	f.hook_data = &n;
	/* What refresh_ns reports, computed here on its own: 1e12 / 59940
	 * rounded. Vblank k is not k of these but the exact rate rounded once,
	 * 16.68 us later by the millionth. */
	const uint64_t period = (UINT64_C(1000000000000) + NTSC_MHZ / 2) / NTSC_MHZ;
	CHECK_INT(period, 16683350);
	CHECK_INT(vblank_grid_ns(0, NTSC_MHZ, LONG_VBLANKS) - LONG_VBLANKS * period, 16683);
	f.now = T0 + 12345; /* an epoch that is not a round number */
	CHECK_INT(qf_enable_mode(&f, QMODE({ QW, QH, NTSC_MHZ }), n.fb[0], 1), 0);
	const uint64_t epoch = f.now;

	uint64_t next_k = 1, missed = 0, wakeups = 0, presents = 0, early = 0;
	/* Honest latching: the frame committed at commit_t latches at the
	 * first vblank at least the slack after it; a vblank between the commit
	 * and that one is a vblank the frame missed. */
	uint64_t commit_t = epoch, latch_k = 1, late_misses = 0;
	bool bad = false;
	while (next_k <= LONG_VBLANKS && !bad) {
		uint64_t due = vblank_grid_ns(epoch, NTSC_MHZ, next_k);
		uint64_t r = rng_below(100), t;
		if (r < 50) {
			t = due;
		} else if (r < 80) {
			t = due + rng_below(period);
		} else if (r < 95) {
			t = due + period + rng_below(4 * period);
		} else if (r < 98) {
			t = due + rng_below(50 * period);
		} else {
			t = due - 1 - rng_below(period - 1);
		}
		if (t < f.now) {
			t = f.now;
		}
		qf_clear_events(&f);
		uint64_t want_commit = n.want_commit;
		qf_advance_to(&f, t);
		wakeups++;
		/* The true count of vblanks by t. */
		uint64_t k = vblank_grid_count(epoch, NTSC_MHZ, t);
		if (k < next_k) {
			early++;
			bad |= f.n_events != 0;
			continue;
		}
		missed += k - next_k;
		next_k = k + 1;
		if (k < latch_k) {
			/* The frame is not due yet: nothing latched. */
			bad |= f.n_events != 0;
			continue;
		}
		if (f.n_events != 1) {
			fprintf(stderr, "  vblank %" PRIu64 ": %zu events\n", k, f.n_events);
			bad = true;
			continue;
		}
		const struct ev *e = &f.events[0];
		presents++;
		uint64_t when = vblank_grid_ns(epoch, NTSC_MHZ, latch_k);
		CHECK(when >= commit_t);
		if (!e->presented || e->seq != latch_k || f.out->seq != k || e->when_ns != when ||
				e->refresh_ns != period || e->commit_seq != want_commit) {
			fprintf(stderr, "  vblank %" PRIu64 " at %" PRIu64 ": seq %" PRIu64
				" when %" PRIu64 " refresh %" PRIu64 " commit %" PRIu64
				", want %" PRIu64 " %" PRIu64 "\n", k, t, e->seq, e->when_ns,
				e->refresh_ns, e->commit_seq, latch_k, when);
			bad = true;
		}
		/* The hook committed the next frame at t. */
		commit_t = t;
		uint64_t first = vblank_grid_count(epoch, NTSC_MHZ, t) + 1;
		latch_k = first;
		while (vblank_grid_ns(epoch, NTSC_MHZ, latch_k) < t + WLA_VDC_COMMIT_SLACK_NS) {
			latch_k++;
		}
		late_misses += latch_k - first;
	}
	printf("# %" PRIu64 " vblanks in %" PRIu64 " wake-ups (%" PRIu64 " early), %" PRIu64
		" missed, %" PRIu64 " presents\n", next_k - 1, wakeups, early, missed, presents);
	CHECK(!bad);
	CHECK(!n.refused);
	CHECK(missed > 0 && early > 0);
	CHECK_INT(f.out->seq, next_k - 1);
	CHECK_INT(f.out->counters.vblanks, next_k - 1);
	CHECK_INT(f.out->counters.missed, late_misses);
	CHECK_INT(f.out->counters.latched, presents);
	CHECK_INT(f.dev->live_states, 1); /* the frame queued for the next vblank */
	f.hook = NULL;
	CHECK_INT(qf_disable(&f), 0);
	CHECK_INT(f.dev->live_states, 0);
	fake_drop(n.fb[0]);
	fake_drop(n.fb[1]);
	qf_finish(&f);
}

int main(void)
{
	harness_init();
	RUN_TEST(vblank_sequence_at_59_94_hz_counts_every_vblank_without_drift);
	HARNESS_EXIT();
}
