/*
 * Planes for compositors (include/wlatomic/planes.h): an output's planes as
 * the core describes them, and overlay offers that join the state of the
 * output's next commit.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/util/log.h>
#include <wlatomic/planes.h>
#include "backend/wlr.h"
#include "util.h"

static struct wla_output *wla_output_from_wlr(struct wlr_output *output)
{
	if (!wla_output_is_wla(output)) {
		return NULL;
	}
	struct wla_output *out = wl_container_of(output, out, base);
	return out;
}

/* Whether plane is one the output may use: its CRTC's primary or cursor, or
 * an overlay plane its CRTC can take. */
static bool plane_of_output(const struct wla_output *out, const struct wla_plane *plane)
{
	if (!plane || !out->crtc || !(plane->possible_crtcs & (1u << out->crtc->index))) {
		return false;
	}
	return plane->type == WLA_PLANE_OVERLAY || plane == out->crtc->primary ||
		plane == out->crtc->cursor;
}

static int compare_zpos(const void *a, const void *b)
{
	const struct wla_plane *x = *(struct wla_plane *const *)a;
	const struct wla_plane *y = *(struct wla_plane *const *)b;
	if (x->zpos != y->zpos) {
		return x->zpos < y->zpos ? -1 : 1;
	}
	return x->index < y->index ? -1 : x->index > y->index;
}

bool wla_output_planes_init(struct wla_output *out)
{
	struct wla_output_planes *p = calloc(1, sizeof(*p));
	if (!p) {
		goto nomem;
	}
	out->planes = p;
	p->refused_slot = SIZE_MAX;
	struct wla_device *dev = out->dev;
	for (size_t i = 0; i < dev->n_planes; i++) {
		if (plane_of_output(out, dev->planes[i])) {
			p->planes[p->n++] = dev->planes[i];
		}
	}
	qsort(p->planes, p->n, sizeof(p->planes[0]), compare_zpos);
	for (size_t i = 0; i < p->n; i++) {
		if (!wla_plane_add_formats_to(&p->formats[i], p->planes[i])) {
			goto nomem;
		}
		p->n_overlays += p->planes[i]->type == WLA_PLANE_OVERLAY;
	}
	return true;
nomem:
	wlr_log(WLR_ERROR, "output %s: out of memory for its planes", out->conn->name);
	return false;
}

static void drop_offer(struct wla_output_planes *p)
{
	for (size_t i = 0; i < p->n_offer; i++) {
		wla_fb_put(p->offer[i].fb);
	}
	free(p->offer);
	p->offer = NULL;
	p->n_offer = 0;
	p->pending = false;
}

void wla_output_planes_finish(struct wla_output *out)
{
	struct wla_output_planes *p = out->planes;
	if (!p) {
		return;
	}
	drop_offer(p);
	free(p->status);
	for (size_t i = 0; i < WLA_MAX_PLANES; i++) {
		wlr_drm_format_set_finish(&p->formats[i]);
	}
	wla_assign_finish(p);
	free(p);
	out->planes = NULL;
}

WLA_EXPORT const char *wla_overlay_status_name(enum wla_overlay_status status)
{
	switch (status) {
	case WLA_OVERLAY_OK: return "ok";
	case WLA_OVERLAY_UNCHECKED: return "unchecked";
	case WLA_OVERLAY_FORMAT: return "format";
	case WLA_OVERLAY_CROP: return "crop";
	case WLA_OVERLAY_SCALING: return "scaling";
	case WLA_OVERLAY_SIZE: return "size";
	case WLA_OVERLAY_POSITION: return "position";
	case WLA_OVERLAY_NO_PLANE: return "no plane";
	case WLA_OVERLAY_BUFFER: return "buffer";
	case WLA_OVERLAY_OUTPUT_OFF: return "output off";
	case WLA_OVERLAY_HARDWARE: return "hardware";
	case WLA_OVERLAY_OCCLUDED: return "occluded";
	case WLA_OVERLAY_COMPOSITED: return "composited";
	}
	return "?";
}

