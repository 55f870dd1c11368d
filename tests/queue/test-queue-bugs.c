/*
 * Regression tests for bugs the queue suite found: the next latch behind a
 * queued mode change, a cursor update applied again over a frame latching at
 * the same vblank, a legacy cursor hide while a queued frame holds the
 * cursor plane, and vblank times drifting from 59.94 Hz.
 */
#include "queue-helpers.h"

static void the_next_latch_after_a_queued_modeset_follows_the_new_timing(void)
{
	struct qf f;
	CHECK(qf_init(&f, 3, false));
	struct wla_fb *a = screen_fb(0xff0a0a0a), *b = screen_fb(0xff0b0b0b);
	struct wla_fb *s1 = fake_fb_create(SMALL, SMALL, DRM_FORMAT_XRGB8888, 0xff515151);
	CHECK_INT(qf_enable(&f, a, 1), 0);
	qf_vblank(&f, 1);
	uint64_t latch = 0;
	CHECK(wla_vdc_next_latch(f.out, &latch));
	CHECK_INT(latch, qf_vblank_ns(&f, 2));
	CHECK_INT(qf_flip(&f, b, 2), 0);
	CHECK(wla_vdc_next_latch(f.out, &latch));
	CHECK_INT(latch, qf_vblank_ns(&f, 3));
	CHECK_INT(qf_modeset(&f, QMODE(MODE_30), s1, 3), 0);
	/* b at vblank 2, the mode change at vblank 3, so the next frame at
	 * vblank 1 of the 30 Hz timing that starts there. */
	CHECK(wla_vdc_next_latch(f.out, &latch));
	CHECK_INT(latch, vblank_grid_ns(qf_vblank_ns(&f, 3), MHZ_30, 1));
	CHECK_INT(qf_disable(&f), 0);
	fake_drop(a);
	fake_drop(b);
	fake_drop(s1);
	qf_finish(&f);
}

static void a_frame_changing_the_cursor_after_a_cursor_update_shows_its_own_cursor(void)
{
	struct qf f;
	CHECK(qf_init(&f, 2, false));
	struct wla_fb *a = screen_fb(0xff0000a0), *b = screen_fb(0xff0000b0);
	struct wla_fb *c1 = fake_fb_create(16, 16, DRM_FORMAT_ARGB8888, 0xffff0001);
	struct wla_fb *c2 = fake_fb_create(16, 16, DRM_FORMAT_ARGB8888, 0xffff0002);
	CHECK_INT(qf_enable(&f, a, 1), 0);
	qf_vblank(&f, 1);
	/* A cursor update, then before the vblank a frame that moves the
	 * cursor itself (its own image, elsewhere). */
	CHECK_INT(move_cursor(&f, c1, 0, 0), 0);
	struct wla_atomic_state *s = qf_begin(&f, 2, true);
	qf_plane(&f, s, f.crtc->primary, b, 0, 0);
	qf_plane(&f, s, f.crtc->cursor, c2, 30, 30);
	CHECK_INT(qf_commit(s), 0);
	check_oracles(&f);
	qf_vblank(&f, 2);
	/* Both latch at this vblank, the frame last: its cursor is shown. */
	CHECK_PIXEL(qf_pixel(&f, 31, 31), 0xffff0002);
	CHECK_PIXEL(qf_pixel(&f, 1, 1), 0xff0000b0);
	CHECK(f.out->scanout.planes[f.crtc->cursor->zpos] == f.crtc->cursor->state);
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

#define NTSC_MHZ 59940
#define NTSC_VBLANKS UINT64_C(1000000)

/*
 * Retired with issue 9, to be rewritten to the new semantics (notes):
 * hiding_a_hidden_cursor_... expected the cursor update to be refused while
 * a queued frame holds the plane; now a plane that stays off is accepted
 * once the driver holds that frame (test-core-regressions covers the
 * ordering). vblank_times_at_59_94_... expected a late wake-up to report the
 * last vblank; test-queue-long checks the honest replay over 1e6 vblanks.
 */
int main(void)
{
	harness_init();
	RUN_TEST(the_next_latch_after_a_queued_modeset_follows_the_new_timing);
	RUN_TEST(a_frame_changing_the_cursor_after_a_cursor_update_shows_its_own_cursor);
	HARNESS_EXIT();
}
