/*
 * wlr_output implementation: every commit of wlr_output.pending becomes one
 * atomic state; the cursor is a cursor plane moved by legacy cursor commits.
 */
#include <assert.h>
#include <drm_fourcc.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/interfaces/wlr_output.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/util/box.h>
#include <wlr/util/log.h>
#include <wlatomic/backend.h>
#include <wlatomic/capture.h>
#include "backend/input.h"
#include "backend/wlr.h"
#include "util.h"

/* The fields of wlr_output.pending that need the hardware. */
#define OUTPUT_HW_FIELDS \
	(WLR_OUTPUT_STATE_BUFFER | WLR_OUTPUT_STATE_MODE | WLR_OUTPUT_STATE_ENABLED | \
		WLR_OUTPUT_STATE_GAMMA_LUT | WLR_OUTPUT_STATE_ADAPTIVE_SYNC_ENABLED)

static const struct wlr_output_impl output_impl;
static void handle_present(struct wla_crtc *crtc, const struct wla_present *ev, void *data);
static void handle_idle(struct wla_crtc *crtc, void *data);
static bool claim_if_enabling(struct wla_output *out);

static enum wl_output_transform orientation_transform(enum wla_panel_orientation o)
{
	/* As wlroots maps the kernel's names. */
	switch (o) {
	case WLA_ORIENTATION_LEFT_UP:
		return WL_OUTPUT_TRANSFORM_90;
	case WLA_ORIENTATION_UPSIDE_DOWN:
		return WL_OUTPUT_TRANSFORM_180;
	case WLA_ORIENTATION_RIGHT_UP:
		return WL_OUTPUT_TRANSFORM_270;
	case WLA_ORIENTATION_NORMAL:
		break;
	}
	return WL_OUTPUT_TRANSFORM_NORMAL;
}

static struct wla_output *output_from_wlr(struct wlr_output *wlr_output)
{
	assert(wlr_output->impl == &output_impl);
	struct wla_output *out = wl_container_of(wlr_output, out, base);
	return out;
}

static struct wla_crtc *output_crtc(struct wla_output *out)
{
	return out->crtc;
}

/* Put the cursor plane where set_cursor/move_cursor last asked for. */
static int apply_cursor(struct wla_output *out, struct wla_atomic_state *state, bool enabled)
{
	struct wla_plane *plane = out->crtc ? out->crtc->cursor : NULL;
	if (!plane) {
		return 0; /* no cursor plane: wlroots draws the cursor */
	}
	struct wla_plane_state *ps = wla_atomic_get_plane_state(state, plane);
	if (!ps) {
		return -ENOMEM;
	}
	struct wla_crtc *crtc = enabled && out->cursor_fb ? output_crtc(out) : NULL;
	int ret = wla_atomic_set_crtc_for_plane(state, ps, crtc);
	if (ret < 0) {
		return ret;
	}
	wla_atomic_set_fb_for_plane(ps, crtc ? out->cursor_fb : NULL);
	if (crtc) {
		/* Keep a cursor far outside the output inside the coordinate
		 * range: it is just as invisible there. */
		int x = out->cursor_x - out->hotspot_x;
		int y = out->cursor_y - out->hotspot_y;
		const int limit = 16384;
		x = x < -limit ? -limit : x > limit ? limit : x;
		y = y < -limit ? -limit : y > limit ? limit : y;
		wla_plane_state_set_full(ps, x, y);
	}
	return 0;
}

static void release_cursor_buffer(struct wla_output *out, struct wlr_buffer *buffer)
{
	if (buffer) {
		out->backend->cursor_locks--;
		wlr_buffer_unlock(buffer);
	}
}

/* A committed state has the cursor's state now: nothing waits. */
static void cursor_sent(struct wla_output *out)
{
	out->cursor_dirty = false;
}

/* A wlr_output_mode of ours, with the connector's timing it stands for
 * (wlroots' modes carry only size and rate, and a connector may list two
 * timings of one size and rate). custom: committed as a custom mode, not
 * one of the connector's. */
struct wla_output_mode {
	struct wlr_output_mode base;
	struct wla_mode mode;
	bool custom;
};

/* Custom modes an output's list keeps (custom_mode_committed). */
#define WLA_OUTPUT_CUSTOM_MODES_MAX 8

/* The timing of one of the output's own modes; false if mode is not one. */
static bool listed_mode(struct wla_output *out, const struct wlr_output_mode *mode,
	struct wla_mode *timing)
{
	struct wlr_output_mode *m;
	wl_list_for_each(m, &out->base.modes, link) {
		if (m == mode) {
			const struct wla_output_mode *om = wl_container_of(m, om, base);
			*timing = om->mode;
			timing->preferred = false;
			return true;
		}
	}
	return false;
}

/* The timing of a wlroots mode asked for by size and rate: the connector's
 * first mode of that size and rate if it has one, else the driver's timing
 * for a custom mode. */
static bool mode_from_wlr(struct wla_output *out, int32_t width, int32_t height,
	int32_t refresh_mhz, struct wla_mode *mode)
{
	for (size_t i = 0; i < out->conn->n_modes; i++) {
		const struct wla_mode *m = &out->conn->modes[i];
		if (m->width == width && m->height == height && m->refresh_mhz == refresh_mhz) {
			*mode = *m;
			mode->preferred = false;
			return true;
		}
	}
	*mode = (struct wla_mode){ .width = width, .height = height, .refresh_mhz = refresh_mhz };
	return wla_device_custom_mode(out->dev, width, height, refresh_mhz, mode);
}

/* The mode an output without a mode in its request runs at. */
static bool current_mode(struct wla_output *out, struct wla_mode *mode)
{
	struct wlr_output *wo = &out->base;
	struct wla_crtc *crtc = output_crtc(out);
	if (crtc && crtc->state->enable) {
		*mode = crtc->state->mode;
		return true;
	}
	if (!wo->current_mode && out->has_lit_mode) {
		*mode = out->lit_mode; /* lit at start, turned off since */
		return true;
	}
	if (wo->current_mode && (listed_mode(out, wo->current_mode, mode) ||
			mode_from_wlr(out, wo->current_mode->width, wo->current_mode->height,
				wo->current_mode->refresh, mode))) {
		return true;
	}
	const struct wla_connector *conn = out->conn;
	if (conn->n_modes == 0) {
		return false;
	}
	*mode = conn->modes[0];
	return true;
}

/* What wlr_output.pending asks of the hardware. false (logged) if it asks
 * for something we cannot do. */
