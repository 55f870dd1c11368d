/*
 * The virtual display controller: a driver of the atomic core with a CRTC
 * per connector, primary + overlay + cursor planes, vblanks on an exact grid
 * of CLOCK_MONOTONIC (the mode's timing), and composition on capture only.
 *
 * What it owns: per output, one set of shadow registers (the state it was
 * last handed, latched at the first vblank that starts at least
 * latch_slack_ns after that state was committed) and the scanout set (plane
 * state pointers on screen since the last latch). The flip queue is the
 * core's. Its timer runs only while a state is armed, a capture waits, or
 * within an off delay after the last latch; the sequence counter and the
 * grid are rebuilt from the clock when it starts again.
 */
#ifndef BACKEND_VDC_H
#define BACKEND_VDC_H

#include <stdbool.h>
#include <stdint.h>
#include <wayland-server-core.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include "backend/atomic.h"
#include "backend/hold.h"

struct wla_vdc;

#define WLA_VDC_PLANES (WLA_MAX_OVERLAY_PLANES + 2)
/* A commit must reach the VDC this long before the vblank that latches it
 * (real hardware needs its registers written before the vblank starts). */
#define WLA_VDC_COMMIT_SLACK_NS 200000
/* Vblanks the timer keeps running after the last latch with nothing armed. */
#define WLA_VDC_OFF_DELAY 2

/* What one vblank puts on screen: a plane state per plane (indexed by zpos,
 * NULL: off) and the mode. Every pointer stays valid until the latch that
 * replaces it: the state owning it is freed only after that latch. */
struct wla_vdc_frame {
	const struct wla_plane_state *planes[WLA_VDC_PLANES];
	struct wla_mode mode;
	const struct wla_gamma_lut *gamma; /* the CRTC state's; NULL: none */
	bool vrr; /* adaptive sync on (the CRTC state's vrr_enabled) */
	bool modeset; /* the state trains a broken link again */
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
	/* The shadow registers: what the next latch puts on screen. */
	struct wla_vdc_frame shadow;
	bool armed;
	uint64_t armed_ns; /* when the armed state was committed */

	bool running;
	struct wla_mode mode; /* the timing the vblanks follow */
	uint64_t period_ns;   /* rounded, for reports */
	struct wla_vblank_grid grid; /* the current timing's vblanks */
	uint64_t epoch_ns;    /* time of vblank 0 of the current timing */
	uint64_t next_index;  /* index (since epoch) of the next vblank to process */
	uint64_t last_latch_index;
	uint64_t seq;         /* sequence number of the last vblank */
	uint64_t last_vblank_ns; /* when the last vblank was */
	/* Adaptive sync, for a connector with a configured vrr-range (its
	 * refresh rates in mHz; 0: none). While the scanout has it on (vrr),
	 * the grid runs at the lowest rate, as a panel repeats its frame when
	 * nothing new comes, and an armed state latches as soon as the
	 * shortest period (the mode's, or the range's top if lower) since the
	 * last vblank has passed: the grid is rebased there. */
	int32_t vrr_min_mhz, vrr_max_mhz;
	bool vrr;
	uint64_t vrr_short_ns;
	/* The link is broken (injected): the monitor shows black until a
	 * modeset latches. */
	bool link_bad;
	struct wla_vblank_counters counters;
	/* Timer wake-ups taken (for the idle benchmark and tests). */
	uint64_t wakeups;
	int timer_fd;
	struct wl_event_source *timer;
	bool timer_armed;
	/* Held while callbacks of this output run (the vblank replay,
	 * captures): an unplug from one of them detaches the output at once
	 * and frees it when the last returns (backend/hold.h). */
	struct wla_hold hold;
	bool unplugging;

	struct wl_list captures; /* struct wla_capture.link */
};

