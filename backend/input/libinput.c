/*
 * Real input devices through libinput on a path context: the devices the
 * configuration names (input-device: an event device's path, or
 * name:PATTERN on its name), opened through the host (the display's seat,
 * where the KMS card came through one; else directly). Devices that appear
 * later are picked up from uevents (udevd's, else the kernel's netlink
 * group). Each libinput device becomes one wlr_input_device per capability
 * (keyboard, pointer, touch), as in wlroots' libinput backend; touchscreens
 * belong to touch-output (else the first output) and are silent while that
 * output is off or its panel is not powered, as on a phone.
 */
#define _GNU_SOURCE /* strdup */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <libinput.h>
#include <libudev.h>
#include <linux/input.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <wlr/util/log.h>
#include "backend/input.h"
#include "util.h"

/* The wlr devices made of one libinput device. */
struct real_device {
	struct wl_list link; /* wla_libinput.devices */
	struct libinput_device *handle;
	char sysname[32];
	struct wla_input_device *keyboard, *pointer, *touch;
};

/* An event device handed to libinput, until it is removed (unplugged, or
 * libinput dropped it). While the session is away it stays here without a
 * handle, to be added again, on its own, when the session is back. */
struct added_path {
	struct wl_list link; /* wla_libinput.added */
	char sysname[32];
	char path[WLA_INPUT_DEVICE_MAX + 32];
	char why[WLA_INPUT_DEVICE_MAX + 160];
	struct libinput_device *handle; /* NULL while the session is away */
};

struct wla_libinput {
	struct wla_input *input;
	struct wl_list added; /* added_path.link */
	struct libinput *li;
	struct wl_event_source *source;
	struct udev *udev;
	struct udev_monitor *monitor;
	struct wl_event_source *monitor_source;
	struct wl_list devices; /* real_device.link */
	/* The session is away (wla_libinput_set_active): every device is
	 * out of libinput, and none is opened until it is back. */
	bool away;
	/* The seat that opened them ended (wla_libinput_close_all): none is
	 * opened again. */
	bool closed;
};

static int open_restricted(const char *path, int flags, void *data)
{
	struct wla_libinput *l = data;
	const struct wla_input_host *host = &l->input->host;
	if (host->open_device) {
		return host->open_device(host->data, path, flags);
	}
	int fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void close_restricted(int fd, void *data)
{
	struct wla_libinput *l = data;
	const struct wla_input_host *host = &l->input->host;
	if (host->close_device) {
		host->close_device(host->data, fd);
	} else {
		close(fd);
	}
}

__attribute__((format(printf, 3, 0)))
static void handle_libinput_log(struct libinput *li, enum libinput_log_priority priority,
	const char *fmt, va_list args)
{
	char line[512];
	vsnprintf(line, sizeof(line), fmt, args);
	size_t len = strlen(line);
	if (len && line[len - 1] == '\n') {
		line[len - 1] = '\0';
	}
	enum wlr_log_importance importance = priority >= LIBINPUT_LOG_PRIORITY_ERROR ?
		WLR_ERROR : priority >= LIBINPUT_LOG_PRIORITY_INFO ? WLR_INFO : WLR_DEBUG;
	wlr_log(importance, "input: libinput: %s", line);
}

static const struct libinput_interface interface = {
	.open_restricted = open_restricted,
	.close_restricted = close_restricted,
};

static const struct wla_config *config_of(struct wla_libinput *l)
{
	return l->input->config;
}

/* The name the kernel gives the event device at path, from sysfs (no need
 * to open it: a seat may be what opens it), or false with errno: ENODEV
 * for a device that is no evdev event device (/dev/null, /dev/input/mice),
 * EMEDIUMTYPE without sysfs (libinput needs it too). */
static bool device_name(const char *path, char *name, size_t size)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		return false;
	}
	if (!S_ISCHR(st.st_mode)) {
		errno = ENODEV;
		return false;
	}
	if (access("/sys/dev/char", F_OK) != 0) {
		errno = EMEDIUMTYPE;
		return false;
	}
	char sys[96], real[PATH_MAX];
	snprintf(sys, sizeof(sys), "/sys/dev/char/%u:%u", major(st.st_rdev), minor(st.st_rdev));
	const char *base = realpath(sys, real) ? strrchr(real, '/') : NULL;
	if (!base || strncmp(base + 1, "event", 5) != 0) {
		errno = ENODEV;
		return false;
	}
	snprintf(sys + strlen(sys), sizeof(sys) - strlen(sys), "/device/name");
	FILE *f = fopen(sys, "re");
	if (!f) {
		errno = ENODEV;
		return false;
	}
	bool ok = fgets(name, (int)size, f) != NULL;
	fclose(f);
	if (!ok) {
		errno = ENODEV;
		return false;
	}
	name[strcspn(name, "\n")] = '\0';
	return true;
}

