/*
 * The atomic core's own log function, so that backend/atomic needs nothing
 * of wlroots: its lines go to whoever set a log function (the wlroots glue
 * routes them to wlr_log, tests to their harness), else errors to stderr.
 * The levels have wlr_log_importance's values.
 */
#ifndef BACKEND_LOG_H
#define BACKEND_LOG_H

#include <stdarg.h>

enum wla_log_level {
	WLA_LOG_SILENT = 0,
	WLA_LOG_ERROR = 1,
	WLA_LOG_INFO = 2,
	WLA_LOG_DEBUG = 3,
};

typedef void (*wla_log_func_t)(enum wla_log_level level, const char *fmt, va_list args);

/* Where the core's lines go from now on; NULL: errors to stderr. */
void wla_log_set_func(wla_log_func_t func);

__attribute__((format(printf, 2, 3)))
void _wla_log(enum wla_log_level level, const char *fmt, ...);

/* A line of the core: "[file:line] " and the message, as wlr_log has it. */
#define wla_log(level, fmt, ...) \
	_wla_log(level, "[%s:%d] " fmt, __FILE__, __LINE__, ##__VA_ARGS__)

/* A line about one object, named first as every line of the core names
 * it (as wlroots' wlr_drm_conn_log does for its connectors). */
#define wla_dev_log(dev, level, fmt, ...) \
	wla_log(level, "device %s: " fmt, (dev)->name, ##__VA_ARGS__)
#define wla_crtc_log(crtc, level, fmt, ...) \
	wla_log(level, "%s: " fmt, (crtc)->name, ##__VA_ARGS__)
#define wla_plane_log(plane, level, fmt, ...) \
	wla_log(level, "plane %s: " fmt, (plane)->name, ##__VA_ARGS__)
#define wla_conn_log(conn, level, fmt, ...) \
	wla_log(level, "connector %s: " fmt, (conn)->name, ##__VA_ARGS__)

#endif
