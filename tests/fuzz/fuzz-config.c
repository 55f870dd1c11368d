/*
 * Fuzz target: configuration (backend/config.c, and the panel-* keys it hands
 * to backend/panel/config.c).
 *
 * The first byte picks the entry point, the rest is its input:
 *   't'  wla_config_parse_text() on the rest up to its first NUL, and the
 *        whole rest through wla_config_load_file(): the two must agree
 *   'f'  wla_config_load_file() on a file holding the rest, NUL bytes too
 *   'e'  wla_config_load_env() with the variables listed in the rest
 *   's'  wla_config_set() on a default config, once per pair in the rest
 *   any other byte: that byte % 4 picks one of the above, in this order.
 * For 'e' and 's' the rest is a list of KEY=VALUE records separated by NUL
 * bytes, or by newlines if it has no NUL. For 'e', KEY is a WLA_ variable's
 * name or one character that picks one (0..7 in the order WLA_CONFIG,
 * WLA_OUTPUTS, WLA_OVERLAY_PLANES, WLA_CURSOR_SIZE, WLA_FLIP_DEPTH,
 * WLA_FLIP_POLICY, WLA_GPIO_DRY_RUN, WLA_LATCH_SLACK_US; any other by its
 * value % 8); other keys are ignored, and WLA_CONFIG's value is the text of
 * the file it will name.
 * The environment is restored after each input.
 *
 * Invariants:
 *   - a refusal returns -EINVAL (-ENOENT etc. only for a file that cannot be
 *     read) after exactly one error line; success logs no error;
 *   - a refused wla_config_set() changes nothing; an accepted or refused
 *     key/value agrees with the documented rules, checked independently;
 *   - every accepted config is within its documented limits: outputs, names,
 *     modes, plane and queue settings, and a panel description that
 *     wla_panel_create() takes, whose lines named 'backlight' are switched
 *     on by no power-on or power-off step and have a safe off value of 0;
 *   - an accepted config written back as config text parses to the same
 *     config (the text and file loaders agree on it too);
 *   - what the parser accepts, the virtual display controller can show: an
 *     accepted config makes a VDC without an error line, each output a
 *     connector with its modes at their size and rate, each of them a valid
 *     timing that the VDC also gives as a custom mode, and each one, set on
 *     its CRTC, latches at a vblank.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/atomic.h"
#include "backend/panel.h"
#include "backend/vdc.h"
#include "fuzz.h"
#include "wlatomic/config.h"
#include "lib/legacy.h"

#define TEXT_MAX (128 * 1024)

static const char *const env_vars[] = {
	"WLA_CONFIG", "WLA_OUTPUTS", "WLA_OVERLAY_PLANES", "WLA_CURSOR_SIZE",
	"WLA_FLIP_DEPTH", "WLA_FLIP_POLICY", "WLA_GPIO_DRY_RUN", "WLA_LATCH_SLACK_US",
};
#define N_ENV_VARS (sizeof(env_vars) / sizeof(env_vars[0]))

static bool is_name_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		c == '_' || c == '-';
}

static bool valid_name(const char *s, size_t size)
{
	size_t len = strnlen(s, size);
	if (len == 0 || len == size) {
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		if (!is_name_char(s[i])) {
			return false;
		}
	}
	return true;
}

static uint64_t now_zero(void *data)
{
	return 0;
}

static uint32_t apply(uint32_t values, const struct wla_panel_step *step)
{
	return (values & ~step->mask) | (step->values & step->mask);
}

static void check_panel(const struct wla_config_panel *p, const char *output)
{
	FUZZ_CHECK(memchr(p->chip, '\0', sizeof(p->chip)) && !strpbrk(p->chip, " \t"),
		"output %s: panel chip not a blank-free string", output);
	FUZZ_CHECK(p->n_lines >= 1 && p->n_lines <= WLA_PANEL_MAX_LINES,
		"output %s: %zu panel lines", output, p->n_lines);
	uint32_t all = (UINT32_C(1) << p->n_lines) - 1, backlight = 0;
	for (size_t i = 0; i < p->n_lines; i++) {
		const struct wla_panel_line *l = &p->lines[i];
		FUZZ_CHECK(valid_name(l->name, sizeof(l->name)) && strcmp(l->name, "wait") != 0,
			"output %s: bad line name", output);
		FUZZ_CHECK(l->offset <= WLA_PANEL_MAX_OFFSET, "output %s: line %s offset %u",
			output, l->name, l->offset);
		for (size_t j = 0; j < i; j++) {
			FUZZ_CHECK(strcmp(l->name, p->lines[j].name) != 0 &&
				l->offset != p->lines[j].offset,
				"output %s: lines %zu and %zu share a name or offset", output, j, i);
		}
		if (strcmp(l->name, "backlight") == 0) {
			backlight |= UINT32_C(1) << i;
		}
	}
	FUZZ_CHECK(p->n_on >= 1 && p->n_on <= WLA_PANEL_MAX_STEPS && p->n_off >= 1 &&
		p->n_off <= WLA_PANEL_MAX_STEPS, "output %s: %zu on and %zu off steps", output,
		p->n_on, p->n_off);
	uint32_t in_off = 0;
	for (size_t i = 0; i < p->n_on; i++) {
		FUZZ_CHECK(p->on[i].mask && !(p->on[i].mask & ~all),
			"output %s: on step %zu mask 0x%x", output, i, p->on[i].mask);
		FUZZ_CHECK(!(p->on[i].values & p->on[i].mask & backlight),
			"output %s: power-on step %zu switches the backlight on", output, i);
	}
	for (size_t i = 0; i < p->n_off; i++) {
		FUZZ_CHECK(p->off[i].mask && !(p->off[i].mask & ~all),
			"output %s: off step %zu mask 0x%x", output, i, p->off[i].mask);
		FUZZ_CHECK(!(p->off[i].values & p->off[i].mask & backlight),
			"output %s: power-off step %zu switches the backlight on", output, i);
		in_off |= p->off[i].mask;
	}
	FUZZ_CHECK(in_off == all, "output %s: lines 0x%x have no safe off value", output,
		all & ~in_off);
	uint32_t off = wla_panel_off_values(p);
	FUZZ_CHECK(!(off & backlight), "output %s: the safe off value of line 'backlight' "
		"is 1: the panel would be requested with its backlight on", output);
	if (p->has_lit) {
		FUZZ_CHECK(p->lit.mask && !(p->lit.mask & ~all), "output %s: lit mask 0x%x",
			output, p->lit.mask);
		FUZZ_CHECK(p->off[0].mask == p->lit.mask &&
			((p->off[0].values ^ p->lit.values) & p->lit.mask) == p->lit.mask,
			"output %s: the first off step does not undo the lit step", output);
	}
	/* The on sequence from the safe state never lights a backlight line either. */
	uint32_t v = off;
	for (size_t i = 0; i < p->n_on; i++) {
		v = apply(v, &p->on[i]);
		FUZZ_CHECK(!(v & backlight), "output %s: backlight on after on step %zu",
			output, i);
	}

	/* What the parser accepts, the sequencer must take. */
	struct wla_gpio_record rec;
	wla_gpio_record_init(&rec, now_zero, NULL);
	struct wla_panel_clock clock = { .now = now_zero };
	int err = 0;
	struct wla_panel *panel = wla_panel_create(p, output, &rec.provider, &clock, NULL, NULL,
		&err);
	FUZZ_CHECK(panel && err == 0, "output %s: accepted panel refused by wla_panel_create "
		"(%d)", output, err);
	uint32_t active_low = 0;
	for (size_t i = 0; i < p->n_lines; i++) {
		active_low |= p->lines[i].active_low ? UINT32_C(1) << i : 0;
	}
	FUZZ_CHECK(wla_panel_get_values(panel) == off && rec.levels == (off ^ active_low),
		"output %s: not requested at its off values", output);
	wla_panel_destroy(panel);
	FUZZ_CHECK(!rec.requested, "output %s: lines still held after destroy", output);
}

