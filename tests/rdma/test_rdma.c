/* test_rdma.c: what is particular to the rdma: transport of Paradis-Net (needs an RDMA device;
 * tests/rdma/run.sh runs it in the rdma-vm guest, beside test_pn rdma for the common suite).
 *
 * Replies written straight into the requester's memory (delegation: the last peer writes into
 * the origin's buffer; scatter/gather twice over the same buffers, so the second round hits the
 * registration cache), the fallbacks to SENDs (no buffer, reply too large), a late reply after
 * a timeout (the handle is revoked: the buffer stays untouched, the replier logs the remote
 * access error), a peer process killed mid-request, one-sided READ/WRITE of exported regions
 * (bounds, rights, a revoked handle, tcp peers), a connection request without HELLO, and
 * 127.0.0.1.  Identity (docs/net.md): raw rdma_cm connections whose HELLO claims another
 * peer's address get none of its replies and make the endpoint connect nowhere; one that
 * promises a proof and does not give it is closed; the proofs of the cluster key, the secret
 * and the admin secret, right and wrong, in a table.  Every wait is bounded.  Prints
 * "N passed, N failed".
 *
 *   test_rdma [HOST]      (default: $RDMA_VM_IP)
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "pn.h"

static int passed, failed;
static const char *host;

#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

enum { T_BIG = 1, T_REPLY, T_FWD, T_SLOW, T_HANDLES, T_HANG };

/* log sink: keeps the last lines so tests can look for ibv_wc_status_str text */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[8192];

static void log_keep(void *arg, const char *msg)
{
	pthread_mutex_lock(&log_lock);
	size_t n = strlen(log_text);
	if (n + strlen(msg) + 2 >= sizeof log_text)
		n = 0;
	snprintf(log_text + n, sizeof log_text - n, "%s\n", msg);
	pthread_mutex_unlock(&log_lock);
	printf("  log: %s\n", msg);
}

static int log_has(const char *s)
{
	pthread_mutex_lock(&log_lock);
	int r = strstr(log_text, s) != NULL;
	pthread_mutex_unlock(&log_lock);
	return r;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* An endpoint with options o (the log sink and a 2 s connect timeout added). */
static struct pn *open_with(const char *scheme, struct pn_opts o)
{
	char name[64], err[256];
	snprintf(name, sizeof name, "%s:%s:0", scheme, host);
	const char *l[] = { name };
	o.log = log_keep;
	o.connect_timeout_ms = 2000;
	struct pn *pn = pn_init(l, 1, &o, err, sizeof err);
	if (!pn)
		printf("pn_init %s: %s\n", name, err);
	return pn;
}

static struct pn *open_ep(const char *scheme)
{
	return open_with(scheme, (struct pn_opts){ 0 });
}

static pn_peer peer_of(struct pn *from, struct pn *to)
{
	pn_peer p = PN_ANY;
	pn_peer_get(from, pn_self(to, "rdma"), &p);
	return p;
}

static uint8_t pat(size_t i, unsigned seed) { return (uint8_t)(i * 7 + (i >> 12) + seed); }

static int pattern_ok(const uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(i, seed))
			return 0;
	return 1;
}

/* big: reply with n bytes of a pattern; request = { n, seed, delay_ms } */
static void h_big(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                  size_t len, void *arg)
{
	uint64_t q[3] = { 0, 0, 0 };
	memcpy(q, msg, len < sizeof q ? len : sizeof q);
	if (q[2])
		usleep((useconds_t)q[2] * 1000);
	uint8_t *b = malloc(q[0] ? q[0] : 1);
	for (uint64_t i = 0; i < q[0]; i++)
		b[i] = pat(i, (unsigned)q[1]);
	pn_send(pn, from, T_REPLY, coop, b, q[0]);
	free(b);
}

static void h_fwd(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                  size_t len, void *arg)
{
	pn_peer next;
	if (pn_peer_get(pn, arg, &next) == 0)
		pn_forward(pn, next, T_FWD, msg, len);
}

static void h_hang(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                   size_t len, void *arg)
{
	sleep(30);
}

static int request(struct pn *pn, pn_peer to, pn_type type, const void *msg, size_t len,
                   void *buf, size_t cap, size_t *got, int timeout_ms)
{
	struct pn_rcv_desc d = { .buf = buf, .cap = cap, .type = T_REPLY, .from = PN_ANY };
	pn_coop c = pn_coop_start(pn, &d, 1);
	int rc = pn_send(pn, to, type, c, msg, len);
	int rc2 = pn_coop_end(pn, c, timeout_ms);
	if (got)
		*got = d.len;
	return rc ? rc : rc2;
}

/* Members of one cluster (their forwarded origins are believed: docs/net.md). */
static const char cluster_key[] = "test cluster key";

static void test_delegation_zero_copy(void)
{
	struct pn *p[4];
	for (int i = 0; i < 4; i++)
		p[i] = open_with("rdma", (struct pn_opts){ .cluster_key = cluster_key,
		                                           .cluster_key_len = sizeof cluster_key - 1 });
	if (!p[0] || !p[1] || !p[2] || !p[3]) {
		CHECK(0, "open");
		goto out;
	}
	char n2[64], n3[64];
	snprintf(n2, sizeof n2, "%s", pn_self(p[2], "rdma"));
	snprintf(n3, sizeof n3, "%s", pn_self(p[3], "rdma"));
	pn_set_handler(p[1], T_FWD, 0, h_fwd, n2);
	pn_set_handler(p[2], T_FWD, 0, h_fwd, n3);
	pn_set_handler(p[3], T_FWD, 0, h_big, NULL);
	size_t n = 256 * 1024, got = 0;
	uint8_t *buf = calloc(1, n);
	uint64_t q[3] = { n, 3, 0 };
	int rc = request(p[0], peer_of(p[0], p[1]), T_FWD, q, sizeof q, buf, n, &got, 10000);
	CHECK(rc == 0 && got == n && pattern_ok(buf, n, 3), "delegated 256 KiB reply: %d (%s) %zu", rc, pn_strerror(rc), got);
	struct pn_stats s0, s3;
	pn_stats_get(p[0], &s0);
	/* the writer counts its reply when the write's completion comes back, which may be
	 * after the origin already has the bytes: wait for it (bounded) */
	for (int i = 0; i < 200; i++) {
		pn_stats_get(p[3], &s3);
		if (s3.rdma_replies_out)
			break;
		usleep(10000);
	}
	CHECK(s0.rdma_replies_in == 1 && s3.rdma_replies_out == 1,
	      "the last peer wrote into the origin's buffer: in %llu out %llu",
	      (unsigned long long)s0.rdma_replies_in, (unsigned long long)s3.rdma_replies_out);
	uint64_t sent = 0;
	for (int i = 0; i < 4; i++) {
		struct pn_stats s;
		pn_stats_get(p[i], &s);
		sent += s.msgs_sent;
	}
	CHECK(sent == 4, "n+1 = 4 messages for 3 peers past the origin: %llu", (unsigned long long)sent);
	free(buf);
out:
	for (int i = 0; i < 4; i++)
		pn_finalize(p[i]);
}

