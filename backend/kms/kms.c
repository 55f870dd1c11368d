/*
 * The KMS driver (include/backend/kms.h): a DRM card's CRTCs, planes and
 * connectors as objects of the atomic core, programmed with atomic commits.
 */
#include <assert.h>
#include <drm_fourcc.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libudev.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <wlr/backend/session.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "backend/kms.h"
#include "wlatomic/capture.h"
#include "util.h"

#define KMS_MAX_CARDS 16
/* A commit should reach the kernel this long before the vblank it is for:
 * the atomic worker programs the planes before the vblank starts. */
#define KMS_COMMIT_SLACK_NS 1000000
/* Mode blobs kept for MODE_ID before the oldest is let go. */
#define KMS_MAX_BLOBS 32

struct wla_kms_blob {
	struct wla_mode mode;
	uint32_t id;
};

/* The driver's import of a wla_fb: a DRM framebuffer. */
struct kms_fb {
	uint32_t fb_id;
};

static const struct wla_driver_funcs kms_funcs;
static void mark_lost(struct wla_kms *kms, int err);
static void schedule_idle(struct wla_kms *kms);
static void run_deferred(struct wla_kms *kms);
static uint32_t take_stashed(struct wla_kms *kms, const struct wla_fb *fb);

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

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Properties */

struct prop_want {
	const char *name;
	uint32_t *id;
	uint64_t *value; /* may be NULL */
};

/* Look up the ids (and current values) of an object's properties by name;
 * those it does not expose stay 0. false if the kernel gave none. */
static bool get_props(int fd, uint32_t obj, uint32_t type, const struct prop_want *want,
	size_t n_want)
{
	drmModeObjectProperties *props = drmModeObjectGetProperties(fd, obj, type);
	if (!props) {
		return false;
	}
	for (uint32_t i = 0; i < props->count_props; i++) {
		drmModePropertyRes *prop = drmModeGetProperty(fd, props->props[i]);
		if (!prop) {
			continue;
		}
		for (size_t w = 0; w < n_want; w++) {
			if (strcmp(prop->name, want[w].name) == 0) {
				*want[w].id = prop->prop_id;
				if (want[w].value) {
					*want[w].value = props->prop_values[i];
				}
			}
		}
		drmModeFreeProperty(prop);
	}
	drmModeFreeObjectProperties(props);
	return true;
}

/* Modes */

static bool mode_from_drm(const drmModeModeInfo *info, struct wla_mode *mode)
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
static uint32_t mode_blob(struct wla_kms *kms, const struct wla_mode *mode)
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
			wlr_log(WLR_ERROR, "kms %s: out of memory for mode blobs", kms->path);
			return 0;
		}
	}
	drmModeModeInfo info;
	mode_to_drm(mode, &info);
	uint32_t id = 0;
	if (drmModeCreatePropertyBlob(kms->fd, &info, sizeof(info), &id) != 0) {
		char buf[128];
		wlr_log_errno(WLR_ERROR, "kms %s: cannot make a MODE_ID blob of %s", kms->path,
			wla_mode_describe(mode, buf, sizeof(buf)));
		return 0;
	}
	kms->blobs[kms->n_blobs++] = (struct wla_kms_blob){ .mode = *mode, .id = id };
	return id;
}

/* Framebuffers */

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
	if (!fb->impl->get_dmabuf || !fb->impl->get_dmabuf(fb, &dmabuf)) {
		wlr_log(WLR_DEBUG, "kms %s: fb %p (%" PRIu32 "x%" PRIu32 ") is not a dmabuf; "
			"the card scans out dmabufs only", kms->path, (void *)fb, fb->width,
			fb->height);
		return -EINVAL;
	}
	uint32_t handles[4] = { 0 }, pitches[4] = { 0 }, offsets[4] = { 0 };
	uint64_t modifiers[4] = { 0 };
	int ret = 0;
	for (int i = 0; i < dmabuf.n_planes; i++) {
		if (drmPrimeFDToHandle(kms->fd, dmabuf.fd[i], &handles[i]) != 0) {
			ret = -errno;
			wlr_log(WLR_ERROR, "kms %s: fb %p: drmPrimeFDToHandle of plane %d: %s",
				kms->path, (void *)fb, i, strerror(errno));
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
		wlr_log(WLR_ERROR, "kms %s: fb %p: AddFB2 of %" PRIu32 "x%" PRIu32 " format "
			"0x%08" PRIx32 " modifier 0x%" PRIx64 ": %s", kms->path, (void *)fb, fb->width,
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
		wlr_log_errno(WLR_ERROR, "kms %s: RmFB %" PRIu32, kms->path, fb_id);
	}
	kms->fbs_removed++;
	kms->live_fbs--;
}

static int kms_prepare_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	if (kms->lost) {
		return -ENODEV;
	}
	struct kms_fb *import = calloc(1, sizeof(*import));
	if (!import) {
		wlr_log(WLR_ERROR, "kms %s: out of memory for an fb import", kms->path);
		return -ENOMEM;
	}
	import->fb_id = take_stashed(kms, fb);
	int ret = import->fb_id ? 0 : add_fb(kms, fb, &import->fb_id);
	if (ret < 0) {
		free(import);
		return ret;
	}
	fb->import = import;
	return 0;
}

static void kms_cleanup_fb(struct wla_device *dev, struct wla_fb *fb)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	struct kms_fb *import = fb->import;
	if (!import) {
		return;
	}
	remove_fb(kms, import->fb_id);
	free(import);
	fb->import = NULL;
}

/* Writeback jobs */

/* What one writeback commit writes into: a dumb buffer of the mode's size,
 * for every capture that waited on its CRTC when it went out. */
struct kms_wb_job {
	struct wla_kms *kms;
	struct wla_kms_crtc *kc;
	uint32_t width, height, stride, handle, fb_id;
	uint64_t size;
	void *map;
	int32_t fence_fd;
	struct wl_event_source *fence_source;
	uint64_t serial; /* the commit that carries it */
	uint64_t seq;
	bool flipped, fenced;
	struct wl_list captures; /* struct wla_capture.link */
	/* The fbs on the CRTC when it went out, held (locked) until the
	 * writeback is done: a display engine that composes late (vkms' worker)
	 * still reads them after the next flip released them. */
	struct wla_fb *held[WLA_MAX_PLANES];
	size_t n_held;
};

static void job_free(struct kms_wb_job *job)
{
	struct wla_kms *kms = job->kms;
	for (size_t i = 0; i < job->n_held; i++) {
		job->held[i]->impl->cleanup(job->held[i]);
		wla_fb_put(job->held[i]);
	}
	if (job->fence_source) {
		wl_event_source_remove(job->fence_source);
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
		wlr_log(WLR_ERROR, "kms %s: %s: out of memory for a writeback job", kms->path,
			kc->base.name);
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
		wlr_log_errno(WLR_ERROR, "kms %s: %s: a %" PRIu32 "x%" PRIu32 " dumb buffer for "
			"writeback", kms->path, kc->base.name, job->width, job->height);
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
		wlr_log_errno(WLR_ERROR, "kms %s: %s: the writeback buffer", kms->path,
			kc->base.name);
		job_free(job);
		return NULL;
	}
	job->map = mmap(NULL, job->size, PROT_READ, MAP_SHARED, kms->fd, (off_t)map.offset);
	if (job->map == MAP_FAILED) {
		job->map = NULL;
		wlr_log_errno(WLR_ERROR, "kms %s: %s: mmap of the writeback buffer", kms->path,
			kc->base.name);
		job_free(job);
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
 * list, delivered by kms_deliver. */
static void fail_captures(struct wla_kms *kms, struct wla_kms_crtc *kc)
{
	struct wla_capture *cap, *tmp;
	wl_list_for_each_safe(cap, tmp, &kms->captures, link) {
		if (!kc || capture_crtc(cap) == kc) {
			wl_list_remove(&cap->link);
			wl_list_insert(kms->failed_captures.prev, &cap->link);
		}
	}
}

static void deliver_failed(struct wla_kms *kms)
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
		wlr_log(WLR_ERROR, "kms %s: %s: out of memory for a captured image",
			job->kms->path, job->kc->base.name);
	}
	if (job->kms->wb_job == job) {
		job->kms->wb_job = NULL;
	}
	while (!wl_list_empty(&job->captures)) {
		struct wla_capture *cap = wl_container_of(job->captures.next, cap, link);
		wl_list_remove(&cap->link);
		cap->func(cap, image, job->seq, cap->data);
		free(cap);
	}
	wla_image_destroy(image);
	job_free(job);
}

static bool fence_signalled(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	return fd < 0 || (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN));
}

/* Complete the job in flight once its flip happened and its fence
 * signalled (the composed frame is in the buffer). */
static void check_job(struct wla_kms *kms)
{
	struct kms_wb_job *job = kms->wb_job;
	if (job && job->flipped && (job->fenced || fence_signalled(job->fence_fd))) {
		job_complete(job);
	}
}

static void kick_captures(struct wla_kms *kms);

static int handle_fence(int fd, uint32_t mask, void *data)
{
	struct kms_wb_job *job = data;
	struct wla_kms *kms = job->kms;
	wl_event_source_remove(job->fence_source);
	job->fence_source = NULL;
	job->fenced = true;
	check_job(kms);
	kick_captures(kms);
	return 0;
}

/* The job went out with commit serial (programming state, or NULL for a
 * commit of the driver's own): hold what the CRTC shows with it, and wait
 * for its flip and fence. */
static void start_job(struct wla_kms *kms, struct kms_wb_job *job, uint64_t serial,
	struct wla_atomic_state *state)
{
	wlr_log(WLR_DEBUG, "kms %s: %s: writeback into fb %" PRIu32 " with commit %" PRIu64
		", fence fd %d", kms->path, job->kc->base.name, job->fb_id, serial, job->fence_fd);
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
		if (ps && ps->crtc == &job->kc->base && ps->fb && ps->fb->impl->prepare(ps->fb) == 0) {
			job->held[job->n_held++] = wla_fb_get(ps->fb);
		}
	}
	job->serial = serial;
	kms->wb_job = job;
	if (kms->loop && job->fence_fd >= 0) {
		job->fence_source = wl_event_loop_add_fd(kms->loop, job->fence_fd,
			WL_EVENT_READABLE, handle_fence, job);
	}
}

