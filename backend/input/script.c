/*
 * Input lines and scripts of timed input lines (README, "Input"):
 *
 *   [at TIME] key KEY_NAME [down|up]
 *   [at TIME] type TEXT
 *   [at TIME] move OUTPUT X,Y
 *   [at TIME] move-by DX,DY
 *   [at TIME] button|click BUTTON [down|up]
 *   [at TIME] axis vertical|horizontal DELTA
 *   [at TIME] touch ID down|motion X,Y
 *   [at TIME] touch ID up
 *
 * A script is parsed whole before anything is sent, so that a bad line
 * sends nothing; then each line goes at its time after the script's start
 * (a line without `at` goes with the line before it), from a timer of the
 * compositor's event loop.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <libevdev/libevdev.h>
#include <linux/input-event-codes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/util/log.h>
#include "backend/input.h"
#include "util.h"

/* A script's size limits: enough for any test, bounded for a fuzzer. */
#define SCRIPT_MAX_LINES 10000
#define SCRIPT_LINE_MAX 1024
/* One day. */
#define SCRIPT_MAX_MS (24 * 3600 * 1000ull)
/* Coordinates and deltas beyond any output. */
#define COORD_MAX 1e6

struct wla_input_script {
	struct wla_input *input;
	struct wl_list link; /* wla_input.scripts */
	char name[64];
	struct wla_input_action *actions;
	size_t *lines;
	size_t n_actions, next;
	uint64_t start_ms;
	struct wl_event_source *timer;
	wla_input_script_done_func done;
	void *data;
};

static int fail(char *err, size_t err_size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, err_size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The next blank-separated word of *p into word (at most size - 1 bytes),
 * advancing *p; false at the end of the line. */
static bool next_word(const char **p, char *word, size_t size)
{
	const char *s = *p;
	while (*s == ' ' || *s == '\t') {
		s++;
	}
	if (!*s) {
		*p = s;
		return false;
	}
	size_t len = 0;
	while (s[len] && s[len] != ' ' && s[len] != '\t') {
		len++;
	}
	size_t copy = len < size ? len : size - 1;
	memcpy(word, s, copy);
	word[copy] = '\0';
	if (copy < len && size > 4) {
		/* Too long for any valid word: cut, with "...", which no rule
		 * accepts and an error message shows as it is. */
		memcpy(word + size - 4, "...", 4);
	}
	*p = s + len;
	return true;
}

static bool at_end(const char *p)
{
	while (*p == ' ' || *p == '\t') {
		p++;
	}
	return !*p;
}

/* A finite decimal number, all of s. */
static bool parse_double(const char *s, double *out)
{
	if (!*s || isspace((unsigned char)*s)) {
		return false;
	}
	for (const char *c = s; *c; c++) {
		if (!isdigit((unsigned char)*c) && *c != '.' && *c != '-' && *c != '+') {
			return false; /* no hex, exponents, inf or nan */
		}
	}
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || fabs(v) > COORD_MAX) {
		return false;
	}
	*out = v;
	return true;
}

static bool parse_pair(const char *s, double *x, double *y)
{
	char buf[64];
	const char *comma = strchr(s, ',');
	if (!comma || (size_t)(comma - s) >= sizeof(buf)) {
		return false;
	}
	memcpy(buf, s, (size_t)(comma - s));
	buf[comma - s] = '\0';
	return parse_double(buf, x) && parse_double(comma + 1, y);
}

/* "250ms", "2s", "1.5s": milliseconds. */
static bool parse_time(const char *s, uint64_t *ms)
{
	size_t len = strlen(s);
	uint64_t scale;
	if (len > 2 && strcmp(s + len - 2, "ms") == 0) {
		scale = 1;
		len -= 2;
	} else if (len > 1 && s[len - 1] == 's') {
		scale = 1000;
		len -= 1;
	} else {
		return false;
	}
	uint64_t whole = 0, frac = 0, frac_scale = 1;
	size_t i = 0;
	for (; i < len && isdigit((unsigned char)s[i]); i++) {
		whole = whole * 10 + (uint64_t)(s[i] - '0');
		if (whole > SCRIPT_MAX_MS) {
			return false;
		}
	}
	if (i == 0) {
		return false;
	}
	if (i < len && s[i] == '.' && scale == 1000) {
		for (i++; i < len && isdigit((unsigned char)s[i]) && frac_scale < 1000; i++) {
			frac = frac * 10 + (uint64_t)(s[i] - '0');
			frac_scale *= 10;
		}
		if (frac_scale == 1) {
			return false;
		}
	}
	if (i != len) {
		return false;
	}
	uint64_t v = whole * scale + frac * (1000 / frac_scale);
	if (v > SCRIPT_MAX_MS) {
		return false;
	}
	*ms = v;
	return true;
}

