/* test_pn_udp.c: the udp: transport of Paradis-Net on loopback, in one process.
 *
 * What is particular to UDP: exactly-once handlers under 10% and 30% packet loss (fault
 * injection on both ends, handler invocation counts checked per request), reordered and
 * duplicated datagrams (through a small proxy that also counts packets: no extra packets when
 * nothing is lost), fragment sizes around the datagram boundary, 2 MiB replies with only lost
 * fragments resent, a full send window, a dead peer returning requests as PN_ERETURNED, and
 * hand-made datagrams (malformed ones counted and dropped, a valid one delivered once).
 * Also the common scenarios: request/reply, delegation through 3 peers, scatter/gather to 8,
 * 4 sending threads.  Every wait is bounded.  Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pn.h"

static int passed, failed;

#define FLOOD_DGRAM (88 + 32768)

#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

enum { T_ECHO = 1, T_REPLY, T_FWD, T_SILENT, T_BIG, T_COUNT };

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static struct pn *open_ep(const struct pn_opts *o)
{
	char err[200];
	const char *l[] = { "udp:127.0.0.1:0" };
	struct pn *pn = pn_init(l, 1, o, err, sizeof err);
	if (!pn)
		printf("pn_init: %s\n", err);
	return pn;
}

static pn_peer peer_of(struct pn *from, struct pn *to)
{
	pn_peer p = PN_ANY;
	pn_peer_get(from, pn_self(to, "udp"), &p);
	return p;
}

static int port_of(struct pn *pn)
{
	return atoi(strrchr(pn_self(pn, "udp"), ':') + 1);
}

static struct pn_stats stats(struct pn *pn)
{
	struct pn_stats s;
	pn_stats_get(pn, &s);
	return s;
}

/* echo: reply with the same bytes; arg, if set, counts invocations */
static void h_echo(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                   size_t len, void *arg)
{
	if (arg)
		atomic_fetch_add((_Atomic int *)arg, 1);
	pn_send(pn, from, T_REPLY, coop, msg, len);
}

static void h_silent(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                     size_t len, void *arg)
{
}

/* forward to the peer named arg */
static void h_fwd(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                  size_t len, void *arg)
{
	pn_peer next;
	if (pn_peer_get(pn, arg, &next) == 0)
		pn_forward(pn, next, T_FWD, msg, len);
}

/* big: reply with n bytes of a pattern, n given in the request */
static uint8_t pat(size_t i) { return (uint8_t)(i * 13 + (i >> 15)); }
static void h_big(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                  size_t len, void *arg)
{
	uint64_t n = 0;
	memcpy(&n, msg, len < 8 ? len : 8);
	uint8_t *b = n ? malloc(n) : NULL;
	for (uint64_t i = 0; i < n && b; i++)
		b[i] = pat(i);
	pn_send(pn, from, T_REPLY, coop, b, b ? n : 0);
	free(b);
}

static int pattern_ok(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(i))
			return 0;
	return 1;
}

/* count: the request is a u32 id; counts[id]++ then reply with the id */
#define N_IDS 4096
static _Atomic int counts[N_IDS];
static void h_count(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                    size_t len, void *arg)
{
	uint32_t id;
	if (len != sizeof id)
		return;
	memcpy(&id, msg, sizeof id);
	if (id < N_IDS)
		atomic_fetch_add(&counts[id], 1);
	pn_send(pn, from, T_REPLY, coop, &id, sizeof id);
}

static int request(struct pn *pn, pn_peer to, pn_type type, const void *msg, size_t len,
                   void *buf, size_t cap, size_t *got, int timeout_ms)
{
	struct pn_rcv_desc d = { .buf = buf, .cap = cap, .type = T_REPLY, .from = to };
	pn_coop c = pn_coop_start(pn, &d, 1);
	int rc = pn_send(pn, to, type, c, msg, len);
	int rc2 = pn_coop_end(pn, c, timeout_ms);
	if (got)
		*got = d.len;
	return rc ? rc : rc2;
}

/* ---- a proxy between two endpoints: counts datagrams, may reorder and duplicate ---- */

struct proxy {
	int fd;
	struct sockaddr_in a, b;       /* a talks to the proxy as if it were b */
	atomic_int reorder;            /* hold a datagram back until the next one has passed */
	atomic_int dup_every;          /* send every n-th datagram twice */
	atomic_bool stop;
	_Atomic unsigned n_data, n_ack, n_total;
	_Atomic unsigned n_mac;        /* datagrams that carry a MAC (kind flag 0x80) */
	_Atomic unsigned n_proof;      /* HELLO, CHALLENGE, AUTH, REPROVE */
	atomic_int flip;               /* change a byte of the next keyed DATA from a to b */
	atomic_int keep;               /* keep a copy of the next keyed DATA from a to b ... */
	atomic_int replay;             /* ... and send it to b again (from the proxy, as a's) */
	uint8_t kept[70000];
	ssize_t kept_len;
	atomic_int keep_auth;          /* keep the next AUTH from a to b ... */
	atomic_int replay_auth;        /* ... and send it to b again */
	uint8_t auth[256];
	ssize_t auth_len;
	uint8_t *cap;                  /* when set: every datagram either way, up to cap_max */
	size_t cap_n, cap_max;
	pthread_t thread;
};