/* Requests */

struct kms_req {
	struct wla_kms *kms;
	drmModeAtomicReq *req;
	int err;
	/* Framebuffers made for a TEST_ONLY only. */
	uint32_t temp_fbs[WLA_MAX_PLANES];
	struct wla_fb *temp_owner[WLA_MAX_PLANES];
	size_t n_temp;
	/* The writeback connector attached (crtc id) or detached (0). */
	bool wb_routes;
	uint32_t wb_crtc;
	/* A writeback job the request carries. */
	struct kms_wb_job *job;
};

static void add_prop(struct kms_req *r, const char *what, uint32_t obj, uint32_t prop,
	uint64_t value)
{
	if (r->err) {
		return;
	}
	if (!prop) {
		wlr_log(WLR_ERROR, "kms %s: object %" PRIu32 " has no %s property", r->kms->path,
			obj, what);
		r->err = -EINVAL;
		return;
	}
	if (drmModeAtomicAddProperty(r->req, obj, prop, value) < 0) {
		r->err = -ENOMEM;
	}
}

/* The writeback connector follows the first CRTC it can serve. */
static void add_writeback_route(struct kms_req *r, struct wla_kms_crtc *kc,
	const struct wla_crtc_state *cs, bool with_wb)
{
	struct wla_kms_writeback *wb = &r->kms->writeback;
	if (!r->kms->has_writeback || !(wb->possible_crtcs & (1u << kc->base.index))) {
		return;
	}
	/* Attached only where the CRTC goes through a modeset anyway: for the
	 * kernel a new connector on a running CRTC is one. */
	bool modeset = cs->active_changed || cs->mode_changed || cs->connectors_changed;
	if (cs->active && modeset && with_wb && wb->usable && wb->routed_crtc == 0 &&
			!r->wb_routes) {
		r->wb_routes = true;
		r->wb_crtc = kc->id;
	} else if (!cs->active && wb->routed_crtc == kc->id) {
		r->wb_routes = true;
		r->wb_crtc = 0;
	} else {
		return;
	}
	add_prop(r, "CRTC_ID", wb->id, wb->prop_crtc_id, r->wb_crtc);
}

