/* pn_tcp.c: the tcp: and tls: transports of Paradis-Net.
 *
 * tls: is this same transport with each connection inside TLS 1.3 (pn_tls.c): its socket is
 * non-blocking, conn_recv and writev_all go through the TLS record layer, the acceptor's
 * handshake is stepped by the I/O thread like any read (tls_accept_step) and the
 * connector's is done in connect_peer before HELLO.  Everything from HELLO on is the same
 * bytes inside TLS.
 *
 * The exchange on one connection, step by step:
 *   1. A connects to B's listening address (non-blocking connect, bounded by
 *      connect_timeout_ms), sets TCP_NODELAY, and sends HELLO whose origin is A's own
 *      listening address.  B believes it only if A proves the cluster key (Identity, below);
 *      otherwise the connection is its own anonymous peer to B.
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
 * puts it back once nobody has waited on it for STICKY_NS to 2 STICKY_NS (a timerfd that a
 * waiter letting go pushes forward, with one system call a STICKY_NS of use: the I/O thread
 * is not woken while a client goes on waiting; its wake-ups every millisecond had the
 * scheduler put a client and its server on two vCPUs, see docs/net.md), or at once when
 * somebody needs the I/O thread to read it: a
 * waiter that found another reader busy sets want_watch, and a thread about to sleep on a
 * Cooperation calls tcp_kick.  Bytes for nobody's wait (a request from the peer) therefore
 * wait at most about STICKY_NS on a connection a client just used.
 *
 * Replies are batched: while a thread reads a connection (on_readable), frames that inline
 * handlers send go into the connection's out buffer instead of one writev each, and are
 * written together before the next recv, so a pipelined burst of requests that one recv
 * brought in is answered with one system call instead of one per request.
 *
 * Run to completion (pn_yield): one thread at a time is the reader, the one in io_main's loop
 * (epoll, accept, timeouts, reading connections), and an inline handler runs on it, right
 * where its message was read: no other thread is woken on a request's path.  A handler that
 * turns out long calls pn_yield, and tcp_yield hands the reader's place to a follower (an
 * idle thread of the pool, or a new one, up to IO_MAX): the connection being read is let go
 * at once (its batched replies written, its rx_lock released; bytes of later frames already
 * staged are left on tp->handed for the next reader, as epoll would not report them), and
 * the yielding thread unwinds from on_readable without touching it again once its handler
 * returns, then waits as a follower.  So a long request delays nobody, not even later
 * requests on its own connection, and costs a thread switch only when it is long.
 */
/* Identity (docs/net.md, "Identity and trust"): an endpoint with a cluster key sends HELLO
 * with PROVE and a nonce, and waits (prove_hello, before the connection is anyone else's)
 * for B's CHALLENGE: B's nonce and B's HMAC over both nonces and A's claimed address; A
 * answers AUTH with its own HMAC.  B attaches the connection to A's address only after a
 * good AUTH (on_auth), and believes FORWARDED origins only on such connections
 * (c->trusted); everywhere else it clears the flag.  A connection B accepts without a proof
 * gets an anonymous peer: replies to it go back on it, and it is never connected to.
 *
 * Limits (docs/net.md, "Admission and limits"): a connection B accepted is admitted by
 * pn_opts.admit, which sees the first PN_ADMIT_HEAD bytes of each message read into c->head
 * before its payload is allocated; until then messages over preauth_max close it.  A payload
 * over RX_STAGE takes rx_budget bytes until it is complete; one that does not fit leaves its
 * connection out of epoll (budget_wait) until resume_blocked finds room.  The I/O thread
 * sweeps for connections past preauth_timeout_ms or idle_timeout_ms every SWEEP_NS, and
 * at accept makes room under max_conns / max_conns_per_addr by shutting down the oldest
 * connection not admitted (conn_doom: the usual read path then closes it).  EMFILE: on_no_fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "pn_int.h"

#define RX_STAGE (64 * 1024)       /* small frames are parsed from one recv into this */
#define OUT_CAP  (32 * 1024)       /* replies batched during one read pass (see the top) */
#define STICKY_NS 1000000ull       /* a waiter's connection stays out of epoll this long */
#define RECV_SLICE_MS 10           /* a waiter's blocking recv looks up this often */
#define SWEEP_NS  1000000000ull    /* connection timeouts are checked this often */
#define ACCEPT_PAUSE_NS 100000000ull /* no descriptor even for accept-and-close: wait this */
#define ACCEPT_BATCH 256           /* connections accepted per wake-up (level-triggered) */
#define FD_MARGIN 64               /* max_conns 0: RLIMIT_NOFILE less this, for everything else */
#define IO_MAX 64                  /* reader threads at most: the reader and those that yielded */
#define YIELDED 2                  /* on_readable & co: this thread gave the connection away */
/* pn_link_rx_rate (rx_rate_sample): */
#define RX_RATE_BYTES (8 * 1024)   /* a payload's arrival rate is sampled over at least this */
#define RX_SAMPLES 8               /* the recent samples kept ... */
#define RX_RECENT_NS 10000000000ull  /* ... those of the last 10 s */
#define RX_KEEP_NS 10000000000ull  /* a rate stands this long without a sample near it */
#define RX_FORGET_BYTES (16u << 20) /* ... or until this much came much faster */
/* What a tls: endpoint answers a tcp: client, before it closes: a TLS alert record (fatal,
 * protocol_version), which the client recognises in place of a frame header (tls_answer). */
static const uint8_t tls_alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46 };

/* The HELLO exchange of a connector that proves a key, the cluster key or the secret
 * (Identity, above). */
struct proof {
	enum pn_key which;
	struct pn_addr origin;         /* what it claims */
	uint8_t nc[PN_NONCE_LEN], na[PN_NONCE_LEN];
};

/* Frames gathered to go out with one write: a reader's replies (conn.ob), or what a thread
 * sends between pn_cork and pn_uncork (tls_cork). */
struct outbuf {
	uint8_t *out;                  /* OUT_CAP bytes, allocated on first use */
	size_t out_len;
	struct conn *out_to;           /* where they go (holds a reference) */
};

struct conn {
	int fd;
	struct pn_tx_rate tx_rate;         /* pn_link_rate's (the peer's lock) */
	/* pn_link_rx_rate's rate (0: none) and when a sample last confirmed it (written by the
	 * reader in rx_rate_sample, read by anyone) */
	_Atomic uint64_t rx_rate_bps, rx_rate_at_ns;
	struct pn_carried rx_carried;  /* what came in (the reader's; read by anyone) */
	struct pn_tls *tls;            /* tls: its TLS state; NULL on tcp: */
	bool tls_ready;                /* tls: the handshake is done */
	bool tls_out;                  /* tls: the acceptor's handshake waits to write (EPOLLOUT) */
	unsigned send_ms;              /* tls: a send that makes no progress this long fails */
	_Atomic int refs;
	pthread_mutex_t send_lock;
	pthread_mutex_t rx_lock;       /* the receive state below: the I/O thread or a waiter */
	atomic_bool dead;              /* set once, under send_lock; read without it */
	bool closed;                   /* conn_close ran (under rx_lock): nobody reads it again */
	struct pn_peer_rec *peer;      /* NULL until HELLO (incoming) */
	/* identity and admission (Identity and Limits, above) */
	bool inbound;                  /* opened by the other side */
	bool trusted;                  /* it proved the cluster key: its claims are believed */
	atomic_bool admitted;          /* past pn_opts.admit: no pre-authentication limits */
	bool doomed;                   /* shut down on purpose (limit, timeout); under tp->lock */
	struct pn_addr remote;         /* inbound: the other end (anonymous name, per-address limit) */
	uint64_t opened_ns;
	_Atomic uint64_t last_rx_ns;   /* coarse clock: idle timeout */
	struct proof *proof;           /* inbound, between a proving HELLO and its AUTH */
	bool has_sess;                 /* inbound: its HELLO named a session (sess_block) */
	uint8_t sess_block[PN_SESS_BLOCK];
	/* receive state: whoever holds rx_lock */
	uint8_t *stage;
	size_t st_off, st_len;
	uint8_t hdr[PN_HDR_LEN];
	size_t hdr_got;
	struct pn_hdr h;               /* the frame being received */
	bool in_head;                  /* reading its first bytes into head (control frames, and
	                                * messages of a connection not yet admitted) */
	uint8_t *head;                 /* PN_ADMIT_HEAD bytes, allocated on first use */
	size_t head_need, head_got;
	bool in_payload;
	bool blocked;                  /* the payload waits for rx_budget */
	bool budget_wait;              /* ... and the I/O thread took it out of epoll for that */
	uint64_t held;                 /* rx_budget bytes this frame holds */
	struct pn_rx rx;
	uint8_t *dst;
	size_t need, got;
	uint64_t recv_ns;              /* when the last recv that returned bytes returned */
	uint64_t drained_ns;           /* when a recv last found the socket empty (0: since then
	                                * one returned bytes) */
	uint64_t rx_wait_ns;           /* this payload's time with the socket empty */
	uint64_t rx_all[RX_SAMPLES];   /* the rates of the last payloads in pieces (0: none) */
	unsigned rx_all_next;
	uint64_t rx_t0;                /* this payload's first recv (0: no rate sample from it) */
	size_t rx_b0;                  /* ... and how much of it that recv and earlier ones held */
	struct { uint64_t rate, at; } rx_samples[RX_SAMPLES];   /* the last ones, a ring */
	unsigned rx_next;
	uint64_t rx_fast_bytes;        /* payload bytes that came much faster than rx_rate_bps
	                                * since a sample last came near it */
	uint64_t rx_total;             /* payload bytes received */
	/* waiters (see the top): under rx_lock, except want_watch */
	bool unwatched;                /* out of epoll's interest, left so by a waiter */
	uint64_t released_ns;          /* when the last waiter let go of it */
	atomic_bool want_watch;        /* someone needs the I/O thread to read it: at once */
	atomic_bool waiter_in;         /* rx_lock is held by a waiter (not the I/O thread) */
	bool sliced;                   /* SO_RCVTIMEO is set for waiters' blocking recv */
	struct outbuf ob;              /* replies batched by its reader (under rx_lock) */
	struct conn *next;             /* all connections, for close */
	struct conn *hand_next;        /* tp->handed */
};

struct tcp_peer {                  /* peer->tp_state */
	pthread_mutex_t lock;
	struct conn *conn;             /* where sends go; holds a reference */
};

