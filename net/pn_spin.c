/* pn_spin.c: whether a thread about to sleep until the network brings something (a client
 * waiting for its reply, the tcp reader waiting for the next request) may poll instead, and
 * for how long.
 *
 * Why poll at all: on a virtual machine an idle vCPU is halted, and waking a thread that
 * sleeps there costs 30-40 us (an IPI through the hypervisor), against a 12 us loopback round
 * trip.  The scheduler sometimes keeps a client and its server on one vCPU (then nothing
 * halts) and sometimes on two, and both placements are stable once taken, so a request's
 * latency was 15 us or 50 us by luck.  A thread that polls is never woken: the two-vCPU
 * placement then costs less than the one-vCPU one.
 *
 * Why not always: polling holds a CPU.  With one CPU (affinity, a cgroup's quota, or every
 * CPU busy with other runnable work) the poller takes it from the very thread it waits
 * for: a client polling while its server waits for the CPU made a 15 us request 110 us.
 * So a thread polls only while this process has at least two CPUs of its own (affinity and
 * cgroup quota) and the machine has no more runnable threads than CPUs; both are looked at
 * every LOOK_NS, not per wait.  The runnable count is one instant's, and it counts the
 * pollers themselves: a client and its server polling fill two CPUs, so any thread that
 * wakes for a moment (an I/O thread's timer, a kworker) makes it look full.  One such look
 * turned polling off for LOOK_NS in a third to a half of the looks on a quiet 2-CPU machine
 * (null EXEC 22-25 us instead of 8.5).  So a full look is taken again RELOOK_NS later, and
 * polling stops only when FULL_LOOKS looks in a row found the machine full: a thread that
 * wants the CPU for that long is load, not a moment's wake-up (pn_spin_judge).  And polling that keeps finding nothing (requests that run
 * long, a client that pauses between requests) backs off: after MISSES_MAX fruitless polls
 * in a row, a role stops polling for 1 ms, doubling up to 1 s, until a poll finds something
 * again. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pn_int.h"

#define LOOK_NS        100000000ull    /* the machine's load is looked at this often */
#define RELOOK_NS       10000000ull    /* ... and again this soon after a look found it full */
#define FULL_LOOKS      3              /* full looks in a row that stop polling */
#define QUOTA_LOOK_NS  1000000000ull   /* affinity and cgroup quota this often */
#define MISSES_MAX     8
#define QUIET_MIN_NS   1000000ull
#define QUIET_SHIFT_MAX 10             /* 1 ms << 10: about 1 s */

double pn_spin_parse_cpu_max(const char *text)
{
	/* cgroup v2 cpu.max: "max 100000" or "QUOTA PERIOD" (microseconds) */
	if (!text)
		return -1;
	bool unlimited = !strncmp(text, "max ", 4);
	char *end = (char *)text + 3;
	unsigned long long quota = 0;
	errno = 0;
	if (!unlimited) {
		if (text[0] < '0' || text[0] > '9')
			return -1;
		quota = strtoull(text, &end, 10);
		if (errno || *end != ' ')
			return -1;
	}
	const char *p = end + 1;
	if (*p < '0' || *p > '9')
		return -1;
	unsigned long long period = strtoull(p, &end, 10);
	if (errno || period == 0 || (*end && *end != '\n'))
		return -1;
	return unlimited ? INFINITY : (double)quota / (double)period;
}

double pn_spin_parse_cfs(const char *quota_text, const char *period_text)
{
	/* cgroup v1: cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us */
	if (!quota_text || !period_text)
		return -1;
	char *end;
	errno = 0;
	long long quota = strtoll(quota_text, &end, 10);
	if (errno || end == quota_text || (*end && *end != '\n'))
		return -1;
	if (quota < 0)
		return INFINITY;
	long long period = strtoll(period_text, &end, 10);
	if (errno || end == period_text || (*end && *end != '\n') || period <= 0)
		return -1;
	return (double)quota / (double)period;
}

int pn_spin_parse_loadavg(const char *text)
{
	/* /proc/loadavg: "0.66 0.97 1.20 2/345 12345"; the 4th field's first number is the
	 * count of runnable threads now, this one included */
	double a, b, c;
	int running, total;
	if (!text || sscanf(text, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5 ||
	    running < 0)
		return -1;
	return running;
}

/* The whole of a small file, NUL-terminated; false when it cannot be read. */
static bool read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return true;
}

/* The CPU quota of the cgroup dir and every cgroup above it (the tightest counts), in CPUs;
 * INFINITY when none.  v2 names cpu.max, v1 cpu.cfs_quota_us; the walk is bounded by the
 * path's length. */
