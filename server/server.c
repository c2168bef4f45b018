/* server.c: arfd's request handling: regions, the code cache, and one Paradis-Net handler per
 * operation of the Active RDMA protocol (proto/ar_proto.h).
 *
 * Where work runs: every request starts on the thread that read it (Paradis-Net's reader,
 * PN_INLINE): no other thread is woken on its path, so a request costs what a plain socket
 * server's does.  READ, WRITE, REGIONS and STATS are a bounds check and a memcpy or a few
 * lines of text.  An EXEC runs there to completion too, whatever it does (stores, hooks),
 * unless it outlives READER_BUDGET_US: then the VM tells us (vm_run_opts.on_slow, and the
 * hooks that may block say so before they do) and pn_yield gives the reader's place to
 * another thread, so the run goes on and delays no other request, not even later ones on
 * its own connection.  Such a run holds one of cfg.threads reader slots (struct worker
 * without a thread: for the per-client limit and cancelling, as a worker's run).  Requests
 * that cannot start there go to arfd's own workers as before: INSTALL, EXECs that arrive
 * while requests are queued (nothing overtakes queued work), while the reader slots are
 * taken or the client has cfg.threads runs, and every EXEC on transports that cannot hand
 * their reading over (udp:, rdma:), where only a short EXEC with no side effect is tried on
 * the reader (see do_exec_run: with a small fuel budget, redone on a worker when that is
 * not enough).  Admission (secret, draining, the per-client limit, which thus counts queued
 * requests too) is on the reader.  What concurrent segments may rely on: each run
 * has private locals, stack and output; region memory is shared and unsynchronised except
 * through the ISA's atomics (cas, fadd: sequentially consistent); a segment's effects are
 * visible to requests that start after its reply was sent.
 *
 * How long a run may hold a worker: every run has a wall-clock limit (cfg.max_run_ms, or less
 * if the request asks) and pays for the time its hooks take in fuel (cfg.hook_fuel_ns), both
 * enforced by the VM (vm_run_opts); a run whose client's connection breaks is cancelled a
 * second later (pn_set_peer_down), and every run still going when arfd_stop's wait ends at
 * once.  Long runs
 * do not starve short requests: there are 2 x cfg.threads workers, but at most cfg.threads of
 * them run requests that have not yet run LONG_RUN_MS; a run past that no longer counts, and
 * a spare worker takes up the queue; one client has at most cfg.threads of them (worker_main).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ar_proto.h"
#include "arf.h"
#include "arf_cluster.h"
#include "server.h"

/* A fault for tests (tests/integration/arf_restart.sh): ARFD_TEST_KILL=ENTRY:N in the
 * environment kills the process (SIGKILL) right after the N-th run of export ENTRY that
 * completed, before its reply is sent: the state is changed and the client never hears of
 * it, the case that exactly-once across a restart is about (docs/arf.md). */
static char test_kill_entry[64];
static unsigned long test_kill_at;
static atomic_ulong test_kill_n;

static void test_kill_setup(void)
{
	const char *e = getenv("ARFD_TEST_KILL");
	const char *colon = e ? strchr(e, ':') : NULL;
	if (!colon || (size_t)(colon - e) >= sizeof test_kill_entry)
		return;
	memcpy(test_kill_entry, e, (size_t)(colon - e));
	test_kill_entry[colon - e] = '\0';
	test_kill_at = strtoul(colon + 1, NULL, 10);
}

struct region {
	char name[256];
	uint8_t *base;
	uint64_t len;
	unsigned access;
	bool admin_write;              /* written only with admin rights (arfd_region_spec) */
	bool file;
	int fd;                        /* the file of a writable file region (writeback), else -1 */
	struct pn_mem *mem;            /* exported for one-sided access (rdma:), or NULL */
	uint8_t handle[PN_MEM_HANDLE_LEN];
};

/* An installed segment.  refs counts the runs using it, so eviction never frees a program
 * that is running; the cache's own reference is dropped on eviction. */
struct cached {
	uint8_t id[AR_ID_LEN];
	struct vm_prog *prog;
	bool quick;                    /* may be tried on the I/O thread (inline_candidate) */
	bool admin;                    /* imports an admin_write region rw: runs need admin rights */
	unsigned refs;
	struct cached *prev, *next;    /* LRU list, most recent first */
};

enum { OP_STATS_N = AR_T_STATS + 1 };

/* A run on a worker this long counts as long: it no longer holds one of the cfg.threads
 * places of ordinary work (see the top).  A request that waits for a worker while every
 * place is held is thus started within about this long, as long as a spare worker is free. */
#define LONG_RUN_MS 100

/* An EXEC started on the reader (see the top) that goes on this long hands the reader's
 * place over; till then other requests wait for it, up to this plus one look of the VM
 * (VM_SLOW_CHUNK of fuel, or one hook call). */
#define READER_BUDGET_US 200
/* Loading a segment larger than this (verify, translate, compile) counts as blocking. */
#define INSTALL_ON_READER_MAX 16384
/* Writeback ranges waiting for the flusher; when it is this far behind, a run starts its
 * own (and so waits for the device queue itself). */
#define WB_QUEUE 256
/* A writeback range is started once it has gathered this many bytes (the writes that continue
 * it extend it) or once it is WB_AGE_NS old.  Starting each small write's pages at once costs
 * that write's page a TLB shoot-down and its next write a page fault (the kernel write-protects
 * a page it cleans), which doubled a 4 KiB write's round trip; what an fsync may find left is
 * at most this much per stream of writes, plus the last second's small ones. */
#define WB_GATHER (1u << 20)
#define WB_AGE_NS 1000000000ull

/* Why a run was cancelled (struct worker.cancel_why). */
enum { CANCEL_NONE, CANCEL_CLIENT_GONE, CANCEL_SHUTDOWN };

/* A run whose client is gone is cancelled this long after, not at once: an ARF operation cut
 * short leaves its journal slot and its locks until the next attach (docs/arf.md, "Not
 * yet"), and a client that crashes or unmounts mid-request should not cost that; a run that
 * is still going a second later is a hog, and stops. */
#define CLIENT_GONE_GRACE_MS 1000

struct job;

/* One of arfd's workers, or a reader slot (a run started on the reader: no thread, no job);
 * busy, from, job, started_ns and the writes of the cancel fields are under q_lock. */
struct worker {
	struct arfd *s;
	pthread_t thread;
	bool reader_slot;
	bool busy;                     /* running a request now */
	pn_peer from;                  /* ... of this client */
	bool yielded;                  /* a reader slot's run that handed the reader's place over */
	struct job *job;               /* a worker's request, or NULL */
	uint64_t started_ns;
	_Atomic uint64_t cancel_at;    /* the run's vm_run_opts.cancel_at: 0, or when it stops */
	_Atomic int cancel_why;        /* CANCEL_*, set before cancel_at */
	/* an EXEC's output and reply buffer, kept for the worker's next run (it runs one at a
	 * time) instead of one allocation per request; up to EXEC_BUF_KEEP bytes */
	uint8_t *exec_buf;
	size_t exec_buf_cap;
};

struct arfd {
	struct arfd_config cfg;
	struct pn *pn;
	struct vm *vm;
	struct region regions[ARFD_MAX_REGIONS];
	unsigned n_regions;

	pthread_mutex_t lock;          /* cache, per-client counts */
	struct cached *lru_head, *lru_tail;
	unsigned n_cached;
	unsigned *inflight;            /* per pn_peer_slot: a slot is reused for a new client
	                                * only long after the old one's requests ended */
	uint32_t n_inflight_slots;

	atomic_bool draining;
	_Atomic unsigned running;      /* requests admitted and not yet answered */
	/* arfd_move: from the moment moved is set, every request is answered MOVED naming
	 * moved_to (written before, never after) */
	atomic_bool moved;
	char moved_to[AR_MAX_ENDPOINT + 1];

	/* arfd's own workers: requests are admitted (and counted per client) on the I/O thread
	 * as they arrive, so --max-inflight bounds what a client may queue, not only what runs */
	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;
	struct job *q_head, *q_tail;
	bool q_stop;
	struct worker *workers;        /* 2 x cfg.threads workers, then cfg.threads reader slots */
	unsigned n_workers, n_slots;   /* threads started; all entries */
	_Atomic uint64_t n_req[OP_STATS_N], n_err[OP_STATS_N], lat_ns[OP_STATS_N], lat_max[OP_STATS_N];
	_Atomic uint64_t n_traps, cache_hits, cache_misses, cache_evictions, bytes_out;
	_Atomic uint64_t n_cancelled, n_time_limit;
	_Atomic uint64_t n_packed, n_unpacked, bytes_packed_saved;   /* zstd (link_slow) */
	_Atomic uint64_t large_out_ns;     /* when an EXEC output worth packing last went out */
	uint64_t max_args;             /* argument bytes unpacked, at most (the message limit) */
	_Atomic uint64_t n_on_reader, n_handed_over, n_no_handover;
	/* delegation: cfg.members as peers; runs forwarded, and forwards that failed */
	pn_peer members[ARFD_MAX_MEMBERS];
	_Atomic uint64_t n_forwarded, n_forward_failed;
	/* serving an --arf image: its region (-1: none); members_ok once cfg.members matched the
	 * image's cluster description (members_check), the one whose file members_ino and
	 * members_gen name (a new description, arf cluster move, is checked again) */
	int arf_region;
	atomic_bool members_ok;
	_Atomic uint64_t members_ino, members_gen;

	/* writeback ranges (hook_writeback), started by the flusher thread off the request path */
	pthread_mutex_t wb_lock;
	pthread_cond_t wb_cond;
	struct wb_range { int fd; uint64_t off, len, t_ns; } wb[WB_QUEUE];
	unsigned wb_head, wb_n;
	bool wb_stop, wb_running;
	pthread_t wb_thread;
};

/* The reader slot of the run on this thread, while it has not handed the reader's place over
 * (about_to_block). */
static __thread struct worker *tls_reader_run;
/* The EXEC run on this thread may hand its request on (hook forward): -1, or the member. */
static __thread int tls_forward_to = -1;
static __thread bool tls_forward_ok;   /* inside an EXEC run, where forward may be called */
static void reader_run_turned_long(void *slot);
static void about_to_block(void);

struct job {
	struct job *next;
	int op;                        /* AR_T_* */
	pn_peer from;
	pn_coop coop;
	uint64_t t0;
	bool admin;                    /* its sender has admin rights (request_begin) */
	size_t len;
	uint8_t body[];                /* the request after its header */
};

/* ---- helpers ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Constant-time comparison, so a secret cannot be guessed byte by byte from timings. */
static bool same_secret(const char *want, const char *given)
{
	size_t a = strlen(want), b = strlen(given);
	unsigned diff = (unsigned)(a ^ b);
	for (size_t i = 0; i < a; i++)
		diff |= (unsigned char)want[i] ^ (unsigned char)(i < b ? given[i] : 0);
	return diff == 0;
}

/* What a request may do: nothing (AUTH), a client's operations, or everything. */
enum rights { RIGHTS_NONE, RIGHTS_CLIENT, RIGHTS_ADMIN };

/* The rights of a request from `from` carrying `given` in its secret field (over tcp a client
 * proves its secret when the connection opens, pn_peer_proof, and sends none).  Without an
 * admin secret, whoever may be a client may do everything: one secret as before. */
static enum rights rights_of(struct arfd *s, pn_peer from, const char *given)
{
	const char *admin = s->cfg.admin_secret, *client = s->cfg.secret;
	if (!admin && !client)
		return RIGHTS_ADMIN;       /* no secrets: no look at the peer (a lock) per request */
	if (admin && *given && same_secret(admin, given))
		return RIGHTS_ADMIN;
	/* (today's clients carry none: no comparison for them, which is most of what a secret
	 * cost per request; bench/tls instr.sh counts it) */
	bool carried = client && *given && same_secret(client, given);
	if (carried && !admin)
		return RIGHTS_ADMIN;
	enum pn_proof proof = from == PN_ANY ? PN_PROOF_NONE : pn_peer_proof(s->pn, from);
	if (proof == PN_PROOF_ADMIN && admin)
		return RIGHTS_ADMIN;
	/* forwarded by a member of the cluster (it proved the cluster key): the member checked
	 * its client's rights before it forwarded, and vouches for a client's, never an
	 * admin's (docs/cluster.md, "Delegation") */
	if (!carried && from != PN_ANY && pn_forwarded_by(s->pn) != PN_ANY)
		return admin ? RIGHTS_CLIENT : RIGHTS_ADMIN;
	if (!carried && client && proof == PN_PROOF_NONE)
		return RIGHTS_NONE;
	return admin ? RIGHTS_CLIENT : RIGHTS_ADMIN;
}

