/* test_arfd_rdma.c: arfd and libarc over rdma: (needs an RDMA device: tests/rdma/run.sh).
 *
 * An in-process arfd listens on rdma:HOST:0 with a rw and a ro region.  libarc's reads and
 * writes must go one-sided (the server counts no READ or WRITE request), give the same bytes
 * and the same errors as over tcp, and an EXEC and a local-placement run over rdma must see
 * what was written.  With --secret and --admin-secret, libarc proves the secret it has when
 * its connection opens (a table: rights of the secret, the admin secret, a wrong one, none),
 * and its requests carry no secret (a Paradis-Net endpoint in arfd's place looks).  Sessions
 * over rdma: an arfd whose transport closes the connection instead of every 3rd reply
 * (PN_RDMA_CUT_REPLIES) runs a counter segment exactly once per run; and a client of
 * HOST:PORT (libarc chose rdma) whose rdma fails mid-session (PN_RDMA_FAIL_AFTER) goes on
 * over tcp to the same arfd, its repeat answered from the same session.  Prints
 * "N passed, N failed".
 *   test_arfd_rdma HOST     the address of the RDMA netdev (not 127.0.0.1)
 *   test_arfd_rdma HOST --link-delete DEV
 *                           only this: the device DEV deleted (rdma link delete) while a
 *                           client of HOST:PORT loops; it stays deleted (the rdma-vm guest,
 *                           last)
 */
#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ar_proto.h"
#include "arc.h"
#include "asm.h"
#include "pn.h"
#include "server.h"

static int passed, failed;
#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

static uint64_t stat_of(struct arc *a, const char *name)
{
	char *text;
	uint64_t v = UINT64_MAX;
	if (arc_stats(a, &text) != 0) {
		printf("arc_stats: %s\n", arc_errmsg(a));
		return v;
	}
	size_t n = strlen(name);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (!strncmp(line, name, n) && line[n] == ' ')
			v = strtoull(line + n + 1, NULL, 10);
	free(text);
	return v;
}

/* arfd --secret hush --admin-secret boss over rdma: what each client may do. */
static void test_rights(const char *host)
{
	static struct arfd_config cfg;
	char ep[128], err[512];
	snprintf(ep, sizeof ep, "rdma:%s:0", host);
	arfd_config_line(&cfg, "listen", ep, err, sizeof err);
	arfd_config_line(&cfg, "region", "mem=4096:rw", err, sizeof err);
	arfd_config_line(&cfg, "secret", "hush", err, sizeof err);
	arfd_config_line(&cfg, "admin-secret", "boss", err, sizeof err);
	struct arfd *s = arfd_start(&cfg, err, sizeof err);
	if (!s) {
		CHECK(0, "arfd_start with secrets: %s", err);
		return;
	}
	uint8_t *seg = NULL;
	size_t seg_len = 0;
	char *diags = NULL;
	const char *src = ".func main\n\tpush 7\n\tret\n.end\n.export main\n";
	if (asm_assemble(src, strlen(src), "t.pna", &seg, &seg_len, &diags) != 0)
		CHECK(0, "assemble: %s", diags);
	free(diags);
	static const struct {
		const char *what, *secret, *admin;
		int regions, install;      /* what arc_regions and arc_install return */
	} cases[] = {
		{ "the secret", "hush", NULL, 0, -AR_EDENIED },
		{ "the admin secret", NULL, "boss", 0, 0 },
		{ "a wrong secret", "hash", NULL, -AR_EAUTH, -AR_EAUTH },
		{ "no secret", NULL, NULL, -AR_EAUTH, -AR_EAUTH },
	};
	for (size_t i = 0; seg && i < sizeof cases / sizeof cases[0]; i++) {
		struct arc_opts o = { .secret = cases[i].secret, .admin_secret = cases[i].admin,
		                      .timeout_ms = 5000 };
		struct arc *a = arc_connect(arfd_endpoint(s, "rdma"), &o, err, sizeof err);
		if (!a) {
			CHECK(0, "%s: arc_connect: %s", cases[i].what, err);
			continue;
		}
		struct arc_region *list = NULL;
		unsigned n = 0;
		int rc = arc_regions(a, &list, &n);
		if (rc == 0)
			free(list);
		uint8_t id[AR_ID_LEN];
		int rc2 = arc_install(a, seg, seg_len, id);
		CHECK(rc == cases[i].regions && rc2 == cases[i].install,
		      "%s: REGIONS %d (want %d), INSTALL %d (want %d): %s", cases[i].what, rc,
		      cases[i].regions, rc2, cases[i].install, arc_errmsg(a));
		arc_close(a);
	}
	free(seg);
	arfd_stop(s, 1000);
}