/* Why a configured path cannot be an input device, or NULL if it may be. */
static const char *path_problem(struct wla_libinput *l, const char *path, char *buf,
	size_t size)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		snprintf(buf, size, "%s", strerror(errno));
		return buf;
	}
	if (!S_ISCHR(st.st_mode)) {
		snprintf(buf, size, "not a character device, so not an input device");
		return buf;
	}
	char name[128];
	if (!device_name(path, name, sizeof(name))) {
		snprintf(buf, size, errno == EMEDIUMTYPE ? "sysfs is not mounted (/sys/dev/char): "
			"libinput cannot use input devices without it" : "not an input device (sysfs "
			"names no evdev event device for it)");
		return buf;
	}
	const struct wla_input_host *host = &l->input->host;
	bool seated = host->seated && host->seated(host->data);
	if (!seated && access(path, R_OK | W_OK) != 0 && (errno == EACCES || errno == EPERM)) {
		snprintf(buf, size, "no permission to open it (%s); add the user to its group "
			"(usually input), run as its owner, or let a seat (seatd, logind) open "
			"it", strerror(errno));
		return buf;
	}
	return NULL;
}

static struct real_device *find_real(struct wla_libinput *l, const char *sysname)
{
	struct real_device *rd;
	wl_list_for_each(rd, &l->devices, link) {
		if (strcmp(rd->sysname, sysname) == 0) {
			return rd;
		}
	}
	return NULL;
}

static struct added_path *find_added(struct wla_libinput *l, const char *sysname)
{
	struct added_path *a;
	wl_list_for_each(a, &l->added, link) {
		if (strcmp(a->sysname, sysname) == 0) {
			return a;
		}
	}
	return NULL;
}

/* Forget an added device. remove: also take it from libinput (a uevent
 * said it is gone). */
static void drop_added(struct added_path *a, bool remove)
{
	if (a->handle) {
		if (remove) {
			libinput_path_remove_device(a->handle);
		}
		libinput_device_unref(a->handle);
	}
	wl_list_remove(&a->link);
	free(a);
}

/* Take a's device out of libinput (its fd closed now, through the host),
 * keeping the entry. */
static void release_added(struct added_path *a)
{
	if (a->handle) {
		libinput_path_remove_device(a->handle);
		libinput_device_unref(a->handle);
		a->handle = NULL;
	}
}

static void add_path(struct wla_libinput *l, const char *path, const char *why)
{
	/* /dev/input/eventN: the same device however it was named. */
	char real[PATH_MAX];
	const char *resolved = realpath(path, real) ? real : path;
	const char *sysname = strrchr(resolved, '/') ? strrchr(resolved, '/') + 1 : resolved;
	if (find_added(l, sysname)) {
		return; /* named twice (a path and a pattern): once is enough */
	}
	if (l->away) {
		/* Not ours to open now: looked at when the session is back. */
		wlr_log(WLR_DEBUG, "input: %s (%s) appeared while the session is inactive: "
			"added when it is back", path, why);
		return;
	}
	struct added_path *a = calloc(1, sizeof(*a));
	if (!a) {
		wlr_log(WLR_ERROR, "input: input-device %s: out of memory", path);
		return;
	}
	snprintf(a->path, sizeof(a->path), "%s", path);
	snprintf(a->why, sizeof(a->why), "%s", why);
	a->handle = libinput_path_add_device(l->li, path);
	if (!a->handle) {
		wlr_log(WLR_ERROR, "input: input-device %s (%s): libinput cannot use it", path,
			why);
		free(a);
		return;
	}
	libinput_device_ref(a->handle);
	snprintf(a->sysname, sizeof(a->sysname), "%.*s", (int)sizeof(a->sysname) - 1, sysname);
	wl_list_insert(l->added.prev, &a->link);
	/* The DEVICE_ADDED event makes the wlr devices. */
	wlr_log(WLR_INFO, "input: %s (%s) added", path, why);
}

