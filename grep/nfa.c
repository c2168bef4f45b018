/* nfa.c: the matching engines behind libgrep.
 *
 * One Thompson NFA is built from the AST.  Zero-width assertions (^ $ \b \B \< \> and -w's
 * "no word byte before/after") depend only on the byte before and the byte after a position,
 * so the DFA keeps the kind of the last byte in its state (line start, word, other) and
 * resolves assertions when it sees the next byte: a transition on byte c first closes the
 * state under the assertions that hold between the previous byte and c.  That is also why a
 * match is recognised one byte late (the transition on the byte after it, or the end-of-line
 * column).  The client-side matchers are an NFA simulation (leftmost-longest spans for -o and
 * colour) and a backtracking matcher on the AST for back-references.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"

#define NFA_MAX_STATES 2000000
#define BT_MAX_STEPS   100000000L

/* ---- NFA construction ---- */

static int nstate(struct nfa *m, int kind, int out)
{
	if (m->len == m->cap) {
		int cap = m->cap ? 2 * m->cap : 256;
		if (cap > NFA_MAX_STATES) {
			m->err = 1;
			return -1;
		}
		struct nstate *s = realloc(m->s, (size_t)cap * sizeof *s);
		if (!s) {
			m->err = 1;
			return -1;
		}
		m->s = s;
		m->cap = cap;
	}
	struct nstate *s = &m->s[m->len];
	memset(s, 0, sizeof *s);
	s->kind = (uint8_t)kind;
	s->out = out;
	s->out1 = -1;
	return m->len++;
}

static int nset(struct nfa *m, const uint64_t *set, int out)
{
	if (m->n_sets == m->cap_sets) {
		int cap = m->cap_sets ? 2 * m->cap_sets : 64;
		uint64_t (*s)[4] = realloc(m->sets, (size_t)cap * sizeof *s);
		if (!s) {
			m->err = 1;
			return -1;
		}
		m->sets = s;
		m->cap_sets = cap;
	}
	/* consecutive equal sets (a{1000}) share one entry */
	int si = m->n_sets;
	if (si > 0 && !memcmp(m->sets[si - 1], set, 32))
		si--;
	else
		memcpy(m->sets[m->n_sets++], set, 32);
	int s = nstate(m, S_SET, out);
	if (s >= 0)
		m->s[s].set = si;
	return s;
}

/* Compile node so that it continues to state out; returns its entry state.  The AST's depth
 * follows the input (a concatenation of a million bytes is a chain a million nodes deep, a
 * million patterns an alternation as deep), so the walk keeps its frames on a heap stack:
 * each frame is a node being compiled and how far it got (phase), and a finished frame
 * hands its entry state to its parent in `ret`. */
struct cframe {
	int node, out, phase;
	int i, r, s;           /* N_ALT: r is the first branch's entry; N_REPEAT: count, entry, split */
};

static int cpush(struct cframe **st, size_t *sp, size_t *cap, int node, int out)
{
	if (*sp == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		struct cframe *ns = realloc(*st, ncap * sizeof *ns);
		if (!ns)
			return -1;
		*st = ns;
		*cap = ncap;
	}
	(*st)[(*sp)++] = (struct cframe){ .node = node, .out = out };
	return 0;
}

static int compile(struct nfa *m, const struct ast *t, int root, int out)
{
	struct cframe *st = NULL;
	size_t sp = 0, cap = 0;
	int ret = -1;
	if (cpush(&st, &sp, &cap, root, out))
		goto oom;
	while (sp > 0) {
		if (m->err)
			goto oom;
		struct cframe *f = &st[sp - 1];
		const struct node *n = &t->n[f->node];
		int o = f->out;
		if (o < 0)
			goto oom;
		switch (n->kind) {
		case N_EMPTY:
			ret = o;
			sp--;
			break;
		case N_SET:
			ret = nset(m, t->sets[n->set], o);
			sp--;
			break;
		case N_CAT:
			/* b first, then a continuing into b's entry */
			if (f->phase == 0) {
				f->phase = 1;
				if (cpush(&st, &sp, &cap, n->b, o))
					goto oom;
			} else if (f->phase == 1) {
				f->phase = 2;
				if (cpush(&st, &sp, &cap, n->a, ret))
					goto oom;
			} else {
				sp--;
			}
			break;
		case N_ALT:
			if (f->phase == 0) {
				f->phase = 1;
				if (cpush(&st, &sp, &cap, n->a, o))
					goto oom;
			} else if (f->phase == 1) {
				f->r = ret;
				f->phase = 2;
				if (cpush(&st, &sp, &cap, n->b, o))
					goto oom;
			} else {
				int s = f->r < 0 || ret < 0 ? -1 : nstate(m, S_SPLIT, f->r);
				if (s < 0)
					goto oom;
				m->s[s].out1 = ret;
				ret = s;
				sp--;
			}
			break;
		case N_GROUP:
			if (f->phase == 0) {
				f->phase = 1;
				if (cpush(&st, &sp, &cap, n->a, o))
					goto oom;
			} else {
				sp--;
			}
			break;
		case N_BACKREF: {
			/* the DFA only filters: any text may stand for a back-reference */
			uint64_t all[4] = { ~0ull, ~0ull, ~0ull, ~0ull };
			int s = nstate(m, S_SPLIT, -1);
			if (s < 0)
				goto oom;
			m->s[s].out1 = o;
			int any = nset(m, all, s);
			if (any < 0)
				goto oom;
			m->s[s].out = any;
			ret = s;
			sp--;
			break;
		}
		case N_ASSERT: {
			int s = nstate(m, S_ASSERT, o);
			if (s < 0)
				goto oom;
			m->s[s].akind = n->akind;
			if (n->akind != A_EOL && n->akind != A_NNEXTW)
				m->uses_prev = 1;
			ret = s;
			sp--;
			break;
		}
		case N_REPEAT:
			/* phases: 0 start; 1 the loop's body (unbounded) is compiled; 2 and 3 the
			 * optional copies (bounded), 3 after one; 4 and 5 the min mandatory copies */
			switch (f->phase) {
			case 0:
				if (n->max < 0) {
					int s = nstate(m, S_SPLIT, -1);
					if (s < 0)
						goto oom;
					m->s[s].out1 = o;
					f->s = s;
					f->phase = 1;
					if (cpush(&st, &sp, &cap, n->a, s))
						goto oom;
				} else {
					f->i = n->min;
					f->r = o;
					f->phase = 2;
				}
				break;
			case 1:
				if (ret < 0)
					goto oom;
				m->s[f->s].out = ret;
				f->r = f->s;
				f->i = 0;
				f->phase = 4;
				break;
			case 2:
				if (f->i < n->max) {
					f->phase = 3;
					if (cpush(&st, &sp, &cap, n->a, f->r))
						goto oom;
				} else {
					f->i = 0;
					f->phase = 4;
				}
				break;
			case 3: {
				int s = ret < 0 ? -1 : nstate(m, S_SPLIT, ret);
				if (s < 0)
					goto oom;
				m->s[s].out1 = o;
				f->r = s;
				f->i++;
				f->phase = 2;
				break;
			}
			case 4:
				if (f->i < n->min) {
					f->phase = 5;
					if (cpush(&st, &sp, &cap, n->a, f->r))
						goto oom;
				} else {
					ret = f->r;
					sp--;
				}
				break;
			case 5:
				if (ret < 0)
					goto oom;
				f->r = ret;
				f->i++;
				f->phase = 4;
				break;
			}
			break;
		default:
			goto oom;
		}
	}
	free(st);
	return m->err ? -1 : ret;
oom:
	free(st);
	m->err = 1;
	return -1;
}

int nfa_build(struct nfa *m, const struct ast *t)
{
	memset(m, 0, sizeof *m);
	int match = nstate(m, S_MATCH, -1);
	if (match < 0)
		return -1;
	m->start = compile(m, t, t->root, match);
	return m->err || m->start < 0 ? -1 : 0;
}

void nfa_free(struct nfa *m)
{
	free(m->s);
	free(m->sets);
	memset(m, 0, sizeof *m);
}

/* ---- closure under epsilon moves and assertions ---- */

static int assert_ok(int kind, int pc, int nc)
{
	/* an encoding error of kind ERRW is a word character for \b \B \< \>, not for -w */
	int wp = pc == P_WORD || pc == P_ERRW, wn = nc == X_WORD || nc == X_ERRW;
	/* dfa_build_ascii_w: a side of unknown kind (a byte >= 0x80 of UTF-8 text) makes a word
	 * assertion that looks at it false (P_UNK0, X_UNK0) or true (P_UNK1, X_UNK1) */
	if (kind >= A_WORDB) {
		if (pc >= P_UNK0 && kind != A_NNEXTW)
			return pc == P_UNK1;
		if (nc >= X_UNK0 && kind != A_NPREVW)
			return nc == X_UNK1;
	}
	switch (kind) {
	case A_BOL: return pc == P_BOL;
	case A_EOL: return nc == X_EOL;
	case A_WORDB: return wp != wn;
	case A_NWORDB: return wp == wn;
	case A_BOW: return !wp && wn;
	case A_EOW: return wp && !wn;
	case A_NPREVW: return pc != P_WORD;
	case A_NNEXTW: return nc != X_WORD;
	}
	return 0;
}

/* Scratch for closures: a generation-stamped mark per NFA state and a stack. */
struct closer {
	const struct nfa *m;
	unsigned *mark;
	unsigned gen;
	int *stack;
};

static int closer_init(struct closer *c, const struct nfa *m)
{
	c->m = m;
	c->gen = 0;
	c->mark = calloc((size_t)m->len, sizeof *c->mark);
	c->stack = malloc((3 * (size_t)m->len + 2) * sizeof *c->stack);  /* pushes: kernel + 2 per state */
	return c->mark && c->stack ? 0 : -1;
}

static void closer_free(struct closer *c)
{
	free(c->mark);
	free(c->stack);
}

/* Start a walk from kernel[0..n): a fresh mark generation (the marks cleared when it wraps)
 * and the kernel on the stack, first state on top; returns the stack's depth. */
static int closer_start(struct closer *c, const int *kernel, int n)
{
	if (++c->gen == 0) {
		memset(c->mark, 0, (size_t)c->m->len * sizeof *c->mark);
		c->gen = 1;
	}
	int sp = 0;
	for (int i = n - 1; i >= 0; i--)
		c->stack[sp++] = kernel[i];
	return sp;
}

/* Close kernel[0..n) for contexts (pc, nc): the S_SET states reached go to out (returns how
 * many); *match says whether S_MATCH was reached. */
static int closure(struct closer *c, const int *kernel, int n, int pc, int nc, int *out,
                   int *match)
{
	const struct nfa *m = c->m;
	int k = 0;
	int sp = closer_start(c, kernel, n);
	*match = 0;
	while (sp > 0) {
		int s = c->stack[--sp];
		if (s < 0 || c->mark[s] == c->gen)
			continue;
		c->mark[s] = c->gen;
		const struct nstate *st = &m->s[s];
		switch (st->kind) {
		case S_SET:
			out[k++] = s;
			break;
		case S_MATCH:
			*match = 1;
			break;
		case S_SPLIT:
			c->stack[sp++] = st->out1;
			c->stack[sp++] = st->out;
			break;
		case S_EPS:
			c->stack[sp++] = st->out;
			break;
		case S_ASSERT:
			if (assert_ok(st->akind, pc, nc))
				c->stack[sp++] = st->out;
			break;
		}
	}
	return k;
}

static int pctx(unsigned c) { return is_word(c) ? P_WORD : P_OTHER; }
static int nctx(unsigned c) { return is_word(c) ? X_WORD : X_OTHER; }
/* The contexts of position i of p[0..n) for the client's matchers: of the bytes around it, or
 * in a UTF-8 locale of the characters (an encoding error is P_ERRW/X_ERRW or no word
 * character: utf8_word_at). */
static int pctx_at(int utf8, const uint8_t *p, size_t n, size_t i)
{
	if (i == 0)
		return P_BOL;
	if (utf8 && p[i - 1] >= 0x80) {
		int w = utf8_word_before(p, n, i);
		return w == 1 ? P_WORD : w == 2 ? P_ERRW : P_OTHER;
	}
	return pctx(p[i - 1]);
}
static int nctx_at(int utf8, const uint8_t *p, size_t n, size_t i)
{
	if (i == n)
		return X_EOL;
	if (utf8 && p[i] >= 0x80) {
		int w = utf8_word_at(p, n, i);
		return w == 1 ? X_WORD : w == 2 ? X_ERRW : X_OTHER;
	}
	return nctx(p[i]);
}

/* ---- DFA ---- */

struct dstate {
	int *k;                /* sorted kernel (its own part when base >= 0) */
	int n;
	int pc;
	int base;              /* -1, or the state whose kernel completes this one's */
	uint32_t hash;
};

struct builder {
	struct dstate *st;
	int n_st, cap_st;
	size_t kernel_total;   /* ints in the kernels so far, within DFA_MAX_KERNEL */
	int *tab;              /* open hash of state indices, -1 empty */
	int tab_cap;
};

