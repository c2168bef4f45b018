/* bench_tls.c: what authentication and tls: cost, through libarc against arfd on loopback:
 * a null EXEC one at a time (the round trip), and READs of 64 MiB (bulk throughput).  Three
 * ways, each a client of its own:
 *   plain   tcp: to an arfd without a secret (no proof, no rights check per request);
 *   secret  tcp: to an arfd with --secret: the HMAC challenge-response when the connection
 *           opens, the rights check (pn_peer_proof) on every request after it;
 *   tls     tls: to that same arfd, the secret proved inside TLS 1.3.
 * They take turns, who goes first rotating, so every ratio printed is against plain from
 * the same run: secret/plain is the cost of the identity checks on the normal path.  Round
 * trips on a shared 2-CPU machine vary by more than that cost, so with --pids (each way's
 * arfd) the server's CPU time per null EXEC is measured too (the sum of its threads'
 * run time from /proc/PID/task/N/schedstat, in ns, around each turn of EXECs): what the
 * checks add to a request's work, whatever the scheduler does.
 *
 *   bench_tls PLAIN_EP SECRET_EP TLS_EP SECRET NULL.pno [--rounds R] [--n N] [--reads K]
 *             [--pids P1,P2,P3]
 *   bench_tls --execs N EP SECRET|- NULL.pno
 * run.sh makes the certificates, starts three arfds and runs this several times.  The
 * second form only sends N null EXECs to one endpoint (with the secret, or none for -), for
 * instr.sh, which counts the instructions arfd spends on them.
 */
#include <dirent.h>
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

/* The run time of all of process pid's threads so far, in ns (0 when unknown). */
static double cpu_ns(long pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/task", pid);
	DIR *d = pid > 0 ? opendir(path) : NULL;
	if (!d)
		return 0;
	double sum = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char f[300];
		snprintf(f, sizeof f, "/proc/%ld/task/%s/schedstat", pid, e->d_name);
		FILE *fp = fopen(f, "r");
		unsigned long long ns = 0;
		if (fp && fscanf(fp, "%llu", &ns) == 1)
			sum += (double)ns;
		if (fp)
			fclose(fp);
	}
	closedir(d);
	return sum;
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

/* The null segment at path, its length and id. */
static void *load_segment(const char *path, size_t *len, uint8_t id[ISA_ID_LEN])
{
	void *seg;
	if (isa_read_file(path, &seg, len) != 0)
		die(path, "cannot read");
	isa_seg_id(seg, *len, id);
	return seg;
}

/* bench_tls --execs N EP SECRET|- NULL.pno: N null EXECs, one at a time, and nothing else. */
static int execs_only(int argc, char **argv)
{
	unsigned long n = argc == 6 ? strtoul(argv[2], NULL, 10) : 0;
	if (!n || n > 10000000)
		die("usage", "bench_tls --execs N(1..10000000) EP SECRET|- NULL.pno");
	size_t seg_len;
	uint8_t id[ISA_ID_LEN];
	void *seg = load_segment(argv[5], &seg_len, id);
	char err[512];
	struct arc_opts o = { .timeout_ms = 600000, .secret = strcmp(argv[4], "-") ? argv[4] : NULL };
	struct arc *a = arc_connect(argv[3], &o, err, sizeof err);
	if (!a)
		die("arc_connect", err);
	struct arc_exec x = { .seg = seg, .seg_len = seg_len, .seg_id = id };
	for (unsigned long i = 0; i < n; i++) {
		int rc = arc_exec(a, &x);
		free(x.out);
		x.out = NULL;
		if (rc != 0)
			die("null EXEC", arc_errmsg(a));
	}
	arc_close(a);
	free(seg);
	return 0;
}

