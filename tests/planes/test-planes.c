/*
 * Planes for compositors on the VDC: the plane list, overlay offers in the
 * output's atomic state (what the capture shows, buffer lifetimes, every
 * refusal with its reason), and the layer-to-plane helper.
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <pixman.h>
#include <stdlib.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/render/drm_format_set.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_output.h>
#include <wlatomic/backend.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include <wlatomic/planes.h>
#include "backend/vdc.h"
#include "backend/wlr.h"
#include "harness.h"
#include "lib/backend.h"
#include "lib/capture.h"
#include "test-buffer.h"

#define W 128
#define H 96

struct fixture {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wlr_output *output;
	struct wl_listener new_output, present;
	int presented;
	struct test_capture cap;
	struct test_buffer *primary[3];
	bool primary_gone[3];
	int next_primary;
};

static struct fixture f;

static void handle_present(struct wl_listener *listener, void *data)
{
	const struct wlr_output_event_present *ev = data;
	f.presented += ev->presented;
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	f.output = data;
	f.present.notify = handle_present;
	wl_signal_add(&f.output->events.present, &f.present);
}

/* Deadlines of the waits below, in ms (scaled by WLA_TEST_TIME_SCALE). */
#define WAIT_MS 2000

static bool wait_presented(int want)
{
	if (!HARNESS_WAIT_UNTIL(f.loop, f.presented >= want, WAIT_MS)) {
		fprintf(stderr, "  output %s: presented %d frames after %d ms x %g, waited for %d\n",
			f.output->name, f.presented, WAIT_MS, harness_time_scale(), want);
		return false;
	}
	return true;
}

/* wlroots takes the next buffer once the frame event came. */
static bool wait_frame_event(void)
{
	if (!HARNESS_WAIT_UNTIL(f.loop, !f.output->frame_pending, WAIT_MS)) {
		fprintf(stderr, "  output %s: frame_pending still true after %d ms x %g: no frame "
			"event\n", f.output->name, WAIT_MS, harness_time_scale());
		return false;
	}
	return true;
}

static struct wla_vdc *vdc(void)
{
	struct wla_output *out = wl_container_of(f.output, out, base);
	return wla_vdc_from_device(out->dev);
}

static bool commit_primary(void)
{
	struct test_buffer *b = f.primary[f.next_primary++ % 3];
	wlr_output_attach_buffer(f.output, &b->base);
	return wlr_output_commit(f.output);
}

/* Commit a primary buffer (once wlroots takes one: the frame event came)
 * and wait until it latched. */
static bool frame(void)
{
	if (!wait_frame_event()) {
		return false;
	}
	int want = f.presented + 1;
	return commit_primary() && wait_presented(want);
}

static bool setup(uint32_t overlays)
{
	memset(&f, 0, sizeof(f));
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
	cfg.outputs[0].n_modes = 1;
	cfg.overlay_planes = overlays;
	cfg.flip_depth = 1;
	f.new_output.notify = handle_new_output;
	f.backend = test_backend_create(&f.display, &f.loop, &cfg, &f.new_output);
	if (!f.backend) {
		return false;
	}
	if (!wlr_backend_start(f.backend) || !f.output) {
		return false;
	}
	for (int i = 0; i < 3; i++) {
		f.primary[i] = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xff000040u + (uint32_t)i,
			&f.primary_gone[i]);
	}
	wlr_output_set_mode(f.output, wlr_output_preferred_mode(f.output));
	wlr_output_enable(f.output, true);
	return frame();
}

static void finish(void)
{
	for (int i = 0; i < 3; i++) {
		wlr_buffer_drop(&f.primary[i]->base);
	}
	wl_list_remove(&f.new_output.link);
	if (f.output) {
		wl_list_remove(&f.present.link);
	}
	wl_display_destroy(f.display);
	for (int i = 0; i < 3; i++) {
		CHECK(f.primary_gone[i]);
	}
	/* No fb wrapper outlived its references (the backend says so). */
	CHECK(!LOGGED("references and", "scanout references left at backend destroy"));
	test_capture_reset(&f.cap);
}

/* The image of the next latched frame (a frame is committed for it). */
static bool capture(void)
{
	test_capture_reset(&f.cap);
	if (!wla_output_capture(f.output, test_capture_done, &f.cap)) {
		return false;
	}
	if (!HARNESS_WAIT_UNTIL(f.loop, f.cap.done, WAIT_MS)) {
		fprintf(stderr, "  output %s: capture_done still false after %d ms x %g: no "
			"capture callback\n", f.output->name, WAIT_MS, harness_time_scale());
		return false;
	}
	return f.cap.image != NULL;
}

static size_t locks(void)
{
	return wla_backend_buffer_locks(f.backend);
}

static uint32_t overlay_id(size_t k)
{
	struct wla_output_plane planes[8];
	size_t n = wla_output_get_planes(f.output, planes, 8);
	for (size_t i = 0; i < n; i++) {
		if (planes[i].type == WLA_OUTPUT_PLANE_OVERLAY && k-- == 0) {
			return planes[i].id;
		}
	}
	return 0;
}

