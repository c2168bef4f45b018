/* server.h: the Active RDMA server (arfd) as a library, so tests and benchmarks can run one
 * in-process; server/arfd.c is the command-line front end.
 */
#ifndef ARFD_SERVER_H
#define ARFD_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "pn.h"
#include "vm.h"

#define ARFD_MAX_LISTEN  PN_MAX_ENDPOINTS
#define ARFD_MAX_REGIONS 64

struct arfd_region_spec {
	char name[256];
	uint64_t size;             /* anonymous memory of this size, when file is empty */
	char file[4096];           /* an mmap'd file (MAP_SHARED: writes reach the file) */
	unsigned access;           /* ISA_ACC_RO or ISA_ACC_RW */
	bool admin_write;          /* rw, but written only by clients with the admin secret
	                            * (":admin"): WRITE, and EXEC of a segment importing it rw */
};

/* A host hook a server module adds (vm.h: vm_bind_hook); ARF and the benchmarks use these. */
struct arfd_hook {
	const char *name;
	void *fn;
	const char *sig;
	void *user;
	bool blocks;                   /* it may sleep or wait for I/O: a run started on the reader
	                                * hands the reader's place over before calling it (a hook
	                                * that blocks without saying so delays other requests) */
};
#define ARFD_MAX_HOOKS 64

enum arfd_log_level { ARFD_LOG_ERROR, ARFD_LOG_WARN, ARFD_LOG_INFO, ARFD_LOG_DEBUG };
/* "error", "warning", "info", "debug": the words of --log and of each log line */
extern const char *const arfd_log_names[ARFD_LOG_DEBUG + 1];

#define ARFD_MAX_MEMBERS 64

struct arfd_config {
	const char *listen[ARFD_MAX_LISTEN];
	unsigned n_listen;
	struct arfd_region_spec regions[ARFD_MAX_REGIONS];
	unsigned n_regions;
	const char *secret;        /* NULL: none required */
	/* Rights (docs/protocol.md, "Security model"): with an admin secret, INSTALL and
	 * writing admin_write regions need it, and the secret (or none, when secret is NULL)
	 * allows the rest: EXEC, READ, WRITE, REGIONS, STATS.  Without one, whoever has the
	 * secret may do everything (as before there were two). */
	const char *admin_secret;  /* NULL: no admin rights apart */
	/* tls: endpoints (docs/net.md, "TLS"): this server's certificate chain and key (PEM),
	 * needed to listen on tls:; the CAs it trusts when it connects to one (NULL: the
	 * system's, or $PN_TLS_*) */
	const char *tls_cert, *tls_key, *tls_ca;
	unsigned threads;          /* worker threads running segments; 0 = 4 */
	unsigned cache_max;        /* installed segments kept; 0 = 256 */
	uint64_t max_segment;      /* bytes; 0 = 16 MiB */
	uint64_t fuel_default;     /* when a request gives none; 0 = VM_DEFAULT_FUEL */
	uint64_t fuel_max;         /* requests asking more get this; 0 = 10 * fuel_default */
	uint64_t out_max;          /* output bytes per run; 0 = 64 MiB */
	unsigned max_inflight;     /* concurrent requests per client; 0 = 64 */
	unsigned max_run_ms;       /* wall-clock limit of a run (trap 'time'); a request may ask
	                            * for less, never more; 0 = ARFD_DEFAULT_RUN_MS */
	unsigned hook_fuel_ns;     /* a hook costs one unit of fuel per this many ns it takes;
	                            * 0 = ARFD_DEFAULT_HOOK_FUEL_NS */
	struct arfd_hook hooks[ARFD_MAX_HOOKS]; /* besides the built-in now and log */
	unsigned n_hooks;
	const char *arf_image;     /* an ARF image to serve as rw region "arf" (arf/arf.h): checked,
	                            * attached on start (a corrupt one is refused), detached on stop */
	bool log_given;            /* "log LEVEL" was given: log_level; else ARFD_LOG_INFO */
	enum arfd_log_level log_level;
	bool log_syslog;           /* "syslog": to syslog(3) instead of stderr */
	/* Connections (docs/net.md, "Admission and limits"): a connection is admitted by its
	 * first request with the right secret (any well-formed request without --secret). */
	unsigned max_conns;        /* 0 = RLIMIT_NOFILE - 64 */
	unsigned max_conns_per_addr; /* 0 = 256 */
	unsigned auth_timeout;     /* s to be admitted; 0 = 10 */
	unsigned idle_timeout;     /* s an admitted connection may stay silent; 0 = 600 */
	uint64_t rx_budget;        /* payload bytes being received at once; 0 = 256 MiB */
	/* Delegation (docs/cluster.md, "Delegation"): the servers of a cluster share a key
	 * (Paradis-Net's cluster key: a forwarded request's origin is believed only from a
	 * member that proved it), and a server that forwards names its members in order: a
	 * segment's forward(k) hook sends the request its run built to members[k], which
	 * answers the client directly. */
	/* Moves (docs/arf.md, "Moving an image"): the --arf image is locked (flock) by the
	 * server that serves it; another waits this long for the lock, else refuses to start */
	unsigned lock_wait_s;      /* 0: refuse at once */
	/* "move-to ENDPOINT": arfd_move to it, applied by a reload (SIGHUP) of a running arfd */
	const char *move_to;
	const char *cluster_key;   /* NULL: none (forwarded origins are not believed) */
	const char *members[ARFD_MAX_MEMBERS];
	unsigned n_members;
};

