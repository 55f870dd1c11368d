/*
 * The one VDC fixture of the tests (unit, queue, core regressions): a VDC
 * with any number of outputs on a clock that only the test moves; vblanks
 * happen when the test says so (with an event loop, its timers are armed
 * but never dispatched). Every present event of every output is recorded
 * (and handed to a hook, if set). Fake framebuffers made through the
 * fixture are checked at teardown (no lock left, wrapper freed), and so is
 * the device (no atomic state left once every commit completed). The
 * builders of lib/states.h build what the tests commit.
 */
#ifndef TESTS_LIB_VDC_FIXTURE_H
#define TESTS_LIB_VDC_FIXTURE_H

#include <drm_fourcc.h>
#include <string.h>
#include "backend/vdc.h"
#include "lib/fake-fb.h"
#include "harness.h"
#include "lib/vblank-grid.h"
#include "lib/legacy.h"
#include "lib/states.h"

#define FIXTURE_MAX_FBS 16
#define FIXTURE_MAX_PRESENTS 16
#define FIXTURE_MAX_EVENTS 64
/* Where the clock starts: not a whole second, so that 'when' is not trivial. */
#define FIXTURE_T0 (UINT64_C(1000) * 1000000000u + 123)

#define XRGB DRM_FORMAT_XRGB8888
#define ARGB DRM_FORMAT_ARGB8888

#define OPAQUE(rgb) (0xff000000u | (rgb))
#define RED 0x00ff0000u
#define GREEN 0x0000ff00u
#define BLUE 0x000000ffu

/* A present event as recorded, with the output's CRTC index and the
 * fixture's clock when it came. */
struct fixture_event {
	unsigned crtc;
	uint64_t commit_seq;
	bool presented, discarded, failed;
	uint64_t seq;
	uint64_t when_ns;
	uint64_t refresh_ns;
	uint32_t flags;
	uint64_t clock;
};

struct fixture;
typedef void (*fixture_hook)(struct fixture *f, const struct wla_present *ev);

struct fixture {
	struct wla_config cfg;
	/* Vblank timers on this loop (fixture_setup_timers), armed but never
	 * dispatched: vblanks still come from wla_vdc_advance. NULL: no
	 * timers. Freed by fixture_teardown. */
	struct wl_event_loop *loop;
	uint64_t now; /* ns, what the VDC reads as now */
	struct wla_vdc *vdc;
	struct wla_device *dev;
	/* Output 0 and its objects (fixture_out/fixture_crtc: any output). */
	struct wla_vdc_output *out;
	struct wla_crtc *crtc;
	struct wla_connector *conn;
	struct wla_plane *primary, *cursor, *overlay[WLA_MAX_OVERLAY_PLANES];
	struct wla_mode mode;
	uint64_t period; /* what refresh_ns reports: 1e12 / refresh rounded */
	/* The vblank grid the output follows: vblank 0 at epoch (the clock
	 * when the output was last enabled, or where a mode change latched),
	 * at epoch_mhz. */
	uint64_t epoch;
	int32_t epoch_mhz;
	uint64_t last_commit_seq;

	/* Every output's present events, oldest first (the first
	 * FIXTURE_MAX_EVENTS), and the hook that sees each as it comes. */
	struct fixture_event events[FIXTURE_MAX_EVENTS];
	size_t n_events;
	fixture_hook hook;
	void *hook_data;

	/* The same as the driver gave them (the first FIXTURE_MAX_PRESENTS). */
	struct wla_present presents[FIXTURE_MAX_PRESENTS];
	size_t n_presents;
	struct wla_present last_present;
	uint64_t total_presents;

	struct fake_fb_probe probes[FIXTURE_MAX_FBS];
	struct wla_fb *fbs[FIXTURE_MAX_FBS]; /* NULL once the test dropped it */
	size_t n_fbs;

	/* What a refused commit must leave as it was (begin_state). */
	struct {
		struct wla_crtc_state *crtc_ptr[WLA_MAX_CRTCS], crtc[WLA_MAX_CRTCS];
		struct wla_plane_state *plane_ptr[WLA_MAX_PLANES], plane[WLA_MAX_PLANES];
		struct wla_connector_state *conn_ptr[WLA_MAX_CONNECTORS],
			conn[WLA_MAX_CONNECTORS];
		struct fake_fb_probe probes[FIXTURE_MAX_FBS];
		int refs[FIXTURE_MAX_FBS], prepared[FIXTURE_MAX_FBS];
		size_t live_states;
		unsigned pending_frames;
	} before;
};