/* In arfd's place, an endpoint with the secret looks at what libarc's request carries. */
static _Atomic int seen_proof = -1, seen_secret_len = -1;

static void h_look(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                   size_t len, void *arg)
{
	char secret[AR_MAX_SECRET + 1] = "";
	struct ar_rd r = { msg, (const uint8_t *)msg + len, 0 };
	if (ar_req_parse(&r, secret, sizeof secret) == 0)
		seen_secret_len = (int)strlen(secret);
	seen_proof = (int)pn_peer_proof(pn, from);
	struct ar_buf b = { 0 };
	ar_rep_begin(&b, -AR_EAUTH, "looked");
	pn_send(pn, from, AR_T_REPLY, coop, b.p, b.len);
	ar_buf_free(&b);
}

static void test_no_secret_sent(const char *host)
{
	char ep[128], err[256];
	snprintf(ep, sizeof ep, "rdma:%s:0", host);
	const char *l[] = { ep };
	struct pn_opts po = { .secret = "hush", .secret_len = 4 };
	struct pn *pn = pn_init(l, 1, &po, err, sizeof err);
	if (!pn) {
		CHECK(0, "pn_init %s: %s", ep, err);
		return;
	}
	pn_set_handler(pn, AR_T_REGIONS, 0, h_look, NULL);
	struct arc_opts o = { .secret = "hush", .timeout_ms = 5000 };
	struct arc *a = arc_connect(pn_self(pn, "rdma"), &o, err, sizeof err);
	struct arc_region *list = NULL;
	unsigned n = 0;
	int rc = a ? arc_regions(a, &list, &n) : -1;
	CHECK(a && rc == -AR_EAUTH && seen_secret_len == 0 && seen_proof == PN_PROOF_SECRET,
	      "libarc over rdma: the connection proved the secret (proof %d) and the request "
	      "carried %d bytes of it (rc %d %s)", (int)seen_proof, (int)seen_secret_len, rc,
	      a ? "" : err);
	arc_close(a);
	pn_finalize(pn);
}

/* The counter segment: main adds 1 to the u64 at mem + 64 and returns the count it made.
 * NULL (a failed check) when it does not assemble; *len its bytes. */
static uint8_t *count_seg(size_t *len)
{
	static const char src[] = ".region mem rw\n.func main\n    push 64\n    push 1\n"
	                          "    fadd mem\n    push 1\n    add\n    ret\n.end\n.export main\n";
	uint8_t *seg = NULL;
	char *diags = NULL;
	if (asm_assemble(src, strlen(src), "count.pna", &seg, len, &diags) != 0)
		CHECK(0, "assemble: %s", diags);
	free(diags);
	return seg;
}

/* Run i (from 0) of the counter segment on a: 1 when it answered i + 1, else 0 (printed). */
static int count_run(struct arc *a, const uint8_t *seg, size_t len, int i)
{
	struct arc_exec x = { .seg = seg, .seg_len = len };
	int rc = arc_exec(a, &x), right = rc == 0 && x.value == i + 1;
	if (!right)
		printf("run %d: %d (%s), value %lld\n", i, rc, arc_errmsg(a), (long long)x.value);
	if (rc == 0 || rc == -AR_ETRAP)
		free(x.out);
	return right;
}

/* Sessions over rdma (docs/net.md, "Sessions"): arfd's transport closes the connection
 * instead of sending every 3rd reply, as a device error would; libarc's session connects
 * again and repeats the request, and arfd answers a repeated EXEC from its reply cache.  A
 * counter segment run N times adds exactly N, every run gets its own value, and STATS shows
 * the replays. */
