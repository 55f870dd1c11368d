/*
 * The panel sequencing state machine (backend/panel/panel.c) against the
 * recording provider and an injected clock.
 *
 * The panel under test (lines by bit: enable 0, reset 1, backlight 2):
 *   power-on   enable=1 wait 20 | reset=0 wait 50 | (first frame) backlight=1
 *   power-off  backlight=0 wait 30 | reset=1 | enable=0 wait 100
 *   min off 500 ms; reset is active-low, so its logical 1 is physical 0:
 *   the safe off state is physical 000, reset deasserted is physical 010.
 */
#include <time.h>
#include <wayland-server-core.h>
#include "lib/gpio-record.h"
#include "panel-helpers.h"

#define EN 0x1u
#define RST 0x2u
#define BL 0x4u

static const char simple_panel[] =
	"[output]\n"
	"name = DSI-1\n"
	"mode = 800x480\n"
	"panel-chip = panel-gpio\n"
	"panel-line = enable 3\n"
	"panel-line = reset 4 active-low\n"
	"panel-line = backlight 5\n"
	"panel-preset = simple\n"
	"panel-delay-prepare = 20\n"
	"panel-delay-enable = 50\n"
	"panel-delay-disable = 30\n"
	"panel-delay-unprepare = 100\n"
	"panel-min-off-time = 500\n";

static bool setup_simple(void)
{
	return fx_setup(simple_panel) && fx_create();
}

/* Power-on from create (t=0): steps at 500 and 520, ON at 570. */
static void power_on_to_on(void)
{
	CHECK_INT(wla_panel_power_on(fx.panel), 0);
	fx_run_until(570 * MS);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_ON);
}

/* The first frame latches at t: the backlight step runs at t. */
static void latch_at(uint64_t t)
{
	fx_run_until(t);
	CHECK_INT(wla_panel_first_frame_latched(fx.panel), 0);
	fx_run_until(t);
}

static void create_requests_all_lines_in_one_call_at_their_off_values(void)
{
	CHECK(setup_simple());
	CHECK_INT(fx.rec.n_calls, 1);
	CHECK_CALL(0, WLA_GPIO_CALL_REQUEST, 0, EN | RST | BL, 0);
	CHECK_GPIO_REQUEST(fx.rec, "panel-gpio", "wlatomic:DSI-1", 3, 4, 5);
	/* Logically reset is asserted (1), physically low. */
	CHECK_INT(wla_panel_get_values(fx.panel), RST);
	CHECK_INT(fx.rec.levels, 0);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_OFF);
	CHECK_INT(wla_panel_next_deadline_ns(fx.panel), WLA_PANEL_NO_DEADLINE);
	fx_teardown();
	CHECK_INT(fx.rec.n_calls, 2);
	CHECK_CALL(1, WLA_GPIO_CALL_RELEASE, 0, 0, 0);
	CHECK_INT(harness_log_n, 0);
}

static void power_on_runs_its_steps_in_order_with_the_configured_delays(void)
{
	CHECK(setup_simple());
	fx.now = 600 * MS; /* past the minimum off time counted from the request */
	CHECK_INT(wla_panel_power_on(fx.panel), 0);
	/* Nothing is driven inside the request: the owner's timer runs it. */
	CHECK_INT(fx.rec.n_sets, 0);
	CHECK_INT(fx.scheduled, 500 * MS);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_POWERING_ON);
	fx_run_until(2000 * MS);
	CHECK_INT(fx.rec.n_sets, 2);
	CHECK_SET(1, 600, EN, EN);
	CHECK_SET(2, 620, RST, RST); /* reset=0 on an active-low line: high */
	CHECK_INT(fx.n_events, 1);
	CHECK_EVENT(0, WLA_PANEL_EVENT_ON, 670);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_ON);
	CHECK_INT(wla_panel_get_values(fx.panel), EN);
	CHECK_INT(fx.scheduled, WLA_PANEL_NO_DEADLINE);
	fx_teardown();
}

static void active_low_line_is_driven_inverted(void)
{
	CHECK(setup_simple());
	CHECK_INT(fx.rec.levels & RST, 0); /* asserted = low */
	power_on_to_on();
	CHECK_INT(wla_panel_get_values(fx.panel) & RST, 0); /* deasserted */
	CHECK_INT(fx.rec.levels & RST, RST);                /* = high */
	CHECK_INT(fx.rec.levels & EN, EN);                  /* active-high: as is */
	CHECK_INT(wla_panel_power_off(fx.panel), 0);
	fx_run_until(5000 * MS);
	CHECK_INT(wla_panel_get_values(fx.panel), RST);
	CHECK_INT(fx.rec.levels, 0);
	fx_teardown();
}

