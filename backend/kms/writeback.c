/*
 * Writeback of the KMS driver (capture): the card's writeback connector,
 * found at enumeration and attached to a CRTC with a modeset it goes
 * through anyway; the jobs that carry captures on a commit (the
 * compositor's, or one of the driver's own), their buffer, fence and image.
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "kms-private.h"
#include "wlatomic/capture.h"
#include "util.h"

void wla_kms_job_free(struct kms_wb_job *job)
{
	struct wla_kms *kms = job->kms;
	for (size_t i = 0; i < job->n_held; i++) {
		job->held[i]->funcs->cleanup(job->held[i]);
		wla_fb_put(job->held[i]);
	}
	if (job->fence_source) {
		wl_event_source_remove(job->fence_source);
	}
	if (job->stall_timer) {
		wl_event_source_remove(job->stall_timer);
	}
	if (job->fence_fd >= 0) {
		close(job->fence_fd);
	}
	if (job->map) {
		munmap(job->map, job->size);
	}
	if (job->fb_id && !kms->lost) {
		drmModeRmFB(kms->fd, job->fb_id);
	}
	if (job->handle) {
		struct drm_mode_destroy_dumb destroy = { .handle = job->handle };
		drmIoctl(kms->fd, DRM_IOCTL_MODE_DESTROY_DUMB, &destroy);
	}
	if (kms->wb_job == job) {
		kms->wb_job = NULL;
	}
	free(job);
}

/* A job for the captures waiting on kc, its buffer of the mode's size;
 * NULL (logged) if it cannot be had. */
static struct kms_wb_job *job_create(struct wla_kms *kms, struct wla_kms_crtc *kc,
	const struct wla_mode *mode)
{
	struct kms_wb_job *job = calloc(1, sizeof(*job));
	if (!job) {
		wla_kms_obj_log(kms, kc, WLR_ERROR, "out of memory for a writeback job");
		return NULL;
	}
	job->kms = kms;
	job->kc = kc;
	job->fence_fd = -1;
	wl_list_init(&job->captures);
	job->width = (uint32_t)mode->width;
	job->height = (uint32_t)mode->height;
	struct drm_mode_create_dumb create = { .width = job->width, .height = job->height,
		.bpp = 32 };
	if (drmIoctl(kms->fd, DRM_IOCTL_MODE_CREATE_DUMB, &create) != 0) {
		wla_kms_obj_log_errno(kms, kc, WLR_ERROR, "a %" PRIu32 "x%" PRIu32 " dumb buffer for "
			"writeback", job->width, job->height);
		free(job);
		return NULL;
	}
	job->handle = create.handle;
	job->stride = create.pitch;
	job->size = create.size;
	uint32_t handles[4] = { job->handle }, pitches[4] = { job->stride }, offsets[4] = { 0 };
	struct drm_mode_map_dumb map = { .handle = job->handle };
	if (drmModeAddFB2(kms->fd, job->width, job->height, DRM_FORMAT_XRGB8888, handles,
			pitches, offsets, &job->fb_id, 0) != 0 ||
			drmIoctl(kms->fd, DRM_IOCTL_MODE_MAP_DUMB, &map) != 0) {
		wla_kms_obj_log_errno(kms, kc, WLR_ERROR, "the writeback buffer");
		wla_kms_job_free(job);
		return NULL;
	}
	job->map = mmap(NULL, job->size, PROT_READ, MAP_SHARED, kms->fd, (off_t)map.offset);
	if (job->map == MAP_FAILED) {
		job->map = NULL;
		wla_kms_obj_log_errno(kms, kc, WLR_ERROR, "mmap of the writeback buffer");
		wla_kms_job_free(job);
		return NULL;
	}
	return job;
}

static struct wla_kms_crtc *capture_crtc(struct wla_capture *cap)
{
	return cap->driver_data;
}

/* Captures of kc not yet given to a job. */
static bool captures_waiting(struct wla_kms *kms, struct wla_kms_crtc *kc)
{
	struct wla_capture *cap;
	wl_list_for_each(cap, &kms->captures, link) {
		if (capture_crtc(cap) == kc) {
			return true;
		}
	}
	return false;
}

/* Move kc's waiting captures (all of them with kc NULL) to the failed
 * list, delivered by wla_kms_deliver. */
