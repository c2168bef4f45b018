/* grep.c: `arf grep`, grep over files of an ARF image, each scanned inside arfd.
 *
 *   arf grep [GREP OPTIONS] [--local] [--explain] PATTERNS FILE...
 *
 * FILE is ENDPOINT:/path (tcp:HOST:PORT:/path, udp:..., rdma:...; HOST may be [v6]) or a path
 * under an `arf mount` (found in /proc/self/mountinfo: type fuse.arf, source arf:ENDPOINT).
 * libgrep parses the options (grep_args_parse; --local and --explain are this file's) and
 * compiles the patterns (grep_arf_segment: the scan that walks the file's extents in the
 * server); this file resolves names (arf_lookup; for -r the server walks the tree,
 * arf_walk_next, a batch of entries per round trip), runs the segment until its trailer says
 * it is done, and prints the records
 * with grep_format_*: the bytes, messages and exit status of GNU grep 3.8 in the C locale.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arc.h"
#include "arf_cli.h"
#include "arf_cluster.h"
#include "arf_data.h"
#include "arf_ops.h"
#include "grep.h"
#include "isa.h"
#include "vm.h"

static const char *prog = "grep";

#define OUT_MAX   (32u << 20)      /* output of one run */
#define OUT_SOFT  (4u << 20)       /* a run stops at the next line after this much */
#define SCAN_MAX  (64ull << 20)    /* bytes of file per run (fuel: a few per byte) */

struct conn {
	char *endpoint;
	struct arc *a;
	struct arf_client *c;
	struct arf_data *d;            /* a cluster's metadata server: its description's reader;
	                                * -B: the reader of leading lines (lead_add) */
	struct arf_cluster *cl;        /* its data servers (NULL: a one-server image) */
	int d_failed;                  /* arf_data_open failed: -B takes the exact path */
	unsigned cl_n;                 /* their number (each file's unit is its layout's) */
	struct conn *next;
};

struct state {
	struct grep *g;
	struct grep_args a;            /* the command line */
	const uint8_t *seg;
	size_t seg_len;
	uint8_t seg_id[AR_ID_LEN];     /* hashed once: every file is a run of the same segment */
	int local;
	int errors, any_match;
	int no_read;                   /* nothing can be selected and -L names the files: look
	                                * them up, scan nothing */
	struct conn *conns;
	uint64_t scan_max;
	int64_t out_soft;              /* OUT_SOFT, or $ARF_GREP_RUN_OUT (tests: many runs) */
	/* standard output when it is a regular file under an arf mount: its endpoint and path
	 * there (grep refuses to print a file's lines into it), its inode once looked up */
	char *out_endpoint;
	const char *out_path;
	char *out_abs;
	int64_t out_ino;               /* 0: not looked up yet; < 0: none */
	struct grep_out cl_out;        /* a cluster file's records */
	/* the scan in the data servers: the patterns compiled without -c, -l, -L, -q (each
	 * server returns its lines; the client counts), their arf segment (NULL: every
	 * cluster file is gathered and scanned here) */
	struct grep *g_srv;
	const uint8_t *seg_srv;
	size_t seg_srv_len;
	uint8_t seg_srv_id[AR_ID_LEN];
	int srv_tried;                 /* cluster_servers_ready compiled g_srv (or could not) */
	int srv_counts;                /* g_srv counts (-c, -l, -L, -q kept): the servers return
	                                * counts, not lines */
	int64_t srv_limit;             /* counts: the count that settles the answer (-l, -L,
	                                * -q: 1; -m NUM: NUM), -1: none */
	int64_t srv_mlimit;            /* lines: -m NUM (each window stops at NUM; the client
	                                * takes the file's first NUM), -1: none */
	/* UTF-8 context on the fast path (grep_needs_exact): the patterns on the exact path,
	 * for a file whose records hold a line with an encoding error (owned by g), and their
	 * arf segment; made on first use, on the main thread (twin_ready) */
	struct grep *gx;
	const uint8_t *seg_x;
	size_t seg_x_len;
	uint8_t seg_x_id[AR_ID_LEN];
	struct lead *lead;             /* -B: the records with the leading lines (lead_add) */
};

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

static void file_error(struct state *st, const char *name, int err)
{
	st->errors = 1;
	if (!st->a.no_messages)
		fprintf(stderr, "%s: %s: %s\n", prog, name, strerror(err));
}

/* grep stops at a failed write: "write error: No space left on device", status 2.  After
 * each file (errno is still the failed write's) and, flushing, at the end. */
static void check_output(int flush)
{
	if (ferror(stdout) || (flush && fflush(stdout) != 0)) {
		int err = errno;
		die("write error: %s", strerror(err));
	}
}

/* A failure that is not the file's (transport, trap): always reported. */
static void run_error(struct state *st, const char *name, const char *what)
{
	st->errors = 1;
	fflush(stdout);
	fprintf(stderr, "%s: %s: %s\n", prog, name, what);
}

/* k's metadata server holds a cluster description: open its data servers.  0, or -1 with
 * a message in err. */
static int cluster_open(struct conn *k, char *err, size_t errlen)
{
	char *data = arf_seg_path("ARF_DATA_SEG", "data.pno");
	char *ops = arf_seg_path("ARF_OPS_SEG", "ops.pno");
	struct arf_cluster_desc *desc = malloc(sizeof *desc);
	int rc = -1;
	if (!desc || !data || !ops) {
		snprintf(err, errlen, "memory exhausted");
		goto out;
	}
	k->d = arf_data_open(k->a, data, err, errlen);
	if (!k->d || arf_cluster_read(k->c, k->d, desc, err, errlen) < 0)
		goto out;
	if (desc->n == 0) {
		rc = 0;
		goto out;
	}
	struct arc_opts dao = { .secret = getenv("ARC_SECRET"),
	                        .timeout_ms = ARF_CLUSTER_TIMEOUT_MS,
	                        .outage_ms = ARF_CLUSTER_OUTAGE_MS };
	k->cl = arf_cluster_open(k->a, desc, &dao, ops, data, err, errlen);
	k->cl_n = desc->n;
	if (k->cl)
		rc = 0;
out:
	free(desc);
	free(data);
	free(ops);
	return rc;
}

static struct conn *connect_to(struct state *st, const char *endpoint, const char *name)
{
	for (struct conn *k = st->conns; k; k = k->next)
		if (!strcmp(k->endpoint, endpoint))
			return k->a ? k : NULL;
	struct conn *k = calloc(1, sizeof *k);
	if (!k || !(k->endpoint = strdup(endpoint)))
		die("%s", "memory exhausted");
	k->next = st->conns;
	st->conns = k;
	char err[512];
	/* a command, as arc: one started while its server restarts waits for it (the session's
	 * outage limit, 60 s) rather than failing; a mount, by contrast, refuses at once a server
	 * it never reached */
	struct arc_opts ao = { .secret = getenv("ARC_SECRET"), .wait_first = 1 };
	k->a = arc_connect(endpoint, &ao, err, sizeof err);
	if (!k->a) {
		run_error(st, name, err);
		return NULL;
	}
	char *ops = arf_seg_path("ARF_OPS_SEG", "ops.pno");
	k->c = arf_client_open(k->a, ops, err, sizeof err);
	free(ops);
	/* a cluster's files have their bytes on the data servers (docs/cluster.md, "arf grep
	 * on a cluster"); a dead one is an error within about ten seconds, not a wait */
	if (k->c && arf_lookup(k->c, 1, ARF_CLUSTER_FILE) >= 0 && cluster_open(k, err, sizeof err)) {
		arf_client_close(k->c);
		k->c = NULL;
	}
	if (!k->c) {
		run_error(st, name, err);
		arc_close(k->a);
		k->a = NULL;
		return NULL;
	}
	return k;
}

/* The first runs of a batch of files in one EXEC (grep_batch, see grep.h), started ahead of
 * their turn: grep_tree keeps a few batches in flight, so a tree of small files costs
 * about one round trip rather than one per file; each file's part is printed when its turn
 * comes.  A batch that failed as a whole (a trap, the transport) leaves its files to be run
 * one by one, which reports each file's own error. */
enum { BATCH_FILES = 64, BATCHES_AHEAD = 4 };

struct batch {
	uint64_t ino[BATCH_FILES];
	int n;                         /* files in the batch */
	int base;                      /* position of ino[0] among the files it was formed with */
	int done;                      /* files with a part: the first runs of 0..done-1 */
	struct arc_exec x;
	int64_t args[GREP_ARF_BATCH_NARGS];
	struct arc_pending *p;
	int rc;                        /* arc_exec_start's, when it failed */
	int started, waited;
	/* per file: its first run's value and output (records and trailer) inside x.out */
	int64_t value[BATCH_FILES];
	size_t off[BATCH_FILES], len[BATCH_FILES];
};

/* The result of a file's first run when it came from a batch. */
struct first_part {
	int64_t value;
	const uint8_t *out;
	size_t len;
};

static void batch_start(struct state *st, struct conn *k, struct batch *b)
{
	b->args[0] = b->n;
	b->args[1] = st->out_soft;
	b->args[2] = (int64_t)st->scan_max;
	b->x = (struct arc_exec){ .seg = st->seg, .seg_len = st->seg_len, .seg_id = st->seg_id,
	                          .entry = "grep_batch", .args = b->args,
	                          .n_args = GREP_ARF_BATCH_NARGS, .argbytes = b->ino,
	                          .argbytes_len = (size_t)b->n * sizeof b->ino[0],
	                          .fuel = 16 * st->scan_max + (1u << 24), .out_max = OUT_MAX };
	b->rc = arc_exec_start(k->a, &b->x, &b->p);
	b->started = 1;
	b->waited = 0;
	b->done = 0;
}

/* A grep_batch run's output o[0..len) and value, for n files, split into the files' parts
 * (backwards from the count at the end): the number of files run (1 .. n), with value[i] and
 * the part o[off[i] .. off[i] + plen[i]); 0 when it does not parse. */
static int batch_split(const uint8_t *o, size_t len, int64_t value, int n, int64_t *val,
                       size_t *off, size_t *plen)
{
	size_t end = len;
	if (end < 8)
		return 0;
	uint64_t cnt;
	memcpy(&cnt, o + end - 8, 8);
	if (cnt < 1 || cnt > (uint64_t)n || (uint64_t)value != cnt)
		return 0;
	end -= 8;
	for (int i = (int)cnt - 1; i >= 0; i--) {
		uint64_t v, start;
		if (end < 16)
			return 0;
		memcpy(&v, o + end - 16, 8);
		memcpy(&start, o + end - 8, 8);
		end -= 16;
		if (start > end)
			return 0;
		val[i] = (int64_t)v;
		off[i] = (size_t)start;
		plen[i] = end - (size_t)start;
		end = (size_t)start;
	}
	return end == 0 ? (int)cnt : 0;
}

/* Wait for the batch and split its output into the files' parts (backwards from the count
 * at the end); b->done = 0 when it failed or its output does not parse. */
static void batch_wait(struct conn *k, struct batch *b)
{
	if (!b->started || b->waited)
		return;
	b->waited = 1;
	int rc = b->p ? arc_exec_wait(k->a, b->p) : b->rc;
	b->p = NULL;
	b->done = rc == 0 ? batch_split(b->x.out, (size_t)b->x.out_len, b->x.value, b->n,
	                                b->value, b->off, b->len) : 0;
}

static void batch_end(struct conn *k, struct batch *b)
{
	batch_wait(k, b);
	free(b->x.out);
	b->x.out = NULL;
	b->started = 0;
}

static int is_output(struct state *st, struct conn *k, uint64_t ino, const char *name);
static int is_output_ino(struct state *st, struct conn *k, uint64_t ino);

/* The exact twin of st->g and its arf segment, made on first use (main thread only: a
 * compile touches the formatter's state).  NULL when st->g needs none. */
static struct grep *twin_ready(struct state *st)
{
	if (!grep_ctx_redo(st->g) && !grep_lead_client(st->g))
		return NULL;
	struct grep *x = grep_exact_twin(st->g);   /* also takes st->g's -H/-h again */
	if (!x)
		die("%s", "memory exhausted");
	if (!st->gx) {
		char err[256];
		if (grep_arf_segment(x, &st->seg_x, &st->seg_x_len, err, sizeof err) != 0)
			die("%s", err);
		isa_seg_id(st->seg_x, st->seg_x_len, st->seg_x_id);
		st->gx = x;
	}
	return x;
}

/* ---- a file of a cluster (docs/cluster.md, "arf grep on a cluster") ----
 * Scanned in its data servers where the options allow (cluster_servers, below), else
 * gathered: its stripes read from all its data servers at once (arf_cl_read: one
 * Cooperation over the N servers per batch of up to 1 MiB each) into one buffer in file
 * order, and the whole file scanned here by the same compiled patterns (grep_segment over
 * region "data", as pngrep runs it): lines across stripe boundaries, line numbers, offsets
 * and context need no stitching, so the output is GNU grep's by construction. */
#define CL_FILE_MAX  (2ull << 30)      /* a cluster file is held in memory: its largest */
#define CL_READ      (16u << 20)       /* bytes per arf_cl_read (batches of 1 MiB a server) */

/* What one cluster file gives, made by cluster_file on any thread (-r keeps several files
 * in flight, each on a worker: cl_pool below) and printed by cluster_emit on the main
 * thread in the walk's order: so nothing here touches stdout, stderr or st's counters. */
struct cl_res {
	struct grep_out *out;          /* the local scans' scratch: the thread's own */
	const int *stop;               /* not NULL: set when the rest is not wanted (-q) */
	char *msg;                     /* a run error (run_error), malloc'd */
	int err;                       /* or a file error (errno) */
	int is_output;                 /* or "input file is also the output" */
	int print;                     /* else cluster_print(size, value, rec, rec_len) */
	int exact;                     /* the records are st->gx's (grep_needs_exact) */
	uint64_t size;
	int64_t value;
	uint8_t *rec;                  /* malloc'd, or NULL */
	size_t rec_len;
};

/* The file's run error (the first one counts). */
static void res_error(struct cl_res *r, const char *what)
{
	if (r->msg || r->err)
		return;
	r->msg = strdup(what);
	if (!r->msg)
		die("%s", "memory exhausted");
}

static int res_stopped(const struct cl_res *r)
{
	return r->stop && __atomic_load_n(r->stop, __ATOMIC_RELAXED);
}

/* Run the segment over data[0..len): 0 with *value and the records in r->out->buf, or -1
 * with the error in r. */
static int cluster_scan(struct grep *g, struct cl_res *r, const uint8_t *data, size_t len,
                        int64_t *value, size_t *out_len)
{
	char err[300];
	int rc = grep_run_local(g, VM_ENGINE_AUTO, data, len, r->out, value, out_len, err,
	                        sizeof err);
	if (rc == -2)
		die("%s", "memory exhausted");
	if (rc != 0)
		res_error(r, err);
	return rc != 0 ? -1 : 0;
}

