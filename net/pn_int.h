/* pn_int.h: private structures of Paradis-Net shared by pn.c, wire.c and the transports.
 *
 * pn.c (peers, handlers, Cooperations, worker threads) never mentions sockets: each transport
 * (pn_tcp.c, pn_udp.c, pn_rdma.c) fills one const struct pn_transport and talks back to
 * the core only through the pn_core_* functions below.
 */
#ifndef PN_INT_H
#define PN_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "pn.h"

/* ---- wire header (wire.c), common to every transport ----
 *
 *     0      2     3     4      6       8          12                 20           40
 *     +------+-----+-----+------+-------+----------+------------------+------------+
 *     | 'PN' | ver | kind| type | flags | len      | coop             | origin     |
 *     +------+-----+-----+------+-------+----------+------------------+------------+
 *     u16 magic 0x4e50, u8 version 1, u8 kind (PN_K_*), u16 type, u16 flags, u32 payload
 *     length, u64 Cooperation token, then the origin endpoint (20 bytes: u8 scheme, u8 family
 *     4|6, u16 port, u8 addr[16]): the listening address of the peer that will get the reply.
 *     All fields little-endian except port and addr, which are in network order as in
 *     sockaddr.  The payload follows.
 *
 *     A session request (kind SREQ, docs/net.md "Sessions") carries its slot and sequence
 *     number where the origin would be (a session request is never forwarded, and the
 *     origin of a message that is not forwarded is the sender's own anyway):
 *     20: u32 slot, 24: u32 seq, 28..39: zero.
 */
#define PN_MAGIC       0x4e50u
#define PN_VERSION     1
#define PN_HDR_LEN     40

enum pn_kind {
	PN_K_MSG = 1,              /* an application message */
	PN_K_HELLO = 2,            /* first frame of a connection: origin = the sender's address
	                            * (a claim: believed only once proven, see PN_F_PROVE) */
	PN_K_CHALLENGE = 3,        /* tcp, rdma, answer to a HELLO with PN_F_PROVE: the acceptor's nonce
	                            * and its own proof (PN_NONCE_LEN + PN_MAC_LEN bytes), or
	                            * nothing when it has no cluster key */
	PN_K_AUTH = 4,             /* tcp, rdma, the connector's proof (PN_MAC_LEN bytes) */
	PN_K_SREQ = 5,             /* a request of a session: as MSG, with slot and seq */
	PN_K_NACK = 6,             /* a session request refused: the payload is a u32 PN_E code;
	                            * coop is the request's token */
	PN_K_BYE = 7,              /* tcp, the client ends the session of this connection (its
	                            * endpoint closes): no payload; never makes a connection */
};
#define PN_F_FORWARDED 0x0001u /* origin is not the sender: reply to origin */
#define PN_F_PROVE     0x0002u /* HELLO: the sender will prove it holds the cluster key; the
                                * payload is its nonce (PN_NONCE_LEN bytes) */
#define PN_F_SECRET    0x0004u /* HELLO with PN_F_PROVE: the key is pn_opts.secret instead */
#define PN_F_ADMIN     0x0020u /* HELLO with PN_F_PROVE | PN_F_SECRET: pn_opts.admin_secret */
#define PN_F_SESSION   0x0008u /* HELLO: the payload ends with a session block (below) */
#define PN_F_IDEMPOTENT 0x0010u /* SREQ: keep no reply; run a repeat again (pn_send_ex) */
/* The session block of a HELLO: the session id (16 random bytes, chosen by the client) and
 * u32 the number of slots it asks for. */
#define PN_SID_LEN     16
#define PN_SESS_BLOCK  (PN_SID_LEN + 4)
enum pn_key { PN_KEY_CLUSTER, PN_KEY_SECRET, PN_KEY_ADMIN };
#define PN_NONCE_LEN   32
#define PN_MAC_LEN     32      /* HMAC-SHA-256 */

enum pn_scheme { PN_S_TCP = 1, PN_S_UDP = 2, PN_S_RDMA = 3, PN_S_TLS = 4 };
#define PN_S_MAX PN_S_TLS

struct pn_addr {
	uint8_t scheme;            /* enum pn_scheme */
	uint8_t family;            /* 4 or 6 */
	uint16_t port;             /* network order */
	uint8_t addr[16];          /* network order; IPv4 in the first 4 bytes */
};

