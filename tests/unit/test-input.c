/*
 * The virtual input devices of a wlatomic backend, seen as a compositor
 * sees them: announced through new_input, driven by the public API,
 * input lines and scripts, and gone with their output or the backend.
 */
#include <errno.h>
#include <linux/input-event-codes.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <math.h>
#include <time.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_keyboard.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_pointer.h>
#include <wlr/types/wlr_touch.h>
#include <wlatomic/backend.h>
#include <wlatomic/config.h>
#include <wlatomic/input.h>
#include "harness.h"
#include "lib/backend.h"

#define MAX_DEVICES 8
#define MAX_EVENTS 256

struct event {
	char what[16];
	const char *device;
	uint32_t time, code, state;
	double x, y;
	int32_t id;
};

struct fixture;

struct device {
	struct fixture *f;
	struct wlr_input_device *dev;
	bool destroyed;
	struct wl_listener destroy, key, motion, motion_absolute, button, axis, frame,
		touch_down, touch_up, touch_motion, touch_frame;
};

struct fixture {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wl_listener new_input;
	struct device devices[MAX_DEVICES];
	int n_devices;
	struct event events[MAX_EVENTS];
	int n_events;
	/* A listener that unplugs Virtual-1 on the next absolute motion. */
	bool unplug_on_motion;
	bool destroy_backend_on_button, destroy_backend_on_key;
	int script_done, script_status;
	char script_message[256];
};

static struct event *add_event(struct fixture *f, const char *what, struct wlr_input_device *dev)
{
	if (f->n_events == MAX_EVENTS) {
		return NULL;
	}
	struct event *e = &f->events[f->n_events++];
	memset(e, 0, sizeof(*e));
	snprintf(e->what, sizeof(e->what), "%s", what);
	e->device = dev ? dev->name : NULL;
	return e;
}

static void handle_key(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, key);
	struct wlr_event_keyboard_key *ev = data;
	struct event *e = add_event(d->f, "key", d->dev);
	if (e) {
		e->time = ev->time_msec;
		e->code = ev->keycode;
		e->state = ev->state;
	}
	if (d->f->destroy_backend_on_key) {
		d->f->destroy_backend_on_key = false;
		wlr_backend_destroy(d->f->backend);
		d->f->backend = NULL;
	}
}

static void handle_motion(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, motion);
	struct wlr_event_pointer_motion *ev = data;
	struct event *e = add_event(d->f, "motion", d->dev);
	if (e) {
		e->x = ev->delta_x;
		e->y = ev->delta_y;
		e->time = ev->time_msec;
	}
}

static void handle_motion_absolute(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, motion_absolute);
	struct wlr_event_pointer_motion_absolute *ev = data;
	struct event *e = add_event(d->f, "absolute", d->dev);
	if (e) {
		e->x = ev->x;
		e->y = ev->y;
	}
	if (d->f->unplug_on_motion) {
		d->f->unplug_on_motion = false;
		wla_backend_unplug_connector(d->f->backend, "Virtual-1");
	}
}

static void handle_button(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, button);
	struct wlr_event_pointer_button *ev = data;
	struct event *e = add_event(d->f, "button", d->dev);
	if (e) {
		e->code = ev->button;
		e->state = ev->state;
		e->time = ev->time_msec;
	}
	if (d->f->destroy_backend_on_button) {
		d->f->destroy_backend_on_button = false;
		wlr_backend_destroy(d->f->backend);
		d->f->backend = NULL;
	}
}

static void handle_axis(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, axis);
	struct wlr_event_pointer_axis *ev = data;
	struct event *e = add_event(d->f, "axis", d->dev);
	if (e) {
		e->x = ev->delta;
		e->code = ev->orientation;
	}
}

static void handle_frame(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, frame);
	add_event(d->f, "frame", d->dev);
}

static void handle_touch_down(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, touch_down);
	struct wlr_event_touch_down *ev = data;
	struct event *e = add_event(d->f, "touch-down", d->dev);
	if (e) {
		e->time = ev->time_msec;
		e->id = ev->touch_id;
		e->x = ev->x;
		e->y = ev->y;
	}
}

static void handle_touch_motion(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, touch_motion);
	struct wlr_event_touch_motion *ev = data;
	struct event *e = add_event(d->f, "touch-motion", d->dev);
	if (e) {
		e->id = ev->touch_id;
		e->x = ev->x;
		e->y = ev->y;
	}
}