static bool parse_press(const char **p, enum wla_input_press *press)
{
	char word[16];
	*press = WLA_INPUT_STROKE;
	if (!next_word(p, word, sizeof(word))) {
		return true;
	}
	if (strcmp(word, "down") == 0) {
		*press = WLA_INPUT_DOWN;
	} else if (strcmp(word, "up") == 0) {
		*press = WLA_INPUT_UP;
	} else {
		return false;
	}
	return true;
}

static const struct {
	const char *name;
	uint32_t code;
} button_names[] = {
	{ "left", BTN_LEFT }, { "right", BTN_RIGHT }, { "middle", BTN_MIDDLE },
	{ "side", BTN_SIDE }, { "extra", BTN_EXTRA }, { "forward", BTN_FORWARD },
	{ "back", BTN_BACK },
};

static bool parse_button(const char *word, uint32_t *code)
{
	for (size_t i = 0; i < WLA_ARRAY_SIZE(button_names); i++) {
		if (strcmp(word, button_names[i].name) == 0) {
			*code = button_names[i].code;
			return true;
		}
	}
	/* Pointer buttons only: BTN_MOUSE .. BTN_TASK. */
	int c = libevdev_event_code_from_name(EV_KEY, word);
	if (strncmp(word, "BTN_", 4) == 0 && c >= BTN_MOUSE && c <= BTN_TASK) {
		*code = (uint32_t)c;
		return true;
	}
	return false;
}