static void check_config(const struct wla_config *cfg)
{
	FUZZ_CHECK(cfg->n_outputs >= 1 && cfg->n_outputs <= WLA_MAX_OUTPUTS, "%zu outputs",
		cfg->n_outputs);
	FUZZ_CHECK(cfg->overlay_planes <= WLA_MAX_OVERLAY_PLANES, "overlay planes %u",
		cfg->overlay_planes);
	FUZZ_CHECK(cfg->cursor_size >= 16 && cfg->cursor_size <= 512, "cursor size %u",
		cfg->cursor_size);
	FUZZ_CHECK(cfg->flip_depth >= 1 && cfg->flip_depth <= WLA_MAX_FLIP_DEPTH,
		"flip depth %u", cfg->flip_depth);
	for (size_t i = 0; i < cfg->n_outputs; i++) {
		const struct wla_config_output *o = &cfg->outputs[i];
		FUZZ_CHECK(valid_name(o->name, sizeof(o->name)), "output %zu has a bad name", i);
		for (size_t j = 0; j < i; j++) {
			FUZZ_CHECK(strcmp(o->name, cfg->outputs[j].name) != 0,
				"outputs %zu and %zu are both '%s'", j, i, o->name);
		}
		FUZZ_CHECK(o->n_modes >= 1 && o->n_modes <= WLA_MAX_MODES, "output %s: %zu modes",
			o->name, o->n_modes);
		for (size_t m = 0; m < o->n_modes; m++) {
			const struct wla_config_mode *mode = &o->modes[m];
			FUZZ_CHECK(mode->width >= 1 && mode->width <= WLA_MODE_MAX_SIZE &&
				mode->height >= 1 && mode->height <= WLA_MODE_MAX_SIZE &&
				mode->refresh_mhz >= 1 && mode->refresh_mhz <= WLA_MODE_MAX_REFRESH_MHZ,
				"output %s: mode %dx%d@%dmHz", o->name, mode->width, mode->height,
				mode->refresh_mhz);
		}
		if (o->panel.chip[0]) {
			check_panel(&o->panel, o->name);
		}
	}
}