/* pn_opts.admit, on the I/O thread: a connection is admitted (pre-authentication limits
 * lifted, docs/net.md) by a request whose first bytes carry the right secret; on a server
 * without one, by any request that starts well-formed. */
static int admit_request(void *arg, pn_peer from, pn_type type, const void *head, size_t n,
                         uint64_t len)
{
	struct arfd *s = arg;
	if (type < AR_T_INSTALL || type > AR_T_STATS)
		return 0;
	char secret[AR_MAX_SECRET + 1];
	struct ar_rd r = ar_rd_over(head, n);
	return ar_req_parse(&r, secret, sizeof secret) == 0 &&
	       rights_of(s, PN_ANY, secret) != RIGHTS_NONE;
}

static struct region *region_find(struct arfd *s, const char *name)
{
	for (unsigned i = 0; i < s->n_regions; i++)
		if (!strcmp(s->regions[i].name, name))
			return &s->regions[i];
	return NULL;
}

static void reply(struct arfd *s, pn_peer to, pn_coop coop, struct ar_buf *b)
{
	if (b->failed) {
		/* could not build the reply (memory): say so in a minimal one */
		ar_buf_free(b);
		ar_rep_begin(b, -AR_ENOMEM, "server out of memory building the reply");
	}
	int rc = pn_send(s->pn, to, AR_T_REPLY, coop, b->p, b->len);
	if (rc != 0)
		arfd_log(ARFD_LOG_WARN, "reply to %s: %s", pn_peer_name(s->pn, to), pn_strerror(rc));
	ar_buf_free(b);
}

