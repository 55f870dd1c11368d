/*
 * Framebuffers of the KMS driver: a wla_fb's dmabuf imported as a DRM
 * framebuffer once, and kept for as long as the buffer lives (as wlroots
 * keeps one per wlr_buffer): a buffer scanned out again, as a swapchain's
 * are every few frames, costs no PRIME import and no AddFB. The import is
 * made by the first TEST_ONLY or prepare_fb that needs it, kept across
 * cleanup_fb, and removed by release_fb (the buffer goes), or with the
 * driver. A card without PRIME (bochs) scans out only its own memory: each
 * fb gets a dumb buffer of the card, kept the same way, and its pixels are
 * copied in at each prepare_fb.
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "kms-private.h"
#include "render/format.h"

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

/* A dumb buffer of the card for fb, mapped, with its DRM framebuffer: 0 or
 * a negative errno, logged. */
static int add_dumb_fb(struct wla_kms *kms, struct wla_fb *fb, struct kms_fb *import)
{
	const struct wla_format_info *info = wla_format_get(fb->format);
	char name[16];
	if (!info || !fb->funcs->begin_access) {
		wla_kms_log(kms, WLR_DEBUG, "fb %p (%" PRIu32 "x%" PRIu32 " %s) cannot be "
			"copied into a dumb buffer", (void *)fb, fb->width, fb->height,
			wla_format_name(fb->format, name));
		return -EINVAL;
	}
	struct drm_mode_create_dumb create = {
		.width = fb->width,
		.height = fb->height,
		.bpp = info->bytes_per_pixel * 8,
	};
	if (drmIoctl(kms->fd, DRM_IOCTL_MODE_CREATE_DUMB, &create) != 0) {
		int ret = -errno;
		wla_kms_log(kms, WLR_ERROR, "fb %p: a dumb buffer of %" PRIu32 "x%" PRIu32
			" at %" PRIu32 " bpp: %s", (void *)fb, fb->width, fb->height, create.bpp,
			strerror(-ret));
		return ret;
	}
	import->dumb_handle = create.handle;
	import->dumb_pitch = create.pitch;
	import->dumb_size = create.size;
	int ret = 0;
	struct drm_mode_map_dumb map = { .handle = create.handle };
	if (drmIoctl(kms->fd, DRM_IOCTL_MODE_MAP_DUMB, &map) != 0) {
		ret = -errno;
		wla_kms_log(kms, WLR_ERROR, "fb %p: MAP_DUMB: %s", (void *)fb, strerror(-ret));
	} else {
		import->dumb_map = mmap(NULL, create.size, PROT_READ | PROT_WRITE, MAP_SHARED,
			kms->fd, (off_t)map.offset);
		if (import->dumb_map == MAP_FAILED) {
			ret = -errno;
			import->dumb_map = NULL;
			wla_kms_log(kms, WLR_ERROR, "fb %p: mmap of its dumb buffer: %s",
				(void *)fb, strerror(-ret));
		}
	}
	if (ret == 0) {
		uint32_t handles[4] = { create.handle }, pitches[4] = { create.pitch };
		uint32_t offsets[4] = { 0 };
		if (drmModeAddFB2(kms->fd, fb->width, fb->height, fb->format, handles, pitches,
				offsets, &import->fb_id, 0) != 0) {
			ret = -errno;
			wla_kms_log(kms, WLR_ERROR, "fb %p: AddFB2 of its dumb buffer, %" PRIu32 "x%"
				PRIu32 " %s: %s", (void *)fb, fb->width, fb->height,
				wla_format_name(fb->format, name), strerror(-ret));
		}
	}
	if (ret < 0) {
		if (import->dumb_map) {
			munmap(import->dumb_map, import->dumb_size);
			import->dumb_map = NULL;
		}
		drmCloseBufferHandle(kms->fd, import->dumb_handle);
		import->dumb_handle = 0;
		return ret;
	}
	kms->fbs_added++;
	kms->live_fbs++;
	return 0;
}

/* The fb's pixels into its dumb buffer, row by row. */
static int copy_into_dumb(struct wla_kms *kms, struct wla_fb *fb, struct kms_fb *import)
{
	const void *data;
	uint32_t stride;
	if (!fb->funcs->begin_access(fb, &data, &stride)) {
		wla_kms_log(kms, WLR_ERROR, "fb %p: its pixels cannot be read for the copy "
			"into the card's memory", (void *)fb);
		return -EINVAL;
	}
	const struct wla_format_info *info = wla_format_get(fb->format);
	size_t row = (size_t)fb->width * info->bytes_per_pixel;
	for (uint32_t y = 0; y < fb->height; y++) {
		memcpy((char *)import->dumb_map + (size_t)y * import->dumb_pitch,
			(const char *)data + (size_t)y * stride, row);
	}
	if (fb->funcs->end_access) {
		fb->funcs->end_access(fb);
	}
	kms->bytes_copied += row * fb->height;
	return 0;
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
	if ((kms->copy_scanout ? add_dumb_fb(kms, fb, import) :
			add_fb(kms, fb, &import->fb_id)) < 0) {
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
	struct kms_fb *import = fb->import;
	if (import->dumb_map) {
		/* What it shows now, into the card's memory. */
		int ret = copy_into_dumb(kms, fb, import);
		if (ret < 0) {
			return ret;
		}
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
	if (import->dumb_map) {
		munmap(import->dumb_map, import->dumb_size);
	}
	if (import->dumb_handle) {
		drmCloseBufferHandle(kms->fd, import->dumb_handle);
	}
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
