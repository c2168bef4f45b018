/* bench_tradeoff.c: the Active RDMA trade-off on loopback TCP: walking a linked list and
 * looking keys up in a chained hash table that live in server memory, three ways, in one run:
 *
 *   reads   the client walks with one-sided READs, one round trip per node (hash: the bucket,
 *           then each node of the chain), as plain RDMA would
 *   active  one EXEC of the shipped walk (examples/linked_list.pna find, examples/hash_table.pna
 *           lookup): one round trip, the walk runs in the server's VM
 *   hook    one EXEC of a tiny segment that calls a fixed server hook doing the walk in C: the
 *           RPC way (the server must have been built with that function)
 * plus baselines in the same run, one row per kind of single request: a null EXEC (a segment
 * returning 0), an 8-byte READ, an 8-byte WRITE, an EXEC that stores (one word into region
 * `scratch`), an EXEC calling a server hook that does nothing (`nop`), and a raw TCP ping-pong
 * (two sockets, 16-byte messages, TCP_NODELAY) between the same two processes; then the same
 * EXECs and the raw ping-pong 16 deep (16 requests out, then their 16 replies, in a loop):
 * pipelined throughput against raw pipelined throughput.  And the ARF operations as a mount
 * makes them (arf_ops.h, arf_data.h: one EXEC each) on an image arfd serves: stat (getattr),
 * create (the file is removed again, untimed), a 4 KiB write, rename.
 *
 * Layout: the server is a child forked before this process starts any thread; it runs arfd as
 * a library (arfd_start, so it can register the two hooks through arfd_config.hooks) with the
 * regions `mem` (the list) and `table` (the hash table), and a raw echo thread.  The parent
 * builds both structures in local memory, writes them into the regions with arc_write in 1 MiB
 * chunks (setup, not timed), keeps the local copy to check every answer of every method, and
 * measures.  Methods take turns in rounds, so the ratios compare measurements taken side by
 * side.  One request at a time (depth 1): throughput is 1 / mean latency of one client.
 *
 *   bench_tradeoff [--quick] [--baseline] [--results DIR]
 * --baseline: only the null EXEC with and without a session and the raw ping-pong, one
 * request at a time (the cost of sessions: docs/net.md), into DIR/tradeoff-baseline.*
 * --count N: 8 rounds of N operations of each baseline series (after the warm-up), each
 * with its mean latency and the context switches per operation of client and server
 * (/proc/PID/task/TID/status): how many times their threads slept (voluntary) or were
 * preempted on a request's path, and where they ran; the last round per thread.
 * Results: DIR/tradeoff.csv and DIR/tradeoff.txt (--quick: *-quick.*.tmp), DIR = results.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arc.h"
#include "arf.h"
#include "arf_data.h"
#include "arf_ops.h"
#include "asm.h"
#include "isa.h"
#include "server.h"

#ifndef BENCH_SRCDIR
#define BENCH_SRCDIR "."
#endif
#ifndef BENCH_BUILD
#define BENCH_BUILD "build"
#endif

#define NODE_LEN   24                   /* u64 next | u64 key | u64 value, as the examples */
#define GOLDEN     0x9e3779b97f4a7c15ull /* hash_table.pna's multiplier */
#define RAW_LEN    16                   /* raw ping-pong message */
#define CHUNK      (1u << 20)           /* arc_write chunk during setup */
#define HOOK_STEPS (1u << 24)           /* a hook gives up after this many nodes (a cycle) */

static const unsigned walk_lens[] = { 1, 10, 100, 1000 };
#define N_LENS (sizeof walk_lens / sizeof walk_lens[0])
#define LIST_LEN 1000                   /* the list; walks of length L find its L-th node */

struct plan {
	unsigned rounds;                /* every series runs once per round, in turn */
	unsigned batch;                 /* operations per series per round, at most */
	double batch_s;                 /* ... or until this much time has passed */
	unsigned hash_log2;             /* 2^hash_log2 keys and buckets */
	unsigned list_slots;            /* the list's nodes are spread over this many slots */
	unsigned budget_s;              /* the whole run is killed after this (alarm) */
};
static const struct plan full = { 7, 3000, 0.4, 20, 1u << 16, 600 };
static const struct plan quick = { 1, 200, 0.05, 16, 1u << 12, 120 };
/* --baseline: as many operations as `full`, in finer turns (a burst of load elsewhere on a
 * shared machine then falls on both sides of a comparison, not on one series' batch) */
static const struct plan baseline = { 60, 350, 0.05, 16, 1u << 12, 300 };
static const struct plan *plan = &full;
static bool baseline_only;          /* --baseline */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_tradeoff: %s: %s\n", what, why);
	exit(1);
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static void st64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static uint64_t list_size(void) { return (uint64_t)NODE_LEN * plan->list_slots; }
static uint64_t n_keys(void) { return 1ull << plan->hash_log2; }
static uint64_t table_size(void) { return 8 + 8 * n_keys() + NODE_LEN * n_keys(); }

/* ---- the server (child process) ---- */

/* The fixed server functions of the "hook" method.  They see the calling segment's regions:
 * its first import (index 3) is the structure.  Every node access is bounds-checked by
 * vm_hook_mem, as a careful RPC handler would check offsets that come from memory. */
/* nop(v): v + 1, the cheapest hook call there is */
static int64_t hook_nop(struct vm_hook_ctx *c, int64_t v)
{
	return v + 1;
}

static int64_t hook_list_find(struct vm_hook_ctx *c, int64_t head, int64_t key)
{
	uint64_t p = (uint64_t)head;
	for (unsigned steps = 0; p; steps++) {
		const uint8_t *n = vm_hook_mem(c, ISA_R_FIRST_IMPORT, p, NODE_LEN, 0);
		if (!n || steps == HOOK_STEPS) {
			vm_hook_fail(c, "list_find: bad node at %" PRIu64, p);
			return 0;
		}
		if (ld64(n + 8) == (uint64_t)key)
			return (int64_t)ld64(n + 16);
		p = ld64(n);
	}
	return -1;
}

static int64_t hook_hash_lookup(struct vm_hook_ctx *c, int64_t key)
{
	const uint8_t *h = vm_hook_mem(c, ISA_R_FIRST_IMPORT, 0, 8, 0);
	if (!h) {
		vm_hook_fail(c, "hash_lookup: no table");
		return 0;
	}
	uint64_t b = ((uint64_t)key * GOLDEN) >> (ld64(h) & 63);
	const uint8_t *bp = vm_hook_mem(c, ISA_R_FIRST_IMPORT, 8 + 8 * b, 8, 0);
	uint64_t p = bp ? ld64(bp) : 0;
	for (unsigned steps = 0; p; steps++) {
		const uint8_t *n = vm_hook_mem(c, ISA_R_FIRST_IMPORT, p, NODE_LEN, 0);
		if (!n || steps == HOOK_STEPS) {
			vm_hook_fail(c, "hash_lookup: bad node at %" PRIu64, p);
			return 0;
		}
		if (ld64(n + 8) == (uint64_t)key)
			return (int64_t)ld64(n + 16);
		p = ld64(n);
	}
	return -1;
}

