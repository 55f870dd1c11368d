/*
 * Input devices of a wlatomic backend (backend/input/): the virtual
 * keyboard, pointers and touch device, driven by the public API
 * (include/wlatomic/input.h, in the glue), the control socket and scripts
 * of timed events; and real devices through libinput on a path context.
 *
 * Input is a leaf: all it asks of the backend goes through a small host
 * interface (struct wla_input_host, implemented by the glue in
 * backend/wlr/backend.c): announce a device, tell an output's name, size
 * and whether it shows something (on, its panel powered). Outputs are
 * opaque handles here.
 *
 * Every device is a wlr_input_device announced through the host (the
 * backend's new_input signal) once input has started, and destroyed (its
 * destroy signal first) when the device goes or input does.
 */
#ifndef BACKEND_INPUT_H
#define BACKEND_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <wayland-server-core.h>
#include <xkbcommon/xkbcommon.h>
#include <wlr/interfaces/wlr_input_device.h>
#include <wlr/interfaces/wlr_keyboard.h>
#include <wlr/interfaces/wlr_pointer.h>
#include <wlr/interfaces/wlr_touch.h>
#include <wlatomic/config.h>
#include "backend/hold.h"

/* The host's output: a handle input never looks into. */
struct wla_output;
struct wla_input;

/* An output as input needs it, told by the host. */
struct wla_input_output {
	/* Its size in the layout (what a compositor maps [0, 1] to). */
	int width, height;
	bool enabled;
	/* It shows something: enabled and, where it has a panel, the panel
	 * powered (on or lit) and not failed. Touch is dropped otherwise. */
	bool shows;
};

/*
 * What input asks of its host: copied at wla_input_create, data handed
 * back to every call. No other path leads from input to the backend.
 */
struct wla_input_host {
	/* Announce dev to the compositor (the backend's new_input); a
	 * listener may destroy the backend, and input with it, meanwhile. */
	void (*announce)(void *data, struct wlr_input_device *dev);
	/* The output named name into *info; false when there is none. */
	bool (*get_output)(void *data, const char *name, struct wla_input_output *info);
	/* The name of out, an output told by wla_input_output_added (valid
	 * until wla_input_output_removed). */
	const char *(*output_name)(void *data, struct wla_output *out);
	/* The name of the first output (where a touchscreen without
	 * touch-output goes), NULL while there is none. */
	const char *(*first_output)(void *data);
	/* Open a real device's event node for libinput: an fd or -errno;
	 * close_device closes what it gave. Through the display's seat where
	 * the card came through one (an unprivileged compositor gets its
	 * devices from seatd, which revokes them on a VT switch; the seat
	 * opens read-write, non-blocking, whatever flags say, as for
	 * wlroots' libinput backend), else with flags (open(2)'s). NULL:
	 * opened directly. */
	int (*open_device)(void *data, const char *path, int flags);
	void (*close_device)(void *data, int fd);
	/* Whether a seat opens the devices (then the permission to open them
	 * is the seat's, not this process'). NULL: never. */
	bool (*seated)(void *data);
	void *data;
};

/* Longest text of one `type` action, and of an error message. */
#define WLA_INPUT_TEXT_MAX 512
#define WLA_INPUT_ERROR_MAX 256

struct wla_input {
	struct wla_input_host host;
	const struct wla_config *config; /* the host's, outliving input */
	struct wl_event_loop *loop;
	struct wl_list devices; /* wla_input_device.link */
	/* Devices destroyed while an event of ours was being sent: their wlr
	 * destroy comes when it is over (wla_input_release). */
	struct wl_list doomed;
	struct wl_list scripts; /* wla_input_script.link */
	bool started;
	/* The virtual devices exist (virtual-input on, or auto without real
	 * devices configured). */
	bool virtual_on;
	struct xkb_context *xkb;
	struct xkb_keymap *keymap; /* keyboard-layout's */
	struct wla_input_device *keyboard, *pointer, *touch; /* virtual; NULL: none */
	/* Held while we send events (wla_input_hold): a listener that
	 * destroys the backend meanwhile leaves input to be freed by the last
	 * release (backend/hold.h). */
	struct wla_hold hold;
	/* Real devices (libinput.c), NULL when none are configured. */
	struct wla_libinput *libinput;
	/* Typing: how to make each keysym on strokes_keymap (input.c). */
	struct stroke *strokes;
	size_t n_strokes;
	struct xkb_keymap *strokes_keymap;
};

/* One device as wlroots sees it; ours whatever its source. */
struct wla_input_device {
	struct wlr_input_device base;
	union {
		struct wlr_keyboard keyboard;
		struct wlr_pointer pointer;
		struct wlr_touch touch;
	};
	struct wla_input *input;
	struct wl_list link; /* wla_input.devices */
	bool announced;
	/* Touch points down now (ids), to lift them when deliveries stop. */
	int32_t touch_ids[16];
	size_t n_touch_ids;
	/* The output an absolute pointer is mapped to (one per output; its
	 * name is base.output_name), else NULL. */
	struct wla_output *output;
};

enum wla_input_action_type {
	WLA_INPUT_KEY,       /* key down, up, or both (a stroke) */
	WLA_INPUT_TYPE,      /* text typed as key strokes */
	WLA_INPUT_MOVE,      /* absolute, on an output */
	WLA_INPUT_MOVE_BY,   /* relative */
	WLA_INPUT_BUTTON,    /* down, up, or both (a click) */
	WLA_INPUT_AXIS,      /* a scroll */
	WLA_INPUT_TOUCH,     /* down, motion or up of one touch point */
};

