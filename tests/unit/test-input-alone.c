/*
 * backend/input alone: built from its own sources and the core only (see
 * tests/unit/meson.build), with a test host instead of the glue, so that a
 * call from the leaf into the backend would not link. Made, started and
 * driven through include/backend/input.h, it announces its devices to the
 * host, maps positions with the sizes the host tells, refuses outputs the
 * host calls off or does not know, and lets an output's pointer go with it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <wayland-server-core.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_pointer.h>
#include <wlr/types/wlr_touch.h>
#include "backend/input.h"
#include "harness.h"

#define MAX_DEVICES 8

struct test_output {
	char name[16];
	struct wla_input_output info;
};

struct announced {
	struct wlr_input_device *dev;
	bool destroyed;
	struct wl_listener destroy, motion_absolute, touch_down;
	struct test_host *host;
};

/* What the glue is to input, played by the test: two outputs it
 * describes, the devices announced and the positions they sent. */
struct test_host {
	struct test_output outputs[2];
	struct announced devices[MAX_DEVICES];
	int n_devices;
	int n_absolute, n_touch_down;
	double x, y; /* of the last one */
};

static void handle_destroy(struct wl_listener *l, void *data)
{
	struct announced *a = wl_container_of(l, a, destroy);
	a->destroyed = true;
	wl_list_remove(&a->destroy.link);
	if (a->motion_absolute.notify) {
		wl_list_remove(&a->motion_absolute.link);
	}
	if (a->touch_down.notify) {
		wl_list_remove(&a->touch_down.link);
	}
}

static void handle_motion_absolute(struct wl_listener *l, void *data)
{
	struct announced *a = wl_container_of(l, a, motion_absolute);
	struct wlr_event_pointer_motion_absolute *ev = data;
	a->host->n_absolute++;
	a->host->x = ev->x;
	a->host->y = ev->y;
}

static void handle_touch_down(struct wl_listener *l, void *data)
{
	struct announced *a = wl_container_of(l, a, touch_down);
	struct wlr_event_touch_down *ev = data;
	a->host->n_touch_down++;
	a->host->x = ev->x;
	a->host->y = ev->y;
}

static void host_announce(void *data, struct wlr_input_device *dev)
{
	struct test_host *h = data;
	if (h->n_devices == MAX_DEVICES) {
		return;
	}
	struct announced *a = &h->devices[h->n_devices++];
	a->dev = dev;
	a->host = h;
	a->destroy.notify = handle_destroy;
	wl_signal_add(&dev->events.destroy, &a->destroy);
	if (dev->type == WLR_INPUT_DEVICE_POINTER) {
		a->motion_absolute.notify = handle_motion_absolute;
		wl_signal_add(&dev->pointer->events.motion_absolute, &a->motion_absolute);
	} else if (dev->type == WLR_INPUT_DEVICE_TOUCH) {
		a->touch_down.notify = handle_touch_down;
		wl_signal_add(&dev->touch->events.down, &a->touch_down);
	}
}

static bool host_get_output(void *data, const char *name, struct wla_input_output *info)
{
	struct test_host *h = data;
	for (size_t i = 0; i < 2; i++) {
		if (strcmp(h->outputs[i].name, name) == 0) {
			*info = h->outputs[i].info;
			return true;
		}
	}
	return false;
}

static const char *host_output_name(void *data, struct wla_output *out)
{
	return ((struct test_output *)(void *)out)->name;
}

static const char *host_first_output(void *data)
{
	return ((struct test_host *)data)->outputs[0].name;
}

static struct announced *announced_named(struct test_host *h, const char *name)
{
	for (int i = 0; i < h->n_devices; i++) {
		if (!h->devices[i].destroyed && strcmp(h->devices[i].dev->name, name) == 0) {
			return &h->devices[i];
		}
	}
	return NULL;
}