static bool request_from_pending(struct wla_output *out, struct wla_output_request *req)
{
	struct wlr_output *wo = &out->base;
	const struct wlr_output_state *pending = &wo->pending;
	*req = (struct wla_output_request){
		.enabled = (pending->committed & WLR_OUTPUT_STATE_ENABLED) ?
			pending->enabled : wo->enabled,
		/* wlroots counts this commit once impl->commit returns, and
		 * wlr_presentation matches present events on that count. */
		.commit_seq = wo->commit_seq + 1,
	};
	if (pending->committed & WLR_OUTPUT_STATE_MODE) {
		req->has_mode = true;
		bool ok;
		if (pending->mode_type == WLR_OUTPUT_STATE_MODE_FIXED) {
			ok = listed_mode(out, pending->mode, &req->mode) ||
				mode_from_wlr(out, pending->mode->width, pending->mode->height,
					pending->mode->refresh, &req->mode);
		} else {
			/* wlroots: refresh 0 means "whatever the backend likes". */
			int32_t refresh = pending->custom_mode.refresh;
			ok = mode_from_wlr(out, pending->custom_mode.width,
				pending->custom_mode.height, refresh ? refresh : 60000, &req->mode);
		}
		if (!ok) {
			/* The driver has said why. */
			wlr_log(WLR_DEBUG, "output %s: no timing for mode %" PRId32 "x%" PRId32
				"@%" PRId32 "mHz", wo->name, req->mode.width, req->mode.height,
				req->mode.refresh_mhz);
			return false;
		}
	}
	if (pending->committed & WLR_OUTPUT_STATE_BUFFER) {
		req->buffer = pending->buffer;
	}
	if ((pending->committed & WLR_OUTPUT_STATE_BUFFER) &&
			(pending->committed & WLR_OUTPUT_STATE_DAMAGE)) {
		pixman_region32_t *region = (pixman_region32_t *)&pending->damage;
		int n = 0;
		const pixman_box32_t *boxes = pixman_region32_rectangles(region, &n);
		if (n > WLA_MAX_DAMAGE_RECTS) {
			boxes = pixman_region32_extents(region); /* their bounding box */
			n = 1;
		}
		for (int i = 0; i < n; i++) {
			req->damage[i] = (struct wla_rect){ boxes[i].x1, boxes[i].y1,
				boxes[i].x2 - boxes[i].x1, boxes[i].y2 - boxes[i].y1 };
		}
		req->n_damage = (size_t)n;
	}
	if (pending->committed & WLR_OUTPUT_STATE_ADAPTIVE_SYNC_ENABLED) {
		req->has_vrr = true;
		req->vrr = pending->adaptive_sync_enabled;
		if (req->vrr && !out->conn->vrr_capable) {
			/* As wlroots' DRM backend: refused, the compositor reads
			 * adaptive_sync_status. */
			wla_output_log(out, WLR_ERROR,
				"adaptive sync refused: connector %s is not vrr_capable",
				out->conn->name);
			return false;
		}
	}
	if (pending->committed & WLR_OUTPUT_STATE_GAMMA_LUT) {
		/* wlroots: r, g and b ramps of gamma_lut_size entries, one after
		 * the other; size 0 resets the LUT. */
		req->has_gamma = true;
		size_t size = pending->gamma_lut_size;
		uint32_t crtc_size = out->crtc ? out->crtc->gamma_size : 0;
		if (size != 0 && !out->crtc) {
			wla_output_log(out, WLR_ERROR, "gamma LUT of %zu entries refused: the "
				"output has no CRTC (it is off)", size);
			return false;
		}
		if (size != 0 && size != crtc_size) {
			wla_output_log(out, WLR_ERROR,
				"gamma LUT of %zu entries refused: %s's gamma_size is %" PRIu32
				"%s", size, out->crtc->name, crtc_size,
				crtc_size ? "" : " (it has no gamma LUT)");
			return false;
		}
		if (size != 0) {
			const uint16_t *lut = pending->gamma_lut;
			req->gamma = wla_gamma_lut_create((uint32_t)size, lut, lut + size,
				lut + 2 * size);
			if (!req->gamma) {
				wla_output_log(out, WLR_ERROR, "out of memory for a gamma LUT of %zu "
					"entries", size);
				return false;
			}
		}
	}
	return true;
}

void wla_output_request_finish(struct wla_output_request *req)
{
	wla_gamma_lut_put(req->gamma);
	req->gamma = NULL;
}

/* Build the atomic state of a request; NULL (logged) on error. */
static struct wla_atomic_state *build_state(struct wla_output *out,
	const struct wla_output_request *req)
{
	struct wla_crtc *crtc = output_crtc(out);
	struct wla_connector *conn = out->conn;
	/* Claimed before any request that enables (wla_output_claim_crtc);
	 * an output off without one has nothing on the hardware to change. */
	assert(crtc);
	struct wla_atomic_state *state = wla_atomic_state_alloc(crtc->dev);
	if (!state) {
		return NULL;
	}
	state->allow_modeset = true;
	bool enabled = req->enabled;
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	struct wla_connector_state *conn_state = wla_atomic_get_connector_state(state, conn);
	int ret = cs && conn_state ? 0 : -ENOMEM;
	struct wla_mode mode = req->mode;
	if (ret == 0 && enabled && !req->has_mode && !current_mode(out, &mode)) {
		wla_output_log(out, WLR_ERROR, "enabled without a mode");
		ret = -EINVAL;
	}
	if (ret == 0) {
		cs->enable = cs->active = enabled;
		if (enabled) {
			cs->mode = mode;
		}
		cs->commit_seq = req->commit_seq;
		if (req->has_gamma || out->crtc_taken_over) {
			/* A CRTC that was another output's: not its LUT. */
			wla_crtc_state_set_gamma(cs, req->has_gamma ? req->gamma : NULL);
		}
		if (req->has_vrr || out->crtc_taken_over) {
			cs->vrr_enabled = req->has_vrr && req->vrr;
		}
		/* A modeset though nothing of the mode changes: KMS trains the
		 * link again. */
		cs->connectors_changed |= req->retrain && enabled;
		/* wlroots waits for a frame event after buffer commits only. */
		cs->want_event = enabled && req->buffer;
		ret = wla_atomic_set_crtc_for_connector(state, conn_state, enabled ? crtc : NULL);
	}
	if (ret == 0 && enabled && req->buffer) {
		struct wla_fb *fb = wla_fb_from_wlr_buffer(out->backend, req->buffer);
		struct wla_plane_state *ps = fb ?
			wla_atomic_get_plane_state(state, crtc->primary) : NULL;
		ret = ps ? wla_atomic_set_crtc_for_plane(state, ps, crtc) : -EINVAL;
		if (ret == 0) {
			wla_atomic_set_fb_for_plane(ps, fb);
			wla_plane_state_set_full(ps, 0, 0);
			wla_plane_state_set_damage(ps, req->damage, req->n_damage);
		}
		wla_fb_put(fb);
	}
	if (ret == 0) {
		ret = wla_output_apply_overlays(out, state, enabled);
	}
	if (ret == 0 && (out->cursor_dirty || !crtc->state->active)) {
		ret = apply_cursor(out, state, enabled);
	}
	if (ret < 0) {
		wla_atomic_state_free(state);
		return NULL;
	}
	return state;
}

int wla_output_check_trial(struct wla_output *out, struct wlr_buffer *primary, bool driver)
{
	struct wla_output_request req = {
		.enabled = true,
		.buffer = primary,
		.commit_seq = out->base.commit_seq + 1,
	};
	struct wla_atomic_state *state = build_state(out, &req);
	if (!state) {
		return -EINVAL;
	}
	state->quiet = true;
	state->skip_driver_check = !driver;
	int ret = wla_atomic_check(state);
	wla_output_overlays_checked(out, state, ret);
	wla_atomic_state_free(state);
	return ret;
}

static bool queue_has_room(struct wla_output *out)
{
	const struct wla_crtc *crtc = output_crtc(out);
	/* A CRTC still running for its panel's power-off takes no new frame,
	 * and a buffer waiting for the panel's power-on is the next frame. */
	return out->base.enabled && crtc && crtc->state->active &&
		!(out->has_deferred && out->deferred.buffer) && wla_crtc_frame_fits(crtc);
}

/* The compositor may render the next frame as soon as the flip queue can take
 * it: at once with room in the queue, else at the latch that frees a slot. */
/* wlroots' frame_pending stands for its newest buffer commit: clear it for
 * a frame that ended without a frame event, unless a newer buffer commit
 * waits for its panel (its frame event is still to come). */
static void frame_done_without_event(struct wla_output *out)
{
	if (!(out->has_deferred && out->deferred.buffer)) {
		out->base.frame_pending = false;
	}
}

static void send_frame_if_room(struct wla_output *out)
{
	if (!out->base.frame_pending || out->dev->inactive) {
		return;
	}
	if (!out->base.enabled) {
		/* A frame latched while a panel powers off: nobody renders for a
		 * disabled output, and waiting on it would refuse the first
		 * buffer after a re-enable. */
		frame_done_without_event(out);
		return;
	}
	if (queue_has_room(out)) {
		wlr_output_send_frame(&out->base);
	}
}

static void handle_frame_idle(void *data)
{
	struct wla_output *out = data;
	out->frame_idle = NULL;
	if (out->dev->inactive) {
		return; /* asked for again when the session is back */
	}
	if (out->first_frame) {
		/* Lit up without a buffer: the compositor's first frame. */
		out->first_frame = false;
		if (out->base.enabled && !out->base.frame_pending) {
			wlr_output_send_frame(&out->base);
			return;
		}
	}
	send_frame_if_room(out);
}

static void schedule_frame(struct wla_output *out)
{
	/* Whether the queue has room is decided when the idle runs: by then
	 * wlroots has recorded this commit (enabled, frame_pending). */
	if (out->frame_idle) {
		return;
	}
	struct wl_event_loop *loop = wl_display_get_event_loop(out->backend->display);
	out->frame_idle = wl_event_loop_add_idle(loop, handle_frame_idle, out);
}

/* Check a request against the current states without changing anything. */
static int check_request(struct wla_output *out, const struct wla_output_request *req)
{
	if (!out->crtc) {
		return req->enabled ? -ENODEV : 0;
	}
	struct wla_atomic_state *state = build_state(out, req);
	if (!state) {
		wla_output_overlays_checked(out, NULL, -EINVAL);
		return -EINVAL;
	}
	state->quiet = out->probing;
	int ret = wla_atomic_check(state);
	wla_output_overlays_checked(out, state, ret);
	wla_atomic_state_free(state);
	return ret;
}

