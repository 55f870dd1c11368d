/*
 * The same atomic states composed by the VDC and by the kernel (vkms,
 * read back through its writeback connector with wla's capture): equal
 * pixels within 1 per channel, for cursor alpha, cropping, z-order and
 * clipping at the edges. Scaling is checked to be refused with ERANGE by
 * vkms in Linux 6.1 (it does not scale), and composed by the VDC.
 *
 * Run in the real-kernel tier; without a DRM card it exits 77.
 */
#include <drm_fourcc.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/kms.h"
#include "backend/vdc.h"
#include "harness.h"
#include "kms-helpers.h"
#include "lib/capture.h"
#include "lib/dri-card.h"
#include "util.h"
#include "wlatomic/capture.h"
#include "wlatomic/config.h"

/* A plane of a case: which plane (by role), its fb and geometry. */
enum role { PRIMARY, OVERLAY0, OVERLAY1, CURSOR };

struct layer {
	enum role role;
	uint32_t fb_w, fb_h, format;
	uint32_t (*paint)(uint32_t x, uint32_t y);
	uint32_t src_x, src_y, src_w, src_h; /* whole pixels */
	int32_t x, y;
	uint32_t w, h;
};

static uint32_t paint_bg(uint32_t x, uint32_t y)
{
	return 0xff000000u | ((x & 0xff) << 16) | ((y & 0xff) << 8) | 0x40;
}

/* A cursor: a disc of half-transparent premultiplied red, opaque border. */
static uint32_t paint_cursor(uint32_t x, uint32_t y)
{
	int dx = (int)x - 32, dy = (int)y - 32;
	int d2 = dx * dx + dy * dy;
	if (d2 > 30 * 30) {
		return 0x00000000u;
	}
	if (d2 > 26 * 26) {
		return 0xffffffffu;
	}
	return 0x80800000u | ((x * 2) & 0x7f); /* premultiplied: channels <= alpha */
}

static uint32_t paint_checker(uint32_t x, uint32_t y)
{
	return ((x / 16 + y / 16) & 1) ? 0xff20c020u : 0xffc02020u;
}

static uint32_t paint_bars(uint32_t x, uint32_t y)
{
	return 0xff000000u | ((x * 3) & 0xff) << 8 | ((y * 5) & 0xff);
}

static uint32_t paint_translucent(uint32_t x, uint32_t y)
{
	return 0x80004080u;
}

struct fixture {
	/* KMS side */
	struct wla_kms *kms;
	struct wla_crtc *kcrtc;
	struct wla_connector *kconn;
	struct wla_plane *kplanes[4];
	/* VDC side */
	struct wla_vdc *vdc;
	uint64_t vdc_now;
	struct wla_vdc_output *out;
	struct wla_mode mode;
	struct dumb_fb *fbs[2][4];
};

static uint64_t vdc_clock(void *data)
{
	return ((struct fixture *)data)->vdc_now;
}

static bool fixture_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.driver = WLA_DRIVER_KMS;
	f->kms = kms_open(&cfg);
	if (!f->kms) {
		return false;
	}
	/* The cases start from nothing on (the console's CRTC is kept). */
	CHECK(kms_turn_off_lit(f->kms));
	for (size_t i = 0; i < f->kms->n_connectors && !f->kconn; i++) {
		if (f->kms->connectors[i]->base.status == WLA_CONNECTOR_CONNECTED) {
			f->kconn = &f->kms->connectors[i]->base;
		}
	}
	if (!f->kconn) {
		return false;
	}
	f->kcrtc = &f->kms->crtcs[0].base;
	f->kplanes[PRIMARY] = f->kcrtc->primary;
	f->kplanes[CURSOR] = f->kcrtc->cursor;
	size_t o = OVERLAY0;
	for (size_t i = 0; i < f->kms->n_planes && o <= OVERLAY1; i++) {
		struct wla_plane *p = &f->kms->planes[i].base;
		if (p->type == WLA_PLANE_OVERLAY && (p->possible_crtcs & 1u)) {
			f->kplanes[o++] = p;
		}
	}
	f->mode = f->kconn->modes[0];
	/* The VDC: one output of the card's preferred size, two overlays. */
	cfg.driver = WLA_DRIVER_VDC;
	cfg.overlay_planes = 2;
	cfg.cursor_size = f->kms->cursor_width;
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ f->mode.width, f->mode.height,
		60000 };
	cfg.outputs[0].n_modes = 1;
	f->vdc_now = 1000000000u;
	f->vdc = wla_vdc_create(NULL, &cfg, vdc_clock, f);
	f->out = f->vdc ? f->vdc->outputs[0] : NULL;
	return f->kplanes[OVERLAY1] && f->out;
}

