/*
 * tinywl: a small wlroots 0.15 compositor on the wlatomic backend, in the
 * spirit of wlroots' own tinywl. Read it to see how a compositor
 *  - loads wlatomic: one call instead of wlr_backend_autocreate (main);
 *  - renders with wlr_scene at the frame event, or as late as wlatomic's
 *    frame deadline allows (--deadline: handle_output_frame);
 *  - scans windows out from their clients' own buffers on overlay planes,
 *    and a fullscreen one on the primary plane: wlatomic's plane helper is
 *    one call instead of wlr_scene_output_commit (render_output);
 *  - lets clients such as wlr-randr change modes and switch outputs off and
 *    on (wlr-output-management and wlr-output-power-management).
 * What only tests need (window and cursor positions, input scripts,
 * statistics, captures, a composited comparison) is in the test fixture
 * tests/fixture/tinywl-probe.c, which links this file unchanged.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include <wlr/types/wlr_keyboard_group.h>
#include <wlr/types/wlr_touch.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_output_management_v1.h>
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
#include <wlatomic/scene.h>

/* The background, 0xRRGGBB: not black, which a capture could not tell from
 * the cursor's outline; each channel n/255, exact in wlr_scene_rect's float
 * colour. The integration tests rely on this value. */
#define TINYWL_BACKGROUND 0x304050
/* --deadline: the render durations its margin is the maximum of, and what is
 * added for the timer's wake-up and a render slower than the last few. */
#define TINYWL_RENDER_SAMPLES 32
#define TINYWL_DEADLINE_SAFETY_NS 1500000

struct tinywl_server {
	const char *startup_cmd; /* -s */
	bool deadline, verbose;  /* --deadline, -v */
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wlr_renderer *renderer;
	struct wlr_allocator *allocator;
	struct wlr_scene *scene;
	struct wla_scene *planes; /* wlatomic's plane helper for the scene */
	struct wlr_output_layout *output_layout;
	struct wlr_output_manager_v1 *output_manager;
	struct wl_list outputs; /* tinywl_output.link, in creation order */
	struct wlr_cursor *cursor;
	struct wlr_xcursor_manager *cursor_mgr;
	struct wlr_seat *seat;
	struct wlr_keyboard_group *keyboards;
	struct wl_list views;  /* tinywl_view.link, the focused first */
	struct wl_list inputs; /* tinywl_input.link: devices mapped to an output */
	/* Touch points down, with the layout position of their surface. */
	struct tinywl_touch_point {
		int32_t id;
		double origin_x, origin_y;
	} touch_points[16];
	size_t n_touch_points;
	pid_t child;
	bool shutting_down; /* the event loop has ended: no more frames */
	struct wl_event_source *signal_sources[2];
	struct wl_listener new_output, layout_change, output_manager_apply,
		output_manager_test, output_power_set_mode, new_input, keyboard_key,
		keyboard_modifiers, new_surface, motion, motion_absolute, button, axis, frame,
		touch_down, touch_up, touch_motion, touch_cancel, touch_frame,
		request_set_cursor, request_set_selection;
	struct wl_listener *listening[21]; /* those added, removed at finish */
	size_t n_listening;
};

/* Every input device: the seat offers what kinds there are. A pointer or
 * touch device that names its output (output_name, as wlatomic's per-output
 * pointers and touchscreens do) is mapped to that output once it exists. */
struct tinywl_input {
	struct wl_list link;
	struct tinywl_server *server;
	struct wlr_input_device *device;
	struct wl_listener destroy;
};

struct tinywl_output {
	struct wl_list link;
	struct tinywl_server *server;
	struct wlr_output *wlr_output;
	/* The background under this output's part of the layout: one rect per
	 * output, not one over the layout's box, which wlroots 0.15's pixman
	 * renderer would allocate and fill whole for every frame it damages. */
	struct wlr_scene_rect *background;
	/* --deadline: the last render durations and the timer of the next render. */
	uint64_t render_ns[TINYWL_RENDER_SAMPLES];
	uint64_t n_render;
	struct wl_event_source *deadline_timer;
	bool deadline_armed;
	struct wl_listener frame, destroy;
};

struct tinywl_view {
	struct wl_list link;
	struct tinywl_server *server;
	struct wlr_xdg_surface *xdg_surface;
	struct wlr_scene_node *scene_node;
	struct wl_listener map, destroy;
};

static void add_listener(struct wl_listener *listener, struct wl_signal *signal,
	wl_notify_func_t notify)
{
	listener->notify = notify;
	wl_signal_add(signal, listener);
}