int wla_output_commit_request(struct wla_output *out, const struct wla_output_request *req)
{
	if (!out->crtc) {
		/* Off, and its CRTC another output's (or none was ever free):
		 * the hardware has nothing of it to turn off. */
		if (req->enabled) {
			wla_output_log(out, WLR_ERROR, "enabled without a CRTC");
			return -ENODEV;
		}
		wla_output_overlays_committed(out, false);
		return 0;
	}
	bool was_active = output_crtc(out)->state->active;
	struct wla_atomic_state *state = build_state(out, req);
	int ret = state ? wla_atomic_nonblocking_commit(state) : -EINVAL;
	wla_output_overlays_checked(out, ret < 0 ? state : NULL, ret);
	if (ret < 0) {
		wla_atomic_state_free(state);
		return ret;
	}
	out->crtc_taken_over = false;
	if (!req->enabled) {
		out->last_present_ns = 0;
		out->restart_pending = false;
	} else if (req->has_mode || req->retrain || !out->base.enabled || !was_active) {
		/* A retrain's request is the driver's own (no commit_seq): the
		 * next present of the compositor's frames restarts then. */
		out->restart_commit_seq = req->commit_seq ? req->commit_seq :
			out->base.commit_seq + 1;
		out->restart_pending = true;
	}
	wla_output_overlays_committed(out, req->enabled);
	cursor_sent(out);
	if (req->buffer) {
		out->stats.frames_committed++;
		/* With the queue full now (depth 1: at every frame), the latch
		 * that frees a slot sends the frame event: no idle to find
		 * there is no room. */
		if (out->first_frame || !out->base.enabled ||
				wla_crtc_frame_fits(output_crtc(out))) {
			schedule_frame(out);
		}
	} else if (req->enabled && (req->has_mode || !out->base.enabled || !was_active)) {
		/* Lit up or given a mode without a buffer (wlroots 0.15 then
		 * renders none, as we accept it): ask the compositor for the
		 * first frame, as a DRM page flip or headless' timer would (sway
		 * waits for a frame event after wlr-randr --on). That includes
		 * an enable that waited for its panel's power-on: wlroots counts
		 * the output enabled since its commit, and a frame the
		 * compositor asked for meanwhile was held for the panel. */
		out->first_frame = true;
		schedule_frame(out);
	}
	return 0;
}

/*
 * Whether req lights the output up or gives it a mode that the primary
 * plane's fb does not cover, without a buffer. Refused quietly (a probe,
 * not an error): wlroots 0.15 then renders a buffer of the new size itself
 * (output_ensure_buffer) and commits again, as for its DRM backend.
 */
static bool lacks_buffer(struct wla_output *out, const struct wla_output_request *req)
{
	if (!req->enabled || req->buffer || !req->has_mode || !out->crtc) {
		return false;
	}
	const struct wla_plane_state *ps = output_crtc(out)->primary->state;
	const struct wla_fb *fb = ps ? ps->fb : NULL;
	if (!fb || ((int32_t)fb->width == req->mode.width &&
			(int32_t)fb->height == req->mode.height)) {
		return false;
	}
	wlr_log(WLR_DEBUG, "output %s: mode %" PRId32 "x%" PRId32 " without a buffer: the "
		"primary plane's fb is %" PRIu32 "x%" PRIu32 "; a buffer of the mode's size is "
		"needed", out->base.name, req->mode.width, req->mode.height, fb->width, fb->height);
	return true;
}

/* Whether a commit needs the hardware: a buffer, a mode, enabled, or an
 * overlay offer. */
static bool needs_hardware(struct wla_output *out)
{
	return (out->base.pending.committed & OUTPUT_HW_FIELDS) ||
		wla_output_overlays_pending(out);
}

/* Whether req asks only for the mode the CRTC runs at, of an output that
 * stays on: a lit output's first commit of its preferred mode (it came
 * without a current mode of the list, adopt_lit_mode). Nothing for the
 * hardware; wlroots' books take the mode. */
static bool only_current_mode(struct wla_output *out, const struct wla_output_request *req)
{
	const uint32_t others = OUTPUT_HW_FIELDS &
		~(uint32_t)(WLR_OUTPUT_STATE_MODE | WLR_OUTPUT_STATE_ENABLED);
	const struct wla_crtc *crtc = output_crtc(out);
	/* Not where a panel powers the output: its sequence decides when the
	 * hardware gets which mode (wla_output_panel_takes). */
	return req->has_mode && req->enabled && out->base.enabled && crtc &&
		crtc->state->active && !out->crtc_taken_over && !out->panel &&
		!out->has_deferred &&
		!(out->base.pending.committed & others) &&
		!wla_output_overlays_pending(out) && wla_mode_equal(&req->mode, &crtc->state->mode);
}

/* Another session has the device (a VT switch): as wlroots' DRM backend,
 * no commit reaches the hardware until it is back. */
static bool device_inactive(struct wla_output *out)
{
	if (!out->dev->inactive) {
		return false;
	}
	wla_output_log(out, WLR_DEBUG, "commit refused: the session is inactive");
	return true;
}

static bool output_test(struct wlr_output *wlr_output)
{
	struct wla_output *out = output_from_wlr(wlr_output);
	if (!needs_hardware(out)) {
		return true;
	}
	if (device_inactive(out)) {
		return false;
	}
	struct wla_output_request req = { 0 };
	out->probing = true;
	bool ok = claim_if_enabling(out) && request_from_pending(out, &req) &&
		!lacks_buffer(out, &req) &&
		wla_output_panel_admits(out, &req) && check_request(out, &req) == 0;
	out->probing = false;
	wla_output_request_finish(&req);
	return ok;
}

static struct wla_output_mode *append_mode(struct wlr_output *wo, const struct wla_mode *timing)
{
	struct wla_output_mode *mode = calloc(1, sizeof(*mode));
	if (!mode) {
		return NULL;
	}
	mode->mode = *timing;
	mode->base.width = timing->width;
	mode->base.height = timing->height;
	mode->base.refresh = timing->refresh_mhz;
	mode->base.preferred = timing->preferred;
	wl_list_insert(wo->modes.prev, &mode->base.link);
	return mode;
}

/* The entry of the output's list with this timing, if any. */
static struct wlr_output_mode *find_mode(struct wla_output *out, const struct wla_mode *timing)
{
	struct wlr_output_mode *m;
	wl_list_for_each(m, &out->base.modes, link) {
		struct wla_output_mode *om = wl_container_of(m, om, base);
		if (wla_mode_equal(&om->mode, timing)) {
			return m;
		}
	}
	return NULL;
}

/* The output's current mode is m now. An output lit at start had none of
 * the list (adopt_lit_mode); wlroots sends no mode event when its entry
 * has the same timing, and the output layout, which exposes an output's
 * wl_output global only once it has a current mode, would never hear of
 * it: the event goes as for a mode change. */
static void set_current_mode(struct wla_output *out, struct wlr_output_mode *m)
{
	struct wlr_output *wo = &out->base;
	bool had_none = wo->current_mode == NULL;
	int32_t width = wo->width, height = wo->height, refresh = wo->refresh;
	wlr_output_update_mode(wo, m);
	out->has_lit_mode = out->has_lit_mode && !m;
	if (had_none && m && wo->width == width && wo->height == height &&
			wo->refresh == refresh) {
		wl_signal_emit(&wo->events.mode, wo);
	}
}

void wla_output_retrain_link(struct wla_output *out)
{
	const struct wla_crtc *crtc = output_crtc(out);
	if (!out->base.enabled || !crtc || !crtc->state->active) {
		wla_output_log(out, WLR_INFO, "link-status BAD while off: the next enable "
			"sets it up");
		return;
	}
	struct wla_output_request req = {
		.enabled = true,
		.has_mode = true,
		.mode = crtc->state->mode,
		.retrain = true,
	};
	char desc[128];
	/* The kernel may have pruned the mode (a link that trains only at a
	 * lower rate): then the monitor's preferred one of those left. */
	bool listed = false;
	for (size_t i = 0; i < out->conn->n_modes; i++) {
		listed |= wla_mode_equal(&out->conn->modes[i], &req.mode);
	}
	if (!listed && out->conn->n_modes > 0) {
		wla_output_log(out, WLR_INFO, "link-status BAD: mode %s is gone from the "
			"connector's list", wla_mode_describe(&req.mode, desc, sizeof(desc)));
		req.mode = out->conn->modes[0];
		req.mode.preferred = false;
	}
	wla_output_log(out, WLR_INFO, "link-status BAD: modeset with %s mode %s",
		listed ? "the same" : "the preferred", wla_mode_describe(&req.mode, desc,
		sizeof(desc)));
	int ret = wla_output_commit_request(out, &req);
	if (ret < 0) {
		wla_output_log(out, WLR_ERROR, "the modeset after link-status BAD failed: %s",
			strerror(-ret));
	} else if (!listed) {
		struct wlr_output_mode *m = find_mode(out, &req.mode);
		if (m) {
			set_current_mode(out, m);
		}
	}
}