static void fixture_finish(struct fixture *f)
{
	wla_vdc_destroy(f->vdc);
	kms_close(f->kms);
	for (int d = 0; d < 2; d++) {
		for (int i = 0; i < 4; i++) {
			if (f->fbs[d][i]) {
				wla_fb_put(&f->fbs[d][i]->base);
			}
		}
	}
}

/* fixture_init, a failure of the test if it fails (then nothing is left). */
static bool fixture_start(struct fixture *f)
{
	if (fixture_init(f)) {
		return true;
	}
	CHECK(!"fixture");
	fixture_finish(f);
	return false;
}

static struct wla_plane *vdc_plane(struct fixture *f, enum role role)
{
	switch (role) {
	case PRIMARY:
		return &f->out->primary;
	case OVERLAY0:
		return &f->out->overlays[0];
	case OVERLAY1:
		return &f->out->overlays[1];
	case CURSOR:
		return &f->out->cursor;
	}
	return NULL;
}

/* One state of the layers on dev's crtc (a modeset from off). */
static int commit_layers(struct fixture *f, int side, struct wla_device *dev,
	struct wla_crtc *crtc, struct wla_connector *conn, const struct layer *layers,
	size_t n, bool check_only)
{
	struct wla_atomic_state *state = wla_atomic_state_alloc(dev);
	state->allow_modeset = true;
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	cs->enable = cs->active = true;
	cs->mode = side == 0 ? f->mode : conn->modes[0];
	cs->want_event = true;
	struct wla_connector_state *cos = wla_atomic_get_connector_state(state, conn);
	wla_atomic_set_crtc_for_connector(state, cos, crtc);
	for (size_t i = 0; i < n; i++) {
		const struct layer *l = &layers[i];
		struct wla_plane *plane = side == 0 ? f->kplanes[l->role] : vdc_plane(f, l->role);
		struct dumb_fb *fb = f->fbs[side][l->role];
		struct wla_plane_state *ps = wla_atomic_get_plane_state(state, plane);
		wla_atomic_set_crtc_for_plane(state, ps, crtc);
		wla_atomic_set_fb_for_plane(ps, &fb->base);
		ps->src_x = l->src_x << 16;
		ps->src_y = l->src_y << 16;
		ps->src_w = l->src_w << 16;
		ps->src_h = l->src_h << 16;
		ps->crtc_x = l->x;
		ps->crtc_y = l->y;
		ps->crtc_w = l->w;
		ps->crtc_h = l->h;
	}
	int ret = check_only ? wla_atomic_check(state) : wla_atomic_commit(state);
	if (check_only || ret < 0) {
		wla_atomic_state_free(state);
	}
	return ret;
}

static struct test_capture cap_result;

static int channel_diff(uint32_t a, uint32_t b)
{
	int worst = 0;
	for (int s = 0; s < 24; s += 8) {
		int d = abs((int)((a >> s) & 0xff) - (int)((b >> s) & 0xff));
		worst = d > worst ? d : worst;
	}
	return worst;
}

