/*
 * A panel driven through its wlr_output: real wlr_outputs and wlr_buffers,
 * real vblanks and panel timers on the event loop, the recording line
 * provider on CLOCK_MONOTONIC. Every GPIO call is checked for its order and
 * physical levels; delays between calls must be at least the configured
 * ones (and below them plus SLACK_MS, never tighter). Every wait is for a
 * condition, with harness.h's deadline; SLACK_MS, a late timer's allowance,
 * is scaled like the deadlines (WLA_TEST_TIME_SCALE).
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/interfaces/wlr_output.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_output.h>
#include <wlatomic/backend.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include "backend/panel.h"
#include "backend/vdc.h"
#include "backend/wlr.h"
#include "harness.h"
#include "lib/backend.h"
#include "lib/capture.h"
#include "lib/gpio-record.h"
#include "test-buffer.h"

#define W 64
#define H 48
#define MS UINT64_C(1000000)
#define SLACK_MS ((int)(30 * harness_time_scale()))

/* Physical bits of the lines, in the order they are declared. */
#define EN 0x1u
#define RST 0x2u /* active-low: asserted (in reset) is 0 */
#define BL 0x4u

#define PREPARE_MS 20
#define ENABLE_MS 10
#define DISABLE_MS 15
#define UNPREPARE_MS 5
#define MIN_OFF_MS 40

static const char panel_config[] =
	"[output]\n"
	"name = DSI-1\n"
	"mode = 64x48@60\n"
	"panel-chip = test-chip\n"
	"panel-line = enable 3\n"
	"panel-line = reset 4 active-low\n"
	"panel-line = backlight 5\n"
	"panel-preset = simple\n"
	"panel-delay-prepare = 20\n"
	"panel-delay-enable = 10\n"
	"panel-delay-disable = 15\n"
	"panel-delay-unprepare = 5\n"
	"panel-min-off-time = 40\n";

/* Indices into rec.calls of the usual life of the panel. */
enum {
	CALL_REQUEST,
	CALL_ON_ENABLE,
	CALL_ON_RESET,
	CALL_LIT,
	CALL_OFF_BACKLIGHT,
	CALL_OFF_RESET,
	CALL_OFF_ENABLE,
};


/* What the output looked like at each provider call. */
struct call_snapshot {
	bool crtc_active;
	int presented;
};

struct fixture {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wlr_output *output;
	struct wla_output *out;

	/* A provider in front of the recording one: it notes the output's
	 * state at each set, then passes the call on. */
	struct wla_gpio_provider tap;
	struct wla_gpio_lines tap_lines;
	struct wla_gpio_lines *rec_lines;
	struct wla_gpio_record rec;
	struct call_snapshot snap[WLA_GPIO_RECORD_MAX_CALLS];

	struct wl_listener new_output, present, frame, enable, destroy;
	int presented, not_presented, frames, enable_events;
	/* A not-presented event unplugs the output's connector (its result). */
	bool unplug_on_not_presented;
	int unplug_result;
	bool output_destroyed;
	uint32_t not_presented_seq; /* commit_seq of the last not presented */
	uint64_t first_when_ns, last_when_ns;

	struct test_capture cap;

	/* From the log: when the CRTC was last enabled and disabled. */
	uint64_t crtc_enabled_ns, crtc_disabled_ns;
	int errors; /* WLR_ERROR lines */
};

static struct fixture f;

static uint64_t mono_ns(void)
{
	return harness_now_ns();
}

static uint64_t rec_now(void *data)
{
	return mono_ns();
}

__attribute__((format(printf, 2, 0)))
static void log_func(enum wlr_log_importance importance, const char *fmt, va_list args)
{
	char line[HARNESS_LOG_LEN];
	va_list copy;
	va_copy(copy, args);
	vsnprintf(line, sizeof(line), fmt, copy);
	va_end(copy);
	if (importance == WLR_ERROR) {
		f.errors++;
	}
	if (strstr(line, "crtc-0: disabled")) {
		f.crtc_disabled_ns = mono_ns();
	} else if (strstr(line, "crtc-0: enabled")) {
		f.crtc_enabled_ns = mono_ns();
	}
	harness_log_func(importance, fmt, args);
}

static void clear_log(void)
{
	harness_log_clear();
	f.errors = 0;
}

static int tap_set(struct wla_gpio_lines *lines, uint32_t mask, uint32_t values)
{
	if (f.rec.n_calls < WLA_GPIO_RECORD_MAX_CALLS) {
		f.snap[f.rec.n_calls] = (struct call_snapshot){
			.crtc_active = f.out && f.out->crtc->state->active,
			.presented = f.presented,
		};
	}
	return f.rec_lines->funcs->set(f.rec_lines, mask, values);
}

static void tap_release(struct wla_gpio_lines *lines)
{
	f.rec_lines->funcs->release(f.rec_lines);
	f.rec_lines = NULL;
}

static const struct wla_gpio_lines_funcs tap_lines_funcs = {
	.set = tap_set,
	.release = tap_release,
};

static struct wla_gpio_lines *tap_request(struct wla_gpio_provider *provider,
	const struct wla_gpio_request *req, struct wla_gpio_error *err)
{
	f.rec_lines = f.rec.provider.funcs->request(&f.rec.provider, req, err);
	if (!f.rec_lines) {
		return NULL;
	}
	f.tap_lines.funcs = &tap_lines_funcs;
	return &f.tap_lines;
}

