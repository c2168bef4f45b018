/* pn.h: Paradis-Net, the typed, event-driven message layer of Active RDMA.
 *
 * Follows Malpohl and Isaila's Paradis-Net: every endpoint is client and server at once; peers
 * are named "tcp:HOST:PORT", "udp:HOST:PORT", "rdma:HOST:PORT" (docs/rdma.md); there is no receive
 * call: handlers run on the library's threads when messages arrive, may run as long as they
 * like, and may send or forward.  forward() hands the obligation to reply to another peer,
 * which answers the origin directly (n+1 messages for n delegations).  A Cooperation registers
 * receive descriptors before the requests go out; replies carrying its token land in them, and
 * pn_coop_end waits until all arrived or a timeout passes (scatter/gather).
 *
 * Threading: all functions are thread-safe.  Handlers run on a pool of worker threads (not on
 * the I/O threads), so a handler may block, e.g. in pn_coop_end of a nested request.
 * Buffers passed to pn_send are reusable as soon as it returns.
 * Errors: functions return 0 or a negative PN_E* code (pn_strerror).
 */
#ifndef PN_H
#define PN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pn_err {
#define ERR(name, value, msg) PN_E##name = value,
#include "pn_err.def"
#undef ERR
	PN_ECOUNT
};
const char *pn_strerror(int err);  /* accepts err or -err */

struct pn;
typedef uint32_t pn_peer;          /* a peer of this endpoint, stable for its lifetime */
/* A peer id is a slot and the slot's generation: the slot of an anonymous peer whose
 * connection closed is reused (not before a minute), with a new generation, so memory does
 * not grow with the connections a server has seen, and an old id never names the new peer.
 * pn_peer_slot (below 2^20) indexes arrays of per-peer state; two live peers never share
 * one. */
#define PN_PEER_SLOT_BITS 20
#define PN_PEER_SLOTS     ((1u << PN_PEER_SLOT_BITS) - 1)   /* the last slot stays unused */
#define PN_PEER_GEN_MASK  0xfffu
static inline uint32_t pn_peer_slot(pn_peer p) { return p & ((1u << PN_PEER_SLOT_BITS) - 1); }
typedef uint16_t pn_type;          /* message type: 1..PN_MAX_TYPE */
typedef uint64_t pn_coop;          /* cooperation token; 0 means none */

#define PN_MAX_TYPE   4095
#define PN_ANY        ((pn_peer)0xffffffffu)   /* receive descriptor: from any peer */
#define PN_MAX_ENDPOINTS 8
#define PN_ADMIT_HEAD 2048         /* bytes of a message pn_opts.admit sees */

