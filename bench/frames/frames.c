/* frames.c: runs the kernel pairs of kernels.c (a segment pncc made) on both engines: 25
 * rounds, the two kernels of a pair back to back in each, and prints the best time of each
 * as a table row "| engine | framed / plain | t / t = ratio |" (docs/cc.md, "Stack memory").
 *
 *   make -C bench/frames BUILD=/abs/build
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vm.h"

#define ROUNDS 25

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const struct {
	const char *plain, *framed;
	int64_t arg;
	int reps;                  /* runs per timing: many for the tiny runs */
} pairs[] = {
	{ "tiny_plain", "tiny_framed", 1, 20000 },
	{ "arr_region", "arr_frame", 2000000, 1 },
	{ "calls_plain", "calls_framed", 2000000, 1 },
};

/* Seconds per run of entry, timed over reps runs. */
static double timed(const struct vm_prog *p, int entry, int64_t arg, int reps, int engine)
{
	struct vm_run_opts o = { .engine = engine, .fuel = 1ull << 40 };
	struct vm_result r;
	double t0 = now();
	for (int k = 0; k < reps; k++)
		if (vm_run(p, (unsigned)entry, &arg, 1, &o, &r) != 0) {
			fprintf(stderr, "frames: a run trapped (kind %d)\n", r.trap.kind);
			exit(1);
		}
	return (now() - t0) / reps;
}

int main(int argc, char **argv)
{
	static uint64_t heap[64];
	void *seg;
	size_t len;
	char err[300];
	struct vm_prog *p;
	if (argc != 2 || isa_read_file(argv[1], &seg, &len) != 0) {
		fprintf(stderr, "usage: frames KERNELS.pno\n");
		return 2;
	}
	struct vm *vm = vm_new();
	if (!vm || vm_bind_region(vm, "heap", heap, sizeof heap, ISA_ACC_RW) != 0 ||
	    vm_load(vm, seg, len, &p, err, sizeof err) != 0) {
		fprintf(stderr, "frames: cannot load %s: %s\n", argv[1], err);
		return 1;
	}
	for (int e = VM_ENGINE_INTERP; e <= VM_ENGINE_JIT; e++)
		for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
			unsigned n;
			int ea = vm_prog_entry(p, pairs[i].plain, &n), eb = vm_prog_entry(p, pairs[i].framed, &n);
			double best_a = 1e9, best_b = 1e9;
			for (int round = 0; round < ROUNDS; round++) {
				double a = timed(p, ea, pairs[i].arg, pairs[i].reps, e);
				double b = timed(p, eb, pairs[i].arg, pairs[i].reps, e);
				best_a = a < best_a ? a : best_a;
				best_b = b < best_b ? b : best_b;
			}
			int ns = pairs[i].reps > 1;
			printf("| %s | %s / %s | %.3g / %.3g %s = %.2fx |\n", vm_engine_name(e),
			       pairs[i].framed, pairs[i].plain, best_b * (ns ? 1e9 : 1e3),
			       best_a * (ns ? 1e9 : 1e3), ns ? "ns" : "ms", best_b / best_a);
		}
	vm_prog_free(p);
	vm_free(vm);
	free(seg);
	return 0;
}