static void *proxy_main(void *arg)
{
	struct proxy *px = arg;
	static _Thread_local uint8_t buf[70000], held[70000];
	ssize_t held_len = 0;
	struct sockaddr_in held_to;
	unsigned n = 0;
	while (!atomic_load(&px->stop)) {
		if (atomic_exchange(&px->replay, 0) && px->kept_len)
			sendto(px->fd, px->kept, (size_t)px->kept_len, 0, (struct sockaddr *)&px->b,
			       sizeof px->b);
		if (atomic_exchange(&px->replay_auth, 0) && px->auth_len)
			sendto(px->fd, px->auth, (size_t)px->auth_len, 0, (struct sockaddr *)&px->b,
			       sizeof px->b);
		struct pollfd pf = { .fd = px->fd, .events = POLLIN };
		if (poll(&pf, 1, 20) <= 0) {
			if (held_len > 0) {    /* nothing followed: let it go */
				sendto(px->fd, held, (size_t)held_len, 0, (struct sockaddr *)&held_to, sizeof held_to);
				held_len = 0;
			}
			continue;
		}
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t r = recvfrom(px->fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
		if (r < 4)
			continue;
		atomic_fetch_add(&px->n_total, 1);
		atomic_fetch_add((buf[3] & 0x7f) == 1 ? &px->n_data : (buf[3] & 0x7f) == 2 ?
		                 &px->n_ack : &px->n_proof, 1);
		if (buf[3] & 0x80)
			atomic_fetch_add(&px->n_mac, 1);
		if (px->cap && px->cap_n + (size_t)r <= px->cap_max) {
			memcpy(px->cap + px->cap_n, buf, (size_t)r);
			px->cap_n += (size_t)r;
		}
		struct sockaddr_in *to = from.sin_port == px->a.sin_port ? &px->b : &px->a;
		if (to == &px->b && buf[3] == 5 && r <= (ssize_t)sizeof px->auth &&
		    atomic_exchange(&px->keep_auth, 0)) {
			memcpy(px->auth, buf, (size_t)r);
			px->auth_len = r;
		}
		if (to == &px->b && buf[3] == 0x81 && r > 100 && atomic_exchange(&px->keep, 0)) {
			memcpy(px->kept, buf, (size_t)r);
			px->kept_len = r;
		}
		if (to == &px->b && buf[3] == 0x81 && r > 100 && atomic_exchange(&px->flip, 0))
			buf[90] ^= 1;          /* a payload byte (after the 48 + 40 bytes of headers) */
		n++;
		if (px->reorder && held_len == 0 && n % 3 == 0) {
			memcpy(held, buf, (size_t)r);
			held_len = r;
			held_to = *to;
			continue;
		}
		sendto(px->fd, buf, (size_t)r, 0, (struct sockaddr *)to, sizeof *to);
		if (px->dup_every && n % (unsigned)px->dup_every == 0)
			sendto(px->fd, buf, (size_t)r, 0, (struct sockaddr *)to, sizeof *to);
		if (held_len > 0) {
			sendto(px->fd, held, (size_t)held_len, 0, (struct sockaddr *)&held_to, sizeof held_to);
			held_len = 0;
		}
	}
	return NULL;
}

static int proxy_start(struct proxy *px, struct pn *a, struct pn *b)
{
	px->fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	socklen_t sl = sizeof sa;
	int sz = 4 << 20;
	setsockopt(px->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	if (px->fd < 0 || bind(px->fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    getsockname(px->fd, (struct sockaddr *)&sa, &sl) != 0)
		return -1;
	px->a = px->b = sa;
	px->a.sin_port = htons((uint16_t)port_of(a));
	px->b.sin_port = htons((uint16_t)port_of(b));
	atomic_store(&px->stop, false);
	if (pthread_create(&px->thread, NULL, proxy_main, px) != 0)
		return -1;
	return ntohs(sa.sin_port);
}

static void proxy_stop(struct proxy *px)
{
	atomic_store(&px->stop, true);
	pthread_join(px->thread, NULL);
	close(px->fd);
}

/* ---- tests ---- */

static void test_request_reply(void)
{
	struct pn *a = open_ep(NULL), *b = open_ep(NULL);
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	_Atomic int calls = 0;
	pn_set_handler(b, T_ECHO, 0, h_echo, &calls);
	pn_peer pb = peer_of(a, b);
	int ok = 0;
	for (int i = 0; i < 200; i++) {
		char msg[32], buf[32] = { 0 };
		int n = snprintf(msg, sizeof msg, "hello %d", i);
		size_t got = 0;
		int rc = request(a, pb, T_ECHO, msg, (size_t)n, buf, sizeof buf, &got, 5000);
		if (rc != 0 || got != (size_t)n || memcmp(buf, msg, (size_t)n)) {
			printf("request %d: %d (%s)\n", i, rc, pn_strerror(rc));
			break;
		}
		ok++;
	}
	CHECK(ok == 200 && calls == 200, "200 requests: %d answered, handler ran %d times", ok, (int)calls);
	/* an inline handler replies from the I/O thread */
	pn_set_handler(b, T_ECHO, PN_INLINE, h_echo, NULL);
	char buf[8];
	size_t got = 0;
	CHECK(request(a, pb, T_ECHO, "inline", 6, buf, sizeof buf, &got, 5000) == 0 && got == 6,
	      "inline handler");
	struct pn_stats sa = stats(a), sb = stats(b);
	/* nothing is lost on loopback; a duplicate can only come from a timer that fired while
	 * this (possibly loaded) machine stalled for longer than the RTO */
	CHECK(sa.duplicates + sb.duplicates <= sa.retransmits + sb.retransmits &&
	      sa.bad_frames + sb.bad_frames == 0 && sa.returned + sb.returned == 0,
	      "no loss: %llu duplicates, %llu retransmits", (unsigned long long)(sa.duplicates + sb.duplicates),
	      (unsigned long long)(sa.retransmits + sb.retransmits));
	pn_finalize(a);
	pn_finalize(b);
}

/* Sizes around the datagram boundary (32 KiB of payload per datagram), zero included. */
static void test_sizes(void)
{
	struct pn *a = open_ep(NULL), *b = open_ep(NULL);
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	pn_set_handler(b, T_BIG, 0, h_big, NULL);
	pn_peer pb = peer_of(a, b);
	static const size_t sizes[] = { 0, 1, 32767, 32768, 32769, 65536, 65537, 1000000 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		uint64_t n = sizes[i];
		size_t got = 99;
		uint8_t *buf = malloc(n + 1);
		int rc = request(a, pb, T_BIG, &n, sizeof n, buf, n + 1, &got, 10000);
		CHECK(rc == 0 && got == n && pattern_ok(buf, n), "reply of %zu bytes: %d (%s), got %zu",
		      sizes[i], rc, pn_strerror(rc), got);
		free(buf);
	}
	/* a request larger than one datagram, echoed */
	size_t n = 100000;
	uint8_t *m = malloc(n), *r = malloc(n);
	for (size_t i = 0; i < n; i++)
		m[i] = pat(i + 5);
	pn_set_handler(b, T_ECHO, 0, h_echo, NULL);
	size_t got = 0;
	int rc = request(a, pb, T_ECHO, m, n, r, n, &got, 10000);
	CHECK(rc == 0 && got == n && !memcmp(m, r, n), "100000-byte request echoed: %d", rc);
	free(m);
	free(r);
	pn_finalize(a);
	pn_finalize(b);
}

/* An endpoint sending to itself, and IPv6 loopback (when there is one). */
static void test_self_and_v6(void)
{
	struct pn *a = open_ep(NULL);
	if (!a) { CHECK(0, "open"); return; }
	_Atomic int calls = 0;
	pn_set_handler(a, T_ECHO, 0, h_echo, &calls);
	char buf[8];
	size_t got = 0;
	int rc = request(a, peer_of(a, a), T_ECHO, "self", 4, buf, sizeof buf, &got, 5000);
	CHECK(rc == 0 && got == 4 && calls == 1, "request to itself: %d", rc);
	pn_finalize(a);

	char err[200];
	const char *l6[] = { "udp:[::1]:0" };
	struct pn *b = pn_init(l6, 1, NULL, err, sizeof err), *c = pn_init(l6, 1, NULL, err, sizeof err);
	if (!b || !c) {
		printf("note: no IPv6 loopback (%s), skipped\n", err);
		pn_finalize(b);
		pn_finalize(c);
		return;
	}
	pn_set_handler(c, T_BIG, 0, h_big, NULL);
	uint64_t n = 100000;
	uint8_t *r = malloc(n);
	rc = request(b, peer_of(b, c), T_BIG, &n, sizeof n, r, n, &got, 5000);
	CHECK(rc == 0 && got == n && pattern_ok(r, n), "IPv6 request/reply %s: %d", pn_self(c, "udp"), rc);
	free(r);
	pn_finalize(b);
	pn_finalize(c);
}

static void test_delegation(void)
{
	/* each peer past the first believes the origin its forwarder names (udp_trusted) */
	struct pn *p[4];
	for (int i = 0; i < 4; i++) {
		const char *trusted[2] = { i >= 2 && p[i - 1] ? pn_self(p[i - 1], "udp") : NULL, NULL };
		struct pn_opts o = { .udp_trusted = trusted };
		p[i] = open_ep(&o);
	}
	if (!p[0] || !p[1] || !p[2] || !p[3]) {
		CHECK(0, "open");
		for (int i = 0; i < 4; i++) pn_finalize(p[i]);
		return;
	}
	/* 0 -> 1 -> 2 -> 3, and 3 answers 0 directly: n = 3 hops, n + 1 = 4 messages */
	char n2[64], n3[64];
	snprintf(n2, sizeof n2, "%s", pn_self(p[2], "udp"));
	snprintf(n3, sizeof n3, "%s", pn_self(p[3], "udp"));
	pn_set_handler(p[1], T_FWD, 0, h_fwd, n2);
	pn_set_handler(p[2], T_FWD, 0, h_fwd, n3);
	pn_set_handler(p[3], T_FWD, 0, h_echo, NULL);
	char buf[16] = { 0 };
	struct pn_rcv_desc d = { .buf = buf, .cap = sizeof buf, .type = T_REPLY, .from = PN_ANY };
	pn_coop c = pn_coop_start(p[0], &d, 1);
	int rc = pn_send(p[0], peer_of(p[0], p[1]), T_FWD, c, "deleg", 5);
	int rc2 = pn_coop_end(p[0], c, 5000);
	CHECK(rc == 0 && rc2 == 0 && d.len == 5 && !memcmp(buf, "deleg", 5), "delegation: %d %d", rc, rc2);
	CHECK(rc2 == 0 && !strcmp(pn_peer_name(p[0], d.got_from), pn_self(p[3], "udp")),
	      "the reply comes from the last peer");
	/* received counts are final once the reply is in; sent counts may lag a moment */
	usleep(50000);
	uint64_t sent = 0, recv = 0, fwd = 0;
	for (int i = 0; i < 4; i++) {
		struct pn_stats s = stats(p[i]);
		sent += s.msgs_sent;
		recv += s.msgs_recv;
		fwd += s.forwarded;
	}
	CHECK(sent == 4 && recv == 4 && fwd == 2, "n+1 = 4 messages: %llu sent, %llu received, %llu forwards",
	      (unsigned long long)sent, (unsigned long long)recv, (unsigned long long)fwd);
	for (int i = 0; i < 4; i++)
		pn_finalize(p[i]);
}

static void test_scatter_gather(void)
{
	enum { N = 8 };
	struct pn_opts so = { .n_workers = 1 };
	struct pn *a = open_ep(NULL), *s[N];
	int ok = a != NULL;
	for (int i = 0; i < N; i++)
		ok &= (s[i] = open_ep(&so)) != NULL;
	if (!ok) {
		CHECK(0, "open");
		pn_finalize(a);
		for (int i = 0; i < N; i++) pn_finalize(s[i]);
		return;
	}
	for (int i = 0; i < N; i++)
		pn_set_handler(s[i], T_BIG, 0, h_big, NULL);
	int rounds_ok = 0;
	for (int round = 0; round < 20; round++) {
		struct pn_rcv_desc d[N];
		for (int i = 0; i < N; i++)
			d[i] = (struct pn_rcv_desc){ .type = T_REPLY, .from = peer_of(a, s[i]) };
		pn_coop c = pn_coop_start(a, d, N);
		uint64_t n[N];
		for (int i = 0; i < N; i++) {
			n[i] = (uint64_t)(i * 7919 + round * 1000);   /* a few bytes to ~90 KiB */
			pn_send(a, d[i].from, T_BIG, c, &n[i], sizeof n[i]);
		}
		int rc = pn_coop_end(a, c, 10000);
		int good = rc == 0;
		for (int i = 0; i < N; i++) {
			good &= d[i].status == 0 && d[i].len == n[i] && d[i].got_from == d[i].from &&
			        pattern_ok(d[i].buf, d[i].len);
			free(d[i].buf);
		}
		rounds_ok += good;
	}
	CHECK(rounds_ok == 20, "scatter/gather to 8 endpoints: %d of 20 rounds complete", rounds_ok);
	pn_finalize(a);
	for (int i = 0; i < N; i++)
		pn_finalize(s[i]);
}

/* Several threads each run batches of requests; every id must be answered and handled once. */
struct load {
	struct pn *a;
	pn_peer to;
	uint32_t first, n, batch;
	int timeout_ms;
	_Atomic int *answered;
};

static void *load_main(void *arg)
{
	struct load *l = arg;
	for (uint32_t i = 0; i < l->n; i += l->batch) {
		uint32_t k = l->n - i < l->batch ? l->n - i : l->batch;
		struct pn_rcv_desc d[16];
		uint32_t ids[16], got[16];
		for (uint32_t j = 0; j < k; j++) {
			ids[j] = l->first + i + j;
			d[j] = (struct pn_rcv_desc){ .buf = &got[j], .cap = sizeof got[j], .type = T_REPLY,
			                             .from = l->to };
		}
		pn_coop c = pn_coop_start(l->a, d, k);
		for (uint32_t j = 0; j < k; j++)
			pn_send(l->a, l->to, T_COUNT, c, &ids[j], sizeof ids[j]);
		pn_coop_end(l->a, c, l->timeout_ms);
		/* replies land in any descriptor of the batch: check the set of ids */
		for (uint32_t j = 0; j < k; j++)
			if (d[j].status == 0 && d[j].len == sizeof got[j] && got[j] >= l->first + i &&
			    got[j] < l->first + i + k)
				atomic_fetch_add(&l->answered[got[j]], 1);
	}
	return NULL;
}

/* n requests from n_threads threads in batches; returns the number of ids answered and
 * handled exactly once. */
static int run_load(struct pn *a, struct pn *b, unsigned n_threads, uint32_t n, uint32_t batch,
                    int timeout_ms)
{
	static _Atomic int answered[N_IDS];
	for (int i = 0; i < N_IDS; i++) {
		atomic_store(&counts[i], 0);
		atomic_store(&answered[i], 0);
	}
	pn_set_handler(b, T_COUNT, 0, h_count, NULL);
	struct load l[8];
	pthread_t t[8];
	for (unsigned i = 0; i < n_threads; i++) {
		l[i] = (struct load){ a, peer_of(a, b), i * (n / n_threads), n / n_threads, batch,
		                      timeout_ms, answered };
		pthread_create(&t[i], NULL, load_main, &l[i]);
	}
	for (unsigned i = 0; i < n_threads; i++)
		pthread_join(t[i], NULL);
	int once = 0;
	for (uint32_t i = 0; i < n; i++)
		once += counts[i] == 1 && answered[i] == 1;
	return once;
}

static void test_concurrent(void)
{
	struct pn *a = open_ep(NULL), *b = open_ep(NULL);
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	int once = run_load(a, b, 4, 2000, 1, 5000);
	CHECK(once == 2000, "4 threads x 500 requests: %d handled and answered exactly once", once);
	once = run_load(a, b, 4, 2000, 8, 5000);
	CHECK(once == 2000, "4 threads x 500 requests in batches of 8: %d exactly once", once);
	pn_finalize(a);
	pn_finalize(b);
}

/* Packet loss on both ends (AMUDP's fault injection): every request completes exactly once. */
static void test_drop(double rate)
{
	struct pn_opts o = { .drop_rate = rate, .udp_max_wait_ms = 20000 };
	struct pn *a = open_ep(&o), *b = open_ep(&o);
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	double t0 = now_ms();
	int once = run_load(a, b, 4, 2000, 4, 30000);
	struct pn_stats sa = stats(a), sb = stats(b);
	CHECK(once == 2000, "drop %.0f%%: %d of 2000 requests handled and answered exactly once",
	      rate * 100, once);
	CHECK(sa.dropped + sb.dropped > 0 && sa.retransmits + sb.retransmits > 0 &&
	      sa.returned + sb.returned == 0,
	      "drop %.0f%%: %llu dropped, %llu retransmits, %llu duplicates, %llu returned",
	      rate * 100, (unsigned long long)(sa.dropped + sb.dropped),
	      (unsigned long long)(sa.retransmits + sb.retransmits),
	      (unsigned long long)(sa.duplicates + sb.duplicates),
	      (unsigned long long)(sa.returned + sb.returned));
	if (getenv("TEST_PN_TIMES"))
		printf("drop %.0f%%: %.0f ms, %llu dropped, %llu retransmits, %llu duplicates\n",
		       rate * 100, now_ms() - t0, (unsigned long long)(sa.dropped + sb.dropped),
		       (unsigned long long)(sa.retransmits + sb.retransmits),
		       (unsigned long long)(sa.duplicates + sb.duplicates));
	/* big replies lose fragments: only those are sent again */
	pn_set_handler(b, T_BIG, 0, h_big, NULL);
	uint64_t before = stats(b).retransmits;
	int good = 0;
	uint64_t n = 2u << 20;
	uint8_t *buf = malloc(n);
	for (int i = 0; i < 4; i++) {
		size_t got = 0;
		int rc = request(a, peer_of(a, b), T_BIG, &n, sizeof n, buf, n, &got, 30000);
		good += rc == 0 && got == n && pattern_ok(buf, n);
	}
	free(buf);
	uint64_t resent = stats(b).retransmits - before;
	CHECK(good == 4, "drop %.0f%%: %d of 4 replies of 2 MiB intact", rate * 100, good);
	/* 4 x 64 fragments; losing a fraction `rate` of them (and of the acks) resends about that
	 * many, never the whole message each time */
	CHECK(resent < 4 * 64, "drop %.0f%%: %llu fragments resent for 256 sent", rate * 100,
	      (unsigned long long)resent);
	if (getenv("TEST_PN_TIMES"))
		printf("drop %.0f%%: 2 MiB replies: %llu of 256 fragments resent\n", rate * 100,
		       (unsigned long long)resent);
	pn_finalize(a);
	pn_finalize(b);
}

static void test_drop_env(void)
{
	setenv("PN_DROP", "0.2", 1);
	struct pn *a = open_ep(NULL);
	unsetenv("PN_DROP");
	struct pn *b = open_ep(NULL);
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	int once = run_load(a, b, 2, 200, 4, 20000);
	CHECK(once == 200 && stats(a).dropped > 0 && stats(b).dropped == 0,
	      "PN_DROP=0.2 on one end: %d of 200 exactly once, %llu dropped there", once,
	      (unsigned long long)stats(a).dropped);
	pn_finalize(a);
	pn_finalize(b);
}

/* Through the proxy: counted packets, then reordering and duplication. */
static void test_proxy(void)
{
	struct pn *a = open_ep(NULL), *b = open_ep(NULL);
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	static struct proxy px;
	memset(&px, 0, sizeof px);
	int port = proxy_start(&px, a, b);
	if (port < 0) { CHECK(0, "proxy"); pn_finalize(a); pn_finalize(b); return; }
	char name[64];
	snprintf(name, sizeof name, "udp:127.0.0.1:%d", port);
	pn_peer pb;
	pn_peer_get(a, name, &pb);
	_Atomic int calls = 0;
	pn_set_handler(b, T_ECHO, PN_INLINE, h_echo, &calls);
	enum { N = 200 };
	int ok = 0;
	for (int i = 0; i < N; i++) {
		char buf[8];
		ok += request(a, pb, T_ECHO, &i, sizeof i, buf, sizeof buf, NULL, 5000) == 0;
	}
	usleep(20000);                  /* the last reply's ACK */
	unsigned data = px.n_data, acks = px.n_ack;
	uint64_t resent = stats(a).retransmits + stats(b).retransmits;
	/* the reply is the acknowledgement: one datagram each way per request (and whatever a
	 * timer resent, should this machine stall for an RTO), plus ACKs only when nothing flowed
	 * back within the ack delay (at least the last reply's) */
	CHECK(ok == N && calls == N && data == 2 * N + resent && acks >= 1 && acks <= N / 2,
	      "no loss: %d requests, %u DATA datagrams (want %d + %llu resent), %u ACKs", ok, data,
	      2 * N, (unsigned long long)resent, acks);

	/* reorder a datagram in three and duplicate one in five */
	px.reorder = 1;
	px.dup_every = 5;
	pn_set_handler(b, T_ECHO, 0, h_echo, &calls);
	calls = 0;
	ok = 0;
	for (int i = 0; i < N; i++) {
		char buf[8];
		ok += request(a, pb, T_ECHO, &i, sizeof i, buf, sizeof buf, NULL, 5000) == 0;
	}
	/* and big messages, reordered fragments */
	pn_set_handler(b, T_BIG, 0, h_big, NULL);
	uint64_t n = 1u << 20;
	uint8_t *buf = malloc(n);
	size_t got = 0;
	int rc = request(a, pb, T_BIG, &n, sizeof n, buf, n, &got, 10000);
	CHECK(rc == 0 && got == n && pattern_ok(buf, n), "1 MiB reply, reordered and duplicated: %d", rc);
	free(buf);
	struct pn_stats sa = stats(a), sb = stats(b);
	CHECK(ok == N && calls == N && sa.duplicates + sb.duplicates > 0,
	      "reordered and duplicated: %d answered, handler ran %d times, %llu duplicates suppressed",
	      ok, (int)calls, (unsigned long long)(sa.duplicates + sb.duplicates));
	proxy_stop(&px);
	pn_finalize(a);
	pn_finalize(b);
}

static void test_failures(void)
{
	struct pn_opts o = { .udp_max_wait_ms = 400, .udp_depth = 2, .send_timeout_ms = 300 };
	struct pn *a = open_ep(&o), *b = open_ep(&o);
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	pn_peer pb = peer_of(a, b);
	/* a silent handler: the Cooperation times out, yet the request was acknowledged */
	pn_set_handler(b, T_SILENT, 0, h_silent, NULL);
	char buf[8];
	int rc = request(a, pb, T_SILENT, "?", 1, buf, sizeof buf, NULL, 200);
	CHECK(rc == -PN_ETIMEDOUT, "silent peer: %d (%s)", rc, pn_strerror(rc));
	usleep(600000);
	CHECK(stats(a).returned == 0, "an unanswered but acknowledged request is not returned");

	/* the peer goes away: the request comes back PN_ERETURNED after udp_max_wait_ms */
	char bname[64];
	snprintf(bname, sizeof bname, "%s", pn_self(b, "udp"));
	pn_finalize(b);
	double t0 = now_ms();
	rc = request(a, pb, T_ECHO, "?", 1, buf, sizeof buf, NULL, 5000);
	double dt = now_ms() - t0;
	CHECK(rc == -PN_ERETURNED && dt >= 350 && dt < 1400,
	      "request to a finalized peer: %d (%s) after %.0f ms (max wait 400)", rc, pn_strerror(rc), dt);
	CHECK(stats(a).returned == 1, "returned counted: %llu", (unsigned long long)stats(a).returned);

	/* the window: D = 2 messages to a dead peer, the third send waits send_timeout_ms */
	CHECK(pn_send(a, pb, T_ECHO, 0, "1", 1) == 0 && pn_send(a, pb, T_ECHO, 0, "2", 1) == 0,
	      "two sends fill the window");
	t0 = now_ms();
	rc = pn_send(a, pb, T_ECHO, 0, "3", 1);
	dt = now_ms() - t0;
	CHECK(rc == -PN_ETIMEDOUT && dt >= 250 && dt < 1000, "third send: %d (%s) after %.0f ms",
	      rc, pn_strerror(rc), dt);
	usleep(500000);                 /* the two are returned, the window opens again */
	CHECK(stats(a).returned == 3, "returned: %llu", (unsigned long long)stats(a).returned);

	/* it comes back on the same port (a new session): requests go through again */
	const char *l[] = { bname };
	char err[200];
	b = pn_init(l, 1, &o, err, sizeof err);
	CHECK(b != NULL, "restart on %s: %s", bname, b ? "" : err);
	if (b) {
		_Atomic int calls = 0;
		pn_set_handler(b, T_ECHO, 0, h_echo, &calls);
		int ok = 0;
		for (int i = 0; i < 10; i++)
			ok += request(a, pb, T_ECHO, "back", 4, buf, sizeof buf, NULL, 5000) == 0;
		CHECK(ok == 10 && calls == 10, "after restart: %d of 10, handler ran %d times", ok, (int)calls);
	}
	pn_finalize(a);
	pn_finalize(b);
}

/* ---- hand-made datagrams ---- */

static void le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void le32(uint8_t *p, uint32_t v) { le16(p, (uint16_t)v); le16(p + 2, (uint16_t)(v >> 16)); }
static void le64(uint8_t *p, uint64_t v) { le32(p, (uint32_t)v); le32(p + 4, (uint32_t)(v >> 32)); }

/* UDP sub-header (48 bytes) + frame header (40 bytes), layout as in pn_udp.c and wire.c */
static size_t mk(uint8_t *o, uint8_t kind, uint32_t session, uint32_t frag, uint64_t seq,
                 uint64_t una, uint16_t type, uint32_t len, uint16_t origin_port)
{
	memset(o, 0, 88);
	le16(o, 0x5550);
	o[2] = 1;
	o[3] = kind;
	le32(o + 4, session);
	le32(o + 12, frag);
	le64(o + 16, seq);
	le64(o + 24, una);
	if (kind != 1)
		return 48;
	uint8_t *h = o + 48;
	le16(h, 0x4e50);
	h[2] = 1;
	h[3] = 1;                       /* PN_K_MSG */
	le16(h + 4, type);
	le32(h + 8, len);
	h[20] = 2;                      /* udp */
	h[21] = 4;
	le16(h + 22, htons(origin_port)); /* network order, stored as is */
	h[24] = 127;
	h[27] = 1;
	return 88;
}

static void test_malformed(void)
{
	struct pn_opts o = { .max_msg = 1 << 20 };
	struct pn *b = open_ep(&o), *a = open_ep(NULL);
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	_Atomic int calls = 0;
	pn_set_handler(b, T_ECHO, 0, h_echo, &calls);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port_of(b)) };
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	struct sockaddr_in me = sa;
	me.sin_port = 0;
	socklen_t ml = sizeof me;
	bind(fd, (struct sockaddr *)&me, sizeof me);
	getsockname(fd, (struct sockaddr *)&me, &ml);
	uint16_t myport = ntohs(me.sin_port);
	connect(fd, (struct sockaddr *)&sa, sizeof sa);

	static uint8_t d[70000];
	size_t n;
	int sent = 0;
#define SEND(len) do { if (send(fd, d, (len), 0) >= 0) sent++; } while (0)
	SEND(0);                                                     /* empty */
	memset(d, 'x', 100); SEND(1);                                /* one byte */
	SEND(47);                                                    /* just short of a header */
	n = mk(d, 1, 7, 0, 1, 1, T_ECHO, 1, myport); d[0] ^= 1; SEND(n + 1);       /* magic */
	n = mk(d, 1, 7, 0, 1, 1, T_ECHO, 1, myport); d[2] = 9; SEND(n + 1);        /* version */
	n = mk(d, 3, 7, 0, 0, 1, 0, 0, myport); SEND(n);                          /* kind */
	n = mk(d, 1, 0, 0, 1, 1, T_ECHO, 1, myport); SEND(n + 1);                  /* session 0 */
	n = mk(d, 2, 7, 0, 0, 1, 0, 0, myport); SEND(n + 5);                      /* ACK with a tail */
	n = mk(d, 2, 7, 0, 0, 0, 0, 0, myport); SEND(n);                          /* una 0 */
	n = mk(d, 1, 7, 0, 1, 1, T_ECHO, 1, myport); SEND(60);                     /* DATA cut short */
	n = mk(d, 1, 7, 0, 1, 1, T_ECHO, 1, myport); d[48] = 0; SEND(n + 1);       /* frame magic */
	n = mk(d, 1, 7, 0, 1, 1, 0, 1, myport); SEND(n + 1);                       /* type 0 */
	n = mk(d, 1, 7, 0, 1, 1, T_ECHO, 2u << 20, myport); SEND(n + 32768);       /* len > max_msg */
	n = mk(d, 1, 7, 0, 1, 1, T_ECHO, 0xffffffffu, myport); SEND(n);            /* len 4 GiB */
	n = mk(d, 1, 7, 0, 1, 1, T_ECHO, 5, myport); SEND(n + 4);                  /* length disagrees */
	n = mk(d, 1, 7, 0, 1, 1, T_ECHO, 5, myport); SEND(n + 6);                  /* ... both ways */
	n = mk(d, 1, 7, 3, 9, 1, T_ECHO, 40000, myport); SEND(n + 32768);          /* frag out of range */
	n = mk(d, 1, 7, 1, 9, 1, T_ECHO, 40000, myport); SEND(n + 100);            /* last frag too short */
	n = mk(d, 1, 7, 5, 5, 1, T_ECHO, 1 << 20, myport); SEND(n + 32768);        /* frag >= seq */
	n = mk(d, 1, 7, 0, 3, 5, T_ECHO, 1, myport); SEND(n + 1);                  /* seq < una */
	n = mk(d, 1, 7, 0, 1000, 1, T_ECHO, 1, myport); SEND(n + 1);               /* far past the window */
	memset(d, 0, sizeof d); SEND(65000);                                       /* big junk */
	/* two fragments of one message that disagree on its header */
	n = mk(d, 1, 7, 0, 2, 1, T_ECHO, 40000, myport); SEND(n + 32768);
	n = mk(d, 1, 7, 1, 3, 1, T_ECHO + 1, 40000, myport); SEND(n + 40000 - 32768);
	int bad_sent = sent - 1;        /* the first fragment above was fine */
	usleep(200000);
	struct pn_stats st = stats(b);
	CHECK(st.bad_frames == (uint64_t)bad_sent, "malformed datagrams counted: %llu of %d",
	      (unsigned long long)st.bad_frames, bad_sent);
	CHECK(calls == 0, "no handler ran for junk: %d", (int)calls);

	/* a valid hand-made request (seq 1 of a new session), sent three times: handled once,
	 * the duplicates acknowledged */
	n = mk(d, 1, 99, 0, 1, 1, T_ECHO, 2, myport);
	memcpy(d + n, "hi", 2);
	for (int i = 0; i < 3; i++)
		send(fd, d, n + 2, 0);
	int replies = 0, acks = 0;
	uint64_t acked = 0;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	double t0 = now_ms();
	while (now_ms() - t0 < 500 && poll(&pf, 1, 100) >= 0) {
		uint8_t r[200];
		ssize_t k = recv(fd, r, sizeof r, MSG_DONTWAIT);
		if (k < 48)
			continue;
		uint64_t ack = 0;
		for (int i = 7; i >= 0; i--)
			ack = ack << 8 | r[32 + i];
		if (r[3] == 1 && k == 88 + 2 && !memcmp(r + 88, "hi", 2))
			replies++;             /* the echo, sent to us (it will be resent: we never ack) */
		else if (r[3] == 2)
			acks++;
		if (ack > acked)
			acked = ack;
	}
	st = stats(b);
	CHECK(calls == 1 && replies >= 1 && acked == 2 && st.duplicates >= 2,
	      "hand-made request: handler ran %d times, %d replies, acked up to %llu, %llu duplicates",
	      (int)calls, replies, (unsigned long long)acked, (unsigned long long)st.duplicates);

	/* still serving a real endpoint */
	char buf[8];
	size_t got = 0;
	int rc = request(a, peer_of(a, b), T_ECHO, "still", 5, buf, sizeof buf, &got, 5000);
	CHECK(rc == 0 && got == 5, "still serving after junk: %d", rc);
	close(fd);
	pn_finalize(a);
	pn_finalize(b);
}


/* ---- admission: spoofed source addresses (pn.h, udp_max_peers) ---- */

/* admit: a message that starts with "key" (as arfd admits one carrying its secret) */
static int admit_key(void *arg, pn_peer from, pn_type type, const void *head, size_t n,
                     uint64_t len)
{
	return n >= 3 && !memcmp(head, "key", 3);
}

/* One hand-made request "hello" from a new source port, as a flood of forged source
 * addresses would come; the socket is closed at once (nobody acknowledges the reply). */
static void send_from_new_port(struct sockaddr_in *to, const char *what, size_t len,
                               uint32_t total)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return;
	struct sockaddr_in me = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &me.sin_addr);
	socklen_t ml = sizeof me;
	bind(fd, (struct sockaddr *)&me, sizeof me);
	getsockname(fd, (struct sockaddr *)&me, &ml);
	static uint8_t d[FLOOD_DGRAM];
	size_t n = mk(d, 1, 77, 0, 1, 1, T_ECHO, total, ntohs(me.sin_port));
	memcpy(d + n, what, len);
	sendto(fd, d, n + len, 0, (struct sockaddr *)to, sizeof *to);
	close(fd);
}

