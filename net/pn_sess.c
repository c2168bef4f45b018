/* pn_sess.c: sessions of Paradis-Net, both sides (docs/net.md, "Sessions").  A session is
 * a client's relation to a server that outlives its connections, in the manner of NFSv4.1
 * sessions: an id the client chose, a table of slots, and on the server the reply to the
 * last request of each slot.  pn.c calls in here; no sockets (the transports carry the id
 * in their HELLO and the slot and sequence number in the SREQ frame header, wire.c).
 *
 * The exchange, step by step:
 *   1. The client (pn_session_open) picks a session id, 16 random bytes.  Every connection
 *      it opens to the server carries the id in its HELLO (PN_F_SESSION) with the number of
 *      slots it asks for; the server notes both on the connection's peer, nothing more, so
 *      a connection not yet admitted costs no session memory.
 *   2. Each request (a send with a Cooperation token) takes a free slot and the slot's next
 *      sequence number and goes as an SREQ frame.  The client keeps its bytes until its
 *      Cooperation ends, which frees the slot.
 *   3. The server, at an SREQ from an admitted connection, finds the session by its id or
 *      makes one, and looks at the slot.  A sequence number ahead of the slot's: a new
 *      request (it runs; the reply kept for the previous one is dropped).  The slot's own:
 *      a repeat, answered from the kept reply, or dropped when the first one still runs
 *      (its reply will go to the session's newest connection).  Anything else: NACK SEQ.
 *      A slot the server has not seen (a new session, or a server that restarted) takes
 *      any sequence number.
 *   4. The reply (a send with the request's token to the connection it came from) is kept
 *      in the slot and goes out on the session's newest connection.
 *   5. When the connection breaks, the client's requests in flight stay in their slots; the
 *      session thread connects again after jittered exponential back-off and sends them
 *      again, same slot and sequence, until the outage has lasted outage_ms: then their
 *      Cooperations fail with PN_EOUTAGE.
 *   6. A session with a fallback (pn_session_fallback: rdma's, to tcp at the same server)
 *      whose transport fails (a device error, or FALLBACK_TRIES connections in a row that
 *      could not be made or broke at once) moves there: its requests go to the fallback peer
 *      from then on, carrying the same id, so the server finds the same session and slots
 *      whatever transport brings them; replies from the fallback peer fill the descriptors
 *      that named the session's own peer (pn_sess_alias).  It never moves back.
 *
 * Locking: one mutex (S->lk) for both sides; it is never held together with pn's lock, and
 * never across a send.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "pn_int.h"

#define SID_BUCKETS 1024
#define OUT_MAX 64                 /* sessions this endpoint opens (to distinct peers) */
#define PROBATION_NS 1000000000ull /* a new connection that lasts this long ends an outage */
#define TICK_NS 1000000000ull      /* the session thread looks at expiries this often */
#define EVICT_SCAN 64              /* sessions looked at for one to drop when full */
#define DOWNS_MAX 16               /* closed connections of a session not yet reported */
#define KEEP_BUF 4096              /* a slot's buffer this small is kept for its next use:
                                    * no malloc and free per request on the common path */
#define FALLBACK_TRIES 3           /* connections of one outage over a transport that fail
                                    * before its session moves to its fallback */

/* ---- the server's side ---- */

enum { SL_FREE, SL_RUNNING, SL_DONE, SL_UNCACHED };

struct sslot {
	uint32_t seq;
	uint8_t state;             /* SL_* */
	bool idem;                 /* the request is idempotent: no reply kept, a repeat runs */
	pn_type rtype;             /* SL_DONE: the kept reply's type */
	pn_coop coop;              /* the request's token (a repeat must bring the same) */
	void *reply;               /* SL_DONE: the kept reply (also kept, up to KEEP_BUF, for
	                            * the next reply of the slot: rcap bytes) */
	uint32_t rlen, rcap;
};

struct ssess {
	uint8_t sid[PN_SID_LEN];
	struct ssess *hnext;           /* hash chain */
	struct ssess *prev, *next;     /* least recently used last */
	pn_peer peer;                  /* its newest connection */
	bool live;                     /* ... and that connection is open */
	uint8_t proven;                /* enum pn_proof of the connection that made it */
	uint32_t n_slots, cap;         /* slots granted; slot records allocated */
	struct sslot *slots;
	uint64_t last_ns;
	/* its connections that closed while no other was live: reported to the application
	 * (pn_set_peer_down) once the session has had no connection for session_grace_ms, and
	 * never if its client comes back first */
	pn_peer downs[DOWNS_MAX];
	unsigned n_downs;
	uint64_t down_ns;
};

/* ---- the client's side ---- */

enum { CS_UP, CS_OUTAGE, CS_PROBATION };

struct cslot {
	uint32_t seq;
	bool busy;                     /* a request in flight (till its Cooperation ends) */
	bool failed;                   /* ... given up on (outage): not to be sent again */
	bool unsent;                   /* held during an outage: the session thread sends it */
	pn_type type;
	pn_coop coop;
	void *buf;                     /* a copy of the request's bytes, to send again */
	size_t len, cap;               /* (the buffer stays for the next request when small) */
	const void *ext;               /* PN_SEND_KEEP: the caller's bytes instead of buf */
	uint16_t sflags;               /* PN_F_IDEMPOTENT */
};

struct csess {
	pn_peer peer;                  /* the application's name of the server */
	_Atomic pn_peer via;           /* where the requests go: peer, or fallback once moved */
	pn_peer fallback;              /* PN_ANY: none (pn_session_fallback) */
	unsigned tries;                /* connections tried in this outage */
	int last_err;                  /* ... the last one's error (0: it broke after a while) */
	char moved_why[288];           /* why it moved to fallback ("" while it has not) */
	char names[2][PN_NAME_LEN];    /* peer's and fallback's, for the log */
	uint8_t sid[PN_SID_LEN];
	struct pn_session_opts o;
	uint32_t n_busy, hi;           /* slots in flight; 1 + the highest slot ever used */
	struct cslot *slots;
	_Atomic int state;             /* CS_* (read without the lock on the receive path) */
	atomic_bool reached;           /* a frame came from the peer once (FAIL_FIRST) */
	_Atomic uint64_t first_sent_ns; /* our first request went out on a connection (FAIL_FIRST) */
	uint64_t outage_ns, next_try_ns, reconnected_ns;
	unsigned backoff_ms;
};