struct pn_opts {
	unsigned n_workers;        /* handler threads; 0 = 4 */
	uint64_t max_msg;          /* largest message accepted or sent; 0 = 256 MiB */
	unsigned connect_timeout_ms; /* 0 = 3000 */
	unsigned send_timeout_ms;  /* a send blocked this long fails the peer; 0 = 10000 */
	double drop_rate;          /* fault injection: fraction of received packets (udp) or
	                            * frames (tcp: ignored) to drop; also from env PN_DROP */
	unsigned udp_depth;        /* outstanding messages per peer (udp); 0 = 16 */
	unsigned udp_max_wait_ms;  /* an unacknowledged udp message is returned after; 0 = 5000 */
	unsigned spin_us;          /* pn_coop_end polls this long before sleeping; 0 = 50,
	                            * above 100000 = never (for machines short of cores) */
	/* Identity and admission (docs/net.md, "Identity and trust").  A peer that connects to
	 * us is known by its connection (tcp, rdma) or its datagrams' source address (udp); what
	 * it claims (the listening address in its HELLO, the origin of a message it forwards) is
	 * believed only from a member of the same cluster: over tcp and rdma, a peer that proved
	 * it holds cluster_key (an HMAC-SHA-256 challenge-response when the connection opens; the
	 * key never travels); over udp, a sender whose source address is in udp_trusted, or that
	 * proved cluster_key the same way before its first datagram (its datagrams then carry a
	 * MAC).  Without a key nobody's claims are believed; pn_forward then works only over
	 * udp_trusted. */
	const void *cluster_key;
	size_t cluster_key_len;
	/* a secret shared with clients, proved by the same challenge-response under other labels
	 * (never sent): an endpoint with one proves it on every connection it opens (udp: to
	 * every peer it sends to before hearing from it, and every datagram of the pair then
	 * carries a MAC under keys drawn from the proof); one that accepts a connection (udp: a
	 * proof) marks it proven (pn_peer_proven) and admitted when the proof is right, and goes
	 * on with it unproven when not.  Claims are not believed for it. */
	const void *secret;
	size_t secret_len;
	/* a second secret of greater rights, proved the same way under its own labels
	 * (what it allows is the application's to say; arfd: installing, admin-only regions).
	 * An endpoint with one proves it, instead of secret, on the connections it opens; one
	 * that accepts connections tells which of the two a peer proved (pn_peer_proof). */
	const void *admin_secret;
	size_t admin_secret_len;
	const char *const *udp_trusted;  /* NULL-terminated names "udp:HOST:PORT"; NULL: none */
	/* tls: (docs/net.md, "TLS"): the tcp transport inside TLS 1.3, everything above the
	 * same (the secrets are proved inside it).  An endpoint that listens on tls: presents
	 * tls_cert (PEM, the chain) with its key tls_key, and needs both to accept connections;
	 * one that connects verifies the server's certificate against tls_ca (PEM; NULL: the
	 * system's roots), which must name the address connected to (subjectAltName IP).  The
	 * files are read in pn_init.  NULL: from env PN_TLS_CERT, PN_TLS_KEY, PN_TLS_CA. */
	const char *tls_cert, *tls_key, *tls_ca;
	/* tcp, connections others open to us (udp: senders, the same way; udp_max_peers).  A
	 * connection is admitted once the application says so: admit (I/O thread, must not block) sees the first head_len bytes (at most
	 * PN_ADMIT_HEAD) of each message of a connection not yet admitted, whose whole length
	 * is len, before the rest is read; it returns 1 to admit the connection (e.g. the
	 * request carries the right secret), 0 to deliver this message without admitting it.
	 * NULL: a connection is admitted by its HELLO.  Until admitted, a connection may send
	 * messages of at most preauth_max bytes (a larger one closes it) and is closed after
	 * preauth_timeout_ms; a cluster member that proved the key is admitted at once. */
	int (*admit)(void *arg, pn_peer from, pn_type type, const void *head, size_t head_len,
	             uint64_t len);
	void *admit_arg;
	/* A message admit did not admit and that is over preauth_max closes its connection;
	 * refuse (I/O thread, must not block; NULL: nothing), called first with the same head,
	 * lets the application answer why (e.g. "this server requires its secret"): what it
	 * sends to from goes out before the connection is closed. */
	void (*refuse)(void *arg, pn_peer from, pn_type type, pn_coop coop, const void *head,
	               size_t head_len);
	uint32_t preauth_max;      /* 0 = 4096 */
	unsigned preauth_timeout_ms; /* 0 = 10000 */
	unsigned idle_timeout_ms;  /* an admitted connection silent this long is closed; 0 = never */
	uint64_t rx_budget;        /* payload bytes being received on all connections at once:
	                            * past it, sockets wait (back-pressure); 0 = no limit */
	unsigned max_conns;        /* connections others opened to us; 0 = RLIMIT_NOFILE - 64
	                            * (rdma: 256).  Past it, the oldest one not admitted is
	                            * closed, else the new one (rdma: the new one is rejected) */
	unsigned max_conns_per_addr; /* the same from one IP address; 0 = no limit */
	unsigned peer_quarantine_ms; /* a closed connection's anonymous peer record, or a udp
	                            * peer's retired after udp_idle_ms, is reused after this
	                            * (its id is dead at once); 0 = 60000.  Tests shorten it;
	                            * it must outlast any send or handler that may still use
	                            * the old id */
	/* udp: peers known by a source address this endpoint did not name itself (pn_peer_get
	 * names, and udp_trusted members, are kept for good).  A sender not yet admitted (by
	 * admit, as over tcp: it sees the head of a message, in its first datagram; admit NULL:
	 * at once) may send messages of at most preauth_max bytes (larger ones are dropped,
	 * never acknowledged) and is one of at most udp_preauth_peers; when those are taken, a
	 * new sender gets a peer only with a first datagram admit accepts at once.  Admitted ones are at most udp_max_peers; past
	 * it, new senders' datagrams are dropped.  A peer with nothing in flight that sent
	 * nothing for udp_idle_ms (not admitted: 2 s, or udp_idle_ms if shorter) is retired
	 * like a closed tcp connection's; retired ones count toward the bounds until their
	 * quarantine ends.  So spoofed source addresses cost a bounded table, not memory
	 * without end.  Messages in reassembly are bounded by rx_budget together. */
	unsigned udp_max_peers;    /* 0 = 4096 */
	unsigned udp_preauth_peers; /* 0 = 1024 */
	unsigned udp_idle_ms;      /* 0 = 60000 */
	/* Sessions others open with us (docs/net.md, "Sessions"): a client's session outlives
	 * its connections; its requests carry a slot and a sequence number, and the reply to
	 * the last request of each slot is kept, so a request sent again after a reconnect is
	 * answered from there instead of running twice.  Memory is bounded by these; a
	 * session is made only at the first request of an admitted connection. */
	unsigned max_sessions;     /* 0 = 1024; past it, the least recently used session
	                            * without a live connection is dropped, else refused */
	unsigned session_slots;    /* slots a session may have; 0 = 64 */
	unsigned session_idle_ms;  /* a session without requests this long is dropped;
	                            * 0 = 300000 (longer than a client's outage limit) */
	unsigned session_grace_ms; /* a session's client whose connection closed and who has
	                            * not come back within this is gone: pn_set_peer_down's
	                            * function hears of it then; 0 = 2000 */
	uint64_t session_cache_max; /* reply bytes kept over all sessions; 0 = 64 MiB */
	uint32_t session_reply_max; /* a larger reply is not kept (a repeat of its request
	                            * gets PN_EUNCACHED); 0 = 2 MiB */
	/* Hold what arrives for the application (messages for handlers, and the admit and
	 * refuse calls) until pn_start: the endpoint listens from pn_init on (pn_self names it),
	 * but nothing reaches a handler before the caller has set them.  A server restarted
	 * under its clients needs it: their requests arrive the moment it listens, and one that
	 * found no handler would fail (a session's request: PN_ENOHANDLER; any other: dropped
	 * unanswered).  Replies to our own Cooperations are not held. */
	bool hold;
	/* Diagnostics the error codes cannot carry (rdma: ibv_wc_status_str of a failed
	 * completion, a rejected connection).  Called from any thread; NULL: stderr. */
	void (*log)(void *arg, const char *msg);
	void *log_arg;
};

