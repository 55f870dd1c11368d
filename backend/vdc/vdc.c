/*
 * The virtual display controller driver.
 *
 * Latching is O(planes): flush turns the planes of a commit into a frame
 * (plane state pointers and the mode) at the tail of the CRTC's flip queue,
 * and each vblank makes the oldest queued frame the scanout set. Pixels are
 * only read when a capture asks for them.
 */
#include <assert.h>
#include <drm_fourcc.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <wlr/util/log.h>
#include "backend/vdc.h"
#include "render/compose.h"
#include "util.h"

struct wla_capture {
	struct wl_list link;
	struct wla_vdc_output *out;
	wla_capture_func_t func;
	void *data;
};

static const uint32_t scanout_formats[] = {
	DRM_FORMAT_XRGB8888,
	DRM_FORMAT_ARGB8888,
	DRM_FORMAT_XBGR8888,
	DRM_FORMAT_ABGR8888,
	DRM_FORMAT_RGB565,
};

static const uint32_t cursor_formats[] = {
	DRM_FORMAT_ARGB8888,
	DRM_FORMAT_ABGR8888,
};

uint64_t wla_clock_monotonic_ns(void *data)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return wla_timespec_to_ns(&ts);
}

static struct wla_vdc_output *output_from_crtc(struct wla_crtc *crtc)
{
	return crtc->driver_data;
}

#define NS_PER_S_MHZ UINT64_C(1000000000000) /* ns per second times mHz per Hz */

/*
 * Time of vblank k of the current timing, rounded to the nanosecond from the
 * exact rational period 1e12 / refresh_mhz: no rounded period adds up over a
 * run, whatever its length. Split so that no product leaves 64 bits.
 */
static uint64_t grid_time(uint64_t epoch_ns, int32_t refresh_mhz, uint64_t k)
{
	uint64_t r = (uint64_t)refresh_mhz;
	return epoch_ns + (k / r) * NS_PER_S_MHZ + ((k % r) * NS_PER_S_MHZ + r / 2) / r;
}

static uint64_t vblank_time(const struct wla_vdc_output *out, uint64_t k)
{
	return grid_time(out->epoch_ns, out->mode.refresh_mhz, k);
}

/* The last vblank at or before now (now >= epoch). */
static uint64_t vblank_index_at(const struct wla_vdc_output *out, uint64_t now)
{
	uint64_t r = (uint64_t)out->mode.refresh_mhz;
	uint64_t d = now - out->epoch_ns;
	uint64_t k = (d / NS_PER_S_MHZ) * r + (d % NS_PER_S_MHZ) * r / NS_PER_S_MHZ;
	while (vblank_time(out, k + 1) <= now) {
		k++;
	}
	while (k > 0 && vblank_time(out, k) > now) {
		k--;
	}
	return k;
}