struct pn_sess {
	struct pn *pn;
	pthread_mutex_t lk;
	pthread_cond_t slot_cond;      /* a client slot was freed */
	pthread_cond_t th_cond;        /* wakes the session thread */
	pthread_t th;
	bool th_started, th_stop;
	/* client */
	struct csess *out[OUT_MAX];
	_Atomic unsigned n_out;
	/* server */
	struct ssess *buckets[SID_BUCKETS];
	struct ssess *lru_head, *lru_tail;
	_Atomic unsigned n_sess;
	uint64_t bytes, kept;          /* memory of all sessions; of it, kept replies */
	unsigned max_sessions, max_slots;
	uint64_t idle_ns, cache_max, grace_ns;
	pn_peer *gone;                 /* downs to report now (a session went): the thread */
	unsigned n_gone, cap_gone;
	uint32_t reply_max;
	uint64_t rng;
	uint64_t hkey[2];              /* sid_hash's key */
	_Atomic uint64_t st_replays, st_dropped, st_refused, st_expired, st_resent, st_outages;
	_Atomic uint64_t st_moves;
};

static uint64_t rnd(struct pn_sess *S);

struct pn_sess *pn_sess_new(struct pn *pn, const struct pn_opts *o)
{
	struct pn_sess *S = calloc(1, sizeof *S);
	if (!S)
		return NULL;
	S->pn = pn;
	pthread_mutex_init(&S->lk, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&S->slot_cond, &ca);
	pthread_cond_init(&S->th_cond, &ca);
	pthread_condattr_destroy(&ca);
	S->max_sessions = o->max_sessions ? o->max_sessions : 1024;
	S->max_slots = o->session_slots ? o->session_slots : 64;
	S->idle_ns = (o->session_idle_ms ? o->session_idle_ms : 300000) * 1000000ull;
	S->grace_ns = (o->session_grace_ms ? o->session_grace_ms : 2000) * 1000000ull;
	S->cache_max = o->session_cache_max ? o->session_cache_max : 64u << 20;
	S->reply_max = o->session_reply_max ? o->session_reply_max : 2u << 20;
	if (getrandom(&S->rng, sizeof S->rng, 0) != sizeof S->rng)
		S->rng = pn_now_ns();
	S->rng |= 1;
	if (getrandom(S->hkey, sizeof S->hkey, 0) != sizeof S->hkey) {
		S->hkey[0] = rnd(S);
		S->hkey[1] = rnd(S);
	}
	return S;
}

static void ssess_free(struct pn_sess *S, struct ssess *s);

/* The coarse monotonic clock (a few ms of resolution, no hardware clock read: on a virtual
 * machine that read is a noticeable part of a request) for sessions' idle times. */
void pn_sess_stop(struct pn_sess *S)
{
	pthread_mutex_lock(&S->lk);
	bool started = S->th_started;
	S->th_stop = true;
	pthread_cond_broadcast(&S->th_cond);
	pthread_cond_broadcast(&S->slot_cond);
	pthread_mutex_unlock(&S->lk);
	if (started)
		pthread_join(S->th, NULL);
	pthread_mutex_lock(&S->lk);
	S->th_started = false;
	pthread_mutex_unlock(&S->lk);
}

void pn_sess_free(struct pn_sess *S)
{
	if (!S)
		return;
	pn_sess_stop(S);
	while (S->lru_head)
		ssess_free(S, S->lru_head);
	free(S->gone);
	for (unsigned i = 0; i < atomic_load(&S->n_out); i++) {
		struct csess *cs = S->out[i];
		for (uint32_t j = 0; j < cs->o.slots; j++)
			free(cs->slots[j].buf);
		free(cs->slots);
		free(cs);
	}
	pthread_cond_destroy(&S->slot_cond);
	pthread_cond_destroy(&S->th_cond);
	pthread_mutex_destroy(&S->lk);
	free(S);
}

void pn_sess_stats(struct pn_sess *S, struct pn_stats *st)
{
	pthread_mutex_lock(&S->lk);
	st->sessions = atomic_load(&S->n_sess);
	st->session_bytes = S->bytes;
	pthread_mutex_unlock(&S->lk);
	st->session_replays = atomic_load(&S->st_replays);
	st->session_dropped = atomic_load(&S->st_dropped);
	st->session_refused = atomic_load(&S->st_refused);
	st->session_expired = atomic_load(&S->st_expired);
	st->session_resent = atomic_load(&S->st_resent);
	st->session_outages = atomic_load(&S->st_outages);
	st->session_moves = atomic_load(&S->st_moves);
}

static uint64_t rnd(struct pn_sess *S)     /* xorshift64, under lk */
{
	S->rng ^= S->rng << 13;
	S->rng ^= S->rng >> 7;
	S->rng ^= S->rng << 17;
	return S->rng;
}

static void *sess_main(void *arg);

/* The session thread runs once anything needs it (lk held). */
static void thread_need(struct pn_sess *S)
{
	if (S->th_started || S->th_stop)
		return;
	if (pthread_create(&S->th, NULL, sess_main, S) == 0)
		S->th_started = true;
	/* without it: no reconnects (requests fail at their timeout), no idle expiry (sessions
	 * are still dropped for room at max_sessions) */
}

/* ---- server: the session table ---- */

/* Session ids are the clients' choice: a hostile one could pick ids that share a bucket
 * if the bucket were a plain function of the id, so the hash is keyed by random bytes of
 * this endpoint (a multiply-xorshift mix: not cryptographic, but nobody outside sees the
 * buckets, and a chain is at most max_sessions long anyway). */
static unsigned sid_hash(const struct pn_sess *S, const uint8_t sid[PN_SID_LEN])
{
	uint64_t w0, w1;
	memcpy(&w0, sid, 8);
	memcpy(&w1, sid + 8, 8);
	uint64_t h = (w0 ^ S->hkey[0]) * 0x9e3779b97f4a7c15ull + (w1 ^ S->hkey[1]) * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (unsigned)(h % SID_BUCKETS);
}

