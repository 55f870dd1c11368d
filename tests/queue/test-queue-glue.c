/*
 * The flip queue through the wlroots glue, with real wlr_outputs and
 * wlr_buffers: frame events while the queue has room, buffers dropped by
 * their client while queued, disable and destroy with a full queue, the frame
 * deadline across a late wake-up, frame events in mailbox mode. Most tests
 * put the VDC on an injected clock and never dispatch its timers (only idle
 * sources run); the last two use real vblanks for a fraction of a second and
 * assert only what timing cannot change.
 */
#include <drm_fourcc.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/backend/headless.h>
#include <wlr/interfaces/wlr_output.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_output.h>
#include <wlatomic/backend.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include "backend/vdc.h"
#include "backend/wlr.h"
#include "harness.h"
#include "lib/backend.h"
#include "test-buffer.h"
#include "util.h"
#include "lib/vblank-grid.h"

#define W 64
#define H 48
#define MHZ_60 60000
/* refresh_ns: 1e12 / refresh rounded; the vblanks follow the exact grid. */
#define P60 UINT64_C(16666667)
#define T0 UINT64_C(5000000000)


/* A W x H XRGB8888 buffer of one colour; the caller owns it (drop it). */
static struct wlr_buffer *buffer_create(uint32_t color, bool *destroyed)
{
	return &test_buffer_create(W, H, DRM_FORMAT_XRGB8888, color, destroyed)->base;
}

/* n buffers of the colours unit, 2 * unit, ...; gone: one flag each, or
 * NULL. */
static void buffers_create(struct wlr_buffer **bufs, bool *gone, int n, uint32_t unit)
{
	for (int i = 0; i < n; i++) {
		bufs[i] = buffer_create(unit * (uint32_t)(i + 1), gone ? &gone[i] : NULL);
	}
}

struct gev {
	uint32_t commit_seq;
	bool presented;
	unsigned seq;
	uint64_t when_ns;
	int refresh;
	/* Read in the handler: the deadline right after this present. */
	bool have_deadline;
	struct wla_frame_deadline deadline;
	uint32_t pending_frames;
};

#define MAX_GEVENTS 256

struct gf {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wla_backend *wla;
	struct wlr_output *output;
	struct wla_output *out;
	struct wla_crtc *crtc;
	struct wl_listener new_output, present, frame, destroy;
	uint64_t now;
	struct gev events[MAX_GEVENTS];
	size_t n_events;
	int presented, not_presented;
	int frames;
	bool destroyed;
	int events_after_destroy;
	/* Real-time runs: commit the next buffer at every frame event. */
	struct wlr_buffer *bufs[2];
	int auto_commits, auto_commit_limit;
};

static uint64_t gf_clock(void *data)
{
	struct gf *f = data;
	return f->now;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return wla_timespec_to_ns(ts);
}

static void handle_present(struct wl_listener *listener, void *data)
{
	struct gf *f = wl_container_of(listener, f, present);
	const struct wlr_output_event_present *ev = data;
	if (f->destroyed) {
		f->events_after_destroy++;
		return;
	}
	ev->presented ? f->presented++ : f->not_presented++;
	if (f->n_events == MAX_GEVENTS) {
		return;
	}
	struct gev *g = &f->events[f->n_events++];
	*g = (struct gev){
		.commit_seq = ev->commit_seq,
		.presented = ev->presented,
		.seq = ev->seq,
		.when_ns = ev->when ? ts_ns(ev->when) : 0,
		.refresh = ev->refresh,
		.pending_frames = f->crtc->pending_frames,
	};
	g->have_deadline = wla_output_get_frame_deadline(f->output, &g->deadline);
}

/* A buffer commit as a compositor makes it from its frame handler. */
static bool commit_only(struct gf *f, struct wlr_buffer *buffer)
{
	wlr_output_attach_buffer(f->output, buffer);
	return wlr_output_commit(f->output);
}

static void handle_frame(struct wl_listener *listener, void *data)
{
	struct gf *f = wl_container_of(listener, f, frame);
	f->frames++;
	if (f->auto_commits < f->auto_commit_limit) {
		f->auto_commits++;
		CHECK(commit_only(f, f->bufs[f->auto_commits % 2]));
	}
}

static void handle_output_destroy(struct wl_listener *listener, void *data)
{
	struct gf *f = wl_container_of(listener, f, destroy);
	f->destroyed = true;
	/* The present listener stays: an event after this would be counted.
	 * The output's signal lists go with it, so nothing is removed later. */
	wl_list_remove(&f->frame.link);
	wl_list_remove(&f->destroy.link);
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	struct gf *f = wl_container_of(listener, f, new_output);
	f->output = data;
	f->out = wl_container_of(f->output, f->out, base);
	f->crtc = f->out->crtc;
	f->present.notify = handle_present;
	wl_signal_add(&f->output->events.present, &f->present);
	f->frame.notify = handle_frame;
	wl_signal_add(&f->output->events.frame, &f->frame);
	f->destroy.notify = handle_output_destroy;
	wl_signal_add(&f->output->events.destroy, &f->destroy);
}

/* A backend with one W x H @ 60 Hz output; with fake_clock its VDC reads
 * f->now and vblanks happen only in gf_advance_to. */
