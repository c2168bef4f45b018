/* pn_rdma.c: the rdma: transport of Paradis-Net over librdmacm (connections) and libibverbs
 * (RC queue pairs), and the one-sided pn_mem_* API.  docs/rdma.md has the reasoning.
 *
 * The exchange on one connection, step by step:
 *   1. A resolves B's address and route (rdma_resolve_addr/route), creates the queue pair with
 *      a send and a receive completion queue on the endpoint's one completion channel, posts
 *      DEPTH receive buffers of SLOT_LEN bytes, and calls rdma_connect with HELLO as private
 *      data: the listening address A claims, the proof A gives next (flags PROVE, SECRET,
 *      ADMIN), DEPTH, and the address and rkey of A's credit word.  B does the same on
 *      CONNECT_REQUEST and answers with its own HELLO in rdma_accept.  An A with a key then
 *      proves it (Identity, below) before anything else goes on the connection.
 *   2. A message goes as one or more SENDs from a registered send slot into a receive buffer
 *      the peer posted: an 8-byte sub-header (below), in the first fragment the 40-byte frame
 *      header of wire.c and perhaps a reply handle, then payload bytes.  One message's
 *      fragments are never interleaved with another's on a connection (tx_lock), so the
 *      receiver reassembles into the buffer pn_core_rx_begin gave it.
 *   3. Credits: every SEND (and every WRITE WITH IMMEDIATE, which consumes a receive too) needs
 *      a receive the peer posted.  The receiver counts the receives it posted and, every
 *      DEPTH/4 of them, RDMA-WRITEs that count into the sender's credit word; the sender may
 *      send while it has sent fewer.  The word is written by the adapter, without a message
 *      and without the receiver's I/O thread being free, so two busy peers cannot deadlock
 *      waiting for each other's credit messages.  A sender short of credit naps and looks again.
 *   4. A request of one of our Cooperations whose descriptor has a buffer larger than the
 *      inline limit carries a handle: (address, rkey, capacity, slot, type) of that buffer,
 *      registered through a cache (a buffer registered once is not registered again).  The
 *      replier keeps the handle with the requester's peer and Cooperation token; its reply is
 *      an RDMA WRITE WITH IMMEDIATE straight into that buffer, immediate = slot, which the
 *      requester maps back to the descriptor and completes (pn_core_rx_begin_at).  A reply
 *      that does not fit, or is of another type, goes as SENDs naming the slot, so it fills
 *      the same descriptor (truncated) and the handle is never used twice.
 *   5. pn_forward passes the handle on with the request, so the last peer writes into the
 *      origin's memory.  When the Cooperation ends, a handle nobody used is revoked by
 *      deregistering its buffer (a late reply then fails with a remote access error at the
 *      replier instead of writing into memory the caller has got back).
 *   6. A completion error, DISCONNECTED or a malformed message closes the connection: its
 *      queue pair goes to the error state (flushing what was posted), the Cooperations
 *      waiting on the peer fail with PN_EPEERDOWN, the error and its ibv_wc_status_str go to
 *      the log; the next send connects again.
 *
 * Sub-header of every SEND, little-endian:
 *
 *     0      1       2          4          8
 *     +------+-------+----------+----------+
 *     | kind | flags | reserved | slot     |   kind 1 FIRST (frame header follows), 2 MORE;
 *     +------+-------+----------+----------+   flags 1 HANDLE (FIRST: a handle follows the
 *                                              header), 2 SLOT (a reply for slot `slot`)
 *
 * Threads: one I/O thread handles connection events, completions and receives; senders post
 * from their own thread.  Connections are freed only by the I/O thread (or by close once it
 * has stopped), so a completion never finds its connection gone.
 *
 * Identity (docs/net.md, "Identity and trust"; docs/rdma.md, "Identity"), as in pn_tcp.c:
 * B believes the address in A's HELLO only once A has proved the cluster key; until then,
 * and for good when A proves nothing or a secret, the connection is an anonymous peer named
 * after its real remote address (rdma_get_peer_addr): replies to it go back on it, it is
 * never connected to, and its FORWARDED flags are cleared (c->trusted).  The proof does not
 * fit the private data (a REQ's 56 bytes hold the HELLO, not a nonce besides), so it goes in
 * SENDs, each a whole frame (sub-header, header, payload) once the connection is up: A's
 * HELLO frame with its nonce (prove, on the connecting thread, before the connection is
 * anyone else's); B's CHALLENGE, its nonce and its HMAC over both nonces and A's claimed
 * address, or nothing when B has no such key (on_hello); A's AUTH, its own HMAC (on_auth).
 * The labels and MACs are pn_tcp.c's.  Until the proof ends B's side of the connection has
 * no peer (c->proving): a message on it closes it.  One that takes longer than
 * preauth_timeout_ms is closed (sweep_proving), and at most PROVING_MAX prove at once.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "pn_int.h"

#define DEPTH         32                /* receive buffers per connection, and send slots */
#define SLOT_LEN      (16u * 1024)      /* bytes per receive buffer / send slot */
#define SQ_DEPTH      (2 * DEPTH + 8)   /* send queue: slot sends, waited ops, credit writes */
#define CREDIT_BATCH  (DEPTH / 4)       /* receives re-posted before the count is written */
#define SUB_LEN       8
#define HANDLE_LEN    24
#define PRIV_LEN      40                /* HELLO in the connect/accept private data (<= 56) */
#define PRIV_SESS_LEN (PRIV_LEN + PN_SID_LEN) /* ... with a session's id (flag SESSION) */
#define PRIV_MAGIC    0x5250u           /* "PR" */
#define PRIV_VERSION  2                 /* 2: flags, the proof to come (Identity, above) */
#define PROVE_FLAGS   (PN_F_PROVE | PN_F_SECRET | PN_F_ADMIN)
#define PROVING_MAX   64                /* inbound connections proving at once; more: rejected */
#define CONNS_DEFAULT 256               /* inbound connections when pn_opts.max_conns is 0 */
#define SWEEP_MS      100               /* ... looked at this often (preauth_timeout_ms) */
#define IDLE_SWEEP_MS 1000              /* inbound connections' silence looked at this often */
#define BUDGET_FREE   (64u << 10)       /* messages this small take no rx_budget */
#define RX_WAIT       1                 /* on_message: the message waits for rx_budget */
#define RX_REFUSED    2                 /* on_message: refused before admission, answered */
#define REFUSE_LINGER_MS 1000           /* a refused connection's answer has this long */
#define SLOT_BITS     12                /* reply slots: 4096 advertised descriptors at once */
#define N_SLOTS       (1u << SLOT_BITS)
#define TARGETS_MAX   1024              /* handles kept per requesting peer */
#define CACHE_MAX     64                /* idle registrations kept */
#define INLINE_MAX    4096              /* descriptors up to this get replies as SENDs */
#define MEM_MAGIC     0x4d50u           /* "PM": pn_mem handles */

enum { SUB_FIRST = 1, SUB_MORE = 2 };
enum { F_HANDLE = 1, F_SLOT = 2 };
/* wr_id: the low 3 bits say what completed */
enum { TAG_SLOT = 0, TAG_RECV = 1, TAG_WAIT = 2, TAG_CREDIT = 3 };

_Static_assert(PRIV_SESS_LEN <= 56, "rdma_cm private data of a REQ on IB/RoCE");
_Static_assert(SUB_LEN + PN_HDR_LEN + HANDLE_LEN < SLOT_LEN, "a first fragment carries payload");
_Static_assert(HANDLE_LEN == PN_MEM_HANDLE_LEN, "one handle size");
_Static_assert(DEPTH <= 0xffff && CREDIT_BATCH >= 1, "depth fits the HELLO");
_Static_assert(PROVE_FLAGS <= 0xff, "the proof flags fit the HELLO's flags byte");
_Static_assert(SUB_LEN + PN_HDR_LEN + PN_NONCE_LEN + PN_MAC_LEN <= SLOT_LEN,
               "a CHALLENGE is one SEND");

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }
static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

/* A reply handle: where the requester wants the reply of one descriptor written. */
struct handle {
	uint64_t addr;
	uint32_t rkey, cap, slot;
	pn_type type;
};

static void handle_put(uint8_t *p, const struct handle *h)
{
	put64(p, h->addr);
	put32(p + 8, h->rkey);
	put32(p + 12, h->cap);
	put32(p + 16, h->slot);
	put16(p + 20, h->type);
	put16(p + 22, 0);
}

static void handle_get(const uint8_t *p, struct handle *h)
{
	h->addr = get64(p);
	h->rkey = get32(p + 8);
	h->cap = get32(p + 12);
	h->slot = get32(p + 16);
	h->type = get16(p + 20);
}

/* The credit word: the peer's adapter writes the number of receives the peer has posted for
 * us as count | ~count << 32, so a torn read (the word is written by DMA) shows as a mismatch
 * and is ignored.  credit_out is the source of our own writes. */
struct ctrl {
	uint64_t credit_in;
	uint64_t credit_out;
};

/* An inbound connection's proof, between our CHALLENGE and its AUTH (as pn_tcp.c's). */
struct proof {
	enum pn_key which;
	uint8_t nc[PN_NONCE_LEN], na[PN_NONCE_LEN];
};

/* A work request a thread waits for (large writes, one-sided reads and writes). */
struct waiter {
	bool done;
	int status;                    /* 0 or -PN_E* */
};

struct held_wc {                   /* a receive completion put off (rx_budget) */
	uint16_t slot;
	bool write_imm;                /* IBV_WC_RECV_RDMA_WITH_IMM, else a SEND */
	uint32_t len, imm;
};

struct conn {
	struct pn_tp *tp;
	struct rdma_cm_id *id;
	struct pn_peer_rec *peer;      /* connector: the address we connected to; acceptor: set
	                                * once its proof ends (Identity, above), NULL before */
	_Atomic int refs;
	bool active;                   /* we connected */
	atomic_bool trusted;           /* both proved the cluster key: FORWARDED origins believed */
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *rmr, *smr, *cmr;
	uint8_t *rbuf, *sbuf;
	struct ctrl *ctrl;
	uint64_t peer_ctrl;            /* the peer's credit word */
	uint32_t peer_rkey;

	pthread_mutex_t lock;          /* the fields below, up to "I/O thread only" */
	pthread_cond_t cond;           /* state changes, freed slots, completions */
	pthread_mutex_t tx_lock;       /* one message's fragments at a time */
	bool up, dead, listed;
	int err;                       /* why dead */
	int cm_step;                   /* connecting: last address/route event, + 1 */
	int cm_err;                    /* connecting: the attempt failed */
	uint64_t tx_sent;              /* sends and write-with-immediates posted */
	uint32_t credit_seen;          /* last consistent credit word */
	unsigned sq_used;
	uint16_t free_slot[DEPTH];
	unsigned n_free;
	bool credit_busy;              /* a credit write is posted */
	atomic_bool chal_wait;         /* connector: waiting for the acceptor's CHALLENGE, ... */
	bool chal_got;
	uint32_t chal_len;             /* ... which came, this long (0: it has no key) */
	uint8_t chal[PN_NONCE_LEN + PN_MAC_LEN];

	/* I/O thread only */
	bool failed;                   /* conn_fail ran */
	bool proving;                  /* acceptor: its HELLO promised a proof that has not ended */
	bool refused;                  /* acceptor: a message over preauth_max was answered by
	                                * pn_opts.refuse: what it sends is dropped, and it is closed
	                                * once the answer is out (or after REFUSE_LINGER_MS) */
	uint64_t refused_ns;
	bool pending;                  /* acceptor: not admitted yet (a proof, or pn_opts.admit
	                                * taking one of its messages); closed after
	                                * preauth_timeout_ms, its messages at most preauth_max */
	uint8_t hello_flags;           /* acceptor: its HELLO's PN_F_PROVE | _SECRET | _ADMIN */
	bool has_sess;                 /* acceptor: its HELLO named a session (sess_block), */
	uint8_t sess_block[PN_SESS_BLOCK]; /* ... bound to its peer once it has one */
	struct pn_addr claim;          /* acceptor: the address its HELLO claims */
	struct pn_addr remote;         /* acceptor: its real remote address (anonymous name) */
	char rname[PN_NAME_LEN];       /* ... as a name, for the log before it has a peer */
	uint64_t opened_ns;            /* acceptor: when its request came (preauth_timeout_ms) */
	struct proof *proof;           /* acceptor: between our CHALLENGE and its AUTH */
	uint64_t rx_posted, credit_written;
	uint64_t held;                 /* rx_budget bytes the message being received holds */
	unsigned n_held_wc;            /* receives held while a message waits for rx_budget: */
	struct held_wc held_wc[DEPTH]; /* ... the first is its first fragment; their buffers are
	                                * not posted again, so the peer runs out of credit */
	struct conn *budget_next;      /* tp->budget_head's list (holds a reference) */
	uint64_t idle_mark;            /* acceptor: rx_posted when the idle sweep last looked ... */
	uint64_t idle_since_ns;        /* ... and when it last saw it move (idle_timeout_ms) */
	bool in_payload;
	int rx_status;
	struct pn_rx rx;
	uint8_t *dst;
	size_t need, got;
	struct conn *next;             /* tp->conns or tp->zombies */
};

struct target {                    /* a reply handle received with a request */
	pn_coop coop;
	struct handle h;
};

struct rdma_peer {                 /* peer->tp_state */
	pthread_mutex_t lock;          /* never held while waiting for the I/O thread */
	pthread_cond_t cond;           /* connecting ended */
	struct conn *conn;             /* where sends go; holds a reference */
	bool connecting;               /* a sender is connecting: others wait for it */
	bool io_connecting;            /* ... and that sender is the I/O thread */
	struct target *t;              /* oldest first */
	unsigned n_t, cap_t;
};

