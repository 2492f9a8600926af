/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DNSSEC validation of one EDNS-pool answer (RFC 4033-4035, RFC 5155),
 * with ldns for the cryptography and the NSEC3 closest-encloser proof.
 * Which keys are trusted is libunbound's business (the caller's lookups);
 * this file checks that the answer is what those keys signed. Unbound's
 * validator/val_sigcrypt.c and val_nsec.c and Knot Resolver's lib/dnssec/
 * do the same work; the rules here follow the RFC sections cited.
 */
#include "resolver/pool/val.h"

#include <ldns/ldns.h>
#include <string.h>

#include "wire/names.h"
#include "wire/parse.h"

#define NSEC3_MAX_ITERATIONS 150 /* RFC 9276 §3.2: above this a validator may give up */
#define DNSKEY_FLAG_ZONE 0x0100 /* RFC 4034 §2.1.1 */
#define DNSKEY_FLAG_REVOKE 0x0080 /* RFC 5011 §3 */

static const struct wire_ede EDE_BOGUS = { WIRE_EDE_DNSSEC_BOGUS, "signature does not verify" };
static const struct wire_ede EDE_EXPIRED = { WIRE_EDE_SIGNATURE_EXPIRED, "signature expired" };
static const struct wire_ede EDE_NOT_YET = { WIRE_EDE_SIGNATURE_NOT_YET_VALID, "signature not yet valid" };
static const struct wire_ede EDE_NO_KEY = { WIRE_EDE_DNSKEY_MISSING, "no DNSKEY matches the signature" };
static const struct wire_ede EDE_NO_SIGS = { WIRE_EDE_RRSIGS_MISSING, "data of a signed zone without RRSIG" };
static const struct wire_ede EDE_NO_PROOF = { WIRE_EDE_NSEC_MISSING, "denial of existence not proven" };
static const struct wire_ede EDE_ALG = { WIRE_EDE_UNSUPPORTED_DNSKEY_ALG, "unsupported DNSKEY algorithm" };
static const struct wire_ede EDE_ITER = { WIRE_EDE_UNSUPPORTED_NSEC3_ITER, "NSEC3 iterations above 150" };
static const struct wire_ede EDE_CHAIN = { WIRE_EDE_DNSSEC_BOGUS, "chain of trust broken" };
static const struct wire_ede EDE_LOOKUP = { WIRE_EDE_NO_REACHABLE_AUTHORITY, "DNSSEC keys could not be fetched" };
static const struct wire_ede EDE_MALFORMED = { WIRE_EDE_INVALID_DATA, "malformed DNSSEC data" };

const char *val_state_name(enum val_state s)
{
	switch (s) {
	case VAL_SECURE: return "secure";
	case VAL_INSECURE: return "insecure";
	case VAL_BOGUS: return "bogus";
	case VAL_INDETERMINATE: return "indeterminate";
	}
	return "?";
}

/* ---- step 1: what the answer needs ---- */

static int need_add(struct val_needs *out, uint16_t type, const uint8_t *name, size_t len)
{
	uint8_t lower[WIRE_MAX_NAME];
	wire_name_lower(name, len, lower);
	for (unsigned i = 0; i < out->n; i++)
		if (out->need[i].type == type && out->need[i].name_len == len && memcmp(out->need[i].name, lower, len) == 0)
			return 0;
	if (out->n >= VAL_MAX_NEEDS)
		return -1;
	struct val_need *n = &out->need[out->n++];
	memset(n, 0, sizeof(*n));
	n->type = type;
	memcpy(n->name, lower, len);
	n->name_len = len;
	n->state = VAL_INDETERMINATE; /* until the caller says otherwise */
	return 0;
}

/* Is there an RRSIG over (owner, type) in section? */
static bool signed_in(const uint8_t *msg, size_t len, enum wire_section section, const uint8_t *owner,
                      size_t owner_len, uint16_t type)
{
	struct wire_iter it;
	struct wire_rr rr;
	if (wire_iter_init(&it, msg, len) != 0)
		return false;
	while (wire_iter_next(&it, &rr) == 1)
		if (rr.section == section && rr.type == WIRE_TYPE_RRSIG && rr.rdlen >= 2 &&
		    ((uint16_t)(msg[rr.rdata] << 8 | msg[rr.rdata + 1])) == type &&
		    wire_name_equal(rr.owner, rr.owner_len, owner, owner_len))
			return true;
	return false;
}