static bool name_matches(const struct wla_config *cfg, const char *name, size_t *index)
{
	for (size_t i = 0; i < cfg->n_input_devices; i++) {
		const char *entry = cfg->input_devices[i];
		if (strncmp(entry, "name:", 5) == 0 && fnmatch(entry + 5, name, 0) == 0) {
			*index = i;
			return true;
		}
	}
	return false;
}

/* An event device that appeared (or was there at start): add it if the
 * configuration names it. quiet: no error for one that cannot be read
 * (a scan of every device at start). */
static void consider(struct wla_libinput *l, const char *path)
{
	const struct wla_config *cfg = config_of(l);
	for (size_t i = 0; i < cfg->n_input_devices; i++) {
		if (strcmp(cfg->input_devices[i], path) == 0) {
			add_path(l, path, "named by path");
			return;
		}
	}
	char name[128];
	size_t index;
	if (device_name(path, name, sizeof(name)) && name_matches(cfg, name, &index)) {
		char why[WLA_INPUT_DEVICE_MAX + 32];
		snprintf(why, sizeof(why), "\"%s\" matches %s", name, cfg->input_devices[index]);
		add_path(l, path, why);
	}
}

static bool has_patterns(const struct wla_config *cfg)
{
	for (size_t i = 0; i < cfg->n_input_devices; i++) {
		if (strncmp(cfg->input_devices[i], "name:", 5) == 0) {
			return true;
		}
	}
	return false;
}

static void scan_event_devices(struct wla_libinput *l)
{
	DIR *dir = opendir("/dev/input");
	if (!dir) {
		return;
	}
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "event", 5) == 0) {
			char path[300];
			snprintf(path, sizeof(path), "/dev/input/%s", de->d_name);
			consider(l, path);
		}
	}
	closedir(dir);
}

/* ---- Touch only while its output shows something ---- */

static const char *touch_output_name(struct wla_libinput *l)
{
	const struct wla_config *cfg = config_of(l);
	if (cfg->touch_output[0]) {
		return cfg->touch_output;
	}
	/* The devices come after the backend's first outputs (wla_input_start
	 * runs once they exist). */
	return l->input->host.first_output(l->input->host.data);
}

static bool output_shows(struct wla_input *input, const char *name)
{
	struct wla_input_output out;
	return name && input->host.get_output(input->host.data, name, &out) && out.shows;
}

/* ---- Devices ---- */

static void make_devices(struct wla_libinput *l, struct libinput_device *handle)
{
	struct real_device *rd = calloc(1, sizeof(*rd));
	if (!rd) {
		wlr_log(WLR_ERROR, "input: %s: out of memory", libinput_device_get_name(handle));
		return;
	}
	rd->handle = libinput_device_ref(handle);
	snprintf(rd->sysname, sizeof(rd->sysname), "%s", libinput_device_get_sysname(handle));
	libinput_device_set_user_data(handle, rd);
	wl_list_insert(l->devices.prev, &rd->link);
	const char *name = libinput_device_get_name(handle);
	struct wla_input *input = l->input;
	if (libinput_device_has_capability(handle, LIBINPUT_DEVICE_CAP_KEYBOARD)) {
		rd->keyboard = wla_input_device_create(input, WLR_INPUT_DEVICE_KEYBOARD, name, NULL);
		if (rd->keyboard && !wlr_keyboard_set_keymap(&rd->keyboard->keyboard, input->keymap)) {
			wlr_log(WLR_ERROR, "input: %s: cannot set the keymap", name);
		}
		if (rd->keyboard) {
			wlr_keyboard_set_repeat_info(&rd->keyboard->keyboard, 25, 600);
		}
	}
	if (libinput_device_has_capability(handle, LIBINPUT_DEVICE_CAP_POINTER)) {
		rd->pointer = wla_input_device_create(input, WLR_INPUT_DEVICE_POINTER, name, NULL);
	}
	if (libinput_device_has_capability(handle, LIBINPUT_DEVICE_CAP_TOUCH)) {
		rd->touch = wla_input_device_create(input, WLR_INPUT_DEVICE_TOUCH, name,
			touch_output_name(l));
	}
	struct wla_input_device *made[] = { rd->keyboard, rd->pointer, rd->touch };
	unsigned vendor = libinput_device_get_id_vendor(handle);
	unsigned product = libinput_device_get_id_product(handle);
	int n = 0;
	for (size_t i = 0; i < WLA_ARRAY_SIZE(made); i++) {
		if (made[i]) {
			made[i]->base.vendor = vendor;
			made[i]->base.product = product;
			n++;
		}
	}
	wlr_log(WLR_INFO, "input: %s (%s): %s%s%s%s", rd->sysname, name,
		rd->keyboard ? "keyboard " : "", rd->pointer ? "pointer " : "",
		rd->touch ? "touch mapped to " : "", rd->touch && rd->touch->base.output_name ?
		rd->touch->base.output_name : "");
	if (n == 0) {
		wlr_log(WLR_ERROR, "input: %s (%s): neither a keyboard, a pointer nor a touch "
			"device; ignored", rd->sysname, name);
	}
	for (size_t i = 0; i < WLA_ARRAY_SIZE(made); i++) {
		if (made[i]) {
			wla_input_device_announce(made[i]);
		}
	}
}