static void reply_err(struct arfd *s, pn_peer to, pn_coop coop, int status, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void reply_err(struct arfd *s, pn_peer to, pn_coop coop, int status, const char *fmt, ...)
{
	char msg[AR_MAX_MSG + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct ar_buf b = { 0 };
	ar_rep_begin(&b, status, msg);
	reply(s, to, coop, &b);
}

/* pn_opts.refuse: a request too large to take in before admission, which admit_request
 * refused, closes its connection; tell the client why first, as a small one would be told. */
static void refuse_request(void *arg, pn_peer from, pn_type type, pn_coop coop,
                           const void *head, size_t n)
{
	struct arfd *s = arg;
	if (type < AR_T_INSTALL || type > AR_T_STATS)
		return;
	char secret[AR_MAX_SECRET + 1];
	struct ar_rd r = ar_rd_over(head, n);
	if (ar_req_parse(&r, secret, sizeof secret) != 0) {
		reply_err(s, from, coop, -AR_EPROTO, "malformed request header");
		return;
	}
	arfd_log(ARFD_LOG_WARN, "%s: refused: wrong secret", pn_peer_name(s->pn, from));
	reply_err(s, from, coop, -AR_EAUTH, "refused: this server requires its shared secret");
}

/* Common entry of every handler (through request_begin): moved and drain checks, per-client
 * limit, secret.  On success the request counts as running until request_end, and *admin
 * (if not NULL) says whether its sender has admin rights. */
static int request_admit(struct arfd *s, pn_peer from, pn_coop coop, int op, struct ar_rd *r,
                         bool *admin)
{
	atomic_fetch_add(&s->n_req[op], 1);
	char secret[AR_MAX_SECRET + 1];
	if (atomic_load(&s->moved)) {
		/* not started: the client sends it to the server that has the image now */
		reply_err(s, from, coop, -AR_EMOVED, "%s", s->moved_to);
		return -1;
	}
	if (atomic_load(&s->draining)) {
		/* not started: a client may send it again to whoever serves after us */
		reply_err(s, from, coop, -AR_EDRAINING, "server is shutting down: the request was "
		          "not started");
		return -1;
	}
	if (ar_req_parse(r, secret, sizeof secret) != 0) {
		reply_err(s, from, coop, -AR_EPROTO, "malformed request header");
		return -1;
	}
	/* over tcp a client proves the secret when its connection opens (docs/net.md), and its
	 * requests carry none; over udp and rdma they carry it */
	enum rights rights = rights_of(s, from, secret);
	explicit_bzero(secret, strlen(secret) + 1);   /* what ar_req_parse wrote, no more */
	if (rights == RIGHTS_NONE) {
		arfd_log(ARFD_LOG_WARN, "%s: refused: wrong secret", pn_peer_name(s->pn, from));
		reply_err(s, from, coop, -AR_EAUTH, "refused: this server requires its shared secret");
		return -1;
	}
	if (op == AR_T_INSTALL && rights != RIGHTS_ADMIN) {
		arfd_log(ARFD_LOG_INFO, "%s: install refused: no admin rights", pn_peer_name(s->pn, from));
		reply_err(s, from, coop, -AR_EDENIED, "permission denied: INSTALL needs the admin secret "
		          "(this client has the client secret; send the segment inline with EXEC)");
		return -1;
	}
	if (admin)
		*admin = rights == RIGHTS_ADMIN;
	uint32_t slot = pn_peer_slot(from);
	pthread_mutex_lock(&s->lock);
	if (slot >= s->n_inflight_slots) {
		uint32_t n = slot + 64;
		unsigned *p = realloc(s->inflight, n * sizeof *p);
		if (p) {
			memset(p + s->n_inflight_slots, 0, (n - s->n_inflight_slots) * sizeof *p);
			s->inflight = p;
			s->n_inflight_slots = n;
		}
	}
	bool busy = slot >= s->n_inflight_slots || s->inflight[slot] >= s->cfg.max_inflight;
	if (!busy)
		s->inflight[slot]++;
	pthread_mutex_unlock(&s->lock);
	if (busy) {
		reply_err(s, from, coop, -AR_EBUSY, "more than %u requests in flight from this client",
		          s->cfg.max_inflight);
		return -1;
	}
	return 0;
}

/* request_admit, counted as running from before its look at moved: arfd_move sets moved and
 * then waits for running to reach 0 (both sequentially consistent), so either it waits for
 * this request, or this request sees moved and leaves the regions alone (released by then). */
static int request_begin(struct arfd *s, pn_peer from, pn_coop coop, int op, struct ar_rd *r,
                         bool *admin)
{
	atomic_fetch_add(&s->running, 1);
	int rc = request_admit(s, from, coop, op, r, admin);
	if (rc != 0)
		atomic_fetch_sub(&s->running, 1);
	return rc;
}

/* The request is done; with c, its reference to the cached segment goes too, under the same
 * lock as the request's count (one lock a request fewer). */
static void request_end_put(struct arfd *s, pn_peer from, int op, uint64_t t0, int failed,
                            struct cached *c)
{
	uint64_t dt = now_ns() - t0;
	atomic_fetch_add(&s->lat_ns[op], dt);
	uint64_t m = atomic_load(&s->lat_max[op]);
	while (dt > m && !atomic_compare_exchange_weak(&s->lat_max[op], &m, dt))
		;
	if (failed)
		atomic_fetch_add(&s->n_err[op], 1);
	pthread_mutex_lock(&s->lock);
	s->inflight[pn_peer_slot(from)]--;
	bool free_it = c && --c->refs == 0;
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_sub(&s->running, 1);
	if (free_it) {
		vm_prog_free(c->prog);
		free(c);
	}
}

static void request_end(struct arfd *s, pn_peer from, int op, uint64_t t0, int failed)
{
	request_end_put(s, from, op, t0, failed, NULL);
}

/* ---- the code cache ---- */

static void lru_unlink(struct arfd *s, struct cached *c)
{
	if (c->prev) c->prev->next = c->next; else s->lru_head = c->next;
	if (c->next) c->next->prev = c->prev; else s->lru_tail = c->prev;
	c->prev = c->next = NULL;
}

static void lru_push(struct arfd *s, struct cached *c)
{
	c->next = s->lru_head;
	c->prev = NULL;
	if (s->lru_head) s->lru_head->prev = c; else s->lru_tail = c;
	s->lru_head = c;
}

/* Find an installed segment and take a reference (lock held). */
static struct cached *cache_get_locked(struct arfd *s, const uint8_t id[AR_ID_LEN])
{
	for (struct cached *c = s->lru_head; c; c = c->next) {
		if (!memcmp(c->id, id, AR_ID_LEN)) {
			lru_unlink(s, c);
			lru_push(s, c);
			c->refs++;
			return c;
		}
	}
	return NULL;
}

static void cache_put(struct arfd *s, struct cached *c)
{
	pthread_mutex_lock(&s->lock);
	bool free_it = --c->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (free_it) {
		vm_prog_free(c->prog);
		free(c);
	}
}

/* May a run of seg be tried on the I/O thread with a small fuel budget, and simply be run
 * again from the start on a worker if that budget is not enough?  Only if running it has no
 * effect but its output and result: no stores or atomics outside 'out', no hooks.  Bulk reads
 * (findb, finds, findsi, findset, cmp, output) are left out too, as their time is not bounded by fuel. */
static bool inline_candidate(const struct isa_seg *seg)
{
	for (uint32_t f = 0; f < seg->n_funcs; f++) {
		const struct isa_func *fn = &seg->funcs[f];
		struct isa_insn in;
		for (uint32_t pc = 0; pc < fn->code_len; pc += in.len) {
			if (isa_decode(fn->code, fn->code_len, pc, &in) != 0)
				return false;
			switch (in.op) {
			case OP_HCALL: case OP_CMP: case OP_FINDB: case OP_FINDS: case OP_FINDSI: case OP_FINDSET:
			case OP_OUTPUT:
				return false;
			default:
				if ((isa_op_info[in.op].flags & OPF_WRITE) && in.a != ISA_R_OUT)
					return false;
			}
		}
	}
	return true;
}

/* Does seg import, for writing, a region only admins may write? */
static bool writes_admin_region(struct arfd *s, const struct isa_seg *seg)
{
	for (uint32_t i = 0; i < seg->n_regions; i++) {
		const struct region *g = region_find(s, seg->regions[i].name);
		if (g && g->admin_write && (seg->regions[i].access & ISA_ACC_WRITE))
			return true;
	}
	return false;
}

/* Load (or find) a segment; returns a referenced entry, or NULL with status and message. */
static struct cached *install(struct arfd *s, const uint8_t *seg, size_t len, int *status,
                              char *msg, size_t msglen)
{
	if (len > s->cfg.max_segment) {
		*status = -AR_ETOOBIG;
		snprintf(msg, msglen, "segment of %zu bytes, this server takes at most %" PRIu64, len,
		         s->cfg.max_segment);
		return NULL;
	}
	uint8_t id[AR_ID_LEN];
	isa_seg_id(seg, len, id);
	pthread_mutex_lock(&s->lock);
	struct cached *c = cache_get_locked(s, id);
	pthread_mutex_unlock(&s->lock);
	if (c) {
		atomic_fetch_add(&s->cache_hits, 1);
		return c;
	}
	atomic_fetch_add(&s->cache_misses, 1);
	if (len > INSTALL_ON_READER_MAX)
		about_to_block();
	struct vm_prog *prog;
	if (vm_load(s->vm, seg, len, &prog, msg, msglen) != 0) {
		*status = -AR_ELOAD;
		return NULL;
	}
	c = calloc(1, sizeof *c);
	if (!c) {
		vm_prog_free(prog);
		*status = -AR_ENOMEM;
		snprintf(msg, msglen, "out of memory");
		return NULL;
	}
	memcpy(c->id, id, AR_ID_LEN);
	c->prog = prog;
	c->quick = inline_candidate(vm_prog_seg(prog));
	c->admin = writes_admin_region(s, vm_prog_seg(prog));
	c->refs = 2;                   /* the cache's and the caller's */
	pthread_mutex_lock(&s->lock);
	struct cached *dup = cache_get_locked(s, id);
	if (dup) {                     /* installed concurrently: keep the first */
		pthread_mutex_unlock(&s->lock);
		vm_prog_free(prog);
		free(c);
		return dup;
	}
	lru_push(s, c);
	s->n_cached++;
	struct cached *evict = NULL;
	if (s->n_cached > s->cfg.cache_max) {
		evict = s->lru_tail;
		lru_unlink(s, evict);
		s->n_cached--;
		atomic_fetch_add(&s->cache_evictions, 1);
	}
	pthread_mutex_unlock(&s->lock);
	if (evict)
		cache_put(s, evict);
	return c;
}

/* ---- handlers ---- */

static void do_install(struct arfd *s, pn_peer from, pn_coop coop, struct ar_rd *rp, uint64_t t0)
{
	struct pn *pn = s->pn;
	struct ar_rd r = *rp;
	int status = 0;
	char err[AR_MAX_MSG + 1] = "";
	struct cached *c = install(s, r.p, ar_left(&r), &status, err, sizeof err);
	struct ar_buf b = { 0 };
	ar_rep_begin(&b, c ? 0 : status, err);
	if (c) {
		ar_put_bytes(&b, c->id, AR_ID_LEN);
		cache_put(s, c);
	} else {
		arfd_log(ARFD_LOG_INFO, "install from %s: %s", pn_peer_name(pn, from), err);
	}
	request_end(s, from, AR_T_INSTALL, t0, c == NULL);
	reply(s, from, coop, &b);
}

/* Room in front of the output for the reply header, so the output the VM wrote is sent
 * where it lies: reply header, trap record with its text, value, counts. */
#define EXEC_HDR_ROOM (64 + 2 * AR_MAX_MSG)
#define EXEC_TRAILER  12           /* the reply's flags, the unpacked output length, a rate */
/* a worker keeps its EXEC buffer for outputs up to a client's default limit (1 MiB): only the
 * pages a run writes are ever touched */
#define EXEC_BUF_KEEP (EXEC_HDR_ROOM + (1u << 20) + EXEC_TRAILER)

/* An EXEC's buffer of n bytes: the worker's own when it may keep one that size, else new. */
static uint8_t *exec_buf_get(struct worker *w, size_t n)
{
	if (!w || n > EXEC_BUF_KEEP)
		return malloc(n);
	if (w->exec_buf_cap < n) {
		free(w->exec_buf);
		w->exec_buf = malloc(n);
		w->exec_buf_cap = w->exec_buf ? n : 0;
	}
	return w->exec_buf;
}

static void exec_buf_put(struct worker *w, uint8_t *buf)
{
	if (!w || buf != w->exec_buf)
		free(buf);
}

static void workers_free(struct arfd *s)
{
	for (unsigned i = 0; s->workers && i < s->n_slots; i++)
		free(s->workers[i].exec_buf);
	free(s->workers);
}

#define LARGE_OUT_KEEP_NS 1000000000ull  /* do_exec_run looks at the link this long after */

/* The rate of the link to peer when slow enough to think of packing what goes out
 * (pn_link_rate: the kernel's measured delivery rate); 0 when unknown (counts as fast, so
 * loopback never packs) or fast. */
static uint64_t link_slow_rate(struct arfd *s, pn_peer peer)
{
	uint64_t rate;
	bool limited;
	return pn_link_rate(s->pn, peer, &rate, &limited) == 0 && !limited && rate < AR_ZSTD_BELOW ?
	       rate : 0;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Fuel of the attempt on the I/O thread (QUICK_FUEL backward branches and calls: tens of
 * microseconds at most); a run that needs more is run again, whole, on a worker. */
#define QUICK_FUEL 2000

/* --member against the cluster description of the --arf image (arf_cluster_check_members):
 * 0 when they match, 1 when the image has no description yet, -1 on a mismatch; a message in
 * err unless 0.  A match is remembered with the stamp of the description file it was made
 * against, and stands while the image holds that file: a data server moved (arf cluster
 * move, docs/cluster.md) renames a new description into place, and from then this server
 * refuses to forward until it runs with the new --member list, rather than send a stripe's
 * read to the server the image left.  Why here and not in the route segment: forward(k)
 * names member k, route picks k as the description numbers the data servers, and only this
 * server holds both lists; a mismatch would otherwise read another server's object, which
 * objread finds missing and answers as a hole: zeros, not an error.  Without --arf (a server
 * that forwards for some other application) there is no description and nothing to check. */
static int members_check(struct arfd *s, char *err, size_t errlen)
{
	if (s->arf_region < 0 || s->cfg.n_members == 0)
		return 0;
	const struct region *r = &s->regions[s->arf_region];
	struct arf_cluster_stamp now = arf_image_cluster_stamp(r->base, r->len);
	if (atomic_load(&s->members_ok) && now.ino == atomic_load(&s->members_ino) &&
	    now.gen == atomic_load(&s->members_gen))
		return 0;
	struct arf_cluster_desc *d = malloc(sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char why[512];
	int rc = arf_image_cluster_desc(r->base, r->len, d, why, sizeof why);
	if (rc != 0)
		snprintf(err, errlen, "the cluster description of %s: %s", s->cfg.arf_image, why);
	else if (d->n == 0) {
		snprintf(err, errlen, "%s holds no cluster description (/%s, which arf cluster init "
		         "makes) to check the %u --member against", s->cfg.arf_image,
		         ARF_CLUSTER_FILE, s->cfg.n_members);
		rc = 1;
	} else if (arf_cluster_check_members(d, s->cfg.members, s->cfg.n_members, err,
	                                     errlen) != 0) {
		rc = -1;
	} else {
		/* stamped with what was looked at before reading it: a description renamed in
		 * between makes the next forward check again, never keeps a stale match */
		atomic_store(&s->members_ino, now.ino);
		atomic_store(&s->members_gen, now.gen);
		atomic_store(&s->members_ok, true);
	}
	if (rc != 0)
		atomic_store(&s->members_ok, false);
	free(d);
	return rc;
}

/* A run called forward(k) and returned: its output, an EXEC body, goes to member k as the
 * client's request (pn_forward_for: the member answers the client, whose reply is therefore
 * not kept in this server's session reply cache: docs/net.md).  A forward that cannot be
 * sent is answered here, so the client gets an error now, not its timeout. */
static void forward_run(struct arfd *s, pn_peer from, pn_coop coop, uint64_t t0, unsigned k,
                        const uint8_t *body, uint64_t len)
{
	char why[1024];
	if (members_check(s, why, sizeof why) != 0) {
		/* the member order is wrong (or unknown): refuse rather than read the wrong stripe */
		request_end(s, from, AR_T_EXEC, t0, true);
		atomic_fetch_add(&s->n_forward_failed, 1);
		arfd_log(ARFD_LOG_WARN, "exec from %s: delegation refused: %s",
		         pn_peer_name(s->pn, from), why);
		reply_err(s, from, coop, -AR_EMEMBERS, "delegation refused: %s", why);
		return;
	}
	struct ar_buf b = { 0 };
	ar_req_begin(&b, "");
	ar_put_bytes(&b, body, len);
	int rc = b.failed ? -PN_ENOMEM : len == 0 ? -PN_EINVAL :
	         pn_forward_for(s->pn, from, coop, s->members[k], AR_T_EXEC, b.p, b.len);
	ar_buf_free(&b);
	request_end(s, from, AR_T_EXEC, t0, rc != 0);
	if (rc == 0) {
		atomic_fetch_add(&s->n_forwarded, 1);
		return;
	}
	atomic_fetch_add(&s->n_forward_failed, 1);
	arfd_log(ARFD_LOG_WARN, "exec from %s: forward to member %u (%s): %s",
	         pn_peer_name(s->pn, from), k, s->cfg.members[k], pn_strerror(rc));
	reply_err(s, from, coop, rc == -PN_EINVAL ? -AR_EPROTO : -AR_ENET,
	          "delegation to member %u (%s): %s", k, s->cfg.members[k],
	          len == 0 ? "the run built no request" :
	          rc == -PN_EINVAL ? "this client has no address a member could answer at "
	                             "(tcp only)" : pn_strerror(rc));
}

/* Run an EXEC.  With quick set (on the I/O thread), only a segment already installed and
 * marked quick is run, with at most QUICK_FUEL; returns 1 without answering when it declines
 * (the caller queues the request for a worker), 0 when it answered.  w: the worker running
 * it (its cancel_at), NULL on the I/O thread, where a run is too short to need one. */
static int do_exec_run(struct arfd *s, pn_peer from, pn_coop coop, struct ar_rd *rp,
                       uint64_t t0, bool admin, bool quick, struct worker *w)
{
	struct pn *pn = s->pn;
	struct ar_rd r = *rp;
	int status = 0;
	char err[AR_MAX_MSG + 1];
	err[0] = '\0';                    /* (a string: no need to clear all of it per request) */
	struct cached *c = NULL;
	uint8_t mode = ar_get8(&r);
	if (quick && mode != 0)
		return 1;
	if (mode == 0) {
		const uint8_t *id = ar_get_bytes(&r, AR_ID_LEN);
		if (id) {
			pthread_mutex_lock(&s->lock);
			c = cache_get_locked(s, id);
			pthread_mutex_unlock(&s->lock);
			if (quick && (!c || !c->quick)) {
				if (c)
					cache_put(s, c);
				return 1;
			}
			if (!c) {
				status = -AR_ENOSEG;
				snprintf(err, sizeof err, "segment not installed here (evicted or never sent)");
			}
		}
	} else if (mode == 1) {
		uint32_t n = ar_get32(&r);
		const uint8_t *seg = ar_get_bytes(&r, n);
		if (seg)
			c = install(s, seg, n, &status, err, sizeof err);
	} else {
		r.failed = 1;
	}
	char entry[AR_MAX_NAME + 1];
	ar_get_str16(&r, entry, sizeof entry);
	uint8_t n_args = ar_get8(&r);
	int64_t args[AR_MAX_ARGS];
	for (unsigned i = 0; i < n_args; i++)
		args[i] = (int64_t)ar_get64(&r);
	uint64_t fuel = ar_get64(&r), out_max = ar_get64(&r);
	uint32_t argbytes_len = ar_get32(&r);
	const uint8_t *argbytes = ar_get_bytes(&r, argbytes_len);
	/* optional (older clients end here): the request's own wall-clock limit, 0 = the server's */
	uint32_t limit_ms = ar_left(&r) >= 4 ? ar_get32(&r) : 0;
	/* optional: what the client does with zstd (docs/protocol.md, "Compression") */
	bool has_xflags = ar_left(&r) >= 4;
	uint32_t xflags = has_xflags ? ar_get32(&r) : 0;
	uint32_t args_full = xflags & AR_EXF_ARGS_ZSTD ? ar_get32(&r) : 0;
	/* the rate the client receives our output at (bytes a second), when it asks for packing
	 * because it is slow; 0 with WANT_ZSTD alone: pack whatever the link */
	uint64_t out_rate = xflags & AR_EXF_RATE ? (uint64_t)ar_get32(&r) * 1024 : 0;
	uint8_t *unpacked = NULL;          /* the argument bytes unpacked, when they came packed */
	if ((xflags & AR_EXF_ARGS_ZSTD) && !r.failed && status == 0) {
		uint32_t n = args_full;
		if (r.failed || !argbytes || n > s->max_args ||
		    !(unpacked = malloc(n ? n : 1)) ||
		    ar_zstd_unpack(argbytes, argbytes_len, unpacked, n) != 0) {
			status = unpacked || r.failed || n > s->max_args ? -AR_EPROTO : -AR_ENOMEM;
			snprintf(err, sizeof err, "%s", status == -AR_ENOMEM ? "out of memory unpacking "
			         "the argument bytes" : "malformed packed argument bytes");
		} else {
			argbytes = unpacked;
			argbytes_len = n;
			atomic_fetch_add(&s->n_unpacked, 1);
		}
	}
	if (r.failed && status == 0) {
		status = -AR_EPROTO;
		snprintf(err, sizeof err, "malformed EXEC request");
	}
	int fi = -1;
	unsigned want = 0;
	if (status == 0 && c->admin && !admin) {
		status = -AR_EDENIED;
		snprintf(err, sizeof err, "permission denied: the segment imports a region for writing "
		         "that is written only with the admin secret");
	}
	if (status == 0) {
		fi = vm_prog_entry(c->prog, entry, &want);
		if (fi < 0) {
			status = -AR_ENOENTRY;
			snprintf(err, sizeof err, "no exported entry '%s'", entry);
		} else if (want != n_args) {
			status = -AR_EARGS;
			snprintf(err, sizeof err, "entry '%s' takes %u arguments, %u given", entry, want, n_args);
		}
	}
	if (status != 0) {
		if (c)
			cache_put(s, c);
		free(unpacked);
		/* not installed is the normal first answer to a client that sends ids: no error */
		request_end(s, from, AR_T_EXEC, t0, status != -AR_ENOSEG);
		reply_err(s, from, coop, status, "%s", err);
		return 0;
	}
	if (!fuel)
		fuel = s->cfg.fuel_default;
	if (fuel > s->cfg.fuel_max)
		fuel = s->cfg.fuel_max;
	if (out_max > s->cfg.out_max)
		out_max = s->cfg.out_max;
	uint8_t *buf = exec_buf_get(w, EXEC_HDR_ROOM + out_max + EXEC_TRAILER);
	if (!buf) {
		free(unpacked);
		cache_put(s, c);
		request_end(s, from, AR_T_EXEC, t0, 1);
		reply_err(s, from, coop, -AR_ENOMEM, "cannot allocate %" PRIu64 " bytes of output", out_max);
		return 0;
	}
	bool own_limit = limit_ms && limit_ms < s->cfg.max_run_ms;
	if (!own_limit)
		limit_ms = s->cfg.max_run_ms;
	/* on the reader the request arrived microseconds ago: its clock reading serves (one
	 * fewer per request, and in a virtual machine a clock reading is not free) */
	uint64_t run_start = w && w->reader_slot ? t0 : now_ns();
	struct vm_run_opts o = { .args = argbytes, .args_len = argbytes_len,
	                         .out = buf + EXEC_HDR_ROOM, .out_cap = out_max,
	                         .fuel = quick && fuel > QUICK_FUEL ? QUICK_FUEL : fuel,
	                         .deadline_ns = run_start + (uint64_t)limit_ms * 1000000u,
	                         .cancel_at = w ? &w->cancel_at : NULL,
	                         .hook_ns_per_fuel = s->cfg.hook_fuel_ns };
	if (w && w->reader_slot && !w->yielded) {
		o.on_slow = reader_run_turned_long;
		o.slow_arg = w;
		o.slow_at_ns = run_start + READER_BUDGET_US * 1000ull;
	}
	struct vm_result res;
	tls_forward_to = -1;
	tls_forward_ok = true;
	int rc = vm_run(c->prog, (unsigned)fi, args, n_args, &o, &res);
	tls_forward_ok = false;
	int fwd = tls_forward_to;
	tls_forward_to = -1;
	free(unpacked);                    /* (o.args pointed into it: not used after the run) */
	if (rc == 0 && test_kill_at && !strcmp(entry, test_kill_entry) &&
	    atomic_fetch_add(&test_kill_n, 1) + 1 == test_kill_at)
		raise(SIGKILL);            /* the test fault: done, and its reply never sent */
	if (fwd >= 0 && rc == 0 && res.value >= 0 && !(quick && res.fuel_used >= QUICK_FUEL)) {
		cache_put(s, c);
		forward_run(s, from, coop, t0, (unsigned)fwd, buf + EXEC_HDR_ROOM, res.out_len);
		exec_buf_put(w, buf);
		return 0;
	}
	if (quick && rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_FUEL && fuel > QUICK_FUEL) {
		/* not short after all: nothing happened but output, so a worker starts it over */
		cache_put(s, c);
		exec_buf_put(w, buf);
		return 1;
	}
	if (rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_CANCELLED) {
		/* the client is gone (nobody to answer: a reply would open a connection to its
		 * address), or arfd is stopping */
		double secs = (double)(now_ns() - run_start) / 1e9;
		int why = w ? atomic_load(&w->cancel_why) : CANCEL_NONE;
		atomic_fetch_add(&s->n_cancelled, 1);
		cache_put(s, c);
		exec_buf_put(w, buf);
		request_end(s, from, AR_T_EXEC, t0, 1);
		if (why == CANCEL_CLIENT_GONE) {
			arfd_log(ARFD_LOG_INFO, "exec from %s: cancelled after %.3f s: the client is gone",
			         pn_peer_name(pn, from), secs);
		} else {
			arfd_log(ARFD_LOG_WARN, "exec from %s: cancelled after %.3f s: stopping",
			         pn_peer_name(pn, from), secs);
			reply_err(s, from, coop, -AR_ESHUTDOWN, "server is shutting down: the run was "
			          "stopped after %.3f s", secs);
		}
		return 0;
	}
	if (rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_TIME) {
		atomic_fetch_add(&s->n_time_limit, 1);
		snprintf(res.trap.msg, sizeof res.trap.msg, "%u ms, %s", limit_ms,
		         own_limit ? "the request's limit" : "the server's limit (--max-run-ms)");
	}
	/* the header on the stack: it must fit EXEC_HDR_ROOM anyway (else failed, below) */
	uint8_t hdr[EXEC_HDR_ROOM];
	struct ar_buf h = ar_buf_over(hdr, sizeof hdr);
	if (rc == 0 || rc == -VM_ETRAP) {
		ar_rep_begin(&h, rc == 0 ? 0 : -AR_ETRAP, NULL);
		ar_put64(&h, (uint64_t)res.value);
		ar_put64(&h, res.fuel_used);
		ar_put8(&h, rc != 0);
		if (rc != 0) {
			char text[AR_MAX_MSG + 1];
			vm_trap_str(c->prog, &res.trap, text, sizeof text);
			ar_put32(&h, (uint32_t)res.trap.kind);
			ar_put32(&h, res.trap.code);
			ar_put32(&h, res.trap.func);
			ar_put32(&h, res.trap.pc);
			ar_put32(&h, res.trap.line);
			ar_put_str16(&h, text);
			atomic_fetch_add(&s->n_traps, 1);
			arfd_log(ARFD_LOG_DEBUG, "exec from %s: %s", pn_peer_name(pn, from), text);
		}
		ar_put32(&h, (uint32_t)res.out_len);
	} else {
		ar_rep_begin(&h, -AR_EPROTO, vm_strerror(rc));
		res.out_len = 0;
	}
	if (h.failed || h.len > EXEC_HDR_ROOM) {
		ar_buf_free(&h);
		exec_buf_put(w, buf);
		request_end_put(s, from, AR_T_EXEC, t0, 1, c);
		reply_err(s, from, coop, -AR_ENOMEM, "reply header too large");
		return 0;
	}
	uint8_t *start = buf + EXEC_HDR_ROOM - h.len;
	memcpy(start, h.p, h.len);
	size_t reply_len = h.len + res.out_len;
	void *packed = NULL;
	if (has_xflags) {
		/* a client that sent flags reads ours after the output: packed output or not */
		uint32_t rflags = AR_EXR_TAKES_ZSTD;
		uint64_t rx_rate;
		if (pn_link_rx_rate(pn, from, &rx_rate) == 0 && rx_rate > 0 && rx_rate < AR_ZSTD_BELOW)
			rflags |= AR_EXR_ARGS_SLOW;
		size_t plen = 0;
		/* packed when the client asks whatever the link (ARC_COMPRESS=always), or when it
		 * pays at the rate the client measured or ours */
		bool always = (xflags & AR_EXF_WANT_ZSTD) && !(xflags & AR_EXF_RATE);
		/* The kernel's rate (TCP_INFO, a system call, one more than a plain socket server
		 * makes for each small request) only while outputs worth packing go out, but then
		 * for every reply: the kernel keeps its last delivery-rate sample only, and a tar
		 * through a mount at 100 Mbit/s got the samples that measure the link (not
		 * app-limited) at its small replies, between the large ones.  Looked at for large
		 * outputs alone, the server's view never saw one, and until the client's own view
		 * had its first sample (3,683 replies) nothing was packed: 7.6 s against 3.5. */
		bool large = res.out_len >= AR_ZSTD_MIN;
		uint64_t now = pn_coarse_ns();
		if (large)
			atomic_store_explicit(&s->large_out_ns, now, memory_order_relaxed);
		uint64_t rate = out_rate;
		if (!rate && (large || now - atomic_load_explicit(&s->large_out_ns, memory_order_relaxed) <
		                       LARGE_OUT_KEEP_NS))
			rate = link_slow_rate(s, from);
		if (large && (xflags & (AR_EXF_ACCEPT_ZSTD | AR_EXF_WANT_ZSTD)) &&
		    (always || ar_zstd_pays(rate)) &&
		    ar_zstd_pack(buf + EXEC_HDR_ROOM, res.out_len, &packed, &plen) == 0) {
			uint8_t *nb = malloc(h.len + plen + EXEC_TRAILER);
			if (nb) {
				/* the header again, its output length the packed one */
				struct ar_buf h2 = { 0 };
				ar_put_bytes(&h2, h.p, h.len - 4);
				ar_put32(&h2, (uint32_t)plen);
				memcpy(nb, h2.p, h2.len);
				memcpy(nb + h.len, packed, plen);
				ar_buf_free(&h2);
				exec_buf_put(w, buf);
				buf = start = nb;
				reply_len = h.len + plen;
				rflags |= AR_EXR_OUT_ZSTD;
				atomic_fetch_add(&s->n_packed, 1);
				atomic_fetch_add(&s->bytes_packed_saved, res.out_len - plen);
			}
			free(packed);
		}
		uint8_t *t = start + reply_len;
		put_le32(t, rflags);
		reply_len += 4;
		if (rflags & AR_EXR_OUT_ZSTD) {
			put_le32(start + reply_len, (uint32_t)res.out_len);
			reply_len += 4;
		}
		if (rflags & AR_EXR_ARGS_SLOW) {
			uint64_t kib = rx_rate / 1024;
			put_le32(start + reply_len, kib >= UINT32_MAX ? UINT32_MAX : kib ? (uint32_t)kib : 1);
			reply_len += 4;
		}
	}
	/* counted out before the reply leaves: the client may send its next request at once */
	request_end_put(s, from, AR_T_EXEC, t0, rc != 0, c);
	int src = pn_send(pn, from, AR_T_REPLY, coop, start, reply_len);
	if (src != 0)
		arfd_log(ARFD_LOG_WARN, "exec reply to %s: %s", pn_peer_name(pn, from), pn_strerror(src));
	atomic_fetch_add(&s->bytes_out, res.out_len);
	ar_buf_free(&h);
	exec_buf_put(w, buf);
	return 0;
}

/* READ and WRITE: the region, the range, the access. */
static struct region *access_check(struct arfd *s, struct ar_rd *r, uint64_t *off, uint32_t *n,
                                   bool write, int *status, char *err, size_t errlen)
{
	char name[AR_MAX_NAME + 1];
	ar_get_str16(r, name, sizeof name);
	*off = ar_get64(r);
	*n = ar_get32(r);
	if (r->failed) {
		*status = -AR_EPROTO;
		snprintf(err, errlen, "malformed %s request", write ? "WRITE" : "READ");
		return NULL;
	}
	struct region *g = region_find(s, name);
	if (!g) {
		*status = -AR_ENOREGION;
		snprintf(err, errlen, "no region '%s' here", name);
	} else if (*off > g->len || *n > g->len - *off) {
		*status = -AR_EBOUNDS;
		snprintf(err, errlen, "%s of %u bytes at %" PRIu64 " is outside region '%s' (%" PRIu64
		         " bytes)", write ? "write" : "read", *n, *off, name, g->len);
		g = NULL;
	} else if (write && !(g->access & ISA_ACC_WRITE)) {
		*status = -AR_EREADONLY;
		snprintf(err, errlen, "region '%s' is read-only", name);
		g = NULL;
	} else if (!write && *n > s->cfg.out_max) {
		*status = -AR_ETOOBIG;
		snprintf(err, errlen, "read of %u bytes, at most %" PRIu64 " per request", *n, s->cfg.out_max);
		g = NULL;
	}
	return g;
}

static void h_read(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                   size_t len, void *arg)
{
	struct arfd *s = arg;
	struct ar_rd r = ar_rd_over(msg, len);
	uint64_t t0 = now_ns();
	if (request_begin(s, from, coop, AR_T_READ, &r, NULL) != 0)
		return;
	int status = 0;
	char err[AR_MAX_MSG + 1] = "";
	uint64_t off;
	uint32_t n;
	struct region *g = access_check(s, &r, &off, &n, false, &status, err, sizeof err);
	struct ar_buf b = { 0 };
	ar_rep_begin(&b, g ? 0 : status, err);
	if (g)
		ar_put_bytes(&b, g->base + off, n);
	request_end(s, from, AR_T_READ, t0, g == NULL);
	reply(s, from, coop, &b);
}

static void h_write(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                    size_t len, void *arg)
{
	struct arfd *s = arg;
	struct ar_rd r = ar_rd_over(msg, len);
	uint64_t t0 = now_ns();
	bool admin;
	if (request_begin(s, from, coop, AR_T_WRITE, &r, &admin) != 0)
		return;
	int status = 0;
	char err[AR_MAX_MSG + 1] = "";
	uint64_t off;
	uint32_t n;
	struct region *g = access_check(s, &r, &off, &n, true, &status, err, sizeof err);
	if (g && g->admin_write && !admin) {
		status = -AR_EDENIED;
		snprintf(err, sizeof err, "permission denied: region '%s' is written only with the "
		         "admin secret", g->name);
		g = NULL;
	}
	/* the bytes are the rest of the request, exactly: a length that disagrees with them is
	 * a malformed request, whichever is longer (ar_left before the failed read, which zeroes it) */
	size_t carried = ar_left(&r);
	const uint8_t *data = g && carried == n ? ar_get_bytes(&r, n) : NULL;
	if (g && !data) {
		g = NULL;
		status = -AR_EPROTO;
		snprintf(err, sizeof err, "WRITE announces %u bytes but carries %zu", n, carried);
	}
	if (g && n)
		memcpy(g->base + off, data, n);
	struct ar_buf b = { 0 };
	ar_rep_begin(&b, g ? 0 : status, err);
	request_end(s, from, AR_T_WRITE, t0, g == NULL);
	reply(s, from, coop, &b);
}

/* Each region with the access this client has (an admin-only region is ro to the others). */
static void do_regions(struct arfd *s, pn_peer from, pn_coop coop, struct ar_rd *rp, uint64_t t0,
                       bool admin)
{
	(void)rp;                          /* the request has no body */
	struct ar_buf b = { 0 };
	ar_rep_begin(&b, 0, NULL);
	ar_put32(&b, s->n_regions);
	for (unsigned i = 0; i < s->n_regions; i++) {
		ar_put_str16(&b, s->regions[i].name);
		ar_put64(&b, s->regions[i].len);
		ar_put8(&b, (uint8_t)(s->regions[i].admin_write && !admin ? ISA_ACC_RO
		                                                          : s->regions[i].access));
		/* the one-sided handle, for clients on rdma: (empty elsewhere) */
		ar_put8(&b, s->regions[i].mem ? PN_MEM_HANDLE_LEN : 0);
		if (s->regions[i].mem)
			ar_put_bytes(&b, s->regions[i].handle, PN_MEM_HANDLE_LEN);
	}
	request_end(s, from, AR_T_REGIONS, t0, 0);
	reply(s, from, coop, &b);
}

/* Workers running a request that has not yet run LONG_RUN_MS (q_lock held); *turns_long_ns
 * is when the first of them becomes long (UINT64_MAX when none is running). */
static unsigned busy_short(const struct arfd *s, uint64_t now, uint64_t *turns_long_ns)
{
	unsigned n = 0;
	*turns_long_ns = UINT64_MAX;
	for (unsigned i = 0; i < s->n_slots; i++) {
		const struct worker *w = &s->workers[i];
		uint64_t long_at = w->started_ns + LONG_RUN_MS * 1000000ull;
		if (w->busy && now < long_at) {
			n++;
			if (long_at < *turns_long_ns)
				*turns_long_ns = long_at;
		}
	}
	return n;
}

static const char *const op_names[OP_STATS_N] = {
	[AR_T_INSTALL] = "install", [AR_T_EXEC] = "exec", [AR_T_READ] = "read",
	[AR_T_WRITE] = "write", [AR_T_REGIONS] = "regions", [AR_T_STATS] = "stats",
};

static void do_stats(struct arfd *s, pn_peer from, pn_coop coop, struct ar_rd *rp, uint64_t t0)
{
	(void)rp;
	struct pn *pn = s->pn;
	char text[4096];
	size_t n = 0;
#define OUT(...) do { int k_ = snprintf(text + n, sizeof text - n, __VA_ARGS__); \
		if (k_ > 0 && (size_t)k_ < sizeof text - n) n += (size_t)k_; } while (0)
	for (int op = AR_T_INSTALL; op < OP_STATS_N; op++) {
		uint64_t req = s->n_req[op];
		OUT("%s.requests %" PRIu64 "\n%s.errors %" PRIu64 "\n", op_names[op], req, op_names[op],
		    (uint64_t)s->n_err[op]);
		OUT("%s.latency_avg_us %.1f\n%s.latency_max_us %.1f\n", op_names[op],
		    req ? (double)s->lat_ns[op] / (double)req / 1e3 : 0.0, op_names[op],
		    (double)s->lat_max[op] / 1e3);
	}
	pthread_mutex_lock(&s->lock);
	unsigned cached = s->n_cached;
	pthread_mutex_unlock(&s->lock);
	OUT("traps %" PRIu64 "\ncache.segments %u\ncache.hits %" PRIu64 "\ncache.misses %" PRIu64
	    "\ncache.evictions %" PRIu64 "\nexec.output_bytes %" PRIu64 "\n", (uint64_t)s->n_traps,
	    cached, (uint64_t)s->cache_hits, (uint64_t)s->cache_misses,
	    (uint64_t)s->cache_evictions, (uint64_t)s->bytes_out);
	pthread_mutex_lock(&s->q_lock);
	uint64_t now = now_ns(), turns_long;
	unsigned n_short = busy_short(s, now, &turns_long), n_busy = 0;
	for (unsigned i = 0; i < s->n_slots; i++)
		n_busy += s->workers[i].busy;
	pthread_mutex_unlock(&s->q_lock);
	OUT("exec.time_limit %" PRIu64 "\nexec.cancelled %" PRIu64 "\nexec.on_reader %" PRIu64
	    "\nexec.handed_over %" PRIu64 "\nexec.no_handover %" PRIu64 "\nworkers %u\n"
	    "workers.busy %u\nworkers.long %u\n", (uint64_t)s->n_time_limit,
	    (uint64_t)s->n_cancelled, (uint64_t)s->n_on_reader, (uint64_t)s->n_handed_over,
	    (uint64_t)s->n_no_handover, s->n_workers, n_busy, n_busy - n_short);
	OUT("exec.packed %" PRIu64 "\nexec.packed_bytes_saved %" PRIu64 "\nexec.unpacked %" PRIu64
	    "\n", (uint64_t)s->n_packed, (uint64_t)s->bytes_packed_saved, (uint64_t)s->n_unpacked);
	OUT("exec.forwarded %" PRIu64 "\nexec.forward_failed %" PRIu64 "\n",
	    (uint64_t)s->n_forwarded, (uint64_t)s->n_forward_failed);
	struct pn_stats ps;
	pn_stats_get(pn, &ps);
	OUT("net.msgs_recv %" PRIu64 "\nnet.msgs_sent %" PRIu64 "\nnet.bytes_recv %" PRIu64
	    "\nnet.bytes_sent %" PRIu64 "\nnet.bad_frames %" PRIu64 "\nnet.peers %" PRIu64
	    "\nnet.peers_retired %" PRIu64 "\nnet.udp_refused %" PRIu64 "\nnet.forwarded %" PRIu64
	    "\nnet.polls_found %" PRIu64 "\nnet.polls_wasted %" PRIu64
	    "\n", ps.msgs_recv, ps.msgs_sent, ps.bytes_recv, ps.bytes_sent, ps.bad_frames, ps.peers,
	    ps.peers_retired, ps.udp_refused, ps.forwarded, ps.polls_found, ps.polls_wasted);
	OUT("net.polls_denied_load %" PRIu64 "\nnet.polls_denied_resting %" PRIu64
	    "\nnet.polls_denied_busy %" PRIu64 "\nnet.spin_looks %" PRIu64
	    "\nnet.spin_full_looks %" PRIu64 "\nnet.spin_follows %" PRIu64 "\n",
	    ps.polls_denied_load, ps.polls_denied_resting, ps.polls_denied_busy, ps.spin_looks,
	    ps.spin_full_looks, ps.spin_follows);
	OUT("net.sessions %" PRIu64 "\nnet.session_bytes %" PRIu64 "\nnet.session_replays %" PRIu64
	    "\nnet.session_dropped %" PRIu64 "\nnet.session_refused %" PRIu64
	    "\nnet.session_expired %" PRIu64 "\n", ps.sessions, ps.session_bytes,
	    ps.session_replays, ps.session_dropped, ps.session_refused, ps.session_expired);
#undef OUT
	struct ar_buf b = { 0 };
	ar_rep_begin(&b, 0, NULL);
	ar_put_bytes(&b, text, n);
	request_end(s, from, AR_T_STATS, t0, 0);
	reply(s, from, coop, &b);
}

/* A message of a type this server does not serve (pn_set_handler PN_OTHER_TYPES): BADOP, as
 * the protocol promises, so the client is not left waiting for its timeout.  Never to a
 * message of type REPLY, nor to one without a Cooperation token, which nobody waits for: two
 * servers answering each other's replies would never stop. */
static void h_other(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                    size_t len, void *arg)
{
	struct arfd *s = arg;
	if (type == AR_T_REPLY || coop == 0) {
		arfd_log(ARFD_LOG_DEBUG, "%s: message of type %u without a request, dropped",
		         pn_peer_name(pn, from), (unsigned)type);
		return;
	}
	reply_err(s, from, coop, -AR_EBADOP, "unknown operation %u (this server serves INSTALL 1, "
	          "EXEC 2, READ 3, WRITE 4, REGIONS 5, STATS 6)", (unsigned)type);
}

/* ---- admission and the worker pool ---- */

static void stop_workers(struct arfd *s)
{
	pthread_mutex_lock(&s->q_lock);
	s->q_stop = true;                  /* the queue is still worked off before they exit */
	pthread_cond_broadcast(&s->q_cond);
	pthread_mutex_unlock(&s->q_lock);
	for (unsigned i = 0; i < s->n_workers; i++)
		pthread_join(s->workers[i].thread, NULL);
	s->n_workers = 0;
	/* the array stays: runs on reader slots end in pn_finalize, which waits for them */
}

static void run_job(struct arfd *s, struct job *j, struct worker *w)
{
	struct ar_rd r = ar_rd_over(j->body, j->len);
	if (j->op == AR_T_INSTALL)
		do_install(s, j->from, j->coop, &r, j->t0);
	else
		do_exec_run(s, j->from, j->coop, &r, j->t0, j->admin, false, w);
}

/* Workers and reader slots running a request of client `from` (q_lock held). */
static unsigned running_for(const struct arfd *s, pn_peer from)
{
	unsigned n = 0;
	for (unsigned i = 0; i < s->n_slots; i++)
		n += s->workers[i].busy && s->workers[i].from == from;
	return n;
}

/* A worker takes the oldest queued request when fewer than cfg.threads workers run requests
 * that are not yet long: cfg.threads at a time for ordinary work, as before, and a run that
 * goes on past LONG_RUN_MS lets a spare worker take its place.  While the rule holds a
 * request back, idle workers wake when the next running request turns long.  One client
 * has at most cfg.threads workers (its requests beyond wait, and others' go first), so the
 * spare workers are never all taken by the long runs of one client. */
static void *worker_main(void *arg)
{
	pthread_setname_np(pthread_self(), "arfd-worker");   /* for top -H, ps -L, gdb */
	struct worker *w = arg;
	struct arfd *s = w->s;
	pthread_mutex_lock(&s->q_lock);
	for (;;) {
		if (!s->q_head) {
			if (s->q_stop)
				break;
			pthread_cond_wait(&s->q_cond, &s->q_lock);
			continue;
		}
		uint64_t now = now_ns(), turns_long;
		if (busy_short(s, now, &turns_long) >= s->cfg.threads) {
			struct timespec ts;    /* q_cond's clock (arfd_start) */
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t at = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
			              (turns_long - now);
			ts = (struct timespec){ (time_t)(at / 1000000000u), (long)(at % 1000000000u) };
			pthread_cond_timedwait(&s->q_cond, &s->q_lock, &ts);
			continue;
		}
		struct job **pp = &s->q_head, *prev = NULL;
		while (*pp && running_for(s, (*pp)->from) >= s->cfg.threads) {
			prev = *pp;
			pp = &prev->next;
		}
		if (!*pp) {                /* each waits for a run of its own client to end */
			pthread_cond_wait(&s->q_cond, &s->q_lock);
			continue;
		}
		struct job *j = *pp;
		*pp = j->next;
		if (s->q_tail == j)
			s->q_tail = prev;
		w->job = j;
		w->busy = true;
		w->from = j->from;
		w->started_ns = now;
		atomic_store(&w->cancel_why, CANCEL_NONE);
		atomic_store(&w->cancel_at, 0);
		pthread_mutex_unlock(&s->q_lock);
		run_job(s, j, w);
		pthread_mutex_lock(&s->q_lock);
		w->job = NULL;
		w->busy = false;
		free(j);
		if (s->q_head)             /* a place for ordinary work may have come free */
			pthread_cond_signal(&s->q_cond);
	}
	pthread_mutex_unlock(&s->q_lock);
	return NULL;
}

/* Cancel the runs of one client (peer, or every client when all) from time at_ns with reason
 * why, and take its queued requests out of the queue: returned as a list (q_lock held). */
static struct job *cancel_locked(struct arfd *s, bool all, pn_peer peer, int why,
                                 uint64_t at_ns, unsigned *n_running)
{
	struct job *taken = NULL, **tail = &taken;
	for (struct job **pp = &s->q_head; *pp;) {
		struct job *j = *pp;
		if (all || j->from == peer) {
			*pp = j->next;
			j->next = NULL;
			*tail = j;
			tail = &j->next;
		} else {
			pp = &j->next;
		}
	}
	s->q_tail = NULL;
	for (struct job *j = s->q_head; j; j = j->next)
		s->q_tail = j;
	*n_running = 0;
	for (unsigned i = 0; i < s->n_slots; i++) {
		struct worker *w = &s->workers[i];
		uint64_t at = atomic_load(&w->cancel_at);
		if (w->busy && (all || w->from == peer) && (!at || at_ns < at)) {
			atomic_store(&w->cancel_why, why);
			atomic_store(&w->cancel_at, at_ns);
			(*n_running)++;
		}
	}
	return taken;
}

/* A connection of peer broke (pn_set_peer_down, on the I/O thread): its client is gone, so
 * its runs are cancelled (after CLIENT_GONE_GRACE_MS) and its queued requests dropped,
 * unanswered: nobody waits for them, and an answer would make arfd connect to the address
 * the client named. */
static void on_peer_down(struct pn *pn, pn_peer peer, void *arg)
{
	struct arfd *s = arg;
	unsigned running, queued = 0;
	pthread_mutex_lock(&s->q_lock);
	struct job *taken = cancel_locked(s, false, peer, CANCEL_CLIENT_GONE,
	                                  now_ns() + CLIENT_GONE_GRACE_MS * 1000000ull, &running);
	pthread_mutex_unlock(&s->q_lock);
	for (struct job *j = taken, *next; j; j = next, queued++) {
		next = j->next;
		request_end(s, j->from, j->op, j->t0, 1);
		free(j);
	}
	if (running || queued)
		arfd_log(ARFD_LOG_INFO, "%s is gone: %u runs cancelled in %d ms unless they end, %u "
		         "queued requests dropped", pn_peer_name(pn, peer), running,
		         CLIENT_GONE_GRACE_MS, queued);
}

/* REGIONS and STATS: a few lines of text, answered on the I/O thread like READ, so that no
 * number of long runs can make them wait for a worker. */
static void h_inline(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                     size_t len, void *arg)
{
	struct arfd *s = arg;
	struct ar_rd r = ar_rd_over(msg, len);
	uint64_t t0 = now_ns();
	bool admin;
	if (request_begin(s, from, coop, type, &r, &admin) != 0)
		return;
	if (type == AR_T_REGIONS)
		do_regions(s, from, coop, &r, t0, admin);
	else
		do_stats(s, from, coop, &r, t0);
}

/* A reader slot for a run of client `from` on this thread, or NULL: all taken, or the client
 * has cfg.threads runs already (its requests then wait on the workers' queue). */
static struct worker *reader_slot_take(struct arfd *s, pn_peer from, uint64_t now)
{
	struct worker *slot = NULL;
	pthread_mutex_lock(&s->q_lock);
	if (running_for(s, from) < s->cfg.threads)
		for (unsigned i = 0; i < s->n_slots && !slot; i++)
			if (s->workers[i].reader_slot && !s->workers[i].busy)
				slot = &s->workers[i];
	if (slot) {
		slot->busy = true;
		slot->from = from;
		slot->yielded = false;
		slot->started_ns = now;
		atomic_store(&slot->cancel_why, CANCEL_NONE);
		atomic_store(&slot->cancel_at, 0);
	}
	pthread_mutex_unlock(&s->q_lock);
	return slot;
}

/* The flusher starts what is queued, then exits. */
static void stop_writeback(struct arfd *s)
{
	pthread_mutex_lock(&s->wb_lock);
	s->wb_stop = true;
	pthread_cond_signal(&s->wb_cond);
	bool running = s->wb_running;
	s->wb_running = false;
	pthread_mutex_unlock(&s->wb_lock);
	if (running)
		pthread_join(s->wb_thread, NULL);
}

static unsigned reader_runs(struct arfd *s)
{
	unsigned n = 0;
	pthread_mutex_lock(&s->q_lock);
	for (unsigned i = 0; i < s->n_slots; i++)
		n += s->workers[i].reader_slot && s->workers[i].busy;
	pthread_mutex_unlock(&s->q_lock);
	return n;
}

static void reader_slot_put(struct arfd *s, struct worker *slot)
{
	pthread_mutex_lock(&s->q_lock);
	slot->busy = false;
	if (s->q_head)                 /* a client's queued request may wait for this one */
		pthread_cond_signal(&s->q_cond);
	pthread_mutex_unlock(&s->q_lock);
}

/* The run of reader slot arg has gone on past READER_BUDGET_US, or is about to block (on the
 * reader, once; vm_run_opts.on_slow): hand the reader's place over and go on. */
static void reader_run_turned_long(void *arg)
{
	struct worker *slot = arg;
	struct arfd *s = slot->s;
	if (slot->yielded)
		return;
	slot->yielded = true;
	tls_reader_run = NULL;
	int rc = pn_yield(s->pn);
	if (rc == 0) {
		atomic_fetch_add(&s->n_handed_over, 1);
	} else if (atomic_fetch_add(&s->n_no_handover, 1) == 0) {
		arfd_log(ARFD_LOG_WARN, "a long run could not hand the reader's place over (%s): it "
		         "goes on there, and other requests wait for it", pn_strerror(rc));
	}
}

/* Called before what may block (a sleeping hook, a large load): if a run started on the
 * reader is on this thread, it hands the reader's place over first. */
static void about_to_block(void)
{
	if (tls_reader_run)
		reader_run_turned_long(tls_reader_run);
}

/* INSTALL and EXEC arrive here, on the reader: check and count the request (a refusal is
 * answered at once), then run it here or queue a copy of it for a worker (see the top). */
static void h_admit(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                    size_t len, void *arg)
{
	struct arfd *s = arg;
	struct ar_rd r = ar_rd_over(msg, len);
	uint64_t t0 = now_ns();
	bool admin;
	if (request_begin(s, from, coop, type, &r, &admin) != 0)
		return;
	/* only while no request waits for a worker, so nothing overtakes queued work */
	if (type == AR_T_EXEC && !__atomic_load_n(&s->q_head, __ATOMIC_ACQUIRE)) {
		struct worker *slot = pn_may_yield(pn) == 0 ? reader_slot_take(s, from, t0) : NULL;
		if (slot) {
			atomic_fetch_add(&s->n_on_reader, 1);
			tls_reader_run = slot;
			do_exec_run(s, from, coop, &r, t0, admin, false, slot);
			tls_reader_run = NULL;
			reader_slot_put(s, slot);
			return;
		}
		/* a short, side-effect-free segment runs right here all the same */
		if (do_exec_run(s, from, coop, &r, t0, admin, true, NULL) == 0)
			return;
	}
	size_t n = ar_left(&r);
	struct job *j = malloc(sizeof *j + n);
	if (!j) {
		request_end(s, from, type, t0, 1);
		reply_err(s, from, coop, -AR_ENOMEM, "server out of memory queueing the request");
		return;
	}
	*j = (struct job){ .op = type, .from = from, .coop = coop, .t0 = t0, .admin = admin,
	                   .len = n };
	memcpy(j->body, r.p, n);
	pthread_mutex_lock(&s->q_lock);
	if (s->q_tail)
		s->q_tail->next = j;
	else
		s->q_head = j;
	s->q_tail = j;
	pthread_cond_signal(&s->q_cond);
	pthread_mutex_unlock(&s->q_lock);
}

/* ---- host hooks every arfd offers ---- */

/* forward(k): when this run returns (>= 0, no trap), do not answer its client: send the
 * run's output, an EXEC request body (docs/protocol.md), to cluster member k (arfd
 * --member, in order), which runs it and answers the client directly (Paradis-Net's
 * forward: one message more, not a round trip).  0, or -EINVAL (22) for a member that is
 * not configured (nothing is forwarded then), -EALREADY (114) when called twice. */
static int64_t hook_forward(struct vm_hook_ctx *ctx, int64_t k)
{
	struct arfd *s = vm_hook_user(ctx);
	if (!tls_forward_ok || k < 0 || (uint64_t)k >= s->cfg.n_members)
		return -EINVAL;            /* (segments see Linux errno values, as ARF's do) */
	if (tls_forward_to >= 0)
		return -EALREADY;
	tls_forward_to = (int)k;
	return 0;
}

/* now(): wall-clock time in nanoseconds since the epoch. */
static int64_t hook_now(struct vm_hook_ctx *ctx)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* log(region, off, len): one line from the segment's memory into the server log. */
static void hook_log(struct vm_hook_ctx *ctx, int64_t region, int64_t off, int64_t len)
{
	if (region < 0 || off < 0 || len < 0 || len > 4096) {
		vm_hook_fail(ctx, "log: bad range (region %lld, offset %lld, length %lld)",
		             (long long)region, (long long)off, (long long)len);
		return;
	}
	const char *p = vm_hook_mem(ctx, (unsigned)region, (uint64_t)off, (uint64_t)len, 0);
	if (!p) {
		vm_hook_fail(ctx, "log: range outside region %lld", (long long)region);
		return;
	}
	char line[4097];
	for (int64_t i = 0; i < len; i++)    /* control characters would forge log lines */
		line[i] = p[i] >= ' ' && p[i] <= '~' ? p[i] : '?';
	line[len] = '\0';
	arfd_log(ARFD_LOG_INFO, "segment: %s", line);
}

/* The bytes off..off+len of the run's region for hook `what`: 0 with *p pointing at them (NULL
 * when len is 0), or -EINVAL after failing the run (a negative number, a range outside). */
static int hook_range(struct vm_hook_ctx *ctx, const char *what, int64_t region, int64_t off,
                      int64_t len, const uint8_t **p)
{
	*p = NULL;
	if (region < 0 || off < 0 || len < 0) {
		vm_hook_fail(ctx, "%s: bad range (region %lld, offset %lld, length %lld)", what,
		             (long long)region, (long long)off, (long long)len);
		return -EINVAL;
	}
	if (len == 0)
		return 0;
	*p = vm_hook_mem(ctx, (unsigned)region, (uint64_t)off, (uint64_t)len, 0);
	if (!*p) {
		vm_hook_fail(ctx, "%s: range outside region %lld", what, (long long)region);
		return -EINVAL;
	}
	return 0;
}

/* sync(region, off, len): make bytes off..off+len of a file-backed region durable (msync
 * MS_SYNC of the pages holding them): 0, or -errno.  On anonymous memory it has nothing to
 * do and succeeds.  This is how a segment implements fsync (arf/data.c); bytecode cannot
 * reach the page cache any other way. */
static int64_t hook_sync(struct vm_hook_ctx *ctx, int64_t region, int64_t off, int64_t len)
{
	const uint8_t *p;
	int rc = hook_range(ctx, "sync", region, off, len, &p);
	if (rc != 0 || !p)
		return rc;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)p & ~(page - 1);
	about_to_block();
	if (msync((void *)start, (uintptr_t)p + (uintptr_t)len - start, MS_SYNC) != 0)
		return -errno;
	return 0;
}

/* The flusher: sync_file_range(SYNC_FILE_RANGE_WRITE) of the queued ranges, which may block
 * while the device's queue is full: on this thread, not on a run's.  The oldest range waits
 * until it has gathered WB_GATHER bytes or is WB_AGE_NS old (stopping, or half the queue
 * waiting: at once). */
static void *writeback_main(void *arg)
{
	pthread_setname_np(pthread_self(), "arfd-writeback");   /* for top -H, ps -L, gdb */
	struct arfd *s = arg;
	pthread_mutex_lock(&s->wb_lock);
	for (;;) {
		while (!s->wb_n && !s->wb_stop)
			pthread_cond_wait(&s->wb_cond, &s->wb_lock);
		if (!s->wb_n)
			break;                 /* stopping, and nothing left to start */
		struct wb_range r = s->wb[s->wb_head];
		uint64_t due = r.t_ns + WB_AGE_NS;
		/* young and small: wait, unless the queue is half full (many scattered small
		 * writes: the oldest then goes at once, so no run is left to start its own) */
		if (r.len < WB_GATHER && !s->wb_stop && s->wb_n < WB_QUEUE / 2 && now_ns() < due) {
			struct timespec ts = { (time_t)(due / 1000000000u), (long)(due % 1000000000u) };
			pthread_cond_timedwait(&s->wb_cond, &s->wb_lock, &ts);
			continue;              /* it may have grown, aged, or others came */
		}
		s->wb_head = (s->wb_head + 1) % WB_QUEUE;
		s->wb_n--;
		pthread_mutex_unlock(&s->wb_lock);
		sync_file_range(r.fd, (off_t)r.off, (off_t)r.len, SYNC_FILE_RANGE_WRITE);
		pthread_mutex_lock(&s->wb_lock);
	}
	pthread_mutex_unlock(&s->wb_lock);
	return NULL;
}

/* Queue a writeback range for the flusher (a range continuing the last one queued extends
 * it, and wakes the flusher when that makes it large enough to start); false when the queue
 * is full or there is no flusher. */
static bool writeback_queue(struct arfd *s, int fd, uint64_t off, uint64_t len)
{
	pthread_mutex_lock(&s->wb_lock);
	bool ok = s->wb_running && !s->wb_stop;
	if (ok && s->wb_n) {
		struct wb_range *last = &s->wb[(s->wb_head + s->wb_n - 1) % WB_QUEUE];
		if (last->fd == fd && last->off + last->len == off) {
			bool was_small = last->len < WB_GATHER;
			last->len += len;
			if (was_small && last->len >= WB_GATHER)
				pthread_cond_signal(&s->wb_cond);
			pthread_mutex_unlock(&s->wb_lock);
			return true;
		}
	}
	if (ok && s->wb_n < WB_QUEUE) {
		s->wb[(s->wb_head + s->wb_n) % WB_QUEUE] = (struct wb_range){ fd, off, len, now_ns() };
		s->wb_n++;
		pthread_cond_signal(&s->wb_cond);
	} else {
		ok = false;
	}
	pthread_mutex_unlock(&s->wb_lock);
	return ok;
}

/* writeback(region, off, len): start writing bytes off..off+len of a file-backed region to
 * disk without waiting for it (sync_file_range SYNC_FILE_RANGE_WRITE: the dirty pages holding
 * them are queued to the device, pages already under writeback are skipped): 0, or -errno.
 * Durability still takes sync; this only leaves less for it to write, so that an fsync after
 * a long sequence of writes waits for what the last of them left, not for all of it (arf's
 * write calls it for the bytes a run copied).  On anonymous memory or a read-only region
 * there is nothing to do (0).  The range is queued for the flusher thread (writeback_main),
 * which starts it once the writes after it have made it WB_GATHER bytes or it is WB_AGE_NS
 * old, and is what may block while the device's queue is full; the run does that itself
 * only when the flusher is WB_QUEUE ranges behind. */
static int64_t hook_writeback(struct vm_hook_ctx *ctx, int64_t region, int64_t off, int64_t len)
{
	struct arfd *s = vm_hook_user(ctx);
	const uint8_t *p;
	int rc = hook_range(ctx, "writeback", region, off, len, &p);
	if (rc != 0 || !p)
		return rc;
	for (unsigned i = 0; i < s->n_regions; i++) {   /* the segment's index is not arfd's */
		const struct region *g = &s->regions[i];
		if (g->base && p >= g->base && p - g->base < (ptrdiff_t)g->len) {
			if (g->fd < 0)
				return 0;
			/* off the request path: the result was advisory anyway, and a 4 KiB write
			 * should cost a round trip, not a wait for the device queue */
			if (writeback_queue(s, g->fd, (uint64_t)(p - g->base), (uint64_t)len))
				return 0;
			about_to_block();
			if (sync_file_range(g->fd, p - g->base, len, SYNC_FILE_RANGE_WRITE) != 0)
				return -errno;
			return 0;
		}
	}
	return 0;
}

/* pause(us): sleep the calling worker for us microseconds (0 to 10000): 0.  For a segment
 * that waits for another run to let go of something (arf/data.c's write waiting for the
 * inode lock while the write before it, of the same file, copies its bytes): bytecode can
 * only spin, which on a small machine takes the CPU from the very run it waits for. */
static int64_t hook_pause(struct vm_hook_ctx *ctx, int64_t us)
{
	if (us < 0 || us > 10000) {
		vm_hook_fail(ctx, "pause: %lld us (0 to 10000)", (long long)us);
		return -EINVAL;
	}
	struct timespec ts = { 0, (long)us * 1000 };
	if (us)
		about_to_block();
	nanosleep(&ts, NULL);
	return 0;
}

/* ---- life cycle ---- */

/* An --arf image is served by one arfd at a time: two that both wrote it (journal, allocation
 * maps, their own caches of it in memory) would corrupt it.  The server that serves it holds
 * an exclusive flock(2) on it from before it maps the image (so a successor on shared
 * storage reads what its predecessor wrote back) until it released it (arfd_move) or exited;
 * the kernel drops the lock of a killed one.  Another arfd waits up to wait_s seconds
 * (--lock-wait: a successor started before the move), else refuses with a message.
 * 0, or -1 with a message. */
#define LOCK_POLL_MS 50

static int image_lock(int fd, const char *path, unsigned wait_s, char *err, size_t errlen)
{
	uint64_t deadline = now_ns() + (uint64_t)wait_s * 1000000000u;
	bool said = false;
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		int saverr = errno;
		if (saverr != EWOULDBLOCK && saverr != EINTR) {
			snprintf(err, errlen, "--arf %s: flock: %s", path, strerror(saverr));
			return -1;
		}
		if (now_ns() >= deadline) {
			snprintf(err, errlen, "--arf %s: another arfd serves this image (it holds its "
			         "lock): stop or move that one first (--lock-wait S waits for it)", path);
			return -1;
		}
		if (!said && wait_s)
			arfd_log(ARFD_LOG_INFO, "--arf %s: another arfd serves this image: waiting up "
			         "to %u s for it to let go (a move or a stop)", path, wait_s);
		said = true;
		usleep(LOCK_POLL_MS * 1000);
	}
}

/* Map one region; lock_wait_s >= 0: an --arf image, locked first (image_lock). */
static int map_region(struct region *g, const struct arfd_region_spec *spec, int lock_wait_s,
                      char *err, size_t errlen)
{
	size_t n = strnlen(spec->name, sizeof g->name - 1);   /* both live in struct arfd */
	memcpy(g->name, spec->name, n);
	g->name[n] = '\0';
	g->access = spec->access;
	g->admin_write = spec->admin_write;
	g->fd = -1;
	if (spec->file[0]) {
		int rw = spec->access & ISA_ACC_WRITE;
		int fd = open(spec->file, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && lock_wait_s >= 0 &&
		    image_lock(fd, spec->file, (unsigned)lock_wait_s, err, errlen) != 0) {
			close(fd);
			return -1;
		}
		if (fd < 0 || fstat(fd, &st) != 0) {
			snprintf(err, errlen, "region %s: %s: %s", spec->name, spec->file, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		g->len = (uint64_t)st.st_size;
		g->file = true;
		g->base = g->len ? mmap(NULL, g->len, PROT_READ | (rw ? PROT_WRITE : 0), MAP_SHARED, fd, 0)
		                 : NULL;
		if (rw && g->base != MAP_FAILED)
			g->fd = fd;                /* kept for the writeback hook */
		else
			close(fd);
	} else {
		g->len = spec->size;
		g->base = g->len ? mmap(NULL, g->len, PROT_READ | PROT_WRITE,
		                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) : NULL;
	}
	if (g->base == MAP_FAILED) {
		g->base = NULL;
		snprintf(err, errlen, "region %s: mmap of %" PRIu64 " bytes: %s", spec->name, g->len,
		         strerror(errno));
		return -1;
	}
	return 0;
}

static void unmap_regions(struct arfd *s)
{
	for (unsigned i = 0; i < s->n_regions; i++) {
		struct region *g = &s->regions[i];
		if (!g->base)
			continue;
		if (g->file && (g->access & ISA_ACC_WRITE) && msync(g->base, g->len, MS_SYNC) != 0)
			arfd_log(ARFD_LOG_ERROR, "msync of region %s: %s", g->name, strerror(errno));
		munmap(g->base, g->len);
		g->base = NULL;            /* once: arfd_move, then arfd_stop */
	}
	for (unsigned i = 0; i < s->n_regions; i++)
		if (s->regions[i].fd >= 0) {
			close(s->regions[i].fd);
			s->regions[i].fd = -1;
		}
}

struct arfd *arfd_start(const struct arfd_config *cfg, char *err, size_t errlen)
{
	test_kill_setup();
	struct arfd *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->cfg = *cfg;
	s->arf_region = -1;
	struct arfd_config *c = &s->cfg;
	if (!c->threads) c->threads = 4;
	if (!c->cache_max) c->cache_max = 256;
	if (!c->max_segment) c->max_segment = 16u << 20;
	if (!c->fuel_default) c->fuel_default = VM_DEFAULT_FUEL;
	if (!c->fuel_max) c->fuel_max = 10 * c->fuel_default;
	if (!c->out_max) c->out_max = 64u << 20;
	if (!c->max_inflight) c->max_inflight = 64;
	if (!c->max_run_ms) c->max_run_ms = ARFD_DEFAULT_RUN_MS;
	if (!c->hook_fuel_ns) c->hook_fuel_ns = ARFD_DEFAULT_HOOK_FUEL_NS;
	if (c->secret && !*c->secret) c->secret = NULL;          /* "": none */
	if (c->admin_secret && !*c->admin_secret) c->admin_secret = NULL;
	if (c->secret && c->admin_secret && !strcmp(c->secret, c->admin_secret)) {
		/* over udp a request carrying it could not say which it means */
		snprintf(err, errlen, "the admin secret must differ from the secret");
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->q_lock, NULL);
	pthread_mutex_init(&s->wb_lock, NULL);
	pthread_condattr_t ca;             /* timed waits (worker_main, writeback_main) by the
	                                    * clock runs use */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wb_cond, &ca);
	pthread_cond_init(&s->q_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (c->n_listen == 0) {
		snprintf(err, errlen, "no --listen endpoint given");
		goto fail;
	}
	s->vm = vm_new();
	if (!s->vm)
		goto fail;
	int arf_region = -1;
	if (c->arf_image) {
		/* the image is one more file region, checked and attached before it is bound */
		if (c->n_regions == ARFD_MAX_REGIONS || strlen(c->arf_image) >= sizeof c->regions[0].file) {
			snprintf(err, errlen, "--arf %s: too many regions, or the path is too long",
			         c->arf_image);
			goto fail;
		}
		for (unsigned i = 0; i < c->n_regions; i++)
			if (!strcmp(c->regions[i].name, "arf")) {
				snprintf(err, errlen, "--arf %s: region 'arf' is also given by --region",
				         c->arf_image);
				goto fail;
			}
		struct arfd_region_spec *g = &c->regions[c->n_regions];
		memset(g, 0, sizeof *g);
		snprintf(g->name, sizeof g->name, "arf");
		snprintf(g->file, sizeof g->file, "%s", c->arf_image);
		g->access = ISA_ACC_RW;
		arf_region = (int)c->n_regions++;
	}
	for (unsigned i = 0; i < c->n_regions; i++) {
		int lock_wait_s = (int)i == arf_region ? (int)(c->lock_wait_s > INT32_MAX ? INT32_MAX :
		                                                c->lock_wait_s) : -1;
		if (map_region(&s->regions[i], &c->regions[i], lock_wait_s, err, errlen) != 0)
			goto fail;
		s->n_regions++;
		struct arf_attach_info ai;
		char aerr[512];
		if ((int)i == arf_region &&
		    arf_attach(s->regions[i].base, s->regions[i].len, &ai, aerr, sizeof aerr) != 0) {
			snprintf(err, errlen, "--arf %s: refused: %s", c->arf_image, aerr);
			goto fail;
		}
		if ((int)i == arf_region)
			arfd_log(ARFD_LOG_INFO, "arf image %s: epoch %" PRIu64 "%s, %u operations "
			         "rolled back, %" PRIu64 " allocation-map fixes", c->arf_image, ai.epoch,
			         ai.was_clean ? "" : " (after an unclean stop)", ai.rolled_back,
			         ai.map_fixes);
		if ((int)i == arf_region)
			s->arf_region = arf_region;
		if ((int)i == arf_region && c->n_members) {
			/* a metadata server: its members must be the description's data servers,
			 * in its order; an image with no description yet (arf cluster init comes
			 * after the servers start) is checked at the first forward instead */
			char why[1024];
			int mrc = members_check(s, why, sizeof why);
			if (mrc < 0) {
				/* nothing ran since the attach, which checked it: clean */
				arf_detach(s->regions[i].base, s->regions[i].len);
				snprintf(err, errlen, "--arf %s: %s", c->arf_image, why);
				goto fail;
			}
			if (mrc > 0)
				arfd_log(ARFD_LOG_INFO, "%s yet: checked at the first forward", why);
			else
				arfd_log(ARFD_LOG_INFO, "%u --member match the cluster description of %s",
				         c->n_members, c->arf_image);
		}
		int rc = vm_bind_region(s->vm, c->regions[i].name, s->regions[i].base, s->regions[i].len,
		                        c->regions[i].access);
		if (rc != 0) {
			snprintf(err, errlen, "region %s: %s", c->regions[i].name, vm_strerror(rc));
			goto fail;
		}
	}
	vm_bind_hook(s->vm, "now", (void *)hook_now, ":l", s);
	vm_bind_hook(s->vm, "log", (void *)hook_log, "lll:v", s);
	vm_bind_hook(s->vm, "sync", (void *)hook_sync, "lll:l", s);
	vm_bind_hook(s->vm, "pause", (void *)hook_pause, "l:l", s);
	vm_bind_hook(s->vm, "writeback", (void *)hook_writeback, "lll:l", s);
	vm_bind_hook(s->vm, "forward", (void *)hook_forward, "l:l", s);
	for (unsigned i = 0; i < c->n_hooks; i++) {
		const struct arfd_hook *h = &c->hooks[i];
		int rc = vm_bind_hook(s->vm, h->name, h->fn, h->sig, h->user);
		if (rc == 0 && h->blocks)
			rc = vm_hook_blocks(s->vm, h->name);
		if (rc != 0) {
			snprintf(err, errlen, "hook %s (%s): %s", h->name ? h->name : "?",
			         h->sig ? h->sig : "?", vm_strerror(rc));
			goto fail;
		}
	}

	/* the reply buffer of an EXEC may be as large as out_max plus its header */
	/* every handler is inline (admission, READ, WRITE): Paradis-Net's one worker is idle.
	 * hold: nothing reaches us before the handlers below are set (pn_start).  A restarted
	 * arfd's first requests come the instant it listens (clients waiting to reconnect); one
	 * that found no handler was dropped unanswered, and its client's session, told that it
	 * ran, waited for its reply until the request timed out (many_sessions.sh) */
	s->max_args = c->out_max + EXEC_HDR_ROOM + c->max_segment + 4096;
	struct pn_opts po = { .n_workers = 1, .hold = true, .max_msg = s->max_args,
	                      .admit = admit_request, .refuse = refuse_request, .admit_arg = s,
	                      .secret = c->secret, .secret_len = c->secret ? strlen(c->secret) : 0,
	                      .tls_cert = c->tls_cert, .tls_key = c->tls_key, .tls_ca = c->tls_ca,
	                      .admin_secret = c->admin_secret,
	                      .cluster_key = c->cluster_key,
	                      .cluster_key_len = c->cluster_key ? strlen(c->cluster_key) : 0,
	                      /* a udp client quiet through its longest run keeps its peer */
	                      .udp_idle_ms = c->max_run_ms > 50000 ? c->max_run_ms + 10000 : 60000,
	                      .admin_secret_len = c->admin_secret ? strlen(c->admin_secret) : 0,
	                      .max_conns = c->max_conns,
	                      .max_conns_per_addr = c->max_conns_per_addr ? c->max_conns_per_addr : 256,
	                      .preauth_timeout_ms = (c->auth_timeout ? c->auth_timeout : 10) * 1000u,
	                      .idle_timeout_ms = (c->idle_timeout ? c->idle_timeout : 600) * 1000u,
	                      .rx_budget = c->rx_budget ? c->rx_budget : 256u << 20 };
	s->workers = calloc(3 * (size_t)c->threads, sizeof *s->workers);
	if (!s->workers)
		goto fail;
	s->n_slots = 3 * c->threads;
	for (unsigned i = 0; i < s->n_slots; i++) {
		s->workers[i].s = s;
		s->workers[i].reader_slot = i >= 2 * c->threads;
	}
	if (pthread_create(&s->wb_thread, NULL, writeback_main, s) == 0)
		s->wb_running = true;      /* without it, runs start their writeback themselves */
	for (unsigned i = 0; i < 2 * c->threads; i++) {
		if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]) != 0) {
			snprintf(err, errlen, "pthread_create: %s", strerror(errno));
			goto fail;
		}
		s->n_workers++;
	}
	char perr[256];
	s->pn = pn_init(c->listen, c->n_listen, &po, perr, sizeof perr);
	if (!s->pn) {
		snprintf(err, errlen, "%s", perr);
		goto fail;
	}
	/* On rdma: clients read and write regions one-sidedly, without this server's CPU: each
	 * region is registered with the rights its export allows (REGIONS hands out the keys). */
	if (pn_self(s->pn, "rdma")) {
		for (unsigned i = 0; i < s->n_regions; i++) {
			struct region *g = &s->regions[i];
			/* an admin-only region is exported read-only: a key cannot tell who holds it */
			int acc = PN_MEM_READ |
			          (g->access & ISA_ACC_WRITE && !g->admin_write ? PN_MEM_WRITE : 0);
			int rc = g->len ? pn_mem_export(s->pn, g->base, g->len, acc, &g->mem, g->handle) : 0;
			if (rc != 0) {
				g->mem = NULL;
				arfd_log(ARFD_LOG_WARN, "region %s: no one-sided access: %s", g->name,
				         pn_strerror(rc));
			}
		}
	}
	for (unsigned k = 0; k < c->n_members; k++) {
		int rc = pn_peer_get(s->pn, c->members[k], &s->members[k]);
		if (rc != 0) {
			snprintf(err, errlen, "member %s: %s", c->members[k], pn_strerror(rc));
			goto fail;
		}
	}
	if (c->n_members && !c->cluster_key)
		arfd_log(ARFD_LOG_WARN, "members without a cluster key: they will not believe the "
		         "origin of what this server forwards (give every server --cluster-key)");
	pn_set_handler(s->pn, AR_T_INSTALL, PN_INLINE, h_admit, s);
	pn_set_handler(s->pn, AR_T_EXEC, PN_INLINE, h_admit, s);
	pn_set_handler(s->pn, AR_T_READ, PN_INLINE, h_read, s);
	pn_set_handler(s->pn, AR_T_WRITE, PN_INLINE, h_write, s);
	pn_set_handler(s->pn, AR_T_REGIONS, PN_INLINE, h_inline, s);
	pn_set_handler(s->pn, AR_T_STATS, PN_INLINE, h_inline, s);
	pn_set_peer_down(s->pn, on_peer_down, s);
	pn_set_handler(s->pn, PN_OTHER_TYPES, PN_INLINE, h_other, s);
	pn_start(s->pn);
	return s;
fail:
	stop_workers(s);
	if (s->pn)
		pn_finalize(s->pn);
	stop_writeback(s);
	workers_free(s);
	unmap_regions(s);
	vm_free(s->vm);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->q_lock);
	pthread_cond_destroy(&s->q_cond);
	pthread_mutex_destroy(&s->wb_lock);
	pthread_cond_destroy(&s->wb_cond);
	free(s);
	return NULL;
}

