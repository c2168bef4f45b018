/* bench_rdma.c: Paradis-Net's rdma: transport beside perftest on the same RDMA device, in the
 * same run: request/reply latency against ib_send_lat and ib_write_lat, one-sided
 * pn_mem_read/pn_mem_write against ib_read_lat/ib_write_lat and ib_read_bw/ib_write_bw, and
 * large replies (written into the requester's memory) against ib_write_bw.
 *
 * Layout: the pn server is a child forked before the client opens its endpoint (so it inherits
 * no threads); it echoes small requests, answers a size with a reply of that many bytes, and
 * exports a region for one-sided access.  perftest's server and client are spawned per
 * measurement on the same address.  Each repetition measures every row once with perftest and
 * once with pn, alternating; a row's ratio is pn's median over perftest's median, with the
 * spread of the per-repetition ratios beside it.  Soft-RoCE in a guest is slow and noisy, so
 * only the ratios mean something, and only within one run (one guest boot).  Results go to
 * stdout and DIR/rdma.{txt,csv} plus rdma-reps.csv (--quick: *.tmp names).
 *
 *   bench_rdma --host IP --dev DEV [--quick] [--reps N] [--only ROW] [--results DIR]
 * --only: the rows of one experiment (reqrep, read, write or reply), e.g. to look into one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pn.h"

extern char **environ;

enum { T_ECHO = 1, T_BIG, T_REPLY };

#define MAX_REPLY   (64u << 20)         /* largest reply, and the exported region's size */
#define CALL_MS     60000               /* one request or operation may take this long */
#define MAX_REPS    16
#define PT_TIMEOUT  "120"               /* seconds a perftest process may live */

/* Everything that differs between a real run and a --quick smoke run. */
struct plan {
	unsigned reps;              /* perftest and pn take turns this many times per row */
	unsigned lat_n;             /* round trips per latency measurement */
	unsigned bw_mib_n;          /* 1 MiB transfers per bandwidth measurement */
	unsigned bw_big_n;          /* 64 MiB transfers (perftest needs at least 5) */
	unsigned budget_s;          /* the whole program is killed after this */
};
static const struct plan full = { 5, 1000, 30, 5, 1500 };
static const struct plan quick = { 1, 200, 10, 5, 400 };

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench_rdma: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median of n values (sorts them); -1 when there are none. */
static double median(double *v, unsigned n)
{
	if (n == 0)
		return -1;
	qsort(v, n, sizeof *v, cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ==== the pn server (child process) ==== */

static uint8_t *big;                   /* the server's reply source, MAX_REPLY bytes */

/* Small request: the reply is the request itself (depth-1 ping-pong). */
static void h_echo(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                   size_t len, void *arg)
{
	pn_send(pn, from, T_REPLY, coop, msg, len);
}

/* The request is a u64 size; the reply is that many bytes.  Not PN_INLINE: a 64 MiB reply
 * waits for its write to complete, which an inline handler must not do on the I/O thread. */
static void h_big(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                  size_t len, void *arg)
{
	uint64_t n = 0;
	if (len == sizeof n)
		memcpy(&n, msg, sizeof n);
	pn_send(pn, from, T_REPLY, coop, big, n <= MAX_REPLY ? n : 0);
}

/* Protocol with the parent over fd out: one line "OK <pn name> <handle in hex>" or
 * "ERR <message>"; then run until fd ctl reaches EOF (the parent closed it or died). */
static void server_main(const char *host, int ctl, int out, unsigned budget_s)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);  /* never outlive the parent */
	alarm(budget_s);
	FILE *f = fdopen(out, "w");
	char name[96], err[256];
	snprintf(name, sizeof name, "rdma:%s:0", host);
	const char *l[] = { name };
	struct pn_opts o = { .n_workers = 2 };
	struct pn *pn = pn_init(l, 1, &o, err, sizeof err);
	uint8_t *region = malloc(MAX_REPLY);
	big = malloc(MAX_REPLY);
	if (!pn || !region || !big) {
		fprintf(f, "ERR %s\n", pn ? "out of memory" : err);
		fflush(f);
		_exit(1);
	}
	memset(big, 0x5a, MAX_REPLY);      /* touched, so no page is faulted in while measured */
	memset(region, 0xa5, MAX_REPLY);
	struct pn_mem *mem;
	uint8_t h[PN_MEM_HANDLE_LEN];
	int rc = pn_mem_export(pn, region, MAX_REPLY, PN_MEM_READ | PN_MEM_WRITE, &mem, h);
	if (rc) {
		fprintf(f, "ERR pn_mem_export: %s\n", pn_strerror(rc));
		fflush(f);
		_exit(1);
	}
	pn_set_handler(pn, T_ECHO, PN_INLINE, h_echo, NULL);
	pn_set_handler(pn, T_BIG, 0, h_big, NULL);
	fprintf(f, "OK %s ", pn_self(pn, "rdma"));
	for (int i = 0; i < PN_MEM_HANDLE_LEN; i++)
		fprintf(f, "%02x", h[i]);
	fprintf(f, "\n");
	fclose(f);
	char c;
	ssize_t r;
	while ((r = read(ctl, &c, 1)) > 0 || (r < 0 && errno == EINTR))
		;
	pn_mem_unexport(pn, mem);
	pn_finalize(pn);
	_exit(0);
}