static void backlight_comes_on_only_after_the_first_latched_frame(void)
{
	CHECK(setup_simple());
	CHECK_INT(wla_panel_power_on(fx.panel), 0);
	fx_run_until(510 * MS);
	/* A latch before ON is refused, with one line, and changes nothing. */
	harness_log_clear();
	CHECK_INT(wla_panel_first_frame_latched(fx.panel), -EINVAL);
	CHECK_INT(harness_log_n, 1);
	CHECK_LOGGED("panel DSI-1", "first frame latched while powering-on", "backlight stays off");
	fx_run_until(10000 * MS);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_ON);
	for (size_t i = 0; i < fx.rec.n_calls; i++) {
		CHECK_INT(fx.rec.calls[i].levels & BL, 0);
	}
	CHECK_INT(wla_panel_first_frame_latched(fx.panel), 0);
	CHECK_INT(fx.rec.levels & BL, 0); /* at the next advance, not inside the call */
	CHECK_INT(fx.scheduled, 570 * MS);
	fx_run_until(10000 * MS);
	CHECK_INT(fx.rec.n_sets, 3);
	CHECK_SET(3, 10000, BL, BL);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_LIT);
	/* Later latches coalesce. */
	CHECK_INT(wla_panel_first_frame_latched(fx.panel), 0);
	fx_run_until(11000 * MS);
	CHECK_INT(fx.rec.n_sets, 3);
	fx_teardown();
}

static void power_off_turns_the_backlight_off_first_and_the_supply_last(void)
{
	CHECK(setup_simple());
	power_on_to_on();
	latch_at(600 * MS);
	fx_run_until(1000 * MS);
	CHECK_INT(wla_panel_power_off(fx.panel), 0);
	fx_run_until(5000 * MS);
	CHECK_INT(fx.rec.n_sets, 6);
	CHECK_SET(3, 600, BL, BL);
	CHECK_SET(4, 1000, BL, 0);
	CHECK_SET(5, 1030, RST, 0);
	CHECK_SET(6, 1030, EN, 0);
	CHECK_INT(fx.n_events, 3);
	CHECK_EVENT(0, WLA_PANEL_EVENT_ON, 570);
	CHECK_EVENT(1, WLA_PANEL_EVENT_BLANKED, 1030); /* after the disable delay */
	CHECK_EVENT(2, WLA_PANEL_EVENT_OFF, 1130);     /* after the unprepare delay */
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_OFF);
	fx_teardown();
}

static void one_provider_call_per_step_over_a_cycle(void)
{
	CHECK(setup_simple());
	power_on_to_on();
	latch_at(600 * MS);
	wla_panel_power_off(fx.panel);
	fx_run_until(2000 * MS);
	/* request + 2 on + 1 backlight + 3 off steps, nothing else */
	CHECK_INT(fx.rec.n_calls, 7);
	CHECK_INT(fx.rec.n_sets, 6);
	for (size_t i = 1; i < fx.rec.n_calls; i++) {
		/* Each set names exactly its step's line. */
		uint32_t m = fx.rec.calls[i].mask;
		CHECK(m == EN || m == RST || m == BL);
	}
	fx_teardown();
}

static void power_off_when_unlit_skips_the_backlight_step(void)
{
	CHECK(setup_simple());
	power_on_to_on();
	fx_run_until(700 * MS);
	CHECK_INT(wla_panel_power_off(fx.panel), 0);
	fx_run_until(5000 * MS);
	CHECK_INT(fx.rec.n_sets, 4);
	CHECK_SET(3, 700, RST, 0);
	CHECK_SET(4, 700, EN, 0);
	CHECK_INT(fx.n_events, 3);
	CHECK_EVENT(1, WLA_PANEL_EVENT_BLANKED, 700);
	CHECK_EVENT(2, WLA_PANEL_EVENT_OFF, 800);
	fx_teardown();
}

