/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The etcd v3 client (see etcd.h). Why the JSON gateway and not gRPC:
 * Debian packages no C gRPC client for etcd, while libcurl and json-c are
 * well kept and everywhere; the gateway is part of every etcd server and
 * speaks the same API (keys and values base64, 64-bit numbers as strings).
 *
 * Every answer is hostile input: bodies are capped, numbers parsed
 * strictly, keys and values must be valid base64, and anything else is
 * ETCD_E_PROTOCOL rather than a guess.
 */
#include "etcd/etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"
#include "util/vec.h"

/* Largest answer to one request unless the caller says less (etcd_range's
 * max_bytes): ranges are read in pages bounded in bytes (see callers), so a
 * bigger body is a broken or hostile server, or a value no reader takes. */
#define ETCD_BODY_MAX ((size_t)64 << 20)

struct etcd {
	char **endpoints;
	size_t nendpoints;
	size_t cur;            /* the member to try first: the last that answered */
	char *username, *password, *ca, *cert, *key;
	unsigned timeout_ms;
	char *token;           /* "Authorization" header value; NULL before authenticating */
	size_t body_max;       /* the next answer's cap (0: ETCD_BODY_MAX) */
	CURL *curl;
	char member[256];
	char err[512];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s)
{
	return s != NULL && s[0] != '\0' ? strdup(s) : NULL;
}

struct etcd *etcd_new(const struct etcd_opts *o)
{
	pthread_once(&curl_once, curl_init_once);
	struct etcd *e = calloc(1, sizeof(*e));
	if (e == NULL || o->nendpoints == 0)
		goto fail;
	if ((e->endpoints = calloc(o->nendpoints, sizeof(char *))) == NULL)
		goto fail;
	e->nendpoints = o->nendpoints;
	for (size_t i = 0; i < o->nendpoints; i++)
		if ((e->endpoints[i] = strdup(o->endpoints[i])) == NULL)
			goto fail;
	e->username = dup_or_null(o->username);
	e->password = dup_or_null(o->password);
	e->ca = dup_or_null(o->ca);
	e->cert = dup_or_null(o->cert);
	e->key = dup_or_null(o->key);
	e->timeout_ms = o->timeout_ms ? o->timeout_ms : 2000;
	if ((e->curl = curl_easy_init()) == NULL)
		goto fail;
	return e;
fail:
	etcd_free(e);
	return NULL;
}

void etcd_free(struct etcd *e)
{
	if (e == NULL)
		return;
	for (size_t i = 0; e->endpoints != NULL && i < e->nendpoints; i++)
		free(e->endpoints[i]);
	free(e->endpoints);
	free(e->username);
	if (e->password != NULL)
		explicit_bzero(e->password, strlen(e->password));
	free(e->password);
	free(e->ca);
	free(e->cert);
	free(e->key);
	free(e->token);
	if (e->curl != NULL)
		curl_easy_cleanup(e->curl);
	free(e);
}

const char *etcd_error(const struct etcd *e)
{
	return e->err;
}

const char *etcd_member(const struct etcd *e)
{
	return e->member;
}

const char *etcd_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case ETCD_E_UNAVAILABLE:
		return "no etcd member answered";
	case ETCD_E_PROTOCOL:
		return "etcd's answer was not understood";
	case ETCD_E_SERVER:
		return "etcd refused the request";
	case ETCD_E_COMPACTED:
		return "the revision was compacted away";
	case ETCD_E_AUTH:
		return "etcd authentication failed or permission denied";
	case ETCD_E_STOPPED:
		return "stopped";
	case ETCD_E_NOMEM:
		return "out of memory";
	case ETCD_E_TOOBIG:
		return "etcd's answer was larger than the client reads";
	default:
		return "unknown etcd error";
	}
}

__attribute__((format(printf, 2, 3))) static void set_err(struct etcd *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->err, sizeof(e->err), fmt, ap);
	va_end(ap);
}

/* libcurl opens the TLS files itself, with a blocking open(): a FIFO named
 * there would hold the calling thread for good (util/file.h). */
static int tls_files_check(struct etcd *e)
{
	const char *const files[] = { e->ca, e->cert, e->key };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int rc = files[i] != NULL ? file_check_regular(files[i]) : 0;
		if (rc != 0) {
			set_err(e, "TLS file %s: %s", files[i], file_strerror(rc));
			return ETCD_E_UNAVAILABLE;
		}
	}
	return 0;
}

const char *etcd_prefix_end(const char *prefix, char *buf, size_t size)
{
	size_t n = strlen(prefix);
	if (n == 0 || n + 1 > size) {
		/* the whole key space: etcd's "\0" end */
		snprintf(buf, size, "%s", "");
		return buf;
	}
	memcpy(buf, prefix, n + 1);
	/* etcd's convention: the prefix with its last byte plus one (a '/'
	 * becomes '0'); prefixes here are printable text, never 0xff. */
	buf[n - 1] = (char)((unsigned char)buf[n - 1] + 1);
	return buf;
}

/* ---- base64 (libcrypto's codec; etcd's gateway uses the standard alphabet with padding) ---- */

static char *b64_encode(const void *data, size_t len)
{
	size_t out = 4 * ((len + 2) / 3) + 1;
	char *s = malloc(out);
	if (s != NULL)
		EVP_EncodeBlock((unsigned char *)s, data, (int)len);
	return s;
}