static struct ssess *ssess_find(struct pn_sess *S, const uint8_t sid[PN_SID_LEN])
{
	struct ssess *s = S->buckets[sid_hash(S, sid)];
	while (s && memcmp(s->sid, sid, PN_SID_LEN))
		s = s->hnext;
	return s;
}

static void lru_unlink(struct pn_sess *S, struct ssess *s)
{
	if (s->prev) s->prev->next = s->next; else S->lru_head = s->next;
	if (s->next) s->next->prev = s->prev; else S->lru_tail = s->prev;
	s->prev = s->next = NULL;
}

static void lru_front(struct pn_sess *S, struct ssess *s)
{
	s->next = S->lru_head;
	if (S->lru_head)
		S->lru_head->prev = s;
	else
		S->lru_tail = s;
	S->lru_head = s;
}

/* The slot's reply is no longer needed; its buffer stays when small (all: the session
 * goes).  kept counts reply bytes, bytes the buffers. */
static void slot_drop_reply(struct pn_sess *S, struct sslot *sl, bool all)
{
	S->kept -= sl->rlen;
	sl->rlen = 0;
	if (sl->reply && (all || sl->rcap > KEEP_BUF)) {
		S->bytes -= sl->rcap;
		free(sl->reply);
		sl->reply = NULL;
		sl->rcap = 0;
	}
}

/* Report peer as gone from the session thread (lk held); false when there is no room. */
static bool gone_later(struct pn_sess *S, pn_peer peer)
{
	if (S->n_gone == S->cap_gone) {
		unsigned cap = S->cap_gone ? 2 * S->cap_gone : 16;
		pn_peer *p = realloc(S->gone, cap * sizeof *p);
		if (!p)
			return false;
		S->gone = p;
		S->cap_gone = cap;
	}
	S->gone[S->n_gone++] = peer;
	pthread_cond_broadcast(&S->th_cond);
	return true;
}

static void ssess_free(struct pn_sess *S, struct ssess *s)
{
	for (unsigned i = 0; i < s->n_downs; i++)   /* the session ends: its client is gone */
		gone_later(S, s->downs[i]);
	struct ssess **p = &S->buckets[sid_hash(S, s->sid)];
	while (*p != s)
		p = &(*p)->hnext;
	*p = s->hnext;
	lru_unlink(S, s);
	for (uint32_t i = 0; i < s->cap; i++)
		slot_drop_reply(S, &s->slots[i], true);
	S->bytes -= sizeof *s + s->cap * sizeof *s->slots;
	free(s->slots);
	free(s);
	atomic_fetch_sub(&S->n_sess, 1);
}

/* Room for one more session: drop idle ones, then the least recently used one without a
 * live connection.  False when every session near the end of the list is connected. */
static bool ssess_room(struct pn_sess *S, uint64_t now)
{
	while (S->lru_tail && now - S->lru_tail->last_ns >= S->idle_ns) {
		ssess_free(S, S->lru_tail);
		atomic_fetch_add(&S->st_expired, 1);
	}
	if (atomic_load(&S->n_sess) < S->max_sessions)
		return true;
	struct ssess *s = S->lru_tail;
	for (unsigned i = 0; s && i < EVICT_SCAN; i++, s = s->prev)
		if (!s->live) {
			ssess_free(S, s);
			atomic_fetch_add(&S->st_expired, 1);
			return true;
		}
	return false;
}

static struct ssess *ssess_new(struct pn_sess *S, const struct pn_peer_rec *from, uint64_t now)
{
	if (!ssess_room(S, now))
		return NULL;
	struct ssess *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	memcpy(s->sid, from->sid, PN_SID_LEN);
	s->proven = from->proven;
	s->n_slots = from->sess_slots < S->max_slots ? from->sess_slots : S->max_slots;
	s->last_ns = now;
	unsigned b = sid_hash(S, s->sid);
	s->hnext = S->buckets[b];
	S->buckets[b] = s;
	lru_front(S, s);
	S->bytes += sizeof *s;
	atomic_fetch_add(&S->n_sess, 1);
	thread_need(S);
	return s;
}

/* Slot records up to slot (lk held); false when out of memory. */
static bool ssess_grow(struct pn_sess *S, struct ssess *s, uint32_t slot)
{
	if (slot < s->cap)
		return true;
	uint32_t cap = s->cap ? s->cap : 4;
	while (cap <= slot)
		cap *= 2;
	if (cap > s->n_slots)
		cap = s->n_slots;
	struct sslot *p = realloc(s->slots, cap * sizeof *p);
	if (!p)
		return false;
	memset(p + s->cap, 0, (cap - s->cap) * sizeof *p);
	S->bytes += (cap - s->cap) * sizeof *p;
	s->slots = p;
	s->cap = cap;
	return true;
}

static void nack(struct pn_sess *S, pn_peer to, pn_coop coop, int err)
{
	atomic_fetch_add(&S->st_refused, 1);
	uint8_t p[4] = { (uint8_t)err, (uint8_t)(err >> 8), (uint8_t)(err >> 16),
	                 (uint8_t)(err >> 24) };
	struct pn_hdr h = { .kind = PN_K_NACK, .coop = coop };
	pn_core_send_hdr(S->pn, to, &h, p, sizeof p);
}

static bool zero_sid(const uint8_t *sid)
{
	uint8_t acc = 0;
	for (int i = 0; i < PN_SID_LEN; i++)
		acc |= sid[i];
	return acc == 0;
}