WLA_EXPORT size_t wla_output_get_planes(struct wlr_output *output,
	struct wla_output_plane *planes, size_t cap)
{
	struct wla_output *out = wla_output_from_wlr(output);
	if (!out || !out->planes) {
		return 0;
	}
	const struct wla_output_planes *p = out->planes;
	for (size_t i = 0; i < p->n && i < cap; i++) {
		const struct wla_plane *plane = p->planes[i];
		planes[i] = (struct wla_output_plane){
			.id = wla_output_plane_id(plane),
			.type = plane->type == WLA_PLANE_PRIMARY ? WLA_OUTPUT_PLANE_PRIMARY :
				plane->type == WLA_PLANE_CURSOR ? WLA_OUTPUT_PLANE_CURSOR :
				WLA_OUTPUT_PLANE_OVERLAY,
			.zpos = plane->zpos,
			.min_scale = plane->min_scale,
			.max_scale = plane->max_scale,
			.max_width = plane->max_fb_width,
			.max_height = plane->max_fb_height,
			.full_screen_only = plane->full_screen_only,
			.formats = &p->formats[i],
		};
	}
	return p->n;
}

struct wla_plane *wla_output_plane_by_id(struct wla_output *out, uint32_t id)
{
	for (size_t i = 0; i < out->planes->n; i++) {
		if (wla_output_plane_id(out->planes->planes[i]) == id) {
			return out->planes->planes[i];
		}
	}
	return NULL;
}

bool wla_output_status_reset(struct wla_output_planes *p, size_t n)
{
	if (n == 0) {
		free(p->status);
		p->status = NULL;
		p->n_status = 0;
		return true;
	}
	enum wla_overlay_status *status = realloc(p->status, n * sizeof(*status));
	if (!status) {
		return false;
	}
	p->status = status;
	p->n_status = n;
	for (size_t i = 0; i < n; i++) {
		status[i] = WLA_OVERLAY_UNCHECKED;
	}
	return true;
}