/* Strict: only the alphabet, length a multiple of 4, padding only at the end, no stray bits. @return malloc'd, NUL-terminated. */
static uint8_t *b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s);
	if (n % 4 != 0 || n > INT32_MAX)
		return NULL;
	size_t pad = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
		             c == '/';
		if (c == '=' && i >= n - 2) {
			pad++;
			continue;
		}
		if (!alpha || pad > 0)
			return NULL;
	}
	/* the bits after the data are zero (one encoding per value, as etcd writes it) */
	if (pad > 0) {
		static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		size_t last = (size_t)(strchr(alphabet, s[n - pad - 1]) - alphabet);
		if ((last & (pad == 1 ? 0x3 : 0xf)) != 0)
			return NULL;
	}
	uint8_t *out = malloc(n / 4 * 3 + 1);
	if (out == NULL)
		return NULL;
	int got = n > 0 ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)n) : 0;
	if (got < 0 || (size_t)got < pad) {
		free(out);
		return NULL;
	}
	*len = (size_t)got - pad; /* EVP_DecodeBlock counts padding as zero bytes */
	out[*len] = '\0';
	return out;
}

/* ---- JSON fields ---- */

/* A 64-bit integer field: the gateway writes them as strings; absent is 0. */
static bool j_i64(json_object *o, const char *k, int64_t *out)
{
	json_object *v;
	*out = 0;
	if (!json_object_object_get_ex(o, k, &v) || v == NULL)
		return true;
	if (json_object_is_type(v, json_type_int)) {
		/* json-c saturates what does not fit: INT64_MAX is then not the number sent */
		*out = json_object_get_int64(v);
		return *out != INT64_MAX || json_object_get_uint64(v) == (uint64_t)INT64_MAX;
	}
	if (!json_object_is_type(v, json_type_string))
		return false;
	const char *s = json_object_get_string(v);
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || (s[0] != '-' && (s[0] < '0' || s[0] > '9')))
		return false;
	*out = x;
	return true;
}

static bool j_u64(json_object *o, const char *k, uint64_t *out)
{
	json_object *v;
	*out = 0;
	if (!json_object_object_get_ex(o, k, &v) || v == NULL)
		return true;
	if (!json_object_is_type(v, json_type_string))
		return false;
	const char *s = json_object_get_string(v);
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] < '0' || s[0] > '9')
		return false;
	*out = x;
	return true;
}

/* A boolean field: absent (or null) is false; anything but a boolean is not etcd's. */
static bool j_bool(json_object *o, const char *k, bool *out)
{
	json_object *v;
	*out = false;
	if (!json_object_object_get_ex(o, k, &v) || v == NULL)
		return true;
	if (!json_object_is_type(v, json_type_boolean))
		return false;
	*out = json_object_get_boolean(v);
	return true;
}

/* A string field; NULL when absent, not a string, or holding a NUL ("\u0000" would cut it short). */
static const char *j_str(json_object *o, const char *k)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	const char *s = json_object_get_string(v);
	return strlen(s) == (size_t)json_object_get_string_len(v) ? s : NULL;
}

/* Whether field k is absent or null. */
static bool j_absent(json_object *o, const char *k)
{
	json_object *v;
	return !json_object_object_get_ex(o, k, &v) || v == NULL;
}

static bool j_header(json_object *o, int64_t *revision, uint64_t *cluster)
{
	json_object *h;
	*revision = 0;
	*cluster = 0;
	if (!json_object_object_get_ex(o, "header", &h) || !json_object_is_type(h, json_type_object))
		return false;
	return j_i64(h, "revision", revision) && j_u64(h, "cluster_id", cluster) && *revision >= 0;
}

