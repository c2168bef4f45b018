/* arc.c: libarc.  Each request is one Paradis-Net Cooperation with one receive descriptor
 * (the reply lands in a buffer Paradis-Net allocates for it), so any number of requests from
 * any number of threads can be in flight on one connection.  arc_exec_many is the
 * exception: runs on several servers that share one endpoint (arc_connect_also) in one
 * Cooperation over as many descriptors (scatter/gather, ARF's striped files).
 */
#include <dirent.h>
#include <inttypes.h>
#include <malloc.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "arc.h"
#include "asm.h"
#include "isa.h"
#include "pn.h"
#include "vm.h"

#define ARC_KNOWN_IDS 64
#define ARC_SPARE_MAX 32
#define ARC_SPARE_BUF (64u << 10)   /* larger request buffers are not kept */

struct arc {
	struct pn *pn;
	/* ids this connection has sent inline or installed: sent by id afterwards; others go
	 * inline at once, saving the round trip of a "not installed" answer */
	uint8_t known[ARC_KNOWN_IDS][AR_ID_LEN];
	unsigned n_known, next_known;
	/* the server; changed by a move (follow_move), so read once per request, which keeps the
	 * peer it was sent to */
	_Atomic pn_peer server;
	unsigned n_moves;              /* moves followed (under lock) */
	char secret[AR_MAX_SECRET + 1];
	int timeout_ms;
	int outage_ms;                 /* the session's outage limit, or 0: no session */
	pthread_mutex_t lock;
	struct arc_pending *pending;   /* started, not yet waited for */
	/* waited-for runs' records, with their request buffers, for the next runs (under lock;
	 * at most ARC_SPARE_MAX): a pipelining caller starts one per request */
	struct arc_pending *spare;
	unsigned n_spare;
	struct vm *local;              /* for arc_exec_local: the server's regions, remote */
	struct atomic_seg { char region[AR_MAX_NAME + 1]; uint8_t *seg; size_t len; } *atomics;
	unsigned n_atomics;
	int rdma;                      /* the server is rdma: (one-sided access possible) */
	int fallback;                  /* auto chose rdma: its session moves to tcp when rdma
	                                * fails (pn_session_fallback) */
	_Atomic int moved;             /* ... and it has: no more one-sided access */
	int shares_pn;                 /* made by arc_connect_also: pn is another arc's */
	struct arc_region *onesided;   /* regions with their handles, fetched on first use */
	unsigned n_onesided;
	int onesided_tried;
	char errmsg[AR_MAX_MSG + 64];
	_Atomic int takes_zstd;        /* the server said it unpacks argument bytes */
	_Atomic uint64_t args_slow_ns; /* when the server last said our bytes reach it slowly */
	_Atomic uint64_t args_rate;    /* ... and at what rate (bytes a second) */
	int compress;                  /* ARC_COMPRESS: 0 auto (slow links), 1 always, -1 never */
	char endpoint[300];            /* the server, with the scheme chosen (arc_endpoint) */
	char transport_note[400];      /* auto: why that scheme (arc_transport_note) */
};

struct arc_pending {
	struct arc_pending *prev, *next;  /* the connection's runs in flight, for arc_close */
	struct arc_exec *x;
	struct pn_rcv_desc d;
	pn_coop coop;
	pn_peer to;                    /* the server it was sent to */
	struct ar_buf req;
	int sent_inline;
	int rc;
};

static int fail(struct arc *a, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct arc *a, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&a->lock);
	vsnprintf(a->errmsg, sizeof a->errmsg, fmt, ap);
	pthread_mutex_unlock(&a->lock);
	va_end(ap);
	return rc;
}

const char *arc_errmsg(struct arc *a) { return a->errmsg; }

static bool id_known_locked(struct arc *a, const uint8_t id[AR_ID_LEN])
{
	bool known = false;
	for (unsigned i = 0; i < a->n_known && !known; i++)
		known = !memcmp(a->known[i], id, AR_ID_LEN);
	return known;
}

static bool id_known(struct arc *a, const uint8_t id[AR_ID_LEN])
{
	pthread_mutex_lock(&a->lock);
	bool known = id_known_locked(a, id);
	pthread_mutex_unlock(&a->lock);
	return known;
}

static void id_remember(struct arc *a, const uint8_t id[AR_ID_LEN])
{
	if (id_known(a, id))
		return;
	pthread_mutex_lock(&a->lock);
	memcpy(a->known[a->next_known], id, AR_ID_LEN);     /* oldest replaced first */
	a->next_known = (a->next_known + 1) % ARC_KNOWN_IDS;
	if (a->n_known < ARC_KNOWN_IDS)
		a->n_known++;
	pthread_mutex_unlock(&a->lock);
}

/* The address of this machine that the server at "HOST:PORT" is reached from (the source
 * address the kernel would pick: a UDP socket "connected" there sends nothing), for this
 * client's own endpoint: a server that has to open a connection back (udp, rdma) must be
 * able to reach it, which 127.0.0.1 is only for a server on this machine; and rdma_cm routes
 * nothing to 127.0.0.1 at all.  127.0.0.1 when it cannot be told (or for IPv6 servers:
 * endpoint names are IPv4 here). */
static void local_address_for(const char *hostport, char *out, size_t len)
{
	snprintf(out, len, "127.0.0.1");
	const char *last = strrchr(hostport, ':');
	if (!last || last == hostport)
		return;
	char host[256];
	size_t hl = (size_t)(last - hostport);
	if (hl >= sizeof host)
		return;
	memcpy(host, hostport, hl);
	host[hl] = '\0';
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *ai = NULL;
	if (getaddrinfo(host, last + 1, &hints, &ai) != 0 || !ai)
		return;
	int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		char a[INET_ADDRSTRLEN];
		if (ss.ss_family == AF_INET &&
		    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, a, sizeof a))
			snprintf(out, len, "%s", a);
	}
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
}

/* tcp: or tls: (the same transport inside TLS): the secret is proved when a connection
 * opens, and the requests ride a session through a broken connection. */
static bool stream_endpoint(const char *endpoint)
{
	return !strncmp(endpoint, "tcp:", 4) || !strncmp(endpoint, "tls:", 4);
}

/* The transports whose requests ride a session (udp: has exactly-once delivery of its own
 * within a connection's life, docs/udp.md). */
static bool session_endpoint(const char *endpoint)
{
	return stream_endpoint(endpoint) || !strncmp(endpoint, "rdma:", 5);
}

/* Every transport proves the secret in Paradis-Net (docs/net.md, "Identity and trust"):
 * tcp:, tls: and rdma: when a connection opens, udp: before the first datagram to the
 * server.  It is given to pn_init and never put in a request. */
static bool proving_endpoint(const char *endpoint)
{
	return stream_endpoint(endpoint) || !strncmp(endpoint, "udp:", 4) ||
	       !strncmp(endpoint, "rdma:", 5);
}

/* Name the server on a->pn and, over tcp, tls and rdma, open the session its requests ride
 * (the policy is ours, the mechanism Paradis-Net's: docs/net.md, "Sessions").  0 or -PN_E*. */
static int open_server(struct arc *a, const char *endpoint, const struct arc_opts *opts)
{
	a->rdma = !strncmp(endpoint, "rdma:", 5);
	pn_peer peer;
	int rc = pn_peer_get(a->pn, endpoint, &peer);
	if (rc == 0)
		a->server = peer;
	if (rc == 0 && session_endpoint(endpoint) && !(opts && opts->outage_ms < 0)) {
		a->outage_ms = opts && opts->outage_ms ? opts->outage_ms : 60000;
		struct pn_session_opts so = { .outage_ms = (unsigned)a->outage_ms,
		                              .flags = opts && opts->wait_first ? 0 :
		                                       PN_SESSION_FAIL_FIRST };
		rc = pn_session_open(a->pn, peer, &so);
	}
	return rc;
}

