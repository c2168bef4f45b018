/* test_arf_crash.c: SIGKILL of arfd at random moments under a workload with fsyncs, then a
 * restart on the same image: every byte an fsync acknowledged is there, every operation in
 * flight at the kill is either done or not done (never half), and fsck finds nothing.
 *
 * The workload (one client, the way a mount would drive the server): appends of random
 * lengths to several files (half of them through the mount's write queue, arf_wq, then
 * its flush), each followed by fsync; creates; renames of a file between two
 * names; unlinks of finished files.  A killer thread SIGKILLs the forked arfd after a random
 * delay.  The client keeps a model of what was acknowledged and of the one operation in
 * flight, and the check after the restart allows exactly "as acknowledged" or "as
 * acknowledged plus the operation in flight".
 *
 * Rounds: 16, or $ARF_CRASH_ROUNDS.  Seeded from $ARF_CRASH_SEED (printed on failure).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arc.h"
#include "arf.h"
#include "arf_data.h"
#include "arf_ops.h"
#include "layout.h"
#include "server.h"
#include "arf_fork.h"

static int passed, failed;

#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

static char opsseg[512], dataseg[512];
static uint64_t rng;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ---- a client of the forked server (arf_fork.h) ---- */

struct client {
	struct arc *a;
	struct arf_client *c;
	struct arf_data *d;
};

static bool client_open(struct client *k, const char *ep)
{
	char err[512];
	/* no session: the workload runs until an operation fails because the server died */
	struct arc_opts o = { .timeout_ms = 5000, .outage_ms = -1 };
	memset(k, 0, sizeof *k);
	k->a = arc_connect(ep, &o, err, sizeof err);
	if (k->a)
		k->c = arf_client_open(k->a, opsseg, err, sizeof err);
	if (k->c)
		k->d = arf_data_open(k->a, dataseg, err, sizeof err);
	if (!k->d)
		printf("client: %s\n", err);
	return k->d != NULL;
}

static void client_close(struct client *k)
{
	arf_data_close(k->d);
	arf_client_close(k->c);
	if (k->a)
		arc_close(k->a);
}

/* ---- the model ---- */

#define NFILES 6
#define MAXLEN (256 * 1024)

struct mfile {
	bool exists;
	int name;                  /* which of its two names it has: "fN.a" or "fN.b" */
	size_t acked;              /* bytes an fsync acknowledged */
	unsigned char *b;          /* the content the client wrote (acked and beyond) */
};

enum wop { OP_APPEND, OP_CREATE, OP_RENAME, OP_UNLINK };

struct inflight {
	enum wop op;
	int file;
	size_t off, len;           /* OP_APPEND: bytes off .. off+len-1 of b */
};

static struct mfile files[NFILES];
static struct inflight fly;
static bool flying;

static void name_of(int f, int which, char out[32])
{
	snprintf(out, 32, "f%d.%c", f, which ? 'b' : 'a');
}

/* The killer: SIGKILL pid after delay_us. */
struct killer {
	pid_t pid;
	unsigned delay_us;
};

static void *kill_later(void *arg)
{
	struct killer *kl = arg;
	usleep(kl->delay_us);
	kill(kl->pid, SIGKILL);
	return NULL;
}

