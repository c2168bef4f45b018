/* pngrep: grep through the remote-grep compiler, run in a local VM.
 *
 *   pngrep [OPTIONS] PATTERN [FILE...]      (GNU grep's options; see --help)
 *
 * Compiles the patterns into a segment (libgrep), maps each file as region "data", runs the
 * segment and prints its records as GNU grep prints lines.  This is the front end arf grep
 * uses with a remote region.  Messages start with argv[0], as GNU grep's do.
 * Extra options: --explain (print the segment's assembly and exit), --engine=interp|jit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "asm.h"
#include "grep.h"
#include "vm.h"

static const char *prog = "pngrep";

struct state {
	struct grep *g;
	struct grep_opts o;
	int engine;
	int recursive, deref, no_messages, errors, any_match;
	int omit_dot;          /* -r without file operands: names without "./" */
	const char *label;
	char **include, **exclude, **exclude_dir;
	int n_include, n_exclude, n_exclude_dir;
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
	if (!st->no_messages)
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

static int excluded(char **pats, int n, const char *name)
{
	const char *base = strrchr(name, '/');
	base = base && base[1] ? base + 1 : name;
	for (int i = 0; i < n; i++)
		if (fnmatch(pats[i], base, 0) == 0)
			return 1;
	return 0;
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
		if (st->o.quiet && st->any_match)
			break;
	}
	closedir(d);
}

static void grep_path(struct state *st, const char *path, int cmdline)
{
	if (st->o.quiet && st->any_match)
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
		grep_bytes(st, st->label ? st->label : "(standard input)", buf, len);
		free(buf);
		return;
	}
	struct stat sb;
	int follow = cmdline || st->deref;
	if ((follow ? stat(path, &sb) : lstat(path, &sb)) != 0) {
		if (!cmdline && errno == ENOENT)
			return;   /* a dangling symlink met while recursing */
		file_error(st, path, errno);
		return;
	}
	if (S_ISLNK(sb.st_mode))
		return;       /* -r does not follow symlinks below the command line */
	if (S_ISDIR(sb.st_mode)) {
		if (!st->recursive) {
			file_error(st, path, EISDIR);
			return;
		}
		if (!cmdline && excluded(st->exclude_dir, st->n_exclude_dir, path))
			return;
		grep_dir(st, path);
		return;
	}
	if (!cmdline && !S_ISREG(sb.st_mode))
		return;       /* devices, fifos and sockets met while recursing are skipped */
	if (excluded(st->exclude, st->n_exclude, path) ||
	    (st->n_include && !excluded(st->include, st->n_include, path)))
		return;
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		file_error(st, path, errno);
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

/* ---- options ---- */

struct strv { char **v; size_t n, cap; size_t *len; };

static void strv_add(struct strv *s, const char *p, size_t len)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		s->len = realloc(s->len, s->cap * sizeof *s->len);
		if (!s->v || !s->len)
			die("%s", "memory exhausted");
	}
	s->v[s->n] = malloc(len + 1);
	if (!s->v[s->n])
		die("%s", "memory exhausted");
	memcpy(s->v[s->n], p, len);
	s->v[s->n][len] = '\0';
	s->len[s->n++] = len;
}

/* grep splits every pattern operand at newlines */
static void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->len);
}

static void add_patterns(struct strv *s, const char *p, size_t len)
{
	for (;;) {
		const char *nl = memchr(p, '\n', len);
		if (!nl) {
			strv_add(s, p, len);
			return;
		}
		strv_add(s, p, (size_t)(nl - p));
		len -= (size_t)(nl - p) + 1;
		p = nl + 1;
	}
}

