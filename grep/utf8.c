/* utf8.c: UTF-8 locales for libgrep: character sets compiled to byte automata.
 *
 * In a UTF-8 locale a character set (".", a bracket expression, a class, \w, a letter under -i)
 * is a sorted list of code point ranges (struct cset).  utf8_sequences splits a range into
 * sequences of byte ranges (E1 [80-BF] [80-BF] ...), the sets are put into a trie of byte
 * ranges whose equal subtrees are merged, and the trie becomes an AST of one-byte sets, so the
 * NFA, the DFA and the segment see bytes only.  Invalid bytes are in no sequence: they match
 * no set.  docs/grep.md ("UTF-8 locales") explains it.
 */
#include <langinfo.h>
#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

#include "grep_int.h"

/* ---- decoding ---- */

int utf8_decode(const uint8_t *p, size_t n, uint32_t *cp)
{
	if (n == 0)
		return 0;
	unsigned c = p[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	int len;
	uint32_t v, min;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, v = c & 0x1F, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, v = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, v = c & 0x07, min = 0x10000;
	else
		return 0;
	if (n < (size_t)len)
		return 0;
	for (int i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3F);
	}
	if (v < min || v > UTF8_MAX || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return len;
}

int utf8_encode(uint32_t c, uint8_t *b)
{
	if (c < 0x80) {
		b[0] = (uint8_t)c;
		return 1;
	}
	if (c < 0x800) {
		b[0] = (uint8_t)(0xC0 | c >> 6);
		b[1] = (uint8_t)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		b[0] = (uint8_t)(0xE0 | c >> 12);
		b[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
		b[2] = (uint8_t)(0x80 | (c & 0x3F));
		return 3;
	}
	b[0] = (uint8_t)(0xF0 | c >> 18);
	b[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
	b[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
	b[3] = (uint8_t)(0x80 | (c & 0x3F));
	return 4;
}

int utf8_has_errors(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		uint32_t c;
		int l = utf8_decode(p + i, n - i, &c);
		if (l == 0)
			return 1;
		i += (size_t)l;
	}
	return 0;
}

/* glibc's mbrtowc in a UTF-8 locale, which grep 3.8's print_line_head asks (mbrlen): the
 * length of the character at p[0..n) or 0.  Unlike utf8_decode it takes the old forms past
 * U+10FFFF, up to 0x7FFFFFFF in 4, 5 or 6 bytes (F4 90 80 80, F8 88 80 80 80); overlong
 * forms and surrogates it refuses.  (With `glibc_dot`, glibc's regex `.` once it optimized
 * the pattern for UTF-8, OP_UTF8_PERIOD: the same, surrogates taken too.) */
static int glibc_char(const uint8_t *p, size_t n, int glibc_dot)
{
	unsigned c = p[0];
	int len;
	uint32_t v, min;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, v = c & 0x1F, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, v = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF7)
		len = 4, v = c & 0x07, min = 0x10000;
	else if (c >= 0xF8 && c <= 0xFB)
		len = 5, v = c & 0x03, min = 0x200000;
	else if (c >= 0xFC && c <= 0xFD)
		len = 6, v = c & 0x01, min = 0x4000000;
	else
		return 0;
	if (n < (size_t)len)
		return 0;
	for (int i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3F);
	}
	if (v < min || (!glibc_dot && v >= 0xD800 && v <= 0xDFFF))
		return 0;
	return len;
}

int utf8_print_errors(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		/* ASCII eight bytes at a time: every selected line of -n/-o/-c... output passes
		 * here, and on ASCII text this loop was a few percent of `-n -w fox`'s time */
		uint64_t w;
		if (n - i >= 8 && (memcpy(&w, p + i, 8), !(w & 0x8080808080808080ull))) {
			i += 8;
			continue;
		}
		int l = glibc_char(p + i, n - i, 0);
		if (l == 0)
			return 1;
		i += (size_t)l;
	}
	return 0;
}

static int wordc(uint32_t c)
{
	return c == '_' || iswalnum((wint_t)c);
}

int utf8_err_word(unsigned b)
{
	return b >= 0x80 && b <= 0xFF && iswalnum((wint_t)b);
}

int utf8_word_at(const uint8_t *p, size_t n, size_t i)
{
	if (i >= n)
		return 0;
	if (p[i] < 0x80)
		return is_word(p[i]);
	uint32_t c;
	if (utf8_decode(p + i, n - i, &c) > 0)
		return wordc(c);
	return utf8_err_word(p[i]) ? 2 : 0;
}

int utf8_word_before(const uint8_t *p, size_t n, size_t i)
{
	if (i == 0)
		return 0;
	if (p[i - 1] < 0x80)
		return is_word(p[i - 1]);
	/* as grep's wordchar_prev: the character that holds byte i-1 (which may go on past i),
	 * found from at most 3 bytes back; else byte i-1 is an encoding error */
	for (size_t k = 1; k <= 4 && k <= i; k++) {
		uint32_t c;
		int l = utf8_decode(p + i - k, n - (i - k), &c);
		if (l >= (int)k)
			return wordc(c);
		if ((p[i - k] & 0xC0) != 0x80)
			break;
	}
	return utf8_err_word(p[i - 1]) ? 2 : 0;
}

long utf8_fold_prefix(const uint8_t *a, size_t na, const uint8_t *p, size_t n)
{
	size_t i = 0, j = 0;
	while (i < na) {
		uint32_t x, y;
		int lx = utf8_decode(a + i, na - i, &x), ly = utf8_decode(p + j, n - j, &y);
		if (lx == 0 || ly == 0) {
			/* an encoding error equals only the same byte */
			if (j >= n || a[i] != p[j] || lx != ly)
				return -1;
			i++, j++;
			continue;
		}
		if (x != y && towupper((wint_t)x) != towupper((wint_t)y))
			return -1;
		i += (size_t)lx, j += (size_t)ly;
	}
	return (long)j;
}

int utf8_ranges_refused(void)
{
	/* grep 3.8 in glibc's C.UTF-8 refuses a range with an end outside ASCII ("Invalid
	 * collation character"); other UTF-8 locales collate */
	const char *name = setlocale(LC_COLLATE, NULL);
	return name && name[0] == 'C' && name[1] == '.';
}