static inline void record_present(struct wla_crtc *crtc, const struct wla_present *event,
	void *data)
{
	struct fixture *f = data;
	if (f->n_events < FIXTURE_MAX_EVENTS) {
		f->events[f->n_events++] = (struct fixture_event){
			.crtc = crtc->index,
			.commit_seq = event->commit_seq,
			.presented = event->presented,
			.discarded = event->discarded,
			.failed = event->failed,
			.seq = event->seq,
			.when_ns = (uint64_t)event->when.tv_sec * UINT64_C(1000000000) +
				(uint64_t)event->when.tv_nsec,
			.refresh_ns = event->refresh_ns,
			.flags = event->flags,
			.clock = f->now,
		};
	}
	if (f->n_presents < FIXTURE_MAX_PRESENTS) {
		f->presents[f->n_presents++] = *event;
	}
	f->last_present = *event;
	f->total_presents++;
	if (f->hook) {
		f->hook(f, event);
	}
}

static inline uint64_t fixture_now(void *data)
{
	return ((struct fixture *)data)->now;
}

static inline struct wla_vdc_output *fixture_out(struct fixture *f, size_t i)
{
	return f->vdc->outputs[i];
}

static inline struct wla_crtc *fixture_crtc(struct fixture *f, size_t i)
{
	return &fixture_out(f, i)->crtc;
}

/* The VDC of cfg (after wla_config_init and the test's changes), with no
 * timers unless f->loop is set; the clock at t0. */
static inline bool fixture_setup_config_at(struct fixture *f, uint64_t t0)
{
	f->now = t0;
	f->vdc = wla_vdc_create(f->loop, &f->cfg, fixture_now, f);
	if (!f->vdc) {
		return false;
	}
	f->dev = &f->vdc->dev;
	f->out = f->vdc->outputs[0];
	f->crtc = &f->out->crtc;
	f->conn = &f->out->connector;
	f->primary = &f->out->primary;
	f->cursor = &f->out->cursor;
	for (size_t i = 0; i < f->out->n_overlays; i++) {
		f->overlay[i] = &f->out->overlays[i];
	}
	for (size_t i = 0; i < f->vdc->n_outputs; i++) {
		struct wla_crtc *crtc = fixture_crtc(f, i);
		crtc->present = record_present;
		crtc->present_data = f;
		/* The flip queue's policy is the glue's to set, as from the
		 * config. */
		crtc->queue_depth = f->cfg.flip_depth ? f->cfg.flip_depth : 1;
		crtc->mailbox = f->cfg.flip_mailbox;
	}
	const struct wla_config_mode *m = &f->cfg.outputs[0].modes[0];
	if (!wla_mode_cvt_exact(&f->mode, m->width, m->height, m->refresh_mhz)) {
		return false;
	}
	f->period = wla_mode_period_ns(&f->mode);
	f->epoch = f->now;
	f->epoch_mhz = f->mode.refresh_mhz;
	return true;
}

static inline bool fixture_setup_config(struct fixture *f)
{
	return fixture_setup_config_at(f, FIXTURE_T0);
}

/* The default configuration with the output's mode replaced. */
static inline bool fixture_setup(struct fixture *f, int32_t width, int32_t height,
	int32_t refresh_mhz)
{
	memset(f, 0, sizeof(*f));
	wla_config_init(&f->cfg);
	f->cfg.outputs[0].modes[0] = (struct wla_config_mode){ width, height, refresh_mhz };
	return fixture_setup_config(f);
}

/* The same with the VDC's vblank timers on a loop of the fixture's, so
 * that tests see the timer's state (out->timer_armed, out->timer_fd). */
static inline bool fixture_setup_timers(struct fixture *f, int32_t width, int32_t height,
	int32_t refresh_mhz)
{
	memset(f, 0, sizeof(*f));
	wla_config_init(&f->cfg);
	f->cfg.outputs[0].modes[0] = (struct wla_config_mode){ width, height, refresh_mhz };
	f->loop = wl_event_loop_create();
	return f->loop && fixture_setup_config(f);
}

/* A fb filled with pixel, rows stride bytes apart, owned by the fixture
 * until drop_fb; *probe (if given) follows its locks even after it is
 * freed. */