struct pn_hdr {
	uint8_t kind;
	pn_type type;
	uint16_t flags;
	uint32_t len;
	pn_coop coop;
	struct pn_addr origin;     /* not for SREQ: */
	uint32_t slot, seq;        /* SREQ only */
};

void pn_wire_put(uint8_t out[PN_HDR_LEN], const struct pn_hdr *h);
/* Parse and check a header (magic, version, kind, type range, length <= max_msg).
 * Returns 0 or -PN_EPROTO / -PN_ETOOBIG. */
int pn_wire_get(const uint8_t in[PN_HDR_LEN], struct pn_hdr *h, uint64_t max_msg);

/* Names <-> addresses: "tcp:127.0.0.1:7000", "udp:[::1]:7000". */
int pn_addr_parse(const char *name, struct pn_addr *a, int resolve);
void pn_addr_name(const struct pn_addr *a, char *buf, size_t len);
socklen_t pn_addr_to_sockaddr(const struct pn_addr *a, struct sockaddr_storage *ss);
void pn_addr_from_sockaddr(struct pn_addr *a, uint8_t scheme, const struct sockaddr *sa);
int pn_addr_eq(const struct pn_addr *a, const struct pn_addr *b);
/* the same IP address (family and bytes), whatever the port and scheme */
bool pn_addr_same_host(const struct pn_addr *a, const struct pn_addr *b);

/* ---- peers ---- */
#define PN_NAME_LEN 64
struct pn_peer_rec {
	pn_peer id;                /* its slot, and the slot's generation (pn_peer_slot) */
	struct pn_addr addr;       /* anonymous peers: the remote end of their connection */
	bool anon;                 /* known only by one connection (it claimed nothing we believe):
	                            * never found by address, never connected to */
	bool pinned;               /* named by the application (pn_peer_get): never retired */
	struct pn_peer_rec *next_named; /* its chain in the table of peers found by address */
	uint8_t proven;            /* enum pn_proof: what its connection proved (set before any
	                            * of its messages is delivered) */
	char name[PN_NAME_LEN];
	void *tp_state;            /* the transport's per-peer state, guarded by the transport */
	/* an anonymous peer whose connection closed, or a udp peer gone quiet
	 * (pn_core_peer_retire): its id names nobody, and the record waits (under pn's lock)
	 * to be reused */
	bool retired;
	uint64_t retired_ns;
	struct pn_peer_rec *next_retired;
	/* the session its connection's HELLO named (docs/net.md, "Sessions"): only noted here;
	 * the session itself is found or made at its first request after admission */
	bool has_sid;
	uint8_t sid[PN_SID_LEN];
	uint32_t sess_slots;       /* slots it asked for */
	/* an anonymous peer: the listening address its HELLO claimed (tcp).  Not believed and
	 * never connected to by this endpoint; a forward of its request names it as the origin,
	 * so that the member the request is forwarded to can answer it (docs/net.md,
	 * "Delegation for clients") */
	bool has_claim;
	struct pn_addr claim;
};

/* ---- transports ---- */
struct pn_tp;                  /* a transport instance, private to its file */