static enum wla_overlay_status status_of(size_t i)
{
	enum wla_overlay_status status[8];
	size_t n = wla_output_overlay_status(f.output, status, 8);
	return i < n ? status[i] : (enum wla_overlay_status)-1;
}

static struct wla_overlay overlay(struct test_buffer *b, int32_t x, int32_t y)
{
	return (struct wla_overlay){
		.buffer = &b->base,
		.dst_x = x, .dst_y = y,
		.dst_w = (uint32_t)b->base.width, .dst_h = (uint32_t)b->base.height,
	};
}

static void the_output_lists_its_planes_bottom_to_top(void)
{
	CHECK(setup(2));
	struct wla_output_plane planes[8];
	size_t n = wla_output_get_planes(f.output, planes, 8);
	CHECK_INT(n, 4);
	CHECK_INT(planes[0].type, WLA_OUTPUT_PLANE_PRIMARY);
	CHECK(planes[0].full_screen_only);
	CHECK_INT(planes[1].type, WLA_OUTPUT_PLANE_OVERLAY);
	CHECK_INT(planes[2].type, WLA_OUTPUT_PLANE_OVERLAY);
	CHECK_INT(planes[3].type, WLA_OUTPUT_PLANE_CURSOR);
	CHECK_INT(planes[3].max_width, 64);
	for (size_t i = 0; i < n; i++) {
		CHECK(planes[i].id != 0);
		CHECK(i == 0 || planes[i].zpos > planes[i - 1].zpos);
		CHECK(wlr_drm_format_set_get(planes[i].formats, DRM_FORMAT_ARGB8888) != NULL);
	}
	CHECK_INT(planes[1].min_scale, 0x2000);
	CHECK_INT(planes[1].max_scale, 0x40000);
	CHECK(wlr_drm_format_set_get(planes[1].formats, DRM_FORMAT_NV12) == NULL);
	/* A short list is filled as far as it goes. */
	CHECK_INT(wla_output_get_planes(f.output, planes, 1), 4);
	finish();
}

/* The overlay is in the committed state: the capture shows it over the
 * primary, the buffer is locked while it is on screen and let go when the
 * state that took it off latched. */
static void an_overlay_offer_latches_with_the_frame_and_is_released_after(void)
{
	CHECK(setup(2));
	bool gone;
	struct test_buffer *ov = test_buffer_create(32, 16, DRM_FORMAT_XRGB8888, 0xffff0000,
		&gone);
	size_t base = locks();
	struct wla_overlay o = overlay(ov, 10, 20);
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), 0);
	CHECK(frame());
	CHECK(capture());
	CHECK_INT(status_of(0), WLA_OVERLAY_OK);
	CHECK(f.cap.image != NULL);
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 10, 20), 0xffff0000);
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 41, 35), 0xffff0000);
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 42, 20), 0xff000041);
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 9, 20), 0xff000041);
	}
	CHECK_INT(locks(), base + 1);
	/* The client lets go; the plane still shows it. */
	wlr_buffer_drop(&ov->base);
	CHECK(!gone);
	/* A frame that keeps the overlay (no new offer) keeps it locked. */
	CHECK(frame());
	CHECK(!gone);
	CHECK(capture());
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 10, 20), 0xffff0000);
	}
	/* Taken off: released once that state latched. */
	CHECK_INT(wla_output_set_overlays(f.output, NULL, 0), 0);
	CHECK(commit_primary());
	CHECK(!gone);
	CHECK(wait_presented(f.presented + 1));
	CHECK(gone);
	CHECK_INT(locks(), base);
	finish();
}

/* Reference composition: the primary colour, then each overlay's colour
 * (ARGB8888, premultiplied as pixman wants) scaled into its dst with
 * nearest sampling, as a compositor drawing the same scene would. */
static void reference(pixman_image_t *dst, uint32_t primary, const struct wla_overlay *ovs,
	const uint32_t *colors, size_t n)
{
	pixman_color_t c = { (uint16_t)(((primary >> 16) & 0xff) * 257),
		(uint16_t)(((primary >> 8) & 0xff) * 257), (uint16_t)((primary & 0xff) * 257), 0xffff };
	pixman_image_t *fill = pixman_image_create_solid_fill(&c);
	pixman_image_composite32(PIXMAN_OP_SRC, fill, NULL, dst, 0, 0, 0, 0, 0, 0, W, H);
	pixman_image_unref(fill);
	for (size_t i = 0; i < n; i++) {
		uint32_t a = colors[i] >> 24;
		pixman_color_t oc = {
			(uint16_t)(((colors[i] >> 16) & 0xff) * a * 257 / 255),
			(uint16_t)(((colors[i] >> 8) & 0xff) * a * 257 / 255),
			(uint16_t)((colors[i] & 0xff) * a * 257 / 255),
			(uint16_t)(a * 257),
		};
		pixman_image_t *src = pixman_image_create_solid_fill(&oc);
		pixman_image_composite32(PIXMAN_OP_OVER, src, NULL, dst, 0, 0, 0, 0,
			ovs[i].dst_x, ovs[i].dst_y, (int)ovs[i].dst_w, (int)ovs[i].dst_h);
		pixman_image_unref(src);
	}
}

