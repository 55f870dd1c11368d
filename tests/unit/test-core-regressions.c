/*
 * Regression tests for defects found by outside review and fuzzing of the
 * atomic core and the VDC (issues 9, 10 and 28), each a sequence of public
 * calls.
 * After every step the queue's books are checked against the queue itself.
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlatomic/config.h>
#include "backend/atomic.h"
#include "backend/vdc.h"
#include "harness.h"
#include "lib/fake-fb.h"
#include "lib/legacy.h"
#include "lib/vdc-fixture.h"

#define W 64
#define H 48
#define T0 UINT64_C(5000000000)
/* What hooks of the tests below count and see. */
static int hook_calls;
static uint32_t captured_pixel; /* pixel (1,1) of the last capture */

/* The tests' VDC fixture with outputs V-0, V-1... (64x48@60 and 32x32@30),
 * one overlay plane, a 64x64 cursor, the flip queue as given. */
static bool rf_setup(struct fixture *f, size_t outputs, unsigned depth, bool mailbox)
{
	memset(f, 0, sizeof(*f));
	hook_calls = 0;
	captured_pixel = 0;
	wla_config_init(&f->cfg);
	f->cfg.n_outputs = outputs;
	for (size_t i = 0; i < outputs; i++) {
		snprintf(f->cfg.outputs[i].name, sizeof(f->cfg.outputs[i].name), "V-%zu", i);
		f->cfg.outputs[i].modes[0] = (struct wla_config_mode){ W, H, 60000 };
		f->cfg.outputs[i].modes[1] = (struct wla_config_mode){ 32, 32, 30000 };
		f->cfg.outputs[i].n_modes = 2;
	}
	f->cfg.overlay_planes = 1;
	f->cfg.cursor_size = 64;
	f->cfg.flip_depth = depth;
	f->cfg.flip_mailbox = mailbox;
	return fixture_setup_config_at(f, T0);
}

static struct wla_fb *rf_fb_format(struct fixture *f, uint32_t w, uint32_t h, uint32_t format,
	uint32_t color)
{
	return fixture_fb(f, w, h, format, color, NULL);
}

static struct wla_fb *rf_fb(struct fixture *f, uint32_t w, uint32_t h, uint32_t color)
{
	return rf_fb_format(f, w, h, DRM_FORMAT_XRGB8888, color);
}

/* n screen-sized fbs into fb, of the colours first, first + 1, ... */
static void rf_fbs(struct fixture *f, struct wla_fb **fb, int n, uint32_t first)
{
	for (int i = 0; i < n; i++) {
		fb[i] = rf_fb(f, W, H, first + (uint32_t)i);
	}
}

static int locks(struct fixture *f, struct wla_fb *fb)
{
	for (size_t i = 0; i < f->n_fbs; i++) {
		if (f->fbs[i] == fb) {
			return f->probes[i].locks;
		}
	}
	return -1;
}

/* The core's counters equal what its queue holds, and the VDC holds a
 * state armed exactly when the core says it handed one over. */
static void check_books(struct fixture *f)
{
	for (size_t c = 0; c < f->dev->n_crtcs; c++) {
		struct wla_crtc *crtc = f->dev->crtcs[c];
		if (!crtc) {
			continue; /* unplugged */
		}
		unsigned queued = 0, armed = 0, frames = 0, waiting = 0;
		bool seen_waiting = false;
		struct wla_crtc_entry *e;
		wl_list_for_each(e, &crtc->queue, link) {
			queued++;
			if (e->stage == WLA_QUEUE_ARMED) {
				CHECK(!seen_waiting); /* handed over in order */
				armed++;
			} else {
				CHECK_INT(e->stage, WLA_QUEUE_WAITING);
				seen_waiting = true;
				waiting += e->frame;
			}
			frames += e->frame;
			CHECK(!e->done);
			CHECK(e->state->committed && e->state->swapped);
		}
		CHECK_INT(crtc->queued, queued);
		CHECK_INT(crtc->armed, armed);
		CHECK_INT(crtc->pending_frames, frames);
		CHECK_INT(crtc->waiting_frames, waiting);
		/* Beyond max_slots only states written over non-frames. */
		CHECK(armed <= crtc->max_slots || (crtc->rearm && frames - waiting <= 1));
		CHECK_INT(fixture_out(f, c)->armed, armed > 0);
	}
}

static void rf_advance(struct fixture *f, uint64_t t)
{
	fixture_advance_to(f, t);
	check_books(f);
}

/* The k-th vblank of output 0's 60 Hz timing after it was enabled at t0. */
static uint64_t vblank60(uint64_t t0, uint64_t k)
{
	return t0 + (k * UINT64_C(1000000000000) + 30000) / 60000;
}

static void rf_finish(struct fixture *f)
{
	wla_vdc_destroy(f->vdc);
	for (size_t i = 0; i < f->n_fbs; i++) {
		wla_fb_put(f->fbs[i]);
		CHECK_INT(f->probes[i].locks, 0);
		CHECK(f->probes[i].destroyed);
	}
}

static struct wla_atomic_state *frame_state(struct fixture *f, struct wla_crtc *crtc,
	uint64_t seq, struct wla_plane *plane, struct wla_fb *fb)
{
	struct wla_atomic_state *state = test_state(f->dev, crtc, seq, true);
	if (plane) {
		test_put(state, crtc, plane, fb, 0, 0);
	}
	return state;
}

static int flip(struct fixture *f, size_t out, struct wla_fb *fb, uint64_t seq)
{
	struct wla_crtc *crtc = fixture_crtc(f, out);
	return test_commit_nonblocking(frame_state(f, crtc, seq, crtc->primary, fb));
}

static int enable(struct fixture *f, size_t out, struct wla_fb *fb, uint64_t seq)
{
	struct wla_vdc_output *o = fixture_out(f, out);
	return wla_atomic_set_config(&o->crtc, &o->connector, &o->connector.modes[0], fb, seq);
}

/* enable, then the clock at the first vblank (of T0's 60 Hz grid), where fb
 * latched; enable's result. */
static int enable_latched(struct fixture *f, size_t out, struct wla_fb *fb, uint64_t seq)
{
	int ret = enable(f, out, fb, seq);
	rf_advance(f, vblank60(T0, 1));
	return ret;
}

/* Issue 10 bug 1, issue 9 defect a: a discarded frame's handler commits. */

static void commit_from_discard(struct fixture *f, const struct wla_present *ev)
{
	if (ev->discarded && ev->commit_seq == 3) {
		hook_calls++;
		/* The books must be straight when the handler runs. */
		check_books(f);
		CHECK_INT(flip(f, 0, f->fbs[4], 5), 0);
		check_books(f);
	}
}

static void a_discarded_frames_handler_commits_behind_the_frame_replacing_it(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, true));
	struct wla_fb *fb[5];
	for (int i = 0; i < 5; i++) {
		fb[i] = rf_fb(&f, W, H, 0xff000010u * (uint32_t)(i + 1));
	}
	CHECK_INT(enable_latched(&f, 0, fb[0], 1), 0);
	CHECK_INT(flip(&f, 0, fb[1], 2), 0); /* armed at once */
	CHECK_INT(flip(&f, 0, fb[2], 3), 0); /* waits */
	check_books(&f);
	f.hook = commit_from_discard;
	/* Replaces 3, whose handler commits 5, which replaces 4. */
	CHECK_INT(flip(&f, 0, fb[3], 4), 0);
	check_books(&f);
	CHECK_INT(hook_calls, 1);
	f.hook = NULL;
	CHECK(fixture_event_of(&f, 3)->discarded);
	CHECK(fixture_event_of(&f, 4)->discarded);
	CHECK_INT(locks(&f, fb[2]), 0);
	CHECK_INT(locks(&f, fb[3]), 0);
	rf_advance(&f, vblank60(T0, 2));
	rf_advance(&f, vblank60(T0, 3));
	CHECK(fixture_event_of(&f, 2)->presented);
	CHECK_INT(fixture_event_of(&f, 2)->seq, 2);
	CHECK(fixture_event_of(&f, 5)->presented);
	CHECK_INT(fixture_event_of(&f, 5)->seq, 3);
	CHECK(f.vdc->outputs[0]->scanout.planes[0]->fb == fb[4]);
	CHECK_INT(locks(&f, fb[4]), 1);
	CHECK_INT(locks(&f, fb[1]), 0);
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

