/* The panel-* keys of the config parser (backend/panel/config.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "backend/panel.h"
#include "harness.h"
#include "wlatomic/config.h"

#define EN 0x1u
#define RST 0x2u
#define BL 0x4u

#define HEAD "[output]\nname = DSI-1\nmode = 800x480\n"
/* Lines 4..6 of every text below. */
#define LINES "panel-chip = panel-gpio\npanel-line = enable 3\n" \
	"panel-line = reset 4 active-low\n"
#define BACKLIGHT "panel-line = backlight 5\n"

static struct wla_config cfg;

static int parse(const char *text)
{
	wla_config_init(&cfg);
	harness_log_clear();
	return wla_config_parse_text(&cfg, "t.conf", text);
}

/* text is refused with exactly one line holding every given substring. */
#define CHECK_REFUSED(text, ...) \
	do { \
		CHECK_INT(parse(text), -EINVAL); \
		CHECK_INT(harness_log_n, 1); \
		CHECK_LOGGED(__VA_ARGS__); \
	} while (0)

#define CHECK_STEP(s, mask_, values_, wait_) \
	do { \
		CHECK_INT((s).mask, mask_); \
		CHECK_INT((s).values, values_); \
		CHECK_INT((s).wait_ms, wait_); \
	} while (0)

static void output_without_panel_keys_has_no_panel(void)
{
	CHECK_INT(parse(HEAD), 0);
	struct wla_config_panel zero;
	memset(&zero, 0, sizeof(zero));
	CHECK(memcmp(&cfg.outputs[0].panel, &zero, sizeof(zero)) == 0);
	CHECK_INT(harness_log_n, 0);
}

static void preset_simple_builds_the_panel_simple_sequences(void)
{
	CHECK_INT(parse(HEAD LINES BACKLIGHT
		"panel-preset = simple\n"
		"panel-delay-prepare = 20\n"
		"panel-delay-enable = 50\n"
		"panel-delay-disable = 30\n"
		"panel-delay-unprepare = 100\n"
		"panel-min-off-time = 500\n"), 0);
	CHECK_INT(harness_log_n, 0);
	const struct wla_config_panel *p = &cfg.outputs[0].panel;
	CHECK(strcmp(p->chip, "panel-gpio") == 0);
	CHECK_INT(p->n_lines, 3);
	CHECK(strcmp(p->lines[1].name, "reset") == 0);
	CHECK_INT(p->lines[1].offset, 4);
	CHECK(p->lines[1].active_low);
	CHECK(!p->lines[0].active_low);
	CHECK_INT(p->preset, WLA_PANEL_PRESET_SIMPLE);
	CHECK_INT(p->n_on, 2);
	CHECK_STEP(p->on[0], EN, EN, 20);
	CHECK_STEP(p->on[1], RST, 0, 50);
	CHECK(p->has_lit);
	CHECK_STEP(p->lit, BL, BL, 0);
	CHECK_INT(p->n_off, 3);
	CHECK_STEP(p->off[0], BL, 0, 30);
	CHECK_STEP(p->off[1], RST, RST, 0);
	CHECK_STEP(p->off[2], EN, 0, 100);
	CHECK_INT(p->min_off_ms, 500);
	CHECK_INT(wla_panel_off_values(p), RST);
}

static void preset_simple_without_reset_waits_prepare_and_enable_after_enable(void)
{
	CHECK_INT(parse(HEAD "panel-chip = /dev/gpiochip0\n"
		"panel-line = backlight 0 active-low\n"
		"panel-line = enable 1\n"
		"panel-preset = simple\n"
		"panel-delay-prepare = 20\n"
		"panel-delay-enable = 50\n"), 0);
	const struct wla_config_panel *p = &cfg.outputs[0].panel;
	CHECK_INT(p->n_on, 1);
	CHECK_STEP(p->on[0], 0x2, 0x2, 70);
	CHECK_STEP(p->lit, 0x1, 0x1, 0);
	CHECK_INT(p->n_off, 2);
	CHECK_STEP(p->off[0], 0x1, 0, 0);
	CHECK_STEP(p->off[1], 0x2, 0, 0);
}