/* ---- the scan in the data servers ----
 * Stripe s of the file covers [a, b) = [s*unit, min((s+1)*unit, size)).  Its window is
 * [ws, we): from just after its first terminator (0 for stripe 0) to just after its last.
 * Every line in a window lies wholly in the stripe, so the server that holds the stripe
 * finds exactly the file's lines there: it runs the one-server segment (g_srv's, over its
 * object: "grep" from the window's start, records past the window's end dropped).  The
 * lines across a boundary, [we of s, ws of s+1), and the file's last partial line are
 * joined here from the stripes' edges (their first and last partial lines, searched in
 * CL_EDGE bytes at each end by data.pno's edges on every server at once: arf_cl_edges) and
 * scanned by the same patterns in the client.  The records come back in file order with
 * file offsets; the count is theirs; line numbers (-n) by prefix sums of each part's lines.
 * Counts (-c, -l, -L, -q: st->srv_counts): each window's count comes back instead of its
 * lines, the boundary lines are counted here, the sum clamped at the limit.  Anything this
 * does not cover goes back to the gather (return 1): an edge without a terminator in
 * CL_EDGE bytes (a line that long at a boundary) or in a hole, a NUL in a boundary line or
 * a window found binary (the decision is the whole file's), a window whose scan stopped
 * short of its end with -n or a count (its line count, its count, is then unknown) unless it
 * stopped at -m's NUM, the exact matcher (cluster_servers_can), in UTF-8 records with an
 * encoding error and context (grep_needs_exact).  -z: NUL ends the lines (edges, counts,
 * context) and no file is binary.  -m and context
 * with lines: the servers' selected lines, the first NUM kept, context read here
 * (cluster_context). */
#define CL_EDGE 8192u

struct cl_recs {                   /* records, line numbers counted from the part's start */
	uint8_t *p;
	size_t len, cap;
};

struct cl_win {
	uint64_t ws, we;
	uint8_t *head, *tail;          /* the bytes before ws, and from we to the stripe's end */
	size_t head_len, tail_len;
	struct cl_recs win, edge;      /* the window's records; the line across its end */
	int64_t count;                 /* counts: selected lines in the window */
	int64_t wcount, ecount;        /* lines: records in win, in edge */
	int64_t lines, edge_lines;     /* lines in the window; newlines in the edge */
	int noeol;                     /* the scan of a whole file (below): no final newline */
	int done;                      /* the window's scan is over (or it is empty) */
};

static void rec_put(struct cl_recs *r, size_t hdr, uint64_t off, uint64_t lineno,
                    const uint8_t *line, uint64_t len)
{
	size_t need = r->len + hdr + (size_t)len;
	if (need > r->cap) {
		r->cap = 2 * need + 256;
		uint8_t *n = realloc(r->p, r->cap);
		if (!n)
			die("%s", "memory exhausted");
		r->p = n;
	}
	uint64_t h[3] = { off, len, lineno };
	memcpy(r->p + r->len, h, hdr);
	memcpy(r->p + r->len + hdr, line, (size_t)len);
	r->len = need;
}

/* Records src[0..n) (hdr-byte headers: 24 with line numbers) with offsets in [lo, hi) to
 * dst, offset moved by delta; scratch copies dropped; *count counts them.  -1 when malformed
 * or a context record appears; 1 at a GREP_REC_REDO record (a line the servers'
 * table could not decide, UTF-8 -w over ASCII patterns: the file goes to the gather). */
static int recs_take(struct cl_recs *dst, int64_t *count, size_t hdr, const uint8_t *src,
                     size_t n, uint64_t lo, uint64_t hi, int64_t delta)
{
	for (size_t i = 0; i < n;) {
		uint64_t q[3] = { 0, 0, 0 };
		if (n - i < hdr)
			return -1;
		memcpy(q, src + i, hdr);
		i += hdr;
		if (q[0] == GREP_REC_REDO)
			return 1;              /* a line the scan's table could not decide: gather */
		if (q[1] > n - i)
			return -1;
		if (q[0] & (1ull << 63))
			return -1;
		if (!(q[0] & GREP_REC_SCRATCH) && q[0] >= lo && q[0] < hi) {
			rec_put(dst, hdr, (uint64_t)((int64_t)q[0] + delta), q[2], src + i, q[1]);
			(*count)++;
		}
		i += q[1];
	}
	return 0;
}

/* dst += src with line numbers moved by base. */
static void recs_append(struct cl_recs *dst, const struct cl_recs *src, size_t hdr,
                        int64_t base)
{
	for (size_t i = 0; i + hdr <= src->len;) {
		uint64_t q[3] = { 0, 0, 0 };
		memcpy(q, src->p + i, hdr);
		rec_put(dst, hdr, q[0], q[2] + (uint64_t)base, src->p + i + hdr, q[1]);
		i += hdr + q[1];
	}
}

static int cluster_servers_ready(struct state *st);

/* The lines across each boundary s of w[0..nst) for p0 <= s < p1, [we of s, ws of s+1), and
 * the file's last partial line (s = nst - 1), joined from the edges and scanned here by the
 * servers' patterns: their records to w[s].edge (lines mode), or (counts) their count added
 * to *total.  0, 1: gather instead (a line found binary), -1: reported. */
static int cluster_edges_scan(struct state *st, struct cl_res *r, struct cl_win *w,
                              uint64_t p0, uint64_t p1, uint64_t nst, size_t hdr, int counts,
                              int64_t *total)
{
	const uint8_t eol = st->a.o.null_data ? 0 : '\n';
	for (uint64_t s = p0; s < p1; s++) {
		size_t jl = w[s].tail_len + (s + 1 < nst ? w[s + 1].head_len : 0);
		if (jl == 0)
			continue;
		uint8_t *jb = malloc(jl);
		if (!jb)
			die("%s", "memory exhausted");
		if (w[s].tail_len)
			memcpy(jb, w[s].tail, w[s].tail_len);
		if (s + 1 < nst && w[s + 1].head_len)
			memcpy(jb + w[s].tail_len, w[s + 1].head, w[s + 1].head_len);
		int64_t v;
		size_t ol;
		int rc = cluster_scan(st->g_srv, r, jb, jl, &v, &ol);
		if (!counts)
			for (size_t i = 0; i < jl; i++)
				w[s].edge_lines += jb[i] == eol;
		free(jb);
		if (rc != 0)
			return -1;
		if (v & 1)
			return 1;
		if (counts)
			*total += v >> 2;
		else if (recs_take(&w[s].edge, &w[s].ecount, hdr, r->out->buf, ol, 0, jl,
		                   (int64_t)w[s].we) != 0)
			return 1;
	}
	return 0;
}

/* ---- -m and context on the servers' scan (docs/cluster.md, "Context and -m") ----
 * The servers return the selected lines only (g_srv is compiled without -A/-B/-C, each
 * window stopping at -m's NUM).  Here the file's first NUM of them are kept, and the context
 * is read: between two selected lines lies a gap of whole lines, of which grep prints the
 * first A (the trailing context of the line before) and the last B (the leading context of
 * the line after), all of it when it has no more than A + B lines; before the first selected
 * line the last B, after the last one the first A (after -m's NUM-th too: grep 3.8 prints
 * its trailing context whether those lines match or not).  A gap's head and tail are read in
 * windows of twice the mean selected line a line, doubled until they hold their lines, the
 * windows of many gaps in one arf_cl_readv (each server its pieces in one run: a window
 * across a stripe boundary is read from both servers at once).  Line numbers count from the
 * selected lines'; "--" comes from the formatter where the records leave a gap. */
#define CTX_LINE_MIN 16             /* a window's first bytes a line: twice the mean
                                     * selected line, within these */
#define CTX_LINE_MAX 4096
#define CTX_WINDOW (64u << 10)      /* a window's first size at most */
#define CTX_GAP_MAX (16u << 20)     /* a window's largest: past it (a line, or A or B
                                     * lines, that long) the file is gathered */
#define CTX_BATCH (16u << 20)       /* bytes of windows in one arf_cl_readv */
#define CTX_RANGES 4096             /* ranges in one arf_cl_readv */

struct ctx_gap {
	uint64_t a, b;                 /* the gap's bytes [a, b): whole lines */
	uint64_t hl, tl;               /* its head and tail windows' lengths (whole: hl = b-a) */
	int want_h, want_t;            /* lines of context: A (0 before the first), B (0 after
	                                * the last) */
	uint8_t *hb, *tb;              /* the lines printed: [a, a+hn) and [b-tn, b) */
	uint64_t hn, tn;
	int64_t h_lines, t_lines;
};

/* Of p[0..n): the offset just after its k-th line (its terminator; a last line without
 * one counts when last), or -1 when it holds fewer; *got the lines there are when fewer. */
static int64_t lines_fwd(const uint8_t *p, uint64_t n, int64_t k, int last, uint8_t eol,
                         int64_t *got)
{
	int64_t c = 0;
	for (uint64_t i = 0; i < n && c < k;) {
		const uint8_t *z = memchr(p + i, eol, (size_t)(n - i));
		if (!z) {
			if (last) {
				c++;
				i = n;
				if (c == k)
					return (int64_t)n;
			}
			break;
		}
		i = (uint64_t)(z - p) + 1;
		if (++c == k)
			return (int64_t)i;
	}
	*got = c;
	return k == 0 ? 0 : -1;
}

/* Of p[0..n), whose last byte ends a line: the offset where its last k lines start, or -1
 * when it holds fewer (*got: how many; they start at 0 when the window starts the gap). */
static int64_t lines_back(const uint8_t *p, uint64_t n, int64_t k, uint8_t eol, int64_t *got)
{
	int64_t c = 0;
	if (k == 0 || n == 0) {
		*got = 0;
		return k == 0 ? (int64_t)n : -1;
	}
	for (uint64_t i = n - 1; i > 0; i--)
		if (p[i - 1] == eol && ++c == k)
			return (int64_t)i;
	*got = c + (n > 0);
	return *got == k ? 0 : -1;
}

static uint8_t *dup_bytes(const uint8_t *p, uint64_t n)
{
	uint8_t *d = malloc(n ? (size_t)n : 1);
	if (!d)
		die("%s", "memory exhausted");
	memcpy(d, p, (size_t)n);
	return d;
}

/* Gap g's lines from its windows just read (h: the head window's bytes or the whole gap's,
 * t: the tail window's): 1 when it holds them, 0 when a window was short (doubled), -1 when
 * the gap does not end a line where a selected line starts (the file changed). */
static int ctx_settle(struct ctx_gap *G, const uint8_t *h, const uint8_t *t, uint64_t size,
                      uint8_t eol)
{
	uint64_t len = G->b - G->a;
	if (G->want_t && ((G->hl >= len && h[len - 1] != eol) ||
	                  (G->hl < len && t && t[G->tl - 1] != eol)))
		return -1;
	if (G->hl >= len) {                 /* the whole gap */
		int64_t k = 0, kb = 0;
		lines_fwd(h, len, INT64_MAX, G->b == size, eol, &k);
		int64_t hc = G->want_h < k ? G->want_h : k;
		int64_t tc = G->want_t < k - hc ? G->want_t : k - hc;
		int64_t he = lines_fwd(h, len, hc, G->b == size, eol, &kb);
		G->hb = dup_bytes(h, (uint64_t)he);
		G->hn = (uint64_t)he;
		G->h_lines = hc;
		if (tc > 0) {
			int64_t ts = lines_back(h, len, tc, eol, &kb);
			G->tb = dup_bytes(h + ts, len - (uint64_t)ts);
			G->tn = len - (uint64_t)ts;
		}
		G->t_lines = tc;
		return 1;
	}
	int ok = 1;
	if (G->want_h && !G->hb) {
		int64_t got = 0, he = lines_fwd(h, G->hl, G->want_h, 0, eol, &got);
		if (he >= 0) {
			G->hb = dup_bytes(h, (uint64_t)he);
			G->hn = (uint64_t)he;
			G->h_lines = G->want_h;
		} else {
			G->hl *= 2;
			ok = 0;
		}
	}
	if (G->want_t && !G->tb) {
		int64_t got = 0, ts = lines_back(t, G->tl, G->want_t, eol, &got);
		if (ts > 0) {                   /* at 0 the window may start inside a line */
			G->tb = dup_bytes(t + ts, G->tl - (uint64_t)ts);
			G->tn = G->tl - (uint64_t)ts;
			G->t_lines = G->want_t;
		} else {
			G->tl *= 2;
			ok = 0;
		}
	}
	if (!ok && G->hl + G->tl >= len) {  /* the windows met: read the whole gap */
		free(G->hb);
		free(G->tb);
		G->hb = G->tb = NULL;
		G->hl = len;
		G->tl = 0;
	}
	return ok;
}

/* The records in *all (selected lines of the file in order, nothing else): the first -m
 * NUM kept (*count too), then their context read and put in.  0, 1: gather instead (a
 * window past CTX_GAP_MAX, a NUL: the file changed or has a hole), -1: reported. */