/* Issue 9 defect a: a handler commits while its CRTC is being turned off. */

static void commit_from_cancel(struct fixture *f, const struct wla_present *ev)
{
	if (!ev->presented && ev->commit_seq == 2) {
		hook_calls++;
		check_books(f);
		/* The CRTC is off by now: a frame is refused, re-enabling works. */
		CHECK_INT(flip(f, 0, f->fbs[2], 9), -EINVAL);
		CHECK_INT(enable(f, 0, f->fbs[3], 10), 0);
		check_books(f);
	}
}

static void a_handler_committing_while_the_crtc_turns_off_sees_it_off(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 2, false));
	struct wla_fb *fb[4];
	rf_fbs(&f, fb, 4, 0xff200000u);
	CHECK_INT(enable_latched(&f, 0, fb[0], 1), 0);
	CHECK_INT(flip(&f, 0, fb[1], 2), 0);
	CHECK_INT(flip(&f, 0, fb[2], 3), 0);
	f.hook = commit_from_cancel;
	struct wla_vdc_output *o = fixture_out(&f, 0);
	CHECK_INT(wla_atomic_set_config(&o->crtc, &o->connector, NULL, NULL, 0), 0);
	f.hook = NULL;
	CHECK_INT(hook_calls, 1);
	check_books(&f);
	CHECK(!fixture_event_of(&f, 2)->presented && !fixture_event_of(&f, 3)->presented);
	CHECK(o->crtc.state->active);
	uint64_t t1 = f.now;
	rf_advance(&f, vblank60(t1, 1));
	CHECK(fixture_event_of(&f, 10)->presented);
	CHECK_INT(locks(&f, fb[0]), 0);
	CHECK_INT(locks(&f, fb[1]), 0);
	CHECK_INT(locks(&f, fb[2]), 0);
	CHECK_INT(locks(&f, fb[3]), 1);
	rf_finish(&f);
}

/* Issue 10 bug 2: a state with only a plane that stays off, the plane's
 * current state belonging to a queued frame. */
static void a_state_with_only_an_off_plane_waits_for_the_frame_owning_it(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, true));
	struct wla_vdc_output *o = fixture_out(&f, 0);
	struct wla_fb *a = rf_fb(&f, 16, 16, 0xff00aa00);
	struct wla_fb *b = rf_fb(&f, 16, 16, 0xff00bb00);
	/* A mode set with no fb: the primary stays off. */
	CHECK_INT(enable_latched(&f, 0, NULL, 1), 0);
	/* Frames touching the (off) primary and the overlay. */
	struct wla_atomic_state *s = frame_state(&f, &o->crtc, 2, &o->overlays[0], a);
	wla_atomic_get_plane_state(s, &o->primary);
	CHECK_INT(test_commit_nonblocking(s), 0);
	s = frame_state(&f, &o->crtc, 3, &o->overlays[0], b);
	wla_atomic_get_plane_state(s, &o->primary);
	CHECK_INT(test_commit_nonblocking(s), 0);
	CHECK(o->primary.commit != NULL);
	/* The legacy disable is blocking: refused while the owner is queued. */
	CHECK_INT(wla_atomic_disable_plane(&o->primary), -EBUSY);
	check_books(&f);
	/* Nonblocking: ordered behind the frame owning the plane's state. */
	struct wla_atomic_state *off = wla_atomic_state_alloc(f.dev);
	wla_atomic_get_plane_state(off, &o->primary);
	CHECK_INT(test_commit_nonblocking(off), 0);
	check_books(&f);
	CHECK_INT(o->crtc.queued, 3);
	rf_advance(&f, vblank60(T0, 2));
	rf_advance(&f, vblank60(T0, 3));
	rf_advance(&f, vblank60(T0, 4));
	CHECK(fixture_event_of(&f, 2)->presented && fixture_event_of(&f, 3)->presented);
	CHECK_INT(o->crtc.queued, 0);
	CHECK_INT(f.dev->live_states, 0);
	CHECK_INT(locks(&f, a), 0);
	CHECK_INT(locks(&f, b), 1);
	rf_finish(&f);
}

/* Issue 10 bug 3. */
static void a_cursor_update_carrying_a_connector_state_is_refused(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_vdc_output *o = fixture_out(&f, 0);
	struct wla_fb *p = rf_fb(&f, W, H, 0xff101010);
	struct wla_fb *k = rf_fb_format(&f, 16, 16, DRM_FORMAT_ARGB8888, 0xffff0000);
	CHECK_INT(enable_latched(&f, 0, p, 1), 0);
	struct wla_connector_state *before = o->connector.state;
	struct wla_atomic_state *s = wla_atomic_state_alloc(f.dev);
	s->legacy_cursor_update = true;
	struct wla_plane_state *ps = wla_atomic_get_plane_state(s, &o->cursor);
	wla_atomic_set_crtc_for_plane(s, ps, &o->crtc);
	wla_atomic_set_fb_for_plane(ps, k);
	wla_plane_state_set_full(ps, 0, 0);
	wla_atomic_get_connector_state(s, &o->connector);
	harness_log_clear();
	CHECK_INT(wla_atomic_commit(s), -EINVAL);
	CHECK_LOGGED("connector V-0", "a cursor update may not carry a connector state");
	wla_atomic_state_free(s);
	CHECK(o->connector.state == before);
	CHECK_INT(locks(&f, k), 0);
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

/* Issue 10 bug 4: a state that touched two CRTCs is never replaced. */
static void a_frame_that_touched_two_crtcs_is_not_replaced_by_a_mailbox_flip(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 2, 1, true));
	struct wla_vdc_output *o0 = fixture_out(&f, 0), *o1 = fixture_out(&f, 1);
	struct wla_fb *fb[6];
	rf_fbs(&f, fb, 6, 0xff300000u);
	CHECK_INT(enable_latched(&f, 1, fb[0], 1), 0);
	/* One state: CRTC 0 on, CRTC 1 off. */
	struct wla_atomic_state *s = frame_state(&f, &o0->crtc, 2, &o0->primary, fb[1]);
	test_route_crtc(s, &o0->crtc, &o0->connector, &o0->connector.modes[0]);
	test_route_crtc(s, &o1->crtc, &o1->connector, NULL);
	CHECK_INT(test_commit_nonblocking(s), 0);
	check_books(&f);
	/* CRTC 1 again. */
	CHECK_INT(enable(&f, 1, fb[2], 3), 0);
	/* Mailbox flips on CRTC 0: the two-CRTC state is armed, never replaced. */
	CHECK_INT(flip(&f, 0, fb[3], 4), 0);
	CHECK_INT(flip(&f, 0, fb[4], 5), 0);
	check_books(&f);
	CHECK(!fixture_event_of(&f, 4)->presented && fixture_event_of(&f, 4)->discarded);
	uint64_t t = f.now;
	rf_advance(&f, vblank60(t, 1));
	rf_advance(&f, vblank60(t, 2));
	CHECK(fixture_event_of(&f, 2)->presented && !fixture_event_of(&f, 2)->discarded);
	CHECK(fixture_event_of(&f, 5)->presented);
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

