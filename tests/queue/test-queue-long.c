/*
 * 59.94 Hz sequence accounting on the injected clock: a million vblanks with
 * late (and early) wake-ups, frames committed from the present handlers,
 * checked after every wake-up against the reference model of
 * queue-helpers.h on the exact grid (vblank-grid.h): the late wake-up
 * replays every vblank that passed, each latched frame reports its own
 * vblank's sequence number and time, a vblank is missed only by a frame
 * committed within the slack before it, and nothing drifts however long the
 * run. Once with a compositor that draws when its last frame is on screen,
 * once with one that keeps a queue of three frames filled (several frames
 * latch in one late wake-up).
 *
 * WLA_TEST_SEED=<n> replays a run; the seed is printed either way.
 * After every wake-up the next latch is compared with the model's.
 */
#include "queue-helpers.h"

/* 59.94 Hz */

#define NTSC_MHZ 59940
#define LONG_VBLANKS UINT64_C(1000000)

struct ntsc {
	struct qmodel *m;
	struct wla_fb *fb[3];
	uint64_t next_seq;
	unsigned flip;
	bool refused;
};

static void ntsc_commit(struct fixture *f, struct ntsc *n)
{
	n->flip = (n->flip + 1) % 3;
	uint64_t seq = n->next_seq++;
	if (qf_flip(f, n->fb[n->flip], seq) != 0) {
		n->refused = true;
		return;
	}
	qm_commit(n->m, seq, f->now, true);
}

/* Like a compositor: a new frame for every one that reached the screen. */
static void ntsc_present(struct fixture *f, const struct wla_present *ev)
{
	if (ev->presented) {
		ntsc_commit(f, f->hook_data);
	}
}

static void run_ntsc(const char *test, unsigned depth)
{
	rng_state = test_seed(test);
	struct fixture f;
	CHECK(qf_init(&f, depth, false));
	struct qmodel m;
	qm_init(&m);
	CHECK_INT(f.vdc->dev.latch_slack_ns, m.slack);
	struct ntsc n = { .m = &m, .next_seq = 2 };
	for (size_t i = 0; i < 3; i++) {
		n.fb[i] = qf_screen_fb(0xff000010 * (uint32_t)(i + 1));
	}
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
	qm_enable(&m, NTSC_MHZ, f.now, 1);
	/* Render ahead: the rest of the queue at once. */
	for (unsigned i = 1; i < depth; i++) {
		ntsc_commit(&f, &n);
	}
	const uint64_t epoch = f.now;
	CHECK(qm_check_books(&f, &m, "enable"));

	uint64_t wakeups = 0, early = 0, slept = 0, several = 0;
	bool bad = false;
	while (m.processed < LONG_VBLANKS && !bad) {
		uint64_t due = qm_vblank_ns(&m, m.processed + 1);
		uint64_t r = rng_below(100), t;
		if (r < 45) {
			t = due;
		} else if (r < 70) {
			t = due + rng_below(period);
		} else if (r < 85) {
			t = due + period + rng_below(4 * period);
		} else if (r < 88) {
			t = due + rng_below(50 * period);
		} else if (r < 95) {
			/* Within the slack before the vblank after: what is committed
			 * now misses it. */
			t = qm_vblank_ns(&m, m.processed + 2) - 1 - rng_below(m.slack - 1);
		} else {
			t = due - 1 - rng_below(period - 1);
		}
		if (t < f.now) {
			t = f.now;
		}
		uint64_t vblanks = m.vblanks;
		qm_advance(&m, t);
		size_t latches = m.n_ev;
		qf_advance_to(&f, t);
		wakeups++;
		early += m.vblanks == vblanks;
		slept += m.vblanks > vblanks + 1;
		several += latches > 1;
		if (!qm_check_events(&f, &m, period, "wake-up") ||
				!qm_check_books(&f, &m, "wake-up")) {
			bad = true;
		}
		{
			uint64_t latch = 0;
			bool on = wla_crtc_next_latch(&f.out->crtc, &latch, &(uint64_t){ 0 });
			uint64_t want = qm_next_latch(&m, f.now);
			if (!on || latch != want) {
				fprintf(stderr, "  next latch %" PRIu64 ", want %" PRIu64 "\n",
					latch - epoch, want - epoch);
				bad = true;
			}
		}
		if (bad) {
			fprintf(stderr, "  wake-up %" PRIu64 " at %" PRIu64 " ns after enable "
				"(vblank %" PRIu64 " passed)\n", wakeups, t - epoch,
				vblank_grid_count(epoch, NTSC_MHZ, t));
		}
	}
	printf("# %" PRIu64 " vblanks in %" PRIu64 " wake-ups (%" PRIu64 " early, %" PRIu64
		" late by a vblank or more, %" PRIu64 " latching several frames), %" PRIu64
		" frames latched, %" PRIu64 " vblanks missed\n", m.vblanks, wakeups, early, slept,
		several, m.latched, m.missed);
	CHECK(!bad);
	CHECK(!n.refused);
	/* The run went through what it is about. */
	CHECK(early > 0 && slept > 0 && m.missed > 0);
	CHECK(m.latched > LONG_VBLANKS / 4);
	CHECK(depth == 1 ? several == 0 : several > 0);
	CHECK_INT(f.out->counters.vblanks, m.processed);
	CHECK_INT(f.dev->live_states, depth); /* the frames queued for the next vblanks */
	f.hook = NULL;
	CHECK_INT(qf_disable(&f), 0);
	CHECK_INT(f.dev->live_states, 0);
	for (size_t i = 0; i < 3; i++) {
		fake_drop(n.fb[i]);
	}
	qf_finish(&f);
}

static void vblank_sequence_at_59_94_hz_counts_every_vblank_without_drift(void)
{
	run_ntsc(__func__, 1);
}

static void render_ahead_at_59_94_hz_latches_each_queued_frame_at_its_own_vblank(void)
{
	run_ntsc(__func__, 3);
}

int main(void)
{
	harness_init();
	RUN_TEST(vblank_sequence_at_59_94_hz_counts_every_vblank_without_drift);
	RUN_TEST(render_ahead_at_59_94_hz_latches_each_queued_frame_at_its_own_vblank);
	HARNESS_EXIT();
}