/* Compose the layers on both and compare. */
static void compare_case(const char *name, const struct layer *layers, size_t n)
{
	struct fixture f;
	if (!fixture_start(&f)) {
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct layer *l = &layers[i];
		for (int side = 0; side < 2; side++) {
			struct dumb_fb *fb = dumb_create(f.kms->fd, l->fb_w, l->fb_h, l->format, 0);
			for (uint32_t y = 0; y < l->fb_h; y++) {
				for (uint32_t x = 0; x < l->fb_w; x++) {
					fb->map[y * (fb->stride / 4) + x] = l->paint(x, y);
				}
			}
			f.fbs[side][l->role] = fb;
		}
	}
	CHECK_INT(commit_layers(&f, 0, &f.kms->dev, f.kcrtc, f.kconn, layers, n, false), 0);
	CHECK_INT(commit_layers(&f, 1, &f.vdc->dev, &f.out->crtc, &f.out->connector, layers, n,
		false), 0);
	/* The VDC latches at its next vblank; vkms at its own. */
	f.vdc_now += 100000000u;
	wla_vdc_advance(f.vdc, f.vdc_now);
	for (int i = 0; i < 100 && f.kcrtc->queued; i++) {
		wla_kms_dispatch(f.kms, 20);
	}
	struct wla_image *want = wla_vdc_compose(f.out);
	test_capture_reset(&cap_result);
	struct wla_capture *cap = f.kms->dev.capture_funcs->capture(&f.kms->dev, f.kcrtc,
		test_capture_done, &cap_result);
	struct wla_image *captured = NULL;
	CHECK(cap != NULL);
	for (int i = 0; cap && i < 200 && !cap_result.done; i++) {
		wla_kms_dispatch(f.kms, 10);
	}
	captured = cap_result.image;
	CHECK(cap_result.done && captured);
	if (captured && want) {
		CHECK_INT(captured->width, want->width);
		CHECK_INT(captured->height, want->height);
		int worst = 0;
		uint64_t over = 0;
		uint32_t wx = 0, wy = 0;
		for (uint32_t y = 0; y < want->height && y < captured->height; y++) {
			for (uint32_t x = 0; x < want->width && x < captured->width; x++) {
				int d = channel_diff(wla_image_pixel(want, x, y),
					wla_image_pixel(captured, x, y));
				if (d > 1) {
					over++;
				}
				if (d > worst) {
					worst = d;
					wx = x;
					wy = y;
				}
			}
		}
		printf("  %s: %ux%u, worst channel difference %d at %u,%u (vdc 0x%08x, vkms "
			"0x%08x), %" PRIu64 " pixels over 1, capture seq %" PRIu64 "\n", name,
			want->width, want->height, worst, wx, wy, wla_image_pixel(want, wx, wy),
			wla_image_pixel(captured, wx, wy), over, cap_result.seq);
		CHECK(worst <= 1);
		/* The layers above the primary are there at all (a capture of
		 * the primary alone would compare equal to one too). */
		uint64_t covered = 0;
		for (uint32_t y = 0; y < captured->height; y++) {
			for (uint32_t x = 0; x < captured->width; x++) {
				covered += channel_diff(wla_image_pixel(captured, x, y),
					paint_bg(x, y)) > 1;
			}
		}
		printf("  %s: %" PRIu64 " pixels not the background\n", name, covered);
		CHECK(covered > 1000);
		if (getenv("WLA_TEST_OUT")) {
			char path[512];
			snprintf(path, sizeof(path), "%s/%s-vkms.png", getenv("WLA_TEST_OUT"), name);
			wla_image_write_png(captured, path);
			snprintf(path, sizeof(path), "%s/%s-vdc.png", getenv("WLA_TEST_OUT"), name);
			wla_image_write_png(want, path);
		}
	}
	test_capture_reset(&cap_result);
	wla_image_destroy(want);
	fixture_finish(&f);
	CHECK_INT(live_dumbs, 0);
}

#define W 1024
#define H 768
/* Every case's primary plane: the whole screen of paint_bg. */
#define BACKGROUND_LAYER { PRIMARY, W, H, DRM_FORMAT_XRGB8888, paint_bg, 0, 0, W, H, 0, 0, W, H }

/* A case that compares the layers (after the background) composed by
 * vkms and by the VDC under the name name. */
