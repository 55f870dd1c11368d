/*
 * An output's panel: power-on before its CRTC is enabled, the backlight
 * after the first latched frame, the CRTC off once the backlight is, the
 * supply last. The panel's events drive the CRTC; commits only ask.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/util/log.h>
#include "backend/wlr.h"

static struct wla_panel *output_panel(struct wla_output *out)
{
	return wla_panel_loop_get_panel(out->panel);
}

/* Let go of the deferred request; cancelled: it will never reach the
 * screen, so wlroots must stop waiting for its frame event (it would refuse
 * every later buffer). */
static bool release_deferred(struct wla_output *out, bool cancelled)
{
	if (!out->has_deferred) {
		return true;
	}
	out->has_deferred = false;
	wla_output_request_finish(&out->deferred);
	if (out->deferred.buffer) {
		out->backend->buffer_locks--;
		wlr_buffer_unlock(out->deferred.buffer);
		if (cancelled) {
			out->base.frame_pending = false;
			/* wlroots' presentation feedback waits for this commit's
			 * event: it never reached the screen. */
			struct wlr_output_event_present event = {
				.output = &out->base,
				.commit_seq = out->deferred.commit_seq,
				.presented = false,
			};
			return wla_output_send_present(out, &event);
		}
	}
	return true;
}

/* False if a listener of its event destroyed the output. */
static bool drop_deferred(struct wla_output *out)
{
	return release_deferred(out, true);
}

static bool keep_deferred(struct wla_output *out, const struct wla_output_request *req)
{
	/* A newer request replaces it (wlroots sets frame_pending again for
	 * it once the commit returns). */
	if (!release_deferred(out, true)) {
		return false;
	}
	out->deferred = *req;
	wla_gamma_lut_get(req->gamma);
	if (req->buffer) {
		/* The pixels must outlive wlroots' pending state. */
		wlr_buffer_lock(req->buffer);
		out->backend->buffer_locks++;
	}
	out->has_deferred = true;
	return true;
}

static void crtc_off(struct wla_output *out)
{
	if (!out->crtc || !out->crtc->state->active) {
		return;
	}
	struct wla_output_request off = { .enabled = false };
	if (wla_output_commit_request(out, &off) < 0) {
		wlr_log(WLR_ERROR, "output %s: could not switch the CRTC off for its panel",
			out->base.name);
	}
}

/* The deferred enable, now that the panel is on. */
static void crtc_on(struct wla_output *out)
{
	if (!out->has_deferred) {
		return;
	}
	struct wla_output_request req = out->deferred;
	int ret = wla_output_commit_request(out, &req);
	if (!release_deferred(out, ret < 0)) {
		return;
	}
	if (ret < 0) {
		wlr_log(WLR_ERROR, "output %s: enabling after the panel's power-on failed: %s",
			out->base.name, strerror(-ret));
		wla_output_panel_request(out, &(struct wla_output_request){ .enabled = false });
		wlr_output_update_enabled(&out->base, false);
		return;
	}
	out->panel_unlit = true;
}

static void handle_panel_event(struct wla_panel *panel, enum wla_panel_event event, int error,
	void *data)
{
	struct wla_output *out = data;
	wlr_log(WLR_DEBUG, "output %s: panel event %s", out->base.name,
		wla_panel_event_name(event));
	switch (event) {
	case WLA_PANEL_EVENT_ON:
		crtc_on(out);
		break;
	case WLA_PANEL_EVENT_BLANKED:
		/* Backlight off: scanout must stop before the supply goes. */
		crtc_off(out);
		break;
	case WLA_PANEL_EVENT_OFF:
		break;
	case WLA_PANEL_EVENT_FAILED:
		if (!drop_deferred(out)) {
			return;
		}
		crtc_off(out);
		out->panel_failed = true;
		out->panel_unlit = false;
		/* The panel has logged the one error line (chip, line, reason). */
		wlr_log(WLR_INFO, "output %s: panel on chip %s failed (%s); the output is off",
			out->base.name, out->panel_chip, strerror(-error));
		if (out->base.enabled) {
			wlr_output_update_enabled(&out->base, false);
		}
		break;
	}
}

void wla_output_panel_init(struct wla_output *out, const struct wla_config_panel *desc)
{
	if (!desc->chip[0]) {
		return;
	}
	out->panel_chip = desc->chip;
	struct wl_event_loop *loop = wl_display_get_event_loop(out->backend->display);
	int error = 0;
	out->panel = wla_panel_loop_create(loop, desc, out->conn->name,
		out->backend->gpio_provider, handle_panel_event, out, &error);
	if (!out->panel) {
		/* Logged by the panel: the output stays off rather than pretend. */
		out->panel_failed = true;
	}
}

void wla_output_panel_blank(struct wla_output *out)
{
	if (out->panel) {
		wla_panel_blank(output_panel(out));
	}
}

void wla_output_panel_finish(struct wla_output *out)
{
	drop_deferred(out);
	if (out->panel) {
		wla_panel_loop_destroy(out->panel);
		out->panel = NULL;
	}
}

bool wla_output_panel_admits(struct wla_output *out, const struct wla_output_request *req)
{
	if (out->panel_failed && req->enabled) {
		wla_output_log(out, WLR_ERROR, "its panel (chip %s) is not usable; the output "
			"stays off", out->panel_chip);
		return false;
	}
	return true;
}

bool wla_output_panel_takes(struct wla_output *out, const struct wla_output_request *req)
{
	if (!out->panel) {
		return false;
	}
	enum wla_panel_state state = wla_panel_get_state(output_panel(out));
	bool powered = state == WLA_PANEL_ON || state == WLA_PANEL_LIT;
	if (req->enabled) {
		return !powered || out->has_deferred;
	}
	return state != WLA_PANEL_OFF || (out->crtc && out->crtc->state->active);
}

int wla_output_panel_request(struct wla_output *out, const struct wla_output_request *req)
{
	struct wla_panel *panel = output_panel(out);
	if (req->enabled) {
		if (!keep_deferred(out, req)) {
			return -ENODEV;
		}
		int ret = wla_panel_power_on(panel);
		if (ret < 0) {
			drop_deferred(out);
			return ret;
		}
		if (ret == 1) {
			crtc_on(out);
		}
		return 0;
	}
	if (!drop_deferred(out)) {
		return -ENODEV;
	}
	out->panel_unlit = false;
	int ret = wla_panel_power_off(panel);
	if (ret == 1) {
		/* Off already (or never powered): nothing waits for BLANKED. */
		crtc_off(out);
	}
	return ret < 0 ? ret : 0;
}

void wla_output_panel_frame_latched(struct wla_output *out)
{
	if (!out->panel || !out->panel_unlit) {
		return;
	}
	out->panel_unlit = false;
	wla_panel_first_frame_latched(output_panel(out));
}

void wla_backend_set_gpio_provider(struct wlr_backend *backend,
	struct wla_gpio_provider *provider)
{
	wla_backend_from_wlr(backend)->gpio_provider = provider;
}