static double quota_along(const char *root, const char *dir, bool v2)
{
	char path[512], a[64], b[64];
	char rel[256];
	snprintf(rel, sizeof rel, "%s", dir);
	double best = INFINITY;
	for (;;) {
		double q = -1;
		if (v2) {
			snprintf(path, sizeof path, "%s%s/cpu.max", root, rel);
			if (read_small(path, a, sizeof a))
				q = pn_spin_parse_cpu_max(a);
		} else {
			snprintf(path, sizeof path, "%s%s/cpu.cfs_quota_us", root, rel);
			bool ok = read_small(path, a, sizeof a);
			snprintf(path, sizeof path, "%s%s/cpu.cfs_period_us", root, rel);
			if (ok && read_small(path, b, sizeof b))
				q = pn_spin_parse_cfs(a, b);
		}
		if (q >= 0 && q < best)
			best = q;
		char *slash = strrchr(rel, '/');
		if (!slash || rel[0] == 0)
			break;
		*slash = 0;                    /* up one: "/a/b" -> "/a" -> "" (the root) */
	}
	return best;
}

/* Whether a v1 hierarchy's controller list ("cpu,cpuacct") has cpu itself. */
static bool has_cpu_controller(const char *list)
{
	for (const char *p = list; *p; ) {
		size_t n = strcspn(p, ",");
		if (n == 3 && !strncmp(p, "cpu", 3))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/* CPUs this process may run on: its main thread's affinity (not the calling thread's: a tcp
 * reader may keep itself on one CPU, pn_tcp.c), else the caller's. */
static int affinity_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(getpid(), sizeof set, &set) == 0 ||
	    sched_getaffinity(0, sizeof set, &set) == 0)
		return CPU_COUNT(&set);
	return 1;
}

/* CPUs this process may use: its affinity (affinity_cpus), and the CPU quota of its
 * cgroups. */
