/*
 * The flip queue of the atomic core on the VDC, with fake framebuffers and an
 * injected clock: order, depth limits, mailbox replacement of frames the
 * driver has not been handed, the exact release point of every framebuffer
 * (late wake-ups replaying one latch per vblank), client-dropped
 * framebuffers, disable and destroy with a full queue, modesets behind
 * queued frames, and cursor updates as ordinary states: refused while
 * anything is queued, moved by the frames carrying the cursor plane, latched
 * at the next vblank when idle, with a frame written over them (rearm).
 */
#include "queue-helpers.h"
#include "lib/legacy.h"

static void frames_queued_at_depth_3_latch_one_per_vblank_in_commit_order(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 3, false));
	struct wla_fb *a = qf_screen_fb(0xff000001), *b = qf_screen_fb(0xff0000b0);
	struct wla_fb *c = qf_screen_fb(0xff00c000), *d = qf_screen_fb(0xffd00000);
	CHECK_INT(qf_enable(&f, a, 1), 0);
	CHECK_INT(f.n_events, 0);
	qf_vblank(&f, 1);
	check_event(&f, 0, 1, true, 1, qf_vblank_ns(&f, 1), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 0, 0), 0xff000001);

	qf_clear_events(&f);
	CHECK_INT(qf_flip(&f, b, 11), 0);
	CHECK_INT(qf_flip(&f, c, 12), 0);
	CHECK_INT(qf_flip(&f, d, 13), 0);
	CHECK_INT(f.crtc->pending_frames, 3);
	CHECK_INT(f.n_events, 0);
	/* Swapped in software at once, on screen only at their vblanks. */
	CHECK(f.crtc->primary->state->fb == d);
	CHECK_PIXEL(qf_pixel(&f, 0, 0), 0xff000001);
	CHECK_INT(f.dev->live_states, 3);

	/* Half a period later: still nothing. */
	qf_advance_to(&f, qf_vblank_ns(&f, 1) + PERIOD_60 / 2);
	CHECK_INT(f.n_events, 0);

	const uint32_t colors[] = { 0xff0000b0, 0xff00c000, 0xffd00000 };
	for (uint64_t k = 2; k <= 4; k++) {
		qf_vblank(&f, k);
		CHECK_INT(f.n_events, k - 1);
		check_event(&f, k - 2, 11 + (k - 2), true, k, qf_vblank_ns(&f, k), PERIOD_60);
		CHECK_PIXEL(qf_pixel(&f, 10, 10), colors[k - 2]);
		CHECK_INT(f.crtc->pending_frames, 4 - k);
		CHECK_INT(f.dev->live_states, 4 - k);
	}
	/* Consecutive sequence numbers, each event its own commit. */
	for (size_t i = 1; i < f.n_events; i++) {
		CHECK_INT(f.events[i].seq, f.events[i - 1].seq + 1);
		CHECK(f.events[i].commit_seq == f.events[i - 1].commit_seq + 1);
	}
	qf_vblank(&f, 5);
	CHECK_INT(f.n_events, 3);
	CHECK_PIXEL(qf_pixel(&f, 10, 10), 0xffd00000);

	CHECK_INT(locks_of(a), 0);
	CHECK_INT(locks_of(b), 0);
	CHECK_INT(locks_of(c), 0);
	CHECK_INT(locks_of(d), 1);
	CHECK_INT(qf_disable(&f), 0);
	CHECK_INT(locks_of(d), 0);
	CHECK_INT(f.dev->live_states, 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(c);
	fake_drop(d);
	qf_finish(&f);
}

static void refuse_beyond_depth(uint32_t depth)
{
	struct fixture f;
	CHECK(qf_init(&f, depth, false));
	struct wla_fb *fbs[4];
	for (size_t i = 0; i < 4; i++) {
		fbs[i] = qf_screen_fb(0xff101010 * (uint32_t)(i + 1));
	}
	CHECK_INT(qf_enable(&f, fbs[0], 1), 0);
	qf_vblank(&f, 1);
	qf_clear_events(&f);
	for (uint32_t i = 1; i <= depth; i++) {
		CHECK_INT(qf_flip(&f, fbs[i], 10 + i), 0);
	}
	CHECK_INT(f.crtc->pending_frames, depth);

	struct wla_fb *extra = fbs[depth + 1];
	const struct wla_crtc_state *crtc_state = f.crtc->state;
	const struct wla_plane_state *primary = f.crtc->primary->state;
	size_t live = f.dev->live_states;
	int locks_before[4];
	for (size_t i = 0; i < 4; i++) {
		locks_before[i] = locks_of(fbs[i]);
	}
	int refs = extra->refs;
	harness_log_clear();
	CHECK_INT(qf_flip(&f, extra, 99), -EBUSY);
	char want[32];
	snprintf(want, sizeof(want), "%u of %u", depth, depth);
	CHECK_LOGGED("crtc-0", "flip queue full", want, "commit_seq 99");
	/* Nothing changed: current states, the queue, every lock. */
	CHECK(f.crtc->state == crtc_state);
	CHECK(f.crtc->primary->state == primary);
	CHECK(f.crtc->primary->state->fb == fbs[depth]);
	CHECK_INT(f.crtc->pending_frames, depth);
	CHECK_INT(f.dev->live_states, live);
	CHECK_INT(f.n_events, 0);
	CHECK_INT(extra->refs, refs);
	CHECK_INT(rec_of(extra)->prepares, 0);
	for (size_t i = 0; i < 4; i++) {
		CHECK_INT(locks_of(fbs[i]), locks_before[i]);
	}
	/* The queue goes on as before, and a slot freed by a vblank takes it. */
	qf_vblank(&f, 2);
	check_event(&f, 0, 11, true, 2, qf_vblank_ns(&f, 2), PERIOD_60);
	CHECK_INT(qf_flip(&f, extra, 100), 0);
	for (uint64_t k = 3; k <= depth + 2; k++) {
		qf_vblank(&f, k);
	}
	CHECK_INT(f.n_events, depth + 1);
	CHECK_INT(f.events[depth].commit_seq, 100);
	CHECK_INT(f.events[depth].seq, depth + 2);
	CHECK_INT(locks_of(extra), 1);
	CHECK_INT(qf_disable(&f), 0);
	CHECK_INT(f.dev->live_states, 0);
	for (size_t i = 0; i < 4; i++) {
		fake_drop(fbs[i]);
	}
	qf_finish(&f);
}

static void depth_1_refuses_a_second_frame_with_flip_queue_full(void)
{
	refuse_beyond_depth(1);
}

static void depth_2_refuses_a_third_frame_with_flip_queue_full(void)
{
	refuse_beyond_depth(2);
}