/* ...and while CRTC 0 has something queued, a state that turns CRTC 1 off
 * cannot wait behind it: refused, nothing changed. */
static void turning_a_crtc_off_in_a_state_queued_behind_another_crtc_is_refused(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 2, 2, false));
	struct wla_vdc_output *o0 = fixture_out(&f, 0), *o1 = fixture_out(&f, 1);
	struct wla_fb *fb[4];
	rf_fbs(&f, fb, 4, 0xff400000u);
	CHECK_INT(enable(&f, 0, fb[0], 1), 0);
	CHECK_INT(enable_latched(&f, 1, fb[1], 2), 0);
	CHECK_INT(flip(&f, 0, fb[2], 3), 0);
	struct wla_atomic_state *s = frame_state(&f, &o0->crtc, 4, &o0->primary, fb[3]);
	test_route_crtc(s, &o1->crtc, &o1->connector, NULL);
	harness_log_clear();
	CHECK_INT(test_commit_nonblocking(s), -EBUSY);
	CHECK_LOGGED("crtc-1", "turning it off in a commit that waits behind the queue of crtc-0");
	CHECK(o1->crtc.state->active);
	CHECK_INT(locks(&f, fb[3]), 0);
	check_books(&f);
	rf_finish(&f);
}

/* Issue 10 bug 5: active off and on again keeps the planes on screen. */
static void switching_active_off_and_on_shows_the_planes_again(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_vdc_output *o = fixture_out(&f, 0);
	struct wla_fb *p = rf_fb(&f, W, H, 0xff123456);
	CHECK_INT(enable_latched(&f, 0, p, 1), 0);
	for (int active = 0; active < 2; active++) {
		struct wla_atomic_state *s = wla_atomic_state_alloc(f.dev);
		s->allow_modeset = true;
		struct wla_crtc_state *cs = wla_atomic_get_crtc_state(s, &o->crtc);
		cs->active = active;
		CHECK_INT(wla_atomic_commit(s), 0);
	}
	uint64_t t = f.now;
	rf_advance(&f, vblank60(t, 1));
	CHECK(o->crtc.state->active);
	CHECK(o->primary.state->fb == p && o->primary.state->visible);
	CHECK_INT(locks(&f, p), 1);
	struct wla_image *img = wla_vdc_compose(o);
	CHECK(img != NULL);
	if (img) {
		CHECK_PIXEL(wla_image_pixel(img, 5, 5), 0xff123456);
		wla_image_destroy(img);
	}
	rf_finish(&f);
}

/* Issue 10 bug 6: a capture asked for from a failing capture's callback
 * while the VDC goes away is refused, not leaked. */
static int recaptures;

static void recapture(struct wla_capture *cap, const struct wla_image *image, uint64_t seq,
	void *data)
{
	struct wla_vdc_output *o = data;
	recaptures++;
	CHECK(image == NULL);
	if (recaptures < 5) {
		CHECK(wla_vdc_capture(o, recapture, o) == NULL);
	}
}

static void a_capture_asked_for_while_the_vdc_is_destroyed_is_refused(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_fb *p = rf_fb(&f, W, H, 0xff654321);
	CHECK_INT(enable(&f, 0, p, 1), 0);
	recaptures = 0;
	CHECK(wla_vdc_capture(fixture_out(&f, 0), recapture, fixture_out(&f, 0)) != NULL);
	harness_log_clear();
	rf_finish(&f);
	CHECK_INT(recaptures, 1);
	CHECK_LOGGED("crtc-0", "capture refused", "being destroyed");
}

/* Issue 9 defect f: a replaced frame's mode change stays a mode change. */
/* What the driver was handed last: a state changing a mode must carry the
 * leave to (KMS refuses a modeset without ALLOW_MODESET). */
static int (*spied_commit_tail)(struct wla_device *dev, struct wla_atomic_state *state);
static int spy_modesets_without_leave;

static int spy_commit_tail(struct wla_device *dev, struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		const struct wla_crtc_state *cs = e->new_state;
		if ((cs->mode_changed || cs->active_changed || cs->connectors_changed) &&
				!state->allow_modeset) {
			spy_modesets_without_leave++;
		}
	}
	return spied_commit_tail(dev, state);
}

/* The driver's check of the state with commit_seq spy_check_seq: whether
 * it had the leave (a KMS driver's TEST_ONLY of a state that replaces a
 * queued mode change is a modeset for the kernel). */
static uint64_t spy_check_seq;
static int spy_check_leave;

static int spy_atomic_check(struct wla_device *dev, struct wla_atomic_state *state)
{
	(void)dev;
	wla_for_each_crtc_in_state(state, e) {
		if (e->new_state->commit_seq == spy_check_seq) {
			spy_check_leave = state->allow_modeset;
		}
	}
	return 0;
}

static void spy_on(struct fixture *f, uint64_t check_seq)
{
	static struct wla_driver_funcs spy;
	spy = *f->vdc->dev.funcs;
	CHECK(spy.atomic_check == NULL);
	spied_commit_tail = spy.commit_tail;
	spy.commit_tail = spy_commit_tail;
	spy.atomic_check = spy_atomic_check;
	spy_modesets_without_leave = 0;
	spy_check_seq = check_seq;
	spy_check_leave = -1;
	f->vdc->dev.funcs = &spy;
}

static void a_mailbox_replacement_keeps_the_replaced_frames_mode_change(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, true));
	struct wla_vdc_output *o = fixture_out(&f, 0);
	spy_on(&f, 4);
	struct wla_fb *big[2] = { rf_fb(&f, W, H, 0xff111111), rf_fb(&f, W, H, 0xff222222) };
	struct wla_fb *small[2] = { rf_fb(&f, 32, 32, 0xff333333), rf_fb(&f, 32, 32, 0xff444444) };
	CHECK_INT(enable_latched(&f, 0, big[0], 1), 0);
	CHECK_INT(flip(&f, 0, big[1], 2), 0); /* armed */
	struct wla_atomic_state *s = frame_state(&f, &o->crtc, 3, &o->primary, small[0]);
	s->allow_modeset = true;
	wla_atomic_get_crtc_state(s, &o->crtc)->mode = o->connector.modes[1];
	CHECK_INT(test_commit_nonblocking(s), 0);
	CHECK(o->crtc.state->mode_changed);
	/* Same mode as the current (queued) state: no change of its own. */
	CHECK_INT(flip(&f, 0, small[1], 4), 0);
	CHECK(fixture_event_of(&f, 3)->discarded);
	CHECK(o->crtc.state->mode_changed);
	rf_advance(&f, vblank60(T0, 2));
	rf_advance(&f, vblank60(T0, 3));
	CHECK(fixture_event_of(&f, 4)->presented);
	CHECK_INT(fixture_event_of(&f, 4)->when_ns, vblank60(T0, 3));
	CHECK_INT(o->mode.width, 32);
	CHECK_INT(o->mode.refresh_mhz, 30000);
	/* The 30 Hz timing starts where it latched. */
	CHECK_INT(o->epoch_ns, vblank60(T0, 3));
	/* The replacement took over the leave to change modes too, and had
	 * it when the driver checked it. */
	CHECK_INT(spy_modesets_without_leave, 0);
	CHECK_INT(spy_check_leave, 1);
	rf_finish(&f);
}

/* The same for a frame whose only modeset is a connector it routes to its
 * CRTC (a clone): the replacement carries the routing, and the leave. */
