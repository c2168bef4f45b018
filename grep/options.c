/* options.c: GNU grep 3.8's command line, parsed once for pngrep and arf grep.
 *
 * grep_args_parse fills a struct grep_args (grep.h) from argv with grep's precedence (the
 * last of -l/-L, -a/-I wins; -A/-B over -C; -E/-F/-G must agree) and grep's messages and
 * usage hint, which it writes to the caller's stream; the caller exits with status 2.  Long
 * options are matched as getopt_long matches them (abbreviations).  Each program's own long
 * options (--explain, --engine, --local) come in as a table, so this file knows none of them.
 * docs/grep.md lists the rules, each checked against grep 3.8.
 */
#include <errno.h>
#include <fnmatch.h>
#include <langinfo.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "asm.h"
#include "grep.h"
#include "grep_int.h"
#include "isa.h"

/* Short options that take a value: the rest of the word, or the next argument. */
#define SHORT_WITH_ARG "efmABCd"
#define NUM_MAX 0x7fffffff        /* larger counts are taken as this */

struct parser {
	struct grep_args *ga;
	const char *prog;
	FILE *err_f;
	int have_pat;                 /* -e or -f given: every operand is a file */
	int help;                     /* --help: once every option was read */
	int matcher;                  /* -E, -F or -G given (its letter), or 0 */
	long context;                 /* -C NUM or -NUM; -1: not given */
	const char *digits;           /* the -NUM digit before this one in the word, or NULL */
};

/* "Usage: ..." and "Try ...", after a message or alone: grep names itself there by the last
 * part of its argv[0] (its messages by the whole). */
static int usage_hint(struct parser *p)
{
	const char *base = strrchr(p->prog, '/');
	base = base ? base + 1 : p->prog;
	fprintf(p->err_f, "Usage: %s [OPTION]... PATTERNS [FILE]...\n"
	        "Try '%s --help' for more information.\n", base, base);
	return -1;
}

static int fail(struct parser *p, const char *what)
{
	fprintf(p->err_f, "%s: %s\n", p->prog, what);
	return -1;
}

static int strv_add(struct parser *p, struct grep_strv *s, const char *str, size_t len)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		char **v = realloc(s->v, cap * sizeof *v);
		if (v)
			s->v = v;
		size_t *lens = realloc(s->len, cap * sizeof *lens);
		if (lens)
			s->len = lens;
		if (!v || !lens)
			return fail(p, "memory exhausted");
		s->cap = cap;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return fail(p, "memory exhausted");
	memcpy(copy, str, len);
	copy[len] = '\0';
	s->v[s->n] = copy;
	s->len[s->n++] = len;
	return 0;
}

static void strv_free(struct grep_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->len);
	*s = (struct grep_strv){ 0 };
}

/* One pattern and where it came from (grep names "FILE:LINE:" in the errors of -f's). */
static int add_pattern(struct parser *p, const char *pat, size_t len, const char *file,
                       size_t line)
{
	struct grep_args *ga = p->ga;
	if (strv_add(p, &ga->pats, pat, len) != 0)
		return -1;
	if (ga->pats.n > ga->pat_src_cap) {
		size_t cap = ga->pats.cap;
		struct grep_pat_src *v = realloc(ga->pat_src, cap * sizeof *v);
		if (!v)
			return fail(p, "memory exhausted");
		ga->pat_src = v;
		ga->pat_src_cap = cap;
	}
	ga->pat_src[ga->pats.n - 1] = (struct grep_pat_src){ file, line };
	return 0;
}

/* grep splits every pattern operand at newlines; file: -f's name (NULL for -e) */
static int add_patterns(struct parser *p, const char *pat, size_t len, const char *file)
{
	for (size_t line = 1;; line++) {
		const char *nl = memchr(pat, '\n', len);
		if (!nl)
			return add_pattern(p, pat, len, file, line);
		if (add_pattern(p, pat, (size_t)(nl - pat), file, line) != 0)
			return -1;
		len -= (size_t)(nl - pat) + 1;
		pat = nl + 1;
	}
}

