/*
 * Framebuffer references, object states and the device's object tables.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <wlatomic/config.h>
#include "backend/atomic.h"
#include "backend/log.h"

void wla_fb_init(struct wla_fb *fb, const struct wla_fb_funcs *funcs, uint32_t width,
	uint32_t height, uint32_t format)
{
	fb->funcs = funcs;
	fb->width = width;
	fb->height = height;
	fb->format = format;
	fb->modifier = UINT64_C(0x00ffffffffffffff); /* DRM_FORMAT_MOD_INVALID */
	fb->refs = 1;
	fb->prepared = 0;
	fb->import_dev = NULL;
	fb->import = NULL;
}

struct wla_fb *wla_fb_get(struct wla_fb *fb)
{
	assert(fb->refs > 0);
	fb->refs++;
	return fb;
}

void wla_fb_put(struct wla_fb *fb)
{
	if (!fb) {
		return;
	}
	assert(fb->refs > 0);
	if (--fb->refs == 0) {
		assert(fb->prepared == 0);
		wla_fb_release_import(fb);
		fb->funcs->destroy(fb);
	}
}

void wla_fb_release_import(struct wla_fb *fb)
{
	struct wla_device *dev = fb->import_dev;
	if (!dev) {
		return;
	}
	assert(fb->prepared == 0);
	if (fb->import && dev->funcs && dev->funcs->release_fb) {
		dev->funcs->release_fb(dev, fb);
	}
	fb->import = NULL;
	fb->import_dev = NULL;
}

struct wla_crtc_state *wla_crtc_state_duplicate(const struct wla_crtc_state *state)
{
	struct wla_crtc_state *copy = calloc(1, sizeof(*copy));
	if (!copy) {
		return NULL;
	}
	*copy = *state;
	copy->mode_changed = false;
	copy->active_changed = false;
	copy->connectors_changed = false;
	copy->planes_changed = false;
	copy->gamma_changed = false;
	copy->want_event = false;
	copy->commit_seq = 0;
	wla_gamma_lut_get(copy->gamma);
	return copy;
}

void wla_crtc_state_destroy(struct wla_crtc_state *state)
{
	if (state) {
		wla_gamma_lut_put(state->gamma);
	}
	free(state);
}

void wla_crtc_state_set_gamma(struct wla_crtc_state *state, struct wla_gamma_lut *lut)
{
	wla_gamma_lut_get(lut);
	wla_gamma_lut_put(state->gamma);
	state->gamma = lut;
}

struct wla_plane_state *wla_plane_state_duplicate(const struct wla_plane_state *state)
{
	struct wla_plane_state *copy = calloc(1, sizeof(*copy));
	if (!copy) {
		return NULL;
	}
	*copy = *state;
	copy->prepared = false;
	copy->n_damage = 0;
	if (copy->fb) {
		wla_fb_get(copy->fb);
	}
	return copy;
}

/* The bounding box of n rectangles into out. */
static void bounding_box(const struct wla_rect *rects, size_t n, struct wla_rect *out)
{
	int64_t x1 = INT32_MAX, y1 = INT32_MAX, x2 = INT32_MIN, y2 = INT32_MIN;
	for (size_t i = 0; i < n; i++) {
		const struct wla_rect *r = &rects[i];
		if (r->w <= 0 || r->h <= 0) {
			continue; /* empty: no damage */
		}
		x1 = r->x < x1 ? r->x : x1;
		y1 = r->y < y1 ? r->y : y1;
		x2 = (int64_t)r->x + r->w > x2 ? (int64_t)r->x + r->w : x2;
		y2 = (int64_t)r->y + r->h > y2 ? (int64_t)r->y + r->h : y2;
	}
	*out = (struct wla_rect){ (int32_t)x1, (int32_t)y1, (int32_t)(x2 - x1),
		(int32_t)(y2 - y1) };
}