static const struct wla_gpio_provider_funcs tap_funcs = {
	.request = tap_request,
};

/* A W x H XRGB8888 buffer of one colour; the caller owns it (drop it). */
static struct wlr_buffer *buffer_create(uint32_t color, bool *destroyed)
{
	return &test_buffer_create(W, H, DRM_FORMAT_XRGB8888, color, destroyed)->base;
}

static void handle_present(struct wl_listener *listener, void *data)
{
	const struct wlr_output_event_present *ev = data;
	if (!ev->presented) {
		f.not_presented++;
		f.not_presented_seq = ev->commit_seq;
		if (f.unplug_on_not_presented) {
			f.unplug_on_not_presented = false;
			f.unplug_result = wla_backend_unplug_connector(f.backend, f.output->name);
		}
		return;
	}
	uint64_t when = (uint64_t)ev->when->tv_sec * UINT64_C(1000000000) +
		(uint64_t)ev->when->tv_nsec;
	if (f.presented++ == 0) {
		f.first_when_ns = when;
	}
	f.last_when_ns = when;
}

static void handle_frame(struct wl_listener *listener, void *data)
{
	f.frames++;
}

static void handle_enable(struct wl_listener *listener, void *data)
{
	f.enable_events++;
}

static void stop_listening_to_output(void);

static void handle_output_destroy(struct wl_listener *listener, void *data)
{
	stop_listening_to_output();
	f.output = NULL;
	f.out = NULL;
	f.output_destroyed = true;
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	f.output = data;
	f.out = wl_container_of(f.output, f.out, base);
	f.present.notify = handle_present;
	wl_signal_add(&f.output->events.present, &f.present);
	f.frame.notify = handle_frame;
	wl_signal_add(&f.output->events.frame, &f.frame);
	f.enable.notify = handle_enable;
	wl_signal_add(&f.output->events.enable, &f.enable);
	f.destroy.notify = handle_output_destroy;
	wl_signal_add(&f.output->events.destroy, &f.destroy);
}

/* The backend with the panel's config; set failure injection in f.rec, then
 * call start(). */
/* A test's changes to the parsed config, applied by setup (NULL: none). */
static void (*setup_tweak)(struct wla_config *cfg);

static bool setup(void)
{
	memset(&f, 0, sizeof(f));
	struct wla_config cfg;
	wla_config_init(&cfg);
	if (wla_config_parse_text(&cfg, "panel-output.conf", panel_config) != 0) {
		fprintf(stderr, "  config did not parse\n");
		return false;
	}
	if (setup_tweak) {
		setup_tweak(&cfg);
	}
	wla_gpio_record_init(&f.rec, rec_now, NULL);
	f.tap.funcs = &tap_funcs;
	f.new_output.notify = handle_new_output;
	f.backend = test_backend_create(&f.display, &f.loop, &cfg, &f.new_output);
	if (!f.backend) {
		wl_display_destroy(f.display);
		return false;
	}
	return true;
}

static bool start(void)
{
	wla_backend_set_gpio_provider(f.backend, &f.tap);
	return wlr_backend_start(f.backend) && f.output;
}

/* The test's listeners off the output and the backend, before they go. */
static void stop_listening_to_output(void)
{
	if (f.output) {
		wl_list_remove(&f.present.link);
		wl_list_remove(&f.frame.link);
		wl_list_remove(&f.enable.link);
		wl_list_remove(&f.destroy.link);
	}
}

static void stop_listening(void)
{
	stop_listening_to_output();
	wl_list_remove(&f.new_output.link);
}

/* Ends a test; every buffer lock must have been given back by now. */
static void finish(void)
{
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	stop_listening();
	wla_image_destroy(f.cap.image);
	wl_display_destroy(f.display);
}

/* Run the event loop until cond holds, 2 s at most (scaled). */
#define WAIT_UNTIL(cond) HARNESS_WAIT_UNTIL(f.loop, cond, 2000)

/* Run the event loop for ms, whatever happens: only before checking that
 * something did not happen (what did is waited for with WAIT_UNTIL). */
static void run_for(uint64_t ms)
{
	uint64_t end = mono_ns() + ms * MS;
	uint64_t now;
	while ((now = mono_ns()) < end) {
		uint64_t left = (end - now + MS - 1) / MS;
		wl_event_loop_dispatch(f.loop, left > 5 ? 5 : (int)left);
	}
}

static enum wla_panel_state panel_state(void)
{
	return wla_panel_get_state(wla_panel_loop_get_panel(f.out->panel));
}

static bool crtc_active(void)
{
	return f.out->crtc->state->active;
}

static bool enable_output(struct wlr_buffer *buffer)
{
	wlr_output_set_mode(f.output, wlr_output_preferred_mode(f.output));
	wlr_output_enable(f.output, true);
	if (buffer) {
		wlr_output_attach_buffer(f.output, buffer);
	}
	return wlr_output_commit(f.output);
}

static bool commit_buffer(struct wlr_buffer *buffer)
{
	wlr_output_attach_buffer(f.output, buffer);
	return wlr_output_commit(f.output);
}

/* Disable and wait for the panel to be off. */
static bool disable_output(void)
{
	wlr_output_enable(f.output, false);
	return wlr_output_commit(f.output) && WAIT_UNTIL(panel_state() == WLA_PANEL_OFF);
}