static void a_mailbox_replacement_keeps_the_replaced_frames_connector_change(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 2, 1, true));
	struct wla_vdc_output *o = fixture_out(&f, 0), *o1 = fixture_out(&f, 1);
	o1->connector.possible_crtcs |= 1u << o->crtc.index;
	spy_on(&f, 4);
	struct wla_fb *fb[4];
	rf_fbs(&f, fb, 4, 0xff600000u);
	CHECK_INT(enable_latched(&f, 0, fb[0], 1), 0);
	CHECK_INT(flip(&f, 0, fb[1], 2), 0); /* armed */
	struct wla_atomic_state *s = frame_state(&f, &o->crtc, 3, &o->primary, fb[2]);
	s->allow_modeset = true;
	struct wla_connector_state *conn = wla_atomic_get_connector_state(s, &o1->connector);
	CHECK_INT(wla_atomic_set_crtc_for_connector(s, conn, &o->crtc), 0);
	CHECK_INT(test_commit_nonblocking(s), 0);
	CHECK(o->crtc.state->connectors_changed);
	CHECK_INT(flip(&f, 0, fb[3], 4), 0);
	CHECK(fixture_event_of(&f, 3)->discarded);
	CHECK(o->crtc.state->connectors_changed);
	CHECK_INT(spy_check_leave, 1);
	rf_advance(&f, vblank60(T0, 2));
	rf_advance(&f, vblank60(T0, 3));
	CHECK(fixture_event_of(&f, 4)->presented);
	CHECK(o1->connector.state->crtc == &o->crtc);
	CHECK_INT(o->crtc.state->connector_mask, (1u << 0) | (1u << 1));
	CHECK_INT(spy_modesets_without_leave, 0);
	for (int i = 0; i < 4; i++) {
		CHECK_INT(locks(&f, fb[i]), i == 3);
	}
	rf_finish(&f);
}

/* Issue 9 defect d: refresh rates whose period overflows an int. */
static void a_mode_below_one_hertz_is_refused(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_vdc_output *o = fixture_out(&f, 0);
	struct wla_mode slow = o->connector.modes[0];
	slow.clock_khz = 1; /* 1 kHz over the whole frame: far below 1 Hz */
	wla_mode_update_refresh(&slow);
	harness_log_clear();
	CHECK_INT(wla_atomic_set_config(&o->crtc, &o->connector, &slow, NULL, 1), -EINVAL);
	CHECK_LOGGED("crtc-0", "is invalid");
	CHECK(!o->crtc.state->active);
	rf_finish(&f);
}

/* The driver cannot program a state: its frames are not presented, the CRTC
 * is off, every buffer released, one line names the CRTC. */
static void a_state_the_driver_cannot_program_turns_the_crtc_off(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 2, false));
	struct wla_vdc_output *o = fixture_out(&f, 0);
	struct wla_fb *fb[4];
	rf_fbs(&f, fb, 4, 0xff500000u);
	CHECK_INT(enable_latched(&f, 0, fb[0], 1), 0);
	CHECK_INT(flip(&f, 0, fb[1], 2), 0);
	CHECK_INT(flip(&f, 0, fb[2], 3), 0); /* waits */
	/* Programmed at the next latch, and refused. */
	f.vdc->fail_commit_tail = EIO;
	harness_log_clear();
	rf_advance(&f, vblank60(T0, 2));
	CHECK(fixture_event_of(&f, 2)->presented);
	CHECK(!fixture_event_of(&f, 3)->presented && fixture_event_of(&f, 3)->failed);
	CHECK_LOGGED("crtc-0", "could not program commit_seq 3", "Input/output error");
	CHECK(!o->crtc.state->active && !o->running);
	CHECK(o->primary.state->fb == NULL);
	for (int i = 0; i < 3; i++) {
		CHECK_INT(locks(&f, fb[i]), 0);
	}
	CHECK_INT(f.dev->live_states, 0);
	/* And it can be enabled again. */
	CHECK_INT(enable(&f, 0, fb[3], 4), 0);
	rf_advance(&f, vblank60(f.now, 1));
	CHECK(fixture_event_of(&f, 4)->presented);
	rf_finish(&f);
}

/* A refused state that was also to turn another CRTC off: that CRTC is
 * turned off for real before its queue goes. */
static void a_refused_state_turning_a_crtc_off_still_stops_it(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 2, 1, false));
	struct wla_vdc_output *o0 = fixture_out(&f, 0), *o1 = fixture_out(&f, 1);
	struct wla_fb *fb[3];
	rf_fbs(&f, fb, 3, 0xff550000u);
	CHECK_INT(enable(&f, 0, fb[0], 1), 0);
	CHECK_INT(enable_latched(&f, 1, fb[1], 2), 0);
	struct wla_atomic_state *s = frame_state(&f, &o0->crtc, 3, &o0->primary, fb[2]);
	test_route_crtc(s, &o1->crtc, &o1->connector, NULL);
	f.vdc->fail_commit_tail = EIO;
	CHECK_INT(test_commit_nonblocking(s), 0);
	check_books(&f);
	CHECK(!o0->running && !o1->running);
	CHECK(fixture_event_of(&f, 3)->failed);
	for (int i = 0; i < 3; i++) {
		CHECK_INT(locks(&f, fb[i]), 0);
	}
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

/* The driver refuses to import an fb: the commit fails, nothing changed. */
static void an_fb_the_driver_cannot_import_refuses_the_commit(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_vdc_output *o = fixture_out(&f, 0);
	struct wla_fb *a = rf_fb(&f, W, H, 0xff600000);
	struct wla_fb *b = rf_fb(&f, W, H, 0xff600001);
	CHECK_INT(enable_latched(&f, 0, a, 1), 0);
	f.vdc->fail_prepare_fb = ENOMEM;
	harness_log_clear();
	CHECK_INT(flip(&f, 0, b, 2), -ENOMEM);
	CHECK_LOGGED("plane primary-0", "prepare_fb failed");
	CHECK(o->primary.state->fb == a);
	CHECK_INT(locks(&f, b), 0);
	CHECK(b->import == NULL && b->prepared == 0);
	CHECK(a->import != NULL);
	CHECK_INT(flip(&f, 0, b, 3), 0);
	rf_advance(&f, vblank60(T0, 2));
	CHECK(a->import == NULL && b->import != NULL);
	rf_finish(&f);
}

/* Issue 9 item 5: honest vblanks. */
static void a_commit_after_a_vblanks_instant_latches_at_the_next_even_if_the_timer_is_late(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_fb *a = rf_fb(&f, W, H, 0xff700000);
	struct wla_fb *b = rf_fb(&f, W, H, 0xff700001);
	CHECK_INT(enable_latched(&f, 0, a, 1), 0);
	/* Vblank 2 has happened, the timer has not run yet. */
	f.now = vblank60(T0, 2) + 1000;
	CHECK_INT(flip(&f, 0, b, 2), 0);
	rf_advance(&f, vblank60(T0, 2) + 2000);
	CHECK_INT(f.n_events, 1);
	rf_advance(&f, vblank60(T0, 3) + 5000000); /* a late wake-up */
	CHECK(fixture_event_of(&f, 2)->presented);
	CHECK_INT(fixture_event_of(&f, 2)->seq, 3);
	CHECK_INT(fixture_event_of(&f, 2)->when_ns, vblank60(T0, 3));
	CHECK(fixture_event_of(&f, 2)->when_ns >= vblank60(T0, 2) + 1000);
	CHECK_INT(wla_crtc_missed(&fixture_out(&f, 0)->crtc, fixture_out(&f, 0)->seq), 0);
	rf_finish(&f);
}

