/*
 * The atomic core on its own: linked with backend/atomic and libwayland's
 * list alone (no libwlroots, no driver of the project), driven by a driver
 * written here that programs nothing and reports latches on an exact 60 Hz
 * grid of a fake clock. It shows what a driver needs to bring (funcs, its
 * grid, its latch minimum) and that the core answers the flip queue's
 * questions and logs through its own function.
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/atomic.h"
#include "backend/log.h"
#include "lib/fake-fb.h"
#include "lib/legacy.h"
#include "lib/states.h"

static int failures;

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
			failures++; \
		} \
	} while (0)

#define MHZ 60000
#define T0 UINT64_C(1000000000)
#define SLACK UINT64_C(300000)

static char last_error[256];
static int errors;

__attribute__((format(printf, 2, 0)))
static void capture_log(enum wla_log_level level, const char *fmt, va_list args)
{
	if (level == WLA_LOG_ERROR) {
		vsnprintf(last_error, sizeof(last_error), fmt, args);
		errors++;
	}
}

struct alone {
	struct wla_device dev;
	struct wla_crtc crtc;
	struct wla_plane primary;
	struct wla_connector conn;
	uint64_t now;
	struct wla_vblank_grid grid; /* from the enable */
	uint64_t next;               /* the next vblank index to report */
	bool running;
	unsigned programmed;
	unsigned presented, not_presented;
	uint64_t last_seq;
};

static struct alone *alone_of(struct wla_device *dev)
{
	return (struct alone *)((char *)dev - offsetof(struct alone, dev));
}

static int alone_commit_tail(struct wla_device *dev, struct wla_atomic_state *state)
{
	struct alone *a = alone_of(dev);
	wla_for_each_crtc_in_state(state, e) {
		if (!e->program) {
			continue;
		}
		if (e->new_state->active && !a->running) {
			a->running = true;
			a->grid = (struct wla_vblank_grid){ .origin_ns = a->now, .refresh_mhz = MHZ };
			a->next = 1;
		} else if (!e->new_state->active) {
			a->running = false;
		}
	}
	a->programmed++;
	return 0;
}

static uint64_t alone_now(struct wla_device *dev)
{
	return alone_of(dev)->now;
}

static bool alone_vblank_at(struct wla_device *dev, struct wla_crtc *crtc, uint64_t t,
	uint64_t *seq, uint64_t *vblank_ns)
{
	struct alone *a = alone_of(dev);
	if (!a->running) {
		return false;
	}
	uint64_t k = wla_vblank_grid_first_from(&a->grid, a->next, t);
	*seq = k;
	*vblank_ns = wla_vblank_grid_ns(&a->grid, k);
	return true;
}

/* The vblanks reported (alone_vblank) or known to have passed (next set
 * by hand): settled. */
static bool alone_vblank_counters(struct wla_device *dev, struct wla_crtc *crtc,
	struct wla_vblank_counters *counters)
{
	struct alone *a = alone_of(dev);
	*counters = (struct wla_vblank_counters){ .seq = a->next - 1, .settled_seq = a->next - 1 };
	return a->running;
}

static const struct wla_driver_funcs alone_funcs = {
	.commit_tail = alone_commit_tail,
	.now = alone_now,
	.vblank_at = alone_vblank_at,
	.vblank_counters = alone_vblank_counters,
};

static void on_present(struct wla_crtc *crtc, const struct wla_present *event, void *data)
{
	struct alone *a = data;
	if (event->presented) {
		a->presented++;
		a->last_seq = event->seq;
	} else {
		a->not_presented++;
	}
}

/* Vblank k happens: what is armed and was ready for it latches. */
static void alone_vblank(struct alone *a, uint64_t k)
{
	a->now = wla_vblank_grid_ns(&a->grid, k);
	a->next = k + 1;
	if (a->crtc.armed > 0) {
		struct timespec when = { .tv_sec = (time_t)(a->now / 1000000000u),
			.tv_nsec = (long)(a->now % 1000000000u) };
		wla_crtc_handle_latch(&a->crtc, k, &when, wla_vblank_grid_ns(&a->grid, 1) -
			a->grid.origin_ns, WLA_PRESENT_VSYNC);
	}
	wla_device_deliver_events(&a->dev);
}

