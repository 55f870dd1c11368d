/*
 * The KMS driver against a real kernel: vkms in the real-kernel tier (run
 * by run-guest.sh), or the card WLA_TEST_DRM_DEVICE names. Without a DRM
 * card the test exits 77 (skipped), never 0.
 *
 * Framebuffers are dumb buffers exported as dmabufs, as wlroots' dumb
 * allocator makes them. What the kernel holds after a commit is read back
 * with drmModeGetPlane/GetCrtc, apart from the driver's own books.
 *
 * With --dump, prints what the driver found as JSON (for the comparison
 * with drm_info in test-kms-enum.sh) and exits; with --colour, runs only
 * the gamma and adaptive sync tests (on cards other than vkms); with
 * --orientation N, checks that the connector's panel orientation is N.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <drm_fourcc.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "backend/kms.h"
#include "harness.h"
#include "kms-helpers.h"
#include "wlatomic/capture.h"
#include "wlatomic/config.h"
#include "lib/dri-card.h"
#include "lib/legacy.h"

/* Another monitor on a connector that stayed connected: the kernel's mode
 * list seen through drmModeGetConnector is one mode shorter while
 * swap_monitor is set (the driver's calls bind to this definition; the real
 * one is libdrm's). */
static bool swap_monitor;

drmModeConnectorPtr drmModeGetConnector(int fd, uint32_t connector_id)
{
	static drmModeConnectorPtr (*real)(int, uint32_t);
	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "drmModeGetConnector");
	}
	drmModeConnectorPtr c = real(fd, connector_id);
	if (c && swap_monitor && c->count_modes > 1) {
		c->count_modes--;
	}
	return c;
}

/* Presents seen. */
#define MAX_EVENTS 256
static struct wla_present events[MAX_EVENTS];
static int n_events;

static void on_present(struct wla_crtc *crtc, const struct wla_present *event, void *data)
{
	if (n_events < MAX_EVENTS) {
		events[n_events++] = *event;
	}
}

static struct wla_kms *kms;
static bool colour_only; /* --colour: a card other than vkms, with a console */
static struct wla_kms_connector *conn;
static struct wla_crtc *crtc;

/* The kernel's value of an object's property (-1 if it has none). */
static int64_t object_prop(uint32_t id, uint32_t type, const char *name)
{
	int64_t value = -1;
	drmModeObjectProperties *props = drmModeObjectGetProperties(kms->fd, id, type);
	for (uint32_t i = 0; props && i < props->count_props; i++) {
		drmModePropertyRes *p = drmModeGetProperty(kms->fd, props->props[i]);
		if (p && strcmp(p->name, name) == 0) {
			value = (int64_t)props->prop_values[i];
		}
		drmModeFreeProperty(p);
	}
	drmModeFreeObjectProperties(props);
	return value;
}

/* The event loop the next open_kms puts the driver on (NULL: none). */
static struct wl_event_loop *test_loop;

static struct wla_kms *open_kms(void)
{
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.driver = WLA_DRIVER_KMS;
	const char *dev = getenv("WLA_TEST_DRM_DEVICE");
	if (dev) {
		snprintf(cfg.drm_device, sizeof(cfg.drm_device), "%s", dev);
	}
	return kms_open_loop(&cfg, test_loop);
}

static void setup(void)
{
	kms = open_kms();
	if (!kms) {
		return;
	}
	CHECK(kms_turn_off_lit(kms));
	conn = NULL;
	for (size_t i = 0; i < kms->n_connectors && !conn; i++) {
		if (kms->connectors[i]->base.status == WLA_CONNECTOR_CONNECTED) {
			conn = kms->connectors[i];
		}
	}
	crtc = NULL;
	for (size_t c = 0; conn && c < kms->n_crtcs && !crtc; c++) {
		if (conn->base.possible_crtcs & (1u << c)) {
			crtc = &kms->crtcs[c].base;
		}
	}
	if (crtc) {
		crtc->present = on_present;
	}
	n_events = 0;
	if (!drmIsMaster(kms->fd)) {
		/* Another fd of this process or another process holds master:
		 * commits would fail with EACCES. */
		fprintf(stderr, "  fd %d of %s is not DRM master\n", kms->fd, kms->path);
	}
}

static void teardown(void)
{
	kms_close(kms);
	kms = NULL;
	CHECK_INT(live_dumbs, 0);
}

/* Wait for n more present events (up to 2 s). */
static bool wait_events(int n)
{
	int want = n_events + n;
	for (int i = 0; i < 200 && n_events < want; i++) {
		wla_kms_dispatch(kms, 10);
	}
	return n_events >= want;
}

/* setup() with a connected connector and its CRTC; false (a failure,
 * torn down) without. */
static bool setup_output(void)
{
	setup();
	if (!crtc) {
		CHECK(crtc != NULL);
		teardown();
		return false;
	}
	return true;
}

/* A dumb buffer of the connector's preferred size, one colour. */
static struct dumb_fb *full_fb(uint32_t color)
{
	const struct wla_mode *mode = &conn->base.modes[0];
	return dumb_create(kms->fd, (uint32_t)mode->width, (uint32_t)mode->height,
		DRM_FORMAT_XRGB8888, color);
}

/* A frame: fb full-screen on the primary plane, with its present event;
 * *cs and *ps (if not NULL) the CRTC's and plane's states, to change
 * further before frame_commit. */
static struct wla_atomic_state *frame_state(struct wla_fb *fb, uint64_t seq,
	struct wla_crtc_state **cs_out, struct wla_plane_state **ps_out)
{
	struct wla_atomic_state *state = wla_atomic_state_alloc(&kms->dev);
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	struct wla_plane_state *ps = wla_atomic_get_plane_state(state, crtc->primary);
	wla_atomic_set_crtc_for_plane(state, ps, crtc);
	wla_atomic_set_fb_for_plane(ps, fb);
	wla_plane_state_set_full(ps, 0, 0);
	cs->commit_seq = seq;
	cs->want_event = true;
	if (cs_out) {
		*cs_out = cs;
	}
	if (ps_out) {
		*ps_out = ps;
	}
	return state;
}

/* Commit it through the flip queue; freed if refused. */
static int frame_commit(struct wla_atomic_state *state)
{
	int ret = wla_atomic_nonblocking_commit(state);
	if (ret < 0) {
		wla_atomic_state_free(state);
	}
	return ret;
}

static int commit_primary(struct wla_fb *fb, uint64_t seq)
{
	return frame_commit(frame_state(fb, seq, NULL, NULL));
}

static const struct wla_mode *preferred(void)
{
	return &conn->base.modes[0];
}

/* The kernel's view of a plane: its fb and crtc. */
static void kernel_plane(struct wla_plane *plane, uint32_t *fb_id, uint32_t *crtc_id)
{
	struct wla_kms_plane *kp = plane->driver_data;
	drmModePlane *p = drmModeGetPlane(kms->fd, kp->id);
	*fb_id = p ? p->fb_id : 0;
	*crtc_id = p ? p->crtc_id : 0;
	drmModeFreePlane(p);
}

/* The current value of a plane property, as the kernel holds it. */
static uint64_t kernel_plane_prop(struct wla_plane *plane, uint32_t prop)
{
	struct wla_kms_plane *kp = plane->driver_data;
	drmModeObjectProperties *props = drmModeObjectGetProperties(kms->fd, kp->id,
		DRM_MODE_OBJECT_PLANE);
	uint64_t value = UINT64_MAX;
	for (uint32_t i = 0; props && i < props->count_props; i++) {
		if (props->props[i] == prop) {
			value = props->prop_values[i];
		}
	}
	drmModeFreeObjectProperties(props);
	return value;
}

static void enumeration(void)
{
	setup();
	CHECK(kms != NULL);
	if (!kms) {
		return;
	}
	CHECK(conn != NULL && crtc != NULL);
	CHECK(crtc && crtc->primary && crtc->primary->type == WLA_PLANE_PRIMARY);
	CHECK(crtc && crtc->cursor && crtc->cursor->type == WLA_PLANE_CURSOR);
	CHECK(conn && conn->base.n_modes > 1);
	CHECK(conn && conn->base.modes[0].preferred);
	CHECK(kms->cursor_width >= 64 && kms->cursor_height >= 64);
	CHECK(crtc && crtc->cursor->max_fb_width == kms->cursor_width);
	/* vkms: XRGB8888 on the primary, ARGB8888 on the cursor, linear. */
	CHECK(crtc && wla_plane_supports(crtc->primary, DRM_FORMAT_XRGB8888,
		DRM_FORMAT_MOD_LINEAR));
	CHECK(crtc && wla_plane_supports(crtc->primary, DRM_FORMAT_XRGB8888,
		DRM_FORMAT_MOD_INVALID));
	CHECK(crtc && wla_plane_supports(crtc->cursor, DRM_FORMAT_ARGB8888,
		DRM_FORMAT_MOD_LINEAR));
	CHECK_LOGGED("kms ", "driver ", "crtcs", "planes", "connectors");
	/* What the console had on (vkms' fbdev) is off now. */
	uint32_t fb_id, crtc_id;
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK_INT(fb_id, 0);
	drmModeCrtc *kc = drmModeGetCrtc(kms->fd, wla_kms_crtc_from_crtc(crtc)->id);
	CHECK(kc && !kc->mode_valid);
	drmModeFreeCrtc(kc);
	teardown();
}

static uint64_t crtc_prop(const char *name);
static uint32_t captured_pixel(void);

/*
 * As wlroots' DRM backend: the CRTC the console (vkms' fbdev) left lit is
 * kept at open, in the core's books as the kernel has it (enabled, its
 * mode, its connector) and on screen with the console's framebuffer; the
 * writeback connector is not attached to it (a modeset). A frame needs no
 * modeset and replaces the console's framebuffer; the first capture
 * attaches the writeback connector; turning it off turns the kernel's
 * CRTC off.
 */
/* what_the_console_left_lit_is_kept found a CRTC lit at open: the
 * console's, there again at each open (the tests after it need it). */
static bool console_lit_seen;