static struct arc *connect_scheme(const char *endpoint, const struct arc_opts *opts, char *err,
                                  size_t errlen, const char *fallback);

/* ARC_COMPRESS: "always" packs every EXEC payload of AR_ZSTD_MIN bytes or more (tests,
 * measurements), "never" none, anything else (the default) only over slow links. */
static int compress_policy(void)
{
	const char *v = getenv("ARC_COMPRESS");
	return !v ? 0 : !strcmp(v, "always") ? 1 : !strcmp(v, "never") ? -1 : 0;
}

/* ---- the transport for an endpoint without a scheme (auto:HOST:PORT, HOST:PORT) ----
 * Tried in order of what serves best: rdma: where this machine has an RDMA device, tcp:,
 * udp:.  The first whose server answers a REGIONS request within AUTO_PROBE_MS is taken; any
 * answer counts (a refusal for the secret too: the transport works, and the real connection
 * then reports it).  The probe is a connection of its own, closed again; what was tried and
 * how long the answer took is kept for arc_transport_note (arc stats prints it). */
#define AUTO_PROBE_MS 1000

static bool rdma_device_here(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	if (!d)
		return false;
	bool any = false;
	for (struct dirent *e; !any && (e = readdir(d));)
		any = e->d_name[0] != '.';
	closedir(d);
	return any;
}

/* HOST:PORT of endpoint when it names no transport ("auto:" or none), else NULL. */
static const char *auto_hostport(const char *endpoint)
{
	if (!strncmp(endpoint, "auto:", 5))
		return endpoint + 5;
	static const char *const schemes[] = { "tcp:", "tls:", "udp:", "rdma:" };
	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
		if (!strncmp(endpoint, schemes[i], strlen(schemes[i])))
			return NULL;
	const char *colon = strrchr(endpoint, ':');
	if (!colon || colon == endpoint || !colon[1])
		return NULL;
	for (const char *q = colon + 1; *q; q++)
		if (*q < '0' || *q > '9')
			return NULL;           /* not HOST:PORT: the usual message follows */
	return endpoint;
}

static int pick_transport(const char *hostport, const struct arc_opts *opts, char *chosen,
                          size_t cap, char *note, size_t notecap)
{
	static const char *const order[] = { "rdma", "tcp", "udp" };
	size_t k = 0;
	note[0] = '\0';
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		char ep[300], why[200];
		snprintf(ep, sizeof ep, "%s:%s", order[i], hostport);
		if (i == 0 && !rdma_device_here()) {
			snprintf(why, sizeof why, "no RDMA device here");
		} else {
			struct arc_opts po = opts ? *opts : (struct arc_opts){ 0 };
			po.timeout_ms = AUTO_PROBE_MS;
			po.outage_ms = -1;
			po.wait_first = 0;
			char err[300];
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			struct arc *p = connect_scheme(ep, &po, err, sizeof err, NULL);
			int rc = -AR_ENET;
			if (p) {
				struct arc_region *r = NULL;
				unsigned n = 0;
				rc = arc_regions(p, &r, &n);
				free(r);
				snprintf(err, sizeof err, "%.250s", rc ? arc_errmsg(p) : "");
				arc_close(p);
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
			double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			            (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
			if (rc != -AR_ENET && rc != -AR_ETIMEDOUT) {
				snprintf(chosen, cap, "%s", ep);
				k += (size_t)snprintf(note + k, k < notecap ? notecap - k : 0,
				                      "%s%s: answered in %.2f ms", k ? "; " : "", order[i], ms);
				return 0;
			}
			snprintf(why, sizeof why, "%.190s", err[0] ? err : "no answer");
		}
		k += (size_t)snprintf(note + k, k < notecap ? notecap - k : 0, "%s%s: %s",
		                      k ? "; " : "", order[i], why);
		if (k >= notecap)
			k = notecap - 1;
	}
	return -1;
}

struct arc *arc_connect(const char *endpoint, const struct arc_opts *opts, char *err,
                        size_t errlen)
{
	const char *hostport = auto_hostport(endpoint);
	if (!hostport) {
		struct arc *a = connect_scheme(endpoint, opts, err, errlen, NULL);
		if (a)
			snprintf(a->endpoint, sizeof a->endpoint, "%s", endpoint);
		return a;
	}
	char chosen[300], note[sizeof ((struct arc *)0)->transport_note - sizeof "auto: " + 1];   /* "auto: " + note fits the arc's */
	if (pick_transport(hostport, opts, chosen, sizeof chosen, note, sizeof note) != 0) {
		snprintf(err, errlen, "%s: no transport reached the server (%s)", endpoint, note);
		return NULL;
	}
	/* rdma chosen: should it fail mid-session (a device error), the session goes on over
	 * tcp to the same server (docs/net.md, "Choosing the transport") */
	char fallback[300];
	snprintf(fallback, sizeof fallback, "tcp:%s", hostport);
	struct arc *a = connect_scheme(chosen, opts, err, errlen,
	                               !strncmp(chosen, "rdma:", 5) ? fallback : NULL);
	if (a) {
		snprintf(a->endpoint, sizeof a->endpoint, "%s", chosen);
		snprintf(a->transport_note, sizeof a->transport_note, "auto: %s", note);
		if (a->fallback)
			snprintf(a->transport_note + strlen(a->transport_note),
			         sizeof a->transport_note - strlen(a->transport_note),
			         "; tcp if rdma fails");
	}
	return a;
}

/* The session moved from rdma to its fallback: the endpoint names where it is now, the
 * note says why, and regions are no longer accessed one-sided. */
static void note_move(struct arc *a)
{
	pn_peer via;
	char why[300];
	if (!a->fallback || atomic_load(&a->moved) ||
	    pn_session_moved(a->pn, a->server, &via, why, sizeof why) != 1)
		return;
	const char *name = pn_peer_name(a->pn, via);
	pthread_mutex_lock(&a->lock);
	if (!atomic_load(&a->moved)) {
		snprintf(a->endpoint, sizeof a->endpoint, "%s", name);
		size_t k = strlen(a->transport_note);
		snprintf(a->transport_note + k, sizeof a->transport_note - k, "; mid-session: %s",
		         why);
		atomic_store(&a->moved, 1);
	}
	pthread_mutex_unlock(&a->lock);
}

const char *arc_endpoint(struct arc *a)
{
	note_move(a);
	return a->endpoint;
}

const char *arc_transport_note(struct arc *a)
{
	note_move(a);
	return a->transport_note;
}

/* fallback: NULL, or where the session goes should endpoint's transport fail (this client
 * then listens on its scheme too: a Paradis-Net endpoint reaches only the schemes it has) */
static struct arc *connect_scheme(const char *endpoint, const struct arc_opts *opts, char *err,
                                  size_t errlen, const char *fallback)
{
	struct arc *a = calloc(1, sizeof *a);
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&a->lock, NULL);
	a->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 30000;
	a->compress = compress_policy();
	/* the admin secret, when given, is the one this client proves (or sends) */
	const char *secret = opts && opts->admin_secret ? opts->admin_secret :
	                     opts ? opts->secret : NULL;
	bool admin = opts && opts->admin_secret;
	if (secret)
		snprintf(a->secret, sizeof a->secret, "%s", secret);
	char self[96];
	const char *colon = strchr(endpoint, ':');
	if (!colon || colon - endpoint > 8) {
		snprintf(err, errlen, "%s: expected tcp:HOST:PORT, tls:HOST:PORT or udp:HOST:PORT",
		         endpoint);
		free(a);
		return NULL;
	}
	char local[INET_ADDRSTRLEN];
	local_address_for(colon + 1, local, sizeof local);
	snprintf(self, sizeof self, "%.*s:%s:0", (int)(colon - endpoint), endpoint, local);
	char self2[96];
	const char *listen[2] = { opts && opts->listen ? opts->listen : self, self2 };
	unsigned n_listen = 1;
	const char *fcolon = fallback ? strchr(fallback, ':') : NULL;
	if (fcolon && !(opts && opts->listen) && !(opts && opts->outage_ms < 0)) {
		snprintf(self2, sizeof self2, "%.*s:%s:0", (int)(fcolon - fallback), fallback,
		         local);
		n_listen = 2;
	}
	struct pn_opts po = { .n_workers = 1, .max_msg = 1u << 30,
	                      .tls_ca = opts ? opts->tls_ca : NULL };
	if (proving_endpoint(endpoint) && a->secret[0]) {
		/* over tcp, tls and rdma the secret is proved when a connection opens, over udp
		 * before the first datagram to the server, and never sent (docs/net.md); the
		 * requests carry none */
		if (admin) {
			po.admin_secret = a->secret;
			po.admin_secret_len = strlen(a->secret);
		} else {
			po.secret = a->secret;
			po.secret_len = strlen(a->secret);
		}
	}
	char perr[256];
	a->pn = pn_init(listen, n_listen, &po, perr, sizeof perr);
	if (!a->pn) {
		snprintf(err, errlen, "%s", perr);
		free(a);
		return NULL;
	}
	if (po.secret || po.admin_secret)
		memset(a->secret, 0, sizeof a->secret);   /* pn_init kept its own copy */
	int rc = open_server(a, endpoint, opts);
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", endpoint, pn_strerror(rc));
		pn_finalize(a->pn);
		free(a);
		return NULL;
	}
	/* (without it the session rides rdma alone, as one named rdma: does) */
	if (n_listen == 2 && a->outage_ms > 0 &&
	    pn_session_fallback(a->pn, a->server, fallback) == 0)
		a->fallback = 1;
	return a;
}


