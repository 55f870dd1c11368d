/*
 * The virtual display controller driver.
 *
 * commit_tail writes a state into the output's shadow registers (plane state
 * pointers and the mode): O(planes), no pixels copied. Each vblank that
 * starts at least latch_slack_ns after that state was committed latches it
 * (shadow becomes scanout) and tells the core, which hands over the next
 * queued state. A late timer wake-up replays every vblank that passed, one
 * latch per vblank, each with its own sequence number and time. Pixels are
 * only read when a capture asks for them.
 */
#include <assert.h>
#include <drm_fourcc.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <wlr/util/log.h>
#include "backend/hold.h"
#include "backend/vdc.h"
#include "render/compose.h"
#include "render/format.h"
#include "util.h"

/* What prepare_fb learnt of an fb: the CPU can read it, with this stride. */
struct vdc_import {
	uint32_t stride;
};

static const uint32_t scanout_formats[] = {
	DRM_FORMAT_XRGB8888,
	DRM_FORMAT_ARGB8888,
	DRM_FORMAT_XBGR8888,
	DRM_FORMAT_ABGR8888,
	DRM_FORMAT_RGB565,
};

static const uint32_t cursor_formats[] = {
	DRM_FORMAT_ARGB8888,
	DRM_FORMAT_ABGR8888,
};

/* Buffers the CPU reads: linear, or with the modifier left implicit (shm). */
static const uint64_t vdc_modifiers[] = {
	DRM_FORMAT_MOD_INVALID,
	DRM_FORMAT_MOD_LINEAR,
};

/* The VDC reads the fbs themselves (the core keeps ZERO_COPY only where a
 * client's buffer is on the primary plane). */
static const uint32_t vblank_flags = WLA_PRESENT_VSYNC | WLA_PRESENT_HW_CLOCK |
	WLA_PRESENT_HW_COMPLETION | WLA_PRESENT_ZERO_COPY;

uint64_t wla_clock_monotonic_ns(void *data)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return wla_timespec_to_ns(&ts);
}

struct wla_vdc *wla_vdc_from_device(struct wla_device *dev)
{
	struct wla_vdc *vdc = wl_container_of(dev, vdc, dev);
	return vdc;
}

struct wla_vdc_output *wla_vdc_output_from_crtc(struct wla_crtc *crtc)
{
	return crtc->driver_data;
}

static uint64_t vdc_now(struct wla_vdc *vdc)
{
	return vdc->now(vdc->now_data);
}

/*
 * The grid: vblank k of the current timing is at epoch + round(k * num /
 * den) with num / den the period of the timing's rate (1e12 / refresh_mhz),
 * rounded to the nanosecond once, never k times a rounded period.
 */
static uint64_t vblank_time(const struct wla_vdc_output *out, uint64_t k)
{
	return wla_vblank_grid_ns(&out->grid, k);
}

/* The last vblank at or before now (now >= epoch). */
static uint64_t vblank_index_at(const struct wla_vdc_output *out, uint64_t now)
{
	return wla_vblank_grid_index(&out->grid, now);
}

/* The period of a rate, rounded once. */
static uint64_t period_of(int32_t refresh_mhz)
{
	const struct wla_vblank_grid g = { .origin_ns = 0, .refresh_mhz = refresh_mhz };
	return wla_vblank_grid_ns(&g, 1);
}

/* A new timing from epoch (a vblank): the mode's, or with vrr the lowest
 * rate of the output's range. */
static void set_timing(struct wla_vdc_output *out, const struct wla_mode *mode, bool vrr,
	uint64_t epoch)
{
	out->mode = *mode;
	/* A range whose lowest rate is not below the mode's leaves nothing
	 * to vary: the mode's fixed grid. */
	out->vrr = vrr && out->vrr_min_mhz > 0 && out->vrr_min_mhz < mode->refresh_mhz;
	/* The rate the timing gives, to the mHz (wla_mode_cvt_exact makes the
	 * timing give the configured rate exactly that far). */
	out->grid = (struct wla_vblank_grid){ .origin_ns = epoch,
		.refresh_mhz = out->vrr ? out->vrr_min_mhz : mode->refresh_mhz };
	out->period_ns = period_of(mode->refresh_mhz);
	out->vrr_short_ns = period_of(out->vrr_max_mhz && out->vrr_max_mhz < mode->refresh_mhz ?
		out->vrr_max_mhz : mode->refresh_mhz);
	out->counters.refresh_ns = out->period_ns;
	out->epoch_ns = epoch;
	out->last_vblank_ns = epoch;
	out->next_index = 1;
	out->last_latch_index = 0;
}

/* Adaptive sync: the armed state latches as soon as it may, the shortest
 * period after the last vblank, if that comes before the grid's next
 * vblank (the panel's repeat at its lowest rate). */
static void vrr_rebase(struct wla_vdc_output *out)
{
	if (!out->vrr || !out->armed) {
		return;
	}
	uint64_t at = out->last_vblank_ns + out->vrr_short_ns;
	uint64_t ready = out->armed_ns + out->vdc->dev.latch_slack_ns;
	if (ready > at) {
		at = ready;
	}
	if (at >= vblank_time(out, out->next_index)) {
		return;
	}
	out->grid.origin_ns = at;
	out->epoch_ns = at;
	out->next_index = 0;
	out->last_latch_index = 0;
}

/* The timer runs while something needs a vblank: the kernel's vblank
 * reference, with an off delay. */
static bool needs_vblanks(const struct wla_vdc_output *out)
{
	return out->running && (out->armed || !wl_list_empty(&out->captures) ||
		out->next_index <= out->last_latch_index + WLA_VDC_OFF_DELAY);
}

static void update_timer(struct wla_vdc_output *out)
{
	if (out->timer_fd < 0) {
		return;
	}
	struct itimerspec its = { 0 };
	bool on = needs_vblanks(out);
	if (on) {
		uint64_t t = vblank_time(out, out->next_index);
		its.it_value = wla_timespec_from_ns(t);
	} else if (!out->timer_armed) {
		return;
	}
	if (timerfd_settime(out->timer_fd, on ? TFD_TIMER_ABSTIME : 0, &its, NULL) != 0) {
		wlr_log_errno(WLR_ERROR, "%s: timerfd_settime", out->crtc.name);
		return;
	}
	out->timer_armed = on;
}

static void output_free_memory(void *data);

/* A capture, and the image taken at the vblank it was due when that vblank
 * was counted where no callback may run (a sync, a write over the armed
 * state): served at the next point that may. */