static void handle_touch_up(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, touch_up);
	struct wlr_event_touch_up *ev = data;
	struct event *e = add_event(d->f, "touch-up", d->dev);
	if (e) {
		e->id = ev->touch_id;
	}
}

static void handle_touch_frame(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, touch_frame);
	add_event(d->f, "touch-frame", d->dev);
}

static void unlisten(struct device *d)
{
	wl_list_remove(&d->destroy.link);
	switch (d->dev->type) {
	case WLR_INPUT_DEVICE_KEYBOARD:
		wl_list_remove(&d->key.link);
		break;
	case WLR_INPUT_DEVICE_POINTER:
		wl_list_remove(&d->motion.link);
		wl_list_remove(&d->motion_absolute.link);
		wl_list_remove(&d->button.link);
		wl_list_remove(&d->axis.link);
		wl_list_remove(&d->frame.link);
		break;
	case WLR_INPUT_DEVICE_TOUCH:
		wl_list_remove(&d->touch_down.link);
		wl_list_remove(&d->touch_up.link);
		wl_list_remove(&d->touch_motion.link);
		wl_list_remove(&d->touch_frame.link);
		break;
	default:
		break;
	}
}

static void handle_device_destroy(struct wl_listener *l, void *data)
{
	struct device *d = wl_container_of(l, d, destroy);
	unlisten(d);
	d->destroyed = true;
}

static void listen_to(struct wl_listener *l, struct wl_signal *s, wl_notify_func_t fn)
{
	l->notify = fn;
	wl_signal_add(s, l);
}

static void handle_new_input(struct wl_listener *l, void *data)
{
	struct fixture *f = wl_container_of(l, f, new_input);
	struct wlr_input_device *dev = data;
	if (f->n_devices == MAX_DEVICES) {
		return;
	}
	struct device *d = &f->devices[f->n_devices++];
	d->f = f;
	d->dev = dev;
	listen_to(&d->destroy, &dev->events.destroy, handle_device_destroy);
	switch (dev->type) {
	case WLR_INPUT_DEVICE_KEYBOARD:
		listen_to(&d->key, &dev->keyboard->events.key, handle_key);
		break;
	case WLR_INPUT_DEVICE_POINTER:
		listen_to(&d->motion, &dev->pointer->events.motion, handle_motion);
		listen_to(&d->motion_absolute, &dev->pointer->events.motion_absolute,
			handle_motion_absolute);
		listen_to(&d->button, &dev->pointer->events.button, handle_button);
		listen_to(&d->axis, &dev->pointer->events.axis, handle_axis);
		listen_to(&d->frame, &dev->pointer->events.frame, handle_frame);
		break;
	case WLR_INPUT_DEVICE_TOUCH:
		listen_to(&d->touch_down, &dev->touch->events.down, handle_touch_down);
		listen_to(&d->touch_up, &dev->touch->events.up, handle_touch_up);
		listen_to(&d->touch_motion, &dev->touch->events.motion, handle_touch_motion);
		listen_to(&d->touch_frame, &dev->touch->events.frame, handle_touch_frame);
		break;
	default:
		break;
	}
}

static void fixture_finish(struct fixture *f)
{
	wl_list_remove(&f->new_input.link);
	if (f->backend) {
		wlr_backend_destroy(f->backend);
	}
	wl_display_destroy(f->display);
}

static struct device *device_named(struct fixture *f, const char *name)
{
	for (int i = 0; i < f->n_devices; i++) {
		if (!f->devices[i].destroyed && strcmp(f->devices[i].dev->name, name) == 0) {
			return &f->devices[i];
		}
	}
	return NULL;
}

static uint32_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}

static void no_touch(struct wla_config *cfg)
{
	(void)cfg;
}

static void with_touch(struct wla_config *cfg)
{
	snprintf(cfg->virtual_touch, sizeof(cfg->virtual_touch), "Virtual-1");
}

static void input_off(struct wla_config *cfg)
{
	cfg->virtual_input = WLA_VIRTUAL_INPUT_OFF;
}

static void german(struct wla_config *cfg)
{
	snprintf(cfg->keyboard_layout, sizeof(cfg->keyboard_layout), "de");
}

