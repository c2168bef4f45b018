/* many_sessions: N clients of one arfd at once, each its own libarc connection and so its own
 * session (docs/net.md, "Sessions"), for tests/integration/many_sessions.sh.  Each client is a
 * thread: it connects, then runs SEG over and over until SECONDS have passed (at most 10000
 * runs), checking each run's output is "hello\n".  Prints one line:
 *   clients N ok N failed N runs N longest_ms N [counted ...] first_error ...
 * and exits 0 when every client finished its runs without an error.
 *
 *   many_sessions ENDPOINT SEG.pno N SECONDS [fail-first] [count=K] [timeout=MS]
 * Clients wait for a server that is away at their first run (arc_opts.wait_first, as the
 * `arc` command does), unless fail-first: then that is an error at once (libarc's default).
 * count=K: SEG's main takes an offset, adds 1 to the 8-byte counter there (client i's is at
 * 8 i) and its get(offset) returns it; at the end each client compares its counter with
 * the runs it saw answered.  Within one server's life a session runs each request once
 * (docs/net.md, "Sessions"), so they are equal, except that a request in flight when the
 * server was killed may have run there and runs again on its successor (no reply cache
 * survives a kill): at most one more per kill, K kills (the counter is in a file region,
 * which survives them).
 * timeout=MS: each request's (arc_opts.timeout_ms; libarc's default 30000).  What a test of
 * lost requests gives a restarted arfd: a thousand clients queue there at once, 10-25 s of
 * runs on 2 cores, more on a machine shared with other work.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arc.h"

#define RUNS_MAX 10000
#define CLIENTS_MAX 4096

static const char *endpoint;
static void *seg;
static size_t seg_len;
static uint64_t end_ns;
static atomic_uint n_ok, n_failed, n_runs, n_failed_first;
static uint64_t start_ns;
static bool fail_first;
static int kills = -1;                 /* count=K; -1: no counter */
static int timeout_ms;                 /* timeout=MS; 0: libarc's */
static atomic_uint n_exact, n_extra;
static atomic_ullong longest_ns;
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_err[320];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void note_err(const char *msg)
{
	pthread_mutex_lock(&err_lock);
	if (!first_err[0])
		snprintf(first_err, sizeof first_err, "%s", msg);
	pthread_mutex_unlock(&err_lock);
}

/* count=K: client's counter at off against the runs it saw answered (see the top). */
static bool counter_ok(struct arc *a, int64_t off, unsigned runs)
{
	struct arc_exec x = { .seg = seg, .seg_len = seg_len, .entry = "get", .args = &off,
	                      .n_args = 1 };
	int rc = arc_exec(a, &x);
	free(x.out);
	char m[300];
	if (rc != 0) {
		snprintf(m, sizeof m, "reading the counter: rc %d: %.150s", rc, arc_errmsg(a));
	} else if (x.value < (int64_t)runs || x.value > (int64_t)runs + kills) {
		snprintf(m, sizeof m, "counter %lld after %u answered runs (want %u to %u: one more "
		         "at most per kill)", (long long)x.value, runs, runs, runs + (unsigned)kills);
	} else {
		atomic_fetch_add(x.value == runs ? &n_exact : &n_extra, 1);
		return true;
	}
	note_err(m);
	return false;
}