static int perform(struct wla_input *input, const struct wla_input_action *act)
{
	char err[WLA_INPUT_ERROR_MAX];
	int ret = wla_input_perform(input, act, err, sizeof(err));
	if (ret < 0) {
		wlr_log(WLR_ERROR, "test: perform: %s", err);
	}
	return ret;
}

static void the_input_leaf_runs_on_a_test_host(void)
{
	struct test_host h = {
		.outputs = {
			{ "Test-1", { .width = 400, .height = 200, .enabled = true, .shows = true } },
			{ "Test-2", { .width = 0, .height = 0, .enabled = false, .shows = false } },
		},
	};
	const struct wla_input_host host = {
		.announce = host_announce,
		.get_output = host_get_output,
		.output_name = host_output_name,
		.first_output = host_first_output,
		.data = &h,
	};
	struct wla_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.virtual_input = WLA_VIRTUAL_INPUT_ON;
	snprintf(cfg.keyboard_layout, sizeof(cfg.keyboard_layout), "us");
	snprintf(cfg.virtual_touch, sizeof(cfg.virtual_touch), "Test-1");
	struct wl_event_loop *loop = wl_event_loop_create();
	struct wla_input *input = wla_input_create(&host, loop, &cfg);
	CHECK(input != NULL);
	if (!input) {
		wl_event_loop_destroy(loop);
		return;
	}
	/* Announced at start, not before. */
	CHECK_INT(h.n_devices, 0);
	wla_input_start(input);
	CHECK_INT(h.n_devices, 3);
	CHECK(announced_named(&h, "wlatomic virtual keyboard") != NULL);
	CHECK(announced_named(&h, "wlatomic virtual pointer") != NULL);
	CHECK(announced_named(&h, "wlatomic virtual touch") != NULL);

	/* An output of the host's brings its absolute pointer, named by the
	 * host. */
	struct wla_output *out1 = (struct wla_output *)(void *)&h.outputs[0];
	wla_input_output_added(input, out1);
	CHECK_INT(h.n_devices, 4);
	struct announced *abs = announced_named(&h, "wlatomic virtual pointer Test-1");
	CHECK(abs && abs->dev->output_name && strcmp(abs->dev->output_name, "Test-1") == 0);

	/* Positions are normalised with the size the host tells. */
	struct wla_input_action move = { .type = WLA_INPUT_MOVE, .x = 100, .y = 50 };
	snprintf(move.output, sizeof(move.output), "Test-1");
	CHECK_INT(perform(input, &move), 0);
	CHECK_INT(h.n_absolute, 1);
	CHECK(fabs(h.x - 0.25) < 1e-9 && fabs(h.y - 0.25) < 1e-9);
	struct wla_input_action touch = { .type = WLA_INPUT_TOUCH,
		.touch = WLA_INPUT_TOUCH_DOWN, .touch_id = 1, .x = 200, .y = 150 };
	CHECK_INT(perform(input, &touch), 0);
	CHECK_INT(h.n_touch_down, 1);
	CHECK(fabs(h.x - 0.5) < 1e-9 && fabs(h.y - 0.75) < 1e-9);

	/* An output the host calls off, and one it does not know. */
	harness_log_clear();
	snprintf(move.output, sizeof(move.output), "Test-2");
	CHECK_INT(perform(input, &move), -ENODEV);
	CHECK_LOGGED("output Test-2 is off");
	snprintf(move.output, sizeof(move.output), "Nope-1");
	CHECK_INT(perform(input, &move), -ENOENT);
	CHECK_LOGGED("no output named Nope-1");
	CHECK_INT(h.n_absolute, 1);

	/* The output goes: its pointer with it; then everything with input. */
	wla_input_output_removed(input, out1);
	CHECK(abs && abs->destroyed);
	wla_input_destroy(input);
	for (int i = 0; i < h.n_devices; i++) {
		CHECK(h.devices[i].destroyed);
	}
	wl_event_loop_destroy(loop);
}

int main(void)
{
	harness_init();
	RUN_TEST(the_input_leaf_runs_on_a_test_host);
	HARNESS_EXIT();
}