static double own_cpus(int affinity)
{
	double cpus = affinity;
	char groups[2048];
	if (!read_small("/proc/self/cgroup", groups, sizeof groups))
		return cpus;
	/* strtok_r: every pn core's gate looks here, several threads at once in one process
	 * (a client and a server in a test, the fuzzer); strtok's one hidden cursor let one
	 * thread go on in another thread's buffer (ASan in fuzz_arfd) */
	char *save = NULL;
	for (char *line = strtok_r(groups, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* "0::/path" (v2) or "N:cpu,cpuacct:/path" (v1) */
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = 0;
		*c2 = 0;
		const char *controllers = c1 + 1, *dir = c2 + 1;
		double q = INFINITY;
		if (!controllers[0] && !strcmp(line, "0")) {
			/* v2 alone is mounted at /sys/fs/cgroup, beside v1 at .../unified */
			double a = quota_along("/sys/fs/cgroup", dir, true);
			double b = quota_along("/sys/fs/cgroup/unified", dir, true);
			q = a < b ? a : b;
		} else if (has_cpu_controller(controllers)) {
			char root[128];
			snprintf(root, sizeof root, "/sys/fs/cgroup/%s", controllers);
			q = quota_along(root, dir, false);
		}
		if (q < cpus)
			cpus = q;
	}
	return cpus;
}

void pn_spin_init(struct pn_spin *s, unsigned spin_us)
{
	memset(s, 0, sizeof *s);
	s->budget_ns = (uint64_t)spin_us * 1000u;
	atomic_flag_clear(&s->looking);
	/* PN_SPIN=always: the machine is taken as ours (a dedicated server: poll whatever the
	 * load; fruitless polls still back off); never: no polling */
	const char *mode = getenv("PN_SPIN");
	if (mode && !strcmp(mode, "never"))
		s->budget_ns = 0;
	else if (mode && !strcmp(mode, "always")) {
		atomic_store(&s->machine_ok, true);
		atomic_store(&s->next_look_ns, UINT64_MAX);
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		s->max_pollers = online > 2 ? (unsigned)online - 1 : 1;
	}
}

/* Look at the machine again if it is time (one thread at a time; the others go by the last
 * look). */
static void look(struct pn_spin *s, uint64_t now)
{
	if (now < atomic_load_explicit(&s->next_look_ns, memory_order_relaxed) ||
	    atomic_flag_test_and_set(&s->looking))
		return;
	if (now >= s->next_quota_ns) {
		int affinity = affinity_cpus();
		s->own = own_cpus(affinity);
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		s->online = online > 0 ? (unsigned)online : 1;
		atomic_store(&s->one_cpu, s->own > 0 && s->own < 2 && affinity > 1);
		s->max_pollers = s->own >= 2 ? (s->own > 65 ? 64 : (unsigned)s->own - 1) : 1;
		s->next_quota_ns = now + QUOTA_LOOK_NS;
	}
	char buf[128];
	int running = read_small("/proc/loadavg", buf, sizeof buf) ? pn_spin_parse_loadavg(buf) : -1;
	struct pn_spin_verdict v = pn_spin_judge(atomic_load(&s->machine_ok), s->full_looks,
	                                         s->own, s->online, running);
	s->full_looks = v.full_looks;
	atomic_fetch_add_explicit(&s->looks, 1, memory_order_relaxed);
	if (running > (int)s->online)
		atomic_fetch_add_explicit(&s->full_looks_seen, 1, memory_order_relaxed);
	atomic_store(&s->machine_ok, v.ok);
	atomic_store(&s->next_look_ns, now + v.next_look_in_ns);
	atomic_flag_clear(&s->looking);
}

struct pn_spin_verdict pn_spin_judge(bool polling, unsigned full_looks, double own,
                                     unsigned online, int running)
{
	if (own < 2 || running < 0)      /* one CPU of our own, or /proc unreadable: never */
		return (struct pn_spin_verdict){ false, 0, LOOK_NS };
	if ((unsigned)running <= online)
		return (struct pn_spin_verdict){ true, 0, LOOK_NS };
	/* full: polling stays as it is until FULL_LOOKS looks in a row say so */
	if (polling && full_looks + 1 < FULL_LOOKS)
		return (struct pn_spin_verdict){ true, full_looks + 1, RELOOK_NS };
	return (struct pn_spin_verdict){ false, 0, LOOK_NS };
}

bool pn_spin_one_cpu(struct pn_spin *s)
{
	return atomic_load_explicit(&s->one_cpu, memory_order_relaxed);
}

void pn_spin_unkeep(void)
{
	cpu_set_t mine, proc;
	if (sched_getaffinity(0, sizeof mine, &mine) == 0 && CPU_COUNT(&mine) == 1 &&
	    sched_getaffinity(getpid(), sizeof proc, &proc) == 0 && CPU_COUNT(&proc) > 1)
		sched_setaffinity(0, sizeof proc, &proc);
}

int pn_spin_follow(int peer_cpu, int *last, int kept)
{
	int before = *last;
	*last = peer_cpu;
	if (peer_cpu < 0 || peer_cpu == kept || peer_cpu != before)
		return -1;
	return peer_cpu;
}

/* A wait that may not poll: counted by reason (the thread sleeps next, so this costs it
 * nothing it would notice), budget 0. */
static uint64_t denied(struct pn_spin *s, enum pn_spin_denial why)
{
	atomic_fetch_add_explicit(&s->denied[why], 1, memory_order_relaxed);
	return 0;
}

uint64_t pn_spin_budget(struct pn_spin *s, enum pn_spin_role role, uint64_t now)
{
	if (!s->budget_ns)
		return 0;
	look(s, now);
	if (!atomic_load(&s->machine_ok))
		return denied(s, PN_SPIN_DENIED_LOAD);
	if (now < atomic_load_explicit(&s->role[role].quiet_until_ns, memory_order_relaxed))
		return denied(s, PN_SPIN_DENIED_RESTING);
	/* at most own CPUs - 1 threads of this process poll at once (a mount's FUSE threads
	 * all waiting for replies would otherwise hold every CPU, the server's included) */
	unsigned max = s->max_pollers, n = atomic_load(&s->pollers);
	do {
		if (n >= max)
			return denied(s, PN_SPIN_DENIED_BUSY);
	} while (!atomic_compare_exchange_weak(&s->pollers, &n, n + 1));
	return s->budget_ns;
}

void pn_spin_done(struct pn_spin *s, enum pn_spin_role role, bool found, uint64_t now)
{
	struct pn_spin_role_state *r = &s->role[role];
	atomic_fetch_sub(&s->pollers, 1);
	if (found) {
		if (atomic_load_explicit(&r->misses, memory_order_relaxed))
			atomic_store_explicit(&r->misses, 0, memory_order_relaxed);
		if (atomic_load_explicit(&r->shift, memory_order_relaxed))
			atomic_store_explicit(&r->shift, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&r->hits, 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&r->wasted, 1, memory_order_relaxed);
	if (atomic_fetch_add_explicit(&r->misses, 1, memory_order_relaxed) + 1 < MISSES_MAX)
		return;
	unsigned shift = atomic_load_explicit(&r->shift, memory_order_relaxed);
	atomic_store_explicit(&r->quiet_until_ns, now + (QUIET_MIN_NS << shift), memory_order_relaxed);
	atomic_store_explicit(&r->shift, shift < QUIET_SHIFT_MAX ? shift + 1 : shift,
	                      memory_order_relaxed);
	atomic_store_explicit(&r->misses, 0, memory_order_relaxed);
}
