/* pnrun: run a code segment locally, for tests, benchmarks and debugging.
 *
 *   pnrun seg.pno [--entry NAME] [--arg N ...] [--args-str S | --args-file F]
 *                 [--region NAME=SIZE[:ro|:rw] | NAME=@FILE[:ro|:rw] ...]
 *                 [--fuel N] [--out-cap N] [--stats]
 *
 * The output bytes go to standard output, "result: N" (or the trap) to standard error.
 * Exit status: 0 when the entry returned, 3 on a trap, 1 on a load or usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vm.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: pnrun SEGMENT.pno [options]\n"
	        "  --entry NAME              exported function to run (default: main)\n"
	        "  --arg N                   an integer argument of the entry (repeat per argument)\n"
	        "  --args-str S              the run's argument bytes (region 'args')\n"
	        "  --args-file F             the argument bytes from a file\n"
	        "  --region NAME=SIZE[:ro|:rw]   anonymous zeroed region (SIZE like 4096, 64K, 16M, 1G)\n"
	        "  --region NAME=@FILE[:ro|:rw]  a file mapped as a region (rw writes go to the file)\n"
	        "  --fuel N                  budget of backward jumps and calls (default %llu)\n"
	        "  --out-cap N               output limit in bytes (default 16M)\n"
	        "  --stats                   print fuel used and run time to stderr\n",
	        (unsigned long long)VM_DEFAULT_FUEL);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static void *read_file(const char *path, size_t *len)
{
	void *buf;
	return isa_read_file(path, &buf, len) == 0 ? buf : NULL;
}

/* NAME=SIZE[:ro|:rw] or NAME=@FILE[:ro|:rw]; binds the region into vm. */
static int add_region(struct vm *vm, char *spec)
{
	char *eq = strchr(spec, '=');
	if (!eq) {
		fprintf(stderr, "pnrun: --region %s: expected NAME=SIZE or NAME=@FILE\n", spec);
		return -1;
	}
	*eq = '\0';
	char *what = eq + 1;
	unsigned access = ISA_ACC_RW;
	char *colon = strrchr(what, ':');
	if (colon && (!strcmp(colon, ":ro") || !strcmp(colon, ":rw"))) {
		access = !strcmp(colon, ":ro") ? ISA_ACC_RO : ISA_ACC_RW;
		*colon = '\0';
	}
	void *base;
	uint64_t len;
	if (what[0] == '@') {
		int fd = open(what + 1, access == ISA_ACC_RW ? O_RDWR : O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0) {
			fprintf(stderr, "pnrun: region %s: %s: %s\n", spec, what + 1, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		len = (uint64_t)st.st_size;
		base = len ? mmap(NULL, len, PROT_READ | (access == ISA_ACC_RW ? PROT_WRITE : 0),
		                  MAP_SHARED, fd, 0) : NULL;
		close(fd);
		if (base == MAP_FAILED) {
			fprintf(stderr, "pnrun: region %s: mmap %s: %s\n", spec, what + 1, strerror(errno));
			return -1;
		}
	} else {
		if (parse_size(what, &len) != 0) {
			fprintf(stderr, "pnrun: region %s: bad size '%s'\n", spec, what);
			return -1;
		}
		base = len ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
		           : NULL;
		if (base == MAP_FAILED) {
			fprintf(stderr, "pnrun: region %s: mmap: %s\n", spec, strerror(errno));
			return -1;
		}
	}
	int rc = vm_bind_region(vm, spec, base, len, access);
	if (rc != 0) {
		fprintf(stderr, "pnrun: region %s: %s\n", spec, vm_strerror(rc));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *seg_path = NULL, *entry = "main";
	int64_t args[256];
	unsigned n_args = 0;
	char *argbytes = NULL;
	size_t argbytes_len = 0;
	uint64_t fuel = 0, out_cap = 16u << 20;
	int stats = 0;
	struct vm *vm = vm_new();
	if (!vm) {
		fprintf(stderr, "pnrun: out of memory\n");
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			vm_free(vm);
			return 0;
		} else if (!strcmp(a, "--stats")) {
			stats = 1;
			continue;
		} else if (a[0] != '-' || !strcmp(a, "-")) {
			if (seg_path) {
				fprintf(stderr, "pnrun: more than one segment given\n");
				return 1;
			}
			seg_path = a;
			continue;
		}
		if (!val) {
			fprintf(stderr, "pnrun: %s needs a value\n", a);
			return 1;
		}
		i++;
		if (!strcmp(a, "--entry")) {
			entry = val;
		} else if (!strcmp(a, "--arg")) {
			char *end;
			errno = 0;
			long long v = strtoll(val, &end, 0);
			if (errno == ERANGE || *end || end == val) {
				errno = 0;   /* allow unsigned 64-bit values too */
				v = (long long)strtoull(val, &end, 0);
				if (errno || *end || end == val) {
					fprintf(stderr, "pnrun: --arg %s: not an integer\n", val);
					return 1;
				}
			}
			if (n_args == sizeof args / sizeof args[0]) {
				fprintf(stderr, "pnrun: too many --arg\n");
				return 1;
			}
			args[n_args++] = v;
		} else if (!strcmp(a, "--args-str")) {
			free(argbytes);
			argbytes = strdup(val);
			argbytes_len = strlen(val);
		} else if (!strcmp(a, "--args-file")) {
			free(argbytes);
			argbytes = read_file(val, &argbytes_len);
			if (!argbytes) {
				fprintf(stderr, "pnrun: %s: %s\n", val, strerror(errno));
				return 1;
			}
		} else if (!strcmp(a, "--region")) {
			if (add_region(vm, argv[i]) != 0)
				return 1;
		} else if (!strcmp(a, "--fuel")) {
			if (parse_size(val, &fuel) != 0 || fuel == 0) {
				fprintf(stderr, "pnrun: --fuel %s: not a positive number\n", val);
				return 1;
			}
		} else if (!strcmp(a, "--out-cap")) {
			if (parse_size(val, &out_cap) != 0) {
				fprintf(stderr, "pnrun: --out-cap %s: not a size\n", val);
				return 1;
			}
		} else {
			fprintf(stderr, "pnrun: unknown option %s (see --help)\n", a);
			return 1;
		}
	}
	if (!seg_path) {
		usage(stderr);
		return 1;
	}
	size_t seg_len;
	void *seg = read_file(seg_path, &seg_len);
	if (!seg) {
		fprintf(stderr, "pnrun: %s: %s\n", seg_path, strerror(errno));
		return 1;
	}
	char err[512];
	struct vm_prog *prog;
	if (vm_load(vm, seg, seg_len, &prog, err, sizeof err) != 0) {
		fprintf(stderr, "pnrun: %s: %s\n", seg_path, err);
		return 1;
	}
	unsigned want;
	int fi = vm_prog_entry(prog, entry, &want);
	if (fi < 0) {
		fprintf(stderr, "pnrun: %s: no exported entry '%s'\n", seg_path, entry);
		return 1;
	}
	if (want != n_args) {
		fprintf(stderr, "pnrun: entry '%s' takes %u argument%s, %u given (--arg)\n", entry,
		        want, want == 1 ? "" : "s", n_args);
		return 1;
	}
	void *out = out_cap ? malloc(out_cap) : NULL;
	if (out_cap && !out) {
		fprintf(stderr, "pnrun: cannot allocate %" PRIu64 " bytes of output\n", out_cap);
		return 1;
	}
	struct vm_run_opts opts = { .args = argbytes, .args_len = argbytes_len, .out = out,
	                            .out_cap = out_cap, .fuel = fuel };
	struct vm_result res;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = vm_run(prog, (unsigned)fi, args, n_args, &opts, &res);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fwrite(out, 1, res.out_len, stdout);
	fflush(stdout);
	int status = 0;
	if (rc == 0) {
		fprintf(stderr, "result: %" PRId64 "\n", res.value);
	} else if (rc == -VM_ETRAP) {
		char buf[400];
		fprintf(stderr, "pnrun: %s\n", vm_trap_str(prog, &res.trap, buf, sizeof buf));
		status = 3;
	} else {
		fprintf(stderr, "pnrun: run: %s\n", vm_strerror(rc));
		status = 1;
	}
	if (stats)
		fprintf(stderr, "fuel used: %" PRIu64 ", time: %.3f ms\n", res.fuel_used,
		        (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	free(out);
	free(seg);
	free(argbytes);
	vm_prog_free(prog);
	vm_free(vm);
	return status;
}
