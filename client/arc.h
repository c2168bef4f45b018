/* arc.h: libarc, the client of arfd.  Connect to a server by endpoint name, install code
 * segments, run them there (or, later, here against remote memory), read and write exported
 * regions, and ask for the server's regions and statistics.
 *
 * Errors: functions return 0 or a negative AR_E* code (ar_strerror); the server's message, or
 * the local reason, is kept per connection in arc_errmsg.  A struct arc may be used by many
 * threads at once, except that arc_errmsg then reports some thread's last error.
 */
#ifndef ARC_H
#define ARC_H

#include <stddef.h>
#include <stdint.h>

#include "ar_proto.h"

struct arc;

struct arc_opts {
	const char *secret;        /* the server's shared secret, if it has one */
	const char *admin_secret;  /* or its admin secret (INSTALL, admin-only regions; used
	                            * instead of secret when set): arfd --admin-secret */
	int timeout_ms;            /* per request; 0 = 30000 */
	const char *listen;        /* this client's own endpoint; NULL = SCHEME:ADDR:0, ADDR the local
	                            * address the server is reached from (127.0.0.1 for a local one) */
	/* tcp, tls, rdma: ride through a broken connection (the server restarted, a reset) for
	 * this long: requests in flight are sent again on a new connection after back-off, and a
	 * server that still has this client's session answers a repeat from its reply cache
	 * (docs/net.md, "Sessions"; when libarc chose rdma, the session moves to tcp should rdma
	 * fail: "Choosing the transport").  Past it, requests fail with -AR_ETIMEDOUT and a
	 * message.  The time of an outage does not count toward timeout_ms.  A request a
	 * stopping server did not start (-AR_EDRAINING) is sent again within the same limit.
	 * 0 = 60000; < 0: no session (a broken connection fails the requests in flight at once,
	 * -AR_ENET) */
	int outage_ms;
	/* 1: ride through from the start, also when the server cannot be reached at first (a
	 * command started while its server restarts); 0: a server that cannot be reached before
	 * it ever answered is an error at once (-AR_ENET), as a mount of a wrong address should
	 * be */
	int wait_first;
	/* tls: the CAs (PEM file) that vouch for the server's certificate; NULL: $PN_TLS_CA,
	 * else the system's.  Read when connecting (arc_connect). */
	const char *tls_ca;
};

/* Connect to "tcp:HOST:PORT", "tls:HOST:PORT" (the same inside TLS 1.3, docs/net.md),
 * "udp:HOST:PORT" (the connection itself is made on the first request) or "rdma:HOST:PORT";
 * "auto:HOST:PORT" or plain "HOST:PORT" takes the best transport the server answers on: rdma
 * where this machine has an RDMA device, else tcp, else udp (a probe each, at most 1 s; what
 * was tried: arc_transport_note).  NULL with a message in err. */
struct arc *arc_connect(const char *endpoint, const struct arc_opts *opts, char *err,
                        size_t errlen);
/* The server's endpoint with the transport in use ("tcp:10.0.0.1:7000"); after a move, the
 * endpoint the server named (arc_moves); after rdma failed mid-session (auto chose rdma),
 * the tcp endpoint the session moved to. */
const char *arc_endpoint(struct arc *a);
/* A server that gave its image to another (arfd's move-to) answers MOVED naming it: every
 * call follows it, to an endpoint of the same transport (tcp, tls, udp; not rdma), sends the
 * request there (it was not started) and keeps that server from then on; with a session the
 * new server is waited for, within the outage limit.  At most 8 moves in a row per request,
 * then -AR_EMOVED with a message (servers that redirect to each other).  The number of
 * moves followed so far: */
unsigned arc_moves(struct arc *a);
/* For an endpoint without a scheme: "auto: rdma: no RDMA device here; tcp: answered in
 * 0.21 ms"; when rdma was taken, "...; tcp if rdma fails", and once it did, "...;
 * mid-session: moved from rdma:H:P to tcp:H:P: its device failed"; else "". */
const char *arc_transport_note(struct arc *a);
void arc_close(struct arc *a);
const char *arc_errmsg(struct arc *a);

/* Install a segment; its id (SHA-256 of the bytes) in id. */
int arc_install(struct arc *a, const void *seg, size_t len, uint8_t id[AR_ID_LEN]);

struct arc_exec {
	/* what to run: a segment's bytes (sent by id, installed on first use and whenever the
	 * server evicted it) */
	const void *seg;
	size_t seg_len;
	/* optional: the segment's id (isa_seg_id of seg, or what arc_install gave), for callers
	 * that run one segment many times: NULL makes every run hash the whole segment
	 * (SHA-256; about 0.2 ms for 50 KB), which can cost more than the round trip */
	const uint8_t *seg_id;
	const char *entry;         /* exported function; NULL = "main" */
	const int64_t *args;
	unsigned n_args;
	const void *argbytes;      /* the run's 'args' region */
	size_t argbytes_len;
	uint64_t fuel;             /* 0: the server's default */
	uint64_t out_max;          /* output limit; 0 = 1 MiB */
	uint32_t time_limit_ms;    /* wall-clock limit of the run, below the server's own
	                            * (arfd --max-run-ms); 0: the server's.  Past it the run traps
	                            * 'time' */
	/* 1: the server may hand the run on to a member of its cluster (arfd's forward hook,
	 * docs/cluster.md "Delegation"), which then answers: the reply is taken from whoever
	 * sends it, not only from this server (the wait cannot read this server's connection
	 * itself then).  An ENOSEG in such a reply is the member's, not sent again here. */
	int delegated;
	/* The longest wait for this request's reply, in ms; 0: the arc's timeout.  A delegated
	 * request needs its own: its reply comes from a member, and a forward lost with a
	 * member's dying connection is noticed by nobody else. */
	uint32_t wait_ms;
	/* results */
	int64_t value;
	uint64_t fuel_used;
	void *out;                 /* malloc'd output (free() it), out_len bytes */
	uint64_t out_len;
	int trapped;               /* 1: the run trapped, see trap (the call returns -AR_ETRAP) */
	struct ar_trap trap;
};

