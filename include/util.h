#ifndef UTIL_H
#define UTIL_H

/* Marks a function that the shared library exports. */
#define WLA_EXPORT __attribute__((visibility("default")))

#define WLA_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* A whole decimal number min..max and nothing else (options of our
 * programs). */
static inline bool wla_parse_long(const char *str, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long value = strtol(str, &end, 10);
	if (errno != 0 || end == str || *end != '\0' || value < min || value > max) {
		return false;
	}
	*out = value;
	return true;
}

static inline struct timespec wla_timespec_from_ns(uint64_t ns)
{
	return (struct timespec){
		.tv_sec = (time_t)(ns / UINT64_C(1000000000)),
		.tv_nsec = (long)(ns % UINT64_C(1000000000)),
	};
}

static inline uint64_t wla_timespec_to_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * UINT64_C(1000000000) + (uint64_t)ts->tv_nsec;
}

/*
 * A DRM fourcc's characters for log lines and replies ("XR24"; pad spaces
 * of short codes dropped, "R8"; a '?' for a byte that is not printable).
 * The one fourcc printer of the project.
 */
static inline const char *wla_fourcc_str(uint32_t fourcc, char buf[static 5])
{
	int len = 4;
	for (int i = 0; i < 4; i++) {
		char c = (char)((fourcc >> (8 * i)) & 0xff);
		buf[i] = c >= 0x20 && c < 0x7f ? c : '?';
	}
	while (len > 1 && buf[len - 1] == ' ') {
		len--;
	}
	buf[len] = '\0';
	return buf;
}

#endif