/* Run the workload until an operation fails (the server died). */
static unsigned workload(struct client *k, uint64_t dir)
{
	unsigned done = 0;
	unsigned char *chunk = malloc(MAXLEN);
	for (unsigned step = 0; step < 100000; step++) {
		int f = (int)(next_rand() % NFILES);
		struct mfile *m = &files[f];
		char name[32], other[32];
		name_of(f, m->name, name);
		name_of(f, !m->name, other);
		flying = true;
		fly.file = f;
		if (!m->exists) {
			fly.op = OP_CREATE;
			int64_t ino = arf_create(k->c, dir, name, 0644, 0, 0);
			if (ino < 0)
				break;
			m->exists = true;
			m->acked = 0;
		} else if (m->acked > MAXLEN - 4096 && next_rand() % 2) {
			fly.op = OP_UNLINK;
			if (arf_unlink(k->c, dir, name) < 0)
				break;
			m->exists = false;
			m->acked = 0;
		} else if (next_rand() % 5 == 0) {
			fly.op = OP_RENAME;
			if (arf_rename(k->c, dir, name, dir, other, 0) < 0)
				break;
			m->name = !m->name;
		} else {
			size_t len = 1 + next_rand() % 20000;
			if (m->acked + len > MAXLEN) {
				len = MAXLEN - m->acked;
				if (len == 0)
					continue;
			}
			for (size_t i = 0; i < len; i++)
				chunk[i] = (unsigned char)next_rand();
			memcpy(m->b + m->acked, chunk, len);
			fly.op = OP_APPEND;
			fly.off = m->acked;
			fly.len = len;
			int64_t ino = arf_lookup(k->c, dir, name);
			if (ino < 0)
				break;
			if (next_rand() % 2) {
				/* as the mount writes: queued (arf_wq, in up to three pieces), then
				 * flush and fsync; only the fsync's answer acknowledges */
				struct arf_wq *q = arf_wq_new(k->d, (uint64_t)ino);
				if (!q)
					break;
				size_t at = 0;
				int64_t rc = 0;
				for (int piece = 0; piece < 3 && at < len && rc >= 0; piece++) {
					size_t n = piece == 2 ? len - at : 1 + next_rand() % (len - at);
					rc = arf_wq_write(q, 0, m->acked + at, chunk + at, n);
					at += n;
				}
				int frc = arf_wq_flush(q);
				arf_wq_free(q);
				if (rc < 0 || frc != 0)
					break;
			} else if (arf_write(k->d, (uint64_t)ino, m->acked, chunk, len) != (int64_t)len) {
				break;
			}
			if (arf_fsync(k->d, (uint64_t)ino) != 0)
				break;
			m->acked += len;
		}
		flying = false;
		done++;
	}
	free(chunk);
	return done;
}

/* After the restart: each file as acknowledged, or as acknowledged plus the operation in
 * flight. */
static void verify(struct client *k, uint64_t dir, int round)
{
	unsigned char *buf = malloc(MAXLEN + 1);
	for (int f = 0; f < NFILES; f++) {
		struct mfile *m = &files[f];
		bool mine = flying && fly.file == f;
		char name[32], other[32];
		name_of(f, m->name, name);
		name_of(f, !m->name, other);
		int64_t ino = arf_lookup(k->c, dir, name);
		int64_t ino2 = arf_lookup(k->c, dir, other);
		if (mine && fly.op == OP_RENAME && ino < 0 && ino2 > 0) {
			m->name = !m->name;          /* the rename was done */
			ino = ino2;
			ino2 = -ENOENT;
		}
		CHECK(ino2 == -ENOENT, "round %d: f%d has both names", round, f);
		if (!m->exists) {
			if (mine && fly.op == OP_UNLINK && ino < 0) {
				continue;                /* not there, as acknowledged */
			}
			if (mine && fly.op == OP_CREATE && ino > 0) {
				m->exists = true;        /* the create was done before the kill */
				m->acked = 0;
			} else {
				CHECK(ino == -ENOENT, "round %d: f%d should not exist (%" PRId64 ")", round,
				      f, ino);
				continue;
			}
		} else if (mine && fly.op == OP_UNLINK && ino == -ENOENT) {
			m->exists = false;           /* the unlink was done */
			m->acked = 0;
			continue;
		}
		CHECK(ino > 0, "round %d: f%d (%s) lost: %" PRId64, round, f, name, ino);
		if (ino <= 0) {
			m->exists = false;
			continue;
		}
		int64_t n = arf_read(k->d, (uint64_t)ino, 0, buf, MAXLEN + 1);
		bool whole = n >= (int64_t)m->acked && !memcmp(buf, m->b, m->acked);
		CHECK(whole, "round %d: f%d: %" PRId64 " bytes read, %zu acknowledged: %s", round, f,
		      n, m->acked, n >= (int64_t)m->acked ? "content differs" : "short");
		if (n > (int64_t)m->acked) {
			/* only the append in flight may have gone further, with its own bytes; a
			 * write may land in part (the image filled, or the kill hit between runs) */
			bool ok = mine && fly.op == OP_APPEND && fly.off == m->acked &&
			          n <= (int64_t)(m->acked + fly.len) &&
			          !memcmp(buf + m->acked, m->b + m->acked, (size_t)n - m->acked);
			CHECK(ok, "round %d: f%d has %" PRId64 " bytes past the acknowledged %zu", round,
			      f, n - (int64_t)m->acked, m->acked);
			if (ok)
				m->acked = (size_t)n;   /* what is there is the new base */
		} else if (n == (int64_t)m->acked) {
			passed++;
		}
	}
	flying = false;
	free(buf);
}