static void what_the_console_left_lit_is_kept(void)
{
	/* The console lights the CRTC again once the last fd closed. */
	kms = open_kms();
	CHECK(kms != NULL);
	if (!kms) {
		return;
	}
	struct wla_kms_crtc *lit = NULL;
	for (size_t c = 0; c < kms->n_crtcs && !lit; c++) {
		lit = kms->crtcs[c].base.state->active ? &kms->crtcs[c] : NULL;
	}
	if (!lit) {
		/* No fbdev console on this card: nothing to keep. */
		printf("  nothing lit at open: the console left nothing on\n");
		teardown();
		return;
	}
	console_lit_seen = true;
	conn = kms->connectors[0];
	crtc = &lit->base;
	crtc->present = on_present;
	n_events = 0;
	CHECK_LOGGED("lit at start with", "kept, as it shows");
	drmModeCrtc *k = drmModeGetCrtc(kms->fd, lit->id);
	const struct wla_mode *km = &crtc->state->mode;
	CHECK(k && k->mode_valid);
	CHECK(k && km->width == k->mode.hdisplay && km->height == k->mode.vdisplay &&
		km->clock_khz == k->mode.clock && km->vtotal == k->mode.vtotal);
	drmModeFreeCrtc(k);
	CHECK(conn->base.state->crtc == crtc);
	CHECK_INT(crtc->state->connector_mask, 1u << conn->base.index);
	CHECK_INT(crtc_prop("ACTIVE"), 1);
	uint32_t fb_id, crtc_id;
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK(fb_id != 0 && crtc_id == lit->id);
	uint32_t console_fb = fb_id;
	struct wla_kms_plane *kp = crtc->primary->driver_data;
	CHECK_INT(kp->foreign_crtc, lit->id);
	CHECK(crtc->primary->state->fb == NULL);
	/* Nothing attached the writeback connector (that would be a modeset
	 * of the CRTC kept). */
	CHECK_INT(kms->writeback.routed_crtc, 0);
	if (kms->has_writeback) {
		CHECK_INT(object_prop(kms->writeback.id, DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID"), 0);
	}

	/* A frame of the kept mode: no modeset, ours on screen. */
	const struct wla_mode *m = &crtc->state->mode;
	struct dumb_fb *fb = dumb_create(kms->fd, (uint32_t)m->width, (uint32_t)m->height,
		DRM_FORMAT_XRGB8888, 0xff336699);
	struct wla_crtc_state *cs;
	struct wla_atomic_state *state = frame_state(&fb->base, 1, &cs, NULL);
	CHECK_INT(frame_commit(state), 0);
	CHECK(!cs->mode_changed && !cs->active_changed);
	CHECK(wait_events(1));
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK(fb_id != 0 && fb_id != console_fb);
	CHECK_INT(kp->foreign_crtc, 0);
	CHECK(n_events >= 1 && events[n_events - 1].presented);
	if (kms->has_writeback) {
		/* The first capture attaches the writeback connector. */
		CHECK_INT(captured_pixel() & 0xffffff, 0x336699);
		CHECK_INT(kms->writeback.routed_crtc, lit->id);
		CHECK_LOGGED("attached for a capture (a modeset)");
	}
	wla_fb_put(&fb->base);

	/* Off: the kernel's CRTC too. */
	CHECK(kms_turn_off_lit(kms));
	CHECK_INT(crtc_prop("ACTIVE"), 0);
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK_INT(fb_id, 0);
	teardown();
}

/* The card's device path, as open_kms would choose it. */
static const char *card_path(void)
{
	const char *dev = getenv("WLA_TEST_DRM_DEVICE");
	return dev ? dev : "/dev/dri/card0";
}

/*
 * A console cloned on two connectors of one CRTC (vkms with
 * extra_connectors=1), as another client leaves it: the CRTC is kept for
 * the first connector and the second is unrouted in the kernel too, since
 * an output is one connector (the core's books have only the first on it).
 * The clone is set from a raw fd with a legacy SETCRTC, as a console does.
 */
static void a_cloned_console_keeps_one_connector(void)
{
	int raw = open(card_path(), O_RDWR | O_CLOEXEC);
	CHECK(raw >= 0);
	if (raw < 0) {
		return;
	}
	drmModeRes *res = drmModeGetResources(raw);
	CHECK(res && res->count_crtcs >= 1 && res->count_connectors >= 2);
	if (!res || res->count_crtcs < 1 || res->count_connectors < 2) {
		drmModeFreeResources(res);
		close(raw);
		return;
	}
	uint32_t lit_crtc = res->crtcs[0], conns[2] = { res->connectors[0], res->connectors[1] };
	drmModeFreeResources(res);
	drmModeConnector *first_conn = drmModeGetConnector(raw, conns[0]);
	CHECK(first_conn && first_conn->count_modes > 0);
	drmModeModeInfo mode = first_conn && first_conn->count_modes > 0 ?
		first_conn->modes[0] : (drmModeModeInfo){ 0 };
	drmModeFreeConnector(first_conn);
	uint32_t handle = 0, pitch = 0, fb_id = 0;
	uint64_t size = 0;
	CHECK_INT(drmModeCreateDumbBuffer(raw, mode.hdisplay, mode.vdisplay, 32, 0, &handle,
		&pitch, &size), 0);
	CHECK_INT(drmModeAddFB(raw, mode.hdisplay, mode.vdisplay, 24, 32, pitch, handle,
		&fb_id), 0);
	CHECK_INT(drmModeSetCrtc(raw, lit_crtc, fb_id, 0, 0, conns, 2, &mode), 0);
	printf("  clone: crtc %u lit %ux%u on connectors %u and %u\n", lit_crtc,
		mode.hdisplay, mode.vdisplay, conns[0], conns[1]);
	/* The driver takes master from here on; raw stays open so that the
	 * console does not light its own state again. */
	drmDropMaster(raw);

	kms = open_kms();
	CHECK(kms != NULL);
	if (kms) {
		CHECK_LOGGED("lit at start with", "kept, as it shows");
		struct wla_kms_connector *first = NULL, *second = NULL;
		for (size_t i = 0; i < kms->n_connectors; i++) {
			if (kms->connectors[i]->id == conns[0]) {
				first = kms->connectors[i];
			} else if (kms->connectors[i]->id == conns[1]) {
				second = kms->connectors[i];
			}
		}
		CHECK(first && second);
		if (first && second) {
			CHECK(first->base.state->crtc != NULL);
			CHECK(second->base.state->crtc == NULL);
			CHECK_INT(object_prop(conns[0], DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID"),
				lit_crtc);
			/* The kernel as the books: the second connector off. */
			CHECK_INT(object_prop(conns[1], DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID"), 0);
			CHECK_LOGGED("turned off what another client left on", " planes, 1 connectors)");
			CHECK_LOGGED("(Virtual-2): CRTC_ID", "as left, 0 as kept: set");
		}
		teardown();
	}
	drmModeRmFB(raw, fb_id);
	drmModeDestroyDumbBuffer(raw, handle);
	close(raw);
}

/*
 * A session switch before the compositor drew on a CRTC kept lit at start:
 * the restore puts a black framebuffer of the driver's own on the primary
 * plane and the CRTC stays lit (a simple display pipe, cirrus or bochs,
 * refuses a lit CRTC whose primary plane is off, which turned every output
 * off). What the other session showed meanwhile is not kept: its
 * framebuffer removed afterwards changes nothing. The first frame after it
 * replaces the black one.
 */
static void a_session_switch_before_the_first_frame(void)
{
	kms = open_kms();
	CHECK(kms != NULL);
	if (!kms) {
		return;
	}
	struct wla_kms_crtc *lit = NULL;
	for (size_t c = 0; c < kms->n_crtcs && !lit; c++) {
		lit = kms->crtcs[c].base.state->active ? &kms->crtcs[c] : NULL;
	}
	if (!lit) {
		/* On cirrus (--colour) the console is there, and wherever the
		 * test before found it: the case that matters must not pass
		 * for want of a lit CRTC. */
		CHECK(!colour_only && !console_lit_seen);
		printf("  nothing lit at open: the console left nothing on\n");
		teardown();
		return;
	}
	crtc = &lit->base;
	crtc->present = on_present;
	n_events = 0;
	const struct wla_mode *m = &crtc->state->mode;
	uint32_t w = (uint32_t)m->width, h = (uint32_t)m->height;
	struct wla_card *card = kms->card;
	card->active = false;
	wl_signal_emit(&card->events.active, card);
	CHECK(kms->dev.inactive);
	/* The other session's frame on the primary plane (as its DRM master:
	 * the fd is master here). */
	struct wla_kms_plane *kp = crtc->primary->driver_data;
	uint32_t other_handle = 0, other_pitch = 0, other_fb = 0;
	uint64_t other_size = 0;
	CHECK_INT(drmModeCreateDumbBuffer(kms->fd, w, h, 32, 0, &other_handle, &other_pitch,
		&other_size), 0);
	CHECK_INT(drmModeAddFB(kms->fd, w, h, 24, 32, other_pitch, other_handle, &other_fb), 0);
	CHECK_INT(drmModeSetPlane(kms->fd, kp->id, lit->id, other_fb, 0, 0, 0, w, h, 0, 0,
		w << 16, h << 16), 0);
	harness_log_clear();
	card->active = true;
	wl_signal_emit(&card->events.active, card);
	CHECK(!kms->dev.inactive);
	CHECK(!LOGGED("refused the restore"));
	CHECK_LOGGED("session active again: every CRTC and plane restored");
	CHECK(crtc->state->active);
	CHECK_INT(crtc_prop("ACTIVE"), 1);
	uint32_t fb_id, crtc_id;
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK(fb_id != 0 && fb_id != other_fb && crtc_id == lit->id);
	CHECK_INT(fb_id, lit->blank_fb);
	/* The other session's framebuffer goes: ours stays on screen. */
	CHECK_INT(drmModeRmFB(kms->fd, other_fb), 0);
	drmModeDestroyDumbBuffer(kms->fd, other_handle);
	CHECK_INT(crtc_prop("ACTIVE"), 1);
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK_INT(fb_id, lit->blank_fb);
	if (kms->has_writeback) {
		/* Black, where the writeback connector shows it. */
		CHECK_INT(captured_pixel() & 0xffffff, 0);
	}
	uint32_t blank = lit->blank_fb;

	/* The first frame: ours on screen, no modeset. */
	struct dumb_fb *fb = dumb_create(kms->fd, w, h, DRM_FORMAT_XRGB8888, 0xff224466);
	struct wla_crtc_state *cs;
	struct wla_atomic_state *state = frame_state(&fb->base, 1, &cs, NULL);
	CHECK_INT(frame_commit(state), 0);
	CHECK(!cs->mode_changed && !cs->active_changed);
	CHECK(wait_events(1));
	CHECK(n_events >= 1 && events[n_events - 1].presented);
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK(fb_id != 0 && fb_id != blank);
	CHECK_INT(kp->foreign_crtc, 0);
	/* Off the screen, the black framebuffer is removed, and gone from
	 * the kernel once the commit that replaced it let go of it (its
	 * clean-up runs after the event). */
	CHECK_INT(lit->blank_fb, 0);
	drmModeFBPtr gone = drmModeGetFB(kms->fd, blank);
	for (uint64_t i = 0; gone && i < harness_scaled_ns(2000) / 10000000; i++) {
		drmModeFreeFB(gone);
		struct timespec nap = { .tv_nsec = 10000000 };
		nanosleep(&nap, NULL);
		gone = drmModeGetFB(kms->fd, blank);
	}
	CHECK(gone == NULL);
	drmModeFreeFB(gone);
	CHECK_INT(crtc_prop("ACTIVE"), 1);
	wla_fb_put(&fb->base);
	CHECK(kms_turn_off_lit(kms));
	teardown();
}

/* The preferred mode on, then page flips each committed as the previous
 * one latched: one vblank apart, sequence +1, fbs released on time, each
 * buffer imported once (its DRM framebuffer kept until the buffer goes). */
static void modeset_and_flips(void)
{
	if (!setup_output()) {
		return;
	}
	const struct wla_mode *mode = preferred();
	struct dumb_fb *fbs[3];
	for (int i = 0; i < 3; i++) {
		fbs[i] = dumb_create(kms->fd, (uint32_t)mode->width, (uint32_t)mode->height,
			DRM_FORMAT_XRGB8888, 0xff000000u | (0x40u << (8 * i)));
	}
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &fbs[0]->base, 1), 0);
	CHECK(wait_events(1));
	CHECK(events[0].presented);
	CHECK(events[0].flags & WLA_PRESENT_VSYNC);
	CHECK_INT(kms->scanout_fbs, 1);
	uint32_t fb_id, crtc_id;
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK_INT(crtc_id, wla_kms_crtc_from_crtc(crtc)->id);
	CHECK(fb_id != 0);
	CHECK_INT(fb_id, ((uint32_t *)fbs[0]->base.import)[0]);
	drmModeCrtc *kc = drmModeGetCrtc(kms->fd, wla_kms_crtc_from_crtc(crtc)->id);
	CHECK(kc && kc->mode_valid && kc->mode.hdisplay == mode->width &&
		kc->mode.vdisplay == mode->height);
	drmModeFreeCrtc(kc);

	/* At least 12 flips; more (up to 48) until 9 took the next vblank:
	 * a guest starved by a loaded host misses vblanks, and the test
	 * waits for the condition rather than count on the timing. A driver
	 * that never takes the next vblank fails. */
	const int min_flips = 12, max_flips = 48, want_next = 9;
	int flips = 0, next_vblank = 0;
	uint64_t tests0 = kms->test_commits, skipped0 = kms->tests_skipped;
	for (int i = 1; i <= max_flips && (i <= min_flips || next_vblank < want_next); i++) {
		flips = i;
		struct dumb_fb *next = fbs[i % 3], *prev = fbs[(i + 2) % 3];
		uint64_t added = kms->fbs_added, reused = kms->fbs_reused;
		CHECK_INT(commit_primary(&next->base, (uint64_t)i + 1), 0);
		/* One import per buffer: its first flip imports it (the
		 * TEST_ONLY, whose import the prepare finds), the later ones
		 * find the import kept. */
		CHECK_INT(kms->fbs_added - added, i < 3 ? 1 : 0);
		CHECK_INT(kms->fbs_reused - reused, 1);
		CHECK_INT(kms->live_fbs, i < 3 ? i + 1 : 3);
		/* The fb on screen stays imported until this flip latched. */
		CHECK(prev->base.prepared == 1 && prev->base.import != NULL);
		CHECK_INT(kms->scanout_fbs, 2);
		if (!wait_events(1)) {
			CHECK(!"no page-flip event");
			break;
		}
		const struct wla_present *e = &events[n_events - 1];
		CHECK(e->presented);
		CHECK_INT(e->commit_seq, (uint64_t)i + 1);
		/* Committed right after the last latch: the next vblank, unless
		 * the guest was slow; the sequence always counts the vblanks
		 * the kernel's timestamps say passed. */
		const struct wla_present *p = &events[n_events - 2];
		uint64_t dseq = e->seq - p->seq;
		int64_t dt = (int64_t)((e->when.tv_sec - p->when.tv_sec) * 1000000000ll +
			(e->when.tv_nsec - p->when.tv_nsec));
		int64_t off = dt - (int64_t)(dseq * wla_mode_period_ns(mode));
		CHECK(dseq >= 1);
		/* Not against the enable's event: its vblank is the first after
		 * vblank interrupts came on, its timestamp off the grid. */
		if (i > 1) {
			CHECK(off > -(int64_t)wla_mode_period_ns(mode) / 2 &&
				off < (int64_t)wla_mode_period_ns(mode) / 2);
		}
		next_vblank += dseq == 1;
		CHECK_INT(prev->base.prepared, 0);
		/* Off the screen, kept for its next flip. */
		CHECK(prev->base.import != NULL);
		CHECK_INT(kms->scanout_fbs, 1);
		kernel_plane(crtc->primary, &fb_id, &crtc_id);
		CHECK_INT(fb_id, ((uint32_t *)next->base.import)[0]);
	}
	/* The period from the kernel's timestamps and sequence numbers,
	 * within 1% of the mode's. */
	/* From the first flip: the vblank that latched the enable is the
	 * first after vblank interrupts came on, its timestamp no period. */
	const struct wla_present *first = &events[1], *last = &events[n_events - 1];
	uint64_t t0 = (uint64_t)first->when.tv_sec * 1000000000u + (uint64_t)first->when.tv_nsec;
	uint64_t t1 = (uint64_t)last->when.tv_sec * 1000000000u + (uint64_t)last->when.tv_nsec;
	uint64_t period = wla_mode_period_ns(mode);
	uint64_t measured = (t1 - t0) / (last->seq - first->seq);
	struct wla_vblank_counters c;
	wla_crtc_get_counters(crtc, &c);
	printf("  flips: %d, %d at the next vblank, %" PRIu64 " missed; period %" PRIu64
		" ns measured, %" PRIu64 " ns of the mode\n", n_events - 1, next_vblank, c.missed,
		measured, period);
	CHECK(next_vblank >= want_next);
	/* Only the fb changed from flip to flip, for one of the same format and
	 * size: the configuration the kernel accepted at the enable stands, and
	 * no flip sent a TEST_ONLY. */
	CHECK_INT(kms->test_commits - tests0, 0);
	CHECK_INT(kms->tests_skipped - skipped0, flips);
	CHECK(measured > period * 99 / 100 && measured < period * 101 / 100);

	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	CHECK_INT(kms->scanout_fbs, 0);
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK_INT(fb_id, 0);
	/* The imports go with their buffers, not before. */
	CHECK_INT(kms->live_fbs, 3);
	for (int i = 0; i < 3; i++) {
		CHECK_INT(fbs[i]->prepares, fbs[i]->cleanups);
		uint32_t kept = ((uint32_t *)fbs[i]->base.import)[0];
		wla_fb_put(&fbs[i]->base);
		CHECK_INT(kms->live_fbs, 2 - i);
		/* The kernel's framebuffer is gone too. */
		drmModeFB *gone = drmModeGetFB(kms->fd, kept);
		CHECK(gone == NULL);
		drmModeFreeFB(gone);
	}
	teardown();
	CHECK_INT(kms == NULL, 1);
}

/* A mode change of a running CRTC, through the flip queue. */
static void mode_change(void)
{
	if (!setup_output()) {
		return;
	}
	const struct wla_mode *a = preferred(), *b = NULL;
	for (size_t i = 1; i < conn->base.n_modes && !b; i++) {
		if (conn->base.modes[i].width == 800 && conn->base.modes[i].height == 600) {
			b = &conn->base.modes[i];
		}
	}
	CHECK(b != NULL);
	if (!b) {
		teardown();
		return;
	}
	struct dumb_fb *fa = dumb_create(kms->fd, (uint32_t)a->width, (uint32_t)a->height,
		DRM_FORMAT_XRGB8888, 0xff102030u);
	struct dumb_fb *fbb = dumb_create(kms->fd, 800, 600, DRM_FORMAT_XRGB8888, 0xff302010u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, a, &fa->base, 1), 0);
	CHECK(wait_events(1));
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, b, &fbb->base, 2), 0);
	CHECK(wait_events(1));
	CHECK_INT(events[n_events - 1].commit_seq, 2);
	drmModeCrtc *kc = drmModeGetCrtc(kms->fd, wla_kms_crtc_from_crtc(crtc)->id);
	CHECK(kc && kc->mode.hdisplay == 800 && kc->mode.vdisplay == 600);
	drmModeFreeCrtc(kc);
	CHECK_INT(fa->base.prepared, 0);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	wla_fb_put(&fa->base);
	wla_fb_put(&fbb->base);
	teardown();
}