struct pn_transport {
	const char *scheme;        /* "tcp", "udp" */
	uint8_t scheme_id;         /* enum pn_scheme */
	/* Listen on *self (port 0: pick one, and write the real port back into *self); start the
	 * transport's I/O thread(s). */
	int (*open)(struct pn *pn, struct pn_addr *self, struct pn_tp **out, char *err, size_t errlen);
	/* Stop threads, close everything, free per-peer state (tp_state of every peer). */
	void (*close)(struct pn_tp *tp);
	/* Send one frame (header + payload) to peer, connecting first if needed.  May be called
	 * from any thread at once; returns when the bytes are handed over (the caller may reuse
	 * payload).  0 or -PN_E*. */
	int (*send)(struct pn_tp *tp, struct pn_peer_rec *peer, const struct pn_hdr *h,
	            const void *payload, size_t len);
	/* Optional (rdma): Cooperation coop ends; the transport drops what it attached to
	 * descriptor `cookie` of it (pn_core_coop_target), e.g. revokes the remote access to the
	 * buffer that the peer did not use, before the buffer goes back to the caller. */
	void (*release)(struct pn_tp *tp, pn_coop coop, uint32_t cookie);
	/* Optional (tcp): a thread waiting for a reply from peer reads the peer's connection
	 * itself for up to timeout_ms, delivering what arrives through the usual core calls, and
	 * returns early when wake_fd (an eventfd) becomes readable: the core signals it when the
	 * reply came another way (a forwarded reply, on another connection).
	 * wake_fd -1: the reply can only come through what the transport reads (the core
	 * knows no other way to complete the wait), so it may block in a receive call itself,
	 * looking up at least every few milliseconds for the core's timeouts and shutdown.
	 * 1: it read something or was woken, 0: timeout, -1: not possible now (sleep instead). */
	int (*wait_read)(struct pn_tp *tp, struct pn_peer_rec *peer, int wake_fd, int timeout_ms);
	/* Optional (tcp): a thread is about to sleep until a Cooperation completes; whatever
	 * wait_read left to the waiters must now be read by the transport's own threads. */
	void (*kick)(struct pn_tp *tp);
	/* Optional (tcp): called by an inline handler on the thread that read its message
	 * (pn_yield): another thread takes over this thread's reading, so the handler may go on
	 * as long as it likes.  check_only: only say whether that is possible now.  0 (done,
	 * or possible), 1 (the calling thread is not one of the transport's readers: nothing to
	 * hand over), or -PN_E* (not possible: out of threads). */
	int (*yield)(struct pn_tp *tp, bool check_only);
	/* Optional (tcp): pn_cork (on) and pn_uncork (off) of the calling thread. */
	void (*cork)(struct pn_tp *tp, bool on);
	/* Optional (tcp): pn_link_rate for peer's connection. */
	int (*link_rate)(struct pn_tp *tp, struct pn_peer_rec *peer, uint64_t *bytes_per_s,
	                 bool *limited);
	/* Optional (tcp): pn_link_rx_rate for peer's connection. */
	int (*link_rx_rate)(struct pn_tp *tp, struct pn_peer_rec *peer, uint64_t *bytes_per_s);
};

/* TCP_INFO's delivery rate of socket fd (linkrate.c), and its counters of the time spent
 * sending and of that, the time the receiver's window held it back (cumulative, us).  0 or
 * -PN_ENOTSUP. */
/* TCP_INFO's counters since the connection began: the time the sender had data in flight, the
 * part of it the receiver's window held it back, and the bytes the peer acknowledged */
struct pn_sock_busy { uint64_t busy_us, rwnd_us, acked; };
int pn_sock_delivery_rate(int fd, uint64_t *bytes_per_s, bool *app_limited,
                          struct pn_sock_busy *busy);

/* The most a connection carried in one direction in a window of PN_CARRIED_NS lately, and
 * when: its link's rate is at least that, whatever a sample of it said (linkrate.c).  One
 * thread adds (pn_carried_add), any reads (pn_carried_floor). */
struct pn_carried {
	uint64_t t0, from;             /* the window's start (0: none yet) and the count then */
	_Atomic uint64_t bps, at_ns;
};
#define PN_CARRIED_NS 250000000ull     /* a window: at least this long ... */
#define PN_CARRIED_BYTES (1u << 20)    /* ... and this much, or it says nothing */
#define PN_CARRIED_KEEP_NS 10000000000ull  /* what a window showed stands this long */
void pn_carried_add(struct pn_carried *w, uint64_t now_ns, uint64_t total);
uint64_t pn_carried_floor(struct pn_carried *w, uint64_t now_ns, uint64_t rate);

/* The sender's view of a link (pn_link_rate), from the kernel's looks at the connection
 * (TCP_INFO: its last delivery-rate sample, whether that was app-limited, the busy counters):
 * pn_tx_rate_look takes one look at now_ns and says the rate to report and whether it is
 * unknown (*limited).  Zeroed to begin; the caller serializes the looks. */
struct pn_tx_rate {
	uint64_t rate_bps, rate_at_ns;     /* the lowest sample kept, and when it was taken */
	struct pn_sock_busy last;          /* the counters at the last look */
	struct pn_carried carried;         /* what the peer acknowledged */
};
#define PN_TX_RATE_KEEP_NS 2000000000ull  /* a sample stands this long */
void pn_tx_rate_look(struct pn_tx_rate *k, uint64_t now_ns, uint64_t rate, bool app,
                     const struct pn_sock_busy *busy, uint64_t *bytes_per_s, bool *limited);

