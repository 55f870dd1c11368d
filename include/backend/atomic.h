/*
 * The atomic core: display objects (CRTCs, planes, connectors), their states,
 * atomic states that collect duplicated object states, check, prepare and
 * cleanup of framebuffers, swap, the one flip queue per CRTC, and completion
 * when the hardware latched.
 *
 * No wlroots types live here. A driver (backend/vdc, backend/kms) describes
 * its objects and implements struct wla_driver_funcs; the glue (backend/wlr)
 * wraps wlr_buffers in wla_fb and builds states.
 *
 * The frame path:
 *   check -> prepare_fb (the fb's own lock, then the driver's import) ->
 *   point of no return: swap, onto the CRTCs' flip queues ->
 *   commit_tail (the driver programs the whole state for the next latch,
 *   once every CRTC of it is free to take it) ->
 *   wla_crtc_handle_latch (the driver reports the vblank that latched it) ->
 *   cleanup_fb of the states it replaced, present events.
 *
 * Ownership in one place:
 * - An object owns its current state (crtc->state, ...).
 * - An atomic state owns the states it duplicated until swap, and the
 *   replaced (old) states after swap; wla_atomic_state_free destroys what it
 *   owns.
 * - A plane state holds one wla_fb reference (wla_fb_get) for its fb field.
 * - A prepared plane state (prepared == true) also holds one scanout
 *   reference of its fb: the fb's own lock (wla_fb_funcs.prepare) and, for
 *   the first one, the driver's import (wla_driver_funcs.prepare_fb).
 * - The core owns every committed state until it completed: latched on every
 *   CRTC it touched, replaced in the queue (mailbox), or cancelled with its
 *   CRTC. The driver holds the states it was handed (commit_tail) until it
 *   reports them latched, and may keep pointers to their plane states until
 *   the latch after that: a state is only freed once the one replacing it
 *   latched.
 * - Present events are queued while the core's books are being changed and
 *   delivered afterwards (wla_device_deliver_events), so a present handler
 *   that commits always sees a consistent queue.
 */
#ifndef BACKEND_ATOMIC_H
#define BACKEND_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <wayland-util.h>
#include "backend/hold.h"
#include "backend/mode.h"

struct wla_config_mode;

/* Objects are indexed by bits of a uint32_t mask. */
#define WLA_MAX_CRTCS 8
#define WLA_MAX_PLANES 32
#define WLA_MAX_CONNECTORS 8

/* Damage rectangles a plane state carries. */
#define WLA_MAX_DAMAGE_RECTS 8

/* 16.16 fixed point */
#define WLA_FIXED_ONE 0x10000u

struct wla_device;
struct wla_crtc;
struct wla_plane;
struct wla_connector;
struct wla_atomic_state;
struct wla_present;
struct wla_image;
struct wla_capture;

/* Framebuffers */

struct wla_fb;

/* A dmabuf's planes, borrowed from the fb's owner: valid while the fb is
 * prepared. */
#define WLA_DMABUF_MAX_PLANES 4
struct wla_dmabuf {
	int n_planes;
	int fd[WLA_DMABUF_MAX_PLANES];
	uint32_t offset[WLA_DMABUF_MAX_PLANES];
	uint32_t stride[WLA_DMABUF_MAX_PLANES];
};

/* What the owner of the pixels (the glue: a wlr_buffer) provides. */
struct wla_fb_funcs {
	/* Take a scanout reference: lock the buffer. Returns 0 or -errno;
	 * only the first failing call logs. */
	int (*prepare)(struct wla_fb *fb);
	/* Drop one scanout reference taken by prepare. */
	void (*cleanup)(struct wla_fb *fb);
	/* CPU read access; false if the pixels are not reachable. */
	bool (*begin_access)(struct wla_fb *fb, const void **data, uint32_t *stride);
	void (*end_access)(struct wla_fb *fb);
	/* The dmabuf behind the fb (NULL or false: none); a KMS driver
	 * imports it. */
	bool (*get_dmabuf)(struct wla_fb *fb, struct wla_dmabuf *dmabuf);
	/* The last wla_fb_put: free the wrapper. */
	void (*destroy)(struct wla_fb *fb);
};

struct wla_fb {
	const struct wla_fb_funcs *funcs;
	uint32_t width, height;
	uint32_t format;   /* DRM fourcc */
	uint64_t modifier; /* DRM format modifier; DRM_FORMAT_MOD_INVALID: implicit */
	/* A client's own buffer, not one the compositor rendered: a latch that
	 * scans it out on the primary plane is zero-copy (set by the owner). */
	bool client;
	int refs;          /* wrapper references: creator + plane states */
	int prepared;      /* scanout references currently held */
	/* The driver's import (a DRM fb id, CPU access), made by its
	 * prepare_fb when prepared goes from 0 to 1 and dropped by cleanup_fb
	 * when it goes back to 0, unless the driver keeps it for the fb's next
	 * scanout (cleanup_fb leaves import set; a driver with release_fb):
	 * then it goes with the fb (its last reference), when another device
	 * prepares it, or with the device. */
	struct wla_device *import_dev;
	void *import;
};

/* Initialise with one reference owned by the caller (modifier INVALID). */
void wla_fb_init(struct wla_fb *fb, const struct wla_fb_funcs *funcs, uint32_t width,
	uint32_t height, uint32_t format);
