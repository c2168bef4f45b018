/* remote.c: regions whose bytes live on another machine (vm_bind_remote_region).
 *
 * A remote region appears in the run's region table with length 0, so every access to it
 * misses the interpreter's bounds check and lands here, at no cost to local accesses.  Here
 * the access is checked against the region's true length (giving exactly the trap a local
 * access would give, in the same order) and then served: loads from a small direct-mapped
 * cache of VM_REMOTE_BLOCK-byte blocks filled by the read callback, stores written through
 * (and into the cache), atomics delegated to the owner whole, bulk operations on a fetched
 * copy of their range.  This is how libarc runs a segment "locally", the plain-RDMA way, so
 * that the same segment can be measured in both places with identical results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_common.h"

#define CACHE_SETS 64

struct remote_cache {
	struct {
		uint64_t block;            /* offset / VM_REMOTE_BLOCK */
		unsigned region;
		unsigned len;              /* bytes valid (a region's last block may be short) */
		int valid;
		uint8_t data[VM_REMOTE_BLOCK];
	} e[CACHE_SETS];
};

static const struct remote_ref *remote_of(const struct run *run, unsigned r)
{
	return run->remote && run->remote[r].ops ? &run->remote[r] : NULL;
}

static int fail(struct run *run, const char *what, const struct remote_ref *rr, const char *err)
{
	/* the message is cut to what the trap record holds */
	int n = snprintf(run->trap->msg, sizeof run->trap->msg, "%s of region %.60s: ", what, rr->name);
	if (n > 0 && (size_t)n < sizeof run->trap->msg)
		snprintf(run->trap->msg + n, sizeof run->trap->msg - (size_t)n, "%.*s",
		         (int)(sizeof run->trap->msg - (size_t)n - 1), err);
	return ISA_TRAP_REMOTE;
}

void vm_remote_cache_free(struct run *run)
{
	free(run->cache);
	run->cache = NULL;
}

static unsigned set_of(unsigned r, uint64_t block)
{
	return (unsigned)((block ^ (block >> 7) ^ (uint64_t)r * 0x9e37u) % CACHE_SETS);
}

/* Copy [off, off+n) of remote region r (in bounds) into dst through the cache. */
static int cached_read(struct run *run, unsigned r, uint64_t off, uint8_t *dst, uint64_t n)
{
	const struct remote_ref *rr = &run->remote[r];
	if (!run->cache && !(run->cache = calloc(1, sizeof *run->cache)))
		return fail(run, "read", rr, "out of memory for the read cache");
	while (n > 0) {
		uint64_t block = off / VM_REMOTE_BLOCK, in = off % VM_REMOTE_BLOCK;
		unsigned s = set_of(r, block);
		__typeof__(run->cache->e[0]) *e = &run->cache->e[s];
		if (!e->valid || e->region != r || e->block != block) {
			uint64_t start = block * VM_REMOTE_BLOCK;
			uint64_t len = rr->len - start < VM_REMOTE_BLOCK ? rr->len - start : VM_REMOTE_BLOCK;
			char err[VM_HOOK_MSG_LEN];
			e->valid = 0;
			if (rr->ops->read(rr->user, rr->name, start, e->data, len, err, sizeof err) != 0)
				return fail(run, "read", rr, err);
			e->valid = 1;
			e->region = r;
			e->block = block;
			e->len = (unsigned)len;
		}
		uint64_t k = e->len - in < n ? e->len - in : n;
		memcpy(dst, e->data + in, k);
		dst += k;
		off += k;
		n -= k;
	}
	return 0;
}

