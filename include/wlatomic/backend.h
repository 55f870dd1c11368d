/*
 * wlatomic: a wlroots 0.15 backend built on an atomic-modeset core.
 */
#ifndef WLATOMIC_BACKEND_H
#define WLATOMIC_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>
#include <wayland-server-protocol.h>

struct wl_display;
struct wlr_backend;
struct wlr_output;
struct wlr_session;
struct wla_config;
struct wla_config_mode;

/*
 * Create a wlatomic backend on display. With config NULL the defaults plus the
 * WLA_* environment variables are used; otherwise config is copied (the
 * caller keeps ownership of it). Returns NULL after logging one line if the
 * configuration is invalid. The backend is destroyed with
 * wlr_backend_destroy, or with the display.
 */
struct wlr_backend *wla_backend_create(struct wl_display *display,
	const struct wla_config *config);
/*
 * As wla_backend_create, where the compositor has a seat session already
 * (wlr_session_create, as for wlroots' libinput backend): the KMS driver
 * opens its card through that session and follows its VT switches, rather
 * than asking libseat for a second one (a VT-bound seat is given to one
 * client only). The session must outlive the backend, or its destroy ends
 * the KMS driver's use of the card. NULL (logged) if session is NULL.
 */
struct wlr_backend *wla_backend_create_with_session(struct wl_display *display,
	const struct wla_config *config, struct wlr_session *session);

bool wla_backend_is_wla(struct wlr_backend *backend);
bool wla_output_is_wla(struct wlr_output *output);
/* Whether the output scans out copies of the buffers committed (KMS on a
 * card without PRIME, such as bochs): then no present is zero-copy. */
bool wla_output_scanout_copies(struct wlr_output *output);
/* How the output's panel is mounted, as the transform that shows a picture
 * upright on it (KMS: the connector's "panel orientation", as wlroots'
 * wlr_drm_connector_get_panel_orientation gives it; the VDC: the
 * configuration's orientation): a hint for the compositor to apply with
 * wlr_output_set_transform unless configured otherwise.
 * WL_OUTPUT_TRANSFORM_NORMAL for a panel mounted upright or an output that
 * is not wlatomic's. */
enum wl_output_transform wla_output_get_panel_orientation(struct wlr_output *output);

/* Present intervals kept for the distribution in wla_output_stats. */
#define WLA_STATS_WINDOW 4096

/* Figures an output has counted since it was created. */
struct wla_output_stats {
	uint64_t commits;            /* successful wlr_output commits */
	uint64_t frames_committed;   /* of those, commits with a buffer */
	uint64_t frames_presented;   /* frames that latched (present, presented) */
	uint64_t frames_discarded;   /* frames replaced while queued (mailbox) */
	/* Of the frames presented, those whose state put a client's own buffer
	 * on a plane (an overlay, or the primary: direct scan-out). */
	uint64_t frames_client_planes;
	uint64_t refused;            /* commits refused, for any reason */
	uint64_t refused_queue_full; /* of those, because the flip queue was full */
	uint64_t vblanks;            /* vblanks while the CRTC was active */
	uint64_t missed_vblanks;     /* vblanks a frame was waiting for and missed */
	uint64_t last_seq;           /* vblank sequence number of the last vblank */
	/* Intervals between consecutive presented frames over the last
	 * WLA_STATS_WINDOW of them, in nanoseconds (all 0 before two frames).
	 * The first frame of an enable, a mode change or a link retrain ends
	 * no interval and starts none: it came at the vblank the CRTC came on
	 * at, and the time before it (the output off) was no frame's. */
	uint64_t intervals;
	uint64_t interval_min_ns, interval_p50_ns, interval_p99_ns, interval_max_ns;
	double interval_mean_ns;
};

/* Copy the output's statistics; false if output is not a wlatomic output. */
bool wla_output_get_stats(struct wlr_output *output, struct wla_output_stats *stats);

/* When the next frame of an output will reach the screen, for compositors
 * that render as late as they can. All times on CLOCK_MONOTONIC. */
struct wla_frame_deadline {
	/* The vblank at which a frame committed now latches (after the frames
	 * already queued). */
	struct timespec latch;
	/* The latest moment a commit must arrive to make that vblank. */
	struct timespec commit_by;
	uint64_t refresh_ns;
	uint32_t queued;      /* frames waiting to latch now */
	uint32_t queue_depth; /* how many may wait (a modeset may wait one past) */
};

/* Fill deadline for output; false if it is not a wlatomic output or is off. */
bool wla_output_get_frame_deadline(struct wlr_output *output,
	struct wla_frame_deadline *deadline);

/*
 * Number of wlr_buffer locks the backend's states hold right now
 * (framebuffers of current and pending states, a buffer waiting for its
 * panel). Zero once every output is disabled: a leak check for tests. An
 * output's cursor image is not counted: it is held apart for as long as it
 * is the output's cursor, whatever the output's state, and let go when the
 * cursor is hidden or replaced or the output is destroyed.
 */
size_t wla_backend_buffer_locks(struct wlr_backend *backend);

/*
 * Hot-plug a virtual connector of the virtual display controller: name (not
 * yet used) with modes (the first preferred, the same limits as configured
 * modes). Once the backend has started, the compositor sees a new
 * wlr_output. 0, or -EINVAL after one error line.
 */
int wla_backend_plug_connector(struct wlr_backend *backend, const char *name,
	const struct wla_config_mode *modes, size_t n_modes);
/*
 * Unplug it: its CRTC is turned off (what it had queued is reported not
 * presented and released), then its wlr_output is destroyed. Called from a
 * present listener of that connector's own output, the unplug happens once
 * the present event is over (wlroots emits it on the output). 0, -ENOENT
 * (logged) if no connector has that name, or the driver's negative errno.
 */
int wla_backend_unplug_connector(struct wlr_backend *backend, const char *name);

/*
 * Break the link of the connector named name, as a failing cable or DP link
 * does (the kernel's link-status BAD), on a driver of virtual connectors
 * (the VDC): its monitor shows black, and the backend sets the output up
 * again with its mode, as it does for a real card's link-status BAD.
 * 0, -ENOENT if no connector has that name, -EINVAL if backend is not a
 * wlatomic backend (both logged).
 */
int wla_backend_break_link(struct wlr_backend *backend, const char *name);

#endif