struct wla_fb *wla_fb_get(struct wla_fb *fb);
/* Drop a wrapper reference; the last one releases a kept import and calls
 * funcs->destroy. */
void wla_fb_put(struct wla_fb *fb);
/* Release the import a driver kept of an fb no state holds prepared
 * (release_fb); a driver calls it for every fb it keeps when its device
 * goes. */
void wla_fb_release_import(struct wla_fb *fb);

/* A gamma LUT of a CRTC: size entries a channel (0 black .. 0xffff full),
 * red, green and blue, applied to what the CRTC scans out. Immutable once
 * made and shared by the states that hold it (one reference each). */
struct wla_gamma_lut {
	int refs;
	uint32_t size;
	uint16_t *r, *g, *b; /* in one allocation with the struct */
};

/* A LUT of size entries a channel copied from r, g and b, with one
 * reference owned by the caller; NULL if size is 0 or out of memory. */
struct wla_gamma_lut *wla_gamma_lut_create(uint32_t size, const uint16_t *r,
	const uint16_t *g, const uint16_t *b);
struct wla_gamma_lut *wla_gamma_lut_get(struct wla_gamma_lut *lut);
void wla_gamma_lut_put(struct wla_gamma_lut *lut);
/* Same size and entries (NULL equals NULL only). */
bool wla_gamma_lut_equal(const struct wla_gamma_lut *a, const struct wla_gamma_lut *b);
/* One 8-bit channel value through a ramp of size entries, interpolated
 * between entries as a display's LUT does. */
uint8_t wla_gamma_apply(const uint16_t *ramp, uint32_t size, uint8_t value);

/* Object states */

struct wla_crtc_state {
	struct wla_crtc *crtc;
	bool enable; /* resources (a mode) assigned */
	bool active; /* scanning out */
	struct wla_mode mode;
	uint32_t plane_mask;     /* planes whose state has crtc == this */
	uint32_t connector_mask; /* connectors routed to this crtc */
	/* The gamma LUT (one reference; NULL: pixels pass unchanged), of
	 * crtc->gamma_size entries (wla_crtc_state_set_gamma). */
	struct wla_gamma_lut *gamma;
	/* Adaptive sync (KMS: VRR_ENABLED): a latch follows the commit within
	 * the connector's range instead of the fixed refresh. Every connector
	 * routed here must be vrr_capable. */
	bool vrr_enabled;
	/* Computed by check (and merged when a queued frame is replaced): */
	bool mode_changed, active_changed, connectors_changed, planes_changed;
	bool gamma_changed;
	/* Whoever asked for the commit; reported back on completion. A commit
	 * that wants its present event is a frame: it counts against the
	 * CRTC's queue depth until it latched. */
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
	/* The fb's pixels that differ from what the plane showed before, in
	 * fb pixels (KMS: FB_DAMAGE_CLIPS), for this state only: a duplicate
	 * starts without. n_damage 0: all of it may have changed. */
	struct wla_rect damage[WLA_MAX_DAMAGE_RECTS];
	size_t n_damage;
};

/* Set the damage of ps to n rectangles (more than WLA_MAX_DAMAGE_RECTS:
 * their bounding box; empty ones are left out; none: all of the fb). */
void wla_plane_state_set_damage(struct wla_plane_state *ps, const struct wla_rect *rects,
	size_t n);
/* ps shows what other would have shown too (other's frame was replaced
 * before it latched): its damage covers both. */
void wla_plane_state_merge_damage(struct wla_plane_state *ps,
	const struct wla_plane_state *other);

/* The kernel's panel orientations, by the edge of the panel that is up. */
enum wla_panel_orientation {
	WLA_ORIENTATION_NORMAL,
	WLA_ORIENTATION_UPSIDE_DOWN,
	WLA_ORIENTATION_LEFT_UP,
	WLA_ORIENTATION_RIGHT_UP,
};

enum wla_connector_status {
	WLA_CONNECTOR_DISCONNECTED,
	WLA_CONNECTOR_CONNECTED,
};

struct wla_connector_state {
	struct wla_connector *connector;
	struct wla_crtc *crtc; /* NULL: not routed */
};

/* Objects */

enum wla_plane_type {
	WLA_PLANE_PRIMARY,
	WLA_PLANE_CURSOR,
	WLA_PLANE_OVERLAY,
};

/* A pixel format a plane scans out, with the modifiers it takes. */
struct wla_format {
	uint32_t format;
	uint64_t *modifiers; /* owned by the plane */
	size_t n_modifiers;
};

struct wla_crtc_funcs {
	/* Driver checks of a CRTC state, after the core's rules. */
	int (*atomic_check)(struct wla_crtc *crtc, struct wla_atomic_state *state);
};

struct wla_plane_funcs {
	int (*atomic_check)(struct wla_plane *plane, struct wla_atomic_state *state,
		const struct wla_plane_state *new_state);
};

/* A committed state on one CRTC's flip queue. */
enum wla_queue_stage {
	WLA_QUEUE_NONE,   /* not committed, or completed */
	WLA_QUEUE_WAITING, /* on the queue, not handed to the driver */
	WLA_QUEUE_ARMED,  /* handed to the driver (commit_tail), not latched */
};

