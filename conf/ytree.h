/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to conf/: a YAML document as a tree with positions, and diagnostics. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Deepest collection nesting accepted; the config itself needs 5. */
#define YTREE_MAX_DEPTH 32

/* A source file as shown in messages. */
struct ysrc {
	char *name;   /* owned */
	unsigned idx; /* messages are sorted by file first: 0 main, 1 include */
};

enum ynode_type { YNODE_SCALAR, YNODE_SEQ, YNODE_MAP };

struct ynode {
	uint8_t type;  /* enum ynode_type */
	bool plain;    /* scalar written without quotes (so it may be a null) */
	uint32_t line; /* 1-based */
	uint32_t col;  /* 1-based */
	const struct ysrc *src;
	size_t n; /* scalar: length; seq: items; map: pairs */
	union {
		char *str;           /* scalar, NUL-terminated */
		struct ynode **kids; /* seq: n items; map: key,value,key,value... */
	} u;
};

/* One parsed document; every node lives in its arena. */
struct ydoc {
	struct ysrc src;
	struct ynode *root;       /* NULL for an empty stream */
	struct yarena_block *mem; /* arena blocks */
};

/* One diagnostic, kept until conf_diag_flush() so output is in file order. */
struct ydiag_msg {
	unsigned src, line, col, seq;
	char *text; /* the whole line without '\n' */
};

/* Collected errors and warnings. */
struct ydiag {
	FILE *out; /* may be NULL */
	unsigned nerrors, nwarnings;
	bool oom;  /* a message was lost to ENOMEM */
	size_t n, cap;
	struct ydiag_msg *msgs;
};

/**
 * Parse text into doc. Syntax problems, aliases, a second document, too
 * deep nesting and NUL bytes in scalars are reported to d.
 * @param name copied into doc->src.name for messages.
 * @return 0 (doc filled, possibly with errors counted in d, free with
 *         conf_ydoc_free), CONF_E_YAML (not well-formed; doc empty), -ENOMEM.
 */
int conf_ydoc_parse(struct ydoc *doc, const char *text, size_t len, const char *name, unsigned idx,
                    struct ydiag *d);
void conf_ydoc_free(struct ydoc *doc);

/** A plain empty, "~" or "null" scalar (an absent value in YAML terms); true for NULL. */
bool conf_ynode_is_null(const struct ynode *n);

/** Value of key in map n (the last one if repeated), or NULL. */
const struct ynode *conf_ynode_get(const struct ynode *n, const char *key);

/** For messages: "an empty value" (null), "a scalar", "a list", "a mapping". */
const char *conf_ynode_kind(const struct ynode *n);

/**
 * Record a diagnostic: "FILE:LINE:COL: error: WHAT (key 'K', value 'V')".
 * @param src, line, col position; src NULL gives "file: error: ..." with no
 *        position (line/col ignored), file then is nofile.
 * @param key NULL or "" for none; value NULL for none (escaped and cut here).
 */
void conf_diag_add(struct ydiag *d, bool error, const struct ysrc *src, unsigned line, unsigned col,
                   const char *nofile, const char *key, const char *value, const char *fmt,
                   va_list ap) __attribute__((format(printf, 9, 0)));

/** As conf_diag_add at node n (n NULL: no position). */
void conf_diag_node(struct ydiag *d, bool error, const struct ynode *n, const char *nofile,
                    const char *key, const char *value, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/** Sort by file, line, column, then arrival; print to d->out; free the messages. */
void conf_diag_flush(struct ydiag *d);

/** Append text to buf (of size) at *len, control bytes as \xHH; cut with "..." past max bytes. */
void conf_diag_escape(char *buf, size_t size, size_t *len, const char *text, size_t max);
