/*
 * The panel-* keys of an [output] section: a panel's GPIO lines and its
 * power sequences.
 *
 *     [output]
 *     name = DSI-1
 *     mode = 800x480@60
 *     panel-chip = panel-gpio          GPIO chip: name (gpiochip0), label
 *                                      (panel-gpio) or path (/dev/gpiochip0)
 *     panel-line = enable 3            NAME OFFSET [active-low], up to 16
 *     panel-line = reset 4 active-low  lines; NAME is 1..15 of A-Z a-z 0-9 _ -
 *     panel-line = backlight 5         ("wait" excepted), OFFSET 0..65535
 *
 * Either a preset builds the sequences:
 *
 *     panel-preset = simple            needs lines enable and backlight,
 *     panel-delay-prepare = 20         reset is optional, no other line;
 *     panel-delay-enable = 50          delays in ms, 0..60000, default 0,
 *     panel-delay-disable = 50         with the meaning the kernel's
 *     panel-delay-unprepare = 100      panel-simple gives them
 *
 *   power-on:  enable=1, wait prepare; reset=0, wait enable
 *              (without reset: enable=1, wait prepare + enable)
 *   backlight: backlight=1, once the first frame has latched
 *   power-off: backlight=0, wait disable; reset=1; enable=0, wait unprepare
 *   safe off:  enable=0 reset=1 backlight=0
 *
 * or the steps are written out, in order:
 *
 *     panel-on-step = enable=1 wait=20           repeatable, up to 16 each
 *     panel-on-step = reset=0 wait=50
 *     panel-lit-step = backlight=1               optional, at most one
 *     panel-off-step = backlight=0 wait=50
 *     panel-off-step = reset=1 enable=0 wait=100
 *
 * A step lists LINE=0|1 for one or more declared lines, each once, and at
 * most one wait=MS (default 0); its lines are set in one call, then the
 * sequence waits. Values are logical: 1 is "asserted", a low pin for an
 * active-low line. Every line must be set by some panel-off-step: the
 * values the off steps leave are the lines' safe off values, which they are
 * requested with and driven to on failure. With a panel-lit-step, the first
 * panel-off-step must switch exactly its lines back. The backlight, a line
 * named backlight and the lines panel-lit-step sets, is switched on by
 * panel-lit-step only: no on or off step may set a line named backlight to 1,
 * or a line of panel-lit-step to the value that step gives it.
 *
 *     panel-min-off-time = 500         ms from the end of a power-off to
 *                                      the next power-on, default 0
 *
 * Preset and written-out steps exclude each other; panel-delay-* go with a
 * preset only. Each key but panel-line and panel-on/off-step may appear
 * once. Lines must be declared before the steps that use them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <wlr/util/log.h>
#include "backend/panel.h"
#include "util.h"

#define ORIGIN_MAX 4200

enum panel_key {
	KEY_CHIP,
	KEY_LINE,
	KEY_PRESET,
	KEY_DELAY_PREPARE,
	KEY_DELAY_ENABLE,
	KEY_DELAY_DISABLE,
	KEY_DELAY_UNPREPARE,
	KEY_MIN_OFF,
	KEY_ON_STEP,
	KEY_LIT_STEP,
	KEY_OFF_STEP,
};

static const struct {
	const char *name;
	bool repeatable;
} panel_keys[] = {
	[KEY_CHIP] = { "panel-chip", false },
	[KEY_LINE] = { "panel-line", true },
	[KEY_PRESET] = { "panel-preset", false },
	[KEY_DELAY_PREPARE] = { "panel-delay-prepare", false },
	[KEY_DELAY_ENABLE] = { "panel-delay-enable", false },
	[KEY_DELAY_DISABLE] = { "panel-delay-disable", false },
	[KEY_DELAY_UNPREPARE] = { "panel-delay-unprepare", false },
	[KEY_MIN_OFF] = { "panel-min-off-time", false },
	[KEY_ON_STEP] = { "panel-on-step", true },
	[KEY_LIT_STEP] = { "panel-lit-step", false },
	[KEY_OFF_STEP] = { "panel-off-step", true },
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_name_char(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		c == '-';
}

/* Unsigned decimal, nothing else, at most max. */
static bool parse_uint(const char *s, size_t len, uint32_t max, uint32_t *out)
{
	if (len == 0) {
		return false;
	}
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (!is_digit(s[i])) {
			return false;
		}
		if (v <= max) {
			v = v * 10 + (uint64_t)(s[i] - '0');
		}
	}
	if (v > max) {
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* Splits s into blank-separated words; returns their number, -1 if more than max. */
static int split_words(const char *s, const char **words, size_t *lens, int max)
{
	int n = 0;
	while (*s) {
		while (is_blank(*s)) {
			s++;
		}
		if (!*s) {
			break;
		}
		if (n == max) {
			return -1;
		}
		words[n] = s;
		while (*s && !is_blank(*s)) {
			s++;
		}
		lens[n] = (size_t)(s - words[n]);
		n++;
	}
	return n;
}

static int find_line(const struct wla_config_panel *panel, const char *name, size_t len)
{
	for (size_t i = 0; i < panel->n_lines; i++) {
		if (strlen(panel->lines[i].name) == len && strncmp(panel->lines[i].name, name, len) == 0) {
			return (int)i;
		}
	}
	return -1;
}

static void list_lines(const struct wla_config_panel *panel, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < panel->n_lines && used < size; i++) {
		int n = snprintf(buf + used, size - used, "%s%s", i ? " " : "", panel->lines[i].name);
		if (n < 0) {
			break;
		}
		used += (size_t)n;
	}
}

