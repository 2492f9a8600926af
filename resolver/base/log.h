/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging to stderr or syslog with a level; safe from any thread. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum log_level { LOG_LEVEL_ERR = 0, LOG_LEVEL_WARN = 1, LOG_LEVEL_INFO = 2, LOG_LEVEL_DEBUG = 3 };

/** Messages above level are dropped. Default LOG_LEVEL_INFO. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/** Send every line to syslog (facility daemon, ident "partdns") instead of stderr, or back. */
void log_use_syslog(bool on);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A per-call-site budget for messages outside traffic can trigger at will
 * (one per failed resolution): at most LOG_LIMIT_PER_SEC a second, then
 * one line saying how many were left out.
 */
#define LOG_LIMIT_PER_SEC 10
struct log_limit {
	_Atomic uint64_t second;
	atomic_uint count, dropped;
};
void log_limited(struct log_limit *lim, enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_err(...) log_msg(LOG_LEVEL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) \
	do { \
		if (log_get_level() >= LOG_LEVEL_DEBUG) \
			log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__); \
	} while (0)
/* a rate-limited line from this call site */
#define log_info_limited(...) \
	do { \
		static struct log_limit log_site_; \
		if (log_get_level() >= LOG_LEVEL_INFO) \
			log_limited(&log_site_, LOG_LEVEL_INFO, __VA_ARGS__); \
	} while (0)