static void test_flood(void)
{
	enum { PRE = 32, MAX = 64, FLOOD = 2000 };
	struct pn_opts o = { .admit = admit_key, .udp_preauth_peers = PRE, .udp_max_peers = MAX,
	                     .udp_idle_ms = 100, .udp_max_wait_ms = 200 };
	struct pn *b = open_ep(&o);
	if (!b) { CHECK(0, "open"); return; }
	_Atomic int calls = 0;
	pn_set_handler(b, T_ECHO, PN_INLINE, h_echo, &calls);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port_of(b)) };
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);

	/* before admission a message over preauth_max (4096) is dropped, never acknowledged:
	 * here the first of two fragments of a 40000-byte message */
	static char big[32768];
	send_from_new_port(&sa, big, sizeof big, 40000);
	usleep(50000);
	struct pn_stats st = stats(b);
	CHECK(st.udp_refused == 1 && calls == 0, "a 40000-byte message before admission: refused "
	      "%llu, handler ran %d times", (unsigned long long)st.udp_refused, (int)calls);

	/* the flood: each forged sender gets a record while the unadmitted tier has room, and
	 * is refused after; retired ones stay counted through their quarantine (60 s) */
	for (int i = 0; i < FLOOD; i++)
		send_from_new_port(&sa, "hello", 5, 5);
	usleep(300000);
	st = stats(b);
	/* (loopback may drop a few of a burst of datagrams under load: most are refused) */
	CHECK(st.peers <= PRE + 1 && st.udp_refused >= FLOOD / 2,
	      "%d forged senders: %llu peer records (bound %d), %llu refused, %d handled",
	      FLOOD, (unsigned long long)st.peers, PRE + 1, (unsigned long long)st.udp_refused,
	      (int)calls);

	/* a real client whose request carries the key still gets in (admitted at once) */
	struct pn *a = open_ep(NULL), *c = open_ep(NULL);
	char buf[16];
	size_t got = 0;
	int rc = a ? request(a, peer_of(a, b), T_ECHO, "key:hi", 6, buf, sizeof buf, &got, 3000) : -1;
	CHECK(rc == 0 && got == 6, "during the flood, a request with the key is served: %d", rc);
	rc = a ? request(a, peer_of(a, b), T_ECHO, "more", 4, buf, sizeof buf, &got, 3000) : -1;
	CHECK(rc == 0 && got == 4, "... and its next one without: %d", rc);
	/* one without the key is not, while the forged ones fill the table (the price) */
	rc = c ? request(c, peer_of(c, b), T_ECHO, "hi", 2, buf, sizeof buf, &got, 300) : -1;
	CHECK(rc != 0, "a new sender without the key is refused while the table is full: %d", rc);
	usleep(300000);
	/* the client was quiet past udp_idle_ms: its peer was retired, and its next request
	 * (with the key, as every request of an arfd client over udp carries the secret) makes
	 * a new one, whose sequence numbers its client must not take for old ones */
	st = stats(b);
	uint64_t retired = st.peers_retired;
	rc = a ? request(a, peer_of(a, b), T_ECHO, "key:again", 9, buf, sizeof buf, &got, 3000) : -1;
	CHECK(rc == 0 && got == 9 && retired > 0, "the client comes back after its peer was "
	      "retired (%llu retired): %d", (unsigned long long)retired, rc);
	/* the admitted tier is bounded too (one who knows the key can fill it: then nobody
	 * new gets in until the quarantine ends): forged requests with the key from new ports */
	for (int i = 0; i < 4 * MAX; i++)
		send_from_new_port(&sa, "key", 3, 3);
	usleep(300000);
	st = stats(b);
	CHECK(st.peers <= PRE + MAX + 3, "%d more forged senders with the key: %llu peer records "
	      "(bound %d)", 4 * MAX, (unsigned long long)st.peers, PRE + MAX + 3);

	pn_finalize(c);
	pn_finalize(a);
	pn_finalize(b);
}

