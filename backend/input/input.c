/*
 * The backend's input devices: the virtual keyboard, pointers and touch
 * device, and what drives them (wla_input_perform; the parser and scripts
 * are in script.c).
 *
 * The virtual pointer moves relatively, clicks and scrolls; each output
 * also gets an absolute pointer mapped to it (wlr_input_device.output_name,
 * as wlroots' X11 and Wayland backends do), so that "move Virtual-2 10,20"
 * lands on that output in any layout of a compositor that maps devices by
 * their output name. The touch device is mapped to the output the
 * configuration names.
 *
 * The backend is reached only through the host (struct wla_input_host):
 * devices are announced, outputs named and measured through it. The public
 * API on a wlr_backend (include/wlatomic/input.h) is the glue's
 * (backend/wlr/input-host.c).
 */
#define _GNU_SOURCE /* strdup */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <linux/input-event-codes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wlr/util/log.h>
#include <xkbcommon/xkbcommon.h>
#include "backend/input.h"
#include "util.h"

uint64_t wla_input_now_ms64(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return wla_timespec_to_ns(&ts) / 1000000;
}

uint32_t wla_input_now_ms(void)
{
	/* wlroots' events carry 32 bits of milliseconds: it wraps every 49.7
	 * days, as libinput's do. */
	return (uint32_t)wla_input_now_ms64();
}

/* ---- Devices ---- */

static void device_destroy_impl(struct wlr_input_device *wlr_dev)
{
	struct wla_input_device *dev = wl_container_of(wlr_dev, dev, base);
	free(dev);
}

static const struct wlr_input_device_impl device_impl = {
	.destroy = device_destroy_impl,
};

/* The type-specific parts live inside wla_input_device: their destroy
 * frees nothing (the device's impl does). */
static void keyboard_destroy_impl(struct wlr_keyboard *kb)
{
	wl_list_remove(&kb->events.key.listener_list);
}
static const struct wlr_keyboard_impl keyboard_impl = { .destroy = keyboard_destroy_impl };
static void pointer_destroy_impl(struct wlr_pointer *pointer)
{
}
static const struct wlr_pointer_impl pointer_impl = { .destroy = pointer_destroy_impl };
static void touch_destroy_impl(struct wlr_touch *touch)
{
}
static const struct wlr_touch_impl touch_impl = { .destroy = touch_destroy_impl };

struct wla_input_device *wla_input_device_create(struct wla_input *input,
	enum wlr_input_device_type type, const char *name, const char *output_name)
{
	struct wla_input_device *dev = calloc(1, sizeof(*dev));
	char *out_name = output_name ? strdup(output_name) : NULL;
	if (!dev || (output_name && !out_name)) {
		wlr_log(WLR_ERROR, "input: device '%s': out of memory", name);
		free(dev);
		free(out_name);
		return NULL;
	}
	wlr_input_device_init(&dev->base, type, &device_impl, name, 0, 0);
	if (!dev->base.name) {
		wlr_log(WLR_ERROR, "input: device '%s': out of memory", name);
		free(out_name);
		free(dev);
		return NULL;
	}
	dev->base.output_name = out_name;
	switch (type) {
	case WLR_INPUT_DEVICE_KEYBOARD:
		wlr_keyboard_init(&dev->keyboard, &keyboard_impl);
		dev->base.keyboard = &dev->keyboard;
		break;
	case WLR_INPUT_DEVICE_POINTER:
		wlr_pointer_init(&dev->pointer, &pointer_impl);
		dev->base.pointer = &dev->pointer;
		break;
	case WLR_INPUT_DEVICE_TOUCH:
		wlr_touch_init(&dev->touch, &touch_impl);
		dev->base.touch = &dev->touch;
		break;
	default:
		assert(!"device type not made here");
	}
	dev->input = input;
	wl_list_insert(input->devices.prev, &dev->link);
	return dev;
}

void wla_input_device_announce(struct wla_input_device *dev)
{
	/* Not on a backend a listener destroyed meanwhile (dev is doomed). */
	if (dev->announced || !dev->input->started || wla_doomed(&dev->input->hold)) {
		return;
	}
	dev->announced = true;
	wlr_log(WLR_DEBUG, "input: device '%s' (%s%s) announced", dev->base.name,
		dev->base.output_name ? "mapped to " : "unmapped",
		dev->base.output_name ? dev->base.output_name : "");
	dev->input->host.announce(dev->input->host.data, &dev->base);
}

