/* pn_udp.c: the udp: transport of Paradis-Net: reliable messages over UDP datagrams, after
 * AMUDP and HPAM (docs/udp.md has the reasoning at length).
 *
 * Paradis-Net is not strictly request/reply (a handler may forward, or the reply may come from
 * another peer), so every datagram is made reliable on its own, per (sender, receiver) pair:
 *
 *   1. A sends message M to B: pn_send copies M into one of A's D instance buffers for B
 *      (D = udp_depth; the sender waits, at most send_timeout_ms, when all D are in use),
 *      cuts it into fragments of FRAG_LEN bytes and numbers them with consecutive 64-bit
 *      sequence numbers (they never wrap, so reordering can never make an old number look new).
 *      Each fragment goes out as one datagram: the 48-byte UDP sub-header below, the 40-byte
 *      frame header of wire.c (repeated in every fragment, so any fragment can start the
 *      reassembly), and the fragment's bytes.  At most WIN datagrams are unacknowledged.
 *   2. B's I/O thread checks the datagram, suppresses a duplicate (a sequence number already
 *      received), writes the fragment straight into the buffer pn_core_rx_begin gave for M, and
 *      delivers M when its last missing fragment arrives: exactly once.
 *   3. Every datagram B sends to A carries B's acknowledgement of A's datagrams: `ack` (all
 *      sequence numbers below it arrived) and `sack` (bit i: ack + i arrived).  So the reply
 *      to a request is its acknowledgement and nothing else is sent when nothing is lost.  If
 *      nothing flows back within ACK_DELAY_NS, B sends an ACK datagram; at once after a
 *      duplicate or after ack_every unacknowledged datagrams (bulk transfers keep flowing).
 *   4. A frees an instance buffer when all its fragments are acknowledged.  Unacknowledged
 *      fragments are sent again, from that buffer, after the retransmission timeout (RTO,
 *      from measured round trips, RFC 6298 style), doubling per attempt up to RTO_MAX_NS;
 *      only the missing fragments of a message are resent (the holes below what B
 *      acknowledged, and the last one sent as a probe).
 *   5. After udp_max_wait_ms without any acknowledgement for it, A gives M up:
 *      pn_core_returned fails its Cooperation with PN_ERETURNED.  `una` in every datagram (the
 *      sender's lowest unacknowledged number) tells B to stop waiting for what A gave up.
 *   6. `session` (random per endpoint) and `echo` (the receiver's session as the sender last
 *      saw it) let a restarted endpoint be recognised: B resets its receive state for A on a
 *      new session, and A ignores acknowledgements that echo an old session of its own.
 *
 * UDP sub-header, all fields little-endian:
 *
 *     0      2     3     4         8         12        16        24        32        40       48
 *     +------+-----+-----+---------+---------+---------+---------+---------+---------+
 *     | 'PU' | ver | kind| session | echo    | frag    | seq     | una     | ack     | sack    |
 *     +------+-----+-----+---------+---------+---------+---------+---------+---------+
 *     u16 magic 0x5550, u8 version 1, u8 kind (1 DATA, 2 ACK, 3 HELLO, 4 CHALLENGE, 5 AUTH,
 *     6 REPROVE; flag 0x80 on DATA and ACK: a MAC ends the datagram), u32 session, u32 echo
 *     (0: none), u32 fragment index (DATA), u64 seq (DATA; from 1), u64 una, u64 ack (0: none),
 *     u64 sack.
 *     DATA: then the 40-byte frame header (wire.c), then payload bytes [frag * FRAG_LEN, ...).
 *     ACK: nothing more.
 *     With flag 0x80: then 16 bytes, HMAC-SHA-256 of all the bytes before, truncated.
 *     The proof (Identity, above; frag, seq, una, ack and sack zero; nonces and MACs 32 bytes):
 *       HELLO      u8 key (0 cluster key, 1 secret, 2 admin secret), nc, 64 zero bytes
 *       CHALLENGE  echo: the HELLO's session; nc, then na and the acceptor's MAC, or nothing
 *       AUTH       u8 key, nc, na, the connector's MAC
 *       REPROVE    echo: the session of the datagram that could not be checked; nothing
 *
 * Threads: one I/O thread (poll over the socket and an eventfd; the poll timeout is the next
 * retransmission, delayed ack or give-up) receives, acknowledges and retransmits; pn_send runs
 * on the caller's thread and transmits what the window allows at once.  Per-peer state is
 * guarded by its lock; reading the socket and the reassembly state belong to whoever holds
 * rx_lock.
 *
 * Who reads: as on tcp (pn_tcp.c has the longer story), a thread waiting in pn_coop_end for
 * replies from one peer reads the socket itself (udp_wait_read), handling whatever arrives
 * (replies, acknowledgements, requests for inline handlers) as the I/O thread would, so a
 * round trip costs no thread switch.  While waiters read (`waiters_read`), the I/O thread
 * leaves the socket out of its poll and keeps only the timers; it takes the socket back once
 * nobody waited for STICKY_NS, or at once when a thread is about to sleep on a Cooperation
 * or on a full window (udp_kick).
 *
 * Identity (docs/net.md, "Identity and trust"; as pn_tcp.c's HELLO exchange, where a
 * connection opening is the moment to prove; here it is the first message to a peer): an
 * endpoint C with pn_opts.admin_secret or secret (the connector) proves it to a peer A (the
 * acceptor) before its first DATA to A, when it has heard nothing from A yet:
 *
 *   1. C -> A  HELLO: which key, C's fresh nonce nc (padded: a HELLO is never answered with
 *      more bytes than it has, so forged sources gain no amplification).  C's messages to A
 *      wait (M_PROVING: nothing else goes to A); HELLO is sent again on the RTO, doubling,
 *      and after udp_max_wait_ms without an answer the waiting messages are returned
 *      (PN_ERETURNED) as any lost one, and the next send starts again.
 *   2. A -> C  CHALLENGE: nc, A's nonce na, and HMAC(key, "pn udp ... acceptor", nc, na,
 *      C's session).  A keeps nothing: na is a cookie, A's clock (ms) and an HMAC under a
 *      random key of A's endpoint over that time, the key asked for, C's session, nc and
 *      C's source address, so forged HELLOs cost A no memory.  Without that key, A answers
 *      nc alone: C goes on unproven, in plain datagrams (the wire of endpoints without keys).
 *   3. C checks A's MAC (constant time).  Right: C derives the association's two keys (one
 *      per direction, HMAC(key, "pn udp key to ...", nc, na, C's session)), sends AUTH: nc,
 *      na, HMAC(key, "pn udp ... connector", ...), and from then on every DATA and ACK to
 *      A carries a MAC.  Wrong (most likely C's secret is wrong): C sends no AUTH and goes
 *      on unproven, in plain datagrams, as over tcp: the application says what is wrong.
 *   4. A checks AUTH: its cookie is A's and younger than COOKIE_MS, its MAC is right.  Only
 *      then is a peer made for C (or C's found), admitted (TIER_ADMITTED: as pn_opts.admit
 *      would), marked proven (pn_peer_proof: PN_PROOF_SECRET or _ADMIN) and given the keys.
 *      An AUTH older than the association's (a replay) changes nothing.
 *   5. Every later DATA and ACK of the pair, both ways, ends with a MAC (HMAC-SHA-256 under
 *      the direction's key, truncated to TAG_LEN bytes) of the whole datagram: sub-header
 *      (session, seq, acks), frame header and payload, checked before anything is done with
 *      it; failures are dropped and counted (udp_bad_macs), and so are plain datagrams from
 *      a peer with an association.  Replays inside the association are duplicates (the
 *      64-bit sequence numbers never wrap); from another association they fail the MAC.
 *   6. A that gets a datagram with a MAC it cannot check (it restarted, or retired C, or
 *      lost C's AUTH) answers REPROVE (echoing C's session); C, when it is the connector
 *      and keyed, proves again, then sends what A did not acknowledge again under the new
 *      keys.  A forged REPROVE costs C a proof, one round trip: an attacker on the path can
 *      delay C as much by dropping datagrams; off the path it must guess C's session.  So
 *      does a stale one (A answered several datagrams sent before C's AUTH reached it, as
 *      when the AUTH was lost): C proves once more, and what crossed the new proof under the
 *      older keys is dropped and resent.  That converges (test_pn_udp, proof_drop: 20% loss
 *      both ways); a grace period for the previous keys, or a REPROVE naming the keys it
 *      refers to, would save those round trips.
 *
 * An endpoint proves only to peers it speaks to first, so a server answering a client never
 * proves anything back.  Which key, as over tcp: the cluster key when it has one (the
 * acceptor then believes the origins in the peer's forwarded messages, besides those of
 * udp_trusted addresses), else the admin secret, else the secret.
 *
 * Admission (pn.h, udp_max_peers): a peer is made for a source address the first time a DATA
 * datagram comes from it, in a tier: TIER_PRE until pn_opts.admit accepts the first bytes
 * of one of its messages (in its first fragment; until then it may send only messages of
 * up to preauth_max bytes), then TIER_ADMITTED; addresses the application named (pn_peer_get) and udp_trusted members are
 * in no tier and stay for good.  Each tier has a bound, counting its live peers and those
 * retired within the quarantine (a ring of retirement times); with TIER_PRE full, only a
 * first fragment whose head admit accepts at once (from PN_ANY) makes a peer.  The I/O thread
 * retires peers of a tier that have nothing in flight and were quiet for the tier's idle
 * time (retire_idle): the core reuses their records, for another udp peer, after the
 * quarantine, and upeer_get gives the new peer a fresh state.  Sequence numbers start at
 * the clock, so a sender that comes back after its peer was retired is never taken for
 * one resending old datagrams.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "pn_int.h"

#define UDP_MAGIC      0x5550u          /* "PU" */
#define UDP_VERSION    1
#define UDP_HDR_LEN    48
#define FRAG_LEN       (32u * 1024)     /* payload bytes per datagram (loopback MTU is 64 KiB) */
#define TAG_LEN        16               /* a keyed datagram's MAC: HMAC-SHA-256, truncated */
#define DGRAM_MAX      (UDP_HDR_LEN + PN_HDR_LEN + FRAG_LEN + TAG_LEN)
#define WIN_MAX        64               /* unacknowledged datagrams per peer: the sack width */
#define WIN_MIN        4
#define SOCK_BUF       (4 << 20)        /* asked for SO_RCVBUF / SO_SNDBUF; the kernel caps it */
#define ACK_DELAY_NS   1000000ull       /* wait this long for traffic to carry an ack */
#define RTO_INIT_NS    10000000ull      /* before the first round trip is measured */
#define RTO_MIN_NS     5000000ull
#define RTO_MAX_NS     250000000ull     /* back-off ceiling */
/* While the endpoint is busy, the I/O thread never sleeps longer than TICK_NS, shorter than
 * any retransmission timeout: a send then arms a deadline later than the thread's wake-up and
 * need not wake it (an eventfd write and a thread switch per message otherwise).  After
 * BUSY_NS without sends it sleeps until something happens. */
