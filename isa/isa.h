/* isa.h: the Active RDMA stack ISA and its code segment format.
 *
 * This is the bottom layer: it depends on nothing but libc.  The interpreter, the JIT, the
 * assembler, the disassembler, the verifier and docs/isa.md all derive from isa/ops.def.
 *
 * Instruction encoding (variable length, little-endian immediates):
 *
 *     +--------+------------------------+
 *     | opcode | immediate(s), per fmt  |      1 + isa_fmt_len[fmt] bytes
 *     +--------+------------------------+
 *
 *     fmt     bytes  meaning
 *     NONE    0
 *     I8      1      signed constant
 *     I32     4      signed constant
 *     I64     8      constant
 *     U8      1      local index
 *     U8I8    2      local index, signed increment
 *     U16     2      unsigned code (trap)
 *     REL32   4      branch displacement, relative to the first byte of the branch
 *     FUNC    2      function index in this segment
 *     HOOK    2      hook import index
 *     R       1      region index (see below)
 *     RR      2      destination/first region index, then source/second region index
 *
 * Region indices: 0 = args (the run's argument bytes, read-only), 1 = out (the output buffer;
 * stores beyond its current length extend it, zero-filling any gap), 2 = const (the segment's
 * read-only constant data), 3.. = the segment's region imports in order.
 *
 * Machine model: a 64-bit integer operand stack per function activation, up to ISA_MAX_LOCALS
 * locals per function (arguments first), calls between functions of one segment; every function
 * takes n_args values and returns exactly one.
 */
#ifndef ISA_H
#define ISA_H

#include <stddef.h>
#include <stdint.h>

#define ISA_MAGIC        0x47534e50u  /* "PNSG" read as a little-endian u32 */
#define ISA_VERSION      1
#define ISA_HEADER_LEN   16

#define ISA_R_ARGS       0
#define ISA_R_OUT        1
#define ISA_R_CONST      2
#define ISA_R_FIRST_IMPORT 3
#define ISA_MAX_REGIONS  (256 - ISA_R_FIRST_IMPORT)   /* imports addressable by a u8 */
#define ISA_MAX_HOOKS    1024
#define ISA_MAX_FUNCS    65535
#define ISA_MAX_EXPORTS  65535
#define ISA_MAX_LOCALS   255
#define ISA_MAX_STACK    1024                         /* operand stack slots per function */
#define ISA_MAX_CODE     (16u << 20)                  /* bytes of code per function */
#define ISA_MAX_CONST    (64u << 20)                  /* bytes of constant data */
#define ISA_MAX_NAME     255
#define ISA_MAX_HOOK_ARGS 8
#define ISA_MAX_SIG      (ISA_MAX_HOOK_ARGS + 2)      /* "llll:l" */

/* Region access, as imported by a segment and as exported by a host. */
#define ISA_ACC_READ     1u
#define ISA_ACC_WRITE    2u
#define ISA_ACC_RO       ISA_ACC_READ
#define ISA_ACC_RW       (ISA_ACC_READ | ISA_ACC_WRITE)

enum isa_fmt {
	ISA_FMT_NONE, ISA_FMT_I8, ISA_FMT_I32, ISA_FMT_I64, ISA_FMT_U8, ISA_FMT_U8I8, ISA_FMT_U16,
	ISA_FMT_REL32, ISA_FMT_FUNC, ISA_FMT_HOOK, ISA_FMT_R, ISA_FMT_RR,
	ISA_FMT_COUNT
};

enum op {
#define OP(name, fmt, pop, push, flags, syn) OP_##name,
#include "ops.def"
#undef OP
	OP_COUNT
};

#define OP_VAR      (-1)       /* pop count given by the callee or hook signature */

#define OPF_BRANCH  0x01u      /* conditional branch: target or fall through */
#define OPF_JUMP    0x02u      /* unconditional branch: no fall through */
#define OPF_END     0x04u      /* ends the function's path (ret, trap) */
#define OPF_CALL    0x08u      /* call: stack effect from the callee */
#define OPF_MEM     0x10u      /* addresses a region */
#define OPF_WRITE   0x20u      /* writes its (first) region */
#define OPF_MAYTRAP 0x40u      /* may trap for a reason other than memory bounds */