void wla_plane_state_set_damage(struct wla_plane_state *ps, const struct wla_rect *rects,
	size_t n)
{
	struct wla_rect kept[WLA_MAX_DAMAGE_RECTS];
	size_t n_kept = 0;
	bool overflow = false;
	for (size_t i = 0; i < n; i++) {
		if (rects[i].w <= 0 || rects[i].h <= 0) {
			continue;
		}
		if (n_kept == WLA_MAX_DAMAGE_RECTS) {
			overflow = true;
			break;
		}
		kept[n_kept++] = rects[i];
	}
	if (overflow) {
		bounding_box(rects, n, &ps->damage[0]);
		ps->n_damage = 1;
		return;
	}
	memcpy(ps->damage, kept, n_kept * sizeof(kept[0]));
	ps->n_damage = n_kept;
}

void wla_plane_state_merge_damage(struct wla_plane_state *ps,
	const struct wla_plane_state *other)
{
	if (ps->n_damage == 0 || other->n_damage == 0) {
		ps->n_damage = 0; /* all of it */
		return;
	}
	struct wla_rect all[2 * WLA_MAX_DAMAGE_RECTS];
	memcpy(all, ps->damage, ps->n_damage * sizeof(all[0]));
	memcpy(all + ps->n_damage, other->damage, other->n_damage * sizeof(all[0]));
	wla_plane_state_set_damage(ps, all, ps->n_damage + other->n_damage);
}

int wla_plane_state_prepare_fb(struct wla_device *dev, struct wla_plane_state *ps)
{
	if (!ps->fb || ps->prepared) {
		return 0;
	}
	struct wla_fb *fb = ps->fb;
	int ret = fb->funcs->prepare ? fb->funcs->prepare(fb) : 0;
	if (ret < 0) {
		return ret;
	}
	if (fb->prepared == 0 && fb->import_dev && fb->import_dev != dev) {
		/* Kept by another device: it goes there first. */
		wla_fb_release_import(fb);
	}
	if (fb->prepared == 0 && dev->funcs && dev->funcs->prepare_fb) {
		/* The driver imports once per fb, for as long as any state
		 * holds it prepared, or keeps the import of an earlier
		 * scanout (fb->import already set: it reuses it). */
		ret = dev->funcs->prepare_fb(dev, fb);
		if (ret < 0) {
			if (fb->funcs->cleanup) {
				fb->funcs->cleanup(fb);
			}
			return ret;
		}
		fb->import_dev = dev;
	} else if (fb->prepared > 0 && fb->import_dev && fb->import_dev != dev) {
		wla_log(WLA_LOG_ERROR, "fb %p: already imported by device %s, not %s", (void *)fb,
			fb->import_dev->name, dev->name);
		if (fb->funcs->cleanup) {
			fb->funcs->cleanup(fb);
		}
		return -EXDEV;
	}
	fb->prepared++;
	ps->prepared = true;
	return 0;
}

void wla_plane_state_cleanup_fb(struct wla_plane_state *ps)
{
	if (!ps || !ps->prepared) {
		return;
	}
	struct wla_fb *fb = ps->fb;
	ps->prepared = false;
	if (--fb->prepared == 0 && fb->import_dev) {
		struct wla_device *dev = fb->import_dev;
		if (dev->funcs && dev->funcs->cleanup_fb) {
			dev->funcs->cleanup_fb(dev, fb);
		}
		/* What the driver left in fb->import it keeps for the next
		 * scanout of the fb, until release_fb. */
		if (!fb->import || !dev->funcs || !dev->funcs->release_fb) {
			fb->import = NULL;
			fb->import_dev = NULL;
		}
	}
	/* cleanup may drop the last lock of a client buffer; the plane state's
	 * wrapper reference keeps fb itself valid until the state goes. */
	if (fb->funcs->cleanup) {
		fb->funcs->cleanup(fb);
	}
}

void wla_plane_state_destroy(struct wla_plane_state *state)
{
	if (!state) {
		return;
	}
	assert(!state->prepared);
	wla_fb_put(state->fb);
	free(state);
}

struct wla_connector_state *wla_connector_state_duplicate(
	const struct wla_connector_state *state)
{
	struct wla_connector_state *copy = calloc(1, sizeof(*copy));
	if (!copy) {
		return NULL;
	}
	*copy = *state;
	return copy;
}

