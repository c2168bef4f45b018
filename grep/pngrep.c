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
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "grep.h"
#include "vm.h"

static const char *prog = "pngrep";

struct dir_id {                /* a directory being searched, for -R's loops */
	dev_t dev;
	ino_t ino;
};

struct state {
	struct grep *g;
	struct grep_args a;    /* the command line */
	int engine;
	int errors, any_match;
	int omit_dot;          /* -r without file operands: names without "./" */
	int no_read;           /* nothing can be selected (-m 0, no pattern) and -L asks which
	                        * files have no selected line: open them, read nothing */
	struct stat out_sb;    /* standard output, when it is a regular file (out_reg) */
	int out_reg;
	struct dir_id *dirs;   /* the directories from the operand down to the one searched */
	size_t n_dirs, dirs_cap;
	struct grep_out out;   /* the runs' records */
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

/* grep stops at a failed write: "write error: No space left on device", status 2.  Called
 * after each file's output (errno is still the failed write's), and to flush at the end;
 * the output is not flushed per file (grep's is not either: it shows when a file is read
 * after the output went into it). */
static void check_output(int flush)
{
	if (ferror(stdout) || (flush && fflush(stdout) != 0)) {
		int err = errno;
		die("write error: %s", strerror(err));
	}
}

/* grep will not print a file's lines into that file (it would read what it wrote): unless
 * the output cannot grow with the input (-q, -l, -L, -c, -m 1), that file is an error. */
static int is_output(struct state *st, const struct stat *sb, const char *name)
{
	const struct grep_opts *o = &st->a.o;
	if (!st->out_reg || sb->st_dev != st->out_sb.st_dev || sb->st_ino != st->out_sb.st_ino ||
	    o->quiet || o->list || o->list_nomatch || o->count || o->max_count == 1)
		return 0;
	st->errors = 1;
	if (!st->a.no_messages)
		fprintf(stderr, "%s: %s: input file is also the output\n", prog, name);
	return 1;
}

/* Run the segment over data[0..len): 0 with *value and the records in st->out.buf
 * (*out_len), or -1 after the message. */
static int run_segment(struct state *st, const char *name, const uint8_t *data, size_t len,
                       int64_t *value, size_t *out_len)
{
	char err[300];
	int rc = grep_run_local(st->g, st->engine, data, len, &st->out, value, out_len, err,
	                        sizeof err);
	if (rc == -2)
		die("%s", "memory exhausted");
	if (rc != 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, name, err);
		st->errors = 1;
		return -1;
	}
	return 0;
}

/* Print what grep prints for a file whose run gave value and the records in st->out. */
static void print_file(struct state *st, const char *name, int64_t value, size_t out_len)
{
	struct grep_file_result fr;
	int rc = grep_format(st->g, prog, name, value, st->out.buf, out_len, stdout, stderr, &fr);
	if (rc == -2)
		die("%s", "memory exhausted");
	if (rc != 0) {
		fprintf(stderr, "%s: %s: malformed records\n", prog, name);
		st->errors = 1;
	}
	if (fr.matched)
		st->any_match = 1;
	check_output(0);
}

/* Run the segment over one file's bytes and print what grep prints for it; the number of
 * lines it selected (-1: the run failed). */
static int64_t grep_bytes(struct state *st, const char *name, const uint8_t *data, size_t len)
{
	int64_t value;
	size_t out_len;
	if (st->no_read) {
		value = 0;
		out_len = 0;
	} else if (run_segment(st, name, data, len, &value, &out_len) != 0) {
		return -1;
	}
	if (!st->no_read && grep_needs_exact(st->g, st->out.buf, out_len)) {
		/* UTF-8 context beside a line with an encoding error: the file again, on the
		 * exact path (grep 3.8's context rules there), nothing of the first run printed */
		struct grep *g = st->g;
		st->g = grep_redo_twin(g);
		if (!st->g)
			die("%s", "memory exhausted");
		int rc = run_segment(st, name, data, len, &value, &out_len);
		if (rc == 0)
			print_file(st, name, value, out_len);
		st->g = g;
		return rc == 0 ? value >> 2 : -1;
	}
	print_file(st, name, value, out_len);
	return value >> 2;
}