static uint64_t now_ns(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* ---- Input: keyboards, the pointer and focus ---- */

static void focus_view(struct tinywl_view *view, struct wlr_surface *surface)
{
	struct wlr_seat *seat = view->server->seat;
	struct wlr_surface *prev_surface = seat->keyboard_state.focused_surface;
	if (prev_surface == surface) {
		return;
	}
	struct wlr_xdg_surface *prev = prev_surface != NULL &&
		wlr_surface_is_xdg_surface(prev_surface) ?
		wlr_xdg_surface_from_wlr_surface(prev_surface) : NULL;
	if (prev != NULL && prev->role == WLR_XDG_SURFACE_ROLE_TOPLEVEL) {
		wlr_xdg_toplevel_set_activated(prev, false);
	}
	wlr_scene_node_raise_to_top(view->scene_node);
	wl_list_remove(&view->link);
	wl_list_insert(&view->server->views, &view->link);
	wlr_xdg_toplevel_set_activated(view->xdg_surface, true);
	struct wlr_keyboard *kb = wlr_seat_get_keyboard(seat);
	wlr_seat_keyboard_notify_enter(seat, view->xdg_surface->surface,
		kb ? kb->keycodes : NULL, kb ? kb->num_keycodes : 0, kb ? &kb->modifiers : NULL);
}

/* The view and surface under layout coordinates (lx, ly), if any: the
 * scene's hit test, which also finds windows on planes. */
static struct tinywl_view *view_at(struct tinywl_server *server, double lx, double ly,
	struct wlr_surface **surface, double *sx, double *sy)
{
	struct wlr_scene_node *node =
		wla_scene_node_at(server->planes, &server->scene->node, lx, ly, sx, sy);
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

/* Every keyboard joins one group: one keymap, one set of listeners, and
 * wlroots forgets a keyboard by itself when it is destroyed. */
static void handle_keyboard_modifiers(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, keyboard_modifiers);
	wlr_seat_set_keyboard(server->seat, server->keyboards->input_device);
	wlr_seat_keyboard_notify_modifiers(server->seat, &server->keyboards->keyboard.modifiers);
}

/* Alt+Escape ends tinywl, Alt+F1 focuses the window focused longest ago, as
 * in wlroots' tinywl; every other key goes to the focused client. */
static void handle_keyboard_key(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, keyboard_key);
	struct wlr_event_keyboard_key *event = data;
	struct wlr_keyboard *kb = &server->keyboards->keyboard;
	const xkb_keysym_t *syms;
	int n = xkb_state_key_get_syms(kb->xkb_state, event->keycode + 8, &syms);
	bool alt = event->state == WL_KEYBOARD_KEY_STATE_PRESSED &&
		(wlr_keyboard_get_modifiers(kb) & WLR_MODIFIER_ALT);
	for (int i = 0; alt && i < n; i++) {
		if (syms[i] == XKB_KEY_Escape) {
			wl_display_terminate(server->display);
			return;
		}
		if (syms[i] == XKB_KEY_F1 && wl_list_length(&server->views) > 1) {
			struct tinywl_view *last = wl_container_of(server->views.prev, last, link);
			focus_view(last, last->xdg_surface->surface);
			return;
		}
	}
	wlr_seat_set_keyboard(server->seat, server->keyboards->input_device);
	wlr_seat_keyboard_notify_key(server->seat, event->time_msec, event->keycode,
		event->state);
}

/* The seat has a keyboard only while one exists: a client never waits for
 * keys that cannot come. */
static void update_capabilities(struct tinywl_server *server)
{
	uint32_t caps = WL_SEAT_CAPABILITY_POINTER;
	struct tinywl_input *input;
	wl_list_for_each(input, &server->inputs, link) {
		enum wlr_input_device_type type = input->device->type;
		caps |= type == WLR_INPUT_DEVICE_KEYBOARD ? WL_SEAT_CAPABILITY_KEYBOARD :
			type == WLR_INPUT_DEVICE_TOUCH ? WL_SEAT_CAPABILITY_TOUCH : 0;
	}
	if (!server->shutting_down) {
		wlr_seat_set_capabilities(server->seat, caps);
	}
}

static void handle_input_destroy(struct wl_listener *listener, void *data)
{
	struct tinywl_input *input = wl_container_of(listener, input, destroy);
	wl_list_remove(&input->destroy.link);
	wl_list_remove(&input->link);
	update_capabilities(input->server);
	free(input);
}

/* Map the devices that name an output to it, now or when it comes (and
 * away from it when it goes: wlr_cursor keeps a pointer to it). */