/* Outputs of the VDC are enabled by a compositor; the tests do it. */
static struct wlr_output *the_output;
static struct wl_listener new_output;
static void handle_new_output(struct wl_listener *l, void *data)
{
	the_output = data;
}

static char control_path[108];

static void with_control(struct wla_config *cfg)
{
	snprintf(cfg->control, sizeof(cfg->control), "%s", control_path);
}

static bool start(struct fixture *f, void (*tweak)(struct wla_config *cfg))
{
	the_output = NULL;
	memset(f, 0, sizeof(*f));
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ 200, 100, 60000 };
	snprintf(cfg.control, sizeof(cfg.control), "off");
	tweak(&cfg);
	f->backend = test_backend_create(&f->display, &f->loop, &cfg, NULL);
	if (!f->backend) {
		return false;
	}
	f->new_input.notify = handle_new_input;
	wl_signal_add(&f->backend->events.new_input, &f->new_input);
	new_output.notify = handle_new_output;
	wl_signal_add(&f->backend->events.new_output, &new_output);
	bool ok = wlr_backend_start(f->backend) && the_output;
	wl_list_remove(&new_output.link);
	if (ok) {
		wlr_output_set_mode(the_output, wlr_output_preferred_mode(the_output));
		wlr_output_enable(the_output, true);
		ok = wlr_output_commit(the_output);
	}
	return ok;
}

/* ---- Tests ---- */

static void devices_are_announced_at_start(void)
{
	struct fixture f;
	CHECK(start(&f, with_touch));
	CHECK_INT(f.n_devices, 4);
	struct device *kb = device_named(&f, "wlatomic virtual keyboard");
	struct device *ptr = device_named(&f, "wlatomic virtual pointer");
	struct device *abs = device_named(&f, "wlatomic virtual pointer Virtual-1");
	struct device *touch = device_named(&f, "wlatomic virtual touch");
	CHECK(kb && kb->dev->type == WLR_INPUT_DEVICE_KEYBOARD);
	CHECK(kb && kb->dev->keyboard->keymap != NULL);
	CHECK(ptr && ptr->dev->type == WLR_INPUT_DEVICE_POINTER && !ptr->dev->output_name);
	CHECK(abs && abs->dev->output_name && strcmp(abs->dev->output_name, "Virtual-1") == 0);
	CHECK(touch && touch->dev->type == WLR_INPUT_DEVICE_TOUCH &&
		strcmp(touch->dev->output_name, "Virtual-1") == 0);
	fixture_finish(&f);
	/* Every device was destroyed, with its destroy signal, with the backend. */
	for (int i = 0; i < f.n_devices; i++) {
		CHECK(f.devices[i].destroyed);
	}
}

static void no_devices_when_virtual_input_is_off(void)
{
	struct fixture f;
	CHECK(start(&f, input_off));
	CHECK_INT(f.n_devices, 0);
	harness_log_clear();
	CHECK_INT(wla_input_key(f.backend, KEY_A, true), -ENODEV);
	CHECK_LOGGED("input: key: the virtual input devices are off");
	fixture_finish(&f);
}

static void a_key_press_carries_its_code_and_a_monotonic_time(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	uint32_t before = now_ms();
	CHECK_INT(wla_input_key(f.backend, KEY_A, true), 0);
	CHECK_INT(wla_input_key(f.backend, KEY_A, false), 0);
	uint32_t after = now_ms();
	CHECK_INT(f.n_events, 2);
	CHECK(strcmp(f.events[0].what, "key") == 0);
	CHECK_INT(f.events[0].code, KEY_A);
	CHECK_INT(f.events[0].state, WL_KEYBOARD_KEY_STATE_PRESSED);
	CHECK_INT(f.events[1].state, WL_KEYBOARD_KEY_STATE_RELEASED);
	CHECK(f.events[0].time >= before && f.events[0].time <= after);
	harness_log_clear();
	CHECK_INT(wla_input_key(f.backend, KEY_MAX + 1, true), -EINVAL);
	CHECK_LOGGED("key 768: beyond KEY_MAX");
	fixture_finish(&f);
}

