/*
 * Panel power sequencing: GPIO line providers, the sequencing state machine
 * and its event-loop adapter (private API of the backend).
 *
 * Lifecycle seen from the output glue:
 *
 *   create (lines requested at their safe off values)
 *     -> power_on ............ runs the power-on steps
 *     <- event ON ............ enable the CRTC now
 *     -> first_frame_latched . runs the backlight step (state LIT)
 *     -> power_off ........... backlight off, then
 *     <- event BLANKED ....... disable the CRTC before returning
 *                              (the supply steps follow at once)
 *     <- event OFF
 *   destroy
 *
 * The state machine never sleeps and owns no timer: it tells its owner when
 * it wants wla_panel_advance() called (struct wla_panel_clock.schedule and
 * wla_panel_next_deadline_ns()). Requests (power_on, power_off,
 * first_frame_latched) only record what is wanted; every GPIO set of a
 * sequence, and every event, happens inside wla_panel_advance().
 */
#ifndef BACKEND_PANEL_H
#define BACKEND_PANEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <wayland-server-core.h>
#include <wlatomic/panel.h>

/* GPIO line providers */

/* One bulk request of all the lines of a panel, as outputs. */
struct wla_gpio_request {
	const char *chip;     /* name, label or path */
	const char *consumer; /* shown by gpioinfo; providers may truncate it */
	size_t n_lines;       /* 1..WLA_PANEL_MAX_LINES */
	const uint32_t *offsets;
	const char *const *names; /* for messages */
	/* Physical initial levels, bit i for line i. */
	uint32_t initial;
};

/* Why a request failed, for the caller's one error line. */
struct wla_gpio_error {
	int code;  /* negative errno */
	int line;  /* index of the line at fault, -1 if it is the chip's */
	bool open; /* the chip itself could not be opened */
	char detail[96]; /* e.g. "held by 'gpioset'", may be empty */
};

struct wla_gpio_lines;

struct wla_gpio_lines_funcs {
	/* Set the lines in mask (bit i = line i of the request) to the physical
	 * levels of the same bits of values, all in one hardware update; the
	 * other lines keep their level. Returns 0 or a negative errno; logs
	 * nothing (the caller names the lines). */
	int (*set)(struct wla_gpio_lines *lines, uint32_t mask, uint32_t values);
	/* Release the lines and free the handle. */
	void (*release)(struct wla_gpio_lines *lines);
};

/* A granted request; providers embed it in their own handle. */
struct wla_gpio_lines {
	const struct wla_gpio_lines_funcs *funcs;
};

struct wla_gpio_provider;

struct wla_gpio_provider_funcs {
	/* Open the chip and request all lines in one call. Returns the handle
	 * (caller owns it until release) or NULL with err filled; logs
	 * nothing. */
	struct wla_gpio_lines *(*request)(struct wla_gpio_provider *provider,
		const struct wla_gpio_request *req, struct wla_gpio_error *err);
};

struct wla_gpio_provider {
	const struct wla_gpio_provider_funcs *funcs;
};

/*
 * The libgpiod 1.6 provider (static, never freed). The chip is a path if it
 * contains '/', otherwise a name under /dev, then a label. Active-low is
 * not passed to libgpiod (its request flags cover a whole bulk): callers
 * give physical levels. Each set is one gpiod_line_set_value_bulk() on the
 * whole requested bulk, lines outside the mask written with their current
 * level, because libgpiod 1.6's v1 line handle maps values by position in
 * the original request, so a sub-bulk would drive the wrong lines.
 */
struct wla_gpio_provider *wla_gpiod_provider(void);

/* The dry-run provider (static, never freed): grants every request and logs
 * each set (lines, offsets, physical levels) at info level instead of
 * driving hardware. */
struct wla_gpio_provider *wla_dryrun_provider(void);

/* The recording provider (tests, dry runs): records every call. */

#define WLA_GPIO_RECORD_MAX_CALLS 256

enum wla_gpio_call_kind {
	WLA_GPIO_CALL_REQUEST,
	WLA_GPIO_CALL_SET,
	WLA_GPIO_CALL_RELEASE,
};

struct wla_gpio_call {
	enum wla_gpio_call_kind kind;
	uint64_t time_ns; /* the injected clock at the call */
	int result;       /* 0 or the negative errno returned */
	/* SET: the lines and physical levels given; REQUEST: all lines and the
	 * initial levels. */
	uint32_t mask, values;
	/* Physical levels of all lines after the call. */
	uint32_t levels;
};

/* One request at a time: a second one while lines are held gets -EBUSY. */
struct wla_gpio_record {
	struct wla_gpio_provider provider; /* first member: the provider to pass */
	struct wla_gpio_lines lines;       /* the handle request returns */
	uint64_t (*now)(void *data);
	void *now_data;

