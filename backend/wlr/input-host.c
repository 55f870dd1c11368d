/*
 * The glue's side of input (backend/input/ is a leaf that knows nothing of
 * the backend): the public input API of include/wlatomic/input.h, which
 * takes a wlr_backend, finds the backend's input and drives the leaf
 * through its own interface (include/backend/input.h); and the host the
 * leaf asks the backend through (wla_backend_create_input).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/input-event-codes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <wlr/util/log.h>
#include <wlatomic/backend.h>
#include <wlatomic/input.h>
#include "backend/input.h"
#include "backend/kms.h"
#include "backend/panel.h"
#include "backend/session.h"
#include "backend/wlr.h"
#include "util.h"

/* Input's host (include/backend/input.h): all backend/input asks of the
 * backend, answered from the outputs and their panels. */

static void input_announce(void *data, struct wlr_input_device *dev)
{
	struct wla_backend *backend = data;
	wl_signal_emit(&backend->base.events.new_input, dev);
}

static bool input_get_output(void *data, const char *name, struct wla_input_output *info)
{
	struct wla_backend *backend = data;
	struct wla_output *out = wla_output_find_named(backend, name);
	if (!out) {
		return false;
	}
	wlr_output_effective_resolution(&out->base, &info->width, &info->height);
	info->enabled = out->base.enabled;
	info->shows = out->base.enabled && !out->panel_failed;
	if (info->shows && out->panel) {
		enum wla_panel_state state =
			wla_panel_get_state(wla_panel_loop_get_panel(out->panel));
		info->shows = state == WLA_PANEL_ON || state == WLA_PANEL_LIT;
	}
	return true;
}

static const char *input_output_name(void *data, struct wla_output *out)
{
	return out->base.name;
}

static const char *input_first_output(void *data)
{
	struct wla_backend *backend = data;
	if (wl_list_empty(&backend->outputs)) {
		return NULL;
	}
	struct wla_output *out = wl_container_of(backend->outputs.next, out, link);
	return out->base.name;
}

/* The session the KMS card came from: its seat opens the input devices
 * too (NULL on the VDC: opened directly). */
static struct wla_session *input_session(struct wla_backend *backend)
{
	for (size_t d = 0; d < backend->n_devices; d++) {
		struct wla_device *dev = backend->devices[d];
		if (wla_device_is_kms(dev)) {
			return wla_kms_from_device(dev)->card->session;
		}
	}
	return NULL;
}

