/* native.c: C versions of the bench/vm kernels (see native.h).
 *
 * Built as a separate object with the flags in bench/vm/Makefile (gcc -O2).  The functions
 * return their results, which the harness checks against the VM's, so the compiler cannot
 * drop the work.
 */
#include <string.h>

#include "native.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "native_chase reads the little-endian node layout with plain loads"
#endif

const char native_compiler[] = __VERSION__;

/* noinline: kept out of any caller even if this file is ever merged into one unit.
 * aligned(64): where the linker happens to place a function moves its loop relative to 64-byte
 * boundaries, which on this machine changed native_isum's time by 25% between two links of
 * the same object; a fixed alignment makes the baseline the same in every build. */
#define NATIVE_FN __attribute__((noinline, aligned(64)))

NATIVE_FN uint64_t native_isum(uint64_t n)
{
	uint64_t s = 0;

	for (uint64_t i = 0; i < n; i++)
		s += (i * i) % 7;
	return s;
}

NATIVE_FN uint64_t native_count_nl(const uint8_t *p, size_t len)
{
	uint64_t c = 0;

	for (size_t i = 0; i < len; i++)
		c += p[i] == '\n';
	return c;
}

/* What a C programmer would write for speed: libc's vectorised memchr, one call per line. */
NATIVE_FN uint64_t native_count_nl_memchr(const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	uint64_t c = 0;

	while (p < end) {
		const uint8_t *q = memchr(p, '\n', (size_t)(end - p));
		if (!q)
			break;
		c++;
		p = q + 1;
	}
	return c;
}

NATIVE_FN uint64_t native_fnv1a(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* The sum of the LEB128 varints filling p[0, len): 7 bits per byte, low groups first, a set
 * top bit means another byte follows.  The input is well formed (the harness makes it), so
 * the last value ends at p[len - 1]; shifts are mod 64 as in the VM. */
NATIVE_FN uint64_t native_varint(const uint8_t *p, size_t len)
{
	uint64_t s = 0;
	size_t i = 0;

	while (i < len) {
		uint64_t v = 0;
		unsigned sh = 0;
		uint8_t b;
		do {
			b = p[i++];
			v |= (uint64_t)(b & 0x7f) << (sh & 63);
			sh += 7;
		} while (b & 0x80);
		s += v;
	}
	return s;
}

/* Look up the keys of q[0, q_len) (a length byte, then the key) in the open-addressing table
 * tab (16-byte slots: u32 key offset in keys, u32 key length, 0 for empty; u64 value), linear
 * probing from FNV-1a & mask: the sum of the values found + the number of misses.  The table
 * always has an empty slot (the harness makes it half full). */
NATIVE_FN uint64_t native_hprobe(const uint8_t *tab, size_t tab_len, const uint8_t *keys,
                                 const uint8_t *q, size_t q_len)
{
	uint64_t mask = tab_len / 16 - 1, s = 0;
	size_t i = 0;

	while (i < q_len) {
		size_t len = q[i++];
		uint64_t h = 0xcbf29ce484222325ull;
		for (size_t j = i; j < i + len; j++)
			h = (h ^ q[j]) * 0x100000001b3ull;
		for (uint64_t slot = h & mask;; slot = (slot + 1) & mask) {
			const uint8_t *e = tab + slot * 16;
			uint32_t koff, klen;
			memcpy(&koff, e, 4);
			memcpy(&klen, e + 4, 4);
			if (klen == 0) {
				s++;
				break;
			}
			if (klen == len && memcmp(keys + koff, q + i, len) == 0) {
				uint64_t v;
				memcpy(&v, e + 8, 8);
				s += v;
				break;
			}
		}
		i += len;
	}
	return s;
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof v);    /* the layout is little-endian, as is every host we run on */
	return v;
}

NATIVE_FN uint64_t native_chase(const uint8_t *nodes, uint64_t head)
{
	uint64_t s = 0;

	for (uint64_t p = head; p != CHASE_END; p = load64(nodes + p))
		s += load64(nodes + p + 8);
	return s;
}

/* The sum of the indexes of the set bits of the u64 words bits[0, len). */
NATIVE_FN uint64_t native_bitmap(const uint8_t *bits, size_t len)
{
	uint64_t s = 0;

	for (size_t off = 0; off < len; off += 8) {
		uint64_t w = load64(bits + off);
		while (w) {
			s += off * 8 + (uint64_t)__builtin_ctzll(w);
			w &= w - 1;
		}
	}
	return s;
}

static uint32_t load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof v);
	return v;
}

/* B-tree node search: query i (u32) of q searches node i % n_nodes (n_nodes a power of two)
 * of BT_KEYS sorted u32 keys by binary search; the sum of the lower-bound positions. */
NATIVE_FN uint64_t native_btree(const uint8_t *nodes, size_t nodes_len, const uint8_t *q,
                                size_t q_len)
{
	uint64_t mask = nodes_len / (4 * BT_KEYS) - 1, s = 0;

	for (size_t i = 0; i < q_len / 4; i++) {
		uint32_t key = load32(q + 4 * i);
		const uint8_t *node = nodes + (i & mask) * (4 * BT_KEYS);
		size_t lo = 0, hi = BT_KEYS;
		while (lo < hi) {
			size_t mid = (lo + hi) >> 1;
			if (load32(node + 4 * mid) < key)
				lo = mid + 1;
			else
				hi = mid;
		}
		s += lo;
	}
	return s;
}

/* Each run of SORT_RUN 8-byte records (u32 key, u32 value) of recs, copied out and
 * insertion-sorted by key (stable); s = (s * 31 + value) mod 2^32 over the sorted runs. */
NATIVE_FN uint64_t native_rsort(const uint8_t *recs, size_t len)
{
	uint64_t buf[SORT_RUN], s = 0;

	for (size_t base = 0; base < len; base += sizeof buf) {
		memcpy(buf, recs + base, sizeof buf);
		for (size_t i = 1; i < SORT_RUN; i++) {
			uint64_t rec = buf[i];
			uint32_t key = (uint32_t)rec;
			size_t j = i;
			for (; j > 0 && (uint32_t)buf[j - 1] > key; j--)
				buf[j] = buf[j - 1];
			buf[j] = rec;
		}
		for (size_t i = 0; i < SORT_RUN; i++)
			s = (s * 31 + (buf[i] >> 32)) & 0xffffffff;
	}
	return s;
}

NATIVE_FN uint64_t native_fib(uint64_t n)
{
	return n < 2 ? n : native_fib(n - 1) + native_fib(n - 2);
}