/* Enable with buffer and run until the backlight is on. */
/* Enable with buffer until the panel is lit and a first frame came. */
static bool light_up(struct wlr_buffer *buffer)
{
	return enable_output(buffer) && WAIT_UNTIL(panel_state() == WLA_PANEL_LIT) &&
		WAIT_UNTIL(f.frames >= 1);
}

/* A started fixture whose provider fails set number index (1-based) with
 * -EIO. */
static void start_failing_set(size_t index)
{
	CHECK(setup());
	f.rec.fail_set = -EIO;
	f.rec.fail_set_index = index;
	CHECK(start());
}

/* A started fixture lit up with a buffer of color (gone: as buffer_create),
 * all four GPIO calls made. */
static struct wlr_buffer *start_lit(uint32_t color, bool *gone)
{
	CHECK(setup() && start());
	struct wlr_buffer *buf = buffer_create(color, gone);
	CHECK(light_up(buf));
	CHECK_INT(f.rec.n_calls, 4); /* the request and the three power-on sets */
	return buf;
}

static void capture_next(void)
{
	test_capture_reset(&f.cap);
	CHECK(wla_output_capture(f.output, test_capture_done, &f.cap) != NULL);
	CHECK(WAIT_UNTIL(f.cap.done));
}

/* Call i is a successful set of mask to values, leaving levels. */
#define CHECK_SET(i, mask_, values_, levels_) \
	do { \
		CHECK((size_t)(i) < f.rec.n_calls); \
		if ((size_t)(i) < f.rec.n_calls) { \
			const struct wla_gpio_call *c_ = &f.rec.calls[i]; \
			CHECK_INT(c_->kind, WLA_GPIO_CALL_SET); \
			CHECK_INT(c_->result, 0); \
			CHECK_INT(c_->mask, mask_); \
			CHECK_INT(c_->values, values_); \
			CHECK_INT(c_->levels, levels_); \
		} \
	} while (0)

/* t_ns is at least min_ms after from_ns, and less than SLACK_MS more. */
#define CHECK_AFTER(t_ns, from_ns, min_ms) \
	do { \
		uint64_t t_ = (t_ns), from_ = (from_ns); \
		if (t_ < from_ + (uint64_t)(min_ms) * MS || \
				t_ >= from_ + (uint64_t)((min_ms) + SLACK_MS) * MS) { \
			fprintf(stderr, "  %s:%d: %s is %.3f ms after %s, expected %d ms (+%d)\n", \
				__FILE__, __LINE__, #t_ns, \
				((double)t_ - (double)from_) / 1e6, #from_ns, (int)(min_ms), \
				SLACK_MS); \
			harness_test_failures++; \
		} \
	} while (0)

#define CALL_TIME(i) (f.rec.calls[i].time_ns)

/* The power-on steps at calls[first], [first + 1]. */
static void check_on_steps(size_t first)
{
	CHECK_SET(first, EN, EN, EN);
	CHECK_SET(first + 1, RST, RST, EN | RST);
	if (f.rec.n_calls > first + 1) {
		CHECK_AFTER(CALL_TIME(first + 1), CALL_TIME(first), PREPARE_MS);
		CHECK(!f.snap[first].crtc_active);
		CHECK(!f.snap[first + 1].crtc_active);
	}
}

/* The power-off steps at calls[first..first + 2]. */
static void check_off_steps(size_t first)
{
	CHECK_SET(first, BL, 0, EN | RST);
	CHECK_SET(first + 1, RST, 0, EN);
	CHECK_SET(first + 2, EN, 0, 0);
	if (f.rec.n_calls > first + 2) {
		CHECK_AFTER(CALL_TIME(first + 1), CALL_TIME(first), DISABLE_MS);
		CHECK_AFTER(CALL_TIME(first + 2), CALL_TIME(first + 1), 0);
	}
}

static void enabling_powers_the_panel_on_before_the_crtc(void)
{
	CHECK(setup() && start());
	/* Lines requested at their safe off levels: reset (active-low)
	 * asserted is a low pin, so all three are low. */
	CHECK_INT(f.rec.n_calls, 1);
	CHECK_INT(f.rec.calls[0].kind, WLA_GPIO_CALL_REQUEST);
	CHECK_INT(f.rec.calls[0].mask, EN | RST | BL);
	CHECK_INT(f.rec.calls[0].values, 0);
	CHECK_GPIO_REQUEST(f.rec, "test-chip", "wlatomic:DSI-1", 3, 4, 5);

	bool gone;
	struct wlr_buffer *buf = buffer_create(0xff336699, &gone);
	uint64_t t_commit = mono_ns();
	CHECK(enable_output(buf));
	CHECK(f.output->enabled);
	CHECK(!crtc_active());
	CHECK_INT(f.presented + f.not_presented, 0);
	CHECK_INT(f.rec.n_sets, 0); /* requests only ask; timers run the steps */

	CHECK(WAIT_UNTIL(f.rec.n_calls >= 3));
	check_on_steps(CALL_ON_ENABLE);
	/* The minimum off time counts from the request at start-up. */
	CHECK(CALL_TIME(CALL_ON_ENABLE) >= CALL_TIME(CALL_REQUEST) + MIN_OFF_MS * MS);
	CHECK(CALL_TIME(CALL_ON_ENABLE) >= t_commit);
	CHECK_INT(f.presented + f.not_presented, 0);

	CHECK(WAIT_UNTIL(crtc_active()));
	CHECK_AFTER(wla_vdc_output_from_crtc(f.out->crtc)->epoch_ns, CALL_TIME(CALL_ON_RESET), ENABLE_MS);
	CHECK_INT(f.rec.n_calls, 3);
	CHECK(WAIT_UNTIL(f.presented >= 1));
	CHECK(f.first_when_ns > wla_vdc_output_from_crtc(f.out->crtc)->epoch_ns);
	CHECK(WAIT_UNTIL(f.frames >= 1));
	CHECK_INT(f.not_presented, 0);

	CHECK(disable_output());
	wlr_buffer_drop(buf);
	CHECK(gone);
	finish();
}

