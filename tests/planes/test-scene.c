/*
 * The scene helper (include/wlatomic/scene.h) on the VDC with two outputs
 * and wlroots' renderer: a wlr_scene of a background and buffer nodes, as
 * any compositor's scene might be (no surfaces: the tinywl planes tests run
 * it with clients). What goes on a plane, what is composited, the hit test,
 * a node destroyed while its buffer is being flipped, and bad calls.
 */
#include <drm_fourcc.h>
#include <stdlib.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/render/allocator.h>
#include <wlr/render/wlr_renderer.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_damage.h>
#include <wlr/types/wlr_scene.h>
#include <wlatomic/backend.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include <wlatomic/planes.h>
#include <wlatomic/scene.h>
#include "harness.h"
#include "lib/backend.h"
#include "lib/capture.h"
#include "test-buffer.h"

#define W 160
#define H 120
/* Deadlines of the waits below, in ms (scaled by WLA_TEST_TIME_SCALE). */
#define WAIT_MS 2000
/* Each channel n/255: exact in wlr_scene_rect's float colour. */
#define BACKGROUND 0x304050u
#define BLUE 0xff0000c0u

static struct {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wlr_renderer *renderer;
	struct wlr_allocator *allocator;
	struct wlr_output *out[2];
	int presented[2];
	struct wl_listener new_output, present[2];
	struct wlr_scene *scene;
	struct wlr_scene_output *so[2];
	struct wlr_scene_rect *background;
	struct wla_scene *ws;
	struct test_capture cap;
} t;

static void handle_present(struct wl_listener *listener, void *data)
{
	const struct wlr_output_event_present *ev = data;
	t.presented[listener == &t.present[1]] += ev->presented;
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	int i = t.out[0] != NULL;
	t.out[i] = data;
	wlr_output_init_render(t.out[i], t.allocator, t.renderer);
	t.present[i].notify = handle_present;
	wl_signal_add(&t.out[i]->events.present, &t.present[i]);
}

static bool wait_frame_event(int i)
{
	if (!HARNESS_WAIT_UNTIL(t.loop, !t.out[i]->frame_pending, WAIT_MS)) {
		fprintf(stderr, "  output %s: frame_pending still true after %d ms x %g\n",
			t.out[i]->name, WAIT_MS, harness_time_scale());
		return false;
	}
	return true;
}

/* One frame of output i through the helper once wlroots takes one: true if
 * it committed and the frame was presented. */
static bool frame_on(int i)
{
	if (!wait_frame_event(i)) {
		return false;
	}
	uint32_t seq = t.out[i]->commit_seq;
	int want = t.presented[i] + 1;
	if (!wla_scene_output_commit(t.ws, t.so[i]) || t.out[i]->commit_seq == seq) {
		fprintf(stderr, "  output %s: the helper committed nothing (commit_seq %u)\n",
			t.out[i]->name, seq);
		return false;
	}
	if (!HARNESS_WAIT_UNTIL(t.loop, t.presented[i] >= want, WAIT_MS)) {
		fprintf(stderr, "  output %s: presented %d frames, waited for %d\n",
			t.out[i]->name, t.presented[i], want);
		return false;
	}
	return true;
}

/* A frame of output i with the whole scene damaged, as after a change. */
static bool redraw(int i)
{
	wlr_output_damage_add_whole(t.so[i]->damage);
	return frame_on(i);
}

/* How many overlays the last commit of output i showed. */
static size_t overlays_on(int i)
{
	enum wla_overlay_status status[8];
	size_t n = wla_output_overlay_status(t.out[i], status, 8), on = 0;
	for (size_t k = 0; k < n && k < 8; k++) {
		on += status[k] == WLA_OVERLAY_OK;
	}
	return on;
}

/* The pixel (x, y) of output 0's next latched frame (a frame is committed
 * for it), without alpha. */
static uint32_t captured_pixel(int x, int y)
{
	test_capture_reset(&t.cap);
	if (wla_output_capture(t.out[0], test_capture_done, &t.cap) == NULL || !redraw(0) ||
			!HARNESS_WAIT_UNTIL(t.loop, t.cap.done, WAIT_MS) || t.cap.image == NULL) {
		fprintf(stderr, "  output %s: no capture\n", t.out[0]->name);
		return 0xdeadbeefu;
	}
	const uint32_t *row = (const uint32_t *)((const char *)t.cap.image->data +
		(size_t)y * t.cap.image->stride);
	return row[x] & 0xffffffu;
}