static void remap_inputs(struct tinywl_server *server, struct wlr_output *gone)
{
	struct tinywl_input *input;
	struct tinywl_output *output;
	wl_list_for_each(input, &server->inputs, link) {
		struct wlr_output *to = NULL;
		wl_list_for_each(output, &server->outputs, link) {
			const char *name = input->device->output_name;
			to = name != NULL && strcmp(output->wlr_output->name, name) == 0 &&
				output->wlr_output != gone ? output->wlr_output : to;
		}
		if (input->device->type != WLR_INPUT_DEVICE_KEYBOARD && server->cursor != NULL &&
				input->device->output_name != NULL) {
			wlr_cursor_map_input_to_output(server->cursor, input->device, to);
		}
	}
}

static void handle_new_input(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, new_input);
	struct wlr_input_device *device = data;
	if (device->type == WLR_INPUT_DEVICE_KEYBOARD) {
		wlr_keyboard_set_keymap(device->keyboard, server->keyboards->keyboard.keymap);
		if (!wlr_keyboard_group_add_keyboard(server->keyboards, device->keyboard)) {
			wlr_log(WLR_ERROR, "tinywl: keyboard %s: cannot join the group",
				device->name);
		}
		wlr_seat_set_keyboard(server->seat, server->keyboards->input_device);
	} else if (device->type == WLR_INPUT_DEVICE_POINTER ||
			device->type == WLR_INPUT_DEVICE_TOUCH) {
		/* wlr_cursor forgets the device by itself when it is destroyed. */
		wlr_cursor_attach_input_device(server->cursor, device);
	} else {
		return;
	}
	struct tinywl_input *input = calloc(1, sizeof(*input));
	if (input == NULL) {
		wlr_log(WLR_ERROR, "tinywl: input %s: out of memory", device->name);
		return;
	}
	input->server = server;
	input->device = device;
	add_listener(&input->destroy, &device->events.destroy, handle_input_destroy);
	wl_list_insert(&server->inputs, &input->link);
	remap_inputs(server, NULL);
	update_capabilities(server);
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
	if (view_at(server, server->cursor->x, server->cursor->y, &surface, &sx, &sy) == NULL) {
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
	double sx, sy;
	struct wlr_surface *surface = NULL;
	struct tinywl_view *view = view_at(server, server->cursor->x, server->cursor->y,
		&surface, &sx, &sy);
	if (event->state == WLR_BUTTON_PRESSED && view != NULL) {
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

/* Touch: a point goes to the surface it went down on, in that surface's
 * coordinates; going down on a window focuses it. */
static struct tinywl_touch_point *touch_point(struct tinywl_server *server, int32_t id)
{
	for (size_t i = 0; i < server->n_touch_points; i++) {
		if (server->touch_points[i].id == id) {
			return &server->touch_points[i];
		}
	}
	return NULL;
}

static void handle_touch_down(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, touch_down);
	struct wlr_event_touch_down *event = data;
	double lx, ly, sx, sy;
	wlr_cursor_absolute_to_layout_coords(server->cursor, event->device, event->x, event->y,
		&lx, &ly);
	struct wlr_surface *surface = NULL;
	struct tinywl_view *view = view_at(server, lx, ly, &surface, &sx, &sy);
	if (view == NULL || touch_point(server, event->touch_id) != NULL ||
			server->n_touch_points == sizeof(server->touch_points) /
			sizeof(server->touch_points[0])) {
		return;
	}
	server->touch_points[server->n_touch_points++] = (struct tinywl_touch_point){
		.id = event->touch_id, .origin_x = lx - sx, .origin_y = ly - sy };
	focus_view(view, surface);
	wlr_seat_touch_notify_down(server->seat, surface, event->time_msec, event->touch_id,
		sx, sy);
}

static void handle_touch_motion(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, touch_motion);
	struct wlr_event_touch_motion *event = data;
	struct tinywl_touch_point *point = touch_point(server, event->touch_id);
	if (point == NULL) {
		return;
	}
	double lx, ly;
	wlr_cursor_absolute_to_layout_coords(server->cursor, event->device, event->x, event->y,
		&lx, &ly);
	wlr_seat_touch_notify_motion(server->seat, event->time_msec, event->touch_id,
		lx - point->origin_x, ly - point->origin_y);
}

static void handle_touch_up(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, touch_up);
	struct wlr_event_touch_up *event = data;
	struct tinywl_touch_point *point = touch_point(server, event->touch_id);
	if (point != NULL) {
		*point = server->touch_points[--server->n_touch_points];
		wlr_seat_touch_notify_up(server->seat, event->time_msec, event->touch_id);
	}
}

/* wlroots 0.15's seat has no touch cancel: lifted (the up event's fields). */
static void handle_touch_cancel(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, touch_cancel);
	handle_touch_up(&server->touch_up, data);
}

static void handle_touch_frame(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, touch_frame);
	wlr_seat_touch_notify_frame(server->seat);
}

/* ---- Rendering: at the frame event, or at the frame deadline ---- */