static void the_backlight_comes_on_only_after_the_first_latched_frame(void)
{
	CHECK(setup() && start());
	struct wlr_buffer *buf = buffer_create(0xff202020, NULL);
	CHECK(enable_output(buf));
	CHECK(WAIT_UNTIL(f.presented >= 1));
	/* Lit at the first latched frame, not before. */
	CHECK(WAIT_UNTIL(f.rec.n_calls >= 4));
	CHECK_SET(CALL_LIT, BL, BL, EN | RST | BL);
	for (size_t i = 0; i < f.rec.n_calls && i < CALL_LIT; i++) {
		CHECK_INT(f.rec.calls[i].levels & BL, 0);
	}
	if (f.rec.n_calls > CALL_LIT) {
		CHECK(f.snap[CALL_LIT].crtc_active);
		CHECK(f.snap[CALL_LIT].presented >= 1);
		CHECK(CALL_TIME(CALL_LIT) > f.first_when_ns);
		CHECK_AFTER(CALL_TIME(CALL_LIT), f.first_when_ns, 0);
	}
	CHECK_INT(panel_state(), WLA_PANEL_LIT);

	/* More frames change nothing on the lines. */
	CHECK(WAIT_UNTIL(f.frames >= 1));
	CHECK(commit_buffer(buf));
	CHECK(WAIT_UNTIL(f.presented >= 2));
	CHECK_INT(f.rec.n_calls, 4);

	CHECK(disable_output());
	wlr_buffer_drop(buf);
	finish();
}

static void disabling_turns_the_backlight_off_first_and_the_supply_last(void)
{
	bool gone;
	struct wlr_buffer *buf = start_lit(0xff445566, &gone);
	int frames = f.frames, presented = f.presented;

	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK(!f.output->enabled);
	CHECK_INT(f.rec.n_calls, 4); /* the steps run from the panel's timer */
	CHECK(crtc_active());

	CHECK(WAIT_UNTIL(panel_state() == WLA_PANEL_OFF));
	run_for(40);
	CHECK_INT(f.rec.n_calls, 7);
	check_off_steps(CALL_OFF_BACKLIGHT);
	if (f.rec.n_calls == 7) {
		/* Scanout runs through the disable delay and stops before the
		 * supply goes. */
		CHECK(f.snap[CALL_OFF_BACKLIGHT].crtc_active);
		CHECK(!f.snap[CALL_OFF_RESET].crtc_active);
		CHECK(!f.snap[CALL_OFF_ENABLE].crtc_active);
		CHECK(f.crtc_disabled_ns >= CALL_TIME(CALL_OFF_BACKLIGHT) + DISABLE_MS * MS);
		CHECK(f.crtc_disabled_ns <= CALL_TIME(CALL_OFF_RESET));
	}
	CHECK(!crtc_active());
	CHECK(!f.output->enabled);
	CHECK_INT(f.frames, frames);
	CHECK_INT(f.presented, presented);
	CHECK_INT(f.rec.levels, 0);

	wlr_buffer_drop(buf);
	CHECK(gone);
	finish();
}

static void re_enabling_during_power_off_ends_on_through_a_legal_sequence(void)
{
	struct wlr_buffer *a = start_lit(0xff111111, NULL);
	struct wlr_buffer *b = buffer_create(0xff222222, NULL);

	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK(WAIT_UNTIL(f.rec.n_calls >= 5)); /* backlight off, in the disable delay */
	CHECK_INT(panel_state(), WLA_PANEL_POWERING_OFF);
	int presented = f.presented;
	CHECK(enable_output(b));
	CHECK(f.output->enabled);

	CHECK(WAIT_UNTIL(f.presented > presented && f.rec.n_calls >= 10));
	CHECK_INT(f.rec.n_calls, 10);
	/* The whole power-off, then the minimum off time from its end (the
	 * last step's unprepare delay), then the whole power-on. */
	check_off_steps(CALL_OFF_BACKLIGHT);
	check_on_steps(7);
	CHECK_SET(9, BL, BL, EN | RST | BL);
	if (f.rec.n_calls >= 10) {
		/* Counted from the set itself, though the CRTC-off commit and
		 * another set ran earlier in the same wake-up. */
		CHECK_AFTER(CALL_TIME(7), CALL_TIME(CALL_OFF_ENABLE), UNPREPARE_MS + MIN_OFF_MS);
		CHECK(!f.snap[CALL_OFF_RESET].crtc_active);
		CHECK(f.crtc_disabled_ns >= CALL_TIME(CALL_OFF_BACKLIGHT) + DISABLE_MS * MS);
		CHECK(f.crtc_disabled_ns <= CALL_TIME(CALL_OFF_RESET));
		CHECK(f.crtc_enabled_ns > CALL_TIME(8));
		CHECK_AFTER(wla_vdc_output_from_crtc(f.out->crtc)->epoch_ns, CALL_TIME(8), ENABLE_MS);
		CHECK(f.snap[9].presented > presented);
		CHECK(CALL_TIME(9) > f.last_when_ns);
	}
	CHECK_INT(panel_state(), WLA_PANEL_LIT);

	/* And the output goes on presenting frames. */
	CHECK(WAIT_UNTIL(f.frames >= 2));
	presented = f.presented;
	CHECK(commit_buffer(a));
	CHECK(WAIT_UNTIL(f.presented > presented));
	CHECK(f.output->enabled);
	CHECK_INT(f.rec.n_calls, 10);

	CHECK(disable_output());
	wlr_buffer_drop(a);
	wlr_buffer_drop(b);
	finish();
}