static uint32_t khash(const int *k, int n, int pc, int base)
{
	uint32_t h = (2166136261u ^ (uint32_t)pc) * 16777619u ^ (uint32_t)base;
	for (int i = 0; i < n; i++)
		h = (h ^ (uint32_t)k[i]) * 16777619u;
	return h;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Find or add state (k, n, pc, base); returns its index, -1 when out of memory, -2 over the
 * limit (max_states). */
/* Sort a kernel: insertion sort while it is short (most are: qsort's calls through cmp_int
 * were a third of a large UTF-8 class's DFA construction), else qsort. */
static void sort_kernel(int *k, int n)
{
	if (n > 24) {
		qsort(k, (size_t)n, sizeof *k, cmp_int);
		return;
	}
	for (int i = 1; i < n; i++) {
		int v = k[i], j = i;
		for (; j > 0 && k[j - 1] > v; j--)
			k[j] = k[j - 1];
		k[j] = v;
	}
}

static int intern(struct builder *b, int *k, int n, int pc, int base, int max_states)
{
	sort_kernel(k, n);
	int w = 0;
	for (int i = 0; i < n; i++)
		if (w == 0 || k[w - 1] != k[i])
			k[w++] = k[i];
	n = w;
	uint32_t h = khash(k, n, pc, base);
	if (2 * (b->n_st + 1) > b->tab_cap) {
		int cap = b->tab_cap ? 2 * b->tab_cap : 1024;
		int *tab = malloc((size_t)cap * sizeof *tab);
		if (!tab)
			return -1;
		memset(tab, -1, (size_t)cap * sizeof *tab);
		for (int i = 0; i < b->n_st; i++) {
			uint32_t j = b->st[i].hash & (uint32_t)(cap - 1);
			while (tab[j] >= 0)
				j = (j + 1) & (uint32_t)(cap - 1);
			tab[j] = i;
		}
		free(b->tab);
		b->tab = tab;
		b->tab_cap = cap;
	}
	uint32_t j = h & (uint32_t)(b->tab_cap - 1);
	for (; b->tab[j] >= 0; j = (j + 1) & (uint32_t)(b->tab_cap - 1)) {
		const struct dstate *d = &b->st[b->tab[j]];
		if (d->hash == h && d->n == n && d->pc == pc && d->base == base &&
		    !memcmp(d->k, k, (size_t)n * sizeof *k))
			return b->tab[j];
	}
	/* the work and memory of a construction follow its kernels' sizes as much as its
	 * states (x{32767}: the state after k x's holds k positions) */
	if (b->n_st >= max_states || b->kernel_total + (size_t)n > DFA_MAX_KERNEL)
		return -2;
	b->kernel_total += (size_t)n;
	if (b->n_st == b->cap_st) {
		int cap = b->cap_st ? 2 * b->cap_st : 64;
		struct dstate *st = realloc(b->st, (size_t)cap * sizeof *st);
		if (!st)
			return -1;
		b->st = st;
		b->cap_st = cap;
	}
	struct dstate *d = &b->st[b->n_st];
	d->k = malloc((size_t)(n ? n : 1) * sizeof *k);
	if (!d->k)
		return -1;
	memcpy(d->k, k, (size_t)n * sizeof *k);
	d->n = n;
	d->pc = pc;
	d->base = base;
	d->hash = h;
	b->tab[j] = b->n_st;
	return b->n_st++;
}

/* Byte classes: bytes that no set, word test or terminator test tells apart share a column.
 * Partition refinement: a set splits each class it takes part of (the bytes it holds get a
 * new class), at a cost of its own size, not of 256 bytes: UTF-8's word decoder brings a
 * thousand small sets of continuation bytes.  Duplicates split nothing.  The classes are
 * then numbered in the order of their first byte, so the numbering is the partition's alone
 * (neither the sets' order nor how often they repeat changes the table). */
static int make_classes(struct dfa *d, const uint64_t (*sets)[4], int n_sets, int eol1, int eol2)
{
	/* classes: the two starting ones (either may be empty) and one per split, which needs
	 * a class with bytes on both sides: at most 2 + 255 */
	int cls[256], size[258], cnt[258], split[258], touched[258], n = 0;
	for (int k = 0; k < 2; k++)
		size[k] = 0;
	for (int c = 0; c < 256; c++) {
		cls[c] = (c == eol1 || c == eol2) ? -1 : is_word((unsigned)c);
		if (cls[c] >= 0)
			size[cls[c]]++;
	}
	n = 2;
	memset(cnt, 0, sizeof cnt);
	for (int si = 0; si < n_sets; si++) {
		int n_t = 0;
		for (int j = 0; j < 4; j++)
			for (uint64_t w = sets[si][j]; w; w &= w - 1) {
				int c = j * 64 + __builtin_ctzll(w);
				if (cls[c] >= 0 && cnt[cls[c]]++ == 0)
					touched[n_t++] = cls[c];
			}
		for (int i = 0; i < n_t; i++) {
			int k = touched[i];
			split[k] = -1;
			if (cnt[k] < size[k]) {
				split[k] = n;
				size[n++] = cnt[k];
				size[k] -= cnt[k];
			}
		}
		for (int j = 0; j < 4; j++)
			for (uint64_t w = sets[si][j]; w; w &= w - 1) {
				int c = j * 64 + __builtin_ctzll(w);
				if (cls[c] >= 0 && cnt[cls[c]] > 0 && split[cls[c]] >= 0)
					cls[c] = split[cls[c]];
			}
		for (int i = 0; i < n_t; i++)
			cnt[touched[i]] = 0;
	}
	/* number by first byte */
	int num[258], nn = 0;
	for (int k = 0; k < n; k++)
		num[k] = -1;
	for (int c = 0; c < 256; c++)
		if (cls[c] >= 0) {
			if (num[cls[c]] < 0)
				num[cls[c]] = nn++;
			cls[c] = num[cls[c]];
		}
	d->n_cls = nn;
	for (int c = 0; c < 256; c++)
		d->cls[c] = (uint8_t)(cls[c] < 0 ? nn : cls[c]);
	return 0;
}

int dfa_build(struct dfa *d, const struct nfa *m, int eol1, int eol2, int flags)
{
	memset(d, 0, sizeof *d);
	if (make_classes(d, m->sets, m->n_sets, eol1, eol2) != 0)
		return -1;
	int w = d->n_cls + 1;
	int rep[256];                     /* a representative byte per class */
	for (int c = 255; c >= 0; c--)
		rep[d->cls[c]] = c;
	int uses_word = 0;
	for (int i = 0; i < m->len; i++)
		if (m->s[i].kind == S_ASSERT && m->s[i].akind != A_BOL && m->s[i].akind != A_EOL)
			uses_word = 1;
	/* the table's budget: DFA_MAX_TABLE bytes, and never more than DFA_MAX_STATES rows */
	size_t by_size = DFA_MAX_TABLE / ((size_t)w * 4);
	int max_states = (int)(by_size < DFA_MAX_STATES ? by_size : DFA_MAX_STATES) - DFA_N_SPECIAL;

	struct builder b = { 0 };
	struct closer c;
	int rc = -2;
	int *cl = malloc((size_t)(m->len + 1) * sizeof *cl);
	int *nk = malloc((size_t)(m->len + 1) * sizeof *nk);
	/* per kind of next byte (X_WORD, X_OTHER; cl_cap -1 when no class is of that kind):
	 * the closure, its states by the class they move on (bucket bk from off[class]) and
	 * those that move on several classes (multi) */
	int *cl_of[3] = { NULL, NULL, NULL }, *bk_of[3] = { NULL, NULL, NULL };
	int *multi_of[3] = { NULL, NULL, NULL }, cl_cap[3] = { -1, -1, -1 };
	int off_of[3][257], cursor[256];
	size_t sz = (size_t)(m->len + 1) * sizeof(int);
	for (int ci = 0; ci < d->n_cls; ci++)
		cl_cap[nctx((unsigned)rep[ci])] = 0;
	for (int x = X_WORD; x <= X_OTHER; x++)
		if (cl_cap[x] >= 0 && (!(cl_of[x] = malloc(sz)) || !(bk_of[x] = malloc(sz)) ||
		                       !(multi_of[x] = malloc(sz))))
			cl_cap[x] = -2;
	/* the class a set moves on when it is one class, else -1 */
	int *set_cls = malloc((size_t)(m->n_sets + 1) * sizeof *set_cls);
	for (int si = 0; set_cls && si < m->n_sets; si++) {
		const uint64_t *st = m->sets[si];
		int cnt = 0;
		for (int i = 0; i < 4; i++)
			cnt += __builtin_popcountll(st[i]);
		set_cls[si] = -1;
		if (cnt == 0 || cnt > 8)
			continue;
		int one = -1;
		for (int i = 0; i < 4 && one != -2; i++)
			for (uint64_t wd = st[i]; wd; wd &= wd - 1) {
				int cc = d->cls[64 * i + __builtin_ctzll(wd)];
				if (one == -1)
					one = cc;
				else if (one != cc)
					one = -2;
			}
		if (one >= 0 && one < d->n_cls)
			set_cls[si] = one;
	}
	size_t cap_rows = 0;
	if (closer_init(&c, m) != 0 || !cl || !nk || !set_cls || cl_cap[X_WORD] == -2 ||
	    cl_cap[X_OTHER] == -2)
		goto out;
	int k0 = m->start;
	if (intern(&b, &k0, 1, P_BOL, -1, max_states) != 0)
		goto out;
	/* can a match start anywhere but at the line start?  How many states does a start
	 * reach (many patterns: as many)? */
	int start_mid = 0, start_width = 0;
	for (int pc = P_WORD; pc <= P_OTHER; pc++)
		for (int x = X_EOL; x <= X_OTHER; x++) {
			int match, n2 = closure(&c, &k0, 1, pc, x, cl, &match);
			start_mid |= n2 > 0 || match;
			if (n2 > start_width)
				start_width = n2;
		}
	/* Shared kernels (many alternatives: -f with thousands of patterns).  Every kernel
	 * holds the start, and closing the start walks every alternative, so building each
	 * row from whole kernels costs states x classes x patterns.  Instead a state is its
	 * own part plus a base state built before it: root[pc] is {start} after a byte of
	 * context pc, and a state reached on byte c from one with base B has base B's
	 * successor on c.  Its row then needs only its own part closed; where that moves
	 * nowhere the transition is the base's.  For a set of literals this is Aho-Corasick:
	 * the own part is a node of the trie, the base its failure state.  A state may now
	 * stand for a set another state also stands for (the DFA is not minimal), never for
	 * a wrong one: the kernel is the union along the chain, and closure distributes over
	 * union.  Not with a dead state (anchored patterns never need it: start_mid). */
	int shared = start_mid && ((flags & DFA_SHARED) || start_width >= DFA_SHARE_WIDTH);
	int root[3] = { 0, 0, 0 };
	if (shared && m->uses_prev) {
		if ((root[P_WORD] = intern(&b, &k0, 1, P_WORD, -1, max_states)) < 0 ||
		    (root[P_OTHER] = intern(&b, &k0, 1, P_OTHER, -1, max_states)) < 0) {
			rc = root[P_WORD] == -2 || root[P_OTHER] == -2 ? -1 : -2;
			goto out;
		}
	}
	for (int si = 0; si < b.n_st; si++) {
		if ((size_t)(si + DFA_N_SPECIAL + 1) * (size_t)w > cap_rows) {
			size_t cap = cap_rows ? 2 * cap_rows : (size_t)64 * (size_t)w;
			uint32_t *t = realloc(d->t, cap * sizeof *t);
			if (!t)
				goto out;
			d->t = t;
			cap_rows = cap;
		}
		uint32_t *row = d->t + (size_t)(si + DFA_N_SPECIAL) * (size_t)w;
		int pc = b.st[si].pc, match, base = b.st[si].base;
		const uint32_t *brow = base < 0 ? NULL : d->t + (size_t)(base + DFA_N_SPECIAL) * (size_t)w;
		/* the end-of-line column */
		closure(&c, b.st[si].k, b.st[si].n, pc, X_EOL, cl, &match);
		row[d->n_cls] = match || (brow && brow[d->n_cls] == DFA_MATCH) ? DFA_MATCH : DFA_EOL;
		/* the closure depends on the class only through the kind of byte next (word or
		 * other): two closures serve every class */
		int match_of[3] = { 0, 0, 0 }, n_multi[3] = { 0, 0, 0 };
		for (int x = X_WORD; x <= X_OTHER; x++) {
			if (cl_cap[x] < 0)
				continue;
			int n = closure(&c, b.st[si].k, b.st[si].n, pc, x, cl_of[x], &match_of[x]);
			/* the states that move on one class only (every state of a literal)
			 * go to that class's bucket at once, not tested against every class */
			int *off = off_of[x];
			memset(off, 0, (size_t)(d->n_cls + 1) * sizeof *off);
			for (int i = 0; i < n; i++) {
				int sc = set_cls[m->s[cl_of[x][i]].set];
				if (sc >= 0)
					off[sc + 1]++;
				else
					multi_of[x][n_multi[x]++] = cl_of[x][i];
			}
			for (int ci = 0; ci < d->n_cls; ci++)
				off[ci + 1] += off[ci];
			memcpy(cursor, off, (size_t)d->n_cls * sizeof *cursor);
			for (int i = 0; i < n; i++) {
				int sc = set_cls[m->s[cl_of[x][i]].set];
				if (sc >= 0)
					bk_of[x][cursor[sc]++] = m->s[cl_of[x][i]].out;
			}
		}
		for (int ci = 0; ci < d->n_cls; ci++) {
			unsigned ch = (unsigned)rep[ci];
			if (brow && brow[ci] == DFA_MATCH) {
				row[ci] = DFA_MATCH;
				continue;
			}
			int x = nctx(ch);
			if (match_of[x]) {
				row[ci] = DFA_MATCH;
				continue;
			}
			int nn = off_of[x][ci + 1] - off_of[x][ci];
			memcpy(nk, bk_of[x] + off_of[x][ci], (size_t)nn * sizeof *nk);
			for (int i = 0; i < n_multi[x]; i++)
				if (set_has(m->sets[m->s[multi_of[x][i]].set], ch))
					nk[nn++] = m->s[multi_of[x][i]].out;
			int npc = m->uses_prev ? (uses_word ? pctx(ch) : P_OTHER) : P_BOL;
			int to;
			if (shared) {
				/* the base's successor, or the root's when this is a root */
				int to_base = brow ? (int)brow[ci] - DFA_N_SPECIAL : root[npc];
				to = nn == 0 ? to_base : intern(&b, nk, nn, npc, to_base, max_states);
			} else {
				nk[nn++] = m->start;     /* a match may start at every position */
				if (!(flags & DFA_NO_DEAD) && !start_mid) {
					/* dead: nothing can happen before the line ends, whatever comes
					 * next (a new match can start later in the line unless the
					 * pattern is anchored at the line start: start_mid) */
					int live = 0;
					for (int x = X_EOL; x <= X_OTHER && !live; x++) {
						int n2 = closure(&c, nk, nn, npc, x, cl, &match);
						live = n2 > 0 || match;
					}
					if (!live) {
						row[ci] = DFA_DEAD;
						continue;
					}
				}
				to = intern(&b, nk, nn, npc, -1, max_states);
			}
			if (to < 0) {
				rc = to == -2 ? -1 : -2;
				goto out;
			}
			row[ci] = (uint32_t)(to + DFA_N_SPECIAL);
		}
	}
	d->n_rows = b.n_st + DFA_N_SPECIAL;
	memset(d->t, 0, (size_t)DFA_N_SPECIAL * (size_t)w * sizeof *d->t);
	d->start = DFA_N_SPECIAL;
	rc = 0;
out:
	for (int i = 0; i < b.n_st; i++)
		free(b.st[i].k);
	free(b.st);
	free(b.tab);
	free(cl);
	free(nk);
	for (int x = X_WORD; x <= X_OTHER; x++)
		free(cl_of[x]), free(bk_of[x]), free(multi_of[x]);
	free(set_cls);
	closer_free(&c);
	if (rc != 0)
		dfa_free(d);
	return rc;
}

/* ---- the DFA of word assertions on characters (UTF-8) ----
 * In a UTF-8 locale \b \B \< \> and -w look at the characters around a position, and the
 * kind of the next character is known only at its last byte (0xC3 starts é and ×).  A state
 * here is either at a character boundary, (kernel K, kind of the last character: pc), as
 * dfa_build's, or inside a character: (Sw, So, T, flags).  On a character's first byte the
 * boundary closes K and the start twice, once as if the character were a word character
 * and once as if not, and both go on over its bytes (Sw, So); T, a state of the decoder
 * (tracker_dfa below: utf8.c's \w and \W as byte automata, kept in the state's base
 * field), says at the last byte which of the two the character was, and the next boundary
 * takes that branch.  A match found by one closure waits for that answer (flags mw, mo), so
 * a match is recognised up to a character late.  An encoding error (T dies: every byte of
 * the broken sequence is a character of its own, no word character) takes the "not a word
 * character" branch (and flag me: an empty match between two of its bytes), and the byte
 * that broke it starts again from the boundary after an error (state 1).  Under -w (nfa.utf8
 * 2) matches also start inside a character, where only an empty one can end (m0 below).
 * The client's matchers (pctx_at, nctx_at, simulate) are the reference; where the pattern
 * does not keep in step with the decoder (an encoding error in it matches a lone byte) the
 * build gives up (-1) and the caller keeps the exact path. */
/* pc >= U8_MID: inside, flags pc-3; U8_MK: the last byte is a word character as an error */
enum { U8_MW = 1, U8_MO = 2, U8_ME = 4, U8_MK = 8, U8_MID = 3 };

/* Close k[0..n) inside a character: no assertion and no match may be reached (they lie
 * between the pattern's characters).  S_SET states to out, the decoder's ends reached to
 * *ended (1 word, 2 not); -1 when an assertion or the match was reached. */
static int close_mid(struct closer *c, const int *k, int n, int wend, int nend, int *out,
                     int *ended)
{
	const struct nfa *m = c->m;
	int cnt = 0;
	int sp = closer_start(c, k, n);
	*ended = 0;
	while (sp > 0) {
		int s = c->stack[--sp];
		if (s < 0 || c->mark[s] == c->gen)
			continue;
		c->mark[s] = c->gen;
		const struct nstate *st = &m->s[s];
		if (s == wend || s == nend) {
			*ended |= s == wend ? 1 : 2;
			continue;
		}
		switch (st->kind) {
		case S_SET:
			out[cnt++] = s;
			break;
		case S_SPLIT:
			c->stack[sp++] = st->out1;
			c->stack[sp++] = st->out;
			break;
		case S_EPS:
			c->stack[sp++] = st->out;
			break;
		default:
			return -1;
		}
	}
	return cnt;
}

/* The states cl[0..n) move to on byte ch, into out; returns how many. */
static int move_on(const struct nfa *m, const int *cl, int n, unsigned ch, int *out)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (set_has(m->sets[m->s[cl[i]].set], ch))
			out[k++] = m->s[cl[i]].out;
	return k;
}

/* Every set of cl[0..n) within the bytes of allow (a subset test). */
static int sets_within(const struct nfa *m, const int *cl, int n, const uint64_t *allow)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < 4; j++)
			if (m->sets[m->s[cl[i]].set][j] & ~allow[j])
				return 0;
	return 1;
}

/* The decoder as a DFA over d's byte classes: tab[tid * n_cls + ci] is the next decoder
 * state, or U8_T_WORD / U8_T_OTHER (a character ends here, of that kind) or U8_T_ERR (an
 * encoding error); state 0 is at a boundary.  allow[tid]: the bytes it takes.  The states
 * are the nodes of utf8.c's trie of the characters (utf8_word_decoder), which is minimal:
 * its equal subtrees are merged with adjacent edges to one child joined, so two nodes differ
 * exactly when their languages do, and d's classes split every node's edges by child, so
 * they tell any two apart (C.UTF-8's \w: 299 states).  Before, a subset construction over
 * the NFAs of \w and \W and Moore's refinement made the same automaton in about 20 times
 * the time.  The count, or -1 (out of memory). */
enum { U8_T_ERR = -1, U8_T_WORD = U8_DEC_WORD, U8_T_OTHER = U8_DEC_OTHER };
static int tracker_dfa(const struct u8_dec *dec, const int *rep, int n_cls, int **tab_out,
                       uint64_t (**allow_out)[4])
{
	size_t n_dec = (size_t)dec->n;
	int *tab = malloc(n_dec * (size_t)n_cls * sizeof *tab);
	uint64_t (*allow)[4] = malloc(n_dec * sizeof *allow);
	if (!tab || !allow) {
		free(tab);
		free(allow);
		return -1;
	}
	for (size_t ti = 0; ti < n_dec; ti++) {
		const struct u8_edge *e = dec->e + dec->first[ti], *end = dec->e + dec->first[ti + 1];
		memset(allow[ti], 0, sizeof allow[ti]);
		for (const struct u8_edge *x = e; x < end; x++)
			for (unsigned ch = x->lo; ch <= x->hi; ch++)
				set_add(allow[ti], ch);
		/* edges in increasing byte order, classes by their lowest byte: one pass */
		for (int ci = 0; ci < n_cls; ci++) {
			unsigned ch = (unsigned)rep[ci];
			while (e < end && e->hi < ch)
				e++;
			tab[ti * (size_t)n_cls + (size_t)ci] = e < end && e->lo <= ch ? e->to : U8_T_ERR;
		}
	}
	*tab_out = tab;
	*allow_out = allow;
	return dec->n;
}

