/*
 * The panel sequencing state machine.
 *
 * Requests only change what is wanted (want_on, want_lit); progress() moves
 * the state one step at a time, and only once the delay of the step before
 * has ended (ready_at): no delay is ever shortened, except by destroy, which
 * says so. The sequences themselves are data (struct wla_config_panel).
 *
 * Where a power-off starts ("the matching point"): the power-off sequence,
 * run from the lit state, passes through line values T_0 (lit), T_1, ...,
 * T_n (off). A power-off starts at the first j whose T_j equals the values
 * the lines have now, so an interrupted power-on (or an unlit panel) joins
 * the off sequence where the designed sequence would have the same lines
 * set, and runs every step from there, delays included. If no T_j matches
 * (hand-written sequences that are not mirror images) it starts at T_0 and
 * runs the whole off sequence.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/util/log.h>
#include "backend/hold.h"
#include "backend/panel.h"

#define NS_PER_MS UINT64_C(1000000)
#define PANEL_NAME_MAX 64
#define STEP_TEXT_MAX (WLA_PANEL_MAX_LINES * (WLA_PANEL_LINE_NAME_MAX + 20))

struct wla_panel {
	char name[PANEL_NAME_MAX];
	struct wla_config_panel desc;
	struct wla_panel_clock clock;
	wla_panel_notify_func_t notify;
	void *notify_data;
	struct wla_gpio_lines *lines;

	uint32_t all;        /* bit of every line */
	uint32_t active_low; /* lines whose logical 1 is a low level */
	uint32_t off_values; /* logical, what the off sequence leaves */
	uint32_t lit_values; /* logical, after power-on and the lit step */
	uint32_t values;     /* logical, now */

	enum wla_panel_state state;
	bool want_on, want_lit;
	/* ON was reached in this cycle and BLANKED not sent yet. */
	bool video;
	size_t next;       /* next step of the running sequence */
	uint64_t ready_at; /* end of the delay of the last step run */
	uint64_t off_since; /* end of the last power-off */
	int error;

	/* Held while it advances (an event's listener may destroy it):
	 * backend/hold.h. */
	struct wla_hold hold;
};

static uint64_t panel_now(struct wla_panel *panel)
{
	return panel->clock.now(panel->clock.data);
}

static uint32_t apply_step(uint32_t values, const struct wla_panel_step *step)
{
	return (values & ~step->mask) | (step->values & step->mask);
}

/* "enable=1 (offset 3) reset=0 (offset 4)" for the lines of mask. */
static void describe_lines(struct wla_panel *panel, uint32_t mask, uint32_t values,
	bool with_values, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < panel->desc.n_lines && used < size; i++) {
		if (!(mask & (UINT32_C(1) << i))) {
			continue;
		}
		const struct wla_panel_line *line = &panel->desc.lines[i];
		int n;
		if (with_values) {
			n = snprintf(buf + used, size - used, "%s%s=%u (offset %u)", used ? " " : "",
				line->name, (unsigned)((values >> i) & 1), line->offset);
		} else {
			n = snprintf(buf + used, size - used, "%s%s (offset %u)", used ? " " : "",
				line->name, line->offset);
		}
		if (n < 0) {
			break;
		}
		used += (size_t)n;
	}
}

static void emit(struct wla_panel *panel, enum wla_panel_event event, int error)
{
	wlr_log(WLR_DEBUG, "panel %s: %s", panel->name, wla_panel_event_name(event));
	if (panel->notify) {
		panel->notify(panel, event, error, panel->notify_data);
	}
}

/* Drives every line to its off value in one call, best effort. */
static void drive_safe_off(struct wla_panel *panel)
{
	int ret = panel->lines->funcs->set(panel->lines, panel->all,
		panel->off_values ^ panel->active_low);
	if (ret < 0) {
		wlr_log(WLR_ERROR, "panel %s: chip '%s': driving all lines to their off values "
			"failed too: %s", panel->name, panel->desc.chip, strerror(-ret));
		return;
	}
	panel->values = panel->off_values;
}

