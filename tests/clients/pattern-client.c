/*
 * wla-pattern-client: an xdg-shell toplevel showing four opaque quadrants
 * (red, green / blue, white) from wl_shm buffers, so that a capture of the
 * compositor's output can be checked pixel by pixel. With --frames N it
 * redraws on every frame callback and exits 0 after N frames, which keeps the
 * compositor presenting one frame per vblank.
 */
#include <errno.h>
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

#include "xdg-shell-client-protocol.h"
#include "util.h"

#define PATTERN_TOP_LEFT 0xffff0000u
#define PATTERN_TOP_RIGHT 0xff00ff00u
#define PATTERN_BOTTOM_LEFT 0xff0000ffu
#define PATTERN_BOTTOM_RIGHT 0xffffffffu

#define N_BUFFERS 2

struct client_buffer {
	struct client *client;
	struct wl_buffer *wl_buffer;
	uint32_t *pixels;
	bool busy;
};

struct client {
	struct wl_display *display;
	struct wl_registry *registry;
	struct wl_compositor *compositor;
	struct wl_shm *shm;
	struct xdg_wm_base *wm_base;
	struct wl_surface *surface;
	struct xdg_surface *xdg_surface;
	struct xdg_toplevel *xdg_toplevel;
	struct wl_callback *frame_callback;

	struct wl_shm_pool *pool;
	void *pool_data;
	size_t pool_size;
	struct client_buffer buffers[N_BUFFERS];

	int32_t width, height;
	long frames_wanted; /* 0: draw once and stay */
	long frames_done;
	long timeout_s; /* 0: no timeout */
	bool configured;
	bool closed;
	bool done;
	int status;
};

static void fail(struct client *client, const char *message)
{
	fprintf(stderr, "wla-pattern-client: %s\n", message);
	client->status = EXIT_FAILURE;
	client->done = true;
}

static void handle_buffer_release(void *data, struct wl_buffer *wl_buffer)
{
	struct client_buffer *buffer = data;
	buffer->busy = false;
}

static const struct wl_buffer_listener buffer_listener = {
	.release = handle_buffer_release,
};

static void fill_pattern(uint32_t *pixels, int32_t width, int32_t height)
{
	int32_t half_w = width / 2, half_h = height / 2;
	for (int32_t y = 0; y < height; y++) {
		uint32_t *row = pixels + (size_t)y * (size_t)width;
		uint32_t left = y < half_h ? PATTERN_TOP_LEFT : PATTERN_BOTTOM_LEFT;
		uint32_t right = y < half_h ? PATTERN_TOP_RIGHT : PATTERN_BOTTOM_RIGHT;
		for (int32_t x = 0; x < width; x++) {
			row[x] = x < half_w ? left : right;
		}
	}
}

static bool create_buffers(struct client *client)
{
	size_t stride = (size_t)client->width * 4;
	size_t size = stride * (size_t)client->height;
	client->pool_size = size * N_BUFFERS;

	char name[64];
	snprintf(name, sizeof(name), "/wla-pattern-%ld", (long)getpid());
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		fprintf(stderr, "wla-pattern-client: shm_open: %s\n", strerror(errno));
		return false;
	}
	shm_unlink(name);
	if (ftruncate(fd, (off_t)client->pool_size) < 0) {
		fprintf(stderr, "wla-pattern-client: ftruncate: %s\n", strerror(errno));
		close(fd);
		return false;
	}
	client->pool_data = mmap(NULL, client->pool_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		fd, 0);
	if (client->pool_data == MAP_FAILED) {
		fprintf(stderr, "wla-pattern-client: mmap: %s\n", strerror(errno));
		client->pool_data = NULL;
		close(fd);
		return false;
	}
	client->pool = wl_shm_create_pool(client->shm, fd, (int32_t)client->pool_size);
	close(fd);

	for (int i = 0; i < N_BUFFERS; i++) {
		struct client_buffer *buffer = &client->buffers[i];
		buffer->client = client;
		buffer->pixels = (uint32_t *)((char *)client->pool_data + size * (size_t)i);
		/* XRGB8888 so that the window is opaque whatever the alpha byte says. */
		buffer->wl_buffer = wl_shm_pool_create_buffer(client->pool, (int32_t)(size * i),
			client->width, client->height, (int32_t)stride, WL_SHM_FORMAT_XRGB8888);
		wl_buffer_add_listener(buffer->wl_buffer, &buffer_listener, buffer);
		fill_pattern(buffer->pixels, client->width, client->height);
	}
	return true;
}

static void handle_frame_done(void *data, struct wl_callback *callback, uint32_t time);

static const struct wl_callback_listener frame_listener = {
	.done = handle_frame_done,
};