static inline struct wla_fb *fixture_fb_strided(struct fixture *f, uint32_t width,
	uint32_t height, uint32_t format, uint32_t pixel, uint32_t stride,
	struct fake_fb_probe **probe)
{
	if (f->n_fbs == FIXTURE_MAX_FBS) {
		fprintf(stderr, "  fixture: too many fbs\n");
		abort();
	}
	size_t i = f->n_fbs++;
	f->fbs[i] = fake_fb_create_strided(width, height, format, pixel, stride,
		&f->probes[i]);
	if (!f->fbs[i]) {
		abort();
	}
	if (probe) {
		*probe = &f->probes[i];
	}
	return f->fbs[i];
}

/* The same with rows packed. */
static inline struct wla_fb *fixture_fb(struct fixture *f, uint32_t width, uint32_t height,
	uint32_t format, uint32_t pixel, struct fake_fb_probe **probe)
{
	return fixture_fb_strided(f, width, height, format, pixel, width * 4, probe);
}

/* A fb that covers the mode. */
static inline struct wla_fb *screen_fb(struct fixture *f, uint32_t pixel,
	struct fake_fb_probe **probe)
{
	return fixture_fb(f, (uint32_t)f->mode.width, (uint32_t)f->mode.height, XRGB, pixel,
		probe);
}

/* The test lets go of its own reference (a client releasing its buffer). */
static inline void drop_fb(struct fixture *f, struct wla_fb *fb)
{
	for (size_t i = 0; i < f->n_fbs; i++) {
		if (f->fbs[i] == fb) {
			f->fbs[i] = NULL;
			wla_fb_put(fb);
			return;
		}
	}
	fprintf(stderr, "  fixture: dropping an fb it does not own\n");
	abort();
}

/* Vblank k of the fixture's grid. */
static inline uint64_t vblank_at(const struct fixture *f, uint64_t k)
{
	return vblank_grid_ns(f->epoch, f->epoch_mhz, k);
}

/* The first vblank of the fixture's grid after the clock. */
static inline uint64_t next_vblank(const struct fixture *f)
{
	return vblank_grid_next(f->epoch, f->epoch_mhz, f->now);
}

/* A mode change (to f->mode) latched at t: the grid starts again there. */
static inline void timing_restarts_at(struct fixture *f, uint64_t t)
{
	f->epoch = t;
	f->epoch_mhz = f->mode.refresh_mhz;
	f->period = wla_mode_period_ns(&f->mode);
}

/* set_config with f->mode; an output that was off starts its grid now, one
 * that is on keeps its timing (a mode change restarts it where it latches:
 * timing_restarts_at). */
static inline int enable_output(struct fixture *f, struct wla_fb *fb)
{
	if (!f->crtc->state->active) {
		f->epoch = f->now;
		f->epoch_mhz = f->mode.refresh_mhz;
	}
	return wla_atomic_set_config(f->crtc, f->conn, &f->mode, fb, ++f->last_commit_seq);
}

static inline int disable_output(struct fixture *f)
{
	return wla_atomic_set_config(f->crtc, f->conn, NULL, NULL, 0);
}

static inline int page_flip(struct fixture *f, struct wla_fb *fb)
{
	return wla_atomic_page_flip(f->crtc, fb, ++f->last_commit_seq);
}

/* A frame through the flip queue (a nonblocking commit): fb on the primary
 * plane and, with cursor, the cursor image cursor at (x, y) in the same
 * state. The state is freed if refused. */
static inline int queue_frame(struct fixture *f, struct wla_fb *fb, struct wla_fb *cursor,
	int32_t x, int32_t y)
{
	struct wla_atomic_state *state = test_state(f->dev, f->crtc, ++f->last_commit_seq, true);
	if (fb) {
		test_put(state, f->crtc, f->primary, fb, 0, 0);
		if (cursor) {
			test_put(state, f->crtc, f->cursor, cursor, x, y);
		}
	}
	return test_commit_nonblocking(state);
}

static inline int queue_flip(struct fixture *f, struct wla_fb *fb)
{
	return queue_frame(f, fb, NULL, 0, 0);
}

/* A cursor image of fb at (x, y), unscaled (legacy entry); NULL: off. */
static inline int move_cursor(struct fixture *f, struct wla_fb *fb, int32_t x, int32_t y)
{
	if (!fb) {
		return wla_atomic_disable_plane(f->cursor);
	}
	return wla_atomic_update_plane(f->cursor, f->crtc, fb, x, y, fb->width, fb->height, 0,
		0, fb->width << 16, fb->height << 16);
}

/* Move the clock onto the n-th vblank of the fixture's grid after it and
 * let the VDC see it. */
