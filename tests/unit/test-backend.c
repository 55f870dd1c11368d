/*
 * The wlroots glue with real wlr_outputs and wlr_buffers: commits, present
 * and frame events at real vblanks, refused buffers, buffer lifetimes.
 */
#include <drm_fourcc.h>
#include <stdlib.h>
#include <time.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/backend/multi.h>
#include <wlr/interfaces/wlr_output.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_output.h>
#include <wlatomic/backend.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include "harness.h"
#include "lib/capture.h"
#include "test-buffer.h"

#define W 64
#define H 48

struct fixture {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wlr_output *output;
	struct wl_listener new_output;
	struct wl_listener present;
	struct wl_listener frame;
	int presents, presented, not_presented, frames;
	struct wlr_output_event_present last_present;
	struct timespec last_when;
	struct test_capture cap;
};

static void handle_present(struct wl_listener *listener, void *data)
{
	struct fixture *f = wl_container_of(listener, f, present);
	const struct wlr_output_event_present *ev = data;
	f->presents++;
	if (ev->presented) {
		f->presented++;
		f->last_when = *ev->when;
	} else {
		f->not_presented++;
	}
	f->last_present = *ev;
}

static void handle_frame(struct wl_listener *listener, void *data)
{
	struct fixture *f = wl_container_of(listener, f, frame);
	f->frames++;
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	struct fixture *f = wl_container_of(listener, f, new_output);
	f->output = data;
	f->present.notify = handle_present;
	wl_signal_add(&f->output->events.present, &f->present);
	f->frame.notify = handle_frame;
	wl_signal_add(&f->output->events.frame, &f->frame);
}

static bool fixture_init(struct fixture *f, struct wlr_backend *(*wrap)(struct fixture *f,
	struct wlr_backend *wla))
{
	memset(f, 0, sizeof(*f));
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
	cfg.outputs[0].modes[1] = (struct wla_config_mode){ 32, 32, 30000 };
	cfg.outputs[0].n_modes = 2;
	f->display = wl_display_create();
	f->loop = wl_display_get_event_loop(f->display);
	struct wlr_backend *wla = wla_backend_create(f->display, &cfg);
	if (!wla) {
		return false;
	}
	f->backend = wrap ? wrap(f, wla) : wla;
	f->new_output.notify = handle_new_output;
	wl_signal_add(&f->backend->events.new_output, &f->new_output);
	return wlr_backend_start(f->backend) && f->output;
}

static void fixture_finish(struct fixture *f)
{
	if (f->output) {
		wl_list_remove(&f->present.link);
		wl_list_remove(&f->frame.link);
	}
	wl_list_remove(&f->new_output.link);
	wla_image_destroy(f->cap.image);
	wl_display_destroy(f->display);
}

/* Run the event loop until *counter reaches want, 2 s at most (scaled). */
static bool wait_for(struct fixture *f, const int *counter, int want)
{
	return HARNESS_WAIT_UNTIL(f->loop, *counter >= want, 2000);
}

static bool enable_output(struct fixture *f, struct wlr_buffer *buffer)
{
	wlr_output_set_mode(f->output, wlr_output_preferred_mode(f->output));
	wlr_output_enable(f->output, true);
	if (buffer) {
		wlr_output_attach_buffer(f->output, buffer);
	}
	return wlr_output_commit(f->output);
}

static bool commit_buffer(struct fixture *f, struct wlr_buffer *buffer)
{
	wlr_output_attach_buffer(f->output, buffer);
	return wlr_output_commit(f->output);
}

static void capture_next(struct fixture *f)
{
	test_capture_reset(&f->cap);
	CHECK(wla_output_capture(f->output, test_capture_done, &f->cap) != NULL);
	CHECK(HARNESS_WAIT_UNTIL(f->loop, f->cap.done, 2000));
}

static void bad_config_in_environment_gives_null_and_one_error(void)
{
	setenv("WLA_OUTPUTS", "abc", 1);
	struct wl_display *display = wl_display_create();
	struct wlr_backend *backend = wla_backend_create(display, NULL);
	CHECK(backend == NULL);
	CHECK_LOGGED("WLA_OUTPUTS", "'abc'");
	unsetenv("WLA_OUTPUTS");
	wl_display_destroy(display);
}

static void outputs_are_announced_with_their_modes(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, NULL));
	CHECK(wla_backend_is_wla(f.backend));
	CHECK(wla_output_is_wla(f.output));
	CHECK(strcmp(f.output->name, "Virtual-1") == 0);
	struct wlr_output_mode *preferred = wlr_output_preferred_mode(f.output);
	CHECK(preferred && preferred->width == W && preferred->height == H &&
		preferred->refresh == 60000);
	CHECK_INT(wl_list_length(&f.output->modes), 2);
	int cw = 0, ch = 0;
	f.output->impl->get_cursor_size(f.output, &cw, &ch);
	CHECK_INT(cw, 64);
	CHECK_INT(ch, 64);
	fixture_finish(&f);
}

