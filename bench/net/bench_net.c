/* bench_net.c: Paradis-Net on loopback against raw sockets, the four experiments of the AMUDP
 * paper (ping latency vs network depth, throughput vs depth, bulk bandwidth, latency vs drop
 * rate), for each transport built into libpn (tcp; udp when pn_init accepts "udp:").
 *
 * Layout: the server is a child process (this program re-executed with --server, so it never
 * inherits the parent's threads) holding a pn endpoint with echo handlers, a raw TCP listener
 * and a raw UDP socket; the client is the parent's main thread.  pn and raw runs take turns,
 * so the raw baselines are measured in the same run, on the same two processes, and every
 * ratio printed is pn over raw from this run.  Results go to stdout and to results/net.{txt,csv}
 * (--quick: results/net-quick.{txt,csv}.tmp, so smoke runs never overwrite measured numbers).
 *
 *   bench_net [--quick] [--results DIR]
 *   bench_net --server SCHEME DROP     (internal: the child)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pn.h"

enum { T_ECHO_INLINE = 1, T_ECHO_WORKER, T_BULK, T_REPLY };

#define MSG_LEN      8                  /* ping payload: the request's sequence number */
#define BULK_LEN     (128 * 1024)       /* AMUDP's bulk test: 8 messages of 128 KiB */
#define BULK_N       8
#define MAX_DEPTH    64
#define UDP_DEPTH    MAX_DEPTH          /* pn udp_depth, so the library never caps a run */
#define CALL_MS      5000               /* one request may take this long before it counts as failed */
#define DROP_CALL_MS 15000              /* under loss: udp_max_wait_ms (5 s) plus slack */

static const unsigned depths[] = { 1, 2, 4, 8, 16, 32, 64 };
#define N_DEPTHS (sizeof depths / sizeof depths[0])
static const double drop_rates[] = { 0, 0.05, 0.10, 0.20, 0.30 };
#define N_DROPS (sizeof drop_rates / sizeof drop_rates[0])

/* Everything that differs between a real run and a --quick smoke run. */
struct plan {
	unsigned rounds;            /* raw and pn runs take turns this many times per point */
	unsigned n, warm;           /* measured and warm-up requests per run */
	double cap_s;               /* a run stops starting requests after this long */
	unsigned bulk_reps;         /* 1 MiB transfers per bulk run */
	unsigned drop_n;            /* requests per drop rate */
	double drop_cap_s;
	unsigned budget_s;          /* the whole program is killed after this */
};
static const struct plan full = { 5, 10000, 1000, 3.0, 200, 2000, 15.0, 900 };
static const struct plan quick = { 1, 1000, 100, 0.3, 10, 100, 2.0, 120 };

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "bench_net: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(1);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t r = read(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/* ==== the server (child process) ==== */

/* Echo: the reply carries the first MSG_LEN bytes of the request (all of a ping, the sequence
 * number of a bulk message), so a bulk reply is a small acknowledgement, as in AMUDP. */
static void h_echo(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                   size_t len, void *arg)
{
	pn_send(pn, from, T_REPLY, coop, msg, len < MSG_LEN ? len : MSG_LEN);
}

/* Raw TCP connection: the client first sends a u32 record size; the server then reads records
 * of that size and answers each with its first MSG_LEN bytes, one write per record, as the pn
 * server does with one pn_send per message.  Reads take whatever is available, as pn's I/O
 * thread does, so neither side is charged a syscall the other saves. */
static void *raw_tcp_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint32_t rec;
	if (read_all(fd, &rec, sizeof rec) != 0 || rec < MSG_LEN || rec > BULK_LEN) {
		close(fd);
		return NULL;
	}
	size_t cap = rec > 65536 ? rec : 65536;
	uint8_t *buf = malloc(cap);
	size_t have = 0;
	while (buf) {
		ssize_t r = read(fd, buf + have, cap - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		size_t off = 0;
		for (; have - off >= rec; off += rec)
			if (write_all(fd, buf + off, MSG_LEN) != 0)
				goto out;
		memmove(buf, buf + off, have - off);
		have -= off;
	}
out:
	free(buf);
	close(fd);
	return NULL;
}

static void *raw_tcp_accept(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		pthread_t t;
		if (pthread_create(&t, NULL, raw_tcp_conn, (void *)(intptr_t)fd) != 0)
			close(fd);
		else
			pthread_detach(t);
	}
}