struct wla_crtc {
	struct wla_device *dev;
	unsigned index;
	char name[16];
	const struct wla_crtc_funcs *funcs;
	struct wla_crtc_state *state;
	struct wla_plane *primary, *cursor;
	/* The flip queue: struct wla_crtc_entry.link of the committed states
	 * that latch on this CRTC, oldest first; the first `armed` of them
	 * were handed to the driver. Only the core changes it. */
	struct wl_list queue;
	unsigned queued;         /* entries on the queue */
	unsigned armed;          /* of those, handed to the driver */
	unsigned pending_frames; /* of those, frames (want_event) */
	unsigned waiting_frames; /* frames not handed to the driver yet */
	/* Flip queue policy, set by the glue: how many frames may wait (>= 1;
	 * 1 is wlroots' DRM backend behaviour), and whether a frame beyond
	 * that replaces the newest one the driver has not been handed (with
	 * mailbox, depth counts only those). */
	unsigned queue_depth;
	bool mailbox;
	/* How many states the driver holds armed at once (set by the driver,
	 * >= 1: one set of shadow registers, one KMS flip in flight). */
	unsigned max_slots;
	/* The driver can write a state over armed ones that are no frames
	 * (shadow registers written again before the vblank): they then latch
	 * together, so a frame does not wait a vblank behind a cursor move.
	 * KMS cannot (a flip in flight is final). A state is written over
	 * them only while it still makes their vblank (the core asks the
	 * driver's vblank_at); else it waits for their latch. */
	bool rearm;
	/* The atomic state whose swap made crtc->state current, while it has
	 * not completed: a later state touching this object is ordered after
	 * it. The same for planes and connectors. */
	struct wla_atomic_state *commit;
	/* How often a state was swapped in (a state built before one of them is
	 * stale: its old states may be gone). The same for planes and
	 * connectors. */
	uint64_t swaps;
	/* Entries a channel of the CRTC's gamma LUT, set by the driver (KMS:
	 * GAMMA_LUT_SIZE); 0: it has none, and a state with a LUT is
	 * refused. */
	uint32_t gamma_size;
	/* Counted by the core from the driver's latches: the latches (states
	 * written over others latch as one), and the vblanks frames missed (a
	 * frame committed before a vblank did not latch at it, with no frame
	 * ahead of it). The last latch, for the state handed over at it. */
	uint64_t latches, missed;
	uint64_t last_latch_seq, last_latch_ns;
	bool last_latch_frame, in_latch;
	/* Set by the core while the CRTC is about to be forced off (its
	 * connector gone) and the latches already passed are read: no waiting
	 * state is handed to the driver meanwhile (it would only delay the off
	 * and be reported presented on a CRTC going dark). */
	bool stopping;
	/* Told when a commit that asked for an event completes. */
	void (*present)(struct wla_crtc *crtc, const struct wla_present *event, void *data);
	/* Told, with present_data, after the present events of a delivery,
	 * that the queue drained (states without events included): what waited
	 * for an empty queue may go now. It may commit. */
	void (*idle)(struct wla_crtc *crtc, void *data);
	bool idle_pending; /* the core's */
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
	struct wla_format *formats; /* owned by the plane (wla_plane_add_format) */
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
	struct wla_atomic_state *commit;
	uint64_t swaps;
	void *driver_data;
};

struct wla_connector {
	struct wla_device *dev;
	unsigned index;
	char name[32];
	enum wla_connector_status status;
	struct wla_mode *modes; /* owned by the connector; the preferred first */
	size_t n_modes;
	uint32_t possible_crtcs;
	uint32_t phys_width_mm, phys_height_mm;
	/* Who made the monitor, as the driver knows it (KMS: its EDID, the VDC:
	 * the configuration); empty where it does not. */
	char make[64], model[32], serial[32];
	/* A head-mounted display (KMS: the connector's non-desktop property):
	 * its output is marked non_desktop, for the compositor to leave alone. */
	bool non_desktop;
	/* The monitor takes a variable refresh (KMS: vrr_capable; the VDC: a
	 * configured range): between the mode's refresh (the shortest period)
	 * and vrr_min_mhz (the longest; 0 where the driver does not know). */
	bool vrr_capable;
	int32_t vrr_min_mhz;
	/* How the panel is mounted (KMS: the connector's "panel orientation";
	 * the VDC: the configuration): the compositor's transform hint. */
	enum wla_panel_orientation orientation;
	struct wla_connector_state *state;
	struct wla_atomic_state *commit;
	uint64_t swaps;
	void *driver_data;
};

/* Buffer kinds a driver scans out (the glue maps them to wlroots' caps). */
enum wla_buffer_caps {
	WLA_BUFFER_CAP_DATA_PTR = 1 << 0,
	WLA_BUFFER_CAP_SHM = 1 << 1,
	WLA_BUFFER_CAP_DMABUF = 1 << 2,
};

/* Vblank counters of one CRTC (wla_crtc_get_counters): the driver keeps
 * vblanks, seq and refresh_ns, the core missed and latched. */
struct wla_vblank_counters {
	uint64_t vblanks;        /* vblanks while active */
	uint64_t missed;         /* a frame committed before the vblank did
	                          * not latch at it, though no frame was ahead */
	uint64_t latched;        /* vblanks at which a state latched (states
	                          * written over others latch as one) */
	uint64_t seq;            /* sequence number of the last vblank */
	uint64_t settled_seq;    /* the last vblank whose latches the driver
	                          * has reported (missed counts up to it) */
	uint64_t refresh_ns;     /* the current timing's period */
};

/*
 * What every driver implements. Only commit_tail is required; the core
 * calls check, prepare_fb, cleanup_fb, commit_tail and now, the glue the
 * rest.
 */