static struct wlr_backend *wrap_in_multi(struct fixture *f, struct wlr_backend *wla)
{
	struct wlr_backend *multi = wlr_multi_backend_create(f->display);
	wlr_multi_backend_add(multi, wla);
	return multi;
}

static void works_inside_a_multi_backend(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, wrap_in_multi));
	CHECK(f.output && wla_output_is_wla(f.output));
	struct test_buffer *buf = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xff00ff00, NULL);
	CHECK(enable_output(&f, &buf->base));
	CHECK(wait_for(&f, &f.presented, 1));
	wlr_buffer_drop(&buf->base);
	fixture_finish(&f);
}

static void a_buffer_commit_latches_at_a_vblank_with_present_and_frame(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, NULL));
	struct test_buffer *buf = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xff112233, NULL);
	/* wlroots' convention: the count after this commit. */
	uint32_t seq0 = f.output->commit_seq + 1;
	CHECK(enable_output(&f, &buf->base));
	CHECK_INT(wla_backend_buffer_locks(f.backend), 1);
	CHECK_INT(f.presents, 0); /* not before the vblank */
	CHECK(wait_for(&f, &f.presented, 1));
	CHECK_INT(f.frames, 1);
	CHECK_INT(f.last_present.commit_seq, seq0);
	CHECK(f.last_present.seq >= 1);
	CHECK_INT(f.last_present.refresh, 16666667);
	CHECK(f.last_present.flags & WLR_OUTPUT_PRESENT_VSYNC);
	CHECK(f.last_present.flags & WLR_OUTPUT_PRESENT_HW_COMPLETION);

	capture_next(&f);
	CHECK(f.cap.image && f.cap.image->width == W && f.cap.image->height == H);
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 0, 0), 0xff112233);
		CHECK_PIXEL(wla_image_pixel(f.cap.image, W - 1, H - 1), 0xff112233);
	}
	struct wla_output_stats stats;
	CHECK(wla_output_get_stats(f.output, &stats));
	CHECK(stats.frames_presented == 1);
	CHECK(stats.vblanks >= 1);
	CHECK_INT(stats.last_seq, f.cap.seq);

	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	wlr_buffer_drop(&buf->base);
	fixture_finish(&f);
}

static void a_second_frame_before_the_vblank_is_refused(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, NULL));
	struct test_buffer *a = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xffff0000, NULL);
	struct test_buffer *b = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xff0000ff, NULL);
	CHECK(enable_output(&f, &a->base));
	CHECK(wait_for(&f, &f.presented, 1));
	CHECK(commit_buffer(&f, &a->base));
	/* wlroots' own frame_pending guard would stop a second buffer commit, so
	 * ask the backend directly as a compositor bypassing it would. */
	f.output->pending.committed |= WLR_OUTPUT_STATE_BUFFER;
	f.output->pending.buffer = wlr_buffer_lock(&b->base);
	harness_log_clear();
	CHECK(!f.output->impl->commit(f.output));
	CHECK_LOGGED("crtc-0", "flip queue full", "1 of 1");
	wlr_buffer_unlock(f.output->pending.buffer);
	f.output->pending.committed = 0;
	f.output->pending.buffer = NULL;
	CHECK_INT(wla_backend_buffer_locks(f.backend), 2); /* a on screen + a queued */
	struct wla_output_stats stats;
	wla_output_get_stats(f.output, &stats);
	CHECK_INT(stats.refused, 1);
	wlr_buffer_drop(&a->base);
	wlr_buffer_drop(&b->base);
	fixture_finish(&f);
}

static void an_unsupported_format_is_refused_with_nothing_locked(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, NULL));
	bool destroyed;
	struct test_buffer *buf = test_buffer_create(W, H, DRM_FORMAT_NV12, 0, &destroyed);
	harness_log_clear();
	CHECK(!enable_output(&f, &buf->base));
	CHECK_LOGGED("plane primary-0", "format NV12");
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	CHECK_INT(buf->base.n_locks, 0);
	wlr_buffer_drop(&buf->base);
	CHECK(destroyed);
	fixture_finish(&f);
}

static void a_buffer_of_the_wrong_size_is_refused(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, NULL));
	struct test_buffer *buf = test_buffer_create(W / 2, H, DRM_FORMAT_XRGB8888, 0, NULL);
	harness_log_clear();
	CHECK(!enable_output(&f, &buf->base));
	/* wlroots' own size check refused it and leaves the pending state (and
	 * its buffer lock) for the compositor to roll back. */
	wlr_output_rollback(f.output);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	CHECK_INT(buf->base.n_locks, 0);
	/* As it came: lit with its mode (and no buffer locked). */
	CHECK(f.output->enabled && f.output->width == W && f.output->height == H);
	wlr_buffer_drop(&buf->base);
	fixture_finish(&f);
}

