/*
 * wlr_backend implementation: configuration, the VDC device, outputs.
 */
#include <assert.h>
#include <stdlib.h>
#include <time.h>
#include <wlr/util/log.h>
#include <wlatomic/backend.h>
#include "backend/wlr.h"
#include "util.h"

static const struct wlr_backend_impl backend_impl;

struct wla_backend *wla_backend_from_wlr(struct wlr_backend *wlr_backend)
{
	assert(wlr_backend->impl == &backend_impl);
	struct wla_backend *backend = wl_container_of(wlr_backend, backend, base);
	return backend;
}

static bool backend_start(struct wlr_backend *wlr_backend)
{
	struct wla_backend *backend = wla_backend_from_wlr(wlr_backend);
	if (backend->started) {
		return true;
	}
	backend->started = true;
	for (size_t i = 0; i < backend->vdc->n_outputs; i++) {
		if (!wla_output_create(backend, backend->vdc->outputs[i])) {
			return false;
		}
	}
	return true;
}

static void backend_destroy(struct wlr_backend *wlr_backend)
{
	if (!wlr_backend) {
		return;
	}
	struct wla_backend *backend = wla_backend_from_wlr(wlr_backend);
	wl_list_remove(&backend->display_destroy.link);
	struct wla_output *out, *tmp;
	wl_list_for_each_safe(out, tmp, &backend->outputs, link) {
		wlr_output_destroy(&out->base);
	}
	wlr_backend_finish(wlr_backend);
	wla_vdc_destroy(backend->vdc);
	if (backend->buffer_locks) {
		wlr_log(WLR_ERROR, "backend: %zu buffer locks still held at destroy",
			backend->buffer_locks);
	}
	free(backend);
}

static clockid_t backend_get_presentation_clock(struct wlr_backend *wlr_backend)
{
	return CLOCK_MONOTONIC;
}

static int backend_get_drm_fd(struct wlr_backend *wlr_backend)
{
	return -1;
}

static uint32_t backend_get_buffer_caps(struct wlr_backend *wlr_backend)
{
	return WLR_BUFFER_CAP_DATA_PTR | WLR_BUFFER_CAP_SHM;
}

static const struct wlr_backend_impl backend_impl = {
	.start = backend_start,
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

WLA_EXPORT struct wlr_backend *wla_backend_create(struct wl_display *display,
	const struct wla_config *config)
{
	struct wla_config cfg;
	if (config) {
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
	backend->vdc = wla_vdc_create(wl_display_get_event_loop(display), &cfg, NULL, NULL);
	if (!backend->vdc) {
		free(backend);
		return NULL;
	}
	wlr_backend_init(&backend->base, &backend_impl);
	backend->display_destroy.notify = handle_display_destroy;
	wl_display_add_destroy_listener(display, &backend->display_destroy);
	wlr_log(WLR_INFO, "backend: wlatomic on the virtual display controller, %zu output(s)",
		cfg.n_outputs);
	return &backend->base;
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
