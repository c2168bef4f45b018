/* ops_common.h: operation bodies shared by the interpreter (interp.c) and the JIT's C helpers
 * (jit_x86_64.c), so both engines run the very same code for bulk operations, atomics and
 * output, and cannot drift apart.  Private to vm/.
 *
 * Each vm_op_* takes the run, v = &fp[a] (the instruction's operands in v[0], v[1], ...; the
 * result goes to v[0]) and its region indices, and returns 0 or the trap kind (enum isa_trap).
 */
#ifndef VM_OPS_COMMON_H
#define VM_OPS_COMMON_H

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "vm_int.h"

/* In bounds: [off, off + n) inside a region of length len, without overflow. */
static inline int in_bounds(uint64_t off, uint64_t n, uint64_t len)
{
	return off <= len && n <= len - off;
}

/* A store of n bytes at off in the output: its length becomes at least off + n, and bytes
 * between the old length and off read as zero.  The caller checked off + n <= out_cap. */
static inline void out_extend(struct mref *R, uint64_t off, uint64_t n)
{
	struct mref *o = &R[ISA_R_OUT];
	if (off + n <= o->len)
		return;
	if (off > o->len)
		memset(o->base + o->len, 0, off - o->len);
	o->len = off + n;
}

static inline int vm_op_cas(struct run *run, uint64_t *v, unsigned r)
{
	const struct mref *m = &run->R[r];
	uint64_t off = v[0];
	if (!in_bounds(off, 8, m->len))
		return ISA_TRAP_BOUNDS;
	if (off & 7)
		return ISA_TRAP_UNALIGNED;          /* rw bases are 8-aligned */
	uint64_t expect = v[1];
	__atomic_compare_exchange_n((uint64_t *)(void *)(m->base + off), &expect, v[2], 0,
	                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	v[0] = expect;                              /* the old value either way */
	return 0;
}

static inline int vm_op_fadd(struct run *run, uint64_t *v, unsigned r)
{
	const struct mref *m = &run->R[r];
	uint64_t off = v[0];
	if (!in_bounds(off, 8, m->len))
		return ISA_TRAP_BOUNDS;
	if (off & 7)
		return ISA_TRAP_UNALIGNED;
	v[0] = __atomic_fetch_add((uint64_t *)(void *)(m->base + off), v[1], __ATOMIC_SEQ_CST);
	return 0;
}

/* Bulk operations: regions rd/r1 (first operand of the instruction) and rs/r2 (second). */
static inline int vm_op_copy(struct run *run, uint64_t *v, unsigned rd, unsigned rs)
{
	struct mref *R = run->R;
	uint64_t doff = v[0], soff = v[1], n = v[2];
	const struct mref *s = &R[rs];
	if (!in_bounds(soff, n, s->len))
		return ISA_TRAP_BOUNDS;
	if (rd == ISA_R_OUT) {
		if (!in_bounds(doff, n, run->out_cap))
			return ISA_TRAP_OUTPUT_FULL;
		out_extend(R, doff, n);
	} else if (!in_bounds(doff, n, R[rd].len)) {
		return ISA_TRAP_BOUNDS;
	}
	if (n)
		memmove(R[rd].base + doff, s->base + soff, n);
	return 0;
}

static inline int vm_op_fill(struct run *run, uint64_t *v, unsigned r)
{
	struct mref *R = run->R;
	uint64_t off = v[0], n = v[1];
	if (r == ISA_R_OUT) {
		if (!in_bounds(off, n, run->out_cap))
			return ISA_TRAP_OUTPUT_FULL;
		out_extend(R, off, n);
	} else if (!in_bounds(off, n, R[r].len)) {
		return ISA_TRAP_BOUNDS;
	}
	if (n)
		memset(R[r].base + off, (int)(uint8_t)v[2], n);
	return 0;
}

static inline int vm_op_cmp(struct run *run, uint64_t *v, unsigned r1, unsigned r2)
{
	uint64_t o1 = v[0], o2 = v[1], n = v[2];
	const struct mref *m1 = &run->R[r1], *m2 = &run->R[r2];
	if (!in_bounds(o1, n, m1->len) || !in_bounds(o2, n, m2->len))
		return ISA_TRAP_BOUNDS;
	int c = n ? memcmp(m1->base + o1, m2->base + o2, n) : 0;
	v[0] = (uint64_t)(int64_t)((c > 0) - (c < 0));
	return 0;
}

static inline int vm_op_findb(struct run *run, uint64_t *v, unsigned r)
{
	uint64_t off = v[0], n = v[1];
	const struct mref *m = &run->R[r];
	if (!in_bounds(off, n, m->len))
		return ISA_TRAP_BOUNDS;
	const uint8_t *p = n ? memchr(m->base + off, (int)(uint8_t)v[2], n) : NULL;
	v[0] = p ? (uint64_t)(p - m->base) : UINT64_MAX;
	return 0;
}

/* How common a byte is in typical text (lower: rarer), for find_str's choice of the three
 * bytes it scans for (the idea of ripgrep's memchr "packed pair" searcher).  UTF-8 lead
 * bytes (0xC2-0xF4) count as common: every letter of a script shares one or two of them
 * (Greek CE/CF, Cyrillic D0/D1), while the continuation bytes after them tell the letters
 * apart; keyed on leads, `σοφός` in Greek text took every `σα` of `θάλασσα` as a candidate. */
static inline int byte_rank(unsigned c)
{
	/* a table, not tests: find_str ranks its needle at every call, and grep calls it once
	 * per matching line (a third of find_str's time on a file where most lines match).
	 * Lower-case letters by their order in "etaoinsrhldcumfpgwybvkxjqz": 250 (e) .. 175 (z). */
	static const uint8_t rank[256] = {
		[0] = 40, [1 ... 8] = 20, ['\t'] = 130, ['\n'] = 255, [11 ... 31] = 20, [' '] = 255,
		['!' ... '+'] = 90, [','] = 130, ['-'] = 130, ['.'] = 130, ['/'] = 130,
		['0' ... '9'] = 110, [':' ... '@'] = 90, ['A' ... 'Z'] = 120, ['[' ... '^'] = 90,
		['_'] = 130, ['`'] = 90,
		['a'] = 244, ['b'] = 193, ['c'] = 217, ['d'] = 220, ['e'] = 250, ['f'] = 208,
		['g'] = 202, ['h'] = 226, ['i'] = 238, ['j'] = 181, ['k'] = 187, ['l'] = 223,
		['m'] = 211, ['n'] = 235, ['o'] = 241, ['p'] = 205, ['q'] = 178, ['r'] = 229,
		['s'] = 232, ['t'] = 247, ['u'] = 214, ['v'] = 190, ['w'] = 199, ['x'] = 184,
		['y'] = 196, ['z'] = 175,
		['{' ... '~'] = 90, [0x7f ... 0xC1] = 20,
		[0xC2 ... 0xF4] = 160,                  /* UTF-8 lead bytes */
		[0xF5 ... 0xFF] = 20,
	};
	return rank[c & 0xff];
}

/* The first nd[0..nn) in h[0..n), nn >= 2: 16 positions at a time, keep those where the
 * needle's three rarest bytes (i1, i2, i3; with nn <= 3 simply every byte) all sit, then
 * compare (not needed when nn <= 3).  The third byte costs one compare per 16
 * positions and spares the memcmp calls of a short needle of common letters (`the`: "th" is
 * in "this", "that", "other").  A needle whose rare bytes are common after all (many
 * candidates that fail) falls back to memmem. */
/* The three positions find_str scans for (see below), into *fr with the needle's address:
 * grep searches the same needle once per matching line, so a run keeps the last ranking.
 * The positions are a heuristic only (every candidate is compared in full), so a needle
 * changed in place behind the cache costs speed at most, never a wrong answer. */
static inline void find_rank(struct find_rank *fr, const uint8_t *nd, size_t nn)
{
	size_t i1 = 0, i2 = 1, i3 = nn - 1;         /* nn <= 3: every byte, no ranking needed */
	if (nn > 3) {
		for (size_t i = 0; i < nn; i++)
			if (byte_rank(nd[i]) < byte_rank(nd[i1]))
				i1 = i;
		i2 = i1 == 0 ? 1 : 0;
		for (size_t i = 0; i < nn; i++)
			if (i != i1 && (byte_rank(nd[i]) < byte_rank(nd[i2]) ||
			                (nd[i2] == nd[i1] && nd[i] != nd[i1])))
				i2 = i;
		i3 = i1;
		for (size_t i = 0; i < nn; i++)
			if (i != i1 && i != i2 && (i3 == i1 || byte_rank(nd[i]) < byte_rank(nd[i3])))
				i3 = i;
	}
	*fr = (struct find_rank){ nd, nn, i1, i2, i3 };
}

static inline const uint8_t *find_str_ranked(const uint8_t *h, size_t n, const uint8_t *nd,
                                             size_t nn, const struct find_rank *fr)
{
	if (nn > n)
		return NULL;
	size_t i1 = fr->i1, i2 = fr->i2, i3 = fr->i3;
	size_t pos = 0, imax = i1 > i2 ? i1 : i2;
	imax = imax > i3 ? imax : i3;
#if defined(__SSE2__)
	const __m128i v1 = _mm_set1_epi8((char)nd[i1]), v2 = _mm_set1_epi8((char)nd[i2]);
	const __m128i v3 = _mm_set1_epi8((char)nd[i3]);
	const int covered = nn <= 3;                /* {i1, i2, i3} = every position */
	size_t misses = 0;
	for (; pos + imax + 16 <= n; pos += 16) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(h + pos + i1));
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(h + pos + i2));
		__m128i c3 = _mm_loadu_si128((const __m128i *)(const void *)(h + pos + i3));
		__m128i eq = _mm_and_si128(_mm_cmpeq_epi8(a, v1), _mm_cmpeq_epi8(b, v2));
		unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(eq, _mm_cmpeq_epi8(c3, v3)));
		if (mask && covered)
			return h + pos + (size_t)__builtin_ctz(mask);
		while (mask) {
			size_t c = pos + (size_t)__builtin_ctz(mask);
			if (c + nn <= n && !memcmp(h + c, nd, nn))
				return h + c;
			mask &= mask - 1;
			misses++;
		}
		if (misses > 64 && misses > pos / 32)
			break;                              /* a false positive every 32 bytes */
	}