static bool gf_init(struct gf *f, uint32_t depth, bool mailbox, bool fake_clock)
{
	memset(f, 0, sizeof(*f));
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, MHZ_60 };
	cfg.outputs[0].n_modes = 1;
	cfg.flip_depth = depth;
	cfg.flip_mailbox = mailbox;
	f->backend = test_backend_create(&f->display, &f->loop, &cfg, NULL);
	if (!f->backend) {
		return false;
	}
	f->wla = wla_backend_from_wlr(f->backend);
	/* Dark until the test's own enable, from which its vblanks count (the
	 * VDC's outputs come lit otherwise, as headless ones: test-backend,
	 * test-glue). */
	wla_vdc_from_device(f->wla->devices[0])->start_dark = true;
	if (fake_clock) {
		f->now = T0;
		wla_vdc_from_device(f->wla->devices[0])->now = gf_clock;
		wla_vdc_from_device(f->wla->devices[0])->now_data = f;
	}
	f->new_output.notify = handle_new_output;
	wl_signal_add(&f->backend->events.new_output, &f->new_output);
	return wlr_backend_start(f->backend) && f->output;
}

static void gf_finish(struct gf *f)
{
	if (f->output && !f->destroyed) {
		wl_list_remove(&f->present.link);
		wl_list_remove(&f->frame.link);
		wl_list_remove(&f->destroy.link);
	}
	wl_list_remove(&f->new_output.link);
	wl_display_destroy(f->display);
}

static void gf_advance_to(struct gf *f, uint64_t t)
{
	f->now = t;
	wla_vdc_advance(wla_vdc_from_device(f->wla->devices[0]), t);
	wl_event_loop_dispatch_idle(f->loop);
}

static uint64_t epoch(struct gf *f)
{
	return wla_vdc_output_from_crtc(f->out->crtc)->epoch_ns;
}

/* Vblank k since the output was enabled. */
static uint64_t vblank_ns(struct gf *f, uint64_t k)
{
	return vblank_grid_ns(epoch(f), MHZ_60, k);
}

static void gf_vblank(struct gf *f, uint64_t k)
{
	gf_advance_to(f, vblank_ns(f, k));
}

/* Time goes on from now in quarter periods while cond holds, eight periods
 * at most: the test then checks what cond waited for. */
#define GF_ADVANCE_WHILE(f, cond) \
	for (uint64_t t_ = (f)->now, end_ = t_ + 8 * P60; (cond) && t_ < end_; \
			t_ += P60 / 4) \
		gf_advance_to((f), t_)

static bool enable_output(struct gf *f, struct wlr_buffer *buffer)
{
	wlr_output_set_mode(f->output, wlr_output_preferred_mode(f->output));
	wlr_output_enable(f->output, true);
	wlr_output_attach_buffer(f->output, buffer);
	bool ok = wlr_output_commit(f->output);
	wl_event_loop_dispatch_idle(f->loop);
	return ok;
}

/* The same from a test; the idle frame event (if the queue has room) runs
 * before this returns. Never from an idle callback: wayland's idle dispatch
 * is not reentrant. */
static bool commit_buffer(struct gf *f, struct wlr_buffer *buffer)
{
	bool ok = commit_only(f, buffer);
	wl_event_loop_dispatch_idle(f->loop);
	return ok;
}

/* Enable with bufs[0] and present three frames, at vblanks 1 to 3 of the
 * new timing. */
static bool enable_and_present_three(struct gf *f, struct wlr_buffer *bufs[2])
{
	int presented = f->presented;
	if (!enable_output(f, bufs[0])) {
		return false;
	}
	for (uint64_t k = 1; k <= 3; k++) {
		gf_vblank(f, k);
		if (k < 3 && !commit_buffer(f, bufs[k % 2])) {
			return false;
		}
	}
	return f->presented == presented + 3;
}

/* A buffer commit straight to the backend, past wlroots' frame_pending
 * guard, as a compositor ignoring frame events would make it. */
static bool commit_buffer_raw(struct gf *f, struct wlr_buffer *buffer)
{
	f->output->pending.committed |= WLR_OUTPUT_STATE_BUFFER;
	f->output->pending.buffer = wlr_buffer_lock(buffer);
	bool ok = f->output->impl->commit(f->output);
	wlr_buffer_unlock(f->output->pending.buffer);
	f->output->pending.committed = 0;
	f->output->pending.buffer = NULL;
	return ok;
}

static uint32_t screen_pixel(struct gf *f, uint32_t x, uint32_t y)
{
	struct wla_image *image = wla_vdc_compose(wla_vdc_output_from_crtc(f->out->crtc));
	uint32_t px = image ? wla_image_pixel(image, x, y) : 0xdeadbeef;
	wla_image_destroy(image);
	return px;
}

static size_t live_states(struct gf *f)
{
	return wla_vdc_from_device(f->wla->devices[0])->dev.live_states;
}