static void kv_clear(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

/* What the watch parser leaves of a JSON string too long to read: "!" and its length ("!" is no base64). */
#define ELIDED_MARK '!'

/* Whether s is the watch parser's stand-in for a string too long to read. */
static bool elided(const char *s)
{
	return s[0] == ELIDED_MARK;
}

/*
 * A KeyValue: key required; value may be absent (empty, or a delete event).
 * What etcd may hold but a caller cannot take as text is kept, with kv->bad
 * saying why, so that the caller can name it and go on: a key with a NUL
 * byte (etcd keys are any bytes) and, from the watch parser (cut), a value
 * or key too long to read. @return false for what etcd's gateway never sends.
 */
static bool j_kv(json_object *o, struct etcd_kv *kv, bool cut)
{
	memset(kv, 0, sizeof(*kv));
	const char *k = j_str(o, "key"), *v = j_str(o, "value");
	if (k == NULL || (v == NULL && !j_absent(o, "value")))
		return false;
	if (cut && elided(k)) {
		kv->bad = "the key is too long to read";
		kv->key = calloc(1, 1);
	} else if ((kv->key = (char *)b64_decode(k, &kv->keylen)) == NULL) {
		return false;
	} else if (strlen(kv->key) != kv->keylen) {
		kv->bad = "the key holds a NUL byte";
	}
	if (kv->key == NULL)
		goto bad;
	if (v != NULL && cut && elided(v)) {
		kv->bad = kv->bad ? kv->bad : "the value is too large to read";
		if ((kv->value = calloc(1, 1)) == NULL)
			goto bad;
	} else if (v != NULL) {
		if ((kv->value = b64_decode(v, &kv->vlen)) == NULL)
			goto bad;
	} else if ((kv->value = calloc(1, 1)) == NULL) {
		goto bad;
	}
	if (!j_i64(o, "create_revision", &kv->create_revision) || !j_i64(o, "mod_revision", &kv->mod_revision) ||
	    !j_i64(o, "lease", &kv->lease) || kv->mod_revision < 0 || kv->create_revision < 0)
		goto bad;
	if (kv->bad != NULL && kv->vlen > 0) {
		/* only to be named: no value a caller could take by mistake */
		kv->value[0] = '\0';
		kv->vlen = 0;
	}
	return true;
bad:
	kv_clear(kv);
	return false;
}

static json_object *j_b64(const void *data, size_t len)
{
	char *s = b64_encode(data, len);
	if (s == NULL)
		return NULL;
	json_object *o = json_object_new_string(s);
	free(s);
	return o;
}

/* A whole answer's body as JSON (the client's one parse of a body). @return NULL when it is not JSON. */
static json_object *parse_object(const char *buf, size_t len)
{
	if (len > INT32_MAX)
		return NULL;
	json_tokener *tok = json_tokener_new();
	if (tok == NULL)
		return NULL;
	/* strict: no comments, no trailing commas; and nothing but white space after the value */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	json_object *o = json_tokener_parse_ex(tok, buf, (int)len);
	size_t end = json_tokener_get_parse_end(tok);
	while (end < len && (buf[end] == ' ' || buf[end] == '\n' || buf[end] == '\r' || buf[end] == '\t'))
		end++;
	if (json_tokener_get_error(tok) != json_tokener_success || end != len) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* ---- HTTP ---- */

struct body {
	char *buf;
	size_t len, cap;
	size_t max;    /* the cap */
	bool too_big;
};

static size_t body_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	size_t n = size * nmemb;
	if (b->len + n + 1 > b->max) {
		b->too_big = true;
		return 0;
	}
	if (vec_grow(&b->buf, &b->cap, b->len + n + 1, 1, b->max) != 0)
		return 0;
	memcpy(b->buf + b->len, data, n);
	b->len += n;
	b->buf[b->len] = '\0';
	return n;
}

/* Options common to every request to url. */
static struct curl_slist *setup(struct etcd *e, const char *url, const char *body)
{
	CURL *c = e->curl;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)e->timeout_ms);
	/* etcd is reached directly: no proxy from the environment */
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 5L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 2L);
	if (e->ca != NULL)
		curl_easy_setopt(c, CURLOPT_CAINFO, e->ca);
	if (e->cert != NULL)
		curl_easy_setopt(c, CURLOPT_SSLCERT, e->cert);
	if (e->key != NULL)
		curl_easy_setopt(c, CURLOPT_SSLKEY, e->key);
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	if (h != NULL && e->token != NULL) {
		char auth[1024];
		snprintf(auth, sizeof(auth), "Authorization: %s", e->token);
		struct curl_slist *h2 = curl_slist_append(h, auth);
		if (h2 != NULL)
			h = h2;
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	return h;
}

/* gRPC codes etcd answers with (google.golang.org/grpc/codes). */
enum { GRPC_OUT_OF_RANGE = 11, GRPC_UNAVAILABLE = 14, GRPC_PERMISSION_DENIED = 7, GRPC_UNAUTHENTICATED = 16,
       GRPC_INVALID_ARGUMENT = 3, GRPC_FAILED_PRECONDITION = 9 };

/* An error answer: {"error": "...", "code": N, "message": "..."}. @return the ETCD_E_* for it. */
static int error_answer(struct etcd *e, const char *url, long status, json_object *o)
{
	int64_t code = 0;
	const char *msg = o != NULL ? j_str(o, "message") : NULL;
	if (o != NULL)
		j_i64(o, "code", &code);
	set_err(e, "%s: HTTP %ld%s%s", url, status, msg ? ": " : "", msg ? msg : "");
	if (code == GRPC_OUT_OF_RANGE && msg != NULL && strstr(msg, "compacted") != NULL)
		return ETCD_E_COMPACTED;
	if (code == GRPC_PERMISSION_DENIED || code == GRPC_UNAUTHENTICATED)
		return ETCD_E_AUTH;
	if (code == GRPC_UNAVAILABLE || status == 503 || status == 502)
		return ETCD_E_UNAVAILABLE;
	return ETCD_E_SERVER;
}

static int authenticate(struct etcd *e);

/*
 * POST body to path on a member: the last one that answered first, then the
 * others. A member that cannot be reached, times out or has no leader is
 * passed over; any other answer is final.
 * @return 0 (*out: the parsed answer, json_object_put it), ETCD_E_*.
 */