WLA_EXPORT int wla_output_set_overlays(struct wlr_output *output,
	const struct wla_overlay *overlays, size_t n)
{
	struct wla_output *out = wla_output_from_wlr(output);
	if (!out || !out->planes) {
		wlr_log(WLR_ERROR, "overlays: output %s is not a wlatomic output",
			output ? output->name : "(null)");
		return -ENODEV;
	}
	struct wla_output_planes *p = out->planes;
	if (!wla_output_status_reset(p, n)) {
		wlr_log(WLR_ERROR, "output %s: out of memory for %zu overlays", output->name, n);
		return -ENOMEM;
	}
	if (n > 0 && !output->enabled) {
		wlr_log(WLR_ERROR, "output %s: %zu overlays offered while the output is disabled",
			output->name, n);
		for (size_t i = 0; i < n; i++) {
			p->status[i] = WLA_OVERLAY_OUTPUT_OFF;
		}
		return -ENODEV;
	}
	if (n > p->n_overlays) {
		wlr_log(WLR_ERROR, "output %s: %zu overlays offered, the output has %zu overlay "
			"planes", output->name, n, p->n_overlays);
		for (size_t i = p->n_overlays; i < n; i++) {
			p->status[i] = WLA_OVERLAY_NO_PLANE;
		}
		return -EINVAL;
	}
	struct wla_overlay_slot *offer = n ? calloc(n, sizeof(*offer)) : NULL;
	if (n && !offer) {
		wlr_log(WLR_ERROR, "output %s: out of memory for %zu overlays", output->name, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct wla_overlay *ov = &overlays[i];
		offer[i].ov = *ov;
		offer[i].fb = ov->buffer ? wla_fb_from_wlr_buffer(out->backend, ov->buffer) : NULL;
		if (!offer[i].fb) {
			wlr_log(WLR_ERROR, "output %s: overlay %zu: %s", output->name, i, ov->buffer ?
				"the buffer has no shm, dmabuf or CPU access to scan out" :
				"no buffer");
			p->status[i] = WLA_OVERLAY_BUFFER;
			for (size_t j = 0; j < i; j++) {
				wla_fb_put(offer[j].fb);
			}
			free(offer);
			return -EINVAL;
		}
		if (ov->buffer->width > 32767 || ov->buffer->height > 32767) {
			wlr_log(WLR_ERROR, "output %s: overlay %zu: buffer %dx%d is larger than "
				"32767 pixels", output->name, i, ov->buffer->width, ov->buffer->height);
			p->status[i] = WLA_OVERLAY_SIZE;
			for (size_t j = 0; j <= i; j++) {
				wla_fb_put(offer[j].fb);
			}
			free(offer);
			return -EINVAL;
		}
		if (ov->src_w == 0 || ov->src_h == 0) {
			offer[i].ov.src_x = offer[i].ov.src_y = 0;
			offer[i].ov.src_w = (uint32_t)ov->buffer->width << 16;
			offer[i].ov.src_h = (uint32_t)ov->buffer->height << 16;
		}
		offer[i].ov.buffer = NULL; /* only the fb is kept */
	}
	drop_offer(p);
	p->offer = offer;
	p->n_offer = n;
	p->pending = true;
	return 0;
}

WLA_EXPORT size_t wla_output_overlay_status(struct wlr_output *output,
	enum wla_overlay_status *status, size_t n)
{
	struct wla_output *out = wla_output_from_wlr(output);
	if (!out || !out->planes) {
		return 0;
	}
	const struct wla_output_planes *p = out->planes;
	for (size_t i = 0; i < n && i < p->n_status; i++) {
		status[i] = p->status[i];
	}
	return p->n_status;
}

bool wla_output_plane_free(const struct wla_output *out, const struct wla_plane *plane)
{
	if (plane->state->crtc == out->crtc) {
		return true;
	}
	/* Off now, but maybe by a state of another CRTC that has not latched:
	 * the plane is busy there until it has (KMS refuses it, the core
	 * would order our state after that CRTC's queue). */
	return !plane->state->crtc && !plane->commit;
}

bool wla_output_overlays_pending(const struct wla_output *out)
{
	return out->planes && (out->planes->pending || out->planes->trial);
}

/* The overlays a state built now gets: the helper's trial, or the offer. */
static struct wla_overlay_slot *slots_of(struct wla_output_planes *p, size_t *n)
{
	*n = p->trial ? p->n_trial : p->n_offer;
	return p->trial ? p->trial : p->offer;
}

/* The slots in z order (stable): indices into slots. */
static void z_order(const struct wla_overlay_slot *slots, size_t n, size_t *order)
{
	for (size_t i = 0; i < n; i++) {
		size_t j = i;
		while (j > 0 && slots[order[j - 1]].ov.z > slots[i].ov.z) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
}

/*
 * Give every overlay of the offer a plane: a named one, or the lowest free
 * overlay plane above the one below it. false, with the status of the
 * overlay that gets none, if the offer does not fit the planes.
 */
static bool map_planes(struct wla_output *out, struct wla_plane **assigned)
{
	struct wla_output_planes *p = out->planes;
	size_t n;
	struct wla_overlay_slot *slots = slots_of(p, &n);
	size_t order[WLA_MAX_PLANES];
	z_order(slots, n, order);
	uint32_t reserved = 0; /* bits of plane indices named by the offer */
	for (size_t i = 0; i < n; i++) {
		uint32_t id = slots[i].ov.plane;
		struct wla_plane *plane = id ? wla_output_plane_by_id(out, id) : NULL;
		if (id && (!plane || plane->type != WLA_PLANE_OVERLAY ||
				(reserved & (1u << plane->index)))) {
			wlr_log(WLR_DEBUG, "output %s: overlay %zu names plane %" PRIu32 ", which "
				"is not a free overlay plane of the output", out->base.name, i, id);
			p->status[i] = WLA_OVERLAY_NO_PLANE;
			return false;
		}
		reserved |= plane ? 1u << plane->index : 0;
	}
	int64_t below = -1; /* zpos of the plane under the next overlay */
	for (size_t k = 0; k < n; k++) {
		size_t i = order[k];
		struct wla_plane *plane = NULL;
		if (slots[i].ov.plane) {
			plane = wla_output_plane_by_id(out, slots[i].ov.plane);
			if ((int64_t)plane->zpos <= below) {
				plane = NULL;
			}
		} else {
			for (size_t j = 0; j < p->n && !plane; j++) {
				struct wla_plane *c = p->planes[j];
				if (c->type == WLA_PLANE_OVERLAY && (int64_t)c->zpos > below &&
						!(reserved & (1u << c->index)) &&
						wla_output_plane_free(out, c)) {
					plane = c;
				}
			}
		}
		/* A plane another CRTC shows, or left in a commit still in flight,
		 * is not ours to take. */
		if (plane && !wla_output_plane_free(out, plane)) {
			plane = NULL;
		}
		if (!plane) {
			wlr_log(WLR_DEBUG, "output %s: overlay %zu (z %" PRId32 ") has no overlay "
				"plane above the ones below it", out->base.name, i,
				slots[i].ov.z);
			p->status[i] = WLA_OVERLAY_NO_PLANE;
			return false;
		}
		reserved |= 1u << plane->index;
		below = plane->zpos;
		assigned[i] = plane;
	}
	return true;
}

int wla_output_apply_overlays(struct wla_output *out, struct wla_atomic_state *state,
	bool enabled)
{
	struct wla_output_planes *p = out->planes;
	if (!p || !(p->pending || p->trial) || !enabled) {
		return 0;
	}
	size_t n;
	struct wla_overlay_slot *slots = slots_of(p, &n);
	/* The status follows the offer applied (a refused later offer may
	 * have sized it for itself). */
	if (!wla_output_status_reset(p, n)) {
		return -ENOMEM;
	}
	p->refused_slot = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		slots[i].plane = NULL;
	}
	struct wla_plane *assigned[WLA_MAX_PLANES] = { 0 };
	if (!map_planes(out, assigned)) {
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!wla_fb_wlr_buffer(slots[i].fb)) {
			wla_output_log(out, WLR_ERROR, "overlay %zu: its buffer was destroyed", i);
			p->status[i] = WLA_OVERLAY_BUFFER;
			return -ENODEV;
		}
		slots[i].plane = assigned[i];
	}
	for (size_t j = 0; j < p->n; j++) {
		struct wla_plane *plane = p->planes[j];
		if (plane->type != WLA_PLANE_OVERLAY) {
			continue;
		}
		const struct wla_overlay_slot *slot = NULL;
		for (size_t i = 0; i < n; i++) {
			if (slots[i].plane == plane) {
				slot = &slots[i];
			}
		}
		if (!slot && plane->state->crtc != out->crtc) {
			continue; /* off, or another output's: leave it alone */
		}
		struct wla_plane_state *ps = wla_atomic_get_plane_state(state, plane);
		if (!ps) {
			return -ENOMEM;
		}
		int ret = wla_atomic_set_crtc_for_plane(state, ps, slot ? out->crtc : NULL);
		if (ret < 0) {
			return ret;
		}
		wla_atomic_set_fb_for_plane(ps, slot ? slot->fb : NULL);
		if (slot) {
			const struct wla_overlay *ov = &slot->ov;
			ps->src_x = ov->src_x;
			ps->src_y = ov->src_y;
			ps->src_w = ov->src_w;
			ps->src_h = ov->src_h;
			ps->crtc_x = ov->dst_x;
			ps->crtc_y = ov->dst_y;
			ps->crtc_w = ov->dst_w;
			ps->crtc_h = ov->dst_h;
		}
	}
	return 0;
}

