/*
 * Planes for compositors: an output's planes, overlay offers that join the
 * output's next atomic state, and a helper that puts a compositor's
 * surfaces on planes.
 *
 * wlroots 0.15 gives a compositor a primary buffer and a cursor. On a
 * wlatomic output it may also offer buffers for the overlay planes: the
 * offer is part of the state of the output's next commit, so the primary
 * buffer, the cursor and every overlay are checked and latch together.
 * An overlay's buffer is locked from the commit that shows it until the
 * state that replaced it latched, as the primary buffer is.
 */
#ifndef WLATOMIC_PLANES_H
#define WLATOMIC_PLANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wlr_buffer;
struct wlr_output;
struct wlr_drm_format_set;

enum wla_output_plane_type {
	WLA_OUTPUT_PLANE_PRIMARY,
	WLA_OUTPUT_PLANE_OVERLAY,
	WLA_OUTPUT_PLANE_CURSOR,
};

/* One plane of an output, as the display controller describes it. */
struct wla_output_plane {
	/* Stable while the output keeps its CRTC; offers may name it. */
	uint32_t id;
	enum wla_output_plane_type type;
	unsigned zpos; /* fixed stacking order, higher on top */
	/* src/dst ratios the plane scales by, 16.16: min_scale is the largest
	 * magnification (0x2000: 8x), max_scale the largest reduction
	 * (0x40000: 4x). Both 0x10000: the plane does not scale. */
	uint32_t min_scale, max_scale;
	/* The largest buffer, 0 if unlimited. */
	uint32_t max_width, max_height;
	/* The plane must cover the whole output (most primaries). */
	bool full_screen_only;
	/* Formats with their modifiers; valid while the output keeps its
	 * CRTC (an output enabled on another CRTC, where connectors outnumber
	 * CRTCs, has that CRTC's planes: ask again after enabling it). */
	const struct wlr_drm_format_set *formats;
};

/*
 * The output's planes, bottom to top: fills up to cap entries and returns
 * how many the output has (0 if it is not a wlatomic output, or has no
 * CRTC: an output off whose CRTC another output took).
 */
size_t wla_output_get_planes(struct wlr_output *output, struct wla_output_plane *planes,
	size_t cap);

/* A buffer offered for an overlay plane. */
struct wla_overlay {
	struct wlr_buffer *buffer;
	/* Where, in the output's buffer coordinates (the mode's pixels, before
	 * the output transform), and how large: the buffer's crop is scaled to
	 * dst_w x dst_h. Parts outside the output are clipped. */
	int32_t dst_x, dst_y;
	uint32_t dst_w, dst_h;
	/* The crop of the buffer, 16.16 buffer pixels; src_w or src_h 0: the
	 * whole buffer. */
	uint32_t src_x, src_y, src_w, src_h;
	/* Order among the overlays, higher on top; overlays are all above the
	 * primary plane and below the cursor. Equal z keeps the offer's order. */
	int32_t z;
	/* A plane id from wla_output_get_planes, or 0: the overlay planes are
	 * given out in z order, bottom-most first. */
	uint32_t plane;
};

/* Why an overlay (or a surface, for the helper) is not on a plane. */
enum wla_overlay_status {
	WLA_OVERLAY_OK,         /* on its plane */
	WLA_OVERLAY_UNCHECKED,  /* not tried: an earlier overlay was refused */
	WLA_OVERLAY_FORMAT,     /* the plane lacks the buffer's format or modifier */
	WLA_OVERLAY_CROP,       /* the crop is empty or outside the buffer */
	WLA_OVERLAY_SCALING,    /* the crop to dst ratio is beyond the plane's limits */
	WLA_OVERLAY_SIZE,       /* the buffer is larger than the plane takes */
	WLA_OVERLAY_POSITION,   /* dst is empty, out of range or not where the plane
	                         * must be */
	WLA_OVERLAY_NO_PLANE,   /* more overlays than planes, or the named plane is not
	                         * an overlay plane of this output, or the z order does
	                         * not fit the planes' */
	WLA_OVERLAY_BUFFER,     /* the buffer cannot be scanned out (no CPU or dmabuf
	                         * access, or destroyed) */
	WLA_OVERLAY_OUTPUT_OFF, /* the output is disabled */
	WLA_OVERLAY_HARDWARE,   /* the display controller refused the whole state
	                         * (KMS: TEST_ONLY) */
	WLA_OVERLAY_OCCLUDED,   /* helper: composited surfaces above it overlap it */
	WLA_OVERLAY_COMPOSITED, /* helper: no plane left, or the search budget ran out */
};