static void drop_devices(struct real_device *rd)
{
	wla_input_device_destroy(rd->keyboard);
	wla_input_device_destroy(rd->pointer);
	wla_input_device_destroy(rd->touch);
	rd->keyboard = rd->pointer = rd->touch = NULL;
}

static void forget(struct real_device *rd)
{
	drop_devices(rd);
	libinput_device_set_user_data(rd->handle, NULL);
	libinput_device_unref(rd->handle);
	wl_list_remove(&rd->link);
	free(rd);
}

/* ---- Events ---- */

static void handle_keyboard(struct real_device *rd, struct libinput_event_keyboard *ev)
{
	if (!rd->keyboard) {
		return;
	}
	struct wlr_event_keyboard_key event = {
		.time_msec = (uint32_t)(libinput_event_keyboard_get_time_usec(ev) / 1000),
		.keycode = libinput_event_keyboard_get_key(ev),
		.update_state = true,
		.state = libinput_event_keyboard_get_key_state(ev) == LIBINPUT_KEY_STATE_PRESSED ?
			WL_KEYBOARD_KEY_STATE_PRESSED : WL_KEYBOARD_KEY_STATE_RELEASED,
	};
	wlr_keyboard_notify_key(&rd->keyboard->keyboard, &event);
}

static void pointer_frame(struct wla_input_device *dev)
{
	wl_signal_emit(&dev->pointer.events.frame, &dev->pointer);
}

static void handle_pointer(struct real_device *rd, enum libinput_event_type type,
	struct libinput_event_pointer *ev)
{
	struct wla_input_device *dev = rd->pointer;
	if (!dev) {
		return;
	}
	uint32_t time = (uint32_t)(libinput_event_pointer_get_time_usec(ev) / 1000);
	switch (type) {
	case LIBINPUT_EVENT_POINTER_MOTION: {
		struct wlr_event_pointer_motion e = { .device = &dev->base, .time_msec = time,
			.delta_x = libinput_event_pointer_get_dx(ev),
			.delta_y = libinput_event_pointer_get_dy(ev),
			.unaccel_dx = libinput_event_pointer_get_dx_unaccelerated(ev),
			.unaccel_dy = libinput_event_pointer_get_dy_unaccelerated(ev) };
		wl_signal_emit(&dev->pointer.events.motion, &e);
		break;
	}
	case LIBINPUT_EVENT_POINTER_MOTION_ABSOLUTE: {
		struct wlr_event_pointer_motion_absolute e = { .device = &dev->base,
			.time_msec = time,
			.x = libinput_event_pointer_get_absolute_x_transformed(ev, 1),
			.y = libinput_event_pointer_get_absolute_y_transformed(ev, 1) };
		wl_signal_emit(&dev->pointer.events.motion_absolute, &e);
		break;
	}
	case LIBINPUT_EVENT_POINTER_BUTTON: {
		struct wlr_event_pointer_button e = { .device = &dev->base, .time_msec = time,
			.button = libinput_event_pointer_get_button(ev),
			.state = libinput_event_pointer_get_button_state(ev) ==
				LIBINPUT_BUTTON_STATE_PRESSED ? WLR_BUTTON_PRESSED : WLR_BUTTON_RELEASED };
		wl_signal_emit(&dev->pointer.events.button, &e);
		break;
	}
	case LIBINPUT_EVENT_POINTER_AXIS: {
		enum libinput_pointer_axis_source source = libinput_event_pointer_get_axis_source(ev);
		static const enum libinput_pointer_axis axes[] = {
			LIBINPUT_POINTER_AXIS_SCROLL_VERTICAL, LIBINPUT_POINTER_AXIS_SCROLL_HORIZONTAL,
		};
		for (size_t i = 0; i < WLA_ARRAY_SIZE(axes); i++) {
			if (!libinput_event_pointer_has_axis(ev, axes[i])) {
				continue;
			}
			struct wlr_event_pointer_axis e = { .device = &dev->base, .time_msec = time,
				.source = source == LIBINPUT_POINTER_AXIS_SOURCE_WHEEL ?
					WLR_AXIS_SOURCE_WHEEL : source == LIBINPUT_POINTER_AXIS_SOURCE_FINGER ?
					WLR_AXIS_SOURCE_FINGER : source ==
					LIBINPUT_POINTER_AXIS_SOURCE_CONTINUOUS ?
					WLR_AXIS_SOURCE_CONTINUOUS : WLR_AXIS_SOURCE_WHEEL_TILT,
				.orientation = i == 0 ? WLR_AXIS_ORIENTATION_VERTICAL :
					WLR_AXIS_ORIENTATION_HORIZONTAL,
				.delta = libinput_event_pointer_get_axis_value(ev, axes[i]),
				.delta_discrete = source == LIBINPUT_POINTER_AXIS_SOURCE_WHEEL ?
					(int32_t)libinput_event_pointer_get_axis_value_discrete(ev,
						axes[i]) : 0 };
			wl_signal_emit(&dev->pointer.events.axis, &e);
		}
		break;
	}
	default:
		return;
	}
	pointer_frame(dev);
}

