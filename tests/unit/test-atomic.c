/*
 * The atomic core (backend/atomic) driven through the VDC on a clock that only
 * the test moves: object states, the check rules, prepare and its rollback,
 * the frame slot, and the exact point where a framebuffer is released.
 */
#include <errno.h>
#include <stdint.h>
#include "lib/vdc-fixture.h"
#include "lib/legacy.h"

#define W 64
#define H 48

/* An output at W x H, enabled with a full-screen fb that has latched. */
static struct wla_fb *setup_running(struct fixture *f, struct fake_fb_probe **probe)
{
	if (!fixture_setup(f, W, H, 60000)) {
		abort();
	}
	struct wla_fb *fb = screen_fb(f, OPAQUE(BLUE), probe);
	CHECK_INT(enable_output(f, fb), 0);
	vblank(f);
	return fb;
}

static bool rect_is(const struct wla_rect *r, int32_t x, int32_t y, int32_t w, int32_t h)
{
	if (r->x == x && r->y == y && r->w == w && r->h == h) {
		return true;
	}
	fprintf(stderr, "  rect %d,%d %dx%d, expected %d,%d %dx%d\n", r->x, r->y, r->w, r->h,
		x, y, w, h);
	return false;
}

/* Object states */

static void crtc_state_duplicate_copies_and_resets_computed_fields(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	const struct wla_crtc_state *cur = f.crtc->state;
	/* The enabling commit left its computed fields and event in it. */
	CHECK(cur->mode_changed);
	CHECK(cur->want_event);

	struct wla_crtc_state *copy = wla_crtc_state_duplicate(cur);
	CHECK(copy && copy != cur);
	CHECK(copy->crtc == f.crtc);
	CHECK(copy->enable && copy->active);
	CHECK(wla_mode_equal(&copy->mode, &f.mode));
	CHECK_INT(copy->plane_mask, cur->plane_mask);
	CHECK_INT(copy->plane_mask, 1u << f.primary->index);
	CHECK_INT(copy->connector_mask, 1u << f.conn->index);
	CHECK(!copy->mode_changed && !copy->active_changed);
	CHECK(!copy->connectors_changed && !copy->planes_changed);
	CHECK(!copy->want_event);
	CHECK_INT(copy->commit_seq, 0);
	wla_crtc_state_destroy(copy);
	CHECK(f.crtc->state == cur);
	fixture_teardown(&f);
}

static void plane_state_duplicate_takes_an_fb_reference_not_a_lock(void)
{
	struct fixture f;
	struct fake_fb_probe *pa;
	struct wla_fb *a = setup_running(&f, &pa);
	const struct wla_plane_state *cur = f.primary->state;
	CHECK(cur->fb == a && cur->prepared);
	CHECK_INT(a->refs, 2); /* the test's and the current state's */
	CHECK_INT(pa->locks, 1);

	struct wla_plane_state *copy = wla_plane_state_duplicate(cur);
	CHECK(copy && copy != cur);
	CHECK(copy->fb == a);
	CHECK(copy->crtc == f.crtc);
	CHECK(!copy->prepared);
	CHECK_INT(copy->src_w, W << 16);
	CHECK_INT(copy->crtc_h, H);
	CHECK_INT(a->refs, 3);
	CHECK_INT(a->prepared, 1);
	CHECK_INT(pa->locks, 1);

	wla_plane_state_destroy(copy);
	CHECK_INT(a->refs, 2);
	CHECK_INT(pa->locks, 1);
	CHECK(!pa->destroyed);
	fixture_teardown(&f);
}

static void plane_state_prepare_takes_one_lock_and_cleanup_drops_it(void)
{
	struct fixture f;
	struct fake_fb_probe *pa;
	struct wla_fb *a = setup_running(&f, &pa);
	struct wla_plane_state *copy = wla_plane_state_duplicate(f.primary->state);

	CHECK_INT(wla_plane_state_prepare_fb(&f.vdc->dev, copy), 0);
	CHECK(copy->prepared);
	CHECK_INT(pa->locks, 2);
	CHECK_INT(a->prepared, 2);
	/* Already prepared: no second lock. */
	CHECK_INT(wla_plane_state_prepare_fb(&f.vdc->dev, copy), 0);
	CHECK_INT(pa->locks, 2);

	wla_plane_state_cleanup_fb(copy);
	CHECK(!copy->prepared);
	CHECK_INT(pa->locks, 1);
	wla_plane_state_cleanup_fb(copy);
	CHECK_INT(pa->locks, 1);
	wla_plane_state_destroy(copy);
	fixture_teardown(&f);
}

/* A driver that keeps its import of an fb past cleanup_fb (as KMS keeps a
 * DRM framebuffer per buffer), and counts what the core asks of it. */
struct keeper {
	struct wla_device dev;
	int prepares, cleanups, releases, imports;
};

static int keeper_prepare_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct keeper *k = wl_container_of(dev, k, dev);
	k->prepares++;
	if (!fb->import) {
		fb->import = &k->imports; /* any pointer of the driver's */
		k->imports++;
	}
	return 0;
}

static void keeper_cleanup_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct keeper *k = wl_container_of(dev, k, dev);
	k->cleanups++;
}

static void keeper_release_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct keeper *k = wl_container_of(dev, k, dev);
	CHECK(fb->import == &k->imports);
	CHECK_INT(fb->prepared, 0);
	k->releases++;
	k->imports--;
	fb->import = NULL;
}

static int keeper_commit_tail(struct wla_device *dev, struct wla_atomic_state *state)
{
	return 0;
}

static const struct wla_driver_funcs keeper_funcs = {
	.prepare_fb = keeper_prepare_fb,
	.cleanup_fb = keeper_cleanup_fb,
	.release_fb = keeper_release_fb,
	.commit_tail = keeper_commit_tail,
};

static void a_kept_import_serves_the_next_scanout_and_goes_with_the_fb(void)
{
	struct keeper a = { 0 }, b = { 0 };
	wla_device_init(&a.dev, &keeper_funcs, "keeper-a");
	wla_device_init(&b.dev, &keeper_funcs, "keeper-b");
	struct fake_fb_probe probe_storage, *probe = &probe_storage;
	struct wla_fb *fb = fake_fb_create(64, 64, DRM_FORMAT_XRGB8888, 0xff000000u, probe);
	struct wla_plane_state ps = { .fb = fb };

	/* Scanned out twice: one import, kept in between. */
	for (int i = 0; i < 2; i++) {
		CHECK_INT(wla_plane_state_prepare_fb(&a.dev, &ps), 0);
		CHECK(fb->import_dev == &a.dev);
		wla_plane_state_cleanup_fb(&ps);
		CHECK(fb->import != NULL && fb->import_dev == &a.dev);
	}
	CHECK_INT(a.prepares, 2);
	CHECK_INT(a.cleanups, 2);
	CHECK_INT(a.imports, 1);
	CHECK_INT(a.releases, 0);
	CHECK_INT(probe->locks, 0);

	/* Another device scans it out: a's import goes first. */
	CHECK_INT(wla_plane_state_prepare_fb(&b.dev, &ps), 0);
	CHECK_INT(a.releases, 1);
	CHECK_INT(a.imports, 0);
	CHECK(fb->import_dev == &b.dev);
	wla_plane_state_cleanup_fb(&ps);

	/* The fb goes (its last reference): b's import with it. */
	wla_fb_put(fb);
	CHECK_INT(b.releases, 1);
	CHECK_INT(b.imports, 0);
	CHECK(probe->destroyed);
}

static void connector_state_duplicate_copies_the_routing(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_connector_state *copy = wla_connector_state_duplicate(f.conn->state);
	CHECK(copy && copy != f.conn->state);
	CHECK(copy->connector == f.conn);
	CHECK(copy->crtc == f.crtc);
	wla_connector_state_destroy(copy);
	CHECK(f.conn->state->crtc == f.crtc);
	fixture_teardown(&f);
}

static void get_plane_state_pulls_in_the_planes_current_crtc(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_atomic_state *st = wla_atomic_state_alloc(&f.vdc->dev);
	CHECK(wla_atomic_new_crtc_state(st, f.crtc) == NULL);

	struct wla_plane_state *ps = wla_atomic_get_plane_state(st, f.primary);
	CHECK(ps && ps != f.primary->state);
	CHECK(wla_atomic_new_plane_state(st, f.primary) == ps);
	struct wla_crtc_state *cs = wla_atomic_new_crtc_state(st, f.crtc);
	CHECK(cs && cs != f.crtc->state);
	CHECK(st->crtcs[f.crtc->index].old_state == f.crtc->state);
	CHECK(st->planes[f.primary->index].old_state == f.primary->state);

	CHECK(wla_atomic_get_plane_state(st, f.primary) == ps);
	CHECK(wla_atomic_get_crtc_state(st, f.crtc) == cs);
	wla_atomic_state_free(st);
	fixture_teardown(&f);
}

