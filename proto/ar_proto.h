/* ar_proto.h: the Active RDMA protocol between libarc (client/) and arfd (server/), carried
 * in Paradis-Net messages.  Both sides encode and decode through proto.c and nothing else;
 * docs/protocol.md shows the exchange and the byte layout.
 *
 * One request, one reply, matched by a Paradis-Net Cooperation:
 *   1. The client opens a Cooperation with one receive descriptor of type AR_T_REPLY.
 *   2. It sends the request as message type AR_T_<OP> with the Cooperation's token.
 *   3. arfd's handler for that type checks the secret, does the work, and answers with one
 *      AR_T_REPLY message carrying the token; Paradis-Net writes it into the descriptor.
 *
 * Encoding: little-endian integers; strings and blobs are length-prefixed.
 *   request  = u32 magic "ARq1" | u16 secret_len | secret | body
 *   reply    = u32 magic "ARr1" | i32 status (0 or -AR_E*) | u16 msg_len | msg | body
 * Bodies per operation:
 *   INSTALL  req: segment bytes (the rest)         rep: id[32]
 *   EXEC     req: u8 mode (0 by id, 1 inline) | id[32] or (u32 len | segment) |
 *                 u16 len | entry | u8 n | n * i64 args | u64 fuel | u64 out_max |
 *                 u32 len | argument bytes
 *            rep: i64 value | u64 fuel_used | u8 trapped | [trap: u32 kind | u32 code |
 *                 u32 func | u32 pc | u32 line | u16 len | text] | u32 out_len | output
 *   READ     req: u16 len | region | u64 off | u32 len     rep: the bytes
 *   WRITE    req: u16 len | region | u64 off | u32 len | bytes     rep: (empty)
 *   REGIONS  req: (empty)   rep: u32 n | n * (u16 len | name | u64 size | u8 access)
 *   STATS    req: (empty)   rep: text, one "name value" per line
 * Any request may be answered MOVED (docs/protocol.md, "Moves"): not started, the message is
 * the endpoint now serving the image ("tcp:10.0.0.2:7000"), checked by ar_moved_target.
 */
#ifndef AR_PROTO_H
#define AR_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ar_err {
#define ERR(name, value, msg) AR_E##name = value,
#include "ar_err.def"
#undef ERR
	AR_ECOUNT
};
const char *ar_strerror(int err);  /* accepts err or -err */

/* Paradis-Net message types. */
enum ar_type {
	AR_T_INSTALL = 1, AR_T_EXEC, AR_T_READ, AR_T_WRITE, AR_T_REGIONS, AR_T_STATS,
	AR_T_REPLY = 64,
};

#define AR_REQ_MAGIC   0x31715241u  /* "ARq1" */
#define AR_REP_MAGIC   0x31725241u  /* "ARr1" */
#define AR_ID_LEN      32
#define AR_MAX_NAME    255
#define AR_MAX_SECRET  1024
#define AR_MAX_ARGS    255
#define AR_MAX_MSG     1000         /* error text in a reply */

/* ---- a growable output buffer with a sticky error ---- */
struct ar_buf {
	uint8_t *p;
	size_t len, cap;
	int failed;
	int fixed;                 /* p is the caller's storage (ar_buf_over): never grown or freed */
};
/* A buffer over the caller's CAP bytes at P (a stack array, for a reply header built on
 * every request): writing past them fails it instead of growing it. */
static inline struct ar_buf ar_buf_over(void *p, size_t cap)
{
	return (struct ar_buf){ .p = p, .cap = cap, .fixed = 1 };
}
void ar_buf_free(struct ar_buf *b);
/* Reserve n bytes and return where they start (NULL after an error). */
uint8_t *ar_put_space(struct ar_buf *b, size_t n);

/* The numbers, little-endian, are inline: a request or reply is a dozen of them, on every
 * round trip, and most fit the buffer's capacity (then no call at all).  Byte by byte, so
 * the layout does not depend on the host's byte order; the compiler merges the stores. */
