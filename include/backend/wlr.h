/*
 * The wlroots glue: wlr_backend and wlr_output on top of a wla_device.
 */
#ifndef BACKEND_WLR_H
#define BACKEND_WLR_H

#include <wayland-server-core.h>
#include <wlr/backend/interface.h>
#include <wlr/interfaces/wlr_output.h>
#include <wlr/render/drm_format_set.h>
#include <wlatomic/backend.h>
#include <wlatomic/config.h>
#include "backend/vdc.h"

struct wla_backend {
	struct wlr_backend base;
	struct wl_display *display;
	struct wla_config config;
	struct wla_vdc *vdc;
	struct wl_list outputs; /* wla_output.link */
	bool started;
	/* wlr_buffer locks taken by prepare_fb and not yet dropped. */
	size_t buffer_locks;
	struct wl_listener display_destroy;
};

struct wla_output {
	struct wlr_output base;
	struct wla_backend *backend;
	struct wla_vdc_output *vdc_out;
	struct wl_list link;
	struct wla_output_stats stats;
	struct wlr_drm_format_set primary_formats;
	struct wlr_drm_format_set cursor_formats;

	/* What set_cursor and move_cursor asked for; the cursor plane follows
	 * it with legacy cursor commits while the CRTC is on. */
	struct wla_fb *cursor_fb; /* wrapper reference, NULL: hidden */
	int cursor_x, cursor_y;   /* hotspot position, output buffer coords */
	int hotspot_x, hotspot_y;
	bool cursor_dirty;

	/* A frame event waiting for the commit that made room to return
	 * (wlroots sets frame_pending only after impl->commit). */
	struct wl_event_source *frame_idle;
	/* Present intervals, a ring of the last WLA_STATS_WINDOW. */
	uint64_t intervals[WLA_STATS_WINDOW];
	uint64_t n_intervals;
	uint64_t last_present_ns;
};

struct wla_backend *wla_backend_from_wlr(struct wlr_backend *backend);

/* Create and announce the wlr_output of a VDC output (backend started). */
struct wla_output *wla_output_create(struct wla_backend *backend,
	struct wla_vdc_output *vdc_out);

/*
 * The framebuffer wrapping a wlr_buffer: one wrapper per buffer (kept as a
 * buffer addon), a new wrapper reference for the caller (wla_fb_put). prepare
 * locks the buffer, cleanup unlocks it. NULL (logged) if the buffer exposes
 * neither shm, data-ptr nor dmabuf attributes.
 */
struct wla_fb *wla_fb_from_wlr_buffer(struct wla_backend *backend, struct wlr_buffer *buffer);

#endif
