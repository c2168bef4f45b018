/* options.c: GNU grep 3.8's command line, parsed once for pngrep and arf grep.
 *
 * grep_args_parse fills a struct grep_args (grep.h) from argv with grep's precedence (the
 * last of -l/-L, -a/-I, -E/-F/-G wins) and grep's messages and usage hint, which it writes
 * to the caller's stream; the caller exits with status 2.  Each program's own long options
 * (--explain, --engine, --local) come in as a table, so this file knows none of them.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grep.h"
#include "isa.h"

/* Short options that take a value: the rest of the word, or the next argument. */
#define SHORT_WITH_ARG "efmABCd"
#define NUM_MAX 0x7fffffff        /* larger counts are taken as this */

struct parser {
	struct grep_args *ga;
	const char *prog;
	FILE *err_f;
	int have_pat;                 /* -e or -f given: every operand is a file */
};

/* "Usage: ..." and "Try ...", after a message or alone. */
static int usage_hint(struct parser *p)
{
	fprintf(p->err_f, "Usage: %s [OPTION]... PATTERNS [FILE]...\n"
	        "Try '%s --help' for more information.\n", p->prog, p->prog);
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

/* grep splits every pattern operand at newlines */
static int add_patterns(struct parser *p, const char *pat, size_t len)
{
	for (;;) {
		const char *nl = memchr(pat, '\n', len);
		if (!nl)
			return strv_add(p, &p->ga->pats, pat, len);
		if (strv_add(p, &p->ga->pats, pat, (size_t)(nl - pat)) != 0)
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
		rc = add_patterns(p, buf, ((char *)buf)[len - 1] == '\n' ? len - 1 : len);
	}
	free(buf);
	return rc;
}

/* A count (-m, -A, -B, -C): a decimal >= 0; what names it in the message ("max count"). */
static int num_arg(struct parser *p, const char *v, const char *what, long *out)
{
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < 0) {
		fprintf(p->err_f, "%s: invalid %s argument\n", p->prog, what);
		return -1;
	}
	*out = x > NUM_MAX ? NUM_MAX : (long)x;
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
	case 'E': o->syntax = GREP_EXTENDED; break;
	case 'F': o->syntax = GREP_FIXED; break;
	case 'G': o->syntax = GREP_BASIC; break;
	case 'e':
		p->have_pat = 1;
		return add_patterns(p, val, strlen(val));
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
		if (num_arg(p, val, "max count", &n) != 0)
			return -1;
		o->max_count = n;
		break;
	case 'r': ga->recursive = 1; break;
	case 'R': ga->recursive = ga->deref = 1; break;
	case 'A': case 'B': case 'C':
		if (num_arg(p, val, "context length", &n) != 0)
			return -1;
		if (c != 'B')
			o->after = (int)n;
		if (c != 'A')
			o->before = (int)n;
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

/* grep's long options: a letter of short_opt's, or one of these (the valued ones first). */
enum {
	L_INCLUDE = 256, L_EXCLUDE, L_EXCLUDE_DIR, L_LABEL, L_BINARY_FILES,     /* take a value */
	L_COLOR, L_NO_ICASE, L_HELP
};
static const struct { const char *name; int id; } long_opts[] = {
	{ "regexp", 'e' },              { "file", 'f' },
	{ "extended-regexp", 'E' },     { "fixed-strings", 'F' },      { "basic-regexp", 'G' },
	{ "ignore-case", 'i' },         { "no-ignore-case", L_NO_ICASE },
	{ "invert-match", 'v' },        { "word-regexp", 'w' },        { "line-regexp", 'x' },
	{ "count", 'c' },               { "files-with-matches", 'l' }, { "files-without-match", 'L' },
	{ "line-number", 'n' },         { "byte-offset", 'b' },
	{ "with-filename", 'H' },       { "no-filename", 'h' },        { "only-matching", 'o' },
	{ "quiet", 'q' },               { "silent", 'q' },             { "no-messages", 's' },
	{ "max-count", 'm' },           { "recursive", 'r' },          { "dereference-recursive", 'R' },
	{ "include", L_INCLUDE },       { "exclude", L_EXCLUDE },      { "exclude-dir", L_EXCLUDE_DIR },
	{ "after-context", 'A' },       { "before-context", 'B' },     { "context", 'C' },
	{ "color", L_COLOR },           { "colour", L_COLOR },         { "label", L_LABEL },
	{ "null", 'Z' },                { "null-data", 'z' },          { "text", 'a' },
	{ "binary-files", L_BINARY_FILES },                            { "help", L_HELP },
};

#define N_OF(a) (sizeof (a) / sizeof (a)[0])

/* "--name[=VALUE]" at argv[*i], by its full name only (no abbreviations); a value it needs
 * and does not have is argv[*i + 1].  Returns 0, 1 (--help) or -1. */
static int long_opt(struct parser *p, int argc, char **argv, int *i,
                    const struct grep_extra_opt *extra)
{
	struct grep_args *ga = p->ga;
	const char *a = argv[*i], *name = a + 2, *val = strchr(name, '=');
	size_t nlen = val ? (size_t)(val - name) : strlen(name);
	if (val)
		val++;
#define IS(s) (nlen == strlen(s) && !strncmp(name, (s), nlen))
	int id = 0;
	const struct grep_extra_opt *x = NULL;
	for (size_t k = 0; k < N_OF(long_opts) && !id; k++)
		if (IS(long_opts[k].name))
			id = long_opts[k].id;
	for (const struct grep_extra_opt *e = extra; !id && !x && e && e->name; e++)
		if (IS(e->name))
			x = e;
#undef IS
	if (!id && !x) {
		fprintf(p->err_f, "%s: unrecognized option '%s'\n", p->prog, a);
		return usage_hint(p);
	}
	int need = x ? x->has_arg : id < L_INCLUDE ? strchr(SHORT_WITH_ARG, id) != NULL
	                                          : id <= L_BINARY_FILES;
	if (need && !val) {
		if (*i + 1 >= argc) {
			fprintf(p->err_f, "%s: option '--%.*s' requires an argument\n", p->prog,
			        (int)nlen, name);
			return -1;
		}
		val = argv[++*i];
	}
	if (x) {
		*x->val = need ? val : "";
		return 0;
	}
	switch (id) {
	case L_INCLUDE: return strv_add(p, &ga->include, val, strlen(val));
	case L_EXCLUDE: return strv_add(p, &ga->exclude, val, strlen(val));
	case L_EXCLUDE_DIR: return strv_add(p, &ga->exclude_dir, val, strlen(val));
	case L_LABEL: ga->label = val; return 0;
	case L_BINARY_FILES: return binary_files_arg(p, val);
	case L_COLOR: return color_arg(p, val);          /* an optional value: --color=WHEN only */
	case L_NO_ICASE: ga->o.icase = 0; return 0;
	case L_HELP: return 1;
	default: return short_opt(p, id, val);
	}
}

/* A word of bundled letters, "-inA3" or "-e PAT". */
static int short_opts(struct parser *p, int argc, char **argv, int *i)
{
	for (const char *c = argv[*i] + 1; *c; c++) {
		const char *val = NULL;
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
	struct parser p = { .ga = ga, .prog = prog, .err_f = err_f };
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
	if (!p.have_pat) {
		/* the first operand is the pattern */
		struct grep_strv *f = &ga->files;
		if (f->n == 0)
			return usage_hint(&p);
		if (add_patterns(&p, f->v[0], f->len[0]) != 0)
			return -1;
		free(f->v[0]);
		memmove(f->v, f->v + 1, (f->n - 1) * sizeof *f->v);
		memmove(f->len, f->len + 1, (f->n - 1) * sizeof *f->len);
		f->n--;
	}
	if (ga->o.with_filename < 0)
		ga->o.with_filename = ga->files.n > 1 || ga->recursive;
	return 0;
}

void grep_args_free(struct grep_args *ga)
{
	strv_free(&ga->pats);
	strv_free(&ga->files);
	strv_free(&ga->include);
	strv_free(&ga->exclude);
	strv_free(&ga->exclude_dir);
}

/* Whether a glob of s matches the last part of name, as grep matches --include & co. */
static int matches(const struct grep_strv *s, const char *name)
{
	const char *base = strrchr(name, '/');
	base = base && base[1] ? base + 1 : name;
	for (size_t i = 0; i < s->n; i++)
		if (fnmatch(s->v[i], base, 0) == 0)
			return 1;
	return 0;
}

int grep_args_want_file(const struct grep_args *ga, const char *name)
{
	return !matches(&ga->exclude, name) && (!ga->include.n || matches(&ga->include, name));
}

int grep_args_want_dir(const struct grep_args *ga, const char *name)
{
	return !matches(&ga->exclude_dir, name);
}