static void minimum_off_time_is_honoured_before_power_on(void)
{
	CHECK(setup_simple());
	power_on_to_on();
	wla_panel_power_off(fx.panel);
	fx_run_until(670 * MS); /* off steps at 570, OFF at 670 */
	CHECK_EVENT(2, WLA_PANEL_EVENT_OFF, 670);
	fx_run_until(700 * MS);
	CHECK_INT(wla_panel_power_on(fx.panel), 0);
	CHECK_INT(fx.scheduled, 1170 * MS);
	fx_run_until(1169 * MS);
	CHECK_INT(fx.rec.n_sets, 4);
	fx_run_until(5000 * MS);
	CHECK_INT(fx.rec.n_sets, 6);
	CHECK_SET(5, 1170, EN, EN);
	CHECK_SET(6, 1190, RST, RST);
	CHECK_EVENT(3, WLA_PANEL_EVENT_ON, 1240);
	fx_teardown();
}

static void power_on_during_power_off_finishes_off_waits_min_off_then_powers_on(void)
{
	CHECK(setup_simple());
	power_on_to_on();
	latch_at(600 * MS);
	wla_panel_power_off(fx.panel);
	fx_run_until(610 * MS); /* backlight off at 600, disable delay until 630 */
	CHECK_INT(fx.rec.n_sets, 4);
	CHECK_INT(wla_panel_power_on(fx.panel), 0);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_POWERING_OFF);
	fx_run_until(5000 * MS);
	CHECK_INT(fx.rec.n_sets, 8);
	CHECK_SET(4, 600, BL, 0);
	CHECK_SET(5, 630, RST, 0);
	CHECK_SET(6, 630, EN, 0);
	/* off ends at 730, min off 500 */
	CHECK_SET(7, 1230, EN, EN);
	CHECK_SET(8, 1250, RST, RST);
	CHECK_INT(fx.n_events, 3);
	CHECK_EVENT(1, WLA_PANEL_EVENT_BLANKED, 630);
	CHECK_EVENT(2, WLA_PANEL_EVENT_ON, 1300); /* no OFF: on was asked for */
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_ON);
	fx_teardown();
}

static void power_off_during_first_on_step_waits_its_delay_and_undoes_it(void)
{
	CHECK(setup_simple());
	wla_panel_power_on(fx.panel);
	fx_run_until(505 * MS); /* enable=1 at 500, prepare delay until 520 */
	CHECK_INT(fx.rec.n_sets, 1);
	CHECK_INT(wla_panel_power_off(fx.panel), 0);
	fx_run_until(519 * MS);
	CHECK_INT(fx.rec.n_sets, 1);
	fx_run_until(5000 * MS);
	/* reset was never deasserted: the off sequence joins at enable=0 */
	CHECK_INT(fx.rec.n_sets, 2);
	CHECK_SET(1, 500, EN, EN);
	CHECK_SET(2, 520, EN, 0);
	CHECK_INT(fx.n_events, 1);
	CHECK_EVENT(0, WLA_PANEL_EVENT_OFF, 620);
	CHECK_INT(fx.rec.levels, 0);
	fx_teardown();
}

static void power_off_during_second_on_step_finishes_its_delay_then_runs_off(void)
{
	CHECK(setup_simple());
	wla_panel_power_on(fx.panel);
	fx_run_until(530 * MS); /* reset=0 at 520, enable delay until 570 */
	CHECK_INT(wla_panel_power_off(fx.panel), 0);
	fx_run_until(5000 * MS);
	CHECK_INT(fx.rec.n_sets, 4);
	CHECK_SET(3, 570, RST, 0);
	CHECK_SET(4, 570, EN, 0);
	/* ON was never reached: no ON, no BLANKED */
	CHECK_INT(fx.n_events, 1);
	CHECK_EVENT(0, WLA_PANEL_EVENT_OFF, 670);
	fx_teardown();
}

static void power_off_while_waiting_min_off_drives_nothing(void)
{
	CHECK(setup_simple());
	CHECK_INT(wla_panel_power_on(fx.panel), 0);
	fx_run_until(100 * MS);
	CHECK_INT(wla_panel_power_off(fx.panel), 1);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_OFF);
	fx_run_until(5000 * MS);
	CHECK_INT(fx.rec.n_sets, 0);
	CHECK_INT(fx.n_events, 0);
	fx_teardown();
}