/* Fork the server; returns its pid, fills its name and handle, and *ctl (close it to stop). */
static pid_t server_start(const char *host, unsigned budget_s, char *name, size_t name_len,
                          uint8_t handle[PN_MEM_HANDLE_LEN], int *ctl)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
		die("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(in[1]);
		close(out[0]);
		server_main(host, in[0], out[1], budget_s);
	}
	close(in[0]);
	close(out[1]);
	char line[512];
	size_t got = 0;
	struct pollfd p = { .fd = out[0], .events = POLLIN };
	while (got < sizeof line - 1 && (got == 0 || line[got - 1] != '\n')) {
		if (poll(&p, 1, 10000) <= 0)
			break;
		ssize_t r = read(out[0], line + got, sizeof line - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(out[0]);
	line[got] = 0;
	line[strcspn(line, "\n")] = 0;
	char hex[2 * PN_MEM_HANDLE_LEN + 1] = "", fmt[32];
	snprintf(fmt, sizeof fmt, "OK %%%zus %%%ds", name_len - 1, 2 * PN_MEM_HANDLE_LEN);
	if (sscanf(line, fmt, name, hex) != 2 || strlen(hex) != 2 * PN_MEM_HANDLE_LEN)
		die("pn server: %s", line[0] ? line : "did not start");
	for (int i = 0; i < PN_MEM_HANDLE_LEN; i++)
		sscanf(hex + 2 * i, "%2hhx", &handle[i]);
	*ctl = in[1];
	return pid;
}

/* ==== perftest ==== */

static const char *host, *dev;
static unsigned pt_port = 18600;       /* a fresh port per run: no clash with a lingering server */

/* Spawn argv with stdout and stderr to fd (or /dev/null when fd < 0); returns the pid. */
static pid_t spawn(char *const argv[], int fd)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (fd >= 0) {
		posix_spawn_file_actions_adddup2(&fa, fd, 1);
		posix_spawn_file_actions_adddup2(&fa, fd, 2);
	} else {
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	}
	pid_t pid;
	int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return e ? -1 : pid;
}

/* Run one perftest measurement: `tool` as server, then as client against host, both with
 * -d DEV -R (rdma_cm, as pn connects) -p PORT -n iters -s bytes and `extra` (NULL or one
 * flag).  Parses the client's result line: for latency tools the typical (median) latency in
 * microseconds, for bandwidth tools the average in MB/s (10^6 B/s; perftest prints MiB/s).
 * Returns -1 when the run failed; its output then goes to stderr. */