/* How fast this endpoint's data to peer has been delivered lately (tcp, tls: the kernel's
 * estimate, TCP_INFO's delivery rate), in bytes per second: the lowest sample of the last
 * 2 s that was not taken while the sender had too little to send, nor while the receiver's
 * window held it back half the time (such a sample measures an end, not the link).  Without one, *limited is true (the rate then only what the
 * kernel says now).  0, -PN_ENOTSUP (udp, rdma), -PN_EPEERDOWN (no connection), -PN_EINVAL. */
int pn_link_rate(struct pn *pn, pn_peer peer, uint64_t *bytes_per_s, bool *limited);

/* How fast peer's data reaches this endpoint (tcp, tls), in bytes per second, as timed on
 * the messages of 8 KiB or more that arrived (each one's bytes after its first read, over
 * the time until the last, when the link kept the reader waiting): the lowest recent
 * sample, kept while samples near it come, so a single request-response exchange measures
 * it where pn_link_rate needs a sender that keeps the link busy, and a shaper's bursts do
 * not hide it (rules: net/pn_tcp.c, rx_rate_sample).  0 in *bytes_per_s: nothing measured
 * (small messages only, or each was all there at once, as on loopback).  0, -PN_ENOTSUP
 * (udp, rdma), -PN_EPEERDOWN (no connection), -PN_EINVAL. */
int pn_link_rx_rate(struct pn *pn, pn_peer peer, uint64_t *bytes_per_s);

