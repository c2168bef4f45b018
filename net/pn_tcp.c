/* pn_tcp.c: the tcp: transport of Paradis-Net.
 *
 * The exchange on one connection, step by step:
 *   1. A connects to B's listening address (non-blocking connect, bounded by
 *      connect_timeout_ms), sets TCP_NODELAY, and sends HELLO whose origin is A's own
 *      listening address, so B knows which peer the connection belongs to.
 *   2. Either side then sends frames: a 40-byte header (wire.c) and the payload, written with
 *      one writev by the sending thread itself (no hand-off to another thread; a per-connection
 *      lock keeps frames whole; SO_SNDTIMEO bounds a send to a peer that stopped reading).
 *   3. B's I/O thread reads the header, asks the core where the payload goes (a Cooperation's
 *      buffer or a fresh one) and reads the payload straight there, so a 64 MiB reply is copied
 *      by the kernel once and never by us.
 *   4. A broken connection (EOF, error, a malformed header) is closed; Cooperations waiting on
 *      that peer fail with PN_EPEERDOWN; the next send to the peer connects again, which is how
 *      a restarted peer is reached.
 * Both sides may connect to each other; each connection is used for reading, and a peer's
 * first live connection is the one sends go through.
 *
 * Who reads: normally the I/O thread.  A thread waiting in pn_coop_end for a reply from one
 * peer may instead read that peer's connection itself (tcp_wait_read), as a plain blocking
 * client would: it is woken by the reply's arrival directly, not by the I/O thread through a
 * condition variable, which saves a thread switch per round trip.  The receive state of a
 * connection belongs to whoever holds its rx_lock.  While a waiter reads, the connection is
 * out of epoll's interest (events 0), so the I/O thread is not woken by the reply the waiter
 * is about to read.
 *
 * Handing a connection back to epoll costs a system call, and a client doing one round trip
 * after another would pay two per round trip (out, back in).  So a waiter leaves the
 * connection out when it is done ("sticky"): the next waiter finds it ready.  The I/O thread
 * puts it back once nobody has waited on it for STICKY_NS (it wakes every millisecond while
 * such connections exist), or at once when somebody needs the I/O thread to read it: a
 * waiter that found another reader busy sets want_watch, and a thread about to sleep on a
 * Cooperation calls tcp_kick.  Bytes for nobody's wait (a request from the peer) therefore
 * wait at most about STICKY_NS on a connection a client just used.
 *
 * Replies are batched: while a thread reads a connection (on_readable), frames that inline
 * handlers send go into the connection's out buffer instead of one writev each, and are
 * written together before the next recv, so a pipelined burst of requests that one recv
 * brought in is answered with one system call instead of one per request.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pn_int.h"

#define RX_STAGE (64 * 1024)       /* small frames are parsed from one recv into this */
#define OUT_CAP  (32 * 1024)       /* replies batched during one read pass (see the top) */
#define STICKY_NS 1000000ull       /* a waiter's connection stays out of epoll this long */
#define RECV_SLICE_MS 10           /* a waiter's blocking recv looks up this often */

struct conn {
	int fd;
	_Atomic int refs;
	pthread_mutex_t send_lock;
	pthread_mutex_t rx_lock;       /* the receive state below: the I/O thread or a waiter */
	atomic_bool dead;              /* set once, under send_lock; read without it */
	bool closed;                   /* conn_close ran (under rx_lock): nobody reads it again */
	struct pn_peer_rec *peer;      /* NULL until HELLO (incoming) */
	/* receive state, I/O thread only */
	uint8_t *stage;
	size_t st_off, st_len;
	uint8_t hdr[PN_HDR_LEN];
	size_t hdr_got;
	bool in_payload;
	struct pn_rx rx;
	uint8_t *dst;
	size_t need, got;
	/* waiters (see the top): under rx_lock, except want_watch */
	bool unwatched;                /* out of epoll's interest, left so by a waiter */
	uint64_t released_ns;          /* when the last waiter let go of it */
	atomic_bool want_watch;        /* someone needs the I/O thread to read it: at once */
	atomic_bool waiter_in;         /* rx_lock is held by a waiter (not the I/O thread) */
	bool sliced;                   /* SO_RCVTIMEO is set for waiters' blocking recv */
	/* replies batched by the reader of this connection (under rx_lock) */
	uint8_t *out;                  /* OUT_CAP bytes, allocated on first use */
	size_t out_len;
	struct conn *out_to;           /* where they go (holds a reference), usually this one */
	struct conn *next;             /* all connections, for close */
};