struct pn_tp {
	struct pn *pn;
	struct pn_addr self;
	struct pn_tls_ctx *tls;        /* tls: certificates; NULL: this is tcp: */
	_Atomic uint64_t last_tls_log; /* failed handshakes are logged at most every 10 s */
	int lfd, epfd, wakefd;
	int timerfd;                   /* wakes the I/O thread to put back what waiters left out */
	_Atomic uint64_t sticky_due;   /* ... when it is armed for (monotonic ns; 0: not armed) */
	pthread_mutex_t lock;          /* conns list, tp_state creation, handed */
	struct conn *conns;
	struct conn *handed;           /* connections with staged bytes a yielding reader let go
	                                * (one reference each; linked by hand_next) */
	/* the reader threads (Run to completion, above), under io_lock */
	pthread_mutex_t io_lock;
	pthread_cond_t io_cond;        /* followers wait here for the reader's place */
	bool reader_taken;
	unsigned n_threads, n_idle;     /* n_threads: only grows; stored atomically (tcp_yield) */
	pthread_t threads[IO_MAX];
	uint64_t last_scan, last_sweep; /* the reader's (io_main) */
	atomic_int n_unwatched;        /* connections left out of epoll by waiters */
	atomic_bool kicked;            /* tcp_kick: put them all back now */
	atomic_bool stop;
	/* limits (Limits, above) */
	unsigned max_conns;            /* opts.max_conns, or from RLIMIT_NOFILE */
	int reserve_fd;                /* spent to accept-and-close when out of descriptors */
	uint64_t accept_paused_until;  /* I/O thread: listening socket out of epoll until then */
	uint64_t last_emfile_log;
	uint64_t last_refuse_log;      /* conn_room hit a limit: logged at most every 10 s */
	_Atomic uint64_t rx_held;      /* payload bytes being received (rx_budget) */
	atomic_int n_blocked;          /* connections waiting for rx_budget */
};

/* The connection the calling thread is reading (inside on_readable), whose out buffer
 * collects the frames it sends meanwhile; NULL elsewhere. */
static __thread struct conn *tls_reading;
/* The transport whose reader the calling thread is (io_main's loop; NULL while it reads
 * another connection inside a handler, tcp_wait_read), and what a handler on it gave away
 * (tcp_yield): the connection being read, whose reading then unwinds at once (YIELDED)
 * without touching it, or tp when there was none.  Reads of other connections inside the
 * same handler (a nested request) go on as ever. */
static __thread struct pn_tp *tls_reader;
static __thread void *tls_gave_away;

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
	if (!c->budget_wait)           /* else it stays out until its payload fits */
		watch(tp, c, true);
	c->unwatched = false;
	atomic_fetch_sub(&tp->n_unwatched, 1);
}

