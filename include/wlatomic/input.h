/*
 * wlatomic's virtual input devices, driven from code.
 *
 * A wlatomic backend offers, unless the configuration turns them off
 * (virtual-input), a keyboard "wlatomic virtual keyboard" with an xkbcommon
 * keymap (keyboard-layout, default us), a pointer "wlatomic virtual
 * pointer" that moves relatively, clicks and scrolls, one absolute pointer
 * per output "wlatomic virtual pointer NAME" whose wlr_input_device
 * output_name is that output, and, with virtual-touch = OUTPUT, a touch
 * device "wlatomic virtual touch" mapped to that output. All come through
 * the backend's new_input signal; events carry CLOCK_MONOTONIC timestamps
 * in milliseconds.
 *
 * Every call sends its events at once, from inside the call, and returns 0;
 * or, having sent nothing, a negative errno after one logged error line:
 * -EINVAL for a bad value (a position off the output, a key code beyond
 * KEY_MAX, text the keymap cannot type), -ENOENT for an unknown output,
 * -ENODEV when the device does not exist (virtual input off, no touch
 * device), -EAGAIN before the backend started.
 */
#ifndef WLATOMIC_INPUT_H
#define WLATOMIC_INPUT_H

#include <stdbool.h>
#include <stdint.h>

struct wlr_backend;

/* Press or release an evdev key (KEY_* of linux/input-event-codes.h). */
int wla_input_key(struct wlr_backend *backend, uint32_t key, bool pressed);

/* Type UTF-8 text as key strokes (Shift or AltGr held where the keymap
 * needs them), with the keymap the keyboard has now: the compositor's, if
 * it set its own. */
int wla_input_type(struct wlr_backend *backend, const char *text);

/* Move the pointer to x, y of output (its size in the compositor's layout:
 * 0 <= x < width), through that output's absolute pointer. */
int wla_input_pointer_move(struct wlr_backend *backend, const char *output, double x, double y);
/* Move the pointer by dx, dy (relative motion, unaccelerated). */
int wla_input_pointer_move_by(struct wlr_backend *backend, double dx, double dy);
/* Press or release a pointer button (BTN_LEFT ...). */
int wla_input_pointer_button(struct wlr_backend *backend, uint32_t button, bool pressed);
/* Scroll by delta (15 is one wheel detent), vertical or horizontal. */
int wla_input_pointer_axis(struct wlr_backend *backend, bool horizontal, double delta);

/* Touch point id down at, or moved to, x, y of the touch device's output;
 * or lifted. A point down twice or lifted when up is -EINVAL. */
int wla_input_touch_down(struct wlr_backend *backend, int32_t id, double x, double y);
int wla_input_touch_motion(struct wlr_backend *backend, int32_t id, double x, double y);
int wla_input_touch_up(struct wlr_backend *backend, int32_t id);

/* Perform one input line of the script format (README, "Input"), its `at`
 * ignored: "key KEY_A", "type hello", "move Virtual-1 400,300",
 * "click left", "touch 0 down 100,100". */
int wla_input_command(struct wlr_backend *backend, const char *line);

/*
 * Run a script of timed input lines (README, "Input") on the display's event
 * loop. The whole text is checked first: an error names the line (name is
 * used in messages) and nothing is sent. Then each line goes at its time
 * after this call; done(data, 0, message) follows the last one, or
 * done(data, -errno, message) the first that could not be sent (the rest is
 * dropped) or the backend's destruction. done may be NULL. Returns 0 or
 * -EINVAL after one logged line.
 */
typedef void (*wla_input_done_func)(void *data, int status, const char *message);
int wla_input_run_script(struct wlr_backend *backend, const char *name, const char *text,
	wla_input_done_func done, void *data);

#endif
