/*
 * tinywl: a small wlroots 0.15 compositor that runs on the wlatomic backend by
 * default. It exists to exercise the plugin the way a real compositor does
 * (wlr_scene, xdg-shell, a hardware cursor, presentation-time, screencopy)
 * and to give the integration tests something to measure: it can start a
 * client, capture what the display controller scans out, and print per-output
 * statistics on exit. With --deadline it renders each frame as late as the
 * wlatomic frame deadline allows instead of at the frame event; with
 * --stall-every and --stall-ms it blocks before some commits, like a
 * compositor that stalls.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/render/allocator.h>
#include <wlr/render/wlr_renderer.h>
#include <wlr/types/wlr_compositor.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_data_device.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_keyboard.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_damage.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_output_power_management_v1.h>
#include <wlr/types/wlr_pointer.h>
#include <wlr/types/wlr_presentation_time.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_screencopy_v1.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_xcursor_manager.h>
#include <wlr/types/wlr_xdg_output_v1.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>
#include <xkbcommon/xkbcommon.h>

#include <wlatomic/backend.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>

/*
 * What tinywl clears the screen to, as 0xRRGGBB. wlr_scene alone would leave
 * black, which cannot be told apart from the black outline of the cursor in a
 * capture; a bottom rectangle in this colour makes every background pixel
 * assertable. Each channel is n/255 so that it survives the float colour of
 * wlr_scene_rect exactly. The integration tests rely on this value.
 */
#define TINYWL_BACKGROUND 0x304050

#define TINYWL_CURSOR_THEME_SIZE 24

/* Presented frames whose intervals and latencies the statistics cover. */
#define TINYWL_STATS_WINDOW 4096
/* Render start times kept for matching present events (indexed by commit_seq):
 * more than any flip queue holds. */
#define TINYWL_START_RING 64
/* Render durations the --deadline margin is the maximum of. */
#define TINYWL_RENDER_SAMPLES 32
/* Added to the longest recent render: the timer's own wake-up latency and a
 * render slower than any of the last few. */
#define TINYWL_DEADLINE_SAFETY_NS 1500000

enum tinywl_backend_kind {
	TINYWL_BACKEND_WLA,
	TINYWL_BACKEND_AUTO,
};

struct tinywl_options {
	const char *startup_cmd;
	enum tinywl_backend_kind backend;
	const char *capture_path;
	long capture_after;
	int cursor_x, cursor_y;
	int window_x, window_y;
	long exit_after_frames; /* 0: run until told otherwise */
	/* --mode: set on every output instead of its preferred mode. */
	bool mode_set;
	int32_t mode_width, mode_height, mode_refresh_mhz;
	/* Render at the frame deadline minus the render time, not at the frame event. */
	bool deadline;
	/* --stall-every/--stall-ms: every Nth render of an output sleeps M ms before
	 * its commit; 0: never. */
	long stall_every;
	long stall_ms;
	/* --churn-ms: every N ms change the first output's mode, or plug or
	 * unplug a connector (soak runs); 0: never. */
	long churn_ms;
	bool verbose;
};

struct tinywl_server {
	struct tinywl_options opts;

	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wlr_renderer *renderer;
	struct wlr_allocator *allocator;

	struct wlr_scene *scene;
	struct wlr_scene_rect *background;
	struct wlr_output_layout *output_layout;
	struct wl_list outputs; /* tinywl_output.link, in creation order */
	struct tinywl_output *first_output;

	struct wlr_xdg_shell *xdg_shell;
	struct wl_list views; /* tinywl_view.link, most recently focused first */

	struct wlr_cursor *cursor;
	struct wlr_xcursor_manager *cursor_mgr;
	struct wlr_seat *seat;
	struct wl_list keyboards; /* tinywl_keyboard.link */

	pid_t child;
	struct wla_capture *capture;
	bool capture_requested;
	bool capture_written;
	int exit_status;
	/* The event loop has ended: no more frames, whatever a backend emits. */
	bool shutting_down;

	struct wl_event_source *sigint_source;
	struct wl_event_source *sigterm_source;
	struct wl_event_source *sigchld_source;
	struct wl_event_source *churn_source;
	uint64_t churn_steps;

	struct wl_listener new_output;
	struct wl_listener new_input;
	struct wl_listener new_surface;
	struct wl_listener motion;
	struct wl_listener motion_absolute;
	struct wl_listener button;
	struct wl_listener axis;
	struct wl_listener frame;
	struct wl_listener request_set_cursor;
	struct wl_listener request_set_selection;
	struct wl_listener output_power_set_mode;
};

struct tinywl_output {
	struct wl_list link;
	struct tinywl_server *server;
	struct wlr_output *wlr_output;

	/* Counted here from wlr_output events, for any backend. */
	uint64_t commits;
	uint64_t frames_presented;
	uint64_t seq_errors;
	bool seq_seen;
	bool seq_checked; /* a vblank counter was seen at all */
	uint32_t last_seq;
	struct timespec last_when;

	/* Measured here from present events the same way for every backend, so
	 * that wlatomic and wlroots' own backends compare like with like. */
	uint64_t frames_committed; /* commits with a buffer */
	uint64_t period_ns;        /* refresh period of the last present event */
	uint64_t last_present_ns;  /* 0: no frame presented yet */
	uint64_t intervals[TINYWL_STATS_WINDOW];
	uint64_t n_intervals;
	/* Render start time of the commit a present event names, by the
	 * commit_seq that wlroots gives the commit (the output's commit_seq
	 * after it). */
	struct {
		uint32_t commit_seq;
		bool valid;
		uint64_t start_ns;
	} starts[TINYWL_START_RING];
	uint64_t latencies[TINYWL_STATS_WINDOW];
	uint64_t n_latencies;
	/* From the time a present event reports to tinywl's own clock when
	 * it arrived: how late the backend's vblank reaches the compositor. */
	uint64_t event_lags[TINYWL_STATS_WINDOW];
	uint64_t n_event_lags;
	/* When each buffer commit returned, by the output's commit_seq after it:
	 * what a present event is checked against, whatever the backend says. */
	struct {
		uint32_t commit_seq;
		bool valid;
		uint64_t done_ns;
	} commit_times[TINYWL_START_RING];
	uint64_t presents_checked;   /* presents whose commit time was known */
	uint64_t unmatched_presents; /* presents naming no commit seen here */
	uint64_t early_presents;     /* presented before their commit returned */
	uint64_t gaps_checked;       /* presents checked for a queued gap */
	uint64_t queued_gaps;        /* waited past a vblank they were committed for */
	bool gap_prev_seen;
	uint32_t gap_prev_seq;
	uint64_t gap_prev_when_ns;
	/* --stall-every: renders so far. */
	uint64_t renders;
	/* Process CPU time and frames presented at the first presented frame:
	 * the per-frame figure leaves start-up out. */
	bool cpu_started;
	uint64_t cpu_start_us;
	uint64_t cpu_start_frames;

	/* --deadline: the last render durations and the timer that starts the
	 * next render. */
	uint64_t render_ns[TINYWL_RENDER_SAMPLES];
	uint64_t n_render;
	int deadline_fd;
	struct wl_event_source *deadline_source;
	bool deadline_armed;

	struct wl_listener frame;
	struct wl_listener commit;
	struct wl_listener present;
	struct wl_listener destroy;
};

struct tinywl_view {
	struct wl_list link;
	struct tinywl_server *server;
	struct wlr_xdg_surface *xdg_surface;
	struct wlr_scene_node *scene_node;

	struct wl_listener map;
	struct wl_listener unmap;
	struct wl_listener destroy;
};

struct tinywl_keyboard {
	struct wl_list link;
	struct tinywl_server *server;
	struct wlr_input_device *device;

	struct wl_listener modifiers;
	struct wl_listener key;
	struct wl_listener destroy;
};

static void server_exit(struct tinywl_server *server, int status)
{
	server->exit_status = status;
	wl_display_terminate(server->display);
}

/* A frame-count action (capture, exit) is waiting for frames to be presented. */
static bool frame_count_pending(const struct tinywl_server *server)
{
	return (server->opts.capture_path != NULL && !server->capture_requested) ||
		server->opts.exit_after_frames > 0;
}

static void focus_view(struct tinywl_view *view, struct wlr_surface *surface)
{
	struct tinywl_server *server = view->server;
	struct wlr_seat *seat = server->seat;
	struct wlr_surface *prev_surface = seat->keyboard_state.focused_surface;
	if (prev_surface == surface) {
		return;
	}
	if (prev_surface != NULL && wlr_surface_is_xdg_surface(prev_surface)) {
		struct wlr_xdg_surface *prev = wlr_xdg_surface_from_wlr_surface(prev_surface);
		if (prev != NULL && prev->role == WLR_XDG_SURFACE_ROLE_TOPLEVEL) {
			wlr_xdg_toplevel_set_activated(prev, false);
		}
	}
	wlr_scene_node_raise_to_top(view->scene_node);
	wl_list_remove(&view->link);
	wl_list_insert(&server->views, &view->link);
	wlr_xdg_toplevel_set_activated(view->xdg_surface, true);

	struct wlr_keyboard *keyboard = wlr_seat_get_keyboard(seat);
	if (keyboard != NULL) {
		wlr_seat_keyboard_notify_enter(seat, view->xdg_surface->surface,
			keyboard->keycodes, keyboard->num_keycodes, &keyboard->modifiers);
	} else {
		wlr_seat_keyboard_notify_enter(seat, view->xdg_surface->surface, NULL, 0, NULL);
	}
}