static void draw(struct client *client)
{
	struct client_buffer *buffer = NULL;
	for (int i = 0; i < N_BUFFERS; i++) {
		if (!client->buffers[i].busy) {
			buffer = &client->buffers[i];
			break;
		}
	}
	if (buffer == NULL) {
		/* Both still held by the compositor: skip this frame, not an error. */
		fprintf(stderr, "wla-pattern-client: no free buffer, frame skipped\n");
	} else {
		/* Rewritten each frame so that every commit carries fresh content. */
		fill_pattern(buffer->pixels, client->width, client->height);
		wl_surface_attach(client->surface, buffer->wl_buffer, 0, 0);
		wl_surface_damage_buffer(client->surface, 0, 0, client->width, client->height);
		buffer->busy = true;
	}
	if (client->frames_wanted > 0) {
		client->frame_callback = wl_surface_frame(client->surface);
		wl_callback_add_listener(client->frame_callback, &frame_listener, client);
	}
	wl_surface_commit(client->surface);
}

static void handle_frame_done(void *data, struct wl_callback *callback, uint32_t time)
{
	struct client *client = data;
	wl_callback_destroy(callback);
	client->frame_callback = NULL;
	client->frames_done++;
	if (client->frames_done >= client->frames_wanted) {
		client->done = true;
		return;
	}
	draw(client);
}

static void handle_xdg_surface_configure(void *data, struct xdg_surface *xdg_surface,
	uint32_t serial)
{
	struct client *client = data;
	xdg_surface_ack_configure(xdg_surface, serial);
	if (!client->configured) {
		client->configured = true;
		draw(client);
	} else if (client->frames_wanted == 0) {
		/* A later configure (e.g. activation) wants a commit for its ack. */
		draw(client);
	}
}

static const struct xdg_surface_listener xdg_surface_listener = {
	.configure = handle_xdg_surface_configure,
};

static void handle_toplevel_configure(void *data, struct xdg_toplevel *toplevel,
	int32_t width, int32_t height, struct wl_array *states)
{
	/* The size is ours to choose: the test asserts on exactly -W x -H. */
}

static void handle_toplevel_close(void *data, struct xdg_toplevel *toplevel)
{
	struct client *client = data;
	client->closed = true;
	client->done = true;
}

static const struct xdg_toplevel_listener toplevel_listener = {
	.configure = handle_toplevel_configure,
	.close = handle_toplevel_close,
};

static void handle_wm_base_ping(void *data, struct xdg_wm_base *wm_base, uint32_t serial)
{
	xdg_wm_base_pong(wm_base, serial);
}

static const struct xdg_wm_base_listener wm_base_listener = {
	.ping = handle_wm_base_ping,
};

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
	}
}

static void handle_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
	.global = handle_global,
	.global_remove = handle_global_remove,
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: wla-pattern-client [options]\n"
		"  -W, --width N     window width (default 256)\n"
		"  -H, --height N    window height (default 256)\n"
		"      --frames N    redraw on every frame callback, exit 0 after N frames\n"
		"      --timeout S   exit 0 after S seconds\n"
		"  -h, --help        this text\n"
		"Quadrants: top-left 0x%08x, top-right 0x%08x, bottom-left 0x%08x,\n"
		"bottom-right 0x%08x.\n",
		PATTERN_TOP_LEFT, PATTERN_TOP_RIGHT, PATTERN_BOTTOM_LEFT, PATTERN_BOTTOM_RIGHT);
}

