/* asm.h: text assembly (pnasm), disassembly (pndis) and a C builder API for code segments.
 *
 * Depends on isa/ only.  The assembly language is described in docs/asm.md; in short:
 *
 *     ; comment
 *     .region mem rw             ; import region 'mem' (ro|rw), addressed as 'mem'
 *     .hook now ":l"             ; import host hook 'now' with signature ":l"
 *     .const msg "hi\n"          ; constant data; @msg is its offset, #msg its length
 *     .func fnv p n              ; function fnv with arguments p, n (locals 0 and 1)
 *     .local i h                 ; more locals
 *     loop:                      ; label, local to the function
 *         lget i                 ; locals by name or number
 *         ld8u mem               ; regions: args, out, const, or an imported name
 *         jltu loop              ; branches to labels
 *         push @msg              ; push picks pushi8/pushi32/pushi64
 *         ret
 *     .end
 *     .export fnv                ; export a function (".export name func" to rename)
 */
#ifndef ASM_H
#define ASM_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"

/* Assemble src (len bytes; file names diagnostics).  Returns the number of errors: 0 and a
 * malloc'd segment in *seg / *seg_len, or > 0 with *seg NULL.  Diagnostics (errors and notes,
 * one per line, "file:line:col: error: ...") are returned in *diags as a malloc'd string, or
 * NULL when there are none; the caller frees both.  Several errors are reported per call. */
int asm_assemble(const char *src, size_t len, const char *file, uint8_t **seg, size_t *seg_len,
                 char **diags);

/* Write a segment to out, or, when out is NULL, to in's name with its extension replaced by
 * ".pno" ("-": standard output); a failed write leaves no file.  0, or -1 with a message. */
int asm_write_segment(const char *in, const char *out, const void *seg, size_t len, char *err,
                      size_t errlen);
/* Disassemble segment bytes into assembly text that asm_assemble turns back into the same
 * bytes.  Returns 0 and a malloc'd string in *text, or -1 with a message in err. */
int asm_disassemble(const void *seg, size_t len, char **text, char *err, size_t errlen);

/* ---- builder: generate segments at run time ----
 * Calls record instructions into the current function; errors are sticky and reported once
 * by asm_builder_finish (every call is safe after an error).  Branch targets are labels made
 * by asm_label_new and placed by asm_label_bind; max_stack of each function is computed. */
struct asm_builder;
typedef uint32_t asm_label;

struct asm_builder *asm_builder_new(void);
void asm_builder_free(struct asm_builder *b);

int asm_region(struct asm_builder *b, const char *name, unsigned access); /* -> region index */
int asm_hook(struct asm_builder *b, const char *name, const char *sig);   /* -> hook index */
uint32_t asm_const(struct asm_builder *b, const void *data, size_t len, unsigned align); /* -> offset */

int asm_func_begin(struct asm_builder *b, const char *name, unsigned n_args, unsigned n_locals);
void asm_func_end(struct asm_builder *b);
int asm_export(struct asm_builder *b, const char *name, int func);

asm_label asm_label_new(struct asm_builder *b);
void asm_label_bind(struct asm_builder *b, asm_label l);

void asm_op(struct asm_builder *b, enum op op);                  /* no immediate */
void asm_push(struct asm_builder *b, int64_t value);             /* shortest push */
void asm_local(struct asm_builder *b, enum op op, unsigned local); /* lget lset ltee */
void asm_linc(struct asm_builder *b, unsigned local, int delta);
void asm_mem(struct asm_builder *b, enum op op, unsigned region); /* R format */
void asm_mem2(struct asm_builder *b, enum op op, unsigned r1, unsigned r2); /* RR format */
void asm_jump(struct asm_builder *b, enum op op, asm_label target); /* REL32 format */
void asm_call(struct asm_builder *b, int func);
void asm_hcall(struct asm_builder *b, int hook);
void asm_trap(struct asm_builder *b, unsigned code);
void asm_line(struct asm_builder *b, uint32_t line);             /* line of what follows */
void asm_source(struct asm_builder *b, const char *name);        /* file the lines are of */

/* Encode the segment.  Returns 0 and a malloc'd buffer, or -1 with the first error in err. */
int asm_builder_finish(struct asm_builder *b, uint8_t **seg, size_t *seg_len, char *err,
                       size_t errlen);

#endif