static void fail(struct wla_panel *panel, const struct wla_panel_step *step, const char *what,
	int ret, bool notify)
{
	char text[STEP_TEXT_MAX];
	describe_lines(panel, step->mask, step->values, true, text, sizeof(text));
	wlr_log(WLR_ERROR, "panel %s: chip '%s': %s step setting %s failed: %s; driving all "
		"lines to their off values", panel->name, panel->desc.chip, what, text,
		strerror(-ret));
	drive_safe_off(panel);
	panel->state = WLA_PANEL_FAILED;
	panel->error = ret;
	panel->want_on = panel->want_lit = panel->video = false;
	if (notify) {
		emit(panel, WLA_PANEL_EVENT_FAILED, ret);
	}
}

/* One provider call for the step; false if it failed (panel now FAILED). */
static bool run_step(struct wla_panel *panel, const struct wla_panel_step *step,
	const char *what, uint64_t now, bool notify)
{
	uint32_t values = apply_step(panel->values, step);
	int ret = panel->lines->funcs->set(panel->lines, step->mask,
		(values ^ panel->active_low) & step->mask);
	if (ret < 0) {
		fail(panel, step, what, ret, notify);
		return false;
	}
	panel->values = values;
	/* From the set itself, not from the wake-up that ran it: whatever
	 * ran before it in this advance (an event handler switching a CRTC
	 * off, earlier sets) must not eat into the delay. */
	uint64_t set_at = panel_now(panel);
	panel->ready_at = (set_at > now ? set_at : now) + step->wait_ms * NS_PER_MS;
	return true;
}

static size_t off_point(const struct wla_panel *panel)
{
	uint32_t t = panel->lit_values;
	for (size_t j = 0; j <= panel->desc.n_off; j++) {
		if (t == panel->values) {
			return j;
		}
		if (j < panel->desc.n_off) {
			t = apply_step(t, &panel->desc.off[j]);
		}
	}
	return 0;
}

static void begin_off(struct wla_panel *panel)
{
	panel->state = WLA_PANEL_POWERING_OFF;
	panel->next = off_point(panel);
}

static void begin_on(struct wla_panel *panel)
{
	panel->state = WLA_PANEL_POWERING_ON;
	panel->next = 0;
	panel->ready_at = panel->off_since + panel->desc.min_off_ms * NS_PER_MS;
}

/* Runs what is due at now; false when there is nothing more to do now. */
static bool progress(struct wla_panel *panel, uint64_t now)
{
	const struct wla_config_panel *desc = &panel->desc;
	if (panel->state == WLA_PANEL_OFF || panel->state == WLA_PANEL_FAILED ||
			now < panel->ready_at) {
		return false;
	}
	switch (panel->state) {
	case WLA_PANEL_POWERING_ON:
		if (!panel->want_on) {
			begin_off(panel);
		} else if (panel->next < desc->n_on) {
			run_step(panel, &desc->on[panel->next++], "power-on", now, true);
		} else {
			panel->state = WLA_PANEL_ON;
			panel->video = true;
			emit(panel, WLA_PANEL_EVENT_ON, 0);
		}
		return true;
	case WLA_PANEL_ON:
		if (!panel->want_on) {
			begin_off(panel);
			return true;
		}
		if (!panel->want_lit) {
			return false;
		}
		panel->want_lit = false;
		if (!desc->has_lit || run_step(panel, &desc->lit, "backlight", now, true)) {
			panel->state = WLA_PANEL_LIT;
		}
		return true;
	case WLA_PANEL_LIT:
		if (panel->want_on) {
			return false;
		}
		begin_off(panel);
		return true;
	case WLA_PANEL_POWERING_OFF:
		if (panel->video && panel->next >= (desc->has_lit ? 1u : 0u)) {
			panel->video = false;
			emit(panel, WLA_PANEL_EVENT_BLANKED, 0);
		} else if (panel->next < desc->n_off) {
			run_step(panel, &desc->off[panel->next++], "power-off", now, true);
		} else {
			panel->state = WLA_PANEL_OFF;
			panel->off_since = panel->ready_at;
			if (panel->want_on) {
				begin_on(panel);
			} else {
				emit(panel, WLA_PANEL_EVENT_OFF, 0);
			}
		}
		return true;
	case WLA_PANEL_OFF:
	case WLA_PANEL_FAILED:
		break;
	}
	return false;
}