void wla_connector_state_destroy(struct wla_connector_state *state)
{
	free(state);
}

void wla_device_init(struct wla_device *dev, const struct wla_driver_funcs *funcs,
	const char *name)
{
	memset(dev, 0, sizeof(*dev));
	dev->funcs = funcs;
	dev->name = name;
	dev->drm_fd = -1;
	wl_list_init(&dev->events);
	wl_list_init(&dev->states);
}

bool wla_device_custom_mode(const struct wla_device *dev, int32_t width, int32_t height,
	int32_t refresh_mhz, struct wla_mode *mode)
{
	if (dev->custom_timing == WLA_CUSTOM_NONE) {
		wla_dev_log(dev, WLA_LOG_ERROR, "custom mode %" PRId32 "x%" PRId32 "@%" PRId32
			"mHz refused: the driver takes only its connectors' modes", width, height,
			refresh_mhz);
		return false;
	}
	if (width < 1 || width > WLA_MODE_MAX_SIZE || height < 1 || height > WLA_MODE_MAX_SIZE ||
			refresh_mhz < WLA_MODE_MIN_REFRESH_MHZ ||
			refresh_mhz > WLA_MODE_MAX_REFRESH_MHZ) {
		wla_dev_log(dev, WLA_LOG_ERROR, "custom mode %" PRId32 "x%" PRId32 "@%" PRId32
			"mHz is beyond 1..%d x 1..%d at %d..%d mHz", width, height, refresh_mhz,
			WLA_MODE_MAX_SIZE, WLA_MODE_MAX_SIZE, WLA_MODE_MIN_REFRESH_MHZ,
			WLA_MODE_MAX_REFRESH_MHZ);
		return false;
	}
	bool ok = dev->custom_timing == WLA_CUSTOM_CVT_EXACT ?
		wla_mode_cvt_exact(mode, width, height, refresh_mhz) :
		wla_mode_cvt(mode, width, height, refresh_mhz, false);
	if (!ok) {
		wla_dev_log(dev, WLA_LOG_ERROR, "custom mode %" PRId32 "x%" PRId32 "@%" PRId32
			"mHz: no CVT timing for it", width, height, refresh_mhz);
	}
	return ok;
}

/* The owner's destroy, the device held meanwhile: what the driver's
 * destroy calls (a forced off delivers events) holds and releases it
 * without ending it a second time. It is gone after. */
static void run_destroy(void *data)
{
	struct wla_device *dev = data;
	dev->hold = (struct wla_hold){ .count = 1 };
	dev->doomed_destroy(dev);
}

void wla_device_destroy(struct wla_device *dev, void (*destroy)(struct wla_device *dev))
{
	memset(&dev->listener, 0, sizeof(dev->listener));
	dev->doomed_destroy = destroy;
	if (wla_hold_doom(&dev->hold)) {
		run_destroy(dev);
	}
}

void wla_device_hold(struct wla_device *dev)
{
	wla_hold(&dev->hold);
}

bool wla_device_release(struct wla_device *dev)
{
	return wla_release(&dev->hold, run_destroy, dev);
}

enum object_kind {
	OBJECT_CRTC,
	OBJECT_PLANE,
	OBJECT_CONNECTOR,
};

/*
 * Take the object at index out of every atomic state. A committed state
 * owns its entry's old object state (the object is off, so its fb can
 * go); the new one is the object's current state or a later state's old
 * one, freed by their owners. A state not committed yet owns its new one.
 */
