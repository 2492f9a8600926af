/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to wire/. Writing messages: the encoder with our own name compression, RDATA
 * re-encoded (or checked where a layout is kept), our OPT record. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mapping/ecs.h"
#include "wire/parse.h"
#include "wire/wire.h"

/* Compression table of the encoder: open addressing, power of two. */
#define CTAB_SIZE 2048

/* The encoder: the message being written and the names in it that later names may point to. */
struct wire_enc {
	size_t len;
	unsigned used;
	uint32_t hash[CTAB_SIZE];
	uint16_t off[CTAB_SIZE]; /* 0 = empty: no name starts inside the header */
	uint8_t buf[WIRE_MAX_MSG];
};

/* prepare_one's (answer.c) answer when adopting: the layout does not allow it (re-encode instead) */
#define PREPARE_NO_ADOPT 1

/* The calling thread's encoder, emptied; never NULL. */
struct wire_enc *wire_enc_new(void);

/* The encoder is done with (it stays with its thread). */
void wire_enc_free(struct wire_enc *e);

/* A finished message: a malloc'd copy in *out (the encoder is released either way). @return rc, or -ENOMEM. */
int wire_enc_finish(struct wire_enc *e, int rc, uint8_t **out, size_t *out_len);

/* Append n bytes; messages are capped at 65535 bytes. @return 0 or WIRE_E_FORMERR. */
int wire_enc_put(struct wire_enc *e, const void *p, size_t n);

/* Append a 16-bit field. */
int wire_enc_u16(struct wire_enc *e, uint16_t v);

/* Write a valid uncompressed name; with compress, its longest suffix already written becomes a pointer. */
int wire_enc_name(struct wire_enc *e, const uint8_t *name, size_t nlen, bool compress);

/* For a message whose layout is kept: mark the labels of the name at pos; false when its pointer goes elsewhere. */
bool wire_mark_name(const uint8_t *pkt, size_t pos, uint8_t *marks);

/* Re-encode rr's RDATA (RDLENGTH included) from pkt; with e NULL only check it (PREPARE_NO_ADOPT). */
int wire_enc_rdata(struct wire_enc *e, uint8_t *marks, const uint8_t *pkt, const struct wire_raw_rr *rr);

/* Write one RR with the given TTL; *ttl_pos gets the TTL's offset in the output. */
int wire_enc_rr(struct wire_enc *e, const uint8_t *pkt, const struct wire_raw_rr *rr, const uint8_t *owner,
		uint32_t ttl, size_t *ttl_pos);

/* ---- our OPT record ---- */

/* Size of an EDE option (RFC 8914): INFO-CODE and EXTRA-TEXT. */
size_t wire_ede_size(const struct wire_ede *ede);

/* Size of our OPT record, with an ECS option when ecs != NULL and an EDE when ede != NULL. */
size_t wire_opt_rr_size(const struct ecs *ecs, const struct wire_ede *ede);

/* The UDP size our OPT in a reply to q advertises: server.max_udp_size, as set on q by the caller. */
uint16_t wire_reply_udp(const struct wire_query *q);

/* Write our OPT record advertising udp. @return its length, -ENOSPC or -EINVAL (bad ecs, EDE text too long). */
int wire_opt_write(uint8_t *p, size_t cap, uint16_t udp, uint8_t ext_rcode, bool do_bit, const struct ecs *ecs,
		   const struct wire_ede *ede);
