/*
 * The KMS driver: a DRM card driven through the kernel's atomic API, as a
 * second driver of the atomic core beside the VDC.
 *
 * The card's CRTCs, planes and connectors become the core's objects, with
 * their property ids looked up once. The core's check is followed by the
 * whole state with DRM_MODE_ATOMIC_TEST_ONLY; a commit is one
 * drmModeAtomicCommit (NONBLOCK | PAGE_FLIP_EVENT for frames, blocking for a
 * CRTC turned off), and page-flip events report the latches. The kernel
 * holds one flip per CRTC: max_slots is 1 and the core's flip queue holds
 * the rest. A framebuffer is a dmabuf imported in prepare_fb (a DRM fb id)
 * and removed in cleanup_fb.
 */
#ifndef BACKEND_KMS_H
#define BACKEND_KMS_H

#include <stdbool.h>
#include <stdint.h>
#include <wayland-server-core.h>
#include <wlatomic/config.h>
#include "backend/atomic.h"

struct wla_card;
struct wla_kms;
struct kms_wb_job;

/* A writeback not done this long after its commit is given up: its
 * captures go on the next frame, and fail after this many give-ups in a
 * row. */
#define WLA_KMS_WB_STALL_MS 3000
#define WLA_KMS_WB_STALLS_MAX 3

/* Property ids of the objects, looked up once (0: not exposed). */
struct wla_kms_plane_props {
	uint32_t type, fb_id, crtc_id, src_x, src_y, src_w, src_h;
	uint32_t crtc_x, crtc_y, crtc_w, crtc_h, in_formats, zpos;
	uint32_t fb_damage_clips; /* 0: the plane takes no damage hint */
};

/* A GAMMA_LUT blob of a LUT (one reference held). */
#define WLA_KMS_GAMMA_BLOBS 4
struct wla_kms_gamma_blob {
	struct wla_gamma_lut *lut;
	uint32_t id;
};

struct wla_kms_crtc {
	struct wla_crtc base;
	struct wla_kms *kms;
	uint32_t id;
	unsigned pipe;
	uint32_t prop_active, prop_mode_id;
	/* GAMMA_LUT (0: the CRTC has none; its size is base.gamma_size), and
	 * the blobs made of the LUTs it was last given, newest last: a LUT
	 * kept by the states costs one blob, made once. */
	uint32_t prop_gamma_lut;
	uint32_t prop_vrr_enabled; /* 0: none (kernels before 5.0) */
	struct wla_kms_gamma_blob gamma_blobs[WLA_KMS_GAMMA_BLOBS];
	size_t n_gamma_blobs;
	/* The commit serial whose page-flip event latches the state the
	 * driver holds on this CRTC (0: none); other events are stale. */
	uint64_t armed_serial;
	/* A commit of the driver's own (a writeback capture) in flight: its
	 * serial, and the state commit_tail handed over meanwhile, programmed
	 * when it completes (the kernel takes one commit per CRTC at once). */
	uint64_t own_serial;
	struct wla_atomic_state *deferred;
	uint32_t deferred_mask; /* the CRTCs to program of it */
	/* A state latching here was handed over while the session was
	 * inactive: it goes to the card with the restore. */
	bool held;
	/* The mode the CRTC runs (its vblank period). */
	struct wla_mode mode;
	uint64_t period_ns;
	bool active;
	/* Vblank bookkeeping from page-flip events and the vblank counter. */
	struct wla_vblank_counters counters;
	uint64_t first_seq;  /* the kernel's sequence when it was turned on */
	bool have_vblank;
	/* The card has no vblank events (drmCrtcGetSequence: EOPNOTSUPP):
	 * the driver counts refresh cycles, on the mode's period. */
	bool no_vblank;
	uint64_t last_vblank_ns;
	uint64_t last_vblank_seq;
	/* The sequences reported are the kernel's counter plus this: raised
	 * when the counter is behind what was reported (it stands still while
	 * another session keeps the CRTC off; the count meanwhile followed
	 * the clock), so that they never go back. */
	uint64_t seq_bias;
	/* A black framebuffer of the driver's own for the primary plane of a
	 * CRTC lit without one of the core's (the restore after a VT switch
	 * before the first frame): made once, freed with the driver. */
	uint32_t blank_fb, blank_handle, blank_w, blank_h;
	/* One of another size, replaced by the restore being built: removed
	 * once that is on screen. */
	uint32_t blank_old_fb, blank_old_handle;
};

