/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This file is private to resolver/. Partitions failed over to their
 * standby identity (partdnsctl partition failover): while one is, its
 * flagged queries carry the standby's ECS instead of its own mapped
 * address. Built from the store's records and the running plan; immutable,
 * part of a snapshot.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "conf/conf.h"
#include "store/store.h"
#include "mapping/ecs.h"

struct standby;

/**
 * The failovers of list that mean something in c: the partition exists and
 * its target (the record's, else the partition's standby key) is a
 * partition of c with a mapped identity, or an address. Others are left
 * out, each with a warning on the log.
 * @return the set (possibly empty), or NULL (out of memory).
 */
struct standby *standby_build(const struct conf *c, const struct store_standby *list, size_t n);
void standby_free(struct standby *s);

/**
 * The ECS partition id sends while failed over, for a client of family.
 * s may be NULL (nothing failed over).
 * @return true (and *out), or false: the partition sends its own.
 */
bool standby_ecs(const struct standby *s, unsigned id, int family, struct ecs *out);

/** Is id failed over, and to what (the target's text)? s may be NULL. */
bool standby_active(const struct standby *s, unsigned id, const char **to);

/** Does partition ia of a send what ib of b sends: both off, or both to the same identities? */
bool standby_same(const struct standby *a, unsigned ia, const struct standby *b, unsigned ib);

/** How many partitions are failed over. */
size_t standby_count(const struct standby *s);
