/*
 * Fault injection: each allocation the project makes in a scenario fails in
 * turn (the test links with -Wl,--wrap for malloc, calloc and realloc, so
 * only the project's own calls are counted: wlroots' and libc's are not),
 * and the driver refuses to program a state or to import an fb at each
 * commit in turn. Every case must leave the compositor running, every
 * buffer released, nothing leaked (ASan/LSan in the sanitizer build), and
 * an error line naming what failed.
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/interfaces/wlr_output.h>
#include <wlr/types/wlr_output.h>
#include <wlatomic/backend.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include "backend/vdc.h"
#include "backend/wlr.h"
#include "harness.h"
#include "test-buffer.h"

/* Allocation failure: the n-th project allocation from now fails. */
static long alloc_calls;
static long alloc_fail_at = -1; /* -1: none */
static bool alloc_failed;
static bool alloc_counting; /* off while the test makes its own buffers */

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *ptr, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *ptr, size_t size);

static bool should_fail(void)
{
	if (!alloc_counting) {
		return false;
	}
	if (alloc_calls++ == alloc_fail_at) {
		alloc_failed = true;
		return true;
	}
	return false;
}

void *__wrap_malloc(size_t size)
{
	return should_fail() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *ptr, size_t size)
{
	return should_fail() ? NULL : __real_realloc(ptr, size);
}

static int n_errors;

__attribute__((format(printf, 2, 0)))
static void count_errors(enum wlr_log_importance importance, const char *fmt, va_list args)
{
	n_errors += importance == WLR_ERROR;
	harness_log_func(importance, fmt, args);
}

static int error_lines(void)
{
	return n_errors;
}

#define W 64
#define H 48

struct sc {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wlr_output *output;
	struct wl_listener new_output, destroy;
	struct test_buffer *bufs[4];
	bool gone[4];
	int presented;
	uint32_t presented_seq; /* commit_seq of the newest frame presented */
	struct wl_listener present;
	bool captured;
};

static void sc_present(struct wl_listener *l, void *data)
{
	struct sc *s = wl_container_of(l, s, present);
	const struct wlr_output_event_present *ev = data;
	s->presented += ev->presented;
	if (ev->presented) {
		s->presented_seq = ev->commit_seq;
	}
}

static void sc_output_destroy(struct wl_listener *l, void *data)
{
	struct sc *s = wl_container_of(l, s, destroy);
	wl_list_remove(&s->present.link);
	wl_list_remove(&s->destroy.link);
	s->output = NULL;
}