static void written_out_steps_are_kept_in_order(void)
{
	CHECK_INT(parse(HEAD LINES BACKLIGHT
		"panel-on-step = enable=1 wait=20\n"
		"panel-on-step =   reset=0\twait=5  \n"
		"panel-lit-step = backlight=1\n"
		"panel-off-step = backlight=0 wait=7\n"
		"panel-off-step = reset=1 enable=0 wait=60000\n"
		"panel-min-off-time = 0\n"), 0);
	CHECK_INT(harness_log_n, 0);
	const struct wla_config_panel *p = &cfg.outputs[0].panel;
	CHECK_INT(p->preset, WLA_PANEL_PRESET_NONE);
	CHECK_INT(p->n_on, 2);
	CHECK_STEP(p->on[0], EN, EN, 20);
	CHECK_STEP(p->on[1], RST, 0, 5);
	CHECK_STEP(p->lit, BL, BL, 0);
	CHECK_INT(p->n_off, 2);
	CHECK_STEP(p->off[1], EN | RST, RST, 60000);
}

static void two_outputs_have_their_own_panels(void)
{
	CHECK_INT(parse(HEAD LINES BACKLIGHT "panel-preset = simple\n"
		"[output]\nmode = 640x480\n"
		"[output]\nmode = 640x480\npanel-chip = gpiochip1\npanel-line = enable 0\n"
		"panel-line = backlight 1\npanel-preset = simple\n"), 0);
	CHECK_INT(cfg.n_outputs, 3);
	CHECK(strcmp(cfg.outputs[0].panel.chip, "panel-gpio") == 0);
	CHECK_INT(cfg.outputs[1].panel.chip[0], 0);
	CHECK(strcmp(cfg.outputs[2].panel.chip, "gpiochip1") == 0);
	CHECK_INT(cfg.outputs[2].panel.n_lines, 2);
}

static void unknown_line_in_a_step_is_refused(void)
{
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable=1 foo=1\n",
		"config: t.conf:7: panel-on-step 'enable=1 foo=1': unknown line 'foo' "
		"(declared: enable reset)");
}

static void line_listed_twice_in_a_step_is_refused(void)
{
	CHECK_REFUSED(HEAD LINES "panel-off-step = enable=0 reset=1 enable=0\n",
		"config: t.conf:7: panel-off-step 'enable=0 reset=1 enable=0': line 'enable' "
		"listed twice");
}

static void bad_values_in_a_step_are_refused(void)
{
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable=2\n",
		"t.conf:7: panel-on-step 'enable=2': bad value '2' for line 'enable' "
		"(expected 0 or 1)");
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable=\n", "bad value '' for line 'enable'");
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable\n",
		"t.conf:7: panel-on-step 'enable': bad item 'enable' (expected LINE=0|1 or wait=MS)");
	CHECK_REFUSED(HEAD LINES "panel-on-step = wait=5\n",
		"t.conf:7: panel-on-step 'wait=5': no line to set");
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable=1 wait=1 wait=2\n", "wait given twice");
}

static void negative_or_non_numeric_delays_are_refused(void)
{
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable=1 wait=-5\n",
		"t.conf:7: panel-on-step 'enable=1 wait=-5': bad wait '-5' (expected a delay in ms, "
		"0..60000)");
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable=1 wait=abc\n", "bad wait 'abc'");
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable=1 wait=60001\n", "bad wait '60001'");
	CHECK_REFUSED(HEAD LINES "panel-delay-prepare = -20\n",
		"config: t.conf:7: panel-delay-prepare '-20': expected a delay in ms, 0..60000");
	CHECK_REFUSED(HEAD LINES "panel-delay-unprepare = 1.5\n",
		"t.conf:7: panel-delay-unprepare '1.5': expected a delay in ms");
	CHECK_REFUSED(HEAD LINES "panel-min-off-time = soon\n",
		"t.conf:7: panel-min-off-time 'soon': expected a delay in ms");
	CHECK_REFUSED(HEAD LINES "panel-min-off-time = 99999999999999999999\n",
		"panel-min-off-time '99999999999999999999'");
}