int utf8_inside(const uint8_t *p, size_t n, size_t i)
{
	if (i == 0 || i >= n || (p[i] & 0xC0) != 0x80)
		return 0;
	for (size_t k = 1; k <= 3 && k <= i; k++) {
		uint32_t c;
		int l = utf8_decode(p + i - k, n - (i - k), &c);
		if (l > (int)k)
			return 1;
		if (p[i - k] < 0x80 || (p[i - k] & 0xC0) != 0x80)
			break;           /* a lead byte (or ASCII) that does not reach i */
	}
	return 0;
}

/* ---- code point ranges into byte sequences ---- */

int utf8_sequences(uint32_t lo, uint32_t hi, struct utf8_seq *out, int cap)
{
	/* a stack of ranges still to split: each split pushes two, and a range is split at most
	 * once per encoding length and per continuation level, so 32 is plenty */
	uint32_t st[32][2];
	int sp = 0, n = 0;
	if (hi > UTF8_MAX)
		hi = UTF8_MAX;
	if (lo > hi)
		return 0;
	st[sp][0] = lo, st[sp][1] = hi, sp++;
	while (sp > 0) {
		sp--;
		uint32_t a = st[sp][0], b = st[sp][1];
		if (a > b)
			continue;
		/* no surrogates: they are not characters */
		if (a <= 0xDFFF && b >= 0xD800) {
			if (b > 0xDFFF)
				st[sp][0] = 0xE000, st[sp][1] = b, sp++;
			if (a < 0xD800)
				st[sp][0] = a, st[sp][1] = 0xD7FF, sp++;
			continue;
		}
		/* one encoding length per range */
		static const uint32_t len_end[] = { 0x7F, 0x7FF, 0xFFFF };
		int split = 0;
		for (int i = 0; i < 3 && !split; i++)
			if (a <= len_end[i] && b > len_end[i]) {
				st[sp][0] = len_end[i] + 1, st[sp][1] = b, sp++;
				st[sp][0] = a, st[sp][1] = len_end[i], sp++;
				split = 1;
			}
		if (split)
			continue;
		/* a range of one length is a product of byte ranges when, at each level, the
		 * lower bound's tail is all 0s and the upper's all 1s, or the heads agree */
		int len = a < 0x80 ? 1 : a < 0x800 ? 2 : a < 0x10000 ? 3 : 4;
		for (int i = 1; i < len && !split; i++) {
			uint32_t m = (1u << (6 * i)) - 1;
			if ((a & ~m) == (b & ~m))
				continue;
			if ((a & m) != 0) {
				st[sp][0] = (a | m) + 1, st[sp][1] = b, sp++;
				st[sp][0] = a, st[sp][1] = a | m, sp++;
				split = 1;
			} else if ((b & m) != m) {
				st[sp][0] = b & ~m, st[sp][1] = b, sp++;
				st[sp][0] = a, st[sp][1] = (b & ~m) - 1, sp++;
				split = 1;
			}
		}
		if (split)
			continue;
		if (n == cap)
			return -1;
		uint8_t x[4], y[4];
		utf8_encode(a, x);
		utf8_encode(b, y);
		out[n].n = (uint8_t)len;
		for (int i = 0; i < len; i++)
			out[n].lo[i] = x[i], out[n].hi[i] = y[i];
		n++;
	}
	return n;
}

/* ---- sets of code points ---- */

void cset_free(struct cset *s)
{
	free(s->r);
	memset(s, 0, sizeof *s);
}

void cset_add(struct cset *s, uint32_t lo, uint32_t hi)
{
	if (lo > hi)
		return;
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 16;
		uint32_t (*r)[2] = realloc(s->r, (size_t)cap * sizeof *r);
		if (!r) {
			s->err = 1;
			return;
		}
		s->r = r;
		s->cap = cap;
	}
	s->r[s->n][0] = lo;
	s->r[s->n][1] = hi;
	s->n++;
}

static int cmp_range(const void *x, const void *y)
{
	const uint32_t *a = x, *b = y;
	return a[0] < b[0] ? -1 : a[0] > b[0];
}

void cset_norm(struct cset *s)
{
	if (s->n == 0)
		return;
	qsort(s->r, (size_t)s->n, sizeof s->r[0], cmp_range);
	int k = 0;
	for (int i = 1; i < s->n; i++) {
		if (s->r[i][0] <= s->r[k][1] + 1) {
			if (s->r[i][1] > s->r[k][1])
				s->r[k][1] = s->r[i][1];
		} else {
			s->r[++k][0] = s->r[i][0];
			s->r[k][1] = s->r[i][1];
		}
	}
	s->n = k + 1;
}

