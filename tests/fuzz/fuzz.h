/*
 * Shared by the fuzz targets: reading an input as a stream of fields, checks
 * that abort (so that libFuzzer and the replay test both see a failure), a
 * log callback that counts error lines, and a file for the APIs that take a
 * path.
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wlr/util/log.h>
#include "backend/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant: print what broke and abort, whatever the build. */
#define FUZZ_CHECK(cond, ...) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: invariant '%s' broken: ", __FILE__, __LINE__, \
				#cond); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
			abort(); \
		} \
	} while (0)

/* The input as a stream; reads past its end give zeros. */
struct fuzz_input {
	const uint8_t *data;
	size_t size, pos;
};

static inline bool fuzz_done(const struct fuzz_input *in)
{
	return in->pos >= in->size;
}

static inline uint8_t fuzz_u8(struct fuzz_input *in)
{
	return in->pos < in->size ? in->data[in->pos++] : 0;
}

static inline uint16_t fuzz_u16(struct fuzz_input *in)
{
	uint16_t lo = fuzz_u8(in);
	return (uint16_t)(lo | (uint16_t)fuzz_u8(in) << 8);
}

static inline uint32_t fuzz_u32(struct fuzz_input *in)
{
	uint32_t lo = fuzz_u16(in);
	return lo | (uint32_t)fuzz_u16(in) << 16;
}

/* Error lines logged since the last fuzz_log_clear(). */
static int fuzz_log_errors;
static bool fuzz_verbose;

static inline void fuzz_log_clear(void)
{
	fuzz_log_errors = 0;
}

__attribute__((format(printf, 2, 0)))
static inline void fuzz_log_func(enum wlr_log_importance importance, const char *fmt,
	va_list args)
{
	if (importance == WLR_ERROR) {
		fuzz_log_errors++;
	}
	if (fuzz_verbose) {
		fprintf(stderr, "log: ");
		vfprintf(stderr, fmt, args);
		fputc('\n', stderr);
	}
}

/* The atomic core's own log function (backend/log.h) counts the same. */
__attribute__((format(printf, 2, 0)))
static inline void fuzz_core_log_func(enum wla_log_level level, const char *fmt,
	va_list args)
{
	fuzz_log_func((enum wlr_log_importance)level, fmt, args);
}

/* Quiet unless FUZZ_VERBOSE is set, which also shows the targets' traces. */
static inline void fuzz_init(void)
{
	static bool done;
	if (done) {
		return;
	}
	done = true;
	fuzz_verbose = getenv("FUZZ_VERBOSE") != NULL;
	wlr_log_init(fuzz_verbose ? WLR_DEBUG : WLR_ERROR, fuzz_log_func);
	wla_log_set_func(fuzz_core_log_func);
}

#define FUZZ_TRACE(...) \
	do { \
		if (fuzz_verbose) { \
			fprintf(stderr, __VA_ARGS__); \
		} \
	} while (0)

/*
 * One unlinked temporary file per process, named /proc/self/fd/N, rewritten
 * with each input: nothing is left behind and no path of the input's choosing
 * is ever opened. Returns its path; aborts if there is no temporary file.
 */
static inline const char *fuzz_file(const void *data, size_t size)
{
	static int fd = -1;
	static char path[32];
	if (fd < 0) {
		char tmpl[] = "/tmp/wla-fuzz-XXXXXX";
		fd = mkstemp(tmpl);
		FUZZ_CHECK(fd >= 0, "cannot create a temporary file");
		unlink(tmpl);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	FUZZ_CHECK(ftruncate(fd, 0) == 0, "cannot truncate the temporary file");
	FUZZ_CHECK(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size,
		"cannot write the temporary file");
	return path;
}

#endif