static int set_chip(struct wla_config_panel *panel, const char *origin, const char *value)
{
	size_t len = strlen(value);
	bool valid = len >= 1 && len < WLA_PANEL_CHIP_MAX;
	for (size_t i = 0; valid && i < len; i++) {
		valid = !is_blank(value[i]);
	}
	if (!valid) {
		wlr_log(WLR_ERROR, "config: %s: panel-chip '%s': expected a chip name, label or "
			"path of 1..%d characters without blanks", origin, value,
			WLA_PANEL_CHIP_MAX - 1);
		return -EINVAL;
	}
	memcpy(panel->chip, value, len + 1);
	return 0;
}

static int add_line(struct wla_config_panel *panel, struct wla_panel_parser *parser,
	const char *origin, size_t lineno, const char *value)
{
	const char *words[4];
	size_t lens[4];
	int n = split_words(value, words, lens, 3);
	if (n < 0) {
		wlr_log(WLR_ERROR, "config: %s: panel-line '%s': too many words (expected NAME "
			"OFFSET [active-low])", origin, value);
		return -EINVAL;
	}
	if (n < 2) {
		wlr_log(WLR_ERROR, "config: %s: panel-line '%s': expected NAME OFFSET [active-low]",
			origin, value);
		return -EINVAL;
	}
	bool valid = lens[0] < WLA_PANEL_LINE_NAME_MAX && !(lens[0] == 4 &&
		strncmp(words[0], "wait", 4) == 0);
	for (size_t i = 0; valid && i < lens[0]; i++) {
		valid = is_name_char(words[0][i]);
	}
	if (!valid) {
		wlr_log(WLR_ERROR, "config: %s: panel-line '%s': bad line name '%.*s' (expected "
			"1..%d of A-Z a-z 0-9 _ -, not 'wait')", origin, value, (int)lens[0], words[0],
			WLA_PANEL_LINE_NAME_MAX - 1);
		return -EINVAL;
	}
	uint32_t offset;
	if (!parse_uint(words[1], lens[1], WLA_PANEL_MAX_OFFSET, &offset)) {
		wlr_log(WLR_ERROR, "config: %s: panel-line '%s': bad offset '%.*s' (expected "
			"0..%d)", origin, value, (int)lens[1], words[1], WLA_PANEL_MAX_OFFSET);
		return -EINVAL;
	}
	bool active_low = false;
	if (n == 3) {
		if (lens[2] != strlen("active-low") || strncmp(words[2], "active-low", lens[2]) != 0) {
			wlr_log(WLR_ERROR, "config: %s: panel-line '%s': unknown flag '%.*s' "
				"(expected active-low)", origin, value, (int)lens[2], words[2]);
			return -EINVAL;
		}
		active_low = true;
	}
	int dup = find_line(panel, words[0], lens[0]);
	if (dup >= 0) {
		wlr_log(WLR_ERROR, "config: %s: panel-line '%s': line name '%s' already declared "
			"at line %zu", origin, value, panel->lines[dup].name, parser->line_lines[dup]);
		return -EINVAL;
	}
	for (size_t i = 0; i < panel->n_lines; i++) {
		if (panel->lines[i].offset == offset) {
			wlr_log(WLR_ERROR, "config: %s: panel-line '%s': offset %u already used by "
				"line '%s' (line %zu)", origin, value, offset, panel->lines[i].name,
				parser->line_lines[i]);
			return -EINVAL;
		}
	}
	if (panel->n_lines == WLA_PANEL_MAX_LINES) {
		wlr_log(WLR_ERROR, "config: %s: panel-line '%s': more than %d lines in one panel",
			origin, value, WLA_PANEL_MAX_LINES);
		return -EINVAL;
	}
	struct wla_panel_line *line = &panel->lines[panel->n_lines];
	memcpy(line->name, words[0], lens[0]);
	line->name[lens[0]] = '\0';
	line->offset = offset;
	line->active_low = active_low;
	parser->line_lines[panel->n_lines++] = lineno;
	return 0;
}

