/*
 * Gamma LUTs of CRTCs: made once from a compositor's ramps (wlroots'
 * wlr_output_set_gamma, a gamma-control client), shared by every state
 * that keeps them, and applied the way a display's LUT applies them: an
 * input value picks a position along the ramp, interpolated between the two
 * entries around it.
 */
#include <stdlib.h>
#include <string.h>
#include "backend/atomic.h"

struct wla_gamma_lut *wla_gamma_lut_create(uint32_t size, const uint16_t *r,
	const uint16_t *g, const uint16_t *b)
{
	if (size == 0 || size > (UINT32_MAX - sizeof(struct wla_gamma_lut)) / 6) {
		return NULL;
	}
	struct wla_gamma_lut *lut = malloc(sizeof(*lut) + (size_t)size * 3 * sizeof(uint16_t));
	if (!lut) {
		return NULL;
	}
	lut->refs = 1;
	lut->size = size;
	lut->r = (uint16_t *)(lut + 1);
	lut->g = lut->r + size;
	lut->b = lut->g + size;
	memcpy(lut->r, r, size * sizeof(uint16_t));
	memcpy(lut->g, g, size * sizeof(uint16_t));
	memcpy(lut->b, b, size * sizeof(uint16_t));
	return lut;
}

struct wla_gamma_lut *wla_gamma_lut_get(struct wla_gamma_lut *lut)
{
	if (lut) {
		lut->refs++;
	}
	return lut;
}

void wla_gamma_lut_put(struct wla_gamma_lut *lut)
{
	if (lut && --lut->refs == 0) {
		free(lut);
	}
}

bool wla_gamma_lut_equal(const struct wla_gamma_lut *a, const struct wla_gamma_lut *b)
{
	if (a == b) {
		return true;
	}
	if (!a || !b || a->size != b->size) {
		return false;
	}
	/* The three ramps are contiguous. */
	return memcmp(a->r, b->r, (size_t)a->size * 3 * sizeof(uint16_t)) == 0;
}

uint8_t wla_gamma_apply(const uint16_t *ramp, uint32_t size, uint8_t value)
{
	if (size == 1) {
		return (uint8_t)(((uint32_t)ramp[0] * 255 + 32767) / 65535);
	}
	/* The position value / 255 * (size - 1), in 1/255ths of an entry. */
	uint64_t pos = (uint64_t)value * (size - 1);
	uint64_t i = pos / 255, frac = pos % 255;
	uint64_t lo = ramp[i], hi = i + 1 < size ? ramp[i + 1] : ramp[i];
	uint64_t v16 = (lo * (255 - frac) + hi * frac + 127) / 255;
	return (uint8_t)((v16 * 255 + 32767) / 65535);
}
