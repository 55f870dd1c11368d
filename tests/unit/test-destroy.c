/*
 * A compositor may destroy the backend from any listener it has: of an
 * output's destroy (the output unplugged, or destroyed by the compositor
 * itself), of a capture's callback (run from the VDC's vblank), of a
 * hot-plugged output's new_output. Whatever the backend and its driver were
 * doing goes on over memory that is still theirs (include/backend/hold.h),
 * every buffer is released, and each wlr_output is destroyed once. ASan
 * found a use-after-free or a second destroy in each before the holds.
 */
#include <drm_fourcc.h>
#include <stdlib.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_output.h>
#include <wlatomic/backend.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include "harness.h"
#include "lib/backend.h"
#include "test-buffer.h"

#define W 64
#define H 48
#define MAX_OUTPUTS 4

enum destroy_in {
	DESTROY_NOWHERE,
	DESTROY_IN_OUTPUT_DESTROY,
	DESTROY_IN_CAPTURE,
	DESTROY_IN_NEW_OUTPUT,
};

struct df;

struct df_output {
	struct df *f;
	struct wlr_output *output;
	struct wl_listener destroy;
	int destroys;
};

struct df {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wl_listener new_output;
	struct df_output outputs[MAX_OUTPUTS];
	size_t n_outputs;
	enum destroy_in destroy_in;
	struct test_buffer *buf;
	bool buf_gone;
	int captures;
};

static void destroy_backend(struct df *f)
{
	f->destroy_in = DESTROY_NOWHERE;
	wl_list_remove(&f->new_output.link);
	wl_list_init(&f->new_output.link);
	struct wlr_backend *backend = f->backend;
	f->backend = NULL;
	wlr_backend_destroy(backend);
}

static void handle_output_destroy(struct wl_listener *listener, void *data)
{
	struct df_output *o = wl_container_of(listener, o, destroy);
	o->destroys++;
	wl_list_remove(&o->destroy.link);
	o->output = NULL;
	if (o->f->destroy_in == DESTROY_IN_OUTPUT_DESTROY) {
		destroy_backend(o->f);
	}
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	struct df *f = wl_container_of(listener, f, new_output);
	if (f->n_outputs == MAX_OUTPUTS) {
		abort();
	}
	struct df_output *o = &f->outputs[f->n_outputs++];
	o->f = f;
	o->output = data;
	o->destroy.notify = handle_output_destroy;
	wl_signal_add(&o->output->events.destroy, &o->destroy);
	if (f->destroy_in == DESTROY_IN_NEW_OUTPUT) {
		destroy_backend(f);
	}
}

static bool df_init(struct df *f)
{
	memset(f, 0, sizeof(*f));
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
	cfg.outputs[0].n_modes = 1;
	cfg.outputs[1] = cfg.outputs[0];
	snprintf(cfg.outputs[1].name, sizeof(cfg.outputs[1].name), "Virtual-2");
	cfg.n_outputs = 2;
	f->new_output.notify = handle_new_output;
	f->backend = test_backend_create(&f->display, &f->loop, &cfg, &f->new_output);
	if (!f->backend) {
		return false;
	}
	f->buf = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xff203040, &f->buf_gone);
	return wlr_backend_start(f->backend) && f->n_outputs == 2;
}

/* On, showing the test's buffer: a frame in flight when the backend goes. */
static bool enable(struct df_output *o)
{
	wlr_output_set_mode(o->output, wlr_output_preferred_mode(o->output));
	wlr_output_enable(o->output, true);
	wlr_output_attach_buffer(o->output, &o->f->buf->base);
	return wlr_output_commit(o->output);
}

/* After the backend went: the loop runs into nothing of it, the buffer is
 * released, and each output was destroyed exactly once. */
static void df_finish(struct df *f)
{
	CHECK(f->backend == NULL);
	for (int i = 0; i < 5; i++) {
		wl_event_loop_dispatch(f->loop, 10);
	}
	wlr_buffer_drop(&f->buf->base);
	CHECK(f->buf_gone);
	for (size_t i = 0; i < f->n_outputs; i++) {
		CHECK_INT(f->outputs[i].destroys, 1);
	}
	wl_list_remove(&f->new_output.link);
	wl_display_destroy(f->display);
}

static void an_output_destroy_listener_may_destroy_the_backend_on_unplug(void)
{
	struct df f;
	CHECK(df_init(&f));
	CHECK(enable(&f.outputs[0]) && enable(&f.outputs[1]));
	f.destroy_in = DESTROY_IN_OUTPUT_DESTROY;
	CHECK_INT(wla_backend_unplug_connector(f.backend, "Virtual-1"), 0);
	df_finish(&f);
}

static void an_output_destroy_listener_may_destroy_the_backend(void)
{
	struct df f;
	CHECK(df_init(&f));
	CHECK(enable(&f.outputs[0]) && enable(&f.outputs[1]));
	f.destroy_in = DESTROY_IN_OUTPUT_DESTROY;
	wlr_output_destroy(f.outputs[1].output);
	df_finish(&f);
}

static void handle_capture(struct wla_capture *capture, const struct wla_image *image,
	uint64_t seq, void *data)
{
	struct df *f = data;
	f->captures++;
	if (f->destroy_in == DESTROY_IN_CAPTURE) {
		destroy_backend(f);
	}
}

/* The capture is served from the VDC's vblank, with the other output's
 * frame still to be looked at and events to deliver. */
static void a_capture_callback_may_destroy_the_backend(void)
{
	struct df f;
	CHECK(df_init(&f));
	CHECK(enable(&f.outputs[0]) && enable(&f.outputs[1]));
	f.destroy_in = DESTROY_IN_CAPTURE;
	CHECK(wla_output_capture(f.outputs[0].output, handle_capture, &f) != NULL);
	CHECK(HARNESS_WAIT_UNTIL(f.loop, f.backend == NULL, 2000));
	CHECK_INT(f.captures, 1);
	df_finish(&f);
}

/* A connector plugged in from outside (the control socket's plug, a
 * monitor): the VDC goes on after its listener was told. */
static void a_new_output_listener_may_destroy_the_backend_on_hot_plug(void)
{
	struct df f;
	CHECK(df_init(&f));
	CHECK(enable(&f.outputs[0]));
	f.destroy_in = DESTROY_IN_NEW_OUTPUT;
	struct wla_config_mode modes[] = { { W, H, 60000 } };
	wla_backend_plug_connector(f.backend, "HP-1", modes, 1);
	CHECK_INT(f.n_outputs, 3);
	df_finish(&f);
}

int main(void)
{
	harness_init();
	RUN_TEST(an_output_destroy_listener_may_destroy_the_backend_on_unplug);
	RUN_TEST(an_output_destroy_listener_may_destroy_the_backend);
	RUN_TEST(a_capture_callback_may_destroy_the_backend);
	RUN_TEST(a_new_output_listener_may_destroy_the_backend_on_hot_plug);
	HARNESS_EXIT();
}
