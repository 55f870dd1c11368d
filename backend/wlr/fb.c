/*
 * wla_fb over wlr_buffer. The wrapper lives as long as the buffer (an addon
 * holds one wrapper reference) or a plane state that names it, whichever is
 * longer, and never longer than its backend: at destroy the backend detaches
 * every wrapper still on a buffer. The buffer stays locked exactly while a
 * prepared state holds it.
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <stdlib.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/util/addon.h>
#include <wlr/util/log.h>
#include "backend/wlr.h"

struct wla_wlr_fb {
	struct wla_fb base;
	struct wlr_buffer *buffer; /* NULL once the buffer is gone */
	struct wla_backend *backend;
	struct wlr_addon addon;
	bool has_addon;
	/* CPU access: the buffer begin_access opened, how many accesses are
	 * open (one fb may be on two planes of a composition), and what it
	 * gave. */
	struct wlr_buffer *access;
	int accesses;
	const void *access_data;
	uint32_t access_stride;
	struct wl_list link; /* wla_backend.fbs */
};

static struct wla_wlr_fb *wlr_fb_from_fb(struct wla_fb *base)
{
	struct wla_wlr_fb *fb = wl_container_of(base, fb, base);
	return fb;
}

static int fb_prepare(struct wla_fb *base)
{
	struct wla_wlr_fb *fb = wlr_fb_from_fb(base);
	if (!fb->buffer) {
		wlr_log(WLR_ERROR, "fb %p: its wlr_buffer was destroyed", (void *)base);
		return -ENODEV;
	}
	wlr_buffer_lock(fb->buffer);
	fb->backend->buffer_locks++;
	return 0;
}

static void fb_cleanup(struct wla_fb *base)
{
	struct wla_wlr_fb *fb = wlr_fb_from_fb(base);
	fb->backend->buffer_locks--;
	/* May destroy the buffer, which drops the addon's wrapper reference;
	 * the plane state's reference keeps the wrapper alive. */
	wlr_buffer_unlock(fb->buffer);
}

/*
 * The buffer whose pixels the CPU reads: the buffer itself, or for a
 * surface's wlr_client_buffer (which wlroots 0.15 gives no CPU access) the
 * client's shm buffer it was made from, while wlroots keeps that (the pixman
 * renderer's texture holds it for the client buffer's life). NULL if none.
 */
static struct wlr_buffer *readable_buffer(struct wlr_buffer *buffer)
{
	struct wlr_client_buffer *client = buffer ? wlr_client_buffer_get(buffer) : NULL;
	if (!client) {
		return buffer;
	}
	/* Only while something holds the source locked (the pixman renderer's
	 * texture): else the client has been told it may reuse it (a GLES
	 * renderer releases it once uploaded), and its pixels are the
	 * client's again. */
	return client->source && client->source->n_locks > 0 ? client->source : NULL;
}

static bool fb_begin_access(struct wla_fb *base, const void **data, uint32_t *stride)
{
	struct wla_wlr_fb *fb = wlr_fb_from_fb(base);
	if (fb->accesses > 0) {
		fb->accesses++;
		*data = fb->access_data;
		*stride = fb->access_stride;
		return true;
	}
	struct wlr_buffer *buffer = readable_buffer(fb->buffer);
	void *ptr;
	uint32_t format;
	size_t buf_stride;
	if (!buffer || !wlr_buffer_begin_data_ptr_access(buffer,
			WLR_BUFFER_DATA_PTR_ACCESS_READ, &ptr, &format, &buf_stride)) {
		return false;
	}
	fb->access = buffer;
	fb->accesses = 1;
	fb->access_data = *data = ptr;
	fb->access_stride = *stride = (uint32_t)buf_stride;
	return true;
}

static void fb_end_access(struct wla_fb *base)
{
	struct wla_wlr_fb *fb = wlr_fb_from_fb(base);
	if (fb->accesses > 0 && --fb->accesses == 0) {
		wlr_buffer_end_data_ptr_access(fb->access);
		fb->access = NULL;
	}
}

struct wlr_buffer *wla_fb_wlr_buffer(struct wla_fb *base)
{
	return base ? wlr_fb_from_fb(base)->buffer : NULL;
}

static bool fb_get_dmabuf(struct wla_fb *base, struct wla_dmabuf *dmabuf)
{
	struct wla_wlr_fb *fb = wlr_fb_from_fb(base);
	struct wlr_dmabuf_attributes attribs;
	if (!fb->buffer || !wlr_buffer_get_dmabuf(fb->buffer, &attribs) ||
			attribs.n_planes < 1 || attribs.n_planes > WLA_DMABUF_MAX_PLANES) {
		return false;
	}
	dmabuf->n_planes = attribs.n_planes;
	for (int i = 0; i < attribs.n_planes; i++) {
		dmabuf->fd[i] = attribs.fd[i];
		dmabuf->offset[i] = attribs.offset[i];
		dmabuf->stride[i] = attribs.stride[i];
	}
	return true;
}