static void three_queued_frames_after_a_stall_latch_one_per_vblank_each_with_its_own(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 3, false));
	struct wla_fb *fb[4];
	rf_fbs(&f, fb, 4, 0xff800000u);
	CHECK_INT(enable_latched(&f, 0, fb[0], 1), 0);
	for (int i = 1; i < 4; i++) {
		CHECK_INT(flip(&f, 0, fb[i], 1 + (uint64_t)i), 0);
	}
	/* 40 ms stall: the wake-up comes after vblank 3. */
	rf_advance(&f, vblank60(T0, 1) + 40000000);
	for (uint64_t k = 0; k < 2; k++) {
		CHECK(fixture_event_of(&f, 2 + k)->presented);
		CHECK_INT(fixture_event_of(&f, 2 + k)->seq, 2 + k);
		CHECK_INT(fixture_event_of(&f, 2 + k)->when_ns, vblank60(T0, 2 + k));
	}
	CHECK_INT(f.n_events, 3); /* the enable, 2, 3 */
	rf_advance(&f, vblank60(T0, 4));
	CHECK_INT(fixture_event_of(&f, 4)->seq, 4);
	CHECK_INT(wla_crtc_missed(&fixture_out(&f, 0)->crtc, fixture_out(&f, 0)->seq), 0);
	rf_finish(&f);
}

static void an_idle_output_stops_its_vblanks_and_keeps_the_count(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_vdc_output *o = fixture_out(&f, 0);
	struct wla_fb *a = rf_fb(&f, W, H, 0xff900000);
	struct wla_fb *b = rf_fb(&f, W, H, 0xff900001);
	CHECK_INT(enable_latched(&f, 0, a, 1), 0);
	rf_advance(&f, vblank60(T0, 1 + WLA_VDC_OFF_DELAY));
	CHECK(!o->armed && wl_list_empty(&o->captures));
	CHECK(o->next_index > o->last_latch_index + WLA_VDC_OFF_DELAY);
	/* 10 s later a frame: the count is the grid's, the latch the next one. */
	f.now = vblank60(T0, 600) + 100;
	CHECK_INT(flip(&f, 0, b, 2), 0);
	CHECK_INT(o->seq, 600);
	rf_advance(&f, vblank60(T0, 601));
	CHECK_INT(fixture_event_of(&f, 2)->seq, 601);
	CHECK_INT(fixture_event_of(&f, 2)->when_ns, vblank60(T0, 601));
	rf_finish(&f);
}

/* A cursor update is an ordinary state; a frame after it does not wait a
 * vblank behind it: the VDC writes it over the cursor's and both latch at
 * the next vblank. */
static void a_frame_after_a_cursor_update_latches_with_it(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_vdc_output *o = fixture_out(&f, 0);
	struct wla_fb *a = rf_fb(&f, W, H, 0xffa00000);
	struct wla_fb *b = rf_fb(&f, W, H, 0xffa00001);
	struct wla_fb *k = rf_fb_format(&f, 16, 16, DRM_FORMAT_ARGB8888, 0xffffffff);
	CHECK_INT(enable_latched(&f, 0, a, 1), 0);
	CHECK_INT(wla_atomic_update_plane(&o->cursor, &o->crtc, k, 8, 8, 16, 16, 0, 0, 16 << 16,
		16 << 16), 0);
	CHECK_INT(o->crtc.armed, 1);
	/* A second cursor move waits for the queue (the glue sends it with
	 * the next frame). */
	CHECK_INT(wla_atomic_update_plane(&o->cursor, &o->crtc, k, 9, 9, 16, 16, 0, 0, 16 << 16,
		16 << 16), -EBUSY);
	CHECK_INT(flip(&f, 0, b, 2), 0);
	CHECK_INT(o->crtc.armed, 2);
	check_books(&f);
	rf_advance(&f, vblank60(T0, 2));
	CHECK(fixture_event_of(&f, 2)->presented);
	CHECK_INT(fixture_event_of(&f, 2)->seq, 2);
	CHECK(o->scanout.planes[o->cursor.zpos] && o->scanout.planes[o->cursor.zpos]->fb == k);
	CHECK(o->scanout.planes[o->primary.zpos]->fb == b);
	CHECK_INT(o->crtc.queued, 0);
	CHECK_INT(locks(&f, a), 0);
	rf_finish(&f);
}

/* Issue 28 a: one state enables two CRTCs; the first output is unplugged
 * before the state latched on the second. */
static void unplugging_one_output_of_a_state_spanning_two_leaves_the_other_latching(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 2, 1, false));
	struct wla_fb *fb0 = rf_fb(&f, W, H, 0xff000001), *fb1 = rf_fb(&f, W, H, 0xff000002);
	struct wla_atomic_state *state = wla_atomic_state_alloc(f.dev);
	for (size_t i = 0; i < 2; i++) {
		struct wla_vdc_output *o = fixture_out(&f, i);
		struct wla_crtc_state *cs =
			test_route_crtc(state, &o->crtc, &o->connector, &o->connector.modes[0]);
		cs->want_event = true;
		cs->commit_seq = 1 + i;
		test_put(state, &o->crtc, &o->primary, i ? fb1 : fb0, 0, 0);
	}
	CHECK_INT(wla_atomic_commit(state), 0);
	struct wla_vdc_output *o0 = fixture_out(&f, 0), *o1 = fixture_out(&f, 1);
	unsigned crtc0 = o0->crtc.index, primary0 = o0->primary.index;
	unsigned conn0 = o0->connector.index;
	wla_vdc_unplug(o0);
	CHECK(f.vdc->outputs[0] == NULL);
	/* The state still waits on the second CRTC and names nothing of the
	 * first output any more (seen without AddressSanitizer too). */
	CHECK(state->crtcs[crtc0].ptr == NULL);
	CHECK(state->planes[primary0].ptr == NULL);
	CHECK(state->connectors[conn0].ptr == NULL);
	CHECK_INT(locks(&f, fb0), 0);
	CHECK_INT(fixture_event_of(&f, 1)->presented, false);
	/* The state still latches on the second output, and nothing of it
	 * names the removed objects any more (AddressSanitizer: no
	 * use-after-free in the completion). */
	rf_advance(&f, vblank60(T0, 1));
	CHECK(fixture_event_of(&f, 2)->presented);
	CHECK_INT(fixture_event_of(&f, 2)->seq, 1);
	CHECK(o1->scanout.planes[0] && o1->scanout.planes[0]->fb == fb1);
	CHECK_INT(locks(&f, fb1), 1);
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

/* Issue 28 a: a frame of the second output carries the first output's
 * (unrouted) connector unchanged, and one its CRTC, off; both are
 * unplugged while the frame waits for its vblank. */
static void unplugging_objects_a_queued_state_carries_unchanged_drops_them_from_it(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 3, 1, false));
	struct wla_fb *fb = rf_fb(&f, W, H, 0xff000003);
	CHECK_INT(enable_latched(&f, 2, fb, 1), 0);
	struct wla_crtc *crtc2 = fixture_crtc(&f, 2);
	struct wla_atomic_state *state = frame_state(&f, crtc2, 2, crtc2->primary, fb);
	CHECK(wla_atomic_get_connector_state(state, &fixture_out(&f, 0)->connector));
	CHECK(wla_atomic_get_crtc_state(state, fixture_crtc(&f, 1)));
	CHECK_INT(test_commit_nonblocking(state), 0);
	CHECK(fixture_out(&f, 0)->connector.commit == state);
	CHECK(fixture_crtc(&f, 1)->commit == state);
	wla_vdc_unplug(fixture_out(&f, 0));
	wla_vdc_unplug(fixture_out(&f, 1));
	rf_advance(&f, vblank60(T0, 2));
	CHECK(fixture_event_of(&f, 2)->presented);
	CHECK_INT(fixture_event_of(&f, 2)->seq, 2);
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

