/*
 * Framebuffers of the KMS driver: a wla_fb's dmabuf imported as a DRM
 * framebuffer once, and kept for as long as the buffer lives (as wlroots
 * keeps one per wlr_buffer): a buffer scanned out again, as a swapchain's
 * are every few frames, costs no PRIME import and no AddFB. The import is
 * made by the first TEST_ONLY or prepare_fb that needs it, kept across
 * cleanup_fb, and removed by release_fb (the buffer goes), or with the
 * driver.
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "kms-private.h"

static void close_handles(struct wla_kms *kms, const uint32_t *handles, int n)
{
	for (int i = 0; i < n; i++) {
		bool seen = false;
		for (int j = 0; j < i; j++) {
			seen |= handles[j] == handles[i];
		}
		if (handles[i] && !seen) {
			drmCloseBufferHandle(kms->fd, handles[i]);
		}
	}
}

/* A DRM framebuffer of fb's dmabuf: 0 or a negative errno (logged at debug
 * level for a buffer that is no dmabuf: the compositor composites it). */
static int add_fb(struct wla_kms *kms, struct wla_fb *fb, uint32_t *fb_id)
{
	struct wla_dmabuf dmabuf;
	if (!fb->funcs->get_dmabuf || !fb->funcs->get_dmabuf(fb, &dmabuf)) {
		wla_kms_log(kms, WLR_DEBUG, "fb %p (%" PRIu32 "x%" PRIu32 ") is not a dmabuf; "
			"the card scans out dmabufs only", (void *)fb, fb->width,
			fb->height);
		return -EINVAL;
	}
	uint32_t handles[4] = { 0 }, pitches[4] = { 0 }, offsets[4] = { 0 };
	uint64_t modifiers[4] = { 0 };
	int ret = 0;
	for (int i = 0; i < dmabuf.n_planes; i++) {
		if (drmPrimeFDToHandle(kms->fd, dmabuf.fd[i], &handles[i]) != 0) {
			ret = -errno;
			wla_kms_log(kms, WLR_ERROR, "fb %p: drmPrimeFDToHandle of plane %d: %s",
				(void *)fb, i, strerror(errno));
			close_handles(kms, handles, i);
			return ret;
		}
		pitches[i] = dmabuf.stride[i];
		offsets[i] = dmabuf.offset[i];
		modifiers[i] = fb->modifier;
	}
	if (fb->modifier != DRM_FORMAT_MOD_INVALID) {
		ret = drmModeAddFB2WithModifiers(kms->fd, fb->width, fb->height, fb->format,
			handles, pitches, offsets, modifiers, fb_id, DRM_MODE_FB_MODIFIERS);
	} else {
		ret = drmModeAddFB2(kms->fd, fb->width, fb->height, fb->format, handles,
			pitches, offsets, fb_id, 0);
	}
	if (ret != 0) {
		ret = -errno;
		wla_kms_log(kms, WLR_ERROR, "fb %p: AddFB2 of %" PRIu32 "x%" PRIu32 " format "
			"0x%08" PRIx32 " modifier 0x%" PRIx64 ": %s", (void *)fb, fb->width,
			fb->height, fb->format, fb->modifier, strerror(-ret));
	}
	/* The framebuffer holds the buffer objects: the handles can go. */
	close_handles(kms, handles, dmabuf.n_planes);
	if (ret == 0) {
		kms->fbs_added++;
		kms->live_fbs++;
	}
	return ret;
}

static void remove_fb(struct wla_kms *kms, uint32_t fb_id)
{
	if (drmModeRmFB(kms->fd, fb_id) != 0 && !kms->lost) {
		wla_kms_log_errno(kms, WLR_ERROR, "RmFB %" PRIu32, fb_id);
	}
	kms->fbs_removed++;
	kms->live_fbs--;
}

struct kms_fb *wla_kms_import_fb(struct wla_kms *kms, struct wla_fb *fb)
{
	if (fb->import_dev == &kms->dev && fb->import) {
		return fb->import;
	}
	if (fb->import_dev) {
		if (fb->prepared > 0) {
			/* A TEST_ONLY (maybe a probe) is refused; a prepare cannot
			 * get here (the core refuses it first). */
			wla_kms_log(kms, WLR_DEBUG, "fb %p is scanned out by device %s: not "
				"imported", (void *)fb, fb->import_dev->name);
			return NULL;
		}
		wla_fb_release_import(fb);
	}
	struct kms_fb *import = calloc(1, sizeof(*import));
	if (!import) {
		wla_kms_log(kms, WLR_ERROR, "out of memory for an fb import");
		return NULL;
	}
	if (add_fb(kms, fb, &import->fb_id) < 0) {
		free(import);
		return NULL;
	}
	import->fb = fb;
	wl_list_insert(&kms->imports, &import->link);
	/* Kept on the fb until release_fb, whichever device call made it. */
	fb->import = import;
	fb->import_dev = &kms->dev;
	return import;
}

int wla_kms_prepare_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	if (kms->lost) {
		return -ENODEV;
	}
	if (fb->import) {
		kms->fbs_reused++;
	} else if (!wla_kms_import_fb(kms, fb)) {
		return -EINVAL;
	}
	kms->scanout_fbs++;
	return 0;
}

void wla_kms_cleanup_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	/* The import stays for the fb's next scanout. */
	if (fb->import) {
		kms->scanout_fbs--;
	}
}

void wla_kms_release_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	struct kms_fb *import = fb->import;
	if (!import) {
		return;
	}
	remove_fb(kms, import->fb_id);
	wl_list_remove(&import->link);
	free(import);
	fb->import = NULL;
}

void wla_kms_release_imports(struct wla_kms *kms)
{
	struct kms_fb *import, *tmp;
	wl_list_for_each_safe(import, tmp, &kms->imports, link) {
		struct wla_fb *fb = import->fb;
		if (fb->prepared == 0) {
			wla_fb_release_import(fb);
			continue;
		}
		/* Every state is gone before the driver: a scanout reference
		 * left is a bug, but the fb must not point at a freed driver. */
		wla_kms_log(kms, WLR_ERROR, "fb %p still prepared (%d) at destroy", (void *)fb,
			fb->prepared);
		wla_kms_release_fb(&kms->dev, fb);
		kms->scanout_fbs--;
		fb->import_dev = NULL;
	}
}
