/*
 * The KMS driver (include/backend/kms.h): a DRM card's CRTCs, planes and
 * connectors as objects of the atomic core, programmed with atomic commits.
 *
 * This file owns the device: made from the card the glue opened and hands
 * over (backend/session/ finds and opens it, as wlroots' session does for
 * its DRM backend; its objects are read by probe.c), the driver table the
 * core calls, what another client left on, and destroy. The other concerns
 * have a file each: properties.c, mode.c (MODE_ID blobs), fb.c
 * (framebuffers), atomic.c (building, testing and programming a request),
 * events.c (page-flip events, vblanks, device loss), writeback.c (capture),
 * probe.c (enumeration and re-probe), card.c (the fd checked, the card's
 * hot-plugs and the end of its session); kms-private.h declares what they
 * share.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "backend/session.h"
#include "kms-private.h"

/* A commit should reach the kernel this long before the vblank it is for:
 * the atomic worker programs the planes before the vblank starts. */
#define KMS_COMMIT_SLACK_NS 1000000

static const struct wla_driver_funcs kms_funcs;

struct wla_kms *wla_kms_from_device(struct wla_device *dev)
{
	assert(dev->funcs == &kms_funcs);
	struct wla_kms *kms = wl_container_of(dev, kms, dev);
	return kms;
}

bool wla_device_is_kms(struct wla_device *dev)
{
	return dev && dev->funcs == &kms_funcs;
}

struct wla_kms_crtc *wla_kms_crtc_from_crtc(struct wla_crtc *crtc)
{
	struct wla_kms_crtc *kc = wl_container_of(crtc, kc, base);
	return kc;
}

/* The driver interface, for the glue */

static uint64_t kms_now(struct wla_device *dev)
{
	return now_ns();
}

static void kms_destroy_device(struct wla_device *dev)
{
	wla_kms_destroy(wla_kms_from_device(dev));
}

/* Through a writeback connector, where the card has one. */
static const struct wla_capture_funcs kms_capture_funcs = {
	.capture = wla_kms_capture,
	.cancel = wla_kms_capture_cancel,
};

static const struct wla_driver_funcs kms_funcs = {
	.atomic_check = wla_kms_atomic_check,
	.prepare_fb = wla_kms_prepare_fb,
	.cleanup_fb = wla_kms_cleanup_fb,
	.release_fb = wla_kms_release_fb,
	.commit_tail = wla_kms_commit_tail,
	.sync = wla_kms_sync,
	.deliver = wla_kms_deliver,
	.now = kms_now,
	.vblank_at = wla_kms_vblank_at,
	.vblank_counters = wla_kms_vblank_counters,
	.destroy = kms_destroy_device,
};

/* A property of an object as the kernel has it now (fallback if unread). */
static uint64_t kernel_prop(struct wla_kms *kms, uint32_t obj, uint32_t type, uint32_t prop,
	uint64_t fallback)
{
	drmModeObjectProperties *props = prop ? drmModeObjectGetProperties(kms->fd, obj, type) :
		NULL;
	uint64_t value = fallback;
	for (uint32_t i = 0; props && i < props->count_props; i++) {
		if (props->props[i] == prop) {
			value = props->prop_values[i];
		}
	}
	drmModeFreeObjectProperties(props);
	return value;
}

/*
 * A CRTC lit at start with a mode, driving connected connectors: kept as
 * the kernel has it (the core's books say so, wla_crtc_adopt), its primary
 * plane's framebuffer on screen until the first frame replaces it. false
 * if it is off or cannot be kept (then it is turned off).
 */