/* Streaming standard input: a part is run once this many bytes of complete lines wait */
#define STREAM_PART (4u << 20)
/* ... or once the input pauses this long (a terminal, tail -f) */
#define STREAM_PAUSE_MS 10

static int64_t ms_since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1000 + (now.tv_nsec - t->tv_nsec) / 1000000;
}

/* The start of the n-th line before end (n >= 1) in p[0..end), end just after a terminator;
 * 0 when there are fewer. */
static size_t lines_back(const uint8_t *p, size_t end, int eol, int64_t n)
{
	size_t at = end;
	while (n-- > 0 && at > 0) {
		const uint8_t *z = at > 1 ? memrchr(p, eol, at - 1) : NULL;
		at = z ? (size_t)(z - p) + 1 : 0;
	}
	return at;
}

/* Count the line terminators in p[0..n). */
static uint64_t count_lines(const uint8_t *p, size_t n, int eol)
{
	uint64_t k = 0;
	for (const uint8_t *z = p, *end = p + n; (z = memchr(z, eol, (size_t)(end - z))); z++)
		k++;
	return k;
}

/* Read what fd has into (*b)[*len..*cap), growing the buffer when it is full; 0 at the end
 * of the input or on an error (reported). */
static int read_more(struct state *st, int fd, const char *name, uint8_t **b, size_t *cap,
                     size_t *len)
{
	if (*len == *cap) {
		uint8_t *nb = realloc(*b, *cap *= 2);
		if (!nb)
			die("%s", "memory exhausted");
		*b = nb;
	}
	for (;;) {
		ssize_t r = read(fd, *b + *len, *cap - *len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			file_error(st, name, errno);
		if (r <= 0)
			return 0;
		*len += (size_t)r;
		return 1;
	}
}

/* The trailing context of the line -m selected last, past the part that selected it: up to
 * `left` more lines from b[at..*len) and then from fd, each printed as it completes, so that
 * memory stays bounded by the longest line.  `off` and `lineno` are b[at]'s. */
static void print_tail(struct state *st, int fd, const char *name, uint8_t **bp, size_t *cap,
                       size_t *len, size_t at, uint64_t off, uint64_t lineno, int64_t left,
                       int64_t *last_end)
{
	int eol = st->a.o.null_data ? '\0' : '\n';
	uint8_t *b = *bp;
	int eof = 0;
	while (left > 0) {
		uint8_t *z = at < *len ? memchr(b + at, eol, *len - at) : NULL;
		if (z || (eof && at < *len)) {
			size_t n = z ? (size_t)(z - (b + at)) : *len - at;
			if (grep_format_context_line(st->g, name, b + at, n, off, lineno, stdout,
			                             last_end) == -2)
				die("%s", "memory exhausted");
			check_output(0);
			at += n + 1;
			off += n + 1;
			lineno++;
			left--;
			continue;
		}
		if (eof)
			break;
		/* drop the lines printed, then read more of the current one */
		memmove(b, b + at, *len - at);
		*len -= at;
		at = 0;
		eof = !read_more(st, fd, name, bp, cap, len);
		b = *bp;
	}
}

/* Standard input that is not a regular file: read and searched in parts of complete lines,
 * each printed before more is read, so that memory stays bounded by a part and the longest
 * line (grep streams it too; `tail -f log | pngrep x` prints as lines come).  A part's records
 * get the file's offsets and line numbers; with context the next part starts earlier, at the
 * last B lines or at a selected line whose -A context is not complete, and the formatter
 * neither prints nor counts again what it saw already.  The search stops once it can: -q, -l
 * and -L at the first selected line, -m NUM at the NUM-th and its trailing context (`yes |
 * pngrep -m1 y` ends).  Once a part is binary the rest of the input is too, as in grep: no
 * lines printed, and without -c the search stops at the first selected line. */
static void grep_stream(struct state *st, int fd, const char *name)
{
	const struct grep_opts *o = &st->a.o;
	int eol = o->null_data ? '\0' : '\n';
	int lines = !o->count && !o->quiet && !o->list && !o->list_nomatch;
	int64_t before = lines && o->before > 0 ? o->before : 0;
	int64_t after = lines && o->after > 0 ? o->after : 0;
	int64_t want = o->quiet || o->list || o->list_nomatch ? 1 : o->max_count > 0 ?
	               o->max_count : -1;
	size_t hdr = o->line_number ? 24 : 16;
	size_t cap = 1 << 16, len = 0, done = 0;   /* b[0..done) was run */
	uint64_t base_off = 0, base_line = 1;      /* b[0]'s offset and line number in the input */
	int64_t total = 0, last_end = -1;
	int binary = 0, eof = 0, failed = 0;
	struct grep *exact = NULL, *saved = NULL;  /* the twin once a part needed it */
	struct timespec last;
	clock_gettime(CLOCK_MONOTONIC, &last);
	uint8_t *b = malloc(cap);
	if (!b)
		die("%s", "memory exhausted");
	while (!eof) {
		int run = 0;
		uint8_t *z = len > done ? memrchr(b + done, eol, len - done) : NULL;
		if (z) {
			/* complete lines wait: run them when the input pauses */
			int64_t wait = STREAM_PAUSE_MS - ms_since(&last);
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			if ((size_t)(z - b) + 1 - done >= STREAM_PART ||
			    poll(&pfd, 1, wait > 0 ? (int)wait : 0) == 0)
				run = 1;
		}
		if (!run) {
			eof = !read_more(st, fd, name, &b, &cap, &len);
			z = len > done ? memrchr(b + done, eol, len - done) : NULL;
			if (!eof && (!z || (size_t)(z - b) + 1 - done < STREAM_PART))
				continue;
		}
		/* run b[0..end): the lines not run yet, after the overlap kept from the last part */
		size_t end = eof ? len : (size_t)(z - b) + 1;
		clock_gettime(CLOCK_MONOTONIC, &last);
		if (end <= done)
			break;
		int64_t v;
		size_t out_len, keep = end;
		if (run_segment(st, name, b, end, &v, &out_len) != 0) {
			failed = 1;
			break;
		}
		if (!exact && grep_needs_exact(st->g, st->out.buf, out_len)) {
			/* UTF-8 context beside a line with an encoding error: this part again, and the
			 * rest of the input, on the exact path.  The parts before printed no such line,
			 * so the exact path would have printed them alike, and the state they leave
			 * (what was printed, selected, kept) is the same */
			exact = grep_redo_twin(st->g);
			if (!exact)
				die("%s", "memory exhausted");
			saved = st->g;
			st->g = exact;
			if (run_segment(st, name, b, end, &v, &out_len) != 0) {
				failed = 1;
				break;
			}
		}
		for (size_t i = 0; i + hdr <= out_len;) {
			uint64_t q[3];
			memcpy(q, st->out.buf + i, hdr);
			uint64_t flags = q[0] & (1ull << 63);
			q[0] = ((q[0] & ~flags) + base_off) | flags;
			q[2] += base_line - 1;
			memcpy(st->out.buf + i, q, hdr);
			i += hdr + q[1];
		}
		if (v & 1 && !o->text && !o->null_data)
			binary = 1;
		struct grep_part pt = { .new_from = (int64_t)(base_off + done),
		                        .limit = want > 0 ? want - total : -1 };
		int rc = grep_format_part(st->g, name, v | binary, st->out.buf, out_len, stdout, &last_end,
		                          &pt);
		if (rc == -2)
			die("%s", "memory exhausted");
		if (rc != 0) {
			fprintf(stderr, "%s: %s: malformed records\n", prog, name);
			st->errors = 1;
		}
		check_output(0);
		total += pt.selected;
		done = end;
		/* the last selected line's offset in b, and whether its -A context goes on */
		size_t last_sel = pt.last_selected >= (int64_t)base_off ?
		                  (size_t)(pt.last_selected - (int64_t)base_off) : end;
		int64_t after_missing = 0;
		if (after > 0 && last_sel < end) {
			const uint8_t *e = memchr(b + last_sel, eol, end - last_sel);
			uint64_t k = e ? count_lines(e + 1, (size_t)(b + end - (e + 1)), eol) : 0;
			after_missing = (int64_t)k < after ? after - (int64_t)k : 0;
		}
		if (binary && total > 0 && !o->count)
			break;       /* grep: "binary file matches" at the first selected line */
		if (want > 0 && total >= want) {
			if (after_missing > 0 && !eof && !binary)
				print_tail(st, fd, name, &b, &cap, &len, end, base_off + end,
				           base_line + count_lines(b, end, eol), after_missing, &last_end);
			break;
		}
		/* keep what the next part needs: the last B lines, a selected line whose -A
		 * context is not complete */
		if (before > 0)
			keep = lines_back(b, end, eol, before);
		if (after_missing > 0 && last_sel < keep)
			keep = last_sel;
		if (o->line_number)
			base_line += count_lines(b, keep, eol);
		memmove(b, b + keep, len - keep);
		base_off += keep;
		len -= keep;
		done -= keep;
	}
	free(b);
	if (!failed) {
		struct grep_file_result fr;
		if (grep_format_done(st->g, prog, name, total, binary, stdout, stderr, &fr) != 0)
			st->errors = 1;
		if (fr.matched)
			st->any_match = 1;
		check_output(0);
	}
	if (saved)
		st->g = saved;
}

/* Standard input (or "-"): a regular file is mapped from its offset, and left, as grep
 * leaves it, just after the last selected line when -m stopped the search; anything else is
 * read, and only until the search can stop. */
static void grep_stdin(struct state *st)
{
	const struct grep_opts *o = &st->a.o;
	const char *name = st->a.label ? st->a.label : "(standard input)";
	struct stat sb;
	int have_sb = fstat(0, &sb) == 0;
	grep_set_file_size(st->g, have_sb && S_ISREG(sb.st_mode) ? sb.st_size : -1);
	if (st->no_read) {
		grep_bytes(st, name, NULL, 0);
		return;
	}
	if (have_sb && is_output(st, &sb, name))
		return;
	off_t start = have_sb && S_ISREG(sb.st_mode) ? lseek(0, 0, SEEK_CUR) : -1;
	if (start >= 0 && start < sb.st_size) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		off_t map_off = start - start % (off_t)page;
		size_t map_len = (size_t)(sb.st_size - map_off), len = (size_t)(sb.st_size - start);
		uint8_t *base = mmap(NULL, map_len, PROT_READ, MAP_PRIVATE, 0, map_off);
		if (base == MAP_FAILED) {
			file_error(st, name, errno);
			return;
		}
		const uint8_t *data = base + (start - map_off);
		int64_t n = grep_bytes(st, name, data, len);
		int64_t end = o->max_count > 0 && n >= o->max_count ?
		              grep_selected_end(st->g, data, len, o->max_count) : -1;
		/* else it was read to its end (grep: up to a buffer after its last line) */
		lseek(0, end >= 0 ? start + end : sb.st_size, SEEK_SET);
		munmap(base, map_len);
		return;
	}
	grep_stream(st, 0, name);
}