static void a_blocking_commit_is_refused_while_frames_are_queued(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 2, false));
	struct wla_fb *a = qf_screen_fb(0xff111111), *b = qf_screen_fb(0xff222222);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	CHECK_INT(qf_flip(&f, b, 2), 0);
	harness_log_clear();
	CHECK_INT(wla_atomic_page_flip(f.crtc, a, 3), -EBUSY);
	CHECK_LOGGED("crtc-0", "blocking commit refused", "commit_seq 3");
	CHECK_INT(locks_of(a), 1);
	CHECK_INT(locks_of(b), 1);
	CHECK(f.crtc->primary->state->fb == b);
	qf_vblank(&f, 2);
	CHECK_INT(wla_atomic_page_flip(f.crtc, a, 4), 0);
	qf_vblank(&f, 3);
	CHECK_INT(f.events[f.n_events - 1].commit_seq, 4);
	CHECK_INT(qf_disable(&f), 0);
	fake_drop(a);
	fake_drop(b);
	qf_finish(&f);
}

static void mailbox_at_depth_1_replaces_the_waiting_frame_and_releases_it_at_once(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 1, true));
	struct wla_fb *a = qf_screen_fb(0xff0000aa), *b = qf_screen_fb(0xff00bb00);
	struct wla_fb *c = qf_screen_fb(0xffcc0000), *d = qf_screen_fb(0xffdddddd);
	struct wla_fb *e = qf_screen_fb(0xffeeeeee);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	qf_clear_events(&f);
	/* Nothing queued: b goes to the driver at once. The depth counts only
	 * the frames the driver has not been handed, so c waits behind it. */
	CHECK_INT(qf_flip(&f, b, 2), 0);
	CHECK_INT(f.crtc->armed, 1);
	CHECK_INT(f.crtc->waiting_frames, 0);
	CHECK_INT(qf_flip(&f, c, 3), 0);
	CHECK_INT(f.n_events, 0);
	CHECK_INT(f.crtc->pending_frames, 2);
	CHECK_INT(f.crtc->waiting_frames, 1);
	CHECK_INT(locks_of(c), 1);
	struct fake_fb_probe *rc = rec_of(c);
	fake_drop(c); /* only the queued state keeps it */
	CHECK(!rc->destroyed);

	CHECK_INT(qf_flip(&f, d, 4), 0);
	/* c is reported discarded and released before any vblank. */
	CHECK_INT(f.n_events, 1);
	check_discarded(&f, 0, 3);
	CHECK_INT(f.events[0].clock, qf_vblank_ns(&f, 1));
	CHECK_INT(rc->locks, 0);
	CHECK(rc->destroyed);
	CHECK_INT(locks_of(a), 1); /* still on screen */
	CHECK_INT(locks_of(b), 1); /* the driver holds it: never replaced */
	CHECK_INT(locks_of(d), 1);
	CHECK_INT(f.crtc->pending_frames, 2);
	CHECK_INT(f.crtc->waiting_frames, 1);
	CHECK_INT(f.dev->live_states, 2);
	CHECK_PIXEL(qf_pixel(&f, 1, 1), 0xff0000aa);
	check_oracles(&f);

	/* A replacement can be replaced in turn. */
	CHECK_INT(qf_flip(&f, e, 5), 0);
	CHECK_INT(f.n_events, 2);
	check_discarded(&f, 1, 4);
	CHECK_INT(locks_of(d), 0);
	CHECK_INT(locks_of(b), 1);
	CHECK_INT(locks_of(a), 1);
	CHECK_INT(f.dev->live_states, 2);
	check_oracles(&f);

	qf_vblank(&f, 2);
	CHECK_INT(f.n_events, 3);
	check_event(&f, 2, 2, true, 2, qf_vblank_ns(&f, 2), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 1, 1), 0xff00bb00);
	CHECK_INT(locks_of(a), 0); /* replaced on screen now, not before */
	CHECK_INT(f.crtc->armed, 1); /* e, handed over at the latch */
	CHECK_INT(f.crtc->waiting_frames, 0);
	check_oracles(&f);
	qf_vblank(&f, 3);
	CHECK_INT(f.n_events, 4);
	check_event(&f, 3, 5, true, 3, qf_vblank_ns(&f, 3), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 1, 1), 0xffeeeeee);
	CHECK_INT(locks_of(b), 0);
	CHECK_INT(locks_of(e), 1);
	CHECK_INT(f.dev->live_states, 0);
	check_oracles(&f);

	CHECK_INT(qf_disable(&f), 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(d);
	fake_drop(e);
	qf_finish(&f);
}

/* A frame with damage (fb pixels changed since the screen's frame). */
static int qf_flip_damaged(struct fixture *f, struct wla_fb *fb, uint64_t seq,
	const struct wla_rect *damage, size_t n)
{
	struct wla_atomic_state *state = test_state(f->dev, f->crtc, seq, true);
	struct wla_plane_state *ps = test_put(state, f->crtc, f->crtc->primary, fb, 0, 0);
	wla_plane_state_set_damage(ps, damage, n);
	return test_commit_nonblocking(state);
}

/* A mailbox replacement shows what the replaced frame changed too: its
 * damage becomes the union of both (as FB_DAMAGE_CLIPS must be relative to
 * the frame on screen); a replaced frame without damage makes it all. */
static void mailbox_replacement_carries_the_replaced_frames_damage(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 1, true));
	struct wla_fb *a = qf_screen_fb(0xff0000aa), *b = qf_screen_fb(0xff00bb00);
	struct wla_fb *c = qf_screen_fb(0xffcc0000), *d = qf_screen_fb(0xffdddddd);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	const struct wla_rect rb = { 0, 0, 4, 4 }, rc = { 8, 8, 2, 2 }, rd = { 1, 1, 1, 1 };
	CHECK_INT(qf_flip_damaged(&f, b, 2, &rb, 1), 0); /* armed */
	CHECK_INT(qf_flip_damaged(&f, c, 3, &rc, 1), 0); /* waits */
	CHECK_INT(qf_flip_damaged(&f, d, 4, &rd, 1), 0); /* replaces c */
	const struct wla_plane_state *ps = f.crtc->primary->state;
	CHECK(ps->fb == d);
	CHECK_INT(ps->n_damage, 2);
	if (ps->n_damage == 2) {
		CHECK(ps->damage[0].x == 1 && ps->damage[0].w == 1);
		CHECK(ps->damage[1].x == 8 && ps->damage[1].w == 2);
	}
	/* Replaced by a frame without damage: all of it. */
	CHECK_INT(qf_flip(&f, c, 5), 0);
	CHECK_INT(f.crtc->primary->state->n_damage, 0);
	qf_vblank(&f, 2);
	qf_vblank(&f, 3);
	CHECK_INT(qf_disable(&f), 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(c);
	fake_drop(d);
	qf_finish(&f);
}

/* More rectangles than a state carries become their bounding box; empty
 * ones are left out; a duplicate starts without damage. */