/*
 * The custom entry a new custom mode takes over once the list holds
 * WLA_OUTPUT_CUSTOM_MODES_MAX of them: the least recently committed one
 * that is not current. NULL while there is room (or none to take).
 */
static struct wla_output_mode *custom_mode_to_reuse(struct wla_output *out)
{
	struct wla_output_mode *oldest = NULL;
	size_t n = 0;
	struct wlr_output_mode *m;
	wl_list_for_each(m, &out->base.modes, link) {
		struct wla_output_mode *om = wl_container_of(m, om, base);
		if (!om->custom) {
			continue;
		}
		n++;
		if (!oldest && m != out->base.current_mode) {
			oldest = om;
		}
	}
	return n >= WLA_OUTPUT_CUSTOM_MODES_MAX ? oldest : NULL;
}

/*
 * A custom mode joins the output's list, as wlroots' DRM backend does it:
 * wlroots 0.15 wants a current mode from the list wherever there is a list
 * (wlr-output-management asserts it), and off and on again (DPMS) must
 * find the same timing. The same timing twice is one entry. The list keeps
 * the custom modes in the order they were last committed, at most
 * WLA_OUTPUT_CUSTOM_MODES_MAX of them: past that, the oldest one not current
 * is rewritten in place rather than freed, since wlroots' output management
 * hands the entries to its clients and never takes them back (a client's
 * old mode object then names the new timing: no dangling pointer; wlroots
 * 0.15 sends a mode's size once, so a client bound before the rewrite
 * keeps the old size for that object until it binds again, as it never
 * hears of an entry added after it bound, with wlroots' DRM backend too),
 * and a
 * compositor that resizes a custom mode at will (at each window resize, a
 * VNC or nested output) would otherwise grow the list without end. spare,
 * taken before the commit when there was neither an entry nor one to
 * reuse, becomes the entry or is freed.
 */
static void custom_mode_committed(struct wla_output *out, const struct wla_mode *timing,
	struct wla_output_mode *spare)
{
	struct wlr_output_mode *m = find_mode(out, timing);
	struct wla_output_mode *entry = m ? wl_container_of(m, entry, base) : NULL;
	if (!entry) {
		entry = custom_mode_to_reuse(out);
		if (!entry) {
			assert(spare);
			entry = spare;
			spare = NULL;
		} else {
			wl_list_remove(&entry->base.link);
		}
		entry->mode = *timing;
		entry->mode.preferred = false;
		entry->custom = true;
		entry->base.width = timing->width;
		entry->base.height = timing->height;
		entry->base.refresh = timing->refresh_mhz;
		entry->base.preferred = false;
		wl_list_insert(out->base.modes.prev, &entry->base.link);
	} else if (entry->custom) {
		/* The most recently committed custom mode goes last. */
		wl_list_remove(&entry->base.link);
		wl_list_insert(out->base.modes.prev, &entry->base.link);
	}
	free(spare);
	set_current_mode(out, &entry->base);
}

/* After a commit: an output lit at start that is still on at the timing it
 * came with gets that timing's entry of the list as its current mode (a
 * custom entry for a mode the connector does not list), whatever the
 * commit was. wlroots' output layout exposes its wl_output global, and its
 * output management builds a head for it, only once it has one. */
static void settle_lit_mode(struct wla_output *out)
{
	struct wla_crtc *crtc = output_crtc(out);
	if (!out->has_lit_mode || out->base.current_mode || !out->base.enabled || !crtc ||
			!crtc->state->active || !wla_mode_equal(&crtc->state->mode, &out->lit_mode)) {
		return;
	}
	struct wlr_output_mode *m = find_mode(out, &out->lit_mode);
	if (m) {
		set_current_mode(out, m);
		return;
	}
	struct wla_output_mode *spare = NULL;
	if (!custom_mode_to_reuse(out) && !(spare = calloc(1, sizeof(*spare)))) {
		wlr_log(WLR_ERROR, "output %s: out of memory for its mode", out->base.name);
		return;
	}
	custom_mode_committed(out, &out->lit_mode, spare);
}

static void update_wlr_state(struct wla_output *out, const struct wla_output_request *req,
	struct wla_output_mode *spare)
{
	struct wlr_output *wo = &out->base;
	const struct wlr_output_state *pending = &wo->pending;
	if (pending->committed & WLR_OUTPUT_STATE_MODE) {
		if (pending->mode_type == WLR_OUTPUT_STATE_MODE_FIXED) {
			set_current_mode(out, pending->mode);
		} else {
			custom_mode_committed(out, &req->mode, spare);
			spare = NULL;
		}
	}
	if (pending->committed & WLR_OUTPUT_STATE_ENABLED) {
		wlr_output_update_enabled(wo, pending->enabled);
	}
	if (req->has_vrr) {
		/* Reported as wlroots' DRM backend reports it: what the commit
		 * asked for, once it was taken. */
		wo->adaptive_sync_status = req->vrr ? WLR_OUTPUT_ADAPTIVE_SYNC_ENABLED :
			WLR_OUTPUT_ADAPTIVE_SYNC_DISABLED;
		wla_output_log(out, WLR_DEBUG, "adaptive sync %s", req->vrr ? "on" : "off");
	}
	free(spare);
}

static bool output_commit(struct wlr_output *wlr_output)
{
	struct wla_output *out = output_from_wlr(wlr_output);
	if (!needs_hardware(out)) {
		out->stats.commits++;
		settle_lit_mode(out);
		return true;
	}
	if (device_inactive(out)) {
		out->stats.refused++;
		return false;
	}
	struct wla_output_request req = { 0 };
	int ret = claim_if_enabling(out) ? 0 : -ENODEV;
	if (ret == 0 && !request_from_pending(out, &req)) {
		ret = -EINVAL;
	}
	if (ret == 0 && lacks_buffer(out, &req)) {
		ret = -EINVAL;
	}
	/* A custom mode's list entry is allocated before the point of no
	 * return (custom_mode_committed). */
	struct wla_output_mode *spare = NULL;
	if (ret == 0 && (wlr_output->pending.committed & WLR_OUTPUT_STATE_MODE) &&
			wlr_output->pending.mode_type == WLR_OUTPUT_STATE_MODE_CUSTOM &&
			!find_mode(out, &req.mode) && !custom_mode_to_reuse(out) &&
			!(spare = calloc(1, sizeof(*spare)))) {
		wlr_log(WLR_ERROR, "output %s: out of memory for custom mode %" PRId32 "x%" PRId32,
			wlr_output->name, req.mode.width, req.mode.height);
		ret = -ENOMEM;
	}
	if (ret == 0 && only_current_mode(out, &req)) {
		wla_output_log(out, WLR_DEBUG, "mode %" PRId32 "x%" PRId32 "@%" PRId32 "mHz is "
			"the one %s runs at: nothing to commit", req.mode.width, req.mode.height,
			req.mode.refresh_mhz, output_crtc(out)->name);
		out->stats.commits++;
		update_wlr_state(out, &req, spare);
		wla_output_request_finish(&req);
		const struct wla_plane_state *ps = output_crtc(out)->primary->state;
		if (!ps || !ps->fb) {
			/* Nothing on screen yet: a frame to draw the first, as
			 * for a mode set without a buffer. */
			out->first_frame = true;
			schedule_frame(out);
		}
		return true;
	}
	if (ret == 0 && !wla_output_panel_admits(out, &req)) {
		ret = -EIO;
	}
	if (ret == 0 && wla_output_panel_takes(out, &req)) {
		/* The panel powers on or off first; the hardware follows its
		 * events (wla_output_panel_handle_event). Errors are found now. */
		ret = req.enabled ? check_request(out, &req) : 0;
		if (ret == 0) {
			ret = wla_output_panel_request(out, &req);
		}
	} else if (ret == 0) {
		ret = wla_output_commit_request(out, &req);
	}
	wla_output_request_finish(&req);
	if (ret < 0) {
		free(spare);
		out->stats.refused++;
		out->stats.refused_queue_full += ret == -EBUSY;
		wlr_log(WLR_DEBUG, "output %s: commit %" PRIu32 " refused: %s", wlr_output->name,
			wlr_output->commit_seq, strerror(-ret));
		return false;
	}
	out->stats.commits++;
	wla_output_overlays_committed(out, req.enabled);
	update_wlr_state(out, &req, spare);
	settle_lit_mode(out);
	return true;
}