	/* Failure injection, all 0 = none. */
	int fail_request;       /* negative errno for the request */
	int fail_request_line;  /* with it: line at fault, -1 = the chip */
	int fail_set;           /* negative errno for set number fail_set_index */
	size_t fail_set_index;  /* 1-based count of SET calls */
	bool fail_set_after;    /* also fail every later set */

	/* What the last request asked for. */
	char chip[WLA_PANEL_CHIP_MAX];
	char consumer[64];
	size_t n_lines;
	uint32_t offsets[WLA_PANEL_MAX_LINES];
	bool requested;  /* lines held now */
	uint32_t levels; /* physical levels held now */

	struct wla_gpio_call calls[WLA_GPIO_RECORD_MAX_CALLS];
	size_t n_calls;  /* calls beyond the array are counted, not stored */
	size_t n_sets;
};

/* Initialise rec (caller owns it; nothing to free). now may be NULL (time 0). */
void wla_gpio_record_init(struct wla_gpio_record *rec, uint64_t (*now)(void *data),
	void *now_data);

/* The sequencing state machine */

enum wla_panel_state {
	WLA_PANEL_OFF,         /* all lines at their safe off values */
	WLA_PANEL_POWERING_ON, /* power-on steps (or the minimum off time) */
	WLA_PANEL_ON,          /* powered, backlight off: the CRTC may run */
	WLA_PANEL_LIT,         /* backlight on */
	WLA_PANEL_POWERING_OFF,
	WLA_PANEL_FAILED,      /* a set failed; lines driven to safe off */
};

enum wla_panel_event {
	/* Power-on complete: enable the CRTC now. */
	WLA_PANEL_EVENT_ON,
	/* Power-off after an ON: backlight off and its delay over. Disable the
	 * CRTC before returning: the supply steps run right after. */
	WLA_PANEL_EVENT_BLANKED,
	/* Power-off complete (only when off is what was last asked for). */
	WLA_PANEL_EVENT_OFF,
	/* A set failed (error is its negative errno): lines were driven to
	 * their off values, best effort; the panel refuses any power-on. The
	 * CRTC must be disabled and the output reported disabled. */
	WLA_PANEL_EVENT_FAILED,
};

#define WLA_PANEL_NO_DEADLINE UINT64_MAX

struct wla_panel_clock {
	/* CLOCK_MONOTONIC-like time in ns; required. */
	uint64_t (*now)(void *data);
	/* The panel wants wla_panel_advance() called at deadline_ns (maybe in
	 * the past: as soon as possible), or never (WLA_PANEL_NO_DEADLINE).
	 * Called after every request and every advance; may be NULL if the
	 * owner polls wla_panel_next_deadline_ns() instead. */
	void (*schedule)(void *data, uint64_t deadline_ns);
	void *data;
};

struct wla_panel;

/* Called from inside wla_panel_advance() only. The callback may call any
 * wla_panel function, wla_panel_destroy() included. */
typedef void (*wla_panel_notify_func_t)(struct wla_panel *panel, enum wla_panel_event event,
	int error, void *data);

/*
 * Create a panel and request all desc's lines from provider in one bulk
 * request, consumer "wlatomic:<name>", at their safe off values (the values
 * the power-off sequence ends with). The request counts as the end of a
 * power-off: the first power-on waits the minimum off time from here.
 * desc is copied; provider and clock must outlive the panel. Returns NULL
 * after one error line naming the chip and line (chip missing: -ENOENT,
 * line busy: -EBUSY, in *error if error is not NULL); nothing is left held.
 */
struct wla_panel *wla_panel_create(const struct wla_config_panel *desc, const char *name,
	struct wla_gpio_provider *provider, const struct wla_panel_clock *clock,
	wla_panel_notify_func_t notify, void *notify_data, int *error);

/*
 * Destroy the panel and release its lines; no event is emitted. If the
 * lines are not at their off values (on, or in a sequence), the remaining
 * power-off steps are run now, in order, back to back: destroy cannot wait,
 * so their delays (and what was left of the current one) are not waited,
 * which one info line reports. Call wla_panel_blank() and disable the CRTC
 * first. To keep every delay, call wla_panel_power_off() and destroy after
 * the OFF event.
 */
void wla_panel_destroy(struct wla_panel *panel);

/*
 * Before a destroy that cannot wait: while the panel shows video (ON, LIT,
 * or powering off before its BLANKED event), the power-off steps up to the
 * point where scanout must stop (the backlight step) run now, back to back;
 * no event is emitted, the caller stops the CRTC itself, then destroys the
 * panel, which runs the rest. Nothing happens otherwise.
 */
