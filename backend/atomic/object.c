/*
 * Framebuffer references, object states and the device's object tables.
 */
#include <assert.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <wlr/util/log.h>
#include "backend/atomic.h"

bool wla_mode_equal(const struct wla_mode *a, const struct wla_mode *b)
{
	return a->width == b->width && a->height == b->height &&
		a->refresh_mhz == b->refresh_mhz;
}

uint64_t wla_mode_period_ns(const struct wla_mode *mode)
{
	assert(mode->refresh_mhz > 0);
	/* 1e12 ns*mHz / mHz, rounded to the nearest nanosecond */
	uint64_t r = (uint64_t)mode->refresh_mhz;
	return (UINT64_C(1000000000000) + r / 2) / r;
}

void wla_fb_init(struct wla_fb *fb, const struct wla_fb_impl *impl, uint32_t width,
	uint32_t height, uint32_t format)
{
	fb->impl = impl;
	fb->width = width;
	fb->height = height;
	fb->format = format;
	fb->refs = 1;
	fb->prepared = 0;
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
		fb->impl->destroy(fb);
	}
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
	copy->want_event = false;
	copy->commit_seq = 0;
	return copy;
}

void wla_crtc_state_destroy(struct wla_crtc_state *state)
{
	free(state);
}

struct wla_plane_state *wla_plane_state_duplicate(const struct wla_plane_state *state)
{
	struct wla_plane_state *copy = calloc(1, sizeof(*copy));
	if (!copy) {
		return NULL;
	}
	*copy = *state;
	copy->prepared = false;
	if (copy->fb) {
		wla_fb_get(copy->fb);
	}
	return copy;
}

int wla_plane_state_prepare_fb(struct wla_plane_state *ps)
{
	if (!ps->fb || ps->prepared) {
		return 0;
	}
	int ret = ps->fb->impl->prepare ? ps->fb->impl->prepare(ps->fb) : 0;
	if (ret < 0) {
		return ret;
	}
	ps->fb->prepared++;
	ps->prepared = true;
	return 0;
}

void wla_plane_state_cleanup_fb(struct wla_plane_state *ps)
{
	if (!ps || !ps->prepared) {
		return;
	}
	ps->prepared = false;
	ps->fb->prepared--;
	/* cleanup may drop the last lock of a client buffer; the plane state's
	 * wrapper reference keeps fb itself valid until the state goes. */
	if (ps->fb->impl->cleanup) {
		ps->fb->impl->cleanup(ps->fb);
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

bool wla_device_add_crtc(struct wla_device *dev, struct wla_crtc *crtc)
{
	if (dev->n_crtcs == WLA_MAX_CRTCS) {
		wlr_log(WLR_ERROR, "device %s: no room for crtc %zu (max %d)", dev->name,
			dev->n_crtcs, WLA_MAX_CRTCS);
		return false;
	}
	crtc->state = calloc(1, sizeof(*crtc->state));
	if (!crtc->state) {
		return false;
	}
	crtc->state->crtc = crtc;
	crtc->dev = dev;
	crtc->index = (unsigned)dev->n_crtcs;
	if (!crtc->name[0]) {
		snprintf(crtc->name, sizeof(crtc->name), "crtc-%u", crtc->index);
	}
	wl_list_init(&crtc->pending);
	crtc->pending_frames = 0;
	dev->crtcs[dev->n_crtcs++] = crtc;
	return true;
}

bool wla_device_add_plane(struct wla_device *dev, struct wla_plane *plane)
{
	if (dev->n_planes == WLA_MAX_PLANES) {
		wlr_log(WLR_ERROR, "device %s: no room for plane %zu (max %d)", dev->name,
			dev->n_planes, WLA_MAX_PLANES);
		return false;
	}
	plane->state = calloc(1, sizeof(*plane->state));
	if (!plane->state) {
		return false;
	}
	plane->state->plane = plane;
	plane->dev = dev;
	plane->index = (unsigned)dev->n_planes;
	if (!plane->name[0]) {
		static const char *const type_names[] = {
			[WLA_PLANE_PRIMARY] = "primary",
			[WLA_PLANE_CURSOR] = "cursor",
			[WLA_PLANE_OVERLAY] = "overlay",
		};
		snprintf(plane->name, sizeof(plane->name), "%s-%u", type_names[plane->type],
			plane->index);
	}
	dev->planes[dev->n_planes++] = plane;
	return true;
}

bool wla_device_add_connector(struct wla_device *dev, struct wla_connector *conn)
{
	if (dev->n_connectors == WLA_MAX_CONNECTORS) {
		wlr_log(WLR_ERROR, "device %s: no room for connector %s (max %d)", dev->name,
			conn->name, WLA_MAX_CONNECTORS);
		return false;
	}
	conn->state = calloc(1, sizeof(*conn->state));
	if (!conn->state) {
		return false;
	}
	conn->state->connector = conn;
	conn->dev = dev;
	conn->index = (unsigned)dev->n_connectors;
	if (!conn->name[0]) {
		snprintf(conn->name, sizeof(conn->name), "connector-%u", conn->index);
	}
	dev->connectors[dev->n_connectors++] = conn;
	return true;
}

void wla_device_finish(struct wla_device *dev)
{
	for (size_t i = 0; i < dev->n_crtcs; i++) {
		assert(wl_list_empty(&dev->crtcs[i]->pending));
		wla_crtc_state_destroy(dev->crtcs[i]->state);
		dev->crtcs[i]->state = NULL;
	}
	for (size_t i = 0; i < dev->n_planes; i++) {
		struct wla_plane_state *ps = dev->planes[i]->state;
		/* Still on screen: the driver has stopped scanning out by now, so
		 * the scanout reference can go. */
		wla_plane_state_cleanup_fb(ps);
		wla_plane_state_destroy(ps);
		dev->planes[i]->state = NULL;
	}
	for (size_t i = 0; i < dev->n_connectors; i++) {
		wla_connector_state_destroy(dev->connectors[i]->state);
		dev->connectors[i]->state = NULL;
	}
	dev->n_crtcs = dev->n_planes = dev->n_connectors = 0;
}