/* The view and surface under layout coordinates (lx, ly), if any. */
static struct tinywl_view *view_at(struct tinywl_server *server, double lx, double ly,
	struct wlr_surface **surface, double *sx, double *sy)
{
	struct wlr_scene_node *node = wlr_scene_node_at(&server->scene->node, lx, ly, sx, sy);
	if (node == NULL || node->type != WLR_SCENE_NODE_SURFACE) {
		return NULL;
	}
	*surface = wlr_scene_surface_from_node(node)->surface;
	/* Only the root node of a view's tree carries the view. */
	while (node != NULL && node->data == NULL) {
		node = node->parent;
	}
	return node != NULL ? node->data : NULL;
}

static void handle_keyboard_modifiers(struct wl_listener *listener, void *data)
{
	struct tinywl_keyboard *keyboard = wl_container_of(listener, keyboard, modifiers);
	struct wlr_seat *seat = keyboard->server->seat;
	wlr_seat_set_keyboard(seat, keyboard->device);
	wlr_seat_keyboard_notify_modifiers(seat, &keyboard->device->keyboard->modifiers);
}

static void handle_keyboard_key(struct wl_listener *listener, void *data)
{
	struct tinywl_keyboard *keyboard = wl_container_of(listener, keyboard, key);
	struct wlr_event_keyboard_key *event = data;
	struct wlr_seat *seat = keyboard->server->seat;
	/* No compositor key bindings: everything goes to the focused client. */
	wlr_seat_set_keyboard(seat, keyboard->device);
	wlr_seat_keyboard_notify_key(seat, event->time_msec, event->keycode, event->state);
}

static void update_seat_capabilities(struct tinywl_server *server)
{
	uint32_t caps = WL_SEAT_CAPABILITY_POINTER;
	if (!wl_list_empty(&server->keyboards)) {
		caps |= WL_SEAT_CAPABILITY_KEYBOARD;
	}
	wlr_seat_set_capabilities(server->seat, caps);
}

static void handle_keyboard_destroy(struct wl_listener *listener, void *data)
{
	struct tinywl_keyboard *keyboard = wl_container_of(listener, keyboard, destroy);
	struct tinywl_server *server = keyboard->server;
	wl_list_remove(&keyboard->modifiers.link);
	wl_list_remove(&keyboard->key.link);
	wl_list_remove(&keyboard->destroy.link);
	wl_list_remove(&keyboard->link);
	free(keyboard);
	update_seat_capabilities(server);
}

static void add_keyboard(struct tinywl_server *server, struct wlr_input_device *device)
{
	struct tinywl_keyboard *keyboard = calloc(1, sizeof(*keyboard));
	if (keyboard == NULL) {
		wlr_log(WLR_ERROR, "tinywl: keyboard %s: out of memory", device->name);
		return;
	}
	keyboard->server = server;
	keyboard->device = device;

	struct xkb_context *context = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
	struct xkb_keymap *keymap = context != NULL ?
		xkb_keymap_new_from_names(context, NULL, XKB_KEYMAP_COMPILE_NO_FLAGS) : NULL;
	if (keymap != NULL) {
		wlr_keyboard_set_keymap(device->keyboard, keymap);
	} else {
		wlr_log(WLR_ERROR, "tinywl: keyboard %s: no XKB keymap", device->name);
	}
	xkb_keymap_unref(keymap);
	xkb_context_unref(context);
	wlr_keyboard_set_repeat_info(device->keyboard, 25, 600);

	keyboard->modifiers.notify = handle_keyboard_modifiers;
	wl_signal_add(&device->keyboard->events.modifiers, &keyboard->modifiers);
	keyboard->key.notify = handle_keyboard_key;
	wl_signal_add(&device->keyboard->events.key, &keyboard->key);
	keyboard->destroy.notify = handle_keyboard_destroy;
	wl_signal_add(&device->events.destroy, &keyboard->destroy);

	wlr_seat_set_keyboard(server->seat, device);
	wl_list_insert(&server->keyboards, &keyboard->link);
}

static void handle_new_input(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, new_input);
	struct wlr_input_device *device = data;
	switch (device->type) {
	case WLR_INPUT_DEVICE_KEYBOARD:
		add_keyboard(server, device);
		break;
	case WLR_INPUT_DEVICE_POINTER:
	case WLR_INPUT_DEVICE_TOUCH:
		/* wlr_cursor forgets the device by itself when it is destroyed. */
		wlr_cursor_attach_input_device(server->cursor, device);
		break;
	default:
		break;
	}
	update_seat_capabilities(server);
}

static void handle_request_set_cursor(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, request_set_cursor);
	struct wlr_seat_pointer_request_set_cursor_event *event = data;
	/* Any client may send the request; only the one with pointer focus is obeyed. */
	if (event->seat_client == server->seat->pointer_state.focused_client) {
		wlr_cursor_set_surface(server->cursor, event->surface, event->hotspot_x,
			event->hotspot_y);
	}
}

static void handle_request_set_selection(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, request_set_selection);
	struct wlr_seat_request_set_selection_event *event = data;
	wlr_seat_set_selection(server->seat, event->source, event->serial);
}

static void process_cursor_motion(struct tinywl_server *server, uint32_t time_msec)
{
	double sx, sy;
	struct wlr_surface *surface = NULL;
	struct tinywl_view *view = view_at(server, server->cursor->x, server->cursor->y,
		&surface, &sx, &sy);
	if (view == NULL) {
		/* Outside every client the compositor owns the cursor image. */
		wlr_xcursor_manager_set_cursor_image(server->cursor_mgr, "left_ptr",
			server->cursor);
		wlr_seat_pointer_clear_focus(server->seat);
		return;
	}
	wlr_seat_pointer_notify_enter(server->seat, surface, sx, sy);
	wlr_seat_pointer_notify_motion(server->seat, time_msec, sx, sy);
}

static void handle_motion(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, motion);
	struct wlr_event_pointer_motion *event = data;
	wlr_cursor_move(server->cursor, event->device, event->delta_x, event->delta_y);
	process_cursor_motion(server, event->time_msec);
}

static void handle_motion_absolute(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, motion_absolute);
	struct wlr_event_pointer_motion_absolute *event = data;
	wlr_cursor_warp_absolute(server->cursor, event->device, event->x, event->y);
	process_cursor_motion(server, event->time_msec);
}

static void handle_button(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, button);
	struct wlr_event_pointer_button *event = data;
	wlr_seat_pointer_notify_button(server->seat, event->time_msec, event->button,
		event->state);
	if (event->state != WLR_BUTTON_PRESSED) {
		return;
	}
	double sx, sy;
	struct wlr_surface *surface = NULL;
	struct tinywl_view *view = view_at(server, server->cursor->x, server->cursor->y,
		&surface, &sx, &sy);
	if (view != NULL) {
		focus_view(view, surface);
	}
}

static void handle_axis(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, axis);
	struct wlr_event_pointer_axis *event = data;
	wlr_seat_pointer_notify_axis(server->seat, event->time_msec, event->orientation,
		event->delta, event->delta_discrete, event->source);
}

static void handle_frame(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, frame);
	wlr_seat_pointer_notify_frame(server->seat);
}

static void handle_capture_done(struct wla_capture *capture, const struct wla_image *image,
	uint64_t seq, void *data)
{
	struct tinywl_server *server = data;
	server->capture = NULL;
	if (image == NULL) {
		fprintf(stderr, "tinywl: capture failed\n");
		server_exit(server, EXIT_FAILURE);
		return;
	}
	int ret = wla_image_write_png(image, server->opts.capture_path);
	if (ret < 0) {
		fprintf(stderr, "tinywl: cannot write %s: %s\n", server->opts.capture_path,
			strerror(-ret));
		server_exit(server, EXIT_FAILURE);
		return;
	}
	server->capture_written = true;
	printf("tinywl: captured %" PRIu32 "x%" PRIu32 " at seq=%" PRIu64 " to %s\n",
		image->width, image->height, seq, server->opts.capture_path);
	server_exit(server, EXIT_SUCCESS);
}

static uint64_t timespec_to_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

static uint64_t now_ns(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return timespec_to_ns(&now);
}