int pn_sess_request(struct pn_sess *S, struct pn_peer_rec *from, const struct pn_hdr *h)
{
	if (!from->has_sid || zero_sid(from->sid)) {
		nack(S, from->id, h->coop, PN_ESESSION);   /* its HELLO named no session */
		return 1;
	}
	uint64_t now = pn_coarse_ns();
	pthread_mutex_lock(&S->lk);
	struct ssess *s = ssess_find(S, from->sid);
	int err = 0;
	if (!s && !(s = ssess_new(S, from, now)))
		err = PN_ESESSION;                 /* full of connected sessions */
	else if (from->proven < s->proven)
		err = PN_ESESSION;                 /* not this connection's to take: it proved
		                                    * less than the one that made the session */
	else if (h->slot >= s->n_slots)
		err = PN_EBADSLOT;
	else if (!ssess_grow(S, s, h->slot))
		err = PN_ENOMEM;
	if (err) {
		pthread_mutex_unlock(&S->lk);
		nack(S, from->id, h->coop, err);
		return 1;
	}
	s->peer = from->id;                    /* replies go to its newest connection */
	s->live = true;
	s->n_downs = 0;                        /* its client is back: nobody is gone */
	s->last_ns = now;
	lru_unlink(S, s);
	lru_front(S, s);
	struct sslot *sl = &s->slots[h->slot];
	int rc = 1;
	void *copy = NULL;
	uint32_t clen = 0;
	pn_type ctype = 0;
	bool idem = h->flags & PN_F_IDEMPOTENT;
	/* ahead of the slot (modulo 2^32): a new request; a gap is requests the client gave up
	 * on before they arrived (an outage past its limit), not a reason to refuse */
	uint32_t ahead = h->seq - sl->seq;
	if (sl->state == SL_FREE || (ahead > 0 && ahead < 1u << 31) ||
	    (ahead == 0 && h->coop == sl->coop && idem && sl->idem)) {
		/* new, or the repeat of an idempotent one: it runs (again) */
		slot_drop_reply(S, sl, false); /* the client has the previous reply: it moved on */
		sl->seq = h->seq;
		sl->state = SL_RUNNING;
		sl->coop = h->coop;
		sl->idem = idem;
		rc = 0;
	} else if (ahead != 0 || h->coop != sl->coop || sl->idem) {
		err = PN_ESEQ;                 /* replayed from before, another request under the
		                                * last one's number, or a repeat that changed its
		                                * mind about being idempotent */
	} else if (sl->state == SL_RUNNING) {
		atomic_fetch_add(&S->st_dropped, 1);   /* its reply follows, to this connection */
	} else if (sl->state == SL_UNCACHED) {
		err = PN_EUNCACHED;
	} else if ((copy = malloc(sl->rlen ? sl->rlen : 1))) {
		if (sl->rlen)
			memcpy(copy, sl->reply, sl->rlen);
		clen = sl->rlen;
		ctype = sl->rtype;
	} else {
		err = PN_ENOMEM;
	}
	pthread_mutex_unlock(&S->lk);
	if (err) {
		nack(S, from->id, h->coop, err);
	} else if (copy) {
		atomic_fetch_add(&S->st_replays, 1);
		struct pn_hdr r = { .kind = PN_K_MSG, .type = ctype, .coop = h->coop };
		pn_core_send_hdr(S->pn, from->id, &r, copy, clen);
		free(copy);
	}
	return rc;
}

static int reply_keep(struct pn_sess *S, struct ssess *s, struct sslot *sl, pn_peer to,
                      pn_type type, const void *msg, size_t len, pn_peer *route);

void pn_sess_unrun(struct pn_sess *S, const uint8_t sid[PN_SID_LEN], uint32_t slot, pn_peer to,
                   pn_coop coop, int err)
{
	pthread_mutex_lock(&S->lk);
	struct ssess *s = ssess_find(S, sid);
	struct sslot *sl = s && slot < s->cap ? &s->slots[slot] : NULL;
	if (sl && sl->state == SL_RUNNING && sl->coop == coop)
		sl->state = SL_FREE;
	pthread_mutex_unlock(&S->lk);
	nack(S, to, coop, err);
}

int pn_sess_reply(struct pn_sess *S, const uint8_t sid[PN_SID_LEN], pn_peer to, pn_type type,
                  pn_coop coop, const void *msg, size_t len, pn_peer *route)
{
	pthread_mutex_lock(&S->lk);
	struct ssess *s = ssess_find(S, sid);
	struct sslot *sl = NULL;
	for (uint32_t i = 0; s && i < s->cap && !sl; i++)
		if (s->slots[i].state == SL_RUNNING && s->slots[i].coop == coop)
			sl = &s->slots[i];
	if (!sl) {
		pthread_mutex_unlock(&S->lk);
		return 0;
	}
	return reply_keep(S, s, sl, to, type, msg, len, route);
}

int pn_sess_reply_at(struct pn_sess *S, const uint8_t sid[PN_SID_LEN], uint32_t slot, pn_peer to,
                     pn_type type, pn_coop coop, const void *msg, size_t len, pn_peer *route)
{
	pthread_mutex_lock(&S->lk);
	struct ssess *s = ssess_find(S, sid);
	struct sslot *sl = s && slot < s->cap ? &s->slots[slot] : NULL;
	if (!sl || sl->state != SL_RUNNING || sl->coop != coop) {
		pthread_mutex_unlock(&S->lk);
		return 0;
	}
	return reply_keep(S, s, sl, to, type, msg, len, route);
}

/* Keep the reply in sl (lk held; let go here).  1. */
static int reply_keep(struct pn_sess *S, struct ssess *s, struct sslot *sl, pn_peer to,
                      pn_type type, const void *msg, size_t len, pn_peer *route)
{
	if (sl->idem) {                /* nothing to keep: a repeat runs again */
		sl->state = SL_DONE;
		sl->rlen = 0;
		s->last_ns = pn_coarse_ns();
		*route = s->live ? s->peer : to;
		pthread_mutex_unlock(&S->lk);
		return 1;
	}
	/* the budget counts the buffers (kept small ones too) and the records */
	if (len <= S->reply_max && len > sl->rcap && S->bytes + (len - sl->rcap) <= S->cache_max) {
		void *p = realloc(sl->reply, len);
		if (p) {
			S->bytes += len - sl->rcap;
			sl->reply = p;
			sl->rcap = (uint32_t)len;
		}
	}
	if (len <= sl->rcap) {
		if (len)
			memcpy(sl->reply, msg, len);
		sl->rlen = (uint32_t)len;
		sl->rtype = type;
		sl->state = SL_DONE;
		S->kept += len;
	} else {
		sl->state = SL_UNCACHED;       /* a repeat learns that its outcome is unknown */
	}
	s->last_ns = pn_coarse_ns();
	*route = s->live ? s->peer : to;
	pthread_mutex_unlock(&S->lk);
	return 1;
}

bool pn_sess_server_on(struct pn_sess *S)
{
	return atomic_load_explicit(&S->n_sess, memory_order_relaxed) > 0;
}