struct mrc {                       /* a cached registration of descriptor memory */
	struct ibv_mr *mr;
	uintptr_t lo, hi;
	unsigned refs;                 /* advertised slots using it */
	bool doomed;                   /* revoke once unused */
	uint64_t last;
	struct mrc *next;
};

struct rslot {                     /* an advertised descriptor of one of our Cooperations */
	uint32_t cookie;               /* 0: free; else gen << SLOT_BITS | index, the immediate */
	pn_coop coop;
	unsigned idx;
	pn_type type;
	void *buf;
	struct mrc *mr;
	bool used;                     /* the peer replied through it */
};

struct pn_mem {
	struct ibv_mr *mr;
	struct pn_mem *next;
};

struct pn_tp {
	struct pn *pn;
	struct pn_addr self;
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen;
	struct ibv_context *ctx;       /* the device of our address; every connection uses it */
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp;
	uint8_t rd_atom;               /* RDMA READs in flight per QP, both directions */
	size_t inline_max;
	int wakefd;
	pthread_t thread;
	atomic_bool stop;
	atomic_uint n_waiting;         /* threads in post_wait: closing waits for their flush */
	/* fault injection for tests (env PN_RDMA_CUT_REPLIES=N): every Nth message with a
	 * token we send (a server's replies) is not sent; its connection is closed instead, as
	 * a device or link error would, so a session's reconnect and repeat can be tested */
	unsigned cut_every;
	atomic_uint cut_n;
	/* ... and (env PN_RDMA_FAIL_AFTER=N): after N requests (messages with a token) it acts
	 * as if its device failed: every connection closes and no send or connection succeeds
	 * again (-PN_ENODEV), so a session's move to its fallback can be tested */
	unsigned fail_after;
	atomic_uint fail_n;
	atomic_bool dev_failed;

	pthread_mutex_t lock;          /* conns, zombies, peer state creation, exports */
	struct conn *conns, *zombies;
	struct pn_mem *exports;

	pthread_mutex_t slot_lock;     /* slots */
	struct rslot *slots;
	uint32_t *free_slots, n_free_slots, gen;

	pthread_mutex_t cache_lock;
	struct mrc *cache;
	unsigned n_cache;
	uint64_t tick;

	unsigned n_proving;            /* I/O thread: inbound connections proving (PROVING_MAX) */
	unsigned n_pending;            /* I/O thread: inbound connections not admitted yet */
	uint64_t idle_swept_ns;        /* I/O thread: when sweep_idle last ran */
	uint64_t rx_held;              /* I/O thread: rx_budget bytes held by messages being
	                                * received, and the connections whose next message waits
	                                * for it, oldest first: */
	struct conn *budget_head, *budget_tail;
};

static _Thread_local struct pn_tp *io_self;   /* set on the I/O thread */

static const char *peer_name(const struct conn *c)
{
	return c->peer ? c->peer->name : c->rname[0] ? c->rname : "rdma peer";
}

/* ---- connections: references and teardown ---- */

static void conn_get(struct conn *c) { atomic_fetch_add(&c->refs, 1); }

/* The last reference hands the connection to the I/O thread, which frees it between events. */
static void conn_put(struct conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	struct pn_tp *tp = c->tp;
	pthread_mutex_lock(&tp->lock);
	c->next = tp->zombies;
	tp->zombies = c;
	pthread_mutex_unlock(&tp->lock);
	pn_signal_eventfd(tp->wakefd);
}

/* Free everything of c, in reverse order of conn_setup.  I/O thread, or close after it. */
static void conn_destroy(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->scq)
		ibv_destroy_cq(c->scq);
	if (c->rcq)
		ibv_destroy_cq(c->rcq);
	if (c->cmr)
		ibv_dereg_mr(c->cmr);
	if (c->smr)
		ibv_dereg_mr(c->smr);
	if (c->rmr)
		ibv_dereg_mr(c->rmr);
	free(c->proof);
	free(c->ctrl);
	free(c->sbuf);
	free(c->rbuf);
	if (c->id)
		rdma_destroy_id(c->id);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->tx_lock);
	free(c);
}

static void reap_zombies(struct pn_tp *tp)
{
	pthread_mutex_lock(&tp->lock);
	struct conn *z = tp->zombies;
	tp->zombies = NULL;
	pthread_mutex_unlock(&tp->lock);
	for (struct conn *next; z; z = next) {
		next = z->next;
		conn_destroy(z);
	}
}

static void conn_unlist(struct conn *c)
{
	struct pn_tp *tp = c->tp;
	bool was = false;
	pthread_mutex_lock(&tp->lock);
	for (struct conn **p = &tp->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			was = true;
			break;
		}
	pthread_mutex_unlock(&tp->lock);
	if (was)
		conn_put(c);               /* the list's reference */
}

static struct conn *conn_alloc(struct pn_tp *tp, struct pn_peer_rec *peer)
{
	struct conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->tp = tp;
	c->peer = peer;
	atomic_init(&c->refs, 1);          /* the list's */
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->tx_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	for (unsigned i = 0; i < DEPTH; i++)
		c->free_slot[i] = (uint16_t)i;
	c->n_free = DEPTH;
	pthread_mutex_lock(&tp->lock);
	c->next = tp->conns;
	tp->conns = c;
	pthread_mutex_unlock(&tp->lock);
	return c;
}

/* Mark c dead and move its queue pair to the error state, so everything posted completes
 * (flushed) and the I/O thread, on DISCONNECTED, finishes it with conn_fail.  Any thread. */
static void conn_kill(struct conn *c, int err)
{
	pthread_mutex_lock(&c->lock);
	bool first = !c->dead;
	if (first) {
		c->dead = true;
		c->err = err;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	if (first && c->id)
		rdma_disconnect(c->id);
}

/* An inbound connection's proof is over (proved, failed or closed).  I/O thread. */
static void proving_end(struct conn *c)
{
	if (c->proving) {
		c->proving = false;
		c->tp->n_proving--;
	}
}

/* rx_budget over rdma, as over tcp: the bytes of messages being received on all connections
 * at once.  A message that does not fit waits with its first fragment unprocessed and its
 * receive buffer not posted again, and so do the connection's later receives: its peer runs
 * out of credit and stops sending (back-pressure, never a dropped message).  Messages of at
 * most BUDGET_FREE bytes are not counted (each connection receives one message at a time);
 * one larger than the whole budget goes when no other message holds any.  I/O thread. */
static bool budget_take(struct conn *c, uint64_t len)
{
	struct pn_tp *tp = c->tp;
	uint64_t budget = pn_core_opts(tp->pn)->rx_budget;
	if (c->held || !budget || len <= BUDGET_FREE)
		return true;
	if (tp->rx_held && tp->rx_held + len > budget)
		return false;
	tp->rx_held += len;
	c->held = len;
	return true;
}

static void budget_release(struct conn *c)
{
	c->tp->rx_held -= c->held;
	c->held = 0;
}

/* An inbound connection is admitted, or closed: its pre-admission bounds no longer apply.
 * I/O thread. */
static void pending_end(struct conn *c)
{
	if (c->pending) {
		c->pending = false;
		c->tp->n_pending--;
	}
}

/* The connection is over: wake its senders, end a half-received message, stop sending through
 * it, fail the peer's Cooperations; an anonymous peer, known by this connection alone, is
 * retired (its handles forgotten: its record serves another connection later).  I/O thread
 * only; runs once. */
static void conn_fail(struct conn *c, int err)
{
	if (c->failed)
		return;
	c->failed = true;
	conn_kill(c, err);
	struct pn_tp *tp = c->tp;
	proving_end(c);
	pending_end(c);
	if (c->in_payload) {
		c->in_payload = false;
		pn_core_rx_end(tp->pn, &c->rx, err);
	}
	budget_release(c);
	c->n_held_wc = 0;                  /* (left on the budget list: budget_resume drops it) */
	if (c->peer) {
		struct rdma_peer *rp = c->peer->tp_state;
		if (rp) {
			pthread_mutex_lock(&rp->lock);
			bool mine = rp->conn == c;
			if (mine)
				rp->conn = NULL;
			if (c->peer->anon)
				rp->n_t = 0;
			pthread_mutex_unlock(&rp->lock);
			if (mine)
				conn_put(c);
		}
		pn_core_peer_down(tp->pn, c->peer, err);
		if (c->peer->anon)
			pn_core_peer_retire(tp->pn, c->peer);
	}
	conn_unlist(c);
}

/* ---- per-peer state: the send path and the reply handles it gave us ---- */

static struct rdma_peer *peer_state(struct pn_tp *tp, struct pn_peer_rec *peer)
{
	pthread_mutex_lock(&tp->lock);
	if (!peer->tp_state) {
		struct rdma_peer *s = calloc(1, sizeof *s);
		if (s) {
			pthread_mutex_init(&s->lock, NULL);
			pthread_cond_init(&s->cond, NULL);
			peer->tp_state = s;
		}
	}
	pthread_mutex_unlock(&tp->lock);
	return peer->tp_state;
}

static void target_keep(struct pn_tp *tp, struct pn_peer_rec *origin, pn_coop coop,
                        const struct handle *h)
{
	struct rdma_peer *rp = peer_state(tp, origin);
	if (!rp)
		return;
	pthread_mutex_lock(&rp->lock);
	if (rp->n_t == rp->cap_t && rp->cap_t < TARGETS_MAX) {
		unsigned cap = rp->cap_t ? 2 * rp->cap_t : 8;
		struct target *t = realloc(rp->t, cap * sizeof *t);
		if (t) {
			rp->t = t;
			rp->cap_t = cap;
		}
	}
	if (rp->n_t == rp->cap_t && rp->n_t > 0) {
		/* a requester whose requests are never answered: forget the oldest handle */
		memmove(rp->t, rp->t + 1, (rp->n_t - 1) * sizeof *rp->t);
		rp->n_t--;
	}
	if (rp->n_t < rp->cap_t)
		rp->t[rp->n_t++] = (struct target){ coop, *h };
	pthread_mutex_unlock(&rp->lock);
}

/* Take the oldest handle origin gave us for Cooperation coop; true if there was one. */
static bool target_take(struct pn_tp *tp, struct pn_peer_rec *origin, pn_coop coop,
                        struct handle *out)
{
	struct rdma_peer *rp = origin->tp_state ? origin->tp_state : NULL;
	bool found = false;
	if (!rp)
		return false;
	pthread_mutex_lock(&rp->lock);
	for (unsigned i = 0; i < rp->n_t; i++)
		if (rp->t[i].coop == coop) {
			*out = rp->t[i].h;
			memmove(rp->t + i, rp->t + i + 1, (rp->n_t - i - 1) * sizeof *rp->t);
			rp->n_t--;
			found = true;
			break;
		}
	pthread_mutex_unlock(&rp->lock);
	return found;
}

/* ---- registration cache (descriptor memory) ---- */

static struct mrc *cache_get(struct pn_tp *tp, void *buf, size_t len)
{
	uintptr_t lo = (uintptr_t)buf, hi = lo + len;
	pthread_mutex_lock(&tp->cache_lock);
	for (struct mrc *e = tp->cache; e; e = e->next)
		if (!e->doomed && e->lo <= lo && hi <= e->hi) {
			e->refs++;
			e->last = ++tp->tick;
			pthread_mutex_unlock(&tp->cache_lock);
			return e;
		}
	pthread_mutex_unlock(&tp->cache_lock);
	struct mrc *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	e->mr = ibv_reg_mr(tp->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!e->mr) {
		pn_core_log(tp->pn, "rdma: ibv_reg_mr of a %zu-byte receive buffer: %s (the reply "
		            "goes as SENDs)", len, strerror(errno));
		free(e);
		return NULL;
	}
	e->lo = lo;
	e->hi = hi;
	e->refs = 1;
	/* Keep at most CACHE_MAX registrations: drop the least recently used idle one. */
	struct ibv_mr *drop = NULL;
	pthread_mutex_lock(&tp->cache_lock);
	e->last = ++tp->tick;
	e->next = tp->cache;
	tp->cache = e;
	if (++tp->n_cache > CACHE_MAX) {
		struct mrc **victim = NULL;
		for (struct mrc **p = &tp->cache; *p; p = &(*p)->next)
			if ((*p)->refs == 0 && (!victim || (*p)->last < (*victim)->last))
				victim = p;
		if (victim) {
			struct mrc *v = *victim;
			*victim = v->next;
			tp->n_cache--;
			drop = v->mr;
			free(v);
		}
	}
	pthread_mutex_unlock(&tp->cache_lock);
	if (drop)
		ibv_dereg_mr(drop);
	return e;
}

/* A slot stops using e; revoke: the handle may still be in a peer's hands, so the
 * registration goes (its rkey dies) as soon as no other slot uses it. */
static void cache_put(struct pn_tp *tp, struct mrc *e, bool revoke)
{
	struct ibv_mr *drop = NULL;
	pthread_mutex_lock(&tp->cache_lock);
	e->refs--;
	if (revoke)
		e->doomed = true;
	if (e->doomed && e->refs == 0) {
		for (struct mrc **p = &tp->cache; *p; p = &(*p)->next)
			if (*p == e) {
				*p = e->next;
				break;
			}
		tp->n_cache--;
		drop = e->mr;
		free(e);
	}
	pthread_mutex_unlock(&tp->cache_lock);
	if (drop)
		ibv_dereg_mr(drop);
}

/* ---- reply slots (requester side) ---- */

/* Advertise a descriptor of our Cooperation coop for a request to peer: fill *h.  False when
 * none qualifies (the reply then comes as SENDs, like over tcp). */
static bool slot_advertise(struct pn_tp *tp, struct pn_peer_rec *peer, pn_coop coop,
                           struct handle *h)
{
	pthread_mutex_lock(&tp->slot_lock);
	if (tp->n_free_slots == 0) {
		pthread_mutex_unlock(&tp->slot_lock);
		return false;
	}
	uint32_t i = tp->free_slots[--tp->n_free_slots];
	if (++tp->gen >= 1u << (32 - SLOT_BITS))
		tp->gen = 1;
	uint32_t cookie = tp->gen << SLOT_BITS | i;
	struct rslot *s = &tp->slots[i];
	*s = (struct rslot){ .cookie = cookie, .coop = coop };
	pthread_mutex_unlock(&tp->slot_lock);

	struct pn_target t;
	if (pn_core_coop_target(tp->pn, coop, peer, tp->inline_max + 1, cookie, &t) != 0) {
		pthread_mutex_lock(&tp->slot_lock);
		s->cookie = 0;
		tp->free_slots[tp->n_free_slots++] = i;
		pthread_mutex_unlock(&tp->slot_lock);
		return false;
	}
	/* From here the core holds the cookie and gives it back through rdma_release. */
	size_t cap = t.cap > UINT32_MAX ? UINT32_MAX : t.cap;
	struct mrc *m = cache_get(tp, t.buf, cap);
	pthread_mutex_lock(&tp->slot_lock);
	s->idx = t.idx;
	s->type = t.type;
	s->buf = t.buf;
	s->mr = m;
	pthread_mutex_unlock(&tp->slot_lock);
	if (!m)
		return false;
	*h = (struct handle){ (uintptr_t)t.buf, m->mr->rkey, (uint32_t)cap, cookie, t.type };
	return true;
}

/* The slot a reply names, if it is still ours and for coop (0: any); marks it used. */
static bool slot_claim(struct pn_tp *tp, uint32_t cookie, pn_coop coop, struct rslot *out)
{
	bool ok = false;
	pthread_mutex_lock(&tp->slot_lock);
	struct rslot *s = &tp->slots[cookie & (N_SLOTS - 1)];
	if (cookie && s->cookie == cookie && (!coop || s->coop == coop) && !s->used) {
		s->used = true;
		*out = *s;
		ok = true;
	}
	pthread_mutex_unlock(&tp->slot_lock);
	return ok;
}

static void rdma_release(struct pn_tp *tp, pn_coop coop, uint32_t cookie)
{
	pthread_mutex_lock(&tp->slot_lock);
	struct rslot *s = &tp->slots[cookie & (N_SLOTS - 1)];
	struct mrc *m = NULL;
	bool used = false;
	if (s->cookie == cookie) {
		m = s->mr;
		used = s->used;
		s->cookie = 0;
		tp->free_slots[tp->n_free_slots++] = cookie & (N_SLOTS - 1);
	}
	pthread_mutex_unlock(&tp->slot_lock);
	if (m)
		cache_put(tp, m, !used);
}

/* ---- posting ---- */

static uint8_t *slot_buf(struct conn *c, unsigned s) { return c->sbuf + (size_t)s * SLOT_LEN; }

/* Receives the peer posted for us that we have not used (lock held). */
static int32_t credits(struct conn *c)
{
	uint64_t v = __atomic_load_n(&c->ctrl->credit_in, __ATOMIC_ACQUIRE);
	if ((uint32_t)(v >> 32) == (uint32_t)~v)
		c->credit_seen = (uint32_t)v;
	return (int32_t)(c->credit_seen - (uint32_t)c->tx_sent);
}

static void poll_send_cq(struct conn *c);

/* Wait until c has room on the send queue, plus a credit and/or a free send slot as asked;
 * take them.  Bounded by send_timeout_ms, after which the connection is given up (as tcp's
 * SO_SNDTIMEO does).  Credits arrive by DMA without an event, hence the naps. */
static int acquire(struct conn *c, bool credit, bool slot, int *slot_out)
{
	struct pn_tp *tp = c->tp;
	uint64_t deadline = pn_now_ns() + (uint64_t)pn_core_opts(tp->pn)->send_timeout_ms * 1000000u;
	unsigned nap_us = 20;
	int rc;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		if (c->dead) {
			rc = c->err ? c->err : -PN_EPEERDOWN;
			break;
		}
		if (c->sq_used < SQ_DEPTH && (!slot || c->n_free > 0) && (!credit || credits(c) > 0)) {
			c->sq_used++;
			if (credit)
				c->tx_sent++;
			if (slot)
				*slot_out = c->free_slot[--c->n_free];
			rc = 0;
			break;
		}
		uint64_t now = pn_now_ns();
		if (now >= deadline) {
			rc = -PN_ETIMEDOUT;
			break;
		}
		uint64_t until = now + nap_us * 1000u < deadline ? now + nap_us * 1000u : deadline;
		if (io_self == tp) {
			/* an inline handler sending on the I/O thread: nobody else frees our slots */
			pthread_mutex_unlock(&c->lock);
			poll_send_cq(c);
			struct timespec ts = { 0, (long)(until - now) };
			nanosleep(&ts, NULL);
			pthread_mutex_lock(&c->lock);
		} else {
			struct timespec ts = { (time_t)(until / 1000000000u), (long)(until % 1000000000u) };
			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		}
		if (nap_us < 1000)
			nap_us *= 2;
	}
	/* what was missing, for the log: a credit, a send slot or room on the send queue */
	int32_t have = credits(c);
	unsigned sq = c->sq_used, free_slots = c->n_free;
	pthread_mutex_unlock(&c->lock);
	if (rc == -PN_ETIMEDOUT) {
		pn_core_log(tp->pn, "rdma: %s: no send credit for %u ms (credits %d, send slots free "
		            "%u, send queue %u of %u%s): closing the connection", peer_name(c),
		            pn_core_opts(tp->pn)->send_timeout_ms, (int)have, free_slots, sq,
		            (unsigned)SQ_DEPTH, io_self == tp ? ", on the I/O thread" : "");
		conn_kill(c, rc);
	}
	return rc;
}