static uint64_t cpu_time_us(void)
{
	struct rusage usage;
	if (getrusage(RUSAGE_SELF, &usage) != 0) {
		return 0;
	}
	return (uint64_t)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000u +
		(uint64_t)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

/* Render the scene into the output, commit it and tell clients it is done. */
static void render_output(struct tinywl_output *output)
{
	struct tinywl_server *server = output->server;
	struct wlr_output *wlr_output = output->wlr_output;
	struct wlr_scene_output *scene_output =
		wlr_scene_get_scene_output(server->scene, wlr_output);
	if (scene_output == NULL) {
		return;
	}
	/*
	 * wlr_scene commits nothing when nothing is damaged. A capture or an exit
	 * after N presented frames must not wait forever on a static client, so
	 * the first output redraws every frame while such an action is pending.
	 */
	if (output == server->first_output && frame_count_pending(server)) {
		wlr_output_damage_add_whole(scene_output->damage);
	}
	/* Recorded before the commit: wlroots' headless backend sends the
	 * present event from inside it. */
	uint64_t start = now_ns();
	uint32_t seq_before = wlr_output->commit_seq;
	uint32_t key = seq_before + 1;
	output->starts[key % TINYWL_START_RING].commit_seq = key;
	output->starts[key % TINYWL_START_RING].start_ns = start;
	output->starts[key % TINYWL_START_RING].valid = true;
	if (server->opts.stall_every > 0 &&
			++output->renders % (uint64_t)server->opts.stall_every == 0) {
		/* Blocking the event loop is the point: this is the compositor that
		 * stalls, and its render counts the stall as its own time. */
		struct timespec stall = {
			.tv_sec = server->opts.stall_ms / 1000,
			.tv_nsec = (server->opts.stall_ms % 1000) * 1000000,
		};
		while (nanosleep(&stall, &stall) != 0 && errno == EINTR) {
		}
	}
	wlr_scene_output_commit(scene_output);
	if (wlr_output->commit_seq != seq_before) {
		output->render_ns[output->n_render++ % TINYWL_RENDER_SAMPLES] = now_ns() - start;
	}

	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	wlr_scene_output_send_frame_done(scene_output, &now);
}

/* How long before the commit deadline a render must start: the longest of
 * the recent renders (each up to the end of its commit) plus a safety margin. */
static uint64_t render_margin_ns(const struct tinywl_output *output)
{
	size_t n = output->n_render < TINYWL_RENDER_SAMPLES ? output->n_render :
		TINYWL_RENDER_SAMPLES;
	uint64_t max = 0;
	for (size_t i = 0; i < n; i++) {
		max = output->render_ns[i] > max ? output->render_ns[i] : max;
	}
	return max + TINYWL_DEADLINE_SAFETY_NS;
}

static int handle_deadline_timer(int fd, uint32_t mask, void *data)
{
	struct tinywl_output *output = data;
	uint64_t expirations;
	if (read(fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) {
		wlr_log_errno(WLR_ERROR, "tinywl: output %s: reading the deadline timer",
			output->wlr_output->name);
	}
	output->deadline_armed = false;
	if (!output->server->shutting_down) {
		render_output(output);
	}
	return 0;
}

/*
 * --deadline: the frame event says the flip queue has room; the render waits
 * until just before the latest moment a commit still makes the vblank the
 * frame will latch at, so that what it shows is as recent as it can be.
 */
static void schedule_deadline_render(struct tinywl_output *output)
{
	if (output->deadline_armed) {
		/* wlroots sends more frame events while nothing is committed. */
		return;
	}
	struct wla_frame_deadline deadline;
	if (output->n_render == 0 ||
			!wla_output_get_frame_deadline(output->wlr_output, &deadline)) {
		/* Nothing measured yet to plan with, or no deadline: at once. */
		render_output(output);
		return;
	}
	uint64_t commit_by = timespec_to_ns(&deadline.commit_by);
	uint64_t margin = render_margin_ns(output);
	if (commit_by <= margin || commit_by - margin <= now_ns()) {
		render_output(output);
		return;
	}
	uint64_t at = commit_by - margin;
	struct itimerspec its = {
		.it_value = {
			.tv_sec = (time_t)(at / 1000000000u),
			.tv_nsec = (long)(at % 1000000000u),
		},
	};
	if (timerfd_settime(output->deadline_fd, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
		wlr_log_errno(WLR_ERROR, "tinywl: output %s: arming the deadline timer",
			output->wlr_output->name);
		render_output(output);
		return;
	}
	output->deadline_armed = true;
}

static void handle_output_frame(struct wl_listener *listener, void *data)
{
	struct tinywl_output *output = wl_container_of(listener, output, frame);
	if (output->server->shutting_down) {
		return;
	}
	if (output->deadline_source != NULL) {
		schedule_deadline_render(output);
	} else {
		render_output(output);
	}
}

static void handle_output_commit(struct wl_listener *listener, void *data)
{
	struct tinywl_output *output = wl_container_of(listener, output, commit);
	struct wlr_output_event_commit *event = data;
	output->commits++;
	if ((event->committed & WLR_OUTPUT_STATE_MODE) ||
			((event->committed & WLR_OUTPUT_STATE_ENABLED) && !output->wlr_output->enabled)) {
		/* A new timing, or no vblanks while off (a display controller
		 * without a hardware counter does not count them): the next
		 * present starts the sequence check afresh. */
		output->seq_seen = false;
	}
	if (event->committed & WLR_OUTPUT_STATE_BUFFER) {
		output->frames_committed++;
		/* Not event->when: wlroots takes that before the backend's commit
		 * even starts. commit_seq has already been advanced here. */
		uint32_t key = output->wlr_output->commit_seq;
		output->commit_times[key % TINYWL_START_RING].commit_seq = key;
		output->commit_times[key % TINYWL_START_RING].done_ns = now_ns();
		output->commit_times[key % TINYWL_START_RING].valid = true;
	}
}

static int64_t timespec_diff_ns(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(a->tv_sec - b->tv_sec) * 1000000000 + (a->tv_nsec - b->tv_nsec);
}

/*
 * A presented frame's vblank sequence number must have advanced by exactly
 * the number of refresh periods that passed since the previous one; anything
 * else (a repeat, a jump back, a count that disagrees with the clock) is a
 * sequence error.
 */
static void check_present_seq(struct tinywl_output *output,
	const struct wlr_output_event_present *event)
{
	if (event->seq == 0 || event->when == NULL) {
		/* The backend has no vblank counter (wlroots' headless does this). */
		return;
	}
	if (output->seq_seen) {
		int32_t delta = (int32_t)(event->seq - output->last_seq);
		int64_t refresh_ns = event->refresh;
		if (refresh_ns <= 0 && output->wlr_output->refresh > 0) {
			refresh_ns = 1000000000000LL / output->wlr_output->refresh;
		}
		bool ok = delta > 0;
		if (ok && refresh_ns > 0) {
			int64_t dt = timespec_diff_ns(event->when, &output->last_when);
			ok = llround((double)dt / (double)refresh_ns) == delta;
		}
		if (!ok) {
			output->seq_errors++;
			wlr_log(WLR_DEBUG, "tinywl: output %s: seq %" PRIu32 " after %" PRIu32
				" does not match the clock", output->wlr_output->name, event->seq,
				output->last_seq);
		}
	}
	output->seq_seen = true;
	output->seq_checked = true;
	output->last_seq = event->seq;
	output->last_when = *event->when;
}

/* The refresh period a present event stands for, 0 if unknown. */
static uint64_t present_period_ns(const struct tinywl_output *output,
	const struct wlr_output_event_present *event)
{
	if (event->refresh > 0) {
		return (uint64_t)event->refresh;
	}
	if (output->wlr_output->refresh > 0) {
		/* wlroots' headless backend leaves refresh 0: its mode's. */
		return (1000000000000u + (uint64_t)output->wlr_output->refresh / 2) /
			(uint64_t)output->wlr_output->refresh;
	}
	return 0;
}

/*
 * What the backend reports, checked against what tinywl saw itself: a frame
 * must not be presented before its commit returned (early), and a frame
 * committed before the vblank after the previous presented frame must latch
 * at that vblank, not later (a queued gap: it waited while the display showed
 * the old frame again).
 */
static void check_present_honest(struct tinywl_output *output,
	const struct wlr_output_event_present *event)
{
	const char *name = output->wlr_output->name;
	uint64_t when = event->when != NULL ? timespec_to_ns(event->when) : now_ns();
	uint32_t key = event->commit_seq;
	bool committed_known = false;
	uint64_t committed_ns = 0;
	if ((int32_t)(key - output->wlr_output->commit_seq) > 0) {
		/* Sent from inside the commit (wlroots' headless backend does): the
		 * commit returns after this, so after `when`. */
		output->presents_checked++;
		output->early_presents++;
		wlr_log(WLR_DEBUG, "tinywl: output %s: commit %" PRIu32 " presented before "
			"its commit returned", name, key);
	} else if (output->commit_times[key % TINYWL_START_RING].valid &&
			output->commit_times[key % TINYWL_START_RING].commit_seq == key) {
		committed_known = true;
		committed_ns = output->commit_times[key % TINYWL_START_RING].done_ns;
		output->commit_times[key % TINYWL_START_RING].valid = false;
		output->presents_checked++;
		if (when < committed_ns) {
			output->early_presents++;
			wlr_log(WLR_DEBUG, "tinywl: output %s: commit %" PRIu32 " presented "
				"%.3f ms before its commit returned", name, key,
				(double)(committed_ns - when) / 1e6);
		}
	} else {
		output->unmatched_presents++;
	}

	if (event->seq == 0) {
		/* No vblank counter: nothing to tell a wait from. */
		return;
	}
	uint64_t period = present_period_ns(output, event);
	if (output->gap_prev_seen && committed_known && period > 0) {
		output->gaps_checked++;
		int32_t delta = (int32_t)(event->seq - output->gap_prev_seq);
		/* The backend's latch minimum (wlatomic's frame deadline says it):
		 * a frame committed within it of a vblank honestly misses it. */
		uint64_t slack = 0;
		struct wla_frame_deadline deadline;
		if (wla_output_is_wla(output->wlr_output) &&
				wla_output_get_frame_deadline(output->wlr_output, &deadline)) {
			slack = timespec_to_ns(&deadline.latch) - timespec_to_ns(&deadline.commit_by);
		}
		if (delta > 1 && committed_ns + slack < output->gap_prev_when_ns + period) {
			output->queued_gaps++;
			wlr_log(WLR_DEBUG, "tinywl: output %s: commit %" PRIu32 " latched %" PRId32
				" vblanks after the previous frame though committed %.3f ms "
				"after it", name, key, delta,
				((double)committed_ns - (double)output->gap_prev_when_ns) / 1e6);
		}
	}
	output->gap_prev_seen = true;
	output->gap_prev_seq = event->seq;
	output->gap_prev_when_ns = when;
}

/* Interval since the previous presented frame and latency since the render
 * of the commit the event names. */
static void record_present(struct tinywl_output *output,
	const struct wlr_output_event_present *event)
{
	uint64_t period = present_period_ns(output, event);
	if (period > 0) {
		output->period_ns = period;
	}
	uint64_t received = now_ns();
	uint64_t when = event->when != NULL ? timespec_to_ns(event->when) : received;
	output->event_lags[output->n_event_lags++ % TINYWL_STATS_WINDOW] =
		received > when ? received - when : 0;
	if (output->last_present_ns != 0 && when > output->last_present_ns) {
		uint64_t interval = when - output->last_present_ns;
		output->intervals[output->n_intervals++ % TINYWL_STATS_WINDOW] = interval;
		if (output->period_ns > 0 && interval > output->period_ns * 3 / 2) {
			wlr_log(WLR_DEBUG, "tinywl: output %s: %.3f ms since the previous "
				"frame at frame %" PRIu64, output->wlr_output->name,
				(double)interval / 1e6, output->frames_presented);
		}
	}
	output->last_present_ns = when;

	uint32_t key = event->commit_seq;
	if (output->starts[key % TINYWL_START_RING].valid &&
			output->starts[key % TINYWL_START_RING].commit_seq == key) {
		uint64_t start = output->starts[key % TINYWL_START_RING].start_ns;
		output->starts[key % TINYWL_START_RING].valid = false;
		if (when >= start) {
			output->latencies[output->n_latencies++ % TINYWL_STATS_WINDOW] =
				when - start;
		}
	}

	if (!output->cpu_started) {
		output->cpu_started = true;
		output->cpu_start_us = cpu_time_us();
		output->cpu_start_frames = output->frames_presented;
	}
}

static void handle_output_present(struct wl_listener *listener, void *data)
{
	struct tinywl_output *output = wl_container_of(listener, output, present);
	struct tinywl_server *server = output->server;
	struct wlr_output_event_present *event = data;
	if (!event->presented) {
		return;
	}
	output->frames_presented++;
	check_present_seq(output, event);
	check_present_honest(output, event);
	record_present(output, event);

	if (output != server->first_output) {
		return;
	}
	if (server->opts.capture_path != NULL && !server->capture_requested &&
			output->frames_presented >= (uint64_t)server->opts.capture_after) {
		server->capture_requested = true;
		server->capture = wla_output_capture(output->wlr_output, handle_capture_done,
			server);
		if (server->capture == NULL) {
			fprintf(stderr, "tinywl: output %s cannot be captured\n",
				output->wlr_output->name);
			server_exit(server, EXIT_FAILURE);
			return;
		}
	}
	if (server->opts.exit_after_frames > 0 &&
			output->frames_presented >= (uint64_t)server->opts.exit_after_frames) {
		server_exit(server, EXIT_SUCCESS);
	}
}

static void handle_output_destroy(struct wl_listener *listener, void *data)
{
	struct tinywl_output *output = wl_container_of(listener, output, destroy);
	struct tinywl_server *server = output->server;
	if (server->first_output == output) {
		server->first_output = NULL;
		if (server->capture != NULL) {
			/*
			 * Cancel instead of waiting for the backend's failure report:
			 * whether that comes before or after this signal is not ours to
			 * rely on.
			 */
			wla_capture_cancel(server->capture);
			server->capture = NULL;
			if (server->opts.capture_path != NULL) {
				fprintf(stderr, "tinywl: output %s destroyed before the capture\n",
					output->wlr_output->name);
				server_exit(server, EXIT_FAILURE);
			}
		}
	}
	if (output->deadline_source != NULL) {
		wl_event_source_remove(output->deadline_source);
	}
	if (output->deadline_fd >= 0) {
		close(output->deadline_fd);
	}
	wl_list_remove(&output->frame.link);
	wl_list_remove(&output->commit.link);
	wl_list_remove(&output->present.link);
	wl_list_remove(&output->destroy.link);
	wl_list_remove(&output->link);
	free(output);
}

static void update_background(struct tinywl_server *server)
{
	struct wlr_box *box = wlr_output_layout_get_box(server->output_layout, NULL);
	wlr_scene_node_set_position(&server->background->node, box->x, box->y);
	wlr_scene_rect_set_size(server->background, box->width, box->height);
}

/* --mode: the output's own mode of that size and refresh if it lists one,
 * else a custom mode. */
static void set_requested_mode(struct tinywl_server *server, struct wlr_output *wlr_output)
{
	const struct tinywl_options *opts = &server->opts;
	struct wlr_output_mode *mode;
	wl_list_for_each(mode, &wlr_output->modes, link) {
		if (mode->width == opts->mode_width && mode->height == opts->mode_height &&
				mode->refresh == opts->mode_refresh_mhz) {
			wlr_output_set_mode(wlr_output, mode);
			return;
		}
	}
	wlr_output_set_custom_mode(wlr_output, opts->mode_width, opts->mode_height,
		opts->mode_refresh_mhz);
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, new_output);
	struct wlr_output *wlr_output = data;

	if (!wlr_output_init_render(wlr_output, server->allocator, server->renderer)) {
		wlr_log(WLR_ERROR, "tinywl: output %s: cannot initialise rendering",
			wlr_output->name);
		return;
	}

	if (server->opts.mode_set) {
		set_requested_mode(server, wlr_output);
	} else {
		/* wlroots' headless outputs have no list: they keep their custom mode. */
		struct wlr_output_mode *mode = wlr_output_preferred_mode(wlr_output);
		if (mode != NULL) {
			wlr_output_set_mode(wlr_output, mode);
		}
	}
	wlr_output_enable(wlr_output, true);
	if (!wlr_output_commit(wlr_output)) {
		wlr_log(WLR_ERROR, "tinywl: output %s: cannot enable", wlr_output->name);
		return;
	}

	struct tinywl_output *output = calloc(1, sizeof(*output));
	if (output == NULL) {
		wlr_log(WLR_ERROR, "tinywl: output %s: out of memory", wlr_output->name);
		return;
	}
	output->server = server;
	output->wlr_output = wlr_output;
	output->deadline_fd = -1;
	if (server->opts.deadline) {
		output->deadline_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (output->deadline_fd >= 0) {
			output->deadline_source = wl_event_loop_add_fd(server->loop,
				output->deadline_fd, WL_EVENT_READABLE, handle_deadline_timer,
				output);
		}
		if (output->deadline_source == NULL) {
			/* Rendering at the frame event still works: say so, go on. */
			wlr_log(WLR_ERROR, "tinywl: output %s: no deadline timer (%s), "
				"rendering at frame events", wlr_output->name, strerror(errno));
		}
	}
	output->frame.notify = handle_output_frame;
	wl_signal_add(&wlr_output->events.frame, &output->frame);
	output->commit.notify = handle_output_commit;
	wl_signal_add(&wlr_output->events.commit, &output->commit);
	output->present.notify = handle_output_present;
	wl_signal_add(&wlr_output->events.present, &output->present);
	output->destroy.notify = handle_output_destroy;
	wl_signal_add(&wlr_output->events.destroy, &output->destroy);
	wl_list_insert(server->outputs.prev, &output->link);
	if (server->first_output == NULL) {
		server->first_output = output;
	}

	/* Also creates the wl_output global and, through the scene, a scene output. */
	wlr_output_layout_add_auto(server->output_layout, wlr_output);
	update_background(server);

	/*
	 * The cursor can only be warped into the layout, so the requested
	 * position is applied once an output is there; setting the image again
	 * gives the new output's cursor plane its buffer.
	 */
	wlr_xcursor_manager_load(server->cursor_mgr, wlr_output->scale);
	wlr_cursor_warp(server->cursor, NULL, server->opts.cursor_x, server->opts.cursor_y);
	wlr_xcursor_manager_set_cursor_image(server->cursor_mgr, "left_ptr", server->cursor);
}

static void handle_view_map(struct wl_listener *listener, void *data)
{
	struct tinywl_view *view = wl_container_of(listener, view, map);
	wlr_scene_node_set_position(view->scene_node, view->server->opts.window_x,
		view->server->opts.window_y);
	wl_list_insert(&view->server->views, &view->link);
	focus_view(view, view->xdg_surface->surface);
}

static void handle_view_unmap(struct wl_listener *listener, void *data)
{
	struct tinywl_view *view = wl_container_of(listener, view, unmap);
	struct tinywl_server *server = view->server;
	wl_list_remove(&view->link);
	wl_list_init(&view->link);
	/* Hand the keyboard to the next most recently focused view. */
	if (server->seat->keyboard_state.focused_surface == view->xdg_surface->surface) {
		wlr_seat_keyboard_notify_clear_focus(server->seat);
		if (!wl_list_empty(&server->views)) {
			struct tinywl_view *next = wl_container_of(server->views.next, next, link);
			focus_view(next, next->xdg_surface->surface);
		}
	}
}

static void handle_view_destroy(struct wl_listener *listener, void *data)
{
	struct tinywl_view *view = wl_container_of(listener, view, destroy);
	/* The scene node is destroyed by wlr_scene along with the surface. */
	wl_list_remove(&view->map.link);
	wl_list_remove(&view->unmap.link);
	wl_list_remove(&view->destroy.link);
	wl_list_remove(&view->link);
	free(view);
}

static void handle_new_surface(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, new_surface);
	struct wlr_xdg_surface *xdg_surface = data;

	if (xdg_surface->role == WLR_XDG_SURFACE_ROLE_POPUP) {
		/* A popup lives in its parent's scene tree, so it moves with it. */
		struct wlr_surface *parent_surface = xdg_surface->popup->parent;
		if (parent_surface == NULL || !wlr_surface_is_xdg_surface(parent_surface)) {
			return;
		}
		struct wlr_xdg_surface *parent = wlr_xdg_surface_from_wlr_surface(parent_surface);
		if (parent == NULL || parent->data == NULL) {
			return;
		}
		xdg_surface->data = wlr_scene_xdg_surface_create(parent->data, xdg_surface);
		return;
	}
	if (xdg_surface->role != WLR_XDG_SURFACE_ROLE_TOPLEVEL) {
		return;
	}

	struct tinywl_view *view = calloc(1, sizeof(*view));
	if (view == NULL) {
		wlr_log(WLR_ERROR, "tinywl: toplevel: out of memory");
		return;
	}
	view->server = server;
	view->xdg_surface = xdg_surface;
	view->scene_node = wlr_scene_xdg_surface_create(&server->scene->node, xdg_surface);
	if (view->scene_node == NULL) {
		wlr_log(WLR_ERROR, "tinywl: toplevel: cannot create its scene node");
		free(view);
		return;
	}
	view->scene_node->data = view;
	xdg_surface->data = view->scene_node;
	wl_list_init(&view->link);

	view->map.notify = handle_view_map;
	wl_signal_add(&xdg_surface->events.map, &view->map);
	view->unmap.notify = handle_view_unmap;
	wl_signal_add(&xdg_surface->events.unmap, &view->unmap);
	view->destroy.notify = handle_view_destroy;
	wl_signal_add(&xdg_surface->events.destroy, &view->destroy);
}

#define TINYWL_CHURN_CONNECTOR "SOAK-1"

/* The first output's next mode in its list, wrapping; NULL if it has none. */
static struct wlr_output_mode *next_mode(struct wlr_output *wlr_output)
{
	struct wl_list *link = &wlr_output->modes;
	if (wl_list_empty(link)) {
		return NULL;
	}
	if (wlr_output->current_mode != NULL) {
		link = &wlr_output->current_mode->link;
	}
	link = link->next == &wlr_output->modes ? wlr_output->modes.next : link->next;
	struct wlr_output_mode *mode = wl_container_of(link, mode, link);
	return mode;
}

/*
 * --churn-ms: one change of the outputs per tick, in turn: the first
 * output's next mode (it goes with the next rendered frame, one atomic
 * state), a connector plugged in (wla only), that connector unplugged.
 * Each tick prints a line with the buffer locks the backend holds.
 */
static int handle_churn_timer(void *data)
{
	struct tinywl_server *server = data;
	uint64_t step = server->churn_steps++;
	bool wla = wla_backend_is_wla(server->backend);
	const char *what = "mode";
	if (step % 3 == 0 || !wla) {
		struct tinywl_output *output = server->first_output;
		struct wlr_output_mode *mode = output ? next_mode(output->wlr_output) : NULL;
		if (mode != NULL && output->wlr_output->enabled) {
			wlr_output_set_mode(output->wlr_output, mode);
			wlr_output_schedule_frame(output->wlr_output);
		}
	} else if (step % 3 == 1) {
		const struct wla_config_mode modes[] = { { 640, 480, 60000 }, { 800, 600, 75000 } };
		what = "plug";
		if (wla_backend_plug_connector(server->backend, TINYWL_CHURN_CONNECTOR, modes,
				2) != 0) {
			wlr_log(WLR_ERROR, "tinywl: churn: cannot plug %s", TINYWL_CHURN_CONNECTOR);
		}
	} else {
		what = "unplug";
		if (wla_backend_unplug_connector(server->backend, TINYWL_CHURN_CONNECTOR) != 0) {
			wlr_log(WLR_ERROR, "tinywl: churn: cannot unplug %s",
				TINYWL_CHURN_CONNECTOR);
		}
	}
	size_t outputs = (size_t)wl_list_length(&server->outputs);
	printf("tinywl: churn step=%" PRIu64 " %s outputs=%zu", step, what, outputs);
	if (wla) {
		printf(" buffer_locks=%zu", wla_backend_buffer_locks(server->backend));
	}
	printf("\n");
	fflush(stdout);
	wl_event_source_timer_update(server->churn_source, (int)server->opts.churn_ms);
	return 0;
}

static int handle_terminate_signal(int signal_number, void *data)
{
	struct tinywl_server *server = data;
	server_exit(server, EXIT_SUCCESS);
	return 0;
}

static int handle_sigchld(int signal_number, void *data)
{
	struct tinywl_server *server = data;
	int status;
	pid_t pid;
	/* One SIGCHLD may stand for several children; reap them all. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid != server->child) {
			continue;
		}
		server->child = 0;
		bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
		if (WIFEXITED(status)) {
			wlr_log(WLR_INFO, "tinywl: client exited with status %d",
				WEXITSTATUS(status));
		} else if (WIFSIGNALED(status)) {
			fprintf(stderr, "tinywl: client killed by signal %d\n", WTERMSIG(status));
		}
		if (!ok) {
			fprintf(stderr, "tinywl: client failed\n");
		}
		/* A pending capture still decides the exit status on its own. */
		if (server->opts.capture_path == NULL) {
			server_exit(server, ok ? EXIT_SUCCESS : EXIT_FAILURE);
		}
	}
	return 0;
}

