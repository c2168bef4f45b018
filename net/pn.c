/* pn.c: the Paradis-Net core: peers, handlers, Cooperations, forwarding and worker threads.
 *
 * A message arriving at a transport is offered to the core in two steps (pn_core_rx_begin /
 * rx_end, pn_int.h).  If it carries the token of one of our open Cooperations and a receive
 * descriptor accepts it, the payload is written straight into the descriptor's buffer and the
 * waiting thread is woken: no handler runs and nothing is copied again.  Otherwise it goes to
 * the handler of its type, which runs on a worker thread, never on the transport's I/O thread,
 * so handlers can take as long as they like and may block on nested Cooperations.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "pn_int.h"

static const char *const err_msgs[] = {
#define ERR(name, value, msg) [value] = msg,
#include "pn_err.def"
#undef ERR
};

const char *pn_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err >= PN_ECOUNT || !err_msgs[err])
		return "unknown error";
	return err_msgs[err];
}

uint64_t pn_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t pn_coarse_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void pn_signal_eventfd(int fd)
{
	uint64_t one = 1;
	if (write(fd, &one, sizeof one) < 0) { /* full: a wake is pending */ }
}

bool pn_lock_from_io(pthread_mutex_t *m, const atomic_bool *waiter_in)
{
	uint64_t until = 0;
	for (unsigned i = 0;; i++) {
		if (pthread_mutex_trylock(m) == 0)
			return true;
		if (atomic_load(waiter_in))
			return false;
		if ((i & 15) == 15) {      /* about 20 us, then the caller sleeps instead */
			uint64_t now = pn_now_ns();
			if (!until)
				until = now + 20000;
			else if (now >= until)
				return false;
		}
		__builtin_ia32_pause();
	}
}

/* ---- structures ---- */

enum { DESC_PENDING = 1, DESC_FILLING = 2 };   /* rcv_desc.status while open */

struct pn_coop_rec {
	pn_coop token;
	int wake_fd;               /* eventfd of a thread reading for it in wait_read, or -1 */
	pthread_t waiter;          /* that thread (it needs no wake-up when it completes it) */
	bool woken;                /* its eventfd was written */
	struct pn_rcv_desc *rcv;
	unsigned n, remaining;     /* descriptors not yet done */
	unsigned filling;          /* descriptors a transport is writing into right now */
	uint64_t start_ns;
	pthread_cond_t done;
	struct pn_coop_rec *next;  /* hash chain */
	uint32_t *sent_to;         /* peers requests went to, with counts, for peer_down */
	uint32_t *sent_count;      /* (point at the inline arrays until more peers are needed) */
	unsigned n_sent, cap_sent;
	uint32_t sent_to_inl[4], sent_count_inl[4];
	struct adv { uint32_t cookie; pn_peer to; } *adv;  /* per descriptor, NULL until a
	                            * transport advertised one (pn_core_coop_target); cookie 0: no */
};

/* A request of a session being handled: its reply goes to that slot without looking
 * the session up through the peer (pn_sess_reply_at). */
struct sess_req {
	bool on;
	uint32_t slot;
	uint8_t sid[PN_SID_LEN];
};

struct work {
	struct work *next;
	pn_peer from;
	pn_type type;
	pn_coop coop;
	struct pn_addr origin;
	pn_peer fwd_by;
	void *buf;
	size_t len;
	struct sess_req sr;
};

struct endpoint {
	const struct pn_transport *ops;
	struct pn_tp *tp;
	struct pn_addr self;
	char name[PN_NAME_LEN];
};

#define COOP_BUCKETS 256
#define COOP_SPARE_MAX 64

struct pn {
	struct pn_opts opts;
	struct pn_spin spin;       /* whether waits may poll first (pn_spin.c) */
	struct endpoint ep[PN_MAX_ENDPOINTS];
	unsigned n_ep;

	pthread_mutex_t lock;      /* peers, handlers, cooperations, the work queue */
	struct pn_peer_rec **peers;    /* by slot (pn_peer_slot of their id) */
	uint32_t n_peers, cap_peers;
	/* the peers not anonymous, found by address: a hash table (chained by next_named) whose
	 * hash is keyed with random bytes, since udp senders choose their source addresses */
	struct pn_peer_rec **named;
	uint32_t n_named, n_buckets;   /* n_buckets: a power of two, or 0 */
	uint64_t named_key[2];
	/* retired records per scheme, oldest first (pn_core_peer_retire): a record is reused
	 * only by a peer of its own scheme, whose transport state (tp_state) it keeps */
	struct pn_peer_rec *retired_head[PN_S_MAX + 1], *retired_tail[PN_S_MAX + 1];
	uint64_t quarantine_ns;
	uint32_t n_retired;
	/* handlers[0]: for the types that have none of their own (pn_set_handler) */
	struct { pn_handler *fn; void *arg; bool inline_; } handlers[PN_MAX_TYPE + 1];
	pn_peer_down_fn *peer_down_fn; /* pn_set_peer_down */
	void *peer_down_arg;
	struct pn_coop_rec *coops[COOP_BUCKETS];
	/* ended Cooperations' records, their conds still initialised, for the next ones: a
	 * pipelining client starts and ends one per request (at most COOP_SPARE_MAX kept) */
	struct pn_coop_rec *coop_spare;
	unsigned n_coop_spare;
	uint64_t next_token;
	uint64_t token_base;       /* next_token's start; set once in pn_init */

	struct work *q_head, *q_tail;
	pthread_cond_t q_cond;
	pthread_t *workers;
	unsigned n_workers;
	int stopping;
	atomic_bool held;          /* pn_opts.hold until pn_start */
	pthread_cond_t start_cond; /* ... which wakes the threads waiting in held_wait */
	int closing;               /* transports are closing: no more ops->release calls */
	unsigned releasing;        /* pn_coop_end calls inside ops->release right now */

	struct pn_sess *sess;      /* sessions, both sides (pn_sess.c) */
	uint8_t *key;              /* a copy of opts.cluster_key, or NULL */
	uint8_t *secret;           /* a copy of opts.secret, or NULL */
	uint8_t *admin;            /* a copy of opts.admin_secret, or NULL */
	struct pn_addr *udp_trusted;   /* opts.udp_trusted, parsed */
	unsigned n_udp_trusted;

	atomic_bool send_closed;   /* pn_finalize: sends fail with PN_ESHUTDOWN */
	_Atomic unsigned sending;  /* sends inside a transport right now */

	_Atomic uint64_t st_msgs_sent, st_bytes_sent, st_msgs_recv, st_bytes_recv, st_forwarded;
	_Atomic uint64_t st[PN_ST_COUNT];
	_Atomic uint64_t lat[PN_LAT_BUCKETS];
	_Atomic uint64_t drop_state;
	uint64_t drop_threshold;   /* drop when a random u64 falls below this */
};

/* Each thread that waits by reading (pn_coop_end with wait_read) gets an eventfd the core
 * signals when its Cooperation completes some other way; closed when the thread exits. */
static pthread_key_t wake_key;
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static void wake_close(void *p) { close((int)(intptr_t)p - 1); }
static void wake_init(void) { pthread_key_create(&wake_key, wake_close); }

static int thread_wake_fd(void)
{
	pthread_once(&wake_once, wake_init);
	intptr_t v = (intptr_t)pthread_getspecific(wake_key);
	if (v)
		return (int)v - 1;               /* stored +1, so that fd 0 is not "none" */
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd >= 0)
		pthread_setspecific(wake_key, (void *)(intptr_t)(fd + 1));
	return fd;
}

/* The message a worker thread is handling, for pn_forward. */
struct current {
	struct pn *pn;
	pn_coop coop;
	struct pn_addr origin;
	struct endpoint *inline_ep; /* an inline handler: the transport that read its message;
	                             * NULL on a worker, or once pn_yield freed the thread */
	pn_peer from;
	const struct sess_req *sr;  /* the message is a session's request (or NULL) */
	pn_peer fwd_by;             /* the member that forwarded it, or PN_ANY */
};
static _Thread_local struct current *current;

const struct pn_opts *pn_core_opts(struct pn *pn) { return &pn->opts; }
struct pn_spin *pn_core_spin(struct pn *pn) { return &pn->spin; }

void pn_core_count(struct pn *pn, enum pn_stat which, uint64_t n)
{
	atomic_fetch_add(&pn->st[which], n);
}