/* A connection of a session's (server side) closed: replies go nowhere until the next. */
/* A connection of a session's (server side) closed: replies go nowhere until the next.
 * Whether its client is gone is decided later (downs); true: not to be reported now. */
static bool ssess_conn_gone(struct pn_sess *S, const struct pn_peer_rec *peer)
{
	bool later = true;
	pthread_mutex_lock(&S->lk);
	struct ssess *s = ssess_find(S, peer->sid);
	if (!s) {
		later = false;                 /* no session (dropped, or never made) */
	} else if (s->peer != peer->id && s->live) {
		/* an older connection: its client is on a newer one */
	} else if (s->n_downs == DOWNS_MAX || !S->th_started) {
		later = false;
	} else {
		if (s->peer == peer->id)
			s->live = false;
		if (!s->n_downs)
			s->down_ns = pn_coarse_ns();
		s->downs[s->n_downs++] = peer->id;
		pthread_cond_broadcast(&S->th_cond);
	}
	pthread_mutex_unlock(&S->lk);
	return later;
}

void pn_sess_drop(struct pn_sess *S, const uint8_t sid[PN_SID_LEN])
{
	pthread_mutex_lock(&S->lk);
	struct ssess *s = ssess_find(S, sid);
	if (s)
		ssess_free(S, s);
	pthread_mutex_unlock(&S->lk);
}

/* ---- client ---- */

/* The session to peer, by the application's name or the one its requests now go to. */
static struct csess *cs_find(struct pn_sess *S, pn_peer peer)
{
	unsigned n = atomic_load_explicit(&S->n_out, memory_order_acquire);
	for (unsigned i = 0; i < n; i++)
		if (S->out[i]->peer == peer ||
		    atomic_load_explicit(&S->out[i]->via, memory_order_relaxed) == peer)
			return S->out[i];
	return NULL;
}

pn_peer pn_sess_alias(struct pn_sess *S, pn_peer from)
{
	struct csess *cs = cs_find(S, from);
	return cs ? cs->peer : from;
}

bool pn_sess_client_on(struct pn_sess *S)
{
	return atomic_load_explicit(&S->n_out, memory_order_relaxed) > 0;
}

int pn_sess_open(struct pn_sess *S, pn_peer peer, const struct pn_session_opts *o)
{
	struct pn_session_opts d = o ? *o : (struct pn_session_opts){ 0 };
	if (!d.slots) d.slots = 64;
	if (!d.outage_ms) d.outage_ms = 60000;
	if (!d.backoff_min_ms) d.backoff_min_ms = 20;
	if (!d.backoff_max_ms) d.backoff_max_ms = 1000;
	if (d.slots > 1u << 16 || d.backoff_min_ms > d.backoff_max_ms)
		return -PN_EINVAL;
	pthread_mutex_lock(&S->lk);
	if (cs_find(S, peer)) {
		pthread_mutex_unlock(&S->lk);
		return 0;
	}
	unsigned n = atomic_load(&S->n_out);
	struct csess *cs = n < OUT_MAX ? calloc(1, sizeof *cs) : NULL;
	if (cs && !(cs->slots = calloc(d.slots, sizeof *cs->slots))) {
		free(cs);
		cs = NULL;
	}
	if (!cs || getrandom(cs->sid, PN_SID_LEN, 0) != PN_SID_LEN || zero_sid(cs->sid)) {
		if (cs)
			free(cs->slots);
		free(cs);
		pthread_mutex_unlock(&S->lk);
		return n < OUT_MAX ? -PN_ENOMEM : -PN_EINVAL;
	}
	cs->peer = peer;
	atomic_store(&cs->via, peer);
	cs->fallback = PN_ANY;
	cs->o = d;
	cs->backoff_ms = d.backoff_min_ms;
	S->out[n] = cs;
	atomic_store_explicit(&S->n_out, n + 1, memory_order_release);
	thread_need(S);
	pthread_mutex_unlock(&S->lk);
	return 0;
}

int pn_sess_fallback(struct pn_sess *S, pn_peer peer, pn_peer fallback)
{
	char names[2][PN_NAME_LEN];    /* (taken before lk: never held with pn's lock) */
	snprintf(names[0], sizeof names[0], "%s", pn_peer_name(S->pn, peer));
	snprintf(names[1], sizeof names[1], "%s", pn_peer_name(S->pn, fallback));
	pthread_mutex_lock(&S->lk);
	struct csess *cs = cs_find(S, peer);
	int rc = !cs || cs->peer != peer || fallback == peer || cs_find(S, fallback) ?
	         -PN_EINVAL : 0;
	if (rc == 0) {
		cs->fallback = fallback;
		memcpy(cs->names, names, sizeof names);
	}
	pthread_mutex_unlock(&S->lk);
	return rc;
}

int pn_sess_moved(struct pn_sess *S, pn_peer peer, pn_peer *via, char *why, size_t len)
{
	pthread_mutex_lock(&S->lk);
	struct csess *cs = cs_find(S, peer);
	int rc = !cs || cs->peer != peer ? -PN_EINVAL : cs->moved_why[0] != '\0';
	if (rc == 1) {
		*via = atomic_load(&cs->via);
		snprintf(why, len, "%s", cs->moved_why);
	}
	pthread_mutex_unlock(&S->lk);
	return rc;
}

bool pn_sess_block(struct pn_sess *S, pn_peer peer, uint8_t out[PN_SESS_BLOCK])
{
	struct csess *cs = cs_find(S, peer);
	if (!cs)
		return false;
	memcpy(out, cs->sid, PN_SID_LEN);
	uint32_t n = cs->o.slots;
	for (int i = 0; i < 4; i++)
		out[PN_SID_LEN + i] = (uint8_t)(n >> (8 * i));
	return true;
}

/* How long a session's connection may go silent (data or keepalive probes unacknowledged)
 * before the transport breaks it: half the outage limit, between 1 and 10 s; 0 without a
 * session.  A link that goes down without a reset (a cable, a veth set down) leaves the
 * connection open with nothing coming back; without this the session would not notice it
 * and a request would wait for its timeout, not the outage limit. */
unsigned pn_sess_silent_ms(struct pn_sess *S, pn_peer peer)
{
	struct csess *cs = cs_find(S, peer);
	if (!cs)
		return 0;
	unsigned ms = cs->o.outage_ms / 2;
	return ms < 1000 ? 1000 : ms > 10000 ? 10000 : ms;
}