static int parse_delay(const char *origin, const char *key, const char *value, uint32_t *ms)
{
	if (!parse_uint(value, strlen(value), WLA_PANEL_MAX_DELAY_MS, ms)) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': expected a delay in ms, 0..%d", origin,
			key, value, WLA_PANEL_MAX_DELAY_MS);
		return -EINVAL;
	}
	return 0;
}

static int parse_step(const struct wla_config_panel *panel, const char *origin, const char *key,
	const char *value, struct wla_panel_step *step)
{
	const char *words[WLA_PANEL_MAX_LINES + 2];
	size_t lens[WLA_PANEL_MAX_LINES + 2];
	int n = split_words(value, words, lens, WLA_PANEL_MAX_LINES + 1);
	if (n < 0) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': too many words (at most %d lines and a "
			"wait)", origin, key, value, WLA_PANEL_MAX_LINES);
		return -EINVAL;
	}
	*step = (struct wla_panel_step){ 0 };
	bool has_wait = false;
	for (int i = 0; i < n; i++) {
		const char *eq = memchr(words[i], '=', lens[i]);
		if (!eq || eq == words[i]) {
			wlr_log(WLR_ERROR, "config: %s: %s '%s': bad item '%.*s' (expected LINE=0|1 "
				"or wait=MS)", origin, key, value, (int)lens[i], words[i]);
			return -EINVAL;
		}
		size_t name_len = (size_t)(eq - words[i]);
		const char *v = eq + 1;
		size_t v_len = lens[i] - name_len - 1;
		if (name_len == 4 && strncmp(words[i], "wait", 4) == 0) {
			if (has_wait) {
				wlr_log(WLR_ERROR, "config: %s: %s '%s': wait given twice", origin,
					key, value);
				return -EINVAL;
			}
			if (!parse_uint(v, v_len, WLA_PANEL_MAX_DELAY_MS, &step->wait_ms)) {
				wlr_log(WLR_ERROR, "config: %s: %s '%s': bad wait '%.*s' (expected a "
					"delay in ms, 0..%d)", origin, key, value, (int)v_len, v,
					WLA_PANEL_MAX_DELAY_MS);
				return -EINVAL;
			}
			has_wait = true;
			continue;
		}
		int line = find_line(panel, words[i], name_len);
		if (line < 0) {
			char names[WLA_PANEL_MAX_LINES * WLA_PANEL_LINE_NAME_MAX];
			list_lines(panel, names, sizeof(names));
			wlr_log(WLR_ERROR, "config: %s: %s '%s': unknown line '%.*s' (declared: %s)",
				origin, key, value, (int)name_len, words[i],
				panel->n_lines ? names : "none");
			return -EINVAL;
		}
		uint32_t bit = UINT32_C(1) << line;
		if (step->mask & bit) {
			wlr_log(WLR_ERROR, "config: %s: %s '%s': line '%s' listed twice", origin, key,
				value, panel->lines[line].name);
			return -EINVAL;
		}
		if (v_len != 1 || (v[0] != '0' && v[0] != '1')) {
			wlr_log(WLR_ERROR, "config: %s: %s '%s': bad value '%.*s' for line '%s' "
				"(expected 0 or 1)", origin, key, value, (int)v_len, v,
				panel->lines[line].name);
			return -EINVAL;
		}
		step->mask |= bit;
		if (v[0] == '1') {
			step->values |= bit;
		}
	}
	if (step->mask == 0) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': no line to set (expected LINE=0|1 ...)",
			origin, key, value);
		return -EINVAL;
	}
	return 0;
}