static void forget_object(struct wla_device *dev, enum object_kind kind, unsigned index,
	const void *ptr, const char *name)
{
	struct wla_atomic_state *state;
	wl_list_for_each(state, &dev->states, link) {
		bool named = false;
		if (kind == OBJECT_CRTC && state->crtcs[index].ptr == ptr) {
			struct wla_crtc_entry *e = &state->crtcs[index];
			assert(!state->swapped || (e->done && !e->event_queued));
			wla_crtc_state_destroy(state->swapped ? e->old_state : e->new_state);
			if (e->adopted) {
				wla_crtc_state_destroy(e->new_state);
				e->adopted = false;
			}
			e->ptr = NULL;
			e->old_state = e->new_state = NULL;
			named = true;
		} else if (kind == OBJECT_PLANE && state->planes[index].ptr == ptr) {
			struct wla_plane_entry *e = &state->planes[index];
			struct wla_plane_state *owned = state->swapped ? e->old_state : e->new_state;
			wla_plane_state_cleanup_fb(owned);
			wla_plane_state_destroy(owned);
			if (e->adopted) {
				wla_plane_state_cleanup_fb(e->new_state);
				wla_plane_state_destroy(e->new_state);
				e->adopted = false;
			}
			e->ptr = NULL;
			e->old_state = e->new_state = NULL;
			named = true;
		} else if (kind == OBJECT_CONNECTOR && state->connectors[index].ptr == ptr) {
			struct wla_connector_entry *e = &state->connectors[index];
			wla_connector_state_destroy(state->swapped ? e->old_state : e->new_state);
			if (e->adopted) {
				wla_connector_state_destroy(e->new_state);
				e->adopted = false;
			}
			e->ptr = NULL;
			e->old_state = e->new_state = NULL;
			named = true;
		}
		if (named && !state->committed && !state->removed[0]) {
			snprintf(state->removed, sizeof(state->removed), "%s", name);
		}
	}
}

/* The first free index of a table, or max if it is full. */
static size_t free_slot(void *const *table, size_t n, size_t max)
{
	for (size_t i = 0; i < n; i++) {
		if (!table[i]) {
			return i;
		}
	}
	return n < max ? n : max;
}

bool wla_device_add_crtc(struct wla_device *dev, struct wla_crtc *crtc)
{
	size_t i = free_slot((void *const *)dev->crtcs, dev->n_crtcs, WLA_MAX_CRTCS);
	if (i == WLA_MAX_CRTCS) {
		wla_dev_log(dev, WLA_LOG_ERROR, "no room for another crtc (max %d)",
			WLA_MAX_CRTCS);
		return false;
	}
	crtc->state = calloc(1, sizeof(*crtc->state));
	if (!crtc->state) {
		wla_dev_log(dev, WLA_LOG_ERROR, "out of memory for a crtc");
		return false;
	}
	crtc->state->crtc = crtc;
	crtc->dev = dev;
	crtc->index = (unsigned)i;
	if (!crtc->name[0]) {
		snprintf(crtc->name, sizeof(crtc->name), "crtc-%u", crtc->index);
	}
	wl_list_init(&crtc->queue);
	crtc->queued = crtc->armed = crtc->pending_frames = crtc->waiting_frames = 0;
	crtc->commit = NULL;
	if (!crtc->max_slots) {
		crtc->max_slots = 1;
	}
	if (!crtc->queue_depth) {
		crtc->queue_depth = 1;
	}
	dev->crtcs[i] = crtc;
	if (i == dev->n_crtcs) {
		dev->n_crtcs++;
	}
	return true;
}

static const char *const plane_type_names[] = {
	[WLA_PLANE_PRIMARY] = "primary",
	[WLA_PLANE_CURSOR] = "cursor",
	[WLA_PLANE_OVERLAY] = "overlay",
};

bool wla_device_add_plane(struct wla_device *dev, struct wla_plane *plane)
{
	size_t i = free_slot((void *const *)dev->planes, dev->n_planes, WLA_MAX_PLANES);
	if (i == WLA_MAX_PLANES) {
		wla_dev_log(dev, WLA_LOG_ERROR, "no room for another plane (max %d)",
			WLA_MAX_PLANES);
		return false;
	}
	plane->state = calloc(1, sizeof(*plane->state));
	if (!plane->state) {
		wla_dev_log(dev, WLA_LOG_ERROR, "out of memory for a plane");
		return false;
	}
	plane->state->plane = plane;
	plane->dev = dev;
	plane->index = (unsigned)i;
	plane->commit = NULL;
	if (!plane->name[0]) {
		snprintf(plane->name, sizeof(plane->name), "%s-%u", plane_type_names[plane->type],
			plane->index);
	}
	dev->planes[i] = plane;
	if (i == dev->n_planes) {
		dev->n_planes++;
	}
	return true;
}