/* -f FILE: its lines are patterns; "-" is standard input. */
static int add_pattern_file(struct parser *p, const char *path)
{
	void *buf = NULL;
	size_t len = 0;
	if (!strcmp(path, "-")) {
		size_t cap = 4096;
		char *b = malloc(cap);
		ssize_t r;
		while (b && (r = read(0, b + len, cap - len)) > 0) {
			if ((len += (size_t)r) == cap) {
				char *nb = realloc(b, cap *= 2);
				if (!nb)
					free(b);
				b = nb;
			}
		}
		if (!b)
			return fail(p, "memory exhausted");
		buf = b;
	} else if (isa_read_file(path, &buf, &len) != 0) {
		fprintf(p->err_f, "%s: %s: %s\n", p->prog, path, strerror(errno));
		return -1;
	}
	int rc = 0;
	if (len > 0) {
		/* a final newline ends the last pattern, it does not add an empty one */
		rc = add_patterns(p, buf, ((char *)buf)[len - 1] == '\n' ? len - 1 : len, path);
	}
	free(buf);
	return rc;
}

/* A decimal as grep reads counts: leading blanks and a sign allowed, nothing after the
 * digits; too large a magnitude is taken as the largest of its sign.  0 or -1. */
static int decimal(const char *v, long long *out)
{
	char *end;
	errno = 0;
	*out = strtoll(v, &end, 10);
	return end == v || *end || (errno && errno != ERANGE) ? -1 : 0;
}

/* -A, -B, -C NUM: NUM >= 0 ("-0" and "+3" too), larger ones taken as NUM_MAX. */
static int context_arg(struct parser *p, const char *v, long *out)
{
	long long x;
	if (decimal(v, &x) != 0 || x < 0) {
		fprintf(p->err_f, "%s: %s: invalid context length argument\n", p->prog, v);
		return -1;
	}
	*out = x > NUM_MAX ? NUM_MAX : (long)x;
	return 0;
}

/* -m NUM: a negative NUM means no limit, as grep 3.8 takes it. */
static int max_count_arg(struct parser *p, const char *v)
{
	long long x;
	if (decimal(v, &x) != 0)
		return fail(p, "invalid max count");
	p->ga->o.max_count = x < 0 ? -1 : x > NUM_MAX ? NUM_MAX : x;
	return 0;
}

/* --include (kind '+') and --exclude ('-'): one list in the order given, for the last one
 * that matches a name decides. */
static int add_glob(struct parser *p, char kind, const char *glob)
{
	size_t len = strlen(glob);
	char *s = malloc(len + 2);
	if (!s)
		return fail(p, "memory exhausted");
	s[0] = kind;
	memcpy(s + 1, glob, len + 1);
	int rc = strv_add(p, &p->ga->file_globs, s, len + 1);
	free(s);
	return rc;
}

/* -E, -F, -G: grep refuses two different ones. */
static int matcher(struct parser *p, int c)
{
	if (p->matcher && p->matcher != c)
		return fail(p, "conflicting matchers specified");
	p->matcher = c;
	p->ga->o.syntax = c == 'E' ? GREP_EXTENDED : c == 'F' ? GREP_FIXED : GREP_BASIC;
	return 0;
}

/* --color[=WHEN]: auto (also without WHEN) colours when standard output is a terminal. */
static int color_arg(struct parser *p, const char *val)
{
	struct grep_opts *o = &p->ga->o;
	if (!val || !strcmp(val, "auto") || !strcmp(val, "tty") || !strcmp(val, "if-tty")) {
		const char *term = getenv("TERM");
		o->color = isatty(1) && term && strcmp(term, "dumb");
	} else if (!strcmp(val, "always") || !strcmp(val, "yes") || !strcmp(val, "force")) {
		o->color = 1;
	} else if (!strcmp(val, "never") || !strcmp(val, "no") || !strcmp(val, "none")) {
		o->color = 0;
	} else {
		fprintf(p->err_f, "%s: invalid argument '%s' for '--color'\n", p->prog, val);
		return -1;
	}
	return 0;
}

static int binary_files_arg(struct parser *p, const char *val)
{
	struct grep_opts *o = &p->ga->o;
	if (!strcmp(val, "text"))
		o->text = 1, o->binary_nomatch = 0;
	else if (!strcmp(val, "without-match"))
		o->binary_nomatch = 1, o->text = 0;
	else if (!strcmp(val, "binary"))
		o->text = o->binary_nomatch = 0;
	else
		return fail(p, "unknown binary-files type");
	return 0;
}

/* One option that has a short form, by its letter (long forms map to it): val is its value
 * for the letters of SHORT_WITH_ARG.  1: not one of grep's letters. */