/* Undo acquire after a failed post. */
static void unacquire(struct conn *c, bool credit, int slot)
{
	pthread_mutex_lock(&c->lock);
	c->sq_used--;
	if (credit)
		c->tx_sent--;
	if (slot >= 0)
		c->free_slot[c->n_free++] = (uint16_t)slot;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static int post_send(struct conn *c, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int e = ibv_post_send(c->id->qp, wr, &bad);
	if (e) {
		pn_core_log(c->tp->pn, "rdma: %s: ibv_post_send: %s", peer_name(c), strerror(e));
		conn_kill(c, -PN_EPEERDOWN);
		return -PN_EPEERDOWN;
	}
	return 0;
}

/* Post one work request of len bytes from send slot s (TAG_SLOT: the slot is freed when it
 * completes).  opcode SEND, or RDMA_WRITE_WITH_IMM to (raddr, rkey) with imm. */
static int post_slot(struct conn *c, int s, enum ibv_wr_opcode op, size_t len, uint64_t raddr,
                     uint32_t rkey, uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)slot_buf(c, (unsigned)s), (uint32_t)len, c->smr->lkey };
	struct ibv_send_wr wr = { .wr_id = (uint64_t)s << 3 | TAG_SLOT, .sg_list = &sge,
	                          .num_sge = 1, .opcode = op, .send_flags = IBV_SEND_SIGNALED };
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		wr.imm_data = htonl(imm);
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	int rc = post_send(c, &wr);
	if (rc)
		unacquire(c, true, s);
	return rc;
}

/* Post a request a thread waits for: wr is complete but for wr_id; then wait for its
 * completion, which always comes (success, error, or flush once the queue pair is in the
 * error state).  Returns the completion's status. */
static int post_wait(struct conn *c, struct ibv_send_wr *wr, bool credit, int slot)
{
	struct waiter w = { false, 0 };
	wr->wr_id = (uintptr_t)&w | TAG_WAIT;
	wr->send_flags = IBV_SEND_SIGNALED;
	atomic_fetch_add(&c->tp->n_waiting, 1);
	int rc = post_send(c, wr);
	if (rc) {
		atomic_fetch_sub(&c->tp->n_waiting, 1);
		unacquire(c, credit, -1);
		return rc;
	}
	pthread_mutex_lock(&c->lock);
	while (!w.done) {
		if (io_self == c->tp) {
			pthread_mutex_unlock(&c->lock);
			poll_send_cq(c);
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
			pthread_mutex_lock(&c->lock);
		} else {
			pthread_cond_wait(&c->cond, &c->lock);
		}
	}
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_sub(&c->tp->n_waiting, 1);
	(void)slot;
	return w.status;
}