#define TICK_NS        (RTO_MIN_NS * 4 / 5)
#define BUSY_NS        1000000000ull
#define KEEP_CAP       (64u * 1024)     /* instance buffers larger than this are not kept */
#define IO_OVERFLOW    4                /* I/O thread sends may use IO_OVERFLOW * D buffers */
#define RX_BATCH       256              /* datagrams read before timers are looked at again */
#define RX_VEC         8                /* datagrams one recvmmsg takes */
#define RX_SLOT        (DGRAM_MAX + 1)  /* one more byte than a datagram: detects oversized */
#define POLL_MAX_MS    1000
#define STICKY_NS      1000000ull       /* the socket stays with the waiters this long */
#define RECV_SLICE_MS  10               /* a waiter's blocking recvmmsg looks up this often */
#define PREAUTH_IDLE_MS 2000            /* an unadmitted peer quiet this long is retired (or
                                         * after udp_idle_ms, if shorter) */

_Static_assert(WIN_MAX <= 64, "sack is one u64");
_Static_assert(DGRAM_MAX <= 65507, "a datagram must fit one IPv4 UDP packet");

/* Kinds.  K_MAC is a flag on DATA and ACK: the datagram ends with its TAG_LEN-byte MAC. */
enum { K_DATA = 1, K_ACK = 2, K_HELLO = 3, K_CHALLENGE = 4, K_AUTH = 5, K_REPROVE = 6 };
#define K_MAC          0x80
/* Bodies of the proof's datagrams (Identity, top). */
#define HELLO_LEN      (1 + PN_NONCE_LEN + 64)   /* which, nc, zero padding */
#define CHALL_LEN      (3 * PN_NONCE_LEN)         /* nc, na (the cookie), the acceptor's MAC */
#define AUTH_LEN       (1 + 3 * PN_NONCE_LEN)     /* which, nc, na, the connector's MAC */
#define COOKIE_MS      5000             /* an acceptor's nonce is good for an AUTH this long */
_Static_assert(HELLO_LEN >= CHALL_LEN, "a HELLO is never answered with more bytes than it had");
_Static_assert(PN_MAC_LEN == PN_NONCE_LEN, "the layouts above take a MAC for a nonce's size");

struct uhdr {
	uint8_t kind;
	bool mac;                      /* K_MAC: DATA or ACK with a MAC at its end */
	uint32_t session, echo, frag;
	uint64_t seq, una, ack, sack;
};

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }
static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

static void uhdr_put(uint8_t o[UDP_HDR_LEN], const struct uhdr *u)
{
	put16(o, UDP_MAGIC);
	o[2] = UDP_VERSION;
	o[3] = (uint8_t)(u->kind | (u->mac ? K_MAC : 0));
	put32(o + 4, u->session);
	put32(o + 8, u->echo);
	put32(o + 12, u->frag);
	put64(o + 16, u->seq);
	put64(o + 24, u->una);
	put64(o + 32, u->ack);
	put64(o + 40, u->sack);
}

/* Parse and check the fields that need no other state.  0 or -PN_EPROTO. */
static int uhdr_get(const uint8_t in[UDP_HDR_LEN], struct uhdr *u)
{
	if (get16(in) != UDP_MAGIC || in[2] != UDP_VERSION)
		return -PN_EPROTO;
	u->kind = in[3] & ~K_MAC;
	u->mac = in[3] & K_MAC;
	u->session = get32(in + 4);
	u->echo = get32(in + 8);
	u->frag = get32(in + 12);
	u->seq = get64(in + 16);
	u->una = get64(in + 24);
	u->ack = get64(in + 32);
	u->sack = get64(in + 40);
	if (u->session == 0)
		return -PN_EPROTO;
	if (u->kind >= K_HELLO && u->kind <= K_REPROVE)
		return !u->mac && !u->frag && !u->seq && !u->una && !u->ack && !u->sack ? 0 :
		       -PN_EPROTO;
	if (u->una == 0)
		return -PN_EPROTO;
	if (u->kind == K_DATA)
		return u->seq >= u->una && u->frag < u->seq ? 0 : -PN_EPROTO;
	if (u->kind == K_ACK)
		return u->seq == 0 && u->frag == 0 ? 0 : -PN_EPROTO;
	return -PN_EPROTO;
}

static uint32_t frags_of(uint32_t len) { return len ? (len - 1) / FRAG_LEN + 1 : 1; }
static bool bit_get(const uint64_t *m, uint32_t i) { return m[i / 64] >> (i % 64) & 1; }
static void bit_set(uint64_t *m, uint32_t i) { m[i / 64] |= 1ull << (i % 64); }

/* ---- state ---- */

struct omsg {                      /* an outgoing message: one of the D instance buffers */
	struct omsg *next;
	struct pn_hdr h;               /* for pn_core_returned */
	uint8_t wire[PN_HDR_LEN];
	uint8_t *data;                 /* the sender's copy, resent from here */
	size_t cap;
	uint32_t len, n_frags;
	uint64_t seq0;                 /* sequence number of fragment 0 */
	uint32_t lo;                   /* fragments below lo are all acknowledged */
	uint32_t n_sent;               /* fragments [0, n_sent) went out at least once */
	uint32_t n_acked;
	uint64_t *acked;               /* bit per fragment */
	uint32_t acked_words;          /* its capacity */
	uint64_t sent_ns;              /* first transmission, for a round-trip sample */
	bool resent;                   /* Karn: no sample from a retransmitted message */
	unsigned backoff;
	uint64_t rto_at;               /* next retransmission; 0: nothing outstanding */
	uint64_t progress_ns;          /* first sent or last acknowledgement: give up after max_wait */
};

struct imsg {                      /* an incoming message being reassembled */
	bool used;
	uint64_t seq0;
	uint32_t n_frags, n_got, len;
	uint64_t *got;                 /* bit per fragment */
	uint32_t got_words;
	uint8_t wire[PN_HDR_LEN];      /* every fragment must carry the same header */
	struct pn_rx rx;
	uint8_t *buf;                  /* from pn_core_rx_begin; NULL: discard (out of memory) */
	uint64_t progress_ns;
};

/* The proof with a peer (Identity, top): none (plain datagrams), ours running (we are the
 * connector: HELLO sent, nothing else goes out until it ends), or an association (every
 * datagram both ways carries a MAC under its keys). */
enum { M_PLAIN, M_PROVING, M_KEYED };

/* The peers a udp endpoint keeps for senders it did not name itself (Admission, above). */
enum { TIER_NONE, TIER_PRE, TIER_ADMITTED, TIER_N };

/* When peers retired from a tier leave quarantine: they count toward its bound until then,
 * since their records are not reused before. */
struct ring {
	uint64_t *t;
	unsigned cap, head, n;
};

struct upeer {                     /* peer->tp_state */
	struct upeer *next;            /* tp->peers */
	struct pn_peer_rec *rec;
	pn_peer for_id;                /* the peer this state is for: a record reused for another
	                                * (a new id) gets a fresh state (upeer_get) */
	/* Peers (Admission, above; under rx_lock): */
	int tier;                      /* TIER_NONE (pinned, trusted), TIER_PRE, TIER_ADMITTED */
	uint64_t last_ns;              /* its last datagram */
	struct sockaddr_storage sa;
	socklen_t salen;               /* 0: the socket cannot reach this address family */
	pthread_mutex_t lock;          /* everything below but the reassembly slots */
	pthread_cond_t space;          /* an instance buffer was freed */
	/* sending */
	uint64_t snd_next, snd_una;
	struct omsg *head, *tail;      /* in sequence order */
	struct omsg *free_list;
	unsigned n_out;                /* instance buffers in use (queued or being filled) */
	unsigned n_free;
	uint64_t hi_acked;             /* the highest sequence number acknowledged */
	uint64_t srtt, rttvar, rto;    /* ns; srtt 0: no sample yet */
	/* receiving: what we acknowledge */
	uint32_t peer_session;         /* 0: nothing received yet */
	uint32_t old_session;          /* the one before: its stragglers are ignored */
	uint64_t rcv_base;             /* every seq below arrived (or was given up by the sender) */
	uint64_t rcv_map;              /* bit i: rcv_base + i arrived (bit 0 is always clear) */
	uint64_t ack_due;              /* send an ACK then unless traffic carries it; 0: none owed */
	unsigned n_unacked;
	/* reassembly, I/O thread only */
	struct imsg *rx;               /* udp_depth slots */
	/* proof (Identity, top): mode and the connector's fields under lock; the MAC contexts
	 * are replaced only by the socket's reader (rx_lock held), with lock held too */
	int mode;                      /* M_PLAIN, M_PROVING, M_KEYED */
	bool connector;                /* we proved (or are proving) to it: it never hints us */
	enum pn_key which;             /* the key proved or being proved */
	uint8_t nc[PN_NONCE_LEN];      /* connector: our nonce of the proof running */
	uint64_t hs_start, hs_at;      /* connector: when it began; when HELLO goes out again */
	unsigned hs_backoff;
	uint64_t auth_ms;              /* acceptor: the cookie time of the association's AUTH */
	bool member;                   /* acceptor: it proved the cluster key: its datagrams may
	                                * carry a forwarded origin (under rx_lock) */
	EVP_MAC_CTX *tx_mac;           /* keyed: our datagrams to it (used under lock) */
	EVP_MAC_CTX *rx_mac;           /* keyed: its datagrams to us (used under rx_lock) */
};

struct pn_tp {
	struct pn *pn;
	const struct pn_opts *o;
	int fd, wakefd, family;
	uint32_t session;
	unsigned win, depth, ack_every;
	pthread_t thread;
	pthread_mutex_t lock;          /* the peers list, tp_state creation */
	struct upeer *peers;
	atomic_bool stop;
	atomic_uint n_senders;         /* threads inside udp_send: close waits for them */
	_Atomic uint64_t io_sleep_until; /* an earlier new deadline must wake the I/O thread */
	_Atomic uint64_t last_send;      /* for the busy tick (TICK_NS) */
	uint8_t *rxbuf;                /* RX_VEC buffers of RX_SLOT bytes */
	pthread_mutex_t rx_lock;       /* reading the socket, rxbuf and the reassembly slots */
	atomic_bool waiters_read;      /* the I/O thread leaves the socket to waiters (top) */
	uint64_t released_ns;          /* when the last waiter let go of it (under rx_lock) */
	atomic_bool kicked;            /* udp_kick: the I/O thread takes the socket back */
	atomic_bool waiter_in;         /* rx_lock is held by a waiter (not the I/O thread) */
	/* admission (top; under rx_lock) */
	unsigned n_tier[TIER_N];       /* live peers per tier */
	unsigned max_tier[TIER_N];     /* udp_preauth_peers, udp_max_peers */
	struct ring retired[TIER_N];
	uint64_t rx_bytes;             /* messages being reassembled, bytes (rx_budget) */
	uint64_t quarantine_ns;        /* pn_opts.peer_quarantine_ms */
	uint64_t idle_ns[TIER_N];      /* a peer of the tier quiet this long is retired */
	/* proof (Identity, top) */
	enum pn_key key;               /* the key we prove as a connector */
	bool proves;                   /* we have one (secret or admin_secret) */
	EVP_MAC *hmac;
	uint8_t cookie_key[32];        /* random per endpoint: the acceptor's stateless nonces */
};