#define WAYS 3

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--execs"))
		return execs_only(argc, argv);
	if (argc < 6)
		die("usage", "bench_tls PLAIN_EP SECRET_EP TLS_EP SECRET NULL.pno [--rounds R] [--n N] "
		    "[--reads K]");
	unsigned rounds = 10, n = 2000, k = 4;
	long pid[WAYS] = { 0 };
	for (int i = 6; i + 1 < argc; i += 2) {
		unsigned v = (unsigned)strtoul(argv[i + 1], NULL, 10);
		if (!strcmp(argv[i], "--pids")) {
			if (sscanf(argv[i + 1], "%ld,%ld,%ld", &pid[0], &pid[1], &pid[2]) != WAYS)
				die("--pids", "three process ids, P1,P2,P3");
		} else if (!strcmp(argv[i], "--rounds")) rounds = v;
		else if (!strcmp(argv[i], "--n")) n = v;
		else if (!strcmp(argv[i], "--reads")) k = v;
		else die("unknown option", argv[i]);
	}
	if (!rounds || !n || !k || rounds > 1000 || n > 1000000 || k > 100)
		die("options", "--rounds 1..1000, --n 1..1000000, --reads 1..100");
	size_t seg_len;
	uint8_t id[ISA_ID_LEN];
	void *seg = load_segment(argv[5], &seg_len, id);
	const char *name[WAYS] = { "plain", "secret", "tls" };
	struct arc *a[WAYS];
	for (int t = 0; t < WAYS; t++) {
		char err[512];
		struct arc_opts o = { .timeout_ms = 60000, .secret = t ? argv[4] : NULL };
		if (!(a[t] = arc_connect(argv[1 + t], &o, err, sizeof err)))
			die("arc_connect", err);
	}
	double *lat = malloc(n * sizeof *lat), *mibs = malloc(k * sizeof *mibs);
	double *ex[WAYS], *rd[WAYS], *cpu[WAYS];
	void *buf = malloc(READ_LEN);
	if (!lat || !mibs || !buf)
		die("malloc", "out of memory");
	for (int t = 0; t < WAYS; t++)
		if (!(ex[t] = calloc(rounds, sizeof **ex)) || !(rd[t] = calloc(rounds, sizeof **rd)) ||
		    !(cpu[t] = calloc(rounds, sizeof **cpu)))
			die("malloc", "out of memory");
	struct arc_exec x = { .seg = seg, .seg_len = seg_len, .seg_id = id };
	for (int t = 0; t < WAYS; t++) {  /* warm: connections, sessions, the code cache */
		exec_turn(a[t], &x, n / 10 + 1, lat);
		read_turn(a[t], buf, 1, mibs);
	}
	printf("round  exec_us(plain secret tls; secret/plain tls/plain)  "
	       "read_MiB/s(plain secret tls; secret/plain tls/plain)\n");
	for (unsigned r = 0; r < rounds; r++) {
		for (int j = 0; j < WAYS; j++) {
			int t = (int)((r + (unsigned)j) % WAYS);   /* who goes first rotates */
			double c0 = cpu_ns(pid[t]);
			ex[t][r] = exec_turn(a[t], &x, n, lat);
			cpu[t][r] = (cpu_ns(pid[t]) - c0) / 1000.0 / n;   /* us per EXEC */
			rd[t][r] = read_turn(a[t], buf, k, mibs);
		}
		printf("%5u  %7.1f %7.1f %7.1f %5.3fx %5.2fx   %7.0f %7.0f %7.0f %5.3fx %5.2fx\n", r,
		       ex[0][r], ex[1][r], ex[2][r], ex[1][r] / ex[0][r], ex[2][r] / ex[0][r],
		       rd[0][r], rd[1][r], rd[2][r], rd[1][r] / rd[0][r], rd[2][r] / rd[0][r]);
	}
	/* per way: the median of its turns, and the median of its turns' ratios to plain */
	static double exr[1000], rdr[1000];
	for (int t = 0; t < WAYS; t++) {
		for (unsigned r = 0; r < rounds; r++) {
			exr[r] = ex[t][r] / ex[0][r];
			rdr[r] = rd[t][r] / rd[0][r];
		}
		double em = median(exr, rounds), rm = median(rdr, rounds);
		printf("%-6s null EXEC %.1f us (%.3fx plain, turns %.2fx..%.2fx); READ 64 MiB %.0f "
		       "MiB/s (%.3fx plain, turns %.2fx..%.2fx)\n", name[t], median(ex[t], rounds),
		       em, exr[0], exr[rounds - 1], median(rd[t], rounds), rm, rdr[0],
		       rdr[rounds - 1]);
	}
	for (int t = 0; pid[0] && t < WAYS; t++) {
		for (unsigned r = 0; r < rounds; r++)
			exr[r] = cpu[t][r] / cpu[0][r];
		double em = median(exr, rounds);
		printf("%-6s arfd CPU per null EXEC %.2f us (%.3fx plain, turns %.2fx..%.2fx)\n",
		       name[t], median(cpu[t], rounds), em, exr[0], exr[rounds - 1]);
	}
	for (int t = 0; t < WAYS; t++)
		arc_close(a[t]);
	return 0;
}