/* ---- proofs: the secret never crosses the wire (pn_udp.c, Identity) ---- */

enum { T_PROOF = T_COUNT + 1 };

/* reply with what the sender proved (enum pn_proof, one byte), then the request's bytes;
 * arg, if set, counts invocations */
static void h_proof(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                    size_t len, void *arg)
{
	if (arg)
		atomic_fetch_add((_Atomic int *)arg, 1);
	uint8_t out[64] = { (uint8_t)pn_peer_proof(pn, from) };
	size_t n = len < sizeof out - 1 ? len : sizeof out - 1;
	memcpy(out + 1, msg, n);
	pn_send(pn, from, T_REPLY, coop, out, n + 1);
}

static struct pn_opts keyed(const char *secret, const char *admin)
{
	struct pn_opts o = { .udp_max_wait_ms = 3000 };
	if (secret) {
		o.secret = secret;
		o.secret_len = strlen(secret);
	}
	if (admin) {
		o.admin_secret = admin;
		o.admin_secret_len = strlen(admin);
	}
	return o;
}

/* a's name for b through the proxy px (started here); PN_ANY on failure */
static pn_peer via_proxy(struct proxy *px, struct pn *a, struct pn *b)
{
	memset(px, 0, sizeof *px);
	int port = proxy_start(px, a, b);
	pn_peer p = PN_ANY;
	char name[64];
	snprintf(name, sizeof name, "udp:127.0.0.1:%d", port);
	if (port > 0)
		pn_peer_get(a, name, &p);
	return p;
}