/* Jittered exponential back-off (lk held): the next try between half and all of the current
 * delay, which then doubles, so a thousand clients of one restarted server spread out. */
static void backoff_next(struct pn_sess *S, struct csess *cs, uint64_t now)
{
	uint64_t d = cs->backoff_ms;
	uint64_t ms = d / 2 + rnd(S) % (d / 2 + 1);
	cs->next_try_ns = now + ms * 1000000u;
	cs->backoff_ms = d * 2 > cs->o.backoff_max_ms ? cs->o.backoff_max_ms : (unsigned)(d * 2);
}

static void outage_begin(struct pn_sess *S, struct csess *cs)
{
	uint64_t now = pn_now_ns();
	int st = atomic_load(&cs->state);
	if (st == CS_OUTAGE)
		return;
	if (st == CS_UP) {             /* (PROBATION: the outage it was in goes on) */
		cs->outage_ns = now;
		cs->backoff_ms = cs->o.backoff_min_ms;
		atomic_fetch_add(&S->st_outages, 1);
	}
	atomic_store(&cs->state, CS_OUTAGE);
	backoff_next(S, cs, now);
	pthread_cond_broadcast(&S->th_cond);
}

static bool broken(int rc)
{
	return rc == -PN_EPEERDOWN || rc == -PN_EREFUSED || rc == -PN_ETIMEDOUT;
}

/* ... or, for a send to `via` of a session that has somewhere else to go, that transport
 * failed (a device gone: rdma cannot even make a connection id) */
static bool broken_for(const struct csess *cs, pn_peer via, int rc)
{
	return broken(rc) || (cs->fallback != PN_ANY && via != cs->fallback &&
	                      (rc == -PN_ENODEV || rc == -PN_ESYS || rc == -PN_ENOTRANSPORT));
}

static int send_sreq(struct pn_sess *S, pn_peer to, pn_type type, pn_coop coop, uint32_t slot,
                     uint32_t seq, uint16_t flags, const void *msg, size_t len)
{
	struct pn_hdr h = { .kind = PN_K_SREQ, .type = type, .coop = coop, .slot = slot,
	                    .seq = seq, .flags = flags };
	return pn_core_send_hdr(S->pn, to, &h, msg, len);
}

int pn_sess_send(struct pn_sess *S, pn_peer to, pn_type type, pn_coop coop, const void *msg,
                 size_t len, unsigned flags)
{
	struct csess *cs = cs_find(S, to);
	if (!cs)
		return 1;
	if (len > pn_core_opts(S->pn)->max_msg)
		return -PN_ETOOBIG;
	if (len && !msg)
		return -PN_EINVAL;
	pthread_mutex_lock(&S->lk);
	if (cs->n_busy == cs->o.slots) {
		struct timespec dl;
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += pn_core_opts(S->pn)->send_timeout_ms / 1000 + 1;
		while (cs->n_busy == cs->o.slots && !S->th_stop)
			if (pthread_cond_timedwait(&S->slot_cond, &S->lk, &dl) != 0)
				break;
	}
	if (cs->n_busy == cs->o.slots || S->th_stop) {
		pthread_mutex_unlock(&S->lk);
		return S->th_stop ? -PN_ESHUTDOWN : -PN_ETIMEDOUT;
	}
	uint32_t i = 0;
	while (cs->slots[i].busy)              /* the lowest: the server's table stays small */
		i++;
	struct cslot *sl = &cs->slots[i];
	sl->ext = flags & PN_SEND_KEEP ? msg : NULL;
	sl->sflags = flags & PN_SEND_IDEMPOTENT ? PN_F_IDEMPOTENT : 0;
	if (sl->ext) {
		/* the caller keeps them: no copy */
	} else if (len > sl->cap || !sl->buf) {
		void *p = malloc(len ? len : 1);
		if (!p) {
			pthread_mutex_unlock(&S->lk);
			return -PN_ENOMEM;
		}
		free(sl->buf);
		sl->buf = p;
		sl->cap = len ? len : 1;
	}
	/* the copy is made under the lock: a small request costs a memcpy, a large one's
	 * copy is small beside its sending */
	if (len && !sl->ext)
		memcpy(sl->buf, msg, len);
	sl->busy = true;
	sl->failed = false;
	sl->seq++;
	sl->type = type;
	sl->coop = coop;
	sl->len = len;
	cs->n_busy++;
	if (i + 1 > cs->hi)
		cs->hi = i + 1;
	uint32_t seq = sl->seq;
	bool hold = atomic_load(&cs->state) == CS_OUTAGE;
	sl->unsent = hold;
	pthread_mutex_unlock(&S->lk);
	pn_core_note_sent(S->pn, coop, to);
	if (hold)
		return 0;                      /* the session thread sends it once connected */
	pn_peer via = atomic_load(&cs->via);
	int rc = send_sreq(S, via, type, coop, i, seq, sl->sflags, msg, len);
	if (rc == 0) {
		if (!atomic_load_explicit(&cs->first_sent_ns, memory_order_relaxed)) {
			uint64_t z = 0;
			atomic_compare_exchange_strong(&cs->first_sent_ns, &z, pn_now_ns());
		}
		return 0;
	}
	pthread_mutex_lock(&S->lk);
	if (broken_for(cs, via, rc) && S->th_started && !S->th_stop && (atomic_load(&cs->reached) ||
	                                  !(cs->o.flags & PN_SESSION_FAIL_FIRST))) {
		sl->unsent = true;
		outage_begin(S, cs);
		rc = 0;
	}
	pthread_mutex_unlock(&S->lk);
	if (rc != 0)                           /* the slot is freed when its Cooperation ends */
		pn_core_coop_fail(S->pn, coop, to, rc);
	return rc;
}