/* Two overlays, one scaled 2x and translucent, one cropped and half off the
 * screen: the capture equals what compositing the scene gives, within 1 per
 * channel. */
static void the_capture_equals_the_composited_scene(void)
{
	CHECK(setup(2));
	bool g1, g2;
	/* Premultiplied ARGB: 50% green. */
	struct test_buffer *a = test_buffer_create(20, 10, DRM_FORMAT_ARGB8888, 0x80008000, &g1);
	struct test_buffer *b = test_buffer_create(40, 40, DRM_FORMAT_XRGB8888, 0xff0000ff, &g2);
	struct wla_overlay ovs[2] = {
		{ .buffer = &a->base, .dst_x = 30, .dst_y = 30, .dst_w = 40, .dst_h = 20, .z = 1 },
		{ .buffer = &b->base, .dst_x = 100, .dst_y = -10, .dst_w = 30, .dst_h = 30,
			.src_x = 5 << 16, .src_y = 5 << 16, .src_w = 30 << 16, .src_h = 30 << 16,
			.z = 0 },
	};
	CHECK_INT(wla_output_set_overlays(f.output, ovs, 2), 0);
	CHECK(frame());
	CHECK(capture());
	pixman_image_t *ref = pixman_image_create_bits(PIXMAN_x8r8g8b8, W, H, NULL, 0);
	/* Bottom to top: b (z 0) then a (z 1); a's colour straight alpha. */
	struct wla_overlay order[2] = { ovs[1], ovs[0] };
	uint32_t colors[2] = { 0xff0000ff, 0x8000ff00 };
	reference(ref, 0xff000041, order, colors, 2);
	int worst = 0;
	uint32_t *rp = pixman_image_get_data(ref);
	for (uint32_t y = 0; f.cap.image && y < H; y++) {
		for (uint32_t x = 0; x < W; x++) {
			uint32_t got = wla_image_pixel(f.cap.image, x, y);
			uint32_t want = rp[y * W + x];
			for (int s = 0; s < 24; s += 8) {
				int d = abs((int)((got >> s) & 0xff) - (int)((want >> s) & 0xff));
				worst = d > worst ? d : worst;
			}
		}
	}
	CHECK(f.cap.image != NULL);
	CHECK(worst <= 1);
	if (worst > 1) {
		fprintf(stderr, "  worst channel difference %d\n", worst);
	}
	pixman_image_unref(ref);
	CHECK_INT(wla_output_set_overlays(f.output, NULL, 0), 0);
	CHECK(frame());
	CHECK(frame());
	wlr_buffer_drop(&a->base);
	wlr_buffer_drop(&b->base);
	CHECK(g1 && g2);
	finish();
}

/* Each bad offer: refused with the reason, the error names the plane, the
 * frame is not shown, nothing stays locked. */