/* Open an endpoint listening on each name in listen[] ("tcp:127.0.0.1:0": port 0 picks a free
 * port; pn_self gives the real name).  Binding 0.0.0.0 is allowed but never the default.
 * Returns NULL with a message in err. */
struct pn *pn_init(const char *const *listen, unsigned n, const struct pn_opts *opts, char *err,
                   size_t errlen);
/* pn_opts.hold: handlers are set; what arrived meanwhile (and everything after) goes to them
 * now.  0 (also without hold, or when called again). */
int pn_start(struct pn *pn);
/* Stop the I/O and worker threads (running handlers finish first), fail every open
 * Cooperation with PN_ESHUTDOWN, close connections, free everything.  The caller makes sure
 * no other thread is inside a pn_* call on this endpoint when it returns. */
void pn_finalize(struct pn *pn);

/* This endpoint's own name for a scheme ("tcp"), e.g. "tcp:127.0.0.1:40123"; NULL if none. */
const char *pn_self(struct pn *pn, const char *scheme);

/* The peer named name (canonical form: scheme:numeric-address:port); connects lazily on the
 * first send.  Host names are resolved once, here. */
int pn_peer_get(struct pn *pn, const char *name, pn_peer *out);
const char *pn_peer_name(struct pn *pn, pn_peer peer);
/* Whether peer's connection proved pn_opts.secret or pn_opts.admin_secret when it opened
 * (tcp; udp: the association its datagrams are MACed under; docs/net.md), and which. */
bool pn_peer_proven(struct pn *pn, pn_peer peer);
enum pn_proof { PN_PROOF_NONE, PN_PROOF_SECRET, PN_PROOF_ADMIN };
enum pn_proof pn_peer_proof(struct pn *pn, pn_peer peer);

/* A handler gets the sender (for forwarded messages: the origin), the message type, the
 * Cooperation token to answer with, and the payload (valid until it returns; may be modified).
 * opt: 0, or PN_INLINE for a short handler that never blocks: it then runs on the transport's
 * I/O thread, saving a thread switch per message (the latency path of request/reply).
 * Type 0 (PN_OTHER_TYPES) sets the handler of every message type that has none of its own and
 * that is no reply to one of our Cooperations (a server answers unknown requests with it);
 * without it such messages are dropped. */
#define PN_INLINE 1
#define PN_OTHER_TYPES 0
typedef void pn_handler(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                        size_t len, void *arg);
int pn_set_handler(struct pn *pn, pn_type type, int opt, pn_handler *fn, void *arg);

/* Run to completion, hand off the exception.  An inline handler that turns out to take long
 * (or is about to block) calls pn_yield: another thread takes over the reading this thread
 * was doing, and the handler goes on, as long as it likes, while the transport reads and
 * handles other messages meanwhile, its later messages on the same connection included.  So
 * a server can start every request on the thread that read it (no hand-off, no wake-up of
 * another thread: the latency of a plain socket server) and pay for a second thread only
 * when a request outlives a small budget.  Inside a handler only.  0: the thread may now
 * block (also when it already could: a worker's handler, or a second call); -PN_ENOTSUP:
 * this transport cannot hand its reading over (udp:, rdma:: do not block there);
 * -PN_ENOMEM / -PN_ESYS: no thread for it now; -PN_ENOTHANDLER.  pn_may_yield says, without
 * doing it, whether pn_yield would succeed now (0), so a server can decide to start the
 * request here or queue it for its own workers. */
int pn_yield(struct pn *pn);
int pn_may_yield(struct pn *pn);

/* fn(pn, peer, arg) is called when a connection to peer broke or was closed (tcp:, rdma:;
 * EOF, an error, a malformed frame), after that peer's pending Cooperations failed, on the
 * transport's I/O thread: it must not block.  udp: has no connections and never calls it.
 * A server uses it to stop work for a client that is gone.  NULL: no call.  For a connection
 * of a session (pn_session_open; either side), which rides through its loss: on the server
 * it is called (on the session thread instead) once the session has had no connection for
 * session_grace_ms, never if its client came back first, and at once after its client ended
 * the session (BYE, sent by pn_finalize); on the client, not while the session rides. */