int dfa_build_u8(struct dfa *d, const struct ast *t, int eol1, int eol2)
{
	memset(d, 0, sizeof *d);
	struct nfa m;
	struct u8_dec dec = { 0 };
	struct builder b = { 0 };
	struct closer c = { 0 };
	int rc = -2, *cl = NULL, *nk = NULL, *aw = NULL, *ao = NULL, *sw = NULL, *so = NULL;
	int *ttab = NULL;
	uint64_t (*tallow)[4] = NULL;
	if (nfa_build(&m, t) != 0) {
		nfa_free(&m);
		return -1;
	}
	int u2 = t->utf8 == 2;
	/* An encoding error is a character per byte; \b \B \< \> (glibc's regex in grep)
	 * take it as the Latin-1 character of its byte (0xC3 alone is 'A' with a tilde, a word
	 * character; 0x80 is none), -w as no word character.  errw: the pattern's assertions
	 * are of the first kind; with both kinds the exact path decides. */
	int has_re = 0, has_w = 0;
	for (int i = 0; i < t->len; i++)
		if (t->n[i].kind == N_ASSERT) {
			has_re |= t->n[i].akind >= A_WORDB && t->n[i].akind <= A_EOW;
			has_w |= t->n[i].akind == A_NPREVW || t->n[i].akind == A_NNEXTW;
		}
	int errw = has_re;
	uint64_t (*csets)[4] = NULL;
	if (has_re && has_w) {
		rc = -1;
		goto out;
	}
	/* the decoder of the characters' kinds (utf8_word_decoder, tracker_dfa); it is no
	 * part of the NFA, so the pattern's closures end no character (wend, nend: none) */
	int wend = -1, nend = -1;
	if (utf8_word_decoder(&dec) != 0)
		goto out;
	size_t sz = (size_t)(2 * m.len + 4) * sizeof(int);
	if (closer_init(&c, &m) != 0 || !(cl = malloc(sz)) || !(nk = malloc(sz)) ||
	    !(aw = malloc(sz)) || !(ao = malloc(sz)) || !(sw = malloc(sz)) || !(so = malloc(sz)))
		goto out;
	rc = -1;
	/* bytes a pattern may move on at a boundary: ASCII and the lead bytes C2-F4 */
	uint64_t at_bound[4] = { ~0ull, ~0ull, 0, 0 };
	for (unsigned ch = 0xC2; ch <= 0xF4; ch++)
		set_add(at_bound, ch);
	/* starts inside a character (u2, -w: grep moves on byte by byte) may only match empty
	 * there, with the kinds (the character's, not a word character) */
	int m0[3] = { 0, 0, 0 }, m0_err = 0, m0e[2][2] = { { 0, 0 }, { 0, 0 } };
	for (int pc = P_WORD; pc <= P_OTHER; pc++) {
		int n2 = closure(&c, &m.start, 1, pc, X_OTHER, cl, &m0[pc]);
		if (!sets_within(&m, cl, n2, at_bound))
			goto out;
		/* between two bytes of an encoding error (every position: neither is a word
		 * character) */
		if (pc == P_OTHER)
			m0_err = m0[pc];
		if (!u2)
			m0[pc] = 0;
		/* many alternatives: dfa_build's shared kernels are not here, keep the exact path */
		if (n2 >= DFA_SHARE_WIDTH)
			goto out;
	}
	/* errw: an empty match between two bytes of a broken sequence, by their kinds (1 word);
	 * and the bytes that are word characters as errors get classes of their own */
	for (int a = 0; errw && a < 2; a++)
		for (int z = 0; z < 2; z++)
			closure(&c, &m.start, 1, a ? P_WORD : P_OTHER, z ? X_WORD : X_OTHER, cl, &m0e[a][z]);
	/* byte classes: the pattern's sets, the bytes that are word characters as errors
	 * (errw), and per decoder node the bytes that go to each of its children */
	size_t n_cs = (size_t)m.n_sets + 1 + (size_t)dec.first[dec.n];
	if (!(csets = malloc(n_cs * sizeof *csets))) {
		rc = -2;
		goto out;
	}
	if (m.n_sets > 0)       /* (m.sets is NULL without sets: `\b` alone) */
		memcpy(csets, m.sets, (size_t)m.n_sets * sizeof *csets);
	n_cs = (size_t)m.n_sets;
	if (errw) {
		memset(csets[n_cs], 0, sizeof csets[n_cs]);
		for (unsigned ch = 0x80; ch <= 0xFF; ch++)
			if (utf8_err_word(ch))
				set_add(csets[n_cs], ch);
		n_cs++;
	}
	for (int ti = 0; ti < dec.n; ti++) {
		const struct u8_edge *e = dec.e + dec.first[ti];
		int ne = dec.first[ti + 1] - dec.first[ti];
		for (int k = 0; k < ne; k++) {
			int dup = 0;
			for (int j = 0; j < k && !dup; j++)
				dup = e[j].to == e[k].to;
			if (dup)
				continue;
			memset(csets[n_cs], 0, sizeof csets[n_cs]);
			for (int j = k; j < ne; j++)
				if (e[j].to == e[k].to)
					for (unsigned ch = e[j].lo; ch <= e[j].hi; ch++)
						set_add(csets[n_cs], ch);
			n_cs++;
		}
	}
	if (make_classes(d, (const uint64_t (*)[4])csets, (int)n_cs, eol1, eol2) != 0 ||
	    d->n_cls + 1 < 8)
		goto out;
	int w = d->n_cls + 1;
	int rep[256];
	for (int ch = 255; ch >= 0; ch--)
		rep[d->cls[ch]] = ch;
	if (tracker_dfa(&dec, rep, d->n_cls, &ttab, &tallow) < 0) {
		rc = -2;
		goto out;
	}
	size_t by_size = DFA_MAX_TABLE / ((size_t)w * 4);
	int max_states = (int)(by_size < DFA_MAX_STATES ? by_size : DFA_MAX_STATES) - DFA_N_SPECIAL;
	int k0 = 0;
	if (intern(&b, &k0, 0, P_BOL, -1, max_states) != 0 ||
	    intern(&b, &k0, 0, P_OTHER, -1, max_states) != 1 ||  /* 1: after an encoding error */
	    (errw && intern(&b, &k0, 0, P_WORD, -1, max_states) != 2))   /* 2: a word one */
		goto out;
	size_t cap_rows = 0;
	for (int si = 0; si < b.n_st; si++) {
		if ((size_t)(si + DFA_N_SPECIAL + 1) * (size_t)w > cap_rows) {
			size_t cap = cap_rows ? 2 * cap_rows : (size_t)64 * (size_t)w;
			uint32_t *nt = realloc(d->t, cap * sizeof *nt);
			if (!nt) {
				rc = -2;
				goto out;
			}
			d->t = nt;
			cap_rows = cap;
		}
		uint32_t *row = d->t + (size_t)(si + DFA_N_SPECIAL) * (size_t)w;
		const uint32_t *erow = d->t + (size_t)(1 + DFA_N_SPECIAL) * (size_t)w;
		int pc = b.st[si].pc, mw, mo, me = 0, mk = 0, n_aw, n_ao, tid = 0, ended;
		if (pc < U8_MID) {
			int n = b.st[si].n, match;
			memcpy(nk, b.st[si].k, (size_t)n * sizeof *nk);
			nk[n++] = m.start;
			closure(&c, nk, n, pc, X_EOL, cl, &match);
			row[d->n_cls] = match ? DFA_MATCH : DFA_EOL;
			n_aw = closure(&c, nk, n, pc, X_WORD, aw, &mw);
			n_ao = closure(&c, nk, n, pc, X_OTHER, ao, &mo);
			if (!sets_within(&m, aw, n_aw, at_bound) || !sets_within(&m, ao, n_ao, at_bound))
				goto out;
		} else {
			int f = pc - U8_MID, nw = 0, no = 0;
			mw = f & U8_MW, mo = f & U8_MO, me = f & U8_ME, mk = (f & U8_MK) != 0;
			/* errw: if the sequence breaks, the row after its last byte as an error */
			if (mk)
				erow = d->t + (size_t)(2 + DFA_N_SPECIAL) * (size_t)w;
			tid = b.st[si].base;
			for (int i = 0; i < b.st[si].n; i++) {
				int v = b.st[si].k[i];
				if (v % 2 == 0)
					sw[nw++] = v / 2;
				else
					so[no++] = v / 2;
			}
			n_aw = close_mid(&c, sw, nw, wend, nend, aw, &ended);
			n_ao = n_aw < 0 || ended ? -1 : close_mid(&c, so, no, wend, nend, ao, &ended);
			if (n_ao < 0 || ended)
				goto out;
			/* the pattern's bytes inside a character are ones the decoder takes there */
			if (!sets_within(&m, aw, n_aw, tallow[tid]) || !sets_within(&m, ao, n_ao, tallow[tid]))
				goto out;
			row[d->n_cls] = (errw ? me : mo || me) ? DFA_MATCH : erow[d->n_cls];
		}
		for (int ci = 0; ci < d->n_cls; ci++) {
			unsigned ch = (unsigned)rep[ci];
			int tto = ttab[(size_t)tid * (size_t)d->n_cls + (size_t)ci];
			int nw = move_on(&m, aw, n_aw, ch, sw), no = move_on(&m, ao, n_ao, ch, so);
			int to;
			if (tto == U8_T_WORD || tto == U8_T_OTHER) {
				/* the character ends here: its kind picks the closure */
				int word = tto == U8_T_WORD, multi = pc >= U8_MID;
				if (word ? mw || (multi && m0[P_WORD]) : mo || (multi && m0[P_OTHER])) {
					row[ci] = DFA_MATCH;
					continue;
				}
				to = intern(&b, word ? sw : so, word ? nw : no, word ? P_WORD : P_OTHER, -1,
				            max_states);
			} else if (tto == U8_T_ERR) {
				/* an encoding error: each of its bytes a character (without errw none
				 * a word character); this byte again from the boundary after it.
				 * errw: me holds the matches the broken bytes allow */
				int kc = errw && utf8_err_word(ch);
				if (errw ? (pc >= U8_MID ? me : kc ? mw : mo) : mo || me) {
					row[ci] = DFA_MATCH;
					continue;
				}
				if (pc >= U8_MID) {
					row[ci] = erow[ci];
					continue;
				}
				to = intern(&b, kc ? sw : so, kc ? nw : no, kc ? P_WORD : P_OTHER, -1,
				            max_states);
			} else {
				if (mw && mo) {
					row[ci] = DFA_MATCH;
					continue;
				}
				int n = 0;
				for (int i = 0; i < nw; i++)
					nk[n++] = 2 * sw[i];
				for (int i = 0; i < no; i++)
					nk[n++] = 2 * so[i] + 1;
				int f = (mw ? U8_MW : 0) | (mo ? U8_MO : 0) |
				        (me || (pc >= U8_MID && m0_err) ? U8_ME : 0);
				if (errw) {
					/* should the sequence break: a match before its first byte (by
					 * that byte's kind as an error), or between two of its bytes */
					int kc = utf8_err_word(ch);
					int brk = pc < U8_MID ? (kc ? mw : mo) : me || m0e[mk][kc];
					f = (mw ? U8_MW : 0) | (mo ? U8_MO : 0) | (brk ? U8_ME : 0) |
					    (kc ? U8_MK : 0);
				}
				to = intern(&b, nk, n, U8_MID + f, tto, max_states);
			}
			if (to < 0) {
				rc = to == -2 ? -1 : -2;
				goto out;
			}
			row[ci] = (uint32_t)(to + DFA_N_SPECIAL);
		}
	}
	d->n_rows = b.n_st + DFA_N_SPECIAL;
	memset(d->t, 0, (size_t)DFA_N_SPECIAL * (size_t)w * sizeof *d->t);
	d->start = DFA_N_SPECIAL;
	rc = 0;
out:
	for (int i = 0; i < b.n_st; i++)
		free(b.st[i].k);
	free(b.st);
	free(b.tab);
	free(cl), free(nk), free(aw), free(ao), free(sw), free(so), free(ttab), free(tallow);
	free(csets);
	if (c.m)
		closer_free(&c);
	utf8_word_decoder_free(&dec);
	nfa_free(&m);
	if (rc != 0)
		dfa_free(d);
	return rc;
}

/* ---- UTF-8 word assertions over ASCII patterns: the C-locale DFA with a "maybe" ----
 * dfa_build_u8's table carries a decoder of the characters' kinds (about 300 states times
 * the pattern's), which made start-up three times C's for -w fox.  When the pattern moves
 * only on ASCII bytes and cannot match empty, every match is ASCII and starts and ends at
 * character boundaries; the characters around it are known from the bytes there, except when
 * such a byte is >= 0x80 (a multibyte character, or an encoding error, whose kind the table
 * would need the decoder for).  So the table here is dfa_build's, with bytes >= 0x80 as one
 * class of unknown kind, and two NFA runs in each state: U, where a word assertion that looks
 * at an unknown side fails, and O, where it holds.  U's matches are matches (every
 * assertion it passed saw known kinds), O's are a superset, and a line where O matched but U
 * did not is one the table cannot decide: DFA_MAYBE at its end.  The segment then stops and
 * the client runs the file again on the exact path (grep.c maybe_redo); on ASCII text, and
 * wherever no match touches a byte >= 0x80, that never happens.  A state is (kernel, pc):
 * kernel entries 2s (U) and 2s + 1 (O); pc the kind of the byte before (P_BOL, P_WORD,
 * P_OTHER, 3 unknown) plus 4 once O has matched (O's states are dropped then: only U can
 * still change the verdict).  No dead state. */
enum { AW_UNK = 3, AW_MAYBE = 4 };

/* closure of U's (which 0) or O's (1) part of k[0..n) plus the start, into out as NFA states */
static int aw_close(struct closer *c, const int *k, int n, int which, int pc, int nc, int *tmp,
                    int *out, int *match)
{
	int cnt = 0;
	for (int i = 0; i < n; i++)
		if ((k[i] & 1) == which)
			tmp[cnt++] = k[i] >> 1;
	tmp[cnt++] = c->m->start;
	int kp = pc == AW_UNK ? (which ? P_UNK1 : P_UNK0) : pc;
	int kn = nc == AW_UNK ? (which ? X_UNK1 : X_UNK0) : nc;
	return closure(c, tmp, cnt, kp, kn, out, match);
}

int dfa_build_ascii_w(struct dfa *d, const struct ast *t, int eol1, int eol2)
{
	memset(d, 0, sizeof *d);
	struct nfa m;
	struct builder b = { 0 };
	struct closer c = { 0 };
	int rc = -2, *tmp = NULL, *cu = NULL, *co = NULL, *nk = NULL;
	uint64_t (*csets)[4] = NULL;
	if (nfa_build(&m, t) != 0) {
		nfa_free(&m);
		return -1;
	}
	size_t sz = (size_t)(2 * m.len + 4) * sizeof(int);
	int cstride = m.len + 1;        /* cu, co: a closure per kind of next byte */
	if (closer_init(&c, &m) != 0 || !(tmp = malloc(sz)) || !(cu = malloc(4 * sz)) ||
	    !(co = malloc(4 * sz)) || !(nk = malloc(sz)) ||
	    !(csets = malloc(((size_t)m.n_sets + 1) * sizeof *csets)))
		goto out;
	rc = 1;
	/* every set within ASCII */
	for (int i = 0; i < m.n_sets; i++)
		if (m.sets[i][2] | m.sets[i][3])
			goto out;
	/* no empty match, whatever the kinds around (O's gates, the loosest) */
	for (int pc = P_BOL; pc <= AW_UNK; pc++)
		for (int nc = X_EOL; nc <= AW_UNK; nc++) {
			int match;
			aw_close(&c, NULL, 0, 1, pc, nc, tmp, cu, &match);
			if (match)
				goto out;
		}
	rc = -2;
	if (m.n_sets > 0)
		memcpy(csets, m.sets, (size_t)m.n_sets * sizeof *csets);
	memset(csets[m.n_sets], 0, sizeof csets[m.n_sets]);
	for (unsigned ch = 0x80; ch <= 0xFF; ch++)
		set_add(csets[m.n_sets], ch);
	if (make_classes(d, (const uint64_t (*)[4])csets, m.n_sets + 1, eol1, eol2) != 0) {
		rc = -1;
		goto out;
	}
	int w = d->n_cls + 1;
	int rep[256];
	for (int ch = 255; ch >= 0; ch--)
		rep[d->cls[ch]] = ch;
	size_t by_size = DFA_MAX_TABLE / ((size_t)w * 4);
	int max_states = (int)(by_size < DFA_MAX_STATES ? by_size : DFA_MAX_STATES) - DFA_N_SPECIAL;
	if (intern(&b, nk, 0, P_BOL, -1, max_states) != 0)
		goto out;
	size_t cap_rows = 0;
	for (int si = 0; si < b.n_st; si++) {
		if ((size_t)(si + DFA_N_SPECIAL + 1) * (size_t)w > cap_rows) {
			size_t cap = cap_rows ? 2 * cap_rows : (size_t)16 * (size_t)w;
			uint32_t *nt = realloc(d->t, cap * sizeof *nt);
			if (!nt)
				goto out;
			d->t = nt;
			cap_rows = cap;
		}
		uint32_t *row = d->t + (size_t)(si + DFA_N_SPECIAL) * (size_t)w;
		const int *k = b.st[si].k;
		int n = b.st[si].n, pc = b.st[si].pc & 3, mf = b.st[si].pc & AW_MAYBE, mu, mo;
		aw_close(&c, k, n, 0, pc, X_EOL, tmp, cu, &mu);
		aw_close(&c, k, n, 1, pc, X_EOL, tmp, co, &mo);
		row[d->n_cls] = mu ? DFA_MATCH : mf || mo ? DFA_MAYBE : DFA_EOL;
		/* the closures depend on the class only through the kind of the byte next (word,
		 * other, unknown): three pairs serve every class */
		int nu_of[4], no_of[4], mu_of[4], mo_of[4];
		for (int x = X_WORD; x <= AW_UNK; x++) {
			nu_of[x] = aw_close(&c, k, n, 0, pc, x, tmp, cu + x * cstride, &mu_of[x]);
			mo_of[x] = 0;
			no_of[x] = mf || mu_of[x] ? 0 :
			           aw_close(&c, k, n, 1, pc, x, tmp, co + x * cstride, &mo_of[x]);
		}
		for (int ci = 0; ci < d->n_cls; ci++) {
			unsigned ch = (unsigned)rep[ci];
			int x = ch >= 0x80 ? AW_UNK : nctx(ch);
			if (mu_of[x]) {
				row[ci] = DFA_MATCH;
				continue;
			}
			const int *u = cu + x * cstride, *o = co + x * cstride;
			int f = mf || mo_of[x] ? AW_MAYBE : 0, nn = 0;
			for (int i = 0; i < nu_of[x]; i++)
				if (set_has(m.sets[m.s[u[i]].set], ch))
					nk[nn++] = 2 * m.s[u[i]].out;
			for (int i = 0; i < no_of[x] && !f; i++)
				if (set_has(m.sets[m.s[o[i]].set], ch))
					nk[nn++] = 2 * m.s[o[i]].out + 1;
			int npc = ch >= 0x80 ? AW_UNK : pctx(ch);
			int to = intern(&b, nk, nn, npc | f, -1, max_states);
			if (to < 0) {
				rc = to == -2 ? -1 : -2;
				goto out;
			}
			row[ci] = (uint32_t)(to + DFA_N_SPECIAL);
		}
	}
	d->n_rows = b.n_st + DFA_N_SPECIAL;
	memset(d->t, 0, (size_t)DFA_N_SPECIAL * (size_t)w * sizeof *d->t);
	d->start = DFA_N_SPECIAL;
	rc = 0;
out:
	for (int i = 0; i < b.n_st; i++)
		free(b.st[i].k);
	free(b.st);
	free(b.tab);
	free(tmp), free(cu), free(co), free(nk), free(csets);
	if (c.m)
		closer_free(&c);
	nfa_free(&m);
	if (rc != 0)
		dfa_free(d);
	return rc;
}