static bool spawn_client(struct tinywl_server *server, const char *socket)
{
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "tinywl: cannot start '%s': %s\n", server->opts.startup_cmd,
			strerror(errno));
		return false;
	}
	if (pid == 0) {
		/*
		 * wl_event_loop_add_signal blocked our signals; a blocked mask
		 * survives exec and would leave the client deaf to SIGTERM.
		 */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* Its own process group, so that tinywl can end the whole command. */
		setpgid(0, 0);
		setenv("WAYLAND_DISPLAY", socket, 1);
		execl("/bin/sh", "/bin/sh", "-c", server->opts.startup_cmd, (char *)NULL);
		_exit(127);
	}
	server->child = pid;
	return true;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Order statistics of up to TINYWL_STATS_WINDOW samples, in nanoseconds, with
 * the same ranks as wla_output_get_stats. */
struct tinywl_distribution {
	size_t n;
	uint64_t min, p50, p99, max;
	double mean;
};

static void distribution(const uint64_t *samples, uint64_t count, uint64_t *scratch,
	struct tinywl_distribution *dist)
{
	size_t n = count < TINYWL_STATS_WINDOW ? (size_t)count : TINYWL_STATS_WINDOW;
	*dist = (struct tinywl_distribution){ .n = n };
	if (n == 0) {
		return;
	}
	memcpy(scratch, samples, n * sizeof(*scratch));
	qsort(scratch, n, sizeof(*scratch), compare_u64);
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += (double)scratch[i];
	}
	dist->min = scratch[0];
	dist->p50 = scratch[(n - 1) / 2];
	dist->p99 = scratch[(n - 1) * 99 / 100];
	dist->max = scratch[n - 1];
	dist->mean = sum / (double)n;
}