/* A read that polls (recv without waiting) for up to RAW_POLL_NS before it blocks: the
 * raw-tcp-poll baseline, a socket program that spins as libarc and arfd may (net/pn_spin.c),
 * so their polling is also compared with a raw program doing the same. */
#define RAW_POLL_NS 50000
static ssize_t read_polling(int fd, void *buf, size_t len)
{
	uint64_t until = now_ns() + RAW_POLL_NS;
	for (;;) {
		ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return n;
		if (now_ns() >= until)
			return read(fd, buf, len);
	}
}

/* The raw baselines' server: echo what arrives, as it arrives, until the peer closes: one
 * read and one write per burst, the best a socket server can do (a pipelined burst of
 * RAW_LEN-byte messages is answered with one write); polling (raw-tcp-poll) or not. */
struct raw_server { int lfd; bool polling; };
static void *raw_echo(void *arg)
{
	const struct raw_server *rs = arg;
	int fd = accept(rs->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	uint8_t buf[64 * RAW_LEN];
	for (;;) {
		ssize_t n = rs->polling ? read_polling(fd, buf, sizeof buf) : read(fd, buf, sizeof buf);
		if (n <= 0 || write(fd, buf, (size_t)n) != n) {
			close(fd);
			return NULL;
		}
	}
}

/* A loopback listener served by raw_echo on a thread of its own; its port. */
static unsigned raw_listener(struct raw_server *rs, bool polling)
{
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof sa;
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 1) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0)
		die("raw listener", strerror(errno));
	*rs = (struct raw_server){ lfd, polling };
	pthread_t th;
	pthread_create(&th, NULL, raw_echo, rs);
	pthread_detach(th);
	return ntohs(sa.sin_port);
}

/* Runs in the child: start arfd and the echo listener, tell the parent where they are on
 * to_parent, serve until from_parent reaches EOF (the parent closed it or died). */
static void server_main(int to_parent, int from_parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_IGN);
	arfd_log_setup(ARFD_LOG_WARN, false);
	static struct arfd_config cfg;
	cfg.listen[cfg.n_listen++] = "tcp:127.0.0.1:0";
	struct arfd_region_spec *g = &cfg.regions[cfg.n_regions++];
	snprintf(g->name, sizeof g->name, "mem");
	g->size = list_size();
	g->access = ISA_ACC_RW;
	g = &cfg.regions[cfg.n_regions++];
	snprintf(g->name, sizeof g->name, "table");
	g->size = table_size();
	g->access = ISA_ACC_RW;
	cfg.hooks[cfg.n_hooks++] = (struct arfd_hook){ "list_find", (void *)hook_list_find, "ll:l", NULL, false };
	cfg.hooks[cfg.n_hooks++] = (struct arfd_hook){ "hash_lookup", (void *)hook_hash_lookup, "l:l", NULL, false };
	cfg.hooks[cfg.n_hooks++] = (struct arfd_hook){ "nop", (void *)hook_nop, "l:l", NULL, false };
	g = &cfg.regions[cfg.n_regions++];
	snprintf(g->name, sizeof g->name, "scratch");
	g->size = 4096;
	g->access = ISA_ACC_RW;
	/* an ARF image in a temporary file, gone when the server is */
	static char image[] = "/tmp/bench_tradeoff.arf.XXXXXX";
	int ifd = mkstemp(image);
	char merr[256];
	if (ifd < 0 || arf_mkfs(image, 64u << 20, 4096, merr, sizeof merr) != 0)
		die("arf image", ifd < 0 ? strerror(errno) : merr);
	close(ifd);
	cfg.arf_image = image;
	char err[256];
	struct arfd *s = arfd_start(&cfg, err, sizeof err);
	if (!s)
		die("arfd_start", err);

	static struct raw_server plain, polling;
	unsigned raw_port = raw_listener(&plain, false), poll_port = raw_listener(&polling, true);
	dprintf(to_parent, "%s %u %u\n", arfd_endpoint(s, "tcp"), raw_port, poll_port);
	char c;
	while (read(from_parent, &c, 1) > 0)
		;
	arfd_stop(s, 2000);
	unlink(image);
	_exit(0);
}

struct task_count;
static void print_thread_times(const struct task_count *t0, size_t n0, int child);

/* How the clients' and the server's waits went over the whole run (pn_stats: read in the
 * caller or woken, polled or why not): what tells a run whose requests paid a wake-up from one
 * whose did not, at no cost to the measurement (counters read at the end). */
static void print_wait_stats(struct arc *a, struct arc *a_plain)
{
	const char *who[] = { "client (session)", "client (no session)" };
	struct arc *c[] = { a, a_plain };
	for (int i = 0; i < 2; i++) {
		char *t = arc_net_wait_stats(c[i]);
		for (char *p = t; p && *p; p++)
			if (*p == '\n')
				*p = p[1] ? ',' : 0;
		printf("waits, %s: %s\n", who[i], t ? t : "?");
		free(t);
	}
	char *t = NULL;
	if (arc_stats(a, &t) == 0) {
		printf("waits, server:");
		for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n"))
			if (!strncmp(line, "net.polls", 9) || !strncmp(line, "net.spin", 8) ||
			    !strncmp(line, "exec.on_reader", 14) || !strncmp(line, "exec.handed_over", 16))
				printf(" %s,", line + (line[0] == 'n' ? 4 : 0));
		printf("\n");
	}
	free(t);
}

/* ---- the structures, built by the client ---- */

struct data {
	uint8_t *list;                  /* image of region mem */
	uint64_t head;
	uint64_t list_keys[LIST_LEN];   /* key of the i-th node in list order */
	uint8_t *table;                 /* image of region table */
	uint64_t *keys;                 /* every key in the table, in insertion order */
};

static uint64_t list_value(uint64_t key) { return key ^ 0x5a5a5a5a5a5a5a5aull; }
static uint64_t hash_value(uint64_t key) { return key * 3 + 1; }