static char report[1 << 14];
static size_t report_len;

static void collect(void *user, enum arf_fsck_line kind, const char *line)
{
	int n = snprintf(report + report_len, sizeof report - report_len, "%s\n", line);
	if (n > 0 && (size_t)n < sizeof report - report_len)
		report_len += (size_t)n;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	arfd_log_setup(ARFD_LOG_ERROR, false);
	signal(SIGPIPE, SIG_IGN);
	const char *b = getenv("BUILD");
	snprintf(opsseg, sizeof opsseg, "%s/arfseg/ops.pno", b && *b ? b : "build");
	snprintf(dataseg, sizeof dataseg, "%s/arfseg/data.pno", b && *b ? b : "build");
	const char *rs = getenv("ARF_CRASH_ROUNDS");
	int rounds = rs ? atoi(rs) : 16;
	const char *ss = getenv("ARF_CRASH_SEED");
	uint64_t seed = ss ? strtoull(ss, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
	rng = seed | 1;
	const char *tmp = getenv("TMPDIR");
	char dir[256], img[300], err[512];
	snprintf(dir, sizeof dir, "%s/test_arf_crash.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		printf("mkdtemp: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	snprintf(img, sizeof img, "%s/crash.img", dir);
	CHECK(arf_mkfs(img, 64 << 20, 0, err, sizeof err) == 0, "mkfs: %s", err);
	for (int f = 0; f < NFILES; f++)
		files[f].b = malloc(MAXLEN);

	uint64_t dir_ino = 0;
	unsigned total_ops = 0;
	for (int round = 0; round < rounds && !failed; round++) {
		char ep[256];
		pid_t pid = fork_server(img, ep);
		CHECK(pid > 0, "round %d: arfd did not start", round);
		if (pid <= 0)
			break;
		struct client k;
		if (!client_open(&k, ep)) {
			CHECK(0, "round %d: client", round);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			break;
		}
		if (round == 0) {
			int64_t d = arf_mkdir(k.c, ARF_INO_ROOT, "w", 0755, 0, 0);
			CHECK(d > 2, "mkdir w: %" PRId64, d);
			dir_ino = (uint64_t)d;
		} else {
			verify(&k, dir_ino, round);
		}
		struct killer kl = { pid, (unsigned)(5000 + next_rand() % 250000) };
		pthread_t t;
		pthread_create(&t, NULL, kill_later, &kl);
		total_ops += workload(&k, dir_ino);
		pthread_join(t, NULL);
		waitpid(pid, NULL, 0);
		client_close(&k);

		/* fsck of the killed image: the journal rolls back what was cut short and the
		 * maps are recomputed, as arfd's attach does; nothing else may need repair */
		report_len = 0;
		report[0] = '\0';
		struct arf_fsck_opts o = { .report = collect };
		struct arf_fsck_result r;
		int rc = arf_fsck(img, &o, &r);
		CHECK(rc == ARF_FSCK_CLEAN, "round %d: fsck after SIGKILL: %d\n%s", round, rc, report);
	}
	/* a last restart checks the last round's work */
	char ep[256];
	pid_t pid = fork_server(img, ep);
	struct client k;
	if (pid > 0 && client_open(&k, ep)) {
		verify(&k, dir_ino, rounds);
		client_close(&k);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	printf("%d rounds, %u operations acknowledged; seed %" PRIu64 "\n", rounds, total_ops, seed);
	for (int f = 0; f < NFILES; f++)
		free(files[f].b);
	if (!failed) {
		char cmd[400];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			printf("could not remove %s\n", dir);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