/* An enable with a buffer is refused with one error naming the output and
 * the chip; the output stays off, nothing is driven or leaked. */
static void check_enable_refused(void)
{
	clear_log();
	bool gone;
	struct wlr_buffer *buf = buffer_create(0xffffffff, &gone);
	size_t n_calls = f.rec.n_calls;
	int events = f.presented + f.not_presented + f.frames;
	CHECK(!enable_output(buf));
	wlr_output_rollback(f.output);
	CHECK_LOGGED("output DSI-1", "chip test-chip", "not usable");
	CHECK_INT(f.errors, 1);
	CHECK(!f.output->enabled);
	CHECK(!crtc_active());
	CHECK_INT(f.rec.n_calls, n_calls);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	CHECK_INT(buf->n_locks, 0);
	wlr_buffer_drop(buf);
	CHECK(gone);
	run_for(20);
	CHECK_INT(f.presented + f.not_presented + f.frames, events);
}

static void a_missing_chip_leaves_the_output_off_with_one_error(void)
{
	CHECK(setup());
	f.rec.fail_request = -ENOENT;
	f.rec.fail_request_line = -1;
	clear_log();
	CHECK(start());
	CHECK_INT(f.errors, 1);
	CHECK_LOGGED("DSI-1", "chip 'test-chip'", "cannot open");
	CHECK_INT(f.rec.n_calls, 1);
	CHECK_INT(f.rec.calls[0].kind, WLA_GPIO_CALL_REQUEST);
	CHECK_INT(f.rec.calls[0].result, -ENOENT);
	CHECK(!f.rec.requested);
	CHECK(f.out->panel == NULL);

	check_enable_refused();
	CHECK_INT(f.rec.n_sets, 0);
	finish();
}

static void busy_lines_leave_the_output_off(void)
{
	CHECK(setup());
	f.rec.fail_request = -EBUSY;
	f.rec.fail_request_line = 1;
	clear_log();
	CHECK(start());
	CHECK_INT(f.errors, 1);
	CHECK_LOGGED("DSI-1", "chip 'test-chip'", "line 'reset'", "offset 4");
	CHECK_INT(f.rec.n_calls, 1);
	CHECK_INT(f.rec.calls[0].result, -EBUSY);
	CHECK(!f.rec.requested);

	check_enable_refused();
	CHECK_INT(f.rec.n_sets, 0);
	finish();
}

static void a_failed_set_mid_sequence_turns_the_output_off(void)
{
	start_failing_set(2);
	bool gone;
	struct wlr_buffer *buf = buffer_create(0xff00ff00, &gone);
	CHECK(enable_output(buf));
	CHECK(f.output->enabled);
	uint32_t enable_seq = f.output->commit_seq;
	int enable_events = f.enable_events;
	clear_log();

	CHECK(WAIT_UNTIL(!f.output->enabled));
	CHECK_INT(f.enable_events, enable_events + 1);
	CHECK_INT(panel_state(), WLA_PANEL_FAILED);
	CHECK_LOGGED("DSI-1", "chip 'test-chip'", "reset", "Input/output error");
	CHECK_LOGGED("output DSI-1", "test-chip", "the output is off");
	CHECK_INT(f.errors, 1); /* one error line: the panel's, naming chip and line */
	run_for(40);
	/* enable=1, the failed reset step, then every line to its safe off
	 * level in one call; nothing after. */
	CHECK_INT(f.rec.n_calls, 4);
	CHECK_SET(1, EN, EN, EN);
	if (f.rec.n_calls >= 4) {
		CHECK_INT(f.rec.calls[2].kind, WLA_GPIO_CALL_SET);
		CHECK_INT(f.rec.calls[2].result, -EIO);
		CHECK_INT(f.rec.calls[2].mask, RST);
		CHECK_INT(f.rec.calls[2].levels, EN);
	}
	CHECK_SET(3, EN | RST | BL, 0, 0);
	CHECK_INT(f.rec.levels, 0);
	CHECK(f.rec.requested);
	CHECK(!crtc_active());
	/* The enable waited for the panel and never reached the screen: its
	 * present event says so (presentation-time waits for it), and no
	 * frame event comes. */
	CHECK_INT(f.not_presented, 1);
	CHECK_INT(f.not_presented_seq, enable_seq);
	CHECK_INT(f.presented + f.frames, 0);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	wlr_buffer_drop(buf);
	CHECK(gone);

	/* wlroots waits for no frame event of the cancelled frame: the next
	 * enable reaches the backend, which refuses it. */
	CHECK(!f.output->frame_pending);
	check_enable_refused();
	finish();
}