uint64_t wla_panel_next_deadline_ns(const struct wla_panel *panel)
{
	if (wla_doomed(&panel->hold)) {
		return WLA_PANEL_NO_DEADLINE;
	}
	switch (panel->state) {
	case WLA_PANEL_POWERING_ON:
	case WLA_PANEL_POWERING_OFF:
		return panel->ready_at;
	case WLA_PANEL_ON:
		return !panel->want_on || panel->want_lit ? panel->ready_at : WLA_PANEL_NO_DEADLINE;
	case WLA_PANEL_LIT:
		return !panel->want_on ? panel->ready_at : WLA_PANEL_NO_DEADLINE;
	case WLA_PANEL_OFF:
	case WLA_PANEL_FAILED:
		break;
	}
	return WLA_PANEL_NO_DEADLINE;
}

static void reschedule(struct wla_panel *panel)
{
	if (panel->clock.schedule && !wla_doomed(&panel->hold)) {
		panel->clock.schedule(panel->clock.data, wla_panel_next_deadline_ns(panel));
	}
}

void wla_panel_advance(struct wla_panel *panel, uint64_t now_ns)
{
	wla_hold(&panel->hold);
	while (!wla_doomed(&panel->hold) && progress(panel, now_ns)) {
		/* one step, state change or event at a time */
	}
	if (wla_release(&panel->hold, free, panel)) {
		reschedule(panel);
	}
}

static bool check_desc(const struct wla_config_panel *desc, const char *name)
{
	const char *why = NULL;
	if (!desc->chip[0] || !memchr(desc->chip, '\0', sizeof(desc->chip))) {
		why = "no chip";
	} else if (desc->n_lines == 0 || desc->n_lines > WLA_PANEL_MAX_LINES) {
		why = "number of lines out of 1..16";
	} else if (desc->n_on == 0 || desc->n_on > WLA_PANEL_MAX_STEPS ||
			desc->n_off == 0 || desc->n_off > WLA_PANEL_MAX_STEPS) {
		why = "number of power-on or power-off steps out of 1..16";
	} else {
		uint32_t all = (UINT32_C(1) << desc->n_lines) - 1, in_off = 0;
		for (size_t i = 0; i < desc->n_on; i++) {
			if (desc->on[i].mask & ~all) {
				why = "a power-on step names a line that does not exist";
			}
		}
		for (size_t i = 0; i < desc->n_off; i++) {
			in_off |= desc->off[i].mask;
			if (desc->off[i].mask & ~all) {
				why = "a power-off step names a line that does not exist";
			}
		}
		if (desc->has_lit && (desc->lit.mask & ~all)) {
			why = "the backlight step names a line that does not exist";
		}
		if (!why && in_off != all) {
			why = "a line is set by no power-off step";
		}
	}
	if (why) {
		wlr_log(WLR_ERROR, "panel %s: bad panel description: %s", name, why);
		return false;
	}
	return true;
}

