/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging to stderr: one write() per line so threads don't interleave. */
#include "resolver/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int current_level = LOG_INFO;

void log_set_level(enum log_level level)
{
	atomic_store(&current_level, (int)level);
}

enum log_level log_get_level(void)
{
	return (enum log_level)atomic_load_explicit(&current_level, memory_order_relaxed);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *names[] = { "error", "warning", "info", "debug" };
	if (level > log_get_level())
		return;
	char line[1024];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	int n = (int)strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%SZ ", &tm);
	n += snprintf(line + n, sizeof(line) - (size_t)n, "partdns[%d]: %s: ", (int)getpid(),
	              names[level]);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, len);
	(void)w;
}
