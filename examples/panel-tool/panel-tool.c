/*
 * wla-panel-tool: runs the power sequence of a panel described in a
 * wlatomic config file against its real GPIO chip (libgpiod), on a
 * wl_event_loop with timers, printing every step with its time since start,
 * for bring-up on a new board.
 *
 *   wla-panel-tool CONFIG [on|off|cycle] [--output NAME] [--hold MS] [--dry-run]
 *
 *   cycle  power on, backlight on, hold MS (default 1000, at least 1), power
 *          off (the default action)
 *   on     power on, backlight on, hold until SIGINT/SIGTERM, then power off
 *   off    request the lines at their safe off values, then release them
 *
 * There is no display here: the ON event counts as the first latched frame.
 * --dry-run records the calls instead of driving a chip. Exit status 0 on
 * success, 1 on any failure (chip missing, line busy, a set failing, a bad
 * config), 2 on bad usage.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wayland-server-core.h>
#include <wlr/util/log.h>
#include "backend/panel.h"
#include "wlatomic/config.h"

enum action { ACTION_CYCLE, ACTION_ON, ACTION_OFF };

struct tool {
	/* A provider that prints each call and forwards it to inner. */
	struct wla_gpio_provider provider;
	struct wla_gpio_lines lines;
	struct wla_gpio_provider *inner;
	struct wla_gpio_lines *inner_lines;
	struct wla_gpio_record record; /* --dry-run */

	const struct wla_config_panel *desc;
	uint64_t start_ns;
	enum action action;
	uint32_t hold_ms;
	struct wl_event_loop *loop;
	struct wla_panel_loop *pl;
	struct wl_event_source *hold_timer;
	bool done, failed, off_requested;
};

static struct tool tool;

static uint64_t now_ns(void *data)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void print_time(void)
{
	uint64_t t = now_ns(NULL) - tool.start_ns;
	printf("%9llu.%03llu ms  ", (unsigned long long)(t / 1000000),
		(unsigned long long)(t / 1000 % 1000));
}

/* "enable=1 (3:high) reset=0 (4:high, active-low)" for physical levels. */
static void print_lines(uint32_t mask, uint32_t levels)
{
	const struct wla_config_panel *desc = tool.desc;
	for (size_t i = 0; i < desc->n_lines && i < WLA_PANEL_MAX_LINES; i++) {
		if (!(mask & (UINT32_C(1) << i))) {
			continue;
		}
		const struct wla_panel_line *line = &desc->lines[i];
		unsigned level = (levels >> i) & 1;
		unsigned logical = level ^ (line->active_low ? 1u : 0u);
		printf(" %s=%u (%u:%s%s)", line->name, logical, line->offset, level ? "high" : "low",
			line->active_low ? ", active-low" : "");
	}
}

static int tool_set(struct wla_gpio_lines *lines, uint32_t mask, uint32_t values)
{
	print_time();
	printf("set");
	print_lines(mask, values);
	int ret = tool.inner_lines->funcs->set(tool.inner_lines, mask, values);
	if (ret < 0) {
		printf("  FAILED: %s", strerror(-ret));
	}
	printf("\n");
	fflush(stdout);
	return ret;
}

static void tool_release(struct wla_gpio_lines *lines)
{
	tool.inner_lines->funcs->release(tool.inner_lines);
	tool.inner_lines = NULL;
	print_time();
	printf("release\n");
}

static const struct wla_gpio_lines_funcs tool_lines_funcs = {
	.set = tool_set,
	.release = tool_release,
};

static struct wla_gpio_lines *tool_request(struct wla_gpio_provider *provider,
	const struct wla_gpio_request *req, struct wla_gpio_error *err)
{
	tool.inner_lines = tool.inner->funcs->request(tool.inner, req, err);
	print_time();
	printf("request chip '%s' as '%s':", req->chip, req->consumer);
	print_lines(req->n_lines >= 32 ? UINT32_MAX : (UINT32_C(1) << req->n_lines) - 1,
		req->initial);
	printf("%s\n", tool.inner_lines ? "" : "  FAILED");
	fflush(stdout);
	if (!tool.inner_lines) {
		return NULL;
	}
	tool.lines.funcs = &tool_lines_funcs;
	return &tool.lines;
}