static void damage_beyond_the_limit_is_its_bounding_box(void)
{
	struct wla_plane_state ps = { 0 };
	struct wla_rect many[WLA_MAX_DAMAGE_RECTS + 1];
	for (int i = 0; i <= WLA_MAX_DAMAGE_RECTS; i++) {
		many[i] = (struct wla_rect){ 10 * i, 5, 2, 3 + i };
	}
	wla_plane_state_set_damage(&ps, many, WLA_MAX_DAMAGE_RECTS);
	CHECK_INT(ps.n_damage, WLA_MAX_DAMAGE_RECTS);
	wla_plane_state_set_damage(&ps, many, WLA_MAX_DAMAGE_RECTS + 1);
	CHECK_INT(ps.n_damage, 1);
	CHECK(ps.damage[0].x == 0 && ps.damage[0].y == 5 &&
		ps.damage[0].w == 10 * WLA_MAX_DAMAGE_RECTS + 2 &&
		ps.damage[0].h == 3 + WLA_MAX_DAMAGE_RECTS);
	const struct wla_rect some[3] = { { 0, 0, 0, 5 }, { 1, 2, 3, 4 }, { 0, 0, 5, -1 } };
	wla_plane_state_set_damage(&ps, some, 3);
	CHECK_INT(ps.n_damage, 1);
	CHECK(ps.damage[0].x == 1 && ps.damage[0].h == 4);
	struct wla_plane_state *copy = wla_plane_state_duplicate(&ps);
	CHECK_INT(copy->n_damage, 0);
	wla_plane_state_destroy(copy);
}

static void mailbox_at_depth_2_replaces_only_the_newest_waiting_frame(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 2, true));
	struct wla_fb *a = qf_screen_fb(0xff0000aa), *b = qf_screen_fb(0xff00bb00);
	struct wla_fb *c = qf_screen_fb(0xffcc0000), *d = qf_screen_fb(0xffdddddd);
	struct wla_fb *e = qf_screen_fb(0xffeeeeee);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	qf_clear_events(&f);
	CHECK_INT(qf_flip(&f, b, 2), 0); /* handed to the driver */
	CHECK_INT(qf_flip(&f, c, 3), 0);
	CHECK_INT(qf_flip(&f, d, 4), 0);
	CHECK_INT(f.n_events, 0); /* room for two waiting: nothing replaced */
	CHECK_INT(f.crtc->pending_frames, 3);
	CHECK_INT(f.crtc->waiting_frames, 2);
	CHECK_INT(qf_flip(&f, e, 5), 0);
	CHECK_INT(f.n_events, 1);
	check_discarded(&f, 0, 4);
	CHECK_INT(locks_of(d), 0);
	CHECK_INT(locks_of(c), 1); /* the waiting frame before it is untouched */
	CHECK_INT(locks_of(b), 1);
	CHECK_INT(locks_of(a), 1);
	CHECK_INT(locks_of(e), 1);
	CHECK_INT(f.crtc->pending_frames, 3);
	CHECK_INT(f.crtc->waiting_frames, 2);
	check_oracles(&f);

	qf_vblank(&f, 2);
	check_event(&f, 1, 2, true, 2, qf_vblank_ns(&f, 2), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 3, 3), 0xff00bb00);
	CHECK_INT(locks_of(a), 0);
	check_oracles(&f);
	qf_vblank(&f, 3);
	check_event(&f, 2, 3, true, 3, qf_vblank_ns(&f, 3), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 3, 3), 0xffcc0000);
	CHECK_INT(locks_of(b), 0);
	check_oracles(&f);
	qf_vblank(&f, 4);
	check_event(&f, 3, 5, true, 4, qf_vblank_ns(&f, 4), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 3, 3), 0xffeeeeee);
	CHECK_INT(locks_of(c), 0); /* e replaced c on screen */
	CHECK_INT(locks_of(e), 1);
	CHECK_INT(f.n_events, 4);
	CHECK_INT(f.dev->live_states, 0);
	check_oracles(&f);
	CHECK_INT(qf_disable(&f), 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(c);
	fake_drop(d);
	fake_drop(e);
	qf_finish(&f);
}

static void mailbox_replacement_keeps_the_replaced_frames_other_planes(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 1, true));
	struct wla_fb *a = qf_screen_fb(0xff0000aa), *b = qf_screen_fb(0xff00bb00);
	struct wla_fb *m = qf_screen_fb(0xff0000cc);
	struct wla_fb *ov = fake_fb_new(8, 8, DRM_FORMAT_XRGB8888, 0xff777777);
	struct wla_plane *overlay = &f.out->overlays[0];
	CHECK_INT(qf_enable_latched(&f, a), 0);
	qf_clear_events(&f);
	/* Frame 2 goes to the driver; frame 3 puts an overlay up and waits;
	 * frame 4 (primary only) replaces it. */
	CHECK_INT(qf_flip(&f, m, 2), 0);
	struct wla_atomic_state *s = qf_begin(&f, 3, true);
	qf_plane(&f, s, overlay, ov, 4, 4);
	CHECK_INT(qf_commit(s), 0);
	CHECK_INT(f.n_events, 0);
	CHECK_INT(qf_flip(&f, b, 4), 0);
	CHECK_INT(f.n_events, 1);
	check_discarded(&f, 0, 3);
	/* Frame 4 is built on frame 3's planes: the overlay stays locked. */
	CHECK_INT(locks_of(ov), 1);
	CHECK_INT(locks_of(m), 1);
	check_oracles(&f);
	qf_vblank(&f, 2);
	check_event(&f, 1, 2, true, 2, qf_vblank_ns(&f, 2), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 5, 5), 0xff0000cc); /* no overlay before frame 4 */
	CHECK_INT(locks_of(a), 0);
	check_oracles(&f);
	qf_vblank(&f, 3);
	check_event(&f, 2, 4, true, 3, qf_vblank_ns(&f, 3), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 5, 5), 0xff777777);
	CHECK_PIXEL(qf_pixel(&f, 20, 20), 0xff00bb00);
	CHECK_INT(locks_of(m), 0);
	CHECK_INT(locks_of(ov), 1);
	check_oracles(&f);
	CHECK_INT(qf_disable(&f), 0);
	CHECK_INT(locks_of(ov), 0);
	CHECK_INT(f.dev->live_states, 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(m);
	fake_drop(ov);
	qf_finish(&f);
}

/*
 * One step of a script: flip fb (op 'F'), vblank k ('V'), expect the flip
 * refused ('R'), let the clock pass vblank k by 1 us without a wake-up ('T':
 * a late timer; commits until the wake-up come after that vblank's instant),
 * or wake up at the clock as it is ('W'). Then the lock count of every fb
 * and the frames the step presented, each at its own vblank.
 */
struct present_at {
	int fb; /* -1: none */
	int vblank;
};

struct step {
	char op;
	int arg; /* fb index for F/R, vblank index for V/T, unused for W */
	int locks[5];
	struct present_at presented[2];
};

#define NONE { { -1, 0 }, { -1, 0 } }