void wla_input_device_destroy(struct wla_input_device *dev)
{
	if (!dev) {
		return;
	}
	struct wla_input *input = dev->input;
	if (input->keyboard == dev) {
		input->keyboard = NULL;
	}
	if (input->pointer == dev) {
		input->pointer = NULL;
	}
	if (input->touch == dev) {
		input->touch = NULL;
	}
	wl_list_remove(&dev->link);
	dev->output = NULL;
	if (wla_held(&input->hold)) {
		/* Inside an event of ours, perhaps one of dev's own (a listener
		 * unplugged its output): wl_signal_emit is still walking dev's
		 * listeners. It gets no more events and goes once the event is
		 * over (wla_input_release). */
		wl_list_insert(input->doomed.prev, &dev->link);
		return;
	}
	/* Signals the compositor, then frees dev (device_destroy_impl). */
	wlr_input_device_destroy(&dev->base);
}

/* ---- The keymap ---- */

static struct xkb_keymap *compile_keymap(struct xkb_context *ctx, const char *layout)
{
	struct xkb_rule_names names = { .layout = layout };
	return xkb_keymap_new_from_names(ctx, &names, XKB_KEYMAP_COMPILE_NO_FLAGS);
}

/* ---- Creation ---- */

struct wla_input *wla_input_create(const struct wla_input_host *host,
	struct wl_event_loop *loop, const struct wla_config *cfg)
{
	struct wla_input *input = calloc(1, sizeof(*input));
	if (!input) {
		wlr_log(WLR_ERROR, "input: out of memory");
		return NULL;
	}
	input->host = *host;
	input->config = cfg;
	input->loop = loop;
	wl_list_init(&input->devices);
	wl_list_init(&input->doomed);
	wl_list_init(&input->scripts);
	input->virtual_on = cfg->virtual_input == WLA_VIRTUAL_INPUT_ON ||
		(cfg->virtual_input == WLA_VIRTUAL_INPUT_AUTO && cfg->n_input_devices == 0);

	const char *layout = cfg->keyboard_layout[0] ? cfg->keyboard_layout : "us";
	input->xkb = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
	if (!input->xkb) {
		wlr_log(WLR_ERROR, "input: xkbcommon cannot make a context");
		goto fail;
	}
	/* Its own lines about a missing layout file would repeat ours. */
	xkb_context_set_log_level(input->xkb, XKB_LOG_LEVEL_CRITICAL);
	input->keymap = compile_keymap(input->xkb, layout);
	if (!input->keymap) {
		wlr_log(WLR_ERROR, "config: keyboard-layout '%s': xkbcommon cannot compile a "
			"keymap for it (is it an XKB layout, like us or de?)", layout);
		goto fail;
	}
	if (cfg->n_input_devices > 0 && wla_libinput_create(input) < 0) {
		goto fail;
	}
	if (!input->virtual_on) {
		wlr_log(WLR_INFO, "input: no virtual devices (virtual-input %s, %zu input "
			"device(s) configured)", cfg->virtual_input == WLA_VIRTUAL_INPUT_OFF ?
			"off" : "auto", cfg->n_input_devices);
		return input;
	}
	input->keyboard = wla_input_device_create(input, WLR_INPUT_DEVICE_KEYBOARD,
		"wlatomic virtual keyboard", NULL);
	input->pointer = wla_input_device_create(input, WLR_INPUT_DEVICE_POINTER,
		"wlatomic virtual pointer", NULL);
	if (!input->keyboard || !input->pointer) {
		goto fail;
	}
	if (!wlr_keyboard_set_keymap(&input->keyboard->keyboard, input->keymap)) {
		wlr_log(WLR_ERROR, "input: virtual keyboard: cannot set the keymap of "
			"keyboard-layout '%s'", layout);
		goto fail;
	}
	wlr_keyboard_set_repeat_info(&input->keyboard->keyboard, 25, 600);
	if (cfg->virtual_touch[0]) {
		input->touch = wla_input_device_create(input, WLR_INPUT_DEVICE_TOUCH,
			"wlatomic virtual touch", cfg->virtual_touch);
		if (!input->touch) {
			goto fail;
		}
	}
	wlr_log(WLR_INFO, "input: virtual keyboard (layout %s), pointer%s%s", layout,
		input->touch ? ", touch mapped to " : "", input->touch ? cfg->virtual_touch : "");
	return input;

fail:
	wla_input_destroy(input);
	return NULL;
}