static int short_opt(struct parser *p, int c, const char *val)
{
	struct grep_args *ga = p->ga;
	struct grep_opts *o = &ga->o;
	long n;
	switch (c) {
	case 'E': case 'F': case 'G':
		return matcher(p, c);
	case 'e':
		p->have_pat = 1;
		return add_patterns(p, val, strlen(val), NULL);
	case 'f':
		p->have_pat = 1;
		return add_pattern_file(p, val);
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
	case 's': ga->no_messages = 1; break;
	case 'm':
		return max_count_arg(p, val);
	case 'r': ga->recursive = 1; break;
	case 'R': ga->recursive = ga->deref = 1; break;
	case 'A': case 'B': case 'C':
		/* -A and -B win over -C, whatever their order: -C is applied at the end */
		if (context_arg(p, val, &n) != 0)
			return -1;
		if (c == 'A')
			o->after = (int)n;
		else if (c == 'B')
			o->before = (int)n;
		else
			p->context = n;
		break;
	case 'z': o->null_data = 1; break;
	case 'Z': o->null_name = 1; break;
	case 'a': o->text = 1; o->binary_nomatch = 0; break;
	case 'I': o->binary_nomatch = 1; o->text = 0; break;
	case 'T': o->initial_tab = 1; break;
	case 'U': break;              /* binary mode: no such thing here */
	case 'd': break;              /* --directories: not yet */
	default:
		return 1;
	}
	return 0;
}

/* grep's long options: a letter of short_opt's, or one of these. */
enum {
	L_INCLUDE = 256, L_EXCLUDE, L_EXCLUDE_DIR, L_LABEL, L_BINARY_FILES, L_COLOR, L_NO_ICASE,
	L_HELP, L_LINE_BUFFERED,
	L_UNSUPPORTED             /* GNU grep's, not here: "unrecognized option" */
};
enum { NO_ARG, REQ_ARG, OPT_ARG };
/* In GNU grep 3.8's order: an ambiguous abbreviation lists its possibilities in this order. */
static const struct long_opt { const char *name; int id, has_arg; } long_opts[] = {
	{ "basic-regexp", 'G', NO_ARG },            { "extended-regexp", 'E', NO_ARG },
	{ "fixed-regexp", 'F', NO_ARG },            { "fixed-strings", 'F', NO_ARG },
	{ "perl-regexp", L_UNSUPPORTED, NO_ARG },   { "after-context", 'A', REQ_ARG },
	{ "before-context", 'B', REQ_ARG },         { "binary-files", L_BINARY_FILES, REQ_ARG },
	{ "byte-offset", 'b', NO_ARG },             { "context", 'C', REQ_ARG },
	{ "color", L_COLOR, OPT_ARG },              { "colour", L_COLOR, OPT_ARG },
	{ "count", 'c', NO_ARG },                   { "devices", L_UNSUPPORTED, REQ_ARG },
	{ "directories", 'd', REQ_ARG },            { "exclude", L_EXCLUDE, REQ_ARG },
	{ "exclude-from", L_UNSUPPORTED, REQ_ARG }, { "exclude-dir", L_EXCLUDE_DIR, REQ_ARG },
	{ "file", 'f', REQ_ARG },                   { "files-with-matches", 'l', NO_ARG },
	{ "files-without-match", 'L', NO_ARG },     { "group-separator", L_UNSUPPORTED, REQ_ARG },
	{ "help", L_HELP, NO_ARG },                 { "include", L_INCLUDE, REQ_ARG },
	{ "ignore-case", 'i', NO_ARG },             { "no-ignore-case", L_NO_ICASE, NO_ARG },
	{ "initial-tab", 'T', NO_ARG },             { "label", L_LABEL, REQ_ARG },
	{ "line-buffered", L_LINE_BUFFERED, NO_ARG },        { "line-number", 'n', NO_ARG },
	{ "line-regexp", 'x', NO_ARG },             { "max-count", 'm', REQ_ARG },
	{ "no-filename", 'h', NO_ARG },             { "no-group-separator", L_UNSUPPORTED, NO_ARG },
	{ "no-messages", 's', NO_ARG },             { "null", 'Z', NO_ARG },
	{ "null-data", 'z', NO_ARG },               { "only-matching", 'o', NO_ARG },
	{ "quiet", 'q', NO_ARG },                   { "recursive", 'r', NO_ARG },
	{ "dereference-recursive", 'R', NO_ARG },   { "regexp", 'e', REQ_ARG },
	{ "invert-match", 'v', NO_ARG },            { "silent", 'q', NO_ARG },
	{ "text", 'a', NO_ARG },                    { "binary", 'U', NO_ARG },
	{ "unix-byte-offsets", L_UNSUPPORTED, NO_ARG },
	{ "version", L_UNSUPPORTED, NO_ARG },       { "with-filename", 'H', NO_ARG },
	{ "word-regexp", 'w', NO_ARG },
};