const char *arfd_endpoint(struct arfd *s, const char *scheme)
{
	return pn_self(s->pn, scheme);
}

/* Wait up to timeout_ms for the requests admitted to end; then cancel the runs still going
 * (their clients get SHUTDOWN) and answer the queued ones, never started, with `status`
 * (DRAINING: send it again, to our successor; MOVED: to the server named).  New requests are
 * refused by then (draining or moved is set). */
static void drain(struct arfd *s, int timeout_ms, int status, const char *doing)
{
	uint64_t deadline = now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000u;
	while (atomic_load(&s->running) > 0 && now_ns() < deadline)
		usleep(1000);
	if (atomic_load(&s->running) > 0) {
		/* what still runs is cancelled (it stops at its next look at cancel_at) and what
		 * still waits is answered: both clients get SHUTDOWN */
		unsigned running;
		pthread_mutex_lock(&s->q_lock);
		struct job *taken = cancel_locked(s, true, 0, CANCEL_SHUTDOWN, 1, &running);
		pthread_mutex_unlock(&s->q_lock);
		unsigned queued = 0;
		for (struct job *j = taken, *next; j; j = next, queued++) {
			next = j->next;
			request_end(s, j->from, j->op, j->t0, 1);
			if (status == -AR_EMOVED)
				reply_err(s, j->from, j->coop, status, "%s", s->moved_to);
			else
				reply_err(s, j->from, j->coop, status, "server is shutting down: the "
				          "request was not started within %d ms", timeout_ms);
			free(j);
		}
		arfd_log(ARFD_LOG_WARN, "%s: %u runs cancelled, %u queued requests refused "
		         "after %d ms", doing, running, queued, timeout_ms);
	}
}

