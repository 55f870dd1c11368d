/*
 * wla-input-client: an xdg-shell toplevel of one colour that records the
 * input it receives, one line per event on stdout (flushed), each starting
 * with its --name:
 *
 *   NAME mapped
 *   NAME keyboard enter | keyboard leave
 *   NAME key CODE pressed|released text="h"   (text: what the keymap makes)
 *   NAME text "what was typed so far"         (after each printable key)
 *   NAME pointer enter X,Y | pointer motion X,Y | pointer leave
 *   NAME button CODE pressed|released
 *   NAME axis vertical|horizontal DELTA
 *   NAME touch down ID X,Y | touch motion ID X,Y | touch up ID
 *
 * X,Y are surface-local. It exits 0 once the typed text ends with
 * --exit-on-text TEXT, or after --timeout S seconds (status 1 if
 * --exit-on-text was given and never seen).
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <wayland-client.h>
#include <xkbcommon/xkbcommon.h>

#include "xdg-shell-client-protocol.h"
#include "util.h"

#define TEXT_MAX 4096

struct client {
	const char *name;
	struct wl_display *display;
	struct wl_registry *registry;
	struct wl_compositor *compositor;
	struct wl_shm *shm;
	struct xdg_wm_base *wm_base;
	struct wl_seat *seat;
	struct wl_keyboard *keyboard;
	struct wl_pointer *pointer;
	struct wl_touch *touch;
	struct wl_surface *surface;
	struct xdg_surface *xdg_surface;
	struct xdg_toplevel *xdg_toplevel;
	struct wl_buffer *buffer;
	struct xkb_context *xkb;
	struct xkb_keymap *keymap;
	struct xkb_state *xkb_state;
	int32_t width, height;
	uint32_t color;
	long timeout_s;
	const char *exit_text;
	char text[TEXT_MAX];
	size_t text_len;
	bool mapped, done;
	int status;
};

__attribute__((format(printf, 2, 3)))
static void say(struct client *client, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s ", client->name);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

/* ---- Keyboard ---- */

static void handle_keymap(void *data, struct wl_keyboard *kb, uint32_t format, int32_t fd,
	uint32_t size)
{
	struct client *client = data;
	if (format != WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1) {
		close(fd);
		return;
	}
	char *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		return;
	}
	struct xkb_keymap *keymap = xkb_keymap_new_from_string(client->xkb, map,
		XKB_KEYMAP_FORMAT_TEXT_V1, XKB_KEYMAP_COMPILE_NO_FLAGS);
	munmap(map, size);
	if (!keymap) {
		fprintf(stderr, "wla-input-client: cannot compile the compositor's keymap\n");
		return;
	}
	xkb_state_unref(client->xkb_state);
	xkb_keymap_unref(client->keymap);
	client->keymap = keymap;
	client->xkb_state = xkb_state_new(keymap);
}

static void handle_kb_enter(void *data, struct wl_keyboard *kb, uint32_t serial,
	struct wl_surface *surface, struct wl_array *keys)
{
	say(data, "keyboard enter");
}

static void handle_kb_leave(void *data, struct wl_keyboard *kb, uint32_t serial,
	struct wl_surface *surface)
{
	say(data, "keyboard leave");
}

static void handle_key(void *data, struct wl_keyboard *kb, uint32_t serial, uint32_t time,
	uint32_t key, uint32_t state)
{
	struct client *client = data;
	char utf8[16] = "";
	if (client->xkb_state) {
		xkb_state_key_get_utf8(client->xkb_state, key + 8, utf8, sizeof(utf8));
	}
	bool pressed = state == WL_KEYBOARD_KEY_STATE_PRESSED;
	say(client, "key %u %s text=\"%s\"", key, pressed ? "pressed" : "released",
		(unsigned char)utf8[0] >= 0x20 ? utf8 : "");
	size_t len = strlen(utf8);
	if (pressed && len && (unsigned char)utf8[0] >= 0x20 &&
			client->text_len + len < sizeof(client->text)) {
		memcpy(client->text + client->text_len, utf8, len + 1);
		client->text_len += len;
		say(client, "text \"%s\"", client->text);
		size_t want = client->exit_text ? strlen(client->exit_text) : 0;
		if (want && client->text_len >= want &&
				strcmp(client->text + client->text_len - want, client->exit_text) == 0) {
			client->done = true;
		}
	}
}

static void handle_modifiers(void *data, struct wl_keyboard *kb, uint32_t serial,
	uint32_t depressed, uint32_t latched, uint32_t locked, uint32_t group)
{
	struct client *client = data;
	if (client->xkb_state) {
		xkb_state_update_mask(client->xkb_state, depressed, latched, locked, 0, 0, group);
	}
}