struct vdc_capture {
	struct wla_capture base;
	/* Its output went off after it was asked (and may be on again, on a
	 * new timing, in the same commit): it fails, as it would have. */
	bool orphaned;
	bool taken;
	struct wla_image *image; /* NULL: taken, but not composable */
	uint64_t seq;
};

static void capture_free(struct wla_capture *cap)
{
	struct vdc_capture *vc = wl_container_of(cap, vc, base);
	wla_image_destroy(vc->image);
	free(vc);
}

/* The end of a section that ran callbacks: false if one unplugged the
 * output (include/backend/hold.h): touch nothing of it. */
static bool output_release(struct wla_vdc_output *out)
{
	return wla_release(&out->hold, output_free_memory, out);
}

/* Fail the output's captures (only the orphaned ones: those asked before
 * it went off, when it is on again). false if a callback unplugged the
 * output, which is gone now. */
static bool fail_captures(struct wla_vdc_output *out, bool orphaned_only)
{
	/* A callback may ask again: it is refused while the output is off,
	 * and a new one is not orphaned, so this ends. It may unplug the
	 * output too. */
	wla_hold(&out->hold);
	for (;;) {
		struct wla_capture *cap = NULL, *c;
		wl_list_for_each(c, &out->captures, link) {
			struct vdc_capture *v = wl_container_of(c, v, base);
			if (!orphaned_only || v->orphaned) {
				cap = c;
				break;
			}
		}
		if (!cap) {
			break;
		}
		struct vdc_capture *vc = wl_container_of(cap, vc, base);
		wl_list_remove(&cap->link);
		/* One taken before the output went off has its frame. */
		cap->func(cap, vc->taken ? vc->image : NULL, vc->taken ? vc->seq : out->seq,
			cap->data);
		capture_free(cap);
	}
	return output_release(out);
}

/* The planes a capture composes, each opened only while composited. */
struct compose_planes {
	const struct wla_plane_state *planes[WLA_VDC_PLANES];
};

static bool compose_begin(void *data, size_t i, const void **pixels, uint32_t *stride)
{
	struct compose_planes *cp = data;
	const struct wla_plane_state *ps = cp->planes[i];
	struct wla_fb *fb = ps->fb;
	if (!fb->funcs->begin_access || !fb->funcs->begin_access(fb, pixels, stride)) {
		wlr_log(WLR_ERROR, "plane %s: fb pixels are not readable for capture",
			ps->plane->name);
		return false;
	}
	return true;
}

static void compose_end(void *data, size_t i)
{
	struct compose_planes *cp = data;
	struct wla_fb *fb = cp->planes[i]->fb;
	if (fb->funcs->end_access) {
		fb->funcs->end_access(fb);
	}
}

/* The CRTC's gamma LUT over what its planes composed, as the display
 * engine applies it between the blender and the connector. */
static void apply_gamma(struct wla_image *image, const struct wla_gamma_lut *lut)
{
	uint8_t r[256], g[256], b[256];
	for (unsigned v = 0; v < 256; v++) {
		r[v] = wla_gamma_apply(lut->r, lut->size, (uint8_t)v);
		g[v] = wla_gamma_apply(lut->g, lut->size, (uint8_t)v);
		b[v] = wla_gamma_apply(lut->b, lut->size, (uint8_t)v);
	}
	for (uint32_t y = 0; y < image->height; y++) {
		uint32_t *row = (uint32_t *)((uint8_t *)image->data + (size_t)y * image->stride);
		for (uint32_t x = 0; x < image->width; x++) {
			uint32_t p = row[x];
			row[x] = (p & 0xff000000u) | (uint32_t)r[(p >> 16) & 0xff] << 16 |
				(uint32_t)g[(p >> 8) & 0xff] << 8 | b[p & 0xff];
		}
	}
}

/*
 * What the scanout shows, plane by plane. One plane's pixels are open at a
 * time: two windows of two clients on two planes are two wl_shm pools, and
 * libwayland aborts a thread that opens a second pool before closing the
 * first.
 */
struct wla_image *wla_vdc_compose(struct wla_vdc_output *out)
{
	const struct wla_mode *mode = &out->scanout.mode;
	struct wla_compose_layer layers[WLA_VDC_PLANES];
	struct compose_planes cp = { 0 };
	size_t n = 0;
	for (size_t i = 0; i < out->n_planes; i++) {
		const struct wla_plane_state *ps = out->scanout.planes[i];
		if (!ps || !ps->visible) {
			continue;
		}
		const struct wla_fb *fb = ps->fb;
		cp.planes[n] = ps;
		layers[n++] = (struct wla_compose_layer){
			.width = fb->width,
			.height = fb->height,
			.format = fb->format,
			.src_x = (uint32_t)ps->src.x,
			.src_y = (uint32_t)ps->src.y,
			.src_w = (uint32_t)ps->src.w,
			.src_h = (uint32_t)ps->src.h,
			.dst_x = ps->dst.x,
			.dst_y = ps->dst.y,
			.dst_w = (uint32_t)ps->dst.w,
			.dst_h = (uint32_t)ps->dst.h,
		};
	}
	/* wla_compose writes every pixel. */
	struct wla_image *image = wla_image_create_uninit((uint32_t)mode->width,
		(uint32_t)mode->height);
	const struct wla_compose_access access = {
		.begin = compose_begin,
		.end = compose_end,
		.data = &cp,
	};
	if (image && !wla_compose_each(image, layers, n, &access)) {
		wla_image_destroy(image);
		image = NULL;
	}
	if (image && out->scanout.gamma) {
		apply_gamma(image, out->scanout.gamma);
	}
	if (image && out->link_bad) {
		/* Nothing reaches the monitor. */
		for (uint32_t y = 0; y < image->height; y++) {
			uint32_t *row = (uint32_t *)((uint8_t *)image->data + (size_t)y * image->stride);
			for (uint32_t x = 0; x < image->width; x++) {
				row[x] = 0xff000000u;
			}
		}
	}
	return image;
}

/*
 * The captures asked for before the vblank at t get what it put on screen
 * (the scanout set, seq its number); later ones wait for a later vblank, as
 * do those asked for from a callback. With call false (no callback may run
 * here) their images are taken now and served at the next call (a wake-up,
 * vdc_deliver); with call true those taken earlier go first.
 */
