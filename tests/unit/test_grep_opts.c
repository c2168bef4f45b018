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
	FLAG("name_if_dir", ga->name_if_dir);
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
	put_strv(b, "globs", &ga->file_globs);
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
	/* -E, -F, -G: one of them, as often as wished; two different ones are an error */
	{ { "-E", "-E", "x" }, 0, "E pats=[x]" },
	{ { "-G", "--basic-regexp", "x" }, 0, "G pats=[x]" },
	{ { "-F", "--fixed-regexp", "--fixed-strings", "x" }, 0, "F pats=[x]" },
	{ { "-E", "-F", "x" }, -1, "grep: conflicting matchers specified\n" },
	{ { "-F", "-G", "x" }, -1, "grep: conflicting matchers specified\n" },
	{ { "-G", "--extended-regexp", "x" }, -1, "grep: conflicting matchers specified\n" },
	{ { "-E", "-G", "-E", "x" }, -1, "grep: conflicting matchers specified\n" },
	{ { "-EF", "-Q" }, -1, "grep: conflicting matchers specified\n" },
	{ { "-Q", "-EF" }, -1, "grep: invalid option -- 'Q'\n" HINT },
	/* precedence: the last one wins */
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
	/* -r with one operand: names only if it is a directory (the program decides) */
	{ { "-R", "x", "d" }, 0, "G recursive deref name_if_dir pats=[x] files=[d]" },
	{ { "-r", "x", "f" }, 0, "G recursive name_if_dir pats=[x] files=[f]" },
	{ { "-rh", "x", "f" }, 0, "G recursive pats=[x] files=[f]" },
	{ { "-rH", "x", "f" }, 0, "G with_filename recursive pats=[x] files=[f]" },
	{ { "-r", "x", "f", "g" }, 0, "G with_filename recursive pats=[x] files=[f],[g]" },
	/* --exclude-dir drops trailing slashes, but "/" stays */
	{ { "--exclude-dir=sub//", "--exclude-dir=/", "--exclude-dir=a/b/", "x" }, 0,
	  "G pats=[x] exclude_dir=[sub],[/],[a/b]" },
	{ { "--dereference-recursive", "x" }, 0, "G with_filename recursive deref pats=[x]" },
	{ { "-i", "--no-ignore-case", "x" }, 0, "G pats=[x]" },
	{ { "--ignore-case", "x" }, 0, "G icase pats=[x]" },
	{ { "-y", "x" }, 0, "G icase pats=[x]" },
	/* -A and -B win over -C (and -NUM) in any order; the last -C or -NUM is the default */
	{ { "-C2", "-A0", "x" }, 0, "G before=2 after=0 pats=[x]" },
	{ { "-A1", "-B0", "-C0", "x" }, 0, "G before=0 after=1 pats=[x]" },
	{ { "-A", "1", "-B0", "-C", "5", "x" }, 0, "G before=0 after=1 pats=[x]" },
	{ { "--context=3", "--after-context", "1", "x" }, 0, "G before=3 after=1 pats=[x]" },
	{ { "--before-context=4", "x" }, 0, "G before=4 pats=[x]" },
	{ { "-C", "5", "-C", "1", "x" }, 0, "G before=1 after=1 pats=[x]" },
	{ { "-C", "+3", "x" }, 0, "G before=3 after=3 pats=[x]" },
	{ { "-C", " 2", "x" }, 0, "G before=2 after=2 pats=[x]" },
	{ { "-C", "-0", "x" }, 0, "G before=0 after=0 pats=[x]" },
	{ { "-C", "010", "x" }, 0, "G before=10 after=10 pats=[x]" },
	{ { "-C", "99999999999999999999", "y" }, 0, "G before=2147483647 after=2147483647 pats=[y]" },
	/* -NUM: -C NUM, its digits contiguous in one word */
	{ { "-5", "x" }, 0, "G before=5 after=5 pats=[x]" },
	{ { "-12", "x" }, 0, "G before=12 after=12 pats=[x]" },
	{ { "-2n", "x" }, 0, "G line_number before=2 after=2 pats=[x]" },
	{ { "-n12", "x" }, 0, "G line_number before=12 after=12 pats=[x]" },
	{ { "-1n2", "x" }, 0, "G line_number before=2 after=2 pats=[x]" },
	{ { "-1", "-2", "x" }, 0, "G before=2 after=2 pats=[x]" },
	{ { "-0", "x" }, 0, "G before=0 after=0 pats=[x]" },
	{ { "-00012", "x" }, 0, "G before=12 after=12 pats=[x]" },
	{ { "-1e", "x" }, 0, "G before=1 after=1 pats=[x]" },
	{ { "-2", "-A0", "x" }, 0, "G before=2 after=0 pats=[x]" },
	{ { "-A0", "-2", "x" }, 0, "G before=2 after=0 pats=[x]" },
	{ { "-C0", "-1", "x" }, 0, "G before=1 after=1 pats=[x]" },
	{ { "-1", "-C0", "x" }, 0, "G before=0 after=0 pats=[x]" },
	{ { "-99999999999999999999", "x" }, 0, "G before=2147483647 after=2147483647 pats=[x]" },
	{ { "-e", "-1", "--", "-2" }, 0, "G pats=[-1] files=[-2]" },
	/* -m: a negative count is no limit */
	{ { "-m", "99999999999", "x" }, 0, "G max_count=2147483647 pats=[x]" },
	{ { "-m0", "x" }, 0, "G max_count=0 pats=[x]" },
	{ { "-m", "-0", "x" }, 0, "G max_count=0 pats=[x]" },
	{ { "--max-count", "2", "x" }, 0, "G max_count=2 pats=[x]" },
	{ { "-m", "-1", "x" }, 0, "G pats=[x]" },
	{ { "-m3", "--max-count=-2", "x" }, 0, "G pats=[x]" },
	{ { "-m", "-99999999999999999999", "x" }, 0, "G pats=[x]" },
	{ { "-m", "+2", "x" }, 0, "G max_count=2 pats=[x]" },
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
	{ { "--initial-tab", "--line-buffered", "--binary", "--directories=skip", "x" }, 0,
	  "G initial_tab pats=[x]" },
	{ { "--label=stdin", "--label", "in", "x" }, 0, "G label=in pats=[x]" },
	{ { "--include=*.c", "--include", "*.h", "--exclude=a*", "--exclude-dir", "d", "-r",
	    "x" }, 0,
	  "G with_filename recursive pats=[x] globs=[+*.c],[+*.h],[-a*] exclude_dir=[d]" },
	{ { "--color=always", "x" }, 0, "G color pats=[x]" },
	{ { "--colour=force", "--color=never", "x" }, 0, "G pats=[x]" },
	{ { "--color=yes", "x" }, 0, "G color pats=[x]" },
	{ { "--color=no", "--color=always", "--color=none", "x" }, 0, "G pats=[x]" },
	/* the program's own options (explain: a flag, engine: a value) */
	{ { "--explain", "x" }, 0, "G explain pats=[x]" },
	{ { "--explain=1", "x" }, -1, "grep: option '--explain' doesn't allow an argument\n" HINT },
	{ { "--expl", "--eng=jit", "x" }, 0, "G explain engine=jit pats=[x]" },
	{ { "--e", "x" }, -1, "grep: option '--e' is ambiguous; possibilities: '--extended-regexp' "
	  "'--exclude' '--exclude-from' '--exclude-dir' '--explain' '--engine'\n" HINT },
	{ { "--engine=jit", "x" }, 0, "G engine=jit pats=[x]" },
	{ { "--engine", "interp", "--engine=", "x" }, 0, "G engine= pats=[x]" },
	/* --help: once every argument was read (errors in any win) */
	{ { "--help" }, 1, "" },
	{ { "--he", "-i" }, 1, "" },
	{ { "-e", "x", "--help", "-A", "3" }, 1, "" },
	{ { "-e", "x", "--help", "--frob" }, -1, "grep: unrecognized option '--frob'\n" HINT },
	{ { "--help", "-E", "-F" }, -1, "grep: conflicting matchers specified\n" },
	{ { "--help", "-m", "x" }, -1, "grep: invalid max count\n" },
	{ { "--help=x" }, -1, "grep: option '--help' doesn't allow an argument\n" HINT },
	/* errors: grep's messages and usage hint */
	{ { NULL }, -1, HINT },
	{ { "-i" }, -1, HINT },
	{ { "--" }, -1, HINT },
	{ { "-e" }, -1, "grep: option requires an argument -- 'e'\n" HINT },
	{ { "x", "-iA" }, -1, "grep: option requires an argument -- 'A'\n" HINT },
	{ { "-Q", "x" }, -1, "grep: invalid option -- 'Q'\n" HINT },
	{ { "-iQ", "--help" }, -1, "grep: invalid option -- 'Q'\n" HINT },
	{ { "--frob", "--help" }, -1, "grep: unrecognized option '--frob'\n" HINT },
	/* long options: an unambiguous beginning of the name does (getopt_long) */
	{ { "--col=always", "x" }, 0, "G color pats=[x]" },
	{ { "--colo=never", "x" }, 0, "G pats=[x]" },
	{ { "--lab=x", "--inc=*.c", "--exclude=*.h", "x" }, 0,
	  "G label=x pats=[x] globs=[+*.c],[-*.h]" },
	{ { "--ex", "x" }, -1, "grep: option '--ex' is ambiguous; possibilities: "
	  "'--extended-regexp' '--exclude' '--exclude-from' '--exclude-dir' '--explain'\n" HINT },
	{ { "--m", "2", "--qu", "--sil", "--w", "x" }, -1, "grep: option '--w' is ambiguous; "
	  "possibilities: '--with-filename' '--word-regexp'\n" HINT },
	{ { "--m", "2", "--qu", "--sil", "--wo", "x" }, 0, "G word quiet max_count=2 pats=[x]" },
	/* the whole name wins over names it begins: --exclude, --null */
	{ { "--exclude=a", "--null", "x" }, 0, "G null_name pats=[x] globs=[-a]" },
	{ { "--f", "x" }, -1, "grep: option '--f' is ambiguous; possibilities: '--fixed-regexp' "
	  "'--file' '--files-with-matches' '--files-without-match'\n" HINT },
	{ { "--c=5", "x" }, -1, "grep: option '--c=5' is ambiguous; possibilities: '--context' "
	  "'--color' '--colour' '--count'\n" HINT },
	{ { "--no", "x" }, -1, "grep: option '--no' is ambiguous; possibilities: "
	  "'--no-ignore-case' '--no-filename' '--no-group-separator' '--no-messages'\n" HINT },
	{ { "--i", "x" }, -1, "grep: option '--i' is ambiguous; possibilities: '--include' "
	  "'--ignore-case' '--initial-tab' '--invert-match'\n" HINT },
	{ { "--a", "x" }, -1, "grep: x: invalid context length argument\n" },
	{ { "--x", "x" }, -1, "grep: unrecognized option '--x'\n" HINT },
	{ { "--perl-regexp", "x" }, -1, "grep: unrecognized option '--perl-regexp'\n" HINT },
	{ { "--local", "x" }, -1, "grep: unrecognized option '--local'\n" HINT },
	/* a value where none is taken, none where one is needed */
	{ { "--count=5", "x" }, -1, "grep: option '--count' doesn't allow an argument\n" HINT },
	{ { "--cou=", "x" }, -1, "grep: option '--count' doesn't allow an argument\n" HINT },
	{ { "--null=1", "x" }, -1, "grep: option '--null' doesn't allow an argument\n" HINT },
	{ { "--max-count" }, -1, "grep: option '--max-count' requires an argument\n" HINT },
	{ { "x", "--max" }, -1, "grep: option '--max-count' requires an argument\n" HINT },
	{ { "--engine" }, -1, "grep: option '--engine' requires an argument\n" HINT },
	{ { "x", "--label" }, -1, "grep: option '--label' requires an argument\n" HINT },
	{ { "--binary-files" }, -1, "grep: option '--binary-files' requires an argument\n" HINT },
	/* counts */
	{ { "-m", "x", "y" }, -1, "grep: invalid max count\n" },
	{ { "--max-count=", "y" }, -1, "grep: invalid max count\n" },
	{ { "-m1x", "y" }, -1, "grep: invalid max count\n" },
	{ { "-m", "1k", "y" }, -1, "grep: invalid max count\n" },
	{ { "-A", "", "y" }, -1, "grep: : invalid context length argument\n" },
	{ { "-Ax", "y" }, -1, "grep: x: invalid context length argument\n" },
	{ { "-C", "-1", "y" }, -1, "grep: -1: invalid context length argument\n" },
	{ { "-B", "1 ", "y" }, -1, "grep: 1 : invalid context length argument\n" },
	{ { "-C", "0x1", "y" }, -1, "grep: 0x1: invalid context length argument\n" },
	{ { "-C", "-99999999999999999999", "y" }, -1,
	  "grep: -99999999999999999999: invalid context length argument\n" },
	{ { "--context=3x", "y" }, -1, "grep: 3x: invalid context length argument\n" },
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

