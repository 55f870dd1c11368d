/*
 * The virtual display controller (backend/vdc) on a clock that only the test
 * moves: vblank timing and counting, capture of what is on screen, and the
 * planes it offers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/timerfd.h>
#include <time.h>
#include "lib/vdc-fixture.h"
#include "lib/legacy.h"

#define W 64
#define H 48

struct capture_result {
	int calls;
	bool got_image;
	uint64_t seq;
	uint32_t width, height;
	uint32_t pixels[W * H];
};

/* The last present event was of vblank k, at its time on the grid. */
#define CHECK_PRESENTED_AT(f, k) \
	do { \
		CHECK_INT((f).last_present.seq, (k)); \
		CHECK_INT(timespec_to_ns(&(f).last_present.when), vblank_at(&(f), (k))); \
	} while (0)

/* What the output counted: vblanks, how many of them missed, latches. */
#define CHECK_VBLANKS(f, vblanks_, missed_, latches_) \
	do { \
		CHECK_INT((f).out->counters.vblanks, (vblanks_)); \
		CHECK_INT(wla_crtc_missed(&(f).out->crtc, (f).out->seq), (missed_)); \
		CHECK_INT((f).out->crtc.latches, (latches_)); \
	} while (0)

/* A blue screen fb enabled and latched at vblank 1; a red one into *red,
 * for the case to commit next. Returns the blue one. */
static struct wla_fb *running_blue(struct fixture *f, struct wla_fb **red)
{
	struct wla_fb *blue = screen_fb(f, OPAQUE(BLUE), NULL);
	*red = screen_fb(f, OPAQUE(RED), NULL);
	CHECK_INT(enable_output(f, blue), 0);
	vblank(f);
	return blue;
}

static void record_capture(struct wla_capture *capture, const struct wla_image *image,
	uint64_t seq, void *data)
{
	struct capture_result *res = data;
	res->calls++;
	res->seq = seq;
	res->got_image = image != NULL;
	if (!image) {
		return;
	}
	res->width = image->width;
	res->height = image->height;
	for (uint32_t y = 0; y < image->height && y < H; y++) {
		for (uint32_t x = 0; x < image->width && x < W; x++) {
			res->pixels[y * W + x] = wla_image_pixel(image, x, y);
		}
	}
}

static uint32_t captured(const struct capture_result *res, uint32_t x, uint32_t y)
{
	return res->pixels[y * W + x];
}

static bool plane_has_format(const struct wla_plane *plane, uint32_t format)
{
	/* Shared memory buffers carry no modifier; the VDC reads them linear. */
	return wla_plane_supports(plane, format, DRM_FORMAT_MOD_INVALID) &&
		wla_plane_supports(plane, format, DRM_FORMAT_MOD_LINEAR);
}

/* Vblank timing */

static void vdc_vblank_comes_one_period_after_enable_and_not_before(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	CHECK_INT(enable_output(&f, screen_fb(&f, OPAQUE(BLUE), NULL)), 0);
	CHECK_INT(f.out->period_ns, 16666667);
	CHECK_INT(f.out->epoch_ns, f.epoch);

	wla_vdc_advance(f.vdc, f.epoch + 16666666);
	CHECK_INT(f.n_presents, 0);
	CHECK_INT(f.out->counters.vblanks, 0);
	wla_vdc_advance(f.vdc, f.epoch + 16666667);
	CHECK_INT(f.n_presents, 1);
	CHECK_INT(f.presents[0].seq, 1);
	CHECK_INT(timespec_to_ns(&f.presents[0].when), f.epoch + 16666667);
	CHECK_VBLANKS(f, 1, 0, 1);
	/* The same instant again is not another vblank. */
	wla_vdc_advance(f.vdc, f.epoch + 16666667);
	CHECK_INT(f.out->counters.vblanks, 1);
	f.now = f.epoch + 16666667;
	fixture_teardown(&f);
}

static void vdc_vblank_k_is_the_exact_rate_rounded_once_not_k_rounded_periods(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	CHECK_INT(enable_output(&f, a), 0);
	/* 1e12 / 60000 = 16666666.67 ns: vblank 2 is at +33333333, vblank 3
	 * at +50000000, where two and three rounded periods would be one and
	 * two ns late. */
	static const uint64_t at[] = { 16666667, 33333333, 50000000, 66666667 };
	for (uint64_t k = 1; k <= 4; k++) {
		wla_vdc_advance(f.vdc, f.epoch + at[k - 1] - 1);
		CHECK_INT(f.out->counters.vblanks, k - 1);
		f.now = f.epoch + at[k - 1];
		wla_vdc_advance(f.vdc, f.now);
		CHECK_INT(f.out->counters.vblanks, k);
		CHECK_INT(f.last_present.seq, k);
		CHECK_INT(timespec_to_ns(&f.last_present.when), f.epoch + at[k - 1]);
		/* The reported refresh stays the rounded period. */
		CHECK_INT(f.last_present.refresh_ns, 16666667);
		CHECK_INT(page_flip(&f, a), 0);
	}
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	CHECK_INT(f.out->crtc.latches, 4);
	/* The tests' own grid agrees. */
	for (uint64_t k = 1; k <= 4; k++) {
		CHECK_INT(vblank_at(&f, k), f.epoch + at[k - 1]);
		CHECK_INT(vblank_grid_count(f.epoch, 60000, f.epoch + at[k - 1]), k);
		CHECK_INT(vblank_grid_count(f.epoch, 60000, f.epoch + at[k - 1] - 1), k - 1);
	}
	fixture_teardown(&f);
}

static void vdc_late_wakeup_does_not_shift_the_vblank_grid(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	CHECK_INT(enable_output(&f, a), 0);
	/* Woken up 90% of a period late. */
	f.now = vblank_at(&f, 1) + f.period * 9 / 10;
	wla_vdc_advance(f.vdc, f.now);
	CHECK_PRESENTED_AT(f, 1);

	CHECK_INT(page_flip(&f, a), 0);
	f.now = vblank_at(&f, 2);
	wla_vdc_advance(f.vdc, f.now);
	CHECK_PRESENTED_AT(f, 2);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	fixture_teardown(&f);
}

static void vdc_late_wakeup_reports_the_vblank_that_latched_not_the_last_one(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *b;
	struct wla_fb *a = running_blue(&f, &b);
	CHECK_INT(f.last_present.seq, 1);

	/* Committed at vblank 1, woken up only after vblank 4: b latched at
	 * vblank 2 and says so; nothing was committed too late, nothing missed. */
	CHECK_INT(page_flip(&f, b), 0);
	f.now += f.period * 7 / 2;
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 2);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	CHECK(f.last_present.presented);
	CHECK_PRESENTED_AT(f, 2);
	CHECK_INT(f.out->seq, 4);
	CHECK_INT(f.out->counters.seq, 4);
	CHECK_VBLANKS(f, 4, 0, 2);

	/* Committed after vblank 4: the next vblank is the 5th. */
	CHECK_INT(page_flip(&f, a), 0);
	f.now = vblank_at(&f, 5);
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 3);
	CHECK_PRESENTED_AT(f, 5);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	CHECK_INT(f.out->crtc.latches, 3);
	fixture_teardown(&f);
}

/* Honest vblanks */

/* Committed after vblank 2's instant, before anything processed vblank 2:
 * with the timer running the VDC replays vblank 2 with the state armed, with
 * it stopped the commit catches up first. */