static void serve_captures(struct wla_vdc_output *out, uint64_t t, bool call)
{
	struct wl_list taken, due;
	wl_list_init(&taken);
	wl_list_init(&due);
	struct wla_capture *cap, *tmp;
	wl_list_for_each_safe(cap, tmp, &out->captures, link) {
		struct vdc_capture *vc = wl_container_of(cap, vc, base);
		if (vc->orphaned) {
			continue;
		}
		if (vc->taken) {
			if (call) {
				wl_list_remove(&cap->link);
				wl_list_insert(taken.prev, &cap->link);
			}
		} else if (cap->asked_ns < t) {
			if (call) {
				wl_list_remove(&cap->link);
				wl_list_insert(due.prev, &cap->link);
			} else {
				vc->taken = true;
				vc->image = wla_vdc_compose(out);
				vc->seq = out->seq;
			}
		}
	}
	if (!call) {
		return;
	}
	while (!wl_list_empty(&taken)) {
		cap = wl_container_of(taken.next, cap, link);
		struct vdc_capture *vc = wl_container_of(cap, vc, base);
		wl_list_remove(&cap->link);
		cap->func(cap, vc->image, vc->seq, cap->data);
		capture_free(cap);
	}
	if (wl_list_empty(&due)) {
		return;
	}
	struct wla_image *image = wla_vdc_compose(out);
	uint64_t seq = out->seq;
	while (!wl_list_empty(&due)) {
		cap = wl_container_of(due.next, cap, link);
		wl_list_remove(&cap->link);
		cap->func(cap, image, seq, cap->data);
		capture_free(cap);
	}
	wla_image_destroy(image);
}

/*
 * Every vblank from next_index up to now, in order. With nothing armed the
 * vblanks that passed only count; with a state armed each vblank is looked
 * at: it latches the state if the state was committed early enough for it,
 * and the core may hand over the next one from in there. Events are
 * delivered once the output's books are straight.
 */
static void output_process(struct wla_vdc_output *out, uint64_t now, bool serve)
{
	wla_hold(&out->hold);
	while (out->running && vblank_time(out, out->next_index) <= now) {
		uint64_t k = out->next_index;
		if (!out->armed) {
			/* Skip to the last vblank that passed: O(1) after any idle. */
			k = vblank_index_at(out, now);
		}
		uint64_t t = vblank_time(out, k);
		uint64_t passed = k - out->next_index + 1;
		out->last_vblank_ns = t;
		out->seq += passed;
		out->counters.vblanks += passed;
		out->counters.seq = out->seq;
		out->next_index = k + 1;
		if (!out->armed) {
			break;
		}
		if (out->armed_ns + out->vdc->dev.latch_slack_ns > t) {
			/* Committed too late for this vblank (or after it): what
			 * is on screen stays (a frame's miss is the core's count);
			 * captures due are served with it. */
			if (out->running) {
				serve_captures(out, t, serve);
			}
			continue;
		}
		out->armed = false;
		out->scanout = out->shadow;
		if (out->scanout.modeset && out->link_bad) {
			out->link_bad = false;
			wlr_log(WLR_INFO, "%s: link trained again by a modeset", out->connector.name);
		}
		out->shadow.modeset = false;
		out->last_latch_index = k;
		if (!wla_mode_equal(&out->scanout.mode, &out->mode) ||
				out->scanout.vrr != out->vrr) {
			/* A mode change or adaptive sync latched: the new timing
			 * starts here. */
			set_timing(out, &out->scanout.mode, out->scanout.vrr, t);
			out->last_latch_index = 0;
		}
		struct timespec when = wla_timespec_from_ns(t);
		wla_crtc_handle_latch(&out->crtc, out->seq, &when, out->period_ns,
			vblank_flags);
		/* After the core's books: a capture callback may commit. The
		 * scanout set is this latch's, whatever was armed since. */
		if (out->running) {
			serve_captures(out, t, serve);
		}
	}
	/* The last vblank that passed (the idle skip counts several at once,
	 * with nothing changing on screen). */
	if (out->running) {
		serve_captures(out, out->last_vblank_ns, serve);
	}
	update_timer(out);
	output_release(out);
}

void wla_vdc_advance(struct wla_vdc *vdc, uint64_t now_ns)
{
	wla_device_hold(&vdc->dev);
	for (size_t i = 0; i < vdc->n_outputs; i++) {
		if (vdc->outputs[i]) {
			output_process(vdc->outputs[i], now_ns, true);
		}
	}
	wla_device_deliver_events(&vdc->dev);
	wla_device_release(&vdc->dev);
}