static void free_slot(struct conn *c, int s)
{
	pthread_mutex_lock(&c->lock);
	c->free_slot[c->n_free++] = (uint16_t)s;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* Tell the peer how many receives we posted, when CREDIT_BATCH more are (I/O thread). */
static void maybe_credit(struct conn *c)
{
	if (c->rx_posted - c->credit_written < CREDIT_BATCH || !c->peer_rkey)
		return;
	pthread_mutex_lock(&c->lock);
	bool go = !c->dead && !c->credit_busy && c->sq_used < SQ_DEPTH;
	if (go) {
		c->credit_busy = true;
		c->sq_used++;
	}
	pthread_mutex_unlock(&c->lock);
	if (!go)
		return;                    /* the completion that frees the queue retries */
	uint32_t n = (uint32_t)c->rx_posted;
	c->ctrl->credit_out = n | (uint64_t)(uint32_t)~n << 32;
	c->credit_written = c->rx_posted;
	struct ibv_sge sge = { (uintptr_t)&c->ctrl->credit_out, 8, c->cmr->lkey };
	struct ibv_send_wr wr = { .wr_id = TAG_CREDIT, .sg_list = &sge, .num_sge = 1,
	                          .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = c->peer_ctrl;
	wr.wr.rdma.rkey = c->peer_rkey;
	struct ibv_send_wr *bad;
	int e = ibv_post_send(c->id->qp, &wr, &bad);
	if (e) {
		pn_core_log(c->tp->pn, "rdma: %s: credit write: ibv_post_send: %s", peer_name(c), strerror(e));
		conn_fail(c, -PN_EPEERDOWN);
	}
}

static int post_recv(struct conn *c, unsigned i)
{
	struct ibv_sge sge = { (uintptr_t)(c->rbuf + (size_t)i * SLOT_LEN), SLOT_LEN, c->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)i << 3 | TAG_RECV, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	return ibv_post_recv(c->id->qp, &wr, &bad);
}

/* ---- sending messages ---- */

/* Send frame h + payload as SENDs.  reply_slot: the requester's slot this reply belongs to
 * (or 0); handle: a reply handle to attach (or NULL). */
static int send_msg(struct conn *c, const struct pn_hdr *h, uint32_t reply_slot,
                    const struct handle *handle, const void *payload, size_t len)
{
	const uint8_t *src = payload;
	size_t off = 0;
	int rc = 0;
	bool first = true;
	pthread_mutex_lock(&c->tx_lock);
	do {
		int s;
		rc = acquire(c, true, true, &s);
		if (rc)
			break;
		uint8_t *p = slot_buf(c, (unsigned)s), *q = p + SUB_LEN;
		uint8_t flags = 0;
		if (first) {
			pn_wire_put(q, h);
			q += PN_HDR_LEN;
			if (handle) {
				handle_put(q, handle);
				q += HANDLE_LEN;
				flags |= F_HANDLE;
			}
			if (reply_slot)
				flags |= F_SLOT;
		}
		size_t n = SLOT_LEN - (size_t)(q - p);
		if (n > len - off)
			n = len - off;
		p[0] = first ? SUB_FIRST : SUB_MORE;
		p[1] = flags;
		put16(p + 2, 0);
		put32(p + 4, reply_slot);
		if (n)
			memcpy(q, src + off, n);
		off += n;
		rc = post_slot(c, s, IBV_WR_SEND, (size_t)(q - p) + n, 0, 0, 0);
		first = false;
	} while (rc == 0 && off < len);
	pthread_mutex_unlock(&c->tx_lock);
	return rc;
}

/* A reply written straight into the requester's buffer (RDMA WRITE WITH IMMEDIATE). */
static int write_reply(struct conn *c, const struct handle *t, const void *payload, size_t len)
{
	struct pn_tp *tp = c->tp;
	if (len <= SLOT_LEN) {
		int s;
		int rc = acquire(c, true, true, &s);
		if (rc)
			return rc;
		if (len)
			memcpy(slot_buf(c, (unsigned)s), payload, len);
		return post_slot(c, s, IBV_WR_RDMA_WRITE_WITH_IMM, len, t->addr, t->rkey, t->slot);
	}
	/* large: the adapter reads the caller's buffer itself, registered for this one write */
	struct ibv_mr *mr = ibv_reg_mr(tp->pd, (void *)(uintptr_t)payload, len, 0);
	if (!mr) {
		pn_core_log(tp->pn, "rdma: ibv_reg_mr of a %zu-byte reply: %s (sent as SENDs)", len,
		            strerror(errno));
		return 1;                  /* the caller falls back to SENDs */
	}
	int rc = acquire(c, true, false, NULL);
	if (rc == 0) {
		struct ibv_sge sge = { (uintptr_t)payload, (uint32_t)len, mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
		                          .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		                          .imm_data = htonl(t->slot) };
		wr.wr.rdma.remote_addr = t->addr;
		wr.wr.rdma.rkey = t->rkey;
		rc = post_wait(c, &wr, true, -1);
	}
	ibv_dereg_mr(mr);
	return rc;
}

/* ---- connecting ---- */

/* HELLO in private data: flags, the proof that follows (PROVE_FLAGS, the connector's), and
 * the session its connections carry (sess: a session block, or NULL), as over tcp: flag
 * SESSION, the number of slots less one at 6 (u16: at most 2^16 slots) and the id at
 * PRIV_LEN.  Returns its length. */
static size_t hello_put(uint8_t *p, const struct pn_tp *tp, const struct conn *c, uint8_t flags,
                        const uint8_t *sess)
{
	memset(p, 0, PRIV_SESS_LEN);
	put16(p, PRIV_MAGIC);
	p[2] = PRIV_VERSION;
	p[3] = flags | (sess ? PN_F_SESSION : 0);
	put16(p + 4, DEPTH);
	if (sess) {
		uint32_t slots = get32(sess + PN_SID_LEN);
		put16(p + 6, (uint16_t)(slots - 1));
		memcpy(p + PRIV_LEN, sess, PN_SID_LEN);
	}
	put32(p + 8, c->cmr->rkey);
	put64(p + 12, (uintptr_t)&c->ctrl->credit_in);
	p[20] = tp->self.scheme;
	p[21] = tp->self.family;
	memcpy(p + 22, &tp->self.port, 2);
	memcpy(p + 24, tp->self.addr, 16);
	return sess ? PRIV_SESS_LEN : PRIV_LEN;
}

/* Parse a HELLO: the peer's depth and credit word into c, the address it claims into
 * *origin, its proof flags into *flags, the session it names into c->sess_block. */
static int hello_get(const uint8_t *p, size_t len, struct conn *c, struct pn_addr *origin,
                     uint8_t *flags)
{
	if (len < PRIV_LEN || get16(p) != PRIV_MAGIC || p[2] != PRIV_VERSION ||
	    (p[3] & ~(PROVE_FLAGS | PN_F_SESSION)) ||
	    (p[3] & PROVE_FLAGS && !(p[3] & PN_F_PROVE)) ||
	    (p[3] & PN_F_ADMIN && !(p[3] & PN_F_SECRET)) ||
	    (p[3] & PN_F_SESSION && len < PRIV_SESS_LEN))
		return -PN_EPROTO;
	*flags = p[3] & PROVE_FLAGS;
	c->has_sess = p[3] & PN_F_SESSION;
	if (c->has_sess) {
		uint32_t slots = (uint32_t)get16(p + 6) + 1;
		memcpy(c->sess_block, p + PRIV_LEN, PN_SID_LEN);
		put32(c->sess_block + PN_SID_LEN, slots);
	}
	c->credit_seen = get16(p + 4);
	c->peer_rkey = get32(p + 8);
	c->peer_ctrl = get64(p + 12);
	memset(origin, 0, sizeof *origin);
	origin->scheme = p[20];
	origin->family = p[21];
	memcpy(&origin->port, p + 22, 2);
	memcpy(origin->addr, p + 24, 16);
	if (origin->scheme != PN_S_RDMA || (origin->family != 4 && origin->family != 6) ||
	    c->credit_seen == 0)
		return -PN_EPROTO;
	return 0;
}

/* Queue pair, completion queues, buffers; DEPTH receives posted.  0 or -PN_E* (logged). */
static int conn_setup(struct conn *c)
{
	struct pn_tp *tp = c->tp;
	const char *what;
	int e = 0;
	what = "ibv_create_cq";
	c->rcq = ibv_create_cq(tp->ctx, DEPTH + 1, c, tp->comp, 0);
	c->scq = ibv_create_cq(tp->ctx, SQ_DEPTH + 1, c, tp->comp, 0);
	if (!c->rcq || !c->scq)
		goto fail;
	what = "ibv_req_notify_cq";
	if ((e = ibv_req_notify_cq(c->rcq, 0)) || (e = ibv_req_notify_cq(c->scq, 0)))
		goto fail;
	struct ibv_qp_init_attr qa = {
		.send_cq = c->scq, .recv_cq = c->rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = SQ_DEPTH, .max_recv_wr = DEPTH, .max_send_sge = 1,
		         .max_recv_sge = 1 },
	};
	what = "rdma_create_qp";
	if (rdma_create_qp(c->id, tp->pd, &qa))
		goto fail;
	what = "buffers";
	c->rbuf = aligned_alloc(4096, (size_t)DEPTH * SLOT_LEN);
	c->sbuf = aligned_alloc(4096, (size_t)DEPTH * SLOT_LEN);
	c->ctrl = aligned_alloc(64, 64);
	if (!c->rbuf || !c->sbuf || !c->ctrl)
		goto fail;
	memset(c->ctrl, 0, sizeof *c->ctrl);
	what = "ibv_reg_mr";
	c->rmr = ibv_reg_mr(tp->pd, c->rbuf, (size_t)DEPTH * SLOT_LEN, IBV_ACCESS_LOCAL_WRITE);
	c->smr = ibv_reg_mr(tp->pd, c->sbuf, (size_t)DEPTH * SLOT_LEN, IBV_ACCESS_LOCAL_WRITE);
	c->cmr = ibv_reg_mr(tp->pd, c->ctrl, sizeof *c->ctrl,
	                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!c->rmr || !c->smr || !c->cmr)
		goto fail;
	what = "ibv_post_recv";
	for (unsigned i = 0; i < DEPTH; i++)
		if ((e = post_recv(c, i)))
			goto fail;
	c->rx_posted = c->credit_written = DEPTH;
	return 0;
fail:
	/* conn_destroy, run later by the I/O thread, releases whatever was made */
	pn_core_log(tp->pn, "rdma: %s: %s: %s", peer_name(c), what, strerror(e ? e : errno));
	return -PN_ESYS;
}

/* What an event's status means: an IB CM reject reason, or a negative errno. */
static void cm_reason(const struct rdma_cm_event *ev, char *buf, size_t len)
{
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		snprintf(buf, len, "reject reason %d%s", ev->status,
		         ev->status == 8 ? " (invalid service id: nobody listens)" :
		         ev->status == 28 ? " (consumer defined)" : "");
	else if (ev->status < 0)
		snprintf(buf, len, "%s", strerror(-ev->status));
	else
		buf[0] = '\0';
}

static int pump_events(struct pn_tp *tp, int ms);

enum { WAIT_UP = -1, WAIT_CHALLENGE = -2 };

/* Wait until connection event `step` (WAIT_UP: until established; WAIT_CHALLENGE: until the
 * acceptor's CHALLENGE came) or a failure. */
static int wait_cm(struct conn *c, int step, uint64_t deadline)
{
	int rc = 0;
	pthread_mutex_lock(&c->lock);
	while (!c->cm_err && !c->dead && (step >= 0 ? c->cm_step != step + 1 :
	                                  step == WAIT_UP ? !c->up : !c->chal_got)) {
		uint64_t now = pn_now_ns();
		if (now >= deadline) {
			rc = -PN_ETIMEDOUT;
			break;
		}
		if (io_self == c->tp) {
			pthread_mutex_unlock(&c->lock);
			int deep = pump_events(c->tp, 20);
			pthread_mutex_lock(&c->lock);
			if (deep) {
				rc = deep;
				break;
			}
		} else {
			struct timespec ts = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		}
	}
	if (!rc && (c->cm_err || c->dead))
		rc = c->cm_err ? c->cm_err : c->err ? c->err : -PN_EPEERDOWN;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* The connector's side of the proof (Identity, above), on a connection nobody else uses yet:
 * HELLO with our nonce, the acceptor's CHALLENGE (its nonce and its proof, or nothing when it
 * has no such key), our AUTH.  A wrong proof of the cluster key refuses the connection; of a
 * secret (we are a client: most likely ours is wrong), it goes on unproven, with an AUTH of
 * zeros, so the server can say what is wrong.  c->trusted: both proved the cluster key. */
static int prove(struct pn_tp *tp, struct conn *c, struct pn_peer_rec *peer, enum pn_key which,
                 uint8_t flags, uint64_t deadline)
{
	struct pn *pn = tp->pn;
	uint8_t nc[PN_NONCE_LEN], mac[PN_MAC_LEN];
	if (getrandom(nc, sizeof nc, 0) != (ssize_t)sizeof nc)
		return -PN_ESYS;
	atomic_store(&c->chal_wait, true);
	struct pn_hdr h = { .kind = PN_K_HELLO, .flags = flags, .len = sizeof nc,
	                    .origin = tp->self };
	int rc = send_msg(c, &h, 0, NULL, nc, sizeof nc);
	if (rc == 0)
		rc = wait_cm(c, WAIT_CHALLENGE, deadline);
	if (rc == -PN_ETIMEDOUT)
		pn_core_log(pn, "rdma: %s: no CHALLENGE within %u ms", peer->name,
		            pn_core_opts(pn)->connect_timeout_ms);
	if (rc != 0)
		return rc;
	atomic_store(&c->chal_wait, false);
	if (c->chal_len == 0)
		return 0;              /* it has no key (a client we answer): an ordinary connection */
	bool ok = pn_core_mac_ok(pn, which, pn_label_acceptor[which], nc, c->chal, &tp->self,
	                         c->chal + PN_NONCE_LEN);
	if (!ok && which == PN_KEY_CLUSTER) {
		pn_core_log(pn, "rdma: %s failed the cluster key proof (not a member, or another key)",
		            peer->name);
		return -PN_EREFUSED;
	}
	if (ok)
		pn_core_mac(pn, which, pn_label_connector[which], nc, c->chal, &tp->self, mac);
	else
		memset(mac, 0, sizeof mac);    /* nothing about our key to one who showed none */
	/* a member's FORWARDED origins are believed from its first message after our AUTH */
	if (ok && which == PN_KEY_CLUSTER)
		atomic_store(&c->trusted, true);
	struct pn_hdr auth = { .kind = PN_K_AUTH, .len = PN_MAC_LEN, .origin = tp->self };
	return send_msg(c, &auth, 0, NULL, mac, sizeof mac);
}

static int connect_peer(struct pn_tp *tp, struct pn_peer_rec *peer, struct conn **out)
{
	unsigned ms = pn_core_opts(tp->pn)->connect_timeout_ms;
	uint64_t deadline = pn_now_ns() + (uint64_t)ms * 1000000u;
	struct conn *c = conn_alloc(tp, peer);
	if (!c)
		return -PN_ENOMEM;
	c->active = true;
	conn_get(c);                       /* ours, given to the caller on success */
	int rc;
	if (rdma_create_id(tp->ec, &c->id, c, RDMA_PS_TCP)) {
		pn_core_log(tp->pn, "rdma: rdma_create_id: %s", strerror(errno));
		rc = -PN_ESYS;
		goto fail;
	}
	struct sockaddr_storage ss;
	pn_addr_to_sockaddr(&peer->addr, &ss);
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&ss, (int)ms)) {
		pn_core_log(tp->pn, "rdma: %s: rdma_resolve_addr: %s", peer->name, strerror(errno));
		rc = -PN_EPEERDOWN;
		goto fail;
	}
	if ((rc = wait_cm(c, RDMA_CM_EVENT_ADDR_RESOLVED, deadline)))
		goto fail;
	if (rdma_resolve_route(c->id, (int)ms)) {
		pn_core_log(tp->pn, "rdma: %s: rdma_resolve_route: %s", peer->name, strerror(errno));
		rc = -PN_EPEERDOWN;
		goto fail;
	}
	if ((rc = wait_cm(c, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline)))
		goto fail;
	if (c->id->verbs != tp->ctx) {
		pn_core_log(tp->pn, "rdma: %s is reached through device %s, not %s, which this "
		            "endpoint listens on", peer->name, ibv_get_device_name(c->id->verbs->device),
		            ibv_get_device_name(tp->ctx->device));
		rc = -PN_EPEERDOWN;
		goto fail;
	}
	if ((rc = conn_setup(c)))
		goto fail;
	/* the key we prove, as over tcp: the cluster key, else the admin secret, else the
	 * secret; none: an ordinary connection, anonymous to the acceptor */
	struct pn *pn = tp->pn;
	int which = pn_core_has_key(pn, PN_KEY_CLUSTER) ? PN_KEY_CLUSTER :
	            pn_core_has_key(pn, PN_KEY_ADMIN) ? PN_KEY_ADMIN :
	            pn_core_has_key(pn, PN_KEY_SECRET) ? PN_KEY_SECRET : -1;
	uint8_t flags = which < 0 ? 0 : (uint8_t)(PN_F_PROVE |
	                (which != PN_KEY_CLUSTER ? PN_F_SECRET : 0) |
	                (which == PN_KEY_ADMIN ? PN_F_ADMIN : 0));
	/* a session's connection names it, as over tcp (docs/net.md, "Sessions") */
	uint8_t priv[PRIV_SESS_LEN], block[PN_SESS_BLOCK];
	bool sess = pn_core_session_block(pn, peer, block);
	size_t priv_len = hello_put(priv, tp, c, flags, sess ? block : NULL);
	struct rdma_conn_param cp = { .private_data = priv, .private_data_len = (uint8_t)priv_len,
	                              .responder_resources = tp->rd_atom,
	                              .initiator_depth = tp->rd_atom,
	                              .retry_count = 7, .rnr_retry_count = 3 };
	if (rdma_connect(c->id, &cp)) {
		pn_core_log(tp->pn, "rdma: %s: rdma_connect: %s", peer->name, strerror(errno));
		rc = -PN_EPEERDOWN;
		goto fail;
	}
	if ((rc = wait_cm(c, WAIT_UP, deadline)))
		goto fail;
	if (which >= 0 && (rc = prove(tp, c, peer, (enum pn_key)which, flags, deadline)))
		goto fail;
	*out = c;
	return 0;