/*
 * The frame deadline on a real card comes from the core playing the queue
 * forward on the driver's grid: after the enable's page-flip event the next
 * latch is the coming vblank, a frame armed takes it and pushes the next
 * one a period on, and a mode change queued behind that frame restarts the
 * timing where it latches (the next latch is one period of the new mode
 * after it; KMS counted queued states at the old period before).
 */
#define NEAR_NS 1000
#define GRID_NS 200000

/* A non-blocking mode change with a full-screen primary, queued behind what
 * the CRTC has. */
static int queue_mode(const struct wla_mode *mode, struct wla_fb *fb, uint64_t seq)
{
	struct wla_crtc_state *cs;
	struct wla_atomic_state *state = frame_state(fb, seq, &cs, NULL);
	state->allow_modeset = true;
	cs->mode = *mode;
	return frame_commit(state);
}

static void next_latch_follows_the_queue(void)
{
	if (!setup_output()) {
		return;
	}
	/* The mode whose period differs most from the preferred one's (vkms:
	 * 56 against 60 Hz, 1.2 ms): the check below tells them apart if they
	 * differ by more than its tolerance, twice over. */
	const struct wla_mode *a = preferred(), *b = NULL;
	uint64_t most = 0;
	for (size_t i = 1; i < conn->base.n_modes; i++) {
		const struct wla_mode *m = &conn->base.modes[i];
		uint64_t pa = wla_mode_period_ns(a), pm = wla_mode_period_ns(m);
		uint64_t d = pa > pm ? pa - pm : pm - pa;
		if (d > most && d < pa) {
			most = d;
			b = m;
		}
	}
	CHECK(b != NULL && most > 4 * GRID_NS);
	if (!b || most <= 4 * GRID_NS) {
		teardown();
		return;
	}
	crtc->queue_depth = 2;
	struct dumb_fb *fa = dumb_create(kms->fd, (uint32_t)a->width, (uint32_t)a->height,
		DRM_FORMAT_XRGB8888, 0xff203040u);
	struct dumb_fb *fa2 = dumb_create(kms->fd, (uint32_t)a->width, (uint32_t)a->height,
		DRM_FORMAT_XRGB8888, 0xff304050u);
	struct dumb_fb *fb = dumb_create(kms->fd, (uint32_t)b->width, (uint32_t)b->height,
		DRM_FORMAT_XRGB8888, 0xff405060u);
	uint64_t latch = 0, commit_by = 0;
	CHECK(!wla_crtc_next_latch(crtc, &latch, &commit_by)); /* off */
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, a, &fa->base, 1), 0);
	CHECK(wait_events(1));
	uint64_t period_a = wla_mode_period_ns(a), period_b = wla_mode_period_ns(b);
	/* The latch is the first vblank after the clock plus the slack, as
	 * the clock reads inside the call: between the two readings around
	 * it (a loaded guest can pass a vblank between them). */
	uint64_t before = kms->dev.funcs->now(&kms->dev);
	CHECK(wla_crtc_next_latch(crtc, &latch, &commit_by));
	uint64_t after = kms->dev.funcs->now(&kms->dev);
	CHECK_INT(latch - commit_by, kms->dev.latch_slack_ns);
	CHECK(latch >= before + kms->dev.latch_slack_ns);
	CHECK(latch <= after + kms->dev.latch_slack_ns + period_a + 1000);
	/* A frame armed, then a mode change waiting behind it: the frame
	 * takes a vblank of the old timing, the mode change the one after,
	 * and a frame after them comes a period of the new mode later. */
	CHECK_INT(commit_primary(&fa2->base, 2), 0);
	uint64_t frame_latch = 0, after_frame = 0;
	CHECK(wla_crtc_armed_latch(crtc, &frame_latch));
	CHECK(wla_crtc_next_latch(crtc, &after_frame, &commit_by));
	CHECK(after_frame >= frame_latch + period_a - NEAR_NS);
	CHECK_INT(queue_mode(b, &fb->base, 3), 0);
	CHECK_INT(crtc->queued, 2);
	uint64_t after_mode = 0;
	CHECK(wla_crtc_next_latch(crtc, &after_mode, &commit_by));
	uint64_t read_at = kms->dev.funcs->now(&kms->dev);
	/* Where the frame latches as the driver sees it now: once the clock
	 * passed its vblank, before its event is read, the driver puts it at
	 * the next one (it cannot tell a latch from a miss until then). */
	uint64_t frame_again = 0;
	CHECK(wla_crtc_armed_latch(crtc, &frame_again));
	/* The mode change latches a whole number of old periods after the
	 * frame (one, unless the clock passed the frame's vblank meanwhile:
	 * then the first after the clock as read), and the next frame one
	 * period of the new mode after that (the grid rounds the rate to the
	 * mHz: within a microsecond). */
	uint64_t mode_latch = after_mode - period_b;
	uint64_t gap = mode_latch + GRID_NS - frame_latch, rem = gap % period_a;
	uint64_t frame_at = frame_again > frame_latch ? frame_again : frame_latch;
	/* One period after the frame, two if the frame is so near that the
	 * mode change's commit missed it. */
	uint64_t latest = frame_at + (frame_at >= read_at + kms->dev.latch_slack_ns ? 1 : 2) *
		period_a;
	CHECK(gap >= period_a);
	CHECK(mode_latch <= latest + GRID_NS);
	/* At the old period instead it would be off that grid by the
	 * difference of the periods (more than a millisecond for the modes
	 * chosen); the kernel's vblank times, read at two moments on a loaded
	 * guest, are on it within GRID_NS. */
	CHECK(rem <= 2 * GRID_NS);
	CHECK(wait_events(2));
	CHECK_INT(events[n_events - 1].commit_seq, 3);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	wla_fb_put(&fa->base);
	wla_fb_put(&fa2->base);
	wla_fb_put(&fb->base);
	teardown();
}