static void bad_offers_are_refused_with_their_reason(void)
{
	CHECK(setup(2));
	size_t base = locks();
	int presented = f.presented;
	bool gone[4];
	struct test_buffer *nv12 = test_buffer_create(16, 16, DRM_FORMAT_NV12, 0, &gone[0]);
	struct test_buffer *ok = test_buffer_create(16, 16, DRM_FORMAT_XRGB8888, 0xff00ff00,
		&gone[1]);

	struct wla_overlay o = overlay(nv12, 0, 0);
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), 0);
	CHECK(!wlr_output_test(f.output));
	CHECK_INT(status_of(0), WLA_OVERLAY_FORMAT);
	harness_log_clear();
	CHECK(!commit_primary());
	CHECK_INT(status_of(0), WLA_OVERLAY_FORMAT);
	CHECK_LOGGED("plane overlay", "NV12", "is not supported");

	o = overlay(ok, 0, 0);
	o.src_x = 10 << 16;
	o.src_w = 10 << 16; /* 10 + 10 > 16 */
	o.src_h = 16 << 16;
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), 0);
	harness_log_clear();
	CHECK(!commit_primary());
	CHECK_INT(status_of(0), WLA_OVERLAY_CROP);
	CHECK_LOGGED("plane overlay", "is outside the fb 16x16");

	o = overlay(ok, 0, 0);
	o.dst_w = o.dst_h = 16 * 9; /* 9x magnification, the VDC's limit is 8x */
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), 0);
	harness_log_clear();
	CHECK(!commit_primary());
	CHECK_INT(status_of(0), WLA_OVERLAY_SCALING);
	CHECK_LOGGED("plane overlay", "scale", "outside");

	o = overlay(ok, 40000, 0);
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), 0);
	harness_log_clear();
	CHECK(!commit_primary());
	CHECK_INT(status_of(0), WLA_OVERLAY_POSITION);
	CHECK_LOGGED("plane overlay", "outside the coordinate range");

	/* More overlays than planes: refused at once, the old offer stands. */
	struct wla_overlay three[3] = { overlay(ok, 0, 0), overlay(ok, 20, 0), overlay(ok, 40, 0) };
	harness_log_clear();
	CHECK_INT(wla_output_set_overlays(f.output, three, 3), -EINVAL);
	CHECK_LOGGED("3 overlays offered, the output has 2 overlay planes");
	CHECK_INT(status_of(2), WLA_OVERLAY_NO_PLANE);

	/* A plane named twice, or a z order the planes cannot keep. */
	struct wla_overlay two[2] = { overlay(ok, 0, 0), overlay(ok, 20, 0) };
	two[0].plane = two[1].plane = overlay_id(0);
	CHECK_INT(wla_output_set_overlays(f.output, two, 2), 0);
	CHECK(!commit_primary());
	CHECK_INT(status_of(1), WLA_OVERLAY_NO_PLANE);
	two[0].plane = overlay_id(1);
	two[1].plane = overlay_id(0);
	two[0].z = 0;
	two[1].z = 1; /* on top, but on the lower plane */
	CHECK_INT(wla_output_set_overlays(f.output, two, 2), 0);
	CHECK(!commit_primary());
	CHECK_INT(status_of(1), WLA_OVERLAY_NO_PLANE);
	/* The primary plane is not an overlay plane. */
	struct wla_output_plane planes[8];
	wla_output_get_planes(f.output, planes, 8);
	o = overlay(ok, 0, 0);
	o.plane = planes[0].id;
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), 0);
	CHECK(!wlr_output_test(f.output));
	CHECK_INT(status_of(0), WLA_OVERLAY_NO_PLANE);

	/* No buffer. */
	o = overlay(ok, 0, 0);
	o.buffer = NULL;
	harness_log_clear();
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), -EINVAL);
	CHECK_LOGGED("overlay 0: no buffer");

	/* The buffer destroyed between the offer and the commit. */
	struct test_buffer *doomed = test_buffer_create(16, 16, DRM_FORMAT_XRGB8888, 0, &gone[2]);
	o = overlay(doomed, 0, 0);
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), 0);
	wlr_buffer_drop(&doomed->base);
	CHECK(gone[2]);
	/* A compositor's probe of it says so at debug level only, the commit
	 * as an error. */
	harness_log_clear();
	wlr_output_attach_buffer(f.output, &f.primary[f.next_primary % 3]->base);
	CHECK(!wlr_output_test(f.output));
	CHECK_INT(harness_log_n, 0);
	wlr_output_rollback(f.output);
	harness_log_clear();
	CHECK(!commit_primary());
	CHECK_INT(status_of(0), WLA_OVERLAY_BUFFER);
	CHECK_LOGGED("overlay 0: its buffer was destroyed");

	/* A good offer after all that works. */
	o = overlay(ok, 0, 0);
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), 0);
	CHECK(frame());
	CHECK_INT(status_of(0), WLA_OVERLAY_OK);
	CHECK_INT(f.presented, presented + 1);
	CHECK_INT(wla_output_set_overlays(f.output, NULL, 0), 0);
	CHECK(frame());
	CHECK(frame());
	CHECK_INT(locks(), base);
	wlr_buffer_drop(&nv12->base);
	wlr_buffer_drop(&ok->base);
	CHECK(gone[0] && gone[1]);
	finish();
}

/* An offer on a disabled output is refused; disabling drops the overlays
 * and releases their buffers; after re-enabling none is shown. */
static void a_disabled_output_takes_no_offer_and_drops_its_overlays(void)
{
	CHECK(setup(2));
	size_t base = locks();
	bool gone;
	struct test_buffer *ov = test_buffer_create(16, 16, DRM_FORMAT_XRGB8888, 0xffffffff,
		&gone);
	struct wla_overlay o = overlay(ov, 0, 0);
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), 0);
	CHECK(frame());
	CHECK_INT(locks(), base + 1);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK_INT(locks(), 0);
	harness_log_clear();
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), -ENODEV);
	CHECK_INT(status_of(0), WLA_OVERLAY_OUTPUT_OFF);
	CHECK_LOGGED("1 overlays offered while the output is disabled");
	wlr_buffer_drop(&ov->base);
	CHECK(gone);
	wlr_output_enable(f.output, true);
	CHECK(frame());
	CHECK(capture());
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 0, 0), wla_image_pixel(f.cap.image, 60, 60));
	}
	CHECK_INT(locks(), base);
	finish();
}