struct wla_driver_funcs {
	/* Whole-state driver limits, after every per-object check (KMS: the
	 * state with TEST_ONLY). 0 or a negative errno, logged. The state is
	 * relative to the tail of the flip queue (what the CRTCs will show once
	 * everything queued has latched), not to what the hardware shows now:
	 * a KMS driver tests, and later programs, every property of each plane
	 * and CRTC in the state, never a delta against the hardware. */
	int (*atomic_check)(struct wla_device *dev, struct wla_atomic_state *state);
	/* Import fb for scanout (its first scanout reference): set
	 * fb->import. 0 or a negative errno, logged. */
	int (*prepare_fb)(struct wla_device *dev, struct wla_fb *fb);
	/* Its last scanout reference went: drop the import, or keep it for
	 * the fb's next scanout (leave fb->import set; then release_fb is
	 * required). */
	void (*cleanup_fb)(struct wla_device *dev, struct wla_fb *fb);
	/* Optional: drop an import cleanup_fb kept (the fb goes, or another
	 * device prepares it; KMS: its DRM framebuffer, kept per buffer as
	 * wlroots keeps them, so that a buffer scanned out again costs no
	 * import). */
	void (*release_fb)(struct wla_device *dev, struct wla_fb *fb);
	/*
	 * Program a swapped state for the next latch, in one operation: every
	 * CRTC entry with `program` set (wla_for_each_crtc_in_state), turned
	 * off, on, or to its new planes and mode, and the planes on them. The
	 * core calls it once the driver holds fewer than max_slots states on
	 * each CRTC the state latches on. Later the driver calls
	 * wla_crtc_handle_latch for each CRTC that stays active.
	 *
	 * A CRTC turned off is the exception: it is programmed at once, even
	 * with the driver's slots full, and stops scanning out before this
	 * returns (the core then releases what was queued or armed there, and
	 * nothing of the old states is read afterwards). KMS does this as
	 * wlroots' DRM backend does a disable: a blocking commit (no NONBLOCK),
	 * which the kernel holds until the flip in flight is done; the
	 * page-flip event of that flip then names a state the core has already
	 * completed, and the driver drops it instead of reporting a latch.
	 *
	 * 0, or a negative errno: nothing of the state reached the hardware,
	 * and the core turns those CRTCs off (turning off must not fail).
	 * state->allow_modeset says whether the state may change modes (KMS:
	 * ALLOW_MODESET); a state the core merged from a mailbox replacement
	 * carries the replaced one's.
	 */
	int (*commit_tail)(struct wla_device *dev, struct wla_atomic_state *state);
	/* Optional: report (wla_crtc_handle_latch) every latch that has
	 * happened and not been reported yet, before the core cancels a
	 * queue (a state turning a CRTC off, a forced off), so that it never
	 * cancels as not
	 * presented a state that reached the screen (KMS: read the DRM fd's
	 * pending page-flip events). Runs none of the glue's callbacks: events
	 * are delivered after. */
	void (*sync)(struct wla_device *dev);
	/* Deliver the driver's own deferred callbacks (captures that failed
	 * with their CRTC): called after the present events, when the core's
	 * books are consistent. */
	void (*deliver)(struct wla_device *dev);
	/* The driver's clock (CLOCK_MONOTONIC ns): the core stamps commits. */
	uint64_t (*now)(struct wla_device *dev);
	/* The first vblank of crtc at or after t on the timing it runs now,
	 * and not before the first one whose latch the driver has still to
	 * report: its sequence number and start time (the driver's clock).
	 * false while the CRTC is off or its timing is not known yet (KMS:
	 * no vblank seen since the enable). The core answers every question
	 * of the flip queue from it (wla_crtc_next_latch, rearm). */
	bool (*vblank_at)(struct wla_device *dev, struct wla_crtc *crtc, uint64_t t,
		uint64_t *seq, uint64_t *vblank_ns);

	/* For the glue: */
	bool (*vblank_counters)(struct wla_device *dev, struct wla_crtc *crtc,
		struct wla_vblank_counters *counters);
	/* Free the device (every CRTC is off and every state freed). */
	void (*destroy)(struct wla_device *dev);
};

/* An optional feature: the image of a CRTC's next latched frame, composed
 * from its planes (wla_device.capture_funcs; NULL: the driver has none). */
struct wla_capture_funcs {
	/* NULL (logged) if it cannot be had. */
	struct wla_capture *(*capture)(struct wla_device *dev, struct wla_crtc *crtc,
		void (*func)(struct wla_capture *capture, const struct wla_image *image,
			uint64_t seq, void *data), void *data);
	void (*cancel)(struct wla_device *dev, struct wla_capture *capture);
};

/* An optional feature: virtual connectors, plugged and unplugged on request
 * (a driver of virtual hardware: wla_device.hotplug_funcs; NULL otherwise).
 * A connector of real hardware comes and goes by itself, told through the
 * device listener. */
struct wla_hotplug_funcs {
	/* Plug one in with modes (preferred first), announced through the
	 * device listener: 0 or -EINVAL, logged. */
	int (*plug)(struct wla_device *dev, const char *name,
		const struct wla_config_mode *modes, size_t n_modes);
	/* Unplug it, its CRTC off and the listener told first: 0, or -ENOENT
	 * (not logged) if the device has no connector of that name. */
	int (*unplug)(struct wla_device *dev, const char *name);
	/* Break its link, as a cable or a DP link failing would (KMS:
	 * link-status BAD): the screen goes dark until a modeset trains it
	 * again; the listener's connector_link_bad is told. 0, or -ENOENT
	 * (not logged). */
	int (*link_bad)(struct wla_device *dev, const char *name);
};