static int request(struct etcd *e, const char *path, const char *body, json_object **out)
{
	int rc = ETCD_E_UNAVAILABLE;
	bool reauthed = false;
	*out = NULL;
	if (tls_files_check(e) != 0)
		return ETCD_E_UNAVAILABLE;
	for (size_t tried = 0; tried < e->nendpoints; tried++) {
		size_t i = (e->cur + tried) % e->nendpoints;
		char url[512];
		snprintf(url, sizeof(url), "%s%s", e->endpoints[i], path);
		struct body b = { .max = e->body_max ? e->body_max : ETCD_BODY_MAX };
		struct curl_slist *h = setup(e, url, body);
		curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
		curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, body_write);
		curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
		CURLcode cc = curl_easy_perform(e->curl);
		curl_slist_free_all(h);
		long status = 0;
		curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
		if (cc != CURLE_OK) {
			if (b.too_big)
				set_err(e, "%s: answer larger than %zu bytes", url, b.max);
			else
				set_err(e, "%s: %s", url, curl_easy_strerror(cc));
			free(b.buf);
			rc = b.too_big ? ETCD_E_TOOBIG : ETCD_E_UNAVAILABLE;
			if (b.too_big)
				return rc;
			continue;
		}
		json_object *o = b.buf != NULL ? parse_object(b.buf, b.len) : NULL;
		free(b.buf);
		if (status == 200 && o != NULL && json_object_is_type(o, json_type_object)) {
			e->cur = i;
			snprintf(e->member, sizeof(e->member), "%s", e->endpoints[i]);
			*out = o;
			return 0;
		}
		/* a 200 with JSON that is not an object is no error answer either */
		rc = status != 200 ? error_answer(e, url, status, o) : ETCD_E_PROTOCOL;
		if (rc == ETCD_E_PROTOCOL)
			set_err(e, "%s: HTTP %ld with a body that is not a JSON object", url, status);
		json_object_put(o);
		if (rc == ETCD_E_AUTH && e->username != NULL && !reauthed && strcmp(path, "/v3/auth/authenticate") != 0) {
			/* a token expires (etcd's simple tokens after 5 minutes idle): once more with a new one */
			reauthed = true;
			free(e->token);
			e->token = NULL;
			if ((rc = authenticate(e)) != 0)
				return rc;
			tried--;
			continue;
		}
		if (rc != ETCD_E_UNAVAILABLE)
			return rc;
	}
	return rc;
}

static int authenticate(struct etcd *e)
{
	json_object *req = json_object_new_object(), *ans = NULL;
	if (req == NULL)
		return ETCD_E_NOMEM;
	json_object_object_add(req, "name", json_object_new_string(e->username));
	json_object_object_add(req, "password", json_object_new_string(e->password ? e->password : ""));
	const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	int rc = body ? request(e, "/v3/auth/authenticate", body, &ans) : ETCD_E_NOMEM;
	json_object_put(req);
	if (rc != 0)
		return rc;
	const char *token = j_str(ans, "token");
	if (token == NULL || strlen(token) > 512 || strpbrk(token, "\r\n") != NULL) {
		set_err(e, "etcd authentication: no usable token in the answer");
		json_object_put(ans);
		return ETCD_E_PROTOCOL;
	}
	e->token = strdup(token);
	json_object_put(ans);
	return e->token != NULL ? 0 : ETCD_E_NOMEM;
}

/* request() with a JSON body, authenticating first when a user is set. */
static int call(struct etcd *e, const char *path, json_object *req, json_object **out)
{
	*out = NULL;
	if (req == NULL)
		return ETCD_E_NOMEM;
	int rc = 0;
	if (e->username != NULL && e->token == NULL)
		rc = authenticate(e);
	if (rc == 0) {
		const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
		rc = body != NULL ? request(e, path, body, out) : ETCD_E_NOMEM;
	}
	json_object_put(req);
	return rc;
}

/* ---- KV ---- */