void wla_input_start(struct wla_input *input)
{
	input->started = true;
	/* A new_input listener may destroy the backend. */
	wla_input_hold(input);
	struct wla_input_device *dev, *tmp;
	wl_list_for_each_safe(dev, tmp, &input->devices, link) {
		if (wla_doomed(&input->hold)) {
			break;
		}
		wla_input_device_announce(dev);
	}
	if (!wla_doomed(&input->hold)) {
		wla_libinput_start(input);
	}
	wla_input_release(input);
}

static void strokes_clear(struct wla_input *input);

static void input_free(void *data)
{
	struct wla_input *input = data;
	/* libinput's context last: events of it may have been in hand. */
	wla_libinput_destroy(input);
	strokes_clear(input);
	xkb_keymap_unref(input->keymap);
	xkb_context_unref(input->xkb);
	free(input);
}

void wla_input_destroy(struct wla_input *input)
{
	if (!input) {
		return;
	}
	wla_input_scripts_end_all(input, -ESHUTDOWN, "the backend went away");
	/* Its devices and event sources go now (the loop may go with the
	 * display); its context once no event of it is in hand (input_free). */
	wla_libinput_stop(input);
	while (!wl_list_empty(&input->devices)) {
		struct wla_input_device *dev = wl_container_of(input->devices.next, dev, link);
		wla_input_device_destroy(dev);
	}
	/* Inside an event we sent (a listener destroyed the backend): freed
	 * once that event is over (wla_input_release). */
	if (wla_hold_doom(&input->hold)) {
		input_free(input);
	}
}

void wla_input_hold(struct wla_input *input)
{
	wla_hold(&input->hold);
}

bool wla_input_release(struct wla_input *input)
{
	if (wla_hold_last(&input->hold)) {
		/* The destroy signals of devices destroyed meanwhile may call
		 * us back (a compositor reacting): still held while they go. */
		while (!wl_list_empty(&input->doomed)) {
			struct wla_input_device *dev =
				wl_container_of(input->doomed.next, dev, link);
			wl_list_remove(&dev->link);
			wlr_input_device_destroy(&dev->base);
		}
	}
	return wla_release(&input->hold, input_free, input);
}

void wla_input_output_added(struct wla_input *input, struct wla_output *out)
{
	if (!input || !input->virtual_on) {
		return;
	}
	const char *out_name = input->host.output_name(input->host.data, out);
	char name[96];
	snprintf(name, sizeof(name), "wlatomic virtual pointer %s", out_name);
	struct wla_input_device *dev = wla_input_device_create(input, WLR_INPUT_DEVICE_POINTER,
		name, out_name);
	if (!dev) {
		return; /* logged; the output works without it */
	}
	dev->output = out;
	wla_input_device_announce(dev);
}

void wla_input_output_removed(struct wla_input *input, struct wla_output *out)
{
	if (!input) {
		return;
	}
	struct wla_input_device *dev, *tmp;
	wl_list_for_each_safe(dev, tmp, &input->devices, link) {
		if (dev->output == out) {
			wla_input_device_destroy(dev);
		}
	}
}

/* ---- Performing actions ---- */

static struct wla_input_device *absolute_pointer(struct wla_input *input, const char *output)
{
	struct wla_input_device *dev;
	wl_list_for_each(dev, &input->devices, link) {
		if (dev->output && strcmp(dev->base.output_name, output) == 0) {
			return dev;
		}
	}
	return NULL;
}

/* x, y in the output's layout size (what the compositor maps [0, 1] to):
 * on it, or -EINVAL with why. */