/* A capture waiting on kc rides on this request. */
static void add_writeback_job(struct kms_req *r, struct wla_kms_crtc *kc,
	const struct wla_crtc_state *cs)
{
	struct wla_kms *kms = r->kms;
	struct wla_kms_writeback *wb = &kms->writeback;
	if (r->err || r->job || kms->wb_job || !cs->active || wb->routed_crtc != kc->id ||
			!captures_waiting(kms, kc)) {
		return;
	}
	struct kms_wb_job *job = job_create(kms, kc, &cs->mode);
	if (!job) {
		fail_captures(kms, kc);
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
	add_prop(r, "WRITEBACK_FB_ID", wb->id, wb->prop_fb_id, job->fb_id);
	add_prop(r, "WRITEBACK_OUT_FENCE_PTR", wb->id, wb->prop_out_fence,
		(uint64_t)(uintptr_t)&job->fence_fd);
}

static void add_crtc(struct kms_req *r, struct wla_kms_crtc *kc,
	const struct wla_crtc_state *cs, bool with_wb)
{
	uint32_t blob = 0;
	if (cs->enable) {
		blob = mode_blob(r->kms, &cs->mode);
		if (!blob) {
			r->err = r->err ? r->err : -ENOMEM;
			return;
		}
	}
	add_prop(r, "MODE_ID", kc->id, kc->prop_mode_id, blob);
	add_prop(r, "ACTIVE", kc->id, kc->prop_active, cs->active);
	add_writeback_route(r, kc, cs, with_wb);
}

static uint32_t crtc_id_of(struct wla_crtc *crtc)
{
	return crtc ? wla_kms_crtc_from_crtc(crtc)->id : 0;
}

static void add_plane(struct kms_req *r, struct wla_kms_plane *kp,
	const struct wla_plane_state *ps, bool test)
{
	const struct wla_kms_plane_props *p = &kp->props;
	if (!ps->crtc || !ps->fb) {
		add_prop(r, "FB_ID", kp->id, p->fb_id, 0);
		add_prop(r, "CRTC_ID", kp->id, p->crtc_id, 0);
		return;
	}
	uint32_t fb_id = 0;
	struct kms_fb *import = ps->fb->import_dev == &r->kms->dev ? ps->fb->import : NULL;
	if (import) {
		fb_id = import->fb_id;
	} else if (test) {
		int ret = add_fb(r->kms, ps->fb, &fb_id);
		if (ret < 0) {
			r->err = r->err ? r->err : ret;
			return;
		}
		r->temp_owner[r->n_temp] = ps->fb;
		r->temp_fbs[r->n_temp++] = fb_id;
	} else {
		wlr_log(WLR_ERROR, "kms %s: plane %s: fb %p was not prepared", r->kms->path,
			kp->base.name, (void *)ps->fb);
		r->err = -EINVAL;
		return;
	}
	add_prop(r, "FB_ID", kp->id, p->fb_id, fb_id);
	add_prop(r, "CRTC_ID", kp->id, p->crtc_id, crtc_id_of(ps->crtc));
	add_prop(r, "SRC_X", kp->id, p->src_x, ps->src_x);
	add_prop(r, "SRC_Y", kp->id, p->src_y, ps->src_y);
	add_prop(r, "SRC_W", kp->id, p->src_w, ps->src_w);
	add_prop(r, "SRC_H", kp->id, p->src_h, ps->src_h);
	add_prop(r, "CRTC_X", kp->id, p->crtc_x, (uint64_t)(int64_t)ps->crtc_x);
	add_prop(r, "CRTC_Y", kp->id, p->crtc_y, (uint64_t)(int64_t)ps->crtc_y);
	add_prop(r, "CRTC_W", kp->id, p->crtc_w, ps->crtc_w);
	add_prop(r, "CRTC_H", kp->id, p->crtc_h, ps->crtc_h);
}

static bool in_mask(struct wla_crtc *crtc, uint32_t mask)
{
	return crtc && (mask & (1u << crtc->index));
}

/* The CRTCs of mask in the state, with their planes and connectors, into
 * r; test: a TEST_ONLY (unprepared fbs imported for it). */
static void build_request(struct kms_req *r, struct wla_atomic_state *state, uint32_t mask,
	bool test, bool with_wb, bool with_job)
{
	wla_for_each_crtc_in_state(state, e) {
		if (in_mask(e->ptr, mask)) {
			add_crtc(r, wla_kms_crtc_from_crtc(e->ptr), e->new_state, with_wb);
		}
	}
	wla_for_each_connector_in_state(state, e) {
		const struct wla_connector_state *ns = e->new_state;
		if (!in_mask(ns->crtc, mask) && !in_mask(e->old_state->crtc, mask)) {
			continue;
		}
		struct wla_kms_connector *kc = e->ptr->driver_data;
		add_prop(r, "CRTC_ID", kc->id, kc->prop_crtc_id, crtc_id_of(ns->crtc));
	}
	wla_for_each_plane_in_state(state, e) {
		const struct wla_plane_state *ns = e->new_state;
		if (!in_mask(ns->crtc, mask) && !in_mask(e->old_state->crtc, mask)) {
			continue;
		}
		add_plane(r, e->ptr->driver_data, ns, test);
	}
	if (!test && with_job) {
		wla_for_each_crtc_in_state(state, e) {
			if (in_mask(e->ptr, mask) && e->latch) {
				add_writeback_job(r, wla_kms_crtc_from_crtc(e->ptr), e->new_state);
			}
		}
	}
}

static void finish_request(struct kms_req *r)
{
	for (size_t i = 0; i < r->n_temp; i++) {
		remove_fb(r->kms, r->temp_fbs[i]);
	}
	drmModeAtomicFree(r->req);
}

/* "crtc-0 plane-0 plane-3 Virtual-1" into buf: the objects of a state. */
static const char *describe_state(struct wla_atomic_state *state, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
#define APPEND(name) \
	do { \
		int n = snprintf(buf + len, size - len, "%s%s", len ? " " : "", name); \
		if (n > 0 && (size_t)n < size - len) { \
			len += (size_t)n; \
		} \
	} while (0)
	wla_for_each_crtc_in_state(state, e) {
		APPEND(e->ptr->name);
	}
	wla_for_each_plane_in_state(state, e) {
		APPEND(e->ptr->name);
	}
	wla_for_each_connector_in_state(state, e) {
		APPEND(e->ptr->name);
	}
#undef APPEND
	return buf;
}

/* Whether the state changes a mode, turns a CRTC on or off or reroutes a
 * connector (the core's check computed it): KMS needs ALLOW_MODESET. */
static bool needs_modeset(struct wla_atomic_state *state, uint32_t mask)
{
	wla_for_each_crtc_in_state(state, e) {
		const struct wla_crtc_state *cs = e->new_state;
		if (in_mask(e->ptr, mask) &&
				(cs->mode_changed || cs->active_changed || cs->connectors_changed)) {
			return true;
		}
	}
	return false;
}

static uint32_t state_mask(struct wla_atomic_state *state)
{
	uint32_t mask = 0;
	wla_for_each_crtc_in_state(state, e) {
		mask |= 1u << e->ptr->index;
	}
	return mask;
}

/* The framebuffers a passed TEST_ONLY made are kept for the prepare_fb
 * that follows in the same commit (one import per buffer and frame, not
 * two); what no prepare took (a state only tested, or refused after the
 * check) goes at the next check. */
static void clear_stash(struct wla_kms *kms)
{
	for (size_t i = 0; i < kms->n_stash; i++) {
		remove_fb(kms, kms->stash[i].fb_id);
	}
	kms->n_stash = 0;
}

static void stash_temps(struct kms_req *r)
{
	struct wla_kms *kms = r->kms;
	for (size_t i = 0; i < r->n_temp; i++) {
		if (kms->n_stash < WLA_MAX_PLANES) {
			kms->stash[kms->n_stash].fb = r->temp_owner[i];
			kms->stash[kms->n_stash++].fb_id = r->temp_fbs[i];
		} else {
			remove_fb(kms, r->temp_fbs[i]);
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

/*
 * Whether a state only puts other framebuffers, of the same format,
 * modifier and size, on the planes of the configuration it replaces, with
 * the same rectangles: that configuration passed the kernel's check, and a
 * TEST_ONLY of this one would say what that one said. wlroots' DRM backend
 * does not test such page flips either; a change of anything else is tested.
 */
static bool only_fbs_change(struct wla_atomic_state *state, uint32_t mask)
{
	if (needs_modeset(state, mask)) {
		return false;
	}
	wla_for_each_crtc_in_state(state, e) {
		const struct wla_crtc_state *ns = e->new_state, *os = e->old_state;
		if (!ns->active || !os->active || ns->plane_mask != os->plane_mask) {
			return false;
		}
	}
	wla_for_each_plane_in_state(state, e) {
		const struct wla_plane_state *ns = e->new_state, *os = e->old_state;
		if (ns->crtc != os->crtc || ns->src_x != os->src_x || ns->src_y != os->src_y ||
				ns->src_w != os->src_w || ns->src_h != os->src_h ||
				ns->crtc_x != os->crtc_x || ns->crtc_y != os->crtc_y ||
				ns->crtc_w != os->crtc_w || ns->crtc_h != os->crtc_h ||
				!ns->fb != !os->fb) {
			return false;
		}
		if (ns->fb && (ns->fb->format != os->fb->format ||
				ns->fb->modifier != os->fb->modifier || ns->fb->width != os->fb->width ||
				ns->fb->height != os->fb->height)) {
			return false;
		}
	}
	return true;
}

/* TEST_ONLY of the whole state: 0 or -errno, the kernel's refusal logged
 * (log false: quietly). trusted: only_fbs_change said yes, so the request
 * is built (its fbs imported, which can still fail) but not sent, unless
 * it routes the writeback connector. */
static int test_state(struct wla_kms *kms, struct wla_atomic_state *state, bool with_wb,
	bool *wb_routed, bool log, bool trusted)
{
	struct kms_req r = { .kms = kms, .req = drmModeAtomicAlloc() };
	if (!r.req) {
		wlr_log(WLR_ERROR, "kms %s: out of memory for a request", kms->path);
		return -ENOMEM;
	}
	uint32_t mask = state_mask(state);
	build_request(&r, state, mask, true, with_wb, false);
	*wb_routed = r.wb_routes && r.wb_crtc;
	int ret = r.err;
	if (ret == 0 && trusted && !*wb_routed) {
		kms->tests_skipped++;
	} else if (ret == 0) {
		bool modeset = state->allow_modeset && needs_modeset(state, mask);
		uint32_t flags = DRM_MODE_ATOMIC_TEST_ONLY |
			(modeset ? DRM_MODE_ATOMIC_ALLOW_MODESET : 0);
		kms->test_commits++;
		if (drmModeAtomicCommit(kms->fd, r.req, flags, NULL) != 0) {
			ret = -errno;
			char objs[256];
			/* A frame the card cannot scan out is composited by the
			 * compositor instead: not an error worth a line per frame. */
			if (log) {
				wlr_log(modeset ? WLR_ERROR : WLR_DEBUG, "kms %s: the kernel refused "
					"the state (TEST_ONLY%s) of %s: %s (errno %d)", kms->path,
					modeset ? ", ALLOW_MODESET" : "",
					describe_state(state, objs, sizeof(objs)), strerror(-ret), -ret);
			}
		}
	}
	if (ret == 0) {
		stash_temps(&r);
	}
	finish_request(&r);
	return ret;
}

static int kms_atomic_check(struct wla_device *dev, struct wla_atomic_state *state)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	if (kms->lost) {
		/* Turning off still works (there is nothing left to stop). */
		bool lights = false;
		wla_for_each_crtc_in_state(state, e) {
			lights |= e->new_state->active;
		}
		if (!lights) {
			return 0;
		}
		char objs[256];
		wlr_log(state->quiet ? WLR_DEBUG : WLR_ERROR, "kms %s: the device is gone; the "
			"state of %s is refused", kms->path, describe_state(state, objs, sizeof(objs)));
		return -ENODEV;
	}
	clear_stash(kms);
	bool wb_routed = false;
	int ret = test_state(kms, state, true, &wb_routed, !kms->writeback.usable,
		only_fbs_change(state, state_mask(state)));
	if (ret < 0 && ret != -ENOMEM && wb_routed) {
		/* Whether it is the writeback connector the kernel refused:
		 * then the outputs go on without capture. */
		bool again;
		ret = test_state(kms, state, false, &again, true, false);
		if (ret == 0) {
			kms->writeback.usable = false;
			wlr_log(WLR_ERROR, "kms %s: the kernel refuses to attach writeback connector "
				"%" PRIu32 ": capture is off", kms->path, kms->writeback.id);
		}
	} else if (ret < 0 && kms->writeback.usable) {
		char objs[256];
		bool modeset = state->allow_modeset && needs_modeset(state, state_mask(state));
		wlr_log(modeset && !state->quiet ? WLR_ERROR : WLR_DEBUG, "kms %s: the kernel "
			"refused the state (TEST_ONLY%s) of %s: %s (errno %d)", kms->path,
			modeset ? ", ALLOW_MODESET" : "", describe_state(state, objs, sizeof(objs)),
			strerror(-ret), -ret);
	}
	if (ret == -ENODEV) {
		mark_lost(kms, ret);
	}
	return ret;
}

/* Program the CRTCs of mask in the state: one commit. */
static int program(struct wla_kms *kms, struct wla_atomic_state *state, uint32_t mask)
{
	bool turns_off = false, latches = false;
	wla_for_each_crtc_in_state(state, e) {
		if (!in_mask(e->ptr, mask)) {
			continue;
		}
		if (!e->new_state->active) {
			turns_off = true;
		} else if (e->latch) {
			latches = true;
		}
	}
	if (kms->lost) {
		/* Nothing to stop: the device is gone. Turning off never fails. */
		return latches ? -ENODEV : 0;
	}
	bool modeset = needs_modeset(state, mask) || turns_off;
	struct kms_req r;
	int ret;
	uint64_t serial;
	for (int attempt = 0;; attempt++) {
		r = (struct kms_req){ .kms = kms, .req = drmModeAtomicAlloc() };
		if (!r.req) {
			wlr_log(WLR_ERROR, "kms %s: out of memory for a request", kms->path);
			return -ENOMEM;
		}
		build_request(&r, state, mask, false, true, attempt == 0);
		ret = r.err;
		serial = ++kms->serial;
		if (ret == 0) {
			/* A modeset is blocking, as in wlroots' DRM backend: the
			 * kernel may pull other CRTCs in, whose flips in flight
			 * would make a NONBLOCK one fail with EBUSY. A CRTC turned
			 * off stops before this returns. */
			uint32_t flags = (latches ? DRM_MODE_PAGE_FLIP_EVENT : 0) |
				(modeset ? 0 : DRM_MODE_ATOMIC_NONBLOCK) |
				(modeset || r.wb_routes ? DRM_MODE_ATOMIC_ALLOW_MODESET : 0);
			/* A refusal injected by a test takes the same path as the
			 * kernel's. */
			int injected = latches ? kms->fail_commit : 0;
			kms->fail_commit = injected ? 0 : kms->fail_commit;
			if (injected) {
				errno = injected;
			}
			if (injected || drmModeAtomicCommit(kms->fd, r.req, flags,
					(void *)(uintptr_t)serial) != 0) {
				ret = -errno;
				char objs[256];
				wlr_log(WLR_ERROR, "kms %s: the kernel refused the commit of %s%s: %s "
					"(errno %d%s)", kms->path, describe_state(state, objs,
					sizeof(objs)), r.job ? " with a writeback job" : "",
					strerror(-ret), -ret, injected ? ", injected" : "");
				kms->refused++;
			}
		}
		if (ret < 0 && r.job) {
			/* The capture fails, not the frame: again without it. */
			wl_list_insert_list(&kms->failed_captures, &r.job->captures);
			wl_list_init(&r.job->captures);
			job_free(r.job);
			r.job = NULL;
			if (ret != -ENODEV && attempt == 0) {
				finish_request(&r);
				continue;
			}
		}
		break;
	}
	struct kms_wb_job *job = r.job;
	bool wb_routes = r.wb_routes;
	uint32_t wb_crtc = r.wb_crtc;
	finish_request(&r);
	if (ret == -ENODEV) {
		/* The core turns this state's CRTCs off when it hears the
		 * error; the others go off once it is done (never from in
		 * here: the core is in the middle of its books). */
		mark_lost(kms, ret);
	}
	if (ret < 0) {
		return ret;
	}
	kms->commits++;
	if (wb_routes) {
		kms->writeback.routed_crtc = wb_crtc;
	}
	if (job) {
		start_job(kms, job, serial, state);
	}
	uint64_t now = now_ns();
	wla_for_each_crtc_in_state(state, e) {
		if (!in_mask(e->ptr, mask)) {
			continue;
		}
		struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(e->ptr);
		const struct wla_crtc_state *cs = e->new_state;
		if (!cs->active) {
			if (kc->active) {
				wlr_log(WLR_INFO, "kms %s: %s: disabled", kms->path, kc->base.name);
			}
			/* An event still to come for it names a state the core
			 * completes now: dropped. So is a state it deferred. */
			kc->armed_serial = 0;
			kc->deferred = NULL;
			kc->active = false;
			kc->have_vblank = false;
			fail_captures(kms, kc);
			continue;
		}
		if (!kc->active || !wla_mode_equal(&kc->mode, &cs->mode)) {
			char buf[128];
			wlr_log(WLR_INFO, "kms %s: %s: %s %s", kms->path, kc->base.name,
				kc->active ? "mode set to" : "enabled",
				wla_mode_describe(&cs->mode, buf, sizeof(buf)));
			kc->mode = cs->mode;
			kc->period_ns = wla_mode_period_ns(&cs->mode);
			kc->counters.refresh_ns = kc->period_ns;
			if (!kc->active) {
				kc->have_vblank = false;
			}
			kc->active = true;
		}
		if (e->latch) {
			kc->armed_serial = serial;
			kc->armed_ns = now;
			/* A modeset latches when the CRTC is up again: its frame
			 * cannot miss a vblank. */
			kc->armed_frame = e->frame && !cs->mode_changed && !cs->active_changed;
		}
	}
	return 0;
}

static int kms_commit_tail(struct wla_device *dev, struct wla_atomic_state *state)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	uint32_t mask = 0;
	bool turns_off = false;
	struct wla_kms_crtc *busy = NULL;
	wla_for_each_crtc_in_state(state, e) {
		if (!e->program) {
			continue;
		}
		mask |= 1u << e->ptr->index;
		struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(e->ptr);
		turns_off |= !e->new_state->active;
		if (kc->own_serial) {
			busy = kc;
		}
	}
	if (busy && !turns_off && !kms->lost) {
		/* A writeback commit of the driver's own is in flight there:
		 * the kernel takes this one when it completed. */
		busy->deferred = state;
		busy->deferred_mask = mask;
		return 0;
	}
	return program(kms, state, mask);
}

/* A commit of the driver's own carrying kc's waiting captures. */
static int own_writeback_commit(struct wla_kms *kms, struct wla_kms_crtc *kc)
{
	struct kms_req r = { .kms = kms, .req = drmModeAtomicAlloc() };
	if (!r.req) {
		return -ENOMEM;
	}
	struct wla_crtc_state *cs = kc->base.state;
	add_writeback_job(&r, kc, cs);
	int ret = r.err ? r.err : r.job ? 0 : -ENOMEM;
	uint64_t serial = ++kms->serial;
	if (ret == 0 && drmModeAtomicCommit(kms->fd, r.req, DRM_MODE_ATOMIC_NONBLOCK |
			DRM_MODE_PAGE_FLIP_EVENT, (void *)(uintptr_t)serial) != 0) {
		ret = -errno;
		wlr_log(WLR_ERROR, "kms %s: %s: the kernel refused the writeback commit: %s "
			"(errno %d)", kms->path, kc->base.name, strerror(-ret), -ret);
	}
	struct kms_wb_job *job = r.job;
	finish_request(&r);
	if (ret < 0) {
		if (job) {
			wl_list_insert_list(&kms->failed_captures, &job->captures);
			job_free(job);
		}
		return ret;
	}
	kc->own_serial = serial;
	start_job(kms, job, serial, NULL);
	return 0;
}

/* Events */

/* The device whose events drmHandleEvent is dispatching (one thread). */
static struct wla_kms *dispatching;

static struct wla_kms_crtc *find_crtc(struct wla_kms *kms, uint32_t id)
{
	for (size_t i = 0; i < kms->n_crtcs; i++) {
		if (kms->crtcs[i].id == id) {
			return &kms->crtcs[i];
		}
	}
	return NULL;
}

/* The driver's own commit on kc completed: what waited for it goes. */
static void own_commit_done(struct wla_kms *kms, struct wla_kms_crtc *kc)
{
	kc->own_serial = 0;
	struct wla_atomic_state *state = kc->deferred;
	if (!state) {
		return;
	}
	kc->deferred = NULL;
	if (program(kms, state, kc->deferred_mask) < 0) {
		/* The core was told it was programmed: take it back the only
		 * way there is, the CRTC off (its frames reported failed). */
		wla_crtc_force_off(&kc->base);
	}
}

static void handle_page_flip(int fd, unsigned seq, unsigned tv_sec, unsigned tv_usec,
	unsigned crtc_id, void *user_data)
{
	struct wla_kms *kms = dispatching;
	struct wla_kms_crtc *kc = kms ? find_crtc(kms, crtc_id) : NULL;
	uint64_t serial = (uint64_t)(uintptr_t)user_data;
	struct kms_wb_job *job = kms ? kms->wb_job : NULL;
	if (job && job->serial == serial && job->kc == kc) {
		wlr_log(WLR_DEBUG, "kms %s: %s: the writeback commit %" PRIu64 " latched at %u",
			kms->path, kc->base.name, serial, seq);
		job->seq = seq;
		job->flipped = true;
		schedule_idle(kms);
	}
	if (kc && kc->own_serial && kc->own_serial == serial) {
		own_commit_done(kms, kc);
		return;
	}
	if (!kc || kc->armed_serial == 0 || kc->armed_serial != serial) {
		wlr_log(WLR_DEBUG, "kms %s: page-flip event of crtc %u (commit %" PRIu64
			") for nothing armed: dropped", kms ? kms->path : "?", crtc_id, serial);
		return;
	}
	kc->armed_serial = 0;
	uint64_t when_ns = (uint64_t)tv_sec * 1000000000u + (uint64_t)tv_usec * 1000u;
	struct wla_vblank_counters *c = &kc->counters;
	if (!kc->have_vblank) {
		/* The vblank that latched the enable is the CRTC's first. */
		kc->first_seq = seq - 1;
		kc->have_vblank = true;
		wlr_log(WLR_DEBUG, "kms %s: %s: first page-flip event after enable, seq %u",
			kms->path, kc->base.name, seq);
	}
	if (kc->armed_frame && kc->period_ns && when_ns > kc->armed_ns) {
		/* Armed with nothing ahead, it was due at the first vblank
		 * after it reached the kernel. */
		c->missed += (when_ns - kc->armed_ns) / kc->period_ns;
	}
	kc->last_vblank_ns = when_ns;
	kc->last_vblank_seq = seq;
	c->seq = seq;
	c->vblanks = seq - kc->first_seq;
	c->latched++;
	struct timespec when = {
		.tv_sec = tv_sec,
		.tv_nsec = (long)tv_usec * 1000,
	};
	uint32_t flags = WLA_PRESENT_VSYNC | WLA_PRESENT_HW_COMPLETION |
		(kms->monotonic ? WLA_PRESENT_HW_CLOCK : 0) |
		/* The card scanned the committed buffers out themselves. */
		WLA_PRESENT_ZERO_COPY;
	wla_crtc_handle_latch(&kc->base, seq, &when, kc->period_ns, flags);
}

/* Read the waiting events; false if the device failed. */
static int read_events(struct wla_kms *kms)
{
	drmEventContext ctx = {
		.version = 3,
		.page_flip_handler2 = handle_page_flip,
	};
	struct wla_kms *outer = dispatching;
	dispatching = kms;
	int ret = drmHandleEvent(kms->fd, &ctx);
	dispatching = outer;
	return ret == 0 ? 0 : -(errno ? errno : EIO);
}

static int wait_readable(struct wla_kms *kms, int timeout_ms)
{
	struct pollfd pfd = { .fd = kms->fd, .events = POLLIN };
	int n = poll(&pfd, 1, timeout_ms);
	if (n < 0) {
		return -errno;
	}
	if (n > 0 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))) {
		return -ENODEV;
	}
	return n > 0 && (pfd.revents & POLLIN);
}

