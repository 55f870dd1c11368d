/*
 * The atomic core: display objects (CRTCs, planes, connectors), their states,
 * atomic states that collect duplicated object states, check, prepare/cleanup
 * of framebuffers, swap and the begin/update/flush programming sequence.
 *
 * No wlroots types live here: drivers (backend/vdc, backend/kms) implement the
 * hooks, the glue (backend/wlr) wraps wlr_buffers in wla_fb.
 *
 * Ownership in one place:
 * - An object owns its current state (crtc->state, ...).
 * - An atomic state owns the states it duplicated until swap, and the
 *   replaced (old) states after swap; wla_atomic_state_free destroys what it
 *   owns.
 * - A plane state holds one wla_fb reference (wla_fb_get) for its fb field.
 * - A plane state that has been prepared (prepared == true) also holds one
 *   scanout reference (wla_fb_prepare); it is dropped by cleanup.
 */
#ifndef BACKEND_ATOMIC_H
#define BACKEND_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <wayland-util.h>

#define WLA_MAX_CRTCS 8
#define WLA_MAX_PLANES 32
#define WLA_MAX_CONNECTORS 8
#define WLA_MAX_FORMATS 16
#define WLA_MAX_CONNECTOR_MODES 16

/* 16.16 fixed point */
#define WLA_FIXED_ONE 0x10000u

struct wla_device;
struct wla_crtc;
struct wla_plane;
struct wla_connector;
struct wla_atomic_state;
struct wla_present;

struct wla_mode {
	int32_t width, height;
	int32_t refresh_mhz; /* > 0 */
};

bool wla_mode_equal(const struct wla_mode *a, const struct wla_mode *b);
/* Exact vblank period of a mode in nanoseconds (1e12 / refresh_mhz, rounded). */
uint64_t wla_mode_period_ns(const struct wla_mode *mode);

/* Framebuffers */

struct wla_fb;

struct wla_fb_impl {
	/* Take a scanout reference: lock, pin or import. Returns 0 or -errno;
	 * only the first failing call logs. */
	int (*prepare)(struct wla_fb *fb);
	/* Drop one scanout reference taken by prepare. */
	void (*cleanup)(struct wla_fb *fb);
	/* CPU read access for composition; false if the pixels are not
	 * reachable. */
	bool (*begin_access)(struct wla_fb *fb, const void **data, uint32_t *stride);
	void (*end_access)(struct wla_fb *fb);
	/* The last wla_fb_put: free the wrapper. */
	void (*destroy)(struct wla_fb *fb);
};

struct wla_fb {
	const struct wla_fb_impl *impl;
	uint32_t width, height;
	uint32_t format; /* DRM fourcc */
	int refs;        /* wrapper references: creator + plane states */
	int prepared;    /* scanout references currently held */
};

/* Initialise with one reference owned by the caller. */
void wla_fb_init(struct wla_fb *fb, const struct wla_fb_impl *impl, uint32_t width,
	uint32_t height, uint32_t format);
struct wla_fb *wla_fb_get(struct wla_fb *fb);
/* Drop a wrapper reference; the last one calls impl->destroy. */
void wla_fb_put(struct wla_fb *fb);

/* Object states */

struct wla_crtc_state {
	struct wla_crtc *crtc;
	bool enable; /* resources (a mode) assigned */
	bool active; /* scanning out */
	struct wla_mode mode;
	uint32_t plane_mask;     /* planes whose state has crtc == this */
	uint32_t connector_mask; /* connectors routed to this crtc */
	/* Computed by check: */
	bool mode_changed, active_changed, connectors_changed, planes_changed;
	/* Whoever asked for the commit; reported back on completion. A commit
	 * that wants its present event is a frame: it takes the CRTC's frame
	 * slot until it latches. */
	uint64_t commit_seq;
	bool want_event;
};

struct wla_rect {
	int32_t x, y;
	int32_t w, h;
};