int cset_has(const struct cset *s, uint32_t c)
{
	int lo = 0, hi = s->n - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (c < s->r[mid][0])
			hi = mid - 1;
		else if (c > s->r[mid][1])
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

void cset_negate(struct cset *s)
{
	cset_norm(s);
	struct cset t = { 0 };
	uint32_t next = 0;
	for (int i = 0; i < s->n; i++) {
		if (s->r[i][0] > next)
			cset_add(&t, next, s->r[i][0] - 1);
		next = s->r[i][1] + 1;
	}
	if (next <= UTF8_MAX)
		cset_add(&t, next, UTF8_MAX);
	t.err |= s->err;
	cset_free(s);
	*s = t;
}

/* Classes and case pairs come from one pass over Unicode each (about 1.1M isw* or towupper
 * calls: 5-20 ms, far more under sanitizers), so they are kept per process for the locale
 * they were made in (LC_CTYPE's name), behind a mutex: libgrep may compile in threads. */
static const char *const class_names[] = { "alpha", "upper", "lower", "digit", "xdigit", "space",
                                           "print", "punct", "graph", "cntrl", "blank", "alnum",
                                           "word" };
#define N_CLASSES (sizeof class_names / sizeof class_names[0])

struct fold_pair {             /* towupper(c) == up != c */
	uint32_t up, c;
};

struct coll_entry { uint64_t key; uint32_t c; };

static struct {
	pthread_mutex_t lock;
	char locale[128];
	struct cset cls[N_CLASSES];
	int have_cls[N_CLASSES];
	struct fold_pair *fold;
	size_t n_fold;
	char coll_locale[128];         /* LC_COLLATE of the two below */
	struct coll_entry *by_seq;     /* code points by collation sequence (ranges) */
	size_t n_by_seq;
	struct coll_entry *by_key;     /* code points by a hash of their primary weights */
	size_t n_by_key;
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Forget what was made in another locale; called with the lock held. */
static void cache_check_locale(void)
{
	const char *name = setlocale(LC_CTYPE, NULL);
	if (!name)
		name = "";
	if (!strncmp(cache.locale, name, sizeof cache.locale - 1))
		return;
	for (size_t i = 0; i < N_CLASSES; i++) {
		cset_free(&cache.cls[i]);
		cache.have_cls[i] = 0;
	}
	free(cache.fold);
	cache.fold = NULL;
	cache.n_fold = 0;
	snprintf(cache.locale, sizeof cache.locale, "%s", name);
}

/* Is c in the class (type, or \w when word)?  The answer everything below must equal. */
static int class_has(uint32_t c, wctype_t type, int word)
{
	return word ? wordc(c) : iswctype((wint_t)c, type) != 0;
}

/* Every code point c of the class, as ranges: one call per code point (1.1 M). */
static void cset_scan(struct cset *s, wctype_t type, int word)
{
	uint32_t start = 0;
	int in = 0;
	for (uint32_t c = 0; c <= UTF8_MAX + 1; c++) {
		int now = 0;
		if (c <= UTF8_MAX && !(c >= 0xD800 && c <= 0xDFFF))
			now = class_has(c, type, word);
		if (now && !in)
			start = c;
		else if (!now && in)
			cset_add(s, start, c - 1);
		in = now;
	}
}

#ifdef __GLIBC__
/* The same sets from glibc's own tables, in about 1/50 of the time.  glibc's wctype() returns
 * the class's table itself (wctype_t is its address) and iswctype reads it as a three-level
 * trie (wchar-lookup.h, "wctype_table_lookup", unchanged since glibc 2.2): five words
 * shift1, bound, shift2, mask2 (2^q-1), mask3 (2^p-1), then bound offsets of level-2 tables
 * (shift1 = q+p+5), each 2^q offsets of level-3 tables (shift2 = p+5), each 2^p words of 32
 * bits, one per code point; an offset 0 means "none of these".  towupper's table (wctrans) is
 * the same with 2^p int32 deltas (wc + delta) at level 3, p = shift2.  A zero offset answers a
 * whole block (65536 or 4096 code points in glibc's locales) at once, and most of Unicode is
 * such blocks, so walking the trie visits a few thousand words instead of calling iswctype
 * 1.1 M times (about 2.5 ms, most of -w's start-up in UTF-8).
 *
 * It reads only words that iswctype or towupper itself reads for some code point up to
 * U+10FFFF (the walk goes code point by code point, a block at a time), so it is as safe as
 * those calls.  What it gets right depends on that layout, so: the header must be consistent,
 * ASCII comes from the calls themselves (glibc answers it from its byte tables), and the
 * result is checked against the calls on both sides of every range's ends and at a stride of
 * 97 code points; any disagreement and the caller scans instead.  test_grep_utf8 compares
 * both ways over every code point in every locale it can make. */
struct tbl {
	const char *t;
	uint32_t shift1, bound, shift2, mask2, mask3;
};

/* Read the header of the table at t; bits 5 for a class (32 code points a level-3 word), 0
 * for a case map.  0, or -1 when it is not what the comment above says. */
static int tbl_open(struct tbl *b, const void *t, unsigned bits)
{
	if (!t || ((uintptr_t)t & 3))
		return -1;
	const uint32_t *h = t;
	*b = (struct tbl){ t, h[0], h[1], h[2], h[3], h[4] };
	if (b->shift2 < bits || b->shift1 <= b->shift2 || b->shift1 > 24 ||
	    b->mask2 != (1u << (b->shift1 - b->shift2)) - 1 || b->mask3 != (1u << (b->shift2 - bits)) - 1)
		return -1;
	return 0;
}

/* The level-3 row holding c, or NULL: with *skip > 0, the code points from c on that are all
 * "none" (to the end of c's block at level 1 or 2), with *skip 0 a misaligned offset (not
 * glibc's layout). */
static const uint32_t *tbl_row(const struct tbl *b, uint32_t c, uint32_t *skip)
{
	const uint32_t *h = (const void *)b->t;
	uint32_t i1 = c >> b->shift1;
	uint32_t l1 = i1 < b->bound ? h[5 + i1] : 0, l2 = 0;
	*skip = 0;
	if (l1 & 3)
		return NULL;
	if (l1)
		l2 = ((const uint32_t *)(const void *)(b->t + l1))[(c >> b->shift2) & b->mask2];
	if (l2 & 3)
		return NULL;
	if (!l2) {
		uint32_t size = 1u << (l1 ? b->shift2 : b->shift1);
		*skip = size - (c & (size - 1));
		return NULL;
	}
	return (const void *)(b->t + l2);
}

/* Add lo..hi, less ASCII (the calls give it) and the surrogates, clipped to U+10FFFF. */
static void add_scalars(struct cset *s, uint32_t lo, uint32_t hi)
{
	if (lo < 0x80)
		lo = 0x80;
	if (hi > UTF8_MAX)
		hi = UTF8_MAX;
	if (lo > hi)
		return;
	if (lo <= 0xDFFF && hi >= 0xD800) {
		if (lo < 0xD800)
			cset_add(s, lo, 0xD7FF);
		if (hi > 0xDFFF)
			cset_add(s, 0xE000, hi);
	} else
		cset_add(s, lo, hi);
}

/* Does the call agree on both sides of range i's ends?  (Normalised ranges are apart: the
 * code points just outside one are in no range.) */
static int ends_agree(const struct cset *s, int i, wctype_t type, int word)
{
	for (int k = 0; k < 2; k++) {
		uint32_t e = s->r[i][k];
		for (uint32_t d = e ? e - 1 : e; d <= e + 1 && d <= UTF8_MAX; d++)
			if (!(d >= 0xD800 && d <= 0xDFFF) &&
			    class_has(d, type, word) != (d >= s->r[i][0] && d <= s->r[i][1]))
				return 0;
	}
	return 1;
}

/* Is the class built from the table (s, normalised) what the calls say?  Both sides of every
 * end of a range, and a stride of 97 over the rest: about 16,000 calls, in order, so one
 * pass over the ranges answers the set's side. */
static int class_agrees(const struct cset *s, wctype_t type, int word)
{
	int i = 0;
	for (uint32_t c = 0; c <= UTF8_MAX; c += 97) {
		for (; i < s->n && s->r[i][0] <= c; i++)
			if (!ends_agree(s, i, type, word))
				return 0;
		int in = i > 0 && c <= s->r[i - 1][1];
		if (!(c >= 0xD800 && c <= 0xDFFF) && class_has(c, type, word) != in)
			return 0;
	}
	for (; i < s->n; i++)
		if (!ends_agree(s, i, type, word))
			return 0;
	return 1;
}

/* The class from glibc's table (above) into s (empty); 0, or -1: not built, scan instead. */
static int class_from_table(struct cset *s, wctype_t type, int word)
{
	struct tbl b;
	if (tbl_open(&b, (const void *)(uintptr_t)(word ? wctype("alnum") : type), 5) != 0)
		return -1;
	for (uint32_t c = 0; c < 0x80; c++)
		if (class_has(c, type, word))
			cset_add(s, c, c);
	uint32_t start = 0, c = 0;
	int in = 0;
	while (c <= UTF8_MAX) {
		uint32_t skip, bits = 0, n = 32;
		const uint32_t *row = tbl_row(&b, c, &skip);
		if (row)
			bits = row[(c >> 5) & b.mask3];
		else if (skip)
			n = skip;
		else
			goto bad;
		/* the n code points from c: all members (bits all ones), none, or bit by bit */
		if (bits == 0 || bits == 0xFFFFFFFFu) {
			if (bits && !in)
				start = c, in = 1;
			else if (!bits && in)
				add_scalars(s, start, c - 1), in = 0;
		} else
			for (uint32_t j = 0; j < 32; j++) {
				int now = (bits >> j) & 1;
				if (now && !in)
					start = c + j, in = 1;
				else if (!now && in)
					add_scalars(s, start, c + j - 1), in = 0;
			}
		c += n;
	}
	if (in)
		add_scalars(s, start, c - 1);
	cset_norm(s);
	if (!s->err && class_agrees(s, type, word))
		return 0;
bad:
	cset_free(s);
	return -1;
}
#endif

int cset_class_way(struct cset *s, const char *name, int scan)
{
	int word = !strcmp(name, "word");
	wctype_t type = word ? 0 : wctype(name);
	if (!word && !type)
		return -1;
	if (scan) {
		cset_scan(s, type, word);
		return 0;
	}
#ifdef __GLIBC__
	return class_from_table(s, type, word);
#else
	return -1;
#endif
}

int cset_class(struct cset *s, const char *name)
{
	size_t k = 0;
	while (k < N_CLASSES && strcmp(class_names[k], name))
		k++;
	if (k == N_CLASSES)
		return -1;
	pthread_mutex_lock(&cache.lock);
	cache_check_locale();
	struct cset *c = &cache.cls[k];
	if (!cache.have_cls[k] || c->err) {
		cset_free(c);
		wctype_t type = strcmp(name, "word") ? wctype(name) : 0;
		int word = !strcmp(name, "word");
#ifdef __GLIBC__
		if (class_from_table(c, type, word) != 0)
#endif
			cset_scan(c, type, word);
		cache.have_cls[k] = 1;
	}
	for (int i = 0; i < c->n; i++)
		cset_add(s, c->r[i][0], c->r[i][1]);
	s->err |= c->err;
	pthread_mutex_unlock(&cache.lock);
	return 0;
}

static int cmp_pair(const void *x, const void *y)
{
	const struct fold_pair *a = x, *b = y;
	return a->up != b->up ? (a->up < b->up ? -1 : 1) : (a->c < b->c ? -1 : a->c > b->c);
}

/* Append the pair (up, c) to v; 0, or -1 when out of memory. */
static int pair_push(struct fold_pair **v, size_t *n, size_t *cap, uint32_t up, uint32_t c)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 4096;
		struct fold_pair *nv = realloc(*v, nc * sizeof *nv);
		if (!nv)
			return -1;
		*v = nv;
		*cap = nc;
	}
	(*v)[*n].up = up;
	(*v)[(*n)++].c = c;
	return 0;
}