void etcd_range_free(struct etcd_range *r)
{
	for (size_t i = 0; i < r->n; i++)
		kv_clear(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

/* A range answer, parsed. @return 0 (out filled), ETCD_E_PROTOCOL, ETCD_E_NOMEM (out cleared). */
static int range_from_json(json_object *ans, struct etcd_range *out)
{
	memset(out, 0, sizeof(*out));
	json_object *kvs = NULL;
	int rc = ETCD_E_PROTOCOL;
	if (!json_object_is_type(ans, json_type_object) || !j_header(ans, &out->revision, &out->cluster))
		goto done;
	if (!j_bool(ans, "more", &out->more))
		goto done;
	if (json_object_object_get_ex(ans, "kvs", &kvs)) {
		if (!json_object_is_type(kvs, json_type_array))
			goto done;
		size_t n = json_object_array_length(kvs);
		if (n > 0 && (out->kvs = calloc(n, sizeof(*out->kvs))) == NULL) {
			rc = ETCD_E_NOMEM;
			goto done;
		}
		for (size_t i = 0; i < n; i++) {
			if (!j_kv(json_object_array_get_idx(kvs, i), &out->kvs[i], false))
				goto done;
			out->n++;
		}
	}
	rc = 0;
done:
	if (rc != 0)
		etcd_range_free(out);
	return rc;
}

int etcd_parse_range(const char *json, size_t len, struct etcd_range *out)
{
	memset(out, 0, sizeof(*out));
	json_object *ans = parse_object(json, len);
	if (ans == NULL)
		return ETCD_E_PROTOCOL;
	int rc = range_from_json(ans, out);
	json_object_put(ans);
	return rc;
}

int etcd_range(struct etcd *e, const struct etcd_get_opts *o, struct etcd_range *out)
{
	memset(out, 0, sizeof(*out));
	json_object *req = json_object_new_object(), *ans;
	if (req == NULL)
		return ETCD_E_NOMEM;
	json_object_object_add(req, "key", j_b64(o->key, o->keylen ? o->keylen : strlen(o->key)));
	if (o->end != NULL)
		json_object_object_add(req, "range_end", j_b64(o->end, o->endlen ? o->endlen : strlen(o->end)));
	if (o->revision > 0)
		json_object_object_add(req, "revision", json_object_new_int64(o->revision));
	if (o->limit > 0)
		json_object_object_add(req, "limit", json_object_new_int64((int64_t)o->limit));
	if (o->keys_only)
		json_object_object_add(req, "keys_only", json_object_new_boolean(true));
	e->body_max = o->max_bytes;
	int rc = call(e, "/v3/kv/range", req, &ans);
	e->body_max = 0;
	if (rc != 0)
		return rc;
	rc = range_from_json(ans, out);
	if (rc == ETCD_E_PROTOCOL)
		set_err(e, "%s: a range answer that is not etcd's", e->member);
	json_object_put(ans);
	return rc;
}

int etcd_get(struct etcd *e, const char *key, const char *end, int64_t revision, size_t limit,
             struct etcd_range *out)
{
	struct etcd_get_opts o = { .key = key, .end = end, .revision = revision, .limit = limit };
	return etcd_range(e, &o, out);
}

int etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ops, size_t nops,
             bool *succeeded, int64_t *revision)
{
	*succeeded = false;
	json_object *req = json_object_new_object(), *jc = json_object_new_array(), *js = json_object_new_array(),
	            *ans;
	if (req == NULL || jc == NULL || js == NULL) {
		json_object_put(req);
		json_object_put(jc);
		json_object_put(js);
		return ETCD_E_NOMEM;
	}
	for (size_t i = 0; i < ncmp; i++) {
		json_object *c = json_object_new_object();
		json_object_object_add(c, "result", json_object_new_string("EQUAL"));
		json_object_object_add(c, "target", json_object_new_string("MOD"));
		json_object_object_add(c, "key", j_b64(cmp[i].key, strlen(cmp[i].key)));
		json_object_object_add(c, "mod_revision", json_object_new_int64(cmp[i].mod_revision));
		json_object_array_add(jc, c);
	}
	for (size_t i = 0; i < nops; i++) {
		json_object *op = json_object_new_object(), *r = json_object_new_object();
		json_object_object_add(r, "key", j_b64(ops[i].key, strlen(ops[i].key)));
		if (ops[i].del) {
			json_object_object_add(op, "request_delete_range", r);
		} else {
			json_object_object_add(r, "value", j_b64(ops[i].value, ops[i].vlen));
			if (ops[i].lease != 0)
				json_object_object_add(r, "lease", json_object_new_int64(ops[i].lease));
			json_object_object_add(op, "request_put", r);
		}
		json_object_array_add(js, op);
	}
	json_object_object_add(req, "compare", jc);
	json_object_object_add(req, "success", js);
	int rc = call(e, "/v3/kv/txn", req, &ans);
	if (rc != 0)
		return rc;
	int64_t rev;
	uint64_t cluster;
	if (!j_header(ans, &rev, &cluster) || !j_bool(ans, "succeeded", succeeded)) {
		*succeeded = false;
		set_err(e, "%s: a transaction answer without its header", e->member);
		json_object_put(ans);
		return ETCD_E_PROTOCOL;
	}
	if (revision != NULL)
		*revision = rev;
	json_object_put(ans);
	return 0;
}

/* ---- leases ---- */

int etcd_lease_grant(struct etcd *e, unsigned ttl, int64_t *id)
{
	json_object *req = json_object_new_object(), *ans;
	if (req == NULL)
		return ETCD_E_NOMEM;
	json_object_object_add(req, "TTL", json_object_new_int64(ttl));
	int rc = call(e, "/v3/lease/grant", req, &ans);
	if (rc != 0)
		return rc;
	int64_t granted;
	if (!j_i64(ans, "ID", id) || *id == 0 || !j_i64(ans, "TTL", &granted) || granted <= 0) {
		const char *err = j_str(ans, "error");
		set_err(e, "%s: lease not granted%s%s", e->member, err ? ": " : "", err ? err : "");
		rc = err ? ETCD_E_SERVER : ETCD_E_PROTOCOL;
	}
	json_object_put(ans);
	return rc;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl)
{
	json_object *req = json_object_new_object(), *ans;
	if (req == NULL)
		return ETCD_E_NOMEM;
	json_object_object_add(req, "ID", json_object_new_int64(id));
	/* a stream on the gRPC side: the gateway answers one message per request */
	int rc = call(e, "/v3/lease/keepalive", req, &ans);
	if (rc != 0)
		return rc;
	json_object *res;
	if (!json_object_object_get_ex(ans, "result", &res) || !json_object_is_type(res, json_type_object) ||
	    !j_i64(res, "TTL", ttl)) {
		set_err(e, "%s: a keepalive answer that is not etcd's", e->member);
		rc = ETCD_E_PROTOCOL;
	}
	json_object_put(ans);
	return rc;
}

int etcd_lease_revoke(struct etcd *e, int64_t id)
{
	json_object *req = json_object_new_object(), *ans;
	if (req == NULL)
		return ETCD_E_NOMEM;
	json_object_object_add(req, "ID", json_object_new_int64(id));
	int rc = call(e, "/v3/lease/revoke", req, &ans);
	json_object_put(ans);
	return rc;
}

/* ---- watch ---- */

/*
 * The stream is cut into messages here, and each message is parsed whole:
 * json-c's own incremental parse reads a broken number differently when a
 * piece ends inside it ("1-2" is 1 when cut after the 1, an error when not),
 * so what fn saw would hang on how TCP cut the stream.
 *
 * Size: a JSON string longer than value_max (a value nobody reads, or one
 * put by mistake) is not kept: the message holds "!LENGTH" in its place,
 * and j_kv hands the kv over with bad set, its key named. So one large
 * event costs a read, not memory, and never ends the stream: a stream that
 * ended on it would end there again after every reconnect (the watch comes
 * back from the same revision) and the node would never move on. The
 * rest of a message is capped at message_max; etcd is asked to fragment
 * its responses (a 1,000-revision catch-up is one response), so a
 * message stays near etcd's request limit. Fragments are put together by
 * revision: fn gets each revision whole, as soon as a later one begins.
 */
struct etcd_watch_parser {
	char *buf;           /* the message being read, from its '{' */
	size_t len, cap;
	size_t depth;        /* of objects and arrays, outside strings; 0: between messages */
	bool in_string, escape;
	bool eliding;        /* the string being read is too long: its bytes are dropped */
	size_t str_start;    /* where its text starts in buf */
	size_t str_len;      /* its bytes so far (as sent, escapes and all) */
	size_t value_max, message_max;
	struct etcd_event *pending; /* events of fragments not yet handed to fn (an unfinished revision) */
	size_t npending, pending_cap, pending_bytes;
	etcd_watch_fn fn;
	void *arg;
	int rc;              /* non-zero: the stream ended with it */
	int64_t compacted;
	bool created;
	char err[256];
};

__attribute__((format(printf, 2, 3))) static void parser_err(struct etcd_watch_parser *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
}

struct etcd_watch_parser *etcd_watch_parser_new(etcd_watch_fn fn, void *arg)
{
	struct etcd_watch_parser *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;

	p->fn = fn;
	p->arg = arg;
	p->value_max = ETCD_VALUE_MAX;
	p->message_max = ETCD_MESSAGE_MAX;
	return p;
}

void etcd_watch_parser_limits(struct etcd_watch_parser *p, size_t value_max, size_t message_max)
{
	p->value_max = value_max;
	p->message_max = message_max;
}

static void events_free(struct etcd_event *ev, size_t n);

void etcd_watch_parser_free(struct etcd_watch_parser *p)
{
	if (p == NULL)
		return;
	free(p->buf);
	events_free(p->pending, p->npending);
	free(p);
}

bool etcd_watch_parser_created(const struct etcd_watch_parser *p)
{
	return p->created;
}

int64_t etcd_watch_parser_compacted(const struct etcd_watch_parser *p)
{
	return p->compacted;
}

const char *etcd_watch_parser_error(const struct etcd_watch_parser *p)
{
	return p->err;
}

static void events_free(struct etcd_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++)
		kv_clear(&ev[i].kv);
	free(ev);
}