/* The not-presented event of an enable the failed panel cancelled: its
 * listener may unplug the connector (the output goes once the event is
 * over, not under the panel's failure handling). */
static void a_listener_unplugging_on_a_failed_panels_event_is_safe(void)
{
	start_failing_set(2);
	bool gone;
	struct wlr_buffer *buf = buffer_create(0xff00ff00, &gone);
	f.unplug_on_not_presented = true;
	f.unplug_result = 1;
	CHECK(enable_output(buf));
	CHECK(WAIT_UNTIL(f.output_destroyed));
	CHECK_INT(f.not_presented, 1);
	CHECK_INT(f.unplug_result, 0);
	CHECK_INT(f.rec.levels, 0);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
	wlr_buffer_drop(buf);
	CHECK(gone);
	finish();
}

static void destroying_the_backend_while_lit_drives_the_lines_off(void)
{
	bool gone;
	struct wlr_buffer *buf = start_lit(0xff778899, &gone);
	wlr_buffer_drop(buf);
	CHECK(!gone); /* on screen */

	clear_log();
	stop_listening();
	wl_display_destroy(f.display);

	/* The off steps back to back (destroy cannot wait), in the order of
	 * a disable: the backlight off while the CRTC still scans out (a
	 * panel lit without video shows garbage), the CRTC off, the supply
	 * last, then the release. */
	CHECK_INT(f.rec.n_calls, 8);
	CHECK_SET(CALL_OFF_BACKLIGHT, BL, 0, EN | RST);
	CHECK_SET(CALL_OFF_RESET, RST, 0, EN);
	CHECK_SET(CALL_OFF_ENABLE, EN, 0, 0);
	if (f.rec.n_calls >= 8) {
		CHECK(f.snap[CALL_OFF_BACKLIGHT].crtc_active);
		CHECK(!f.snap[CALL_OFF_RESET].crtc_active);
		CHECK(!f.snap[CALL_OFF_ENABLE].crtc_active);
		CHECK_INT(f.rec.calls[7].kind, WLA_GPIO_CALL_RELEASE);
	}
	CHECK(!f.rec.requested);
	CHECK_INT(f.rec.levels, 0);
	CHECK_LOGGED("DSI-1", "destroyed while lit");
	CHECK(!LOGGED("buffer locks still held"));
	CHECK_INT(f.errors, 0);
	CHECK(gone);
}

static void a_buffer_dropped_while_the_panel_powers_on_is_kept_until_replaced(void)
{
	CHECK(setup() && start());
	bool a_gone, b_gone;
	struct wlr_buffer *a = buffer_create(0xffaa0000, &a_gone);
	struct wlr_buffer *b = buffer_create(0xff00bb00, &b_gone);
	CHECK(enable_output(a));
	wlr_buffer_drop(a); /* the client is gone before the panel is on */
	CHECK(!a_gone);
	CHECK(WAIT_UNTIL(panel_state() == WLA_PANEL_POWERING_ON && f.rec.n_calls >= 2));
	CHECK(!a_gone);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 1);

	CHECK(WAIT_UNTIL(f.presented >= 1));
	CHECK(!a_gone);
	capture_next();
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 0, 0), 0xffaa0000);
		CHECK_PIXEL(wla_image_pixel(f.cap.image, W - 1, H - 1), 0xffaa0000);
	}
	CHECK(WAIT_UNTIL(f.frames >= 1));
	int presented = f.presented;
	CHECK(commit_buffer(b));
	CHECK(!a_gone); /* on screen until b latches */
	CHECK(WAIT_UNTIL(f.presented > presented));
	CHECK(a_gone);
	CHECK_INT(wla_backend_buffer_locks(f.backend), 1);
	capture_next();
	if (f.cap.image) {
		CHECK_PIXEL(wla_image_pixel(f.cap.image, 5, 5), 0xff00bb00);
	}

	CHECK(disable_output());
	wlr_buffer_drop(b);
	CHECK(b_gone);
	finish();
}

/* Depth 3, and a disable delay longer than one vblank but shorter than
 * three: when BLANKED stops the CRTC, frames are still queued. The test
 * fills the queue within a vblank and sees it still holding frames after
 * the first latch on the disabled output: at 60 Hz that asks a loaded
 * machine to run it within 16 ms (it failed so under load), hence 10 Hz
 * and a 150 ms delay, both stretched by the time scale. */
#define SLOW_PERIOD_MS ((uint64_t)(100 * harness_time_scale()))
static void depth_3_and_a_slow_panel(struct wla_config *cfg)
{
	cfg->flip_depth = 3;
	cfg->outputs[0].modes[0].refresh_mhz = (int32_t)(1000000 / SLOW_PERIOD_MS);
	cfg->outputs[0].panel.off[0].wait_ms = (uint32_t)(SLOW_PERIOD_MS * 3 / 2);
}