#endif
	return pos < n ? memmem(h + pos, n - pos, nd, nn) : NULL;
}

static inline const uint8_t *find_str(const uint8_t *h, size_t n, const uint8_t *nd, size_t nn)
{
	struct find_rank fr;
	find_rank(&fr, nd, nn);
	return find_str_ranked(h, n, nd, nn, &fr);
}

/* ---- findsi: finds with ASCII letters matching either case (the C locale's tolower) ---- */

static inline uint8_t fold_ascii(uint8_t c)
{
	return (unsigned)(c - 'A') < 26u ? (uint8_t)(c | 0x20) : c;
}

static inline int eq_fold(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fold_ascii(a[i]) != fold_ascii(b[i]))
			return 0;
	return 1;
}

/* Rabin-Karp on folded bytes, modulo the prime 2^61 - 1 with a base drawn per call, so that
 * no fixed input makes hashes collide: expected O(n + nn) time in constant memory.  The
 * fallback of find_stri when its candidates keep failing (glibc has no case-folding memmem
 * to hand them to), so that a hostile haystack and needle cost linear time, not n * nn. */
#define RK_P ((1ull << 61) - 1)

static inline uint64_t rk_mul(uint64_t a, uint64_t b)
{
	unsigned __int128 x = (unsigned __int128)a * b;
	uint64_t r = ((uint64_t)x & RK_P) + (uint64_t)(x >> 61);
	return r >= RK_P ? r - RK_P : r;
}