int val_needs(const uint8_t *msg, size_t len, const uint8_t *qname, size_t qname_len, struct val_needs *out)
{
	out->n = 0;
	struct wire_iter it;
	struct wire_rr rr;
	if (wire_iter_init(&it, msg, len) != 0)
		return -1;
	bool any = false;
	int k;
	while ((k = wire_iter_next(&it, &rr)) == 1) {
		if (rr.section != WIRE_SECTION_ANSWER && rr.section != WIRE_SECTION_AUTHORITY)
			continue;
		any = true;
		if (rr.type == WIRE_TYPE_RRSIG) {
			/* type covered 2, algorithm 1, labels 1, TTL 4, expiration 4, inception 4, key tag 2: then the signer */
			uint8_t signer[WIRE_MAX_NAME];
			size_t signer_len;
			if (rr.rdlen < 18 || wire_rdata_name(&it, &rr, 18, signer, &signer_len) != 0 ||
			    need_add(out, WIRE_TYPE_DNSKEY, signer, signer_len) != 0)
				return -1;
		} else if (!signed_in(msg, len, rr.section, rr.owner, rr.owner_len, rr.type)) {
			if (need_add(out, WIRE_TYPE_SOA, rr.owner, rr.owner_len) != 0)
				return -1;
		}
	}
	if (k < 0)
		return -1;
	/* an empty answer: the security of the name's own zone decides */
	if (!any && need_add(out, WIRE_TYPE_SOA, qname, qname_len) != 0)
		return -1;
	return 0;
}

/* ---- step 3: checking ---- */

/*
 * Does rr have every field the checks below read? ldns parses a short RDATA
 * into fewer fields, and its accessors assert (abort) on a missing one:
 * nothing hostile may reach them unchecked (fuzz_val found a DNSKEY
 * without RDATA). NSEC3: SHA-1 only (RFC 5155 §11), the hash 20 bytes.
 */
static bool rr_well_formed(const ldns_rr *rr)
{
	size_t want;
	switch (ldns_rr_get_type(rr)) {
	case LDNS_RR_TYPE_RRSIG: want = 9; break;
	case LDNS_RR_TYPE_DNSKEY: want = 4; break;
	case LDNS_RR_TYPE_NSEC: want = 2; break;
	case LDNS_RR_TYPE_NSEC3: want = 6; break;
	case LDNS_RR_TYPE_CNAME: want = 1; break;
	case LDNS_RR_TYPE_SOA: want = 7; break;
	default: want = 0; break;
	}
	if (ldns_rr_owner(rr) == NULL || ldns_rr_rd_count(rr) < want)
		return false;
	for (size_t i = 0; i < want; i++)
		if (ldns_rr_rdf(rr, i) == NULL || ldns_rdf_size(ldns_rr_rdf(rr, i)) == 0)
			return false;
	if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_NSEC3) {
		const ldns_rdf *alg = ldns_rr_rdf(rr, 0), *salt = ldns_rr_rdf(rr, 3), *next = ldns_rr_rdf(rr, 4);
		const uint8_t *o = ldns_rdf_data(ldns_rr_owner(rr));
		return ldns_rdf_size(alg) == 1 && ldns_rdf_data(alg)[0] == LDNS_SHA1 && ldns_rdf_size(next) == 21 &&
		       ldns_rdf_data(next)[0] == 20 && ldns_rdf_size(salt) == 1u + ldns_rdf_data(salt)[0] &&
		       ldns_rdf_size(ldns_rr_owner(rr)) > 33 && o[0] == 32 &&
		       ldns_rdf_size(ldns_rr_rdf(rr, 1)) == 1 && ldns_rdf_size(ldns_rr_rdf(rr, 2)) == 2;
	}
	if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_RRSIG)
		return ldns_rdf_size(ldns_rr_rdf(rr, 0)) == 2 && ldns_rdf_size(ldns_rr_rdf(rr, 2)) == 1 &&
		       ldns_rdf_get_type(ldns_rr_rdf(rr, 7)) == LDNS_RDF_TYPE_DNAME;
	if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_DNSKEY)
		return ldns_rdf_size(ldns_rr_rdf(rr, 0)) == 2;
	return true;
}

static bool section_well_formed(const ldns_rr_list *l)
{
	for (size_t i = 0; i < ldns_rr_list_rr_count(l); i++)
		if (!rr_well_formed(ldns_rr_list_rr(l, i)))
			return false;
	return true;
}