static void commit_after_a_vblanks_instant(bool timer)
{
	struct fixture f;
	struct fake_fb_probe *pa, *pb;
	CHECK(timer ? fixture_setup_timers(&f, W, H, 60000) : fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), &pa);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), &pb);
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);
	CHECK_INT(f.out->timer_armed, timer);

	/* Vblank 2 has happened on the clock, the timer has not run yet. */
	f.now = vblank_at(&f, 2) + 1000;
	const uint64_t committed = f.now;
	CHECK_INT(page_flip(&f, b), 0);
	const uint64_t b_seq = f.last_commit_seq;
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 1);
	CHECK(f.out->armed);
	CHECK(f.out->scanout.planes[f.primary->zpos]->fb == a);
	CHECK_INT(f.out->seq, 2);
	CHECK_INT(f.out->counters.vblanks, 2);
	/* Committed after vblank 2, not too late for it: no miss. */
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);

	/* Even a wake-up half a period late reports vblank 3. */
	f.now = vblank_at(&f, 3) + f.period / 2;
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 2);
	CHECK_INT(f.last_present.commit_seq, b_seq);
	CHECK(f.last_present.presented);
	CHECK_PRESENTED_AT(f, 3);
	CHECK(timespec_to_ns(&f.last_present.when) >= committed);
	CHECK(f.out->scanout.planes[f.primary->zpos]->fb == b);
	CHECK(!f.out->armed);
	CHECK_INT(pa->locks, 0);
	CHECK_INT(pb->locks, 1);
	CHECK_INT(f.out->counters.vblanks, 3);
	CHECK_INT(f.out->crtc.latches, 2);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	fixture_teardown(&f);
}

static void vdc_commit_after_a_vblanks_instant_before_the_wakeup_latches_at_the_next_one(void)
{
	commit_after_a_vblanks_instant(true);
	commit_after_a_vblanks_instant(false);
}

static void vdc_three_frames_queued_across_a_late_wakeup_latch_one_per_vblank(void)
{
	struct fixture f;
	struct fake_fb_probe *pa, *p[3];
	CHECK(fixture_setup(&f, W, H, 60000));
	f.crtc->queue_depth = 3;
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), &pa);
	struct wla_fb *fb[3];
	for (int i = 0; i < 3; i++) {
		fb[i] = screen_fb(&f, OPAQUE(RED), &p[i]);
	}
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);
	const uint64_t committed = f.now;
	for (int i = 0; i < 3; i++) {
		CHECK_INT(queue_flip(&f, fb[i]), 0);
	}
	const uint64_t first_seq = f.last_commit_seq - 2;
	CHECK_INT(f.crtc->pending_frames, 3);
	CHECK_INT(f.crtc->armed, 1);
	CHECK_INT(f.crtc->waiting_frames, 2);

	/* The first was due at vblank 2; the wake-up comes three vblanks late,
	 * after vblank 5. */
	f.now = vblank_at(&f, 5) + f.period / 4;
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 4);
	for (uint64_t i = 0; i < 3; i++) {
		const struct wla_present *e = &f.presents[1 + i];
		CHECK_INT(e->commit_seq, first_seq + i);
		CHECK(e->presented);
		CHECK(!e->discarded && !e->failed);
		CHECK_INT(e->seq, 2 + i);
		CHECK_INT(timespec_to_ns(&e->when), vblank_at(&f, 2 + i));
		CHECK(timespec_to_ns(&e->when) >= committed);
		CHECK_INT(e->refresh_ns, 16666667);
		CHECK_INT(e->flags, WLA_PRESENT_VSYNC | WLA_PRESENT_HW_CLOCK |
			WLA_PRESENT_HW_COMPLETION);
	}
	CHECK_INT(f.out->seq, 5);
	CHECK_INT(f.out->counters.vblanks, 5);
	CHECK_INT(f.out->crtc.latches, 4);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	CHECK(!f.out->armed);
	CHECK_INT(f.crtc->queued, 0);
	CHECK_INT(f.crtc->pending_frames, 0);
	CHECK(f.out->scanout.planes[f.primary->zpos] == f.primary->state);
	CHECK(f.primary->state->fb == fb[2]);
	CHECK_INT(pa->locks, 0);
	CHECK_INT(p[0]->locks, 0);
	CHECK_INT(p[1]->locks, 0);
	CHECK_INT(p[2]->locks, 1);
	CHECK_INT(f.vdc->dev.live_states, 0);
	fixture_teardown(&f);
}

/* The configured latch minimum is the VDC's: 2 ms makes a commit 1 ms
 * before a vblank miss it, 0 lets one 1 ns before it latch there. */
/* Only frames miss vblanks: a cursor update inside the slack latches a
 * vblank later without a miss counted. */
static void vdc_a_cursor_update_within_the_slack_is_no_miss(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	struct wla_fb *c = fixture_fb(&f, 16, 16, DRM_FORMAT_ARGB8888, OPAQUE(BLUE), NULL);
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);
	f.now = vblank_at(&f, 2) - WLA_VDC_COMMIT_SLACK_NS / 2;
	CHECK_INT(move_cursor(&f, c, 4, 4), 0);
	for (int i = 0; i < 3; i++) {
		vblank(&f);
	}
	CHECK_INT(f.out->crtc.latches, 2);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	fixture_teardown(&f);
}

static void vdc_latch_slack_follows_the_configuration(void)
{
	static const struct {
		uint32_t slack_us;
		uint64_t before_ns;
		uint64_t latch_seq;
	} cases[] = {
		{ 2000, 1000000, 3 },
		{ 2000, 2000000, 2 },
		{ 0, 1, 2 },
		{ 0, 0, 3 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture f;
		memset(&f, 0, sizeof(f));
		wla_config_init(&f.cfg);
		f.cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
		f.cfg.latch_slack_us = cases[i].slack_us;
		CHECK(fixture_setup_config(&f));
		CHECK_INT(f.vdc->dev.latch_slack_ns, (uint64_t)cases[i].slack_us * 1000);
		struct wla_fb *b;
		running_blue(&f, &b);
		uint64_t latch = 0, commit_by = 0;
		CHECK(wla_crtc_next_latch(f.crtc, &latch, &commit_by));
		CHECK_INT(latch - commit_by, (uint64_t)cases[i].slack_us * 1000);
		/* before_ns 0: at the vblank's instant, after it. */
		size_t presents = f.n_presents;
		f.now = vblank_at(&f, 2) - cases[i].before_ns;
		CHECK_INT(page_flip(&f, b), 0);
		f.now = vblank_at(&f, 3) + 1000;
		wla_vdc_advance(f.vdc, f.now);
		CHECK_INT(f.n_presents, presents + 1);
		CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
		CHECK_INT(f.last_present.seq, cases[i].latch_seq);
		CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), cases[i].latch_seq == 3 && cases[i].before_ns > 0);
		fixture_teardown(&f);
	}
}

static void vdc_commit_within_the_slack_misses_the_vblank_and_counts_one_miss(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	CHECK_INT(WLA_VDC_COMMIT_SLACK_NS, 200000);
	CHECK_INT(f.vdc->dev.latch_slack_ns, WLA_VDC_COMMIT_SLACK_NS);
	struct wla_fb *b;
	struct wla_fb *a = running_blue(&f, &b);

	/* One nanosecond inside the slack of vblank 2. */
	f.now = vblank_at(&f, 2) - WLA_VDC_COMMIT_SLACK_NS + 1;
	CHECK_INT(page_flip(&f, b), 0);
	vblank(&f);
	CHECK_INT(f.n_presents, 1);
	CHECK(f.out->armed);
	CHECK_VBLANKS(f, 2, 1, 1);
	vblank(&f);
	CHECK_INT(f.n_presents, 2);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	CHECK_PRESENTED_AT(f, 3);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 1);
	CHECK_INT(f.out->crtc.latches, 2);

	/* Exactly the slack before vblank 4 is early enough. */
	f.now = vblank_at(&f, 4) - WLA_VDC_COMMIT_SLACK_NS;
	CHECK_INT(page_flip(&f, a), 0);
	vblank(&f);
	CHECK_INT(f.n_presents, 3);
	CHECK_PRESENTED_AT(f, 4);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 1);

	/* Too late for vblank 5 and woken up after vblank 7: one miss, the
	 * latch at vblank 6. */
	f.now = vblank_at(&f, 5) - 1;
	CHECK_INT(page_flip(&f, b), 0);
	f.now = vblank_at(&f, 7) + f.period / 2;
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 4);
	CHECK_PRESENTED_AT(f, 6);
	CHECK_VBLANKS(f, 7, 2, 4);
	/* What the glue reads (frame stats) says the same. */
	struct wla_vblank_counters counters;
	CHECK(wla_crtc_get_counters(f.crtc, &counters));
	CHECK_INT(counters.vblanks, 7);
	CHECK_INT(counters.missed, 2);
	CHECK_INT(counters.latched, 4);
	CHECK_INT(counters.seq, 7);
	CHECK_INT(counters.refresh_ns, 16666667);
	fixture_teardown(&f);
}