static inline const uint8_t *find_fold_rk(const uint8_t *h, size_t n, const uint8_t *nd, size_t nn)
{
	if (nn > n)
		return NULL;
	uint64_t seed = (uint64_t)(uintptr_t)h ^ ((uint64_t)nn << 32);
#if defined(__x86_64__) || defined(__i386__)
	seed ^= (uint64_t)__builtin_ia32_rdtsc();
#endif
	seed += 0x9e3779b97f4a7c15ull;              /* splitmix64's finaliser */
	seed = (seed ^ (seed >> 30)) * 0xbf58476d1ce4e5b9ull;
	seed = (seed ^ (seed >> 27)) * 0x94d049bb133111ebull;
	seed ^= seed >> 31;
	uint64_t base = 256 + seed % (RK_P - 512), top = 1;   /* top = base^(nn-1) */
	for (uint64_t e = nn - 1, b = base; e; e >>= 1, b = rk_mul(b, b))
		if (e & 1)
			top = rk_mul(top, b);
	uint64_t hn = 0, hh = 0;
	for (size_t i = 0; i < nn; i++) {
		hn = rk_mul(hn, base) + fold_ascii(nd[i]);
		hh = rk_mul(hh, base) + fold_ascii(h[i]);
		hn = hn >= RK_P ? hn - RK_P : hn;
		hh = hh >= RK_P ? hh - RK_P : hh;
	}
	for (size_t c = 0;; c++) {
		if (hh == hn && eq_fold(h + c, nd, nn))
			return h + c;
		if (c + nn >= n)
			return NULL;
		uint64_t t = hh + RK_P - rk_mul(fold_ascii(h[c]), top);   /* drop h[c] */
		t = t >= RK_P ? t - RK_P : t;
		hh = rk_mul(t, base) + fold_ascii(h[c + nn]);              /* take h[c + nn] */
		hh = hh >= RK_P ? hh - RK_P : hh;
	}
}