/* Appends to a fixed buffer; the text only has to be long enough for a config
 * the parser accepted, which TEXT_MAX is. */
struct text {
	char buf[TEXT_MAX];
	size_t len;
};

__attribute__((format(printf, 2, 3)))
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, ap);
	va_end(ap);
	FUZZ_CHECK(n >= 0 && (size_t)n < sizeof(t->buf) - t->len, "canonical text too long");
	t->len += (size_t)n;
}

static void put_step(struct text *t, const char *key, const struct wla_config_panel *p,
	const struct wla_panel_step *s)
{
	put(t, "%s =", key);
	for (size_t i = 0; i < p->n_lines; i++) {
		if (s->mask & (UINT32_C(1) << i)) {
			put(t, " %s=%u", p->lines[i].name, (unsigned)((s->values >> i) & 1));
		}
	}
	put(t, " wait=%u\n", s->wait_ms);
}

/* cfg as config text, in the canonical form: every key, one per line. */
static void write_config(struct text *t, const struct wla_config *cfg)
{
	t->len = 0;
	t->buf[0] = '\0';
	put(t, "overlay-planes = %u\ncursor-size = %u\nflip-depth = %u\nflip-policy = %s\n"
		"gpio-dry-run = %d\nlatch-slack-us = %u\n", cfg->overlay_planes, cfg->cursor_size,
		cfg->flip_depth, cfg->flip_mailbox ? "mailbox" : "queue", cfg->gpio_dry_run ? 1 : 0,
		cfg->latch_slack_us);
	if (cfg->control[0]) {
		put(t, "control = %s\n", cfg->control);
	}
	static const char *const virtual_input[] = { "auto", "on", "off" };
	put(t, "driver = %s\nvirtual-input = %s\n", cfg->driver == WLA_DRIVER_KMS ? "kms" : "vdc",
		virtual_input[cfg->virtual_input]);
	if (cfg->drm_device[0]) {
		put(t, "drm-device = %s\n", cfg->drm_device);
	}
	if (cfg->keyboard_layout[0]) {
		put(t, "keyboard-layout = %s\n", cfg->keyboard_layout);
	}
	if (cfg->virtual_touch[0]) {
		put(t, "virtual-touch = %s\n", cfg->virtual_touch);
	}
	if (cfg->touch_output[0]) {
		put(t, "touch-output = %s\n", cfg->touch_output);
	}
	for (size_t i = 0; i < cfg->n_input_devices; i++) {
		put(t, "input-device = %s\n", cfg->input_devices[i]);
	}
	for (size_t i = 0; i < cfg->n_outputs; i++) {
		const struct wla_config_output *o = &cfg->outputs[i];
		put(t, "[output]\nname = %s\n", o->name);
		for (size_t m = 0; m < o->n_modes; m++) {
			put(t, "mode = %dx%d@%d.%03d\n", o->modes[m].width, o->modes[m].height,
				o->modes[m].refresh_mhz / 1000, o->modes[m].refresh_mhz % 1000);
		}
		const struct wla_config_panel *p = &o->panel;
		if (!p->chip[0]) {
			continue;
		}
		put(t, "panel-chip = %s\n", p->chip);
		for (size_t l = 0; l < p->n_lines; l++) {
			put(t, "panel-line = %s %u%s\n", p->lines[l].name, p->lines[l].offset,
				p->lines[l].active_low ? " active-low" : "");
		}
		if (p->preset == WLA_PANEL_PRESET_SIMPLE) {
			put(t, "panel-preset = simple\npanel-delay-prepare = %u\n"
				"panel-delay-enable = %u\npanel-delay-disable = %u\n"
				"panel-delay-unprepare = %u\n", p->delays.prepare_ms,
				p->delays.enable_ms, p->delays.disable_ms, p->delays.unprepare_ms);
		} else {
			for (size_t s = 0; s < p->n_on; s++) {
				put_step(t, "panel-on-step", p, &p->on[s]);
			}
			if (p->has_lit) {
				put_step(t, "panel-lit-step", p, &p->lit);
			}
			for (size_t s = 0; s < p->n_off; s++) {
				put_step(t, "panel-off-step", p, &p->off[s]);
			}
		}
		put(t, "panel-min-off-time = %u\n", p->min_off_ms);
	}
}