static void conn_unref(struct conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1) {
		pn_tls_free(c->tls);
		if (c->fd >= 0)
			close(c->fd);
		pthread_mutex_destroy(&c->send_lock);
		pthread_mutex_destroy(&c->rx_lock);
		free(c->stage);
		free(c->head);
		free(c->proof);
		free(c->ob.out);
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

/* Hand a new connection to the I/O thread. */
static void conn_watch_new(struct pn_tp *tp, struct conn *c)
{
	pthread_mutex_lock(&tp->lock);
	c->next = tp->conns;
	tp->conns = c;
	pthread_mutex_unlock(&tp->lock);
	struct epoll_event ev = { .events = CONN_EVENTS, .data.ptr = c };
	epoll_ctl(tp->epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

/* A connection on fd: inbound (remote: its other end) or one we opened; watched: handed to
 * the I/O thread at once (else conn_watch_new, once its HELLO exchange is done). */
static struct conn *conn_new(struct pn_tp *tp, int fd, const struct pn_addr *remote,
                             bool watched)
{
	struct conn *c = calloc(1, sizeof *c);
	if (!c || !(c->stage = malloc(RX_STAGE))) {
		free(c);
		return NULL;
	}
	c->fd = fd;
	c->inbound = remote != NULL;
	if (remote)
		c->remote = *remote;
	/* a connection we opened goes where we chose: nothing to admit */
	atomic_init(&c->admitted, !remote);
	c->opened_ns = pn_coarse_ns();
	atomic_init(&c->last_rx_ns, c->opened_ns);
	atomic_init(&c->refs, 1);          /* the I/O thread's reference */
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_mutex_init(&c->rx_lock, NULL);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	unsigned ms = pn_core_opts(tp->pn)->send_timeout_ms;
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	c->send_ms = ms;               /* tls: the socket is non-blocking, SO_SNDTIMEO unused */
	if (watched)
		conn_watch_new(tp, c);
	return c;
}

/* Make c the connection sends to peer go through, unless it already has a live one. */
static void conn_attach(struct pn_tp *tp, struct conn *c, struct pn_peer_rec *peer)
{
	struct tcp_peer *s = peer_state(tp, peer);
	c->peer = peer;
	if (c->has_sess)
		pn_core_session_bind(tp->pn, peer, c->sess_block);
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (!s->conn) {
		atomic_fetch_add(&c->refs, 1);
		s->conn = c;
	}
	pthread_mutex_unlock(&s->lock);
}

/* Write all of iov to c, retrying short writes; SO_SNDTIMEO turns a stuck peer into EAGAIN
 * (tls: a poll of send_ms without progress).  sendmsg with MSG_NOSIGNAL, not writev: a peer
 * that died (a server killed, a client gone) must be an error here, not a SIGPIPE that
 * kills a program that does not ignore it (a session's client writes to a dead connection
 * before it learns the connection is gone).  (pn_tls.c's socket BIO does the same.) */
static int writev_all(struct conn *c, struct iovec *iov, int n)
{
	while (n > 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = c->tls ? pn_tls_send(c->tls, iov, n) : sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (c->tls && errno == EAGAIN) {
				/* the same bytes go again once the socket takes more (pn_tls_send) */
				struct pollfd p = { .fd = c->fd, .events = POLLOUT };
				int k = poll(&p, 1, (int)c->send_ms);
				if (k > 0 || (k < 0 && errno == EINTR))
					continue;
				return k == 0 ? -PN_ETIMEDOUT : -PN_EPEERDOWN;
			}
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
	int rc = c->dead ? -PN_EPEERDOWN : writev_all(c, iov, n);
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

/* Write the frames gathered in ob. */
static void out_flush_buf(struct outbuf *ob)
{
	if (!ob->out_to)
		return;
	struct iovec iov = { ob->out, ob->out_len };
	write_locked(ob->out_to, &iov, 1);  /* a failure is the connection's, reported as such */
	ob->out_len = 0;
	conn_unref(ob->out_to);
	ob->out_to = NULL;
}

/* Write the frames batched by the reader of r (see the top). */
static void out_flush(struct conn *r)
{
	out_flush_buf(&r->ob);
}

/* The sends of this thread between pn_cork and pn_uncork (tcp_cork). */
static __thread struct outbuf tls_cork;
static __thread unsigned tls_corked;

/* Send one frame: batched when the calling thread is reading a connection (or corked) and
 * the frame is small, else now.  A batched frame's send error shows as its connection
 * failing. */
static int send_on(struct conn *c, const struct pn_hdr *h, const void *payload, size_t len)
{
	struct outbuf *ob = tls_reading ? &tls_reading->ob : tls_corked ? &tls_cork : NULL;
	if (ob && PN_HDR_LEN + len <= OUT_CAP / 4 && (ob->out || (ob->out = malloc(OUT_CAP)))) {
		if (ob->out_to && (ob->out_to != c || ob->out_len + PN_HDR_LEN + len > OUT_CAP))
			out_flush_buf(ob);
		if (!ob->out_to) {
			atomic_fetch_add(&c->refs, 1);
			ob->out_to = c;
		}
		pn_wire_put(ob->out + ob->out_len, h);
		if (len)
			memcpy(ob->out + ob->out_len + PN_HDR_LEN, payload, len);
		ob->out_len += PN_HDR_LEN + len;
		return atomic_load(&c->dead) ? -PN_EPEERDOWN : 0;
	}
	if (ob && ob->out_to == c)
		out_flush_buf(ob);         /* this thread's frames to c stay in order */
	return send_now(c, h, payload, len);
}

/* pn_cork / pn_uncork (nested: the outermost uncork writes). */
static void tcp_cork(struct pn_tp *tp, bool on)
{
	if (on) {
		tls_corked++;
	} else if (tls_corked && --tls_corked == 0) {
		out_flush_buf(&tls_cork);
		free(tls_cork.out);        /* a thread that corks once should not keep 32 KiB */
		tls_cork.out = NULL;
	}
}

/* recv(MSG_DONTWAIT) of c, through TLS on tls:.  block: wait up to the socket's
 * SO_RCVTIMEO first (tls: a poll of RECV_SLICE_MS, the socket being non-blocking, unless
 * TLS holds bytes already: one system call before the read, as the blocking recv). */
static ssize_t conn_recv(struct conn *c, void *buf, size_t len, bool block)
{
	if (!c->tls)
		return recv(c->fd, buf, len, block ? 0 : MSG_DONTWAIT);
	if (block && !pn_tls_pending(c->tls)) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		if (poll(&p, 1, RECV_SLICE_MS) <= 0) {
			errno = EAGAIN;
			return -1;
		}
	}
	return pn_tls_recv(c->tls, buf, len);
}

/* Read exactly len bytes of c by the deadline (ns, monotonic).  Reads first and polls only
 * when nothing is there: bytes TLS already took off the socket would not wake poll. */
static int read_by(struct conn *c, void *buf, size_t len, uint64_t deadline)
{
	for (size_t got = 0; got < len;) {
		ssize_t r = conn_recv(c, (uint8_t *)buf + got, len - got, false);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return -PN_EPEERDOWN;
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		uint64_t now = pn_now_ns();
		if (now >= deadline)
			return -PN_ETIMEDOUT;
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		if (poll(&p, 1, (int)((deadline - now + 999999) / 1000000)) < 0 && errno != EINTR)
			return -PN_EPEERDOWN;
	}
	return 0;
}

/* Whether a failed handshake may be logged now: at most every 10 s, since a session
 * reconnecting through an outage, or a scanner, would fill the log. */
static bool tls_log_now(struct pn_tp *tp)
{
	uint64_t now = pn_now_ns(), last = atomic_load(&tp->last_tls_log);
	return (!last || now - last >= 10 * SWEEP_NS) &&
	       atomic_compare_exchange_strong(&tp->last_tls_log, &last, now);
}

/* A tcp: connection that ended after these bytes (what came instead of a frame header):
 * -PN_ETLS when they are a TLS record, i.e. the peer is a tls: endpoint (logged: the
 * code alone would not say which way round), else rc. */
static int tls_answer(struct pn_tp *tp, const struct pn_peer_rec *peer, const uint8_t *b,
                      size_t len, int rc)
{
	if (tp->tls || len < 2 || b[0] != tls_alert[0] || b[1] != tls_alert[1])
		return rc;
	if (tls_log_now(tp))
		pn_core_log(tp->pn, "tcp: %s answered in TLS: it is a tls: endpoint",
		            peer ? peer->name : "?");
	return -PN_ETLS;
}

/* The connector's side of the HELLO exchange (Identity, above), on a fresh connection
 * nobody else uses yet: HELLO with our nonce, the acceptor's CHALLENGE (its nonce and its
 * proof, or nothing when it has no key), our AUTH.  *proved: both proved the key.  A wrong
 * proof of the cluster key refuses the connection; of the secret (we are a client: most
 * likely our secret is wrong), it goes on unproven, so the server can say what is wrong. */
static int prove_hello(struct pn_tp *tp, struct conn *c, struct pn_peer_rec *peer,
                       enum pn_key which, bool *proved)
{
	struct pn *pn = tp->pn;
	uint8_t nc[PN_NONCE_LEN + PN_SESS_BLOCK], in[PN_NONCE_LEN + PN_MAC_LEN], mac[PN_MAC_LEN],
	        hb[PN_HDR_LEN] = { 0 };
	if (getrandom(nc, PN_NONCE_LEN, 0) != PN_NONCE_LEN)
		return -PN_ESYS;
	bool sess = pn_core_session_block(pn, peer, nc + PN_NONCE_LEN);
	struct pn_hdr h = { .kind = PN_K_HELLO, .len = PN_NONCE_LEN + (sess ? PN_SESS_BLOCK : 0),
	                    .origin = tp->self,
	                    .flags = PN_F_PROVE | (which != PN_KEY_CLUSTER ? PN_F_SECRET : 0) |
	                             (which == PN_KEY_ADMIN ? PN_F_ADMIN : 0) |
	                             (sess ? PN_F_SESSION : 0) };
	int rc = send_now(c, &h, nc, h.len);
	if (rc != 0)
		return rc;
	uint64_t deadline = pn_now_ns() + (uint64_t)pn_core_opts(pn)->connect_timeout_ms * 1000000u;
	rc = read_by(c, hb, sizeof hb, deadline);
	if (rc == -PN_EPEERDOWN)
		rc = tls_answer(tp, peer, hb, sizeof hb, rc);
	if (rc == 0)
		rc = pn_wire_get(hb, &h, sizeof in);
	if (rc == 0 && (h.kind != PN_K_CHALLENGE || (h.len != 0 && h.len != sizeof in)))
		rc = -PN_EPROTO;
	if (rc == 0 && h.len)
		rc = read_by(c, in, sizeof in, deadline);
	if (rc != 0)
		return rc;
	*proved = false;
	if (h.len == 0)
		return 0;              /* it has no key (a client we answer): an ordinary connection */
	bool ok = pn_core_mac_ok(pn, which, pn_label_acceptor[which], nc, in, &tp->self,
	                         in + PN_NONCE_LEN);
	if (!ok && which == PN_KEY_CLUSTER) {
		pn_core_log(pn, "tcp: %s failed the cluster key proof (not a member, or another key)",
		            peer->name);
		return -PN_EREFUSED;
	}
	if (ok)
		pn_core_mac(pn, which, pn_label_connector[which], nc, in, &tp->self, mac);
	else
		memset(mac, 0, sizeof mac);    /* nothing about our key to one who showed none */
	struct pn_hdr auth = { .kind = PN_K_AUTH, .len = PN_MAC_LEN, .origin = tp->self };
	rc = send_now(c, &auth, mac, sizeof mac);
	*proved = ok && rc == 0;
	return rc;
}

/* The connector's TLS handshake on the calling thread, bounded by connect_timeout_ms as
 * the HELLO exchange that follows it.  A failure is logged with its reason (a certificate
 * that does not verify, a peer that is no tls: endpoint): -PN_ETLS alone would not say. */
static int tls_connect(struct pn_tp *tp, struct conn *c, struct pn_peer_rec *peer)
{
	if (!(c->tls = pn_tls_new(tp->tls, c->fd, &peer->addr)))
		return -PN_ENOMEM;
	uint64_t deadline = pn_now_ns() + (uint64_t)pn_core_opts(tp->pn)->connect_timeout_ms * 1000000u;
	char why[256];
	for (;;) {
		int r = pn_tls_handshake(c->tls, why, sizeof why);
		if (r == 0) {
			c->tls_ready = true;
			return 0;
		}
		if (r < 0) {
			if (tls_log_now(tp))
				pn_core_log(tp->pn, "tls: %s: %s", peer->name, why);
			return r;
		}
		uint64_t now = pn_now_ns();
		if (now >= deadline) {
			if (tls_log_now(tp))
				pn_core_log(tp->pn, "tls: %s: no TLS handshake within %u ms", peer->name,
				            pn_core_opts(tp->pn)->connect_timeout_ms);
			return -PN_ETIMEDOUT;
		}
		struct pollfd p = { .fd = c->fd, .events = r == PN_TLS_WANT_READ ? POLLIN : POLLOUT };
		if (poll(&p, 1, (int)((deadline - now + 999999) / 1000000)) < 0 && errno != EINTR)
			return -PN_EPEERDOWN;
	}
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
	if (!tp->tls)                  /* sends block, reads use DONTWAIT; tls: OpenSSL polls */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	unsigned silent_ms = pn_core_session_silent_ms(tp->pn, peer);
	if (silent_ms) {
		/* a session's connection: a link that goes silent (no reset, no FIN) must break
		 * it, so the session reconnects or gives up at its outage limit.  Keepalive probes
		 * every second once idle; the kernel aborts when data or probes stay unacknowledged
		 * for silent_ms (TCP_USER_TIMEOUT bounds both) */
		int on = 1, idle_s = 1, intvl_s = 1, cnt = (int)(silent_ms / 1000) + 1;
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl_s, sizeof intvl_s);
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
		setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &silent_ms, sizeof silent_ms);
	}
	struct conn *c = conn_new(tp, fd, NULL, false);   /* not in epoll until the HELLO is done */
	if (!c) {
		close(fd);
		return -PN_ENOMEM;
	}
	/* HELLO goes out before anyone else can use the connection: it is not attached yet
	 * (and never batched, or another thread's frame could overtake it) */
	bool trusted = false, proved = false;
	if (tp->tls && (rc = tls_connect(tp, c, peer)) != 0) {
		/* (the HELLO exchange below would go in clear) */
	} else if (pn_core_has_key(tp->pn, PN_KEY_CLUSTER)) {
		rc = prove_hello(tp, c, peer, PN_KEY_CLUSTER, &trusted);
	} else if (pn_core_has_key(tp->pn, PN_KEY_ADMIN)) {
		rc = prove_hello(tp, c, peer, PN_KEY_ADMIN, &proved);
	} else if (pn_core_has_key(tp->pn, PN_KEY_SECRET)) {
		rc = prove_hello(tp, c, peer, PN_KEY_SECRET, &proved);
	} else {
		uint8_t block[PN_SESS_BLOCK];
		bool sess = pn_core_session_block(tp->pn, peer, block);
		struct pn_hdr hello = { .kind = PN_K_HELLO, .origin = tp->self,
		                        .flags = sess ? PN_F_SESSION : 0,
		                        .len = sess ? PN_SESS_BLOCK : 0 };
		rc = send_now(c, &hello, block, hello.len);
	}
	if (rc != 0) {
		conn_unref(c);             /* closes fd */
		return rc;
	}
	c->trusted = trusted;
	c->peer = peer;
	/* the caller's reference, taken before the I/O thread sees the connection: a peer
	 * that closes at once would otherwise have it freed under us (its EOF drops the
	 * I/O thread's reference) */
	atomic_fetch_add(&c->refs, 1);
	conn_watch_new(tp, c);
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
		} else if (peer->anon || h->kind == PN_K_BYE) {
			/* known only by its connection, which is gone: never connect to where it
			 * says it listens (anyone may say anything) */
			pthread_mutex_unlock(&s->lock);
			return -PN_EPEERDOWN;
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

/* rx_budget: may this connection start receiving a payload of len bytes now?  Payloads that
 * fit the stage are not counted (each connection has one stage anyway); a payload larger
 * than the whole budget is let through when nothing else holds any, so it cannot wait
 * forever. */
static bool budget_take(struct pn_tp *tp, struct conn *c, uint64_t len)
{
	uint64_t budget = pn_core_opts(tp->pn)->rx_budget;
	if (!budget || len <= RX_STAGE)
		return true;
	uint64_t cur = atomic_load(&tp->rx_held);
	do
		if (cur && cur + len > budget)
			return false;
	while (!atomic_compare_exchange_weak(&tp->rx_held, &cur, cur + len));
	c->held = len;
	return true;
}

static void budget_release(struct pn_tp *tp, struct conn *c)
{
	if (!c->held)
		return;
	atomic_fetch_sub(&tp->rx_held, c->held);
	c->held = 0;
	if (atomic_load(&tp->n_blocked) > 0)
		pn_signal_eventfd(tp->wakefd);     /* the I/O thread resumes a waiting connection */
}

static void conn_close(struct pn_tp *tp, struct conn *c, int err)
{
	epoll_ctl(tp->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (c->unwatched) {
		c->unwatched = false;
		atomic_fetch_sub(&tp->n_unwatched, 1);
	}
	if (c->budget_wait) {
		c->budget_wait = false;
		atomic_fetch_sub(&tp->n_blocked, 1);
	}
	if (c->in_payload) {
		budget_release(tp, c);
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
		if (c->peer->anon)
			pn_core_peer_retire(tp->pn, c->peer);   /* known by this connection alone */
	}
	pthread_mutex_lock(&tp->lock);
	for (struct conn **p = &tp->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_mutex_unlock(&tp->lock);
}

/* The reader of c (rx_lock held) failed with rc: close c for good.  The caller then lets go
 * of rx_lock and drops the I/O thread's reference. */
static void conn_fail(struct pn_tp *tp, struct conn *c, int rc)
{
	if (rc == -PN_EPROTO || rc == -PN_ETOOBIG)
		pn_core_count(tp->pn, PN_ST_BAD_FRAMES, 1);
	conn_close(tp, c, rc == -PN_EPROTO || rc == -PN_ETOOBIG ? -PN_EPEERDOWN : rc);
	c->closed = true;
}

/* Shut c down on purpose (a limit or a timeout; tp->lock held): the I/O thread then reads
 * its end and closes it as any other. */
static void conn_doom(struct conn *c)
{
	c->doomed = true;
	pthread_mutex_lock(&c->send_lock);
	c->dead = true;
	shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&c->send_lock);
}

/* The payload of c->h starts: ask the core where it goes (after rx_budget agrees; else the
 * connection waits, blocked), and put there what was read of it into head already. */
static int payload_start(struct pn_tp *tp, struct conn *c)
{
	const struct pn_hdr *h = &c->h;
	bool waited = c->blocked;
	if (!budget_take(tp, c, h->len)) {
		if (!c->blocked)
			pn_core_count(tp->pn, PN_ST_RX_WAITS, 1);
		c->blocked = true;
		return 0;
	}
	c->blocked = false;
	if (h->kind == PN_K_SREQ && !atomic_load_explicit(&c->admitted, memory_order_relaxed))
		c->h.kind = PN_K_MSG;  /* no session before admission: nothing kept for it */
	c->dst = pn_core_rx_begin(tp->pn, c->peer, h, &c->rx);
	c->need = h->len;
	c->got = 0;
	/* a rate sample starts at the recv that brought the header (not after a wait for
	 * rx_budget: that wait is not the link's); the stage still holds what it brought */
	c->rx_t0 = !waited && h->len >= RX_RATE_BYTES ? c->recv_ns : 0;
	c->rx_b0 = c->head_got + (c->st_len - c->st_off);
	c->rx_wait_ns = 0;
	c->in_payload = true;
	if (h->len && !c->dst)
		return -PN_ENOMEM;
	if (c->head_got) {
		memcpy(c->dst, c->head, c->head_got);
		c->got = c->head_got;
		c->head_got = 0;
	}
	return 0;
}

/* Read the next n bytes of the frame into c->head before going on (on_head). */
static int head_start(struct conn *c, size_t n)
{
	if (!c->head && !(c->head = malloc(PN_ADMIT_HEAD)))
		return -PN_ENOMEM;
	c->in_head = true;
	c->head_need = n;
	c->head_got = 0;
	return 0;
}

/* HELLO from the connector of an inbound connection, with its nonce when it offers a proof. */
static int on_hello(struct pn_tp *tp, struct conn *c, const uint8_t *nonce)
{
	struct pn *pn = tp->pn;
	enum pn_key which = !(c->h.flags & PN_F_SECRET) ? PN_KEY_CLUSTER :
	                    c->h.flags & PN_F_ADMIN ? PN_KEY_ADMIN : PN_KEY_SECRET;
	if (nonce && pn_core_has_key(pn, which)) {
		/* challenge it, and prove ourselves: its claim waits for its AUTH */
		struct proof *p = malloc(sizeof *p);
		if (!p)
			return -PN_ENOMEM;
		p->which = which;
		p->origin = c->h.origin;
		memcpy(p->nc, nonce, PN_NONCE_LEN);
		uint8_t out[PN_NONCE_LEN + PN_MAC_LEN];
		if (pn_core_challenge(pn, which, p->nc, &p->origin, p->na, out) != 0) {
			free(p);
			return -PN_ESYS;
		}
		c->proof = p;
		struct pn_hdr ch = { .kind = PN_K_CHALLENGE, .len = sizeof out, .origin = tp->self };
		return send_now(c, &ch, out, sizeof out);
	}
	if (nonce) {
		/* no key here: say so; the connector goes on as an ordinary one */
		struct pn_hdr ch = { .kind = PN_K_CHALLENGE, .origin = tp->self };
		int rc = send_now(c, &ch, NULL, 0);
		if (rc != 0)
			return rc;
	}
	/* Its claimed address is not believed: it is known by this connection alone, replies to
	 * it go back on it, and nothing ever connects to where it says it listens. */
	struct pn_peer_rec *peer = pn_core_peer_anon(pn, &c->remote);
	if (!peer)
		return -PN_ENOMEM;
	pn_core_peer_claims(pn, peer, &c->h.origin);
	conn_attach(tp, c, peer);
	if (!pn_core_opts(pn)->admit)
		atomic_store(&c->admitted, true);
	return 0;
}

/* AUTH: the connector's proof for the nonces and the address it claimed. */
static int on_auth(struct pn_tp *tp, struct conn *c)
{
	struct proof *p = c->proof;
	c->proof = NULL;
	enum pn_key which = p->which;
	bool ok = pn_core_mac_ok(tp->pn, which, pn_label_connector[which], p->nc, p->na, &p->origin,
	                         c->head);
	struct pn_addr origin = p->origin;
	free(p);
	if (which != PN_KEY_CLUSTER) {
		/* a client: proven or not, it is known by this connection alone; unproven, it
		 * goes on as one that brought no proof (the application says what is wrong) */
		struct pn_peer_rec *peer = pn_core_peer_anon(tp->pn, &c->remote);
		if (!peer)
			return -PN_ENOMEM;
		pn_core_peer_claims(tp->pn, peer, &origin);
		peer->proven = !ok ? PN_PROOF_NONE :
		               which == PN_KEY_ADMIN ? PN_PROOF_ADMIN : PN_PROOF_SECRET;
		conn_attach(tp, c, peer);
		if (ok || !pn_core_opts(tp->pn)->admit)
			atomic_store(&c->admitted, true);
		return 0;
	}
	if (!ok) {
		char name[PN_NAME_LEN];
		pn_addr_name(&origin, name, sizeof name);
		pn_core_log(tp->pn, "tcp: a connection claiming to be %s failed the cluster key proof",
		            name);
		return -PN_EPROTO;
	}
	struct pn_peer_rec *peer = pn_core_peer(tp->pn, &origin);
	if (!peer)
		return -PN_ENOMEM;
	c->trusted = true;
	atomic_store(&c->admitted, true);
	conn_attach(tp, c, peer);
	return 0;
}

/* The first bytes of a message from a connection not yet admitted are in head. */
static int on_message_head(struct pn_tp *tp, struct conn *c)
{
	if (pn_core_admit(tp->pn, c->peer, c->h.type, c->head, c->head_got, c->h.len))
		atomic_store(&c->admitted, true);
	else if (c->h.len > pn_core_opts(tp->pn)->preauth_max) {
		/* the answer it sends is batched and flushed (on_readable) before the close */
		pn_core_refuse(tp->pn, c->peer, c->h.type, c->h.coop, c->head, c->head_got);
		return -PN_ETOOBIG;
	}
	return payload_start(tp, c);
}

/* head is complete. */
static int on_head(struct pn_tp *tp, struct conn *c)
{
	c->in_head = false;
	switch (c->h.kind) {
	case PN_K_HELLO: {
		bool prove = c->h.flags & PN_F_PROVE;
		c->head_got = 0;
		if (c->h.flags & PN_F_SESSION) {
			c->has_sess = true;
			memcpy(c->sess_block, c->head + (prove ? PN_NONCE_LEN : 0), PN_SESS_BLOCK);
		}
		return on_hello(tp, c, prove ? c->head : NULL);
	}
	case PN_K_NACK:
		c->head_got = 0;
		pn_core_nack(tp->pn, c->peer, c->h.coop, c->head, c->h.len);
		return 0;
	case PN_K_AUTH:
		c->head_got = 0;
		return on_auth(tp, c);
	default:
		return on_message_head(tp, c);
	}
}

/* A complete header is in c->hdr: check it and start what follows.  0, or an error that
 * closes the connection. */
static int on_header(struct pn_tp *tp, struct conn *c)
{
	struct pn_hdr *h = &c->h;
	int rc = pn_wire_get(c->hdr, h, pn_core_opts(tp->pn)->max_msg);
	if (rc != 0)
		return rc;
	switch (h->kind) {
	case PN_K_SREQ:
	case PN_K_MSG:
		if (!c->peer || c->proof)
			return -PN_EPROTO;         /* a message before HELLO (or AUTH) */
		if (!c->trusted)
			h->flags &= ~PN_F_FORWARDED;   /* an origin nobody proved: reply to the sender */
		if (!atomic_load_explicit(&c->admitted, memory_order_relaxed))
			return h->len ? head_start(c, h->len < PN_ADMIT_HEAD ? h->len : PN_ADMIT_HEAD) :
			                on_message_head(tp, c);
		return payload_start(tp, c);
	case PN_K_HELLO:
		if (!c->inbound || c->peer || c->proof || h->origin.scheme != tp->self.scheme)
			return -PN_EPROTO;
	{
		size_t want = (h->flags & PN_F_PROVE ? PN_NONCE_LEN : 0) +
		              (h->flags & PN_F_SESSION ? PN_SESS_BLOCK : 0);
		if (h->len != want)
			return -PN_EPROTO;
		return want ? head_start(c, want) : on_hello(tp, c, NULL);
	}
	case PN_K_NACK:
		return c->peer && !c->proof && h->len == 4 ? head_start(c, h->len) : -PN_EPROTO;
	case PN_K_BYE:
		if (!c->peer || c->proof || h->len)
			return -PN_EPROTO;
		pn_core_session_bye(tp->pn, c->peer);
		return 0;
	case PN_K_AUTH:
		return c->proof && h->len == PN_MAC_LEN ? head_start(c, h->len) : -PN_EPROTO;
	default:
		return -PN_EPROTO;         /* CHALLENGE comes only to prove_hello */
	}
}

/* A recv of c returned bytes: when, and how long the socket had been empty before */
static void recv_done(struct conn *c)
{
	c->recv_ns = pn_now_ns();
	if (c->drained_ns) {
		c->rx_wait_ns += c->recv_ns - c->drained_ns;
		c->drained_ns = 0;
	}
}

/* The median of the nonzero rates of v[RX_SAMPLES] (0: none) */
static uint64_t rx_median(const uint64_t *v)
{
	uint64_t s[RX_SAMPLES];
	unsigned n = 0;
	for (unsigned i = 0; i < RX_SAMPLES; i++)
		if (v[i]) {
			unsigned j = n++;      /* insertion: eight values */
			for (; j > 0 && s[j - 1] > v[i]; j--)
				s[j] = s[j - 1];
			s[j] = v[i];
		}
	return n ? s[n / 2] : 0;
}

/* A payload of c is complete: the bytes that came after its first recv, over the time until
 * the last, are a sample of how fast the peer's data reaches us (pn_link_rx_rate).  The sender
 * wrote the whole payload at once, so unlike the kernel's delivery rate this needs no stream
 * that keeps the link busy: one reply of a request-response exchange (a read through a
 * mount, of a file of a few kilobytes) measures the link too.
 *
 * What it keeps must survive three kinds of noise.  A reader slower than the link (busy, or
 * held up by a loaded machine) measures itself, and packing would not help it: a sample
 * counts only when the socket stood empty for at least half its time (the link kept the
 * reader waiting).  A payload that was all there at its first recv says nothing either way:
 * loopback, a slow reader, but also a slow link whose shaper or NIC hands over 64 KiB
 * segments whole (GSO, GRO).  And a shaper's token bucket (a policer, a tbf) lets payloads
 * through at the speed of the wire whenever the link rested, as it does once packing makes
 * the transfers smaller.  So the rate is the lowest recent sample; it stands while samples
 * near it (within twice it) come, and is forgotten after RX_KEEP_NS without one, or once
 * RX_FORGET_BYTES of payloads came faster than twice it: more than any bucket holds, and a
 * link that is slow shows it again as soon as what it carries is no longer packed. */
static void rx_rate_sample(struct conn *c, uint64_t now)
{
	uint64_t t0 = c->rx_t0;
	c->rx_t0 = 0;
	if (!t0)
		return;                    /* too small to say, or it waited for rx_budget */
	uint64_t est = atomic_load_explicit(&c->rx_rate_bps, memory_order_relaxed);
	if (now - atomic_load_explicit(&c->rx_rate_at_ns, memory_order_relaxed) >= RX_KEEP_NS)
		est = 0;                   /* it lapsed */
	size_t bytes = c->rx_b0 < c->need ? c->need - c->rx_b0 : 0;
	if (bytes < RX_RATE_BYTES)
		return;                    /* (nearly) all there at its first recv */
	uint64_t dur = c->recv_ns > t0 ? c->recv_ns - t0 : 0;
	uint64_t rate = dur ? (uint64_t)((double)bytes * 1e9 / (double)dur) : UINT64_MAX / 4;
	/* A sample is one payload's wait, and on a machine whose CPUs the sender shares (a veth
	 * pair between namespaces, a loaded virtual machine) it loses its CPU in the middle of
	 * one now and then: 64 KiB, a pause of a time slice, the rest: 20-140 MB/s, among
	 * payloads that came at gigabytes a second or at once.  On a slow link most payloads
	 * come as slowly as each.  So a sample counts as no slower than half the median of the
	 * last RX_SAMPLES payloads that came in pieces, waited for or not. */
	c->rx_all[c->rx_all_next] = rate;
	c->rx_all_next = (c->rx_all_next + 1) % RX_SAMPLES;
	if (!dur)
		return;                    /* all there by its second recv */
	if (c->rx_wait_ns * 2 < dur)
		return;                    /* the reader, not the link, took most of the time */
	uint64_t median = rx_median(c->rx_all);
	if (rate < median / 2)
		rate = median / 2;
	c->rx_samples[c->rx_next] = (typeof(c->rx_samples[0])){ rate, now };
	c->rx_next = (c->rx_next + 1) % RX_SAMPLES;
	uint64_t lo = UINT64_MAX;      /* the lowest recent sample */
	for (unsigned i = 0; i < RX_SAMPLES; i++)
		if (c->rx_samples[i].at && now - c->rx_samples[i].at < RX_RECENT_NS &&
		    c->rx_samples[i].rate < lo)
			lo = c->rx_samples[i].rate;
	if (!est || lo < est) {
		atomic_store_explicit(&c->rx_rate_bps, lo, memory_order_relaxed);
	} else if (rate > 2 * est) {
		if ((c->rx_fast_bytes += c->need) >= RX_FORGET_BYTES)
			goto forget;
		return;
	}
	c->rx_fast_bytes = 0;          /* set, or confirmed by a sample near it */
	atomic_store_explicit(&c->rx_rate_at_ns, now, memory_order_relaxed);
	return;
forget:
	atomic_store_explicit(&c->rx_rate_bps, 0, memory_order_relaxed);
	memset(c->rx_samples, 0, sizeof c->rx_samples);
	c->rx_fast_bytes = 0;
}

static void finish_payload(struct pn_tp *tp, struct conn *c)
{
	uint64_t now = pn_coarse_ns();
	c->rx_total += c->need;
	pn_carried_add(&c->rx_carried, now, c->rx_total);
	rx_rate_sample(c, now);
	c->in_payload = false;
	budget_release(tp, c);
	pn_core_rx_end(tp->pn, &c->rx, 0);
}

/* Consume the bytes staged by the last recv (up to a payload waiting for rx_budget).  0, or
 * an error that closes the connection. */
static int drain_stage(struct pn_tp *tp, struct conn *c)
{
	while (c->st_off < c->st_len && !c->blocked) {
		size_t avail = c->st_len - c->st_off;
		int rc = 0;
		if (c->in_head) {
			size_t n = c->head_need - c->head_got;
			if (n > avail)
				n = avail;
			memcpy(c->head + c->head_got, c->stage + c->st_off, n);
			c->head_got += n;
			c->st_off += n;
			if (c->head_got == c->head_need)
				rc = on_head(tp, c);
		} else if (!c->in_payload) {
			size_t n = PN_HDR_LEN - c->hdr_got;
			if (n > avail)
				n = avail;
			memcpy(c->hdr + c->hdr_got, c->stage + c->st_off, n);
			c->hdr_got += n;
			c->st_off += n;
			if (c->hdr_got == PN_HDR_LEN) {
				c->hdr_got = 0;
				rc = on_header(tp, c);
			}
		} else {
			size_t n = c->need - c->got;
			if (n > avail)
				n = avail;
			memcpy(c->dst + c->got, c->stage + c->st_off, n);
			c->got += n;
			c->st_off += n;
		}
		if (rc != 0)
			return rc;
		if (c->in_payload && c->got == c->need) {
			finish_payload(tp, c);
			if (tls_gave_away == c)
				return YIELDED;    /* c is another reader's now */
		}
	}
	return 0;
}

/* The acceptor's TLS handshake, one step each time epoll reports its socket (readable, or
 * writable while OpenSSL waits to write: tls_out).  Nothing of the connection is read
 * before it is done.  A peer that stalls in it is closed by sweep like any connection not
 * admitted (preauth_timeout_ms); meanwhile it holds its SSL object, whose buffers are let
 * go while it waits, and counts toward max_conns.  0: done or waiting, else an error that
 * closes the connection (-PN_EPROTO: what it sent was not TLS, or not a good handshake). */
static int tls_accept_step(struct pn_tp *tp, struct conn *c)
{
	char why[256] = "";
	uint8_t first[2];
	int r;
	if (!c->tls_out && recv(c->fd, first, 2, MSG_PEEK | MSG_DONTWAIT) == 2 &&
	    (first[0] | first[1] << 8) == PN_MAGIC) {
		/* before OpenSSL calls it a bad record: say what it is, here and to the client */
		snprintf(why, sizeof why, "it speaks tcp: (a Paradis-Net frame, not TLS)");
		if (send(c->fd, tls_alert, sizeof tls_alert, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
			/* it hears of it as a closed connection instead */
		}
		r = -PN_ETLS;
	} else {
		r = pn_tls_handshake(c->tls, why, sizeof why);
	}
	if (r == -PN_EPEERDOWN)
		return r;                  /* it went away: nothing to say */
	if (r < 0) {
		if (tls_log_now(tp)) {
			char name[PN_NAME_LEN];
			pn_addr_name(&c->remote, name, sizeof name);
			pn_core_log(tp->pn, "tls: a connection from %s failed the handshake: %s", name, why);
		}
		return -PN_EPROTO;         /* counted with the malformed frames (bad_frames) */
	}
	c->tls_ready = r == 0;
	bool out = r == PN_TLS_WANT_WRITE;
	if (out != c->tls_out) {
		c->tls_out = out;
		struct epoll_event ev = { .events = CONN_EVENTS | (out ? EPOLLOUT : 0), .data.ptr = c };
		epoll_ctl(tp->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	}
	return 0;
}

/* Read what is available.  Returns 0, or an error after which the connection is closed.
 * A short read means the socket is empty: return to epoll (level-triggered, so bytes that
 * arrive meanwhile are reported) instead of a recv that could only say EAGAIN.
 * block: the first recv waits (up to the socket's SO_RCVTIMEO); 1 if nothing came.
 * A payload waiting for rx_budget (blocked) stops the reading: its socket is left full, so
 * the sender waits (back-pressure).  YIELDED: a handler gave c away (tcp_yield). */
static int read_pass(struct pn_tp *tp, struct conn *c, bool block)
{
	if (c->tls && !c->tls_ready) {
		int rc = tls_accept_step(tp, c);
		if (rc != 0 || !c->tls_ready)
			return rc;
	}
	for (int flags = block ? 0 : MSG_DONTWAIT;; flags = MSG_DONTWAIT) {
		int rc = drain_stage(tp, c);
		if (rc != 0)
			return rc;
		/* what the frames of this recv made the handlers send goes out before the next
		 * recv: a pass over a long stream (bulk data) must not hold its replies back */
		out_flush(c);
		if (c->blocked)
			return 0;
		ssize_t r;
		size_t asked;
		if (c->in_payload && c->need - c->got >= RX_STAGE) {
			/* a large payload is read straight into its destination, not the stage */
			asked = c->need - c->got;
			r = conn_recv(c, c->dst + c->got, asked, !flags);
			if (r > 0) {
				recv_done(c);
				c->got += (size_t)r;
				if (c->got == c->need) {
					finish_payload(tp, c);
					if (tls_gave_away == c)
						return YIELDED;
				}
			}
		} else {
			asked = RX_STAGE;
			r = conn_recv(c, c->stage, asked, !flags);
			if (r > 0) {
				recv_done(c);
				c->st_off = 0;
				c->st_len = (size_t)r;
			}
		}
		if (r > 0) {
			atomic_store_explicit(&c->last_rx_ns, pn_coarse_ns(), memory_order_relaxed);
			/* (tls: a read ends at a record's end; the socket is empty when TLS holds
			 * nothing more, for it reads ahead as much as the socket has) */
			if ((size_t)r < asked && (!c->tls || !pn_tls_pending(c->tls))) {
				c->drained_ns = c->recv_ns;   /* the reader waits for the link now */
				return drain_stage(tp, c);
			}
			continue;
		}
		if (r == 0)
			return tls_answer(tp, c->peer, c->hdr, c->hdr_got, -PN_EPEERDOWN);
		if ((errno == EAGAIN || errno == EWOULDBLOCK) && !c->drained_ns)
			c->drained_ns = pn_now_ns();  /* (tls: a record's rest is still to come) */
		if (!flags && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 1;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno != EINTR)
			return -PN_EPEERDOWN;
	}
}

/* read_pass, with the frames its handlers send batched (see the top); first delivers a
 * payload that became complete while it waited for rx_budget (resume_blocked). */
static int on_readable(struct pn_tp *tp, struct conn *c, bool block)
{
	struct conn *outer = tls_reading;   /* NULL: nobody reads inside a handler */
	tls_reading = c;
	int rc = 0;
	if (c->in_payload && c->got == c->need) {
		finish_payload(tp, c);
		if (tls_gave_away == c)
			rc = YIELDED;
	}
	if (rc == 0)
		rc = read_pass(tp, c, block);
	if (rc != YIELDED)
		out_flush(c);              /* (tcp_yield flushed it before letting go) */
	tls_reading = outer;
	return rc;
}

/* Room for one more inbound connection from remote (tp->lock held)?  At a limit, the oldest
 * connection not yet admitted (from that address, for the per-address limit) makes room;
 * when there is none, the new one is refused. */
static bool conn_room(struct pn_tp *tp, const struct pn_addr *remote, bool *hit)
{
	*hit = true;
	unsigned per_addr = pn_core_opts(tp->pn)->max_conns_per_addr;
	unsigned total = 0, same = 0;
	struct conn *oldest = NULL, *oldest_same = NULL;
	for (struct conn *c = tp->conns; c; c = c->next) {   /* newest first */
		if (!c->inbound || c->doomed)
			continue;
		bool s = pn_addr_same_host(&c->remote, remote);
		total++;
		same += s;
		if (!atomic_load(&c->admitted)) {
			oldest = c;
			if (s)
				oldest_same = c;
		}
	}
	if (per_addr && same >= per_addr) {
		if (!oldest_same)
			return false;
		conn_doom(oldest_same);    /* and the total goes down with it */
		return true;
	}
	if (total >= tp->max_conns) {
		if (!oldest)
			return false;
		conn_doom(oldest);
		return true;
	}
	*hit = false;
	return true;
}

/* accept4 said EMFILE or ENFILE: the connection waiting cannot even be accepted to be
 * refused, and the listening socket stays readable, so the I/O thread would spin.  Spend
 * the reserve descriptor to accept and close it (the client sees a closed connection, not
 * silence), make room by shedding the oldest connection not admitted, and if even that is
 * impossible stop accepting for a moment. */
static void on_no_fd(struct pn_tp *tp)
{
	uint64_t now = pn_now_ns();
	if (now - tp->last_emfile_log >= 10 * SWEEP_NS || !tp->last_emfile_log) {
		tp->last_emfile_log = now;
		pn_core_log(tp->pn, "tcp: out of file descriptors (%u connections allowed): refusing "
		            "new ones until some close", tp->max_conns);
	}
	pthread_mutex_lock(&tp->lock);
	struct conn *oldest = NULL;
	for (struct conn *c = tp->conns; c; c = c->next)
		if (c->inbound && !c->doomed && !atomic_load(&c->admitted))
			oldest = c;
	if (oldest)
		conn_doom(oldest);
	pthread_mutex_unlock(&tp->lock);
	bool refused = false;
	if (tp->reserve_fd >= 0) {
		close(tp->reserve_fd);
		int fd = accept4(tp->lfd, NULL, NULL, SOCK_CLOEXEC);
		refused = fd >= 0;
		if (fd >= 0)
			close(fd);
		tp->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	if (!refused || tp->reserve_fd < 0) {
		struct epoll_event ev = { .events = 0, .data.ptr = tp };
		epoll_ctl(tp->epfd, EPOLL_CTL_MOD, tp->lfd, &ev);
		tp->accept_paused_until = now + ACCEPT_PAUSE_NS;
	}
}

static void on_accept(struct pn_tp *tp)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		int fd = accept4(tp->lfd, (struct sockaddr *)&ss, &sl,
		                 SOCK_CLOEXEC | (tp->tls ? SOCK_NONBLOCK : 0));
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE)
				on_no_fd(tp);
			return;                    /* EAGAIN: no more */
		}
		struct pn_addr remote;
		pn_addr_from_sockaddr(&remote, tp->self.scheme, (struct sockaddr *)&ss);
		pthread_mutex_lock(&tp->lock);
		bool hit;
		bool room = conn_room(tp, &remote, &hit);
		pthread_mutex_unlock(&tp->lock);
		if (hit) {
			/* said once per 10 s: a client shed here sees only a closed connection
			 * ("peer is down"), so the server's log is where the reason shows */
			uint64_t now = pn_now_ns();
			if (now - tp->last_refuse_log >= 10 * SWEEP_NS || !tp->last_refuse_log) {
				tp->last_refuse_log = now;
				char name[80];
				pn_addr_name(&remote, name, sizeof name);
				pn_core_log(tp->pn, "tcp: a connection from %s at max_conns_per_addr (%u) or "
				            "max_conns (%u): %s", name,
				            pn_core_opts(tp->pn)->max_conns_per_addr, tp->max_conns,
				            room ? "closed the oldest one not yet admitted" :
				            "refused it, all are admitted");
			}
		}
		if (room && tp->tls && !pn_tls_can_accept(tp->tls)) {
			if (tls_log_now(tp)) {
				pn_core_log(tp->pn, "tls: refused a connection: this endpoint has no "
				            "certificate (tls_cert, tls_key), it only connects");
			}
			room = false;
		}
		struct conn *c = room ? conn_new(tp, fd, &remote, !tp->tls) : NULL;
		if (c && tp->tls) {
			/* in epoll only with its TLS state: the handshake is its first read */
			if (!(c->tls = pn_tls_new(tp->tls, fd, NULL))) {
				conn_unref(c);     /* closes fd */
				continue;
			}
			conn_watch_new(tp, c);
		}
		if (!c)
			close(fd);
	}
}

/* Connections past their time (tp->lock held): not admitted within preauth_timeout_ms, or
 * admitted and silent for idle_timeout_ms (not while one of its frames waits for us). */
static void sweep(struct pn_tp *tp)
{
	const struct pn_opts *o = pn_core_opts(tp->pn);
	uint64_t now = pn_coarse_ns();
	uint64_t preauth = (uint64_t)o->preauth_timeout_ms * 1000000u;
	uint64_t idle = (uint64_t)o->idle_timeout_ms * 1000000u;
	for (struct conn *c = tp->conns; c; c = c->next) {
		if (!c->inbound || c->doomed || atomic_load(&c->dead))
			continue;
		if (!atomic_load(&c->admitted) ? now - c->opened_ns >= preauth :
		    idle && !c->budget_wait &&
		    now - atomic_load_explicit(&c->last_rx_ns, memory_order_relaxed) >= idle)
			conn_doom(c);
	}
}

/* Connections waiting for rx_budget: resume those whose payload now fits, and close those
 * shut down meanwhile (they are out of epoll, so nothing else would).  true: a handler on
 * this thread yielded (the caller stops being the reader). */
static bool resume_blocked(struct pn_tp *tp)
{
	struct conn *todo[64];
	unsigned n = 0;
	pthread_mutex_lock(&tp->lock);
	for (struct conn *c = tp->conns; c && n < 64; c = c->next)
		if (c->budget_wait) {
			atomic_fetch_add(&c->refs, 1);
			todo[n++] = c;
		}
	pthread_mutex_unlock(&tp->lock);
	for (unsigned i = 0; i < n; i++) {
		struct conn *c = todo[i];
		if (pthread_mutex_trylock(&c->rx_lock) == 0) {
			int rc = c->closed || !c->budget_wait ? 0 : atomic_load(&c->dead) ? -PN_EPEERDOWN :
			         payload_start(tp, c);
			if (rc == 0 && !c->closed && c->budget_wait && !c->blocked) {
				c->budget_wait = false;
				atomic_fetch_sub(&tp->n_blocked, 1);
				watch(tp, c, true);
				rc = on_readable(tp, c, false);
				if (rc == YIELDED) {
					while (i < n)
						conn_unref(todo[i++]);
					return true;
				}
			}
			bool failed = rc < 0 && !c->closed;
			if (failed)
				conn_fail(tp, c, rc);
			pthread_mutex_unlock(&c->rx_lock);
			if (failed)
				conn_unref(c);         /* the I/O thread's reference */
		}
		conn_unref(c);
	}
	return false;
}

/* The I/O thread looks at the connections waiters left out at due (monotonic ns). */
static void sticky_set(struct pn_tp *tp, uint64_t due)
{
	atomic_store(&tp->sticky_due, due);
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(due / 1000000000u),
	                                        .tv_nsec = (long)(due % 1000000000u) } };
	timerfd_settime(tp->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
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
		if (c->budget_wait || pthread_mutex_trylock(&c->rx_lock) != 0) {
			if (all && !c->budget_wait)
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

/* One CPU of time (pn_spin_one_cpu): the reader keeps itself on its client's CPU.  Such a
 * process has no CPU to poll on (pn_spin.c), so its reader sleeps between requests, and so
 * does the client; where each wakes is the scheduler's choice, which prefers an idle CPU, and
 * a client and reader that once sit on two CPUs stay there (each wakes on its own, idle, CPU
 * again), every message then waking a halted vCPU: a null EXEC 47-57 us instead of 15 (the
 * trace: docs/net.md, "Threads").  So every FOLLOW_EVERY-th request the reader asks where its
 * connection's last bytes came from (SO_INCOMING_CPU: over loopback the sender's CPU, whose
 * softirq queued them), and when two such samples in a row name the same CPU, other than the
 * one it keeps to, it sets its affinity to that CPU alone (a migration, and a wake-up on the
 * client's CPU from then on).  It lets go (the process's affinity again) when the budget
 * grows, when it stops being the reader (pn_yield: the long handler runs where it may) and
 * when it stops. */
#define FOLLOW_EVERY 2              /* a getsockopt, 0.7 us here; 8 left the pair on two CPUs
                                     * for 13 requests a move of the client, ~500 a run */
static __thread int tls_kept = -1;          /* the CPU this reader keeps to, -1: none */
static __thread int tls_peer_cpu = -1;      /* the last sample's */
static __thread int tls_peer_last = -1;     /* the one before (pn_spin_follow) */
static __thread unsigned tls_follow_n;      /* requests served, for sampling */

static void follow_sample(struct pn_tp *tp, int fd)
{
	if (++tls_follow_n % FOLLOW_EVERY || !pn_spin_one_cpu(pn_core_spin(tp->pn)))
		return;
	int cpu;
	socklen_t len = sizeof cpu;
	if (getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &len) == 0)
		tls_peer_cpu = cpu;
}

/* Before sleeping: keep to the client's CPU if the samples say so. */
static void follow(struct pn_spin *gate)
{
	int cpu = tls_peer_cpu;
	tls_peer_cpu = -1;
	if (cpu < 0 || (cpu = pn_spin_follow(cpu, &tls_peer_last, tls_kept)) < 0)
		return;
	cpu_set_t proc, one;
	if (sched_getaffinity(getpid(), sizeof proc, &proc) != 0 || !CPU_ISSET(cpu, &proc))
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof one, &one) == 0) {
		tls_kept = cpu;
		atomic_fetch_add_explicit(&gate->follows, 1, memory_order_relaxed);
	}
}

static void unfollow(void)
{
	if (tls_kept < 0)
		return;
	cpu_set_t proc;
	if (sched_getaffinity(getpid(), sizeof proc, &proc) == 0)
		sched_setaffinity(0, sizeof proc, &proc);
	tls_kept = tls_peer_cpu = tls_peer_last = -1;
}

/* Read c, which epoll reported with events (or a yielding reader left on tp->handed: 0), as
 * the reader.  true: a handler yielded, and this thread is no longer the reader. */
static bool serve(struct pn_tp *tp, struct conn *c, uint32_t events)
{
	/* a waiter is reading it (and is about to take it out of epoll, or just put it back):
	 * leave it to the waiter */
	if (pthread_mutex_trylock(&c->rx_lock) != 0)
		return false;
	if (c->closed || (c->budget_wait && !(events & (EPOLLERR | EPOLLHUP)))) {
		pthread_mutex_unlock(&c->rx_lock);
		return false;
	}
	if (c->budget_wait) {
		/* hung up (or shut down by a limit) while out of epoll, where only this is
		 * reported, every time: close it now */
		conn_fail(tp, c, -PN_EPEERDOWN);
		pthread_mutex_unlock(&c->rx_lock);
		conn_unref(c);
		return false;
	}
	int rc = on_readable(tp, c, false);
	if (rc == YIELDED)
		return true;               /* c's lock is let go, and c is not ours to touch */
	if (rc == 0)
		follow_sample(tp, c->fd);
	if (rc == 0 && (events & (EPOLLERR | EPOLLHUP)))
		rc = -PN_EPEERDOWN;
	if (rc != 0) {
		conn_fail(tp, c, rc);
		pthread_mutex_unlock(&c->rx_lock);
		conn_unref(c);             /* the reader's reference */
		return false;
	}
	if (c->blocked) {
		/* its payload waits for rx_budget: stop reading it (back-pressure) */
		c->budget_wait = true;
		atomic_fetch_add(&tp->n_blocked, 1);
		watch(tp, c, false);
	}
	pthread_mutex_unlock(&c->rx_lock);
	return false;
}

/* Serve the connections a yielding reader left with frames staged.  true: one yielded. */
static bool serve_handed(struct pn_tp *tp)
{
	pthread_mutex_lock(&tp->lock);
	struct conn *list = tp->handed;
	tp->handed = NULL;
	pthread_mutex_unlock(&tp->lock);
	while (list) {
		struct conn *c = list;
		list = c->hand_next;
		bool yielded = serve(tp, c, 0);
		conn_unref(c);             /* tp->handed's reference */
		if (yielded) {
			/* the rest goes back for the next reader */
			pthread_mutex_lock(&tp->lock);
			while (list) {
				struct conn *n = list->hand_next;
				list->hand_next = tp->handed;
				tp->handed = list;
				list = n;
			}
			pthread_mutex_unlock(&tp->lock);
			return true;
		}
	}
	return false;
}

/* The reader's loop.  Returns when the transport stops, or when a handler on this thread
 * yielded (tls_gave_away): another thread is the reader then. */
static void read_loop(struct pn_tp *tp)
{
	struct epoll_event evs[64];
	/* After serving, the reader polls (epoll_wait without a timeout) for as long as the
	 * spin gate allows before it sleeps: a client's next request often comes within a round
	 * trip, and waking a reader asleep on a halted vCPU costs more than that (pn_spin.c). */
	struct pn_spin *gate = pn_core_spin(tp->pn);
	uint64_t spin_until = 0;
	while (!atomic_load(&tp->stop)) {
		int sticky = atomic_load(&tp->n_unwatched) > 0;
		int blocked = atomic_load(&tp->n_blocked) > 0;
		int handed = __atomic_load_n(&tp->handed, __ATOMIC_ACQUIRE) != NULL;
		int n = epoll_wait(tp->epfd, evs, 64, handed || spin_until ? 0 :
		                   blocked || tp->accept_paused_until ? 10 : 1000);
		uint64_t now = pn_now_ns();
		if (spin_until) {
			if (n == 0 && now < spin_until && !handed) {
				__builtin_ia32_pause();
				continue;          /* nothing yet: poll again (the chores below can wait) */
			}
			pn_spin_done(gate, PN_SPIN_REQUEST, n > 0, now);
			spin_until = 0;
		}
		if (sticky || atomic_load(&tp->kicked)) {
			if (atomic_load(&tp->kicked) || now - tp->last_scan >= STICKY_NS / 2) {
				rewatch_idle(tp);
				tp->last_scan = now;
			}
		}
		if (tp->accept_paused_until && now >= tp->accept_paused_until) {
			tp->accept_paused_until = 0;
			struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tp };
			epoll_ctl(tp->epfd, EPOLL_CTL_MOD, tp->lfd, &ev);
		}
		if (now - tp->last_sweep >= SWEEP_NS) {
			tp->last_sweep = now;
			pthread_mutex_lock(&tp->lock);
			sweep(tp);
			pthread_mutex_unlock(&tp->lock);
		}
		if (handed && serve_handed(tp))
			return;
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == tp) {
				on_accept(tp);
			} else if (p == &tp->wakefd) {
				uint64_t v;
				if (read(tp->wakefd, &v, sizeof v) < 0) { /* nothing to do */ }
			} else if (p == &tp->timerfd) {
				/* STICKY_NS after the last waiter let go: put back what nobody waits on;
				 * a connection a waiter still holds is looked at again STICKY_NS on */
				uint64_t v;
				if (read(tp->timerfd, &v, sizeof v) < 0) { /* nothing to do */ }
				rewatch_idle(tp);
				tp->last_scan = now;
				atomic_store(&tp->sticky_due, 0);
				if (atomic_load(&tp->n_unwatched) > 0)
					sticky_set(tp, now + STICKY_NS);
			} else if (serve(tp, p, evs[i].events)) {
				return;            /* the events left are reported again to the next reader */
			}
		}
		if (atomic_load(&tp->n_blocked) > 0 && resume_blocked(tp))
			return;
		/* (taken here, after the returns above: a poll begun is always ended) */
		if (n > 0 && !atomic_load(&tp->stop)) {
			uint64_t budget = pn_spin_budget(gate, PN_SPIN_REQUEST, now);
			spin_until = budget ? now + budget : 0;
			if (pn_spin_one_cpu(gate))
				follow(gate);
			else
				unfollow();
		}
	}
	unfollow();
	if (spin_until)
		pn_spin_done(gate, PN_SPIN_REQUEST, false, pn_now_ns());
}