#define N_OF(a) (sizeof (a) / sizeof (a)[0])

/* Option k of grep's table followed by the program's: its name and whether it takes a value
 * (NULL past the end). */
static const char *opt_name(const struct grep_extra_opt *extra, size_t k, int *has_arg)
{
	if (k < N_OF(long_opts)) {
		*has_arg = long_opts[k].has_arg;
		return long_opts[k].name;
	}
	extra = extra ? extra + (k - N_OF(long_opts)) : NULL;
	*has_arg = extra && extra->has_arg ? REQ_ARG : NO_ARG;
	return extra ? extra->name : NULL;
}

/* Two entries that are the same option under two names (--color and --colour): an
 * abbreviation of both is not ambiguous. */
static int same_opt(size_t a, size_t b)
{
	return a < N_OF(long_opts) && b < N_OF(long_opts) &&
	       long_opts[a].id == long_opts[b].id && long_opts[a].has_arg == long_opts[b].has_arg;
}

/* The entry "--name" (before any "=") names: its full name, else the one option of which it
 * is the beginning, as getopt_long finds them.  -1 after the message when it is none or
 * ambiguous: getopt_long lists the entries that differ from the first one that fits. */
static long find_long(struct parser *p, const char *arg, size_t nlen,
                      const struct grep_extra_opt *extra)
{
	const char *name = arg + 2, *s;
	int has_arg;
	long found = -1;
	int ambiguous = 0;
	for (size_t k = 0; (s = opt_name(extra, k, &has_arg)); k++)
		if (strlen(s) == nlen && !strncmp(s, name, nlen))
			return (long)k;
	for (size_t k = 0; (s = opt_name(extra, k, &has_arg)); k++) {
		if (strncmp(s, name, nlen))
			continue;
		if (found < 0)
			found = (long)k;
		else if (!same_opt((size_t)found, k))
			ambiguous = 1;
	}
	if (found < 0) {
		fprintf(p->err_f, "%s: unrecognized option '%s'\n", p->prog, arg);
		return usage_hint(p);
	}
	if (!ambiguous)
		return found;
	fprintf(p->err_f, "%s: option '%s' is ambiguous; possibilities:", p->prog, arg);
	for (size_t k = (size_t)found; (s = opt_name(extra, k, &has_arg)); k++)
		if (!strncmp(s, name, nlen) && (k == (size_t)found || !same_opt((size_t)found, k)))
			fprintf(p->err_f, " '--%s'", s);
	fputc('\n', p->err_f);
	return usage_hint(p);
}

/* "--name[=VALUE]" at argv[*i], or an abbreviation of it; a value it needs and does not
 * have is argv[*i + 1]. */
static int long_opt(struct parser *p, int argc, char **argv, int *i,
                    const struct grep_extra_opt *extra)
{
	struct grep_args *ga = p->ga;
	const char *a = argv[*i], *val = strchr(a + 2, '=');
	size_t nlen = val ? (size_t)(val - (a + 2)) : strlen(a + 2);
	if (val)
		val++;
	long k = find_long(p, a, nlen, extra);
	if (k < 0)
		return -1;
	int has_arg;
	const char *name = opt_name(extra, (size_t)k, &has_arg);
	if (has_arg == NO_ARG && val) {
		fprintf(p->err_f, "%s: option '--%s' doesn't allow an argument\n", p->prog, name);
		return usage_hint(p);
	}
	if (has_arg == REQ_ARG && !val) {
		if (*i + 1 >= argc) {
			fprintf(p->err_f, "%s: option '--%s' requires an argument\n", p->prog, name);
			return usage_hint(p);
		}
		val = argv[++*i];
	}
	if ((size_t)k >= N_OF(long_opts)) {
		*extra[(size_t)k - N_OF(long_opts)].val = val ? val : "";
		return 0;
	}
	switch (long_opts[k].id) {
	case L_INCLUDE: return add_glob(p, '+', val);
	case L_EXCLUDE: return add_glob(p, '-', val);
	case L_EXCLUDE_DIR: {
		/* grep drops a glob's trailing slashes: --exclude-dir=sub/ is sub */
		size_t len = strlen(val);
		while (len > 1 && val[len - 1] == '/')
			len--;
		return strv_add(p, &ga->exclude_dir, val, len);
	}
	case L_LABEL: ga->label = val; return 0;
	case L_BINARY_FILES: return binary_files_arg(p, val);
	case L_COLOR: return color_arg(p, val);
	case L_NO_ICASE: ga->o.icase = 0; return 0;
	case L_HELP: p->help = 1; return 0;
	case L_LINE_BUFFERED: ga->line_buffered = 1; return 0;
	case L_UNSUPPORTED:
		fprintf(p->err_f, "%s: unrecognized option '%s'\n", p->prog, a);
		return usage_hint(p);
	default: return short_opt(p, long_opts[k].id, val);
	}
}