/* The first nd[0..nn) in h[0..n), nn >= 1, ASCII letters compared without case: find_str's
 * packed pair with each of the two bytes compared after OR 0x20 when it is a letter (x | 0x20
 * equals a lower-case letter only for that letter and its capital), candidates checked with
 * eq_fold.  When candidates keep failing (more than one in 2 KiB: the two rarest letters are
 * often neighbours that go together in words, `ck` of `tack needle`, the literal of
 * `-i 'Haystack Needle'` in UTF-8 where `s` cuts it: every `quick` and `haystack` of the
 * bench's text was one), the rest of the scan also compares a third byte, the rarest not next
 * to the first two when there is one (`d`: 9.6 ms over the bench's 93 MB, then 5.2; the C
 * locale's `haystack needle`, `y` `k` then `d`, 6.8 then 5.0).  Only then: the third byte
 * costs ~15% on a scan without candidates.  When checking has cost more
 * than twice the bytes passed (a needle whose rare bytes are common here, or a hostile
 * input), the rest goes to find_fold_rk. */
static inline const uint8_t *find_stri(const uint8_t *h, size_t n, const uint8_t *nd, size_t nn)
{
	if (nn > n)
		return NULL;
	size_t i1 = 0, i2 = 0;
	for (size_t i = 0; i < nn; i++)
		if (byte_rank(fold_ascii(nd[i])) < byte_rank(fold_ascii(nd[i1])))
			i1 = i;
	if (nn > 1) {
		i2 = i1 == 0 ? 1 : 0;
		for (size_t i = 0; i < nn; i++) {
			uint8_t c = fold_ascii(nd[i]), c1 = fold_ascii(nd[i1]), c2 = fold_ascii(nd[i2]);
			if (i != i1 && (byte_rank(c) < byte_rank(c2) || (c2 == c1 && c != c1)))
				i2 = i;
		}
	}
	size_t pos = 0, imax = i1 > i2 ? i1 : i2;
#if defined(__SSE2__)
	const uint8_t c1 = fold_ascii(nd[i1]), c2 = fold_ascii(nd[i2]);
	const __m128i v1 = _mm_set1_epi8((char)c1), v2 = _mm_set1_epi8((char)c2);
	const __m128i m1 = _mm_set1_epi8((unsigned)(c1 - 'a') < 26u ? 0x20 : 0);
	const __m128i m2 = _mm_set1_epi8((unsigned)(c2 - 'a') < 26u ? 0x20 : 0);
	uint64_t work = 0, fails = 0;
	int third = 0;
	for (; pos + imax + 16 <= n; pos += 16) {
		__m128i a = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)(h + pos + i1)), m1);
		__m128i b = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)(h + pos + i2)), m2);
		unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, v1),
		                                                          _mm_cmpeq_epi8(b, v2)));
		if (!mask)
			continue;                           /* (the checks below only after candidates) */
		do {
			size_t c = pos + (size_t)__builtin_ctz(mask);
			if (c + nn <= n && eq_fold(h + c, nd, nn))
				return h + c;
			mask &= mask - 1;
			work += nn;
			fails++;
		} while (mask);
		if (work > 4096 + 2 * (uint64_t)pos) {
			pos += 16;                          /* every candidate below was checked */
			break;
		}
		if (nn > 2 && fails >= 16 && fails > pos / 2048) {
			pos += 16;
			third = 1;
			break;
		}
	}
	if (third) {
		size_t i3 = nn, j3 = nn;    /* the rarest byte apart from i1 and i2; of any other */
		for (size_t i = 0; i < nn; i++) {
			if (i == i1 || i == i2)
				continue;
			int r = byte_rank(fold_ascii(nd[i]));
			if (j3 == nn || r < byte_rank(fold_ascii(nd[j3])))
				j3 = i;
			if (i + 1 != i1 && i != i1 + 1 && i + 1 != i2 && i != i2 + 1 &&
			    (i3 == nn || r < byte_rank(fold_ascii(nd[i3]))))
				i3 = i;
		}
		if (i3 == nn)
			i3 = j3;
		imax = imax > i3 ? imax : i3;
		const uint8_t c3 = fold_ascii(nd[i3]);
		const __m128i v3 = _mm_set1_epi8((char)c3);
		const __m128i m3 = _mm_set1_epi8((unsigned)(c3 - 'a') < 26u ? 0x20 : 0);
		for (; pos + imax + 16 <= n; pos += 16) {
			__m128i a = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)(h + pos + i1)), m1);
			__m128i b = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)(h + pos + i2)), m2);
			__m128i d = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)(h + pos + i3)), m3);
			__m128i eq = _mm_and_si128(_mm_cmpeq_epi8(a, v1), _mm_cmpeq_epi8(b, v2));
			unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(eq, _mm_cmpeq_epi8(d, v3)));
			while (mask) {
				size_t c = pos + (size_t)__builtin_ctz(mask);
				if (c + nn <= n && eq_fold(h + c, nd, nn))
					return h + c;
				mask &= mask - 1;
				work += nn;
			}
			if (work > 4096 + 2 * (uint64_t)pos) {
				pos += 16;                  /* every candidate below was checked */
				break;
			}
		}
	}
