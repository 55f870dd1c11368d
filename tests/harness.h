/*
 * A tiny test harness: tests are functions, CHECK records a failure and goes
 * on, the log of the code under test is captured so that tests can assert on
 * error messages. Exit status: 0 all passed, 1 a failure, 77 skipped.
 */
#ifndef TESTS_HARNESS_H
#define TESTS_HARNESS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wlr/util/log.h>
#include "backend/log.h"

#define HARNESS_LOG_LINES 256
#define HARNESS_LOG_LEN 512

static int harness_failures;
static int harness_test_failures;
static char harness_log[HARNESS_LOG_LINES][HARNESS_LOG_LEN];
static int harness_log_n;
static bool harness_verbose;

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
			harness_test_failures++; \
		} \
	} while (0)

#define CHECK_INT(a, b) \
	do { \
		long long harness_a = (long long)(a), harness_b = (long long)(b); \
		if (harness_a != harness_b) { \
			fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n", __FILE__, \
				__LINE__, #a, harness_a, #b, harness_b); \
			harness_test_failures++; \
		} \
	} while (0)

#define CHECK_PIXEL(got, want) \
	do { \
		unsigned harness_g = (unsigned)(got), harness_w = (unsigned)(want); \
		if (harness_g != harness_w) { \
			fprintf(stderr, "  %s:%d: %s == 0x%08x, expected 0x%08x\n", __FILE__, \
				__LINE__, #got, harness_g, harness_w); \
			harness_test_failures++; \
		} \
	} while (0)

/* True if an error or info line logged since the last harness_log_clear()
 * contains every one of the given substrings (NULL-terminated list). */
static inline bool harness_logged(const char *first, ...)
{
	for (int i = 0; i < harness_log_n; i++) {
		bool all = true;
		va_list ap;
		va_start(ap, first);
		for (const char *s = first; s; s = va_arg(ap, const char *)) {
			if (!strstr(harness_log[i], s)) {
				all = false;
			}
		}
		va_end(ap);
		if (all) {
			return true;
		}
	}
	return false;
}
#define LOGGED(...) harness_logged(__VA_ARGS__, (const char *)NULL)

#define CHECK_LOGGED(...) \
	do { \
		if (!LOGGED(__VA_ARGS__)) { \
			fprintf(stderr, "  %s:%d: no log line with " #__VA_ARGS__ "; log was:\n", \
				__FILE__, __LINE__); \
			for (int harness_i = 0; harness_i < harness_log_n; harness_i++) { \
				fprintf(stderr, "    | %s\n", harness_log[harness_i]); \
			} \
			harness_test_failures++; \
		} \
	} while (0)

static inline void harness_log_clear(void)
{
	harness_log_n = 0;
}

__attribute__((format(printf, 2, 0)))
static inline void harness_log_func(enum wlr_log_importance importance, const char *fmt,
	va_list args)
{
	char line[HARNESS_LOG_LEN];
	vsnprintf(line, sizeof(line), fmt, args);
	if (harness_verbose) {
		fprintf(stderr, "    log: %s\n", line);
	}
	if (importance > WLR_INFO) {
		return;
	}
	if (harness_log_n == HARNESS_LOG_LINES) {
		memmove(harness_log[0], harness_log[1], sizeof(harness_log[0]) * (HARNESS_LOG_LINES - 1));
		harness_log_n--;
	}
	snprintf(harness_log[harness_log_n++], HARNESS_LOG_LEN, "%s", line);
}

/* The atomic core logs through its own function (backend/log.h). */
__attribute__((format(printf, 2, 0)))
static inline void harness_core_log_func(enum wla_log_level level, const char *fmt,
	va_list args)
{
	harness_log_func((enum wlr_log_importance)level, fmt, args);
}

static inline void harness_init(void)
{
	harness_verbose = getenv("HARNESS_VERBOSE") != NULL;
	wlr_log_init(WLR_DEBUG, harness_log_func);
	wla_log_set_func(harness_core_log_func);
}

/*
 * Waiting on real time. A test that waits for something polls for it with a
 * deadline, never sleeps a fixed time and then checks. Every deadline is
 * multiplied by WLA_TEST_TIME_SCALE (a number > 0, default 1), which
 * sanitized builds and slow machines set, as the shell tests' wait_until
 * (tests/integration/lib.sh) does; a bad value fails the test.
 */
static inline double harness_time_scale(void)
{
	static double scale;
	if (scale == 0) {
		const char *text = getenv("WLA_TEST_TIME_SCALE");
		scale = 1;
		if (text && *text) {
			char *end;
			double v = strtod(text, &end);
			if (*end || !(v > 0) || v > 1e6) {
				fprintf(stderr, "FAIL: WLA_TEST_TIME_SCALE='%s': expected a number > 0\n",
					text);
				exit(1);
			}
			scale = v;
		}
	}
	return scale;
}

/* CLOCK_MONOTONIC in ns. */
static inline uint64_t harness_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* ms, scaled, in ns. */
static inline uint64_t harness_scaled_ns(uint64_t ms)
{
	return (uint64_t)((double)ms * 1e6 * harness_time_scale());
}

/*
 * HARNESS_WAIT_UNTIL(loop, cond, ms): dispatch the wl_event_loop loop (5 ms
 * at most at a time) until cond holds or ms times the scale have passed;
 * the value of cond then. The one way a C test waits on real time (the
 * caller includes wayland-server-core.h).
 */
#define HARNESS_WAIT_UNTIL(loop, cond, ms) \
	({ \
		uint64_t harness_end_ = harness_now_ns() + harness_scaled_ns(ms); \
		while (!(cond) && harness_now_ns() < harness_end_) { \
			wl_event_loop_dispatch((loop), 5); \
		} \
		(cond); \
	})

#define RUN_TEST(fn) \
	do { \
		harness_test_failures = 0; \
		harness_log_clear(); \
		fn(); \
		printf("%s %s\n", harness_test_failures ? "FAIL" : "ok  ", #fn); \
		fflush(stdout); \
		if (harness_test_failures) { \
			harness_failures++; \
		} \
	} while (0)

#define HARNESS_EXIT() return harness_failures ? 1 : 0

/* Exit as skipped, with the reason on stdout. */
static inline void harness_skip(const char *reason)
{
	printf("SKIP: %s\n", reason);
	exit(77);
}

#endif
