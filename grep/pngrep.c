/* pngrep: grep through the remote-grep compiler, run in a local VM.
 *
 *   pngrep [OPTIONS] PATTERN [FILE...]      (GNU grep's options; see --help)
 *
 * Compiles the patterns into a segment (libgrep), maps each file as region "data", runs the
 * segment and prints its records as GNU grep prints lines.  This is the front end arf grep
 * uses with a remote region.  Messages start with argv[0], as GNU grep's do.
 * grep's options are parsed in libgrep (grep_args_parse, as for arf grep); this program's own:
 * --explain (print the segment's assembly and exit), --engine=interp|jit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grep.h"
#include "vm.h"

static const char *prog = "pngrep";

struct state {
	struct grep *g;
	struct grep_args a;    /* the command line */
	int engine;
	int errors, any_match;
	int omit_dot;          /* -r without file operands: names without "./" */
	uint8_t *out;
	size_t out_cap;
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

/* Run the segment over one file's bytes and print what grep prints for it. */
static void grep_bytes(struct state *st, const char *name, const uint8_t *data, size_t len)
{
	char err[256];
	struct vm *vm = vm_new();
	struct vm_prog *p = NULL;
	size_t seg_len;
	const uint8_t *seg = grep_segment(st->g, &seg_len);
	static const uint8_t empty[1];
	if (!vm || vm_set_engine(vm, st->engine) != 0 ||
	    vm_bind_region(vm, "data", (void *)(len ? data : empty), len, ISA_ACC_RO) != 0 ||
	    vm_load(vm, seg, seg_len, &p, err, sizeof err) != 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, name, vm ? err : "out of memory");
		st->errors = 1;
		vm_free(vm);
		return;
	}
	uint64_t cap = GREP_OUT_CAP(len);
	if (cap > st->out_cap) {
		if (st->out)
			munmap(st->out, st->out_cap);
		/* reserved, not committed: only what the run writes is touched */
		st->out = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		               MAP_NORESERVE, -1, 0);
		if (st->out == MAP_FAILED) {
			st->out = NULL;
			st->out_cap = 0;
			die("%s", "memory exhausted");
		}
		st->out_cap = cap;
	}
	struct vm_run_opts ro = { .out = st->out, .out_cap = cap, .fuel = 2 * GREP_FUEL(len) };
	struct vm_result res;
	unsigned n_args;
	int entry = vm_prog_entry(p, "grep", &n_args);
	int rc = entry < 0 ? entry : vm_run(p, (unsigned)entry, NULL, 0, &ro, &res);
	if (rc != 0) {
		char t[300];
		fprintf(stderr, "%s: %s: %s\n", prog, name,
		        rc == -VM_ETRAP ? vm_trap_str(p, &res.trap, t, sizeof t) : vm_strerror(rc));
		st->errors = 1;
	} else {
		struct grep_file_result fr;
		int fr_rc = grep_format(st->g, prog, name, res.value, st->out, res.out_len, stdout,
		                        stderr, &fr);
		if (fr_rc == -2)
			die("%s", "memory exhausted");
		if (fr_rc != 0) {
			fprintf(stderr, "%s: %s: malformed records\n", prog, name);
			st->errors = 1;
		}
		if (fr.matched)
			st->any_match = 1;
	}
	vm_prog_free(p);
	vm_free(vm);
}

static void grep_path(struct state *st, const char *path, int cmdline);

static void grep_dir(struct state *st, const char *path)
{
	DIR *d = opendir(path);
	if (!d) {
		file_error(st, path, errno);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		size_t n = strlen(path) + strlen(e->d_name) + 2;
		char *child = malloc(n);
		if (!child)
			die("%s", "memory exhausted");
		/* "grep -r x" with no file names prints names without the leading "./" */
		if (st->omit_dot && !strcmp(path, "."))
			snprintf(child, n, "%s", e->d_name);
		else
			snprintf(child, n, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/",
			         e->d_name);
		grep_path(st, child, 0);
		free(child);
		if (st->a.o.quiet && st->any_match)
			break;
	}
	closedir(d);
}