static void frame_events_come_while_the_queue_has_room(void)
{
	struct gf f;
	CHECK(gf_init(&f, 3, false, true));
	struct wlr_buffer *bufs[5];
	buffers_create(bufs, NULL, 5, 0xff100000);
	uint32_t seq0 = f.output->commit_seq + 1; /* wlroots: the count after the commit */
	CHECK(enable_output(&f, bufs[0]));
	CHECK_INT(f.frames, 1); /* one frame queued, room for two more */
	gf_vblank(&f, 1);
	CHECK_INT(f.presented, 1);
	CHECK_INT(f.events[0].commit_seq, seq0);
	CHECK_INT(f.frames, 1); /* frame_pending was already clear */

	f.n_events = 0;
	uint32_t seq1 = f.output->commit_seq + 1; /* wlroots: the count after the commit */
	CHECK(commit_buffer(&f, bufs[1]));
	CHECK_INT(f.frames, 2);
	CHECK(commit_buffer(&f, bufs[2]));
	CHECK_INT(f.frames, 3);
	CHECK(commit_buffer(&f, bufs[3]));
	CHECK_INT(f.frames, 3); /* full: the frame event waits for a latch */
	CHECK(f.output->frame_pending);
	CHECK(!commit_buffer(&f, bufs[4])); /* wlroots itself refuses it */
	CHECK_INT(wla_backend_buffer_locks(f.backend), 4);

	gf_vblank(&f, 2);
	CHECK_INT(f.n_events, 1);
	CHECK_INT(f.events[0].commit_seq, seq1);
	CHECK_INT(f.events[0].seq, 2);
	CHECK_INT(f.events[0].when_ns, vblank_ns(&f, 2));
	CHECK_INT(f.events[0].refresh, (int)P60);
	CHECK_INT(f.frames, 4); /* the latch made room */
	CHECK_INT(wla_backend_buffer_locks(f.backend), 3);
	CHECK(commit_buffer(&f, bufs[4]));
	CHECK_INT(f.frames, 4);
	for (uint64_t k = 3; k <= 6; k++) {
		gf_vblank(&f, k);
	}
	/* Every frame presented once, in commit order, at consecutive vblanks. */
	CHECK_INT(f.n_events, 4);
	for (size_t i = 0; i < f.n_events; i++) {
		CHECK_INT(f.events[i].commit_seq, seq1 + i);
		CHECK(f.events[i].presented);
		CHECK_INT(f.events[i].seq, 2 + i);
	}
	CHECK_PIXEL(screen_pixel(&f, 0, 0), 0xff500000);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 1);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	CHECK_INT(live_states(&f), 0);
	for (int i = 0; i < 5; i++) {
		wlr_buffer_drop(bufs[i]);
	}
	gf_finish(&f);
}

struct cap {
	bool done;
	uint64_t seq;
	uint32_t pixel;
};

static void handle_capture(struct wla_capture *capture, const struct wla_image *image,
	uint64_t seq, void *data)
{
	struct cap *c = data;
	c->done = true;
	c->seq = seq;
	c->pixel = image ? wla_image_pixel(image, 3, 3) : 0;
}

static void a_client_dropping_queued_buffers_changes_nothing_until_each_is_replaced(void)
{
	struct gf f;
	CHECK(gf_init(&f, 3, false, true));
	bool a_gone, b_gone, c_gone;
	struct wlr_buffer *a = buffer_create(0xffaa0000, &a_gone);
	struct wlr_buffer *b = buffer_create(0xff00bb00, &b_gone);
	struct wlr_buffer *c = buffer_create(0xff0000cc, &c_gone);
	CHECK(enable_output(&f, a));
	gf_vblank(&f, 1);
	CHECK(commit_buffer(&f, b));
	CHECK(commit_buffer(&f, c));
	CHECK_INT(a->n_locks, 1);
	CHECK_INT(b->n_locks, 1);
	CHECK_INT(c->n_locks, 1);
	/* The client destroys all three: one on screen, two queued. */
	wlr_buffer_drop(a);
	wlr_buffer_drop(b);
	wlr_buffer_drop(c);
	CHECK(!a_gone && !b_gone && !c_gone);
	CHECK_PIXEL(screen_pixel(&f, 3, 3), 0xffaa0000);

	struct cap cap = { 0 };
	CHECK(wla_output_capture(f.output, handle_capture, &cap) != NULL);
	gf_vblank(&f, 2);
	CHECK(cap.done);
	CHECK_INT(cap.seq, 2);
	CHECK_PIXEL(cap.pixel, 0xff00bb00);
	CHECK(a_gone); /* freed exactly when b replaced it on screen */
	CHECK(!b_gone && !c_gone);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 2);

	cap = (struct cap){ 0 };
	CHECK(wla_output_capture(f.output, handle_capture, &cap) != NULL);
	gf_vblank(&f, 3);
	CHECK(cap.done);
	CHECK_PIXEL(cap.pixel, 0xff0000cc);
	CHECK(b_gone);
	CHECK(!c_gone);
	gf_vblank(&f, 4);
	CHECK(!c_gone); /* on screen for as long as nothing replaces it */
	CHECK_PIXEL(screen_pixel(&f, 3, 3), 0xff0000cc);
	CHECK_INT(f.presented, 3);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK(c_gone);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	CHECK_INT(live_states(&f), 0);
	gf_finish(&f);
}