bool pn_core_drop(struct pn *pn)
{
	if (!pn->drop_threshold)
		return false;
	/* splitmix64 over an atomic counter: cheap, thread-safe, reproducible per endpoint */
	uint64_t z = atomic_fetch_add(&pn->drop_state, 0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	if (z >= pn->drop_threshold)
		return false;
	pn_core_count(pn, PN_ST_DROPPED, 1);
	return true;
}

/* ---- peers ---- */

/* An anonymous peer's record is reused once it has been retired this long: longer than
 * any send or handler could still be using the old peer (send_timeout_ms, runs' limits),
 * so its id, whose generation changes, can never reach the new peer in practice (it would
 * take 4096 reuses of one slot, each PEER_QUARANTINE_NS apart, while the old id is held). */
#define PEER_QUARANTINE_NS (60ull * 1000000000u)

/* A record for a new peer: a retired one past its quarantine (its slot, next generation),
 * else a new slot. */
static struct pn_peer_rec *peer_new_locked(struct pn *pn, uint8_t scheme)
{
	uint8_t sc = scheme <= PN_S_MAX ? scheme : 0;
	struct pn_peer_rec *r = pn->retired_head[sc];
	if (r && pn_now_ns() - r->retired_ns >= pn->quarantine_ns) {
		pn->retired_head[sc] = r->next_retired;
		if (!pn->retired_head[sc])
			pn->retired_tail[sc] = NULL;
		pn->n_retired--;
		uint32_t gen = ((r->id >> PN_PEER_SLOT_BITS) + 1) & PN_PEER_GEN_MASK;
		r->id = pn_peer_slot(r->id) | gen << PN_PEER_SLOT_BITS;
		r->retired = false;
		r->next_retired = NULL;
		r->proven = PN_PROOF_NONE;
		r->has_sid = false;
		r->pinned = false;
		/* tp_state stays: it is its scheme's (tcp: an anonymous peer's state, no
		 * connection now, serves the next one as it is; udp resets its own when it sees
		 * the new id) */
		return r;
	}
	if (pn->n_peers == PN_PEER_SLOTS)
		return NULL;
	if (pn->n_peers == pn->cap_peers) {
		uint32_t cap = pn->cap_peers ? 2 * pn->cap_peers : 16;
		struct pn_peer_rec **p = realloc(pn->peers, cap * sizeof *p);
		if (!p)
			return NULL;
		pn->peers = p;
		pn->cap_peers = cap;
	}
	r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->id = pn->n_peers;
	pn->peers[pn->n_peers++] = r;
	return r;
}

/* The bucket of address a (what pn_addr_eq compares, nothing else). */
static uint32_t named_bucket(const struct pn *pn, const struct pn_addr *a)
{
	uint64_t w0 = 0, w1 = 0;
	memcpy(&w0, a->addr, a->family == 6 ? 8 : 4);
	if (a->family == 6)
		memcpy(&w1, a->addr + 8, 8);
	uint64_t w2 = (uint64_t)a->scheme | (uint64_t)a->family << 8 | (uint64_t)a->port << 16;
	uint64_t h = (w0 ^ pn->named_key[0]) * 0x9e3779b97f4a7c15ull +
	             (w1 ^ pn->named_key[1]) * 0xc2b2ae3d27d4eb4full +
	             (w2 ^ (pn->named_key[0] >> 7)) * 0x165667b19e3779f9ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (uint32_t)h & (pn->n_buckets - 1);
}

static struct pn_peer_rec *named_find_locked(struct pn *pn, const struct pn_addr *a)
{
	if (!pn->n_buckets)
		return NULL;
	for (struct pn_peer_rec *r = pn->named[named_bucket(pn, a)]; r; r = r->next_named)
		if (pn_addr_eq(&r->addr, a))
			return r;
	return NULL;
}

/* Into the table, grown to keep chains short (a failed growth keeps the old table). */
static bool named_add_locked(struct pn *pn, struct pn_peer_rec *r)
{
	if (pn->n_named + 1 > 2 * pn->n_buckets) {
		uint32_t nb = pn->n_buckets ? 2 * pn->n_buckets : 64;
		struct pn_peer_rec **t = calloc(nb, sizeof *t);
		if (t) {
			struct pn_peer_rec **old = pn->named;
			uint32_t n_old = pn->n_buckets;
			pn->named = t;
			pn->n_buckets = nb;
			for (uint32_t i = 0; i < n_old; i++)
				for (struct pn_peer_rec *q = old[i], *nx; q; q = nx) {
					nx = q->next_named;
					uint32_t b = named_bucket(pn, &q->addr);
					q->next_named = t[b];
					t[b] = q;
				}
			free(old);
		} else if (!pn->n_buckets) {
			return false;
		}
	}
	uint32_t b = named_bucket(pn, &r->addr);
	r->next_named = pn->named[b];
	pn->named[b] = r;
	pn->n_named++;
	return true;
}

static void named_remove_locked(struct pn *pn, struct pn_peer_rec *r)
{
	if (!pn->n_buckets)
		return;
	for (struct pn_peer_rec **pp = &pn->named[named_bucket(pn, &r->addr)]; *pp;
	     pp = &(*pp)->next_named)
		if (*pp == r) {
			*pp = r->next_named;
			r->next_named = NULL;
			pn->n_named--;
			return;
		}
}

/* The peer with address a (anon: a new anonymous one, whatever its address). */
static struct pn_peer_rec *peer_find_locked(struct pn *pn, const struct pn_addr *a, bool anon)
{
	struct pn_peer_rec *r = anon ? NULL : named_find_locked(pn, a);
	if (r)
		return r;
	r = peer_new_locked(pn, a->scheme);
	if (!r)
		return NULL;
	r->addr = *a;
	r->anon = anon;
	r->has_claim = false;
	pn_addr_name(a, r->name, sizeof r->name);
	if (!anon && !named_add_locked(pn, r)) {
		/* no table at all (out of memory): the record waits for reuse */
		r->anon = true;
		r->retired = true;
		r->retired_ns = 0;
		uint8_t sc = a->scheme <= PN_S_MAX ? a->scheme : 0;
		r->next_retired = pn->retired_head[sc];
		pn->retired_head[sc] = r;
		if (!pn->retired_tail[sc])
			pn->retired_tail[sc] = r;
		pn->n_retired++;
		return NULL;
	}
	return r;
}

bool pn_core_peer_retire(struct pn *pn, struct pn_peer_rec *r)
{
	pthread_mutex_lock(&pn->lock);
	bool ok = !r->retired && (r->anon || !r->pinned);
	if (ok && !r->anon)
		named_remove_locked(pn, r);    /* the next datagram from there makes a new peer */
	if (ok) {
		uint8_t sc = r->addr.scheme <= PN_S_MAX ? r->addr.scheme : 0;
		r->retired = true;
		r->retired_ns = pn_now_ns();
		r->next_retired = NULL;
		if (pn->retired_tail[sc])
			pn->retired_tail[sc]->next_retired = r;
		else
			pn->retired_head[sc] = r;
		pn->retired_tail[sc] = r;
		pn->n_retired++;
	}
	pthread_mutex_unlock(&pn->lock);
	return ok;
}

struct pn_peer_rec *pn_core_peer_slot(struct pn *pn, uint32_t slot)
{
	pthread_mutex_lock(&pn->lock);
	struct pn_peer_rec *r = slot < pn->n_peers ? pn->peers[slot] : NULL;
	pthread_mutex_unlock(&pn->lock);
	return r;
}

struct pn_peer_rec *pn_core_peer(struct pn *pn, const struct pn_addr *a)
{
	pthread_mutex_lock(&pn->lock);
	struct pn_peer_rec *r = peer_find_locked(pn, a, false);
	pthread_mutex_unlock(&pn->lock);
	return r;
}

struct pn_peer_rec *pn_core_peer_known(struct pn *pn, const struct pn_addr *a)
{
	pthread_mutex_lock(&pn->lock);
	struct pn_peer_rec *r = named_find_locked(pn, a);
	pthread_mutex_unlock(&pn->lock);
	return r;
}

struct pn_peer_rec *pn_core_peer_anon(struct pn *pn, const struct pn_addr *a)
{
	pthread_mutex_lock(&pn->lock);
	struct pn_peer_rec *r = peer_find_locked(pn, a, true);
	pthread_mutex_unlock(&pn->lock);
	return r;
}

void pn_core_peer_claims(struct pn *pn, struct pn_peer_rec *peer, const struct pn_addr *claim)
{
	if (claim->scheme != peer->addr.scheme || claim->port == 0)
		return;
	pthread_mutex_lock(&pn->lock);
	peer->claim = *claim;
	peer->has_claim = true;
	pthread_mutex_unlock(&pn->lock);
}

/* Where the answer to a request of peer r is to go when another peer gives it: its own
 * address, or for an anonymous peer the listening address it claimed (pn_forward). */
static struct pn_addr reply_addr(const struct pn_peer_rec *r)
{
	return r->anon && r->has_claim ? r->claim : r->addr;
}

bool pn_core_udp_trusted(struct pn *pn, const struct pn_addr *a)
{
	for (unsigned i = 0; i < pn->n_udp_trusted; i++)
		if (pn_addr_eq(&pn->udp_trusted[i], a))
			return true;
	return false;
}

/* The key of that use and its length, or NULL. */
static const uint8_t *key_of(const struct pn *pn, enum pn_key which, size_t *len)
{
	switch (which) {
	case PN_KEY_CLUSTER: *len = pn->opts.cluster_key_len; return pn->key;
	case PN_KEY_SECRET:  *len = pn->opts.secret_len; return pn->secret;
	case PN_KEY_ADMIN:   *len = pn->opts.admin_secret_len; return pn->admin;
	}
	*len = 0;
	return NULL;
}

bool pn_core_has_key(struct pn *pn, enum pn_key which)
{
	size_t len;
	return key_of(pn, which, &len) != NULL;
}

bool pn_peer_proven(struct pn *pn, pn_peer peer)
{
	return pn_peer_proof(pn, peer) != PN_PROOF_NONE;
}

enum pn_proof pn_peer_proof(struct pn *pn, pn_peer peer)
{
	struct pn_peer_rec *r = pn_core_peer_at(pn, peer);
	return r ? (enum pn_proof)r->proven : PN_PROOF_NONE;
}

const char *const pn_label_acceptor[PN_KEY_ADMIN + 1] = {
	[PN_KEY_CLUSTER] = "pn acceptor", [PN_KEY_SECRET] = "pn secret acceptor",
	[PN_KEY_ADMIN] = "pn admin acceptor" };
const char *const pn_label_connector[PN_KEY_ADMIN + 1] = {
	[PN_KEY_CLUSTER] = "pn connector", [PN_KEY_SECRET] = "pn secret connector",
	[PN_KEY_ADMIN] = "pn admin connector" };

void pn_core_mac(struct pn *pn, enum pn_key which, const char *label,
                 const uint8_t nc[PN_NONCE_LEN], const uint8_t na[PN_NONCE_LEN],
                 const struct pn_addr *origin, uint8_t out[PN_MAC_LEN])
{
	/* label, both nonces (fresh on each side: a recorded exchange proves nothing later) and
	 * the claimed address (a proof for one address is no proof for another) */
	uint8_t msg[32 + 2 * PN_NONCE_LEN + 20] = { 0 };
	size_t ll = strlen(label);
	memcpy(msg, label, ll < 32 ? ll : 32);
	memcpy(msg + 32, nc, PN_NONCE_LEN);
	memcpy(msg + 32 + PN_NONCE_LEN, na, PN_NONCE_LEN);
	uint8_t *o = msg + 32 + 2 * PN_NONCE_LEN;
	o[0] = origin->scheme;
	o[1] = origin->family;
	memcpy(o + 2, &origin->port, 2);
	memcpy(o + 4, origin->addr, 16);
	unsigned len = PN_MAC_LEN;
	size_t klen;
	const uint8_t *key = key_of(pn, which, &klen);
	if (!key || !HMAC(EVP_sha256(), key, (int)klen, msg, sizeof msg, out, &len))
		memset(out, 0, PN_MAC_LEN);     /* matches no proof made with the key */
	OPENSSL_cleanse(msg, sizeof msg);
}

bool pn_core_mac_ok(struct pn *pn, enum pn_key which, const char *label,
                    const uint8_t nc[PN_NONCE_LEN], const uint8_t na[PN_NONCE_LEN],
                    const struct pn_addr *origin, const uint8_t got[PN_MAC_LEN])
{
	uint8_t want[PN_MAC_LEN];
	pn_core_mac(pn, which, label, nc, na, origin, want);
	bool ok = CRYPTO_memcmp(want, got, PN_MAC_LEN) == 0;   /* constant time */
	OPENSSL_cleanse(want, sizeof want);
	return ok;
}

int pn_core_challenge(struct pn *pn, enum pn_key which, const uint8_t nc[PN_NONCE_LEN],
                      const struct pn_addr *origin, uint8_t na[PN_NONCE_LEN],
                      uint8_t out[PN_NONCE_LEN + PN_MAC_LEN])
{
	if (getrandom(na, PN_NONCE_LEN, 0) != PN_NONCE_LEN)
		return -PN_ESYS;
	memcpy(out, na, PN_NONCE_LEN);
	pn_core_mac(pn, which, pn_label_acceptor[which], nc, na, origin, out + PN_NONCE_LEN);
	return 0;
}

/* pn_opts.hold: a transport's thread that has something for the application waits here
 * until pn_start (its connection waits with it, unread).  false: the endpoint is stopping
 * instead, and the message is to be dropped. */
static bool held_wait(struct pn *pn)
{
	if (!atomic_load_explicit(&pn->held, memory_order_acquire))
		return true;
	pthread_mutex_lock(&pn->lock);
	while (atomic_load(&pn->held) && !pn->stopping)
		pthread_cond_wait(&pn->start_cond, &pn->lock);
	bool go = !pn->stopping;
	pthread_mutex_unlock(&pn->lock);
	return go;
}

int pn_start(struct pn *pn)
{
	pthread_mutex_lock(&pn->lock);
	atomic_store(&pn->held, false);
	pthread_cond_broadcast(&pn->start_cond);
	pthread_mutex_unlock(&pn->lock);
	return 0;
}

int pn_core_admit(struct pn *pn, struct pn_peer_rec *from, pn_type type, const void *head,
                  size_t head_len, uint64_t len)
{
	if (!pn->opts.admit)
		return 1;
	if (!held_wait(pn))
		return 0;
	return pn->opts.admit(pn->opts.admit_arg, from ? from->id : PN_ANY, type, head, head_len, len) > 0;
}

void pn_core_refuse(struct pn *pn, struct pn_peer_rec *from, pn_type type, pn_coop coop,
                    const void *head, size_t head_len)
{
	if (pn->opts.refuse && held_wait(pn))
		pn->opts.refuse(pn->opts.admit_arg, from->id, type, coop, head, head_len);
}

/* (pn->lock held) */
static struct pn_peer_rec *peer_at_locked(struct pn *pn, pn_peer id)
{
	uint32_t slot = pn_peer_slot(id);
	struct pn_peer_rec *r = slot < pn->n_peers ? pn->peers[slot] : NULL;
	return r && r->id == id && !r->retired ? r : NULL;
}

struct pn_peer_rec *pn_core_peer_at(struct pn *pn, pn_peer id)
{
	pthread_mutex_lock(&pn->lock);
	struct pn_peer_rec *r = peer_at_locked(pn, id);
	pthread_mutex_unlock(&pn->lock);
	return r;
}

/* Whether id named a peer that is gone (its connection closed and it was retired). */
static bool peer_gone(struct pn *pn, pn_peer id)
{
	pthread_mutex_lock(&pn->lock);
	uint32_t slot = pn_peer_slot(id);
	bool gone = slot < pn->n_peers && !peer_at_locked(pn, id);
	pthread_mutex_unlock(&pn->lock);
	return gone;
}

int pn_peer_get(struct pn *pn, const char *name, pn_peer *out)
{
	struct pn_addr a;
	int rc = pn_addr_parse(name, &a, 1);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&pn->lock);
	struct pn_peer_rec *r = peer_find_locked(pn, &a, false);
	if (r)
		r->pinned = true;          /* the application holds its id: never retired */
	pthread_mutex_unlock(&pn->lock);
	if (!r)
		return -PN_ENOMEM;
	*out = r->id;
	return 0;
}