#endif
	if (pos >= n || nn > n - pos)
		return NULL;
	/* what is left: a short tail (under 16 + imax positions), or the fallback */
	if ((n - pos - nn + 1) * (uint64_t)nn <= 4096) {
		for (size_t c = pos; c + nn <= n; c++)
			if (eq_fold(h + c, nd, nn))
				return h + c;
		return NULL;
	}
	return find_fold_rk(h + pos, n - pos, nd, nn);
}

static inline const uint8_t *find_str_cached(struct run *run, const uint8_t *h, size_t n,
                                             const uint8_t *nd, size_t nn)
{
	if (run->find_rank.nd != nd || run->find_rank.nn != nn) {
		if (nn > n)
			return NULL;
		find_rank(&run->find_rank, nd, nn);
	}
	return find_str_ranked(h, n, nd, nn, &run->find_rank);
}

/* finds and findsi: search the needle (r2, noff, nn) in the haystack (r1, off, n); v[0]
 * gets the match's offset in r1, or all ones.  fold is a constant at each call. */
static inline int find_in_regions(struct run *run, uint64_t *v, unsigned r1, unsigned r2,
                                  bool fold)
{
	uint64_t off = v[0], n = v[1], noff = v[2], nn = v[3];
	const struct mref *h = &run->R[r1], *nd = &run->R[r2];
	if (!in_bounds(off, n, h->len) || !in_bounds(noff, nn, nd->len))
		return ISA_TRAP_BOUNDS;
	if (nn == 0) {
		v[0] = off;
	} else {
		const uint8_t *p = fold ? find_stri(h->base + off, n, nd->base + noff, nn)
		                 : nn == 1 ? memchr(h->base + off, nd->base[noff], n)
		                 : find_str_cached(run, h->base + off, n, nd->base + noff, nn);
		v[0] = p ? (uint64_t)(p - h->base) : UINT64_MAX;
	}
	return 0;
}