/* Render the scene into the output, commit it and tell clients it is done. */
static void render_output(struct tinywl_output *output)
{
	struct wlr_scene_output *scene_output =
		wlr_scene_get_scene_output(output->server->scene, output->wlr_output);
	if (scene_output == NULL) {
		return;
	}
	uint64_t start = now_ns();
	uint32_t seq_before = output->wlr_output->commit_seq;
	/* Windows that fit go on planes, the rest is rendered. */
	wla_scene_output_commit(output->server->planes, scene_output);
	if (output->wlr_output->commit_seq != seq_before) {
		output->render_ns[output->n_render++ % TINYWL_RENDER_SAMPLES] = now_ns() - start;
	}
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* Surfaces on planes hear from the plane helper, at their present. */
	wlr_scene_output_send_frame_done(scene_output, &now);
}

static int handle_deadline_timer(void *data)
{
	struct tinywl_output *output = data;
	output->deadline_armed = false;
	render_output(output);
	return 0;
}

/*
 * A frame event says the flip queue has room. With --deadline the render
 * waits until just before the latest moment a commit still makes the vblank
 * (wla_output_get_frame_deadline), so that what it shows is as recent as it
 * can be: the longest recent render plus a safety margin before it, rounded
 * down to the event loop's whole milliseconds.
 */
static void handle_output_frame(struct wl_listener *listener, void *data)
{
	struct tinywl_output *output = wl_container_of(listener, output, frame);
	struct wla_frame_deadline deadline;
	if (output->server->shutting_down || output->deadline_armed) {
		return; /* wlroots sends more frame events while nothing is committed */
	}
	if (output->deadline_timer == NULL || output->n_render == 0 ||
			!wla_output_get_frame_deadline(output->wlr_output, &deadline)) {
		/* At the frame event, or nothing measured yet to plan with. */
		render_output(output);
		return;
	}
	uint64_t longest = 0;
	for (size_t i = 0; i < TINYWL_RENDER_SAMPLES && i < output->n_render; i++) {
		longest = output->render_ns[i] > longest ? output->render_ns[i] : longest;
	}
	int64_t wait_ms = ((int64_t)deadline.commit_by.tv_sec * 1000000000 +
		deadline.commit_by.tv_nsec - (int64_t)(longest + TINYWL_DEADLINE_SAFETY_NS) -
		(int64_t)now_ns()) / 1000000;
	/* A timer of 0 ms would be disarmed: render now. */
	output->deadline_armed = wait_ms > 0 &&
		wl_event_source_timer_update(output->deadline_timer, (int)wait_ms) == 0;
	if (!output->deadline_armed) {
		render_output(output);
	}
}

/* ---- Outputs: hot-plug, wlr-output-management, DPMS ---- */

/* Tell wlr-output-management clients what the outputs are now (wlroots
 * fills in each head from its wlr_output; the position is the layout's). */
static void update_output_manager(struct tinywl_server *server)
{
	struct wlr_output_configuration_v1 *config = wlr_output_configuration_v1_create();
	struct tinywl_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		struct wlr_output_configuration_head_v1 *head = config == NULL ? NULL :
			wlr_output_configuration_head_v1_create(config, output->wlr_output);
		struct wlr_output_layout_output *lo =
			wlr_output_layout_get(server->output_layout, output->wlr_output);
		if (head == NULL) {
			wlr_log(WLR_ERROR, "tinywl: output configuration: out of memory");
			wlr_output_configuration_v1_destroy(config);
			return;
		} else if (lo != NULL) {
			head->state.x = lo->x;
			head->state.y = lo->y;
		}
	}
	if (config != NULL) {
		wlr_output_manager_v1_set_configuration(server->output_manager, config);
	}
}

static void handle_output_destroy(struct wl_listener *listener, void *data)
{
	struct tinywl_output *output = wl_container_of(listener, output, destroy);
	remap_inputs(output->server, output->wlr_output);
	if (output->background != NULL) {
		wlr_scene_node_destroy(&output->background->node);
	}
	if (output->deadline_timer != NULL) {
		wl_event_source_remove(output->deadline_timer);
	}
	wl_list_remove(&output->frame.link);
	wl_list_remove(&output->destroy.link);
	wl_list_remove(&output->link);
	free(output); /* the layout's change event tells output management */
}