static void test_scatter_zero_copy(void)
{
	enum { N = 4 };
	size_t n = 100 * 1000;
	struct pn *a = open_ep("rdma"), *s[N];
	int ok = a != NULL;
	for (int i = 0; i < N; i++) {
		s[i] = open_ep("rdma");
		ok = ok && s[i];
		if (s[i])
			pn_set_handler(s[i], T_BIG, 0, h_big, NULL);
	}
	uint8_t *buf = malloc(N * n);
	for (int round = 0; ok && round < 2; round++) {
		struct pn_rcv_desc d[N];
		memset(buf, 0, N * n);
		for (int i = 0; i < N; i++)
			d[i] = (struct pn_rcv_desc){ .buf = buf + i * n, .cap = n, .type = T_REPLY,
			                             .from = peer_of(a, s[i]) };
		pn_coop c = pn_coop_start(a, d, N);
		for (int i = 0; i < N; i++) {
			uint64_t q[3] = { n, (uint64_t)i, 0 };
			pn_send(a, peer_of(a, s[i]), T_BIG, c, q, sizeof q);
		}
		int rc = pn_coop_end(a, c, 10000), good = 1;
		for (int i = 0; i < N; i++)
			good = good && d[i].status == 0 && d[i].len == n && pattern_ok(d[i].buf, n, (unsigned)i);
		CHECK(rc == 0 && good, "scatter/gather round %d: 4 x 100 kB: rc %d good %d", round, rc, good);
	}
	if (ok) {
		struct pn_stats st;
		pn_stats_get(a, &st);
		CHECK(st.rdma_replies_in == 2 * N, "all %d replies written in place: %llu", 2 * N,
		      (unsigned long long)st.rdma_replies_in);
	} else {
		CHECK(0, "open");
	}
	free(buf);
	pn_finalize(a);
	for (int i = 0; i < N; i++)
		pn_finalize(s[i]);
}

static void test_fallbacks(void)
{
	struct pn *a = open_ep("rdma"), *b = open_ep("rdma");
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	pn_set_handler(b, T_BIG, 0, h_big, NULL);
	pn_peer pb = peer_of(a, b);
	/* the reply is larger than the advertised buffer: it comes as SENDs, truncated */
	size_t cap = 8192, got = 0;
	uint8_t *buf = malloc(cap);
	uint64_t q[3] = { 20000, 5, 0 };
	int rc = request(a, pb, T_BIG, q, sizeof q, buf, cap, &got, 5000);
	CHECK(rc == -PN_ETRUNC && got == cap && pattern_ok(buf, cap, 5), "reply over the handle's capacity: %d (%s) %zu", rc, pn_strerror(rc), got);
	/* no buffer: allocated by the library, the reply comes as SENDs */
	struct pn_rcv_desc d = { .type = T_REPLY, .from = PN_ANY };
	pn_coop c = pn_coop_start(a, &d, 1);
	q[0] = 50000;
	pn_send(a, pb, T_BIG, c, q, sizeof q);
	rc = pn_coop_end(a, c, 5000);
	CHECK(rc == 0 && d.len == 50000 && pattern_ok(d.buf, 50000, 5), "reply into an allocated buffer: %d", rc);
	free(d.buf);
	struct pn_stats st;
	pn_stats_get(a, &st);
	CHECK(st.rdma_replies_in == 0, "neither was written in place: %llu", (unsigned long long)st.rdma_replies_in);
	free(buf);
	pn_finalize(a);
	pn_finalize(b);
}

/* The Cooperation times out before the reply: its buffer must stay untouched afterwards. */
static void test_late_reply(void)
{
	struct pn *a = open_ep("rdma"), *b = open_ep("rdma");
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	pn_set_handler(b, T_BIG, 0, h_big, NULL);
	pn_peer pb = peer_of(a, b);
	size_t n = 64 * 1024;
	uint8_t *buf = malloc(n);
	memset(buf, 0xaa, n);
	uint64_t q[3] = { n, 9, 500 };
	int rc = request(a, pb, T_BIG, q, sizeof q, buf, n, NULL, 100);
	CHECK(rc == -PN_ETIMEDOUT, "late reply: the Cooperation times out: %d (%s)", rc, pn_strerror(rc));
	usleep(1500 * 1000);
	int clean = 1;
	for (size_t i = 0; i < n; i++)
		clean = clean && buf[i] == 0xaa;
	CHECK(clean, "the buffer given back is not written after pn_coop_end");
	CHECK(log_has("remote access error"), "the replier logged ibv_wc_status_str: 'remote access error'");
	/* and the next request goes through, on a new connection if the old one died */
	size_t got = 0;
	q[2] = 0;
	rc = request(a, pb, T_BIG, q, sizeof q, buf, n, &got, 5000);
	if (rc != 0)
		rc = request(a, pb, T_BIG, q, sizeof q, buf, n, &got, 5000);
	CHECK(rc == 0 && got == n && pattern_ok(buf, n, 9), "request after the late reply: %d (%s)", rc, pn_strerror(rc));
	free(buf);
	pn_finalize(a);
	pn_finalize(b);
}