static inline int vm_op_finds(struct run *run, uint64_t *v, unsigned r1, unsigned r2)
{
	return find_in_regions(run, v, r1, r2, false);
}

static inline int vm_op_findsi(struct run *run, uint64_t *v, unsigned r1, unsigned r2)
{
	return find_in_regions(run, v, r1, r2, true);
}

/* ---- findset: a needle of byte sets (each needle position allows a set of bytes) ---- */

/* The needle is nlen / FINDSET_SET sets of 32 bytes, a bitmap each (bit c % 8 of byte c / 8:
 * byte c allowed).  At most FINDSET_MAX of them, so that the fallback (find_sets_bitap) keeps
 * its state in one 64-bit word and stays linear; a whole number of them, else it traps. */
#define FINDSET_SET 32u
#define FINDSET_MAX 64u

static inline int findset_shape_ok(uint64_t nlen)
{
	return nlen % FINDSET_SET == 0 && nlen / FINDSET_SET <= FINDSET_MAX;
}

static inline int set_has_byte(const uint8_t *set, uint8_t c)
{
	return set[c >> 3] >> (c & 7) & 1;
}

/* Does h[0..m) match the m sets? */
static inline int eq_sets(const uint8_t *h, const uint8_t *sets, size_t m)
{
	for (size_t i = 0; i < m; i++)
		if (!set_has_byte(sets + FINDSET_SET * i, h[i]))
			return 0;
	return 1;
}

/* Shift-and over the sets (bit i of d: the last i + 1 bytes match the first i + 1 sets), one
 * table look-up per byte: linear whatever the input, the fallback when candidates keep
 * failing and the search of what the vector loop leaves.  m is 1..FINDSET_MAX. */
static inline const uint8_t *find_sets_bitap(const uint8_t *h, size_t n, const uint8_t *sets,
                                             size_t m)
{
	uint64_t mask[256] = { 0 };
	for (size_t i = 0; i < m; i++)
		for (unsigned w = 0; w < FINDSET_SET; w++)
			for (unsigned bits = sets[FINDSET_SET * i + w]; bits; bits &= bits - 1)
				mask[8 * w + (unsigned)__builtin_ctz(bits)] |= 1ull << i;
	const uint64_t last = 1ull << (m - 1);
	uint64_t d = 0;
	for (size_t c = 0; c < n; c++) {
		d = ((d << 1) | 1) & mask[h[c]];
		if (d & last)
			return h + c + 1 - m;
	}
	return NULL;
}

/* How often a set's bytes come up in text (lower: rarer), from byte_rank (where UTF-8 lead
 * bytes count as common).  Sets of more than 4 bytes are not scanned for (the vector loop
 * compares with each member): UINT32_MAX. */