const char *pn_peer_name(struct pn *pn, pn_peer peer)
{
	struct pn_peer_rec *r = pn_core_peer_at(pn, peer);
	return r ? r->name : "?";
}

const char *pn_self(struct pn *pn, const char *scheme)
{
	for (unsigned i = 0; i < pn->n_ep; i++)
		if (!strcmp(pn->ep[i].ops->scheme, scheme))
			return pn->ep[i].name;
	return NULL;
}

static struct endpoint *endpoint_for(struct pn *pn, uint8_t scheme)
{
	for (unsigned i = 0; i < pn->n_ep; i++)
		if (pn->ep[i].ops->scheme_id == scheme)
			return &pn->ep[i];
	return NULL;
}

/* ---- handlers and workers ---- */

int pn_set_handler(struct pn *pn, pn_type type, int opt, pn_handler *fn, void *arg)
{
	if (type > PN_MAX_TYPE || (opt & ~PN_INLINE))
		return -PN_EINVAL;
	pthread_mutex_lock(&pn->lock);
	pn->handlers[type].fn = fn;
	pn->handlers[type].arg = arg;
	pn->handlers[type].inline_ = (opt & PN_INLINE) != 0;
	pthread_mutex_unlock(&pn->lock);
	return 0;
}

static void *worker_main(void *arg)
{
	pthread_setname_np(pthread_self(), "pn-worker");   /* for top -H, ps -L, gdb */
	struct pn *pn = arg;
	pthread_mutex_lock(&pn->lock);
	for (;;) {
		while (!pn->q_head && !pn->stopping)
			pthread_cond_wait(&pn->q_cond, &pn->lock);
		struct work *w = pn->q_head;
		if (!w)
			break;                     /* stopping and the queue is drained */
		pn->q_head = w->next;
		if (!pn->q_head)
			pn->q_tail = NULL;
		pn_type t = pn->handlers[w->type].fn ? w->type : 0;
		pn_handler *fn = pn->handlers[t].fn;
		void *harg = pn->handlers[t].arg;
		pthread_mutex_unlock(&pn->lock);
		if (fn) {
			struct current cur = { pn, w->coop, w->origin, NULL, w->from,
			                       w->sr.on ? &w->sr : NULL, w->fwd_by };
			current = &cur;
			fn(pn, w->from, w->type, w->coop, w->buf, w->len, harg);
			current = NULL;
		}
		free(w->buf);
		free(w);
		pthread_mutex_lock(&pn->lock);
	}
	pthread_mutex_unlock(&pn->lock);
	return NULL;
}

/* ---- cooperations ---- */

static struct pn_coop_rec **coop_slot(struct pn *pn, pn_coop token)
{
	struct pn_coop_rec **p = &pn->coops[(token ^ (token >> 17)) % COOP_BUCKETS];
	while (*p && (*p)->token != token)
		p = &(*p)->next;
	return p;
}

pn_coop pn_coop_start(struct pn *pn, struct pn_rcv_desc *rcv, unsigned n)
{
	if ((!rcv && n) || n > 1u << 20)
		return 0;
	pthread_mutex_lock(&pn->lock);
	if (pn->stopping) {
		pthread_mutex_unlock(&pn->lock);
		return 0;
	}
	struct pn_coop_rec *c = pn->coop_spare;
	if (c) {
		pn->coop_spare = c->next;
		pn->n_coop_spare--;
	} else {
		/* none spare: a new record, made outside the lock */
		pthread_mutex_unlock(&pn->lock);
		c = calloc(1, sizeof *c);
		if (!c)
			return 0;
		/* pn_coop_end computes its deadline on the monotonic clock; the cond must agree */
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->done, &ca);
		pthread_condattr_destroy(&ca);
		pthread_mutex_lock(&pn->lock);
		if (pn->stopping) {
			pthread_mutex_unlock(&pn->lock);
			pthread_cond_destroy(&c->done);
			free(c);
			return 0;
		}
	}
	/* every field but the cond is set here, as on a fresh record (coop_spare_locked left
	 * no heap arrays behind) */
	c->wake_fd = -1;
	c->woken = false;
	c->filling = 0;
	c->next = NULL;
	c->sent_to = c->sent_to_inl;
	c->sent_count = c->sent_count_inl;
	c->n_sent = 0;
	c->cap_sent = 4;
	c->adv = NULL;
	for (unsigned i = 0; i < n; i++) {
		rcv[i].status = DESC_PENDING;
		rcv[i].len = 0;
		rcv[i].got_from = PN_ANY;
	}
	c->rcv = rcv;
	c->n = c->remaining = n;
	c->start_ns = pn_now_ns();
	do    /* the low half counts, the high half stays token_base's (see coop_note_sent) */
		c->token = pn->token_base | (uint32_t)++pn->next_token;
	while (c->token == 0 || *coop_slot(pn, c->token));
	*coop_slot(pn, c->token) = c;
	pthread_mutex_unlock(&pn->lock);
	return c->token;
}

static void lat_record(struct pn *pn, uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = 0;
	while (us > 1 && b < PN_LAT_BUCKETS - 1) {
		us >>= 1;
		b++;
	}
	atomic_fetch_add(&pn->lat[b], 1);
}

/* Finish descriptor i of c with status st (lock held). */
static void desc_done_locked(struct pn *pn, struct pn_coop_rec *c, unsigned i, int st)
{
	c->rcv[i].status = st;
	if (__atomic_sub_fetch(&c->remaining, 1, __ATOMIC_RELEASE) == 0) {
		if (c->wake_fd >= 0 && !pthread_equal(c->waiter, pthread_self())) {
			/* the waiter polls a socket, not the cond: wake it through its eventfd */
			c->woken = true;
			pn_signal_eventfd(c->wake_fd);
		}
		lat_record(pn, pn_now_ns() - c->start_ns);
		pthread_cond_broadcast(&c->done);
	}
}

/* A record out of the table (nobody else reaches it any more) waits in coop_spare for the
 * next pn_coop_start unless enough wait there already (lock held; its arrays taken off
 * first: once spare, another thread may take it).  false: the caller destroys it. */
static bool coop_keep_locked(struct pn *pn, struct pn_coop_rec *c)
{
	if (pn->n_coop_spare >= COOP_SPARE_MAX || pn->stopping)
		return false;
	c->next = pn->coop_spare;
	pn->coop_spare = c;
	pn->n_coop_spare++;
	return true;
}

static void coop_free_arrays(struct pn_coop_rec *c)
{
	if (c->sent_to != c->sent_to_inl) {
		free(c->sent_to);
		free(c->sent_count);
	}
	free(c->adv);
}