int wla_input_parse(struct wla_input *input, const char *line, struct wla_input_action *act,
	char *err, size_t err_size)
{
	memset(act, 0, sizeof(*act));
	const char *p = line;
	char verb[32] = "", word[64] = "";
	if (!next_word(&p, verb, sizeof(verb))) {
		return fail(err, err_size, "empty line");
	}
	if (strcmp(verb, "at") == 0) {
		if (!next_word(&p, word, sizeof(word))) {
			return fail(err, err_size, "no time after 'at' (expected like 250ms or 1.5s)");
		}
		if (!parse_time(word, &act->at_ms)) {
			return fail(err, err_size, "bad time '%s' after 'at' (expected like 250ms or "
				"1.5s, at most a day)", word);
		}
		act->has_at = true;
		if (!next_word(&p, verb, sizeof(verb))) {
			return fail(err, err_size, "nothing to do after 'at'");
		}
	}
	if (strcmp(verb, "key") == 0) {
		act->type = WLA_INPUT_KEY;
		if (!next_word(&p, word, sizeof(word))) {
			return fail(err, err_size, "key: expected key KEY_NAME [down|up]");
		}
		int code = libevdev_event_code_from_name(EV_KEY, word);
		if (strncmp(word, "KEY_", 4) != 0 || code < 0) {
			return fail(err, err_size, "key: unknown key name '%s' (expected an evdev "
				"name like KEY_A or KEY_ENTER)", word);
		}
		act->code = (uint32_t)code;
		if (!parse_press(&p, &act->press)) {
			return fail(err, err_size, "key %s: expected down or up after the name",
				word);
		}
	} else if (strcmp(verb, "type") == 0) {
		act->type = WLA_INPUT_TYPE;
		while (*p == ' ' || *p == '\t') {
			p++;
		}
		size_t len = strlen(p);
		if (len == 0) {
			return fail(err, err_size, "type: no text");
		}
		if (len >= sizeof(act->text)) {
			return fail(err, err_size, "type: text longer than %zu bytes",
				sizeof(act->text) - 1);
		}
		memcpy(act->text, p, len + 1);
		int ret = wla_input_check_text(input, act->text, err, err_size);
		if (ret < 0) {
			char why[WLA_INPUT_ERROR_MAX];
			snprintf(why, sizeof(why), "%s", err);
			return fail(err, err_size, "type: %s", why);
		}
		return 0;
	} else if (strcmp(verb, "move") == 0) {
		act->type = WLA_INPUT_MOVE;
		if (!next_word(&p, act->output, sizeof(act->output)) ||
				!next_word(&p, word, sizeof(word))) {
			return fail(err, err_size, "move: expected move OUTPUT X,Y");
		}
		if (!parse_pair(word, &act->x, &act->y)) {
			return fail(err, err_size, "move %s: bad position '%s' (expected X,Y)",
				act->output, word);
		}
		double nx, ny;
		char why[WLA_INPUT_ERROR_MAX];
		if (wla_input_locate(input, act->output, act->x, act->y, &nx, &ny, why,
				sizeof(why)) < 0) {
			return fail(err, err_size, "move: %s", why);
		}
	} else if (strcmp(verb, "move-by") == 0) {
		act->type = WLA_INPUT_MOVE_BY;
		if (!next_word(&p, word, sizeof(word)) || !parse_pair(word, &act->x, &act->y)) {
			return fail(err, err_size, "move-by: expected move-by DX,DY, not '%s'",
				word);
		}
	} else if (strcmp(verb, "button") == 0 || strcmp(verb, "click") == 0) {
		act->type = WLA_INPUT_BUTTON;
		if (!next_word(&p, word, sizeof(word)) || !parse_button(word, &act->code)) {
			return fail(err, err_size, "%s: expected a button: left, right, middle, side, "
				"extra, forward, back or BTN_*", verb);
		}
		if (!parse_press(&p, &act->press)) {
			return fail(err, err_size, "%s %s: expected down or up after the button",
				verb, word);
		}
		if (verb[0] == 'c' && act->press != WLA_INPUT_STROKE) {
			return fail(err, err_size, "click: a click is down and up; use button %s %s",
				word, act->press == WLA_INPUT_DOWN ? "down" : "up");
		}
	} else if (strcmp(verb, "axis") == 0) {
		act->type = WLA_INPUT_AXIS;
		if (!next_word(&p, word, sizeof(word)) ||
				(strcmp(word, "vertical") != 0 && strcmp(word, "horizontal") != 0)) {
			return fail(err, err_size, "axis: expected axis vertical|horizontal DELTA");
		}
		act->horizontal = word[0] == 'h';
		if (!next_word(&p, word, sizeof(word)) || !parse_double(word, &act->delta)) {
			return fail(err, err_size, "axis: expected a number for DELTA (15 is one "
				"wheel detent)");
		}
	} else if (strcmp(verb, "touch") == 0) {
		act->type = WLA_INPUT_TOUCH;
		long id;
		if (!next_word(&p, word, sizeof(word)) || !wla_parse_long(word, 0, INT32_MAX, &id)) {
			return fail(err, err_size, "touch: expected touch ID down|motion|up [X,Y], "
				"ID 0 or more");
		}
		act->touch_id = (int32_t)id;
		if (!next_word(&p, word, sizeof(word))) {
			return fail(err, err_size, "touch %ld: expected down, motion or up", id);
		}
		if (strcmp(word, "up") == 0) {
			act->touch = WLA_INPUT_TOUCH_UP;
		} else if (strcmp(word, "down") == 0 || strcmp(word, "motion") == 0) {
			act->touch = word[0] == 'd' ? WLA_INPUT_TOUCH_DOWN : WLA_INPUT_TOUCH_MOTION;
			if (!next_word(&p, word, sizeof(word)) || !parse_pair(word, &act->x, &act->y)) {
				return fail(err, err_size, "touch %ld: expected X,Y", id);
			}
			if (!input->touch) {
				return fail(err, err_size, "touch: no virtual touch device (set "
					"virtual-touch to an output)");
			}
			double nx, ny;
			char why[WLA_INPUT_ERROR_MAX];
			if (wla_input_locate(input, input->touch->base.output_name, act->x, act->y,
					&nx, &ny, why, sizeof(why)) < 0) {
				return fail(err, err_size, "touch %ld: %s", id, why);
			}
		} else {
			return fail(err, err_size, "touch %ld: expected down, motion or up, not '%s'",
				id, word);
		}
	} else {
		return fail(err, err_size, "unknown input '%s' (key, type, move, move-by, button, "
			"click, axis, touch)", verb);
	}
	if (!at_end(p)) {
		return fail(err, err_size, "%s: unexpected words at the end: '%s'", verb, p);
	}
	return 0;
}

/* ---- Scripts ---- */

static void script_free(struct wla_input_script *script)
{
	if (script->timer) {
		wl_event_source_remove(script->timer);
	}
	wl_list_remove(&script->link);
	free(script->actions);
	free(script->lines);
	free(script);
}

void wla_input_script_cancel(struct wla_input_script *script)
{
	if (script) {
		script_free(script);
	}
}

void wla_input_script_end(struct wla_input_script *script, int status, const char *message)
{
	wla_input_script_done_func done = script->done;
	void *data = script->data;
	script_free(script);
	if (done) {
		done(data, status, message);
	}
}

void wla_input_scripts_end_all(struct wla_input *input, int status, const char *message)
{
	while (!wl_list_empty(&input->scripts)) {
		struct wla_input_script *script =
			wl_container_of(input->scripts.next, script, link);
		wla_input_script_end(script, status, message);
	}
}