static bool alone_init(struct alone *a)
{
	memset(a, 0, sizeof(*a));
	a->now = T0;
	wla_device_init(&a->dev, &alone_funcs, "alone");
	a->dev.latch_slack_ns = SLACK;
	snprintf(a->crtc.name, sizeof(a->crtc.name), "crtc-0");
	a->crtc.primary = &a->primary;
	a->crtc.max_slots = 1;
	a->crtc.queue_depth = 1;
	a->crtc.present = on_present;
	a->crtc.present_data = a;
	snprintf(a->primary.name, sizeof(a->primary.name), "primary-0");
	a->primary.type = WLA_PLANE_PRIMARY;
	a->primary.possible_crtcs = 1;
	a->primary.min_scale = a->primary.max_scale = WLA_FIXED_ONE;
	snprintf(a->conn.name, sizeof(a->conn.name), "Alone-1");
	a->conn.status = WLA_CONNECTOR_CONNECTED;
	a->conn.possible_crtcs = 1;
	struct wla_mode mode;
	return wla_mode_cvt(&mode, 64, 48, MHZ, true) &&
		wla_plane_add_format(&a->primary, DRM_FORMAT_XRGB8888,
			(uint64_t[]){ DRM_FORMAT_MOD_INVALID, DRM_FORMAT_MOD_LINEAR }, 2) &&
		wla_device_add_crtc(&a->dev, &a->crtc) &&
		wla_device_add_plane(&a->dev, &a->primary) &&
		wla_connector_set_modes(&a->conn, &mode, 1) &&
		wla_device_add_connector(&a->dev, &a->conn);
}

/* The grid's answer every driver's vblank_at builds on. */
static void grid_first_from_is_the_first_vblank_at_or_after_t_from_k(void)
{
	const struct wla_vblank_grid g = { .origin_ns = 1000, .refresh_mhz = 60000 };
	uint64_t v5 = wla_vblank_grid_ns(&g, 5);
	CHECK(v5 == 1000 + 83333333);
	CHECK(wla_vblank_grid_first_from(&g, 0, 0) == 0);
	CHECK(wla_vblank_grid_first_from(&g, 0, 1000) == 0);
	CHECK(wla_vblank_grid_first_from(&g, 1, 1000) == 1);
	CHECK(wla_vblank_grid_first_from(&g, 0, 1001) == 1);
	CHECK(wla_vblank_grid_first_from(&g, 0, v5) == 5);
	CHECK(wla_vblank_grid_first_from(&g, 0, v5 - 1) == 5);
	CHECK(wla_vblank_grid_first_from(&g, 0, v5 + 1) == 6);
	CHECK(wla_vblank_grid_first_from(&g, 7, v5) == 7);
	CHECK(wla_vblank_grid_first_from(&g, 3, v5 + 1) == 6);
}

/* A custom mode is timed as the driver says it times them (a fact of the
 * device), within the limits of a configured mode, or refused, logged. */
static void custom_modes_follow_the_devices_timing(void)
{
	struct wla_device dev;
	wla_device_init(&dev, &alone_funcs, "alone");
	struct wla_mode mode;
	errors = 0;
	CHECK(!wla_device_custom_mode(&dev, 640, 480, 60000, &mode));
	CHECK(errors == 1 && strstr(last_error, "device alone: custom mode 640x480@60000mHz "
		"refused: the driver takes only its connectors' modes"));
	dev.custom_timing = WLA_CUSTOM_CVT;
	CHECK(wla_device_custom_mode(&dev, 640, 480, 60000, &mode));
	struct wla_mode cvt;
	CHECK(wla_mode_cvt(&cvt, 640, 480, 60000, false) && wla_mode_equal(&mode, &cvt));
	/* 1x1 at 1 Hz: too few pixels for a kHz clock in CVT; exact, the line
	 * widens until the rate is exact. */
	errors = 0;
	CHECK(!wla_device_custom_mode(&dev, 1, 1, 1000, &mode));
	CHECK(errors == 1 && strstr(last_error, "custom mode 1x1@1000mHz: no CVT timing"));
	dev.custom_timing = WLA_CUSTOM_CVT_EXACT;
	CHECK(wla_device_custom_mode(&dev, 1, 1, 1000, &mode) && mode.refresh_mhz == 1000);
	CHECK(wla_device_custom_mode(&dev, 64, 48, 59940, &mode) && mode.refresh_mhz == 59940);
	errors = 0;
	CHECK(!wla_device_custom_mode(&dev, 20000, 777, 60000, &mode));
	CHECK(errors == 1 && strstr(last_error, "device alone: custom mode 20000x777@60000mHz "
		"is beyond 1..16384 x 1..16384 at 1000..1000000 mHz"));
	CHECK(!wla_device_custom_mode(&dev, 64, 48, 999, &mode));
	CHECK(errors == 2);
}