/* Send the cursor plane's new state on its own when nothing is queued (it
 * latches at the next vblank); else it travels with the next frame, or goes
 * on its own once the queue drained. */
static bool commit_cursor(struct wla_output *out)
{
	struct wla_crtc *crtc = output_crtc(out);
	if (!crtc || !crtc->state->active || crtc->queued > 0) {
		out->cursor_dirty = true;
		return true;
	}
	if (!crtc->rearm) {
		/* One state in flight and nothing written over it (KMS): a
		 * cursor-only state would hold the slot that a frame committed
		 * right after needs. As wlroots' DRM backend does, the cursor goes
		 * with the next frame, which needs_frame asks the compositor for. */
		out->cursor_dirty = true;
		wlr_output_update_needs_frame(&out->base);
		return true;
	}
	struct wla_atomic_state *state = wla_atomic_state_alloc(crtc->dev);
	if (!state) {
		return false;
	}
	state->legacy_cursor_update = true;
	int ret = apply_cursor(out, state, true);
	if (ret == 0) {
		ret = wla_atomic_commit(state);
	}
	if (ret < 0) {
		wla_atomic_state_free(state);
		return false;
	}
	cursor_sent(out);
	return true;
}


static bool output_set_cursor(struct wlr_output *wlr_output, struct wlr_buffer *buffer,
	int hotspot_x, int hotspot_y)
{
	struct wla_output *out = output_from_wlr(wlr_output);
	struct wla_fb *fb = NULL;
	if (!out->crtc || !out->crtc->cursor) {
		/* No cursor plane: false makes wlroots draw a software cursor.
		 * Hidden, nothing is kept for a CRTC claimed later. */
		if (!buffer && out->cursor_fb) {
			wla_fb_put(out->cursor_fb);
			release_cursor_buffer(out, out->cursor_buffer);
			out->cursor_fb = NULL;
			out->cursor_buffer = NULL;
		}
		return buffer == NULL;
	}
	if (buffer) {
		fb = wla_fb_from_wlr_buffer(out->backend, buffer);
		if (!fb) {
			return false;
		}
		/* It may have to travel with a queued frame: refuse now what the
		 * plane cannot show, rather than fail that frame's check. */
		const struct wla_plane *plane = out->crtc->cursor;
		if ((plane->max_fb_width && fb->width > plane->max_fb_width) ||
				(plane->max_fb_height && fb->height > plane->max_fb_height) ||
				!wla_plane_supports(plane, fb->format, fb->modifier)) {
			wlr_log(WLR_DEBUG, "output %s: cursor %" PRIu32 "x%" PRIu32 " format 0x%08"
				PRIx32 " does not fit plane %s (%" PRIu32 "x%" PRIu32 ")",
				wlr_output->name, fb->width, fb->height, fb->format, plane->name,
				plane->max_fb_width, plane->max_fb_height);
			wla_fb_put(fb);
			return false;
		}
	}
	struct wla_fb *old_fb = out->cursor_fb;
	struct wlr_buffer *old_buffer = out->cursor_buffer;
	int old_hx = out->hotspot_x, old_hy = out->hotspot_y;
	/* wlroots unlocks the buffer once this returns, and sets no cursor
	 * again when the output comes back on after being off: the cursor is
	 * held for as long as it is the output's, until it is replaced or
	 * hidden or the output ends (a state showing it locks it too). */
	if (buffer) {
		wlr_buffer_lock(buffer);
		out->backend->cursor_locks++;
	}
	out->cursor_fb = fb;
	out->cursor_buffer = buffer;
	out->hotspot_x = hotspot_x;
	out->hotspot_y = hotspot_y;
	bool ok = commit_cursor(out);
	if (!ok) {
		/* Refused (e.g. larger than the cursor plane): wlroots falls back
		 * to a software cursor, and ours stays as it was. */
		release_cursor_buffer(out, out->cursor_buffer);
		out->cursor_fb = old_fb;
		out->cursor_buffer = old_buffer;
		out->hotspot_x = old_hx;
		out->hotspot_y = old_hy;
		wla_fb_put(fb);
		return false;
	}
	wla_fb_put(old_fb);
	release_cursor_buffer(out, old_buffer);
	return true;
}

static bool output_move_cursor(struct wlr_output *wlr_output, int x, int y)
{
	struct wla_output *out = output_from_wlr(wlr_output);
	if (out->crtc && !out->crtc->cursor) {
		return false;
	}
	/* x, y are in the output's space, the plane is in the mode's (the
	 * hotspot wlroots gives is already in the buffer's). */
	struct wlr_box box = { .x = x, .y = y };
	int width, height;
	wlr_output_transformed_resolution(wlr_output, &width, &height);
	wlr_box_transform(&box, &box, wlr_output_transform_invert(wlr_output->transform),
		width, height);
	if (out->cursor_x == box.x && out->cursor_y == box.y) {
		return true;
	}
	out->cursor_x = box.x;
	out->cursor_y = box.y;
	return commit_cursor(out);
}

/* The compositor's destroy listeners run next, and may destroy the
 * backend: the output is no longer one of its outputs, and what it stands
 * on (the backend, the device) stays until output_destroy is over. */
static void handle_output_destroying(struct wl_listener *listener, void *data)
{
	struct wla_output *out = wl_container_of(listener, out, destroying);
	wl_list_remove(&out->destroying.link);
	wl_list_remove(&out->link);
	wl_list_init(&out->link);
	wla_hold(&out->backend->hold);
	out->holds_backend = true;
}

static void output_destroy(struct wlr_output *wlr_output)
{
	struct wla_output *out = output_from_wlr(wlr_output);
	struct wla_backend *backend = out->backend;
	bool holds_backend = out->holds_backend;
	struct wla_crtc *crtc = output_crtc(out);
	/* Its absolute pointer goes first, as the X11 backend's does. */
	wla_input_output_removed(out->backend->input, out);
	if (out->frame_idle) {
		wl_event_source_remove(out->frame_idle);
	}
	if (out->disabled_idle) {
		wl_event_source_remove(out->disabled_idle);
	}
	/* As in a disable, a panel's backlight goes off while the CRTC still
	 * scans out; the panel's destroy runs the rest of its power-off after
	 * the CRTC stopped, back to back. */
	wla_output_panel_blank(out);
	if (crtc) {
		/* Nobody to tell any more: complete silently. */
		crtc->present = NULL;
		crtc->idle = NULL;
		crtc->present_data = NULL;
		wla_crtc_force_off(crtc);
		/* Inside the device's delivery (a present listener destroyed
		 * us) the frames just cancelled wait to be delivered: an output
		 * made next on this CRTC must not hear of them. */
		wla_crtc_drop_events(crtc);
	}
	wla_output_panel_finish(out);
	wla_output_planes_finish(out);
	wla_fb_put(out->cursor_fb);
	release_cursor_buffer(out, out->cursor_buffer);
	struct wlr_output_mode *mode, *tmp;
	wl_list_for_each_safe(mode, tmp, &wlr_output->modes, link) {
		struct wla_output_mode *om = wl_container_of(mode, om, base);
		wl_list_remove(&mode->link);
		free(om);
	}
	wlr_drm_format_set_finish(&out->primary_formats);
	wlr_drm_format_set_finish(&out->cursor_formats);
	wl_list_remove(&out->link);
	/* From one of its own listeners: freed when the emission returns. */
	if (wla_hold_doom(&out->hold)) {
		free(out);
	}
	if (holds_backend) {
		wla_backend_release(backend);
	}
}

