/* SPDX-License-Identifier: BSD-3-Clause */
/* YAML (libyaml events) to a positioned node tree, and the diagnostics list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "conf/conf.h"
#include "conf/ytree.h"
#include "util/vec.h"

/* Arena block: nodes and strings of one document are freed at once. */
struct yarena_block {
	struct yarena_block *next;
	size_t used, size;
	_Alignas(max_align_t) unsigned char data[];
};

#define YARENA_BLOCK (64 * 1024)

static void *arena_alloc(struct ydoc *doc, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	struct yarena_block *b = doc->mem;
	if (b == NULL || b->size - b->used < size) {
		size_t bs = size > YARENA_BLOCK ? size : YARENA_BLOCK;
		b = malloc(sizeof(*b) + bs);
		if (b == NULL)
			return NULL;
		b->used = 0;
		b->size = bs;
		b->next = doc->mem;
		doc->mem = b;
	}
	void *p = b->data + b->used;
	b->used += size;
	return p;
}

void conf_ydoc_free(struct ydoc *doc)
{
	if (doc == NULL)
		return;
	struct yarena_block *b = doc->mem;
	while (b != NULL) {
		struct yarena_block *next = b->next;
		free(b);
		b = next;
	}
	free(doc->src.name);
	memset(doc, 0, sizeof(*doc));
}