/* A request for the image of a CRTC's next latched frame; the driver that
 * made it serves or cancels it. */
struct wla_capture {
	struct wla_device *dev;
	struct wl_list link; /* the driver's */
	void (*func)(struct wla_capture *capture, const struct wla_image *image, uint64_t seq,
		void *data);
	void *data;
	void *driver_data;
	/* When it was asked for, on the driver's clock (the VDC's; KMS
	 * serves the next writeback job instead): served with the first
	 * vblank after that. */
	uint64_t asked_ns;
};

/* Connector hot-plug, told to whoever listens (the glue). */
struct wla_device_listener {
	/* The connector is there and connected now (new, or plugged in again;
	 * told again while it has an output, the glue ignores it). */
	void (*connector_added)(struct wla_device *dev, struct wla_connector *conn, void *data);
	/* Before the connector goes: its CRTC has been turned off. */
	void (*connector_removed)(struct wla_device *dev, struct wla_connector *conn,
		void *data);
	/* The link to the monitor failed (KMS: link-status BAD): the kernel
	 * asks for a modeset with the same mode (or a lower one), which a
	 * state with connectors_changed set gives. */
	void (*connector_link_bad)(struct wla_device *dev, struct wla_connector *conn,
		void *data);
	/* The device's session went inactive or active again (dev->inactive
	 * says which); once active, what the CRTCs showed is on screen again
	 * and the compositor may draw. */
	void (*active)(struct wla_device *dev, void *data);
	void *data;
};

struct wla_device {
	const struct wla_driver_funcs *funcs;
	/* Optional features, set by the driver that has them. */
	const struct wla_capture_funcs *capture_funcs;
	const struct wla_hotplug_funcs *hotplug_funcs;
	const char *name;
	/* Indexed by object index; NULL where an object was removed. */
	struct wla_crtc *crtcs[WLA_MAX_CRTCS];
	size_t n_crtcs;
	struct wla_plane *planes[WLA_MAX_PLANES];
	size_t n_planes;
	struct wla_connector *connectors[WLA_MAX_CONNECTORS];
	size_t n_connectors;
	/* Set by the driver: a state handed to it this long before a vblank
	 * latches there, later ones at the vblank after. */
	uint64_t latch_slack_ns;
	/* Set by the driver: the buffers it scans out (enum wla_buffer_caps),
	 * and its DRM fd (-1: none, the default; -1 again once the card is
	 * gone). */
	uint32_t buffer_caps;
	int drm_fd;
	/* Set by the driver: how it times a mode asked for by size and rate
	 * only (wla_device_custom_mode). */
	enum wla_custom_timing custom_timing;
	/* Set by the driver: it scans out copies of the fbs (KMS on a card
	 * without PRIME), so no present is zero-copy. */
	bool scanout_copies;
	/* Set by the driver: a modeset latches when the CRTC is up again, not
	 * on its vblank grid (KMS), so a frame carrying one misses nothing. */
	bool modeset_untimed;
	/* Set by the driver through wla_device_set_inactive: its session is
	 * inactive (KMS: another VT has the seat and DRM master), nothing
	 * reaches the hardware; the glue refuses commits until the listener's
	 * active tells it is back. */
	bool inactive;
	/* Atomic states allocated and not yet freed: a leak check. */
	size_t live_states;
	/* Those states (struct wla_atomic_state.link): removing an object
	 * takes it out of every one of them. */
	struct wl_list states;
	/* struct wla_crtc_entry.event_link of completed entries whose present
	 * event is still to be delivered, oldest first. */
	struct wl_list events;
	bool delivering;
	struct wla_device_listener listener;
	/* Held by the driver around each wake-up whose call-outs may end the
	 * device (a listener destroying the backend): wla_device_destroy
	 * meanwhile only dooms it, and the last release destroys it
	 * (backend/hold.h). */
	struct wla_hold hold;
	void (*doomed_destroy)(struct wla_device *dev);
};

/* Completion of a commit on one CRTC. */
enum wla_present_flags {
	WLA_PRESENT_VSYNC = 1 << 0,
	WLA_PRESENT_HW_CLOCK = 1 << 1,
	WLA_PRESENT_HW_COMPLETION = 1 << 2,
	/* From a driver: it scanned the fbs out themselves, no copy. The core
	 * passes it on only for a state whose primary plane shows a client's
	 * buffer (wla_fb.client): otherwise what is zero-copy is the
	 * compositor's own rendering, not a client's buffer. */
	WLA_PRESENT_ZERO_COPY = 1 << 3,
	/* Set by the core: the state put a client's own buffer on one of the
	 * CRTC's planes (primary or overlay), scanned out without compositing. */
	WLA_PRESENT_CLIENT_PLANE = 1 << 4,
};

struct wla_present {
	uint64_t commit_seq;
	bool presented;
	bool discarded; /* replaced in the queue by a newer frame (mailbox) */
	bool failed;    /* the driver could not program it */
	uint64_t seq;   /* vblank counter of the latching vblank */
	struct timespec when;
	uint64_t refresh_ns;
	uint32_t flags;
};