void pn_sess_coop_end(struct pn_sess *S, pn_coop coop)
{
	unsigned n = atomic_load_explicit(&S->n_out, memory_order_acquire);
	pthread_mutex_lock(&S->lk);
	for (unsigned k = 0; k < n; k++) {
		struct csess *cs = S->out[k];
		for (uint32_t i = 0; cs->n_busy && i < cs->hi; i++) {
			struct cslot *sl = &cs->slots[i];
			if (sl->busy && sl->coop == coop) {
				if (sl->cap > KEEP_BUF) {
					free(sl->buf);
					sl->buf = NULL;
					sl->cap = 0;
				}
				sl->busy = false;
				sl->coop = 0;
				sl->ext = NULL;
				cs->n_busy--;
				pthread_cond_signal(&S->slot_cond);
			}
		}
		while (cs->hi && !cs->slots[cs->hi - 1].busy)
			cs->hi--;
	}
	pthread_mutex_unlock(&S->lk);
}

bool pn_sess_riding(struct pn_sess *S, pn_coop coop)
{
	unsigned n = atomic_load_explicit(&S->n_out, memory_order_acquire);
	bool riding = false;
	pthread_mutex_lock(&S->lk);
	for (unsigned k = 0; k < n && !riding && S->th_started; k++) {
		struct csess *cs = S->out[k];
		if (atomic_load(&cs->state) == CS_UP)
			continue;
		for (uint32_t i = 0; i < cs->hi && !riding; i++)
			riding = cs->slots[i].busy && !cs->slots[i].failed && cs->slots[i].coop == coop;
	}
	pthread_mutex_unlock(&S->lk);
	return riding;
}

void pn_sess_alive(struct pn_sess *S, pn_peer peer)
{
	struct csess *cs = cs_find(S, peer);
	if (!cs)
		return;
	if (!atomic_load_explicit(&cs->reached, memory_order_relaxed))
		atomic_store(&cs->reached, true);
	if (atomic_load_explicit(&cs->state, memory_order_relaxed) != CS_PROBATION)
		return;
	pthread_mutex_lock(&S->lk);
	if (atomic_load(&cs->state) == CS_PROBATION) {
		atomic_store(&cs->state, CS_UP);
		cs->tries = 0;
	}
	pthread_mutex_unlock(&S->lk);
}

/* FAIL_FIRST: has the server been there for this session?  A frame came from it, or a
 * connection held our first request for PROBATION_NS before it broke: a server that accepts
 * and then refuses (a limit) closes at once, a wrong address never connects, but one killed
 * while a thousand first requests wait in its queue has been there (before, all those
 * clients failed with "peer is down" instead of riding through its restart). */
static bool established(struct csess *cs)
{
	if (atomic_load(&cs->reached))
		return true;
	uint64_t t = atomic_load(&cs->first_sent_ns);
	return t && pn_now_ns() - t >= PROBATION_NS;
}

bool pn_sess_peer_down(struct pn_sess *S, struct pn_peer_rec *peer)
{
	if (peer->has_sid)
		return ssess_conn_gone(S, peer);
	struct csess *cs = cs_find(S, peer->id);
	if (cs && peer->id != atomic_load(&cs->via))
		return true;               /* the transport it moved from: nothing rides there */
	if (!cs || (!established(cs) && (cs->o.flags & PN_SESSION_FAIL_FIRST)))
		return false;
	pthread_mutex_lock(&S->lk);
	if (!S->th_started) {          /* nobody could reconnect: fail as without a session */
		pthread_mutex_unlock(&S->lk);
		return false;
	}
	if (cs->n_busy && !S->th_stop) {
		for (uint32_t i = 0; i < cs->hi; i++)
			cs->slots[i].unsent = cs->slots[i].busy;
		outage_begin(S, cs);
	}
	pthread_mutex_unlock(&S->lk);
	return true;
}

void pn_sess_bye_out(struct pn_sess *S)
{
	unsigned n = atomic_load(&S->n_out);
	for (unsigned i = 0; i < n; i++) {
		struct pn_hdr h = { .kind = PN_K_BYE };
		pn_core_send_hdr(S->pn, atomic_load(&S->out[i]->via), &h, NULL, 0);
	}
}

/* ---- the session thread: reconnects, outage limits, idle sessions ---- */

struct resend { uint32_t slot, seq; pn_type type; uint16_t flags; pn_coop coop; void *buf;
                size_t len; };

/* Send cs's requests again (lk held; let go meanwhile).  0 when all went out. */
static int resend_all(struct pn_sess *S, struct csess *cs, bool only_unsent)
{
	for (;;) {
		unsigned n = 0;
		struct resend *r = malloc((cs->hi ? cs->hi : 1) * sizeof *r);
		if (!r)
			return -PN_ENOMEM;
		for (uint32_t i = 0; i < cs->hi; i++) {
			struct cslot *sl = &cs->slots[i];
			if (!sl->busy || sl->failed || (only_unsent && !sl->unsent))
				continue;
			void *copy = malloc(sl->len ? sl->len : 1);
			if (!copy)
				break;
			/* (the caller's bytes are valid: its Cooperation has not ended, which
			 * would take this lock to free the slot) */
			if (sl->len)
				memcpy(copy, sl->ext ? sl->ext : sl->buf, sl->len);
			sl->unsent = false;
			r[n++] = (struct resend){ i, sl->seq, sl->type, sl->sflags, sl->coop, copy, sl->len };
		}
		pn_peer to = atomic_load(&cs->via);
		pthread_mutex_unlock(&S->lk);
		int rc = 0;
		unsigned sent = 0;
		for (unsigned k = 0; k < n; k++) {
			if (rc == 0) {
				/* counted first: the reply may be read before send returns */
				atomic_fetch_add(&S->st_resent, 1);
				rc = send_sreq(S, to, r[k].type, r[k].coop, r[k].slot, r[k].seq, r[k].flags,
				               r[k].buf, r[k].len);
				if (rc == 0)
					sent++;
				else
					atomic_fetch_sub(&S->st_resent, 1);
			}
			free(r[k].buf);
		}
		pthread_mutex_lock(&S->lk);
		if (rc != 0) {
			for (unsigned k = sent; k < n; k++)   /* (a slot reused since: sent anyway) */
				if (cs->slots[r[k].slot].busy && cs->slots[r[k].slot].coop == r[k].coop)
					cs->slots[r[k].slot].unsent = true;
			free(r);
			return rc;
		}
		free(r);
		/* requests held while we sent (pn_sess_send during the outage) go too */
		bool more = false;
		for (uint32_t i = 0; i < cs->hi && !more; i++)
			more = cs->slots[i].busy && !cs->slots[i].failed && cs->slots[i].unsent;
		if (!more)
			return 0;
		only_unsent = true;
	}
}