/* A word of bundled letters, "-inA3" or "-e PAT". */
static int short_opts(struct parser *p, int argc, char **argv, int *i)
{
	for (const char *c = argv[*i] + 1; *c; c++) {
		const char *val = NULL;
		if (*c >= '0' && *c <= '9') {
			/* -NUM is -C NUM; its digits run on only while they are next to each other
			 * in one word ("-1n2" and "-1 -2" are -C 2) */
			if (p->digits != c - 1)
				p->context = 0;
			p->context = p->context > (NUM_MAX - (*c - '0')) / 10 ? NUM_MAX
			           : 10 * p->context + (*c - '0');
			p->digits = c;
			continue;
		}
		if (strchr(SHORT_WITH_ARG, *c)) {
			if (c[1]) {
				val = c + 1;
			} else if (*i + 1 < argc) {
				val = argv[++*i];
			} else {
				fprintf(p->err_f, "%s: option requires an argument -- '%c'\n", p->prog, *c);
				return usage_hint(p);
			}
		}
		int rc = short_opt(p, *c, val);
		if (rc > 0) {
			fprintf(p->err_f, "%s: invalid option -- '%c'\n", p->prog, *c);
			return usage_hint(p);
		}
		if (rc < 0)
			return -1;
		if (val)
			break;
	}
	return 0;
}

int grep_args_parse(struct grep_args *ga, int argc, char **argv,
                    const struct grep_extra_opt *extra, const char *prog, FILE *err_f)
{
	*ga = (struct grep_args){ 0 };
	ga->o.syntax = GREP_BASIC;
	ga->o.max_count = -1;
	ga->o.before = ga->o.after = -1;
	ga->o.with_filename = -1;
	struct parser p = { .ga = ga, .prog = prog, .err_f = err_f, .context = -1 };
	int only_operands = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int rc;
		if (only_operands || a[0] != '-' || !a[1])
			rc = strv_add(&p, &ga->files, a, strlen(a));
		else if (!strcmp(a, "--"))
			rc = 0, only_operands = 1;
		else if (a[1] == '-')
			rc = long_opt(&p, argc, argv, &i, extra);
		else
			rc = short_opts(&p, argc, argv, &i);
		if (rc != 0)
			return rc;
	}
	if (p.help)
		return 1;
	if (ga->o.after < 0)
		ga->o.after = (int)p.context;
	if (ga->o.before < 0)
		ga->o.before = (int)p.context;
	if (!p.have_pat) {
		/* the first operand is the pattern */
		struct grep_strv *f = &ga->files;
		if (f->n == 0)
			return usage_hint(&p);
		if (add_patterns(&p, f->v[0], f->len[0], NULL) != 0)
			return -1;
		free(f->v[0]);
		memmove(f->v, f->v + 1, (f->n - 1) * sizeof *f->v);
		memmove(f->len, f->len + 1, (f->n - 1) * sizeof *f->len);
		f->n--;
	}
	if (ga->o.list || ga->o.list_nomatch)
		ga->o.count = 0;          /* -l and -L win over -c, in either order */
	if (ga->o.with_filename < 0) {
		/* -r names the files it finds in a directory, not a lone file operand's lines */
		ga->o.with_filename = ga->files.n > 1 || (ga->recursive && ga->files.n == 0);
		ga->name_if_dir = ga->recursive && ga->files.n == 1;
	}
	return 0;
}

void grep_args_free(struct grep_args *ga)
{
	strv_free(&ga->pats);
	strv_free(&ga->files);
	strv_free(&ga->file_globs);
	strv_free(&ga->exclude_dir);
	free(ga->pat_src);
	ga->pat_src = NULL;
}

