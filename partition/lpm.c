/* SPDX-License-Identifier: BSD-3-Clause */
/* Longest-prefix match: a hashed prefix list compiled into a poptrie-style multibit trie. */
#include "partition/lpm.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "util/hash.h"
#include "util/vec.h"

/*
 * Compiled form, one per family (the layout of poptrie, Asai and Ohara,
 * SIGCOMM 2015, with leaf pushing and controlled prefix expansion):
 *
 * - dir: 2^18 entries indexed by the first 18 address bits (so a /24 is
 *   one node below it). An entry with DIR_NODE set is a node index,
 *   otherwise a leaf index.
 * - nodes: 6-bit strides (64 slots). Bit s of `vector` says slot s has a
 *   child node; the children of a node are stored consecutively from
 *   base_node in slot order, so popcount(vector up to s) - 1 is the child's
 *   offset. Bit s of `leafvec` says leaf slot s holds a different leaf than
 *   the previous leaf slot; each such run is stored once from base_leaf,
 *   found by popcount(leafvec up to s) - 1. A node is 24 bytes, so a
 *   lookup touches about one cache line per level: IPv4 needs the direct
 *   entry, at most three nodes (18+6+6+6 bits, the last level padded with
 *   zero bits) and the leaf; IPv6 at most nineteen nodes.
 * - leaves: the value and the index of the prefix it came from, so a
 *   lookup can report the matched prefix, or LPM_NONE for no match.
 *
 * Building sorts the family's prefixes by (address, length). That order is
 * a pre-order walk of the prefix tree: a prefix comes before every prefix
 * nested in it, and overlapping prefixes are always nested. Expanding the
 * prefixes of a node in that order and letting later ones overwrite
 * earlier ones therefore leaves the longest match in every slot, and the
 * prefixes below one slot form one contiguous run of the sorted array.
 */
#define DIR_BITS 18
#define DIR_SIZE (1u << DIR_BITS)
#define DIR_NODE 0x80000000u
#define STRIDE 6
#define FANOUT (1u << STRIDE)
/* Keeps prefix, node and leaf indices clear of DIR_NODE and LPM_NONE. */
#define MAX_ENTRIES (1u << 30)

struct lpm_node {
	uint64_t vector;
	uint64_t leafvec;
	uint32_t base_leaf;
	uint32_t base_node;
};

struct lpm_leaf {
	uint32_t value;
	uint32_t index; /* into lpm.prefixes, LPM_NONE for no match */
};

struct lpm_fib {
	uint32_t *dir; /* NULL when the family has no prefix */
	struct lpm_node *nodes;
	size_t nnodes, cap_nodes;
	struct lpm_leaf *leaves;
	size_t nleaves, cap_leaves;
	void *arena; /* when set, dir, nodes and leaves live in it (see pack()) */
	size_t arena_size;
};

struct lpm {
	struct prefix *prefixes; /* insertion order, host bits clear */
	uint32_t *values;
	size_t count, cap;
	uint32_t *hash; /* open addressing, slot = prefix index + 1, 0 = empty; gone after build */
	size_t hash_cap;        /* power of two */
	bool built;
	struct lpm_fib fib[2]; /* [0] IPv4, [1] IPv6 */
};

/* A prefix as two big-endian halves, for sorting and bit extraction. */
struct sort_key {
	uint64_t hi, lo;
	uint32_t index;
	uint8_t len;
};

/* State of one family's build. */
struct builder {
	struct lpm_fib *fib;
	const uint32_t *values;
};