/* An offer travels with a commit that has no buffer too. */
static void an_offer_goes_with_a_commit_without_a_buffer(void)
{
	CHECK(setup(2));
	bool gone;
	struct test_buffer *ov = test_buffer_create(16, 16, DRM_FORMAT_XRGB8888, 0xff00ff00,
		&gone);
	struct wla_overlay o = overlay(ov, 50, 50);
	CHECK_INT(wla_output_set_overlays(f.output, &o, 1), 0);
	CHECK(wlr_output_commit(f.output));
	CHECK_INT(status_of(0), WLA_OVERLAY_OK);
	CHECK(frame());
	CHECK(capture());
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 50, 50), 0xff00ff00);
	}
	CHECK_INT(wla_output_set_overlays(f.output, NULL, 0), 0);
	CHECK(wlr_output_commit(f.output));
	CHECK(frame());
	wlr_buffer_drop(&ov->base);
	CHECK(gone);
	finish();
}

static struct wla_layer layer_of(struct test_buffer *b, int32_t x, int32_t y, uint32_t w,
	uint32_t h)
{
	return (struct wla_layer){
		.buffer = b ? &b->base : NULL,
		.dst_x = x, .dst_y = y, .dst_w = w, .dst_h = h,
		.opaque = true,
	};
}

/* The helper puts windows on planes, keeps order, and composites what a
 * composited layer above covers. */
static void the_helper_places_layers_and_keeps_their_order(void)
{
	CHECK(setup(2));
	bool gone[3];
	struct test_buffer *b[3];
	for (int i = 0; i < 3; i++) {
		b[i] = test_buffer_create(20, 20, DRM_FORMAT_XRGB8888, 0xff101010u * (uint32_t)(i + 1),
			&gone[i]);
	}
	struct wla_assign_stats st;
	/* A background (composited only) and one window. */
	struct wla_layer l[4] = {
		layer_of(NULL, 0, 0, W, H),
		layer_of(b[0], 10, 10, 20, 20),
	};
	CHECK_INT(wla_output_assign_layers(f.output, l, 2, &st), 1);
	CHECK(!l[0].on_plane);
	CHECK(l[1].on_plane && !l[1].primary);
	CHECK_INT(l[1].plane, overlay_id(1)); /* the top plane: room below */
	CHECK_INT(st.checks, 1);
	CHECK(frame());
	CHECK_INT(status_of(0), WLA_OVERLAY_OK);

	/* Three windows, two planes: the top two go on planes, in order. */
	l[1] = layer_of(b[0], 10, 10, 20, 20);
	l[2] = layer_of(b[1], 40, 10, 20, 20);
	l[3] = layer_of(b[2], 70, 10, 20, 20);
	CHECK_INT(wla_output_assign_layers(f.output, l, 4, &st), 2);
	CHECK(!l[1].on_plane);
	CHECK_INT(l[1].status, WLA_OVERLAY_COMPOSITED);
	CHECK(l[2].on_plane && l[3].on_plane);
	CHECK_INT(l[2].plane, overlay_id(0));
	CHECK_INT(l[3].plane, overlay_id(1));
	CHECK(frame());

	/* A composited window above overlapping one below: that one is
	 * composited too (occluded), and the top one is on a plane. */
	struct test_buffer *nv12 = test_buffer_create(20, 20, DRM_FORMAT_NV12, 0, NULL);
	l[1] = layer_of(b[0], 10, 10, 20, 20);
	l[2] = layer_of(nv12, 20, 20, 20, 20); /* overlaps l[1]; no plane takes NV12 */
	l[3] = layer_of(b[2], 70, 10, 20, 20);
	CHECK_INT(wla_output_assign_layers(f.output, l, 4, &st), 1);
	CHECK_INT(l[2].status, WLA_OVERLAY_FORMAT);
	CHECK_INT(l[1].status, WLA_OVERLAY_OCCLUDED);
	CHECK(l[3].on_plane);
	CHECK(frame());

	/* Nothing to place: every overlay off at the next commit. */
	CHECK_INT(wla_output_assign_layers(f.output, l, 1, &st), 0);
	CHECK(frame());
	CHECK(frame());
	wlr_buffer_drop(&nv12->base);
	for (int i = 0; i < 3; i++) {
		wlr_buffer_drop(&b[i]->base);
		CHECK(gone[i]);
	}
	finish();
}

/* A fullscreen opaque layer is the primary plane's buffer; with a window on
 * an overlay above it too. */