struct failed { pn_coop coop; pn_peer peer; };

/* cs's transport failed: its requests go to its fallback from now on (lk held).  The
 * outage goes on (its limit counts from its start), the back-off starts over. */
static void move(struct pn_sess *S, struct csess *cs)
{
	char cause[120];
	if (cs->last_err == -PN_ENODEV)
		snprintf(cause, sizeof cause, "its device failed");
	else
		snprintf(cause, sizeof cause, "%u connections failed (the last: %s)", cs->tries,
		         cs->last_err ? pn_strerror(cs->last_err) : "broke within a second");
	snprintf(cs->moved_why, sizeof cs->moved_why, "moved from %s to %s: %s", cs->names[0],
	         cs->names[1], cause);
	atomic_store(&cs->via, cs->fallback);
	cs->tries = 0;
	cs->last_err = 0;
	cs->backoff_ms = cs->o.backoff_min_ms;
	atomic_fetch_add(&S->st_moves, 1);
	char line[sizeof cs->moved_why + PN_NAME_LEN + 32];
	snprintf(line, sizeof line, "session to %s: %s", cs->names[0], cs->moved_why);
	pthread_mutex_unlock(&S->lk);  /* (the log is the application's: not under our lock) */
	pn_core_log(S->pn, "%s", line);
	pthread_mutex_lock(&S->lk);
}

static void *sess_main(void *arg)
{
	pthread_setname_np(pthread_self(), "pn-session");   /* for top -H, ps -L, gdb */
	pn_spin_unkeep();          /* (made by a tcp reader kept on a CPU: not kept itself) */
	struct pn_sess *S = arg;
	pthread_mutex_lock(&S->lk);
	while (!S->th_stop) {
		uint64_t now = pn_now_ns();
		uint64_t tick = S->idle_ns / 4 < TICK_NS ? S->idle_ns / 4 : TICK_NS;
		uint64_t wake = now + (tick ? tick : 1000000u);
		while (S->lru_tail && now - S->lru_tail->last_ns >= S->idle_ns) {
			ssess_free(S, S->lru_tail);
			atomic_fetch_add(&S->st_expired, 1);
		}
		/* sessions without a connection for the grace time: their clients are gone
		 * (a walk over the sessions: they are few, and it runs at most every tick) */
		for (struct ssess *s = S->lru_head; s; s = s->next) {
			if (!s->n_downs || s->live)
				continue;
			if (now - s->down_ns >= S->grace_ns) {
				for (unsigned i = 0; i < s->n_downs; i++)
					gone_later(S, s->downs[i]);
				s->n_downs = 0;
			} else if (s->down_ns + S->grace_ns < wake) {
				wake = s->down_ns + S->grace_ns;
			}
		}
		if (S->n_gone) {
			pn_peer *g = S->gone;
			unsigned n_g = S->n_gone;
			S->gone = NULL;
			S->n_gone = S->cap_gone = 0;
			pthread_mutex_unlock(&S->lk);
			for (unsigned i = 0; i < n_g; i++)
				pn_core_peer_gone(S->pn, g[i]);
			free(g);
			pthread_mutex_lock(&S->lk);
		}
		struct failed *fl = NULL;
		unsigned n_fl = 0, cap_fl = 0;
		unsigned n_out = atomic_load(&S->n_out);
		for (unsigned k = 0; k < n_out && !S->th_stop; k++) {
			struct csess *cs = S->out[k];
			int st = atomic_load(&cs->state);
			if (st == CS_PROBATION && now - cs->reconnected_ns >= PROBATION_NS) {
				atomic_store(&cs->state, st = CS_UP);
				cs->tries = 0;
			}
			if (st == CS_PROBATION && cs->reconnected_ns + PROBATION_NS < wake)
				wake = cs->reconnected_ns + PROBATION_NS;
			if (st != CS_OUTAGE)
				continue;
			if (now - cs->outage_ns >= cs->o.outage_ms * 1000000ull) {
				/* past the limit: their Cooperations fail; the next request starts over */
				for (uint32_t i = 0; i < cs->hi; i++) {
					struct cslot *sl = &cs->slots[i];
					if (!sl->busy || sl->failed)
						continue;
					sl->failed = true;
					if (n_fl == cap_fl) {
						cap_fl = cap_fl ? 2 * cap_fl : 16;
						struct failed *p = realloc(fl, cap_fl * sizeof *p);
						if (!p) {
							sl->failed = false;   /* tried again next round */
							cap_fl = n_fl;
							break;
						}
						fl = p;
					}
					fl[n_fl++] = (struct failed){ sl->coop, cs->peer };
				}
				atomic_store(&cs->state, CS_UP);
				cs->tries = 0;
				continue;
			}
			if (now >= cs->next_try_ns) {
				bool can_move = cs->fallback != PN_ANY &&
				                atomic_load(&cs->via) != cs->fallback;
				if (can_move && (cs->tries >= FALLBACK_TRIES ||
				                 cs->last_err == -PN_ENODEV))
					move(S, cs);
				int rc = resend_all(S, cs, false);
				cs->tries++;
				cs->last_err = rc;
				if (S->th_stop)
					break;
				now = pn_now_ns();
				if (rc == 0) {
					atomic_store(&cs->state, CS_PROBATION);
					cs->reconnected_ns = now;
					if (now + PROBATION_NS < wake)
						wake = now + PROBATION_NS;
					continue;
				}
				backoff_next(S, cs, now);
			}
			if (cs->next_try_ns < wake)
				wake = cs->next_try_ns;
		}
		if (n_fl) {
			pthread_mutex_unlock(&S->lk);
			for (unsigned i = 0; i < n_fl; i++)
				pn_core_coop_fail(S->pn, fl[i].coop, fl[i].peer, -PN_EOUTAGE);
			pthread_mutex_lock(&S->lk);
		}
		free(fl);
		if (S->th_stop)
			break;
		struct timespec ts = { (time_t)(wake / 1000000000u), (long)(wake % 1000000000u) };
		pthread_cond_timedwait(&S->th_cond, &S->lk, &ts);
	}
	pthread_mutex_unlock(&S->lk);
	return NULL;
}
