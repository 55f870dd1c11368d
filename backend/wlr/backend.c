/*
 * wlr_backend implementation: configuration, the devices, outputs.
 *
 * A device is made through its driver's constructor only. The KMS driver
 * is handed its card, as wlroots hands its DRM backend a session and a
 * device: the glue makes a session (backend/session/) that finds and opens
 * the card (directly or through the seat) and watches its uevents, and
 * closes it after the driver is gone.
 *
 * Input (backend/input/) reaches the backend only through the host made
 * here (announce a device, describe an output); its public API is in
 * input-host.c.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wlr/util/log.h>
#include <wlatomic/backend.h>
#include "backend/input.h"
#include "backend/kms.h" /* the drivers' constructors */
#include "backend/vdc.h"
#include "backend/log.h"
#include "backend/session.h"
#include "backend/wlr.h"
#include "util.h"

static const struct wlr_backend_impl backend_impl;

struct wla_backend *wla_backend_from_wlr(struct wlr_backend *wlr_backend)
{
	assert(wlr_backend->impl == &backend_impl);
	struct wla_backend *backend = wl_container_of(wlr_backend, backend, base);
	return backend;
}

/*
 * The CRTCs of a device for its connected connectors without an output:
 * as many of them as can get one (a bipartite matching, found by
 * augmenting paths), so that a connector that could use either of two
 * CRTCs does not take the only one another connector can use.
 */
struct crtc_match {
	struct wla_backend *backend;
	struct wla_device *dev;
	int owner[WLA_MAX_CRTCS]; /* connector index, or -1 */
	bool seen[WLA_MAX_CRTCS];
};

static bool wants_output(struct crtc_match *m, size_t i)
{
	struct wla_connector *conn = m->dev->connectors[i];
	return conn && conn->status != WLA_CONNECTOR_DISCONNECTED &&
		!wla_output_find(m->backend, conn);
}

static bool augment(struct crtc_match *m, size_t i)
{
	struct wla_connector *conn = m->dev->connectors[i];
	if (conn->state->crtc) {
		return false; /* lit at start on its CRTC: it stays there */
	}
	/* A free CRTC first, then one whose connector can move. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t c = 0; c < m->dev->n_crtcs; c++) {
			if (m->seen[c] || (m->owner[c] < 0) != (pass == 0) ||
					!wla_output_crtc_usable(m->backend, conn, m->dev->crtcs[c])) {
				continue;
			}
			m->seen[c] = true;
			if (m->owner[c] < 0 || augment(m, (size_t)m->owner[c])) {
				m->owner[c] = (int)i;
				return true;
			}
		}
	}
	return false;
}

static void create_outputs(struct wla_backend *backend, struct wla_device *dev)
{
	struct crtc_match m = { .backend = backend, .dev = dev };
	for (size_t c = 0; c < WLA_MAX_CRTCS; c++) {
		m.owner[c] = -1;
	}
	/* A connector the driver found lit (KMS: kept as the console left
	 * it) keeps its CRTC. */
	for (size_t i = 0; i < dev->n_connectors; i++) {
		struct wla_crtc *lit = dev->connectors[i] ? dev->connectors[i]->state->crtc : NULL;
		if (wants_output(&m, i) && lit && m.owner[lit->index] < 0) {
			m.owner[lit->index] = (int)i;
		}
	}
	for (size_t i = 0; i < dev->n_connectors; i++) {
		if (wants_output(&m, i) && !dev->connectors[i]->state->crtc) {
			memset(m.seen, 0, sizeof(m.seen));
			augment(&m, i);
		}
	}
	struct wla_crtc *crtc_of[WLA_MAX_CONNECTORS] = { 0 };
	for (size_t c = 0; c < dev->n_crtcs; c++) {
		if (m.owner[c] >= 0) {
			crtc_of[m.owner[c]] = dev->crtcs[c];
		}
	}
	for (size_t i = 0; i < dev->n_connectors; i++) {
		if (!wants_output(&m, i)) {
			continue;
		}
		/* Without a CRTC matched (more connectors than CRTCs) the output
		 * comes all the same and claims one when it is enabled. A
		 * failure (memory) is logged; the other outputs still come,
		 * unless a new_output listener destroyed the backend. */
		wla_output_create(backend, dev, dev->connectors[i], crtc_of[i]);
		if (wla_doomed(&backend->hold)) {
			return;
		}
	}
}