static void disabling_an_output_with_a_full_queue_reports_every_frame_not_presented(void)
{
	struct gf f;
	CHECK(gf_init(&f, 3, false, true));
	bool gone[4];
	struct wlr_buffer *bufs[4];
	buffers_create(bufs, gone, 4, 0xff111111);
	CHECK(enable_output(&f, bufs[0]));
	gf_vblank(&f, 1);
	f.n_events = 0;
	uint32_t seq1 = f.output->commit_seq + 1; /* wlroots: the count after the commit */
	for (int i = 1; i < 4; i++) {
		CHECK(commit_buffer(&f, bufs[i]));
	}
	CHECK_INT(f.crtc->pending_frames, 3);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 4);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK_INT(f.n_events, 3);
	for (size_t i = 0; i < f.n_events; i++) {
		CHECK_INT(f.events[i].commit_seq, seq1 + i);
		CHECK(!f.events[i].presented);
	}
	CHECK_INT(f.presented, 1);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	CHECK_INT(live_states(&f), 0);
	for (int i = 0; i < 4; i++) {
		CHECK_INT(bufs[i]->n_locks, 0);
		wlr_buffer_drop(bufs[i]);
		CHECK(gone[i]);
	}
	struct wla_frame_deadline dl;
	CHECK(!wla_output_get_frame_deadline(f.output, &dl));
	gf_finish(&f);
}

/*
 * A mode change comes while the queue is full (wlr-randr while a client
 * animates: wlroots renders the new mode's first buffer itself, past its
 * frame_pending guard). As a kernel modeset waits for the pending flips, it
 * is not refused: it waits behind the queued frame, which is presented
 * first, in the old mode; then the new mode's frame.
 */
static void a_mode_change_with_a_full_queue_latches_after_the_queued_frame(void)
{
	struct gf f;
	CHECK(gf_init(&f, 1, false, true));
	struct wlr_buffer *small[2] = { buffer_create(0xff111111, NULL),
		buffer_create(0xff222222, NULL) };
	struct wlr_buffer *big = &test_buffer_create(2 * W, 2 * H, DRM_FORMAT_XRGB8888,
		0xff333333, NULL)->base;
	CHECK(enable_output(&f, small[0]));
	gf_vblank(&f, 1);
	f.n_events = 0;
	uint32_t seq_small = f.output->commit_seq + 1;
	CHECK(commit_buffer(&f, small[1]));
	CHECK_INT(f.crtc->pending_frames, 1);
	CHECK(f.output->frame_pending);
	uint64_t v1 = vblank_ns(&f, 1), v2 = vblank_ns(&f, 2); /* the old mode's grid */
	/* What wlr_output_commit does after its basic test: the mode and the
	 * buffer wlroots rendered for it, in one commit. */
	wlr_output_set_custom_mode(f.output, 2 * W, 2 * H, MHZ_60);
	f.output->pending.committed |= WLR_OUTPUT_STATE_BUFFER;
	f.output->pending.buffer = wlr_buffer_lock(big);
	bool ok = f.output->impl->commit(f.output);
	wlr_buffer_unlock(f.output->pending.buffer);
	f.output->pending.committed = 0;
	f.output->pending.buffer = NULL;
	CHECK(ok);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 3);
	/* One modeset past the depth, not more: a second one while it waits
	 * is refused like any frame (found by review: 15 passed). */
	struct wlr_buffer *other = &test_buffer_create(W, H, DRM_FORMAT_XRGB8888,
		0xff444444, NULL)->base;
	wlr_output_set_custom_mode(f.output, W, H, MHZ_60 / 2);
	f.output->pending.committed |= WLR_OUTPUT_STATE_BUFFER;
	f.output->pending.buffer = wlr_buffer_lock(other);
	ok = f.output->impl->commit(f.output);
	wlr_buffer_unlock(f.output->pending.buffer);
	f.output->pending.committed = 0;
	f.output->pending.buffer = NULL;
	CHECK(!ok);
	CHECK_INT(f.crtc->pending_frames, 2);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 3);
	wlr_buffer_drop(other);
	for (uint64_t t = v1; f.n_events < 2 && t < v1 + 8 * P60; t += P60 / 4) {
		gf_advance_to(&f, t);
	}
	CHECK_INT(f.n_events, 2);
	CHECK_INT(f.events[0].commit_seq, seq_small);
	CHECK(f.events[0].presented);
	CHECK_INT(f.events[0].seq, 2);
	CHECK_INT(f.events[0].when_ns, v2);
	CHECK(f.events[1].presented);
	CHECK(f.events[1].when_ns > f.events[0].when_ns);
	CHECK_INT(f.output->width, 2 * W);
	struct wla_image *image = wla_vdc_compose(wla_vdc_output_from_crtc(f.out->crtc));
	CHECK(image && image->width == 2 * W && image->height == 2 * H);
	if (image) {
		CHECK_PIXEL(wla_image_pixel(image, 2 * W - 1, 2 * H - 1), 0xff333333);
	}
	wla_image_destroy(image);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 1);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	CHECK_INT(live_states(&f), 0);
	wlr_buffer_drop(small[0]);
	wlr_buffer_drop(small[1]);
	wlr_buffer_drop(big);
	gf_finish(&f);
}