static int handle_timer(int fd, uint32_t mask, void *data)
{
	struct wla_vdc_output *out = data;
	uint64_t expirations;
	if (read(fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) {
		wlr_log_errno(WLR_ERROR, "%s: reading the vblank timer", out->crtc.name);
	}
	out->wakeups++;
	/* Its callbacks may destroy the backend, and the VDC with it: that
	 * waits for the release. */
	struct wla_vdc *vdc = out->vdc;
	wla_device_hold(&vdc->dev);
	output_process(out, vdc_now(vdc), true);
	wla_device_deliver_events(&vdc->dev);
	wla_device_release(&vdc->dev);
	return 0;
}

/* Bring the counters up to now before the timer starts again, so that the
 * sequence number of the next vblank is right. */
static void catch_up(struct wla_vdc_output *out)
{
	if (out->running && !out->armed && !out->timer_armed && !wla_held(&out->hold) &&
			wl_list_empty(&out->captures)) {
		output_process(out, vdc_now(out->vdc), true);
	}
}

/* The vblank the armed state latches at, whether the timer has seen it or
 * not (a late wake-up latches it there all the same). */
static uint64_t armed_latch_time(const struct wla_vdc_output *out)
{
	return vblank_time(out, wla_vblank_grid_first_from(&out->grid, out->next_index,
		out->armed_ns + out->vdc->dev.latch_slack_ns));
}

/*
 * Before a write over the armed state: the vblanks that passed since the
 * last wake-up, which did not latch it (it is early enough only for a
 * later one), are counted now, since the write changes the time they are
 * judged by (the armed states are no frames: only those are written
 * over). Nothing latches, no event.
 */
static void count_passed_vblanks(struct wla_vdc_output *out, uint64_t now)
{
	if (vblank_time(out, out->next_index) > now) {
		return;
	}
	uint64_t last = vblank_index_at(out, now);
	uint64_t passed = last - out->next_index + 1;
	out->seq += passed;
	out->counters.vblanks += passed;
	out->counters.seq = out->seq;
	out->next_index = last + 1;
	out->last_vblank_ns = vblank_time(out, last);
	/* The write changes what the next latch shows: captures due at these
	 * vblanks take what is on screen now. */
	serve_captures(out, out->last_vblank_ns, false);
}

static void pass_unlatched_vblanks(struct wla_vdc_output *out, uint64_t now)
{
	if (vblank_time(out, out->next_index) <= now) {
		assert(armed_latch_time(out) > vblank_time(out, vblank_index_at(out, now)));
		count_passed_vblanks(out, now);
	}
}

static void output_enable(struct wla_vdc_output *out, const struct wla_mode *mode,
	uint64_t now)
{
	set_timing(out, mode, false, now);
	out->running = true;
	memset(&out->scanout, 0, sizeof(out->scanout));
	memset(&out->shadow, 0, sizeof(out->shadow));
	out->scanout.mode = out->shadow.mode = *mode;
	char desc[128];
	wlr_log(WLR_DEBUG, "%s: enabled %s, period %" PRIu64 " ns", out->crtc.name,
		wla_mode_describe(mode, desc, sizeof(desc)), out->period_ns);
}

static void output_disable(struct wla_vdc_output *out)
{
	struct wla_capture *cap;
	wl_list_for_each(cap, &out->captures, link) {
		struct vdc_capture *vc = wl_container_of(cap, vc, base);
		vc->orphaned = !vc->taken;
	}
	out->running = false;
	out->armed = false;
	memset(&out->scanout, 0, sizeof(out->scanout));
	memset(&out->shadow, 0, sizeof(out->shadow));
	update_timer(out);
	/* Its captures fail in vdc_deliver, once the core has cancelled the
	 * queue: a callback may commit. */
	wlr_log(WLR_DEBUG, "%s: disabled", out->crtc.name);
}

/* The output's planes as this state leaves them, over the shadow registers
 * (registers a state does not write keep their values). */
static void write_shadow(struct wla_vdc_output *out, struct wla_atomic_state *state,
	const struct wla_crtc_state *cs)
{
	wla_for_each_plane_in_state(state, pe) {
		struct wla_plane *plane = pe->ptr;
		const struct wla_plane_state *ps = pe->new_state;
		if (plane->driver_data != out) {
			continue;
		}
		out->shadow.planes[plane->zpos] = ps->crtc == &out->crtc && ps->visible ? ps : NULL;
	}
	out->shadow.mode = cs->mode;
	out->shadow.gamma = cs->gamma;
	out->shadow.vrr = cs->vrr_enabled;
	/* Until the latch: a state written over it does not undo it. */
	out->shadow.modeset |= cs->mode_changed || cs->active_changed || cs->connectors_changed;
}

static int vdc_commit_tail(struct wla_device *dev, struct wla_atomic_state *state)
{
	struct wla_vdc *vdc = wla_vdc_from_device(dev);
	if (vdc->fail_commit_tail) {
		bool disables_only = true;
		wla_for_each_crtc_in_state(state, e) {
			disables_only &= !e->program || !e->new_state->active;
		}
		/* Turning off cannot fail: that is how the core recovers. */
		if (!disables_only) {
			int err = vdc->fail_commit_tail;
			vdc->fail_commit_tail = 0;
			wlr_log(WLR_ERROR, "vdc: commit_tail refused (fault injection): %s",
				strerror(err));
			return -err;
		}
	}
	uint64_t now = vdc_now(vdc);
	wla_for_each_crtc_in_state(state, e) {
		if (!e->program) {
			continue;
		}
		struct wla_vdc_output *out = wla_vdc_output_from_crtc(e->ptr);
		const struct wla_crtc_state *cs = e->new_state;
		if (!cs->active) {
			if (out->running) {
				output_disable(out);
			}
			continue;
		}
		if (!out->running) {
			output_enable(out, &cs->mode, now);
		} else {
			catch_up(out);
		}
		if (out->armed) {
			/* Over an armed state (rearm), which the core allows only
			 * while the result still makes that state's vblank. */
			pass_unlatched_vblanks(out, now);
		} else if (out->vrr) {
			/* The timer may not have run for the panel's last repeat:
			 * the latch is timed from it (vrr_rebase). */
			count_passed_vblanks(out, now);
		}
		write_shadow(out, state, cs);
		out->armed_ns = out->armed && out->armed_ns > state->commit_ns ?
			out->armed_ns : state->commit_ns;
		out->armed = true;
		vrr_rebase(out);
		update_timer(out);
	}
	return 0;
}

/* The VDC scans out what the CPU can read. */
static int vdc_prepare_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct wla_vdc *vdc = wla_vdc_from_device(dev);
	if (vdc->fail_prepare_fb) {
		int err = vdc->fail_prepare_fb;
		vdc->fail_prepare_fb = 0;
		wlr_log(WLR_ERROR, "vdc: fb %p: import refused (fault injection): %s", (void *)fb,
			strerror(err));
		return -err;
	}
	const struct wla_format_info *info = wla_format_get(fb->format);
	const void *data;
	uint32_t stride;
	if (!info || !fb->funcs->begin_access || !fb->funcs->begin_access(fb, &data, &stride)) {
		wlr_log(WLR_ERROR, "vdc: fb %p (%" PRIu32 "x%" PRIu32 "): the CPU cannot read its "
			"pixels", (void *)fb, fb->width, fb->height);
		return -EINVAL;
	}
	if (fb->funcs->end_access) {
		fb->funcs->end_access(fb);
	}
	if ((uint64_t)stride < (uint64_t)fb->width * info->bytes_per_pixel) {
		wlr_log(WLR_ERROR, "vdc: fb %p: stride %" PRIu32 " shorter than its width %" PRIu32
			" x %" PRIu32 " bytes", (void *)fb, stride, fb->width, info->bytes_per_pixel);
		return -EINVAL;
	}
	struct vdc_import *import = calloc(1, sizeof(*import));
	if (!import) {
		wlr_log(WLR_ERROR, "vdc: fb %p: out of memory for its import", (void *)fb);
		return -ENOMEM;
	}
	import->stride = stride;
	fb->import = import;
	return 0;
}

static void vdc_cleanup_fb(struct wla_device *dev, struct wla_fb *fb)
{
	free(fb->import);
	fb->import = NULL;
}

/* The latches that happened and the timer has not seen yet, before the
 * core acts on a queue: the vblanks that passed are replayed (captures
 * wait for the next wake-up; their callbacks may do anything). */
static void handle_deliver_idle(void *data)
{
	struct wla_vdc *vdc = data;
	vdc->deliver_idle = NULL;
	wla_device_hold(&vdc->dev);
	wla_device_deliver_events(&vdc->dev);
	wla_device_release(&vdc->dev);
}