/*
 * The n events of one message (taken over). Without fragments, and on a
 * response's last fragment, fn gets all of them (with those held); on any
 * other fragment, the revisions before the last one seen, which no later
 * fragment can add to (events come in revision order). @return fn's value.
 */
static int deliver(struct etcd_watch_parser *p, struct etcd_event *ev, size_t n, bool fragment, int64_t rev,
                   uint64_t cluster)
{
	if (!fragment && p->npending == 0) {
		int rc = n > 0 ? p->fn(ev, n, rev, cluster, p->arg) : 0;
		events_free(ev, n);
		return rc;
	}
	if (vec_grow(&p->pending, &p->pending_cap, p->npending + n, sizeof(*p->pending), SIZE_MAX) != 0) {
		events_free(ev, n);
		return ETCD_E_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		p->pending_bytes += ev[i].kv.keylen + ev[i].kv.vlen + sizeof(*ev);
	if (n > 0)
		memcpy(p->pending + p->npending, ev, n * sizeof(*ev));
	p->npending += n;
	free(ev);
	size_t ready = p->npending;
	if (fragment) {
		/* the last revision seen may go on in the next fragment */
		while (ready > 0 && p->pending[ready - 1].kv.mod_revision == p->pending[p->npending - 1].kv.mod_revision)
			ready--;
		if (p->pending_bytes > p->message_max) {
			parser_err(p, "one revision's events larger than %zu bytes", p->message_max);
			return ETCD_E_TOOBIG;
		}
	}
	if (ready == 0)
		return 0;
	int rc = p->fn(p->pending, ready, rev, cluster, p->arg);
	for (size_t i = 0; i < ready; i++) {
		p->pending_bytes -= p->pending[i].kv.keylen + p->pending[i].kv.vlen + sizeof(*p->pending);
		kv_clear(&p->pending[i].kv);
	}
	memmove(p->pending, p->pending + ready, (p->npending - ready) * sizeof(*p->pending));
	p->npending -= ready;
	return rc;
}

/* One message of the stream. @return 0 to go on, or the reason to stop. */
static int watch_message(struct etcd_watch_parser *p, json_object *o)
{
	json_object *res;
	if (!json_object_is_type(o, json_type_object))
		return ETCD_E_PROTOCOL;
	if (!json_object_object_get_ex(o, "result", &res)) {
		json_object *err;
		if (json_object_object_get_ex(o, "error", &err)) {
			const char *msg = json_object_is_type(err, json_type_object) ? j_str(err, "message") : NULL;
			int64_t code = 0;
			parser_err(p, "watch ended: %s", msg ? msg : "(no message)");
			if (json_object_is_type(err, json_type_object) && j_i64(err, "grpc_code", &code) &&
			    (code == GRPC_UNAUTHENTICATED || code == GRPC_PERMISSION_DENIED))
				return ETCD_E_AUTH;
			return ETCD_E_UNAVAILABLE;
		}
		return ETCD_E_PROTOCOL;
	}
	if (!json_object_is_type(res, json_type_object))
		return ETCD_E_PROTOCOL;
	int64_t rev, compact;
	uint64_t cluster;
	if (!j_header(res, &rev, &cluster) || !j_i64(res, "compact_revision", &compact))
		return ETCD_E_PROTOCOL;
	if (compact > 0) {
		p->compacted = compact;
		parser_err(p, "watch from a compacted revision (oldest kept %" PRId64 ")", compact);
		return ETCD_E_COMPACTED;
	}
	bool canceled, created, fragment;
	if (!j_bool(res, "canceled", &canceled) || !j_bool(res, "created", &created) ||
	    !j_bool(res, "fragment", &fragment))
		return ETCD_E_PROTOCOL;
	if (canceled) {
		const char *why = j_str(res, "cancel_reason");
		parser_err(p, "watch cancelled%s%s", why ? ": " : "", why ? why : "");
		/* the gateway cancels a watch whose token or permission etcd
		 * refuses: "rpc error: code = Unauthenticated desc = ..." */
		if (why != NULL && (strstr(why, "code = Unauthenticated") != NULL ||
		                    strstr(why, "code = PermissionDenied") != NULL))
			return ETCD_E_AUTH;
		return ETCD_E_SERVER;
	}
	if (created && !p->created) {
		p->created = true;
		int rc = p->fn(NULL, 0, rev, cluster, p->arg); /* the watch is live from here */
		if (rc != 0)
			return rc;
	}
	json_object *evs;
	if (!json_object_object_get_ex(res, "events", &evs))
		return fragment || p->npending > 0 ? deliver(p, NULL, 0, fragment, rev, cluster) : 0;
	if (!json_object_is_type(evs, json_type_array))
		return ETCD_E_PROTOCOL;
	size_t n = json_object_array_length(evs);
	if (n == 0)
		return fragment || p->npending > 0 ? deliver(p, NULL, 0, fragment, rev, cluster) : 0;
	struct etcd_event *ev = calloc(n, sizeof(*ev));
	if (ev == NULL)
		return ETCD_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_object_array_get_idx(evs, i), *kv;
		const char *type = json_object_is_type(x, json_type_object) ? j_str(x, "type") : NULL;
		if (!json_object_is_type(x, json_type_object) || (type == NULL && !j_absent(x, "type")) ||
		    !json_object_object_get_ex(x, "kv", &kv) ||
		    !json_object_is_type(kv, json_type_object) || (type && strcmp(type, "DELETE") && strcmp(type, "PUT")) ||
		    !j_kv(kv, &ev[i].kv, true)) {
			events_free(ev, i);
			return ETCD_E_PROTOCOL;
		}
		ev[i].del = type != NULL && strcmp(type, "DELETE") == 0;
	}
	return deliver(p, ev, n, fragment, rev, cluster);
}

