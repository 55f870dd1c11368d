/*
 * Fuzz target: input lines and scripts (backend/input/), what the control
 * socket, wla_input_command() and --input-script files take from outside.
 *
 * The input is script text for a backend with two outputs (Virtual-1
 * 200x100 enabled, Virtual-2 off) and a virtual touch device on Virtual-1.
 * It goes through wla_input_run_script(), which checks the whole text; the
 * lines are then performed at once, one after the other (the timer would
 * make the fuzzer wait for each `at`), as the control socket does.
 *
 * Invariants:
 *   - a refused script returns -EINVAL after exactly one error line that
 *     names the script, and its done callback never runs;
 *   - every line of an accepted script parses on its own, and its actions
 *     are performed without an error, with events only on our devices; an
 *     action refused when performed leaves no event behind;
 *   - `at` times never go backwards in an accepted script;
 *   - every event's normalised position is within [0, 1);
 *   - nothing leaks (ASan), and the backend is destroyed cleanly after.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_pointer.h>
#include <wlr/types/wlr_touch.h>
#include <wlatomic/config.h>
#include <wlatomic/input.h>
#include "backend/input.h"
#include "backend/wlr.h"
#include "fuzz.h"

#define SCRIPT_MAX (64 * 1024)

struct state {
	struct wlr_output *outputs[2];
	int n_outputs;
	int events, out_of_range;
	struct wl_listener listeners[64];
	int n_listeners;
};

static struct state st;

static void count_event(struct wl_listener *l, void *data)
{
	st.events++;
}

static void check_absolute(struct wl_listener *l, void *data)
{
	struct wlr_event_pointer_motion_absolute *ev = data;
	st.events++;
	st.out_of_range += !(ev->x >= 0 && ev->x < 1 && ev->y >= 0 && ev->y < 1);
}

static void check_touch(struct wl_listener *l, void *data)
{
	struct wlr_event_touch_down *ev = data;
	st.events++;
	st.out_of_range += !(ev->x >= 0 && ev->x < 1 && ev->y >= 0 && ev->y < 1);
}

static void listen(struct wl_signal *signal, wl_notify_func_t fn)
{
	FUZZ_CHECK(st.n_listeners < 64, "too many listeners");
	struct wl_listener *l = &st.listeners[st.n_listeners++];
	l->notify = fn;
	wl_signal_add(signal, l);
}

static void handle_new_input(struct wl_listener *l, void *data)
{
	struct wlr_input_device *dev = data;
	if (dev->type == WLR_INPUT_DEVICE_KEYBOARD) {
		listen(&dev->keyboard->events.key, count_event);
	} else if (dev->type == WLR_INPUT_DEVICE_POINTER) {
		listen(&dev->pointer->events.motion, count_event);
		listen(&dev->pointer->events.motion_absolute, check_absolute);
		listen(&dev->pointer->events.button, count_event);
		listen(&dev->pointer->events.axis, count_event);
	} else if (dev->type == WLR_INPUT_DEVICE_TOUCH) {
		listen(&dev->touch->events.down, check_touch);
		listen(&dev->touch->events.motion, check_touch);
		listen(&dev->touch->events.up, count_event);
	}
}

static void handle_new_output(struct wl_listener *l, void *data)
{
	if (st.n_outputs < 2) {
		st.outputs[st.n_outputs++] = data;
	}
}

static int done_calls;

static void handle_done(void *data, int status, const char *message)
{
	done_calls++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_init();
	if (size > SCRIPT_MAX) {
		return 0;
	}
	char *text = malloc(size + 1);
	FUZZ_CHECK(text, "out of memory");
	memcpy(text, data, size);
	text[size] = '\0';

	memset(&st, 0, sizeof(st));
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.n_outputs = 2;
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ 200, 100, 60000 };
	cfg.outputs[1] = cfg.outputs[0];
	snprintf(cfg.outputs[1].name, sizeof(cfg.outputs[1].name), "Virtual-2");
	snprintf(cfg.control, sizeof(cfg.control), "off");
	snprintf(cfg.virtual_touch, sizeof(cfg.virtual_touch), "Virtual-1");
	struct wl_display *display = wl_display_create();
	struct wlr_backend *backend = wla_backend_create(display, &cfg);
	FUZZ_CHECK(backend, "the backend was not created");
	struct wl_listener new_input = { .notify = handle_new_input };
	struct wl_listener new_output = { .notify = handle_new_output };
	wl_signal_add(&backend->events.new_input, &new_input);
	wl_signal_add(&backend->events.new_output, &new_output);
	FUZZ_CHECK(wlr_backend_start(backend) && st.n_outputs == 2, "no outputs");
	wlr_output_set_mode(st.outputs[0], wlr_output_preferred_mode(st.outputs[0]));
	wlr_output_enable(st.outputs[0], true);
	FUZZ_CHECK(wlr_output_commit(st.outputs[0]), "Virtual-1 does not enable");

	done_calls = 0;
	fuzz_log_clear();
	int ret = wla_input_run_script(backend, "fuzz", text, handle_done, NULL);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL, "run_script returned %d", ret);
	FUZZ_CHECK(fuzz_log_errors == (ret == 0 ? 0 : 1), "%d error lines for status %d",
		fuzz_log_errors, ret);
	FUZZ_CHECK(st.events == 0, "events from inside wla_input_run_script");
	if (ret == 0) {
		struct wla_input *input = wla_backend_from_wlr(backend)->input;
		uint64_t last_at = 0;
		char *save = NULL;
		for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			size_t len = strlen(line);
			if (len && line[len - 1] == '\r') {
				line[len - 1] = '\0';
			}
			const char *s = line + strspn(line, " \t");
			if (!*s || *s == '#') {
				continue;
			}
			struct wla_input_action act;
			char err[WLA_INPUT_ERROR_MAX];
			FUZZ_CHECK(wla_input_parse(input, s, &act, err, sizeof(err)) == 0,
				"a line of an accepted script does not parse alone: %s", err);
			FUZZ_CHECK(!act.has_at || act.at_ms >= last_at, "at went backwards");
			if (act.has_at) {
				last_at = act.at_ms;
			}
			int before = st.events;
			int pret = wla_input_perform(input, &act, err, sizeof(err));
			/* Touch points are state: up before down, or down twice, is a
			 * refusal the parse cannot see. */
			FUZZ_CHECK(pret == 0 || (act.type == WLA_INPUT_TOUCH &&
				(pret == -EINVAL || pret == -EBUSY)), "perform refused: %s", err);
			FUZZ_CHECK(pret == 0 || st.events == before, "a refused action sent events");
			FUZZ_CHECK(pret != 0 || st.events > before, "an action sent no event");
		}
		FUZZ_CHECK(st.out_of_range == 0, "a position outside [0, 1)");
	}
	FUZZ_CHECK(done_calls == 0, "done ran before the loop did");
	wlr_backend_destroy(backend);
	FUZZ_CHECK(done_calls == (ret == 0 ? 1 : 0), "done ran %d times", done_calls);
	/* The devices are gone, and the signals st's listeners were on with them. */
	wl_list_remove(&new_input.link);
	wl_list_remove(&new_output.link);
	wl_display_destroy(display);
	free(text);
	return 0;
}