/* A thread of the pool: the reader while it holds the place, else a follower waiting for
 * it (Run to completion, above). */
static void *io_main(void *arg)
{
	pthread_setname_np(pthread_self(), "pn-tcp-io");   /* for top -H, ps -L, gdb */
	pn_spin_unkeep();
	struct pn_tp *tp = arg;
	pthread_mutex_lock(&tp->io_lock);
	for (;;) {
		while (tp->reader_taken && !atomic_load(&tp->stop)) {
			tp->n_idle++;
			pthread_cond_wait(&tp->io_cond, &tp->io_lock);
			tp->n_idle--;
		}
		if (atomic_load(&tp->stop))
			break;
		tp->reader_taken = true;
		pthread_mutex_unlock(&tp->io_lock);
		tls_reader = tp;
		tls_gave_away = NULL;
		read_loop(tp);
		bool yielded = tls_gave_away != NULL;
		tls_reader = NULL;
		tls_gave_away = NULL;
		pthread_mutex_lock(&tp->io_lock);
		if (!yielded) {            /* stopping: wake the followers to see it */
			pthread_cond_broadcast(&tp->io_cond);
			break;
		}
	}
	pthread_mutex_unlock(&tp->io_lock);
	return NULL;
}

/* pn_yield on the reader (see the top): hand c (the connection being read) and the
 * reader's place over. */