/* The whole message in p->buf. @return 0 to go on, or the reason to stop. */
static int parser_message(struct etcd_watch_parser *p)
{
	json_object *o = parse_object(p->buf, p->len);
	p->len = 0;
	if (o == NULL) {
		parser_err(p, "the watch stream is not JSON");
		return ETCD_E_PROTOCOL;
	}
	int rc = watch_message(p, o);
	json_object_put(o);
	if (rc == ETCD_E_PROTOCOL && p->err[0] == '\0')
		parser_err(p, "a watch message that is not etcd's");
	return rc;
}

/* len bytes more of the message. @return 0, ETCD_E_TOOBIG, ETCD_E_NOMEM. */
static int parser_append(struct etcd_watch_parser *p, const char *data, size_t len)
{
	if (len == 0)
		return 0;
	if (p->len + len > p->message_max) {
		parser_err(p, "a watch message larger than %zu bytes (its values over %zu bytes left out)",
		           p->message_max, p->value_max);
		return ETCD_E_TOOBIG;
	}
	if (vec_grow(&p->buf, &p->cap, p->len + len, 1, p->message_max) != 0)
		return ETCD_E_NOMEM;
	memcpy(p->buf + p->len, data, len);
	p->len += len;
	return 0;
}

static int parser_feed(struct etcd_watch_parser *p, const char *data, size_t n)
{
	size_t run = 0; /* data[run..i) is the message's and not yet in buf */
	int rc;
	for (size_t i = 0; i < n; i++) {
		char c = data[i];
		if (p->depth == 0) {
			/* between messages: white space (a newline), then an object */
			if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
				continue;
			if (c != '{') {
				parser_err(p, "the watch stream is not JSON objects");
				return ETCD_E_PROTOCOL;
			}
			run = i;
		}
		if (p->in_string) {
			if (p->escape) {
				p->escape = false;
			} else if (c == '\\') {
				p->escape = true;
			} else if (c == '"') {
				p->in_string = false;
				if (p->eliding) {
					/* the string's stand-in, then its closing quote (from data[i]) */
					char mark[32];
					int m = snprintf(mark, sizeof(mark), "%c%zu", ELIDED_MARK, p->str_len);
					if ((rc = parser_append(p, mark, (size_t)m)) != 0)
						return rc;
					p->eliding = false;
					run = i;
				}
				continue;
			}
			if (++p->str_len > p->value_max && !p->eliding) {
				/* too long to keep: drop what was kept of it, and the rest as it comes */
				if ((rc = parser_append(p, data + run, i - run)) != 0)
					return rc;
				p->len = p->str_start;
				p->eliding = true;
			}
			if (p->eliding)
				run = i + 1;
			continue;
		}
		if (c == '"') {
			p->in_string = true;
			p->str_len = 0;
			p->str_start = p->len + (i + 1 - run);
		} else if (c == '{' || c == '[') {
			p->depth++;
		} else if ((c == '}' || c == ']') && --p->depth == 0) {
			if ((rc = parser_append(p, data + run, i + 1 - run)) != 0)
				return rc;
			if ((rc = parser_message(p)) != 0)
				return rc;
			run = i + 1;
		}
	}
	if (p->depth > 0)
		return parser_append(p, data + run, n - run);
	return 0;
}