struct vctx {
	ldns_pkt *pkt;
	const struct val_needs *needs;
	ldns_rr_list *keys[VAL_MAX_NEEDS]; /* a secure DNSKEY need's zone keys, parsed on first use */
	ldns_pkt *key_pkts[VAL_MAX_NEEDS];
	time_t now;
	struct val_outcome *out;
	/* wildcard expansions seen: their owners must be proven not to exist (RFC 4035 §5.3.4) */
	unsigned nwild;
	ldns_rdf *wild_owner[8];
	uint8_t wild_labels[8];
};

static void set_zone(struct val_outcome *out, const ldns_rdf *zone)
{
	char *s = zone ? ldns_rdf2str(zone) : NULL;
	snprintf(out->zone, sizeof(out->zone), "%s", s ? s : "?");
	free(s);
}

/* The answer gets worse (secure < insecure < indeterminate < bogus); the first bogus reason stays. */
static void degrade(struct vctx *v, enum val_state s, const struct wire_ede *ede, const char *why, const ldns_rdf *zone)
{
	static const int rank[] = { [VAL_SECURE] = 0, [VAL_INSECURE] = 1, [VAL_INDETERMINATE] = 2, [VAL_BOGUS] = 3 };
	if (rank[s] <= rank[v->out->state])
		return;
	v->out->state = s;
	if (ede)
		v->out->ede = *ede;
	v->out->why = why;
	set_zone(v->out, zone);
}

static const struct val_need *find_need(const struct vctx *v, uint16_t type, const ldns_rdf *name, unsigned *idx)
{
	size_t len = ldns_rdf_size(name);
	uint8_t lower[WIRE_MAX_NAME];
	if (len > WIRE_MAX_NAME)
		return NULL;
	wire_name_lower(ldns_rdf_data(name), len, lower);
	for (unsigned i = 0; i < v->needs->n; i++) {
		const struct val_need *n = &v->needs->need[i];
		if (n->type == type && n->name_len == len && memcmp(n->name, lower, len) == 0) {
			if (idx)
				*idx = i;
			return n;
		}
	}
	return NULL;
}

/* The zone keys of a secure DNSKEY lookup (revoked keys left out, RFC 5011 §3). */
static ldns_rr_list *zone_keys(struct vctx *v, unsigned i, const ldns_rdf *zone)
{
	if (v->keys[i])
		return v->keys[i];
	const struct val_need *n = &v->needs->need[i];
	if (n->answer == NULL || ldns_wire2pkt(&v->key_pkts[i], n->answer, n->answer_len) != LDNS_STATUS_OK)
		return NULL;
	ldns_rr_list *keys = ldns_rr_list_new();
	ldns_rr_list *ans = ldns_pkt_answer(v->key_pkts[i]);
	for (size_t k = 0; keys && k < ldns_rr_list_rr_count(ans); k++) {
		ldns_rr *rr = ldns_rr_list_rr(ans, k);
		if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_DNSKEY || !rr_well_formed(rr) ||
		    ldns_dname_compare(ldns_rr_owner(rr), zone) != 0)
			continue;
		uint16_t flags = ldns_rdf2native_int16(ldns_rr_dnskey_flags(rr));
		if ((flags & DNSKEY_FLAG_ZONE) && !(flags & DNSKEY_FLAG_REVOKE))
			ldns_rr_list_push_rr(keys, rr); /* borrowed from key_pkts[i] */
	}
	v->keys[i] = keys;
	return keys;
}

static const struct wire_ede *ede_of(ldns_status st)
{
	switch (st) {
	case LDNS_STATUS_CRYPTO_SIG_EXPIRED: return &EDE_EXPIRED;
	case LDNS_STATUS_CRYPTO_SIG_NOT_INCEPTED: return &EDE_NOT_YET;
	case LDNS_STATUS_CRYPTO_NO_MATCHING_KEYTAG_DNSKEY:
	case LDNS_STATUS_CRYPTO_NO_DNSKEY: return &EDE_NO_KEY;
	case LDNS_STATUS_CRYPTO_UNKNOWN_ALGO:
	case LDNS_STATUS_CRYPTO_ALGO_NOT_IMPL: return &EDE_ALG;
	default: return &EDE_BOGUS;
	}
}