/* A peer process dies mid-request: the Cooperation fails at once, not at its timeout. */
static void test_peer_death(void)
{
	int fds[2];
	if (pipe(fds) != 0) { CHECK(0, "pipe"); return; }
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		struct pn *s = open_ep("rdma");
		char name[64] = "";
		if (s) {
			pn_set_handler(s, T_HANG, 0, h_hang, NULL);
			snprintf(name, sizeof name, "%s", pn_self(s, "rdma"));
		}
		if (write(fds[1], name, sizeof name) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	char name[64] = "";
	ssize_t r = read(fds[0], name, sizeof name);
	close(fds[0]);
	struct pn *a = open_ep("rdma");
	pn_peer ps;
	if (r != sizeof name || !name[0] || !a || pn_peer_get(a, name, &ps) != 0) {
		CHECK(0, "child endpoint: '%s'", name);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pn_finalize(a);
		return;
	}
	char buf[64];
	struct pn_rcv_desc d = { .buf = buf, .cap = sizeof buf, .type = T_REPLY, .from = PN_ANY };
	pn_coop c = pn_coop_start(a, &d, 1);
	int rc = pn_send(a, ps, T_HANG, c, "?", 1);
	usleep(300 * 1000);
	kill(pid, SIGKILL);
	double t0 = now_s();
	int rc2 = pn_coop_end(a, c, 15000);
	double dt = now_s() - t0;
	waitpid(pid, NULL, 0);
	CHECK(rc == 0 && rc2 == -PN_EPEERDOWN && dt < 10, "killed peer: send %d, end %d (%s) after %.2f s",
	      rc, rc2, pn_strerror(rc2), dt);
	printf("  peer death noticed after %.2f s\n", dt);
	pn_finalize(a);
}

/* One-sided access: the server exports, sends handles in a reply, the client reads and writes. */
static uint8_t *region_rw, *region_ro;
enum { RW_LEN = 1 << 20, RO_LEN = 4096 };
static struct pn_mem *mem_rw, *mem_ro;
static uint8_t handles[2][PN_MEM_HANDLE_LEN];

static void h_handles(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                      size_t len, void *arg)
{
	pn_send(pn, from, T_REPLY, coop, handles, sizeof handles);
}

static void test_onesided(void)
{
	struct pn *srv = open_ep("rdma"), *cli = open_ep("rdma");
	if (!srv || !cli) { CHECK(0, "open"); pn_finalize(srv); pn_finalize(cli); return; }
	region_rw = malloc(RW_LEN);
	region_ro = malloc(RO_LEN);
	for (size_t i = 0; i < RW_LEN; i++)
		region_rw[i] = pat(i, 1);
	memset(region_ro, 'r', RO_LEN);
	int rc1 = pn_mem_export(srv, region_rw, RW_LEN, PN_MEM_READ | PN_MEM_WRITE, &mem_rw, handles[0]);
	int rc2 = pn_mem_export(srv, region_ro, RO_LEN, PN_MEM_READ, &mem_ro, handles[1]);
	CHECK(rc1 == 0 && rc2 == 0, "export: %d %d", rc1, rc2);
	pn_set_handler(srv, T_HANDLES, 0, h_handles, NULL);
	pn_peer ps = peer_of(cli, srv);
	uint8_t h[2][PN_MEM_HANDLE_LEN];
	size_t got = 0;
	int rc = request(cli, ps, T_HANDLES, "", 0, h, sizeof h, &got, 5000);
	CHECK(rc == 0 && got == sizeof h, "handles by message: %d", rc);
	struct pn_stats before, after;
	pn_stats_get(srv, &before);

	uint8_t small[100];
	rc = pn_mem_read(cli, ps, h[0], 5, small, sizeof small);
	int ok = rc == 0;
	for (size_t i = 0; ok && i < sizeof small; i++)
		ok = small[i] == pat(i + 5, 1);
	CHECK(ok, "read 100 bytes at offset 5: %d (%s)", rc, pn_strerror(rc));
	uint8_t *big = malloc(512 * 1024);
	rc = pn_mem_read(cli, ps, h[0], 4096, big, 512 * 1024);
	ok = rc == 0;
	for (size_t i = 0; ok && i < 512 * 1024; i++)
		ok = big[i] == pat(i + 4096, 1);
	CHECK(ok, "read 512 KiB: %d (%s)", rc, pn_strerror(rc));
	memset(small, 'w', sizeof small);
	rc = pn_mem_write(cli, ps, h[0], RW_LEN - sizeof small, small, sizeof small);
	CHECK(rc == 0 && !memcmp(region_rw + RW_LEN - sizeof small, small, sizeof small),
	      "write the last 100 bytes: %d (%s)", rc, pn_strerror(rc));
	memset(big, 'W', 512 * 1024);
	rc = pn_mem_write(cli, ps, h[0], 0, big, 512 * 1024);
	CHECK(rc == 0 && region_rw[0] == 'W' && region_rw[512 * 1024 - 1] == 'W' &&
	      region_rw[512 * 1024] == pat(512 * 1024, 1), "write 512 KiB: %d (%s)", rc, pn_strerror(rc));
	pn_stats_get(srv, &after);
	CHECK(after.msgs_recv == before.msgs_recv, "the server's CPU saw none of it (%llu messages)",
	      (unsigned long long)(after.msgs_recv - before.msgs_recv));
	struct pn_stats cs;
	pn_stats_get(cli, &cs);
	CHECK(cs.rdma_onesided == 4, "4 one-sided operations counted: %llu", (unsigned long long)cs.rdma_onesided);

	CHECK(pn_mem_read(cli, ps, h[0], RW_LEN - 10, small, 11) == -PN_EINVAL, "read past the end: EINVAL");
	CHECK(pn_mem_write(cli, ps, h[1], 0, small, 10) == -PN_EACCESS, "write to a read-only handle: EACCESS");
	rc = pn_mem_read(cli, ps, h[1], RO_LEN - 1, small, 1);
	CHECK(rc == 0 && small[0] == 'r', "read the last byte of the read-only region: %d", rc);

	/* revoked: the owner's adapter refuses, the reader gets EACCESS and a log line */
	pn_mem_unexport(srv, mem_rw);
	rc = pn_mem_read(cli, ps, h[0], 0, small, 10);
	CHECK(rc == -PN_EACCESS, "read through a revoked handle: %d (%s)", rc, pn_strerror(rc));
	rc = pn_mem_read(cli, ps, h[1], 0, small, 10);
	if (rc != 0)       /* the access error closed the connection; the next one is new */
		rc = pn_mem_read(cli, ps, h[1], 0, small, 10);
	CHECK(rc == 0 && small[0] == 'r', "the other region still reads: %d (%s)", rc, pn_strerror(rc));

	/* tcp peers: the caller falls back to asking by message */
	struct pn *t = open_ep("tcp");
	if (t) {
		pn_peer pt;
		pn_peer_get(cli, pn_self(t, "tcp"), &pt);
		CHECK(pn_mem_read(cli, pt, h[1], 0, small, 1) == -PN_ENOTRANSPORT, "tcp peer: ENOTRANSPORT");
		uint8_t hh[PN_MEM_HANDLE_LEN];
		struct pn_mem *m;
		CHECK(pn_mem_export(t, region_ro, RO_LEN, PN_MEM_READ, &m, hh) == -PN_ENOTRANSPORT,
		      "export on a tcp endpoint: ENOTRANSPORT");
		pn_finalize(t);
	}
	pn_mem_unexport(srv, mem_ro);
	free(big);
	pn_finalize(cli);
	pn_finalize(srv);
	free(region_rw);
	free(region_ro);
}

/* A connection request that is not from Paradis-Net: rejected, counted, and the endpoint
 * keeps serving. */
static void test_bad_hello(void)
{
	struct pn *a = open_ep("rdma"), *b = open_ep("rdma");
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	pn_set_handler(b, T_BIG, 0, h_big, NULL);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res = NULL;
	const char *self = pn_self(b, "rdma");
	const char *port = strrchr(self, ':') + 1;
	int rejected = 0;
	if (ch && rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0 &&
	    rdma_getaddrinfo(host, port, &hints, &res) == 0 &&
	    rdma_resolve_addr(id, NULL, res->ai_dst_addr, 2000) == 0) {
		struct rdma_cm_event *ev;
		int step = 0;
		while (rdma_get_cm_event(ch, &ev) == 0) {
			enum rdma_cm_event_type t = ev->event;
			rdma_ack_cm_event(ev);
			if (t == RDMA_CM_EVENT_ADDR_RESOLVED && step == 0) {
				rdma_resolve_route(id, 2000);
				step = 1;
			} else if (t == RDMA_CM_EVENT_ROUTE_RESOLVED && step == 1) {
				struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
					.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };
				char junk[8] = "junk";
				struct rdma_conn_param cp = { .private_data = junk, .private_data_len = sizeof junk,
				                              .retry_count = 1 };
				if (rdma_create_qp(id, NULL, &qa) || rdma_connect(id, &cp))
					break;
				step = 2;
			} else {
				rejected = t == RDMA_CM_EVENT_REJECTED;
				break;
			}
		}
	}
	CHECK(rejected, "connection request with junk private data rejected");
	if (res)
		rdma_freeaddrinfo(res);
	if (id) {
		if (id->qp)
			rdma_destroy_qp(id);
		rdma_destroy_id(id);
	}
	if (ch)
		rdma_destroy_event_channel(ch);
	struct pn_stats st;
	pn_stats_get(b, &st);
	CHECK(st.bad_frames == 1, "counted as a bad frame: %llu", (unsigned long long)st.bad_frames);
	uint8_t buf[16];
	size_t got = 0;
	uint64_t q[3] = { 16, 2, 0 };
	int rc = request(a, peer_of(a, b), T_BIG, q, sizeof q, buf, sizeof buf, &got, 5000);
	CHECK(rc == 0 && got == 16 && pattern_ok(buf, 16, 2), "still serving: %d", rc);
	pn_finalize(a);
	pn_finalize(b);
}