/* Nanoseconds as microseconds with three decimals, or n/a without samples. */
static const char *fmt_us(char buf[32], bool known, uint64_t ns)
{
	if (!known) {
		return "n/a";
	}
	snprintf(buf, 32, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
	return buf;
}

static const char *fmt_u64(char buf[32], bool known, uint64_t value)
{
	if (!known) {
		return "n/a";
	}
	snprintf(buf, 32, "%" PRIu64, value);
	return buf;
}

/*
 * The figures every backend can give, measured by tinywl itself: p99 of
 * |interval - period| (jitter), the vblanks between presented frames that
 * showed nothing new (skipped), latency from the start of a frame's render to
 * its presentation, and CPU time per presented frame.
 */
static void print_own_stats(struct tinywl_output *output, uint64_t *scratch)
{
	char b[6][32];
	size_t n = output->n_intervals < TINYWL_STATS_WINDOW ? (size_t)output->n_intervals :
		TINYWL_STATS_WINDOW;
	uint64_t period = output->period_ns;
	uint64_t skipped = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t iv = output->intervals[i];
		scratch[i] = iv > period ? iv - period : period - iv;
		if (period > 0) {
			uint64_t periods = (iv + period / 2) / period;
			skipped += periods > 1 ? periods - 1 : 0;
		}
	}
	struct tinywl_distribution jitter;
	distribution(scratch, n, scratch + TINYWL_STATS_WINDOW, &jitter);
	struct tinywl_distribution latency;
	distribution(output->latencies, output->n_latencies, scratch, &latency);
	struct tinywl_distribution lag;
	distribution(output->event_lags, output->n_event_lags, scratch, &lag);

	uint64_t frames = output->frames_presented - output->cpu_start_frames;
	bool cpu_known = output->cpu_started && frames > 0;
	char cpu[32] = "n/a";
	if (cpu_known) {
		snprintf(cpu, sizeof(cpu), "%.3f",
			(double)(cpu_time_us() - output->cpu_start_us) / (double)frames);
	}
	char latency_mean[32] = "n/a";
	if (latency.n > 0) {
		snprintf(latency_mean, sizeof(latency_mean), "%.3f", latency.mean / 1000.0);
	}
	printf(" jitter_p99_us=%s skipped_vblanks=%s latency_mean_us=%s latency_p99_us=%s"
		" cpu_us_per_frame=%s", fmt_us(b[0], jitter.n > 0 && period > 0, jitter.p99),
		fmt_u64(b[1], period > 0, skipped), latency_mean,
		fmt_us(b[2], latency.n > 0, latency.p99), cpu);
	printf(" event_lag_p99_us=%s event_lag_max_us=%s", fmt_us(b[3], lag.n > 0, lag.p99),
		fmt_us(b[4], lag.n > 0, lag.max));
	printf(" early_presents=%s queued_gaps=%s unmatched_presents=%" PRIu64,
		fmt_u64(b[3], output->presents_checked > 0, output->early_presents),
		fmt_u64(b[4], output->gaps_checked > 0, output->queued_gaps),
		output->unmatched_presents);
}

