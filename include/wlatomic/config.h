/*
 * wlatomic configuration: defaults, WLA_* environment variables and an
 * optional config file, all parsed strictly.
 *
 * A struct wla_config is plain data with fixed-size arrays: it owns no heap
 * memory, may be copied by value and needs no destroy call.
 */
#ifndef WLATOMIC_CONFIG_H
#define WLATOMIC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <wlatomic/panel.h>

#define WLA_MAX_OUTPUTS 8
#define WLA_MAX_MODES 16
#define WLA_MAX_OVERLAY_PLANES 8
#define WLA_OUTPUT_NAME_MAX 32
/* The sizes of wlr_output's make, model and serial (with the NUL). */
#define WLA_MONITOR_MAKE_MAX 56
#define WLA_MONITOR_MODEL_MAX 16
#define WLA_MONITOR_SERIAL_MAX 16
#define WLA_MAX_FLIP_DEPTH 4
#define WLA_MAX_LATCH_SLACK_US 10000
#define WLA_DEFAULT_LATCH_SLACK_US 200
/* A DRM device path, NUL included. */
#define WLA_DRM_DEVICE_MAX 64
/* A control socket path fits a sockaddr_un's sun_path, NUL included. */
#define WLA_CONTROL_PATH_MAX 108

/* Input: real devices named in the configuration, and the keyboard layout. */
#define WLA_MAX_INPUT_DEVICES 8
#define WLA_INPUT_DEVICE_MAX 128
#define WLA_KEYBOARD_LAYOUT_MAX 64

/* Limits a configured mode must respect. */
#define WLA_MODE_MAX_SIZE 16384
#define WLA_MODE_MAX_REFRESH_MHZ 1000000
/* 1 Hz: wlroots' present event carries the refresh period as an int of
 * nanoseconds, 2.147 s at most. */
#define WLA_CONFIG_MIN_REFRESH_MHZ 1000

/* The VDC's gamma LUTs: entries a channel. */
#define WLA_CONFIG_GAMMA_SIZE_DEFAULT 256
#define WLA_CONFIG_GAMMA_SIZE_MAX 4096

struct wla_config_mode {
	int32_t width, height;
	/* Refresh rate in mHz (59940 for 59.94 Hz),
	 * WLA_CONFIG_MIN_REFRESH_MHZ..WLA_MODE_MAX_REFRESH_MHZ. */
	int32_t refresh_mhz;
};

struct wla_config_output {
	char name[WLA_OUTPUT_NAME_MAX];
	/* modes[0] is the preferred mode. */
	struct wla_config_mode modes[WLA_MAX_MODES];
	size_t n_modes;
	/* The virtual monitor as its EDID would name it (keys make, model,
	 * serial: as long as wlr_output's fields take, printable ASCII);
	 * "": the backend's default names. */
	char make[WLA_MONITOR_MAKE_MAX], model[WLA_MONITOR_MODEL_MAX],
		serial[WLA_MONITOR_SERIAL_MAX];
	/* physical-size = WxH in mm; 0: from the preferred mode at 96 DPI. */
	uint32_t phys_width_mm, phys_height_mm;
	/* non-desktop = 1: a head-mounted display, no desktop output (as the
	 * kernel marks a VR headset's connector). */
	bool non_desktop;
	/* gamma-size = N: entries a channel of the virtual CRTC's gamma LUT
	 * (wlr-gamma-control), 0 (none) or 2..WLA_CONFIG_GAMMA_SIZE_MAX;
	 * unset (gamma_size_set false): WLA_CONFIG_GAMMA_SIZE_DEFAULT. */
	uint32_t gamma_size;
	bool gamma_size_set;
	/* vrr-range = MIN-MAX in Hz (1 <= MIN < MAX <= 1000): the virtual
	 * monitor takes adaptive sync between those rates, as mHz here; 0:
	 * it does not. */
	int32_t vrr_min_mhz, vrr_max_mhz;
	/* orientation = normal | upside-down | left-up | right-up: how the
	 * virtual panel is mounted, as the kernel's "panel orientation" says
	 * it (0..3 in that order); the output's transform hint. */
	uint32_t orientation;
	/* The panel's GPIO power sequencing; all zero (chip[0] == 0): none. */
	struct wla_config_panel panel;
};

/* Which driver of the atomic core makes the outputs. */
enum wla_config_driver {
	WLA_DRIVER_VDC, /* the virtual display controller (default) */
	WLA_DRIVER_KMS, /* a DRM card through the kernel's atomic API */
};

/* Whether the backend offers its virtual keyboard, pointers and touch. */
enum wla_config_virtual_input {
	WLA_VIRTUAL_INPUT_AUTO, /* yes unless real input devices are configured */
	WLA_VIRTUAL_INPUT_ON,
	WLA_VIRTUAL_INPUT_OFF,
};

