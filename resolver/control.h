/* SPDX-License-Identifier: BSD-3-Clause */
/* This file is private to resolver/. The control socket that partdnsctl talks to. */
#pragma once

/*
 * Protocol: the client connects to the unix stream socket, sends one request
 * line ending in "\n" (at most 4096 bytes); the server replies with "OK\n" or
 * "ERR <message>\n", then a body, then closes. Requests: "stats",
 * "stats json", "cache flush [name=NAME] [partition=P]", "reload".
 */

struct server;
struct control;

/** Bind the socket at path (parent directories created, a stale socket replaced). @return NULL on error (logged). */
struct control *control_new(struct server *srv, const char *path);
int control_start(struct control *c);
void control_stop(struct control *c);
void control_free(struct control *c);