int grep_args_lists_files(const struct grep_args *ga)
{
	/* grep forgets -L under -q, and when its output is /dev/null */
	struct stat out, null;
	if (!ga->o.list_nomatch || ga->o.quiet)
		return 0;
	return !(fstat(1, &out) == 0 && S_ISCHR(out.st_mode) && stat("/dev/null", &null) == 0 &&
	         out.st_rdev == null.st_rdev);
}

int grep_args_select_none(const struct grep_args *ga)
{
	const struct grep_opts *o = &ga->o;
	if (o->max_count == 0 || (ga->pats.n == 0 && !o->invert))
		return 1;
	/* -v of the empty pattern alone (every line matches it), unless -x or -w narrow it */
	if (!o->invert || o->line || o->word || ga->pats.n == 0)
		return 0;
	for (size_t i = 0; i < ga->pats.n; i++)
		if (ga->pats.len[i] != 0)
			return 0;
	return 1;
}

/* Whether glob matches name as grep matches --include & co: a name met while recursing by
 * its last part; a command-line operand as a whole or from after any of its slashes. */
static int glob_match(const char *glob, const char *name, int cmdline)
{
	if (!cmdline) {
		const char *base = strrchr(name, '/');
		return fnmatch(glob, base && base[1] ? base + 1 : name, 0) == 0;
	}
	if (fnmatch(glob, name, 0) == 0)
		return 1;
	for (const char *s = name; (s = strchr(s, '/')); s++)
		if (s[1] != '/' && fnmatch(glob, s + 1, 0) == 0)
			return 1;
	return 0;
}

int grep_args_want_file(const struct grep_args *ga, const char *name, int cmdline)
{
	const struct grep_strv *g = &ga->file_globs;
	for (size_t i = g->n; i-- > 0;)
		if (glob_match(g->v[i] + 1, name, cmdline))
			return g->v[i][0] == '+';
	/* none matches: searched, unless the first of them is an --include */
	return !g->n || g->v[0][0] != '+';
}

int grep_args_want_dir(const struct grep_args *ga, const char *name, int cmdline)
{
	const struct grep_strv *g = &ga->exclude_dir;
	for (size_t i = 0; i < g->n; i++)
		if (glob_match(g->v[i], name, cmdline))
			return 0;
	return 1;
}

static const struct grep_strv *sort_pats;

static int cmp_pat(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	size_t li = sort_pats->len[i], lj = sort_pats->len[j];
	int c = memcmp(sort_pats->v[i], sort_pats->v[j], li < lj ? li : lj);
	if (c == 0 && li != lj)
		c = li < lj ? -1 : 1;
	return c ? c : i < j ? -1 : i > j;
}

/* After a failed compile: each distinct pattern parsed alone, as grep checks them, and every
 * error written as grep writes it: "PROG: FILE:LINE: MSG" for a line of -f FILE, "PROG: MSG"
 * for -e's and the operand (a pattern given twice is checked once, where it came first).
 * Running out of stack or memory is the whole set's, without a place.  Returns the number
 * of errors written (0: the caller writes the compile's own message). */