static void handle_layout_change(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, layout_change);
	struct tinywl_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		struct wlr_box *box = wlr_output_layout_get_box(server->output_layout,
			output->wlr_output);
		bool shown = box != NULL && !wlr_box_empty(box);
		wlr_scene_node_set_enabled(&output->background->node, shown);
		if (shown) {
			wlr_scene_node_set_position(&output->background->node, box->x, box->y);
			wlr_scene_rect_set_size(output->background, box->width, box->height);
		}
	}
	/* Windows on planes moved relative to their outputs: place again. */
	wl_list_for_each(output, &server->outputs, link) {
		wlr_output_schedule_frame(output->wlr_output);
	}
	update_output_manager(server);
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, new_output);
	struct wlr_output *wlr_output = data;
	if (wlr_output_preferred_mode(wlr_output) != NULL) {
		wlr_output_set_mode(wlr_output, wlr_output_preferred_mode(wlr_output));
	}
	wlr_output_enable(wlr_output, true);
	struct tinywl_output *output = NULL;
	if (!wlr_output_init_render(wlr_output, server->allocator, server->renderer) ||
			!wlr_output_commit(wlr_output) || !(output = calloc(1, sizeof(*output)))) {
		wlr_output_rollback(wlr_output);
		wlr_log(WLR_ERROR, "tinywl: output %s: cannot enable it (%s)", wlr_output->name,
			wlr_output->enabled ? "out of memory" : "init_render or commit failed");
		return;
	}
	output->server = server;
	output->wlr_output = wlr_output;
	static const float background[4] = { (TINYWL_BACKGROUND >> 16) / 255.0f,
		((TINYWL_BACKGROUND >> 8) & 0xff) / 255.0f, (TINYWL_BACKGROUND & 0xff) / 255.0f, 1 };
	output->background = wlr_scene_rect_create(&server->scene->node, 0, 0, background);
	if (output->background == NULL) {
		wlr_log(WLR_ERROR, "tinywl: output %s: no background (out of memory)",
			wlr_output->name);
		free(output);
		return;
	}
	wlr_scene_node_lower_to_bottom(&output->background->node);
	if (server->deadline && (output->deadline_timer = wl_event_loop_add_timer(
			server->loop, handle_deadline_timer, output)) == NULL) {
		/* Rendering at the frame event still works: say so, go on. */
		wlr_log(WLR_ERROR, "tinywl: output %s: no deadline timer, rendering at frame "
			"events", wlr_output->name);
	}
	add_listener(&output->frame, &wlr_output->events.frame, handle_output_frame);
	add_listener(&output->destroy, &wlr_output->events.destroy, handle_output_destroy);
	wl_list_insert(server->outputs.prev, &output->link);
	/* Also creates the wl_output global and, through the scene, a scene
	 * output; the layout's change event tells output management. */
	wlr_output_layout_add_auto(server->output_layout, wlr_output);

	/* Setting the image again gives the new output's cursor plane its
	 * buffer. */
	wlr_xcursor_manager_load(server->cursor_mgr, wlr_output->scale);
	wlr_xcursor_manager_set_cursor_image(server->cursor_mgr, "left_ptr", server->cursor);
	remap_inputs(server, NULL);
}

/*
 * wlr-output-management (wlr-randr): a configuration names every head. Each
 * output's new state is tested, then rolled back (a buffer wlroots rendered
 * to test a mode would be refused while a frame is pending); when applying
 * and every test passed, each is set again and committed, one atomic state
 * per output. A configuration refused by a test changes nothing.
 */
static void handle_output_manager_request(struct wl_listener *listener, void *data)
{
	struct wlr_output_configuration_v1 *config = data;
	struct tinywl_server *server = config->manager->data;
	bool test_only = listener == &server->output_manager_test, ok = true;
	struct wlr_output_configuration_head_v1 *head;
	for (int pass = 0; pass < (test_only ? 1 : 2) && ok; pass++) {
		wl_list_for_each(head, &config->heads, link) {
			struct wlr_output *wlr_output = head->state.output;
			struct wlr_output_head_v1_state *state = &head->state;
			wlr_output_enable(wlr_output, state->enabled);
			if (state->enabled && state->mode != NULL) {
				wlr_output_set_mode(wlr_output, state->mode);
			} else if (state->enabled) {
				/* wlr-randr --custom-mode; a mode of the list comes as mode. */
				wlr_output_set_custom_mode(wlr_output, state->custom_mode.width,
					state->custom_mode.height, state->custom_mode.refresh);
			}
			if (state->enabled) {
				wlr_output_set_transform(wlr_output, state->transform);
				wlr_output_set_scale(wlr_output, state->scale);
			}
			if (pass == 0) {
				ok = ok && wlr_output_test(wlr_output);
				wlr_output_rollback(wlr_output);
			} else if ((ok = wlr_output_commit(wlr_output)) && state->enabled) {
				wlr_output_layout_move(server->output_layout, wlr_output, state->x,
					state->y);
				wlr_output_schedule_frame(wlr_output);
			}
			if (!ok) {
				/* wlroots 0.15 keeps what a refused commit pended. */
				wlr_output_rollback(wlr_output);
				wlr_log(WLR_ERROR, "tinywl: output %s: configuration %s",
					wlr_output->name, pass == 0 ? "refused" : "commit failed");
				break;
			}
		}
	}
	if (ok) {
		wlr_output_configuration_v1_send_succeeded(config);
	} else {
		wlr_output_configuration_v1_send_failed(config);
	}
	wlr_output_configuration_v1_destroy(config);
	if (!test_only) {
		update_output_manager(server);
	}
}