struct tcp_peer {                  /* peer->tp_state */
	pthread_mutex_t lock;
	struct conn *conn;             /* where sends go; holds a reference */
};

struct pn_tp {
	struct pn *pn;
	struct pn_addr self;
	int lfd, epfd, wakefd;
	pthread_t thread;
	pthread_mutex_t lock;          /* conns list, tp_state creation */
	struct conn *conns;
	atomic_int n_unwatched;        /* connections left out of epoll by waiters */
	atomic_bool kicked;            /* tcp_kick: put them all back now */
	atomic_bool stop;
};

/* The connection the calling thread is reading (inside on_readable), whose out buffer
 * collects the frames it sends meanwhile; NULL elsewhere. */
static __thread struct conn *tls_reading;

#define CONN_EVENTS (EPOLLIN | EPOLLRDHUP)

/* Whether epoll reports c to the I/O thread (off while a waiter reads it). */
static void watch(struct pn_tp *tp, struct conn *c, bool on)
{
	struct epoll_event ev = { .events = on ? CONN_EVENTS : 0, .data.ptr = c };
	epoll_ctl(tp->epfd, EPOLL_CTL_MOD, c->fd, &ev);   /* ENOENT once closed: harmless */
}

/* Put c back into epoll's interest if a waiter left it out (rx_lock held). */
static void rewatch(struct pn_tp *tp, struct conn *c)
{
	atomic_store(&c->want_watch, false);
	if (!c->unwatched || c->closed)
		return;
	watch(tp, c, true);
	c->unwatched = false;
	atomic_fetch_sub(&tp->n_unwatched, 1);
}

static void conn_unref(struct conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1) {
		if (c->fd >= 0)
			close(c->fd);
		pthread_mutex_destroy(&c->send_lock);
		pthread_mutex_destroy(&c->rx_lock);
		free(c->stage);
		free(c->out);
		free(c);
	}
}

static struct tcp_peer *peer_state(struct pn_tp *tp, struct pn_peer_rec *peer)
{
	pthread_mutex_lock(&tp->lock);
	if (!peer->tp_state) {
		struct tcp_peer *s = calloc(1, sizeof *s);
		if (s) {
			pthread_mutex_init(&s->lock, NULL);
			peer->tp_state = s;
		}
	}
	pthread_mutex_unlock(&tp->lock);
	return peer->tp_state;
}

static struct conn *conn_new(struct pn_tp *tp, int fd)
{
	struct conn *c = calloc(1, sizeof *c);
	if (!c || !(c->stage = malloc(RX_STAGE))) {
		free(c);
		return NULL;
	}
	c->fd = fd;
	atomic_init(&c->refs, 1);          /* the I/O thread's reference */
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_mutex_init(&c->rx_lock, NULL);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	unsigned ms = pn_core_opts(tp->pn)->send_timeout_ms;
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	pthread_mutex_lock(&tp->lock);
	c->next = tp->conns;
	tp->conns = c;
	pthread_mutex_unlock(&tp->lock);
	struct epoll_event ev = { .events = CONN_EVENTS, .data.ptr = c };
	epoll_ctl(tp->epfd, EPOLL_CTL_ADD, fd, &ev);
	return c;
}

/* Make c the connection sends to peer go through, unless it already has a live one. */
static void conn_attach(struct pn_tp *tp, struct conn *c, struct pn_peer_rec *peer)
{
	struct tcp_peer *s = peer_state(tp, peer);
	c->peer = peer;
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (!s->conn) {
		atomic_fetch_add(&c->refs, 1);
		s->conn = c;
	}
	pthread_mutex_unlock(&s->lock);
}