static bool keep_lit(struct wla_kms *kms, struct wla_kms_crtc *kc)
{
	drmModeCrtc *crtc = drmModeGetCrtc(kms->fd, kc->id);
	struct wla_mode mode;
	drmModeModeInfo info = { 0 };
	bool lit = crtc && crtc->mode_valid &&
		kernel_prop(kms, kc->id, DRM_MODE_OBJECT_CRTC, kc->prop_active, 1) != 0;
	bool timing = lit && wla_kms_mode_from_drm(&crtc->mode, &mode);
	if (lit) {
		info = crtc->mode;
	}
	drmModeFreeCrtc(crtc);
	if (!lit) {
		return false;
	}
	/* One connector: an output is one connector, as in wlroots (a console
	 * cloned on several has the others turned off). */
	uint32_t conns = 0;
	for (size_t i = 0; i < kms->n_connectors && !conns; i++) {
		struct wla_kms_connector *conn = kms->connectors[i];
		if (conn->added && conn->base.status == WLA_CONNECTOR_CONNECTED &&
				kernel_prop(kms, conn->id, DRM_MODE_OBJECT_CONNECTOR, conn->prop_crtc_id,
					0) == kc->id) {
			conns |= 1u << conn->base.index;
		}
	}
	if (!timing || !conns || !kc->base.primary) {
		wla_kms_obj_log(kms, kc, WLR_INFO, "lit at start, not kept: %s",
			!timing ? "a mode the core cannot time (interlaced)" :
			!conns ? "no connected connector on it" : "no primary plane");
		return false;
	}
	/* Our MODE_ID blob of it is the kernel's mode as it is, so that a
	 * frame in the same mode is no modeset. */
	if (!wla_kms_mode_blob_keep(kms, &mode, &info) ||
			!wla_crtc_adopt(&kc->base, &mode, conns)) {
		return false;
	}
	kc->mode = kc->base.state->mode;
	kc->period_ns = wla_mode_period_ns(&kc->mode);
	kc->counters.refresh_ns = kc->period_ns;
	kc->active = true;
	kc->have_vblank = false;
	kc->no_vblank = false;
	struct wla_kms_plane *primary = wl_container_of(kc->base.primary, primary, base);
	drmModePlane *plane = drmModeGetPlane(kms->fd, primary->id);
	if (plane && plane->fb_id && plane->crtc_id == kc->id) {
		primary->foreign_crtc = kc->id;
	}
	drmModeFreePlane(plane);
	char desc[128];
	wla_kms_obj_log(kms, kc, WLR_INFO, "lit at start with %s for connector %s: kept, as "
		"it shows", wla_mode_describe(&kc->mode, desc, sizeof(desc)),
		kms->dev.connectors[__builtin_ctz(conns)]->name);
	return true;
}

/* A CRTC kept by keep_lit back to off in the books (the commit that turns
 * the rest off failed). */
static void unkeep(struct wla_kms *kms, struct wla_kms_crtc *kc)
{
	struct wla_crtc_state *cs = kc->base.state;
	for (size_t i = 0; i < kms->n_connectors; i++) {
		struct wla_connector *conn = &kms->connectors[i]->base;
		if (conn->state->crtc == &kc->base) {
			conn->state->crtc = NULL;
		}
	}
	cs->enable = cs->active = false;
	cs->connector_mask = 0;
	memset(&cs->mode, 0, sizeof(cs->mode));
	kc->active = false;
	for (size_t i = 0; i < kms->n_planes; i++) {
		if (kms->planes[i].foreign_crtc == kc->id) {
			kms->planes[i].foreign_crtc = 0;
		}
	}
}

/* The CRTC a connector is on in the core's books (0: none). */
static uint32_t connector_crtc_id(struct wla_kms_connector *kc)
{
	struct wla_crtc *crtc = kc->added ? kc->base.state->crtc : NULL;
	return crtc ? wla_kms_crtc_from_crtc(crtc)->id : 0;
}

/*
 * What another client (the console, a compositor that crashed) left on.
 * As wlroots' DRM backend, a CRTC lit with a mode for connected connectors
 * is kept (its output starts enabled with that mode); everything else is
 * turned off in one commit, so that the kernel's state is the core's: the
 * other planes, the connectors routed elsewhere, the CRTCs not kept, and
 * the writeback connector (the first capture on a kept CRTC attaches it).
 * keep false: all of it goes off.
 */