static void destroying_the_display_with_a_full_queue_releases_every_buffer(void)
{
	struct gf f;
	CHECK(gf_init(&f, 3, false, true));
	bool gone[4];
	struct wlr_buffer *bufs[4];
	buffers_create(bufs, gone, 4, 0xff222222);
	CHECK(enable_output(&f, bufs[0]));
	gf_vblank(&f, 1);
	for (int i = 1; i < 4; i++) {
		CHECK(commit_buffer(&f, bufs[i]));
	}
	CHECK_INT(f.crtc->pending_frames, 3);
	for (int i = 0; i < 4; i++) {
		wlr_buffer_drop(bufs[i]);
		CHECK(!gone[i]);
	}
	int presented = f.presented;
	harness_log_clear();
	wl_list_remove(&f.new_output.link);
	wl_display_destroy(f.display);
	CHECK(f.destroyed);
	for (int i = 0; i < 4; i++) {
		CHECK(gone[i]);
	}
	/* The output's destroy signal went first: nothing reported after it. */
	CHECK_INT(f.events_after_destroy, 0);
	CHECK_INT(f.presented, presented);
	CHECK(!LOGGED("buffer locks still held"));
}

static void the_frame_deadline_is_the_latch_after_the_queued_frames(void)
{
	struct gf f;
	CHECK(gf_init(&f, 3, false, true));
	struct wlr_buffer *bufs[4];
	for (int i = 0; i < 4; i++) {
		bufs[i] = buffer_create(0xff333333, NULL);
	}
	struct wla_frame_deadline dl;
	CHECK(!wla_output_get_frame_deadline(f.output, &dl)); /* off */
	CHECK(enable_output(&f, bufs[0]));
	CHECK_INT(epoch(&f), T0);
	CHECK(wla_output_get_frame_deadline(f.output, &dl));
	/* The enabling frame takes vblank 1: the next one is for vblank 2. */
	CHECK_INT(ts_ns(&dl.latch), vblank_ns(&f, 2));
	CHECK_INT(dl.queued, 1);
	gf_advance_to(&f, vblank_ns(&f, 1) + P60 / 3);
	for (uint32_t q = 0; q < 3; q++) {
		CHECK(wla_output_get_frame_deadline(f.output, &dl));
		CHECK_INT(ts_ns(&dl.latch), vblank_ns(&f, 2 + q));
		CHECK_INT(ts_ns(&dl.commit_by), ts_ns(&dl.latch) - WLA_VDC_COMMIT_SLACK_NS);
		CHECK_INT(dl.refresh_ns, P60);
		CHECK_INT(dl.queued, q);
		CHECK_INT(dl.queue_depth, 3);
		CHECK(commit_buffer(&f, bufs[1 + q]));
	}
	/* Right after a latch, from the present handler: one slot free again. */
	f.n_events = 0;
	gf_vblank(&f, 2);
	CHECK_INT(f.n_events, 1);
	CHECK(f.events[0].have_deadline);
	CHECK_INT(f.events[0].deadline.queued, 2);
	CHECK_INT(ts_ns(&f.events[0].deadline.latch), vblank_ns(&f, 5));
	/* A late wake-up: the two queued frames latched at vblanks 3 and 4 (each
	 * at its own), and the next frame makes the first vblank after now. The
	 * handlers run once the queue is drained, and see it so. */
	gf_advance_to(&f, vblank_ns(&f, 7) + 5);
	CHECK_INT(f.n_events, 3);
	for (size_t i = 1; i < 3 && i < f.n_events; i++) {
		CHECK(f.events[i].presented);
		CHECK_INT(f.events[i].commit_seq, f.events[0].commit_seq + i);
		CHECK_INT(f.events[i].seq, 2 + i);
		CHECK_INT(f.events[i].when_ns, vblank_ns(&f, 2 + i));
		CHECK(f.events[i].have_deadline);
		CHECK_INT(f.events[i].deadline.queued, 0);
		CHECK_INT(ts_ns(&f.events[i].deadline.latch), vblank_ns(&f, 8));
	}
	CHECK(wla_output_get_frame_deadline(f.output, &dl));
	CHECK_INT(dl.queued, 0);
	CHECK_INT(ts_ns(&dl.latch), vblank_ns(&f, 8));
	/* Frames committed in time for their vblanks: a stall misses nothing. */
	struct wla_output_stats st;
	CHECK(wla_output_get_stats(f.output, &st));
	CHECK_INT(st.vblanks, 7);
	CHECK_INT(st.missed_vblanks, 0);
	CHECK_INT(st.last_seq, 7);

	/* Not ours: no deadline. */
	struct wlr_backend *headless = wlr_headless_backend_create(f.display);
	CHECK(headless != NULL);
	if (headless) {
		struct wlr_output *other = wlr_headless_add_output(headless, W, H);
		CHECK(!wla_output_get_frame_deadline(other, &dl));
		struct wla_output_stats stats;
		CHECK(!wla_output_get_stats(other, &stats));
		wlr_backend_destroy(headless);
	}
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	for (int i = 0; i < 4; i++) {
		wlr_buffer_drop(bufs[i]);
	}
	gf_finish(&f);
}