static int tcp_yield(struct pn_tp *tp, bool check_only)
{
	if (tls_reader != tp || tls_gave_away)
		return 1;
	/* The check arfd makes before each request it runs on the reader, without the lock:
	 * n_threads only grows (stored atomically, under io_lock), so below IO_MAX a yield has
	 * a thread to hand over to.  (The answer is advice either way: the yield itself checks
	 * again under the lock.) */
	if (check_only && !atomic_load(&tp->stop) &&
	    __atomic_load_n(&tp->n_threads, __ATOMIC_RELAXED) < IO_MAX)
		return 0;
	pthread_mutex_lock(&tp->io_lock);
	int rc = 0;
	if (atomic_load(&tp->stop))
		rc = -PN_ESHUTDOWN;
	else if (tp->n_idle == 0 && tp->n_threads >= IO_MAX)
		rc = -PN_ENOMEM;
	if (rc != 0 || check_only) {
		pthread_mutex_unlock(&tp->io_lock);
		return rc;
	}
	unfollow();                    /* the long handler, and a new thread, run where they may */
	if (tp->n_idle == 0) {
		if (pthread_create(&tp->threads[tp->n_threads], NULL, io_main, tp) != 0) {
			pthread_mutex_unlock(&tp->io_lock);
			return -PN_ESYS;
		}
		__atomic_store_n(&tp->n_threads, tp->n_threads + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&tp->io_lock);
	struct conn *c = tls_reading;
	if (c) {
		out_flush(c);
		if (c->st_off < c->st_len || (c->tls && pn_tls_pending(c->tls))) {
			atomic_fetch_add(&c->refs, 1);
			pthread_mutex_lock(&tp->lock);
			c->hand_next = tp->handed;
			__atomic_store_n(&tp->handed, c, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&tp->lock);
		}
		tls_reading = NULL;        /* this handler's sends now go out at once */
		pthread_mutex_unlock(&c->rx_lock);
	}
	tls_gave_away = c ? (void *)c : (void *)tp;
	pthread_mutex_lock(&tp->io_lock);
	tp->reader_taken = false;
	pthread_cond_signal(&tp->io_cond);
	pthread_mutex_unlock(&tp->io_lock);
	return 0;
}

/* Listen on *self, tls: with the certificates of tls (owned from here, also on failure). */
static int stream_open(struct pn *pn, struct pn_addr *self, struct pn_tls_ctx *tls,
                       struct pn_tp **out, char *err, size_t errlen)
{
	struct pn_tp *tp = calloc(1, sizeof *tp);
	if (!tp) {
		pn_tls_ctx_free(tls);
		snprintf(err, errlen, "out of memory");
		return -PN_ENOMEM;
	}
	tp->pn = pn;
	tp->tls = tls;
	tp->lfd = tp->epfd = tp->wakefd = tp->timerfd = -1;
	tp->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	tp->max_conns = pn_core_opts(pn)->max_conns;
	struct rlimit rl;
	if (!tp->max_conns) {
		tp->max_conns = 1024 - FD_MARGIN;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
			tp->max_conns = rl.rlim_cur > 2 * FD_MARGIN ? (unsigned)(rl.rlim_cur - FD_MARGIN) :
			                (unsigned)(rl.rlim_cur / 2);
		else if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
			tp->max_conns = 1u << 20;
	}
	pthread_mutex_init(&tp->lock, NULL);
	pthread_mutex_init(&tp->io_lock, NULL);
	pthread_cond_init(&tp->io_cond, NULL);
	tp->last_sweep = pn_now_ns();
	struct sockaddr_storage ss;
	socklen_t sl = pn_addr_to_sockaddr(self, &ss);
	int one = 1;
	tp->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (tp->lfd < 0 || setsockopt(tp->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(tp->lfd, (struct sockaddr *)&ss, sl) != 0 || listen(tp->lfd, 128) != 0) {
		snprintf(err, errlen, "%s listen: %s", tls ? "tls" : "tcp", strerror(errno));
		goto fail;
	}
	sl = sizeof ss;
	getsockname(tp->lfd, (struct sockaddr *)&ss, &sl);
	pn_addr_from_sockaddr(self, self->scheme, (struct sockaddr *)&ss);
	tp->self = *self;
	tp->epfd = epoll_create1(EPOLL_CLOEXEC);
	tp->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	tp->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (tp->epfd < 0 || tp->wakefd < 0 || tp->timerfd < 0) {
		snprintf(err, errlen, "tcp: %s", strerror(errno));
		goto fail;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tp };
	epoll_ctl(tp->epfd, EPOLL_CTL_ADD, tp->lfd, &ev);
	ev.data.ptr = &tp->wakefd;
	epoll_ctl(tp->epfd, EPOLL_CTL_ADD, tp->wakefd, &ev);
	ev.data.ptr = &tp->timerfd;
	epoll_ctl(tp->epfd, EPOLL_CTL_ADD, tp->timerfd, &ev);
	if (pthread_create(&tp->threads[0], NULL, io_main, tp) != 0) {
		snprintf(err, errlen, "tcp: pthread_create failed");
		goto fail;
	}
	tp->n_threads = 1;
	*out = tp;
	return 0;
fail:
	if (tp->reserve_fd >= 0) close(tp->reserve_fd);
	if (tp->lfd >= 0) close(tp->lfd);
	if (tp->epfd >= 0) close(tp->epfd);
	if (tp->wakefd >= 0) close(tp->wakefd);
	if (tp->timerfd >= 0) close(tp->timerfd);
	pthread_mutex_destroy(&tp->lock);
	pthread_mutex_destroy(&tp->io_lock);
	pthread_cond_destroy(&tp->io_cond);
	pn_tls_ctx_free(tp->tls);
	free(tp);
	return -PN_ESYS;
}

static int tcp_open(struct pn *pn, struct pn_addr *self, struct pn_tp **out, char *err,
                    size_t errlen)
{
	return stream_open(pn, self, NULL, out, err, errlen);
}

static int tls_open(struct pn *pn, struct pn_addr *self, struct pn_tp **out, char *err,
                    size_t errlen)
{
	struct pn_tls_ctx *tls;
	int rc = pn_tls_ctx_new(pn_core_opts(pn), &tls, err, errlen);
	return rc != 0 ? rc : stream_open(pn, self, tls, out, err, errlen);
}

static void tcp_close(struct pn_tp *tp)
{
	atomic_store(&tp->stop, true);
	pn_signal_eventfd(tp->wakefd);
	pthread_mutex_lock(&tp->io_lock);
	pthread_cond_broadcast(&tp->io_cond);
	pthread_mutex_unlock(&tp->io_lock);
	/* threads that yielded finish their handlers first; none is made once stop is set */
	for (unsigned i = 0; i < tp->n_threads; i++)
		pthread_join(tp->threads[i], NULL);
	while (tp->handed) {
		struct conn *c = tp->handed;
		tp->handed = c->hand_next;
		conn_unref(c);
	}
	/* Drop every connection: peer states first (their references), then the I/O thread's. */
	for (uint32_t slot = 0;; slot++) {
		struct pn_peer_rec *peer = pn_core_peer_slot(tp->pn, slot);
		if (!peer)
			break;
		if (peer->addr.scheme != tp->self.scheme || !peer->tp_state)
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
		if (c->in_payload) {
			budget_release(tp, c);
			pn_core_rx_end(tp->pn, &c->rx, -PN_ESHUTDOWN);
		}
		conn_unref(c);
	}
	close(tp->lfd);
	close(tp->epfd);
	close(tp->wakefd);
	close(tp->timerfd);
	if (tp->reserve_fd >= 0)
		close(tp->reserve_fd);
	pn_tls_ctx_free(tp->tls);
	pthread_mutex_destroy(&tp->lock);
	pthread_mutex_destroy(&tp->io_lock);
	pthread_cond_destroy(&tp->io_cond);
	free(tp);
}

/* Poll c (and wake_fd) for as long as the spin gate allows before the caller sleeps on it
 * (pn_spin.c: a reply taken without sleeping spares the wake-up of a halted vCPU).  It only
 * waits: the caller reads as it would have, and finds the bytes there. */
static void poll_first(struct pn_tp *tp, struct conn *c, int wake_fd)
{
	if (c->tls && pn_tls_pending(c->tls))
		return;                    /* (before the budget: one taken is always given back) */
	struct pn_spin *gate = pn_core_spin(tp->pn);
	uint64_t now = pn_now_ns();
	uint64_t budget = pn_spin_budget(gate, PN_SPIN_REPLY, now);
	if (!budget)
		return;
	struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN }, { .fd = wake_fd, .events = POLLIN } };
	uint64_t until = now + budget;
	bool found;
	while (!(found = poll(p, wake_fd >= 0 ? 2 : 1, 0) != 0) && (now = pn_now_ns()) < until)
		__builtin_ia32_pause();
	pn_spin_done(gate, PN_SPIN_REPLY, found, now);
}