/* One request T_PROOF: 0 and the proof the server saw in *proof, and its echo checked. */
static int proof_req(struct pn *a, pn_peer to, const char *what, int *proof, int timeout_ms)
{
	uint8_t buf[64];
	size_t got = 0, n = strlen(what);
	int rc = request(a, to, T_PROOF, what, n, buf, sizeof buf, &got, timeout_ms);
	if (rc == 0 && (got != n + 1 || memcmp(buf + 1, what, n)))
		rc = -PN_EPROTO;
	*proof = rc == 0 ? buf[0] : -1;
	return rc;
}

static bool seen(const struct proxy *px, const char *s)
{
	return s && px->cap_n && memmem(px->cap, px->cap_n, s, strlen(s));
}

static void test_proofs(void)
{
	static const struct {
		const char *what;
		const char *s_secret, *s_admin;     /* the server's */
		const char *c_secret, *c_admin;     /* the client's */
		int want;                           /* what the server's pn_peer_proof says */
		bool keyed;                         /* its datagrams carry MACs */
	} cases[] = {
		{ "the secret", "s3cret-A1", NULL, "s3cret-A1", NULL, PN_PROOF_SECRET, true },
		{ "the admin secret", "s3cret-A1", "adm1n-B2", NULL, "adm1n-B2", PN_PROOF_ADMIN, true },
		{ "the secret, to a server with both", "s3cret-A1", "adm1n-B2", "s3cret-A1", NULL,
		  PN_PROOF_SECRET, true },
		{ "the admin secret, to a server with it alone", NULL, "adm1n-B2", NULL, "adm1n-B2",
		  PN_PROOF_ADMIN, true },
		{ "a wrong secret", "s3cret-A1", NULL, "wr0ng-C3", NULL, PN_PROOF_NONE, false },
		{ "a wrong admin secret", "s3cret-A1", "adm1n-B2", NULL, "wr0ng-C3", PN_PROOF_NONE, false },
		{ "an admin secret to a server without one", "s3cret-A1", NULL, NULL, "adm1n-B2",
		  PN_PROOF_NONE, false },
		{ "a server without keys", NULL, NULL, "s3cret-A1", NULL, PN_PROOF_NONE, false },
		{ "a client without keys", "s3cret-A1", NULL, NULL, NULL, PN_PROOF_NONE, false },
		{ "no keys", NULL, NULL, NULL, NULL, PN_PROOF_NONE, false },
	};
	static struct proxy px;
	static uint8_t cap[4 << 20];
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct pn_opts so = keyed(cases[k].s_secret, cases[k].s_admin);
		struct pn_opts co = keyed(cases[k].c_secret, cases[k].c_admin);
		struct pn *a = open_ep(&co), *b = open_ep(&so);
		pn_peer pb = a && b ? via_proxy(&px, a, b) : PN_ANY;
		if (pb == PN_ANY) {
			CHECK(0, "%s: setup", cases[k].what);
			pn_finalize(a);
			pn_finalize(b);
			continue;
		}
		px.cap = cap;
		px.cap_max = sizeof cap;
		_Atomic int calls = 0;
		pn_set_handler(b, T_PROOF, 0, h_proof, &calls);
		pn_set_handler(b, T_BIG, 0, h_big, NULL);
		int ok = 0, right = 0, proof = -1;
		for (int i = 0; i < 5; i++) {
			char what[16];
			snprintf(what, sizeof what, "req %d", i);
			ok += proof_req(a, pb, what, &proof, 5000) == 0;
			right += proof == cases[k].want;
		}
		/* a reply of 100000 bytes: 4 fragments, each with its MAC when keyed */
		uint64_t n = 100000;
		static uint8_t big[100000];
		size_t got = 0;
		int rc = request(a, pb, T_BIG, &n, sizeof n, big, n, &got, 5000);
		usleep(20000);              /* the last acknowledgements */
		proxy_stop(&px);
		struct pn_stats sa = stats(a), sb = stats(b);
		CHECK(ok == 5 && right == 5 && calls == 5 && rc == 0 && got == n && pattern_ok(big, n),
		      "%s: %d of 5 answered, %d saw proof %d (last %d), handler ran %d times, "
		      "big reply %d", cases[k].what, ok, right, cases[k].want, proof, (int)calls, rc);
		/* a proof is HELLO, CHALLENGE and, when the client finds the server's proof right,
		 * AUTH (more when a slow machine makes HELLO go again); none without a key on the
		 * client */
		unsigned want_proof = cases[k].keyed ? 3 : cases[k].c_secret || cases[k].c_admin ? 2 : 0;
		CHECK((cases[k].keyed ? px.n_mac == px.n_data + px.n_ack : px.n_mac == 0) &&
		      (want_proof ? px.n_proof >= want_proof : px.n_proof == 0),
		      "%s: %u of %u DATA and ACK datagrams carry a MAC (want %s), %u of the proof "
		      "(want %u)", cases[k].what, px.n_mac, px.n_data + px.n_ack,
		      cases[k].keyed ? "all" : "none", px.n_proof, want_proof);
		CHECK(!seen(&px, cases[k].s_secret) && !seen(&px, cases[k].s_admin) &&
		      !seen(&px, cases[k].c_secret) && !seen(&px, cases[k].c_admin) && px.cap_n > 0,
		      "%s: no secret among the %zu bytes on the wire", cases[k].what, px.cap_n);
		CHECK(sa.udp_bad_macs == 0 && sb.udp_bad_macs == 0, "%s: bad MACs %llu %llu",
		      cases[k].what, (unsigned long long)sa.udp_bad_macs,
		      (unsigned long long)sb.udp_bad_macs);
		pn_finalize(a);
		pn_finalize(b);
	}

	/* the check can fail: a secret sent in a request, as libarc did over udp, is seen */
	struct pn *a = open_ep(NULL), *b = open_ep(NULL);
	pn_peer pb = a && b ? via_proxy(&px, a, b) : PN_ANY;
	int proof = -1, rc = -1;
	if (pb != PN_ANY) {
		px.cap = cap;
		px.cap_max = sizeof cap;
		pn_set_handler(b, T_PROOF, 0, h_proof, NULL);
		rc = proof_req(a, pb, "s3cret-A1", &proof, 5000);
		proxy_stop(&px);
	}
	CHECK(rc == 0 && seen(&px, "s3cret-A1"), "a secret in a request is seen on the wire: %d", rc);
	pn_finalize(a);
	pn_finalize(b);
}