void wla_kms_fail_captures(struct wla_kms *kms, struct wla_kms_crtc *kc)
{
	struct wla_capture *cap, *tmp;
	wl_list_for_each_safe(cap, tmp, &kms->captures, link) {
		if (!kc || capture_crtc(cap) == kc) {
			wl_list_remove(&cap->link);
			wl_list_insert(kms->failed_captures.prev, &cap->link);
		}
	}
}

void wla_kms_deliver_failed(struct wla_kms *kms)
{
	while (!wl_list_empty(&kms->failed_captures)) {
		struct wla_capture *cap = wl_container_of(kms->failed_captures.next, cap, link);
		wl_list_remove(&cap->link);
		cap->func(cap, NULL, 0, cap->data);
		free(cap);
	}
}

/* The writeback finished: copy the pixels out, tell the captures. */
static void job_complete(struct kms_wb_job *job)
{
	struct wla_image *image = wla_image_create(job->width, job->height);
	if (image) {
		for (uint32_t y = 0; y < job->height; y++) {
			memcpy((char *)image->data + (size_t)y * image->stride,
				(const char *)job->map + (size_t)y * job->stride, (size_t)job->width * 4);
		}
	} else {
		wla_kms_obj_log(job->kms, job->kc, WLR_ERROR, "out of memory for a captured image");
	}
	if (job->kms->wb_job == job) {
		job->kms->wb_job = NULL;
	}
	job->kms->wb_stalls = 0;
	while (!wl_list_empty(&job->captures)) {
		struct wla_capture *cap = wl_container_of(job->captures.next, cap, link);
		wl_list_remove(&cap->link);
		cap->func(cap, image, job->seq, cap->data);
		free(cap);
	}
	wla_image_destroy(image);
	wla_kms_job_free(job);
}

static bool fence_signalled(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	return fd < 0 || (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN));
}

/* Complete the job in flight once its flip happened and its fence
 * signalled (the composed frame is in the buffer). */
void wla_kms_check_job(struct wla_kms *kms)
{
	struct kms_wb_job *job = kms->wb_job;
	if (job && !job->dropped && job->flipped &&
			(job->fenced || fence_signalled(job->fence_fd))) {
		job_complete(job);
	}
}

static int handle_fence(int fd, uint32_t mask, void *data)
{
	struct kms_wb_job *job = data;
	struct wla_kms *kms = job->kms;
	wl_event_source_remove(job->fence_source);
	job->fence_source = NULL;
	job->fenced = true;
	/* Capture callbacks may destroy the backend, and this driver with it:
	 * that waits for the release. */
	wla_device_hold(&kms->dev);
	wla_kms_check_job(kms);
	if (!wla_doomed(&kms->dev.hold)) {
		wla_kms_kick_captures(kms);
	}
	wla_device_release(&kms->dev);
	return 0;
}

/* The writeback was not done in time: given up, its captures ride on the
 * next frame (or fail after WLA_KMS_WB_STALLS_MAX give-ups in a row). */
static int handle_stall(void *data)
{
	struct kms_wb_job *job = data;
	struct wla_kms *kms = job->kms;
	if (job->stall_timer) {
		wl_event_source_remove(job->stall_timer);
		job->stall_timer = NULL;
	}
	kms->wb_stalls++;
	kms->wb_stalls_total++;
	bool give_up = kms->wb_stalls >= WLA_KMS_WB_STALLS_MAX;
	wla_kms_obj_log(kms, job->kc, give_up ? WLR_ERROR : WLR_INFO, "writeback of commit %"
		PRIu64 " not done after %" PRIu32 " ms (flipped %d, fence %s): %s", job->serial,
		kms->wb_stall_ms, job->flipped, job->fenced ? "signalled" : "not signalled",
		give_up ? "its captures fail" : "its captures go on the next frame");
	wl_list_insert_list(give_up ? &kms->failed_captures : &kms->captures, &job->captures);
	wl_list_init(&job->captures);
	if (give_up) {
		kms->wb_stalls = 0;
	}
	wla_device_hold(&kms->dev);
	wla_kms_job_free(job);
	wla_kms_kick_captures(kms);
	wla_device_release(&kms->dev);
	return 0;
}

/* The job went out with commit serial (programming state, or NULL for a
 * commit of the driver's own): hold what the CRTC shows with it, and wait
 * for its flip and fence. */