static void a_fullscreen_layer_goes_on_the_primary_plane(void)
{
	CHECK(setup(2));
	bool gone[2];
	struct test_buffer *full = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xff00ffff,
		&gone[0]);
	struct test_buffer *win = test_buffer_create(20, 20, DRM_FORMAT_XRGB8888, 0xffff00ff,
		&gone[1]);
	struct wla_layer l[2] = { layer_of(full, 0, 0, W, H), layer_of(win, 5, 5, 20, 20) };
	struct wla_assign_stats st;
	CHECK_INT(wla_output_assign_layers(f.output, l, 2, &st), 2);
	CHECK(l[0].on_plane && l[0].primary);
	CHECK(l[1].on_plane && !l[1].primary);
	wlr_output_attach_buffer(f.output, &full->base);
	int want = f.presented + 1;
	CHECK(wlr_output_commit(f.output));
	CHECK(wait_presented(want));
	CHECK(capture());
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 0, 0), 0xff00ffff);
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 5, 5), 0xffff00ff);
	}
	/* Not opaque, or scaled: not the primary (an overlay still may take
	 * it, over what the compositor renders below). */
	l[0].opaque = false;
	wla_output_assign_layers(f.output, l, 2, &st);
	CHECK(!l[0].primary);
	l[0].opaque = true;
	l[0].dst_w = W / 2;
	CHECK_INT(wla_output_assign_layers(f.output, l, 2, &st), 2);
	CHECK(!l[0].primary); /* half the screen: an overlay */
	CHECK(frame());
	CHECK_INT(wla_output_set_overlays(f.output, NULL, 0), 0);
	CHECK(frame());
	CHECK(frame());
	wlr_buffer_drop(&full->base);
	wlr_buffer_drop(&win->base);
	CHECK(gone[0] && gone[1]);
	finish();
}

/* Frame after frame: new buffers of the same kind keep the placement
 * without a check; a move with the same overlaps costs one. */
static void a_steady_scene_reuses_the_last_placement(void)
{
	CHECK(setup(2));
	struct test_buffer *b[4];
	bool gone[4];
	for (int i = 0; i < 4; i++) {
		b[i] = test_buffer_create(20, 20, DRM_FORMAT_XRGB8888, 0xff202020, &gone[i]);
	}
	struct wla_assign_stats st;
	struct wla_layer l[2] = { layer_of(NULL, 0, 0, W, H), layer_of(b[0], 10, 10, 20, 20) };
	CHECK_INT(wla_output_assign_layers(f.output, l, 2, &st), 1);
	CHECK(!st.reused);
	CHECK(frame());
	for (int i = 1; i < 4; i++) {
		l[1].buffer = &b[i]->base;
		CHECK_INT(wla_output_assign_layers(f.output, l, 2, &st), 1);
		CHECK(st.reused);
		CHECK_INT(st.checks, 0);
		CHECK(frame());
	}
	l[1].dst_x = 30;
	CHECK_INT(wla_output_assign_layers(f.output, l, 2, &st), 1);
	CHECK(st.reused);
	CHECK_INT(st.checks, 1);
	CHECK(frame());
	CHECK_INT(wla_output_set_overlays(f.output, NULL, 0), 0);
	CHECK(frame());
	CHECK(frame());
	for (int i = 0; i < 4; i++) {
		wlr_buffer_drop(&b[i]->base);
		CHECK(gone[i]);
	}
	finish();
}

/* A limit only the driver knows (a plane that refuses): the search learns
 * the pair, tries the other plane, and remembers the refusal next frame. */
static void a_refused_pair_is_learnt_and_remembered(void)
{
	CHECK(setup(2));
	bool gone;
	struct test_buffer *b = test_buffer_create(20, 20, DRM_FORMAT_XRGB8888, 0xff303030, &gone);
	struct wla_output_plane planes[8];
	wla_output_get_planes(f.output, planes, 8);
	/* The top overlay refuses everything. */
	vdc()->refuse_planes = 1u << (planes[2].id - 1);
	struct wla_assign_stats st;
	struct wla_layer l[2] = { layer_of(NULL, 0, 0, W, H), layer_of(b, 10, 10, 20, 20) };
	CHECK_INT(wla_output_assign_layers(f.output, l, 2, &st), 1);
	CHECK_INT(l[1].plane, planes[1].id);
	CHECK_INT(st.checks, 2);
	/* Moved so that the last placement is not simply kept: the refusal is
	 * known from the cache, one check for the rest. */
	l[1].dst_x = 11;
	l[1].dst_w = 19;
	CHECK_INT(wla_output_assign_layers(f.output, l, 2, &st), 1);
	l[1].dst_x = 10;
	l[1].dst_w = 20;
	CHECK_INT(wla_output_assign_layers(f.output, l, 2, &st), 1);
	CHECK(st.cache_hits >= 1);
	CHECK_INT(st.checks, 1);
	/* Both refuse: composited, within the budget. */
	vdc()->refuse_planes |= 1u << (planes[1].id - 1);
	l[1].dst_x = 12;
	CHECK_INT(wla_output_assign_layers(f.output, l, 2, &st), 0);
	CHECK(!l[1].on_plane);
	CHECK(st.checks <= 16);
	vdc()->refuse_planes = 0;
	CHECK(frame());
	wlr_buffer_drop(&b->base);
	CHECK(frame());
	CHECK(gone);
	finish();
}