static int cluster_context(struct state *st, struct arf_cl_file *f, struct cl_res *r,
                           uint64_t size, size_t hdr, struct cl_recs *all, int64_t *count)
{
	const struct grep_opts *o = &st->a.o;
	/* lines printed: else only the count is (ARF_GREP_CLUSTER_LINES with -c...) */
	const int lines = !o->count && !o->list && !o->list_nomatch && !o->quiet;
	const int64_t A = lines && o->after > 0 ? o->after : 0;
	const int64_t B = lines && o->before > 0 ? o->before : 0;
	const int64_t mlim = st->srv_mlimit;
	const uint8_t eol = o->null_data ? 0 : '\n';
	/* the selected lines: their offsets, lengths, line numbers and bytes */
	size_t n = 0, cap = 0;
	struct sel { uint64_t off, len, lineno; const uint8_t *p; } *v = NULL;
	uint64_t sum_len = 0;
	for (size_t i = 0; i + hdr <= all->len && (mlim < 0 || (int64_t)n < mlim);) {
		uint64_t q[3] = { 0, 0, 0 };
		memcpy(q, all->p + i, hdr);
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			struct sel *nv = realloc(v, cap * sizeof *nv);
			if (!nv)
				die("%s", "memory exhausted");
			v = nv;
		}
		v[n++] = (struct sel){ q[0], q[1], q[2], all->p + i + hdr };
		sum_len += q[1] + 1;
		i += hdr + (size_t)q[1];
	}
	*count = (int64_t)n;
	int res = 0;
	struct cl_recs out = { 0 };
	struct ctx_gap *gap = NULL;
	size_t *pend = NULL, *pend2 = NULL;
	uint64_t *rg = NULL;
	uint8_t *buf = NULL;
	if (A == 0 && B == 0) {
		for (size_t i = 0; i < n; i++)
			rec_put(&out, hdr, v[i].off, v[i].lineno, v[i].p, v[i].len);
		goto done;
	}
	uint64_t est = n ? 2 * sum_len / n : CTX_LINE_MAX;
	est = est < CTX_LINE_MIN ? CTX_LINE_MIN : est > CTX_LINE_MAX ? CTX_LINE_MAX : est;
	gap = calloc(n + 1, sizeof *gap);
	pend = malloc((n + 1) * sizeof *pend);
	pend2 = malloc((n + 1) * sizeof *pend2);
	rg = malloc(2 * CTX_RANGES * sizeof *rg);
	if (!gap || !pend || !pend2 || !rg)
		die("%s", "memory exhausted");
	size_t np = 0;
	for (size_t g = 0; g <= n; g++) {
		struct ctx_gap *G = &gap[g];
		uint64_t e = g ? v[g - 1].off + v[g - 1].len + 1 : 0;
		G->a = e < size ? e : size;
		G->b = g < n ? v[g].off : size;
		G->want_h = g > 0 ? (int)(A < INT32_MAX ? A : INT32_MAX) : 0;
		G->want_t = g < n ? (int)(B < INT32_MAX ? B : INT32_MAX) : 0;
		if (G->a >= G->b || (!G->want_h && !G->want_t))
			continue;
		uint64_t len = G->b - G->a;
		G->hl = G->want_h ? (uint64_t)G->want_h * est : 0;
		G->tl = G->want_t ? (uint64_t)(G->want_t + 1) * est : 0;
		G->hl = G->hl > CTX_WINDOW ? CTX_WINDOW : G->hl;
		G->tl = G->tl > CTX_WINDOW ? CTX_WINDOW : G->tl;
		if (G->hl + G->tl >= len) {
			G->hl = len;
			G->tl = 0;
		}
		pend[np++] = g;
	}
	/* passes over the gaps still open, in file order (the ranges must ascend); each pass
	 * settles a gap or doubles a window of it, up to CTX_GAP_MAX: bounded */
	while (np > 0) {
		size_t np2 = 0;
		for (size_t i = 0; i < np;) {
			size_t j = i;
			unsigned nr = 0;
			uint64_t bytes = 0;
			while (j < np && nr + 2 <= CTX_RANGES &&
			       (j == i || bytes + gap[pend[j]].hl + gap[pend[j]].tl <= CTX_BATCH)) {
				struct ctx_gap *G = &gap[pend[j]];
				if (G->hl > CTX_GAP_MAX || G->tl > CTX_GAP_MAX) {
					res = 1;
					goto done;
				}
				uint64_t len = G->b - G->a;
				if (G->hl >= len || (G->want_h && !G->hb)) {
					rg[2 * nr] = G->a;
					rg[2 * nr++ + 1] = G->hl;
					bytes += G->hl;
				}
				if (G->hl < len && G->want_t && !G->tb) {
					rg[2 * nr] = G->b - G->tl;
					rg[2 * nr++ + 1] = G->tl;
					bytes += G->tl;
				}
				j++;
			}
			if (res_stopped(r)) {
				res = -1;
				goto done;
			}
			free(buf);
			buf = malloc(bytes ? (size_t)bytes : 1);   /* at most 2 * CTX_GAP_MAX */
			if (!buf)
				die("%s", "memory exhausted");
			int64_t got = arf_cl_readv(f, rg, nr, buf);
			if (got != (int64_t)bytes) {
				res_error(r, got == -EIO ? arf_cl_errmsg(f) :
				          strerror(got < 0 ? (int)-got : EPROTO));
				res = -1;
				goto done;
			}
			const uint8_t *at = buf;
			for (; i < j; i++) {
				struct ctx_gap *G = &gap[pend[i]];
				uint64_t len = G->b - G->a;
				const uint8_t *h = NULL, *t = NULL;
				if (G->hl >= len || (G->want_h && !G->hb)) {
					h = at;
					at += G->hl;
				}
				if (G->hl < len && G->want_t && !G->tb) {
					t = at;
					at += G->tl;
				}
				int rc = ctx_settle(G, h, t, size, eol);
				if (rc < 0) {
					res = 1;
					goto done;
				}
				if (rc == 0)
					pend2[np2++] = pend[i];
			}
		}
		size_t *sw = pend;
		pend = pend2;
		pend2 = sw;
		np = np2;
	}
	/* the records: each gap's head and tail lines as context, then the selected line */
	for (size_t g = 0; g <= n; g++) {
		struct ctx_gap *G = &gap[g];
		const uint8_t *parts[2] = { G->hb, G->tb };
		uint64_t plen[2] = { G->hn, G->tn }, pfrom[2] = { G->a, G->b - G->tn };
		/* line numbers: after the line before the gap, or back from the one after */
		int64_t pno[2] = { g ? (int64_t)v[g - 1].lineno + 1 : 0,
		                   g < n ? (int64_t)v[g].lineno - G->t_lines : 0 };
		for (int k = 0; k < 2; k++) {
			const uint8_t *p = parts[k];
			if (p && eol && memchr(p, 0, (size_t)plen[k])) {
				res = 1;             /* zeros: a hole, or the file changed (with -z
				                      * zeros end lines, as grep reads a hole) */
				goto done;
			}
			for (uint64_t x = 0; p && x < plen[k];) {
				const uint8_t *z = memchr(p + x, eol, (size_t)(plen[k] - x));
				uint64_t l = z ? (uint64_t)(z - (p + x)) : plen[k] - x;
				rec_put(&out, hdr, (pfrom[k] + x) | GREP_REC_CONTEXT, (uint64_t)pno[k]++,
				        p + x, l);
				x += l + 1;
			}
		}
		if (g < n)
			rec_put(&out, hdr, v[g].off, v[g].lineno, v[g].p, v[g].len);
	}
done:
	if (res == 0) {
		free(all->p);
		*all = out;
	} else {
		free(out.p);
	}
	for (size_t g = 0; gap && g <= n; g++) {
		free(gap[g].hb);
		free(gap[g].tb);
	}
	free(gap);
	free(pend);
	free(pend2);
	free(rg);
	free(buf);
	free(v);
	return res;
}

/* Stripes [s0, s1) of a file of size bytes, unit U, lines ending with NUL when nul (-z):
 * their edges read (arf_cl_edges into e) and their windows set in w.  0, 1: gather instead
 * (an edge without a terminator, or without -z with a NUL), -1: reported. */
static int cluster_stripes(struct cl_res *r, struct arf_cl_file *f, struct cl_win *w,
                           struct arf_cl_edge *e, uint64_t size, uint64_t U, uint64_t s0,
                           uint64_t s1, int nul)
{
	int rc = arf_cl_edges(f, size, s0, s1, CL_EDGE, nul, e);
	if (rc < 0) {
		res_error(r, rc == -EIO ? arf_cl_errmsg(f) : strerror(-rc));
		return -1;
	}
	for (uint64_t s = s0; s < s1; s++) {
		uint64_t a = s * U, b = a + U < size ? a + U : size;
		/* a NUL in an edge: a binary file (with -z NUL ends the lines) */
		if (!e[s].found ||
		    (!nul && (memchr(e[s].head ? e[s].head : (uint8_t *)"", 0, e[s].head_len) ||
		              memchr(e[s].tail ? e[s].tail : (uint8_t *)"", 0, e[s].tail_len))))
			return 1;
		w[s].ws = a + e[s].head_len;
		w[s].we = b - e[s].tail_len;
		w[s].head_len = e[s].head_len;
		w[s].tail_len = e[s].tail_len;
		w[s].head = e[s].head;
		w[s].tail = e[s].tail;
		e[s].head = e[s].tail = NULL;
		w[s].done = w[s].ws >= w[s].we;
	}
	return 0;
}

/* 0 with the records and value, 1: gather instead, -1: reported. */
static int cluster_servers(struct state *st, struct conn *k, struct arf_cl_file *f,
                           struct cl_res *r, uint64_t size, uint8_t **recs, size_t *recs_len,
                           int64_t *value)
{
	const uint64_t U = arf_cl_file_unit(f);      /* the file's own (arf_cl_layout) */
	const unsigned N = k->cl_n;
	const int numbers = st->a.o.line_number;
	const size_t hdr = numbers ? 24 : 16;
	const int counts = st->srv_counts;
	const int64_t limit = st->srv_limit;
	const int64_t mlim = counts ? -1 : st->srv_mlimit;
	const int nul = st->a.o.null_data;   /* -z: lines end with NUL */
	uint64_t nst = (size + U - 1) / U;
	uint64_t s_cut = nst;          /* -m with lines: the first stripe whose window stopped at
	                                * NUM (the file's NUM-th selected line is there or
	                                * before: the windows after it are not scanned) */
	int res = 1;
	struct cl_win *w = calloc(nst ? nst : 1, sizeof *w);
	struct arf_cl_edge *e = calloc(nst ? nst : 1, sizeof *e);
	if (!w || !e)
		die("%s", "memory exhausted");
	/* a file of one stripe (most files of a source tree): its window is the whole file,
	 * scanned in its server as one server scans a file (its last line without a terminator
	 * too, noeol), so no edges are read: a round trip less a file.  The scan must reach the
	 * file's end (below: an object shorter than the file has zeros there, the gather's) */
	const int whole = nst == 1;
	if (whole)
		w[0].we = size;
	/* the edges: every stripe's first and last partial lines, from all its servers in one
	 * Cooperation (arf_cl_edges; a batch of up to ARF_CL_EDGES_BATCH stripes a server).
	 * -m with lines reads them for the first `known` stripes only, a few a server, and
	 * more only when their windows and boundary lines hold fewer than NUM selected lines:
	 * -m 5 of a file of thousands of stripes needs the edges of its first few.  Those must
	 * give every server a window (or be all the stripes): a server's first run makes its
	 * binary pass over its whole object (round 0, below), which settles the binary
	 * decision before any round can end the scan */
	uint64_t known = nst;
	if (mlim > 0 && !whole) {
		known = nst < 2 * (uint64_t)N ? nst : 2 * (uint64_t)N;
		for (uint64_t opened = 0;;) {
			int rc = cluster_stripes(r, f, w, e, size, U, opened, known, nul);
			if (rc != 0) {
				res = rc;
				goto out;
			}
			opened = known;
			unsigned j = 0;
			for (; j < N && j < nst; j++) {
				uint64_t s = j;
				while (s < known && w[s].done)
					s += N;
				if (s >= known)
					break;             /* slot j has no window there yet */
			}
			if (j == N || j == nst || known == nst)
				break;
			known = nst / 2 < known ? nst : 2 * known;
		}
	} else if (!whole) {
		int rc = cluster_stripes(r, f, w, e, size, U, 0, nst, nul);
		if (rc != 0) {
			res = rc;
			goto out;
		}
	}
	/* counts (-c, -l, -L, -q): the lines across boundaries first, here; when they settle
	 * the answer (limit selected lines: -l, -L, -q one, -m NUM), no server scans.  A line
	 * without a NUL is selected whatever the binary decision (a NUL elsewhere splits other
	 * lines only), so this holds before the servers' binary pass; not under -I, which drops
	 * a binary file's lines */
	int64_t total = 0;
	if ((counts || mlim >= 0) && !whole) {
		/* the boundary after the last known stripe waits for the next one's head */
		int rc = cluster_edges_scan(st, r, w, 0, known == nst ? nst : known - 1, nst, hdr,
		                            counts, &total);
		if (rc != 0) {
			res = rc;
			goto out;
		}
		if (limit > 0 && total >= limit && !st->a.o.binary_nomatch)
			goto done;
	}
	/* the windows: each server its stripes in order, one Cooperation a round */
	uint64_t obj[ARF_CLUSTER_MAX];
	int rc = arf_cl_objects(f, nst, obj);
	if (rc < 0) {
		res_error(r, rc == -EIO ? arf_cl_errmsg(f) : strerror(-rc));
		res = -1;
		goto out;
	}
	/* j: a slot, stripes j, j + N, ...; srv[j] the data server holding them (the layout
	 * may rotate a file's first stripe away from server 0: arf_cl_server) */
	uint64_t cur[ARF_CLUSTER_MAX];
	unsigned srv[ARF_CLUSTER_MAX];
	struct grep_arf_state gs[ARF_CLUSTER_MAX];
	for (unsigned j = 0; j < N; j++) {
		cur[j] = j;
		srv[j] = arf_cl_file_server(f, j);
		gs[j] = (struct grep_arf_state){ .pos = -1, .bin = -1, .row = -1 };
	}
	/* bounded: each round moves every busy server on by a window or by scan_max bytes or
	 * OUT_SOFT bytes of output (at least one line) */
	for (uint64_t round = 0; round < (uint64_t)1 << 40; round++) {
		unsigned who[ARF_CLUSTER_MAX], whok[ARF_CLUSTER_MAX], m = 0;
		uint64_t ws_obj[ARF_CLUSTER_MAX], we_obj[ARF_CLUSTER_MAX];
		struct arc_exec xv[ARF_CLUSTER_MAX], *xs[ARF_CLUSTER_MAX];
		int64_t args[ARF_CLUSTER_MAX][GREP_ARF_NARGS];
		int rcs[ARF_CLUSTER_MAX];
		for (unsigned j = 0; j < N; j++) {
			while (cur[j] < known && w[cur[j]].ws >= w[cur[j]].we)
				cur[j] += N;
			if (cur[j] >= known || cur[j] > s_cut)
				continue;
			uint64_t s = cur[j], obase = s / N * U;
			if (!obj[srv[j]])
				goto out;          /* no object: zeros, and so NULs */
			ws_obj[j] = obase + (w[s].ws - s * U);
			we_obj[j] = obase + (w[s].we - s * U);
			if (gs[j].pos < 0)
				gs[j].pos = (int64_t)ws_obj[j];
			uint64_t left = we_obj[j] - (uint64_t)gs[j].pos;
			uint64_t scan = left < st->scan_max ? left : st->scan_max;
			int64_t *ag = args[m];
			ag[0] = (int64_t)obj[srv[j]];
			memcpy(ag + 1, &gs[j], 8 * 8);     /* pos .. skip: the state but noeol */
			ag[9] = st->out_soft;
			ag[10] = (int64_t)scan;
			ag[11] = (int64_t)we_obj[j];       /* the window's end: a line's start */
			xv[m] = (struct arc_exec){ .seg = st->seg_srv, .seg_len = st->seg_srv_len,
			                           .seg_id = st->seg_srv_id, .entry = "grep",
			                           .args = ag, .n_args = GREP_ARF_NARGS,
			                           .fuel = 16 * scan + (1u << 24), .out_max = OUT_MAX };
			xs[m] = &xv[m];
			whok[m] = srv[j];
			who[m++] = j;
		}
		if (m == 0 && known < nst && known <= s_cut) {
			/* -m: NUM not reached in the stripes known: the edges of the next ones (four
			 * times as many), and their boundary lines */
			uint64_t more = nst / 4 < known ? nst : 4 * known;
			rc = cluster_stripes(r, f, w, e, size, U, known, more, nul);
			if (rc == 0)
				rc = cluster_edges_scan(st, r, w, known - 1, more == nst ? nst : more - 1,
				                        nst, hdr, counts, &total);
			if (rc != 0) {
				res = rc;
				goto out;
			}
			known = more;
			continue;
		}
		if (m == 0)
			break;
		if (res_stopped(r)) {
			res = -1;
			goto out;
		}
		rc = arf_cl_exec(f, whok, xs, rcs, m, "grep");
		int bad = 0, hard = 0, rt;
		for (unsigned i = 0; i < m; i++) {
			unsigned j = who[i];
			const uint8_t *o = xv[i].out;
			size_t ol = (size_t)xv[i].out_len;
			if (rcs[i] != 0) {
				/* a server that allows less fuel or output than a window needs: the
				 * gather; anything else is the server's failure, reported below */
				if (xv[i].trapped && (xv[i].trap.kind == ISA_TRAP_FUEL ||
				                      xv[i].trap.kind == ISA_TRAP_OUTPUT_FULL))
					bad = bad ? bad : 1;
				else
					hard = 1;
			} else if (bad) {
				/* the file goes elsewhere */
			} else if (xv[i].value < 0) {
				bad = bad ? bad : (int)xv[i].value;
			} else if (ol < GREP_ARF_TRAILER) {
				bad = bad ? bad : -EPROTO;
			} else {
				int64_t t[10];
				memcpy(t, o + ol - GREP_ARF_TRAILER, sizeof t);
				struct grep_arf_state ns;
				memcpy(&ns, t + 1, sizeof ns);
				uint64_t s = cur[j], obase = s / N * U;
				/* counts: the segment counted (its output: scratch copies of lines
				 * across extents at most); the count settles a window once it reaches
				 * the limit (the scan stopped at that line) */
				int settled = (counts && limit > 0 && ns.count >= limit) ||
				              (mlim > 0 && ns.count >= mlim);
				/* where a finished scan stops: the window's end; a whole file's
				 * unterminated last line one past it */
				uint64_t end = we_obj[j] + (whole && ns.noeol ? 1 : 0);
				if (ns.bin > 0) {
					bad = bad ? bad : 1;            /* binary: gather */
				} else if (ns.pos <= gs[j].pos && t[0]) {
					bad = bad ? bad : -EPROTO;      /* no progress */
				} else if (ns.count < 0 || (counts && (uint64_t)ns.pos > end)) {
					bad = bad ? bad : -EPROTO;
				} else if (!counts &&
				           (rt = recs_take(&w[s].win, &w[s].wcount, hdr, o,
				                           ol - GREP_ARF_TRAILER, ws_obj[j], we_obj[j],
				                           (int64_t)(s * U) - (int64_t)obase)) != 0) {
					bad = bad ? bad : rt > 0 ? 1 : -EPROTO;   /* 1: a REDO, gather */
				} else if (!t[0] || (uint64_t)ns.pos >= we_obj[j]) {
					/* this window is done; its line count (and in counts its count) is
					 * exact only when the scan stopped at its end */
					if ((numbers || whole || counts) && (uint64_t)ns.pos != end &&
					    !settled)
						bad = bad ? bad : 1;
					if (counts)
						w[s].count = ns.count;
					w[s].noeol = ns.noeol != 0;
					w[s].lines = ns.lineno;
					w[s].done = 1;
					if (mlim > 0 && ns.count >= mlim && s < s_cut)
						s_cut = s;
					cur[j] += N;
					/* its next window is in the same object: the binary decision (a NUL
					 * anywhere in it, found by a pass over the whole object) carries
					 * over, or every window would pay that pass again, a cost
					 * quadratic in the object's size (bench/cluster: 310 s for 2 GiB
					 * on one data server) */
					gs[j] = (struct grep_arf_state){ .pos = -1, .bin = ns.bin, .row = -1 };
				} else {
					gs[j] = ns;
				}
			}
			free(xv[i].out);
		}
		if (hard || (rc < 0 && !bad)) {
			res_error(r, rc == -EIO ? arf_cl_errmsg(f) : strerror(rc < 0 ? -rc : EIO));
			res = -1;
			goto out;
		}
		if (bad == 1)
			goto out;
		if (bad) {
			res_error(r, bad == -EPROTO ? "malformed reply" : strerror(-bad));
			res = -1;
			goto out;
		}
		/* counts: once what is counted reaches the limit, the rest is not needed.  Every
		 * server has made its binary pass over its object by now (its first run, round
		 * 0), so no NUL is left to change the answer */
		if (counts && limit > 0) {
			int64_t sum = total;
			for (uint64_t s = 0; s < nst; s++)
				sum += w[s].count;
			for (unsigned j = 0; j < N; j++)
				if (cur[j] < nst && gs[j].pos >= 0)
					sum += gs[j].count;
			if (sum >= limit)
				goto done;
		}
		/* -m with lines: once the parts from the file's start, each scanned to its end or
		 * to NUM, hold NUM selected lines, the rest is not needed (the servers' binary
		 * passes were made in round 0, as above) */
		if (mlim >= 0) {
			int64_t sum = 0;
			for (uint64_t s = 0; s < nst && w[s].done && sum < mlim; s++)
				sum += w[s].wcount + w[s].ecount;
			if (sum >= mlim)
				goto done;
		}
	}
	/* lines: the lines across boundaries, and the last one, here (with -m: before) */
	if (!counts && (mlim < 0 || whole)) {
		rc = cluster_edges_scan(st, r, w, 0, nst, nst, hdr, counts, &total);
		if (rc != 0) {
			res = rc;
			goto out;
		}
	}
done:;
	/* in file order, line numbers by prefix sums */
	struct cl_recs all = { 0 };
	int64_t count = 0, lines = 0;
	for (uint64_t s = 0; s < nst; s++) {
		recs_append(&all, &w[s].win, hdr, lines);
		lines += w[s].lines;
		recs_append(&all, &w[s].edge, hdr, lines);
		lines += w[s].edge_lines;
		count += counts ? w[s].count : w[s].wcount + w[s].ecount;
	}
	if (counts) {
		count += total;
		if (limit >= 0 && count > limit)
			count = limit;
	}
	int noeol = nst > 0 && (whole ? w[0].noeol : w[nst - 1].tail_len > 0);
	if (!counts && (mlim >= 0 || st->a.o.before > 0 || st->a.o.after > 0)) {
		/* (with -c, -l, -L, -q under ARF_GREP_CLUSTER_LINES the count is all: no context) */
		rc = cluster_context(st, f, r, size, hdr, &all, &count);
		if (rc != 0) {
			free(all.p);
			res = rc;
			goto out;
		}
	}
	/* UTF-8 context: a record with an encoding error moves grep 3.8's context (docs/grep.md,
	 * "Encoding errors"): the gather runs the file on the exact path (the twin) */
	if (!counts && grep_needs_exact(st->g, all.p, all.len)) {
		free(all.p);
		goto out;
	}
	*recs = all.p;
	*recs_len = all.len;
	*value = count << 2 | (noeol ? 2 : 0);
	res = 0;
out:
	for (uint64_t s = 0; s < nst; s++) {
		free(w[s].head);
		free(w[s].tail);
		free(w[s].win.p);
		free(w[s].edge.p);
		free(e[s].head);
		free(e[s].tail);
	}
	free(w);
	free(e);
	return res;
}