static void duplicate_line_names_or_offsets_are_refused(void)
{
	CHECK_REFUSED(HEAD LINES "panel-line = enable 7\n",
		"config: t.conf:7: panel-line 'enable 7': line name 'enable' already declared at "
		"line 5");
	CHECK_REFUSED(HEAD LINES "panel-line = backlight 4\n",
		"config: t.conf:7: panel-line 'backlight 4': offset 4 already used by line 'reset' "
		"(line 6)");
}

static void bad_panel_lines_are_refused(void)
{
	CHECK_REFUSED(HEAD "panel-line = enable\n", "t.conf:4: panel-line 'enable': expected "
		"NAME OFFSET [active-low]");
	CHECK_REFUSED(HEAD "panel-line = enable x\n", "bad offset 'x' (expected 0..65535)");
	CHECK_REFUSED(HEAD "panel-line = enable -1\n", "bad offset '-1'");
	CHECK_REFUSED(HEAD "panel-line = enable 65536\n", "bad offset '65536'");
	CHECK_REFUSED(HEAD "panel-line = enable 1 active-high\n",
		"panel-line 'enable 1 active-high': unknown flag 'active-high' (expected active-low)");
	CHECK_REFUSED(HEAD "panel-line = enable 1 active-low x\n", "too many words");
	CHECK_REFUSED(HEAD "panel-line = wait 1\n", "bad line name 'wait'");
	CHECK_REFUSED(HEAD "panel-line = en/able 1\n", "bad line name 'en/able'");
	CHECK_REFUSED(HEAD "panel-line = abcdefghijklmnop 1\n", "bad line name 'abcdefghijklmnop'");
}

static void more_than_sixteen_lines_are_refused(void)
{
	char text[2048];
	int n = snprintf(text, sizeof(text), HEAD "panel-chip = panel-gpio\n");
	for (int i = 0; i < 17; i++) {
		n += snprintf(text + n, sizeof(text) - (size_t)n, "panel-line = l%d %d\n", i, i);
	}
	CHECK_REFUSED(text, "config: t.conf:21: panel-line 'l16 16': more than 16 lines in one "
		"panel");
}

static void more_than_sixteen_steps_are_refused(void)
{
	char text[2048];
	int n = snprintf(text, sizeof(text), HEAD LINES);
	for (int i = 0; i < 17; i++) {
		n += snprintf(text + n, sizeof(text) - (size_t)n, "panel-on-step = enable=%d\n",
			i & 1);
	}
	CHECK_REFUSED(text, "t.conf:23: panel-on-step 'enable=0': more than 16 steps");
}

static void preset_without_backlight_is_refused(void)
{
	CHECK_REFUSED(HEAD LINES "panel-preset = simple\n",
		"config: t.conf:7: panel-preset simple needs a panel-line named 'backlight'");
	CHECK_REFUSED(HEAD "panel-chip = c\npanel-line = backlight 1\npanel-preset = simple\n",
		"config: t.conf:6: panel-preset simple needs a panel-line named 'enable'");
}

static void preset_with_an_unknown_line_is_refused(void)
{
	CHECK_REFUSED(HEAD LINES BACKLIGHT "panel-line = vcom 9\npanel-preset = simple\n",
		"t.conf:9: panel-preset simple: line 'vcom' is not one of enable, reset, backlight");
	CHECK_REFUSED(HEAD LINES BACKLIGHT "panel-preset = fancy\n",
		"t.conf:8: panel-preset 'fancy': unknown preset (expected simple)");
}