static void each_fb_is_released_at_the_vblank_that_latches_its_replacement(void)
{
	enum { A, B, C, D, E };
	static const struct step script[] = {
		{ 'V', 1, { 1, 0, 0, 0, 0 }, { { A, 1 }, { -1, 0 } } },
		{ 'F', B, { 1, 1, 0, 0, 0 }, NONE },
		{ 'F', C, { 1, 1, 1, 0, 0 }, NONE },
		{ 'F', D, { 1, 1, 1, 1, 0 }, NONE },
		{ 'R', E, { 1, 1, 1, 1, 0 }, NONE },
		{ 'V', 2, { 0, 1, 1, 1, 0 }, { { B, 2 }, { -1, 0 } } },
		{ 'F', E, { 0, 1, 1, 1, 1 }, NONE },
		{ 'V', 3, { 0, 0, 1, 1, 1 }, { { C, 3 }, { -1, 0 } } },
		{ 'F', B, { 0, 1, 1, 1, 1 }, NONE }, /* B again, off screen by now */
		{ 'V', 4, { 0, 1, 0, 1, 1 }, { { D, 4 }, { -1, 0 } } },
		{ 'V', 5, { 0, 1, 0, 0, 1 }, { { E, 5 }, { -1, 0 } } },
		{ 'V', 6, { 0, 1, 0, 0, 0 }, { { B, 6 }, { -1, 0 } } },
		{ 'F', B, { 0, 2, 0, 0, 0 }, NONE }, /* the fb on screen, queued twice */
		{ 'F', B, { 0, 3, 0, 0, 0 }, NONE },
		{ 'V', 7, { 0, 2, 0, 0, 0 }, { { B, 7 }, { -1, 0 } } },
		{ 'V', 8, { 0, 1, 0, 0, 0 }, { { B, 8 }, { -1, 0 } } },
		{ 'V', 9, { 0, 1, 0, 0, 0 }, NONE }, /* nothing queued */
		{ 'F', A, { 1, 1, 0, 0, 0 }, NONE },
		/* Three vblanks in one wake-up: A latched at the first of them. */
		{ 'V', 12, { 1, 0, 0, 0, 0 }, { { A, 10 }, { -1, 0 } } },
		{ 'F', C, { 1, 0, 1, 0, 0 }, NONE },
		{ 'F', D, { 1, 0, 1, 1, 0 }, NONE },
		/* Two: the replay latches one frame per vblank, each at its own. */
		{ 'V', 14, { 0, 0, 0, 1, 0 }, { { C, 13 }, { D, 14 } } },
		{ 'V', 15, { 0, 0, 0, 1, 0 }, NONE },
		/* Committed after vblank 16's instant, before the late wake-up:
		 * too late for 16, whatever the wake-up. */
		{ 'T', 16, { 0, 0, 0, 1, 0 }, NONE },
		{ 'F', E, { 0, 0, 0, 1, 1 }, NONE },
		{ 'W', 0, { 0, 0, 0, 1, 1 }, NONE },
		{ 'V', 17, { 0, 0, 0, 0, 1 }, { { E, 17 }, { -1, 0 } } },
		/* A handed over in time for 18; 18 passes before the wake-up and B
		 * is committed: A still latches at 18, B behind it at 19. */
		{ 'F', A, { 1, 0, 0, 0, 1 }, NONE },
		{ 'T', 18, { 1, 0, 0, 0, 1 }, NONE },
		{ 'F', B, { 1, 1, 0, 0, 1 }, NONE },
		{ 'V', 19, { 0, 1, 0, 0, 0 }, { { A, 18 }, { B, 19 } } },
		{ 'V', 20, { 0, 1, 0, 0, 0 }, NONE },
	};
	struct fixture f;
	CHECK(qf_init(&f, 3, false));
	struct wla_fb *fbs[5];
	for (int i = 0; i < 5; i++) {
		fbs[i] = qf_screen_fb(0xff000000 | (uint32_t)(0x30 * (i + 1)));
	}
	CHECK_INT(qf_enable(&f, fbs[A], 1), 0);
	CHECK_INT(locks_of(fbs[A]), 1);
	uint64_t seq = 1, last_presented_seq = 0;
	size_t seen = 0, flips = 1;
	for (size_t s = 0; s < WLA_ARRAY_SIZE(script); s++) {
		const struct step *st = &script[s];
		if (st->op == 'F') {
			CHECK_INT(qf_flip(&f, fbs[st->arg], ++seq), 0);
			flips++;
		} else if (st->op == 'R') {
			CHECK_INT(qf_flip(&f, fbs[st->arg], 1000), -EBUSY);
		} else if (st->op == 'T') {
			f.now = qf_vblank_ns(&f, (uint64_t)st->arg) + 1000;
		} else if (st->op == 'W') {
			wla_vdc_advance(f.vdc, f.now);
		} else {
			qf_vblank(&f, (uint64_t)st->arg);
		}
		bool ok = true;
		for (int i = 0; i < 5; i++) {
			if (locks_of(fbs[i]) != st->locks[i]) {
				ok = false;
			}
		}
		size_t want = 0;
		for (size_t p = 0; p < 2 && st->presented[p].fb >= 0; p++) {
			want++;
			if (f.n_events < seen + want) {
				ok = false;
				break;
			}
			const struct fixture_event *e = &f.events[seen + p];
			uint64_t k = (uint64_t)st->presented[p].vblank;
			ok &= e->presented && e->seq == k && e->when_ns == qf_vblank_ns(&f, k) &&
				e->refresh_ns == PERIOD_60 && e->commit_seq > last_presented_seq;
			last_presented_seq = e->commit_seq;
		}
		ok &= f.n_events == seen + want;
		if (want > 0 && ok) {
			/* On screen: the last one latched. */
			uint32_t color = 0x30 * (uint32_t)(st->presented[want - 1].fb + 1);
			ok &= qf_pixel(&f, 7, 7) == (0xff000000 | color);
		}
		seen = f.n_events;
		check_oracles(&f);
		if (!ok) {
			fprintf(stderr, "  step %zu (%c %d): locks %d %d %d %d %d, %zu events\n",
				s, st->op, st->arg, locks_of(fbs[0]), locks_of(fbs[1]),
				locks_of(fbs[2]), locks_of(fbs[3]), locks_of(fbs[4]), f.n_events);
			harness_test_failures++;
		}
	}
	/* Every accepted flip was presented, in commit order. */
	CHECK_INT(f.n_events, flips);
	for (size_t i = 1; i < f.n_events; i++) {
		CHECK_INT(f.events[i].commit_seq, f.events[i - 1].commit_seq + 1);
	}
	/* Nothing was committed too late for a vblank it could have made. */
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	CHECK_INT(qf_disable(&f), 0);
	for (int i = 0; i < 5; i++) {
		CHECK_INT(locks_of(fbs[i]), 0);
		fake_drop(fbs[i]);
	}
	CHECK_INT(f.dev->live_states, 0);
	qf_finish(&f);
}

