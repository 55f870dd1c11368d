/*
 * wlatomic: a wlroots 0.15 backend built on an atomic-modeset core.
 */
#ifndef WLATOMIC_BACKEND_H
#define WLATOMIC_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct wl_display;
struct wlr_backend;
struct wlr_output;
struct wla_config;

/*
 * Create a wlatomic backend on display. With config NULL the defaults plus the
 * WLA_* environment variables are used; otherwise config is copied (the
 * caller keeps ownership of it). Returns NULL after logging one line if the
 * configuration is invalid. The backend is destroyed with
 * wlr_backend_destroy, or with the display.
 */
struct wlr_backend *wla_backend_create(struct wl_display *display,
	const struct wla_config *config);

bool wla_backend_is_wla(struct wlr_backend *backend);
bool wla_output_is_wla(struct wlr_output *output);

/* Figures an output has counted since it was created. */
struct wla_output_stats {
	uint64_t commits;        /* successful wlr_output commits */
	uint64_t frames_presented; /* commits with a buffer that latched */
	uint64_t vblanks;        /* vblanks while the CRTC was active */
	uint64_t missed_vblanks; /* vblanks that passed without a timer wake-up */
	uint64_t refused;        /* commits refused (check failed or busy) */
	uint64_t last_seq;       /* vblank sequence number of the last vblank */
};

/* Copy the output's statistics; false if output is not a wlatomic output. */
bool wla_output_get_stats(struct wlr_output *output, struct wla_output_stats *stats);

/*
 * Number of wlr_buffer locks the backend holds right now (framebuffers of
 * current and pending states, the cursor image waiting for a commit). Zero
 * once every output is disabled: a leak check for tests.
 */
size_t wla_backend_buffer_locks(struct wlr_backend *backend);

#endif