void wla_kms_start_job(struct wla_kms *kms, struct kms_wb_job *job, uint64_t serial,
	struct wla_atomic_state *state)
{
	wla_kms_obj_log(kms, job->kc, WLR_DEBUG, "writeback into fb %" PRIu32 " with commit %" PRIu64
		", fence fd %d", job->fb_id, serial, job->fence_fd);
	for (size_t i = 0; i < kms->dev.n_planes; i++) {
		struct wla_plane *plane = kms->dev.planes[i];
		if (!plane) {
			continue;
		}
		/* The programmed state's own plane states (the newest ones may
		 * be queued behind it), else what the plane shows. */
		const struct wla_plane_state *ps = plane->state;
		if (state && state->planes[plane->index].ptr) {
			ps = state->planes[plane->index].new_state;
		}
		if (ps && ps->crtc == &job->kc->base && ps->fb && ps->fb->funcs->prepare(ps->fb) == 0) {
			job->held[job->n_held++] = wla_fb_get(ps->fb);
		}
	}
	job->serial = serial;
	kms->wb_job = job;
	if (kms->loop && job->fence_fd >= 0) {
		job->fence_source = wl_event_loop_add_fd(kms->loop, job->fence_fd,
			WL_EVENT_READABLE, handle_fence, job);
	}
	job->started_ns = now_ns();
	if (kms->fail_writebacks > 0) {
		kms->fail_writebacks--;
		job->dropped = true;
	}
	if (kms->loop) {
		job->stall_timer = wl_event_loop_add_timer(kms->loop, handle_stall, job);
		if (job->stall_timer) {
			/* timer_update(0) disarms: at least 1 ms. */
			wl_event_source_timer_update(job->stall_timer,
				kms->wb_stall_ms ? (int)kms->wb_stall_ms : 1);
		}
	}
}

void wla_kms_check_stall(struct wla_kms *kms)
{
	struct kms_wb_job *job = kms->wb_job;
	if (job && now_ns() - job->started_ns >= (uint64_t)kms->wb_stall_ms * 1000000u) {
		handle_stall(job);
	}
}

/* The writeback connector follows the first CRTC it can serve. */
void wla_kms_add_writeback_route(struct kms_req *r, struct wla_kms_crtc *kc,
	const struct wla_crtc_state *cs, bool with_wb)
{
	struct wla_kms_writeback *wb = &r->kms->writeback;
	if (!r->kms->has_writeback || !(wb->possible_crtcs & (1u << kc->base.index))) {
		return;
	}
	/* Attached where the CRTC goes through a modeset anyway (for the
	 * kernel a new connector on a running CRTC is one), or, on a CRTC
	 * kept lit at start that no modeset of ours attached it to, for the
	 * first capture there: that capture costs a modeset. */
	bool modeset = cs->active_changed || cs->mode_changed || cs->connectors_changed;
	bool for_capture = !modeset && captures_waiting(r->kms, kc);
	if (cs->active && (modeset || for_capture) && with_wb && wb->usable &&
			wb->routed_crtc == 0 && !r->wb_routes) {
		r->wb_routes = true;
		r->wb_crtc = kc->id;
		if (for_capture) {
			wla_kms_obj_log(r->kms, kc, WLR_INFO, "writeback connector %" PRIu32
				" attached for a capture (a modeset)", wb->id);
		}
	} else if (!cs->active && wb->routed_crtc == kc->id) {
		r->wb_routes = true;
		r->wb_crtc = 0;
	} else {
		return;
	}
	wla_kms_add_prop(r, "CRTC_ID", wb->id, wb->prop_crtc_id, r->wb_crtc);
}

/* A capture waiting on kc rides on this request. */
void wla_kms_add_writeback_job(struct kms_req *r, struct wla_kms_crtc *kc,
	const struct wla_crtc_state *cs)
{
	struct wla_kms *kms = r->kms;
	struct wla_kms_writeback *wb = &kms->writeback;
	/* Not in the commit that attaches the connector (a modeset): vkms
	 * signals no fence for a job there. */
	if (r->err || r->job || kms->wb_job || !cs->active || wb->routed_crtc != kc->id ||
			!captures_waiting(kms, kc)) {
		return;
	}
	struct kms_wb_job *job = job_create(kms, kc, &cs->mode);
	if (!job) {
		wla_kms_fail_captures(kms, kc);
		return;
	}
	r->job = job;
	/* Every capture waiting on kc is served by this job's image. */
	struct wla_capture *cap, *tmp;
	wl_list_for_each_safe(cap, tmp, &kms->captures, link) {
		if (capture_crtc(cap) == kc) {
			wl_list_remove(&cap->link);
			wl_list_insert(job->captures.prev, &cap->link);
		}
	}
	wla_kms_add_prop(r, "WRITEBACK_FB_ID", wb->id, wb->prop_fb_id, job->fb_id);
	wla_kms_add_prop(r, "WRITEBACK_OUT_FENCE_PTR", wb->id, wb->prop_out_fence,
		(uint64_t)(uintptr_t)&job->fence_fd);
}