static void build(struct data *d)
{
	uint64_t seed = 42;
	/* the list: LIST_LEN nodes at distinct random slots (slot 0 is the null offset) */
	d->list = calloc(1, list_size());
	uint32_t *slot = malloc(plan->list_slots * sizeof *slot);
	if (!d->list || !slot)
		die("build", "out of memory");
	for (uint32_t i = 0; i < plan->list_slots; i++)
		slot[i] = i;
	for (uint32_t i = plan->list_slots - 1; i > 1; i--) {   /* shuffle slots 1.. */
		uint32_t j = 1 + (uint32_t)(splitmix(&seed) % i);
		uint32_t t = slot[i]; slot[i] = slot[j]; slot[j] = t;
	}
	uint64_t next = 0;
	for (int i = LIST_LEN - 1; i >= 0; i--) {               /* built back to front */
		uint64_t off = (uint64_t)slot[1 + i] * NODE_LEN;
		d->list_keys[i] = splitmix(&seed) | 1;              /* never 0 */
		st64(d->list + off, next);
		st64(d->list + off + 8, d->list_keys[i]);
		st64(d->list + off + 16, list_value(d->list_keys[i]));
		next = off;
	}
	d->head = next;
	free(slot);

	/* the hash table, as examples/hash_table.pna reads it: shift, buckets, then the nodes,
	 * pushed onto their chains in a shuffled order of node slots */
	uint64_t n = n_keys(), nodes_at = 8 + 8 * n;
	d->table = calloc(1, table_size());
	d->keys = malloc(n * sizeof *d->keys);
	uint32_t *perm = malloc(n * sizeof *perm);
	if (!d->table || !d->keys || !perm)
		die("build", "out of memory");
	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	for (uint32_t i = (uint32_t)n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(splitmix(&seed) % (i + 1));
		uint32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
	}
	unsigned shift = 64 - plan->hash_log2;
	st64(d->table, shift);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t key = splitmix(&seed);                   /* 64-bit random: no duplicates in
		                                                     * practice; lookups check values */
		d->keys[i] = key;
		uint64_t b = (key * GOLDEN) >> shift, off = nodes_at + (uint64_t)perm[i] * NODE_LEN;
		st64(d->table + off, ld64(d->table + 8 + 8 * b));
		st64(d->table + off + 8, key);
		st64(d->table + off + 16, hash_value(key));
		st64(d->table + 8 + 8 * b, off);
	}
	free(perm);
}

static void upload(struct arc *a, const char *region, const uint8_t *img, uint64_t len)
{
	for (uint64_t off = 0; off < len; off += CHUNK) {
		uint32_t n = (uint32_t)(len - off < CHUNK ? len - off : CHUNK);
		if (arc_write(a, region, off, img + off, n) != 0)
			die("arc_write", arc_errmsg(a));
	}
}

/* ---- the operations: each returns the value found (checked by the caller) ---- */

struct ctx {
	struct arc *a;
	struct arc *a_plain;            /* a client without a session (docs/net.md, "Sessions") */
	struct data *d;
	int raw;                        /* raw ping-pong socket */
	int raw_poll;                   /* ... whose both ends poll before blocking */
	uint8_t *seg_list, *seg_hash, *seg_list_hook, *seg_hash_hook, *seg_null, *seg_store,
	        *seg_nop;
	size_t len_list, len_hash, len_list_hook, len_hash_hook, len_null, len_store, len_nop;
	uint64_t rtts;                  /* round trips of the last operation */
	uint64_t seed;
	struct arf_client *fs;          /* ARF: namespace and data operations */
	struct arf_data *fd;
	uint64_t dir, file;             /* /bench and /bench/f (4 KiB writes) */
	uint64_t renames;               /* /bench/r0 is r1 after an odd number */
};

/* The id of one of the bench's segments (they live as long as the process and never change,
 * so their address names them): hashed once, as an application running a segment many
 * times does (arc_exec's seg_id), not on every run. */
static const uint8_t *id_of(const uint8_t *seg, size_t len)
{
	static struct { const uint8_t *seg; uint8_t id[AR_ID_LEN]; } known[8];
	static unsigned n;
	for (unsigned i = 0; i < n; i++)
		if (known[i].seg == seg)
			return known[i].id;
	if (n == 8)
		return NULL;
	known[n].seg = seg;
	isa_seg_id(seg, len, known[n].id);
	return known[n++].id;
}

static int64_t exec_or_die(struct ctx *c, const uint8_t *seg, size_t len, const char *entry,
                           const int64_t *args, unsigned n)
{
	struct arc_exec x = { .seg = seg, .seg_len = len, .seg_id = id_of(seg, len),
	                      .entry = entry, .args = args, .n_args = n };
	int rc = arc_exec(c->a, &x);
	if (rc != 0)
		die("arc_exec", arc_errmsg(c->a));
	free(x.out);
	c->rtts = 1;
	return x.value;
}

static int64_t list_reads(struct ctx *c, uint64_t key)
{
	uint64_t p = c->d->head;
	c->rtts = 0;
	while (p) {
		uint8_t n[NODE_LEN];
		if (arc_read(c->a, "mem", p, n, NODE_LEN) != 0)
			die("arc_read", arc_errmsg(c->a));
		c->rtts++;
		if (ld64(n + 8) == key)
			return (int64_t)ld64(n + 16);
		p = ld64(n);
	}
	return -1;
}

static int64_t hash_reads(struct ctx *c, uint64_t key)
{
	uint8_t w[8], n[NODE_LEN];
	uint64_t b = (key * GOLDEN) >> (64 - plan->hash_log2);
	if (arc_read(c->a, "table", 8 + 8 * b, w, 8) != 0)
		die("arc_read", arc_errmsg(c->a));
	c->rtts = 1;
	for (uint64_t p = ld64(w); p; p = ld64(n)) {
		if (arc_read(c->a, "table", p, n, NODE_LEN) != 0)
			die("arc_read", arc_errmsg(c->a));
		c->rtts++;
		if (ld64(n + 8) == key)
			return (int64_t)ld64(n + 16);
	}
	return -1;
}

static void raw_ping(struct ctx *c, uint64_t i, bool polling)
{
	uint8_t buf[RAW_LEN] = { 0 };
	st64(buf, i);
	int fd = polling ? c->raw_poll : c->raw;
	if (write(fd, buf, RAW_LEN) != RAW_LEN)
		die("raw write", strerror(errno));
	size_t got = 0;
	while (got < RAW_LEN) {
		ssize_t n = polling ? read_polling(fd, buf + got, RAW_LEN - got) :
		                      read(fd, buf + got, RAW_LEN - got);
		if (n <= 0)
			die("raw read", n ? strerror(errno) : "closed");
		got += (size_t)n;
	}
	if (ld64(buf) != i)
		die("raw ping", "wrong echo");
	c->rtts = 1;
}