static void typing_holds_shift_for_capitals(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	CHECK_INT(wla_input_type(f.backend, "aB!"), 0);
	/* a: down up; B: shift down, b down, b up, shift up; !: shift, 1, 1, shift. */
	static const uint32_t codes[] = { KEY_A, KEY_A, KEY_LEFTSHIFT, KEY_B, KEY_B,
		KEY_LEFTSHIFT, KEY_LEFTSHIFT, KEY_1, KEY_1, KEY_LEFTSHIFT };
	static const uint32_t states[] = { 1, 0, 1, 1, 0, 0, 1, 1, 0, 0 };
	CHECK_INT(f.n_events, 10);
	for (int i = 0; i < 10 && i < f.n_events; i++) {
		CHECK_INT(f.events[i].code, codes[i]);
		CHECK_INT(f.events[i].state, states[i]);
	}
	fixture_finish(&f);
}

static void text_the_keymap_cannot_make_is_refused_whole(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	harness_log_clear();
	CHECK_INT(wla_input_type(f.backend, "ab\xe2\x98\x83"), -EINVAL);
	CHECK_LOGGED("character 3 (U+2603) cannot be typed");
	CHECK_INT(wla_input_type(f.backend, "a\xff"), -EINVAL);
	CHECK_LOGGED("not UTF-8");
	/* Overlong NUL, a surrogate, past U+10FFFF: refused, not typed. */
	CHECK_INT(wla_input_type(f.backend, "a\xc0\x80" "b"), -EINVAL);
	CHECK_INT(wla_input_type(f.backend, "\xed\xa0\x80"), -EINVAL);
	CHECK_INT(wla_input_type(f.backend, "\xf4\x90\x80\x80"), -EINVAL);
	CHECK_INT(f.n_events, 0);
	fixture_finish(&f);
}

static void the_keyboard_layout_decides_what_typing_presses(void)
{
	struct fixture f;
	CHECK(start(&f, german));
	/* On a German keyboard z and y trade places, and ß has its own key. */
	CHECK_INT(wla_input_type(f.backend, "z\xc3\x9f"), 0);
	CHECK_INT(f.n_events, 4);
	CHECK_INT(f.events[0].code, KEY_Y);
	CHECK_INT(f.events[2].code, KEY_MINUS);
	fixture_finish(&f);
}

static void absolute_moves_are_normalised_to_their_output(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	CHECK_INT(wla_input_pointer_move(f.backend, "Virtual-1", 50, 25), 0);
	CHECK_INT(f.n_events, 2);
	CHECK(strcmp(f.events[0].what, "absolute") == 0);
	CHECK(strcmp(f.events[0].device, "wlatomic virtual pointer Virtual-1") == 0);
	CHECK(fabs(f.events[0].x - 0.25) < 1e-9 && fabs(f.events[0].y - 0.25) < 1e-9);
	CHECK(strcmp(f.events[1].what, "frame") == 0);
	harness_log_clear();
	CHECK_INT(wla_input_pointer_move(f.backend, "Virtual-1", 200, 5), -EINVAL);
	CHECK_LOGGED("input: move: position 200,5 is off output Virtual-1 (200x100)");
	CHECK_INT(wla_input_pointer_move(f.backend, "Virtual-1", -1, 5), -EINVAL);
	CHECK_INT(wla_input_pointer_move(f.backend, "Virtual-1", NAN, 5), -EINVAL);
	CHECK_INT(wla_input_pointer_move(f.backend, "HDMI-A-1", 1, 1), -ENOENT);
	CHECK_LOGGED("no output named HDMI-A-1");
	CHECK_INT(f.n_events, 2);
	fixture_finish(&f);
}

static void relative_motion_buttons_and_scrolls_come_from_the_pointer(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	CHECK_INT(wla_input_pointer_move_by(f.backend, 3, -4), 0);
	CHECK_INT(wla_input_pointer_button(f.backend, BTN_LEFT, true), 0);
	CHECK_INT(wla_input_pointer_button(f.backend, BTN_LEFT, false), 0);
	CHECK_INT(wla_input_pointer_axis(f.backend, false, 15), 0);
	CHECK_INT(f.n_events, 8);
	CHECK(strcmp(f.events[0].what, "motion") == 0 && f.events[0].x == 3 && f.events[0].y == -4);
	CHECK(strcmp(f.events[2].what, "button") == 0 && f.events[2].code == BTN_LEFT &&
		f.events[2].state == WLR_BUTTON_PRESSED);
	CHECK(strcmp(f.events[4].what, "button") == 0 && f.events[4].state == WLR_BUTTON_RELEASED);
	CHECK(strcmp(f.events[6].what, "axis") == 0 && f.events[6].x == 15 &&
		f.events[6].code == WLR_AXIS_ORIENTATION_VERTICAL);
	for (int i = 0; i < f.n_events; i++) {
		CHECK(strcmp(f.events[i].device, "wlatomic virtual pointer") == 0);
	}
	harness_log_clear();
	CHECK_INT(wla_input_pointer_button(f.backend, KEY_A, true), -EINVAL);
	CHECK_LOGGED("not a pointer button");
	CHECK_INT(wla_input_pointer_move_by(f.backend, INFINITY, 0), -EINVAL);
	CHECK_INT(f.n_events, 8);
	fixture_finish(&f);
}