static void preset_and_written_out_steps_exclude_each_other(void)
{
	CHECK_REFUSED(HEAD LINES BACKLIGHT "panel-preset = simple\npanel-on-step = enable=1\n",
		"t.conf:9: panel-on-step 'enable=1': not allowed with panel-preset (line 8)");
	CHECK_REFUSED(HEAD LINES BACKLIGHT "panel-on-step = enable=1\npanel-preset = simple\n",
		"t.conf:9: panel-preset 'simple': not allowed with the steps given from line 8");
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable=1\npanel-off-step = enable=0 reset=1\n"
		"panel-delay-enable = 5\n",
		"t.conf:9: [output] 'DSI-1': panel-delay-* is used by panel-preset only");
}

static void keys_given_twice_are_refused(void)
{
	CHECK_REFUSED(HEAD LINES "panel-chip = other\n",
		"t.conf:7: panel-chip 'other': already given at line 4");
	CHECK_REFUSED(HEAD LINES BACKLIGHT "panel-preset = simple\npanel-delay-enable = 1\n"
		"panel-delay-enable = 2\n", "t.conf:10: panel-delay-enable '2': already given at line 9");
}

static void incomplete_panels_are_refused(void)
{
	CHECK_REFUSED(HEAD "panel-line = enable 1\n",
		"config: t.conf:4: [output] 'DSI-1': panel keys without panel-chip");
	CHECK_REFUSED(HEAD "panel-chip = panel-gpio\n",
		"config: t.conf:4: [output] 'DSI-1': panel-chip 'panel-gpio' without any panel-line");
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable=1\n",
		"t.conf:4: [output] 'DSI-1': panel without panel-preset needs at least one "
		"panel-on-step and one panel-off-step");
	CHECK_REFUSED(HEAD LINES "panel-on-step = enable=1\npanel-off-step = enable=0\n",
		"config: t.conf:6: [output] 'DSI-1': panel line 'reset' is set by no panel-off-step, "
		"so it has no safe off value");
	CHECK_REFUSED(HEAD "panel-chip = c\npanel-on-step = enable=1\n",
		"panel-on-step 'enable=1': unknown line 'enable' (declared: none)");
}

static void backlight_must_go_off_first_and_on_only_after_the_first_frame(void)
{
	CHECK_REFUSED(HEAD LINES BACKLIGHT "panel-on-step = enable=1 backlight=1\n"
		"panel-off-step = backlight=0 reset=1 enable=0\n",
		"config: t.conf:8: [output] 'DSI-1': panel-on-step sets backlight=1, but only "
		"panel-lit-step may switch the backlight on, after the first frame");
	CHECK_REFUSED(HEAD LINES BACKLIGHT "panel-on-step = enable=1\n"
		"panel-lit-step = backlight=1\n"
		"panel-off-step = reset=1 enable=0\npanel-off-step = backlight=0\n",
		"config: t.conf:10: [output] 'DSI-1': the first panel-off-step must switch back "
		"exactly the lines of panel-lit-step (line 9), backlight off first");
	CHECK_REFUSED(HEAD LINES BACKLIGHT "panel-lit-step = backlight=1\n"
		"panel-lit-step = backlight=1\n", "t.conf:9: panel-lit-step 'backlight=1': already "
		"given at line 8");
}

/* The lines every backlight test below declares: lines 4..8. */
#define BL_LINES "panel-chip = panel-gpio\npanel-line = vdd 0\npanel-line = stby 1 active-low\n" \
	"panel-line = bl-en 2\npanel-line = pwm 3\n"