/* Write [off, off+n) of remote region r (in bounds) through to the owner and the cache. */
static int write_through(struct run *run, unsigned r, uint64_t off, const uint8_t *src, uint64_t n)
{
	const struct remote_ref *rr = &run->remote[r];
	char err[VM_HOOK_MSG_LEN];
	if (n && rr->ops->write(rr->user, rr->name, off, src, n, err, sizeof err) != 0)
		return fail(run, "write", rr, err);
	if (!run->cache)
		return 0;
	for (unsigned s = 0; s < CACHE_SETS; s++) {
		__typeof__(run->cache->e[0]) *e = &run->cache->e[s];
		if (!e->valid || e->region != r)
			continue;
		uint64_t start = e->block * VM_REMOTE_BLOCK, end = start + e->len;
		uint64_t lo = off > start ? off : start, hi = off + n < end ? off + n : end;
		if (lo < hi)
			memcpy(e->data + (lo - start), src + (lo - off), hi - lo);
	}
	return 0;
}

int vm_remote_load(struct run *run, unsigned r, uint64_t off, void *dst, unsigned width)
{
	const struct remote_ref *rr = remote_of(run, r);
	if (!rr || !in_bounds(off, width, rr->len))
		return ISA_TRAP_BOUNDS;
	return cached_read(run, r, off, dst, width);
}

int vm_remote_store(struct run *run, unsigned r, uint64_t off, const void *src, unsigned width)
{
	const struct remote_ref *rr = remote_of(run, r);
	if (!rr || !in_bounds(off, width, rr->len))
		return ISA_TRAP_BOUNDS;
	return write_through(run, r, off, src, width);
}

/* findb/finds/findsi/findset over a remote range fetch a window at a time: the first one small (and
 * through the block cache), each next one twice as large up to REMOTE_SCAN_WINDOW.  A match
 * near the start, as in grep's skip to the next line with the literal (one search per line),
 * then costs a few blocks, not a 1 MiB read. */
#define REMOTE_SCAN_FIRST  (2u * VM_REMOTE_BLOCK)   /* with a needle, still cached by view() */
#define REMOTE_SCAN_WINDOW (1u << 20)

/* The true length of region r, remote or not. */
static uint64_t len_of(const struct run *run, unsigned r)
{
	const struct remote_ref *rr = remote_of(run, r);
	return rr ? rr->len : run->R[r].len;
}

/* Bytes [off, off+n) of region r, already checked to be in bounds: local memory, or a copy
 * fetched into *tmp (freed by the caller). */
static int view(struct run *run, unsigned r, uint64_t off, uint64_t n, const uint8_t **p,
                uint8_t **tmp)
{
	*tmp = NULL;
	const struct remote_ref *rr = remote_of(run, r);
	if (!rr) {
		*p = run->R[r].base + off;
		return 0;
	}
	if (n > VM_REMOTE_MAX_BULK)
		return fail(run, "bulk access", rr, "range larger than VM_REMOTE_MAX_BULK");
	if (!(*tmp = malloc(n ? n : 1)))
		return fail(run, "bulk access", rr, "out of memory");
	*p = *tmp;
	if (n <= 4 * VM_REMOTE_BLOCK)
		return n ? cached_read(run, r, off, *tmp, n) : 0;
	/* a long range is one read, not one per block (stores are written through, so the
	 * owner's bytes are current) */
	char err[VM_HOOK_MSG_LEN];
	if (rr->ops->read(rr->user, rr->name, off, *tmp, n, err, sizeof err) != 0)
		return fail(run, "read", rr, err);
	return 0;
}

/* A destination range for COPY/FILL: the output, local memory, or remote (written after). */
static int dest_check(struct run *run, unsigned r, uint64_t off, uint64_t n)
{
	if (r == ISA_R_OUT)
		return in_bounds(off, n, run->out_cap) ? 0 : ISA_TRAP_OUTPUT_FULL;
	return in_bounds(off, n, len_of(run, r)) ? 0 : ISA_TRAP_BOUNDS;
}