struct wla_plane_state {
	struct wla_plane *plane;
	struct wla_crtc *crtc; /* NULL: disabled */
	struct wla_fb *fb;     /* one wla_fb reference while non-NULL */
	uint32_t src_x, src_y, src_w, src_h; /* 16.16, in fb pixels */
	int32_t crtc_x, crtc_y;
	uint32_t crtc_w, crtc_h;
	/* Computed by check: the clipped rectangles and whether any of the
	 * plane is on screen. src is 16.16. */
	bool visible;
	struct wla_rect src, dst;
	bool prepared;
};

enum wla_connector_status {
	WLA_CONNECTOR_DISCONNECTED,
	WLA_CONNECTOR_CONNECTED,
};

struct wla_connector_state {
	struct wla_connector *connector;
	struct wla_crtc *crtc; /* NULL: not routed */
};

/* Objects and driver hooks */

enum wla_plane_type {
	WLA_PLANE_PRIMARY,
	WLA_PLANE_CURSOR,
	WLA_PLANE_OVERLAY,
};

/* How the planes programmed between begin and flush reach the screen. */
enum wla_latch {
	/* A new frame at the tail of the CRTC's flip queue: it latches at the
	 * first vblank after every frame queued before it has latched. */
	WLA_LATCH_QUEUE,
	/* Replaces the newest queued frame, which never reaches the screen
	 * (mailbox). Built on top of that frame's planes. */
	WLA_LATCH_REPLACE,
	/* Changes what the next vblank latches and every frame queued after
	 * it, without a queue slot of its own (legacy cursor updates). */
	WLA_LATCH_AMEND,
};

struct wla_crtc_funcs {
	/* Driver checks of a CRTC state, after the core's rules. */
	int (*atomic_check)(struct wla_crtc *crtc, struct wla_atomic_state *state);
	/* Off to on: start scanning out crtc->state->mode. */
	void (*atomic_enable)(struct wla_crtc *crtc, const struct wla_crtc_state *old);
	/* On to off: stop scanning out and drop the queue; the driver calls
	 * wla_crtc_complete_commit for what was waiting before returning. */
	void (*atomic_disable)(struct wla_crtc *crtc, const struct wla_crtc_state *old);
	/* Between begin and flush the core calls the plane hooks of the
	 * commit's planes on this CRTC. flush hands the result to the hardware
	 * as latch says; a mode change of an active CRTC travels with its frame
	 * (crtc->state->mode_changed) and takes effect when that frame latches.
	 * At every vblank the driver calls wla_crtc_handle_vblank. */
	void (*atomic_begin)(struct wla_crtc *crtc, const struct wla_crtc_state *old,
		enum wla_latch latch);
	void (*atomic_flush)(struct wla_crtc *crtc, const struct wla_crtc_state *old,
		enum wla_latch latch);
};

struct wla_plane_funcs {
	int (*atomic_check)(struct wla_plane *plane, struct wla_atomic_state *state,
		const struct wla_plane_state *new_state);
	/* Program plane->state (enabled and visible). */
	void (*atomic_update)(struct wla_plane *plane, const struct wla_plane_state *old);
	/* Program plane->state as off. */
	void (*atomic_disable)(struct wla_plane *plane, const struct wla_plane_state *old);
};

struct wla_device_funcs {
	/* Whole-state driver limits, after every per-object check. */
	int (*atomic_check)(struct wla_device *dev, struct wla_atomic_state *state);
};

struct wla_crtc {
	struct wla_device *dev;
	unsigned index;
	char name[16];
	const struct wla_crtc_funcs *funcs;
	struct wla_crtc_state *state;
	struct wla_plane *primary, *cursor;
	/* struct wla_crtc_entry.link of the commits programmed on this CRTC
	 * and waiting for the vblank that latches them, oldest first. */
	struct wl_list pending;
	/* Of those: the ones with a queue slot of their own (latched one per
	 * vblank), and the frames among them (want_event). */
	unsigned pending_slots;
	unsigned pending_frames;
	/* Flip queue policy: how many frames may wait (>= 1; 1 is wlroots' DRM
	 * backend behaviour), and whether a frame beyond that replaces the
	 * newest waiting one instead of being refused. */
	unsigned queue_depth;
	bool mailbox;
	/* How many slots the driver can hold (set by the driver, >= 1). */
	unsigned max_slots;
	/* Told when a commit that asked for an event completes. */
	void (*present)(struct wla_crtc *crtc, const struct wla_present *event, void *data);
	void *present_data;
	void *driver_data;
};