void wla_panel_blank(struct wla_panel *panel);

/*
 * Ask for the panel on. Returns 1 if it is on already (ON or LIT; no event
 * follows), 0 if an ON (or FAILED) event will follow, -EIO if the panel
 * failed earlier (logged). Coalesces with a pending power-on; during a
 * power-off the off sequence completes, the minimum off time passes, then
 * the power-on runs.
 */
int wla_panel_power_on(struct wla_panel *panel);

/*
 * Ask for the panel off. Returns 1 if it is off already (nothing was driven
 * yet, or FAILED: lines are at their safe values; no event follows), 0 if an
 * OFF (or FAILED) event will follow, preceded by BLANKED if ON was reached.
 * During a power-on the current step's delay completes, then the off
 * sequence runs from the point whose line values match the current ones
 * (from its start if none does).
 */
int wla_panel_power_off(struct wla_panel *panel);

/*
 * The first frame with content has latched: run the backlight step (at the
 * next advance). Valid in ON (returns 0) and LIT (no-op, 0); otherwise
 * -EINVAL, logged, and the backlight stays off.
 */
int wla_panel_first_frame_latched(struct wla_panel *panel);

/* Run whatever is due at now_ns (steps whose delay ended, events). */
void wla_panel_advance(struct wla_panel *panel, uint64_t now_ns);

/* When wla_panel_advance() should run next, WLA_PANEL_NO_DEADLINE if never. */
uint64_t wla_panel_next_deadline_ns(const struct wla_panel *panel);

enum wla_panel_state wla_panel_get_state(const struct wla_panel *panel);
/* The negative errno of the failure in WLA_PANEL_FAILED, else 0. */
int wla_panel_get_error(const struct wla_panel *panel);
/* Logical values of all lines now, bit i for line i. */
uint32_t wla_panel_get_values(const struct wla_panel *panel);
const char *wla_panel_state_name(enum wla_panel_state state);
const char *wla_panel_event_name(enum wla_panel_event event);

/* The event-loop adapter: a panel whose advance runs from a CLOCK_MONOTONIC
 * timerfd on loop. */

struct wla_panel_loop;

/* Same as wla_panel_create() with the clock provided. The caller owns the
 * result; NULL (logged) on failure. */
struct wla_panel_loop *wla_panel_loop_create(struct wl_event_loop *loop,
	const struct wla_config_panel *desc, const char *name, struct wla_gpio_provider *provider,
	wla_panel_notify_func_t notify, void *notify_data, int *error);
/* Destroys the panel (see wla_panel_destroy()) and the timer. May be called
 * from the notify callback. */
void wla_panel_loop_destroy(struct wla_panel_loop *pl);
/* The panel, owned by pl. */
struct wla_panel *wla_panel_loop_get_panel(struct wla_panel_loop *pl);

/* Config parsing of the panel-* keys of an [output] (backend/panel/config.c) */

/* Parse state of one [output]: source lines of what was seen, for messages;
 * all zero at the section start. */
struct wla_panel_parser {
	size_t first_line;     /* first panel-* key, 0 if none */
	size_t preset_line;
	size_t steps_line;     /* first panel-*-step */
	size_t delay_line;     /* first panel-delay-* */
	size_t lit_line;
	size_t line_lines[WLA_PANEL_MAX_LINES]; /* panel-line of each line */
	size_t on_lines[WLA_PANEL_MAX_STEPS];   /* panel-on-step of each on step */
	size_t off_lines[WLA_PANEL_MAX_STEPS];  /* panel-off-step of each off step */
	size_t seen_lines[16]; /* first line of each key */
};

/* Set one panel-* key; origin is "file:line". -EINVAL after one line. */
int wla_panel_config_set(struct wla_config_panel *panel, struct wla_panel_parser *parser,
	const char *origin, size_t lineno, const char *key, const char *value);
/* Check the section's panel and expand its preset. file names the config
 * in messages. -EINVAL after one line. */
int wla_panel_config_finish(struct wla_config_panel *panel, struct wla_panel_parser *parser,
	const char *file, const char *output_name);

/* Check a panel description filled in code by the rules the parser applies
 * (what wla_panel_config_finish() accepted passes). field names it in
 * messages ("wla_config.outputs[0].panel"). 0, or -EINVAL after one line. */
int wla_panel_config_check(const struct wla_config_panel *panel, const char *field,
	const char *output_name);

/* The logical values the power-off sequence leaves, bit i for line i. */
uint32_t wla_panel_off_values(const struct wla_config_panel *desc);

#endif
