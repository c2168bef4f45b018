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

static inline int vm_op_finds(struct run *run, uint64_t *v, unsigned r1, unsigned r2)
{
	uint64_t off = v[0], n = v[1], noff = v[2], nn = v[3];
	const struct mref *h = &run->R[r1], *nd = &run->R[r2];
	if (!in_bounds(off, n, h->len) || !in_bounds(noff, nn, nd->len))
		return ISA_TRAP_BOUNDS;
	if (nn == 0) {
		v[0] = off;
	} else {
		const uint8_t *p = n ? memmem(h->base + off, n, nd->base + noff, nn) : NULL;
		v[0] = p ? (uint64_t)(p - h->base) : UINT64_MAX;
	}
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