/* Print what grep prints for a cluster file of size bytes whose scan gave value and rec. */
static void cluster_print(struct state *st, const char *name, uint64_t size, int64_t value,
                          const uint8_t *rec, size_t rec_len, int exact)
{
	const struct grep_opts *o = &st->a.o;
	struct grep *g = exact ? twin_ready(st) : st->g;
	if (o->initial_tab && (o->line_number || o->byte_offset))
		grep_set_file_size(g, (int64_t)size);
	struct grep_file_result res;
	int rc = grep_format(g, prog, name, value, rec, rec ? rec_len : 0, stdout, stderr, &res);
	if (rc == -2)
		die("%s", "memory exhausted");
	if (rc != 0)
		run_error(st, name, "malformed records");
	if (res.matched)
		st->any_match = 1;
	check_output(0);
}

/* Scan cluster file ino (on any thread: what it finds goes to r, nothing is printed).
 * given: its attributes when the caller has them (-r asks for a window's at once), or
 * NULL; given_err: then their errno (0: found). */
static void cluster_file(struct state *st, struct conn *k, uint64_t ino, struct cl_res *r,
                         const struct arf_attr *given, int given_err)
{
	const struct grep_opts *o = &st->a.o;
	struct arf_attr at;
	int rc = 0;
	if (given && given_err)
		rc = -given_err;
	else if (given)
		at = *given;
	else
		rc = arf_getattr(k->c, ino, &at);
	if (rc < 0) {
		if (rc == -EIO)
			res_error(r, arf_client_errmsg(k->c));
		else
			r->err = -rc;
		return;
	}
	r->size = at.size;
	int64_t value = 0;
	size_t out_len = 0;
	uint8_t *buf = NULL;
	if (!st->no_read) {
		if (is_output_ino(st, k, ino)) {
			r->is_output = 1;
			return;
		}
		struct arf_cl_layout lay;
		char lerr[256];
		rc = arf_cl_layout(arf_cluster_desc_of(k->cl), ino, at.layout, &lay, lerr, sizeof lerr);
		if (rc < 0) {
			res_error(r, lerr);
			return;
		}
		struct arf_cl_file *f = arf_cl_file_open(k->cl, ino, at.gen, &lay);
		if (!f)
			die("%s", "memory exhausted");
		if (cluster_servers_ready(st)) {
			uint8_t *recs = NULL;
			size_t recs_len = 0;
			rc = cluster_servers(st, k, f, r, at.size, &recs, &recs_len, &value);
			if (rc < 0) {
				arf_cl_file_close(f);
				return;
			}
			if (rc == 0) {
				arf_cl_file_close(f);
				r->print = 1;
				r->value = value;
				if (o->count || o->list || o->list_nomatch || o->quiet) {
					free(recs);
				} else {
					r->rec = recs;
					r->rec_len = recs_len;
				}
				return;
			}
			free(recs);
			value = 0;
		}
		/* the gather holds the file; the servers' scan above has no such limit */
		if (at.size > CL_FILE_MAX) {
			arf_cl_file_close(f);
			res_error(r, "larger than 2 GiB: arf grep gathers this file into memory "
			          "for these options (docs/cluster.md)");
			return;
		}
		size_t size = (size_t)at.size;
		buf = malloc(size ? size : 1);
		if (!buf)
			die("%s", "memory exhausted");
		size_t off = 0;
		while (off < size) {
			size_t want = size - off < CL_READ ? size - off : CL_READ;
			int64_t n = res_stopped(r) ? -EINTR : arf_cl_read(f, off, buf + off, want);
			if (n < 0 || (uint64_t)n > want) {
				res_error(r, n > 0 ? "malformed reply" :
				          n == -EIO ? arf_cl_errmsg(f) : strerror((int)-n));
				arf_cl_file_close(f);
				free(buf);
				return;
			}
			if (n == 0)
				break;     /* cut meanwhile: what is there is searched */
			off += (size_t)n;
		}
		arf_cl_file_close(f);
		rc = cluster_scan(st->g, r, buf, off, &value, &out_len);
		if (rc == 0 && grep_needs_exact(st->g, r->out->buf, out_len)) {
			/* UTF-8 context beside an encoding error: the exact path (twin_ready made
			 * st->gx on the main thread before any file of a cluster) */
			r->exact = 1;
			rc = cluster_scan(st->gx, r, buf, off, &value, &out_len);
		}
		free(buf);
		if (rc != 0)
			return;
		if (out_len) {
			r->rec = malloc(out_len);
			if (!r->rec)
				die("%s", "memory exhausted");
			memcpy(r->rec, r->out->buf, out_len);
			r->rec_len = out_len;
		}
	}
	r->print = 1;
	r->value = value;
}

/* Print what grep prints for a cluster file whose scan gave r, on the main thread in the
 * file's turn; r's memory is freed. */
static void cluster_emit(struct state *st, const char *name, struct cl_res *r)
{
	if (r->msg) {
		run_error(st, name, r->msg);
	} else if (r->err) {
		file_error(st, name, r->err);
	} else if (r->is_output) {
		st->errors = 1;
		if (!st->a.no_messages)
			fprintf(stderr, "%s: %s: input file is also the output\n", prog, name);
	} else if (r->print) {
		cluster_print(st, name, r->size, r->value, r->rec, r->rec_len, r->exact);
	}
	free(r->msg);
	free(r->rec);
	r->msg = NULL;
	r->rec = NULL;
}

static void grep_cluster_ino(struct state *st, struct conn *k, uint64_t ino, const char *name)
{
	struct cl_res r = { .out = &st->cl_out };
	twin_ready(st);
	cluster_file(st, k, ino, &r, NULL, 0);
	cluster_emit(st, name, &r);
}

/* ---- -B: the leading context, read by the client ----
 * The segment cannot walk back over lines in another extent, so it sends no leading context
 * (grep_lead_client).  Before each selected line that does not follow the record before it
 * (a group), up to B lines are read back and put into the records as context lines: a
 * window of twice the run's mean line a line of -B, doubled until it holds them or reaches the
 * end of the record before (grep's leading context stops at the last line it printed) or
 * the file's start.  Only the lines grep prints cross the link.  The windows of a run's
 * groups are read together, up to LEAD_GROUPS groups or LEAD_BYTES bytes in one readv
 * (arf_readv: one round trip), and only the groups whose window fell short go again, so a
 * run with many groups costs a round trip or two, not one a group. */
#define LEAD_LINE   128             /* bytes read back per line of -B at first (no records) */
#define LEAD_LINE_MIN 16            /* ... else twice the run's mean line, within these */
#define LEAD_LINE_MAX 4096
#define LEAD_WINDOW (64u << 10)     /* ... at most, at first */
#define LEAD_GROUPS 512             /* groups whose leading lines are read together */
#define LEAD_BYTES  ARF_DATA_CHUNK  /* bytes of windows in one readv */

struct lead_grp {
	uint64_t off, lineno;          /* the selected line's offset and number */
	uint64_t floor;                /* the end of the record before it (0: the file's start) */
	uint64_t w;                    /* the window's width: [max(floor, off - w), off) */
	size_t rec_at, rec_len;        /* its context records, in lead.lrec (once done) */
	int done;
};

struct lead {
	uint8_t *rec;                  /* the records with the leading lines */
	size_t len, cap;
	uint8_t *lrec;                 /* the groups' leading lines, as records */
	size_t llen, lcap;
	uint8_t *win;                  /* the bytes read back */
	size_t win_cap;
	struct lead_grp g[LEAD_GROUPS];
	uint64_t rng[2 * LEAD_GROUPS]; /* readv's ranges */
	unsigned idx[LEAD_GROUPS];     /* ... their groups */
	uint64_t prev_end;             /* just after the last record's line; 0: the file's start */
};

static void buf_put(uint8_t **b, size_t *len, size_t *cap, const void *p, size_t n)
{
	if (*len + n > *cap) {
		size_t c = 2 * (*len + n) + 4096;
		uint8_t *r = realloc(*b, c);
		if (!r)
			die("%s", "memory exhausted");
		*b = r;
		*cap = c;
	}
	memcpy(*b + *len, p, n);
	*len += n;
}

static void lead_put(struct lead *L, const void *p, size_t n)
{
	buf_put(&L->rec, &L->len, &L->cap, p, n);
}

/* The window win[0..n) of group G, which starts at file offset start: when it holds the B
 * lines before G's line (or reaches the floor), G's context records go to L->lrec and G is
 * done; else its window doubles. */