int wla_kms_dispatch(struct wla_kms *kms, int timeout_ms)
{
	int n = 0, ret = 0;
	while (!kms->lost) {
		int ready = wait_readable(kms, n == 0 ? timeout_ms : 0);
		if (ready < 0) {
			mark_lost(kms, ready);
			ret = ready;
			break;
		}
		if (!ready) {
			break;
		}
		int err = read_events(kms);
		if (err < 0) {
			mark_lost(kms, err);
			ret = err;
			break;
		}
		n++;
	}
	wla_device_deliver_events(&kms->dev);
	run_deferred(kms);
	return ret < 0 ? ret : n;
}

static int handle_fd(int fd, uint32_t mask, void *data)
{
	struct wla_kms *kms = data;
	if (mask & (WL_EVENT_HANGUP | WL_EVENT_ERROR)) {
		wla_kms_device_lost(kms, -ENODEV);
		return 0;
	}
	wla_kms_dispatch(kms, 0);
	return 0;
}

static void kms_sync(struct wla_device *dev)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	if (kms->lost) {
		return;
	}
	/* Latches already on the fd are reported; events are delivered by
	 * the core afterwards. */
	while (wait_readable(kms, 0) > 0 && read_events(kms) == 0) {
	}
}

static void kms_deliver(struct wla_device *dev)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	deliver_failed(kms);
	/* Latches read by sync(), a lost device: finished from the loop. */
	schedule_idle(kms);
}

/* Work that must not run inside the core's processing (commit_tail, sync,
 * check) runs at the end of a dispatch, or from an idle source. */
static void handle_idle(void *data)
{
	struct wla_kms *kms = data;
	kms->idle = NULL;
	run_deferred(kms);
}

static void schedule_idle(struct wla_kms *kms)
{
	if (kms->loop && !kms->idle) {
		kms->idle = wl_event_loop_add_idle(kms->loop, handle_idle, kms);
	}
}

/* The device answered ENODEV: no more ioctls, one error line; the CRTCs go
 * off at the next deferred run. */
static void mark_lost(struct wla_kms *kms, int err)
{
	if (kms->lost) {
		return;
	}
	kms->lost = true;
	kms->lost_pending = true;
	wlr_log(WLR_ERROR, "kms %s: the device is gone (%s): its outputs are off", kms->path,
		strerror(err < 0 ? -err : err));
	if (kms->fd_source) {
		wl_event_source_remove(kms->fd_source);
		kms->fd_source = NULL;
	}
	schedule_idle(kms);
}