static void grep_path(struct state *st, const char *path, int cmdline)
{
	if (st->a.o.quiet && st->any_match)
		return;
	if (!strcmp(path, "-") && cmdline) {
		/* standard input: read it whole */
		size_t cap = 1 << 16, len = 0;
		uint8_t *buf = malloc(cap);
		ssize_t r;
		while (buf && (r = read(0, buf + len, cap - len)) > 0) {
			len += (size_t)r;
			if (len == cap) {
				uint8_t *nb = realloc(buf, cap *= 2);
				if (!nb)
					free(buf);
				buf = nb;
			}
		}
		if (!buf)
			die("%s", "memory exhausted");
		grep_bytes(st, st->a.label ? st->a.label : "(standard input)", buf, len);
		free(buf);
		return;
	}
	struct stat sb;
	int follow = cmdline || st->a.deref;
	if ((follow ? stat(path, &sb) : lstat(path, &sb)) != 0) {
		if (!cmdline && errno == ENOENT)
			return;   /* a dangling symlink met while recursing */
		file_error(st, path, errno);
		return;
	}
	if (S_ISLNK(sb.st_mode))
		return;       /* -r does not follow symlinks below the command line */
	if (S_ISDIR(sb.st_mode)) {
		/* an operand too, -r or not; not the "." of -r without operands */
		if (!(cmdline && st->omit_dot) && !grep_args_want_dir(&st->a, path, cmdline))
			return;
		if (!st->a.recursive) {
			/* grep reads it as a file: the read fails, and what it prints for a file with
			 * no lines (-c's count, -L's name) follows */
			file_error(st, path, EISDIR);
			grep_bytes(st, path, NULL, 0);
			return;
		}
		grep_dir(st, path);
		return;
	}
	if (!cmdline && !S_ISREG(sb.st_mode))
		return;       /* devices, fifos and sockets met while recursing are skipped */
	if (!cmdline && !grep_args_want_file(&st->a, path, 0))
		return;
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		file_error(st, path, errno);
		return;
	}
	if (cmdline && !grep_args_want_file(&st->a, path, 1)) {
		close(fd);    /* grep checks an operand once open: an error comes first */
		return;
	}
	size_t len = (size_t)sb.st_size;
	void *base = NULL;
	if (S_ISREG(sb.st_mode) && len > 0) {
		base = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (base == MAP_FAILED) {
			file_error(st, path, errno);
			close(fd);
			return;
		}
		grep_bytes(st, path, base, len);
		munmap(base, len);
	} else {
		/* empty files and non-regular files given by name: read them */
		size_t cap = 1 << 16;
		uint8_t *buf = malloc(cap);
		ssize_t r;
		len = 0;
		while (buf && (r = read(fd, buf + len, cap - len)) > 0) {
			len += (size_t)r;
			if (len == cap) {
				uint8_t *nb = realloc(buf, cap *= 2);
				if (!nb)
					free(buf);
				buf = nb;
			}
		}
		if (!buf)
			die("%s", "memory exhausted");
		grep_bytes(st, path, buf, len);
		free(buf);
	}
	close(fd);
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: %s [OPTION]... PATTERNS [FILE]...\n"
	        "Search for PATTERNS in each FILE, as GNU grep does, through a compiled code segment.\n"
	        "  -E, -F, -G     pattern syntax: extended, fixed strings, basic (default)\n"
	        "  -e PATTERNS    use PATTERNS      -f FILE   take PATTERNS from FILE\n"
	        "  -i, -y         ignore case       -w, -x    match whole words / lines\n"
	        "  -v             select non-matching lines\n"
	        "  -c -l -L -q -s -o -n -b -H -h -z -a -I -r -R -m NUM -A NUM -B NUM -C NUM\n"
	        "  --label=LABEL --null --include=GLOB --exclude=GLOB --exclude-dir=GLOB\n"
	        "  --color[=WHEN] --binary-files=TYPE\n"
	        "  --explain      print the generated assembly and how the pattern is matched\n"
	        "  --engine=E     run on the interp or the jit (default: auto)\n", prog);
}

int main(int argc, char **argv)
{
	prog = argv[0];       /* grep names itself by its argv[0] as given, path included */
	struct state st = { 0 };
	const char *explain = NULL, *engine = NULL;
	const struct grep_extra_opt extra[] = {
		{ "explain", 0, &explain },
		{ "engine", 1, &engine },
		{ NULL, 0, NULL }
	};
	int rc = grep_args_parse(&st.a, argc, argv, extra, prog, stderr);
	if (rc != 0) {
		if (rc > 0)
			usage(stdout);
		grep_args_free(&st.a);
		return rc > 0 ? 0 : 2;
	}
	const struct grep_opts *o = &st.a.o;
	const struct grep_strv *files = &st.a.files;
	if (engine)
		st.engine = !strcmp(engine, "interp") ? VM_ENGINE_INTERP :
		            !strcmp(engine, "jit") ? VM_ENGINE_JIT : VM_ENGINE_AUTO;

	if (grep_args_compile(&st.a, prog, stderr, &st.g) != 0) {
		grep_args_free(&st.a);
		return 2;
	}
	if (explain) {
		size_t seg_len;
		const uint8_t *seg = grep_segment(st.g, &seg_len);
		rc = grep_explain(st.g, seg, seg_len, NULL, prog, stdout, stderr) == 0 ? 0 : 2;
		goto out;
	}
	if (o->max_count == 0) {
		rc = 1;           /* grep -m 0 reads nothing */
		goto out;
	}
	static char obuf[1 << 16];
	setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
	st.omit_dot = files->n == 0 && st.a.recursive;
	if (files->n == 0)
		grep_path(&st, st.a.recursive ? "." : "-", 1);
	for (size_t i = 0; i < files->n; i++)
		grep_path(&st, files->v[i], 1);
	fflush(stdout);
	rc = o->quiet && st.any_match ? 0 : st.errors ? 2 : st.any_match ? 0 : 1;
out:
	grep_free(st.g);
	if (st.out)
		munmap(st.out, st.out_cap);
	grep_args_free(&st.a);
	return rc;
}