static int dest_write(struct run *run, unsigned r, uint64_t off, const uint8_t *src, uint64_t n,
                      int fill_byte)
{
	if (r == ISA_R_OUT)
		out_extend(run->R, off, n);
	if (!remote_of(run, r)) {
		if (n && fill_byte >= 0)
			memset(run->R[r].base + off, fill_byte, n);
		else if (n)
			memmove(run->R[r].base + off, src, n);
		return 0;
	}
	uint8_t *tmp = NULL;
	if (fill_byte >= 0) {
		if (n > VM_REMOTE_MAX_BULK)
			return fail(run, "fill", remote_of(run, r), "range larger than VM_REMOTE_MAX_BULK");
		if (!(tmp = malloc(n ? n : 1)))
			return fail(run, "fill", remote_of(run, r), "out of memory");
		memset(tmp, fill_byte, n);
		src = tmp;
	}
	int k = write_through(run, r, off, src, n);
	free(tmp);
	return k;
}

static int remote_atomic(struct run *run, int op, uint64_t *v, unsigned r)
{
	const struct remote_ref *rr = remote_of(run, r);
	uint64_t off = v[0];
	if (!in_bounds(off, 8, rr->len))
		return ISA_TRAP_BOUNDS;
	if (off & 7)
		return ISA_TRAP_UNALIGNED;
	char err[VM_HOOK_MSG_LEN];
	uint64_t old;
	if (rr->ops->atomic(rr->user, rr->name, op, off, v[1], op == OP_CAS ? v[2] : 0, &old, err,
	                    sizeof err) != 0)
		return fail(run, op == OP_CAS ? "cas" : "fadd", rr, err);
	/* the word changed at the owner: forget the cached copy of its block */
	if (run->cache) {
		__typeof__(run->cache->e[0]) *e = &run->cache->e[set_of(r, off / VM_REMOTE_BLOCK)];
		if (e->valid && e->region == r && e->block == off / VM_REMOTE_BLOCK)
			e->valid = 0;
	}
	v[0] = old;
	return 0;
}