static bool same_step(const struct wla_panel_step *a, const struct wla_panel_step *b)
{
	return a->mask == b->mask && (a->values & a->mask) == (b->values & b->mask) &&
		a->wait_ms == b->wait_ms;
}

static bool same_panel(const struct wla_config_panel *a, const struct wla_config_panel *b)
{
	if (strcmp(a->chip, b->chip) != 0 || a->n_lines != b->n_lines || a->n_on != b->n_on ||
			a->n_off != b->n_off || a->has_lit != b->has_lit ||
			a->min_off_ms != b->min_off_ms || a->preset != b->preset ||
			(a->has_lit && !same_step(&a->lit, &b->lit))) {
		return false;
	}
	if (a->preset == WLA_PANEL_PRESET_SIMPLE && memcmp(&a->delays, &b->delays,
			sizeof(a->delays)) != 0) {
		return false;
	}
	for (size_t i = 0; i < a->n_lines; i++) {
		if (strcmp(a->lines[i].name, b->lines[i].name) != 0 ||
				a->lines[i].offset != b->lines[i].offset ||
				a->lines[i].active_low != b->lines[i].active_low) {
			return false;
		}
	}
	for (size_t i = 0; i < a->n_on; i++) {
		if (!same_step(&a->on[i], &b->on[i])) {
			return false;
		}
	}
	for (size_t i = 0; i < a->n_off; i++) {
		if (!same_step(&a->off[i], &b->off[i])) {
			return false;
		}
	}
	return true;
}

static bool same_config(const struct wla_config *a, const struct wla_config *b)
{
	if (a->n_outputs != b->n_outputs || a->overlay_planes != b->overlay_planes ||
			a->cursor_size != b->cursor_size || a->flip_depth != b->flip_depth ||
			a->flip_mailbox != b->flip_mailbox || a->gpio_dry_run != b->gpio_dry_run) {
		return false;
	}
	for (size_t i = 0; i < a->n_outputs; i++) {
		const struct wla_config_output *x = &a->outputs[i], *y = &b->outputs[i];
		if (strcmp(x->name, y->name) != 0 || x->n_modes != y->n_modes ||
				memcmp(x->modes, y->modes, x->n_modes * sizeof(x->modes[0])) != 0 ||
				(x->panel.chip[0] != 0) != (y->panel.chip[0] != 0) ||
				(x->panel.chip[0] && !same_panel(&x->panel, &y->panel))) {
			return false;
		}
	}
	return true;
}

/* One error line for a refusal, none for success. */
static void check_result(const char *what, int ret, bool file)
{
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || (file && ret < 0), "%s returned %d", what, ret);
	FUZZ_CHECK(fuzz_log_errors == (ret < 0 ? 1 : 0), "%s returned %d after %d error lines",
		what, ret, fuzz_log_errors);
}

static uint64_t vdc_clock(void *data)
{
	return *(const uint64_t *)data;
}