static void in_mailbox_mode_frame_events_come_while_fewer_than_depth_frames_wait(void)
{
	struct gf f;
	CHECK(gf_init(&f, 1, true, true));
	bool gone[5];
	struct wlr_buffer *bufs[5];
	for (int i = 0; i < 5; i++) {
		bufs[i] = buffer_create(0xff000000 | 0x11 * (uint32_t)(i + 1), &gone[i]);
	}
	uint32_t seq0 = f.output->commit_seq + 1; /* wlroots: the count after the commit */
	/* The enabling frame goes to the driver at once; the depth counts only
	 * frames not handed over yet, so the next frame may be drawn now. */
	CHECK(enable_output(&f, bufs[0]));
	CHECK_INT(f.crtc->armed, 1);
	CHECK_INT(f.crtc->waiting_frames, 0);
	CHECK_INT(f.frames, 1);
	CHECK(commit_buffer(&f, bufs[1]));
	CHECK_INT(f.crtc->waiting_frames, 1);
	CHECK_INT(f.frames, 1); /* one waiting at depth 1: no frame event */
	CHECK(f.output->frame_pending);
	/* The latch hands b over: room again, the frame event comes from the
	 * present handler. */
	gf_vblank(&f, 1);
	CHECK_INT(f.n_events, 1);
	CHECK_INT(f.events[0].commit_seq, seq0);
	CHECK_INT(f.events[0].seq, 1);
	CHECK_INT(f.frames, 2);
	CHECK_INT(f.crtc->waiting_frames, 0);
	CHECK(commit_buffer(&f, bufs[2]));
	CHECK_INT(f.frames, 2);
	gf_vblank(&f, 2);
	CHECK_INT(f.n_events, 2);
	CHECK_INT(f.events[1].commit_seq, seq0 + 1);
	CHECK_INT(f.events[1].seq, 2);
	CHECK_INT(f.events[1].when_ns, vblank_ns(&f, 2));
	CHECK_INT(f.frames, 3);
	CHECK(!gone[0]);
	/* A compositor committing past the frame guard: the first buffer waits,
	 * the next replaces it (reported not presented, released at once);
	 * neither brings a frame event. */
	CHECK(commit_buffer_raw(&f, bufs[3]));
	CHECK_INT(f.n_events, 2);
	CHECK_INT(f.crtc->waiting_frames, 1);
	CHECK(commit_buffer_raw(&f, bufs[4]));
	wl_event_loop_dispatch_idle(f.loop);
	CHECK_INT(f.n_events, 3);
	CHECK(!f.events[2].presented);
	CHECK_INT(bufs[3]->n_locks, 0);
	CHECK_INT(f.crtc->waiting_frames, 1);
	CHECK_INT(f.crtc->pending_frames, 2);
	CHECK_INT(f.frames, 3);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 3); /* b on screen, c armed, e */
	gf_vblank(&f, 3);
	CHECK_INT(f.n_events, 4);
	CHECK(f.events[3].presented);
	CHECK_INT(f.events[3].seq, 3);
	CHECK_PIXEL(screen_pixel(&f, 0, 0), 0xff000033);
	gf_vblank(&f, 4);
	CHECK_INT(f.n_events, 5);
	CHECK(f.events[4].presented);
	CHECK_INT(f.events[4].seq, 4);
	CHECK_INT(f.events[4].when_ns, vblank_ns(&f, 4));
	CHECK_PIXEL(screen_pixel(&f, 0, 0), 0xff000055);
	struct wla_output_stats st;
	CHECK(wla_output_get_stats(f.output, &st));
	CHECK_INT(st.frames_presented, 4);
	CHECK_INT(st.frames_discarded, 1);
	CHECK_INT(st.refused, 0);
	CHECK_INT(st.missed_vblanks, 0);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 1);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	CHECK_INT(live_states(&f), 0);
	for (int i = 0; i < 5; i++) {
		wlr_buffer_drop(bufs[i]);
		CHECK(gone[i]);
	}
	gf_finish(&f);
}

/* Real vblanks until *counter reaches want, 2 s at most (scaled): about
 * 200 ms of them where the machine keeps up. */