/* The cursor and an overlay plane on top of the primary. */
static void cursor_and_overlay(void)
{
	if (!setup_output()) {
		return;
	}
	struct wla_plane *overlay = NULL;
	for (size_t i = 0; i < kms->n_planes && !overlay; i++) {
		struct wla_plane *p = &kms->planes[i].base;
		if (p->type == WLA_PLANE_OVERLAY && (p->possible_crtcs & (1u << crtc->index))) {
			overlay = p;
		}
	}
	CHECK(overlay != NULL);
	const struct wla_mode *mode = preferred();
	struct dumb_fb *bg = full_fb(0xff000080u);
	struct dumb_fb *cur = dumb_create(kms->fd, 64, 64, DRM_FORMAT_ARGB8888, 0x80ff0000u);
	struct dumb_fb *ov = dumb_create(kms->fd, 200, 100, DRM_FORMAT_ARGB8888, 0xff00ff00u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &bg->base, 1), 0);
	CHECK(wait_events(1));
	/* The cursor partly off the left edge: the kernel clips. A plane that
	 * comes on is a new configuration: the kernel is asked. */
	uint64_t tests0 = kms->test_commits;
	CHECK_INT(wla_atomic_update_plane(crtc->cursor, crtc, &cur->base, -20, 30, 64, 64, 0, 0,
		64 << 16, 64 << 16), 0);
	CHECK(kms->test_commits > tests0);
	uint32_t fb_id, crtc_id;
	if (overlay) {
		/* Blocking legacy calls wait for nothing queued. */
		for (int i = 0; i < 10 && crtc->queued; i++) {
			wla_kms_dispatch(kms, 20);
		}
		CHECK_INT(wla_atomic_update_plane(overlay, crtc, &ov->base, 300, 200, 200, 100, 0,
			0, 200 << 16, 100 << 16), 0);
		for (int i = 0; i < 10 && crtc->queued; i++) {
			wla_kms_dispatch(kms, 20);
		}
		kernel_plane(overlay, &fb_id, &crtc_id);
		CHECK(fb_id != 0);
		CHECK_INT(crtc_id, wla_kms_crtc_from_crtc(crtc)->id);
		const struct wla_kms_plane_props *op =
			&((struct wla_kms_plane *)overlay->driver_data)->props;
		CHECK_INT(kernel_plane_prop(overlay, op->crtc_x), 300);
		CHECK_INT(kernel_plane_prop(overlay, op->crtc_y), 200);
		CHECK_INT(kernel_plane_prop(overlay, op->src_w), 200 << 16);
	}
	kernel_plane(crtc->cursor, &fb_id, &crtc_id);
	CHECK(fb_id != 0);
	CHECK_INT(kms->scanout_fbs, overlay ? 3 : 2);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	CHECK_INT(kms->scanout_fbs, 0);
	wla_fb_put(&bg->base);
	wla_fb_put(&cur->base);
	wla_fb_put(&ov->base);
	teardown();
}

/* What the core lets through and the kernel does not: TEST_ONLY tells,
 * with the objects and the errno, and nothing is left behind. */
static void test_only_refusals(void)
{
	if (!setup_output()) {
		return;
	}
	const struct wla_mode *mode = preferred();
	/* vkms' primary plane cannot be positioned: half a screen is refused. */
	struct dumb_fb *half = dumb_create(kms->fd, (uint32_t)mode->width / 2,
		(uint32_t)mode->height, DRM_FORMAT_XRGB8888, 0xff808080u);
	harness_log_clear();
	int ret = wla_atomic_set_config(crtc, &conn->base, mode, &half->base, 1);
	CHECK_INT(ret, -EINVAL);
	CHECK_LOGGED("the kernel refused the state", "TEST_ONLY", crtc->name,
		crtc->primary->name, conn->base.name, "errno 22");
	CHECK_INT(kms->scanout_fbs, 0);
	CHECK_INT(half->base.prepared, 0);
	CHECK(!crtc->state->active);
	/* The same fb scaled up to the whole screen: vkms 6.1 does not scale. */
	struct wla_atomic_state *state = wla_atomic_state_alloc(&kms->dev);
	state->allow_modeset = true;
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	cs->enable = cs->active = true;
	cs->mode = *mode;
	struct wla_connector_state *cos = wla_atomic_get_connector_state(state, &conn->base);
	wla_atomic_set_crtc_for_connector(state, cos, crtc);
	struct wla_plane_state *ps = wla_atomic_get_plane_state(state, crtc->primary);
	wla_atomic_set_crtc_for_plane(state, ps, crtc);
	wla_atomic_set_fb_for_plane(ps, &half->base);
	wla_plane_state_set_full(ps, 0, 0);
	ps->crtc_w = (uint32_t)mode->width;
	harness_log_clear();
	CHECK_INT(wla_atomic_check(state), -ERANGE);
	CHECK_LOGGED("the kernel refused the state", crtc->primary->name, "errno 34");
	wla_atomic_state_free(state);
	CHECK_INT(kms->scanout_fbs, 0);
	/* A mode the connector never listed, with an impossible clock. */
	struct wla_mode bad = *mode;
	bad.clock_khz = 1;
	wla_mode_update_refresh(&bad);
	struct dumb_fb *full = dumb_create(kms->fd, (uint32_t)mode->width,
		(uint32_t)mode->height, DRM_FORMAT_XRGB8888, 0xff808080u);
	harness_log_clear();
	CHECK(wla_atomic_set_config(crtc, &conn->base, &bad, &full->base, 1) < 0);
	CHECK_INT(kms->scanout_fbs, 0);
	CHECK_INT(kms->dev.live_states, 0);
	wla_fb_put(&half->base);
	wla_fb_put(&full->base);
	teardown();
}

/* The kernel refuses a commit mid-run (injected at the driver boundary):
 * one error naming the objects, the CRTC off, its frames reported failed,
 * nothing leaked; the card takes the next modeset. */
static void refused_mid_run(void)
{
	if (!setup_output()) {
		return;
	}
	const struct wla_mode *mode = preferred();
	struct dumb_fb *a = full_fb(0xff111111u);
	struct dumb_fb *b = full_fb(0xff222222u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 1), 0);
	CHECK(wait_events(1));
	kms->fail_commit = EINVAL;
	harness_log_clear();
	CHECK_INT(commit_primary(&b->base, 2), 0);
	CHECK_LOGGED("the kernel refused the commit", crtc->name, "errno 22");
	CHECK_LOGGED(crtc->name, "could not program", "the crtc is off");
	CHECK(!crtc->state->active);
	CHECK(events[n_events - 1].failed);
	CHECK_INT(kms->scanout_fbs, 0);
	CHECK_INT(a->base.prepared + b->base.prepared, 0);
	uint32_t fb_id, crtc_id;
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK_INT(fb_id, 0);
	/* And back on. */
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &b->base, 3), 0);
	CHECK(wait_events(1));
	CHECK(events[n_events - 1].presented);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	CHECK_INT(kms->scanout_fbs, 0);
	wla_fb_put(&a->base);
	wla_fb_put(&b->base);
	teardown();
}