static void vdc_stall_with_nothing_committed_counts_no_miss(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *b;
	running_blue(&f, &b);

	/* Ten vblanks without a wake-up and nothing committed. */
	f.now = vblank_at(&f, 11) + f.period / 2;
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 1);
	CHECK_INT(f.out->seq, 11);
	CHECK_VBLANKS(f, 11, 0, 1);

	/* Committed in time, the wake-up three vblanks late: not a miss either. */
	CHECK_INT(page_flip(&f, b), 0);
	f.now = vblank_at(&f, 15);
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 2);
	CHECK_PRESENTED_AT(f, 12);
	CHECK_INT(f.out->seq, 15);
	CHECK_VBLANKS(f, 15, 0, 2);
	fixture_teardown(&f);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return timespec_to_ns(&ts);
}

/* Whether out's timerfd expires at t (CLOCK_MONOTONIC), or with t 0 is
 * disarmed. The kernel reports the time left: t lies between the clock
 * read before and after, plus that. Needs t in the future. */
static bool timer_expires_at(const struct wla_vdc_output *out, uint64_t t)
{
	struct itimerspec its;
	uint64_t before = monotonic_ns();
	if (timerfd_gettime(out->timer_fd, &its) != 0) {
		fprintf(stderr, "  timerfd_gettime failed\n");
		return false;
	}
	uint64_t after = monotonic_ns();
	uint64_t left = timespec_to_ns(&its.it_value);
	bool ok = timespec_to_ns(&its.it_interval) == 0 &&
		(t == 0 ? left == 0 : left > 0 && before + left <= t && t <= after + left);
	if (!ok) {
		fprintf(stderr, "  timer: %" PRIu64 " ns left at %" PRIu64 "..%" PRIu64
			", expected expiry %" PRIu64 "\n", left, before, after, t);
	}
	return ok;
}

static void vdc_idle_output_stops_its_vblanks_after_the_off_delay_and_keeps_seq_exact(void)
{
	struct fixture f;
	CHECK(fixture_setup_timers(&f, W, H, 60000));
	CHECK(f.out->timer_fd >= 0);
	/* The VDC's clock well ahead of CLOCK_MONOTONIC: every vblank of the
	 * test is in the timerfd's future, where its state can be read back. */
	f.now = monotonic_ns() + UINT64_C(1000) * 1000000000u + 123;
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), NULL);
	static struct capture_result res;
	memset(&res, 0, sizeof(res));
	CHECK(!f.out->timer_armed);
	CHECK(timer_expires_at(f.out, 0));

	CHECK_INT(enable_output(&f, a), 0);
	CHECK(f.out->armed);
	CHECK(f.out->timer_armed);
	CHECK(timer_expires_at(f.out, vblank_at(&f, 1)));
	vblank(&f);
	CHECK_INT(f.last_present.seq, 1);
	CHECK(!f.out->armed);
	/* The last latch, then WLA_VDC_OFF_DELAY idle vblanks with the timer on. */
	for (uint64_t i = 1; i <= WLA_VDC_OFF_DELAY; i++) {
		CHECK(f.out->timer_armed);
		CHECK(timer_expires_at(f.out, vblank_at(&f, 1 + i)));
		vblank(&f);
		CHECK(!f.out->armed);
		CHECK_INT(f.out->seq, 1 + i);
	}
	CHECK(!f.out->timer_armed);
	CHECK(timer_expires_at(f.out, 0));
	CHECK_INT(f.out->counters.vblanks, 1 + WLA_VDC_OFF_DELAY);

	/* Hours later the count is the grid's all the same. */
	f.now = vblank_at(&f, 1000000) + f.period / 3;
	wla_vdc_advance(f.vdc, f.now);
	CHECK(!f.out->armed);
	CHECK(!f.out->timer_armed);
	CHECK(timer_expires_at(f.out, 0));
	CHECK_INT(f.out->seq, vblank_grid_count(f.epoch, 60000, f.now));
	CHECK_INT(f.out->seq, 1000000);
	CHECK_INT(f.out->counters.seq, 1000000);
	CHECK_VBLANKS(f, 1000000, 0, 1);
	CHECK_INT(f.n_presents, 1);

	/* A commit after an idle nobody advanced through: the timer starts
	 * again and the frame latches at the next grid vblank, seq exact. */
	f.now = vblank_at(&f, 2000000) + f.period / 2;
	CHECK_INT(page_flip(&f, b), 0);
	CHECK(f.out->timer_armed);
	CHECK(timer_expires_at(f.out, vblank_at(&f, 2000001)));
	vblank(&f);
	CHECK_INT(f.n_presents, 2);
	CHECK_INT(f.last_present.seq, 2000001);
	CHECK_INT(f.last_present.seq, vblank_grid_count(f.epoch, 60000, f.now));
	CHECK_INT(timespec_to_ns(&f.last_present.when), vblank_at(&f, 2000001));
	CHECK_INT(f.out->counters.vblanks, 2000001);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	vblanks(&f, WLA_VDC_OFF_DELAY);
	CHECK(!f.out->timer_armed);
	CHECK(timer_expires_at(f.out, 0));

	/* A capture needs a vblank: it starts the timer, and stops it once
	 * served. */
	f.now = vblank_at(&f, 3000000) + f.period / 2;
	CHECK(wla_vdc_capture(f.out, record_capture, &res) != NULL);
	CHECK(f.out->timer_armed);
	CHECK(timer_expires_at(f.out, vblank_at(&f, 3000001)));
	vblank(&f);
	CHECK_INT(res.calls, 1);
	CHECK(res.got_image);
	CHECK_INT(res.seq, 3000001);
	CHECK_PIXEL(captured(&res, 5, 5), OPAQUE(RED));
	CHECK(!f.out->timer_armed);
	CHECK(timer_expires_at(f.out, 0));
	CHECK_INT(f.out->seq, 3000001);
	CHECK_INT(f.n_presents, 2);
	fixture_teardown(&f);
}

static void vdc_commit_at_a_vblanks_instant_counts_no_miss_whether_the_timer_runs_or_not(void)
{
	struct fixture f;
	CHECK(fixture_setup_timers(&f, W, H, 60000));
	struct wla_fb *b;
	struct wla_fb *a = running_blue(&f, &b);
	vblanks(&f, WLA_VDC_OFF_DELAY);
	CHECK(!f.out->timer_armed);

	/* Timer off: at vblank 5's instant, before anything processed it. On
	 * the grid vblank 5 has happened (vblank_grid_count says 5). */
	f.now = vblank_at(&f, 5);
	CHECK_INT(vblank_grid_count(f.epoch, 60000, f.now), 5);
	CHECK_INT(page_flip(&f, b), 0);
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 1);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	vblank(&f);
	CHECK_INT(f.n_presents, 2);
	CHECK_PRESENTED_AT(f, 6);

	/* Timer on (the off delay after that latch): the same commit at
	 * vblank 7's instant is the same case and no miss either. */
	CHECK(f.out->timer_armed);
	f.now = vblank_at(&f, 7);
	CHECK_INT(page_flip(&f, a), 0);
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 2);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	vblank(&f);
	CHECK_INT(f.n_presents, 3);
	CHECK_PRESENTED_AT(f, 8);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	CHECK_INT(f.out->counters.vblanks, 8);
	fixture_teardown(&f);
}