static void finish_lost(struct wla_kms *kms)
{
	kms->lost_pending = false;
	fail_captures(kms, NULL);
	if (kms->wb_job) {
		wl_list_insert_list(&kms->failed_captures, &kms->wb_job->captures);
		wl_list_init(&kms->wb_job->captures);
		job_free(kms->wb_job);
	}
	for (size_t i = 0; i < kms->n_crtcs; i++) {
		struct wla_kms_crtc *kc = &kms->crtcs[i];
		kc->armed_serial = 0;
		kc->own_serial = 0;
		kc->deferred = NULL;
		/* Enabled but off by DPMS too: its connector and planes go. */
		if (kc->base.state->enable || kc->base.state->active ||
				!wl_list_empty(&kc->base.queue)) {
			wla_crtc_force_off(&kc->base);
		}
	}
}

void wla_kms_device_lost(struct wla_kms *kms, int err)
{
	if (kms->lost && !kms->lost_pending) {
		return;
	}
	mark_lost(kms, err);
	finish_lost(kms);
	deliver_failed(kms);
}

/* Captures waiting on a CRTC that nothing will commit to soon go out on a
 * commit of the driver's own. */
static void kick_captures(struct wla_kms *kms)
{
	for (size_t i = 0; i < kms->n_crtcs && !kms->lost; i++) {
		struct wla_kms_crtc *kc = &kms->crtcs[i];
		if (kms->wb_job || !captures_waiting(kms, kc)) {
			continue;
		}
		if (!kc->active) {
			fail_captures(kms, kc);
		} else if (kc->base.queued == 0 && !kc->armed_serial && !kc->own_serial &&
				own_writeback_commit(kms, kc) < 0) {
			fail_captures(kms, kc);
		}
	}
	deliver_failed(kms);
}

static void run_deferred(struct wla_kms *kms)
{
	if (kms->lost_pending) {
		finish_lost(kms);
	}
	deliver_failed(kms);
	check_job(kms);
	kick_captures(kms);
}

/* The driver interface, for the glue */

static uint64_t kms_now(struct wla_device *dev)
{
	return now_ns();
}

static bool kms_custom_mode(struct wla_device *dev, int32_t width, int32_t height,
	int32_t refresh_mhz, struct wla_mode *mode)
{
	/* As a monitor would be given it: a CVT timing (the kernel checks it
	 * with TEST_ONLY). */
	return wla_mode_cvt(mode, width, height, refresh_mhz, false);
}

static uint32_t kms_buffer_caps(struct wla_device *dev)
{
	return WLA_BUFFER_CAP_DMABUF;
}

static int kms_drm_fd(struct wla_device *dev)
{
	return wla_kms_from_device(dev)->fd;
}

/* The last vblank of an active CRTC, from its events or the kernel. */
static bool last_vblank(struct wla_kms *kms, struct wla_kms_crtc *kc, uint64_t *seq,
	uint64_t *ns)
{
	if (!kc->active) {
		return false;
	}
	uint64_t kns = 0, kseq = 0;
	if (drmCrtcGetSequence(kms->fd, kc->id, &kseq, &kns) == 0 && kns > 0) {
		*seq = kseq;
		*ns = kns;
		return true;
	}
	if (kc->have_vblank) {
		*seq = kc->last_vblank_seq;
		*ns = kc->last_vblank_ns;
		return true;
	}
	return false;
}

/* The first vblank at or after t after the last one seen (its page-flip
 * event or the kernel's counter), a period apart on the current timing. */
static bool kms_vblank_at(struct wla_device *dev, struct wla_crtc *crtc, uint64_t t,
	uint64_t *seq, uint64_t *vblank_ns)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(crtc);
	uint64_t last_seq, last;
	if (!kc->period_ns || !last_vblank(kms, kc, &last_seq, &last)) {
		return false;
	}
	uint64_t j = 1;
	if (t > last + kc->period_ns) {
		j = (t - last + kc->period_ns - 1) / kc->period_ns;
	}
	*seq = last_seq + j;
	*vblank_ns = last + j * kc->period_ns;
	return true;
}

static bool kms_vblank_counters(struct wla_device *dev, struct wla_crtc *crtc,
	struct wla_vblank_counters *counters)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(crtc);
	uint64_t seq, ns;
	if (kc->have_vblank && last_vblank(kms, kc, &seq, &ns) && seq >= kc->first_seq) {
		kc->counters.seq = seq;
		kc->counters.vblanks = seq - kc->first_seq;
	}
	*counters = kc->counters;
	return true;
}

static struct wla_capture *kms_capture(struct wla_device *dev, struct wla_crtc *crtc,
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
	} else if (kms->writeback.routed_crtc != kc->id) {
		why = "the card's writeback connector serves another crtc";
	}
	if (why) {
		wlr_log(WLR_ERROR, "kms %s: %s: capture refused: %s (driver %s)", kms->path,
			crtc->name, why, kms->driver_name);
		return NULL;
	}
	struct wla_capture *cap = calloc(1, sizeof(*cap));
	if (!cap) {
		wlr_log(WLR_ERROR, "kms %s: %s: out of memory for a capture", kms->path, crtc->name);
		return NULL;
	}
	cap->dev = dev;
	cap->func = func;
	cap->data = data;
	cap->driver_data = kc;
	wl_list_insert(kms->captures.prev, &cap->link);
	/* Nothing will be committed there soon: a commit of our own, now or
	 * once the CRTC is free (kick_captures). */
	bool own = crtc->queued == 0 && !kc->armed_serial && !kc->own_serial && !kms->wb_job;
	if (!own) {
		schedule_idle(kms);
	}
	wlr_log(WLR_DEBUG, "kms %s: %s: capture %p %s", kms->path, crtc->name, (void *)cap,
		own ? "goes out now" : "waits for the next commit");
	if (own && own_writeback_commit(kms, kc) < 0) {
		wl_list_remove(&cap->link);
		free(cap);
		return NULL;
	}
	return cap;
}

static void kms_capture_cancel(struct wla_device *dev, struct wla_capture *capture)
{
	if (!capture) {
		return;
	}
	/* Waiting, in a job or failed: off its list either way (a job in
	 * flight still writes its buffer, for nobody). */
	wl_list_remove(&capture->link);
	free(capture);
}

static void kms_destroy_device(struct wla_device *dev)
{
	wla_kms_destroy(wla_kms_from_device(dev));
}

static const struct wla_driver_funcs kms_funcs = {
	.atomic_check = kms_atomic_check,
	.prepare_fb = kms_prepare_fb,
	.cleanup_fb = kms_cleanup_fb,
	.commit_tail = kms_commit_tail,
	.sync = kms_sync,
	.deliver = kms_deliver,
	.now = kms_now,
	.custom_mode = kms_custom_mode,
	.buffer_caps = kms_buffer_caps,
	.drm_fd = kms_drm_fd,
	.vblank_at = kms_vblank_at,
	.vblank_counters = kms_vblank_counters,
	.capture = kms_capture,
	.capture_cancel = kms_capture_cancel,
	.destroy = kms_destroy_device,
};

/* Enumeration */

static bool add_plane_formats(struct wla_kms *kms, struct wla_kms_plane *kp,
	const drmModePlane *plane, uint64_t in_formats_blob)
{
	static const uint64_t implicit = DRM_FORMAT_MOD_INVALID;
	/* Every format with the implicit modifier (AddFB2 without
	 * modifiers), then what IN_FORMATS lists. */
	for (uint32_t i = 0; i < plane->count_formats; i++) {
		if (!wla_plane_add_format(&kp->base, plane->formats[i], &implicit, 1)) {
			return false;
		}
	}
	if (!in_formats_blob) {
		return true;
	}
	drmModePropertyBlobRes *blob = drmModeGetPropertyBlob(kms->fd, (uint32_t)in_formats_blob);
	if (!blob) {
		wlr_log_errno(WLR_INFO, "kms %s: plane %" PRIu32 ": IN_FORMATS blob", kms->path,
			kp->id);
		return true;
	}
	drmModeFormatModifierIterator iter = { 0 };
	bool ok = true;
	while (ok && drmModeFormatModifierBlobIterNext(blob, &iter)) {
		if (iter.mod != DRM_FORMAT_MOD_INVALID) {
			ok = wla_plane_add_format(&kp->base, iter.fmt, &iter.mod, 1);
		}
	}
	drmModeFreePropertyBlob(blob);
	return ok;
}