static int report_pattern_errors(const struct grep_args *ga, const char *prog, FILE *err_f)
{
	const struct grep_strv *pats = &ga->pats;
	size_t n = pats->n;
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	char *dup = calloc(n ? n : 1, 1);
	if (!order || !dup) {
		free(order);
		free(dup);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	sort_pats = pats;
	qsort(order, n, sizeof *order, cmp_pat);
	for (size_t k = 1; k < n; k++) {
		size_t a = order[k - 1], b = order[k];
		dup[b] = pats->len[a] == pats->len[b] && !memcmp(pats->v[a], pats->v[b], pats->len[a]);
	}
	int errors = 0;
	for (size_t i = 0; i < n; i++) {
		char err[256], warn[256];
		struct ast t = { .utf8 = ga->o.utf8 };
		if (dup[i] || grep_parse(&t, pats->v[i], pats->len[i], ga->o.syntax, ga->o.icase, err,
		                         sizeof err, warn, sizeof warn) >= 0) {
			ast_free(&t);
			continue;
		}
		ast_free(&t);
		const struct grep_pat_src *src = &ga->pat_src[i];
		if (src->file && strcmp(err, "stack overflow") && strcmp(err, "memory exhausted"))
			fprintf(err_f, "%s: %s:%zu: %s\n", prog, src->file, src->line, err);
		else
			fprintf(err_f, "%s: %s\n", prog, err);
		errors++;
	}
	free(order);
	free(dup);
	return errors;
}

/* setlocale(LC_ALL, "") as grep calls it, but loading only the categories grep's output
 * depends on (LC_CTYPE: characters, classes, case; LC_COLLATE: ranges; LC_MESSAGES:
 * strerror's) when one name decides them all: LC_ALL, or LANG with no LC_* variable set.
 * Loading the other nine was 0.13 of the 0.19 ms C.UTF-8 added to every start-up (a bare
 * program: 0.44 ms in C, 0.63 with LC_ALL, 0.50 with these three).  As LC_ALL's, a name not
 * installed leaves every category C: a category that fails resets the others. */
static void load_locale(void)
{
	static const char *const vars[] = {
		"LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_NUMERIC", "LC_TIME", "LC_MONETARY",
		"LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT",
		"LC_IDENTIFICATION",
	};
	const char *all = getenv("LC_ALL");
	if (!all || !*all)
		for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
			const char *v = getenv(vars[i]);
			if (v && *v) {
				setlocale(LC_ALL, "");
				return;
			}
		}
	if (!setlocale(LC_CTYPE, "") || !setlocale(LC_COLLATE, "") || !setlocale(LC_MESSAGES, ""))
		setlocale(LC_ALL, "C");
}

int grep_args_locale(struct grep_args *ga, const char *prog, FILE *err_f)
{
	/* as grep: LC_ALL, then LC_CTYPE, then LANG; a locale that is not installed leaves C */
	load_locale();
	const char *cs = nl_langinfo(CODESET);
	if (!strcmp(cs, "UTF-8")) {
		ga->o.utf8 = 1;
		return 0;
	}
	if (!strcmp(cs, "ANSI_X3.4-1968")) {      /* C, POSIX: bytes, as always */
		ga->o.utf8 = 0;
		return 0;
	}
	const char *name = setlocale(LC_CTYPE, NULL);
	fprintf(err_f, "%s: locale '%s' (character set %s) is not supported: only UTF-8 locales "
	        "and C/POSIX are; try LC_ALL=C.UTF-8 or LC_ALL=C\n", prog, name ? name : "?", cs);
	return -1;
}

/* Whether grep 3.8 would take a -G/-E pattern as a plain string (it runs two or more such
 * patterns as -F): no operator of the syntax, a backslash only before a character it leaves
 * literal; a lone backslash at the end is taken as itself. */
static int plain_string(const char *p, size_t n, int ere)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (strchr("$*.[^", c) || (ere && strchr("(+?{|", c)))
			return 0;
		if (c == '\\' && i + 1 < n) {
			c = (unsigned char)p[++i];
			if (strchr("BSW'<bsw`>", c) || (c >= '1' && c <= '9') ||
			    (!ere && strchr("(+?{|", c)))
				return 0;
		}
	}
	return 1;
}

/* grep 3.8's fgrep_icase_available: -F -i in UTF-8 only when no character of the pattern
 * has a case variant of another length ("k": U+212A, "i": U+0131, "s": U+017F). */
static int icase_fixed_ok(const char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t c;
		int l = utf8_decode((const uint8_t *)p + i, n - i, &c);
		if (l == 0)
			return 0;
		struct cset s = { 0 };
		cset_add(&s, c, c);
		cset_fold(&s);
		int ok = !s.err;
		for (int k = 0; k < s.n; k++)
			ok &= c < 0x80 ? s.r[k][1] < 0x80 : s.r[k][0] == c && s.r[k][1] == c;
		cset_free(&s);
		if (!ok)
			return 0;
		i += (size_t)l;
	}
	return 1;
}

int grep_runs_fixed(const char *const *pats, const size_t *lens, size_t n,
                    const struct grep_opts *o)
{
	if (o->syntax == GREP_FIXED)
		return 0;
	/* two distinct ones: one that differs from the first (comparing each with every
	 * earlier one took 50 M memcmp calls for 10,000 patterns: 80 ms of a -w -f run) */
	int differ = 0;
	for (size_t i = 0; i < n; i++) {
		if (!plain_string(pats[i], lens[i], o->syntax == GREP_EXTENDED) ||
		    (o->utf8 && o->icase && !icase_fixed_ok(pats[i], lens[i])))
			return 0;
		differ |= lens[i] != lens[0] || memcmp(pats[i], pats[0], lens[i]) != 0;
	}
	return differ;
}

