/*
 * wla-uinput: kernel input devices made with /dev/uinput (libevdev), for the
 * real-kernel tier: a keyboard, a mouse and a touchscreen, each only if
 * asked, driven by commands read from stdin one per line:
 *
 *   key CODE                 press and release an evdev key
 *   key CODE down|up         half a stroke
 *   rel DX DY                relative motion (mouse)
 *   btn CODE                 press and release a mouse button
 *   wheel N                  N wheel detents (mouse)
 *   touch down SLOT X Y      touchscreen, device units 0..4095
 *   touch move SLOT X Y
 *   touch up SLOT
 *   remove keyboard|mouse|touch   destroy that device now
 *   sleep MS
 *
 * Once its devices exist it prints "ready keyboard=/dev/input/eventN
 * mouse=... touch=..." (flushed); each command is answered "ok" or
 * "error ...". It exits 0 at the end of stdin, destroying what is left.
 * Exit status 77 when /dev/uinput cannot be opened (the host).
 */
#include <errno.h>
#include <fcntl.h>
#include <libevdev/libevdev-uinput.h>
#include <libevdev/libevdev.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOUCH_MAX 4095

static struct libevdev_uinput *keyboard, *mouse, *touch;

static struct libevdev_uinput *create(struct libevdev *dev)
{
	struct libevdev_uinput *ui = NULL;
	int ret = libevdev_uinput_create_from_device(dev, LIBEVDEV_UINPUT_OPEN_MANAGED, &ui);
	libevdev_free(dev);
	if (ret < 0) {
		fprintf(stderr, "wla-uinput: cannot create a device: %s\n", strerror(-ret));
		if (ret == -ENOENT || ret == -EACCES || ret == -ENODEV) {
			exit(77);
		}
		exit(1);
	}
	return ui;
}

static struct libevdev_uinput *make_keyboard(const char *name)
{
	struct libevdev *dev = libevdev_new();
	libevdev_set_name(dev, name);
	libevdev_set_id_bustype(dev, BUS_VIRTUAL);
	libevdev_set_id_vendor(dev, 0x1d6b);
	libevdev_set_id_product(dev, 0x0101);
	libevdev_enable_event_type(dev, EV_KEY);
	for (unsigned code = KEY_ESC; code <= KEY_MICMUTE; code++) {
		libevdev_enable_event_code(dev, EV_KEY, code, NULL);
	}
	return create(dev);
}

static struct libevdev_uinput *make_mouse(const char *name)
{
	struct libevdev *dev = libevdev_new();
	libevdev_set_name(dev, name);
	libevdev_set_id_bustype(dev, BUS_VIRTUAL);
	libevdev_set_id_vendor(dev, 0x1d6b);
	libevdev_set_id_product(dev, 0x0102);
	libevdev_enable_event_type(dev, EV_REL);
	libevdev_enable_event_code(dev, EV_REL, REL_X, NULL);
	libevdev_enable_event_code(dev, EV_REL, REL_Y, NULL);
	libevdev_enable_event_code(dev, EV_REL, REL_WHEEL, NULL);
	libevdev_enable_event_type(dev, EV_KEY);
	libevdev_enable_event_code(dev, EV_KEY, BTN_LEFT, NULL);
	libevdev_enable_event_code(dev, EV_KEY, BTN_RIGHT, NULL);
	libevdev_enable_event_code(dev, EV_KEY, BTN_MIDDLE, NULL);
	return create(dev);
}

static struct libevdev_uinput *make_touch(const char *name)
{
	struct libevdev *dev = libevdev_new();
	libevdev_set_name(dev, name);
	libevdev_set_id_bustype(dev, BUS_VIRTUAL);
	libevdev_set_id_vendor(dev, 0x1d6b);
	libevdev_set_id_product(dev, 0x0103);
	libevdev_enable_property(dev, INPUT_PROP_DIRECT);
	libevdev_enable_event_type(dev, EV_KEY);
	libevdev_enable_event_code(dev, EV_KEY, BTN_TOUCH, NULL);
	struct input_absinfo abs = { .minimum = 0, .maximum = TOUCH_MAX, .resolution = 10 };
	struct input_absinfo slots = { .minimum = 0, .maximum = 9 };
	struct input_absinfo ids = { .minimum = 0, .maximum = 65535 };
	libevdev_enable_event_type(dev, EV_ABS);
	libevdev_enable_event_code(dev, EV_ABS, ABS_X, &abs);
	libevdev_enable_event_code(dev, EV_ABS, ABS_Y, &abs);
	libevdev_enable_event_code(dev, EV_ABS, ABS_MT_SLOT, &slots);
	libevdev_enable_event_code(dev, EV_ABS, ABS_MT_TRACKING_ID, &ids);
	libevdev_enable_event_code(dev, EV_ABS, ABS_MT_POSITION_X, &abs);
	libevdev_enable_event_code(dev, EV_ABS, ABS_MT_POSITION_Y, &abs);
	return create(dev);
}

static void emit(struct libevdev_uinput *ui, unsigned type, unsigned code, int value)
{
	libevdev_uinput_write_event(ui, type, code, value);
}

static void syn(struct libevdev_uinput *ui)
{
	emit(ui, EV_SYN, SYN_REPORT, 0);
}

static int tracking_id = 1;
static int touching;