static int handle_script_timer(void *data)
{
	struct wla_input_script *script = data;
	uint64_t elapsed = wla_input_now_ms64() - script->start_ms;
	while (script->next < script->n_actions &&
			script->actions[script->next].at_ms <= elapsed) {
		size_t i = script->next++;
		char err[WLA_INPUT_ERROR_MAX], msg[WLA_INPUT_ERROR_MAX + 96];
		/* A listener may end the script (or the backend) meanwhile: the
		 * script is looked up again after each action. */
		struct wla_input *input = script->input;
		struct wl_list *link = &script->link;
		wla_input_hold(input);
		int ret = wla_input_perform(input, &script->actions[i], err, sizeof(err));
		bool alive = false;
		struct wla_input_script *s;
		wl_list_for_each(s, &input->scripts, link) {
			alive |= &s->link == link;
		}
		/* The backend destroyed (every script ended), or this one ended. */
		if (!wla_input_release(input) || !alive) {
			return 0;
		}
		if (ret < 0) {
			snprintf(msg, sizeof(msg), "script %s line %zu: %s", script->name,
				script->lines[i], err);
			wlr_log(WLR_ERROR, "input: %s", msg);
			wla_input_script_end(script, ret, msg);
			return 0;
		}
	}
	if (script->next == script->n_actions) {
		char msg[128];
		snprintf(msg, sizeof(msg), "script %s: %zu events sent", script->name,
			script->n_actions);
		wla_input_script_end(script, 0, msg);
		return 0;
	}
	uint64_t wait = script->actions[script->next].at_ms - elapsed;
	wl_event_source_timer_update(script->timer, wait > INT32_MAX ? INT32_MAX : (int)wait);
	return 0;
}

struct wla_input_script *wla_input_script_start(struct wla_input *input, const char *name,
	const char *text, wla_input_script_done_func done, void *data, char *err,
	size_t err_size)
{
	struct wla_input_script *script = calloc(1, sizeof(*script));
	if (!script) {
		snprintf(err, err_size, "script %s: out of memory", name);
		return NULL;
	}
	wl_list_init(&script->link);
	script->input = input;
	snprintf(script->name, sizeof(script->name), "%s", name);
	script->done = done;
	script->data = data;

	size_t cap = 0, lineno = 0;
	uint64_t at = 0;
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		lineno++;
		if (lineno > SCRIPT_MAX_LINES) {
			snprintf(err, err_size, "script %s: more than %d lines", name,
				SCRIPT_MAX_LINES);
			goto fail;
		}
		if (len >= SCRIPT_LINE_MAX) {
			snprintf(err, err_size, "script %s line %zu: longer than %d bytes", name,
				lineno, SCRIPT_LINE_MAX - 1);
			goto fail;
		}
		char line[SCRIPT_LINE_MAX];
		memcpy(line, p, len);
		line[len] = '\0';
		if (len && line[len - 1] == '\r') {
			line[len - 1] = '\0';
		}
		p += len + (nl ? 1 : 0);
		const char *s = line;
		while (*s == ' ' || *s == '\t') {
			s++;
		}
		if (!*s || *s == '#') {
			continue;
		}
		if (script->n_actions == cap) {
			cap = cap ? cap * 2 : 16;
			struct wla_input_action *a = realloc(script->actions, cap * sizeof(*a));
			size_t *l = a ? realloc(script->lines, cap * sizeof(*l)) : NULL;
			if (a) {
				script->actions = a;
			}
			if (!a || !l) {
				snprintf(err, err_size, "script %s: out of memory", name);
				goto fail;
			}
			script->lines = l;
		}
		struct wla_input_action *act = &script->actions[script->n_actions];
		char why[WLA_INPUT_ERROR_MAX];
		if (wla_input_parse(input, s, act, why, sizeof(why)) < 0) {
			snprintf(err, err_size, "script %s line %zu: %s", name, lineno, why);
			goto fail;
		}
		if (act->has_at && act->at_ms < at) {
			snprintf(err, err_size, "script %s line %zu: at %" PRIu64 "ms is before "
				"the line above (%" PRIu64 "ms)", name, lineno, act->at_ms, at);
			goto fail;
		}
		if (act->has_at) {
			at = act->at_ms;
		}
		act->at_ms = at;
		script->lines[script->n_actions++] = lineno;
	}
	if (script->n_actions == 0) {
		snprintf(err, err_size, "script %s: no events", name);
		goto fail;
	}
	script->timer = wl_event_loop_add_timer(input->loop, handle_script_timer, script);
	if (!script->timer) {
		snprintf(err, err_size, "script %s: cannot add a timer", name);
		goto fail;
	}
	script->start_ms = wla_input_now_ms64();
	wl_list_insert(input->scripts.prev, &script->link);
	/* The first events go from the loop, never from inside the caller. */
	uint64_t first = script->actions[0].at_ms;
	wl_event_source_timer_update(script->timer, first ? (int)first : 1);
	return script;

fail:
	script_free(script);
	return NULL;
}