static void sc_new_output(struct wl_listener *l, void *data)
{
	struct sc *s = wl_container_of(l, s, new_output);
	if (s->output) {
		return;
	}
	s->output = data;
	s->present.notify = sc_present;
	wl_signal_add(&s->output->events.present, &s->present);
	s->destroy.notify = sc_output_destroy;
	wl_signal_add(&s->output->events.destroy, &s->destroy);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void run_ms(struct sc *s, uint64_t ms)
{
	uint64_t end = now_ms() + ms;
	while (now_ms() < end) {
		wl_event_loop_dispatch(s->loop, 2);
	}
}

static bool commit_buf(struct sc *s, int i)
{
	if (!s->output) {
		return false;
	}
	wlr_output_attach_buffer(s->output, &s->bufs[i]->base);
	bool ok = wlr_output_commit(s->output);
	if (!ok) {
		wlr_output_rollback(s->output);
	}
	return ok;
}

static void capture_done(struct wla_capture *cap, const struct wla_image *image, uint64_t seq,
	void *data)
{
	((struct sc *)data)->captured = true;
}

/*
 * The scenario: create the backend, enable an output, commit, queue three
 * frames, capture, change the mode, move the cursor, hot-plug and unplug,
 * destroy with frames queued. Returns false if the backend could not be
 * created at all (an allocation at start-up failed: that is reported and
 * is the only acceptable way to stop).
 */
static bool scenario(struct sc *s)
{
	memset(s, 0, sizeof(*s));
	alloc_counting = false;
	for (int i = 0; i < 4; i++) {
		s->bufs[i] = test_buffer_create(W, H, DRM_FORMAT_XRGB8888, 0xff000000u + (uint32_t)i,
			&s->gone[i]);
	}
	struct test_buffer *cursor = test_buffer_create(16, 16, DRM_FORMAT_ARGB8888, 0xffffffff,
		NULL);
	alloc_counting = true;
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
	cfg.outputs[0].modes[1] = (struct wla_config_mode){ W, H, 30000 };
	cfg.outputs[0].n_modes = 2;
	cfg.flip_depth = 3;
	s->display = wl_display_create();
	s->loop = wl_display_get_event_loop(s->display);
	s->backend = wla_backend_create(s->display, &cfg);
	bool created = s->backend != NULL;
	if (created) {
		s->new_output.notify = sc_new_output;
		wl_signal_add(&s->backend->events.new_output, &s->new_output);
		wlr_backend_start(s->backend);
	}
	if (s->output) {
		struct wlr_output *o = s->output;
		wlr_output_set_mode(o, wlr_output_preferred_mode(o));
		wlr_output_enable(o, true);
		commit_buf(s, 0);
		run_ms(s, 20);
		for (int i = 1; i < 4; i++) {
			commit_buf(s, i);
		}
		struct wla_capture *cap = s->output ?
			wla_output_capture(s->output, capture_done, s) : NULL;
		run_ms(s, 40);
		if (cap && !s->captured) {
			wla_capture_cancel(cap);
		}
		if (s->output) {
			struct wlr_output_mode *m;
			wl_list_for_each(m, &s->output->modes, link) {
				if (m->refresh == 30000) {
					wlr_output_set_mode(s->output, m);
				}
			}
			commit_buf(s, 1);
		}
		if (s->output) {
			/* The backend's own cursor hooks (wlroots would need a
			 * renderer to call them). */
			s->output->impl->set_cursor(s->output, &cursor->base, 0, 0);
			s->output->impl->move_cursor(s->output, 5, 5);
		}
		run_ms(s, 40);
		struct wla_config_mode hp = { W, H, 60000 };
		if (wla_backend_plug_connector(s->backend, "HP-1", &hp, 1) == 0) {
			wla_backend_unplug_connector(s->backend, "HP-1");
		}
		commit_buf(s, 2);
		commit_buf(s, 3);
	}
	if (created) {
		wl_list_remove(&s->new_output.link);
	}
	wl_display_destroy(s->display);
	alloc_counting = false;
	wlr_buffer_drop(&cursor->base);
	for (int i = 0; i < 4; i++) {
		wlr_buffer_drop(&s->bufs[i]->base);
	}
	return created;
}

static void every_allocation_of_the_scenario_may_fail(void)
{
	struct sc s;
	alloc_fail_at = -1;
	alloc_calls = 0;
	scenario(&s);
	long total = alloc_calls;
	CHECK(total > 20);
	for (int i = 0; i < 4; i++) {
		CHECK(s.gone[i]);
	}
	int cases = 0, failed_cases = 0;
	for (long n = 0; n < total; n++) {
		harness_log_clear();
		n_errors = 0;
		alloc_calls = 0;
		alloc_fail_at = n;
		alloc_failed = false;
		scenario(&s);
		alloc_fail_at = -1;
		cases++;
		bool ok = true;
		for (int i = 0; i < 4; i++) {
			ok &= s.gone[i];
		}
		if (!ok) {
			fprintf(stderr, "  allocation %ld failing: a buffer was not released\n", n);
		}
		if (alloc_failed && error_lines() == 0) {
			fprintf(stderr, "  allocation %ld failing: no error line\n", n);
			ok = false;
		}
		if (!ok) {
			failed_cases++;
			harness_test_failures++;
		}
	}
	fprintf(stderr, "# %d allocations failed in turn, %d cases wrong\n", cases, failed_cases);
}

/* The driver refuses the k-th state it is handed, or the k-th import. */
static void driver_refusals_at_each_commit_leave_it_running(void)
{
	for (int kind = 0; kind < 2; kind++) {
		for (int k = 0; k < 6; k++) {
			struct sc s;
			memset(&s, 0, sizeof(s));
			for (int i = 0; i < 4; i++) {
				s.bufs[i] = test_buffer_create(W, H, DRM_FORMAT_XRGB8888,
					0xff100000u + (uint32_t)i, &s.gone[i]);
			}
			struct wla_config cfg;
			wla_config_init(&cfg);
			cfg.outputs[0].modes[0] = (struct wla_config_mode){ W, H, 60000 };
			cfg.outputs[0].n_modes = 1;
			cfg.flip_depth = 2;
			s.display = wl_display_create();
			s.loop = wl_display_get_event_loop(s.display);
			s.backend = wla_backend_create(s.display, &cfg);
			s.new_output.notify = sc_new_output;
			wl_signal_add(&s.backend->events.new_output, &s.new_output);
			wlr_backend_start(s.backend);
			struct wla_vdc *vdc = wla_vdc_from_device(wla_backend_from_wlr(s.backend)->devices[0]);
			wlr_output_set_mode(s.output, wlr_output_preferred_mode(s.output));
			wlr_output_enable(s.output, true);
			harness_log_clear();
			n_errors = 0;
			int commits = 0;
			for (int i = 0; i < 8; i++) {
				if (i == k) {
					if (kind == 0) {
						vdc->fail_commit_tail = EIO;
					} else {
						vdc->fail_prepare_fb = ENOMEM;
					}
				}
				if (!s.output->enabled) {
					wlr_output_set_mode(s.output,
						wlr_output_preferred_mode(s.output));
					wlr_output_enable(s.output, true);
				}
				commits += commit_buf(&s, i % 4);
				/* A compositor's pace: about one frame a vblank, and
				 * the next once wlroots takes one (the frame event
				 * came), however late that is on a loaded machine. */
				run_ms(&s, 18);
				if (!HARNESS_WAIT_UNTIL(s.loop, !s.output->frame_pending, 2000)) {
					fprintf(stderr, "  kind %d at %d, commit %d: output %s: "
						"frame_pending still true after 2000 ms x %g: no "
						"frame event\n", kind, k, i, s.output->name,
						harness_time_scale());
					harness_test_failures++;
				}
			}
			/* The frames committed and the refusal's error line, however
			 * late the vblanks come. */
			if (!HARNESS_WAIT_UNTIL(s.loop, s.presented >= 4 && error_lines() >= 1, 2000)) {
				fprintf(stderr, "  kind %d at %d: output %s: presented %d (waited for >= "
					"4), error lines %d (waited for >= 1) after 2000 ms x %g\n",
					kind, k, s.output->name, s.presented, error_lines(),
					harness_time_scale());
			}
			if (commits < 6 || s.presented < 4) {
				fprintf(stderr, "  kind %d at %d: %d commits, %d presented\n", kind, k,
					commits, s.presented);
			}
			CHECK(commits >= 6);
			CHECK(error_lines() >= 1);
			CHECK(s.presented >= 4);
			/* Still running: one more frame makes it to the screen. */
			if (!s.output->enabled) {
				wlr_output_set_mode(s.output, wlr_output_preferred_mode(s.output));
				wlr_output_enable(s.output, true);
			}
			int before = s.presented;
			CHECK(commit_buf(&s, 0));
			/* That frame itself, not one still in flight before it. */
			uint32_t seq = s.output->commit_seq;
			if (!HARNESS_WAIT_UNTIL(s.loop, s.presented_seq == seq, 2000)) {
				fprintf(stderr, "  kind %d at %d: output %s: commit_seq %u not presented "
					"after 2000 ms x %g (presented_seq %u, presented %d)\n", kind,
					k, s.output->name, seq, harness_time_scale(), s.presented_seq,
					s.presented);
				harness_test_failures++;
			}
			CHECK(s.presented > before);
			wl_list_remove(&s.new_output.link);
			wl_display_destroy(s.display);
			for (int i = 0; i < 4; i++) {
				wlr_buffer_drop(&s.bufs[i]->base);
				CHECK(s.gone[i]);
			}
		}
	}
}

int main(void)
{
	harness_init();
	wlr_log_init(WLR_DEBUG, count_errors);
	RUN_TEST(every_allocation_of_the_scenario_may_fail);
	RUN_TEST(driver_refusals_at_each_commit_leave_it_running);
	HARNESS_EXIT();
}
