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
 *
 * wla_panel_config_check() holds a description filled in code to the same
 * rules, through the same functions, naming its fields instead of lines.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <wlr/util/log.h>
#include "backend/lex.h"
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

/* Splits s into blank-separated words; returns their number, -1 if more than max. */
static int split_words(const char *s, const char **words, size_t *lens, int max)
{
	int n = 0;
	while (*s) {
		while (wla_lex_blank(*s)) {
			s++;
		}
		if (!*s) {
			break;
		}
		if (n == max) {
			return -1;
		}
		words[n] = s;
		while (*s && !wla_lex_blank(*s)) {
			s++;
		}
		lens[n] = (size_t)(s - words[n]);
		n++;
	}
	return n;
}

/* Names are compared within their array: one filled in code may lack its NUL. */
static int find_line_before(const struct wla_config_panel *panel, size_t n, const char *name,
	size_t len)
{
	for (size_t i = 0; i < n; i++) {
		const char *other = panel->lines[i].name;
		if (strnlen(other, WLA_PANEL_LINE_NAME_MAX) == len && strncmp(other, name, len) == 0) {
			return (int)i;
		}
	}
	return -1;
}

static int find_line(const struct wla_config_panel *panel, const char *name, size_t len)
{
	return find_line_before(panel, panel->n_lines, name, len);
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

/*
 * Where the parts of a panel come from, for messages: the config lines they
 * were parsed from (parser set), or the fields of a description filled in
 * code under file ("wla_config.outputs[0].panel").
 */
struct panel_names {
	const struct wla_panel_parser *parser;
	const char *file;
	const char *output;
};

enum panel_part {
	PART_PANEL,
	PART_CHIP,
	PART_LINE,
	PART_ON,
	PART_OFF,
	PART_LIT,
};

static const char *const part_fields[] = {
	[PART_PANEL] = "",
	[PART_CHIP] = ".chip",
	[PART_LINE] = ".lines",
	[PART_ON] = ".on",
	[PART_OFF] = ".off",
	[PART_LIT] = ".lit",
};

static size_t part_line(const struct wla_panel_parser *parser, enum panel_part part, size_t i)
{
	size_t line = 0;
	switch (part) {
	case PART_PANEL:
		line = parser->first_line;
		break;
	case PART_CHIP:
		line = parser->seen_lines[KEY_CHIP];
		break;
	case PART_LINE:
		line = parser->line_lines[i];
		break;
	case PART_ON:
		line = parser->on_lines[i];
		break;
	case PART_OFF:
		line = parser->off_lines[i];
		break;
	case PART_LIT:
		line = parser->lit_line;
		break;
	}
	/* The steps a preset built have no line of their own. */
	return line ? line : parser->preset_line;
}

static bool part_indexed(enum panel_part part)
{
	return part == PART_LINE || part == PART_ON || part == PART_OFF;
}

/* Where a message about a part starts: "t.conf:7" or "wla_config...panel.on[1]". */
static const char *part_origin(const struct panel_names *names, enum panel_part part, size_t i,
	char *buf, size_t size)
{
	if (names->parser) {
		snprintf(buf, size, "%s:%zu", names->file, part_line(names->parser, part, i));
	} else if (part_indexed(part)) {
		snprintf(buf, size, "%s%s[%zu]", names->file, part_fields[part], i);
	} else {
		snprintf(buf, size, "%s%s", names->file, part_fields[part]);
	}
	return buf;
}

/* How a message refers to another part: "line 7" or "lines[0]". */
static const char *part_ref(const struct wla_panel_parser *parser, enum panel_part part,
	size_t i, char *buf, size_t size)
{
	if (parser) {
		snprintf(buf, size, "line %zu", part_line(parser, part, i));
	} else if (part_indexed(part)) {
		snprintf(buf, size, "%s[%zu]", part_fields[part] + 1, i);
	} else {
		snprintf(buf, size, "%s", part_fields[part] + 1);
	}
	return buf;
}

/*
 * The rules on single values. Each is one function that the parser calls on
 * what it read and wla_panel_config_check() on a description filled in code
 * (numbers printed back to text), so both refuse the same values with the
 * same message: "config: ORIGIN: KEY 'VALUE': why".
 */

static int check_chip(const char *origin, const char *chip, size_t len)
{
	bool valid = len >= 1 && len < WLA_PANEL_CHIP_MAX;
	for (size_t i = 0; valid && i < len; i++) {
		valid = !wla_lex_blank(chip[i]);
	}
	if (!valid) {
		wlr_log(WLR_ERROR, "config: %s: panel-chip '%.*s': expected a chip name, label or "
			"path of 1..%d characters without blanks", origin, (int)len, chip,
			WLA_PANEL_CHIP_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

/* value is the whole panel-line value, for the message. */
static int check_line_name(const char *origin, const char *value, const char *name, size_t len)
{
	bool valid = len >= 1 && len < WLA_PANEL_LINE_NAME_MAX &&
		!(len == 4 && strncmp(name, "wait", 4) == 0);
	for (size_t i = 0; valid && i < len; i++) {
		valid = wla_lex_name_char(name[i]);
	}
	if (!valid) {
		wlr_log(WLR_ERROR, "config: %s: panel-line '%s': bad line name '%.*s' (expected "
			"1..%d of A-Z a-z 0-9 _ -, not 'wait')", origin, value, (int)len, name,
			WLA_PANEL_LINE_NAME_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

static int parse_offset(const char *origin, const char *value, const char *text, size_t len,
	uint32_t *offset)
{
	if (!wla_lex_uint(text, len, WLA_PANEL_MAX_OFFSET, offset)) {
		wlr_log(WLR_ERROR, "config: %s: panel-line '%s': bad offset '%.*s' (expected "
			"0..%d)", origin, value, (int)len, text, WLA_PANEL_MAX_OFFSET);
		return -EINVAL;
	}
	return 0;
}

/* Line i against the lines before it; parser names where those came from. */
static int check_line_unique(const struct wla_config_panel *panel,
	const struct wla_panel_parser *parser, size_t i, const char *origin, const char *value)
{
	const struct wla_panel_line *line = &panel->lines[i];
	char ref[32];
	int dup = find_line_before(panel, i, line->name, strnlen(line->name,
		WLA_PANEL_LINE_NAME_MAX));
	if (dup >= 0) {
		wlr_log(WLR_ERROR, "config: %s: panel-line '%s': line name '%s' already declared "
			"at %s", origin, value, panel->lines[dup].name,
			part_ref(parser, PART_LINE, (size_t)dup, ref, sizeof(ref)));
		return -EINVAL;
	}
	for (size_t j = 0; j < i; j++) {
		if (panel->lines[j].offset == line->offset) {
			wlr_log(WLR_ERROR, "config: %s: panel-line '%s': offset %u already used by "
				"line '%s' (%s)", origin, value, line->offset, panel->lines[j].name,
				part_ref(parser, PART_LINE, j, ref, sizeof(ref)));
			return -EINVAL;
		}
	}
	return 0;
}

static int parse_delay(const char *origin, const char *key, const char *value, uint32_t *ms)
{
	if (!wla_lex_uint(value, strlen(value), WLA_PANEL_MAX_DELAY_MS, ms)) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': expected a delay in ms, 0..%d", origin,
			key, value, WLA_PANEL_MAX_DELAY_MS);
		return -EINVAL;
	}
	return 0;
}

/* The wait=MS of a step whose key and whole value are given, for the message. */
static int parse_wait(const char *origin, const char *key, const char *value, const char *text,
	size_t len, uint32_t *ms)
{
	if (!wla_lex_uint(text, len, WLA_PANEL_MAX_DELAY_MS, ms)) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': bad wait '%.*s' (expected a delay in ms, "
			"0..%d)", origin, key, value, (int)len, text, WLA_PANEL_MAX_DELAY_MS);
		return -EINVAL;
	}
	return 0;
}

/* A step sets at least one line, only declared ones, values within its mask. */
static int check_step_lines(const struct wla_config_panel *panel, const char *origin,
	const char *key, const char *value, const struct wla_panel_step *step)
{
	uint32_t declared = panel->n_lines >= 32 ? UINT32_MAX :
		(UINT32_C(1) << panel->n_lines) - 1;
	if (step->mask == 0) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': no line to set (expected LINE=0|1 ...)",
			origin, key, value);
		return -EINVAL;
	}
	if (step->mask & ~declared) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': mask 0x%" PRIx32 " sets lines beyond the "
			"%zu declared", origin, key, value, step->mask, panel->n_lines);
		return -EINVAL;
	}
	if (step->values & ~step->mask) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': values 0x%" PRIx32 " set lines outside "
			"mask 0x%" PRIx32, origin, key, value, step->values, step->mask);
		return -EINVAL;
	}
	return 0;
}