static double perftest_once(const char *tool, unsigned bytes, unsigned iters, const char *extra)
{
	char port[16], n[16], s[16];
	snprintf(port, sizeof port, "%u", pt_port++);
	snprintf(n, sizeof n, "%u", iters);
	snprintf(s, sizeof s, "%u", bytes);
	char *argv[16] = { "timeout", PT_TIMEOUT, (char *)tool, "-d", (char *)dev, "-R", "-p", port,
	                   "-n", n, "-s", s };
	int argc = 12;
	if (extra)
		argv[argc++] = (char *)extra;
	pid_t srv = spawn(argv, -1);
	if (srv < 0)
		return -1;
	usleep(500000);                    /* the server must listen before the client connects */
	argv[argc++] = (char *)host;
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		die("pipe: %s", strerror(errno));
	pid_t cli = spawn(argv, p[1]);
	close(p[1]);
	static char buf[16384];
	size_t got = 0;
	ssize_t r;
	while (cli > 0 && (r = read(p[0], buf + got, sizeof buf - 1 - got)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (got += (size_t)r) == sizeof buf - 1)
			break;
	}
	buf[got] = 0;
	close(p[0]);
	int st;
	if (cli > 0)
		waitpid(cli, &st, 0);
	/* the server ends once the client is done; give it a moment, then stop it */
	for (int i = 0; i < 100 && waitpid(srv, &st, WNOHANG) == 0; i++)
		usleep(50000);
	if (waitpid(srv, &st, WNOHANG) == 0) {
		kill(srv, SIGTERM);
		waitpid(srv, &st, 0);
	}
	/* the result is the numeric line after the header line that starts with "#bytes" */
	bool lat = strstr(tool, "_lat") != NULL;
	char *h = strstr(buf, "#bytes"), *line = h ? strchr(h, '\n') : NULL;
	double f[5];
	unsigned long b, it;
	if (line && lat && sscanf(line, "%lu %lu %lf %lf %lf", &b, &it, &f[0], &f[1], &f[2]) == 5 &&
	    isfinite(f[2]) && f[2] > 0)
		return f[2];                   /* t_min t_max t_typical */
	if (line && !lat && sscanf(line, "%lu %lu %lf %lf", &b, &it, &f[0], &f[1]) == 4 &&
	    isfinite(f[1]) && f[1] > 0)
		return f[1] * 1.048576;        /* BW peak, BW average [MiB/s] */
	fprintf(stderr, "bench_rdma: %s -s %u: no result; its output:\n%s\n", tool, bytes, buf);
	return -1;
}

/* perftest_once, up to three times: under emulation perftest sometimes fails to calibrate
 * its cycle counter ("Correlation coefficient r^2 < 0.9", or a latency of inf), which says
 * nothing about the device.  -1 when every attempt failed. */
static double perftest(const char *tool, unsigned bytes, unsigned iters, const char *extra)
{
	double v = -1;
	for (int attempt = 0; attempt < 3 && v < 0; attempt++)
		v = perftest_once(tool, bytes, iters, extra);
	return v;
}

/* ==== pn measurements (the client side) ==== */

static struct pn *pn;
static pn_peer srv_peer;
static uint8_t mem_handle[PN_MEM_HANDLE_LEN];
static uint8_t *cbuf;                  /* client buffer: replies, read/write source and sink */

/* One request of len bytes (echo) or for a reply of reply_len bytes (T_BIG) into cbuf; the
 * descriptor's capacity is the reply's size, as a caller that knows it would give. */
static int call(pn_type type, const void *req, size_t len, size_t reply_len)
{
	struct pn_rcv_desc d = { .buf = cbuf, .cap = reply_len, .type = T_REPLY, .from = srv_peer };
	pn_coop c = pn_coop_start(pn, &d, 1);
	if (!c)
		return -PN_EINVAL;
	int rc = pn_send(pn, srv_peer, type, c, req, len);
	int rc2 = pn_coop_end(pn, c, CALL_MS);
	if (rc == 0 && rc2 == 0 && d.len != reply_len)
		return -PN_ETRUNC;
	return rc ? rc : rc2;
}

enum op { OP_ECHO, OP_REPLY, OP_READ, OP_WRITE };

/* One operation of `bytes`: a request/reply, a large reply, a one-sided read or write. */
static int pn_op(enum op op, unsigned bytes, uint64_t i)
{
	uint8_t req[64];
	uint64_t n = bytes;
	switch (op) {
	case OP_ECHO:
		memset(req, (int)i, sizeof req);
		return call(T_ECHO, req, bytes, bytes);
	case OP_REPLY:
		return call(T_BIG, &n, sizeof n, bytes);
	case OP_READ:
		return pn_mem_read(pn, srv_peer, mem_handle, 0, cbuf, bytes);
	case OP_WRITE:
		return pn_mem_write(pn, srv_peer, mem_handle, 0, cbuf, bytes);
	}
	return -PN_EINVAL;
}