static int add_step(struct wla_config_panel *panel, struct wla_panel_parser *parser,
	const char *origin, size_t lineno, enum panel_key key, const char *value)
{
	const char *name = panel_keys[key].name;
	if (parser->preset_line) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': not allowed with panel-preset (line %zu)",
			origin, name, value, parser->preset_line);
		return -EINVAL;
	}
	struct wla_panel_step step;
	int ret = parse_step(panel, origin, name, value, &step);
	if (ret < 0) {
		return ret;
	}
	struct wla_panel_step *steps = key == KEY_ON_STEP ? panel->on : panel->off;
	size_t *n_steps = key == KEY_ON_STEP ? &panel->n_on : &panel->n_off;
	size_t *step_lines = key == KEY_ON_STEP ? parser->on_lines : parser->off_lines;
	if (key == KEY_LIT_STEP) {
		panel->lit = step;
		panel->has_lit = true;
		parser->lit_line = lineno;
	} else if (*n_steps == WLA_PANEL_MAX_STEPS) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': more than %d steps", origin, name, value,
			WLA_PANEL_MAX_STEPS);
		return -EINVAL;
	} else {
		step_lines[*n_steps] = lineno;
		steps[(*n_steps)++] = step;
	}
	if (!parser->steps_line) {
		parser->steps_line = lineno;
	}
	return 0;
}

int wla_panel_config_set(struct wla_config_panel *panel, struct wla_panel_parser *parser,
	const char *origin, size_t lineno, const char *key, const char *value)
{
	enum panel_key k;
	for (k = 0; k < WLA_ARRAY_SIZE(panel_keys); k++) {
		if (strcmp(key, panel_keys[k].name) == 0) {
			break;
		}
	}
	if (k == WLA_ARRAY_SIZE(panel_keys)) {
		wlr_log(WLR_ERROR, "config: %s: unknown key '%s' in [output] (value '%s')", origin,
			key, value);
		return -EINVAL;
	}
	if (!panel_keys[k].repeatable && parser->seen_lines[k]) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': already given at line %zu", origin, key,
			value, parser->seen_lines[k]);
		return -EINVAL;
	}

	int ret = 0;
	switch (k) {
	case KEY_CHIP:
		ret = set_chip(panel, origin, value);
		break;
	case KEY_LINE:
		ret = add_line(panel, parser, origin, lineno, value);
		break;
	case KEY_PRESET:
		if (strcmp(value, "simple") != 0) {
			wlr_log(WLR_ERROR, "config: %s: panel-preset '%s': unknown preset (expected "
				"simple)", origin, value);
			return -EINVAL;
		}
		if (parser->steps_line) {
			wlr_log(WLR_ERROR, "config: %s: panel-preset '%s': not allowed with the "
				"steps given from line %zu", origin, value, parser->steps_line);
			return -EINVAL;
		}
		panel->preset = WLA_PANEL_PRESET_SIMPLE;
		parser->preset_line = lineno;
		break;
	case KEY_DELAY_PREPARE:
		ret = parse_delay(origin, key, value, &panel->delays.prepare_ms);
		break;
	case KEY_DELAY_ENABLE:
		ret = parse_delay(origin, key, value, &panel->delays.enable_ms);
		break;
	case KEY_DELAY_DISABLE:
		ret = parse_delay(origin, key, value, &panel->delays.disable_ms);
		break;
	case KEY_DELAY_UNPREPARE:
		ret = parse_delay(origin, key, value, &panel->delays.unprepare_ms);
		break;
	case KEY_MIN_OFF:
		ret = parse_delay(origin, key, value, &panel->min_off_ms);
		break;
	case KEY_ON_STEP:
	case KEY_LIT_STEP:
	case KEY_OFF_STEP:
		ret = add_step(panel, parser, origin, lineno, k, value);
		break;
	}
	if (ret < 0) {
		return ret;
	}
	if (k >= KEY_DELAY_PREPARE && k <= KEY_DELAY_UNPREPARE && !parser->delay_line) {
		parser->delay_line = lineno;
	}
	if (!parser->first_line) {
		parser->first_line = lineno;
	}
	if (!parser->seen_lines[k]) {
		parser->seen_lines[k] = lineno;
	}
	return 0;
}

