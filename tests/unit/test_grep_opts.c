/* test_grep_opts.c: the command-line parser shared by pngrep and arf grep (grep/options.c).
 *
 * A table of argv's, each with what grep_args_parse returns and either the parsed fields
 * (written as a summary of what differs from the defaults) or the exact message grep prints.
 * The programs' outputs against GNU grep itself are tests/grep/diff.sh and arf_grep.sh.
 * Prints "N passed, N failed" last; exits 1 on any failure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grep.h"

static unsigned n_pass, n_fail;

#define MAX_ARGS 12
/* grep's usage hint, after some of its messages */
#define HINT "Usage: grep [OPTION]... PATTERNS [FILE]...\n" \
             "Try 'grep --help' for more information.\n"
#define PATS_FILE "@PATS"         /* in an argv: replaced by a file holding "foo\nba.\n" */

struct buf {
	char s[1024];
	size_t len;
};

static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->s + b->len, sizeof b->s - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (size_t)n < sizeof b->s - b->len ? (size_t)n : sizeof b->s - b->len - 1;
}

static void put_strv(struct buf *b, const char *name, const struct grep_strv *s)
{
	if (!s->n)
		return;
	put(b, " %s=", name);
	for (size_t i = 0; i < s->n; i++)
		put(b, "%s[%s]", i ? "," : "", s->v[i]);
}

/* What the parse gave, apart from the defaults: "E icase max_count=3 pats=[foo] files=[a]". */
static void summary(struct buf *b, const struct grep_args *ga, const char *explain,
                    const char *engine)
{
	const struct grep_opts *o = &ga->o;
	static const char *const syntax[] = { [GREP_FIXED] = "F", [GREP_BASIC] = "G",
	                                      [GREP_EXTENDED] = "E" };
	put(b, "%s", syntax[o->syntax]);
#define FLAG(f, x) if (x) put(b, " %s", f)
	FLAG("icase", o->icase);
	FLAG("word", o->word);
	FLAG("line", o->line);
	FLAG("invert", o->invert);
	FLAG("count", o->count);
	FLAG("list", o->list);
	FLAG("list_nomatch", o->list_nomatch);
	FLAG("quiet", o->quiet);
	FLAG("only", o->only);
	FLAG("line_number", o->line_number);
	FLAG("byte_offset", o->byte_offset);
	FLAG("with_filename", o->with_filename);
	FLAG("null_name", o->null_name);
	FLAG("null_data", o->null_data);
	FLAG("text", o->text);
	FLAG("binary_nomatch", o->binary_nomatch);
	FLAG("color", o->color);
	FLAG("initial_tab", o->initial_tab);
	FLAG("recursive", ga->recursive);
	FLAG("deref", ga->deref);
	FLAG("no_messages", ga->no_messages);
	FLAG("explain", explain);
#undef FLAG
	if (o->max_count >= 0)
		put(b, " max_count=%lld", (long long)o->max_count);
	if (o->before >= 0)
		put(b, " before=%d", o->before);
	if (o->after >= 0)
		put(b, " after=%d", o->after);
	if (ga->label)
		put(b, " label=%s", ga->label);
	if (engine)
		put(b, " engine=%s", engine);
	put_strv(b, "pats", &ga->pats);
	put_strv(b, "files", &ga->files);
	put_strv(b, "include", &ga->include);
	put_strv(b, "exclude", &ga->exclude);
	put_strv(b, "exclude_dir", &ga->exclude_dir);
}