static void *raw_udp_echo(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t buf[2048];
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		ssize_t r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&ss, &sl);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return NULL;
		sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&ss, sl);
	}
}

/* A socket of type on 127.0.0.1, port 0; returns the fd and writes the port. */
static int loopback_socket(int type, unsigned *port)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof sa;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    (type == SOCK_STREAM && listen(fd, 16) != 0) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0)
		return -1;
	*port = ntohs(sa.sin_port);
	return fd;
}

/* Protocol with the parent: one line on stdout, "OK <pn name> <raw tcp port> <raw udp port>"
 * or "ERR <message>"; then run until stdin reaches EOF (the parent closed it or died). */
static int server_main(const char *scheme, double drop, unsigned budget_s)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);  /* never outlive the parent */
	alarm(budget_s);                   /* nor the benchmark's time budget */
	char name[64], err[200];
	snprintf(name, sizeof name, "%s:127.0.0.1:0", scheme);
	const char *l[] = { name };
	struct pn_opts o = { .drop_rate = drop, .udp_depth = UDP_DEPTH };
	struct pn *pn = pn_init(l, 1, &o, err, sizeof err);
	if (!pn) {
		printf("ERR %s\n", err);
		return 1;
	}
	pn_set_handler(pn, T_ECHO_INLINE, PN_INLINE, h_echo, NULL);
	pn_set_handler(pn, T_ECHO_WORKER, 0, h_echo, NULL);
	pn_set_handler(pn, T_BULK, PN_INLINE, h_echo, NULL);
	unsigned tport, uport;
	int lfd = loopback_socket(SOCK_STREAM, &tport), ufd = loopback_socket(SOCK_DGRAM, &uport);
	pthread_t t1, t2;
	if (lfd < 0 || ufd < 0 ||
	    pthread_create(&t1, NULL, raw_tcp_accept, (void *)(intptr_t)lfd) != 0 ||
	    pthread_create(&t2, NULL, raw_udp_echo, (void *)(intptr_t)ufd) != 0) {
		printf("ERR raw sockets: %s\n", strerror(errno));
		return 1;
	}
	printf("OK %s %u %u\n", pn_self(pn, scheme), tport, uport);
	fflush(stdout);
	char c;
	ssize_t r;
	while ((r = read(0, &c, 1)) > 0 || (r < 0 && errno == EINTR))
		;                          /* bytes are ignored: only EOF (or an error) counts */
	pn_finalize(pn);
	/* the raw threads block in accept/recvfrom; exiting the process ends them */
	_exit(0);
}

/* ==== the client side: starting and stopping a server ==== */

struct server {
	pid_t pid;
	int ctl;                    /* its stdin: closing it asks the server to stop */
	char pn_name[64];
	unsigned tcp_port, udp_port;
};

static volatile pid_t live_server; /* killed by the watchdog */

static void on_alarm(int sig)
{
	static const char msg[] = "bench_net: time budget exceeded, stopping\n";
	if (live_server > 0)
		kill(live_server, SIGKILL);
	if (write(2, msg, sizeof msg - 1) < 0) { /* exiting anyway */ }
	_exit(3);
}