static void get_plane_state_of_an_off_plane_pulls_in_no_crtc(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_atomic_state *st = wla_atomic_state_alloc(&f.vdc->dev);
	struct wla_plane_state *ps = wla_atomic_get_plane_state(st, f.overlay[0]);
	CHECK(ps && !ps->crtc && !ps->fb);
	CHECK(wla_atomic_new_crtc_state(st, f.crtc) == NULL);
	CHECK(wla_atomic_get_plane_state(st, f.overlay[0]) == ps);
	wla_atomic_state_free(st);
	fixture_teardown(&f);
}

static void get_connector_state_pulls_in_its_crtc(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_atomic_state *st = wla_atomic_state_alloc(&f.vdc->dev);
	struct wla_connector_state *cs = wla_atomic_get_connector_state(st, f.conn);
	CHECK(cs && cs != f.conn->state);
	CHECK(cs->crtc == f.crtc);
	CHECK(wla_atomic_new_crtc_state(st, f.crtc) != NULL);
	CHECK(wla_atomic_get_connector_state(st, f.conn) == cs);
	wla_atomic_state_free(st);

	/* Unrouted (output never enabled): no CRTC comes along. */
	struct fixture g;
	CHECK(fixture_setup(&g, W, H, 60000));
	st = wla_atomic_state_alloc(&g.vdc->dev);
	cs = wla_atomic_get_connector_state(st, g.conn);
	CHECK(cs && !cs->crtc);
	CHECK(wla_atomic_new_crtc_state(st, g.crtc) == NULL);
	wla_atomic_state_free(st);
	fixture_teardown(&g);
	fixture_teardown(&f);
}

static void unused_atomic_state_gives_back_its_fb_references(void)
{
	struct fixture f;
	struct fake_fb_probe *pa, *pb;
	struct wla_fb *a = setup_running(&f, &pa);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), &pb);
	struct wla_atomic_state *st = begin_state(&f);
	CHECK_INT(f.vdc->dev.live_states, 1);
	place(&f, st, f.primary, b, 0, 0, W, H);
	CHECK_INT(b->refs, 2);
	CHECK_INT(a->refs, 2);
	wla_atomic_state_free(st);
	CHECK(nothing_changed(&f, true));
	CHECK_INT(b->refs, 1);
	CHECK_INT(f.vdc->dev.live_states, 0);
	fixture_teardown(&f);
}

/* Enabling an output */

static void set_config_enables_the_output_and_latches_at_the_first_vblank(void)
{
	struct fixture f;
	memset(&f, 0, sizeof(f));
	wla_config_init(&f.cfg); /* 1920x1080@60 */
	CHECK(fixture_setup_config(&f));
	struct fake_fb_probe *pa;
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), &pa);

	struct wla_atomic_state *st = begin_state(&f);
	st->allow_modeset = true;
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(st, f.crtc);
	cs->enable = cs->active = true;
	cs->mode = f.mode;
	cs->commit_seq = 42;
	cs->want_event = true;
	struct wla_connector_state *conn_state = wla_atomic_get_connector_state(st, f.conn);
	CHECK_INT(wla_atomic_set_crtc_for_connector(st, conn_state, f.crtc), 0);
	struct wla_plane_state *ps = place(&f, st, f.primary, a, 0, 0, 1920, 1080);

	CHECK_INT(wla_atomic_check(st), 0);
	CHECK(cs->mode_changed && cs->active_changed);
	CHECK(cs->connectors_changed && cs->planes_changed);
	CHECK(ps->visible);
	CHECK(rect_is(&ps->dst, 0, 0, 1920, 1080));
	CHECK(rect_is(&ps->src, 0, 0, 1920 << 16, 1080 << 16));
	CHECK(nothing_changed(&f, false));
	CHECK_INT(pa->locks, 0);

	f.epoch = f.now;
	CHECK_INT(wla_atomic_commit(st), 0);
	CHECK(f.crtc->state == cs);
	CHECK(f.conn->state == conn_state);
	CHECK(f.primary->state == ps);
	CHECK(ps->prepared);
	CHECK_INT(pa->locks, 1);
	CHECK_INT(f.crtc->pending_frames, 1);

	/* One nanosecond early: nothing. */
	f.now = vblank_at(&f, 1) - 1;
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 0);
	f.now++;
	wla_vdc_advance(f.vdc, f.now);
	CHECK_INT(f.n_presents, 1);
	const struct wla_present *p = &f.presents[0];
	CHECK_INT(p->commit_seq, 42);
	CHECK(p->presented);
	CHECK_INT(p->seq, 1);
	CHECK_INT(timespec_to_ns(&p->when), f.epoch + 16666667);
	CHECK_INT(p->refresh_ns, 16666667);
	CHECK_INT(p->flags, WLA_PRESENT_VSYNC | WLA_PRESENT_HW_CLOCK | WLA_PRESENT_HW_COMPLETION);
	CHECK_INT(f.crtc->pending_frames, 0);
	CHECK_INT(pa->locks, 1);
	CHECK_INT(f.vdc->dev.live_states, 0);
	fixture_teardown(&f);
}

/*
 * What the hardware shows at start, adopted (a CRTC the console left lit):
 * the CRTC is enabled and routed as if committed, so that a frame on it
 * with the same mode needs no modeset; it is refused for a CRTC that has a
 * state of its own, an invalid mode, and connectors missing, routed
 * elsewhere or not allowed on it, each with a line; and turning it off is
 * an ordinary modeset.
 */
static void an_adopted_crtc_takes_frames_without_a_modeset(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	uint32_t conn_bit = 1u << f.conn->index;
	struct wla_mode bad = f.mode;
	bad.vtotal = 0;
	harness_log_clear();
	CHECK(!wla_crtc_adopt(f.crtc, &bad, conn_bit));
	CHECK_LOGGED("crtc-0", "cannot adopt mode");
	CHECK(!wla_crtc_adopt(f.crtc, &f.mode, 0));
	CHECK_LOGGED("crtc-0", "cannot adopt mode", "no connector");
	CHECK(!wla_crtc_adopt(f.crtc, &f.mode, 1u << 5));
	CHECK_LOGGED("crtc-0", "cannot adopt connector mask 0x20");
	uint32_t possible = f.conn->possible_crtcs;
	f.conn->possible_crtcs = 0;
	CHECK(!wla_crtc_adopt(f.crtc, &f.mode, conn_bit));
	CHECK_LOGGED("crtc-0", "not one of its possible CRTCs");
	f.conn->possible_crtcs = possible;
	CHECK(!f.crtc->state->enable && !f.conn->state->crtc);

	CHECK(wla_crtc_adopt(f.crtc, &f.mode, conn_bit));
	CHECK(f.crtc->state->enable && f.crtc->state->active);
	CHECK(wla_mode_equal(&f.crtc->state->mode, &f.mode));
	CHECK_INT(f.crtc->state->connector_mask, conn_bit);
	CHECK(f.conn->state->crtc == f.crtc);
	CHECK(!wla_crtc_adopt(f.crtc, &f.mode, conn_bit));
	CHECK_LOGGED("crtc-0", "has a state of its own");

	/* A frame on it: no modeset (allow_modeset off is fine). */
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	struct wla_atomic_state *st = begin_state(&f);
	place(&f, st, f.primary, a, 0, 0, W, H);
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(st, f.crtc);
	CHECK_INT(wla_atomic_check(st), 0);
	CHECK(!cs->mode_changed && !cs->active_changed && !cs->connectors_changed);
	CHECK(cs->planes_changed);
	wla_atomic_state_free(st);

	/* Off: a modeset like any other. */
	st = begin_state(&f);
	st->allow_modeset = true;
	cs = wla_atomic_get_crtc_state(st, f.crtc);
	cs->enable = cs->active = false;
	struct wla_connector_state *conn_state = wla_atomic_get_connector_state(st, f.conn);
	CHECK_INT(wla_atomic_set_crtc_for_connector(st, conn_state, NULL), 0);
	CHECK_INT(wla_atomic_commit(st), 0);
	CHECK(cs->active_changed && cs->mode_changed);
	CHECK(!f.crtc->state->active && !f.conn->state->crtc);
	fixture_teardown(&f);
}