/* Verify rrset with one of sigs (all over it). */
static void check_rrset(struct vctx *v, ldns_rr_list *rrset, ldns_rr_list *sigs)
{
	ldns_rr *first = ldns_rr_list_rr(rrset, 0);
	const ldns_rdf *owner = ldns_rr_owner(first);
	if (ldns_rr_list_rr_count(sigs) == 0) {
		/* unsigned: fine only where libunbound shows the name's zone insecure */
		const struct val_need *n = find_need(v, LDNS_RR_TYPE_SOA, owner, NULL);
		enum val_state s = n ? n->state : VAL_INDETERMINATE;
		if (s == VAL_SECURE)
			degrade(v, VAL_BOGUS, &EDE_NO_SIGS, "RRset without RRSIG in a signed zone", owner);
		else if (s == VAL_BOGUS)
			degrade(v, VAL_BOGUS, &EDE_CHAIN, n->why ? n->why : "the zone's keys are bogus", owner);
		else if (s == VAL_INDETERMINATE)
			degrade(v, s, &EDE_LOOKUP,
			        "the zone's security could not be learned (a private zone? resolver.domain_insecure)", owner);
		else
			degrade(v, s, NULL, NULL, owner);
		return;
	}
	ldns_status best = LDNS_STATUS_CRYPTO_BOGUS;
	const ldns_rdf *zone = owner;
	enum val_state key_state = VAL_SECURE;
	const char *key_why = NULL;
	for (size_t i = 0; i < ldns_rr_list_rr_count(sigs); i++) {
		ldns_rr *sig = ldns_rr_list_rr(sigs, i);
		const ldns_rdf *signer = ldns_rr_rrsig_signame(sig);
		const ldns_rdf *labels_rdf = ldns_rr_rrsig_labels(sig);
		if (signer == NULL || labels_rdf == NULL)
			continue;
		zone = signer;
		/* RFC 4035 §5.3.1: the signer is the zone holding the RRset */
		if (ldns_dname_compare(signer, owner) != 0 && !ldns_dname_is_subdomain(owner, signer))
			continue;
		unsigned ni;
		const struct val_need *n = find_need(v, LDNS_RR_TYPE_DNSKEY, signer, &ni);
		if (n == NULL || n->state != VAL_SECURE) {
			key_state = n ? n->state : VAL_INDETERMINATE;
			key_why = n ? n->why : NULL;
			continue;
		}
		key_state = VAL_SECURE;
		ldns_rr_list *keys = zone_keys(v, ni, signer);
		if (keys == NULL || ldns_rr_list_rr_count(keys) == 0) {
			best = LDNS_STATUS_CRYPTO_NO_DNSKEY;
			continue;
		}
		uint8_t labels = ldns_rdf2native_int8(labels_rdf);
		uint8_t owner_labels = ldns_dname_label_count(owner);
		/* the owner's own leading "*" is not counted (RFC 4034 §3.1.3) */
		if (ldns_rdf_size(owner) > 2 && ldns_rdf_data(owner)[0] == 1 && ldns_rdf_data(owner)[1] == '*')
			owner_labels--;
		if (labels > owner_labels)
			continue;
		ldns_rr_list *checked = rrset;
		ldns_rr_list *expanded = NULL;
		if (labels < owner_labels) {
			/* a wildcard expansion: the signature is over "*." + the rightmost labels (RFC 4035 §5.3.2) */
			ldns_rdf *src = ldns_dname_clone_from(owner, (size_t)(owner_labels - labels));
			ldns_rdf *wild = ldns_dname_new_frm_str("*");
			expanded = ldns_rr_list_clone(rrset);
			if (src == NULL || wild == NULL || expanded == NULL || ldns_dname_cat(wild, src) != LDNS_STATUS_OK) {
				ldns_rdf_deep_free(src);
				ldns_rdf_deep_free(wild);
				ldns_rr_list_deep_free(expanded);
				continue;
			}
			ldns_rdf_deep_free(src);
			for (size_t k = 0; k < ldns_rr_list_rr_count(expanded); k++) {
				ldns_rr *rr = ldns_rr_list_rr(expanded, k);
				ldns_rdf_deep_free(ldns_rr_owner(rr));
				ldns_rr_set_owner(rr, k == 0 ? wild : ldns_rdf_clone(wild));
			}
			checked = expanded;
		}
		ldns_status st = ldns_verify_rrsig_keylist_time(checked, sig, keys, v->now, NULL);
		ldns_rr_list_deep_free(expanded);
		if (st == LDNS_STATUS_OK) {
			if (labels < owner_labels && v->nwild < sizeof(v->wild_owner) / sizeof(v->wild_owner[0])) {
				v->wild_owner[v->nwild] = ldns_rdf_clone(owner);
				v->wild_labels[v->nwild++] = labels;
			} else if (labels < owner_labels) {
				degrade(v, VAL_BOGUS, &EDE_MALFORMED, "too many wildcard expansions", signer);
			}
			return;
		}
		/* keep the most telling failure: time and key problems over a plain mismatch */
		if (best == LDNS_STATUS_CRYPTO_BOGUS || st == LDNS_STATUS_CRYPTO_SIG_EXPIRED ||
		    st == LDNS_STATUS_CRYPTO_SIG_NOT_INCEPTED)
			best = st;
	}
	if (key_state == VAL_INSECURE && best == LDNS_STATUS_CRYPTO_BOGUS) {
		/* signed by a zone libunbound shows insecure (an island): not secure, not forged */
		degrade(v, VAL_INSECURE, NULL, NULL, zone);
		return;
	}
	if (key_state == VAL_BOGUS)
		degrade(v, VAL_BOGUS, &EDE_CHAIN, key_why ? key_why : "the zone's keys are bogus", zone);
	else if (key_state == VAL_INDETERMINATE)
		degrade(v, VAL_INDETERMINATE, &EDE_LOOKUP, "the zone's keys could not be fetched", zone);
	else
		degrade(v, VAL_BOGUS, ede_of(best), ldns_get_errorstr_by_id(best), zone);
}