/* ---- identity: raw rdma_cm connections that speak the transport's wire format by hand ---- */

enum { RAW_DEPTH = 4, RAW_SLOT = 16 * 1024 };

/* A raw connection: RAW_DEPTH receive buffers, one send buffer and a credit word, in one
 * registration. */
struct raw {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;                  /* RAW_DEPTH receives, the send buffer, the credit word */
	bool up;
};

static int port_of(const char *name) { return atoi(strrchr(name, ':') + 1); }

/* The next connection event within ms (acknowledged), or -1. */
static int raw_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	if (poll(&p, 1, ms) != 1 || rdma_get_cm_event(ch, &ev) != 0)
		return -1;
	int t = ev->event;
	rdma_ack_cm_event(ev);
	return t;
}

static void raw_close(struct raw *r)
{
	if (r->id && r->up)
		rdma_disconnect(r->id);
	if (r->id && r->id->qp)
		rdma_destroy_qp(r->id);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	free(r->mem);
	memset(r, 0, sizeof *r);
}

/* Connect to host:port with a HELLO that claims host:claim_port and carries proof flags
 * `flags` (net/pn_rdma.c: 40 bytes, version 2).  true once established. */
static bool raw_connect(struct raw *r, int port, int claim_port, uint8_t flags)
{
	memset(r, 0, sizeof *r);
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res = NULL;
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	if (!(r->ch = rdma_create_event_channel()))
		return false;
	fcntl(r->ch->fd, F_SETFL, fcntl(r->ch->fd, F_GETFL) | O_NONBLOCK);
	if (rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP) || rdma_getaddrinfo(host, ps, &hints, &res))
		return false;
	int ok = rdma_resolve_addr(r->id, NULL, res->ai_dst_addr, 2000) == 0 &&
	         raw_event(r->ch, 3000) == RDMA_CM_EVENT_ADDR_RESOLVED &&
	         rdma_resolve_route(r->id, 2000) == 0 &&
	         raw_event(r->ch, 3000) == RDMA_CM_EVENT_ROUTE_RESOLVED;
	rdma_freeaddrinfo(res);
	if (!ok)
		return false;
	size_t len = (RAW_DEPTH + 1) * RAW_SLOT + 64;
	if (!(r->pd = ibv_alloc_pd(r->id->verbs)) || !(r->cq = ibv_create_cq(r->id->verbs, 16, NULL, NULL, 0)) ||
	    !(r->mem = aligned_alloc(4096, len)))
		return false;
	memset(r->mem, 0, len);
	if (!(r->mr = ibv_reg_mr(r->pd, r->mem, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)))
		return false;
	struct ibv_qp_init_attr qa = { .send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = RAW_DEPTH, .max_send_sge = 1, .max_recv_sge = 1 } };
	if (rdma_create_qp(r->id, r->pd, &qa))
		return false;
	for (unsigned i = 0; i < RAW_DEPTH; i++) {
		struct ibv_sge sge = { (uintptr_t)(r->mem + i * RAW_SLOT), RAW_SLOT, r->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;
		if (ibv_post_recv(r->id->qp, &wr, &bad))
			return false;
	}
	uint8_t hello[40] = { 0x50, 0x52, 2, flags, RAW_DEPTH, 0 };
	uint32_t rkey = r->mr->rkey;
	uint64_t credit = (uintptr_t)(r->mem + (RAW_DEPTH + 1) * RAW_SLOT);
	memcpy(hello + 8, &rkey, 4);               /* little-endian host */
	memcpy(hello + 12, &credit, 8);
	hello[20] = 3;                             /* rdma, IPv4 */
	hello[21] = 4;
	hello[22] = (uint8_t)(claim_port >> 8);
	hello[23] = (uint8_t)claim_port;
	inet_pton(AF_INET, host, hello + 24);
	struct rdma_conn_param cp = { .private_data = hello, .private_data_len = sizeof hello,
	                              .retry_count = 7, .rnr_retry_count = 3 };
	if (rdma_connect(r->id, &cp) || raw_event(r->ch, 3000) != RDMA_CM_EVENT_ESTABLISHED)
		return false;
	r->up = true;
	return true;
}

