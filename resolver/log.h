/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging to stderr with a level; safe from any thread. */
#pragma once

enum log_level { LOG_ERR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/** Messages above level are dropped. Default LOG_INFO. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) \
	do { \
		if (log_get_level() >= LOG_DEBUG) \
			log_msg(LOG_DEBUG, __VA_ARGS__); \
	} while (0)