/* The timing dev gives a mode asked for by size and rate only (a wlroots
 * custom mode), by its custom_timing: within the modes a configuration may
 * name (WLA_MODE_MAX_SIZE, WLA_MODE_MIN/MAX_REFRESH_MHZ). false (logged)
 * if it has none. */
bool wla_device_custom_mode(const struct wla_device *dev, int32_t width, int32_t height,
	int32_t refresh_mhz, struct wla_mode *mode);

/* Objects are set up by the driver: it fills the object (funcs, formats,
 * limits) and then calls these to give it an initial (off) state and add it
 * to dev at the first free index. Return false (logged) on ENOMEM or a full
 * device. */
void wla_device_init(struct wla_device *dev, const struct wla_driver_funcs *funcs,
	const char *name);
bool wla_device_add_crtc(struct wla_device *dev, struct wla_crtc *crtc);
bool wla_device_add_plane(struct wla_device *dev, struct wla_plane *plane);
bool wla_device_add_connector(struct wla_device *dev, struct wla_connector *conn);
/*
 * What the hardware shows at start, kept (KMS: a CRTC the console or a
 * previous compositor left lit): before anything was committed on crtc,
 * its current state becomes enabled and active with mode, routed to the
 * connectors of connector_mask (bits of their indices), as if a commit had
 * put it there. Its planes stay off in the books: what they show is not
 * the core's, and the driver answers for it. false (logged) if crtc has a
 * state or queue of its own, the mode is invalid, or a connector is
 * missing, routed elsewhere or may not use crtc.
 */
bool wla_crtc_adopt(struct wla_crtc *crtc, const struct wla_mode *mode, uint32_t connector_mask);
/* Take an object out of dev (it is off, nothing queued on it) and free its
 * current state and what the core allocated for it (formats, modes). The
 * object itself belongs to the driver. No atomic state names it afterwards:
 * a committed state that still waits on other CRTCs drops the object's
 * entry (and the old object state it owned, its fb released: the object is
 * off), and a state not committed yet drops it and is refused at commit. */
void wla_device_remove_crtc(struct wla_device *dev, struct wla_crtc *crtc);
/* Forget the CRTC's events not yet delivered (wla_device_remove_crtc). */
void wla_crtc_drop_events(struct wla_crtc *crtc);
/* Whether the CRTC has events not yet delivered. */
bool wla_crtc_has_events(const struct wla_crtc *crtc);
void wla_device_remove_plane(struct wla_device *dev, struct wla_plane *plane);
void wla_device_remove_connector(struct wla_device *dev, struct wla_connector *conn);
/* Free the current states of every object (after every commit completed). */
void wla_device_finish(struct wla_device *dev);

/* The owner (the glue) ends dev: destroy(dev) (which calls the driver's
 * funcs->destroy) runs now, or, inside a wake-up of the driver (a listener
 * it called destroyed the backend), when the driver releases the device;
 * its listener is told nothing more either way. */
void wla_device_destroy(struct wla_device *dev, void (*destroy)(struct wla_device *dev));
/* A driver, around a wake-up that may call out (delivers events, serves
 * captures, announces connectors). */
void wla_device_hold(struct wla_device *dev);
/* Whether the device lives on; false: it was destroyed now, touch nothing
 * of it. */
bool wla_device_release(struct wla_device *dev);

/* Add a format (and its modifiers, copied) to a plane. false on ENOMEM. */
bool wla_plane_add_format(struct wla_plane *plane, uint32_t format, const uint64_t *modifiers,
	size_t n_modifiers);
bool wla_plane_supports(const struct wla_plane *plane, uint32_t format, uint64_t modifier);
/* Replace the connector's modes with a copy of modes (preferred first);
 * false (logged) on ENOMEM, the old list kept. */
bool wla_connector_set_modes(struct wla_connector *conn, const struct wla_mode *modes,
	size_t n_modes);

/* Object states: duplicate returns a copy that the caller owns (NULL on
 * ENOMEM); a duplicated plane state takes its own fb reference and is not
 * prepared. destroy frees what duplicate returned. */
struct wla_crtc_state *wla_crtc_state_duplicate(const struct wla_crtc_state *state);
void wla_crtc_state_destroy(struct wla_crtc_state *state);
/* Put lut (a new reference of it; NULL: none) in the state. */
void wla_crtc_state_set_gamma(struct wla_crtc_state *state, struct wla_gamma_lut *lut);
struct wla_plane_state *wla_plane_state_duplicate(const struct wla_plane_state *state);
void wla_plane_state_destroy(struct wla_plane_state *state);
/* Take the scanout reference of ps->fb (no-op without fb or if already
 * prepared): the fb's lock, and the driver's import of dev for the first.
 * 0 or a negative errno; on failure nothing is held. */
int wla_plane_state_prepare_fb(struct wla_device *dev, struct wla_plane_state *ps);
/* Drop the scanout reference taken by prepare (no-op if not prepared). */
void wla_plane_state_cleanup_fb(struct wla_plane_state *ps);
struct wla_connector_state *wla_connector_state_duplicate(
	const struct wla_connector_state *state);
void wla_connector_state_destroy(struct wla_connector_state *state);

/* Atomic state */