/* rc: what grep_args_parse returns; out: the summary (rc 0), or the message (rc -1). */
static const struct {
	const char *argv[MAX_ARGS];
	int rc;
	const char *out;
} cases[] = {
	/* the pattern, operands, "--" */
	{ { "foo" }, 0, "G pats=[foo]" },
	{ { "foo", "a" }, 0, "G pats=[foo] files=[a]" },
	{ { "foo", "a", "b" }, 0, "G with_filename pats=[foo] files=[a],[b]" },
	{ { "foo", "-" }, 0, "G pats=[foo] files=[-]" },
	{ { "foo\nbar", "a" }, 0, "G pats=[foo],[bar] files=[a]" },
	{ { "-e", "foo\n", "a" }, 0, "G pats=[foo],[] files=[a]" },
	{ { "-e", "foo", "-e", "bar", "a" }, 0, "G pats=[foo],[bar] files=[a]" },
	{ { "-efoo", "a" }, 0, "G pats=[foo] files=[a]" },
	{ { "-e", "" }, 0, "G pats=[]" },
	{ { "--regexp=foo", "--regexp", "-x" }, 0, "G pats=[foo],[-x]" },
	{ { "--", "-e", "a" }, 0, "G pats=[-e] files=[a]" },
	{ { "-e", "foo", "--", "-x" }, 0, "G pats=[foo] files=[-x]" },
	{ { "foo", "--", "--", "-" }, 0, "G with_filename pats=[foo] files=[--],[-]" },
	{ { "-f", PATS_FILE, "a" }, 0, "G pats=[foo],[ba.] files=[a]" },
	{ { "-f", PATS_FILE, "-e", "zzz" }, 0, "G pats=[foo],[ba.],[zzz]" },
	{ { "--file=" PATS_FILE, "-ex" }, 0, "G pats=[foo],[ba.],[x]" },
	/* precedence: the last one wins */
	{ { "-E", "-F", "x" }, 0, "F pats=[x]" },
	{ { "-F", "-G", "x" }, 0, "G pats=[x]" },
	{ { "-G", "--extended-regexp", "x" }, 0, "E pats=[x]" },
	{ { "--basic-regexp", "--fixed-strings", "x" }, 0, "F pats=[x]" },
	{ { "-lL", "x" }, 0, "G list_nomatch pats=[x]" },
	{ { "-Ll", "x" }, 0, "G list pats=[x]" },
	{ { "--files-without-match", "--files-with-matches", "x" }, 0, "G list pats=[x]" },
	{ { "-aI", "x" }, 0, "G binary_nomatch pats=[x]" },
	{ { "-Ia", "x" }, 0, "G text pats=[x]" },
	{ { "--binary-files=without-match", "--text", "x" }, 0, "G text pats=[x]" },
	{ { "-a", "--binary-files", "binary", "x" }, 0, "G pats=[x]" },
	{ { "--binary-files=text", "x" }, 0, "G text pats=[x]" },
	{ { "-Hh", "x", "a", "b" }, 0, "G pats=[x] files=[a],[b]" },
	{ { "-hH", "x", "a" }, 0, "G with_filename pats=[x] files=[a]" },
	{ { "--no-filename", "-r", "x" }, 0, "G recursive pats=[x]" },
	{ { "-r", "x" }, 0, "G with_filename recursive pats=[x]" },
	{ { "-R", "x", "d" }, 0, "G with_filename recursive deref pats=[x] files=[d]" },
	{ { "--dereference-recursive", "x" }, 0, "G with_filename recursive deref pats=[x]" },
	{ { "-i", "--no-ignore-case", "x" }, 0, "G pats=[x]" },
	{ { "--ignore-case", "x" }, 0, "G icase pats=[x]" },
	{ { "-y", "x" }, 0, "G icase pats=[x]" },
	{ { "-C2", "-A0", "x" }, 0, "G before=2 after=0 pats=[x]" },
	{ { "-A", "1", "-B0", "-C", "5", "x" }, 0, "G before=5 after=5 pats=[x]" },
	{ { "--context=3", "--after-context", "1", "x" }, 0, "G before=3 after=1 pats=[x]" },
	{ { "--before-context=4", "x" }, 0, "G before=4 pats=[x]" },
	{ { "-m", "99999999999", "x" }, 0, "G max_count=2147483647 pats=[x]" },
	{ { "-m0", "x" }, 0, "G max_count=0 pats=[x]" },
	{ { "--max-count", "2", "x" }, 0, "G max_count=2 pats=[x]" },
	/* each letter, bundled, and its long form */
	{ { "-ivxwcnbosqzZTUa", "x" }, 0,
	  "G icase word line invert count quiet only line_number byte_offset null_name null_data "
	  "text initial_tab no_messages pats=[x]" },
	{ { "-sdskip", "x" }, 0, "G no_messages pats=[x]" },
	{ { "-d", "read", "x" }, 0, "G pats=[x]" },
	{ { "--invert-match", "--word-regexp", "--line-regexp", "--count", "--line-number",
	    "--byte-offset", "--only-matching", "--quiet", "--no-messages", "x" }, 0,
	  "G word line invert count quiet only line_number byte_offset no_messages pats=[x]" },
	{ { "--silent", "--with-filename", "--null", "--null-data", "x" }, 0,
	  "G quiet with_filename null_name null_data pats=[x]" },
	{ { "--count=5", "--null=1", "x" }, 0, "G count null_name pats=[x]" },
	{ { "--label=stdin", "--label", "in", "x" }, 0, "G label=in pats=[x]" },
	{ { "--include=*.c", "--include", "*.h", "--exclude=a*", "--exclude-dir", "d", "-r",
	    "x" }, 0,
	  "G with_filename recursive pats=[x] include=[*.c],[*.h] exclude=[a*] exclude_dir=[d]" },
	{ { "--color=always", "x" }, 0, "G color pats=[x]" },
	{ { "--colour=force", "--color=never", "x" }, 0, "G pats=[x]" },
	{ { "--color=yes", "x" }, 0, "G color pats=[x]" },
	{ { "--color=no", "--color=always", "--color=none", "x" }, 0, "G pats=[x]" },
	/* the program's own options (explain: a flag, engine: a value) */
	{ { "--explain", "x" }, 0, "G explain pats=[x]" },
	{ { "--explain=1", "x" }, 0, "G explain pats=[x]" },
	{ { "--engine=jit", "x" }, 0, "G engine=jit pats=[x]" },
	{ { "--engine", "interp", "--engine=", "x" }, 0, "G engine= pats=[x]" },
	/* --help: the rest is not read */
	{ { "--help" }, 1, "" },
	{ { "-e", "x", "--help", "--frob" }, 1, "" },
	{ { "--help=x" }, 1, "" },
	/* errors: grep's messages and usage hint */
	{ { NULL }, -1, HINT },
	{ { "-i" }, -1, HINT },
	{ { "--" }, -1, HINT },
	{ { "-e" }, -1, "grep: option requires an argument -- 'e'\n" HINT },
	{ { "x", "-iA" }, -1, "grep: option requires an argument -- 'A'\n" HINT },
	{ { "-Q", "x" }, -1, "grep: invalid option -- 'Q'\n" HINT },
	{ { "-iQ", "--help" }, -1, "grep: invalid option -- 'Q'\n" HINT },
	{ { "--frob", "--help" }, -1, "grep: unrecognized option '--frob'\n" HINT },
	/* long options by their full name only (GNU grep also takes "--col": not yet) */
	{ { "--col=always", "x" }, -1, "grep: unrecognized option '--col=always'\n" HINT },
	{ { "--local", "x" }, -1, "grep: unrecognized option '--local'\n" HINT },
	{ { "--max-count" }, -1, "grep: option '--max-count' requires an argument\n" },
	{ { "--engine" }, -1, "grep: option '--engine' requires an argument\n" },
	{ { "x", "--label" }, -1, "grep: option '--label' requires an argument\n" },
	{ { "--binary-files" }, -1, "grep: option '--binary-files' requires an argument\n" },
	{ { "-m", "x", "y" }, -1, "grep: invalid max count argument\n" },
	{ { "--max-count=-1", "y" }, -1, "grep: invalid max count argument\n" },
	{ { "-m1x", "y" }, -1, "grep: invalid max count argument\n" },
	{ { "-A", "", "y" }, -1, "grep: invalid context length argument\n" },
	{ { "-C", "99999999999999999999", "y" }, -1, "grep: invalid context length argument\n" },
	{ { "--context=3x", "y" }, -1, "grep: invalid context length argument\n" },
	{ { "--color=bogus", "y" }, -1, "grep: invalid argument 'bogus' for '--color'\n" },
	{ { "--binary-files=foo", "y" }, -1, "grep: unknown binary-files type\n" },
	{ { "-f", "/nonexistent/pats", "-Q" }, -1,
	  "grep: /nonexistent/pats: No such file or directory\n" },
};