static inline uint32_t set_weight(const uint8_t *set, uint8_t *members, unsigned *k)
{
	uint32_t w = 0;
	*k = 0;
	/* 64 bits at a time: grep calls findset once per candidate line, so this setup is paid
	 * per line where matches are dense */
	for (unsigned q = 0; q < 4; q++) {
		uint64_t bits = 0;                      /* bit c % 64: byte c */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		memcpy(&bits, set + 8 * q, 8);
#else
		for (unsigned b = 0; b < 8; b++)
			bits |= (uint64_t)set[8 * q + b] << (8 * b);
#endif
		for (; bits; bits &= bits - 1) {
			unsigned c = 64 * q + (unsigned)__builtin_ctzll(bits);
			if (*k == 4)
				return UINT32_MAX;
			members[(*k)++] = (uint8_t)c;
			w += 1u << ((unsigned)byte_rank(c) >> 4);
		}
	}
	return w;
}

#if defined(__SSE2__)
/* find_sets' blocks: 16 positions at a time from *pos, those where sets i1 and i2 (their
 * members in v1 and v2, the last one repeated) match checked in full; kk is the larger
 * set's size, a constant where find_sets calls this, so that a set of 2 bytes costs 2
 * compares, not 4 (ΣΊΣΥΦΟΣ over ASCII text, no candidate at all: 7.3 ms over the bench's
 * 93 MB with 4, 3.8 with 2; find_str 3.5).  Returns the match, or NULL with *pos where the
 * blocks stopped (the end, or checking has cost more than twice the bytes passed). */
static inline __attribute__((always_inline)) const uint8_t *
find_sets_blocks(const uint8_t *h, size_t n, const uint8_t *sets, size_t m, size_t i1, size_t i2,
                 const __m128i *v1, const __m128i *v2, unsigned kk, size_t *pos_p)
{
	size_t pos = *pos_p, imax = i1 > i2 ? i1 : i2;
	uint64_t work = 0;
	for (; pos + imax + 16 <= n; pos += 16) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(h + pos + i1));
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(h + pos + i2));
		__m128i ea = _mm_cmpeq_epi8(a, v1[0]), eb = _mm_cmpeq_epi8(b, v2[0]);
		for (unsigned j = 1; j < kk; j++) {
			ea = _mm_or_si128(ea, _mm_cmpeq_epi8(a, v1[j]));
			eb = _mm_or_si128(eb, _mm_cmpeq_epi8(b, v2[j]));
		}
		unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(ea, eb));
		while (mask) {
			size_t c = pos + (size_t)__builtin_ctz(mask);
			if (c + m <= n && eq_sets(h + c, sets, m))
				return h + c;
			mask &= mask - 1;
			work += m;
		}
		if (work > 4096 + 2 * (uint64_t)pos) {
			pos += 16;                          /* every candidate below was checked */
			break;
		}
	}
	*pos_p = pos;
	return NULL;
}

#endif

/* The first match of the m sets (1..FINDSET_MAX) in h[0..n): find_stri's scheme with sets,
 * 16 positions at a time, keep those where the two rarest sets of at most 4 bytes (i1, i2)
 * both match, then check the others; once checking has cost more than twice the bytes
 * passed, or when no set is small enough, the rest goes to find_sets_bitap. */