struct wla_vdc {
	struct wla_device dev;
	struct wl_event_loop *loop; /* NULL: vblanks only by wla_vdc_advance */
	uint64_t (*now)(void *data);
	void *now_data;
	struct wla_vdc_output *outputs[WLA_MAX_CRTCS]; /* NULL: a free slot */
	size_t n_outputs;
	uint32_t cursor_size;
	uint32_t overlay_planes;
	/* The configured outputs' virtual monitors (make, model, serial,
	 * size, non-desktop), given again to a connector plugged in by the
	 * same name. */
	struct wla_config_output *configured;
	size_t n_configured;
	bool destroying;
	/* Delivers the events a sync reported (vdc_sync). */
	struct wl_event_source *deliver_idle;
	/* Fault injection for tests: the next commit_tail / prepare_fb calls
	 * fail with these errnos (0: they do not). */
	int fail_commit_tail;
	int fail_prepare_fb;
	/* Planes (bits of their index) whose checks refuse every visible
	 * state with -EINVAL, a limit the core cannot see (tests of plane
	 * assignment). */
	uint32_t refuse_planes;
	/* Connectors plugged in are lit at once (wla_vdc_light_connectors). */
	bool light_plugged;
	/* Tests of the glue's CRTC matching: wla_vdc_light_connectors lights
	 * nothing, as on a card no console lit. */
	bool start_dark;
};

/*
 * Create a VDC for cfg's outputs. With a loop, vblanks come from timerfds
 * on it; without one (tests), only from wla_vdc_advance. now is the clock
 * (CLOCK_MONOTONIC if NULL). Returns NULL (logged) on failure. The caller
 * owns the VDC.
 */
struct wla_vdc *wla_vdc_create(struct wl_event_loop *loop, const struct wla_config *cfg,
	uint64_t (*now)(void *data), void *now_data);
/* The same, for the glue: the VDC as a device of the driver interface
 * (CLOCK_MONOTONIC, freed by the device's destroy). */
struct wla_device *wla_vdc_device_create(struct wl_event_loop *loop,
	const struct wla_config *cfg);
/*
 * Light every connected connector that no panel powers, each on its own
 * CRTC with its preferred mode and no plane on, and from now on every
 * connector plugged in: as wlroots' headless outputs come (enabled with
 * their mode, no buffer until the compositor commits one). A panel's
 * connector stays dark: its panel powers up in order when the compositor
 * enables it. The glue calls this when its backend starts.
 */
void wla_vdc_light_connectors(struct wla_vdc *vdc);
/* Whether dev is a VDC's. */
bool wla_device_is_vdc(const struct wla_device *dev);
/* Turn every CRTC off (what is queued completes as not presented, captures
 * fail), then free everything. */
void wla_vdc_destroy(struct wla_vdc *vdc);

/* Plug in a connector named name with modes (preferred first): a new output
 * with its CRTC and planes, announced to the device listener. NULL (logged)
 * on a bad mode, a taken name, a full device or ENOMEM. */
struct wla_vdc_output *wla_vdc_plug(struct wla_vdc *vdc, const char *name,
	const struct wla_config_mode *modes, size_t n_modes);
/* Unplug it: its CRTC off, the listener told, the objects freed. */
void wla_vdc_unplug(struct wla_vdc_output *out);
struct wla_vdc_output *wla_vdc_find(struct wla_vdc *vdc, const char *name);

/* Process every vblank of every active CRTC up to now_ns (tests; the timer
 * path calls the same code with the clock). */
void wla_vdc_advance(struct wla_vdc *vdc, uint64_t now_ns);

/* Ask for the composed frame after the next vblank of out; NULL (logged) on
 * ENOMEM, an output that is off, or a VDC being destroyed. Owned by out
 * until the callback ran or it is cancelled. */
struct wla_capture *wla_vdc_capture(struct wla_vdc_output *out, wla_capture_func_t func,
	void *data);
void wla_vdc_capture_cancel(struct wla_capture *capture);

/* Compose what out scans out now into a new image (caller owns); NULL if
 * composition failed (logged). */
struct wla_image *wla_vdc_compose(struct wla_vdc_output *out);

struct wla_vdc_output *wla_vdc_output_from_crtc(struct wla_crtc *crtc);
struct wla_vdc *wla_vdc_from_device(struct wla_device *dev);

uint64_t wla_clock_monotonic_ns(void *data);

#endif