static void lead_scan(struct state *st, struct lead *L, struct lead_grp *G, const uint8_t *win,
                      size_t n, uint64_t start)
{
	const struct grep_opts *o = &st->a.o;
	uint8_t eol = o->null_data ? 0 : '\n';
	/* win[n - 1] ends the line before G's: walk back over B terminators */
	size_t e = n - 1, first = n;
	int64_t cnt = 0;
	while (cnt < o->before) {
		const uint8_t *z = e ? memrchr(win, eol, e) : NULL;
		if (!z && start > G->floor)
			break;             /* the line goes on before the window */
		first = z ? (size_t)(z - win) + 1 : 0;
		cnt++;
		if (!z)
			break;             /* the line starts at the floor: none before */
		e = (size_t)(z - win);
	}
	if (cnt < o->before && start > G->floor) {
		G->w = G->w > UINT64_MAX / 2 ? UINT64_MAX : 2 * G->w;
		return;
	}
	size_t hdr = o->line_number ? 24 : 16;
	G->rec_at = L->llen;
	for (size_t at = first; at < n; cnt--) {
		const uint8_t *z = memchr(win + at, eol, n - at);
		size_t len = (size_t)(z - (win + at));
		uint64_t q[3] = { (start + at) | GREP_REC_CONTEXT, len, G->lineno - (uint64_t)cnt };
		buf_put(&L->lrec, &L->llen, &L->lcap, q, hdr);
		buf_put(&L->lrec, &L->llen, &L->lcap, win + at, len);
		at += len + 1;
	}
	G->rec_len = L->llen - G->rec_at;
	G->done = 1;
}

/* Read the windows of the groups L->g[0..ng) until every one is done.  0, or -1 when the
 * file cannot be read (an error, or it changed meanwhile). */
static int lead_resolve(struct state *st, struct conn *k, uint64_t ino, struct lead *L,
                        unsigned ng)
{
	for (;;) {
		unsigned nr = 0;
		uint64_t sum = 0;
		for (unsigned i = 0; i < ng; i++) {
			struct lead_grp *G = &L->g[i];
			if (G->done)
				continue;
			uint64_t start = G->off - G->floor > G->w ? G->off - G->w : G->floor;
			uint64_t n = G->off - start;
			if (n > LEAD_BYTES - sum) {
				if (nr)
					break;     /* the next readv */
				n = LEAD_BYTES;    /* a window of one long line: read in parts below */
			}
			L->rng[2 * nr] = start;
			L->rng[2 * nr + 1] = n;
			L->idx[nr++] = i;
			sum += n;
		}
		if (!nr)
			return 0;
		if (nr == 1 && L->g[L->idx[0]].off - L->rng[0] > LEAD_BYTES) {
			/* one window past a readv: read whole, with arf_read */
			struct lead_grp *G = &L->g[L->idx[0]];
			L->rng[1] = G->off - L->rng[0];
		}
		size_t need = 0;
		for (unsigned j = 0; j < nr; j++)
			need += (size_t)L->rng[2 * j + 1];
		if (need > L->win_cap) {
			free(L->win);
			L->win_cap = need;
			L->win = malloc(need);
			if (!L->win)
				die("%s", "memory exhausted");
		}
		int64_t got = need > LEAD_BYTES ? arf_read(k->d, ino, L->rng[0], L->win, need) :
		              arf_readv(k->d, ino, L->rng, nr, L->win);
		if (got != (int64_t)need)
			return -1;
		size_t at = 0;
		for (unsigned j = 0; j < nr; j++) {
			size_t n = (size_t)L->rng[2 * j + 1];
			lead_scan(st, L, &L->g[L->idx[j]], L->win + at, n, L->rng[2 * j]);
			at += n;
		}
	}
}

/* The records rec[0..rec_len) of a run with the leading lines added, into L->rec (L->len);
 * L->prev_end carries from run to run.  0, or -1 when the file cannot be read. */
static int lead_add(struct state *st, struct conn *k, uint64_t ino, const uint8_t *rec,
                    size_t rec_len, struct lead *L)
{
	const struct grep_opts *o = &st->a.o;
	size_t hdr = o->line_number ? 24 : 16, i = 0, from = 0;
	/* the first window: twice the run's mean line a line of -B (lines near each other are
	 * alike), so that most windows hold their lines at the first read and few bytes more */
	uint64_t sum_len = 0, n_len = 0;
	for (size_t at = 0; at + hdr <= rec_len && n_len < 4096; n_len++) {
		uint64_t q[2];
		memcpy(q, rec + at, sizeof q);
		if (q[1] > rec_len - at - hdr)
			break;
		sum_len += q[1] + 1;
		at += hdr + q[1];
	}
	uint64_t line = n_len ? 2 * (sum_len / n_len) + 2 : LEAD_LINE;
	line = line < LEAD_LINE_MIN ? LEAD_LINE_MIN : line > LEAD_LINE_MAX ? LEAD_LINE_MAX : line;
	uint64_t w = o->before <= 1 ? line : (uint64_t)o->before < LEAD_WINDOW / line ?
	             line * (uint64_t)o->before : LEAD_WINDOW;
	unsigned ng = 0;
	L->len = 0;
	if (!k->d && !k->d_failed) {
		char *path = arf_seg_path("ARF_DATA_SEG", "data.pno");
		char err[512];
		k->d = path ? arf_data_open(k->a, path, err, sizeof err) : NULL;
		k->d_failed = !k->d;
		free(path);
	}
	if (!k->d)
		return -1;
	for (int last = 0; !last;) {
		/* the groups of the next records, up to LEAD_GROUPS of them */
		size_t to = i;
		uint64_t sum = 0;
		ng = 0;
		while (to + hdr <= rec_len && ng < LEAD_GROUPS && sum < LEAD_BYTES) {
			uint64_t q[3] = { 0, 0, 0 };
			memcpy(q, rec + to, hdr);
			if (q[1] > rec_len - to - hdr)
				break;         /* malformed: the formatter says so */
			uint64_t off = q[0] & ~(GREP_REC_CONTEXT | GREP_REC_SCRATCH);
			int plain = !(q[0] & (GREP_REC_CONTEXT | GREP_REC_SCRATCH));
			if (plain && off > L->prev_end) {
				L->g[ng] = (struct lead_grp){ .off = off, .lineno = q[2],
				                              .floor = L->prev_end, .w = w };
				sum += off - L->prev_end < w ? off - L->prev_end : w;
				ng++;
			}
			if (!(q[0] & GREP_REC_SCRATCH))
				L->prev_end = off + q[1] + 1;
			to += hdr + q[1];
		}
		last = to == i || to + hdr > rec_len || (ng < LEAD_GROUPS && sum < LEAD_BYTES);
		L->llen = 0;
		if (ng && lead_resolve(st, k, ino, L, ng) != 0)
			return -1;
		/* the records with each group's leading lines before its selected line */
		unsigned gi = 0;
		while (i < to) {
			uint64_t q[3] = { 0, 0, 0 };
			memcpy(q, rec + i, hdr);
			uint64_t off = q[0] & ~(GREP_REC_CONTEXT | GREP_REC_SCRATCH);
			if (gi < ng && !(q[0] & (GREP_REC_CONTEXT | GREP_REC_SCRATCH)) &&
			    off == L->g[gi].off) {
				lead_put(L, L->lrec + L->g[gi].rec_at, L->g[gi].rec_len);
				gi++;
			}
			lead_put(L, rec + i, hdr + q[1]);
			i += hdr + q[1];
		}
		from = i;
	}
	if (from < rec_len)
		lead_put(L, rec + from, rec_len - from);
	return 0;
}

/* Run the segment over inode ino until done; print what grep prints for the file.  first:
 * its first run's result, from a batch (or NULL).  1 when the file must go again on the
 * exact path (UTF-8 context: grep_needs_exact; -B: lead_add could not read the leading
 * lines), *printed then the end of the lines printed of it (-1: none), else 0.  On the exact
 * path, *printed (>= 0) says that the lines before it were printed already: the exact path
 * prints from there on. */
static int grep_ino_run(struct state *st, struct conn *k, uint64_t ino, const char *name,
                        const struct first_part *first, int64_t *printed)
{
	struct grep_arf_state s = { .bin = -1, .row = -1 };
	const struct grep_opts *o = &st->a.o;
	int exact = grep_is_exact(st->g);
	/* UTF-8 context on the fast path: a run whose records hold a line with an encoding
	 * error sends the file to the exact path, which prints what the fast path printed up to
	 * that line (docs/grep.md, "Encoding errors"): so the runs before it print as they come,
	 * and the exact path goes on after what they printed */
	int redo = grep_ctx_redo(st->g);
	struct lead *lead = NULL;
	if (grep_lead_client(st->g)) {
		if (!st->lead && !(st->lead = calloc(1, sizeof *st->lead)))
			die("%s", "memory exhausted");
		lead = st->lead;
		lead->prev_end = 0;
	}
	uint8_t *acc = NULL;
	size_t acc_len = 0, acc_cap = 0;
	int64_t last_end = -1;
	if (k->cl) {
		grep_cluster_ino(st, k, ino, name);
		return 0;
	}
	if (st->no_read)
		goto end;
	if (is_output(st, k, ino, name))
		return 0;
	if (o->initial_tab && (o->line_number || o->byte_offset)) {
		/* -T aligns numbers to the width of the file's size */
		struct arf_attr at;
		grep_set_file_size(st->g, arf_getattr(k->c, ino, &at) == 0 ? (int64_t)at.size : -1);
	}
	for (;;) {
		int64_t args[GREP_ARF_NARGS] = { (int64_t)ino, s.pos, s.lineno, s.count, s.after,
		                                 s.stop, s.bin, s.row, s.skip, st->out_soft,
		                                 (int64_t)st->scan_max };
		struct arc_exec x = { 0 };
		int rc;
		const uint8_t *out;        /* x.out, or the part of a batch's output */
		if (first) {
			rc = 0;
			x.value = first->value;
			x.out_len = first->len;
			out = first->out;
			first = NULL;
		} else {
			x = (struct arc_exec){ .seg = st->seg, .seg_len = st->seg_len,
			                       .seg_id = st->seg_id, .entry = "grep",
			                       .args = args, .n_args = GREP_ARF_NARGS,
			                       .fuel = 16 * st->scan_max + (1u << 24), .out_max = OUT_MAX };
			rc = st->local ? arc_exec_local(k->a, &x) : arc_exec(k->a, &x);
			out = x.out;
		}
		if (rc == -AR_ETRAP && x.trap.kind == ISA_TRAP_FUEL && st->scan_max > (1u << 16)) {
			/* the server allows less fuel than asked: scan less per run */
			free(x.out);
			st->scan_max /= 4;
			continue;
		}
		if (rc != 0) {
			char what[1200];
			if (rc == -AR_ETRAP && x.trap.kind == ISA_TRAP_OUTPUT_FULL)
				snprintf(what, sizeof what, "a line longer than %u bytes straddles extents",
				         OUT_MAX - OUT_SOFT);
			else
				snprintf(what, sizeof what, "%s", rc == -AR_ETRAP ? x.trap.text
				         : arc_errmsg(k->a));
			free(x.out);
			free(acc);
			run_error(st, name, what);
			return 0;
		}
		if (x.value < 0) {
			free(x.out);
			free(acc);
			file_error(st, name, (int)-x.value);
			return 0;
		}
		if (x.out_len < GREP_ARF_TRAILER) {
			free(x.out);
			free(acc);
			run_error(st, name, "malformed reply");
			return 0;
		}
		size_t rl = (size_t)x.out_len - GREP_ARF_TRAILER;
		int64_t t[10];
		memcpy(t, out + rl, sizeof t);
		memcpy(&s, t + 1, sizeof s);
		int bad = 0;
		if (lead && rl) {
			/* -B: the leading lines added (or, unreadable, the exact path) */
			if (lead_add(st, k, ino, out, rl, lead) != 0) {
				free(x.out);
				free(acc);
				*printed = last_end;
				return 1;
			}
			out = lead->rec;
			rl = lead->len;
		}
		if (redo && rl && grep_needs_exact(st->g, out, rl)) {
			free(x.out);
			free(acc);
			*printed = last_end;
			return 1;
		}
		if (exact && rl) {
			if (acc_len + rl > acc_cap) {
				acc_cap = 2 * (acc_len + rl) + 4096;
				uint8_t *n = realloc(acc, acc_cap);
				if (!n)
					die("%s", "memory exhausted");
				acc = n;
			}
			memcpy(acc + acc_len, out, rl);
			acc_len += rl;
		} else if (!exact) {
			bad = grep_format_records(st->g, name, out, rl, stdout, &last_end);
			if (bad == -2)
				die("%s", "memory exhausted");
		}
		free(x.out);
		if (bad) {
			free(acc);
			run_error(st, name, "malformed records");
			return 0;
		}
		if (!t[0])
			break;
	}
end:;
	struct grep_file_result res;
	int64_t value = s.count << 2 | (s.noeol ? 2 : 0) | (s.bin > 0);
	int rc;
	if (exact && *printed >= 0) {
		/* a redo: the lines before *printed went out on the fast path */
		struct grep_part pt = { .new_from = 0, .limit = o->max_count, .whole = 1 };
		last_end = *printed;
		rc = grep_format_part(st->g, name, value, acc, acc_len, stdout, &last_end, &pt);
		if (rc == 0)
			rc = grep_format_done(st->g, prog, name, pt.selected, (int)(value & 1), stdout,
			                      stderr, &res);
	} else {
		rc = grep_format_end(st->g, prog, name, value, acc, acc_len, stdout, stderr, &res,
		                     &last_end);
	}
	if (rc == -2)
		die("%s", "memory exhausted");
	if (rc != 0)
		run_error(st, name, "malformed records");
	free(acc);
	if (res.matched)
		st->any_match = 1;
	check_output(0);
	return 0;
}

static void grep_ino(struct state *st, struct conn *k, uint64_t ino, const char *name,
                     const struct first_part *first)
{
	/* -B without arf_data (lead_add could not open it once): the exact path at once */
	int64_t printed = -1;
	if ((!grep_lead_client(st->g) || !k->d_failed) &&
	    grep_ino_run(st, k, ino, name, first, &printed) == 0)
		return;
	/* the file again from its start, on the exact path (st->g's twin) */
	struct grep *g = st->g;
	const uint8_t *seg = st->seg;
	size_t seg_len = st->seg_len;
	uint8_t seg_id[AR_ID_LEN];
	memcpy(seg_id, st->seg_id, sizeof seg_id);
	st->g = twin_ready(st);
	st->seg = st->seg_x;
	st->seg_len = st->seg_x_len;
	memcpy(st->seg_id, st->seg_x_id, sizeof seg_id);
	grep_ino_run(st, k, ino, name, NULL, &printed);    /* exact: never 1 */
	st->g = g;
	st->seg = seg;
	st->seg_len = seg_len;
	memcpy(st->seg_id, seg_id, sizeof seg_id);
}

/* A file's turn in grep_tree: its part of batch b (at position pos of the files the batch
 * was formed with), else a run of its own. */