extern const struct pn_transport pn_tcp_transport;
extern const struct pn_transport pn_udp_transport;
extern const struct pn_transport pn_rdma_transport;
extern const struct pn_transport pn_tls_transport;   /* pn_tcp.c, over pn_tls.c */

/* ---- TLS (pn_tls.c): the record layer of tls: connections, for pn_tcp.c ---- */
struct pn_tls_ctx;             /* an endpoint's certificate, key and trusted CAs */
struct pn_tls;                 /* one connection's TLS state */
/* Read o->tls_cert, tls_key (both or neither: without them the endpoint only connects)
 * and tls_ca (NULL: the system's roots).  0, or -PN_EINVAL with the reason in err. */
int pn_tls_ctx_new(const struct pn_opts *o, struct pn_tls_ctx **out, char *err, size_t errlen);
void pn_tls_ctx_free(struct pn_tls_ctx *x);
bool pn_tls_can_accept(const struct pn_tls_ctx *x);
/* TLS over the connected non-blocking socket fd: as the client of server (its certificate
 * must name that address), or, server NULL, as the acceptor.  NULL: out of memory. */
struct pn_tls *pn_tls_new(struct pn_tls_ctx *x, int fd, const struct pn_addr *server);
void pn_tls_free(struct pn_tls *t);
/* One step of the handshake: 0 done, PN_TLS_WANT_READ / _WRITE (call again when the socket
 * is readable / writable), or with the reason in err -PN_ETLS (a certificate that does not
 * verify, not TLS, no common ground) or -PN_EPEERDOWN (the connection ended). */
#define PN_TLS_WANT_READ  1
#define PN_TLS_WANT_WRITE 2
int pn_tls_handshake(struct pn_tls *t, char *err, size_t errlen);
/* As recv(MSG_DONTWAIT) and sendmsg on a non-blocking socket: bytes, 0 at the end (recv),
 * or -1 with errno (EAGAIN: wait for the socket).  pn_tls_send takes from the front of iov;
 * after EAGAIN it must be called again with the same bytes in front.  Thread-safe: a
 * reader and a writer may call at once (one reader and one writer at a time). */
ssize_t pn_tls_recv(struct pn_tls *t, void *buf, size_t len);
ssize_t pn_tls_send(struct pn_tls *t, const struct iovec *iov, int n_iov);
/* Bytes decrypted or read from the socket and not yet returned: poll would not see them. */
bool pn_tls_pending(struct pn_tls *t);

/* ---- what transports call in the core (pn.c) ---- */

/* The endpoint's options (defaults filled in). */
const struct pn_opts *pn_core_opts(struct pn *pn);
/* The peer with this address, created if new; NULL when out of memory. */
struct pn_peer_rec *pn_core_peer(struct pn *pn, const struct pn_addr *a);
/* The peer with this address if there is one (never created). */
struct pn_peer_rec *pn_core_peer_known(struct pn *pn, const struct pn_addr *a);
/* A new anonymous peer for a connection from remote address a (tcp: its ephemeral port):
 * pn_core_peer never returns it, so nobody can claim it; NULL when out of memory. */
struct pn_peer_rec *pn_core_peer_anon(struct pn *pn, const struct pn_addr *a);
/* Note the listening address an anonymous peer's HELLO claimed (kept, not believed:
 * pn_peer_rec.claim); one of another scheme or port 0 is ignored. */
void pn_core_peer_claims(struct pn *pn, struct pn_peer_rec *peer, const struct pn_addr *claim);
/* Whether udp datagrams from source address a may carry a forwarded origin (udp_trusted). */
bool pn_core_udp_trusted(struct pn *pn, const struct pn_addr *a);
/* Whether the endpoint has that key, and the HMAC-SHA-256 under it of label, the two nonces
 * and the claimed origin (the proofs of the tcp and rdma HELLO exchanges, docs/net.md). */
bool pn_core_has_key(struct pn *pn, enum pn_key which);
/* The labels of the acceptor's and the connector's proofs, per key, one set for every
 * transport: a proof made for one use is none for another. */
extern const char *const pn_label_acceptor[PN_KEY_ADMIN + 1];
extern const char *const pn_label_connector[PN_KEY_ADMIN + 1];
void pn_core_mac(struct pn *pn, enum pn_key which, const char *label,
                 const uint8_t nc[PN_NONCE_LEN], const uint8_t na[PN_NONCE_LEN],
                 const struct pn_addr *origin, uint8_t out[PN_MAC_LEN]);