static void add_pattern_file(struct strv *s, const char *path)
{
	void *buf = NULL;
	size_t len = 0;
	int rc;
	if (!strcmp(path, "-")) {
		size_t cap = 4096;
		uint8_t *b = malloc(cap);
		ssize_t r;
		while (b && (r = read(0, b + len, cap - len)) > 0)
			if ((len += (size_t)r) == cap)
				b = realloc(b, cap *= 2);
		if (!b)
			die("%s", "memory exhausted");
		buf = b;
		rc = 0;
	} else {
		rc = isa_read_file(path, &buf, &len);
	}
	if (rc != 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		exit(2);
	}
	if (len > 0) {
		/* a final newline ends the last pattern, it does not add an empty one */
		add_patterns(s, buf, ((char *)buf)[len - 1] == '\n' ? len - 1 : len);
	}
	free(buf);
}

static long num_arg(const char *opt, const char *v, const char *what)
{
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < 0) {
		fprintf(stderr, "%s: invalid %s argument\n", prog, what);
		exit(2);
	}
	(void)opt;
	return x > 0x7fffffff ? 0x7fffffff : (long)x;
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
	struct grep_opts *o = &st.o;
	o->syntax = GREP_BASIC;
	o->max_count = -1;
	o->before = o->after = -1;
	o->with_filename = -1;
	int color = 0, explain = 0, have_pat = 0;
	struct strv pats = { 0 }, files = { 0 }, inc = { 0 }, exc = { 0 }, excd = { 0 };
	int only_operands = 0;

	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (only_operands || a[0] != '-' || !a[1]) {
			strv_add(&files, a, strlen(a));
			continue;
		}
		if (!strcmp(a, "--")) {
			only_operands = 1;
			continue;
		}
		if (a[1] == '-') {
			char *name = a + 2, *val = strchr(name, '=');
			size_t nlen = val ? (size_t)(val - name) : strlen(name);
			if (val)
				val++;
#define IS(s) (nlen == strlen(s) && !strncmp(name, s, nlen))
#define NEED() do { if (!val) { if (i + 1 >= argc) { fprintf(stderr, "%s: option '--%.*s' requires an argument\n", prog, (int)nlen, name); exit(2); } val = argv[++i]; } } while (0)
			if (IS("regexp")) { NEED(); add_patterns(&pats, val, strlen(val)); have_pat = 1; }
			else if (IS("file")) { NEED(); add_pattern_file(&pats, val); have_pat = 1; }
			else if (IS("extended-regexp")) o->syntax = GREP_EXTENDED;
			else if (IS("fixed-strings")) o->syntax = GREP_FIXED;
			else if (IS("basic-regexp")) o->syntax = GREP_BASIC;
			else if (IS("ignore-case")) o->icase = 1;
			else if (IS("no-ignore-case")) o->icase = 0;
			else if (IS("invert-match")) o->invert = 1;
			else if (IS("word-regexp")) o->word = 1;
			else if (IS("line-regexp")) o->line = 1;
			else if (IS("count")) o->count = 1;
			else if (IS("files-with-matches")) o->list = 1, o->list_nomatch = 0;
			else if (IS("files-without-match")) o->list_nomatch = 1, o->list = 0;
			else if (IS("line-number")) o->line_number = 1;
			else if (IS("byte-offset")) o->byte_offset = 1;
			else if (IS("with-filename")) o->with_filename = 1;
			else if (IS("no-filename")) o->with_filename = 0;
			else if (IS("only-matching")) o->only = 1;
			else if (IS("quiet") || IS("silent")) o->quiet = 1;
			else if (IS("no-messages")) st.no_messages = 1;
			else if (IS("max-count")) { NEED(); o->max_count = num_arg(a, val, "max count"); }
			else if (IS("recursive")) st.recursive = 1;
			else if (IS("dereference-recursive")) st.recursive = st.deref = 1;
			else if (IS("include")) { NEED(); strv_add(&inc, val, strlen(val)); }
			else if (IS("exclude")) { NEED(); strv_add(&exc, val, strlen(val)); }
			else if (IS("exclude-dir")) { NEED(); strv_add(&excd, val, strlen(val)); }
			else if (IS("after-context")) { NEED(); o->after = (int)num_arg(a, val, "context length"); }
			else if (IS("before-context")) { NEED(); o->before = (int)num_arg(a, val, "context length"); }
			else if (IS("context")) { NEED(); o->after = o->before = (int)num_arg(a, val, "context length"); }
			else if (IS("color") || IS("colour")) {
				if (!val || !strcmp(val, "auto") || !strcmp(val, "tty") || !strcmp(val, "if-tty")) {
					const char *term = getenv("TERM");
					color = isatty(1) && term && strcmp(term, "dumb");
				} else if (!strcmp(val, "always") || !strcmp(val, "yes") || !strcmp(val, "force")) {
					color = 1;
				} else if (!strcmp(val, "never") || !strcmp(val, "no") || !strcmp(val, "none")) {
					color = 0;
				} else {
					fprintf(stderr, "%s: invalid argument '%s' for '--color'\n", prog, val);
					exit(2);
				}
			}
			else if (IS("label")) { NEED(); st.label = val; }
			else if (IS("null")) o->null_name = 1;
			else if (IS("null-data")) o->null_data = 1;
			else if (IS("text")) o->text = 1, o->binary_nomatch = 0;
			else if (IS("binary-files")) {
				NEED();
				if (!strcmp(val, "text")) o->text = 1, o->binary_nomatch = 0;
				else if (!strcmp(val, "without-match")) o->binary_nomatch = 1, o->text = 0;
				else if (!strcmp(val, "binary")) o->text = o->binary_nomatch = 0;
				else die("%s", "unknown binary-files type");
			}
			else if (IS("explain")) explain = 1;
			else if (IS("engine")) {
				NEED();
				st.engine = !strcmp(val, "interp") ? VM_ENGINE_INTERP :
				            !strcmp(val, "jit") ? VM_ENGINE_JIT : VM_ENGINE_AUTO;
			}
			else if (IS("help")) { usage(stdout); return 0; }
			else {
				fprintf(stderr, "%s: unrecognized option '%s'\n", prog, a);
				fprintf(stderr, "Usage: %s [OPTION]... PATTERNS [FILE]...\n"
				        "Try '%s --help' for more information.\n", prog, prog);
				exit(2);
			}
			continue;
		}
		for (char *c = a + 1; *c; c++) {
			char *val = NULL;
			if (strchr("efmABCd", *c)) {
				if (c[1])
					val = c + 1;
				else if (i + 1 < argc)
					val = argv[++i];
				else {
					fprintf(stderr, "%s: option requires an argument -- '%c'\n", prog, *c);
					fprintf(stderr, "Usage: %s [OPTION]... PATTERNS [FILE]...\n"
					        "Try '%s --help' for more information.\n", prog, prog);
					exit(2);
				}
			}
			switch (*c) {
			case 'E': o->syntax = GREP_EXTENDED; break;
			case 'F': o->syntax = GREP_FIXED; break;
			case 'G': o->syntax = GREP_BASIC; break;
			case 'e': add_patterns(&pats, val, strlen(val)); have_pat = 1; break;
			case 'f': add_pattern_file(&pats, val); have_pat = 1; break;
			case 'i': case 'y': o->icase = 1; break;
			case 'v': o->invert = 1; break;
			case 'w': o->word = 1; break;
			case 'x': o->line = 1; break;
			case 'c': o->count = 1; break;
			case 'l': o->list = 1; o->list_nomatch = 0; break;
			case 'L': o->list_nomatch = 1; o->list = 0; break;
			case 'n': o->line_number = 1; break;
			case 'b': o->byte_offset = 1; break;
			case 'H': o->with_filename = 1; break;
			case 'h': o->with_filename = 0; break;
			case 'o': o->only = 1; break;
			case 'q': o->quiet = 1; break;
			case 's': st.no_messages = 1; break;
			case 'm': o->max_count = num_arg("-m", val, "max count"); break;
			case 'r': st.recursive = 1; break;
			case 'R': st.recursive = st.deref = 1; break;
			case 'A': o->after = (int)num_arg("-A", val, "context length"); break;
			case 'B': o->before = (int)num_arg("-B", val, "context length"); break;
			case 'C': o->after = o->before = (int)num_arg("-C", val, "context length"); break;
			case 'z': o->null_data = 1; break;
			case 'Z': o->null_name = 1; break;
			case 'a': o->text = 1; o->binary_nomatch = 0; break;
			case 'I': o->binary_nomatch = 1; o->text = 0; break;
			case 'T': o->initial_tab = 1; break;
			case 'U': break;
			case 'd': break;
			default:
				fprintf(stderr, "%s: invalid option -- '%c'\n", prog, *c);
				fprintf(stderr, "Usage: %s [OPTION]... PATTERNS [FILE]...\n"
				        "Try '%s --help' for more information.\n", prog, prog);
				exit(2);
			}
			if (val)
				break;
		}
	}
	if (!have_pat) {
		if (files.n == 0) {
			fprintf(stderr, "Usage: %s [OPTION]... PATTERNS [FILE]...\n"
			        "Try '%s --help' for more information.\n", prog, prog);
			return 2;
		}
		add_patterns(&pats, files.v[0], files.len[0]);
		free(files.v[0]);
		memmove(files.v, files.v + 1, (files.n - 1) * sizeof *files.v);
		memmove(files.len, files.len + 1, (files.n - 1) * sizeof *files.len);
		files.n--;
	}
	o->color = color;
	if (o->with_filename < 0)
		o->with_filename = files.n > 1 || st.recursive;
	st.include = inc.v, st.n_include = (int)inc.n;
	st.exclude = exc.v, st.n_exclude = (int)exc.n;
	st.exclude_dir = excd.v, st.n_exclude_dir = (int)excd.n;

	char err[256], warn[1024];
	if (grep_compile((const char *const *)pats.v, pats.len, pats.n, o, &st.g, err, sizeof err,
	                 warn, sizeof warn) != 0) {
		fputs(warn, stderr);
		fprintf(stderr, "%s: %s\n", prog, err);
		strv_free(&pats), strv_free(&files), strv_free(&inc), strv_free(&exc), strv_free(&excd);
		return 2;
	}
	for (char *w = warn; *w;) {
		char *nl = strchr(w, '\n');
		fprintf(stderr, "%s: %.*s\n", prog, (int)(nl ? nl - w : (long)strlen(w)), w);
		w = nl ? nl + 1 : w + strlen(w);
	}
	if (explain) {
		size_t seg_len;
		const uint8_t *seg = grep_segment(st.g, &seg_len);
		char *text, desc[512];
		grep_describe(st.g, desc, sizeof desc);
		printf("; %s\n", desc);
		if (asm_disassemble(seg, seg_len, &text, err, sizeof err) != 0) {
			fprintf(stderr, "%s: %s\n", prog, err);
			return 2;
		}
		fputs(text, stdout);
		free(text);
		return 0;
	}
	if (o->max_count == 0)
		return 1;         /* grep -m 0 reads nothing */
	static char obuf[1 << 16];
	setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
	st.omit_dot = files.n == 0 && st.recursive;
	if (files.n == 0)
		grep_path(&st, st.recursive ? "." : "-", 1);
	for (size_t i = 0; i < files.n; i++)
		grep_path(&st, files.v[i], 1);
	fflush(stdout);
	grep_free(st.g);
	if (st.out)
		munmap(st.out, st.out_cap);
	strv_free(&pats), strv_free(&files), strv_free(&inc), strv_free(&exc), strv_free(&excd);
	if (o->quiet && st.any_match)
		return 0;
	return st.errors ? 2 : st.any_match ? 0 : 1;
}