/* DPMS (wlr-output-power-management): off disables the output, on enables
 * it again and asks for a frame; the backend powers panels around that. */
static void handle_output_power_set_mode(struct wl_listener *listener, void *data)
{
	struct tinywl_server *server = wl_container_of(listener, server, output_power_set_mode);
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
	update_output_manager(server);
}

/* ---- Windows: xdg-shell toplevels and their popups ---- */

static void handle_view_map(struct wl_listener *listener, void *data)
{
	struct tinywl_view *view = wl_container_of(listener, view, map);
	/* At the layout's origin, as in wlroots' tinywl. */
	focus_view(view, view->xdg_surface->surface);
}

static void handle_view_destroy(struct wl_listener *listener, void *data)
{
	struct tinywl_view *view = wl_container_of(listener, view, destroy);
	/* The scene node is destroyed by wlr_scene along with the surface. */
	wl_list_remove(&view->map.link);
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
		struct wlr_surface *ps = xdg_surface->popup->parent;
		struct wlr_xdg_surface *parent = ps != NULL && wlr_surface_is_xdg_surface(ps) ?
			wlr_xdg_surface_from_wlr_surface(ps) : NULL;
		if (parent != NULL && parent->data != NULL) {
			xdg_surface->data = wlr_scene_xdg_surface_create(parent->data, xdg_surface);
		}
		return;
	} else if (xdg_surface->role != WLR_XDG_SURFACE_ROLE_TOPLEVEL) {
		return;
	}
	struct tinywl_view *view = calloc(1, sizeof(*view));
	if (view == NULL || (view->scene_node = wlr_scene_xdg_surface_create(
			&server->scene->node, xdg_surface)) == NULL) {
		wlr_log(WLR_ERROR, "tinywl: toplevel: out of memory");
		free(view);
		return;
	}
	view->server = server;
	view->xdg_surface = xdg_surface;
	view->scene_node->data = view;
	xdg_surface->data = view->scene_node;
	wl_list_insert(server->views.prev, &view->link);
	add_listener(&view->map, &xdg_surface->events.map, handle_view_map);
	add_listener(&view->destroy, &xdg_surface->events.destroy, handle_view_destroy);
}

/* ---- The client, signals, options ---- */

static int handle_terminate_signal(int signal_number, void *data)
{
	wl_display_terminate(((struct tinywl_server *)data)->display);
	return 0;
}