static bool setup(void)
{
	memset(&t, 0, sizeof(t));
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
	cfg.outputs[0].n_modes = 1;
	cfg.outputs[1] = cfg.outputs[0];
	snprintf(cfg.outputs[1].name, sizeof(cfg.outputs[1].name), "Virtual-2");
	cfg.n_outputs = 2;
	cfg.overlay_planes = 2;
	snprintf(cfg.control, sizeof(cfg.control), "off");
	wl_list_init(&t.new_output.link);
	t.backend = test_backend_create(&t.display, &t.loop, &cfg, NULL);
	if (t.backend == NULL) {
		return false;
	}
	t.renderer = wlr_renderer_autocreate(t.backend);
	t.allocator = t.renderer ? wlr_allocator_autocreate(t.backend, t.renderer) : NULL;
	if (t.allocator == NULL) {
		return false;
	}
	t.new_output.notify = handle_new_output;
	wl_signal_add(&t.backend->events.new_output, &t.new_output);
	if (!wlr_backend_start(t.backend) || t.out[1] == NULL) {
		return false;
	}
	t.scene = wlr_scene_create();
	static const float bg[4] = { 0x30 / 255.0f, 0x40 / 255.0f, 0x50 / 255.0f, 1.0f };
	t.background = wlr_scene_rect_create(&t.scene->node, 3 * W, H, bg);
	for (int i = 0; i < 2; i++) {
		wlr_output_set_mode(t.out[i], wlr_output_preferred_mode(t.out[i]));
		wlr_output_enable(t.out[i], true);
		if (!wlr_output_commit(t.out[i])) {
			return false;
		}
		/* Side by side, the second from x = 2W: nothing of the first. */
		t.so[i] = wlr_scene_output_create(t.scene, t.out[i]);
		wlr_scene_output_set_position(t.so[i], 2 * W * i, 0);
	}
	t.ws = wla_scene_create(t.scene, NULL);
	return t.ws != NULL && frame_on(0) && frame_on(1);
}

/* The helper goes with the scene (its destroy listener): a leak or a
 * use after free shows under the sanitizers. */
static void finish(void)
{
	if (t.scene != NULL) {
		wlr_scene_node_destroy(&t.scene->node);
	}
	wl_list_remove(&t.new_output.link);
	for (int i = 0; i < 2; i++) {
		if (t.out[i] != NULL) {
			wl_list_remove(&t.present[i].link);
		}
	}
	wl_display_destroy(t.display);
	wlr_allocator_destroy(t.allocator);
	wlr_renderer_destroy(t.renderer);
	test_capture_reset(&t.cap);
	CHECK(!LOGGED("scanout references left at backend destroy"));
}

/* A test: its body between setup and finish. */
#define SCENE_TEST(name) \
	static void name##_body(void); \
	static void name(void) \
	{ \
		if (setup()) { \
			name##_body(); \
		} else { \
			CHECK(!"setup"); \
		} \
		finish(); \
	} \
	static void name##_body(void)

static struct wlr_scene_buffer *add_buffer(int x, int y, int w, int h, uint32_t color,
	bool *gone)
{
	struct test_buffer *b = test_buffer_create(w, h, DRM_FORMAT_XRGB8888, color, gone);
	struct wlr_scene_buffer *node = wlr_scene_buffer_create(&t.scene->node, &b->base);
	wlr_buffer_drop(&b->base); /* the node holds it */
	wlr_scene_node_set_position(&node->node, x, y);
	return node;
}

SCENE_TEST(a_node_that_fits_goes_on_an_overlay_and_is_still_hit)
{
	struct wlr_scene_buffer *node = add_buffer(10, 20, 32, 32, BLUE, NULL);
	CHECK(frame_on(0));
	CHECK_INT(overlays_on(0), 1);
	/* The plane shows it: the scene does not draw it. */
	CHECK(!node->node.state.enabled);
	double nx = -1, ny = -1;
	CHECK(wlr_scene_node_at(&t.scene->node, 15, 25, NULL, NULL) == &t.background->node);
	CHECK(wla_scene_node_at(t.ws, &t.scene->node, 15, 25, &nx, &ny) == &node->node);
	CHECK(nx == 5 && ny == 5);
	CHECK(!node->node.state.enabled); /* the hit test left it as it was */
	CHECK_PIXEL(captured_pixel(15, 25), BLUE & 0xffffffu);
	CHECK_PIXEL(captured_pixel(5, 5), BACKGROUND);
	/* The helper gone, the scene draws it again. */
	wla_scene_destroy(t.ws);
	CHECK(node->node.state.enabled);
	t.ws = wla_scene_create(t.scene, NULL);
}

/* A commit whose only change is a node on a plane (moved: the scene sees
 * no damage) still goes out, and shows it at its new place. */