static bool init_plane(struct wla_kms *kms, uint32_t plane_id, unsigned order)
{
	drmModePlane *plane = drmModeGetPlane(kms->fd, plane_id);
	if (!plane) {
		wlr_log_errno(WLR_ERROR, "kms %s: drmModeGetPlane %" PRIu32, kms->path, plane_id);
		return false;
	}
	struct wla_kms_plane *kp = &kms->planes[kms->n_planes];
	memset(kp, 0, sizeof(*kp));
	kp->id = plane_id;
	struct wla_kms_plane_props *p = &kp->props;
	uint64_t type = DRM_PLANE_TYPE_OVERLAY, in_formats = 0, zpos = 0;
	struct prop_want want[] = {
		{ "type", &p->type, &type },
		{ "FB_ID", &p->fb_id, NULL },
		{ "CRTC_ID", &p->crtc_id, NULL },
		{ "SRC_X", &p->src_x, NULL },
		{ "SRC_Y", &p->src_y, NULL },
		{ "SRC_W", &p->src_w, NULL },
		{ "SRC_H", &p->src_h, NULL },
		{ "CRTC_X", &p->crtc_x, NULL },
		{ "CRTC_Y", &p->crtc_y, NULL },
		{ "CRTC_W", &p->crtc_w, NULL },
		{ "CRTC_H", &p->crtc_h, NULL },
		{ "IN_FORMATS", &p->in_formats, &in_formats },
		{ "zpos", &p->zpos, &zpos },
	};
	bool ok = get_props(kms->fd, plane_id, DRM_MODE_OBJECT_PLANE, want,
		WLA_ARRAY_SIZE(want));
	struct wla_plane *base = &kp->base;
	base->type = type == DRM_PLANE_TYPE_PRIMARY ? WLA_PLANE_PRIMARY :
		type == DRM_PLANE_TYPE_CURSOR ? WLA_PLANE_CURSOR : WLA_PLANE_OVERLAY;
	uint32_t crtc_mask = kms->n_crtcs >= 32 ? UINT32_MAX : (1u << kms->n_crtcs) - 1;
	base->possible_crtcs = plane->possible_crtcs & crtc_mask;
	/* Without zpos: the primary at the bottom, the cursor on top. */
	base->zpos = p->zpos ? (unsigned)zpos : base->type == WLA_PLANE_PRIMARY ? 0 :
		base->type == WLA_PLANE_CURSOR ? WLA_MAX_PLANES : order + 1;
	/* The kernel says what it scales with TEST_ONLY. */
	base->min_scale = 1;
	base->max_scale = UINT32_MAX;
	if (base->type == WLA_PLANE_CURSOR) {
		base->max_fb_width = kms->cursor_width;
		base->max_fb_height = kms->cursor_height;
	}
	base->driver_data = kp;
	snprintf(base->name, sizeof(base->name), "plane-%" PRIu32, plane_id);
	ok = ok && add_plane_formats(kms, kp, plane, in_formats);
	drmModeFreePlane(plane);
	if (!ok || !wla_device_add_plane(&kms->dev, base)) {
		wlr_log(WLR_ERROR, "kms %s: cannot describe plane %" PRIu32, kms->path, plane_id);
		return false;
	}
	kms->n_planes++;
	return true;
}

static bool init_crtcs(struct wla_kms *kms, const drmModeRes *res)
{
	for (int i = 0; i < res->count_crtcs && kms->n_crtcs < WLA_MAX_CRTCS; i++) {
		struct wla_kms_crtc *kc = &kms->crtcs[kms->n_crtcs];
		kc->kms = kms;
		kc->id = res->crtcs[i];
		kc->pipe = (unsigned)i;
		struct prop_want want[] = {
			{ "ACTIVE", &kc->prop_active, NULL },
			{ "MODE_ID", &kc->prop_mode_id, NULL },
		};
		if (!get_props(kms->fd, kc->id, DRM_MODE_OBJECT_CRTC, want, WLA_ARRAY_SIZE(want)) ||
				!kc->prop_active || !kc->prop_mode_id) {
			wlr_log(WLR_ERROR, "kms %s: crtc %" PRIu32 " has no ACTIVE or MODE_ID",
				kms->path, kc->id);
			return false;
		}
		snprintf(kc->base.name, sizeof(kc->base.name), "crtc-%" PRIu32, kc->id);
		kc->base.max_slots = 1; /* one flip in flight per CRTC */
		kc->base.rearm = false; /* a flip in flight is final */
		kc->base.driver_data = kc;
		if (!wla_device_add_crtc(&kms->dev, &kc->base)) {
			return false;
		}
		kms->n_crtcs++;
	}
	if (res->count_crtcs > WLA_MAX_CRTCS) {
		wlr_log(WLR_INFO, "kms %s: %d crtcs, only the first %d are used", kms->path,
			res->count_crtcs, WLA_MAX_CRTCS);
	}
	return true;
}

static bool init_planes(struct wla_kms *kms)
{
	drmModePlaneRes *res = drmModeGetPlaneResources(kms->fd);
	if (!res) {
		wlr_log_errno(WLR_ERROR, "kms %s: drmModeGetPlaneResources", kms->path);
		return false;
	}
	bool ok = true;
	for (uint32_t i = 0; ok && i < res->count_planes && kms->n_planes < WLA_MAX_PLANES; i++) {
		ok = init_plane(kms, res->planes[i], i);
	}
	if (res->count_planes > WLA_MAX_PLANES) {
		wlr_log(WLR_INFO, "kms %s: %" PRIu32 " planes, only the first %d are used",
			kms->path, res->count_planes, WLA_MAX_PLANES);
	}
	drmModeFreePlaneResources(res);
	if (!ok) {
		return false;
	}
	/* Each CRTC its own primary and cursor plane, the first free one
	 * that can go there. */
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_crtc *crtc = &kms->crtcs[c].base;
		for (size_t i = 0; i < kms->n_planes; i++) {
			struct wla_plane *p = &kms->planes[i].base;
			if (!(p->possible_crtcs & (1u << crtc->index))) {
				continue;
			}
			bool taken = false;
			for (size_t o = 0; o < c; o++) {
				taken |= kms->crtcs[o].base.primary == p || kms->crtcs[o].base.cursor == p;
			}
			if (taken) {
				continue;
			}
			if (p->type == WLA_PLANE_PRIMARY && !crtc->primary) {
				crtc->primary = p;
			} else if (p->type == WLA_PLANE_CURSOR && !crtc->cursor) {
				crtc->cursor = p;
			}
		}
	}
	return true;
}

static uint32_t connector_crtcs(struct wla_kms *kms, const drmModeConnector *conn)
{
	uint32_t mask = 0;
	for (int i = 0; i < conn->count_encoders; i++) {
		drmModeEncoder *enc = drmModeGetEncoder(kms->fd, conn->encoders[i]);
		if (enc) {
			mask |= enc->possible_crtcs;
			drmModeFreeEncoder(enc);
		}
	}
	uint32_t crtc_mask = kms->n_crtcs >= 32 ? UINT32_MAX : (1u << kms->n_crtcs) - 1;
	return mask & crtc_mask;
}

/* The connector's modes, the kernel's preferred one first. */
static bool update_modes(struct wla_kms *kms, struct wla_kms_connector *kc,
	const drmModeConnector *conn)
{
	struct wla_mode *modes = calloc((size_t)conn->count_modes + 1, sizeof(*modes));
	if (!modes) {
		return false;
	}
	size_t n = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < conn->count_modes; i++) {
			const drmModeModeInfo *info = &conn->modes[i];
			bool preferred = (info->type & DRM_MODE_TYPE_PREFERRED) != 0;
			if (preferred != (pass == 0)) {
				continue;
			}
			if (mode_from_drm(info, &modes[n])) {
				modes[n].preferred = n == 0 && preferred;
				n++;
			} else {
				wlr_log(WLR_DEBUG, "kms %s: %s: mode %s skipped (interlaced, "
					"doublescan or an inconsistent timing)", kms->path,
					kc->base.name, info->name);
			}
		}
	}
	bool ok = wla_connector_set_modes(&kc->base, modes, n);
	free(modes);
	return ok;
}

static struct wla_kms_connector *find_connector(struct wla_kms *kms, uint32_t id)
{
	for (size_t i = 0; i < kms->n_connectors; i++) {
		if (kms->connectors[i]->id == id) {
			return kms->connectors[i];
		}
	}
	return NULL;
}

static void init_writeback(struct wla_kms *kms, const drmModeConnector *conn)
{
	if (kms->has_writeback) {
		return;
	}
	struct wla_kms_writeback *wb = &kms->writeback;
	wb->id = conn->connector_id;
	wb->possible_crtcs = connector_crtcs(kms, conn);
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
	if (get_props(kms->fd, wb->id, DRM_MODE_OBJECT_CONNECTOR, want, WLA_ARRAY_SIZE(want)) &&
			wb->prop_crtc_id && wb->prop_fb_id && wb->prop_out_fence) {
		kms->has_writeback = true;
		/* Captures are written as XRGB8888: the connector must take it. */
		get_props(kms->fd, wb->id, DRM_MODE_OBJECT_CONNECTOR, fmt_want, 1);
		drmModePropertyBlobRes *blob = formats_blob ?
			drmModeGetPropertyBlob(kms->fd, (uint32_t)formats_blob) : NULL;
		const uint32_t *formats = blob ? blob->data : NULL;
		for (size_t i = 0; blob && i < blob->length / sizeof(uint32_t); i++) {
			wb->usable |= formats[i] == DRM_FORMAT_XRGB8888;
		}
		drmModeFreePropertyBlob(blob);
		if (!wb->usable) {
			wlr_log(WLR_INFO, "kms %s: writeback connector %" PRIu32 " does not write "
				"XRGB8888: capture is off", kms->path, wb->id);
		}
	}
}

/* A new connector of the card; NULL (logged) if it cannot be had. */
static struct wla_kms_connector *add_connector(struct wla_kms *kms,
	const drmModeConnector *conn)
{
	if (kms->n_connectors == WLA_MAX_CONNECTORS) {
		wlr_log(WLR_INFO, "kms %s: connector %" PRIu32 " ignored: at most %d", kms->path,
			conn->connector_id, WLA_MAX_CONNECTORS);
		return NULL;
	}
	struct wla_kms_connector *kc = calloc(1, sizeof(*kc));
	if (!kc) {
		wlr_log(WLR_ERROR, "kms %s: out of memory for a connector", kms->path);
		return NULL;
	}
	kc->kms = kms;
	kc->id = conn->connector_id;
	const char *type = drmModeGetConnectorTypeName(conn->connector_type);
	snprintf(kc->base.name, sizeof(kc->base.name), "%s-%" PRIu32, type ? type : "Unknown",
		conn->connector_type_id);
	struct prop_want want[] = {
		{ "CRTC_ID", &kc->prop_crtc_id, NULL },
	};
	if (!get_props(kms->fd, kc->id, DRM_MODE_OBJECT_CONNECTOR, want, 1) || !kc->prop_crtc_id) {
		wlr_log(WLR_ERROR, "kms %s: connector %s has no CRTC_ID", kms->path, kc->base.name);
		free(kc);
		return NULL;
	}
	kc->base.driver_data = kc;
	kc->base.possible_crtcs = connector_crtcs(kms, conn);
	kc->base.status = WLA_CONNECTOR_DISCONNECTED;
	if (!wla_device_add_connector(&kms->dev, &kc->base)) {
		free(kc);
		return NULL;
	}
	kc->added = true;
	kms->connectors[kms->n_connectors++] = kc;
	return kc;
}