static bool run_until(struct gf *f, const int *counter, int want)
{
	return HARNESS_WAIT_UNTIL(f->loop, *counter >= want, 2000);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void stats_after_real_vblanks_count_presents_discards_and_refusals(void)
{
	struct gf f;
	CHECK(gf_init(&f, 2, false, false));
	f.bufs[0] = buffer_create(0xff440000, NULL);
	f.bufs[1] = buffer_create(0xff004400, NULL);
	f.auto_commit_limit = 14;
	/* seq - seq0: vblanks since enable */
	unsigned seq0 = (unsigned)wla_vdc_output_from_crtc(f.out->crtc)->seq;
	CHECK(enable_output(&f, f.bufs[0]));
	/* Frames as fast as frame events allow, for about a quarter second. */
	CHECK(run_until(&f, &f.presented, 12));
	int presented = f.presented;
	struct wla_output_stats st;
	CHECK(wla_output_get_stats(f.output, &st));
	CHECK_INT(st.frames_presented, presented);
	CHECK_INT(st.frames_committed, 1 + f.auto_commits);
	CHECK_INT(st.frames_discarded, 0);
	CHECK_INT(st.refused, 0);
	/* The enabling frame's present starts no interval: it came at the
	 * vblank the output came on at. */
	CHECK_INT(st.intervals, presented - 2);
	CHECK(st.vblanks >= (uint64_t)presented);
	CHECK(st.missed_vblanks < st.vblanks);
	CHECK(st.last_seq >= f.events[f.n_events - 1].seq);

	/* The distribution is that of the intervals the events reported
	 * after the enabling frame's. */
	uint64_t iv[MAX_GEVENTS];
	size_t n = 0;
	for (size_t i = 1; i < f.n_events; i++) {
		CHECK(f.events[i].presented);
		if (i >= 2) {
			iv[n++] = f.events[i].when_ns - f.events[i - 1].when_ns;
		}
		/* Latch times are on the vblank grid, at the vblank of their seq. */
		CHECK(f.events[i].seq > f.events[i - 1].seq);
		CHECK_INT(f.events[i].when_ns, vblank_ns(&f, f.events[i].seq - seq0));
		CHECK_INT(f.events[i - 1].when_ns, vblank_ns(&f, f.events[i - 1].seq - seq0));
		CHECK(f.events[i].commit_seq == f.events[i - 1].commit_seq + 1);
	}
	qsort(iv, n, sizeof(iv[0]), compare_u64);
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += (double)iv[i];
	}
	if (n > 0) {
		CHECK_INT(st.interval_min_ns, iv[0]);
		CHECK_INT(st.interval_p50_ns, iv[(n - 1) / 2]);
		CHECK_INT(st.interval_p99_ns, iv[(n - 1) * 99 / 100]);
		CHECK_INT(st.interval_max_ns, iv[n - 1]);
		CHECK(st.interval_mean_ns == sum / (double)n);
		/* At least one vblank apart: the grid's shortest step. */
		CHECK(st.interval_min_ns >= VBLANK_GRID_NS_MHZ / MHZ_60);
	}

	/* Now synchronously, between two dispatches: with the queue full a
	 * commit past the frame guard is refused as queue full... */
	f.auto_commit_limit = f.auto_commits;
	while (f.crtc->pending_frames < 2) {
		CHECK(commit_buffer_raw(&f, f.bufs[0]));
	}
	harness_log_clear();
	CHECK(!commit_buffer_raw(&f, f.bufs[1]));
	CHECK_LOGGED("crtc-0", "flip queue full", "2 of 2");
	/* ...and with the mailbox policy (the depth counts the frames not yet
	 * handed to the driver: one here) the first waits, then each replaces
	 * the newest. */
	f.crtc->mailbox = true;
	int not_presented = f.not_presented;
	for (int i = 0; i < 3; i++) {
		CHECK(commit_buffer_raw(&f, f.bufs[i % 2]));
	}
	CHECK_INT(f.not_presented, not_presented + 2);
	CHECK_INT(f.crtc->pending_frames, 3);
	CHECK_INT(f.crtc->waiting_frames, 2);
	CHECK(wla_output_get_stats(f.output, &st));
	CHECK_INT(st.refused, 1);
	CHECK_INT(st.refused_queue_full, 1);
	CHECK_INT(st.frames_discarded, 2);

	/* The deadline read at each present was the latch after the queue. */
	size_t checked = 0;
	for (size_t i = 0; i < f.n_events; i++) {
		const struct gev *g = &f.events[i];
		if (!g->presented || !g->have_deadline) {
			continue;
		}
		CHECK_INT(g->deadline.queued, g->pending_frames);
		CHECK_INT(ts_ns(&g->deadline.latch),
			vblank_ns(&f, g->seq - seq0 + 1 + g->pending_frames));
		CHECK_INT(ts_ns(&g->deadline.commit_by),
			ts_ns(&g->deadline.latch) - WLA_VDC_COMMIT_SLACK_NS);
		checked++;
	}
	CHECK(checked >= 12);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	CHECK_INT(live_states(&f), 0);
	wlr_buffer_drop(f.bufs[0]);
	wlr_buffer_drop(f.bufs[1]);
	gf_finish(&f);
}

/* Present intervals are those of a running timing: the frame that lit the
 * output up or changed its mode came at the vblank it came on at, and the
 * time the output was off is no frame's interval. */
