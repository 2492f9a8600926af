/* SPDX-License-Identifier: BSD-3-Clause */
/* The loader's errors and warnings: at a node, with the current key path. */
#include "conf/report.h"

#include <stdarg.h>
#include <stdio.h>

#include "conf/state.h"
#include "conf/ytree.h"

static void loader_report(struct loader *L, bool error, const struct ynode *n, bool with_value,
                          const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));
static void loader_report(struct loader *L, bool error, const struct ynode *n, bool with_value,
                          const char *fmt, va_list ap)
{
	const char *value = NULL;
	if (with_value && n != NULL && n->type == YNODE_SCALAR)
		value = n->u.str;
	if (n != NULL)
		conf_diag_add(&L->diag, error, n->src, n->line, n->col, L->name, L->key, value, fmt,
		              ap);
	else
		conf_diag_add(&L->diag, error, NULL, 0, 0, L->name, L->key, value, fmt, ap);
}

void conf_error(struct loader *L, const struct ynode *n, bool with_value, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	loader_report(L, true, n, with_value, fmt, ap);
	va_end(ap);
}

void conf_warning(struct loader *L, const struct ynode *n, bool with_value, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	loader_report(L, false, n, with_value, fmt, ap);
	va_end(ap);
}

/* Longest single key shown in a path. */
#define KEY_PART_MAX 48

size_t conf_key_push(struct loader *L, const char *name)
{
	size_t saved = L->keylen;
	if (L->keylen > 0 && L->keylen + 1 < sizeof(L->key))
		L->key[L->keylen++] = '.';
	conf_diag_escape(L->key, sizeof(L->key), &L->keylen, name, KEY_PART_MAX);
	L->key[L->keylen] = '\0';
	return saved;
}

size_t conf_key_index(struct loader *L, size_t i)
{
	size_t saved = L->keylen;
	int w = snprintf(L->key + L->keylen, sizeof(L->key) - L->keylen, "[%zu]", i);
	if (w > 0)
		L->keylen = L->keylen + (size_t)w < sizeof(L->key) ? L->keylen + (size_t)w
		                                                   : sizeof(L->key) - 1;
	return saved;
}

void conf_key_pop(struct loader *L, size_t len)
{
	L->keylen = len;
	L->key[len] = '\0';
}

void conf_key_set(struct loader *L, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(L->key, sizeof(L->key), fmt, ap);
	va_end(ap);
	L->keylen = w < 0 ? 0 : (size_t)w < sizeof(L->key) ? (size_t)w : sizeof(L->key) - 1;
	L->key[L->keylen] = '\0';
}
