/* fuzz_grep.c: libFuzzer target for the grep pattern compiler.
 *
 * Input: byte 0 picks the syntax and the flags (-i -w -x -v), the rest (up to 64 bytes, cut
 * at a newline) is the pattern.  An invalid pattern must fail with a message and nothing
 * else.  A valid one is compiled to a segment and run on a fixed sample text; for every line
 * the segment's selection must equal the client's exact matcher (NFA simulation, or
 * backtracking with back-references), an independent engine.  For plain patterns (no
 * backslash, brace or leading operator, where grep and POSIX agree) the selection must also
 * equal glibc's regexec in the C locale.  Any disagreement aborts.
 * Bit 6 of byte 0: many patterns, the input's lines (up to 100), each also with a digit
 * appended until there are at least 200 (past DFA_SHARE_WIDTH: shared kernels).  Bit 7: the
 * text is the sample plus one line of the sample's bytes 300 times (long lines: the
 * backtracker's stacks, the DFA's rows).
 * UTF-8 (issue 19): when bits 0-1 of byte 0 are both set, the pattern is compiled for C.UTF-8
 * (characters, classes from isw*, -i folding) and runs on a UTF-8 sample with multibyte
 * characters and encoding errors; besides the segment against the NFA, the NFA must agree
 * with the backtracker on every short line, and plain patterns with glibc's regexec in
 * C.UTF-8 on the lines without encoding errors.
 */
#include <locale.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"
#include "vm.h"

static const char sample[] =
	"hello world\nfoo bar baz\nHello World\nabc abcabc\n\nfoo_bar foo-bar\naaa\nabab\n"
	"x1 y_2 [z] (q) a.b a*b\nthe end\n\t tab\nABC\nzzz";

static const char sample_utf8[] =
	"café naïve École\nstraße STRASSE Σίσυφος σοφός\n日本語のテキスト 中文\nemoji 😀🎉 x\n"
	"e\xcc\x81 combining a\xcc\x80\nbad \xff byte\ncut \xc3\nover \xc0\xaf slash\n"
	"foo_bar été-été\nΑΒΓ αβγ ſ \xe2\x84\xaa ǅ ı İ\n\nhello world\nabc ABC\nКириллица мир";