static void print_stats(struct tinywl_server *server)
{
	/* Twice the window: print_own_stats sorts one copy while holding another. */
	uint64_t *scratch = calloc(2 * TINYWL_STATS_WINDOW, sizeof(*scratch));
	if (scratch == NULL) {
		fprintf(stderr, "tinywl: out of memory for the statistics\n");
		return;
	}
	struct tinywl_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		char b[8][32];
		char seq_errors[32];
		if (output->seq_checked) {
			snprintf(seq_errors, sizeof(seq_errors), "%" PRIu64, output->seq_errors);
		} else {
			snprintf(seq_errors, sizeof(seq_errors), "n/a");
		}
		struct wla_output_stats stats;
		if (wla_output_is_wla(output->wlr_output) &&
				wla_output_get_stats(output->wlr_output, &stats)) {
			bool known = stats.intervals > 0;
			char mean[32] = "n/a";
			if (known) {
				snprintf(mean, sizeof(mean), "%.3f",
					stats.interval_mean_ns / 1000.0);
			}
			printf("tinywl: stats output=%s frames_presented=%" PRIu64
				" vblanks=%" PRIu64 " missed_vblanks=%" PRIu64 " commits=%" PRIu64
				" refused=%" PRIu64 " seq_errors=%s frames_committed=%" PRIu64
				" frames_discarded=%" PRIu64 " refused_queue_full=%" PRIu64
				" interval_min_us=%s interval_p50_us=%s interval_p99_us=%s"
				" interval_max_us=%s interval_mean_us=%s",
				output->wlr_output->name, stats.frames_presented, stats.vblanks,
				stats.missed_vblanks, stats.commits, stats.refused, seq_errors,
				stats.frames_committed, stats.frames_discarded,
				stats.refused_queue_full,
				fmt_us(b[0], known, stats.interval_min_ns),
				fmt_us(b[1], known, stats.interval_p50_ns),
				fmt_us(b[2], known, stats.interval_p99_ns),
				fmt_us(b[3], known, stats.interval_max_ns), mean);
		} else {
			struct tinywl_distribution iv;
			distribution(output->intervals, output->n_intervals, scratch, &iv);
			bool known = iv.n > 0;
			char mean[32] = "n/a";
			if (known) {
				snprintf(mean, sizeof(mean), "%.3f", iv.mean / 1000.0);
			}
			printf("tinywl: stats output=%s frames_presented=%" PRIu64
				" vblanks=n/a missed_vblanks=n/a commits=%" PRIu64
				" refused=n/a seq_errors=%s frames_committed=%" PRIu64
				" frames_discarded=n/a refused_queue_full=n/a"
				" interval_min_us=%s interval_p50_us=%s interval_p99_us=%s"
				" interval_max_us=%s interval_mean_us=%s",
				output->wlr_output->name, output->frames_presented,
				output->commits, seq_errors, output->frames_committed,
				fmt_us(b[0], known, iv.min), fmt_us(b[1], known, iv.p50),
				fmt_us(b[2], known, iv.p99), fmt_us(b[3], known, iv.max), mean);
		}
		print_own_stats(output, scratch);
		printf("\n");
	}
	free(scratch);
	fflush(stdout);
}

/* DPMS (wlr-output-power-management): off disables the output, on enables
 * it again and asks for a frame; the backend powers panels around that. */
static void handle_output_power_set_mode(struct wl_listener *listener, void *data)
{
	struct wlr_output_power_v1_set_mode_event *event = data;
	bool on = event->mode == ZWLR_OUTPUT_POWER_V1_MODE_ON;
	wlr_output_enable(event->output, on);
	if (!wlr_output_commit(event->output)) {
		wlr_output_rollback(event->output);
		wlr_log(WLR_ERROR, "tinywl: output %s: cannot switch power %s",
			event->output->name, on ? "on" : "off");
		return;
	}
	if (on) {
		wlr_output_schedule_frame(event->output);
	}
}

static uint64_t monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* An output with a panel switches off in steps (backlight, scanout,
 * supply) on timers: let them run, for at most a second. */
static void wait_for_outputs_off(struct tinywl_server *server)
{
	if (!wla_backend_is_wla(server->backend)) {
		return;
	}
	struct wl_event_loop *loop = wl_display_get_event_loop(server->display);
	uint64_t end = monotonic_ms() + 1000;
	while (wla_backend_buffer_locks(server->backend) > 0 && monotonic_ms() < end) {
		wl_event_loop_dispatch(loop, 10);
	}
}

static void disable_outputs(struct tinywl_server *server)
{
	struct tinywl_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		if (!output->wlr_output->enabled) {
			continue;
		}
		wlr_output_enable(output->wlr_output, false);
		if (!wlr_output_commit(output->wlr_output)) {
			/* wlroots 0.15 headless cannot disable: not an error of ours. */
			wlr_output_rollback(output->wlr_output);
			wlr_log(WLR_INFO, "tinywl: output %s: cannot disable",
				output->wlr_output->name);
		}
	}
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [options]\n"
		"  -s, --startup CMD           run CMD with /bin/sh -c once the socket exists;\n"
		"                              exit with its status (0 or 1) when it ends\n"
		"      --backend wla|auto      wla: the wlatomic backend (default, configured by\n"
		"                              WLA_* variables); auto: wlr_backend_autocreate\n"
		"      --capture PATH          write the first output's scanout to PATH (PNG)\n"
		"                              after --capture-after frames, then exit (wla only)\n"
		"      --capture-after N       frames presented before the capture (default 30)\n"
		"      --cursor X,Y            cursor position in layout coordinates (default\n"
		"                              100,100)\n"
		"      --window-pos X,Y        where toplevels are placed (default 0,0)\n"
		"      --exit-after-frames N   exit after N frames presented on the first output\n"
		"      --mode WxH[@HZ]         use this mode on every output (a listed one if it\n"
		"                              matches, else a custom mode; HZ default 60)\n"
		"      --deadline              render each frame just before the output's frame\n"
		"                              deadline, not at the frame event (wla only)\n"
		"      --stall-every N         with --stall-ms: every Nth render of an output\n"
		"      --stall-ms M            sleeps M ms (1..10000) right before its commit\n"
		"      --churn-ms N            every N ms (10..600000) in turn: the first output's\n"
		"                              next mode, a connector SOAK-1 plugged (wla), it\n"
		"                              unplugged; prints 'tinywl: churn step=...' each time\n"
		"  -v, --verbose               debug log (default: errors only)\n"
		"  -h, --help                  this text\n"
		"The background is 0x%06x. On exit one 'tinywl: stats output=...' line is\n"
		"printed per output, and 'tinywl: buffer_locks=N' on the wla backend.\n"
		"Times in the stats line are in microseconds; latency is from the start of a\n"
		"frame's render to its presentation, cpu_us_per_frame is tinywl's user+system\n"
		"time from the first presented frame on, per frame presented since;\n"
		"event_lag is from the time a present event reports to its arrival in tinywl.\n"
		"Checked against tinywl's own clock: early_presents (presented before the\n"
		"commit returned), queued_gaps (a frame committed before the vblank after the\n"
		"previous presented frame, by more than wlatomic's latch minimum, that latched\n"
		"later; n/a without vblank counters),\n"
		"unmatched_presents (present events naming no commit tinywl saw).\n",
		prog, TINYWL_BACKGROUND);
}

