/*
 * A compositor's first steps, unmodified: wlr_backend_autocreate, start,
 * wait for outputs. Linked with wlroots only; run with the preload module
 * in LD_PRELOAD. Prints what it got, one line each:
 *   backend multi
 *   sub <kind>              (wlatomic, headless, wayland, x11, drm, libinput, other)
 *   session seat|none       (wlr_backend_get_session of what autocreate gave,
 *                            as sway asks it for its VT keys)
 *   output <name> <w>x<h>@<mHz> modes=<n>
 * and "autocreate failed" (exit 1) when autocreate returns NULL.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/backend/drm.h>
#include <wlr/backend/headless.h>
#include <wlr/backend/libinput.h>
#include <wlr/backend/multi.h>
#include <wlr/backend/wayland.h>
#include <wlr/backend/x11.h>
#include <wlr/types/wlr_output.h>
#include <wlr/util/log.h>

static struct wl_listener new_output;
static int outputs;

static void sub_kind(struct wlr_backend *backend, void *data)
{
	bool (*is_wla)(struct wlr_backend *) =
		(bool (*)(struct wlr_backend *))dlsym(RTLD_DEFAULT, "wla_backend_is_wla");
	const char *kind = "other";
	if (is_wla && is_wla(backend)) {
		kind = "wlatomic";
	} else if (wlr_backend_is_headless(backend)) {
		kind = "headless";
	} else if (wlr_backend_is_wl(backend)) {
		kind = "wayland";
	} else if (wlr_backend_is_x11(backend)) {
		kind = "x11";
	} else if (wlr_backend_is_drm(backend)) {
		kind = "drm";
	} else if (wlr_backend_is_libinput(backend)) {
		kind = "libinput";
	}
	printf("sub %s\n", kind);
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	struct wlr_output *output = data;
	struct wlr_output_mode *pref = wlr_output_preferred_mode(output);
	printf("output %s %dx%d@%d modes=%d\n", output->name, pref ? pref->width : 0,
		pref ? pref->height : 0, pref ? pref->refresh : 0, wl_list_length(&output->modes));
	outputs++;
}

int main(int argc, char *argv[])
{
	/* PROBE_VERBOSE: wlroots' and wlatomic's info lines too. */
	wlr_log_init(getenv("PROBE_VERBOSE") ? WLR_INFO : WLR_ERROR, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct wl_display *display = wl_display_create();
	struct wlr_backend *backend = wlr_backend_autocreate(display);
	if (!backend) {
		printf("autocreate failed\n");
		wl_display_destroy(display);
		return 1;
	}
	printf("backend %s\n", wlr_backend_is_multi(backend) ? "multi" : "single");
	if (wlr_backend_is_multi(backend)) {
		wlr_multi_for_each_backend(backend, sub_kind, NULL);
	}
	printf("session %s\n", wlr_backend_get_session(backend) ? "seat" : "none");
	new_output.notify = handle_new_output;
	wl_signal_add(&backend->events.new_output, &new_output);
	if (!wlr_backend_start(backend)) {
		printf("start failed\n");
		wl_display_destroy(display);
		return 1;
	}
	/* Outputs are announced from start or its idle callbacks, nothing
	 * later: one dispatch runs every idle callback (and those they add)
	 * without waiting, so the count is complete whatever the load. */
	wl_event_loop_dispatch(wl_display_get_event_loop(display), 0);
	printf("outputs %d\n", outputs);
	wl_list_remove(&new_output.link);
	wl_display_destroy_clients(display);
	wlr_backend_destroy(backend);
	wl_display_destroy(display);
	return 0;
}
