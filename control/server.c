/* SPDX-License-Identifier: BSD-3-Clause */
/* Control-socket server: one thread polling the listener and a few clients, handlers by verb. */
#include "control/server.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Clients served at once; more wait in the listen backlog. */
#define CLIENTS_MAX 32
/* Replies held at once, all clients together: past it, the replies nobody reads go first. */
#define OUT_BUDGET ((size_t)64 << 20)
#define BACKLOG 16
/* After accept() fails for want of descriptors the listener stays readable: pause, not spin. */
#define ACCEPT_PAUSE_MS 100

struct control_verb {
	char *name;
	control_fn fn;
	void *arg;
};

struct control_client {
	int fd;           /* -1: a free slot */
	int64_t deadline; /* ms on CLOCK_MONOTONIC: for the request, then for the reply */
	char *out;        /* NULL while reading the request; then the whole reply */
	size_t outlen, outoff;
	int64_t progress; /* ms: when the reply was ready, then when the client last took some of it */
	size_t inlen;
	char in[CONTROL_MAX_REQUEST + 1]; /* + 1: room for the NUL of the request string */
};

struct control {
	char *path;
	dev_t dev;      /* the socket file we bound: freed only if the path is still ours */
	ino_t ino;
	int fd;
	int stop_fd;
	struct control_verb *verbs;
	size_t nverbs;
	pthread_t thread;
	bool started;
	struct control_client clients[CLIENTS_MAX];
};

static void (*log_fn)(int level, const char *msg);

void control_set_log(void (*log)(int level, const char *msg))
{
	log_fn = log;
}

static void report(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_fn != NULL)
		log_fn(level, msg);
	else
		fprintf(stderr, "control: %s\n", msg);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int mkdir_parents(const char *path)
{
	char buf[sizeof(((struct sockaddr_un *)0)->sun_path)];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0750) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

/* Whatever is at path: nothing or a dead socket (0, removed), else refuse (logged, -errno). */
static int remove_stale(const struct sockaddr_un *sa)
{
	const char *path = sa->sun_path;
	struct stat st;
	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		int err = -errno;
		report(CONTROL_LOG_ERR, "cannot stat %s: %s", path, strerror(-err));
		return err;
	}
	if (!S_ISSOCK(st.st_mode)) {
		report(CONTROL_LOG_ERR, "%s exists and is not a socket", path);
		return -EEXIST;
	}
	/* Non-blocking: a live server with a full backlog answers EAGAIN instead of blocking us. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		int err = -errno;
		report(CONTROL_LOG_ERR, "cannot create a socket: %s", strerror(-err));
		return err;
	}
	int rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ? 0 : errno;
	close(fd);
	if (rc == 0 || rc == EAGAIN) {
		report(CONTROL_LOG_ERR, "%s is in use by a running server", path);
		return -EADDRINUSE;
	}
	if (rc != ECONNREFUSED) {
		report(CONTROL_LOG_ERR, "cannot check %s: %s", path, strerror(rc));
		return -rc;
	}
	if (unlink(path) != 0 && errno != ENOENT) {
		int err = -errno;
		report(CONTROL_LOG_ERR, "cannot remove the stale socket %s: %s", path, strerror(-err));
		return err;
	}
	return 0;
}

struct control *control_new(const char *path, int stop_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof(sa.sun_path)) {
		report(CONTROL_LOG_ERR, "socket path empty or longer than %zu bytes: %s",
		       sizeof(sa.sun_path) - 1, path ? path : "(null)");
		return NULL;
	}
	if (stop_fd < 0) {
		report(CONTROL_LOG_ERR, "no stop descriptor for %s", path);
		return NULL;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int rc = mkdir_parents(path);
	if (rc != 0) {
		report(CONTROL_LOG_ERR, "cannot create the directory of %s: %s", path, strerror(-rc));
		return NULL;
	}
	if (remove_stale(&sa) != 0)
		return NULL;
	struct control *c = calloc(1, sizeof(*c));
	char *dup = strdup(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c == NULL || dup == NULL || fd < 0) {
		report(CONTROL_LOG_ERR, "cannot set up %s: %s", path, strerror(fd < 0 ? errno : ENOMEM));
		goto fail;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, BACKLOG) != 0) {
		report(CONTROL_LOG_ERR, "cannot listen on %s: %s", path, strerror(errno));
		goto fail;
	}
	/* The group may run partdnsctl; others may not (the socket flushes and reloads). */
	if (chmod(path, 0660) != 0)
		report(CONTROL_LOG_WARN, "cannot chmod 0660 %s: %s", path, strerror(errno));
	struct stat st;
	if (stat(path, &st) == 0) {
		c->dev = st.st_dev;
		c->ino = st.st_ino;
	}
	c->path = dup;
	c->fd = fd;
	c->stop_fd = stop_fd;
	for (size_t i = 0; i < CLIENTS_MAX; i++)
		c->clients[i].fd = -1;
	return c;