struct wla_kms_plane {
	struct wla_plane base;
	uint32_t id;
	struct wla_kms_plane_props props;
	/* The KMS id of the CRTC on which the plane shows a framebuffer that
	 * is not ours (what the console left on a CRTC kept lit at start), 0:
	 * none. The core's books have the plane off; it stays as the kernel
	 * has it until a state sets it, or its CRTC goes off or changes mode. */
	uint32_t foreign_crtc;
};

struct wla_kms_connector {
	struct wla_connector base;
	struct wla_kms *kms;
	uint32_t id;
	uint32_t prop_crtc_id;
	uint32_t prop_link_status; /* 0: none */
	/* What the monitor was at its last read (its EDID and mode list): a
	 * hot-plug event that finds it different while the connector stayed
	 * connected is a monitor swapped. */
	uint64_t monitor_sig;
	bool added; /* in the device (wla_device_add_connector) */
};

/*
 * A writeback connector: where capture reads what the kernel composed. It
 * is attached to the first CRTC turned on that it can serve (part of that
 * modeset) and detached when that CRTC turns off, so that a capture needs
 * no modeset: the next commit on the CRTC carries a WRITEBACK_FB_ID, or,
 * when nothing is queued there, a commit of the driver's own does.
 */
struct wla_kms_writeback {
	uint32_t id;
	uint32_t possible_crtcs;
	uint32_t prop_crtc_id, prop_fb_id, prop_out_fence;
	uint32_t routed_crtc; /* KMS id of the CRTC it is attached to (0: none) */
	bool usable;          /* false once the kernel refused to attach it */
};

/*
 * The user_data of a commit that asks for page-flip events, handed back by
 * the kernel with the event of each CRTC of the commit: the driver and the
 * commit's serial. The slots live as long as the driver, so that an event
 * read late still points at valid memory; a slot is taken again once every
 * CRTC it waits for reported (the next free one after the last taken).
 */
struct wla_kms_flip {
	struct wla_kms *kms;
	uint64_t serial;
	uint32_t pending; /* CRTCs (bits of their index) whose event is to come */
};

#define WLA_KMS_FLIPS 64