static int ends_in_lone_backslash(const char *p, size_t n)
{
	size_t k = 0;
	while (k < n && p[n - 1 - k] == '\\')
		k++;
	return k % 2 == 1;
}

static int same(const struct grep_strv *v, size_t i, size_t j)
{
	return v->len[i] == v->len[j] && memcmp(v->v[i], v->v[j], v->len[i]) == 0;
}

/* grep 3.8 runs two or more distinct -G/-E patterns that are all plain strings as -F: then a
 * backslash ending the last of them (the patterns joined by newlines: only there is it not
 * followed by one) is a literal backslash, not "Trailing backslash" (found by
 * tests/grep/random.sh: -e foo -e 'za\\' searches for "za\\").  Returns the index of that
 * pattern, or -1 when grep would compile them as regular expressions. */
static long literal_trailing_backslash(const struct grep_args *ga)
{
	const struct grep_strv *v = &ga->pats;
	if (ga->o.syntax == GREP_FIXED || v->n < 2 || (ga->o.utf8 && ga->o.icase))
		return -1;
	long last = -1;          /* the last pattern that is not a copy of an earlier one */
	for (size_t j = v->n; j-- > 0 && last < 0;) {
		size_t i = 0;
		while (i < j && !same(v, i, j))
			i++;
		if (i == j)
			last = (long)j;
	}
	if (last < 0 || !ends_in_lone_backslash(v->v[last], v->len[last]))
		return -1;
	int other = 0;
	for (size_t i = 0; i < v->n; i++) {
		if (!plain_string(v->v[i], v->len[i], ga->o.syntax == GREP_EXTENDED))
			return -1;
		other |= !same(v, i, (size_t)last);
	}
	return other ? last : -1;
}

int grep_args_compile(const struct grep_args *ga, const char *prog, FILE *err_f,
                      struct grep **g)
{
	char err[256], warn[1024];
	const char **pats = (const char **)ga->pats.v;
	const size_t *lens = ga->pats.len;
	const char **pv = NULL;
	size_t *lv = NULL;
	char *lit = NULL;
	long k = literal_trailing_backslash(ga);
	if (k >= 0) {
		/* the same patterns, the backslash doubled where grep reads it as itself */
		pv = malloc(ga->pats.n * sizeof *pv);
		lv = malloc(ga->pats.n * sizeof *lv);
		lit = malloc(ga->pats.len[k] + 2);
		if (!pv || !lv || !lit) {
			free(pv), free(lv), free(lit);
			fprintf(err_f, "%s: memory exhausted\n", prog);
			return -1;
		}
		for (size_t i = 0; i < ga->pats.n; i++) {
			int copy = same(&ga->pats, i, (size_t)k);
			pv[i] = copy ? lit : ga->pats.v[i];
			lv[i] = ga->pats.len[i] + (size_t)copy;
		}
		memcpy(lit, ga->pats.v[k], ga->pats.len[k]);
		lit[ga->pats.len[k]] = '\\';
		lit[ga->pats.len[k] + 1] = '\0';
		pats = pv;
		lens = lv;
	}
	int rc = grep_compile(pats, lens, ga->pats.n, &ga->o, g, err, sizeof err, warn,
	                      sizeof warn);
	free(pv);
	free(lv);
	free(lit);
	if (rc != 0) {
		/* grep prints no warnings then, and names every pattern in error */
		if (report_pattern_errors(ga, prog, err_f) == 0)
			fprintf(err_f, "%s: %s\n", prog, err);
		return -1;
	}
	for (char *w = warn; *w;) {
		char *nl = strchr(w, '\n');
		fprintf(err_f, "%s: %.*s\n", prog, (int)(nl ? nl - w : (long)strlen(w)), w);
		w = nl ? nl + 1 : w + strlen(w);
	}
	return 0;
}

int grep_explain(const struct grep *g, const uint8_t *seg, size_t seg_len, const char *note,
                 const char *prog, FILE *out, FILE *err_f)
{
	char *text, desc[512], err[256];
	grep_describe(g, desc, sizeof desc);
	fprintf(out, "; %s\n", desc);
	if (note)
		fprintf(out, "; %s\n", note);
	if (asm_disassemble(seg, seg_len, &text, err, sizeof err) != 0) {
		fprintf(err_f, "%s: %s\n", prog, err);
		return -1;
	}
	fputs(text, out);
	free(text);
	return 0;
}