/* Every RRset of one section, with the RRSIGs over it. */
static void check_section(struct vctx *v, ldns_rr_list *sec)
{
	size_t n = ldns_rr_list_rr_count(sec);
	for (size_t i = 0; i < n; i++) {
		ldns_rr *rr = ldns_rr_list_rr(sec, i);
		ldns_rr_type t = ldns_rr_get_type(rr);
		if (t == LDNS_RR_TYPE_RRSIG || t == LDNS_RR_TYPE_OPT)
			continue;
		/* the first RR of its RRset starts it */
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++) {
			ldns_rr *p = ldns_rr_list_rr(sec, j);
			seen = ldns_rr_get_type(p) == t && ldns_rr_get_class(p) == ldns_rr_get_class(rr) &&
			       ldns_dname_compare(ldns_rr_owner(p), ldns_rr_owner(rr)) == 0;
		}
		if (seen)
			continue;
		ldns_rr_list *rrset = ldns_rr_list_new();
		ldns_rr_list *sigs = ldns_rr_list_new();
		if (rrset == NULL || sigs == NULL) {
			ldns_rr_list_free(rrset);
			ldns_rr_list_free(sigs);
			degrade(v, VAL_INDETERMINATE, &EDE_LOOKUP, "out of memory", ldns_rr_owner(rr));
			return;
		}
		for (size_t j = i; j < n; j++) {
			ldns_rr *p = ldns_rr_list_rr(sec, j);
			if (ldns_dname_compare(ldns_rr_owner(p), ldns_rr_owner(rr)) != 0 ||
			    ldns_rr_get_class(p) != ldns_rr_get_class(rr))
				continue;
			if (ldns_rr_get_type(p) == t)
				ldns_rr_list_push_rr(rrset, p);
			else if (ldns_rr_get_type(p) == LDNS_RR_TYPE_RRSIG && ldns_rr_rrsig_typecovered(p) &&
			         ldns_rdf2rr_type(ldns_rr_rrsig_typecovered(p)) == t)
				ldns_rr_list_push_rr(sigs, p);
		}
		check_rrset(v, rrset, sigs);
		ldns_rr_list_free(rrset); /* shallow: the RRs belong to the packet */
		ldns_rr_list_free(sigs);
	}
}

/* The authority section's records of type t (borrowed), or NULL when there are none. */
static ldns_rr_list *auth_of_type(ldns_pkt *pkt, ldns_rr_type t)
{
	ldns_rr_list *out = NULL;
	ldns_rr_list *auth = ldns_pkt_authority(pkt);
	for (size_t i = 0; i < ldns_rr_list_rr_count(auth); i++) {
		ldns_rr *rr = ldns_rr_list_rr(auth, i);
		if (ldns_rr_get_type(rr) != t)
			continue;
		if (out == NULL && (out = ldns_rr_list_new()) == NULL)
			return NULL;
		ldns_rr_list_push_rr(out, rr);
	}
	return out;
}