static bool backend_start(struct wlr_backend *wlr_backend)
{
	struct wla_backend *backend = wla_backend_from_wlr(wlr_backend);
	if (backend->started) {
		return true;
	}
	backend->started = true;
	backend->control = wla_control_create(backend);
	/* A new_output or new_input listener may destroy the backend: then
	 * nothing more starts, and the compositor hears it did not start. */
	wla_hold(&backend->hold);
	/* Connectors with nothing plugged in get an output when they are (the
	 * driver's connector_added). */
	for (size_t d = 0; d < backend->n_devices && !wla_doomed(&backend->hold); d++) {
		struct wla_device *dev = backend->devices[d];
		if (wla_device_is_vdc(dev)) {
			/* The VDC's outputs come lit, as wlroots' headless ones:
			 * compositors written against headless commit a mode
			 * without enabling first. KMS outputs come as the card
			 * is. */
			wla_vdc_light_connectors(wla_vdc_from_device(dev));
		}
		create_outputs(backend, dev);
	}
	/* Input after the outputs, as wlroots' X11 backend does: a touchscreen
	 * without touch-output belongs to the first of them. */
	if (!wla_doomed(&backend->hold)) {
		wla_input_start(backend->input);
	}
	return wla_backend_release(backend);
}

/* The session a device's card came from (NULL for the VDC, which needs
 * none): the one the KMS device was made with in create_kms_device. */
static struct wla_session *device_session(struct wla_device *dev)
{
	return wla_device_is_kms(dev) ? wla_kms_from_device(dev)->card->session : NULL;
}

static void device_destroyed(struct wla_device *dev)
{
	struct wla_session *session = device_session(dev);
	dev->funcs->destroy(dev);
	/* After the driver: its CRTCs went off while the card was open. */
	wla_session_destroy(session);
}

/* Now, or once the driver's wake-up whose listener destroyed the backend
 * is over (wla_device_destroy). */
static void destroy_device(struct wla_device *dev)
{
	wla_device_destroy(dev, device_destroyed);
}

static void handle_connector_added(struct wla_device *dev, struct wla_connector *conn,
	void *data)
{
	struct wla_backend *backend = data;
	/* Told again for a connector that has its output: nothing changes. */
	if (backend->started && !wla_output_find(backend, conn)) {
		/* The caller (the driver, from a hot-plug) goes on after a
		 * listener destroyed the backend: see wla_device.hold. */
		wla_hold(&backend->hold);
		wla_output_create(backend, dev, conn, wla_output_free_crtc(backend, dev, conn));
		wla_backend_release(backend);
	}
}

static void handle_connector_removed(struct wla_device *dev, struct wla_connector *conn,
	void *data)
{
	struct wla_backend *backend = data;
	struct wla_output *out = wla_output_find(backend, conn);
	if (out) {
		wlr_output_destroy(&out->base);
	}
}

static void handle_connector_link_bad(struct wla_device *dev, struct wla_connector *conn,
	void *data)
{
	struct wla_backend *backend = data;
	struct wla_output *out = wla_output_find(backend, conn);
	if (out) {
		wla_output_retrain_link(out);
	}
}

/* The device's session went inactive (a VT switch): commits are refused
 * while it lasts, and no frame event is sent (wlroots' frame_pending held
 * set), so that a compositor that draws at each frame event, and its
 * clients, rest instead of drawing frames that are refused. Active again:
 * the outputs show what they showed, and the compositor is asked for a
 * frame, as wlroots' DRM backend asks after its restore. */
