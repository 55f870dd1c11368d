/*
 * Panel description: the GPIO lines of a display panel and the timed steps
 * that power it on and off (the config syntax is documented at the top of
 * backend/panel/config.c).
 *
 * A struct wla_config_panel is plain data inside struct wla_config_output: it
 * owns no heap memory and may be copied by value. All zero means "no panel".
 */
#ifndef WLATOMIC_PANEL_H
#define WLATOMIC_PANEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WLA_PANEL_MAX_LINES 16
#define WLA_PANEL_MAX_STEPS 16
/* Sizes include the terminating NUL. */
#define WLA_PANEL_CHIP_MAX 64
#define WLA_PANEL_LINE_NAME_MAX 16
/* Upper bound of every delay, in ms. */
#define WLA_PANEL_MAX_DELAY_MS 60000
/* Upper bound of a line offset. */
#define WLA_PANEL_MAX_OFFSET 65535

struct wla_panel_line {
	char name[WLA_PANEL_LINE_NAME_MAX];
	uint32_t offset;
	/* Logical 1 ("asserted", "on") is a low level on the pin. */
	bool active_low;
};

/*
 * One step: the lines whose bit is set in mask (bit i is lines[i]) are set
 * at once, with one provider call, to the logical values of the same bits of
 * values; then the sequence waits wait_ms before its next step.
 */
struct wla_panel_step {
	uint32_t mask;
	uint32_t values;
	uint32_t wait_ms;
};

enum wla_panel_preset {
	WLA_PANEL_PRESET_NONE = 0,
	/* Lines enable, backlight and optionally reset, with panel-simple delays. */
	WLA_PANEL_PRESET_SIMPLE,
};

/* The kernel panel-simple delays, in ms; a preset builds its steps from them. */
struct wla_panel_delays {
	uint32_t prepare_ms;   /* supply on -> panel ready */
	uint32_t enable_ms;    /* panel ready -> backlight may come on */
	uint32_t disable_ms;   /* backlight off -> video may stop */
	uint32_t unprepare_ms; /* supply off -> panel fully off */
};

struct wla_config_panel {
	/* GPIO chip: a name ("gpiochip0"), a label ("panel-gpio") or a path
	 * ("/dev/gpiochip0"). Empty: this output has no panel. */
	char chip[WLA_PANEL_CHIP_MAX];
	struct wla_panel_line lines[WLA_PANEL_MAX_LINES];
	size_t n_lines;

	/* Power-on, run before the CRTC is enabled. */
	struct wla_panel_step on[WLA_PANEL_MAX_STEPS];
	size_t n_on;
	/* The backlight step, run once the first frame has latched. */
	bool has_lit;
	struct wla_panel_step lit;
	/* Power-off. With a lit step, off[0] switches off exactly its lines. */
	struct wla_panel_step off[WLA_PANEL_MAX_STEPS];
	size_t n_off;
	/* Minimum time between the end of a power-off and the next power-on. */
	uint32_t min_off_ms;

	/* Where the steps came from (informative once parsed). */
	enum wla_panel_preset preset;
	struct wla_panel_delays delays;
};

#endif