static void a_client_dropping_a_queued_or_shown_fb_changes_nothing_on_screen(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 3, false));
	struct wla_fb *a = qf_screen_fb(0xffa0a0a0), *b = qf_screen_fb(0xffb0b0b0);
	struct wla_fb *c = qf_screen_fb(0xffc0c0c0);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	CHECK_INT(qf_flip(&f, b, 2), 0);
	CHECK_INT(qf_flip(&f, c, 3), 0);
	struct fake_fb_probe *ra = rec_of(a), *rb = rec_of(b), *rc = rec_of(c);
	/* The client goes away with all three: on screen, queued, queued. */
	fake_drop(a);
	fake_drop(b);
	fake_drop(c);
	CHECK(!ra->destroyed && !rb->destroyed && !rc->destroyed);
	CHECK_PIXEL(qf_pixel(&f, 0, 0), 0xffa0a0a0);
	qf_vblank(&f, 2);
	CHECK(ra->destroyed); /* freed exactly when replaced on screen */
	CHECK(!rb->destroyed && !rc->destroyed);
	CHECK_PIXEL(qf_pixel(&f, 0, 0), 0xffb0b0b0);
	qf_vblank(&f, 3);
	CHECK(rb->destroyed);
	CHECK(!rc->destroyed);
	CHECK_PIXEL(qf_pixel(&f, 0, 0), 0xffc0c0c0);
	qf_vblank(&f, 4);
	CHECK(!rc->destroyed); /* still on screen */
	CHECK_PIXEL(qf_pixel(&f, 0, 0), 0xffc0c0c0);
	CHECK_INT(qf_disable(&f), 0);
	CHECK(rc->destroyed);
	CHECK_INT(f.dev->live_states, 0);
	qf_finish(&f);
}

static void disabling_with_a_full_queue_reports_every_frame_not_presented(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 3, false));
	struct wla_fb *fbs[4];
	for (int i = 0; i < 4; i++) {
		fbs[i] = qf_screen_fb(0xff404040 + (uint32_t)i);
	}
	struct wla_fb *cursor = fake_fb_new(16, 16, DRM_FORMAT_ARGB8888, 0xffffffff);
	CHECK_INT(qf_enable(&f, fbs[0], 1), 0);
	qf_vblank(&f, 1);
	CHECK_INT(wla_atomic_update_plane(f.crtc->cursor, f.crtc, cursor, 2, 2, 16, 16, 0, 0,
		16 << 16, 16 << 16), 0);
	qf_clear_events(&f);
	for (int i = 1; i < 4; i++) {
		CHECK_INT(qf_flip(&f, fbs[i], 10 + (uint64_t)i), 0);
	}
	CHECK_INT(f.crtc->pending_frames, 3);
	CHECK_INT(f.dev->live_states, 4); /* three frames and the cursor update */
	CHECK_INT(qf_disable(&f), 0);
	CHECK_INT(f.n_events, 3);
	for (size_t i = 0; i < 3 && i < f.n_events; i++) {
		CHECK_INT(f.events[i].commit_seq, 11 + i);
		CHECK_INT(f.events[i].presented, false);
		CHECK_INT(f.events[i].discarded, false);
	}
	for (int i = 0; i < 4; i++) {
		struct fake_fb_probe *rec = rec_of(fbs[i]);
		CHECK_INT(rec->locks, 0);
		fake_drop(fbs[i]);
		CHECK(rec->destroyed);
	}
	CHECK_INT(locks_of(cursor), 0);
	CHECK_INT(f.crtc->pending_frames, 0);
	CHECK_INT(f.crtc->queued, 0);
	CHECK_INT(f.dev->live_states, 0);
	/* Nothing left to latch: later vblank times do nothing. */
	qf_vblank(&f, 10);
	CHECK_INT(f.n_events, 3);
	/* And it comes back on with a fresh queue. */
	struct wla_fb *again = qf_screen_fb(0xff123456);
	CHECK_INT(qf_enable(&f, again, 50), 0);
	qf_vblank(&f, 1);
	CHECK_INT(f.events[f.n_events - 1].commit_seq, 50);
	CHECK(f.events[f.n_events - 1].presented);
	CHECK_PIXEL(qf_pixel(&f, 0, 0), 0xff123456);
	CHECK_INT(qf_disable(&f), 0);
	fake_drop(again);
	fake_drop(cursor);
	qf_finish(&f);
}

struct destroy_probe {
	struct fixture *f;
	size_t live_states;
	int locks[5];
	bool called;
};

/* A capture fails while the CRTC is disabled, after the queue completed. */
static void probe_capture(struct wla_capture *capture, const struct wla_image *image,
	uint64_t seq, void *data)
{
	struct destroy_probe *p = data;
	p->called = true;
	p->live_states = p->f->dev->live_states;
	for (int i = 0; i < 5; i++) {
		p->locks[i] = fake_recs[i].locks;
	}
	CHECK(image == NULL);
}

static void destroying_the_vdc_with_a_full_queue_releases_everything(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 3, false));
	struct wla_fb *fbs[5];
	for (int i = 0; i < 5; i++) {
		fbs[i] = qf_screen_fb(0xff505050 + (uint32_t)i);
	}
	CHECK_INT(qf_enable(&f, fbs[0], 1), 0);
	qf_vblank(&f, 1);
	qf_clear_events(&f);
	for (int i = 1; i < 4; i++) {
		CHECK_INT(qf_flip(&f, fbs[i], 10 + (uint64_t)i), 0);
	}
	CHECK_INT(qf_flip(&f, fbs[4], 99), -EBUSY);
	/* The client is gone before the display. */
	struct fake_fb_probe *extra = rec_of(fbs[4]);
	for (int i = 0; i < 5; i++) {
		fake_drop(fbs[i]);
	}
	CHECK(extra->destroyed);
	struct destroy_probe probe = { .f = &f };
	CHECK(wla_vdc_capture(f.out, probe_capture, &probe) != NULL);
	wla_vdc_destroy(f.vdc);
	f.vdc = NULL;
	/* At the disable, before the device's current states go: every queued
	 * frame completed and, the planes turned off with the CRTC, no fb held. */
	CHECK(probe.called);
	CHECK_INT(probe.live_states, 0);
	for (int i = 0; i < 3; i++) {
		CHECK_INT(probe.locks[i], 0);
	}
	CHECK_INT(probe.locks[3], 0); /* turned off with its CRTC: released at once */
	CHECK_INT(probe.locks[4], 0);
	/* The VDC's owner is going away: nobody is told (present unset). */
	CHECK_INT(f.n_events, 0);
	qf_finish(&f);
}