/* Read one connector's status, size and modes into kc. */
static void read_connector(struct wla_kms *kms, struct wla_kms_connector *kc,
	const drmModeConnector *conn, int status_override)
{
	bool connected = status_override >= 0 ? status_override != 0 :
		conn->connection == DRM_MODE_CONNECTED;
	kc->base.status = connected ? WLA_CONNECTOR_CONNECTED : WLA_CONNECTOR_DISCONNECTED;
	kc->base.phys_width_mm = conn->mmWidth;
	kc->base.phys_height_mm = conn->mmHeight;
	if (!update_modes(kms, kc, conn)) {
		wlr_log(WLR_ERROR, "kms %s: out of memory for the modes of %s", kms->path,
			kc->base.name);
	}
}

static bool init_connectors(struct wla_kms *kms, const drmModeRes *res)
{
	for (int i = 0; i < res->count_connectors; i++) {
		drmModeConnector *conn = drmModeGetConnector(kms->fd, res->connectors[i]);
		if (!conn) {
			wlr_log_errno(WLR_ERROR, "kms %s: drmModeGetConnector %" PRIu32, kms->path,
				res->connectors[i]);
			continue;
		}
		if (conn->connector_type == DRM_MODE_CONNECTOR_WRITEBACK) {
			init_writeback(kms, conn);
		} else {
			struct wla_kms_connector *kc = add_connector(kms, conn);
			if (kc) {
				read_connector(kms, kc, conn, -1);
			}
		}
		drmModeFreeConnector(conn);
	}
	return true;
}

void wla_kms_reprobe(struct wla_kms *kms, uint32_t conn_id, int status_override)
{
	if (kms->lost) {
		return;
	}
	kms->reprobes++;
	drmModeRes *res = drmModeGetResources(kms->fd);
	if (!res) {
		wlr_log_errno(WLR_ERROR, "kms %s: drmModeGetResources on hot-plug", kms->path);
		return;
	}
	for (int i = 0; i < res->count_connectors; i++) {
		drmModeConnector *conn = drmModeGetConnector(kms->fd, res->connectors[i]);
		if (!conn || conn->connector_type == DRM_MODE_CONNECTOR_WRITEBACK) {
			drmModeFreeConnector(conn);
			continue;
		}
		struct wla_kms_connector *kc = find_connector(kms, conn->connector_id);
		if (!kc) {
			kc = add_connector(kms, conn);
		}
		if (!kc) {
			drmModeFreeConnector(conn);
			continue;
		}
		bool was = kc->base.status == WLA_CONNECTOR_CONNECTED;
		int override = conn->connector_id == conn_id ? status_override : -1;
		bool now = override >= 0 ? override != 0 : conn->connection == DRM_MODE_CONNECTED;
		if (was && !now) {
			wlr_log(WLR_INFO, "kms %s: connector %s unplugged", kms->path, kc->base.name);
			struct wla_crtc *crtc = kc->base.state->crtc;
			if (crtc) {
				wla_crtc_force_off(crtc);
			}
			kc->base.status = WLA_CONNECTOR_DISCONNECTED;
			if (kms->dev.listener.connector_removed) {
				kms->dev.listener.connector_removed(&kms->dev, &kc->base,
					kms->dev.listener.data);
			}
		} else if (!was && now) {
			read_connector(kms, kc, conn, override);
			wlr_log(WLR_INFO, "kms %s: connector %s plugged in, %zu modes", kms->path,
				kc->base.name, kc->base.n_modes);
			if (kms->dev.listener.connector_added) {
				kms->dev.listener.connector_added(&kms->dev, &kc->base,
					kms->dev.listener.data);
			}
		}
		drmModeFreeConnector(conn);
	}
	/* Connectors no longer in the card's list (a DP-MST branch gone) are
	 * unplugged too. */
	for (size_t i = 0; i < kms->n_connectors; i++) {
		struct wla_kms_connector *kc = kms->connectors[i];
		bool listed = false;
		for (int j = 0; j < res->count_connectors; j++) {
			listed |= res->connectors[j] == kc->id;
		}
		if (listed || kc->base.status != WLA_CONNECTOR_CONNECTED) {
			continue;
		}
		wlr_log(WLR_INFO, "kms %s: connector %s is gone", kms->path, kc->base.name);
		if (kc->base.state->crtc) {
			wla_crtc_force_off(kc->base.state->crtc);
		}
		kc->base.status = WLA_CONNECTOR_DISCONNECTED;
		if (kms->dev.listener.connector_removed) {
			kms->dev.listener.connector_removed(&kms->dev, &kc->base,
				kms->dev.listener.data);
		}
	}
	drmModeFreeResources(res);
}

/* Hot-plug: the card's uevents (from udevd when it runs, else the
 * kernel's own) with HOTPLUG=1 make the driver read its connectors. */

static int handle_uevent(int fd, uint32_t mask, void *data)
{
	struct wla_kms *kms = data;
	struct udev_device *dev = udev_monitor_receive_device(kms->udev_monitor);
	if (!dev) {
		return 0;
	}
	const char *hotplug = udev_device_get_property_value(dev, "HOTPLUG");
	bool ours = udev_device_get_devnum(dev) == kms->devnum;
	if (ours && hotplug && strcmp(hotplug, "1") == 0) {
		wlr_log(WLR_DEBUG, "kms %s: hot-plug uevent (%s)", kms->path,
			udev_device_get_action(dev) ? udev_device_get_action(dev) : "?");
		wla_kms_reprobe(kms, 0, -1);
	}
	udev_device_unref(dev);
	return 0;
}

static void init_hotplug(struct wla_kms *kms)
{
	struct stat st;
	if (fstat(kms->fd, &st) != 0) {
		return;
	}
	kms->devnum = st.st_rdev;
	kms->udev = udev_new();
	/* Without udevd (a bare system, the test guest) the kernel's
	 * netlink group carries the same events. */
	const char *source = access("/run/udev/control", F_OK) == 0 ? "udev" : "kernel";
	kms->udev_monitor = kms->udev ? udev_monitor_new_from_netlink(kms->udev, source) : NULL;
	if (!kms->udev_monitor ||
			udev_monitor_filter_add_match_subsystem_devtype(kms->udev_monitor, "drm",
				NULL) < 0 ||
			udev_monitor_enable_receiving(kms->udev_monitor) < 0) {
		wlr_log(WLR_ERROR, "kms %s: no uevent monitor: connectors plugged or unplugged "
			"later are not seen", kms->path);
		return;
	}
	kms->udev_source = wl_event_loop_add_fd(kms->loop,
		udev_monitor_get_fd(kms->udev_monitor), WL_EVENT_READABLE, handle_uevent, kms);
}

static void finish_hotplug(struct wla_kms *kms)
{
	if (kms->udev_source) {
		wl_event_source_remove(kms->udev_source);
	}
	if (kms->udev_monitor) {
		udev_monitor_unref(kms->udev_monitor);
	}
	if (kms->udev) {
		udev_unref(kms->udev);
	}
}

/* The seat's session ends (the display goes, with the compositor): the
 * CRTCs off while the card is still open, then nothing more is sent. */
static void handle_session_destroy(struct wl_listener *listener, void *data)
{
	struct wla_kms *kms = wl_container_of(listener, kms, session_destroy);
	wl_list_remove(&kms->session_destroy.link);
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_crtc *crtc = &kms->crtcs[c].base;
		if (crtc->state && (crtc->state->enable || crtc->state->active ||
				!wl_list_empty(&crtc->queue))) {
			wla_crtc_force_off(crtc);
		}
	}
	wlr_log(WLR_INFO, "kms %s: the seat's session ended: the card is closed", kms->path);
	kms->session = NULL;
	if (!kms->session_dev) {
		/* The card was opened directly: it stays ours. */
		return;
	}
	/* The session closes the fd: nothing of ours may touch it again. */
	kms->lost = true;
	if (kms->fd_source) {
		wl_event_source_remove(kms->fd_source);
		kms->fd_source = NULL;
	}
	kms->fd = -1;
	kms->session_dev = NULL;
}

/* What another client (the console, a compositor that crashed) left on:
 * turned off in one commit, so that the kernel's state is the core's (all
 * off) and no plane shows a stale buffer. */
static void reset_kernel_state(struct wla_kms *kms)
{
	size_t crtcs_on = 0, planes_on = 0;
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		drmModeCrtc *crtc = drmModeGetCrtc(kms->fd, kms->crtcs[c].id);
		crtcs_on += crtc && crtc->mode_valid;
		drmModeFreeCrtc(crtc);
	}
	for (size_t i = 0; i < kms->n_planes; i++) {
		drmModePlane *plane = drmModeGetPlane(kms->fd, kms->planes[i].id);
		planes_on += plane && (plane->fb_id || plane->crtc_id);
		drmModeFreePlane(plane);
	}
	if (crtcs_on == 0 && planes_on == 0) {
		return;
	}
	struct kms_req r = { .kms = kms, .req = drmModeAtomicAlloc() };
	if (!r.req) {
		return;
	}
	for (size_t i = 0; i < kms->n_planes; i++) {
		struct wla_kms_plane *kp = &kms->planes[i];
		add_prop(&r, "FB_ID", kp->id, kp->props.fb_id, 0);
		add_prop(&r, "CRTC_ID", kp->id, kp->props.crtc_id, 0);
	}
	for (size_t i = 0; i < kms->n_connectors; i++) {
		struct wla_kms_connector *kc = kms->connectors[i];
		add_prop(&r, "CRTC_ID", kc->id, kc->prop_crtc_id, 0);
	}
	if (kms->has_writeback) {
		add_prop(&r, "CRTC_ID", kms->writeback.id, kms->writeback.prop_crtc_id, 0);
	}
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_kms_crtc *kc = &kms->crtcs[c];
		add_prop(&r, "MODE_ID", kc->id, kc->prop_mode_id, 0);
		add_prop(&r, "ACTIVE", kc->id, kc->prop_active, 0);
	}
	if (r.err == 0 && drmModeAtomicCommit(kms->fd, r.req, DRM_MODE_ATOMIC_ALLOW_MODESET,
			NULL) != 0) {
		r.err = -errno;
	}
	if (r.err) {
		wlr_log(WLR_ERROR, "kms %s: cannot turn off what was left on (%zu crtcs, %zu "
			"planes): %s", kms->path, crtcs_on, planes_on, strerror(-r.err));
	} else {
		wlr_log(WLR_INFO, "kms %s: turned off what another client left on (%zu crtcs, "
			"%zu planes)", kms->path, crtcs_on, planes_on);
	}
	finish_request(&r);
}