/* The calling thread waits for a reply from peer by reading its connection itself (see the
 * top of the file).  1: it read (a reply may have arrived, or the connection failed and the
 * I/O thread will report it), 0: nothing within timeout_ms, -1: not possible now (no
 * connection, or another thread is reading it).  wake_fd readable also ends the wait;
 * without one (-1) it blocks in recv, in RECV_SLICE_MS slices. */
static int wait_read(struct pn_tp *tp, struct pn_peer_rec *peer, int wake_fd, int timeout_ms)
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
			atomic_fetch_add(&tp->n_unwatched, 1);   /* (the timer is set as we let go) */
		}
		int r;
		poll_first(tp, c, wake_fd);
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
			/* (what TLS took off the socket already, poll would not report) */
			bool ready = c->tls && pn_tls_pending(c->tls);
			int n = ready ? 1 : poll(p, 2, timeout_ms);
			rc = n > 0;
			r = n > 0 && (ready || p[0].revents) ? on_readable(tp, c, false) : 0;
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
		/* the I/O thread looks at it STICKY_NS to 2 STICKY_NS from now: the timer is
		 * pushed forward once a STICKY_NS, not at every wait */
		if (c->unwatched &&
		    atomic_load(&tp->sticky_due) < c->released_ns + STICKY_NS)
			sticky_set(tp, c->released_ns + 2 * STICKY_NS);
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