#define COMPARE_TEST(fn, name, ...) \
	static void fn(void) \
	{ \
		const struct layer layers[] = { BACKGROUND_LAYER, __VA_ARGS__ }; \
		compare_case(name, layers, WLA_ARRAY_SIZE(layers)); \
	}

COMPARE_TEST(cursor_alpha, "cursor-alpha",
	{ CURSOR, 64, 64, DRM_FORMAT_ARGB8888, paint_cursor, 0, 0, 64, 64, 200, 150, 64, 64 })

/* 128x96 out of the middle of a 256x256 fb */
COMPARE_TEST(overlay_crop, "overlay-crop",
	{ OVERLAY0, 256, 256, DRM_FORMAT_XRGB8888, paint_bars, 40, 70, 128, 96, 300, 200, 128,
		96 })

COMPARE_TEST(z_order, "z-order",
	{ OVERLAY0, 300, 200, DRM_FORMAT_XRGB8888, paint_checker, 0, 0, 300, 200, 100, 100, 300,
		200 },
	{ OVERLAY1, 300, 200, DRM_FORMAT_ARGB8888, paint_translucent, 0, 0, 300, 200, 250, 180,
		300, 200 },
	{ CURSOR, 64, 64, DRM_FORMAT_ARGB8888, paint_cursor, 0, 0, 64, 64, 370, 250, 64, 64 })

/* An overlay off the right and bottom edges, the cursor off the left and top. */
COMPARE_TEST(edge_clipping, "edge-clipping",
	{ OVERLAY0, 256, 256, DRM_FORMAT_XRGB8888, paint_checker, 0, 0, 256, 256, W - 100, H - 60,
		256, 256 },
	{ CURSOR, 64, 64, DRM_FORMAT_ARGB8888, paint_cursor, 0, 0, 64, 64, -20, -30, 64, 64 })

/* vkms in 6.1 does not scale: TEST_ONLY says so; the VDC scales. */
static void overlay_scaling(void)
{
	struct fixture f;
	if (!fixture_start(&f)) {
		return;
	}
	const struct layer layers[] = {
		BACKGROUND_LAYER,
		{ OVERLAY0, 128, 128, DRM_FORMAT_XRGB8888, paint_checker, 0, 0, 128, 128, 100, 100,
			256, 256 },
	};
	for (size_t i = 0; i < 2; i++) {
		for (int side = 0; side < 2; side++) {
			f.fbs[side][layers[i].role] = dumb_create(f.kms->fd, layers[i].fb_w,
				layers[i].fb_h, layers[i].format, 0xff336699u);
		}
	}
	harness_log_clear();
	CHECK_INT(commit_layers(&f, 0, &f.kms->dev, f.kcrtc, f.kconn, layers, 2, true), -ERANGE);
	CHECK_LOGGED("the kernel refused the state", f.kplanes[OVERLAY0]->name, "errno 34");
	CHECK_INT(commit_layers(&f, 1, &f.vdc->dev, &f.out->crtc, &f.out->connector, layers, 2,
		true), 0);
	CHECK_INT(f.kms->scanout_fbs, 0);
	fixture_finish(&f);
	CHECK_INT(live_dumbs, 0);
}

/* Capture where it cannot be had: the CRTC off. */
static void capture_refused(void)
{
	struct fixture f;
	if (!fixture_start(&f)) {
		return;
	}
	harness_log_clear();
	CHECK(f.kms->dev.capture_funcs->capture(&f.kms->dev, f.kcrtc, test_capture_done,
		&cap_result) == NULL);
	CHECK_LOGGED("capture refused", f.kcrtc->name, "the crtc is off");
	fixture_finish(&f);
}

int main(void)
{
	harness_init();
	if (!test_have_dri_card()) {
		harness_skip("no DRM card (/dev/dri/card*): the kernel tier runs this on vkms");
	}
	RUN_TEST(cursor_alpha);
	RUN_TEST(overlay_crop);
	RUN_TEST(z_order);
	RUN_TEST(edge_clipping);
	RUN_TEST(overlay_scaling);
	RUN_TEST(capture_refused);
	HARNESS_EXIT();
}