typedef void pn_peer_down_fn(struct pn *pn, pn_peer peer, void *arg);
void pn_set_peer_down(struct pn *pn, pn_peer_down_fn *fn, void *arg);

/* Sessions, the client's side (docs/net.md, "Sessions"; tcp:, tls:, rdma:).  From this call on,
 * every request (a pn_send with a Cooperation token) to peer goes on a session whose id
 * (128 random bits) this endpoint chose: it takes a slot (at most `slots` in flight; a
 * further send waits up to send_timeout_ms for one) and the slot's next sequence number,
 * and its bytes are kept until its Cooperation ends.  When the connection breaks (EOF,
 * reset, the peer restarted), the requests in flight do not fail: they are sent again with
 * the same slot and sequence on a new connection, after jittered exponential back-off
 * (backoff_min_ms doubling to backoff_max_ms), until the outage has lasted outage_ms; then
 * they fail with PN_EOUTAGE.  A peer that kept the session answers a repeat from its reply
 * cache (the request ran once); a restarted peer runs it again.  Time spent in an outage
 * does not count toward pn_coop_end's timeout.  With PN_SESSION_FAIL_FIRST, a session that
 * has never heard from its peer does not ride: a first connection that cannot be made
 * fails its requests at once, as without a session (a mount of a server that is not
 * there should say so, not wait).  Requests sent to peer before the call,
 * and messages without a token, are not covered.  0, -PN_ENOTSUP (udp:),
 * -PN_EINVAL, -PN_ENOMEM; a second call for the same peer changes nothing (0). */
struct pn_session_opts {
	unsigned slots;            /* 0 = 64; the peer's session_slots must allow as many */
	unsigned outage_ms;        /* 0 = 60000 */
	unsigned backoff_min_ms;   /* 0 = 20 */
	unsigned backoff_max_ms;   /* 0 = 1000 */
	unsigned flags;            /* PN_SESSION_FAIL_FIRST */
};
#define PN_SESSION_FAIL_FIRST 1u
int pn_session_open(struct pn *pn, pn_peer peer, const struct pn_session_opts *o);
/* The session to peer moves to fallback (a name, "tcp:HOST:PORT": the same server over
 * another transport of this endpoint) when peer's transport fails: a device error, or 3
 * connections of one outage in a row that could not be made or broke at once.  Its
 * requests in flight are sent there again with the same session id, slots and sequence
 * numbers, so a server that listens on both finds the same session: nothing runs twice and
 * the application sees no error; replies from fallback fill descriptors that name peer.
 * The outage limit counts from the first break.  It never moves back.  0, -PN_EINVAL (no
 * session to peer, fallback is peer or has a session of its own), -PN_EADDR,
 * -PN_ENOTRANSPORT (this endpoint has no transport for fallback). */
int pn_session_fallback(struct pn *pn, pn_peer peer, const char *fallback);
/* 1 when the session to peer moved to its fallback: *via is where its requests go, why
 * says from where and why (also logged when it happened); 0 when not, -PN_EINVAL. */
int pn_session_moved(struct pn *pn, pn_peer peer, pn_peer *via, char *why, size_t len);

/* Send a message.  coop: 0, a token from pn_coop_start (a request whose replies come back to
 * it), or the token a handler received (a reply).  Returns once the bytes are handed to the
 * transport; errors: PN_EPEERDOWN, PN_EREFUSED, PN_ETIMEDOUT, PN_ETOOBIG, PN_ESHUTDOWN.  When
 * a request of one of our Cooperations cannot be sent, one of its descriptors that the peer
 * could have filled fails with the same error, so pn_coop_end does not wait for it. */
int pn_send(struct pn *pn, pn_peer to, pn_type type, pn_coop coop, const void *msg, size_t len);

/* pn_send with flags for a request on a session (pn_session_open; elsewhere they change
 * nothing).  PN_SEND_KEEP: the caller keeps msg valid and unchanged until the Cooperation
 * ends, so the session need not copy it (large requests).  PN_SEND_IDEMPOTENT: running it
 * twice is harmless (a read), so the peer keeps no copy of its reply and runs a repeat
 * again instead (large replies). */