struct arc *arc_connect_also(struct arc *base, const char *endpoint, const struct arc_opts *opts,
                             char *err, size_t errlen)
{
	/* one endpoint, one transport: a server without a scheme is reached over base's */
	char same[300];
	if (auto_hostport(endpoint)) {
		const char *bc = strchr(base->endpoint, ':');
		snprintf(same, sizeof same, "%.*s:%s", bc ? (int)(bc - base->endpoint) : 3,
		         bc ? base->endpoint : "tcp", auto_hostport(endpoint));
		endpoint = same;
	}
	if (!strchr(endpoint, ':')) {
		snprintf(err, errlen, "%s: expected tcp:HOST:PORT, tls:HOST:PORT or udp:HOST:PORT",
		         endpoint);
		return NULL;
	}
	struct arc *a = calloc(1, sizeof *a);
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&a->lock, NULL);
	a->pn = base->pn;
	a->shares_pn = 1;
	a->compress = base->compress;
	a->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 30000;
	/* the endpoint proves base's secret to each server (every transport); the requests
	 * carry it only where it does not */
	if (opts && opts->secret && !proving_endpoint(endpoint))
		snprintf(a->secret, sizeof a->secret, "%s", opts->secret);
	int rc = open_server(a, endpoint, opts);
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", endpoint, pn_strerror(rc));
		pthread_mutex_destroy(&a->lock);
		free(a);
		return NULL;
	}
	snprintf(a->endpoint, sizeof a->endpoint, "%s", endpoint);
	return a;
}

static void pending_link_locked(struct arc *a, struct arc_pending *p)
{
	p->prev = NULL;
	p->next = a->pending;
	if (p->next)
		p->next->prev = p;
	a->pending = p;
}

static void pending_free(struct arc_pending *p)
{
	free(p->d.buf);
	ar_buf_free(&p->req);
	free(p);
}