/* -s: the client runs beside tinywl; the kernel reaps it when it exits. */
static bool spawn_client(struct tinywl_server *server)
{
	signal(SIGCHLD, SIG_IGN);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "tinywl: cannot start '%s': %s\n", server->startup_cmd,
			strerror(errno));
		return false;
	}
	if (pid == 0) {
		/* Blocked signals (wl_event_loop_add_signal's) and an ignored SIGCHLD
		 * would survive exec; its own process group lets tinywl end it all. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGCHLD, SIG_DFL);
		setpgid(0, 0);
		execl("/bin/sh", "/bin/sh", "-c", server->startup_cmd, (char *)NULL);
		_exit(127);
	}
	server->child = pid;
	return true;
}

static const char usage[] =
	"Usage: %s [options]\n"
	"  -s, --startup CMD     run CMD with /bin/sh -c once the socket exists\n"
	"      --deadline        render each frame just before the output's frame\n"
	"                        deadline, not at the frame event\n"
	"  -v, --verbose         debug log (default: errors only)\n"
	"  -h, --help            this text\n"
	"The backend is wlatomic's, configured by the WLA_* variables (README).\n"
	"The background is 0x%06x.\n";

/* Returns -1 to go on, otherwise the exit status. */
static int parse_options(int argc, char *argv[], struct tinywl_server *server)
{
	static const struct option long_options[] = {
		{"startup", required_argument, NULL, 's'}, {"deadline", no_argument, NULL, 'd'},
		{"verbose", no_argument, NULL, 'v'}, {"help", no_argument, NULL, 'h'}, {0},
	};
	opterr = 0; /* getopt's own messages would make a second error line */
	int c;
	while ((c = getopt_long(argc, argv, ":s:vh", long_options, NULL)) != -1) {
		if (c == 's') {
			server->startup_cmd = optarg;
		} else if (c == 'd') {
			server->deadline = true;
		} else if (c == 'v') {
			server->verbose = true;
		} else if (c == 'h') {
			printf(usage, argv[0], TINYWL_BACKGROUND);
			return 0;
		} else if (c == ':') {
			fprintf(stderr, "tinywl: option '%s' needs a value (see -h)\n",
				argv[optind - 1]);
			return 2;
		} else {
			fprintf(stderr, "tinywl: unknown option '%s' (see -h)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tinywl: unexpected argument '%s' (see -h)\n", argv[optind]);
		return 2;
	}
	return -1;
}

/* ---- Start and end ---- */

static bool server_init(struct tinywl_server *server)
{
	struct wl_display *display = server->display;
	wl_list_init(&server->outputs);
	wl_list_init(&server->views);
	wl_list_init(&server->inputs);
	/* Each listener of the server, noted so that finish removes it. */
#define LISTEN(field, signal, notify) (add_listener(&server->field, signal, notify), \
	server->listening[server->n_listening++] = &server->field)
	server->renderer = wlr_renderer_autocreate(server->backend);
	server->allocator = server->renderer == NULL ? NULL :
		wlr_allocator_autocreate(server->backend, server->renderer);
	if (server->allocator == NULL) {
		fprintf(stderr, "tinywl: cannot create a %s\n",
			server->renderer == NULL ? "renderer" : "allocator");
		return false;
	}
	wlr_renderer_init_wl_display(server->renderer, display);
	/* wlroots 0.15's wlr_compositor also provides wl_subcompositor. */
	wlr_compositor_create(display, server->renderer);
	wlr_data_device_manager_create(display);

	server->output_layout = wlr_output_layout_create();
	LISTEN(layout_change, &server->output_layout->events.change, handle_layout_change);
	LISTEN(new_output, &server->backend->events.new_output, handle_new_output);
	struct wlr_output_manager_v1 *manager = server->output_manager =
		wlr_output_manager_v1_create(display);
	manager->data = server;
	LISTEN(output_manager_apply, &manager->events.apply, handle_output_manager_request);
	LISTEN(output_manager_test, &manager->events.test, handle_output_manager_request);
	struct wlr_output_power_manager_v1 *power = wlr_output_power_manager_v1_create(display);
	LISTEN(output_power_set_mode, &power->events.set_mode, handle_output_power_set_mode);
	wlr_xdg_output_manager_v1_create(display, server->output_layout);
	struct wlr_screencopy_manager_v1 *screencopy = wlr_screencopy_manager_v1_create(display);

	server->scene = wlr_scene_create();
	wlr_scene_attach_output_layout(server->scene, server->output_layout);
	wlr_scene_set_presentation(server->scene,
		wlr_presentation_create(display, server->backend));
	/* Windows on planes (render_output); destroyed with the scene. */
	server->planes = wla_scene_create(server->scene, screencopy);
	if (server->planes == NULL) {
		return false;
	}
	LISTEN(new_surface, &wlr_xdg_shell_create(display)->events.new_surface,
		handle_new_surface);

	struct wlr_cursor *cursor = server->cursor = wlr_cursor_create();
	wlr_cursor_attach_output_layout(cursor, server->output_layout);
	/* Without an installed theme wlroots falls back to its built-in left_ptr. */
	server->cursor_mgr = wlr_xcursor_manager_create(NULL, 24);
	wlr_xcursor_manager_load(server->cursor_mgr, 1);
	LISTEN(motion, &cursor->events.motion, handle_motion);
	LISTEN(motion_absolute, &cursor->events.motion_absolute, handle_motion_absolute);
	LISTEN(button, &cursor->events.button, handle_button);
	LISTEN(axis, &cursor->events.axis, handle_axis);
	LISTEN(frame, &cursor->events.frame, handle_frame);
	LISTEN(touch_down, &cursor->events.touch_down, handle_touch_down);
	LISTEN(touch_up, &cursor->events.touch_up, handle_touch_up);
	LISTEN(touch_motion, &cursor->events.touch_motion, handle_touch_motion);
	LISTEN(touch_cancel, &cursor->events.touch_cancel, handle_touch_cancel);
	LISTEN(touch_frame, &cursor->events.touch_frame, handle_touch_frame);
	LISTEN(new_input, &server->backend->events.new_input, handle_new_input);
	/* One XKB keymap (the default: us, or XKB_DEFAULT_* from the
	 * environment) for every keyboard, which all join one group. */
	server->keyboards = wlr_keyboard_group_create();
	struct xkb_context *context = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
	struct xkb_keymap *keymap = context == NULL ? NULL :
		xkb_keymap_new_from_names(context, NULL, XKB_KEYMAP_COMPILE_NO_FLAGS);
	bool keyboards_ok = server->keyboards != NULL && keymap != NULL;
	if (keyboards_ok) {
		struct wlr_keyboard *group = &server->keyboards->keyboard;
		wlr_keyboard_set_keymap(group, keymap);
		wlr_keyboard_set_repeat_info(group, 25, 600);
		LISTEN(keyboard_key, &group->events.key, handle_keyboard_key);
		LISTEN(keyboard_modifiers, &group->events.modifiers, handle_keyboard_modifiers);
	}
	xkb_keymap_unref(keymap);
	xkb_context_unref(context);
	if (!keyboards_ok) {
		fprintf(stderr, "tinywl: cannot create the keyboard group and its XKB keymap\n");
		return false;
	}
	server->seat = wlr_seat_create(display, "seat0");
	LISTEN(request_set_cursor, &server->seat->events.request_set_cursor,
		handle_request_set_cursor);
	LISTEN(request_set_selection, &server->seat->events.request_set_selection,
		handle_request_set_selection);
#undef LISTEN
	wlr_seat_set_capabilities(server->seat, WL_SEAT_CAPABILITY_POINTER);
	server->signal_sources[0] = wl_event_loop_add_signal(server->loop, SIGINT,
		handle_terminate_signal, server);
	server->signal_sources[1] = wl_event_loop_add_signal(server->loop, SIGTERM,
		handle_terminate_signal, server);
	return true;
}

/* Tear down in dependency order: clients (their surfaces hold scene nodes
 * and buffers), what listens to outputs (cursor, layout, scene), the outputs
 * with their backend (which switches them off, panels included), what
 * rendered into them, the display. */
static void server_finish(struct tinywl_server *server)
{
	server->shutting_down = true;
	if (server->child > 0) {
		kill(-server->child, SIGTERM);
	}
	wl_display_destroy_clients(server->display);
	for (size_t i = 0; i < 2; i++) {
		if (server->signal_sources[i] != NULL) {
			wl_event_source_remove(server->signal_sources[i]);
		}
	}
	for (size_t i = 0; i < server->n_listening; i++) {
		wl_list_remove(&server->listening[i]->link);
	}
	if (server->cursor != NULL) {
		wlr_xcursor_manager_destroy(server->cursor_mgr);
		wlr_cursor_destroy(server->cursor);
		server->cursor = NULL;
	}
	/* The layout goes before the scene: wlr_scene's layout helper only
	 * learns about the layout's destruction, not the scene's. */
	wlr_output_layout_destroy(server->output_layout);
	if (server->scene != NULL) {
		/* The outputs' backgrounds go with it. */
		struct tinywl_output *output;
		wl_list_for_each(output, &server->outputs, link) {
			output->background = NULL;
		}
		wlr_scene_node_destroy(&server->scene->node);
	}
	wlr_backend_destroy(server->backend);
	if (server->keyboards != NULL) {
		wlr_keyboard_group_destroy(server->keyboards);
	}
	wlr_allocator_destroy(server->allocator);
	wlr_renderer_destroy(server->renderer);
	wl_display_destroy(server->display);
}

int main(int argc, char *argv[])
{
	struct tinywl_server server = {0};
	int status = parse_options(argc, argv, &server);
	if (status >= 0) {
		return status;
	}
	wlr_log_init(server.verbose ? WLR_DEBUG : WLR_ERROR, NULL);
	server.display = wl_display_create();
	if (server.display == NULL) {
		fprintf(stderr, "tinywl: cannot create the display\n");
		return EXIT_FAILURE;
	}
	server.loop = wl_display_get_event_loop(server.display);
	/* The one line that puts a compositor on wlatomic. NULL: the defaults
	 * and the WLA_* environment. On failure the plugin says why, in one line. */
	server.backend = wla_backend_create(server.display, NULL);
	if (server.backend == NULL) {
		wl_display_destroy(server.display);
		return EXIT_FAILURE;
	}
	const char *socket = NULL;
	bool ok = server_init(&server);
	if (ok && !(socket = wl_display_add_socket_auto(server.display))) {
		fprintf(stderr, "tinywl: cannot create a Wayland socket (XDG_RUNTIME_DIR=%s)\n",
			getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") : "unset");
		ok = false;
	}
	if (ok && !wlr_backend_start(server.backend)) {
		fprintf(stderr, "tinywl: cannot start the backend\n");
		ok = false;
	}
	if (ok && server.startup_cmd != NULL) {
		setenv("WAYLAND_DISPLAY", socket, 1);
		ok = spawn_client(&server);
	}
	if (!ok) {
		server_finish(&server);
		return EXIT_FAILURE;
	}
	wlr_log(WLR_INFO, "tinywl: running on WAYLAND_DISPLAY=%s", socket);
	wl_display_run(server.display);
	server_finish(&server);
	return EXIT_SUCCESS;
}