#define PN_SEND_KEEP       1u
#define PN_SEND_IDEMPOTENT 2u
int pn_send_ex(struct pn *pn, pn_peer to, pn_type type, pn_coop coop, const void *msg,
               size_t len, unsigned flags);

/* Inside a handler only: pass the message being handled (or a new payload) to another peer,
 * keeping its origin and Cooperation token, so that peer's handler sees the origin as `from`
 * and its reply goes straight to the origin.  PN_ENOTHANDLER outside a handler. */
int pn_forward(struct pn *pn, pn_peer to, pn_type type, const void *msg, size_t len);
/* The same outside a handler, for a request a server took from its handler to answer later
 * (a run on its own thread): origin and coop are the request's `from` and token as its
 * handler got them.  An anonymous origin (a client that connected to us) is named by the
 * listening address its HELLO claimed, which this endpoint never connects to but the next
 * peer, a member, will: so the member answers the client directly (docs/net.md,
 * "Delegation for clients").  -PN_EINVAL: no token, or an origin with no such address
 * (udp, rdma clients); else as pn_send. */
int pn_forward_for(struct pn *pn, pn_peer origin, pn_coop coop, pn_peer to, pn_type type,
                   const void *msg, size_t len);
/* Inside a handler: the cluster member that forwarded the message being handled (whose
 * origin `from` is only on that member's word), or PN_ANY when it came from `from` itself
 * (or outside a handler).  A server uses it to grant a forwarded request the rights its
 * forwarder vouches for. */
pn_peer pn_forwarded_by(struct pn *pn);

/* Batching: the small frames this thread sends between pn_cork and pn_uncork go out
 * together at pn_uncork (tcp: one write per connection instead of one per frame), as a
 * pipelined burst of requests should.  Pairs nest.  A thread must not wait for replies to
 * corked requests before it uncorks.  udp and rdma send at once as ever. */
void pn_cork(struct pn *pn);
void pn_uncork(struct pn *pn);

/* A receive descriptor: where one reply of a Cooperation goes. */
struct pn_rcv_desc {
	void *buf;                 /* in: buffer for the reply; NULL: allocated (free() it) */
	size_t cap;                /* in: its size */
	pn_type type;              /* in: accepted message type */
	pn_peer from;              /* in: accepted sender, or PN_ANY */
	int status;                /* out: 0 arrived, 1 pending, or -PN_E* */
	size_t len;                /* out: payload length */
	pn_peer got_from;          /* out: who sent it */
};

/* Register a Cooperation over n descriptors (kept by the library until pn_coop_end returns;
 * the caller must not touch them meanwhile).  Returns a token, or 0 on error. */
pn_coop pn_coop_start(struct pn *pn, struct pn_rcv_desc *rcv, unsigned n);
/* Wait until every descriptor is filled or failed, or timeout_ms passes (< 0: no limit).
 * Ends the Cooperation either way.  Returns 0 when all arrived, else the first error of a
 * descriptor (PN_EPEERDOWN, PN_ERETURNED, PN_ETRUNC, ...) or PN_ETIMEDOUT. */
int pn_coop_end(struct pn *pn, pn_coop coop, int timeout_ms);