static void grep_path(struct state *st, const char *path, int cmdline);

static void grep_dir(struct state *st, const char *path)
{
	DIR *d = opendir(path);
	if (!d) {
		file_error(st, path, errno);
		return;
	}
	/* fts joins names with one slash, whatever the operand ended with ("d//" gives "d/x") */
	size_t plen = strlen(path);
	while (plen > 1 && path[plen - 1] == '/')
		plen--;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		size_t n = plen + strlen(e->d_name) + 2;
		char *child = malloc(n);
		if (!child)
			die("%s", "memory exhausted");
		/* "grep -r x" with no file names prints names without the leading "./" */
		if (st->omit_dot && !strcmp(path, "."))
			snprintf(child, n, "%s", e->d_name);
		else
			snprintf(child, n, "%.*s%s%s", (int)plen, path, path[plen - 1] == '/' ? "" : "/",
			         e->d_name);
		grep_path(st, child, 0);
		free(child);
		if (st->a.o.quiet && st->any_match)
			break;
	}
	closedir(d);
}

/* A directory to search: not one it is already inside (-R through a symlink to a parent,
 * or a bind mount), which grep reports as a loop and skips. */
static void enter_dir(struct state *st, const char *path, const struct stat *sb)
{
	for (size_t i = 0; i < st->n_dirs; i++) {
		if (st->dirs[i].dev == sb->st_dev && st->dirs[i].ino == sb->st_ino) {
			if (!st->a.no_messages)
				fprintf(stderr, "%s: %s: warning: recursive directory loop\n", prog, path);
			return;
		}
	}
	if (st->n_dirs == st->dirs_cap) {
		st->dirs_cap = st->dirs_cap ? 2 * st->dirs_cap : 64;
		struct dir_id *v = realloc(st->dirs, st->dirs_cap * sizeof *v);
		if (!v)
			die("%s", "memory exhausted");
		st->dirs = v;
	}
	st->dirs[st->n_dirs++] = (struct dir_id){ sb->st_dev, sb->st_ino };
	grep_dir(st, path);
	st->n_dirs--;
}