static void handle_device_active(struct wla_device *dev, void *data)
{
	struct wla_backend *backend = data;
	wlr_log(WLR_INFO, "device %s: session %s", dev->name, dev->inactive ?
		"inactive: no frame events until it is back" : "active again");
	wla_hold(&backend->hold);
	/* Input goes quiet with the display: the seat is another's. A
	 * listener of what it tells may destroy the backend (backend->input
	 * NULL then): the input held is released. */
	struct wla_input *input = backend->input;
	wla_input_hold(input);
	wla_libinput_set_active(input, !dev->inactive);
	if (!wla_input_release(input) || wla_doomed(&backend->hold)) {
		wla_backend_release(backend);
		return;
	}
	struct wla_output *out, *tmp;
	wl_list_for_each_safe(out, tmp, &backend->outputs, link) {
		if (out->dev != dev) {
			continue;
		}
		if (dev->inactive) {
			out->base.frame_pending = true;
		} else if (!out->crtc || out->crtc->pending_frames == 0) {
			/* A frame still to latch sends the frame event itself. */
			out->base.frame_pending = false;
			if (out->base.enabled) {
				wlr_output_schedule_frame(&out->base);
			}
		}
	}
	wla_backend_release(backend);
}

/* An unplug waiting for the present event of the connector's output to end. */
struct wla_unplug {
	struct wl_list link; /* wla_backend.unplugs */
	struct wla_device *dev;
	char name[sizeof(((struct wla_connector *)0)->name)];
};

/* The end of a destroyed backend, once nothing holds it: what its outputs
 * stood on (an output whose destroy was under way when the backend was
 * destroyed finishes on its device first). */
static void backend_free(void *data)
{
	struct wla_backend *backend = data;
	for (size_t d = 0; d < backend->n_devices; d++) {
		destroy_device(backend->devices[d]);
	}
	wla_backend_finish_fbs(backend);
	if (backend->buffer_locks || backend->cursor_locks) {
		wlr_log(WLR_ERROR, "backend: %zu buffer locks and %zu cursor locks still held "
			"at destroy", backend->buffer_locks, backend->cursor_locks);
	}
	free(backend);
}

bool wla_backend_release(struct wla_backend *backend)
{
	return wla_release(&backend->hold, backend_free, backend);
}

static void backend_destroy(struct wlr_backend *wlr_backend)
{
	if (!wlr_backend) {
		return;
	}
	struct wla_backend *backend = wla_backend_from_wlr(wlr_backend);
	wl_list_remove(&backend->display_destroy.link);
	/* Its clients watch outputs: they go first. */
	wla_control_destroy(backend->control);
	backend->control = NULL;
	struct wla_output *out, *tmp;
	wl_list_for_each_safe(out, tmp, &backend->outputs, link) {
		wlr_output_destroy(&out->base);
	}
	wl_list_remove(&backend->seat_end.link);
	wl_list_init(&backend->seat_end.link);
	wla_input_destroy(backend->input);
	backend->input = NULL;
	wlr_backend_finish(wlr_backend);
	if (backend->unplug_idle) {
		wl_event_source_remove(backend->unplug_idle);
		backend->unplug_idle = NULL;
	}
	struct wla_unplug *u, *utmp;
	wl_list_for_each_safe(u, utmp, &backend->unplugs, link) {
		wl_list_remove(&u->link);
		free(u);
	}
	/* From a listener of its own announcements, or of an output's
	 * destroy: the rest when they return. */
	if (wla_hold_doom(&backend->hold)) {
		backend_free(backend);
	}
}

static clockid_t backend_get_presentation_clock(struct wlr_backend *wlr_backend)
{
	return CLOCK_MONOTONIC;
}

static int backend_get_drm_fd(struct wlr_backend *wlr_backend)
{
	struct wla_backend *backend = wla_backend_from_wlr(wlr_backend);
	for (size_t d = 0; d < backend->n_devices; d++) {
		struct wla_device *dev = backend->devices[d];
		int fd = dev->drm_fd;
		/* A card that scans out copies of shared memory takes no
		 * dmabuf: without its fd wlroots picks the pixman renderer and
		 * its shm allocator, not a GPU renderer whose buffers it
		 * could not use. */
		if (fd >= 0 && !dev->scanout_copies) {
			return fd;
		}
	}
	return -1;
}