/* Lift a point that will get no up of its own (its output went dark, or
 * libinput cancelled it): an up, since a wlroots 0.15 seat cannot pass a
 * cancel on to clients and compositors of its time ignore the event. */
static void lift_touch(struct wla_input_device *dev, size_t slot, uint32_t time)
{
	struct wlr_event_touch_up e = { .device = &dev->base, .time_msec = time,
		.touch_id = dev->touch_ids[slot] };
	dev->touch_ids[slot] = dev->touch_ids[--dev->n_touch_ids];
	wl_signal_emit(&dev->touch.events.up, &e);
}

static void lift_all_touches(struct wla_input_device *dev, uint32_t time)
{
	if (!dev->n_touch_ids) {
		return;
	}
	while (dev->n_touch_ids) {
		lift_touch(dev, dev->n_touch_ids - 1, time);
	}
	wl_signal_emit(&dev->touch.events.frame, NULL);
}

static void handle_touch(struct wla_libinput *l, struct real_device *rd,
	enum libinput_event_type type, struct libinput_event_touch *ev)
{
	struct wla_input_device *dev = rd->touch;
	if (!dev) {
		return;
	}
	uint32_t time = (uint32_t)(libinput_event_touch_get_time_usec(ev) / 1000);
	if (!output_shows(l->input, dev->base.output_name)) {
		lift_all_touches(dev, time);
		return;
	}
	switch (type) {
	case LIBINPUT_EVENT_TOUCH_DOWN: {
		int32_t id = libinput_event_touch_get_seat_slot(ev);
		if (wla_input_touch_index(dev, id) >= 0 || dev->n_touch_ids == WLA_ARRAY_SIZE(dev->touch_ids)) {
			return; /* more fingers than we follow: this one is not sent */
		}
		dev->touch_ids[dev->n_touch_ids++] = id;
		struct wlr_event_touch_down e = { .device = &dev->base, .time_msec = time,
			.touch_id = id, .x = libinput_event_touch_get_x_transformed(ev, 1),
			.y = libinput_event_touch_get_y_transformed(ev, 1) };
		wl_signal_emit(&dev->touch.events.down, &e);
		break;
	}
	case LIBINPUT_EVENT_TOUCH_MOTION: {
		int32_t id = libinput_event_touch_get_seat_slot(ev);
		if (wla_input_touch_index(dev, id) < 0) {
			return; /* went down while the output was dark */
		}
		struct wlr_event_touch_motion e = { .device = &dev->base, .time_msec = time,
			.touch_id = id, .x = libinput_event_touch_get_x_transformed(ev, 1),
			.y = libinput_event_touch_get_y_transformed(ev, 1) };
		wl_signal_emit(&dev->touch.events.motion, &e);
		break;
	}
	case LIBINPUT_EVENT_TOUCH_UP: {
		int32_t id = libinput_event_touch_get_seat_slot(ev);
		int slot = wla_input_touch_index(dev, id);
		if (slot < 0) {
			return;
		}
		dev->touch_ids[slot] = dev->touch_ids[--dev->n_touch_ids];
		struct wlr_event_touch_up e = { .device = &dev->base, .time_msec = time,
			.touch_id = id };
		wl_signal_emit(&dev->touch.events.up, &e);
		break;
	}
	case LIBINPUT_EVENT_TOUCH_CANCEL: {
		int slot = wla_input_touch_index(dev, libinput_event_touch_get_seat_slot(ev));
		if (slot >= 0) {
			lift_touch(dev, (size_t)slot, time);
		}
		break;
	}
	case LIBINPUT_EVENT_TOUCH_FRAME:
		wl_signal_emit(&dev->touch.events.frame, NULL);
		break;
	default:
		break;
	}
}