static void intervals_start_afresh_after_an_enable_or_a_mode_change(void)
{
	struct gf f;
	CHECK(gf_init(&f, 1, false, true));
	struct wlr_buffer *bufs[2] = { buffer_create(0xff111111, NULL),
		buffer_create(0xff222222, NULL) };
	CHECK(enable_and_present_three(&f, bufs));
	struct wla_output_stats st;
	CHECK(wla_output_get_stats(f.output, &st));
	/* Frames at vblanks 1 (the enable), 2 and 3: one interval, 2 to 3. */
	CHECK_INT(st.intervals, 1);
	CHECK_INT(st.interval_max_ns, vblank_ns(&f, 3) - vblank_ns(&f, 2));

	/* Off for a hundred periods, then on again: still one period at most. */
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	gf_advance_to(&f, f.now + 100 * P60);
	CHECK(enable_and_present_three(&f, bufs));
	CHECK(wla_output_get_stats(f.output, &st));
	CHECK_INT(st.intervals, 2);
	CHECK(st.interval_max_ns <= P60 + 1);

	/* A mode change (30 Hz): its frame starts the intervals again. */
	wlr_output_set_custom_mode(f.output, W, H, MHZ_60 / 2);
	wlr_output_attach_buffer(f.output, bufs[0]);
	CHECK(wlr_output_commit(f.output));
	wl_event_loop_dispatch_idle(f.loop);
	for (int want = 7; want <= 9; want++) {
		GF_ADVANCE_WHILE(&f, f.presented < want);
		CHECK_INT(f.presented, want);
		if (want < 9) {
			CHECK(commit_buffer(&f, bufs[want % 2]));
		}
	}
	CHECK(wla_output_get_stats(f.output, &st));
	CHECK_INT(st.intervals, 3);
	size_t e = f.n_events;
	CHECK(e >= 2 && f.events[e - 1].refresh > 30000000 && f.events[e - 1].refresh < 40000000);
	CHECK_INT(st.interval_max_ns, f.events[e - 1].when_ns - f.events[e - 2].when_ns);

	/* Back to 60 Hz without a buffer (the frame on screen covers the
	 * mode): that commit has no present of its own, and the first frame
	 * after it restarts the intervals. */
	wlr_output_set_custom_mode(f.output, W, H, MHZ_60);
	CHECK(wlr_output_commit(f.output));
	wl_event_loop_dispatch_idle(f.loop);
	GF_ADVANCE_WHILE(&f, f.crtc->queued > 0);
	CHECK_INT(f.crtc->queued, 0);
	for (int want = 10; want <= 12; want++) {
		CHECK(commit_buffer(&f, bufs[want % 2]));
		GF_ADVANCE_WHILE(&f, f.presented < want);
		CHECK_INT(f.presented, want);
	}
	CHECK(wla_output_get_stats(f.output, &st));
	/* Frames 10 (the restart), 11 and 12: one more interval, of 60 Hz. */
	CHECK_INT(st.intervals, 4);
	e = f.n_events;
	CHECK(f.events[e - 1].refresh < 20000000);
	CHECK(f.events[e - 1].when_ns - f.events[e - 2].when_ns <= P60 + 1);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	wlr_buffer_drop(bufs[0]);
	wlr_buffer_drop(bufs[1]);
	gf_finish(&f);
}

static void a_real_run_at_depth_3_presents_every_frame_once_in_order(void)
{
	struct gf f;
	CHECK(gf_init(&f, 3, false, false));
	f.bufs[0] = buffer_create(0xff550000, NULL);
	f.bufs[1] = buffer_create(0xff005500, NULL);
	f.auto_commit_limit = 12;
	uint32_t seq0 = f.output->commit_seq + 1; /* wlroots: the count after the commit */
	/* seq - vblank0: vblanks since enable */
	unsigned vblank0 = (unsigned)wla_vdc_output_from_crtc(f.out->crtc)->seq;
	CHECK(enable_output(&f, f.bufs[0]));
	/* Render-ahead: the queue fills up before the first vblank. */
	CHECK_INT(f.crtc->pending_frames, 3);
	CHECK(run_until(&f, &f.presented, 13));
	CHECK_INT(f.presented, 13);
	CHECK_INT(f.not_presented, 0);
	for (size_t i = 0; i < f.n_events; i++) {
		CHECK_INT(f.events[i].commit_seq, seq0 + i);
		if (i > 0) {
			CHECK(f.events[i].seq > f.events[i - 1].seq);
			CHECK_INT(f.events[i].when_ns, vblank_ns(&f, f.events[i].seq - vblank0));
		}
	}
	CHECK_INT(wla_backend_buffer_locks(f.backend), 1);
	CHECK_INT(live_states(&f), 0);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	wlr_buffer_drop(f.bufs[0]);
	wlr_buffer_drop(f.bufs[1]);
	gf_finish(&f);
}

int main(void)
{
	harness_init();
	unsetenv("WLA_OUTPUTS");
	unsetenv("WLA_CONFIG");
	RUN_TEST(frame_events_come_while_the_queue_has_room);
	RUN_TEST(a_client_dropping_queued_buffers_changes_nothing_until_each_is_replaced);
	RUN_TEST(disabling_an_output_with_a_full_queue_reports_every_frame_not_presented);
	RUN_TEST(a_mode_change_with_a_full_queue_latches_after_the_queued_frame);
	RUN_TEST(destroying_the_display_with_a_full_queue_releases_every_buffer);
	RUN_TEST(the_frame_deadline_is_the_latch_after_the_queued_frames);
	RUN_TEST(in_mailbox_mode_frame_events_come_while_fewer_than_depth_frames_wait);
	RUN_TEST(stats_after_real_vblanks_count_presents_discards_and_refusals);
	RUN_TEST(intervals_start_afresh_after_an_enable_or_a_mode_change);
	RUN_TEST(a_real_run_at_depth_3_presents_every_frame_once_in_order);
	HARNESS_EXIT();
}