/* A short English name of a status ("format", "scaling", ...). */
const char *wla_overlay_status_name(enum wla_overlay_status status);

/*
 * Offer overlays for the output's next commit (wlr_output_test tries them
 * with the rest of the pending state; a successful wlr_output_commit shows
 * them). The offer replaces the previous one; n 0 takes every overlay off
 * at the next commit. A commit without a buffer also carries it. Overlays
 * that were shown stay on screen until an offer replaces them; a disabled
 * output drops them. The buffers are referenced, not locked, until the
 * commit: a buffer destroyed before it makes the commit fail.
 *
 * Returns 0, or a negative errno after one error line: -EINVAL for a NULL
 * buffer or overlays when n is too large (status filled), -ENODEV if the
 * output is not a wlatomic output or is disabled (WLA_OVERLAY_OUTPUT_OFF),
 * -ENOMEM. On error the previous offer stands.
 */
int wla_output_set_overlays(struct wlr_output *output, const struct wla_overlay *overlays,
	size_t n);

/*
 * What the last wlr_output_test or wlr_output_commit of the output said of
 * each overlay of the offer (or what wla_output_set_overlays said of a
 * refused offer): status[i] for overlay i, up to n. Returns how many
 * overlays that offer had. A refused state stops at its first refusal, in
 * the order of the planes: the overlay on the refused plane has the reason
 * and the others stay WLA_OVERLAY_UNCHECKED; a refusal of the whole state
 * by the display controller (KMS TEST_ONLY) gives every overlay
 * WLA_OVERLAY_HARDWARE, and one on the primary plane or the cursor gives
 * none a reason. wla_output_assign_layers overwrites them with its trials.
 */
size_t wla_output_overlay_status(struct wlr_output *output, enum wla_overlay_status *status,
	size_t n);

/*
 * Layer-to-plane assignment. The compositor describes what it would show on
 * the output, bottom to top; the helper picks which layers go on overlay
 * planes (and, for a layer that covers the whole output, the primary
 * plane), checking candidate states with the core's check and the driver's
 * only for the result, and leaves the rest to be composited.
 */
struct wla_layer {
	struct wlr_buffer *buffer; /* NULL: only composited (drawn by the compositor) */
	int32_t dst_x, dst_y;      /* output buffer coordinates, as for overlays */
	uint32_t dst_w, dst_h;
	uint32_t src_x, src_y, src_w, src_h; /* 16.16; w or h 0: the whole buffer */
	bool opaque; /* the buffer covers dst with no transparency */
	/* Outputs: */
	bool on_plane;  /* shown by a plane, the compositor must not draw it */
	bool primary;   /* shown by the primary plane: commit this buffer
	                 * (wlr_output_attach_buffer) instead of rendering */
	uint32_t plane; /* the plane id, when on_plane */
	enum wla_overlay_status status;
};

/* The cost of the last assignment on an output (benchmarks). */
struct wla_assign_stats {
	uint32_t checks;       /* candidate states checked by the core */
	uint32_t driver_tests; /* of those, tested by the driver too (KMS: ioctls) */
	uint32_t cache_hits;   /* candidates refused from earlier results, unchecked */
	bool reused;           /* the last frame's placement was kept */
};

/*
 * Assign the n layers (bottom to top) of the output's next frame to its
 * planes, and offer the overlays (wla_output_set_overlays) for its next
 * commit. The result is in each layer's outputs; the return value is how
 * many layers are on planes, or a negative errno (logged): -ENODEV if the
 * output is not a wlatomic output, -ENOMEM. Layers with an unusable buffer
 * are composited; nothing is refused. The compositor then renders the
 * layers that are not on_plane (or commits the primary layer's buffer) and
 * commits. A disabled output gets no offer and every layer
 * WLA_OVERLAY_OUTPUT_OFF.
 *
 * The search tries at most 16 candidate states per frame, remembers for
 * 300 frames which layer (buffer format, modifier, size, crop and
 * rectangle) a plane refused, and keeps the last frame's placement when
 * only the buffers changed, until a commit of it is refused.
 */
int wla_output_assign_layers(struct wlr_output *output, struct wla_layer *layers, size_t n,
	struct wla_assign_stats *stats);

#endif