static void off_step_that_switches_a_backlight_named_line_on_is_refused(void)
{
	/* Its safe off value would be 1: lit during power-on and after a failure. */
	CHECK_REFUSED(HEAD LINES BACKLIGHT "panel-on-step = enable=1 backlight=0\n"
		"panel-off-step = enable=0 reset=1 backlight=1\n",
		"config: t.conf:9: [output] 'DSI-1': panel-off-step sets backlight=1, but only "
		"panel-lit-step may switch the backlight on, after the first frame");
	/* Also when a later off step switches it back off. */
	CHECK_REFUSED(HEAD LINES BACKLIGHT "panel-on-step = enable=1\n"
		"panel-lit-step = backlight=1\n"
		"panel-off-step = backlight=0\n"
		"panel-off-step = backlight=1 reset=1\n"
		"panel-off-step = backlight=0 enable=0\n",
		"config: t.conf:11: [output] 'DSI-1': panel-off-step sets backlight=1, but only "
		"panel-lit-step (line 9) may switch the backlight on, after the first frame");
}

static void active_low_backlight_is_judged_by_its_logical_value(void)
{
	/* Logical 1 is a low pin here, and still the backlight on. */
	CHECK_REFUSED(HEAD LINES "panel-line = backlight 5 active-low\n"
		"panel-on-step = enable=1\npanel-off-step = enable=0 reset=1 backlight=1\n",
		"config: t.conf:9: [output] 'DSI-1': panel-off-step sets backlight=1, but only "
		"panel-lit-step may switch the backlight on");
	/* Logical 0, a high pin, is off: accepted, and it is the safe off value. */
	CHECK_INT(parse(HEAD LINES "panel-line = backlight 5 active-low\n"
		"panel-on-step = enable=1 backlight=0\npanel-off-step = enable=0 reset=1 backlight=0\n"),
		0);
	CHECK_INT(harness_log_n, 0);
	CHECK_INT(wla_panel_off_values(&cfg.outputs[0].panel), RST);
}

static void lines_the_lit_step_switches_on_are_backlight_lines(void)
{
	/* bl-en and pwm are the backlight of this panel because the lit step
	 * switches them on, whatever their names. */
	CHECK_REFUSED(HEAD BL_LINES "panel-on-step = vdd=1 wait=10\npanel-on-step = stby=0 pwm=1\n"
		"panel-lit-step = bl-en=1 pwm=1\n"
		"panel-off-step = bl-en=0 pwm=0\npanel-off-step = stby=1 vdd=0\n",
		"config: t.conf:10: [output] 'DSI-1': panel-on-step sets pwm=1, but only "
		"panel-lit-step (line 11) may switch the backlight on, after the first frame");
	CHECK_REFUSED(HEAD BL_LINES "panel-on-step = vdd=1 stby=0\n"
		"panel-lit-step = bl-en=1 pwm=1\n"
		"panel-off-step = bl-en=0 pwm=0\npanel-off-step = stby=1 vdd=0 bl-en=1\n",
		"config: t.conf:12: [output] 'DSI-1': panel-off-step sets bl-en=1, but only "
		"panel-lit-step (line 10) may switch the backlight on");
	/* The order of the keys does not matter: the lit step may come last. */
	CHECK_REFUSED(HEAD BL_LINES "panel-on-step = vdd=1 stby=0\n"
		"panel-off-step = bl-en=0 pwm=0\npanel-off-step = stby=1 vdd=0 pwm=1\n"
		"panel-lit-step = bl-en=1 pwm=1\n",
		"config: t.conf:11: [output] 'DSI-1': panel-off-step sets pwm=1, but only "
		"panel-lit-step (line 12) may switch the backlight on");
}