static void handle_repeat_info(void *data, struct wl_keyboard *kb, int32_t rate,
	int32_t delay)
{
}

static const struct wl_keyboard_listener keyboard_listener = {
	.keymap = handle_keymap,
	.enter = handle_kb_enter,
	.leave = handle_kb_leave,
	.key = handle_key,
	.modifiers = handle_modifiers,
	.repeat_info = handle_repeat_info,
};

/* ---- Pointer ---- */

static void handle_ptr_enter(void *data, struct wl_pointer *p, uint32_t serial,
	struct wl_surface *surface, wl_fixed_t x, wl_fixed_t y)
{
	say(data, "pointer enter %.0f,%.0f", wl_fixed_to_double(x), wl_fixed_to_double(y));
}

static void handle_ptr_leave(void *data, struct wl_pointer *p, uint32_t serial,
	struct wl_surface *surface)
{
	say(data, "pointer leave");
}

static void handle_ptr_motion(void *data, struct wl_pointer *p, uint32_t time, wl_fixed_t x,
	wl_fixed_t y)
{
	say(data, "pointer motion %.0f,%.0f", wl_fixed_to_double(x), wl_fixed_to_double(y));
}

static void handle_ptr_button(void *data, struct wl_pointer *p, uint32_t serial, uint32_t time,
	uint32_t button, uint32_t state)
{
	say(data, "button %u %s", button,
		state == WL_POINTER_BUTTON_STATE_PRESSED ? "pressed" : "released");
}

static void handle_ptr_axis(void *data, struct wl_pointer *p, uint32_t time, uint32_t axis,
	wl_fixed_t value)
{
	say(data, "axis %s %.2f", axis == WL_POINTER_AXIS_VERTICAL_SCROLL ? "vertical" :
		"horizontal", wl_fixed_to_double(value));
}

static void handle_ptr_frame(void *data, struct wl_pointer *p)
{
}

static void handle_ptr_axis_source(void *data, struct wl_pointer *p, uint32_t source)
{
}

static void handle_ptr_axis_stop(void *data, struct wl_pointer *p, uint32_t time, uint32_t axis)
{
}

static void handle_ptr_axis_discrete(void *data, struct wl_pointer *p, uint32_t axis,
	int32_t discrete)
{
}

static const struct wl_pointer_listener pointer_listener = {
	.enter = handle_ptr_enter,
	.leave = handle_ptr_leave,
	.motion = handle_ptr_motion,
	.button = handle_ptr_button,
	.axis = handle_ptr_axis,
	.frame = handle_ptr_frame,
	.axis_source = handle_ptr_axis_source,
	.axis_stop = handle_ptr_axis_stop,
	.axis_discrete = handle_ptr_axis_discrete,
};

/* ---- Touch ---- */

static void handle_touch_down(void *data, struct wl_touch *t, uint32_t serial, uint32_t time,
	struct wl_surface *surface, int32_t id, wl_fixed_t x, wl_fixed_t y)
{
	say(data, "touch down %d %.0f,%.0f", id, wl_fixed_to_double(x), wl_fixed_to_double(y));
}

static void handle_touch_up(void *data, struct wl_touch *t, uint32_t serial, uint32_t time,
	int32_t id)
{
	say(data, "touch up %d", id);
}

static void handle_touch_motion(void *data, struct wl_touch *t, uint32_t time, int32_t id,
	wl_fixed_t x, wl_fixed_t y)
{
	say(data, "touch motion %d %.0f,%.0f", id, wl_fixed_to_double(x), wl_fixed_to_double(y));
}

static void handle_touch_frame(void *data, struct wl_touch *t)
{
}

static void handle_touch_cancel(void *data, struct wl_touch *t)
{
	say(data, "touch cancel");
}

static void handle_touch_shape(void *data, struct wl_touch *t, int32_t id, wl_fixed_t major,
	wl_fixed_t minor)
{
}

static void handle_touch_orientation(void *data, struct wl_touch *t, int32_t id,
	wl_fixed_t orientation)
{
}

static const struct wl_touch_listener touch_listener = {
	.down = handle_touch_down,
	.up = handle_touch_up,
	.motion = handle_touch_motion,
	.frame = handle_touch_frame,
	.cancel = handle_touch_cancel,
	.shape = handle_touch_shape,
	.orientation = handle_touch_orientation,
};

/* ---- Seat, shell, registry ---- */