/* Write all of iov, retrying short writes; SO_SNDTIMEO turns a stuck peer into EAGAIN. */
static int writev_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? -PN_ETIMEDOUT : -PN_EPEERDOWN;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Write iov to c whole, under its send lock; a failure leaves c dead. */
static int write_locked(struct conn *c, struct iovec *iov, int n)
{
	pthread_mutex_lock(&c->send_lock);
	int rc = c->dead ? -PN_EPEERDOWN : writev_all(c->fd, iov, n);
	if (rc != 0 && !c->dead) {
		/* a partial frame may be on the wire: the connection is unusable; the I/O thread
		 * sees the shutdown, closes it and reports the peer down */
		c->dead = true;
		shutdown(c->fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&c->send_lock);
	return rc;
}

/* Send one frame now. */
static int send_now(struct conn *c, const struct pn_hdr *h, const void *payload, size_t len)
{
	uint8_t hb[PN_HDR_LEN];
	pn_wire_put(hb, h);
	struct iovec iov[2] = { { hb, PN_HDR_LEN }, { (void *)(uintptr_t)payload, len } };
	return write_locked(c, iov, len ? 2 : 1);
}

/* Write the frames batched by the reader of r (see the top). */
static void out_flush(struct conn *r)
{
	if (!r->out_to)
		return;
	struct iovec iov = { r->out, r->out_len };
	write_locked(r->out_to, &iov, 1);   /* a failure is the connection's, reported as such */
	r->out_len = 0;
	conn_unref(r->out_to);
	r->out_to = NULL;
}

/* Send one frame: batched when the calling thread is reading a connection and the frame is
 * small, else now.  A batched frame's send error shows as its connection failing. */
static int send_on(struct conn *c, const struct pn_hdr *h, const void *payload, size_t len)
{
	struct conn *r = tls_reading;
	if (r && PN_HDR_LEN + len <= OUT_CAP / 4 && (r->out || (r->out = malloc(OUT_CAP)))) {
		if (r->out_to && (r->out_to != c || r->out_len + PN_HDR_LEN + len > OUT_CAP))
			out_flush(r);
		if (!r->out_to) {
			atomic_fetch_add(&c->refs, 1);
			r->out_to = c;
		}
		pn_wire_put(r->out + r->out_len, h);
		if (len)
			memcpy(r->out + r->out_len + PN_HDR_LEN, payload, len);
		r->out_len += PN_HDR_LEN + len;
		return atomic_load(&c->dead) ? -PN_EPEERDOWN : 0;
	}
	if (r && r->out_to == c)
		out_flush(r);              /* this thread's frames to c stay in order */
	return send_now(c, h, payload, len);
}

static int connect_peer(struct pn_tp *tp, struct pn_peer_rec *peer, struct conn **out)
{
	struct sockaddr_storage ss;
	socklen_t sl = pn_addr_to_sockaddr(&peer->addr, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -PN_ESYS;
	int rc = connect(fd, (struct sockaddr *)&ss, sl);
	if (rc != 0 && errno == EINPROGRESS) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int n;
		do
			n = poll(&p, 1, (int)pn_core_opts(tp->pn)->connect_timeout_ms);
		while (n < 0 && errno == EINTR);
		if (n == 0) {
			close(fd);
			return -PN_ETIMEDOUT;
		}
		int err = 0;
		socklen_t el = sizeof err;
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
		errno = err;
		rc = err ? -1 : 0;
	}
	if (rc != 0) {
		int e = errno;
		close(fd);
		return e == ECONNREFUSED ? -PN_EREFUSED : e == ETIMEDOUT ? -PN_ETIMEDOUT : -PN_EPEERDOWN;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);   /* sends block, reads use DONTWAIT */
	struct conn *c = conn_new(tp, fd);
	if (!c) {
		close(fd);
		return -PN_ENOMEM;
	}
	struct pn_hdr hello = { .kind = PN_K_HELLO, .origin = tp->self };
	/* HELLO goes out before anyone else can use the connection: it is not attached yet
	 * (and never batched, or another thread's frame could overtake it) */
	rc = send_now(c, &hello, NULL, 0);
	if (rc != 0)
		return rc;                 /* the I/O thread closes it */
	c->peer = peer;
	atomic_fetch_add(&c->refs, 1);     /* the caller's reference */
	*out = c;
	return 0;
}

static int tcp_send(struct pn_tp *tp, struct pn_peer_rec *peer, const struct pn_hdr *h,
                    const void *payload, size_t len)
{
	struct tcp_peer *s = peer_state(tp, peer);
	if (!s)
		return -PN_ENOMEM;
	if (atomic_load(&tp->stop))
		return -PN_ESHUTDOWN;
	for (int attempt = 0; attempt < 2; attempt++) {
		pthread_mutex_lock(&s->lock);
		struct conn *c = s->conn;
		if (c && c->dead) {            /* broken: forget it, connect again below */
			s->conn = NULL;
			conn_unref(c);
			c = NULL;
		}
		if (c) {
			atomic_fetch_add(&c->refs, 1);
		} else {
			/* connect under the peer lock so concurrent first sends share one connection */
			int rc = connect_peer(tp, peer, &c);
			if (rc != 0) {
				pthread_mutex_unlock(&s->lock);
				return rc;
			}
			atomic_fetch_add(&c->refs, 1);
			s->conn = c;
		}
		pthread_mutex_unlock(&s->lock);
		int rc = send_on(c, h, payload, len);
		conn_unref(c);
		/* A connection found dead when the first frame was written is retried once on a new
		 * connection (the peer restarted); after that, or mid-stream, the error stands. */
		if (rc != -PN_EPEERDOWN || attempt == 1)
			return rc;
	}
	return -PN_EPEERDOWN;
}

/* ---- the I/O thread ---- */

static void conn_close(struct pn_tp *tp, struct conn *c, int err)
{
	epoll_ctl(tp->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (c->unwatched) {
		c->unwatched = false;
		atomic_fetch_sub(&tp->n_unwatched, 1);
	}
	if (c->in_payload) {
		pn_core_rx_end(tp->pn, &c->rx, err);
		c->in_payload = false;
	}
	pthread_mutex_lock(&c->send_lock);
	c->dead = true;
	shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&c->send_lock);
	if (c->peer) {
		struct tcp_peer *s = c->peer->tp_state;
		if (s) {
			pthread_mutex_lock(&s->lock);
			if (s->conn == c) {
				s->conn = NULL;
				conn_unref(c);
			}
			pthread_mutex_unlock(&s->lock);
		}
		pn_core_peer_down(tp->pn, c->peer, err);
	}
	pthread_mutex_lock(&tp->lock);
	for (struct conn **p = &tp->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_mutex_unlock(&tp->lock);
}

/* A complete header is in c->hdr: check it and start the payload.  0, or an error that
 * closes the connection. */
static int on_header(struct pn_tp *tp, struct conn *c)
{
	struct pn_hdr h;
	int rc = pn_wire_get(c->hdr, &h, pn_core_opts(tp->pn)->max_msg);
	if (rc != 0)
		return rc;
	if (h.kind == PN_K_HELLO) {
		if (h.len != 0 || c->peer || h.origin.scheme != PN_S_TCP)
			return -PN_EPROTO;
		struct pn_peer_rec *peer = pn_core_peer(tp->pn, &h.origin);
		if (!peer)
			return -PN_ENOMEM;
		conn_attach(tp, c, peer);
		return 0;
	}
	if (!c->peer)
		return -PN_EPROTO;         /* a message before HELLO */
	c->dst = pn_core_rx_begin(tp->pn, c->peer, &h, &c->rx);
	c->need = h.len;
	c->got = 0;
	c->in_payload = true;
	if (h.len && !c->dst)
		return -PN_ENOMEM;
	return 0;
}

static void finish_payload(struct pn_tp *tp, struct conn *c)
{
	c->in_payload = false;
	pn_core_rx_end(tp->pn, &c->rx, 0);
}

/* Consume the bytes staged by the last recv.  0, or an error that closes the connection. */
static int drain_stage(struct pn_tp *tp, struct conn *c)
{
	while (c->st_off < c->st_len) {
		size_t avail = c->st_len - c->st_off;
		if (!c->in_payload) {
			size_t n = PN_HDR_LEN - c->hdr_got;
			if (n > avail)
				n = avail;
			memcpy(c->hdr + c->hdr_got, c->stage + c->st_off, n);
			c->hdr_got += n;
			c->st_off += n;
			if (c->hdr_got == PN_HDR_LEN) {
				c->hdr_got = 0;
				int rc = on_header(tp, c);
				if (rc != 0)
					return rc;
				if (c->in_payload && c->need == 0)
					finish_payload(tp, c);
			}
		} else {
			size_t n = c->need - c->got;
			if (n > avail)
				n = avail;
			memcpy(c->dst + c->got, c->stage + c->st_off, n);
			c->got += n;
			c->st_off += n;
			if (c->got == c->need)
				finish_payload(tp, c);
		}
	}
	return 0;
}

/* Read what is available.  Returns 0, or an error after which the connection is closed.
 * A short read means the socket is empty: return to epoll (level-triggered, so bytes that
 * arrive meanwhile are reported) instead of a recv that could only say EAGAIN.
 * block: the first recv waits (up to the socket's SO_RCVTIMEO); 1 if nothing came. */
static int read_pass(struct pn_tp *tp, struct conn *c, bool block)
{
	for (int flags = block ? 0 : MSG_DONTWAIT;; flags = MSG_DONTWAIT) {
		int rc = drain_stage(tp, c);
		if (rc != 0)
			return rc;
		/* what the frames of this recv made the handlers send goes out before the next
		 * recv: a pass over a long stream (bulk data) must not hold its replies back */
		out_flush(c);
		ssize_t r;
		size_t asked;
		if (c->in_payload && c->need - c->got >= RX_STAGE) {
			/* a large payload is read straight into its destination, not the stage */
			asked = c->need - c->got;
			r = recv(c->fd, c->dst + c->got, asked, flags);
			if (r > 0) {
				c->got += (size_t)r;
				if (c->got == c->need)
					finish_payload(tp, c);
			}
		} else {
			asked = RX_STAGE;
			r = recv(c->fd, c->stage, asked, flags);
			if (r > 0) {
				c->st_off = 0;
				c->st_len = (size_t)r;
			}
		}
		if (r > 0) {
			if ((size_t)r < asked)
				return drain_stage(tp, c);
			continue;
		}
		if (r == 0)
			return -PN_EPEERDOWN;
		if (!flags && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 1;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno != EINTR)
			return -PN_EPEERDOWN;
	}
}

/* read_pass, with the frames its handlers send batched (see the top). */
static int on_readable(struct pn_tp *tp, struct conn *c, bool block)
{
	struct conn *outer = tls_reading;   /* NULL: nobody reads inside a handler */
	tls_reading = c;
	int rc = read_pass(tp, c, block);
	out_flush(c);
	tls_reading = outer;
	return rc;
}

static void on_accept(struct pn_tp *tp)
{
	for (;;) {
		int fd = accept4(tp->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return;                    /* EAGAIN: no more; other errors: try again later */
		if (!conn_new(tp, fd))
			close(fd);
	}
}

/* Put back into epoll the connections waiters left out that nobody waited on for
 * STICKY_NS, or all of them after tcp_kick (a waiter busy with one keeps it and is asked to
 * hand it back when done). */
static void rewatch_idle(struct pn_tp *tp)
{
	bool all = atomic_exchange(&tp->kicked, false);
	uint64_t now = pn_now_ns();
	pthread_mutex_lock(&tp->lock);
	for (struct conn *c = tp->conns; c; c = c->next) {
		if (pthread_mutex_trylock(&c->rx_lock) != 0) {
			if (all)
				atomic_store(&c->want_watch, true);
			continue;
		}
		if (c->unwatched && (all || atomic_load(&c->want_watch) ||
		                     now - c->released_ns >= STICKY_NS))
			rewatch(tp, c);
		pthread_mutex_unlock(&c->rx_lock);
	}
	pthread_mutex_unlock(&tp->lock);
}

static void *io_main(void *arg)
{
	struct pn_tp *tp = arg;
	struct epoll_event evs[64];
	uint64_t last_scan = 0;
	while (!atomic_load(&tp->stop)) {
		int sticky = atomic_load(&tp->n_unwatched) > 0;
		int n = epoll_wait(tp->epfd, evs, 64, sticky ? 1 : 1000);
		if (sticky || atomic_load(&tp->kicked)) {
			uint64_t now = pn_now_ns();
			if (atomic_load(&tp->kicked) || now - last_scan >= STICKY_NS / 2) {
				rewatch_idle(tp);
				last_scan = now;
			}
		}
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == tp) {
				on_accept(tp);
			} else if (p == &tp->wakefd) {
				uint64_t v;
				if (read(tp->wakefd, &v, sizeof v) < 0) { /* nothing to do */ }
			} else {
				struct conn *c = p;
				/* a waiter is reading it (and is about to take it out of epoll, or just
				 * put it back): leave it to the waiter */
				if (pthread_mutex_trylock(&c->rx_lock) != 0)
					continue;
				if (c->closed) {
					pthread_mutex_unlock(&c->rx_lock);
					continue;
				}
				int rc = on_readable(tp, c, false);
				if (rc == 0 && (evs[i].events & (EPOLLERR | EPOLLHUP)))
					rc = -PN_EPEERDOWN;
				if (rc != 0) {
					if (rc == -PN_EPROTO || rc == -PN_ETOOBIG)
						pn_core_count(tp->pn, PN_ST_BAD_FRAMES, 1);
					conn_close(tp, c, rc == -PN_EPROTO || rc == -PN_ETOOBIG ? -PN_EPEERDOWN : rc);
					c->closed = true;
					pthread_mutex_unlock(&c->rx_lock);
					conn_unref(c);         /* the I/O thread's reference */
					continue;
				}
				pthread_mutex_unlock(&c->rx_lock);
			}
		}
	}
	return NULL;
}

static int tcp_open(struct pn *pn, struct pn_addr *self, struct pn_tp **out, char *err,
                    size_t errlen)
{
	struct pn_tp *tp = calloc(1, sizeof *tp);
	if (!tp) {
		snprintf(err, errlen, "out of memory");
		return -PN_ENOMEM;
	}
	tp->pn = pn;
	tp->lfd = tp->epfd = tp->wakefd = -1;
	pthread_mutex_init(&tp->lock, NULL);
	struct sockaddr_storage ss;
	socklen_t sl = pn_addr_to_sockaddr(self, &ss);
	int one = 1;
	tp->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (tp->lfd < 0 || setsockopt(tp->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(tp->lfd, (struct sockaddr *)&ss, sl) != 0 || listen(tp->lfd, 128) != 0) {
		snprintf(err, errlen, "tcp listen: %s", strerror(errno));
		goto fail;
	}
	sl = sizeof ss;
	getsockname(tp->lfd, (struct sockaddr *)&ss, &sl);
	pn_addr_from_sockaddr(self, PN_S_TCP, (struct sockaddr *)&ss);
	tp->self = *self;
	tp->epfd = epoll_create1(EPOLL_CLOEXEC);
	tp->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (tp->epfd < 0 || tp->wakefd < 0) {
		snprintf(err, errlen, "tcp: %s", strerror(errno));
		goto fail;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tp };
	epoll_ctl(tp->epfd, EPOLL_CTL_ADD, tp->lfd, &ev);
	ev.data.ptr = &tp->wakefd;
	epoll_ctl(tp->epfd, EPOLL_CTL_ADD, tp->wakefd, &ev);
	if (pthread_create(&tp->thread, NULL, io_main, tp) != 0) {
		snprintf(err, errlen, "tcp: pthread_create failed");
		goto fail;
	}
	*out = tp;
	return 0;
fail:
	if (tp->lfd >= 0) close(tp->lfd);
	if (tp->epfd >= 0) close(tp->epfd);
	if (tp->wakefd >= 0) close(tp->wakefd);
	pthread_mutex_destroy(&tp->lock);
	free(tp);
	return -PN_ESYS;
}

static void tcp_close(struct pn_tp *tp)
{
	atomic_store(&tp->stop, true);
	pn_signal_eventfd(tp->wakefd);
	pthread_join(tp->thread, NULL);
	/* Drop every connection: peer states first (their references), then the I/O thread's. */
	for (pn_peer id = 0;; id++) {
		struct pn_peer_rec *peer = pn_core_peer_at(tp->pn, id);
		if (!peer)
			break;
		if (peer->addr.scheme != PN_S_TCP || !peer->tp_state)
			continue;
		struct tcp_peer *s = peer->tp_state;
		if (s->conn)
			conn_unref(s->conn);
		pthread_mutex_destroy(&s->lock);
		free(s);
		peer->tp_state = NULL;
	}
	for (struct conn *c = tp->conns, *next; c; c = next) {
		next = c->next;
		if (c->in_payload)
			pn_core_rx_end(tp->pn, &c->rx, -PN_ESHUTDOWN);
		conn_unref(c);
	}
	close(tp->lfd);
	close(tp->epfd);
	close(tp->wakefd);
	pthread_mutex_destroy(&tp->lock);
	free(tp);
}

/* The calling thread waits for a reply from peer by reading its connection itself (see the
 * top of the file).  1: it read (a reply may have arrived, or the connection failed and the
 * I/O thread will report it), 0: nothing within timeout_ms, -1: not possible now (no
 * connection, or another thread is reading it).  wake_fd readable also ends the wait;
 * without one (-1) it blocks in recv, in RECV_SLICE_MS slices. */
static int tcp_wait_read(struct pn_tp *tp, struct pn_peer_rec *peer, int wake_fd, int timeout_ms)
{
	struct tcp_peer *s = peer->tp_state;
	if (!s || atomic_load(&tp->stop))
		return -1;
	pthread_mutex_lock(&s->lock);
	struct conn *c = s->conn;
	if (c && !atomic_load(&c->dead))
		atomic_fetch_add(&c->refs, 1);
	else
		c = NULL;
	pthread_mutex_unlock(&s->lock);
	if (!c)
		return -1;
	if (!pn_lock_from_io(&c->rx_lock, &c->waiter_in)) {
		/* another waiter reads it: ask it to hand the connection to the I/O thread when it
		 * is done, then look once more (it may have let go in between) */
		atomic_store(&c->want_watch, true);
		if (pthread_mutex_trylock(&c->rx_lock) != 0) {
			conn_unref(c);
			return -1;
		}
	}
	atomic_store(&c->waiter_in, true);
	int rc = -1;
	if (!c->closed) {
		if (!c->unwatched) {
			watch(tp, c, false);
			c->unwatched = true;
			if (atomic_fetch_add(&tp->n_unwatched, 1) == 0)
				pn_signal_eventfd(tp->wakefd);       /* its epoll timeout becomes the sticky period */
		}
		int r;
		if (wake_fd < 0) {
			/* nothing but this connection can bring the reply: block in recv itself, as
			 * a plain client does (one call where poll + recv were two), in slices so
			 * that timeouts and pn_finalize are noticed */
			if (!c->sliced) {
				struct timeval tv = { .tv_usec = RECV_SLICE_MS * 1000 };
				setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
				c->sliced = true;
			}
			r = on_readable(tp, c, true);
			rc = r != 1;
		} else {
			struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN },
			                       { .fd = wake_fd, .events = POLLIN } };
			int n = poll(p, 2, timeout_ms);
			rc = n > 0;
			r = n > 0 && p[0].revents ? on_readable(tp, c, false) : 0;
		}
		if (r < 0) {
			/* leave the closing to the I/O thread: the next read there fails the same way */
			pthread_mutex_lock(&c->send_lock);
			atomic_store(&c->dead, true);
			shutdown(c->fd, SHUT_RDWR);
			pthread_mutex_unlock(&c->send_lock);
			rewatch(tp, c);
		}
		c->released_ns = pn_now_ns();
	}
	if (atomic_load(&c->want_watch))
		rewatch(tp, c);
	atomic_store(&c->waiter_in, false);
	pthread_mutex_unlock(&c->rx_lock);
	/* a waiter that came while we held it may have asked after our look above */
	if (atomic_load(&c->want_watch) && pthread_mutex_trylock(&c->rx_lock) == 0) {
		rewatch(tp, c);
		pthread_mutex_unlock(&c->rx_lock);
	}
	conn_unref(c);
	return rc;
}

/* A thread is about to sleep until a Cooperation completes: connections that waiters left
 * out of epoll go back now, so their replies reach the I/O thread without delay. */
static void tcp_kick(struct pn_tp *tp)
{
	if (atomic_load(&tp->n_unwatched) == 0 || atomic_exchange(&tp->kicked, true))
		return;
	pn_signal_eventfd(tp->wakefd);
}

const struct pn_transport pn_tcp_transport = {
	.scheme = "tcp",
	.scheme_id = PN_S_TCP,
	.open = tcp_open,
	.close = tcp_close,
	.send = tcp_send,
	.wait_read = tcp_wait_read,
	.kick = tcp_kick,
};