static void repeated_requests_coalesce(void)
{
	CHECK(setup_simple());
	CHECK_INT(wla_panel_power_on(fx.panel), 0);
	CHECK_INT(wla_panel_power_on(fx.panel), 0);
	fx_run_until(510 * MS);
	CHECK_INT(wla_panel_power_on(fx.panel), 0);
	fx_run_until(600 * MS);
	CHECK_INT(wla_panel_power_on(fx.panel), 1);
	CHECK_INT(fx.rec.n_sets, 2);
	CHECK_INT(fx.n_events, 1);
	CHECK_INT(wla_panel_power_off(fx.panel), 0);
	CHECK_INT(wla_panel_power_off(fx.panel), 0);
	fx_run_until(610 * MS);
	CHECK_INT(wla_panel_power_off(fx.panel), 0);
	fx_run_until(5000 * MS);
	CHECK_INT(wla_panel_power_off(fx.panel), 1);
	CHECK_INT(fx.rec.n_sets, 4);
	CHECK_INT(fx.n_events, 3);
	fx_teardown();
}

/* Before a destroy that cannot wait: the backlight goes off alone (the
 * caller then stops scanout), the destroy runs the rest; no event. Blank
 * again, or on a panel without video, does nothing. */
static void blank_runs_the_backlight_step_alone_and_destroy_the_rest(void)
{
	CHECK(setup_simple());
	power_on_to_on();
	latch_at(600 * MS);
	size_t events = fx.n_events;
	wla_panel_blank(fx.panel);
	CHECK_INT(fx.rec.n_calls, 5);
	CHECK_SET(4, 600, BL, 0);
	wla_panel_blank(fx.panel);
	CHECK_INT(fx.rec.n_calls, 5);
	CHECK_INT(fx.n_events, events);
	wla_panel_destroy(fx.panel);
	fx.panel = NULL;
	CHECK_INT(fx.rec.n_calls, 8);
	CHECK_SET(5, 600, RST, 0);
	CHECK_SET(6, 600, EN, 0);
	CHECK_CALL(7, WLA_GPIO_CALL_RELEASE, 600, 0, 0);
	CHECK_INT(fx.rec.levels, 0);
	CHECK_INT(fx.n_events, events);

	CHECK(setup_simple());
	wla_panel_blank(fx.panel); /* off: nothing to blank */
	CHECK_INT(fx.rec.n_calls, 1); /* the request */
	fx_teardown();
}

static void on_then_off_before_any_advance_ends_off_without_a_set(void)
{
	CHECK(setup_simple());
	power_on_to_on();
	CHECK_INT(wla_panel_power_off(fx.panel), 0);
	CHECK_INT(wla_panel_power_on(fx.panel), 1);
	fx_run_until(5000 * MS);
	CHECK_INT(fx.rec.n_sets, 2);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_ON);
	fx_teardown();
}

static void destroy_while_lit_runs_the_off_steps_back_to_back_and_says_so(void)
{
	CHECK(setup_simple());
	power_on_to_on();
	latch_at(600 * MS);
	harness_log_clear();
	size_t events = fx.n_events;
	wla_panel_destroy(fx.panel);
	fx.panel = NULL;
	CHECK_INT(fx.rec.n_calls, 8);
	CHECK_SET(4, 600, BL, 0);
	CHECK_SET(5, 600, RST, 0);
	CHECK_SET(6, 600, EN, 0);
	CHECK_CALL(7, WLA_GPIO_CALL_RELEASE, 600, 0, 0);
	CHECK_INT(fx.rec.levels, 0);
	CHECK_INT(fx.n_events, events);
	CHECK_INT(harness_log_n, 1);
	CHECK_LOGGED("panel DSI-1: destroyed while lit", "steps 1..3 of 3",
		"130 ms of delays not waited");
}

static void destroy_during_power_on_undoes_what_was_driven(void)
{
	CHECK(setup_simple());
	wla_panel_power_on(fx.panel);
	fx_run_until(510 * MS);
	harness_log_clear();
	wla_panel_destroy(fx.panel);
	fx.panel = NULL;
	CHECK_INT(fx.rec.n_sets, 2);
	CHECK_SET(2, 510, EN, 0);
	CHECK_CALL(3, WLA_GPIO_CALL_RELEASE, 510, 0, 0);
	/* 10 ms left of prepare, 100 ms of unprepare */
	CHECK_LOGGED("destroyed while powering-on", "steps 3..3 of 3", "110 ms of delays not waited");
}