/* Issue 28 a: a state built before an unplug and checked or committed
 * after it is refused, naming the object that went. */
static void a_state_naming_an_unplugged_object_is_refused_at_commit(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 2, 1, false));
	struct wla_fb *fb = rf_fb(&f, W, H, 0xff000004);
	struct wla_atomic_state *state = wla_atomic_state_alloc(f.dev);
	struct wla_vdc_output *o = fixture_out(&f, 0);
	test_route_crtc(state, &o->crtc, &o->connector, &o->connector.modes[0]);
	test_put(state, &o->crtc, &o->primary, fb, 0, 0);
	wla_vdc_unplug(o);
	/* A test-only check too (cold review of issue 28): the state's other
	 * entries may still point at what went. */
	harness_log_clear();
	CHECK_INT(wla_atomic_check(state), -ENODEV);
	CHECK_LOGGED("was removed", "check refused");
	harness_log_clear();
	CHECK_INT(wla_atomic_commit(state), -ENODEV);
	CHECK_LOGGED("was removed", "commit refused");
	wla_atomic_state_free(state);
	CHECK_INT(locks(&f, fb), 0);
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

/* Issue 28 b: a state with a plane and no CRTC, the plane's current state
 * being the armed state's: it is not freed before that state latched. */
static void an_armed_states_plane_state_lives_until_it_latched(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_vdc_output *o = fixture_out(&f, 0);
	CHECK_INT(wla_atomic_set_config(&o->crtc, &o->connector, &o->connector.modes[0], NULL,
		1), 0);
	CHECK_INT(o->crtc.armed, 1);
	struct wla_crtc_entry *armed = wl_container_of(o->crtc.queue.next, armed, link);
	struct wla_atomic_state *a = armed->state;
	const struct wla_plane_state *held = a->planes[o->primary.index].new_state;
	/* The sequence: the legacy disable of the plane. */
	CHECK_INT(wla_atomic_disable_plane(&o->primary), 0);
	/* It holds no CRTC: complete at once, but what it replaced is the
	 * armed state's, which a driver may read until it latched. */
	CHECK(held->plane == &o->primary && held->crtc == NULL);
	CHECK(a->planes[o->primary.index].adopted);
	CHECK_INT(f.dev->live_states, 1);
	/* And once more: the second replaces the first's, not the armed one's. */
	CHECK_INT(wla_atomic_disable_plane(&o->primary), 0);
	CHECK(held->plane == &o->primary);
	rf_advance(&f, vblank60(T0, 1));
	CHECK(fixture_event_of(&f, 1)->presented);
	rf_advance(&f, vblank60(T0, 2));
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

static void note_capture(struct wla_capture *cap, const struct wla_image *image, uint64_t seq,
	void *data)
{
	struct fixture *f = data;
	hook_calls++;
	f->events[FIXTURE_MAX_EVENTS - 1].seq = seq;
	f->events[FIXTURE_MAX_EVENTS - 1].presented = image != NULL;
}

/* Issue 28 c: a capture is the frame on screen after the next vblank,
 * never one of a vblank before the request. */
static void a_capture_waits_for_the_next_vblank(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_fb *fb = rf_fb(&f, W, H, 0xff000005);
	CHECK_INT(enable_latched(&f, 0, fb, 1), 0);
	rf_advance(&f, vblank60(T0, 5)); /* idle: the timer stopped */
	f.now = vblank60(T0, 5) + 1000;
	CHECK(wla_vdc_capture(fixture_out(&f, 0), note_capture, &f));
	rf_advance(&f, vblank60(T0, 5) + 2000);
	CHECK_INT(hook_calls, 0);
	rf_advance(&f, vblank60(T0, 6) - 1);
	CHECK_INT(hook_calls, 0);
	rf_advance(&f, vblank60(T0, 6));
	CHECK_INT(hook_calls, 1);
	CHECK_INT(f.events[FIXTURE_MAX_EVENTS - 1].seq, 6);
	CHECK(f.events[FIXTURE_MAX_EVENTS - 1].presented);
	/* A second request: not the frame of a vblank before it either. */
	f.now = vblank60(T0, 6) + 1000;
	CHECK(wla_vdc_capture(fixture_out(&f, 0), note_capture, &f));
	rf_advance(&f, vblank60(T0, 7) - 1);
	CHECK_INT(hook_calls, 1);
	rf_advance(&f, vblank60(T0, 8));
	CHECK_INT(hook_calls, 2);
	CHECK(f.events[FIXTURE_MAX_EVENTS - 1].seq >= 7);
	rf_finish(&f);
}

/* Issue 28 d: forcing off a CRTC that is enabled but not active unroutes
 * its connector and turns its planes off, their fbs released. */
static void force_off_of_an_enabled_inactive_crtc_unroutes_and_releases(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_fb *fb = rf_fb(&f, W, H, 0xff000006);
	struct wla_vdc_output *o = fixture_out(&f, 0);
	CHECK_INT(enable_latched(&f, 0, fb, 1), 0);
	struct wla_atomic_state *state = wla_atomic_state_alloc(f.dev);
	state->allow_modeset = true;
	wla_atomic_get_crtc_state(state, &o->crtc)->active = false;
	CHECK_INT(wla_atomic_commit(state), 0);
	CHECK(o->crtc.state->enable && !o->crtc.state->active);
	CHECK(o->connector.state->crtc == &o->crtc);
	CHECK_INT(locks(&f, fb), 1);
	wla_crtc_force_off(&o->crtc);
	CHECK(!o->crtc.state->enable);
	CHECK(o->connector.state->crtc == NULL);
	CHECK(o->primary.state->crtc == NULL && o->primary.state->fb == NULL);
	CHECK_INT(o->crtc.state->plane_mask, 0);
	CHECK_INT(o->crtc.state->connector_mask, 0);
	CHECK_INT(locks(&f, fb), 0);
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

/* Issue 30, found under load in the kernel tier: a CRTC forced off (its
 * connector unplugged) after a vblank the driver has not reported yet.
 * The frame that latched there is reported presented; the frame waiting
 * behind it is not handed to the driver on the way (it would only hold the
 * off back a vblank and be reported presented on a dark output): it is
 * reported not presented, and nothing more is programmed. */
static void forcing_off_after_an_unreported_latch_arms_nothing_waiting(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 2, false));
	struct wla_fb *a = rf_fb(&f, W, H, 0xff000021), *b = rf_fb(&f, W, H, 0xff000022);
	struct wla_fb *c = rf_fb(&f, W, H, 0xff000023);
	struct wla_vdc_output *o = fixture_out(&f, 0);
	CHECK_INT(enable_latched(&f, 0, a, 1), 0);
	f.now = vblank60(T0, 1) + 1000;
	CHECK_INT(flip(&f, 0, b, 2), 0); /* armed for vblank 2 */
	CHECK_INT(flip(&f, 0, c, 3), 0); /* waits for it */
	f.now = vblank60(T0, 2) + 1000; /* vblank 2 passes unreported */
	/* Any state with an active CRTC handed to the VDC now is refused
	 * (and says so): only the off state may reach it. */
	f.vdc->fail_commit_tail = EIO;
	harness_log_clear();
	wla_crtc_force_off(&o->crtc);
	check_books(&f);
	CHECK(!o->crtc.state->enable && !o->crtc.state->active);
	CHECK(fixture_event_of(&f, 2) && fixture_event_of(&f, 2)->presented);
	CHECK(fixture_event_of(&f, 3) && !fixture_event_of(&f, 3)->presented);
	CHECK_INT(f.vdc->fail_commit_tail, EIO);
	CHECK(!LOGGED("commit_tail refused"));
	f.vdc->fail_commit_tail = 0;
	CHECK_INT(locks(&f, b), 0);
	CHECK_INT(locks(&f, c), 0);
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

static void check_unrouted_at_removal(struct wla_device *dev, struct wla_connector *conn,
	void *data)
{
	hook_calls++;
	CHECK(conn->state->crtc == NULL);
	struct wla_vdc_output *o = conn->driver_data;
	CHECK(!o->crtc.state->enable && !o->crtc.state->active);
	for (size_t i = 0; i < o->n_planes; i++) {
		CHECK(o->zorder[i]->state->fb == NULL);
	}
}

/* Issue 28 d: the unplug of such a CRTC's connector tells the listener
 * with everything already off. */
static void unplugging_an_enabled_inactive_output_tells_the_listener_it_is_off(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_fb *fb = rf_fb(&f, W, H, 0xff000007);
	struct wla_vdc_output *o = fixture_out(&f, 0);
	CHECK_INT(enable_latched(&f, 0, fb, 1), 0);
	struct wla_atomic_state *state = wla_atomic_state_alloc(f.dev);
	state->allow_modeset = true;
	wla_atomic_get_crtc_state(state, &o->crtc)->active = false;
	CHECK_INT(wla_atomic_commit(state), 0);
	f.dev->listener.connector_removed = check_unrouted_at_removal;
	f.dev->listener.data = &f;
	wla_vdc_unplug(o);
	CHECK_INT(hook_calls, 1);
	CHECK_INT(locks(&f, fb), 0);
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

/* Issue 28 e: every size and rate the configuration takes has a timing
 * the VDC shows at exactly that rate. */
static void every_small_mode_the_parser_takes_has_a_timing(void)
{
	static const int32_t rates[] = { 1000, 1001, 1040, 1500, 2000, 23976, 30000, 60000,
		144000, 240000 };
	int failures = 0;
	for (int32_t w = 1; w <= 24; w++) {
		for (int32_t h = 1; h <= 24; h++) {
			for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
				struct wla_mode m;
				const char *why = NULL;
				if (!wla_mode_cvt_exact(&m, w, h, rates[r]) || !wla_mode_valid(&m, &why) ||
						m.refresh_mhz != rates[r]) {
					if (failures++ < 5) {
						fprintf(stderr, "  %dx%d@%d mHz: %s (%d mHz)\n", w, h,
							rates[r], why ? why : "no timing", m.refresh_mhz);
					}
				}
			}
		}
	}
	CHECK_INT(failures, 0);
	struct wla_config cfg;
	wla_config_init(&cfg);
	harness_log_clear();
	CHECK_INT(wla_config_parse_text(&cfg, "test", "[output]\nname = Virtual-1\nmode = 1x1@1\n"), 0);
	struct wla_vdc *vdc = wla_vdc_create(NULL, &cfg, NULL, NULL);
	CHECK(vdc != NULL);
	if (vdc) {
		CHECK_INT(vdc->outputs[0]->connector.modes[0].refresh_mhz, 1000);
		wla_vdc_destroy(vdc);
	}
}

static void note_capture_pixel(struct wla_capture *cap, const struct wla_image *image,
	uint64_t seq, void *data)
{
	struct fixture *f = data;
	hook_calls++;
	f->events[FIXTURE_MAX_EVENTS - 1].seq = seq;
	captured_pixel = image ? wla_image_pixel(image, 1, 1) : 0;
}

/* Issue 28 c, after review: a frame armed too late for the vblank after the
 * request latches one later, and the output is looked at only then: the
 * capture still gets the vblank after the request, with what it showed. */
static void a_capture_gets_the_vblank_after_it_even_when_a_late_frame_latches_next(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 1, false));
	struct wla_fb *a = rf_fb(&f, W, H, 0xff0000aa), *b = rf_fb(&f, W, H, 0xff0000bb);
	CHECK_INT(enable_latched(&f, 0, a, 1), 0);
	f.now = vblank60(T0, 1) + 1000;
	CHECK(wla_vdc_capture(fixture_out(&f, 0), note_capture_pixel, &f));
	f.now = vblank60(T0, 2) - 50000; /* inside the 200 us slack: misses V2 */
	CHECK_INT(flip(&f, 0, b, 2), 0);
	rf_advance(&f, vblank60(T0, 3));
	CHECK_INT(hook_calls, 1);
	CHECK_INT(f.events[FIXTURE_MAX_EVENTS - 1].seq, 2);
	CHECK_PIXEL(captured_pixel, 0xff0000aa);
	rf_finish(&f);
}

