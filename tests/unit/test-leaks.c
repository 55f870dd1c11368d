/*
 * What the glue keeps while a compositor churns (issue 28): custom modes
 * committed one after another, connectors plugged and unplugged with a
 * frame shown on each. Nothing may pile up while the backend lives.
 */
#include <drm_fourcc.h>
#include <malloc.h>
#include <stdlib.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/interfaces/wlr_output.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_output.h>
#include <wlatomic/backend.h>
#include <wlatomic/config.h>
#include "backend/atomic.h"
#include "backend/wlr.h"
#include "harness.h"
#include "lib/backend.h"
#include "test-buffer.h"

#define W 64
#define H 48
/* backend/wlr/output.c's WLA_OUTPUT_CUSTOM_MODES_MAX. */
#define CUSTOM_MODES_MAX 8
#define PLUG_NAME "LEAK-1"

struct lf {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wl_listener new_output;
	struct wlr_output *first, *plugged;
	struct wl_listener plugged_destroy;
	int created, destroyed;
};

static void handle_plugged_destroy(struct wl_listener *listener, void *data)
{
	struct lf *f = wl_container_of(listener, f, plugged_destroy);
	wl_list_remove(&f->plugged_destroy.link);
	f->plugged = NULL;
	f->destroyed++;
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	struct lf *f = wl_container_of(listener, f, new_output);
	struct wlr_output *wo = data;
	f->created++;
	if (!f->first) {
		f->first = wo;
		return;
	}
	f->plugged = wo;
	f->plugged_destroy.notify = handle_plugged_destroy;
	wl_signal_add(&wo->events.destroy, &f->plugged_destroy);
}

static bool lf_init(struct lf *f)
{
	memset(f, 0, sizeof(*f));
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
	cfg.outputs[0].n_modes = 1;
	f->new_output.notify = handle_new_output;
	f->backend = test_backend_create(&f->display, &f->loop, &cfg, &f->new_output);
	if (!f->backend) {
		return false;
	}
	return wlr_backend_start(f->backend) && f->first != NULL;
}

static void lf_finish(struct lf *f)
{
	if (f->plugged) {
		wl_list_remove(&f->plugged_destroy.link);
	}
	wl_list_remove(&f->new_output.link);
	wl_display_destroy(f->display);
}

/* Nothing queued on the output's CRTC: its last frame latched. */
static bool settled(struct wlr_output *wo)
{
	struct wla_output *out = wl_container_of(wo, out, base);
	return out->crtc->queued == 0;
}

/* One frame of w x h on wo (its mode set by the caller), shown. */
static bool show_frame(struct lf *f, struct wlr_output *wo, int w, int h)
{
	/* Freed once the frame after it latched: nothing here to tell. */
	struct test_buffer *buf = test_buffer_create(w, h, DRM_FORMAT_XRGB8888, 0xff204060,
		NULL);
	wlr_output_enable(wo, true);
	wlr_output_attach_buffer(wo, &buf->base);
	bool ok = wlr_output_commit(wo);
	wlr_buffer_drop(&buf->base);
	return ok && HARNESS_WAIT_UNTIL(f->loop, settled(wo), 2000);
}

static bool in_list(struct wlr_output *wo, const struct wlr_output_mode *mode)
{
	struct wlr_output_mode *m;
	wl_list_for_each(m, &wo->modes, link) {
		if (m == mode) {
			return true;
		}
	}
	return false;
}

static struct wlr_output_mode *mode_of_width(struct wlr_output *wo, int32_t width)
{
	struct wlr_output_mode *m;
	wl_list_for_each(m, &wo->modes, link) {
		if (m->width == width) {
			return m;
		}
	}
	return NULL;
}

/*
 * A compositor that gives an output a new custom size again and again (a
 * nested or VNC output following a window) had every one of them kept in
 * the output's list until the output went. The list now keeps the last
 * CUSTOM_MODES_MAX: past that, the oldest entry that is not current is
 * reused in place (never freed: wlroots' output management keeps pointers
 * to the entries), the connector's own modes stay, and the current mode is
 * always an entry of the list.
 */