struct wla_crtc_entry {
	struct wla_crtc *ptr;
	struct wla_crtc_state *old_state, *new_state;
	uint64_t swaps; /* the object's when its state was taken */
	struct wla_atomic_state *state;
	/* The flip queue, filled in at commit. */
	enum wla_queue_stage stage;
	struct wl_list link;  /* wla_crtc.queue while WAITING or ARMED */
	bool latch;   /* active after the state: completes at a latch */
	bool frame;   /* latch with want_event: counts against queue_depth */
	bool program; /* commit_tail: this CRTC goes to the hardware now */
	bool done;    /* completed */
	/* A frame armed: the first vblank it misses if it does not latch
	 * there (counts_missed false: the driver's grid was not known). */
	uint64_t first_seq;
	bool counts_missed;
	/* The state owns new_state too: a state that replaced it completed
	 * while this one had not on another CRTC (freed with this state). */
	bool adopted;
	/* Set at commit (the plane states may be gone by the latch): the state
	 * puts a client's own buffer on the CRTC's primary plane, or on any of
	 * its planes. */
	bool client_primary, client_plane;
	uint64_t commit_seq;
	bool want_event;
	struct wla_present event;
	struct wl_list event_link; /* wla_device.events until delivered */
	bool event_queued;
};

struct wla_plane_entry {
	struct wla_plane *ptr;
	struct wla_plane_state *old_state, *new_state;
	uint64_t swaps;
	/* The state owns new_state too: a state that replaced it completed
	 * while this one had not (hand_over in commit.c; freed with this state). */
	bool adopted;
};

struct wla_connector_entry {
	struct wla_connector *ptr;
	struct wla_connector_state *old_state, *new_state;
	uint64_t swaps;
	bool adopted; /* as for planes */
};

/* What wla_atomic_check refused, for callers that try alternatives (plane
 * assignment): the kind of limit and the first plane refused. */
enum wla_check_reason {
	WLA_CHECK_OK,
	WLA_CHECK_FORMAT,   /* a format or modifier the plane lacks */
	WLA_CHECK_CROP,     /* src empty or outside the fb */
	WLA_CHECK_SCALING,  /* src/dst outside the plane's scaling limits */
	WLA_CHECK_SIZE,     /* an fb larger than the plane takes */
	WLA_CHECK_POSITION, /* dst empty or out of range, or not the full screen
	                     * a full-screen-only plane needs */
	WLA_CHECK_ROUTING,  /* CRTC, connector or modeset rules */
	WLA_CHECK_DRIVER,   /* a driver's own limits (KMS: TEST_ONLY) */
	WLA_CHECK_NOMEM,
};

struct wla_atomic_state {
	struct wla_device *dev;
	bool allow_modeset;
	/* A trial (plane assignment): check refusals are logged at debug
	 * level, not as errors. */
	bool quiet;
	/* Check with the core's rules and the objects' hooks only, not the
	 * device's whole-state check (KMS: no TEST_ONLY): for searches that
	 * test only their result with the driver. */
	bool skip_driver_check;
	/* Set by wla_atomic_check when it refuses the state. */
	enum wla_check_reason refused;
	struct wla_plane *refused_plane;
	/* A cursor update (the kernel's legacy cursor path): only cursor
	 * planes, no modeset, no connector. An ordinary state otherwise. */
	bool legacy_cursor_update;
	bool swapped;
	/* When the point of no return was passed (the driver's clock): the
	 * state cannot latch at a vblank that started before. */
	uint64_t commit_ns;
	/* Entries are indexed by object index; ptr NULL means not in the state. */
	struct wla_crtc_entry crtcs[WLA_MAX_CRTCS];
	struct wla_plane_entry planes[WLA_MAX_PLANES];
	struct wla_connector_entry connectors[WLA_MAX_CONNECTORS];
	/* CRTC entries of this commit that have not completed, and present
	 * events not yet delivered: the state is freed when both are 0. */
	unsigned pending_crtcs;
	unsigned pending_events;
	/* The core is working on it: not freed before it lets go. */
	unsigned busy;
	bool committed;
	/* wla_device.states */
	struct wl_list link;
	/* Not committed yet and an object of it was removed (its name, as
	 * long as a connector's may be): a commit is refused with -ENODEV. */
	char removed[sizeof(((struct wla_connector *)0)->name)];
};

/* A new empty state for dev, owned by the caller; NULL on ENOMEM. */
struct wla_atomic_state *wla_atomic_state_alloc(struct wla_device *dev);
/*
 * Free a state the caller owns (never committed, or refused) and every
 * object state it owns. Prepared planes must have been cleaned up first
 * (an invariant of the commit path, asserted).
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
 * without connector and the reverse, the mode's timing), then planes (src
 * inside the fb, dst coordinates, scaling limits, format and modifier, fb
 * size), then the drivers' hooks. Fills the computed fields. Returns 0 or a
 * negative errno after logging one line naming the object, the field and
 * the value.
 */
int wla_atomic_check(struct wla_atomic_state *state);

/*
 * Check, prepare, swap and queue a state whose CRTCs have nothing queued: it
 * latches at the next vblank. On success the core owns the state (see the
 * ownership notes above). On failure (negative errno, logged) nothing
 * changed, no scanout reference is held and the caller still owns the
 * state.
 * -EBUSY: a CRTC of the state that stays active has a state queued.
 */
int wla_atomic_commit(struct wla_atomic_state *state);