static void *client(void *arg)
{
	int64_t off = 8 * (int64_t)(intptr_t)arg;
	char err[256];
	/* wait_first: a client whose first run comes while arfd is away waits for it, as `arc` does */
	struct arc_opts o = { .outage_ms = 30000, .wait_first = !fail_first, .timeout_ms = timeout_ms };
	struct arc *a = arc_connect(endpoint, &o, err, sizeof err);
	if (!a) {
		note_err(err);
		atomic_fetch_add(&n_failed, 1);
		return NULL;
	}
	bool good = true;
	unsigned runs = 0;
	for (int i = 0; i < RUNS_MAX && (i == 0 || now_ns() < end_ns); i++) {
		struct arc_exec x = { .seg = seg, .seg_len = seg_len, .args = &off,
		                      .n_args = kills >= 0 };
		uint64_t t0 = now_ns();
		int rc = arc_exec(a, &x);
		uint64_t d = now_ns() - t0;
		unsigned long long prev = atomic_load(&longest_ns);
		while (d > prev && !atomic_compare_exchange_weak(&longest_ns, &prev, d))
			;
		if (rc != 0 || x.out_len != 6 || memcmp(x.out, "hello\n", 6) != 0) {
			char m[300];
			snprintf(m, sizeof m, "rc %d after %llu ms (run %d, %llu ms long): %.150s", rc,
			         (unsigned long long)((now_ns() - start_ns) / 1000000), i + 1,
			         (unsigned long long)(d / 1000000), rc ? arc_errmsg(a) : "wrong output");
			if (i == 0)
				atomic_fetch_add(&n_failed_first, 1);
			note_err(m);
			good = false;
			free(x.out);
			break;
		}
		free(x.out);
		atomic_fetch_add(&n_runs, 1);
		runs++;
	}
	if (good && kills >= 0)
		good = counter_ok(a, off, runs);
	arc_close(a);
	atomic_fetch_add(good ? &n_ok : &n_failed, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	for (int i = 5; i < argc; i++) {
		if (!strcmp(argv[i], "fail-first"))
			fail_first = true;
		else if (!strncmp(argv[i], "count=", 6) && argv[i][6])
			kills = atoi(argv[i] + 6);
		else if (!strncmp(argv[i], "timeout=", 8) && atoi(argv[i] + 8) > 0)
			timeout_ms = atoi(argv[i] + 8);
		else
			argc = 0;
	}
	if (argc < 5 || kills < -1) {
		fprintf(stderr, "usage: many_sessions ENDPOINT SEG.pno N SECONDS [fail-first] [count=K] "
		        "[timeout=MS]\n");
		return 1;
	}
	endpoint = argv[1];
	FILE *f = fopen(argv[2], "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0) {
		perror(argv[2]);
		return 1;
	}
	long len = ftell(f);
	rewind(f);
	seg = malloc(len > 0 ? (size_t)len : 1);
	if (len <= 0 || !seg || fread(seg, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "%s: cannot read\n", argv[2]);
		return 1;
	}
	fclose(f);
	seg_len = (size_t)len;
	int n = atoi(argv[3]);
	if (n < 1 || n > CLIENTS_MAX) {
		fprintf(stderr, "N: 1 to %d\n", CLIENTS_MAX);
		return 1;
	}
	start_ns = now_ns();
	end_ns = now_ns() + (uint64_t)atoi(argv[4]) * 1000000000u;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 << 10);
	int started = 0;
	for (int i = 0; i < n; i++) {
		if (pthread_create(&t[i], &at, client, (void *)(intptr_t)i) != 0) {
			note_err("pthread_create failed");
			atomic_fetch_add(&n_failed, 1);
			continue;
		}
		started++;
	}
	for (int i = 0; i < n; i++)
		if (t[i])
			pthread_join(t[i], NULL);
	char counted[80] = "";
	if (kills >= 0)
		snprintf(counted, sizeof counted, "counted %u exact %u one more (a run across a kill) ",
		         atomic_load(&n_exact), atomic_load(&n_extra));
	printf("clients %d ok %u failed %u (at their first run %u) runs %u longest_ms %llu "
	       "%sfirst_error %s\n", n, atomic_load(&n_ok), atomic_load(&n_failed),
	       atomic_load(&n_failed_first), atomic_load(&n_runs),
	       atomic_load(&longest_ns) / 1000000, counted, first_err[0] ? first_err : "none");
	free(t);
	free(seg);
	return atomic_load(&n_ok) == (unsigned)n && started == n ? 0 : 1;
}