static void grep_batched(struct state *st, struct conn *k, struct batch *b, int pos,
                         uint64_t ino, const char *name)
{
	batch_wait(k, b);
	if (b->done > 0 && pos - b->base >= b->done) {
		/* the batch stopped early (a file with more to scan or print): the files after
		 * it go in a batch of their own, now */
		int from = pos - b->base;
		memmove(b->ino, b->ino + from, (size_t)(b->n - from) * sizeof b->ino[0]);
		b->n -= from;
		b->base = pos;
		free(b->x.out);
		b->x.out = NULL;
		batch_start(st, k, b);
		batch_wait(k, b);
	}
	int i = pos - b->base;
	if (i >= 0 && i < b->done) {
		struct first_part fp = { b->value[i], (const uint8_t *)b->x.out + b->off[i], b->len[i] };
		grep_ino(st, k, ino, name, &fp);
	} else {
		grep_ino(st, k, ino, name, NULL);   /* the batch failed: each file on its own */
	}
}

/* -r: the server walks the tree (arf_walk_next: a batch of entries per round trip, in the
 * order of fts and so of GNU grep); the regular files wait in a queue whose first runs go
 * BATCH_FILES per EXEC, BATCHES_AHEAD batches in flight, and each file is printed when its
 * turn in the walk's order comes. */
enum { WALK_ENTRIES = 4096, WALK_SOFT = 256 << 10 };

struct item {                  /* a file to scan, or an error to report, in the walk's order */
	uint64_t ino;
	char *name;
	int err;                   /* not 0: name's error (errno), or -1: msg, a run error */
	char *msg;
	int bat, pos;              /* its batch's slot in the ring (-1: none) and place in it */
};

struct walker {                /* one walk; a directory too deep for it is walked anew */
	struct arf_walk w;
	char *path[ARF_WALK_STACK + 1];    /* of the directory at each depth */
	unsigned skipping;         /* not 0: leave entries at this depth and deeper (excluded) */
	struct walker *up;
};

struct tree {
	struct state *st;
	struct conn *k;
	struct walker *walk;       /* the innermost walk; NULL when all are done */
	struct arf_walk_entry *ents;
	struct item *q;            /* q[head..n) wait; files from q[unbatched] on have no batch */
	size_t head, n, cap, unbatched, files_unbatched;
	struct batch ring[BATCHES_AHEAD];
	unsigned formed, consumed; /* batches: ring[i % BATCHES_AHEAD] */
};

static void walker_push(struct tree *t, uint64_t dir, const char *name)
{
	struct walker *w = calloc(1, sizeof *w);
	if (!w || !(w->path[0] = strdup(name)))
		die("%s", "memory exhausted");
	arf_walk_begin(&w->w, dir);
	w->up = t->walk;
	t->walk = w;
}

static void walker_free(struct walker *w)
{
	for (int i = 0; i <= ARF_WALK_STACK; i++)
		free(w->path[i]);
	free(w);
}

/* dir/name as fts names it: one slash between them, whatever dir ended with ("d//" gives
 * "d/x"); "" for dir is the working directory of -r without operands: "x" */
static char *child_path(const char *dir, const char *name)
{
	size_t dlen = strlen(dir);
	while (dlen > 1 && dir[dlen - 1] == '/')
		dlen--;
	size_t len = dlen + strlen(name) + 2;
	char *p = malloc(len);
	if (!p)
		die("%s", "memory exhausted");
	snprintf(p, len, "%.*s%s%s", (int)dlen, dir, !dlen || dir[dlen - 1] == '/' ? "" : "/",
	         name);
	return p;
}

static void queue_add(struct tree *t, uint64_t ino, char *name, int err, char *msg)
{
	if (t->head > 0 && t->head >= t->n / 2) {      /* the printed part: reuse it */
		memmove(t->q, t->q + t->head, (t->n - t->head) * sizeof *t->q);
		t->n -= t->head;
		t->unbatched -= t->head;
		t->head = 0;
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->q = realloc(t->q, t->cap * sizeof *t->q);
		if (!t->q)
			die("%s", "memory exhausted");
	}
	t->q[t->n++] = (struct item){ .ino = ino, .name = name, .err = err, .msg = msg, .bat = -1 };
	if (!err)
		t->files_unbatched++;
}

/* A directory's name in a message: "" (the working directory of -r alone) is "." */
static const char *shown(const char *dir)
{
	return *dir ? dir : ".";
}

/* One batch of the innermost walk into the queue. */
static void walk_more(struct tree *t)
{
	struct state *st = t->st;
	struct walker *w = t->walk;
	int n = arf_walk_next(t->k->c, &w->w, t->ents, WALK_ENTRIES, WALK_SOFT);
	if (n < 0) {
		char *msg = strdup(n == -EIO ? arf_client_errmsg(t->k->c) : strerror(-n));
		queue_add(t, 0, strdup(shown(w->path[0])), -1, msg);
		w->w.nf = 0;
	}
	for (int i = 0; i < n; i++) {
		struct arf_walk_entry *e = &t->ents[i];
		if (w->skipping && e->depth >= w->skipping)
			continue;
		w->skipping = 0;
		const char *dir = w->path[e->depth];
		if (!dir) {                /* a depth the walk never entered: not the server's walk */
			queue_add(t, 0, strdup(shown(w->path[0])), -1, strdup("walk: malformed reply"));
			w->w.nf = 0;
			break;
		}
		if (e->err) {
			queue_add(t, 0, strdup(shown(dir)), e->err, NULL);
			continue;
		}
		if (e->type == DT_DIR) {
			char *sub = child_path(dir, e->name);
			if (!grep_args_want_dir(&st->a, sub, 0)) {
				w->skipping = e->depth + 1;
				free(sub);
			} else if (e->deep) {
				walker_push(t, e->ino, sub);   /* the last entry of the batch */
				free(sub);
			} else {
				free(w->path[e->depth + 1]);
				w->path[e->depth + 1] = sub;
			}
		} else if (e->type == DT_REG) {
			/* symlinks (-r does not follow them; -R would: not yet) and fifos: skipped */
			char *name = child_path(dir, e->name);
			if (grep_args_want_file(&st->a, name, 0))
				queue_add(t, e->ino, name, 0, NULL);
			else
				free(name);
		}
	}
	if (w->skipping)
		arf_walk_prune(&w->w, w->skipping);
	if (w->w.nf == 0) {            /* done (a walk that went deeper is not: it has frames) */
		struct walker **pp = &t->walk;
		while (*pp != w)
			pp = &(*pp)->up;
		*pp = w->up;
		walker_free(w);
	}
}

/* The next batch of files from the queue, started; 0 when there are not enough files yet. */
static int batch_form(struct tree *t)
{
	if (t->st->local || t->st->no_read || t->k->cl || t->formed - t->consumed >= BATCHES_AHEAD || !t->files_unbatched ||
	    (t->walk && t->files_unbatched < BATCH_FILES))
		return 0;
	int slot = (int)(t->formed++ % BATCHES_AHEAD);
	struct batch *b = &t->ring[slot];
	b->n = 0;
	b->base = 0;
	for (; b->n < BATCH_FILES && t->unbatched < t->n; t->unbatched++) {
		struct item *it = &t->q[t->unbatched];
		if (it->err)
			continue;
		it->bat = slot;
		it->pos = b->n;
		b->ino[b->n++] = it->ino;
		t->files_unbatched--;
	}
	batch_start(t->st, t->k, b);
	return 1;
}

/* ---- -r on a cluster: several files in flight (docs/cluster.md, "-r: several files in
 * flight") ----
 * A small file has one stripe, on its layout's first server (ino mod N in the rotated
 * layout).  Workers (CL_WORKERS_PER_SERVER a data server) take tasks in the walk's order
 * from a window of files: a task is a batch of up to BATCH_FILES files of one stripe on one
 * data server (cl_batch: their objects' inodes in one objinos run of stripe.pno, then their
 * scans in one grep_batch run of the servers' segment, as one server batches its first
 * runs), or one file (cluster_file, on the worker's own arf_cl_file and scratch: libarc,
 * the arf_client and the arf_cluster are thread-safe; an arf_cl_file is one thread's).  A
 * file the batch does not settle (not done in its first run, binary, an object shorter or
 * longer than the file, an error, a batch that failed as a whole) goes through
 * cluster_file, which reports its own error.  The main thread walks, fills the window and
 * prints each file's result in its turn (cluster_emit), so the output is the
 * one-at-a-time order byte for byte.  Finished results wait for their turn (a reorder
 * buffer); past CL_HOLD_MAX bytes of them, the workers take no new task until the head is
 * printed (the head's task is always taken: tasks are taken in the order of their first
 * files). */
enum { CL_WORKERS_PER_SERVER = 4, CL_WINDOW_PER_SERVER = 16, CL_WORKERS_MAX = 48,
       CL_WINDOW_MAX = 256,
       /* batches: a window of BATCHES_AHEAD batches a server, filled a quarter at a time,
        * so that each fill gives each server about a batch */
       CL_BATCH_WINDOW_PER_SERVER = BATCH_FILES * BATCHES_AHEAD, CL_BATCH_WINDOW_MAX = 4096 };
#define CL_HOLD_MAX (64u << 20)        /* bytes of finished, unprinted records */
#define CL_OBJ_NAME 64                 /* "stripes/INO.GEN" and its NUL, at most (50) */

struct cl_job {
	uint64_t ino;
	int have_at, at_err;           /* its attributes came with it (cl_pool_feed) */
	struct arf_attr at;
	int done;
	struct cl_res r;
};

struct cl_task {                   /* files 'first', or seq[0..n) on data server srv */
	uint64_t first;
	unsigned n, srv;               /* n 0: the one file 'first' (cluster_file) */
	uint64_t seq[BATCH_FILES];
};

struct cl_pool {
	struct state *st;
	struct conn *k;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	struct cl_job *job;            /* the window: file i in job[i % n_job] */
	unsigned n_job;
	uint64_t head, fed;            /* files printed, given */
	struct cl_task *task;          /* task i in task[i % n_job] (a task holds a file) */
	uint64_t tasks_fed, tasks_taken;
	size_t held;                   /* rec_len of the finished files not printed */
	int stop;                      /* read atomically by cluster_file (cl_res.stop) */
	int batching;                  /* files of one stripe go in batches (cl_batchable) */
	uint8_t *stripe;               /* stripe.pno (objinos) */
	size_t stripe_len;
	uint8_t stripe_id[AR_ID_LEN];
	uint64_t batches, batched;     /* batches run, files they settled (ARF_GREP_CLUSTER_STATS) */
	unsigned n_thr;
	pthread_t thr[CL_WORKERS_MAX];
};

/* File seq is done (with p->lock held). */
static void cl_job_done(struct cl_pool *p, uint64_t seq)
{
	struct cl_job *j = &p->job[seq % p->n_job];
	j->done = 1;
	p->held += j->r.rec_len;
	if (seq == p->head)            /* only the head is waited for (by the main thread) */
		pthread_cond_signal(&p->done);
}

/* A file of a batch from its grep_batch part (value, o[0..ol)): 1 with its result in j->r
 * when the part settles it as cluster_servers' scan of a whole file would (with -m NUM and
 * lines, cluster_context without context: the first NUM records), else 0 (the file goes
 * through cluster_file).  The part is the server's first run over the object (objinos
 * found it as long as the file), to the object's end: it must be done and reach the file's
 * size, or stop at the limit (-l, -L, -q, -m) inside it. */
static int cl_batch_file(struct state *st, struct cl_job *j, int64_t value, const uint8_t *o,
                         size_t ol)
{
	const struct grep_opts *op = &st->a.o;
	const int counts = st->srv_counts;
	const int64_t limit = st->srv_limit;
	const int64_t mlim = counts ? -1 : st->srv_mlimit;
	const size_t hdr = op->line_number ? 24 : 16;
	if (value < 0 || ol < GREP_ARF_TRAILER)
		return 0;
	int64_t t[10];
	memcpy(t, o + ol - GREP_ARF_TRAILER, sizeof t);
	struct grep_arf_state ns;
	memcpy(&ns, t + 1, sizeof ns);
	uint64_t size = j->at.size;
	int settled = (counts && limit > 0 && ns.count >= limit) || (mlim > 0 && ns.count >= mlim);
	/* (no more lines selected than the file has: a count that says more is a lie) */
	if (t[0] || ns.bin > 0 || ns.count < 0 || (uint64_t)ns.count > size + 1 || ns.pos < 0 ||
	    ns.lineno < 0)
		return 0;
	/* the end: the size, or one past it when the last line, unterminated, was taken */
	if ((uint64_t)ns.pos != size && !(ns.noeol && (uint64_t)ns.pos == size + 1) &&
	    !(settled && (uint64_t)ns.pos <= size))
		return 0;
	int64_t count = 0;
	struct cl_recs rec = { 0 };
	if (!counts) {
		if (recs_take(&rec, &count, hdr, o, ol - GREP_ARF_TRAILER, 0, size, 0) != 0) {
			free(rec.p);
			return 0;
		}
		if (mlim > 0 && count > mlim) {        /* -m NUM: the file's first NUM lines */
			size_t at = 0;
			for (int64_t i = 0; i < mlim; i++) {
				uint64_t len;
				memcpy(&len, rec.p + at + 8, 8);
				at += hdr + (size_t)len;
			}
			rec.len = at;
			count = mlim;
		}
	} else {
		count = limit >= 0 && ns.count > limit ? limit : ns.count;
	}
	j->r.size = size;
	j->r.print = 1;
	j->r.value = count << 2 | (ns.noeol ? 2 : 0);
	if (!counts && !(op->count || op->list || op->list_nomatch || op->quiet)) {
		j->r.rec = rec.p;
		j->r.rec_len = rec.len;
	} else {
		free(rec.p);
	}
	return 1;
}

/* Run task t, a batch of files of one stripe on data server t->srv (a worker's): their
 * objects' inodes and sizes (objinos), then grep_batch over those as long as their files,
 * again from the first file not run while a run stops early; every file it does not settle
 * through cluster_file. */