/* Send one frame as a single SEND: kind, type, coop, origin host:origin_port, payload. */
/* The first fragment of a message of claimed bytes, whose first len bytes are payload (the
 * rest: raw_send_more). */
static bool raw_send_part(struct raw *r, int kind, int type, uint64_t coop, int origin_port,
                          uint32_t claimed, const void *payload, uint32_t len);

static bool raw_send(struct raw *r, int kind, int type, uint64_t coop, int origin_port,
                     const void *payload, uint32_t len)
{
	return raw_send_part(r, kind, type, coop, origin_port, len, payload, len);
}

static bool raw_send_part(struct raw *r, int kind, int type, uint64_t coop, int origin_port,
                          uint32_t claimed, const void *payload, uint32_t len)
{
	uint8_t *p = r->mem + RAW_DEPTH * RAW_SLOT;
	memset(p, 0, 8 + 40);
	p[0] = 1;                                  /* sub-header: FIRST */
	uint8_t *h = p + 8;
	h[0] = 0x50; h[1] = 0x4e; h[2] = 1; h[3] = (uint8_t)kind;
	h[4] = (uint8_t)type;
	memcpy(h + 8, &claimed, 4);
	memcpy(h + 12, &coop, 8);
	h[20] = 3; h[21] = 4;
	h[22] = (uint8_t)(origin_port >> 8); h[23] = (uint8_t)origin_port;
	inet_pton(AF_INET, host, h + 24);
	memcpy(p + 48, payload, len);
	struct ibv_sge sge = { (uintptr_t)p, 48 + len, r->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 100, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
	                          .send_flags = IBV_SEND_SIGNALED }, *bad;
	return ibv_post_send(r->id->qp, &wr, &bad) == 0;   /* raw_recv skips its completion */
}

/* The next fragment of a message raw_send began: len bytes of payload.  Waits (bounded) for
 * the send buffer's completion first, since every send goes out of the same buffer; receive
 * completions met meanwhile are dropped. */
static bool raw_send_more(struct raw *r, const void *payload, uint32_t len)
{
	for (int k = 0; k < 2000; k++) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(r->cq, 1, &wc);
		if (n < 0)
			return false;
		if (n == 1 && wc.wr_id == 100)
			break;
		if (n == 0)
			usleep(1000);
	}
	uint8_t *p = r->mem + RAW_DEPTH * RAW_SLOT;
	memset(p, 0, 8);
	p[0] = 2;                                  /* sub-header: MORE */
	memcpy(p + 8, payload, len);
	struct ibv_sge sge = { (uintptr_t)p, 8 + len, r->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 100, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
	                          .send_flags = IBV_SEND_SIGNALED }, *bad;
	return ibv_post_send(r->id->qp, &wr, &bad) == 0;
}

/* The first receive within ms: its bytes in *msg (in r->mem), its length; -1: none; -2: the
 * connection failed (a flush: the peer closed it). */
static long raw_recv(struct raw *r, int ms, const uint8_t **msg)
{
	double end = now_s() + ms / 1e3;
	do {
		struct ibv_wc wc;
		int n = ibv_poll_cq(r->cq, 1, &wc);
		if (n == 1 && wc.wr_id == 100 && wc.status == IBV_WC_SUCCESS)
			continue;                          /* our send */
		if (n == 1 && wc.status != IBV_WC_SUCCESS)
			return -2;
		if (n == 1) {
			*msg = r->mem + wc.wr_id * RAW_SLOT;
			return wc.byte_len;
		}
		usleep(1000);
	} while (now_s() < end);
	return -1;
}

/* A connection whose HELLO claims a's address gets none of a's replies, and a gets them all;
 * one claiming a port where a plain listener waits is answered on its own connection, and
 * when it has gone before its (slow) reply, nothing connects to that port. */
static void test_claims(void)
{
	struct pn *a = open_ep("rdma"), *b = open_ep("rdma");
	struct rdma_event_channel *lch = rdma_create_event_channel();
	struct rdma_cm_id *lid = NULL;
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP }, *res = NULL;
	int lport = 0;
	if (lch && rdma_create_id(lch, &lid, NULL, RDMA_PS_TCP) == 0 &&
	    rdma_getaddrinfo(host, "0", &hints, &res) == 0 && rdma_bind_addr(lid, res->ai_src_addr) == 0 &&
	    rdma_listen(lid, 4) == 0) {
		fcntl(lch->fd, F_SETFL, fcntl(lch->fd, F_GETFL) | O_NONBLOCK);
		lport = ntohs(rdma_get_src_port(lid));
	}
	if (res)
		rdma_freeaddrinfo(res);
	if (!a || !b || !lport) {
		CHECK(0, "open (listener port %d)", lport);
		goto out;
	}
	pn_set_handler(b, T_BIG, 0, h_big, NULL);
	int bport = port_of(pn_self(b, "rdma")), aport = port_of(pn_self(a, "rdma"));

	/* the hijacker claims a's address first */
	struct raw hj;
	CHECK(raw_connect(&hj, bport, aport, 0), "hijacker connects");
	int ok = 0;
	for (int i = 0; i < 5; i++) {
		uint64_t q[3] = { 8, (uint64_t)i, 0 };
		uint8_t buf[8];
		size_t got = 0;
		ok += request(a, peer_of(a, b), T_BIG, q, sizeof q, buf, sizeof buf, &got, 2000) == 0 &&
		      got == 8 && pattern_ok(buf, 8, (unsigned)i);
	}
	const uint8_t *m;
	long stolen = raw_recv(&hj, 300, &m);
	CHECK(ok == 5 && stolen == -1, "hijack: the victim got %d of 5 replies, the hijacker %ld bytes",
	      ok, stolen);
	raw_close(&hj);

	/* the redirect: a HELLO claiming the listener's port, then a request */
	struct raw rd;
	uint64_t q[3] = { 5, 3, 0 };
	bool sent = raw_connect(&rd, bport, lport, 0) && raw_send(&rd, 1, T_BIG, 0x1234, lport, q, sizeof q);
	long n = sent ? raw_recv(&rd, 3000, &m) : -1;
	uint64_t coop = 0;
	if (n == 8 + 40 + 5)
		memcpy(&coop, m + 8 + 12, 8);
	CHECK(n == 8 + 40 + 5 && m[8 + 3] == 1 && m[8 + 4] == T_REPLY && coop == 0x1234 &&
	      pattern_ok(m + 48, 5, 3), "redirect: the requester got its reply on its own connection "
	      "(%ld bytes)", n);
	raw_close(&rd);
	/* the same, gone before the reply: nothing to answer on, and no connection to the port */
	uint64_t slow[3] = { 5, 3, 300 };
	sent = raw_connect(&rd, bport, lport, 0) && raw_send(&rd, 1, T_BIG, 0x1235, lport, slow, sizeof slow);
	usleep(20000);
	raw_close(&rd);
	int ev = raw_event(lch, 1500);
	CHECK(sent && ev == -1, "redirect: nobody connected to the claimed address (event %d)", ev);