static _Thread_local struct pn_tp *io_thread_of;
static _Thread_local struct pn_tp *rx_thread_of; /* the socket this thread is reading */

/* Where datagrams to rec's peer go. */
static void upeer_addr(struct pn_tp *tp, struct upeer *p, const struct pn_peer_rec *rec)
{
	struct pn_addr a = rec->addr;
	if (a.family == 4 && tp->family == AF_INET6) {
		/* an IPv6 socket reaches IPv4 peers at their v4-mapped address */
		memmove(a.addr + 12, a.addr, 4);
		memset(a.addr, 0, 10);
		a.addr[10] = a.addr[11] = 0xff;
		a.family = 6;
	}
	if ((a.family == 6) == (tp->family == AF_INET6))
		p->salen = pn_addr_to_sockaddr(&a, &p->sa);
}

static void keys_drop(struct upeer *p)
{
	EVP_MAC_CTX_free(p->tx_mac);
	EVP_MAC_CTX_free(p->rx_mac);
	p->tx_mac = p->rx_mac = NULL;
}

static struct upeer *upeer_get(struct pn_tp *tp, struct pn_peer_rec *rec)
{
	pthread_mutex_lock(&tp->lock);
	struct upeer *p = rec->tp_state;
	if (!p && (p = calloc(1, sizeof *p)) && !(p->rx = calloc(tp->depth, sizeof *p->rx))) {
		free(p);
		p = NULL;
	}
	if (p && rec->tp_state && p->for_id != rec->id) {
		/* the record was retired and is reused for a new peer (pn_core_peer_retire): its
		 * old peer's state has long been idle (nothing queued, nothing in reassembly) */
		pthread_mutex_lock(&p->lock);
		p->for_id = rec->id;
		p->tier = TIER_NONE;
		p->salen = 0;
		p->snd_next = p->snd_una = pn_now_ns();   /* above any number the old one used */
		p->hi_acked = 0;
		p->srtt = p->rttvar = 0;
		p->rto = RTO_INIT_NS;
		p->peer_session = p->old_session = 0;
		p->rcv_base = p->rcv_map = 0;
		p->ack_due = 0;
		p->n_unacked = 0;
		keys_drop(p);
		p->mode = M_PLAIN;
		p->connector = false;
		p->auth_ms = 0;
		p->member = false;
		upeer_addr(tp, p, rec);
		pthread_mutex_unlock(&p->lock);
	}
	if (p && !rec->tp_state) {
		p->rec = rec;
		p->for_id = rec->id;
		upeer_addr(tp, p, rec);
		pthread_mutex_init(&p->lock, NULL);
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&p->space, &ca);
		pthread_condattr_destroy(&ca);
		/* numbers start at the clock (ns): a peer that was retired and comes back gets
		 * a new state here, whose numbers must be above those the old one used, as the
		 * other side remembers them (no sender sends a datagram per ns) */
		p->snd_next = p->snd_una = pn_now_ns();
		p->rto = RTO_INIT_NS;
		p->next = tp->peers;
		tp->peers = p;
		rec->tp_state = p;
	}
	pthread_mutex_unlock(&tp->lock);
	return p;
}

/* Wake the I/O thread if it sleeps past deadline. */
static void wake_for(struct pn_tp *tp, uint64_t deadline)
{
	atomic_store(&tp->last_send, pn_now_ns());
	if (deadline < atomic_load(&tp->io_sleep_until) && io_thread_of != tp)
		pn_signal_eventfd(tp->wakefd);
}

/* ---- proof and MACs (Identity, top) ---- */

/* The MAC labels, per key and side: a proof made for one use is none for another, and a tcp
 * proof (pn_tcp.c's labels) is none over udp.  The association's keys, one per direction,
 * come from the same HMAC under labels no proof uses. */
static const char *const label_acceptor[] = {
	[PN_KEY_CLUSTER] = "pn udp acceptor", [PN_KEY_SECRET] = "pn udp secret acceptor",
	[PN_KEY_ADMIN] = "pn udp admin acceptor" };
static const char *const label_connector[] = {
	[PN_KEY_CLUSTER] = "pn udp connector", [PN_KEY_SECRET] = "pn udp secret connector",
	[PN_KEY_ADMIN] = "pn udp admin connector" };
static const char *const label_key[2] = { "pn udp key to acceptor", "pn udp key to connector" };

/* What the proofs bind besides the two nonces: the connector's session.  (tcp binds the
 * address the connector claims; over udp it claims none, its source address may be
 * rewritten on the way (NAT), and the acceptor's cookie binds that address anyway.) */
static struct pn_addr bound(uint32_t session)
{
	struct pn_addr b = { .scheme = PN_S_UDP };
	put32(b.addr, session);
	return b;
}

static EVP_MAC_CTX *mac_new(struct pn_tp *tp, const uint8_t key[PN_MAC_LEN])
{
	EVP_MAC_CTX *c = EVP_MAC_CTX_new(tp->hmac);
	OSSL_PARAM prm[] = { OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
	                     OSSL_PARAM_construct_end() };
	if (c && !EVP_MAC_init(c, key, PN_MAC_LEN, prm)) {
		EVP_MAC_CTX_free(c);
		c = NULL;
	}
	return c;
}

/* Set the association's keys (rx_lock and p's lock held), derived from the key proved and
 * both nonces: tx for our datagrams to p, rx for p's.  acceptor: we are.  false: out of
 * memory (no association then). */
static bool keys_set(struct pn_tp *tp, struct upeer *p, enum pn_key which,
                     const uint8_t nc[PN_NONCE_LEN], const uint8_t na[PN_NONCE_LEN],
                     uint32_t session, bool acceptor)
{
	struct pn_addr b = bound(session);
	uint8_t k[2][PN_MAC_LEN];
	for (int d = 0; d < 2; d++)
		pn_core_mac(tp->pn, which, label_key[d], nc, na, &b, k[d]);
	EVP_MAC_CTX *tx = mac_new(tp, k[acceptor]), *rx = mac_new(tp, k[!acceptor]);
	OPENSSL_cleanse(k, sizeof k);
	keys_drop(p);
	if (!tx || !rx) {
		EVP_MAC_CTX_free(tx);
		EVP_MAC_CTX_free(rx);
		return false;
	}
	p->tx_mac = tx;
	p->rx_mac = rx;
	return true;
}

/* The MAC of the bytes in iov[0..n) under c (one direction's key): false on a failure of
 * the library, which no datagram then passes. */
static bool tag_of(EVP_MAC_CTX *c, const struct iovec *iov, int n, uint8_t out[TAG_LEN])
{
	uint8_t full[EVP_MAX_MD_SIZE];
	size_t len = 0;
	bool ok = EVP_MAC_init(c, NULL, 0, NULL);     /* the same key again */
	for (int i = 0; i < n && ok; i++)
		ok = !iov[i].iov_len || EVP_MAC_update(c, iov[i].iov_base, iov[i].iov_len);
	ok = ok && EVP_MAC_final(c, full, &len, sizeof full) && len >= TAG_LEN;
	memcpy(out, full, TAG_LEN);
	return ok;
}

/* The acceptor's nonce for a HELLO: its time (ms, 8 bytes) and an HMAC under the endpoint's
 * cookie key of that time, the key asked for, the connector's session, its nonce and its
 * source address.  So the acceptor keeps nothing for a HELLO (forged source addresses
 * cost it no memory): an AUTH brings the nonce back and is checked against it again
 * (on_auth).  false: the library failed. */