static void cl_batch(struct cl_pool *p, const struct cl_task *t, struct grep_out *out)
{
	struct state *st = p->st;
	struct conn *k = p->k;
	const unsigned n = t->n;
	char names[BATCH_FILES * CL_OBJ_NAME];
	size_t nl = 0;
	for (unsigned i = 0; i < n; i++) {
		struct cl_job *j = &p->job[t->seq[i] % p->n_job];
		j->r = (struct cl_res){ .out = out, .stop = &p->stop };
		int w = snprintf(names + nl, sizeof names - nl, "%s/%llu.%llu", ARF_CLUSTER_DIR,
		                 (unsigned long long)j->ino, (unsigned long long)j->at.gen);
		assert(w > 0 && (size_t)w < CL_OBJ_NAME);
		nl += (size_t)w + 1;
	}
	const struct cl_job *j0 = &p->job[t->seq[0] % p->n_job];
	struct arf_cl_file *f = arf_cl_file_open(k->cl, j0->ino, j0->at.gen, NULL);
	if (!f)
		die("%s", "memory exhausted");
	int ok[BATCH_FILES] = { 0 };
	unsigned idx[BATCH_FILES], m = 0, who = t->srv;
	uint64_t obj[BATCH_FILES];
	int64_t a1 = n;
	struct arc_exec x = { .seg = p->stripe, .seg_len = p->stripe_len, .seg_id = p->stripe_id,
	                      .entry = "objinos", .args = &a1, .n_args = 1, .argbytes = names,
	                      .argbytes_len = nl, .out_max = 16 * n };
	struct arc_exec *xp = &x;
	int xrc;
	if (!res_stopped(&p->job[t->seq[0] % p->n_job].r) &&
	    arf_cl_exec(f, &who, &xp, &xrc, 1, "objinos") == 0 && x.value == (int64_t)n &&
	    x.out_len == 16 * (uint64_t)n) {
		for (unsigned i = 0; i < n; i++) {
			int64_t v[2];
			memcpy(v, (const uint8_t *)x.out + 16 * i, 16);
			/* else (no object: zeros; one shorter or longer than the file, whose scan
			 * to its end is not the file's; an error) cluster_file */
			if (v[0] > 0 && (uint64_t)v[1] == p->job[t->seq[i] % p->n_job].at.size) {
				idx[m] = i;
				obj[m++] = (uint64_t)v[0];
			}
		}
	}
	free(x.out);
	/* bounded: each run settles or leaves at least one file */
	for (unsigned from = 0; from < m && !__atomic_load_n(&p->stop, __ATOMIC_RELAXED);) {
		int64_t a[GREP_ARF_BATCH_NARGS] = { m - from, st->out_soft, (int64_t)st->scan_max };
		struct arc_exec g = { .seg = st->seg_srv, .seg_len = st->seg_srv_len,
		                      .seg_id = st->seg_srv_id, .entry = "grep_batch", .args = a,
		                      .n_args = GREP_ARF_BATCH_NARGS, .argbytes = obj + from,
		                      .argbytes_len = (m - from) * sizeof obj[0],
		                      .fuel = 16 * st->scan_max + (1u << 24), .out_max = OUT_MAX };
		struct arc_exec *gp = &g;
		int64_t val[BATCH_FILES];
		size_t off[BATCH_FILES], len[BATCH_FILES];
		int cnt = 0;
		if (arf_cl_exec(f, &who, &gp, &xrc, 1, "grep") == 0)
			cnt = batch_split(g.out, (size_t)g.out_len, g.value, (int)(m - from), val, off,
			                  len);
		for (int i = 0; i < cnt; i++) {
			unsigned fi = idx[from + (unsigned)i];
			struct cl_job *j = &p->job[t->seq[fi] % p->n_job];
			ok[fi] = cl_batch_file(st, j, val[i], (const uint8_t *)g.out + off[i], len[i]);
		}
		free(g.out);
		if (cnt == 0)
			break;
		from += (unsigned)cnt;
	}
	arf_cl_file_close(f);
	unsigned settled = 0;
	pthread_mutex_lock(&p->lock);
	for (unsigned i = 0; i < n; i++)
		if (ok[i]) {
			cl_job_done(p, t->seq[i]);
			settled++;
		}
	p->batches++;
	p->batched += settled;
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < n; i++) {
		if (ok[i])
			continue;
		struct cl_job *j = &p->job[t->seq[i] % p->n_job];
		cluster_file(st, k, j->ino, &j->r, j->have_at ? &j->at : NULL, j->at_err);
		pthread_mutex_lock(&p->lock);
		cl_job_done(p, t->seq[i]);
		pthread_mutex_unlock(&p->lock);
	}
}

static void *cl_worker(void *arg)
{
	struct cl_pool *p = arg;
	struct grep_out out = { 0 };
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && (p->tasks_taken == p->tasks_fed ||
		                    (p->held > CL_HOLD_MAX &&
		                     p->task[p->tasks_taken % p->n_job].first > p->head)))
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		struct cl_task *tp = &p->task[p->tasks_taken++ % p->n_job];
		struct cl_task t = *tp;
		pthread_mutex_unlock(&p->lock);
		if (t.n) {
			cl_batch(p, &t, &out);
		} else {
			struct cl_job *j = &p->job[t.first % p->n_job];
			j->r = (struct cl_res){ .out = &out, .stop = &p->stop };
			cluster_file(p->st, p->k, j->ino, &j->r, j->have_at ? &j->at : NULL, j->at_err);
			pthread_mutex_lock(&p->lock);
			cl_job_done(p, t.first);
			pthread_mutex_unlock(&p->lock);
		}
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	grep_out_free(&out);
	return NULL;
}

/* stripe.pno into p (objinos), for the batches: 0, or -1 (the files go one by one). */
static int cl_stripe_load(struct cl_pool *p)
{
	char *path = arf_seg_path("ARF_STRIPE_SEG", "stripe.pno");
	FILE *f = path ? fopen(path, "rb") : NULL;
	free(path);
	if (!f)
		return -1;
	enum { SEG_MAX = 1 << 20 };
	p->stripe = malloc(SEG_MAX);
	p->stripe_len = p->stripe ? fread(p->stripe, 1, SEG_MAX, f) : 0;
	fclose(f);
	if (p->stripe_len == 0 || p->stripe_len == SEG_MAX) {
		free(p->stripe);
		p->stripe = NULL;
		return -1;
	}
	isa_seg_id(p->stripe, p->stripe_len, p->stripe_id);
	return 0;
}

/* The number of workers and the window: $ARF_GREP_CLUSTER_FILES (1 .. the window's largest) sets
 * the window and as many workers (1: one file at a time), for measuring;
 * $ARF_GREP_CLUSTER_BATCH=0 sends every file through cluster_file (as before batches). */
static void cl_pool_start(struct cl_pool *p, struct state *st, struct conn *k)
{
	*p = (struct cl_pool){ .st = st, .k = k };
	/* what the workers read of st, settled here first */
	cluster_servers_ready(st);
	twin_ready(st);
	is_output_ino(st, k, 0);
	const struct grep_opts *o = &st->a.o;
	const char *eb = getenv("ARF_GREP_CLUSTER_BATCH");
	/* the batch settles what the servers' scan of a whole file settles alone: not context
	 * with lines (cluster_context reads more), not -m 0 */
	p->batching = st->seg_srv && !st->no_read && !(eb && !strcmp(eb, "0")) &&
	              (st->srv_counts || (st->srv_mlimit != 0 && o->before <= 0 && o->after <= 0)) &&
	              cl_stripe_load(p) == 0;
	unsigned thr = CL_WORKERS_PER_SERVER * k->cl_n;
	unsigned win = p->batching ? CL_BATCH_WINDOW_PER_SERVER * k->cl_n
	                           : CL_WINDOW_PER_SERVER * k->cl_n;
	unsigned win_max = p->batching ? CL_BATCH_WINDOW_MAX : CL_WINDOW_MAX;
	const char *e = getenv("ARF_GREP_CLUSTER_FILES");
	if (e && atoi(e) > 0)
		thr = win = (unsigned)atoi(e);
	p->n_thr = thr < CL_WORKERS_MAX ? thr : CL_WORKERS_MAX;
	p->n_job = win < win_max ? win : win_max;
	if (p->n_job < p->n_thr)
		p->n_job = p->n_thr;
	p->job = calloc(p->n_job, sizeof *p->job);
	p->task = calloc(p->n_job, sizeof *p->task);
	if (!p->job || !p->task)
		die("%s", "memory exhausted");
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	for (unsigned i = 0; i < p->n_thr; i++)
		if (pthread_create(&p->thr[i], NULL, cl_worker, p) != 0) {
			if (i == 0)
				die("%s", "cannot start a thread");
			p->n_thr = i;
			break;
		}
}

/* Whether the window has room for one more file besides n about to be fed. */
static int cl_pool_room(const struct cl_pool *p, unsigned n)
{
	return p->fed + n - p->head < p->n_job;
}

/* Whether to fill the window now: the metadata server is asked for the attributes of
 * the files fed together (arf_getattrs, ARF_GETATTRS_MAX a round trip), and a fill forms
 * the batches, so the window is filled a quarter at a time, or whatever is left at the end;
 * not ever while it is empty. */
static int cl_pool_fill(const struct cl_pool *p, size_t waiting, int walk_done)
{
	uint64_t room = p->n_job - (p->fed - p->head);
	return room > 0 && waiting > 0 &&
	       (room >= (p->n_job + 3) / 4 || p->fed == p->head || (walk_done && room >= waiting));
}

/* Where file j goes: its data server (a batch), -1 (cluster_file), -2 (settled here: an
 * empty file, which the servers' scan settles without a request). */
static int cl_batchable(struct cl_pool *p, struct cl_job *j)
{
	if (!p->batching || !j->have_at || j->at_err || is_output_ino(p->st, p->k, j->ino))
		return -1;
	struct arf_cl_layout lay;
	char err[256];
	if (arf_cl_layout(arf_cluster_desc_of(p->k->cl), j->ino, j->at.layout, &lay, err,
	                  sizeof err) < 0 || j->at.size > lay.unit || lay.first >= p->k->cl_n)
		return -1;
	return j->at.size == 0 ? -2 : (int)lay.first;
}

/* Give the workers n files (n <= the window's room), their attributes asked for first,
 * ARF_GETATTRS_MAX a request (when that fails, each worker asks for its file's), and the
 * files of one stripe put in batches, one a data server at a time. */
static void cl_pool_feed(struct cl_pool *p, const uint64_t *ino, unsigned n)
{
	struct arf_attr *at = malloc((n ? n : 1) * sizeof *at);
	int *err = malloc((n ? n : 1) * sizeof *err);
	char *have = malloc(n ? n : 1);
	if (!at || !err || !have)
		die("%s", "memory exhausted");
	for (unsigned i = 0; i < n; i += ARF_GETATTRS_MAX) {
		unsigned c = n - i < ARF_GETATTRS_MAX ? n - i : ARF_GETATTRS_MAX;
		int h = arf_getattrs(p->k->c, ino + i, c, at + i, err + i) == 0;
		memset(have + i, h, c);
	}
	uint64_t open[ARF_CLUSTER_MAX];        /* each server's batch of this fill (task + 1) */
	memset(open, 0, sizeof open);
	pthread_mutex_lock(&p->lock);
	for (unsigned i = 0; i < n; i++) {
		uint64_t seq = p->fed++;
		struct cl_job *j = &p->job[seq % p->n_job];
		j->ino = ino[i];
		j->have_at = have[i];
		j->at_err = have[i] ? err[i] : 0;
		if (have[i])
			j->at = at[i];
		j->done = 0;
		j->r = (struct cl_res){ 0 };
		int srv = cl_batchable(p, j);
		if (srv == -2) {
			j->r.print = 1;        /* size 0, value 0 */
			cl_job_done(p, seq);
			continue;
		}
		if (srv >= 0 && open[srv] && p->task[(open[srv] - 1) % p->n_job].n < BATCH_FILES) {
			struct cl_task *t = &p->task[(open[srv] - 1) % p->n_job];
			t->seq[t->n++] = seq;
			continue;
		}
		uint64_t ti = p->tasks_fed++;
		struct cl_task *t = &p->task[ti % p->n_job];
		t->first = seq;
		t->n = 0;
		if (srv >= 0) {
			t->srv = (unsigned)srv;
			t->seq[t->n++] = seq;
			open[srv] = ti + 1;
		}
	}
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	free(at);
	free(err);
	free(have);
}

/* Print the head file (the next one fed) when its worker is done. */
static void cl_pool_print(struct cl_pool *p, const char *name)
{
	assert(p->head < p->fed);
	struct cl_job *j = &p->job[p->head % p->n_job];
	pthread_mutex_lock(&p->lock);
	while (!j->done)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
	size_t len = j->r.rec_len;
	cluster_emit(p->st, name, &j->r);
	pthread_mutex_lock(&p->lock);
	if (p->held > CL_HOLD_MAX)
		pthread_cond_broadcast(&p->work);     /* workers may wait for held to go down */
	p->held -= len;
	p->head++;
	pthread_mutex_unlock(&p->lock);
}

/* Stop: tasks not taken are dropped; the workers finish (or give up, cl_res.stop) the
 * ones they hold, whose results are dropped. */
static void cl_pool_end(struct cl_pool *p)
{
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n_thr; i++)
		pthread_join(p->thr[i], NULL);
	for (uint64_t i = p->head; i < p->fed; i++) {
		struct cl_job *j = &p->job[i % p->n_job];
		free(j->r.msg);
		free(j->r.rec);
	}
	if (getenv("ARF_GREP_CLUSTER_STATS"))
		fprintf(stderr, "%s: cluster -r: %llu batches settled %llu of %llu files\n", prog,
		        (unsigned long long)p->batches, (unsigned long long)p->batched,
		        (unsigned long long)p->fed);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p->stripe);
	free(p->task);
	free(p->job);
}

static void grep_tree(struct state *st, struct conn *k, uint64_t dir, const char *name)
{
	struct tree t = { .st = st, .k = k };
	t.ents = malloc(WALK_ENTRIES * sizeof *t.ents);
	if (!t.ents)
		die("%s", "memory exhausted");
	struct cl_pool pool;
	uint64_t *cl_ino = NULL;           /* a fill's files */
	size_t ahead = BATCH_FILES * (BATCHES_AHEAD + 1);
	if (k->cl) {
		cl_pool_start(&pool, st, k);
		cl_ino = malloc(pool.n_job * sizeof *cl_ino);
		if (!cl_ino)
			die("%s", "memory exhausted");
		if (ahead < pool.n_job)
			ahead = pool.n_job;
	}
	walker_push(&t, dir, name);
	while (!(st->a.o.quiet && st->any_match)) {
		while (t.walk && t.files_unbatched < ahead)
			walk_more(&t);
		while (batch_form(&t))
			;
		/* a cluster: the window's room to the next files, in order */
		if (k->cl && cl_pool_fill(&pool, t.files_unbatched, !t.walk)) {
			uint64_t *ino = cl_ino;
			unsigned n = 0;
			for (; t.unbatched < t.n && cl_pool_room(&pool, n); t.unbatched++) {
				if (!t.q[t.unbatched].err) {
					ino[n++] = t.q[t.unbatched].ino;
					t.files_unbatched--;
				}
			}
			if (n)
				cl_pool_feed(&pool, ino, n);
		}
		if (t.head == t.n)
			break;                 /* the walks are done (else the queue has files) */
		struct item *it = &t.q[t.head++];
		if (it->err > 0) {
			file_error(st, it->name, it->err);
		} else if (it->err < 0) {
			run_error(st, it->name, it->msg);
		} else if (it->bat >= 0) {
			struct batch *b = &t.ring[it->bat];
			grep_batched(st, k, b, it->pos, it->ino, it->name);
			if (it->pos == b->base + b->n - 1) {
				batch_end(k, b);
				t.consumed++;
			}
		} else if (k->cl) {
			cl_pool_print(&pool, it->name);
		} else {
			grep_ino(st, k, it->ino, it->name, NULL);      /* --local */
			if (t.unbatched < t.head) {
				t.unbatched = t.head;                   /* no batch will take it */
				t.files_unbatched--;
			}
		}
		free(it->name);
		free(it->msg);
	}
	/* -q stopped early: the batches still in flight are waited for and dropped */
	for (; t.consumed < t.formed; t.consumed++)
		batch_end(k, &t.ring[t.consumed % BATCHES_AHEAD]);
	if (k->cl)
		cl_pool_end(&pool);
	free(cl_ino);
	for (; t.head < t.n; t.head++) {
		free(t.q[t.head].name);
		free(t.q[t.head].msg);
	}
	while (t.walk) {
		struct walker *up = t.walk->up;
		walker_free(t.walk);
		t.walk = up;
	}
	free(t.q);
	free(t.ents);
}