#ifdef __GLIBC__
/* The pairs from towupper's table (wctrans, read as the classes are: class_from_table), in
 * increasing c, into v (n 0).  Every pair found is checked with towupper, and so are all of
 * Latin-1 and a stride of 97 code points (towupper(c) == c where no pair says otherwise).
 * 0; -1 not glibc's layout or a disagreement (n back to 0: scan instead); -2 out of memory. */
static int pairs_from_table(struct fold_pair **v, size_t *n, size_t *cap)
{
	struct tbl b;
	if (tbl_open(&b, (const void *)wctrans("toupper"), 0) != 0)
		return -1;
	for (uint32_t c = 0; c <= UTF8_FOLD_MAX;) {
		uint32_t skip;
		const int32_t *row = (const void *)tbl_row(&b, c, &skip);
		if (!row && !skip)
			goto bad;
		if (!row) {
			c += skip;
			continue;
		}
		/* c is at the start of its row (rows are 2^shift2 code points, aligned) */
		for (uint32_t j = 0; j <= b.mask3 && c + j <= UTF8_FOLD_MAX; j++)
			if (row[j] && !(c + j >= 0xD800 && c + j <= 0xDFFF) &&
			    pair_push(v, n, cap, c + j + (uint32_t)row[j], c + j) != 0)
				return -2;
		c += b.mask3 + 1;
	}
	size_t k = 0;
	for (size_t i = 0; i < *n; i++)
		if ((uint32_t)towupper((wint_t)(*v)[i].c) != (*v)[i].up)
			goto bad;
	for (uint32_t c = 0; c <= UTF8_FOLD_MAX; c += c < 0x100 ? 1 : 97) {
		while (k < *n && (*v)[k].c < c)
			k++;
		uint32_t up = k < *n && (*v)[k].c == c ? (*v)[k].up : c;
		if (!(c >= 0xD800 && c <= 0xDFFF) && (uint32_t)towupper((wint_t)c) != up)
			goto bad;
	}
	return 0;
bad:
	*n = 0;
	return -1;
}
#endif