struct wla_plane {
	struct wla_device *dev;
	unsigned index;
	char name[16];
	enum wla_plane_type type;
	const struct wla_plane_funcs *funcs;
	struct wla_plane_state *state;
	uint32_t formats[WLA_MAX_FORMATS];
	size_t n_formats;
	uint32_t possible_crtcs; /* bit per crtc index */
	unsigned zpos;           /* fixed z-order, higher is on top */
	/* Allowed src/dst ratios in 16.16: min_scale is the largest
	 * magnification, max_scale the largest reduction. */
	uint32_t min_scale, max_scale;
	/* The plane's dst must cover the whole CRTC exactly. */
	bool full_screen_only;
	/* Largest fb, 0 if unlimited (the cursor size). */
	uint32_t max_fb_width, max_fb_height;
	void *driver_data;
};

struct wla_connector {
	struct wla_device *dev;
	unsigned index;
	char name[32];
	enum wla_connector_status status;
	struct wla_mode modes[WLA_MAX_CONNECTOR_MODES];
	size_t n_modes; /* modes[0] preferred */
	uint32_t possible_crtcs;
	struct wla_connector_state *state;
	void *driver_data;
};

struct wla_device {
	const struct wla_device_funcs *funcs;
	const char *name;
	struct wla_crtc *crtcs[WLA_MAX_CRTCS];
	size_t n_crtcs;
	struct wla_plane *planes[WLA_MAX_PLANES];
	size_t n_planes;
	struct wla_connector *connectors[WLA_MAX_CONNECTORS];
	size_t n_connectors;
	/* Atomic states allocated and not yet freed: a leak check. */
	size_t live_states;
};

/* Completion of a commit on one CRTC. */
enum wla_present_flags {
	WLA_PRESENT_VSYNC = 1 << 0,
	WLA_PRESENT_HW_CLOCK = 1 << 1,
	WLA_PRESENT_HW_COMPLETION = 1 << 2,
	WLA_PRESENT_ZERO_COPY = 1 << 3,
};

struct wla_present {
	uint64_t commit_seq;
	bool presented;
	bool discarded; /* replaced in the queue by a newer frame (mailbox) */
	uint64_t seq; /* vblank counter of the latching vblank */
	struct timespec when;
	uint64_t refresh_ns;
	uint32_t flags;
};

/* Objects are set up by the driver: it fills the object (funcs, formats,
 * limits) and then calls these to give it an initial (off) state and add it
 * to dev. Return false on ENOMEM or a full device. */
bool wla_device_add_crtc(struct wla_device *dev, struct wla_crtc *crtc);
bool wla_device_add_plane(struct wla_device *dev, struct wla_plane *plane);
bool wla_device_add_connector(struct wla_device *dev, struct wla_connector *conn);
/* Free the current states of every object (after every commit completed).
 * The objects themselves belong to the driver. */
void wla_device_finish(struct wla_device *dev);

/* Object states: duplicate returns a copy that the caller owns (NULL on
 * ENOMEM); a duplicated plane state takes its own fb reference and is not
 * prepared. destroy frees what duplicate returned. */
struct wla_crtc_state *wla_crtc_state_duplicate(const struct wla_crtc_state *state);
void wla_crtc_state_destroy(struct wla_crtc_state *state);
struct wla_plane_state *wla_plane_state_duplicate(const struct wla_plane_state *state);
void wla_plane_state_destroy(struct wla_plane_state *state);
/* Take the scanout reference of ps->fb (no-op without fb or if already
 * prepared). 0 or the fb's negative errno; on failure nothing is held. */
int wla_plane_state_prepare_fb(struct wla_plane_state *ps);
/* Drop the scanout reference taken by prepare (no-op if not prepared). */
void wla_plane_state_cleanup_fb(struct wla_plane_state *ps);
struct wla_connector_state *wla_connector_state_duplicate(
	const struct wla_connector_state *state);
void wla_connector_state_destroy(struct wla_connector_state *state);

/* Atomic state */