static bool parse_long(const char *str, long min, long *out)
{
	char *end;
	errno = 0;
	long value = strtol(str, &end, 10);
	if (errno != 0 || end == str || *end != '\0' || value < min) {
		return false;
	}
	*out = value;
	return true;
}

/* "WIDTHxHEIGHT" or "WIDTHxHEIGHT@HZ", HZ with up to three decimals. */
static bool parse_mode(const char *str, struct tinywl_options *opts)
{
	char *end;
	errno = 0;
	long width = strtol(str, &end, 10);
	if (errno != 0 || end == str || *end != 'x' || width < 1 || width > 16384) {
		return false;
	}
	const char *rest = end + 1;
	long height = strtol(rest, &end, 10);
	if (errno != 0 || end == rest || height < 1 || height > 16384) {
		return false;
	}
	long mhz = 60000;
	if (*end == '@') {
		rest = end + 1;
		long hz = strtol(rest, &end, 10);
		if (errno != 0 || end == rest || *rest == '-' || *rest == '+' || hz > 1000) {
			return false;
		}
		mhz = hz * 1000;
		if (*end == '.') {
			long scale = 100;
			for (end++; *end >= '0' && *end <= '9' && scale > 0; end++, scale /= 10) {
				mhz += (*end - '0') * scale;
			}
		}
		if (mhz <= 0) {
			return false;
		}
	}
	if (*end != '\0') {
		return false;
	}
	opts->mode_set = true;
	opts->mode_width = (int32_t)width;
	opts->mode_height = (int32_t)height;
	opts->mode_refresh_mhz = (int32_t)mhz;
	return true;
}

static bool parse_point(const char *str, int *x, int *y)
{
	char *end;
	errno = 0;
	long lx = strtol(str, &end, 10);
	if (errno != 0 || end == str || *end != ',' || lx < INT_MIN / 2 || lx > INT_MAX / 2) {
		return false;
	}
	const char *rest = end + 1;
	long ly = strtol(rest, &end, 10);
	if (errno != 0 || end == rest || *end != '\0' || ly < INT_MIN / 2 || ly > INT_MAX / 2) {
		return false;
	}
	*x = (int)lx;
	*y = (int)ly;
	return true;
}

enum tinywl_option {
	OPT_BACKEND = 256,
	OPT_CAPTURE,
	OPT_CAPTURE_AFTER,
	OPT_CURSOR,
	OPT_WINDOW_POS,
	OPT_EXIT_AFTER_FRAMES,
	OPT_MODE,
	OPT_DEADLINE,
	OPT_STALL_EVERY,
	OPT_STALL_MS,
	OPT_CHURN_MS,
};

/* Returns -1 to go on, otherwise the exit status. */
static int parse_options(int argc, char *argv[], struct tinywl_options *opts)
{
	static const struct option long_options[] = {
		{"startup", required_argument, NULL, 's'},
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"capture", required_argument, NULL, OPT_CAPTURE},
		{"capture-after", required_argument, NULL, OPT_CAPTURE_AFTER},
		{"cursor", required_argument, NULL, OPT_CURSOR},
		{"window-pos", required_argument, NULL, OPT_WINDOW_POS},
		{"exit-after-frames", required_argument, NULL, OPT_EXIT_AFTER_FRAMES},
		{"mode", required_argument, NULL, OPT_MODE},
		{"deadline", no_argument, NULL, OPT_DEADLINE},
		{"stall-every", required_argument, NULL, OPT_STALL_EVERY},
		{"stall-ms", required_argument, NULL, OPT_STALL_MS},
		{"churn-ms", required_argument, NULL, OPT_CHURN_MS},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	*opts = (struct tinywl_options){
		.backend = TINYWL_BACKEND_WLA,
		.capture_after = 30,
		.cursor_x = 100,
		.cursor_y = 100,
	};
	const char *prog = argv[0];
	/* getopt's own messages would make a second error line. */
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":s:vh", long_options, NULL)) != -1) {
		switch (c) {
		case 's':
			opts->startup_cmd = optarg;
			break;
		case OPT_BACKEND:
			if (strcmp(optarg, "wla") == 0) {
				opts->backend = TINYWL_BACKEND_WLA;
			} else if (strcmp(optarg, "auto") == 0) {
				opts->backend = TINYWL_BACKEND_AUTO;
			} else {
				fprintf(stderr, "tinywl: --backend '%s': expected wla or auto\n",
					optarg);
				return 2;
			}
			break;
		case OPT_CAPTURE:
			opts->capture_path = optarg;
			break;
		case OPT_CAPTURE_AFTER:
			if (!parse_long(optarg, 0, &opts->capture_after)) {
				fprintf(stderr, "tinywl: --capture-after '%s': expected a number "
					">= 0\n", optarg);
				return 2;
			}
			break;
		case OPT_CURSOR:
			if (!parse_point(optarg, &opts->cursor_x, &opts->cursor_y)) {
				fprintf(stderr, "tinywl: --cursor '%s': expected X,Y\n", optarg);
				return 2;
			}
			break;
		case OPT_WINDOW_POS:
			if (!parse_point(optarg, &opts->window_x, &opts->window_y)) {
				fprintf(stderr, "tinywl: --window-pos '%s': expected X,Y\n",
					optarg);
				return 2;
			}
			break;
		case OPT_EXIT_AFTER_FRAMES:
			if (!parse_long(optarg, 1, &opts->exit_after_frames)) {
				fprintf(stderr, "tinywl: --exit-after-frames '%s': expected a "
					"number >= 1\n", optarg);
				return 2;
			}
			break;
		case OPT_MODE:
			if (!parse_mode(optarg, opts)) {
				fprintf(stderr, "tinywl: --mode '%s': expected WIDTHxHEIGHT or "
					"WIDTHxHEIGHT@HZ\n", optarg);
				return 2;
			}
			break;
		case OPT_DEADLINE:
			opts->deadline = true;
			break;
		case OPT_STALL_EVERY:
			if (!parse_long(optarg, 1, &opts->stall_every)) {
				fprintf(stderr, "tinywl: --stall-every '%s': expected a number "
					">= 1\n", optarg);
				return 2;
			}
			break;
		case OPT_CHURN_MS:
			if (!parse_long(optarg, 10, &opts->churn_ms) || opts->churn_ms > 600000) {
				fprintf(stderr, "tinywl: --churn-ms '%s': expected 10..600000\n",
					optarg);
				return 2;
			}
			break;
		case OPT_STALL_MS:
			if (!parse_long(optarg, 1, &opts->stall_ms) || opts->stall_ms > 10000) {
				fprintf(stderr, "tinywl: --stall-ms '%s': expected 1..10000\n",
					optarg);
				return 2;
			}
			break;
		case 'v':
			opts->verbose = true;
			break;
		case 'h':
			usage(stdout, prog);
			return 0;
		case ':':
			fprintf(stderr, "tinywl: option '%s' needs a value (see -h)\n",
				argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "tinywl: unknown option '%s' (see -h)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tinywl: unexpected argument '%s' (see -h)\n", argv[optind]);
		return 2;
	}
	if (opts->capture_path != NULL && opts->backend != TINYWL_BACKEND_WLA) {
		fprintf(stderr, "tinywl: --capture needs --backend wla (it reads the scanout "
			"of the wlatomic display controller)\n");
		return 2;
	}
	if ((opts->stall_every > 0) != (opts->stall_ms > 0)) {
		fprintf(stderr, "tinywl: %s needs %s (see -h)\n",
			opts->stall_every > 0 ? "--stall-every" : "--stall-ms",
			opts->stall_every > 0 ? "--stall-ms" : "--stall-every");
		return 2;
	}
	if (opts->deadline && opts->backend != TINYWL_BACKEND_WLA) {
		fprintf(stderr, "tinywl: --deadline needs --backend wla (the frame deadline comes "
			"from the wlatomic display controller)\n");
		return 2;
	}
	return -1;
}