static uint32_t backend_get_buffer_caps(struct wlr_backend *wlr_backend)
{
	static const struct {
		uint32_t wla, wlr;
	} map[] = {
		{ WLA_BUFFER_CAP_DATA_PTR, WLR_BUFFER_CAP_DATA_PTR },
		{ WLA_BUFFER_CAP_SHM, WLR_BUFFER_CAP_SHM },
		{ WLA_BUFFER_CAP_DMABUF, WLR_BUFFER_CAP_DMABUF },
	};
	struct wla_backend *backend = wla_backend_from_wlr(wlr_backend);
	uint32_t caps = 0;
	for (size_t d = 0; d < backend->n_devices; d++) {
		struct wla_device *dev = backend->devices[d];
		uint32_t wla = dev->buffer_caps;
		for (size_t i = 0; i < WLA_ARRAY_SIZE(map); i++) {
			if (wla & map[i].wla) {
				caps |= map[i].wlr;
			}
		}
	}
	return caps;
}

/* The seat the card was opened through (seatd, logind, libseat's built-in
 * backend), for the compositor's VT switch keys (wlr_session_change_vt):
 * the seat has the VT in graphics mode, where the kernel's own keyboard
 * switching is off. NULL where no card came through a seat. */
static struct wlr_session *backend_get_session(struct wlr_backend *wlr_backend)
{
	struct wla_backend *backend = wla_backend_from_wlr(wlr_backend);
	for (size_t d = 0; d < backend->n_devices; d++) {
		struct wla_device *dev = backend->devices[d];
		struct wla_session *session = device_session(dev);
		if (session && wla_kms_from_device(dev)->card->through_seat) {
			return session->seat;
		}
	}
	return NULL;
}

static const struct wlr_backend_impl backend_impl = {
	.start = backend_start,
	.get_session = backend_get_session,
	.destroy = backend_destroy,
	.get_presentation_clock = backend_get_presentation_clock,
	.get_drm_fd = backend_get_drm_fd,
	.get_buffer_caps = backend_get_buffer_caps,
};

static void handle_display_destroy(struct wl_listener *listener, void *data)
{
	struct wla_backend *backend = wl_container_of(listener, backend, display_destroy);
	backend_destroy(&backend->base);
}

/* A DRM card for the KMS driver: opened by a session of the glue's (with
 * the display, through the seat where this process may not open it), then
 * handed over. NULL when there is no usable card (logged by the session,
 * naming it) or the driver refuses it (logged by the driver). */
static struct wla_device *create_kms_device(struct wl_event_loop *loop,
	struct wl_display *display, const struct wla_config *cfg, struct wlr_session *seat)
{
	struct wla_session *session = wla_session_create(loop, display);
	if (session && seat) {
		wla_session_borrow_seat(session, seat);
	}
	struct wla_card *card = session ? wla_session_open_card(session, cfg) : NULL;
	struct wla_device *dev = card ? wla_kms_device_create(loop, card) : NULL;
	if (!dev) {
		wla_session_destroy(session);
	}
	return dev;
}

/* The atomic core's lines go where the compositor's wlr_log goes. */
__attribute__((format(printf, 2, 0)))
static void core_log(enum wla_log_level level, const char *fmt, va_list args)
{
	_wlr_vlog((enum wlr_log_importance)level, fmt, args);
}