static void test_sessions(const char *host)
{
	static struct arfd_config cfg;
	char ep[128], err[512];
	snprintf(ep, sizeof ep, "rdma:%s:0", host);
	arfd_config_line(&cfg, "listen", ep, err, sizeof err);
	arfd_config_line(&cfg, "region", "mem=4096:rw", err, sizeof err);
	setenv("PN_RDMA_CUT_REPLIES", "3", 1);
	struct arfd *s = arfd_start(&cfg, err, sizeof err);
	unsetenv("PN_RDMA_CUT_REPLIES");
	if (!s) {
		CHECK(0, "arfd_start: %s", err);
		return;
	}
	size_t len = 0;
	uint8_t *seg = count_seg(&len);
	struct arc_opts o = { .timeout_ms = 10000, .outage_ms = 10000 };
	struct arc *a = seg ? arc_connect(arfd_endpoint(s, "rdma"), &o, err, sizeof err) : NULL;
	CHECK(a != NULL, "arc_connect: %s", a ? "" : err);
	enum { N = 12 };
	int right = 0, rc;
	for (int i = 0; a && i < N; i++)
		right += count_run(a, seg, len, i);
	uint64_t count = 0;
	rc = a ? arc_read(a, "mem", 64, &count, sizeof count) : -1;
	uint64_t replays = a ? stat_of(a, "net.session_replays") : 0;
	CHECK(right == N && rc == 0 && count == N && replays >= 1 && replays != UINT64_MAX,
	      "%d of %d runs through cut connections answered right, the counter is %llu, "
	      "net.session_replays %llu", right, N, (unsigned long long)count,
	      (unsigned long long)replays);
	printf("sessions over rdma: %d runs, counter %llu, net.session_replays %llu\n", N,
	       (unsigned long long)count, (unsigned long long)replays);
	arc_close(a);
	free(seg);
	arfd_stop(s, 1000);
}