static struct wla_panel_step make_step(int line_a, int value_a, int line_b, int value_b,
	uint32_t wait_ms)
{
	struct wla_panel_step step = { .wait_ms = wait_ms };
	if (line_a >= 0) {
		step.mask |= UINT32_C(1) << line_a;
		step.values |= (uint32_t)value_a << line_a;
	}
	if (line_b >= 0) {
		step.mask |= UINT32_C(1) << line_b;
		step.values |= (uint32_t)value_b << line_b;
	}
	return step;
}

static int expand_simple(struct wla_config_panel *panel, const char *origin)
{
	static const char *const needed[] = { "enable", "backlight" };
	for (size_t i = 0; i < WLA_ARRAY_SIZE(needed); i++) {
		if (find_line(panel, needed[i], strlen(needed[i])) < 0) {
			wlr_log(WLR_ERROR, "config: %s: panel-preset simple needs a panel-line named "
				"'%s'", origin, needed[i]);
			return -EINVAL;
		}
	}
	int enable = find_line(panel, "enable", strlen("enable"));
	int backlight = find_line(panel, "backlight", strlen("backlight"));
	int reset = find_line(panel, "reset", strlen("reset"));
	for (size_t i = 0; i < panel->n_lines; i++) {
		if ((int)i != enable && (int)i != backlight && (int)i != reset) {
			wlr_log(WLR_ERROR, "config: %s: panel-preset simple: line '%s' is not one of "
				"enable, reset, backlight", origin, panel->lines[i].name);
			return -EINVAL;
		}
	}

	const struct wla_panel_delays *d = &panel->delays;
	if (reset >= 0) {
		panel->on[0] = make_step(enable, 1, -1, 0, d->prepare_ms);
		panel->on[1] = make_step(reset, 0, -1, 0, d->enable_ms);
		panel->n_on = 2;
		panel->off[0] = make_step(backlight, 0, -1, 0, d->disable_ms);
		panel->off[1] = make_step(reset, 1, -1, 0, 0);
		panel->off[2] = make_step(enable, 0, -1, 0, d->unprepare_ms);
		panel->n_off = 3;
	} else {
		panel->on[0] = make_step(enable, 1, -1, 0, d->prepare_ms + d->enable_ms);
		panel->n_on = 1;
		panel->off[0] = make_step(backlight, 0, -1, 0, d->disable_ms);
		panel->off[1] = make_step(enable, 0, -1, 0, d->unprepare_ms);
		panel->n_off = 2;
	}
	panel->lit = make_step(backlight, 1, -1, 0, 0);
	panel->has_lit = true;
	return 0;
}

/*
 * The lines that only the lit step may switch on, and whether a step does: a
 * line named backlight is on at 1, a line of the lit step at the value the lit
 * step gives it (a backlight may be lit by releasing a shutdown line). Values
 * are logical, so an active-low backlight is judged the same way.
 */
static uint32_t lights_backlight(const struct wla_config_panel *panel,
	const struct wla_panel_step *step)
{
	uint32_t named = 0;
	int backlight = find_line(panel, "backlight", strlen("backlight"));
	if (backlight >= 0) {
		named = UINT32_C(1) << backlight;
	}
	uint32_t lit = 0;
	if (panel->has_lit) {
		lit = panel->lit.mask & ~(step->values ^ panel->lit.values);
	}
	return step->mask & ((named & step->values) | lit);
}

/*
 * Only the lit step switches the backlight on. Were another step to do it,
 * the backlight would be lit before the first frame, or, from an off step,
 * its safe off value would be on: lit from the request on and after a failure.
 */