static const struct wlr_drm_format_set *output_get_primary_formats(
	struct wlr_output *wlr_output, uint32_t buffer_caps)
{
	/* wlroots asks before the commit that enables the output (for the
	 * swapchain of its first buffer): the CRTC is claimed now, as
	 * wlroots' DRM backend allocates one here. */
	/* A refusal is an error: wlroots says only that it got no formats. */
	struct wla_output *out = output_from_wlr(wlr_output);
	return wla_output_claim_crtc(out) ? &out->primary_formats : NULL;
}

static const struct wlr_drm_format_set *output_get_cursor_formats(
	struct wlr_output *wlr_output, uint32_t buffer_caps)
{
	return &output_from_wlr(wlr_output)->cursor_formats;
}

static void output_get_cursor_size(struct wlr_output *wlr_output, int *width, int *height)
{
	struct wla_crtc *crtc = output_from_wlr(wlr_output)->crtc;
	struct wla_plane *cursor = crtc ? crtc->cursor : NULL;
	/* Without a cursor plane set_cursor refuses every buffer anyway. */
	*width = cursor ? (int)cursor->max_fb_width : 64;
	*height = cursor ? (int)cursor->max_fb_height : 64;
}

static size_t output_get_gamma_size(struct wlr_output *wlr_output)
{
	/* 0 without a CRTC, as wlroots' DRM backend says then. */
	struct wla_crtc *crtc = output_crtc(output_from_wlr(wlr_output));
	return crtc ? crtc->gamma_size : 0;
}

static const struct wlr_output_impl output_impl = {
	.set_cursor = output_set_cursor,
	.move_cursor = output_move_cursor,
	.destroy = output_destroy,
	.test = output_test,
	.commit = output_commit,
	.get_cursor_formats = output_get_cursor_formats,
	.get_cursor_size = output_get_cursor_size,
	.get_primary_formats = output_get_primary_formats,
	.get_gamma_size = output_get_gamma_size,
};

static uint32_t present_flags(uint32_t flags)
{
	static const struct {
		uint32_t wla, wlr;
	} map[] = {
		{ WLA_PRESENT_VSYNC, WLR_OUTPUT_PRESENT_VSYNC },
		{ WLA_PRESENT_HW_CLOCK, WLR_OUTPUT_PRESENT_HW_CLOCK },
		{ WLA_PRESENT_HW_COMPLETION, WLR_OUTPUT_PRESENT_HW_COMPLETION },
		{ WLA_PRESENT_ZERO_COPY, WLR_OUTPUT_PRESENT_ZERO_COPY },
	};
	uint32_t out = 0;
	for (size_t i = 0; i < WLA_ARRAY_SIZE(map); i++) {
		if (flags & map[i].wla) {
			out |= map[i].wlr;
		}
	}
	return out;
}

static void handle_disabled_idle(void *data)
{
	struct wla_output *out = data;
	/* Off: an offer waiting for the next commit goes, as at a disable. */
	wla_output_overlays_committed(out, false);
	out->disabled_idle = NULL;
	if (out->crtc && out->crtc->state->active) {
		return; /* lit again meanwhile */
	}
	/* The frame that failed inside its own commit was marked pending by
	 * wlroots after our present handler ran: it will never latch (also
	 * where the compositor disabled the output meanwhile). */
	frame_done_without_event(out);
	if (!out->crtc || !out->base.enabled) {
		return;
	}
	wlr_log(WLR_ERROR, "output %s: off after its CRTC %s failed", out->base.name,
		out->crtc->name);
	if (out->panel) {
		wla_output_panel_request(out, &(struct wla_output_request){ .enabled = false });
	}
	wlr_output_update_enabled(&out->base, false);
}

/* The driver lost the CRTC: tell wlroots the output is off, outside of
 * whatever commit or vblank this is. */
static void schedule_disabled(struct wla_output *out)
{
	if (out->disabled_idle) {
		return;
	}
	struct wl_event_loop *loop = wl_display_get_event_loop(out->backend->display);
	out->disabled_idle = wl_event_loop_add_idle(loop, handle_disabled_idle, out);
}

static void handle_present(struct wla_crtc *crtc, const struct wla_present *ev, void *data)
{
	struct wla_output *out = data;
	struct timespec when = ev->when;
	struct wlr_output_event_present event = {
		.output = &out->base,
		.commit_seq = (uint32_t)ev->commit_seq,
		.presented = ev->presented,
		.when = ev->presented ? &when : NULL,
		.seq = (unsigned)ev->seq,
		.refresh = (int)ev->refresh_ns,
		.flags = present_flags(ev->flags),
	};
	if (ev->presented) {
		out->stats.frames_presented++;
		out->stats.frames_client_planes += (ev->flags & WLA_PRESENT_CLIENT_PLANE) != 0;
		uint64_t t = wla_timespec_to_ns(&when);
		/* The first present of the restarting commit or a later one
		 * (a modeset without a buffer has none of its own); frames
		 * queued before it are the old timing's. */
		if (out->restart_pending &&
				(int32_t)((uint32_t)ev->commit_seq - out->restart_commit_seq) >= 0) {
			out->restart_pending = false;
			out->last_present_ns = 0;
		} else {
			if (out->last_present_ns) {
				out->intervals[out->n_intervals++ % WLA_STATS_WINDOW] =
					t - out->last_present_ns;
			}
			out->last_present_ns = t;
		}
	} else if (ev->discarded) {
		out->stats.frames_discarded++;
	} else if (ev->failed) {
		/* The driver turned the CRTC off: the output is off now. */
		frame_done_without_event(out);
		schedule_disabled(out);
	} else {
		/* Cancelled with its CRTC: wlroots would refuse every buffer
		 * after a re-enable while it waits for this frame's event, and
		 * a frame event now would come inside the disabling commit. */
		frame_done_without_event(out);
	}
	/* A present listener may commit, or end the output (unplugging its
	 * connector waits for the event to be over, wla_backend_unplug_connector;
	 * a wlr_output_destroy of its own is unsafe inside wlroots' emission,
	 * but at least we touch nothing after it). Events are not delivered
	 * from inside a listener: this does not nest. */
	if (!wla_output_send_present(out, &event)) {
		return;
	}
	/* Not for a frame that never latched: that happens inside the commit
	 * disabling the output, where a frame handler must not commit again. */
	if (ev->presented) {
		wla_output_panel_frame_latched(out);
		if (out->cursor_dirty && crtc->queued == 0) {
			commit_cursor(out);
		}
		send_frame_if_room(out);
	}
}

bool wla_output_send_present(struct wla_output *out, struct wlr_output_event_present *event)
{
	wla_hold(&out->hold);
	wlr_output_send_present(&out->base, event);
	return wla_release(&out->hold, free, out);
}

/* The queue drained: a cursor that waited behind states without present
 * events (cursor states, an enable without a buffer) goes now. */
static void handle_idle(struct wla_crtc *crtc, void *data)
{
	struct wla_output *out = data;
	if (out->cursor_dirty && crtc->state->active) {
		commit_cursor(out);
	}
}

bool wla_plane_add_formats_to(struct wlr_drm_format_set *set, const struct wla_plane *plane)
{
	for (size_t i = 0; i < plane->n_formats; i++) {
		const struct wla_format *f = &plane->formats[i];
		for (size_t m = 0; m < f->n_modifiers; m++) {
			if (!wlr_drm_format_set_add(set, f->format, f->modifiers[m])) {
				return false;
			}
		}
	}
	return true;
}

static bool add_modes(struct wlr_output *wo, const struct wla_connector *conn)
{
	for (size_t i = 0; i < conn->n_modes; i++) {
		if (!append_mode(wo, &conn->modes[i])) {
			wlr_log(WLR_ERROR, "output %s: out of memory for mode %zu of %zu",
				conn->name, i, conn->n_modes);
			return false;
		}
	}
	return true;
}

/* The panel configured behind conn's output, NULL if none. */
static const struct wla_config_panel *panel_of(struct wla_backend *backend,
	const struct wla_connector *conn)
{
	for (size_t i = 0; i < backend->config.n_outputs; i++) {
		const struct wla_config_output *co = &backend->config.outputs[i];
		if (strcmp(co->name, conn->name) == 0 && co->panel.chip[0]) {
			return &co->panel;
		}
	}
	return NULL;
}

struct wla_output *wla_output_find_named(struct wla_backend *backend, const char *name)
{
	struct wla_output *out;
	wl_list_for_each(out, &backend->outputs, link) {
		if (strcmp(out->base.name, name) == 0) {
			return out;
		}
	}
	return NULL;
}