int wla_input_locate(struct wla_input *input, const char *output, double x, double y,
	double *nx, double *ny, char *err, size_t err_size)
{
	struct wla_input_output out;
	if (!input->host.get_output(input->host.data, output, &out)) {
		snprintf(err, err_size, "no output named %s", output);
		return -ENOENT;
	}
	int width = out.width, height = out.height;
	if (!out.enabled || width <= 0 || height <= 0) {
		snprintf(err, err_size, "output %s is off", output);
		return -ENODEV;
	}
	if (!(x >= 0 && y >= 0 && x < width && y < height)) {
		snprintf(err, err_size, "position %g,%g is off output %s (%dx%d)", x, y, output,
			width, height);
		return -EINVAL;
	}
	*nx = x / width;
	*ny = y / height;
	return 0;
}

/* Whether dev is still one of input's devices: a listener of an event we
 * sent may have destroyed it (its output unplugged, the backend gone). */
static bool device_alive(struct wla_input *input, struct wla_input_device *dev)
{
	struct wla_input_device *d;
	if (!dev || wla_doomed(&input->hold)) {
		return false;
	}
	wl_list_for_each(d, &input->devices, link) {
		if (d == dev) {
			return true;
		}
	}
	return false;
}

/* Emit an event of dev, then its frame event if it has one; false if a
 * listener destroyed dev meanwhile. */
static bool emit(struct wla_input *input, struct wla_input_device *dev, struct wl_signal *signal,
	void *event, struct wl_signal *frame, void *frame_data)
{
	wl_signal_emit(signal, event);
	if (!device_alive(input, dev)) {
		return false;
	}
	if (frame) {
		wl_signal_emit(frame, frame_data);
	}
	return device_alive(input, dev);
}

static bool send_key(struct wla_input *input, uint32_t code, bool down, uint32_t time)
{
	struct wla_input_device *kb = input->keyboard;
	if (!device_alive(input, kb)) {
		return false;
	}
	struct wlr_event_keyboard_key event = {
		.time_msec = time,
		.keycode = code,
		.update_state = true,
		.state = down ? WL_KEYBOARD_KEY_STATE_PRESSED : WL_KEYBOARD_KEY_STATE_RELEASED,
	};
	wlr_keyboard_notify_key(&kb->keyboard, &event);
	return device_alive(input, kb);
}

/* Modifier keys typing may hold, and the modifier mask each sets. */
static const uint32_t modifier_keys[] = { KEY_LEFTSHIFT, KEY_RIGHTALT };

static xkb_mod_mask_t mask_of_keys(struct xkb_keymap *keymap, unsigned combo)
{
	struct xkb_state *state = xkb_state_new(keymap);
	if (!state) {
		return 0;
	}
	for (size_t i = 0; i < WLA_ARRAY_SIZE(modifier_keys); i++) {
		if (combo & (1u << i)) {
			xkb_state_update_key(state, modifier_keys[i] + 8, XKB_KEY_DOWN);
		}
	}
	xkb_mod_mask_t mask = xkb_state_serialize_mods(state, XKB_STATE_MODS_EFFECTIVE);
	xkb_state_unref(state);
	return mask;
}

/* The strokes of a keymap's first layout: which key and modifier keys
 * (bit i: modifier_keys[i]) make each keysym, fewer modifiers first ('a'
 * is a, not Shift+something). Built once per keymap, so that typing costs a
 * lookup per character, not a walk of the keymap. */
struct stroke {
	xkb_keysym_t sym;
	uint32_t code;
	unsigned combo;
};

static void strokes_clear(struct wla_input *input)
{
	free(input->strokes);
	input->strokes = NULL;
	input->n_strokes = 0;
	xkb_keymap_unref(input->strokes_keymap);
	input->strokes_keymap = NULL;
}

