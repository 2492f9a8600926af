/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. Monotonic time, the only clock the daemon's logic reads. */
#pragma once

#include <stdint.h>
#include <time.h>

/** Monotonic nanoseconds (deadlines, latencies). */
static inline uint64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** Monotonic seconds, coarse (cache ages: a vDSO read without a syscall). */
static inline uint32_t clock_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)ts.tv_sec;
}

/** Monotonic nanoseconds, coarse (a few ms): rates on the hit path, without a syscall. */
static inline uint64_t clock_coarse_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