/* A commit of the driver's own carrying kc's waiting captures. */
/* The writeback connector attached to kc (kept lit at start, where no
 * modeset of ours attached it) for a capture: a blocking modeset of its
 * own, the vblank counter learnt again after it. 0 if it is attached. */
static int attach_for_capture(struct wla_kms *kms, struct wla_kms_crtc *kc,
	const struct wla_crtc_state *cs)
{
	if (kms->writeback.routed_crtc == kc->id) {
		return 0;
	}
	struct kms_req r = { .kms = kms, .req = drmModeAtomicAlloc() };
	if (!r.req) {
		return -ENOMEM;
	}
	wla_kms_add_writeback_route(&r, kc, cs, true);
	int ret = r.err ? r.err : r.wb_routes && r.wb_crtc == kc->id ? 0 : -EINVAL;
	if (ret == 0 && drmModeAtomicCommit(kms->fd, r.req, DRM_MODE_ATOMIC_ALLOW_MODESET,
			NULL) != 0) {
		ret = -errno;
		wla_kms_obj_log(kms, kc, WLR_ERROR, "the kernel refused to attach writeback "
			"connector %" PRIu32 " for a capture: %s (errno %d)", kms->writeback.id,
			strerror(-ret), -ret);
	}
	wla_kms_finish_request(&r);
	if (ret == 0) {
		kms->writeback.routed_crtc = kc->id;
		kc->have_vblank = false;
	}
	return ret;
}

static int own_writeback_commit(struct wla_kms *kms, struct wla_kms_crtc *kc)
{
	struct kms_req r = { .kms = kms, .req = drmModeAtomicAlloc() };
	if (!r.req) {
		return -ENOMEM;
	}
	struct wla_crtc_state *cs = kc->base.state;
	int ret = attach_for_capture(kms, kc, cs);
	if (ret < 0) {
		wla_kms_finish_request(&r);
		return ret;
	}
	wla_kms_add_writeback_job(&r, kc, cs);
	ret = r.err ? r.err : r.job ? 0 : -ENOMEM;
	uint64_t serial = ++kms->serial;
	struct wla_kms_flip *flip = ret == 0 ?
		wla_kms_flip_take(kms, serial, 1u << kc->base.index) : NULL;
	if (ret == 0 && drmModeAtomicCommit(kms->fd, r.req, DRM_MODE_ATOMIC_NONBLOCK |
			DRM_MODE_PAGE_FLIP_EVENT, flip) != 0) {
		ret = -errno;
		wla_kms_flip_drop(flip);
		wla_kms_obj_log(kms, kc, WLR_ERROR, "the kernel refused the writeback commit: %s "
			"(errno %d)", strerror(-ret), -ret);
	}
	struct kms_wb_job *job = r.job;
	wla_kms_finish_request(&r);
	if (ret < 0) {
		if (job) {
			wl_list_insert_list(&kms->failed_captures, &job->captures);
			wla_kms_job_free(job);
		}
		return ret;
	}
	kc->own_serial = serial;
	wla_kms_start_job(kms, job, serial, NULL);
	return 0;
}

/* Captures waiting on a CRTC that nothing will commit to soon go out on a
 * commit of the driver's own. */
void wla_kms_kick_captures(struct wla_kms *kms)
{
	for (size_t i = 0; i < kms->n_crtcs && !kms->lost; i++) {
		struct wla_kms_crtc *kc = &kms->crtcs[i];
		if (kms->wb_job || !captures_waiting(kms, kc)) {
			continue;
		}
		if (!kc->active) {
			wla_kms_fail_captures(kms, kc);
		} else if (kc->base.queued == 0 && !kc->armed_serial && !kc->own_serial &&
				own_writeback_commit(kms, kc) < 0) {
			wla_kms_fail_captures(kms, kc);
		}
	}
	wla_kms_deliver_failed(kms);
}