static void vdc_state_in_time_latches_at_its_vblank_though_a_frame_is_written_over_it_late(void)
{
	struct fixture f;
	struct fake_fb_probe *pa, *pb, *pk;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), &pa);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), &pb);
	struct wla_fb *k = fixture_fb(&f, 16, 16, ARGB, OPAQUE(GREEN), &pk);
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);

	/* In time for vblank 2. */
	CHECK_INT(move_cursor(&f, k, 1, 1), 0);
	/* Vblank 2 has happened, the wake-up has not: a frame written over the
	 * armed cursor update now is too late for vblank 2. */
	f.now = vblank_at(&f, 2) + 1000;
	CHECK_INT(queue_flip(&f, b), 0);
	/* Not written over the cursor update: it waits for its latch. */
	CHECK_INT(f.crtc->armed, 1);
	wla_vdc_advance(f.vdc, f.now);
	/* At vblank 2 the registers held the cursor update alone: as with a
	 * wake-up on time, the cursor is on screen from vblank 2 and the frame
	 * from vblank 3. */
	CHECK_INT(f.n_presents, 1);
	CHECK(f.out->scanout.planes[f.cursor->zpos] != NULL &&
		f.out->scanout.planes[f.cursor->zpos]->fb == k);
	CHECK(f.out->scanout.planes[f.primary->zpos]->fb == a);
	CHECK_INT(f.out->crtc.latches, 2);
	vblank(&f);
	CHECK_INT(f.n_presents, 2);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	CHECK_PRESENTED_AT(f, 3);
	CHECK(f.out->scanout.planes[f.primary->zpos]->fb == b);
	CHECK(f.out->scanout.planes[f.cursor->zpos] != NULL &&
		f.out->scanout.planes[f.cursor->zpos]->fb == k);
	CHECK_INT(wla_crtc_missed(&f.out->crtc, f.out->seq), 0);
	CHECK_INT(pa->locks, 0);
	CHECK_INT(pb->locks, 1);
	CHECK_INT(pk->locks, 1);
	fixture_teardown(&f);
}

/* Where the core says a frame committed now latches on the VDC's grid, and
 * that it does. */
static bool next_latch_is(struct fixture *f, uint64_t k)
{
	uint64_t latch = 0, commit_by = 0;
	bool ok = wla_crtc_next_latch(f->crtc, &latch, &commit_by);
	ok = ok && latch == vblank_at(f, k) && commit_by == latch - WLA_VDC_COMMIT_SLACK_NS;
	if (!ok) {
		fprintf(stderr, "  next latch %" PRIu64 " (vblank %" PRIu64 " + %" PRId64 " ns), "
			"expected vblank %" PRIu64 "\n", latch,
			vblank_grid_count(f->epoch, f->epoch_mhz, latch),
			(int64_t)(latch - vblank_at(f, vblank_grid_count(f->epoch, f->epoch_mhz,
				latch))), k);
	}
	return ok;
}

static void vdc_next_latch_is_where_a_frame_committed_now_latches(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	f.crtc->queue_depth = 2;
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), NULL);
	struct wla_fb *c = screen_fb(&f, OPAQUE(GREEN), NULL);
	struct wla_fb *k = fixture_fb(&f, 16, 16, ARGB, 0, NULL);
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);

	/* Idle: the next vblank. */
	CHECK(next_latch_is(&f, 2));
	/* Behind an armed frame: the vblank after. */
	CHECK_INT(queue_flip(&f, b), 0);
	CHECK(next_latch_is(&f, 3));
	CHECK_INT(queue_flip(&f, c), 0);
	vblanks(&f, 2);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	CHECK_INT(f.last_present.seq, 3);

	/* Over an armed cursor update (rearm): the same vblank as it. */
	CHECK_INT(move_cursor(&f, k, 1, 1), 0);
	CHECK(next_latch_is(&f, 4));
	CHECK_INT(queue_flip(&f, a), 0);
	vblank(&f);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	CHECK_INT(f.last_present.seq, 4);

	/* b armed in time for vblank 5; vblank 5 has happened, the wake-up
	 * not: b latches at 5 when it comes, a frame committed now at 6. */
	CHECK_INT(queue_flip(&f, b), 0);
	f.now = vblank_at(&f, 5) + 1000;
	CHECK(next_latch_is(&f, 6));
	CHECK_INT(queue_flip(&f, c), 0);
	f.now = vblank_at(&f, 6) + f.period / 2;
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 6);
	CHECK_INT(f.presents[4].seq, 5);
	CHECK_INT(f.presents[5].commit_seq, f.last_commit_seq);
	CHECK_INT(f.presents[5].seq, 6);
	CHECK_INT(timespec_to_ns(&f.presents[5].when), vblank_at(&f, 6));
	fixture_teardown(&f);
}

/*
 * Adaptive sync on a virtual monitor of 30-60 Hz running 60 Hz. Off, frames
 * latch on the 60 Hz grid. On (from the latch that turns it on): idle, the
 * panel repeats its frame at 30 Hz; a frame committed 25 ms after a vblank
 * latches then (its commit plus the latch slack), where the fixed grid would
 * wait to 33.3 ms; one committed 5 ms after a vblank waits for the shortest
 * period, 16.7 ms. The core's next latch says so beforehand, and every
 * vblank counts once. Off again: the 60 Hz grid from the latch.
 */
static void vdc_adaptive_sync_latches_frames_as_they_come_within_the_range(void)
{
	struct fixture f;
	memset(&f, 0, sizeof(f));
	wla_config_init(&f.cfg);
	f.cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
	f.cfg.outputs[0].vrr_min_mhz = 30000;
	f.cfg.outputs[0].vrr_max_mhz = 60000;
	CHECK(fixture_setup_config(&f));
	CHECK(f.conn->vrr_capable);
	const uint64_t slack = f.dev->latch_slack_ns;
	const uint64_t p60 = f.period, p30 = (UINT64_C(1000000000000) + 15000) / 30000;
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), NULL);
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);

	struct wla_atomic_state *st = test_state(f.dev, f.crtc, ++f.last_commit_seq, true);
	test_put(st, f.crtc, f.primary, b, 0, 0);
	wla_atomic_get_crtc_state(st, f.crtc)->vrr_enabled = true;
	CHECK_INT(test_commit_nonblocking(st), 0);
	vblank(&f);
	CHECK(f.out->vrr);
	const uint64_t t1 = timespec_to_ns(&f.last_present.when);
	CHECK_INT(t1, vblank_at(&f, 2));
	uint64_t seq = f.last_present.seq;

	/* Idle: one repeat at 30 Hz in 40 ms. */
	fixture_advance_to(&f, t1 + 40000000);
	CHECK_INT(f.out->last_vblank_ns, t1 + p30);
	CHECK_INT(f.out->seq, seq + 1);
	const uint64_t t2 = t1 + p30;

	/* 25 ms after a vblank: at once. */
	fixture_advance_to(&f, t2 + 25000000);
	uint64_t latch_ns, by_ns;
	CHECK(wla_crtc_next_latch(f.crtc, &latch_ns, &by_ns));
	CHECK_INT(latch_ns, f.now + slack);
	CHECK_INT(queue_flip(&f, a), 0);
	fixture_advance_to(&f, t2 + 30000000);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	CHECK(f.last_present.presented);
	const uint64_t t3 = t2 + 25000000 + slack;
	CHECK_INT(timespec_to_ns(&f.last_present.when), t3);
	CHECK_INT(f.last_present.seq, seq + 2);

	/* 5 ms after a vblank: at the shortest period. */
	fixture_advance_to(&f, t3 + 5000000);
	CHECK(wla_crtc_next_latch(f.crtc, &latch_ns, &by_ns));
	CHECK_INT(latch_ns, t3 + p60);
	CHECK_INT(queue_flip(&f, b), 0);
	fixture_advance_to(&f, t3 + 20000000);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	const uint64_t t4 = timespec_to_ns(&f.last_present.when);
	CHECK_INT(t4, t3 + p60);
	CHECK_INT(f.last_present.seq, seq + 3);
	CHECK_INT(f.out->counters.seq, f.out->seq);
	CHECK_INT(f.crtc->missed, 0);

	/* Off: the 60 Hz grid again from the latch that turns it off. */
	fixture_advance_to(&f, t4 + 1000000);
	st = test_state(f.dev, f.crtc, ++f.last_commit_seq, true);
	test_put(st, f.crtc, f.primary, a, 0, 0);
	wla_atomic_get_crtc_state(st, f.crtc)->vrr_enabled = false;
	CHECK_INT(test_commit_nonblocking(st), 0);
	fixture_advance_to(&f, t4 + 30000000);
	CHECK(!f.out->vrr);
	const uint64_t t5 = timespec_to_ns(&f.last_present.when);
	CHECK_INT(t5, t4 + p60);
	fixture_advance_to(&f, t5 + 2 * p60 + 1000);
	/* Two periods of the exact rate, rounded once. */
	CHECK_INT(f.out->last_vblank_ns, t5 + (UINT64_C(2000000000000) + 30000) / 60000);
	fixture_teardown(&f);
}

