/* SPDX-License-Identifier: BSD-3-Clause */
/* The project's one growable array: doubling, with a cap on the element count. */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/**
 * Make room for need elements of elem bytes in *p (capacity *cap, in
 * elements), doubling from 16, never above max elements. On failure *p and
 * *cap are unchanged (the old array stays valid).
 * @return 0, -E2BIG (need > max, or the byte size overflows) or -ENOMEM.
 */
static inline int vec_grow(void *p, size_t *cap, size_t need, size_t elem, size_t max)
{
	if (need <= *cap)
		return 0;
	if (need > max || elem == 0 || need > SIZE_MAX / elem)
		return -E2BIG;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n = n > SIZE_MAX / 2 ? need : n * 2;
	if (n > max)
		n = max;
	if (n > SIZE_MAX / elem)
		n = need;
	void **pp = p;
	void *q = realloc(*pp, n * elem);
	if (q == NULL)
		return -ENOMEM;
	*pp = q;
	*cap = n;
	return 0;
}
