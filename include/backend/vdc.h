/*
 * The virtual display controller: a wla_device with a CRTC per connector,
 * primary + overlay + cursor planes, vblank from an absolute CLOCK_MONOTONIC
 * timer at the mode's exact refresh, and composition on capture only.
 */
#ifndef BACKEND_VDC_H
#define BACKEND_VDC_H

#include <stdbool.h>
#include <stdint.h>
#include <wayland-server-core.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include "backend/atomic.h"

struct wla_vdc;

/* Counters of one CRTC, kept by the driver. */
struct wla_vdc_crtc_stats {
	uint64_t vblanks;        /* vblanks while active */
	uint64_t missed_vblanks; /* vblanks without a timer wake-up of their own */
	uint64_t latched;        /* frames that latched */
};

#define WLA_VDC_PLANES (WLA_MAX_OVERLAY_PLANES + 2)
/* Latches the VDC can hold queued: frames plus queued mode changes. */
#define WLA_VDC_MAX_QUEUE 8
/* A commit must reach the VDC this long before the vblank that latches it
 * (the timer's wake-up latency it has to absorb). */
#define WLA_VDC_COMMIT_SLACK_NS 200000

/* What one vblank puts on screen: a plane state per plane (indexed by zpos,
 * NULL: off) and the mode. Every pointer stays valid until the latch that
 * replaces it: the state owning it is freed only after that latch. */
struct wla_vdc_frame {
	const struct wla_plane_state *planes[WLA_VDC_PLANES];
	struct wla_mode mode;
};

struct wla_vdc_output {
	struct wla_vdc *vdc;
	struct wla_connector connector;
	struct wla_crtc crtc;
	struct wla_plane primary;
	struct wla_plane cursor;
	struct wla_plane overlays[WLA_MAX_OVERLAY_PLANES];
	size_t n_overlays;
	/* This output's planes bottom to top. */
	struct wla_plane *zorder[WLA_MAX_OVERLAY_PLANES + 2];
	size_t n_planes;

	/* On screen since the last latch. */
	struct wla_vdc_frame scanout;
	/* The flip queue: one frame latches per vblank, oldest first. */
	struct wla_vdc_frame queue[WLA_VDC_MAX_QUEUE];
	size_t queue_head, queue_len;
	/* Legacy cursor updates for the next vblank (planes by zpos bit). */
	struct wla_vdc_frame amend;
	uint32_t amend_mask;
	/* The commit being programmed between begin and flush. */
	struct wla_vdc_frame build;
	uint32_t build_mask;
	enum wla_latch build_latch;

	bool running;
	struct wla_mode mode; /* the timing the vblanks follow */
	uint64_t period_ns;
	uint64_t epoch_ns;   /* time of vblank 0 of the current mode */
	/* period_ns is 1e12 / refresh rounded, for reports; vblank k is at
	 * epoch_ns + round(k * 1e12 / refresh), exact over any run length. */
	uint64_t next_index; /* index (since epoch) of the next vblank */
	uint64_t seq;        /* sequence number of the last vblank */
	struct wla_vdc_crtc_stats stats;
	int timer_fd;
	struct wl_event_source *timer;

	struct wl_list captures; /* struct wla_capture.link */
};

struct wla_vdc {
	struct wla_device dev;
	struct wl_event_loop *loop; /* NULL: vblanks only by wla_vdc_advance */
	uint64_t (*now)(void *data);
	void *now_data;
	struct wla_vdc_output *outputs[WLA_MAX_CRTCS];
	size_t n_outputs;
	uint32_t cursor_size;
};

/*
 * Create a VDC for cfg's outputs. With a loop, vblanks come from timerfds
 * on it; without one (tests), only from wla_vdc_advance. now is the clock
 * (CLOCK_MONOTONIC if NULL). Returns NULL (logged) on failure. The caller
 * owns the VDC.
 */
struct wla_vdc *wla_vdc_create(struct wl_event_loop *loop, const struct wla_config *cfg,
	uint64_t (*now)(void *data), void *now_data);
/* Disable every CRTC (pending commits complete as not presented, captures
 * fail), then free everything. */
void wla_vdc_destroy(struct wla_vdc *vdc);

/* Run the vblank processing of every active CRTC as if the clock read
 * now_ns (tests); the timer path calls the same code. */
void wla_vdc_advance(struct wla_vdc *vdc, uint64_t now_ns);

/* Ask for the composed frame after the next vblank of out; NULL on ENOMEM
 * (logged). Owned by out until the callback ran or it is cancelled. */
struct wla_capture *wla_vdc_capture(struct wla_vdc_output *out, wla_capture_func_t func,
	void *data);
void wla_vdc_capture_cancel(struct wla_capture *capture);

/* When the next frame committed now would latch (ns on the VDC's clock):
 * after the frames already queued. false if the CRTC is off. */
bool wla_vdc_next_latch(struct wla_vdc_output *out, uint64_t *latch_ns);

/* Compose what out scans out now into a new image (caller owns); NULL if
 * composition failed (logged). */
struct wla_image *wla_vdc_compose(struct wla_vdc_output *out);

uint64_t wla_clock_monotonic_ns(void *data);

#endif