/* Latency: the median of iters timed operations after iters/10 untimed ones, microseconds. */
static double pn_lat(enum op op, unsigned bytes, unsigned iters)
{
	double *t = malloc(iters * sizeof *t);
	if (!t)
		die("out of memory");
	unsigned warm = iters / 10;
	for (unsigned i = 0; i < warm + iters; i++) {
		uint64_t t0 = now_ns();
		int rc = pn_op(op, bytes, i);
		if (rc)
			die("pn latency op %d, %u bytes: %s", op, bytes, pn_strerror(rc));
		if (i >= warm)
			t[i - warm] = (double)(now_ns() - t0) / 1e3;
	}
	double m = median(t, iters);
	free(t);
	return m;
}

/* Bandwidth: iters operations of `bytes` one after another (depth 1, as each pn call blocks)
 * after one untimed one; MB/s (10^6 B/s). */
static double pn_bw(enum op op, unsigned bytes, unsigned iters)
{
	uint64_t t0 = 0;
	for (unsigned i = 0; i < 1 + iters; i++) {
		if (i == 1)
			t0 = now_ns();
		int rc = pn_op(op, bytes, i);
		if (rc)
			die("pn bandwidth op %d, %u bytes: %s", op, bytes, pn_strerror(rc));
	}
	return (double)bytes * iters / ((double)(now_ns() - t0) / 1e9) / 1e6;
}

/* ==== the rows ==== */

enum kind { LAT, BW };
struct row {
	const char *what;           /* experiment name (CSV) */
	enum op op;
	unsigned bytes;
	enum kind kind;
	const char *tool;           /* perftest baseline */
	const char *extra;          /* one more perftest flag, or NULL */
	double pt_factor;           /* perftest value * factor = comparable figure */
	const char *note;
};

/* perftest's bandwidth tools keep 128 operations in flight by default (-t); pn_mem_* and a
 * request block, so pn runs at depth 1: the -t1 rows give perftest the same depth.
 * Latency rows compare round trips: ib_send_lat and ib_write_lat report half of their
 * ping-pong's round trip, hence factor 2; ib_read_lat reports a READ's whole round trip.
 * pn_mem_write returns when the WRITE is acknowledged, which is a round trip too. */
static const struct row rows[] = {
	{ "reqrep", OP_ECHO, 8, LAT, "ib_send_lat", NULL, 2,
	  "request/reply, 8 B each way, depth 1 (PN_INLINE echo) vs SEND ping-pong" },
	{ "reqrep", OP_ECHO, 8, LAT, "ib_write_lat", NULL, 2,
	  "request/reply, 8 B each way, depth 1 (PN_INLINE echo) vs WRITE ping-pong" },
	{ "read", OP_READ, 64, LAT, "ib_read_lat", NULL, 1, "pn_mem_read 64 B vs RDMA READ" },
	{ "write", OP_WRITE, 64, LAT, "ib_write_lat", NULL, 2,
	  "pn_mem_write 64 B (until acked) vs WRITE ping-pong round trip" },
	{ "read", OP_READ, 1u << 20, BW, "ib_read_bw", NULL, 1, "pn_mem_read 1 MiB, depth 1" },
	{ "read", OP_READ, 1u << 20, BW, "ib_read_bw", "-t1", 1,
	  "pn_mem_read 1 MiB vs perftest at depth 1 too (-t1)" },
	{ "write", OP_WRITE, 1u << 20, BW, "ib_write_bw", NULL, 1, "pn_mem_write 1 MiB, depth 1" },
	{ "write", OP_WRITE, 1u << 20, BW, "ib_write_bw", "-t1", 1,
	  "pn_mem_write 1 MiB vs perftest at depth 1 too (-t1)" },
	{ "reply", OP_REPLY, 1u << 20, BW, "ib_write_bw", NULL, 1,
	  "request for a 1 MiB reply (WRITE WITH IMM into the descriptor), depth 1" },
	{ "reply", OP_REPLY, MAX_REPLY, BW, "ib_write_bw", NULL, 1,
	  "request for a 64 MiB reply (WRITE WITH IMM into the descriptor), depth 1" },
};
#define N_ROWS (sizeof rows / sizeof rows[0])

/* Each row's value per repetition: pn's, and perftest's times pt_factor (-1: failed). */
static double res_pn[N_ROWS][MAX_REPS], res_pt[N_ROWS][MAX_REPS];

static unsigned row_iters(const struct row *r, const struct plan *pl)
{
	if (r->kind == LAT)
		return pl->lat_n;
	return r->bytes > (1u << 20) ? pl->bw_big_n : pl->bw_mib_n;
}

/* ==== output ==== */