static int added, removed;

static void on_added(struct wla_device *dev, struct wla_connector *c, void *data)
{
	added++;
}

static void on_removed(struct wla_device *dev, struct wla_connector *c, void *data)
{
	/* Told after its CRTC went off. */
	CHECK(!c->state->crtc);
	removed++;
}

/* Force the kernel's view of a connector through sysfs ("off", "detect"):
 * false if the kernel does not offer it. */
static bool force_status(const char *conn_name, const char *value)
{
	char path[256];
	snprintf(path, sizeof(path), "/sys/class/drm/card0-%s/status", conn_name);
	FILE *f = fopen(path, "w");
	if (!f) {
		return false;
	}
	bool ok = fputs(value, f) >= 0;
	return fclose(f) == 0 && ok;
}

/* A connector unplugged while its output is on: vkms in 6.1 cannot unplug,
 * so the kernel's status is forced off through sysfs (what GetConnector
 * then reports) and the change is told to the driver as the session tells
 * a hot-plug uevent (the card's change signal; wla_kms_reprobe when forcing
 * is not offered). Its CRTC goes off before the listener hears of
 * it, its fbs are released; plugged back in, it is announced again. */
static void unplug_while_on(void)
{
	if (!setup_output()) {
		return;
	}
	added = removed = 0;
	kms->dev.listener = (struct wla_device_listener){
		.connector_added = on_added,
		.connector_removed = on_removed,
	};
	/* A copy: the connector's list is read again when it comes back. */
	const struct wla_mode saved = *preferred(), *mode = &saved;
	struct dumb_fb *a = full_fb(0xff445566u);
	struct dumb_fb *b = full_fb(0xff665544u);
	crtc->queue_depth = 2;
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 1), 0);
	CHECK(wait_events(1));
	/* 2 is armed and may latch before the unplug is heard (a loaded
	 * machine); 3 waits behind it in the queue and cannot. */
	CHECK_INT(commit_primary(&b->base, 2), 0);
	CHECK_INT(commit_primary(&a->base, 3), 0);
	bool forced = force_status(conn->base.name, "off");
	harness_log_clear();
	if (forced) {
		/* As the session tells a hot-plug uevent of the card. */
		wl_signal_emit(&kms->card->events.change, kms->card);
	} else {
		printf("  no sysfs status for %s: the change is injected\n", conn->base.name);
		wla_kms_reprobe(kms, conn->id, 0);
	}
	CHECK_LOGGED("connector", conn->base.name, "unplugged");
	CHECK_INT(removed, 1);
	CHECK(conn->base.status == WLA_CONNECTOR_DISCONNECTED);
	CHECK(!crtc->state->active);
	CHECK_INT(kms->scanout_fbs, 0);
	CHECK_INT(a->base.prepared, 0);
	CHECK_INT(b->base.prepared, 0);
	CHECK_INT(kms->dev.live_states, 0);
	uint32_t fb_id, crtc_id;
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK_INT(fb_id, 0);
	/* Each frame reports once; the one still queued when it went
	 * reports not presented. */
	CHECK_INT(n_events, 3);
	CHECK(events[1].commit_seq == 2);
	CHECK(events[2].commit_seq == 3 && !events[2].presented);
	/* Nothing changed: nothing told. */
	wla_kms_reprobe(kms, forced ? 0 : conn->id, forced ? -1 : 0);
	CHECK_INT(removed, 1);
	CHECK_INT(added, 0);
	if (forced) {
		CHECK(force_status(conn->base.name, "detect"));
		wl_signal_emit(&kms->card->events.change, kms->card);
	} else {
		wla_kms_reprobe(kms, conn->id, 1);
	}
	CHECK_INT(added, 1);
	CHECK(conn->base.status == WLA_CONNECTOR_CONNECTED && conn->base.n_modes > 0);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 4), 0);
	CHECK(wait_events(1));
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	wla_fb_put(&a->base);
	wla_fb_put(&b->base);
	teardown();
}

/*
 * A session switch during which the other session turned the CRTC off
 * (the kernel's vblank counter stands still while a CRTC is off) and the
 * compositor read the statistics meanwhile (the count follows the clock
 * from the last vblank): after the restore the sequence of the present
 * events goes on from there, never back to the kernel's count.
 */
static void sequences_go_on_across_a_switch_that_turned_the_crtc_off(void)
{
	if (!setup_output()) {
		return;
	}
	struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(crtc);
	struct dumb_fb *a = full_fb(0xff101010u), *b = full_fb(0xff202020u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, preferred(), &a->base, 1), 0);
	CHECK(wait_events(1));
	CHECK_INT(commit_primary(&b->base, 2), 0);
	CHECK(wait_events(1));
	uint64_t before = events[n_events - 1].seq;
	struct wla_card *card = kms->card;
	card->active = false;
	wl_signal_emit(&card->events.active, card);
	CHECK(kms->dev.inactive);
	/* The other session (its DRM master: the fd is master here) turns
	 * the CRTC off. */
	CHECK_INT(drmModeSetCrtc(kms->fd, kc->id, 0, 0, 0, NULL, 0, NULL), 0);
	uint64_t kseq_off = 0, kns = 0;
	int kret = drmCrtcGetSequence(kms->fd, kc->id, &kseq_off, &kns);
	/* 20 periods on the clock, read as a compositor reads them. */
	struct wla_vblank_counters c = { 0 };
	uint64_t deadline = kms->dev.funcs->now(&kms->dev) + harness_scaled_ns(5000);
	do {
		struct timespec nap = { .tv_nsec = 5000000 };
		nanosleep(&nap, NULL);
		wla_crtc_get_counters(crtc, &c);
	} while (c.seq < before + 20 && kms->dev.funcs->now(&kms->dev) < deadline);
	CHECK(c.seq >= before + 20);
	harness_log_clear();
	card->active = true;
	wl_signal_emit(&card->events.active, card);
	CHECK(!kms->dev.inactive);
	CHECK_INT(crtc_prop("ACTIVE"), 1);
	uint64_t kseq = 0;
	CHECK_INT(drmCrtcGetSequence(kms->fd, kc->id, &kseq, &kns), 0);
	printf("  seq %" PRIu64 " before the switch, %" PRIu64 " counted in it; the kernel's "
		"counter %s%" PRIu64 " with the CRTC off, %" PRIu64 " after the restore\n",
		before, c.seq, kret == 0 ? "" : "unreadable, ", kseq_off, kseq);
	for (uint64_t i = 0; i < 3; i++) {
		CHECK_INT(commit_primary(i % 2 ? &b->base : &a->base, 3 + i), 0);
		CHECK(wait_events(1));
		const struct wla_present *e = &events[n_events - 1];
		CHECK(e->presented && e->commit_seq == 3 + i);
		CHECK(e->seq > (i ? events[n_events - 2].seq : c.seq));
	}
	if (kseq <= c.seq) {
		/* The case this test is for (vkms: the counter stands still
		 * while the CRTC is off). */
		CHECK_LOGGED("the kernel's vblank counter", "is behind the sequence reported",
			"it goes on from");
	}
	struct wla_vblank_counters after;
	wla_crtc_get_counters(crtc, &after);
	CHECK(after.seq >= events[n_events - 1].seq);
	/* The first frame's first vblank follows the clock too (it was
	 * taken from the kernel's counter, and the frame missed the 20 or
	 * more vblanks of the gap): 3 frames miss fewer than 10, however
	 * loaded the machine. */
	printf("  missed: %" PRIu64 " before the restore, %" PRIu64 " after 3 frames\n",
		c.missed, after.missed);
	CHECK(after.missed < c.missed + 10);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	wla_fb_put(&a->base);
	wla_fb_put(&b->base);
	teardown();
}

/*
 * A commit turning the CRTC off first reads the latches already on the fd
 * (the sync), then is refused (its connector left routed to the CRTC it
 * turns off). The frame that latched is not told from inside the refused
 * commit, and not left until some later page flip either (none comes:
 * nothing else is queued): the driver's next wake-up on the loop, its
 * idle, tells it.
 */
static void latches_a_refused_commit_read_are_told_from_the_loop(void)
{
	struct wl_event_loop *loop = wl_event_loop_create();
	test_loop = loop;
	bool ok = setup_output();
	test_loop = NULL;
	if (!ok) {
		wl_event_loop_destroy(loop);
		return;
	}
	struct dumb_fb *a = full_fb(0xff303030u), *b = full_fb(0xff404040u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, preferred(), &a->base, 1), 0);
	CHECK(wait_events(1));
	CHECK_INT(commit_primary(&b->base, 2), 0);
	/* Its page-flip event on the fd, unread. */
	struct pollfd pfd = { .fd = kms->fd, .events = POLLIN };
	CHECK_INT(poll(&pfd, 1, (int)(harness_scaled_ns(2000) / 1000000)), 1);
	int told = n_events;
	struct wla_atomic_state *off = wla_atomic_state_alloc(&kms->dev);
	off->allow_modeset = true;
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(off, crtc);
	cs->enable = cs->active = false;
	harness_log_clear();
	CHECK(wla_atomic_commit(off) < 0);
	CHECK_LOGGED("connector", conn->base.name, "which has enable=0");
	wla_atomic_state_free(off);
	CHECK_INT(n_events, told);
	CHECK(crtc->state->active);
	/* The sync read the event: the fd has nothing more. */
	CHECK_INT(poll(&pfd, 1, 0), 0);
	CHECK_INT(wl_event_loop_dispatch(loop, 0), 0);
	CHECK_INT(n_events, told + 1);
	CHECK(n_events > told && events[n_events - 1].commit_seq == 2 &&
		events[n_events - 1].presented);
	CHECK_INT(crtc->queued, 0);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	wla_fb_put(&a->base);
	wla_fb_put(&b->base);
	teardown();
	wl_event_loop_destroy(loop);
}

static int links_bad;

static void on_link_bad(struct wla_device *dev, struct wla_connector *c, void *data)
{
	links_bad++;
}

/* The kernel's value of a connector property (-1 if it has none). */
static int64_t connector_prop(const char *name)
{
	return object_prop(conn->id, DRM_MODE_OBJECT_CONNECTOR, name);
}