fail:
	if (rc == -PN_ETIMEDOUT)
		pn_core_log(tp->pn, "rdma: %s: no connection within %u ms", peer->name, ms);
	conn_kill(c, rc);
	conn_unlist(c);
	conn_put(c);                       /* the I/O thread frees it */
	return rc;
}

/* The connection sends to peer go through (a new reference), connecting if there is none. */
static int peer_conn(struct pn_tp *tp, struct pn_peer_rec *peer, struct conn **out)
{
	if (atomic_load(&tp->dev_failed))
		return -PN_ENODEV;         /* (PN_RDMA_FAIL_AFTER) */
	struct rdma_peer *rp = peer_state(tp, peer);
	if (!rp)
		return -PN_ENOMEM;
	pthread_mutex_lock(&rp->lock);
	/* Concurrent first sends share one connection: the others wait for the one connecting.
	 * The lock itself is not held meanwhile, since the I/O thread takes it when a connection
	 * from the peer is established, and our connect needs the I/O thread.  So the I/O thread
	 * (an inline handler sending) must not sleep here: it pumps the events the connecting
	 * thread waits for, and when it is the connecting thread itself (a handler run while its
	 * own connect pumped events), waiting could never end, so that send fails. */
	uint64_t deadline = 0;
	while (rp->connecting) {
		if (io_self != tp) {
			pthread_cond_wait(&rp->cond, &rp->lock);
			continue;
		}
		if (rp->io_connecting) {
			pthread_mutex_unlock(&rp->lock);
			return -PN_EPEERDOWN;
		}
		uint64_t now = pn_now_ns();
		if (!deadline)
			deadline = now + (uint64_t)pn_core_opts(tp->pn)->connect_timeout_ms * 1000000u;
		if (now >= deadline) {
			pthread_mutex_unlock(&rp->lock);
			return -PN_ETIMEDOUT;
		}
		pthread_mutex_unlock(&rp->lock);
		int deep = pump_events(tp, 20);
		if (deep)
			return deep;
		pthread_mutex_lock(&rp->lock);
	}
	struct conn *c = rp->conn;
	if (c && c->dead) {                /* broken: forget it, connect again */
		rp->conn = NULL;
		conn_put(c);
		c = NULL;
	}
	if (!c && peer->anon) {
		/* known only by its connection, which is gone: never connect to where it said it
		 * listens (anyone may say anything) */
		pthread_mutex_unlock(&rp->lock);
		return -PN_EPEERDOWN;
	}
	if (!c) {
		rp->connecting = true;
		rp->io_connecting = io_self == tp;
		pthread_mutex_unlock(&rp->lock);
		int rc = connect_peer(tp, peer, &c);
		pthread_mutex_lock(&rp->lock);
		rp->connecting = false;
		rp->io_connecting = false;
		pthread_cond_broadcast(&rp->cond);
		if (rc) {
			pthread_mutex_unlock(&rp->lock);
			return rc;
		}
		if (rp->conn)              /* the peer's own connection came up meanwhile */
			conn_put(rp->conn);
		rp->conn = c;              /* the reference connect_peer gave */
	}
	conn_get(c);
	pthread_mutex_unlock(&rp->lock);
	*out = c;
	return 0;
}

/* PN_RDMA_CUT_REPLIES: whether this message to peer is one to lose, with the connection it
 * would have gone on (closed here).  Only a message that has a live connection to go on
 * counts: one lost without a connection closing would leave its requester waiting, which
 * no device error does. */
static bool cut(struct pn_tp *tp, struct pn_peer_rec *peer)
{
	struct rdma_peer *rp = peer_state(tp, peer);
	struct conn *c = NULL;
	if (rp) {
		pthread_mutex_lock(&rp->lock);
		if ((c = rp->conn) && !c->dead)
			conn_get(c);
		else
			c = NULL;
		pthread_mutex_unlock(&rp->lock);
	}
	if (!c)
		return false;
	bool lose = atomic_fetch_add(&tp->cut_n, 1) % tp->cut_every == tp->cut_every - 1;
	if (lose) {
		pn_core_log(tp->pn, "rdma: %s: the connection closed instead of a reply "
		            "(PN_RDMA_CUT_REPLIES=%u)", peer->name, tp->cut_every);
		conn_kill(c, -PN_EPEERDOWN);
	}
	conn_put(c);
	return lose;
}

/* PN_RDMA_FAIL_AFTER: the device "fails": every connection closes, as a device error would
 * close them, and nothing goes out from now on. */
static int dev_fail(struct pn_tp *tp)
{
	if (atomic_exchange(&tp->dev_failed, true))
		return -PN_ENODEV;
	pn_core_log(tp->pn, "rdma: the device failed after %u requests (PN_RDMA_FAIL_AFTER)",
	            tp->fail_after);
	for (;;) {
		struct conn *c = NULL;
		pthread_mutex_lock(&tp->lock);
		for (struct conn *x = tp->conns; x && !c; x = x->next)
			if (!x->dead) {
				c = x;
				conn_get(c);
			}
		pthread_mutex_unlock(&tp->lock);
		if (!c)
			return -PN_ENODEV;
		conn_kill(c, -PN_ENODEV);      /* (marks it dead: not found again) */
		conn_put(c);
	}
}

static int rdma_send(struct pn_tp *tp, struct pn_peer_rec *peer, const struct pn_hdr *h,
                     const void *payload, size_t len)
{
	if (atomic_load(&tp->stop))
		return -PN_ESHUTDOWN;
	if (tp->fail_after && (atomic_load(&tp->dev_failed) ||
	                       ((h->kind == PN_K_SREQ || h->kind == PN_K_MSG) && h->coop &&
	                        atomic_fetch_add(&tp->fail_n, 1) >= tp->fail_after)))
		return dev_fail(tp);
	if (tp->cut_every && h->kind == PN_K_MSG && h->coop && cut(tp, peer))
		return 0;                  /* (lost with the connection, as far as we know sent) */
	/* Which kind of frame: a reply to a request that brought a handle; a forwarded request
	 * whose handle travels on; or a request of ours that may advertise a descriptor. */
	struct handle t;
	bool reply = false, have = false;
	if ((h->kind == PN_K_MSG || h->kind == PN_K_SREQ) && h->coop) {
		/* (a session's request is never forwarded nor a reply: it may advertise) */
		if (h->kind == PN_K_MSG && h->flags & PN_F_FORWARDED) {
			struct pn_peer_rec *origin = pn_core_peer_known(tp->pn, &h->origin);
			have = origin && target_take(tp, origin, h->coop, &t);
		} else if (h->kind == PN_K_MSG && target_take(tp, peer, h->coop, &t)) {
			reply = true;
		} else {
			have = slot_advertise(tp, peer, h->coop, &t);
		}
	}
	int rc = -PN_EPEERDOWN;
	for (int attempt = 0; attempt < 2 && rc == -PN_EPEERDOWN; attempt++) {
		struct conn *c;
		rc = peer_conn(tp, peer, &c);
		if (rc)
			return rc;
		bool fresh = c->tx_sent == 0;
		rc = 1;
		if (reply && h->type == t.type && len <= t.cap) {
			rc = write_reply(c, &t, payload, len);
			if (rc == 0)
				pn_core_count(tp->pn, PN_ST_RDMA_REPLIES_OUT, 1);
		}
		if (rc == 1)
			rc = send_msg(c, h, reply ? t.slot : 0, have ? &t : NULL, payload, len);
		conn_put(c);
		/* a connection found dead at the first message is retried once on a new one (the
		 * peer restarted); after that the error stands */
		if (fresh)
			break;
	}
	return rc;
}

/* ---- the I/O thread: receiving ---- */

/* An inbound connection becomes peer's: the first one up carries our sends to it. */
static void conn_attach(struct conn *c, struct pn_peer_rec *peer)
{
	c->peer = peer;
	if (c->has_sess)
		pn_core_session_bind(c->tp->pn, peer, c->sess_block);
	struct rdma_peer *rp = peer_state(c->tp, peer);
	if (!rp)
		return;
	pthread_mutex_lock(&rp->lock);
	if (!rp->conn || rp->conn->dead) {
		if (rp->conn)
			conn_put(rp->conn);
		conn_get(c);
		rp->conn = c;
	}
	pthread_mutex_unlock(&rp->lock);
}

/* An inbound connection's proof ended without the cluster key: it is known by this connection
 * alone (an anonymous peer), as one that proved nothing, or a client that proved a secret. */
static int admit_anon(struct conn *c, enum pn_proof proven)
{
	struct pn_peer_rec *peer = pn_core_peer_anon(c->tp->pn, &c->remote);
	if (!peer)
		return -PN_ENOMEM;
	peer->proven = (uint8_t)proven;
	proving_end(c);
	if (proven != PN_PROOF_NONE)
		pending_end(c);            /* a proof admits, as over tcp */
	conn_attach(c, peer);
	return 0;
}

/* HELLO from the connector of an inbound connection that promised a proof: its nonce. */
static int on_hello(struct conn *c, const uint8_t nonce[PN_NONCE_LEN])
{
	struct pn_tp *tp = c->tp;
	struct pn *pn = tp->pn;
	enum pn_key which = !(c->hello_flags & PN_F_SECRET) ? PN_KEY_CLUSTER :
	                    c->hello_flags & PN_F_ADMIN ? PN_KEY_ADMIN : PN_KEY_SECRET;
	struct pn_hdr ch = { .kind = PN_K_CHALLENGE, .origin = tp->self };
	if (!pn_core_has_key(pn, which)) {
		/* no such key here: say so; the connector goes on as an ordinary one */
		int rc = send_msg(c, &ch, 0, NULL, NULL, 0);
		return rc ? rc : admit_anon(c, PN_PROOF_NONE);
	}
	/* challenge it, and prove ourselves: its claim waits for its AUTH */
	struct proof *p = malloc(sizeof *p);
	if (!p)
		return -PN_ENOMEM;
	p->which = which;
	memcpy(p->nc, nonce, PN_NONCE_LEN);
	uint8_t out[PN_NONCE_LEN + PN_MAC_LEN];
	if (pn_core_challenge(pn, which, p->nc, &c->claim, p->na, out) != 0) {
		free(p);
		return -PN_ESYS;
	}
	c->proof = p;
	ch.len = sizeof out;
	return send_msg(c, &ch, 0, NULL, out, sizeof out);
}

/* AUTH: the connector's proof for the nonces and the address it claimed. */
static int on_auth(struct conn *c, const uint8_t mac[PN_MAC_LEN])
{
	struct pn_tp *tp = c->tp;
	struct proof *p = c->proof;
	c->proof = NULL;
	enum pn_key which = p->which;
	bool ok = pn_core_mac_ok(tp->pn, which, pn_label_connector[which], p->nc, p->na,
	                         &c->claim, mac);
	free(p);
	if (which != PN_KEY_CLUSTER)
		/* a client: proven or not, it is known by this connection alone; unproven, it
		 * goes on as one that brought no proof (the application says what is wrong) */
		return admit_anon(c, !ok ? PN_PROOF_NONE :
		                     which == PN_KEY_ADMIN ? PN_PROOF_ADMIN : PN_PROOF_SECRET);
	if (!ok) {
		char name[PN_NAME_LEN];
		pn_addr_name(&c->claim, name, sizeof name);
		pn_core_log(tp->pn, "rdma: a connection claiming to be %s failed the cluster key proof",
		            name);
		return -PN_EPROTO;
	}
	struct pn_peer_rec *peer = pn_core_peer(tp->pn, &c->claim);
	if (!peer)
		return -PN_ENOMEM;
	atomic_store(&c->trusted, true);
	proving_end(c);
	pending_end(c);
	conn_attach(c, peer);
	return 0;
}

/* A frame of the proof (HELLO, CHALLENGE, AUTH), whole in one SEND: payload b of n bytes.
 * Each comes once, in its place; anything else closes the connection. */
static int on_proof_frame(struct conn *c, const struct pn_hdr *h, const uint8_t *b, size_t n)
{
	if (n != h->len)
		return -PN_EPROTO;
	switch (h->kind) {
	case PN_K_HELLO:
		if (c->active || !c->proving || c->proof || h->len != PN_NONCE_LEN ||
		    h->flags != c->hello_flags || !pn_addr_eq(&h->origin, &c->claim))
			return -PN_EPROTO;
		return on_hello(c, b);
	case PN_K_AUTH:
		if (c->active || !c->proof || h->len != PN_MAC_LEN)
			return -PN_EPROTO;
		return on_auth(c, b);
	case PN_K_CHALLENGE: {
		pthread_mutex_lock(&c->lock);
		bool ok = c->active && atomic_load(&c->chal_wait) && !c->chal_got &&
		          (h->len == 0 || h->len == sizeof c->chal);
		if (ok) {
			memcpy(c->chal, b, h->len);
			c->chal_len = h->len;
			c->chal_got = true;
			pthread_cond_broadcast(&c->cond);
		}
		pthread_mutex_unlock(&c->lock);
		return ok ? 0 : -PN_EPROTO;
	}
	default:
		return -PN_EPROTO;
	}
}

/* A session's control frame, whole in one SEND (docs/net.md, "Sessions"): NACK, a request
 * of ours refused (payload: a u32 PN_E code), or BYE, the client ends the session of this
 * connection (no payload). */
static int on_session_frame(struct conn *c, const struct pn_hdr *h, uint8_t flags,
                            const uint8_t *b, size_t n)
{
	if (flags || n != h->len)
		return -PN_EPROTO;
	if (h->kind == PN_K_NACK) {
		if (h->len != 4)
			return -PN_EPROTO;
		pn_core_nack(c->tp->pn, c->peer, h->coop, b, h->len);
		return 0;
	}
	if (h->len || c->active)
		return -PN_EPROTO;
	pn_core_session_bye(c->tp->pn, c->peer);
	return 0;
}