out:
	if (lid)
		rdma_destroy_id(lid);
	if (lch)
		rdma_destroy_event_channel(lch);
	pn_finalize(a);
	pn_finalize(b);
}

static void h_count(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                    size_t len, void *arg)
{
	atomic_fetch_add((_Atomic int *)arg, 1);
}

/* A connection whose HELLO promises a proof it does not give (nothing, or a request instead
 * of its HELLO frame) is closed, by preauth_timeout_ms at the latest, and nothing it sent is
 * delivered. */
static void test_unproven(void)
{
	static const struct { const char *what; bool request; } cases[] = {
		{ "a proof promised, nothing sent", false },
		{ "a proof promised, a request sent instead", true },
	};
	struct pn *b = open_with("rdma", (struct pn_opts){ .preauth_timeout_ms = 300 });
	if (!b) { CHECK(0, "open"); return; }
	_Atomic int calls = 0;
	pn_set_handler(b, T_SLOW, 0, h_count, &calls);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct raw r;
		bool up = raw_connect(&r, port_of(pn_self(b, "rdma")), 1, 0x02);   /* PROVE */
		uint64_t q = 1;
		if (up && cases[i].request)
			raw_send(&r, 1, T_SLOW, 0x99, 1, &q, sizeof q);
		double t0 = now_s();
		int ev = -1;
		/* (bounded generously: the emulated guest of check-rdma is slow) */
		for (int k = 0; k < 100 && ev != RDMA_CM_EVENT_DISCONNECTED; k++)
			ev = raw_event(r.ch, 100);
		CHECK(up && ev == RDMA_CM_EVENT_DISCONNECTED && now_s() - t0 < 9 && calls == 0,
		      "%s: closed (up %d, event %d after %.1f s), handler ran %d", cases[i].what, up,
		      ev, now_s() - t0, (int)calls);
		r.up = false;
		raw_close(&r);
	}
	pn_finalize(b);
}

/* admission: a message starting "ok" admits its connection */
static int admit_ok(void *arg, pn_peer from, pn_type type, const void *head, size_t n,
                    uint64_t len)
{
	return n >= 2 && !memcmp(head, "ok", 2);
}

/* refuse: answer "why" to the coop of a message refused before admission */
static void refuse_why(void *arg, pn_peer from, pn_type type, pn_coop coop, const void *head,
                       size_t n)
{
	pn_send(*(struct pn **)arg, from, T_REPLY, coop, "why", 3);
}

/* The first event on r within ms: DISCONNECTED ends it early.  (Bounded generously: the
 * emulated guest of check-rdma is slow.) */
static int wait_disconnect(struct raw *r, int ms)
{
	int ev = -1;
	for (int k = 0; k < ms / 100 && ev != RDMA_CM_EVENT_DISCONNECTED; k++)
		ev = raw_event(r->ch, 100);
	if (ev == RDMA_CM_EVENT_DISCONNECTED)
		r->up = false;
	return ev;
}

/* An inbound connection that proves nothing and is not admitted (pn_opts.admit) within
 * preauth_timeout_ms is closed, and so is one that sends a message over preauth_max before
 * it is admitted (nothing delivered); one admitted by its first message stays, and may then
 * send more. */
static void test_admission(void)
{
	static struct pn *self;
	struct pn *b = open_with("rdma", (struct pn_opts){ .admit = admit_ok, .preauth_max = 1000,
	                                                   .preauth_timeout_ms = 300,
	                                                   .refuse = refuse_why, .admit_arg = &self });
	self = b;
	if (!b) { CHECK(0, "open"); return; }
	_Atomic int calls = 0;
	pn_set_handler(b, T_SLOW, 0, h_count, &calls);
	int port = port_of(pn_self(b, "rdma"));
	static uint8_t big[2000];
	memcpy(big, "no", 2);
	struct raw idle, in, greedy;
	bool up1 = raw_connect(&idle, port, 1, 0), up2 = raw_connect(&in, port, 1, 0);
	bool up3 = raw_connect(&greedy, port, 1, 0);
	bool sent = up2 && raw_send(&in, 1, T_SLOW, 0x99, 1, "ok", 2);
	bool sent3 = up3 && raw_send(&greedy, 1, T_SLOW, 0x98, 1, big, sizeof big);
	double t0 = now_s();
	int ev = wait_disconnect(&idle, 3000);
	CHECK(up1 && ev == RDMA_CM_EVENT_DISCONNECTED && now_s() - t0 < 2.5,
	      "not admitted: closed (event %d after %.1f s)", ev, now_s() - t0);
	/* its answer (pn_opts.refuse) comes before the close */
	const uint8_t *why = NULL;
	long got = sent3 ? raw_recv(&greedy, 3000, &why) : -1;
	bool answered = got == 8 + 40 + 3 && !memcmp(why + 48, "why", 3) && why[8 + 12] == 0x98;
	ev = wait_disconnect(&greedy, 3000);
	CHECK(sent3 && answered && ev == RDMA_CM_EVENT_DISCONNECTED,
	      "2000 bytes before admission (preauth_max 1000): answered (%ld bytes) and closed "
	      "(event %d)", got, ev);
	memcpy(big, "ok", 2);
	bool more = sent && raw_send(&in, 1, T_SLOW, 0x9a, 1, big, sizeof big);
	ev = raw_event(in.ch, 1000);
	CHECK(sent && more && ev == -1 && calls == 2,
	      "admitted: 2000 bytes taken, still up after 1 s (event %d), handler ran %d of 2", ev,
	      (int)calls);
	raw_close(&idle);
	raw_close(&in);
	raw_close(&greedy);
	pn_finalize(b);
}

/* rx_budget: a message that does not fit waits, its fragments kept unprocessed (and their
 * buffers taken: the sender runs out of credit), until the message holding the budget is
 * done; then it is delivered whole.  Raw senders, so that the first message stays half-sent
 * for as long as the test wants. */