static void destroy_during_power_off_continues_from_the_next_step(void)
{
	CHECK(setup_simple());
	power_on_to_on();
	latch_at(600 * MS);
	wla_panel_power_off(fx.panel);
	fx_run_until(610 * MS);
	wla_panel_destroy(fx.panel);
	fx.panel = NULL;
	CHECK_INT(fx.rec.n_sets, 6);
	CHECK_SET(4, 600, BL, 0);
	CHECK_SET(5, 610, RST, 0);
	CHECK_SET(6, 610, EN, 0);
	CHECK_LOGGED("destroyed while powering-off", "steps 2..3 of 3", "120 ms of delays");
}

static void destroy_when_off_only_releases(void)
{
	CHECK(setup_simple());
	power_on_to_on();
	wla_panel_power_off(fx.panel);
	fx_run_until(5000 * MS);
	harness_log_clear();
	wla_panel_destroy(fx.panel);
	fx.panel = NULL;
	CHECK_INT(fx.rec.n_sets, 4);
	CHECK_CALL(fx.rec.n_calls - 1, WLA_GPIO_CALL_RELEASE, 5000, 0, 0);
	CHECK_INT(harness_log_n, 0);
}

static void missing_chip_fails_create_with_one_line_naming_it(void)
{
	CHECK(fx_setup(simple_panel));
	fx.rec.fail_request = -ENOENT;
	fx.rec.fail_request_line = -1;
	harness_log_clear();
	int err = 0;
	fx.panel = wla_panel_create(&fx.cfg.outputs[0].panel, "DSI-1", &fx.rec.provider,
		&fx_clock, fx_notify, &fx, &err);
	CHECK(fx.panel == NULL);
	CHECK_INT(err, -ENOENT);
	CHECK_INT(harness_log_n, 1);
	CHECK_LOGGED("panel DSI-1: chip 'panel-gpio': cannot open: No such file or directory");
	CHECK_INT(fx.rec.requested, false);
}

static void busy_line_fails_create_with_one_line_naming_chip_and_line(void)
{
	CHECK(fx_setup(simple_panel));
	fx.rec.fail_request = -EBUSY;
	fx.rec.fail_request_line = 1;
	harness_log_clear();
	int err = 0;
	fx.panel = wla_panel_create(&fx.cfg.outputs[0].panel, "DSI-1", &fx.rec.provider,
		&fx_clock, fx_notify, &fx, &err);
	CHECK(fx.panel == NULL);
	CHECK_INT(err, -EBUSY);
	CHECK_INT(harness_log_n, 1);
	CHECK_LOGGED("panel DSI-1: chip 'panel-gpio' line 'reset' (offset 4)",
		"Device or resource busy", "held by 'recording-test'");
}

static void failed_set_mid_power_on_drives_safe_off_and_reports_failure(void)
{
	CHECK(setup_simple());
	fx.rec.fail_set = -EIO;
	fx.rec.fail_set_index = 2; /* reset=0 */
	wla_panel_power_on(fx.panel);
	harness_log_clear();
	fx_run_until(5000 * MS);
	CHECK_INT(harness_log_n, 1);
	CHECK_LOGGED("panel DSI-1: chip 'panel-gpio': power-on step setting reset=0 (offset 4) "
		"failed: Input/output error; driving all lines to their off values");
	CHECK_INT(fx.rec.n_sets, 3);
	CHECK_SET(1, 500, EN, EN);
	CHECK_CALL(2, WLA_GPIO_CALL_SET, 520, RST, RST);
	CHECK_INT(fx.rec.calls[2].result, -EIO);
	CHECK_SET(3, 520, EN | RST | BL, 0); /* every line to its safe off level */
	CHECK_INT(fx.rec.levels, 0);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_FAILED);
	CHECK_INT(wla_panel_get_error(fx.panel), -EIO);
	CHECK_INT(fx.n_events, 1);
	CHECK_EVENT(0, WLA_PANEL_EVENT_FAILED, 520);
	CHECK_INT(fx.event_errors[0], -EIO);
	/* It stays failed: no power-on, nothing driven. */
	harness_log_clear();
	CHECK_INT(wla_panel_power_on(fx.panel), -EIO);
	CHECK_LOGGED("panel DSI-1: power-on refused", "chip 'panel-gpio'");
	CHECK_INT(wla_panel_power_off(fx.panel), 1);
	fx_run_until(10000 * MS);
	CHECK_INT(fx.rec.n_sets, 3);
	/* Destroy only releases. */
	fx_teardown();
	CHECK_INT(fx.rec.n_sets, 3);
}