static bool server_init(struct tinywl_server *server)
{
	struct wl_display *display = server->display;
	/* Removed at finish however far init got. */
	wl_list_init(&server->output_power_set_mode.link);

	server->renderer = wlr_renderer_autocreate(server->backend);
	if (server->renderer == NULL) {
		fprintf(stderr, "tinywl: cannot create a renderer\n");
		return false;
	}
	wlr_renderer_init_wl_display(server->renderer, display);
	server->allocator = wlr_allocator_autocreate(server->backend, server->renderer);
	if (server->allocator == NULL) {
		fprintf(stderr, "tinywl: cannot create an allocator\n");
		return false;
	}

	/* wlroots 0.15's wlr_compositor also provides wl_subcompositor. */
	wlr_compositor_create(display, server->renderer);
	wlr_data_device_manager_create(display);

	server->output_layout = wlr_output_layout_create();
	wl_list_init(&server->outputs);
	server->new_output.notify = handle_new_output;
	wl_signal_add(&server->backend->events.new_output, &server->new_output);

	server->scene = wlr_scene_create();
	wlr_scene_attach_output_layout(server->scene, server->output_layout);
	static const float background[4] = {
		((TINYWL_BACKGROUND >> 16) & 0xff) / 255.0f,
		((TINYWL_BACKGROUND >> 8) & 0xff) / 255.0f,
		(TINYWL_BACKGROUND & 0xff) / 255.0f,
		1.0f,
	};
	server->background = wlr_scene_rect_create(&server->scene->node, 0, 0, background);
	wlr_scene_set_presentation(server->scene,
		wlr_presentation_create(display, server->backend));
	wlr_screencopy_manager_v1_create(display);
	struct wlr_output_power_manager_v1 *power = wlr_output_power_manager_v1_create(display);
	server->output_power_set_mode.notify = handle_output_power_set_mode;
	wl_signal_add(&power->events.set_mode, &server->output_power_set_mode);
	wlr_xdg_output_manager_v1_create(display, server->output_layout);

	wl_list_init(&server->views);
	server->xdg_shell = wlr_xdg_shell_create(display);
	server->new_surface.notify = handle_new_surface;
	wl_signal_add(&server->xdg_shell->events.new_surface, &server->new_surface);

	server->cursor = wlr_cursor_create();
	wlr_cursor_attach_output_layout(server->cursor, server->output_layout);
	/* Without an installed theme wlroots falls back to its built-in left_ptr. */
	server->cursor_mgr = wlr_xcursor_manager_create(NULL, TINYWL_CURSOR_THEME_SIZE);
	wlr_xcursor_manager_load(server->cursor_mgr, 1);
	server->motion.notify = handle_motion;
	wl_signal_add(&server->cursor->events.motion, &server->motion);
	server->motion_absolute.notify = handle_motion_absolute;
	wl_signal_add(&server->cursor->events.motion_absolute, &server->motion_absolute);
	server->button.notify = handle_button;
	wl_signal_add(&server->cursor->events.button, &server->button);
	server->axis.notify = handle_axis;
	wl_signal_add(&server->cursor->events.axis, &server->axis);
	server->frame.notify = handle_frame;
	wl_signal_add(&server->cursor->events.frame, &server->frame);

	wl_list_init(&server->keyboards);
	server->new_input.notify = handle_new_input;
	wl_signal_add(&server->backend->events.new_input, &server->new_input);
	server->seat = wlr_seat_create(display, "seat0");
	server->request_set_cursor.notify = handle_request_set_cursor;
	wl_signal_add(&server->seat->events.request_set_cursor, &server->request_set_cursor);
	server->request_set_selection.notify = handle_request_set_selection;
	wl_signal_add(&server->seat->events.request_set_selection,
		&server->request_set_selection);
	update_seat_capabilities(server);

	server->sigint_source = wl_event_loop_add_signal(server->loop, SIGINT,
		handle_terminate_signal, server);
	server->sigterm_source = wl_event_loop_add_signal(server->loop, SIGTERM,
		handle_terminate_signal, server);
	server->sigchld_source = wl_event_loop_add_signal(server->loop, SIGCHLD,
		handle_sigchld, server);
	if (server->opts.churn_ms > 0) {
		server->churn_source = wl_event_loop_add_timer(server->loop, handle_churn_timer,
			server);
		if (server->churn_source == NULL) {
			wlr_log(WLR_ERROR, "tinywl: cannot create the churn timer");
			return false;
		}
		wl_event_source_timer_update(server->churn_source, (int)server->opts.churn_ms);
	}
	return true;
}

/*
 * Tear down in dependency order: clients first (their surfaces hold scene
 * nodes and buffers), then what listens to outputs (cursor, layout, scene),
 * then the outputs with their backend, then what rendered into them, and the
 * display with its remaining globals last.
 */
static void server_finish(struct tinywl_server *server)
{
	if (server->child > 0) {
		kill(-server->child, SIGTERM);
	}
	wl_display_destroy_clients(server->display);

	if (server->sigint_source != NULL) {
		wl_event_source_remove(server->sigint_source);
	}
	if (server->sigterm_source != NULL) {
		wl_event_source_remove(server->sigterm_source);
	}
	if (server->sigchld_source != NULL) {
		wl_event_source_remove(server->sigchld_source);
	}
	if (server->churn_source != NULL) {
		wl_event_source_remove(server->churn_source);
	}
	if (server->capture != NULL) {
		wla_capture_cancel(server->capture);
		server->capture = NULL;
	}

	if (server->seat != NULL) {
		wl_list_remove(&server->request_set_cursor.link);
		wl_list_remove(&server->request_set_selection.link);
	}
	if (server->xdg_shell != NULL) {
		wl_list_remove(&server->new_surface.link);
	}
	if (server->cursor != NULL) {
		wl_list_remove(&server->motion.link);
		wl_list_remove(&server->motion_absolute.link);
		wl_list_remove(&server->button.link);
		wl_list_remove(&server->axis.link);
		wl_list_remove(&server->frame.link);
		wlr_xcursor_manager_destroy(server->cursor_mgr);
		wlr_cursor_destroy(server->cursor);
	}
	/*
	 * The layout goes before the scene: wlr_scene's layout helper only
	 * learns about the layout's destruction, not the scene's.
	 */
	if (server->output_layout != NULL) {
		wlr_output_layout_destroy(server->output_layout);
	}
	if (server->scene != NULL) {
		wlr_scene_node_destroy(&server->scene->node);
	}
	if (server->output_layout != NULL) {
		wl_list_remove(&server->new_output.link);
		wl_list_remove(&server->output_power_set_mode.link);
		wl_list_remove(&server->new_input.link);
	}
	wlr_backend_destroy(server->backend);
	if (server->allocator != NULL) {
		wlr_allocator_destroy(server->allocator);
	}
	if (server->renderer != NULL) {
		wlr_renderer_destroy(server->renderer);
	}
	wl_display_destroy(server->display);
}

int main(int argc, char *argv[])
{
	struct tinywl_server server = {0};
	int status = parse_options(argc, argv, &server.opts);
	if (status >= 0) {
		return status;
	}
	wlr_log_init(server.opts.verbose ? WLR_DEBUG : WLR_ERROR, NULL);

	server.display = wl_display_create();
	if (server.display == NULL) {
		fprintf(stderr, "tinywl: cannot create the display\n");
		return EXIT_FAILURE;
	}
	server.loop = wl_display_get_event_loop(server.display);
	if (server.opts.backend == TINYWL_BACKEND_WLA) {
		/* On failure the plugin has already said why, in one line. */
		server.backend = wla_backend_create(server.display, NULL);
	} else {
		server.backend = wlr_backend_autocreate(server.display);
		if (server.backend == NULL) {
			fprintf(stderr, "tinywl: wlr_backend_autocreate failed\n");
		}
	}
	if (server.backend == NULL) {
		wl_display_destroy(server.display);
		return EXIT_FAILURE;
	}

	server.exit_status = EXIT_SUCCESS;
	if (!server_init(&server)) {
		server_finish(&server);
		return EXIT_FAILURE;
	}

	const char *socket = wl_display_add_socket_auto(server.display);
	if (socket == NULL) {
		fprintf(stderr, "tinywl: cannot create a Wayland socket (XDG_RUNTIME_DIR=%s)\n",
			getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") : "unset");
		server_finish(&server);
		return EXIT_FAILURE;
	}
	if (!wlr_backend_start(server.backend)) {
		fprintf(stderr, "tinywl: cannot start the backend\n");
		server_finish(&server);
		return EXIT_FAILURE;
	}
	setenv("WAYLAND_DISPLAY", socket, 1);
	wlr_log(WLR_INFO, "tinywl: running on WAYLAND_DISPLAY=%s", socket);
	if (server.opts.startup_cmd != NULL && !spawn_client(&server, socket)) {
		server_finish(&server);
		return EXIT_FAILURE;
	}

	wl_display_run(server.display);
	server.shutting_down = true;
	if (server.opts.capture_path != NULL && !server.capture_written &&
			server.exit_status == EXIT_SUCCESS) {
		/* Told to stop (a signal) before the capture: it did not happen. */
		fprintf(stderr, "tinywl: exiting before the capture was taken\n");
		server.exit_status = EXIT_FAILURE;
	}
	if (server.capture != NULL) {
		/* Disabling the outputs below must not report it as a failure. */
		wla_capture_cancel(server.capture);
		server.capture = NULL;
	}

	print_stats(&server);
	disable_outputs(&server);
	wait_for_outputs_off(&server);
	if (wla_backend_is_wla(server.backend)) {
		printf("tinywl: buffer_locks=%zu\n", wla_backend_buffer_locks(server.backend));
		fflush(stdout);
	}
	status = server.exit_status;
	server_finish(&server);
	return status;
}