void arc_close(struct arc *a)
{
	if (!a)
		return;
	/* runs started and never waited for: end their Cooperations (at once: nobody will read
	 * the answers) and free them */
	for (struct arc_pending *p = a->pending, *next; p; p = next) {
		next = p->next;
		if (p->coop)
			pn_coop_end(a->pn, p->coop, 0);
		pending_free(p);
	}
	for (struct arc_pending *p = a->spare, *next; p; p = next) {
		next = p->next;
		pending_free(p);
	}
	if (!a->shares_pn)
		pn_finalize(a->pn);
	vm_free(a->local);
	free(a->onesided);
	for (unsigned i = 0; i < a->n_atomics; i++)
		free(a->atomics[i].seg);
	free(a->atomics);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static int net_err(struct arc *a, int pnrc)
{
	if (pnrc == -PN_ETIMEDOUT)
		return fail(a, -AR_ETIMEDOUT, "no reply from %s within %d ms",
		            pn_peer_name(a->pn, a->server), a->timeout_ms);
	if (pnrc == -PN_EOUTAGE)
		return fail(a, -AR_ETIMEDOUT, "%s: unreachable for %d ms (the outage limit): gave up "
		            "on the request", pn_peer_name(a->pn, a->server), a->outage_ms);
	if (pnrc == -PN_EUNCACHED)
		return fail(a, -AR_ENET, "%s: the connection broke before the reply came, and the "
		            "server did not keep it (too large): whether the request took effect is "
		            "unknown", pn_peer_name(a->pn, a->server));
	return fail(a, -AR_ENET, "%s: %s", pn_peer_name(a->pn, a->server), pn_strerror(pnrc));
}

/* A server that is shutting down answers requests it did not start with DRAINING: with a
 * session (the policy that we ride through outages), such a request is sent again after a
 * jittered back-off (50 ms doubling to 1 s) until the server, or its successor after a
 * restart, takes it, for up to the outage limit.  It never ran, so this is safe for any
 * request.  true: sent again now is right; false: report it. */
struct drain_wait { uint64_t start_ns; unsigned delay_ms; };

static bool drain_again(struct arc *a, struct drain_wait *w)
{
	if (a->outage_ms <= 0)
		return false;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (!w->start_ns) {
		w->start_ns = now;
		w->delay_ms = 50;
	}
	if (now - w->start_ns >= (uint64_t)a->outage_ms * 1000000u)
		return false;
	unsigned ms = w->delay_ms / 2 + (unsigned)(now % (w->delay_ms / 2 + 1));
	w->delay_ms = w->delay_ms * 2 > 1000 ? 1000 : w->delay_ms * 2;
	usleep(ms * 1000u);
	return true;
}

/* A server that gave its image to another (arfd_move) answers every request MOVED, not
 * started, naming the endpoint that serves it now.  The connection moves there: the server's
 * peer becomes that endpoint's (with a session of the same outage limit that rides from the
 * start: the new server may not listen yet, its connection is tried with the session's
 * back-off until it answers or the limit passes), and the caller sends the request again.
 * The message is the network's: only an endpoint of the transport in use is followed (the
 * endpoint this client made speaks only that one), and at most ARC_MAX_MOVES moves in a row
 * per request, so servers that send clients to each other (A to B to A) end in an error.
 * `was` is the peer the request went to: when another thread followed the move already,
 * this one only sends again.  0: send again to a->server; else the error (reported). */
#define ARC_MAX_MOVES 8

static int follow_move(struct arc *a, pn_peer was, const char *msg, unsigned *hops)
{
	char why[64];
	/* checked first: the message goes into ours only once it is a plain endpoint */
	if (ar_moved_target(msg, why, sizeof why) != 0)
		return fail(a, -AR_EPROTO, "%s: the server moved, to an endpoint that is not one "
		            "(%s)", pn_peer_name(a->pn, was), why);
	if (++*hops > ARC_MAX_MOVES)
		return fail(a, -AR_EMOVED, "%s: moved %d times in a row, last to %s: servers "
		            "that send their clients to each other?", pn_peer_name(a->pn, was),
		            ARC_MAX_MOVES, msg);
	pthread_mutex_lock(&a->lock);
	pn_peer now = a->server;
	pthread_mutex_unlock(&a->lock);
	if (now != was)
		return 0;                  /* another request followed it already */
	const char *cur = pn_peer_name(a->pn, was);
	const char *cs = strchr(cur, ':'), *ms = strchr(msg, ':');
	if (a->rdma || !cs || (size_t)(cs - cur) != (size_t)(ms - msg) ||
	    strncmp(cur, msg, (size_t)(cs - cur)) != 0)
		return fail(a, -AR_EMOVED, "%s moved to %s: another transport, or rdma: connect "
		            "there", cur, msg);
	if (!strcmp(cur, msg))
		return fail(a, -AR_EMOVED, "%s: moved to itself", cur);
	pn_peer np;
	int rc = pn_peer_get(a->pn, msg, &np);
	if (rc == 0 && a->outage_ms > 0 && session_endpoint(msg)) {
		struct pn_session_opts so = { .outage_ms = (unsigned)a->outage_ms };
		rc = pn_session_open(a->pn, np, &so);
	}
	if (rc != 0)
		return fail(a, -AR_ENET, "%s moved to %s: %s", cur, msg, pn_strerror(rc));
	pthread_mutex_lock(&a->lock);
	if (a->server == was) {
		a->server = np;
		a->n_moves++;
		snprintf(a->endpoint, sizeof a->endpoint, "%s", msg);
		a->transport_note[0] = '\0';
	}
	pthread_mutex_unlock(&a->lock);
	return 0;
}

unsigned arc_moves(struct arc *a)
{
	pthread_mutex_lock(&a->lock);
	unsigned n = a->n_moves;
	pthread_mutex_unlock(&a->lock);
	return n;
}

/* Send a request and wait for its reply; on success *rd reads the reply body and *reply is
 * the buffer behind it (free() it). */
static int roundtrip(struct arc *a, enum ar_type op, struct ar_buf *req, struct ar_rd *rd,
                     void **reply)
{
	*reply = NULL;
	if (req->failed)
		return fail(a, -AR_ENOMEM, "out of memory building the request");
	struct drain_wait dw = { 0 };
	unsigned hops = 0;
again:;
	pn_peer to = a->server;
	struct pn_rcv_desc d = { .type = AR_T_REPLY, .from = to };
	pn_coop c = pn_coop_start(a->pn, &d, 1);
	if (!c)
		return fail(a, -AR_ENOMEM, "cannot start a Cooperation");
	/* req outlives the Cooperation (no copy on a session); these ops may run twice */
	bool idem = op == AR_T_READ || op == AR_T_REGIONS || op == AR_T_STATS || op == AR_T_INSTALL;
	int rc = pn_send_ex(a->pn, to, op, c, req->p, req->len,
	                    PN_SEND_KEEP | (idem ? PN_SEND_IDEMPOTENT : 0));
	int rc2 = pn_coop_end(a->pn, c, a->timeout_ms);
	if (rc != 0 || rc2 != 0) {
		free(d.buf);
		return net_err(a, rc ? rc : rc2);
	}
	*reply = d.buf;
	*rd = ar_rd_over(d.buf, d.len);
	int status;
	char msg[AR_MAX_MSG + 1];
	if (ar_rep_parse(rd, &status, msg, sizeof msg) != 0) {
		free(d.buf);
		*reply = NULL;
		return fail(a, -AR_EPROTO, "malformed reply from %s", pn_peer_name(a->pn, a->server));
	}
	if (status == -AR_EDRAINING && drain_again(a, &dw)) {
		free(d.buf);
		*reply = NULL;
		goto again;
	}
	if (status == -AR_EMOVED) {
		free(d.buf);
		*reply = NULL;
		int mrc = follow_move(a, to, msg, &hops);
		if (mrc == 0)
			goto again;
		return mrc;
	}
	if (status != 0 && status != -AR_ETRAP) {
		free(d.buf);
		*reply = NULL;
		return fail(a, status, "%s", msg[0] ? msg : ar_strerror(status));
	}
	return status;
}

int arc_install(struct arc *a, const void *seg, size_t len, uint8_t id[AR_ID_LEN])
{
	struct ar_buf b = { 0 };
	ar_req_begin(&b, a->secret);
	ar_put_bytes(&b, seg, len);
	struct ar_rd r;
	void *rep;
	int rc = roundtrip(a, AR_T_INSTALL, &b, &r, &rep);
	ar_buf_free(&b);
	if (rc != 0)
		return rc;
	const uint8_t *p = ar_get_bytes(&r, AR_ID_LEN);
	if (p) {
		memcpy(id, p, AR_ID_LEN);
		id_remember(a, id);
	}
	free(rep);
	return p ? 0 : fail(a, -AR_EPROTO, "malformed INSTALL reply");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* How long a server's "your bytes reach me slowly" (AR_EXR_ARGS_SLOW) stands */
#define ARGS_SLOW_KEEP_NS 2000000000ull

/* How fast what we send reaches the server, when that is known to be slow (0: not known, or
 * fast): the kernel's delivery rate knows when we keep the link busy (an import's stream of
 * writes); the server's word, from how fast our last large requests arrived, when we do not
 * (one write at a time through a mount).  The slower of the two. */
static uint64_t send_rate(struct arc *a)
{
	uint64_t rate = 0, said = atomic_load(&a->args_slow_ns);
	bool limited;
	if (pn_link_rate(a->pn, a->server, &rate, &limited) != 0 || limited || rate >= AR_ZSTD_BELOW)
		rate = 0;
	if (said && mono_ns() - said < ARGS_SLOW_KEEP_NS) {
		uint64_t r = atomic_load(&a->args_rate);
		if (r && (!rate || r < rate))
			rate = r;
	}
	return rate;
}

/* How fast the server's output reaches us, when slow (pn_link_rx_rate: measured on its
 * large replies; 0: not known, or fast).  Then we ask it to pack what it sends where that
 * pays (AR_EXF_WANT_ZSTD with the rate): its own view of the link, the kernel's delivery
 * rate, sees nothing while it answers one request at a time. */
static uint64_t output_rate(struct arc *a)
{
	uint64_t rate;
	return pn_link_rx_rate(a->pn, a->server, &rate) == 0 && rate < AR_ZSTD_BELOW ? rate : 0;
}

/* A rate in bytes a second as the protocol's u32 of KiB a second (at least 1) */
static uint32_t rate_kib(uint64_t rate)
{
	return rate / 1024 >= UINT32_MAX ? UINT32_MAX : rate < 1024 ? 1 : (uint32_t)(rate / 1024);
}

static void exec_request(struct arc *a, struct ar_buf *b, const struct arc_exec *x, int inline_seg,
                         const uint8_t id[AR_ID_LEN])
{
	/* argument bytes packed when the server unpacks them and the link is slow (or always:
	 * ARC_COMPRESS=always); docs/protocol.md, "Compression" */
	void *packed = NULL;
	size_t plen = 0;
	uint64_t out_rate = a->compress == 0 ? output_rate(a) : 0;
	uint32_t xflags = a->compress < 0 ? 0 : AR_EXF_ACCEPT_ZSTD |
	                  (a->compress > 0 ? AR_EXF_WANT_ZSTD : 0) |
	                  (out_rate ? AR_EXF_WANT_ZSTD | AR_EXF_RATE : 0);
	if (a->compress >= 0 && x->argbytes_len >= AR_ZSTD_MIN && x->argbytes_len <= UINT32_MAX &&
	    atomic_load(&a->takes_zstd) && (a->compress > 0 || ar_zstd_pays(send_rate(a))) &&
	    ar_zstd_pack(x->argbytes, x->argbytes_len, &packed, &plen) == 0)
		xflags |= AR_EXF_ARGS_ZSTD;
	ar_req_begin(b, a->secret);
	ar_put8(b, (uint8_t)inline_seg);
	if (inline_seg) {
		ar_put32(b, (uint32_t)x->seg_len);
		ar_put_bytes(b, x->seg, x->seg_len);
	} else {
		ar_put_bytes(b, id, AR_ID_LEN);
	}
	ar_put_str16(b, x->entry ? x->entry : "main");
	ar_put8(b, (uint8_t)x->n_args);
	for (unsigned i = 0; i < x->n_args; i++)
		ar_put64(b, (uint64_t)x->args[i]);
	ar_put64(b, x->fuel);
	ar_put64(b, x->out_max ? x->out_max : 1u << 20);
	if (packed) {
		ar_put32(b, (uint32_t)plen);
		ar_put_bytes(b, packed, plen);
	} else {
		ar_put32(b, (uint32_t)x->argbytes_len);
		ar_put_bytes(b, x->argbytes, x->argbytes_len);
	}
	ar_put32(b, x->time_limit_ms);   /* servers before the limit ignore it */
	if (xflags) {
		ar_put32(b, xflags);          /* (servers before compression ignore them too) */
		if (packed)
			ar_put32(b, (uint32_t)x->argbytes_len);
		if (xflags & AR_EXF_RATE)
			ar_put32(b, rate_kib(out_rate));
	}
	free(packed);
}

static int exec_parse(struct arc *a, struct arc_exec *x, struct ar_rd *r, int status)
{
	x->value = (int64_t)ar_get64(r);
	x->fuel_used = ar_get64(r);
	x->trapped = ar_get8(r);
	if (x->trapped) {
		x->trap.kind = ar_get32(r);
		x->trap.code = ar_get32(r);
		x->trap.func = ar_get32(r);
		x->trap.pc = ar_get32(r);
		x->trap.line = ar_get32(r);
		ar_get_str16(r, x->trap.text, sizeof x->trap.text);
	}
	uint32_t n = ar_get32(r);
	const uint8_t *out = ar_get_bytes(r, n);
	/* the server's flags after the output (to a request that sent flags) */
	uint32_t rflags = ar_left(r) >= 4 ? ar_get32(r) : 0;
	uint32_t full = rflags & AR_EXR_OUT_ZSTD ? ar_get32(r) : n;
	uint32_t args_kib = rflags & AR_EXR_ARGS_SLOW ? ar_get32(r) : 0;
	uint64_t limit = x->out_max ? x->out_max : 1u << 20;
	if (r->failed || (status == -AR_ETRAP) != (x->trapped != 0) ||
	    ((rflags & AR_EXR_OUT_ZSTD) && full > limit))
		return fail(a, -AR_EPROTO, "malformed EXEC reply");
	if (rflags & AR_EXR_TAKES_ZSTD)
		atomic_store(&a->takes_zstd, 1);
	if (rflags & AR_EXR_ARGS_SLOW) {
		atomic_store(&a->args_rate, (uint64_t)args_kib * 1024);
		atomic_store(&a->args_slow_ns, mono_ns());
	}
	x->out = malloc(full ? full : 1);
	if (!x->out)
		return fail(a, -AR_ENOMEM, "out of memory for %u bytes of output", full);
	if (!(rflags & AR_EXR_OUT_ZSTD)) {
		memcpy(x->out, out, n);
	} else if (ar_zstd_unpack(out, n, x->out, full) != 0) {
		free(x->out);
		x->out = NULL;
		return fail(a, -AR_EPROTO, "malformed packed output in an EXEC reply");
	}
	x->out_len = full;
	if (x->trapped)
		return fail(a, -AR_ETRAP, "%s", x->trap.text);
	return 0;
}

int arc_exec_start(struct arc *a, struct arc_exec *x, struct arc_pending **out)
{
	*out = NULL;
	if (x->n_args > AR_MAX_ARGS || (x->n_args && !x->args) || !x->seg)
		return fail(a, -AR_EARGS, "bad arguments");
	uint8_t idbuf[AR_ID_LEN];
	const uint8_t *id = x->seg_id;
	if (!id) {
		isa_seg_id(x->seg, x->seg_len, idbuf);
		id = idbuf;
	}
	/* A spare record is taken and put in flight, and the id looked up, under one lock; a
	 * new one (none spare) is linked in a second time.  Either way it is in the list before
	 * its request is sent, with nothing to end yet (coop 0) and nothing to free but its
	 * buffers. */
	pthread_mutex_lock(&a->lock);
	struct arc_pending *p = a->spare;
	if (p) {
		a->spare = p->next;
		a->n_spare--;
		pending_link_locked(a, p);
	}
	bool known = id_known_locked(a, id);
	pthread_mutex_unlock(&a->lock);
	if (!p) {
		p = calloc(1, sizeof *p);
		if (!p)
			return fail(a, -AR_ENOMEM, "out of memory");
		pthread_mutex_lock(&a->lock);
		pending_link_locked(a, p);
		pthread_mutex_unlock(&a->lock);
	}
	p->x = x;
	x->out = NULL;
	x->out_len = 0;
	x->trapped = 0;
	p->sent_inline = !known;
	exec_request(a, &p->req, x, p->sent_inline, id);
	if (p->sent_inline)
		id_remember(a, id);
	p->to = a->server;
	p->d = (struct pn_rcv_desc){ .type = AR_T_REPLY,
	                             .from = x->delegated ? PN_ANY : p->to };
	p->coop = pn_coop_start(a->pn, &p->d, 1);
	/* p->req is freed after the Cooperation ended: no copy on a session */
	int rc = p->coop ? pn_send_ex(a->pn, p->to, AR_T_EXEC, p->coop, p->req.p, p->req.len,
	                              PN_SEND_KEEP) : -PN_ENOMEM;
	p->rc = rc;
	*out = p;
	return 0;
}

void arc_batch_begin(struct arc *a)
{
	pn_cork(a->pn);
}

void arc_batch_end(struct arc *a)
{
	pn_uncork(a->pn);
}

int arc_exec_wait(struct arc *a, struct arc_pending *p)
{
	struct arc_exec *x = p->x;
	struct drain_wait dw = { 0 };
	unsigned hops = 0;
	int rc;
	for (;;) {
		int wait_ms = a->timeout_ms;
		if (x->wait_ms && (wait_ms < 0 || x->wait_ms < (uint32_t)wait_ms))
			wait_ms = (int)(x->wait_ms > INT32_MAX ? INT32_MAX : x->wait_ms);
		rc = pn_coop_end(a->pn, p->coop, wait_ms);
		if (p->rc)
			rc = p->rc;
		struct ar_rd r = ar_rd_over(p->d.buf, p->d.len);
		int status = 0;
		char msg[AR_MAX_MSG + 1];
		msg[0] = '\0';                /* (a string: no need to clear all of it per reply) */
		bool again = false, inline_now = false;
		if (rc != 0) {
			rc = net_err(a, rc);
		} else if (ar_rep_parse(&r, &status, msg, sizeof msg) != 0) {
			rc = fail(a, -AR_EPROTO, "malformed reply");
		} else if (status == -AR_ENOSEG && !p->sent_inline && p->d.got_from == p->to) {
			/* the server does not have it (yet, or any more): send it along, once */
			again = inline_now = true;
		} else if (status == -AR_EDRAINING && drain_again(a, &dw)) {
			again = true;          /* it did not start it: again (to its successor) */
		} else if (status == -AR_EMOVED && p->d.got_from == p->to) {
			/* not started: again, to the server named (ids known here are not known
			 * there: send the segment inline, saving the round trip of ENOSEG).  A MOVED
			 * of a member a delegated run was handed to is the member's, and says
			 * nothing of where our server is: it is reported, below */
			rc = follow_move(a, p->to, msg, &hops);
			again = inline_now = rc == 0;
		} else if (status == -AR_EMOVED) {
			bool plain = ar_moved_target(msg, NULL, 0) == 0;
			rc = fail(a, status, "%s, the member the run was handed to, moved to %s: "
			          "not followed (a cluster's members are its description's)",
			          pn_peer_name(a->pn, p->d.got_from), plain ? msg : "(not an endpoint)");
		} else if (status != 0 && status != -AR_ETRAP) {
			rc = fail(a, status, "%s", msg[0] ? msg : ar_strerror(status));
		} else {
			rc = exec_parse(a, x, &r, status);
		}
		if (!again)
			break;
		free(p->d.buf);
		if (inline_now) {
			ar_buf_free(&p->req);
			exec_request(a, &p->req, x, 1, NULL);   /* inline: no id needed */
			p->sent_inline = 1;
		}
		p->to = a->server;
		p->d = (struct pn_rcv_desc){ .type = AR_T_REPLY,
		                             .from = x->delegated ? PN_ANY : p->to };
		p->coop = pn_coop_start(a->pn, &p->d, 1);
		p->rc = p->coop ? pn_send_ex(a->pn, p->to, AR_T_EXEC, p->coop, p->req.p,
		                             p->req.len, PN_SEND_KEEP) : -PN_ENOMEM;
	}
	/* the reply's buffer goes (x->out holds a copy); the request's stays with the record
	 * when it goes spare, unless large */
	free(p->d.buf);
	p->d.buf = NULL;
	if (p->req.cap > ARC_SPARE_BUF)
		ar_buf_free(&p->req);
	p->req.len = 0;
	p->req.failed = 0;
	p->coop = 0;
	p->x = NULL;
	pthread_mutex_lock(&a->lock);
	if (p->prev) p->prev->next = p->next; else a->pending = p->next;
	if (p->next) p->next->prev = p->prev;
	bool keep = a->n_spare < ARC_SPARE_MAX;
	if (keep) {
		p->prev = NULL;
		p->next = a->spare;
		a->spare = p;
		a->n_spare++;
	}
	pthread_mutex_unlock(&a->lock);
	if (!keep)
		pending_free(p);
	return rc;
}

void arc_net_counts(struct arc *a, uint64_t *msgs_sent, uint64_t *msgs_recv)
{
	struct pn_stats st;
	pn_stats_get(a->pn, &st);
	*msgs_sent = st.msgs_sent;
	*msgs_recv = st.msgs_recv;
}

char *arc_net_wait_stats(struct arc *a)
{
	struct pn_stats st;
	pn_stats_get(a->pn, &st);
	char *text = NULL;
	if (asprintf(&text, "waits_read %" PRIu64 "\nwaits_woken %" PRIu64 "\npolls_found %" PRIu64
	             "\npolls_wasted %" PRIu64 "\npolls_denied_load %" PRIu64
	             "\npolls_denied_resting %" PRIu64 "\npolls_denied_busy %" PRIu64
	             "\nspin_looks %" PRIu64 "\nspin_full_looks %" PRIu64 "\n", st.waits_read,
	             st.waits_woken, st.polls_found, st.polls_wasted, st.polls_denied_load,
	             st.polls_denied_resting, st.polls_denied_busy, st.spin_looks,
	             st.spin_full_looks) < 0)
		return NULL;
	return text;
}

int arc_exec(struct arc *a, struct arc_exec *x)
{
	struct arc_pending *p;
	int rc = arc_exec_start(a, x, &p);
	return rc ? rc : arc_exec_wait(a, p);
}

int arc_exec_many(struct arc *const *as, struct arc_exec *const *xs, int *rcs, unsigned n)
{
	if (n == 0)
		return 0;
	struct pn *pn = as[0]->pn;
	for (unsigned i = 0; i < n; i++) {
		struct arc_exec *x = xs[i];
		if (n > ARC_MANY_MAX || as[i]->pn != pn || x->n_args > AR_MAX_ARGS ||
		    (x->n_args && !x->args) || !x->seg) {
			int rc = fail(as[i], -AR_EARGS, n > ARC_MANY_MAX ? "more than %d runs at once" :
			              as[i]->pn != pn ? "runs on connections of different endpoints" :
			              "bad arguments", ARC_MANY_MAX);
			for (unsigned k = 0; k < n; k++)
				rcs[k] = rc;
			return rc;
		}
	}
	struct pn_rcv_desc d[ARC_MANY_MAX];
	struct ar_buf req[ARC_MANY_MAX];
	int sent[ARC_MANY_MAX];
	int timeout_ms = 0;
	memset(req, 0, n * sizeof req[0]);
	for (unsigned i = 0; i < n; i++) {
		struct arc *a = as[i];
		struct arc_exec *x = xs[i];
		x->out = NULL;
		x->out_len = 0;
		x->trapped = 0;
		uint8_t idbuf[AR_ID_LEN];
		const uint8_t *id = x->seg_id;
		if (!id) {
			isa_seg_id(x->seg, x->seg_len, idbuf);
			id = idbuf;
		}
		int inline_seg = !id_known(a, id);
		exec_request(a, &req[i], x, inline_seg, id);
		if (inline_seg)
			id_remember(a, id);
		/* the server read once: a move (follow_move) may change it meanwhile */
		d[i] = (struct pn_rcv_desc){ .type = AR_T_REPLY, .from = a->server };
		if (a->timeout_ms > timeout_ms)
			timeout_ms = a->timeout_ms;
	}
	/* one Cooperation, n descriptors: the requests leave together and one wait gathers
	 * every reply (or fails on the first timeout) */
	pn_coop c = pn_coop_start(pn, d, n);
	if (c) {
		pn_cork(pn);
		for (unsigned i = 0; i < n; i++)
			sent[i] = req[i].failed ? -PN_ENOMEM
			        : pn_send_ex(pn, d[i].from, AR_T_EXEC, c, req[i].p, req[i].len,
			                     PN_SEND_KEEP);
		pn_uncork(pn);
		pn_coop_end(pn, c, timeout_ms);
	}
	int first = 0;
	for (unsigned i = 0; i < n; i++) {
		struct arc *a = as[i];
		int rc;
		if (!c) {
			rc = fail(a, -AR_ENOMEM, "cannot start a Cooperation");
		} else if (sent[i] != 0) {
			rc = net_err(a, sent[i]);
		} else if (d[i].status != 0) {
			rc = net_err(a, d[i].status > 0 ? -PN_ETIMEDOUT : d[i].status);
		} else {
			struct ar_rd r = ar_rd_over(d[i].buf, d[i].len);
			int status = 0;
			char msg[AR_MAX_MSG + 1] = "";
			if (ar_rep_parse(&r, &status, msg, sizeof msg) != 0)
				rc = fail(a, -AR_EPROTO, "malformed reply");
			else if (status == -AR_ENOSEG || status == -AR_EDRAINING ||
			         status == -AR_EMOVED)
				rc = 1;        /* not run: this one again on its own (below) */
			else if (status != 0 && status != -AR_ETRAP)
				rc = fail(a, status, "%s", msg[0] ? msg : ar_strerror(status));
			else
				rc = exec_parse(a, xs[i], &r, status);
		}
		free(d[i].buf);
		ar_buf_free(&req[i]);
		/* the server lacked the segment, was draining or moved: arc_exec sends it inline,
		 * again after a back-off, or to the server named */
		if (rc == 1)
			rc = arc_exec(a, xs[i]);
		rcs[i] = rc;
		if (rc && !first)
			first = rc;
	}
	return first;
}

/* The one-sided handle of a region (rdma: only), or NULL: the caller then sends a request. */
static const struct arc_region *onesided(struct arc *a, const char *region)
{
	if (!a->rdma || atomic_load(&a->moved))
		return NULL;
	pthread_mutex_lock(&a->lock);
	int tried = a->onesided_tried;
	a->onesided_tried = 1;
	pthread_mutex_unlock(&a->lock);
	if (!tried) {
		struct arc_region *list;
		unsigned n;
		if (arc_regions(a, &list, &n) == 0) {
			pthread_mutex_lock(&a->lock);
			a->onesided = list;
			a->n_onesided = n;
			pthread_mutex_unlock(&a->lock);
		}
	}
	const struct arc_region *r = NULL;
	pthread_mutex_lock(&a->lock);
	for (unsigned i = 0; i < a->n_onesided && !r; i++)
		if (!strcmp(a->onesided[i].name, region) && a->onesided[i].handle_len == PN_MEM_HANDLE_LEN)
			r = &a->onesided[i];
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* A one-sided access's result as libarc reports it; 1 means "not possible: ask the server". */
static int onesided_rc(struct arc *a, int rc, const struct arc_region *r, uint64_t off,
                       uint32_t len, int write)
{
	if (rc == 0)
		return 0;
	if (rc == -PN_ENOTRANSPORT)
		return 1;
	if (a->fallback && rc != -PN_EINVAL && rc != -PN_EACCESS) {
		/* rdma failed: the request rides the session, which moves to tcp */
		note_move(a);
		return 1;
	}
	if (rc == -PN_EINVAL)
		return fail(a, -AR_EBOUNDS, "%s of %u bytes at %llu is outside region '%s' (%llu bytes)",
		            write ? "write" : "read", len, (unsigned long long)off, r->name,
		            (unsigned long long)r->size);
	if (rc == -PN_EACCESS)
		return fail(a, write ? -AR_EREADONLY : -AR_ENET, "region '%s': %s", r->name,
		            write ? "region is read-only" : pn_strerror(rc));
	return net_err(a, rc);
}

int arc_read(struct arc *a, const char *region, uint64_t off, void *buf, uint32_t len)
{
	const struct arc_region *os = onesided(a, region);
	if (os) {
		int rc = onesided_rc(a, pn_mem_read(a->pn, a->server, os->handle, off, buf, len), os,
		                     off, len, 0);
		if (rc != 1)
			return rc;
	}
	struct ar_buf b = { 0 };
	ar_req_begin(&b, a->secret);
	ar_put_str16(&b, region);
	ar_put64(&b, off);
	ar_put32(&b, len);
	struct ar_rd r;
	void *rep;
	int rc = roundtrip(a, AR_T_READ, &b, &r, &rep);
	ar_buf_free(&b);
	if (rc != 0)
		return rc;
	if (ar_left(&r) != len) {
		free(rep);
		return fail(a, -AR_EPROTO, "READ reply of %zu bytes, asked %u", ar_left(&r), len);
	}
	memcpy(buf, r.p, len);
	free(rep);
	return 0;
}

int arc_write(struct arc *a, const char *region, uint64_t off, const void *buf, uint32_t len)
{
	const struct arc_region *os = onesided(a, region);
	if (os) {
		int rc = onesided_rc(a, pn_mem_write(a->pn, a->server, os->handle, off, buf, len), os,
		                     off, len, 1);
		if (rc != 1)
			return rc;
	}
	struct ar_buf b = { 0 };
	ar_req_begin(&b, a->secret);
	ar_put_str16(&b, region);
	ar_put64(&b, off);
	ar_put32(&b, len);
	ar_put_bytes(&b, buf, len);
	struct ar_rd r;
	void *rep;
	int rc = roundtrip(a, AR_T_WRITE, &b, &r, &rep);
	ar_buf_free(&b);
	free(rep);
	return rc;
}

int arc_regions(struct arc *a, struct arc_region **out, unsigned *n)
{
	*out = NULL;
	*n = 0;
	struct ar_buf b = { 0 };
	ar_req_begin(&b, a->secret);
	struct ar_rd r;
	void *rep;
	int rc = roundtrip(a, AR_T_REGIONS, &b, &r, &rep);
	ar_buf_free(&b);
	if (rc != 0)
		return rc;
	uint32_t count = ar_get32(&r);
	if (count > ar_left(&r) / 12) {        /* each entry takes at least 12 bytes */
		free(rep);
		return fail(a, -AR_EPROTO, "malformed REGIONS reply");
	}
	struct arc_region *list = calloc(count ? count : 1, sizeof *list);
	for (uint32_t i = 0; list && i < count; i++) {
		ar_get_str16(&r, list[i].name, sizeof list[i].name);
		list[i].size = ar_get64(&r);
		list[i].access = ar_get8(&r);
		list[i].handle_len = ar_get8(&r);
		const uint8_t *h = ar_get_bytes(&r, list[i].handle_len);
		if (h && list[i].handle_len <= sizeof list[i].handle)
			memcpy(list[i].handle, h, list[i].handle_len);
		else
			r.failed = 1;
	}
	free(rep);
	if (!list || r.failed) {
		free(list);
		return fail(a, list ? -AR_EPROTO : -AR_ENOMEM, "malformed REGIONS reply");
	}
	*out = list;
	*n = count;
	return 0;
}

int arc_stats(struct arc *a, char **text)
{
	*text = NULL;
	struct ar_buf b = { 0 };
	ar_req_begin(&b, a->secret);
	struct ar_rd r;
	void *rep;
	int rc = roundtrip(a, AR_T_STATS, &b, &r, &rep);
	ar_buf_free(&b);
	if (rc != 0)
		return rc;
	size_t n = ar_left(&r);
	*text = malloc(n + 1);
	if (*text) {
		memcpy(*text, r.p, n);
		(*text)[n] = '\0';
	}
	free(rep);
	return *text ? 0 : fail(a, -AR_ENOMEM, "out of memory");
}

/* ---- local placement ---- */

/* The callbacks of the server's regions in the local VM: plain READ and WRITE requests. */
static int local_read(void *user, const char *region, uint64_t off, void *dst, uint64_t len,
                      char *err, size_t errlen)
{
	struct arc *a = user;
	for (uint64_t done = 0; done < len;) {
		uint32_t n = len - done > (1u << 30) ? 1u << 30 : (uint32_t)(len - done);
		if (arc_read(a, region, off + done, (uint8_t *)dst + done, n) != 0) {
			snprintf(err, errlen, "%s", arc_errmsg(a));
			return -1;
		}
		done += n;
	}
	return 0;
}

static int local_write(void *user, const char *region, uint64_t off, const void *src,
                       uint64_t len, char *err, size_t errlen)
{
	struct arc *a = user;
	for (uint64_t done = 0; done < len;) {
		uint32_t n = len - done > (1u << 30) ? 1u << 30 : (uint32_t)(len - done);
		if (arc_write(a, region, off + done, (const uint8_t *)src + done, n) != 0) {
			snprintf(err, errlen, "%s", arc_errmsg(a));
			return -1;
		}
		done += n;
	}
	return 0;
}

/* A segment doing one cas or fadd on `region` at the server, built once per region. */
static const struct atomic_seg *atomic_segment(struct arc *a, const char *region, char *err,
                                               size_t errlen)
{
	pthread_mutex_lock(&a->lock);
	for (unsigned i = 0; i < a->n_atomics; i++)
		if (!strcmp(a->atomics[i].region, region)) {
			pthread_mutex_unlock(&a->lock);
			return &a->atomics[i];
		}
	pthread_mutex_unlock(&a->lock);
	struct asm_builder *b = asm_builder_new();
	if (!b) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	int r = asm_region(b, region, ISA_ACC_RW);
	int f = asm_func_begin(b, "cas", 3, 3);    /* cas(off, expect, new) -> old */
	for (unsigned i = 0; i < 3; i++)
		asm_local(b, OP_LGET, i);
	asm_mem(b, OP_CAS, (unsigned)r);
	asm_op(b, OP_RET);
	asm_func_end(b);
	asm_export(b, "cas", f);
	f = asm_func_begin(b, "fadd", 2, 2);       /* fadd(off, delta) -> old */
	asm_local(b, OP_LGET, 0);
	asm_local(b, OP_LGET, 1);
	asm_mem(b, OP_FADD, (unsigned)r);
	asm_op(b, OP_RET);
	asm_func_end(b);
	asm_export(b, "fadd", f);
	struct atomic_seg as = { 0 };
	snprintf(as.region, sizeof as.region, "%s", region);
	int rc = asm_builder_finish(b, &as.seg, &as.len, err, errlen);
	asm_builder_free(b);
	if (rc != 0)
		return NULL;
	pthread_mutex_lock(&a->lock);
	struct atomic_seg *list = realloc(a->atomics, (a->n_atomics + 1) * sizeof *list);
	if (!list) {
		pthread_mutex_unlock(&a->lock);
		free(as.seg);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->atomics = list;
	list[a->n_atomics] = as;
	const struct atomic_seg *res = &list[a->n_atomics++];
	pthread_mutex_unlock(&a->lock);
	return res;
}

static int local_atomic(void *user, const char *region, int op, uint64_t off, uint64_t x,
                        uint64_t y, uint64_t *old, char *err, size_t errlen)
{
	struct arc *a = user;
	const struct atomic_seg *as = atomic_segment(a, region, err, errlen);
	if (!as)
		return -1;
	/* copy what is needed: the list may move when another region's segment is added */
	uint8_t *seg = malloc(as->len);
	size_t len = as->len;
	if (!seg) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(seg, as->seg, len);
	int64_t args[3] = { (int64_t)off, (int64_t)x, (int64_t)y };
	struct arc_exec e = { .seg = seg, .seg_len = len, .entry = op == OP_CAS ? "cas" : "fadd",
	                      .args = args, .n_args = op == OP_CAS ? 3 : 2, .out_max = 1 };
	int rc = arc_exec(a, &e);
	free(seg);
	free(e.out);
	if (rc != 0) {
		snprintf(err, errlen, "%s", arc_errmsg(a));
		return -1;
	}
	*old = (uint64_t)e.value;
	return 0;
}

static const struct vm_remote_ops local_ops = { local_read, local_write, local_atomic };

/* The local VM, with every region of the server bound as a remote region (made once). */
static struct vm *local_vm(struct arc *a)
{
	pthread_mutex_lock(&a->lock);
	struct vm *vm = a->local;
	pthread_mutex_unlock(&a->lock);
	if (vm)
		return vm;
	struct arc_region *list;
	unsigned n;
	if (arc_regions(a, &list, &n) != 0)
		return NULL;
	vm = vm_new();
	if (!vm) {
		free(list);
		fail(a, -AR_ENOMEM, "out of memory");
		return NULL;
	}
	vm_set_engine(vm, VM_ENGINE_INTERP);
	for (unsigned i = 0; i < n; i++) {
		int rc = vm_bind_remote_region(vm, list[i].name, list[i].size, list[i].access,
		                               &local_ops, a);
		if (rc != 0) {
			fail(a, -AR_EPROTO, "region %s from the server: %s", list[i].name, vm_strerror(rc));
			free(list);
			vm_free(vm);
			return NULL;
		}
	}
	free(list);
	pthread_mutex_lock(&a->lock);
	if (a->local) {                    /* another thread was quicker */
		vm_free(vm);
		vm = a->local;
	} else {
		a->local = vm;
	}
	pthread_mutex_unlock(&a->lock);
	return vm;
}

int arc_exec_local(struct arc *a, struct arc_exec *x)
{
	x->out = NULL;
	x->out_len = 0;
	x->trapped = 0;
	if (x->n_args > AR_MAX_ARGS || (x->n_args && !x->args) || !x->seg)
		return fail(a, -AR_EARGS, "bad arguments");
	struct vm *vm = local_vm(a);
	if (!vm)
		return -AR_ENET;
	char err[AR_MAX_MSG + 1];
	struct vm_prog *prog;
	if (vm_load(vm, x->seg, x->seg_len, &prog, err, sizeof err) != 0)
		return fail(a, -AR_ELOAD, "%s", err);
	const char *entry = x->entry ? x->entry : "main";
	unsigned want;
	int fi = vm_prog_entry(prog, entry, &want);
	int rc = 0;
	if (fi < 0)
		rc = fail(a, -AR_ENOENTRY, "no exported entry '%s'", entry);
	else if (want != x->n_args)
		rc = fail(a, -AR_EARGS, "entry '%s' takes %u arguments, %u given", entry, want, x->n_args);
	uint64_t out_max = x->out_max ? x->out_max : 1u << 20;
	if (rc == 0 && !(x->out = malloc(out_max ? out_max : 1)))
		rc = fail(a, -AR_ENOMEM, "out of memory for %llu bytes of output",
		          (unsigned long long)out_max);
	if (rc != 0) {
		vm_prog_free(prog);
		return rc;
	}
	struct vm_run_opts o = { .args = x->argbytes, .args_len = x->argbytes_len, .out = x->out,
	                         .out_cap = out_max, .fuel = x->fuel,
	                         .engine = VM_ENGINE_INTERP };
	if (x->time_limit_ms) {        /* the same limit as on the server, here */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		o.deadline_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
		                (uint64_t)x->time_limit_ms * 1000000u;
	}
	struct vm_result res;
	int vrc = vm_run(prog, (unsigned)fi, x->args, x->n_args, &o, &res);
	x->value = res.value;
	x->fuel_used = res.fuel_used;
	x->out_len = res.out_len;
	if (vrc == -VM_ETRAP) {
		x->trapped = 1;
		x->trap.kind = (uint32_t)res.trap.kind;
		x->trap.code = res.trap.code;
		x->trap.func = res.trap.func;
		x->trap.pc = res.trap.pc;
		x->trap.line = res.trap.line;
		vm_trap_str(prog, &res.trap, x->trap.text, sizeof x->trap.text);
		rc = fail(a, -AR_ETRAP, "%s", x->trap.text);
	} else if (vrc != 0) {
		rc = fail(a, -AR_EPROTO, "%s", vm_strerror(vrc));
	}
	vm_prog_free(prog);
	return rc;
}

void arc_keep_buffers(void)
{
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
}