static const char *run(char *line)
{
	char verb[16] = "", arg[16] = "";
	int a = 0, b = 0, c = 0;
	int n = sscanf(line, "%15s", verb);
	if (n != 1) {
		return NULL;
	}
	if (strcmp(verb, "key") == 0 && keyboard) {
		n = sscanf(line, "key %d %15s", &a, arg);
		if (n < 1) {
			return "error key CODE [down|up]";
		}
		if (n == 1 || strcmp(arg, "down") == 0) {
			emit(keyboard, EV_KEY, (unsigned)a, 1);
			syn(keyboard);
		}
		if (n == 1 || strcmp(arg, "up") == 0) {
			emit(keyboard, EV_KEY, (unsigned)a, 0);
			syn(keyboard);
		}
	} else if (strcmp(verb, "rel") == 0 && mouse) {
		if (sscanf(line, "rel %d %d", &a, &b) != 2) {
			return "error rel DX DY";
		}
		emit(mouse, EV_REL, REL_X, a);
		emit(mouse, EV_REL, REL_Y, b);
		syn(mouse);
	} else if (strcmp(verb, "btn") == 0 && mouse) {
		if (sscanf(line, "btn %d", &a) != 1) {
			return "error btn CODE";
		}
		emit(mouse, EV_KEY, (unsigned)a, 1);
		syn(mouse);
		emit(mouse, EV_KEY, (unsigned)a, 0);
		syn(mouse);
	} else if (strcmp(verb, "wheel") == 0 && mouse) {
		if (sscanf(line, "wheel %d", &a) != 1) {
			return "error wheel N";
		}
		emit(mouse, EV_REL, REL_WHEEL, a);
		syn(mouse);
	} else if (strcmp(verb, "touch") == 0 && touch) {
		n = sscanf(line, "touch %15s %d %d %d", arg, &a, &b, &c);
		if (n < 2 || a < 0 || a > 9) {
			return "error touch down|move|up SLOT [X Y]";
		}
		emit(touch, EV_ABS, ABS_MT_SLOT, a);
		if (strcmp(arg, "up") == 0) {
			emit(touch, EV_ABS, ABS_MT_TRACKING_ID, -1);
			if (--touching == 0) {
				emit(touch, EV_KEY, BTN_TOUCH, 0);
			}
		} else if (n == 4 && (strcmp(arg, "down") == 0 || strcmp(arg, "move") == 0)) {
			if (arg[0] == 'd') {
				emit(touch, EV_ABS, ABS_MT_TRACKING_ID, tracking_id++);
				if (touching++ == 0) {
					emit(touch, EV_KEY, BTN_TOUCH, 1);
				}
			}
			emit(touch, EV_ABS, ABS_MT_POSITION_X, b);
			emit(touch, EV_ABS, ABS_MT_POSITION_Y, c);
			emit(touch, EV_ABS, ABS_X, b);
			emit(touch, EV_ABS, ABS_Y, c);
		} else {
			return "error touch down|move|up SLOT [X Y]";
		}
		syn(touch);
	} else if (strcmp(verb, "remove") == 0) {
		n = sscanf(line, "remove %15s", arg);
		struct libevdev_uinput **which = strcmp(arg, "keyboard") == 0 ? &keyboard :
			strcmp(arg, "mouse") == 0 ? &mouse : strcmp(arg, "touch") == 0 ? &touch : NULL;
		if (n != 1 || !which || !*which) {
			return "error remove keyboard|mouse|touch (one that exists)";
		}
		libevdev_uinput_destroy(*which);
		*which = NULL;
	} else if (strcmp(verb, "sleep") == 0) {
		if (sscanf(line, "sleep %d", &a) != 1 || a < 0) {
			return "error sleep MS";
		}
		struct timespec ts = { .tv_sec = a / 1000, .tv_nsec = (long)(a % 1000) * 1000000 };
		nanosleep(&ts, NULL);
	} else {
		return "error unknown command, or its device was not made";
	}
	return "ok";
}

int main(int argc, char *argv[])
{
	for (int i = 1; i < argc; i++) {
		const char *name = i + 1 < argc ? argv[i + 1] : NULL;
		if (!name) {
			fprintf(stderr, "usage: wla-uinput [--keyboard NAME] [--mouse NAME] "
				"[--touch NAME] < commands\n");
			return 2;
		}
		if (strcmp(argv[i], "--keyboard") == 0) {
			keyboard = make_keyboard(name);
		} else if (strcmp(argv[i], "--mouse") == 0) {
			mouse = make_mouse(name);
		} else if (strcmp(argv[i], "--touch") == 0) {
			touch = make_touch(name);
		} else {
			fprintf(stderr, "wla-uinput: unknown option %s\n", argv[i]);
			return 2;
		}
		i++;
	}
	printf("ready keyboard=%s mouse=%s touch=%s\n",
		keyboard ? libevdev_uinput_get_devnode(keyboard) : "none",
		mouse ? libevdev_uinput_get_devnode(mouse) : "none",
		touch ? libevdev_uinput_get_devnode(touch) : "none");
	fflush(stdout);
	char line[256];
	while (fgets(line, sizeof(line), stdin)) {
		const char *reply = run(line);
		if (reply) {
			printf("%s\n", reply);
			fflush(stdout);
		}
	}
	if (keyboard) {
		libevdev_uinput_destroy(keyboard);
	}
	if (mouse) {
		libevdev_uinput_destroy(mouse);
	}
	if (touch) {
		libevdev_uinput_destroy(touch);
	}
	return 0;
}
