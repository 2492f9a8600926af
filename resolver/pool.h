/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The two resolution pools: normal (libunbound) and EDNS (ECS-bearing). */
#pragma once

#include "resolver/core.h"

struct pool_normal;
struct pool_edns;

/** One thread driving an asynchronous libunbound context. @return NULL on error (logged). */
struct pool_normal *pool_normal_new(struct server *srv, const struct conf *c);
int pool_normal_start(struct pool_normal *p);
void pool_normal_join(struct pool_normal *p);
void pool_normal_free(struct pool_normal *p);
/** Queue a job. @return 0 or -EBUSY (over the in-flight cap: caller fails the job). */
int pool_normal_submit(struct pool_normal *p, struct job *job);
struct counters *pool_normal_counters(struct pool_normal *p);
unsigned pool_normal_inflight(struct pool_normal *p);

/** edns.threads threads, each with its own sockets and libunbound context for zone cuts. */
struct pool_edns *pool_edns_new(struct server *srv, const struct conf *c);
int pool_edns_start(struct pool_edns *p);
void pool_edns_join(struct pool_edns *p);
void pool_edns_free(struct pool_edns *p);
/** @return 0 or -EBUSY (edns.max_inflight reached). */
int pool_edns_submit(struct pool_edns *p, struct job *job);
/** Sum of the pool threads' counters into out (plain adds). */
void pool_edns_counters(struct pool_edns *p, uint64_t *out, size_t n);
unsigned pool_edns_inflight(struct pool_edns *p);