static int check_backlight(const struct wla_config_panel *panel,
	const struct wla_panel_parser *parser, const char *file, const char *output_name)
{
	static const char *const keys[] = { "panel-on-step", "panel-off-step" };
	const struct wla_panel_step *steps[] = { panel->on, panel->off };
	const size_t n_steps[] = { panel->n_on, panel->n_off };
	const size_t *lines[] = { parser->on_lines, parser->off_lines };
	for (size_t s = 0; s < WLA_ARRAY_SIZE(steps); s++) {
		for (size_t i = 0; i < n_steps[s]; i++) {
			uint32_t bad = lights_backlight(panel, &steps[s][i]);
			if (!bad) {
				continue;
			}
			int line = __builtin_ctz(bad);
			char lit[32] = "";
			if (panel->has_lit) {
				snprintf(lit, sizeof(lit), " (line %zu)", parser->lit_line);
			}
			wlr_log(WLR_ERROR, "config: %s:%zu: [output] '%s': %s sets %s=%u, but only "
				"panel-lit-step%s may switch the backlight on, after the first frame",
				file, lines[s][i], output_name, keys[s], panel->lines[line].name,
				(unsigned)(steps[s][i].values >> line) & 1, lit);
			return -EINVAL;
		}
	}
	return 0;
}

static int check_steps(struct wla_config_panel *panel, struct wla_panel_parser *parser,
	const char *file, const char *output_name)
{
	char origin[ORIGIN_MAX];
	if (panel->n_on == 0 || panel->n_off == 0) {
		snprintf(origin, sizeof(origin), "%s:%zu", file, parser->first_line);
		wlr_log(WLR_ERROR, "config: %s: [output] '%s': panel without panel-preset needs "
			"at least one panel-on-step and one panel-off-step", origin, output_name);
		return -EINVAL;
	}
	uint32_t in_off = 0;
	for (size_t i = 0; i < panel->n_off; i++) {
		in_off |= panel->off[i].mask;
	}
	for (size_t i = 0; i < panel->n_lines; i++) {
		if (!(in_off & (UINT32_C(1) << i))) {
			snprintf(origin, sizeof(origin), "%s:%zu", file, parser->line_lines[i]);
			wlr_log(WLR_ERROR, "config: %s: [output] '%s': panel line '%s' is set by no "
				"panel-off-step, so it has no safe off value", origin, output_name,
				panel->lines[i].name);
			return -EINVAL;
		}
	}
	if (panel->has_lit) {
		const struct wla_panel_step *first = &panel->off[0];
		if (first->mask != panel->lit.mask ||
				((first->values ^ panel->lit.values) & first->mask) != first->mask) {
			snprintf(origin, sizeof(origin), "%s:%zu", file, parser->off_lines[0]);
			wlr_log(WLR_ERROR, "config: %s: [output] '%s': the first panel-off-step must "
				"switch back exactly the lines of panel-lit-step (line %zu), backlight "
				"off first", origin, output_name, parser->lit_line);
			return -EINVAL;
		}
	}
	return check_backlight(panel, parser, file, output_name);
}

int wla_panel_config_finish(struct wla_config_panel *panel, struct wla_panel_parser *parser,
	const char *file, const char *output_name)
{
	if (!parser->first_line) {
		return 0;
	}
	char origin[ORIGIN_MAX];
	if (!panel->chip[0]) {
		snprintf(origin, sizeof(origin), "%s:%zu", file, parser->first_line);
		wlr_log(WLR_ERROR, "config: %s: [output] '%s': panel keys without panel-chip",
			origin, output_name);
		return -EINVAL;
	}
	if (panel->n_lines == 0) {
		snprintf(origin, sizeof(origin), "%s:%zu", file, parser->seen_lines[KEY_CHIP]);
		wlr_log(WLR_ERROR, "config: %s: [output] '%s': panel-chip '%s' without any "
			"panel-line", origin, output_name, panel->chip);
		return -EINVAL;
	}
	if (panel->preset == WLA_PANEL_PRESET_SIMPLE) {
		snprintf(origin, sizeof(origin), "%s:%zu", file, parser->preset_line);
		return expand_simple(panel, origin);
	}
	if (parser->delay_line) {
		snprintf(origin, sizeof(origin), "%s:%zu", file, parser->delay_line);
		wlr_log(WLR_ERROR, "config: %s: [output] '%s': panel-delay-* is used by "
			"panel-preset only; give wait= in the steps", origin, output_name);
		return -EINVAL;
	}
	return check_steps(panel, parser, file, output_name);
}

uint32_t wla_panel_off_values(const struct wla_config_panel *desc)
{
	uint32_t values = 0;
	for (size_t i = 0; i < desc->n_off; i++) {
		values = (values & ~desc->off[i].mask) | (desc->off[i].values & desc->off[i].mask);
	}
	return values;
}