/* Many layers and refusals: bounded work, a valid result. */
static void many_layers_cost_a_bounded_search(void)
{
	CHECK(setup(8));
	enum { N = 40 };
	struct test_buffer *b[N];
	struct wla_layer l[N];
	for (int i = 0; i < N; i++) {
		b[i] = test_buffer_create(8, 8, DRM_FORMAT_XRGB8888, 0xff000000u + (uint32_t)i, NULL);
		l[i] = layer_of(b[i], (i * 7) % (W - 8), (i * 5) % (H - 8), 8, 8);
	}
	struct wla_output_plane planes[16];
	size_t n = wla_output_get_planes(f.output, planes, 16);
	CHECK_INT(n, 10);
	vdc()->refuse_planes = (1u << (planes[3].id - 1)) | (1u << (planes[6].id - 1));
	struct wla_assign_stats st;
	int placed = wla_output_assign_layers(f.output, l, N, &st);
	CHECK(placed >= 1 && placed <= 6);
	CHECK(st.checks <= 16);
	vdc()->refuse_planes = 0;
	CHECK(frame());
	CHECK_INT(wla_output_set_overlays(f.output, NULL, 0), 0);
	CHECK(frame());
	CHECK(frame());
	for (int i = 0; i < N; i++) {
		wlr_buffer_drop(&b[i]->base);
	}
	finish();
}

/* A small deterministic generator (xorshift). */
static uint32_t rnd(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return (uint32_t)(*state >> 11);
}

/* Random scenes, frame after frame: layers of random sizes, positions
 * (partly or wholly off the output too), crops, scales, formats and
 * opacity, sometimes refused by the driver. Whatever the helper offers, the
 * commit takes (its checks are the commit's); what it places is shown; no
 * buffer stays locked once the planes are off. */
static void random_scenes_always_commit_what_the_helper_offers(void)
{
	CHECK(setup(3));
	enum { BUFS = 12, FRAMES = 200 };
	static const uint32_t formats[] = { DRM_FORMAT_XRGB8888, DRM_FORMAT_ARGB8888,
		DRM_FORMAT_NV12, DRM_FORMAT_ABGR8888 };
	struct test_buffer *b[BUFS];
	bool gone[BUFS];
	uint64_t state = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < BUFS; i++) {
		int w = 1 + (int)(rnd(&state) % 200), h = 1 + (int)(rnd(&state) % 150);
		b[i] = test_buffer_create(w, h, formats[rnd(&state) % 4], 0xff000000u | rnd(&state),
			&gone[i]);
	}
	struct wla_output_plane planes[8];
	wla_output_get_planes(f.output, planes, 8);
	size_t base = locks();
	int placed_total = 0, refused = 0;
	for (int frame_no = 0; frame_no < FRAMES; frame_no++) {
		struct wla_layer l[8];
		size_t n = 1 + rnd(&state) % 7;
		l[0] = layer_of(NULL, 0, 0, W, H);
		for (size_t i = 1; i < n; i++) {
			struct test_buffer *tb = b[rnd(&state) % BUFS];
			uint32_t bw = (uint32_t)tb->base.width, bh = (uint32_t)tb->base.height;
			l[i] = layer_of(tb, (int32_t)(rnd(&state) % (W + 80)) - 40,
				(int32_t)(rnd(&state) % (H + 80)) - 40, 1 + rnd(&state) % 300,
				1 + rnd(&state) % 200);
			l[i].opaque = rnd(&state) % 2;
			if (rnd(&state) % 3 == 0) {
				uint32_t cw = 1 + rnd(&state) % bw, ch = 1 + rnd(&state) % bh;
				l[i].src_x = (rnd(&state) % (bw - cw + 1)) << 16;
				l[i].src_y = (rnd(&state) % (bh - ch + 1)) << 16;
				l[i].src_w = cw << 16;
				l[i].src_h = ch << 16;
			}
		}
		vdc()->refuse_planes = rnd(&state) % 4 == 0 ?
			1u << (planes[1 + rnd(&state) % 3].id - 1) : 0;
		struct wla_assign_stats st;
		int placed = wla_output_assign_layers(f.output, l, n, &st);
		CHECK(placed >= 0 && placed <= 4);
		CHECK(st.checks <= 16);
		for (size_t i = 0; i < n; i++) {
			CHECK(l[i].on_plane == (l[i].status == WLA_OVERLAY_OK));
			/* Nothing composited above a layer on a plane covers it
			 * (on the output), and planes keep the layers' order. */
			for (size_t j = i + 1; l[i].on_plane && j < n; j++) {
				int64_t x0 = l[i].dst_x > l[j].dst_x ? l[i].dst_x : l[j].dst_x;
				int64_t y0 = l[i].dst_y > l[j].dst_y ? l[i].dst_y : l[j].dst_y;
				int64_t x1 = (int64_t)l[i].dst_x + l[i].dst_w;
				int64_t y1 = (int64_t)l[i].dst_y + l[i].dst_h;
				x1 = x1 < (int64_t)l[j].dst_x + l[j].dst_w ? x1 :
					(int64_t)l[j].dst_x + l[j].dst_w;
				y1 = y1 < (int64_t)l[j].dst_y + l[j].dst_h ? y1 :
					(int64_t)l[j].dst_y + l[j].dst_h;
				x0 = x0 > 0 ? x0 : 0;
				y0 = y0 > 0 ? y0 : 0;
				x1 = x1 < W ? x1 : W;
				y1 = y1 < H ? y1 : H;
				bool overlap = x1 > x0 && y1 > y0;
				CHECK(!overlap || l[j].on_plane);
				if (l[j].on_plane && !l[j].primary && !l[i].primary) {
					CHECK(l[j].plane > l[i].plane);
				}
			}
		}
		placed_total += placed > 0 ? placed : 0;
		/* The primary layer would be committed as the buffer; here the
		 * compositor's own render stands for it. */
		bool ok = wait_frame_event() && commit_primary();
		CHECK(ok);
		if (!ok) {
			refused++;
			fprintf(stderr, "  frame %d: a commit of the helper's offer was refused\n",
				frame_no);
			break;
		}
	}
	vdc()->refuse_planes = 0;
	CHECK(placed_total > FRAMES / 2);
	CHECK_INT(refused, 0);
	CHECK_INT(wla_output_set_overlays(f.output, NULL, 0), 0);
	CHECK(frame());
	CHECK(frame());
	CHECK_INT(locks(), base);
	for (int i = 0; i < BUFS; i++) {
		wlr_buffer_drop(&b[i]->base);
		CHECK(gone[i]);
	}
	finish();
}

