/*
 * Modes of the KMS driver: the kernel's mode info to the core's wla_mode and
 * back, and the MODE_ID property blobs made of them (kept until destroy);
 * the GAMMA_LUT blobs of CRTCs' gamma LUTs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "kms-private.h"

/* Mode blobs kept for MODE_ID before the oldest is let go. */
#define KMS_MAX_BLOBS 32

bool wla_kms_mode_from_drm(const drmModeModeInfo *info, struct wla_mode *mode)
{
	if (info->flags & (DRM_MODE_FLAG_INTERLACE | DRM_MODE_FLAG_DBLSCAN)) {
		return false; /* the core's refresh arithmetic is progressive */
	}
	*mode = (struct wla_mode){
		.width = info->hdisplay,
		.height = info->vdisplay,
		.clock_khz = info->clock,
		.hsync_start = info->hsync_start,
		.hsync_end = info->hsync_end,
		.htotal = info->htotal,
		.vsync_start = info->vsync_start,
		.vsync_end = info->vsync_end,
		.vtotal = info->vtotal,
		.flags = info->flags & (WLA_MODE_FLAG_PHSYNC | WLA_MODE_FLAG_NHSYNC |
			WLA_MODE_FLAG_PVSYNC | WLA_MODE_FLAG_NVSYNC),
		.preferred = (info->type & DRM_MODE_TYPE_PREFERRED) != 0,
	};
	wla_mode_update_refresh(mode);
	const char *why;
	return wla_mode_valid(mode, &why);
}

static void mode_to_drm(const struct wla_mode *mode, drmModeModeInfo *info)
{
	*info = (drmModeModeInfo){
		.clock = mode->clock_khz,
		.hdisplay = (uint16_t)mode->width,
		.hsync_start = mode->hsync_start,
		.hsync_end = mode->hsync_end,
		.htotal = mode->htotal,
		.vdisplay = (uint16_t)mode->height,
		.vsync_start = mode->vsync_start,
		.vsync_end = mode->vsync_end,
		.vtotal = mode->vtotal,
		.vrefresh = (uint32_t)((mode->refresh_mhz + 500) / 1000),
		.flags = mode->flags,
		.type = DRM_MODE_TYPE_USERDEF,
	};
	snprintf(info->name, sizeof(info->name), "%" PRId32 "x%" PRId32, mode->width,
		mode->height);
}

/* The MODE_ID blob of mode, made on first use; 0 (logged) on failure. */
uint32_t wla_kms_mode_blob(struct wla_kms *kms, const struct wla_mode *mode)
{
	for (size_t i = 0; i < kms->n_blobs; i++) {
		if (wla_mode_equal(&kms->blobs[i].mode, mode)) {
			return kms->blobs[i].id;
		}
	}
	if (kms->n_blobs == KMS_MAX_BLOBS) {
		/* The kernel keeps its own reference of a blob in use. */
		drmModeDestroyPropertyBlob(kms->fd, kms->blobs[0].id);
		memmove(kms->blobs, kms->blobs + 1, (KMS_MAX_BLOBS - 1) * sizeof(*kms->blobs));
		kms->n_blobs--;
	}
	if (!kms->blobs) {
		kms->blobs = calloc(KMS_MAX_BLOBS, sizeof(*kms->blobs));
		if (!kms->blobs) {
			wla_kms_log(kms, WLR_ERROR, "out of memory for mode blobs");
			return 0;
		}
	}
	drmModeModeInfo info;
	mode_to_drm(mode, &info);
	uint32_t id = 0;
	if (drmModeCreatePropertyBlob(kms->fd, &info, sizeof(info), &id) != 0) {
		char buf[128];
		wla_kms_log_errno(kms, WLR_ERROR, "cannot make a MODE_ID blob of %s",
			wla_mode_describe(mode, buf, sizeof(buf)));
		return 0;
	}
	kms->blobs[kms->n_blobs++] = (struct wla_kms_blob){ .mode = *mode, .id = id };
	return id;
}

bool wla_kms_mode_blob_keep(struct wla_kms *kms, const struct wla_mode *mode,
	const drmModeModeInfo *info)
{
	uint32_t id = wla_kms_mode_blob(kms, mode);
	uint32_t kept = 0;
	if (!id || drmModeCreatePropertyBlob(kms->fd, info, sizeof(*info), &kept) != 0) {
		char buf[128];
		wla_kms_log(kms, WLR_ERROR, "cannot make a MODE_ID blob of the mode kept, %s",
			wla_mode_describe(mode, buf, sizeof(buf)));
		return false;
	}
	for (size_t i = 0; i < kms->n_blobs; i++) {
		if (kms->blobs[i].id == id) {
			drmModeDestroyPropertyBlob(kms->fd, id);
			kms->blobs[i].id = kept;
		}
	}
	return true;
}

/* The GAMMA_LUT blob of lut on kc, made on first use; 0 (logged) on
 * failure. The oldest of a CRTC's blobs goes when a fifth LUT comes: the
 * kernel keeps its own reference of the blob a CRTC shows. */
uint32_t wla_kms_gamma_blob(struct wla_kms *kms, struct wla_kms_crtc *kc,
	struct wla_gamma_lut *lut)
{
	for (size_t i = 0; i < kc->n_gamma_blobs; i++) {
		if (kc->gamma_blobs[i].lut == lut ||
				wla_gamma_lut_equal(kc->gamma_blobs[i].lut, lut)) {
			return kc->gamma_blobs[i].id;
		}
	}
	struct drm_color_lut *entries = calloc(lut->size, sizeof(*entries));
	if (!entries) {
		wla_kms_log(kms, WLR_ERROR, "%s: out of memory for a GAMMA_LUT of %" PRIu32
			" entries", kc->base.name, lut->size);
		return 0;
	}
	for (uint32_t i = 0; i < lut->size; i++) {
		entries[i] = (struct drm_color_lut){ .red = lut->r[i], .green = lut->g[i],
			.blue = lut->b[i] };
	}
	uint32_t id = 0;
	int ret = drmModeCreatePropertyBlob(kms->fd, entries, lut->size * sizeof(*entries), &id);
	free(entries);
	if (ret != 0) {
		wla_kms_log_errno(kms, WLR_ERROR, "%s: cannot make a GAMMA_LUT blob of %" PRIu32
			" entries", kc->base.name, lut->size);
		return 0;
	}
	if (kc->n_gamma_blobs == WLA_KMS_GAMMA_BLOBS) {
		wla_kms_gamma_blobs_release(kms, kc, 1);
	}
	kc->gamma_blobs[kc->n_gamma_blobs++] = (struct wla_kms_gamma_blob){
		.lut = wla_gamma_lut_get(lut), .id = id };
	return id;
}

void wla_kms_gamma_blobs_release(struct wla_kms *kms, struct wla_kms_crtc *kc, size_t n)
{
	for (size_t i = 0; i < n && i < kc->n_gamma_blobs; i++) {
		if (!kms->lost) {
			drmModeDestroyPropertyBlob(kms->fd, kc->gamma_blobs[i].id);
		}
		wla_gamma_lut_put(kc->gamma_blobs[i].lut);
	}
	n = n < kc->n_gamma_blobs ? n : kc->n_gamma_blobs;
	memmove(kc->gamma_blobs, kc->gamma_blobs + n,
		(kc->n_gamma_blobs - n) * sizeof(*kc->gamma_blobs));
	kc->n_gamma_blobs -= n;
}