static void failed_backlight_set_drives_safe_off_and_reports_failure(void)
{
	CHECK(setup_simple());
	fx.rec.fail_set = -EIO;
	fx.rec.fail_set_index = 3;
	power_on_to_on();
	fx_run_until(600 * MS);
	harness_log_clear();
	latch_at(600 * MS);
	CHECK_INT(harness_log_n, 1);
	CHECK_LOGGED("chip 'panel-gpio': backlight step setting backlight=1 (offset 5) failed");
	CHECK_SET(4, 600, EN | RST | BL, 0);
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_FAILED);
	CHECK_EVENT(1, WLA_PANEL_EVENT_FAILED, 600);
	fx_teardown();
}

static void failed_set_with_failing_safe_off_says_so_too(void)
{
	CHECK(setup_simple());
	fx.rec.fail_set = -EIO;
	fx.rec.fail_set_index = 1;
	fx.rec.fail_set_after = true;
	wla_panel_power_on(fx.panel);
	harness_log_clear();
	fx_run_until(5000 * MS);
	CHECK_INT(harness_log_n, 2);
	CHECK_LOGGED("power-on step setting enable=1 (offset 3) failed: Input/output error");
	CHECK_LOGGED("driving all lines to their off values failed too");
	CHECK_INT(wla_panel_get_state(fx.panel), WLA_PANEL_FAILED);
	CHECK_INT(fx.n_events, 1);
	fx_teardown();
}

static void notify_callback_may_destroy_the_panel(void)
{
	CHECK(setup_simple());
	fx.destroy_on_event = true;
	fx.destroy_event = WLA_PANEL_EVENT_ON;
	wla_panel_power_on(fx.panel);
	fx_run_until(5000 * MS);
	CHECK(fx.panel == NULL);
	CHECK_INT(fx.n_events, 1);
	/* destroyed while on: the off steps ran at once, then the release */
	CHECK_SET(3, 570, RST, 0);
	CHECK_SET(4, 570, EN, 0);
	CHECK_CALL(5, WLA_GPIO_CALL_RELEASE, 570, 0, 0);
}

static void schedule_follows_next_deadline(void)
{
	CHECK(setup_simple());
	wla_panel_power_on(fx.panel);
	CHECK_INT(fx.scheduled, 500 * MS);
	fx.now = 500 * MS;
	wla_panel_advance(fx.panel, fx.now);
	CHECK_INT(fx.scheduled, 520 * MS);
	CHECK_INT(wla_panel_next_deadline_ns(fx.panel), 520 * MS);
	/* An early advance changes nothing. */
	fx.now = 519 * MS;
	wla_panel_advance(fx.panel, fx.now);
	CHECK_INT(fx.rec.n_sets, 1);
	CHECK_INT(fx.scheduled, 520 * MS);
	fx_teardown();
}

static void late_timer_never_shortens_the_next_delay(void)
{
	CHECK(setup_simple());
	wla_panel_power_on(fx.panel);
	/* The owner wakes up 40 ms late: reset=0 runs then, and ON waits the full
	 * enable delay from there. */
	fx.now = 500 * MS;
	wla_panel_advance(fx.panel, fx.now);
	fx.now = 560 * MS;
	wla_panel_advance(fx.panel, fx.now);
	CHECK_SET(2, 560, RST, RST);
	CHECK_INT(fx.scheduled, 610 * MS);
	fx_run_until(700 * MS);
	CHECK_EVENT(0, WLA_PANEL_EVENT_ON, 610);
	fx_teardown();
}

static const char custom_panel[] =
	"[output]\n"
	"name = LVDS-1\n"
	"mode = 1024x600\n"
	"panel-chip = /dev/gpiochip7\n"
	"panel-line = vdd 0\n"
	"panel-line = stby 1 active-low\n"
	"panel-line = bl-en 2\n"
	"panel-line = pwm 3\n"
	"panel-on-step = vdd=1 wait=10\n"
	"panel-on-step = stby=0 wait=5\n"
	"panel-lit-step = bl-en=1 pwm=1\n"
	"panel-off-step = bl-en=0 pwm=0 wait=7\n"
	"panel-off-step = stby=1 vdd=0 wait=40\n";