/*
 * link-status BAD (vkms as the tier builds it sets it on request, with a
 * hot-plug uevent, as a DisplayPort driver does): the hot-plug handling
 * tells the listener, and a modeset with the same mode (connectors_changed)
 * carries link-status GOOD, which the kernel keeps.
 */
static void link_status_bad_is_told_and_a_modeset_trains_it(void)
{
	if (!setup_output()) {
		return;
	}
	FILE *trigger = fopen("/sys/module/vkms/parameters/link_bad", "w");
	if (!trigger) {
		printf("  no vkms link_bad parameter: nothing to check\n");
		teardown();
		return;
	}
	links_bad = 0;
	kms->dev.listener = (struct wla_device_listener){ .connector_link_bad = on_link_bad };
	const struct wla_mode saved = *preferred();
	struct dumb_fb *a = full_fb(0xff102030u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, &saved, &a->base, 1), 0);
	CHECK(wait_events(1));
	CHECK_INT(connector_prop("link-status"), DRM_MODE_LINK_STATUS_GOOD);
	CHECK(fputs("1", trigger) >= 0);
	CHECK(fclose(trigger) == 0);
	CHECK_INT(connector_prop("link-status"), DRM_MODE_LINK_STATUS_BAD);
	harness_log_clear();
	/* As the session tells a hot-plug uevent of the card. */
	wl_signal_emit(&kms->card->events.change, kms->card);
	CHECK_INT(links_bad, 1);
	CHECK_LOGGED("connector", conn->base.name, "link-status BAD");
	struct wla_atomic_state *state = wla_atomic_state_alloc(&kms->dev);
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	cs->connectors_changed = true;
	state->allow_modeset = true;
	CHECK_INT(wla_atomic_nonblocking_commit(state), 0);
	CHECK_INT(commit_primary(&a->base, 2), 0);
	CHECK(wait_events(1));
	CHECK_INT(connector_prop("link-status"), DRM_MODE_LINK_STATUS_GOOD);
	/* Good again: nothing told. */
	wl_signal_emit(&kms->card->events.change, kms->card);
	CHECK_INT(links_bad, 1);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	wla_fb_put(&a->base);
	teardown();
}

/* Another monitor on a port that stayed connected (its mode list changes):
 * the connector is unplugged and plugged in again with the new modes;
 * the same monitor again is no change. */
static void a_monitor_swapped_while_connected_comes_back_with_its_modes(void)
{
	if (!setup_output()) {
		return;
	}
	size_t n = conn->base.n_modes;
	if (n < 2) {
		printf("  %zu modes: nothing to drop\n", n);
		teardown();
		return;
	}
	added = removed = 0;
	kms->dev.listener = (struct wla_device_listener){
		.connector_added = on_added,
		.connector_removed = on_removed,
	};
	const struct wla_mode saved = *preferred();
	struct dumb_fb *a = full_fb(0xff203040u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, &saved, &a->base, 1), 0);
	CHECK(wait_events(1));
	harness_log_clear();
	swap_monitor = true;
	wl_signal_emit(&kms->card->events.change, kms->card);
	CHECK_LOGGED("connector", conn->base.name, "another monitor");
	CHECK_INT(removed, 1);
	CHECK_INT(added, 1);
	CHECK(conn->base.status == WLA_CONNECTOR_CONNECTED);
	CHECK_INT(conn->base.n_modes, n - 1);
	CHECK(!crtc->state->active);
	wl_signal_emit(&kms->card->events.change, kms->card);
	CHECK_INT(removed, 1);
	CHECK_INT(added, 1);
	swap_monitor = false;
	wl_signal_emit(&kms->card->events.change, kms->card);
	CHECK_INT(added, 2);
	CHECK_INT(conn->base.n_modes, n);
	wla_fb_put(&a->base);
	teardown();
}

/* The device is lost mid-run: one error, the CRTC off, what was queued
 * reported, further states refused naming the device; nothing leaks. */
static void device_lost(void)
{
	if (!setup_output()) {
		return;
	}
	const struct wla_mode *mode = preferred();
	struct dumb_fb *a = full_fb(0xff665544u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 1), 0);
	CHECK(wait_events(1));
	CHECK_INT(commit_primary(&a->base, 2), 0);
	harness_log_clear();
	wla_kms_device_lost(kms, -ENODEV);
	wla_kms_device_lost(kms, -ENODEV);
	int lines = 0;
	for (int i = 0; i < harness_log_n; i++) {
		lines += strstr(harness_log[i], "the device is gone") != NULL;
	}
	CHECK_INT(lines, 1);
	CHECK_LOGGED(kms->path, "the device is gone", "No such device");
	CHECK(!crtc->state->active);
	CHECK(!events[n_events - 1].presented);
	CHECK_INT(kms->scanout_fbs, 0);
	CHECK_INT(kms->dev.live_states, 0);
	harness_log_clear();
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 3), -ENODEV);
	CHECK_LOGGED(kms->path, "the device is gone", "refused");
	CHECK_INT(kms->scanout_fbs, 0);
	wla_fb_put(&a->base);
	teardown();
}

/*
 * (cold review of issue 28) A CRTC turned off by DPMS (enabled, inactive)
 * when the device goes: its connector is unrouted and its planes let go of
 * their framebuffers, as for an active one.
 */
static void device_lost_while_dpms_off(void)
{
	if (!setup_output()) {
		return;
	}
	struct dumb_fb *a = full_fb(0xff445566u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, preferred(), &a->base, 1), 0);
	CHECK(wait_events(1));
	struct wla_atomic_state *state = wla_atomic_state_alloc(&kms->dev);
	state->allow_modeset = true;
	wla_atomic_get_crtc_state(state, crtc)->active = false;
	int ret = wla_atomic_commit(state);
	CHECK_INT(ret, 0);
	if (ret < 0) {
		wla_atomic_state_free(state);
	}
	CHECK(crtc->state->enable && !crtc->state->active);
	CHECK(conn->base.state->crtc == crtc);
	CHECK_INT(kms->scanout_fbs, 1);
	wla_kms_device_lost(kms, -ENODEV);
	CHECK(!crtc->state->enable);
	CHECK(conn->base.state->crtc == NULL);
	CHECK(crtc->primary->state->fb == NULL);
	CHECK_INT(kms->scanout_fbs, 0);
	CHECK_INT(kms->dev.live_states, 0);
	wla_fb_put(&a->base);
	teardown();
}

/*
 * The session that opened the card ends (its seat's session goes with the
 * display) while an output is on: the CRTC goes off while the fd is still
 * open. A card opened directly stays the driver's; one the seat held is
 * closed with it, and the driver touches its fd no more. The session's
 * signal is emitted here as backend/session emits it.
 */
static void session_end_turns_the_outputs_off(void)
{
	if (!setup_output()) {
		return;
	}
	struct wla_card *card = kms->card;
	struct dumb_fb *a = full_fb(0xff445566u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, preferred(), &a->base, 1), 0);
	CHECK(wait_events(1));
	harness_log_clear();
	wl_signal_emit(&card->events.session_end, card);
	CHECK_LOGGED(kms->path, "the seat's session ended", "every CRTC off", "still open");
	CHECK(!crtc->state->active);
	CHECK(!kms->lost);
	CHECK_INT(kms->fd, card->fd);
	CHECK_INT(kms->scanout_fbs, 0);
	uint32_t fb_id, crtc_id;
	kernel_plane(crtc->primary, &fb_id, &crtc_id);
	CHECK_INT(fb_id, 0);
	/* Again, as if the seat held the fd: it is closed right after. */
	card->through_seat = true;
	harness_log_clear();
	wl_signal_emit(&card->events.session_end, card);
	card->through_seat = false; /* the session closes the real fd */
	CHECK_LOGGED(kms->path, "the seat's session ended", "closed with it");
	CHECK(kms->lost);
	CHECK_INT(kms->fd, -1);
	CHECK_INT(kms->dev.drm_fd, -1);
	harness_log_clear();
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, preferred(), &a->base, 2), -ENODEV);
	CHECK_LOGGED(kms->path, "the device is gone", "refused");
	wla_fb_put(&a->base);
	teardown();
}

static void on_capture(struct wla_capture *cap, const struct wla_image *image, uint64_t seq,
	void *data)
{
	*(bool *)data = image != NULL;
}

/* Capture needs a writeback connector: on a card with one it returns the
 * frame, on a card without (vkms enable_writeback=0) it is refused with a
 * clear message while the output keeps working. */
static void capture_and_writeback(void)
{
	if (!setup_output()) {
		return;
	}
	const struct wla_mode *mode = preferred();
	struct dumb_fb *a = full_fb(0xff123456u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 1), 0);
	CHECK(wait_events(1));
	bool got = false;
	harness_log_clear();
	struct wla_capture *cap = kms->dev.capture_funcs->capture(&kms->dev, crtc, on_capture, &got);
	if (kms->has_writeback) {
		CHECK(cap != NULL);
		for (int i = 0; cap && i < 200 && !got; i++) {
			wla_kms_dispatch(kms, 10);
		}
		CHECK(got);
	} else {
		printf("  the card has no writeback connector\n");
		CHECK(cap == NULL);
		CHECK_LOGGED("capture refused", crtc->name, "the card has no writeback connector");
		/* The output goes on. */
		CHECK_INT(commit_primary(&a->base, 2), 0);
		CHECK(wait_events(1));
		CHECK(events[n_events - 1].presented);
	}
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	CHECK_INT(kms->scanout_fbs, 0);
	wla_fb_put(&a->base);
	teardown();
}

/* The device goes away while the driver programs a queued frame from
 * inside a page-flip event (the kernel answers ENODEV, injected): the
 * frame is reported failed, the CRTC goes off, one error; no state is
 * touched after the core freed it (AddressSanitizer watches). */
static void device_lost_inside_latch(void)
{
	if (!setup_output()) {
		return;
	}
	crtc->queue_depth = 2;
	const struct wla_mode *mode = preferred();
	struct dumb_fb *a = full_fb(0xff101010u);
	struct dumb_fb *b = full_fb(0xff202020u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 1), 0);
	CHECK(wait_events(1));
	CHECK_INT(commit_primary(&b->base, 2), 0); /* armed */
	CHECK_INT(commit_primary(&a->base, 3), 0); /* waiting behind it */
	kms->fail_commit = ENODEV;
	harness_log_clear();
	CHECK(wait_events(2));
	for (int i = 0; i < 10; i++) {
		wla_kms_dispatch(kms, 10);
	}
	CHECK(n_events >= 3 && events[1].presented && events[1].commit_seq == 2);
	CHECK(n_events >= 3 && !events[2].presented && events[2].commit_seq == 3);
	CHECK(!crtc->state->active);
	CHECK(kms->lost);
	int lines = 0;
	for (int i = 0; i < harness_log_n; i++) {
		lines += strstr(harness_log[i], "the device is gone") != NULL;
	}
	CHECK_INT(lines, 1);
	CHECK_INT(kms->scanout_fbs, 0);
	CHECK_INT(kms->dev.live_states, 0);
	wla_fb_put(&a->base);
	wla_fb_put(&b->base);
	teardown();
}