/* The check rules: each accepted when valid, refused with a line naming the
 * object, the field and the value, and nothing changed. */

static void check_src_must_lie_inside_the_fb(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_fb *o = fixture_fb(&f, 16, 16, ARGB, 0, NULL);

	struct wla_atomic_state *st = begin_state(&f);
	place(&f, st, f.overlay[0], o, 8, 8, 16, 16);
	CHECK(check_accepted(&f, st));

	st = begin_state(&f);
	struct wla_plane_state *ps = place(&f, st, f.overlay[0], o, 8, 8, 17, 16);
	ps->src_w = 17 << 16;
	CHECK(commit_refused(&f, st, -ENOSPC));
	CHECK_LOGGED("plane overlay-1", "src 0.0000,0.0000 17.0000x16.0000",
		"outside the fb 16x16");

	/* Half a pixel in, the whole width no longer fits... */
	harness_log_clear();
	st = begin_state(&f);
	ps = place(&f, st, f.overlay[0], o, 8, 8, 16, 16);
	ps->src_y = WLA_FIXED_ONE / 2;
	CHECK(commit_refused(&f, st, -ENOSPC));
	CHECK_LOGGED("plane overlay-1", "src 0.0000,0.5000 16.0000x16.0000",
		"outside the fb 16x16");

	/* ...but half a pixel less does. */
	st = begin_state(&f);
	ps = place(&f, st, f.overlay[0], o, 8, 8, 16, 16);
	ps->src_y = WLA_FIXED_ONE / 2;
	ps->src_h = (16 << 16) - WLA_FIXED_ONE / 2;
	CHECK(check_accepted(&f, st));
	fixture_teardown(&f);
}

static void check_dst_must_lie_inside_the_coordinate_range(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_fb *o = fixture_fb(&f, 16, 16, ARGB, 0, NULL);

	CHECK(place_accepted(&f, f.overlay[0], o, -32767, 32767 - 16, 16, 16));

	CHECK(place_refused(&f, f.overlay[0], o, -32768, 8, 16, 16, -ERANGE));
	CHECK_LOGGED("plane overlay-1", "dst -32768,8 16x16", "coordinate range");

	CHECK(place_refused(&f, f.overlay[0], o, 8, 32767 - 15, 16, 16, -ERANGE));
	CHECK_LOGGED("plane overlay-1", "dst 8,32752 16x16", "coordinate range");

	CHECK(place_refused(&f, f.overlay[0], o, 8, 8, 0, 16, -ERANGE));
	CHECK_LOGGED("plane overlay-1", "dst 8,8 0x16", "empty");
	fixture_teardown(&f);
}

static void check_primary_dst_must_cover_the_mode(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), NULL);
	struct wla_fb *half = fixture_fb(&f, W / 2, H, XRGB, OPAQUE(RED), NULL);

	CHECK(place_accepted(&f, f.primary, b, 0, 0, W, H));

	CHECK(place_refused(&f, f.primary, b, 1, 0, W, H, -EINVAL));
	CHECK_LOGGED("plane primary-0", "dst 1,0 64x48", "must cover crtc-0's mode 64x48");

	CHECK(place_refused(&f, f.primary, half, 0, 0, W / 2, H, -EINVAL));
	CHECK_LOGGED("plane primary-0", "dst 0,0 32x48", "must cover crtc-0's mode 64x48");
	fixture_teardown(&f);
}

static void check_overlay_scaling_must_stay_within_the_planes_limits(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_fb *tiny = fixture_fb(&f, 2, 2, ARGB, 0, NULL);
	struct wla_fb *big = fixture_fb(&f, 40, 40, ARGB, 0, NULL);

	/* 8x magnification and 4x reduction are the limits. */
	struct wla_atomic_state *st = begin_state(&f);
	place(&f, st, f.overlay[0], tiny, 0, 0, 16, 16);
	place(&f, st, f.overlay[1], big, 0, 0, 10, 10);
	CHECK(check_accepted(&f, st));

	CHECK(place_refused(&f, f.overlay[0], tiny, 0, 0, 32, 16, -ERANGE));
	CHECK_LOGGED("plane overlay-1", "horizontal scale 0.0625", "outside 0.1250..4.0000");

	CHECK(place_refused(&f, f.overlay[1], big, 0, 0, 10, 8, -ERANGE));
	CHECK_LOGGED("plane overlay-2", "vertical scale 5.0000", "outside 0.1250..4.0000");

	CHECK(place_refused(&f, f.overlay[1], big, 0, 0, 8, 10, -ERANGE));
	CHECK_LOGGED("plane overlay-2", "horizontal scale 5.0000", "outside 0.1250..4.0000");
	fixture_teardown(&f);
}

static void check_format_must_be_one_of_the_planes(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_fb *nv12 = fixture_fb(&f, W, H, DRM_FORMAT_NV12, 0, NULL);
	struct wla_fb *xrgb_cursor = fixture_fb(&f, 16, 16, XRGB, 0, NULL);
	struct wla_fb *argb_cursor = fixture_fb(&f, 16, 16, ARGB, 0, NULL);

	struct wla_atomic_state *st = begin_state(&f);
	place(&f, st, f.primary, nv12, 0, 0, W, H);
	CHECK(commit_refused(&f, st, -EINVAL));
	/* A shm fb carries no modifier: DRM_FORMAT_MOD_INVALID. */
	CHECK_LOGGED("plane primary-0: format NV12 (0x3231564e) with modifier "
		"0x00ffffffffffffff is not supported");

	CHECK(place_refused(&f, f.cursor, xrgb_cursor, 0, 0, 16, 16, -EINVAL));
	CHECK_LOGGED("plane cursor-3: format XR24 (0x34325258) with modifier "
		"0x00ffffffffffffff is not supported");

	CHECK(place_accepted(&f, f.cursor, argb_cursor, 0, 0, 16, 16));
	fixture_teardown(&f);
}

static void check_cursor_fb_must_fit_the_cursor_size(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_fb *ok = fixture_fb(&f, 64, 64, ARGB, 0, NULL);
	struct wla_fb *wide = fixture_fb(&f, 65, 64, ARGB, 0, NULL);
	struct wla_fb *tall = fixture_fb(&f, 64, 65, ARGB, 0, NULL);

	CHECK(place_accepted(&f, f.cursor, ok, 0, 0, 64, 64));

	CHECK(place_refused(&f, f.cursor, wide, 0, 0, 65, 64, -EINVAL));
	CHECK_LOGGED("plane cursor-3", "fb size 65x64", "exceeds the plane's 64x64");

	CHECK(place_refused(&f, f.cursor, tall, 0, 0, 64, 65, -EINVAL));
	CHECK_LOGGED("plane cursor-3", "fb size 64x65", "exceeds the plane's 64x64");
	fixture_teardown(&f);
}

/* A state that turns the CRTC on with a full-screen fb; the connector is
 * routed if route is set. */
static struct wla_atomic_state *enable_state(struct fixture *f, struct wla_fb *fb, bool route)
{
	struct wla_atomic_state *st = begin_state(f);
	st->allow_modeset = true;
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(st, f->crtc);
	cs->enable = cs->active = true;
	cs->mode = f->mode;
	if (route) {
		struct wla_connector_state *conn = wla_atomic_get_connector_state(st, f->conn);
		CHECK_INT(wla_atomic_set_crtc_for_connector(st, conn, f->crtc), 0);
	}
	place(f, st, f->primary, fb, 0, 0, (uint32_t)f->mode.width, (uint32_t)f->mode.height);
	return st;
}

static void check_enabled_crtc_needs_a_connector(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);

	CHECK(check_accepted(&f, enable_state(&f, a, true)));
	CHECK(commit_refused(&f, enable_state(&f, a, false), -EINVAL));
	CHECK_LOGGED("crtc-0: enable=1 without a connector");
	fixture_teardown(&f);
}

