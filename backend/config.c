/*
 * Strict configuration parser: defaults, config file text and WLA_* variables.
 *
 * Config file syntax (one statement per line):
 *
 *     # a comment: the first non-blank character of the line is '#'
 *     overlay-planes = 2          top-level keys: overlay-planes (0..8),
 *     cursor-size = 64            cursor-size (16..512)
 *     flip-depth = 2              frames queued per CRTC (1..4)
 *     flip-policy = queue         queue (refuse when full) or mailbox
 *     gpio-dry-run = 0            1: panels log their GPIO sets, no chip used
 *
 *     [output]                    starts an output section
 *     name = HDMI-A-1             optional, 1..31 of A-Z a-z 0-9 _ -
 *     mode = 1920x1080@60         repeatable (up to 16), the first is preferred
 *     mode = 1280x720@59.94       HZ: 1..1000, up to 3 decimals, default 60
 *     panel-chip = panel-gpio     a panel's GPIO power sequencing: the
 *     panel-line = enable 3       panel-* keys are described at the top of
 *     panel-preset = simple       backend/panel/config.c
 *
 * Blank lines are ignored; blanks around the key, the '=' and the value are
 * trimmed. Top-level keys must come before the first [output]: every line
 * after a section header belongs to that section. The first [output] in a
 * text replaces the outputs configured so far, later ones append (up to 8).
 * Each section needs at least one mode. Outputs without a name are called
 * Virtual-N, N being their 1-based position; names must be unique. Anything
 * else (an unknown key or section, a line without '=', a bad value) is an
 * error reported as "file:line".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wlr/util/log.h>
#include "backend/atomic.h"
#include "backend/lex.h"
#include "backend/panel.h"
#include "util.h"
#include "wlatomic/config.h"

#define CONFIG_FILE_MAX (1024 * 1024)
#define CONFIG_LINE_MAX 1024
#define CONFIG_ORIGIN_MAX 4200

#define DEFAULT_WIDTH 1920
#define DEFAULT_HEIGHT 1080
#define DEFAULT_REFRESH_MHZ 60000

static const char mode_syntax[] = "expected WIDTHxHEIGHT[@HZ]";

struct config_key {
	const char *name;
	const char *field; /* in struct wla_config */
	size_t offset;
	uint32_t min, max;
};

static const struct config_key config_keys[] = {
	{ "overlay-planes", "overlay_planes", offsetof(struct wla_config, overlay_planes),
		0, WLA_MAX_OVERLAY_PLANES },
	{ "cursor-size", "cursor_size", offsetof(struct wla_config, cursor_size), 16, 512 },
	{ "flip-depth", "flip_depth", offsetof(struct wla_config, flip_depth),
		1, WLA_MAX_FLIP_DEPTH },
	{ "latch-slack-us", "latch_slack_us", offsetof(struct wla_config, latch_slack_us),
		0, WLA_MAX_LATCH_SLACK_US },
};

/* Where wla_config_validate() names a field: "wla_config.cursor_size". */
#define VALIDATE_ORIGIN "wla_config"

static void set_default_mode(struct wla_config_output *output)
{
	output->modes[0] = (struct wla_config_mode){
		.width = DEFAULT_WIDTH,
		.height = DEFAULT_HEIGHT,
		.refresh_mhz = DEFAULT_REFRESH_MHZ,
	};
	output->n_modes = 1;
}

static void set_virtual_name(struct wla_config_output *output, size_t index)
{
	snprintf(output->name, sizeof(output->name), "Virtual-%zu", index + 1);
}

WLA_EXPORT void wla_config_init(struct wla_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->n_outputs = 1;
	set_virtual_name(&cfg->outputs[0], 0);
	set_default_mode(&cfg->outputs[0]);
	cfg->overlay_planes = 2;
	cfg->cursor_size = 64;
	cfg->flip_depth = 1;
	cfg->flip_mailbox = false;
	cfg->latch_slack_us = WLA_DEFAULT_LATCH_SLACK_US;
	snprintf(cfg->keyboard_layout, sizeof(cfg->keyboard_layout), "us");
}

WLA_EXPORT int wla_config_parse_mode(const char *origin, const char *str,
	struct wla_config_mode *mode)
{
	const char *p = str;
	int64_t width, height, refresh_mhz = DEFAULT_REFRESH_MHZ;

	if (!wla_lex_number(&p, WLA_MODE_MAX_SIZE, &width) || *p++ != 'x' ||
			!wla_lex_number(&p, WLA_MODE_MAX_SIZE, &height) || (*p != '\0' && *p != '@')) {
		goto bad_syntax;
	}
	if (*p == '@') {
		p++;
		bool negative = *p == '-';
		int64_t hz;
		if (!wla_lex_number(&p, WLA_MODE_MAX_REFRESH_MHZ / 1000, &hz)) {
			goto bad_syntax;
		}
		int64_t frac = 0, scale = 1000;
		if (*p == '.') {
			const char *digits = ++p;
			for (; wla_lex_digit(*p) && scale > 1; p++) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
			if (p == digits) {
				goto bad_syntax;
			}
			if (wla_lex_digit(*p)) {
				wlr_log(WLR_ERROR, "config: %s: mode '%s': refresh has more than 3 "
					"decimals", origin, str);
				return -EINVAL;
			}
		}
		if (*p != '\0') {
			goto bad_syntax;
		}
		/* Keep the sign apart: "-0.5" has an integer part of zero. */
		refresh_mhz = (negative ? -hz : hz) * 1000 + frac;
		if (negative) {
			refresh_mhz = -refresh_mhz;
		}
	}