bool wla_device_add_connector(struct wla_device *dev, struct wla_connector *conn)
{
	size_t i = free_slot((void *const *)dev->connectors, dev->n_connectors,
		WLA_MAX_CONNECTORS);
	if (i == WLA_MAX_CONNECTORS) {
		wla_dev_log(dev, WLA_LOG_ERROR, "no room for connector %s (max %d)",
			conn->name, WLA_MAX_CONNECTORS);
		return false;
	}
	conn->state = calloc(1, sizeof(*conn->state));
	if (!conn->state) {
		wla_dev_log(dev, WLA_LOG_ERROR, "out of memory for connector %s",
			conn->name);
		return false;
	}
	conn->state->connector = conn;
	conn->dev = dev;
	conn->index = (unsigned)i;
	conn->commit = NULL;
	if (!conn->name[0]) {
		snprintf(conn->name, sizeof(conn->name), "connector-%u", conn->index);
	}
	dev->connectors[i] = conn;
	if (i == dev->n_connectors) {
		dev->n_connectors++;
	}
	return true;
}

bool wla_crtc_adopt(struct wla_crtc *crtc, const struct wla_mode *mode, uint32_t connector_mask)
{
	struct wla_device *dev = crtc->dev;
	struct wla_crtc_state *cs = crtc->state;
	char desc[128];
	const char *why = "no connector";
	if (cs->enable || cs->active || !wl_list_empty(&crtc->queue) || crtc->commit) {
		wla_dev_log(dev, WLA_LOG_ERROR, "%s: cannot adopt what the hardware shows: the "
			"core has a state of its own for it", crtc->name);
		return false;
	}
	if (!connector_mask || !wla_mode_valid(mode, &why)) {
		wla_dev_log(dev, WLA_LOG_ERROR, "%s: cannot adopt mode %s: %s", crtc->name,
			wla_mode_describe(mode, desc, sizeof(desc)), why);
		return false;
	}
	for (size_t i = 0; i < dev->n_connectors; i++) {
		struct wla_connector *conn = dev->connectors[i];
		if (!(connector_mask & (1u << i))) {
			continue;
		}
		if (!conn || conn->state->crtc || !(conn->possible_crtcs & (1u << crtc->index))) {
			wla_dev_log(dev, WLA_LOG_ERROR, "%s: cannot adopt connector %s: %s",
				crtc->name, conn ? conn->name : "(none)", !conn ? "there is none" :
				conn->state->crtc ? "routed elsewhere" : "not one of its possible CRTCs");
			return false;
		}
	}
	if (connector_mask >> dev->n_connectors) {
		wla_dev_log(dev, WLA_LOG_ERROR, "%s: cannot adopt connector mask 0x%" PRIx32
			": only %zu connectors", crtc->name, connector_mask, dev->n_connectors);
		return false;
	}
	cs->enable = cs->active = true;
	cs->mode = *mode;
	cs->mode.preferred = false;
	cs->connector_mask = connector_mask;
	for (size_t i = 0; i < dev->n_connectors; i++) {
		if (connector_mask & (1u << i)) {
			dev->connectors[i]->state->crtc = crtc;
		}
	}
	wla_dev_log(dev, WLA_LOG_INFO, "%s: adopted as the hardware shows it: mode %s, "
		"connectors 0x%" PRIx32 ", planes off in the books", crtc->name,
		wla_mode_describe(mode, desc, sizeof(desc)), connector_mask);
	return true;
}

void wla_device_remove_crtc(struct wla_device *dev, struct wla_crtc *crtc)
{
	assert(dev->crtcs[crtc->index] == crtc);
	assert(wl_list_empty(&crtc->queue) && !crtc->state->active);
	/* Events not yet delivered (a handler removed the CRTC while the
	 * device delivers) go with it: nobody is left to hear them. */
	wla_crtc_drop_events(crtc);
	forget_object(dev, OBJECT_CRTC, crtc->index, crtc, crtc->name);
	crtc->commit = NULL;
	wla_crtc_state_destroy(crtc->state);
	crtc->state = NULL;
	dev->crtcs[crtc->index] = NULL;
}