static void vdc_sync(struct wla_device *dev)
{
	bool synced = false;
	struct wla_vdc *vdc = wla_vdc_from_device(dev);
	uint64_t now = vdc_now(vdc);
	for (size_t i = 0; i < vdc->n_outputs; i++) {
		struct wla_vdc_output *out = vdc->outputs[i];
		if (out && out->running && out->armed && !wla_held(&out->hold) &&
				vblank_time(out, out->next_index) <= now) {
			output_process(out, now, false);
			synced = true;
		}
	}
	/* The core delivers what this reported after the commit that asked;
	 * a commit refused after it does not, and a CRTC turned off has no
	 * wake-up: deliver from the event loop then (nothing if the core
	 * did). */
	if (synced && vdc->loop && !vdc->deliver_idle) {
		vdc->deliver_idle = wl_event_loop_add_idle(vdc->loop, handle_deliver_idle, vdc);
	}
}

static void vdc_deliver(struct wla_device *dev)
{
	struct wla_vdc *vdc = wla_vdc_from_device(dev);
	for (size_t i = 0; i < vdc->n_outputs; i++) {
		struct wla_vdc_output *out = vdc->outputs[i];
		if (out && !out->running) {
			fail_captures(out, false);
		} else if (out && !wla_held(&out->hold)) {
			if (!fail_captures(out, true)) {
				continue;
			}
			/* Captures taken where no callback could run. */
			wla_hold(&out->hold);
			serve_captures(out, 0, true);
			output_release(out);
		}
	}
}

static uint64_t vdc_device_now(struct wla_device *dev)
{
	return vdc_now(wla_vdc_from_device(dev));
}

/* The first vblank at or after t not yet processed: where a state handed
 * over now latches if t is its commit time plus the latch minimum. */
static bool vdc_vblank_at(struct wla_device *dev, struct wla_crtc *crtc, uint64_t t,
	uint64_t *seq, uint64_t *vblank_ns)
{
	struct wla_vdc_output *out = wla_vdc_output_from_crtc(crtc);
	if (!out->running) {
		return false;
	}
	uint64_t k = wla_vblank_grid_first_from(&out->grid, out->next_index, t);
	*seq = out->seq + (k - out->next_index + 1);
	*vblank_ns = vblank_time(out, k);
	if (out->vrr && !(out->armed && k == out->next_index)) {
		/* With adaptive sync a state handed over by t latches at t, once
		 * the shortest period since the vblank before has passed, unless
		 * the grid's repeat comes first (an armed state's vblank is
		 * fixed). */
		uint64_t last = k == out->next_index ? out->last_vblank_ns : vblank_time(out, k - 1);
		uint64_t at = last + out->vrr_short_ns > t ? last + out->vrr_short_ns : t;
		if (at < *vblank_ns) {
			*vblank_ns = at;
		}
	}
	return true;
}

static bool vdc_vblank_counters(struct wla_device *dev, struct wla_crtc *crtc,
	struct wla_vblank_counters *counters)
{
	struct wla_vdc_output *out = wla_vdc_output_from_crtc(crtc);
	catch_up(out);
	*counters = out->counters;
	/* Its latches are reported as the vblanks are processed. */
	counters->settled_seq = counters->seq;
	return true;
}

struct wla_capture *wla_vdc_capture(struct wla_vdc_output *out, wla_capture_func_t func,
	void *data)
{
	if (out->vdc->destroying || !out->running) {
		wlr_log(WLR_ERROR, "%s: capture refused: the output is %s", out->crtc.name,
			out->vdc->destroying ? "being destroyed" : "off");
		return NULL;
	}
	struct vdc_capture *vc = calloc(1, sizeof(*vc));
	if (!vc) {
		wlr_log(WLR_ERROR, "%s: out of memory for a capture", out->crtc.name);
		return NULL;
	}
	struct wla_capture *cap = &vc->base;
	catch_up(out);
	cap->asked_ns = vdc_now(out->vdc);
	cap->dev = &out->vdc->dev;
	cap->driver_data = out;
	cap->func = func;
	cap->data = data;
	wl_list_insert(out->captures.prev, &cap->link);
	update_timer(out);
	return cap;
}

void wla_vdc_capture_cancel(struct wla_capture *cap)
{
	if (!cap) {
		return;
	}
	wl_list_remove(&cap->link);
	capture_free(cap);
}

static struct wla_capture *vdc_capture(struct wla_device *dev, struct wla_crtc *crtc,
	wla_capture_func_t func, void *data)
{
	return wla_vdc_capture(wla_vdc_output_from_crtc(crtc), func, data);
}

static void vdc_capture_cancel(struct wla_device *dev, struct wla_capture *capture)
{
	wla_vdc_capture_cancel(capture);
}

static void vdc_destroy_device(struct wla_device *dev)
{
	wla_vdc_destroy(wla_vdc_from_device(dev));
}

/* The listener told of the connector may destroy the backend: the VDC
 * waits for the release. */
static int vdc_plug_connector(struct wla_device *dev, const char *name,
	const struct wla_config_mode *modes, size_t n_modes)
{
	wla_device_hold(dev);
	int ret = wla_vdc_plug(wla_vdc_from_device(dev), name, modes, n_modes) ? 0 : -EINVAL;
	wla_device_release(dev);
	return ret;
}

static int vdc_unplug_connector(struct wla_device *dev, const char *name)
{
	struct wla_vdc_output *out = wla_vdc_find(wla_vdc_from_device(dev), name);
	if (!out) {
		return -ENOENT;
	}
	wla_device_hold(dev);
	wla_vdc_unplug(out);
	wla_device_release(dev);
	return 0;
}

static int vdc_link_bad(struct wla_device *dev, const char *name)
{
	struct wla_vdc_output *out = wla_vdc_find(wla_vdc_from_device(dev), name);
	if (!out) {
		return -ENOENT;
	}
	out->link_bad = true;
	wlr_log(WLR_INFO, "%s: link-status BAD (injected): black until a modeset", name);
	wla_device_hold(dev);
	if (dev->listener.connector_link_bad) {
		dev->listener.connector_link_bad(dev, &out->connector, dev->listener.data);
	}
	wla_device_release(dev);
	return 0;
}

static const struct wla_hotplug_funcs vdc_hotplug_funcs = {
	.plug = vdc_plug_connector,
	.unplug = vdc_unplug_connector,
	.link_bad = vdc_link_bad,
};

static const struct wla_capture_funcs vdc_capture_funcs = {
	.capture = vdc_capture,
	.cancel = vdc_capture_cancel,
};

static const struct wla_driver_funcs vdc_funcs = {
	.prepare_fb = vdc_prepare_fb,
	.cleanup_fb = vdc_cleanup_fb,
	.commit_tail = vdc_commit_tail,
	.sync = vdc_sync,
	.deliver = vdc_deliver,
	.now = vdc_device_now,
	.vblank_at = vdc_vblank_at,
	.vblank_counters = vdc_vblank_counters,
	.destroy = vdc_destroy_device,
};