static void process_event(struct wla_libinput *l, struct libinput_event *event)
{
	enum libinput_event_type type = libinput_event_get_type(event);
	struct libinput_device *handle = libinput_event_get_device(event);
	struct real_device *rd = libinput_device_get_user_data(handle);
	switch (type) {
	case LIBINPUT_EVENT_DEVICE_ADDED:
		if (!rd) {
			make_devices(l, handle);
		}
		return;
	case LIBINPUT_EVENT_DEVICE_REMOVED: {
		if (rd) {
			wlr_log(WLR_INFO, "input: %s (%s) removed", rd->sysname,
				libinput_device_get_name(handle));
			forget(rd);
		}
		/* Ours took it out (a switch, a uevent): no handle matches.
		 * libinput's path context does not drop a device itself on a
		 * read error (a revoke, an unplug: it stops reading it); were
		 * one to, the entry stays, to be added again when the session
		 * is next back unless its uevent says it is unplugged. */
		struct added_path *a;
		wl_list_for_each(a, &l->added, link) {
			if (a->handle == handle) {
				libinput_device_unref(a->handle);
				a->handle = NULL;
				wlr_log(WLR_DEBUG, "input: %s: libinput let it go (unplugged, or "
					"revoked by the seat): added again when the session is next "
					"back, unless it is unplugged", a->path);
				break;
			}
		}
		return;
	}
	default:
		break;
	}
	if (!rd) {
		return;
	}
	switch (type) {
	case LIBINPUT_EVENT_KEYBOARD_KEY:
		handle_keyboard(rd, libinput_event_get_keyboard_event(event));
		break;
	case LIBINPUT_EVENT_POINTER_MOTION:
	case LIBINPUT_EVENT_POINTER_MOTION_ABSOLUTE:
	case LIBINPUT_EVENT_POINTER_BUTTON:
	case LIBINPUT_EVENT_POINTER_AXIS:
		handle_pointer(rd, type, libinput_event_get_pointer_event(event));
		break;
	case LIBINPUT_EVENT_TOUCH_DOWN:
	case LIBINPUT_EVENT_TOUCH_UP:
	case LIBINPUT_EVENT_TOUCH_MOTION:
	case LIBINPUT_EVENT_TOUCH_CANCEL:
	case LIBINPUT_EVENT_TOUCH_FRAME:
		handle_touch(l, rd, type, libinput_event_get_touch_event(event));
		break;
	default:
		break;
	}
}

static int handle_libinput(int fd, uint32_t mask, void *data)
{
	struct wla_libinput *l = data;
	struct wla_input *input = l->input;
	if (libinput_dispatch(l->li) != 0) {
		wlr_log(WLR_ERROR, "input: libinput_dispatch failed");
	}
	/* A listener may destroy the backend: input stays until we let go. */
	wla_input_hold(input);
	struct libinput_event *event;
	while (!wla_doomed(&input->hold) && (event = libinput_get_event(l->li))) {
		process_event(l, event);
		libinput_event_destroy(event);
	}
	wla_input_release(input);
	return 0;
}

/* ---- Uevents: devices that come later ---- */