int vm_remote_op(struct run *run, int xop, uint64_t *v, unsigned r1, unsigned r2)
{
	/* Programs with remote regions send every bulk operation here; the ones not touching a
	 * remote region take the ordinary path. */
	int one = remote_of(run, r1) != NULL;
	int two = (xop == X_COPY || xop == X_CMP || xop == X_FINDS || xop == X_FINDSI ||
	           xop == X_FINDSET) &&
	          remote_of(run, r2) != NULL;
	if (!one && !two) {
		switch (xop) {
		case X_CAS:    return vm_op_cas(run, v, r1);
		case X_FADD:   return vm_op_fadd(run, v, r1);
		case X_COPY:   return vm_op_copy(run, v, r1, r2);
		case X_FILL:   return vm_op_fill(run, v, r1);
		case X_CMP:    return vm_op_cmp(run, v, r1, r2);
		case X_FINDB:  return vm_op_findb(run, v, r1);
		case X_FINDS:  return vm_op_finds(run, v, r1, r2);
		case X_FINDSI: return vm_op_findsi(run, v, r1, r2);
		case X_FINDSET: return vm_op_findset(run, v, r1, r2);
		case X_OUTPUT: return vm_op_output(run, v, r1);
		default:       return ISA_TRAP_BOUNDS;
		}
	}
	const uint8_t *p1, *p2;
	uint8_t *t1 = NULL, *t2 = NULL;
	int k = 0;
	switch (xop) {
	case X_CAS:
		return remote_atomic(run, OP_CAS, v, r1);
	case X_FADD:
		return remote_atomic(run, OP_FADD, v, r1);
	case X_COPY: {                     /* same order of checks as vm_op_copy */
		uint64_t doff = v[0], soff = v[1], n = v[2];
		if (!in_bounds(soff, n, len_of(run, r2)))
			return ISA_TRAP_BOUNDS;
		if ((k = dest_check(run, r1, doff, n)) != 0)
			return k;
		if ((k = view(run, r2, soff, n, &p1, &t1)) == 0)
			k = dest_write(run, r1, doff, p1, n, -1);
		break;
	}
	case X_FILL: {
		uint64_t off = v[0], n = v[1];
		if ((k = dest_check(run, r1, off, n)) != 0)
			return k;
		k = dest_write(run, r1, off, NULL, n, (uint8_t)v[2]);
		break;
	}
	case X_CMP: {
		uint64_t o1 = v[0], o2 = v[1], n = v[2];
		if (!in_bounds(o1, n, len_of(run, r1)) || !in_bounds(o2, n, len_of(run, r2)))
			return ISA_TRAP_BOUNDS;
		if ((k = view(run, r1, o1, n, &p1, &t1)) == 0 && (k = view(run, r2, o2, n, &p2, &t2)) == 0) {
			int c = n ? memcmp(p1, p2, n) : 0;
			v[0] = (uint64_t)(int64_t)((c > 0) - (c < 0));
		}
		break;
	}
	case X_FINDB: {
		/* searched window by window: a remote range is fetched only up to the match (a rare
		 * byte early in a long range costs one window, not the range), and a range of any
		 * length stays within VM_REMOTE_MAX_BULK of memory */
		uint64_t off = v[0], n = v[1];
		if (!in_bounds(off, n, len_of(run, r1)))
			return ISA_TRAP_BOUNDS;
		v[0] = UINT64_MAX;
		for (uint64_t pos = off, w = REMOTE_SCAN_FIRST; pos < off + n && k == 0;
		     pos += w, w = w < REMOTE_SCAN_WINDOW ? 2 * w : w) {
			uint64_t m = off + n - pos < w ? off + n - pos : w;
			free(t1);
			if ((k = view(run, r1, pos, m, &p1, &t1)) != 0)
				break;
			const uint8_t *q = memchr(p1, (int)(uint8_t)v[2], m);
			if (q) {
				v[0] = pos + (uint64_t)(q - p1);
				break;
			}
		}
		break;
	}
	case X_FINDS:
	case X_FINDSI:
	case X_FINDSET: {
		uint64_t off = v[0], n = v[1], noff = v[2], nn = v[3];
		if (!in_bounds(off, n, len_of(run, r1)) || !in_bounds(noff, nn, len_of(run, r2)) ||
		    (xop == X_FINDSET && !findset_shape_ok(nn)))
			return ISA_TRAP_BOUNDS;
		if (nn == 0) {
			v[0] = off;
			break;
		}
		/* hl: the bytes of the haystack a match spans (findset: one per set) */
		uint64_t hl = xop == X_FINDSET ? nn / FINDSET_SET : nn;
		/* window by window as findb, each window overlapping the next by hl - 1 bytes so
		 * that a match across the seam is found */
		if ((k = view(run, r2, noff, nn, &p2, &t2)) != 0)
			break;
		v[0] = UINT64_MAX;
		for (uint64_t pos = off, w = REMOTE_SCAN_FIRST; pos < off + n && k == 0;
		     pos += w, w = w < REMOTE_SCAN_WINDOW ? 2 * w : w) {
			uint64_t m = off + n - pos;
			if (m > w + hl - 1)
				m = w + hl - 1;
			if (m < hl)
				break;
			free(t1);
			if ((k = view(run, r1, pos, m, &p1, &t1)) != 0)
				break;
			const uint8_t *q = xop == X_FINDS ? memmem(p1, m, p2, nn) :
			                   xop == X_FINDSI ? find_stri(p1, m, p2, nn) :
			                   find_sets(p1, m, p2, hl);
			if (q) {
				v[0] = pos + (uint64_t)(q - p1);
				break;
			}
			if (pos + m >= off + n)
				break;
		}
		break;
	}
	case X_OUTPUT: {
		uint64_t off = v[0], n = v[1];
		if (!in_bounds(off, n, len_of(run, r1)))
			return ISA_TRAP_BOUNDS;
		struct mref *o = &run->R[ISA_R_OUT];
		uint64_t at = o->len;
		if (!in_bounds(at, n, run->out_cap))
			return ISA_TRAP_OUTPUT_FULL;
		if ((k = view(run, r1, off, n, &p1, &t1)) == 0) {
			if (n)
				memcpy(o->base + at, p1, n);
			o->len = at + n;
		}
		break;
	}
	default:
		k = ISA_TRAP_BOUNDS;
	}
	free(t1);
	free(t2);
	return k;
}