static void test_budget(void)
{
	/* two messages of 81,840 bytes (a first fragment and four more) over a 100,000-byte
	 * budget: one fits, not both */
	enum { FIRST = 16384 - 8 - 40, MORE = 16384 - 8, LEN = FIRST + 4 * MORE };
	struct pn *b = open_with("rdma", (struct pn_opts){ .rx_budget = 100000 });
	if (!b) { CHECK(0, "open"); return; }
	_Atomic int calls = 0;
	pn_set_handler(b, T_SLOW, 0, h_count, &calls);
	int port = port_of(pn_self(b, "rdma"));
	static uint8_t chunk[MORE];
	memset(chunk, 'b', sizeof chunk);
	struct raw holder, waiter;
	bool up1 = raw_connect(&holder, port, 1, 0), up2 = raw_connect(&waiter, port, 1, 0);
	/* holder: the first fragment only (it holds LEN bytes of the budget from now on) */
	bool sent = up1 && up2 && raw_send_part(&holder, 1, T_SLOW, 0x99, 1, LEN, chunk, FIRST);
	usleep(200000);
	sent = sent && raw_send_part(&waiter, 1, T_SLOW, 0x9a, 1, LEN, chunk, FIRST);
	for (int k = 0; k < 4 && sent; k++)
		sent = raw_send_more(&waiter, chunk, MORE);
	usleep(500000);
	struct pn_stats st;
	pn_stats_get(b, &st);
	int before = calls;
	CHECK(sent && before == 0 && st.rx_waits == 1,
	      "the second message waits for the budget (sent %d, delivered %d, waited %d)", sent,
	      before, (int)st.rx_waits);
	raw_close(&holder);                /* its half message is dropped, the budget freed */
	for (int k = 0; k < 50 && calls == 0; k++)
		usleep(100000);
	CHECK(calls == 1, "once the holder is gone the waiting message is delivered whole: %d",
	      (int)calls);
	raw_close(&waiter);
	pn_finalize(b);
}

/* idle_timeout_ms: an inbound connection silent that long is closed (the I/O thread looks
 * every second); one that keeps sending stays. */
static void test_idle(void)
{
	struct pn *b = open_with("rdma", (struct pn_opts){ .idle_timeout_ms = 1000 });
	if (!b) { CHECK(0, "open"); return; }
	_Atomic int calls = 0;
	pn_set_handler(b, T_SLOW, 0, h_count, &calls);
	int port = port_of(pn_self(b, "rdma"));
	struct raw quiet, busy;
	bool up1 = raw_connect(&quiet, port, 1, 0), up2 = raw_connect(&busy, port, 1, 0);
	double t0 = now_s();
	int sends = 0, ev = -1;
	/* busy sends every 300 ms while quiet waits for its close (at most 6 s) */
	while (up2 && ev != RDMA_CM_EVENT_DISCONNECTED && now_s() - t0 < 6) {
		sends += raw_send(&busy, 1, T_SLOW, 0x99, 1, "x", 1);
		ev = raw_event(quiet.ch, 300);
		struct ibv_wc wc[4];       /* its send completions: the send queue holds 4 */
		while (ibv_poll_cq(busy.cq, 4, wc) > 0)
			;
	}
	double quiet_s = now_s() - t0;
	CHECK(up1 && ev == RDMA_CM_EVENT_DISCONNECTED && quiet_s >= 0.9 && quiet_s < 4,
	      "silent: closed after %.1f s (event %d; idle_timeout_ms 1000)", quiet_s, ev);
	quiet.up = ev != RDMA_CM_EVENT_DISCONNECTED;
	ev = raw_event(busy.ch, 10);
	CHECK(up2 && sends >= 3 && ev == -1, "sending every 300 ms: still up after %.1f s (event %d)",
	      quiet_s, ev);
	raw_close(&quiet);
	raw_close(&busy);
	pn_finalize(b);
}

/* Inbound connections past max_conns, or max_conns_per_addr from one address, are rejected,
 * whatever they prove (each holds about 1 MiB of registered buffers), and a place given up
 * is taken again once the server has seen its connection go. */