static void a_buffer_waiting_for_power_on_still_gets_its_frame_event(void)
{
	setup_tweak = depth_3_and_a_slow_panel;
	CHECK(setup() && start());
	setup_tweak = NULL;
	struct wlr_buffer *a = buffer_create(0xff101010, NULL);
	struct wlr_buffer *c = buffer_create(0xff303030, NULL);
	struct wlr_buffer *q[3];
	CHECK(light_up(a));
	/* Fill the flip queue: the frame event comes at once while it has room. */
	for (int i = 0; i < 3; i++) {
		q[i] = buffer_create(0xff200000u + (uint32_t)i, NULL);
		int frames = f.frames;
		CHECK(commit_buffer(q[i]));
		if (i < 2) {
			CHECK(WAIT_UNTIL(f.frames > frames));
		}
	}
	CHECK(f.out->crtc->pending_frames >= 2);

	/* DPMS off; a frame latching on the disabled output ends wlroots'
	 * wait for its frame event; the rest stay queued until BLANKED. */
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK(WAIT_UNTIL(!f.output->frame_pending));
	CHECK(f.out->crtc->pending_frames >= 1);
	CHECK_INT(panel_state(), WLA_PANEL_POWERING_OFF);

	/* DPMS on, then the compositor's next buffer: it waits for the power
	 * cycle, and the frames cancelled at BLANKED are older than it. */
	wlr_output_enable(f.output, true);
	CHECK(wlr_output_commit(f.output));
	CHECK(commit_buffer(c));
	int frames = f.frames;
	CHECK(WAIT_UNTIL(panel_state() == WLA_PANEL_LIT));
	CHECK(WAIT_UNTIL(f.frames > frames));
	CHECK(!f.output->frame_pending);
	/* One frame event, c's: none for the old frames that latched while c
	 * waited, which would have let the compositor render ahead of it (two
	 * more periods show none comes late). */
	run_for(2 * SLOW_PERIOD_MS);
	CHECK_INT(f.frames, frames + 1);

	wlr_buffer_drop(a);
	wlr_buffer_drop(c);
	for (int i = 0; i < 3; i++) {
		wlr_buffer_drop(q[i]);
	}
	CHECK(disable_output());
	finish();
}

/*
 * DPMS on without a buffer (wlroots 0.15 commits none when the backend takes
 * the enable as it is): the enable waits for the panel's power-on, and then
 * the compositor gets a frame event for its first frame, as after any
 * bufferless enable. It got none when wlroots had counted the output
 * enabled since its commit (tinywl hung in dpms_drives_the_panel_in_order
 * about 1 run in 15 on a loaded machine, waiting for it).
 */
static void a_bufferless_enable_waiting_for_power_on_gets_a_frame_event(void)
{
	struct wlr_buffer *a = start_lit(0xff111111, NULL);
	wlr_output_enable(f.output, false);
	CHECK(wlr_output_commit(f.output));
	CHECK(WAIT_UNTIL(panel_state() == WLA_PANEL_OFF));
	CHECK(!f.output->frame_pending);
	int frames = f.frames;
	wlr_output_enable(f.output, true);
	CHECK(wlr_output_commit(f.output));
	CHECK(f.output->enabled);
	CHECK(WAIT_UNTIL(panel_state() == WLA_PANEL_ON || panel_state() == WLA_PANEL_LIT));
	CHECK(WAIT_UNTIL(f.frames > frames));
	wlr_buffer_drop(a);
	CHECK(disable_output());
	finish();
}

/*
 * Fault injection (suite 'faults'): the k-th GPIO set fails, for every set
 * of two power cycles (on, lit, off, on, lit). Wherever it fails, the lines
 * end at their safe off levels and the backlight is never on after the
 * failure, one error line names the chip, the output ends off and refuses
 * enables, every buffer is released, and the compositor goes on.
 */
static void a_gpio_set_failing_at_each_panel_step_leaves_the_compositor_running(void)
{
	for (size_t k = 1; k <= 8; k++) {
		start_failing_set(k);
		clear_log();
		bool gone[2];
		struct wlr_buffer *bufs[2] = {
			buffer_create(0xff102030, &gone[0]), buffer_create(0xff405060, &gone[1]),
		};
		bool failed = false;
		for (int cycle = 0; cycle < 2 && !failed; cycle++) {
			enable_output(bufs[0]);
			WAIT_UNTIL(panel_state() == WLA_PANEL_LIT ||
				panel_state() == WLA_PANEL_FAILED);
			if (panel_state() == WLA_PANEL_LIT) {
				commit_buffer(bufs[1]);
				run_for(20);
				wlr_output_enable(f.output, false);
				wlr_output_commit(f.output);
				WAIT_UNTIL(panel_state() == WLA_PANEL_OFF ||
					panel_state() == WLA_PANEL_FAILED);
			}
			failed = panel_state() == WLA_PANEL_FAILED;
		}
		run_for(20);
		if (!failed) {
			fprintf(stderr, "  set %zu never failed (%zu calls)\n", k, f.rec.n_calls);
		}
		CHECK(failed);
		CHECK_INT(f.errors, 1);
		CHECK_LOGGED("DSI-1", "chip 'test-chip'", "Input/output error");
		CHECK(!f.output->enabled);
		CHECK(!crtc_active());
		CHECK_INT(f.rec.levels, 0);
		/* After the failed set (which changed nothing), the backlight is
		 * never on. */
		size_t sets = 0;
		for (size_t i = 0; i < f.rec.n_calls; i++) {
			const struct wla_gpio_call *c = &f.rec.calls[i];
			if (c->kind == WLA_GPIO_CALL_SET && ++sets > k && (c->levels & BL)) {
				fprintf(stderr, "  set %zu failing: call %zu leaves the backlight on\n",
					k, i);
				harness_test_failures++;
			}
		}
		CHECK_INT(wla_backend_buffer_locks(f.backend), 0);
		for (int i = 0; i < 2; i++) {
			wlr_buffer_drop(bufs[i]);
			CHECK(gone[i]);
		}
		check_enable_refused();
		finish();
		CHECK(!f.rec.requested);
	}
}

