/*
 * The wlroots glue: wlr_backend and wlr_output on top of the devices of the
 * atomic core. It knows drivers only through struct wla_driver_funcs: an
 * output is made of a connector and its CRTC, whatever device they are on.
 */
#ifndef BACKEND_WLR_H
#define BACKEND_WLR_H

#include <wayland-server-core.h>
#include <wlr/backend/interface.h>
#include <wlr/interfaces/wlr_output.h>
#include <wlr/render/drm_format_set.h>
#include <wlatomic/backend.h>
#include <wlatomic/config.h>
#include <wlatomic/planes.h>
#include "backend/atomic.h"
#include "backend/hold.h"
#include "backend/panel.h"

#define WLA_BACKEND_MAX_DEVICES 4

struct wla_backend {
	struct wlr_backend base;
	struct wl_display *display;
	struct wla_config config;
	/* The devices outputs are made from, known only through the driver
	 * interface; the VDC is the default one. */
	struct wla_device *devices[WLA_BACKEND_MAX_DEVICES];
	size_t n_devices;
	struct wl_list outputs; /* wla_output.link */
	/* Every wla_fb wrapper made for this backend (wla_wlr_fb.link): they
	 * end with it, not with the buffers they wrap. */
	struct wl_list fbs;
	bool started;
	/* wlr_buffer locks taken by prepare_fb (and by outputs waiting for
	 * their panel) and not yet dropped. */
	size_t buffer_locks;
	/* Locks on cursor images: held while an output's cursor names one,
	 * whatever the output's state. */
	size_t cursor_locks;
	/* Unplugs asked for from inside the present event of the connector's
	 * own output (wla_unplug.link), done by unplug_idle. */
	struct wl_list unplugs;
	struct wl_event_source *unplug_idle;
	/* Where panels get their GPIO lines (libgpiod unless a test says). */
	struct wla_gpio_provider *gpio_provider;
	/* The control socket, NULL when off or it could not be had. */
	struct wla_control *control;
	/* Input devices (backend/input/). */
	struct wla_input *input;
	struct wl_listener display_destroy;
	/* The KMS card's seat session ends: input closes what it opened
	 * through it (wla_backend_create_input; an empty link otherwise). */
	struct wl_listener seat_end;
	/* Held while it announces outputs (new_output listeners may destroy
	 * the backend) and while an output's destroy is under way (its destroy
	 * listeners may too): backend_destroy meanwhile takes it apart, and
	 * the last release destroys its devices and frees it (backend/hold.h). */
	struct wla_hold hold;
};

/* What one wlr_output commit asks of the hardware. */
struct wla_output_request {
	bool enabled;
	bool has_mode;
	struct wla_mode mode;
	struct wlr_buffer *buffer; /* NULL: keep the primary plane as it is */
	uint32_t commit_seq;
	/* A new gamma LUT (NULL: none, pixels unchanged), one reference owned
	 * by the request (wla_output_request_finish). */
	bool has_gamma;
	struct wla_gamma_lut *gamma;
	/* Adaptive sync turned on or off. */
	bool has_vrr, vrr;
	/* A modeset with the mode the CRTC has (link-status BAD). */
	bool retrain;
	/* The buffer's damage (wlr_output_set_damage), in buffer pixels; none:
	 * all of it. */
	struct wla_rect damage[WLA_MAX_DAMAGE_RECTS];
	size_t n_damage;
};

/* An overlay of a compositor's offer (wla_output_set_overlays). */
struct wla_overlay_slot {
	struct wla_overlay ov;   /* buffer NULL: the fb stands for it */
	struct wla_fb *fb;       /* wrapper reference */
	struct wla_plane *plane; /* where the last state built put it */
};

struct wla_assign_cache;

/* The planes an output may use and the compositor's overlay offer
 * (backend/wlr/planes.c). */