static void custom_modes_do_not_accumulate_in_the_output_list(void)
{
	struct lf f;
	CHECK(lf_init(&f));
	struct wlr_output *wo = f.first;
	struct wlr_output_mode *listed = wlr_output_preferred_mode(wo);
	CHECK(listed != NULL);
	const struct wlr_output_mode *entries[CUSTOM_MODES_MAX] = { 0 };
	const int rounds = 3 * CUSTOM_MODES_MAX;
	for (int i = 0; i < rounds && !harness_test_failures; i++) {
		int32_t w = 80 + 8 * i;
		wlr_output_set_custom_mode(wo, w, 60, 60000);
		CHECK(show_frame(&f, wo, w, 60));
		int kept = i + 1 < CUSTOM_MODES_MAX ? i + 1 : CUSTOM_MODES_MAX;
		if (wl_list_length(&wo->modes) != 1 + kept) {
			fprintf(stderr, "  output %s: after custom mode %d (width %d) the list "
				"holds %d modes, want %d\n", wo->name, i, w,
				wl_list_length(&wo->modes), 1 + kept);
			harness_test_failures++;
		}
		CHECK(wo->current_mode != NULL && in_list(wo, wo->current_mode));
		CHECK_INT(wo->current_mode->width, w);
		CHECK(in_list(wo, listed));
		if (i < CUSTOM_MODES_MAX) {
			entries[i] = wo->current_mode;
			continue;
		}
		/* Reused, not freed and allocated again. */
		bool known = false;
		for (size_t k = 0; k < CUSTOM_MODES_MAX; k++) {
			known = known || entries[k] == wo->current_mode;
		}
		CHECK(known);
		/* The one before is still there: the oldest goes first. */
		CHECK(mode_of_width(wo, w - 8) != NULL);
	}
	/* A kept custom mode committed again is the same entry. */
	int32_t again = 80 + 8 * (rounds - 2);
	struct wlr_output_mode *before = mode_of_width(wo, again);
	CHECK(before != NULL);
	wlr_output_set_custom_mode(wo, again, 60, 60000);
	CHECK(show_frame(&f, wo, again, 60));
	CHECK(wo->current_mode == before);
	CHECK_INT(wl_list_length(&wo->modes), 1 + CUSTOM_MODES_MAX);
	/* And the connector's mode is still there to go back to. */
	wlr_output_set_mode(wo, listed);
	CHECK(show_frame(&f, wo, W, H));
	CHECK(wo->current_mode == listed);
	lf_finish(&f);
}

#if !defined(__SANITIZE_ADDRESS__)
/* One plug, a frame on the new output, an unplug: whether it all worked. */
static bool plug_cycle(struct lf *f)
{
	const struct wla_config_mode modes[] = { { W, H, 60000 }, { 32, 24, 75000 } };
	int created = f->created, destroyed = f->destroyed;
	if (wla_backend_plug_connector(f->backend, PLUG_NAME, modes, 2) != 0 ||
			!HARNESS_WAIT_UNTIL(f->loop, f->created > created, 2000) || !f->plugged) {
		return false;
	}
	wlr_output_set_mode(f->plugged, wlr_output_preferred_mode(f->plugged));
	if (!show_frame(f, f->plugged, W, H)) {
		return false;
	}
	return wla_backend_unplug_connector(f->backend, PLUG_NAME) == 0 &&
		HARNESS_WAIT_UNTIL(f->loop, f->destroyed > destroyed, 2000);
}
#endif

/*
 * The heap in use (glibc's count of allocated bytes) after a run of
 * plug/frame/unplug cycles is what it was after the first ones: a plugged
 * output gives back all it took (connector, CRTC, planes, states, fbs,
 * modes, wlroots' output). Where malloc is not glibc's own (a sanitizer's),
 * its count means nothing and the test says so.
 */
static void plugging_and_unplugging_gives_the_heap_back(void)
{
#if defined(__SANITIZE_ADDRESS__)
	printf("  skipped: AddressSanitizer's malloc keeps no glibc counts (its leak check at "
		"exit covers this build)\n");
	return;
#else
	struct lf f;
	CHECK(lf_init(&f));
	wlr_output_set_mode(f.first, wlr_output_preferred_mode(f.first));
	CHECK(show_frame(&f, f.first, W, H));
	const int warm = 20, cycles = 200;
	/* A leak of 16 bytes a cycle would show: 200 cycles, 3200 bytes. */
	const size_t allowed = 3000;
	for (int i = 0; i < warm; i++) {
		CHECK(plug_cycle(&f));
	}
	size_t before = mallinfo2().uordblks;
	for (int i = 0; i < cycles && !harness_test_failures; i++) {
		CHECK(plug_cycle(&f));
	}
	size_t after = mallinfo2().uordblks;
	CHECK_INT(f.destroyed, warm + cycles);
	if (after > before + allowed) {
		fprintf(stderr, "  heap in use: %zu bytes after %d cycles, %zu after %d more: "
			"%+zd (allowed %zu)\n", before, warm, after, cycles,
			(ssize_t)(after - before), allowed);
		harness_test_failures++;
	}
	lf_finish(&f);
#endif
}

int main(void)
{
	harness_init();
	RUN_TEST(custom_modes_do_not_accumulate_in_the_output_list);
	RUN_TEST(plugging_and_unplugging_gives_the_heap_back);
	HARNESS_EXIT();
}