int pn_coop_end(struct pn *pn, pn_coop token, int timeout_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	if (timeout_ms >= 0) {
		dl.tv_sec += timeout_ms / 1000;
		dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
		if (dl.tv_nsec >= 1000000000) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&pn->lock);
	struct pn_coop_rec **slot = coop_slot(pn, token), *c = *slot;
	if (!c) {
		pthread_mutex_unlock(&pn->lock);
		return -PN_ENOCOOP;
	}
	/* Waiting for one peer over a transport that lets us (tcp): read its replies in this
	 * thread, woken by their arrival as a blocking client is, instead of by the I/O thread
	 * through the condition variable below.  The record stays ours (only pn_coop_end frees
	 * it), so `remaining` may be read without the lock.  pn_finalize waits for us like for
	 * a send (pn->sending). */
	struct pn_peer_rec *only = c->n_sent == 1 ? peer_at_locked(pn, c->sent_to[0]) : NULL;
	struct endpoint *oep = only ? endpoint_for(pn, only->addr.scheme) : NULL;
	bool reader = c->remaining > 0 && oep && oep->ops->wait_read;
	/* When every descriptor accepts only that peer, nothing but its messages completes
	 * the wait (no forwarded reply from a third peer can): the reader needs no eventfd and
	 * may block in the transport's receive call, one system call less per round trip.
	 * (The exception, a reply on a second connection between the same two endpoints, is
	 * noticed within the transport's slice.) */
	bool only_from_it = reader;
	for (unsigned i = 0; only_from_it && i < c->n; i++)
		only_from_it = c->rcv[i].from == c->sent_to[0];
	int wfd = reader && !only_from_it ? thread_wake_fd() : -1;
	if (reader && (only_from_it || wfd >= 0)) {
		c->wake_fd = wfd;
		c->waiter = pthread_self();
		pthread_mutex_unlock(&pn->lock);
		atomic_fetch_add(&pn->sending, 1);
		uint64_t end = timeout_ms < 0 ? UINT64_MAX : pn_now_ns() + (uint64_t)timeout_ms * 1000000u;
		while (__atomic_load_n(&c->remaining, __ATOMIC_ACQUIRE) > 0 &&
		       !atomic_load(&pn->send_closed)) {
			uint64_t now = pn_now_ns();
			if (now >= end)
				break;
			uint64_t left_ms = (end - now + 999999) / 1000000;
			if (oep->ops->wait_read(oep->tp, only, wfd, left_ms > 1000 ? 1000 : (int)left_ms) < 0)
				break;                         /* someone else reads: sleep below */
		}
		atomic_fetch_sub(&pn->sending, 1);
		pthread_mutex_lock(&pn->lock);
		c->wake_fd = -1;
		uint64_t drain;                        /* leave the eventfd clear for next time */
		if (c->woken && wfd >= 0 && read(wfd, &drain, sizeof drain) < 0) { /* it was clear */ }
	if (c->remaining == 0)
			atomic_fetch_add_explicit(&pn->st[PN_ST_WAITS_READ], 1, memory_order_relaxed);
	}
	/* Replies may come on connections that a reading waiter left to waiters (tcp): have
	 * the transports' own threads read them before this thread sleeps. */
	if (c->remaining > 0)
		for (unsigned i = 0; i < pn->n_ep; i++)
			if (pn->ep[i].ops->kick)
				pn->ep[i].ops->kick(pn->ep[i].tp);
	/* Spin a little before sleeping: a reply on loopback or a fast network often arrives
	 * within microseconds, and waking a sleeping thread costs more than that. */
	uint64_t spin_start = c->remaining > 0 ? pn_now_ns() : 0;
	uint64_t spin_ns = spin_start ? pn_spin_budget(&pn->spin, PN_SPIN_REPLY, spin_start) : 0;
	if (spin_ns) {
		pthread_mutex_unlock(&pn->lock);
		uint64_t until = spin_start + spin_ns, now = spin_start;
		unsigned i = 0;
		while (__atomic_load_n(&c->remaining, __ATOMIC_ACQUIRE) > 0 &&
		       ((++i & 63) || (now = pn_now_ns()) < until))
			__builtin_ia32_pause();
		pn_spin_done(&pn->spin, PN_SPIN_REPLY,
		             __atomic_load_n(&c->remaining, __ATOMIC_ACQUIRE) == 0, now);
		pthread_mutex_lock(&pn->lock);
	}
	int rc = 0;
	if (c->remaining > 0)
		atomic_fetch_add_explicit(&pn->st[PN_ST_WAITS_WOKEN], 1, memory_order_relaxed);
	while (c->remaining > 0 && rc == 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&c->done, &pn->lock);
		else if (pthread_cond_timedwait(&c->done, &pn->lock, &dl) == ETIMEDOUT)
			rc = -PN_ETIMEDOUT;
		if (rc == -PN_ETIMEDOUT && c->remaining > 0 && pn_sess_client_on(pn->sess)) {
			/* an outage does not count: its session fails the request at its limit */
			pthread_mutex_unlock(&pn->lock);
			bool riding = pn_sess_riding(pn->sess, token);
			pthread_mutex_lock(&pn->lock);
			if (riding) {
				clock_gettime(CLOCK_MONOTONIC, &dl);
				dl.tv_nsec += 100000000;
				if (dl.tv_nsec >= 1000000000) {
					dl.tv_sec++;
					dl.tv_nsec -= 1000000000;
				}
				rc = 0;
			}
		}
	}
	/* A transport may be writing into a descriptor right now: wait for it to finish before
	 * handing the buffers back (bounded: the transfer ends or its connection fails). */
	while (c->filling > 0)
		pthread_cond_wait(&c->done, &pn->lock);
	for (unsigned i = 0; i < c->n; i++) {
		if (c->rcv[i].status == DESC_PENDING)
			c->rcv[i].status = -PN_ETIMEDOUT;
		if (rc == 0 && c->rcv[i].status < 0)
			rc = c->rcv[i].status;
	}
	*coop_slot(pn, token) = c->next;
	/* Transports that attached something to descriptors (rdma: a remote key for the buffer)
	 * take it back before the buffers return to the caller; pn_finalize waits for this. */
	bool release = c->adv && !pn->closing;
	if (release)
		pn->releasing++;
	/* Nothing to release (the usual case): the record goes spare now, under the lock held
	 * anyway; its arrays, taken off it first, are freed after the unlock. */
	bool heap = c->sent_to != c->sent_to_inl;
	uint32_t *sent_to = heap ? c->sent_to : NULL, *sent_count = heap ? c->sent_count : NULL;
	struct adv *adv = c->adv;
	bool kept = false;
	if (!release) {
		c->sent_to = c->sent_to_inl;
		c->sent_count = c->sent_count_inl;
		c->adv = NULL;
		kept = coop_keep_locked(pn, c);
	}
	pthread_mutex_unlock(&pn->lock);
	if (release) {
		for (unsigned i = 0; i < c->n; i++) {
			if (!c->adv[i].cookie)
				continue;
			struct pn_peer_rec *to = pn_core_peer_at(pn, c->adv[i].to);
			struct endpoint *ep = to ? endpoint_for(pn, to->addr.scheme) : NULL;
			if (ep && ep->ops->release)
				ep->ops->release(ep->tp, token, c->adv[i].cookie);
		}
		pthread_mutex_lock(&pn->lock);
		if (--pn->releasing == 0)
			pthread_cond_broadcast(&pn->q_cond);
		pthread_mutex_unlock(&pn->lock);
	}
	if (release) {
		coop_free_arrays(c);
		pthread_mutex_lock(&pn->lock);
		kept = coop_keep_locked(pn, c);
		pthread_mutex_unlock(&pn->lock);
	} else {
		free(sent_to);
		free(sent_count);
		free(adv);
	}
	if (!kept) {
		pthread_cond_destroy(&c->done);
		free(c);
	}
	if (pn_sess_client_on(pn->sess))
		pn_sess_coop_end(pn->sess, token);
	return rc;
}


/* Remember that a request of Cooperation token went to peer (for pn_core_peer_down). */
static void coop_note_sent(struct pn *pn, pn_coop token, pn_peer peer)
{
	/* Our tokens share their high half (pn_init): a reply carrying a peer's token is
	 * recognised without the lock. */
	if (token >> 32 != pn->token_base >> 32)
		return;
	pthread_mutex_lock(&pn->lock);
	struct pn_coop_rec *c = *coop_slot(pn, token);
	if (c) {
		unsigned i = 0;
		while (i < c->n_sent && c->sent_to[i] != peer)
			i++;
		if (i == c->n_sent && c->n_sent == c->cap_sent) {
			unsigned cap = 2 * c->cap_sent;
			uint32_t *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
			if (a && b) {
				memcpy(a, c->sent_to, c->n_sent * sizeof *a);
				memcpy(b, c->sent_count, c->n_sent * sizeof *b);
				if (c->sent_to != c->sent_to_inl) {
					free(c->sent_to);
					free(c->sent_count);
				}
				c->sent_to = a;
				c->sent_count = b;
				c->cap_sent = cap;
			} else {
				free(a);
				free(b);
			}
		}
		if (i < c->cap_sent) {
			if (i == c->n_sent) {
				c->sent_to[i] = peer;
				c->sent_count[i] = 0;
				c->n_sent++;
			}
			c->sent_count[i]++;
		}
	}
	pthread_mutex_unlock(&pn->lock);
}

/* Fail up to `count` pending descriptors of c that `peer` could still have filled: first those
 * advertised to it (rdma), then those naming it, then those open to anyone. */
static void coop_fail_from_locked(struct pn *pn, struct pn_coop_rec *c, pn_peer peer,
                                  unsigned count, int err)
{
	for (unsigned i = 0; c->adv && i < c->n && count; i++) {
		if (c->rcv[i].status == DESC_PENDING && c->adv[i].cookie && c->adv[i].to == peer) {
			desc_done_locked(pn, c, i, err);
			count--;
		}
	}
	for (unsigned i = 0; i < c->n && count; i++) {
		if (c->rcv[i].status == DESC_PENDING && c->rcv[i].from == peer) {
			desc_done_locked(pn, c, i, err);
			count--;
		}
	}
	for (unsigned i = 0; i < c->n && count; i++) {
		if (c->rcv[i].status == DESC_PENDING && c->rcv[i].from == PN_ANY) {
			desc_done_locked(pn, c, i, err);
			count--;
		}
	}
}