static inline void vblanks(struct fixture *f, uint64_t n)
{
	f->now = vblank_at(f, vblank_grid_count(f->epoch, f->epoch_mhz, f->now) + n);
	wla_vdc_advance(f->vdc, f->now);
}

static inline void vblank(struct fixture *f)
{
	vblanks(f, 1);
}

static inline struct timespec ns_to_timespec(uint64_t t)
{
	return (struct timespec){
		.tv_sec = (time_t)(t / 1000000000u),
		.tv_nsec = (long)(t % 1000000000u),
	};
}

static inline uint64_t timespec_to_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* Free the VDC after the last commits latched; every fb must be released. */
static inline void fixture_teardown(struct fixture *f)
{
	if (f->out->running) {
		vblank(f);
	}
	CHECK_INT(f->vdc->dev.live_states, 0);
	wla_vdc_destroy(f->vdc);
	if (f->loop) {
		wl_event_loop_destroy(f->loop);
		f->loop = NULL;
	}
	for (size_t i = 0; i < f->n_fbs; i++) {
		if (f->fbs[i]) {
			wla_fb_put(f->fbs[i]);
			f->fbs[i] = NULL;
		}
		CHECK_INT(f->probes[i].locks, 0);
		CHECK_INT(f->probes[i].accesses, 0);
		CHECK(f->probes[i].destroyed);
	}
}

/* Remember the current states and every fb's counts so that
 * nothing_changed can tell. */
static inline void snapshot(struct fixture *f)
{
	struct wla_device *dev = &f->vdc->dev;
	for (size_t i = 0; i < dev->n_crtcs; i++) {
		f->before.crtc_ptr[i] = dev->crtcs[i]->state;
		memcpy(&f->before.crtc[i], dev->crtcs[i]->state, sizeof(f->before.crtc[i]));
	}
	for (size_t i = 0; i < dev->n_planes; i++) {
		f->before.plane_ptr[i] = dev->planes[i]->state;
		memcpy(&f->before.plane[i], dev->planes[i]->state, sizeof(f->before.plane[i]));
	}
	for (size_t i = 0; i < dev->n_connectors; i++) {
		f->before.conn_ptr[i] = dev->connectors[i]->state;
		memcpy(&f->before.conn[i], dev->connectors[i]->state, sizeof(f->before.conn[i]));
	}
	for (size_t i = 0; i < f->n_fbs; i++) {
		f->before.probes[i] = f->probes[i];
		f->before.refs[i] = f->fbs[i] ? f->fbs[i]->refs : 0;
		f->before.prepared[i] = f->fbs[i] ? f->fbs[i]->prepared : 0;
	}
	f->before.live_states = dev->live_states;
	f->before.pending_frames = f->crtc->pending_frames;
}

/* A new atomic state, after a snapshot of what it must not change unless
 * committed. */
static inline struct wla_atomic_state *begin_state(struct fixture *f)
{
	snapshot(f);
	return wla_atomic_state_alloc(&f->vdc->dev);
}

/* The current states and the fbs' locks are what snapshot saw; with
 * freed, also the fb references and the count of atomic states. */
static inline bool nothing_changed(struct fixture *f, bool freed)
{
	struct wla_device *dev = &f->vdc->dev;
	bool same = true;
	for (size_t i = 0; i < dev->n_crtcs; i++) {
		if (dev->crtcs[i]->state != f->before.crtc_ptr[i] ||
				memcmp(dev->crtcs[i]->state, &f->before.crtc[i],
					sizeof(f->before.crtc[i])) != 0) {
			fprintf(stderr, "  %s: current state changed\n", dev->crtcs[i]->name);
			same = false;
		}
	}
	for (size_t i = 0; i < dev->n_planes; i++) {
		if (dev->planes[i]->state != f->before.plane_ptr[i] ||
				memcmp(dev->planes[i]->state, &f->before.plane[i],
					sizeof(f->before.plane[i])) != 0) {
			fprintf(stderr, "  plane %s: current state changed\n",
				dev->planes[i]->name);
			same = false;
		}
	}
	for (size_t i = 0; i < dev->n_connectors; i++) {
		if (dev->connectors[i]->state != f->before.conn_ptr[i] ||
				memcmp(dev->connectors[i]->state, &f->before.conn[i],
					sizeof(f->before.conn[i])) != 0) {
			fprintf(stderr, "  connector %s: current state changed\n",
				dev->connectors[i]->name);
			same = false;
		}
	}
	for (size_t i = 0; i < f->n_fbs; i++) {
		if (f->probes[i].locks != f->before.probes[i].locks ||
				(f->fbs[i] && f->fbs[i]->prepared != f->before.prepared[i])) {
			fprintf(stderr, "  fb %zu: locks %d -> %d\n", i,
				f->before.probes[i].locks, f->probes[i].locks);
			same = false;
		}
		if (freed && f->fbs[i] && f->fbs[i]->refs != f->before.refs[i]) {
			fprintf(stderr, "  fb %zu: refs %d -> %d\n", i, f->before.refs[i],
				f->fbs[i]->refs);
			same = false;
		}
	}
	if (f->crtc->pending_frames != f->before.pending_frames) {
		fprintf(stderr, "  pending frames %u -> %u\n", f->before.pending_frames,
			f->crtc->pending_frames);
		same = false;
	}
	if (freed && dev->live_states != f->before.live_states) {
		fprintf(stderr, "  live atomic states %zu -> %zu\n", f->before.live_states,
			dev->live_states);
		same = false;
	}
	return same;
}