static void take_over_kernel_state(struct wla_kms *kms, bool keep)
{
	uint32_t kept = 0;
	for (size_t c = 0; c < kms->n_crtcs && keep; c++) {
		if (keep_lit(kms, &kms->crtcs[c])) {
			kept |= 1u << c;
		}
	}
	size_t crtcs_on = 0, planes_on = 0;
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		drmModeCrtc *crtc = drmModeGetCrtc(kms->fd, kms->crtcs[c].id);
		crtcs_on += crtc && crtc->mode_valid && !(kept & (1u << c));
		drmModeFreeCrtc(crtc);
	}
	for (size_t i = 0; i < kms->n_planes; i++) {
		drmModePlane *plane = drmModeGetPlane(kms->fd, kms->planes[i].id);
		planes_on += plane && (plane->fb_id || plane->crtc_id) && !kms->planes[i].foreign_crtc;
		drmModeFreePlane(plane);
	}
	/* Connectors the kernel routes otherwise than the books: a console
	 * cloned on a kept CRTC leaves a second connector on it (taking it
	 * off is a modeset of that CRTC, the kernel's connectors_changed, but
	 * the books keep one connector an output), the writeback connector
	 * attached. */
	size_t conns_moved = 0;
	for (size_t i = 0; i < kms->n_connectors; i++) {
		struct wla_kms_connector *kc = kms->connectors[i];
		uint64_t routed = kernel_prop(kms, kc->id, DRM_MODE_OBJECT_CONNECTOR,
			kc->prop_crtc_id, 0);
		if (routed != connector_crtc_id(kc)) {
			wla_kms_log(kms, WLR_INFO, "connector %" PRIu32 " (%s): CRTC_ID %" PRIu64
				" as left, %" PRIu32 " as kept: set", kc->id,
				kc->added ? kc->base.name : "not added", routed, connector_crtc_id(kc));
			conns_moved++;
		}
	}
	if (kms->has_writeback) {
		uint64_t wb_routed = kernel_prop(kms, kms->writeback.id, DRM_MODE_OBJECT_CONNECTOR,
			kms->writeback.prop_crtc_id, 0);
		if (wb_routed) {
			wla_kms_log(kms, WLR_INFO, "writeback connector %" PRIu32 ": CRTC_ID %"
				PRIu64 " as left, 0 as kept: set", kms->writeback.id, wb_routed);
			conns_moved++;
		}
	}
	if (crtcs_on == 0 && planes_on == 0 && conns_moved == 0) {
		return;
	}
	struct kms_req r = { .kms = kms, .req = drmModeAtomicAlloc() };
	if (!r.req) {
		wla_kms_log(kms, WLR_ERROR, "out of memory for the commit turning off what was "
			"left on (%zu crtcs, %zu planes, %zu connectors)", crtcs_on, planes_on,
			conns_moved);
		for (size_t c = 0; c < kms->n_crtcs; c++) {
			if (kept & (1u << c)) {
				unkeep(kms, &kms->crtcs[c]);
			}
		}
		return;
	}
	for (size_t i = 0; i < kms->n_planes; i++) {
		struct wla_kms_plane *kp = &kms->planes[i];
		if (!kp->foreign_crtc) {
			wla_kms_add_prop(&r, "FB_ID", kp->id, kp->props.fb_id, 0);
			wla_kms_add_prop(&r, "CRTC_ID", kp->id, kp->props.crtc_id, 0);
		}
	}
	for (size_t i = 0; i < kms->n_connectors; i++) {
		struct wla_kms_connector *kc = kms->connectors[i];
		wla_kms_add_prop(&r, "CRTC_ID", kc->id, kc->prop_crtc_id, connector_crtc_id(kc));
	}
	/* The writeback connector too: attaching it to a CRTC kept lit would
	 * be a modeset, which keeping it lit is there to avoid (the first
	 * capture there attaches it). */
	if (kms->has_writeback) {
		wla_kms_add_prop(&r, "CRTC_ID", kms->writeback.id, kms->writeback.prop_crtc_id, 0);
	}
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_kms_crtc *kc = &kms->crtcs[c];
		if (!(kept & (1u << c))) {
			wla_kms_add_prop(&r, "MODE_ID", kc->id, kc->prop_mode_id, 0);
			wla_kms_add_prop(&r, "ACTIVE", kc->id, kc->prop_active, 0);
		}
	}
	if (r.err == 0 && drmModeAtomicCommit(kms->fd, r.req, DRM_MODE_ATOMIC_ALLOW_MODESET,
			NULL) != 0) {
		r.err = -errno;
	}
	wla_kms_finish_request(&r);
	if (r.err && kept) {
		wla_kms_log(kms, WLR_ERROR, "cannot keep what was left lit (crtcs 0x%" PRIx32
			" of the core kept, %zu crtcs, %zu planes and %zu connectors off beside "
			"them): %s; all of it goes off", kept, crtcs_on, planes_on, conns_moved,
			strerror(-r.err));
		for (size_t c = 0; c < kms->n_crtcs; c++) {
			if (kept & (1u << c)) {
				unkeep(kms, &kms->crtcs[c]);
			}
		}
		take_over_kernel_state(kms, false);
		return;
	}
	if (r.err) {
		wla_kms_log(kms, WLR_ERROR, "cannot turn off what was left on (%zu crtcs, %zu "
			"planes, %zu connectors): %s", crtcs_on, planes_on, conns_moved,
			strerror(-r.err));
	} else {
		wla_kms_log(kms, WLR_INFO, "turned off what another client left on (%zu crtcs, "
			"%zu planes, %zu connectors)%s", crtcs_on, planes_on, conns_moved,
			kept ? "; kept what is lit" : "");
	}
}