/* Start a server for scheme; 0, or -1 with the reason in err. */
static int server_start(struct server *s, const char *scheme, double drop, unsigned budget_s,
                        char *err, size_t errlen)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	char drop_s[32], budget[32];
	snprintf(drop_s, sizeof drop_s, "%.17g", drop);
	snprintf(budget, sizeof budget, "%u", budget_s);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl("/proc/self/exe", "bench_net", "--server", scheme, drop_s, budget, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s->pid = pid;
	s->ctl = in[1];
	live_server = pid;
	/* The server answers at once; 5 s covers a loaded machine. */
	char line[256];
	size_t got = 0;
	struct pollfd p = { .fd = out[0], .events = POLLIN };
	while (got < sizeof line - 1 && (got == 0 || line[got - 1] != '\n')) {
		if (poll(&p, 1, 5000) <= 0)
			break;
		ssize_t r = read(out[0], line + got, sizeof line - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(out[0]);
	line[got] = 0;
	line[strcspn(line, "\n")] = 0;
	if (sscanf(line, "OK %63s %u %u", s->pn_name, &s->tcp_port, &s->udp_port) == 3)
		return 0;
	snprintf(err, errlen, "%s", !strncmp(line, "ERR ", 4) ? line + 4 : "server did not start");
	return -1;
}

/* Stop a server: EOF on its stdin, up to 3 s to exit, then SIGKILL; always reaped. */
static void server_stop(struct server *s)
{
	if (s->pid <= 0)
		return;
	close(s->ctl);
	int st;
	for (int i = 0; i < 300; i++) {
		if (waitpid(s->pid, &st, WNOHANG) == s->pid)
			goto reaped;
		usleep(10000);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &st, 0);
reaped:
	live_server = 0;
	s->pid = 0;
}

/* ==== measurements ==== */

/* Samples of one point (one variant at one depth), pooled over rounds. */
struct point {
	uint64_t *lat_ns;
	size_t n_lat;
	double thr[8];              /* messages/s of each round (at most 8 kept) */
	unsigned n_thr;
	unsigned failed;            /* requests that got no reply (error or timeout) */
};

struct summary {
	double min_us, med_us, p99_us, mean_us, thr;
	size_t n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static struct summary summarize(struct point *p)
{
	struct summary s = { 0 };
	s.n = p->n_lat;
	if (p->n_lat) {
		qsort(p->lat_ns, p->n_lat, sizeof *p->lat_ns, cmp_u64);
		double sum = 0;
		for (size_t i = 0; i < p->n_lat; i++)
			sum += (double)p->lat_ns[i];
		size_t i99 = p->n_lat * 99 / 100;
		s.min_us = (double)p->lat_ns[0] / 1e3;
		s.med_us = (double)p->lat_ns[p->n_lat / 2] / 1e3;
		s.p99_us = (double)p->lat_ns[i99 < p->n_lat ? i99 : p->n_lat - 1] / 1e3;
		s.mean_us = sum / (double)p->n_lat / 1e3;
	}
	if (p->n_thr) {
		/* The best round, as bench/vm takes the best time: on a shared machine other work
		 * only ever slows a round down, and raw and pn rounds are treated alike. */
		qsort(p->thr, p->n_thr, sizeof p->thr[0], cmp_dbl);
		s.thr = p->thr[p->n_thr - 1];
	}
	return s;
}

static void point_add(struct point *p, const uint64_t *lat, size_t n, double thr)
{
	uint64_t *a = realloc(p->lat_ns, (p->n_lat + n) * sizeof *a);
	if (!a)
		die("%s", "out of memory");
	memcpy(a + p->n_lat, lat, n * sizeof *a);
	p->lat_ns = a;
	p->n_lat += n;
	if (p->n_thr < sizeof p->thr / sizeof p->thr[0])
		p->thr[p->n_thr++] = thr;
}

/* One run keeps `depth` requests in flight from one thread: start `depth`, then each time the
 * oldest completes, record its round trip (send .. reply seen by this thread) and start the
 * next, until warm + n have completed or cap_s has passed.  The first `warm` are not recorded.
 * Throughput is completed requests per second over the recorded part.  Returns the number
 * recorded into lat[]. */
struct run {
	unsigned depth, warm, n;
	double cap_s;
	uint64_t *lat;              /* n entries */
	double thr;
	unsigned failed;
};

/* -- pn: each request is a Cooperation with one descriptor; one thread, depth of them open */
struct pn_slot {
	struct pn_rcv_desc d;
	uint64_t reply, seq, t0;
	pn_coop c;
};

static int send_slot(struct pn *pn, pn_peer to, pn_type type, struct pn_slot *s, uint64_t seq)
{
	s->d = (struct pn_rcv_desc){ .buf = &s->reply, .cap = sizeof s->reply, .type = T_REPLY,
	                             .from = to };
	s->seq = seq;
	s->reply = ~seq;
	s->t0 = now_ns();          /* registering the Cooperation is part of the round trip */
	s->c = pn_coop_start(pn, &s->d, 1);
	if (!s->c)
		return -1;
	return pn_send(pn, to, type, s->c, &s->seq, MSG_LEN);
}

static size_t run_pn(struct pn *pn, pn_peer to, pn_type type, struct run *r, int call_ms)
{
	struct pn_slot slot[MAX_DEPTH];
	uint64_t total = (uint64_t)r->warm + r->n, started = 0, done = 0, t_begin = now_ns();
	size_t rec = 0;
	uint64_t cap_ns = (uint64_t)(r->cap_s * 1e9);
	r->failed = 0;
	for (; started < r->depth && started < total; started++)
		send_slot(pn, to, type, &slot[started % r->depth], started);
	while (done < started) {
		struct pn_slot *s = &slot[done % r->depth];
		int rc = s->c ? pn_coop_end(pn, s->c, call_ms) : -1;
		uint64_t t = now_ns();
		if (rc != 0 || s->reply != s->seq)
			r->failed++;
		else if (done >= r->warm && rec < r->n)
			r->lat[rec++] = t - s->t0;
		done++;
		if (done == r->warm)
			t_begin = t;
		if (done > r->warm && t - t_begin > cap_ns)
			total = started;   /* out of time: drain what is in flight */
		if (started < total)
			send_slot(pn, to, type, s, started++);
	}
	double secs = (double)(now_ns() - t_begin) / 1e9;
	r->thr = secs > 0 ? (double)rec / secs : 0;
	return rec;
}

/* -- raw TCP: one 8-byte write per request; replies read as they come, as many per read as
 * are there, and each one frees a slot for the next request */
static int raw_tcp_connect(unsigned port, uint32_t rec)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	struct timeval tv = { .tv_sec = CALL_MS / 1000 };
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		die("raw tcp connect: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);  /* a lost server ends the run */
	if (write_all(fd, &rec, sizeof rec) != 0)
		die("raw tcp: %s", strerror(errno));
	return fd;
}

static size_t run_raw_tcp(int fd, struct run *r)
{
	uint64_t t0[MAX_DEPTH], total = (uint64_t)r->warm + r->n, started = 0, done = 0;
	uint64_t cap_ns = (uint64_t)(r->cap_s * 1e9), t_begin = now_ns();
	uint8_t buf[MAX_DEPTH * MSG_LEN];
	size_t have = 0, rec = 0;
	r->failed = 0;
	for (; started < r->depth && started < total; started++) {
		t0[started % r->depth] = now_ns();
		if (write_all(fd, &started, MSG_LEN) != 0)
			die("raw tcp write: %s", strerror(errno));
	}
	while (done < started) {
		ssize_t n = read(fd, buf + have, sizeof buf - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("raw tcp read: %s", n ? strerror(errno) : "server closed");
		uint64_t t = now_ns();
		have += (size_t)n;
		size_t off = 0;
		for (; have - off >= MSG_LEN; off += MSG_LEN) {
			uint64_t seq;
			memcpy(&seq, buf + off, MSG_LEN);
			if (seq != done)
				r->failed++;
			else if (done >= r->warm && rec < r->n)
				r->lat[rec++] = t - t0[done % r->depth];
			done++;
			if (done == r->warm)
				t_begin = t;
			if (done > r->warm && t - t_begin > cap_ns)
				total = started;
			if (started < total) {
				t0[started % r->depth] = now_ns();
				if (write_all(fd, &started, MSG_LEN) != 0)
					die("raw tcp write: %s", strerror(errno));
				started++;
			}
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	double secs = (double)(now_ns() - t_begin) / 1e9;
	r->thr = secs > 0 ? (double)rec / secs : 0;
	return rec;
}

/* -- raw UDP: one datagram per request and per reply; loopback does not lose datagrams at
 * these depths, so a lost one ends the run (SO_RCVTIMEO) and is reported as failed */
static int raw_udp_connect(unsigned port)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 1 };
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		die("raw udp connect: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

static size_t run_raw_udp(int fd, struct run *r)
{
	uint64_t t0[MAX_DEPTH], total = (uint64_t)r->warm + r->n, started = 0, done = 0;
	uint64_t cap_ns = (uint64_t)(r->cap_s * 1e9), t_begin = now_ns();
	size_t rec = 0;
	r->failed = 0;
	for (; started < r->depth && started < total; started++) {
		t0[started % r->depth] = now_ns();
		send(fd, &started, MSG_LEN, 0);
	}
	while (done < started) {
		uint64_t seq;
		ssize_t n = recv(fd, &seq, sizeof seq, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != MSG_LEN) {            /* lost: give up the rest of this run */
			r->failed += (unsigned)(started - done);
			break;
		}
		uint64_t t = now_ns();
		if (seq < done || seq >= started) {
			r->failed++;           /* a stray late datagram: ignore it */
			continue;
		}
		if (done >= r->warm && rec < r->n)
			r->lat[rec++] = t - t0[seq % r->depth];
		done++;
		if (done == r->warm)
			t_begin = t;
		if (done > r->warm && t - t_begin > cap_ns)
			total = started;
		if (started < total) {
			t0[started % r->depth] = now_ns();
			send(fd, &started, MSG_LEN, 0);
			started++;
		}
	}
	double secs = (double)(now_ns() - t_begin) / 1e9;
	r->thr = secs > 0 ? (double)rec / secs : 0;
	return rec;
}

/* -- bulk: BULK_N messages of BULK_LEN in flight, each acknowledged by a MSG_LEN reply; MB/s
 * (10^6 bytes) over reps transfers of 1 MiB */
static double bulk_pn(struct pn *pn, pn_peer to, unsigned reps, double cap_s, unsigned *failed)
{
	static uint8_t data[BULK_N][BULK_LEN];
	struct pn_rcv_desc d[BULK_N];
	uint64_t ack[BULK_N], t = now_ns(), bytes = 0;
	for (unsigned k = 0; k < BULK_N; k++)
		memset(data[k], (int)k, BULK_LEN);
	for (unsigned i = 0; i < reps && (double)(now_ns() - t) / 1e9 < cap_s; i++) {
		for (unsigned k = 0; k < BULK_N; k++)
			d[k] = (struct pn_rcv_desc){ .buf = &ack[k], .cap = sizeof ack[k],
			                             .type = T_REPLY, .from = to };
		pn_coop c = pn_coop_start(pn, d, BULK_N);
		for (unsigned k = 0; k < BULK_N; k++)
			pn_send(pn, to, T_BULK, c, data[k], BULK_LEN);
		if (!c || pn_coop_end(pn, c, CALL_MS) != 0)
			(*failed)++;
		else
			bytes += (uint64_t)BULK_N * BULK_LEN;
	}
	return (double)bytes / ((double)(now_ns() - t) / 1e9) / 1e6;
}

static double bulk_raw_tcp(unsigned port, unsigned reps, double cap_s)
{
	static uint8_t data[BULK_N][BULK_LEN];
	int fd = raw_tcp_connect(port, BULK_LEN);
	uint64_t ack[BULK_N], t = now_ns(), bytes = 0;
	for (unsigned i = 0; i < reps && (double)(now_ns() - t) / 1e9 < cap_s; i++) {
		for (unsigned k = 0; k < BULK_N; k++)
			if (write_all(fd, data[k], BULK_LEN) != 0)
				die("raw tcp bulk: %s", strerror(errno));
		if (read_all(fd, ack, sizeof ack) != 0)
			die("raw tcp bulk: %s", "no acknowledgement");
		bytes += (uint64_t)BULK_N * BULK_LEN;
	}
	double mb_s = (double)bytes / ((double)(now_ns() - t) / 1e9) / 1e6;
	close(fd);
	return mb_s;
}

/* ==== output ==== */

static FILE *txt, *csv;

/* Print to the terminal and to the .txt file alike. */
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

/* One CSV row; a negative number is written as an empty field (not measured). */
static void csv_row(const char *backend, const char *exp, const char *variant, double param,
                    const struct summary *s, double mb_s, double lat_ratio, double thr_ratio,
                    unsigned failed)
{
	double f[] = { s ? s->min_us : -1, s ? s->med_us : -1, s ? s->p99_us : -1,
	               s ? s->mean_us : -1, s ? s->thr : -1, mb_s, lat_ratio, thr_ratio };
	fprintf(csv, "%s,%s,%s,%g,%zu", backend, exp, variant, param, s ? s->n : 0);
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		f[i] < 0 ? fprintf(csv, ",") : fprintf(csv, ",%.3f", f[i]);
	fprintf(csv, ",%u\n", failed);
}

static void cpu_name(char *buf, size_t len)
{
	snprintf(buf, len, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	while (f && fgets(line, sizeof line, f)) {
		char *c = strchr(line, ':');
		if (!strncmp(line, "model name", 10) && c) {
			snprintf(buf, len, "%s", c + 2);
			buf[strcspn(buf, "\n")] = 0;
			break;
		}
	}
	if (f)
		fclose(f);
}

/* ==== one backend ==== */

enum variant { V_RAW, V_INLINE, V_WORKER, V_COUNT };
static const char *const variant_name[V_COUNT] = { "raw", "pn-inline", "pn-worker" };
static const pn_type variant_type[V_COUNT] = { 0, T_ECHO_INLINE, T_ECHO_WORKER };

struct goals {                  /* what the issue asks of each backend */
	double lat_max;             /* pn-inline median round trip at depth 1 / raw, at most */
	double thr_min;             /* pn-inline throughput at depth 16 / raw, at least */
};

static struct pn *client_open(const char *scheme, double drop, char *err, size_t errlen)
{
	char name[64];
	snprintf(name, sizeof name, "%s:127.0.0.1:0", scheme);
	const char *l[] = { name };
	struct pn_opts o = { .drop_rate = drop, .udp_depth = UDP_DEPTH };
	return pn_init(l, 1, &o, err, errlen);
}

static double ratio(double a, double b) { return b > 0 ? a / b : -1; }

/* Experiments 1-3 (and for udp, 4) on one transport.  Returns 0, or -1 when the transport is
 * not available.  Goal lines are appended to goals_txt. */
static int bench_backend(const char *scheme, const struct plan *pl, const struct goals *g,
                         char *goals_txt, size_t goals_len)
{
	char err[256];
	struct server srv = { 0 };
	struct pn *pn = NULL;
	if (server_start(&srv, scheme, 0, pl->budget_s, err, sizeof err) != 0 ||
	    !(pn = client_open(scheme, 0, err, sizeof err))) {
		out("\n%s: not available (%s)\n", scheme, err);
		size_t gl = strlen(goals_txt);
		snprintf(goals_txt + gl, goals_len - gl, "  %s: not available\n", scheme);
		server_stop(&srv);
		return -1;
	}
	pn_peer to;
	if (pn_peer_get(pn, srv.pn_name, &to) != 0)
		die("pn_peer_get %s failed", srv.pn_name);
	bool tcp = !strcmp(scheme, "tcp");
	int raw = tcp ? raw_tcp_connect(srv.tcp_port, MSG_LEN) : raw_udp_connect(srv.udp_port);
	const char *raw_what = tcp ? "raw TCP (TCP_NODELAY)" : "raw UDP";

	/* ---- experiments 1 and 2: ping latency and throughput vs depth */
	static struct point pt[V_COUNT][N_DEPTHS];
	memset(pt, 0, sizeof pt);
	uint64_t *lat = malloc(pl->n * sizeof *lat);
	if (!lat)
		die("%s", "out of memory");
	for (unsigned round = 0; round < pl->rounds; round++) {
		for (size_t di = 0; di < N_DEPTHS; di++) {
			for (int v = 0; v < V_COUNT; v++) {
				struct run r = { .depth = depths[di], .warm = pl->warm, .n = pl->n,
				                 .cap_s = pl->cap_s, .lat = lat };
				size_t n = v == V_RAW ? (tcp ? run_raw_tcp(raw, &r) : run_raw_udp(raw, &r))
				                      : run_pn(pn, to, variant_type[v], &r, CALL_MS);
				point_add(&pt[v][di], lat, n, r.thr);
				pt[v][di].failed += r.failed;
			}
		}
	}
	out("\n%s: ping latency (%d-byte request/reply, microseconds) and throughput vs depth\n",
	    scheme, MSG_LEN);
	out("  raw: %s between the same two processes, one write per message.\n"
	    "  pn-inline: PN_INLINE echo handler (runs on the server's I/O thread);\n"
	    "  pn-worker: opt 0 (each request handed to a worker thread).\n"
	    "  Ratios are pn/raw from this run (latency: median; throughput: msgs/s).\n", raw_what);
	out("  depth  variant          n      min      med      p99    kmsg/s  med/raw  thr/raw  failed\n");
	struct summary sum[V_COUNT][N_DEPTHS];
	for (size_t di = 0; di < N_DEPTHS; di++) {
		for (int v = 0; v < V_COUNT; v++)
			sum[v][di] = summarize(&pt[v][di]);
		for (int v = 0; v < V_COUNT; v++) {
			struct summary *s = &sum[v][di], *b = &sum[V_RAW][di];
			double lr = v == V_RAW ? -1 : ratio(s->med_us, b->med_us);
			double tr = v == V_RAW ? -1 : ratio(s->thr, b->thr);
			char lrs[16] = "", trs[16] = "";
			if (lr > 0) snprintf(lrs, sizeof lrs, "%.2fx", lr);
			if (tr > 0) snprintf(trs, sizeof trs, "%.2fx", tr);
			out("  %5u  %-9s  %7zu  %7.1f  %7.1f  %7.1f  %8.1f  %7s  %7s  %6u\n", depths[di],
			    variant_name[v], s->n, s->min_us, s->med_us, s->p99_us, s->thr / 1e3, lrs,
			    trs, pt[v][di].failed);
			csv_row(scheme, "depth", variant_name[v], depths[di], s, -1, lr, tr,
			        pt[v][di].failed);
			free(pt[v][di].lat_ns);
		}
	}
	free(lat);

	/* goals: depth 1 is index 0; depth 16 is looked up */
	size_t d16 = 0;
	while (depths[d16] != 16)
		d16++;
	double lr = ratio(sum[V_INLINE][0].med_us, sum[V_RAW][0].med_us);
	double tr = ratio(sum[V_INLINE][d16].thr, sum[V_RAW][d16].thr);
	size_t gl = strlen(goals_txt);
	snprintf(goals_txt + gl, goals_len - gl,
	         "  %s: round trip, depth 1, pn-inline/raw median %.2fx (goal <= %.2fx): %s\n"
	         "  %s: throughput, depth 16, pn-inline/raw %.2fx (goal >= %.2fx): %s\n",
	         scheme, lr, g->lat_max, lr <= g->lat_max ? "met" : "MISSED",
	         scheme, tr, g->thr_min, tr >= g->thr_min ? "met" : "MISSED");

	/* ---- experiment 3: bulk bandwidth, against raw TCP streaming of the same bytes */
	double bw_pn[8], bw_raw[8];     /* plan rounds <= 8 */
	unsigned bulk_failed = 0;
	for (unsigned round = 0; round < pl->rounds; round++) {
		bw_raw[round] = bulk_raw_tcp(srv.tcp_port, pl->bulk_reps, pl->cap_s);
		bw_pn[round] = bulk_pn(pn, to, pl->bulk_reps, pl->cap_s, &bulk_failed);
	}
	qsort(bw_pn, pl->rounds, sizeof bw_pn[0], cmp_dbl);
	qsort(bw_raw, pl->rounds, sizeof bw_raw[0], cmp_dbl);
	double bp = bw_pn[pl->rounds - 1], br = bw_raw[pl->rounds - 1];
	out("\n%s: bulk bandwidth, %d messages of %d KiB in flight, each acknowledged (MB/s = 10^6 B/s,\n"
	    "  best of %u rounds of up to %u MiB)\n", scheme, BULK_N, BULK_LEN / 1024, pl->rounds,
	    pl->bulk_reps);
	out("  raw TCP %8.1f MB/s   pn %8.1f MB/s   pn/raw %.2fx   failed %u\n", br, bp,
	    ratio(bp, br), bulk_failed);
	csv_row(scheme, "bulk", "raw-tcp", BULK_N, NULL, br, -1, -1, 0);
	csv_row(scheme, "bulk", "pn-inline", BULK_N, NULL, bp, -1, ratio(bp, br), bulk_failed);

	close(raw);
	pn_finalize(pn);
	server_stop(&srv);
	if (tcp)
		return 0;

	/* ---- experiment 4 (udp): ping latency vs drop rate, dropped on receipt at both ends */
	out("\n%s: ping latency vs drop rate (depth 1, PN_INLINE echo, drop_rate on both ends,\n"
	    "  microseconds; up to %u requests or %.0f s per rate)\n", scheme, pl->drop_n,
	    pl->drop_cap_s);
	out("   drop        n      min      med      p99     mean  mean/0%%  retransmits  failed\n");
	double mean0 = -1;
	uint64_t *dl = malloc(pl->drop_n * sizeof *dl);
	if (!dl)
		die("%s", "out of memory");
	for (size_t i = 0; i < N_DROPS; i++) {
		double rate = drop_rates[i];
		if (server_start(&srv, scheme, rate, pl->budget_s, err, sizeof err) != 0 ||
		    !(pn = client_open(scheme, rate, err, sizeof err)) ||
		    pn_peer_get(pn, srv.pn_name, &to) != 0) {
			out("  %4.0f%%  failed to start: %s\n", rate * 100, err);
			pn_finalize(pn);
			server_stop(&srv);
			continue;
		}
		struct run r = { .depth = 1, .warm = pl->warm / 10, .n = pl->drop_n,
		                 .cap_s = pl->drop_cap_s, .lat = dl };
		struct point p = { 0 };
		size_t n = run_pn(pn, to, T_ECHO_INLINE, &r, DROP_CALL_MS);
		point_add(&p, dl, n, r.thr);
		struct summary s = summarize(&p);
		struct pn_stats st;
		pn_stats_get(pn, &st);
		if (i == 0)
			mean0 = s.mean_us;
		double mr = ratio(s.mean_us, mean0);
		out("  %4.0f%%  %7zu  %7.1f  %7.1f  %7.1f  %7.1f  %6.2fx  %11" PRIu64 "  %6u\n",
		    rate * 100, s.n, s.min_us, s.med_us, s.p99_us, s.mean_us, mr, st.retransmits,
		    r.failed);
		csv_row(scheme, "drop", "pn-inline", rate * 100, &s, -1, mr, -1, r.failed);
		free(p.lat_ns);
		pn_finalize(pn);
		server_stop(&srv);
	}
	free(dl);
	return 0;
}

/* ==== main ==== */

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "--server"))
		return server_main(argv[2], strtod(argv[3], NULL), (unsigned)atoi(argv[4]) + 30);
	const struct plan *pl = &full;
	const char *dir = "results";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			pl = &quick;
		else if (!strcmp(argv[i], "--results") && i + 1 < argc)
			dir = argv[++i];
		else {
			fprintf(stderr, "usage: bench_net [--quick] [--results DIR]\n");
			return 2;
		}
	}
	/* Fault injection must come from the drop experiment alone, never from the environment. */
	unsetenv("PN_DROP");
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm(pl->budget_s);

	char path[512];
	const char *tag = pl == &quick ? "net-quick" : "net", *ext = pl == &quick ? ".tmp" : "";
	snprintf(path, sizeof path, "%s/%s.txt%s", dir, tag, ext);
	if (!(txt = fopen(path, "w")))
		die("cannot write %s", path);
	snprintf(path, sizeof path, "%s/%s.csv%s", dir, tag, ext);
	if (!(csv = fopen(path, "w")))
		die("cannot write %s", path);
	fprintf(csv, "backend,experiment,variant,param,n,min_us,median_us,p99_us,mean_us,"
	             "msgs_per_s,mb_per_s,lat_ratio,thr_ratio,failed\n");

	char cpu[128], date[64];
	time_t now = time(NULL);
	cpu_name(cpu, sizeof cpu);
	strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	out("# bench_net%s, %s\n", pl == &quick ? " --quick" : "", date);
	out("# cpu: %s, %ld online; loopback 127.0.0.1; server in a child process, client one thread\n",
	    cpu, sysconf(_SC_NPROCESSORS_ONLN));
	out("# per point: %u rounds x %u requests after %u warm-up (or %.1f s), pn and raw alternating;\n"
	    "# latency percentiles over all rounds' samples, throughput and bandwidth the best round\n",
	    pl->rounds, pl->n, pl->warm, pl->cap_s);
	/* Other work on the machine moves loopback numbers a lot: record how busy it was. */
	double load[1] = { -1 };
	getloadavg(load, 1);
	out("# load average (1 min) at start: %.2f\n", load[0]);

	static const struct goals g_tcp = { 1.25, 0.7 }, g_udp = { 1.3, 0.7 };
	char goals[1024] = "";
	bench_backend("tcp", pl, &g_tcp, goals, sizeof goals);
	bench_backend("udp", pl, &g_udp, goals, sizeof goals);
	getloadavg(load, 1);
	out("\ngoals (loopback)\n%s# load average (1 min) at end: %.2f\n", goals, load[0]);
	fclose(csv);
	fclose(txt);
	return 0;
}