struct wla_output_planes {
	/* Its CRTC's primary and cursor and the overlay planes the CRTC can
	 * take, bottom to top, with their formats. */
	struct wla_plane *planes[WLA_MAX_PLANES];
	struct wlr_drm_format_set formats[WLA_MAX_PLANES];
	size_t n, n_overlays;
	/* The offer for the next commit, while pending. */
	struct wla_overlay_slot *offer;
	size_t n_offer;
	bool pending;
	/* While the helper checks a candidate: its overlays, used instead of
	 * the offer (fbs borrowed). */
	struct wla_overlay_slot *trial;
	size_t n_trial;
	/* What the last test or commit said of each overlay of the offer, and
	 * which one a refusal was pinned on (SIZE_MAX: none, or all). */
	enum wla_overlay_status *status;
	size_t n_status;
	size_t refused_slot;
	/* The assignment helper's memory (backend/wlr/assign.c). */
	struct wla_assign_cache *assign;
};

struct wla_output {
	struct wlr_output base;
	struct wla_output_planes *planes;
	struct wla_backend *backend;
	struct wla_device *dev;
	struct wla_connector *conn;
	/* NULL while the output is off and no CRTC was free for it, or an
	 * output enabled later took it (wla_output_claim_crtc); never NULL
	 * while it is enabled. */
	struct wla_crtc *crtc;
	/* Its CRTC was another output's until now: the first commit resets
	 * what that one left (gamma LUT, adaptive sync). */
	bool crtc_taken_over;
	struct wl_list link;
	struct wla_output_stats stats;
	struct wlr_drm_format_set primary_formats;
	struct wlr_drm_format_set cursor_formats;

	/* What set_cursor and move_cursor asked for; the cursor plane follows
	 * it with legacy cursor commits while the CRTC is on. */
	struct wla_fb *cursor_fb; /* wrapper reference, NULL: hidden */
	struct wlr_buffer *cursor_buffer; /* its buffer, locked while it is ours */
	int cursor_x, cursor_y;   /* hotspot position, in the mode's coords (untransformed) */
	int hotspot_x, hotspot_y;
	bool cursor_dirty;

	/* The panel's power sequencing, NULL without a panel. */
	struct wla_panel_loop *panel;
	const char *panel_chip;
	bool panel_failed;  /* could not be set up, or a set failed: stays off */
	bool panel_unlit;   /* the backlight waits for the first latched frame */
	/* An enable waiting for the panel's ON event, buffer locked. */
	bool has_deferred;
	struct wla_output_request deferred;

	/* A frame event waiting for the commit that made room to return
	 * (wlroots sets frame_pending only after impl->commit). */
	struct wl_event_source *frame_idle;
	/* frame_idle sends the first frame event of an output lit up or given
	 * a mode without a buffer. */
	bool first_frame;
	/* Lit at start (adopt_lit_mode): the timing it came with, until a
	 * current mode of the list is set (settle_lit_mode). */
	struct wla_mode lit_mode;
	bool has_lit_mode;
	/* The driver turned the CRTC off (it could not program a state). */
	struct wl_event_source *disabled_idle;
	/* Present intervals, a ring of the last WLA_STATS_WINDOW. */
	uint64_t intervals[WLA_STATS_WINDOW];
	uint64_t n_intervals;
	uint64_t last_present_ns; /* 0: the next present starts the intervals */
	/* The commit that lit the output up or changed its mode: its present
	 * (or the first after it) is at the vblank it came on at, off the new
	 * timing's grid, and the time before it was no frame interval.
	 * Neither interval counts. */
	uint32_t restart_commit_seq;
	bool restart_pending;
	/* Held while the glue calls out to the compositor (new_output and
	 * present listeners): output_destroy meanwhile takes it apart and the
	 * last release frees it (backend/hold.h). */
	struct wla_hold hold;
	/* The glue's own first listener of the wlr_output's destroy: the
	 * output leaves the backend's list and holds the backend until
	 * output_destroy is over. */
	struct wl_listener destroying;
	bool holds_backend;
	/* Inside wlr_output_test: a compositor's probe, whose refusals are
	 * debug output (wla_output_log), not errors. */
	bool probing;
};