/* A range whose lowest rate is the mode's: nothing to vary, the mode's
 * fixed grid (the state still says adaptive sync is on). */
static void vdc_adaptive_sync_below_the_range_keeps_the_fixed_grid(void)
{
	struct fixture f;
	memset(&f, 0, sizeof(f));
	wla_config_init(&f.cfg);
	f.cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
	f.cfg.outputs[0].vrr_min_mhz = 60000;
	f.cfg.outputs[0].vrr_max_mhz = 120000;
	CHECK(fixture_setup_config(&f));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);
	struct wla_atomic_state *st = test_state(f.dev, f.crtc, ++f.last_commit_seq, true);
	test_put(st, f.crtc, f.primary, a, 0, 0);
	wla_atomic_get_crtc_state(st, f.crtc)->vrr_enabled = true;
	CHECK_INT(test_commit_nonblocking(st), 0);
	vblank(&f);
	CHECK(f.crtc->state->vrr_enabled);
	CHECK(!f.out->vrr);
	vblanks(&f, 3);
	CHECK_INT(f.out->last_vblank_ns, vblank_at(&f, 5));
	fixture_teardown(&f);
}

/* A monitor without a range takes no adaptive sync: refused, saying so. */
static void vdc_adaptive_sync_needs_a_vrr_capable_connector(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	CHECK(!f.conn->vrr_capable);
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);
	struct wla_atomic_state *st = begin_state(&f);
	wla_atomic_get_crtc_state(st, f.crtc)->vrr_enabled = true;
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("crtc-0: adaptive sync asked for, but connector Virtual-1 is not "
		"vrr_capable");
	fixture_teardown(&f);
}

static void vdc_59_94hz_counts_every_vblank_without_drift(void)
{
	const uint64_t n_vblanks = 1000000;
	/* 1e12 / 59940 = 16683350.0167 ns: a rounded period would fall
	 * 16.68 us behind over a million vblanks. */
	const uint64_t period = (uint64_t)(1e12 / 59940.0 + 0.5);
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 59940));
	CHECK_INT(period, 16683350);
	CHECK_INT(vblank_grid_ns(0, 59940, n_vblanks) - n_vblanks * period, 16683);
	struct wla_fb *fb[2] = {
		screen_fb(&f, OPAQUE(BLUE), NULL),
		screen_fb(&f, OPAQUE(RED), NULL),
	};
	CHECK_INT(enable_output(&f, fb[0]), 0);

	uint64_t wrong_seq = 0, wrong_when = 0, refused = 0;
	for (uint64_t n = 1; n <= n_vblanks; n++) {
		/* Wake up anywhere in the first half of the period. */
		f.now = vblank_at(&f, n) + (n * 7919) % (period / 2);
		wla_vdc_advance(f.vdc, f.now);
		if (f.last_present.seq != n ||
				f.out->seq != vblank_grid_count(f.epoch, 59940, f.now)) {
			wrong_seq++;
		}
		if (timespec_to_ns(&f.last_present.when) != vblank_at(&f, n)) {
			wrong_when++;
		}
		if (n < n_vblanks && page_flip(&f, fb[n % 2]) != 0) {
			refused++;
		}
	}
	CHECK_INT(wrong_seq, 0);
	CHECK_INT(wrong_when, 0);
	CHECK_INT(refused, 0);
	CHECK_INT(f.total_presents, n_vblanks);
	CHECK_PRESENTED_AT(f, n_vblanks);
	CHECK_INT(f.last_present.refresh_ns, period);
	CHECK_VBLANKS(f, n_vblanks, 0, n_vblanks);
	fixture_teardown(&f);
}

/* Capture */

static void vdc_capture_blends_the_cursor_over_the_primary_at_its_position(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	/* Junk in the X byte: the composer must not use it. */
	struct wla_fb *a = screen_fb(&f, 0x5a0000ffu, NULL);
	struct wla_fb *k = fixture_fb(&f, 8, 8, ARGB, OPAQUE(RED), NULL);
	fake_fb_set_pixel(k, 0, 0, 0x00000000u); /* transparent */
	fake_fb_set_pixel(k, 1, 0, 0x80800000u); /* half red, premultiplied */
	static struct capture_result res;
	memset(&res, 0, sizeof(res));

	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);
	/* A cursor update is a state of its own: it latches at the next vblank. */
	CHECK_INT(move_cursor(&f, k, 20, 10), 0);
	CHECK(wla_vdc_capture(f.out, record_capture, &res) != NULL);
	vblank(&f);
	CHECK_INT(res.calls, 1);
	CHECK(res.got_image);
	CHECK_INT(res.seq, 2);
	CHECK_INT(res.width, W);
	CHECK_INT(res.height, H);
	CHECK_PIXEL(captured(&res, 0, 0), OPAQUE(BLUE));
	CHECK_PIXEL(captured(&res, 63, 47), OPAQUE(BLUE));
	CHECK_PIXEL(captured(&res, 20, 10), OPAQUE(BLUE));
	/* 0x80 red + 0xff blue * (1 - 0x80/0xff) */
	CHECK_PIXEL(captured(&res, 21, 10), 0xff80007fu);
	CHECK_PIXEL(captured(&res, 22, 10), OPAQUE(RED));
	CHECK_PIXEL(captured(&res, 20, 11), OPAQUE(RED));
	CHECK_PIXEL(captured(&res, 27, 17), OPAQUE(RED));
	CHECK_PIXEL(captured(&res, 28, 10), OPAQUE(BLUE));
	CHECK_PIXEL(captured(&res, 20, 18), OPAQUE(BLUE));
	CHECK_PIXEL(captured(&res, 19, 10), OPAQUE(BLUE));

	/* At the bottom-right corner only the cursor's top-left 4x4 shows. */
	memset(&res, 0, sizeof(res));
	CHECK_INT(move_cursor(&f, k, 60, 44), 0);
	CHECK(wla_vdc_capture(f.out, record_capture, &res) != NULL);
	vblank(&f);
	CHECK_INT(res.calls, 1);
	CHECK_INT(res.seq, 3);
	CHECK_PIXEL(captured(&res, 60, 44), OPAQUE(BLUE));
	CHECK_PIXEL(captured(&res, 61, 44), 0xff80007fu);
	CHECK_PIXEL(captured(&res, 63, 47), OPAQUE(RED));
	CHECK_PIXEL(captured(&res, 59, 44), OPAQUE(BLUE));
	CHECK_PIXEL(captured(&res, 20, 11), OPAQUE(BLUE));
	fixture_teardown(&f);
}

