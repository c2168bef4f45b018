/* cc_int.h: private interface of pncc between the object reader (object.c), the translator
 * (translate.c) and the BPF disassembler (bpfdis.c).
 *
 * object.c turns the ELF bytes (through libelf) into the tables below, every index and length
 * checked; translate.c only reads them.  Nothing here prints: messages go into struct diag.
 */
#ifndef CC_INT_H
#define CC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "asm_int.h"

/* ---- BPF instructions (the kernel's uapi/linux/bpf.h, the encoding clang emits) ---- */
#define BPF_CLASS(c)  ((c) & 0x07)
#define BPF_LD     0x00
#define BPF_LDX    0x01
#define BPF_ST     0x02
#define BPF_STX    0x03
#define BPF_ALU    0x04
#define BPF_JMP    0x05
#define BPF_JMP32  0x06
#define BPF_ALU64  0x07
#define BPF_SIZE(c)   ((c) & 0x18)
#define BPF_W      0x00
#define BPF_H      0x08
#define BPF_B      0x10
#define BPF_DW     0x18
#define BPF_MODE(c)   ((c) & 0xe0)
#define BPF_IMM    0x00
#define BPF_MEM    0x60
#define BPF_MEMSX  0x80
#define BPF_ATOMIC 0xc0
#define BPF_OP(c)     ((c) & 0xf0)
#define BPF_SRC(c)    ((c) & 0x08)
#define BPF_K      0x00
#define BPF_X      0x08
/* ALU operations */
#define BPF_ADD 0x00
#define BPF_SUB 0x10
#define BPF_MUL 0x20
#define BPF_DIV 0x30
#define BPF_OR  0x40
#define BPF_AND 0x50
#define BPF_LSH 0x60
#define BPF_RSH 0x70
#define BPF_NEG 0x80
#define BPF_MOD 0x90
#define BPF_XOR 0xa0
#define BPF_MOV 0xb0
#define BPF_ARSH 0xc0
#define BPF_END 0xd0
/* jumps */
#define BPF_JA   0x00
#define BPF_JEQ  0x10
#define BPF_JGT  0x20
#define BPF_JGE  0x30
#define BPF_JSET 0x40
#define BPF_JNE  0x50
#define BPF_JSGT 0x60
#define BPF_JSGE 0x70
#define BPF_CALL 0x80
#define BPF_EXIT 0x90
#define BPF_JLT  0xa0
#define BPF_JLE  0xb0
#define BPF_JSLT 0xc0
#define BPF_JSLE 0xd0
#define BPF_PSEUDO_CALL 1
#define BPF_LD_IMM64 (BPF_LD | BPF_IMM | BPF_DW)    /* 0x18: two slots */
#define BPF_NREGS 11                                /* r0..r9, r10 the frame pointer */
#define BPF_FP    10

struct bpf_insn {
	uint8_t code, dst, src;
	int16_t off;
	int32_t imm;
};

/* Decode slot i of a code section (8 bytes each). */
void bpf_decode(const uint8_t *p, struct bpf_insn *in);
/* One instruction as the kernel's verifier log prints it ("r1 += r2", "if w1 > 5 goto +3").
 * next is the following slot for LD_IMM64 (may be NULL). */
void bpf_format(struct buf *out, const struct bpf_insn *in, const struct bpf_insn *next);

/* ---- the object ---- */
enum sec_kind {
	SEC_OTHER,       /* debug info, BTF, symbol tables: not part of the program */
	SEC_CODE,        /* executable: BPF instructions */
	SEC_RODATA,      /* allocated, read-only: becomes segment constants */
	SEC_WRITABLE,    /* .data, .bss: globals written at run time, refused when referenced */
	SEC_AR,          /* .ar.regions, .ar.hooks, .ar.args: ar.h's lists */
};

struct reloc {
	uint32_t slot;             /* instruction slot (r_offset / 8) in its code section */
	uint32_t sym;              /* index into obj.syms */
};

struct section {
	char *name;
	enum sec_kind kind;
	const uint8_t *data;       /* code and constants (NULL for NOBITS and other kinds) */
	int owned;                 /* data is ours to free */
	uint64_t size, align;
	int64_t const_off;         /* SEC_RODATA: offset of its bytes in the segment's constants */
	struct reloc *relocs;      /* SEC_CODE: sorted by slot */
	uint32_t n_relocs;
	struct line *lines;        /* SEC_CODE: from .BTF.ext, sorted by slot */
	uint32_t n_lines;
};

struct symbol {
	char *name;
	uint32_t sec;              /* index into obj.secs, or UINT32_MAX (undefined, absolute) */
	uint64_t value, size;
	uint8_t type, bind;        /* STT_*, STB_* */
};

struct line {
	uint32_t slot;
	uint32_t line, col;
	const char *file;          /* strings of .BTF (the object's copy) */
	const char *text;          /* the source line itself */
};

struct func {
	char *name;
	uint32_t sec, start, end;  /* slots [start, end) of code section sec */
	int n_args;                /* the segment function's arguments: n_params, or more when
	                              AR_EXPORT_ARGS says so */
	int n_params;              /* from BTF: the parameters of its FUNC_PROTO (r1..r5) */
	int exported;              /* global binding */
	int index;                 /* function index in the segment */
};

struct diag {
	struct buf text;
	int n_errors;
};
#define CC_MAX_ERRORS 20

struct obj {
	const char *name;          /* object file name for messages without a line */
	struct section *secs;
	uint32_t n_secs;
	struct symbol *syms;
	uint32_t n_syms;
	struct func *funcs;        /* sorted by (sec, start) */
	uint32_t n_funcs;
	const char *main_file;     /* the C file most line records name, NULL without lines */
	char *regions;             /* .ar.regions contents (NUL-separated "name:access") */
	size_t regions_len;
	char *hooks;               /* .ar.hooks contents (NUL-separated "name:sig") */
	size_t hooks_len;
	char *args;                /* .ar.args contents (NUL-separated "function:count") */
	size_t args_len;
	uint8_t *btf;              /* copy of .BTF (strings for lines point into it) */
	size_t btf_len;
};

#define CC_MAX_SLOTS (1u << 20)     /* instruction slots per code section */

/* Read the object into o; returns 0, or -1 after adding an error to d. */
int obj_read(struct obj *o, const void *buf, size_t len, const char *name, struct diag *d);
void obj_free(struct obj *o);

/* The line record covering slot of code section sec (the last one at or before it), or NULL. */
const struct line *obj_line(const struct obj *o, uint32_t sec, uint32_t slot);

/* Add "file.c:LINE: error: ..." for slot of section sec (or "file.o: func+N: error: ..." when
 * the object has no line there; sec UINT32_MAX: the object as a whole).  Returns -1. */
int cc_error(struct diag *d, const struct obj *o, uint32_t sec, uint32_t slot,
             const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Translate o into *seg (translate.c); returns the number of errors. */
int cc_translate(const struct obj *o, const char *explain, uint8_t **seg, size_t *seg_len,
                 struct diag *d, struct buf *listing);

#endif