/* ---- the DFA of a set of strings ----
 * Thousands of -F (or plain BRE/ERE) strings make an alternation of concatenations of one-byte
 * sets.  Their DFA is Aho-Corasick's automaton, which is built straight from the trie in the
 * table itself, with no NFA closures and no kernels to hash: dfa_build's shared kernels
 * reach the same automaton, at several times the cost (10,000 ids of 8 bytes: ~40 ms there,
 * ~10 ms here, most of it reading the AST).  Each set must be exactly one byte class (a byte, or
 * a letter and its capital under -i); anything else is left to dfa_build. */

/* The strings under root: the set-node indices of each in order, each string closed by -1,
 * into *out (malloc'd, *n_out entries).  0; 1 when root is not an alternation of strings
 * (another kind of node, or an empty string); -2 when out of memory.  Both walks keep their
 * stacks on the heap (the depth of the AST follows the input). */
static int literal_strings(const struct ast *t, int root, int **out, size_t *n_out)
{
	int *alt = malloc(((size_t)t->len + 1) * sizeof *alt);
	int *cat = malloc(((size_t)t->len + 1) * sizeof *cat);
	int *seq = malloc(((size_t)t->len + 1) * sizeof *seq);
	size_t n_alt = 0, n = 0;
	int rc = -2;
	if (!alt || !cat || !seq)
		goto out;
	rc = 1;
	alt[n_alt++] = root;
	while (n_alt > 0) {
		int x = alt[--n_alt];
		if (x < 0)
			goto out;
		if (t->n[x].kind == N_ALT) {
			alt[n_alt++] = t->n[x].b;
			alt[n_alt++] = t->n[x].a;
			continue;
		}
		size_t n_cat = 0, start = n;
		cat[n_cat++] = x;
		while (n_cat > 0) {
			int y = cat[--n_cat];
			if (y < 0)
				goto out;
			if (t->n[y].kind == N_CAT) {
				cat[n_cat++] = t->n[y].b;
				cat[n_cat++] = t->n[y].a;
			} else if (t->n[y].kind == N_SET) {
				seq[n++] = y;
			} else {
				goto out;
			}
		}
		if (n == start)
			goto out;
		seq[n++] = -1;
	}
	*out = seq;
	*n_out = n;
	seq = NULL;
	rc = 0;
out:
	free(alt);
	free(cat);
	free(seq);
	return rc;
}

#define LIT_MAX_SETS 256   /* different sets of one class each: at most one per byte */
#define LIT_TRIE_SLACK 4   /* trie rows made, per row the table may keep */

/* The rows of a set of strings under -x (see dfa_build_line_literals): the trie itself, a
 * missing child is dead.  seq holds each string's classes, -1 after each.  0, 1 (too big)
 * or -2. */
static int line_trie(struct dfa *d, const int *seq, size_t n_seq, const int *set_cls,
                     int no_dead)
{
	size_t w = (size_t)d->n_cls + 1;
	size_t max_rows = DFA_MAX_TABLE / (w * sizeof *d->t);
	if (max_rows > DFA_MAX_STATES)
		max_rows = DFA_MAX_STATES;
	if (max_rows > n_seq + DFA_N_SPECIAL + 2)
		max_rows = n_seq + DFA_N_SPECIAL + 2;
	/* no_dead: the dead state is row `dead`, which stays there until the line ends */
	uint32_t root = DFA_N_SPECIAL, dead = no_dead ? root + 1 : DFA_DEAD;
	uint32_t n_rows = no_dead ? root + 2 : root + 1;
	d->t = calloc(max_rows * w, sizeof *d->t);
	uint8_t *fin = calloc(max_rows, 1);
	int rc = -2;
	if (!d->t || !fin)
		goto out;
	rc = 1;
	for (size_t i = 0; i < n_seq; i++) {
		uint32_t v = root;
		for (; seq[i] >= 0; i++) {
			uint32_t *to = &d->t[v * w + (size_t)set_cls[seq[i]]];
			if (*to == 0) {
				if (n_rows == max_rows)
					goto out;
				*to = n_rows++;
			}
			v = *to;
		}
		fin[v] = 1;
	}
	for (uint32_t r = root; r < n_rows; r++) {
		uint32_t *row = &d->t[(size_t)r * w];
		for (size_t c = 0; c < w - 1; c++)
			if (row[c] == 0 || r == dead)
				row[c] = dead;
		/* the line ends: it is one of the strings when a string ends here */
		row[w - 1] = fin[r] ? DFA_MATCH : DFA_EOL;
	}
	d->n_rows = (int)n_rows;
	d->start = (int)root;
	rc = 0;
out:
	free(fin);
	return rc;
}

static int lit_build(struct dfa *d, const struct ast *t, int eol1, int eol2, int line);

int dfa_build_literals(struct dfa *d, const struct ast *t, int eol1, int eol2)
{
	return lit_build(d, t, eol1, eol2, 0);
}

int dfa_build_line_literals(struct dfa *d, const struct ast *t, int eol1, int eol2, int flags)
{
	return lit_build(d, t, eol1, eol2, flags & DFA_NO_DEAD ? 2 : 1);
}

/* line 0: lines holding one of the strings; 1: lines that are one (-x); 2: the same with
 * the dead state a row (DFA_NO_DEAD) */
static int lit_build(struct dfa *d, const struct ast *t, int eol1, int eol2, int line)
{
	memset(d, 0, sizeof *d);
	int *seq = NULL, *fail = NULL, *queue = NULL;
	size_t n_seq = 0;
	int rc = literal_strings(t, t->root, &seq, &n_seq);
	if (rc != 0)
		return rc;
	/* the different sets (few: bytes, or letter pairs under -i), seq's entries mapped to
	 * their index; then the classes they make, and seq's entries to those */
	uint64_t (*sets)[4] = malloc(LIT_MAX_SETS * sizeof *sets);
	int hash[4 * LIT_MAX_SETS], n_sets = 0, set_cls[LIT_MAX_SETS];
	rc = -2;
	if (!sets)
		goto out;
	rc = 1;
	memset(hash, -1, sizeof hash);
	for (size_t i = 0; i < n_seq; i++) {
		if (seq[i] < 0)
			continue;
		const uint64_t *s = ast_set(t, seq[i]);
		uint64_t h = 0;
		for (int k = 0; k < 4; k++)
			h = (h ^ s[k]) * 0x9e3779b97f4a7c15ull;
		size_t j = (size_t)(h >> 20) & (4 * LIT_MAX_SETS - 1);
		while (hash[j] >= 0 && memcmp(sets[hash[j]], s, 32))
			j = (j + 1) & (4 * LIT_MAX_SETS - 1);
		if (hash[j] < 0) {
			if (n_sets == LIT_MAX_SETS)
				goto out;
			memcpy(sets[n_sets], s, 32);
			hash[j] = n_sets++;
		}
		seq[i] = hash[j];
	}
	rc = -2;
	if (make_classes(d, (const uint64_t (*)[4])sets, n_sets, eol1, eol2) != 0)
		goto out;
	rc = 1;
	for (int si = 0; si < n_sets; si++) {
		/* one class, not the terminators' (a set of several bytes in one class is that
		 * class: the classes refine every set) */
		int one = -1;
		for (int c = 0; c < 256; c++)
			if (set_has(sets[si], (unsigned)c)) {
				if (one >= 0 && one != d->cls[c])
					goto out;
				one = d->cls[c];
			}
		if (one < 0 || one >= d->n_cls)
			goto out;
		set_cls[si] = one;
	}
	if (line) {
		rc = line_trie(d, seq, n_seq, set_cls, line == 2);
		goto out;
	}
	/* The trie, in the rows themselves: 0 is "no child yet" (no row is below
	 * DFA_N_SPECIAL).  Row `root` is the start; row `full` stands for every node whose
	 * string ends with one of the strings: it only matches (DFA_MATCH in every column,
	 * one byte late like dfa_build's: on the byte after, or at the end of the line), so
	 * the trie stops there and what lies below it is never reached. */
	size_t w = (size_t)d->n_cls + 1;
	size_t max_rows = DFA_MAX_TABLE / (w * sizeof *d->t);
	if (max_rows > DFA_MAX_STATES)
		max_rows = DFA_MAX_STATES;
	/* the trie may pass the limits by rows that are cut off below (see the end): it is
	 * checked after that, up to LIT_TRIE_SLACK times the rows */
	size_t max_kept = max_rows;
	max_rows *= LIT_TRIE_SLACK;
	if (max_rows > n_seq + DFA_N_SPECIAL + 2)
		max_rows = n_seq + DFA_N_SPECIAL + 2;
	uint32_t root = DFA_N_SPECIAL, full = DFA_N_SPECIAL + 1, n_rows = DFA_N_SPECIAL + 2;
	rc = -2;
	/* calloc: pages of a big table are zeroed when first touched */
	d->t = calloc(max_rows * w, sizeof *d->t);
	fail = malloc(max_rows * sizeof *fail);
	queue = malloc(max_rows * sizeof *queue);
	if (!d->t || !fail || !queue)
		goto out;
	rc = 1;
	for (size_t i = 0; i < n_seq; i++) {
		uint32_t v = root;
		for (; seq[i] >= 0; i++) {
			uint32_t *to = &d->t[v * w + (size_t)set_cls[seq[i]]];
			if (seq[i + 1] < 0) {
				*to = full;
			} else if (*to == full) {
				/* a prefix is one of the strings: this one adds nothing */
				while (seq[i + 1] >= 0)
					i++;
			} else {
				if (*to == 0) {
					if (n_rows == max_rows)
						goto out;    /* rc 1: dfa_build may cut off more */
					*to = n_rows++;
				}
				v = *to;
			}
		}
	}
	/* Breadth first, each row completed from its failure row's, which is shallower and so
	 * complete already: a missing child is the failure row's move; a child whose failure
	 * row is `full` (a suffix of its string is one of the strings) is `full` itself. */
	size_t head = 0, tail = 0;
	for (size_t c = 0; c < w - 1; c++) {
		uint32_t *to = &d->t[root * w + c];
		if (*to == 0) {
			*to = root;
		} else if (*to != full) {
			fail[*to] = (int)root;
			queue[tail++] = (int)*to;
		}
	}
	d->t[root * w + w - 1] = DFA_EOL;
	while (head < tail) {
		uint32_t v = (uint32_t)queue[head++];
		const uint32_t *f = &d->t[(size_t)fail[v] * w];
		uint32_t *row = &d->t[v * w];
		for (size_t c = 0; c < w - 1; c++) {
			if (row[c] == 0) {
				row[c] = f[c];
			} else if (row[c] != full) {
				if (f[c] == full) {
					row[c] = full;
				} else {
					fail[row[c]] = (int)f[c];
					queue[tail++] = (int)row[c];
				}
			}
		}
		row[w - 1] = DFA_EOL;
	}
	for (size_t c = 0; c < w; c++)
		d->t[full * w + c] = DFA_MATCH;
	/* Only the rows reached from the root are kept, renumbered in breadth-first order: a
	 * string that ends where longer ones made first went on cuts their rows off (10,000
	 * random strings of 1-20 bytes: 14,945 rows made, 2 reached), and so does a child
	 * that became `full`.  A kept row's entries are kept rows or specials.  fail[] is done
	 * with: it maps old rows to new. */
	uint32_t n_kept = DFA_N_SPECIAL + 2 + (uint32_t)tail;
	rc = 2;
	if (n_kept > max_kept)
		goto out;
	rc = -2;
	uint32_t *kept = malloc((size_t)n_kept * w * sizeof *kept);
	if (!kept)
		goto out;
	fail[root] = (int)root;
	fail[full] = (int)full;
	for (size_t i = 0; i < tail; i++)
		fail[queue[i]] = DFA_N_SPECIAL + 2 + (int)i;
	memset(kept, 0, DFA_N_SPECIAL * w * sizeof *kept);
	for (uint32_t r = DFA_N_SPECIAL; r < n_kept; r++) {
		uint32_t old = r == root || r == full ? r : (uint32_t)queue[r - DFA_N_SPECIAL - 2];
		for (size_t c = 0; c < w; c++) {
			uint32_t e = d->t[(size_t)old * w + c];
			kept[(size_t)r * w + c] = e < DFA_N_SPECIAL ? e : (uint32_t)fail[e];
		}
	}
	free(d->t);
	d->t = kept;
	d->n_rows = (int)n_kept;
	d->start = DFA_N_SPECIAL;
	rc = 0;
out:
	free(seq);
	free(sets);
	free(fail);
	free(queue);
	if (rc != 0)
		dfa_free(d);
	return rc;
}

int dfa_share_binary(struct dfa *bd, const struct dfa *d)
{
	/* (DFA_DEAD in the end-of-line column is dfa_build_ascii_w's DFA_MAYBE, which the
	 * binary loops take as the text loop does; no other table has it there) */
	size_t n = (size_t)d->n_rows * (size_t)(d->n_cls + 1);
	for (size_t i = (size_t)DFA_N_SPECIAL * (size_t)(d->n_cls + 1); i < n; i++)
		if (d->t[i] == DFA_DEAD && i % (size_t)(d->n_cls + 1) != (size_t)d->n_cls)
			return -1;
	*bd = *d;                  /* t borrowed: d outlives bd (struct grep frees both) */
	bd->rows_shared = 1;
	bd->cls[0] = (uint8_t)d->n_cls;
	return 0;
}

void dfa_free(struct dfa *d)
{
	if (!d->rows_shared)
		free(d->t);
	d->t = NULL;
	d->n_rows = 0;
}

int dfa_line_matches(const struct dfa *d, const uint8_t *p, size_t n)
{
	size_t w = (size_t)d->n_cls + 1;
	uint32_t row = (uint32_t)d->start;
	for (size_t i = 0; i < n; i++) {
		row = d->t[row * w + d->cls[p[i]]];
		if (row < DFA_N_SPECIAL)
			return row == DFA_MATCH;
	}
	return d->t[row * w + (size_t)d->n_cls] == DFA_MATCH;
}

/* ---- NFA simulation (exact without back-references) ---- */

static long simulate(const struct nfa *m, const uint8_t *p, size_t n, size_t s, int anchored)
{
	struct closer c;
	long last = -1;
	int *cl = malloc((size_t)(m->len + 1) * sizeof *cl);
	int *k = malloc((size_t)(m->len + 1) * sizeof *k);
	if (closer_init(&c, m) != 0 || !cl || !k) {
		last = -2;
		goto out;
	}
	int nk = 0;
	k[nk++] = m->start;
	for (size_t i = s;; i++) {
		int pc = pctx_at(m->utf8, p, n, i);
		int nc = nctx_at(m->utf8, p, n, i);
		int match;
		int ncl = closure(&c, k, nk, pc, nc, cl, &match);
		if (match) {
			last = (long)i;
			if (!anchored)
				break;
		}
		if (i == n)
			break;
		nk = 0;
		for (int j = 0; j < ncl; j++)
			if (set_has(m->sets[m->s[cl[j]].set], p[i]))
				k[nk++] = m->s[cl[j]].out;
		/* UTF-8: a match starts on a character, never inside one */
		int inside = m->utf8 == 1 && utf8_inside(p, n, i + 1);
		if (!anchored && !inside)
			k[nk++] = m->start;
		if (nk == 0 && (anchored || !inside))
			break;
	}
out:
	closer_free(&c);
	free(cl);
	free(k);
	return last;
}

int nfa_line_matches(const struct nfa *m, const uint8_t *p, size_t n)
{
	return simulate(m, p, n, 0, 0) >= 0;
}

long nfa_longest_at(const struct nfa *m, const uint8_t *p, size_t n, size_t s)
{
	return simulate(m, p, n, s, 1);
}

/* ---- lazy DFA: the exact path's line matcher ----
 * When the scanning DFA is over its limits (thousands of patterns with ".*", counted
 * repetitions), the client matches the candidate lines.  Simulating the NFA walks every
 * alternative at every byte (1,000 patterns "u1234567.*status=[45]" over 200,000 lines:
 * 105 s); instead the states are made as the lines need them, each transition once, as a
 * DFA would (the same (kernel, kind of the byte before) states as dfa_build, whole kernels),
 * and the cache is emptied when it holds lazy_max_bytes (32 MiB), so a pattern set whose states do
 * not repeat costs about the simulation and no more memory.  In UTF-8 only where bytes
 * answer as characters (lazy_utf8_ok); else the simulation. */
size_t lazy_max_bytes = 32u << 20;
enum { LAZY_UNKNOWN = -1, LAZY_MATCH = -2 };