struct isa_op_info {
	const char *name;          /* mnemonic, lower case */
	const char *synopsis;
	uint8_t fmt;               /* enum isa_fmt */
	int8_t pop, push;
	uint8_t flags;
};

extern const struct isa_op_info isa_op_info[OP_COUNT];
extern const uint8_t isa_fmt_len[ISA_FMT_COUNT];
extern const char *const isa_fmt_name[ISA_FMT_COUNT];

/* Look a mnemonic up (case-insensitive); returns the opcode or -1. */
int isa_op_lookup(const char *name, size_t len);

enum isa_trap {
#define TRAP(name, value, desc) ISA_TRAP_##name = value,
#include "trap.def"
#undef TRAP
	ISA_TRAP_COUNT
};

/* Names ("bounds", "div_zero", ...) and descriptions of trap kinds; "?" when out of range. */
const char *isa_trap_name(int kind);
const char *isa_trap_desc(int kind);

/* One decoded instruction. */
struct isa_insn {
	uint8_t op;                /* enum op */
	uint8_t len;               /* encoded length in bytes */
	uint8_t a, b;              /* U8/U8I8: local; R: region; RR: both regions */
	int64_t imm;               /* constants, displacements, function/hook index, trap code */
};

/* Decode the instruction at code[pc].  Returns 0, or -1 when the opcode is unknown or the
 * instruction runs past len.  Never reads outside code[0..len). */
int isa_decode(const uint8_t *code, size_t len, size_t pc, struct isa_insn *in);

/* Encode one instruction into buf (at least ISA_MAX_INSN bytes); returns its length. */
#define ISA_MAX_INSN 9
size_t isa_encode(uint8_t *buf, const struct isa_insn *in);

/* ---- code segments ----
 *
 * Segment layout, all integers little-endian:
 *
 *     header   u32 magic "PNSG" | u16 version | u16 flags (0) | u32 total length | u32 0
 *     sections, each: u8 kind | u8 0 | u16 0 | u32 payload length | payload
 *              kinds in increasing order, each at most once, all optional:
 *       1 REGIONS  u16 n, then n * { u8 access | u8 name_len | name }
 *       2 HOOKS    u16 n, then n * { u8 name_len | name | u8 sig_len | sig }
 *       3 FUNCS    u16 n, then n * { u8 name_len | name | u8 n_args | u8 n_locals |
 *                                     u16 max_stack | u32 code_len | code }
 *       4 EXPORTS  u16 n, then n * { u16 func | u8 name_len | name }
 *       5 CONST    bytes
 *       6 LINES    u8 source_len | source | u32 n, then n * { u16 func | u32 pc | u32 line },
 *                  sorted by (func, pc)
 *
 * Names are 1..255 bytes of printable ASCII without spaces.  A hook signature is up to
 * ISA_MAX_HOOK_ARGS argument type letters, ':', one result letter: i (int32), I (uint32),
 * l (int64), L (uint64), and for the result also v (void).  Example: "ll:l".
 * A segment is identified by the SHA-256 of its bytes (isa_seg_id).
 */
enum isa_section {
	ISA_SEC_REGIONS = 1, ISA_SEC_HOOKS, ISA_SEC_FUNCS, ISA_SEC_EXPORTS, ISA_SEC_CONST,
	ISA_SEC_LINES, ISA_SEC_LAST = ISA_SEC_LINES
};

struct isa_region_import { char *name; uint8_t access; };
struct isa_hook_import   { char *name; char *sig; };
struct isa_func {
	char *name;
	uint8_t n_args, n_locals;  /* n_locals counts the arguments too */
	uint16_t max_stack;
	uint32_t code_len;
	uint8_t *code;
};
struct isa_export        { char *name; uint16_t func; };
struct isa_line          { uint16_t func; uint32_t pc; uint32_t line; };

/* A segment in memory.  Decoded segments own every pointer in them (isa_seg_free); a segment
 * filled by a producer (assembler, builder) is encoded with isa_seg_encode. */