static bool cookie(struct pn_tp *tp, uint64_t t_ms, enum pn_key which, uint32_t session,
                   const uint8_t nc[PN_NONCE_LEN], const struct pn_addr *a,
                   uint8_t na[PN_NONCE_LEN])
{
	uint8_t msg[8 + 1 + 4 + PN_NONCE_LEN + 20], mac[32];
	unsigned len = sizeof mac;
	put64(msg, t_ms);
	msg[8] = (uint8_t)which;
	put32(msg + 9, session);
	memcpy(msg + 13, nc, PN_NONCE_LEN);
	uint8_t *o = msg + 13 + PN_NONCE_LEN;
	o[0] = a->scheme;
	o[1] = a->family;
	memcpy(o + 2, &a->port, 2);
	memcpy(o + 4, a->addr, 16);
	if (!HMAC(EVP_sha256(), tp->cookie_key, sizeof tp->cookie_key, msg, sizeof msg, mac, &len))
		return false;
	put64(na, t_ms);
	memcpy(na + 8, mac, PN_NONCE_LEN - 8);
	return true;
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* A datagram of the proof (no peer needed): the sub-header with our session and echo, then
 * the body. */
static void raw_send(struct pn_tp *tp, const struct sockaddr *sa, socklen_t salen, uint8_t kind,
                     uint32_t echo, const void *body, size_t len)
{
	uint8_t d[UDP_HDR_LEN + HELLO_LEN];
	struct uhdr u = { .kind = kind, .session = tp->session, .echo = echo };
	uhdr_put(d, &u);
	if (len)
		memcpy(d + UDP_HDR_LEN, body, len);
	while (sendto(tp->fd, d, UDP_HDR_LEN + len, MSG_DONTWAIT | MSG_NOSIGNAL, sa, salen) < 0 &&
	       errno == EINTR)
		;
}

static void hello_send(struct pn_tp *tp, struct upeer *p)
{
	uint8_t b[HELLO_LEN] = { (uint8_t)p->which };
	memcpy(b + 1, p->nc, PN_NONCE_LEN);
	raw_send(tp, (struct sockaddr *)&p->sa, p->salen, K_HELLO, 0, b, sizeof b);
}

/* We are the connector: start proving our key to p (its lock held; rx_lock too when an
 * association is dropped for it).  Returns when HELLO is due again. */
static uint64_t prove_start(struct pn_tp *tp, struct upeer *p, uint64_t now)
{
	if (getrandom(p->nc, PN_NONCE_LEN, 0) != PN_NONCE_LEN)
		return UINT64_MAX;     /* (no randomness: go on unproven; the server will say) */
	p->mode = M_PROVING;
	p->connector = true;
	p->which = tp->key;
	p->hs_start = now;
	p->hs_backoff = 0;
	p->hs_at = now + p->rto;
	hello_send(tp, p);
	return p->hs_at;
}

static void bad_mac(struct pn_tp *tp)
{
	pn_core_count(tp->pn, PN_ST_UDP_BAD_MACS, 1);
}

/* ---- sending datagrams (peer lock held) ---- */

/* Send one datagram to p, carrying our acknowledgement of p's datagrams.  A failure (full
 * socket buffer, unreachable) is a lost datagram: the retransmission timer covers it. */
static void dgram_send(struct pn_tp *tp, struct upeer *p, struct uhdr *u, const uint8_t *wire,
                       const void *data, size_t len)
{
	uint8_t hb[UDP_HDR_LEN];
	u->session = tp->session;
	u->echo = p->peer_session;
	u->una = p->snd_una;
	u->ack = p->peer_session ? p->rcv_base : 0;
	u->sack = p->peer_session ? p->rcv_map : 0;
	p->ack_due = 0;                /* this datagram carries the acknowledgement */
	p->n_unacked = 0;
	if (p->mode == M_PROVING)
		return;                    /* nothing goes out until our proof ends (proof_done) */
	u->mac = p->mode == M_KEYED;
	uhdr_put(hb, u);
	uint8_t tag[TAG_LEN];
	struct iovec iov[4] = { { hb, UDP_HDR_LEN }, { (void *)wire, wire ? PN_HDR_LEN : 0 },
	                        { (void *)data, len }, { tag, u->mac ? TAG_LEN : 0 } };
	if (u->mac && !tag_of(p->tx_mac, iov, 3, tag))
		return;                    /* as if lost */
	struct msghdr mh = { .msg_name = &p->sa, .msg_namelen = p->salen, .msg_iov = iov,
	                     .msg_iovlen = 4 };
	while (sendmsg(tp->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

static void send_ack(struct pn_tp *tp, struct upeer *p)
{
	struct uhdr u = { .kind = K_ACK };
	dgram_send(tp, p, &u, NULL, NULL, 0);
}

static void send_frag(struct pn_tp *tp, struct upeer *p, struct omsg *m, uint32_t j)
{
	struct uhdr u = { .kind = K_DATA, .frag = j, .seq = m->seq0 + j };
	size_t off = (size_t)j * FRAG_LEN, n = m->len - off < FRAG_LEN ? m->len - off : FRAG_LEN;
	dgram_send(tp, p, &u, m->wire, m->data + off, m->len ? n : 0);
}

static void una_update(struct upeer *p)
{
	p->snd_una = p->head ? p->head->seq0 + p->head->lo : p->snd_next;
}

/* Send fragments not sent yet, in sequence order, while the window allows.  Returns the
 * earliest retransmission deadline armed, or UINT64_MAX. */
static uint64_t pump(struct pn_tp *tp, struct upeer *p, uint64_t now)
{
	uint64_t armed = UINT64_MAX;
	if (p->mode == M_PROVING)
		return armed;              /* they wait for the proof's end (proof_done) */
	for (struct omsg *m = p->head; m; m = m->next) {
		while (m->n_sent < m->n_frags) {
			if (m->seq0 + m->n_sent >= p->snd_una + tp->win)
				return armed;
			if (m->n_sent == 0)
				m->sent_ns = m->progress_ns = now;
			send_frag(tp, p, m, m->n_sent++);
			if (!m->rto_at) {
				m->rto_at = now + p->rto;
				if (m->rto_at < armed)
					armed = m->rto_at;
			}
		}
	}
	return armed;
}

static uint64_t backoff_rto(struct upeer *p, unsigned backoff)
{
	uint64_t t = p->rto;
	for (unsigned i = 0; i < backoff && t < RTO_MAX_NS; i++)
		t *= 2;
	return t < RTO_MAX_NS ? t : RTO_MAX_NS;
}

static void rtt_sample(struct upeer *p, uint64_t r)
{
	if (!p->srtt) {
		p->srtt = r;
		p->rttvar = r / 2;
	} else {
		uint64_t d = r > p->srtt ? r - p->srtt : p->srtt - r;
		p->rttvar = (3 * p->rttvar + d) / 4;
		p->srtt = (7 * p->srtt + r) / 8;
	}
	p->rto = p->srtt + 4 * p->rttvar;
	if (p->rto < RTO_MIN_NS)
		p->rto = RTO_MIN_NS;
	if (p->rto > RTO_MAX_NS)
		p->rto = RTO_MAX_NS;
}

/* Put a finished instance buffer back (peer lock held). */
static void omsg_recycle(struct pn_tp *tp, struct upeer *p, struct omsg *m)
{
	p->n_out--;
	if (p->n_free < tp->depth && m->cap <= KEEP_CAP) {
		m->next = p->free_list;
		p->free_list = m;
		p->n_free++;
	} else {
		free(m->data);
		free(m->acked);
		free(m);
	}
	pthread_cond_broadcast(&p->space);
}

/* Apply an acknowledgement from p (peer lock held). */
static void on_ack(struct pn_tp *tp, struct upeer *p, uint64_t ack, uint64_t sack, uint64_t now)
{
	if (ack == 0 || ack > p->snd_next)
		return;                    /* nothing acknowledged, or nonsense */
	uint64_t top = sack ? ack + 63 - (uint64_t)__builtin_clzll(sack) : ack - 1;
	if (top < p->snd_next && top > p->hi_acked)
		p->hi_acked = top;
	struct omsg *prev = NULL;
	for (struct omsg *m = p->head, *next; m; m = next) {
		next = m->next;
		if (m->seq0 >= ack + WIN_MAX)
			break;
		bool progress = false;
		/* only [lo, n_sent) can be newly acknowledged; the window bounds it by WIN_MAX */
		for (uint32_t j = m->lo; j < m->n_sent; j++) {
			uint64_t s = m->seq0 + j;
			if (bit_get(m->acked, j))
				continue;
			if (s < ack || (s - ack < WIN_MAX && (sack >> (s - ack) & 1))) {
				bit_set(m->acked, j);
				m->n_acked++;
				progress = true;
			}
		}
		while (m->lo < m->n_frags && bit_get(m->acked, m->lo))
			m->lo++;
		if (progress) {
			if (m->n_frags == 1 && !m->resent)
				rtt_sample(p, now - m->sent_ns);
			m->progress_ns = now;
			m->backoff = 0;
			m->rto_at = m->n_acked < m->n_sent ? now + p->rto : 0;
		}
		if (m->n_acked == m->n_frags) {
			if (prev)
				prev->next = next;
			else
				p->head = next;
			if (p->tail == m)
				p->tail = prev;
			omsg_recycle(tp, p, m);
			continue;
		}
		prev = m;
	}
	una_update(p);
}

/* ---- the transport interface: send ---- */

static int send_msg(struct pn_tp *tp, struct pn_peer_rec *peer, const struct pn_hdr *h,
                    const void *payload, size_t len);
static void udp_kick(struct pn_tp *tp);

static int udp_send(struct pn_tp *tp, struct pn_peer_rec *peer, const struct pn_hdr *h,
                    const void *payload, size_t len)
{
	atomic_fetch_add(&tp->n_senders, 1);
	int rc = atomic_load(&tp->stop) ? -PN_ESHUTDOWN : send_msg(tp, peer, h, payload, len);
	atomic_fetch_sub(&tp->n_senders, 1);
	return rc;
}

static int send_msg(struct pn_tp *tp, struct pn_peer_rec *peer, const struct pn_hdr *h,
                    const void *payload, size_t len)
{
	struct upeer *p = upeer_get(tp, peer);
	if (!p)
		return -PN_ENOMEM;
	if (!p->salen)
		return -PN_EADDR;
	if (len > UINT32_MAX)
		return -PN_ETOOBIG;
	uint32_t n_frags = frags_of((uint32_t)len);
	/* The I/O thread must never wait for buffers: only it can free them.  An inline handler
	 * replying there may use a few more than D. */
	bool io = io_thread_of == tp || rx_thread_of == tp;
	uint64_t now = pn_now_ns();
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += tp->o->send_timeout_ms / 1000;
	dl.tv_nsec += (long)(tp->o->send_timeout_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&p->lock);
	while (!atomic_load(&tp->stop) && p->n_out >= (io ? IO_OVERFLOW * tp->depth : tp->depth)) {
		udp_kick(tp);              /* the acknowledgements that free buffers must be read */
		if (io || pthread_cond_timedwait(&p->space, &p->lock, &dl) == ETIMEDOUT) {
			pthread_mutex_unlock(&p->lock);
			return -PN_ETIMEDOUT;
		}
	}
	if (atomic_load(&tp->stop)) {
		pthread_mutex_unlock(&p->lock);
		return -PN_ESHUTDOWN;
	}
	p->n_out++;
	struct omsg *m = p->free_list;
	if (m) {
		p->free_list = m->next;
		p->n_free--;
	}
	pthread_mutex_unlock(&p->lock);

	/* fill the instance buffer outside the lock: a big copy must not hold up the I/O thread */
	if (!m)
		m = calloc(1, sizeof *m);
	uint32_t words = (n_frags + 63) / 64;
	if (m && m->cap < len) {
		uint8_t *d = realloc(m->data, len);
		if (d) {
			m->data = d;
			m->cap = len;
		}
	}
	if (m && m->acked_words < words) {
		uint64_t *a = realloc(m->acked, words * sizeof *a);
		if (a) {
			m->acked = a;
			m->acked_words = words;
		}
	}
	if (!m || m->cap < len || m->acked_words < words) {
		pthread_mutex_lock(&p->lock);
		if (m)
			omsg_recycle(tp, p, m);
		else {
			p->n_out--;
			pthread_cond_broadcast(&p->space);
		}
		pthread_mutex_unlock(&p->lock);
		return -PN_ENOMEM;
	}
	if (len)
		memcpy(m->data, payload, len);
	memset(m->acked, 0, words * sizeof *m->acked);
	m->h = *h;
	pn_wire_put(m->wire, h);
	m->len = (uint32_t)len;
	m->n_frags = n_frags;
	m->lo = m->n_sent = m->n_acked = 0;
	m->resent = false;
	m->backoff = 0;
	m->rto_at = 0;
	m->progress_ns = now;
	m->next = NULL;

	pthread_mutex_lock(&p->lock);
	m->seq0 = p->snd_next;
	p->snd_next += n_frags;
	if (p->tail)
		p->tail->next = m;
	else
		p->head = m;
	p->tail = m;
	una_update(p);
	now = pn_now_ns();
	/* the first message to a peer we never heard from: prove our key first (Identity) */
	uint64_t hs = UINT64_MAX;
	if (tp->proves && p->mode == M_PLAIN && !p->connector && !p->peer_session)
		hs = prove_start(tp, p, now);
	uint64_t armed = pump(tp, p, now);
	pthread_mutex_unlock(&p->lock);
	wake_for(tp, armed < hs ? armed : hs);
	return 0;
}

/* ---- receiving ---- */

/* Deliver (err 0) or drop the message and free its slot. */
static void imsg_end(struct pn_tp *tp, struct imsg *im, int err)
{
	pn_core_rx_end(tp->pn, &im->rx, err);
	im->used = false;
	tp->rx_bytes -= im->len;
}

/* The sender gave up on everything below rcv_base: messages still missing a fragment there
 * will never complete. */
static void abandon_below(struct pn_tp *tp, struct upeer *p, uint64_t base)
{
	for (unsigned i = 0; i < tp->depth; i++) {
		struct imsg *im = &p->rx[i];
		if (!im->used || im->seq0 >= base)
			continue;
		uint32_t lim = base - im->seq0 < im->n_frags ? (uint32_t)(base - im->seq0) : im->n_frags;
		for (uint32_t j = 0; j < lim; j++) {
			if (!bit_get(im->got, j)) {
				imsg_end(tp, im, -PN_ERETURNED);
				break;
			}
		}
	}
}

/* Record seq as received (peer lock held, seq in the window). */
static void rcv_mark(struct upeer *p, uint64_t seq)
{
	p->rcv_map |= 1ull << (seq - p->rcv_base);
	while (p->rcv_map & 1) {
		p->rcv_map >>= 1;
		p->rcv_base++;
	}
}

/* The sender will send nothing below una again (peer lock held). */
static void rcv_skip_to(struct upeer *p, uint64_t una)
{
	uint64_t d = una - p->rcv_base;
	p->rcv_map = d >= 64 ? 0 : p->rcv_map >> d;
	p->rcv_base = una;
	while (p->rcv_map & 1) {
		p->rcv_map >>= 1;
		p->rcv_base++;
	}
}

static void bad_frame(struct pn_tp *tp)
{
	pn_core_count(tp->pn, PN_ST_BAD_FRAMES, 1);
}

/* Map an IPv4-mapped IPv6 source back to the IPv4 address peers are named by. */
static void addr_of(struct pn_addr *a, const struct sockaddr *sa)
{
	pn_addr_from_sockaddr(a, PN_S_UDP, sa);
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	if (a->family == 6 && !memcmp(a->addr, v4mapped, 12)) {
		memmove(a->addr, a->addr + 12, 4);
		memset(a->addr + 4, 0, 12);
		a->family = 4;
	}
}

enum cls { C_NONE, C_NEW, C_DUP, C_BAD };

/* ---- admission (top; rx_lock held) ---- */

static void ring_expire(struct pn_tp *tp, struct ring *r, uint64_t now)
{
	while (r->n && now - r->t[r->head] >= tp->quarantine_ns) {
		r->head = (r->head + 1) % r->cap;
		r->n--;
	}
}

static void ring_push(struct ring *r, uint64_t now)
{
	if (!r->cap)
		return;
	if (r->n == r->cap) {          /* cannot happen (bounded by the tier): forget the oldest */
		r->head = (r->head + 1) % r->cap;
		r->n--;
	}
	r->t[(r->head + r->n) % r->cap] = now;
	r->n++;
}

/* Whether tier has room for one more peer: live ones and those in quarantine count. */
static bool tier_room(struct pn_tp *tp, int tier, uint64_t now)
{
	if (tier == TIER_NONE)
		return true;
	ring_expire(tp, &tp->retired[tier], now);
	return tp->n_tier[tier] + tp->retired[tier].n < tp->max_tier[tier];
}

static void refused(struct pn_tp *tp)
{
	pn_core_count(tp->pn, PN_ST_UDP_REFUSED, 1);
}

/* Whether pn_opts.admit accepts the message whose first fragment this is, from its first
 * bytes (at most PN_ADMIT_HEAD, as over tcp); rec NULL: a sender with no peer yet. */
static bool head_admits(struct pn_tp *tp, struct pn_peer_rec *rec, const struct uhdr *u,
                        const struct pn_hdr *h, const uint8_t *payload)
{
	if (u->kind != K_DATA || u->frag != 0)
		return false;
	size_t in_dgram = h->len < FRAG_LEN ? h->len : FRAG_LEN;
	size_t head = in_dgram < PN_ADMIT_HEAD ? in_dgram : PN_ADMIT_HEAD;
	return pn_core_admit(tp->pn, rec, h->type, payload, head, h->len);
}

/* A datagram from a sender we have no peer for: make one in the tier it may have, or NULL
 * (dropped: no room, or nothing worth a peer).  A sender not yet admitted gets a place
 * among udp_preauth_peers; when those are full, only a first datagram whose head
 * pn_opts.admit accepts at once (it carries the secret) makes an admitted peer. */
static struct upeer *peer_new(struct pn_tp *tp, const struct pn_addr *a, const struct uhdr *u,
                              const struct pn_hdr *h, const uint8_t *payload, uint64_t now)
{
	struct pn *pn = tp->pn;
	if (u->kind != K_DATA)
		return NULL;               /* an ack from a stranger acknowledges nothing of ours */
	int tier = pn_core_udp_trusted(pn, a) ? TIER_NONE : tp->o->admit ? TIER_PRE : TIER_ADMITTED;
	if (tier == TIER_PRE && !tier_room(tp, TIER_PRE, now)) {
		if (!head_admits(tp, NULL, u, h, payload)) {
			refused(tp);
			return NULL;
		}
		tier = TIER_ADMITTED;
	}
	if (!tier_room(tp, tier, now)) {
		refused(tp);
		return NULL;
	}
	struct pn_peer_rec *rec = pn_core_peer(pn, a);
	struct upeer *p = rec ? upeer_get(tp, rec) : NULL;
	if (p && p->tier == TIER_NONE && !rec->pinned) {
		p->tier = tier;
		tp->n_tier[tier]++;
	}
	return p;
}

/* Retire the peers that went quiet (rx_lock held): their records are reused after the
 * quarantine, so what spoofed source addresses can make us keep is bounded. */
static void retire_idle(struct pn_tp *tp, uint64_t now)
{
	pthread_mutex_lock(&tp->lock);
	struct upeer *peers = tp->peers;
	pthread_mutex_unlock(&tp->lock);
	for (struct upeer *p = peers; p; p = p->next) {
		int tier = p->tier;
		if (tier == TIER_NONE || now - p->last_ns < tp->idle_ns[tier])
			continue;
		if (p->rec->pinned) {      /* the application named it since: it stays */
			tp->n_tier[tier]--;
			p->tier = TIER_NONE;
			continue;
		}
		pthread_mutex_lock(&p->lock);
		/* an association outlives its AUTH's cookie: an AUTH replayed after it was
		 * retired is too old to make another */
		bool idle = !p->head && !p->n_out && !p->ack_due &&
		            (p->mode != M_KEYED || now - p->last_ns >= COOKIE_MS * 1000000ull);
		pthread_mutex_unlock(&p->lock);
		for (unsigned i = 0; i < tp->depth && idle; i++)
			idle = !p->rx[i].used;
		if (idle && pn_core_peer_retire(tp->pn, p->rec)) {
			tp->n_tier[tier]--;
			ring_push(&tp->retired[tier], now);
			p->tier = TIER_NONE;
		}
	}
}

/* ---- the proof, receiving (Identity, top; rx_lock held) ---- */

/* Our proof to p ended (its lock held): keyed or not, what waited goes out now, what was
 * sent under an association p no longer has goes out again.  Returns the earliest
 * retransmission deadline armed. */
static uint64_t proof_done(struct pn_tp *tp, struct upeer *p, uint64_t now)
{
	uint64_t armed = UINT64_MAX;
	for (struct omsg *m = p->head; m; m = m->next) {
		bool any = false;
		for (uint32_t j = m->lo; j < m->n_sent; j++) {
			if (!bit_get(m->acked, j)) {
				send_frag(tp, p, m, j);
				any = true;
			}
		}
		if (any) {
			m->resent = true;
			m->backoff = 0;
			m->progress_ns = now;
			m->rto_at = now + p->rto;
			if (m->rto_at < armed)
				armed = m->rto_at;
		}
	}
	uint64_t t = pump(tp, p, now);
	return t < armed ? t : armed;
}

/* The acceptor's side of AUTH: its cookie is ours and fresh, and its proof right; then the
 * sender's association is made (or renewed), and it is admitted and proven. */
static void on_auth(struct pn_tp *tp, const uint8_t *b, const struct uhdr *u,
                    const struct pn_addr *a, uint64_t now)
{
	struct pn *pn = tp->pn;
	enum pn_key which = b[0];
	const uint8_t *nc = b + 1, *na = nc + PN_NONCE_LEN, *mac = na + PN_NONCE_LEN;
	uint64_t t = get64(na), now_ms = now / 1000000;
	uint8_t want[PN_NONCE_LEN];
	struct pn_addr bd = bound(u->session);
	if (t > now_ms || now_ms - t >= COOKIE_MS || !cookie(tp, t, which, u->session, nc, a, want) ||
	    CRYPTO_memcmp(want, na, PN_NONCE_LEN) != 0 || !pn_core_has_key(pn, which) ||
	    !pn_core_mac_ok(pn, which, label_connector[which], nc, na, &bd, mac)) {
		bad_mac(tp);           /* forged, or too old (a connector whose secret is wrong
		                        * sends no AUTH: it found our CHALLENGE wrong) */
		return;
	}
	struct pn_peer_rec *rec = pn_core_peer_known(pn, a);
	struct upeer *p = rec ? upeer_get(tp, rec) : NULL;
	bool stale = false;
	if (p) {
		/* this AUTH again, or an older one replayed (its cookie is older than the
		 * association's): the association stands.  And a peer we prove to ourselves is
		 * the acceptor, not we. */
		pthread_mutex_lock(&p->lock);
		stale = (p->mode == M_KEYED && t <= p->auth_ms) || p->connector;
		pthread_mutex_unlock(&p->lock);
	}
	if (stale)
		return;
	if (!p) {
		int tier = pn_core_udp_trusted(pn, a) ? TIER_NONE : TIER_ADMITTED;
		if (!tier_room(tp, tier, now)) {
			refused(tp);
			return;
		}
		rec = pn_core_peer(pn, a);
		if (!rec || !(p = upeer_get(tp, rec)))
			return;
		if (p->tier == TIER_NONE && !rec->pinned) {
			p->tier = tier;
			tp->n_tier[tier]++;
		}
	} else if (p->tier == TIER_PRE) {
		/* proven: admitted, as pn_opts.admit would */
		if (!tier_room(tp, TIER_ADMITTED, now)) {
			refused(tp);
			return;
		}
		tp->n_tier[TIER_PRE]--;
		tp->n_tier[TIER_ADMITTED]++;
		p->tier = TIER_ADMITTED;
	}
	pthread_mutex_lock(&p->lock);
	if (!p->connector && keys_set(tp, p, which, nc, na, u->session, true)) {
		p->mode = M_KEYED;
		p->which = which;
		p->auth_ms = t;
		/* a member's forwarded origins are believed (on_datagram); a client's secret is
		 * what the application asks about */
		p->member = which == PN_KEY_CLUSTER;
		rec->proven = which == PN_KEY_ADMIN ? PN_PROOF_ADMIN :
		              which == PN_KEY_SECRET ? PN_PROOF_SECRET : PN_PROOF_NONE;
		p->last_ns = now;
	}
	pthread_mutex_unlock(&p->lock);
}

/* HELLO, CHALLENGE, AUTH and REPROVE (Identity, top): body b of len bytes from a. */
static void on_proof(struct pn_tp *tp, const uint8_t *b, size_t len, const struct uhdr *u,
                     const struct pn_addr *a, const struct sockaddr *sa)
{
	struct pn *pn = tp->pn;
	uint64_t now = pn_now_ns();
	if (u->kind == K_HELLO || u->kind == K_AUTH) {
		/* to the acceptor: which key */
		if (len != (u->kind == K_HELLO ? HELLO_LEN : AUTH_LEN) || b[0] > PN_KEY_ADMIN) {
			bad_frame(tp);
			return;
		}
		if (u->kind == K_AUTH) {
			on_auth(tp, b, u, a, now);
			return;
		}
		/* answer from what the HELLO holds, keeping nothing; with our nonce and proof,
		 * or, without that key, with nothing (the connector goes on unproven) */
		enum pn_key which = b[0];
		uint8_t out[CHALL_LEN];
		memcpy(out, b + 1, PN_NONCE_LEN);
		size_t n = PN_NONCE_LEN;
		if (pn_core_has_key(pn, which) &&
		    cookie(tp, now / 1000000, which, u->session, b + 1, a, out + PN_NONCE_LEN)) {
			struct pn_addr bd = bound(u->session);
			pn_core_mac(pn, which, label_acceptor[which], b + 1, out + PN_NONCE_LEN, &bd,
			            out + 2 * PN_NONCE_LEN);
			n = CHALL_LEN;
		}
		raw_send(tp, sa, sa_len(sa), K_CHALLENGE, u->session, out, n);
		return;
	}
	/* to the connector: only from the peer it proves to, and for its session */
	struct pn_peer_rec *rec = pn_core_peer_known(pn, a);
	struct upeer *p = rec ? upeer_get(tp, rec) : NULL;
	if (!p || u->echo != tp->session)
		return;
	if (u->kind == K_CHALLENGE && len != PN_NONCE_LEN && len != CHALL_LEN) {
		bad_frame(tp);
		return;
	}
	if (u->kind == K_REPROVE && len != 0) {
		bad_frame(tp);
		return;
	}
	uint64_t armed = UINT64_MAX;
	pthread_mutex_lock(&p->lock);
	if (u->kind == K_REPROVE && p->connector && p->mode == M_KEYED) {
		/* it has no association with us (it restarted, or retired us, or lost our AUTH):
		 * prove again; what it did not acknowledge goes out again under the new keys */
		keys_drop(p);
		armed = prove_start(tp, p, now);
	} else if (u->kind == K_CHALLENGE && p->mode == M_PROVING &&
	           !memcmp(b, p->nc, PN_NONCE_LEN)) {
		const uint8_t *na = b + PN_NONCE_LEN;
		struct pn_addr bd = bound(tp->session);
		bool ok = len == CHALL_LEN &&
		          pn_core_mac_ok(pn, p->which, label_acceptor[p->which], p->nc, na, &bd,
		                         na + PN_NONCE_LEN) &&
		          keys_set(tp, p, p->which, p->nc, na, tp->session, false);
		if (ok) {
			uint8_t out[AUTH_LEN] = { (uint8_t)p->which };
			memcpy(out + 1, p->nc, PN_NONCE_LEN);
			memcpy(out + 1 + PN_NONCE_LEN, na, PN_NONCE_LEN);
			pn_core_mac(pn, p->which, label_connector[p->which], p->nc, na, &bd,
			            out + 1 + 2 * PN_NONCE_LEN);
			raw_send(tp, (struct sockaddr *)&p->sa, p->salen, K_AUTH, u->session, out,
			         sizeof out);
		}
		/* Not ok: it has no such key, or not ours (most likely our secret is wrong): go
		 * on unproven, in plain datagrams, as tcp does, so the application can say what
		 * is wrong.  Nothing about our key goes to one who showed none.  (A member with
		 * another cluster key: tcp refuses the connection; here its forwarded origins
		 * are not believed, and it is said once per proof.) */
		if (!ok && len == CHALL_LEN && p->which == PN_KEY_CLUSTER)
			pn_core_log(pn, "udp: %s failed the cluster key proof (not a member, or "
			            "another key)", rec->name);
		p->mode = ok ? M_KEYED : M_PLAIN;
		armed = proof_done(tp, p, now);
	}
	pthread_mutex_unlock(&p->lock);
	wake_for(tp, armed);
}

/* Whether a DATA or ACK datagram from p (NULL: a sender we keep nothing for) may go on: its
 * MAC checks under the association with p, or it has none and there is no association.
 * One with a MAC we cannot check gets a REPROVE hint, unless we are the connector: its
 * sender believes in an association we no longer have (we restarted, or retired it).  A
 * forged hint costs its receiver a proof, a round trip (an attacker on the path can delay
 * it as much by dropping datagrams). */
static bool mac_check(struct pn_tp *tp, struct upeer *p, const struct uhdr *u,
                      const uint8_t *buf, size_t n, const struct sockaddr *sa)
{
	int mode = M_PLAIN;
	bool connector = false;
	if (p) {
		pthread_mutex_lock(&p->lock);
		mode = p->mode;
		connector = p->connector;
		pthread_mutex_unlock(&p->lock);
	}
	if (mode == M_PROVING)
		return false;              /* before our proof ends: it will be sent again */
	if (!u->mac) {
		if (mode == M_PLAIN)
			return true;
		bad_mac(tp);               /* plain datagrams are not believed once keyed */
		return false;
	}
	uint8_t tag[TAG_LEN];
	struct iovec iov = { (void *)buf, n };
	if (mode == M_KEYED && p->rx_mac && tag_of(p->rx_mac, &iov, 1, tag) &&
	    CRYPTO_memcmp(tag, buf + n, TAG_LEN) == 0)
		return true;
	bad_mac(tp);
	if (!connector)
		raw_send(tp, sa, sa_len(sa), K_REPROVE, u->session, NULL, 0);
	return false;
}

static void on_datagram(struct pn_tp *tp, const uint8_t *buf, size_t n, const struct sockaddr *sa)
{
	struct pn *pn = tp->pn;
	if (pn_core_drop(pn))
		return;                    /* fault injection: as if it never arrived */
	struct uhdr u;
	struct pn_hdr h = { 0 };
	uint32_t n_frags = 0;
	if (n < UDP_HDR_LEN || n > DGRAM_MAX || uhdr_get(buf, &u) != 0 ||
	    (u.mac && n < UDP_HDR_LEN + TAG_LEN)) {
		bad_frame(tp);
		return;
	}
	struct pn_addr a;
	addr_of(&a, sa);
	if (u.kind >= K_HELLO) {
		on_proof(tp, buf + UDP_HDR_LEN, n - UDP_HDR_LEN, &u, &a, sa);
		return;
	}
	if (u.mac)
		n -= TAG_LEN;              /* the MAC is checked below, before anything is done */
	if (u.kind == K_DATA) {
		/* never trust a length: every field must agree with the datagram's size */
		if (n < UDP_HDR_LEN + PN_HDR_LEN ||
		    pn_wire_get(buf + UDP_HDR_LEN, &h, tp->o->max_msg) != 0 || h.kind != PN_K_MSG) {
			bad_frame(tp);
			return;
		}
		n_frags = frags_of(h.len);
		size_t want = u.frag + 1 < n_frags ? FRAG_LEN : h.len - (size_t)(n_frags - 1) * FRAG_LEN;
		if (u.frag >= n_frags || n - UDP_HDR_LEN - PN_HDR_LEN != want) {
			bad_frame(tp);
			return;
		}
	} else if (n != UDP_HDR_LEN) {
		bad_frame(tp);
		return;
	}
	uint64_t now = pn_now_ns();
	const uint8_t *payload = buf + UDP_HDR_LEN + PN_HDR_LEN;
	struct pn_peer_rec *rec = pn_core_peer_known(pn, &a);
	struct upeer *p = rec ? upeer_get(tp, rec) : NULL;
	if (!mac_check(tp, p, &u, buf, n, sa))
		return;
	if (!p)
		p = peer_new(tp, &a, &u, &h, payload, now);
	if (!p)
		return;
	rec = p->rec;
	/* the sender is its source address; an origin it names is believed only from a member
	 * (pn_opts.udp_trusted, or one that proved the cluster key: its datagram's MAC just
	 * checked), or anyone could aim our replies anywhere */
	if ((h.flags & PN_F_FORWARDED) && !(u.mac && p->member) && !pn_core_udp_trusted(pn, &a))
		h.flags &= ~PN_F_FORWARDED;
	/* a sender not yet admitted is, by the first bytes of a message pn_opts.admit accepts
	 * (it carries the secret), as a tcp connection is; until then it may send only messages
	 * of up to preauth_max bytes */
	if (p->tier == TIER_PRE && u.kind == K_DATA && tier_room(tp, TIER_ADMITTED, now) &&
	    head_admits(tp, rec, &u, &h, payload)) {
		tp->n_tier[TIER_PRE]--;
		tp->n_tier[TIER_ADMITTED]++;
		p->tier = TIER_ADMITTED;
	}
	if (p->tier == TIER_PRE && u.kind == K_DATA && h.len > tp->o->preauth_max) {
		refused(tp);               /* too large before admission: never acknowledged */
		return;
	}
	p->last_ns = now;

	pthread_mutex_lock(&p->lock);
	bool restarted = false, skipped = false;
	if (u.session == p->old_session) {
		/* a straggler from before the peer restarted: must not reset the new state */
		pthread_mutex_unlock(&p->lock);
		return;
	}
	if (u.session != p->peer_session) {
		/* first datagram from this sender, or it restarted: start where it says */
		restarted = p->peer_session != 0;
		p->old_session = p->peer_session;
		p->peer_session = u.session;
		p->rcv_base = u.una;
		p->rcv_map = 0;
		p->n_unacked = 0;
		p->ack_due = 0;
	} else if (u.una > p->rcv_base) {
		rcv_skip_to(p, u.una);
		skipped = true;
	}
	if (u.echo == tp->session)
		on_ack(tp, p, u.ack, u.sack, now);
	enum cls c = C_NONE;
	if (u.kind == K_DATA) {
		if (u.seq < p->rcv_base)
			c = C_DUP;
		else if (u.seq - p->rcv_base >= WIN_MAX)
			c = C_BAD;         /* a correct sender never runs this far ahead */
		else if (p->rcv_map >> (u.seq - p->rcv_base) & 1)
			c = C_DUP;
		else
			c = C_NEW;
	}
	if (c == C_DUP) {
		pn_core_count(pn, PN_ST_DUPLICATES, 1);
		send_ack(tp, p);       /* our ack was probably lost: say it again now */
	}
	uint64_t base = p->rcv_base, map = p->rcv_map;
	uint64_t armed = pump(tp, p, now);
	pthread_mutex_unlock(&p->lock);
	wake_for(tp, armed);

	if (restarted || skipped)
		abandon_below(tp, p, restarted ? UINT64_MAX : base);
	if (c == C_BAD)
		bad_frame(tp);
	if (c != C_NEW)
		return;

	/* reassembly (this thread only) */
	uint64_t seq0 = u.seq - u.frag;
	struct imsg *im = NULL, *slot = NULL;
	for (unsigned i = 0; i < tp->depth; i++) {
		if (p->rx[i].used && p->rx[i].seq0 == seq0)
			im = &p->rx[i];
		else if (!p->rx[i].used && !slot)
			slot = &p->rx[i];
	}
	bool remnant = false;
	if (im) {
		if (memcmp(im->wire, buf + UDP_HDR_LEN, PN_HDR_LEN) != 0) {
			bad_frame(tp);     /* a fragment that disagrees with its message's header */
			return;
		}
	} else {
		/* An earlier fragment of this message arrived, yet no reassembly holds it: the
		 * message was abandoned; accept the fragment (so the sender stops) and drop it. */
		remnant = seq0 < base;
		for (uint64_t s = seq0 > base ? seq0 : base; s < u.seq && !remnant; s++)
			remnant = map >> (s - base) & 1;
		if (!remnant) {
			if (!slot)
				return;    /* D messages in reassembly already: it will be resent */
			if (tp->o->rx_budget && n_frags > 1 && tp->rx_bytes + h.len > tp->o->rx_budget)
				return;    /* over the budget of all reassemblies: it will be resent */
			uint32_t words = (n_frags + 63) / 64;
			if (slot->got_words < words) {
				uint64_t *g = realloc(slot->got, words * sizeof *g);
				if (!g)
					return;
				slot->got = g;
				slot->got_words = words;
			}
			im = slot;
			memset(im->got, 0, words * sizeof *im->got);
			im->used = true;
			im->seq0 = seq0;
			im->n_frags = n_frags;
			im->n_got = 0;
			im->len = h.len;
			tp->rx_bytes += h.len;
			memcpy(im->wire, buf + UDP_HDR_LEN, PN_HDR_LEN);
			im->buf = pn_core_rx_begin(pn, rec, &h, &im->rx);
		}
	}
	if (im) {
		size_t off = (size_t)u.frag * FRAG_LEN;
		if (im->buf)
			memcpy(im->buf + off, buf + UDP_HDR_LEN + PN_HDR_LEN, n - UDP_HDR_LEN - PN_HDR_LEN);
		bit_set(im->got, u.frag);
		im->n_got++;
		im->progress_ns = now;
	}

	pthread_mutex_lock(&p->lock);
	if (u.seq >= p->rcv_base && u.seq - p->rcv_base < WIN_MAX) {
		rcv_mark(p, u.seq);
		if (++p->n_unacked >= tp->ack_every)
			send_ack(tp, p);
		else if (!p->ack_due)
			p->ack_due = now + ACK_DELAY_NS;
	}
	pthread_mutex_unlock(&p->lock);

	/* delivered after the seq is marked, so a reply sent by an inline handler carries the ack */
	if (im && im->n_got == im->n_frags)
		imsg_end(tp, im, im->buf || !im->len ? 0 : -PN_ENOMEM);
}

/* ---- timers ---- */

/* Retransmit, give up, send owed acks and drop stalled reassemblies.  Returns the next
 * deadline. */
static uint64_t timers(struct pn_tp *tp, uint64_t now)
{
	uint64_t next = now + (uint64_t)POLL_MAX_MS * 1000000;
	/* the reassembly slots belong to the socket's reader: skip them if a waiter reads now
	 * (their limits are long; the next pass looks) */
	bool rx = pthread_mutex_trylock(&tp->rx_lock) == 0;
	uint64_t max_wait = (uint64_t)tp->o->udp_max_wait_ms * 1000000;
	pthread_mutex_lock(&tp->lock);
	struct upeer *peers = tp->peers;   /* peers are only ever added at the head */
	pthread_mutex_unlock(&tp->lock);
	for (struct upeer *p = peers; p; p = p->next) {
		struct omsg *gone = NULL;
		pthread_mutex_lock(&p->lock);
		if (p->mode == M_PROVING && now >= p->hs_start + max_wait) {
			/* no answer to our proof: what waits for it is given up like a lost
			 * message, and the next send starts another */
			gone = p->head;
			p->head = p->tail = NULL;
			p->mode = M_PLAIN;
			p->connector = false;
		} else if (p->mode == M_PROVING) {
			if (now >= p->hs_at) {
				hello_send(tp, p);
				pn_core_count(tp->pn, PN_ST_RETRANSMITS, 1);
				p->hs_at = now + backoff_rto(p, ++p->hs_backoff);
			}
			if (p->hs_at < next)
				next = p->hs_at;
			if (p->hs_start + max_wait < next)
				next = p->hs_start + max_wait;
		}
		struct omsg *prev = NULL;
		for (struct omsg *m = p->mode == M_PROVING ? NULL : p->head, *nx; m; m = nx) {
			nx = m->next;
			if (m->n_sent && now >= m->progress_ns + max_wait) {
				/* no acknowledgement for max_wait: return it to its sender */
				if (prev)
					prev->next = nx;
				else
					p->head = nx;
				if (p->tail == m)
					p->tail = prev;
				m->next = gone;
				gone = m;
				continue;
			}
			if (m->rto_at && now >= m->rto_at) {
				/* Resend the holes (below a number the receiver acknowledged: surely
				 * lost) and, as a probe, the last fragment sent; not the others above
				 * the highest acknowledged number: most likely only their ack was lost,
				 * and the probe's ack (at once, if it is a duplicate) tells. */
				uint32_t last = m->n_sent;
				while (last > m->lo && bit_get(m->acked, last - 1))
					last--;
				for (uint32_t j = m->lo; j < last; j++) {
					if (!bit_get(m->acked, j) && (m->seq0 + j < p->hi_acked || j == last - 1)) {
						send_frag(tp, p, m, j);
						pn_core_count(tp->pn, PN_ST_RETRANSMITS, 1);
					}
				}
				m->resent = true;
				m->backoff++;
				m->rto_at = now + backoff_rto(p, m->backoff);
			}
			if (m->rto_at && m->rto_at < next)
				next = m->rto_at;
			if (m->n_sent && m->progress_ns + max_wait < next)
				next = m->progress_ns + max_wait;
			prev = m;
		}
		if (gone) {
			una_update(p);
			send_ack(tp, p);   /* carries the new una: the receiver stops waiting */
			uint64_t armed = pump(tp, p, now);
			if (armed < next)
				next = armed;
		}
		if (p->ack_due && now >= p->ack_due)
			send_ack(tp, p);
		if (p->ack_due && p->ack_due < next)
			next = p->ack_due;
		pthread_mutex_unlock(&p->lock);

		for (struct omsg *m = gone; m; m = m->next)
			pn_core_returned(tp->pn, p->rec, &m->h, -PN_ERETURNED);
		if (gone) {
			pthread_mutex_lock(&p->lock);
			for (struct omsg *m = gone, *nx; m; m = nx) {
				nx = m->next;
				omsg_recycle(tp, p, m);
			}
			pthread_mutex_unlock(&p->lock);
		}
		for (unsigned i = 0; rx && i < tp->depth; i++) {
			struct imsg *im = &p->rx[i];
			if (!im->used)
				continue;
			if (now >= im->progress_ns + max_wait)
				imsg_end(tp, im, -PN_ETIMEDOUT);   /* its sender went quiet */
			else if (im->progress_ns + max_wait < next)
				next = im->progress_ns + max_wait;
		}
	}
	if (rx) {
		retire_idle(tp, now);
		pthread_mutex_unlock(&tp->rx_lock);
	}
	return next;
}

/* Read up to RX_BATCH datagrams (rx_lock held), RX_VEC per system call; a call that returns
 * fewer found the socket empty, so no call is spent on learning that (EAGAIN) in the usual
 * case of one or a few datagrams per wake-up.  block: wait up to RECV_SLICE_MS for the
 * first.  Returns how many. */
static int read_batch(struct pn_tp *tp, bool block)
{
	struct pn_tp *outer = rx_thread_of;
	rx_thread_of = tp;
	int total = 0;
	while (total < RX_BATCH && !atomic_load(&tp->stop)) {
		struct sockaddr_storage ss[RX_VEC];
		struct iovec iov[RX_VEC];
		struct mmsghdr mm[RX_VEC];
		for (int i = 0; i < RX_VEC; i++) {
			iov[i] = (struct iovec){ tp->rxbuf + (size_t)i * RX_SLOT, RX_SLOT };
			mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &ss[i], .msg_namelen = sizeof ss[i],
			                                       .msg_iov = &iov[i], .msg_iovlen = 1 } };
		}
		/* block: wait for the first datagram (up to SO_RCVTIMEO), then take what is there */
		int n = recvmmsg(tp->fd, mm, RX_VEC, block && !total ? MSG_WAITFORONE : MSG_DONTWAIT,
		                 NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;     /* EAGAIN; also ECONNREFUSED and friends: nothing to read */
		}
		for (int i = 0; i < n; i++) {
			if (mm[i].msg_hdr.msg_flags & MSG_TRUNC)
				bad_frame(tp);
			else
				on_datagram(tp, iov[i].iov_base, mm[i].msg_len,
				            (struct sockaddr *)&ss[i]);
		}
		total += n;
		if (n < RX_VEC)
			break;
	}
	rx_thread_of = outer;
	return total;
}

/* The I/O thread takes the socket back from the waiters (rx_lock held). */
static void take_back(struct pn_tp *tp)
{
	atomic_store(&tp->kicked, false);
	atomic_store(&tp->waiters_read, false);
}

static void *io_main(void *arg)
{
	pthread_setname_np(pthread_self(), "pn-udp-io");   /* for top -H, ps -L, gdb */
	struct pn_tp *tp = arg;
	io_thread_of = tp;
	struct pollfd fds[2] = { { .fd = tp->fd, .events = POLLIN }, { .fd = tp->wakefd, .events = POLLIN } };
	while (!atomic_load(&tp->stop)) {
		/* while scanning, a newly armed deadline sooner than our next wake-up wakes us: we
		 * may have passed its peer (busy: we look again within TICK_NS anyway) */
		uint64_t now = pn_now_ns();
		bool busy = now - atomic_load(&tp->last_send) < BUSY_NS;
		atomic_store(&tp->io_sleep_until, busy ? now + TICK_NS : UINT64_MAX);
		uint64_t next = timers(tp, now);
		if (busy && next > now + TICK_NS)
			next = now + TICK_NS;
		bool waiters = atomic_load(&tp->waiters_read);
		if (waiters && next > now + STICKY_NS)
			next = now + STICKY_NS;    /* look whether they still want it */
		atomic_store(&tp->io_sleep_until, next);
		now = pn_now_ns();
		int ms = next <= now ? 0 : (int)((next - now + 999999) / 1000000);
		fds[0].fd = waiters ? -1 : tp->fd;   /* poll ignores a negative fd */
		fds[0].revents = 0;
		if (poll(fds, 2, ms) < 0 && errno != EINTR)
			break;
		if (fds[1].revents & POLLIN) {
			uint64_t v;
			if (read(tp->wakefd, &v, sizeof v) < 0) { /* EAGAIN: someone else read it */ }
		}
		if (pthread_mutex_trylock(&tp->rx_lock) != 0)
			continue;                  /* a waiter reads: it keeps the socket meanwhile */
		if (atomic_load(&tp->waiters_read) &&
		    (atomic_load(&tp->kicked) || pn_now_ns() - tp->released_ns >= STICKY_NS))
			take_back(tp);
		if (!atomic_load(&tp->waiters_read))
			read_batch(tp, false);
		pthread_mutex_unlock(&tp->rx_lock);
	}
	return NULL;
}

/* The calling thread waits for a reply from peer by reading the socket itself (see the top):
 * 1 it read or was woken, 0 timeout, -1 another thread reads (sleep instead). */
static int udp_wait_read(struct pn_tp *tp, struct pn_peer_rec *peer, int wake_fd, int timeout_ms)
{
	if (atomic_load(&tp->stop) || !pn_lock_from_io(&tp->rx_lock, &tp->waiter_in))
		return -1;
	atomic_store(&tp->waiter_in, true);
	atomic_store(&tp->waiters_read, true);
	int n;
	if (wake_fd < 0) {
		/* only the socket can bring the reply: block in recvmmsg itself (one call where
		 * poll + recvmmsg were two), in slices, so timeouts and shutdown are noticed */
		n = read_batch(tp, true);
	} else {
		struct pollfd p[2] = { { .fd = tp->fd, .events = POLLIN },
		                       { .fd = wake_fd, .events = POLLIN } };
		n = poll(p, 2, timeout_ms);
		if (n > 0 && p[0].revents)
			read_batch(tp, false);
	}
	tp->released_ns = pn_now_ns();
	atomic_store(&tp->waiter_in, false);
	bool give_back = atomic_load(&tp->kicked);
	if (give_back)
		take_back(tp);
	pthread_mutex_unlock(&tp->rx_lock);
	if (give_back || atomic_load(&tp->kicked))
		pn_signal_eventfd(tp->wakefd);               /* it polls without the socket: let it look again */
	return n > 0;
}

/* A thread is about to sleep until something arrives: the I/O thread takes the socket back
 * from the waiters (now, or when the one reading lets go of it). */
static void udp_kick(struct pn_tp *tp)
{
	if (!atomic_load(&tp->waiters_read) || atomic_exchange(&tp->kicked, true))
		return;
	pn_signal_eventfd(tp->wakefd);
}

/* ---- open / close ---- */

static void udp_close(struct pn_tp *tp);

static int udp_open(struct pn *pn, struct pn_addr *self, struct pn_tp **out, char *err,
                    size_t errlen)
{
	struct pn_tp *tp = calloc(1, sizeof *tp);
	if (!tp || !(tp->rxbuf = malloc((size_t)RX_VEC * RX_SLOT))) {
		free(tp);
		snprintf(err, errlen, "out of memory");
		return -PN_ENOMEM;
	}
	tp->pn = pn;
	tp->o = pn_core_opts(pn);
	tp->fd = tp->wakefd = -1;
	tp->depth = tp->o->udp_depth;
	tp->max_tier[TIER_PRE] = tp->o->udp_preauth_peers;
	tp->max_tier[TIER_ADMITTED] = tp->o->udp_max_peers;
	tp->idle_ns[TIER_ADMITTED] = tp->o->udp_idle_ms * 1000000ull;
	tp->idle_ns[TIER_PRE] = (tp->o->udp_idle_ms < PREAUTH_IDLE_MS ? tp->o->udp_idle_ms :
	                         PREAUTH_IDLE_MS) * 1000000ull;
	tp->quarantine_ns = tp->o->peer_quarantine_ms * 1000000ull;
	for (int t = TIER_PRE; t < TIER_N; t++) {
		tp->retired[t].cap = tp->max_tier[t];
		if (!(tp->retired[t].t = calloc(tp->max_tier[t], sizeof *tp->retired[t].t))) {
			free(tp->retired[TIER_PRE].t);
			free(tp->rxbuf);
			free(tp);
			snprintf(err, errlen, "out of memory");
			return -PN_ENOMEM;
		}
	}
	pthread_mutex_init(&tp->lock, NULL);
	pthread_mutex_init(&tp->rx_lock, NULL);
	atomic_init(&tp->stop, false);
	atomic_init(&tp->n_senders, 0);
	atomic_init(&tp->io_sleep_until, UINT64_MAX);
	while (tp->session == 0)
		if (getrandom(&tp->session, sizeof tp->session, 0) != sizeof tp->session)
			tp->session = (uint32_t)(pn_now_ns() ^ (uintptr_t)tp);
	/* the key we prove as a connector, as over tcp: the cluster key, else the admin secret,
	 * else the secret */
	tp->key = pn_core_has_key(pn, PN_KEY_CLUSTER) ? PN_KEY_CLUSTER :
	          pn_core_has_key(pn, PN_KEY_ADMIN) ? PN_KEY_ADMIN : PN_KEY_SECRET;
	tp->proves = pn_core_has_key(pn, tp->key);
	tp->hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (!tp->hmac || getrandom(tp->cookie_key, sizeof tp->cookie_key, 0) != sizeof tp->cookie_key) {
		snprintf(err, errlen, "udp: no HMAC or no randomness for the proofs");
		pthread_mutex_destroy(&tp->lock);
		pthread_mutex_destroy(&tp->rx_lock);
		EVP_MAC_free(tp->hmac);
		free(tp->rxbuf);
		for (int t = TIER_PRE; t < TIER_N; t++)
			free(tp->retired[t].t);
		free(tp);
		return -PN_ESYS;
	}

	struct sockaddr_storage ss;
	socklen_t sl = pn_addr_to_sockaddr(self, &ss);
	tp->family = ss.ss_family;
	/* blocking, for waiters' recvmmsg (in RECV_SLICE_MS slices); every other call on it
	 * says MSG_DONTWAIT */
	tp->fd = socket(tp->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int saverr = errno;
	if (tp->fd < 0 || bind(tp->fd, (struct sockaddr *)&ss, sl) != 0 ||
	    getsockname(tp->fd, (struct sockaddr *)&ss, &sl) != 0) {
		if (tp->fd >= 0)
			saverr = errno;
		snprintf(err, errlen, "udp bind: %s", strerror(saverr));
		goto fail;
	}
	self->port = ((struct sockaddr_in *)&ss)->sin_port;  /* same offset in sockaddr_in6 */
	/* Big socket buffers: a window of 32 KiB datagrams must fit in the receiver's. */
	int sz = SOCK_BUF, got = 0;
	socklen_t gl = sizeof got;
	setsockopt(tp->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	setsockopt(tp->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	getsockopt(tp->fd, SOL_SOCKET, SO_RCVBUF, &got, &gl);
	struct timeval slice = { .tv_usec = RECV_SLICE_MS * 1000 };
	setsockopt(tp->fd, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof slice);
	/* The peer's buffer is assumed as large as ours; the kernel's accounting of a datagram
	 * (truesize) is up to twice its length. */
	unsigned win = (unsigned)got / (2 * DGRAM_MAX);
	tp->win = win < WIN_MIN ? WIN_MIN : win > WIN_MAX ? WIN_MAX : win;
	tp->ack_every = tp->win / 4;
	tp->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (tp->wakefd < 0) {
		snprintf(err, errlen, "udp eventfd: %s", strerror(errno));
		goto fail;
	}
	if (pthread_create(&tp->thread, NULL, io_main, tp) != 0) {
		snprintf(err, errlen, "udp: pthread_create failed");
		goto fail;
	}
	*out = tp;
	return 0;
fail:
	if (tp->wakefd >= 0)
		close(tp->wakefd);
	if (tp->fd >= 0)
		close(tp->fd);
	EVP_MAC_free(tp->hmac);
	OPENSSL_cleanse(tp->cookie_key, sizeof tp->cookie_key);
	pthread_mutex_destroy(&tp->lock);
	pthread_mutex_destroy(&tp->rx_lock);
	free(tp->rxbuf);
	for (int t = TIER_PRE; t < TIER_N; t++)
		free(tp->retired[t].t);
	free(tp);
	return -PN_ESYS;
}

static void omsg_free_list(struct omsg *m)
{
	for (struct omsg *nx; m; m = nx) {
		nx = m->next;
		free(m->data);
		free(m->acked);
		free(m);
	}
}

static void udp_close(struct pn_tp *tp)
{
	atomic_store(&tp->stop, true);
	/* Senders waiting for an instance buffer give up now; wait until every sender is out.
	 * (A thread that calls pn_send after this returns is the caller's error: pn.h.) */
	pthread_mutex_lock(&tp->lock);
	for (struct upeer *p = tp->peers; p; p = p->next) {
		pthread_mutex_lock(&p->lock);
		pthread_cond_broadcast(&p->space);
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_unlock(&tp->lock);
	while (atomic_load(&tp->n_senders) > 0)
		usleep(1000);
	pn_signal_eventfd(tp->wakefd);
	pthread_join(tp->thread, NULL);
	for (struct upeer *p = tp->peers, *nx; p; p = nx) {
		nx = p->next;
		for (unsigned i = 0; i < tp->depth; i++) {
			if (p->rx[i].used)
				imsg_end(tp, &p->rx[i], -PN_ESHUTDOWN);
			free(p->rx[i].got);
		}
		free(p->rx);
		omsg_free_list(p->head);
		omsg_free_list(p->free_list);
		keys_drop(p);
		pthread_cond_destroy(&p->space);
		pthread_mutex_destroy(&p->lock);
		p->rec->tp_state = NULL;
		free(p);
	}
	close(tp->fd);
	close(tp->wakefd);
	EVP_MAC_free(tp->hmac);
	OPENSSL_cleanse(tp->cookie_key, sizeof tp->cookie_key);
	pthread_mutex_destroy(&tp->lock);
	pthread_mutex_destroy(&tp->rx_lock);
	free(tp->rxbuf);
	for (int t = TIER_PRE; t < TIER_N; t++)
		free(tp->retired[t].t);
	free(tp);
}

const struct pn_transport pn_udp_transport = {
	.scheme = "udp",
	.scheme_id = PN_S_UDP,
	.open = udp_open,
	.close = udp_close,
	.send = udp_send,
	.wait_read = udp_wait_read,
	.kick = udp_kick,
};
