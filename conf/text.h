/* SPDX-License-Identifier: BSD-3-Clause */
/* The config's text forms: ADDR@PORT, domain names, and reading a whole file. */
#pragma once

/* Public through conf/conf.h, which defines struct conf_addr and the CONF_E_* codes. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conf_addr;

/**
 * Parse "ADDR", "ADDR@PORT" (IPv4 or IPv6, no brackets).
 * @return 0 or CONF_E_TARGET.
 */
int conf_addr_parse(const char *text, uint16_t default_port, struct conf_addr *out);

/**
 * conf_addr_parse with the reason for a failure.
 * @param why out: a static phrase for messages, set on failure.
 * @return 0 or CONF_E_TARGET.
 */
int conf_addr_parse_why(const char *text, uint16_t default_port, struct conf_addr *out,
                        const char **why);

/**
 * Parse a source address for outgoing queries: IPv4 or IPv6, no port, a
 * unicast address a socket can bind (not the wildcard, multicast,
 * broadcast, IPv4-mapped or IPv6 link-local). out->text is the address
 * alone, port 0.
 * @param why out: a static phrase for messages, set on failure.
 * @return 0 or CONF_E_TARGET.
 */
int conf_source_parse_why(const char *text, struct conf_addr *out, const char **why);

/**
 * Normalize a domain name: lower case, trailing dot, each label 1..63,
 * total <= 253 characters of text. @return 0 or -EINVAL.
 */
int conf_name_normalize(const char *text, char *out, size_t size);

/**
 * Read a whole file (size-capped), never blocking in open() (util/file.h).
 * @param regular_only refuse anything but a regular file (-EINVAL, -EISDIR);
 *        else a pipe or device is read too, with CONF_PIPE_MS in all
 *        (-ETIMEDOUT), for a main config given as -c /dev/stdin.
 * @return 0 (*buf malloc'd, NUL-terminated) or -errno (file_strerror() words it).
 */
int conf_read_file(const char *path, bool regular_only, char **buf, size_t *len);