	if (width < 1 || width > WLA_MODE_MAX_SIZE) {
		wlr_log(WLR_ERROR, "config: %s: mode '%s': width must be 1..%d", origin, str,
			WLA_MODE_MAX_SIZE);
		return -EINVAL;
	}
	if (height < 1 || height > WLA_MODE_MAX_SIZE) {
		wlr_log(WLR_ERROR, "config: %s: mode '%s': height must be 1..%d", origin, str,
			WLA_MODE_MAX_SIZE);
		return -EINVAL;
	}
	if (refresh_mhz < WLA_CONFIG_MIN_REFRESH_MHZ || refresh_mhz > WLA_MODE_MAX_REFRESH_MHZ) {
		wlr_log(WLR_ERROR, "config: %s: mode '%s': refresh must be %d..%d Hz", origin, str,
			WLA_CONFIG_MIN_REFRESH_MHZ / 1000, WLA_MODE_MAX_REFRESH_MHZ / 1000);
		return -EINVAL;
	}
	mode->width = (int32_t)width;
	mode->height = (int32_t)height;
	mode->refresh_mhz = (int32_t)refresh_mhz;
	return 0;

bad_syntax:
	wlr_log(WLR_ERROR, "config: %s: bad mode '%s' (%s)", origin, str, mode_syntax);
	return -EINVAL;
}

/*
 * The checks on single values. Each is one function that the parsers call on
 * what they read and wla_config_validate() on a config filled in code, its
 * numbers printed back to text, so both refuse the same values with the same
 * message.
 */

static int parse_key_number(const struct config_key *k, const char *origin, const char *value,
	uint32_t *out)
{
	if (!wla_lex_uint(value, strlen(value), k->max, out) || *out < k->min) {
		wlr_log(WLR_ERROR, "config: %s: %s '%s': expected an integer %u..%u", origin,
			k->name, value, k->min, k->max);
		return -EINVAL;
	}
	return 0;
}

static int parse_output_count(const char *origin, const char *value, uint32_t *count)
{
	if (!wla_lex_uint(value, strlen(value), WLA_MAX_OUTPUTS, count) || *count < 1) {
		wlr_log(WLR_ERROR, "config: %s: output count '%s' must be 1..%d", origin, value,
			WLA_MAX_OUTPUTS);
		return -EINVAL;
	}
	return 0;
}

static bool vrr_range_valid(int32_t min_mhz, int32_t max_mhz)
{
	return min_mhz >= 1000 && min_mhz < max_mhz && max_mhz <= 1000000;
}

/* A LUT of one entry has no ramp. */
static bool gamma_size_valid(uint32_t size)
{
	return size != 1 && size <= WLA_CONFIG_GAMMA_SIZE_MAX;
}