bool wla_device_is_vdc(const struct wla_device *dev)
{
	return dev->funcs == &vdc_funcs;
}

/* The VDC takes any mode a config could name: it is virtual, but its
 * vblank arithmetic and capture buffers have bounds. */
static int crtc_atomic_check(struct wla_crtc *crtc, struct wla_atomic_state *state)
{
	const struct wla_crtc_state *cs = wla_atomic_new_crtc_state(state, crtc);
	if (!cs || !cs->enable) {
		return 0;
	}
	const struct wla_mode *m = &cs->mode;
	if (m->width > WLA_MODE_MAX_SIZE || m->height > WLA_MODE_MAX_SIZE ||
			m->refresh_mhz > WLA_MODE_MAX_REFRESH_MHZ ||
			m->refresh_mhz < WLA_MODE_MIN_REFRESH_MHZ) {
		wlr_log(WLR_ERROR, "%s: mode %" PRId32 "x%" PRId32 "@%" PRId32 "mHz is beyond "
			"the virtual display controller's %dx%d at %d..%d mHz", crtc->name,
			m->width, m->height, m->refresh_mhz, WLA_MODE_MAX_SIZE, WLA_MODE_MAX_SIZE,
			WLA_MODE_MIN_REFRESH_MHZ, WLA_MODE_MAX_REFRESH_MHZ);
		return -EINVAL;
	}
	return 0;
}

static const struct wla_crtc_funcs crtc_funcs = {
	.atomic_check = crtc_atomic_check,
};

/* Only the fault injection of tests: the VDC has no limits the core does
 * not know. */
static int plane_atomic_check(struct wla_plane *plane, struct wla_atomic_state *state,
	const struct wla_plane_state *new_state)
{
	struct wla_vdc *vdc = wla_vdc_from_device(plane->dev);
	if ((vdc->refuse_planes & (1u << plane->index)) && new_state->visible) {
		wlr_log(state->quiet ? WLR_DEBUG : WLR_ERROR, "vdc: plane %s refused (fault "
			"injection)", plane->name);
		return -EINVAL;
	}
	return 0;
}

static const struct wla_plane_funcs plane_funcs = {
	.atomic_check = plane_atomic_check,
};

static bool init_plane(struct wla_vdc_output *out, struct wla_plane *plane,
	enum wla_plane_type type, const uint32_t *formats, size_t n_formats)
{
	plane->type = type;
	plane->funcs = &plane_funcs;
	plane->possible_crtcs = 1u << out->crtc.index;
	plane->zpos = (unsigned)out->n_planes;
	plane->min_scale = plane->max_scale = WLA_FIXED_ONE;
	plane->driver_data = out;
	/* In the output's list first: output_free frees what was added. */
	out->zorder[out->n_planes++] = plane;
	for (size_t i = 0; i < n_formats; i++) {
		if (!wla_plane_add_format(plane, formats[i], vdc_modifiers,
				WLA_ARRAY_SIZE(vdc_modifiers))) {
			return false;
		}
	}
	return true;
}

static void free_plane_formats(struct wla_plane *plane)
{
	for (size_t i = 0; i < plane->n_formats; i++) {
		free(plane->formats[i].modifiers);
	}
	free(plane->formats);
	plane->formats = NULL;
	plane->n_formats = 0;
}

/* Off the device and the VDC: nothing finds it any more. */
static void output_detach(struct wla_vdc_output *out)
{
	struct wla_device *dev = &out->vdc->dev;
	for (size_t i = 0; i < out->n_planes; i++) {
		struct wla_plane *plane = out->zorder[i];
		if (plane->dev) {
			wla_device_remove_plane(dev, plane);
		}
	}
	if (out->connector.dev) {
		wla_device_remove_connector(dev, &out->connector);
	}
	if (out->crtc.dev) {
		wla_device_remove_crtc(dev, &out->crtc);
	}
	if (out->timer) {
		wl_event_source_remove(out->timer);
		out->timer = NULL;
	}
	if (out->timer_fd >= 0) {
		close(out->timer_fd);
		out->timer_fd = -1;
	}
	for (size_t i = 0; i < out->vdc->n_outputs; i++) {
		if (out->vdc->outputs[i] == out) {
			out->vdc->outputs[i] = NULL;
		}
	}
}

static void output_free_memory(void *data)
{
	struct wla_vdc_output *out = data;
	for (size_t i = 0; i < out->n_planes; i++) {
		free_plane_formats(out->zorder[i]);
	}
	free(out->connector.modes);
	free(out);
}

static void output_free(struct wla_vdc_output *out)
{
	output_detach(out);
	output_free_memory(out);
}

static bool modes_from_config(struct wla_connector *conn, const struct wla_config_mode *modes,
	size_t n_modes)
{
	struct wla_mode *list = calloc(n_modes ? n_modes : 1, sizeof(*list));
	if (!list) {
		wlr_log(WLR_ERROR, "connector %s: out of memory for %zu modes", conn->name, n_modes);
		return false;
	}
	for (size_t m = 0; m < n_modes; m++) {
		if (!wla_mode_cvt_exact(&list[m], modes[m].width, modes[m].height, modes[m].refresh_mhz)) {
			wlr_log(WLR_ERROR, "connector %s: no CVT timing for mode %" PRId32 "x%"
				PRId32 "@%" PRId32 "mHz", conn->name, modes[m].width,
				modes[m].height, modes[m].refresh_mhz);
			free(list);
			return false;
		}
		list[m].preferred = m == 0;
	}
	bool ok = wla_connector_set_modes(conn, list, n_modes);
	free(list);
	return ok;
}