bool pn_core_mac_ok(struct pn *pn, enum pn_key which, const char *label,
                    const uint8_t nc[PN_NONCE_LEN],
                    const uint8_t na[PN_NONCE_LEN], const struct pn_addr *origin,
                    const uint8_t got[PN_MAC_LEN]);
/* The acceptor's answer to a connector's nonce nc (tcp, rdma): a fresh nonce na, and out =
 * na and the acceptor's MAC over both nonces and the claimed origin (what CHALLENGE
 * carries).  0, or -PN_ESYS when there is no randomness. */
int pn_core_challenge(struct pn *pn, enum pn_key which, const uint8_t nc[PN_NONCE_LEN],
                      const struct pn_addr *origin, uint8_t na[PN_NONCE_LEN],
                      uint8_t out[PN_NONCE_LEN + PN_MAC_LEN]);
/* opts.admit for the first bytes of a message from a connection not yet admitted (1: admit);
 * from NULL: a sender that has no record yet (udp; admit sees PN_ANY). */
int pn_core_admit(struct pn *pn, struct pn_peer_rec *from, pn_type type, const void *head,
                  size_t head_len, uint64_t len);
/* opts.refuse for such a message that is too large to take in before admission. */
void pn_core_refuse(struct pn *pn, struct pn_peer_rec *from, pn_type type, pn_coop coop,
                    const void *head, size_t head_len);
/* The peer with this id, or NULL (never one retired). */
struct pn_peer_rec *pn_core_peer_at(struct pn *pn, pn_peer id);
/* The record in slot (0, 1, ... until NULL), retired or not: for a transport freeing its
 * per-peer states at close. */
struct pn_peer_rec *pn_core_peer_slot(struct pn *pn, uint32_t slot);
/* An anonymous peer's one connection is closed (after pn_core_peer_down), or a udp peer the
 * application never named went quiet: its id names nobody from now on (sends to it fail
 * with PN_EPEERDOWN), a named one is no longer found by its address, and its record,
 * tp_state included, is reused for a later peer of the same scheme once nothing can be
 * using it any more (peer_quarantine_ms).  false: not retired (pinned, or already). */
bool pn_core_peer_retire(struct pn *pn, struct pn_peer_rec *peer);

/* Receiving one message is two calls.  pn_core_rx_begin gets the header (and the peer the
 * frame came from; the transport clears PN_F_FORWARDED unless that peer is a proven member
 * of the cluster, so an origin nobody proved is never believed) and returns the buffer of h->len bytes the payload must be written into:
 * a Cooperation's descriptor buffer when the message is a reply to one (no copy), or a fresh
 * one; NULL for a zero-length payload or when out of memory / the reply does not fit (then
 * the transport must still consume the bytes and pass status != 0).  pn_core_rx_end delivers
 * the message (status 0) or drops it (status < 0).  Exactly one rx_end per rx_begin. */
struct pn_rx {
	struct pn_hdr h;
	struct pn_peer_rec *from;  /* the origin (forwarded) or the sender */
	pn_peer fwd_by;            /* forwarded: the member that forwarded it; else PN_ANY */
	uint8_t via;               /* the scheme of the transport it came through */
	void *buf;
	size_t buf_cap;            /* internal: buf's size when it is not a descriptor's */
	int claim;                 /* internal: which descriptor, or -1 */
	struct pn_coop_rec *coop;
};
void *pn_core_rx_begin(struct pn *pn, struct pn_peer_rec *sender, const struct pn_hdr *h,
                       struct pn_rx *rx);
void pn_core_rx_end(struct pn *pn, struct pn_rx *rx, int status);
/* The same for a reply addressed to one descriptor: index idx of Cooperation h->coop, which the
 * transport learned from pn_core_coop_target (rdma: the reply was written into the buffer by
 * the peer already, or comes with the descriptor's slot).  Falls back to rx_begin's matching
 * when that descriptor does not take it (ended, filled, other type or sender). */
void *pn_core_rx_begin_at(struct pn *pn, struct pn_peer_rec *sender, const struct pn_hdr *h,
                          unsigned idx, struct pn_rx *rx);