struct lstate {
	int *k;                /* sorted kernel */
	int n, pc;
	int eol;               /* a match at the end of the line: -1 not known yet, 0, 1 */
	uint32_t hash;
	int next[256];         /* LAZY_UNKNOWN, LAZY_MATCH, or a state */
};

struct lazy_dfa {
	const struct nfa *m;
	struct closer c;
	int *cl, *k;           /* scratch: a closure, a kernel */
	struct lstate **st;
	int n_st, cap_st;
	/* the start state's part, the same in every kernel: closed once per kind of byte before
	 * and byte (what it moves to on c, sorted), as dfa_build's shared kernels */
	int *sn[3][256];
	int snn[3][256];
	signed char sm[3][3];  /* the start's closure reaches the match: -1 not known */
	int *tab;              /* open hash of state indices, -1 empty (2 * cap_st slots) */
	int tab_cap;
	size_t bytes;
	int simulate;          /* UTF-8 where contexts or starts depend on characters */
};

/* In UTF-8 the lazy DFA (bytes) answers as the simulation (characters) when no assertion
 * looks at word characters (the others look at the line's ends only) and no thread can start
 * on a continuation byte (the simulation starts none inside a character; an empty match
 * there needs no assertion, so it is one at the line's start too). */
static int lazy_utf8_ok(struct lazy_dfa *L)
{
	const struct nfa *m = L->m;
	if (m->utf8 != 1)
		return 0;
	for (int i = 0; i < m->len; i++)
		if (m->s[i].kind == S_ASSERT && m->s[i].akind != A_BOL && m->s[i].akind != A_EOL)
			return 0;
	static const int pcs[2] = { P_BOL, P_OTHER }, ncs[2] = { X_OTHER, X_EOL };
	for (int a = 0; a < 2; a++) {
		for (int b = 0; b < 2; b++) {
			int match;
			int ncl = closure(&L->c, &m->start, 1, pcs[a], ncs[b], L->cl, &match);
			for (int j = 0; j < ncl; j++)
				for (unsigned c = 0x80; c < 0xC0; c++)
					if (set_has(m->sets[m->s[L->cl[j]].set], c))
						return 0;
		}
	}
	return 1;
}

void lazy_free(struct lazy_dfa *L)
{
	if (!L)
		return;
	for (int i = 0; i < L->n_st; i++) {
		free(L->st[i]->k);
		free(L->st[i]);
	}
	closer_free(&L->c);
	for (int pc = 0; pc < 3; pc++)
		for (int c = 0; c < 256; c++)
			free(L->sn[pc][c]);
	free(L->st);
	free(L->tab);
	free(L->cl);
	free(L->k);
	free(L);
}

static void lazy_flush(struct lazy_dfa *L)
{
	for (int i = 0; i < L->n_st; i++) {
		free(L->st[i]->k);
		free(L->st[i]);
	}
	L->n_st = 0;
	L->bytes = 0;
	for (int i = 0; i < L->tab_cap; i++)
		L->tab[i] = -1;
}

/* The state of kernel k[0..n) (sorted, no repeats) after a byte of kind pc; -1 when out of
 * memory.  *flushed is set when the cache was emptied to make room (older indices are gone). */
static int lazy_state(struct lazy_dfa *L, const int *k, int n, int pc, int *flushed)
{
	uint32_t h = khash(k, n, pc, -1);
	for (int i = (int)(h & (uint32_t)(L->tab_cap - 1)); L->tab_cap > 0; i = (i + 1) & (L->tab_cap - 1)) {
		int x = L->tab[i];
		if (x < 0)
			break;
		const struct lstate *t = L->st[x];
		if (t->hash == h && t->n == n && t->pc == pc && !memcmp(t->k, k, (size_t)n * sizeof *k))
			return x;
	}
	size_t need = sizeof(struct lstate) + (size_t)n * sizeof *k;
	if (L->bytes + need > lazy_max_bytes && L->n_st > 0) {
		lazy_flush(L);
		*flushed = 1;
	}
	if (L->n_st == L->cap_st || 2 * (L->n_st + 1) > L->tab_cap) {
		int cap = L->cap_st ? 2 * L->cap_st : 256;
		struct lstate **v = realloc(L->st, (size_t)cap * sizeof *v);
		int *tab = malloc(2 * (size_t)cap * sizeof *tab);
		if (!v || !tab) {
			free(tab);
			if (v)
				L->st = v;
			return -1;
		}
		L->st = v;
		L->cap_st = cap;
		free(L->tab);
		L->tab = tab;
		L->tab_cap = 2 * cap;
		for (int i = 0; i < L->tab_cap; i++)
			L->tab[i] = -1;
		for (int j = 0; j < L->n_st; j++) {
			int i = (int)(L->st[j]->hash & (uint32_t)(L->tab_cap - 1));
			while (L->tab[i] >= 0)
				i = (i + 1) & (L->tab_cap - 1);
			L->tab[i] = j;
		}
	}
	struct lstate *t = malloc(sizeof *t);
	int *kc = malloc(((size_t)n + 1) * sizeof *kc);
	if (!t || !kc) {
		free(t);
		free(kc);
		return -1;
	}
	memcpy(kc, k, (size_t)n * sizeof *k);
	t->k = kc;
	t->n = n;
	t->pc = pc;
	t->eol = -1;
	t->hash = h;
	for (int c = 0; c < 256; c++)
		t->next[c] = LAZY_UNKNOWN;
	int x = L->n_st++;
	L->st[x] = t;
	L->bytes += need;
	int i = (int)(h & (uint32_t)(L->tab_cap - 1));
	while (L->tab[i] >= 0)
		i = (i + 1) & (L->tab_cap - 1);
	L->tab[i] = x;
	return x;
}

/* The start state's moves on c after a byte of kind pc (sorted, in L->sn), and whether its
 * closure matches; -1 when out of memory. */
static int lazy_start(struct lazy_dfa *L, int pc, unsigned c)
{
	const struct nfa *m = L->m;
	int nc = nctx(c), match;
	if (L->sn[pc][c] && L->sm[pc][nc] >= 0)
		return 0;
	int ncl = closure(&L->c, &m->start, 1, pc, nc, L->cl, &match);
	L->sm[pc][nc] = (signed char)match;
	int *v = malloc(((size_t)ncl + 1) * sizeof *v), nv = 0;
	if (!v)
		return -1;
	for (int j = 0; j < ncl; j++)
		if (set_has(m->sets[m->s[L->cl[j]].set], c))
			v[nv++] = m->s[L->cl[j]].out;
	qsort(v, (size_t)nv, sizeof *v, cmp_int);
	free(L->sn[pc][c]);
	L->sn[pc][c] = v;
	L->snn[pc][c] = nv;
	return 0;
}

/* The transition of state s on byte c: LAZY_MATCH, a state, or -1 (out of memory). */
static int lazy_step(struct lazy_dfa *L, int s, unsigned c)
{
	const struct nfa *m = L->m;
	struct lstate *t = L->st[s];
	int match, flushed = 0;
	if (lazy_start(L, t->pc, c) != 0)
		return -1;
	if (L->sm[t->pc][nctx(c)]) {
		t->next[c] = LAZY_MATCH;
		return LAZY_MATCH;
	}
	/* the kernel's own part: every state but the start (closures distribute over union) */
	int own = 0;
	for (int j = 0; j < t->n; j++)
		if (t->k[j] != m->start)
			L->k[own++] = t->k[j];
	int ncl = closure(&L->c, L->k, own, t->pc, nctx(c), L->cl, &match);
	if (match) {
		t->next[c] = LAZY_MATCH;
		return LAZY_MATCH;
	}
	int nk = 0;
	for (int j = 0; j < ncl; j++)
		if (set_has(m->sets[m->s[L->cl[j]].set], c))
			L->k[nk++] = m->s[L->cl[j]].out;
	memcpy(L->k + nk, L->sn[t->pc][c], (size_t)L->snn[t->pc][c] * sizeof *L->k);
	nk += L->snn[t->pc][c];
	L->k[nk++] = m->start;
	qsort(L->k, (size_t)nk, sizeof *L->k, cmp_int);
	int u = 0;
	for (int j = 0; j < nk; j++)
		if (u == 0 || L->k[u - 1] != L->k[j])
			L->k[u++] = L->k[j];
	int x = lazy_state(L, L->k, u, pctx(c), &flushed);
	if (x >= 0 && !flushed)
		t->next[c] = x;
	return x;
}

int lazy_line_matches(struct lazy_dfa **lp, const struct nfa *m, const uint8_t *p, size_t n)
{
	struct lazy_dfa *L = *lp;
	if (L && L->simulate)
		return nfa_line_matches(m, p, n);
	if (!L) {
		L = calloc(1, sizeof *L);
		if (!L)
			return nfa_line_matches(m, p, n);
		L->m = m;
		memset(L->sm, -1, sizeof L->sm);
		L->cl = malloc(((size_t)m->len + 1) * sizeof *L->cl);
		L->k = malloc((2 * (size_t)m->len + 2) * sizeof *L->k);
		if (closer_init(&L->c, m) != 0 || !L->cl || !L->k) {
			lazy_free(L);
			return nfa_line_matches(m, p, n);
		}
		L->simulate = m->utf8 && !lazy_utf8_ok(L);
		*lp = L;
		if (L->simulate)
			return nfa_line_matches(m, p, n);
	}
	int flushed = 0;
	int k0 = m->start;
	int s = lazy_state(L, &k0, 1, P_BOL, &flushed);
	for (size_t i = 0; i < n && s >= 0; i++) {
		int x = L->st[s]->next[p[i]];
		if (x == LAZY_UNKNOWN)
			x = lazy_step(L, s, p[i]);
		if (x == LAZY_MATCH)
			return 1;
		s = x;
	}
	if (s < 0)
		return nfa_line_matches(m, p, n);   /* out of memory: the simulation needs less */
	struct lstate *t = L->st[s];
	if (t->eol < 0) {
		int match;
		closure(&L->c, t->k, t->n, t->pc, X_EOL, L->cl, &match);
		t->eol = match;
	}
	return t->eol;
}

/* Threads are kept in order of their start (smallest first), and a closure visits them in
 * that order, so a state reached by two threads keeps the earlier start: what remains is
 * exactly the set of leftmost candidates. */
int nfa_leftmost_longest(const struct nfa *m, const uint8_t *p, size_t n, size_t from,
                         size_t *ms, size_t *me)
{
	size_t sz = (size_t)m->len + 1;
	int *k = malloc(sz * sizeof *k), *cl = malloc(sz * sizeof *cl), *stk = malloc(sz * 3 * sizeof *stk);
	size_t *kt = malloc(sz * sizeof *kt), *clt = malloc(sz * sizeof *clt), *stt = malloc(sz * 3 * sizeof *stt);
	unsigned *mark = calloc(sz, sizeof *mark);
	long best_s = -1, best_e = -1;
	int nk = 0;
	if (!k || !cl || !stk || !kt || !clt || !stt || !mark)
		goto out;
	for (size_t i = from;; i++) {
		if (best_s < 0 && !(m->utf8 == 1 && utf8_inside(p, n, i))) {
			k[nk] = m->start;
			kt[nk++] = i;
		}
		int pc = pctx_at(m->utf8, p, n, i);
		int nc = nctx_at(m->utf8, p, n, i);
		unsigned gen = (unsigned)(i - from + 1);
		int sp = 0, ncl = 0;
		for (int j = nk - 1; j >= 0; j--) {
			stk[sp] = k[j];
			stt[sp++] = kt[j];
		}
		while (sp > 0) {
			int s = stk[--sp];
			size_t tag = stt[sp];
			if (s < 0 || mark[s] == gen)
				continue;
			mark[s] = gen;
			const struct nstate *st = &m->s[s];
			switch (st->kind) {
			case S_SET:
				cl[ncl] = s;
				clt[ncl++] = tag;
				break;
			case S_MATCH:
				if (best_s < 0 || (long)tag < best_s || ((long)tag == best_s && (long)i > best_e)) {
					best_s = (long)tag;
					best_e = (long)i;
				}
				break;
			case S_SPLIT:
				stk[sp] = st->out1;
				stt[sp++] = tag;
				stk[sp] = st->out;
				stt[sp++] = tag;
				break;
			case S_EPS:
				stk[sp] = st->out;
				stt[sp++] = tag;
				break;
			case S_ASSERT:
				if (assert_ok(st->akind, pc, nc)) {
					stk[sp] = st->out;
					stt[sp++] = tag;
				}
				break;
			}
		}
		if (i == n)
			break;
		nk = 0;
		for (int j = 0; j < ncl; j++)
			if ((best_s < 0 || (long)clt[j] <= best_s) && set_has(m->sets[m->s[cl[j]].set], p[i])) {
				k[nk] = m->s[cl[j]].out;
				kt[nk++] = clt[j];
			}
		if (nk == 0 && best_s >= 0)
			break;
	}
out:
	free(k), free(cl), free(stk), free(kt), free(clt), free(stt), free(mark);
	if (best_s < 0)
		return 0;
	*ms = (size_t)best_s;
	*me = (size_t)best_e;
	return 1;
}

/* ---- the spans of a set of strings (-o, colour, -w) ----
 * nfa_leftmost_longest adds the start closure at every position: with 10,000 strings that is
 * 10,000 threads a byte (36 s where GNU grep takes 0.07 s).  For a set of strings the same
 * spans come from the trie: from each start position in turn, walk it along the text and keep
 * the longest end where a string ends (and -w's or -x's assertion holds); the first position
 * with one gives the leftmost-longest span.  The language is the AST's, so the spans are the
 * NFA's.  The trie's edges are classes: the distinct sets must be pairwise disjoint (bytes,
 * or letter pairs under -i), each then its own class. */

#define STRSET_MAX_TABLE ((size_t)128 << 20)  /* bytes of rows; past them the NFA */
#define STRSET_MAX_SETS  4096                  /* distinct byte sets */
#define STRSET_MAX_FRONT 4096                  /* trie nodes one piece of a string ends at */

struct strset {
	uint8_t cls[256];      /* byte -> class; 0: in no set */
	int w;                 /* classes + 1: the width of a row */
	uint32_t *t;           /* rows of w children (0: none); row 0 unused, row 1 the root */
	uint8_t *fin;          /* fin[row]: a string ends there */
	uint32_t n_rows, cap_rows, max_rows;
	int word, line, utf8;
	/* Aho-Corasick's links, to find the leftmost start in one pass (ac_spans: without -w
	 * and -x) and whether a line holds a match (strset_line_matches): fail[row] the row of
	 * the longest proper suffix in the trie, depth[row] its string's length, out[row] the
	 * length of the longest string that ends there (0: none), next_fin[row] the row of the
	 * longest proper suffix where a string ends (0: none).  NULL when out of memory. */
	uint32_t *fail, *depth, *out, *next_fin;
	int ac_spans;
};

void strset_free(struct strset *s)
{
	if (!s)
		return;
	free(s->t);
	free(s->fin);
	free(s->fail);
	free(s->depth);
	free(s->out);
	free(s->next_fin);
	free(s);
}

/* Trie nodes that a piece of a string leads to (from a set of nodes). */
struct front {
	uint32_t *v;
	size_t n;
};

struct sbuild {
	struct strset *s;
	const struct ast *t;
	uint64_t (*sets)[4];   /* the distinct byte sets */
	int n_sets;
	int hash[4 * STRSET_MAX_SETS];
	uint8_t *cl;           /* each set's classes: cl[k * 256 ..], n_cl[k] of them */
	int *n_cl;
	int rc;                /* sticky: 1 not a set of strings / too big, -2 out of memory */
};

/* The index of byte set `set` among the distinct ones (added when new), or -1. */
static int sb_set(struct sbuild *b, const uint64_t *set, int add)
{
	uint64_t h = 0;
	for (int k = 0; k < 4; k++)
		h = (h ^ set[k]) * 0x9e3779b97f4a7c15ull;
	size_t j = (size_t)(h >> 20) & (4 * STRSET_MAX_SETS - 1);
	while (b->hash[j] >= 0 && memcmp(b->sets[b->hash[j]], set, 32))
		j = (j + 1) & (4 * STRSET_MAX_SETS - 1);
	if (b->hash[j] >= 0 || !add)
		return b->hash[j];
	if (b->n_sets == STRSET_MAX_SETS) {
		b->rc = 1;
		return -1;
	}
	memcpy(b->sets[b->n_sets], set, 32);
	return b->hash[j] = b->n_sets++;
}