struct wla_output *wla_output_find(struct wla_backend *backend, struct wla_connector *conn)
{
	struct wla_output *out;
	wl_list_for_each(out, &backend->outputs, link) {
		if (out->conn == conn) {
			return out;
		}
	}
	return NULL;
}

/* The output whose CRTC crtc is, NULL if none: bound by bind_crtc until
 * unbind_crtc or output_destroy (also while the compositor's destroy
 * listeners run, when the output has left the backend's list). */
static struct wla_output *crtc_holder(struct wla_backend *backend, const struct wla_crtc *crtc)
{
	return crtc->present == handle_present ? crtc->present_data : NULL;
}

/* Whether conn may drive crtc at all: one of its possible CRTCs, with a
 * primary plane (a cursor plane is optional). */
static bool crtc_possible(const struct wla_connector *conn, const struct wla_crtc *crtc)
{
	return crtc && crtc->primary && (conn->possible_crtcs & (1u << crtc->index));
}

bool wla_output_crtc_usable(struct wla_backend *backend, struct wla_connector *conn,
	struct wla_crtc *crtc)
{
	return crtc_possible(conn, crtc) && !crtc_holder(backend, crtc);
}

/* Whether out's CRTC may go to another output: out is off, in wlroots'
 * eyes and on its CRTC, with nothing queued, no event of its last frames
 * still to deliver (their presentation feedback is out's) and no enable
 * waiting for its panel. */
static bool crtc_spare(const struct wla_output *out)
{
	const struct wla_crtc *crtc = out->crtc;
	return !out->base.enabled && !out->has_deferred && !crtc->state->enable &&
		crtc->queued == 0 && !wla_crtc_has_events(crtc);
}

/* Make crtc out's: its formats, its planes, its flip queue's policy and
 * present events. false (logged) if memory ran out; out then has none. */
static bool bind_crtc(struct wla_output *out, struct wla_crtc *crtc)
{
	struct wlr_drm_format_set primary = { 0 }, cursor = { 0 };
	if (!wla_plane_add_formats_to(&primary, crtc->primary) ||
			(crtc->cursor && !wla_plane_add_formats_to(&cursor, crtc->cursor))) {
		wlr_log(WLR_ERROR, "output %s: out of memory for the formats of %s",
			out->conn->name, crtc->name);
		wlr_drm_format_set_finish(&primary);
		wlr_drm_format_set_finish(&cursor);
		return false;
	}
	wlr_drm_format_set_finish(&out->primary_formats);
	wlr_drm_format_set_finish(&out->cursor_formats);
	out->primary_formats = primary;
	out->cursor_formats = cursor;
	out->crtc = crtc;
	/* The planes it may use are its CRTC's. */
	wla_output_planes_finish(out);
	if (!wla_output_planes_init(out)) {
		out->crtc = NULL;
		return false;
	}
	/* The flip queue's policy is the configuration's, whatever the driver. */
	struct wla_backend *backend = out->backend;
	crtc->queue_depth = backend->config.flip_depth ? backend->config.flip_depth : 1;
	crtc->mailbox = backend->config.flip_mailbox;
	crtc->present = handle_present;
	crtc->idle = handle_idle;
	crtc->present_data = out;
	return true;
}

/* out, off, gives its CRTC up: it has none until it is enabled again. */
static void unbind_crtc(struct wla_output *out)
{
	struct wla_crtc *crtc = out->crtc;
	crtc->present = NULL;
	crtc->idle = NULL;
	crtc->present_data = NULL;
	/* Nothing of it may reach the next holder (the queue is empty). */
	wla_crtc_drop_events(crtc);
	out->crtc = NULL;
	wlr_drm_format_set_finish(&out->primary_formats);
	wlr_drm_format_set_finish(&out->cursor_formats);
	wla_output_planes_finish(out);
	if (!wla_output_planes_init(out)) {
		/* Without a CRTC it has no planes: nothing was allocated that
		 * could fail but the struct, and the offer API checks for it. */
		wlr_log(WLR_ERROR, "output %s: its plane list is gone", out->base.name);
	}
}

struct wla_crtc *wla_output_free_crtc(struct wla_backend *backend, struct wla_device *dev,
	struct wla_connector *conn)
{
	for (size_t i = 0; i < dev->n_crtcs; i++) {
		if (wla_output_crtc_usable(backend, conn, dev->crtcs[i])) {
			return dev->crtcs[i];
		}
	}
	return NULL;
}

bool wla_output_claim_crtc(struct wla_output *out)
{
	if (out->crtc) {
		return true;
	}
	/* A CRTC no output has first; else one an output that is off holds
	 * (its connector appeared first), as wlroots' DRM backend
	 * reallocates them: an enabled output keeps its CRTC. Of those, the
	 * one the fewest other outputs without a CRTC could use, so as not to
	 * take the only one another may want next. */
	struct wla_crtc *crtc = NULL;
	struct wla_output *victim = NULL;
	struct wla_device *dev = out->dev;
	size_t best = SIZE_MAX;
	for (int pass = 0; pass < 2 && !crtc; pass++) {
		for (size_t i = 0; i < dev->n_crtcs; i++) {
			struct wla_crtc *c = dev->crtcs[i];
			if (!crtc_possible(out->conn, c)) {
				continue;
			}
			struct wla_output *holder = crtc_holder(out->backend, c);
			if (pass == 0 ? holder != NULL : !holder || !crtc_spare(holder)) {
				continue;
			}
			size_t wanted = 0;
			struct wla_output *other;
			wl_list_for_each(other, &out->backend->outputs, link) {
				wanted += other != out && !other->crtc && other != holder &&
					other->dev == dev && crtc_possible(other->conn, c);
			}
			if (wanted < best) {
				best = wanted;
				crtc = c;
				victim = holder;
			}
		}
	}
	if (!crtc) {
		wla_output_log(out, WLR_ERROR, "no CRTC for it: each of its possible_crtcs 0x%"
			PRIx32 " drives an output that is on (or turning off) or has no primary "
			"plane", out->conn->possible_crtcs);
		return false;
	}
	if (victim) {
		wla_output_log(out, WLR_INFO, "takes %s from output %s, which is off",
			crtc->name, victim->base.name);
		unbind_crtc(victim);
	}
	if (!bind_crtc(out, crtc)) {
		return false;
	}
	/* What the last holder left on the CRTC (its gamma LUT, adaptive
	 * sync) goes with this output's first commit. */
	out->crtc_taken_over = true;
	wla_output_log(out, WLR_DEBUG, "driven by %s", crtc->name);
	return true;
}

/* The driver found crtc lit for the output's connector at start (KMS: the
 * console's mode, kept; the VDC: as wlroots' headless outputs come): the
 * output starts enabled with that timing. Until the compositor's first
 * commit it has no current mode of the list, as wlroots' DRM backend
 * reports a lit connector (wlr_output_update_custom_mode): a compositor's
 * set_mode of the preferred mode is then a pending mode wlroots keeps, not
 * one it drops as current (sway 1.7 takes the output's mode from that
 * pending mode, and reports an output without one as disabled). The glue
 * finds it the CRTC's own timing: no modeset (only_current_mode). Any
 * other first commit gives it its entry of the list (settle_lit_mode). */
static void adopt_lit_mode(struct wla_output *out, struct wla_crtc *crtc)
{
	const struct wla_mode *mode = &crtc->state->mode;
	wlr_output_update_custom_mode(&out->base, mode->width, mode->height, mode->refresh_mhz);
	out->lit_mode = *mode;
	out->has_lit_mode = true;
	wlr_output_update_enabled(&out->base, true);
	/* The compositor's first frame: a compositor that commits the mode it
	 * finds commits nothing the hardware needs (wlroots drops the enable,
	 * the mode is the CRTC's), and waits for a frame event. */
	out->first_frame = true;
	schedule_frame(out);
	char desc[128];
	wla_output_log(out, WLR_INFO, "lit at start on %s: enabled with %s", crtc->name,
		wla_mode_describe(mode, desc, sizeof(desc)));
}

/* Before a request that leaves the output enabled: a CRTC for it. */
static bool claim_if_enabling(struct wla_output *out)
{
	const struct wlr_output_state *pending = &out->base.pending;
	bool enabled = (pending->committed & WLR_OUTPUT_STATE_ENABLED) ? pending->enabled :
		out->base.enabled;
	return !enabled || wla_output_claim_crtc(out);
}