static int plain(const char *p, size_t n)
{
	if (n == 0 || strchr("*+?{|)", p[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		/* anchors anywhere but at the ends ("^^a", "a^b") are where glibc's regexec and
		 * GNU grep part ways (found by this target: /^^a.*a.*b$/ on "abab"): not plain */
		if ((p[i] == '^' && i != 0) || (p[i] == '$' && i != n - 1) ||
		    p[i] == '\\' || p[i] == '{' || p[i] == '[' || (i && p[i - 1] == '|' && strchr("*+?|", p[i])) ||
		    (i && p[i - 1] == '(' && strchr("*+?)|", p[i])) || (unsigned char)p[i] >= 0x80 || p[i] == 0)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned fl = data[0];
	static char pv_buf[200][66];
	const char *pats[200];
	size_t lens[200], n_pats = 0;
	for (size_t i = 1; i <= size && n_pats < 100;) {
		size_t k = 0;
		while (i < size && data[i] != '\n' && k < 64)
			pv_buf[n_pats][k++] = (char)data[i++];
		while (i < size && data[i] != '\n')
			i++;
		pv_buf[n_pats][k] = '\0';
		lens[n_pats] = k;
		pats[n_pats] = pv_buf[n_pats];
		n_pats++;
		i++;
		if (!(fl & 64))
			break;
	}
	for (size_t j = 0, n_given = n_pats; (fl & 64) && n_pats < 200; j++) {
		size_t from = j % n_given, k = lens[from];
		memcpy(pv_buf[n_pats], pv_buf[from], k);
		pv_buf[n_pats][k] = (char)('0' + j % 10);
		pv_buf[n_pats][k + 1] = '\0';
		lens[n_pats] = k + 1;
		pats[n_pats] = pv_buf[n_pats];
		n_pats++;
	}
	const char *pat = pats[0];
	size_t n = lens[0];
	/* the text: the sample, and with bit 7 one long line of it */
	static char *long_sample;
	static size_t long_len;
	if (!long_sample) {
		size_t one = sizeof sample - 1;
		long_len = one + 1 + 300 * one;
		long_sample = malloc(long_len + 1);
		if (!long_sample)
			abort();
		memcpy(long_sample, sample, one);
		long_sample[one] = '\n';
		for (size_t r = 0; r < 300; r++)
			for (size_t i = 0; i < one; i++)
				long_sample[one + 1 + r * one + i] = sample[i] == '\n' ? ' ' : sample[i];
	}
	int utf8 = (fl & 3) == 3;
	static int in_utf8 = -1;
	if (utf8 != in_utf8) {
		if (!setlocale(LC_ALL, utf8 ? "C.UTF-8" : "C"))
			abort();
		in_utf8 = utf8;
	}
	const char *text_in = fl & 128 ? long_sample : sample;
	if (utf8)
		text_in = sample_utf8;
	struct grep_opts o = { .max_count = -1, .before = -1, .after = -1 };
	o.syntax = fl % 3;
	o.icase = (fl >> 2) & 1;
	o.word = (fl >> 3) & 1;
	o.line = (fl >> 4) & 1;
	o.invert = (fl >> 5) & 1;
	o.text = 1;
	o.utf8 = utf8;
	char err[256], warn[512];
	struct grep *g = NULL;
	if (grep_compile(pats, lens, n_pats, &o, &g, err, sizeof err, warn, sizeof warn) != 0) {
		if (!err[0]) {
			fprintf(stderr, "compile failed without a message\n");
			abort();
		}
		return 0;
	}

	/* run the segment, collect the selected lines' offsets */
	struct vm *vm = vm_new();
	struct vm_prog *p = NULL;
	size_t seg_len, len = utf8 ? sizeof sample_utf8 - 1 : fl & 128 ? long_len : sizeof sample - 1;
	const uint8_t *seg = grep_segment(g, &seg_len);
	if (vm_bind_region(vm, "data", (void *)text_in, len, ISA_ACC_RO) != 0 ||
	    vm_load(vm, seg, seg_len, &p, err, sizeof err) != 0) {
		fprintf(stderr, "segment does not load: %s\n", err);
		abort();
	}
	static uint8_t out[1 << 18];
	struct vm_run_opts ro = { .out = out, .out_cap = sizeof out, .fuel = GREP_FUEL(len) };
	struct vm_result res;
	unsigned na;
	if (vm_run(p, (unsigned)vm_prog_entry(p, "grep", &na), NULL, 0, &ro, &res) != 0) {
		fprintf(stderr, "segment trapped on /%s/\n", pat);
		abort();
	}
	char *text = NULL;
	size_t text_len = 0;
	FILE *f = open_memstream(&text, &text_len);
	struct grep_file_result fr;
	int frc = grep_format(g, "grep", "s", res.value, out, res.out_len, f, stderr, &fr);
	if (frc == -2) {
		/* the backtracker gave up ("memory exhausted"): no verdict */
		fclose(f);
		free(text);
		vm_prog_free(p);
		vm_free(vm);
		grep_free(g);
		return 0;
	}
	if (frc != 0) {
		fprintf(stderr, "malformed records for /%s/\n", pat);
		abort();
	}
	fclose(f);

	/* the expected output: every line the exact matcher selects, in order */
	regex_t re;
	int use_re = n_pats == 1 && !o.icase && !o.word && !o.line && o.syntax != GREP_FIXED &&
	             plain(pat, n) &&
	             regcomp(&re, pat, o.syntax == GREP_EXTENDED ? REG_EXTENDED | REG_NOSUB : REG_NOSUB) == 0;
	char *want = malloc(len + 2);
	size_t wl = 0;
	for (const char *l = text_in; l < text_in + len;) {
		const char *e = memchr(l, '\n', (size_t)(text_in + len - l));
		size_t ll = e ? (size_t)(e - l) : (size_t)(text_in + len - l);
		int m;
		if (g->ast.has_backref || !g->nfa.s)
			m = bt_line_matches(&g->ast, (const uint8_t *)l, ll, o.icase);
		else
			m = nfa_line_matches(&g->nfa, (const uint8_t *)l, ll);
		/* UTF-8, where glibc's regex decides: its reading on the lines the superset finds,
		 * and grep's -w loop for patterns that match empty (grep.c: the client's answer) */
		if (m == 1 && (g->have_sup || g->have_w_nfa))
			m = grep_line_matches(g, (const uint8_t *)l, ll);
		if (utf8 && m >= 0 && !g->ast.has_backref && g->nfa.s && ll < 256) {
			int b = bt_line_matches(&g->ast, (const uint8_t *)l, ll, o.icase);
			if (b >= 0 && b != m) {
				fprintf(stderr, "/%s/ flags %#x on \"%.*s\": nfa %d, backtracker %d\n", pat,
				        fl, (int)ll, l, m, b);
				abort();
			}
		}
		if (m >= 0 && use_re && ll < 256 && !(utf8 && utf8_has_errors((const uint8_t *)l, ll))) {
			char line[256];
			memcpy(line, l, ll);
			line[ll] = '\0';
			int r = regexec(&re, line, 0, NULL, 0) == 0;
			if (r != m) {
				fprintf(stderr, "/%s/ syntax %d on \"%s\": grep %d, regexec %d\n", pat,
				        o.syntax, line, m, r);
				abort();
			}
		}
		if (m >= 0 && (m == 1) != o.invert) {
			memcpy(want + wl, l, ll);
			wl += ll;
			want[wl++] = '\n';
		}
		if (m < 0) {
			wl = (size_t)-1;      /* the backtracker gave up: no verdict */
			break;
		}
		l += ll + 1;
	}
	if (wl != (size_t)-1 && (wl != text_len || memcmp(want, text, wl))) {
		fprintf(stderr, "/%s/ flags %#x: segment and exact matcher disagree\n--- exact\n%.*s"
		        "--- segment\n%.*s", pat, fl, (int)wl, want, (int)text_len, text);
		abort();
	}
	if (use_re)
		regfree(&re);
	free(want);
	free(text);
	vm_prog_free(p);
	vm_free(vm);
	grep_free(g);
	return 0;
}