/* The child of row v by class k, made when missing: its row, or 0 (b->rc set). */
static uint32_t sb_child(struct sbuild *b, uint32_t v, int k)
{
	struct strset *s = b->s;
	size_t w = (size_t)s->w;
	if (s->t[v * w + (size_t)k])
		return s->t[v * w + (size_t)k];
	if (s->n_rows == s->max_rows) {
		b->rc = 1;             /* too big: the NFA */
		return 0;
	}
	if (s->n_rows == s->cap_rows) {
		size_t cap = 2 * (size_t)s->cap_rows;
		if (cap > s->max_rows)
			cap = s->max_rows;
		uint32_t *nt = realloc(s->t, cap * w * sizeof *nt);
		if (nt)
			s->t = nt;
		uint8_t *nf = nt ? realloc(s->fin, cap) : NULL;
		if (!nf) {
			b->rc = -2;
			return 0;
		}
		s->fin = nf;
		memset(s->t + (size_t)s->cap_rows * w, 0, (cap - s->cap_rows) * w * sizeof *nt);
		memset(s->fin + s->cap_rows, 0, cap - s->cap_rows);
		s->cap_rows = (uint32_t)cap;
	}
	return s->t[v * w + (size_t)k] = s->n_rows++;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Insert the strings of node x (sets, concatenations and alternations: a multibyte character
 * under -i is an alternation of byte strings) from row 1; the rows they end at into *out.
 * A loop with an explicit stack: a concatenation is as deep as its string is long. */
static void sb_insert(struct sbuild *b, int x, struct front *out)
{
	struct frame {
		int node, st;
		struct front in, a;
	} *fr = NULL;
	size_t sp = 0, cap = 0;
	struct front ret = { NULL, 0 }, root = { NULL, 1 };
	uint32_t one = 1;
	root.v = &one;
	const struct ast *t = b->t;
#define SB_PUSH(x_, in_) do { \
		if (sp == cap) { \
			size_t c_ = cap ? 2 * cap : 64; \
			struct frame *f_ = realloc(fr, c_ * sizeof *f_); \
			if (!f_) { b->rc = -2; goto out; } \
			fr = f_; cap = c_; \
		} \
		fr[sp].node = (x_); fr[sp].st = 0; fr[sp].in = (in_); fr[sp].a.v = NULL; sp++; \
	} while (0)
	SB_PUSH(x, root);
	while (sp > 0 && !b->rc) {
		struct frame *f = &fr[sp - 1];
		const struct node *nd = &t->n[f->node];
		if (nd->kind == N_SET) {
			int k = sb_set(b, ast_set(t, f->node), 0);
			assert(k >= 0);
			size_t n = f->in.n * (size_t)b->n_cl[k];
			if (n > STRSET_MAX_FRONT) {
				b->rc = 1;
				break;
			}
			ret.v = malloc((n + 1) * sizeof *ret.v);
			ret.n = 0;
			if (!ret.v) {
				b->rc = -2;
				break;
			}
			struct front in = f->in;
			for (size_t i = 0; i < in.n && !b->rc; i++)
				for (int j = 0; j < b->n_cl[k] && !b->rc; j++)
					ret.v[ret.n++] = sb_child(b, in.v[i], b->cl[(size_t)k * 256 + (size_t)j]);
			sp--;
		} else if (nd->kind == N_CAT || nd->kind == N_ALT) {
			int cat = nd->kind == N_CAT, a = nd->a, bb = nd->b;
			if (f->st == 0) {
				struct front in = f->in;   /* before SB_PUSH moves the frames */
				f->st = 1;
				SB_PUSH(a, in);
			} else if (f->st == 1) {
				f->a = ret;
				ret.v = NULL;
				f->st = 2;
				struct front in = cat ? f->a : f->in;
				SB_PUSH(bb, in);
			} else if (cat) {
				free(f->a.v);   /* ret: the end of b */
				sp--;
			} else {
				size_t n = f->a.n + ret.n;
				uint32_t *v = realloc(f->a.v, (n + 1) * sizeof *v);
				if (!v) {
					b->rc = -2;
					break;
				}
				memcpy(v + f->a.n, ret.v, ret.n * sizeof *v);
				free(ret.v);
				qsort(v, n, sizeof *v, cmp_u32);
				size_t m = 0;
				for (size_t i = 0; i < n; i++)
					if (m == 0 || v[m - 1] != v[i])
						v[m++] = v[i];
				if (m > STRSET_MAX_FRONT)
					b->rc = 1;
				ret.v = v;
				ret.n = m;
				sp--;
			}
		} else {
			b->rc = 1;             /* not a set of strings */
		}
	}
#undef SB_PUSH
out:
	for (size_t i = 0; i < sp; i++)
		if (fr[i].st == 2)
			free(fr[i].a.v);
	free(fr);
	if (b->rc) {
		free(ret.v);
		ret.v = NULL;
		ret.n = 0;
	}
	*out = ret;
}

/* Aho-Corasick's links of the trie (fail, depth, out, next_fin), breadth first.  The spans
 * take them (ac_spans) without -w and -x, and not when a string can start with a UTF-8
 * continuation byte (utf8 1: no match starts inside a character, and the one-pass search
 * cannot skip those starts).  0, or -2 when out of memory. */
static int strset_links(struct strset *s)
{
	size_t w = (size_t)s->w;
	s->ac_spans = !s->word && !s->line;
	for (int c = 0x80; c < 0xc0; c++)
		if (s->utf8 == 1 && s->t[w + s->cls[c]] != 0)
			s->ac_spans = 0;
	uint32_t n = s->n_rows;
	s->fail = malloc(n * sizeof *s->fail);
	s->depth = malloc(n * sizeof *s->depth);
	s->out = malloc(n * sizeof *s->out);
	s->next_fin = malloc(n * sizeof *s->next_fin);
	uint32_t *queue = malloc(n * sizeof *queue);
	if (!s->fail || !s->depth || !s->out || !s->next_fin || !queue) {
		free(queue);
		return -2;
	}
	size_t head = 0, tail = 0;
	s->fail[1] = 1;
	s->depth[1] = 0;
	s->out[1] = 0;
	s->next_fin[1] = 0;
	queue[tail++] = 1;
	while (head < tail) {
		uint32_t u = queue[head++];
		for (size_t k = 1; k < w; k++) {
			uint32_t c = s->t[u * w + k];
			if (c == 0)
				continue;
			uint32_t f = 1;
			if (u != 1) {
				f = s->fail[u];
				while (f != 1 && s->t[f * w + k] == 0)
					f = s->fail[f];
				if (s->t[f * w + k] != 0)
					f = s->t[f * w + k];
			}
			s->fail[c] = f;
			s->depth[c] = s->depth[u] + 1;
			s->out[c] = s->fin[c] ? s->depth[c] : s->out[f];
			/* f is shallower: its own next_fin is set (breadth first) */
			s->next_fin[c] = s->fin[f] ? f : s->next_fin[f];
			queue[tail++] = c;
		}
	}
	free(queue);
	return 0;
}

int strset_build(struct strset **out, const struct ast *t, int root, int word, int line)
{
	*out = NULL;
	struct sbuild b = { .t = t };
	memset(b.hash, -1, sizeof b.hash);
	int *stk = malloc(((size_t)t->len + 1) * sizeof *stk);
	b.s = calloc(1, sizeof *b.s);
	b.sets = malloc(STRSET_MAX_SETS * sizeof *b.sets);
	b.rc = !stk || !b.s || !b.sets ? -2 : 0;
	/* the distinct byte sets (and whether every node is a set, a concatenation or an
	 * alternation) */
	size_t sp = 0;
	if (!b.rc)
		stk[sp++] = root;
	while (sp > 0 && !b.rc) {
		const struct node *nd = &t->n[stk[--sp]];
		if (nd->kind == N_CAT || nd->kind == N_ALT) {
			stk[sp++] = nd->a;
			stk[sp++] = nd->b;   /* a tree: each node once, within t->len */
		} else if (nd->kind == N_SET) {
			sb_set(&b, ast_set(t, (int)(nd - t->n)), 1);
		} else {
			b.rc = 1;
		}
	}
	if (b.rc)
		goto out;
	/* the byte classes: bytes that every set holds both or neither of */
	int id[256] = { 0 }, n_id = 1;
	uint8_t in_any[256] = { 0 };
	for (int k = 0; k < b.n_sets; k++) {
		int remap[2 * 257];
		memset(remap, -1, sizeof remap);
		int n = 0;
		for (int c = 0; c < 256; c++) {
			int in = set_has(b.sets[k], (unsigned)c);
			in_any[c] |= (uint8_t)in;
			int *r = &remap[2 * id[c] + in];
			if (*r < 0)
				*r = n++;
			id[c] = *r;
		}
		n_id = n;
	}
	int to_cls[257];
	memset(to_cls, -1, sizeof to_cls);
	b.s->w = 1;
	for (int c = 0; c < 256; c++) {
		if (!in_any[c])
			continue;
		if (to_cls[id[c]] < 0) {
			if (b.s->w == 256) {
				b.rc = 1;
				goto out;
			}
			to_cls[id[c]] = b.s->w++;
		}
		b.s->cls[c] = (uint8_t)to_cls[id[c]];
	}
	(void)n_id;
	/* each set's classes */
	b.cl = malloc((size_t)b.n_sets * 256);
	b.n_cl = calloc((size_t)b.n_sets, sizeof *b.n_cl);
	if (!b.cl || !b.n_cl) {
		b.rc = -2;
		goto out;
	}
	for (int k = 0; k < b.n_sets; k++) {
		uint8_t seen[256] = { 0 };
		for (int c = 0; c < 256; c++) {
			uint8_t q = b.s->cls[c];
			if (set_has(b.sets[k], (unsigned)c) && !seen[q]) {
				seen[q] = 1;
				b.cl[(size_t)k * 256 + (size_t)b.n_cl[k]++] = q;
			}
		}
	}
	/* the trie: each alternative of the top-level alternation from the root */
	struct strset *s = b.s;
	size_t w = (size_t)s->w;
	size_t max_rows = STRSET_MAX_TABLE / (w * sizeof *s->t);
	s->max_rows = max_rows > UINT32_MAX ? UINT32_MAX : (uint32_t)max_rows;
	s->cap_rows = s->n_rows = 2;
	s->t = calloc(2 * w, sizeof *s->t);
	s->fin = calloc(2, 1);
	s->word = word;
	s->line = line;
	s->utf8 = t->utf8;
	if (!s->t || !s->fin) {
		b.rc = -2;
		goto out;
	}
	sp = 0;
	stk[sp++] = root;
	while (sp > 0 && !b.rc) {
		int x = stk[--sp];
		if (t->n[x].kind == N_ALT) {
			stk[sp++] = t->n[x].b;
			stk[sp++] = t->n[x].a;
			continue;
		}
		struct front f;
		sb_insert(&b, x, &f);
		for (size_t i = 0; i < f.n; i++) {
			if (f.v[i] == 1)
				b.rc = 1;      /* the empty string: left to the NFA */
			s->fin[f.v[i]] = 1;
		}
		free(f.v);
	}
	if (!b.rc)
		b.rc = strset_links(s);
	if (!b.rc) {
		*out = b.s;
		b.s = NULL;
	}
out:
	free(stk);
	free(b.sets);
	free(b.cl);
	free(b.n_cl);
	strset_free(b.s);
	return b.rc;
}

int strset_leftmost_longest(const struct strset *s, const uint8_t *p, size_t n, size_t from,
                            size_t *ms, size_t *me)
{
	size_t w = (size_t)s->w;
	if (s->ac_spans) {
		/* the leftmost start in one pass: at each end the longest string ending there
		 * (out) gives the smallest start; no later end can give a start before j + 1 -
		 * depth (the longest suffix still in the trie).  Its longest end comes from the
		 * anchored walk below, from that start only */
		long best = -1;
		uint32_t v = 1;
		for (size_t j = from; j < n; j++) {
			size_t k = s->cls[p[j]];
			while (v != 1 && s->t[v * w + k] == 0)
				v = s->fail[v];
			v = s->t[v * w + k] ? s->t[v * w + k] : 1;
			if (s->out[v] && (best < 0 || (long)(j + 1 - s->out[v]) < best))
				best = (long)(j + 1 - s->out[v]);
			if (best >= 0 && (long)(j + 1 - s->depth[v]) >= best)
				break;
		}
		if (best < 0)
			return 0;
		from = (size_t)best;
	}
	for (size_t i = from; i <= n; i++) {
		if (s->line && i > 0)
			return 0;
		if (s->utf8 == 1 && utf8_inside(p, n, i))
			continue;
		if (s->word && pctx_at(s->utf8, p, n, i) == P_WORD)
			continue;
		long best = -1;
		uint32_t v = 1;
		for (size_t j = i; j < n; j++) {
			v = s->t[v * w + s->cls[p[j]]];
			if (v == 0)
				break;
			if (s->fin[v] && (!s->word || nctx_at(s->utf8, p, n, j + 1) != X_WORD) &&
			    (!s->line || j + 1 == n))
				best = (long)j + 1;
		}
		if (best >= 0) {
			*ms = i;
			*me = (size_t)best;
			return 1;
		}
	}
	return 0;
}

int strset_line_matches(const struct strset *s, const uint8_t *p, size_t n)
{
	size_t w = (size_t)s->w;
	if (s->line) {
		uint32_t v = 1;
		for (size_t j = 0; j < n && v != 0; j++)
			v = s->t[v * w + s->cls[p[j]]];
		return v != 0 && s->fin[v];
	}
	/* one Aho-Corasick pass: v is the longest suffix of p[0..j] in the trie, and the strings
	 * ending at j are v's (fin) and those down its next_fin chain.  Under -w one of them must
	 * have no word character before it; with utf8 1 (also without -w) it must start on a
	 * character (a string that begins with a lone continuation byte, -i '\xA9\|zz', may
	 * not start inside 'é'); the one after is the same for all.  The chain is the set's strings that are suffixes of each other,
	 * not the bytes of the line: no walk from every start (a line of 100,000 '-' against a
	 * string of 999 '-' and an 'a' took 0.8 s a line) */
	uint32_t v = 1;
	for (size_t j = 0; j < n; j++) {
		size_t k = s->cls[p[j]];
		while (v != 1 && s->t[v * w + k] == 0)
			v = s->fail[v];
		v = s->t[v * w + k] ? s->t[v * w + k] : 1;
		if (!s->out[v])
			continue;
		if (!s->word && s->utf8 != 1)
			return 1;
		if (s->word && nctx_at(s->utf8, p, n, j + 1) == X_WORD)
			continue;
		for (uint32_t u = s->fin[v] ? v : s->next_fin[v]; u != 0; u = s->next_fin[u]) {
			size_t start = j + 1 - s->depth[u];
			if ((!s->word || pctx_at(s->utf8, p, n, start) != P_WORD) &&
			    !(s->utf8 == 1 && utf8_inside(p, n, start)))
				return 1;
		}
	}
	return 0;
}

/* ---- backtracking on the AST (back-references) ----
 *
 * A depth-first search over the parses, in continuation-passing style: matching node at pos
 * then the continuation k (a chain of frames: the rest of a concatenation, a group to close,
 * a repetition to go on with).  The search is a loop with explicit, heap-allocated stacks, so
 * its depth never touches the C stack (a line of 60 000 bytes against ^\(.*\)\1$ needs 60 000
 * choices): frames live in an arena and point to their next by index; a choice point records
 * what to try later (a node, or "continue", at a position with a continuation) and the
 * heights of the arena and of the trail, the undo log of captures, to which a backtrack
 * returns.  Frames are immutable once made, so a choice can share the chain it points to.
 * Plain backtracking is exponential on patterns such as \(a*\)*\1b, so the search memoizes:
 * the outcome of a state depends only on the node, pos, its continuation (the chain's
 * frames, with the count and start of each enclosing repetition) and the captures of the
 * groups some back-reference names.  Once a search has taken BT_MEMO_AFTER steps, every
 * state at a branch (alternation, repetition, the end of an iteration) records that key, and
 * a state whose key was seen before fails at once: a state already explored adds no match (in
 * longest mode: no new end).  The number of keys is polynomial in the line's length for a
 * fixed pattern (O(n^(2g+2r)) for g referenced groups and r nested repetitions), so what
 * remains exponential is only the pattern's size.  Past BT_MAX_STEPS steps, BT_MAX_KEYS keys,
 * BT_MAX_KEY_MEM longs of keys or BT_MAX_STACK_MEM bytes of stacks the search gives up (-2);
 * the client then reports "memory exhausted" as GNU grep does when its regex engine runs out
 * (exit 2), never a silent non-match.
 */

#define BT_MEMO_AFTER 4096L
#define BT_MAX_KEYS   (1L << 21)
#define BT_MAX_KEY_MEM (1L << 24)    /* longs of keys (128 MiB) */
#define BT_MAX_STACK_MEM ((size_t)256 << 20)   /* frames, choices and trail together */

enum { K_NODE, K_CLOSE, K_REP };
struct k {                 /* a continuation frame */
	int type, node, count;
	int next;              /* index of the next frame, -1: the end of the match */
	size_t start;          /* K_REP: where the current iteration began */
};

struct choice {            /* what to try when the current path fails */
	int node;              /* -1: continue with k */
	int k;
	size_t pos;
	size_t n_frames, n_trail;   /* heights to go back to */
};

struct undo { int slot; long old; };   /* a capture's value before it was set */

struct memo {
	uint64_t *slot;        /* hash table: key offset + 1 in keys[], 0 empty */
	size_t mask, used;
	long *keys;            /* keys, each: length, then the values */
	size_t len, cap;
};

struct bt {
	const struct ast *t;
	const uint8_t *p;
	size_t n;
	int icase, longest;
	long best;
	long steps;            /* -1: gave up */
	long *cap;             /* 2 per group: start, end (-1 unset) */
	int *refd;             /* the groups some back-reference names */
	int n_refd;
	struct memo memo;
	struct k *frame;
	size_t n_frames, cap_frames;
	struct choice *choice;
	size_t n_choices, cap_choices;
	struct undo *trail;
	size_t n_trail, cap_trail;
	size_t stack_mem;      /* bytes of the three arrays above */
	size_t start;          /* where the current search started: no state before it recurs */
	const struct bt_det *det;   /* NULL: none known */
	long key[512];
};

/* A repetition count as far as the matcher can tell counts apart. */
static long clamp_count(const struct node *n, int count)
{
	long lim = n->max < 0 ? (long)n->min + 1 : (long)n->max + 1;
	return count < lim ? count : lim;
}