/* A move (docs/arf.md, "Moving an image"): new requests are answered MOVED from now on; the
 * ones admitted before finish and their replies go out (a run is bounded by its wall-clock
 * limit, so waiting that long cancels nothing that would ever end); then the regions are
 * written back and let go as at a stop, the image's lock with them, so the server named can
 * take it.  The endpoints stay open: late clients are told where to go until arfd stops. */
#define MOVE_CANCEL_WAIT_MS 10000

int arfd_move(struct arfd *s, const char *endpoint, char *err, size_t errlen)
{
	char why[64];
	if (ar_moved_target(endpoint, why, sizeof why) != 0) {
		snprintf(err, errlen, "move to '%.300s': %s", endpoint, why);
		return -1;
	}
	if (atomic_load(&s->moved)) {
		if (!strcmp(s->moved_to, endpoint))
			return 0;
		snprintf(err, errlen, "already moved to %s (a stopped and restarted arfd serves "
		         "again)", s->moved_to);
		return -1;
	}
	static const char *const schemes[] = { "tcp", "tls", "udp", "rdma" };
	for (unsigned i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
		const char *self = pn_self(s->pn, schemes[i]);
		if (self && !strcmp(self, endpoint)) {
			snprintf(err, errlen, "move to %s: that is this server", endpoint);
			return -1;
		}
	}
	snprintf(s->moved_to, sizeof s->moved_to, "%s", endpoint);
	atomic_store(&s->moved, true);
	drain(s, (int)s->cfg.max_run_ms + 2000, -AR_EMOVED, "moving");
	/* runs cancelled there stop at their next look at cancel_at (within one chunk of fuel or
	 * one hook call); the regions must outlive every one of them, so a run that does not stop
	 * keeps the image here (its successor waits for the lock, the clients with it) */
	for (int i = 0; i < MOVE_CANCEL_WAIT_MS && atomic_load(&s->running) > 0; i++)
		usleep(1000);
	if (atomic_load(&s->running) > 0) {
		snprintf(err, errlen, "moving: %u requests did not stop after they were cancelled: "
		         "the image stays mapped here until arfd stops", atomic_load(&s->running));
		return -1;
	}
	stop_writeback(s);             /* no run is left to queue more; before the fds close */
	for (unsigned i = 0; i < s->n_regions; i++)
		if (s->regions[i].mem) {
			pn_mem_unexport(s->pn, s->regions[i].mem);   /* no one-sided access either */
			s->regions[i].mem = NULL;
		}
	struct region *arf = s->cfg.arf_image ? region_find(s, "arf") : NULL;
	if (arf && arf->base)
		arf_detach(arf->base, arf->len);   /* no run is left: the image is consistent */
	unmap_regions(s);              /* msync, munmap, close: the image's lock goes */
	arfd_log(ARFD_LOG_INFO, "moved: the regions are written back and let go; every request "
	         "is answered MOVED to %s from now on", endpoint);
	return 0;
}