/* Every mode of an accepted config, handed to the VDC: a connector mode of
 * that size and rate, a custom mode too, and a latch when it is set. */
static void check_vdc(const struct wla_config *cfg)
{
	if (cfg->driver != WLA_DRIVER_VDC) {
		return; /* KMS outputs are the card's: nothing here to make */
	}
	uint64_t now = UINT64_C(1000000000);
	fuzz_log_clear();
	struct wla_vdc *vdc = wla_vdc_create(NULL, cfg, vdc_clock, &now);
	FUZZ_CHECK(vdc && fuzz_log_errors == 0, "an accepted config of %zu outputs, %u overlay "
		"planes makes no VDC (%d error lines; FUZZ_VERBOSE=1 shows them)", cfg->n_outputs,
		cfg->overlay_planes, fuzz_log_errors);
	uint64_t seq = 1;
	for (size_t i = 0; i < cfg->n_outputs; i++) {
		const struct wla_config_output *o = &cfg->outputs[i];
		struct wla_vdc_output *out = vdc->outputs[i];
		struct wla_connector *conn = &out->connector;
		FUZZ_CHECK(strcmp(conn->name, o->name) == 0 && conn->n_modes == o->n_modes,
			"output %s: connector %s with %zu modes", o->name, conn->name, conn->n_modes);
		for (size_t m = 0; m < o->n_modes; m++) {
			const struct wla_config_mode *cm = &o->modes[m];
			const struct wla_mode *mode = &conn->modes[m];
			const char *why = NULL;
			FUZZ_CHECK(mode->width == cm->width && mode->height == cm->height &&
				mode->refresh_mhz == cm->refresh_mhz && wla_mode_valid(mode, &why),
				"output %s: mode %dx%d@%dmHz became %dx%d@%dmHz (%s)", o->name,
				cm->width, cm->height, cm->refresh_mhz, mode->width, mode->height,
				mode->refresh_mhz, why ? why : "valid");
			struct wla_mode custom;
			fuzz_log_clear();
			FUZZ_CHECK(wla_device_custom_mode(&vdc->dev, cm->width, cm->height,
				cm->refresh_mhz, &custom) && wla_mode_equal(&custom, mode) &&
				fuzz_log_errors == 0, "output %s: mode %dx%d@%dmHz refused as a "
				"custom mode, or another timing", o->name, cm->width, cm->height,
				cm->refresh_mhz);
			fuzz_log_clear();
			int ret = wla_atomic_set_config(&out->crtc, conn, mode, NULL, seq++);
			FUZZ_CHECK(ret == 0 && fuzz_log_errors == 0, "output %s: mode %dx%d@%dmHz "
				"refused by the VDC (%d)", o->name, cm->width, cm->height,
				cm->refresh_mhz, ret);
			/* Two periods and the slack: the vblank after the commit. */
			now += 2 * wla_mode_period_ns(mode) + vdc->dev.latch_slack_ns + 1;
			wla_vdc_advance(vdc, now);
			FUZZ_CHECK(out->crtc.queued == 0 && out->running &&
				wla_mode_equal(&out->scanout.mode, mode), "output %s: mode "
				"%dx%d@%dmHz set but not latched", o->name, cm->width, cm->height,
				cm->refresh_mhz);
		}
		wla_crtc_force_off(&out->crtc);
	}
	/* Each output's modes plugged in at run time too (the control
	 * socket's plug), where one more output fits. */
	bool room = cfg->n_outputs < WLA_MAX_CRTCS &&
		(cfg->n_outputs + 1) * (2 + (size_t)cfg->overlay_planes) <= WLA_MAX_PLANES;
	for (size_t i = 0; room && i < cfg->n_outputs; i++) {
		const struct wla_config_output *o = &cfg->outputs[i];
		fuzz_log_clear();
		struct wla_vdc_output *out = wla_vdc_plug(vdc, "fuzz-plugged", o->modes, o->n_modes);
		FUZZ_CHECK(out && fuzz_log_errors == 0 && out->connector.n_modes == o->n_modes,
			"output %s: its %zu modes refused by a plug (%d error lines)", o->name,
			o->n_modes, fuzz_log_errors);
		wla_vdc_unplug(out);
	}
	wla_vdc_destroy(vdc);
}

