/* live_arfd.c: a protocol mutation run against a live arfd on loopback (`make fuzz`,
 * issue 21).  The libFuzzer targets beside it feed decoders in-process; this one speaks to
 * a real server process the way clients do, then lies to it for a bounded time:
 *
 *   1. start build/arfd on tcp: and udp: of 127.0.0.1 (port 0) with --secret and
 *      --admin-secret, an rw, an :admin and a ro region, and small limits (run time, output);
 *   2. open four channels: a Paradis-Net endpoint that proves the client secret (HELLO,
 *      CHALLENGE, AUTH: HMAC challenge-response), one that proves the admin secret, a udp
 *      one whose requests carry the secret, and raw tcp connections that send a HELLO
 *      without proof and then frames written by hand;
 *   3. until --seconds pass, take a valid request (INSTALL, EXEC inline or by id, READ,
 *      WRITE, REGIONS, STATS), mutate it (bit flips, interesting bytes and lengths,
 *      truncation, growth, a spliced chunk, another message type) and send it on a channel;
 *      on the Paradis-Net channels wait (bounded) for the answer and count its status;
 *   4. every second: arfd still runs, and its RSS (VmRSS) is noted;
 *   5. at the end: a new libarc client is answered (REGIONS, an EXEC), arfd's RSS is below
 *      RSS_BOUND_MB, and SIGTERM makes it exit 0 within 10 s.
 *
 *   build/tests/live_arfd [--build DIR] [--seconds N] [--seed N]
 * Prints what it sent and got, then "N passed, N failed"; exit 1 on a failure.  The seed
 * (printed) repeats a run's choices; what arfd does with time (runs, timeouts) may differ.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ar_proto.h"
#include "arc.h"
#include "asm.h"
#include "isa.h"
#include "pn_int.h"

/* arfd serves 1 MiB + 64 KiB + 64 KiB of regions, runs of 200 ms and 1 MiB of output;
 * a few MB of its own, thread stacks, the code cache (256 segments) and the buffers of
 * requests in flight stay far below this.  Without the pre-authentication bounds, raw
 * connections claiming large frames took it past 1 GB (issue 21). */
#define RSS_BOUND_MB 200
#define REPLY_WAIT_MS 3000         /* a request on a Paradis-Net channel waits this long */
#define STOP_WAIT_S 10             /* arfd's promise on SIGTERM */
#define MAX_PAYLOAD (256 * 1024)   /* mutated requests are at most this long */

static const char *const status_names[AR_ECOUNT] = {
#define ERR(name, value, msg) [value] = #name,
#include "ar_err.def"
#undef ERR
};

static const char *const client_secret = "live-client-secret-4c1f";
static const char *const admin_secret = "live-admin-secret-91ad";

static int passed, failed;
#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* xorshift64*: the run's choices, repeatable from the seed */
static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}
static uint32_t below(uint32_t n) { return n ? (uint32_t)(rnd() % n) : 0; }

/* ---- arfd ---- */

static pid_t arfd_pid = -1;
static char arfd_log[64];
static char ep_tcp[64], ep_udp[64];

static void arfd_kill(void)
{
	if (arfd_pid > 0) {
		kill(arfd_pid, SIGKILL);
		waitpid(arfd_pid, NULL, 0);
	}
	arfd_pid = -1;
}