static void touch_points_go_down_move_and_up_once(void)
{
	struct fixture f;
	CHECK(start(&f, with_touch));
	CHECK_INT(wla_input_touch_down(f.backend, 7, 100, 50), 0);
	CHECK_INT(wla_input_touch_motion(f.backend, 7, 150, 75), 0);
	CHECK_INT(wla_input_touch_up(f.backend, 7), 0);
	CHECK_INT(f.n_events, 6);
	CHECK(strcmp(f.events[0].what, "touch-down") == 0 && f.events[0].id == 7);
	CHECK(fabs(f.events[0].x - 0.5) < 1e-9 && fabs(f.events[0].y - 0.5) < 1e-9);
	CHECK(strcmp(f.events[1].what, "touch-frame") == 0);
	CHECK(fabs(f.events[2].x - 0.75) < 1e-9);
	CHECK(strcmp(f.events[4].what, "touch-up") == 0 && f.events[4].id == 7);
	harness_log_clear();
	CHECK_INT(wla_input_touch_up(f.backend, 7), -EINVAL);
	CHECK_LOGGED("touch point 7 is not down");
	CHECK_INT(wla_input_touch_down(f.backend, 1, 5, 5), 0);
	CHECK_INT(wla_input_touch_down(f.backend, 1, 5, 5), -EBUSY);
	CHECK_LOGGED("touch point 1 is down already");
	CHECK_INT(wla_input_touch_down(f.backend, 2, 5, 500), -EINVAL);
	CHECK_INT(wla_input_touch_down(f.backend, -1, 5, 5), -EINVAL);
	fixture_finish(&f);
}

static void touch_without_a_touch_device_is_refused(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	harness_log_clear();
	CHECK_INT(wla_input_touch_down(f.backend, 0, 5, 5), -ENODEV);
	CHECK_LOGGED("no virtual touch device (set virtual-touch to an output)");
	fixture_finish(&f);
}

static void an_output_brings_and_takes_its_absolute_pointer(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	struct wla_config_mode mode = { 320, 240, 60000 };
	CHECK_INT(wla_backend_plug_connector(f.backend, "Virtual-2", &mode, 1), 0);
	struct device *abs2 = device_named(&f, "wlatomic virtual pointer Virtual-2");
	CHECK(abs2 && strcmp(abs2->dev->output_name, "Virtual-2") == 0);
	CHECK_INT(wla_backend_unplug_connector(f.backend, "Virtual-2"), 0);
	CHECK(abs2 && abs2->destroyed);
	CHECK(device_named(&f, "wlatomic virtual pointer Virtual-1") != NULL);
	fixture_finish(&f);
}

static void a_listener_unplugging_the_output_during_a_move_is_safe(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	f.unplug_on_motion = true;
	/* The listener destroys the device whose event is being sent: no frame
	 * event may follow on it (ASan would see the use after free). */
	CHECK_INT(wla_input_pointer_move(f.backend, "Virtual-1", 10, 10), 0);
	CHECK_INT(f.n_events, 1);
	CHECK(device_named(&f, "wlatomic virtual pointer Virtual-1") == NULL);
	fixture_finish(&f);
}

/* A quit binding: wlroots' wlr_keyboard_notify_key goes on using the
 * keyboard after its key event, so the device must outlive the event. */
static void a_key_listener_destroying_the_backend_is_safe(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	f.destroy_backend_on_key = true;
	CHECK_INT(wla_input_type(f.backend, "abc"), -ENODEV);
	CHECK_INT(f.n_events, 1);
	CHECK(f.backend == NULL);
	fixture_finish(&f);
}

/* The same through the control socket: the request's client and the
 * control go with the backend while the request runs. */
