/*
 * Display modes with full timings, as DRM modes carry them: a pixel clock and
 * the horizontal and vertical display, sync and total counts. The refresh
 * rate is not a free field: it follows from the timing
 * (clock / (htotal * vtotal)), and two modes that differ in any timing field
 * are different modes even at the same size and rate.
 *
 * No wlroots types here: the atomic core and every driver use these.
 */
#ifndef BACKEND_MODE_H
#define BACKEND_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The same bits as DRM_MODE_FLAG_* (drm_mode.h), so a KMS driver copies them. */
enum wla_mode_flags {
	WLA_MODE_FLAG_PHSYNC = 1 << 0,
	WLA_MODE_FLAG_NHSYNC = 1 << 1,
	WLA_MODE_FLAG_PVSYNC = 1 << 2,
	WLA_MODE_FLAG_NVSYNC = 1 << 3,
	WLA_MODE_FLAG_INTERLACE = 1 << 4,
	WLA_MODE_FLAG_DBLSCAN = 1 << 5,
};

/* The lowest refresh a mode may have: a present event carries the period
 * as a signed 32-bit count of nanoseconds (wlroots), 2.147 s at most. */
#define WLA_MODE_MIN_REFRESH_MHZ 1000

struct wla_mode {
	int32_t width, height; /* hdisplay, vdisplay */
	/* Derived from the timing (wla_mode_update_refresh): the vertical
	 * refresh in mHz, rounded. Kept so that readers need no division. */
	int32_t refresh_mhz;
	uint32_t clock_khz;
	uint16_t hsync_start, hsync_end, htotal;
	uint16_t vsync_start, vsync_end, vtotal;
	uint32_t flags;   /* enum wla_mode_flags */
	bool preferred;   /* the connector's preferred mode (not part of equality) */
};

/*
 * Fill mode with a CVT timing (VESA Coordinated Video Timings 1.2) for
 * width x height at refresh_mhz: reduced blanking (CVT-RB) when reduced is
 * set, else the standard CRT blanking. The pixel clock is then chosen to the
 * kHz so that the timing's refresh is as near refresh_mhz as a kHz clock
 * allows (a virtual controller is not bound to CVT's 250 kHz clock steps);
 * refresh_mhz of the result is what the timing gives. false if the values
 * cannot make a timing (zero or negative, too large for 16-bit totals).
 */
bool wla_mode_cvt(struct wla_mode *mode, int32_t width, int32_t height, int32_t refresh_mhz,
	bool reduced);

/* The same, with the line widened where a kHz clock cannot give the rate
 * to the mHz (a controller free to blank as long as it likes: the VDC). A
 * mode too small for a 1 kHz clock at its rate gets CVT's blanking at
 * 1 kHz, widened. false if there is no such timing. */
bool wla_mode_cvt_exact(struct wla_mode *mode, int32_t width, int32_t height,
	int32_t refresh_mhz);

/* How a driver times a mode asked for by size and rate only (a wlroots
 * custom mode): a fact of the driver (wla_device.custom_timing). */
enum wla_custom_timing {
	WLA_CUSTOM_NONE,      /* no custom modes */
	WLA_CUSTOM_CVT,       /* CVT, as a monitor takes it (KMS: the kernel checks it) */
	WLA_CUSTOM_CVT_EXACT, /* wla_mode_cvt_exact */
};

/* Recompute mode->refresh_mhz from clock_khz, htotal and vtotal (0 if the
 * timing is empty). */
void wla_mode_update_refresh(struct wla_mode *mode);

/*
 * Whether the timing is consistent: display <= sync_start <= sync_end <=
 * total on both axes, a clock, a refresh of at least WLA_MODE_MIN_REFRESH_MHZ
 * and refresh_mhz equal to what the timing gives. On false, *why names the
 * first field that is wrong (a static string).
 */
bool wla_mode_valid(const struct wla_mode *mode, const char **why);

/* Same timing (every field but preferred). */
bool wla_mode_equal(const struct wla_mode *a, const struct wla_mode *b);

/* The exact frame period as a fraction: num / den nanoseconds
 * (htotal * vtotal * 1e6 / clock_khz). */
void wla_mode_period(const struct wla_mode *mode, uint64_t *num, uint64_t *den);
/* The period rounded to the nanosecond. */
uint64_t wla_mode_period_ns(const struct wla_mode *mode);

/* "1920x1080@60.000 173000kHz 2048 2248 2576 1083 1088 1120 -hsync +vsync"
 * into buf (always terminated); returns buf. */
const char *wla_mode_describe(const struct wla_mode *mode, char *buf, size_t size);

#endif