static uint64_t hash_key(const long *key, long len)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	for (long i = 0; i < len; i++) {
		h ^= (uint64_t)key[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h;
}

/* The memo is full: drop the keys of states before the current search's start (a search
 * never moves back, so they cannot come again; on a long line each start leaves a few such
 * keys behind and they filled the memo where the search of every start was short).  0 when
 * at most 7/8 of either limit is left in use, else -1 (the search gives up, as before). */
static int bt_memo_compact(struct bt *b)
{
	struct memo *m = &b->memo;
	size_t len = 0, used = 0;
	for (size_t o = 0; o < m->len; o += (size_t)m->keys[o])
		if ((size_t)m->keys[o + 2] >= b->start) {
			long kl = m->keys[o];
			memmove(m->keys + len, m->keys + o, (size_t)kl * sizeof *m->keys);
			len += (size_t)kl;
			used++;
		}
	if (used > (size_t)BT_MAX_KEYS / 8 * 7 || len > (size_t)BT_MAX_KEY_MEM / 8 * 7)
		return -1;
	m->len = len;
	m->used = used;
	memset(m->slot, 0, (m->mask + 1) * sizeof *m->slot);
	for (size_t o = 0; o < m->len; o += (size_t)m->keys[o]) {
		size_t j = hash_key(m->keys + o, m->keys[o]) & m->mask;
		while (m->slot[j])
			j = (j + 1) & m->mask;
		m->slot[j] = o + 1;
	}
	return 0;
}

/* Record the state (tag, pos, k, captures); 1 when it was seen before.  Sets steps to -1
 * when out of memory or keys. */
static int bt_seen(struct bt *b, long tag, size_t pos, int k)
{
	if (b->steps < BT_MEMO_AFTER)
		return 0;
	long *key = b->key, len = 1;
	const long lim = (long)(sizeof b->key / sizeof b->key[0]);
	key[len++] = tag;
	key[len++] = (long)pos;
	for (int i = 0; i < b->n_refd && len + 2 <= lim; i++) {
		key[len++] = b->cap[2 * b->refd[i]];
		key[len++] = b->cap[2 * b->refd[i] + 1];
	}
	/* the whole continuation, so that the key holds even if the AST shared a subtree */
	for (; k >= 0; k = b->frame[k].next) {
		const struct k *f = &b->frame[k];
		if (len + 3 > lim)
			return 0;      /* too deep to key: just search (the budget still holds) */
		key[len++] = (long)f->node * 4 + f->type;
		if (f->type == K_REP) {
			key[len++] = clamp_count(&b->t->n[f->node], f->count);
			key[len++] = (long)f->start;
		}
	}
	key[0] = len;
	struct memo *m = &b->memo;
	if (2 * (m->used + 1) > m->mask + 1) {
		if (m->used >= (size_t)BT_MAX_KEYS && bt_memo_compact(b) != 0) {
			b->steps = -1;
			return 1;
		}
	}
	if (2 * (m->used + 1) > m->mask + 1) {
		size_t nmask = m->mask ? 2 * m->mask + 1 : 4095;
		uint64_t *ns = calloc(nmask + 1, sizeof *ns);
		if (!ns) {
			b->steps = -1;
			return 1;
		}
		for (size_t i = 0; i <= m->mask && m->slot; i++)
			if (m->slot[i]) {
				const long *o = m->keys + (m->slot[i] - 1);
				size_t j = hash_key(o, o[0]) & nmask;
				while (ns[j])
					j = (j + 1) & nmask;
				ns[j] = m->slot[i];
			}
		free(m->slot);
		m->slot = ns;
		m->mask = nmask;
	}
	size_t j = hash_key(key, len) & m->mask;
	for (; m->slot[j]; j = (j + 1) & m->mask) {
		const long *o = m->keys + (m->slot[j] - 1);
		if (o[0] == len && !memcmp(o, key, (size_t)len * sizeof *key))
			return 1;
	}
	if (m->len + (size_t)len > (size_t)BT_MAX_KEY_MEM) {
		if (bt_memo_compact(b) != 0) {
			b->steps = -1;
			return 1;
		}
		/* the slots moved: look for a free one again (the key is not there) */
		for (j = hash_key(key, len) & m->mask; m->slot[j]; j = (j + 1) & m->mask)
			;
	}
	if (m->len + (size_t)len > m->cap) {
		size_t ncap = m->cap ? 2 * m->cap : 1 << 16;
		while (ncap < m->len + (size_t)len)
			ncap *= 2;
		long *nk = realloc(m->keys, ncap * sizeof *nk);
		if (!nk) {
			b->steps = -1;
			return 1;
		}
		m->keys = nk;
		m->cap = ncap;
	}
	memcpy(m->keys + m->len, key, (size_t)len * sizeof *key);
	m->slot[j] = m->len + 1;
	m->len += (size_t)len;
	m->used++;
	return 0;
}

/* Make room for one more element of an array of the search's stacks: 0, or -1 (and the
 * search gives up) past BT_MAX_STACK_MEM or out of memory. */
static int bt_grow(struct bt *b, void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? 2 * *cap : 256;
	size_t more = (ncap - *cap) * size;
	void *nv = b->stack_mem + more > BT_MAX_STACK_MEM ? NULL : realloc(*v, ncap * size);
	if (!nv) {
		b->steps = -1;
		return -1;
	}
	*v = nv;
	*cap = ncap;
	b->stack_mem += more;
	return 0;
}

/* A new frame in front of k: its index, or -1 when the search gave up. */
static int bt_frame(struct bt *b, int type, int node, int count, size_t start, int k)
{
	if (bt_grow(b, (void **)&b->frame, &b->cap_frames, b->n_frames, sizeof *b->frame))
		return -1;
	b->frame[b->n_frames] = (struct k){ type, node, count, k, start };
	return (int)b->n_frames++;
}

static int bt_choice(struct bt *b, int node, size_t pos, int k)
{
	if (bt_grow(b, (void **)&b->choice, &b->cap_choices, b->n_choices, sizeof *b->choice))
		return -1;
	b->choice[b->n_choices++] = (struct choice){ node, k, pos, b->n_frames, b->n_trail };
	return 0;
}

/* Set a capture, logging its old value while some choice may come back to it. */
static int bt_set_cap(struct bt *b, int slot, long v)
{
	if (b->n_choices > 0) {
		if (bt_grow(b, (void **)&b->trail, &b->cap_trail, b->n_trail, sizeof *b->trail))
			return -1;
		b->trail[b->n_trail++] = (struct undo){ slot, b->cap[slot] };
	}
	b->cap[slot] = v;
	return 0;
}

static int lower(unsigned c) { return c >= 'A' && c <= 'Z' ? (int)c + 32 : (int)c; }

/* Deterministic subtrees: a byte set, a CAT of two such, or an ALT of two such whose first
 * bytes differ.  Such a subtree matches at most one way from a position (UTF-8's "." and
 * classes are ALTs of byte sequences with distinct lead bytes), so bt_search takes it in
 * one step (det_match): no choice, no memo key per character.  `^\(.*\)\1$` over a line
 * of 58,893 digits took 151 ms in C.UTF-8 against 11 ms in C, nearly all in bt_seen. */
struct bt_det {
	int len;               /* the AST's nodes when built */
	uint8_t *det;          /* per node: 1 when deterministic */
	uint64_t (*first)[4];  /* per node (det): the bytes a match can start with */
	int *stack;            /* det_match's pending nodes: at most len */
};

void bt_det_free(struct bt_det *d)
{
	if (d) {
		free(d->det), free(d->first), free(d->stack);
		free(d);
	}
}

/* One pass over the nodes: a node's children come before it (ast_new appends), and one
 * that does not is taken as not deterministic.  NULL when out of memory. */
struct bt_det *bt_det_build(const struct ast *t)
{
	struct bt_det *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->len = t->len;
	d->det = calloc((size_t)t->len + 1, 1);
	d->first = calloc((size_t)t->len + 1, sizeof *d->first);
	d->stack = malloc(((size_t)t->len + 1) * sizeof *d->stack);
	if (!d->det || !d->first || !d->stack) {
		bt_det_free(d);
		return NULL;
	}
	for (int i = 0; i < t->len; i++) {
		const struct node *n = &t->n[i];
		uint64_t *f = d->first[i];
		if (n->kind == N_SET) {
			memcpy(f, t->sets[n->set], sizeof d->first[i]);
			d->det[i] = 1;
		} else if (n->kind == N_CAT && n->a >= 0 && n->a < i && n->b >= 0 && n->b < i &&
		           d->det[n->a] && d->det[n->b]) {
			memcpy(f, d->first[n->a], sizeof d->first[i]);
			d->det[i] = 1;
		} else if (n->kind == N_ALT && n->a >= 0 && n->a < i && n->b >= 0 && n->b < i &&
		           d->det[n->a] && d->det[n->b]) {
			const uint64_t *fa = d->first[n->a], *fb = d->first[n->b];
			int disjoint = 1;
			for (int w = 0; w < 4; w++) {
				disjoint &= (fa[w] & fb[w]) == 0;
				f[w] = fa[w] | fb[w];
			}
			d->det[i] = (uint8_t)disjoint;
		}
	}
	return d;
}

/* The end of deterministic node x's match at pos, or -1.  Iterative: CAT chains are as deep
 * as a pattern is long; each node is taken at most once. */
static long det_match(const struct bt *b, int x, size_t pos)
{
	const struct node *nodes = b->t->n;
	const struct bt_det *d = b->det;
	int *st = d->stack, sp = 0;
	st[sp++] = x;
	while (sp > 0) {
		const struct node *n = &nodes[st[--sp]];
		if (n->kind == N_SET) {
			if (pos >= b->n || !set_has(b->t->sets[n->set], b->p[pos]))
				return -1;
			pos++;
		} else if (n->kind == N_CAT) {
			st[sp++] = n->b;
			st[sp++] = n->a;
		} else {
			if (pos >= b->n)
				return -1;
			unsigned c = b->p[pos];
			if (set_has(d->first[n->a], c))
				st[sp++] = n->a;
			else if (set_has(d->first[n->b], c))
				st[sp++] = n->b;
			else
				return -1;
		}
	}
	return (long)pos;
}

/* Search for matches of the root at s (b->best: the longest end, or -1).  Returns when the
 * search space is exhausted, at the first match unless longest, or on giving up (steps -1). */
static void bt_search(struct bt *b, size_t s)
{
	const struct node *nodes = b->t->n;
	int node = b->t->root, k = -1;      /* node -1: continue with k */
	size_t pos = s;
	b->n_frames = b->n_choices = b->n_trail = 0;
	for (;;) {
		if (++b->steps > BT_MAX_STEPS)
			b->steps = -1;
		if (b->steps < 0)
			return;
		int rep = -1, count = 0;        /* >= 0: enter repetition rep after count iterations */
		if (node >= 0) {
			const struct node *n = &nodes[node];
			switch (n->kind) {
			case N_EMPTY:
				node = -1;
				continue;
			case N_SET:
				if (pos >= b->n || !set_has(b->t->sets[n->set], b->p[pos]))
					goto fail;
				pos++;
				node = -1;
				continue;
			case N_CAT:
				if ((k = bt_frame(b, K_NODE, n->b, 0, 0, k)) < 0)
					return;
				node = n->a;
				continue;
			case N_ALT:
				if (b->det && node < b->det->len && b->det->det[node]) {
					long e = det_match(b, node, pos);
					if (e < 0)
						goto fail;
					pos = (size_t)e;
					node = -1;
					continue;
				}
				if (bt_seen(b, node, pos, k))
					goto fail;
				if (bt_choice(b, n->b, pos, k))
					return;
				node = n->a;
				continue;
			case N_GROUP:
				if (bt_set_cap(b, 2 * n->group, (long)pos) ||
				    (k = bt_frame(b, K_CLOSE, n->group, 0, 0, k)) < 0)
					return;
				node = n->a;
				continue;
			case N_BACKREF: {
				long cs = b->cap[2 * n->group], ce = b->cap[2 * n->group + 1];
				if (cs < 0 || ce < cs)
					goto fail;
				size_t len = (size_t)(ce - cs);
				if (b->icase && b->t->utf8) {
					/* characters equal under -i's folding; their lengths may differ */
					long e = utf8_fold_prefix(b->p + cs, len, b->p + pos, b->n - pos);
					if (e < 0)
						goto fail;
					pos += (size_t)e;
					node = -1;
					continue;
				}
				if (len > b->n - pos)
					goto fail;
				for (size_t i = 0; i < len; i++) {
					unsigned x = b->p[(size_t)cs + i], y = b->p[pos + i];
					if (b->icase ? lower(x) != lower(y) : x != y)
						goto fail;
				}
				pos += len;
				node = -1;
				continue;
			}
			case N_ASSERT: {
				int pc = pctx_at(b->t->utf8, b->p, b->n, pos);
				int nc = nctx_at(b->t->utf8, b->p, b->n, pos);
				if (!assert_ok(n->akind, pc, nc))
					goto fail;
				node = -1;
				continue;
			}
			case N_REPEAT:
				if (bt_seen(b, node, pos, k))
					goto fail;
				rep = node;
				break;
			default:
				goto fail;
			}
		} else if (k < 0) {
			/* the whole pattern matched, ending at pos */
			if ((long)pos > b->best)
				b->best = (long)pos;
			if (!b->longest)
				return;
			goto fail;
		} else {
			const struct k *f = &b->frame[k];
			switch (f->type) {
			case K_NODE:
				node = f->node;
				k = f->next;
				continue;
			case K_CLOSE:
				if (bt_set_cap(b, 2 * f->node + 1, (long)pos))
					return;
				k = f->next;
				continue;
			case K_REP: {
				const struct node *n = &nodes[f->node];
				/* an empty iteration beyond the minimum ends the loop (it may have set a
				 * group: grep matches \(a*\)*\1b on "ab" with a last, empty iteration) */
				if (pos == f->start && f->count > n->min) {
					k = f->next;
					continue;
				}
				if (bt_seen(b, -2 - (f->node + (long)b->t->len * clamp_count(n, f->count)),
				            pos, f->next))
					goto fail;
				rep = f->node;
				count = f->count;
				k = f->next;
				break;
			}
			default:
				goto fail;
			}
		}
		/* repetition rep, count iterations done, at pos, continuing with k afterwards:
		 * one more iteration first (when allowed), then stopping here */
		{
			const struct node *n = &nodes[rep];
			if (count >= n->min && n->max >= 0 && count >= n->max) {
				node = -1;
				continue;
			}
			if (count >= n->min && bt_choice(b, -1, pos, k))
				return;
			if ((k = bt_frame(b, K_REP, rep, count + 1, pos, k)) < 0)
				return;
			node = n->a;
			continue;
		}
	fail:
		if (b->steps < 0 || b->n_choices == 0)
			return;
		{
			const struct choice *c = &b->choice[--b->n_choices];
			while (b->n_trail > c->n_trail) {
				const struct undo *u = &b->trail[--b->n_trail];
				b->cap[u->slot] = u->old;
			}
			b->n_frames = c->n_frames;
			node = c->node;
			pos = c->pos;
			k = c->k;
		}
	}
}

static int bt_init(struct bt *b, const struct ast *t, const uint8_t *p, size_t n, int icase,
                   int longest)
{
	memset(b, 0, sizeof *b);
	b->t = t, b->p = p, b->n = n, b->icase = icase, b->longest = longest;
	b->cap = malloc((size_t)(2 * (t->n_groups + 1)) * sizeof *b->cap);
	b->refd = malloc((size_t)(t->n_groups + 1) * sizeof *b->refd);
	if (!b->cap || !b->refd)
		return -1;
	for (int g = 1; g <= t->n_groups; g++)
		for (int i = 0; i < t->len; i++)
			if (t->n[i].kind == N_BACKREF && t->n[i].group == g) {
				b->refd[b->n_refd++] = g;
				break;
			}
	return 0;
}

static void bt_fini(struct bt *b)
{
	free(b->cap), free(b->refd), free(b->memo.slot), free(b->memo.keys);
	free(b->frame), free(b->choice), free(b->trail);
}

/* One search from s; the memo carries over between calls on the same line (its keys do
 * not depend on where the search started), the step budget too. */
static long bt_from(struct bt *b, size_t s)
{
	b->best = -1;
	b->start = s;
	for (int i = 0; i < 2 * (b->t->n_groups + 1); i++)
		b->cap[i] = -1;
	bt_search(b, s);
	return b->steps < 0 ? -2 : b->best;
}

long bt_longest_at_det(const struct ast *t, const struct bt_det *det, const uint8_t *p,
                       size_t n, size_t s, int icase)
{
	struct bt b;
	long r = -2;
	if (bt_init(&b, t, p, n, icase, 1) == 0) {
		b.det = det && det->len == t->len ? det : NULL;
		r = bt_from(&b, s);
	}
	bt_fini(&b);
	return r;
}

long bt_longest_at(const struct ast *t, const uint8_t *p, size_t n, size_t s, int icase)
{
	struct bt_det *det = bt_det_build(t);
	long r = det ? bt_longest_at_det(t, det, p, n, s, icase) : -2;
	bt_det_free(det);
	return r;
}

int bt_line_matches(const struct ast *t, const uint8_t *p, size_t n, int icase)
{
	struct bt_det *det = bt_det_build(t);
	int r = det ? bt_line_matches_det(t, det, p, n, icase) : -2;
	bt_det_free(det);
	return r;
}

int bt_line_matches_det(const struct ast *t, const struct bt_det *det, const uint8_t *p,
                        size_t n, int icase)
{
	struct bt b;
	int r = 0;
	if (bt_init(&b, t, p, n, icase, 0))
		r = -2;
	b.det = det && det->len == t->len ? det : NULL;
	for (size_t s = 0; r == 0 && s <= n; s++) {
		if (t->utf8 == 1 && utf8_inside(p, n, s))
			continue;
		long e = bt_from(&b, s);
		r = e == -2 ? -2 : e >= 0;
	}
	bt_fini(&b);
	return r;
}

/* ---- the required literal ---- */

#define MUST_CAP 255
/* A string of symbols: 0-255 a byte (with icase an ASCII letter in lower case stands for it
 * and its capital, as findsi takes it), 256 and up a byte set of struct msyms.  Sets come only
 * with -i in UTF-8 (msyms.on): the bytes of a letter whose case variants all have the same
 * length, e.g. the continuation bytes {84, A4} of 'Ä' (C3 84, C3 A4), found with findset. */
typedef uint16_t msym;
struct str { int len; msym b[MUST_CAP]; };
struct msyms {
	int icase, on;
	uint64_t (*set)[4];    /* symbol 256 + i is set[i], each set once (equal sets: equal symbols) */
	int n, cap;
	uint16_t hash[1024];   /* 1 + the index of a set with that hash (thousands of -f patterns
	                        * look sets up once per letter), or 0 */
	int err;               /* out of memory */
};
struct must {
	int exact;             /* the node matches exactly the string x */
	struct str x, left, right, in;
};

/* Copies only the bytes in use: thousands of patterns make hundreds of thousands of these. */
static void str_set(struct str *d, const struct str *s)
{
	d->len = s->len;
	memcpy(d->b, s->b, (size_t)s->len * sizeof *s->b);
}

static void str_cat(struct str *d, const struct str *a, const struct str *b, int keep_right)
{
	struct str r;
	int n = a->len + b->len;
	const size_t z = sizeof *r.b;
	if (n <= MUST_CAP) {
		memcpy(r.b, a->b, (size_t)a->len * z);
		memcpy(r.b + a->len, b->b, (size_t)b->len * z);
		r.len = n;
	} else if (!keep_right) {
		str_set(&r, a);
		memcpy(r.b + a->len, b->b, (size_t)(MUST_CAP - a->len) * z);
		r.len = MUST_CAP;
	} else {
		int from_a = MUST_CAP - b->len;
		if (from_a < 0) {
			memcpy(r.b, b->b + (b->len - MUST_CAP), MUST_CAP * z);
		} else {
			memcpy(r.b, a->b + (a->len - from_a), (size_t)from_a * z);
			memcpy(r.b + from_a, b->b, (size_t)b->len * z);
		}
		r.len = MUST_CAP;
	}
	str_set(d, &r);
}

static void longer(struct str *d, const struct str *s)
{
	if (s->len > d->len)
		str_set(d, s);
}

static void must_set(struct must *d, const struct must *s)
{
	d->exact = s->exact;
	str_set(&d->x, &s->x);
	str_set(&d->left, &s->left);
	str_set(&d->right, &s->right);
	str_set(&d->in, &s->in);
}

static void must_clear(struct must *m)
{
	m->exact = 0;
	m->x.len = m->left.len = m->right.len = m->in.len = 0;
}

static int leaf_byte(const struct ast *t, int x, int icase);

/* The symbol of a byte set (256 and up), the same for equal sets; -1 out of memory. */
static int sym_of_set(struct msyms *sy, const uint64_t *set)
{
	uint64_t hv = (set[0] ^ set[1] * 3 ^ set[2] * 5 ^ set[3] * 7) * 0x9e3779b97f4a7c15ull;
	unsigned h = (unsigned)(hv >> 54);
	if (sy->hash[h] && !memcmp(sy->set[sy->hash[h] - 1], set, sizeof sy->set[0]))
		return 256 + sy->hash[h] - 1;
	for (int i = 0; i < sy->n; i++)
		if (!memcmp(sy->set[i], set, sizeof sy->set[i])) {
			sy->hash[h] = (uint16_t)(i + 1);
			return 256 + i;
		}
	if (sy->n == 65535 - 256)
		return -1;
	if (sy->n == sy->cap) {
		int c = sy->cap ? 2 * sy->cap : 16;
		uint64_t (*ns)[4] = realloc(sy->set, (size_t)c * sizeof *ns);
		if (!ns) {
			sy->err = 1;
			return -1;
		}
		sy->set = ns, sy->cap = c;
	}
	memcpy(sy->set[sy->n], set, sizeof sy->set[sy->n]);
	sy->hash[h] = (uint16_t)(sy->n + 1);
	return 256 + sy->n++;
}

/* The bytes symbol y stands for, as a set. */
static void sym_bytes(const struct msyms *sy, msym y, uint64_t *set)
{
	if (y >= 256) {
		memcpy(set, sy->set[y - 256], 4 * sizeof *set);
		return;
	}
	memset(set, 0, 4 * sizeof *set);
	set[y / 64] |= 1ull << (y % 64);
	if (sy->icase && y >= 'a' && y <= 'z')
		set[(y ^ 32) / 64] |= 1ull << ((y ^ 32) % 64);
}

static int set_count(const uint64_t *set)
{
	int n = 0;
	for (int i = 0; i < 4; i++)
		for (uint64_t w = set[i]; w; w &= w - 1)
			n++;
	return n;
}

/* Sets of at most this many bytes become symbols (sy->on): a letter's case variants differ
 * in a byte or two; a wider set (a class, '.') would make the literal a poor filter. */
#define MUST_SET_MAX 8

/* The symbol an N_SET stands for in the literal, or -1 when it has none.  With icase the
 * literal is searched with letters folded (findsi): a letter and its capital count as the
 * lower-case letter.  With sy->on also a set of 2..MUST_SET_MAX bytes >= 0x80 (the bytes
 * within a letter's case variants). */
static int leaf_sym(const struct ast *t, int x, struct msyms *sy)
{
	int byte = leaf_byte(t, x, sy->icase);
	if (byte >= 0 || !sy->on || t->n[x].kind != N_SET)
		return byte;
	const uint64_t *set = ast_set(t, x);
	int cnt = set_count(set);
	if (cnt < 2 || cnt > MUST_SET_MAX || set[0] || set[1])
		return -1;
	return sym_of_set(sy, set);
}

/* The byte an N_SET stands for in the literal, or -1 when it is no single byte.  With icase
 * the literal is searched with letters folded (findsi): a letter and its capital count as
 * the lower-case letter. */
static int leaf_byte(const struct ast *t, int x, int icase)
{
	if (t->n[x].kind != N_SET)
		return -1;
	const uint64_t *set = ast_set(t, x);
	int cnt = 0, byte = 0;
	for (int i = 0; i < 4; i++)
		if (set[i]) {
			/* 1, 2 or "3": all that matters here, without popcount (a libgcc call
			 * without -mpopcnt: an eighth of the start-up with 100,000 strings) */
			uint64_t rest = set[i] & (set[i] - 1);
			cnt += !rest ? 1 : !(rest & (rest - 1)) ? 2 : 3;
			byte = 64 * i + 63 - __builtin_clzll(set[i]);   /* the last one */
		}
	int letter = (byte | 32) >= 'a' && (byte | 32) <= 'z';
	if (icase && cnt == 2 && letter && (byte | 32) == byte && set_has(set, (unsigned)byte ^ 32))
		cnt = 1;
	else if (icase && cnt == 1 && letter)
		byte |= 32;
	return cnt == 1 ? byte : -1;
}

/* The strings of a string: a concatenation of single bytes, left-deep as the parser makes
 * it (CAT(CAT(a, b), c)).  must_cat on single bytes gives exactly this (the node is exact,
 * and all four strings are the string while it fits MUST_CAP; past it, not exact, left and
 * in its first MUST_CAP bytes, right its last), but each step copies four strings, and
 * 10,000 patterns make 80,000 steps.  1; or 0 when node is no such string, with *n_fail the
 * concatenations below node whose strings hold the same byte that is none (they fail too:
 * the caller skips them, else a string of 65,536 bytes after a '.' took 2^31 steps). */
static int must_string(const struct ast *t, int node, struct msyms *sy, struct must *m,
                       long *n_fail)
{
	long n = 0;
	for (int x = node;;) {
		const struct node *nd = &t->n[x];
		if (leaf_sym(t, nd->kind == N_CAT ? nd->b : x, sy) < 0) {
			*n_fail = n;
			return 0;
		}
		n++;
		if (nd->kind != N_CAT)
			break;
		x = nd->a;
	}
	/* the bytes from the last: byte n-1-j at step j */
	must_clear(m);
	long j = 0;
	for (int x = node;; j++) {
		const struct node *nd = &t->n[x];
		msym c = (msym)leaf_sym(t, nd->kind == N_CAT ? nd->b : x, sy);
		if (n - 1 - j < MUST_CAP)
			m->left.b[n - 1 - j] = c;
		if (j < MUST_CAP)
			m->right.b[(n < MUST_CAP ? n : MUST_CAP) - 1 - j] = c;
		if (nd->kind != N_CAT)
			break;
		x = nd->a;
	}
	m->left.len = m->right.len = (int)(n < MUST_CAP ? n : MUST_CAP);
	str_set(&m->in, &m->left);
	if (n <= MUST_CAP) {
		m->exact = 1;
		str_set(&m->x, &m->left);
	}
	return 1;
}

/* The strings of a leaf (a node without children). */
static void must_leaf(const struct ast *t, int x, struct msyms *sy, struct must *m)
{
	const struct node *n = &t->n[x];
	must_clear(m);
	switch (n->kind) {
	case N_EMPTY:
	case N_ASSERT:
		m->exact = 1;
		return;
	case N_SET: {
		int byte = leaf_sym(t, x, sy);
		if (byte >= 0) {
			m->exact = 1;
			m->x.len = 1;
			m->x.b[0] = (msym)byte;
			str_set(&m->left, &m->x);
			str_set(&m->right, &m->x);
			str_set(&m->in, &m->x);
		}
		return;
	}
	default:                   /* N_BACKREF, and what has no child to go by */
		return;
	}
}

/* The strings of a then b. */
static void must_cat(const struct must *a, const struct must *b, struct must *m)
{
	must_clear(m);
	if (a->exact && b->exact && a->x.len + b->x.len <= MUST_CAP) {
		m->exact = 1;
		str_cat(&m->x, &a->x, &b->x, 0);
	}
	if (a->exact)
		str_cat(&m->left, &a->x, &b->left, 0);
	else
		str_set(&m->left, &a->left);
	if (b->exact)
		str_cat(&m->right, &a->right, &b->x, 1);
	else
		str_set(&m->right, &b->right);
	struct str mid;
	str_cat(&mid, &a->right, &b->left, 0);
	str_set(&m->in, &a->in);
	longer(&m->in, &b->in);
	longer(&m->in, &mid);
	longer(&m->in, &m->left);
	longer(&m->in, &m->right);
	if (m->exact)
		longer(&m->in, &m->x);
}

/* With sy->on, a and b exact strings of the same 2..4 symbols, none an ASCII byte (the
 * encodings of one character, as the case variants of a letter whose variants all have the
 * same length): m gets, exactly, the string of their unions position by position.  It
 * matches more than a or b ('Σ' 'ς' as CE A3, CF 82 give also CE 82), but every match of a
 * or b holds it, all the required literal needs.  0 when it does not apply. */
static int must_alt_sets(const struct must *a, const struct must *b, struct must *m,
                         struct msyms *sy)
{
	int n = a->x.len;
	if (!sy->on || !a->exact || !b->exact || n != b->x.len || n < 2 || n > 4)
		return 0;
	msym u[4];
	for (int i = 0; i < n; i++) {
		if (a->x.b[i] < 0x80 || b->x.b[i] < 0x80)
			return 0;
		uint64_t sa[4], sb[4];
		sym_bytes(sy, a->x.b[i], sa);
		sym_bytes(sy, b->x.b[i], sb);
		for (int k = 0; k < 4; k++)
			sa[k] |= sb[k];
		int c = set_count(sa);
		if (c > MUST_SET_MAX)
			return 0;
		int y = c == 1 ? a->x.b[i] : sym_of_set(sy, sa);
		if (y < 0)
			return 0;
		u[i] = (msym)y;
	}
	must_clear(m);
	m->exact = 1;
	m->x.len = n;
	memcpy(m->x.b, u, (size_t)n * sizeof *u);
	str_set(&m->left, &m->x);
	str_set(&m->right, &m->x);
	str_set(&m->in, &m->x);
	return 1;
}

/* The strings of a or b. */
static void must_alt(const struct must *a, const struct must *b, struct must *m, struct msyms *sy)
{
	must_clear(m);
	if (a->exact && b->exact && a->x.len == b->x.len &&
	    !memcmp(a->x.b, b->x.b, (size_t)a->x.len * sizeof *a->x.b)) {
		must_set(m, a);
		return;
	}
	if (must_alt_sets(a, b, m, sy))
		return;
	int i = 0;
	while (i < a->left.len && i < b->left.len && a->left.b[i] == b->left.b[i])
		i++;
	memcpy(m->left.b, a->left.b, (size_t)i * sizeof *m->left.b);
	m->left.len = i;
	int j = 0;
	while (j < a->right.len && j < b->right.len &&
	       a->right.b[a->right.len - 1 - j] == b->right.b[b->right.len - 1 - j])
		j++;
	memcpy(m->right.b, a->right.b + (a->right.len - j), (size_t)j * sizeof *m->right.b);
	m->right.len = j;
	str_set(&m->in, &m->left);
	longer(&m->in, &m->right);
	if (a->in.len == b->in.len && !memcmp(a->in.b, b->in.b, (size_t)a->in.len * sizeof *a->in.b))
		longer(&m->in, &a->in);
}

/* The strings of the AST, walked in post-order with heap stacks (its depth follows the
 * input): frames say how many children of a node are done, results hold the strings of the
 * children finished and not yet combined.  0, or -1 when out of memory. */
static int must_of(const struct ast *t, struct msyms *sy, struct must *out)
{
	struct mframe { int node, done; } *fr = NULL;
	struct must *res = NULL, tmp;
	size_t n_fr = 0, cap_fr = 0, n_res = 0, cap_res = 0;
	long no_string = 0;   /* the next concatenations entered (a left chain) are no strings */
	int rc = -1;
	for (int node = t->root;;) {
		if (node >= 0) {
			/* enter node: make room for its frame and its result */
			if (n_fr == cap_fr) {
				size_t c = cap_fr ? 2 * cap_fr : 64;
				struct mframe *nf = realloc(fr, c * sizeof *nf);
				if (!nf)
					goto out;
				fr = nf, cap_fr = c;
			}
			if (n_res + 2 >= cap_res) {
				size_t c = cap_res ? 2 * cap_res : 16;
				struct must *nr = realloc(res, c * sizeof *nr);
				if (!nr)
					goto out;
				res = nr, cap_res = c;
			}
			/* the node entered next is this one's left child (a), so the chain's
			 * concatenations come one after another until a leaf */
			if (t->n[node].kind != N_CAT)
				no_string = 0;
			else if (no_string > 0)
				no_string--;
			else if (must_string(t, node, sy, &res[n_res], &no_string)) {
				n_res++;      /* done at once: no frame */
				node = -1;
				continue;
			}
			fr[n_fr++] = (struct mframe){ node, 0 };
			node = -1;
		}
		if (n_fr == 0)
			break;
		struct mframe *f = &fr[n_fr - 1];
		const struct node *n = &t->n[f->node];
		int kids = n->kind == N_CAT || n->kind == N_ALT ? 2 :
		           n->kind == N_GROUP || (n->kind == N_REPEAT && n->min >= 1) ? 1 : 0;
		if (f->done < kids) {
			node = f->done++ == 0 ? n->a : n->b;
			continue;
		}
		n_fr--;
		switch (n->kind) {
		case N_CAT:
			must_cat(&res[n_res - 2], &res[n_res - 1], &tmp);
			must_set(&res[--n_res - 1], &tmp);
			break;
		case N_ALT:
			must_alt(&res[n_res - 2], &res[n_res - 1], &tmp, sy);
			must_set(&res[--n_res - 1], &tmp);
			break;
		case N_GROUP:
			break;
		case N_REPEAT:
			if (n->min >= 1) {
				if (!(n->min == 1 && n->max == 1))
					res[n_res - 1].exact = 0;
			} else {
				must_clear(&res[n_res++]);
			}
			break;
		default:
			must_leaf(t, f->node, sy, &res[n_res++]);
			break;
		}
	}
	must_set(out, &res[0]);
	rc = 0;
out:
	free(fr);
	free(res);
	return rc;
}

size_t must_literal(const struct ast *t, int icase, int utf8, uint8_t *buf, size_t cap,
                    uint8_t (*sets)[32], size_t max_sets, int *is_sets)
{
	struct msyms sy = { .icase = icase, .on = icase && utf8 && sets != NULL };
	struct must *m = malloc(sizeof *m);
	*is_sets = 0;
	if (!m || must_of(t, &sy, m) != 0 || sy.err) {
		free(m);
		free(sy.set);
		return 0;
	}
	size_t n = 0;
	int any_set = 0;
	for (int i = 0; i < m->in.len; i++)
		any_set |= m->in.b[i] >= 256;
	if (sy.on) {
		/* Sets can also lose a literal: an alternation keeps its branches' inner strings
		 * only when they are equal, and 'σοφός|μήλο' as sets differ where as bytes both
		 * held "\xce".  Take the bytes' literal unless the sets' one is longer. */
		struct msyms plain = { .icase = icase };
		struct must *b = malloc(sizeof *b);
		if (b && must_of(t, &plain, b) == 0 && (b->in.len >= m->in.len || !any_set)) {
			any_set = 0;
			must_set(m, b);
		}
		free(b);
		free(plain.set);
	}
	if (any_set) {
		/* any max_sets symbols in a row of it are required too: the first ones */
		n = (size_t)m->in.len < max_sets ? (size_t)m->in.len : max_sets;
		for (size_t i = 0; i < n; i++) {
			uint64_t set[4];
			sym_bytes(&sy, m->in.b[i], set);
			memset(sets[i], 0, sizeof sets[i]);
			for (unsigned c = 0; c < 256; c++)
				if (set[c / 64] >> (c % 64) & 1)
					sets[i][c / 8] |= (uint8_t)(1u << (c % 8));
		}
		*is_sets = 1;
	} else {
		n = (size_t)m->in.len < cap ? (size_t)m->in.len : cap;
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)m->in.b[i];
	}
	free(m);
	free(sy.set);
	return n;
}