static void a_modeset_behind_queued_frames_latches_after_them_in_order(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 3, false));
	struct wla_fb *a = qf_screen_fb(0xff0a0a0a), *b = qf_screen_fb(0xff0b0b0b);
	struct wla_fb *c = qf_screen_fb(0xff0c0c0c);
	struct wla_fb *s1 = fake_fb_new(SMALL, SMALL, DRM_FORMAT_XRGB8888, 0xff515151);
	struct wla_fb *s2 = fake_fb_new(SMALL, SMALL, DRM_FORMAT_XRGB8888, 0xff525252);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	qf_clear_events(&f);
	CHECK_INT(qf_flip(&f, b, 2), 0);
	CHECK_INT(qf_flip(&f, c, 3), 0);
	CHECK_INT(qf_modeset(&f, QMODE(MODE_30), s1, 4), 0);
	CHECK_INT(f.crtc->state->mode.refresh_mhz, 30000); /* swapped in software */
	CHECK_INT(f.crtc->pending_frames, 3);
	/* The queued frames still latch at the old timing, first. */
	qf_vblank(&f, 2);
	check_event(&f, 0, 2, true, 2, qf_vblank_ns(&f, 2), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, QW - 1, QH - 1), 0xff0b0b0b);
	CHECK_INT(f.out->scanout.mode.width, QW);
	CHECK_INT(qf_flip(&f, s2, 5), 0); /* behind the mode change, new size */
	qf_vblank(&f, 3);
	check_event(&f, 1, 3, true, 3, qf_vblank_ns(&f, 3), PERIOD_60);
	CHECK_INT(locks_of(b), 0);
	qf_vblank(&f, 4);
	uint64_t t4 = qf_vblank_ns(&f, 4);
	/* The mode change: its present event has the new refresh. */
	check_event(&f, 2, 4, true, 4, t4, PERIOD_30);
	struct wla_image *image = wla_vdc_compose(f.out);
	CHECK(image && image->width == SMALL && image->height == SMALL);
	if (image) {
		CHECK_PIXEL(wla_image_pixel(image, SMALL - 1, SMALL - 1), 0xff515151);
	}
	wla_image_destroy(image);
	CHECK_INT(locks_of(c), 0);
	CHECK_INT(locks_of(s1), 1);
	/* The new timing starts at that vblank: the next 60 Hz vblank is too
	 * early for the frame behind it, vblank 1 of 30 Hz from there is right. */
	qf_advance_to(&f, vblank_grid_ns(t4, MHZ_60, 1));
	CHECK_INT(f.n_events, 3);
	uint64_t t5 = vblank_grid_ns(t4, MHZ_30, 1);
	qf_advance_to(&f, t5);
	check_event(&f, 3, 5, true, 5, t5, PERIOD_30);
	CHECK_INT(locks_of(s1), 0);
	CHECK_INT(locks_of(s2), 1);
	CHECK_INT(f.n_events, 4);
	CHECK_INT(qf_disable(&f), 0);
	CHECK_INT(f.dev->live_states, 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(c);
	fake_drop(s1);
	fake_drop(s2);
	qf_finish(&f);
}

static void a_blocking_modeset_with_a_non_empty_queue_is_refused(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 3, false));
	struct wla_fb *a = qf_screen_fb(0xff0a0a0a), *b = qf_screen_fb(0xff0b0b0b);
	struct wla_fb *s1 = fake_fb_new(SMALL, SMALL, DRM_FORMAT_XRGB8888, 0xff515151);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	CHECK_INT(qf_flip(&f, b, 2), 0);
	harness_log_clear();
	struct wla_mode m30 = QMODE(MODE_30);
	CHECK_INT(wla_atomic_set_config(f.crtc, &f.out->connector, &m30, s1, 3), -EBUSY);
	CHECK_LOGGED("crtc-0", "blocking commit refused");
	CHECK_INT(f.crtc->state->mode.refresh_mhz, 60000);
	CHECK_INT(locks_of(s1), 0);
	CHECK_INT(rec_of(s1)->prepares, 0);
	qf_vblank(&f, 2);
	CHECK_INT(wla_atomic_set_config(f.crtc, &f.out->connector, &m30, s1, 3), 0);
	qf_vblank(&f, 3);
	CHECK_INT(f.events[f.n_events - 1].commit_seq, 3);
	CHECK_INT(f.events[f.n_events - 1].refresh_ns, PERIOD_30);
	CHECK_INT(qf_disable(&f), 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(s1);
	qf_finish(&f);
}

static void a_cursor_update_is_refused_while_frames_are_queued_and_a_frame_moves_it_instead(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 3, false));
	struct wla_fb *a = qf_screen_fb(0xff0000a0), *b = qf_screen_fb(0xff0000b0);
	struct wla_fb *c = qf_screen_fb(0xff0000c0), *d = qf_screen_fb(0xff0000d0);
	struct wla_fb *e = qf_screen_fb(0xff0000e0);
	struct wla_fb *cur = fake_fb_new(16, 16, DRM_FORMAT_ARGB8888, 0xffff00ff);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	qf_clear_events(&f);
	CHECK_INT(qf_flip(&f, b, 2), 0);
	CHECK_INT(qf_flip(&f, c, 3), 0);
	CHECK_INT(qf_flip(&f, d, 4), 0);
	/* A cursor update is an ordinary blocking state: refused while anything
	 * is queued, and nothing of it is left behind. */
	const struct wla_plane_state *cursor_state = f.crtc->cursor->state;
	int refs = cur->refs;
	harness_log_clear();
	CHECK_INT(move_cursor(&f, cur, 0, 0), -EBUSY);
	CHECK_LOGGED("crtc-0", "blocking commit refused");
	CHECK(f.crtc->cursor->state == cursor_state);
	CHECK_INT(cur->refs, refs);
	CHECK_INT(locks_of(cur), 0);
	CHECK_INT(rec_of(cur)->prepares, 0);
	CHECK_INT(f.crtc->queued, 3);
	CHECK_INT(f.crtc->pending_frames, 3);
	CHECK_INT(f.dev->live_states, 3);
	CHECK_INT(f.n_events, 0);
	check_oracles(&f);

	/* A frame carrying the cursor plane moves it with the frame: at that
	 * frame's vblank, behind the frames before it. */
	qf_vblank(&f, 2);
	check_event(&f, 0, 2, true, 2, qf_vblank_ns(&f, 2), PERIOD_60);
	struct wla_atomic_state *s = qf_begin(&f, 5, true);
	qf_plane(&f, s, f.crtc->primary, e, 0, 0);
	qf_plane(&f, s, f.crtc->cursor, cur, 20, 20);
	CHECK_INT(qf_commit(s), 0);
	CHECK_INT(locks_of(cur), 1);
	CHECK_INT(f.crtc->pending_frames, 3);
	check_oracles(&f);
	qf_vblank(&f, 3);
	check_event(&f, 1, 3, true, 3, qf_vblank_ns(&f, 3), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 21, 21), 0xff0000c0);
	qf_vblank(&f, 4);
	check_event(&f, 2, 4, true, 4, qf_vblank_ns(&f, 4), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 21, 21), 0xff0000d0);
	check_oracles(&f);
	qf_vblank(&f, 5);
	check_event(&f, 3, 5, true, 5, qf_vblank_ns(&f, 5), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 21, 21), 0xffff00ff);
	CHECK_PIXEL(qf_pixel(&f, 1, 1), 0xff0000e0);
	CHECK_INT(f.n_events, 4);
	CHECK_INT(locks_of(cur), 1);
	CHECK_INT(locks_of(d), 0);
	CHECK_INT(f.dev->live_states, 0);
	check_oracles(&f);
	CHECK_INT(qf_disable(&f), 0);
	CHECK_INT(locks_of(cur), 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(c);
	fake_drop(d);
	fake_drop(e);
	fake_drop(cur);
	qf_finish(&f);
}