static int input_open_device(void *data, const char *path, int flags)
{
	struct wla_session *session = input_session(data);
	if (session) {
		return wla_session_open_input(session, path, flags);
	}
	int fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void input_close_device(void *data, int fd)
{
	struct wla_session *session = input_session(data);
	if (session) {
		wla_session_close_input(session, fd);
	} else {
		close(fd);
	}
}

static bool input_seated(void *data)
{
	return wla_session_seats_input(input_session(data));
}

/* The seat that opened the input devices ends (the compositor's seat goes
 * before us at the display's end): they are closed now, through it. */
static void handle_seat_end(struct wl_listener *listener, void *data)
{
	struct wla_backend *backend = wl_container_of(listener, backend, seat_end);
	wl_list_remove(&backend->seat_end.link);
	wl_list_init(&backend->seat_end.link);
	/* Their removal is told to the compositor, whose listener may destroy
	 * the backend. */
	wla_hold(&backend->hold);
	struct wla_input *input = backend->input; /* NULL once destroyed */
	wla_input_hold(input);
	wla_libinput_close_all(input, "the seat's session ended");
	wla_input_release(input);
	wla_backend_release(backend);
}

struct wla_input *wla_backend_create_input(struct wla_backend *backend,
	struct wl_event_loop *loop)
{
	wl_list_init(&backend->seat_end.link);
	const struct wla_input_host input_host = {
		.announce = input_announce,
		.get_output = input_get_output,
		.output_name = input_output_name,
		.first_output = input_first_output,
		.open_device = input_open_device,
		.close_device = input_close_device,
		.seated = input_seated,
		.data = backend,
	};
	struct wla_input *input = wla_input_create(&input_host, loop, &backend->config);
	struct wla_session *session = input_session(backend);
	if (input && session) {
		backend->seat_end.notify = handle_seat_end;
		wl_signal_add(&session->events.seat_end, &backend->seat_end);
	}
	return input;
}

static struct wla_input *input_of(struct wlr_backend *wlr_backend, const char *what)
{
	if (!wla_backend_is_wla(wlr_backend)) {
		wlr_log(WLR_ERROR, "input: %s: not a wlatomic backend", what);
		return NULL;
	}
	return wla_backend_from_wlr(wlr_backend)->input;
}

static int api_perform(struct wlr_backend *wlr_backend, const char *what,
	const struct wla_input_action *act)
{
	struct wla_input *input = input_of(wlr_backend, what);
	if (!input) {
		return -EINVAL;
	}
	char err[WLA_INPUT_ERROR_MAX];
	int ret = wla_input_perform(input, act, err, sizeof(err));
	if (ret < 0) {
		wlr_log(WLR_ERROR, "input: %s: %s", what, err);
	}
	return ret;
}

WLA_EXPORT int wla_input_key(struct wlr_backend *backend, uint32_t key, bool pressed)
{
	if (key > KEY_MAX) {
		wlr_log(WLR_ERROR, "input: key %" PRIu32 ": beyond KEY_MAX (%d)", key, KEY_MAX);
		return -EINVAL;
	}
	struct wla_input_action act = { .type = WLA_INPUT_KEY, .code = key,
		.press = pressed ? WLA_INPUT_DOWN : WLA_INPUT_UP };
	return api_perform(backend, "key", &act);
}

WLA_EXPORT int wla_input_type(struct wlr_backend *backend, const char *text)
{
	struct wla_input_action act = { .type = WLA_INPUT_TYPE };
	if (!text || strlen(text) >= sizeof(act.text)) {
		wlr_log(WLR_ERROR, "input: type: %s", text ? "text longer than 511 bytes" :
			"no text");
		return -EINVAL;
	}
	snprintf(act.text, sizeof(act.text), "%s", text);
	return api_perform(backend, "type", &act);
}

WLA_EXPORT int wla_input_pointer_move(struct wlr_backend *backend, const char *output,
	double x, double y)
{
	struct wla_input_action act = { .type = WLA_INPUT_MOVE, .x = x, .y = y };
	if (!output || strlen(output) >= sizeof(act.output)) {
		wlr_log(WLR_ERROR, "input: move: no output named %s", output ? output : "(null)");
		return -ENOENT;
	}
	snprintf(act.output, sizeof(act.output), "%s", output);
	return api_perform(backend, "move", &act);
}

WLA_EXPORT int wla_input_pointer_move_by(struct wlr_backend *backend, double dx, double dy)
{
	if (!isfinite(dx) || !isfinite(dy)) {
		wlr_log(WLR_ERROR, "input: move-by %g,%g: not finite", dx, dy);
		return -EINVAL;
	}
	struct wla_input_action act = { .type = WLA_INPUT_MOVE_BY, .x = dx, .y = dy };
	return api_perform(backend, "move-by", &act);
}

WLA_EXPORT int wla_input_pointer_button(struct wlr_backend *backend, uint32_t button,
	bool pressed)
{
	if (button < BTN_MOUSE || button > BTN_TASK) {
		wlr_log(WLR_ERROR, "input: button %" PRIu32 ": not a pointer button (BTN_MOUSE "
			"%d .. BTN_TASK %d)", button, BTN_MOUSE, BTN_TASK);
		return -EINVAL;
	}
	struct wla_input_action act = { .type = WLA_INPUT_BUTTON, .code = button,
		.press = pressed ? WLA_INPUT_DOWN : WLA_INPUT_UP };
	return api_perform(backend, "button", &act);
}

WLA_EXPORT int wla_input_pointer_axis(struct wlr_backend *backend, bool horizontal, double delta)
{
	if (!isfinite(delta)) {
		wlr_log(WLR_ERROR, "input: axis %g: not finite", delta);
		return -EINVAL;
	}
	struct wla_input_action act = { .type = WLA_INPUT_AXIS, .horizontal = horizontal,
		.delta = delta };
	return api_perform(backend, "axis", &act);
}

static int api_touch(struct wlr_backend *backend, enum wla_input_touch_kind kind, int32_t id,
	double x, double y)
{
	if (id < 0) {
		wlr_log(WLR_ERROR, "input: touch %" PRId32 ": ids are 0 or more", id);
		return -EINVAL;
	}
	struct wla_input_action act = { .type = WLA_INPUT_TOUCH, .touch = kind, .touch_id = id,
		.x = x, .y = y };
	return api_perform(backend, "touch", &act);
}

WLA_EXPORT int wla_input_touch_down(struct wlr_backend *backend, int32_t id, double x, double y)
{
	return api_touch(backend, WLA_INPUT_TOUCH_DOWN, id, x, y);
}

WLA_EXPORT int wla_input_touch_motion(struct wlr_backend *backend, int32_t id, double x,
	double y)
{
	return api_touch(backend, WLA_INPUT_TOUCH_MOTION, id, x, y);
}

WLA_EXPORT int wla_input_touch_up(struct wlr_backend *backend, int32_t id)
{
	return api_touch(backend, WLA_INPUT_TOUCH_UP, id, 0, 0);
}

WLA_EXPORT int wla_input_command(struct wlr_backend *backend, const char *line)
{
	struct wla_input *input = input_of(backend, "command");
	if (!input) {
		return -EINVAL;
	}
	struct wla_input_action act;
	char err[WLA_INPUT_ERROR_MAX];
	int ret = wla_input_parse(input, line ? line : "", &act, err, sizeof(err));
	if (ret == 0) {
		ret = wla_input_perform(input, &act, err, sizeof(err));
	}
	if (ret < 0) {
		wlr_log(WLR_ERROR, "input: '%s': %s", line ? line : "", err);
	}
	return ret;
}

WLA_EXPORT int wla_input_run_script(struct wlr_backend *backend, const char *name,
	const char *text, wla_input_done_func done, void *data)
{
	struct wla_input *input = input_of(backend, "script");
	if (!input) {
		return -EINVAL;
	}
	char err[WLA_INPUT_ERROR_MAX + 128];
	if (!wla_input_script_start(input, name ? name : "(unnamed)", text ? text : "", done,
			data, err, sizeof(err))) {
		wlr_log(WLR_ERROR, "input: %s", err);
		return -EINVAL;
	}
	return 0;
}