static struct wla_vdc_output *add_output(struct wla_vdc *vdc, const char *name,
	const struct wla_config_mode *modes, size_t n_modes)
{
	struct wla_device *dev = &vdc->dev;
	size_t slot = 0;
	while (slot < vdc->n_outputs && vdc->outputs[slot]) {
		slot++;
	}
	if (slot == WLA_MAX_CRTCS) {
		wlr_log(WLR_ERROR, "vdc: no room for output %s (at most %d)", name, WLA_MAX_CRTCS);
		return NULL;
	}
	struct wla_vdc_output *out = calloc(1, sizeof(*out));
	if (!out) {
		wlr_log(WLR_ERROR, "vdc: out of memory for output %s", name);
		return NULL;
	}
	out->vdc = vdc;
	out->timer_fd = -1;
	wl_list_init(&out->captures);
	vdc->outputs[slot] = out;
	if (slot == vdc->n_outputs) {
		vdc->n_outputs++;
	}

	out->crtc.funcs = &crtc_funcs;
	out->crtc.max_slots = 1;
	out->crtc.rearm = true;
	/* A LUT as most display engines have, unless configured otherwise. */
	out->crtc.gamma_size = WLA_CONFIG_GAMMA_SIZE_DEFAULT;
	out->crtc.driver_data = out;
	struct wla_connector *conn = &out->connector;
	snprintf(conn->name, sizeof(conn->name), "%s", name);
	conn->status = WLA_CONNECTOR_CONNECTED;
	conn->driver_data = out;
	if (!wla_device_add_crtc(dev, &out->crtc) || !modes_from_config(conn, modes, n_modes)) {
		goto fail;
	}
	conn->possible_crtcs = 1u << out->crtc.index;
	/* A monitor reports its size; a virtual one is a 96 DPI screen of its
	 * preferred mode (25.4 mm per 96 px, rounded to the mm). */
	if (n_modes > 0) {
		conn->phys_width_mm = ((uint32_t)modes[0].width * 254 + 480) / 960;
		conn->phys_height_mm = ((uint32_t)modes[0].height * 254 + 480) / 960;
	}
	/* The virtual monitor the configuration gives this name (at create,
	 * or plugged in again), as a monitor's EDID names it. */
	for (size_t i = 0; i < vdc->n_configured; i++) {
		const struct wla_config_output *co = &vdc->configured[i];
		if (strcmp(co->name, name) != 0) {
			continue;
		}
		if (co->make[0] || co->model[0] || co->serial[0]) {
			snprintf(conn->make, sizeof(conn->make), "%s", co->make[0] ? co->make :
				"wlatomic");
			snprintf(conn->model, sizeof(conn->model), "%s", co->model[0] ?
				co->model : "virtual");
			snprintf(conn->serial, sizeof(conn->serial), "%s", co->serial);
		}
		if (co->phys_width_mm) {
			conn->phys_width_mm = co->phys_width_mm;
			conn->phys_height_mm = co->phys_height_mm;
		}
		conn->non_desktop = co->non_desktop;
		if (co->gamma_size_set) {
			out->crtc.gamma_size = co->gamma_size;
		}
		out->vrr_min_mhz = co->vrr_min_mhz;
		out->vrr_max_mhz = co->vrr_max_mhz;
		conn->vrr_capable = co->vrr_min_mhz > 0;
		conn->orientation = (enum wla_panel_orientation)co->orientation;
		conn->vrr_min_mhz = co->vrr_min_mhz;
	}
	bool ok = init_plane(out, &out->primary, WLA_PLANE_PRIMARY, scanout_formats,
		WLA_ARRAY_SIZE(scanout_formats));
	/* Like most display engines' primary planes: full screen, unscaled. */
	out->primary.full_screen_only = true;
	out->n_overlays = vdc->overlay_planes;
	for (size_t o = 0; ok && o < out->n_overlays; o++) {
		struct wla_plane *plane = &out->overlays[o];
		ok = init_plane(out, plane, WLA_PLANE_OVERLAY, scanout_formats,
			WLA_ARRAY_SIZE(scanout_formats));
		plane->min_scale = WLA_FIXED_ONE / 8; /* up to 8x magnification */
		plane->max_scale = WLA_FIXED_ONE * 4; /* up to 4x reduction */
	}
	ok = ok && init_plane(out, &out->cursor, WLA_PLANE_CURSOR, cursor_formats,
		WLA_ARRAY_SIZE(cursor_formats));
	if (!ok) {
		wlr_log(WLR_ERROR, "vdc: out of memory for the planes of output %s", name);
		goto fail;
	}
	out->cursor.max_fb_width = out->cursor.max_fb_height = vdc->cursor_size;
	for (size_t i = 0; i < out->n_planes; i++) {
		if (!wla_device_add_plane(dev, out->zorder[i])) {
			goto fail;
		}
	}
	if (!wla_device_add_connector(dev, conn)) {
		goto fail;
	}
	out->crtc.primary = &out->primary;
	out->crtc.cursor = &out->cursor;

	if (vdc->loop) {
		out->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (out->timer_fd < 0) {
			wlr_log_errno(WLR_ERROR, "%s: timerfd_create", out->crtc.name);
			goto fail;
		}
		out->timer = wl_event_loop_add_fd(vdc->loop, out->timer_fd, WL_EVENT_READABLE,
			handle_timer, out);
		if (!out->timer) {
			wlr_log(WLR_ERROR, "%s: cannot add the vblank timer to the event loop",
				out->crtc.name);
			goto fail;
		}
	}
	return out;

fail:
	output_free(out);
	return NULL;
}

/* The panel the configuration gives connector name, or NULL. */
static const struct wla_config_panel *configured_panel(const struct wla_vdc *vdc,
	const char *name)
{
	for (size_t i = 0; i < vdc->n_configured; i++) {
		const struct wla_config_output *co = &vdc->configured[i];
		if (strcmp(co->name, name) == 0 && co->panel.chip[0]) {
			return &co->panel;
		}
	}
	return NULL;
}

/* Lit as a monitor the firmware turned on: the core's books say so
 * (wla_crtc_adopt), the timing runs from now. */
static void light(struct wla_vdc_output *out)
{
	struct wla_connector *conn = &out->connector;
	const struct wla_config_panel *panel = configured_panel(out->vdc, conn->name);
	if (panel) {
		wlr_log(WLR_DEBUG, "vdc: connector %s stays dark at start: its panel %s powers "
			"up in order when enabled", conn->name, panel->chip);
		return;
	}
	if (conn->non_desktop) {
		/* A head-mounted display: compositors leave it alone (a lease
		 * lights it), as on wlroots' DRM backend. */
		wlr_log(WLR_DEBUG, "vdc: connector %s stays dark at start: non-desktop",
			conn->name);
		return;
	}
	if (conn->status != WLA_CONNECTOR_CONNECTED || conn->n_modes == 0 ||
			out->crtc.state->active || conn->state->crtc) {
		return;
	}
	if (!wla_crtc_adopt(&out->crtc, &conn->modes[0], 1u << conn->index)) {
		return; /* logged */
	}
	output_enable(out, &out->crtc.state->mode, vdc_now(out->vdc));
	update_timer(out);
}

void wla_vdc_light_connectors(struct wla_vdc *vdc)
{
	if (vdc->start_dark) {
		return;
	}
	vdc->light_plugged = true;
	for (size_t i = 0; i < vdc->n_outputs; i++) {
		if (vdc->outputs[i]) {
			light(vdc->outputs[i]);
		}
	}
}

