/* ref_interp.c: a deliberately naive reference interpreter of the ISA, for differential tests.
 *
 * It runs the bytecode as written, one decoded instruction at a time, with an explicit operand
 * stack and a switch: nothing is translated, fused or cached.  It shares only isa/ with the
 * VM, so a disagreement points at the VM's translator or interpreter (or at this file, which is
 * short enough to check against docs/isa.md by eye).  Frame and fuel accounting follow the
 * rules in vm.h exactly, so traps must agree too, down to the pc.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ref_interp.h"

struct rframe {
	uint32_t func, pc;             /* pc of the call instruction, in the caller */
	uint64_t base;                 /* slot index where this frame starts */
	uint64_t *locals;
	uint64_t *stack;
	unsigned sp;
};

static int in_bounds(uint64_t off, uint64_t n, uint64_t len) { return off <= len && n <= len - off; }

int ref_run(const struct isa_seg *seg, const struct ref_region *regions, uint32_t entry,
            const int64_t *argv, const struct vm_run_opts *opts, struct vm_result *res)
{
	memset(res, 0, sizeof *res);
	struct ref_region R[ISA_R_FIRST_IMPORT + ISA_MAX_REGIONS];
	R[ISA_R_ARGS] = (struct ref_region){ (uint8_t *)(uintptr_t)opts->args, opts->args_len };
	R[ISA_R_OUT] = (struct ref_region){ opts->out, 0 };
	R[ISA_R_CONST] = (struct ref_region){ seg->consts, seg->const_len };
	for (uint32_t i = 0; i < seg->n_regions; i++)
		R[ISA_R_FIRST_IMPORT + i] = regions[i];
	uint64_t fuel = opts->fuel ? opts->fuel : VM_DEFAULT_FUEL;
	const uint64_t fuel0 = fuel;

	struct rframe *frames = calloc(VM_MAX_CALL_DEPTH + 1, sizeof *frames);
	int depth = 0;
	int kind = ISA_TRAP_NONE;
	struct rframe *f = &frames[0];
	const struct isa_func *fn = &seg->funcs[entry];
	f->func = entry;
	f->pc = 0;
	f->base = 0;
	if ((uint64_t)fn->n_locals + fn->max_stack > VM_STACK_SLOTS) {
		kind = ISA_TRAP_STACK;
		goto trap;
	}
	f->locals = calloc(fn->n_locals + 1u, sizeof(uint64_t));
	f->stack = calloc(fn->max_stack + 1u, sizeof(uint64_t));
	for (unsigned i = 0; i < fn->n_args; i++)
		f->locals[i] = (uint64_t)argv[i];

	for (;;) {
		fn = &seg->funcs[f->func];
		struct isa_insn in;
		if (isa_decode(fn->code, fn->code_len, f->pc, &in) != 0)
			abort();           /* verified code always decodes */
		uint64_t *s = f->stack;
		unsigned sp = f->sp;
		uint64_t next = f->pc + in.len;
		uint64_t x, y;
#define POP()   (s[--sp])
#define PUSH(v) (s[sp++] = (v))
#define TRAPK(k) do { kind = (k); goto trap; } while (0)
#define TAKE(cond) do { if (cond) { \
		if (in.imm <= 0) { if (fuel == 0) TRAPK(ISA_TRAP_FUEL); fuel--; } \
		next = (uint64_t)((int64_t)f->pc + in.imm); } } while (0)
		switch ((enum op)in.op) {
		case OP_NOP: break;
		case OP_PUSHI8: case OP_PUSHI32: case OP_PUSHI64: PUSH((uint64_t)in.imm); break;
		case OP_DROP: sp--; break;
		case OP_DUP: x = s[sp - 1]; PUSH(x); break;
		case OP_SWAP: x = s[sp - 1]; s[sp - 1] = s[sp - 2]; s[sp - 2] = x; break;
		case OP_OVER: x = s[sp - 2]; PUSH(x); break;
		case OP_ROT: x = s[sp - 3]; s[sp - 3] = s[sp - 2]; s[sp - 2] = s[sp - 1]; s[sp - 1] = x; break;
		case OP_LGET: PUSH(f->locals[in.a]); break;
		case OP_LSET: f->locals[in.a] = POP(); break;
		case OP_LTEE: f->locals[in.a] = s[sp - 1]; break;
		case OP_LINC: f->locals[in.a] += (uint64_t)in.imm; break;
#define BIN(o, e) case OP_##o: y = POP(); x = POP(); PUSH(e); break;
		BIN(ADD, x + y) BIN(SUB, x - y) BIN(MUL, x * y) BIN(AND, x & y) BIN(OR, x | y)
		BIN(XOR, x ^ y) BIN(SHL, x << (y & 63)) BIN(SHRU, x >> (y & 63))
		BIN(SHRS, (uint64_t)((int64_t)x >> (y & 63)))
		BIN(ROTL, (y & 63) ? (x << (y & 63)) | (x >> (64 - (y & 63))) : x)
		BIN(ROTR, (y & 63) ? (x >> (y & 63)) | (x << (64 - (y & 63))) : x)
		BIN(EQ, x == y) BIN(NE, x != y) BIN(LTS, (int64_t)x < (int64_t)y) BIN(LTU, x < y)
		BIN(LES, (int64_t)x <= (int64_t)y) BIN(LEU, x <= y) BIN(GTS, (int64_t)x > (int64_t)y)
		BIN(GTU, x > y) BIN(GES, (int64_t)x >= (int64_t)y) BIN(GEU, x >= y)
#undef BIN
		case OP_DIVS: case OP_REMS:
			y = POP(); x = POP();
			if (y == 0) TRAPK(ISA_TRAP_DIV_ZERO);
			if ((int64_t)y == -1) {
				if (in.op == OP_DIVS && (int64_t)x == INT64_MIN) TRAPK(ISA_TRAP_DIV_OVERFLOW);
				PUSH(in.op == OP_DIVS ? 0 - x : 0);
			} else {
				PUSH(in.op == OP_DIVS ? (uint64_t)((int64_t)x / (int64_t)y)
				                      : (uint64_t)((int64_t)x % (int64_t)y));
			}
			break;
		case OP_DIVU: case OP_REMU:
			y = POP(); x = POP();
			if (y == 0) TRAPK(ISA_TRAP_DIV_ZERO);
			PUSH(in.op == OP_DIVU ? x / y : x % y);
			break;
		case OP_NEG: x = POP(); PUSH(0 - x); break;
		case OP_NOT: x = POP(); PUSH(~x); break;
		case OP_CLZ: x = POP(); { uint64_t n = 0; while (n < 64 && !(x & (1ull << (63 - n)))) n++; PUSH(n); } break;
		case OP_CTZ: x = POP(); { uint64_t n = 0; while (n < 64 && !(x & (1ull << n))) n++; PUSH(n); } break;
		case OP_POPCNT: x = POP(); { uint64_t n = 0; for (int i = 0; i < 64; i++) n += (x >> i) & 1; PUSH(n); } break;
		case OP_SEXT8: x = POP(); PUSH((uint64_t)(int64_t)(int8_t)x); break;
		case OP_SEXT16: x = POP(); PUSH((uint64_t)(int64_t)(int16_t)x); break;
		case OP_SEXT32: x = POP(); PUSH((uint64_t)(int64_t)(int32_t)x); break;
		case OP_EQZ: x = POP(); PUSH(x == 0); break;
		case OP_SELECT: { uint64_t c = POP(); y = POP(); x = POP(); PUSH(c ? x : y); break; }
		case OP_JMP: TAKE(1); break;
		case OP_JZ: x = POP(); TAKE(x == 0); break;
		case OP_JNZ: x = POP(); TAKE(x != 0); break;
#define JCC(o, e) case OP_##o: y = POP(); x = POP(); TAKE(e); break;
		JCC(JEQ, x == y) JCC(JNE, x != y) JCC(JLTS, (int64_t)x < (int64_t)y) JCC(JLTU, x < y)
		JCC(JLES, (int64_t)x <= (int64_t)y) JCC(JLEU, x <= y) JCC(JGTS, (int64_t)x > (int64_t)y)
		JCC(JGTU, x > y) JCC(JGES, (int64_t)x >= (int64_t)y) JCC(JGEU, x >= y)
#undef JCC
		case OP_CALL: {
			const struct isa_func *callee = &seg->funcs[in.imm];
			if (fuel == 0) TRAPK(ISA_TRAP_FUEL);
			fuel--;
			uint64_t nbase = f->base + fn->n_locals + (sp - callee->n_args);
			if (depth == VM_MAX_CALL_DEPTH ||
			    nbase + callee->n_locals + callee->max_stack > VM_STACK_SLOTS)
				TRAPK(ISA_TRAP_STACK);
			f->sp = sp - callee->n_args;
			struct rframe *nf = &frames[++depth];
			nf->func = (uint32_t)in.imm;
			nf->pc = 0;
			nf->base = nbase;
			nf->sp = 0;
			nf->locals = calloc(callee->n_locals + 1u, sizeof(uint64_t));
			nf->stack = calloc(callee->max_stack + 1u, sizeof(uint64_t));
			memcpy(nf->locals, s + f->sp, callee->n_args * sizeof(uint64_t));
			f = nf;
			continue;
		}
		case OP_HCALL:
			abort();           /* the generator imports no hooks */
		case OP_RET: {
			x = POP();
			free(f->locals);
			free(f->stack);
			if (depth == 0) {
				res->value = (int64_t)x;
				goto done;
			}
			f = &frames[--depth];
			f->stack[f->sp++] = x;
			f->pc += 1u + isa_fmt_len[ISA_FMT_FUNC];   /* step over the call */
			continue;
		}
		case OP_TRAP: res->trap.code = (uint32_t)in.imm; TRAPK(ISA_TRAP_USER);
		case OP_LD8U: case OP_LD8S: case OP_LD16U: case OP_LD16S: case OP_LD32U:
		case OP_LD32S: case OP_LD64: {
			static const unsigned w[] = { 1, 1, 2, 2, 4, 4, 8 };
			unsigned n = w[in.op - OP_LD8U];
			uint64_t off = POP();
			if (!in_bounds(off, n, R[in.a].len)) TRAPK(ISA_TRAP_BOUNDS);
			uint64_t v = 0;
			for (unsigned i = 0; i < n; i++)
				v |= (uint64_t)R[in.a].base[off + i] << (8 * i);
			if (in.op == OP_LD8S) v = (uint64_t)(int64_t)(int8_t)v;
			if (in.op == OP_LD16S) v = (uint64_t)(int64_t)(int16_t)v;
			if (in.op == OP_LD32S) v = (uint64_t)(int64_t)(int32_t)v;
			PUSH(v);
			break;
		}
		case OP_ST8: case OP_ST16: case OP_ST32: case OP_ST64: {
			static const unsigned w[] = { 1, 2, 4, 8 };
			unsigned n = w[in.op - OP_ST8];
			uint64_t v = POP(), off = POP();
			if (in.a == ISA_R_OUT) {
				if (!in_bounds(off, n, opts->out_cap)) TRAPK(ISA_TRAP_OUTPUT_FULL);
				while (R[ISA_R_OUT].len < off) R[ISA_R_OUT].base[R[ISA_R_OUT].len++] = 0;
				if (R[ISA_R_OUT].len < off + n) R[ISA_R_OUT].len = off + n;
			} else if (!in_bounds(off, n, R[in.a].len)) {
				TRAPK(ISA_TRAP_BOUNDS);
			}
			for (unsigned i = 0; i < n; i++)
				R[in.a].base[off + i] = (uint8_t)(v >> (8 * i));
			break;
		}
		case OP_RLEN: PUSH(R[in.a].len); break;
		case OP_CAS: case OP_FADD: {
			uint64_t c = in.op == OP_CAS ? POP() : 0;
			y = POP();
			uint64_t off = POP();
			if (!in_bounds(off, 8, R[in.a].len)) TRAPK(ISA_TRAP_BOUNDS);
			if (off & 7) TRAPK(ISA_TRAP_UNALIGNED);
			uint64_t *w = (uint64_t *)(void *)(R[in.a].base + off), old = *w;
			if (in.op == OP_CAS) { if (old == y) *w = c; } else { *w = old + y; }
			PUSH(old);
			break;
		}
		case OP_COPY: case OP_FILL: {
			uint64_t n, soff = 0, b = 0;
			if (in.op == OP_COPY) { n = POP(); soff = POP(); }
			else { b = POP(); n = POP(); }
			uint64_t doff = POP();
			if (in.op == OP_COPY && !in_bounds(soff, n, R[in.b].len)) TRAPK(ISA_TRAP_BOUNDS);
			if (in.a == ISA_R_OUT) {
				if (!in_bounds(doff, n, opts->out_cap)) TRAPK(ISA_TRAP_OUTPUT_FULL);
				while (R[ISA_R_OUT].len < doff) R[ISA_R_OUT].base[R[ISA_R_OUT].len++] = 0;
				if (R[ISA_R_OUT].len < doff + n) R[ISA_R_OUT].len = doff + n;
			} else if (!in_bounds(doff, n, R[in.a].len)) {
				TRAPK(ISA_TRAP_BOUNDS);
			}
			if (in.op == OP_COPY) { if (n) memmove(R[in.a].base + doff, R[in.b].base + soff, n); }
			else { for (uint64_t i = 0; i < n; i++) R[in.a].base[doff + i] = (uint8_t)b; }
			break;
		}
		case OP_CMP: {
			uint64_t n = POP(), o2 = POP(), o1 = POP();
			if (!in_bounds(o1, n, R[in.a].len) || !in_bounds(o2, n, R[in.b].len)) TRAPK(ISA_TRAP_BOUNDS);
			int64_t c = 0;
			for (uint64_t i = 0; i < n && !c; i++)
				c = (int64_t)R[in.a].base[o1 + i] - (int64_t)R[in.b].base[o2 + i];
			PUSH((uint64_t)((c > 0) - (c < 0)));
			break;
		}
		case OP_FINDB: {
			uint64_t b = POP() & 0xff, n = POP(), off = POP(), pos = UINT64_MAX;
			if (!in_bounds(off, n, R[in.a].len)) TRAPK(ISA_TRAP_BOUNDS);
			for (uint64_t i = 0; i < n; i++)
				if (R[in.a].base[off + i] == b) { pos = off + i; break; }
			PUSH(pos);
			break;
		}
		case OP_FINDS: {
			uint64_t nn = POP(), noff = POP(), n = POP(), off = POP(), pos = UINT64_MAX;
			if (!in_bounds(off, n, R[in.a].len) || !in_bounds(noff, nn, R[in.b].len)) TRAPK(ISA_TRAP_BOUNDS);
			for (uint64_t i = 0; nn <= n && i <= n - nn; i++)
				if (!memcmp(R[in.a].base + off + i, R[in.b].base + noff, nn)) { pos = off + i; break; }
			PUSH(pos);
			break;
		}
		case OP_FINDSI: {
			uint64_t nn = POP(), noff = POP(), n = POP(), off = POP(), pos = UINT64_MAX;
			if (!in_bounds(off, n, R[in.a].len) || !in_bounds(noff, nn, R[in.b].len)) TRAPK(ISA_TRAP_BOUNDS);
			for (uint64_t i = 0; nn <= n && i <= n - nn && pos == UINT64_MAX; i++) {
				uint64_t j = 0;
				while (j < nn && tolower(R[in.a].base[off + i + j]) == tolower(R[in.b].base[noff + j]))
					j++;
				if (j == nn)
					pos = off + i;
			}
			PUSH(pos);
			break;
		}
		case OP_FINDSET: {
			/* nlen / 32 sets of 32 bytes; byte c is in a set when bit c % 8 of its byte c / 8 is */
			uint64_t nn = POP(), noff = POP(), n = POP(), off = POP(), pos = UINT64_MAX;
			if (!in_bounds(off, n, R[in.a].len) || !in_bounds(noff, nn, R[in.b].len) ||
			    nn % 32 != 0 || nn > 64 * 32)
				TRAPK(ISA_TRAP_BOUNDS);
			uint64_t m = nn / 32;
			for (uint64_t i = 0; m <= n && i <= n - m && pos == UINT64_MAX; i++) {
				uint64_t j = 0;
				while (j < m) {
					uint8_t c = R[in.a].base[off + i + j];
					if (!(R[in.b].base[noff + 32 * j + c / 8] >> (c % 8) & 1))
						break;
					j++;
				}
				if (j == m)
					pos = off + i;
			}
			PUSH(pos);
			break;
		}
		case OP_OUTPUT: {
			uint64_t n = POP(), off = POP();
			if (!in_bounds(off, n, R[in.a].len)) TRAPK(ISA_TRAP_BOUNDS);
			if (!in_bounds(R[ISA_R_OUT].len, n, opts->out_cap)) TRAPK(ISA_TRAP_OUTPUT_FULL);
			for (uint64_t i = 0; i < n; i++)
				R[ISA_R_OUT].base[R[ISA_R_OUT].len + i] = R[in.a].base[off + i];
			R[ISA_R_OUT].len += n;
			break;
		}
		case OP_OUTB: case OP_OUTQ: {
			unsigned n = in.op == OP_OUTB ? 1 : 8;
			x = POP();
			if (!in_bounds(R[ISA_R_OUT].len, n, opts->out_cap)) TRAPK(ISA_TRAP_OUTPUT_FULL);
			for (unsigned i = 0; i < n; i++)
				R[ISA_R_OUT].base[R[ISA_R_OUT].len++] = (uint8_t)(x >> (8 * i));
			break;
		}
		case OP_COUNT: abort();
		}
		f->sp = sp;
		f->pc = (uint32_t)next;
	}
trap:
	res->trap.kind = kind;
	res->trap.func = f->func;
	res->trap.pc = f->pc;
	for (int i = 0; i <= depth; i++) {
		free(frames[i].locals);
		free(frames[i].stack);
	}
	free(frames);
	res->out_len = R[ISA_R_OUT].len;
	res->fuel_used = fuel0 - fuel;
	return -VM_ETRAP;
done:
	for (int i = 0; i < depth; i++) {
		free(frames[i].locals);
		free(frames[i].stack);
	}
	free(frames);
	res->out_len = R[ISA_R_OUT].len;
	res->fuel_used = fuel0 - fuel;
	return 0;
}