static void a_control_line_whose_listener_destroys_the_backend_is_safe(void)
{
	char dir[] = "/tmp/wla-input-XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(control_path, sizeof(control_path), "%s/ctl", dir);
	struct fixture f;
	CHECK(start(&f, with_control));
	f.destroy_backend_on_key = true;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", control_path);
	CHECK(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	static const char request[] = "type ab\nlist\n";
	CHECK(write(fd, request, sizeof(request) - 1) == (ssize_t)sizeof(request) - 1);
	if (!HARNESS_WAIT_UNTIL(f.loop, f.backend == NULL, 2000)) {
		fprintf(stderr, "  control %s: backend still alive after 2000 ms x %g, %d input "
			"events: the request's key never came\n", control_path,
			harness_time_scale(), f.n_events);
	}
	CHECK(f.backend == NULL);
	CHECK_INT(f.n_events, 1);
	close(fd);
	fixture_finish(&f);
	rmdir(dir);
}

static void a_listener_destroying_the_backend_in_a_click_is_safe(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	f.destroy_backend_on_button = true;
	struct wlr_backend *backend = f.backend;
	/* No frame, no release on the freed device (ASan would see it). */
	CHECK_INT(wla_input_command(backend, "click left"), 0);
	CHECK_INT(f.n_events, 1);
	CHECK(f.backend == NULL);
	fixture_finish(&f);
}

static void handle_script_done(void *data, int status, const char *message)
{
	struct fixture *f = data;
	f->script_done++;
	f->script_status = status;
	snprintf(f->script_message, sizeof(f->script_message), "%s", message);
}

static void a_script_sends_its_lines_at_their_times(void)
{
	struct fixture f;
	CHECK(start(&f, with_touch));
	const char *text =
		"# comment\n"
		"\n"
		"key KEY_A\n"
		"at 30ms click left\n"
		"  move Virtual-1 20,10\r\n"
		"at 60ms touch 0 down 1,1\n"
		"touch 0 up\n";
	uint32_t t0 = now_ms();
	CHECK_INT(wla_input_run_script(f.backend, "s1", text, handle_script_done, &f), 0);
	/* Nothing from inside the call. */
	CHECK_INT(f.n_events, 0);
	if (!HARNESS_WAIT_UNTIL(f.loop, f.script_done, 2000)) {
		fprintf(stderr, "  script s1: script_done still 0 after 2000 ms x %g, %d input "
			"events\n", harness_time_scale(), f.n_events);
	}
	CHECK_INT(f.script_done, 1);
	CHECK_INT(f.script_status, 0);
	CHECK(strcmp(f.script_message, "script s1: 5 events sent") == 0);
	/* key down up, button down frame up frame, absolute frame, touch down frame up frame */
	CHECK_INT(f.n_events, 12);
	int click = -1;
	for (int i = 0; i < f.n_events; i++) {
		if (strcmp(f.events[i].what, "button") == 0 && click < 0) {
			click = i;
		}
	}
	CHECK(click == 2);
	/* Each at its time after the start, never early (1 ms for the clocks'
	 * truncation to whole milliseconds). */
	int touch = -1;
	for (int i = 0; i < f.n_events; i++) {
		if (strcmp(f.events[i].what, "touch-down") == 0) {
			touch = i;
		}
	}
	CHECK(click == 2 && f.events[click].time - t0 >= 29);
	CHECK(touch > 0 && f.events[touch].time - t0 >= 59);
	fixture_finish(&f);
}

static void a_bad_script_names_its_line_and_sends_nothing(void)
{
	static const struct {
		const char *text, *error;
	} cases[] = {
		{ "key KEY_A\nkey KEY_NOPE\n", "script bad line 2: key: unknown key name 'KEY_NOPE'" },
		{ "key KEY_A\nat 5ms\n", "line 2: nothing to do after 'at'" },
		{ "at 20ms key KEY_A\nat 10ms key KEY_B\n", "line 2: at 10ms is before the line above" },
		{ "at soon key KEY_A\n", "line 1: bad time 'soon' after 'at'" },
		{ "at 86400001ms key KEY_A\n", "line 1: bad time '86400001ms' after 'at'" },
		{ "\n\nmove Virtual-1 10\n", "line 3: move Virtual-1: bad position '10' (expected X,Y)" },
		{ "move Virtual-1 0x10,5\n", "line 1: move Virtual-1: bad position '0x10,5'" },
		{ "move Virtual-1\n", "line 1: move: expected move OUTPUT X,Y" },
		{ "key KEY_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
			"line 1: key: unknown key name 'KEY_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...'" },
		{ "move Virtual-1 300,5\n", "line 1: move: position 300,5 is off output Virtual-1" },
		{ "button left sideways\n", "line 1: button left: expected down or up" },
		{ "click KEY_A\n", "line 1: click: expected a button" },
		{ "axis diagonal 3\n", "line 1: axis: expected axis vertical|horizontal DELTA" },
		{ "touch -1 down 1,1\n", "line 1: touch: expected touch ID" },
		{ "key KEY_A down now\n", "line 1: key: unexpected words at the end: ' now'" },
		{ "key KEY_A sideways\n", "line 1: key KEY_A: expected down or up" },
		{ "type\n", "line 1: type: no text" },
		{ "frobnicate\n", "line 1: unknown input 'frobnicate'" },
		{ "# only a comment\n", "script bad: no events" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture f;
		CHECK(start(&f, no_touch));
		harness_log_clear();
		int ret = wla_input_run_script(f.backend, "bad", cases[i].text, handle_script_done, &f);
		if (ret != -EINVAL || !LOGGED(cases[i].error)) {
			fprintf(stderr, "  case %zu: '%s'\n", i, cases[i].text);
		}
		CHECK_INT(ret, -EINVAL);
		CHECK_LOGGED(cases[i].error);
		CHECK_INT(harness_log_n, 1);
		for (int j = 0; j < 5; j++) {
			wl_event_loop_dispatch(f.loop, 5);
		}
		CHECK_INT(f.n_events, 0);
		CHECK_INT(f.script_done, 0);
		fixture_finish(&f);
	}
}

static void a_running_script_ends_with_the_backend(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	CHECK_INT(wla_input_run_script(f.backend, "long", "at 10s key KEY_A\n", handle_script_done,
		&f), 0);
	wlr_backend_destroy(f.backend);
	f.backend = NULL;
	CHECK_INT(f.script_done, 1);
	CHECK_INT(f.script_status, -ESHUTDOWN);
	fixture_finish(&f);
}

static void a_command_is_one_script_line(void)
{
	struct fixture f;
	CHECK(start(&f, no_touch));
	CHECK_INT(wla_input_command(f.backend, "key KEY_ENTER down"), 0);
	CHECK_INT(f.n_events, 1);
	CHECK_INT(f.events[0].code, KEY_ENTER);
	harness_log_clear();
	CHECK_INT(wla_input_command(f.backend, "key"), -EINVAL);
	CHECK_LOGGED("input: 'key': key: expected key KEY_NAME [down|up]");
	fixture_finish(&f);
}

int main(void)
{
	harness_init();
	unsetenv("WLA_OUTPUTS");
	unsetenv("WLA_CONFIG");
	RUN_TEST(devices_are_announced_at_start);
	RUN_TEST(no_devices_when_virtual_input_is_off);
	RUN_TEST(a_key_press_carries_its_code_and_a_monotonic_time);
	RUN_TEST(typing_holds_shift_for_capitals);
	RUN_TEST(text_the_keymap_cannot_make_is_refused_whole);
	RUN_TEST(the_keyboard_layout_decides_what_typing_presses);
	RUN_TEST(absolute_moves_are_normalised_to_their_output);
	RUN_TEST(relative_motion_buttons_and_scrolls_come_from_the_pointer);
	RUN_TEST(touch_points_go_down_move_and_up_once);
	RUN_TEST(touch_without_a_touch_device_is_refused);
	RUN_TEST(an_output_brings_and_takes_its_absolute_pointer);
	RUN_TEST(a_listener_unplugging_the_output_during_a_move_is_safe);
	RUN_TEST(a_key_listener_destroying_the_backend_is_safe);
	RUN_TEST(a_listener_destroying_the_backend_in_a_click_is_safe);
	RUN_TEST(a_control_line_whose_listener_destroys_the_backend_is_safe);
	RUN_TEST(a_script_sends_its_lines_at_their_times);
	RUN_TEST(a_bad_script_names_its_line_and_sends_nothing);
	RUN_TEST(a_running_script_ends_with_the_backend);
	RUN_TEST(a_command_is_one_script_line);
	HARNESS_EXIT();
}