/* A tcp port free on host now (arfd then listens on it over rdma and tcp alike). */
static int free_port(const char *host)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
	if (fd >= 0 && inet_pton(AF_INET, host, &sa.sin_addr) == 1 &&
	    bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* arfd on rdma and tcp at one port of host (*port, free now), with region mem, its
 * configuration in cfg (the caller's, static: arfd keeps it): NULL after a failed check. */
static struct arfd *start_rdma_tcp(const char *host, struct arfd_config *cfg, int *port)
{
	char ep[2][128], err[512];
	*port = free_port(host);
	snprintf(ep[0], sizeof ep[0], "rdma:%s:%d", host, *port);
	snprintf(ep[1], sizeof ep[1], "tcp:%s:%d", host, *port);
	arfd_config_line(cfg, "listen", ep[0], err, sizeof err);
	arfd_config_line(cfg, "listen", ep[1], err, sizeof err);
	arfd_config_line(cfg, "region", "mem=4096:rw", err, sizeof err);
	struct arfd *s = *port ? arfd_start(cfg, err, sizeof err) : NULL;
	if (!s)
		CHECK(0, "arfd_start on %s and %s: %s", ep[0], ep[1], *port ? err : "no free port");
	return s;
}

/* Issue 17: a session whose transport fails moves to the next one.  arfd listens on rdma and
 * tcp at one port; a client of HOST:PORT (libarc chose rdma) runs a counter segment in a
 * loop.  arfd's rdma closes the connection instead of the 6th reply it sends (the probe's
 * REGIONS was the 1st: so the client's 5th run ran and its answer is lost), and the
 * client's rdma fails after 5 requests as a device would (PN_RDMA_FAIL_AFTER): its repeat
 * cannot go over rdma, so the session moves to tcp and sends it there, where arfd finds the
 * same session and answers it from the reply it kept.  Every run gets its own value, the
 * counter equals the runs (the 5th ran once), and the endpoint and note say tcp and why. */
static void test_fallback(const char *host)
{
	static struct arfd_config cfg;
	char err[512];
	int port;
	setenv("PN_RDMA_CUT_REPLIES", "6", 1);
	struct arfd *s = start_rdma_tcp(host, &cfg, &port);
	unsetenv("PN_RDMA_CUT_REPLIES");
	if (!s)
		return;
	size_t len = 0;
	uint8_t *seg = count_seg(&len);
	char hostport[140];
	snprintf(hostport, sizeof hostport, "%s:%d", host, port);
	struct arc_opts o = { .timeout_ms = 10000, .outage_ms = 10000 };
	setenv("PN_RDMA_FAIL_AFTER", "5", 1);
	struct arc *a = seg ? arc_connect(hostport, &o, err, sizeof err) : NULL;
	unsetenv("PN_RDMA_FAIL_AFTER");
	CHECK(a && !strncmp(arc_endpoint(a), "rdma:", 5), "%s: %s", hostport,
	      a ? arc_endpoint(a) : err);
	enum { N = 12 };
	int right = 0, rc;
	for (int i = 0; a && i < N; i++)
		right += count_run(a, seg, len, i);
	uint64_t count = 0;
	rc = a ? arc_read(a, "mem", 64, &count, sizeof count) : -1;
	uint64_t replays = a ? stat_of(a, "net.session_replays") : 0;
	CHECK(right == N && rc == 0 && count == N && replays == 1,
	      "%d of %d runs answered right through rdma's failure, the counter is %llu (read: %d), "
	      "net.session_replays %llu (want 1)", right, N, (unsigned long long)count, rc,
	      (unsigned long long)replays);
	const char *note = a ? arc_transport_note(a) : "";
	CHECK(a && !strncmp(arc_endpoint(a), "tcp:", 4) && strstr(note, "mid-session: moved from rdma:"),
	      "after rdma failed: endpoint %s, note: %s", a ? arc_endpoint(a) : "-", note);
	printf("moved to tcp mid-session: %d runs, counter %llu, net.session_replays %llu; "
	       "endpoint %s; note: %s\n", N, (unsigned long long)count,
	       (unsigned long long)replays, a ? arc_endpoint(a) : "-", note);
	arc_close(a);
	free(seg);
	arfd_stop(s, 1000);
}

/* Issue 17 with a real device error: the rxe device deleted (`rdma link delete DEV`, in
 * the background: it returns once every process let go of the device) while a client of
 * HOST:PORT (libarc chose rdma) runs a counter segment in a loop.  Its connections break and
 * new ones cannot be made (no such device), so after 3 tries the session moves to tcp at
 * the same port, where arfd listens too: every run is answered right, without an error,
 * and the counter equals the runs. */
static void test_link_delete(const char *host, const char *dev)
{
	static struct arfd_config cfg;
	char err[512];
	int port;
	struct arfd *s = start_rdma_tcp(host, &cfg, &port);
	if (!s)
		return;
	size_t len = 0;
	uint8_t *seg = count_seg(&len);
	char hostport[140];
	snprintf(hostport, sizeof hostport, "%s:%d", host, port);
	struct arc_opts o = { .timeout_ms = 20000, .outage_ms = 20000 };
	struct arc *a = seg ? arc_connect(hostport, &o, err, sizeof err) : NULL;
	CHECK(a && !strncmp(arc_endpoint(a), "rdma:", 5), "%s: %s", hostport,
	      a ? arc_endpoint(a) : err);
	enum { N = 30, DELETE_AT = 5, PAUSE_US = 50000 };
	int right = 0, rc;
	for (int i = 0; a && i < N; i++) {
		if (i == DELETE_AT) {
			char cmd[200];
			snprintf(cmd, sizeof cmd, "rdma link delete %s &", dev);
			if (system(cmd) != 0)
				CHECK(0, "%s", cmd);
		}
		right += count_run(a, seg, len, i);
		usleep(PAUSE_US);          /* (the deletion lands mid-loop, between runs or in one) */
	}
	uint64_t count = 0;
	rc = a ? arc_read(a, "mem", 64, &count, sizeof count) : -1;
	const char *note = a ? arc_transport_note(a) : "";
	CHECK(right == N && rc == 0 && count == N && a && !strncmp(arc_endpoint(a), "tcp:", 4) &&
	      strstr(note, "mid-session: moved from rdma:"),
	      "%s deleted mid-loop: %d of %d runs right, the counter %llu (read: %d), endpoint %s, "
	      "note: %s", dev, right, N, (unsigned long long)count, rc, a ? arc_endpoint(a) : "-",
	      note);
	printf("%s deleted after %d runs: %d of %d runs right, counter %llu, net.session_replays "
	       "%llu; endpoint %s; note: %s\n", dev, DELETE_AT, right, N, (unsigned long long)count,
	       (unsigned long long)(a ? stat_of(a, "net.session_replays") : 0),
	       a ? arc_endpoint(a) : "-", note);
	arc_close(a);
	free(seg);
	arfd_stop(s, 1000);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[2], "--link-delete")) {
		test_link_delete(argv[1], argv[3]);
		printf("%d passed, %d failed\n", passed, failed);
		return failed != 0;
	}
	const char *host = argc > 1 ? argv[1] : getenv("PN_TEST_HOST");
	if (!host) {
		printf("usage: test_arfd_rdma HOST\n0 passed, 1 failed\n");
		return 1;
	}
	static struct arfd_config cfg;
	char ep[128], err[512];
	snprintf(ep, sizeof ep, "rdma:%s:0", host);
	arfd_config_line(&cfg, "listen", ep, err, sizeof err);
	arfd_config_line(&cfg, "region", "mem=1M:rw", err, sizeof err);
	arfd_config_line(&cfg, "region", "ro=64K:ro", err, sizeof err);
	struct arfd *s = arfd_start(&cfg, err, sizeof err);
	if (!s) {
		printf("arfd_start: %s\n0 passed, 1 failed\n", err);
		return 1;
	}
	/* the client's own endpoint is libarc's default: the local address the server is
	 * reached from (127.0.0.1 would be no address rdma_cm can route a reply to, should the
	 * server need a new connection to answer; one CI run failed that way) */
	struct arc *a = arc_connect(arfd_endpoint(s, "rdma"), NULL, err, sizeof err);
	CHECK(a != NULL, "arc_connect %s: %s", arfd_endpoint(s, "rdma"), a ? "" : err);
	if (!a) {
		arfd_stop(s, 1000);
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}
	struct arc_region *list;
	unsigned n;
	int rc = arc_regions(a, &list, &n);
	CHECK(rc == 0 && n == 2 && list[0].handle_len == 24 && list[1].handle_len == 24,
	      "regions carry one-sided handles: %d %u", rc, n);
	if (rc == 0)
		free(list);

	/* one-sided writes and reads, 1 byte .. 256 KiB, at the region's end too */
	static uint8_t out[256 * 1024], in[256 * 1024];
	for (size_t i = 0; i < sizeof out; i++)
		out[i] = (uint8_t)(i * 31 + 7);
	static const uint32_t sizes[] = { 1, 7, 4096, 65536, 256 * 1024 };
	int same = 1;
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		uint64_t off = (1u << 20) - sizes[k];
		memset(in, 0, sizes[k]);
		if (arc_write(a, "mem", off, out, sizes[k]) != 0 || arc_read(a, "mem", off, in, sizes[k]) != 0 ||
		    memcmp(in, out, sizes[k]))
			same = 0;
	}
	CHECK(same, "one-sided write then read back: %s", arc_errmsg(a));
	CHECK(stat_of(a, "read.requests") == 0 && stat_of(a, "write.requests") == 0,
	      "the server saw no READ/WRITE request (%llu, %llu)",
	      (unsigned long long)stat_of(a, "read.requests"),
	      (unsigned long long)stat_of(a, "write.requests"));
	uint8_t b[16];
	rc = arc_read(a, "mem", (1u << 20) - 8, b, 16);
	CHECK(rc == -AR_EBOUNDS, "read past the end: %d %s", rc, arc_errmsg(a));
	rc = arc_write(a, "ro", 0, b, 8);
	CHECK(rc == -AR_EREADONLY, "write to a read-only region: %d %s", rc, arc_errmsg(a));
	rc = arc_read(a, "nosuch", 0, b, 8);
	CHECK(rc == -AR_ENOREGION, "unknown region (falls back to a request): %d %s", rc, arc_errmsg(a));

	/* a segment on the server sees the one-sided writes; local placement reads one-sided */
	const char *src = ".region mem rw\n.func main\n\tpush 1048568\n\tld64 mem\n\tret\n.end\n.export main\n";
	uint8_t *seg;
	size_t len;
	char *diags = NULL;
	if (asm_assemble(src, strlen(src), "t.pna", &seg, &len, &diags) == 0) {
		uint64_t want;
		memcpy(&want, out + sizeof out - 8, 8);
		struct arc_exec x = { .seg = seg, .seg_len = len };
		rc = arc_exec(a, &x);
		CHECK(rc == 0 && (uint64_t)x.value == want, "exec over rdma: %d", rc);
		free(x.out);
		uint64_t reads0 = stat_of(a, "read.requests");   /* the 'nosuch' fallback made one */
		rc = arc_exec_local(a, &x);
		CHECK(rc == 0 && (uint64_t)x.value == want, "local placement over rdma: %d %s", rc, arc_errmsg(a));
		free(x.out);
		uint64_t reads = stat_of(a, "read.requests") - reads0;
		CHECK(reads == 0, "local placement read one-sided (%llu READ requests)", (unsigned long long)reads);
		free(seg);
	} else {
		CHECK(0, "assemble: %s", diags);
	}
	free(diags);
	arc_close(a);
	/* auto:HOST:PORT, and HOST:PORT without a scheme: rdma, where there is a device */
	const char *rep = arfd_endpoint(s, "rdma");
	char autos[2][160];
	snprintf(autos[0], sizeof autos[0], "auto:%s", rep + strlen("rdma:"));
	snprintf(autos[1], sizeof autos[1], "%s", rep + strlen("rdma:"));
	for (int i = 0; i < 2; i++) {
		struct arc *b = arc_connect(autos[i], NULL, err, sizeof err);
		CHECK(b && !strncmp(arc_endpoint(b), "rdma:", 5) && strstr(arc_transport_note(b), "rdma: answered"),
		      "%s takes rdma: %s (%s)", autos[i], b ? arc_endpoint(b) : err,
		      b ? arc_transport_note(b) : "");
		arc_close(b);
	}
	arfd_stop(s, 1000);
	test_rights(host);
	test_no_secret_sent(host);
	test_sessions(host);
	test_fallback(host);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