struct wla_config {
	enum wla_config_driver driver;
	/* KMS: the card's path ("/dev/dri/card0"); "" for the first card that
	 * supports atomic modesetting. */
	char drm_device[WLA_DRM_DEVICE_MAX];
	/* The VDC's outputs (KMS outputs are the card's connectors). */
	struct wla_config_output outputs[WLA_MAX_OUTPUTS];
	size_t n_outputs;
	/* Overlay planes per CRTC, 0..WLA_MAX_OVERLAY_PLANES (default 2). */
	uint32_t overlay_planes;
	/* Square cursor plane size in pixels, 16..512 (default 64). */
	uint32_t cursor_size;
	/* Flip queue: frames that may wait to latch per CRTC,
	 * 1..WLA_MAX_FLIP_DEPTH (default 1: a second frame before the vblank
	 * is refused), and whether a frame beyond that replaces the newest
	 * waiting one (mailbox) instead of being refused. */
	uint32_t flip_depth;
	bool flip_mailbox;
	/* Panels log their GPIO sets instead of driving a chip (bring-up and
	 * tests without the hardware). */
	bool gpio_dry_run;
	/* The virtual display's latch minimum: a state latches at the first
	 * vblank at least this long after its commit, as hardware needs its
	 * registers written before the vblank; 0..WLA_MAX_LATCH_SLACK_US
	 * (default 200). */
	uint32_t latch_slack_us;
	/* The control socket (README, "Control socket"): "" for the first free
	 * $XDG_RUNTIME_DIR/wlatomic-N (N 0..31), "off" for none, or an
	 * absolute path shorter than WLA_CONTROL_PATH_MAX. */
	char control[WLA_CONTROL_PATH_MAX];
	/* Input (README, "Input"). */
	enum wla_config_virtual_input virtual_input;
	/* The keyboards' XKB layout ("us", "de", "us,ru"); "" is us. */
	char keyboard_layout[WLA_KEYBOARD_LAYOUT_MAX];
	/* The output the virtual touch device is mapped to; "" for no virtual
	 * touch device. */
	char virtual_touch[WLA_OUTPUT_NAME_MAX];
	/* Real devices through libinput: an event device's absolute path
	 * ("/dev/input/event3") or "name:PATTERN" (an fnmatch pattern on the
	 * device's name). */
	char input_devices[WLA_MAX_INPUT_DEVICES][WLA_INPUT_DEVICE_MAX];
	size_t n_input_devices;
	/* The output real touchscreens are mapped to; "" for the first output. */
	char touch_output[WLA_OUTPUT_NAME_MAX];
};

/*
 * Fill cfg with the defaults: one output "Virtual-1" at 1920x1080@60,
 * two overlay planes, a 64x64 cursor plane.
 */
void wla_config_init(struct wla_config *cfg);

/*
 * Parse a mode string "WIDTHxHEIGHT" or "WIDTHxHEIGHT@HZ" (HZ may have up to
 * three decimals, e.g. 59.94; without it 60 Hz). Sizes are 1..WLA_MODE_MAX_SIZE,
 * the refresh WLA_CONFIG_MIN_REFRESH_MHZ..WLA_MODE_MAX_REFRESH_MHZ. Returns 0,
 * or -EINVAL and logs one line naming origin and the string.
 */
int wla_config_parse_mode(const char *origin, const char *str, struct wla_config_mode *mode);

/*
 * Set one key ("driver", "drm-device", "overlay-planes", "cursor-size",
 * "flip-depth", "flip-policy", "gpio-dry-run", "latch-slack-us", "control",
 * "virtual-input", "keyboard-layout", "virtual-touch", "touch-output") to a
 * value; "input-device" adds a device to the list. origin names the
 * source in error messages (a file and line, or an environment variable).
 * Returns 0 or -EINVAL with one logged line naming key and value.
 */
int wla_config_set(struct wla_config *cfg, const char *origin, const char *key,
	const char *value);

/*
 * Parse config file text (see README for the syntax) into cfg. Outputs
 * listed in the text replace cfg's outputs. name is used in error messages.
 * On error cfg may be partly updated; returns -EINVAL.
 */
int wla_config_parse_text(struct wla_config *cfg, const char *name, const char *text);

/*
 * Check a config filled in code by the rules the parsers apply to what they
 * read: the overlay-planes, cursor-size and flip-depth ranges, 1..
 * WLA_MAX_OUTPUTS outputs with valid, unique names, 1..WLA_MAX_MODES valid
 * modes each, and panel descriptions as the panel-* keys describe them (a
 * config the parsers produced passes). cfg is only read. Returns 0, or
 * -EINVAL after one logged line naming the field ("wla_config.outputs[1]
 * .modes[0]") and the value.
 */
int wla_config_validate(const struct wla_config *cfg);

/* Read and parse a config file. -ENOENT etc. if it cannot be read. */
int wla_config_load_file(struct wla_config *cfg, const char *path);

/*
 * Apply the environment on top of cfg: WLA_CONFIG (a file, loaded first),
 * then WLA_OUTPUTS ("N" outputs of the default mode, or per-output mode lists
 * "1920x1080@60,1280x720;1024x768@75"), WLA_OVERLAY_PLANES, WLA_CURSOR_SIZE,
 * WLA_FLIP_DEPTH, WLA_FLIP_POLICY, WLA_GPIO_DRY_RUN, WLA_LATCH_SLACK_US,
 * WLA_CONTROL, WLA_DRIVER (vdc or kms), WLA_DRM_DEVICE, WLA_VIRTUAL_INPUT,
 * WLA_KEYBOARD_LAYOUT, WLA_VIRTUAL_TOUCH, WLA_TOUCH_OUTPUT and
 * WLA_INPUT_DEVICES (';' between devices; replaces the list).
 * Returns 0 or a negative errno after logging one line.
 */
int wla_config_load_env(struct wla_config *cfg);

#endif