static bool strokes_build(struct wla_input *input, struct xkb_keymap *keymap)
{
	strokes_clear(input);
	xkb_mod_mask_t masks_of[4];
	for (unsigned c = 0; c < 4; c++) {
		masks_of[c] = c ? mask_of_keys(keymap, c) : 0;
	}
	size_t cap = 0;
	xkb_keycode_t min = xkb_keymap_min_keycode(keymap), max = xkb_keymap_max_keycode(keymap);
	for (unsigned c = 0; c < 4; c++) {
		for (xkb_keycode_t kc = min < 8 ? 8 : min; kc <= max && kc >= 8; kc++) {
			xkb_level_index_t levels = xkb_keymap_num_levels_for_key(keymap, kc, 0);
			for (xkb_level_index_t level = 0; level < levels; level++) {
				const xkb_keysym_t *syms;
				if (xkb_keymap_key_get_syms_by_level(keymap, kc, 0, level, &syms) != 1) {
					continue;
				}
				xkb_mod_mask_t masks[8];
				size_t nm = xkb_keymap_key_get_mods_for_level(keymap, kc, 0, level,
					masks, WLA_ARRAY_SIZE(masks));
				bool match = false;
				for (size_t m = 0; m < nm; m++) {
					match |= masks[m] == masks_of[c];
				}
				if (!match) {
					continue;
				}
				if (input->n_strokes == cap) {
					cap = cap ? cap * 2 : 256;
					struct stroke *bigger = realloc(input->strokes,
						cap * sizeof(*bigger));
					if (!bigger) {
						strokes_clear(input);
						return false;
					}
					input->strokes = bigger;
				}
				input->strokes[input->n_strokes++] = (struct stroke){
					.sym = syms[0], .code = kc - 8, .combo = c };
			}
		}
	}
	input->strokes_keymap = xkb_keymap_ref(keymap);
	return true;
}

/* How to type one keysym on keymap; false if nothing of its first layout
 * makes it with Shift and AltGr at most. */
static bool find_stroke(struct wla_input *input, struct xkb_keymap *keymap, xkb_keysym_t sym,
	uint32_t *code, unsigned *combo)
{
	if (input->strokes_keymap != keymap && !strokes_build(input, keymap)) {
		return false;
	}
	/* In order of fewer modifiers: the first match is the one to use. */
	for (size_t i = 0; i < input->n_strokes; i++) {
		if (input->strokes[i].sym == sym) {
			*code = input->strokes[i].code;
			*combo = input->strokes[i].combo;
			return true;
		}
	}
	return false;
}

/* The next UTF-8 character of *p, advancing it; 0 at the end, -1 if the
 * bytes are not UTF-8 (overlong forms, surrogates and code points past
 * U+10FFFF included). */
