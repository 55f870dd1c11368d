/*
 * Framebuffers of the KMS driver: a wla_fb's dmabuf imported as a DRM
 * framebuffer (prepare_fb) and removed (cleanup_fb), and the stash of those
 * a passed TEST_ONLY made for the prepare_fb of the same commit.
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

static uint32_t take_stashed(struct wla_kms *kms, const struct wla_fb *fb);

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
int wla_kms_add_fb(struct wla_kms *kms, struct wla_fb *fb, uint32_t *fb_id)
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

void wla_kms_remove_fb(struct wla_kms *kms, uint32_t fb_id)
{
	if (drmModeRmFB(kms->fd, fb_id) != 0 && !kms->lost) {
		wla_kms_log_errno(kms, WLR_ERROR, "RmFB %" PRIu32, fb_id);
	}
	kms->fbs_removed++;
	kms->live_fbs--;
}

int wla_kms_prepare_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	if (kms->lost) {
		return -ENODEV;
	}
	struct kms_fb *import = calloc(1, sizeof(*import));
	if (!import) {
		wla_kms_log(kms, WLR_ERROR, "out of memory for an fb import");
		return -ENOMEM;
	}
	import->fb_id = take_stashed(kms, fb);
	int ret = import->fb_id ? 0 : wla_kms_add_fb(kms, fb, &import->fb_id);
	if (ret < 0) {
		free(import);
		return ret;
	}
	fb->import = import;
	return 0;
}

void wla_kms_cleanup_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	struct kms_fb *import = fb->import;
	if (!import) {
		return;
	}
	wla_kms_remove_fb(kms, import->fb_id);
	free(import);
	fb->import = NULL;
}

/* The framebuffers a passed TEST_ONLY made are kept for the prepare_fb
 * that follows in the same commit (one import per buffer and frame, not
 * two); what no prepare took (a state only tested, or refused after the
 * check) goes at the next check. */
void wla_kms_clear_stash(struct wla_kms *kms)
{
	for (size_t i = 0; i < kms->n_stash; i++) {
		wla_kms_remove_fb(kms, kms->stash[i].fb_id);
	}
	kms->n_stash = 0;
}

void wla_kms_stash_temps(struct kms_req *r)
{
	struct wla_kms *kms = r->kms;
	for (size_t i = 0; i < r->n_temp; i++) {
		if (kms->n_stash < WLA_MAX_PLANES) {
			kms->stash[kms->n_stash].fb = r->temp_owner[i];
			kms->stash[kms->n_stash++].fb_id = r->temp_fbs[i];
		} else {
			wla_kms_remove_fb(kms, r->temp_fbs[i]);
		}
	}
	r->n_temp = 0;
}

/* The fb id a check made for fb, taken out of the stash; 0 if none. */
static uint32_t take_stashed(struct wla_kms *kms, const struct wla_fb *fb)
{
	for (size_t i = 0; i < kms->n_stash; i++) {
		if (kms->stash[i].fb == fb) {
			uint32_t fb_id = kms->stash[i].fb_id;
			kms->stash[i] = kms->stash[--kms->n_stash];
			return fb_id;
		}
	}
	return 0;
}