#define PN_LAT_BUCKETS 24          /* latency histogram: bucket i counts [2^i, 2^(i+1)) us */
struct pn_stats {
	uint64_t msgs_sent, bytes_sent, msgs_recv, bytes_recv;
	uint64_t forwarded;        /* pn_forward calls */
	uint64_t retransmits;      /* udp: packets sent again */
	uint64_t duplicates;       /* udp: duplicate packets suppressed */
	uint64_t returned;         /* messages returned undelivered */
	uint64_t dropped;          /* fault injection: packets dropped on purpose */
	uint64_t bad_frames;       /* malformed frames received (connection closed) */
	uint64_t rdma_replies_in;  /* rdma: replies a peer wrote straight into our descriptors */
	uint64_t rdma_replies_out; /* rdma: replies we wrote straight into a requester's memory */
	uint64_t rdma_onesided;    /* rdma: pn_mem_read/pn_mem_write operations completed */
	uint64_t udp_refused;      /* udp: datagrams dropped before admission (no room for a
	                            * new sender, or a message over preauth_max) */
	uint64_t udp_bad_macs;     /* udp: datagrams dropped for their MAC (forged, changed, from
	                            * an older association, or plain from a proven peer) */
	uint64_t rx_waits;         /* tcp, rdma: messages that waited for rx_budget */
	uint64_t polls_found;      /* waits that polled before sleeping (spin_us) and found */
	uint64_t polls_wasted;     /* ... and found nothing: slept after all */
	uint64_t polls_denied_load;    /* waits that slept at once: the machine looked full, */
	uint64_t polls_denied_resting; /* ... the role rested after fruitless polls, */
	uint64_t polls_denied_busy;    /* ... other threads of ours were polling (own CPUs - 1) */
	uint64_t spin_looks, spin_full_looks; /* looks at the machine's load, and full ones */
	uint64_t spin_follows;     /* less than two CPUs of time: moves of a tcp reader to the
	                            * CPU its client's requests come from (docs/net.md) */
	uint64_t waits_read;       /* reply waits that read the connection in the caller */
	uint64_t waits_woken;      /* ... that slept until another thread (the I/O thread)
	                            * delivered the reply: a wake-up on the request's path */
	uint64_t coop_lat[PN_LAT_BUCKETS]; /* pn_coop_start .. last reply, per Cooperation */
	uint64_t peers;            /* peer records: every peer known now */
	uint64_t peers_retired;    /* ... of which closed anonymous ones waiting for reuse */
	/* sessions (docs/net.md, "Sessions") */
	uint64_t sessions;         /* sessions others hold with us now */
	uint64_t session_bytes;    /* their memory: records, slots and kept replies */
	uint64_t session_replays;  /* repeated requests answered from a kept reply */
	uint64_t session_dropped;  /* repeats of a request still running (its reply follows) */
	uint64_t session_refused;  /* requests refused: bad slot, sequence, session */
	uint64_t session_expired;  /* sessions dropped: idle, or for room */
	uint64_t session_resent;   /* our requests sent again after a reconnect */
	uint64_t session_outages;  /* our sessions' outages (connection lost with requests) */
	uint64_t session_moves;    /* our sessions moved to their fallback (pn_session_fallback) */
};
void pn_stats_get(struct pn *pn, struct pn_stats *out);

/* CLOCK_MONOTONIC_COARSE in nanoseconds: a few milliseconds' resolution, for the clock reads
 * on every request (rates over windows, last-activity times), where the precise clock's
 * cost would show. */
uint64_t pn_coarse_ns(void);

/* ---- one-sided access (rdma: endpoints only; docs/rdma.md) ----
 * The owner of memory exports it and sends the handle (PN_MEM_HANDLE_LEN opaque bytes) to
 * whoever may access it, in any message; a holder reads or writes it with pn_mem_read/write,
 * which the owner's CPU never sees.  Both return -PN_ENOTRANSPORT when the endpoint or the
 * peer is not rdma: the caller then asks the owner with an ordinary message instead. */
#define PN_MEM_READ   1            /* access a handle grants */
#define PN_MEM_WRITE  2
#define PN_MEM_HANDLE_LEN 24
struct pn_mem;
/* Register [buf, buf+len) for remote access (PN_MEM_READ|PN_MEM_WRITE); *out is released
 * with pn_mem_unexport, which revokes the handle.  The memory must stay mapped till then. */
int pn_mem_export(struct pn *pn, void *buf, size_t len, int access, struct pn_mem **out,
                  uint8_t handle[PN_MEM_HANDLE_LEN]);
void pn_mem_unexport(struct pn *pn, struct pn_mem *mem);
/* Copy len bytes at offset off of the peer's exported memory into dst (read), or src into it
 * (write); blocking, thread-safe.  -PN_EINVAL when [off, off+len) is outside the handle,
 * -PN_EACCESS when the owner refused (revoked, or no such right), -PN_EPEERDOWN ... */
int pn_mem_read(struct pn *pn, pn_peer peer, const uint8_t handle[PN_MEM_HANDLE_LEN],
                uint64_t off, void *dst, size_t len);
int pn_mem_write(struct pn *pn, pn_peer peer, const uint8_t handle[PN_MEM_HANDLE_LEN],
                 uint64_t off, const void *src, size_t len);

#endif