/* Accepted: within the limits, and its canonical text parses to the same. */
static void check_accepted(const struct wla_config *cfg)
{
	check_config(cfg);
	check_vdc(cfg);
	static struct text t;
	write_config(&t, cfg);
	struct wla_config again;
	wla_config_init(&again);
	fuzz_log_clear();
	int ret = wla_config_parse_text(&again, "canonical", t.buf);
	FUZZ_CHECK(ret == 0 && same_config(cfg, &again), "the canonical text of an accepted "
		"config %s:\n%s", ret == 0 ? "parses to another config" : "is refused", t.buf);
}

static void fuzz_text(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	FUZZ_CHECK(text, "out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	bool has_nul = strlen(text) != size;

	struct wla_config by_text, by_file;
	wla_config_init(&by_text);
	wla_config_init(&by_file);
	fuzz_log_clear();
	int ret = wla_config_parse_text(&by_text, "fuzz.conf", text);
	FUZZ_TRACE("parse_text: %d\n", ret);
	check_result("wla_config_parse_text", ret, false);
	fuzz_log_clear();
	int file_ret = wla_config_load_file(&by_file, fuzz_file(data, size));
	check_result("wla_config_load_file", file_ret, true);
	free(text);

	if (has_nul) {
		FUZZ_CHECK(file_ret == -EINVAL, "a file with a NUL byte was loaded (%d)", file_ret);
	} else {
		FUZZ_CHECK(ret == file_ret, "text %d but file %d", ret, file_ret);
		FUZZ_CHECK(ret != 0 || same_config(&by_text, &by_file),
			"the text and the file loader disagree");
	}
	if (ret == 0) {
		check_accepted(&by_text);
	}
}

static void fuzz_file_load(const uint8_t *data, size_t size)
{
	struct wla_config cfg;
	wla_config_init(&cfg);
	fuzz_log_clear();
	int ret = wla_config_load_file(&cfg, fuzz_file(data, size));
	FUZZ_TRACE("load_file: %d\n", ret);
	check_result("wla_config_load_file", ret, true);
	if (memchr(data, '\0', size)) {
		FUZZ_CHECK(ret == -EINVAL, "a file with a NUL byte was loaded (%d)", ret);
	}
	if (ret == 0) {
		check_accepted(&cfg);
	}
}

/* Splits rest into records (see the top); calls fn(key, value or NULL, ctx). */
static void for_each_record(const uint8_t *data, size_t size,
	void (*fn)(char *key, char *value, void *ctx), void *ctx)
{
	char sep = memchr(data, '\0', size) ? '\0' : '\n';
	char *copy = malloc(size + 1);
	FUZZ_CHECK(copy, "out of memory");
	memcpy(copy, data, size);
	copy[size] = '\0';
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i < size && copy[i] != sep) {
			continue;
		}
		copy[i] = '\0';
		char *rec = copy + start;
		start = i + 1;
		if (i == size && rec[0] == '\0') {
			break;
		}
		char *eq = strchr(rec, '=');
		if (eq) {
			*eq = '\0';
		}
		fn(rec, eq ? eq + 1 : NULL, ctx);
	}
	free(copy);
}

/* The documented rule for one numeric key: digits only, min..max. */
static bool oracle_uint(const char *value, uint32_t min, uint32_t max, uint32_t *out)
{
	if (!value[0]) {
		return false;
	}
	uint64_t v = 0;
	for (const char *c = value; *c; c++) {
		if (*c < '0' || *c > '9') {
			return false;
		}
		v = v * 10 + (uint64_t)(*c - '0');
		if (v > max) {
			v = (uint64_t)max + 1;
		}
	}
	*out = (uint32_t)v;
	return v >= min && v <= max;
}