static inline uint8_t *ar_put_fast(struct ar_buf *b, size_t n)
{
	/* len <= cap always, so cap - len does not wrap; a buffer without storage yet goes to
	 * ar_put_space, which never hands out NULL + 0 */
	if (__builtin_expect(!b->failed && b->p && n <= b->cap - b->len, 1)) {
		uint8_t *at = b->p + b->len;
		b->len += n;
		return at;
	}
	return ar_put_space(b, n);
}
/* (spelt out, not a loop: gcc merges these into one store, but not a loop's) */
static inline void ar_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}
static inline void ar_put8(struct ar_buf *b, uint8_t v)
{
	uint8_t *p = ar_put_fast(b, 1);
	if (p)
		p[0] = v;
}
static inline void ar_put16(struct ar_buf *b, uint16_t v)
{
	uint8_t *p = ar_put_fast(b, 2);
	if (p) {
		p[0] = (uint8_t)v;
		p[1] = (uint8_t)(v >> 8);
	}
}
static inline void ar_put32(struct ar_buf *b, uint32_t v)
{
	uint8_t *p = ar_put_fast(b, 4);
	if (p)
		ar_put_le32(p, v);
}
static inline void ar_put64(struct ar_buf *b, uint64_t v)
{
	uint8_t *p = ar_put_fast(b, 8);
	if (p) {
		ar_put_le32(p, (uint32_t)v);
		ar_put_le32(p + 4, (uint32_t)(v >> 32));
	}
}
void ar_put_bytes(struct ar_buf *b, const void *p, size_t n);
void ar_put_str16(struct ar_buf *b, const char *s);    /* u16 len | bytes */

/* ---- a bounds-checked reader with a sticky error ---- */
struct ar_rd {
	const uint8_t *p, *end;
	int failed;
};
/* A reader over the N bytes at P; P may be NULL when N is 0 (an empty body). */
static inline struct ar_rd ar_rd_over(const void *p, size_t n)
{
	const uint8_t *b = p;
	return (struct ar_rd){ b, n ? b + n : b, 0 };
}
/* Little-endian numbers; 0 past the end (the reader then says failed).  Inline, as the puts,
 * and spelt out byte by byte, which gcc turns into one load (but not a loop). */
static inline const uint8_t *ar_get_fast(struct ar_rd *r, size_t n)
{
	const uint8_t *p = r->p;
	if (__builtin_expect(r->failed || n > (size_t)(r->end - p), 0)) {
		r->failed = 1;
		return NULL;
	}
	r->p = p + n;
	return p;
}
/* n bytes in place (NULL past the end: the reader then says failed) */
static inline const uint8_t *ar_get_bytes(struct ar_rd *r, size_t n) { return ar_get_fast(r, n); }
static inline size_t ar_left(const struct ar_rd *r)
{
	return r->failed ? 0 : (size_t)(r->end - r->p);
}
static inline uint32_t ar_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint8_t ar_get8(struct ar_rd *r)
{
	const uint8_t *p = ar_get_fast(r, 1);
	return p ? p[0] : 0;
}
static inline uint16_t ar_get16(struct ar_rd *r)
{
	const uint8_t *p = ar_get_fast(r, 2);
	return p ? (uint16_t)(p[0] | p[1] << 8) : 0;
}
static inline uint32_t ar_get32(struct ar_rd *r)
{
	const uint8_t *p = ar_get_fast(r, 4);
	return p ? ar_get_le32(p) : 0;
}
static inline uint64_t ar_get64(struct ar_rd *r)
{
	const uint8_t *p = ar_get_fast(r, 8);
	return p ? ar_get_le32(p) | (uint64_t)ar_get_le32(p + 4) << 32 : 0;
}
/* u16-length string copied into out (NUL-terminated, at most cap-1 bytes, else failed). */
void ar_get_str16(struct ar_rd *r, char *out, size_t cap);