static void custom_steps_set_several_lines_in_one_call(void)
{
	CHECK(fx_setup(custom_panel) && fx_create());
	/* stby is active-low and its safe value is 1: physical 0 */
	CHECK_CALL(0, WLA_GPIO_CALL_REQUEST, 0, 0xf, 0);
	wla_panel_power_on(fx.panel);
	fx_run_until(100 * MS);
	wla_panel_first_frame_latched(fx.panel);
	fx_run_until(100 * MS);
	wla_panel_power_off(fx.panel);
	fx_run_until(1000 * MS);
	CHECK_INT(fx.rec.n_sets, 5);
	CHECK_SET(1, 0, 0x1, 0x1);
	CHECK_SET(2, 10, 0x2, 0x2);
	CHECK_SET(3, 100, 0xc, 0xc);
	CHECK_SET(4, 100, 0xc, 0x0);
	CHECK_SET(5, 107, 0x3, 0x0);
	CHECK_EVENT(1, WLA_PANEL_EVENT_BLANKED, 107);
	CHECK_EVENT(2, WLA_PANEL_EVENT_OFF, 147);
	fx_teardown();
}

/* The real libgpiod provider needs no hardware to refuse a chip that is not there. */
static void gpiod_provider_names_a_missing_chip(void)
{
	CHECK(fx_setup(simple_panel));
	struct wla_config_panel desc = fx.cfg.outputs[0].panel;
	static const char *const chips[] = { "wla-no-such-chip", "/dev/wla-no-such-gpiochip" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(desc.chip, sizeof(desc.chip), "%s", chips[i]);
		harness_log_clear();
		int err = 0;
		struct wla_panel *panel = wla_panel_create(&desc, "DSI-1", wla_gpiod_provider(),
			&fx_clock, fx_notify, &fx, &err);
		CHECK(panel == NULL);
		CHECK_INT(err, -ENOENT);
		CHECK_INT(harness_log_n, 1);
		char want[128];
		snprintf(want, sizeof(want), "panel DSI-1: chip '%s': cannot open: No such file or "
			"directory", chips[i]);
		CHECK_LOGGED(want);
	}
}

/* The loop adapter on a real wl_event_loop and clock, with short delays. */

struct loop_run {
	struct wl_event_loop *loop;
	struct wla_panel_loop *pl;
	enum wla_panel_event events[8];
	size_t n_events;
	bool done;
};

static void loop_notify(struct wla_panel *panel, enum wla_panel_event event, int error,
	void *data)
{
	struct loop_run *run = data;
	if (run->n_events < 8) {
		run->events[run->n_events++] = event;
	}
	if (event == WLA_PANEL_EVENT_ON) {
		wla_panel_first_frame_latched(panel);
	} else {
		run->done = event == WLA_PANEL_EVENT_OFF || event == WLA_PANEL_EVENT_FAILED;
	}
}