static void check_connector_needs_an_enabled_crtc(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));

	/* Routed to a CRTC that stays off. */
	struct wla_atomic_state *st = begin_state(&f);
	st->allow_modeset = true;
	struct wla_connector_state *conn = wla_atomic_get_connector_state(st, f.conn);
	CHECK_INT(wla_atomic_set_crtc_for_connector(st, conn, f.crtc), 0);
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("connector Virtual-1: routed to crtc-0, which has enable=0");

	/* Left routed to a CRTC that turns off. */
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);
	harness_log_clear();
	st = begin_state(&f);
	st->allow_modeset = true;
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(st, f.crtc);
	cs->enable = cs->active = false;
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("connector Virtual-1: routed to crtc-0, which has enable=0");
	fixture_teardown(&f);
}

static void check_fb_needs_a_crtc_and_crtc_needs_an_fb(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_fb *o = fixture_fb(&f, 16, 16, ARGB, 0, NULL);

	struct wla_atomic_state *st = begin_state(&f);
	struct wla_plane_state *ps = wla_atomic_get_plane_state(st, f.overlay[0]);
	wla_atomic_set_fb_for_plane(ps, o);
	wla_plane_state_set_full(ps, 0, 0);
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("plane overlay-1: fb set but crtc is NULL");

	harness_log_clear();
	st = begin_state(&f);
	ps = wla_atomic_get_plane_state(st, f.overlay[0]);
	CHECK_INT(wla_atomic_set_crtc_for_plane(st, ps, f.crtc), 0);
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("plane overlay-1: crtc crtc-0 set but fb is NULL");
	fixture_teardown(&f);
}

static void check_modeset_needs_allow_modeset(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);

	struct wla_atomic_state *st = enable_state(&f, a, true);
	st->allow_modeset = false;
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("crtc-0", "needs a modeset", "mode_changed=1", "active_changed=1",
		"connectors_changed=1", "allow_modeset is off");

	CHECK_INT(enable_output(&f, a), 0);
	vblank(&f);
	/* Another refresh rate is a modeset too. */
	harness_log_clear();
	st = begin_state(&f);
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(st, f.crtc);
	CHECK(wla_mode_cvt_exact(&cs->mode, cs->mode.width, cs->mode.height, 30000));
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("crtc-0", "needs a modeset", "mode_changed=1", "active_changed=0",
		"allow_modeset is off");

	st = begin_state(&f);
	st->allow_modeset = true;
	cs = wla_atomic_get_crtc_state(st, f.crtc);
	CHECK(wla_mode_cvt_exact(&cs->mode, cs->mode.width, cs->mode.height, 30000));
	CHECK(check_accepted(&f, st));
	fixture_teardown(&f);
}

/* A gamma LUT must have the CRTC's size, and a CRTC without one takes
 * none; a changed LUT is no modeset, and the states share one LUT. */
static void check_gamma_lut_must_fit_the_crtc(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	uint16_t ramp[256] = { 0 };
	struct wla_gamma_lut *lut = wla_gamma_lut_create(256, ramp, ramp, ramp);
	struct wla_gamma_lut *small = wla_gamma_lut_create(16, ramp, ramp, ramp);
	CHECK(lut && small);
	CHECK(wla_gamma_lut_create(0, ramp, ramp, ramp) == NULL);
	CHECK_INT(f.crtc->gamma_size, 256);

	struct wla_atomic_state *st = begin_state(&f);
	wla_crtc_state_set_gamma(wla_atomic_get_crtc_state(st, f.crtc), small);
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("crtc-0: a gamma LUT of 16 entries, but its gamma_size is 256");

	st = begin_state(&f);
	st->allow_modeset = false;
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(st, f.crtc);
	wla_crtc_state_set_gamma(cs, lut);
	CHECK_INT(wla_atomic_check(st), 0);
	CHECK(cs->gamma_changed && !cs->mode_changed);
	CHECK_INT(lut->refs, 2);
	struct wla_crtc_state *copy = wla_crtc_state_duplicate(cs);
	CHECK(copy->gamma == lut && !copy->gamma_changed);
	CHECK_INT(lut->refs, 3);
	wla_crtc_state_destroy(copy);
	CHECK_INT(lut->refs, 2);
	wla_atomic_state_free(st);
	CHECK_INT(lut->refs, 1);
	CHECK(nothing_changed(&f, true));

	harness_log_clear();
	f.crtc->gamma_size = 0;
	st = begin_state(&f);
	wla_crtc_state_set_gamma(wla_atomic_get_crtc_state(st, f.crtc), lut);
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("crtc-0: a gamma LUT of 256 entries, but the CRTC has no gamma LUT");
	CHECK_INT(lut->refs, 1);
	wla_gamma_lut_put(lut);
	wla_gamma_lut_put(small);
	fixture_teardown(&f);
}

/* The ramp between entries is linear, and the ends are exact. */
static void gamma_ramps_interpolate_between_entries(void)
{
	const uint16_t two[2] = { 0, 0xffff };
	for (unsigned v = 0; v < 256; v++) {
		CHECK_INT(wla_gamma_apply(two, 2, (uint8_t)v), v);
	}
	const uint16_t three[3] = { 0xffff, 0, 0xffff };
	CHECK_INT(wla_gamma_apply(three, 3, 0), 255);
	CHECK_INT(wla_gamma_apply(three, 3, 255), 255);
	CHECK_INT(wla_gamma_apply(three, 3, 128), 1); /* just past the middle entry */
	CHECK_INT(wla_gamma_apply(three, 3, 64), 127);
	const uint16_t one[1] = { 0x8080 };
	CHECK_INT(wla_gamma_apply(one, 1, 200), 128);
}

/* Clipping */

static void check_clips_an_overlay_partly_off_screen(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_fb *o = fixture_fb(&f, 40, 20, ARGB, 0, NULL);
	struct wla_fb *s = fixture_fb(&f, 30, 30, ARGB, 0, NULL);

	/* Unscaled, off the left and the bottom edge: 10 columns and 10 rows go. */
	struct wla_atomic_state *st = begin_state(&f);
	struct wla_plane_state *ps = place(&f, st, f.overlay[0], o, -10, 38, 40, 20);
	CHECK_INT(wla_atomic_check(st), 0);
	CHECK(ps->visible);
	CHECK(rect_is(&ps->dst, 0, 38, 30, 10));
	CHECK(rect_is(&ps->src, 10 << 16, 0, 30 << 16, 10 << 16));
	wla_atomic_state_free(st);

	/* 3x magnified, 90x90 at (-1, 40): each edge's src moves by the cut dst
	 * pixels times src/dst, rounded down in 16.16:
	 * left 1 * 30/90 px = 21845, right 25 * 30/90 = 546133, bottom
	 * 82 * 30/90 = 1791317; src widths are what is left of 30 << 16. */
	st = begin_state(&f);
	ps = place(&f, st, f.overlay[0], s, -1, 40, 90, 90);
	CHECK_INT(wla_atomic_check(st), 0);
	CHECK(ps->visible);
	CHECK(rect_is(&ps->dst, 0, 40, 64, 8));
	CHECK(rect_is(&ps->src, 21845, 0, (30 << 16) - 21845 - 546133, (30 << 16) - 1791317));
	/* Committed, the plane is on screen. */
	CHECK_INT(wla_atomic_commit(st), 0);
	vblank(&f);
	CHECK(f.out->scanout.planes[f.overlay[0]->zpos] == f.overlay[0]->state);
	fixture_teardown(&f);
}

static void check_overlay_fully_off_screen_is_invisible_but_valid(void)
{
	struct fixture f;
	struct fake_fb_probe *po;
	setup_running(&f, NULL);
	struct wla_fb *o = fixture_fb(&f, 16, 16, ARGB, 0, &po);
	static const int32_t where[][2] = { { W, 0 }, { 0, H }, { -16, 0 }, { -16, -16 } };
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		struct wla_atomic_state *st = begin_state(&f);
		struct wla_plane_state *ps =
			place(&f, st, f.overlay[0], o, where[i][0], where[i][1], 16, 16);
		ps->visible = true;
		CHECK_INT(wla_atomic_check(st), 0);
		CHECK(!ps->visible);
		CHECK(nothing_changed(&f, false));
		wla_atomic_state_free(st);
	}

	/* Committed it holds its fb but shows nothing. */
	struct wla_atomic_state *st = begin_state(&f);
	place(&f, st, f.overlay[0], o, W, 0, 16, 16);
	CHECK_INT(wla_atomic_commit(st), 0);
	vblank(&f);
	CHECK_INT(po->locks, 1);
	CHECK(f.out->scanout.planes[f.overlay[0]->zpos] == NULL);
	fixture_teardown(&f);
}

/* prepare_fb */