static void an_idle_cursor_update_latches_at_the_next_vblank_and_a_frame_joins_it(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 2, false));
	struct wla_fb *a = qf_screen_fb(0xff0000a0), *b = qf_screen_fb(0xff0000b0);
	struct wla_fb *cur = fake_fb_new(16, 16, DRM_FORMAT_ARGB8888, 0xffff00ff);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	qf_clear_events(&f);
	/* Idle: the update latches at the next vblank, without an event. */
	CHECK_INT(move_cursor(&f, cur, 20, 20), 0);
	CHECK_INT(f.crtc->queued, 1);
	CHECK_INT(f.crtc->armed, 1);
	CHECK_INT(f.crtc->pending_frames, 0);
	CHECK_INT(f.dev->live_states, 1);
	CHECK_INT(locks_of(cur), 1);
	CHECK_PIXEL(qf_pixel(&f, 21, 21), 0xff0000a0); /* not before the vblank */
	check_oracles(&f);
	qf_advance_to(&f, qf_vblank_ns(&f, 2) - 1);
	CHECK_PIXEL(qf_pixel(&f, 21, 21), 0xff0000a0);
	qf_vblank(&f, 2);
	CHECK_INT(f.n_events, 0);
	CHECK_PIXEL(qf_pixel(&f, 21, 21), 0xffff00ff);
	CHECK_INT(f.crtc->queued, 0);
	CHECK_INT(f.dev->live_states, 0);
	CHECK_INT(f.out->crtc.latches, 2);
	check_oracles(&f);

	/* Moved again, then a frame: the driver writes the frame over the
	 * cursor update (rearm) and both latch at the next vblank; the frame
	 * does not wait a vblank behind it. */
	CHECK_INT(move_cursor(&f, cur, 40, 30), 0);
	CHECK_INT(locks_of(cur), 2); /* the state on screen and the armed one */
	CHECK_INT(qf_flip(&f, b, 2), 0);
	CHECK_INT(f.crtc->armed, 2);
	CHECK_INT(f.crtc->queued, 2);
	CHECK_INT(f.crtc->pending_frames, 1);
	CHECK_INT(f.crtc->waiting_frames, 0);
	/* A second cursor update while anything is queued is refused. */
	CHECK_INT(move_cursor(&f, cur, 0, 0), -EBUSY);
	CHECK_INT(locks_of(cur), 2);
	CHECK_PIXEL(qf_pixel(&f, 41, 31), 0xff0000a0);
	check_oracles(&f);
	qf_vblank(&f, 3);
	CHECK_INT(f.n_events, 1);
	check_event(&f, 0, 2, true, 3, qf_vblank_ns(&f, 3), PERIOD_60);
	CHECK_PIXEL(qf_pixel(&f, 41, 31), 0xffff00ff);
	CHECK_PIXEL(qf_pixel(&f, 21, 21), 0xff0000b0);
	CHECK_PIXEL(qf_pixel(&f, 1, 1), 0xff0000b0);
	CHECK_INT(f.out->crtc.latches, 3); /* one latch for both */
	CHECK_INT(locks_of(cur), 1);
	CHECK_INT(locks_of(a), 0);
	CHECK_INT(f.crtc->queued, 0);
	CHECK_INT(f.dev->live_states, 0);
	check_oracles(&f);

	/* Hidden: released at the vblank that takes it off. */
	CHECK_INT(move_cursor(&f, NULL, 0, 0), 0);
	CHECK_INT(locks_of(cur), 1);
	CHECK_PIXEL(qf_pixel(&f, 41, 31), 0xffff00ff);
	qf_vblank(&f, 4);
	CHECK_INT(locks_of(cur), 0);
	CHECK_PIXEL(qf_pixel(&f, 41, 31), 0xff0000b0);
	CHECK_INT(f.n_events, 1);
	CHECK_INT(f.dev->live_states, 0);
	check_oracles(&f);
	CHECK_INT(qf_disable(&f), 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(cur);
	qf_finish(&f);
}

static void a_cursor_update_waits_while_a_queued_frame_changes_the_cursor_plane(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 2, false));
	struct wla_fb *a = qf_screen_fb(0xff0000a0), *b = qf_screen_fb(0xff0000b0);
	struct wla_fb *c1 = fake_fb_new(16, 16, DRM_FORMAT_ARGB8888, 0xffff0001);
	struct wla_fb *c2 = fake_fb_new(16, 16, DRM_FORMAT_ARGB8888, 0xffff0002);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	struct wla_atomic_state *s = qf_begin(&f, 2, true);
	qf_plane(&f, s, f.crtc->primary, b, 0, 0);
	qf_plane(&f, s, f.crtc->cursor, c1, 0, 0);
	CHECK_INT(qf_commit(s), 0);
	const struct wla_plane_state *cursor_state = f.crtc->cursor->state;
	CHECK_INT(move_cursor(&f, c2, 8, 8), -EBUSY);
	CHECK(f.crtc->cursor->state == cursor_state);
	CHECK_INT(locks_of(c2), 0);
	CHECK_INT(rec_of(c2)->prepares, 0);
	qf_vblank(&f, 2);
	CHECK_PIXEL(qf_pixel(&f, 1, 1), 0xffff0001);
	CHECK_INT(move_cursor(&f, c2, 8, 8), 0);
	qf_vblank(&f, 3);
	CHECK_PIXEL(qf_pixel(&f, 9, 9), 0xffff0002);
	CHECK_PIXEL(qf_pixel(&f, 1, 1), 0xff0000b0);
	CHECK_INT(locks_of(c1), 0);
	CHECK_INT(locks_of(c2), 1);
	check_oracles(&f);
	CHECK_INT(qf_disable(&f), 0);
	CHECK_INT(f.dev->live_states, 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(c1);
	fake_drop(c2);
	qf_finish(&f);
}

