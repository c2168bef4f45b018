/* test_threads.c: one loaded program run by many threads at once.
 *
 * vm.h promises that a struct vm_prog is immutable and every run keeps its own state.  Here
 * THREADS threads run the same program concurrently: each adds its own id RUNS times to a
 * shared counter with fadd, claims slots of a shared table with cas, and returns a value
 * computed from its own arguments and output.  Lost updates, a shared frame or a shared output
 * length show up as wrong totals.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "vm.h"

#define THREADS 4
#define RUNS    2000
#define SLOTS   64
#define ADDS    200     /* fadds per run: long enough for runs to overlap */

static const char src[] =
	".region shared rw\n"
	"; work(id, n): fadd id into shared[0] n times; claim slot id*8 of the table by cas;\n"
	"; write id into the output 3 times; return id * 1000 + output length\n"
	".func work id n\n"
	".local i\n"
	"loop:\n"
	"\tpush 0\n\tlget id\n\tfadd shared\n\tdrop\n"
	"\tlinc i, 1\n\tlget i\n\tlget n\n\tjltu loop\n"
	"\tlget id\n\tpush 8\n\tmul\n\tpush 8\n\tadd\n\tpush 0\n\tlget id\n\tpush 1\n\tadd\n"
	"\tcas shared\n\tdrop\n"
	"\tlget id\n\toutb\n\tlget id\n\toutb\n\tlget id\n\toutb\n"
	"\tlget id\n\tpush 1000\n\tmul\n\trlen out\n\tadd\n\tret\n"
	".end\n.export work\n";

static struct vm_prog *prog;
static _Alignas(8) uint64_t shared[1 + SLOTS];
static int bad_runs[THREADS];

static void *worker(void *arg)
{
	int64_t id = (int64_t)(intptr_t)arg;
	uint8_t out[8];
	for (int r = 0; r < RUNS; r++) {
		int64_t argv[2] = { id, ADDS };
		struct vm_run_opts o = { .out = out, .out_cap = sizeof out };
		struct vm_result res;
		if (vm_run(prog, 0, argv, 2, &o, &res) != 0 || res.value != id * 1000 + 3 ||
		    res.out_len != 3 || out[0] != id || out[1] != id || out[2] != id)
			bad_runs[id]++;
	}
	return NULL;
}

int main(void)
{
	int passed = 0, failed = 0;
	uint8_t *seg;
	size_t seg_len;
	char *diags = NULL, err[256];
	struct vm *vm = vm_new();
	if (asm_assemble(src, sizeof src - 1, "threads.pna", &seg, &seg_len, &diags) != 0 ||
	    vm_bind_region(vm, "shared", shared, sizeof shared, ISA_ACC_RW) != 0 ||
	    vm_load(vm, seg, seg_len, &prog, err, sizeof err) != 0) {
		printf("setup failed: %s %s\n0 passed, 1 failed\n", diags ? diags : "", err);
		return 1;
	}
	pthread_t th[THREADS];
	for (intptr_t i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);

	uint64_t want = 0;
	for (int i = 0; i < THREADS; i++)
		want += (uint64_t)i * ADDS * RUNS;
	if (shared[0] == want) passed++;
	else { failed++; printf("FAIL: fadd total %llu, want %llu\n", (unsigned long long)shared[0], (unsigned long long)want); }
	for (int i = 0; i < THREADS; i++) {
		if (bad_runs[i] == 0) passed++;
		else { failed++; printf("FAIL: thread %d: %d runs returned wrong results\n", i, bad_runs[i]); }
		/* the first cas on slot i succeeded, every later one saw it taken */
		if (shared[1 + i] == (uint64_t)i + 1) passed++;
		else { failed++; printf("FAIL: slot %d holds %llu\n", i, (unsigned long long)shared[1 + i]); }
	}
	vm_prog_free(prog);
	vm_free(vm);
	free(seg);
	free(diags);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