static FILE *txt;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	vfprintf(txt, fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static FILE *open_out(const char *dir, const char *name, const char *ext)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
	FILE *f = fopen(path, "w");
	if (!f)
		die("cannot write %s: %s", path, strerror(errno));
	return f;
}

static void size_str(char *buf, size_t len, unsigned bytes)
{
	if (bytes >= (1u << 20))
		snprintf(buf, len, "%u MiB", bytes >> 20);
	else if (bytes >= 1024)
		snprintf(buf, len, "%u KiB", bytes >> 10);
	else
		snprintf(buf, len, "%u B", bytes);
}

static volatile pid_t live_server;

static void on_alarm(int sig)
{
	static const char msg[] = "bench_rdma: time budget exceeded, stopping\n";
	if (live_server > 0)
		kill(live_server, SIGKILL);
	if (write(2, msg, sizeof msg - 1) < 0) { /* exiting anyway */ }
	_exit(3);
}

int main(int argc, char **argv)
{
	const struct plan *pl = &full;
	const char *dir = "results";
	unsigned reps = 0;
	const char *only = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			pl = &quick;
		else if (!strcmp(argv[i], "--host") && i + 1 < argc)
			host = argv[++i];
		else if (!strcmp(argv[i], "--dev") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--results") && i + 1 < argc)
			dir = argv[++i];
		else
			host = NULL, i = argc;
	}
	if (!host || !dev) {
		fprintf(stderr, "usage: bench_rdma --host IP --dev DEV [--quick] [--reps N] "
		                "[--only ROW] [--results DIR]\n");
		return 2;
	}
	struct plan p = *pl;
	if (reps)
		p.reps = reps < MAX_REPS ? reps : MAX_REPS;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm(p.budget_s);

	/* the server first, while this process has no threads */
	char name[128];
	int ctl;
	pid_t spid = server_start(host, p.budget_s + 30, name, sizeof name, mem_handle, &ctl);
	live_server = spid;
	char err[256], self[96];
	snprintf(self, sizeof self, "rdma:%s:0", host);
	const char *l[] = { self };
	if (!(pn = pn_init(l, 1, NULL, err, sizeof err)))
		die("%s", err);
	if (pn_peer_get(pn, name, &srv_peer) != 0)
		die("pn_peer_get %s failed", name);
	if (!(cbuf = malloc(MAX_REPLY)))
		die("out of memory");
	memset(cbuf, 1, MAX_REPLY);

	bool q = pl == &quick;
	const char *ext = q ? ".tmp" : "";
	txt = open_out(dir, q ? "rdma-quick.txt" : "rdma.txt", ext);
	FILE *csv = open_out(dir, q ? "rdma-quick.csv" : "rdma.csv", ext);
	FILE *rcsv = open_out(dir, q ? "rdma-quick-reps.csv" : "rdma-reps.csv", ext);

	char date[64], ver[128] = "?";
	time_t now = time(NULL);
	strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	FILE *v = popen("ib_send_lat --version 2>&1", "r");
	if (v) {
		if (fgets(ver, sizeof ver, v))
			ver[strcspn(ver, "\n")] = 0;
		pclose(v);
	}
	out("# bench_rdma%s, %s\n", q ? " --quick" : "", date);
	out("# device %s at %s, %ld CPUs online; perftest %s (-R: rdma_cm); pn server in a child\n",
	    dev, host, sysconf(_SC_NPROCESSORS_ONLN), ver);
	out("# %u repetitions; each measures every row with perftest, then with pn. Latency: %u\n"
	    "# round trips (median); bandwidth: %u x 1 MiB or %u x 64 MiB transfers (MB/s = 10^6 B/s).\n"
	    "# Soft-RoCE in a guest: only the ratios of this run mean something, not the times.\n",
	    p.reps, p.lat_n, p.bw_mib_n, p.bw_big_n);

	fprintf(rcsv, "experiment,bytes,unit,perftest,rep,pn,perftest_value\n");
	for (unsigned rep = 0; rep < p.reps; rep++) {
		for (size_t k = 0; k < N_ROWS; k++) {
			const struct row *r = &rows[k];
			unsigned n = row_iters(r, &p);
			if (only && strcmp(only, r->what))
				continue;
			/* a row whose perftest baseline equals an earlier row's in this repetition
			 * (ib_write_bw 1 MiB for write and reply) reuses that measurement */
			double pt = -1;
			for (size_t j = 0; j < k && pt < 0; j++)
				if (!strcmp(rows[j].tool, r->tool) && rows[j].bytes == r->bytes &&
				    !strcmp(rows[j].extra ? rows[j].extra : "", r->extra ? r->extra : ""))
					pt = res_pt[j][rep];
			if (pt < 0) {
				pt = perftest(r->tool, r->bytes, n, r->extra);
				if (pt > 0)
					pt *= r->pt_factor;
			}
			double v = r->kind == LAT ? pn_lat(r->op, r->bytes, n) : pn_bw(r->op, r->bytes, n);
			res_pt[k][rep] = pt;
			res_pn[k][rep] = v;
			fprintf(rcsv, "%s,%u,%s,%s%s%s,%u,%.3f,%.3f\n", r->what, r->bytes,
			        r->kind == LAT ? "us" : "MB/s", r->tool, r->extra ? " " : "",
			        r->extra ? r->extra : "", rep, v, pt);
			fflush(rcsv);
			printf("rep %u: %-6s %8u B  pn %10.1f  %s %s %10.1f\n", rep, r->what, r->bytes,
			       v, r->tool, r->extra ? r->extra : "", pt);
		}
	}

	out("\nratio = pn median / perftest median (latency: above 1 is slower; bandwidth: below 1 is\n"
	    "slower); range = lowest..highest per-repetition ratio. Latency in microseconds (round\n"
	    "trips: ib_send_lat and ib_write_lat print half theirs and are doubled here).\n\n");
	out("  %-7s %7s  %-5s  %10s  %-15s %10s  %7s  %-13s  %s\n", "row", "size", "unit", "pn",
	    "perftest", "value", "ratio", "range", "what");
	fprintf(csv, "experiment,bytes,unit,perftest,reps,pn_median,perftest_median,ratio,"
	             "ratio_min,ratio_max\n");
	for (size_t k = 0; k < N_ROWS; k++) {
		const struct row *r = &rows[k];
		double ratios[MAX_REPS], pn_v[MAX_REPS], pt_v[MAX_REPS];
		if (only && strcmp(only, r->what))
			continue;
		unsigned nr = 0, npt = 0;
		for (unsigned i = 0; i < p.reps; i++) {
			pn_v[i] = res_pn[k][i];
			if (res_pt[k][i] > 0) {
				pt_v[npt++] = res_pt[k][i];
				ratios[nr++] = res_pn[k][i] / res_pt[k][i];
			}
		}
		double mpn = median(pn_v, p.reps), mpt = median(pt_v, npt);
		double ratio = mpt > 0 ? mpn / mpt : -1;
		median(ratios, nr);            /* sorts them: range = first..last */
		char sz[16], range[32] = "-", rs[16] = "-";
		size_str(sz, sizeof sz, r->bytes);
		if (nr) {
			snprintf(range, sizeof range, "%.2f..%.2f", ratios[0], ratios[nr - 1]);
			snprintf(rs, sizeof rs, "%.2fx", ratio);
		}
		const char *unit = r->kind == LAT ? "us" : "MB/s";
		char tool[32];
		snprintf(tool, sizeof tool, "%s%s%s", r->tool, r->extra ? " " : "", r->extra ? r->extra : "");
		out("  %-7s %7s  %-5s  %10.1f  %-15s %10.1f  %7s  %-13s  %s\n", r->what, sz, unit, mpn,
		    tool, mpt, rs, range, r->note);
		fprintf(csv, "%s,%u,%s,%s,%u,%.3f,%.3f,%.4f,%.4f,%.4f\n", r->what, r->bytes, unit,
		        tool, p.reps, mpn, mpt, ratio, nr ? ratios[0] : -1, nr ? ratios[nr - 1] : -1);
	}
	struct pn_stats st;
	pn_stats_get(pn, &st);
	out("\n# pn client counters: %" PRIu64 " replies written into our memory by the server, %"
	    PRIu64 " one-sided operations\n", st.rdma_replies_in, st.rdma_onesided);

	pn_finalize(pn);
	close(ctl);
	int ws;
	for (int i = 0; i < 100 && waitpid(spid, &ws, WNOHANG) == 0; i++)
		usleep(50000);
	if (waitpid(spid, &ws, WNOHANG) == 0) {
		kill(spid, SIGKILL);
		waitpid(spid, &ws, 0);
	}
	fclose(rcsv);
	fclose(csv);
	fclose(txt);
	return 0;
}