/* The longest ancestor shared by a and b (a new rdf). */
static ldns_rdf *common_ancestor(const ldns_rdf *a, const ldns_rdf *b)
{
	uint8_t la = ldns_dname_label_count(a), lb = ldns_dname_label_count(b);
	ldns_rdf *x = ldns_dname_clone_from(a, la > lb ? (size_t)(la - lb) : 0);
	ldns_rdf *y = ldns_dname_clone_from(b, lb > la ? (size_t)(lb - la) : 0);
	while (x && y && ldns_dname_compare(x, y) != 0) {
		ldns_rdf *nx = ldns_dname_left_chop(x), *ny = ldns_dname_left_chop(y);
		ldns_rdf_deep_free(x);
		ldns_rdf_deep_free(y);
		x = nx;
		y = ny;
	}
	ldns_rdf_deep_free(y);
	return x;
}

/* NSEC covers name strictly (owner < name < next: the name does not exist). */
static bool nsec_covers(const ldns_rr *nsec, const ldns_rdf *name)
{
	return ldns_dname_compare(ldns_rr_owner(nsec), name) != 0 && ldns_nsec_covers_name(nsec, name);
}

/* A delegation NSEC (NS without SOA) speaks for the parent side only. */
static bool nsec_is_delegation(const ldns_rr *nsec)
{
	ldns_rdf *bm = ldns_nsec_get_bitmap(nsec);
	return bm && ldns_nsec_bitmap_covers_type(bm, LDNS_RR_TYPE_NS) && !ldns_nsec_bitmap_covers_type(bm, LDNS_RR_TYPE_SOA);
}

/* The closest encloser of name that a covering NSEC proves (RFC 4035 §5.4), or NULL. */
static ldns_rdf *nsec_closest_encloser(const ldns_rr *cover, const ldns_rdf *name)
{
	ldns_rdf *a = common_ancestor(name, ldns_rr_owner(cover));
	ldns_rdf *b = common_ancestor(name, ldns_rr_rdf(cover, 0));
	if (a == NULL || b == NULL) {
		ldns_rdf_deep_free(a);
		ldns_rdf_deep_free(b);
		return NULL;
	}
	if (ldns_dname_label_count(b) > ldns_dname_label_count(a)) {
		ldns_rdf *t = a;
		a = b;
		b = t;
	}
	ldns_rdf_deep_free(b);
	return a;
}

static ldns_rdf *wildcard_at(const ldns_rdf *ce)
{
	ldns_rdf *w = ldns_dname_new_frm_str("*");
	if (w && ldns_dname_cat(w, ce) != LDNS_STATUS_OK) {
		ldns_rdf_deep_free(w);
		return NULL;
	}
	return w;
}

/* NSEC denial of name/qtype (RFC 4035 §5.4): nxdomain, or no data of qtype. */
static bool nsec_denies(ldns_rr_list *nsecs, const ldns_rdf *name, ldns_rr_type qtype, bool nxdomain)
{
	size_t n = ldns_rr_list_rr_count(nsecs);
	if (!nxdomain) {
		for (size_t i = 0; i < n; i++) {
			ldns_rr *x = ldns_rr_list_rr(nsecs, i);
			if (ldns_dname_compare(ldns_rr_owner(x), name) != 0)
				continue;
			ldns_rdf *bm = ldns_nsec_get_bitmap(x);
			return bm && !ldns_nsec_bitmap_covers_type(bm, qtype) &&
			       !ldns_nsec_bitmap_covers_type(bm, LDNS_RR_TYPE_CNAME) &&
			       (qtype == LDNS_RR_TYPE_DS || !nsec_is_delegation(x));
		}
	}
	/* the name does not exist... */
	ldns_rr *cover = NULL;
	for (size_t i = 0; i < n && cover == NULL; i++)
		if (nsec_covers(ldns_rr_list_rr(nsecs, i), name))
			cover = ldns_rr_list_rr(nsecs, i);
	if (cover == NULL)
		return false;
	/* ...and the wildcard at its closest encloser does not (NXDOMAIN) or lacks qtype (wildcard NODATA) */
	ldns_rdf *ce = nsec_closest_encloser(cover, name);
	ldns_rdf *wild = ce ? wildcard_at(ce) : NULL;
	ldns_rdf_deep_free(ce);
	if (wild == NULL)
		return false;
	bool ok = false;
	for (size_t i = 0; i < n && !ok; i++) {
		ldns_rr *x = ldns_rr_list_rr(nsecs, i);
		if (nxdomain) {
			ok = nsec_covers(x, wild);
		} else if (ldns_dname_compare(ldns_rr_owner(x), wild) == 0) {
			ldns_rdf *bm = ldns_nsec_get_bitmap(x);
			ok = bm && !ldns_nsec_bitmap_covers_type(bm, qtype) &&
			     !ldns_nsec_bitmap_covers_type(bm, LDNS_RR_TYPE_CNAME);
		}
	}
	ldns_rdf_deep_free(wild);
	return ok;
}

