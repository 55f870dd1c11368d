/*
 * Where the atomic core's log lines go (include/backend/log.h).
 */
#include <stdio.h>
#include "backend/log.h"

static wla_log_func_t log_func;

void wla_log_set_func(wla_log_func_t func)
{
	log_func = func;
}

void _wla_log(enum wla_log_level level, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	if (log_func) {
		log_func(level, fmt, args);
	} else if (level <= WLA_LOG_ERROR && level > WLA_LOG_SILENT) {
		vfprintf(stderr, fmt, args);
		fputc('\n', stderr);
	}
	va_end(args);
}