int etcd_watch_parser_feed(struct etcd_watch_parser *p, const char *data, size_t len)
{
	if (p->rc == 0)
		p->rc = parser_feed(p, data, len);
	return p->rc;
}

/* One watch connection. */
struct watch {
	struct etcd *e;
	struct etcd_watch_parser *p;
	etcd_watch_fn fn;
	void *arg;
	const atomic_bool *stop;
	const char *member;  /* the endpoint watched */
	int rc;              /* why the transfer was cut: fn's value or an ETCD_E_* */
};

/* The caller's fn, with the member named once the watch is live. */
static int watch_fn(const struct etcd_event *ev, size_t n, int64_t header_revision, uint64_t cluster, void *arg)
{
	struct watch *w = arg;
	if (ev == NULL && n == 0)
		snprintf(w->e->member, sizeof(w->e->member), "%s", w->member);
	return w->fn(ev, n, header_revision, cluster, w->arg);
}

static size_t watch_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct watch *w = arg;
	size_t n = size * nmemb;
	int rc = etcd_watch_parser_feed(w->p, data, n);
	if (rc != 0) {
		w->rc = rc;
		const char *why = etcd_watch_parser_error(w->p);
		if (why[0] != '\0')
			set_err(w->e, "%s: %s", w->member, why);
		return 0;
	}
	return n;
}

static int watch_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct watch *w = arg;
	if (w->stop != NULL && atomic_load(w->stop)) {
		w->rc = ETCD_E_STOPPED;
		return 1;
	}
	return 0;
}

/* One watch connection to the member to try first, with the request body. */
static int watch_once(struct etcd *e, const char *body, etcd_watch_fn fn, void *arg, const atomic_bool *stop,
                      int64_t *compacted, bool *created)
{
	struct watch w = { .e = e, .fn = fn, .arg = arg, .stop = stop };
	int rc = ETCD_E_UNAVAILABLE;
	if (tls_files_check(e) != 0)
		return rc;
	/* one member per call: the caller loops, and comes back here from the
	 * revision it has reached, so a member that dies loses nothing */
	size_t i = e->cur % e->nendpoints;
	char url[512];
	snprintf(url, sizeof(url), "%s/v3/watch", e->endpoints[i]);
	w.member = e->endpoints[i];
	if ((w.p = etcd_watch_parser_new(watch_fn, &w)) == NULL)
		return ETCD_E_NOMEM;
	struct curl_slist *h = setup(e, url, body);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, watch_write);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(e->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFOFUNCTION, watch_progress);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFODATA, &w);
	CURLcode cc = curl_easy_perform(e->curl);
	curl_slist_free_all(h);
	long status = 0;
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
	if (w.rc != 0) {
		rc = w.rc;
	} else if (cc != CURLE_OK) {
		set_err(e, "%s: %s", url, curl_easy_strerror(cc));
		rc = ETCD_E_UNAVAILABLE;
	} else {
		set_err(e, "%s: the watch stream ended (HTTP %ld)", url, status);
		rc = status == 200 ? ETCD_E_UNAVAILABLE : ETCD_E_SERVER;
	}
	*created = etcd_watch_parser_created(w.p);
	if (rc == ETCD_E_UNAVAILABLE || (rc == ETCD_E_SERVER && !*created))
		e->cur = (i + 1) % e->nendpoints; /* the next attempt goes to another member */
	if (rc == ETCD_E_AUTH || (status == 401)) {
		free(e->token);
		e->token = NULL;
	}
	*compacted = etcd_watch_parser_compacted(w.p);
	etcd_watch_parser_free(w.p);
	return rc;
}

int etcd_watch(struct etcd *e, const char *key, const char *end, int64_t start_revision, etcd_watch_fn fn,
               void *arg, const atomic_bool *stop, int64_t *compacted)
{
	*compacted = 0;
	json_object *req = json_object_new_object(), *cr = json_object_new_object();
	if (req == NULL || cr == NULL) {
		json_object_put(req);
		json_object_put(cr);
		return ETCD_E_NOMEM;
	}
	json_object_object_add(cr, "key", j_b64(key, strlen(key)));
	if (end != NULL)
		json_object_object_add(cr, "range_end", j_b64(end, strlen(end)));
	if (start_revision > 0)
		json_object_object_add(cr, "start_revision", json_object_new_int64(start_revision));
	/* large responses in pieces near etcd's request limit (etcd >= 3.4;
	 * an older one ignores it, and the message cap is the last word) */
	json_object_object_add(cr, "fragment", json_object_new_boolean(true));
	json_object_object_add(req, "create_request", cr);
	char *body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
	json_object_put(req);
	if (body == NULL)
		return ETCD_E_NOMEM;
	int rc = 0;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (e->username != NULL && e->token == NULL && (rc = authenticate(e)) != 0)
			break;
		bool created = false;
		rc = watch_once(e, body, fn, arg, stop, compacted, &created);
		/* etcd refuses a token that expired while the watch handle was
		 * idle by cancelling the watch: once more with a new token (as
		 * request() does), else the caller's loop would retry with the
		 * dead one for ever */
		if (rc != ETCD_E_AUTH || e->username == NULL || created)
			break;
	}
	free(body);
	return rc;
}

void etcd_skip_member(struct etcd *e)
{
	e->cur = (e->cur + 1) % e->nendpoints;
}