enum wla_input_press {
	WLA_INPUT_STROKE, /* down then up */
	WLA_INPUT_DOWN,
	WLA_INPUT_UP,
};

enum wla_input_touch_kind {
	WLA_INPUT_TOUCH_DOWN,
	WLA_INPUT_TOUCH_MOTION,
	WLA_INPUT_TOUCH_UP,
};

/* One parsed line of a script (or of the control socket). */
struct wla_input_action {
	enum wla_input_action_type type;
	uint64_t at_ms;   /* since the script's start; 0 outside scripts */
	bool has_at;
	enum wla_input_press press;
	uint32_t code;    /* evdev key or button code */
	char text[WLA_INPUT_TEXT_MAX];
	char output[32];  /* MOVE */
	double x, y;      /* MOVE, TOUCH: output coordinates; MOVE_BY: delta */
	bool horizontal;  /* AXIS */
	double delta;     /* AXIS */
	int32_t touch_id;
	enum wla_input_touch_kind touch;
};

/* Create input for host (copied; cfg must outlive input; devices with
 * timers and real devices' fds on loop): the virtual devices when cfg
 * says so, their keymap compiled. NULL after one error line naming the bad
 * value. */
struct wla_input *wla_input_create(const struct wla_input_host *host,
	struct wl_event_loop *loop, const struct wla_config *cfg);
/* Announce the devices made so far (host announce), at backend start. */
void wla_input_start(struct wla_input *input);
/* Destroy every device (destroy signals) and stop scripts. */
void wla_input_destroy(struct wla_input *input);
/* An output was announced (new_output) or is being destroyed: its absolute
 * pointer follows. out is the host's handle (its name asked of the host). */
void wla_input_output_added(struct wla_input *input, struct wla_output *out);
void wla_input_output_removed(struct wla_input *input, struct wla_output *out);

/* Keep input allocated across calls out to listeners; release returns
 * false if the backend was destroyed meanwhile (input is gone then). */
void wla_input_hold(struct wla_input *input);
bool wla_input_release(struct wla_input *input);

/* Parse one line ("[at TIME] VERB ARGS", see README "Input"). 0, or
 * -EINVAL with the reason in err (nothing is logged). Names are checked
 * against the evdev tables, outputs and positions against the outputs of
 * now, text against the keyboard's keymap. */
int wla_input_parse(struct wla_input *input, const char *line, struct wla_input_action *act,
	char *err, size_t err_size);
/* Perform act on the virtual devices now. 0, or a negative errno with the
 * reason in err (nothing sent then). */
int wla_input_perform(struct wla_input *input, const struct wla_input_action *act,
	char *err, size_t err_size);

/* A script running on the event loop: done(data, 0) when its last event
 * went, done(data, -errno) with a message when an event could not be sent
 * (the rest is dropped) or the backend went. */
struct wla_input_script;
typedef void (*wla_input_script_done_func)(void *data, int status, const char *message);
/* Parse the whole text first (err names the line of the first error;
 * nothing is sent then), then run it. NULL on error. */
struct wla_input_script *wla_input_script_start(struct wla_input *input, const char *name,
	const char *text, wla_input_script_done_func done, void *data, char *err,
	size_t err_size);
/* Stop a script without calling done. */
void wla_input_script_cancel(struct wla_input_script *script);
/* Stop a script, calling done with status and message. */
void wla_input_script_end(struct wla_input_script *script, int status, const char *message);
/* End every script of input (the backend goes). */
void wla_input_scripts_end_all(struct wla_input *input, int status, const char *message);

/* Real devices through libinput (libinput.c): create when the
 * configuration names some (0, or a negative errno logged: no context at
 * all; a device that cannot be used is logged and skipped), announce them at
 * start, destroy them with input. */
int wla_libinput_create(struct wla_input *input);
void wla_libinput_start(struct wla_input *input);
/* Stop: devices destroyed, event sources removed, the context kept (an
 * event of it may be in hand); destroy frees the rest. */
void wla_libinput_stop(struct wla_input *input);
void wla_libinput_destroy(struct wla_input *input);
/* The session went inactive (real devices closed, removed from the
 * compositor, as wlroots' libinput backend does) or active again (opened
 * and announced again). */
void wla_libinput_set_active(struct wla_input *input, bool active);
/* Close every real device now, and open none again (why: logged): the
 * seat that opened them ends. Their removal is told to the compositor. */
void wla_libinput_close_all(struct wla_input *input, const char *why);

/* Shared by both sources. */
struct wla_input_device *wla_input_device_create(struct wla_input *input,
	enum wlr_input_device_type type, const char *name, const char *output_name);
void wla_input_device_announce(struct wla_input_device *dev);
void wla_input_device_destroy(struct wla_input_device *dev);
uint32_t wla_input_now_ms(void);
uint64_t wla_input_now_ms64(void);
/* Where touch point id is in dev->touch_ids, -1 if it is not down. */
int wla_input_touch_index(const struct wla_input_device *dev, int32_t id);
/* x, y on output (its size in the layout): normalised to 0..1 in nx, ny,
 * or a negative errno with why in err. */
int wla_input_locate(struct wla_input *input, const char *output, double x, double y,
	double *nx, double *ny, char *err, size_t err_size);
/* Whether every character of text can be typed with the keyboard's keymap. */
int wla_input_check_text(struct wla_input *input, const char *text, char *err,
	size_t err_size);

#endif