struct wla_output *wla_output_create(struct wla_backend *backend, struct wla_device *dev,
	struct wla_connector *conn, struct wla_crtc *crtc)
{
	/* Without one the output comes all the same, off, and claims one when
	 * it is enabled (wla_output_claim_crtc). */
	if (!crtc) {
		wlr_log(WLR_INFO, "output %s: every CRTC of its possible_crtcs 0x%" PRIx32 " is "
			"another output's or has no primary plane; it claims one when enabled",
			conn->name, conn->possible_crtcs);
	}
	assert(!crtc || wla_output_crtc_usable(backend, conn, crtc));
	struct wla_output *out = calloc(1, sizeof(*out));
	if (!out) {
		wlr_log(WLR_ERROR, "output %s: out of memory", conn->name);
		return NULL;
	}
	out->backend = backend;
	out->dev = dev;
	out->conn = conn;

	struct wlr_output *wo = &out->base;
	wlr_output_init(wo, &backend->base, &output_impl, backend->display);
	wl_list_insert(backend->outputs.prev, &out->link);
	/* First of its destroy listeners, whoever destroys it. */
	out->destroying.notify = handle_output_destroying;
	wl_signal_add(&wo->events.destroy, &out->destroying);
	if (!wla_output_planes_init(out) || !add_modes(wo, conn) ||
			(crtc && !bind_crtc(out, crtc))) {
		wlr_output_destroy(wo);
		return NULL;
	}
	wlr_output_set_name(wo, conn->name);
	/* As wlroots' DRM backend names an output: make, model and serial
	 * from the monitor (its EDID), which sway's output configuration and
	 * kanshi match; where the driver knows none, wlatomic and the device. */
	char description[160];
	if (conn->make[0]) {
		/* wlr_output's fields are shorter: cut, as wlroots cuts. */
		snprintf(wo->make, sizeof(wo->make), "%.*s", (int)sizeof(wo->make) - 1,
			conn->make);
		snprintf(wo->model, sizeof(wo->model), "%.*s", (int)sizeof(wo->model) - 1,
			conn->model);
		snprintf(wo->serial, sizeof(wo->serial), "%.*s", (int)sizeof(wo->serial) - 1,
			conn->serial);
		snprintf(description, sizeof(description), "%s %s%s%s (%s)", wo->make, wo->model,
			wo->serial[0] ? " " : "", wo->serial, conn->name);
	} else {
		snprintf(wo->make, sizeof(wo->make), "wlatomic");
		snprintf(wo->model, sizeof(wo->model), "%s", dev->name);
		snprintf(description, sizeof(description), "wlatomic %s display %s", dev->name,
			conn->name);
	}
	wlr_output_set_description(wo, description);
	/* A panel mounted turned: the transform that shows pictures upright is
	 * the compositor's to apply (wla_output_get_panel_orientation), as
	 * wlroots' DRM backend leaves it to sway 1.8 and later. */
	if (conn->orientation != WLA_ORIENTATION_NORMAL) {
		wla_output_log(out, WLR_INFO, "panel orientation: transform %d is the hint",
			(int)orientation_transform(conn->orientation));
	}
	/* A head-mounted display: as wlroots' DRM backend marks it, for the
	 * compositor to leave alone (or lease, where it can). */
	wo->non_desktop = conn->non_desktop;
	if (conn->non_desktop) {
		wlr_log(WLR_INFO, "output %s: non-desktop (a head-mounted display): marked "
			"so for the compositor", conn->name);
	}
	wo->phys_width = (int32_t)conn->phys_width_mm;
	wo->phys_height = (int32_t)conn->phys_height_mm;
	const struct wla_config_panel *panel = panel_of(backend, conn);
	if (crtc && crtc->state->active && conn->state->crtc == crtc) {
		if (panel) {
			/* Its panel is powered by us, in order: the CRTC the
			 * console left lit goes off first. */
			wlr_log(WLR_INFO, "output %s: lit at start on %s, turned off: its panel "
				"%s powers up in order", conn->name, crtc->name, panel->chip);
			if (wla_output_commit_request(out, &(struct wla_output_request){
					.enabled = false }) < 0) {
				wlr_output_destroy(wo);
				return NULL;
			}
		} else {
			adopt_lit_mode(out, crtc);
		}
	}

	if (panel) {
		wla_output_panel_init(out, panel);
	}
	/* A new_output listener may destroy the output, or the backend with
	 * it (the caller holds the backend): its pointer comes only if it is
	 * still there. */
	wla_hold(&out->hold);
	wl_signal_emit(&backend->base.events.new_output, wo);
	if (!wla_release(&out->hold, free, out)) {
		return NULL;
	}
	wla_input_output_added(backend->input, out);
	return out;
}

WLA_EXPORT bool wla_output_is_wla(struct wlr_output *output)
{
	return output && output->impl == &output_impl;
}

WLA_EXPORT enum wl_output_transform wla_output_get_panel_orientation(struct wlr_output *output)
{
	if (!wla_output_is_wla(output)) {
		return WL_OUTPUT_TRANSFORM_NORMAL;
	}
	return orientation_transform(output_from_wlr(output)->conn->orientation);
}

WLA_EXPORT bool wla_output_scanout_copies(struct wlr_output *output)
{
	return wla_output_is_wla(output) && output_from_wlr(output)->dev->scanout_copies;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

WLA_EXPORT bool wla_output_get_frame_deadline(struct wlr_output *output,
	struct wla_frame_deadline *deadline)
{
	if (!wla_output_is_wla(output)) {
		return false;
	}
	struct wla_output *out = output_from_wlr(output);
	struct wla_vblank_counters counters = { 0 };
	uint64_t latch, commit_by;
	if (!out->crtc || !wla_crtc_next_latch(out->crtc, &latch, &commit_by)) {
		return false;
	}
	wla_crtc_get_counters(out->crtc, &counters);
	const struct wla_crtc *crtc = output_crtc(out);
	deadline->latch = wla_timespec_from_ns(latch);
	deadline->commit_by = wla_timespec_from_ns(commit_by);
	deadline->refresh_ns = counters.refresh_ns;
	deadline->queued = crtc->pending_frames;
	deadline->queue_depth = crtc->queue_depth;
	return true;
}

WLA_EXPORT bool wla_output_get_stats(struct wlr_output *output,
	struct wla_output_stats *stats)
{
	if (!wla_output_is_wla(output)) {
		return false;
	}
	struct wla_output *out = output_from_wlr(output);
	*stats = out->stats;
	size_t n = out->n_intervals < WLA_STATS_WINDOW ? out->n_intervals : WLA_STATS_WINDOW;
	stats->intervals = n;
	if (n > 0) {
		uint64_t *sorted = malloc(n * sizeof(*sorted));
		if (sorted) {
			memcpy(sorted, out->intervals, n * sizeof(*sorted));
			qsort(sorted, n, sizeof(*sorted), compare_u64);
			double sum = 0;
			for (size_t i = 0; i < n; i++) {
				sum += (double)sorted[i];
			}
			stats->interval_min_ns = sorted[0];
			stats->interval_p50_ns = sorted[(n - 1) / 2];
			stats->interval_p99_ns = sorted[(n - 1) * 99 / 100];
			stats->interval_max_ns = sorted[n - 1];
			stats->interval_mean_ns = sum / (double)n;
			free(sorted);
		}
	}
	struct wla_vblank_counters counters = { 0 };
	if (out->crtc) {
		wla_crtc_get_counters(out->crtc, &counters);
	}
	stats->vblanks = counters.vblanks;
	stats->missed_vblanks = counters.missed;
	stats->last_seq = counters.seq;
	return true;
}

WLA_EXPORT struct wla_capture *wla_output_capture(struct wlr_output *output,
	wla_capture_func_t func, void *data)
{
	if (!wla_output_is_wla(output)) {
		wlr_log(WLR_ERROR, "capture: output %s is not a wlatomic output",
			output ? output->name : "(null)");
		return NULL;
	}
	struct wla_output *out = output_from_wlr(output);
	if (!out->crtc || !out->crtc->state->active) {
		wlr_log(WLR_ERROR, "capture: output %s is disabled", output->name);
		return NULL;
	}
	if (!out->dev->capture_funcs) {
		wlr_log(WLR_ERROR, "capture: device %s of output %s cannot capture",
			out->dev->name, output->name);
		return NULL;
	}
	return out->dev->capture_funcs->capture(out->dev, out->crtc, func, data);
}

WLA_EXPORT void wla_capture_cancel(struct wla_capture *capture)
{
	if (capture) {
		capture->dev->capture_funcs->cancel(capture->dev, capture);
	}
}