void pn_core_peer_down(struct pn *pn, struct pn_peer_rec *peer, int err)
{
	/* a session rides through it: its requests are sent again on the next connection;
	 * not through a peer that speaks TLS to a tcp: endpoint, which no wait will change */
	if (err != -PN_ETLS && pn->sess && pn_sess_peer_down(pn->sess, peer))
		return;
	pthread_mutex_lock(&pn->lock);
	for (unsigned b = 0; b < COOP_BUCKETS; b++)
		for (struct pn_coop_rec *c = pn->coops[b]; c; c = c->next)
			for (unsigned i = 0; i < c->n_sent; i++)
				if (c->sent_to[i] == peer->id)
					coop_fail_from_locked(pn, c, peer->id, c->sent_count[i], err);
	pn_peer_down_fn *fn = pn->peer_down_fn;
	void *arg = pn->peer_down_arg;
	pthread_mutex_unlock(&pn->lock);
	if (fn)
		fn(pn, peer->id, arg);
}

void pn_core_peer_gone(struct pn *pn, pn_peer peer)
{
	pthread_mutex_lock(&pn->lock);
	pn_peer_down_fn *fn = pn->stopping ? NULL : pn->peer_down_fn;
	void *arg = pn->peer_down_arg;
	pthread_mutex_unlock(&pn->lock);
	if (fn)
		fn(pn, peer, arg);
}

void pn_core_note_sent(struct pn *pn, pn_coop coop, pn_peer to)
{
	coop_note_sent(pn, coop, to);
}

void pn_core_coop_fail(struct pn *pn, pn_coop coop, pn_peer peer, int err)
{
	pthread_mutex_lock(&pn->lock);
	struct pn_coop_rec *c = *coop_slot(pn, coop);
	if (c)
		coop_fail_from_locked(pn, c, peer, 1, err);
	pthread_mutex_unlock(&pn->lock);
}

void pn_core_nack(struct pn *pn, struct pn_peer_rec *peer, pn_coop coop, const uint8_t *p,
                  size_t len)
{
	if (len != 4 || coop >> 32 != pn->token_base >> 32)
		return;                    /* not one of our tokens: nothing of ours to fail */
	uint32_t code = p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
	if (code == 0 || code >= PN_ECOUNT)
		code = PN_EPROTO;
	pn_peer from = pn_sess_client_on(pn->sess) ? pn_sess_alias(pn->sess, peer->id) : peer->id;
	pn_core_coop_fail(pn, coop, from, -(int)code);
}

void pn_core_session_bye(struct pn *pn, struct pn_peer_rec *peer)
{
	uint8_t sid[PN_SID_LEN];
	pthread_mutex_lock(&pn->lock);
	bool had = peer->has_sid;
	peer->has_sid = false;
	memcpy(sid, peer->sid, PN_SID_LEN);
	pthread_mutex_unlock(&pn->lock);
	if (had)
		pn_sess_drop(pn->sess, sid);
}

bool pn_core_session_block(struct pn *pn, struct pn_peer_rec *peer, uint8_t out[PN_SESS_BLOCK])
{
	return pn->sess && pn_sess_client_on(pn->sess) && pn_sess_block(pn->sess, peer->id, out);
}

unsigned pn_core_session_silent_ms(struct pn *pn, struct pn_peer_rec *peer)
{
	return pn->sess && pn_sess_client_on(pn->sess) ? pn_sess_silent_ms(pn->sess, peer->id) : 0;
}

void pn_core_session_bind(struct pn *pn, struct pn_peer_rec *peer,
                          const uint8_t b[PN_SESS_BLOCK])
{
	memcpy(peer->sid, b, PN_SID_LEN);
	const uint8_t *n = b + PN_SID_LEN;
	peer->sess_slots = n[0] | n[1] << 8 | n[2] << 16 | (uint32_t)n[3] << 24;
	peer->has_sid = true;
}

int pn_session_open(struct pn *pn, pn_peer peer, const struct pn_session_opts *o)
{
	struct pn_peer_rec *r = pn_core_peer_at(pn, peer);
	if (!r || r->anon)
		return -PN_EINVAL;
	if (r->addr.scheme == PN_S_UDP)
		return -PN_ENOTSUP;    /* (it has exactly-once delivery of its own, docs/udp.md) */
	return pn_sess_open(pn->sess, peer, o);
}

int pn_session_fallback(struct pn *pn, pn_peer peer, const char *fallback)
{
	pn_peer to;
	int rc = pn_peer_get(pn, fallback, &to);
	if (rc != 0)
		return rc;
	struct pn_peer_rec *r = pn_core_peer_at(pn, to);
	if (!r || !endpoint_for(pn, r->addr.scheme))
		return -PN_ENOTRANSPORT;
	return pn_sess_fallback(pn->sess, peer, to);
}

int pn_session_moved(struct pn *pn, pn_peer peer, pn_peer *via, char *why, size_t len)
{
	return pn_sess_moved(pn->sess, peer, via, why, len);
}

void pn_set_peer_down(struct pn *pn, pn_peer_down_fn *fn, void *arg)
{
	pthread_mutex_lock(&pn->lock);
	pn->peer_down_fn = fn;
	pn->peer_down_arg = arg;
	pthread_mutex_unlock(&pn->lock);
}

void pn_core_returned(struct pn *pn, struct pn_peer_rec *to, const struct pn_hdr *h, int err)
{
	pn_core_count(pn, PN_ST_RETURNED, 1);
	if (!h->coop || (h->flags & PN_F_FORWARDED))
		return;
	pthread_mutex_lock(&pn->lock);
	struct pn_coop_rec *c = *coop_slot(pn, h->coop);
	if (c)
		coop_fail_from_locked(pn, c, to->id, 1, err);
	pthread_mutex_unlock(&pn->lock);
}

/* ---- receiving ---- */

/* Whether descriptor d of c takes a reply h from peer `from`. */
static bool desc_takes(const struct pn_rcv_desc *d, const struct pn_hdr *h, pn_peer from)
{
	return d->status == DESC_PENDING && d->type == h->type && (d->from == PN_ANY || d->from == from);
}

/* The descriptor of c for reply h: want if it takes it, else the first that does, preferring
 * those no transport advertised (their buffer may be written remotely by another peer). */
static int desc_pick(struct pn_coop_rec *c, const struct pn_hdr *h, pn_peer from, int want)
{
	if (want >= 0 && (unsigned)want < c->n && desc_takes(&c->rcv[want], h, from))
		return want;
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < c->n; i++)
			if (desc_takes(&c->rcv[i], h, from) &&
			    (!c->adv || !c->adv[i].cookie) == (pass == 0))
				return (int)i;
	return -1;
}

/* A thread's spare buffer for the payload of a message to a handler: an inline handler's
 * message is read, handled and done on the reading thread, so the buffer it was read into
 * serves the next one instead of a malloc and a free per request.  Taken (the slot emptied)
 * while in use, so nested reads take their own; a queued message's buffer goes with it
 * (freed by free(), as any).  Freed when the thread exits (rx_spare_key's destructor). */
#define RX_SPARE_MAX (64u << 10)
struct rx_spare {
	void *p;
	size_t cap;
};
static _Thread_local struct rx_spare rx_spare;
static pthread_key_t rx_spare_key;
static pthread_once_t rx_spare_once = PTHREAD_ONCE_INIT;

static void rx_spare_free(void *arg)
{
	struct rx_spare *sp = arg;
	free(sp->p);
	sp->p = NULL;
	sp->cap = 0;
}

static void rx_spare_init(void)
{
	if (pthread_key_create(&rx_spare_key, rx_spare_free) != 0)
		rx_spare_key = (pthread_key_t)-1;   /* no destructor: buffers are not kept */
}

/* A buffer for len bytes (len > 0): the thread's spare when it is large enough. */
static void *rx_buf_get(size_t len, size_t *cap)
{
	if (rx_spare.p && rx_spare.cap >= len) {
		void *p = rx_spare.p;
		*cap = rx_spare.cap;
		rx_spare.p = NULL;
		rx_spare.cap = 0;
		return p;
	}
	void *p = malloc(len);
	*cap = p ? len : 0;
	return p;
}

/* Done with buf (of cap bytes): it becomes the thread's spare, or is freed. */
static void rx_buf_put(void *buf, size_t cap)
{
	if (!buf || cap > RX_SPARE_MAX || cap <= rx_spare.cap) {
		free(buf);
		return;
	}
	pthread_once(&rx_spare_once, rx_spare_init);
	if (rx_spare_key == (pthread_key_t)-1) {
		free(buf);
		return;
	}
	if (!rx_spare.p && pthread_getspecific(rx_spare_key) != &rx_spare)
		pthread_setspecific(rx_spare_key, &rx_spare);   /* once per thread: freed at exit */
	free(rx_spare.p);
	rx_spare.p = buf;
	rx_spare.cap = cap;
}

static void *rx_begin(struct pn *pn, struct pn_peer_rec *sender, const struct pn_hdr *h,
                      int want, struct pn_rx *rx)
{
	rx->h = *h;
	rx->from = sender;
	rx->via = sender->addr.scheme;
	rx->buf = NULL;
	rx->buf_cap = 0;
	rx->claim = -1;
	rx->coop = NULL;
	rx->fwd_by = PN_ANY;
	if (h->flags & PN_F_FORWARDED) {    /* the transport vouches for it (pn_int.h) */
		rx->from = pn_core_peer(pn, &h->origin);
		if (!rx->from)
			return NULL;
		rx->fwd_by = sender->id;
	}
	atomic_fetch_add(&pn->st_msgs_recv, 1);
	atomic_fetch_add(&pn->st_bytes_recv, h->len);
	pn_peer from = rx->from->id;
	if (pn_sess_client_on(pn->sess)) {
		pn_sess_alive(pn->sess, sender->id);
		/* a session that moved to its fallback: the reply fills a descriptor that names
		 * the session's own peer */
		from = pn_sess_alias(pn->sess, from);
	}
	if (h->coop && h->kind == PN_K_MSG) {
		pthread_mutex_lock(&pn->lock);
		struct pn_coop_rec *c = *coop_slot(pn, h->coop);
		int i = c ? desc_pick(c, h, from, want) : -1;
		if (i >= 0) {
			c->rcv[i].status = DESC_FILLING;
			c->filling++;
			rx->claim = i;
			rx->coop = c;
		}
		if (rx->claim >= 0) {
			struct pn_rcv_desc *d = &c->rcv[rx->claim];
			void *buf = NULL;
			if (!d->buf && h->len) {
				d->buf = malloc(h->len);     /* the caller frees it */
				d->cap = d->buf ? h->len : 0;
			}
			if (h->len <= d->cap)
				buf = d->buf;
			pthread_mutex_unlock(&pn->lock);
			/* too big for the descriptor: read into a bounce buffer, keep what fits */
			rx->buf = buf ? buf : (h->len ? malloc(h->len) : NULL);
			return rx->buf;
		}
		pthread_mutex_unlock(&pn->lock);
	}
	rx->buf = h->len ? rx_buf_get(h->len, &rx->buf_cap) : NULL;
	return rx->buf;
}