static void vdc_capture_shows_the_frame_latched_at_its_vblank(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), NULL);
	static struct capture_result res;
	memset(&res, 0, sizeof(res));
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);

	/* Asked for before the flip latched: the capture shows the new frame. */
	CHECK_INT(page_flip(&f, b), 0);
	CHECK(wla_vdc_capture(f.out, record_capture, &res) != NULL);
	vblank(&f);
	CHECK_INT(res.calls, 1);
	CHECK_INT(res.seq, 2);
	CHECK_PIXEL(captured(&res, 5, 5), OPAQUE(RED));

	/* Nothing new committed: the next vblank shows the same frame. */
	memset(&res, 0, sizeof(res));
	CHECK(wla_vdc_capture(f.out, record_capture, &res) != NULL);
	vblank(&f);
	CHECK_INT(res.calls, 1);
	CHECK_INT(res.seq, 3);
	CHECK_PIXEL(captured(&res, 5, 5), OPAQUE(RED));
	fixture_teardown(&f);
}

static void vdc_capture_fails_when_the_crtc_is_disabled(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	static struct capture_result res;
	memset(&res, 0, sizeof(res));
	CHECK_INT(enable_output(&f, screen_fb(&f, OPAQUE(BLUE), NULL)), 0);
	vblank(&f);
	CHECK(wla_vdc_capture(f.out, record_capture, &res) != NULL);
	CHECK_INT(disable_output(&f), 0);
	CHECK_INT(res.calls, 1);
	CHECK(!res.got_image);
	vblanks(&f, 2);
	CHECK_INT(res.calls, 1);
	fixture_teardown(&f);
}

static void vdc_capture_cancelled_never_calls_back(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	static struct capture_result cancelled, kept;
	memset(&cancelled, 0, sizeof(cancelled));
	memset(&kept, 0, sizeof(kept));
	CHECK_INT(enable_output(&f, screen_fb(&f, OPAQUE(BLUE), NULL)), 0);

	struct wla_capture *cap = wla_vdc_capture(f.out, record_capture, &cancelled);
	CHECK(wla_vdc_capture(f.out, record_capture, &kept) != NULL);
	CHECK(cap != NULL);
	wla_vdc_capture_cancel(cap);
	vblank(&f);
	CHECK_INT(cancelled.calls, 0);
	CHECK_INT(kept.calls, 1);
	CHECK(kept.got_image);
	vblank(&f);
	CHECK_INT(cancelled.calls, 0);
	CHECK_INT(kept.calls, 1);
	fixture_teardown(&f);
	CHECK_INT(cancelled.calls, 0);
}

static void vdc_capture_of_an_unreadable_fb_fails(void)
{
	struct fixture f;
	struct fake_fb_probe *pa;
	CHECK(fixture_setup(&f, W, H, 60000));
	static struct capture_result res;
	memset(&res, 0, sizeof(res));
	CHECK_INT(enable_output(&f, screen_fb(&f, OPAQUE(BLUE), &pa)), 0);
	pa->unreadable = true;
	CHECK(wla_vdc_capture(f.out, record_capture, &res) != NULL);
	vblank(&f);
	CHECK_INT(res.calls, 1);
	CHECK(!res.got_image);
	CHECK_LOGGED("plane primary-0", "not readable");
	/* The frame itself latched all the same. */
	CHECK_INT(f.last_present.seq, 1);
	CHECK(f.last_present.presented);
	fixture_teardown(&f);
}

/* Planes */

static void vdc_primary_and_overlays_scan_out_rgb_formats(void)
{
	static const uint32_t formats[] = {
		DRM_FORMAT_XRGB8888, DRM_FORMAT_ARGB8888, DRM_FORMAT_XBGR8888,
		DRM_FORMAT_ABGR8888, DRM_FORMAT_RGB565,
	};
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_plane *planes[] = { f.primary, f.overlay[0], f.overlay[1] };
	for (size_t p = 0; p < 3; p++) {
		CHECK_INT(planes[p]->n_formats, 5);
		for (size_t i = 0; i < 5; i++) {
			CHECK(plane_has_format(planes[p], formats[i]));
		}
		CHECK(!plane_has_format(planes[p], DRM_FORMAT_NV12));
	}
	CHECK_INT(f.cursor->n_formats, 2);
	CHECK(plane_has_format(f.cursor, DRM_FORMAT_ARGB8888));
	CHECK(plane_has_format(f.cursor, DRM_FORMAT_ABGR8888));

	/* And the check takes each of them. */
	CHECK_INT(enable_output(&f, screen_fb(&f, OPAQUE(BLUE), NULL)), 0);
	vblank(&f);
	for (size_t i = 0; i < 5; i++) {
		struct wla_fb *full = fixture_fb(&f, W, H, formats[i], 0, NULL);
		struct wla_fb *small = fixture_fb(&f, 16, 16, formats[i], 0, NULL);
		struct wla_atomic_state *st = begin_state(&f);
		place(&f, st, f.primary, full, 0, 0, W, H);
		place(&f, st, f.overlay[0], small, 0, 0, 16, 16);
		place(&f, st, f.overlay[1], small, 8, 8, 16, 16);
		CHECK(check_accepted(&f, st));
		drop_fb(&f, full);
		drop_fb(&f, small);
	}
	fixture_teardown(&f);
}

static void vdc_planes_stack_primary_below_overlays_below_cursor(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	CHECK_INT(f.out->n_planes, 4);
	CHECK(f.out->zorder[0] == f.primary);
	CHECK(f.out->zorder[1] == f.overlay[0]);
	CHECK(f.out->zorder[2] == f.overlay[1]);
	CHECK(f.out->zorder[3] == f.cursor);
	CHECK(f.primary->zpos < f.overlay[0]->zpos);
	CHECK(f.overlay[0]->zpos < f.overlay[1]->zpos);
	CHECK(f.overlay[1]->zpos < f.cursor->zpos);
	CHECK_INT(f.primary->type, WLA_PLANE_PRIMARY);
	CHECK_INT(f.overlay[0]->type, WLA_PLANE_OVERLAY);
	CHECK_INT(f.cursor->type, WLA_PLANE_CURSOR);

	/* On screen: each plane covers the ones below where they overlap. */
	struct wla_fb *o1 = fixture_fb(&f, 16, 16, XRGB, GREEN, NULL);
	struct wla_fb *o2 = fixture_fb(&f, 8, 8, XRGB, RED, NULL);
	struct wla_fb *k = fixture_fb(&f, 4, 4, ARGB, 0xffffffffu, NULL);
	static struct capture_result res;
	memset(&res, 0, sizeof(res));
	/* Blocking commits: each waits for the one before it to latch. */
	CHECK_INT(enable_output(&f, screen_fb(&f, OPAQUE(BLUE), NULL)), 0);
	vblank(&f);
	CHECK_INT(wla_atomic_update_plane(f.overlay[1], f.crtc, o2, 4, 4, 8, 8, 0, 0, 8 << 16,
		8 << 16), 0);
	vblank(&f);
	CHECK_INT(wla_atomic_update_plane(f.overlay[0], f.crtc, o1, 0, 0, 16, 16, 0, 0,
		16 << 16, 16 << 16), 0);
	vblank(&f);
	CHECK_INT(move_cursor(&f, k, 6, 6), 0);
	CHECK(wla_vdc_capture(f.out, record_capture, &res) != NULL);
	vblank(&f);
	CHECK_INT(res.calls, 1);
	CHECK_PIXEL(captured(&res, 20, 20), OPAQUE(BLUE));
	CHECK_PIXEL(captured(&res, 1, 1), OPAQUE(GREEN));
	CHECK_PIXEL(captured(&res, 5, 5), OPAQUE(RED));
	CHECK_PIXEL(captured(&res, 7, 7), 0xffffffffu);
	CHECK_PIXEL(captured(&res, 10, 10), OPAQUE(RED));
	CHECK_PIXEL(captured(&res, 14, 14), OPAQUE(GREEN));
	fixture_teardown(&f);
}

