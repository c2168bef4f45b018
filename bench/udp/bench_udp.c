/* bench_udp.c: what the udp proof costs (docs/net.md, "Identity and trust", over udp): a null
 * round trip (8-byte request, 8-byte reply, inline handler) between two Paradis-Net udp:
 * endpoints on loopback, in one process, over a pair without keys (plain datagrams, as
 * before) and a pair that proved a secret (every datagram MACed).  The two pairs take
 * turns, alternating which goes first, so every ratio printed is keyed over plain from the
 * same run.
 *
 *   bench_udp [--rounds R] [--n N]
 * Prints one line per round and a summary line; no pass/fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pn.h"

enum { T_PING = 1, T_PONG };

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_udp: %s: %s\n", what, why);
	exit(1);
}

static void h_ping(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                   size_t len, void *arg)
{
	pn_send(pn, from, T_PONG, coop, msg, len);
}

struct pair {
	struct pn *client, *server;
	pn_peer to;
};

static void pair_open(struct pair *p, const char *secret)
{
	struct pn_opts o = { .n_workers = 1 };
	if (secret) {
		o.secret = secret;
		o.secret_len = strlen(secret);
	}
	const char *l[] = { "udp:127.0.0.1:0" };
	char err[256];
	if (!(p->server = pn_init(l, 1, &o, err, sizeof err)) ||
	    !(p->client = pn_init(l, 1, &o, err, sizeof err)))
		die("pn_init", err);
	pn_set_handler(p->server, T_PING, PN_INLINE, h_ping, NULL);
	if (pn_peer_get(p->client, pn_self(p->server, "udp"), &p->to) != 0)
		die("pn_peer_get", pn_self(p->server, "udp"));
}

/* One turn of n round trips: the median in us. */
static double turn(struct pair *p, unsigned n, double *lat)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = i, r = 0;
		struct pn_rcv_desc d = { .buf = &r, .cap = sizeof r, .type = T_PONG, .from = p->to };
		double t0 = now_s();
		pn_coop c = pn_coop_start(p->client, &d, 1);
		int rc = pn_send(p->client, p->to, T_PING, c, &v, sizeof v);
		int rc2 = pn_coop_end(p->client, c, 5000);
		lat[i] = (now_s() - t0) * 1e6;
		if (rc || rc2 || r != v)
			die("round trip", pn_strerror(rc ? rc : rc2));
	}
	return median(lat, n);
}

int main(int argc, char **argv)
{
	unsigned rounds = 10, n = 5000;
	for (int i = 1; i + 1 < argc; i += 2) {
		unsigned v = (unsigned)strtoul(argv[i + 1], NULL, 10);
		if (!strcmp(argv[i], "--rounds")) rounds = v;
		else if (!strcmp(argv[i], "--n")) n = v;
		else die("unknown option", argv[i]);
	}
	if (!rounds || !n || rounds > 1000 || n > 1000000)
		die("options", "--rounds 1..1000, --n 1..1000000");
	struct pair p[2];
	pair_open(&p[0], NULL);
	pair_open(&p[1], "bench-secret-5a1f");
	double *lat = malloc(n * sizeof *lat), *rt[2], ratio[1000];
	rt[0] = calloc(rounds, sizeof *rt[0]);
	rt[1] = calloc(rounds, sizeof *rt[1]);
	if (!lat || !rt[0] || !rt[1])
		die("malloc", "out of memory");
	for (int t = 0; t < 2; t++)     /* warm: the proof, the RTO estimate, buffers */
		turn(&p[t], n / 10 + 1, lat);
	struct pn_stats st;
	pn_stats_get(p[1].server, &st);
	printf("round  rtt_us(plain keyed ratio)\n");
	for (unsigned r = 0; r < rounds; r++) {
		for (int j = 0; j < 2; j++) {
			int t = (int)((r + (unsigned)j) % 2);   /* who goes first alternates */
			rt[t][r] = turn(&p[t], n, lat);
		}
		ratio[r] = rt[1][r] / rt[0][r];
		printf("%5u  %7.1f %7.1f %5.2fx\n", r, rt[0][r], rt[1][r], ratio[r]);
	}
	double m0 = median(rt[0], rounds), m1 = median(rt[1], rounds), mr = median(ratio, rounds);
	printf("udp null round trip, median of %u turns of %u: plain %.1f us, keyed %.1f us; "
	       "keyed/plain %.2fx (turns %.2fx..%.2fx)\n", rounds, n, m0, m1, mr, ratio[0],
	       ratio[rounds - 1]);
	pn_stats_get(p[1].server, &st);
	printf("keyed server: %llu bad MACs, %llu retransmits\n",
	       (unsigned long long)st.udp_bad_macs, (unsigned long long)st.retransmits);
	for (int t = 0; t < 2; t++) {
		pn_finalize(p[t].client);
		pn_finalize(p[t].server);
	}
	free(lat);
	return 0;
}