static int raw_connect(unsigned port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		die("raw connect", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

/* ---- series: one structure x length x method ---- */

enum method { M_READS, M_ACTIVE, M_HOOK, M_NULL, M_NULL_PLAIN, M_READ8, M_WRITE8, M_STORE, M_NOP,
	M_ARF_STAT, M_ARF_CREATE, M_ARF_WRITE, M_ARF_RENAME, M_RAW, M_RAW_POLL };
static const char *const method_name[] = { "reads", "active", "hook", "null-exec",
	"null-exec-nosess", "read8",
	"write8", "exec-store", "hook-call", "arf-stat", "arf-create", "arf-write4k",
	"arf-rename", "raw-tcp", "raw-tcp-poll" };

struct series {
	const char *structure;          /* "list", "hash", "baseline" */
	unsigned len;                   /* list walk length; 0 otherwise */
	enum method m;
	double *lat_us;
	size_t n, cap;
	uint64_t rtts;
};

/* One operation of series s, its answer checked against the local copy. */
static void run_op(struct ctx *c, struct series *s, uint64_t i)
{
	int64_t want = 0, got = 0;
	if (!strcmp(s->structure, "list")) {
		uint64_t key = c->d->list_keys[s->len - 1];
		want = (int64_t)list_value(key);
		int64_t args[2] = { (int64_t)c->d->head, (int64_t)key };
		got = s->m == M_READS ? list_reads(c, key)
		    : s->m == M_ACTIVE ? exec_or_die(c, c->seg_list, c->len_list, "find", args, 2)
		    : exec_or_die(c, c->seg_list_hook, c->len_list_hook, NULL, args, 2);
		if (s->m == M_READS && c->rtts != s->len)
			die("list walk", "wrong number of nodes visited");
	} else if (!strcmp(s->structure, "hash")) {
		uint64_t key = c->d->keys[splitmix(&c->seed) % n_keys()];
		want = (int64_t)hash_value(key);
		int64_t arg = (int64_t)key;
		got = s->m == M_READS ? hash_reads(c, key)
		    : s->m == M_ACTIVE ? exec_or_die(c, c->seg_hash, c->len_hash, "lookup", &arg, 1)
		    : exec_or_die(c, c->seg_hash_hook, c->len_hash_hook, NULL, &arg, 1);
	} else if (s->m == M_NULL || s->m == M_NULL_PLAIN) {
		struct ctx plain = *c;
		plain.a = c->a_plain;
		got = exec_or_die(s->m == M_NULL ? c : &plain, c->seg_null, c->len_null, NULL, NULL, 0);
		c->rtts = 1;
	} else if (s->m == M_STORE || s->m == M_NOP) {
		int64_t v = (int64_t)i;
		want = s->m == M_STORE ? v : v + 1;
		got = s->m == M_STORE ? exec_or_die(c, c->seg_store, c->len_store, NULL, &v, 1)
		                      : exec_or_die(c, c->seg_nop, c->len_nop, NULL, &v, 1);
	} else if (s->m == M_ARF_STAT) {
		struct arf_attr at;
		got = arf_getattr(c->fs, c->file, &at);
		if (got == 0 && !S_ISREG(at.mode))
			die("arf getattr", "not the bench's file");
		c->rtts = 1;
	} else if (s->m == M_ARF_CREATE) {
		char name[32];
		snprintf(name, sizeof name, "c%" PRIu64, i);
		got = arf_create(c->fs, c->dir, name, 0644, 0, 0) > 0 ? 0 : -1;
		c->rtts = 1;
	} else if (s->m == M_ARF_WRITE) {
		uint8_t page[4096];
		memset(page, (int)i, sizeof page);
		got = arf_write(c->fd, c->file, (i % 256) * 4096, page, sizeof page);
		want = sizeof page;
		c->rtts = 1;
	} else if (s->m == M_ARF_RENAME) {
		/* r0 -> r1 -> r0 ...: the file exists under the name of i's parity */
		bool at1 = c->renames++ % 2;
		got = arf_rename(c->fs, c->dir, at1 ? "r1" : "r0", c->dir, at1 ? "r0" : "r1", 0);
		c->rtts = 1;
	} else if (s->m == M_WRITE8) {
		uint8_t w[8];
		st64(w, i);
		if (arc_write(c->a, "scratch", 8, w, 8) != 0)
			die("arc_write", arc_errmsg(c->a));
		c->rtts = 1;
	} else if (s->m == M_READ8) {
		uint8_t w[8];
		if (arc_read(c->a, "mem", c->d->head, w, 8) != 0)
			die("arc_read", arc_errmsg(c->a));
		c->rtts = 1;
		got = (int64_t)ld64(w);
		want = (int64_t)ld64(c->d->list + c->d->head);
	} else {
		raw_ping(c, i, s->m == M_RAW_POLL);
	}
	if (got != want) {
		char m[160];
		snprintf(m, sizeof m, "%s %u %s: got %" PRId64 ", want %" PRId64, s->structure, s->len,
		         method_name[s->m], got, want);
		die("wrong answer", m);
	}
}

/* ---- pipelined: DEPTH requests out, then their DEPTH replies, for batch_s ---- */

#define DEPTH 16
static const enum method piped[] = { M_NULL, M_STORE, M_NOP, M_RAW };
#define N_PIPED (sizeof piped / sizeof piped[0])

/* Bursts of m for about secs; adds what it did to *ops and *ns. */
static void run_piped(struct ctx *c, enum method m, double secs, uint64_t *ops, uint64_t *ns)
{
	uint64_t t0 = now_ns(), t_end = t0 + (uint64_t)(secs * 1e9), k = 0;
	do {
		if (m == M_RAW) {
			uint8_t buf[DEPTH * RAW_LEN] = { 0 };
			for (unsigned j = 0; j < DEPTH; j++)
				st64(buf + j * RAW_LEN, k + j);
			if (write(c->raw, buf, sizeof buf) != (ssize_t)sizeof buf)
				die("raw write", strerror(errno));
			for (size_t got = 0; got < sizeof buf;) {
				ssize_t n = read(c->raw, buf + got, sizeof buf - got);
				if (n <= 0)
					die("raw read", n ? strerror(errno) : "closed");
				got += (size_t)n;
			}
			for (unsigned j = 0; j < DEPTH; j++)
				if (ld64(buf + j * RAW_LEN) != k + j)
					die("raw pipelined", "wrong echo");
		} else {
			struct arc_exec x[DEPTH];
			struct arc_pending *p[DEPTH];
			int64_t v[DEPTH];
			const uint8_t *seg = m == M_NULL ? c->seg_null : m == M_STORE ? c->seg_store : c->seg_nop;
			size_t len = m == M_NULL ? c->len_null : m == M_STORE ? c->len_store : c->len_nop;
			arc_batch_begin(c->a);  /* one write for the burst, as the raw client's */
			for (unsigned j = 0; j < DEPTH; j++) {
				v[j] = (int64_t)(k + j);
				x[j] = (struct arc_exec){ .seg = seg, .seg_len = len, .seg_id = id_of(seg, len),
				                          .args = &v[j], .n_args = m == M_NULL ? 0 : 1 };
				if (arc_exec_start(c->a, &x[j], &p[j]) != 0)
					die("arc_exec_start", arc_errmsg(c->a));
			}
			arc_batch_end(c->a);
			for (unsigned j = 0; j < DEPTH; j++) {
				if (arc_exec_wait(c->a, p[j]) != 0)
					die("arc_exec_wait", arc_errmsg(c->a));
				free(x[j].out);
				int64_t want = m == M_NULL ? 0 : m == M_STORE ? v[j] : v[j] + 1;
				if (x[j].value != want)
					die("pipelined", "wrong answer");
			}
		}
		k += DEPTH;
	} while (now_ns() < t_end);
	*ops += k;
	*ns += now_ns() - t0;
}

/* Untimed: undo what operation i of s left behind (the file a create made). */
static void after_op(struct ctx *c, struct series *s, uint64_t i)
{
	if (s->m == M_ARF_CREATE) {
		char name[32];
		snprintf(name, sizeof name, "c%" PRIu64, i);
		if (arf_unlink(c->fs, c->dir, name) != 0)
			die("arf unlink", arf_client_errmsg(c->fs));
	}
}

/* ---- --count N: context switches per operation, per thread of both processes ---- */

#define MAX_TASKS 256
#define COUNT_ROUNDS 8              /* --count: rounds, series taking turns */
struct task_count {
	int pid, tid, cpu;
	char comm[32];
	unsigned long long vol, invol, utime, stime, migr;
	unsigned long long run_ns, wait_ns;   /* schedstat: on a CPU, and runnable but waiting */
};

/* The counters of every thread of pid (at most MAX_TASKS - *n more) appended to t. */
static void read_tasks(int pid, struct task_count *t, size_t *n)
{
	char path[128];
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) && *n < MAX_TASKS;) {
		if (e->d_name[0] == '.')
			continue;
		struct task_count *c = &t[*n];
		*c = (struct task_count){ .pid = pid, .tid = atoi(e->d_name) };
		char line[256];
		snprintf(path, sizeof path, "/proc/%d/task/%d/status", pid, c->tid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof line, f)) {
			sscanf(line, "Name: %31s", c->comm);
			sscanf(line, "voluntary_ctxt_switches: %llu", &c->vol);
			sscanf(line, "nonvoluntary_ctxt_switches: %llu", &c->invol);
		}
		fclose(f);
		snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, c->tid);
		f = fopen(path, "r");
		if (f && fgets(line, sizeof line, f)) {
			const char *p = strrchr(line, ')');   /* comm may hold spaces */
			if (p)
				sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d "
				       "%*d %*d %*d %*d %*u %*u %*d %*u %*u %*u %*u %*u %*u %*u %*u %*u %*u "
				       "%*u %*u %*u %*d %d", &c->utime, &c->stime, &c->cpu);
		}
		if (f)
			fclose(f);
		snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, c->tid);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu %llu", &c->run_ns, &c->wait_ns) != 2)
			c->run_ns = c->wait_ns = 0;
		if (f)
			fclose(f);
		snprintf(path, sizeof path, "/proc/%d/task/%d/sched", pid, c->tid);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof line, f))
			sscanf(line, "se.nr_migrations : %llu", &c->migr);
		if (f)
			fclose(f);
		(*n)++;
	}
	closedir(d);
}