static int32_t next_utf8(const char **p)
{
	const unsigned char *s = (const unsigned char *)*p;
	if (!s[0]) {
		return 0;
	}
	int len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 :
		(s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (!len) {
		return -1;
	}
	int32_t cp = len == 1 ? s[0] : s[0] & (0x7f >> len);
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return -1;
		}
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	static const int32_t min_of_len[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min_of_len[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
		return -1;
	}
	*p += len;
	return cp;
}

/* The keymap typing uses: the keyboard's own (a compositor may have set
 * its own), else the configured one. */
static struct xkb_keymap *typing_keymap(struct wla_input *input)
{
	if (input->keyboard && input->keyboard->keyboard.keymap) {
		return input->keyboard->keyboard.keymap;
	}
	return input->keymap;
}

int wla_input_check_text(struct wla_input *input, const char *text, char *err, size_t err_size)
{
	struct xkb_keymap *keymap = typing_keymap(input);
	const char *p = text;
	size_t index = 0;
	for (;;) {
		int32_t cp = next_utf8(&p);
		if (cp == 0) {
			return 0;
		}
		if (cp < 0) {
			snprintf(err, err_size, "text is not UTF-8 at byte %zu", (size_t)(p - text));
			return -EINVAL;
		}
		xkb_keysym_t sym = xkb_utf32_to_keysym((uint32_t)cp);
		uint32_t code;
		unsigned combo;
		if (sym == XKB_KEY_NoSymbol || !find_stroke(input, keymap, sym, &code, &combo)) {
			snprintf(err, err_size, "character %zu (U+%04" PRIX32 ") cannot be typed "
				"with the keyboard's keymap", index + 1, (uint32_t)cp);
			return -EINVAL;
		}
		index++;
	}
}

static int type_text(struct wla_input *input, const char *text, char *err, size_t err_size)
{
	int ret = wla_input_check_text(input, text, err, err_size);
	if (ret < 0) {
		return ret;
	}
	const char *p = text;
	int32_t cp;
	while ((cp = next_utf8(&p)) > 0) {
		uint32_t code;
		unsigned combo;
		/* Looked up again for each character: a listener may have given
		 * the keyboard another keymap. */
		if (!find_stroke(input, typing_keymap(input), xkb_utf32_to_keysym((uint32_t)cp),
				&code, &combo)) {
			snprintf(err, err_size, "U+%04" PRIX32 " cannot be typed with the keymap the "
				"keyboard has now", (uint32_t)cp);
			return -EINVAL;
		}
		uint32_t now = wla_input_now_ms();
		bool alive = true;
		for (size_t i = 0; i < WLA_ARRAY_SIZE(modifier_keys) && alive; i++) {
			if (combo & (1u << i)) {
				alive = send_key(input, modifier_keys[i], true, now);
			}
		}
		alive = alive && send_key(input, code, true, now) && send_key(input, code, false, now);
		for (size_t i = WLA_ARRAY_SIZE(modifier_keys); i-- > 0 && alive;) {
			if (combo & (1u << i)) {
				alive = send_key(input, modifier_keys[i], false, now);
			}
		}
		if (!alive) {
			snprintf(err, err_size, "the virtual keyboard went away while typing");
			return -ENODEV;
		}
	}
	return 0;
}

int wla_input_touch_index(const struct wla_input_device *dev, int32_t id)
{
	for (size_t i = 0; i < dev->n_touch_ids; i++) {
		if (dev->touch_ids[i] == id) {
			return (int)i;
		}
	}
	return -1;
}

static int perform_touch(struct wla_input *input, const struct wla_input_action *act,
	char *err, size_t err_size)
{
	struct wla_input_device *dev = input->touch;
	if (!dev) {
		snprintf(err, err_size, "no virtual touch device (set virtual-touch to an "
			"output)");
		return -ENODEV;
	}
	int index = wla_input_touch_index(dev, act->touch_id);
	if (act->touch == WLA_INPUT_TOUCH_DOWN && index >= 0) {
		snprintf(err, err_size, "touch point %" PRId32 " is down already", act->touch_id);
		return -EBUSY;
	}
	if (act->touch != WLA_INPUT_TOUCH_DOWN && index < 0) {
		snprintf(err, err_size, "touch point %" PRId32 " is not down", act->touch_id);
		return -EINVAL;
	}
	if (act->touch == WLA_INPUT_TOUCH_DOWN && dev->n_touch_ids == WLA_ARRAY_SIZE(dev->touch_ids)) {
		snprintf(err, err_size, "more than %zu touch points down",
			WLA_ARRAY_SIZE(dev->touch_ids));
		return -EBUSY;
	}
	double nx = 0, ny = 0;
	if (act->touch != WLA_INPUT_TOUCH_UP) {
		int ret = wla_input_locate(input, dev->base.output_name, act->x, act->y, &nx, &ny,
			err, err_size);
		if (ret < 0) {
			return ret;
		}
	}
	uint32_t now = wla_input_now_ms();
	struct wl_signal *frame = &dev->touch.events.frame;
	switch (act->touch) {
	case WLA_INPUT_TOUCH_DOWN: {
		dev->touch_ids[dev->n_touch_ids++] = act->touch_id;
		struct wlr_event_touch_down ev = { .device = &dev->base, .time_msec = now,
			.touch_id = act->touch_id, .x = nx, .y = ny };
		emit(input, dev, &dev->touch.events.down, &ev, frame, NULL);
		break;
	}
	case WLA_INPUT_TOUCH_MOTION: {
		struct wlr_event_touch_motion ev = { .device = &dev->base, .time_msec = now,
			.touch_id = act->touch_id, .x = nx, .y = ny };
		emit(input, dev, &dev->touch.events.motion, &ev, frame, NULL);
		break;
	}
	case WLA_INPUT_TOUCH_UP: {
		dev->touch_ids[index] = dev->touch_ids[--dev->n_touch_ids];
		struct wlr_event_touch_up ev = { .device = &dev->base, .time_msec = now,
			.touch_id = act->touch_id };
		emit(input, dev, &dev->touch.events.up, &ev, frame, NULL);
		break;
	}
	}
	return 0;
}

static int perform(struct wla_input *input, const struct wla_input_action *act, char *err,
	size_t err_size)
{
	if (!input->virtual_on) {
		snprintf(err, err_size, "the virtual input devices are off (virtual-input)");
		return -ENODEV;
	}
	if (!input->started) {
		snprintf(err, err_size, "the backend has not started");
		return -EAGAIN;
	}
	uint32_t now = wla_input_now_ms();
	switch (act->type) {
	case WLA_INPUT_KEY:
		if (act->press != WLA_INPUT_UP && !send_key(input, act->code, true, now)) {
			return 0; /* a listener took the keyboard away: nothing more to send */
		}
		if (act->press != WLA_INPUT_DOWN) {
			send_key(input, act->code, false, now);
		}
		return 0;
	case WLA_INPUT_TYPE:
		return type_text(input, act->text, err, err_size);
	case WLA_INPUT_MOVE: {
		double nx, ny;
		int ret = wla_input_locate(input, act->output, act->x, act->y, &nx, &ny, err,
			err_size);
		if (ret < 0) {
			return ret;
		}
		struct wla_input_device *dev = absolute_pointer(input, act->output);
		if (!dev) {
			snprintf(err, err_size, "output %s has no virtual pointer", act->output);
			return -ENODEV;
		}
		struct wlr_event_pointer_motion_absolute ev = { .device = &dev->base,
			.time_msec = now, .x = nx, .y = ny };
		emit(input, dev, &dev->pointer.events.motion_absolute, &ev, &dev->pointer.events.frame,
			&dev->pointer);
		return 0;
	}
	case WLA_INPUT_MOVE_BY: {
		struct wla_input_device *dev = input->pointer;
		struct wlr_event_pointer_motion ev = { .device = &dev->base, .time_msec = now,
			.delta_x = act->x, .delta_y = act->y, .unaccel_dx = act->x,
			.unaccel_dy = act->y };
		emit(input, dev, &dev->pointer.events.motion, &ev, &dev->pointer.events.frame,
			&dev->pointer);
		return 0;
	}
	case WLA_INPUT_BUTTON: {
		struct wla_input_device *dev = input->pointer;
		for (int down = 1; down >= 0; down--) {
			if ((down && act->press == WLA_INPUT_UP) ||
					(!down && act->press == WLA_INPUT_DOWN)) {
				continue;
			}
			struct wlr_event_pointer_button ev = { .device = &dev->base,
				.time_msec = now, .button = act->code,
				.state = down ? WLR_BUTTON_PRESSED : WLR_BUTTON_RELEASED };
			if (!emit(input, dev, &dev->pointer.events.button, &ev,
					&dev->pointer.events.frame, &dev->pointer)) {
				break;
			}
		}
		return 0;
	}
	case WLA_INPUT_AXIS: {
		struct wla_input_device *dev = input->pointer;
		/* One wheel detent is 15 in libinput's units. */
		struct wlr_event_pointer_axis ev = { .device = &dev->base, .time_msec = now,
			.source = WLR_AXIS_SOURCE_WHEEL,
			.orientation = act->horizontal ? WLR_AXIS_ORIENTATION_HORIZONTAL :
				WLR_AXIS_ORIENTATION_VERTICAL,
			.delta = act->delta, .delta_discrete = (int32_t)lround(act->delta / 15) };
		emit(input, dev, &dev->pointer.events.axis, &ev, &dev->pointer.events.frame,
			&dev->pointer);
		return 0;
	}
	case WLA_INPUT_TOUCH:
		return perform_touch(input, act, err, err_size);
	}
	snprintf(err, err_size, "unknown action %d", (int)act->type);
	return -EINVAL;
}

int wla_input_perform(struct wla_input *input, const struct wla_input_action *act, char *err,
	size_t err_size)
{
	wla_input_hold(input);
	int ret = perform(input, act, err, err_size);
	/* A listener may have destroyed the backend: input is freed now. */
	wla_input_release(input);
	return ret;
}