struct wla_panel *wla_panel_create(const struct wla_config_panel *desc, const char *name,
	struct wla_gpio_provider *provider, const struct wla_panel_clock *clock,
	wla_panel_notify_func_t notify, void *notify_data, int *error)
{
	int dummy;
	if (!error) {
		error = &dummy;
	}
	*error = -EINVAL;
	if (!check_desc(desc, name)) {
		return NULL;
	}
	struct wla_panel *panel = calloc(1, sizeof(*panel));
	if (!panel) {
		wlr_log(WLR_ERROR, "panel %s: cannot allocate", name);
		*error = -ENOMEM;
		return NULL;
	}
	snprintf(panel->name, sizeof(panel->name), "%s", name);
	panel->desc = *desc;
	panel->clock = *clock;
	panel->notify = notify;
	panel->notify_data = notify_data;
	panel->all = (UINT32_C(1) << desc->n_lines) - 1;
	for (size_t i = 0; i < desc->n_lines; i++) {
		if (desc->lines[i].active_low) {
			panel->active_low |= UINT32_C(1) << i;
		}
	}
	panel->off_values = wla_panel_off_values(desc);
	uint32_t lit = panel->off_values;
	for (size_t i = 0; i < desc->n_on; i++) {
		lit = apply_step(lit, &desc->on[i]);
	}
	if (desc->has_lit) {
		lit = apply_step(lit, &desc->lit);
	}
	panel->lit_values = lit;

	char consumer[PANEL_NAME_MAX + 16];
	snprintf(consumer, sizeof(consumer), "wlatomic:%s", name);
	uint32_t offsets[WLA_PANEL_MAX_LINES];
	const char *names[WLA_PANEL_MAX_LINES];
	for (size_t i = 0; i < desc->n_lines; i++) {
		offsets[i] = desc->lines[i].offset;
		names[i] = desc->lines[i].name;
	}
	struct wla_gpio_request req = {
		.chip = desc->chip,
		.consumer = consumer,
		.n_lines = desc->n_lines,
		.offsets = offsets,
		.names = names,
		.initial = panel->off_values ^ panel->active_low,
	};
	struct wla_gpio_error err = { .code = -EIO, .line = -1 };
	panel->lines = provider->funcs->request(provider, &req, &err);
	if (!panel->lines) {
		int code = err.code < 0 ? err.code : -EIO;
		const char *sep = err.detail[0] ? " (" : "";
		const char *end = err.detail[0] ? ")" : "";
		if (err.line >= 0 && (size_t)err.line < desc->n_lines) {
			const struct wla_panel_line *line = &desc->lines[err.line];
			wlr_log(WLR_ERROR, "panel %s: chip '%s' line '%s' (offset %u): cannot request "
				"as output: %s%s%s%s", name, desc->chip, line->name, line->offset,
				strerror(-code), sep, err.detail, end);
		} else if (err.open) {
			wlr_log(WLR_ERROR, "panel %s: chip '%s': cannot open: %s%s%s%s", name,
				desc->chip, strerror(-code), sep, err.detail, end);
		} else {
			char text[STEP_TEXT_MAX];
			describe_lines(panel, panel->all, 0, false, text, sizeof(text));
			wlr_log(WLR_ERROR, "panel %s: chip '%s': cannot request lines %s: %s%s%s%s",
				name, desc->chip, text, strerror(-code), sep, err.detail, end);
		}
		free(panel);
		*error = code;
		return NULL;
	}
	panel->values = panel->off_values;
	panel->state = WLA_PANEL_OFF;
	panel->off_since = panel->ready_at = panel_now(panel);
	*error = 0;
	return panel;
}

void wla_panel_blank(struct wla_panel *panel)
{
	if (!panel || wla_doomed(&panel->hold) || !panel->video) {
		return;
	}
	size_t i = panel->state == WLA_PANEL_POWERING_OFF ? panel->next : off_point(panel);
	/* Where progress() sends BLANKED: after the backlight step. */
	size_t blank_at = panel->desc.has_lit ? 1 : 0;
	uint64_t now = panel_now(panel);
	while (i < blank_at && i < panel->desc.n_off &&
			run_step(panel, &panel->desc.off[i], "power-off", now, false)) {
		i++;
	}
	if (panel->state == WLA_PANEL_POWERING_OFF) {
		panel->next = i;
	}
	panel->video = false;
}

void wla_panel_destroy(struct wla_panel *panel)
{
	if (!panel || wla_doomed(&panel->hold)) {
		return;
	}
	if (panel->state != WLA_PANEL_FAILED && panel->values != panel->off_values) {
		uint64_t now = panel_now(panel);
		uint64_t skipped_ns = panel->ready_at > now ? panel->ready_at - now : 0;
		size_t from = panel->state == WLA_PANEL_POWERING_OFF ? panel->next : off_point(panel);
		const char *was = wla_panel_state_name(panel->state);
		size_t i;
		for (i = from; i < panel->desc.n_off; i++) {
			const struct wla_panel_step *step = &panel->desc.off[i];
			if (!run_step(panel, step, "power-off", now, false)) {
				break;
			}
			skipped_ns += step->wait_ms * NS_PER_MS;
		}
		wlr_log(WLR_INFO, "panel %s: destroyed while %s: power-off steps %zu..%zu of %zu "
			"run back to back, %llu ms of delays not waited", panel->name, was,
			from + 1, i, panel->desc.n_off,
			(unsigned long long)((skipped_ns + NS_PER_MS - 1) / NS_PER_MS));
	}
	panel->lines->funcs->release(panel->lines);
	panel->lines = NULL;
	if (wla_hold_doom(&panel->hold)) {
		free(panel);
	}
}