/*
 * Fault (suite 'faults'): the backend destroyed with frames queued, a
 * capture pending and the panel mid-sequence, powering on or powering off.
 * The lines end at their safe off levels and are released, the capture is
 * answered (no image), every buffer is released and nothing is logged as an
 * error.
 */
static void destroying_the_backend_mid_sequence_releases_everything(void)
{
	for (int moment = 0; moment < 2; moment++) {
		setup_tweak = depth_3_and_a_slow_panel;
		CHECK(setup() && start());
		setup_tweak = NULL;
		bool gone[4];
		struct wlr_buffer *bufs[4];
		for (int i = 0; i < 4; i++) {
			bufs[i] = buffer_create(0xff000000u + (uint32_t)i * 0x111111u, &gone[i]);
		}
		if (moment == 0) {
			/* Powering on: the enable waits for the panel. */
			CHECK(enable_output(bufs[0]));
			CHECK(WAIT_UNTIL(f.rec.n_calls >= 2));
			CHECK_INT(panel_state(), WLA_PANEL_POWERING_ON);
		} else {
			CHECK(light_up(bufs[0]));
		}
		/* Lit: fill the flip queue, its frame event comes at once while it
		 * has room. Powering on: the enable's buffer owns wlroots' frame
		 * wait, so wlroots refuses more (rolled back). */
		for (int i = 1; i < 4; i++) {
			int frames = f.frames;
			if (!commit_buffer(bufs[i])) {
				CHECK(moment == 0);
				wlr_output_rollback(f.output);
			} else if (i < 3) {
				CHECK(WAIT_UNTIL(f.frames > frames));
			}
		}
		/* A capture waits for the next latch of an active CRTC (while the
		 * panel powers on, it is refused: nothing is on screen). */
		f.cap.done = false;
		if (moment == 1) {
			CHECK(wla_output_capture(f.output, test_capture_done, &f.cap) != NULL);
			CHECK(f.out->crtc->pending_frames >= 2);
			wlr_output_enable(f.output, false);
			CHECK(wlr_output_commit(f.output));
			CHECK(WAIT_UNTIL(panel_state() == WLA_PANEL_POWERING_OFF));
			CHECK(f.out->crtc->pending_frames >= 1);
			CHECK(!f.cap.done);
		}
		for (int i = 0; i < 4; i++) {
			wlr_buffer_drop(bufs[i]);
		}
		clear_log();
		stop_listening();
		wl_display_destroy(f.display);

		fprintf(stderr, "# moment %d: destroyed %s\n", moment,
			moment == 0 ? "powering on" : "powering off");
		CHECK(moment == 0 || f.cap.done);
		CHECK_INT(f.rec.levels, 0);
		CHECK(!f.rec.requested);
		for (int i = 0; i < 4; i++) {
			if (!gone[i]) {
				fprintf(stderr, "  buffer %d not released\n", i);
				harness_test_failures++;
			}
		}
		CHECK(!LOGGED("buffer locks still held"));
		CHECK_INT(f.errors, 0);
		wla_image_destroy(f.cap.image);
		f.cap.image = NULL;
	}
}

int main(int argc, char *argv[])
{
	bool faults = argc > 1 && strcmp(argv[1], "--faults") == 0;
	harness_init();
	wlr_log_init(WLR_DEBUG, log_func);
	unsetenv("WLA_OUTPUTS");
	unsetenv("WLA_CONFIG");
	unsetenv("WLA_GPIO_DRY_RUN");
	if (faults) {
		RUN_TEST(a_gpio_set_failing_at_each_panel_step_leaves_the_compositor_running);
		RUN_TEST(destroying_the_backend_mid_sequence_releases_everything);
		HARNESS_EXIT();
	}
	RUN_TEST(enabling_powers_the_panel_on_before_the_crtc);
	RUN_TEST(the_backlight_comes_on_only_after_the_first_latched_frame);
	RUN_TEST(disabling_turns_the_backlight_off_first_and_the_supply_last);
	RUN_TEST(re_enabling_during_power_off_ends_on_through_a_legal_sequence);
	RUN_TEST(a_missing_chip_leaves_the_output_off_with_one_error);
	RUN_TEST(busy_lines_leave_the_output_off);
	RUN_TEST(a_failed_set_mid_sequence_turns_the_output_off);
	RUN_TEST(a_listener_unplugging_on_a_failed_panels_event_is_safe);
	RUN_TEST(destroying_the_backend_while_lit_drives_the_lines_off);
	RUN_TEST(a_buffer_dropped_while_the_panel_powers_on_is_kept_until_replaced);
	RUN_TEST(a_buffer_waiting_for_power_on_still_gets_its_frame_event);
	RUN_TEST(a_bufferless_enable_waiting_for_power_on_gets_a_frame_event);
	HARNESS_EXIT();
}