static void a_failed_prepare_leaves_the_queue_untouched(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 3, false));
	struct wla_fb *a = qf_screen_fb(0xff0000a0), *b = qf_screen_fb(0xff0000b0);
	struct wla_fb *ov = fake_fb_new(8, 8, DRM_FORMAT_XRGB8888, 0xff777777);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	CHECK_INT(qf_flip(&f, b, 2), 0);
	size_t live = f.dev->live_states;
	rec_of(ov)->fail_prepare_once = -ENOMEM;
	struct wla_atomic_state *s = qf_begin(&f, 3, true);
	qf_plane(&f, s, f.crtc->primary, a, 0, 0);
	qf_plane(&f, s, &f.out->overlays[0], ov, 0, 0);
	harness_log_clear();
	CHECK_INT(qf_commit(s), -ENOMEM);
	CHECK_LOGGED("prepare_fb failed");
	CHECK_INT(locks_of(a), 1); /* the prepared primary was cleaned up again */
	CHECK_INT(locks_of(ov), 0);
	CHECK_INT(f.crtc->pending_frames, 1);
	CHECK_INT(f.dev->live_states, live);
	CHECK(f.crtc->primary->state->fb == b);
	qf_vblank(&f, 2);
	CHECK_INT(f.events[f.n_events - 1].commit_seq, 2);
	check_oracles(&f);
	CHECK_INT(qf_disable(&f), 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(ov);
	qf_finish(&f);
}

/*
 * The core answers "does a frame fit" for the glue (its frame events) from
 * the same rule its commits follow: with FIFO a frame that fits is queued
 * and one that does not is refused; with mailbox one that does not fit
 * replaces the newest waiting frame (it counts only the frames not handed
 * to the driver). At depths 1 to 3, filled frame by
 * frame with no vblank, then drained vblank by vblank.
 */
static void frame_fits_is_what_the_next_frame_commit_does(void)
{
	for (uint32_t depth = 1; depth <= 3; depth++) {
		for (int mailbox = 0; mailbox <= 1; mailbox++) {
			struct fixture f;
			CHECK(qf_init(&f, depth, mailbox));
			struct wla_fb *a = qf_screen_fb(0xff0000a0), *b = qf_screen_fb(0xff0000b0);
			CHECK_INT(qf_enable_latched(&f, a), 0);
			uint64_t seq = 2, k = 2;
			for (unsigned i = 0; i < depth + 2; i++) {
				/* Mailbox counts only frames the driver was not
				 * handed: the first goes to it at once. */
				bool fits = wla_crtc_frame_fits(f.crtc);
				CHECK(fits == (i < depth + (unsigned)mailbox));
				size_t events = f.n_events;
				unsigned pending = f.crtc->pending_frames;
				harness_log_clear();
				int ret = qf_flip(&f, i % 2 ? a : b, seq++);
				if (fits) {
					CHECK_INT(ret, 0);
					CHECK_INT(f.crtc->pending_frames, pending + 1);
					CHECK_INT(f.n_events, events);
				} else if (mailbox) {
					/* Replaced: the count stays, one discard event. */
					CHECK_INT(ret, 0);
					CHECK_INT(f.crtc->pending_frames, pending);
					CHECK_INT(f.n_events, events + 1);
					CHECK(f.events[f.n_events - 1].discarded);
				} else {
					CHECK_INT(ret, -EBUSY);
					CHECK_LOGGED("flip queue full");
				}
			}
			/* Each latch frees one slot, and then a frame fits. */
			while (f.crtc->pending_frames > 0) {
				qf_vblank(&f, k++);
				CHECK(wla_crtc_frame_fits(f.crtc));
			}
			check_oracles(&f);
			CHECK_INT(qf_disable(&f), 0);
			fake_drop(a);
			fake_drop(b);
			qf_finish(&f);
		}
	}
}

/* (cold review) With mailbox and the queue full, a frame committed now
 * replaces the newest waiting frame and latches where it would have: the
 * core's next latch says so (it said a vblank later). */
static void mailbox_next_latch_is_the_replaced_frames_vblank(void)
{
	struct fixture f;
	CHECK(qf_init(&f, 1, true));
	struct wla_fb *a = qf_screen_fb(0xff0000a1), *b = qf_screen_fb(0xff0000b1);
	struct wla_fb *c = qf_screen_fb(0xff0000c1), *d = qf_screen_fb(0xff0000d1);
	CHECK_INT(qf_enable_latched(&f, a), 0);
	CHECK_INT(qf_flip(&f, b, 2), 0); /* armed for vblank 2 */
	CHECK_INT(qf_flip(&f, c, 3), 0); /* waits: vblank 3 */
	CHECK(!wla_crtc_frame_fits(f.crtc));
	uint64_t latch = 0, commit_by = 0;
	CHECK(wla_crtc_next_latch(f.crtc, &latch, &commit_by));
	CHECK_INT(latch, qf_vblank_ns(&f, 3));
	qf_clear_events(&f);
	CHECK_INT(qf_flip(&f, d, 4), 0); /* replaces c */
	CHECK_INT(f.n_events, 1);
	CHECK(f.events[0].discarded);
	qf_vblank(&f, 2);
	qf_vblank(&f, 3);
	CHECK_INT(f.n_events, 3);
	CHECK_INT(f.events[2].commit_seq, 4);
	CHECK_INT(f.events[2].when_ns, latch);
	check_oracles(&f);
	CHECK_INT(qf_disable(&f), 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(c);
	fake_drop(d);
	qf_finish(&f);
}

int main(void)
{
	harness_init();
	RUN_TEST(frames_queued_at_depth_3_latch_one_per_vblank_in_commit_order);
	RUN_TEST(depth_1_refuses_a_second_frame_with_flip_queue_full);
	RUN_TEST(depth_2_refuses_a_third_frame_with_flip_queue_full);
	RUN_TEST(a_blocking_commit_is_refused_while_frames_are_queued);
	RUN_TEST(mailbox_at_depth_1_replaces_the_waiting_frame_and_releases_it_at_once);
	RUN_TEST(mailbox_replacement_carries_the_replaced_frames_damage);
	RUN_TEST(damage_beyond_the_limit_is_its_bounding_box);
	RUN_TEST(mailbox_at_depth_2_replaces_only_the_newest_waiting_frame);
	RUN_TEST(mailbox_replacement_keeps_the_replaced_frames_other_planes);
	RUN_TEST(each_fb_is_released_at_the_vblank_that_latches_its_replacement);
	RUN_TEST(a_client_dropping_a_queued_or_shown_fb_changes_nothing_on_screen);
	RUN_TEST(disabling_with_a_full_queue_reports_every_frame_not_presented);
	RUN_TEST(destroying_the_vdc_with_a_full_queue_releases_everything);
	RUN_TEST(a_modeset_behind_queued_frames_latches_after_them_in_order);
	RUN_TEST(a_blocking_modeset_with_a_non_empty_queue_is_refused);
	RUN_TEST(a_cursor_update_is_refused_while_frames_are_queued_and_a_frame_moves_it_instead);
	RUN_TEST(an_idle_cursor_update_latches_at_the_next_vblank_and_a_frame_joins_it);
	RUN_TEST(a_cursor_update_waits_while_a_queued_frame_changes_the_cursor_plane);
	RUN_TEST(a_failed_prepare_leaves_the_queue_untouched);
	RUN_TEST(frame_fits_is_what_the_next_frame_commit_does);
	RUN_TEST(mailbox_next_latch_is_the_replaced_frames_vblank);
	HARNESS_EXIT();
}
