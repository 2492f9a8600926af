/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Opening the files a config names. open() of a FIFO blocks until a writer
 * comes, and a device or socket never ends: a daemon that opens a path an
 * operator (or an attacker who can write one directory) named must never
 * wait there, or the thread that reloads stops answering for good. Every
 * file partdns reads because of its config goes through here: opened with
 * O_NONBLOCK (the open returns at once, whatever the path is), checked with
 * fstat on the descriptor itself, refused unless it is a regular file, and
 * only then put back in blocking mode. A path handed to a library that opens
 * it itself (libunbound's trust anchors, libcurl's certificates) is checked
 * the same way first.
 */
#pragma once

#include <stdio.h>
#include <sys/stat.h>

/**
 * Open path for reading if it is a regular file. The path is looked at with
 * stat() first, so a device is not even opened (opening some has effects),
 * then opened with O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC and checked
 * again with fstat(), so a path swapped in between is still caught.
 * @param st  out (may be NULL): the open file's status.
 * @return a descriptor in blocking mode, or -EISDIR, -EINVAL (not a regular
 *         file: a FIFO, socket or device) or open()'s -errno.
 */
int file_open_regular(const char *path, struct stat *st);

/**
 * Open path for reading whatever it is but a directory, without blocking in
 * open(): for the one file an operator may give as a pipe (the main config,
 * `partdns -t -c /dev/stdin`). The descriptor stays O_NONBLOCK: the caller
 * reads with its own deadline (poll) when st says it is not a regular file.
 * @param st  out (may be NULL).
 * @return a descriptor, or -EISDIR or open()'s -errno.
 */
int file_open_nonblock(const char *path, struct stat *st);

/**
 * file_open_regular() as a stdio stream for reading, for call sites that
 * used fopen(path, "r"). @return the stream, or NULL with errno set
 * (EINVAL: not a regular file; file_strerror() says so).
 */
FILE *file_fopen_regular(const char *path);

/**
 * Create or truncate path for writing, as fopen(path, "w") would, but
 * without blocking in open() (a FIFO there with no reader would) and only
 * if what is there, or what was created, is a regular file.
 * @return the stream, or NULL with errno set (EINVAL: not a regular file).
 */
FILE *file_fopen_write(const char *path);

/**
 * Check, before handing path to a library that opens it itself, that it is
 * a regular file this process can open for reading (file_open_regular, then
 * close). @return 0 or -errno as file_open_regular().
 */
int file_check_regular(const char *path);

/**
 * Text of an error of these functions, negative or positive: "not a regular
 * file" for EINVAL, strerror() for the others.
 */
const char *file_strerror(int err);