static uint64_t real_now(void *data)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void loop_adapter_runs_a_cycle_on_timers(void)
{
	static const char text[] =
		"[output]\n"
		"mode = 640x480\n"
		"panel-chip = panel-gpio\n"
		"panel-line = enable 0\n"
		"panel-line = reset 1\n"
		"panel-line = backlight 2\n"
		"panel-preset = simple\n"
		"panel-delay-prepare = 15\n"
		"panel-delay-enable = 10\n"
		"panel-delay-disable = 5\n"
		"panel-delay-unprepare = 20\n";
	CHECK(fx_setup(text));
	fx.rec.now = real_now;
	struct loop_run run = { .loop = wl_event_loop_create() };
	run.pl = wla_panel_loop_create(run.loop, &fx.cfg.outputs[0].panel, "Virtual-1",
		&fx.rec.provider, loop_notify, &run, NULL);
	CHECK(run.pl != NULL);
	if (!run.pl) {
		wl_event_loop_destroy(run.loop);
		return;
	}
	struct wla_panel *panel = wla_panel_loop_get_panel(run.pl);
	CHECK_INT(wla_panel_power_on(panel), 0);
	/* Lit (or failed: the checks below say so), then off again. */
	if (!HARNESS_WAIT_UNTIL(run.loop, run.done || wla_panel_get_state(panel) == WLA_PANEL_LIT,
		5000)) {
		fprintf(stderr, "  panel Virtual-1: state %s after 5000 ms x %g, waited for %s; %zu "
			"events\n", wla_panel_state_name(wla_panel_get_state(panel)),
			harness_time_scale(), wla_panel_state_name(WLA_PANEL_LIT), run.n_events);
	}
	if (wla_panel_get_state(panel) == WLA_PANEL_LIT) {
		CHECK_INT(wla_panel_power_off(panel), 0);
	}
	if (!HARNESS_WAIT_UNTIL(run.loop, run.done, 5000)) {
		fprintf(stderr, "  panel Virtual-1: done still false after 5000 ms x %g, state %s; "
			"%zu events\n", harness_time_scale(),
			wla_panel_state_name(wla_panel_get_state(panel)), run.n_events);
	}
	CHECK(run.done);
	CHECK_INT(run.n_events, 3);
	CHECK_INT(run.events[0], WLA_PANEL_EVENT_ON);
	CHECK_INT(run.events[1], WLA_PANEL_EVENT_BLANKED);
	CHECK_INT(run.events[2], WLA_PANEL_EVENT_OFF);
	/* enable, reset, backlight on, backlight off, reset, enable */
	CHECK_INT(fx.rec.n_sets, 6);
	const struct wla_gpio_call *c = fx.rec.calls;
	CHECK(c[2].time_ns - c[1].time_ns >= 15 * MS);
	CHECK(c[3].time_ns - c[2].time_ns >= 10 * MS);
	CHECK(c[5].time_ns - c[4].time_ns >= 5 * MS);
	CHECK(real_now(NULL) - c[6].time_ns >= 20 * MS);
	wla_panel_loop_destroy(run.pl);
	wl_event_loop_destroy(run.loop);
	CHECK_INT(fx.rec.calls[fx.rec.n_calls - 1].kind, WLA_GPIO_CALL_RELEASE);
}

int main(void)
{
	harness_init();
	RUN_TEST(create_requests_all_lines_in_one_call_at_their_off_values);
	RUN_TEST(power_on_runs_its_steps_in_order_with_the_configured_delays);
	RUN_TEST(active_low_line_is_driven_inverted);
	RUN_TEST(backlight_comes_on_only_after_the_first_latched_frame);
	RUN_TEST(power_off_turns_the_backlight_off_first_and_the_supply_last);
	RUN_TEST(one_provider_call_per_step_over_a_cycle);
	RUN_TEST(power_off_when_unlit_skips_the_backlight_step);
	RUN_TEST(minimum_off_time_is_honoured_before_power_on);
	RUN_TEST(power_on_during_power_off_finishes_off_waits_min_off_then_powers_on);
	RUN_TEST(power_off_during_first_on_step_waits_its_delay_and_undoes_it);
	RUN_TEST(power_off_during_second_on_step_finishes_its_delay_then_runs_off);
	RUN_TEST(power_off_while_waiting_min_off_drives_nothing);
	RUN_TEST(repeated_requests_coalesce);
	RUN_TEST(on_then_off_before_any_advance_ends_off_without_a_set);
	RUN_TEST(destroy_while_lit_runs_the_off_steps_back_to_back_and_says_so);
	RUN_TEST(blank_runs_the_backlight_step_alone_and_destroy_the_rest);
	RUN_TEST(destroy_during_power_on_undoes_what_was_driven);
	RUN_TEST(destroy_during_power_off_continues_from_the_next_step);
	RUN_TEST(destroy_when_off_only_releases);
	RUN_TEST(missing_chip_fails_create_with_one_line_naming_it);
	RUN_TEST(busy_line_fails_create_with_one_line_naming_chip_and_line);
	RUN_TEST(failed_set_mid_power_on_drives_safe_off_and_reports_failure);
	RUN_TEST(failed_backlight_set_drives_safe_off_and_reports_failure);
	RUN_TEST(failed_set_with_failing_safe_off_says_so_too);
	RUN_TEST(notify_callback_may_destroy_the_panel);
	RUN_TEST(schedule_follows_next_deadline);
	RUN_TEST(late_timer_never_shortens_the_next_delay);
	RUN_TEST(custom_steps_set_several_lines_in_one_call);
	RUN_TEST(gpiod_provider_names_a_missing_chip);
	RUN_TEST(loop_adapter_runs_a_cycle_on_timers);
	HARNESS_EXIT();
}
