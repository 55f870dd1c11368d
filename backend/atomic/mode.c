/* Placeholder until the CVT implementation lands. */
#include <stdio.h>
#include "backend/mode.h"

bool wla_mode_cvt(struct wla_mode *mode, int32_t width, int32_t height, int32_t refresh_mhz,
	bool reduced)
{
	if (width <= 0 || height <= 0 || refresh_mhz <= 0 || width > 60000 || height > 60000) {
		return false;
	}
	*mode = (struct wla_mode){ .width = width, .height = height };
	mode->htotal = (uint16_t)(width + 160);
	mode->hsync_start = (uint16_t)(width + 48);
	mode->hsync_end = (uint16_t)(width + 80);
	mode->vtotal = (uint16_t)(height + 40);
	mode->vsync_start = (uint16_t)(height + 3);
	mode->vsync_end = (uint16_t)(height + 8);
	uint64_t px = (uint64_t)mode->htotal * mode->vtotal;
	mode->clock_khz = (uint32_t)((px * (uint64_t)refresh_mhz + 500000) / 1000000);
	wla_mode_update_refresh(mode);
	return mode->clock_khz > 0;
}

void wla_mode_update_refresh(struct wla_mode *mode)
{
	uint64_t px = (uint64_t)mode->htotal * mode->vtotal;
	mode->refresh_mhz = px ? (int32_t)(((uint64_t)mode->clock_khz * 1000000 + px / 2) / px) : 0;
}

bool wla_mode_valid(const struct wla_mode *mode, const char **why)
{
	*why = NULL;
	if (mode->width <= 0 || mode->height <= 0) {
		*why = "size";
	} else if (!mode->clock_khz || mode->htotal < mode->width || mode->vtotal < mode->height) {
		*why = "timing";
	} else if (mode->refresh_mhz < WLA_MODE_MIN_REFRESH_MHZ) {
		*why = "refresh below 1 Hz";
	}
	return *why == NULL;
}

bool wla_mode_equal(const struct wla_mode *a, const struct wla_mode *b)
{
	return a->width == b->width && a->height == b->height && a->clock_khz == b->clock_khz &&
		a->htotal == b->htotal && a->vtotal == b->vtotal && a->flags == b->flags &&
		a->hsync_start == b->hsync_start && a->hsync_end == b->hsync_end &&
		a->vsync_start == b->vsync_start && a->vsync_end == b->vsync_end &&
		a->refresh_mhz == b->refresh_mhz;
}

void wla_mode_period(const struct wla_mode *mode, uint64_t *num, uint64_t *den)
{
	*num = (uint64_t)mode->htotal * mode->vtotal * 1000000u;
	*den = mode->clock_khz;
}

uint64_t wla_mode_period_ns(const struct wla_mode *mode)
{
	uint64_t num, den;
	wla_mode_period(mode, &num, &den);
	return den ? (num + den / 2) / den : 0;
}

const char *wla_mode_describe(const struct wla_mode *mode, char *buf, size_t size)
{
	snprintf(buf, size, "%dx%d@%d.%03d", mode->width, mode->height, mode->refresh_mhz / 1000,
		mode->refresh_mhz % 1000);
	return buf;
}