static struct wlr_backend *backend_create(struct wl_display *display,
	const struct wla_config *config, struct wlr_session *seat)
{
	wla_log_set_func(core_log);
	struct wla_config cfg;
	if (config) {
		/* Checked exactly as the environment and config file are. */
		if (wla_config_validate(config) < 0) {
			return NULL;
		}
		cfg = *config;
	} else {
		wla_config_init(&cfg);
		if (wla_config_load_env(&cfg) < 0) {
			return NULL;
		}
	}
	struct wla_backend *backend = calloc(1, sizeof(*backend));
	if (!backend) {
		wlr_log(WLR_ERROR, "backend: out of memory");
		return NULL;
	}
	backend->display = display;
	backend->config = cfg;
	backend->gpio_provider = cfg.gpio_dry_run ? wla_dryrun_provider() : wla_gpiod_provider();
	wl_list_init(&backend->outputs);
	wl_list_init(&backend->fbs);
	wl_list_init(&backend->unplugs);
	/* The driver the configuration names, through its constructor only:
	 * the virtual display controller or a DRM card. */
	struct wl_event_loop *loop = wl_display_get_event_loop(display);
	struct wla_device *dev = cfg.driver == WLA_DRIVER_KMS ?
		create_kms_device(loop, display, &cfg, seat) : wla_vdc_device_create(loop, &cfg);
	if (!dev) {
		free(backend);
		return NULL;
	}
	backend->devices[backend->n_devices++] = dev;
	backend->input = wla_backend_create_input(backend, loop);
	if (!backend->input) {
		destroy_device(dev);
		free(backend);
		return NULL;
	}
	for (size_t d = 0; d < backend->n_devices; d++) {
		backend->devices[d]->listener = (struct wla_device_listener){
			.connector_added = handle_connector_added,
			.connector_removed = handle_connector_removed,
			.connector_link_bad = handle_connector_link_bad,
			.active = handle_device_active,
			.data = backend,
		};
	}
	wlr_backend_init(&backend->base, &backend_impl);
	backend->display_destroy.notify = handle_display_destroy;
	wl_display_add_destroy_listener(display, &backend->display_destroy);
	if (cfg.driver == WLA_DRIVER_KMS) {
		wlr_log(WLR_INFO, "backend: wlatomic on the DRM card %s", dev->name);
	} else {
		wlr_log(WLR_INFO, "backend: wlatomic on the virtual display controller, %zu "
			"output(s)", cfg.n_outputs);
	}
	return &backend->base;
}

WLA_EXPORT struct wlr_backend *wla_backend_create(struct wl_display *display,
	const struct wla_config *config)
{
	return backend_create(display, config, NULL);
}

WLA_EXPORT struct wlr_backend *wla_backend_create_with_session(struct wl_display *display,
	const struct wla_config *config, struct wlr_session *session)
{
	if (!session) {
		wlr_log(WLR_ERROR, "backend: create with session: the session is NULL (use "
			"wla_backend_create to have wlatomic make its own)");
		return NULL;
	}
	return backend_create(display, config, session);
}

WLA_EXPORT bool wla_backend_is_wla(struct wlr_backend *backend)
{
	return backend && backend->impl == &backend_impl;
}

WLA_EXPORT size_t wla_backend_buffer_locks(struct wlr_backend *wlr_backend)
{
	if (!wla_backend_is_wla(wlr_backend)) {
		return 0;
	}
	return wla_backend_from_wlr(wlr_backend)->buffer_locks;
}

WLA_EXPORT int wla_backend_plug_connector(struct wlr_backend *wlr_backend, const char *name,
	const struct wla_config_mode *modes, size_t n_modes)
{
	if (!wla_backend_is_wla(wlr_backend)) {
		wlr_log(WLR_ERROR, "hot-plug: not a wlatomic backend");
		return -EINVAL;
	}
	struct wla_backend *backend = wla_backend_from_wlr(wlr_backend);
	struct wla_device *dev = NULL;
	for (size_t d = 0; d < backend->n_devices && !dev; d++) {
		if (backend->devices[d]->hotplug_funcs) {
			dev = backend->devices[d];
		}
	}
	if (!dev) {
		wlr_log(WLR_ERROR, "hot-plug: connector %s: no device of this backend has "
			"virtual connectors", name);
		return -EINVAL;
	}
	for (size_t i = 0; i < n_modes; i++) {
		/* The same rules as a configured mode. */
		if (modes[i].width < 1 || modes[i].width > WLA_MODE_MAX_SIZE ||
				modes[i].height < 1 || modes[i].height > WLA_MODE_MAX_SIZE ||
				modes[i].refresh_mhz < WLA_MODE_MIN_REFRESH_MHZ ||
				modes[i].refresh_mhz > WLA_MODE_MAX_REFRESH_MHZ) {
			wlr_log(WLR_ERROR, "hot-plug: connector %s: mode %d is %" PRId32 "x%" PRId32
				"@%" PRId32 "mHz, outside 1..%d and %d..%d mHz", name, (int)i,
				modes[i].width, modes[i].height, modes[i].refresh_mhz,
				WLA_MODE_MAX_SIZE, WLA_MODE_MIN_REFRESH_MHZ, WLA_MODE_MAX_REFRESH_MHZ);
			return -EINVAL;
		}
	}
	return dev->hotplug_funcs->plug(dev, name, modes, n_modes);
}