/* name need not be terminated: len is its length. */
static int check_output_name(const char *origin, const char *name, size_t len)
{
	bool valid = len >= 1 && len < WLA_OUTPUT_NAME_MAX;
	for (size_t i = 0; valid && i < len; i++) {
		valid = wla_lex_name_char(name[i]);
	}
	if (!valid) {
		wlr_log(WLR_ERROR, "config: %s: bad output name '%.*s' (expected 1..%d of "
			"A-Z a-z 0-9 _ -)", origin, (int)len, name, WLA_OUTPUT_NAME_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

/* An [output]'s monitor names (keys make, model, serial). */
#define N_MONITOR_FIELDS 3
struct monitor_field {
	const char *key;
	char *field;
	size_t size;
};

static void monitor_fields(struct wla_config_output *output, struct monitor_field *fields)
{
	fields[0] = (struct monitor_field){ "make", output->make, sizeof(output->make) };
	fields[1] = (struct monitor_field){ "model", output->model, sizeof(output->model) };
	fields[2] = (struct monitor_field){ "serial", output->serial, sizeof(output->serial) };
}

/* 1..size-1 printable ASCII characters (len of them, not NUL-terminated
 * when it fills the field). */
static int check_monitor_field(const char *origin, const char *key, const char *value,
	size_t len, size_t size)
{
	bool ok = len >= 1 && len < size;
	for (size_t c = 0; ok && c < len; c++) {
		ok = value[c] >= 0x20 && value[c] < 0x7f;
	}
	if (!ok) {
		wlr_log(WLR_ERROR, "config: %s: %s '%.*s': expected 1..%zu printable ASCII "
			"characters (wlr_output's %s)", origin, key, (int)len, value, size - 1, key);
		return -EINVAL;
	}
	return 0;
}

static int check_physical_size(const char *origin, const char *key, uint32_t w, uint32_t h)
{
	if (w < 1 || h < 1 || w > 10000 || h > 10000) {
		wlr_log(WLR_ERROR, "config: %s: %s '%" PRIu32 "x%" PRIu32 "': expected "
			"WIDTHxHEIGHT in mm, 1..10000 each", origin, key, w, h);
		return -EINVAL;
	}
	return 0;
}

/* label is the name the output has or will get. */
static int check_has_mode(const char *origin, const char *label, size_t n_modes)
{
	if (n_modes == 0) {
		wlr_log(WLR_ERROR, "config: %s: [output] section '%s' has no mode", origin, label);
		return -EINVAL;
	}
	return 0;
}

/* The first output before outputs[i] with the same name, -1 if none. */
static int find_duplicate_name(const struct wla_config *cfg, size_t i)
{
	for (size_t j = 0; j < i; j++) {
		if (strncmp(cfg->outputs[i].name, cfg->outputs[j].name, WLA_OUTPUT_NAME_MAX) == 0) {
			return (int)j;
		}
	}
	return -1;
}

/* "off", or an absolute path that fits a sockaddr_un. */
static int check_control(const char *origin, const char *value)
{
	size_t len = strnlen(value, WLA_CONTROL_PATH_MAX);
	if (len == WLA_CONTROL_PATH_MAX) {
		wlr_log(WLR_ERROR, "config: %s: control '%.*s...': longer than %d bytes", origin,
			40, value, WLA_CONTROL_PATH_MAX - 1);
		return -EINVAL;
	}
	if (strcmp(value, "off") != 0 && value[0] != '/') {
		wlr_log(WLR_ERROR, "config: %s: control '%s': expected off or an absolute "
			"path", origin, value);
		return -EINVAL;
	}
	return 0;
}

/* "" (the first atomic card) or an absolute path that fits. */
static int check_drm_device(const char *origin, const char *value)
{
	size_t len = strnlen(value, WLA_DRM_DEVICE_MAX);
	if (len == WLA_DRM_DEVICE_MAX) {
		wlr_log(WLR_ERROR, "config: %s: drm-device '%.*s...': longer than %d bytes",
			origin, 40, value, WLA_DRM_DEVICE_MAX - 1);
		return -EINVAL;
	}
	if (len > 0 && value[0] != '/') {
		wlr_log(WLR_ERROR, "config: %s: drm-device '%s': expected an absolute path "
			"(/dev/dri/card0) or nothing for the first atomic card", origin, value);
		return -EINVAL;
	}
	return 0;
}

/* An XKB layout list: "us", "de", "us,ru" (names of a-z 0-9 _ -). */
static int check_keyboard_layout(const char *origin, const char *value)
{
	size_t len = strnlen(value, WLA_KEYBOARD_LAYOUT_MAX);
	bool valid = len >= 1 && len < WLA_KEYBOARD_LAYOUT_MAX && value[0] != ',' &&
		value[len - 1] != ',';
	for (size_t i = 0; valid && i < len; i++) {
		valid = (value[i] >= 'a' && value[i] <= 'z') || wla_lex_digit(value[i]) ||
			value[i] == '_' || value[i] == '-' || (value[i] == ',' && value[i + 1] != ',');
	}
	if (!valid) {
		wlr_log(WLR_ERROR, "config: %s: keyboard-layout '%.*s': expected XKB layout "
			"names (us, de, us,ru) of a-z 0-9 _ -, at most %d bytes", origin, 64, value,
			WLA_KEYBOARD_LAYOUT_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

/* An output name, or "" where allowed. */
static int check_input_output(const char *origin, const char *key, const char *value)
{
	size_t len = strnlen(value, WLA_OUTPUT_NAME_MAX);
	if (len == 0) {
		return 0;
	}
	char where[CONFIG_ORIGIN_MAX + 32];
	snprintf(where, sizeof(where), "%s: %s", origin, key);
	return check_output_name(where, value, len);
}

/* "/dev/input/eventN"-like absolute path, or "name:PATTERN". */
static int check_input_device(const char *origin, const char *value)
{
	size_t len = strnlen(value, WLA_INPUT_DEVICE_MAX);
	if (len == WLA_INPUT_DEVICE_MAX) {
		wlr_log(WLR_ERROR, "config: %s: input-device '%.*s...': longer than %d bytes",
			origin, 40, value, WLA_INPUT_DEVICE_MAX - 1);
		return -EINVAL;
	}
	if (value[0] != '/' && (strncmp(value, "name:", 5) != 0 || !value[5])) {
		wlr_log(WLR_ERROR, "config: %s: input-device '%s': expected an event device's "
			"absolute path (/dev/input/event3) or name:PATTERN", origin, value);
		return -EINVAL;
	}
	return 0;
}

static int add_input_device(struct wla_config *cfg, const char *origin, const char *value)
{
	int ret = check_input_device(origin, value);
	if (ret < 0) {
		return ret;
	}
	if (cfg->n_input_devices == WLA_MAX_INPUT_DEVICES) {
		wlr_log(WLR_ERROR, "config: %s: input-device '%s': more than %d input devices",
			origin, value, WLA_MAX_INPUT_DEVICES);
		return -EINVAL;
	}
	/* Shorter than WLA_INPUT_DEVICE_MAX: checked above. */
	memcpy(cfg->input_devices[cfg->n_input_devices++], value, strlen(value) + 1);
	return 0;
}

static int set_input_key(struct wla_config *cfg, const char *origin, const char *key,
	const char *value)
{
	if (strcmp(key, "virtual-input") == 0) {
		static const char *const names[] = { "auto", "on", "off" };
		for (size_t i = 0; i < WLA_ARRAY_SIZE(names); i++) {
			if (strcmp(value, names[i]) == 0) {
				cfg->virtual_input = (enum wla_config_virtual_input)i;
				return 0;
			}
		}
		wlr_log(WLR_ERROR, "config: %s: virtual-input '%s': expected auto, on or off",
			origin, value);
		return -EINVAL;
	}
	if (strcmp(key, "keyboard-layout") == 0) {
		int ret = check_keyboard_layout(origin, value);
		if (ret == 0) {
			snprintf(cfg->keyboard_layout, sizeof(cfg->keyboard_layout), "%s", value);
		}
		return ret;
	}
	if (strcmp(key, "virtual-touch") == 0 || strcmp(key, "touch-output") == 0) {
		int ret = check_input_output(origin, key, value);
		if (ret == 0) {
			char *field = key[0] == 'v' ? cfg->virtual_touch : cfg->touch_output;
			snprintf(field, WLA_OUTPUT_NAME_MAX, "%s", value);
		}
		return ret;
	}
	if (strcmp(key, "input-device") == 0) {
		return add_input_device(cfg, origin, value);
	}
	return 1;
}

static int parse_control(struct wla_config *cfg, const char *origin, const char *value)
{
	int ret = check_control(origin, value);
	if (ret == 0) {
		snprintf(cfg->control, sizeof(cfg->control), "%s", value);
	}
	return ret;
}

WLA_EXPORT int wla_config_set(struct wla_config *cfg, const char *origin, const char *key,
	const char *value)
{
	if (!key || !value) {
		wlr_log(WLR_ERROR, "config: %s: key '%s' without a value", origin,
			key ? key : "(null)");
		return -EINVAL;
	}
	if (strcmp(key, "gpio-dry-run") == 0) {
		if (strcmp(value, "0") == 0 || strcmp(value, "1") == 0) {
			cfg->gpio_dry_run = value[0] == '1';
			return 0;
		}
		wlr_log(WLR_ERROR, "config: %s: gpio-dry-run '%s': expected 0 or 1", origin,
			value);
		return -EINVAL;
	}
	if (strcmp(key, "control") == 0) {
		return parse_control(cfg, origin, value);
	}
	if (strcmp(key, "driver") == 0) {
		if (strcmp(value, "vdc") == 0 || strcmp(value, "kms") == 0) {
			cfg->driver = value[0] == 'k' ? WLA_DRIVER_KMS : WLA_DRIVER_VDC;
			return 0;
		}
		wlr_log(WLR_ERROR, "config: %s: driver '%s': expected vdc or kms", origin, value);
		return -EINVAL;
	}
	if (strcmp(key, "drm-device") == 0) {
		int ret = check_drm_device(origin, value);
		if (ret == 0) {
			snprintf(cfg->drm_device, sizeof(cfg->drm_device), "%s", value);
		}
		return ret;
	}
	int iret = set_input_key(cfg, origin, key, value);
	if (iret <= 0) {
		return iret;
	}
	if (strcmp(key, "flip-policy") == 0) {
		if (strcmp(value, "queue") == 0 || strcmp(value, "mailbox") == 0) {
			cfg->flip_mailbox = value[0] == 'm';
			return 0;
		}
		wlr_log(WLR_ERROR, "config: %s: flip-policy '%s': expected queue or mailbox",
			origin, value);
		return -EINVAL;
	}
	for (size_t i = 0; i < WLA_ARRAY_SIZE(config_keys); i++) {
		const struct config_key *k = &config_keys[i];
		if (strcmp(key, k->name) != 0) {
			continue;
		}
		uint32_t v;
		int ret = parse_key_number(k, origin, value, &v);
		if (ret < 0) {
			return ret;
		}
		*(uint32_t *)((char *)cfg + k->offset) = v;
		return 0;
	}
	wlr_log(WLR_ERROR, "config: %s: unknown key '%s' (value '%s')", origin, key, value);
	return -EINVAL;
}

struct text_parser {
	struct wla_config *cfg;
	const char *name;
	/* Set once the first [output] of this text replaced the old outputs. */
	bool replaced;
	/* The section being read, NULL at top level. */
	struct wla_config_output *output;
	/* Line of each output's [output] header, valid once replaced is set. */
	size_t lines[WLA_MAX_OUTPUTS];
	/* The panel-* keys of the section being read. */
	struct wla_panel_parser panel;
};

/* The name an output has or will get, for messages. */
static const char *output_label(struct text_parser *tp, struct wla_config_output *output,
	char *buf, size_t size)
{
	if (output->name[0]) {
		return output->name;
	}
	snprintf(buf, size, "Virtual-%zu", (size_t)(output - tp->cfg->outputs) + 1);
	return buf;
}

static int end_section(struct text_parser *tp)
{
	struct wla_config_output *output = tp->output;
	tp->output = NULL;
	if (!output) {
		return 0;
	}
	char label[WLA_OUTPUT_NAME_MAX], origin[CONFIG_ORIGIN_MAX];
	size_t index = (size_t)(output - tp->cfg->outputs);
	snprintf(origin, sizeof(origin), "%s:%zu", tp->name, tp->lines[index]);
	int ret = check_has_mode(origin, output_label(tp, output, label, sizeof(label)),
		output->n_modes);
	if (ret < 0) {
		return ret;
	}
	return wla_panel_config_finish(&output->panel, &tp->panel, tp->name,
		output_label(tp, output, label, sizeof(label)));
}

static int begin_section(struct text_parser *tp, const char *origin, const char *section,
	size_t lineno)
{
	int ret = end_section(tp);
	if (ret < 0) {
		return ret;
	}
	if (strcmp(section, "output") != 0) {
		wlr_log(WLR_ERROR, "config: %s: unknown section '[%s]'", origin, section);
		return -EINVAL;
	}
	struct wla_config *cfg = tp->cfg;
	if (!tp->replaced) {
		tp->replaced = true;
		cfg->n_outputs = 0;
	}
	if (cfg->n_outputs == WLA_MAX_OUTPUTS) {
		wlr_log(WLR_ERROR, "config: %s: [output]: more than %d outputs", origin,
			WLA_MAX_OUTPUTS);
		return -EINVAL;
	}
	tp->lines[cfg->n_outputs] = lineno;
	tp->output = &cfg->outputs[cfg->n_outputs++];
	memset(tp->output, 0, sizeof(*tp->output));
	memset(&tp->panel, 0, sizeof(tp->panel));
	return 0;
}

static int set_output_key(struct text_parser *tp, const char *origin, size_t lineno,
	const char *key, const char *value)
{
	struct wla_config_output *output = tp->output;
	if (strncmp(key, "panel-", strlen("panel-")) == 0) {
		return wla_panel_config_set(&output->panel, &tp->panel, origin, lineno, key, value);
	}
	if (strcmp(key, "name") == 0) {
		size_t len = strlen(value);
		int ret = check_output_name(origin, value, len);
		if (ret < 0) {
			return ret;
		}
		if (output->name[0]) {
			wlr_log(WLR_ERROR, "config: %s: name '%s': output already named '%s'",
				origin, value, output->name);
			return -EINVAL;
		}
		memcpy(output->name, value, len + 1);
		return 0;
	}
	struct monitor_field fields[N_MONITOR_FIELDS];
	monitor_fields(output, fields);
	for (size_t i = 0; i < N_MONITOR_FIELDS; i++) {
		if (strcmp(key, fields[i].key) != 0) {
			continue;
		}
		size_t len = strlen(value);
		int ret = check_monitor_field(origin, key, value, len, fields[i].size);
		if (ret == 0 && fields[i].field[0]) {
			wlr_log(WLR_ERROR, "config: %s: %s '%s': output already has %s '%s'",
				origin, key, value, key, fields[i].field);
			ret = -EINVAL;
		}
		if (ret == 0) {
			memcpy(fields[i].field, value, len + 1);
		}
		return ret;
	}
	if (strcmp(key, "non-desktop") == 0) {
		if (strcmp(value, "0") == 0 || strcmp(value, "1") == 0) {
			output->non_desktop = value[0] == '1';
			return 0;
		}
		wlr_log(WLR_ERROR, "config: %s: non-desktop '%s': expected 0 or 1", origin, value);
		return -EINVAL;
	}
	if (strcmp(key, "gamma-size") == 0) {
		uint32_t size;
		if (!wla_lex_uint(value, strlen(value), UINT32_MAX, &size) ||
				!gamma_size_valid(size)) {
			wlr_log(WLR_ERROR, "config: %s: gamma-size '%s': expected 0 (no gamma LUT) "
				"or 2..%d entries", origin, value, WLA_CONFIG_GAMMA_SIZE_MAX);
			return -EINVAL;
		}
		output->gamma_size = size;
		output->gamma_size_set = true;
		return 0;
	}
	if (strcmp(key, "orientation") == 0) {
		static const char *const names[] = { "normal", "upside-down", "left-up",
			"right-up" };
		for (uint32_t i = 0; i < WLA_ARRAY_SIZE(names); i++) {
			if (strcmp(value, names[i]) == 0) {
				output->orientation = i;
				return 0;
			}
		}
		wlr_log(WLR_ERROR, "config: %s: orientation '%s': expected normal, upside-down, "
			"left-up or right-up", origin, value);
		return -EINVAL;
	}
	if (strcmp(key, "vrr-range") == 0) {
		const char *dash = strchr(value, '-');
		uint32_t lo = 0, hi = 0;
		if (!dash || !wla_lex_uint(value, (size_t)(dash - value), 1000, &lo) ||
				!wla_lex_uint(dash + 1, strlen(dash + 1), 1000, &hi) ||
				!vrr_range_valid((int32_t)lo * 1000, (int32_t)hi * 1000)) {
			wlr_log(WLR_ERROR, "config: %s: vrr-range '%s': expected MIN-MAX in Hz, "
				"1 <= MIN < MAX <= 1000", origin, value);
			return -EINVAL;
		}
		output->vrr_min_mhz = (int32_t)lo * 1000;
		output->vrr_max_mhz = (int32_t)hi * 1000;
		return 0;
	}
	if (strcmp(key, "physical-size") == 0) {
		unsigned w = 0, h = 0;
		char extra;
		/* Digits, x, digits: nothing else (sscanf alone skips blanks). */
		size_t digits = strspn(value, "0123456789");
		bool shape = digits > 0 && value[digits] == 'x' &&
			strspn(value + digits + 1, "0123456789") == strlen(value + digits + 1) &&
			value[digits + 1] != '\0';
		if (!shape || sscanf(value, "%5ux%5u%c", &w, &h, &extra) != 2) {
			wlr_log(WLR_ERROR, "config: %s: physical-size '%s': expected WIDTHxHEIGHT "
				"in mm, 1..10000 each", origin, value);
			return -EINVAL;
		}
		int ret = check_physical_size(origin, "physical-size", w, h);
		if (ret == 0) {
			output->phys_width_mm = w;
			output->phys_height_mm = h;
		}
		return ret;
	}
	if (strcmp(key, "mode") == 0) {
		if (output->n_modes == WLA_MAX_MODES) {
			wlr_log(WLR_ERROR, "config: %s: mode '%s': more than %d modes in one "
				"output", origin, value, WLA_MAX_MODES);
			return -EINVAL;
		}
		int ret = wla_config_parse_mode(origin, value, &output->modes[output->n_modes]);
		if (ret < 0) {
			return ret;
		}
		output->n_modes++;
		return 0;
	}
	wlr_log(WLR_ERROR, "config: %s: unknown key '%s' in [output] (value '%s')", origin, key,
		value);
	return -EINVAL;
}

/* Strips blanks at both ends in place. */
static char *trim(char *s)
{
	while (wla_lex_blank(*s)) {
		s++;
	}
	size_t len = strlen(s);
	while (len > 0 && wla_lex_blank(s[len - 1])) {
		s[--len] = '\0';
	}
	return s;
}

static int parse_line(struct text_parser *tp, char *line, size_t lineno)
{
	char origin[CONFIG_ORIGIN_MAX];
	snprintf(origin, sizeof(origin), "%s:%zu", tp->name, lineno);

	line = trim(line);
	if (line[0] == '\0' || line[0] == '#') {
		return 0;
	}
	if (line[0] == '[') {
		size_t len = strlen(line);
		if (line[len - 1] != ']') {
			wlr_log(WLR_ERROR, "config: %s: bad section header '%s' "
				"(expected [output])", origin, line);
			return -EINVAL;
		}
		line[len - 1] = '\0';
		return begin_section(tp, origin, trim(line + 1), lineno);
	}

	char *eq = strchr(line, '=');
	if (!eq) {
		wlr_log(WLR_ERROR, "config: %s: expected 'key = value', got '%s'", origin, line);
		return -EINVAL;
	}
	*eq = '\0';
	char *key = trim(line), *value = trim(eq + 1);
	if (key[0] == '\0') {
		wlr_log(WLR_ERROR, "config: %s: missing key before '= %s'", origin, value);
		return -EINVAL;
	}
	if (tp->output) {
		return set_output_key(tp, origin, lineno, key, value);
	}
	return wla_config_set(tp->cfg, origin, key, value);
}

/*
 * The virtual display gives each output a primary, a cursor and
 * overlay-planes overlays, out of the core's WLA_MAX_PLANES: a config the
 * parsers accept must fit (the KMS driver's planes are the card's).
 */
static int check_vdc_planes(const char *origin, const struct wla_config *cfg)
{
	size_t per_output = 2 + (size_t)cfg->overlay_planes;
	size_t planes = cfg->n_outputs * per_output;
	if (cfg->driver != WLA_DRIVER_VDC || planes <= WLA_MAX_PLANES) {
		return 0;
	}
	size_t most = WLA_MAX_PLANES / cfg->n_outputs - 2;
	wlr_log(WLR_ERROR, "config: %s: %zu outputs with overlay-planes %" PRIu32 " need %zu "
		"planes, the virtual display has %d (overlay-planes at most %zu with %zu outputs)",
		origin, cfg->n_outputs, cfg->overlay_planes, planes, WLA_MAX_PLANES,
		most < WLA_MAX_OVERLAY_PLANES ? most : (size_t)WLA_MAX_OVERLAY_PLANES,
		cfg->n_outputs);
	return -EINVAL;
}

/* Names unnamed outputs and refuses duplicate names. */
static int finish_outputs(struct text_parser *tp)
{
	struct wla_config *cfg = tp->cfg;
	for (size_t i = 0; i < cfg->n_outputs; i++) {
		if (!cfg->outputs[i].name[0]) {
			set_virtual_name(&cfg->outputs[i], i);
		}
	}
	for (size_t i = 0; i < cfg->n_outputs; i++) {
		int j = find_duplicate_name(cfg, i);
		if (j < 0) {
			continue;
		}
		if (tp->replaced) {
			wlr_log(WLR_ERROR, "config: %s:%zu: duplicate output name '%s' (first at "
				"line %zu)", tp->name, tp->lines[i], cfg->outputs[i].name,
				tp->lines[j]);
		} else {
			wlr_log(WLR_ERROR, "config: %s: duplicate output name '%s'", tp->name,
				cfg->outputs[i].name);
		}
		return -EINVAL;
	}
	return 0;
}

/* With limits false the planes limit waits for the whole configuration
 * (the environment may still change the driver or the planes). */
static int parse_text(struct wla_config *cfg, const char *name, const char *text, bool limits)
{
	struct text_parser tp = { .cfg = cfg, .name = name };
	char line[CONFIG_LINE_MAX];
	size_t lineno = 0;

	const char *p = text;
	while (*p) {
		lineno++;
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len >= sizeof(line)) {
			wlr_log(WLR_ERROR, "config: %s:%zu: line longer than %zu characters", name,
				lineno, sizeof(line) - 1);
			return -EINVAL;
		}
		memcpy(line, p, len);
		line[len] = '\0';
		int ret = parse_line(&tp, line, lineno);
		if (ret < 0) {
			return ret;
		}
		p += end ? len + 1 : len;
	}

	int ret = end_section(&tp);
	if (ret == 0) {
		ret = finish_outputs(&tp);
	}
	return ret < 0 || !limits ? ret : check_vdc_planes(name, cfg);
}

WLA_EXPORT int wla_config_parse_text(struct wla_config *cfg, const char *name, const char *text)
{
	return parse_text(cfg, name, text, true);
}

static int load_file(struct wla_config *cfg, const char *path, bool limits)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		wlr_log(WLR_ERROR, "config: %s: cannot open: %s", path, strerror(err));
		return -err;
	}

	/* One byte more than allowed, to tell a full file from a too big one. */
	char *buf = malloc(CONFIG_FILE_MAX + 2);
	if (!buf) {
		close(fd);
		wlr_log(WLR_ERROR, "config: %s: cannot allocate a read buffer", path);
		return -ENOMEM;
	}
	size_t size = 0;
	while (size <= CONFIG_FILE_MAX) {
		ssize_t n = read(fd, buf + size, CONFIG_FILE_MAX + 1 - size);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			int err = errno;
			wlr_log(WLR_ERROR, "config: %s: cannot read: %s", path, strerror(err));
			close(fd);
			free(buf);
			return -err;
		}
		if (n == 0) {
			break;
		}
		size += (size_t)n;
	}
	close(fd);

	int ret = -EINVAL;
	buf[size] = '\0';
	if (size > CONFIG_FILE_MAX) {
		wlr_log(WLR_ERROR, "config: %s: file larger than %d bytes", path, CONFIG_FILE_MAX);
	} else if (strlen(buf) != size) {
		wlr_log(WLR_ERROR, "config: %s: file contains a NUL byte at offset %zu", path,
			strlen(buf));
	} else {
		ret = parse_text(cfg, path, buf, limits);
	}
	free(buf);
	return ret;
}

WLA_EXPORT int wla_config_load_file(struct wla_config *cfg, const char *path)
{
	return load_file(cfg, path, true);
}

/*
 * Returns 1 with *value set if the variable is set, 0 if it is unset and
 * -EINVAL if it is set but empty.
 */
static int get_env(const char *var, const char **value)
{
	*value = getenv(var);
	if (!*value) {
		return 0;
	}
	if ((*value)[0] == '\0') {
		wlr_log(WLR_ERROR, "config: %s: set but empty", var);
		return -EINVAL;
	}
	return 1;
}

/* Parses one ','-separated mode list of WLA_OUTPUTS into output. */
static int parse_env_modes(struct wla_config_output *output, char *list, const char *value)
{
	char *item = list;
	for (;;) {
		char *end = strchr(item, ',');
		if (end) {
			*end = '\0';
		}
		if (item[0] == '\0') {
			wlr_log(WLR_ERROR, "config: WLA_OUTPUTS: empty mode in '%s'", value);
			return -EINVAL;
		}
		if (output->n_modes == WLA_MAX_MODES) {
			wlr_log(WLR_ERROR, "config: WLA_OUTPUTS: more than %d modes in one output "
				"in '%s'", WLA_MAX_MODES, value);
			return -EINVAL;
		}
		int ret = wla_config_parse_mode("WLA_OUTPUTS", item,
			&output->modes[output->n_modes]);
		if (ret < 0) {
			return ret;
		}
		output->n_modes++;
		if (!end) {
			return 0;
		}
		item = end + 1;
	}
}

static int parse_env_output_list(struct wla_config_output *outputs, size_t *n_outputs,
	const char *value)
{
	char *copy = strdup(value);
	if (!copy) {
		wlr_log(WLR_ERROR, "config: WLA_OUTPUTS: cannot allocate a copy of '%s'", value);
		return -ENOMEM;
	}
	int ret = 0;
	size_t n = 0;
	char *item = copy;
	for (;;) {
		char *end = strchr(item, ';');
		if (end) {
			*end = '\0';
		}
		if (item[0] == '\0') {
			wlr_log(WLR_ERROR, "config: WLA_OUTPUTS: empty output in '%s'", value);
			ret = -EINVAL;
			break;
		}
		if (n == WLA_MAX_OUTPUTS) {
			wlr_log(WLR_ERROR, "config: WLA_OUTPUTS: more than %d outputs in '%s'",
				WLA_MAX_OUTPUTS, value);
			ret = -EINVAL;
			break;
		}
		ret = parse_env_modes(&outputs[n], item, value);
		if (ret < 0) {
			break;
		}
		n++;
		if (!end) {
			break;
		}
		item = end + 1;
	}
	free(copy);
	*n_outputs = n;
	return ret;
}

static int load_env_outputs(struct wla_config *cfg, const char *value)
{
	struct wla_config_output outputs[WLA_MAX_OUTPUTS];
	size_t n_outputs = 0;
	memset(outputs, 0, sizeof(outputs));

	if (wla_lex_all_digits(value, strlen(value))) {
		uint32_t count;
		int ret = parse_output_count("WLA_OUTPUTS", value, &count);
		if (ret < 0) {
			return ret;
		}
		n_outputs = count;
		for (size_t i = 0; i < n_outputs; i++) {
			set_default_mode(&outputs[i]);
		}
	} else {
		int ret = parse_env_output_list(outputs, &n_outputs, value);
		if (ret < 0) {
			return ret;
		}
	}

	for (size_t i = 0; i < n_outputs; i++) {
		set_virtual_name(&outputs[i], i);
	}
	memcpy(cfg->outputs, outputs, sizeof(outputs));
	cfg->n_outputs = n_outputs;
	return 0;
}

/* "DEV;DEV...": the list of input devices, replaced. */
static int load_env_input_devices(struct wla_config *cfg, const char *value)
{
	size_t saved = cfg->n_input_devices;
	cfg->n_input_devices = 0;
	const char *p = value;
	for (;;) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char dev[WLA_INPUT_DEVICE_MAX + 1];
		if (len > WLA_INPUT_DEVICE_MAX) {
			len = WLA_INPUT_DEVICE_MAX; /* refused as too long below */
		}
		memcpy(dev, p, len);
		dev[len] = '\0';
		if (add_input_device(cfg, "WLA_INPUT_DEVICES", dev) < 0) {
			cfg->n_input_devices = saved;
			return -EINVAL;
		}
		if (!end) {
			return 0;
		}
		p = end + 1;
	}
}

WLA_EXPORT int wla_config_load_env(struct wla_config *cfg)
{
	static const struct {
		const char *var, *key;
	} env_keys[] = {
		{ "WLA_OVERLAY_PLANES", "overlay-planes" },
		{ "WLA_CURSOR_SIZE", "cursor-size" },
		{ "WLA_FLIP_DEPTH", "flip-depth" },
		{ "WLA_FLIP_POLICY", "flip-policy" },
		{ "WLA_GPIO_DRY_RUN", "gpio-dry-run" },
		{ "WLA_LATCH_SLACK_US", "latch-slack-us" },
		{ "WLA_CONTROL", "control" },
		{ "WLA_DRIVER", "driver" },
		{ "WLA_DRM_DEVICE", "drm-device" },
		{ "WLA_VIRTUAL_INPUT", "virtual-input" },
		{ "WLA_KEYBOARD_LAYOUT", "keyboard-layout" },
		{ "WLA_VIRTUAL_TOUCH", "virtual-touch" },
		{ "WLA_TOUCH_OUTPUT", "touch-output" },
	};
	const char *value;

	/* The planes limit is checked once, on the result of all of them. */
	int ret = get_env("WLA_CONFIG", &value);
	if (ret > 0) {
		ret = load_file(cfg, value, false);
	}
	if (ret < 0) {
		return ret;
	}

	ret = get_env("WLA_OUTPUTS", &value);
	if (ret > 0) {
		ret = load_env_outputs(cfg, value);
	}
	if (ret < 0) {
		return ret;
	}

	for (size_t i = 0; i < WLA_ARRAY_SIZE(env_keys); i++) {
		ret = get_env(env_keys[i].var, &value);
		if (ret > 0) {
			ret = wla_config_set(cfg, env_keys[i].var, env_keys[i].key, value);
		}
		if (ret < 0) {
			return ret;
		}
	}
	ret = get_env("WLA_INPUT_DEVICES", &value);
	if (ret > 0) {
		ret = load_env_input_devices(cfg, value);
	}
	if (ret < 0) {
		return ret;
	}
	return check_vdc_planes("environment", cfg);
}

/* A mode as its config value reads, "1920x1080@59.940", into buf. */
static const char *format_mode(const struct wla_config_mode *mode, char *buf, size_t size)
{
	int64_t mhz = mode->refresh_mhz;
	snprintf(buf, size, "%" PRId32 "x%" PRId32 "@%s%" PRId64 ".%03" PRId64, mode->width,
		mode->height, mhz < 0 ? "-" : "", (mhz < 0 ? -mhz : mhz) / 1000,
		(mhz < 0 ? -mhz : mhz) % 1000);
	return buf;
}

static int validate_output(const struct wla_config *cfg, size_t i)
{
	const struct wla_config_output *output = &cfg->outputs[i];
	char origin[96], text[64];
	size_t len = strnlen(output->name, sizeof(output->name));
	snprintf(origin, sizeof(origin), VALIDATE_ORIGIN ".outputs[%zu].name", i);
	int ret = check_output_name(origin, output->name, len);
	if (ret < 0) {
		return ret;
	}
	struct monitor_field fields[N_MONITOR_FIELDS];
	monitor_fields((struct wla_config_output *)output, fields);
	for (size_t f = 0; f < N_MONITOR_FIELDS; f++) {
		size_t flen = strnlen(fields[f].field, fields[f].size);
		/* "" is the default: the backend's names. */
		if (flen == 0) {
			continue;
		}
		snprintf(origin, sizeof(origin), VALIDATE_ORIGIN ".outputs[%zu].%s", i,
			fields[f].key);
		ret = check_monitor_field(origin, fields[f].key, fields[f].field, flen,
			fields[f].size);
		if (ret < 0) {
			return ret;
		}
	}
	if (output->phys_width_mm || output->phys_height_mm) {
		snprintf(origin, sizeof(origin), VALIDATE_ORIGIN ".outputs[%zu]", i);
		ret = check_physical_size(origin, "phys_width_mm x phys_height_mm",
			output->phys_width_mm, output->phys_height_mm);
		if (ret < 0) {
			return ret;
		}
	}
	if (output->gamma_size_set && !gamma_size_valid(output->gamma_size)) {
		wlr_log(WLR_ERROR, "config: " VALIDATE_ORIGIN ".outputs[%zu].gamma_size %" PRIu32
			": expected 0 (no gamma LUT) or 2..%d entries", i, output->gamma_size,
			WLA_CONFIG_GAMMA_SIZE_MAX);
		return -EINVAL;
	}
	if (output->orientation > 3) {
		wlr_log(WLR_ERROR, "config: " VALIDATE_ORIGIN ".outputs[%zu].orientation %" PRIu32
			": expected 0..3 (normal, upside-down, left-up, right-up)", i,
			output->orientation);
		return -EINVAL;
	}
	if ((output->vrr_min_mhz || output->vrr_max_mhz) &&
			!vrr_range_valid(output->vrr_min_mhz, output->vrr_max_mhz)) {
		wlr_log(WLR_ERROR, "config: " VALIDATE_ORIGIN ".outputs[%zu].vrr_min_mhz..vrr_max_mhz "
			"%" PRId32 "..%" PRId32 ": expected 1000 <= MIN < MAX <= 1000000", i,
			output->vrr_min_mhz, output->vrr_max_mhz);
		return -EINVAL;
	}
	int dup = find_duplicate_name(cfg, i);
	if (dup >= 0) {
		wlr_log(WLR_ERROR, "config: %s: duplicate output name '%s' (first at outputs[%d])",
			origin, output->name, dup);
		return -EINVAL;
	}

	snprintf(origin, sizeof(origin), VALIDATE_ORIGIN ".outputs[%zu].n_modes", i);
	ret = check_has_mode(origin, output->name, output->n_modes);
	if (ret < 0) {
		return ret;
	}
	if (output->n_modes > WLA_MAX_MODES) {
		wlr_log(WLR_ERROR, "config: %s '%zu': more than %d modes in one output", origin,
			output->n_modes, WLA_MAX_MODES);
		return -EINVAL;
	}
	for (size_t j = 0; j < output->n_modes; j++) {
		snprintf(origin, sizeof(origin), VALIDATE_ORIGIN ".outputs[%zu].modes[%zu]", i, j);
		struct wla_config_mode parsed;
		ret = wla_config_parse_mode(origin, format_mode(&output->modes[j], text,
			sizeof(text)), &parsed);
		if (ret < 0) {
			return ret;
		}
	}

	snprintf(origin, sizeof(origin), VALIDATE_ORIGIN ".outputs[%zu].panel", i);
	return wla_panel_config_check(&output->panel, origin, output->name);
}

WLA_EXPORT int wla_config_validate(const struct wla_config *cfg)
{
	char origin[64], text[32];
	for (size_t i = 0; i < WLA_ARRAY_SIZE(config_keys); i++) {
		const struct config_key *k = &config_keys[i];
		snprintf(origin, sizeof(origin), VALIDATE_ORIGIN ".%s", k->field);
		snprintf(text, sizeof(text), "%" PRIu32,
			*(const uint32_t *)((const char *)cfg + k->offset));
		uint32_t parsed;
		int ret = parse_key_number(k, origin, text, &parsed);
		if (ret < 0) {
			return ret;
		}
	}

	if (cfg->driver != WLA_DRIVER_VDC && cfg->driver != WLA_DRIVER_KMS) {
		wlr_log(WLR_ERROR, "config: " VALIDATE_ORIGIN ".driver %d: expected "
			"WLA_DRIVER_VDC or WLA_DRIVER_KMS", (int)cfg->driver);
		return -EINVAL;
	}
	int dret = check_drm_device(VALIDATE_ORIGIN ".drm_device", cfg->drm_device);
	if (dret < 0) {
		return dret;
	}
	/* "" (the default place) is what wla_config_init leaves. */
	if (cfg->control[0]) {
		int ret = check_control(VALIDATE_ORIGIN ".control", cfg->control);
		if (ret < 0) {
			return ret;
		}
	}

	if ((int)cfg->virtual_input < WLA_VIRTUAL_INPUT_AUTO ||
			cfg->virtual_input > WLA_VIRTUAL_INPUT_OFF) {
		wlr_log(WLR_ERROR, "config: " VALIDATE_ORIGIN ".virtual_input %d: expected "
			"WLA_VIRTUAL_INPUT_AUTO, _ON or _OFF", (int)cfg->virtual_input);
		return -EINVAL;
	}
	/* "" (what memset leaves) is the default layout, us. */
	if (cfg->keyboard_layout[0] && check_keyboard_layout(VALIDATE_ORIGIN ".keyboard_layout",
			cfg->keyboard_layout) < 0) {
		return -EINVAL;
	}
	if (check_input_output(VALIDATE_ORIGIN, "virtual_touch", cfg->virtual_touch) < 0 ||
			check_input_output(VALIDATE_ORIGIN, "touch_output", cfg->touch_output) < 0) {
		return -EINVAL;
	}
	if (cfg->n_input_devices > WLA_MAX_INPUT_DEVICES) {
		wlr_log(WLR_ERROR, "config: " VALIDATE_ORIGIN ".n_input_devices %zu: more than %d",
			cfg->n_input_devices, WLA_MAX_INPUT_DEVICES);
		return -EINVAL;
	}
	for (size_t i = 0; i < cfg->n_input_devices; i++) {
		char where[64];
		snprintf(where, sizeof(where), VALIDATE_ORIGIN ".input_devices[%zu]", i);
		if (check_input_device(where, cfg->input_devices[i]) < 0) {
			return -EINVAL;
		}
	}

	snprintf(text, sizeof(text), "%zu", cfg->n_outputs);
	uint32_t count;
	int ret = parse_output_count(VALIDATE_ORIGIN ".n_outputs", text, &count);
	for (size_t i = 0; ret == 0 && i < cfg->n_outputs; i++) {
		ret = validate_output(cfg, i);
	}
	return ret < 0 ? ret : check_vdc_planes(VALIDATE_ORIGIN, cfg);
}