struct wla_capture *wla_kms_capture(struct wla_device *dev, struct wla_crtc *crtc,
	void (*func)(struct wla_capture *capture, const struct wla_image *image, uint64_t seq,
		void *data), void *data)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(crtc);
	const char *why = NULL;
	if (!kms->has_writeback) {
		why = "the card has no writeback connector";
	} else if (!kms->writeback.usable) {
		why = "the kernel refused to attach its writeback connector";
	} else if (kms->lost || kms->destroying || !kc->active) {
		why = "the crtc is off";
	} else if (kms->writeback.routed_crtc && kms->writeback.routed_crtc != kc->id) {
		why = "the card's writeback connector serves another crtc";
	}
	if (why) {
		wla_kms_log(kms, WLR_ERROR, "%s: capture refused: %s (driver %s)",
			crtc->name, why, kms->driver_name);
		return NULL;
	}
	struct wla_capture *cap = calloc(1, sizeof(*cap));
	if (!cap) {
		wla_kms_log(kms, WLR_ERROR, "%s: out of memory for a capture", crtc->name);
		return NULL;
	}
	cap->dev = dev;
	cap->func = func;
	cap->data = data;
	cap->driver_data = kc;
	wl_list_insert(kms->captures.prev, &cap->link);
	/* Nothing will be committed there soon: a commit of our own, now or
	 * once the CRTC is free (wla_kms_kick_captures). */
	bool own = crtc->queued == 0 && !kc->armed_serial && !kc->own_serial && !kms->wb_job;
	if (!own) {
		wla_kms_schedule_idle(kms);
	}
	wla_kms_log(kms, WLR_DEBUG, "%s: capture %p %s", crtc->name, (void *)cap,
		own ? "goes out now" : "waits for the next commit");
	if (own && own_writeback_commit(kms, kc) < 0) {
		wl_list_remove(&cap->link);
		free(cap);
		return NULL;
	}
	return cap;
}

void wla_kms_capture_cancel(struct wla_device *dev, struct wla_capture *capture)
{
	if (!capture) {
		return;
	}
	/* Waiting, in a job or failed: off its list either way (a job in
	 * flight still writes its buffer, for nobody). */
	wl_list_remove(&capture->link);
	free(capture);
}

void wla_kms_init_writeback(struct wla_kms *kms, const drmModeConnector *conn)
{
	if (kms->has_writeback) {
		return;
	}
	struct wla_kms_writeback *wb = &kms->writeback;
	wb->id = conn->connector_id;
	wb->possible_crtcs = wla_kms_connector_crtcs(kms, conn);
	struct prop_want want[] = {
		{ "CRTC_ID", &wb->prop_crtc_id, NULL },
		{ "WRITEBACK_FB_ID", &wb->prop_fb_id, NULL },
		{ "WRITEBACK_OUT_FENCE_PTR", &wb->prop_out_fence, NULL },
	};
	uint32_t prop_formats = 0;
	uint64_t formats_blob = 0;
	struct prop_want fmt_want[] = {
		{ "WRITEBACK_PIXEL_FORMATS", &prop_formats, &formats_blob },
	};
	if (wla_kms_get_props(kms->fd, wb->id, DRM_MODE_OBJECT_CONNECTOR, want, WLA_ARRAY_SIZE(want)) &&
			wb->prop_crtc_id && wb->prop_fb_id && wb->prop_out_fence) {
		kms->has_writeback = true;
		/* Captures are written as XRGB8888: the connector must take it. */
		wla_kms_get_props(kms->fd, wb->id, DRM_MODE_OBJECT_CONNECTOR, fmt_want, 1);
		drmModePropertyBlobRes *blob = formats_blob ?
			drmModeGetPropertyBlob(kms->fd, (uint32_t)formats_blob) : NULL;
		const uint32_t *formats = blob ? blob->data : NULL;
		for (size_t i = 0; blob && i < blob->length / sizeof(uint32_t); i++) {
			wb->usable |= formats[i] == DRM_FORMAT_XRGB8888;
		}
		drmModeFreePropertyBlob(blob);
		if (!wb->usable) {
			wla_kms_log(kms, WLR_INFO, "writeback connector %" PRIu32 " does not write "
				"XRGB8888: capture is off", wb->id);
		}
	}
}