static int set_chip(struct wla_config_panel *panel, const char *origin, const char *value)
{
	size_t len = strlen(value);
	int ret = check_chip(origin, value, len);
	if (ret < 0) {
		return ret;
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
	int ret = check_line_name(origin, value, words[0], lens[0]);
	if (ret < 0) {
		return ret;
	}
	uint32_t offset;
	ret = parse_offset(origin, value, words[1], lens[1], &offset);
	if (ret < 0) {
		return ret;
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
	if (panel->n_lines == WLA_PANEL_MAX_LINES) {
		wlr_log(WLR_ERROR, "config: %s: panel-line '%s': more than %d lines in one panel",
			origin, value, WLA_PANEL_MAX_LINES);
		return -EINVAL;
	}
	struct wla_panel_line *line = &panel->lines[panel->n_lines];
	memset(line, 0, sizeof(*line));
	memcpy(line->name, words[0], lens[0]);
	line->offset = offset;
	line->active_low = active_low;
	ret = check_line_unique(panel, parser, panel->n_lines, origin, value);
	if (ret < 0) {
		memset(line, 0, sizeof(*line));
		return ret;
	}
	parser->line_lines[panel->n_lines++] = lineno;
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
			int ret = parse_wait(origin, key, value, v, v_len, &step->wait_ms);
			if (ret < 0) {
				return ret;
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
	return check_step_lines(panel, origin, key, value, step);
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
static int check_backlight(const struct panel_names *names,
	const struct wla_config_panel *panel)
{
	static const char *const keys[] = { "panel-on-step", "panel-off-step" };
	static const enum panel_part parts[] = { PART_ON, PART_OFF };
	const struct wla_panel_step *steps[] = { panel->on, panel->off };
	const size_t n_steps[] = { panel->n_on, panel->n_off };
	for (size_t s = 0; s < WLA_ARRAY_SIZE(steps); s++) {
		for (size_t i = 0; i < n_steps[s]; i++) {
			uint32_t bad = lights_backlight(panel, &steps[s][i]);
			if (!bad) {
				continue;
			}
			int line = __builtin_ctz(bad);
			char origin[ORIGIN_MAX], ref[32], lit[40] = "";
			if (panel->has_lit) {
				snprintf(lit, sizeof(lit), " (%s)",
					part_ref(names->parser, PART_LIT, 0, ref, sizeof(ref)));
			}
			wlr_log(WLR_ERROR, "config: %s: [output] '%s': %s sets %s=%u, but only "
				"panel-lit-step%s may switch the backlight on, after the first frame",
				part_origin(names, parts[s], i, origin, sizeof(origin)), names->output,
				keys[s], panel->lines[line].name,
				(unsigned)(steps[s][i].values >> line) & 1, lit);
			return -EINVAL;
		}
	}
	return 0;
}

/* A chip, and lines on it, once any part of a panel is given. */
static int check_chip_and_lines(const struct panel_names *names,
	const struct wla_config_panel *panel)
{
	char origin[ORIGIN_MAX];
	if (!panel->chip[0]) {
		wlr_log(WLR_ERROR, "config: %s: [output] '%s': panel keys without panel-chip",
			part_origin(names, PART_PANEL, 0, origin, sizeof(origin)), names->output);
		return -EINVAL;
	}
	if (panel->n_lines == 0) {
		wlr_log(WLR_ERROR, "config: %s: [output] '%s': panel-chip '%.*s' without any "
			"panel-line", part_origin(names, PART_CHIP, 0, origin, sizeof(origin)),
			names->output, (int)strnlen(panel->chip, sizeof(panel->chip)), panel->chip);
		return -EINVAL;
	}
	return 0;
}

/* The rules that tie the steps together, once every part is valid on its own. */
static int check_sequences(const struct panel_names *names,
	const struct wla_config_panel *panel)
{
	char origin[ORIGIN_MAX], ref[32];
	if (panel->n_on == 0 || panel->n_off == 0) {
		wlr_log(WLR_ERROR, "config: %s: [output] '%s': panel without panel-preset needs "
			"at least one panel-on-step and one panel-off-step",
			part_origin(names, PART_PANEL, 0, origin, sizeof(origin)), names->output);
		return -EINVAL;
	}
	uint32_t in_off = 0;
	for (size_t i = 0; i < panel->n_off; i++) {
		in_off |= panel->off[i].mask;
	}
	for (size_t i = 0; i < panel->n_lines; i++) {
		if (!(in_off & (UINT32_C(1) << i))) {
			wlr_log(WLR_ERROR, "config: %s: [output] '%s': panel line '%s' is set by no "
				"panel-off-step, so it has no safe off value",
				part_origin(names, PART_LINE, i, origin, sizeof(origin)), names->output,
				panel->lines[i].name);
			return -EINVAL;
		}
	}
	if (panel->has_lit) {
		const struct wla_panel_step *first = &panel->off[0];
		if (first->mask != panel->lit.mask ||
				((first->values ^ panel->lit.values) & first->mask) != first->mask) {
			wlr_log(WLR_ERROR, "config: %s: [output] '%s': the first panel-off-step must "
				"switch back exactly the lines of panel-lit-step (%s), backlight off "
				"first", part_origin(names, PART_OFF, 0, origin, sizeof(origin)),
				names->output, part_ref(names->parser, PART_LIT, 0, ref, sizeof(ref)));
			return -EINVAL;
		}
	}
	return check_backlight(names, panel);
}

int wla_panel_config_finish(struct wla_config_panel *panel, struct wla_panel_parser *parser,
	const char *file, const char *output_name)
{
	if (!parser->first_line) {
		return 0;
	}
	const struct panel_names names = { parser, file, output_name };
	int ret = check_chip_and_lines(&names, panel);
	if (ret < 0) {
		return ret;
	}
	char origin[ORIGIN_MAX];
	if (panel->preset == WLA_PANEL_PRESET_SIMPLE) {
		snprintf(origin, sizeof(origin), "%s:%zu", file, parser->preset_line);
		ret = expand_simple(panel, origin);
		if (ret < 0) {
			return ret;
		}
	} else if (parser->delay_line) {
		snprintf(origin, sizeof(origin), "%s:%zu", file, parser->delay_line);
		wlr_log(WLR_ERROR, "config: %s: [output] '%s': panel-delay-* is used by "
			"panel-preset only; give wait= in the steps", origin, output_name);
		return -EINVAL;
	}
	return check_sequences(&names, panel);
}

/* A step as its config value would read ("enable=1 reset=0 wait=20"), for messages. */
static const char *describe_step(const struct wla_config_panel *panel,
	const struct wla_panel_step *step, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < panel->n_lines && used < size; i++) {
		if (!(step->mask & (UINT32_C(1) << i))) {
			continue;
		}
		int n = snprintf(buf + used, size - used, "%s%s=%u", used ? " " : "",
			panel->lines[i].name, (unsigned)(step->values >> i) & 1);
		if (n < 0) {
			return buf;
		}
		used += (size_t)n;
	}
	if (used < size) {
		snprintf(buf + used, size - used, "%swait=%" PRIu32, used ? " " : "", step->wait_ms);
	}
	return buf;
}

/* More items in a part than its array holds; field is its count's name. */
static int check_count(const char *file, const char *field, size_t n, size_t max,
	const char *what)
{
	if (n > max) {
		wlr_log(WLR_ERROR, "config: %s.%s '%zu': more than %zu %s", file, field, n, max,
			what);
		return -EINVAL;
	}
	return 0;
}

static int check_lines(const struct panel_names *names, const struct wla_config_panel *panel)
{
	int ret = check_count(names->file, "n_lines", panel->n_lines, WLA_PANEL_MAX_LINES,
		"lines in one panel");
	for (size_t i = 0; ret == 0 && i < panel->n_lines; i++) {
		const struct wla_panel_line *line = &panel->lines[i];
		size_t len = strnlen(line->name, sizeof(line->name));
		char origin[ORIGIN_MAX], value[64], offset[16];
		snprintf(value, sizeof(value), "%.*s %" PRIu32 "%s", (int)len, line->name,
			line->offset, line->active_low ? " active-low" : "");
		snprintf(offset, sizeof(offset), "%" PRIu32, line->offset);
		part_origin(names, PART_LINE, i, origin, sizeof(origin));
		uint32_t parsed;
		ret = check_line_name(origin, value, line->name, len);
		if (ret == 0) {
			ret = parse_offset(origin, value, offset, strlen(offset), &parsed);
		}
		if (ret == 0) {
			ret = check_line_unique(panel, NULL, i, origin, value);
		}
	}
	return ret;
}

static int check_step(const struct panel_names *names, const struct wla_config_panel *panel,
	enum panel_part part, size_t i, const struct wla_panel_step *step)
{
	static const char *const keys[] = {
		[PART_ON] = "panel-on-step",
		[PART_OFF] = "panel-off-step",
		[PART_LIT] = "panel-lit-step",
	};
	char origin[ORIGIN_MAX], value[WLA_PANEL_MAX_LINES * (WLA_PANEL_LINE_NAME_MAX + 3) + 16];
	char wait[16];
	part_origin(names, part, i, origin, sizeof(origin));
	describe_step(panel, step, value, sizeof(value));
	int ret = check_step_lines(panel, origin, keys[part], value, step);
	if (ret < 0) {
		return ret;
	}
	snprintf(wait, sizeof(wait), "%" PRIu32, step->wait_ms);
	uint32_t parsed;
	return parse_wait(origin, keys[part], value, wait, strlen(wait), &parsed);
}

static int check_steps(const struct panel_names *names, const struct wla_config_panel *panel)
{
	int ret = check_count(names->file, "n_on", panel->n_on, WLA_PANEL_MAX_STEPS, "steps");
	if (ret == 0) {
		ret = check_count(names->file, "n_off", panel->n_off, WLA_PANEL_MAX_STEPS, "steps");
	}
	for (size_t i = 0; ret == 0 && i < panel->n_on; i++) {
		ret = check_step(names, panel, PART_ON, i, &panel->on[i]);
	}
	if (ret == 0 && panel->has_lit) {
		ret = check_step(names, panel, PART_LIT, 0, &panel->lit);
	}
	for (size_t i = 0; ret == 0 && i < panel->n_off; i++) {
		ret = check_step(names, panel, PART_OFF, i, &panel->off[i]);
	}
	return ret;
}

static int check_delays(const struct panel_names *names, const struct wla_config_panel *panel)
{
	const struct {
		const char *field, *key;
		uint32_t ms;
	} delays[] = {
		{ "min_off_ms", panel_keys[KEY_MIN_OFF].name, panel->min_off_ms },
		{ "delays.prepare_ms", panel_keys[KEY_DELAY_PREPARE].name, panel->delays.prepare_ms },
		{ "delays.enable_ms", panel_keys[KEY_DELAY_ENABLE].name, panel->delays.enable_ms },
		{ "delays.disable_ms", panel_keys[KEY_DELAY_DISABLE].name, panel->delays.disable_ms },
		{ "delays.unprepare_ms", panel_keys[KEY_DELAY_UNPREPARE].name,
			panel->delays.unprepare_ms },
	};
	for (size_t i = 0; i < WLA_ARRAY_SIZE(delays); i++) {
		char origin[ORIGIN_MAX], text[16];
		snprintf(origin, sizeof(origin), "%s.%s", names->file, delays[i].field);
		snprintf(text, sizeof(text), "%" PRIu32, delays[i].ms);
		uint32_t parsed;
		int ret = parse_delay(origin, delays[i].key, text, &parsed);
		if (ret < 0) {
			return ret;
		}
	}
	return 0;
}

int wla_panel_config_check(const struct wla_config_panel *panel, const char *field,
	const char *output_name)
{
	/* The informative preset and delays alone do not make a panel. */
	if (!panel->chip[0] && panel->n_lines == 0 && panel->n_on == 0 && panel->n_off == 0 &&
			!panel->has_lit && panel->min_off_ms == 0) {
		return 0;
	}
	const struct panel_names names = { NULL, field, output_name };
	char origin[ORIGIN_MAX];
	int ret = check_chip_and_lines(&names, panel);
	if (ret == 0) {
		ret = check_chip(part_origin(&names, PART_CHIP, 0, origin, sizeof(origin)),
			panel->chip, strnlen(panel->chip, sizeof(panel->chip)));
	}
	if (ret == 0) {
		ret = check_lines(&names, panel);
	}
	if (ret == 0) {
		ret = check_steps(&names, panel);
	}
	if (ret == 0) {
		ret = check_delays(&names, panel);
	}
	if (ret == 0) {
		ret = check_sequences(&names, panel);
	}
	return ret;
}

uint32_t wla_panel_off_values(const struct wla_config_panel *desc)
{
	uint32_t values = 0;
	for (size_t i = 0; i < desc->n_off; i++) {
		values = (values & ~desc->off[i].mask) | (desc->off[i].values & desc->off[i].mask);
	}
	return values;
}
