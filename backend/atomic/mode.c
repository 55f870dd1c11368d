/*
 * Modes with full timings: VESA CVT 1.2 timings (standard CRT blanking and
 * reduced blanking v1), the refresh rate that follows from a timing, and
 * checks. Written from the formulas of the standard.
 */
#include <inttypes.h>
#include <stdio.h>
#include <wlatomic/config.h>
#include "backend/mode.h"

/* CVT constants. */
#define CVT_CELL 8                /* character cell granularity, pixels */
#define CVT_MIN_VSYNC_BP_US 550   /* minimum vsync + back porch time */
#define CVT_MIN_V_PORCH 3         /* vertical front porch, lines */
#define CVT_MIN_V_BPORCH 6        /* minimum vertical back porch, lines */
#define CVT_C_PRIME 30            /* (C - J) * K / 256 + J with C 40, J 20, K 128 */
#define CVT_M_PRIME 300           /* K / 256 * M with M 600 */
#define CVT_HSYNC_PERCENT 8
#define CVT_RB_MIN_VBLANK_US 460
#define CVT_RB_H_BLANK 160
#define CVT_RB_H_SYNC 32

/* The vsync width CVT gives each aspect ratio (lines). */
static int vsync_lines(int64_t w, int64_t h)
{
	static const struct {
		int64_t x, y;
		int lines;
	} ratios[] = {
		{ 4, 3, 4 }, { 16, 9, 5 }, { 16, 10, 6 }, { 5, 4, 7 }, { 15, 9, 7 },
	};
	for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++) {
		if (w * ratios[i].y == h * ratios[i].x) {
			return ratios[i].lines;
		}
	}
	return 10;
}

static int64_t round_up(int64_t v, int64_t to)
{
	return (v + to - 1) / to * to;
}

bool wla_mode_cvt(struct wla_mode *mode, int32_t width, int32_t height, int32_t refresh_mhz,
	bool reduced)
{
	if (width <= 0 || height <= 0 || refresh_mhz <= 0) {
		return false;
	}
	/* Blanking is computed on whole character cells; the display keeps
	 * its exact size. */
	int64_t h = round_up(width, CVT_CELL);
	int64_t v = height;
	double field_us = 1e9 / (double)refresh_mhz;
	int vsync = vsync_lines(width, height);
	int64_t htotal, vtotal, hsync_start, hsync_end;
	if (reduced) {
		double hperiod = (field_us - CVT_RB_MIN_VBLANK_US) / (double)v;
		if (hperiod <= 0) {
			return false;
		}
		int64_t vbi = (int64_t)(CVT_RB_MIN_VBLANK_US / hperiod) + 1;
		int64_t min_vbi = CVT_MIN_V_PORCH + vsync + CVT_MIN_V_BPORCH;
		vtotal = v + (vbi > min_vbi ? vbi : min_vbi);
		htotal = h + CVT_RB_H_BLANK;
		hsync_end = h + CVT_RB_H_BLANK / 2;
		hsync_start = hsync_end - CVT_RB_H_SYNC;
	} else {
		double hperiod = (field_us - CVT_MIN_VSYNC_BP_US) / (double)(v + CVT_MIN_V_PORCH);
		if (hperiod <= 0) {
			return false;
		}
		int64_t vsync_bp = (int64_t)(CVT_MIN_VSYNC_BP_US / hperiod) + 1;
		if (vsync_bp < vsync + CVT_MIN_V_BPORCH) {
			vsync_bp = vsync + CVT_MIN_V_BPORCH;
		}
		vtotal = v + vsync_bp + CVT_MIN_V_PORCH;
		double duty = CVT_C_PRIME - CVT_M_PRIME * hperiod / 1000.0;
		if (duty < 20) {
			duty = 20;
		}
		int64_t hblank = (int64_t)((double)h * duty / (100.0 - duty) / (2 * CVT_CELL)) *
			(2 * CVT_CELL);
		if (hblank < 2 * CVT_CELL) {
			hblank = 2 * CVT_CELL; /* tiny modes: at least a sync and a porch */
		}
		htotal = h + hblank;
		int64_t hsync = htotal * CVT_HSYNC_PERCENT / 100 / CVT_CELL * CVT_CELL;
		if (hsync < CVT_CELL) {
			hsync = CVT_CELL;
		}
		hsync_end = h + hblank / 2;
		hsync_start = hsync_end - hsync;
	}
	int64_t vsync_start = v + CVT_MIN_V_PORCH;
	int64_t vsync_end = vsync_start + vsync;
	if (htotal > UINT16_MAX || vtotal > UINT16_MAX || hsync_start < width) {
		return false;
	}
	/* The clock to the kHz nearest the asked rate (a virtual controller is
	 * not bound to CVT's 250 kHz steps). */
	uint64_t px = (uint64_t)htotal * (uint64_t)vtotal;
	uint64_t clock = (px * (uint64_t)refresh_mhz + 500000) / 1000000;
	if (clock == 0 || clock > UINT32_MAX) {
		/* 0: below 500 Hz of pixels (a few pixels at about 1 Hz); a
		 * caller free to blank longer widens the line (wla_mode_cvt_exact). */
		return false;
	}
	*mode = (struct wla_mode){
		.width = width,
		.height = height,
		.clock_khz = (uint32_t)clock,
		.hsync_start = (uint16_t)hsync_start,
		.hsync_end = (uint16_t)hsync_end,
		.htotal = (uint16_t)htotal,
		.vsync_start = (uint16_t)vsync_start,
		.vsync_end = (uint16_t)vsync_end,
		.vtotal = (uint16_t)vtotal,
		.flags = reduced ? WLA_MODE_FLAG_PHSYNC | WLA_MODE_FLAG_NVSYNC :
			WLA_MODE_FLAG_NHSYNC | WLA_MODE_FLAG_PVSYNC,
	};
	wla_mode_update_refresh(mode);
	return true;
}