/* Commit a state from begin_state that must fail with err: the return
 * value, nothing changed, and once the caller (us) freed it, nothing held. */
static inline bool commit_refused(struct fixture *f, struct wla_atomic_state *state, int err)
{
	int ret = wla_atomic_commit(state);
	bool ok = ret == err;
	if (!ok) {
		fprintf(stderr, "  commit returned %d, expected %d\n", ret, err);
	}
	if (ret == 0) {
		/* The core owns it now; let it complete. */
		return false;
	}
	ok = nothing_changed(f, false) && ok;
	wla_atomic_state_free(state);
	return nothing_changed(f, true) && ok;
}

/* Check only (what wlr_output_impl.test does): accepted, nothing changed. */
static inline bool check_accepted(struct fixture *f, struct wla_atomic_state *state)
{
	int ret = wla_atomic_check(state);
	if (ret != 0) {
		fprintf(stderr, "  check returned %d, expected 0\n", ret);
	}
	bool ok = nothing_changed(f, false) && ret == 0;
	wla_atomic_state_free(state);
	return nothing_changed(f, true) && ok;
}

/* Put fb on plane at (x, y) with a dst of w x h, showing all of fb. */
static inline struct wla_plane_state *place(struct fixture *f, struct wla_atomic_state *state,
	struct wla_plane *plane, struct wla_fb *fb, int32_t x, int32_t y, uint32_t w, uint32_t h)
{
	struct wla_plane_state *ps = wla_atomic_get_plane_state(state, plane);
	if (!ps || wla_atomic_set_crtc_for_plane(state, ps, f->crtc) != 0) {
		abort();
	}
	wla_atomic_set_fb_for_plane(ps, fb);
	wla_plane_state_set_full(ps, x, y);
	ps->crtc_w = w;
	ps->crtc_h = h;
	return ps;
}

/* A state that only places fb on plane (as place) passes the check and
 * changes nothing (check_accepted). */
static inline bool place_accepted(struct fixture *f, struct wla_plane *plane,
	struct wla_fb *fb, int32_t x, int32_t y, uint32_t w, uint32_t h)
{
	struct wla_atomic_state *state = begin_state(f);
	place(f, state, plane, fb, x, y, w, h);
	return check_accepted(f, state);
}

/* A state that only places fb on plane (as place) is refused with err and
 * changes nothing (commit_refused); the log is cleared before it, for the
 * caller to check what the refusal said. */
static inline bool place_refused(struct fixture *f, struct wla_plane *plane, struct wla_fb *fb,
	int32_t x, int32_t y, uint32_t w, uint32_t h, int err)
{
	harness_log_clear();
	struct wla_atomic_state *state = begin_state(f);
	place(f, state, plane, fb, x, y, w, h);
	return commit_refused(f, state, err);
}

/* Let the clock read t and the VDC process what happened up to it. */
static inline void fixture_advance_to(struct fixture *f, uint64_t t)
{
	f->now = t;
	wla_vdc_advance(f->vdc, t);
}

/* The recorded event of commit_seq (a failure of the test if none). */
static inline const struct fixture_event *fixture_event_of(struct fixture *f,
	uint64_t commit_seq)
{
	for (size_t i = 0; i < f->n_events; i++) {
		if (f->events[i].commit_seq == commit_seq) {
			return &f->events[i];
		}
	}
	fprintf(stderr, "  no event for commit_seq %llu\n", (unsigned long long)commit_seq);
	harness_test_failures++;
	static const struct fixture_event none = { 0 };
	return &none;
}

#endif