static void prepare_failure_on_the_second_plane_rolls_back_the_first(void)
{
	struct fixture f;
	struct fake_fb_probe *pa, *pb, *pc;
	struct wla_fb *a = setup_running(&f, &pa);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), &pb);
	struct wla_fb *c = fixture_fb(&f, 16, 16, ARGB, 0, &pc);
	pc->fail_prepare = -EIO;

	/* A new fb on the primary: prepared, then undone. */
	struct wla_atomic_state *st = begin_state(&f);
	place(&f, st, f.primary, b, 0, 0, W, H);
	place(&f, st, f.overlay[0], c, 0, 0, 16, 16);
	CHECK(commit_refused(&f, st, -EIO));
	CHECK_LOGGED("plane overlay-1", "prepare_fb failed", "Input/output error");
	CHECK_INT(pb->prepares, 1);
	CHECK_INT(pb->locks, 0);
	CHECK_INT(pc->locks, 0);
	CHECK_INT(pa->locks, 1);

	/* The fb already on screen: its second lock is undone, the first stays. */
	harness_log_clear();
	st = begin_state(&f);
	place(&f, st, f.primary, a, 0, 0, W, H);
	place(&f, st, f.overlay[0], c, 0, 0, 16, 16);
	CHECK(commit_refused(&f, st, -EIO));
	CHECK_LOGGED("plane overlay-1", "prepare_fb failed");
	CHECK_INT(pa->prepares, 2);
	CHECK_INT(pa->locks, 1);
	CHECK_INT(f.vdc->dev.live_states, 0);

	/* Nothing stuck: the next frame goes through. */
	CHECK_INT(page_flip(&f, b), 0);
	vblank(&f);
	CHECK_INT(pb->locks, 1);
	CHECK_INT(pa->locks, 0);
	fixture_teardown(&f);
}

/* The frame slot */

static void page_flip_while_a_frame_is_pending_is_busy(void)
{
	struct fixture f;
	struct fake_fb_probe *pb, *pc;
	setup_running(&f, NULL);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), &pb);
	struct wla_fb *c = screen_fb(&f, OPAQUE(GREEN), &pc);

	CHECK_INT(page_flip(&f, b), 0);
	uint64_t b_seq = f.last_commit_seq;
	snapshot(&f);
	CHECK_INT(page_flip(&f, c), -EBUSY);
	char refused[32];
	snprintf(refused, sizeof(refused), "(commit_seq %llu)",
		(unsigned long long)f.last_commit_seq);
	CHECK_LOGGED("crtc-0", "still waiting to latch", "blocking commit refused", refused);
	CHECK(nothing_changed(&f, true));
	CHECK_INT(pc->locks, 0);
	CHECK_INT(c->refs, 1);

	size_t before = f.n_presents;
	vblank(&f);
	CHECK_INT(f.n_presents, before + 1);
	CHECK_INT(f.last_present.commit_seq, b_seq);
	CHECK_INT(page_flip(&f, c), 0);
	vblank(&f);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	CHECK_INT(pb->locks, 0);
	CHECK_INT(pc->locks, 1);
	fixture_teardown(&f);
}

/* Release of framebuffers */

static void fb_dropped_by_its_client_stays_until_replaced_on_screen(void)
{
	struct fixture f;
	struct fake_fb_probe *pz, *pa, *pb;
	setup_running(&f, &pz);
	struct wla_fb *a = screen_fb(&f, OPAQUE(RED), &pa);
	struct wla_fb *b = screen_fb(&f, OPAQUE(GREEN), &pb);

	CHECK_INT(page_flip(&f, a), 0);
	vblank(&f);
	CHECK_INT(pz->locks, 0);
	CHECK_INT(pa->locks, 1);

	drop_fb(&f, a);
	CHECK_INT(pa->locks, 1);
	CHECK(!pa->destroyed);

	CHECK_INT(page_flip(&f, b), 0);
	CHECK_INT(pa->locks, 1);
	CHECK(!pa->destroyed);
	CHECK_INT(pb->locks, 1);

	vblank(&f);
	CHECK_INT(pa->locks, 0);
	CHECK(pa->destroyed);
	CHECK_INT(pb->locks, 1);
	CHECK(!pb->destroyed);
	fixture_teardown(&f);
}

enum step_action { ENABLE, FLIP, VBLANK, DISABLE };

struct step {
	enum step_action action;
	int fb; /* 0, 1, 2: A, B, C */
	int locks[3];
};

static void fb_is_released_at_the_vblank_that_latches_its_replacement(void)
{
	static const struct step script[] = {
		{ ENABLE, 0, { 1, 0, 0 } },
		{ VBLANK, 0, { 1, 0, 0 } },
		{ FLIP, 1, { 1, 1, 0 } },
		{ VBLANK, 0, { 0, 1, 0 } },
		{ VBLANK, 0, { 0, 1, 0 } },
		{ FLIP, 2, { 0, 1, 1 } },
		{ VBLANK, 0, { 0, 0, 1 } },
		{ FLIP, 0, { 1, 0, 1 } },
		{ VBLANK, 0, { 1, 0, 0 } },
		/* The same fb again: locked by the new state and the one on screen. */
		{ FLIP, 0, { 2, 0, 0 } },
		{ VBLANK, 0, { 1, 0, 0 } },
		{ FLIP, 1, { 1, 1, 0 } },
		/* Off with a frame pending: nothing is on screen any more. */
		{ DISABLE, 0, { 0, 0, 0 } },
		{ VBLANK, 0, { 0, 0, 0 } },
		{ ENABLE, 2, { 0, 0, 1 } },
		{ VBLANK, 0, { 0, 0, 1 } },
		{ FLIP, 1, { 0, 1, 1 } },
		{ VBLANK, 0, { 0, 1, 0 } },
	};
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct fake_fb_probe *probe[3];
	struct wla_fb *fb[3];
	for (int i = 0; i < 3; i++) {
		fb[i] = screen_fb(&f, OPAQUE(RED), &probe[i]);
	}
	for (size_t s = 0; s < sizeof(script) / sizeof(script[0]); s++) {
		const struct step *step = &script[s];
		int ret = 0;
		switch (step->action) {
		case ENABLE:
			ret = enable_output(&f, fb[step->fb]);
			break;
		case FLIP:
			ret = page_flip(&f, fb[step->fb]);
			break;
		case VBLANK:
			vblank(&f);
			break;
		case DISABLE:
			ret = disable_output(&f);
			break;
		}
		if (ret != 0) {
			fprintf(stderr, "  step %zu returned %d\n", s, ret);
			CHECK_INT(ret, 0);
		}
		for (int i = 0; i < 3; i++) {
			if (probe[i]->locks != step->locks[i]) {
				fprintf(stderr, "  step %zu: fb %c has %d locks, expected %d\n",
					s, 'A' + i, probe[i]->locks, step->locks[i]);
				CHECK_INT(probe[i]->locks, step->locks[i]);
			}
			CHECK_INT(fb[i]->prepared, probe[i]->locks);
		}
	}
	fixture_teardown(&f);
}

/* Cursor updates: ordinary states without an event. */

static void cursor_update_takes_no_frame_slot_and_a_frame_written_over_it_latches_with_it(void)
{
	struct fixture f;
	struct fake_fb_probe *pa, *pb, *pk;
	setup_running(&f, &pa);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), &pb);
	struct wla_fb *k = fixture_fb(&f, 16, 16, ARGB, 0, &pk);

	CHECK_INT(move_cursor(&f, k, 10, 10), 0);
	CHECK_INT(f.crtc->queued, 1);
	CHECK_INT(f.crtc->armed, 1);
	CHECK_INT(f.crtc->pending_frames, 0);
	/* Depth 1 and the slot is free: the frame goes to the driver at once,
	 * over the armed cursor update (rearm), not a vblank behind it. */
	CHECK_INT(queue_flip(&f, b), 0);
	CHECK_INT(f.crtc->queued, 2);
	CHECK_INT(f.crtc->armed, 2);
	CHECK_INT(f.crtc->pending_frames, 1);
	CHECK_INT(f.crtc->waiting_frames, 0);
	CHECK_INT(pk->locks, 1);
	CHECK_INT(pb->locks, 1);
	CHECK(f.out->scanout.planes[f.cursor->zpos] == NULL);

	size_t before = f.n_presents;
	vblank(&f);
	/* Both at vblank 2; one event, the frame's: the cursor asked for none. */
	CHECK_INT(f.n_presents, before + 1);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	CHECK(f.last_present.presented);
	CHECK_INT(f.last_present.seq, 2);
	CHECK_INT(timespec_to_ns(&f.last_present.when), vblank_at(&f, 2));
	CHECK(f.out->scanout.planes[f.primary->zpos] == f.primary->state);
	CHECK(f.primary->state->fb == b);
	CHECK(f.out->scanout.planes[f.cursor->zpos] == f.cursor->state);
	CHECK(f.cursor->state->fb == k);
	CHECK_INT(f.cursor->state->crtc_x, 10);
	CHECK_INT(f.crtc->queued, 0);
	CHECK_INT(f.crtc->armed, 0);
	CHECK_INT(pa->locks, 0);
	CHECK_INT(pb->locks, 1);
	CHECK_INT(pk->locks, 1);
	CHECK_INT(f.vdc->dev.live_states, 0);
	fixture_teardown(&f);
}