static void run_case(size_t i, const char *pats_path)
{
	char *argv[MAX_ARGS + 1] = { "grep" };
	int argc = 1;
	for (; argc <= MAX_ARGS && cases[i].argv[argc - 1]; argc++) {
		const char *a = cases[i].argv[argc - 1];
		char *s = strstr(a, PATS_FILE);
		if (s) {        /* the placeholder, at the end of the word */
			size_t pre = (size_t)(s - a);
			char *w = malloc(pre + strlen(pats_path) + 1);
			if (!w)
				abort();
			memcpy(w, a, pre);
			strcpy(w + pre, pats_path);
			argv[argc] = w;
		} else {
			argv[argc] = (char *)a;
		}
	}
	const char *explain = NULL, *engine = NULL;
	const struct grep_extra_opt extra[] = {
		{ "explain", 0, &explain },
		{ "engine", 1, &engine },
		{ NULL, 0, NULL }
	};
	char *msg = NULL;
	size_t msg_len = 0;
	FILE *err_f = open_memstream(&msg, &msg_len);
	if (!err_f)
		abort();
	struct grep_args ga;
	int rc = grep_args_parse(&ga, argc, argv, extra, "grep", err_f);
	fclose(err_f);
	struct buf got = { .len = 0 };
	if (rc == 0)
		summary(&got, &ga, explain, engine);
	const char *out = rc == 0 ? got.s : msg;
	int ok = rc == cases[i].rc && !strcmp(out, cases[i].out) && (rc != 0 || !msg_len);
	if (ok) {
		n_pass++;
	} else {
		n_fail++;
		printf("FAIL case %zu (grep", i);
		for (int k = 1; k < argc; k++)
			printf(" '%s'", argv[k]);
		printf("): rc %d (expected %d)\n  got      \"%s\"\n  expected \"%s\"\n", rc,
		       cases[i].rc, out, cases[i].out);
		if (rc == 0 && msg_len)
			printf("  and a message: \"%s\"\n", msg);
	}
	grep_args_free(&ga);
	free(msg);
	for (int k = 1; k < argc; k++)
		if (argv[k] != cases[i].argv[k - 1])
			free(argv[k]);
}