/* Whether key=value is valid, and the config it makes from before. */
static bool oracle_set(const struct wla_config *before, const char *key, const char *value,
	struct wla_config *after)
{
	memcpy(after, before, sizeof(*after));
	if (!value) {
		return false;
	}
	if (strcmp(key, "gpio-dry-run") == 0) {
		after->gpio_dry_run = strcmp(value, "1") == 0;
		return strcmp(value, "0") == 0 || strcmp(value, "1") == 0;
	}
	if (strcmp(key, "flip-policy") == 0) {
		after->flip_mailbox = strcmp(value, "mailbox") == 0;
		return strcmp(value, "queue") == 0 || strcmp(value, "mailbox") == 0;
	}
	if (strcmp(key, "overlay-planes") == 0) {
		return oracle_uint(value, 0, WLA_MAX_OVERLAY_PLANES, &after->overlay_planes);
	}
	if (strcmp(key, "cursor-size") == 0) {
		return oracle_uint(value, 16, 512, &after->cursor_size);
	}
	if (strcmp(key, "flip-depth") == 0) {
		return oracle_uint(value, 1, WLA_MAX_FLIP_DEPTH, &after->flip_depth);
	}
	if (strcmp(key, "latch-slack-us") == 0) {
		return oracle_uint(value, 0, WLA_MAX_LATCH_SLACK_US, &after->latch_slack_us);
	}
	if (strcmp(key, "control") == 0) {
		if ((strcmp(value, "off") != 0 && value[0] != '/') ||
				strlen(value) >= WLA_CONTROL_PATH_MAX) {
			return false;
		}
		snprintf(after->control, sizeof(after->control), "%s", value);
		return true;
	}
	if (strcmp(key, "driver") == 0) {
		after->driver = strcmp(value, "kms") == 0 ? WLA_DRIVER_KMS : WLA_DRIVER_VDC;
		return strcmp(value, "vdc") == 0 || strcmp(value, "kms") == 0;
	}
	if (strcmp(key, "drm-device") == 0) {
		if ((value[0] && value[0] != '/') || strlen(value) >= WLA_DRM_DEVICE_MAX) {
			return false;
		}
		snprintf(after->drm_device, sizeof(after->drm_device), "%s", value);
		return true;
	}
	if (strcmp(key, "virtual-input") == 0) {
		static const char *const names[] = { "auto", "on", "off" };
		for (int i = 0; i < 3; i++) {
			if (strcmp(value, names[i]) == 0) {
				after->virtual_input = (enum wla_config_virtual_input)i;
				return true;
			}
		}
		return false;
	}
	if (strcmp(key, "keyboard-layout") == 0) {
		size_t len = strlen(value);
		if (len < 1 || len >= WLA_KEYBOARD_LAYOUT_MAX || value[0] == ',' ||
				value[len - 1] == ',' || strstr(value, ",,")) {
			return false;
		}
		for (const char *c = value; *c; c++) {
			if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' ||
					*c == '-' || *c == ',')) {
				return false;
			}
		}
		snprintf(after->keyboard_layout, sizeof(after->keyboard_layout), "%s", value);
		return true;
	}
	if (strcmp(key, "virtual-touch") == 0 || strcmp(key, "touch-output") == 0) {
		if (value[0] && !valid_name(value, WLA_OUTPUT_NAME_MAX)) {
			return false;
		}
		snprintf(key[0] == 'v' ? after->virtual_touch : after->touch_output,
			WLA_OUTPUT_NAME_MAX, "%s", value);
		return true;
	}
	if (strcmp(key, "input-device") == 0) {
		if (strlen(value) >= WLA_INPUT_DEVICE_MAX || before->n_input_devices ==
				WLA_MAX_INPUT_DEVICES || (value[0] != '/' &&
				(strncmp(value, "name:", 5) != 0 || !value[5]))) {
			return false;
		}
		snprintf(after->input_devices[after->n_input_devices++], WLA_INPUT_DEVICE_MAX, "%s",
			value);
		return true;
	}
	return false;
}

static void set_record(char *key, char *value, void *ctx)
{
	struct wla_config *cfg = ctx, before, want;
	memcpy(&before, cfg, sizeof(before));
	bool valid = oracle_set(&before, key, value, &want);
	fuzz_log_clear();
	int ret = wla_config_set(cfg, "fuzz", key, value);
	FUZZ_TRACE("set '%s' '%s': %d\n", key, value ? value : "(null)", ret);
	check_result("wla_config_set", ret, false);
	FUZZ_CHECK((ret == 0) == valid, "wla_config_set('%s', '%s') returned %d", key,
		value ? value : "(null)", ret);
	FUZZ_CHECK(memcmp(cfg, valid ? &want : &before, sizeof(*cfg)) == 0,
		"wla_config_set('%s', '%s') left the config in another state than documented",
		key, value ? value : "(null)");
}

static void fuzz_set(const uint8_t *data, size_t size)
{
	struct wla_config cfg;
	wla_config_init(&cfg);
	for_each_record(data, size, set_record, &cfg);
	check_config(&cfg);
}