struct wla_kms *wla_kms_create(struct wl_event_loop *loop, struct wla_card *card)
{
	struct wla_kms *kms = calloc(1, sizeof(*kms));
	if (!kms) {
		wla_kms_log(card, WLR_ERROR, "out of memory");
		return NULL;
	}
	kms->card = card;
	kms->fd = card->fd;
	snprintf(kms->path, sizeof(kms->path), "%s", card->path);
	if (wla_kms_check_fd(kms) < 0) {
		free(kms);
		return NULL;
	}
	wla_device_init(&kms->dev, &kms_funcs, kms->path);
	kms->dev.latch_slack_ns = KMS_COMMIT_SLACK_NS;
	kms->dev.modeset_untimed = true;
	uint64_t prime = 0;
	if (drmGetCap(kms->fd, DRM_CAP_PRIME, &prime) != 0 ||
			(prime & (DRM_PRIME_CAP_IMPORT | DRM_PRIME_CAP_EXPORT)) !=
			(DRM_PRIME_CAP_IMPORT | DRM_PRIME_CAP_EXPORT)) {
		/* Its buffers cannot leave it as dmabufs nor others come in
		 * (bochs): compositors render into shared memory (wlroots then
		 * picks its shm allocator), copied into the card's own dumb
		 * buffers at each scanout. */
		kms->copy_scanout = true;
		kms->dev.scanout_copies = true;
		kms->dev.buffer_caps = WLA_BUFFER_CAP_SHM | WLA_BUFFER_CAP_DATA_PTR;
		wla_kms_log(kms, WLR_INFO, "PRIME import and export not both there "
			"(DRM_CAP_PRIME 0x%" PRIx64 "): buffers in shared memory, copied into "
			"the card's dumb buffers", prime);
	} else {
		kms->dev.buffer_caps = WLA_BUFFER_CAP_DMABUF;
	}
	/* As a monitor would be given it; the kernel checks it with TEST_ONLY. */
	kms->dev.custom_timing = WLA_CUSTOM_CVT;
	kms->dev.capture_funcs = &kms_capture_funcs;
	kms->dev.drm_fd = kms->fd;
	wl_list_init(&kms->imports);
	wl_list_init(&kms->captures);
	wl_list_init(&kms->failed_captures);
	kms->loop = loop;
	/* Writeback connectors where the card has them (capture). */
	drmSetClientCap(kms->fd, DRM_CLIENT_CAP_WRITEBACK_CONNECTORS, 1);
	uint64_t cap = 0;
	kms->cursor_width = drmGetCap(kms->fd, DRM_CAP_CURSOR_WIDTH, &cap) == 0 && cap ?
		(uint32_t)cap : 64;
	cap = 0;
	kms->cursor_height = drmGetCap(kms->fd, DRM_CAP_CURSOR_HEIGHT, &cap) == 0 && cap ?
		(uint32_t)cap : 64;
	cap = 0;
	kms->monotonic = drmGetCap(kms->fd, DRM_CAP_TIMESTAMP_MONOTONIC, &cap) == 0 && cap;
	kms->wb_stall_ms = WLA_KMS_WB_STALL_MS;
	drmVersion *version = drmGetVersion(kms->fd);
	snprintf(kms->driver_name, sizeof(kms->driver_name), "%s",
		version && version->name ? version->name : "unknown");
	drmFreeVersion(version);