static int arfd_start(const char *build)
{
	snprintf(arfd_log, sizeof arfd_log, "/tmp/live_arfd.%d.log", (int)getpid());
	char path[512];
	snprintf(path, sizeof path, "%s/arfd", build);
	const char *argv[] = { path, "--listen", "tcp:127.0.0.1:0", "--listen", "udp:127.0.0.1:0",
		"--secret", client_secret, "--admin-secret", admin_secret,
		"--region", "mem=1M:rw", "--region", "adm=64K:admin", "--region", "rom=64K:ro",
		"--max-run-ms", "200", "--max-output", "1M", "--max-segment", "256K",
		"--auth-timeout", "2", NULL };
	arfd_pid = fork();
	if (arfd_pid == 0) {
		int fd = open(arfd_log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0)
			dup2(fd, 2);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	for (double t0 = now_s(); now_s() - t0 < 10;) {
		FILE *f = fopen(arfd_log, "r");
		char line[512];
		while (f && fgets(line, sizeof line, f)) {
			char *e;
			if ((e = strstr(line, "endpoint tcp:")))
				sscanf(e + 9, "%63s", ep_tcp);
			if ((e = strstr(line, "endpoint udp:")))
				sscanf(e + 9, "%63s", ep_udp);
		}
		if (f)
			fclose(f);
		if (ep_tcp[0] && ep_udp[0])
			return 0;
		usleep(20000);
	}
	printf("arfd did not start (log %s)\n", arfd_log);
	arfd_kill();
	return -1;
}

static long rss_mb(void)
{
	char p[64], line[256];
	snprintf(p, sizeof p, "/proc/%d/status", (int)arfd_pid);
	FILE *f = fopen(p, "r");
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb < 0 ? -1 : kb / 1024;
}

static bool arfd_alive(void)
{
	return arfd_pid > 0 && waitpid(arfd_pid, NULL, WNOHANG) == 0;
}

/* ---- the valid requests mutations start from ---- */

enum { SEED_MAX = 16 };
static struct seed { pn_type type; uint8_t *p; size_t len; } seeds[2][SEED_MAX];
static unsigned n_seeds;           /* [0]: empty secret field (tcp, proved), [1]: carrying it */

static uint8_t *assemble(const char *src, size_t *len)
{
	uint8_t *seg = NULL;
	char *diags = NULL;
	if (asm_assemble(src, strlen(src), "live.pna", &seg, len, &diags) != 0)
		printf("assemble: %s\n", diags ? diags : "?");
	free(diags);
	return seg;
}

static void seeds_make(void)
{
	static const char src[] =
		".region mem rw\n.region rom ro\n.region adm rw\n"
		".func main a b\n    lget a\n    lget b\n    add\n    ret\n.end\n"
		".func put off v\n    lget off\n    lget v\n    st64 mem\n    push 0\n    ret\n.end\n"
		".func loop n\n"
		"top:\n    lget n\n    jz done\n    lget n\n    push 1\n    sub\n    lset n\n"
		"    jmp top\n"
		"done:\n    push 0\n    ret\n.end\n"
		".func adm v\n    push 8\n    lget v\n    st64 adm\n    push 0\n    ret\n.end\n"
		".export main\n.export put\n.export loop\n.export adm\n";
	size_t seg_len = 0;
	uint8_t *seg = assemble(src, &seg_len);
	uint8_t id[ISA_ID_LEN] = { 0 };
	if (seg)
		isa_seg_id(seg, seg_len, id);
	for (int k = 0; k < 2; k++) {
		const char *secret = k ? client_secret : "";
		unsigned n = 0;
		struct ar_buf b;
#define SEED(t) do { seeds[k][n].type = (t); seeds[k][n].p = b.p; seeds[k][n].len = b.len; n++; } while (0)
		memset(&b, 0, sizeof b); ar_req_begin(&b, secret);
		if (seg) ar_put_bytes(&b, seg, seg_len);
		SEED(AR_T_INSTALL);
		static const struct { const char *entry; int n; int64_t a[2]; } ex[] = {
			{ "main", 2, { 3, 4 } }, { "put", 2, { 16, 7 } }, { "loop", 1, { 1000 } },
			{ "adm", 1, { 5 } }, { "loop", 1, { 1 << 30 } },
		};
		for (size_t e = 0; e < sizeof ex / sizeof ex[0]; e++)
			for (int mode = 0; mode < 2; mode++) {
				memset(&b, 0, sizeof b); ar_req_begin(&b, secret);
				ar_put8(&b, (uint8_t)mode);
				if (mode == 0) {
					ar_put_bytes(&b, id, sizeof id);
				} else {
					ar_put32(&b, (uint32_t)seg_len);
					if (seg) ar_put_bytes(&b, seg, seg_len);
				}
				ar_put_str16(&b, ex[e].entry);
				ar_put8(&b, (uint8_t)ex[e].n);
				for (int i = 0; i < ex[e].n; i++)
					ar_put64(&b, (uint64_t)ex[e].a[i]);
				ar_put64(&b, 0);
				ar_put64(&b, 4096);
				ar_put32(&b, 4);
				ar_put_bytes(&b, "args", 4);
				ar_put32(&b, 100);
				if (n < SEED_MAX - 5) SEED(AR_T_EXEC);
				else ar_buf_free(&b);
			}
		memset(&b, 0, sizeof b); ar_req_begin(&b, secret);
		ar_put_str16(&b, "mem"); ar_put64(&b, 64); ar_put32(&b, 128);
		SEED(AR_T_READ);
		memset(&b, 0, sizeof b); ar_req_begin(&b, secret);
		ar_put_str16(&b, "mem"); ar_put64(&b, 8); ar_put32(&b, 8); ar_put64(&b, 42);
		SEED(AR_T_WRITE);
		memset(&b, 0, sizeof b); ar_req_begin(&b, secret);
		ar_put_str16(&b, "adm"); ar_put64(&b, 0); ar_put32(&b, 8); ar_put64(&b, 42);
		SEED(AR_T_WRITE);
		memset(&b, 0, sizeof b); ar_req_begin(&b, secret);
		SEED(AR_T_REGIONS);
		memset(&b, 0, sizeof b); ar_req_begin(&b, secret);
		SEED(AR_T_STATS);
#undef SEED
		n_seeds = n;
	}
	free(seg);
}

/* ---- mutation ---- */

static const uint32_t interesting32[] = { 0, 1, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000,
	0xffff, 0x10000, 0x7fffffff, 0x80000000u, 0xfffffffeu, 0xffffffffu, 4096, 65536 };

/* Mutate seed into out (capacity MAX_PAYLOAD); returns the new length. */
static size_t mutate(const struct seed *s, uint8_t *out, pn_type *type)
{
	size_t len = s->len < MAX_PAYLOAD ? s->len : MAX_PAYLOAD;
	memcpy(out, s->p, len);
	*type = s->type;
	unsigned n = 1 + below(4);
	for (unsigned k = 0; k < n; k++) {
		switch (below(9)) {
		case 0:                    /* bit flips */
			for (unsigned i = 0, m = 1 + below(8); i < m && len; i++)
				out[below((uint32_t)len)] ^= (uint8_t)(1u << below(8));
			break;
		case 1:                    /* an interesting byte */
			if (len)
				out[below((uint32_t)len)] = (uint8_t)interesting32[below(16)];
			break;
		case 2:                    /* an interesting u32 or u16 (a length, a count) */
			if (len >= 4) {
				size_t at = below((uint32_t)len - 3);
				uint32_t v = interesting32[below(16)];
				memcpy(out + at, &v, below(2) ? 4 : 2);
			}
			break;
		case 3:                    /* truncated */
			len = below((uint32_t)len + 1);
			break;
		case 4:                    /* grown with random bytes */
			for (unsigned i = 0, m = below(below(8) ? 64 : 8192); i < m && len < MAX_PAYLOAD; i++)
				out[len++] = (uint8_t)rnd();
			break;
		case 5:                    /* a chunk of another seed spliced in */
		{
			const struct seed *o = &seeds[0][below(n_seeds)];
			size_t at = below((uint32_t)len + 1), from = below((uint32_t)o->len + 1);
			size_t m = below((uint32_t)(o->len - from) + 1);
			if (at + m > MAX_PAYLOAD)
				m = MAX_PAYLOAD - at;
			memcpy(out + at, o->p + from, m);
			if (at + m > len)
				len = at + m;
			break;
		}
		case 6:                    /* another message type, mostly near ours */
			*type = below(4) ? (pn_type)(1 + below(8)) : (pn_type)(1 + below(PN_MAX_TYPE));
			break;
		case 7:                    /* a random 64-bit value (offsets, fuel, arguments) */
			if (len >= 8) {
				uint64_t v = below(2) ? rnd() : (uint64_t)-1 - below(16);
				memcpy(out + below((uint32_t)len - 7), &v, 8);
			}
			break;
		default:                   /* unchanged in this round */
			break;
		}
	}
	return len;
}

/* ---- channels ---- */

enum { CH_TCP, CH_ADMIN, CH_UDP, CH_RAW, CH_N };
static const char *const ch_names[CH_N] = { "tcp (client secret proved)",
	"tcp (admin secret proved)", "udp (secret carried)", "raw tcp frames (no proof)" };
static struct pn *ch_pn[CH_RAW];
static pn_peer ch_peer[CH_RAW];
static uint64_t n_sent[CH_N], n_answered[CH_N], n_unanswered[CH_N], n_status[AR_ECOUNT + 2];

static struct pn *channel_open(const char *scheme, const char *secret, const char *admin)
{
	char self[64], err[256];
	snprintf(self, sizeof self, "%s:127.0.0.1:0", scheme);
	const char *l[] = { self };
	struct pn_opts o = { .n_workers = 1, .max_msg = 8u << 20 };
	if (secret) { o.secret = secret; o.secret_len = strlen(secret); }
	if (admin) { o.admin_secret = admin; o.admin_secret_len = strlen(admin); }
	struct pn *pn = pn_init(l, 1, &o, err, sizeof err);
	if (!pn)
		printf("pn_init %s: %s\n", self, err);
	return pn;
}

/* One request on a Paradis-Net channel; its answer counted. */
static void send_pn(int ch, pn_type type, const uint8_t *p, size_t len)
{
	static uint8_t reply[2u << 20];
	struct pn *pn = ch_pn[ch];
	n_sent[ch]++;
	if (type == AR_T_REPLY) {          /* nobody answers a reply (docs/protocol.md) */
		pn_send(pn, ch_peer[ch], type, 0, p, len);
		return;
	}
	struct pn_rcv_desc d = { .buf = reply, .cap = sizeof reply, .type = AR_T_REPLY,
	                         .from = ch_peer[ch] };
	pn_coop c = pn_coop_start(pn, &d, 1);
	int rc = pn_send(pn, ch_peer[ch], type, c, p, len);
	int rc2 = pn_coop_end(pn, c, REPLY_WAIT_MS);
	if (rc == 0 && rc2 == 0) {
		n_answered[ch]++;
		struct ar_rd r = { reply, reply + d.len, 0 };
		int status;
		char msg[AR_MAX_MSG + 1];
		if (ar_rep_parse(&r, &status, msg, sizeof msg) == 0 && -status < AR_ECOUNT)
			n_status[-status]++;
		else
			n_status[AR_ECOUNT]++;     /* a reply that does not parse */
	} else {
		n_unanswered[ch]++;
	}
}

/* A raw connection: HELLO without proof, then frames whose header and payload are both
 * mutated now and then; what arfd answers is read and dropped (bounded). */
static void send_raw(pn_type type, const uint8_t *p, size_t len)
{
	n_sent[CH_RAW]++;
	int port = atoi(strrchr(ep_tcp, ':') + 1);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		if (fd >= 0)
			close(fd);
		n_unanswered[CH_RAW]++;
		return;
	}
	static uint8_t buf[PN_HDR_LEN * 2 + MAX_PAYLOAD];
	struct pn_hdr h = { .kind = PN_K_HELLO, .origin = { .scheme = PN_S_TCP, .family = 4,
	                    .port = htons(9), .addr = { 127, 0, 0, 1 } } };
	pn_wire_put(buf, &h);
	struct pn_hdr m = { .kind = PN_K_MSG, .type = type, .len = (uint32_t)len,
	                    .coop = 1 + rnd() % 1000, .origin = h.origin };
	if (below(4) == 0)
		m.flags = (uint16_t)rnd();
	pn_wire_put(buf + PN_HDR_LEN, &m);
	if (below(3) == 0)                 /* the header itself mutated */
		buf[PN_HDR_LEN + below(PN_HDR_LEN)] ^= (uint8_t)(1u << below(8));
	if (below(8) == 0) {               /* a length that lies */
		uint32_t v = interesting32[below(16)];
		memcpy(buf + PN_HDR_LEN + 8, &v, 4);
	}
	memcpy(buf + 2 * PN_HDR_LEN, p, len);
	size_t total = 2 * PN_HDR_LEN + len;
	if (below(8) == 0)
		total = below((uint32_t)total + 1);   /* cut short */
	if (send(fd, buf, total, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) { /* it may close on us */ }
	shutdown(fd, SHUT_WR);
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	char junk[4096];
	bool got = false;
	for (int i = 0; i < 20 && poll(&pf, 1, 20) > 0; i++) {
		ssize_t r = recv(fd, junk, sizeof junk, MSG_DONTWAIT);
		if (r <= 0)
			break;
		got = true;
	}
	close(fd);
	if (got)
		n_answered[CH_RAW]++;
	else
		n_unanswered[CH_RAW]++;
}

/* ---- the end: still serving, memory, SIGTERM ---- */

static void final_checks(void)
{
	char err[256];
	struct arc_opts o = { .secret = client_secret, .timeout_ms = 5000, .outage_ms = -1 };
	struct arc *a = arc_connect(ep_tcp, &o, err, sizeof err);
	struct arc_region *list = NULL;
	unsigned n = 0;
	int rc = a ? arc_regions(a, &list, &n) : -1;
	CHECK(rc == 0 && n == 3, "after the run, REGIONS is answered: %d (%s), %u regions", rc,
	      a ? arc_errmsg(a) : err, n);
	free(list);
	size_t len = 0;
	uint8_t *seg = assemble(".func main\n    push 41\n    push 1\n    add\n    ret\n.end\n"
	                        ".export main\n", &len);
	struct arc_exec x = { .seg = seg, .seg_len = len };
	rc = a && seg ? arc_exec(a, &x) : -1;
	CHECK(rc == 0 && x.value == 42, "after the run, an EXEC is answered: %d (%s)", rc,
	      a ? arc_errmsg(a) : "");
	if (rc == 0)
		free(x.out);
	free(seg);
	arc_close(a);
	long mb = rss_mb();
	CHECK(mb >= 0 && mb < RSS_BOUND_MB, "arfd's RSS at the end: %ld MB (bound %d MB)", mb,
	      RSS_BOUND_MB);
	double t0 = now_s();
	kill(arfd_pid, SIGTERM);
	int st = -1;
	while (now_s() - t0 < STOP_WAIT_S + 1 && waitpid(arfd_pid, &st, WNOHANG) == 0)
		usleep(20000);
	double dt = now_s() - t0;
	bool exited = WIFEXITED(st) && WEXITSTATUS(st) == 0 && dt <= STOP_WAIT_S;
	CHECK(exited, "SIGTERM: arfd exits 0 within %d s (status %d after %.2f s)", STOP_WAIT_S, st,
	      dt);
	if (exited)
		arfd_pid = -1;
}

int main(int argc, char **argv)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	double seconds = 30;
	uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--build")) build = argv[i + 1];
		else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 0);
		else { fprintf(stderr, "usage: live_arfd [--build DIR] [--seconds N] [--seed N]\n"); return 2; }
	}
	if (seconds <= 0 || seconds > 86400)
		seconds = 30;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	rng_state = seed ? seed : 1;
	printf("live_arfd: seed %" PRIu64 ", %.0f s\n", seed, seconds);
	atexit(arfd_kill);
	seeds_make();
	if (arfd_start(build) != 0) {
		CHECK(0, "arfd starts");
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}
	const char *secrets[CH_RAW][2] = { { client_secret, NULL }, { NULL, admin_secret },
	                                   { NULL, NULL } };
	for (int ch = 0; ch < CH_RAW; ch++) {
		ch_pn[ch] = channel_open(ch == CH_UDP ? "udp" : "tcp", secrets[ch][0], secrets[ch][1]);
		if (!ch_pn[ch] || pn_peer_get(ch_pn[ch], ch == CH_UDP ? ep_udp : ep_tcp, &ch_peer[ch])) {
			CHECK(0, "channel %s", ch_names[ch]);
			printf("%d passed, %d failed\n", passed, failed);
			return 1;
		}
	}
	static uint8_t buf[MAX_PAYLOAD];
	long rss_max = 0;
	bool alive = true;
	double t0 = now_s(), last_look = t0;
	uint64_t rounds = 0;
	/* every loop is bounded by the deadline; each request by REPLY_WAIT_MS or 20 x 20 ms */
	while (now_s() - t0 < seconds && alive) {
		int ch = (int)below(10);
		ch = ch < 4 ? CH_TCP : ch < 5 ? CH_ADMIN : ch < 8 ? CH_UDP : CH_RAW;
		/* the udp channel carries the secret in each request; the others send none */
		const struct seed *s = &seeds[ch == CH_UDP][below(n_seeds)];
		pn_type type;
		size_t len = below(16) ? mutate(s, buf, &type) : (memcpy(buf, s->p, s->len),
		             type = s->type, s->len);   /* now and then the valid request itself */
		if (ch == CH_RAW)
			send_raw(type, buf, len);
		else
			send_pn(ch, type, buf, len);
		rounds++;
		if (now_s() - last_look >= 1) {
			last_look = now_s();
			alive = arfd_alive();
			long mb = rss_mb();
			if (mb > rss_max)
				rss_max = mb;
		}
	}
	alive = alive && arfd_alive();
	printf("%" PRIu64 " mutated requests in %.1f s; arfd's largest RSS seen %ld MB\n", rounds,
	       now_s() - t0, rss_max);
	for (int ch = 0; ch < CH_N; ch++)
		printf("  %-28s sent %6" PRIu64 ", answered %6" PRIu64 ", unanswered %" PRIu64 "\n",
		       ch_names[ch], n_sent[ch], n_answered[ch], n_unanswered[ch]);
	printf("  statuses:");
	for (int i = 0; i < AR_ECOUNT; i++)
		if (n_status[i])
			printf(" %s %" PRIu64, status_names[i], n_status[i]);
	if (n_status[AR_ECOUNT])
		printf(" unparsable %" PRIu64, n_status[AR_ECOUNT]);
	printf("\n");
	CHECK(alive, "arfd survived the run (log %s)", arfd_log);
	CHECK(n_status[AR_ECOUNT] == 0, "every reply parses: %" PRIu64 " did not", n_status[AR_ECOUNT]);
	CHECK(n_answered[CH_TCP] + n_answered[CH_UDP] > 0, "requests were answered");
	for (int ch = 0; ch < CH_RAW; ch++)
		pn_finalize(ch_pn[ch]);
	if (alive)
		final_checks();
	if (failed == 0)
		unlink(arfd_log);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