/* b on name again, with the proof handler, held until it is set; NULL on failure */
static struct pn *reopen(const char *name, const struct pn_opts *o, _Atomic int *calls)
{
	struct pn_opts ho = *o;
	ho.hold = true;
	const char *l[] = { name };
	char err[200];
	struct pn *b = pn_init(l, 1, &ho, err, sizeof err);
	if (!b) {
		printf("pn_init %s: %s\n", name, err);
		return NULL;
	}
	pn_set_handler(b, T_PROOF, 0, h_proof, calls);
	pn_start(b);
	return b;
}

/* The server restarts (a new endpoint on the same port) with a request of ours in flight:
 * it cannot check our datagrams, says so, we prove again and the request completes.  And a
 * client whose proof nobody answers gives its messages up after udp_max_wait_ms. */
static void test_proof_restart(void)
{
	struct pn_opts o = keyed("s3cret-A1", NULL);
	struct pn *a = open_ep(&o), *b = open_ep(&o);
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	pn_set_handler(b, T_PROOF, 0, h_proof, NULL);
	pn_peer pb = peer_of(a, b);
	int proof = -1;
	int rc = proof_req(a, pb, "one", &proof, 3000);
	CHECK(rc == 0 && proof == PN_PROOF_SECRET, "before the restart: %d, proof %d", rc, proof);
	char name[64];
	snprintf(name, sizeof name, "%s", pn_self(b, "udp"));
	pn_finalize(b);
	uint8_t buf[64];
	struct pn_rcv_desc d = { .buf = buf, .cap = sizeof buf, .type = T_REPLY, .from = pb };
	pn_coop c = pn_coop_start(a, &d, 1);
	rc = pn_send(a, pb, T_PROOF, c, "two", 3);
	usleep(200000);                 /* it is resent meanwhile, to nobody */
	_Atomic int calls = 0;
	b = reopen(name, &o, &calls);
	int rc2 = pn_coop_end(a, c, 5000);
	CHECK(b && rc == 0 && rc2 == 0 && d.len == 4 && buf[0] == PN_PROOF_SECRET &&
	      !memcmp(buf + 1, "two", 3) && calls == 1,
	      "a request across the restart: %d %d (%s), %zu bytes, proof %d, handler ran %d times",
	      rc, rc2, pn_strerror(rc2), d.len, buf[0], (int)calls);
	CHECK(b && stats(b).udp_bad_macs >= 1, "the new server could not check the old "
	      "association's datagrams: %llu", b ? (unsigned long long)stats(b).udp_bad_macs : 0ull);
	rc = proof_req(a, pb, "three", &proof, 3000);
	CHECK(rc == 0 && proof == PN_PROOF_SECRET && calls == 2, "after: %d, proof %d", rc, proof);
	pn_finalize(b);
	pn_finalize(a);

	/* nobody answers the proof: the request is returned as any lost one */
	o.udp_max_wait_ms = 400;
	a = open_ep(&o);
	b = open_ep(NULL);
	if (!a || !b) { CHECK(0, "open"); pn_finalize(a); pn_finalize(b); return; }
	pb = peer_of(a, b);
	snprintf(name, sizeof name, "%s", pn_self(b, "udp"));
	pn_finalize(b);
	double t0 = now_ms();
	rc = proof_req(a, pb, "lost", &proof, 5000);
	double dt = now_ms() - t0;
	CHECK(rc == -PN_ERETURNED && dt >= 350 && dt < 1400,
	      "a proof nobody answers: %d (%s) after %.0f ms (max wait 400)", rc, pn_strerror(rc), dt);
	/* and once the server is there, the next send proves anew */
	calls = 0;
	b = reopen(name, &o, &calls);
	rc = proof_req(a, pb, "found", &proof, 3000);
	CHECK(b && rc == 0 && proof == PN_PROOF_SECRET && calls == 1, "then served: %d, proof %d",
	      rc, proof);
	pn_finalize(b);
	pn_finalize(a);
}