SCENE_TEST(a_frame_where_only_a_plane_changed_is_committed)
{
	struct wlr_scene_buffer *node = add_buffer(10, 20, 32, 32, BLUE, NULL);
	CHECK(frame_on(0));
	CHECK_INT(overlays_on(0), 1);
	wlr_scene_node_set_position(&node->node, 80, 60);
	CHECK(!pixman_region32_not_empty(&t.so[0]->damage->current));
	wlr_output_schedule_frame(t.out[0]);
	CHECK(frame_on(0));
	CHECK_INT(overlays_on(0), 1);
	CHECK_PIXEL(captured_pixel(85, 65), BLUE & 0xffffffu);
	CHECK_PIXEL(captured_pixel(15, 25), BACKGROUND);
}

static struct wlr_buffer *last_committed;

static void handle_commit(struct wl_listener *listener, void *data)
{
	const struct wlr_output_event_commit *ev = data;
	if (ev->buffer != NULL) {
		last_committed = ev->buffer;
	}
}

/* A frame asked for without damage (wlroots 0.15's scene asks every output
 * for one at any damage anywhere; a capture waits for one) shows the last
 * frame again: a new render would take another swapchain buffer, which
 * ages the others past the damage wlroots keeps. */
SCENE_TEST(a_frame_asked_for_without_damage_is_the_last_frame_again)
{
	struct wl_listener commit = { .notify = handle_commit };
	wl_signal_add(&t.out[1]->events.commit, &commit);
	CHECK(redraw(1));
	struct wlr_buffer *shown = last_committed;
	CHECK(shown != NULL);
	/* Damage on the first output only: the scene asks the second too. */
	add_buffer(10, 20, W, H, BLUE, NULL);
	CHECK(!pixman_region32_not_empty(&t.so[1]->damage->current));
	CHECK(t.out[1]->needs_frame);
	for (int k = 0; k < 3; k++) {
		CHECK(frame_on(1));
		CHECK(last_committed == shown);
		wlr_output_schedule_frame(t.out[1]);
	}
	/* Damage is rendered, into another buffer. */
	CHECK(redraw(1));
	CHECK(last_committed != shown);
	wl_list_remove(&commit.link);
}

/* A frame that cannot be the last one again (a capture's lock refuses a
 * buffer wlroots did not render) is rendered, with what the compositor
 * left pending: a refused repeat would have rolled that back. */
SCENE_TEST(a_frame_that_cannot_be_repeated_keeps_what_is_pending)
{
	CHECK(redraw(1));
	wlr_output_lock_attach_render(t.out[1], true);
	wlr_output_set_scale(t.out[1], 2);
	wlr_output_schedule_frame(t.out[1]);
	CHECK(!pixman_region32_not_empty(&t.so[1]->damage->current));
	CHECK(frame_on(1));
	CHECK(t.out[1]->scale == 2);
	wlr_output_lock_attach_render(t.out[1], false);
}

SCENE_TEST(what_a_plane_cannot_show_is_composited)
{
	/* Partly off the output. */
	struct wlr_scene_buffer *node = add_buffer(W - 16, 20, 32, 32, BLUE, NULL);
	CHECK(redraw(0));
	CHECK_INT(overlays_on(0), 0);
	CHECK(node->node.state.enabled);
	/* Inside, but with a transform. */
	wlr_scene_node_set_position(&node->node, 10, 20);
	wlr_scene_buffer_set_transform(node, WL_OUTPUT_TRANSFORM_90);
	CHECK(redraw(0));
	CHECK_INT(overlays_on(0), 0);
	CHECK(node->node.state.enabled);
	/* Shown by the second output too (it overlaps the first now). */
	wlr_scene_buffer_set_transform(node, WL_OUTPUT_TRANSFORM_NORMAL);
	wlr_scene_output_set_position(t.so[1], W / 2, 0);
	wlr_scene_node_set_position(&node->node, W / 2 + 8, 8);
	CHECK(redraw(0));
	CHECK_INT(overlays_on(0), 0);
	CHECK(node->node.state.enabled);
	/* The second output away, the node goes on a plane; then the first
	 * output is scaled: composited again. */
	wlr_scene_output_set_position(t.so[1], 2 * W, 0);
	wlr_scene_node_set_position(&node->node, 10, 20);
	CHECK(redraw(0));
	CHECK_INT(overlays_on(0), 1);
	CHECK(!node->node.state.enabled);
	wlr_output_set_scale(t.out[0], 2);
	CHECK(redraw(0));
	CHECK_INT(overlays_on(0), 0);
	CHECK(node->node.state.enabled);
	/* Twice as large: layout 10,20 is output 20,40. */
	CHECK_PIXEL(captured_pixel(30, 50), BLUE & 0xffffffu);
	CHECK_PIXEL(captured_pixel(10, 30), BACKGROUND);
}

/* A node on the first output's plane that comes to be shown by the second
 * too is drawn by the second's next frame, and the first takes it off its
 * plane at its next one. */