void *pn_core_rx_begin(struct pn *pn, struct pn_peer_rec *sender, const struct pn_hdr *h,
                       struct pn_rx *rx)
{
	return rx_begin(pn, sender, h, -1, rx);
}

void *pn_core_rx_begin_at(struct pn *pn, struct pn_peer_rec *sender, const struct pn_hdr *h,
                          unsigned idx, struct pn_rx *rx)
{
	return rx_begin(pn, sender, h, idx > INT32_MAX ? -1 : (int)idx, rx);
}

int pn_core_coop_target(struct pn *pn, pn_coop coop, struct pn_peer_rec *to, size_t min_cap,
                        uint32_t cookie, struct pn_target *t)
{
	int rc = -1;
	pthread_mutex_lock(&pn->lock);
	struct pn_coop_rec *c = coop ? *coop_slot(pn, coop) : NULL;
	if (c && !c->adv)
		c->adv = calloc(c->n, sizeof *c->adv);
	for (unsigned i = 0; c && c->adv && i < c->n && rc; i++) {
		struct pn_rcv_desc *d = &c->rcv[i];
		if (d->status == DESC_PENDING && d->buf && d->cap >= min_cap && !c->adv[i].cookie &&
		    (d->from == PN_ANY || d->from == to->id)) {
			c->adv[i] = (struct adv){ cookie, to->id };
			*t = (struct pn_target){ d->buf, d->cap, d->type, i };
			rc = 0;
		}
	}
	pthread_mutex_unlock(&pn->lock);
	return rc;
}

void pn_core_rx_end(struct pn *pn, struct pn_rx *rx, int status)
{
	const struct pn_hdr *h = &rx->h;
	if (rx->claim >= 0) {
		pthread_mutex_lock(&pn->lock);
		struct pn_coop_rec *c = rx->coop;
		struct pn_rcv_desc *d = &c->rcv[rx->claim];
		int st = status;
		if (st == 0 && h->len && !rx->buf)
			st = -PN_ENOMEM;
		if (st == 0 && rx->buf != d->buf) {
			/* bounce buffer: the reply did not fit the descriptor */
			if (rx->buf && d->buf)
				memcpy(d->buf, rx->buf, d->cap);
			free(rx->buf);
			d->len = d->cap;
			st = -PN_ETRUNC;
		} else if (st == 0) {
			d->len = h->len;
		} else if (rx->buf != d->buf) {
			free(rx->buf);
		}
		if (st != 0 && st != -PN_ETRUNC) {
			/* the transfer failed: the descriptor may still be filled by a retry */
			d->status = DESC_PENDING;
		} else {
			d->got_from = rx->from->id;
			desc_done_locked(pn, c, (unsigned)rx->claim, st);
		}
		c->filling--;
		if (c->filling == 0)
			pthread_cond_broadcast(&c->done);
		pthread_mutex_unlock(&pn->lock);
		return;
	}
	if (status != 0 || (h->kind != PN_K_MSG && h->kind != PN_K_SREQ) || !held_wait(pn)) {
		free(rx->buf);
		return;
	}
	/* a request of a session: a repeat is answered (or refused) here, not run again */
	struct sess_req sr = { .on = false };
	if (h->kind == PN_K_SREQ) {
		if (pn_sess_request(pn->sess, rx->from, h) != 0) {
			free(rx->buf);
			return;
		}
		sr.on = true;
		sr.slot = h->slot;
		memcpy(sr.sid, rx->from->sid, PN_SID_LEN);
	}
	/* The work record is built on the stack: an inline handler (arfd's) runs it from
	 * there, and only a queued one is copied to the heap. */
	/* (no lock: an anonymous peer's claim is set before its connection is attached, so
	 * before any of its messages is delivered, and stays until the record is reused) */
	struct pn_addr origin = reply_addr(rx->from);
	struct work wk = { .from = rx->from->id, .type = h->type, .coop = h->coop,
	                   .origin = origin, .fwd_by = rx->fwd_by, .buf = rx->buf, .len = h->len,
	                   .sr = sr };
	pthread_mutex_lock(&pn->lock);
	pn_type t = pn->handlers[h->type].fn ? h->type : 0;
	if (!pn->handlers[t].fn || pn->stopping) {
		/* no handler: a late reply of an ended Cooperation, or a type nobody serves.  A
		 * session's request is refused instead of dropped: its slot says it runs, so its
		 * client would wait for a reply that never comes, and every repeat with it
		 * (not while stopping: the client sends it again to the server's successor) */
		bool refuse = wk.sr.on && !pn->stopping;
		pthread_mutex_unlock(&pn->lock);
		if (refuse)
			pn_sess_unrun(pn->sess, wk.sr.sid, wk.sr.slot, wk.from, wk.coop, PN_ENOHANDLER);
		free(wk.buf);
		return;
	}
	if (pn->handlers[t].inline_) {
		pn_handler *fn = pn->handlers[t].fn;
		void *harg = pn->handlers[t].arg;
		pthread_mutex_unlock(&pn->lock);
		struct current cur = { pn, wk.coop, wk.origin, endpoint_for(pn, rx->via), wk.from,
		                       wk.sr.on ? &wk.sr : NULL, wk.fwd_by };
		struct current *saved = current;
		/* read before the handler: one that yields (pn_yield) may let its connection,
		 * and rx with it, go to another thread */
		size_t buf_cap = rx->buf_cap;
		current = &cur;
		fn(pn, wk.from, wk.type, wk.coop, wk.buf, wk.len, harg);
		current = saved;
		rx_buf_put(wk.buf, buf_cap);
		return;
	}
	/* queued for a worker: copied to the heap still under the lock, so that the checks
	 * above (handler, stopping) hold when it is queued */
	struct work *w = malloc(sizeof *w);
	if (!w) {
		pthread_mutex_unlock(&pn->lock);
		free(wk.buf);
		return;
	}
	*w = wk;
	if (pn->q_tail)
		pn->q_tail->next = w;
	else
		pn->q_head = w;
	pn->q_tail = w;
	pthread_cond_signal(&pn->q_cond);
	pthread_mutex_unlock(&pn->lock);
}

/* ---- sending ---- */

static int send_frame(struct pn *pn, pn_peer to, struct pn_hdr *h, const void *msg, size_t len)
{
	if (len > pn->opts.max_msg)
		return -PN_ETOOBIG;
	if (len && !msg)
		return -PN_EINVAL;
	struct pn_peer_rec *peer = pn_core_peer_at(pn, to);
	if (!peer)
		return peer_gone(pn, to) ? -PN_EPEERDOWN : -PN_EINVAL;
	struct endpoint *ep = endpoint_for(pn, peer->addr.scheme);
	if (!ep)
		return -PN_ENOTRANSPORT;
	if (!(h->flags & PN_F_FORWARDED))
		h->origin = ep->self;
	h->len = (uint32_t)len;
	/* pn_finalize waits for sends under way before it closes the transports */
	atomic_fetch_add(&pn->sending, 1);
	if (atomic_load(&pn->send_closed)) {
		atomic_fetch_sub(&pn->sending, 1);
		return -PN_ESHUTDOWN;
	}
	/* counted before the bytes leave: the answer may arrive before send returns */
	atomic_fetch_add(&pn->st_msgs_sent, 1);
	atomic_fetch_add(&pn->st_bytes_sent, len);
	int rc = ep->ops->send(ep->tp, peer, h, msg, len);
	if (rc != 0) {
		atomic_fetch_sub(&pn->st_msgs_sent, 1);
		atomic_fetch_sub(&pn->st_bytes_sent, len);
	}
	atomic_fetch_sub(&pn->sending, 1);
	return rc;
}

int pn_core_send_hdr(struct pn *pn, pn_peer to, struct pn_hdr *h, const void *msg, size_t len)
{
	return send_frame(pn, to, h, msg, len);
}

/* A reply to a request of a session that `to` holds with us: kept in the session, and sent
 * to its newest connection.  1 (sent, or kept for the repeat), 0: no such request. */
static int reply_session(struct pn *pn, pn_peer to, pn_type type, pn_coop coop, const void *msg,
                         size_t len)
{
	pn_peer route;
	struct current *cur = current;
	if (cur && cur->pn == pn && cur->sr && cur->coop == coop && cur->from == to) {
		/* the handler of the request answers it: we know its session and slot */
		int r = pn_sess_reply_at(pn->sess, cur->sr->sid, cur->sr->slot, to, type, coop, msg,
		                         len, &route);
		if (r == 0)
			return 0;
		goto send;
	}
	uint8_t sid[PN_SID_LEN];
	bool has = false;
	pthread_mutex_lock(&pn->lock);
	/* retired too: the connection a request came on may be gone, its session not */
	uint32_t slot = pn_peer_slot(to);
	struct pn_peer_rec *r = slot < pn->n_peers ? pn->peers[slot] : NULL;
	if (r && r->id == to && r->has_sid) {
		memcpy(sid, r->sid, PN_SID_LEN);
		has = true;
	}
	pthread_mutex_unlock(&pn->lock);
	if (!has || !pn_sess_reply(pn->sess, sid, to, type, coop, msg, len, &route))
		return 0;
send:;
	struct pn_hdr h = { .kind = PN_K_MSG, .type = type, .coop = coop };
	send_frame(pn, route, &h, msg, len);   /* lost: the client asks again, and gets it */
	return 1;
}

int pn_send(struct pn *pn, pn_peer to, pn_type type, pn_coop coop, const void *msg, size_t len)
{
	return pn_send_ex(pn, to, type, coop, msg, len, 0);
}