/* Issue 28 c, after review: the vblank after the request is counted by a
 * sync (a commit turning another output off), where no callback may run,
 * and a new frame latches before the next wake-up: the capture has the
 * image of the vblank it was due at. */
static void a_capture_due_at_a_vblank_counted_by_a_sync_keeps_that_vblanks_frame(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 2, 1, false));
	struct wla_fb *a = rf_fb(&f, W, H, 0xff0000aa), *b = rf_fb(&f, W, H, 0xff0000bb),
		*c = rf_fb(&f, W, H, 0xff0000cc), *d = rf_fb(&f, W, H, 0xff0000dd);
	CHECK_INT(enable(&f, 0, a, 1), 0);
	CHECK_INT(enable(&f, 1, d, 100), 0);
	rf_advance(&f, vblank60(T0, 1));
	f.now = vblank60(T0, 1) + 1000;
	CHECK(wla_vdc_capture(fixture_out(&f, 0), note_capture_pixel, &f));
	f.now = vblank60(T0, 1) + 2000;
	CHECK_INT(flip(&f, 0, b, 2), 0);
	f.now = vblank60(T0, 2) + 1000;
	struct wla_vdc_output *o1 = fixture_out(&f, 1);
	CHECK_INT(wla_atomic_set_config(&o1->crtc, &o1->connector, NULL, NULL, 101), 0);
	f.now = vblank60(T0, 2) + 2000;
	CHECK_INT(flip(&f, 0, c, 3), 0);
	rf_advance(&f, vblank60(T0, 3));
	CHECK_INT(hook_calls, 1);
	CHECK_INT(f.events[FIXTURE_MAX_EVENTS - 1].seq, 2);
	CHECK_PIXEL(captured_pixel, 0xff0000bb);
	rf_finish(&f);
}

/* Issue 28 e, after review: a tiny mode at about 1 Hz has no CVT timing at
 * its rate (a kHz clock is too fast for it): CVT says so, as KMS needs;
 * only the VDC, which may blank as long as it likes, widens the line. */
static void cvt_refuses_a_mode_whose_clock_rounds_to_zero(void)
{
	struct wla_mode m;
	CHECK(!wla_mode_cvt(&m, 1, 1, 1000, false));
	CHECK(!wla_mode_cvt(&m, 4, 3, 1000, false));
	CHECK(wla_mode_cvt_exact(&m, 4, 3, 1000));
	CHECK_INT(m.refresh_mhz, 1000);
}

/*
 * (cold review of issue 28) A state over two CRTCs latches on the faster one
 * first; a flip there latches and completes while the state still waits on
 * the other. The flip's old CRTC state is the armed state's new one: it is
 * handed over (adopted), not freed, until the armed state latched too.
 */