fail:
	if (fd >= 0)
		close(fd);
	free(dup);
	free(c);
	return NULL;
}

int control_register(struct control *c, const char *verb, control_fn fn, void *arg)
{
	if (c->started)
		return -EBUSY;
	if (verb[0] == '\0' || verb[strcspn(verb, " \t\r\n")] != '\0' || fn == NULL)
		return -EINVAL;
	for (size_t i = 0; i < c->nverbs; i++)
		if (strcmp(c->verbs[i].name, verb) == 0)
			return -EEXIST;
	struct control_verb *nv = realloc(c->verbs, (c->nverbs + 1) * sizeof(*nv));
	if (nv == NULL)
		return -ENOMEM;
	c->verbs = nv;
	char *name = strdup(verb);
	if (name == NULL)
		return -ENOMEM;
	c->verbs[c->nverbs++] = (struct control_verb){ .name = name, .fn = fn, .arg = arg };
	return 0;
}

/* Run the request line's handler. @return 0 (OK) or nonzero (ERR), like the handler. */
static int dispatch(struct control *c, char *line, FILE *out, FILE *err)
{
	char *argv[CONTROL_MAX_WORDS + 1];
	int argc = control_split(line, argv, CONTROL_MAX_WORDS);
	if (argc < 0) {
		fprintf(err, "request has more than %d words\n", CONTROL_MAX_WORDS);
		return 1;
	}
	for (size_t i = 0; argc > 0 && i < c->nverbs; i++)
		if (strcmp(c->verbs[i].name, argv[0]) == 0)
			return c->verbs[i].fn(c->verbs[i].arg, argc, argv, out, err);
	fprintf(err, "unknown request '%s'\n", argc > 0 ? argv[0] : "");
	return 1;
}