/* Datagrams changed on the way, replayed within their association and from an earlier one,
 * and forged from elsewhere: none runs a handler. */
static void test_proof_tamper(void)
{
	struct pn_opts o = keyed("s3cret-A1", NULL);
	struct pn *a = open_ep(&o), *b = open_ep(&o);
	static struct proxy px;
	pn_peer pb = a && b ? via_proxy(&px, a, b) : PN_ANY;
	if (pb == PN_ANY) { CHECK(0, "setup"); pn_finalize(a); pn_finalize(b); return; }
	_Atomic int calls = 0;
	pn_set_handler(b, T_PROOF, 0, h_proof, &calls);
	atomic_store(&px.keep_auth, 1);
	int proof = -1;
	int rc = proof_req(a, pb, "one", &proof, 3000);
	CHECK(rc == 0 && proof == PN_PROOF_SECRET && px.auth_len > 0,
	      "proved through the proxy: %d, proof %d", rc, proof);

	/* a byte changed: dropped and counted, its sender proves again and resends it (more
	 * bad MACs when the machine is slow: a retransmission under the old keys crossing the
	 * new proof) */
	atomic_store(&px.flip, 1);
	rc = proof_req(a, pb, "two, changed on the way", &proof, 5000);
	struct pn_stats sb = stats(b);
	CHECK(rc == 0 && calls == 2 && sb.udp_bad_macs >= 1 && atomic_load(&px.flip) == 0,
	      "a changed datagram: request %d, handler ran %d times, %llu bad MACs", rc,
	      (int)calls, (unsigned long long)sb.udp_bad_macs);

	/* the first association's AUTH replayed (its cookie still young): older than the
	 * association the changed datagram made, so it changes nothing */
	atomic_store(&px.replay_auth, 1);
	usleep(50000);
	rc = proof_req(a, pb, "after the old AUTH", &proof, 5000);
	CHECK(rc == 0 && calls == 3 && stats(b).udp_bad_macs == sb.udp_bad_macs,
	      "an older AUTH replayed: request %d, bad MACs %llu -> %llu", rc,
	      (unsigned long long)sb.udp_bad_macs, (unsigned long long)stats(b).udp_bad_macs);

	/* replayed within its association: a duplicate (its sequence number), not run again */
	atomic_store(&px.keep, 1);
	rc = proof_req(a, pb, "three, kept for a replay", &proof, 5000);
	uint64_t dups = stats(b).duplicates;
	atomic_store(&px.replay, 1);
	usleep(150000);
	CHECK(rc == 0 && px.kept_len > 0 && calls == 4 && stats(b).duplicates > dups,
	      "replayed in its association: handler ran %d times (want 4), duplicates %llu -> %llu",
	      (int)calls, (unsigned long long)dups, (unsigned long long)stats(b).duplicates);

	/* replayed to a new association (the server restarted; the client proved again) */
	char name[64];
	snprintf(name, sizeof name, "%s", pn_self(b, "udp"));
	pn_finalize(b);
	_Atomic int calls2 = 0;
	b = reopen(name, &o, &calls2);
	rc = b ? proof_req(a, pb, "four", &proof, 5000) : -1;
	uint64_t bad = b ? stats(b).udp_bad_macs : 0;
	atomic_store(&px.replay, 1);
	usleep(150000);
	CHECK(b && rc == 0 && calls2 == 1 && stats(b).udp_bad_macs >= bad + 1,
	      "replayed from an earlier association: %d, handler ran %d times (want 1), bad MACs "
	      "%llu -> %llu", rc, (int)calls2, (unsigned long long)bad,
	      b ? (unsigned long long)stats(b).udp_bad_macs : 0ull);
	rc = b ? proof_req(a, pb, "five", &proof, 5000) : -1;
	CHECK(rc == 0 && calls2 == 2 && proof == PN_PROOF_SECRET, "served after: %d", rc);

	/* the same datagram from another address: nobody's association, no peer made */
	uint64_t peers = b ? stats(b).peers : 0;
	bad = b ? stats(b).udp_bad_macs : 0;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = px.b;   /* b's address */
	if (fd >= 0)
		sendto(fd, px.kept, (size_t)px.kept_len, 0, (struct sockaddr *)&sa, sizeof sa);
	usleep(100000);
	CHECK(b && stats(b).peers == peers && stats(b).udp_bad_macs >= bad + 1 && calls2 == 2,
	      "the datagram from elsewhere: peers %llu -> %llu, bad MACs %llu",
	      (unsigned long long)peers, b ? (unsigned long long)stats(b).peers : 0ull,
	      b ? (unsigned long long)stats(b).udp_bad_macs : 0ull);
	if (fd >= 0)
		close(fd);
	proxy_stop(&px);
	pn_finalize(a);
	pn_finalize(b);
}

/* 20% of the datagrams lost on both ends, the proof's among them: new clients still prove
 * (HELLO resent; a lost AUTH costs a REPROVE and a second proof, the datagrams sent in
 * between counted as bad MACs) and every request of a keyed pair is handled and answered
 * exactly once. */