struct wla_crtc_entry {
	struct wla_crtc *ptr;
	struct wla_crtc_state *old_state, *new_state;
	struct wla_atomic_state *state;
	struct wl_list link; /* wla_crtc.pending while waiting to latch */
	bool waiting;
	uint64_t commit_seq;
	bool want_event;
	bool slot;  /* latches at a vblank of its own, in queue order */
	bool replaces; /* takes the place of the newest waiting frame */
	bool frame; /* a slot with want_event: counts against queue_depth */
};

struct wla_plane_entry {
	struct wla_plane *ptr;
	struct wla_plane_state *old_state, *new_state;
};

struct wla_connector_entry {
	struct wla_connector *ptr;
	struct wla_connector_state *old_state, *new_state;
};

struct wla_atomic_state {
	struct wla_device *dev;
	bool allow_modeset;
	/* A cursor-only update that latches at the next vblank without taking
	 * a frame slot (the kernel's legacy cursor path). */
	bool legacy_cursor_update;
	bool swapped;
	/* Entries are indexed by object index; ptr NULL means not in the state. */
	struct wla_crtc_entry crtcs[WLA_MAX_CRTCS];
	struct wla_plane_entry planes[WLA_MAX_PLANES];
	struct wla_connector_entry connectors[WLA_MAX_CONNECTORS];
	/* CRTCs of this commit that have not completed yet. */
	unsigned pending_crtcs;
};

/* A new empty state for dev, owned by the caller; NULL on ENOMEM. */
struct wla_atomic_state *wla_atomic_state_alloc(struct wla_device *dev);
/*
 * Free the state and every object state it owns: new states before swap, old
 * states after. Prepared planes must have been cleaned up first (this is an
 * invariant of the commit path, asserted).
 */
void wla_atomic_state_free(struct wla_atomic_state *state);

/*
 * get_*_state: the state's new state of the object, duplicated from the
 * current one on first use. A plane's current CRTC and a connector's current
 * CRTC are pulled in too. NULL (logged) on ENOMEM. The atomic state owns the
 * result.
 */
struct wla_crtc_state *wla_atomic_get_crtc_state(struct wla_atomic_state *state,
	struct wla_crtc *crtc);
struct wla_plane_state *wla_atomic_get_plane_state(struct wla_atomic_state *state,
	struct wla_plane *plane);
struct wla_connector_state *wla_atomic_get_connector_state(struct wla_atomic_state *state,
	struct wla_connector *conn);

/* The state's new (before swap) state of an object, or NULL if the object is
 * not in the state. */
struct wla_crtc_state *wla_atomic_new_crtc_state(struct wla_atomic_state *state,
	struct wla_crtc *crtc);
struct wla_plane_state *wla_atomic_new_plane_state(struct wla_atomic_state *state,
	struct wla_plane *plane);

/* Route a plane to a CRTC (NULL: off), keeping both CRTCs' plane_mask right;
 * pulls in the CRTC states. Returns 0 or -ENOMEM. */
int wla_atomic_set_crtc_for_plane(struct wla_atomic_state *state,
	struct wla_plane_state *plane_state, struct wla_crtc *crtc);
/* Replace the plane state's fb, moving the wrapper reference (fb may be NULL). */
void wla_atomic_set_fb_for_plane(struct wla_plane_state *plane_state, struct wla_fb *fb);
/* Route a connector to a CRTC (NULL: unrouted), keeping connector_mask right. */
int wla_atomic_set_crtc_for_connector(struct wla_atomic_state *state,
	struct wla_connector_state *conn_state, struct wla_crtc *crtc);
/* Show the whole fb on the plane at (x, y), unscaled. */
void wla_plane_state_set_full(struct wla_plane_state *ps, int32_t x, int32_t y);

/*
 * Check the whole state without touching any current state: modeset rules
 * (routing, mode_changed, active_changed, connectors_changed, CRTC enabled
 * without connector and the reverse), then planes (src inside the fb, dst
 * coordinates, scaling limits, format, fb size), then the drivers' hooks.
 * Fills the computed fields. Returns 0 or a negative errno after logging one
 * line naming the object, the field and the value.
 */
int wla_atomic_check(struct wla_atomic_state *state);

