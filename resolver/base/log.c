/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging to stderr (one write() per line so threads don't interleave) or syslog. */
#include "resolver/base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static _Atomic int current_level = LOG_LEVEL_INFO;
static atomic_bool to_syslog;

void log_set_level(enum log_level level)
{
	atomic_store(&current_level, (int)level);
}

enum log_level log_get_level(void)
{
	return (enum log_level)atomic_load_explicit(&current_level, memory_order_relaxed);
}

void log_use_syslog(bool on)
{
	if (on && !atomic_load(&to_syslog))
		openlog("partdns", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	atomic_store(&to_syslog, on);
}

static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	static const char *names[] = { "error", "warning", "info", "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char line[1024];
	int n = 0;
	bool sys = atomic_load_explicit(&to_syslog, memory_order_relaxed);
	if (!sys) { /* syslog stamps time, name and pid itself */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		struct tm tm;
		gmtime_r(&ts.tv_sec, &tm);
		n = (int)strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%SZ ", &tm);
		n += snprintf(line + n, sizeof(line) - (size_t)n, "partdns[%d]: ", (int)getpid());
	}
	n += snprintf(line + n, sizeof(line) - (size_t)n, "%s: ", names[level]);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	if (sys) {
		line[len] = '\0';
		syslog(prio[level], "%s", line);
		return;
	}
	line[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, len);
	(void)w;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (level > log_get_level())
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void log_limited(struct log_limit *lim, enum log_level level, const char *fmt, ...)
{
	if (level > log_get_level())
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	uint64_t now = (uint64_t)ts.tv_sec, seen = atomic_load_explicit(&lim->second, memory_order_relaxed);
	if (seen != now && atomic_compare_exchange_strong(&lim->second, &seen, now)) {
		/* a new second: say what the last busy one left out (threads racing here only blur the count) */
		atomic_store(&lim->count, 0);
		unsigned dropped = atomic_exchange(&lim->dropped, 0);
		if (dropped > 0)
			log_msg(level, "... and %u more like it in one second, not logged", dropped);
	}
	if (atomic_fetch_add_explicit(&lim->count, 1, memory_order_relaxed) >= LOG_LIMIT_PER_SEC) {
		atomic_fetch_add_explicit(&lim->dropped, 1, memory_order_relaxed);
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}