static void handle_capabilities(void *data, struct wl_seat *seat, uint32_t caps)
{
	struct client *client = data;
	if ((caps & WL_SEAT_CAPABILITY_KEYBOARD) && !client->keyboard) {
		client->keyboard = wl_seat_get_keyboard(seat);
		wl_keyboard_add_listener(client->keyboard, &keyboard_listener, client);
	}
	if ((caps & WL_SEAT_CAPABILITY_POINTER) && !client->pointer) {
		client->pointer = wl_seat_get_pointer(seat);
		wl_pointer_add_listener(client->pointer, &pointer_listener, client);
	}
	if ((caps & WL_SEAT_CAPABILITY_TOUCH) && !client->touch) {
		client->touch = wl_seat_get_touch(seat);
		wl_touch_add_listener(client->touch, &touch_listener, client);
	}
}

static void handle_seat_name(void *data, struct wl_seat *seat, const char *name)
{
}

static const struct wl_seat_listener seat_listener = {
	.capabilities = handle_capabilities,
	.name = handle_seat_name,
};

static bool create_buffer(struct client *client)
{
	int32_t stride = client->width * 4;
	size_t size = (size_t)stride * (size_t)client->height;
	char name[64];
	snprintf(name, sizeof(name), "/wla-input-%ld", (long)getpid());
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		fprintf(stderr, "wla-input-client: shm_open: %s\n", strerror(errno));
		return false;
	}
	shm_unlink(name);
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return false;
	}
	uint32_t *pixels = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (pixels == MAP_FAILED) {
		close(fd);
		return false;
	}
	for (size_t i = 0; i < size / 4; i++) {
		pixels[i] = client->color;
	}
	munmap(pixels, size);
	struct wl_shm_pool *pool = wl_shm_create_pool(client->shm, fd, (int32_t)size);
	close(fd);
	client->buffer = wl_shm_pool_create_buffer(pool, 0, client->width, client->height,
		stride, WL_SHM_FORMAT_XRGB8888);
	wl_shm_pool_destroy(pool);
	return true;
}

static void handle_xdg_configure(void *data, struct xdg_surface *xdg_surface, uint32_t serial)
{
	struct client *client = data;
	xdg_surface_ack_configure(xdg_surface, serial);
	if (!client->mapped) {
		wl_surface_attach(client->surface, client->buffer, 0, 0);
		wl_surface_damage(client->surface, 0, 0, client->width, client->height);
		wl_surface_commit(client->surface);
		client->mapped = true;
		say(client, "mapped");
	}
}

static const struct xdg_surface_listener xdg_surface_listener = {
	.configure = handle_xdg_configure,
};

static void handle_toplevel_configure(void *data, struct xdg_toplevel *t, int32_t w, int32_t h,
	struct wl_array *states)
{
}

static void handle_toplevel_close(void *data, struct xdg_toplevel *t)
{
	((struct client *)data)->done = true;
}

static const struct xdg_toplevel_listener toplevel_listener = {
	.configure = handle_toplevel_configure,
	.close = handle_toplevel_close,
};

static void handle_ping(void *data, struct xdg_wm_base *wm_base, uint32_t serial)
{
	xdg_wm_base_pong(wm_base, serial);
}

static const struct xdg_wm_base_listener wm_base_listener = { .ping = handle_ping };

static void handle_global(void *data, struct wl_registry *registry, uint32_t name,
	const char *interface, uint32_t version)
{
	struct client *client = data;
	if (strcmp(interface, wl_compositor_interface.name) == 0) {
		client->compositor = wl_registry_bind(registry, name, &wl_compositor_interface, 4);
	} else if (strcmp(interface, wl_shm_interface.name) == 0) {
		client->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
	} else if (strcmp(interface, xdg_wm_base_interface.name) == 0) {
		client->wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface, 1);
		xdg_wm_base_add_listener(client->wm_base, &wm_base_listener, client);
	} else if (strcmp(interface, wl_seat_interface.name) == 0 && !client->seat) {
		client->seat = wl_registry_bind(registry, name, &wl_seat_interface,
			version < 5 ? version : 5);
		wl_seat_add_listener(client->seat, &seat_listener, client);
	}
}

static void handle_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
	.global = handle_global,
	.global_remove = handle_global_remove,
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void run(struct client *client)
{
	int64_t deadline = now_ms() + client->timeout_s * 1000;
	while (!client->done) {
		if (wl_display_dispatch_pending(client->display) < 0 || client->done) {
			break;
		}
		if (wl_display_flush(client->display) < 0 && errno != EAGAIN) {
			break;
		}
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			break;
		}
		struct pollfd pfd = { .fd = wl_display_get_fd(client->display), .events = POLLIN };
		int ret = poll(&pfd, 1, (int)left);
		if (ret < 0 && errno != EINTR) {
			break;
		}
		if (ret > 0 && wl_display_dispatch(client->display) < 0) {
			break;
		}
	}
	if (client->exit_text && !client->done) {
		fprintf(stderr, "wla-input-client %s: \"%s\" was never typed (text: \"%s\")\n",
			client->name, client->exit_text, client->text);
		client->status = EXIT_FAILURE;
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: wla-input-client [OPTIONS]\n"
		"  -n, --name NAME          prefix of every line (default client)\n"
		"  -W, --width N, -H, --height N   window size (default 256x256)\n"
		"  -c, --color 0xRRGGBB     window colour (default 0x808080)\n"
		"      --exit-on-text TEXT  exit 0 once the typed text ends with TEXT\n"
		"      --timeout S          exit after S seconds (default 60)\n");
}