/*
 * Check, prepare, swap and program a state whose CRTCs have nothing queued:
 * it latches at the next vblank. On success the core owns the state: it is
 * freed once every CRTC in it completed (latched at a vblank, or disabled),
 * with the old states' fbs cleaned up first. On failure (negative errno,
 * logged) nothing changed, no scanout reference is held and the caller
 * still owns the state.
 * -EBUSY: a CRTC of the state has a commit waiting to latch (turning a CRTC
 * off and legacy cursor updates are always accepted).
 */
int wla_atomic_commit(struct wla_atomic_state *state);

/*
 * The same, through the flip queue: every error is still found here (check
 * and prepare run now), the state is swapped in at once, and its hardware
 * part latches after what is already queued, one slot per vblank. A mode
 * change of an active CRTC waits for the queue to drain (it is queued
 * too). With queue_depth frames already waiting the commit is refused with
 * -EBUSY, or with mailbox set replaces the newest waiting frame, which is
 * then reported discarded (not presented) and its fbs cleaned up at once.
 * Ownership as for wla_atomic_commit.
 */
int wla_atomic_nonblocking_commit(struct wla_atomic_state *state);

/* Steps of wla_atomic_commit, for drivers and tests. */
int wla_atomic_prepare_planes(struct wla_atomic_state *state);
void wla_atomic_cleanup_planes(struct wla_atomic_state *state);
void wla_atomic_swap_state(struct wla_atomic_state *state);
void wla_atomic_commit_modeset_disables(struct wla_atomic_state *state);
void wla_atomic_commit_planes(struct wla_atomic_state *state);
void wla_atomic_commit_modeset_enables(struct wla_atomic_state *state);

/* Iterate the entries of an atomic state. */
#define wla_for_each_crtc_in_state(state, e) \
	for (struct wla_crtc_entry *e = (state)->crtcs; \
		e < (state)->crtcs + (state)->dev->n_crtcs; e++) \
		if (e->ptr)
#define wla_for_each_plane_in_state(state, e) \
	for (struct wla_plane_entry *e = (state)->planes; \
		e < (state)->planes + (state)->dev->n_planes; e++) \
		if (e->ptr)
#define wla_for_each_connector_in_state(state, e) \
	for (struct wla_connector_entry *e = (state)->connectors; \
		e < (state)->connectors + (state)->dev->n_connectors; e++) \
		if (e->ptr)

/*
 * Driver entry point at every vblank of an active CRTC: the oldest queued
 * slot latched if latched_slot, and every amendment did. Cleans up the
 * replaced states' fbs, frees states whose CRTCs all completed, and reports
 * the present events. Commits made from the present handlers wait for a
 * later vblank.
 */
void wla_crtc_handle_vblank(struct wla_crtc *crtc, bool latched_slot, uint64_t seq,
	const struct timespec *when, uint64_t refresh_ns, uint32_t flags);
/* Complete every pending commit of crtc without a vblank (the CRTC is being
 * disabled): each is reported as not presented. */
void wla_crtc_complete_commit(struct wla_crtc *crtc);

/*
 * Legacy entry points built on atomic: each builds a state, commits it, and
 * returns 0 or a negative errno (logged); the caller's fb reference is not
 * consumed.
 */
int wla_atomic_update_plane(struct wla_plane *plane, struct wla_crtc *crtc, struct wla_fb *fb,
	int32_t crtc_x, int32_t crtc_y, uint32_t crtc_w, uint32_t crtc_h, uint32_t src_x,
	uint32_t src_y, uint32_t src_w, uint32_t src_h);
int wla_atomic_disable_plane(struct wla_plane *plane);
/* Mode set: mode NULL disables the CRTC and unroutes conn. With a mode, fb
 * (may be NULL only when disabling) goes full screen on the primary plane. */
int wla_atomic_set_config(struct wla_crtc *crtc, struct wla_connector *conn,
	const struct wla_mode *mode, struct wla_fb *fb, uint64_t commit_seq);
/* New fb on the primary plane, latched at the next vblank. */
int wla_atomic_page_flip(struct wla_crtc *crtc, struct wla_fb *fb, uint64_t commit_seq);

#endif