static void crtc_state_of_a_two_crtc_state_outlives_a_later_flip(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 2, 1, false));
	struct wla_fb *fb0 = rf_fb(&f, W, H, 0xff000001), *fb1 = rf_fb(&f, 32, 32, 0xff000002);
	struct wla_fb *fb2 = rf_fb(&f, W, H, 0xff000003);
	struct wla_atomic_state *state = wla_atomic_state_alloc(f.dev);
	for (size_t i = 0; i < 2; i++) {
		struct wla_vdc_output *o = fixture_out(&f, i);
		struct wla_crtc_state *cs =
			test_route_crtc(state, &o->crtc, &o->connector, &o->connector.modes[0]);
		/* 60 Hz and 20 Hz (its first vblank at 50 ms) */
		if (i == 1) {
			CHECK(wla_mode_cvt_exact(&cs->mode, 32, 32, 20000));
		}
		cs->want_event = true;
		cs->commit_seq = 1 + i;
		test_put(state, &o->crtc, &o->primary, i ? fb1 : fb0, 0, 0);
	}
	CHECK_INT(wla_atomic_commit(state), 0);
	struct wla_crtc *c0 = &fixture_out(&f, 0)->crtc, *c1 = &fixture_out(&f, 1)->crtc;
	/* 60 Hz vblank 1: latched on CRTC 0, CRTC 1's first vblank is at 50 ms. */
	rf_advance(&f, vblank60(T0, 1));
	CHECK_INT(state->pending_crtcs, 1);
	f.now = vblank60(T0, 1) + 1000;
	CHECK_INT(flip(&f, 0, fb2, 3), 0);
	/* The flip latches at 60 Hz vblank 2, and is done with. */
	rf_advance(&f, vblank60(T0, 2));
	CHECK_INT(c0->queued, 0);
	CHECK_INT(c1->queued, 1);
	CHECK_INT(state->pending_crtcs, 1);
	CHECK(state->crtcs[c0->index].adopted);
	/* What a driver may read of its armed state (ASan: alive). */
	CHECK(state->crtcs[c0->index].new_state->crtc == c0);
	CHECK(state->crtcs[c0->index].new_state->active);
	rf_advance(&f, vblank60(T0, 10));
	CHECK_INT(c1->queued, 0);
	rf_finish(&f);
}

/*
 * (libFuzzer, after issue 28's fixes) A state built to turn a CRTC off is
 * committed after a vblank passed unreported: the commit first reports the
 * latch, which hands the queued frame to the driver, which cannot program
 * it, so the core turns the CRTC off itself and frees the states it
 * replaced, among them the one the built state took as its old state. The
 * commit is refused (the state is stale), nothing of it read; before, it
 * read the freed state (ASan heap-use-after-free). A check of it is
 * refused the same way.
 */
static void a_state_built_before_a_forced_off_is_refused_as_stale(void)
{
	struct fixture f;
	CHECK(rf_setup(&f, 1, 2, false));
	struct wla_fb *a = rf_fb(&f, W, H, 0xff000011), *b = rf_fb(&f, W, H, 0xff000012);
	struct wla_fb *c = rf_fb(&f, W, H, 0xff000013);
	CHECK_INT(enable_latched(&f, 0, a, 1), 0);
	f.now = vblank60(T0, 1) + 1000;
	CHECK_INT(flip(&f, 0, b, 2), 0); /* armed for vblank 2 */
	CHECK_INT(flip(&f, 0, c, 3), 0); /* waits for it */
	struct wla_atomic_state *off = wla_atomic_state_alloc(f.dev);
	struct wla_vdc_output *o = fixture_out(&f, 0);
	test_route_crtc(off, &o->crtc, &o->connector, NULL);
	/* Vblank 2 passes unreported; handing c over then fails. */
	f.now = vblank60(T0, 2) + 1000;
	f.vdc->fail_commit_tail = EIO;
	harness_log_clear();
	CHECK_INT(wla_atomic_commit(off), -EAGAIN);
	CHECK_LOGGED(": swaps", "the atomic state took its state at", "build it again");
	wla_atomic_state_free(off);
	CHECK(!fixture_crtc(&f, 0)->state->active);
	/* What the sync reported is told at the driver's next wake-up, not
	 * from inside the refused commit. */
	size_t told = f.n_events;
	rf_advance(&f, f.now);
	CHECK(f.n_events > told);
	CHECK(fixture_event_of(&f, 2)->presented);
	CHECK(!fixture_event_of(&f, 3)->presented);
	CHECK_INT(f.dev->live_states, 0);
	rf_finish(&f);
}

int main(void)
{
	harness_init();
	RUN_TEST(a_discarded_frames_handler_commits_behind_the_frame_replacing_it);
	RUN_TEST(a_handler_committing_while_the_crtc_turns_off_sees_it_off);
	RUN_TEST(a_state_with_only_an_off_plane_waits_for_the_frame_owning_it);
	RUN_TEST(a_cursor_update_carrying_a_connector_state_is_refused);
	RUN_TEST(a_frame_that_touched_two_crtcs_is_not_replaced_by_a_mailbox_flip);
	RUN_TEST(turning_a_crtc_off_in_a_state_queued_behind_another_crtc_is_refused);
	RUN_TEST(switching_active_off_and_on_shows_the_planes_again);
	RUN_TEST(a_capture_asked_for_while_the_vdc_is_destroyed_is_refused);
	RUN_TEST(a_mailbox_replacement_keeps_the_replaced_frames_mode_change);
	RUN_TEST(a_mailbox_replacement_keeps_the_replaced_frames_connector_change);
	RUN_TEST(a_mode_below_one_hertz_is_refused);
	RUN_TEST(a_state_the_driver_cannot_program_turns_the_crtc_off);
	RUN_TEST(a_refused_state_turning_a_crtc_off_still_stops_it);
	RUN_TEST(an_fb_the_driver_cannot_import_refuses_the_commit);
	RUN_TEST(a_commit_after_a_vblanks_instant_latches_at_the_next_even_if_the_timer_is_late);
	RUN_TEST(three_queued_frames_after_a_stall_latch_one_per_vblank_each_with_its_own);
	RUN_TEST(an_idle_output_stops_its_vblanks_and_keeps_the_count);
	RUN_TEST(a_frame_after_a_cursor_update_latches_with_it);
	RUN_TEST(unplugging_one_output_of_a_state_spanning_two_leaves_the_other_latching);
	RUN_TEST(unplugging_objects_a_queued_state_carries_unchanged_drops_them_from_it);
	RUN_TEST(a_state_naming_an_unplugged_object_is_refused_at_commit);
	RUN_TEST(an_armed_states_plane_state_lives_until_it_latched);
	RUN_TEST(a_capture_waits_for_the_next_vblank);
	RUN_TEST(force_off_of_an_enabled_inactive_crtc_unroutes_and_releases);
	RUN_TEST(unplugging_an_enabled_inactive_output_tells_the_listener_it_is_off);
	RUN_TEST(every_small_mode_the_parser_takes_has_a_timing);
	RUN_TEST(a_capture_gets_the_vblank_after_it_even_when_a_late_frame_latches_next);
	RUN_TEST(a_capture_due_at_a_vblank_counted_by_a_sync_keeps_that_vblanks_frame);
	RUN_TEST(cvt_refuses_a_mode_whose_clock_rounds_to_zero);
	RUN_TEST(crtc_state_of_a_two_crtc_state_outlives_a_later_flip);
	RUN_TEST(a_state_built_before_a_forced_off_is_refused_as_stale);
	RUN_TEST(forcing_off_after_an_unreported_latch_arms_nothing_waiting);
	HARNESS_EXIT();
}