static int handle_uevent(int fd, uint32_t mask, void *data)
{
	struct wla_libinput *l = data;
	struct udev_device *dev = udev_monitor_receive_device(l->monitor);
	if (!dev) {
		return 0;
	}
	const char *action = udev_device_get_action(dev);
	const char *sysname = udev_device_get_sysname(dev);
	dev_t devnum = udev_device_get_devnum(dev);
	if (action && sysname && strncmp(sysname, "event", 5) == 0) {
		char path[300];
		snprintf(path, sizeof(path), "/dev/input/%s", sysname);
		if (strcmp(action, "add") == 0 && major(devnum) != 0) {
			consider(l, path);
			/* The fd is libinput's now: the events come through it. */
			handle_libinput(libinput_get_fd(l->li), 0, l);
		} else if (strcmp(action, "remove") == 0) {
			struct real_device *rd = find_real(l, sysname);
			if (rd) {
				wlr_log(WLR_INFO, "input: %s (%s) removed", rd->sysname,
					libinput_device_get_name(rd->handle));
				forget(rd);
			}
			struct added_path *a = find_added(l, sysname);
			if (a && !a->handle) {
				wlr_log(WLR_DEBUG, "input: %s unplugged%s: not opened again",
					a->path, l->away ? " while the session is inactive" : "");
			}
			if (a) {
				drop_added(a, true);
			}
		}
	}
	udev_device_unref(dev);
	return 0;
}

static void watch_uevents(struct wla_libinput *l)
{
	l->udev = udev_new();
	const char *source = access("/run/udev/control", F_OK) == 0 ? "udev" : "kernel";
	l->monitor = l->udev ? udev_monitor_new_from_netlink(l->udev, source) : NULL;
	if (!l->monitor ||
			udev_monitor_filter_add_match_subsystem_devtype(l->monitor, "input", NULL) < 0 ||
			udev_monitor_enable_receiving(l->monitor) < 0) {
		wlr_log(WLR_ERROR, "input: no uevent monitor: input devices plugged in later "
			"are not seen");
		return;
	}
	l->monitor_source = wl_event_loop_add_fd(l->input->loop, udev_monitor_get_fd(l->monitor),
		WL_EVENT_READABLE, handle_uevent, l);
}

/* ---- Creation ---- */

int wla_libinput_create(struct wla_input *input)
{
	const struct wla_config *cfg = input->config;
	struct wla_libinput *l = calloc(1, sizeof(*l));
	if (!l) {
		wlr_log(WLR_ERROR, "input: out of memory");
		return -ENOMEM;
	}
	l->input = input;
	wl_list_init(&l->devices);
	wl_list_init(&l->added);
	input->libinput = l;
	l->li = libinput_path_create_context(&interface, l);
	if (!l->li) {
		wlr_log(WLR_ERROR, "input: libinput cannot make a path context");
		return -ENOMEM;
	}
	libinput_log_set_handler(l->li, handle_libinput_log);
	libinput_log_set_priority(l->li, LIBINPUT_LOG_PRIORITY_INFO);
	/* Paths are checked one by one, each with one error if unusable; the
	 * compositor starts with what works. */
	for (size_t i = 0; i < cfg->n_input_devices; i++) {
		const char *entry = cfg->input_devices[i];
		if (entry[0] != '/') {
			continue;
		}
		char why[160];
		const char *problem = path_problem(l, entry, why, sizeof(why));
		if (problem) {
			wlr_log(WLR_ERROR, "input: input-device %s: %s", entry, problem);
			continue;
		}
		add_path(l, entry, "named by path");
	}
	/* Uevents first: a device that appears during the scan is not missed
	 * (one seen twice is added once). */
	watch_uevents(l);
	if (has_patterns(cfg)) {
		scan_event_devices(l);
		if (wl_list_empty(&l->added)) {
			wlr_log(WLR_INFO, "input: no input device matches the name patterns yet; "
				"devices plugged in later are looked at");
		}
	}
	l->source = wl_event_loop_add_fd(input->loop, libinput_get_fd(l->li), WL_EVENT_READABLE,
		handle_libinput, l);
	if (!l->source) {
		wlr_log(WLR_ERROR, "input: cannot watch libinput's fd");
		return -ENOMEM;
	}
	return 0;
}

