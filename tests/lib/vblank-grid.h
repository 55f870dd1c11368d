/*
 * The vblank grid a timing must follow, computed here on its own so that the
 * tests do not share the VDC's arithmetic: vblank k of a timing at
 * refresh_mhz that started at epoch (vblank 0) is at
 * epoch + round(k * 1e12 / refresh_mhz) ns, the exact rate rounded to the
 * nanosecond once, never k times a rounded period. At 60 Hz: +16666667,
 * +33333333, +50000000, ...
 *
 * Shared by the unit tests (through tests/ on the include path) and the
 * queue tests.
 */
#ifndef TESTS_QUEUE_VBLANK_GRID_H
#define TESTS_QUEUE_VBLANK_GRID_H

#include <stdint.h>

/* ns per second times mHz per Hz */
#define VBLANK_GRID_NS_MHZ UINT64_C(1000000000000)

/* The time of vblank k (ties round up). */
static inline uint64_t vblank_grid_ns(uint64_t epoch, int32_t refresh_mhz, uint64_t k)
{
	unsigned __int128 r = (uint32_t)refresh_mhz;
	return epoch + (uint64_t)(((unsigned __int128)k * VBLANK_GRID_NS_MHZ + r / 2) / r);
}

/*
 * How many vblanks (k >= 1) have happened at t: the largest k with
 * vblank_grid_ns(k) <= t, 0 before vblank 1. Solved for k from the rounding
 * above: k * 1e12 + r / 2 < (d + 1) * r with d = t - epoch.
 *
 * This is floor(d * r / 1e12), the count of the exact instants, except from
 * a vblank whose time rounded down to the nanosecond before its exact
 * instant: there the vblank has happened on the clock, one more than the
 * floor (59.94 Hz vblank 1 is at +16683350 ns, truly at +16683350.017).
 */
static inline uint64_t vblank_grid_count(uint64_t epoch, int32_t refresh_mhz, uint64_t t)
{
	if (t < epoch) {
		return 0;
	}
	unsigned __int128 r = (uint32_t)refresh_mhz, d = t - epoch;
	return (uint64_t)(((d + 1) * r - r / 2 - 1) / VBLANK_GRID_NS_MHZ);
}

/* The first vblank after t. */
static inline uint64_t vblank_grid_next(uint64_t epoch, int32_t refresh_mhz, uint64_t t)
{
	return vblank_grid_ns(epoch, refresh_mhz, vblank_grid_count(epoch, refresh_mhz, t) + 1);
}

#endif