static void test_conn_limits(void)
{
	static const struct { const char *what; unsigned total, per_addr, allowed; } cases[] = {
		{ "max_conns 3", 3, 0, 3 },
		{ "max_conns_per_addr 2", 0, 2, 2 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		unsigned n = cases[i].allowed;
		struct pn *b = open_with("rdma", (struct pn_opts){ .max_conns = cases[i].total,
		                                                   .max_conns_per_addr = cases[i].per_addr });
		if (!b) { CHECK(0, "open"); return; }
		int port = port_of(pn_self(b, "rdma"));
		struct raw r[4];
		unsigned up = 0;
		for (unsigned k = 0; k <= n; k++)
			up += raw_connect(&r[k], port, 1, 0);
		CHECK(up == n && !r[n].up, "%s: %u of %u connections up (want %u)", cases[i].what, up,
		      n + 1, n);
		raw_close(&r[n]);
		raw_close(&r[0]);
		bool again = false;
		for (int t = 0; t < 30 && !again; t++) {
			struct raw x;
			again = raw_connect(&x, port, 1, 0);
			raw_close(&x);
			if (!again)
				usleep(100000);
		}
		CHECK(again, "%s: a place given up is taken again", cases[i].what);
		for (unsigned k = 1; k < n; k++)
			raw_close(&r[k]);
		pn_finalize(b);
	}

	/* with admission (pn_opts.admit), a connection not let in yet gives up its place: at
	 * max_conns 2, the oldest pending one is closed for a new one; an admitted one stays */
	struct pn *b = open_with("rdma", (struct pn_opts){ .max_conns = 2, .admit = admit_ok,
	                                                   .preauth_timeout_ms = 10000 });
	if (!b) { CHECK(0, "open"); return; }
	_Atomic int calls = 0;
	pn_set_handler(b, T_SLOW, 0, h_count, &calls);
	int port = port_of(pn_self(b, "rdma"));
	struct raw old, in, late;
	bool up = raw_connect(&old, port, 1, 0) && raw_connect(&in, port, 1, 0) &&
	          raw_send(&in, 1, T_SLOW, 0x99, 1, "ok", 2);
	for (int k = 0; k < 30 && calls == 0; k++)
		usleep(100000);                /* in is admitted once its message is taken */
	bool late_up = up && raw_connect(&late, port, 1, 0);
	int ev = wait_disconnect(&old, 3000), ev_in = raw_event(in.ch, 300);
	CHECK(up && late_up && ev == RDMA_CM_EVENT_DISCONNECTED && ev_in == -1,
	      "at max_conns the oldest pending connection makes room (new one up %d, oldest's "
	      "event %d, admitted one's %d)", late_up, ev, ev_in);
	raw_close(&old);
	raw_close(&in);
	if (late_up)
		raw_close(&late);
	pn_finalize(b);
}

/* proof: reply the proof the sender's connection gave (a digit) and its name */
static void h_proof(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                    size_t len, void *arg)
{
	char out[80];
	int n = snprintf(out, sizeof out, "%d%s", (int)pn_peer_proof(pn, from), pn_peer_name(pn, from));
	pn_send(pn, from, T_REPLY, coop, out, (size_t)n);
}

/* What a server believes of a client, by the keys each holds: the proof (pn_peer_proof) and
 * whether the client is known by its own claimed address (only after the cluster key). */
static void test_proofs(void)
{
	static const char k1[] = "cluster key one", k2[] = "cluster key two";
	static const struct {
		const char *what;
		const char *s_key, *s_secret, *s_admin;     /* the server's */
		const char *c_key, *c_secret, *c_admin;     /* the client's */
		int rc;                                     /* of the request */
		enum pn_proof proof;
		bool named;                                 /* known by its claimed address */
	} cases[] = {
		{ "no keys", NULL, NULL, NULL, NULL, NULL, NULL, 0, PN_PROOF_NONE, false },
		{ "the secret", NULL, "hush", NULL, NULL, "hush", NULL, 0, PN_PROOF_SECRET, false },
		{ "the admin secret", NULL, "hush", "boss", NULL, NULL, "boss", 0, PN_PROOF_ADMIN, false },
		{ "the secret where there is an admin one", NULL, "hush", "boss", NULL, "hush", NULL, 0,
		  PN_PROOF_SECRET, false },
		{ "a wrong secret", NULL, "hush", NULL, NULL, "hash", NULL, 0, PN_PROOF_NONE, false },
		{ "no secret", NULL, "hush", NULL, NULL, NULL, NULL, 0, PN_PROOF_NONE, false },
		{ "the secret as admin secret", NULL, "hush", "boss", NULL, NULL, "hush", 0,
		  PN_PROOF_NONE, false },
		{ "an admin secret the server lacks", NULL, "hush", NULL, NULL, NULL, "boss", 0,
		  PN_PROOF_NONE, false },
		{ "the cluster key", k1, NULL, NULL, k1, NULL, NULL, 0, PN_PROOF_NONE, true },
		{ "another cluster key", k2, NULL, NULL, k1, NULL, NULL, -PN_EREFUSED, PN_PROOF_NONE, false },
		{ "a cluster key the server lacks", NULL, NULL, NULL, k1, NULL, NULL, 0, PN_PROOF_NONE, false },
		{ "no key for a member", k1, NULL, NULL, NULL, NULL, NULL, 0, PN_PROOF_NONE, false },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
#define KEY(field, s) .field = (s), .field##_len = (s) ? strlen(s) : 0
		struct pn *srv = open_with("rdma", (struct pn_opts){ KEY(cluster_key, cases[i].s_key),
			KEY(secret, cases[i].s_secret), KEY(admin_secret, cases[i].s_admin) });
		struct pn *cl = open_with("rdma", (struct pn_opts){ KEY(cluster_key, cases[i].c_key),
			KEY(secret, cases[i].c_secret), KEY(admin_secret, cases[i].c_admin) });
#undef KEY
		if (!srv || !cl) {
			CHECK(0, "%s: open", cases[i].what);
			pn_finalize(srv);
			pn_finalize(cl);
			continue;
		}
		pn_set_handler(srv, T_BIG, 0, h_proof, NULL);
		char buf[80] = "";
		size_t got = 0;
		int rc = request(cl, peer_of(cl, srv), T_BIG, "?", 1, buf, sizeof buf - 1, &got, 3000);
		buf[got] = '\0';
		bool named = got > 0 && !strcmp(buf + 1, pn_self(cl, "rdma"));
		CHECK(rc == cases[i].rc && (rc != 0 || (buf[0] == '0' + (int)cases[i].proof &&
		                                        named == cases[i].named)),
		      "%s: rc %d (want %d), the server saw \"%s\" (want proof %d, %s)", cases[i].what,
		      rc, cases[i].rc, buf, (int)cases[i].proof, cases[i].named ? "its address" :
		      "an anonymous peer");
		pn_finalize(cl);
		pn_finalize(srv);
	}
}

/* 127.0.0.1 is not an RDMA address for rdma_cm: a clear failure, at once or on the request. */
static void test_loopback(void)
{
	char err[256] = "";
	const char *l[] = { "rdma:127.0.0.1:0" };
	struct pn_opts o = { .log = log_keep, .connect_timeout_ms = 2000 };
	double t0 = now_s();
	struct pn *pn = pn_init(l, 1, &o, err, sizeof err);
	int rc = 0;
	if (pn) {
		pn_peer me;
		pn_peer_get(pn, pn_self(pn, "rdma"), &me);
		pn_set_handler(pn, T_BIG, 0, h_big, NULL);
		uint64_t q[3] = { 4, 0, 0 };
		uint8_t buf[4];
		rc = request(pn, me, T_BIG, q, sizeof q, buf, sizeof buf, NULL, 3000);
		pn_finalize(pn);
	}
	printf("  rdma:127.0.0.1: %s%s (request: %s)\n", pn ? "opened" : "refused: ", err, pn_strerror(rc));
	CHECK(now_s() - t0 < 10, "127.0.0.1: an answer within 10 s");
}

int main(int argc, char **argv)
{
	host = argc > 1 ? argv[1] : getenv("RDMA_VM_IP");
	if (!host) {
		printf("test_rdma: no address (argument or RDMA_VM_IP)\n0 passed, 1 failed\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* first, before this process opens any device: fork-based tests */
	static const struct { const char *name; void (*fn)(void); } tests[] = {
		{ "peer_death", test_peer_death },
		{ "delegation_zero_copy", test_delegation_zero_copy },
		{ "scatter_zero_copy", test_scatter_zero_copy },
		{ "fallbacks", test_fallbacks },
		{ "late_reply", test_late_reply },
		{ "onesided", test_onesided },
		{ "bad_hello", test_bad_hello },
		{ "claims", test_claims },
		{ "unproven", test_unproven },
		{ "conn_limits", test_conn_limits },
		{ "admission", test_admission },
		{ "idle", test_idle },
		{ "budget", test_budget },
		{ "proofs", test_proofs },
		{ "loopback", test_loopback },
	};
	for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
		double t0 = now_s();
		tests[i].fn();
		printf("rdma %s: %.1f ms\n", tests[i].name, (now_s() - t0) * 1e3);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