struct isa_seg {
	uint32_t n_regions, n_hooks, n_funcs, n_exports, n_lines;
	struct isa_region_import *regions;
	struct isa_hook_import *hooks;
	struct isa_func *funcs;
	struct isa_export *exports;
	uint8_t *consts;
	uint32_t const_len;
	char *source;              /* file name for the line table, may be NULL */
	struct isa_line *lines;
};

/* Parse bytes into a new segment.  Checks the framing and every count, length and index
 * against the bytes and the limits above; instruction streams are checked by the verifier
 * (vm/).  Returns 0 and *out (free with isa_seg_free), or -1 with a message in err. */
int isa_seg_decode(const void *buf, size_t len, struct isa_seg **out, char *err, size_t errlen);
void isa_seg_free(struct isa_seg *seg);

/* Serialise seg.  Returns 0 and a malloc'd buffer (freed by the caller), or -1 with a
 * message in err when a field breaks a limit. */
int isa_seg_encode(const struct isa_seg *seg, uint8_t **out, size_t *out_len, char *err,
                   size_t errlen);

/* Check a hook signature; returns its argument count, or -1. */
int isa_sig_check(const char *sig);
/* Check a name (regions, hooks, functions, exports); returns 0 or -1. */
int isa_name_check(const char *name, size_t len);

/* Source line of (func, pc) from the line table: the entry with the largest pc <= the given
 * one in that function; 0 when unknown. */
uint32_t isa_seg_line(const struct isa_seg *seg, uint32_t func, uint32_t pc);

/* ---- verification ----
 * isa_verify_func proves for function fi of a decoded segment: every instruction decodes; every
 * branch lands on an instruction of the function; local/region/function/hook indices exist;
 * writes go only to writable regions (out and rw imports), atomics only to imports; the stack
 * depth is the same on every path into an instruction, never negative, never above the declared
 * max_stack; no path falls off the end.  depth (optional, code_len entries) receives the depth
 * before each reachable instruction start, -1 for unreachable starts, -2 inside instructions;
 * max_depth (optional) the largest depth reached.  Returns 0, or -1 with a message like
 * "verify: function main at pc 12 (add): stack underflow (depth 1, needs 2)". */
int isa_verify_func(const struct isa_seg *seg, uint32_t fi, int16_t *depth, unsigned *max_depth,
                    char *err, size_t errlen);
int isa_verify(const struct isa_seg *seg, char *err, size_t errlen);

/* ---- segment id ---- */
#define ISA_ID_LEN 32
void isa_sha256(const void *buf, size_t len, uint8_t out[ISA_ID_LEN]);
/* Nonzero: the portable C rounds even where the CPU has SHA instructions (tests compare). */
extern int isa_sha256_portable;
static inline void isa_seg_id(const void *seg, size_t len, uint8_t out[ISA_ID_LEN])
{
	isa_sha256(seg, len, out);
}
/* Write the id as 64 lower-case hex digits and a NUL into hex[65]. */
void isa_id_hex(const uint8_t id[ISA_ID_LEN], char hex[2 * ISA_ID_LEN + 1]);

/* ---- files (isa/readall.c), for the command-line programs ----
 * Read a whole stream or file: 0 and a malloc'd buffer (freed by the caller), or -1 with
 * errno set. */
#include <stdio.h>
int isa_read_all(FILE *f, void **out, size_t *len);
int isa_read_file(const char *path, void **out, size_t *len);

/* ---- little-endian access, used by every encoder and decoder of ours ---- */
static inline uint16_t isa_get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t isa_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t isa_get64(const uint8_t *p)
{
	return (uint64_t)isa_get32(p) | (uint64_t)isa_get32(p + 4) << 32;
}
static inline void isa_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void isa_put32(uint8_t *p, uint32_t v)
{
	isa_put16(p, (uint16_t)v); isa_put16(p + 2, (uint16_t)(v >> 16));
}
static inline void isa_put64(uint8_t *p, uint64_t v)
{
	isa_put32(p, (uint32_t)v); isa_put32(p + 4, (uint32_t)(v >> 32));
}

#endif