int pn_send_ex(struct pn *pn, pn_peer to, pn_type type, pn_coop coop, const void *msg,
               size_t len, unsigned flags)
{
	if (type == 0 || type > PN_MAX_TYPE)
		return -PN_EINVAL;
	bool ours = coop >> 32 == pn->token_base >> 32;   /* a request, not a reply */
	if (coop && ours && pn_sess_client_on(pn->sess)) {
		int r = pn_sess_send(pn->sess, to, type, coop, msg, len, flags);
		if (r != 1)
			return r;
	}
	if (coop && !ours && pn_sess_server_on(pn->sess) && len <= pn->opts.max_msg &&
	    reply_session(pn, to, type, coop, msg, len))
		return 0;
	struct pn_hdr h = { .kind = PN_K_MSG, .type = type, .coop = coop };
	if (coop)
		coop_note_sent(pn, coop, to);
	int rc = send_frame(pn, to, &h, msg, len);
	if (rc != 0 && coop) {
		/* the request never left: its Cooperation must not wait for an answer to it */
		pthread_mutex_lock(&pn->lock);
		struct pn_coop_rec *c = *coop_slot(pn, coop);
		if (c)
			coop_fail_from_locked(pn, c, to, 1, rc);
		pthread_mutex_unlock(&pn->lock);
	}
	return rc;
}

int pn_forward(struct pn *pn, pn_peer to, pn_type type, const void *msg, size_t len)
{
	struct current *cur = current;
	if (!cur || cur->pn != pn)
		return -PN_ENOTHANDLER;
	if (type == 0 || type > PN_MAX_TYPE)
		return -PN_EINVAL;
	struct pn_hdr h = { .kind = PN_K_MSG, .type = type, .flags = PN_F_FORWARDED,
	                    .coop = cur->coop, .origin = cur->origin };
	/* counted before it leaves, as in send_frame: the reply may reach the origin first */
	atomic_fetch_add(&pn->st_forwarded, 1);
	int rc = send_frame(pn, to, &h, msg, len);
	if (rc != 0)
		atomic_fetch_sub(&pn->st_forwarded, 1);
	return rc;
}

int pn_forward_for(struct pn *pn, pn_peer origin, pn_coop coop, pn_peer to, pn_type type,
                   const void *msg, size_t len)
{
	if (type == 0 || type > PN_MAX_TYPE || !coop)
		return -PN_EINVAL;
	struct pn_peer_rec *o = pn_core_peer_at(pn, origin);
	if (!o)
		return peer_gone(pn, origin) ? -PN_EPEERDOWN : -PN_EINVAL;
	pthread_mutex_lock(&pn->lock);
	bool known = !o->anon || o->has_claim;
	struct pn_addr a = reply_addr(o);
	pthread_mutex_unlock(&pn->lock);
	if (!known)
		return -PN_EINVAL;         /* no address the next peer could answer at */
	struct pn_hdr h = { .kind = PN_K_MSG, .type = type, .flags = PN_F_FORWARDED,
	                    .coop = coop, .origin = a };
	atomic_fetch_add(&pn->st_forwarded, 1);
	int rc = send_frame(pn, to, &h, msg, len);
	if (rc != 0)
		atomic_fetch_sub(&pn->st_forwarded, 1);
	return rc;
}

pn_peer pn_forwarded_by(struct pn *pn)
{
	struct current *cur = current;
	return cur && cur->pn == pn ? cur->fwd_by : PN_ANY;
}

/* The transport of the inline handler running on this thread, if it can hand its reading
 * over (or -PN_E*). */
static int yield_via(struct pn *pn, struct endpoint **ep)
{
	struct current *cur = current;
	if (!cur || cur->pn != pn)
		return -PN_ENOTHANDLER;
	*ep = cur->inline_ep;
	if (!*ep)
		return 0;                  /* a worker thread (or yielded already): free to block */
	return (*ep)->ops->yield ? 1 : -PN_ENOTSUP;
}

static void cork_all(struct pn *pn, bool on)
{
	for (unsigned i = 0; i < pn->n_ep; i++)
		if (pn->ep[i].ops->cork)
			pn->ep[i].ops->cork(pn->ep[i].tp, on);
}

void pn_cork(struct pn *pn) { cork_all(pn, true); }
void pn_uncork(struct pn *pn) { cork_all(pn, false); }

static int yield_do(struct pn *pn, bool check_only)
{
	struct endpoint *ep;
	int rc = yield_via(pn, &ep);
	if (rc <= 0)
		return rc;
	rc = ep->ops->yield(ep->tp, check_only);
	if (rc >= 0 && !check_only)
		current->inline_ep = NULL;  /* whatever it blocks on now delays nobody */
	return rc > 0 ? 0 : rc;
}

/* peer's record and the endpoint of its transport, for pn_link_rate and pn_link_rx_rate: 0,
 * or why not */
static int link_of(struct pn *pn, pn_peer peer, struct pn_peer_rec **p, struct endpoint **ep)
{
	*p = pn_core_peer_at(pn, peer);
	if (!*p)
		return peer_gone(pn, peer) ? -PN_EPEERDOWN : -PN_EINVAL;
	*ep = endpoint_for(pn, (*p)->addr.scheme);
	return *ep ? 0 : -PN_ENOTRANSPORT;
}

int pn_link_rate(struct pn *pn, pn_peer peer, uint64_t *bytes_per_s, bool *limited)
{
	*bytes_per_s = 0;
	*limited = true;
	struct pn_peer_rec *p;
	struct endpoint *ep;
	int rc = link_of(pn, peer, &p, &ep);
	if (rc != 0)
		return rc;
	return ep->ops->link_rate ? ep->ops->link_rate(ep->tp, p, bytes_per_s, limited) :
	                            -PN_ENOTSUP;
}

int pn_link_rx_rate(struct pn *pn, pn_peer peer, uint64_t *bytes_per_s)
{
	*bytes_per_s = 0;
	struct pn_peer_rec *p;
	struct endpoint *ep;
	int rc = link_of(pn, peer, &p, &ep);
	if (rc != 0)
		return rc;
	return ep->ops->link_rx_rate ? ep->ops->link_rx_rate(ep->tp, p, bytes_per_s) : -PN_ENOTSUP;
}

int pn_may_yield(struct pn *pn) { return yield_do(pn, true); }
int pn_yield(struct pn *pn) { return yield_do(pn, false); }

void pn_stats_get(struct pn *pn, struct pn_stats *s)
{
	memset(s, 0, sizeof *s);
	s->msgs_sent = pn->st_msgs_sent;
	s->bytes_sent = pn->st_bytes_sent;
	s->msgs_recv = pn->st_msgs_recv;
	s->bytes_recv = pn->st_bytes_recv;
	s->forwarded = pn->st_forwarded;
	s->retransmits = pn->st[PN_ST_RETRANSMITS];
	s->duplicates = pn->st[PN_ST_DUPLICATES];
	s->returned = pn->st[PN_ST_RETURNED];
	s->dropped = pn->st[PN_ST_DROPPED];
	s->bad_frames = pn->st[PN_ST_BAD_FRAMES];
	s->rdma_replies_in = pn->st[PN_ST_RDMA_REPLIES_IN];
	s->rdma_replies_out = pn->st[PN_ST_RDMA_REPLIES_OUT];
	s->rdma_onesided = pn->st[PN_ST_RDMA_ONESIDED];
	s->udp_refused = pn->st[PN_ST_UDP_REFUSED];
	s->rx_waits = pn->st[PN_ST_RX_WAITS];
	for (int r = 0; r < PN_SPIN_ROLES; r++) {
		s->polls_found += atomic_load(&pn->spin.role[r].hits);
		s->polls_wasted += atomic_load(&pn->spin.role[r].wasted);
	}
	s->polls_denied_load = atomic_load(&pn->spin.denied[PN_SPIN_DENIED_LOAD]);
	s->polls_denied_resting = atomic_load(&pn->spin.denied[PN_SPIN_DENIED_RESTING]);
	s->polls_denied_busy = atomic_load(&pn->spin.denied[PN_SPIN_DENIED_BUSY]);
	s->spin_looks = atomic_load(&pn->spin.looks);
	s->spin_full_looks = atomic_load(&pn->spin.full_looks_seen);
	s->spin_follows = atomic_load(&pn->spin.follows);
	s->waits_read = pn->st[PN_ST_WAITS_READ];
	s->waits_woken = pn->st[PN_ST_WAITS_WOKEN];
	s->udp_bad_macs = pn->st[PN_ST_UDP_BAD_MACS];
	for (int i = 0; i < PN_LAT_BUCKETS; i++)
		s->coop_lat[i] = pn->lat[i];
	pthread_mutex_lock(&pn->lock);
	s->peers = pn->n_peers;
	s->peers_retired = pn->n_retired;
	pthread_mutex_unlock(&pn->lock);
	if (pn->sess)
		pn_sess_stats(pn->sess, s);
}

/* ---- life cycle ---- */

struct pn_tp *pn_core_transport(struct pn *pn, uint8_t scheme)
{
	struct endpoint *ep = endpoint_for(pn, scheme);
	return ep ? ep->tp : NULL;
}

void pn_core_log(struct pn *pn, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (pn->opts.log)
		pn->opts.log(pn->opts.log_arg, msg);
	else
		fprintf(stderr, "pn: %s\n", msg);
}

static const struct pn_transport *const transports[] = { &pn_tcp_transport, &pn_udp_transport,
                                                         &pn_rdma_transport, &pn_tls_transport };