static void grep_path(struct state *st, const char *path, int cmdline)
{
	if (st->a.o.quiet && st->any_match)
		return;
	if (!strcmp(path, "-") && cmdline) {
		grep_stdin(st);
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
		if (cmdline && st->a.name_if_dir)
			grep_set_with_filename(st->g, 1);
		enter_dir(st, path, &sb);
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
	grep_set_file_size(st->g, S_ISREG(sb.st_mode) ? sb.st_size : -1);
	if (st->no_read) {
		grep_bytes(st, path, NULL, 0);
	} else if (is_output(st, &sb, path)) {
		/* reported */
	} else if (S_ISREG(sb.st_mode) && sb.st_size > 0) {
		size_t len = (size_t)sb.st_size;
		void *base = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (base == MAP_FAILED) {
			file_error(st, path, errno);
		} else {
			grep_bytes(st, path, base, len);
			munmap(base, len);
		}
	} else {
		/* empty files (/proc's) and non-regular files given by name (a fifo) */
		grep_stream(st, fd, path);
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

	if (!explain && grep_args_select_none(&st.a) && !grep_args_lists_files(&st.a)) {
		grep_args_free(&st.a);
		return 1;         /* grep -m 0, or no pattern without -v: nothing is read, the
		                   * patterns are not even compiled */
	}
	if (grep_args_locale(&st.a, prog, stderr) != 0 ||
	    grep_args_compile(&st.a, prog, stderr, &st.g) != 0) {
		grep_args_free(&st.a);
		return 2;
	}
	if (explain) {
		size_t seg_len;
		const uint8_t *seg = grep_segment(st.g, &seg_len);
		rc = grep_explain(st.g, seg, seg_len, NULL, prog, stdout, stderr) == 0 ? 0 : 2;
		goto out;
	}
	st.no_read = grep_args_select_none(&st.a);   /* -L names every file it can open */
	st.out_reg = fstat(1, &st.out_sb) == 0 && S_ISREG(st.out_sb.st_mode);
	static char obuf[1 << 16];
	/* a terminal or --line-buffered sees each line as it is printed (as grep's stdio) */
	setvbuf(stdout, obuf, st.a.line_buffered || isatty(1) ? _IOLBF : _IOFBF, sizeof obuf);
	st.omit_dot = files->n == 0 && st.a.recursive;
	if (files->n == 0)
		grep_path(&st, st.a.recursive ? "." : "-", 1);
	for (size_t i = 0; i < files->n; i++)
		grep_path(&st, files->v[i], 1);
	check_output(1);
	rc = o->quiet && st.any_match ? 0 : st.errors ? 2 : st.any_match ? 0 : 1;
out:
	free(st.dirs);
	grep_free(st.g);
	grep_out_free(&st.out);
	grep_args_free(&st.a);
	return rc;
}