/* A SEND arrived in receive buffer i.  0, or an error that closes the connection. */
static int on_message(struct conn *c, unsigned i, size_t n)
{
	struct pn_tp *tp = c->tp;
	struct pn *pn = tp->pn;
	const uint8_t *p = c->rbuf + (size_t)i * SLOT_LEN, *q = p + SUB_LEN;
	if (n < SUB_LEN)
		return -PN_EPROTO;
	uint8_t kind = p[0], flags = p[1];
	uint32_t slot = get32(p + 4);
	size_t chunk;
	if (kind == SUB_FIRST) {
		struct pn_hdr h;
		if (c->in_payload || n < SUB_LEN + PN_HDR_LEN || (flags & ~(F_HANDLE | F_SLOT)))
			return -PN_EPROTO;
		int rc = pn_wire_get(q, &h, pn_core_opts(pn)->max_msg);
		if (rc)
			return rc;
		q += PN_HDR_LEN;
		if (h.kind != PN_K_MSG && h.kind != PN_K_SREQ && h.kind != PN_K_NACK &&
		    h.kind != PN_K_BYE)
			return flags ? -PN_EPROTO : on_proof_frame(c, &h, q, n - (size_t)(q - p));
		/* nothing is delivered from a connection before its proof ends, nor taken as a
		 * reply while ours waits for the CHALLENGE */
		if (c->proving || !c->peer || atomic_load(&c->chal_wait))
			return -PN_EPROTO;
		if (h.kind == PN_K_NACK || h.kind == PN_K_BYE)
			return on_session_frame(c, &h, flags, q, n - (size_t)(q - p));
		if (!atomic_load(&c->trusted))
			h.flags &= ~PN_F_FORWARDED;   /* an origin nobody proved: reply to the sender */
		struct handle hd = { 0 };
		bool has_handle = flags & F_HANDLE;
		if (has_handle) {
			if (n < (size_t)(q - p) + HANDLE_LEN || !h.coop)
				return -PN_EPROTO;
			handle_get(q, &hd);
			q += HANDLE_LEN;
		}
		chunk = n - (size_t)(q - p);
		if (chunk > h.len)
			return -PN_EPROTO;
		if (c->pending) {
			/* as over tcp: admit looks at the payload's first bytes (those of this
			 * fragment, past the reply handle); a message it does not admit may be at
			 * most preauth_max bytes, and is refused before anything is kept for it */
			if (pn_core_admit(pn, c->peer, h.type, q, chunk, h.len))
				pending_end(c);
			else if (h.len > pn_core_opts(pn)->preauth_max) {
				/* as over tcp, the application may answer why (arfd: the secret) before
				 * the connection closes; nothing of the message is kept */
				pn_core_refuse(pn, c->peer, h.type, h.coop, q, chunk);
				return RX_REFUSED;
			}
		}
		if (h.kind == PN_K_SREQ && c->pending)
			h.kind = PN_K_MSG; /* no session before admission: nothing kept for it */
		if (!budget_take(c, h.len))
			return RX_WAIT;            /* nothing kept yet: it is parsed again later */
		if (has_handle) {
			struct pn_peer_rec *origin = (h.flags & PN_F_FORWARDED) ?
				pn_core_peer(pn, &h.origin) : c->peer;
			if (origin)
				target_keep(tp, origin, h.coop, &hd);
		}
		struct rslot s;
		if ((flags & F_SLOT) && slot_claim(tp, slot, h.coop, &s))
			c->dst = pn_core_rx_begin_at(pn, c->peer, &h, s.idx, &c->rx);
		else
			c->dst = pn_core_rx_begin(pn, c->peer, &h, &c->rx);
		c->need = h.len;
		c->got = 0;
		c->in_payload = true;
		c->rx_status = h.len && !c->dst ? -PN_ENOMEM : 0;
	} else if (kind == SUB_MORE) {
		if (!c->in_payload)
			return -PN_EPROTO;
		chunk = n - SUB_LEN;
		if (chunk > c->need - c->got)
			return -PN_EPROTO;
	} else {
		return -PN_EPROTO;
	}
	if (c->dst && chunk)
		memcpy(c->dst + c->got, q, chunk);
	c->got += chunk;
	return 0;
}

/* The peer wrote a reply into one of our advertised buffers; imm names the slot. */
static void on_write_imm(struct conn *c, uint32_t imm, size_t len)
{
	struct pn_tp *tp = c->tp;
	struct rslot s;
	if (!c->peer || !slot_claim(tp, imm, 0, &s)) {
		pn_core_log(tp->pn, "rdma: %s: a reply for slot %#x, which is not ours (dropped)",
		            peer_name(c), imm);
		return;
	}
	struct pn_hdr h = { .kind = PN_K_MSG, .type = s.type, .len = (uint32_t)len, .coop = s.coop,
	                    .origin = c->peer->addr };
	struct pn_rx rx;
	pn_core_count(tp->pn, PN_ST_RDMA_REPLIES_IN, 1);
	void *dst = pn_core_rx_begin_at(tp->pn, c->peer, &h, s.idx, &rx);
	if (dst && dst != s.buf && len)
		memcpy(dst, s.buf, len);   /* the descriptor was taken meanwhile: placed elsewhere */
	pn_core_rx_end(tp->pn, &rx, 0);
}

static void on_established(struct conn *c, const uint8_t *priv, size_t priv_len);

/* Take one receive: a message's fragment, or a reply written into our memory.  A message
 * waiting for rx_budget puts this receive and the connection's later ones off (in order),
 * until budget_resume takes them again. */
static void rx_complete(struct conn *c, const struct held_wc *w)
{
	struct pn_tp *tp = c->tp;
	int rc = 0;
	if (c->refused) {
		/* dropped: it closes once its answer is out */
	} else if (c->n_held_wc) {
		if (c->n_held_wc == DEPTH)     /* more receives than buffers: cannot be */
			rc = -PN_EPROTO;
		else
			c->held_wc[c->n_held_wc++] = *w;
	} else if (w->write_imm) {
		on_write_imm(c, w->imm, w->len);
	} else {
		rc = on_message(c, w->slot, w->len);
		if (rc == RX_REFUSED) {
			rc = 0;
			c->refused = true;
			c->refused_ns = pn_now_ns();
			pthread_mutex_lock(&c->lock);
			bool sending = c->sq_used > 0;
			pthread_mutex_unlock(&c->lock);
			if (!sending) {        /* no answer, or already out */
				conn_fail(c, -PN_ETOOBIG);
				return;
			}
		}
		if (rc == RX_WAIT) {
			pn_core_count(tp->pn, PN_ST_RX_WAITS, 1);
			c->held_wc[0] = *w;
			c->n_held_wc = 1;
			conn_get(c);
			c->budget_next = NULL;
			if (tp->budget_tail)
				tp->budget_tail->budget_next = c;
			else
				tp->budget_head = c;
			tp->budget_tail = c;
			return;
		}
	}
	if (rc) {
		pn_core_count(tp->pn, PN_ST_BAD_FRAMES, 1);
		pn_core_log(tp->pn, "rdma: %s: malformed message (%s): closing the connection",
		            peer_name(c), pn_strerror(rc));
		conn_fail(c, -PN_EPEERDOWN);
		return;
	}
	if (c->n_held_wc)
		return;                        /* its buffer stays taken (back-pressure) */
	/* The buffer is free again before the message is delivered, since an inline handler
	 * may send, and our peer may be waiting for the credit. */
	int e = post_recv(c, w->slot);
	if (e) {
		pn_core_log(tp->pn, "rdma: %s: ibv_post_recv: %s", peer_name(c), strerror(e));
		conn_fail(c, -PN_EPEERDOWN);
		return;
	}
	c->rx_posted++;
	maybe_credit(c);
	if (c->in_payload && c->got == c->need) {
		c->in_payload = false;
		budget_release(c);
		pn_core_rx_end(tp->pn, &c->rx, c->rx_status);
	}
}

static void on_recv_wc(struct conn *c, const struct ibv_wc *wc)
{
	/* The first message on an accepted connection may come before its ESTABLISHED event
	 * (the peer's queue pair is ready once it has our accept; ours since rdma_accept).  It
	 * is established: the handler's reply must take this connection, not open another one
	 * towards the peer (which, from an inline handler, stalled the I/O thread meanwhile). */
	if (!c->active && !c->up && wc->status == IBV_WC_SUCCESS) {
		/* and the connection manager must know it too (its RTU may still be on its way):
		 * else a disconnect now (a message that closes the connection) would send no DREQ
		 * and the peer would never learn that the connection is gone */
		rdma_notify(c->id, IBV_EVENT_COMM_EST);
		on_established(c, NULL, 0);
	}
	struct held_wc w = { .slot = (uint16_t)(wc->wr_id >> 3),
	                     .write_imm = wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM,
	                     .len = wc->byte_len, .imm = ntohl(wc->imm_data) };
	rx_complete(c, &w);
}

/* Connections whose message waits for rx_budget, oldest first: each whose message now fits
 * takes its put-off receives again, in order (its next message may wait again); closed ones
 * leave the list.  From the I/O thread's loop only, not from inside a handler. */
static void budget_resume(struct pn_tp *tp)
{
	while (tp->budget_head) {
		struct conn *c = tp->budget_head;
		if (!c->failed && c->n_held_wc) {
			struct pn_hdr h;
			const uint8_t *p = c->rbuf + (size_t)c->held_wc[0].slot * SLOT_LEN;
			if (pn_wire_get(p + SUB_LEN, &h, pn_core_opts(tp->pn)->max_msg) == 0 &&
			    !budget_take(c, h.len))
				return;                /* the oldest waits: so do the younger (fairness) */
		}
		tp->budget_head = c->budget_next;
		if (!tp->budget_head)
			tp->budget_tail = NULL;
		struct held_wc w[DEPTH];
		unsigned n = c->failed ? 0 : c->n_held_wc;
		memcpy(w, c->held_wc, n * sizeof *w);
		c->n_held_wc = 0;
		for (unsigned i = 0; i < n && !c->failed; i++)
			rx_complete(c, &w[i]);     /* (the first takes the budget held above) */
		conn_put(c);
	}
}

static const char *wc_op(const struct ibv_wc *wc)
{
	switch (wc->wr_id & 7) {
	case TAG_RECV: return "receive";
	case TAG_CREDIT: return "credit write";
	case TAG_WAIT: return "rdma write/read";
	default: return "send/write";
	}
}

static void on_send_wc(struct conn *c, const struct ibv_wc *wc)
{
	unsigned tag = wc->wr_id & 7;
	int st = wc->status == IBV_WC_SUCCESS ? 0 :
	         wc->status == IBV_WC_REM_ACCESS_ERR ? -PN_EACCESS : -PN_EPEERDOWN;
	pthread_mutex_lock(&c->lock);
	c->sq_used--;
	if (tag == TAG_SLOT) {
		c->free_slot[c->n_free++] = (uint16_t)(wc->wr_id >> 3);
	} else if (tag == TAG_WAIT) {
		struct waiter *w = (struct waiter *)(uintptr_t)(wc->wr_id & ~(uint64_t)7);
		w->status = st;
		w->done = true;
	} else if (tag == TAG_CREDIT) {
		c->credit_busy = false;
	}
	bool refused_done = c->refused && c->sq_used == 0;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (refused_done && !st) {
		conn_fail(c, -PN_ETOOBIG);     /* its answer is acknowledged: now close */
		return;
	}
	if (st) {
		/* a flush is the echo of what moved the queue pair to the error state (a completion
		 * error, logged, or a disconnect), not news */
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			pn_core_log(c->tp->pn, "rdma: %s: %s failed: %s (status %d, vendor error %#x)",
			            peer_name(c), wc_op(wc), ibv_wc_status_str(wc->status),
			            (int)wc->status, wc->vendor_err);
		conn_fail(c, -PN_EPEERDOWN);
		return;
	}
	maybe_credit(c);
}