static void fb_destroy(struct wla_fb *base)
{
	struct wla_wlr_fb *fb = wlr_fb_from_fb(base);
	wl_list_remove(&fb->link);
	free(fb);
}

static const struct wla_fb_funcs fb_funcs = {
	.prepare = fb_prepare,
	.cleanup = fb_cleanup,
	.begin_access = fb_begin_access,
	.end_access = fb_end_access,
	.get_dmabuf = fb_get_dmabuf,
	.destroy = fb_destroy,
};

static void detach(struct wla_wlr_fb *fb)
{
	wlr_addon_finish(&fb->addon);
	fb->has_addon = false;
	fb->buffer = NULL;
	wla_fb_put(&fb->base);
}

static void handle_addon_destroy(struct wlr_addon *addon)
{
	struct wla_wlr_fb *fb = wl_container_of(addon, fb, addon);
	detach(fb);
}

static const struct wlr_addon_interface fb_addon_impl = {
	.name = "wla_fb",
	.destroy = handle_addon_destroy,
};

static bool buffer_format(struct wlr_buffer *buffer, uint32_t *format, uint64_t *modifier)
{
	struct wlr_shm_attributes shm;
	struct wlr_dmabuf_attributes dmabuf;
	void *data;
	size_t stride;
	*modifier = DRM_FORMAT_MOD_INVALID;
	if (wlr_buffer_get_shm(buffer, &shm)) {
		*format = shm.format;
		return true;
	}
	if (wlr_buffer_get_dmabuf(buffer, &dmabuf)) {
		*format = dmabuf.format;
		*modifier = dmabuf.modifier;
		return true;
	}
	struct wlr_buffer *readable = readable_buffer(buffer);
	if (readable && wlr_buffer_get_shm(readable, &shm)) {
		*format = shm.format;
		return true;
	}
	if (readable && wlr_buffer_begin_data_ptr_access(readable,
			WLR_BUFFER_DATA_PTR_ACCESS_READ, &data, format, &stride)) {
		wlr_buffer_end_data_ptr_access(readable);
		return true;
	}
	return false;
}

struct wla_fb *wla_fb_from_wlr_buffer(struct wla_backend *backend, struct wlr_buffer *buffer)
{
	struct wlr_addon *addon = wlr_addon_find(&buffer->addons, backend, &fb_addon_impl);
	if (addon) {
		struct wla_wlr_fb *fb = wl_container_of(addon, fb, addon);
		return wla_fb_get(&fb->base);
	}
	uint32_t format;
	uint64_t modifier;
	if (!buffer_format(buffer, &format, &modifier)) {
		/* Not an error: a compositor trying direct scan-out of a client
		 * buffer that wlroots 0.15 gives no access to (cage does at every
		 * frame) composites instead, as after wlroots' DRM backend fails
		 * to import one (also at debug level there). */
		wlr_log(WLR_DEBUG, "buffer %p (%dx%d): no shm, dmabuf or data-ptr access, cannot "
			"scan it out", (void *)buffer, buffer->width, buffer->height);
		return NULL;
	}
	struct wla_wlr_fb *fb = calloc(1, sizeof(*fb));
	if (!fb) {
		wlr_log(WLR_ERROR, "buffer %p: out of memory for its fb", (void *)buffer);
		return NULL;
	}
	/* The first reference belongs to the addon. */
	wla_fb_init(&fb->base, &fb_funcs, (uint32_t)buffer->width, (uint32_t)buffer->height,
		format);
	fb->base.modifier = modifier;
	fb->base.client = wlr_client_buffer_get(buffer) != NULL;
	fb->buffer = buffer;
	fb->backend = backend;
	wlr_addon_init(&fb->addon, &buffer->addons, backend, &fb_addon_impl);
	fb->has_addon = true;
	wl_list_insert(&backend->fbs, &fb->link);
	return wla_fb_get(&fb->base);
}

void wla_backend_finish_fbs(struct wla_backend *backend)
{
	struct wla_wlr_fb *fb, *tmp;
	wl_list_for_each_safe(fb, tmp, &backend->fbs, link) {
		if (fb->base.refs > 1 || fb->base.prepared > 0) {
			/* A state outlived the devices: a bug, but do not free what
			 * it still names. */
			wlr_log(WLR_ERROR, "fb %p: %d references and %d scanout references left "
				"at backend destroy", (void *)&fb->base, fb->base.refs - 1,
				fb->base.prepared);
			continue;
		}
		if (fb->has_addon) {
			detach(fb);
		}
	}
}