void arfd_stop(struct arfd *s, int timeout_ms)
{
	atomic_store(&s->draining, true);
	drain(s, timeout_ms, -AR_EDRAINING, "stopping");
	stop_workers(s);                   /* they may still reply: before the endpoints close */
	/* so may runs started on the reader, which stop at their next look at cancel_at */
	for (int i = 0; i < 10000 && reader_runs(s) > 0; i++)
		usleep(1000);
	for (unsigned i = 0; i < s->n_regions; i++)
		if (s->regions[i].mem)
			pn_mem_unexport(s->pn, s->regions[i].mem);
	pn_finalize(s->pn);
	stop_writeback(s);             /* no run is left to queue more; before the fds close */
	workers_free(s);
	for (struct cached *c = s->lru_head, *next; c; c = next) {
		next = c->next;
		vm_prog_free(c->prog);
		free(c);
	}
	struct region *arf = s->cfg.arf_image ? region_find(s, "arf") : NULL;
	if (arf && arf->base)
		arf_detach(arf->base, arf->len);   /* no run is left: the image is consistent */
	unmap_regions(s);
	vm_free(s->vm);
	free(s->inflight);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->q_lock);
	pthread_cond_destroy(&s->q_cond);
	pthread_mutex_destroy(&s->wb_lock);
	pthread_cond_destroy(&s->wb_cond);
	free(s);
}