static uint64_t load_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Portable popcount: without -mpopcnt, __builtin_popcountll is a libgcc call. */
static inline unsigned popcount64(uint64_t x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
	return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* The STRIDE bits at bit offset d (0 = most significant), zeros past bit 127. */
static inline unsigned bits_at(uint64_t hi, uint64_t lo, unsigned d)
{
	if (d <= 64 - STRIDE)
		return (unsigned)(hi >> (64 - STRIDE - d)) & (FANOUT - 1);
	if (d < 64)
		return (unsigned)((hi << (d - (64 - STRIDE))) | (lo >> (128 - STRIDE - d))) & (FANOUT - 1);
	d -= 64;
	if (d <= 64 - STRIDE)
		return (unsigned)(lo >> (64 - STRIDE - d)) & (FANOUT - 1);
	return (unsigned)(lo << (d - (64 - STRIDE))) & (FANOUT - 1);
}

/*
 * Room for need elements of size elem in array p of capacity *cap, doubling.
 * @return the array (maybe moved), or NULL with p and *cap unchanged.
 */
/* Prefixes come from the operator's tables: a fixed key keeps builds reproducible. */
static size_t hash_prefix(const struct prefix *p)
{
	static const struct hash_key key = { { 0x9E3779B97F4A7C15ull, 0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull } };
	uint8_t buf[18];
	memcpy(buf, p->addr, 16);
	buf[16] = p->len;
	buf[17] = (uint8_t)p->family;
	return (size_t)hash_bytes(&key, buf, sizeof(buf));
}

static int hash_resize(struct lpm *t, size_t cap)
{
	uint32_t *h = calloc(cap, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < t->count; i++) {
		size_t s = hash_prefix(&t->prefixes[i]) & (cap - 1);
		while (h[s] != 0)
			s = (s + 1) & (cap - 1);
		h[s] = (uint32_t)i + 1;
	}
	free(t->hash);
	t->hash = h;
	t->hash_cap = cap;
	return 0;
}

struct lpm *lpm_new(void)
{
	return calloc(1, sizeof(struct lpm));
}

static void fib_free(struct lpm_fib *f)
{
	if (f->arena != NULL) {
		free(f->arena);
	} else {
		free(f->dir);
		free(f->nodes);
		free(f->leaves);
	}
	memset(f, 0, sizeof(*f));
}

/*
 * Move the compiled arrays into one block, on transparent huge pages when
 * large: lookups touch it at random, and with 4 KiB pages nearly every
 * access of a big table also misses the TLB. Without the block (no memory)
 * the separate arrays stay, which only costs speed.
 */
static void pack(struct lpm_fib *f)
{
	const size_t huge = (size_t)2 << 20;
	size_t dir_bytes = DIR_SIZE * sizeof(*f->dir);
	size_t node_bytes = f->nnodes * sizeof(*f->nodes);
	size_t size = dir_bytes + node_bytes + f->nleaves * sizeof(*f->leaves);
	void *a = NULL;
	if (size >= huge) {
		size = (size + huge - 1) & ~(huge - 1);
		if (posix_memalign(&a, huge, size) != 0)
			return;
		/* Only a hint; the kernel may say no. */
		(void)madvise(a, size, MADV_HUGEPAGE);
	} else if ((a = malloc(size)) == NULL) {
		return;
	}
	uint8_t *b = a;
	memcpy(b, f->dir, dir_bytes);
	if (node_bytes != 0)
		memcpy(b + dir_bytes, f->nodes, node_bytes);
	memcpy(b + dir_bytes + node_bytes, f->leaves, f->nleaves * sizeof(*f->leaves));
	free(f->dir);
	free(f->nodes);
	free(f->leaves);
	f->dir = (uint32_t *)(void *)b;
	f->nodes = (struct lpm_node *)(void *)(b + dir_bytes);
	f->leaves = (struct lpm_leaf *)(void *)(b + dir_bytes + node_bytes);
	f->cap_nodes = f->nnodes;
	f->cap_leaves = f->nleaves;
	f->arena = a;
	f->arena_size = size;
}

void lpm_free(struct lpm *t)
{
	if (t == NULL)
		return;
	fib_free(&t->fib[0]);
	fib_free(&t->fib[1]);
	free(t->prefixes);
	free(t->values);
	free(t->hash);
	free(t);
}

int lpm_insert(struct lpm *t, const struct prefix *p, uint32_t value, uint32_t *existing)
{
	if (t == NULL || p == NULL || t->built || value == LPM_NONE)
		return -EINVAL;
	unsigned bits = prefix_family_bits(p->family);
	if (bits == 0 || p->len > bits)
		return -EINVAL;
	struct prefix m = *p;
	prefix_mask(&m);
	if (memcmp(m.addr, p->addr, sizeof(m.addr)) != 0)
		return -EINVAL;
	if (t->count >= MAX_ENTRIES)
		return -ENOMEM;

	/* Keep the load factor at or below 1/2. */
	if ((t->count + 1) * 2 > t->hash_cap) {
		int rc = hash_resize(t, t->hash_cap ? t->hash_cap * 2 : 64);
		if (rc != 0)
			return rc;
	}
	size_t mask = t->hash_cap - 1, s = hash_prefix(&m) & mask;
	for (; t->hash[s] != 0; s = (s + 1) & mask) {
		uint32_t i = t->hash[s] - 1;
		if (memcmp(&t->prefixes[i], &m, sizeof(m)) == 0) {
			if (existing != NULL)
				*existing = t->values[i];
			return -EEXIST;
		}
	}

	if (t->count == t->cap) {
		/* cap only grows once both arrays have */
		size_t cap_p = t->cap, cap_v = t->cap;
		if (vec_grow(&t->prefixes, &cap_p, t->count + 1, sizeof(*t->prefixes), MAX_ENTRIES) != 0 ||
		    vec_grow(&t->values, &cap_v, t->count + 1, sizeof(*t->values), MAX_ENTRIES) != 0)
			return -ENOMEM;
		t->cap = cap_p;
	}
	t->prefixes[t->count] = m;
	t->values[t->count] = value;
	t->hash[s] = (uint32_t)t->count + 1;
	t->count++;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (int)x->len - (int)y->len;
}

/* Append the leaf of prefix index (LPM_NONE: no match). @return 0 or -ENOMEM. */
static int append_leaf(struct builder *b, uint32_t index)
{
	struct lpm_fib *f = b->fib;
	if (vec_grow(&f->leaves, &f->cap_leaves, f->nleaves + 1, sizeof(*f->leaves), MAX_ENTRIES) != 0)
		return -ENOMEM;
	f->leaves[f->nleaves++] = index == LPM_NONE
		? (struct lpm_leaf){ .value = LPM_NONE, .index = LPM_NONE }
		: (struct lpm_leaf){ .value = b->values[index], .index = index };
	return 0;
}

/* Reserve k consecutive nodes. @return the index of the first, or -ENOMEM. */
static int64_t alloc_nodes(struct lpm_fib *f, size_t k)
{
	if (vec_grow(&f->nodes, &f->cap_nodes, f->nnodes + k, sizeof(*f->nodes), MAX_ENTRIES - 1) != 0)
		return -ENOMEM;
	f->nnodes += k;
	return (int64_t)(f->nnodes - k);
}

/*
 * Fill node nid (already allocated) at bit depth from keys[0..n), all longer
 * than depth and inside the node's span; deflt is the prefix index covering
 * the whole span (LPM_NONE if none).
 */
static int build_node(struct builder *b, size_t nid, const struct sort_key *keys, size_t n,
                      unsigned depth, uint32_t deflt)
{
	uint32_t leaf[FANOUT];
	uint32_t child_lo[FANOUT], child_hi[FANOUT];
	uint64_t vector = 0, leafvec = 0;

	for (unsigned s = 0; s < FANOUT; s++)
		leaf[s] = deflt;
	for (size_t i = 0; i < n; i++) {
		const struct sort_key *k = &keys[i];
		unsigned v = bits_at(k->hi, k->lo, depth);
		if (k->len <= depth + STRIDE) {
			unsigned cnt = 1u << (depth + STRIDE - k->len);
			for (unsigned s = v; s < v + cnt; s++)
				leaf[s] = k->index;
		} else {
			if (!(vector & (1ull << v))) {
				vector |= 1ull << v;
				child_lo[v] = (uint32_t)i;
			}
			child_hi[v] = (uint32_t)i + 1;
		}
	}

	struct lpm_fib *f = b->fib;
	size_t base_leaf = f->nleaves;
	bool have_prev = false;
	uint32_t prev = 0;
	for (unsigned s = 0; s < FANOUT; s++) {
		if (vector & (1ull << s))
			continue;
		if (have_prev && leaf[s] == prev)
			continue;
		if (append_leaf(b, leaf[s]) != 0)
			return -ENOMEM;
		leafvec |= 1ull << s;
		prev = leaf[s];
		have_prev = true;
	}

	/* The children are reserved before any of them is filled: they must be consecutive. */
	int64_t base_node = alloc_nodes(f, popcount64(vector));
	if (base_node < 0)
		return -ENOMEM;
	f->nodes[nid] = (struct lpm_node){
		.vector = vector,
		.leafvec = leafvec,
		.base_leaf = (uint32_t)base_leaf,
		.base_node = (uint32_t)base_node,
	};

	size_t c = (size_t)base_node;
	for (unsigned s = 0; s < FANOUT; s++) {
		if (!(vector & (1ull << s)))
			continue;
		int rc = build_node(b, c++, keys + child_lo[s], child_hi[s] - child_lo[s],
		                    depth + STRIDE, leaf[s]);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Compile the prefixes of t in family into f. @return 0 or -ENOMEM (f then empty). */
static int fib_build(struct lpm *t, int family, struct lpm_fib *f)
{
	size_t n = 0;
	for (size_t i = 0; i < t->count; i++)
		n += t->prefixes[i].family == family;
	if (n == 0)
		return 0;

	struct sort_key *keys = malloc(n * sizeof(*keys));
	uint32_t *top = malloc(DIR_SIZE * sizeof(*top));
	f->dir = malloc(DIR_SIZE * sizeof(*f->dir));
	int rc = -ENOMEM;
	if (keys == NULL || top == NULL || f->dir == NULL)
		goto out;
	for (size_t i = 0, j = 0; i < t->count; i++) {
		const struct prefix *p = &t->prefixes[i];
		if (p->family != family)
			continue;
		keys[j++] = (struct sort_key){
			.hi = load_be64(p->addr),
			.lo = load_be64(p->addr + 8),
			.index = (uint32_t)i,
			.len = p->len,
		};
	}
	qsort(keys, n, sizeof(*keys), cmp_key);

	struct builder b = { .fib = f, .values = t->values };

	/* The direct table is a node of DIR_BITS stride at depth 0. */
	for (size_t s = 0; s < DIR_SIZE; s++) {
		top[s] = LPM_NONE;
		f->dir[s] = 0;
	}
	for (size_t i = 0; i < n;) {
		const struct sort_key *k = &keys[i];
		uint32_t v = (uint32_t)(k->hi >> (64 - DIR_BITS));
		if (k->len <= DIR_BITS) {
			for (uint32_t s = v; s < v + (1u << (DIR_BITS - k->len)); s++)
				top[s] = k->index;
			i++;
			continue;
		}
		size_t j = i + 1;
		while (j < n && (uint32_t)(keys[j].hi >> (64 - DIR_BITS)) == v)
			j++;
		/* Everything covering slot v sorts before keys[i], so top[v] is final. */
		int64_t nid = alloc_nodes(f, 1);
		if (nid < 0 || build_node(&b, (size_t)nid, keys + i, j - i, DIR_BITS, top[v]) != 0)
			goto out;
		f->dir[v] = DIR_NODE | (uint32_t)nid;
		i = j;
	}
	/* Runs of slots with the same prefix share one leaf. */
	for (size_t s = 0; s < DIR_SIZE; s++) {
		if (f->dir[s] & DIR_NODE)
			continue;
		if (f->nleaves == 0 || f->leaves[f->nleaves - 1].index != top[s])
			if (append_leaf(&b, top[s]) != 0)
				goto out;
		f->dir[s] = (uint32_t)f->nleaves - 1;
	}

	pack(f);
	rc = 0;
out:
	free(keys);
	free(top);
	if (rc != 0)
		fib_free(f);
	return rc;
}

int lpm_build(struct lpm *t)
{
	if (t == NULL)
		return -EINVAL;
	if (t->built)
		return 0;
	int rc = fib_build(t, AF_INET, &t->fib[0]);
	if (rc == 0)
		rc = fib_build(t, AF_INET6, &t->fib[1]);
	if (rc != 0) {
		fib_free(&t->fib[0]);
		fib_free(&t->fib[1]);
		return rc;
	}
	free(t->hash);
	t->hash = NULL;
	t->hash_cap = 0;
	if (t->count > 0 && t->count < t->cap) {
		void *p = realloc(t->prefixes, t->count * sizeof(*t->prefixes));
		void *v = p != NULL ? realloc(t->values, t->count * sizeof(*t->values)) : NULL;
		if (p != NULL)
			t->prefixes = p;
		if (v != NULL) {
			t->values = v;
			t->cap = t->count;
		}
	}
	t->built = true;
	return 0;
}

/* Walk the nodes from node e at bit depth d; key holds the address, MSB first. */
static inline const struct lpm_leaf *walk(const struct lpm_fib *f, uint32_t e, uint64_t hi,
                                          uint64_t lo, unsigned d)
{
	const struct lpm_node *n = &f->nodes[e & ~DIR_NODE];
	for (;;) {
		uint64_t bit = 1ull << bits_at(hi, lo, d);
		uint64_t upto = bit | (bit - 1);
		if (!(n->vector & bit))
			return &f->leaves[n->base_leaf + popcount64(n->leafvec & upto) - 1];
		n = &f->nodes[n->base_node + popcount64(n->vector & upto) - 1];
		d += STRIDE;
	}
}

static inline const struct lpm_leaf *lookup4(const struct lpm_fib *f, const uint8_t *addr)
{
	uint32_t a = load_be32(addr);
	uint32_t e = f->dir[a >> (32 - DIR_BITS)];
	if (!(e & DIR_NODE))
		return &f->leaves[e];
	return walk(f, e, (uint64_t)a << 32, 0, DIR_BITS);
}

static inline const struct lpm_leaf *lookup6(const struct lpm_fib *f, const uint8_t *addr)
{
	uint64_t hi = load_be64(addr);
	uint32_t e = f->dir[hi >> (64 - DIR_BITS)];
	if (!(e & DIR_NODE))
		return &f->leaves[e];
	return walk(f, e, hi, load_be64(addr + 8), DIR_BITS);
}

uint32_t lpm_lookup(const struct lpm *t, int family, const uint8_t *addr, struct prefix *matched)
{
	const struct lpm_leaf *leaf = NULL;
	if (t != NULL && t->built) {
		if (family == AF_INET && t->fib[0].dir != NULL)
			leaf = lookup4(&t->fib[0], addr);
		else if (family == AF_INET6 && t->fib[1].dir != NULL)
			leaf = lookup6(&t->fib[1], addr);
	}
	if (leaf == NULL || leaf->index == LPM_NONE) {
		if (matched != NULL)
			memset(matched, 0, sizeof(*matched));
		return LPM_NONE;
	}
	if (matched != NULL)
		*matched = t->prefixes[leaf->index];
	return leaf->value;
}

size_t lpm_count(const struct lpm *t)
{
	return t != NULL ? t->count : 0;
}

uint32_t lpm_get(const struct lpm *t, size_t i, struct prefix *p)
{
	if (t == NULL || i >= t->count)
		return LPM_NONE;
	if (p != NULL)
		*p = t->prefixes[i];
	return t->values[i];
}

size_t lpm_memory(const struct lpm *t)
{
	if (t == NULL)
		return 0;
	size_t m = sizeof(*t) + t->cap * (sizeof(*t->prefixes) + sizeof(*t->values)) +
	           t->hash_cap * sizeof(*t->hash);
	for (int i = 0; i < 2; i++) {
		const struct lpm_fib *f = &t->fib[i];
		if (f->arena != NULL) {
			m += f->arena_size;
			continue;
		}
		if (f->dir != NULL)
			m += DIR_SIZE * sizeof(*f->dir);
		m += f->cap_nodes * sizeof(*f->nodes) + f->cap_leaves * sizeof(*f->leaves);
	}
	return m;
}