int main(void)
{
	wla_log_set_func(capture_log);
	grid_first_from_is_the_first_vblank_at_or_after_t_from_k();
	custom_modes_follow_the_devices_timing();
	struct alone a;
	CHECK(alone_init(&a));
	struct fake_fb_probe pa, pb, pc;
	struct wla_fb *fa = fake_fb_create_strided(64, 48, DRM_FORMAT_XRGB8888, 0xff0000ff,
		64 * 4, &pa);
	struct wla_fb *fb = fake_fb_create_strided(64, 48, DRM_FORMAT_XRGB8888, 0xff00ff00,
		64 * 4, &pb);
	struct wla_fb *fc = fake_fb_create_strided(64, 48, DRM_FORMAT_XRGB8888, 0xffff0000,
		64 * 4, &pc);

	uint64_t latch, commit_by;
	CHECK(!wla_crtc_next_latch(&a.crtc, &latch, &commit_by)); /* off */
	CHECK(wla_atomic_set_config(&a.crtc, &a.conn, &a.conn.modes[0], fa, 1) == 0);
	CHECK(a.programmed == 1 && a.running);
	CHECK(pa.locks == 1);
	/* Armed: a frame fits no more at depth 1; the enable latches at vblank
	 * 1, a frame now would at 2. */
	CHECK(!wla_crtc_frame_fits(&a.crtc));
	CHECK(wla_crtc_armed_latch(&a.crtc, &latch) && latch == wla_vblank_grid_ns(&a.grid, 1));
	CHECK(wla_crtc_next_latch(&a.crtc, &latch, &commit_by));
	CHECK(latch == wla_vblank_grid_ns(&a.grid, 2) && commit_by == latch - SLACK);
	alone_vblank(&a, 1);
	CHECK(a.presented == 1 && a.last_seq == 1);
	CHECK(wla_crtc_frame_fits(&a.crtc));

	/* A flip in time for vblank 2, one refused while it waits (logged
	 * through the core's own function), then the flip latches and frees
	 * the fb it replaced. */
	a.now = wla_vblank_grid_ns(&a.grid, 2) - SLACK - 1000;
	CHECK(wla_atomic_page_flip(&a.crtc, fb, 2) == 0);
	errors = 0;
	CHECK(test_flip(&a.dev, &a.crtc, fc, 0) == -EBUSY);
	CHECK(errors == 1 && strstr(last_error, "crtc-0: flip queue full (1 of 1 frames"));
	alone_vblank(&a, 2);
	CHECK(a.presented == 2 && a.last_seq == 2);
	CHECK(pa.locks == 0 && pb.locks == 1 && pc.locks == 0);

	/* A flip within the latch minimum of vblank 3 latches at 4. */
	a.now = wla_vblank_grid_ns(&a.grid, 3) - SLACK + 1;
	CHECK(wla_crtc_next_latch(&a.crtc, &latch, &commit_by));
	CHECK(latch == wla_vblank_grid_ns(&a.grid, 4));
	CHECK(wla_atomic_page_flip(&a.crtc, fc, 3) == 0);
	CHECK(wla_crtc_armed_latch(&a.crtc, &latch) && latch == wla_vblank_grid_ns(&a.grid, 4));
	/* Committed before vblank 3, it misses it: the core counts it, the
	 * driver only reports vblanks and latches. */
	CHECK(wla_crtc_missed(&a.crtc, 2) == 0);
	a.next = 4; /* vblank 3 passed, nothing latched */
	CHECK(wla_crtc_missed(&a.crtc, 3) == 1);
	alone_vblank(&a, 4);
	CHECK(a.presented == 3 && a.last_seq == 4);
	CHECK(a.crtc.missed == 1 && a.crtc.latches == 3);

	/* Without rearm (this driver, KMS) a frame committed in time behind a
	 * non-frame in flight waits for its latch and misses nothing. */
	a.now = wla_vblank_grid_ns(&a.grid, 5) - 2000000;
	struct wla_atomic_state *state = test_state(&a.dev, &a.crtc, 0, false);
	test_put(state, &a.crtc, &a.primary, fb, 0, 0);
	CHECK(test_commit_nonblocking(state) == 0); /* no event: no frame */
	a.now += 1000000;
	CHECK(test_flip(&a.dev, &a.crtc, fc, 5) == 0); /* waits behind it */
	alone_vblank(&a, 5);
	alone_vblank(&a, 6);
	CHECK(a.presented == 4 && a.last_seq == 6);
	CHECK(a.crtc.missed == 1 && a.crtc.latches == 5);

	/* The session goes away with a frame armed that already missed
	 * vblank 7: that one counts; the 100 vblanks away do not (it latches
	 * when the session is back). */
	a.now = wla_vblank_grid_ns(&a.grid, 7) - 2000000;
	CHECK(test_flip(&a.dev, &a.crtc, fb, 7) == 0);
	a.next = 8;
	a.now = wla_vblank_grid_ns(&a.grid, 7) + 1000;
	wla_device_set_inactive(&a.dev, true);
	CHECK(a.dev.inactive && a.crtc.missed == 2);
	a.next = 108;
	a.now = wla_vblank_grid_ns(&a.grid, 107) + 1000;
	CHECK(wla_crtc_missed(&a.crtc, 107) == 2);
	wla_device_set_inactive(&a.dev, false);
	alone_vblank(&a, 108);
	CHECK(a.presented == 5 && a.last_seq == 108);
	CHECK(a.crtc.missed == 2 && a.crtc.latches == 6);
	/* Armed while away (a driver holds it for the restore): no miss
	 * either. */
	wla_device_set_inactive(&a.dev, true);
	a.now = wla_vblank_grid_ns(&a.grid, 109) - 2000000;
	CHECK(test_flip(&a.dev, &a.crtc, fc, 8) == 0);
	a.next = 200;
	wla_device_set_inactive(&a.dev, false);
	alone_vblank(&a, 200);
	CHECK(a.presented == 6 && a.crtc.missed == 2 && a.crtc.latches == 7);
	/* Away right after a frame latched at vblank 201, its latch not yet
	 * reported (an event unread): it missed nothing. */
	a.now = wla_vblank_grid_ns(&a.grid, 201) - 2000000;
	CHECK(test_flip(&a.dev, &a.crtc, fb, 9) == 0);
	a.now = wla_vblank_grid_ns(&a.grid, 201) + 1000;
	wla_device_set_inactive(&a.dev, true);
	CHECK(a.crtc.missed == 2);
	wla_device_set_inactive(&a.dev, false);
	alone_vblank(&a, 201);
	CHECK(a.presented == 7 && a.crtc.missed == 2 && a.crtc.latches == 8);

	CHECK(wla_atomic_set_config(&a.crtc, &a.conn, NULL, NULL, 0) == 0);
	CHECK(!a.running && pc.locks == 0 && pb.locks == 0);
	CHECK(a.dev.live_states == 0);
	wla_fb_put(fa);
	wla_fb_put(fb);
	wla_fb_put(fc);
	CHECK(pa.destroyed && pb.destroyed && pc.destroyed);
	wla_device_remove_connector(&a.dev, &a.conn);
	wla_device_remove_plane(&a.dev, &a.primary);
	wla_device_remove_crtc(&a.dev, &a.crtc);
	wla_device_finish(&a.dev);
	if (failures) {
		fprintf(stderr, "FAIL test-core-alone: %d check(s) failed\n", failures);
		return 1;
	}
	printf("ok   the core alone: enable, flips, a refusal, the deadline, a session away, off\n");
	return 0;
}