/* Returns -1 to go on, otherwise the exit status. */
static int parse_options(int argc, char *argv[], struct client *client)
{
	static const struct option long_options[] = {
		{"width", required_argument, NULL, 'W'},
		{"height", required_argument, NULL, 'H'},
		{"frames", required_argument, NULL, 'f'},
		{"timeout", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	opterr = 0;
	long value;
	int c;
	while ((c = getopt_long(argc, argv, ":W:H:h", long_options, NULL)) != -1) {
		switch (c) {
		case 'W':
		case 'H':
			if (!wla_parse_long(optarg, 2, 8192, &value)) {
				fprintf(stderr, "wla-pattern-client: -%c '%s': expected "
					"2..8192\n", c, optarg);
				return 2;
			}
			*(c == 'W' ? &client->width : &client->height) = (int32_t)value;
			break;
		case 'f':
			if (!wla_parse_long(optarg, 1, 100000000, &client->frames_wanted)) {
				fprintf(stderr, "wla-pattern-client: --frames '%s': expected "
					"a number >= 1\n", optarg);
				return 2;
			}
			break;
		case 't':
			if (!wla_parse_long(optarg, 1, 86400, &client->timeout_s)) {
				fprintf(stderr, "wla-pattern-client: --timeout '%s': expected "
					"seconds >= 1\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "wla-pattern-client: bad option '%s' (see -h)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "wla-pattern-client: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	return -1;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Dispatch until done, the connection breaks or the timeout expires. */
static void run(struct client *client)
{
	int64_t deadline = client->timeout_s > 0 ? now_ms() + client->timeout_s * 1000 : -1;
	while (!client->done) {
		if (wl_display_dispatch_pending(client->display) < 0) {
			break;
		}
		if (client->done) {
			break;
		}
		while (wl_display_prepare_read(client->display) != 0) {
			wl_display_dispatch_pending(client->display);
		}
		if (wl_display_flush(client->display) < 0 && errno != EAGAIN) {
			wl_display_cancel_read(client->display);
			break;
		}
		int timeout = -1;
		if (deadline >= 0) {
			int64_t left = deadline - now_ms();
			timeout = left > 0 ? (int)left : 0;
		}
		struct pollfd pfd = {.fd = wl_display_get_fd(client->display), .events = POLLIN};
		int ret = poll(&pfd, 1, timeout);
		if (ret < 0 && errno != EINTR) {
			wl_display_cancel_read(client->display);
			fail(client, "poll failed");
			return;
		}
		if (ret <= 0) {
			wl_display_cancel_read(client->display);
			if (deadline >= 0 && now_ms() >= deadline) {
				return;
			}
			continue;
		}
		if (wl_display_read_events(client->display) < 0) {
			break;
		}
	}
	if (client->done) {
		return;
	}
	int err = wl_display_get_error(client->display);
	if (err == EPROTO) {
		const struct wl_interface *interface;
		uint32_t id;
		uint32_t code = wl_display_get_protocol_error(client->display, &interface, &id);
		fprintf(stderr, "wla-pattern-client: protocol error %u on %s@%u\n", code,
			interface != NULL ? interface->name : "?", id);
		client->status = EXIT_FAILURE;
	} else if (client->frames_wanted > 0) {
		/* The compositor went away before the frames we were asked for. */
		fprintf(stderr, "wla-pattern-client: connection lost after %ld of %ld frames: %s\n",
			client->frames_done, client->frames_wanted, strerror(err));
		client->status = EXIT_FAILURE;
	}
	/* Without --frames, the compositor closing the connection is the normal end. */
}

static void client_finish(struct client *client)
{
	if (client->frame_callback != NULL) {
		wl_callback_destroy(client->frame_callback);
	}
	for (int i = 0; i < N_BUFFERS; i++) {
		if (client->buffers[i].wl_buffer != NULL) {
			wl_buffer_destroy(client->buffers[i].wl_buffer);
		}
	}
	if (client->pool != NULL) {
		wl_shm_pool_destroy(client->pool);
	}
	if (client->pool_data != NULL) {
		munmap(client->pool_data, client->pool_size);
	}
	if (client->xdg_toplevel != NULL) {
		xdg_toplevel_destroy(client->xdg_toplevel);
	}
	if (client->xdg_surface != NULL) {
		xdg_surface_destroy(client->xdg_surface);
	}
	if (client->surface != NULL) {
		wl_surface_destroy(client->surface);
	}
	if (client->wm_base != NULL) {
		xdg_wm_base_destroy(client->wm_base);
	}
	if (client->shm != NULL) {
		wl_shm_destroy(client->shm);
	}
	if (client->compositor != NULL) {
		wl_compositor_destroy(client->compositor);
	}
	if (client->registry != NULL) {
		wl_registry_destroy(client->registry);
	}
	wl_display_flush(client->display);
	wl_display_disconnect(client->display);
}

int main(int argc, char *argv[])
{
	struct client client = {
		.width = 256,
		.height = 256,
		.status = EXIT_SUCCESS,
	};
	int status = parse_options(argc, argv, &client);
	if (status >= 0) {
		return status;
	}

	client.display = wl_display_connect(NULL);
	if (client.display == NULL) {
		fprintf(stderr, "wla-pattern-client: cannot connect to the compositor "
			"(WAYLAND_DISPLAY=%s)\n", getenv("WAYLAND_DISPLAY") ?
			getenv("WAYLAND_DISPLAY") : "unset");
		return EXIT_FAILURE;
	}
	client.registry = wl_display_get_registry(client.display);
	wl_registry_add_listener(client.registry, &registry_listener, &client);
	if (wl_display_roundtrip(client.display) < 0) {
		fail(&client, "initial roundtrip failed");
		client_finish(&client);
		return EXIT_FAILURE;
	}
	if (client.compositor == NULL || client.shm == NULL || client.wm_base == NULL) {
		fprintf(stderr, "wla-pattern-client: compositor lacks%s%s%s\n",
			client.compositor == NULL ? " wl_compositor" : "",
			client.shm == NULL ? " wl_shm" : "",
			client.wm_base == NULL ? " xdg_wm_base" : "");
		client_finish(&client);
		return EXIT_FAILURE;
	}
	if (!create_buffers(&client)) {
		client_finish(&client);
		return EXIT_FAILURE;
	}

	client.surface = wl_compositor_create_surface(client.compositor);
	client.xdg_surface = xdg_wm_base_get_xdg_surface(client.wm_base, client.surface);
	xdg_surface_add_listener(client.xdg_surface, &xdg_surface_listener, &client);
	client.xdg_toplevel = xdg_surface_get_toplevel(client.xdg_surface);
	xdg_toplevel_add_listener(client.xdg_toplevel, &toplevel_listener, &client);
	xdg_toplevel_set_title(client.xdg_toplevel, "wla-pattern-client");
	/* The initial commit without a buffer asks for the first configure. */
	wl_surface_commit(client.surface);

	run(&client);
	status = client.status;
	client_finish(&client);
	return status;
}