static void vdc_planes_follow_the_config(void)
{
	struct fixture f;
	memset(&f, 0, sizeof(f));
	wla_config_init(&f.cfg);
	f.cfg.overlay_planes = 0;
	f.cfg.cursor_size = 32;
	f.cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
	f.cfg.outputs[1] = f.cfg.outputs[0];
	snprintf(f.cfg.outputs[1].name, sizeof(f.cfg.outputs[1].name), "Virtual-2");
	f.cfg.n_outputs = 2;
	CHECK(fixture_setup_config(&f));

	CHECK_INT(f.vdc->n_outputs, 2);
	CHECK_INT(f.vdc->dev.n_crtcs, 2);
	CHECK_INT(f.vdc->dev.n_planes, 4);
	CHECK_INT(f.out->n_overlays, 0);
	CHECK_INT(f.out->n_planes, 2);
	CHECK(f.out->zorder[0] == f.primary);
	CHECK(f.out->zorder[1] == f.cursor);
	CHECK_INT(f.cursor->max_fb_width, 32);
	CHECK_INT(f.cursor->max_fb_height, 32);
	CHECK(f.primary->full_screen_only);
	CHECK_INT(f.primary->min_scale, WLA_FIXED_ONE);
	CHECK_INT(f.primary->max_scale, WLA_FIXED_ONE);

	struct wla_vdc_output *second = f.vdc->outputs[1];
	CHECK(strcmp(second->connector.name, "Virtual-2") == 0);
	CHECK_INT(second->crtc.index, 1);
	CHECK_INT(second->primary.possible_crtcs, 1u << 1);
	CHECK_INT(second->cursor.possible_crtcs, 1u << 1);
	CHECK_INT(second->connector.possible_crtcs, 1u << 1);
	CHECK_INT(f.primary->possible_crtcs, 1u << 0);

	/* A cursor fb of the configured size fits, one pixel more does not. */
	CHECK_INT(enable_output(&f, screen_fb(&f, OPAQUE(BLUE), NULL)), 0);
	vblank(&f);
	CHECK_INT(move_cursor(&f, fixture_fb(&f, 32, 32, ARGB, 0, NULL), 0, 0), 0);
	CHECK_INT(move_cursor(&f, fixture_fb(&f, 33, 32, ARGB, 0, NULL), 0, 0), -EINVAL);
	CHECK_LOGGED("plane cursor-1", "fb size 33x32", "exceeds the plane's 32x32");
	fixture_teardown(&f);
}

/* wlr-randr and xdg-output clients show a monitor's size; a virtual one is
 * sized as a 96 DPI screen of its preferred mode, rounded to the mm. */
static void vdc_connectors_have_the_physical_size_of_96_dpi(void)
{
	struct fixture f;
	memset(&f, 0, sizeof(f));
	wla_config_init(&f.cfg);
	f.cfg.outputs[0].modes[0] = (struct wla_config_mode){ 1920, 1080, 60000 };
	f.cfg.outputs[0].modes[1] = (struct wla_config_mode){ 1280, 720, 60000 };
	f.cfg.outputs[0].n_modes = 2;
	f.cfg.outputs[1] = f.cfg.outputs[0];
	f.cfg.outputs[1].modes[0] = (struct wla_config_mode){ 800, 480, 60000 };
	f.cfg.outputs[1].n_modes = 1;
	snprintf(f.cfg.outputs[1].name, sizeof(f.cfg.outputs[1].name), "Virtual-2");
	f.cfg.n_outputs = 2;
	CHECK(fixture_setup_config(&f));
	CHECK_INT(f.conn->phys_width_mm, 508);
	CHECK_INT(f.conn->phys_height_mm, 286);
	CHECK_INT(f.vdc->outputs[1]->connector.phys_width_mm, 212);
	CHECK_INT(f.vdc->outputs[1]->connector.phys_height_mm, 127);
	/* A connector plugged at runtime too. */
	const struct wla_config_mode modes[] = { { 1024, 768, 75000 } };
	struct wla_vdc_output *plugged = wla_vdc_plug(f.vdc, "HP-1", modes, 1);
	CHECK(plugged != NULL);
	CHECK_INT(plugged->connector.phys_width_mm, 271);
	CHECK_INT(plugged->connector.phys_height_mm, 203);
	fixture_teardown(&f);
}

static void vdc_overlays_scale_from_8x_up_to_4x_down(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	for (size_t i = 0; i < f.out->n_overlays; i++) {
		CHECK_INT(f.overlay[i]->min_scale, WLA_FIXED_ONE / 8);
		CHECK_INT(f.overlay[i]->max_scale, WLA_FIXED_ONE * 4);
		CHECK(!f.overlay[i]->full_screen_only);
	}
	fixture_teardown(&f);
}

static void vdc_scans_out_only_fbs_the_cpu_can_read_with_a_full_stride(void)
{
	struct fixture f;
	struct fake_fb_probe *pa, *pu, *ps, *pp;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), &pa);
	struct wla_fb *unreadable = screen_fb(&f, OPAQUE(RED), &pu);
	pu->unreadable = true;
	struct wla_fb *short_rows = fixture_fb_strided(&f, W, H, XRGB, OPAQUE(RED), W * 4 - 4,
		&ps);
	struct wla_fb *padded = fixture_fb_strided(&f, W, H, XRGB, OPAQUE(GREEN), W * 4 + 64,
		&pp);
	fake_fb_set_pixel(padded, 0, 1, OPAQUE(BLUE));
	fake_fb_set_pixel(padded, W - 1, H - 1, OPAQUE(RED));
	static struct capture_result res;
	memset(&res, 0, sizeof(res));
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);

	char line[128];
	snapshot(&f);
	CHECK_INT(page_flip(&f, unreadable), -EINVAL);
	snprintf(line, sizeof(line), "vdc: fb %p (64x48): the CPU cannot read its pixels",
		(void *)unreadable);
	CHECK_LOGGED(line);
	CHECK_LOGGED("plane primary-0: prepare_fb failed: Invalid argument");
	CHECK(nothing_changed(&f, true));
	/* The fb's own lock came first and was given back. */
	CHECK_INT(pu->prepares, 1);
	CHECK_INT(pu->locks, 0);
	CHECK(unreadable->import == NULL && unreadable->prepared == 0);

	harness_log_clear();
	snapshot(&f);
	CHECK_INT(page_flip(&f, short_rows), -EINVAL);
	snprintf(line, sizeof(line), "vdc: fb %p: stride 252 shorter than its width 64 x 4 bytes",
		(void *)short_rows);
	CHECK_LOGGED(line);
	CHECK(nothing_changed(&f, true));
	CHECK_INT(ps->locks, 0);
	CHECK_INT(ps->accesses, 0);
	CHECK(short_rows->import == NULL && short_rows->prepared == 0);

	/* Padded rows are fine, and read with their stride. */
	CHECK_INT(page_flip(&f, padded), 0);
	CHECK(padded->import != NULL);
	CHECK(wla_vdc_capture(f.out, record_capture, &res) != NULL);
	vblank(&f);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	CHECK(f.last_present.presented);
	CHECK_INT(res.calls, 1);
	CHECK(res.got_image);
	CHECK_PIXEL(captured(&res, 0, 0), OPAQUE(GREEN));
	CHECK_PIXEL(captured(&res, W - 1, 0), OPAQUE(GREEN));
	CHECK_PIXEL(captured(&res, 0, 1), OPAQUE(BLUE));
	CHECK_PIXEL(captured(&res, W - 1, H - 1), OPAQUE(RED));
	CHECK_PIXEL(captured(&res, W / 2, H / 2), OPAQUE(GREEN));
	CHECK_INT(pp->locks, 1);
	CHECK_INT(pa->locks, 0);
	CHECK(a->import == NULL);
	fixture_teardown(&f);
}

