/* SPDX-License-Identifier: BSD-3-Clause */
/* CNAME chains from normal names into EDNS domains: detection and the cache value header. */
#include "resolver/chain.h"

#include <errno.h>
#include <ldns/ldns.h>
#include <stdlib.h>
#include <string.h>

#include "resolver/wire.h"

int chain_find(const struct domains *d, const uint8_t *resp, size_t len, const uint8_t *qname, size_t qname_len,
               uint8_t *target, size_t *target_len, uint8_t **prefix, size_t *prefix_len)
{
	if (domains_count(d) == 0 || len < WIRE_HEADER_SIZE || ((resp[6] << 8) | resp[7]) == 0)
		return 0; /* nothing flagged, or no answer records */
	ldns_pkt *pkt = NULL;
	if (ldns_wire2pkt(&pkt, resp, len) != LDNS_STATUS_OK)
		return -EINVAL;
	const ldns_rr_list *an = ldns_pkt_answer(pkt);
	size_t n = an ? ldns_rr_list_rr_count(an) : 0;
	uint8_t cur[WIRE_MAX_NAME];
	size_t cur_len = qname_len;
	memcpy(cur, qname, qname_len);
	ldns_rr_list *hops = ldns_rr_list_new();
	int found = 0;
	for (int hop = 0; hop < WIRE_CNAME_MAX && !found; hop++) {
		const ldns_rr *cname = NULL;
		for (size_t i = 0; i < n && cname == NULL; i++) {
			const ldns_rr *rr = ldns_rr_list_rr(an, i);
			const ldns_rdf *o = ldns_rr_owner(rr);
			if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_CNAME &&
			    wire_name_equal(ldns_rdf_data(o), ldns_rdf_size(o), cur, cur_len))
				cname = rr;
		}
		if (cname == NULL || ldns_rr_rdf(cname, 0) == NULL)
			break;
		const ldns_rdf *t = ldns_rr_rdf(cname, 0);
		if (ldns_rdf_size(t) > WIRE_MAX_NAME)
			break;
		ldns_rr_list_push_rr(hops, ldns_rr_clone(cname));
		cur_len = ldns_rdf_size(t);
		wire_name_lower(ldns_rdf_data(t), cur_len, cur);
		if (domains_match(d, cur, cur_len) != NULL)
			found = 1;
	}
	int rc = 0;
	if (found) {
		ldns_pkt *p = ldns_pkt_new();
		ldns_pkt_set_qr(p, true);
		ldns_pkt_set_rd(p, ldns_pkt_rd(pkt));
		ldns_pkt_set_ra(p, true);
		ldns_pkt_set_rcode(p, LDNS_RCODE_NOERROR);
		/* push_rr_list moves the records, not the list itself */
		ldns_rr_list *question = ldns_rr_list_clone(ldns_pkt_question(pkt));
		ldns_pkt_push_rr_list(p, LDNS_SECTION_QUESTION, question);
		ldns_rr_list_free(question);
		ldns_pkt_push_rr_list(p, LDNS_SECTION_ANSWER, hops);
		ldns_rr_list_free(hops);
		hops = NULL;
		if (ldns_pkt2wire(prefix, p, prefix_len) != LDNS_STATUS_OK) {
			rc = -ENOMEM;
		} else {
			memcpy(target, cur, cur_len);
			*target_len = cur_len;
			rc = 1;
		}
		ldns_pkt_free(p);
	}
	if (hops)
		ldns_rr_list_deep_free(hops);
	ldns_pkt_free(pkt);
	return rc;
}

size_t chain_value_header(size_t target_len, size_t prefix_len)
{
	return 1 + 1 + target_len + 2 + prefix_len;
}

size_t chain_value_write(uint8_t *out, const uint8_t *target, size_t target_len, const uint8_t *prefix,
                         size_t prefix_len)
{
	size_t o = 0;
	out[o++] = VAL_FLAG_CHAIN;
	out[o++] = (uint8_t)target_len;
	memcpy(out + o, target, target_len);
	o += target_len;
	out[o++] = (uint8_t)(prefix_len >> 8);
	out[o++] = (uint8_t)prefix_len;
	memcpy(out + o, prefix, prefix_len);
	return o + prefix_len;
}

int chain_value_parse(const uint8_t *val, size_t vlen, const uint8_t **blob, size_t *blob_len,
                      const uint8_t **target, size_t *target_len, const uint8_t **prefix, size_t *prefix_len)
{
	if (vlen < 1)
		return -EINVAL;
	if (!(val[0] & VAL_FLAG_CHAIN)) {
		*blob = val + 1;
		*blob_len = vlen - 1;
		return 0;
	}
	size_t o = 1;
	if (o + 1 > vlen)
		return -EINVAL;
	size_t tl = val[o++];
	if (o + tl + 2 > vlen)
		return -EINVAL;
	*target = val + o;
	*target_len = tl;
	o += tl;
	size_t pl = ((size_t)val[o] << 8) | val[o + 1];
	o += 2;
	if (o + pl > vlen)
		return -EINVAL;
	*prefix = val + o;
	*prefix_len = pl;
	o += pl;
	*blob = val + o;
	*blob_len = vlen - o;
	return 1;
}