/* Request and reply headers. */
void ar_req_begin(struct ar_buf *b, const char *secret);
/* Parses the header; copies the secret (failed if longer than AR_MAX_SECRET). */
int ar_req_parse(struct ar_rd *r, char *secret, size_t cap);
void ar_rep_begin(struct ar_buf *b, int status, const char *msg);
int ar_rep_parse(struct ar_rd *r, int *status, char *msg, size_t cap);

/* ---- compression of EXEC payloads (docs/protocol.md, "Compression") ----
 * Request flags (an optional u32 after the wall-clock limit): */
#define AR_EXF_ACCEPT_ZSTD 1u       /* the client unpacks zstd output */
#define AR_EXF_ARGS_ZSTD   2u       /* the argument bytes are a zstd frame; u32 their length
                                     * unpacked follows the flags */
#define AR_EXF_WANT_ZSTD   4u       /* pack the output whatever the link (the client says so);
                                     * with RATE: when packing pays at that rate */
#define AR_EXF_RATE        8u       /* u32: the rate the client receives at, KiB a second
                                     * (after the u32 of ARGS_ZSTD) */
/* Reply flags (an optional u32 after the output, only to a request with flags): */
#define AR_EXR_OUT_ZSTD    1u       /* the output is a zstd frame; u32 its length unpacked
                                     * follows the flags */
#define AR_EXR_TAKES_ZSTD  2u       /* the server unpacks zstd argument bytes */
#define AR_EXR_ARGS_SLOW   4u       /* the client's large requests reach the server slowly
                                     * (pn_link_rx_rate): pack argument bytes for a while;
                                     * a u32 follows (after OUT_ZSTD's): that rate, KiB a
                                     * second */
/* Payloads at least this large are packed when the sender's link delivers less than
 * AR_ZSTD_BELOW bytes a second (pn_link_rate, or the receiver's pn_link_rx_rate). */
#define AR_ZSTD_MIN   4096u
#define AR_ZSTD_BELOW (150u * 1000 * 1000)
/* Pack n bytes (zstd level 1): 0 with *out (malloc'd) and *out_len when at least a tenth
 * smaller, 1 when not worth it, -1 out of memory.  Each call of AR_ZSTD_MIN bytes or more is
 * timed, and its ratio kept, for ar_zstd_pays. */
int ar_zstd_pack(const void *src, size_t n, void **out, size_t *out_len);
/* One packing's speed, picoseconds a byte by the wall clock, into this process's measure
 * (ar_zstd_pack does it; tests): the median of the last 8, which it returns. */
uint64_t ar_zstd_time_in(uint64_t ps_per_byte);
/* Does packing pay on a link of rate bytes a second (0: unknown, fast)?  Below AR_ZSTD_BELOW,
 * when packing (at ps_per_byte picoseconds a byte, to ratio_pm per mille) and unpacking
 * cost less than the link time it saves; ar_zstd_pays with this process's measures, and
 * yes once a second anyway to measure again. */
bool ar_zstd_pays_at(uint64_t ps_per_byte, uint64_t ratio_pm, uint64_t rate);
bool ar_zstd_pays(uint64_t rate);
/* Unpack a frame of exactly dst_len bytes into dst: 0, or -1 (malformed, another size). */
int ar_zstd_unpack(const void *src, size_t n, void *dst, size_t dst_len);

/* ---- MOVED: the endpoint a reply names ----
 * The message of a MOVED reply, read from the network: 0 when it is an endpoint a client may
 * follow, "SCHEME:HOST:PORT" (SCHEME tcp, tls, udp or rdma; HOST letters, digits, '.', '-',
 * '_', at most AR_MAX_ENDPOINT bytes in all; PORT 1..65535 in decimal, no sign or leading
 * zero); -1 otherwise, with the reason in why (a caller-provided buffer, may be NULL). */
#define AR_MAX_ENDPOINT 255
int ar_moved_target(const char *msg, char *why, size_t whylen);

/* Trap information as it travels in an EXEC reply. */
struct ar_trap {
	uint32_t kind, code, func, pc, line;
	char text[AR_MAX_MSG + 1];  /* e.g. "trap bounds (...) in main at pc 12, line 7" */
};

#endif