static void vdc_destroy_with_a_pending_frame_releases_every_fb(void)
{
	struct fixture f;
	struct fake_fb_probe *pa, *pb, *pk;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), &pa);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), &pb);
	struct wla_fb *k = fixture_fb(&f, 8, 8, ARGB, 0, &pk);
	static struct capture_result res;
	memset(&res, 0, sizeof(res));
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);
	CHECK_INT(move_cursor(&f, k, 1, 1), 0);
	vblank(&f);
	CHECK_INT(page_flip(&f, b), 0);
	CHECK(wla_vdc_capture(f.out, record_capture, &res) != NULL);
	size_t before = f.n_presents;

	wla_vdc_destroy(f.vdc);
	CHECK_INT(pa->locks, 0);
	CHECK_INT(pb->locks, 0);
	CHECK_INT(pk->locks, 0);
	CHECK_INT(res.calls, 1);
	CHECK(!res.got_image);
	/* The output is gone: nobody to tell. */
	CHECK_INT(f.n_presents, before);
	for (size_t i = 0; i < f.n_fbs; i++) {
		wla_fb_put(f.fbs[i]);
		CHECK(f.probes[i].destroyed);
	}
}

/* A capture callback may unplug the output it captured: when a latch
 * answers it, and when the output went off before one could. */
static struct wla_vdc_output *unplug_from_callback;
static int unplugging_callbacks;

static void capture_unplugs(struct wla_capture *cap, const struct wla_image *image,
	uint64_t seq, void *data)
{
	(void)cap, (void)image, (void)seq, (void)data;
	unplugging_callbacks++;
	struct wla_vdc_output *out = unplug_from_callback;
	unplug_from_callback = NULL;
	if (out) {
		wla_vdc_unplug(out);
		/* Unplugged again, from inside its own unplug: nothing more. */
		wla_vdc_unplug(out);
	}
}

static void vdc_a_capture_callback_may_unplug_its_output(void)
{
	for (int off = 0; off < 2; off++) {
		struct fixture f;
		struct fake_fb_probe *pa, *pb;
		CHECK(fixture_setup(&f, W, H, 60000));
		struct wla_fb *a = screen_fb(&f, OPAQUE(RED), &pa);
		struct wla_fb *b = screen_fb(&f, OPAQUE(GREEN), &pb);
		CHECK_INT(enable_output(&f, a), 0);
		vblank(&f);
		CHECK_INT(page_flip(&f, b), 0);
		unplug_from_callback = f.out;
		unplugging_callbacks = 0;
		CHECK(wla_vdc_capture(f.out, capture_unplugs, NULL) != NULL);
		if (off) {
			/* Off before the vblank: the capture fails, and its
			 * callback unplugs. */
			CHECK_INT(disable_output(&f), 0);
		} else {
			/* Three vblanks pass at one wake-up. */
			f.now = vblank_at(&f, vblank_grid_count(f.epoch, f.epoch_mhz, f.now) + 3);
			wla_vdc_advance(f.vdc, f.now);
		}
		CHECK_INT(unplugging_callbacks, 1);
		CHECK(f.vdc->outputs[0] == NULL);
		CHECK_INT(pa->locks, 0);
		CHECK_INT(pb->locks, 0);
		f.now += 100000000;
		wla_vdc_advance(f.vdc, f.now);
		wla_vdc_destroy(f.vdc);
		for (size_t i = 0; i < f.n_fbs; i++) {
			wla_fb_put(f.fbs[i]);
		}
	}
}

/* A frame whose vblank passed before the timer ran latched: turning the
 * output off before the wake-up must not report it as not presented. */
static void vdc_a_frame_latched_before_a_disable_is_reported_presented(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(RED), NULL);
	struct wla_fb *b = screen_fb(&f, OPAQUE(GREEN), NULL);
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);
	f.n_presents = 0;
	CHECK_INT(page_flip(&f, b), 0);
	uint64_t k = vblank_grid_count(f.epoch, f.epoch_mhz, f.now) + 1;
	f.now = vblank_at(&f, k) + 1000000; /* 1 ms after it, no wake-up yet */
	struct wla_vblank_counters before, after;
	wla_crtc_get_counters(f.crtc, &before);
	CHECK_INT(disable_output(&f), 0);
	wla_crtc_get_counters(f.crtc, &after);
	CHECK_INT(f.n_presents, 1);
	if (f.n_presents == 1) {
		CHECK(f.presents[0].presented);
		CHECK_INT(timespec_to_ns(&f.presents[0].when), vblank_at(&f, k));
	}
	CHECK_INT(after.vblanks, before.vblanks + 1);
	CHECK_INT(after.latched, before.latched + 1);
	wla_vdc_destroy(f.vdc);
	drop_fb(&f, a);
	drop_fb(&f, b);
}

int main(void)
{
	harness_init();
	RUN_TEST(vdc_vblank_comes_one_period_after_enable_and_not_before);
	RUN_TEST(vdc_vblank_k_is_the_exact_rate_rounded_once_not_k_rounded_periods);
	RUN_TEST(vdc_late_wakeup_does_not_shift_the_vblank_grid);
	RUN_TEST(vdc_late_wakeup_reports_the_vblank_that_latched_not_the_last_one);
	RUN_TEST(vdc_commit_after_a_vblanks_instant_before_the_wakeup_latches_at_the_next_one);
	RUN_TEST(vdc_three_frames_queued_across_a_late_wakeup_latch_one_per_vblank);
	RUN_TEST(vdc_commit_within_the_slack_misses_the_vblank_and_counts_one_miss);
	RUN_TEST(vdc_latch_slack_follows_the_configuration);
	RUN_TEST(vdc_a_cursor_update_within_the_slack_is_no_miss);
	RUN_TEST(vdc_stall_with_nothing_committed_counts_no_miss);
	RUN_TEST(vdc_idle_output_stops_its_vblanks_after_the_off_delay_and_keeps_seq_exact);
	RUN_TEST(vdc_commit_at_a_vblanks_instant_counts_no_miss_whether_the_timer_runs_or_not);
	/* Two defects found while adapting these tests (issue 9): the frame
	 * deadline ignored rearm and unprocessed latches (a vblank late), and
	 * a state written over an armed non-frame late delayed that state's
	 * latch. */
	RUN_TEST(vdc_state_in_time_latches_at_its_vblank_though_a_frame_is_written_over_it_late);
	RUN_TEST(vdc_next_latch_is_where_a_frame_committed_now_latches);
	RUN_TEST(vdc_59_94hz_counts_every_vblank_without_drift);
	RUN_TEST(vdc_adaptive_sync_latches_frames_as_they_come_within_the_range);
	RUN_TEST(vdc_adaptive_sync_needs_a_vrr_capable_connector);
	RUN_TEST(vdc_adaptive_sync_below_the_range_keeps_the_fixed_grid);
	RUN_TEST(vdc_capture_blends_the_cursor_over_the_primary_at_its_position);
	RUN_TEST(vdc_capture_shows_the_frame_latched_at_its_vblank);
	RUN_TEST(vdc_capture_fails_when_the_crtc_is_disabled);
	RUN_TEST(vdc_capture_cancelled_never_calls_back);
	RUN_TEST(vdc_capture_of_an_unreadable_fb_fails);
	RUN_TEST(vdc_primary_and_overlays_scan_out_rgb_formats);
	RUN_TEST(vdc_planes_stack_primary_below_overlays_below_cursor);
	RUN_TEST(vdc_planes_follow_the_config);
	RUN_TEST(vdc_connectors_have_the_physical_size_of_96_dpi);
	RUN_TEST(vdc_overlays_scale_from_8x_up_to_4x_down);
	RUN_TEST(vdc_scans_out_only_fbs_the_cpu_can_read_with_a_full_stride);
	RUN_TEST(vdc_destroy_with_a_pending_frame_releases_every_fb);
	RUN_TEST(vdc_a_capture_callback_may_unplug_its_output);
	RUN_TEST(vdc_a_frame_latched_before_a_disable_is_reported_presented);
	HARNESS_EXIT();
}
