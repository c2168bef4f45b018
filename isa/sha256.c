/* sha256.c: SHA-256 (FIPS 180-4), used to name code segments by their content.
 * Written from the standard; a hostile client must not be able to make two segments share
 * an id in the server's cache, so a cryptographic hash rather than FNV.
 */
#include <string.h>

#include "isa.h"

static const uint32_t k256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, int n) { return x >> n | x << (32 - n); }
static inline uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = be32(p + 4 * i);
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + k256[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

int isa_sha256_portable;

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

/* The same blocks with the x86 SHA extensions (sha256rnds2 does two rounds, sha256msg1/2 the
 * message schedule): a 1.5 MB segment (grep with 10,000 patterns) is hashed when it is
 * loaded, sent and received, ~10 ms each in C, ~1 ms here.  The state lives as ABEF and CDGH
 * halves, the order the instructions take. */
__attribute__((target("sha,ssse3,sse4.1")))
static void blocks_sha_ni(uint32_t h[8], const uint8_t *p, size_t n_blocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
	__m128i dcba = _mm_loadu_si128((const __m128i *)&h[0]);
	__m128i hgfe = _mm_loadu_si128((const __m128i *)&h[4]);
	__m128i cdab = _mm_shuffle_epi32(dcba, 0xb1);
	__m128i efgh = _mm_shuffle_epi32(hgfe, 0x1b);
	__m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
	__m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xf0);
	for (; n_blocks > 0; n_blocks--, p += 64) {
		__m128i abef0 = abef, cdgh0 = cdgh, w[4];
		for (int g = 0; g < 16; g++) {
			/* words 4g..4g+3 of the schedule, in w[g & 3] */
			if (g < 4) {
				w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
			} else {
				/* W[t-16] + s0(W[t-15]) + W[t-7], then + s1(W[t-2]) */
				__m128i x = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
				x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
				w[g & 3] = _mm_sha256msg2_epu32(x, w[(g + 3) & 3]);
			}
			__m128i m = _mm_add_epi32(w[g & 3], _mm_loadu_si128((const __m128i *)&k256[4 * g]));
			cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
			abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m, 0x0e));
		}
		abef = _mm_add_epi32(abef, abef0);
		cdgh = _mm_add_epi32(cdgh, cdgh0);
	}
	__m128i feba = _mm_shuffle_epi32(abef, 0x1b);
	__m128i dchg = _mm_shuffle_epi32(cdgh, 0xb1);
	_mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(feba, dchg, 0xf0));
	_mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(dchg, feba, 8));
}

/* 1 when the CPU has SHA, SSSE3 and SSE4.1 (asked once; 0 not asked yet, -1 without) */
static int sha_ni_ok(void)
{
	static int ok;
	int v = __atomic_load_n(&ok, __ATOMIC_RELAXED);
	if (v == 0) {
		unsigned a, b, c, d;
		int sse = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSSE3) && (c & bit_SSE4_1);
		int sha = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
		v = sse && sha ? 1 : -1;
		__atomic_store_n(&ok, v, __ATOMIC_RELAXED);
	}
	return v > 0;
}

static void blocks(uint32_t h[8], const uint8_t *p, size_t n_blocks)
{
	if (!isa_sha256_portable && sha_ni_ok()) {
		blocks_sha_ni(h, p, n_blocks);
		return;
	}
	for (; n_blocks > 0; n_blocks--, p += 64)
		block(h, p);
}
#else
static void blocks(uint32_t h[8], const uint8_t *p, size_t n_blocks)
{
	for (; n_blocks > 0; n_blocks--, p += 64)
		block(h, p);
}
#endif

void isa_sha256(const void *buf, size_t len, uint8_t out[ISA_ID_LEN])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	const uint8_t *p = buf;
	size_t n = len;
	blocks(h, p, n / 64);
	p += n / 64 * 64;
	n %= 64;
	/* Last block(s): the rest, 0x80, zeros, and the length in bits as a big-endian u64. */
	uint8_t tail[128] = { 0 };
	memcpy(tail, p, n);
	tail[n] = 0x80;
	size_t tail_len = n + 9 <= 64 ? 64 : 128;
	uint64_t bits = (uint64_t)len * 8;
	for (int i = 0; i < 8; i++)
		tail[tail_len - 1 - i] = (uint8_t)(bits >> (8 * i));
	blocks(h, tail, tail_len / 64);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(h[i] >> 8);
		out[4 * i + 3] = (uint8_t)h[i];
	}
}

void isa_id_hex(const uint8_t id[ISA_ID_LEN], char hex[2 * ISA_ID_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < ISA_ID_LEN; i++) {
		hex[2 * i] = digits[id[i] >> 4];
		hex[2 * i + 1] = digits[id[i] & 15];
	}
	hex[2 * ISA_ID_LEN] = '\0';
}