/* Runs n operations of s and prints their mean latency and the switches per operation of
 * each side (voluntary: a thread slept; involuntary: it was preempted) and, with detail, of
 * every thread that switched, with its CPU ticks and the CPU it ran on last. */
static void count_switches(struct ctx *c, struct series *s, int child, unsigned n, bool detail)
{
	static struct task_count a[MAX_TASKS], b[MAX_TASKS];
	size_t na = 0, nb = 0;
	read_tasks(getpid(), a, &na);
	read_tasks(child, a, &na);
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < n; i++) {
		run_op(c, s, i);
		after_op(c, s, i);
	}
	uint64_t t1 = now_ns();
	read_tasks(getpid(), b, &nb);
	read_tasks(child, b, &nb);
	double vol[2] = { 0 }, invol[2] = { 0 }, migr[2] = { 0 };
	int cpu[2] = { -1, -1 };        /* the busiest thread's last CPU, per side */
	double most[2] = { 0 };
	for (size_t j = 0; j < nb; j++) {
		struct task_count o = { 0 };
		for (size_t i = 0; i < na; i++)
			if (a[i].tid == b[j].tid)
				o = a[i];
		double v = (double)(b[j].vol - o.vol) / n, iv = (double)(b[j].invol - o.invol) / n;
		double m = (double)(b[j].migr - o.migr) / n;
		int side = b[j].pid != getpid();
		vol[side] += v;
		invol[side] += iv;
		migr[side] += m;
		if (v + iv > most[side])
			most[side] = v + iv, cpu[side] = b[j].cpu;
		if (detail && (v >= 0.005 || iv >= 0.005))
			printf("    %-6s tid %-7d vol %6.3f invol %6.3f migrations %6.3f /op, %llu "
			       "ticks, last on cpu %d\n", side ? "server" : "client", b[j].tid, v, iv, m,
			       b[j].utime + b[j].stime - o.utime - o.stime, b[j].cpu);
	}
	printf("  %-16s %8.2f us/op  client vol %.3f invol %.3f migr %.3f cpu %d  server vol %.3f "
	       "invol %.3f migr %.3f cpu %d\n", method_name[s->m], (double)(t1 - t0) / 1e3 / n,
	       vol[0], invol[0], migr[0], cpu[0], vol[1], invol[1], migr[1], cpu[1]);
}

/* Every thread of both processes that ran during the measurement: its time on a CPU and
 * its time runnable but waiting for one (schedstat), from t0 (taken before) to now.  A run
 * whose polling was turned off for load shows here who the third runnable thread was. */