static bool nsec3_iterations_ok(ldns_rr_list *nsec3s)
{
	for (size_t i = 0; i < ldns_rr_list_rr_count(nsec3s); i++)
		if (ldns_nsec3_iterations(ldns_rr_list_rr(nsec3s, i)) > NSEC3_MAX_ITERATIONS)
			return false;
	return true;
}

/* name hashed with nsec3's parameters, under the NSEC3's zone; NULL on error. */
static ldns_rdf *nsec3_hashed(const ldns_rr *nsec3, const ldns_rdf *name)
{
	ldns_rdf *h = ldns_nsec3_hash_name_frm_nsec3(nsec3, name);
	ldns_rdf *zone = ldns_dname_left_chop(ldns_rr_owner(nsec3));
	if (h == NULL || zone == NULL || ldns_dname_cat(h, zone) != LDNS_STATUS_OK) {
		ldns_rdf_deep_free(h);
		h = NULL;
	}
	ldns_rdf_deep_free(zone);
	return h;
}

/* Does a proven-nonexistent name cover owner (an expanded wildcard's owner, RFC 4035 §5.3.4, RFC 5155 §8.8)? */
static bool expansion_proven(ldns_rr_list *nsecs, ldns_rr_list *nsec3s, const ldns_rdf *owner, uint8_t labels)
{
	for (size_t i = 0; nsecs && i < ldns_rr_list_rr_count(nsecs); i++)
		if (nsec_covers(ldns_rr_list_rr(nsecs, i), owner))
			return true;
	if (nsec3s == NULL)
		return false;
	/* the next closer name: the owner cut to labels + 1 labels */
	uint8_t total = ldns_dname_label_count(owner);
	if (total <= labels)
		return false;
	ldns_rdf *next = ldns_dname_clone_from(owner, (size_t)(total - labels - 1));
	bool ok = false;
	for (size_t i = 0; next && i < ldns_rr_list_rr_count(nsec3s) && !ok; i++) {
		ldns_rr *x = ldns_rr_list_rr(nsec3s, i);
		ldns_rdf *h = nsec3_hashed(x, next);
		ok = h && ldns_dname_compare(ldns_rr_owner(x), h) != 0 && ldns_nsec_covers_name(x, h);
		ldns_rdf_deep_free(h);
	}
	ldns_rdf_deep_free(next);
	return ok;
}

static bool has_type(ldns_rr_list *l, ldns_rr_type t)
{
	for (size_t i = 0; i < ldns_rr_list_rr_count(l); i++)
		if (ldns_rr_get_type(ldns_rr_list_rr(l, i)) == t)
			return true;
	return false;
}

/* The name the answer's CNAME chain from qname ends at (a new rdf). */
static ldns_rdf *chain_end(ldns_pkt *pkt, const ldns_rdf *qname, ldns_rr_type qtype, bool *has_data)
{
	ldns_rdf *name = ldns_rdf_clone(qname);
	ldns_rr_list *ans = ldns_pkt_answer(pkt);
	*has_data = false;
	for (unsigned hops = 0; name && hops <= ldns_rr_list_rr_count(ans); hops++) {
		ldns_rdf *next = NULL;
		for (size_t i = 0; i < ldns_rr_list_rr_count(ans); i++) {
			ldns_rr *rr = ldns_rr_list_rr(ans, i);
			if (ldns_dname_compare(ldns_rr_owner(rr), name) != 0)
				continue;
			if (ldns_rr_get_type(rr) == qtype || qtype == LDNS_RR_TYPE_ANY)
				*has_data = true;
			else if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_CNAME && ldns_rr_rdf(rr, 0))
				next = ldns_rr_rdf(rr, 0);
		}
		if (*has_data || next == NULL || qtype == LDNS_RR_TYPE_CNAME)
			break;
		ldns_rdf_deep_free(name);
		name = ldns_rdf_clone(next);
	}
	return name;
}