static void handle_unplug_idle(void *data)
{
	struct wla_backend *backend = data;
	backend->unplug_idle = NULL;
	/* An output's destroy listener may destroy the backend. */
	wla_hold(&backend->hold);
	while (!wl_list_empty(&backend->unplugs) && !wla_doomed(&backend->hold)) {
		struct wla_unplug *u = wl_container_of(backend->unplugs.next, u, link);
		wl_list_remove(&u->link);
		/* Gone already (another unplug) is fine: nothing to do. */
		int ret = u->dev->hotplug_funcs->unplug(u->dev, u->name);
		if (ret < 0 && ret != -ENOENT) {
			wlr_log(WLR_ERROR, "hot-plug: device %s cannot unplug connector %s: %s",
				u->dev->name, u->name, strerror(-ret));
		}
		free(u);
	}
	wla_backend_release(backend);
}

static int defer_unplug(struct wla_backend *backend, struct wla_device *dev, const char *name)
{
	struct wla_unplug *u = calloc(1, sizeof(*u));
	if (!u) {
		wlr_log(WLR_ERROR, "hot-plug: connector %s: out of memory", name);
		return -ENOMEM;
	}
	u->dev = dev;
	snprintf(u->name, sizeof(u->name), "%s", name);
	if (!backend->unplug_idle) {
		struct wl_event_loop *loop = wl_display_get_event_loop(backend->display);
		backend->unplug_idle = wl_event_loop_add_idle(loop, handle_unplug_idle, backend);
		if (!backend->unplug_idle) {
			wlr_log(WLR_ERROR, "hot-plug: connector %s: cannot add an idle source",
				name);
			free(u);
			return -ENOMEM;
		}
	}
	wl_list_insert(backend->unplugs.prev, &u->link);
	wlr_log(WLR_DEBUG, "hot-plug: connector %s unplugged once its present event is over",
		name);
	return 0;
}

WLA_EXPORT int wla_backend_unplug_connector(struct wlr_backend *wlr_backend, const char *name)
{
	if (!wla_backend_is_wla(wlr_backend)) {
		wlr_log(WLR_ERROR, "hot-plug: not a wlatomic backend");
		return -EINVAL;
	}
	struct wla_backend *backend = wla_backend_from_wlr(wlr_backend);
	struct wla_output *out;
	wl_list_for_each(out, &backend->outputs, link) {
		if (wla_held(&out->hold) && strcmp(out->conn->name, name) == 0) {
			/* Inside this output's present event: wlroots' emission
			 * goes on over the output's listeners once we return. */
			return defer_unplug(backend, out->dev, name);
		}
	}
	for (size_t d = 0; d < backend->n_devices; d++) {
		struct wla_device *dev = backend->devices[d];
		if (!dev->hotplug_funcs) {
			continue;
		}
		int ret = dev->hotplug_funcs->unplug(dev, name);
		if (ret != -ENOENT) {
			if (ret < 0) {
				wlr_log(WLR_ERROR, "hot-plug: device %s cannot unplug connector %s: "
					"%s", dev->name, name, strerror(-ret));
			}
			return ret;
		}
	}
	wlr_log(WLR_ERROR, "hot-plug: no connector named %s", name);
	return -ENOENT;
}

WLA_EXPORT int wla_backend_break_link(struct wlr_backend *wlr_backend, const char *name)
{
	if (!wla_backend_is_wla(wlr_backend)) {
		wlr_log(WLR_ERROR, "link-status: not a wlatomic backend");
		return -EINVAL;
	}
	struct wla_backend *backend = wla_backend_from_wlr(wlr_backend);
	for (size_t d = 0; d < backend->n_devices; d++) {
		struct wla_device *dev = backend->devices[d];
		if (dev->hotplug_funcs && dev->hotplug_funcs->link_bad &&
				dev->hotplug_funcs->link_bad(dev, name) == 0) {
			return 0;
		}
	}
	wlr_log(WLR_ERROR, "link-status: no virtual connector named %s", name);
	return -ENOENT;
}