static void cursor_update_while_a_frame_is_queued_is_refused_and_moves_with_the_next_frame(void)
{
	struct fixture f;
	struct fake_fb_probe *pa, *pb, *pc, *pk1, *pk2;
	setup_running(&f, &pa);
	f.crtc->queue_depth = 2;
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), &pb);
	struct wla_fb *c = screen_fb(&f, OPAQUE(GREEN), &pc);
	struct wla_fb *k1 = fixture_fb(&f, 16, 16, ARGB, 0, &pk1);
	struct wla_fb *k2 = fixture_fb(&f, 16, 16, ARGB, 0, &pk2);

	CHECK_INT(page_flip(&f, b), 0);
	uint64_t b_seq = f.last_commit_seq;
	snapshot(&f);
	CHECK_INT(move_cursor(&f, k1, 10, 10), -EBUSY);
	CHECK_LOGGED("crtc-0: 1 state(s) still waiting to latch; blocking commit refused "
		"(commit_seq 0)");
	CHECK(nothing_changed(&f, true));
	CHECK_INT(pk1->prepares, 0);
	CHECK_INT(k1->refs, 1);

	/* What the glue does instead: the cursor goes into the next frame. An
	 * armed frame is final, so that frame waits behind b. */
	CHECK_INT(queue_frame(&f, c, k2, 12, 12), 0);
	uint64_t c_seq = f.last_commit_seq;
	CHECK_INT(f.crtc->queued, 2);
	CHECK_INT(f.crtc->armed, 1);
	CHECK_INT(f.crtc->pending_frames, 2);
	CHECK_INT(f.crtc->waiting_frames, 1);
	CHECK_INT(pk2->locks, 1);
	harness_log_clear();
	CHECK_INT(move_cursor(&f, k1, 14, 14), -EBUSY);
	CHECK_LOGGED("crtc-0: 2 state(s) still waiting to latch; blocking commit refused "
		"(commit_seq 0)");
	CHECK_INT(pk1->locks, 0);

	size_t before = f.n_presents;
	vblank(&f);
	/* b alone: the cursor does not come ahead of its frame. */
	CHECK_INT(f.n_presents, before + 1);
	CHECK_INT(f.last_present.commit_seq, b_seq);
	CHECK_INT(f.last_present.seq, 2);
	CHECK(f.out->scanout.planes[f.primary->zpos]->fb == b);
	CHECK(f.out->scanout.planes[f.cursor->zpos] == NULL);
	CHECK_INT(f.crtc->armed, 1);
	CHECK_INT(f.crtc->waiting_frames, 0);
	CHECK_INT(pa->locks, 0);
	CHECK_INT(pb->locks, 1);
	CHECK_INT(pc->locks, 1);
	CHECK_INT(pk2->locks, 1);

	vblank(&f);
	CHECK_INT(f.n_presents, before + 2);
	CHECK_INT(f.last_present.commit_seq, c_seq);
	CHECK_INT(f.last_present.seq, 3);
	CHECK(f.out->scanout.planes[f.primary->zpos] == f.primary->state);
	CHECK(f.primary->state->fb == c);
	CHECK(f.out->scanout.planes[f.cursor->zpos] == f.cursor->state);
	CHECK(f.cursor->state->fb == k2);
	CHECK_INT(f.cursor->state->crtc_x, 12);
	CHECK_INT(pb->locks, 0);
	CHECK_INT(pc->locks, 1);
	CHECK_INT(pk2->locks, 1);
	CHECK_INT(f.vdc->dev.live_states, 0);

	/* Idle again: a cursor update on its own latches at the next vblank. */
	CHECK_INT(move_cursor(&f, k1, 20, 20), 0);
	CHECK(f.out->scanout.planes[f.cursor->zpos]->fb == k2);
	vblank(&f);
	CHECK_INT(f.n_presents, before + 2);
	CHECK(f.out->scanout.planes[f.cursor->zpos] == f.cursor->state);
	CHECK(f.cursor->state->fb == k1);
	CHECK_INT(f.cursor->state->crtc_x, 20);
	CHECK_INT(pk1->locks, 1);
	CHECK_INT(pk2->locks, 0);
	CHECK_INT(f.vdc->dev.live_states, 0);
	fixture_teardown(&f);
}

/* Disabling */

static void disabling_with_a_pending_frame_completes_it_unpresented(void)
{
	struct fixture f;
	struct fake_fb_probe *pa, *pb, *pk;
	setup_running(&f, &pa);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), &pb);
	struct wla_fb *k = fixture_fb(&f, 16, 16, ARGB, 0, &pk);
	/* A cursor update and a frame written over it, both armed. */
	CHECK_INT(move_cursor(&f, k, 10, 10), 0);
	CHECK_INT(queue_flip(&f, b), 0);
	CHECK_INT(f.crtc->armed, 2);
	uint64_t b_seq = f.last_commit_seq;
	size_t before = f.n_presents;

	/* Turning off is accepted with states queued (a blocking commit). */
	CHECK_INT(disable_output(&f), 0);
	CHECK_INT(f.n_presents, before + 1);
	CHECK_INT(f.last_present.commit_seq, b_seq);
	CHECK(!f.last_present.presented);
	CHECK(!f.last_present.discarded && !f.last_present.failed);
	CHECK(f.out->scanout.planes[f.primary->zpos] == NULL);
	CHECK(f.out->scanout.planes[f.cursor->zpos] == NULL);
	CHECK_INT(pa->locks, 0);
	CHECK_INT(pb->locks, 0);
	CHECK_INT(pk->locks, 0);
	CHECK_INT(f.vdc->dev.live_states, 0);
	CHECK_INT(f.crtc->pending_frames, 0);
	CHECK(wl_list_empty(&f.crtc->queue));
	CHECK(!f.crtc->state->enable && !f.crtc->state->active);
	CHECK(f.conn->state->crtc == NULL);
	CHECK(f.primary->state->crtc == NULL && f.primary->state->fb == NULL);
	CHECK(f.cursor->state->crtc == NULL && f.cursor->state->fb == NULL);

	/* No vblanks while off. */
	vblanks(&f, 3);
	CHECK_INT(f.n_presents, before + 1);
	CHECK_INT(f.out->counters.vblanks, 1);
	fixture_teardown(&f);
}

static void check_active_crtc_needs_a_valid_mode(void)
{
	struct fixture f;
	CHECK(fixture_setup(&f, W, H, 60000));
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);

	struct wla_atomic_state *st = enable_state(&f, a, true);
	wla_atomic_get_crtc_state(st, f.crtc)->enable = false;
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("crtc-0: active=1 without a mode (enable=0)");

	harness_log_clear();
	st = enable_state(&f, a, true);
	wla_atomic_get_crtc_state(st, f.crtc)->mode.width = 0;
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("crtc-0: mode 0x48@60.000 366kHz 64 72 100 51 55 61 -hsync +vsync is "
		"invalid: the size is not positive");

	harness_log_clear();
	st = enable_state(&f, a, true);
	wla_atomic_get_crtc_state(st, f.crtc)->mode.refresh_mhz = 0;
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("crtc-0: mode 64x48@0.000 366kHz 64 72 100 51 55 61 -hsync +vsync is "
		"invalid: the refresh rate is not the timing's");
	fixture_teardown(&f);
}