static void print_thread_times(const struct task_count *t0, size_t n0, int child)
{
	static struct task_count t1[MAX_TASKS];
	size_t n1 = 0;
	read_tasks(getpid(), t1, &n1);
	read_tasks(child, t1, &n1);
	for (size_t j = 0; j < n1; j++) {
		struct task_count o = { 0 };
		for (size_t i = 0; i < n0; i++)
			if (t0[i].tid == t1[j].tid)
				o = t0[i];
		double run = (double)(t1[j].run_ns - o.run_ns) / 1e6;
		double wait = (double)(t1[j].wait_ns - o.wait_ns) / 1e6;
		if (run >= 0.5 || wait >= 0.5)
			printf("thread, %s %-16s run %8.1f ms, waited %7.1f ms, switches %llu+%llu\n",
			       t1[j].pid == getpid() ? "client" : "server", t1[j].comm, run, wait,
			       t1[j].vol - o.vol, t1[j].invol - o.invol);
	}
}

/* The pause before each turn: what the turn before left spinning has stopped by then (the
 * raw-tcp-poll echo thread polls RAW_POLL_NS after its last message, a server's reader
 * spin_us after its last request).  Without it the series after raw-tcp-poll began every
 * turn with a third runnable thread, and that is when libarc's spin gate takes its looks
 * (its first wait after a pause): the session row, which followed raw-tcp-poll in three
 * rounds of four, found the machine full and stopped polling in runs where the row after
 * it did not (--baseline on the quiet machine, 8 runs: null EXEC with a session 14-24 us in
 * 3, 8.6-8.8 in the others; with the two rows swapped the one without a session was the
 * slow one; without raw-tcp-poll, or with this pause, 8 of 8 at 8.6-8.8 (11.9-12.1 in a run
 * where every row was slower, the row without a session too)). */
#define TURN_GAP_NS (10 * RAW_POLL_NS)

static void run_batch(struct ctx *c, struct series *s)
{
	nanosleep(&(struct timespec){ 0, TURN_GAP_NS }, NULL);
	uint64_t t_end = now_ns() + (uint64_t)(plan->batch_s * 1e9);
	for (unsigned k = 0; k < plan->batch; k++) {
		uint64_t t0 = now_ns();
		run_op(c, s, s->n);
		uint64_t t1 = now_ns();
		after_op(c, s, s->n);
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 1024;
			s->lat_us = realloc(s->lat_us, s->cap * sizeof *s->lat_us);
			if (!s->lat_us)
				die("realloc", "out of memory");
		}
		s->lat_us[s->n++] = (double)(t1 - t0) / 1e3;
		s->rtts += c->rtts;
		if (t1 > t_end && k >= 2)
			break;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct summary { double median, p99, mean, ops_s, rtts; };

static struct summary summarize(struct series *s)
{
	struct summary r = { 0 };
	if (!s->n)
		return r;
	double sum = 0;
	for (size_t i = 0; i < s->n; i++)
		sum += s->lat_us[i];
	qsort(s->lat_us, s->n, sizeof *s->lat_us, cmp_double);
	r.median = s->n % 2 ? s->lat_us[s->n / 2] : (s->lat_us[s->n / 2 - 1] + s->lat_us[s->n / 2]) / 2;
	r.p99 = s->lat_us[(size_t)((double)(s->n - 1) * 0.99)];
	r.mean = sum / (double)s->n;
	r.ops_s = 1e6 / r.mean;
	r.rtts = (double)s->rtts / (double)s->n;
	return r;
}

/* ---- segments ---- */

static uint8_t *assemble(const char *src, size_t len, const char *name, size_t *seg_len)
{
	uint8_t *seg;
	char *diags = NULL;
	if (asm_assemble(src, len, name, &seg, seg_len, &diags) != 0)
		die(name, diags ? diags : "does not assemble");
	free(diags);
	return seg;
}

static uint8_t *assemble_file(const char *rel, size_t *seg_len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", BENCH_SRCDIR, rel);
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path, strerror(errno));
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	return assemble(buf, n, path, seg_len);
}

static uint8_t *assemble_str(const char *src, size_t *seg_len)
{
	return assemble(src, strlen(src), "bench_tradeoff", seg_len);
}

/* ---- main ---- */