/* Captures asked for while a flip is in flight, and a second while the
 * first one's writeback runs, on an output that then draws nothing more:
 * each is served (the driver commits on its own once the CRTC is free). */
static void capture_on_a_static_output(void)
{
	setup();
	if (!crtc || !kms->has_writeback) {
		printf("  no writeback connector: nothing to check\n");
		teardown();
		return;
	}
	const struct wla_mode *mode = preferred();
	struct dumb_fb *a = full_fb(0xff303030u);
	struct dumb_fb *b = full_fb(0xff404040u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 1), 0);
	CHECK(wait_events(1));
	CHECK_INT(commit_primary(&b->base, 2), 0); /* in flight */
	bool got1 = false, got2 = false, asked2 = false;
	CHECK(kms->dev.capture_funcs->capture(&kms->dev, crtc, on_capture, &got1) != NULL);
	for (int i = 0; i < 300 && !got1; i++) {
		wla_kms_dispatch(kms, 10);
		if (kms->wb_job && !asked2) {
			/* The first one's writeback is out: a second one now. */
			asked2 = true;
			CHECK(kms->dev.capture_funcs->capture(&kms->dev, crtc, on_capture, &got2) != NULL);
		}
	}
	CHECK(asked2);
	for (int i = 0; i < 300 && !got2; i++) {
		wla_kms_dispatch(kms, 10);
	}
	CHECK(got1);
	CHECK(got2);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	CHECK_INT(kms->scanout_fbs, 0);
	wla_fb_put(&a->base);
	wla_fb_put(&b->base);
	teardown();
}

/* The kernel's value of a CRTC property (0 if it has none). */
static uint64_t crtc_prop(const char *name)
{
	int64_t v = object_prop(wla_kms_crtc_from_crtc(crtc)->id, DRM_MODE_OBJECT_CRTC, name);
	return v < 0 ? 0 : (uint64_t)v;
}

struct pixel_capture {
	bool done;
	uint32_t pixel;
};

static void on_pixel_capture(struct wla_capture *cap, const struct wla_image *image,
	uint64_t seq, void *data)
{
	struct pixel_capture *pc = data;
	pc->done = true;
	pc->pixel = image ? wla_image_pixel(image, 3, 3) & 0xffffff : 0xdeadbeef;
}

/* The writeback's pixel at 3,3 of the next frame (0xdeadbeef: none). */
static uint32_t captured_pixel(void)
{
	struct pixel_capture pc = { 0 };
	if (!kms->dev.capture_funcs->capture(&kms->dev, crtc, on_pixel_capture, &pc)) {
		return 0xdeadbeef;
	}
	for (int i = 0; i < 300 && !pc.done; i++) {
		wla_kms_dispatch(kms, 10);
	}
	return pc.done ? pc.pixel : 0xdeadbeef;
}

static int commit_gamma(struct wla_fb *fb, struct wla_gamma_lut *lut, uint64_t seq)
{
	struct wla_crtc_state *cs;
	struct wla_atomic_state *state = frame_state(fb, seq, &cs, NULL);
	wla_crtc_state_set_gamma(cs, lut);
	return frame_commit(state);
}

/*
 * Gamma: on a CRTC with GAMMA_LUT (vkms as the tier builds it) a LUT goes
 * out with the frame as one blob, made once for a LUT the states keep, and
 * the kernel's GAMMA_LUT holds its entries; the writeback shows it applied;
 * none resets the property to 0. On a CRTC without one a LUT is refused,
 * saying so.
 */
static void gamma_lut_through_the_kernel(void)
{
	if (!setup_output()) {
		return;
	}
	struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(crtc);
	const struct wla_mode *mode = preferred();
	struct dumb_fb *a = full_fb(0xff4080c0u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 1), 0);
	CHECK(wait_events(1));
	uint32_t size = crtc->gamma_size ? crtc->gamma_size : 256;
	uint16_t *r = calloc(size, sizeof(uint16_t)), *g = calloc(size, sizeof(uint16_t)),
		*b = calloc(size, sizeof(uint16_t));
	for (uint32_t i = 0; i < size; i++) {
		r[i] = (uint16_t)(i * 0xffffu / (size - 1));
		b[i] = (uint16_t)((size - 1 - i) * 0xffffu / (size - 1));
	}
	struct wla_gamma_lut *lut = wla_gamma_lut_create(size, r, g, b);
	printf("  %s: gamma_size %" PRIu32 "\n", crtc->name, crtc->gamma_size);
	if (crtc->gamma_size == 0) {
		harness_log_clear();
		CHECK_INT(commit_gamma(&a->base, lut, 2), -EINVAL);
		CHECK_LOGGED(crtc->name, "the CRTC has no gamma LUT");
		CHECK_INT(crtc_prop("GAMMA_LUT"), 0);
	} else {
		CHECK_INT(commit_gamma(&a->base, lut, 2), 0);
		CHECK(wait_events(1));
		CHECK_INT(commit_gamma(&a->base, lut, 3), 0);
		CHECK(wait_events(1));
		CHECK_INT(kc->n_gamma_blobs, 1);
		uint64_t blob_id = crtc_prop("GAMMA_LUT");
		CHECK(blob_id != 0);
		drmModePropertyBlobRes *blob = blob_id ?
			drmModeGetPropertyBlob(kms->fd, (uint32_t)blob_id) : NULL;
		CHECK(blob && blob->length == size * sizeof(struct drm_color_lut));
		if (blob && blob->length == size * sizeof(struct drm_color_lut)) {
			const struct drm_color_lut *e = blob->data;
			bool same = true;
			for (uint32_t i = 0; i < size; i++) {
				same = same && e[i].red == r[i] && e[i].green == 0 && e[i].blue == b[i];
			}
			CHECK(same);
		}
		drmModeFreePropertyBlob(blob);
		if (kms->has_writeback && size == 256) {
			/* 0x40 as it is, no green, 0xc0 inverted. */
			CHECK_INT(captured_pixel(), 0x40003f);
		}
		CHECK_INT(commit_gamma(&a->base, NULL, 4), 0);
		CHECK(wait_events(1));
		CHECK_INT(crtc_prop("GAMMA_LUT"), 0);
		if (kms->has_writeback) {
			CHECK_INT(captured_pixel(), 0x4080c0);
		}
	}
	wla_gamma_lut_put(lut);
	free(r);
	free(g);
	free(b);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	wla_fb_put(&a->base);
	teardown();
}

/* Adaptive sync: on a vrr_capable connector (vkms as the tier builds it)
 * VRR_ENABLED follows the state, with the frame; elsewhere refused,
 * saying so. */
static void vrr_through_the_kernel(void)
{
	if (!setup_output()) {
		return;
	}
	const struct wla_mode *mode = preferred();
	struct dumb_fb *a = full_fb(0xff204060u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 1), 0);
	CHECK(wait_events(1));
	printf("  %s: vrr_capable %d\n", conn->base.name, conn->base.vrr_capable);
	/* No "panel orientation" property: mounted upright. */
	CHECK_INT(conn->base.orientation, WLA_ORIENTATION_NORMAL);
	struct wla_atomic_state *state = wla_atomic_state_alloc(&kms->dev);
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	cs->vrr_enabled = true;
	cs->commit_seq = 2;
	if (!conn->base.vrr_capable) {
		harness_log_clear();
		CHECK_INT(wla_atomic_nonblocking_commit(state), -EINVAL);
		wla_atomic_state_free(state);
		CHECK_LOGGED(crtc->name, "adaptive sync asked for, but connector", "is not "
			"vrr_capable");
		CHECK_INT(crtc_prop("VRR_ENABLED"), 0);
	} else {
		CHECK_INT(wla_atomic_nonblocking_commit(state), 0);
		CHECK_INT(commit_primary(&a->base, 3), 0);
		CHECK(wait_events(1));
		CHECK_INT(crtc_prop("VRR_ENABLED"), 1);
		state = wla_atomic_state_alloc(&kms->dev);
		cs = wla_atomic_get_crtc_state(state, crtc);
		cs->vrr_enabled = false;
		CHECK_INT(wla_atomic_nonblocking_commit(state), 0);
		CHECK_INT(commit_primary(&a->base, 4), 0);
		CHECK(wait_events(1));
		CHECK_INT(crtc_prop("VRR_ENABLED"), 0);
	}
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	wla_fb_put(&a->base);
	teardown();
}

/* FB_DAMAGE_CLIPS: a frame's damage goes to the kernel as the plane's clips
 * (vkms as the tier builds it keeps them in the plane state); a frame
 * without damage clears them. */
static void damage_clips_through_the_kernel(void)
{
	if (!setup_output()) {
		return;
	}
	struct wla_kms_plane *kp = crtc->primary->driver_data;
	const struct wla_mode *mode = preferred();
	struct dumb_fb *a = full_fb(0xff112233u), *b = full_fb(0xff332211u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 1), 0);
	CHECK(wait_events(1));
	printf("  %s: FB_DAMAGE_CLIPS %s\n", crtc->primary->name,
		kp->props.fb_damage_clips ? "yes" : "no");
	if (!kp->props.fb_damage_clips) {
		CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
		wla_fb_put(&a->base);
		wla_fb_put(&b->base);
		teardown();
		return;
	}
	struct wla_plane_state *ps;
	struct wla_atomic_state *state = frame_state(&b->base, 2, NULL, &ps);
	const struct wla_rect damage[2] = { { 10, 20, 30, 40 }, { 100, 5, 8, 9 } };
	wla_plane_state_set_damage(ps, damage, 2);
	CHECK_INT(frame_commit(state), 0);
	CHECK(wait_events(1));
	int64_t blob_id = object_prop(kp->id, DRM_MODE_OBJECT_PLANE, "FB_DAMAGE_CLIPS");
	drmModePropertyBlobRes *blob = blob_id > 0 ?
		drmModeGetPropertyBlob(kms->fd, (uint32_t)blob_id) : NULL;
	CHECK(blob && blob->length == 2 * sizeof(struct drm_mode_rect));
	if (blob && blob->length == 2 * sizeof(struct drm_mode_rect)) {
		const struct drm_mode_rect *r = blob->data;
		CHECK(r[0].x1 == 10 && r[0].y1 == 20 && r[0].x2 == 40 && r[0].y2 == 60);
		CHECK(r[1].x1 == 100 && r[1].y1 == 5 && r[1].x2 == 108 && r[1].y2 == 14);
	}
	drmModeFreePropertyBlob(blob);
	/* Without damage: none. */
	CHECK_INT(commit_primary(&a->base, 3), 0);
	CHECK(wait_events(1));
	CHECK_INT(object_prop(kp->id, DRM_MODE_OBJECT_PLANE, "FB_DAMAGE_CLIPS"), 0);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	wla_fb_put(&a->base);
	wla_fb_put(&b->base);
	teardown();
}