struct wla_vdc_output *wla_vdc_find(struct wla_vdc *vdc, const char *name)
{
	for (size_t i = 0; i < vdc->n_outputs; i++) {
		if (vdc->outputs[i] && strcmp(vdc->outputs[i]->connector.name, name) == 0) {
			return vdc->outputs[i];
		}
	}
	return NULL;
}

struct wla_vdc_output *wla_vdc_plug(struct wla_vdc *vdc, const char *name,
	const struct wla_config_mode *modes, size_t n_modes)
{
	if (!name[0] || strlen(name) >= sizeof(((struct wla_connector *)0)->name)) {
		wlr_log(WLR_ERROR, "vdc: connector name '%s' is empty or longer than %zu", name,
			sizeof(((struct wla_connector *)0)->name) - 1);
		return NULL;
	}
	if (wla_vdc_find(vdc, name)) {
		wlr_log(WLR_ERROR, "vdc: connector %s is already plugged in", name);
		return NULL;
	}
	if (n_modes == 0) {
		wlr_log(WLR_ERROR, "vdc: connector %s: plugged in without a mode", name);
		return NULL;
	}
	struct wla_vdc_output *out = add_output(vdc, name, modes, n_modes);
	if (!out) {
		return NULL;
	}
	wlr_log(WLR_INFO, "vdc: connector %s plugged in with %zu mode(s)", name, n_modes);
	if (vdc->light_plugged) {
		light(out);
	}
	struct wla_device_listener *l = &vdc->dev.listener;
	if (l->connector_added) {
		l->connector_added(&vdc->dev, &out->connector, l->data);
	}
	return out;
}

void wla_vdc_unplug(struct wla_vdc_output *out)
{
	struct wla_vdc *vdc = out->vdc;
	if (out->unplugging) {
		return; /* again, from one of the callbacks below */
	}
	out->unplugging = true;
	wlr_log(WLR_INFO, "vdc: connector %s unplugged", out->connector.name);
	out->connector.status = WLA_CONNECTOR_DISCONNECTED;
	wla_crtc_force_off(&out->crtc);
	struct wla_device_listener *l = &vdc->dev.listener;
	if (l->connector_removed) {
		l->connector_removed(&vdc->dev, &out->connector, l->data);
	}
	/* Whatever the listener did, the CRTC is off for good now. */
	out->crtc.present = NULL;
	out->crtc.idle = NULL;
	wla_crtc_force_off(&out->crtc);
	fail_captures(out, false);
	output_detach(out);
	/* From a callback of its own: freed when that returns. */
	if (wla_hold_doom(&out->hold)) {
		output_free_memory(out);
	}
}

struct wla_device *wla_vdc_device_create(struct wl_event_loop *loop,
	const struct wla_config *cfg)
{
	struct wla_vdc *vdc = wla_vdc_create(loop, cfg, NULL, NULL);
	return vdc ? &vdc->dev : NULL;
}

struct wla_vdc *wla_vdc_create(struct wl_event_loop *loop, const struct wla_config *cfg,
	uint64_t (*now)(void *data), void *now_data)
{
	if (cfg->n_outputs == 0 || cfg->n_outputs > WLA_MAX_CRTCS) {
		wlr_log(WLR_ERROR, "vdc: %zu outputs configured, supported 1..%d",
			cfg->n_outputs, WLA_MAX_CRTCS);
		return NULL;
	}
	size_t planes = cfg->n_outputs * (cfg->overlay_planes + 2);
	if (planes > WLA_MAX_PLANES || cfg->overlay_planes > WLA_MAX_OVERLAY_PLANES) {
		wlr_log(WLR_ERROR, "vdc: %zu outputs with %" PRIu32 " overlay planes need %zu "
			"planes, more than %d", cfg->n_outputs, cfg->overlay_planes, planes,
			WLA_MAX_PLANES);
		return NULL;
	}
	struct wla_vdc *vdc = calloc(1, sizeof(*vdc));
	if (!vdc) {
		wlr_log(WLR_ERROR, "vdc: out of memory");
		return NULL;
	}
	wla_device_init(&vdc->dev, &vdc_funcs, "vdc");
	vdc->dev.buffer_caps = WLA_BUFFER_CAP_DATA_PTR | WLA_BUFFER_CAP_SHM;
	/* Its timings are its own: any rate to the mHz. */
	vdc->dev.custom_timing = WLA_CUSTOM_CVT_EXACT;
	vdc->dev.capture_funcs = &vdc_capture_funcs;
	vdc->dev.hotplug_funcs = &vdc_hotplug_funcs;
	vdc->loop = loop;
	vdc->now = now ? now : wla_clock_monotonic_ns;
	vdc->now_data = now_data;
	vdc->cursor_size = cfg->cursor_size;
	vdc->overlay_planes = cfg->overlay_planes;
	vdc->dev.latch_slack_ns = (uint64_t)cfg->latch_slack_us * 1000;
	vdc->configured = calloc(cfg->n_outputs ? cfg->n_outputs : 1, sizeof(*vdc->configured));
	if (!vdc->configured) {
		wlr_log(WLR_ERROR, "vdc: out of memory for the configured outputs");
		wla_vdc_destroy(vdc);
		return NULL;
	}
	memcpy(vdc->configured, cfg->outputs, cfg->n_outputs * sizeof(*vdc->configured));
	vdc->n_configured = cfg->n_outputs;
	for (size_t i = 0; i < cfg->n_outputs; i++) {
		const struct wla_config_output *co = &cfg->outputs[i];
		struct wla_vdc_output *out = add_output(vdc, co->name, co->modes, co->n_modes);
		if (!out) {
			wlr_log(WLR_ERROR, "vdc: cannot create output %s", co->name);
			wla_vdc_destroy(vdc);
			return NULL;
		}

	}
	return vdc;
}

void wla_vdc_destroy(struct wla_vdc *vdc)
{
	if (!vdc) {
		return;
	}
	vdc->destroying = true;
	for (size_t i = 0; i < vdc->n_outputs; i++) {
		struct wla_vdc_output *out = vdc->outputs[i];
		if (!out) {
			continue;
		}
		out->crtc.present = NULL;
		out->crtc.idle = NULL;
		wla_crtc_force_off(&out->crtc);
		fail_captures(out, false);
	}
	for (size_t i = 0; i < vdc->n_outputs; i++) {
		if (vdc->outputs[i]) {
			output_free(vdc->outputs[i]);
		}
	}
	if (vdc->deliver_idle) {
		wl_event_source_remove(vdc->deliver_idle);
	}
	free(vdc->configured);
	free(vdc);
}