int main(int argc, char **argv)
{
	const char *dir = "results", *only = NULL;
	unsigned count = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--baseline"))
			baseline_only = true, plan = plan == &quick ? plan : &baseline;
		else if (!strcmp(argv[i], "--quick"))
			plan = &quick;
		else if (!strcmp(argv[i], "--results") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = (unsigned)atoi(argv[++i]), baseline_only = true;
		else {
			fprintf(stderr, "usage: bench_tradeoff [--quick] [--baseline] [--results DIR] "
			        "[--only METHOD] [--count N]\n  --only: run that method's series alone (and "
			        "raw-tcp, the baseline), for profiling one path; METHOD as in the results' "
			        "method column\n  --count N: rounds of N operations of each baseline series, with "
			        "the context switches per operation of both processes\n");
			return 2;
		}
	}
	alarm(plan->budget_s);          /* whatever happens, the run ends */
	double load[2][3] = { { -1, -1, -1 }, { -1, -1, -1 } };   /* other work on the machine */
	getloadavg(load[0], 3);

	/* the server first, before this process has any thread */
	int up[2], down[2];
	if (pipe(up) != 0 || pipe(down) != 0)
		die("pipe", strerror(errno));
	pid_t child = fork();
	if (child < 0)
		die("fork", strerror(errno));
	if (child == 0) {
		close(up[0]);
		close(down[1]);
		server_main(up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	char line[256] = "";
	FILE *uf = fdopen(up[0], "r");
	if (!uf || !fgets(line, sizeof line, uf))
		die("server", "did not start");
	fclose(uf);
	char ep[200];
	unsigned raw_port, poll_port;
	if (sscanf(line, "%199s %u %u", ep, &raw_port, &poll_port) != 3)
		die("server said", line);

	char err[256];
	struct arc_opts o = { .timeout_ms = 60000 };
	struct arc *a = arc_connect(ep, &o, err, sizeof err);
	if (!a)
		die("arc_connect", err);
	struct arc_opts op = { .timeout_ms = 60000, .outage_ms = -1 };
	struct arc *a_plain = arc_connect(ep, &op, err, sizeof err);
	if (!a_plain)
		die("arc_connect", err);
	struct data d;
	uint64_t t0 = now_ns();
	build(&d);
	upload(a, "mem", d.list, list_size());
	upload(a, "table", d.table, table_size());
	double setup_s = (double)(now_ns() - t0) / 1e9;

	struct ctx c = { .a = a, .a_plain = a_plain, .d = &d, .seed = 7 };
	c.seg_list = assemble_file("examples/linked_list.pna", &c.len_list);
	c.seg_hash = assemble_file("examples/hash_table.pna", &c.len_hash);
	c.seg_list_hook = assemble_str(".region mem ro\n.hook list_find \"ll:l\"\n"
		".func main head key\n    lget head\n    lget key\n    hcall list_find\n    ret\n.end\n"
		".export main\n", &c.len_list_hook);
	c.seg_hash_hook = assemble_str(".region table ro\n.hook hash_lookup \"l:l\"\n"
		".func main key\n    lget key\n    hcall hash_lookup\n    ret\n.end\n.export main\n",
		&c.len_hash_hook);
	c.seg_null = assemble_str(".func main\n    push 0\n    ret\n.end\n.export main\n", &c.len_null);
	c.seg_store = assemble_str(".region scratch rw\n.func main v\n    push 0\n    lget v\n"
		"    st64 scratch\n    lget v\n    ret\n.end\n.export main\n", &c.len_store);
	c.seg_nop = assemble_str(".hook nop \"l:l\"\n.func main v\n    lget v\n    hcall nop\n"
		"    ret\n.end\n.export main\n", &c.len_nop);
	uint8_t id[AR_ID_LEN];
	const uint8_t *segs[] = { c.seg_list, c.seg_hash, c.seg_list_hook, c.seg_hash_hook, c.seg_null,
		c.seg_store, c.seg_nop };
	const size_t lens[] = { c.len_list, c.len_hash, c.len_list_hook, c.len_hash_hook, c.len_null,
		c.len_store, c.len_nop };
	for (int i = 0; i < 7; i++)      /* installed up front: every timed EXEC goes by id */
		if (arc_install(a, segs[i], lens[i], id) != 0)
			die("arc_install", arc_errmsg(a));

	c.raw = raw_connect(raw_port);
	c.raw_poll = raw_connect(poll_port);

	c.fs = arf_client_open(a, BENCH_BUILD "/arfseg/ops.pno", err, sizeof err);
	if (!c.fs)
		die("arf_client_open", err);
	c.fd = arf_data_open(a, BENCH_BUILD "/arfseg/data.pno", err, sizeof err);
	if (!c.fd)
		die("arf_data_open", err);
	int64_t bdir = arf_mkdir(c.fs, 1, "bench", 0755, 0, 0);
	int64_t file = bdir > 0 ? arf_create(c.fs, (uint64_t)bdir, "f", 0644, 0, 0) : bdir;
	int64_t r0 = file > 0 ? arf_create(c.fs, (uint64_t)bdir, "r0", 0644, 0, 0) : file;
	if (r0 <= 0)
		die("arf setup", arf_client_errmsg(c.fs));
	c.dir = (uint64_t)bdir;
	c.file = (uint64_t)file;

	struct series s[N_LENS * 3 + 3 + (M_RAW_POLL - M_NULL + 1)];
	size_t ns = 0;
	for (size_t l = 0; l < N_LENS && !baseline_only; l++)
		for (int m = M_READS; m <= M_HOOK; m++)
			s[ns++] = (struct series){ .structure = "list", .len = walk_lens[l], .m = (enum method)m };
	for (int m = M_READS; m <= M_HOOK && !baseline_only; m++)
		s[ns++] = (struct series){ .structure = "hash", .m = (enum method)m };
	for (int m = M_NULL; m <= M_RAW_POLL; m++)
		if (!baseline_only || m == M_NULL || m == M_NULL_PLAIN || m >= M_RAW)
			s[ns++] = (struct series){ .structure = "baseline", .m = (enum method)m };
	if (only) {
		size_t kept = 0;
		for (size_t i = 0; i < ns; i++)
			if (!strcmp(s[i].structure, "baseline") &&
			    (!strcmp(method_name[s[i].m], only) || s[i].m >= M_RAW))
				s[kept++] = s[i];
		if (kept < 2)
			die("--only", "no baseline series of that method (see the method column of a "
			    "result: null-exec ... arf-rename)");
		ns = kept;
	}

	/* warm up every path (JIT'd code, connections, caches), then take turns */
	for (size_t i = 0; i < ns; i++)
		for (int k = 0; k < 20; k++) {
			run_op(&c, &s[i], (uint64_t)k);
			after_op(&c, &s[i], (uint64_t)k);
		}
	for (size_t i = 0; i < ns; i++)
		s[i].n = 0, s[i].rtts = 0;
	for (unsigned r = 0; r < COUNT_ROUNDS && count; r++) {
		printf("round %u\n", r);
		for (size_t i = 0; i < ns; i++)
			count_switches(&c, &s[(i + r) % ns], child, count, r + 1 == COUNT_ROUNDS);
	}
	if (count) {
		close(down[1]);
		int st;
		waitpid(child, &st, 0);
		return 0;
	}
	static struct task_count tasks0[MAX_TASKS];
	size_t ntasks0 = 0;
	if (baseline_only) {
		read_tasks(getpid(), tasks0, &ntasks0);
		read_tasks(child, tasks0, &ntasks0);
	}
	uint64_t t_meas = now_ns();
	for (unsigned r = 0; r < plan->rounds; r++)
		for (size_t i = 0; i < ns; i++)
			run_batch(&c, &s[(i + r) % ns]);  /* rotate the order, so no series always
			                                   * follows the same one */
	uint64_t p_ops[N_PIPED] = { 0 }, p_ns[N_PIPED] = { 0 };
	for (unsigned r = 0; r < plan->rounds && !baseline_only; r++)
		for (size_t i = 0; i < N_PIPED; i++) {
			size_t k = (i + r) % N_PIPED;
			if (only && piped[k] != M_RAW && strcmp(method_name[piped[k]], only))
				continue;
			run_piped(&c, piped[k], plan->batch_s, &p_ops[k], &p_ns[k]);
		}
	double meas_s = (double)(now_ns() - t_meas) / 1e9;
	getloadavg(load[1], 3);

	/* ---- report ---- */
	struct summary sum[sizeof s / sizeof s[0]];
	for (size_t i = 0; i < ns; i++)
		sum[i] = summarize(&s[i]);
	char path_csv[4096], path_txt[4096];
	const char *sfx = baseline_only ? (plan == &quick ? "-baseline-quick" : "-baseline") :
	                  plan == &quick ? "-quick" : "", *tmp = plan == &quick || only ? ".tmp" : "";
	snprintf(path_csv, sizeof path_csv, "%s/tradeoff%s.csv%s", dir, sfx, tmp);
	snprintf(path_txt, sizeof path_txt, "%s/tradeoff%s.txt%s", dir, sfx, tmp);
	FILE *csv = fopen(path_csv, "w"), *txt = fopen(path_txt, "w");
	if (!csv || !txt)
		die(dir, strerror(errno));
	fprintf(csv, "structure,len,method,ops,median_us,p99_us,mean_us,ops_per_s,round_trips_per_op\n");
	for (size_t i = 0; i < ns; i++)
		fprintf(csv, "%s,%u,%s,%zu,%.2f,%.2f,%.2f,%.0f,%.2f\n", s[i].structure, s[i].len,
		        method_name[s[i].m], s[i].n, sum[i].median, sum[i].p99, sum[i].mean,
		        sum[i].ops_s, sum[i].rtts);
	fclose(csv);

	struct utsname un;
	uname(&un);
	time_t now = time(NULL);
	char when[64];
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	FILE *outs[] = { stdout, txt };
	for (int f = 0; f < 2; f++) {
		FILE *o2 = outs[f];
		fprintf(o2, "# bench_tradeoff%s, %s, %s %s, %ld cpus, loopback tcp\n",
		        plan == &quick ? " --quick" : "", when, un.sysname, un.machine, ncpu);
		fprintf(o2, "# server: arfd in a forked child (4 worker threads, default engine); list of %d "
		        "nodes over %u slots (%" PRIu64 " KiB); hash table of %" PRIu64 " keys in %" PRIu64
		        " buckets (%" PRIu64 " MiB); setup %.1f s; measured %.1f s in %u rounds\n",
		        LIST_LEN, plan->list_slots, list_size() >> 10, n_keys(), n_keys(),
		        table_size() >> 20, setup_s, meas_s, plan->rounds);
		fprintf(o2, "# load average (1 min) %.2f before, %.2f after; one request at a time: "
		        "ops/s = 1 / mean latency; every answer checked\n", load[0][0], load[1][0]);
		fprintf(o2, "%-9s %5s %-10s %7s %11s %10s %10s %10s %7s\n", "structure", "len", "method",
		        "ops", "median_us", "p99_us", "mean_us", "ops/s", "rtts");
		for (size_t i = 0; i < ns; i++)
			fprintf(o2, "%-9s %5u %-10s %7zu %11.2f %10.2f %10.2f %10.0f %7.2f\n", s[i].structure,
			        s[i].len, method_name[s[i].m], s[i].n, sum[i].median, sum[i].p99, sum[i].mean,
			        sum[i].ops_s, sum[i].rtts);
		/* the goals: series 6 and 7 are the 100-node walk by reads and active */
		size_t r100 = 0, a100 = 0, nul = 0, raw = 0, raw_poll = 0;
		for (size_t i = 0; i < ns; i++) {
			if (!strcmp(s[i].structure, "list") && s[i].len == 100 && s[i].m == M_READS) r100 = i;
			if (!strcmp(s[i].structure, "list") && s[i].len == 100 && s[i].m == M_ACTIVE) a100 = i;
			if (s[i].m == M_NULL) nul = i;
			if (s[i].m == M_RAW) raw = i;
			if (s[i].m == M_RAW_POLL) raw_poll = i;
		}
		double speedup = a100 ? sum[r100].median / sum[a100].median : 0;
		if (a100)
			fprintf(o2, "goal: 100-node walk, reads / active = %.1fx (goal >= 30x): %s\n",
			        speedup, speedup >= 30 ? "met" : "NOT met");
		if (nul + 1 < ns && s[nul + 1].m == M_NULL_PLAIN) {
			double cost = sum[nul].median / sum[nul + 1].median;
			fprintf(o2, "goal: null-exec with a session / without = %.3fx (goal <= 1.03x): %s\n",
			        cost, cost <= 1.03 ? "met" : "NOT met");
		}
		for (size_t i = nul; i < raw; i++) {
			double over = sum[i].median / sum[raw].median;
			fprintf(o2, "goal: %s / raw TCP ping-pong = %.2fx (goal <= 1.25x): %s\n",
			        method_name[s[i].m], over, over <= 1.25 ? "met" : "NOT met");
		}
		/* not a goal: against a raw program that polls as we may (the two raw rows differ
		 * by where the scheduler put their threads: net/pn_spin.c) */
		for (size_t i = nul; i < raw && raw_poll; i++)
			fprintf(o2, "%s / raw TCP ping-pong polling = %.2fx\n", method_name[s[i].m],
			        sum[i].median / sum[raw_poll].median);
		double raw_piped = p_ns[N_PIPED - 1] ? (double)p_ops[N_PIPED - 1] * 1e9 /
		                   (double)p_ns[N_PIPED - 1] : 0;
		for (size_t i = 0; i < N_PIPED && !baseline_only; i++) {
			if (!p_ns[i])
				continue;           /* not run (--only) */
			double ops_s = p_ns[i] ? (double)p_ops[i] * 1e9 / (double)p_ns[i] : 0;
			fprintf(o2, "pipelined %d deep: %-10s %10.0f ops/s", DEPTH, method_name[piped[i]],
			        ops_s);
			if (piped[i] != M_RAW)
				fprintf(o2, ", %.2fx raw (goal >= 0.7x): %s", ops_s / raw_piped,
				        ops_s >= 0.7 * raw_piped ? "met" : "NOT met");
			fprintf(o2, "\n");
		}
		for (size_t i = 0; i < ns; i += 3)
			if (!strcmp(s[i].structure, "list") || !strcmp(s[i].structure, "hash"))
				fprintf(o2, "%s %u: reads / active %.1fx, hook / active %.2fx\n", s[i].structure,
				        s[i].len, sum[i].median / sum[i + 1].median,
				        sum[i + 2].median / sum[i + 1].median);
	}
	fclose(txt);
	printf("results: %s, %s\n", path_csv, path_txt);
	if (baseline_only) {
		print_wait_stats(a, a_plain);
		print_thread_times(tasks0, ntasks0, child);
	}

	close(c.raw);
	arf_data_close(c.fd);
	arf_client_close(c.fs);
	arc_close(a);
	arc_close(a_plain);
	close(down[1]);                 /* the child sees EOF and stops */
	int st;
	waitpid(child, &st, 0);
	for (size_t i = 0; i < ns; i++)
		free(s[i].lat_us);
	free(c.seg_list);
	free(c.seg_hash);
	free(c.seg_list_hook);
	free(c.seg_hash_hook);
	free(c.seg_null);
	free(c.seg_store);
	free(c.seg_nop);
	free(d.list);
	free(d.table);
	free(d.keys);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