int wla_panel_power_on(struct wla_panel *panel)
{
	if (panel->state == WLA_PANEL_FAILED) {
		wlr_log(WLR_ERROR, "panel %s: power-on refused: chip '%s' failed earlier (%s)",
			panel->name, panel->desc.chip, strerror(-panel->error));
		return -EIO;
	}
	panel->want_on = true;
	int ret = 0;
	switch (panel->state) {
	case WLA_PANEL_OFF:
		begin_on(panel);
		break;
	case WLA_PANEL_ON:
	case WLA_PANEL_LIT:
		ret = 1;
		break;
	case WLA_PANEL_POWERING_ON:
	case WLA_PANEL_POWERING_OFF:
	case WLA_PANEL_FAILED:
		break;
	}
	reschedule(panel);
	return ret;
}

int wla_panel_power_off(struct wla_panel *panel)
{
	if (panel->state == WLA_PANEL_FAILED) {
		return 1;
	}
	panel->want_on = false;
	panel->want_lit = false;
	int ret = 0;
	switch (panel->state) {
	case WLA_PANEL_OFF:
		ret = 1;
		break;
	case WLA_PANEL_POWERING_ON:
		if (panel->next == 0) {
			/* Only the minimum off time was running: nothing to undo. */
			panel->state = WLA_PANEL_OFF;
			ret = 1;
		}
		break;
	case WLA_PANEL_ON:
	case WLA_PANEL_LIT:
	case WLA_PANEL_POWERING_OFF:
	case WLA_PANEL_FAILED:
		break;
	}
	reschedule(panel);
	return ret;
}

int wla_panel_first_frame_latched(struct wla_panel *panel)
{
	if (panel->want_on && (panel->state == WLA_PANEL_ON || panel->state == WLA_PANEL_LIT)) {
		if (panel->state == WLA_PANEL_ON) {
			panel->want_lit = true;
			reschedule(panel);
		}
		return 0;
	}
	wlr_log(WLR_ERROR, "panel %s: first frame latched while %s%s: backlight stays off",
		panel->name, wla_panel_state_name(panel->state),
		panel->want_on ? "" : " with power-off requested");
	return -EINVAL;
}

enum wla_panel_state wla_panel_get_state(const struct wla_panel *panel)
{
	return panel->state;
}

int wla_panel_get_error(const struct wla_panel *panel)
{
	return panel->state == WLA_PANEL_FAILED ? panel->error : 0;
}

uint32_t wla_panel_get_values(const struct wla_panel *panel)
{
	return panel->values;
}

const char *wla_panel_state_name(enum wla_panel_state state)
{
	static const char *const names[] = {
		[WLA_PANEL_OFF] = "off",
		[WLA_PANEL_POWERING_ON] = "powering-on",
		[WLA_PANEL_ON] = "on",
		[WLA_PANEL_LIT] = "lit",
		[WLA_PANEL_POWERING_OFF] = "powering-off",
		[WLA_PANEL_FAILED] = "failed",
	};
	assert((size_t)state < sizeof(names) / sizeof(names[0]));
	return names[state];
}

const char *wla_panel_event_name(enum wla_panel_event event)
{
	static const char *const names[] = {
		[WLA_PANEL_EVENT_ON] = "on",
		[WLA_PANEL_EVENT_BLANKED] = "blanked",
		[WLA_PANEL_EVENT_OFF] = "off",
		[WLA_PANEL_EVENT_FAILED] = "failed",
	};
	assert((size_t)event < sizeof(names) / sizeof(names[0]));
	return names[event];
}