/*
 * A log line about an output, "output NAME: ..."; an error found while
 * wlroots only tests a commit (a compositor probing what it may do) is
 * debug output, as the same error in a real commit is not.
 */
#define wla_output_log(out, verb, fmt, ...) \
	wlr_log((verb) == WLR_ERROR && (out)->probing ? WLR_DEBUG : (verb), \
		"output %s: " fmt, (out)->base.name, ##__VA_ARGS__)

struct wla_backend *wla_backend_from_wlr(struct wlr_backend *backend);

/* Create and announce the wlr_output of a connector on crtc, or without
 * a CRTC (it claims one when enabled). NULL, logged, if memory ran out or
 * a new_output listener destroyed it. */
struct wla_output *wla_output_create(struct wla_backend *backend, struct wla_device *dev,
	struct wla_connector *conn, struct wla_crtc *crtc);
/* A CRTC for out if it has none: a free one, else one an output that is
 * off gives up (it gets one again when enabled). false (logged) if every
 * CRTC it may use drives an enabled output. */
bool wla_output_claim_crtc(struct wla_output *out);
/* The first CRTC of dev that conn may drive and no output has, or NULL. */
struct wla_crtc *wla_output_free_crtc(struct wla_backend *backend, struct wla_device *dev,
	struct wla_connector *conn);
/* Whether conn may drive crtc: one of its possible CRTCs, with a primary
 * plane, and no output's yet. */
bool wla_output_crtc_usable(struct wla_backend *backend, struct wla_connector *conn,
	struct wla_crtc *crtc);
struct wla_output *wla_output_find(struct wla_backend *backend, struct wla_connector *conn);
/* The output whose wlr_output is called name, NULL if none. */
struct wla_output *wla_output_find_named(struct wla_backend *backend, const char *name);
/* The backend's input (backend/input/), asking the backend through the
 * host interface of backend/wlr/input-host.c. NULL (logged) on failure. */
struct wla_input *wla_backend_create_input(struct wla_backend *backend,
	struct wl_event_loop *loop);
/* The end of a hold on the backend (include/backend/hold.h): false if it
 * was destroyed meanwhile, and is gone now or at an outer release. */
bool wla_backend_release(struct wla_backend *backend);

/* Commit a request through the flip queue; 0 or a negative errno (logged). */
/* The connector's link failed (link-status BAD): an enabled output is set
 * up again with its mode, as the kernel asks; the compositor is asked for
 * a frame. */
void wla_output_retrain_link(struct wla_output *out);
/* Drop what the request owns (its gamma LUT). */
void wla_output_request_finish(struct wla_output_request *req);
int wla_output_commit_request(struct wla_output *out, const struct wla_output_request *req);

/* The panel of an output (backend/wlr/panel.c). Set up at output creation
 * when the config describes one; a chip that cannot be had leaves the output
 * off (its enable commits fail). finish after the CRTC is off. */
void wla_output_panel_init(struct wla_output *out, const struct wla_config_panel *desc);
/* Before the output is destroyed: the panel's backlight off while the CRTC
 * still scans out (wla_panel_blank); the caller then stops the CRTC. */
void wla_output_panel_blank(struct wla_output *out);
void wla_output_panel_finish(struct wla_output *out);
/* wlr_output_send_present with the output guarded: a listener's unplug of
 * its connector waits for the event to end (wla_backend_unplug_connector).
 * False if a listener destroyed the output anyway: touch nothing of it. */
bool wla_output_send_present(struct wla_output *out, struct wlr_output_event_present *event);
/* false (logged) if req would enable an output whose panel failed. */
bool wla_output_panel_admits(struct wla_output *out, const struct wla_output_request *req);
/* Whether req must wait for the panel (power on before the CRTC, power off
 * around it) rather than go to the hardware at once. */
bool wla_output_panel_takes(struct wla_output *out, const struct wla_output_request *req);
/* Start the panel's part of req (checked already); the CRTC follows the
 * panel's events. 0 or a negative errno. */
int wla_output_panel_request(struct wla_output *out, const struct wla_output_request *req);
/* A frame with content latched: the backlight may come on. */
void wla_output_panel_frame_latched(struct wla_output *out);

/* Tests: give panels another line provider (before the backend starts). */
void wla_backend_set_gpio_provider(struct wlr_backend *backend,
	struct wla_gpio_provider *provider);

/*
 * The framebuffer wrapping a wlr_buffer: one wrapper per buffer (kept as a
 * buffer addon), a new wrapper reference for the caller (wla_fb_put). prepare
 * locks the buffer, cleanup unlocks it. NULL (logged) if the buffer exposes
 * neither shm, data-ptr nor dmabuf attributes.
 */
struct wla_fb *wla_fb_from_wlr_buffer(struct wla_backend *backend, struct wlr_buffer *buffer);
/* At backend destroy, after every state is gone: detach every wrapper from
 * its buffer and free it. */
void wla_backend_finish_fbs(struct wla_backend *backend);

/* Add every format and modifier of plane to set; false on ENOMEM. */
bool wla_plane_add_formats_to(struct wlr_drm_format_set *set, const struct wla_plane *plane);

/* The wlr_buffer an fb of the glue wraps, NULL once it was destroyed. */
struct wlr_buffer *wla_fb_wlr_buffer(struct wla_fb *fb);

/* Planes (backend/wlr/planes.c). An output's plane ids are its planes'
 * indices on their device, plus one (0 means "any"). */
static inline uint32_t wla_output_plane_id(const struct wla_plane *plane)
{
	return (uint32_t)plane->index + 1;
}
bool wla_output_planes_init(struct wla_output *out);
void wla_output_planes_finish(struct wla_output *out);
struct wla_plane *wla_output_plane_by_id(struct wla_output *out, uint32_t id);
/* Whether the output may put an overlay on plane now. */
bool wla_output_plane_free(const struct wla_output *out, const struct wla_plane *plane);
/* Whether an offer waits for the next commit (which then needs the
 * hardware even without a buffer). */
bool wla_output_overlays_pending(const struct wla_output *out);
/* Put the pending offer into a state the output builds (enabled: the
 * output stays on). 0 or a negative errno, the offer's status saying why. */
int wla_output_apply_overlays(struct wla_output *out, struct wla_atomic_state *state,
	bool enabled);
/* The check of a state with the offer gave ret: record each overlay's
 * status (state NULL: the state could not be built). */
void wla_output_overlays_checked(struct wla_output *out, const struct wla_atomic_state *state,
	int ret);
/* A commit succeeded: the offer is on screen (or dropped with the output
 * off) and no longer pending. */
void wla_output_overlays_committed(struct wla_output *out, bool enabled);
/* Check the output's current state with primary on the primary plane
 * (NULL: as it is) and the pending offer (or the helper's trial), quietly;
 * with driver, the driver's whole-state check too (KMS: TEST_ONLY). 0 or a
 * negative errno; the offer's status says which overlay was refused. */
int wla_output_check_trial(struct wla_output *out, struct wlr_buffer *primary, bool driver);
/* Size the offer's status for n overlays, all UNCHECKED; false on ENOMEM. */
bool wla_output_status_reset(struct wla_output_planes *planes, size_t n);
/* The helper's memory (backend/wlr/assign.c). */
void wla_assign_finish(struct wla_output_planes *planes);
/* The compositor's own commit of an offer was refused: keep no placement
 * without checking it again. */
void wla_assign_forget(struct wla_output_planes *planes);

/*
 * The control socket (backend/control/control.c), made when the backend starts
 * where config.control says. NULL, logged, when it is off or cannot be had:
 * the compositor runs without it. Destroyed first at backend destroy.
 */
struct wla_control *wla_control_create(struct wla_backend *backend);
void wla_control_destroy(struct wla_control *control);
const char *wla_control_path(const struct wla_control *control);

#endif