/* Run on the server.  0 when the entry returned; -AR_ETRAP (trap filled, output so far in
 * out); -AR_ELOAD / -AR_ENOENTRY / ... with arc_errmsg. */
int arc_exec(struct arc *a, struct arc_exec *x);

/* Run here instead, in this process's VM, with every access to a server region turned into
 * remote operations on it: loads into READs (through a small per-run read cache), stores into
 * WRITEs, atomics into a tiny EXEC of the atomic at the server (so they stay atomic).  This
 * is the plain-RDMA placement: results (value, output, trap) are identical to arc_exec, only
 * the number of round trips differs.  Segments that import host hooks cannot run here (the
 * hooks are the server's): -AR_ELOAD says which. */
int arc_exec_local(struct arc *a, struct arc_exec *x);

/* Many runs in flight: start them, then wait for each (in any order).  The struct must stay
 * valid until arc_exec_wait returns for it. */
struct arc_pending;
int arc_exec_start(struct arc *a, struct arc_exec *x, struct arc_pending **out);
int arc_exec_wait(struct arc *a, struct arc_pending *p);
/* The requests this thread starts between the two go out together at arc_batch_end (one
 * system call, as a pipelined client writes a burst), not one by one.  Wait for none of
 * them before arc_batch_end. */
void arc_batch_begin(struct arc *a);
void arc_batch_end(struct arc *a);

/* Several servers from one endpoint, so that one Cooperation can gather their replies
 * (arc_exec_many): a connection to endpoint that shares base's Paradis-Net endpoint (and,
 * whatever the transport, the secret base proves; opts->secret is used elsewhere) with its
 * own timeout and outage policy (opts as arc_connect's).  Close it before base.  NULL with a
 * message. */
struct arc *arc_connect_also(struct arc *base, const char *endpoint, const struct arc_opts *opts,
                             char *err, size_t errlen);

/* Scatter/gather: run xs[i] on as[i] for i < n (n <= ARC_MANY_MAX; every as[i] made by
 * arc_connect or arc_connect_also from the same base), all in one Paradis-Net Cooperation
 * over n receive descriptors: the requests go out together and one wait collects every
 * reply, bounded by the largest timeout_ms among them.  rcs[i] is what arc_exec would
 * return for run i (its message in arc_errmsg(as[i])); the result is the first failure of
 * them, or 0.  A run the server did not take (segment not installed, draining) is sent again
 * on its own.  Thread-safe as arc_exec. */
#define ARC_MANY_MAX 64
int arc_exec_many(struct arc *const *as, struct arc_exec *const *xs, int *rcs, unsigned n);

/* Over rdma: these are one-sided RDMA READ/WRITE of the server's memory (no server CPU);
 * elsewhere READ/WRITE requests the server's I/O thread serves.  Same results either way. */
int arc_read(struct arc *a, const char *region, uint64_t off, void *buf, uint32_t len);
int arc_write(struct arc *a, const char *region, uint64_t off, const void *buf, uint32_t len);

struct arc_region {
	char name[AR_MAX_NAME + 1];
	uint64_t size;
	unsigned access;           /* ISA_ACC_RO (1) or ISA_ACC_RW (3) */
	unsigned handle_len;       /* rdma: a key for one-sided access (arc_read/arc_write use it) */
	uint8_t handle[32];
};
/* The server's regions: a malloc'd array in *out (free() it), n in *n. */
int arc_regions(struct arc *a, struct arc_region **out, unsigned *n);
/* This client's own Paradis-Net counters (shared by the connections of one endpoint,
 * arc_connect_also): messages sent and received, so far. */
void arc_net_counts(struct arc *a, uint64_t *msgs_sent, uint64_t *msgs_recv);
/* ... and how its waits for replies went, as "name value" lines (malloc'd, NUL-terminated;
 * NULL when out of memory): read in the caller or woken by the I/O thread, polled or not
 * and why not (docs/net.md, "Polling"). */
char *arc_net_wait_stats(struct arc *a);
/* The server's statistics as "name value" lines: malloc'd, NUL-terminated. */
int arc_stats(struct arc *a, char **text);

/* For programs that move large messages (the arf and arc commands, arfd): keep freed
 * buffers of up to 64 MiB in the heap instead of returning them to the kernel.  Every
 * request allocates and frees buffers of up to a few MiB (the message, the output, the
 * reply); glibc gives such sizes fresh mappings, or trims them off the heap's top again, so
 * each request faulted its pages in anew: 256 faults a MiB, which on a virtual machine cost
 * more than the copy (reading a file through arf mount: 3.9 s -> 0.42 s for 300 MB).
 * Process-wide (mallopt): call it from main, not from a library. */
void arc_keep_buffers(void);

#endif