/* A handler on the reader that waits for a reply (a nested request) reads that connection
 * as any waiter: what it delivers there cannot give the reader's place away (tcp_yield
 * would let go of the wrong connection), so the thread is no reader meanwhile. */
static int tcp_wait_read(struct pn_tp *tp, struct pn_peer_rec *peer, int wake_fd, int timeout_ms)
{
	struct pn_tp *reader = tls_reader;
	tls_reader = NULL;
	int rc = wait_read(tp, peer, wake_fd, timeout_ms);
	tls_reader = reader;
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

/* See pn_link_rate (pn.h). */
static int tcp_link_rate(struct pn_tp *tp, struct pn_peer_rec *peer, uint64_t *bytes_per_s,
                         bool *limited)
{
	(void)tp;
	struct tcp_peer *s = peer->tp_state;
	if (!s)
		return -PN_EPEERDOWN;
	pthread_mutex_lock(&s->lock);
	struct conn *c = s->conn;
	int rc = -PN_EPEERDOWN;
	if (c && !c->dead) {
		bool app;
		uint64_t rate = 0;
		struct pn_sock_busy busy;
		rc = pn_sock_delivery_rate(c->fd, &rate, &app, &busy);
		if (rc == 0)
			pn_tx_rate_look(&c->tx_rate, pn_coarse_ns(), rate, app, &busy, bytes_per_s, limited);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* See pn_link_rx_rate (pn.h). */
static int tcp_link_rx_rate(struct pn_tp *tp, struct pn_peer_rec *peer, uint64_t *bytes_per_s)
{
	(void)tp;
	struct tcp_peer *s = peer->tp_state;
	if (!s)
		return -PN_EPEERDOWN;
	pthread_mutex_lock(&s->lock);
	struct conn *c = s->conn;
	int rc = -PN_EPEERDOWN;
	if (c && !c->dead) {
		uint64_t now = pn_coarse_ns();
		uint64_t at = atomic_load_explicit(&c->rx_rate_at_ns, memory_order_relaxed);
		uint64_t rate = at && now - at < RX_KEEP_NS ?
		                atomic_load_explicit(&c->rx_rate_bps, memory_order_relaxed) : 0;
		*bytes_per_s = rate ? pn_carried_floor(&c->rx_carried, now, rate) : 0;
		rc = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

const struct pn_transport pn_tcp_transport = {
	.scheme = "tcp",
	.scheme_id = PN_S_TCP,
	.open = tcp_open,
	.close = tcp_close,
	.send = tcp_send,
	.wait_read = tcp_wait_read,
	.kick = tcp_kick,
	.yield = tcp_yield,
	.cork = tcp_cork,
	.link_rate = tcp_link_rate,
	.link_rx_rate = tcp_link_rx_rate,
};

/* The same transport inside TLS (see the top): its own scheme, so an endpoint may listen
 * on tcp: and tls: at once and a peer's name says how it is reached. */
const struct pn_transport pn_tls_transport = {
	.scheme = "tls",
	.scheme_id = PN_S_TLS,
	.open = tls_open,
	.close = tcp_close,
	.send = tcp_send,
	.wait_read = tcp_wait_read,
	.kick = tcp_kick,
	.yield = tcp_yield,
	.cork = tcp_cork,
	.link_rate = tcp_link_rate,
	.link_rx_rate = tcp_link_rx_rate,
};