static void client_close(struct control_client *cl)
{
	/* Read what the client sent past its request: closing a unix socket with unread
	 * data makes the client's next read fail with ECONNRESET instead of EOF. */
	char sink[1024];
	for (int i = 0; i < 64 && recv(cl->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	close(cl->fd);
	free(cl->out);
	cl->fd = -1;
	cl->out = NULL;
	cl->outlen = cl->outoff = cl->inlen = 0;
}

/* The client taking a reply whose reading stopped longest ago, but for except; NULL when none. */
static struct control_client *most_stalled(struct control *c, const struct control_client *except)
{
	struct control_client *worst = NULL;
	for (size_t i = 0; i < CLIENTS_MAX; i++) {
		struct control_client *cl = &c->clients[i];
		if (cl != except && cl->fd >= 0 && cl->out != NULL && (worst == NULL || cl->progress < worst->progress))
			worst = cl;
	}
	return worst;
}

/*
 * Room for a reply of len bytes for cl within OUT_BUDGET: the replies held
 * for clients that stopped reading longest ago are dropped (their clients
 * cut off) until it fits. One reply is held whole per client; without a
 * bound on all of them, clients that ask for large replies and never read
 * would hold CLIENTS_MAX of them.
 */
static void make_budget(struct control *c, const struct control_client *cl, size_t len)
{
	for (;;) {
		size_t held = 0;
		for (size_t i = 0; i < CLIENTS_MAX; i++)
			if (c->clients[i].fd >= 0 && c->clients[i].out != NULL)
				held += c->clients[i].outlen - c->clients[i].outoff;
		struct control_client *victim = held + len > OUT_BUDGET ? most_stalled(c, cl) : NULL;
		if (victim == NULL)
			return;
		report(CONTROL_LOG_WARN, "client of %s cut off: its reply was held too long unread (%zu bytes held)",
		       c->path, held);
		client_close(victim);
	}
}

/* Turn the request (rc 1: in[0..linelen)) or a request error (rc < 0) into the reply. */
static void client_answer(struct control *c, struct control_client *cl, int rc, size_t linelen)
{
	char *body = NULL, *errs = NULL, *reply = NULL;
	size_t bodylen = 0, errslen = 0, replylen = 0;
	FILE *out = open_memstream(&body, &bodylen);
	FILE *err = open_memstream(&errs, &errslen);
	FILE *f = NULL;
	int status = 1;
	if (out == NULL || err == NULL)
		goto fail;
	if (rc == 1) {
		cl->in[linelen] = '\0';
		status = dispatch(c, cl->in, out, err);
	} else if (rc == CONTROL_E_TOO_LONG) {
		fprintf(err, "request longer than %d bytes\n", CONTROL_MAX_REQUEST);
	} else {
		fprintf(err, "malformed request: a NUL byte in the line\n"); /* CONTROL_E_REQUEST */
	}
	/* fclose, not fflush: body/errs are only final once the streams are closed. */
	int e1 = fclose(out), e2 = fclose(err);
	out = err = NULL;
	if (e1 != 0 || e2 != 0)
		goto fail;
	f = open_memstream(&reply, &replylen);
	if (f == NULL || control_reply_write(f, status, body, bodylen, errs, errslen) != 0)
		goto fail;
	if (fclose(f) != 0) {
		f = NULL;
		goto fail;
	}
	free(body);
	free(errs);
	make_budget(c, cl, replylen);
	cl->out = reply;
	cl->outlen = replylen;
	cl->outoff = 0;
	/* The handler may have taken a while: the client gets its full time to read. */
	cl->deadline = now_ms() + CONTROL_TIMEOUT_MS;
	cl->progress = now_ms();
	return;
fail:
	report(CONTROL_LOG_ERR, "cannot build a reply: out of memory");
	if (out != NULL)
		fclose(out);
	if (err != NULL)
		fclose(err);
	if (f != NULL)
		fclose(f);
	free(body);
	free(errs);
	free(reply);
	client_close(cl);
}

static void client_read(struct control *c, struct control_client *cl)
{
	ssize_t n = recv(cl->fd, cl->in + cl->inlen, CONTROL_MAX_REQUEST - cl->inlen, MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			client_close(cl);
		return;
	}
	if (n == 0 && cl->inlen == 0) {
		client_close(cl); /* connected and left, e.g. control_new() checking for a live server */
		return;
	}
	cl->inlen += (size_t)n;
	size_t linelen = 0;
	int rc = control_request_scan(cl->in, cl->inlen, n == 0, &linelen);
	if (rc != 0)
		client_answer(c, cl, rc, linelen);
}

static void client_write(struct control_client *cl)
{
	/* MSG_NOSIGNAL: a client that hangs up must not kill the daemon with SIGPIPE. */
	ssize_t n = send(cl->fd, cl->out + cl->outoff, cl->outlen - cl->outoff,
	                 MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			client_close(cl);
		return;
	}
	cl->outoff += (size_t)n;
	if (n > 0)
		cl->progress = now_ms();
	if (cl->outoff == cl->outlen)
		client_close(cl);
}

/*
 * A slot for a new client: a free one, else the one that has waited longest
 * without sending its request (a silent client must not hold the socket for
 * the operator), else the one whose reply has gone unread longest: 32
 * clients asking for a large reply and never reading it took every slot
 * until their deadlines, and partdnsctl status failed meanwhile (issue 32,
 * defect 10). So a newcomer always gets a slot, and what it costs is the
 * client that stopped reading first.
 */
static struct control_client *free_slot(struct control *c)
{
	struct control_client *oldest = NULL;
	for (size_t i = 0; i < CLIENTS_MAX; i++) {
		struct control_client *cl = &c->clients[i];
		if (cl->fd < 0)
			return cl;
		if (cl->out == NULL && (oldest == NULL || cl->deadline < oldest->deadline))
			oldest = cl;
	}
	if (oldest != NULL) {
		report(CONTROL_LOG_WARN, "client of %s cut off to make room: it sent no request yet", c->path);
	} else if ((oldest = most_stalled(c, NULL)) != NULL) {
		report(CONTROL_LOG_WARN, "client of %s cut off to make room: it has not read its reply for %lld ms",
		       c->path, (long long)(now_ms() - oldest->progress));
	}
	if (oldest != NULL)
		client_close(oldest);
	return oldest;
}

/* Accept into free slots. @return true if accepting failed for want of resources. */
static bool accept_clients(struct control *c, int64_t now)
{
	for (;;) {
		int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			int e = errno;
			if (e == EAGAIN || e == EINTR || e == ECONNABORTED)
				return false;
			report(CONTROL_LOG_WARN, "accept on %s: %s", c->path, strerror(e));
			return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
		}
		struct control_client *cl = free_slot(c);
		if (cl == NULL) { /* cannot be: every slot has a client, and one is cut */
			close(fd);
			continue;
		}
		cl->fd = fd;
		cl->deadline = now + CONTROL_TIMEOUT_MS;
	}
}

static void *control_main(void *arg)
{
	struct control *c = arg;
	struct pollfd p[2 + CLIENTS_MAX];
	int64_t accept_pause_until = 0;
	for (;;) {
		int64_t now = now_ms();
		int timeout = -1;
		for (size_t i = 0; i < CLIENTS_MAX; i++) {
			struct control_client *cl = &c->clients[i];
			if (cl->fd >= 0 && cl->deadline <= now) {
				report(CONTROL_LOG_WARN, "client of %s cut off: it %s within %d ms", c->path,
				       cl->out ? "did not take the reply" : "sent no request",
				       CONTROL_TIMEOUT_MS);
				client_close(cl);
			}
			if (cl->fd < 0) {
				p[2 + i] = (struct pollfd){ .fd = -1 };
				continue;
			}
			p[2 + i] = (struct pollfd){ .fd = cl->fd, .events = cl->out ? POLLOUT : POLLIN };
			int left = (int)(cl->deadline - now);
			if (timeout < 0 || left < timeout)
				timeout = left;
		}
		/* always listening: a full table makes room by cutting off its oldest silent client */
		bool listen_now = accept_pause_until <= now;
		if (!listen_now) {
			int left = (int)(accept_pause_until - now);
			if (timeout < 0 || left < timeout)
				timeout = left;
		}
		p[0] = (struct pollfd){ .fd = c->stop_fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = listen_now ? c->fd : -1, .events = POLLIN };
		int n = poll(p, 2 + CLIENTS_MAX, timeout);
		if (n < 0 && errno != EINTR) {
			report(CONTROL_LOG_ERR, "poll: %s", strerror(errno));
			break;
		}
		if (n <= 0)
			continue;
		if (p[0].revents != 0)
			break;
		for (size_t i = 0; i < CLIENTS_MAX; i++) {
			struct control_client *cl = &c->clients[i];
			/* cl->fd < 0: cut off above, for room or for the budget */
			if (p[2 + i].fd < 0 || p[2 + i].revents == 0 || cl->fd < 0)
				continue;
			if (cl->out == NULL)
				client_read(c, cl);
			else
				client_write(cl);
		}
		if (p[1].revents != 0 && accept_clients(c, now_ms()))
			accept_pause_until = now_ms() + ACCEPT_PAUSE_MS;
	}
	for (size_t i = 0; i < CLIENTS_MAX; i++)
		if (c->clients[i].fd >= 0)
			client_close(&c->clients[i]);
	return NULL;
}

int control_start(struct control *c)
{
	int rc = pthread_create(&c->thread, NULL, control_main, c);
	if (rc != 0)
		return -rc;
	c->started = true;
	return 0;
}

void control_stop(struct control *c)
{
	if (c != NULL && c->started) {
		pthread_join(c->thread, NULL);
		c->started = false;
	}
}

void control_free(struct control *c)
{
	if (c == NULL)
		return;
	control_stop(c);
	close(c->fd);
	/* A daemon that took over (partdns --takeover) has bound a new socket at
	 * the same path: leave that one alone. */
	struct stat st;
	if (stat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		unlink(c->path);
	free(c->path);
	for (size_t i = 0; i < c->nverbs; i++)
		free(c->verbs[i].name);
	free(c->verbs);
	free(c);
}