/* As drm_mode_vrefresh: pixels per vblank (a doublescanned line counts
 * twice) and the pixel clock per field (two fields per interlaced frame). */
static uint64_t pixels_per_vblank(const struct wla_mode *mode)
{
	uint64_t px = (uint64_t)mode->htotal * mode->vtotal;
	return (mode->flags & WLA_MODE_FLAG_DBLSCAN) ? px * 2 : px;
}

static uint64_t field_clock_khz(const struct wla_mode *mode)
{
	uint64_t clock = mode->clock_khz;
	return (mode->flags & WLA_MODE_FLAG_INTERLACE) ? clock * 2 : clock;
}

void wla_mode_update_refresh(struct wla_mode *mode)
{
	uint64_t px = pixels_per_vblank(mode);
	if (px == 0) {
		mode->refresh_mhz = 0;
		return;
	}
	uint64_t mhz = (field_clock_khz(mode) * 1000000 + px / 2) / px;
	mode->refresh_mhz = mhz > INT32_MAX ? INT32_MAX : (int32_t)mhz;
}

bool wla_mode_valid(const struct wla_mode *mode, const char **why)
{
	struct wla_mode derived = *mode;
	wla_mode_update_refresh(&derived);
	const char *w = NULL;
	if (mode->width <= 0 || mode->height <= 0) {
		w = "the size is not positive";
	} else if (mode->hsync_start < mode->width || mode->hsync_end < mode->hsync_start ||
			mode->htotal < mode->hsync_end || mode->htotal == 0) {
		w = "the horizontal timing is not display <= sync start <= sync end <= total";
	} else if (mode->vsync_start < mode->height || mode->vsync_end < mode->vsync_start ||
			mode->vtotal < mode->vsync_end || mode->vtotal == 0) {
		w = "the vertical timing is not display <= sync start <= sync end <= total";
	} else if (mode->clock_khz == 0) {
		w = "the pixel clock is 0";
	} else if (derived.refresh_mhz != mode->refresh_mhz) {
		w = "the refresh rate is not the timing's";
	} else if (mode->refresh_mhz < WLA_MODE_MIN_REFRESH_MHZ) {
		w = "the refresh is below 1 Hz";
	}
	if (why) {
		*why = w;
	}
	return w == NULL;
}

bool wla_mode_equal(const struct wla_mode *a, const struct wla_mode *b)
{
	return a->width == b->width && a->height == b->height &&
		a->refresh_mhz == b->refresh_mhz && a->clock_khz == b->clock_khz &&
		a->hsync_start == b->hsync_start && a->hsync_end == b->hsync_end &&
		a->htotal == b->htotal && a->vsync_start == b->vsync_start &&
		a->vsync_end == b->vsync_end && a->vtotal == b->vtotal && a->flags == b->flags;
}

void wla_mode_period(const struct wla_mode *mode, uint64_t *num, uint64_t *den)
{
	*num = pixels_per_vblank(mode) * UINT64_C(1000000);
	*den = field_clock_khz(mode);
}

uint64_t wla_mode_period_ns(const struct wla_mode *mode)
{
	uint64_t num, den;
	wla_mode_period(mode, &num, &den);
	return den ? (num + den / 2) / den : 0;
}

const char *wla_mode_describe(const struct wla_mode *mode, char *buf, size_t size)
{
	snprintf(buf, size, "%" PRId32 "x%" PRId32 "@%" PRId32 ".%03" PRId32 " %" PRIu32
		"kHz %u %u %u %u %u %u %chsync %cvsync", mode->width, mode->height,
		mode->refresh_mhz / 1000, mode->refresh_mhz % 1000, mode->clock_khz,
		mode->hsync_start, mode->hsync_end, mode->htotal, mode->vsync_start, mode->vsync_end,
		mode->vtotal, (mode->flags & WLA_MODE_FLAG_PHSYNC) ? '+' : '-',
		(mode->flags & WLA_MODE_FLAG_PVSYNC) ? '+' : '-');
	return buf;
}

bool wla_mode_cvt_exact(struct wla_mode *mode, int32_t width, int32_t height,
	int32_t refresh_mhz)
{
	if (!wla_mode_cvt(mode, width, height, refresh_mhz, false)) {
		/* A mode too small for a 1 kHz clock at its rate (1x1@1):
		 * CVT's blanking at 1 kHz, the line widened below. */
		if (!wla_mode_cvt(mode, width, height, WLA_MODE_MAX_REFRESH_MHZ, false)) {
			return false;
		}
		mode->clock_khz = 1;
		wla_mode_update_refresh(mode);
	}
	/* A kHz pixel clock steps the refresh by 1e6 / (htotal * vtotal) mHz:
	 * more than 1 mHz for small modes: the line widens until the rate
	 * comes out to the mHz. */
	struct wla_mode m = *mode;
	while (m.refresh_mhz != refresh_mhz && m.htotal < UINT16_MAX) {
		m.htotal++;
		uint64_t px = (uint64_t)m.htotal * m.vtotal;
		m.clock_khz = (uint32_t)((px * (uint64_t)refresh_mhz + 500000) / 1000000);
		wla_mode_update_refresh(&m);
	}
	if (m.refresh_mhz == refresh_mhz) {
		*mode = m;
	}
	return true;
}