struct pn *pn_init(const char *const *listen, unsigned n, const struct pn_opts *opts, char *err,
                   size_t errlen)
{
	if (n > PN_MAX_ENDPOINTS) {
		snprintf(err, errlen, "at most %d endpoints", PN_MAX_ENDPOINTS);
		return NULL;
	}
	struct pn *pn = calloc(1, sizeof *pn);
	if (!pn) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (opts)
		pn->opts = *opts;
	struct pn_opts *o = &pn->opts;
	if (!o->n_workers) o->n_workers = 4;
	if (!o->max_msg) o->max_msg = 256u << 20;
	if (o->max_msg > UINT32_MAX) o->max_msg = UINT32_MAX;
	if (!o->connect_timeout_ms) o->connect_timeout_ms = 3000;
	if (!o->send_timeout_ms) o->send_timeout_ms = 10000;
	if (!o->udp_depth) o->udp_depth = 16;
	if (!o->udp_max_peers) o->udp_max_peers = 4096;
	if (!o->udp_preauth_peers) o->udp_preauth_peers = 1024;
	if (!o->udp_idle_ms) o->udp_idle_ms = 60000;
	if (!o->peer_quarantine_ms) o->peer_quarantine_ms = 60000;
	if (!o->udp_max_wait_ms) o->udp_max_wait_ms = 5000;
	/* from the environment, so every program over Paradis-Net (arf's commands, tests)
	 * can speak tls: without an option of its own */
	if (!o->tls_cert) o->tls_cert = getenv("PN_TLS_CERT");
	if (!o->tls_key) o->tls_key = getenv("PN_TLS_KEY");
	if (!o->tls_ca) o->tls_ca = getenv("PN_TLS_CA");
	const char *spin = getenv("PN_SPIN_US");
	if (spin && !o->spin_us)
		o->spin_us = (unsigned)strtoul(spin, NULL, 10);
	if (!o->spin_us) o->spin_us = 50;
	pn->quarantine_ns = o->peer_quarantine_ms ? o->peer_quarantine_ms * 1000000ull :
	                    PEER_QUARANTINE_NS;
	if (o->spin_us > 100000) o->spin_us = 0;          /* "a lot" means never spin */
	pn_spin_init(&pn->spin, o->spin_us);
	const char *env = getenv("PN_DROP");
	if (env && !o->drop_rate)
		o->drop_rate = strtod(env, NULL);
	if (!o->preauth_max) o->preauth_max = 4096;
	if (!o->preauth_timeout_ms) o->preauth_timeout_ms = 10000;
	if (o->cluster_key_len > 0 && o->cluster_key) {
		if (o->cluster_key_len > 1024 || !(pn->key = malloc(o->cluster_key_len))) {
			snprintf(err, errlen, "cluster key: %s", o->cluster_key_len > 1024 ?
			         "longer than 1024 bytes" : "out of memory");
			free(pn);
			return NULL;
		}
		memcpy(pn->key, o->cluster_key, o->cluster_key_len);
	}
	o->cluster_key = pn->key;
	if (!pn->key)
		o->cluster_key_len = 0;
	if (o->secret_len > 0 && o->secret) {
		if (o->secret_len > 1024 || !(pn->secret = malloc(o->secret_len))) {
			snprintf(err, errlen, "secret: %s", o->secret_len > 1024 ?
			         "longer than 1024 bytes" : "out of memory");
			free(pn->key);
			free(pn);
			return NULL;
		}
		memcpy(pn->secret, o->secret, o->secret_len);
	}
	o->secret = pn->secret;
	if (!pn->secret)
		o->secret_len = 0;
	if (o->admin_secret_len > 0 && o->admin_secret) {
		if (o->admin_secret_len > 1024 || !(pn->admin = malloc(o->admin_secret_len))) {
			snprintf(err, errlen, "admin secret: %s", o->admin_secret_len > 1024 ?
			         "longer than 1024 bytes" : "out of memory");
			free(pn->secret);
			free(pn->key);
			free(pn);
			return NULL;
		}
		memcpy(pn->admin, o->admin_secret, o->admin_secret_len);
	}
	o->admin_secret = pn->admin;
	if (!pn->admin)
		o->admin_secret_len = 0;
	unsigned n_trusted = 0;
	while (o->udp_trusted && o->udp_trusted[n_trusted])
		n_trusted++;
	if (n_trusted && !(pn->udp_trusted = calloc(n_trusted, sizeof *pn->udp_trusted))) {
		snprintf(err, errlen, "out of memory");
		free(pn->key);
		free(pn->secret);
		free(pn->admin);
		free(pn);
		return NULL;
	}
	for (unsigned i = 0; i < n_trusted; i++) {
		if (pn_addr_parse(o->udp_trusted[i], &pn->udp_trusted[pn->n_udp_trusted], 1) != 0 ||
		    pn->udp_trusted[pn->n_udp_trusted].scheme != PN_S_UDP) {
			snprintf(err, errlen, "udp_trusted %s: %s", o->udp_trusted[i], pn_strerror(PN_EADDR));
			free(pn->udp_trusted);
			free(pn->key);
			free(pn->secret);
			free(pn->admin);
			free(pn);
			return NULL;
		}
		pn->n_udp_trusted++;
	}
	o->udp_trusted = NULL;             /* the caller's array need not outlive pn_init */
	if (o->drop_rate > 0)
		pn->drop_threshold = o->drop_rate >= 1 ? UINT64_MAX : (uint64_t)(o->drop_rate * 18446744073709551616.0);
	pthread_mutex_init(&pn->lock, NULL);
	pthread_cond_init(&pn->q_cond, NULL);
	pthread_cond_init(&pn->start_cond, NULL);
	atomic_init(&pn->held, o->hold);
	/* Cooperation tokens start at a random point so a restarted endpoint cannot mistake a
	 * late reply meant for its previous incarnation for one of its own. */
	if (getrandom(pn->named_key, sizeof pn->named_key, 0) != sizeof pn->named_key) {
		pn->named_key[0] = pn_now_ns() * 0x9e3779b97f4a7c15ull;
		pn->named_key[1] = (uint64_t)(uintptr_t)pn * 0xc2b2ae3d27d4eb4full;
	}
	if (getrandom(&pn->next_token, sizeof pn->next_token, 0) != sizeof pn->next_token)
		pn->next_token = pn_now_ns();
	pn->next_token &= ~0xffffffffull;
	pn->token_base = pn->next_token;
	atomic_store(&pn->drop_state, pn->next_token);
	if (!(pn->sess = pn_sess_new(pn, o))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}

	for (unsigned i = 0; i < n; i++) {
		struct endpoint *ep = &pn->ep[pn->n_ep];
		if (pn_addr_parse(listen[i], &ep->self, 1) != 0) {
			snprintf(err, errlen, "%s: %s", listen[i], pn_strerror(PN_EADDR));
			goto fail;
		}
		for (size_t t = 0; t < sizeof transports / sizeof transports[0]; t++)
			if (transports[t]->scheme_id == ep->self.scheme)
				ep->ops = transports[t];
		if (!ep->ops || endpoint_for(pn, ep->self.scheme)) {
			snprintf(err, errlen, "%s: %s", listen[i], ep->ops ?
			         "one endpoint per transport" : "transport not available");
			goto fail;
		}
		char e2[200];
		if (ep->ops->open(pn, &ep->self, &ep->tp, e2, sizeof e2) != 0) {
			snprintf(err, errlen, "%s: %s", listen[i], e2);
			goto fail;
		}
		pn_addr_name(&ep->self, ep->name, sizeof ep->name);
		pn->n_ep++;
	}
	o->tls_cert = o->tls_key = o->tls_ca = NULL;   /* read by now; the caller's strings */
	pn->workers = calloc(o->n_workers, sizeof *pn->workers);
	if (!pn->workers)
		goto fail;
	for (unsigned i = 0; i < o->n_workers; i++) {
		if (pthread_create(&pn->workers[i], NULL, worker_main, pn) != 0) {
			snprintf(err, errlen, "pthread_create: %s", strerror(errno));
			goto fail;
		}
		pn->n_workers++;
	}
	return pn;
fail:
	pn_finalize(pn);
	return NULL;
}

void pn_finalize(struct pn *pn)
{
	if (!pn)
		return;
	/* Our sessions end (BYE), so their servers stop keeping replies for us and treat the
	 * connections' end as a client gone; nothing is connected for it. */
	if (pn->sess && !atomic_load(&pn->send_closed))
		pn_sess_bye_out(pn->sess);
	/* No pn_coop_end may hand a cookie to a transport that is going away. */
	pthread_mutex_lock(&pn->lock);
	pn->closing = 1;
	while (pn->releasing)
		pthread_cond_wait(&pn->q_cond, &pn->lock);
	pthread_mutex_unlock(&pn->lock);
	/* Order matters: a handler still running may send, so the transports close last.
	 * 1. sends fail from now on; wait for those already inside a transport */
	atomic_store(&pn->send_closed, true);
	while (atomic_load(&pn->sending) > 0)
		usleep(100);
	if (pn->sess)
		pn_sess_stop(pn->sess);    /* its sends fail now: it ends at once */
	/* 2. wake threads waiting in pn_coop_end, stop taking work, let running handlers end */
	pthread_mutex_lock(&pn->lock);
	pn->stopping = 1;
	pthread_cond_broadcast(&pn->q_cond);
	pthread_cond_broadcast(&pn->start_cond);   /* held_wait: drop what it holds */
	for (unsigned b = 0; b < COOP_BUCKETS; b++)
		for (struct pn_coop_rec *c = pn->coops[b]; c; c = c->next)
			for (unsigned i = 0; i < c->n; i++)
				if (c->rcv[i].status == DESC_PENDING)
					desc_done_locked(pn, c, i, -PN_ESHUTDOWN);
	pthread_mutex_unlock(&pn->lock);
	for (unsigned i = 0; i < pn->n_workers; i++)
		pthread_join(pn->workers[i], NULL);
	free(pn->workers);
	/* 3. the transports: what still arrives is dropped (stopping), inline handlers' sends
	 * fail (send_closed) */
	for (unsigned i = 0; i < pn->n_ep; i++)
		pn->ep[i].ops->close(pn->ep[i].tp);
	for (struct work *w = pn->q_head, *next; w; w = next) {
		next = w->next;
		free(w->buf);
		free(w);
	}
	/* Cooperations nobody ended (their threads gave up on them): the records go too; the
	 * descriptors and their buffers are the caller's */
	for (unsigned b = 0; b < COOP_BUCKETS; b++) {
		for (struct pn_coop_rec *c = pn->coops[b], *next; c; c = next) {
			next = c->next;
			pthread_cond_destroy(&c->done);
			if (c->sent_to != c->sent_to_inl) {
				free(c->sent_to);
				free(c->sent_count);
			}
			free(c->adv);
			free(c);
		}
	}
	for (struct pn_coop_rec *c = pn->coop_spare, *next; c; c = next) {
		next = c->next;
		pthread_cond_destroy(&c->done);
		free(c);
	}
	for (uint32_t i = 0; i < pn->n_peers; i++)
		free(pn->peers[i]);
	free(pn->peers);
	free(pn->named);
	if (pn->key)
		OPENSSL_cleanse(pn->key, pn->opts.cluster_key_len);
	free(pn->key);
	if (pn->secret)
		OPENSSL_cleanse(pn->secret, pn->opts.secret_len);
	free(pn->secret);
	if (pn->admin)
		OPENSSL_cleanse(pn->admin, pn->opts.admin_secret_len);
	free(pn->admin);
	free(pn->udp_trusted);
	pn_sess_free(pn->sess);
	pthread_cond_destroy(&pn->q_cond);
	pthread_cond_destroy(&pn->start_cond);
	pthread_mutex_destroy(&pn->lock);
	free(pn);
}