int main(int argc, char *argv[])
{
	struct client client = { .name = "client", .width = 256, .height = 256,
		.color = 0xff808080u, .timeout_s = 60, .status = EXIT_SUCCESS };
	static const struct option options[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "width", required_argument, NULL, 'W' },
		{ "height", required_argument, NULL, 'H' },
		{ "color", required_argument, NULL, 'c' },
		{ "exit-on-text", required_argument, NULL, 'e' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;
	long v;
	while ((opt = getopt_long(argc, argv, "n:W:H:c:h", options, NULL)) != -1) {
		switch (opt) {
		case 'n':
			client.name = optarg;
			break;
		case 'W':
		case 'H':
			if (!wla_parse_long(optarg, 1, 4096, &v)) {
				fprintf(stderr, "wla-input-client: size '%s': expected 1..4096\n", optarg);
				return 2;
			}
			*(opt == 'W' ? &client.width : &client.height) = (int32_t)v;
			break;
		case 'c': {
			char *end;
			unsigned long c = strtoul(optarg, &end, 0);
			if (*end || c > 0xffffff) {
				fprintf(stderr, "wla-input-client: colour '%s': expected 0xRRGGBB\n",
					optarg);
				return 2;
			}
			client.color = 0xff000000u | (uint32_t)c;
			break;
		}
		case 'e':
			client.exit_text = optarg;
			break;
		case 't':
			if (!wla_parse_long(optarg, 1, 3600, &client.timeout_s)) {
				fprintf(stderr, "wla-input-client: --timeout '%s': expected 1..3600\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	client.xkb = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
	client.display = wl_display_connect(NULL);
	if (!client.display || !client.xkb) {
		fprintf(stderr, "wla-input-client: cannot connect to the compositor\n");
		return EXIT_FAILURE;
	}
	client.registry = wl_display_get_registry(client.display);
	wl_registry_add_listener(client.registry, &registry_listener, &client);
	wl_display_roundtrip(client.display);
	if (!client.compositor || !client.shm || !client.wm_base || !client.seat) {
		fprintf(stderr, "wla-input-client: the compositor lacks a global it needs\n");
		return EXIT_FAILURE;
	}
	if (!create_buffer(&client)) {
		return EXIT_FAILURE;
	}
	client.surface = wl_compositor_create_surface(client.compositor);
	client.xdg_surface = xdg_wm_base_get_xdg_surface(client.wm_base, client.surface);
	xdg_surface_add_listener(client.xdg_surface, &xdg_surface_listener, &client);
	client.xdg_toplevel = xdg_surface_get_toplevel(client.xdg_surface);
	xdg_toplevel_add_listener(client.xdg_toplevel, &toplevel_listener, &client);
	xdg_toplevel_set_title(client.xdg_toplevel, client.name);
	wl_surface_commit(client.surface);
	run(&client);
	int status = client.status;
	/* Everything the client made goes with the connection. */
	if (client.keyboard) {
		wl_keyboard_release(client.keyboard);
	}
	if (client.pointer) {
		wl_pointer_release(client.pointer);
	}
	if (client.touch) {
		wl_touch_release(client.touch);
	}
	wl_buffer_destroy(client.buffer);
	xdg_toplevel_destroy(client.xdg_toplevel);
	xdg_surface_destroy(client.xdg_surface);
	wl_surface_destroy(client.surface);
	xdg_wm_base_destroy(client.wm_base);
	if (wl_seat_get_version(client.seat) >= WL_SEAT_RELEASE_SINCE_VERSION) {
		wl_seat_release(client.seat);
	} else {
		wl_seat_destroy(client.seat);
	}
	wl_shm_destroy(client.shm);
	wl_compositor_destroy(client.compositor);
	wl_registry_destroy(client.registry);
	xkb_state_unref(client.xkb_state);
	xkb_keymap_unref(client.keymap);
	xkb_context_unref(client.xkb);
	wl_display_flush(client.display);
	wl_display_disconnect(client.display);
	return status;
}