struct env_input {
	bool set[N_ENV_VARS];
	char *values[N_ENV_VARS];
};

static void env_record(char *key, char *value, void *ctx)
{
	struct env_input *env = ctx;
	size_t var = N_ENV_VARS;
	for (size_t i = 0; i < N_ENV_VARS; i++) {
		if (strcmp(key, env_vars[i]) == 0) {
			var = i;
		}
	}
	if (var == N_ENV_VARS && key[0] && !key[1]) {
		unsigned char c = (unsigned char)key[0];
		var = c >= '0' && c < '0' + N_ENV_VARS ? (size_t)(c - '0') : c % N_ENV_VARS;
	}
	if (var == N_ENV_VARS || !value) {
		return;
	}
	free(env->values[var]);
	env->values[var] = strdup(value);
	FUZZ_CHECK(env->values[var], "out of memory");
	env->set[var] = true;
}

/* The environment as it was before the first input. */
static char *saved_env[N_ENV_VARS];

static void restore_env(void)
{
	for (size_t i = 0; i < N_ENV_VARS; i++) {
		if (saved_env[i]) {
			setenv(env_vars[i], saved_env[i], 1);
		} else {
			unsetenv(env_vars[i]);
		}
	}
}

static void fuzz_env(const uint8_t *data, size_t size)
{
	static bool saved;
	if (!saved) {
		saved = true;
		for (size_t i = 0; i < N_ENV_VARS; i++) {
			const char *v = getenv(env_vars[i]);
			saved_env[i] = v ? strdup(v) : NULL;
		}
	}
	struct env_input env = { 0 };
	for_each_record(data, size, env_record, &env);
	for (size_t i = 0; i < N_ENV_VARS; i++) {
		unsetenv(env_vars[i]);
		if (!env.set[i]) {
			continue;
		}
		const char *value = env.values[i];
		/* WLA_CONFIG names a file with the given text; empty stays empty. */
		if (i == 0 && value[0]) {
			value = fuzz_file(value, strlen(value));
		}
		setenv(env_vars[i], value, 1);
		FUZZ_TRACE("%s=%s\n", env_vars[i], env.values[i]);
	}

	struct wla_config cfg;
	wla_config_init(&cfg);
	fuzz_log_clear();
	int ret = wla_config_load_env(&cfg);
	FUZZ_TRACE("load_env: %d\n", ret);
	check_result("wla_config_load_env", ret, false);
	if (ret == 0) {
		check_accepted(&cfg);
		/* Each plain variable that was set is what the config now says. */
		struct wla_config want, from;
		memcpy(&want, &cfg, sizeof(want));
		for (size_t i = 2; i < N_ENV_VARS; i++) {
			memcpy(&from, &want, sizeof(from));
			if (env.set[i]) {
				static const char *const keys[] = { NULL, NULL, "overlay-planes",
					"cursor-size", "flip-depth", "flip-policy", "gpio-dry-run",
					"latch-slack-us" };
				FUZZ_CHECK(oracle_set(&from, keys[i], env.values[i], &want),
					"%s='%s' was accepted", env_vars[i], env.values[i]);
			}
		}
		FUZZ_CHECK(memcmp(&want, &cfg, sizeof(cfg)) == 0,
			"a WLA_ variable was not applied as given");
		uint32_t count;
		if (env.set[1] && oracle_uint(env.values[1], 1, WLA_MAX_OUTPUTS, &count)) {
			FUZZ_CHECK(cfg.n_outputs == count, "WLA_OUTPUTS=%s gave %zu outputs",
				env.values[1], cfg.n_outputs);
		}
	}
	for (size_t i = 0; i < N_ENV_VARS; i++) {
		free(env.values[i]);
	}
	restore_env();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_init();
	if (size == 0 || size > TEXT_MAX / 8) {
		return 0;
	}
	static const char ops[] = "tfes";
	const char *op = memchr(ops, data[0], 4);
	switch (op ? op - ops : data[0] % 4) {
	case 0:
		fuzz_text(data + 1, size - 1);
		break;
	case 1:
		fuzz_file_load(data + 1, size - 1);
		break;
	case 2:
		fuzz_env(data + 1, size - 1);
		break;
	default:
		fuzz_set(data + 1, size - 1);
		break;
	}
	return 0;
}