static void poll_cq(struct conn *c, struct ibv_cq *cq)
{
	struct ibv_wc wc[16];
	int n;
	while ((n = ibv_poll_cq(cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (cq == c->scq) {
				on_send_wc(c, &wc[i]);
			} else if (wc[i].status != IBV_WC_SUCCESS) {
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					pn_core_log(c->tp->pn, "rdma: %s: %s failed: %s (status %d, vendor "
					            "error %#x)", peer_name(c), wc_op(&wc[i]),
					            ibv_wc_status_str(wc[i].status), (int)wc[i].status,
					            wc[i].vendor_err);
				conn_fail(c, -PN_EPEERDOWN);
			} else if (!c->failed) {
				on_recv_wc(c, &wc[i]);
			}
		}
	}
}

static void poll_send_cq(struct conn *c)
{
	if (c->scq)
		poll_cq(c, c->scq);
}

static void on_cq_events(struct pn_tp *tp)
{
	struct ibv_cq *cq;
	void *ctx;
	while (ibv_get_cq_event(tp->comp, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		/* arm first, then drain: a completion between the two still raises an event */
		ibv_req_notify_cq(cq, 0);
		poll_cq(ctx, cq);
	}
}

/* ---- the I/O thread: connection events ---- */

/* Room for one more inbound connection from remote?  Each holds its queue pair and about
 * 1 MiB of registered buffers (DEPTH slots each way), whether it proves anything or not, so
 * their number is what bounds that memory: past pn_opts.max_conns (0: CONNS_DEFAULT) in all,
 * or max_conns_per_addr from one IP address, the oldest connection not let in yet (proving,
 * or pending admission) is closed to make room, as over tcp; when every one counted is let
 * in, the new connection request is rejected.  I/O thread. */
static bool conn_room(struct pn_tp *tp, const struct pn_addr *remote)
{
	const struct pn_opts *o = pn_core_opts(tp->pn);
	unsigned max = o->max_conns ? o->max_conns : CONNS_DEFAULT, total = 0, same = 0;
	struct conn *oldest = NULL, *oldest_same = NULL;
	pthread_mutex_lock(&tp->lock);
	for (struct conn *c = tp->conns; c; c = c->next) {
		if (c->active || c->failed)
			continue;
		bool here = pn_addr_same_host(&c->remote, remote);
		total++;
		same += here;
		if (c->proving || c->pending) {
			if (!oldest || c->opened_ns < oldest->opened_ns)
				oldest = c;
			if (here && (!oldest_same || c->opened_ns < oldest_same->opened_ns))
				oldest_same = c;
		}
	}
	bool over_addr = o->max_conns_per_addr && same >= o->max_conns_per_addr;
	struct conn *shed = over_addr ? oldest_same : total >= max ? oldest : NULL;
	if (shed)
		conn_get(shed);
	pthread_mutex_unlock(&tp->lock);
	if (!over_addr && total < max)
		return true;
	if (!shed)
		return false;
	pn_core_log(tp->pn, "rdma: %s: closed to make room (max_conns or max_conns_per_addr): "
	            "it had not proved or been admitted", peer_name(shed));
	unsigned shed_here = pn_addr_same_host(&shed->remote, remote);
	conn_fail(shed, -PN_EPEERDOWN);
	conn_put(shed);
	/* the other limit may still be full: then the request is rejected all the same */
	return total - 1 < max && (!o->max_conns_per_addr || same - shed_here < o->max_conns_per_addr);
}

static void on_connect_request(struct pn_tp *tp, struct rdma_cm_id *id, const uint8_t *priv,
                               size_t priv_len)
{
	struct pn_addr remote;
	pn_addr_from_sockaddr(&remote, PN_S_RDMA, rdma_get_peer_addr(id));
	if (!conn_room(tp, &remote)) {
		char name[PN_NAME_LEN];
		pn_addr_name(&remote, name, sizeof name);
		pn_core_log(tp->pn, "rdma: %s: at max_conns or max_conns_per_addr (rejected)", name);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	struct conn *c = conn_alloc(tp, NULL);
	if (!c) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	c->id = id;
	id->context = c;
	c->opened_ns = pn_now_ns();
	c->idle_since_ns = c->opened_ns;
	c->remote = remote;
	pn_addr_name(&c->remote, c->rname, sizeof c->rname);
	const char *name = c->rname;
	if (hello_get(priv, priv_len, c, &c->claim, &c->hello_flags) != 0) {
		pn_core_count(tp->pn, PN_ST_BAD_FRAMES, 1);
		pn_core_log(tp->pn, "rdma: a connection request from %s without a valid HELLO "
		            "(rejected)", name);
		goto reject;
	}
	if (id->verbs != tp->ctx) {
		pn_core_log(tp->pn, "rdma: %s: request on device %s, not ours (rejected)",
		            name, ibv_get_device_name(id->verbs->device));
		goto reject;
	}
	if (pn_core_opts(tp->pn)->admit) {
		c->pending = true;         /* until a proof or admit lets it in (on_message) */
		tp->n_pending++;
	}
	if (c->hello_flags & PN_F_PROVE) {
		/* its claim waits for its proof: no peer until then (on_hello, on_auth) */
		if (tp->n_proving >= PROVING_MAX) {
			pn_core_log(tp->pn, "rdma: %s: %u connections are proving already (rejected)",
			            name, tp->n_proving);
			goto reject;
		}
		c->proving = true;
		tp->n_proving++;
	} else {
		/* It proves nothing: its claimed address is not believed.  It is known by this
		 * connection alone, replies to it go back on it, and nothing ever connects to
		 * where it says it listens. */
		if (!(c->peer = pn_core_peer_anon(tp->pn, &c->remote)))
			goto reject;
	}
	if (conn_setup(c))
		goto reject;
	uint8_t mine[PRIV_SESS_LEN];
	size_t mine_len = hello_put(mine, tp, c, 0, NULL);
	struct rdma_conn_param cp = { .private_data = mine, .private_data_len = (uint8_t)mine_len,
	                              .responder_resources = tp->rd_atom,
	                              .initiator_depth = tp->rd_atom,
	                              .retry_count = 7, .rnr_retry_count = 3 };
	if (rdma_accept(id, &cp)) {
		pn_core_log(tp->pn, "rdma: %s: rdma_accept: %s", name, strerror(errno));
		conn_fail(c, -PN_EPEERDOWN);
	}
	return;
reject:
	rdma_reject(id, NULL, 0);
	if (c->peer)
		pn_core_peer_retire(tp->pn, c->peer);
	proving_end(c);
	pending_end(c);
	c->failed = true;
	c->dead = true;
	conn_unlist(c);                    /* destroys the id too, when reaped */
}

/* A connection became usable: the first one to a peer carries our sends to it. */
static void on_established(struct conn *c, const uint8_t *priv, size_t priv_len)
{
	if (c->active) {
		struct pn_addr origin;
		uint8_t flags;
		if (hello_get(priv, priv_len, c, &origin, &flags) != 0) {
			pn_core_log(c->tp->pn, "rdma: %s: accepted without a valid HELLO", peer_name(c));
			pthread_mutex_lock(&c->lock);
			c->cm_err = -PN_EPROTO;
			pthread_cond_broadcast(&c->cond);
			pthread_mutex_unlock(&c->lock);
			return;
		}
	}
	pthread_mutex_lock(&c->lock);
	c->up = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (!c->active && c->peer)
		conn_attach(c, c->peer);   /* anonymous; one proving is attached when it ends */
}

static void on_cm_event(struct pn_tp *tp, struct rdma_cm_event *ev)
{
	/* copy what we need and acknowledge at once: rdma_destroy_id waits for the ack */
	enum rdma_cm_event_type type = ev->event;
	struct rdma_cm_id *id = ev->id;
	uint8_t priv[56];
	size_t priv_len = 0;
	if ((type == RDMA_CM_EVENT_CONNECT_REQUEST || type == RDMA_CM_EVENT_ESTABLISHED) &&
	    ev->param.conn.private_data) {
		priv_len = ev->param.conn.private_data_len;
		if (priv_len > sizeof priv)
			priv_len = sizeof priv;
		memcpy(priv, ev->param.conn.private_data, priv_len);
	}
	char reason[128];
	cm_reason(ev, reason, sizeof reason);
	rdma_ack_cm_event(ev);

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		on_connect_request(tp, id, priv, priv_len);
		return;
	}
	struct conn *c = id->context;
	if (!c) {                          /* the listening id */
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			pn_core_log(tp->pn, "rdma: the device went away: no new connections");
		return;
	}
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		pthread_mutex_lock(&c->lock);
		c->cm_step = (int)type + 1;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(c, priv, priv_len);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (c->active && !c->up) {
			int err = type == RDMA_CM_EVENT_REJECTED ? -PN_EREFUSED :
			          type == RDMA_CM_EVENT_UNREACHABLE ? -PN_ETIMEDOUT : -PN_EPEERDOWN;
			/* a refusal is an ordinary answer (nobody listens); the rest deserve a line */
			if (err != -PN_EREFUSED)
				pn_core_log(tp->pn, "rdma: %s: %s%s%s", peer_name(c), rdma_event_str(type),
				            *reason ? ": " : "", reason);
			pthread_mutex_lock(&c->lock);
			c->cm_err = err;
			pthread_cond_broadcast(&c->cond);
			pthread_mutex_unlock(&c->lock);
		} else {
			conn_fail(c, -PN_EPEERDOWN);
		}
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (c->active && !c->up) {
			pthread_mutex_lock(&c->lock);
			c->cm_err = -PN_EPEERDOWN;
			pthread_cond_broadcast(&c->cond);
			pthread_mutex_unlock(&c->lock);
		} else {
			conn_fail(c, -PN_EPEERDOWN);
		}
		break;
	default:                           /* TIMEWAIT_EXIT, ADDR_CHANGE, ...: nothing to do */
		break;
	}
}

static void on_cm_events(struct pn_tp *tp)
{
	struct rdma_cm_event *ev;
	while (rdma_get_cm_event(tp->ec, &ev) == 0)
		on_cm_event(tp, ev);
}

/* A wait on the I/O thread (an inline handler that sends, and must connect first) pumps the
 * thread's events itself: nobody else would.  Those events run handlers, which may send and
 * wait in turn, so the nesting follows the traffic: it is bounded, and a wait past the bound
 * fails (its send gets PN_EPEERDOWN) instead of going deeper.  0, or -PN_EPEERDOWN. */
#define PUMP_DEPTH_MAX 4
static _Thread_local unsigned pump_depth;

static int pump_events(struct pn_tp *tp, int ms)
{
	if (pump_depth >= PUMP_DEPTH_MAX)
		return -PN_EPEERDOWN;
	struct pollfd p[2] = { { tp->ec->fd, POLLIN, 0 }, { tp->comp->fd, POLLIN, 0 } };
	if (poll(p, 2, ms) <= 0)
		return 0;
	pump_depth++;
	if (p[0].revents)
		on_cm_events(tp);
	if (p[1].revents)
		on_cq_events(tp);
	pump_depth--;
	return 0;
}

/* Close the inbound connections that did not end their proof, or were not admitted, within
 * preauth_timeout_ms: what a connection may hold before it is let in is bounded in time as
 * in number (PROVING_MAX, max_conns).  I/O thread. */
static void sweep_proving(struct pn_tp *tp)
{
	enum { BATCH = 16 };
	uint64_t now = pn_now_ns(), limit = (uint64_t)pn_core_opts(tp->pn)->preauth_timeout_ms * 1000000u;
	struct conn *late[BATCH];
	unsigned n = 0;
	pthread_mutex_lock(&tp->lock);
	for (struct conn *c = tp->conns; c && n < BATCH; c = c->next)
		if (!c->failed && (((c->proving || c->pending) && now - c->opened_ns >= limit) ||
		                   (c->refused && now - c->refused_ns >= REFUSE_LINGER_MS * 1000000ull))) {
			conn_get(c);
			late[n++] = c;
		}
	pthread_mutex_unlock(&tp->lock);
	for (unsigned i = 0; i < n; i++) {
		bool refused = late[i]->refused;
		pn_core_log(tp->pn, "rdma: %s: %s within %u ms: closing the connection",
		            peer_name(late[i]), refused ? "refused, its answer not out" :
		            late[i]->proving ? "no proof" : "not admitted",
		            refused ? REFUSE_LINGER_MS : pn_core_opts(tp->pn)->preauth_timeout_ms);
		conn_fail(late[i], -PN_ETIMEDOUT);
		conn_put(late[i]);
	}
}

/* Close the inbound connections that received nothing for idle_timeout_ms, as over tcp.
 * Looked at every IDLE_SWEEP_MS, by the count of messages received (no clock read per
 * message): a connection is idle since the last sweep that saw its count move.  I/O
 * thread. */
static void sweep_idle(struct pn_tp *tp)
{
	enum { BATCH = 16 };
	uint64_t now = pn_now_ns(), limit = (uint64_t)pn_core_opts(tp->pn)->idle_timeout_ms * 1000000u;
	if (!limit || now - tp->idle_swept_ns < IDLE_SWEEP_MS * 1000000ull)
		return;
	tp->idle_swept_ns = now;
	struct conn *quiet[BATCH];
	unsigned n = 0;
	pthread_mutex_lock(&tp->lock);
	for (struct conn *c = tp->conns; c; c = c->next) {
		if (c->active || c->failed || c->n_held_wc)
			continue;                  /* (one waiting for rx_budget is not silent) */
		if (c->rx_posted != c->idle_mark) {
			c->idle_mark = c->rx_posted;
			c->idle_since_ns = now;
		} else if (now - c->idle_since_ns >= limit && n < BATCH) {
			conn_get(c);
			quiet[n++] = c;
		}
	}
	pthread_mutex_unlock(&tp->lock);
	for (unsigned i = 0; i < n; i++) {
		pn_core_log(tp->pn, "rdma: %s: silent for %u ms: closing the connection",
		            peer_name(quiet[i]), pn_core_opts(tp->pn)->idle_timeout_ms);
		conn_fail(quiet[i], -PN_ETIMEDOUT);
		conn_put(quiet[i]);
	}
}

static void *io_main(void *arg)
{
	pthread_setname_np(pthread_self(), "pn-rdma-io");   /* for top -H, ps -L, gdb */
	struct pn_tp *tp = arg;
	io_self = tp;
	while (!atomic_load(&tp->stop)) {
		struct pollfd p[3] = { { tp->ec->fd, POLLIN, 0 }, { tp->comp->fd, POLLIN, 0 },
		                       { tp->wakefd, POLLIN, 0 } };
		/* connections proving or not admitted are looked at every SWEEP_MS */
		int n = poll(p, 3, tp->n_proving || tp->n_pending ? SWEEP_MS : 1000);
		if (n > 0 && p[0].revents)
			on_cm_events(tp);
		if (n > 0 && p[1].revents)
			on_cq_events(tp);
		if (n > 0 && p[2].revents) {
			uint64_t v;
			if (read(tp->wakefd, &v, sizeof v) < 0) { /* drained */ }
		}
		if (tp->n_proving || tp->n_pending)
			sweep_proving(tp);
		if (tp->budget_head)
			budget_resume(tp);
		sweep_idle(tp);
		reap_zombies(tp);
	}
	/* Closing: end every connection, then keep taking completions until what was posted has
	 * flushed (bounded), so no waiting sender is left without its answer. */
	for (;;) {
		pthread_mutex_lock(&tp->lock);
		struct conn *c = tp->conns;
		for (; c && c->failed; c = c->next)
			;
		if (c)
			conn_get(c);
		pthread_mutex_unlock(&tp->lock);
		if (!c)
			break;
		conn_fail(c, -PN_ESHUTDOWN);
		conn_put(c);
	}
	budget_resume(tp);                 /* every connection failed: only drops the list */
	uint64_t deadline = pn_now_ns() + 2000000000u;
	while (atomic_load(&tp->n_waiting) > 0 && pn_now_ns() < deadline) {
		pump_events(tp, 20);
		reap_zombies(tp);
	}
	return NULL;
}

/* ---- open / close ---- */

static int rdma_open(struct pn *pn, struct pn_addr *self, struct pn_tp **out, char *err,
                     size_t errlen)
{
	/* Before anything that logs or opens a device file: is there an RDMA device at all? */
	int n_dev = 0;
	struct ibv_device **devs = ibv_get_device_list(&n_dev);
	if (devs)
		ibv_free_device_list(devs);
	if (!devs || n_dev == 0) {
		snprintf(err, errlen, "%s (ibv_get_device_list: %s; load a driver such as rdma_rxe)",
		         pn_strerror(PN_ENODEV), devs ? "none" : strerror(errno));
		return -PN_ENODEV;
	}
	struct pn_tp *tp = calloc(1, sizeof *tp);
	if (!tp) {
		snprintf(err, errlen, "out of memory");
		return -PN_ENOMEM;
	}
	tp->pn = pn;
	tp->wakefd = -1;
	const char *env = getenv("PN_RDMA_INLINE");
	tp->inline_max = env ? strtoull(env, NULL, 10) : INLINE_MAX;
	env = getenv("PN_RDMA_CUT_REPLIES");
	tp->cut_every = env ? (unsigned)strtoul(env, NULL, 10) : 0;
	env = getenv("PN_RDMA_FAIL_AFTER");
	tp->fail_after = env ? (unsigned)strtoul(env, NULL, 10) : 0;
	int rc = -PN_ESYS;

	tp->ec = rdma_create_event_channel();
	if (!tp->ec) {
		snprintf(err, errlen, "rdma_create_event_channel: %s", strerror(errno));
		goto err_tp;
	}
	if (rdma_create_id(tp->ec, &tp->listen, NULL, RDMA_PS_TCP)) {
		snprintf(err, errlen, "rdma_create_id: %s", strerror(errno));
		goto err_ec;
	}
	struct sockaddr_storage ss;
	pn_addr_to_sockaddr(self, &ss);
	char name[PN_NAME_LEN];
	pn_addr_name(self, name, sizeof name);
	if (rdma_bind_addr(tp->listen, (struct sockaddr *)&ss) || rdma_listen(tp->listen, 128)) {
		snprintf(err, errlen, "rdma_bind_addr/rdma_listen %s: %s", name, strerror(errno));
		goto err_id;
	}
	tp->ctx = tp->listen->verbs;
	if (!tp->ctx) {
		/* a wildcard address: use the first device */
		struct ibv_context **ctxs = rdma_get_devices(NULL);
		tp->ctx = ctxs ? ctxs[0] : NULL;
		if (ctxs)
			rdma_free_devices(ctxs);
	}
	if (!tp->ctx) {
		snprintf(err, errlen, "%s: no RDMA device has this address (rdma_cm needs the address "
		         "of an RDMA netdev; 127.0.0.1 does not work)", name);
		rc = -PN_ENODEV;
		goto err_id;
	}
	pn_addr_from_sockaddr(self, PN_S_RDMA, rdma_get_local_addr(tp->listen));
	tp->self = *self;
	struct ibv_device_attr da;
	if (ibv_query_device(tp->ctx, &da) == 0)
		tp->rd_atom = (uint8_t)(da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16);
	if (!(tp->pd = ibv_alloc_pd(tp->ctx))) {
		snprintf(err, errlen, "ibv_alloc_pd: %s", strerror(errno));
		goto err_id;
	}
	if (!(tp->comp = ibv_create_comp_channel(tp->ctx))) {
		snprintf(err, errlen, "ibv_create_comp_channel: %s", strerror(errno));
		goto err_pd;
	}
	/* the I/O thread polls both descriptors and reads until EAGAIN */
	fcntl(tp->ec->fd, F_SETFL, fcntl(tp->ec->fd, F_GETFL) | O_NONBLOCK);
	fcntl(tp->comp->fd, F_SETFL, fcntl(tp->comp->fd, F_GETFL) | O_NONBLOCK);
	if ((tp->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto err_comp;
	}
	tp->slots = calloc(N_SLOTS, sizeof *tp->slots);
	tp->free_slots = malloc(N_SLOTS * sizeof *tp->free_slots);
	if (!tp->slots || !tp->free_slots) {
		snprintf(err, errlen, "out of memory");
		rc = -PN_ENOMEM;
		goto err_slots;
	}
	for (uint32_t i = 0; i < N_SLOTS; i++)
		tp->free_slots[i] = N_SLOTS - 1 - i;
	tp->n_free_slots = N_SLOTS;
	pthread_mutex_init(&tp->lock, NULL);
	pthread_mutex_init(&tp->slot_lock, NULL);
	pthread_mutex_init(&tp->cache_lock, NULL);
	if (pthread_create(&tp->thread, NULL, io_main, tp) != 0) {
		snprintf(err, errlen, "rdma: pthread_create failed");
		goto err_locks;
	}
	*out = tp;
	return 0;

err_locks:
	pthread_mutex_destroy(&tp->cache_lock);
	pthread_mutex_destroy(&tp->slot_lock);
	pthread_mutex_destroy(&tp->lock);
err_slots:
	free(tp->free_slots);
	free(tp->slots);
	close(tp->wakefd);
err_comp:
	ibv_destroy_comp_channel(tp->comp);
err_pd:
	ibv_dealloc_pd(tp->pd);
err_id:
	rdma_destroy_id(tp->listen);
err_ec:
	rdma_destroy_event_channel(tp->ec);
err_tp:
	free(tp);
	return rc;
}

static void rdma_close(struct pn_tp *tp)
{
	atomic_store(&tp->stop, true);
	pn_signal_eventfd(tp->wakefd);
	pthread_join(tp->thread, NULL);
	/* Peer states drop their connections; then everything is freed in reverse order of open. */
	for (uint32_t slot = 0;; slot++) {
		struct pn_peer_rec *peer = pn_core_peer_slot(tp->pn, slot);
		if (!peer)
			break;
		struct rdma_peer *rp = peer->addr.scheme == PN_S_RDMA ? peer->tp_state : NULL;
		if (!rp)
			continue;
		if (rp->conn)
			conn_put(rp->conn);
		free(rp->t);
		pthread_cond_destroy(&rp->cond);
		pthread_mutex_destroy(&rp->lock);
		free(rp);
		peer->tp_state = NULL;
	}
	reap_zombies(tp);
	/* connections a thread still holds (a caller inside pn_send during pn_finalize) leak
	 * rather than vanish under it */
	for (struct mrc *e = tp->cache, *next; e; e = next) {
		next = e->next;
		ibv_dereg_mr(e->mr);
		free(e);
	}
	for (struct pn_mem *m = tp->exports, *next; m; m = next) {
		next = m->next;
		ibv_dereg_mr(m->mr);      /* not unexported by the caller: revoked and freed now */
		free(m);
	}
	pthread_mutex_destroy(&tp->cache_lock);
	pthread_mutex_destroy(&tp->slot_lock);
	pthread_mutex_destroy(&tp->lock);
	free(tp->free_slots);
	free(tp->slots);
	close(tp->wakefd);
	ibv_destroy_comp_channel(tp->comp);
	ibv_dealloc_pd(tp->pd);
	rdma_destroy_id(tp->listen);
	rdma_destroy_event_channel(tp->ec);
	free(tp);
}

const struct pn_transport pn_rdma_transport = {
	.scheme = "rdma",
	.scheme_id = PN_S_RDMA,
	.open = rdma_open,
	.close = rdma_close,
	.send = rdma_send,
	.release = rdma_release,
};

/* ---- one-sided access: pn_mem_* (pn.h) ----
 *
 * Handle, little-endian: u64 address, u64 length, u32 rkey, u8 access, u8 version 1,
 * u16 magic "PM".
 */

int pn_mem_export(struct pn *pn, void *buf, size_t len, int access, struct pn_mem **out,
                  uint8_t handle[PN_MEM_HANDLE_LEN])
{
	struct pn_tp *tp = pn_core_transport(pn, PN_S_RDMA);
	if (!tp)
		return -PN_ENOTRANSPORT;
	if (!buf || !len || (access & ~(PN_MEM_READ | PN_MEM_WRITE)) || !access)
		return -PN_EINVAL;
	struct pn_mem *m = calloc(1, sizeof *m);
	if (!m)
		return -PN_ENOMEM;
	int acc = IBV_ACCESS_LOCAL_WRITE;
	if (access & PN_MEM_READ)
		acc |= IBV_ACCESS_REMOTE_READ;
	if (access & PN_MEM_WRITE)
		acc |= IBV_ACCESS_REMOTE_WRITE;
	m->mr = ibv_reg_mr(tp->pd, buf, len, acc);
	if (!m->mr) {
		pn_core_log(pn, "rdma: ibv_reg_mr of %zu bytes for export: %s", len, strerror(errno));
		free(m);
		return -PN_ESYS;
	}
	put64(handle, (uintptr_t)buf);
	put64(handle + 8, len);
	put32(handle + 16, m->mr->rkey);
	handle[20] = (uint8_t)access;
	handle[21] = 1;
	put16(handle + 22, MEM_MAGIC);
	pthread_mutex_lock(&tp->lock);
	m->next = tp->exports;
	tp->exports = m;
	pthread_mutex_unlock(&tp->lock);
	*out = m;
	return 0;
}

void pn_mem_unexport(struct pn *pn, struct pn_mem *m)
{
	struct pn_tp *tp = pn_core_transport(pn, PN_S_RDMA);
	if (!m)
		return;
	if (tp) {
		pthread_mutex_lock(&tp->lock);
		for (struct pn_mem **p = &tp->exports; *p; p = &(*p)->next)
			if (*p == m) {
				*p = m->next;
				break;
			}
		pthread_mutex_unlock(&tp->lock);
	}
	if (m->mr)
		ibv_dereg_mr(m->mr);
	free(m);
}

/* One RDMA READ or WRITE of [off, off+len) of the peer's exported memory. */
static int mem_op(struct pn *pn, pn_peer to, const uint8_t *handle, uint64_t off, void *buf,
                  size_t len, bool write)
{
	struct pn_tp *tp = pn_core_transport(pn, PN_S_RDMA);
	struct pn_peer_rec *peer = pn_core_peer_at(pn, to);
	if (!tp || !peer || peer->addr.scheme != PN_S_RDMA)
		return -PN_ENOTRANSPORT;
	if (get16(handle + 22) != MEM_MAGIC || handle[21] != 1 || (len && !buf))
		return -PN_EINVAL;
	uint64_t base = get64(handle), hlen = get64(handle + 8);
	uint32_t rkey = get32(handle + 16);
	if (off > hlen || len > hlen - off || len > UINT32_MAX)
		return -PN_EINVAL;
	if (!(handle[20] & (write ? PN_MEM_WRITE : PN_MEM_READ)))
		return -PN_EACCESS;
	if (len == 0)
		return 0;
	struct conn *c;
	int rc = peer_conn(tp, peer, &c);
	if (rc)
		return rc;
	/* small: through a registered send slot; large: the caller's buffer, registered once */
	struct ibv_mr *mr = NULL;
	int s = -1;
	struct ibv_sge sge = { .length = (uint32_t)len };
	if (len <= SLOT_LEN) {
		if ((rc = acquire(c, false, true, &s)))
			goto out;
		sge.addr = (uintptr_t)slot_buf(c, (unsigned)s);
		sge.lkey = c->smr->lkey;
		if (write)
			memcpy(slot_buf(c, (unsigned)s), buf, len);
	} else {
		mr = ibv_reg_mr(tp->pd, buf, len, write ? 0 : IBV_ACCESS_LOCAL_WRITE);
		if (!mr) {
			pn_core_log(pn, "rdma: ibv_reg_mr of %zu bytes: %s", len, strerror(errno));
			rc = -PN_ESYS;
			goto out;
		}
		if ((rc = acquire(c, false, false, NULL)))
			goto out;
		sge.addr = (uintptr_t)buf;
		sge.lkey = mr->lkey;
	}
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
	                          .opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ };
	wr.wr.rdma.remote_addr = base + off;
	wr.wr.rdma.rkey = rkey;
	rc = post_wait(c, &wr, false, s);
	if (rc == 0 && s >= 0 && !write)
		memcpy(buf, slot_buf(c, (unsigned)s), len);
	if (rc == 0)
		pn_core_count(pn, PN_ST_RDMA_ONESIDED, 1);
out:
	if (s >= 0)
		free_slot(c, s);
	if (mr)
		ibv_dereg_mr(mr);
	conn_put(c);
	return rc;
}

int pn_mem_read(struct pn *pn, pn_peer peer, const uint8_t handle[PN_MEM_HANDLE_LEN],
                uint64_t off, void *dst, size_t len)
{
	return mem_op(pn, peer, handle, off, dst, len, false);
}

int pn_mem_write(struct pn *pn, pn_peer peer, const uint8_t handle[PN_MEM_HANDLE_LEN],
                 uint64_t off, const void *src, size_t len)
{
	return mem_op(pn, peer, handle, off, (void *)(uintptr_t)src, len, true);
}