bool conf_ynode_is_null(const struct ynode *n)
{
	if (n == NULL)
		return true;
	if (n->type != YNODE_SCALAR || !n->plain)
		return false;
	const char *s = n->u.str;
	return n->n == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	       strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

const struct ynode *conf_ynode_get(const struct ynode *n, const char *key)
{
	if (n == NULL || n->type != YNODE_MAP)
		return NULL;
	const struct ynode *found = NULL;
	for (size_t i = 0; i < n->n; i++) {
		const struct ynode *k = n->u.kids[2 * i];
		if (k->type == YNODE_SCALAR && strcmp(k->u.str, key) == 0)
			found = n->u.kids[2 * i + 1];
	}
	return found;
}

const char *conf_ynode_kind(const struct ynode *n)
{
	if (conf_ynode_is_null(n))
		return "an empty value";
	switch (n->type) {
	case YNODE_SEQ:
		return "a list";
	case YNODE_MAP:
		return "a mapping";
	default:
		return "a scalar";
	}
}

/* Diagnostics. */

void conf_diag_escape(char *buf, size_t size, size_t *len, const char *text, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t l = *len;
	size_t i;
	for (i = 0; text[i] != '\0' && i < max; i++) {
		unsigned char ch = (unsigned char)text[i];
		if (ch < 0x20 || ch == 0x7f) {
			if (l + 4 < size) {
				buf[l++] = '\\';
				buf[l++] = 'x';
				buf[l++] = hex[ch >> 4];
				buf[l++] = hex[ch & 15];
			}
		} else if (l + 1 < size) {
			buf[l++] = (char)ch;
		}
	}
	if (text[i] != '\0')
		for (int k = 0; k < 3 && l + 1 < size; k++)
			buf[l++] = '.';
	if (size > 0)
		buf[l < size ? l : size - 1] = '\0';
	*len = l;
}

/* Longest value shown in a message. */
#define YDIAG_VALUE_MAX 80

void conf_diag_add(struct ydiag *d, bool error, const struct ysrc *src, unsigned line, unsigned col,
                   const char *nofile, const char *key, const char *value, const char *fmt,
                   va_list ap)
{
	if (error)
		d->nerrors++;
	else
		d->nwarnings++;

	char buf[1024];
	size_t len = 0;
	int w;
	if (src != NULL)
		w = snprintf(buf, sizeof(buf), "%s:%u:%u: %s: ", src->name, line, col,
		             error ? "error" : "warning");
	else
		w = snprintf(buf, sizeof(buf), "%s: %s: ", nofile ? nofile : "(config)",
		             error ? "error" : "warning");
	len = w < 0 ? 0 : (size_t)w < sizeof(buf) ? (size_t)w : sizeof(buf) - 1;
	w = vsnprintf(buf + len, sizeof(buf) - len, fmt, ap);
	if (w > 0)
		len = len + (size_t)w < sizeof(buf) ? len + (size_t)w : sizeof(buf) - 1;
	bool has_key = key != NULL && key[0] != '\0';
	if (has_key || value != NULL) {
		const char *sep = " (";
		if (has_key) {
			w = snprintf(buf + len, sizeof(buf) - len, "%skey '%s'", sep, key);
			if (w > 0)
				len = len + (size_t)w < sizeof(buf) ? len + (size_t)w
				                                    : sizeof(buf) - 1;
			sep = ", ";
		}
		if (value != NULL) {
			w = snprintf(buf + len, sizeof(buf) - len, "%svalue '", sep);
			if (w > 0)
				len = len + (size_t)w < sizeof(buf) ? len + (size_t)w
				                                    : sizeof(buf) - 1;
			conf_diag_escape(buf, sizeof(buf), &len, value, YDIAG_VALUE_MAX);
			if (len + 1 < sizeof(buf))
				buf[len++] = '\'';
		}
		if (len + 1 < sizeof(buf))
			buf[len++] = ')';
		buf[len] = '\0';
	}

	if (vec_grow(&d->msgs, &d->cap, d->n + 1, sizeof(*d->msgs), SIZE_MAX) != 0) {
		d->oom = true;
		return;
	}
	char *text = strdup(buf);
	if (text == NULL) {
		d->oom = true;
		return;
	}
	d->msgs[d->n] = (struct ydiag_msg){
		.src = src ? src->idx : 0,
		.line = src ? line : 0,
		.col = src ? col : 0,
		.seq = (unsigned)d->n,
		.text = text,
	};
	d->n++;
}

void conf_diag_node(struct ydiag *d, bool error, const struct ynode *n, const char *nofile,
                    const char *key, const char *value, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (n != NULL)
		conf_diag_add(d, error, n->src, n->line, n->col, nofile, key, value, fmt, ap);
	else
		conf_diag_add(d, error, NULL, 0, 0, nofile, key, value, fmt, ap);
	va_end(ap);
}

static void diag_at(struct ydiag *d, const struct ysrc *src, unsigned line, unsigned col,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void diag_at(struct ydiag *d, const struct ysrc *src, unsigned line, unsigned col,
                    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	conf_diag_add(d, true, src, line, col, NULL, NULL, NULL, fmt, ap);
	va_end(ap);
}

static int msg_cmp(const void *a, const void *b)
{
	const struct ydiag_msg *x = a, *y = b;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void conf_diag_flush(struct ydiag *d)
{
	if (d->n > 1)
		qsort(d->msgs, d->n, sizeof(d->msgs[0]), msg_cmp);
	for (size_t i = 0; i < d->n; i++) {
		if (d->out != NULL)
			fprintf(d->out, "%s\n", d->msgs[i].text);
		free(d->msgs[i].text);
	}
	if (d->oom && d->out != NULL)
		fprintf(d->out, "(some messages were lost: out of memory)\n");
	if (d->out != NULL)
		fflush(d->out);
	free(d->msgs);
	d->msgs = NULL;
	d->n = d->cap = 0;
}

/* The tree builder. */

/* Children of open collections wait here until their end event. */
struct builder {
	struct ydoc *doc;
	struct ydiag *d;
	struct ynode **stack;
	size_t n, cap;
	struct {
		struct ynode *node;
		size_t start;
	} open[YTREE_MAX_DEPTH];
	unsigned depth;
};

static struct ynode *new_node(struct builder *b, enum ynode_type type, const yaml_mark_t *m)
{
	struct ynode *n = arena_alloc(b->doc, sizeof(*n));
	if (n == NULL)
		return NULL;
	memset(n, 0, sizeof(*n));
	n->type = (uint8_t)type;
	n->line = (uint32_t)m->line + 1;
	n->col = (uint32_t)m->column + 1;
	n->src = &b->doc->src;
	return n;
}

/* Hang n under the innermost open collection, or make it the root. */
static int attach(struct builder *b, struct ynode *n)
{
	if (b->depth == 0) {
		b->doc->root = n;
		return 0;
	}
	if (vec_grow(&b->stack, &b->cap, b->n + 1, sizeof(*b->stack), SIZE_MAX) != 0)
		return -ENOMEM;
	b->stack[b->n++] = n;
	return 0;
}

static int close_collection(struct builder *b)
{
	b->depth--;
	struct ynode *n = b->open[b->depth].node;
	size_t start = b->open[b->depth].start;
	size_t count = b->n - start;
	if (count > 0) {
		n->u.kids = arena_alloc(b->doc, count * sizeof(*n->u.kids));
		if (n->u.kids == NULL)
			return -ENOMEM;
		memcpy(n->u.kids, b->stack + start, count * sizeof(*n->u.kids));
	}
	/* libyaml always pairs mapping entries, so count is even for maps. */
	n->n = n->type == YNODE_MAP ? count / 2 : count;
	b->n = start;
	return 0;
}

/* Line and column of a byte offset (reader errors carry no mark). */
static void offset_pos(const char *text, size_t len, size_t off, unsigned *line, unsigned *col)
{
	unsigned l = 1;
	size_t bol = 0;
	if (off > len)
		off = len;
	for (size_t i = 0; i < off; i++)
		if (text[i] == '\n') {
			l++;
			bol = i + 1;
		}
	*line = l;
	*col = (unsigned)(off - bol) + 1;
}

static void report_parser(struct builder *b, const yaml_parser_t *p, const char *text, size_t len)
{
	const struct ysrc *src = &b->doc->src;
	const char *problem = p->problem ? p->problem : "unknown problem";
	if (p->error == YAML_READER_ERROR) {
		unsigned line, col;
		offset_pos(text, len, p->problem_offset, &line, &col);
		if (p->problem_value != -1)
			diag_at(b->d, src, line, col, "invalid YAML input: %s (byte 0x%02x)",
			        problem, (unsigned)p->problem_value & 0xff);
		else
			diag_at(b->d, src, line, col, "invalid YAML input: %s", problem);
		return;
	}
	unsigned line = (unsigned)p->problem_mark.line + 1;
	unsigned col = (unsigned)p->problem_mark.column + 1;
	if (p->context != NULL)
		diag_at(b->d, src, line, col, "YAML syntax error: %s (%s at line %u, column %u)",
		        problem, p->context, (unsigned)p->context_mark.line + 1,
		        (unsigned)p->context_mark.column + 1);
	else
		diag_at(b->d, src, line, col, "YAML syntax error: %s", problem);
}

int conf_ydoc_parse(struct ydoc *doc, const char *text, size_t len, const char *name, unsigned idx,
                    struct ydiag *d)
{
	memset(doc, 0, sizeof(*doc));
	doc->src.name = strdup(name);
	doc->src.idx = idx;
	if (doc->src.name == NULL)
		return -ENOMEM;

	struct builder b = { .doc = doc, .d = d };
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p)) {
		conf_ydoc_free(doc);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);

	int rc = 0;
	unsigned ndocs = 0;
	bool done = false;
	while (!done && rc == 0) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			if (p.error == YAML_MEMORY_ERROR) {
				rc = -ENOMEM;
			} else {
				report_parser(&b, &p, text, len);
				rc = CONF_E_YAML;
			}
			break;
		}
		struct ynode *n = NULL;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++ndocs > 1) {
				diag_at(d, &doc->src, (unsigned)ev.start_mark.line + 1,
				        (unsigned)ev.start_mark.column + 1,
				        "only one YAML document is allowed");
				rc = CONF_E_YAML;
			}
			break;
		case YAML_SCALAR_EVENT:
			n = new_node(&b, YNODE_SCALAR, &ev.start_mark);
			if (n == NULL ||
			    (n->u.str = arena_alloc(doc, ev.data.scalar.length + 1)) == NULL) {
				rc = -ENOMEM;
				break;
			}
			memcpy(n->u.str, ev.data.scalar.value, ev.data.scalar.length);
			n->u.str[ev.data.scalar.length] = '\0';
			n->n = ev.data.scalar.length;
			n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
			if (memchr(n->u.str, '\0', n->n) != NULL)
				diag_at(d, &doc->src, n->line, n->col, "NUL byte in a value");
			rc = attach(&b, n);
			break;
		case YAML_ALIAS_EVENT:
			/* Aliases would let a small file expand to a huge tree. */
			n = new_node(&b, YNODE_SCALAR, &ev.start_mark);
			if (n == NULL || (n->u.str = arena_alloc(doc, 1)) == NULL) {
				rc = -ENOMEM;
				break;
			}
			n->u.str[0] = '\0';
			n->plain = true;
			diag_at(d, &doc->src, n->line, n->col, "YAML aliases are not supported");
			rc = attach(&b, n);
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (b.depth == YTREE_MAX_DEPTH) {
				diag_at(d, &doc->src, (unsigned)ev.start_mark.line + 1,
				        (unsigned)ev.start_mark.column + 1,
				        "nesting deeper than %d levels", YTREE_MAX_DEPTH);
				rc = CONF_E_YAML;
				break;
			}
			n = new_node(&b,
			             ev.type == YAML_SEQUENCE_START_EVENT ? YNODE_SEQ : YNODE_MAP,
			             &ev.start_mark);
			if (n == NULL) {
				rc = -ENOMEM;
				break;
			}
			rc = attach(&b, n);
			if (rc == 0) {
				b.open[b.depth].node = n;
				b.open[b.depth].start = b.n;
				b.depth++;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			rc = close_collection(&b);
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	free(b.stack);
	if (rc != 0)
		conf_ydoc_free(doc); /* messages hold their own copy of the name */
	return rc;
}