	drmModeRes *res = drmModeGetResources(kms->fd);
	bool ok = res && wla_kms_init_crtcs(kms, res) && wla_kms_init_planes(kms) &&
		wla_kms_init_connectors(kms, res);
	drmModeFreeResources(res);
	if (ok) {
		take_over_kernel_state(kms, true);
	}
	if (ok && loop) {
		kms->fd_source = wl_event_loop_add_fd(loop, kms->fd, WL_EVENT_READABLE, wla_kms_handle_fd,
			kms);
		ok = kms->fd_source != NULL;
	}
	if (ok) {
		wla_kms_listen_card(kms);
	}
	if (!ok) {
		wla_kms_log(kms, WLR_ERROR, "cannot describe the card to the core");
		wla_kms_destroy(kms);
		return NULL;
	}
	size_t connected = 0;
	for (size_t i = 0; i < kms->n_connectors; i++) {
		connected += kms->connectors[i]->base.status == WLA_CONNECTOR_CONNECTED;
	}
	wla_kms_log(kms, WLR_INFO, "driver %s, %zu crtcs, %zu planes, %zu connectors (%zu "
		"connected)%s, cursor %" PRIu32 "x%" PRIu32, kms->driver_name,
		kms->n_crtcs, kms->n_planes, kms->n_connectors, connected,
		kms->has_writeback ? ", a writeback connector" : "", kms->cursor_width,
		kms->cursor_height);
	return kms;
}

struct wla_device *wla_kms_device_create(struct wl_event_loop *loop, struct wla_card *card)
{
	struct wla_kms *kms = wla_kms_create(loop, card);
	return kms ? &kms->dev : NULL;
}

void wla_kms_destroy(struct wla_kms *kms)
{
	if (!kms) {
		return;
	}
	kms->destroying = true;
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		kms->crtcs[c].base.present = NULL;
		kms->crtcs[c].base.idle = NULL;
	}
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_crtc *crtc = &kms->crtcs[c].base;
		if (crtc->state && (crtc->state->enable || crtc->state->active ||
				!wl_list_empty(&crtc->queue))) {
			wla_crtc_force_off(crtc);
		}
	}
	for (size_t i = 0; i < kms->n_connectors; i++) {
		struct wla_kms_connector *kc = kms->connectors[i];
		if (kc->added) {
			wla_device_remove_connector(&kms->dev, &kc->base);
		}
		free(kc);
	}
	for (size_t i = 0; i < kms->n_planes; i++) {
		wla_device_remove_plane(&kms->dev, &kms->planes[i].base);
	}
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		wla_crtc_drop_events(&kms->crtcs[c].base);
		wla_device_remove_crtc(&kms->dev, &kms->crtcs[c].base);
		wla_kms_blank_free(kms, &kms->crtcs[c]);
	}
	/* Captures in flight end as failed. */
	wla_kms_fail_captures(kms, NULL);
	if (kms->wb_job) {
		wl_list_insert_list(&kms->failed_captures, &kms->wb_job->captures);
		wl_list_init(&kms->wb_job->captures);
		wla_kms_job_free(kms->wb_job);
	}
	wla_kms_deliver_failed(kms);
	/* The imports kept of fbs that outlive the driver. */
	wla_kms_release_imports(kms);
	if (kms->live_fbs) {
		wla_kms_log(kms, WLR_ERROR, "%d DRM fbs still there at destroy",
			kms->live_fbs);
	}
	if (kms->fd_source) {
		wl_event_source_remove(kms->fd_source);
	}
	if (kms->card_change.notify) {
		wla_kms_unlisten_card(kms);
	}
	if (kms->idle) {
		wl_event_source_remove(kms->idle);
	}
	for (size_t i = 0; i < kms->n_crtcs; i++) {
		struct wla_kms_crtc *kc = &kms->crtcs[i];
		wla_kms_gamma_blobs_release(kms, kc, kc->n_gamma_blobs);
	}
	for (size_t i = 0; i < kms->n_blobs && !kms->lost; i++) {
		drmModeDestroyPropertyBlob(kms->fd, kms->blobs[i].id);
	}
	free(kms->blobs);
	/* The card is the caller's: it closes it once the driver is gone. */
	free(kms);
}