static void test_proof_drop(void)
{
	struct pn_opts o = keyed("s3cret-A1", NULL);
	o.drop_rate = 0.2;
	o.udp_max_wait_ms = 20000;
	struct pn *b = open_ep(&o);
	if (!b) { CHECK(0, "open"); return; }
	pn_set_handler(b, T_PROOF, 0, h_proof, NULL);
	int proven = 0;
	for (int i = 0; i < 10; i++) {
		struct pn *c = open_ep(&o);
		int proof = -1;
		proven += c && proof_req(c, peer_of(c, b), "lossy", &proof, 20000) == 0 &&
		          proof == PN_PROOF_SECRET;
		pn_finalize(c);
	}
	struct pn *a = open_ep(&o);
	int once = a ? run_load(a, b, 4, 1000, 4, 30000) : 0;
	struct pn_stats sa = a ? stats(a) : (struct pn_stats){ 0 }, sb = stats(b);
	CHECK(proven == 10 && once == 1000 && sa.dropped + sb.dropped > 0,
	      "20%% loss: %d of 10 clients proved, %d of 1000 keyed requests exactly once, %llu "
	      "dropped, %llu bad MACs", proven, once, (unsigned long long)(sa.dropped + sb.dropped),
	      (unsigned long long)(sa.udp_bad_macs + sb.udp_bad_macs));
	pn_finalize(a);
	pn_finalize(b);
}

/* Delegation among members that proved the cluster key to each other (no udp_trusted):
 * 0 -> 1 -> 2 -> 3, and 3 answers 0 directly; with another key at 3, 2's proof fails, 3
 * does not believe the origin 2 names and answers 2, so 0 gets nothing. */
static void test_proof_cluster(void)
{
	for (int other = 0; other < 2; other++) {
		struct pn *p[4] = { open_ep(NULL) };
		for (int i = 1; i < 4; i++) {
			const char *key = other && i == 3 ? "another-key" : "clu5ter-key";
			struct pn_opts o = { .cluster_key = key, .cluster_key_len = strlen(key) };
			p[i] = open_ep(&o);
		}
		if (!p[0] || !p[1] || !p[2] || !p[3]) {
			CHECK(0, "open");
			for (int i = 0; i < 4; i++) pn_finalize(p[i]);
			return;
		}
		char n2[64], n3[64];
		snprintf(n2, sizeof n2, "%s", pn_self(p[2], "udp"));
		snprintf(n3, sizeof n3, "%s", pn_self(p[3], "udp"));
		pn_set_handler(p[1], T_FWD, 0, h_fwd, n2);
		pn_set_handler(p[2], T_FWD, 0, h_fwd, n3);
		pn_set_handler(p[3], T_FWD, 0, h_echo, NULL);
		char buf[16] = { 0 };
		struct pn_rcv_desc d = { .buf = buf, .cap = sizeof buf, .type = T_REPLY, .from = PN_ANY };
		pn_coop c = pn_coop_start(p[0], &d, 1);
		int rc = pn_send(p[0], peer_of(p[0], p[1]), T_FWD, c, "deleg", 5);
		int rc2 = pn_coop_end(p[0], c, other ? 500 : 5000);
		if (!other)
			CHECK(rc == 0 && rc2 == 0 && d.len == 5 && !memcmp(buf, "deleg", 5) &&
			      !strcmp(pn_peer_name(p[0], d.got_from), pn_self(p[3], "udp")),
			      "members of one cluster key: the reply comes from the last: %d %d", rc, rc2);
		else
			CHECK(rc == 0 && rc2 == -PN_ETIMEDOUT, "the last with another key does not "
			      "believe the origin: %d %d (%s)", rc, rc2, pn_strerror(rc2));
		usleep(50000);
		uint64_t bad = 0;
		for (int i = 0; i < 4; i++)
			bad += stats(p[i]).udp_bad_macs;
		CHECK(bad == 0, "cluster key (%s): %llu bad MACs", other ? "another at 3" : "one",
		      (unsigned long long)bad);
		for (int i = 0; i < 4; i++)
			pn_finalize(p[i]);
	}
}

/* A hand-made HELLO (pn_udp.c: 48-byte sub-header, kind 3, then which key, a nonce, zeros) */
static size_t mk_hello(uint8_t *o, uint32_t session, uint8_t which, uint32_t nonce_seed)
{
	memset(o, 0, 48 + 97);
	le16(o, 0x5550);
	o[2] = 1;
	o[3] = 3;
	le32(o + 4, session);
	o[48] = which;
	for (int i = 0; i < 32; i++)
		o[49 + i] = (uint8_t)(nonce_seed * 31 + (uint32_t)i);
	return 48 + 97;
}

/* HELLOs from many source addresses: each is answered, and the server keeps nothing for
 * them; AUTHs with made-up cookies make nothing either.  A real client gets in meanwhile,
 * and also while forged plain requests fill the places of senders not yet admitted: its
 * proof admits it (as a request carrying the key would, test_flood). */
static void test_proof_flood(void)
{
	enum { FLOOD = 500, PRE = 8 };
	struct pn_opts o = keyed("s3cret-A1", NULL);
	o.admit = admit_key;
	o.udp_preauth_peers = PRE;
	struct pn *b = open_ep(&o);
	if (!b) { CHECK(0, "open"); return; }
	pn_set_handler(b, T_PROOF, 0, h_proof, NULL);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port_of(b)) };
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	uint64_t peers = stats(b).peers;
	int answered = 0;
	for (int i = 0; i < FLOOD; i++) {
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0)
			continue;
		uint8_t d[200];
		size_t n = mk_hello(d, 1000u + (uint32_t)i, 1, (uint32_t)i);
		sendto(fd, d, n, 0, (struct sockaddr *)&sa, sizeof sa);
		if (i < 5) {               /* the first few wait for their CHALLENGE */
			struct pollfd pf = { .fd = fd, .events = POLLIN };
			if (poll(&pf, 1, 1000) == 1 && recv(fd, d, sizeof d, 0) == 48 + 96 && d[3] == 4)
				answered++;
			/* an AUTH with its nonce and a made-up proof */
			uint8_t auth[48 + 97];
			memcpy(auth, d, 48);
			auth[3] = 5;
			le32(auth + 4, 1000u + (uint32_t)i);
			le32(auth + 8, 0);
			auth[48] = 1;
			memcpy(auth + 49, d + 48, 64);   /* nc and na, as the CHALLENGE gave them */
			memset(auth + 49 + 64, 0x5a, 32);
			sendto(fd, auth, sizeof auth, 0, (struct sockaddr *)&sa, sizeof sa);
		}
		close(fd);
	}
	usleep(200000);
	struct pn_stats st = stats(b);
	CHECK(answered == 5 && st.peers == peers && st.udp_bad_macs == 5,
	      "%d HELLOs from as many addresses: %d of 5 answered, peers %llu -> %llu, "
	      "%llu bad AUTHs", FLOOD, answered, (unsigned long long)peers,
	      (unsigned long long)st.peers, (unsigned long long)st.udp_bad_macs);
	struct pn *a = open_ep(&o);
	int proof = -1;
	int rc = a ? proof_req(a, peer_of(a, b), "real", &proof, 3000) : -1;
	CHECK(rc == 0 && proof == PN_PROOF_SECRET && stats(b).peers == peers + 1,
	      "a real client after the flood: %d, proof %d", rc, proof);
	for (int i = 0; i < 4 * PRE; i++)
		send_from_new_port(&sa, "hello", 5, 5);
	usleep(100000);
	st = stats(b);
	struct pn_opts none = { .udp_max_wait_ms = 300 };
	struct pn *c = open_ep(&o), *d = open_ep(&none);
	rc = c ? proof_req(c, peer_of(c, b), "proved", &proof, 3000) : -1;
	int rc2 = d ? proof_req(d, peer_of(d, b), "plain", &proof, 300) : -1;
	CHECK(st.udp_refused >= 2 * PRE && rc == 0 && rc2 != 0, "%d forged senders fill the %d "
	      "places (%llu refused): a client that proves is served (%d), one without is not (%d)",
	      4 * PRE, PRE, (unsigned long long)st.udp_refused, rc, rc2);
	pn_finalize(d);
	pn_finalize(c);
	pn_finalize(a);
	pn_finalize(b);
}

int main(void)
{
	static const struct { void (*fn)(void); const char *name; } tests[] = {
		{ test_request_reply, "request_reply" }, { test_sizes, "sizes" },
		{ test_self_and_v6, "self_and_v6" },
		{ test_delegation, "delegation" }, { test_scatter_gather, "scatter_gather" },
		{ test_concurrent, "concurrent" }, { test_proxy, "proxy" },
		{ test_failures, "failures" }, { test_malformed, "malformed" },
		{ test_drop_env, "drop_env" }, { test_flood, "flood" },
		{ test_proofs, "proofs" }, { test_proof_restart, "proof_restart" },
		{ test_proof_tamper, "proof_tamper" }, { test_proof_flood, "proof_flood" },
		{ test_proof_drop, "proof_drop" }, { test_proof_cluster, "proof_cluster" },
	};
	for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
		double t0 = now_ms();
		tests[t].fn();
		if (getenv("TEST_PN_TIMES"))
			printf("%s: %.0f ms\n", tests[t].name, now_ms() - t0);
	}
	test_drop(0.10);
	test_drop(0.30);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