/* Two outputs; the second one's refresh rate is refresh2_mhz. */
static void setup_two_outputs(struct fixture *f, int32_t refresh2_mhz)
{
	memset(f, 0, sizeof(*f));
	wla_config_init(&f->cfg);
	f->cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
	f->cfg.outputs[1] = f->cfg.outputs[0];
	f->cfg.outputs[1].modes[0].refresh_mhz = refresh2_mhz;
	snprintf(f->cfg.outputs[1].name, sizeof(f->cfg.outputs[1].name), "Virtual-2");
	f->cfg.n_outputs = 2;
	if (!fixture_setup_config(f)) {
		abort();
	}
}

static void check_objects_go_only_to_their_possible_crtcs(void)
{
	struct fixture f;
	setup_two_outputs(&f, 60000);
	struct wla_crtc *other = &f.vdc->outputs[1]->crtc;
	struct wla_fb *a = screen_fb(&f, OPAQUE(BLUE), NULL);
	struct wla_fb *o = fixture_fb(&f, 16, 16, ARGB, 0, NULL);
	CHECK_INT(wla_atomic_set_config(other, &f.vdc->outputs[1]->connector, &f.mode, a, 1), 0);
	vblank(&f);

	struct wla_atomic_state *st = begin_state(&f);
	struct wla_plane_state *ps = wla_atomic_get_plane_state(st, f.overlay[0]);
	CHECK_INT(wla_atomic_set_crtc_for_plane(st, ps, other), 0);
	wla_atomic_set_fb_for_plane(ps, o);
	wla_plane_state_set_full(ps, 0, 0);
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("plane overlay-1: crtc crtc-1 is not one of its possible crtcs (0x1)");

	harness_log_clear();
	st = begin_state(&f);
	st->allow_modeset = true;
	struct wla_connector_state *conn = wla_atomic_get_connector_state(st, f.conn);
	CHECK_INT(wla_atomic_set_crtc_for_connector(st, conn, other), 0);
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("connector Virtual-1: crtc crtc-1 is not one of its possible crtcs (0x1)");
	CHECK_INT(disable_output(&f), 0);
	CHECK_INT(wla_atomic_set_config(other, &f.vdc->outputs[1]->connector, NULL, NULL, 0), 0);
	fixture_teardown(&f);
}

static void cursor_update_may_only_touch_cursor_planes(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), NULL);
	struct wla_fb *k = fixture_fb(&f, 16, 16, ARGB, 0, NULL);
	struct wla_atomic_state *st = begin_state(&f);
	st->legacy_cursor_update = true;
	place(&f, st, f.cursor, k, 0, 0, 16, 16);
	place(&f, st, f.primary, b, 0, 0, W, H);
	CHECK(commit_refused(&f, st, -EINVAL));
	CHECK_LOGGED("plane primary-0: a cursor update may only touch cursor planes");
	fixture_teardown(&f);
}

static void commit_touching_no_crtc_is_freed_at_once(void)
{
	struct fixture f;
	setup_running(&f, NULL);
	struct wla_atomic_state *st = wla_atomic_state_alloc(&f.vdc->dev);
	CHECK(wla_atomic_get_plane_state(st, f.overlay[0]) != NULL);
	CHECK_INT(wla_atomic_commit(st), 0);
	CHECK_INT(f.vdc->dev.live_states, 0);
	CHECK_INT(f.crtc->pending_frames, 0);
	CHECK_INT(wla_atomic_disable_plane(f.overlay[1]), 0);
	CHECK_INT(f.vdc->dev.live_states, 0);
	fixture_teardown(&f);
}

struct chain {
	struct fixture *f;
	struct wla_fb *fbs[3];
	size_t next;
	int refused;
	int inconsistent;
};

/* What a compositor does: the next frame is committed from the present
 * event of the previous one. */
static void flip_from_present(struct wla_crtc *crtc, const struct wla_present *event,
	void *data)
{
	struct chain *chain = data;
	record_present(crtc, event, chain->f);
	/* Delivered after the books: the frame has left the queue. */
	if (crtc->queued != 0 || crtc->armed != 0 || crtc->pending_frames != 0) {
		chain->inconsistent++;
	}
	if (page_flip(chain->f, chain->fbs[chain->next % 3]) != 0) {
		chain->refused++;
	}
	chain->next++;
}

static void frame_committed_from_the_present_handler_latches_at_the_next_vblank(void)
{
	struct fixture f;
	struct fake_fb_probe *p[3];
	CHECK(fixture_setup(&f, W, H, 60000));
	struct chain chain = { .f = &f, .next = 1 };
	for (int i = 0; i < 3; i++) {
		chain.fbs[i] = screen_fb(&f, OPAQUE(RED), &p[i]);
	}
	f.crtc->present = flip_from_present;
	f.crtc->present_data = &chain;
	CHECK_INT(enable_output(&f, chain.fbs[0]), 0);
	for (uint64_t n = 1; n <= 6; n++) {
		vblank(&f);
		CHECK_INT(f.total_presents, n);
		CHECK_INT(f.last_present.seq, n);
		CHECK(f.last_present.presented);
		/* fb (n - 1) % 3 latched at vblank n, fb n % 3 waits for the next,
		 * the third is free. */
		CHECK_INT(p[(n + 2) % 3]->locks, 1);
		CHECK_INT(p[n % 3]->locks, 1);
		CHECK_INT(p[(n + 1) % 3]->locks, 0);
		CHECK(f.primary->state->fb == chain.fbs[n % 3]);
		CHECK(f.out->scanout.planes[f.primary->zpos]->fb == chain.fbs[(n + 2) % 3]);
		CHECK_INT(f.crtc->pending_frames, 1);
		CHECK_INT(f.vdc->dev.live_states, 1);
	}
	CHECK_INT(chain.refused, 0);
	CHECK_INT(chain.inconsistent, 0);
	f.crtc->present = record_present;
	f.crtc->present_data = &f;
	fixture_teardown(&f);
}

/* Both outputs of setup_two_outputs on with fb[2 * round] and
 * fb[2 * round + 1], commit_seq 10 * round + 1 and + 2. */
static struct wla_atomic_state *two_output_state(struct fixture *f, struct wla_fb **fb,
	int round)
{
	struct wla_vdc_output *out2 = f->vdc->outputs[1];
	struct wla_atomic_state *st = wla_atomic_state_alloc(&f->vdc->dev);
	st->allow_modeset = true;
	struct wla_crtc *crtcs[] = { f->crtc, &out2->crtc };
	struct wla_connector *conns[] = { f->conn, &out2->connector };
	struct wla_plane *primaries[] = { f->primary, &out2->primary };
	for (int i = 0; i < 2; i++) {
		struct wla_crtc_state *cs = wla_atomic_get_crtc_state(st, crtcs[i]);
		cs->enable = cs->active = true;
		CHECK(wla_mode_cvt_exact(&cs->mode, W, H, i == 0 ? 60000 : 30000));
		cs->commit_seq = (uint64_t)(10 * round + i + 1);
		cs->want_event = true;
		struct wla_connector_state *conn = wla_atomic_get_connector_state(st, conns[i]);
		CHECK_INT(wla_atomic_set_crtc_for_connector(st, conn, crtcs[i]), 0);
		struct wla_plane_state *ps = wla_atomic_get_plane_state(st, primaries[i]);
		CHECK_INT(wla_atomic_set_crtc_for_plane(st, ps, crtcs[i]), 0);
		wla_atomic_set_fb_for_plane(ps, fb[2 * round + i]);
		wla_plane_state_set_full(ps, 0, 0);
	}
	return st;
}