void wla_libinput_start(struct wla_input *input)
{
	/* DEVICE_ADDED events of the devices added at creation wait in
	 * libinput's queue: they become wlr devices now. */
	if (input->libinput) {
		handle_libinput(libinput_get_fd(input->libinput->li), 0, input->libinput);
	}
}

void wla_libinput_stop(struct wla_input *input)
{
	struct wla_libinput *l = input->libinput;
	if (!l) {
		return;
	}
	while (!wl_list_empty(&l->devices)) {
		struct real_device *rd = wl_container_of(l->devices.next, rd, link);
		forget(rd);
	}
	/* Their fds closed now, through the host, while it is there (the
	 * context may outlive the backend by an event in hand). */
	struct added_path *a;
	wl_list_for_each(a, &l->added, link) {
		release_added(a);
	}
	if (l->source) {
		wl_event_source_remove(l->source);
		l->source = NULL;
	}
	if (l->monitor_source) {
		wl_event_source_remove(l->monitor_source);
		l->monitor_source = NULL;
	}
}

/*
 * Device by device, not with libinput_suspend/resume, which on a path
 * context opens all or none again: a device unplugged while away would
 * keep the others closed. Away, every device goes out of libinput (its fd
 * closed; a seat revokes it anyway); back, each is added again on its own,
 * and those the configuration names that appeared meanwhile are added.
 */
void wla_libinput_set_active(struct wla_input *input, bool active)
{
	struct wla_libinput *l = input->libinput;
	if (!l || !l->li) {
		return;
	}
	struct added_path *a, *tmp;
	if (l->closed) {
		return;
	}
	if (active && l->away) {
		l->away = false;
		size_t opened = 0, lost = 0;
		wl_list_for_each_safe(a, tmp, &l->added, link) {
			a->handle = libinput_path_add_device(l->li, a->path);
			if (a->handle) {
				libinput_device_ref(a->handle);
				opened++;
			} else {
				wlr_log(WLR_ERROR, "input: %s (%s): not opened again after the "
					"session came back (libinput cannot use it)", a->path, a->why);
				drop_added(a, false);
				lost++;
			}
		}
		/* What the configuration names that came while away. */
		const struct wla_config *cfg = config_of(l);
		for (size_t i = 0; i < cfg->n_input_devices; i++) {
			const char *entry = cfg->input_devices[i];
			char why[160];
			/* One there already is skipped by add_path. */
			if (entry[0] == '/' && !path_problem(l, entry, why, sizeof(why))) {
				add_path(l, entry, "named by path");
			}
		}
		if (has_patterns(cfg)) {
			scan_event_devices(l);
		}
		wlr_log(WLR_INFO, "input: session active again: real input devices opened "
			"again (%zu, %zu lost)", opened, lost);
	} else if (!active && !l->away) {
		/* Another session has the seat: its devices are not ours to
		 * read (what is typed there must not reach this compositor). */
		l->away = true;
		wl_list_for_each(a, &l->added, link) {
			release_added(a);
		}
		wlr_log(WLR_INFO, "input: session inactive: real input devices closed");
	} else {
		return;
	}
	/* The devices' removal and return, as events now. */
	handle_libinput(libinput_get_fd(l->li), WL_EVENT_READABLE, l);
}

void wla_libinput_close_all(struct wla_input *input, const char *why)
{
	struct wla_libinput *l = input->libinput;
	if (!l || !l->li) {
		return;
	}
	l->away = true;
	l->closed = true;
	struct added_path *a;
	wl_list_for_each(a, &l->added, link) {
		release_added(a);
	}
	wlr_log(WLR_INFO, "input: real input devices closed for good: %s", why);
	handle_libinput(libinput_get_fd(l->li), WL_EVENT_READABLE, l);
}

void wla_libinput_destroy(struct wla_input *input)
{
	struct wla_libinput *l = input->libinput;
	if (!l) {
		return;
	}
	wla_libinput_stop(input);
	/* Out of libinput already (wla_libinput_stop): the entries go. */
	while (!wl_list_empty(&l->added)) {
		struct added_path *a = wl_container_of(l->added.next, a, link);
		drop_added(a, false);
	}
	if (l->monitor) {
		udev_monitor_unref(l->monitor);
	}
	if (l->udev) {
		udev_unref(l->udev);
	}
	if (l->li) {
		libinput_unref(l->li);
	}
	free(l);
	input->libinput = NULL;
}