static void a_backlight_lit_by_a_low_value_stays_high_elsewhere(void)
{
	/* A shutdown line: the lit step lights the backlight by releasing it. */
	const char *lines = HEAD "panel-chip = c\npanel-line = vdd 0\npanel-line = bl-shdn 1\n";
	char text[512];
	snprintf(text, sizeof(text), "%spanel-on-step = vdd=1 bl-shdn=1\n"
		"panel-lit-step = bl-shdn=0\npanel-off-step = bl-shdn=1\n"
		"panel-off-step = vdd=0 bl-shdn=0\n", lines);
	CHECK_REFUSED(text, "config: t.conf:10: [output] 'DSI-1': panel-off-step sets bl-shdn=0, "
		"but only panel-lit-step (line 8) may switch the backlight on");
	snprintf(text, sizeof(text), "%spanel-on-step = vdd=1 bl-shdn=1\n"
		"panel-lit-step = bl-shdn=0\npanel-off-step = bl-shdn=1\npanel-off-step = vdd=0\n",
		lines);
	CHECK_INT(parse(text), 0);
	CHECK_INT(harness_log_n, 0);
	CHECK_INT(wla_panel_off_values(&cfg.outputs[0].panel), 0x2);
}

static void backlight_lines_that_stay_off_outside_the_lit_step_are_accepted(void)
{
	CHECK_INT(parse(HEAD BL_LINES "panel-on-step = vdd=1 pwm=0 bl-en=0 wait=10\n"
		"panel-on-step = stby=0\npanel-lit-step = bl-en=1 pwm=1\n"
		"panel-off-step = bl-en=0 pwm=0\npanel-off-step = stby=1 vdd=0 pwm=0\n"), 0);
	CHECK_INT(harness_log_n, 0);
	CHECK_INT(wla_panel_off_values(&cfg.outputs[0].panel), 0x2);
}

static void bad_chip_and_unknown_panel_key_are_refused(void)
{
	CHECK_REFUSED(HEAD "panel-chip = my chip\n",
		"t.conf:4: panel-chip 'my chip': expected a chip name, label or path");
	CHECK_REFUSED(HEAD "panel-colour = red\n",
		"config: t.conf:4: unknown key 'panel-colour' in [output] (value 'red')");
	CHECK_REFUSED("panel-chip = panel-gpio\n",
		"config: t.conf:1: unknown key 'panel-chip' (value 'panel-gpio')");
}

int main(void)
{
	harness_init();
	RUN_TEST(output_without_panel_keys_has_no_panel);
	RUN_TEST(preset_simple_builds_the_panel_simple_sequences);
	RUN_TEST(preset_simple_without_reset_waits_prepare_and_enable_after_enable);
	RUN_TEST(written_out_steps_are_kept_in_order);
	RUN_TEST(two_outputs_have_their_own_panels);
	RUN_TEST(unknown_line_in_a_step_is_refused);
	RUN_TEST(line_listed_twice_in_a_step_is_refused);
	RUN_TEST(bad_values_in_a_step_are_refused);
	RUN_TEST(negative_or_non_numeric_delays_are_refused);
	RUN_TEST(duplicate_line_names_or_offsets_are_refused);
	RUN_TEST(bad_panel_lines_are_refused);
	RUN_TEST(more_than_sixteen_lines_are_refused);
	RUN_TEST(more_than_sixteen_steps_are_refused);
	RUN_TEST(preset_without_backlight_is_refused);
	RUN_TEST(preset_with_an_unknown_line_is_refused);
	RUN_TEST(preset_and_written_out_steps_exclude_each_other);
	RUN_TEST(keys_given_twice_are_refused);
	RUN_TEST(incomplete_panels_are_refused);
	RUN_TEST(backlight_must_go_off_first_and_on_only_after_the_first_frame);
	RUN_TEST(off_step_that_switches_a_backlight_named_line_on_is_refused);
	RUN_TEST(active_low_backlight_is_judged_by_its_logical_value);
	RUN_TEST(lines_the_lit_step_switches_on_are_backlight_lines);
	RUN_TEST(a_backlight_lit_by_a_low_value_stays_high_elsewhere);
	RUN_TEST(backlight_lines_that_stay_off_outside_the_lit_step_are_accepted);
	RUN_TEST(bad_chip_and_unknown_panel_key_are_refused);
	HARNESS_EXIT();
}