static void arm_timer(struct wla_vdc_output *out)
{
	if (out->timer_fd < 0) {
		return;
	}
	uint64_t t = vblank_time(out, out->next_index);
	struct itimerspec its = { .it_value = wla_timespec_from_ns(t) };
	if (timerfd_settime(out->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
		wlr_log_errno(WLR_ERROR, "%s: timerfd_settime", out->crtc.name);
	}
}

static void disarm_timer(struct wla_vdc_output *out)
{
	if (out->timer_fd >= 0) {
		struct itimerspec its = { 0 };
		timerfd_settime(out->timer_fd, 0, &its, NULL);
	}
}

static void fail_captures(struct wla_vdc_output *out)
{
	struct wl_list list;
	wl_list_init(&list);
	wl_list_insert_list(&list, &out->captures);
	wl_list_init(&out->captures);
	struct wla_capture *cap, *tmp;
	wl_list_for_each_safe(cap, tmp, &list, link) {
		wl_list_remove(&cap->link);
		cap->func(cap, NULL, out->seq, cap->data);
		free(cap);
	}
}

static void crtc_atomic_enable(struct wla_crtc *crtc, const struct wla_crtc_state *old)
{
	struct wla_vdc_output *out = output_from_crtc(crtc);
	out->mode = crtc->state->mode;
	out->period_ns = wla_mode_period_ns(&out->mode);
	out->epoch_ns = out->vdc->now(out->vdc->now_data);
	out->next_index = 1;
	out->running = true;
	memset(&out->scanout, 0, sizeof(out->scanout));
	out->scanout.mode = out->mode;
	arm_timer(out);
	wlr_log(WLR_DEBUG, "%s: enabled %" PRId32 "x%" PRId32 "@%" PRId32 "mHz, period %"
		PRIu64 " ns", crtc->name, out->mode.width, out->mode.height,
		out->mode.refresh_mhz, out->period_ns);
}

static void crtc_atomic_disable(struct wla_crtc *crtc, const struct wla_crtc_state *old)
{
	struct wla_vdc_output *out = output_from_crtc(crtc);
	out->running = false;
	disarm_timer(out);
	memset(&out->scanout, 0, sizeof(out->scanout));
	out->queue_head = out->queue_len = 0;
	out->amend_mask = 0;
	/* Nothing queued will latch any more. */
	wla_crtc_complete_commit(crtc);
	fail_captures(out);
	wlr_log(WLR_DEBUG, "%s: disabled", crtc->name);
}

static struct wla_vdc_frame *queue_at(struct wla_vdc_output *out, size_t i)
{
	return &out->queue[(out->queue_head + i) % WLA_VDC_MAX_QUEUE];
}

static void apply_planes(struct wla_vdc_frame *dst, const struct wla_vdc_frame *src,
	uint32_t mask)
{
	for (size_t i = 0; i < WLA_VDC_PLANES; i++) {
		if (mask & (1u << i)) {
			dst->planes[i] = src->planes[i];
		}
	}
}

static void crtc_atomic_begin(struct wla_crtc *crtc, const struct wla_crtc_state *old,
	enum wla_latch latch)
{
	struct wla_vdc_output *out = output_from_crtc(crtc);
	out->build_latch = latch;
	out->build_mask = 0;
	/* A frame changes only the planes of its commit: the rest keep what
	 * the frame before it shows. */
	if (out->queue_len > 0) {
		out->build = *queue_at(out, out->queue_len - 1);
	} else {
		assert(latch != WLA_LATCH_REPLACE);
		out->build = out->scanout;
		apply_planes(&out->build, &out->amend, out->amend_mask);
	}
}

static void crtc_atomic_flush(struct wla_crtc *crtc, const struct wla_crtc_state *old,
	enum wla_latch latch)
{
	struct wla_vdc_output *out = output_from_crtc(crtc);
	switch (latch) {
	case WLA_LATCH_AMEND:
		for (size_t i = 0; i < out->queue_len; i++) {
			apply_planes(queue_at(out, i), &out->build, out->build_mask);
		}
		apply_planes(&out->amend, &out->build, out->build_mask);
		out->amend_mask |= out->build_mask;
		break;
	case WLA_LATCH_QUEUE:
		assert(out->queue_len < WLA_VDC_MAX_QUEUE);
		out->build.mode = crtc->state->mode;
		*queue_at(out, out->queue_len++) = out->build;
		break;
	case WLA_LATCH_REPLACE:
		assert(out->queue_len > 0);
		out->build.mode = crtc->state->mode;
		*queue_at(out, out->queue_len - 1) = out->build;
		break;
	}
}

static void plane_atomic_update(struct wla_plane *plane, const struct wla_plane_state *old)
{
	struct wla_vdc_output *out = output_from_crtc(plane->state->crtc);
	out->build.planes[plane->zpos] = plane->state;
	out->build_mask |= 1u << plane->zpos;
}

static void plane_atomic_disable(struct wla_plane *plane, const struct wla_plane_state *old)
{
	struct wla_crtc *crtc = plane->state->crtc ? plane->state->crtc : old->crtc;
	struct wla_vdc_output *out = output_from_crtc(crtc);
	out->build.planes[plane->zpos] = NULL;
	out->build_mask |= 1u << plane->zpos;
}

/* The VDC takes any mode a config could name: it is virtual, but its
 * vblank arithmetic and capture buffers have bounds. */
static int crtc_atomic_check(struct wla_crtc *crtc, struct wla_atomic_state *state)
{
	const struct wla_crtc_state *cs = wla_atomic_new_crtc_state(state, crtc);
	if (!cs || !cs->enable) {
		return 0;
	}
	const struct wla_mode *m = &cs->mode;
	if (m->width > WLA_MODE_MAX_SIZE || m->height > WLA_MODE_MAX_SIZE ||
			m->refresh_mhz > WLA_MODE_MAX_REFRESH_MHZ) {
		wlr_log(WLR_ERROR, "%s: mode %" PRId32 "x%" PRId32 "@%" PRId32 "mHz is beyond "
			"the virtual display controller's %dx%d@%dmHz", crtc->name, m->width,
			m->height, m->refresh_mhz, WLA_MODE_MAX_SIZE, WLA_MODE_MAX_SIZE,
			WLA_MODE_MAX_REFRESH_MHZ);
		return -EINVAL;
	}
	return 0;
}

static const struct wla_crtc_funcs crtc_funcs = {
	.atomic_check = crtc_atomic_check,
	.atomic_enable = crtc_atomic_enable,
	.atomic_disable = crtc_atomic_disable,
	.atomic_begin = crtc_atomic_begin,
	.atomic_flush = crtc_atomic_flush,
};

static const struct wla_plane_funcs plane_funcs = {
	.atomic_update = plane_atomic_update,
	.atomic_disable = plane_atomic_disable,
};

struct wla_image *wla_vdc_compose(struct wla_vdc_output *out)
{
	const struct wla_mode *mode = &out->scanout.mode;
	struct wla_layer layers[WLA_VDC_PLANES];
	struct wla_fb *accessed[WLA_VDC_PLANES];
	size_t n = 0;
	bool ok = true;
	for (size_t i = 0; i < out->n_planes; i++) {
		const struct wla_plane_state *ps = out->scanout.planes[i];
		if (!ps || !ps->visible) {
			continue;
		}
		struct wla_fb *fb = ps->fb;
		const void *data;
		uint32_t stride;
		if (!fb->impl->begin_access || !fb->impl->begin_access(fb, &data, &stride)) {
			wlr_log(WLR_ERROR, "plane %s: fb pixels are not readable for capture",
				out->zorder[i]->name);
			ok = false;
			break;
		}
		accessed[n] = fb;
		layers[n++] = (struct wla_layer){
			.data = data,
			.stride = stride,
			.width = fb->width,
			.height = fb->height,
			.format = fb->format,
			.src_x = (uint32_t)ps->src.x,
			.src_y = (uint32_t)ps->src.y,
			.src_w = (uint32_t)ps->src.w,
			.src_h = (uint32_t)ps->src.h,
			.dst_x = ps->dst.x,
			.dst_y = ps->dst.y,
			.dst_w = (uint32_t)ps->dst.w,
			.dst_h = (uint32_t)ps->dst.h,
		};
	}
	struct wla_image *image = NULL;
	if (ok) {
		image = wla_image_create((uint32_t)mode->width, (uint32_t)mode->height);
	}
	if (image && !wla_compose(image, layers, n)) {
		wla_image_destroy(image);
		image = NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (accessed[i]->impl->end_access) {
			accessed[i]->impl->end_access(accessed[i]);
		}
	}
	return image;
}

static void serve_captures(struct wla_vdc_output *out)
{
	if (wl_list_empty(&out->captures)) {
		return;
	}
	/* Captures asked for from a callback wait for the next vblank. */
	struct wl_list list;
	wl_list_init(&list);
	wl_list_insert_list(&list, &out->captures);
	wl_list_init(&out->captures);
	struct wla_image *image = wla_vdc_compose(out);
	uint64_t seq = out->seq;
	while (!wl_list_empty(&list)) {
		struct wla_capture *cap = wl_container_of(list.next, cap, link);
		wl_list_remove(&cap->link);
		cap->func(cap, image, seq, cap->data);
		free(cap);
	}
	wla_image_destroy(image);
}

static void output_vblank(struct wla_vdc_output *out, uint64_t now)
{
	if (!out->running) {
		return;
	}
	if (now < vblank_time(out, out->next_index)) {
		arm_timer(out);
		return;
	}
	uint64_t index = vblank_index_at(out, now);
	uint64_t passed = index - out->next_index + 1;
	out->stats.vblanks += passed;
	out->stats.missed_vblanks += passed - 1;
	out->seq += passed;
	out->next_index = index + 1;
	uint64_t t = vblank_time(out, index);
	struct timespec when = wla_timespec_from_ns(t);
	bool latched = out->queue_len > 0;
	if (latched) {
		/* Queued frames already carry every cursor update made before
		 * or after they were queued. */
		out->scanout = *queue_at(out, 0);
		out->queue_head = (out->queue_head + 1) % WLA_VDC_MAX_QUEUE;
		out->queue_len--;
		out->stats.latched++;
	} else {
		apply_planes(&out->scanout, &out->amend, out->amend_mask);
	}
	out->amend_mask = 0;
	uint64_t refresh_ns = out->period_ns;
	if (!wla_mode_equal(&out->scanout.mode, &out->mode)) {
		/* A mode change latched: the new timing starts at this vblank. */
		out->mode = out->scanout.mode;
		out->period_ns = wla_mode_period_ns(&out->mode);
		out->epoch_ns = t;
		out->next_index = 1;
		refresh_ns = out->period_ns;
	}
	serve_captures(out);
	arm_timer(out);
	/* The states that left the screen are released in here, and the
	 * present handler may commit the next frame. */
	wla_crtc_handle_vblank(&out->crtc, latched, out->seq, &when, refresh_ns,
		WLA_PRESENT_VSYNC | WLA_PRESENT_HW_CLOCK | WLA_PRESENT_HW_COMPLETION);
}

void wla_vdc_advance(struct wla_vdc *vdc, uint64_t now_ns)
{
	for (size_t i = 0; i < vdc->n_outputs; i++) {
		output_vblank(vdc->outputs[i], now_ns);
	}
}

static int handle_timer(int fd, uint32_t mask, void *data)
{
	struct wla_vdc_output *out = data;
	uint64_t expirations;
	if (read(fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) {
		wlr_log_errno(WLR_ERROR, "%s: reading the vblank timer", out->crtc.name);
	}
	output_vblank(out, out->vdc->now(out->vdc->now_data));
	return 0;
}

bool wla_vdc_next_latch(struct wla_vdc_output *out, uint64_t *latch_ns)
{
	if (!out->running) {
		return false;
	}
	/* Each queued frame takes a vblank; one with a new mode restarts the
	 * timing at its own latch. */
	struct wla_mode mode = out->mode;
	uint64_t epoch = out->epoch_ns, index = out->next_index;
	uint64_t t = vblank_time(out, index);
	for (size_t i = 0; i < out->queue_len; i++) {
		const struct wla_mode *frame_mode = &queue_at(out, i)->mode;
		if (wla_mode_equal(frame_mode, &mode)) {
			index++;
		} else {
			mode = *frame_mode;
			epoch = t;
			index = 1;
		}
		t = grid_time(epoch, mode.refresh_mhz, index);
	}
	*latch_ns = t;
	return true;
}

struct wla_capture *wla_vdc_capture(struct wla_vdc_output *out, wla_capture_func_t func,
	void *data)
{
	struct wla_capture *cap = calloc(1, sizeof(*cap));
	if (!cap) {
		wlr_log(WLR_ERROR, "%s: out of memory for a capture", out->crtc.name);
		return NULL;
	}
	cap->out = out;
	cap->func = func;
	cap->data = data;
	wl_list_insert(out->captures.prev, &cap->link);
	return cap;
}

void wla_vdc_capture_cancel(struct wla_capture *cap)
{
	if (!cap) {
		return;
	}
	wl_list_remove(&cap->link);
	free(cap);
}

static void init_plane(struct wla_vdc_output *out, struct wla_plane *plane,
	enum wla_plane_type type, const uint32_t *formats, size_t n_formats)
{
	plane->type = type;
	plane->funcs = &plane_funcs;
	memcpy(plane->formats, formats, n_formats * sizeof(formats[0]));
	plane->n_formats = n_formats;
	plane->possible_crtcs = 1u << out->crtc.index;
	plane->zpos = (unsigned)out->n_planes;
	plane->min_scale = plane->max_scale = WLA_FIXED_ONE;
	plane->driver_data = out;
	out->zorder[out->n_planes++] = plane;
}

static bool add_output(struct wla_vdc *vdc, const struct wla_config *cfg, size_t i)
{
	const struct wla_config_output *co = &cfg->outputs[i];
	struct wla_vdc_output *out = calloc(1, sizeof(*out));
	if (!out) {
		return false;
	}
	out->vdc = vdc;
	out->timer_fd = -1;
	wl_list_init(&out->captures);
	vdc->outputs[vdc->n_outputs++] = out;

	out->crtc.funcs = &crtc_funcs;
	out->crtc.max_slots = WLA_VDC_MAX_QUEUE;
	out->crtc.queue_depth = cfg->flip_depth ? cfg->flip_depth : 1;
	out->crtc.mailbox = cfg->flip_mailbox;
	out->crtc.driver_data = out;
	if (!wla_device_add_crtc(&vdc->dev, &out->crtc)) {
		return false;
	}

	struct wla_connector *conn = &out->connector;
	snprintf(conn->name, sizeof(conn->name), "%s", co->name);
	conn->status = WLA_CONNECTOR_CONNECTED;
	for (size_t m = 0; m < co->n_modes && m < WLA_MAX_CONNECTOR_MODES; m++) {
		conn->modes[m] = (struct wla_mode){
			.width = co->modes[m].width,
			.height = co->modes[m].height,
			.refresh_mhz = co->modes[m].refresh_mhz,
		};
	}
	conn->n_modes = co->n_modes < WLA_MAX_CONNECTOR_MODES ?
		co->n_modes : WLA_MAX_CONNECTOR_MODES;
	conn->possible_crtcs = 1u << out->crtc.index;
	conn->driver_data = out;
	if (!wla_device_add_connector(&vdc->dev, conn)) {
		return false;
	}

	init_plane(out, &out->primary, WLA_PLANE_PRIMARY, scanout_formats,
		WLA_ARRAY_SIZE(scanout_formats));
	/* Like most display engines' primary planes: full screen, unscaled. */
	out->primary.full_screen_only = true;
	if (!wla_device_add_plane(&vdc->dev, &out->primary)) {
		return false;
	}
	out->n_overlays = cfg->overlay_planes;
	for (size_t o = 0; o < out->n_overlays; o++) {
		struct wla_plane *plane = &out->overlays[o];
		init_plane(out, plane, WLA_PLANE_OVERLAY, scanout_formats,
			WLA_ARRAY_SIZE(scanout_formats));
		plane->min_scale = WLA_FIXED_ONE / 8; /* up to 8x magnification */
		plane->max_scale = WLA_FIXED_ONE * 4; /* up to 4x reduction */
		if (!wla_device_add_plane(&vdc->dev, plane)) {
			return false;
		}
	}
	init_plane(out, &out->cursor, WLA_PLANE_CURSOR, cursor_formats,
		WLA_ARRAY_SIZE(cursor_formats));
	out->cursor.max_fb_width = out->cursor.max_fb_height = cfg->cursor_size;
	if (!wla_device_add_plane(&vdc->dev, &out->cursor)) {
		return false;
	}
	out->crtc.primary = &out->primary;
	out->crtc.cursor = &out->cursor;

	if (vdc->loop) {
		out->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (out->timer_fd < 0) {
			wlr_log_errno(WLR_ERROR, "%s: timerfd_create", out->crtc.name);
			return false;
		}
		out->timer = wl_event_loop_add_fd(vdc->loop, out->timer_fd, WL_EVENT_READABLE,
			handle_timer, out);
		if (!out->timer) {
			wlr_log(WLR_ERROR, "%s: cannot add the vblank timer to the event loop",
				out->crtc.name);
			return false;
		}
	}
	return true;
}

struct wla_vdc *wla_vdc_create(struct wl_event_loop *loop, const struct wla_config *cfg,
	uint64_t (*now)(void *data), void *now_data)
{
	if (cfg->n_outputs == 0 || cfg->n_outputs > WLA_MAX_CRTCS) {
		wlr_log(WLR_ERROR, "vdc: %zu outputs configured, supported 1..%d",
			cfg->n_outputs, WLA_MAX_CRTCS);
		return NULL;
	}
	size_t planes = cfg->n_outputs * (cfg->overlay_planes + 2);
	if (planes > WLA_MAX_PLANES || cfg->overlay_planes > WLA_MAX_OVERLAY_PLANES) {
		wlr_log(WLR_ERROR, "vdc: %zu outputs with %" PRIu32 " overlay planes need %zu "
			"planes, more than %d", cfg->n_outputs, cfg->overlay_planes, planes,
			WLA_MAX_PLANES);
		return NULL;
	}
	struct wla_vdc *vdc = calloc(1, sizeof(*vdc));
	if (!vdc) {
		wlr_log(WLR_ERROR, "vdc: out of memory");
		return NULL;
	}
	vdc->dev.name = "vdc";
	vdc->loop = loop;
	vdc->now = now ? now : wla_clock_monotonic_ns;
	vdc->now_data = now_data;
	vdc->cursor_size = cfg->cursor_size;
	for (size_t i = 0; i < cfg->n_outputs; i++) {
		if (!add_output(vdc, cfg, i)) {
			wlr_log(WLR_ERROR, "vdc: cannot create output %s", cfg->outputs[i].name);
			wla_vdc_destroy(vdc);
			return NULL;
		}
	}
	return vdc;
}

void wla_vdc_destroy(struct wla_vdc *vdc)
{
	if (!vdc) {
		return;
	}
	for (size_t i = 0; i < vdc->n_outputs; i++) {
		struct wla_vdc_output *out = vdc->outputs[i];
		out->crtc.present = NULL;
		if (out->running) {
			crtc_atomic_disable(&out->crtc, out->crtc.state);
		}
		fail_captures(out);
	}
	wla_device_finish(&vdc->dev);
	for (size_t i = 0; i < vdc->n_outputs; i++) {
		struct wla_vdc_output *out = vdc->outputs[i];
		if (out->timer) {
			wl_event_source_remove(out->timer);
		}
		if (out->timer_fd >= 0) {
			close(out->timer_fd);
		}
		free(out);
	}
	free(vdc);
}