void wla_device_remove_plane(struct wla_device *dev, struct wla_plane *plane)
{
	assert(dev->planes[plane->index] == plane);
	forget_object(dev, OBJECT_PLANE, plane->index, plane, plane->name);
	plane->commit = NULL;
	/* Off by now: the driver stopped scanning it out, so the scanout
	 * reference can go. */
	wla_plane_state_cleanup_fb(plane->state);
	wla_plane_state_destroy(plane->state);
	plane->state = NULL;
	for (size_t i = 0; i < plane->n_formats; i++) {
		free(plane->formats[i].modifiers);
	}
	free(plane->formats);
	plane->formats = NULL;
	plane->n_formats = 0;
	dev->planes[plane->index] = NULL;
}

void wla_device_remove_connector(struct wla_device *dev, struct wla_connector *conn)
{
	assert(dev->connectors[conn->index] == conn);
	forget_object(dev, OBJECT_CONNECTOR, conn->index, conn, conn->name);
	conn->commit = NULL;
	wla_connector_state_destroy(conn->state);
	conn->state = NULL;
	free(conn->modes);
	conn->modes = NULL;
	conn->n_modes = 0;
	dev->connectors[conn->index] = NULL;
}

void wla_device_finish(struct wla_device *dev)
{
	assert(wl_list_empty(&dev->events));
	for (size_t i = 0; i < dev->n_crtcs; i++) {
		if (dev->crtcs[i]) {
			wla_device_remove_crtc(dev, dev->crtcs[i]);
		}
	}
	for (size_t i = 0; i < dev->n_planes; i++) {
		if (dev->planes[i]) {
			wla_device_remove_plane(dev, dev->planes[i]);
		}
	}
	for (size_t i = 0; i < dev->n_connectors; i++) {
		if (dev->connectors[i]) {
			wla_device_remove_connector(dev, dev->connectors[i]);
		}
	}
	dev->n_crtcs = dev->n_planes = dev->n_connectors = 0;
}

bool wla_plane_add_format(struct wla_plane *plane, uint32_t format, const uint64_t *modifiers,
	size_t n_modifiers)
{
	struct wla_format *formats = realloc(plane->formats,
		(plane->n_formats + 1) * sizeof(*formats));
	if (!formats) {
		return false;
	}
	plane->formats = formats;
	struct wla_format *f = &formats[plane->n_formats];
	f->format = format;
	f->n_modifiers = 0;
	f->modifiers = NULL;
	if (n_modifiers > 0) {
		f->modifiers = calloc(n_modifiers, sizeof(*f->modifiers));
		if (!f->modifiers) {
			return false;
		}
		memcpy(f->modifiers, modifiers, n_modifiers * sizeof(*modifiers));
		f->n_modifiers = n_modifiers;
	}
	plane->n_formats++;
	return true;
}

bool wla_plane_supports(const struct wla_plane *plane, uint32_t format, uint64_t modifier)
{
	for (size_t i = 0; i < plane->n_formats; i++) {
		const struct wla_format *f = &plane->formats[i];
		if (f->format != format) {
			continue;
		}
		for (size_t m = 0; m < f->n_modifiers; m++) {
			if (f->modifiers[m] == modifier) {
				return true;
			}
		}
	}
	return false;
}

bool wla_connector_set_modes(struct wla_connector *conn, const struct wla_mode *modes,
	size_t n_modes)
{
	struct wla_mode *copy = NULL;
	if (n_modes > 0) {
		copy = calloc(n_modes, sizeof(*copy));
		if (!copy) {
			wla_conn_log(conn, WLA_LOG_ERROR,
				"out of memory for %zu modes",
				n_modes);
			return false;
		}
		memcpy(copy, modes, n_modes * sizeof(*modes));
	}
	free(conn->modes);
	conn->modes = copy;
	conn->n_modes = n_modes;
	return true;
}
