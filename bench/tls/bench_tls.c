/* bench_tls.c: what tls: costs against tcp: (docs/net.md, "TLS"), through libarc against one
 * arfd listening on both, on loopback: a null EXEC one at a time (the round trip), and READs
 * of 64 MiB (bulk throughput: encryption and decryption of every byte, plus the copy out of
 * OpenSSL's buffers that plain tcp does not make).  The two take turns, alternating which
 * goes first, so every ratio printed is tls over tcp from the same run.
 *
 *   bench_tls TCP_EP TLS_EP NULL.pno [--rounds R] [--n N] [--reads K]
 * run.sh makes the certificates, starts arfd and runs this several times.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arc.h"
#include "isa.h"

#define READ_LEN (64u << 20)

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
	fprintf(stderr, "bench_tls: %s: %s\n", what, why);
	exit(1);
}

/* One turn of n null EXECs: the median round trip in us. */
static double exec_turn(struct arc *a, struct arc_exec *x, unsigned n, double *lat)
{
	for (unsigned i = 0; i < n; i++) {
		double t0 = now_s();
		int rc = arc_exec(a, x);
		lat[i] = (now_s() - t0) * 1e6;
		free(x->out);
		x->out = NULL;
		if (rc != 0)
			die("null EXEC", arc_errmsg(a));
	}
	return median(lat, n);
}

/* One turn of k READs of 64 MiB: the median throughput in MiB/s. */
static double read_turn(struct arc *a, void *buf, unsigned k, double *mibs)
{
	for (unsigned i = 0; i < k; i++) {
		double t0 = now_s();
		if (arc_read(a, "mem", 0, buf, READ_LEN) != 0)
			die("READ", arc_errmsg(a));
		mibs[i] = (READ_LEN / 1048576.0) / (now_s() - t0);
	}
	return median(mibs, k);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		die("usage", "bench_tls TCP_EP TLS_EP NULL.pno [--rounds R] [--n N] [--reads K]");
	unsigned rounds = 10, n = 2000, k = 4;
	for (int i = 4; i + 1 < argc; i += 2) {
		unsigned v = (unsigned)strtoul(argv[i + 1], NULL, 10);
		if (!strcmp(argv[i], "--rounds")) rounds = v;
		else if (!strcmp(argv[i], "--n")) n = v;
		else if (!strcmp(argv[i], "--reads")) k = v;
		else die("unknown option", argv[i]);
	}
	if (!rounds || !n || !k || rounds > 1000 || n > 1000000 || k > 100)
		die("options", "--rounds 1..1000, --n 1..1000000, --reads 1..100");
	void *seg;
	size_t seg_len;
	if (isa_read_file(argv[3], &seg, &seg_len) != 0)
		die(argv[3], "cannot read");
	uint8_t id[ISA_ID_LEN];
	isa_seg_id(seg, seg_len, id);
	const char *name[2] = { "tcp", "tls" };
	struct arc *a[2];
	for (int t = 0; t < 2; t++) {
		char err[512];
		struct arc_opts o = { .timeout_ms = 60000 };
		if (!(a[t] = arc_connect(argv[1 + t], &o, err, sizeof err)))
			die("arc_connect", err);
	}
	double *lat = malloc(n * sizeof *lat), *mibs = malloc(k * sizeof *mibs);
	double *ex[2], *rd[2];
	void *buf = malloc(READ_LEN);
	for (int t = 0; t < 2; t++) {
		ex[t] = calloc(rounds, sizeof **ex);
		rd[t] = calloc(rounds, sizeof **rd);
	}
	if (!lat || !mibs || !buf || !ex[0] || !ex[1] || !rd[0] || !rd[1])
		die("malloc", "out of memory");
	struct arc_exec x = { .seg = seg, .seg_len = seg_len, .seg_id = id };
	for (int t = 0; t < 2; t++) {  /* warm: connections, sessions, the code cache */
		exec_turn(a[t], &x, n / 10 + 1, lat);
		read_turn(a[t], buf, 1, mibs);
	}
	printf("round  exec_us(tcp tls ratio)  read_MiB/s(tcp tls ratio)\n");
	for (unsigned r = 0; r < rounds; r++) {
		for (int j = 0; j < 2; j++) {
			int t = (int)((r + (unsigned)j) % 2);   /* who goes first alternates */
			ex[t][r] = exec_turn(a[t], &x, n, lat);
			rd[t][r] = read_turn(a[t], buf, k, mibs);
		}
		printf("%5u  %7.1f %7.1f %5.2fx   %7.0f %7.0f %5.2fx\n", r, ex[0][r], ex[1][r],
		       ex[1][r] / ex[0][r], rd[0][r], rd[1][r], rd[1][r] / rd[0][r]);
	}
	double exr[1000], rdr[1000];
	for (unsigned r = 0; r < rounds; r++) {
		exr[r] = ex[1][r] / ex[0][r];
		rdr[r] = rd[1][r] / rd[0][r];
	}
	double e0 = median(ex[0], rounds), e1 = median(ex[1], rounds);
	double r0 = median(rd[0], rounds), r1 = median(rd[1], rounds);
	double exm = median(exr, rounds), rdm = median(rdr, rounds);
	printf("null EXEC round trip, median of %u turns of %u: %s %.1f us, %s %.1f us; "
	       "tls/tcp %.2fx (turns %.2fx..%.2fx)\n", rounds, n, name[0], e0, name[1], e1, exm,
	       exr[0], exr[rounds - 1]);
	printf("READ 64 MiB, median of %u turns of %u: %s %.0f MiB/s, %s %.0f MiB/s; "
	       "tls/tcp %.2fx (turns %.2fx..%.2fx)\n", rounds, k, name[0], r0, name[1], r1, rdm,
	       rdr[0], rdr[rounds - 1]);
	for (int t = 0; t < 2; t++)
		arc_close(a[t]);
	return 0;
}