SCENE_TEST(a_node_moving_onto_another_output_is_drawn_there_at_once)
{
	struct wlr_scene_buffer *node = add_buffer(W / 2 + 8, 8, 32, 32, BLUE, NULL);
	CHECK(redraw(0));
	CHECK_INT(overlays_on(0), 1);
	CHECK(!node->node.state.enabled);
	wlr_scene_output_set_position(t.so[1], W / 2, 0);
	CHECK(redraw(1));
	CHECK(node->node.state.enabled);
	CHECK_INT(overlays_on(1), 0);
	CHECK(frame_on(0));
	CHECK_INT(overlays_on(0), 0);
	CHECK(node->node.state.enabled);
}

/* Destroyed right after the commit that flips its buffer in: the plane
 * keeps the buffer until the next state latched, then lets go of it. */
SCENE_TEST(a_node_destroyed_mid_flip_is_released_after)
{
	bool gone = false;
	struct wlr_scene_buffer *node = add_buffer(10, 20, 32, 32, BLUE, &gone);
	CHECK(wait_frame_event(0));
	uint32_t seq = t.out[0]->commit_seq;
	CHECK(wla_scene_output_commit(t.ws, t.so[0]));
	CHECK(t.out[0]->commit_seq != seq);
	CHECK(!node->node.state.enabled);
	wlr_scene_node_destroy(&node->node);
	CHECK(!gone);
	/* The helper asked for the frame that takes it off. */
	CHECK(frame_on(0));
	if (!HARNESS_WAIT_UNTIL(t.loop, gone, WAIT_MS)) {
		/* Released once the state after the one without it latched. */
		CHECK(redraw(0));
	}
	CHECK(HARNESS_WAIT_UNTIL(t.loop, gone, WAIT_MS));
	CHECK_INT(overlays_on(0), 0);
	CHECK_PIXEL(captured_pixel(15, 25), BACKGROUND);
}

SCENE_TEST(bad_calls_are_refused_with_a_message)
{
	CHECK(wla_scene_create(NULL, NULL) == NULL);
	CHECK_LOGGED("scene planes", "scene is NULL");
	CHECK(!wla_scene_output_commit(NULL, t.so[0]));
	CHECK_LOGGED("scene planes", "wla_scene is NULL");
	CHECK(!wla_scene_output_commit(t.ws, NULL));
	CHECK_LOGGED("scene planes", "scene_output is NULL");
	CHECK(wla_scene_node_at(NULL, &t.scene->node, 1, 2, NULL, NULL) == NULL);
	CHECK_LOGGED("scene planes", "node at 1.0,2.0", "wla_scene is NULL");
	/* A scene output of another scene. */
	struct wlr_scene *other = wlr_scene_create();
	struct wlr_scene_output *other_so = wlr_scene_output_create(other, t.out[0]);
	uint32_t seq = t.out[0]->commit_seq;
	CHECK(!wla_scene_output_commit(t.ws, other_so));
	CHECK_LOGGED("scene planes", "output", t.out[0]->name, "not of the helper's scene");
	CHECK(t.out[0]->commit_seq == seq);
	wlr_scene_node_destroy(&other->node);
	/* A disabled output: nothing committed, its nodes the scene's. */
	struct wlr_scene_buffer *node = add_buffer(2 * W + 10, 20, 32, 32, BLUE, NULL);
	CHECK(redraw(1));
	CHECK_INT(overlays_on(1), 1);
	CHECK(!node->node.state.enabled);
	wlr_output_enable(t.out[1], false);
	CHECK(wlr_output_commit(t.out[1]));
	CHECK(node->node.state.enabled);
	seq = t.out[1]->commit_seq;
	/* A frame timer firing after the output went off: debug output only. */
	harness_log_clear();
	CHECK(!wla_scene_output_commit(t.ws, t.so[1]));
	CHECK(!LOGGED("scene planes", "output", t.out[1]->name));
	CHECK(t.out[1]->commit_seq == seq);
}

int main(void)
{
	harness_init();
	RUN_TEST(a_node_that_fits_goes_on_an_overlay_and_is_still_hit);
	RUN_TEST(a_frame_where_only_a_plane_changed_is_committed);
	RUN_TEST(a_frame_asked_for_without_damage_is_the_last_frame_again);
	RUN_TEST(a_frame_that_cannot_be_repeated_keeps_what_is_pending);
	RUN_TEST(what_a_plane_cannot_show_is_composited);
	RUN_TEST(a_node_moving_onto_another_output_is_drawn_there_at_once);
	RUN_TEST(a_node_destroyed_mid_flip_is_released_after);
	RUN_TEST(bad_calls_are_refused_with_a_message);
	HARNESS_EXIT();
}