/* The pairs (towupper(c), c) with towupper(c) != c, sorted by up; with the lock held.  0, or
 * -1 when out of memory.  Only up to FOLD_MAX: the planes past the first two hold no cased
 * letter (Unicode 15: CJK ideographs, tags, private use; the last case pair is Adlam's,
 * U+1E922/U+1E900, and glibc's locales take their case maps from Unicode), and 1.1 M calls of
 * towupper were most of -i's start-up in UTF-8 (test_grep_utf8 checks the locale agrees).
 * From glibc's table where it can (pairs_from_table: about 0.3 ms less), else one towupper
 * call per code point. */
/* The pairs in increasing c, malloc'd into *v (*n); way 0 the table where it can, 1 the calls
 * only, 2 the table only.  0; -1 out of memory, or (way 2) no table. */
static int make_pairs(int way, struct fold_pair **v, size_t *n)
{
	size_t cap = 0;
	int got = -1;
	*v = NULL;
	*n = 0;
#ifdef __GLIBC__
	if (way != 1)
		got = pairs_from_table(v, n, &cap);
#endif
	if (got == -1 && way == 2)
		got = -2;
	for (uint32_t c = 0; got == -1 && c <= UTF8_FOLD_MAX; c++) {
		if (c == 0xD800)
			c = 0xE000;
		wint_t u = towupper((wint_t)c);
		if (u != (wint_t)c && pair_push(v, n, &cap, (uint32_t)u, c) != 0)
			got = -2;
	}
	if (got == -2) {
		free(*v);
		*v = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

int utf8_fold_pairs_way(int scan, uint32_t (**pairs)[2], size_t *n)
{
	struct fold_pair *v;
	if (make_pairs(scan ? 1 : 2, &v, n) != 0)
		return -1;
	_Static_assert(sizeof *v == sizeof **pairs, "struct fold_pair is two uint32_t");
	*pairs = (void *)v;
	return 0;
}

static int fold_pairs(void)
{
	if (cache.fold)
		return 0;
	struct fold_pair *v;
	size_t n;
	if (make_pairs(0, &v, &n) != 0)
		return -1;
	qsort(v, n, sizeof *v, cmp_pair);
	cache.fold = v;
	cache.n_fold = n;
	return 0;
}

/* The first pair whose up is >= u. */
static size_t pair_lower_bound(uint32_t u)
{
	size_t lo = 0, hi = cache.n_fold;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cache.fold[mid].up < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Case folding as GNU grep does it in a multibyte locale: c stands for c and every d with
 * towupper(d) == towupper(c) (so "s" for "S" and U+017F, but KELVIN SIGN only for itself). */
void cset_fold(struct cset *s)
{
	cset_norm(s);
	pthread_mutex_lock(&cache.lock);
	cache_check_locale();
	if (fold_pairs() != 0) {
		pthread_mutex_unlock(&cache.lock);
		s->err = 1;
		return;
	}
	const struct fold_pair *v = cache.fold;
	size_t n = cache.n_fold;
	uint64_t size = 0;
	for (int i = 0; i < s->n; i++)
		size += s->r[i][1] - s->r[i][0] + 1;
	struct cset add = { 0 };
	if (size <= 64) {
		/* a few characters (a letter of the pattern): each one's group */
		for (int i = 0; i < s->n; i++)
			for (uint32_t c = s->r[i][0]; c <= s->r[i][1]; c++) {
				uint32_t u = (uint32_t)towupper((wint_t)c);
				cset_add(&add, u, u);
				for (size_t k = pair_lower_bound(u); k < n && v[k].up == u; k++)
					cset_add(&add, v[k].c, v[k].c);
			}
	} else {
		/* a large set: every group that meets it */
		for (size_t i = 0; i < n;) {
			size_t j = i;
			int hit = cset_has(s, v[i].up);
			for (; j < n && v[j].up == v[i].up; j++)
				hit |= cset_has(s, v[j].c);
			if (hit) {
				cset_add(&add, v[i].up, v[i].up);
				for (size_t k = i; k < j; k++)
					cset_add(&add, v[k].c, v[k].c);
			}
			i = j;
		}
	}
	pthread_mutex_unlock(&cache.lock);
	for (int i = 0; i < add.n; i++)
		cset_add(s, add.r[i][0], add.r[i][1]);
	s->err |= add.err;
	cset_free(&add);
	cset_norm(s);
}

/* ---- the byte trie and its AST ---- */

struct tedge {
	uint8_t lo, hi;
	int child;                 /* trie node, or -1: the character ends here */
};

struct tnode {
	struct tedge *e;
	int n, cap;
	int canon;                 /* the first node with the same language */
	uint64_t hash;
};

struct trie {
	struct tnode *v;
	int n, cap;
	int err;
};

static int tnew(struct trie *t)
{
	if (t->n == t->cap) {
		int cap = t->cap ? 2 * t->cap : 64;
		struct tnode *v = realloc(t->v, (size_t)cap * sizeof *v);
		if (!v) {
			t->err = 1;
			return -1;
		}
		t->v = v;
		t->cap = cap;
	}
	memset(&t->v[t->n], 0, sizeof t->v[0]);
	return t->n++;
}

static int tedge_add(struct trie *t, int node, uint8_t lo, uint8_t hi, int child)
{
	struct tnode *x = &t->v[node];
	if (x->n == x->cap) {
		int cap = x->cap ? 2 * x->cap : 4;
		struct tedge *e = realloc(x->e, (size_t)cap * sizeof *e);
		if (!e) {
			t->err = 1;
			return -1;
		}
		x->e = e;
		x->cap = cap;
	}
	x->e[x->n].lo = lo;
	x->e[x->n].hi = hi;
	x->e[x->n].child = child;
	return x->n++;
}

/* Insert one sequence, its last edge to leaf (negative: -1 for a set, U8_DEC_* for the word
 * decoder).  Sequences come in increasing order and those of disjoint ranges share a prefix
 * only edge for edge, so only a node's last edge can be the one to follow. */
static void trie_insert(struct trie *t, const struct utf8_seq *q, int leaf)
{
	int node = 0;
	for (int i = 0; i < q->n && !t->err; i++) {
		struct tnode *x = &t->v[node];
		int last = i == q->n - 1;
		if (!last && x->n > 0 && x->e[x->n - 1].lo == q->lo[i] && x->e[x->n - 1].hi == q->hi[i] &&
		    x->e[x->n - 1].child >= 0) {
			node = x->e[x->n - 1].child;
			continue;
		}
		int child = leaf;
		if (!last && (child = tnew(t)) < 0)
			return;
		if (tedge_add(t, node, q->lo[i], q->hi[i], child) < 0)
			return;
		if (last)
			return;
		node = child;
	}
}

/* Canonical ids bottom-up: a node's language is given by its edges with canonical children.
 * Children are made after their parents, so a walk from the last node to the first sees every
 * child first.  The canonical nodes so far sit in an open hash table by their edges' hash
 * (\w's trie has thousands of nodes: comparing each with every later one was quadratic).
 * 0, or -1 when out of memory. */
static int trie_canon(struct trie *t, int merge)
{
	size_t cap = 16;
	while (cap < 2 * (size_t)t->n)
		cap *= 2;
	int *tab = malloc(cap * sizeof *tab);
	if (!tab)
		return -1;
	memset(tab, -1, cap * sizeof *tab);
	for (int i = t->n - 1; i >= 0; i--) {
		struct tnode *x = &t->v[i];
		uint64_t h = 1469598103934665603ull;
		for (int k = 0; k < x->n; k++) {
			int c = x->e[k].child >= 0 ? t->v[x->e[k].child].canon : x->e[k].child;
			x->e[k].child = c;
		}
		/* merge: adjacent edges to one child become one, so that nodes are equal
		 * exactly when their languages are (the decoder is then minimal) */
		for (int k = 1, w = 1; merge && k <= x->n; k++) {
			if (k == x->n) {
				x->n = w;
				break;
			}
			if (x->e[w - 1].child == x->e[k].child && x->e[w - 1].hi + 1 == x->e[k].lo)
				x->e[w - 1].hi = x->e[k].hi;
			else
				x->e[w++] = x->e[k];
		}
		for (int k = 0; k < x->n; k++) {
			int c = x->e[k].child;
			h = (h ^ x->e[k].lo) * 1099511628211ull;
			h = (h ^ x->e[k].hi) * 1099511628211ull;
			h = (h ^ (uint64_t)(uint32_t)c) * 1099511628211ull;
		}
		x->hash = h;
		x->canon = i;
		size_t j = (size_t)(h ^ (h >> 29)) & (cap - 1);
		for (; tab[j] >= 0; j = (j + 1) & (cap - 1)) {
			const struct tnode *y = &t->v[tab[j]];
			if (y->hash != h || y->n != x->n)
				continue;
			int same = 1;
			for (int k = 0; k < x->n && same; k++)
				same = x->e[k].lo == y->e[k].lo && x->e[k].hi == y->e[k].hi &&
				       x->e[k].child == y->e[k].child;
			if (same)
				break;
		}
		if (tab[j] >= 0)
			x->canon = tab[j];      /* an equal node made earlier (already canonical) */
		else
			tab[j] = i;
	}
	free(tab);
	return 0;
}

/* The AST of trie node `node`: an alternation, one branch per distinct child, of the byte set
 * leading to it then the child's AST.  Depth at most 4 (a UTF-8 character's length). */
static int trie_ast(struct ast *a, const struct trie *t, int node)
{
	const struct tnode *x = &t->v[node];
	int alt = -1;
	for (int k = 0; k < x->n; k++) {
		int child = x->e[k].child, dup = 0;
		for (int j = 0; j < k && !dup; j++)
			dup = x->e[j].child == child;
		if (dup)
			continue;
		int set = ast_new(a, N_SET);
		if (set < 0)
			return -1;
		for (int j = k; j < x->n; j++)
			if (x->e[j].child == child)
				for (unsigned c = x->e[j].lo; c <= x->e[j].hi; c++)
					set_add(ast_set(a, set), c);
		int piece = set;
		if (child >= 0) {
			int sub = trie_ast(a, t, child);
			if (sub < 0 || (piece = ast_new(a, N_CAT)) < 0)
				return -1;
			a->n[piece].a = set;
			a->n[piece].b = sub;
		}
		if (alt < 0) {
			alt = piece;
		} else {
			int b = ast_new(a, N_ALT);
			if (b < 0)
				return -1;
			a->n[b].a = alt;
			a->n[b].b = piece;
			alt = b;
		}
	}
	if (alt < 0) {
		/* the empty set: a set node without bytes */
		alt = ast_new(a, N_SET);
	}
	return alt;
}

/* ---- collation: ranges and equivalence classes in UTF-8 locales other than C.UTF-8 ----
 *
 * grep 3.8 hands a bracket expression with a range (other than one of two ASCII digits) to
 * glibc's regex, which takes the range in the order of the locale's collation sequence (the
 * table LC_COLLATE keeps for it, _NL_COLLATE_COLLSEQWC) and an equivalence class as the
 * characters whose first-level weights equal the named one's; under -i it upper-cases the
 * pattern and the text alike.  C.UTF-8 has no collation rules: there ranges stay code point
 * ranges (and grep refuses non-ASCII ends, utf8_ranges_refused). */

int utf8_collating(void)
{
	return (int)(intptr_t)nl_langinfo(_NL_COLLATE_NRULES) > 0;
}

/* c's place in the collation sequence, or UINT32_MAX when the locale gives it none.  The
 * table is glibc's three-level lookup table: a header of five words (shift of level 1,
 * number of level-1 entries, shift and mask of level 2, mask of level 3), then the level-1
 * offsets; an offset of 0 means no entry. */
static uint32_t coll_seq(const uint32_t *t, uint32_t c)
{
	uint32_t i1 = c >> t[0];
	if (i1 >= t[1] || t[5 + i1] == 0)
		return UINT32_MAX;
	const uint32_t *l2 = (const uint32_t *)((const char *)t + t[5 + i1]);
	uint32_t o2 = l2[(c >> t[2]) & t[3]];
	if (o2 == 0)
		return UINT32_MAX;
	return ((const uint32_t *)((const char *)t + o2))[c & t[4]];
}

static int cmp_coll(const void *x, const void *y)
{
	const struct coll_entry *a = x, *b = y;
	return a->key != b->key ? (a->key < b->key ? -1 : 1) : (a->c < b->c ? -1 : a->c > b->c);
}

/* Forget the tables of another LC_COLLATE; with the lock held. */
static void coll_check_locale(void)
{
	const char *name = setlocale(LC_COLLATE, NULL);
	if (!name)
		name = "";
	if (!strncmp(cache.coll_locale, name, sizeof cache.coll_locale - 1))
		return;
	free(cache.by_seq);
	free(cache.by_key);
	cache.by_seq = cache.by_key = NULL;
	cache.n_by_seq = cache.n_by_key = 0;
	snprintf(cache.coll_locale, sizeof cache.coll_locale, "%s", name);
}

/* Every character with its key (f gives it; UINT64_MAX: leave it out), sorted by key. */
static struct coll_entry *coll_table(uint64_t (*f)(uint32_t c, const void *arg), const void *arg,
                                     size_t *n_out)
{
	size_t n = 0, cap = 1u << 16;
	struct coll_entry *v = malloc(cap * sizeof *v);
	for (uint32_t c = 0; v && c <= UTF8_MAX; c++) {
		if (c == 0xD800)
			c = 0xE000;
		uint64_t k = f(c, arg);
		if (k == UINT64_MAX)
			continue;
		if (n == cap) {
			struct coll_entry *nv = realloc(v, 2 * cap * sizeof *nv);
			if (!nv) {
				free(v);
				return NULL;
			}
			v = nv, cap *= 2;
		}
		v[n].key = k;
		v[n++].c = c;
	}
	if (!v || n == 0) {
		free(v);
		return NULL;
	}
	qsort(v, n, sizeof *v, cmp_coll);
	*n_out = n;
	return v;
}

static uint64_t seq_key(uint32_t c, const void *t)
{
	uint32_t q = coll_seq(t, c);
	return q == UINT32_MAX ? UINT64_MAX : q;
}

/* The first-level weights of c as wcsxfrm gives them (up to its level separator, 1), in
 * k[0..n) (none: an ignorable character); SIZE_MAX when they do not fit. */
static size_t primary(uint32_t c, wchar_t *k, size_t cap)
{
	wchar_t str[2] = { (wchar_t)c, 0 };
	size_t n = wcsxfrm(k, str, cap);
	if (n >= cap)
		return SIZE_MAX;
	size_t i = 0;
	while (i < n && k[i] != 1)
		i++;
	return i;
}

static uint64_t primary_key(uint32_t c, const void *arg)
{
	(void)arg;
	wchar_t k[64];
	size_t n = primary(c, k, 64);
	if (n == SIZE_MAX)
		return UINT64_MAX;
	uint64_t h = 1469598103934665603ull;            /* FNV-1a over the weights */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint32_t)k[i]) * 1099511628211ull;
	return h == UINT64_MAX ? h - 1 : h;
}

/* The first entry whose key is >= key. */
static size_t coll_lower(const struct coll_entry *v, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Under -i: from the set q (normalised), every c whose towupper is in q, into s. */
static void add_upper_preimage(struct cset *s, const struct cset *q)
{
	const struct fold_pair *v = cache.fold;
	for (size_t i = 0; i < cache.n_fold; i++)
		if (cset_has(q, v[i].up))
			cset_add(s, v[i].c, v[i].c);
	for (int i = 0; i < q->n; i++)
		for (uint32_t c = q->r[i][0]; c <= q->r[i][1]; c++)
			if ((uint32_t)towupper((wint_t)c) == c)
				cset_add(s, c, c);
}

/* The place of a range's end c; sym: it was written [.c.], which glibc's regex looks up in
 * the per-byte table instead (_NL_COLLATE_COLLSEQMB, values 0..255: so "[[.a.]-z]" holds far
 * more than "[a-z]"). */
static uint32_t end_seq(const uint32_t *t, uint32_t c, int sym)
{
	if (!sym)
		return coll_seq(t, c);
	const unsigned char *mb = (const unsigned char *)nl_langinfo(_NL_COLLATE_COLLSEQMB);
	return c < 0x80 ? mb[c] : UINT32_MAX;
}

/* q (the set as the locale collates it; freed here) into s, under icase as its upper-case
 * preimage; with the lock held.  Nonzero when out of memory. */
static int add_collated(struct cset *s, struct cset *q, int icase)
{
	cset_norm(q);
	if (icase) {
		add_upper_preimage(s, q);
	} else {
		for (int i = 0; i < q->n; i++)
			cset_add(s, q->r[i][0], q->r[i][1]);
	}
	int err = q->err;
	cset_free(q);
	return err;
}

int cset_coll_range(struct cset *s, uint32_t lo, uint32_t hi, unsigned sym, int icase)
{
	const uint32_t *t = (const uint32_t *)nl_langinfo(_NL_COLLATE_COLLSEQWC);
	if (icase)
		lo = (uint32_t)towupper((wint_t)lo), hi = (uint32_t)towupper((wint_t)hi);
	uint32_t a = end_seq(t, lo, sym & 1), b = end_seq(t, hi, sym & 2);
	if (a == UINT32_MAX || b == UINT32_MAX)
		return -1;
	if (a > b)
		return -2;
	pthread_mutex_lock(&cache.lock);
	cache_check_locale();
	coll_check_locale();
	if (!cache.by_seq)
		cache.by_seq = coll_table(seq_key, t, &cache.n_by_seq);
	if (!cache.by_seq || (icase && fold_pairs() != 0)) {
		pthread_mutex_unlock(&cache.lock);
		return -3;
	}
	struct cset q = { 0 };
	const struct coll_entry *v = cache.by_seq;
	for (size_t i = coll_lower(v, cache.n_by_seq, a); i < cache.n_by_seq && v[i].key <= b; i++)
		cset_add(&q, v[i].c, v[i].c);
	int err = add_collated(s, &q, icase);
	pthread_mutex_unlock(&cache.lock);
	return err ? -3 : 0;
}

int cset_equiv(struct cset *s, uint32_t c, int icase)
{
	if (icase)
		c = (uint32_t)towupper((wint_t)c);
	wchar_t kc[64], kd[64];
	size_t nc = primary(c, kc, 64);
	pthread_mutex_lock(&cache.lock);
	cache_check_locale();
	coll_check_locale();
	if (nc != SIZE_MAX && !cache.by_key)
		cache.by_key = coll_table(primary_key, NULL, &cache.n_by_key);
	if ((nc != SIZE_MAX && !cache.by_key) || (icase && fold_pairs() != 0)) {
		pthread_mutex_unlock(&cache.lock);
		return -1;
	}
	struct cset q = { 0 };
	if (nc == SIZE_MAX) {
		cset_add(&q, c, c);                /* weights past our buffer: only itself */
	} else {
		uint64_t key = primary_key(c, NULL);
		const struct coll_entry *v = cache.by_key;
		for (size_t i = coll_lower(v, cache.n_by_key, key); i < cache.n_by_key && v[i].key == key;
		     i++) {
			size_t nd = primary(v[i].c, kd, 64);  /* the hash chose it; the weights decide */
			if (nd == nc && !wmemcmp(kc, kd, nc))
				cset_add(&q, v[i].c, v[i].c);
		}
	}
	int err = add_collated(s, &q, icase);
	pthread_mutex_unlock(&cache.lock);
	return err ? -1 : 0;
}

static void trie_free(struct trie *t)
{
	for (int i = 0; i < t->n; i++)
		free(t->v[i].e);
	free(t->v);
	memset(t, 0, sizeof *t);
}

int cset_ast(struct ast *a, struct cset *s)
{
	cset_norm(s);
	if (s->err) {
		a->err = 1;
		return -1;
	}
	struct trie t = { 0 };
	int root = tnew(&t), rc = -1;
	if (root < 0)
		goto out;
	struct utf8_seq q[UTF8_MAX_SEQS];
	for (int i = 0; i < s->n && !t.err; i++) {
		int k = utf8_sequences(s->r[i][0], s->r[i][1], q, UTF8_MAX_SEQS);
		for (int j = 0; j < k; j++)
			trie_insert(&t, &q[j], -1);
	}
	if (t.err)
		goto out;
	if (trie_canon(&t, 0) == 0)
		rc = trie_ast(a, &t, t.v[0].canon);
out:
	trie_free(&t);
	if (rc < 0)
		a->err = 1;
	return rc;
}

void utf8_word_decoder_free(struct u8_dec *d)
{
	free(d->first);
	free(d->e);
	memset(d, 0, sizeof *d);
}

/* One trie of all valid characters, \w's ranges and the others' taken in increasing order
 * (so trie_insert's "only the last edge" holds across the two), leaves labelled; merging
 * equal subtrees leaves a few hundred nodes (C.UTF-8: 299 after dfa_build_u8 merges the
 * ones its byte classes cannot tell apart).  This replaced a subset construction over the
 * NFAs of \w and \W, which cost more than everything else in -w's start-up. */
int utf8_word_decoder(struct u8_dec *d)
{
	memset(d, 0, sizeof *d);
	struct cset ws = { 0 }, ns = { 0 };
	struct trie t = { 0 };
	int *id = NULL, *order = NULL, rc = -1;
	if (cset_class(&ws, "word") != 0 || cset_class(&ns, "word") != 0)
		goto out;
	cset_norm(&ws);
	cset_negate(&ns);
	if (ws.err || ns.err || tnew(&t) < 0)
		goto out;
	struct utf8_seq q[UTF8_MAX_SEQS];
	for (int i = 0, j = 0; (i < ws.n || j < ns.n) && !t.err;) {
		int word = j >= ns.n || (i < ws.n && ws.r[i][0] < ns.r[j][0]);
		const uint32_t *r = word ? ws.r[i++] : ns.r[j++];
		int k = utf8_sequences(r[0], r[1], q, UTF8_MAX_SEQS);
		if (k < 0)
			t.err = 1;      /* cannot happen: all of Unicode takes 9 */
		for (int x = 0; x < k; x++)
			trie_insert(&t, &q[x], word ? U8_DEC_WORD : U8_DEC_OTHER);
	}
	if (t.err || trie_canon(&t, 1) != 0)
		goto out;
	/* the canonical nodes reachable from the root, breadth first, the root 0 */
	id = malloc((size_t)t.n * sizeof *id);
	order = malloc((size_t)t.n * sizeof *order);
	if (!id || !order)
		goto out;
	memset(id, -1, (size_t)t.n * sizeof *id);
	int n = 0, root = t.v[0].canon;
	size_t n_e = 0;
	id[root] = n;
	order[n++] = root;
	for (int h = 0; h < n; h++) {
		const struct tnode *x = &t.v[order[h]];
		n_e += (size_t)x->n;
		for (int k = 0; k < x->n; k++) {
			int c = x->e[k].child;
			if (c >= 0 && id[c] < 0) {
				id[c] = n;
				order[n++] = c;
			}
		}
	}
	d->first = malloc((size_t)(n + 1) * sizeof *d->first);
	d->e = malloc((n_e ? n_e : 1) * sizeof *d->e);
	if (!d->first || !d->e)
		goto out;
	size_t pos = 0;
	for (int h = 0; h < n; h++) {
		const struct tnode *x = &t.v[order[h]];
		d->first[h] = (int)pos;
		for (int k = 0; k < x->n; k++) {
			int c = x->e[k].child;
			d->e[pos++] = (struct u8_edge){ x->e[k].lo, x->e[k].hi, c >= 0 ? id[c] : c };
		}
	}
	d->first[n] = (int)pos;
	d->n = n;
	rc = 0;
out:
	trie_free(&t);
	cset_free(&ws);
	cset_free(&ns);
	free(id);
	free(order);
	if (rc != 0)
		utf8_word_decoder_free(d);
	return rc;
}