/* Zero-copy replies (rdma).  Sending a request of our Cooperation coop to peer `to`: pick a
 * pending descriptor with a buffer of min_cap bytes or more that a reply from `to` (or anyone)
 * could fill and that no
 * earlier request advertised, mark it advertised with the transport's cookie (!= 0; given back
 * in ops->release when the Cooperation ends), and describe it in *t.  Replies without a
 * descriptor index (pn_core_rx_begin) avoid advertised descriptors while others are pending.
 * Returns 0, or -1 when coop is not ours or no descriptor qualifies. */
struct pn_target {
	void *buf;
	size_t cap;
	pn_type type;
	unsigned idx;
};
int pn_core_coop_target(struct pn *pn, pn_coop coop, struct pn_peer_rec *to, size_t min_cap,
                        uint32_t cookie, struct pn_target *t);

/* The endpoint's transport instance for a scheme, or NULL (the one-sided API of pn_rdma.c). */
struct pn_tp *pn_core_transport(struct pn *pn, uint8_t scheme);

/* A diagnostic for the person running the program (opts.log, else stderr); transports use it
 * for what an error code cannot say, e.g. an RDMA completion's ibv_wc_status_str. */
void pn_core_log(struct pn *pn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sessions (pn_sess.c, docs/net.md "Sessions").  For a HELLO the transport sends to peer:
 * true with the session block in out when we have a session with it.  For a HELLO it
 * received with a block: note it in peer (nothing is allocated before admission). */
bool pn_core_session_block(struct pn *pn, struct pn_peer_rec *peer, uint8_t out[PN_SESS_BLOCK]);
/* The ms a connection to peer may stay silent before the transport breaks it (keepalive
 * and TCP_USER_TIMEOUT), so the session rides through or gives up: 0 without a session. */
unsigned pn_core_session_silent_ms(struct pn *pn, struct pn_peer_rec *peer);
void pn_core_session_bind(struct pn *pn, struct pn_peer_rec *peer, const uint8_t block[PN_SESS_BLOCK]);
/* A NACK frame from peer for our Cooperation coop: payload (4 bytes) is the error. */
void pn_core_nack(struct pn *pn, struct pn_peer_rec *peer, pn_coop coop, const uint8_t *payload,
                  size_t len);
/* BYE on peer's connection: its session is dropped, and the peer is an ordinary one again
 * (its connection's end is reported to the application as any other). */
void pn_core_session_bye(struct pn *pn, struct pn_peer_rec *peer);

/* ---- between pn.c and pn_sess.c (sessions) ---- */
struct pn_sess;
struct pn_sess *pn_sess_new(struct pn *pn, const struct pn_opts *o);
void pn_sess_stop(struct pn_sess *S);      /* the session thread ends */
void pn_sess_free(struct pn_sess *S);
void pn_sess_stats(struct pn_sess *S, struct pn_stats *st);
int pn_sess_open(struct pn_sess *S, pn_peer peer, const struct pn_session_opts *o);
int pn_sess_fallback(struct pn_sess *S, pn_peer peer, pn_peer fallback);
int pn_sess_moved(struct pn_sess *S, pn_peer peer, pn_peer *via, char *why, size_t len);
/* The session whose requests now go to `from` (moved to its fallback): its own peer, which
 * the descriptors of its Cooperations name; else from. */
pn_peer pn_sess_alias(struct pn_sess *S, pn_peer from);
bool pn_sess_block(struct pn_sess *S, pn_peer peer, uint8_t out[PN_SESS_BLOCK]);
unsigned pn_sess_silent_ms(struct pn_sess *S, pn_peer peer);   /* 0: no session */
bool pn_sess_client_on(struct pn_sess *S);  /* we opened a session (a cheap check) */
bool pn_sess_server_on(struct pn_sess *S);  /* others hold sessions with us (cheap) */
/* A request to `to` with token coop: 1 when `to` has no session of ours (send it as
 * ever), else 0 (sent, or held for the session thread) or -PN_E*. */
int pn_sess_send(struct pn_sess *S, pn_peer to, pn_type type, pn_coop coop, const void *msg,
                 size_t len, unsigned flags);
void pn_sess_coop_end(struct pn_sess *S, pn_coop coop);   /* frees its slots */
bool pn_sess_riding(struct pn_sess *S, pn_coop coop);     /* waits through an outage */
void pn_sess_alive(struct pn_sess *S, pn_peer peer);      /* a frame came from peer */
/* peer's connection closed: true when a session covers it (client: its requests are sent
 * again; server: its session waits for the next connection), so the core fails nothing
 * and does not tell the application. */
bool pn_sess_peer_down(struct pn_sess *S, struct pn_peer_rec *peer);
void pn_sess_bye_out(struct pn_sess *S);   /* pn_finalize: say BYE on each session */
void pn_sess_drop(struct pn_sess *S, const uint8_t sid[PN_SID_LEN]);   /* a BYE came */
/* An SREQ from `from`: 0 run it (a new request), 1 dealt with (a repeat, or refused). */
int pn_sess_request(struct pn_sess *S, struct pn_peer_rec *from, const struct pn_hdr *h);
/* A reply to `to` (whose HELLO named session sid): 1 when it answers a request of that
 * session, kept now, and to go to *route (the session's newest connection). */
int pn_sess_reply(struct pn_sess *S, const uint8_t sid[PN_SID_LEN], pn_peer to, pn_type type,
                  pn_coop coop, const void *msg, size_t len, pn_peer *route);
/* The same when the slot is known (the request's own handler answers). */
/* A request pn_sess_request let run found no handler: its slot is free again (a repeat is
 * looked at anew) and its client gets a NACK with err. */
void pn_sess_unrun(struct pn_sess *S, const uint8_t sid[PN_SID_LEN], uint32_t slot, pn_peer to,
                   pn_coop coop, int err);
int pn_sess_reply_at(struct pn_sess *S, const uint8_t sid[PN_SID_LEN], uint32_t slot, pn_peer to,
                     pn_type type, pn_coop coop, const void *msg, size_t len, pn_peer *route);
/* What pn_sess.c calls in pn.c: send a frame (h: kind, type, coop, and slot/seq for SREQ);
 * note a request of coop went to peer; fail one of coop's descriptors that peer could
 * have filled. */
int pn_core_send_hdr(struct pn *pn, pn_peer to, struct pn_hdr *h, const void *msg, size_t len);
void pn_core_note_sent(struct pn *pn, pn_coop coop, pn_peer to);
void pn_core_coop_fail(struct pn *pn, pn_coop coop, pn_peer peer, int err);
/* The application's peer-down function for peer, a connection of a session whose client
 * has been away for the grace time (never the I/O thread's call: the session thread's). */
void pn_core_peer_gone(struct pn *pn, pn_peer peer);

/* The connection to peer broke: Cooperations waiting for it fail with err. */
void pn_core_peer_down(struct pn *pn, struct pn_peer_rec *peer, int err);
/* A message sent earlier was given up on (udp: no acknowledgement in time): its Cooperation
 * (if any) gets the error. */
void pn_core_returned(struct pn *pn, struct pn_peer_rec *to, const struct pn_hdr *h, int err);

/* Statistics the transports update (atomically). */
enum pn_stat { PN_ST_RETRANSMITS, PN_ST_DUPLICATES, PN_ST_RETURNED, PN_ST_DROPPED,
               PN_ST_BAD_FRAMES, PN_ST_RDMA_REPLIES_IN, PN_ST_RDMA_REPLIES_OUT,
               PN_ST_RDMA_ONESIDED, PN_ST_UDP_REFUSED, PN_ST_UDP_BAD_MACS, PN_ST_RX_WAITS,
               PN_ST_WAITS_READ, PN_ST_WAITS_WOKEN, PN_ST_COUNT };
void pn_core_count(struct pn *pn, enum pn_stat which, uint64_t n);

/* Fault injection: true when this received packet should be dropped (drop_rate). */
bool pn_core_drop(struct pn *pn);

/* Polling instead of sleeping (pn_spin.c): a thread about to sleep until the network
 * brings something asks pn_spin_budget how long it may poll first (0: sleep now), and tells
 * pn_spin_done whether the poll found it.  It may poll only while this process has two
 * CPUs of its own (affinity, cgroup quota) and the machine no more runnable threads than
 * CPUs; a role whose polls keep finding nothing stops for a while. */
enum pn_spin_role { PN_SPIN_REPLY, PN_SPIN_REQUEST, PN_SPIN_ROLES };
struct pn_spin_role_state {
	_Atomic unsigned misses;         /* fruitless polls in a row */
	_Atomic unsigned shift;          /* the next quiet period is 1 ms << shift */
	_Atomic uint64_t quiet_until_ns; /* no polling before */
	_Atomic uint64_t hits, wasted;   /* polls that found something / nothing (stats) */
};
/* Why a wait did not poll (stats): the machine looked full, the role was resting after
 * fruitless polls, or own CPUs - 1 threads of the process were polling already. */
enum pn_spin_denial { PN_SPIN_DENIED_LOAD, PN_SPIN_DENIED_RESTING, PN_SPIN_DENIED_BUSY,
                      PN_SPIN_DENIALS };
struct pn_spin {
	uint64_t budget_ns;              /* pn_opts.spin_us; 0: never poll */
	_Atomic uint64_t next_look_ns;   /* when the machine is looked at again */
	atomic_bool machine_ok;          /* the last look allowed polling */
	atomic_bool one_cpu;             /* ... found this process less than two CPUs of time
	                                  * (a quota) but several to run on (affinity) */
	atomic_flag looking;             /* a thread is looking */
	uint64_t next_quota_ns;          /* the looker's own: affinity and quota again */
	double own;                      /* CPUs this process may use */
	unsigned max_pollers;            /* threads that may poll at once: own - 1 */
	atomic_uint pollers;             /* ... polling now */
	unsigned online;                 /* CPUs of the machine */
	unsigned full_looks;             /* the looker's own: looks in a row that found it full */
	struct pn_spin_role_state role[PN_SPIN_ROLES];
	_Atomic uint64_t denied[PN_SPIN_DENIALS];  /* stats, counted only on the way to sleep */
	_Atomic uint64_t looks, full_looks_seen;   /* stats: looks at the machine, and full ones */
	_Atomic uint64_t follows;        /* stats: tcp readers kept to their peer's CPU (pn_tcp.c) */
};
void pn_spin_init(struct pn_spin *s, unsigned spin_us);
uint64_t pn_spin_budget(struct pn_spin *s, enum pn_spin_role role, uint64_t now);
void pn_spin_done(struct pn_spin *s, enum pn_spin_role role, bool found, uint64_t now);
struct pn_spin *pn_core_spin(struct pn *pn);
/* Following the peer (pn_spin.c, "One CPU of time"): true when this process has less than
 * two CPUs of time but may run on several, so that waking a thread on another CPU than its
 * peer's costs a halted CPU's wake-up at every message.  pn_spin_follow: given the CPU the
 * peer's last message came from (SO_INCOMING_CPU, -1: unknown), the one of the sample before
 * (*last, updated) and the CPU the thread is kept on now (-1: none), the CPU to keep it on
 * from now (-1: leave it as it is): the peer's, once two samples in a row agree on it. */
bool pn_spin_one_cpu(struct pn_spin *s);
/* A thread created by one kept on a CPU inherits that: it calls this first, and runs where
 * the process may (its main thread's affinity) if it was kept on one CPU and that has more. */
void pn_spin_unkeep(void);
int pn_spin_follow(int peer_cpu, int *last, int kept);
/* The parsers behind it, for the tests: cgroup v2 cpu.max and v1 cfs quota/period in CPUs
 * (INFINITY: no limit, -1: not understood); /proc/loadavg's runnable count (-1). */
double pn_spin_parse_cpu_max(const char *text);
double pn_spin_parse_cfs(const char *quota_text, const char *period_text);
int pn_spin_parse_loadavg(const char *text);
/* One look's verdict (pn_spin.c): whether threads may poll, given whether they may now, the
 * full looks before this one, the CPUs of our own and of the machine and the runnable count
 * (-1: unknown); and when to look next. */
struct pn_spin_verdict { bool ok; unsigned full_looks; uint64_t next_look_in_ns; };
struct pn_spin_verdict pn_spin_judge(bool polling, unsigned full_looks, double own,
                                     unsigned online, int running);

/* Monotonic clock in nanoseconds. */
uint64_t pn_now_ns(void);
/* Add 1 to eventfd fd, waking whoever polls it.  A failed write means the counter is full:
 * a wake is pending already (and every poll of ours has a timeout besides). */
void pn_signal_eventfd(int fd);
/* For a waiter about to read a transport's receive side itself: take m if it is free, or
 * held by the transport's I/O thread (it lets go within microseconds: wait a moment); give
 * up at once if *waiter_in says another waiter has it (it may keep it for a whole wait). */
bool pn_lock_from_io(pthread_mutex_t *m, const atomic_bool *waiter_in);

#endif