/*
 * A writeback the display engine never completes (injected: as vkms'
 * composer drops one under load): given
 * up once overdue, its capture rides on the next frame; given up three
 * times in a row, the capture fails with one error line. Nothing hangs.
 */
static void a_stalled_writeback_is_given_up(void)
{
	setup();
	if (!crtc || !kms->has_writeback) {
		printf("  no writeback connector: nothing to check\n");
		teardown();
		return;
	}
	const struct wla_mode *mode = preferred();
	struct dumb_fb *a = full_fb(0xff505050u);
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, mode, &a->base, 1), 0);
	CHECK(wait_events(1));
	/* Long enough for vkms' composer under TCG, short enough for a test. */
	kms->wb_stall_ms = 1000;
	uint64_t seq = 2;
	for (int round = 0; round < 2; round++) {
		/* round 0: one stall, then served; round 1: three, then failed. */
		int stalls = round == 0 ? 1 : WLA_KMS_WB_STALLS_MAX;
		struct pixel_capture pc = { 0 };
		uint64_t before = kms->wb_stalls_total;
		harness_log_clear();
		kms->fail_writebacks = (unsigned)stalls;
		CHECK(kms->dev.capture_funcs->capture(&kms->dev, crtc, on_pixel_capture, &pc) != NULL);
		for (int i = 0; i < 2000 && !pc.done; i++) {
			CHECK_INT(commit_primary(&a->base, seq++), 0);
			CHECK(wait_events(1));
		}
		CHECK_INT(kms->fail_writebacks, 0);
		CHECK(pc.done);
		CHECK_INT(kms->wb_stalls_total - before, (uint64_t)stalls);
		CHECK_LOGGED("writeback of commit", "not done after 1000 ms");
		if (round == 0) {
			CHECK_INT(pc.pixel, 0x505050);
		} else {
			CHECK_INT(pc.pixel, 0xdeadbeef);
			CHECK_LOGGED("its captures fail");
		}
	}
	CHECK_INT(wla_atomic_set_config(crtc, &conn->base, NULL, NULL, 0), 0);
	wla_fb_put(&a->base);
	teardown();
}

/* Bad devices: a path that is no DRM device, one that does not exist (the
 * session refuses them, naming the path); the driver handed an fd that is
 * no card, or a card's fd already closed, refuses it naming the fd. */
static void bad_devices(void)
{
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.driver = WLA_DRIVER_KMS;
	snprintf(cfg.drm_device, sizeof(cfg.drm_device), "/dev/null");
	harness_log_clear();
	CHECK(kms_open(&cfg) == NULL);
	CHECK_LOGGED("session: drm-device /dev/null", "not a KMS device");
	snprintf(cfg.drm_device, sizeof(cfg.drm_device), "/dev/dri/card99");
	harness_log_clear();
	CHECK(kms_open(&cfg) == NULL);
	CHECK_LOGGED("session: drm-device /dev/dri/card99", "cannot open it", "No such file");

	/* The session's card, its fd swapped for /dev/null's, then closed. */
	struct wla_session *session = wla_session_create(NULL, NULL);
	cfg.drm_device[0] = '\0';
	struct wla_card *card = session ? wla_session_open_card(session, &cfg) : NULL;
	CHECK(card != NULL);
	if (!card) {
		wla_session_destroy(session);
		return;
	}
	int card_fd = card->fd;
	card->fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	char fd_name[32];
	snprintf(fd_name, sizeof(fd_name), "fd %d", card->fd);
	harness_log_clear();
	CHECK(wla_kms_create(NULL, card) == NULL);
	CHECK_LOGGED(card->path, fd_name, "not a KMS device", "Inappropriate ioctl");
	close(card->fd);
	card->fd = -1;
	harness_log_clear();
	CHECK(wla_kms_create(NULL, card) == NULL);
	CHECK_LOGGED(card->path, "fd -1", "not a KMS device", "Bad file descriptor");
	/* Its own fd again: the driver takes it. */
	card->fd = card_fd;
	struct wla_kms *good = wla_kms_create(NULL, card);
	CHECK(good != NULL);
	wla_kms_destroy(good);
	wla_session_destroy(session);
}

/* The JSON the enumeration test compares with drm_info's. */
static int dump(void)
{
	kms = open_kms();
	if (!kms) {
		return 1;
	}
	printf("{\"driver\": \"%s\", \"crtcs\": [", kms->driver_name);
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		printf("%s%" PRIu32, c ? ", " : "", kms->crtcs[c].id);
	}
	printf("], \"planes\": [");
	for (size_t i = 0; i < kms->n_planes; i++) {
		struct wla_kms_plane *p = &kms->planes[i];
		static const char *types[] = { "primary", "cursor", "overlay" };
		printf("%s{\"id\": %" PRIu32 ", \"type\": \"%s\", \"possible_crtcs\": %" PRIu32
			", \"formats\": [", i ? ", " : "", p->id, types[p->base.type],
			p->base.possible_crtcs);
		bool first = true;
		for (size_t f = 0; f < p->base.n_formats; f++) {
			const struct wla_format *fmt = &p->base.formats[f];
			for (size_t m = 0; m < fmt->n_modifiers; m++) {
				if (fmt->modifiers[m] == DRM_FORMAT_MOD_INVALID) {
					continue;
				}
				printf("%s[%" PRIu32 ", %" PRIu64 "]", first ? "" : ", ", fmt->format,
					fmt->modifiers[m]);
				first = false;
			}
		}
		printf("]}");
	}
	printf("], \"connectors\": [");
	for (size_t i = 0; i < kms->n_connectors; i++) {
		struct wla_kms_connector *kc = kms->connectors[i];
		printf("%s{\"id\": %" PRIu32 ", \"name\": \"%s\", \"connected\": %s, "
			"\"phys\": [%" PRIu32 ", %" PRIu32 "], \"modes\": [", i ? ", " : "", kc->id,
			kc->base.name, kc->base.status == WLA_CONNECTOR_CONNECTED ? "true" : "false",
			kc->base.phys_width_mm, kc->base.phys_height_mm);
		for (size_t m = 0; m < kc->base.n_modes; m++) {
			const struct wla_mode *mode = &kc->base.modes[m];
			printf("%s[%" PRId32 ", %" PRId32 ", %" PRIu32 ", %s]", m ? ", " : "",
				mode->width, mode->height, mode->clock_khz,
				mode->preferred ? "true" : "false");
		}
		printf("]}");
	}
	printf("], \"writeback\": %s, \"cursor\": [%" PRIu32 ", %" PRIu32 "]}\n",
		kms->has_writeback ? "true" : "false", kms->cursor_width, kms->cursor_height);
	kms_close(kms);
	return 0;
}

static bool have_card(void)
{
	return getenv("WLA_TEST_DRM_DEVICE") || test_have_dri_card();
}

int main(int argc, char **argv)
{
	harness_init();
	if (argc > 1 && strcmp(argv[1], "--dump") == 0) {
		wlr_log_init(WLR_ERROR, NULL);
		return dump();
	}
	RUN_TEST(bad_devices);
	if (!have_card()) {
		harness_skip("no DRM card (/dev/dri/card*): the kernel tier runs this on vkms");
	}
	if (argc > 2 && strcmp(argv[1], "--orientation") == 0) {
		/* vkms loaded with panel_orientation=N: the connector says it. */
		setup();
		CHECK(conn != NULL);
		if (conn) {
			printf("  %s: orientation %d\n", conn->base.name, (int)conn->base.orientation);
			CHECK_INT(conn->base.orientation, atoi(argv[2]));
		}
		teardown();
		HARNESS_EXIT();
	}
	if (argc > 1 && strcmp(argv[1], "--clone") == 0) {
		/* vkms with extra_connectors=1: two connectors, one CRTC. */
		RUN_TEST(a_cloned_console_keeps_one_connector);
		HARNESS_EXIT();
	}
	if (argc > 1 && strcmp(argv[1], "--colour") == 0) {
		/* Cards other than vkms: gamma and adaptive sync alone, and a
		 * session switch on a simple display pipe (cirrus). */
		colour_only = true;
		RUN_TEST(a_session_switch_before_the_first_frame);
		RUN_TEST(gamma_lut_through_the_kernel);
		RUN_TEST(vrr_through_the_kernel);
		HARNESS_EXIT();
	}
	RUN_TEST(what_the_console_left_lit_is_kept);
	RUN_TEST(a_session_switch_before_the_first_frame);
	RUN_TEST(enumeration);
	RUN_TEST(modeset_and_flips);
	RUN_TEST(mode_change);
	RUN_TEST(next_latch_follows_the_queue);
	RUN_TEST(cursor_and_overlay);
	RUN_TEST(test_only_refusals);
	RUN_TEST(refused_mid_run);
	RUN_TEST(unplug_while_on);
	RUN_TEST(sequences_go_on_across_a_switch_that_turned_the_crtc_off);
	RUN_TEST(latches_a_refused_commit_read_are_told_from_the_loop);
	RUN_TEST(link_status_bad_is_told_and_a_modeset_trains_it);
	RUN_TEST(a_monitor_swapped_while_connected_comes_back_with_its_modes);
	RUN_TEST(device_lost);
	RUN_TEST(device_lost_while_dpms_off);
	RUN_TEST(session_end_turns_the_outputs_off);
	RUN_TEST(capture_and_writeback);
	RUN_TEST(device_lost_inside_latch);
	RUN_TEST(capture_on_a_static_output);
	RUN_TEST(gamma_lut_through_the_kernel);
	RUN_TEST(vrr_through_the_kernel);
	RUN_TEST(damage_clips_through_the_kernel);
	RUN_TEST(a_stalled_writeback_is_given_up);
	HARNESS_EXIT();
}