static void commit_on_two_crtcs_completes_when_both_latched(void)
{
	struct fixture f;
	setup_two_outputs(&f, 30000);
	struct wla_vdc_output *out2 = f.vdc->outputs[1];
	struct fake_fb_probe *p[4];
	struct wla_fb *fb[4];
	for (int i = 0; i < 4; i++) {
		fb[i] = screen_fb(&f, OPAQUE(RED), &p[i]);
	}

	/* fbs 0 and 1 on the two outputs in one commit, then 2 and 3. */
	for (int round = 0; round < 2; round++) {
		struct wla_atomic_state *st = two_output_state(&f, fb, round);
		/* Round 1 changes no mode: both timings go on from round 0. */
		if (round == 0) {
			f.epoch = f.now;
		}
		size_t before = f.n_presents;
		CHECK_INT(wla_atomic_commit(st), 0);
		CHECK_INT(p[2 * round]->locks, 1);
		CHECK_INT(p[2 * round + 1]->locks, 1);

		/* 60 Hz latched, 30 Hz not yet: the commit is still alive. */
		vblank(&f);
		CHECK_INT(f.n_presents, before + 1);
		CHECK_INT(f.presents[before].commit_seq, 10 * round + 1);
		CHECK_INT(f.vdc->dev.live_states, 1);
		if (round == 0) {
			/* Not even through the flip queue while the 30 Hz half
			 * waits: the next one would reach the hardware in parts. */
			harness_log_clear();
			snapshot(&f);
			st = two_output_state(&f, fb, 1);
			CHECK_INT(wla_atomic_nonblocking_commit(st), -EBUSY);
			CHECK_LOGGED("crtc-1: 1 state(s) queued; a commit that latches on 2 CRTCs "
				"waits for all of them to be idle (commit_seq 12)");
			CHECK(nothing_changed(&f, false));
			wla_atomic_state_free(st);
			CHECK(nothing_changed(&f, true));
			CHECK_INT(p[2]->locks, 0);
			CHECK_INT(p[3]->locks, 0);
		}
		if (round == 1) {
			/* The commit replaced them as a whole: released as a whole. */
			CHECK_INT(p[0]->locks, 1);
			CHECK_INT(p[1]->locks, 1);
		}

		f.now = vblank_grid_next(f.epoch, 30000, f.now);
		wla_vdc_advance(f.vdc, f.now);
		CHECK_INT(f.n_presents, before + 2);
		CHECK_INT(f.presents[before + 1].commit_seq, 10 * round + 2);
		CHECK_INT(f.presents[before + 1].seq, out2->seq);
		CHECK_INT(f.vdc->dev.live_states, 0);
	}
	CHECK_INT(p[0]->locks, 0);
	CHECK_INT(p[1]->locks, 0);
	CHECK_INT(p[2]->locks, 1);
	CHECK_INT(p[3]->locks, 1);
	fixture_teardown(&f);
}

static void blocking_modeset_with_a_pending_frame_waits_for_the_latch(void)
{
	struct fixture f;
	struct fake_fb_probe *pa, *pb, *pc;
	setup_running(&f, &pa);
	struct wla_fb *b = screen_fb(&f, OPAQUE(RED), &pb);
	struct wla_fb *c = screen_fb(&f, OPAQUE(GREEN), &pc);
	CHECK_INT(page_flip(&f, b), 0);
	uint64_t b_seq = f.last_commit_seq;
	size_t before = f.n_presents;

	/* Same size, half the refresh rate: refused while b waits, nothing
	 * touched. (Through the flip queue it would queue behind b.) */
	struct wla_mode old_mode = f.mode;
	CHECK(wla_mode_cvt_exact(&f.mode, f.mode.width, f.mode.height, 30000));
	snapshot(&f);
	CHECK_INT(enable_output(&f, c), -EBUSY);
	CHECK_LOGGED("crtc-0", "still waiting to latch", "blocking commit refused");
	CHECK(nothing_changed(&f, true));
	CHECK_INT(pc->locks, 0);

	vblank(&f);
	CHECK_INT(f.n_presents, before + 1);
	CHECK_INT(f.last_present.commit_seq, b_seq);
	CHECK(f.last_present.presented);
	CHECK_INT(pa->locks, 0);
	CHECK_INT(pb->locks, 1);

	/* With the queue drained the modeset goes through; it latches at the
	 * next vblank of the old timing and the new period starts there. */
	uint64_t latch = next_vblank(&f);
	CHECK_INT(latch, vblank_grid_ns(f.epoch, old_mode.refresh_mhz, 3));
	CHECK_INT(enable_output(&f, c), 0);
	vblank(&f);
	CHECK_INT(f.n_presents, before + 2);
	CHECK_INT(f.last_present.commit_seq, f.last_commit_seq);
	CHECK(f.last_present.presented);
	CHECK_INT(f.last_present.refresh_ns, 33333333);
	CHECK_INT(timespec_to_ns(&f.last_present.when), latch);
	CHECK_INT(pb->locks, 0);
	CHECK_INT(pc->locks, 1);
	timing_restarts_at(&f, latch);
	fixture_teardown(&f);
}

static void cursor_disabled_releases_its_fb_at_the_next_vblank(void)
{
	struct fixture f;
	struct fake_fb_probe *pk;
	setup_running(&f, NULL);
	struct wla_fb *k = fixture_fb(&f, 16, 16, ARGB, 0, &pk);
	CHECK_INT(move_cursor(&f, k, 10, 10), 0);
	vblank(&f);
	CHECK(f.out->scanout.planes[f.cursor->zpos] != NULL);
	CHECK_INT(pk->locks, 1);

	CHECK_INT(wla_atomic_disable_plane(f.cursor), 0);
	CHECK_INT(pk->locks, 1);
	CHECK(f.out->scanout.planes[f.cursor->zpos] != NULL);
	vblank(&f);
	CHECK_INT(pk->locks, 0);
	CHECK(f.out->scanout.planes[f.cursor->zpos] == NULL);
	CHECK(f.cursor->state->fb == NULL && f.cursor->state->crtc == NULL);
	fixture_teardown(&f);
}

int main(void)
{
	harness_init();
	RUN_TEST(crtc_state_duplicate_copies_and_resets_computed_fields);
	RUN_TEST(plane_state_duplicate_takes_an_fb_reference_not_a_lock);
	RUN_TEST(plane_state_prepare_takes_one_lock_and_cleanup_drops_it);
	RUN_TEST(a_kept_import_serves_the_next_scanout_and_goes_with_the_fb);
	RUN_TEST(connector_state_duplicate_copies_the_routing);
	RUN_TEST(get_plane_state_pulls_in_the_planes_current_crtc);
	RUN_TEST(get_plane_state_of_an_off_plane_pulls_in_no_crtc);
	RUN_TEST(get_connector_state_pulls_in_its_crtc);
	RUN_TEST(unused_atomic_state_gives_back_its_fb_references);
	RUN_TEST(set_config_enables_the_output_and_latches_at_the_first_vblank);
	RUN_TEST(an_adopted_crtc_takes_frames_without_a_modeset);
	RUN_TEST(check_src_must_lie_inside_the_fb);
	RUN_TEST(check_dst_must_lie_inside_the_coordinate_range);
	RUN_TEST(check_primary_dst_must_cover_the_mode);
	RUN_TEST(check_overlay_scaling_must_stay_within_the_planes_limits);
	RUN_TEST(check_format_must_be_one_of_the_planes);
	RUN_TEST(check_cursor_fb_must_fit_the_cursor_size);
	RUN_TEST(check_enabled_crtc_needs_a_connector);
	RUN_TEST(check_connector_needs_an_enabled_crtc);
	RUN_TEST(check_fb_needs_a_crtc_and_crtc_needs_an_fb);
	RUN_TEST(check_gamma_lut_must_fit_the_crtc);
	RUN_TEST(gamma_ramps_interpolate_between_entries);
	RUN_TEST(check_modeset_needs_allow_modeset);
	RUN_TEST(check_clips_an_overlay_partly_off_screen);
	RUN_TEST(check_overlay_fully_off_screen_is_invisible_but_valid);
	RUN_TEST(prepare_failure_on_the_second_plane_rolls_back_the_first);
	RUN_TEST(page_flip_while_a_frame_is_pending_is_busy);
	RUN_TEST(fb_dropped_by_its_client_stays_until_replaced_on_screen);
	RUN_TEST(fb_is_released_at_the_vblank_that_latches_its_replacement);
	RUN_TEST(cursor_update_takes_no_frame_slot_and_a_frame_written_over_it_latches_with_it);
	RUN_TEST(cursor_update_while_a_frame_is_queued_is_refused_and_moves_with_the_next_frame);
	RUN_TEST(disabling_with_a_pending_frame_completes_it_unpresented);
	RUN_TEST(check_active_crtc_needs_a_valid_mode);
	RUN_TEST(check_objects_go_only_to_their_possible_crtcs);
	RUN_TEST(cursor_update_may_only_touch_cursor_planes);
	RUN_TEST(commit_touching_no_crtc_is_freed_at_once);
	RUN_TEST(frame_committed_from_the_present_handler_latches_at_the_next_vblank);
	RUN_TEST(commit_on_two_crtcs_completes_when_both_latched);
	RUN_TEST(blocking_modeset_with_a_pending_frame_waits_for_the_latch);
	RUN_TEST(cursor_disabled_releases_its_fb_at_the_next_vblank);
	HARNESS_EXIT();
}