/* Opening the card */

static int set_caps(int fd, char *why, size_t why_size)
{
	if (drmSetClientCap(fd, DRM_CLIENT_CAP_UNIVERSAL_PLANES, 1) != 0) {
		snprintf(why, why_size, "DRM_CLIENT_CAP_UNIVERSAL_PLANES: %s", strerror(errno));
		return -EOPNOTSUPP;
	}
	if (drmSetClientCap(fd, DRM_CLIENT_CAP_ATOMIC, 1) != 0) {
		snprintf(why, why_size, "no atomic modesetting (DRM_CLIENT_CAP_ATOMIC: %s)",
			strerror(errno));
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Check that fd is a KMS card with atomic modesetting: 0, or -1 with why
 * filled in. */
static int check_card(int fd, char *why, size_t why_size)
{
	drmModeRes *res = drmModeGetResources(fd);
	if (!res) {
		snprintf(why, why_size, "not a KMS device (drmModeGetResources: %s)",
			strerror(errno));
		return -1;
	}
	drmModeFreeResources(res);
	return set_caps(fd, why, why_size);
}

/* The session, made on first need: a seat (seatd, logind or libseat's
 * built-in backend) opens what this process may not. */
static struct wlr_session *get_session(struct wla_kms *kms)
{
	if (!kms->session && kms->display && !kms->session_failed) {
		kms->session = wlr_session_create(kms->display);
		kms->session_failed = kms->session == NULL;
		if (kms->session) {
			kms->session_destroy.notify = handle_session_destroy;
			wl_signal_add(&kms->session->events.destroy, &kms->session_destroy);
		}
	}
	return kms->session;
}

/* Open path directly, or through the seat where this process may not;
 * check it. The fd, or -1 with why filled in. */
static int open_card(struct wla_kms *kms, const char *path, char *why, size_t why_size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		int err = errno;
		struct wlr_session *session = get_session(kms);
		struct wlr_device *dev = session ? wlr_session_open_file(session, path) : NULL;
		if (!dev) {
			snprintf(why, why_size, "cannot open it (%s) and %s", strerror(err),
				session ? "the seat did not open it either" :
				kms->display ? "no seat session could be had (seatd or logind)" :
				"no seat session was asked for");
			return -1;
		}
		if (check_card(dev->fd, why, why_size) < 0) {
			wlr_session_close_file(session, dev);
			return -1;
		}
		kms->session_dev = dev;
		wlr_log(WLR_INFO, "kms: %s opened through the seat", path);
		return dev->fd;
	}
	if (fd < 0) {
		snprintf(why, why_size, "cannot open it: %s", strerror(errno));
		return -1;
	}
	if (check_card(fd, why, why_size) < 0) {
		close(fd);
		return -1;
	}
	if (!drmIsMaster(fd)) {
		snprintf(why, why_size, "another process is its DRM master (a compositor or a "
			"display manager runs on it)");
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether cardN is the one the firmware booted on (sysfs boot_vga). */
static bool is_boot_vga(int n)
{
	char path[96], value[4] = "";
	snprintf(path, sizeof(path), "/sys/class/drm/card%d/device/boot_vga", n);
	FILE *f = fopen(path, "r");
	if (!f) {
		return false;
	}
	bool boot = fgets(value, sizeof(value), f) && value[0] == '1';
	fclose(f);
	return boot;
}

static int find_card(struct wla_kms *kms, const struct wla_config *cfg)
{
	char why[200];
	if (cfg->drm_device[0]) {
		snprintf(kms->path, sizeof(kms->path), "%s", cfg->drm_device);
		int fd = open_card(kms, cfg->drm_device, why, sizeof(why));
		if (fd < 0) {
			wlr_log(WLR_ERROR, "kms: drm-device %s: %s", cfg->drm_device, why);
		}
		return fd;
	}
	char last[WLA_DRM_DEVICE_MAX + sizeof(why) + 4] = "";
	/* The card the firmware booted on first (boot_vga), as wlroots picks
	 * its primary GPU, then the others in order. */
	for (int n = 0; n < 2 * KMS_MAX_CARDS; n++) {
		int i = n % KMS_MAX_CARDS;
		bool boot = is_boot_vga(i);
		if ((n < KMS_MAX_CARDS) != boot) {
			continue;
		}
		char path[WLA_DRM_DEVICE_MAX];
		snprintf(path, sizeof(path), "%s/card%d", DRM_DIR_NAME, i);
		if (access(path, F_OK) != 0) {
			continue;
		}
		int fd = open_card(kms, path, why, sizeof(why));
		if (fd >= 0) {
			snprintf(kms->path, sizeof(kms->path), "%s", path);
			return fd;
		}
		wlr_log(WLR_INFO, "kms: %s skipped: %s", path, why);
		snprintf(last, sizeof(last), "%s: %s", path, why);
	}
	if (last[0]) {
		wlr_log(WLR_ERROR, "kms: no usable DRM card in " DRM_DIR_NAME " (the last one, %s)",
			last);
	} else {
		wlr_log(WLR_ERROR, "kms: no DRM device: " DRM_DIR_NAME " has no card (set "
			"drm-device, or driver=vdc for the virtual display controller)");
	}
	return -1;
}

struct wla_kms *wla_kms_create(struct wl_event_loop *loop, struct wl_display *display,
	const struct wla_config *cfg)
{
	struct wla_kms *kms = calloc(1, sizeof(*kms));
	if (!kms) {
		wlr_log(WLR_ERROR, "kms: out of memory");
		return NULL;
	}
	kms->display = display;
	kms->fd = find_card(kms, cfg);
	if (kms->fd < 0) {
		if (kms->session) {
			wl_list_remove(&kms->session_destroy.link);
			wlr_session_destroy(kms->session);
		}
		free(kms);
		return NULL;
	}
	wla_device_init(&kms->dev, &kms_funcs, kms->path);
	kms->dev.latch_slack_ns = KMS_COMMIT_SLACK_NS;
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
	drmVersion *version = drmGetVersion(kms->fd);
	snprintf(kms->driver_name, sizeof(kms->driver_name), "%s",
		version && version->name ? version->name : "unknown");
	drmFreeVersion(version);

	drmModeRes *res = drmModeGetResources(kms->fd);
	bool ok = res && init_crtcs(kms, res) && init_planes(kms) && init_connectors(kms, res);
	drmModeFreeResources(res);
	if (ok) {
		reset_kernel_state(kms);
	}
	if (ok && loop) {
		kms->fd_source = wl_event_loop_add_fd(loop, kms->fd, WL_EVENT_READABLE, handle_fd,
			kms);
		ok = kms->fd_source != NULL;
	}
	if (ok && loop) {
		init_hotplug(kms);
	}
	if (!ok) {
		wlr_log(WLR_ERROR, "kms %s: cannot describe the card to the core", kms->path);
		wla_kms_destroy(kms);
		return NULL;
	}
	size_t connected = 0;
	for (size_t i = 0; i < kms->n_connectors; i++) {
		connected += kms->connectors[i]->base.status == WLA_CONNECTOR_CONNECTED;
	}
	wlr_log(WLR_INFO, "kms %s: driver %s, %zu crtcs, %zu planes, %zu connectors (%zu "
		"connected)%s, cursor %" PRIu32 "x%" PRIu32, kms->path, kms->driver_name,
		kms->n_crtcs, kms->n_planes, kms->n_connectors, connected,
		kms->has_writeback ? ", a writeback connector" : "", kms->cursor_width,
		kms->cursor_height);
	return kms;
}

struct wla_device *wla_kms_device_create(struct wl_event_loop *loop,
	struct wl_display *display, const struct wla_config *cfg)
{
	struct wla_kms *kms = wla_kms_create(loop, display, cfg);
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
	}
	clear_stash(kms);
	/* Captures in flight end as failed. */
	fail_captures(kms, NULL);
	if (kms->wb_job) {
		wl_list_insert_list(&kms->failed_captures, &kms->wb_job->captures);
		wl_list_init(&kms->wb_job->captures);
		job_free(kms->wb_job);
	}
	deliver_failed(kms);
	if (kms->live_fbs) {
		wlr_log(WLR_ERROR, "kms %s: %d DRM fbs still there at destroy", kms->path,
			kms->live_fbs);
	}
	if (kms->fd_source) {
		wl_event_source_remove(kms->fd_source);
	}
	finish_hotplug(kms);
	if (kms->idle) {
		wl_event_source_remove(kms->idle);
	}
	for (size_t i = 0; i < kms->n_blobs && !kms->lost; i++) {
		drmModeDestroyPropertyBlob(kms->fd, kms->blobs[i].id);
	}
	free(kms->blobs);
	if (kms->session) {
		wl_list_remove(&kms->session_destroy.link);
		if (kms->session_dev) {
			wlr_session_close_file(kms->session, kms->session_dev);
		}
		wlr_session_destroy(kms->session);
	} else if (kms->fd >= 0) {
		close(kms->fd);
	}
	free(kms);
}