struct wla_kms {
	struct wla_device dev;
	int fd;
	char path[WLA_DRM_DEVICE_MAX];
	char driver_name[32];
	struct wl_event_loop *loop;
	struct wl_event_source *fd_source;
	/* The card the glue opened and handed over (include/backend/session.h):
	 * the caller's, outliving the driver. It tells hot-plugs (change) and
	 * the end of the seat's session that may close the fd. */
	struct wla_card *card;
	struct wl_listener card_change;
	struct wl_listener card_session_end;
	struct wl_listener card_active;
	/* Restores after a session came back, and those the kernel refused. */
	uint64_t restores, restores_failed;
	uint64_t reprobes;
	struct wla_kms_crtc crtcs[WLA_MAX_CRTCS];
	size_t n_crtcs;
	struct wla_kms_plane planes[WLA_MAX_PLANES];
	size_t n_planes;
	struct wla_kms_connector *connectors[WLA_MAX_CONNECTORS];
	size_t n_connectors;
	struct wla_kms_writeback writeback;
	bool has_writeback;
	uint32_t cursor_width, cursor_height;
	bool monotonic;      /* page-flip timestamps are CLOCK_MONOTONIC */
	/* No PRIME (bochs): buffers are copied into dumb buffers of the card
	 * at each scanout (backend/kms/fb.c). */
	bool copy_scanout;
	uint64_t bytes_copied;
	uint64_t serial;     /* of the last commit that asked for events */
	struct wla_kms_flip flips[WLA_KMS_FLIPS];
	size_t next_flip;
	/* Imports of fbs (backend/kms/fb.c: struct kms_fb.link), each a DRM
	 * framebuffer kept while its fb lives. */
	struct wl_list imports;
	/* Mode blobs made for MODE_ID, kept until destroy. */
	struct wla_kms_blob *blobs;
	size_t n_blobs;
	/* The device stopped answering (a commit or a read failed with ENODEV
	 * or the fd hung up): every CRTC is off and commits are refused. */
	bool lost;
	bool lost_pending; /* its CRTCs still to be turned off */
	struct wl_event_source *idle; /* deferred work (run_deferred) */
	/* In a delivery of dispatch's or the idle's, after which they run
	 * the deferred work themselves: no idle for it. */
	bool dispatching;
	/* The fd was read since dispatch last ended: the event loop's word
	 * that it is readable may be stale (dispatch then asks poll). */
	bool fd_read;
	/* Captures not yet carried by a commit, and those that failed, told
	 * at the next delivery (struct wla_capture.link). */
	struct wl_list captures;
	struct wl_list failed_captures;
	struct kms_wb_job *wb_job; /* the writeback in flight, one at a time */
	unsigned wb_stalls;        /* writebacks given up in a row */
	/* How long a writeback may take (WLA_KMS_WB_STALL_MS; tests set it),
	 * and for tests, how many of the next writebacks are taken as never
	 * completing (a display engine that drops them). */
	uint32_t wb_stall_ms;
	unsigned fail_writebacks;
	uint64_t wb_stalls_total;
	bool destroying;
	/* Counters for tests and the benchmark. */
	uint64_t commits, test_commits, refused, fbs_added, fbs_removed;
	/* prepare_fb calls that found the fb's import kept. */
	uint64_t fbs_reused;
	/* Checks that sent no TEST_ONLY: only framebuffers changed. */
	uint64_t tests_skipped;
	int live_fbs;    /* DRM fbs made and not yet removed (kept ones too) */
	int scanout_fbs; /* of those, the ones prepared (a state scans out) */
	/* Fault injection for tests: the next commit (not TEST_ONLY) fails
	 * with this errno, as if the kernel had refused it. */
	int fail_commit;
};

/*
 * Describe the card the glue opened (see wla_session_open_card) to the
 * core. The card stays the caller's: the driver never closes its fd, and
 * the card must outlive the driver. With a loop, page-flip events are read
 * from the fd on it; without one only by wla_kms_dispatch. NULL when the
 * fd is no KMS device with atomic modesetting (logged, naming the card,
 * the fd, the refused call and errno) or cannot be described.
 */
struct wla_kms *wla_kms_create(struct wl_event_loop *loop, struct wla_card *card);
/* The same as a device of the driver interface, for the glue. */
struct wla_device *wla_kms_device_create(struct wl_event_loop *loop, struct wla_card *card);
/* Turn every CRTC off, then free everything; the card stays open (the
 * caller closes it). */
void wla_kms_destroy(struct wla_kms *kms);
struct wla_kms *wla_kms_from_device(struct wla_device *dev);
bool wla_device_is_kms(struct wla_device *dev);

/* Read and handle the page-flip events waiting on the fd; with timeout_ms
 * > 0, wait that long for one first. Returns the number handled, or a
 * negative errno. Events are delivered before it returns. */
int wla_kms_dispatch(struct wla_kms *kms, int timeout_ms);

/*
 * The card's connectors changed (a hot-plug uevent; tests inject one):
 * read every connector again, announce new connected ones and remove the
 * outputs of those gone or disconnected (their CRTC off first).
 * status_override >= 0 forces the connection status read for connector id
 * conn_id (tests on a card that cannot unplug), -1 reads the kernel's.
 */
void wla_kms_reprobe(struct wla_kms *kms, uint32_t conn_id, int status_override);

/* The device is gone: every CRTC off (not presented), further commits
 * refused with -ENODEV. Logged once. */
void wla_kms_device_lost(struct wla_kms *kms, int err);

struct wla_kms_crtc *wla_kms_crtc_from_crtc(struct wla_crtc *crtc);

#endif