/* A path inside the ARF at k, named `name` on the command line. */
static void grep_path(struct state *st, struct conn *k, const char *path, const char *name)
{
	int64_t ino = arf_lookup(k->c, 1, path);
	if (ino == -EIO) {
		run_error(st, name, arf_client_errmsg(k->c));
		return;
	}
	if (ino < 0) {
		file_error(st, name, (int)-ino);
		return;
	}
	struct arf_attr at;
	int rc = arf_getattr(k->c, (uint64_t)ino, &at);
	if (rc < 0) {
		if (rc == -EIO)
			run_error(st, name, arf_client_errmsg(k->c));
		else
			file_error(st, name, -rc);
		return;
	}
	if (S_ISDIR(at.mode)) {
		/* an operand too, -r or not; not the "." of -r without operands (name "") */
		if (*name && !grep_args_want_dir(&st->a, name, 1))
			return;
		if (st->a.recursive) {
			if (st->a.name_if_dir)
				grep_set_with_filename(st->g, 1);
			grep_tree(st, k, (uint64_t)ino, name);
			return;
		}
		/* grep reads it as a file: the read fails, and what it prints for a file with no
		 * lines (-c's count, -L's name) follows */
		file_error(st, name, EISDIR);
		struct grep_file_result res;
		int64_t last_end = -1;
		if (grep_format_end(st->g, prog, name, 0, NULL, 0, stdout, stderr, &res, &last_end) == -2)
			die("%s", "memory exhausted");
		return;
	}
	if (!grep_args_want_file(&st->a, name, 1))
		return;
	if (S_ISLNK(at.mode)) {
		run_error(st, name, "symbolic links in an ARF are not followed yet");
		return;
	}
	if (!S_ISREG(at.mode))
		return;               /* a fifo: nothing to read (arf has no writers to wait for) */
	grep_ino(st, k, (uint64_t)ino, name, NULL);
}

/* "tcp:HOST:PORT:/path": the endpoint and the path, or 0 when arg is not of that form
 * ("auto:": the best transport the server answers on, arc_connect). */
static int split_remote(const char *arg, char **endpoint, const char **path)
{
	static const char *const schemes[] = { "tcp:", "tls:", "udp:", "rdma:", "auto:" };
	const char *p = NULL;
	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
		if (!strncmp(arg, schemes[i], strlen(schemes[i])))
			p = arg + strlen(schemes[i]);
	if (!p)
		return 0;
	if (*p == '[') {
		p = strchr(p, ']');
		if (!p)
			return 0;
		p++;
	} else {
		p = strchr(p, ':');
		if (!p)
			return 0;
	}
	if (*p != ':' || !(p[1] >= '0' && p[1] <= '9'))
		return 0;
	p++;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p[0] != ':' || p[1] != '/')
		return 0;
	*endpoint = strndup(arg, (size_t)(p - arg));
	*path = p + 1;
	return *endpoint != NULL;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape(char *s)
{
	char *d = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/* The arf mount holding the absolute path abs: its endpoint (malloc'd) and the path inside. */
static char *find_mount(const char *abs, const char **inside)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return NULL;
	char *line = NULL, *best = NULL;
	size_t cap = 0, best_len = 0;
	while (getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
		char *fld[6], *save, *tok = strtok_r(line, " \n", &save);
		int n = 0;
		while (tok && n < 5) {
			fld[n++] = tok;
			tok = strtok_r(NULL, " \n", &save);
		}
		while (tok && strcmp(tok, "-"))
			tok = strtok_r(NULL, " \n", &save);
		char *type = tok ? strtok_r(NULL, " \n", &save) : NULL;
		char *src = type ? strtok_r(NULL, " \n", &save) : NULL;
		if (n < 5 || !src || strcmp(type, "fuse.arf") || strncmp(src, "arf:", 4))
			continue;
		unescape(fld[4]);
		unescape(src);
		size_t ml = strlen(fld[4]);
		int under = !strncmp(abs, fld[4], ml) && (abs[ml] == '/' || abs[ml] == '\0' ||
		                                          !strcmp(fld[4], "/"));
		if (under && (!best || ml >= best_len)) {
			free(best);
			best = strdup(src + 4);
			best_len = ml;
			*inside = abs + (strcmp(fld[4], "/") ? ml : 0);
		}
	}
	free(line);
	fclose(f);
	return best;
}

/* grep will not print a file's lines into that file (it would read what it wrote): the
 * output is a regular file on an arf mount of the same server and the same inode, and the
 * output can grow with the input (not -q, -l, -L, -c, -m 1): an error for that file. */
static int is_output_ino(struct state *st, struct conn *k, uint64_t ino)
{
	const struct grep_opts *o = &st->a.o;
	if (!st->out_endpoint || strcmp(st->out_endpoint, k->endpoint) || o->quiet || o->list ||
	    o->list_nomatch || o->count || o->max_count == 1)
		return 0;
	/* looked up by the first file (the main thread's: cl_pool_start asks with ino 0
	 * before its workers do) */
	if (st->out_ino == 0) {
		int64_t oi = arf_lookup(k->c, 1, st->out_path);
		st->out_ino = oi > 0 ? oi : -1;
	}
	return st->out_ino == (int64_t)ino;
}

static int is_output(struct state *st, struct conn *k, uint64_t ino, const char *name)
{
	if (!is_output_ino(st, k, ino))
		return 0;
	st->errors = 1;
	if (!st->a.no_messages)
		fprintf(stderr, "%s: %s: input file is also the output\n", prog, name);
	return 1;
}

static void grep_operand(struct state *st, const char *arg)
{
	char *endpoint = NULL, *abs = NULL;
	const char *path;
	if (!split_remote(arg, &endpoint, &path)) {
		abs = realpath(arg, NULL);
		if (!abs) {
			file_error(st, arg, errno);
			return;
		}
		endpoint = find_mount(abs, &path);
		if (!endpoint) {
			run_error(st, arg, "not in an ARF (give ENDPOINT:/path, or a path under arf mount)");
			free(abs);
			return;
		}
		if (!*path)
			path = "/";
	}
	/* "." stands for the working directory of -r without operands: names without "./" */
	const char *name = st->a.files.n == 0 ? "" : arg;
	struct conn *k = connect_to(st, endpoint, arg);
	if (k)
		grep_path(st, k, path, name);
	free(endpoint);
	free(abs);
}

/* Whether a cluster's files can be scanned in their data servers (cluster_servers): not
 * the exact matcher (back-references, and in UTF-8 the patterns docs/grep.md sends there).
 * -z and UTF-8 are served: a terminator ('\n', or NUL with -z) is never part of a UTF-8
 * character, so a character split by a stripe boundary lies in a boundary line, joined and
 * scanned here.  -m and context with lines printed take the servers'
 * selected lines in file order, the first NUM, and read the context around them
 * (cluster_context); with -c, -l, -L or -q they are counts, clamped at -m. */
static int cluster_servers_can(const struct state *st)
{
	return !grep_is_exact(st->g) && !st->local &&
	       !st->no_read && !getenv("ARF_GREP_CLUSTER_GATHER");
}

/* The patterns again for the servers, and their arf segment; on any failure the gather
 * serves.  With -c, -l, -L or -q they count (each window's count, or its first selected
 * line: arfscan's count_only and stop_first; ARF_GREP_CLUSTER_LINES=1 turns that off, for
 * the test that compares the bytes sent), with -m NUM stopping at NUM: no line crosses
 * the network, and the client adds the counts up and clamps them at -m.  Otherwise
 * without -c, -l, -L, -q and without context: each server returns its selected lines (each
 * window stopping at -m's NUM), the client counts them, keeps the first NUM and reads the
 * context (cluster_context). */
static void cluster_servers_compile(struct state *st)
{
	struct grep_opts saved = st->a.o, *o = &st->a.o;
	int counts = (o->count || o->list || o->list_nomatch || o->quiet) &&
	             !getenv("ARF_GREP_CLUSTER_LINES");
	if (counts) {
		int64_t lim = o->max_count;
		if ((o->list || o->list_nomatch || o->quiet) && (lim < 0 || lim > 1))
			lim = 1;
		st->srv_limit = lim;
		/* what only formats lines: not needed to count them */
		o->line_number = o->byte_offset = o->only = o->color = o->initial_tab = 0;
		o->before = o->after = -1;
	} else {
		/* the selected lines only, each window stopping at -m's NUM: the client keeps
		 * the file's first NUM and reads the context (cluster_context) */
		o->count = o->list = o->list_nomatch = o->quiet = 0;
		o->before = o->after = -1;
		st->srv_limit = -1;
	}
	st->srv_mlimit = counts ? -1 : saved.max_count;
	FILE *quiet = fopen("/dev/null", "w");     /* its warnings were printed once */
	char err[256];
	if (quiet && grep_args_compile(&st->a, prog, quiet, &st->g_srv) == 0 &&
	    !grep_is_exact(st->g_srv) &&
	    grep_arf_segment(st->g_srv, &st->seg_srv, &st->seg_srv_len, err, sizeof err) == 0)
		isa_seg_id(st->seg_srv, st->seg_srv_len, st->seg_srv_id);
	else
		st->seg_srv = NULL;
	if (quiet)
		fclose(quiet);
	st->a.o = saved;
	st->srv_counts = counts && st->seg_srv;
}

/* The servers' segment, compiled when the first file of a cluster comes: most runs meet
 * none, and compiling 10,000 patterns a second time was a quarter of arf grep's start-up.
 * Whether there is one (else the gather serves). */
static int cluster_servers_ready(struct state *st)
{
	if (!st->srv_tried) {
		st->srv_tried = 1;
		if (cluster_servers_can(st))
			cluster_servers_compile(st);
	}
	return st->seg_srv != NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: arf grep [OPTION]... PATTERNS FILE...\n"
	        "Search for PATTERNS in files of an ARF image, as GNU grep does; the scan runs in arfd.\n"
	        "FILE is ENDPOINT:/path (tcp:HOST:PORT:/a/b, tls:..., udp:..., rdma:...) or a path under\n"
	        "arf mount (tls: trusts the CAs in $PN_TLS_CA).\n"
	        "  -E, -F, -G     pattern syntax: extended, fixed strings, basic (default)\n"
	        "  -e PATTERNS    use PATTERNS      -f FILE   take PATTERNS from FILE\n"
	        "  -i, -y         ignore case       -w, -x    match whole words / lines\n"
	        "  -v             select non-matching lines\n"
	        "  -c -l -L -q -s -o -n -b -H -h -z -a -I -r -m NUM -A NUM -B NUM -C NUM\n"
	        "  --null --include=GLOB --exclude=GLOB --exclude-dir=GLOB\n"
	        "  --color[=WHEN] --binary-files=TYPE\n"
	        "  --local        run the scan here, reading the server's region remotely\n"
	        "  --explain      print the generated assembly and how the pattern is matched\n"
	        "$ARC_SECRET is the server's secret.\n");
}

int arf_cmd_grep(int argc, char **argv)
{
	struct state st = { 0 };
	const char *explain = NULL, *local = NULL;
	const struct grep_extra_opt extra[] = {
		{ "explain", 0, &explain },
		{ "local", 0, &local },
		{ NULL, 0, NULL }
	};
	struct grep_opts *o = &st.a.o;
	const struct grep_strv *files = &st.a.files;
	char err[256];
	int status = 2;
	int rc = grep_args_parse(&st.a, argc, argv, extra, prog, stderr);
	if (rc > 0) {
		usage(stdout);
		status = 0;
	}
	if (rc != 0)
		goto out;
	if (!explain && grep_args_select_none(&st.a) && !grep_args_lists_files(&st.a)) {
		status = 1;       /* grep -m 0, or no pattern without -v: nothing is read, the
		                   * patterns are not even compiled */
		goto out;
	}
	/* --label names standard input, which arf grep does not read */
	o->no_walk_back = 1;
	st.local = local != NULL;
	st.scan_max = SCAN_MAX;
	/* a run stops after this much output: tests set it small, so that a file takes many
	 * runs (context and -B's read-backs across runs, UTF-8 context streamed then redone) */
	const char *ro = getenv("ARF_GREP_RUN_OUT");
	st.out_soft = ro && atoll(ro) > 0 && atoll(ro) <= OUT_SOFT ? atoll(ro) : OUT_SOFT;
	if (grep_args_locale(&st.a, prog, stderr) != 0 ||
	    grep_args_compile(&st.a, prog, stderr, &st.g) != 0)
		goto out;
	if (grep_arf_segment(st.g, &st.seg, &st.seg_len, err, sizeof err) != 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	isa_seg_id(st.seg, st.seg_len, st.seg_id);
	if (explain) {
		char note[64];
		snprintf(note, sizeof note, "arf segment: %zu bytes", st.seg_len);
		if (grep_explain(st.g, st.seg, st.seg_len, note, prog, stdout, stderr) == 0)
			status = 0;
		goto out;
	}
	st.no_read = grep_args_select_none(&st.a);   /* -L names every file it can find */
	if (files->n == 0 && !st.a.recursive) {
		fprintf(stderr, "%s: no FILE: arf grep does not read standard input "
		        "(give ENDPOINT:/path or a path under arf mount)\n", prog);
		goto out;
	}
	struct stat out_sb;
	if (fstat(1, &out_sb) == 0 && S_ISREG(out_sb.st_mode) &&
	    (st.out_abs = realpath("/proc/self/fd/1", NULL)))
		st.out_endpoint = find_mount(st.out_abs, &st.out_path);
	static char obuf[1 << 16];
	/* a terminal or --line-buffered sees each line as it is printed (as grep's stdio) */
	setvbuf(stdout, obuf, st.a.line_buffered || isatty(1) ? _IOLBF : _IOFBF, sizeof obuf);
	/* -r without operands: the working directory, which must be under an arf mount */
	if (files->n == 0)
		grep_operand(&st, ".");
	for (size_t i = 0; i < files->n && !(o->quiet && st.any_match); i++)
		grep_operand(&st, files->v[i]);
	check_output(1);
	status = o->quiet && st.any_match ? 0 : st.errors ? 2 : st.any_match ? 0 : 1;
out:
	free(st.out_endpoint);
	free(st.out_abs);
	grep_free(st.g);
	grep_free(st.g_srv);
	if (st.lead) {
		free(st.lead->rec);
		free(st.lead->lrec);
		free(st.lead->win);
		free(st.lead);
	}
	grep_out_free(&st.cl_out);
	while (st.conns) {
		struct conn *k = st.conns;
		st.conns = k->next;
		if (k->cl)
			arf_cluster_close(k->cl);
		if (k->d)
			arf_data_close(k->d);
		if (k->c)
			arf_client_close(k->c);
		if (k->a)
			arc_close(k->a);
		free(k->endpoint);
		free(k);
	}
	grep_args_free(&st.a);
	return status;
}