/* --include, --exclude, --exclude-dir, matched on a name's last part */
static void test_want(void)
{
	char *argv[] = { "grep", "--include=*.c", "--include=*.h", "--exclude=skip*",
	                 "--exclude-dir=.git", "x", NULL };
	struct grep_args ga;
	int rc = grep_args_parse(&ga, 6, argv, NULL, "grep", stderr);
	static const struct { const char *name; int file, dir; } names[] = {
		{ "a.c", 1, 1 }, { "d/a.h", 1, 1 }, { "a.txt", 0, 1 }, { "skip.c", 0, 1 },
		{ "d/skip.h", 0, 1 }, { ".git", 0, 0 }, { "top/.git", 0, 0 }, { ".git/a.c", 1, 1 },
		{ "d/", 0, 1 },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		int file = rc == 0 && grep_args_want_file(&ga, names[i].name);
		int dir = rc == 0 && grep_args_want_dir(&ga, names[i].name);
		if (file == names[i].file && dir == names[i].dir) {
			n_pass++;
		} else {
			n_fail++;
			printf("FAIL want %s: file %d dir %d (expected %d %d)\n", names[i].name, file,
			       dir, names[i].file, names[i].dir);
		}
	}
	grep_args_free(&ga);
}

int main(void)
{
	char pats_path[] = "/tmp/test_grep_opts.XXXXXX";
	int fd = mkstemp(pats_path);
	if (fd < 0 || write(fd, "foo\nba.\n", 8) != 8) {
		perror("test_grep_opts: patterns file");
		return 1;
	}
	close(fd);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run_case(i, pats_path);
	test_want();
	unlink(pats_path);
	printf("%u passed, %u failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
