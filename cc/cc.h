/* cc.h: pncc, C segments through clang's BPF back end.
 *
 * clang compiles restricted C to a BPF ELF object (`clang -O2 -g -target bpf -c x.c`); this
 * library translates that object into a code segment (isa.h) through the builder API of asm/,
 * so the verifier and both engines see nothing new.  BPF registers and the stack slots a
 * function uses become locals; calls of the ar.h intrinsics (cc/activerdma/ar.h) become our
 * opcodes one to one.  Anything without a safe meaning here is refused with the C line it came
 * from.  The supported subset and every error are described in docs/cc.md.
 *
 * Depends on isa/, asm/ and libelf.
 */
#ifndef CC_H
#define CC_H

#include <stddef.h>
#include <stdint.h>

struct cc_opts {
	const char *explain;        /* function whose side-by-side listing to make, or NULL */
};

/* Translate the BPF object obj[0..len) (name: the file name used in diagnostics when the
 * object has no line information).  Returns the number of errors: 0 and a malloc'd segment in
 * *seg / *seg_len, or > 0 with *seg NULL.  Diagnostics ("file.c:12: error: ...", one per line;
 * "file.o: f+3: error: ..." where the object has no line for the instruction) come back in
 * *diags, the listing asked for by opts->explain in *explain; both malloc'd or NULL, freed by
 * the caller.  obj is only read; any bytes are safe to pass.  Thread-safe. */
int cc_compile(const void *obj, size_t len, const char *name, const struct cc_opts *opts,
               uint8_t **seg, size_t *seg_len, char **diags, char **explain);

/* The helper number an ar.h intrinsic call carries: AR_CALL_TAG | op | a << 8 | b << 16
 * (a, b: region indices, a hook index in a | b << 8, or a trap code in the same 16 bits). */
#define CC_CALL_TAG   0x40000000
#define CC_CALL_MASK  0x7f000000

#endif