static enum wla_overlay_status status_of(enum wla_check_reason reason)
{
	switch (reason) {
	case WLA_CHECK_OK: return WLA_OVERLAY_OK;
	case WLA_CHECK_FORMAT: return WLA_OVERLAY_FORMAT;
	case WLA_CHECK_CROP: return WLA_OVERLAY_CROP;
	case WLA_CHECK_SCALING: return WLA_OVERLAY_SCALING;
	case WLA_CHECK_SIZE: return WLA_OVERLAY_SIZE;
	case WLA_CHECK_POSITION: return WLA_OVERLAY_POSITION;
	case WLA_CHECK_ROUTING: return WLA_OVERLAY_NO_PLANE;
	case WLA_CHECK_DRIVER: return WLA_OVERLAY_HARDWARE;
	case WLA_CHECK_NOMEM: return WLA_OVERLAY_UNCHECKED;
	}
	return WLA_OVERLAY_UNCHECKED;
}

void wla_output_overlays_checked(struct wla_output *out, const struct wla_atomic_state *state,
	int ret)
{
	struct wla_output_planes *p = out->planes;
	if (!p || !(p->pending || p->trial)) {
		return;
	}
	size_t n;
	struct wla_overlay_slot *slots = slots_of(p, &n);
	n = n < p->n_status ? n : p->n_status;
	bool decided = false;
	for (size_t i = 0; i < n; i++) {
		decided |= p->status[i] != WLA_OVERLAY_UNCHECKED;
	}
	if (!decided) {
		for (size_t i = 0; i < n; i++) {
			if (ret == 0) {
				p->status[i] = WLA_OVERLAY_OK;
			} else if (state && slots[i].plane &&
					slots[i].plane == state->refused_plane) {
				p->status[i] = status_of(state->refused);
				p->refused_slot = i;
			} else if (state && !state->refused_plane &&
					state->refused == WLA_CHECK_DRIVER) {
				p->status[i] = WLA_OVERLAY_HARDWARE;
			}
		}
	}
	/* A test or commit of the compositor's own refused: the helper's last
	 * placement is not to be kept without a check. */
	if (ret < 0 && !p->trial && p->assign) {
		wla_assign_forget(p);
	}
}

void wla_output_overlays_committed(struct wla_output *out, bool enabled)
{
	struct wla_output_planes *p = out->planes;
	if (p && (p->pending || !enabled)) {
		drop_offer(p);
	}
}