/*
 * The same, through the flip queue: every error is still found here (check
 * and prepare run now), the state is swapped in at once, and it latches
 * after what is already queued on its CRTCs, one state per vblank. A mode
 * change of an active CRTC is queued too and retimes the CRTC where it
 * latches. Turning a CRTC off does not wait: what is queued on it is
 * cancelled (completed as not presented) once the driver stopped it.
 * With queue_depth frames waiting the commit is refused with -EBUSY (a
 * modeset excepted: it waits behind them, one past the depth, as a kernel
 * modeset waits for the flips in flight), or with mailbox set replaces the
 * newest frame the driver has not been handed, which is reported discarded
 * (not presented) and its fbs cleaned up. Ownership as for
 * wla_atomic_commit.
 */
int wla_atomic_nonblocking_commit(struct wla_atomic_state *state);

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
 * A timing's vblanks: vblank k (k >= 0) starts at
 * origin_ns + round(k * 1e12 / refresh_mhz) ns, the exact rate of the mode
 * to the mHz, so that a grid drifts by nothing over any number of frames.
 */
struct wla_vblank_grid {
	uint64_t origin_ns;
	int32_t refresh_mhz; /* > 0 */
};

uint64_t wla_vblank_grid_ns(const struct wla_vblank_grid *grid, uint64_t k);
/* The last vblank at or before t (0 before the origin). */
uint64_t wla_vblank_grid_index(const struct wla_vblank_grid *grid, uint64_t t);
/* The first vblank at index k or later at or after t: where a state ready
 * (written, plus the latch minimum) at t latches, if vblank k is the first
 * the hardware has not processed yet. */
uint64_t wla_vblank_grid_first_from(const struct wla_vblank_grid *grid, uint64_t k,
	uint64_t t);

/*
 * The flip queue's answers (backend/atomic/vblank.c), for the glue and the
 * drivers alike. Whether a frame committed now on crtc waits in its queue
 * without being refused or replacing another (mailbox: fewer than
 * queue_depth frames wait for the driver; else fewer are pending). A
 * modeset may still wait one past the depth (wla_atomic_nonblocking_commit).
 */
bool wla_crtc_frame_fits(const struct wla_crtc *crtc);
/* The queue depth in effect on crtc (queue_depth 0 means 1). */
unsigned wla_crtc_queue_depth(const struct wla_crtc *crtc);
/* Whether an object of the state had another state swapped in since the
 * state took its current one (a latch reported meanwhile handed over a
 * state the driver could not program, and the CRTC was turned off): its old
 * states may be gone. Logged (debug if quiet); check and commit refuse such
 * a state with -EAGAIN: build it again. */
bool wla_atomic_state_is_stale(struct wla_atomic_state *state);
/* Commit reports the latches that already happened (the driver's sync)
 * before it turns a CRTC off, refused or not: they are the hardware's doing,
 * not the commit's. This does it, if state turns one off; whether it did.
 * A test that must see the books before a commit calls it first. */
bool wla_atomic_state_sync_latches(struct wla_atomic_state *state);
/* When the states armed on crtc latch (at one vblank with rearm): false
 * if none is armed or the driver's timing is not known. */
bool wla_crtc_armed_latch(struct wla_crtc *crtc, uint64_t *latch_ns);
/* When a frame committed now on crtc would latch, after what is queued
 * (a queued mode change restarts the timing where it latches), and the
 * latest time to commit for it; false while off or the timing is unknown. */
bool wla_crtc_next_latch(struct wla_crtc *crtc, uint64_t *latch_ns, uint64_t *commit_by_ns);
/* The vblanks frames missed on crtc up to the vblank seq_now (the last one
 * that passed): those of frames that latched since, and those the armed
 * frames missed so far. */
uint64_t wla_crtc_missed(const struct wla_crtc *crtc, uint64_t seq_now);
/* crtc's counters: vblanks, seq and refresh from the driver
 * (vblank_counters), missed and latched from the core. false if the driver
 * has none (the core's are filled in all the same). */
bool wla_crtc_get_counters(struct wla_crtc *crtc, struct wla_vblank_counters *counters);

/*
 * Driver entry point: the states armed on crtc latched at the vblank (seq,
 * when): the oldest one, and those written over it (rearm). Completes them: the states it replaced are cleaned up
 * once it completed on all its CRTCs, its present event is queued, and the
 * next waiting state is handed to the driver (commit_tail, from in here).
 * The driver calls wla_device_deliver_events once it is done with the
 * wake-up, when its own books are consistent again.
 */
void wla_crtc_handle_latch(struct wla_crtc *crtc, uint64_t seq, const struct timespec *when,
	uint64_t refresh_ns, uint32_t flags);
/* Deliver the queued present events, oldest first. Handlers may commit. */
void wla_device_deliver_events(struct wla_device *dev);
/*
 * Driver entry point: the device's session went inactive (another has the
 * hardware) or active again. The vblanks while it is away are missed by no
 * frame: what frames armed then missed so far counts, and a frame armed or
 * held while away starts counting no miss (it latches when the session is
 * back, whenever that is).
 */
void wla_device_set_inactive(struct wla_device *dev, bool inactive);
/* Turn crtc off now (enable and active cleared, its connectors unrouted, the
 * planes on it off and their fbs released), cancelling what is queued on it:
 * for a driver that lost the CRTC, an unplugged connector, or destroy.
 * Never fails (without memory it logs and leaves the CRTC as it was). Events
 * are delivered before it returns. */
void wla_crtc_force_off(struct wla_crtc *crtc);

#endif