static const struct wla_gpio_provider_funcs tool_provider_funcs = {
	.request = tool_request,
};

static void request_off(struct wla_panel *panel)
{
	if (tool.off_requested) {
		return;
	}
	tool.off_requested = true;
	print_time();
	printf("power-off requested\n");
	if (wla_panel_power_off(panel) == 1) {
		tool.done = true;
	}
}

static int handle_hold(void *data)
{
	request_off(wla_panel_loop_get_panel(tool.pl));
	return 0;
}

static int handle_signal(int signal, void *data)
{
	print_time();
	printf("%s\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
	if (tool.off_requested) {
		printf("(already powering off: waiting for the off sequence to end)\n");
	}
	request_off(wla_panel_loop_get_panel(tool.pl));
	return 0;
}

static void handle_event(struct wla_panel *panel, enum wla_panel_event event, int error,
	void *data)
{
	print_time();
	switch (event) {
	case WLA_PANEL_EVENT_ON:
		printf("event on: the CRTC may be enabled; no display here, so this counts as "
			"the first latched frame\n");
		wla_panel_first_frame_latched(panel);
		if (tool.action == ACTION_CYCLE) {
			/* 0 would disarm the timer; the backlight step runs first anyway. */
			wl_event_source_timer_update(tool.hold_timer,
				tool.hold_ms ? (int)tool.hold_ms : 1);
		}
		break;
	case WLA_PANEL_EVENT_BLANKED:
		printf("event blanked: the CRTC would be disabled now\n");
		break;
	case WLA_PANEL_EVENT_OFF:
		printf("event off\n");
		tool.done = true;
		break;
	case WLA_PANEL_EVENT_FAILED:
		printf("event failed: %s; lines driven to their off values\n", strerror(-error));
		tool.failed = tool.done = true;
		break;
	}
	fflush(stdout);
}

static int usage(const char *argv0)
{
	fprintf(stderr, "usage: %s CONFIG [on|off|cycle] [--output NAME] [--hold MS] "
		"[--dry-run] [--verbose]\n", argv0);
	return 2;
}

static struct wla_config cfg;

int main(int argc, char *argv[])
{
	const char *config = NULL, *output_name = NULL;
	bool dry_run = false, verbose = false, have_action = false;
	tool.action = ACTION_CYCLE;
	tool.hold_ms = 1000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--output") == 0 && i + 1 < argc) {
			output_name = argv[++i];
		} else if (strcmp(a, "--hold") == 0 && i + 1 < argc) {
			char *end;
			errno = 0;
			unsigned long v = strtoul(argv[++i], &end, 10);
			if (errno || *end || argv[i][0] == '\0' || argv[i][0] == '-' || v > 3600000) {
				fprintf(stderr, "wla-panel-tool: --hold '%s': expected ms, 0..3600000\n",
					argv[i]);
				return 2;
			}
			tool.hold_ms = (uint32_t)v;
		} else if (strcmp(a, "--dry-run") == 0) {
			dry_run = true;
		} else if (strcmp(a, "--verbose") == 0) {
			verbose = true;
		} else if (a[0] == '-') {
			return usage(argv[0]);
		} else if (!config) {
			config = a;
		} else if (!have_action && (strcmp(a, "on") == 0 || strcmp(a, "off") == 0 ||
				strcmp(a, "cycle") == 0)) {
			tool.action = a[1] == 'n' ? ACTION_ON : a[1] == 'f' ? ACTION_OFF : ACTION_CYCLE;
			have_action = true;
		} else {
			return usage(argv[0]);
		}
	}
	if (!config) {
		return usage(argv[0]);
	}
	wlr_log_init(verbose ? WLR_DEBUG : WLR_ERROR, NULL);

	wla_config_init(&cfg);
	if (wla_config_load_file(&cfg, config) < 0) {
		return 1;
	}
	const struct wla_config_output *output = NULL;
	for (size_t i = 0; i < cfg.n_outputs; i++) {
		const struct wla_config_output *o = &cfg.outputs[i];
		if (output_name ? strcmp(o->name, output_name) == 0 : o->panel.chip[0] != '\0') {
			output = o;
			break;
		}
	}
	if (!output) {
		fprintf(stderr, "wla-panel-tool: %s: %s%s%s\n", config,
			output_name ? "no [output] named '" : "no [output] with a panel",
			output_name ? output_name : "", output_name ? "'" : "");
		return 1;
	}
	if (!output->panel.chip[0]) {
		fprintf(stderr, "wla-panel-tool: %s: output '%s' has no panel\n", config,
			output->name);
		return 1;
	}
	tool.desc = &output->panel;
	tool.provider.funcs = &tool_provider_funcs;
	if (dry_run) {
		wla_gpio_record_init(&tool.record, now_ns, NULL);
		tool.inner = &tool.record.provider;
	} else {
		tool.inner = wla_gpiod_provider();
	}

	tool.loop = wl_event_loop_create();
	if (!tool.loop) {
		fprintf(stderr, "wla-panel-tool: cannot create an event loop\n");
		return 1;
	}
	tool.hold_timer = wl_event_loop_add_timer(tool.loop, handle_hold, NULL);
	struct wl_event_source *sigint = wl_event_loop_add_signal(tool.loop, SIGINT,
		handle_signal, NULL);
	struct wl_event_source *sigterm = wl_event_loop_add_signal(tool.loop, SIGTERM,
		handle_signal, NULL);
	if (!tool.hold_timer || !sigint || !sigterm) {
		fprintf(stderr, "wla-panel-tool: cannot add timers and signals to the event loop\n");
		return 1;
	}

	printf("output '%s', chip '%s'%s, %zu lines, %zu power-on + %s + %zu power-off steps, "
		"min off %u ms\n", output->name, output->panel.chip, dry_run ? " (dry run)" : "",
		output->panel.n_lines, output->panel.n_on,
		output->panel.has_lit ? "1 backlight" : "no backlight", output->panel.n_off,
		output->panel.min_off_ms);
	tool.start_ns = now_ns(NULL);
	tool.pl = wla_panel_loop_create(tool.loop, &output->panel, output->name, &tool.provider,
		handle_event, NULL, NULL);
	int status = 1;
	if (!tool.pl) {
		goto out;
	}
	if (tool.action == ACTION_OFF) {
		print_time();
		printf("lines held at their safe off values\n");
		tool.done = true;
	} else {
		struct wla_panel *panel = wla_panel_loop_get_panel(tool.pl);
		/* The first power-on waits the minimum off time, counted from the request. */
		if (wla_panel_power_on(panel) < 0) {
			tool.failed = tool.done = true;
		}
		if (tool.action == ACTION_ON) {
			printf("holding the panel on: SIGINT or SIGTERM powers it off\n");
		}
	}
	while (!tool.done) {
		if (wl_event_loop_dispatch(tool.loop, -1) < 0 && errno != EINTR) {
			fprintf(stderr, "wla-panel-tool: event loop: %s\n", strerror(errno));
			tool.failed = true;
			break;
		}
	}
	status = tool.failed ? 1 : 0;
	wla_panel_loop_destroy(tool.pl);
out:
	wl_event_source_remove(sigint);
	wl_event_source_remove(sigterm);
	wl_event_source_remove(tool.hold_timer);
	wl_event_loop_destroy(tool.loop);
	fflush(stdout);
	return status;
}