static void a_buffer_dropped_by_its_client_mid_flip_stays_until_replaced(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, NULL));
	bool a_gone, b_gone;
	struct test_buffer *a = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xffaa0000, &a_gone);
	struct test_buffer *b = test_buffer_create(W, H, DRM_FORMAT_ARGB8888, 0xff00bb00, &b_gone);
	CHECK(enable_output(&f, &a->base));
	wlr_buffer_drop(&a->base); /* the client is gone before the latch */
	CHECK(!a_gone);
	CHECK(wait_for(&f, &f.presented, 1));
	CHECK(!a_gone);
	capture_next(&f);
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 5, 5), 0xffaa0000);
	}
	CHECK(commit_buffer(&f, &b->base));
	CHECK(!a_gone); /* still on screen until b latches */
	CHECK(wait_for(&f, &f.presented, 2));
	CHECK(a_gone);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 1);
	capture_next(&f);
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 5, 5), 0xff00bb00);
	}
	wlr_buffer_drop(&b->base);
	CHECK(!b_gone);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK(b_gone);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	fixture_finish(&f);
}

static void disabling_with_a_pending_frame_reports_it_not_presented(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, NULL));
	bool gone;
	struct test_buffer *a = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xff010203, &gone);
	CHECK(enable_output(&f, &a->base));
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK_INT(f.not_presented, 1);
	CHECK_INT(f.presented, 0);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	CHECK(wla_output_capture(f.output, test_capture_done, &f.cap) == NULL);
	CHECK_LOGGED("capture", "disabled");
	wlr_buffer_drop(&a->base);
	CHECK(gone);
	fixture_finish(&f);
}

static void destroying_the_display_with_a_pending_frame_releases_the_buffer(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, NULL));
	bool gone;
	struct test_buffer *a = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xff010203, &gone);
	CHECK(enable_output(&f, &a->base));
	CHECK(wla_output_capture(f.output, test_capture_done, &f.cap) != NULL);
	wlr_buffer_drop(&a->base);
	CHECK(!gone);
	wl_list_remove(&f.present.link);
	wl_list_remove(&f.frame.link);
	wl_list_remove(&f.new_output.link);
	wl_display_destroy(f.display);
	CHECK(gone);
	CHECK(f.cap.done); /* the capture failed rather than leaked */
	CHECK(f.cap.image == NULL);
}

static void a_mode_change_with_a_matching_buffer_restarts_the_crtc(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, NULL));
	struct test_buffer *a = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xff010203, NULL);
	struct test_buffer *b = test_buffer_create(32, 32, DRM_FORMAT_XRGB8888, 0xff405060, NULL);
	CHECK(enable_output(&f, &a->base));
	CHECK(wait_for(&f, &f.presented, 1));
	struct wlr_output_mode *mode;
	struct wlr_output_mode *small = NULL;
	wl_list_for_each(mode, &f.output->modes, link) {
		if (mode->width == 32) {
			small = mode;
		}
	}
	CHECK(small != NULL);
	wlr_output_set_mode(f.output, small);
	wlr_output_attach_buffer(f.output, &b->base);
	CHECK(wlr_output_commit(f.output));
	CHECK(f.output->width == 32 && f.output->height == 32 && f.output->refresh == 30000);
	CHECK(wait_for(&f, &f.presented, 2));
	CHECK_INT(f.last_present.refresh, 33333333);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 1);
	wlr_buffer_drop(&a->base);
	wlr_buffer_drop(&b->base);
	fixture_finish(&f);
}

static void a_custom_mode_beyond_the_vdc_is_refused(void)
{
	struct fixture f;
	CHECK(fixture_init(&f, NULL));
	struct test_buffer *buf = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0, NULL);
	wlr_output_set_custom_mode(f.output, W, H, 2000000000);
	wlr_output_enable(f.output, true);
	wlr_output_attach_buffer(f.output, &buf->base);
	harness_log_clear();
	CHECK(!wlr_output_commit(f.output));
	CHECK_LOGGED("device vdc: custom mode 64x48@2000000000mHz", "beyond");
	/* As it came: lit with its mode (and no buffer locked). */
	CHECK(f.output->enabled && f.output->refresh < 1000000);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	wlr_buffer_drop(&buf->base);
	fixture_finish(&f);
}

int main(void)
{
	harness_init();
	unsetenv("WLA_OUTPUTS");
	unsetenv("WLA_CONFIG");
	RUN_TEST(bad_config_in_environment_gives_null_and_one_error);
	RUN_TEST(outputs_are_announced_with_their_modes);
	RUN_TEST(works_inside_a_multi_backend);
	RUN_TEST(a_buffer_commit_latches_at_a_vblank_with_present_and_frame);
	RUN_TEST(a_second_frame_before_the_vblank_is_refused);
	RUN_TEST(an_unsupported_format_is_refused_with_nothing_locked);
	RUN_TEST(a_buffer_of_the_wrong_size_is_refused);
	RUN_TEST(a_buffer_dropped_by_its_client_mid_flip_stays_until_replaced);
	RUN_TEST(disabling_with_a_pending_frame_reports_it_not_presented);
	RUN_TEST(destroying_the_display_with_a_pending_frame_releases_the_buffer);
	RUN_TEST(a_mode_change_with_a_matching_buffer_restarts_the_crtc);
	RUN_TEST(a_custom_mode_beyond_the_vdc_is_refused);
	HARNESS_EXIT();
}