/* --include, --exclude, --exclude-dir: what grep searches (checked against GNU grep -r). */
static const struct {
	const char *globs[4];     /* options, before "x" */
	const char *name;
	int cmdline, file, dir;   /* an operand?  want_file, want_dir */
} wants[] = {
	/* met while recursing: by the last part of the name */
	{ { "--include=*.c", "--include=*.h", "--exclude=skip*", "--exclude-dir=.git" },
	  "a.c", 0, 1, 1 },
	{ { "--include=*.c", "--include=*.h", "--exclude=skip*", "--exclude-dir=.git" },
	  "d/a.h", 0, 1, 1 },
	{ { "--include=*.c", "--include=*.h", "--exclude=skip*" }, "a.txt", 0, 0, 1 },
	{ { "--include=*.c", "--include=*.h", "--exclude=skip*" }, "skip.c", 0, 0, 1 },
	{ { "--include=*.c", "--include=*.h", "--exclude=skip*" }, "d/skip.h", 0, 0, 1 },
	{ { "--exclude-dir=.git" }, ".git", 0, 1, 0 },
	{ { "--exclude-dir=.git" }, "top/.git", 0, 1, 0 },
	{ { "--exclude-dir=.git", "--include=*.c" }, ".git/a.c", 0, 1, 1 },
	{ { "--include=*.c" }, "d/", 0, 0, 1 },
	{ { "--exclude=sub*", "--exclude-dir=sub/deep" }, "./sub/d.c", 0, 1, 1 },
	{ { "--exclude=*/d.c", "--exclude-dir=sub/deep" }, "sub/deep", 0, 1, 1 },
	/* the last --include or --exclude that matches decides */
	{ { "--exclude=skip*", "--include=*.c" }, "skip.c", 0, 1, 1 },
	{ { "--include=*.c", "--exclude=*.c" }, "a.c", 0, 0, 1 },
	{ { "--exclude=*.c", "--include=*.c" }, "a.c", 0, 1, 1 },
	{ { "--include=a*", "--include=*.h", "--exclude=*.c" }, "a.c", 0, 0, 1 },
	{ { "--exclude=*.h", "--include=*.c", "--exclude=a*" }, "a.c", 0, 0, 1 },
	/* none matches: searched unless the first is an --include */
	{ { "--exclude=skip*", "--include=*.c" }, "b.h", 0, 1, 1 },
	{ { "--include=*.c", "--exclude=skip*" }, "b.h", 0, 0, 1 },
	{ { "--exclude=*.h", "--include=*.c", "--exclude=a*" }, "c.txt", 0, 1, 1 },
	{ { "--include=a*", "--include=*.h", "--exclude=*.c" }, "c.txt", 0, 0, 1 },
	{ { NULL }, "c.txt", 1, 1, 1 },
	/* operands: the whole name, or what follows a slash */
	{ { "--include=*.c" }, "b.h", 1, 0, 1 },
	{ { "--exclude=d.c", "--exclude-dir=sub" }, "sub/d.c", 1, 0, 1 },
	{ { "--exclude=sub", "--exclude-dir=sub" }, "sub/d.c", 1, 1, 1 },
	{ { "--exclude=s*", "--exclude-dir=s*" }, "sub/d.c", 1, 0, 0 },
	{ { "--exclude=sub/*" }, "sub/d.c", 1, 0, 1 },
	{ { "--exclude=*/d.c" }, "sub/d.c", 1, 0, 1 },
	{ { "--exclude=./a.c" }, "./a.c", 1, 0, 1 },
	{ { "--exclude=a.c" }, ".//a.c", 1, 0, 1 },
	{ { "--exclude-dir=sub" }, "../tr/sub", 1, 1, 0 },
	{ { "--exclude-dir=sub" }, "./sub/", 1, 1, 1 },
	{ { "--exclude-dir=." }, ".", 1, 1, 0 },
	{ { "--exclude-dir=." }, "./", 1, 1, 1 },
};

static void test_want(void)
{
	for (size_t i = 0; i < sizeof wants / sizeof wants[0]; i++) {
		char *argv[8] = { "grep" };
		int argc = 1;
		for (size_t k = 0; k < 4 && wants[i].globs[k]; k++)
			argv[argc++] = (char *)wants[i].globs[k];
		argv[argc++] = "x";
		struct grep_args ga;
		int rc = grep_args_parse(&ga, argc, argv, NULL, "grep", stderr);
		const char *name = wants[i].name;
		int file = rc == 0 && grep_args_want_file(&ga, name, wants[i].cmdline);
		int dir = rc == 0 && grep_args_want_dir(&ga, name, wants[i].cmdline);
		if (file == wants[i].file && dir == wants[i].dir) {
			n_pass++;
		} else {
			n_fail++;
			printf("FAIL want %zu %s%s: file %d dir %d (expected %d %d)\n", i, name,
			       wants[i].cmdline ? " (operand)" : "", file, dir, wants[i].file,
			       wants[i].dir);
		}
		grep_args_free(&ga);
	}
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
