/*
 * A wlatomic backend on a fresh Wayland display, as the tests and the
 * planes benchmark make one.
 */
#ifndef TESTS_LIB_BACKEND_H
#define TESTS_LIB_BACKEND_H

#include <stddef.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlatomic/backend.h>
#include <wlatomic/config.h>

/* A display (into *display, with its loop into *loop) and a wlatomic
 * backend of cfg on it; new_output, its notify set by the caller, listens
 * for outputs unless NULL. Returns the backend, or NULL if it could not be
 * made: the display is the caller's to destroy either way. */
static inline struct wlr_backend *test_backend_create(struct wl_display **display,
	struct wl_event_loop **loop, const struct wla_config *cfg, struct wl_listener *new_output)
{
	*display = wl_display_create();
	*loop = wl_display_get_event_loop(*display);
	struct wlr_backend *backend = wla_backend_create(*display, cfg);
	if (backend && new_output) {
		wl_signal_add(&backend->events.new_output, new_output);
	}
	return backend;
}

#endif