static inline const uint8_t *find_sets(const uint8_t *h, size_t n, const uint8_t *sets, size_t m)
{
	if (m > n)
		return NULL;
	size_t pos = 0;
#if defined(__SSE2__)
	uint8_t mem[FINDSET_MAX][4];
	unsigned k[FINDSET_MAX];
	uint32_t wt[FINDSET_MAX];
	size_t i1 = m, i2 = m;
	for (size_t i = 0; i < m; i++) {
		wt[i] = set_weight(sets + FINDSET_SET * i, mem[i], &k[i]);
		if (k[i] == 0)
			return NULL;                        /* an empty set matches nothing */
		if (wt[i] != UINT32_MAX && (i1 == m || wt[i] < wt[i1]))
			i1 = i;
	}
	for (size_t i = 0; i1 < m && i < m; i++)
		if (i != i1 && wt[i] != UINT32_MAX && (i2 == m || wt[i] < wt[i2]))
			i2 = i;
	if (i2 == m)
		i2 = i1;                                /* one set, or one small one */
	if (i1 < m) {
		__m128i v1[4], v2[4];
		for (unsigned j = 0; j < 4; j++) {  /* the members, the last repeated to fill 4 */
			v1[j] = _mm_set1_epi8((char)mem[i1][j < k[i1] ? j : k[i1] - 1]);
			v2[j] = _mm_set1_epi8((char)mem[i2][j < k[i2] ? j : k[i2] - 1]);
		}
		const uint8_t *r;
		switch (k[i1] > k[i2] ? k[i1] : k[i2]) {
		case 1: r = find_sets_blocks(h, n, sets, m, i1, i2, v1, v2, 1, &pos); break;
		case 2: r = find_sets_blocks(h, n, sets, m, i1, i2, v1, v2, 2, &pos); break;
		case 3: r = find_sets_blocks(h, n, sets, m, i1, i2, v1, v2, 3, &pos); break;
		default: r = find_sets_blocks(h, n, sets, m, i1, i2, v1, v2, 4, &pos); break;
		}
		if (r)
			return r;
	}
#endif
	if (pos >= n || m > n - pos)
		return NULL;
	/* what is left: a short tail (under 16 + imax positions), or the fallback */
	if ((n - pos - m + 1) * (uint64_t)m <= 4096) {
		for (size_t c = pos; c + m <= n; c++)
			if (eq_sets(h + c, sets, m))
				return h + c;
		return NULL;
	}
	return find_sets_bitap(h + pos, n - pos, sets, m);
}

static inline int vm_op_findset(struct run *run, uint64_t *v, unsigned r1, unsigned r2)
{
	uint64_t off = v[0], n = v[1], noff = v[2], nn = v[3];
	const struct mref *h = &run->R[r1], *nd = &run->R[r2];
	if (!in_bounds(off, n, h->len) || !in_bounds(noff, nn, nd->len) || !findset_shape_ok(nn))
		return ISA_TRAP_BOUNDS;
	const uint8_t *p = nn == 0 ? h->base + off
	                 : find_sets(h->base + off, n, nd->base + noff, nn / FINDSET_SET);
	v[0] = p ? (uint64_t)(p - h->base) : UINT64_MAX;
	return 0;
}

static inline int vm_op_output(struct run *run, uint64_t *v, unsigned r)
{
	struct mref *R = run->R;
	uint64_t off = v[0], n = v[1];
	const struct mref *m = &R[r];
	if (!in_bounds(off, n, m->len))
		return ISA_TRAP_BOUNDS;
	uint64_t at = R[ISA_R_OUT].len;
	if (!in_bounds(at, n, run->out_cap))
		return ISA_TRAP_OUTPUT_FULL;
	if (n)                                      /* a source inside out lies below `at` */
		memcpy(R[ISA_R_OUT].base + at, m->base + off, n);
	R[ISA_R_OUT].len = at + n;
	return 0;
}

static inline int vm_op_outb(struct run *run, uint64_t *v)
{
	struct mref *o = &run->R[ISA_R_OUT];
	uint64_t at = o->len;
	if (at >= run->out_cap)
		return ISA_TRAP_OUTPUT_FULL;
	o->base[at] = (uint8_t)v[0];
	o->len = at + 1;
	return 0;
}

static inline int vm_op_outq(struct run *run, uint64_t *v)
{
	struct mref *o = &run->R[ISA_R_OUT];
	uint64_t at = o->len, x = v[0];
	if (!in_bounds(at, 8, run->out_cap))
		return ISA_TRAP_OUTPUT_FULL;
	for (int i = 0; i < 8; i++)
		o->base[at + i] = (uint8_t)(x >> (8 * i));
	o->len = at + 8;
	return 0;
}

#endif