/* A negative answer's proof and the proofs of wildcard expansions. */
static void check_proofs(struct vctx *v, const ldns_rdf *qname, uint16_t qtype)
{
	bool has_data;
	ldns_rdf *final = chain_end(v->pkt, qname, qtype, &has_data);
	bool nxdomain = ldns_pkt_get_rcode(v->pkt) == LDNS_RCODE_NXDOMAIN;
	ldns_rr_list *nsecs = auth_of_type(v->pkt, LDNS_RR_TYPE_NSEC);
	ldns_rr_list *nsec3s = auth_of_type(v->pkt, LDNS_RR_TYPE_NSEC3);
	if (final == NULL) {
		degrade(v, VAL_INDETERMINATE, &EDE_LOOKUP, "out of memory", qname);
		goto out;
	}
	if (nsec3s && !nsec3_iterations_ok(nsec3s)) {
		degrade(v, VAL_BOGUS, &EDE_ITER, "NSEC3 iterations above 150 (RFC 9276)", final);
		goto out;
	}
	for (unsigned i = 0; i < v->nwild; i++)
		if (!expansion_proven(nsecs, nsec3s, v->wild_owner[i], v->wild_labels[i]))
			degrade(v, VAL_BOGUS, &EDE_NO_PROOF, "wildcard expansion without proof", v->wild_owner[i]);
	if (has_data && !nxdomain)
		goto out;
	/* a CNAME out of this message's zone, nothing said of its target:
	 * the target's own answer (the next hop) carries its proof */
	if (!nxdomain && ldns_dname_compare(final, qname) != 0 && nsecs == NULL && nsec3s == NULL &&
	    !has_type(ldns_pkt_authority(v->pkt), LDNS_RR_TYPE_SOA))
		goto out;
	if (has_data) {
		degrade(v, VAL_BOGUS, &EDE_MALFORMED, "NXDOMAIN with data for the name", final);
		goto out;
	}
	bool ok = false;
	if (nsecs)
		ok = nsec_denies(nsecs, final, (ldns_rr_type)qtype, nxdomain);
	if (!ok && nsec3s) {
		ldns_rr *q = ldns_rr_new_frm_type(qtype);
		if (q) {
			ldns_rr_set_owner(q, ldns_rdf_clone(final));
			ok = ldns_dnssec_verify_denial_nsec3(q, nsec3s, NULL, nxdomain ? LDNS_RCODE_NXDOMAIN : LDNS_RCODE_NOERROR,
			                                     (ldns_rr_type)qtype, !nxdomain) == LDNS_STATUS_OK;
			ldns_rr_free(q);
		}
	}
	if (!ok)
		degrade(v, VAL_BOGUS, &EDE_NO_PROOF, nxdomain ? "NXDOMAIN not proven" : "no data not proven", final);
out:
	ldns_rdf_deep_free(final);
	ldns_rr_list_free(nsecs);
	ldns_rr_list_free(nsec3s);
}

void val_check(const uint8_t *msg, size_t len, const uint8_t *qname, size_t qname_len, uint16_t qtype,
               const struct val_needs *needs, time_t now, struct val_outcome *out)
{
	memset(out, 0, sizeof(*out));
	out->state = VAL_SECURE;
	struct vctx v = { .needs = needs, .now = now, .out = out };
	ldns_rdf *q = NULL;
	if (ldns_wire2pkt(&v.pkt, msg, len) != LDNS_STATUS_OK || !section_well_formed(ldns_pkt_answer(v.pkt)) ||
	    !section_well_formed(ldns_pkt_authority(v.pkt)) ||
	    (q = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_DNAME, qname_len, qname)) == NULL) {
		out->state = VAL_BOGUS;
		out->ede = EDE_MALFORMED;
		out->why = "malformed answer";
		snprintf(out->zone, sizeof(out->zone), "?");
		goto done;
	}
	check_section(&v, ldns_pkt_answer(v.pkt));
	check_section(&v, ldns_pkt_authority(v.pkt));
	/* the proofs mean something only for data shown secure */
	if (out->state == VAL_SECURE)
		check_proofs(&v, q, qtype);
done:
	for (unsigned i = 0; i < v.nwild; i++)
		ldns_rdf_deep_free(v.wild_owner[i]);
	for (unsigned i = 0; i < VAL_MAX_NEEDS; i++) {
		ldns_rr_list_free(v.keys[i]);
		ldns_pkt_free(v.key_pkts[i]);
	}
	ldns_rdf_deep_free(q);
	ldns_pkt_free(v.pkt);
}