/* A refused offer leaves the one before it pending (documented); its next
 * commit must not trust the refused offer's size (a heap overflow once). */
static void a_refused_offer_leaves_the_previous_one_intact(void)
{
	CHECK(setup(2));
	bool gone[2];
	struct test_buffer *a = test_buffer_create(16, 16, DRM_FORMAT_XRGB8888, 0xff00ff00, &gone[0]);
	struct test_buffer *b = test_buffer_create(16, 16, DRM_FORMAT_XRGB8888, 0xff0000ff, &gone[1]);
	struct wla_overlay one = overlay(a, 0, 0);
	struct wla_overlay two[2] = { overlay(a, 0, 0), overlay(b, 40, 0) };
	CHECK_INT(wla_output_set_overlays(f.output, &one, 1), 0);
	two[1].buffer = NULL;
	CHECK_INT(wla_output_set_overlays(f.output, two, 2), -EINVAL);
	CHECK(frame());
	CHECK_INT(wla_output_overlay_status(f.output, NULL, 0), 1);
	CHECK_INT(status_of(0), WLA_OVERLAY_OK);
	CHECK(capture());
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 0, 0), 0xff00ff00);
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 40, 0), 0xff000041);
	}
	CHECK_INT(wla_output_set_overlays(f.output, NULL, 0), 0);
	CHECK(frame());
	CHECK(frame());
	wlr_buffer_drop(&a->base);
	wlr_buffer_drop(&b->base);
	CHECK(gone[0] && gone[1]);
	finish();
}

/* One buffer on two planes at once: the capture reads it twice (wlroots
 * allows one CPU access at a time: it once aborted). */
static void one_buffer_on_two_planes_is_captured(void)
{
	CHECK(setup(2));
	bool gone;
	struct test_buffer *a = test_buffer_create(16, 16, DRM_FORMAT_XRGB8888, 0xffff8000, &gone);
	struct wla_overlay two[2] = { overlay(a, 0, 0), overlay(a, 50, 30) };
	two[1].z = 1;
	CHECK_INT(wla_output_set_overlays(f.output, two, 2), 0);
	CHECK(frame());
	CHECK(capture());
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 5, 5), 0xffff8000);
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 55, 35), 0xffff8000);
	}
	CHECK_INT(wla_output_set_overlays(f.output, NULL, 0), 0);
	CHECK(frame());
	CHECK(frame());
	wlr_buffer_drop(&a->base);
	CHECK(gone);
	finish();
}

int main(void)
{
	harness_init();
	RUN_TEST(the_output_lists_its_planes_bottom_to_top);
	RUN_TEST(an_overlay_offer_latches_with_the_frame_and_is_released_after);
	RUN_TEST(the_capture_equals_the_composited_scene);
	RUN_TEST(bad_offers_are_refused_with_their_reason);
	RUN_TEST(a_disabled_output_takes_no_offer_and_drops_its_overlays);
	RUN_TEST(an_offer_goes_with_a_commit_without_a_buffer);
	RUN_TEST(the_helper_places_layers_and_keeps_their_order);
	RUN_TEST(a_fullscreen_layer_goes_on_the_primary_plane);
	RUN_TEST(a_steady_scene_reuses_the_last_placement);
	RUN_TEST(a_refused_pair_is_learnt_and_remembered);
	RUN_TEST(many_layers_cost_a_bounded_search);
	RUN_TEST(random_scenes_always_commit_what_the_helper_offers);
	RUN_TEST(a_refused_offer_leaves_the_previous_one_intact);
	RUN_TEST(one_buffer_on_two_planes_is_captured);
	HARNESS_EXIT();
}