/* 10 s: six times the longest legitimate run measured here (an ARF fsync of 4 GiB written
 * without writeback, 1.5 s; a 64 MiB grep scan takes 0.1 s), a third of arc's default
 * timeout (30 s, after which nobody reads the answer), and the time SIGTERM waits. */
#define ARFD_DEFAULT_RUN_MS 10000
/* 100 ns: the default fuel (VM_DEFAULT_FUEL, 10^8) then pays for 10 s of hooks, the default
 * wall-clock limit, so fuel refuses no wait the time limit allows by default, and a run asking
 * for little fuel may wait little (10^6: 100 ms).  Loops cost 1 to 6 ns a unit (bench/vm). */
#define ARFD_DEFAULT_HOOK_FUEL_NS 100

struct arfd;

/* Map the regions, bind hooks, open the endpoints and start serving.  NULL with a message. */
struct arfd *arfd_start(const struct arfd_config *cfg, char *err, size_t errlen);
/* The endpoint names actually listened on (port 0 resolved), for tests. */
const char *arfd_endpoint(struct arfd *s, const char *scheme);
/* Stop taking new requests (they get AR_ESHUTDOWN), wait up to timeout_ms for the ones in
 * flight, then cancel what still runs or waits (the clients get AR_ESHUTDOWN; a run stops
 * at its next look at the cancel flag: within one chunk of fuel or one hook call), close the
 * endpoints, msync file-backed regions, free everything. */
void arfd_stop(struct arfd *s, int timeout_ms);
/* Give the image (every region) to the server at endpoint, which serves it from the same
 * file (shared storage, or a copy made after this returns): requests are answered MOVED
 * naming endpoint from now on (libarc follows it); the ones admitted before finish; then the
 * regions are written back (msync) and unmapped, the image's lock let go.  The endpoints
 * stay open, so late clients are redirected, until arfd_stop.  Called from one thread, as
 * arfd_stop.  0 (also when already moved there), or -1 with a message (a bad endpoint, this
 * server's own, another move done before; or runs that did not stop: the image stays). */
int arfd_move(struct arfd *s, const char *endpoint, char *err, size_t errlen);

/* Parse one configuration line or option value: "listen tcp:...",
 * "region NAME=SIZE[:ro|:rw|:admin]", "region NAME=@FILE[:ro|:rw|:admin]", "arf IMAGE",
 * "secret S", "secret-file FILE", "admin-secret S", "admin-secret-file FILE", "threads N", "cache N", "max-segment SIZE",
 * "fuel N", "max-fuel N", "max-output SIZE", "max-inflight N", "max-run-ms N",
 * "hook-fuel-ns N", "max-conns N", "max-conns-per-addr N", "auth-timeout S", "idle-timeout S",
 * "rx-budget SIZE", "log LEVEL" (error, warning, info, debug), "syslog" (no value),
 * "cluster-key S", "cluster-key-file FILE", "member ENDPOINT" (repeated: members 0, 1, ...),
 * "lock-wait S", "move-to ENDPOINT".
 * Strings are copied.
 * Returns 0 or -1 with a message. */
int arfd_config_line(struct arfd_config *cfg, const char *key, const char *value, char *err,
                     size_t errlen);
int arfd_config_file(struct arfd_config *cfg, const char *path, char *err, size_t errlen);
int arfd_parse_size(const char *s, uint64_t *out);

/* Logging: lines "arfd: LEVEL: message" to stderr, or to syslog.  When stderr is the
 * systemd journal ($JOURNAL_STREAM names it), each line starts with its syslog priority
 * ("<3>" for an error, sd-daemon(3)) instead of a time, so the journal keeps the level. */
void arfd_log_setup(enum arfd_log_level max, bool use_syslog);
void arfd_log(enum arfd_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
