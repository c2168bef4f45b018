/* arfscan.c: the grep segment for one file of an ARF image (arf grep), scanned where it lies.
 *
 * The segment imports region "arf" (the image arfd exports), walks the file's extents (inline,
 * then the extent-block chain) and scans each extent IN PLACE with the same DFA rows, literal
 * skip and record format as gen.c.  A scan window must end with a line terminator, so each
 * extent is scanned up to its last terminator; the line that straddles into the next extents
 * (or holes) is copied into the output as a "scratch" record (REC_SCRATCH, skipped by the
 * client) and scanned there.  Holes are zeros: with -z each zero ends a line and the hole is
 * scanned over a block of zeros in the constants.  Binary files (a NUL in an extent or any
 * hole, without -a/-z) are counted by a byte loop whose DFA row is carried across extents,
 * holes counted arithmetically.  Runs stop at a line boundary after out_max bytes of output
 * or scan_max bytes of file and end with a trailer holding the state to continue from.
 * docs/grep.md ("arf grep") has the argument and trailer layout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "grep_int.h"
#include "layout.h"

#define REC_CONTEXT (1ull << 63)
#define ZCHUNK 4096u               /* zeros in the constants, for holes with -z */
#define BIN_CHUNK (1u << 20)       /* binary loop: bytes between scan-budget checks */

/* arguments, then locals */
enum { A_INO, A_POS, A_LINENO, A_COUNT, A_AFTER, A_STOP, A_BIN, A_ROW, A_SKIP, A_OUTMAX,
       A_SCANMAX, A_END, N_ARGS,
       L_START = N_ARGS, L_SIZE, L_IADDR, L_DATAOFF, L_RLEN,
       L_XP, L_XI, L_XB, L_NX, L_CUR, L_PEND, L_EL, L_EE, L_EPH, L_PS, L_PE, L_PPH, L_KIND,
       L_A, L_T, L_U, L_SC_OPEN, L_SC_H, L_SC_B, L_NOEOL, L_LASTC, L_SEL,
       L_WB, L_WE, L_DELTA, L_LNL, L_RET, L_P0, L_P, L_LE, L_M, L_K, L_PE2,
       N_LOCALS };
/* aliases of the state arguments, updated in place */
#define L_POS    A_POS
#define L_LINENO A_LINENO
#define L_COUNT  A_COUNT
#define L_AFTER  A_AFTER
#define L_STOP   A_STOP
#define L_BIN    A_BIN
#define L_ROW    A_ROW
#define L_SKIP   A_SKIP

enum { K_HOLE, K_EXT };

struct plan {
	const struct dfa *d, *bd;
	int invert, count_only, stop_first, emit, line_number;
	int64_t max;
	int after;
	int eol;
	int binary_check, binary_flag, binary_nomatch;
	int lit;
	int lit_icase;             /* find the literal with findsi (letters folded) */
	int lit_sets;              /* the literal is lit sets of 32 bytes: findset */
	int lit_exact;             /* the pattern is the literal: found is matched */
	int empty_sel;             /* binary mode: an empty line is selected */
	int maybe;                 /* the tables may say DFA_MAYBE (dfa_build_ascii_w) */
};

struct gen {
	struct asm_builder *b;
	const struct plan *pl;
	int arf;                   /* region index of "arf" */
	uint32_t map, tab, bmap, btab, lit, zeros;
	unsigned mul, bmul;
	asm_label finish, more, eio;
	asm_label redo;            /* DFA_MAYBE: a GREP_REC_REDO record, the run ends */
};

#define B (g->b)
static void op(struct gen *g, enum op o) { asm_op(B, o); }
static void push(struct gen *g, int64_t v) { asm_push(B, v); }
static void get(struct gen *g, unsigned l) { asm_local(B, OP_LGET, l); }
static void set(struct gen *g, unsigned l) { asm_local(B, OP_LSET, l); }
static void tee(struct gen *g, unsigned l) { asm_local(B, OP_LTEE, l); }
static void jump(struct gen *g, enum op o, asm_label l) { asm_jump(B, o, l); }
static void bind(struct gen *g, asm_label l) { asm_label_bind(B, l); }
static asm_label label(struct gen *g) { return asm_label_new(B); }

static void inc(struct gen *g, unsigned l, int d) { asm_linc(B, l, d); }
/* local = a op b over locals/constants is spelled out at each use; these two are common */
static void setc(struct gen *g, unsigned l, int64_t v) { push(g, v); set(g, l); }
static void mov(struct gen *g, unsigned dst, unsigned src) { get(g, src); set(g, dst); }

/* DFA_MAYBE in L_ROW (dfa_build_ascii_w): the run ends with a GREP_REC_REDO record (g->redo),
 * and the client runs the file again on the exact path */
static void maybe_check(struct gen *g)
{
	if (!g->pl->maybe)
		return;
	asm_label no = label(g);
	get(g, L_ROW);
	push(g, DFA_MAYBE);
	jump(g, OP_JNE, no);
	jump(g, OP_JMP, g->redo);
	bind(g, no);
}

static uint32_t start_row(uint32_t tab, const struct dfa *d)
{
	return tab + (uint32_t)(d->start * (d->n_cls + 1) * 4);
}

/* row = T[row + class(r[p])]; p++ */
static void step(struct gen *g, unsigned r, uint32_t map, unsigned mul)
{
	get(g, L_P);
	asm_mem(B, OP_LD8U, r);
	push(g, map);
	op(g, OP_ADD);
	asm_mem(B, OP_LD8U, ISA_R_CONST);
	if (mul == 4) {
		push(g, 2);
		op(g, OP_SHL);
	}
	get(g, L_ROW);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, ISA_R_CONST);
	set(g, L_ROW);
	inc(g, L_P, 1);
}

/* le = offset of the terminator at or after local `from` in r, before WE; else WE */
static void find_eol(struct gen *g, unsigned r, unsigned from)
{
	asm_label ok = label(g);
	get(g, from);
	get(g, L_WE);
	get(g, from);
	op(g, OP_SUB);
	push(g, g->pl->eol);
	asm_mem(B, OP_FINDB, r);
	tee(g, L_LE);
	push(g, -1);
	jump(g, OP_JNE, ok);
	mov(g, L_LE, L_WE);
	bind(g, ok);
}

/* A record: u64 file offset (| REC_CONTEXT), u64 length, [u64 line number], the bytes. */
static void emit_rec(struct gen *g, unsigned r, int context)
{
	get(g, L_P0);
	get(g, L_DELTA);
	op(g, OP_ADD);
	if (context) {
		push(g, (int64_t)REC_CONTEXT);
		op(g, OP_OR);
	}
	op(g, OP_OUTQ);
	get(g, L_LE);
	get(g, L_P0);
	op(g, OP_SUB);
	op(g, OP_OUTQ);
	if (g->pl->line_number) {
		get(g, L_LINENO);
		op(g, OP_OUTQ);
	}
	get(g, L_P0);
	get(g, L_LE);
	get(g, L_P0);
	op(g, OP_SUB);
	asm_mem(B, OP_OUTPUT, r);
}

/* After a record: stop (at the next line) once the output passed out_max. */
static void out_budget(struct gen *g)
{
	asm_label ok = label(g);
	asm_mem(B, OP_RLEN, ISA_R_OUT);
	get(g, A_OUTMAX);
	jump(g, OP_JLTU, ok);
	get(g, L_LE);
	push(g, 1);
	op(g, OP_ADD);
	get(g, L_DELTA);
	op(g, OP_ADD);
	set(g, L_POS);
	jump(g, OP_JMP, g->more);
	bind(g, ok);
}

/* The text scan of one window [WB, WE) of region r: every line in it ends with a terminator
 * except, when LNL < WE, the last one (the file's unterminated last line).  File offset =
 * region offset + DELTA.  Leaves POS at the next line's file offset and returns to the site
 * named by RET through `ret` (a chain of compares, see text_ret). */
static void gen_window(struct gen *g, unsigned r, asm_label entry, asm_label wexit)
{
	const struct plan *pl = g->pl;
	const struct dfa *d = pl->d;
	asm_label line = label(g), noskip = label(g), fast = label(g), slow = label(g);
	asm_label at_end = label(g), special = label(g), classify = label(g), nsel = label(g);
	asm_label next = label(g), at_max = label(g), not_stop = label(g), sc_ok = label(g);
	uint32_t start = start_row(g->tab, d);

	bind(g, entry);
	mov(g, L_P0, L_WB);
	bind(g, line);
	get(g, L_P0);
	get(g, L_WE);
	jump(g, OP_JGEU, wexit);
	/* scan budget: bytes of the file since this run started */
	get(g, L_P0);
	get(g, L_DELTA);
	op(g, OP_ADD);
	get(g, L_START);
	op(g, OP_SUB);
	get(g, A_SCANMAX);
	jump(g, OP_JLTU, sc_ok);
	get(g, L_P0);
	get(g, L_DELTA);
	op(g, OP_ADD);
	set(g, L_POS);
	jump(g, OP_JMP, g->more);
	bind(g, sc_ok);
	if (pl->emit && pl->after > 0 && pl->max >= 0) {
		/* -m reached: only the trailing context of the last match is left */
		get(g, L_STOP);
		jump(g, OP_JZ, not_stop);
		get(g, L_AFTER);
		jump(g, OP_JZ, g->finish);
		find_eol(g, r, L_P0);
		if (pl->line_number)
			inc(g, L_LINENO, 1);
		emit_rec(g, r, 1);
		inc(g, L_AFTER, -1);
		out_budget(g);
		jump(g, OP_JMP, next);
		bind(g, not_stop);
	}
	if (pl->lit) {
		asm_label back = label(g), back_done = label(g);
		if (pl->after > 0) {
			get(g, L_AFTER);
			jump(g, OP_JNZ, noskip);
		}
		get(g, L_P0);
		get(g, L_WE);
		get(g, L_P0);
		op(g, OP_SUB);
		if (pl->lit == 1 && !pl->lit_icase && !pl->lit_sets) {
			push(g, g->lit);
			asm_mem(B, OP_FINDB, r);
		} else {
			push(g, g->lit);
			push(g, pl->lit_sets ? 32 * pl->lit : pl->lit);
			asm_mem2(B, pl->lit_sets ? OP_FINDSET : pl->lit_icase ? OP_FINDSI : OP_FINDS, r,
			         ISA_R_CONST);
		}
		tee(g, L_M);
		push(g, -1);
		asm_label found = label(g);
		jump(g, OP_JNE, found);
		/* no candidate left in the window: count its lines for -n, and for -c -v, which
		 * selects them all (a line without the literal cannot match), then leave */
		if (pl->line_number || pl->invert) {
			asm_label cnt = label(g), cnt_done = label(g);
			bind(g, cnt);
			get(g, L_P0);
			get(g, L_WE);
			get(g, L_P0);
			op(g, OP_SUB);
			push(g, pl->eol);
			asm_mem(B, OP_FINDB, r);
			tee(g, L_T);
			push(g, -1);
			jump(g, OP_JEQ, cnt_done);
			if (pl->line_number)
				inc(g, L_LINENO, 1);
			if (pl->invert)
				inc(g, L_COUNT, 1);
			get(g, L_T);
			push(g, 1);
			op(g, OP_ADD);
			set(g, L_P0);
			jump(g, OP_JMP, cnt);
			bind(g, cnt_done);
			if (pl->invert) {
				/* a window ends after a terminator but at the end of the file */
				asm_label none = label(g);
				get(g, L_P0);
				get(g, L_WE);
				jump(g, OP_JGEU, none);
				inc(g, L_COUNT, 1);
				bind(g, none);
			}
		}
		mov(g, L_P0, L_WE);
		jump(g, OP_JMP, wexit);
		bind(g, found);
		/* p0 starts a line: no terminator before the candidate, and the line is p0's
		 * (gen.c, the same shortcut: no walk back a byte at a time) */
		get(g, L_P0);
		get(g, L_M);
		get(g, L_P0);
		op(g, OP_SUB);
		push(g, pl->eol);
		asm_mem(B, OP_FINDB, r);
		push(g, -1);
		jump(g, OP_JNE, back);
		mov(g, L_M, L_P0);
		jump(g, OP_JMP, back_done);
		bind(g, back);
		get(g, L_M);
		get(g, L_P0);
		jump(g, OP_JLEU, back_done);
		get(g, L_M);
		push(g, 1);
		op(g, OP_SUB);
		asm_mem(B, OP_LD8U, r);
		push(g, pl->eol);
		jump(g, OP_JEQ, back_done);
		inc(g, L_M, -1);
		jump(g, OP_JMP, back);
		bind(g, back_done);
		if (pl->line_number || pl->invert) {
			asm_label cnt = label(g), cnt_done = label(g);
			bind(g, cnt);
			get(g, L_P0);
			get(g, L_M);
			get(g, L_P0);
			op(g, OP_SUB);
			push(g, pl->eol);
			asm_mem(B, OP_FINDB, r);
			tee(g, L_T);
			push(g, -1);
			jump(g, OP_JEQ, cnt_done);
			if (pl->line_number)
				inc(g, L_LINENO, 1);
			if (pl->invert)
				inc(g, L_COUNT, 1);
			get(g, L_T);
			push(g, 1);
			op(g, OP_ADD);
			set(g, L_P0);
			jump(g, OP_JMP, cnt);
			bind(g, cnt_done);
		}
		mov(g, L_P0, L_M);
		if (pl->lit_exact) {
			/* the pattern is the literal: the line matches, no DFA over it (gen.c) */
			find_eol(g, r, L_P0);
			setc(g, L_ROW, DFA_MATCH);
			jump(g, OP_JMP, classify);
		}
	}
	bind(g, noskip);
	mov(g, L_P, L_P0);
	setc(g, L_ROW, start);
	get(g, L_P0);
	get(g, L_LNL);
	jump(g, OP_JLTU, fast);
	bind(g, slow);
	get(g, L_P);
	get(g, L_WE);
	jump(g, OP_JGEU, at_end);
	step(g, r, g->map, g->mul);
	get(g, L_ROW);
	push(g, DFA_N_SPECIAL);
	jump(g, OP_JGEU, slow);
	jump(g, OP_JMP, special);
	bind(g, at_end);
	get(g, L_ROW);
	push(g, d->n_cls * 4);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, ISA_R_CONST);
	set(g, L_ROW);
	mov(g, L_LE, L_WE);
	jump(g, OP_JMP, classify);
	bind(g, fast);
	step(g, r, g->map, g->mul);
	get(g, L_ROW);
	push(g, DFA_N_SPECIAL);
	jump(g, OP_JGEU, fast);
	bind(g, special);
	{
		asm_label not_eol = label(g);
		get(g, L_P);
		push(g, 1);
		op(g, OP_SUB);
		set(g, L_T);
		get(g, L_ROW);
		push(g, DFA_EOL);
		jump(g, OP_JNE, not_eol);
		mov(g, L_LE, L_T);
		jump(g, OP_JMP, classify);
		bind(g, not_eol);
		find_eol(g, r, L_T);
	}
	bind(g, classify);
	maybe_check(g);
	if (pl->line_number)
		inc(g, L_LINENO, 1);
	get(g, L_ROW);
	jump(g, pl->invert ? OP_JZ : OP_JNZ, nsel);
	inc(g, L_COUNT, 1);
	if (pl->stop_first)
		jump(g, OP_JMP, g->finish);
	if (pl->emit) {
		emit_rec(g, r, 0);
		if (pl->after > 0)
			setc(g, L_AFTER, pl->after);
	}
	if (pl->max >= 0) {
		get(g, L_COUNT);
		push(g, pl->max);
		jump(g, OP_JGEU, at_max);
	}
	if (pl->emit)
		out_budget(g);
	jump(g, OP_JMP, next);
	bind(g, nsel);
	if (pl->emit && pl->after > 0) {
		get(g, L_AFTER);
		jump(g, OP_JZ, next);
		inc(g, L_AFTER, -1);
		emit_rec(g, r, 1);
		out_budget(g);
	}
	bind(g, next);
	get(g, L_LE);
	push(g, 1);
	op(g, OP_ADD);
	set(g, L_P0);
	jump(g, OP_JMP, line);
	bind(g, at_max);
	if (pl->emit && pl->after > 0) {
		setc(g, L_STOP, 1);
		setc(g, L_AFTER, pl->after);
		out_budget(g);
		jump(g, OP_JMP, next);
	} else {
		jump(g, OP_JMP, g->finish);
	}
}

/* ---- the file's pieces: holes and extents, in order, clipped to the size ---- */

/* EIO unless a <= b (unsigned), with a and b pushed by the caller */
static void check_le(struct gen *g)
{
	jump(g, OP_JGTU, g->eio);
}

/* Emit the extent walk; `body` emits the handling of piece [PS, PE) (KIND, PPH) and must end
 * by jumping to `next`; the walk jumps to `eof` after the last piece. */
static void gen_pieces(struct gen *g, void (*body)(struct gen *, asm_label next),
                       asm_label eof)
{
	asm_label loop = label(g), have = label(g), none = label(g), inblk = label(g);
	asm_label ext = label(g), next = label(g), clip1 = label(g), clip2 = label(g);
	asm_label piece = label(g);
	/* cursor: XP next extent record, XI left in this container, XB next extent block,
	 * NX extents left in all */
	get(g, L_IADDR);
	push(g, ARF_I_BODY);
	op(g, OP_ADD);
	set(g, L_XP);
	get(g, L_IADDR);
	push(g, ARF_I_NEXTENTS);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, (unsigned)g->arf);
	set(g, L_NX);
	get(g, L_NX);
	push(g, ARF_I_INLINE_EXT);
	get(g, L_NX);
	push(g, ARF_I_INLINE_EXT);
	op(g, OP_LTU);
	op(g, OP_SELECT);       /* ( a b c -- c ? a : b ): min(NX, 9) */
	set(g, L_XI);
	get(g, L_IADDR);
	push(g, ARF_I_XBLK);
	op(g, OP_ADD);
	asm_mem(B, OP_LD64, (unsigned)g->arf);
	set(g, L_XB);
	setc(g, L_CUR, 0);
	setc(g, L_PEND, 0);

	bind(g, loop);
	get(g, L_CUR);
	get(g, L_SIZE);
	jump(g, OP_JGEU, eof);
	get(g, L_PEND);
	jump(g, OP_JNZ, have);
	get(g, L_NX);
	jump(g, OP_JZ, none);
	get(g, L_XI);
	jump(g, OP_JNZ, inblk);
	/* the next extent block: aligned, inside the data area, with its magic and 1..255 */
	get(g, L_DATAOFF);
	get(g, L_XB);
	check_le(g);
	get(g, L_XB);
	push(g, ARF_BLOCK_SIZE);
	op(g, OP_ADD);
	get(g, L_RLEN);
	check_le(g);
	get(g, L_XB);
	push(g, ARF_BLOCK_SIZE - 1);
	op(g, OP_AND);
	jump(g, OP_JNZ, g->eio);
	get(g, L_XB);
	push(g, ARF_X_MAGIC);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, (unsigned)g->arf);
	push(g, ARF_X_MAGIC_VALUE);
	jump(g, OP_JNE, g->eio);
	get(g, L_XB);
	push(g, ARF_X_N);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, (unsigned)g->arf);
	tee(g, L_XI);
	jump(g, OP_JZ, g->eio);
	get(g, L_XI);
	push(g, ARF_X_MAX);
	check_le(g);
	get(g, L_XB);
	push(g, ARF_X_EXT);
	op(g, OP_ADD);
	set(g, L_XP);
	get(g, L_XB);
	asm_mem(B, OP_LD64, (unsigned)g->arf);      /* ARF_X_NEXT is 0 */
	set(g, L_XB);
	bind(g, inblk);
	/* EL, EE: the extent's file range; EPH: its image offset; all checked */
	get(g, L_XP);
	push(g, ARF_E_LBLK);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, (unsigned)g->arf);
	push(g, ARF_BLOCK_SHIFT);
	op(g, OP_SHL);
	set(g, L_EL);
	get(g, L_XP);
	push(g, ARF_E_LEN);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, (unsigned)g->arf);
	tee(g, L_T);
	jump(g, OP_JZ, g->eio);
	get(g, L_XP);
	push(g, ARF_E_PBLK);
	op(g, OP_ADD);
	asm_mem(B, OP_LD64, (unsigned)g->arf);
	tee(g, L_U);
	get(g, L_RLEN);
	push(g, ARF_BLOCK_SHIFT);
	op(g, OP_SHRU);
	check_le(g);                        /* pblk <= image blocks: no overflow below */
	get(g, L_U);
	push(g, ARF_BLOCK_SHIFT);
	op(g, OP_SHL);
	set(g, L_EPH);
	get(g, L_DATAOFF);
	get(g, L_EPH);
	check_le(g);
	get(g, L_T);
	push(g, ARF_BLOCK_SHIFT);
	op(g, OP_SHL);
	set(g, L_T);                        /* bytes */
	get(g, L_EPH);
	get(g, L_T);
	op(g, OP_ADD);
	get(g, L_RLEN);
	check_le(g);
	get(g, L_CUR);
	get(g, L_EL);
	check_le(g);                        /* sorted, not overlapping */
	get(g, L_EL);
	get(g, L_T);
	op(g, OP_ADD);
	set(g, L_EE);
	inc(g, L_XP, ARF_E_SIZE);
	inc(g, L_XI, -1);
	inc(g, L_NX, -1);
	/* clip to the size */
	get(g, L_EE);
	get(g, L_SIZE);
	jump(g, OP_JLEU, clip1);
	mov(g, L_EE, L_SIZE);
	bind(g, clip1);
	get(g, L_EL);
	get(g, L_SIZE);
	jump(g, OP_JLEU, clip2);
	mov(g, L_EL, L_SIZE);
	bind(g, clip2);
	setc(g, L_PEND, 1);
	jump(g, OP_JMP, have);
	bind(g, none);                      /* no extents left: a hole to the size */
	mov(g, L_EL, L_SIZE);
	mov(g, L_EE, L_SIZE);
	setc(g, L_PEND, 1);
	bind(g, have);
	mov(g, L_PS, L_CUR);
	get(g, L_CUR);
	get(g, L_EL);
	jump(g, OP_JGEU, ext);
	mov(g, L_PE, L_EL);
	setc(g, L_KIND, K_HOLE);
	jump(g, OP_JMP, piece);
	bind(g, ext);
	mov(g, L_PE, L_EE);
	get(g, L_EPH);
	get(g, L_CUR);
	op(g, OP_ADD);
	get(g, L_EL);
	op(g, OP_SUB);
	set(g, L_PPH);
	setc(g, L_KIND, K_EXT);
	setc(g, L_PEND, 0);
	bind(g, piece);
	body(g, next);
	bind(g, next);
	mov(g, L_CUR, L_PE);
	jump(g, OP_JMP, loop);
}

/* ---- binary pre-pass: a NUL in an extent, or any hole ---- */
static asm_label bin_found;
static void body_bincheck(struct gen *g, asm_label next)
{
	get(g, L_KIND);
	push(g, K_HOLE);
	jump(g, OP_JEQ, bin_found);
	get(g, L_PPH);
	get(g, L_PE);
	get(g, L_PS);
	op(g, OP_SUB);
	push(g, 0);
	asm_mem(B, OP_FINDB, (unsigned)g->arf);
	push(g, -1);
	jump(g, OP_JNE, bin_found);
	jump(g, OP_JMP, next);
}

/* ---- binary files: count lines ended by '\n' or NUL, the row carried across pieces ---- */

/* sel (L_SEL, before -v) decided for the line just ended: count it, maybe stop; row = start */
static void bin_classify(struct gen *g, asm_label cont)
{
	const struct plan *pl = g->pl;
	asm_label no = label(g);
	setc(g, L_SKIP, 0);
	setc(g, L_ROW, start_row(g->btab, pl->bd));
	get(g, L_SEL);
	jump(g, pl->invert ? OP_JNZ : OP_JZ, no);
	inc(g, L_COUNT, 1);
	if (!pl->count_only) {
		jump(g, OP_JMP, g->finish);
	} else if (pl->max >= 0) {
		get(g, L_COUNT);
		push(g, pl->max);
		jump(g, OP_JGEU, g->finish);
	}
	bind(g, no);
	jump(g, OP_JMP, cont);
}

/* sel = the line ends here (a terminator or the end) */
static void bin_end_sel(struct gen *g)
{
	asm_label skip = label(g), done = label(g);
	get(g, L_SKIP);
	jump(g, OP_JNZ, skip);
	get(g, L_ROW);
	push(g, g->pl->bd->n_cls * 4);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, ISA_R_CONST);
	if (g->pl->maybe) {
		set(g, L_ROW);              /* (bin_classify sets it again) */
		maybe_check(g);
		get(g, L_ROW);
	}
	op(g, OP_EQZ);                      /* DFA_MATCH is 0 */
	set(g, L_SEL);
	jump(g, OP_JMP, done);
	bind(g, skip);
	setc(g, L_SEL, 1);
	bind(g, done);
}

static void is_term(struct gen *g, unsigned c, asm_label yes)
{
	get(g, c);
	jump(g, OP_JZ, yes);
	get(g, c);
	push(g, '\n');
	jump(g, OP_JEQ, yes);
}

static void body_binary(struct gen *g, asm_label next)
{
	const struct plan *pl = g->pl;
	asm_label hole = label(g), chunk = label(g), bl = label(g), chunk_done = label(g);
	asm_label sc_ok = label(g), noskip = label(g), term = label(g), special = label(g);
	asm_label lastc = label(g);
	/* A = max(PS, POS): a continued run starts mid-piece */
	get(g, L_PE);
	get(g, L_POS);
	jump(g, OP_JLEU, next);
	get(g, L_PS);
	get(g, L_POS);
	get(g, L_PS);
	get(g, L_POS);
	op(g, OP_GTU);
	op(g, OP_SELECT);
	set(g, L_A);
	get(g, L_KIND);
	push(g, K_HOLE);
	jump(g, OP_JEQ, hole);
	/* extent: [P, PE2) in the image, in chunks of BIN_CHUNK between budget checks */
	get(g, L_PPH);
	get(g, L_A);
	op(g, OP_ADD);
	get(g, L_PS);
	op(g, OP_SUB);
	set(g, L_P);
	get(g, L_PPH);
	get(g, L_PE);
	op(g, OP_ADD);
	get(g, L_PS);
	op(g, OP_SUB);
	set(g, L_PE2);
	bind(g, chunk);
	get(g, L_P);
	get(g, L_PE2);
	jump(g, OP_JGEU, lastc);
	/* file offset of P = P - PPH + PS */
	get(g, L_P);
	get(g, L_PPH);
	op(g, OP_SUB);
	get(g, L_PS);
	op(g, OP_ADD);
	tee(g, L_POS);
	get(g, L_START);
	op(g, OP_SUB);
	get(g, A_SCANMAX);
	jump(g, OP_JLTU, sc_ok);
	jump(g, OP_JMP, g->more);
	bind(g, sc_ok);
	get(g, L_P);
	push(g, BIN_CHUNK);
	op(g, OP_ADD);
	get(g, L_PE2);
	get(g, L_P);
	push(g, BIN_CHUNK);
	op(g, OP_ADD);
	get(g, L_PE2);
	op(g, OP_LTU);
	op(g, OP_SELECT);
	set(g, L_WE);
	bind(g, bl);
	get(g, L_P);
	get(g, L_WE);
	jump(g, OP_JGEU, chunk_done);
	get(g, L_SKIP);
	jump(g, OP_JZ, noskip);
	get(g, L_P);
	asm_mem(B, OP_LD8U, (unsigned)g->arf);
	set(g, L_T);
	inc(g, L_P, 1);
	is_term(g, L_T, term);
	jump(g, OP_JMP, bl);
	bind(g, term);
	setc(g, L_SEL, 1);
	bin_classify(g, bl);
	bind(g, noskip);
	{
		asm_label fast = label(g);
		bind(g, fast);
		get(g, L_P);
		get(g, L_WE);
		jump(g, OP_JGEU, chunk_done);
		step(g, (unsigned)g->arf, g->bmap, g->bmul);
		get(g, L_ROW);
		push(g, DFA_N_SPECIAL);
		jump(g, OP_JGEU, fast);
	}
	bind(g, special);
	{
		asm_label m = label(g), mterm = label(g);
		get(g, L_ROW);
		push(g, DFA_EOL);
		jump(g, OP_JNE, m);
		setc(g, L_SEL, 0);
		bin_classify(g, bl);
		bind(g, m);                         /* matched before the byte at P - 1 */
		maybe_check(g);
		get(g, L_P);
		push(g, 1);
		op(g, OP_SUB);
		asm_mem(B, OP_LD8U, (unsigned)g->arf);
		set(g, L_T);
		is_term(g, L_T, mterm);
		setc(g, L_SKIP, 1);
		jump(g, OP_JMP, bl);
		bind(g, mterm);
		setc(g, L_SEL, 1);
		bin_classify(g, bl);
	}
	bind(g, chunk_done);
	jump(g, OP_JMP, chunk);
	bind(g, lastc);
	get(g, L_PE2);
	push(g, 1);
	op(g, OP_SUB);
	asm_mem(B, OP_LD8U, (unsigned)g->arf);
	set(g, L_LASTC);
	mov(g, L_POS, L_PE);
	jump(g, OP_JMP, next);

	/* hole: the first zero ends the line in progress; the others are empty lines */
	bind(g, hole);
	{
		asm_label first_done = label(g);
		get(g, L_A);
		get(g, L_PE);
		jump(g, OP_JGEU, next);
		bin_end_sel(g);
		bin_classify(g, first_done);
		bind(g, first_done);
		get(g, L_PE);
		get(g, L_A);
		op(g, OP_SUB);
		push(g, 1);
		op(g, OP_SUB);
		set(g, L_T);                        /* empty lines */
		if (pl->empty_sel) {
			asm_label none = label(g);
			get(g, L_T);
			jump(g, OP_JZ, none);
			if (!pl->count_only) {
				inc(g, L_COUNT, 1);
				jump(g, OP_JMP, g->finish);
			} else {
				get(g, L_COUNT);
				get(g, L_T);
				op(g, OP_ADD);
				set(g, L_COUNT);
				if (pl->max >= 0) {
					asm_label under = label(g);
					get(g, L_COUNT);
					push(g, pl->max);
					jump(g, OP_JLTU, under);
					setc(g, L_COUNT, pl->max);
					jump(g, OP_JMP, g->finish);
					bind(g, under);
				}
			}
			bind(g, none);
		}
		setc(g, L_LASTC, 0);
		mov(g, L_POS, L_PE);
		jump(g, OP_JMP, next);
	}
}

/* ---- text files: windows in place, straddling lines through scratch records ---- */
static asm_label w_arf, w_out, w_zero;   /* window entries */

static void sc_open(struct gen *g)      /* scratch record for the line starting at POS */
{
	asm_mem(B, OP_RLEN, ISA_R_OUT);
	set(g, L_SC_H);
	get(g, L_POS);
	push(g, (int64_t)GREP_REC_SCRATCH);
	op(g, OP_OR);
	op(g, OP_OUTQ);
	push(g, 0);
	op(g, OP_OUTQ);
	if (g->pl->line_number) {
		push(g, 0);
		op(g, OP_OUTQ);
	}
	asm_mem(B, OP_RLEN, ISA_R_OUT);
	set(g, L_SC_B);
	setc(g, L_SC_OPEN, 1);
}

static void sc_zeros(struct gen *g, unsigned n)
{
	asm_mem(B, OP_RLEN, ISA_R_OUT);
	get(g, n);
	push(g, 0);
	asm_mem(B, OP_FILL, ISA_R_OUT);
}

/* close the scratch record and scan it as a window; ret_id names the return site */
static void sc_scan(struct gen *g, int ret_id, int final, asm_label ret)
{
	get(g, L_SC_H);
	push(g, 8);
	op(g, OP_ADD);
	asm_mem(B, OP_RLEN, ISA_R_OUT);
	get(g, L_SC_B);
	op(g, OP_SUB);
	asm_mem(B, OP_ST64, ISA_R_OUT);
	setc(g, L_SC_OPEN, 0);
	mov(g, L_WB, L_SC_B);
	asm_mem(B, OP_RLEN, ISA_R_OUT);
	set(g, L_WE);
	get(g, L_POS);
	get(g, L_SC_B);
	op(g, OP_SUB);
	set(g, L_DELTA);
	mov(g, L_LNL, final ? L_WB : L_WE);
	setc(g, L_RET, ret_id);
	jump(g, OP_JMP, w_out);
	bind(g, ret);
}

enum { RET_SC = 1, RET_EOF, RET_ARF, RET_ZERO };
static asm_label ret_sc, ret_eof, ret_arf, ret_zero;

static void body_text(struct gen *g, asm_label next)
{
	const struct plan *pl = g->pl;
	asm_label hole = label(g), open_done = label(g), lines = label(g), back = label(g);
	asm_label back_done = label(g), no_win = label(g), no_tail = label(g);
	asm_label found = label(g), do_scan = label(g);
	get(g, L_PE);
	get(g, L_POS);
	jump(g, OP_JLEU, next);
	get(g, L_PS);
	get(g, L_POS);
	get(g, L_PS);
	get(g, L_POS);
	op(g, OP_GTU);
	op(g, OP_SELECT);
	set(g, L_A);
	get(g, L_SC_OPEN);
	jump(g, OP_JZ, open_done);
	/* a line from earlier pieces goes on here: up to the first terminator into the scratch */
	get(g, L_KIND);
	push(g, K_HOLE);
	jump(g, OP_JEQ, hole);
	get(g, L_PPH);
	get(g, L_A);
	op(g, OP_ADD);
	get(g, L_PS);
	op(g, OP_SUB);
	set(g, L_P);
	get(g, L_P);
	get(g, L_PE);
	get(g, L_A);
	op(g, OP_SUB);
	push(g, pl->eol);
	asm_mem(B, OP_FINDB, (unsigned)g->arf);
	tee(g, L_T);
	push(g, -1);
	jump(g, OP_JNE, found);
	get(g, L_P);
	get(g, L_PE);
	get(g, L_A);
	op(g, OP_SUB);
	asm_mem(B, OP_OUTPUT, (unsigned)g->arf);
	jump(g, OP_JMP, next);
	bind(g, found);
	get(g, L_P);
	get(g, L_T);
	push(g, 1);
	op(g, OP_ADD);
	get(g, L_P);
	op(g, OP_SUB);
	tee(g, L_U);
	asm_mem(B, OP_OUTPUT, (unsigned)g->arf);
	get(g, L_A);
	get(g, L_U);
	op(g, OP_ADD);
	set(g, L_A);
	jump(g, OP_JMP, do_scan);
	bind(g, hole);
	if (pl->eol == 0) {
		/* -z: the hole's first zero ends the line */
		setc(g, L_U, 1);
		sc_zeros(g, L_U);
		inc(g, L_A, 1);
		jump(g, OP_JMP, do_scan);
	} else {
		get(g, L_PE);
		get(g, L_A);
		op(g, OP_SUB);
		set(g, L_U);
		sc_zeros(g, L_U);
		jump(g, OP_JMP, next);
	}
	bind(g, do_scan);
	sc_scan(g, RET_SC, 0, ret_sc);
	bind(g, open_done);
	/* a line starts at A */
	get(g, L_A);
	get(g, L_PE);
	jump(g, OP_JGEU, next);
	get(g, L_KIND);
	push(g, K_HOLE);
	jump(g, OP_JEQ, lines);
	/* extent: the window is [A, the byte after the last terminator) */
	get(g, L_PPH);
	get(g, L_A);
	op(g, OP_ADD);
	get(g, L_PS);
	op(g, OP_SUB);
	set(g, L_WB);
	get(g, L_PPH);
	get(g, L_PE);
	op(g, OP_ADD);
	get(g, L_PS);
	op(g, OP_SUB);
	tee(g, L_PE2);
	set(g, L_WE);
	bind(g, back);
	get(g, L_WE);
	get(g, L_WB);
	jump(g, OP_JLEU, back_done);
	get(g, L_WE);
	push(g, 1);
	op(g, OP_SUB);
	asm_mem(B, OP_LD8U, (unsigned)g->arf);
	push(g, pl->eol);
	jump(g, OP_JEQ, back_done);
	inc(g, L_WE, -1);
	jump(g, OP_JMP, back);
	bind(g, back_done);
	get(g, L_WE);
	get(g, L_WB);
	jump(g, OP_JLEU, no_win);
	get(g, L_PS);
	get(g, L_PPH);
	op(g, OP_SUB);
	set(g, L_DELTA);
	mov(g, L_LNL, L_WE);
	setc(g, L_RET, RET_ARF);
	jump(g, OP_JMP, w_arf);
	bind(g, ret_arf);
	bind(g, no_win);
	/* the rest [WE, PE2) is the start of a line that goes on: into a scratch record */
	get(g, L_WE);
	get(g, L_PE2);
	jump(g, OP_JGEU, no_tail);
	get(g, L_WE);
	get(g, L_PS);
	op(g, OP_ADD);
	get(g, L_PPH);
	op(g, OP_SUB);
	set(g, L_POS);
	sc_open(g);
	get(g, L_WE);
	get(g, L_PE2);
	get(g, L_WE);
	op(g, OP_SUB);
	asm_mem(B, OP_OUTPUT, (unsigned)g->arf);
	bind(g, no_tail);
	jump(g, OP_JMP, next);
	/* hole, a line starting in it */
	bind(g, lines);
	if (pl->eol == 0) {
		/* -z: every zero is an empty line; scan them over the zeros in the constants */
		asm_label zl = label(g);
		bind(g, zl);
		get(g, L_A);
		get(g, L_PE);
		jump(g, OP_JGEU, next);
		get(g, L_PE);
		get(g, L_A);
		op(g, OP_SUB);
		push(g, ZCHUNK);
		get(g, L_PE);
		get(g, L_A);
		op(g, OP_SUB);
		push(g, ZCHUNK);
		op(g, OP_LTU);
		op(g, OP_SELECT);
		set(g, L_U);
		setc(g, L_WB, g->zeros);
		get(g, L_U);
		push(g, g->zeros);
		op(g, OP_ADD);
		set(g, L_WE);
		get(g, L_A);
		push(g, g->zeros);
		op(g, OP_SUB);
		set(g, L_DELTA);
		mov(g, L_LNL, L_WE);
		setc(g, L_RET, RET_ZERO);
		jump(g, OP_JMP, w_zero);
		bind(g, ret_zero);
		get(g, L_A);
		get(g, L_U);
		op(g, OP_ADD);
		set(g, L_A);
		jump(g, OP_JMP, zl);
	} else {
		mov(g, L_POS, L_A);
		sc_open(g);
		get(g, L_PE);
		get(g, L_A);
		op(g, OP_SUB);
		set(g, L_U);
		sc_zeros(g, L_U);
		jump(g, OP_JMP, next);
	}
}

static void gen_text(struct gen *g, asm_label eof_done)
{
	asm_label eof = label(g), after = label(g);
	w_arf = label(g), w_out = label(g), w_zero = label(g);
	ret_sc = label(g), ret_eof = label(g), ret_arf = label(g), ret_zero = label(g);
	setc(g, L_SC_OPEN, 0);
	setc(g, L_NOEOL, 0);
	gen_pieces(g, body_text, eof);
	bind(g, eof);
	get(g, L_SC_OPEN);
	jump(g, OP_JZ, eof_done);
	setc(g, L_NOEOL, 1);
	sc_scan(g, RET_EOF, 1, ret_eof);
	jump(g, OP_JMP, eof_done);
	/* the windows, and their returns */
	asm_label wexit = label(g);
	gen_window(g, (unsigned)g->arf, w_arf, wexit);
	gen_window(g, ISA_R_OUT, w_out, wexit);
	if (g->pl->eol == 0)
		gen_window(g, ISA_R_CONST, w_zero, wexit);
	bind(g, wexit);
	get(g, L_P0);
	get(g, L_DELTA);
	op(g, OP_ADD);
	set(g, L_POS);
	get(g, L_RET);
	push(g, RET_SC);
	jump(g, OP_JEQ, ret_sc);
	get(g, L_RET);
	push(g, RET_EOF);
	jump(g, OP_JEQ, ret_eof);
	if (g->pl->eol == 0) {
		get(g, L_RET);
		push(g, RET_ZERO);
		jump(g, OP_JEQ, ret_zero);
	}
	jump(g, OP_JMP, ret_arf);
	bind(g, after);
}

/* ---- the segment ---- */

static void ret_err(struct gen *g, asm_label l, int e)
{
	bind(g, l);
	push(g, -e);
	op(g, OP_RET);
}

static void trailer(struct gen *g, int more)
{
	static const unsigned words[] = { L_POS, L_LINENO, L_COUNT, L_AFTER, L_STOP, L_BIN,
	                                  L_ROW, L_SKIP, L_NOEOL };
	push(g, more);
	op(g, OP_OUTQ);
	for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
		get(g, words[i]);
		op(g, OP_OUTQ);
	}
	push(g, 0);
	op(g, OP_RET);
}

static void gen_main(struct gen *g)
{
	const struct plan *pl = g->pl;
	asm_label einval = label(g), enoent = label(g), eisdir = label(g), isreg = label(g);
	asm_label text = label(g), bin_done = label(g), bin_eof = label(g), nrow = label(g);
	unsigned arf = (unsigned)g->arf;
	g->finish = label(g), g->more = label(g), g->eio = label(g);
	if (pl->maybe)
		g->redo = label(g);

	asm_mem(B, OP_RLEN, arf);
	set(g, L_RLEN);
	get(g, A_INO);
	jump(g, OP_JZ, einval);
	push(g, ARF_SB_N_INODES);
	asm_mem(B, OP_LD64, arf);
	get(g, A_INO);
	jump(g, OP_JLEU, einval);
	push(g, ARF_SB_ITABLE_OFF);
	asm_mem(B, OP_LD64, arf);
	get(g, A_INO);
	push(g, ARF_INO_SHIFT);
	op(g, OP_SHL);
	op(g, OP_ADD);
	tee(g, L_IADDR);
	asm_mem(B, OP_LD32U, arf);
	tee(g, L_T);
	jump(g, OP_JZ, enoent);
	get(g, L_T);
	push(g, ARF_S_IFMT);
	op(g, OP_AND);
	tee(g, L_T);
	push(g, ARF_S_IFREG);
	jump(g, OP_JEQ, isreg);
	get(g, L_T);
	push(g, ARF_S_IFDIR);
	jump(g, OP_JEQ, eisdir);
	jump(g, OP_JMP, einval);
	bind(g, isreg);
	get(g, L_IADDR);
	push(g, ARF_I_SIZE);
	op(g, OP_ADD);
	asm_mem(B, OP_LD64, arf);
	set(g, L_SIZE);
	push(g, ARF_SB_DATA_OFF);
	asm_mem(B, OP_LD64, arf);
	set(g, L_DATAOFF);
	mov(g, L_START, L_POS);
	setc(g, L_NOEOL, 0);

	if (pl->binary_check || pl->binary_flag) {
		asm_label known = label(g);
		get(g, L_BIN);
		push(g, 0);
		jump(g, OP_JGES, known);
		setc(g, L_BIN, 0);
		bin_found = label(g);
		gen_pieces(g, body_bincheck, known);
		bind(g, bin_found);
		setc(g, L_BIN, 1);
		bind(g, known);
	}
	if (pl->binary_check) {
		get(g, L_BIN);
		jump(g, OP_JZ, text);
		if (pl->binary_nomatch) {
			setc(g, L_COUNT, 0);
			jump(g, OP_JMP, g->finish);
		} else {
			get(g, L_ROW);
			push(g, 0);
			jump(g, OP_JGES, nrow);
			setc(g, L_ROW, start_row(g->btab, pl->bd));
			bind(g, nrow);
			gen_pieces(g, body_binary, bin_eof);
			bind(g, bin_eof);
			/* an unterminated last line */
			get(g, L_SIZE);
			jump(g, OP_JZ, g->finish);
			is_term(g, L_LASTC, g->finish);
			setc(g, L_NOEOL, 1);
			bin_end_sel(g);
			bin_classify(g, bin_done);
			bind(g, bin_done);
			jump(g, OP_JMP, g->finish);
		}
	}
	bind(g, text);
	{
		/* end: the text scan takes the file as ending there (a cluster's window ends at a
		 * line's start, grep.h); after the binary decision, which is the whole file's */
		asm_label whole = label(g);
		get(g, A_END);
		jump(g, OP_JZ, whole);
		get(g, A_END);
		get(g, L_SIZE);
		jump(g, OP_JGEU, whole);
		mov(g, L_SIZE, A_END);
		bind(g, whole);
	}
	gen_text(g, g->finish);
	bind(g, g->finish);
	trailer(g, 0);
	bind(g, g->more);
	trailer(g, 1);
	if (pl->maybe) {
		bind(g, g->redo);
		push(g, -1);                /* GREP_REC_REDO */
		op(g, OP_OUTQ);
		push(g, 0);
		op(g, OP_OUTQ);
		if (pl->line_number) {
			push(g, 0);
			op(g, OP_OUTQ);
		}
		trailer(g, 0);
	}
	ret_err(g, g->eio, 5);          /* EIO */
	ret_err(g, einval, 22);         /* EINVAL */
	ret_err(g, enoent, 2);          /* ENOENT */
	ret_err(g, eisdir, 21);         /* EISDIR */
}

/* grep_batch(n, out_max, scan_max): the first runs of n files in one EXEC (arf grep -r: a
 * directory's small files cost one round trip, not one each).  The inodes are u64s in the
 * args region.  Each file is a call of grep from the initial state; its output (records and
 * trailer, nothing for an error) is followed by u64 value, u64 offset where it began.  The
 * batch stops after a file whose run is not done (its trailer says more: the output passed
 * out_max or the file scan_max), or once the files' sizes used up scan_max; it ends with u64
 * the number of files run (the client reads the footers backwards from there). */
enum { BA_N, BA_OUTMAX, BA_SCANMAX, BA_NARGS, BL_I = BA_NARGS, BL_START, BL_V, BA_NLOCALS };

static void gen_batch(struct gen *g, int grep_fn)
{
	asm_label loop = label(g), done = label(g);
	int f = asm_func_begin(B, "grep_batch", BA_NARGS, BA_NLOCALS);
	bind(g, loop);
	get(g, BL_I);
	get(g, BA_N);
	jump(g, OP_JGEU, done);
	asm_mem(B, OP_RLEN, ISA_R_OUT);
	set(g, BL_START);
	get(g, BL_I);
	push(g, 8);
	op(g, OP_MUL);
	asm_mem(B, OP_LD64, ISA_R_ARGS);            /* ino */
	struct grep_arf_state s0 = { .bin = -1, .row = -1 };
	const int64_t st[] = { s0.pos, s0.lineno, s0.count, s0.after, s0.stop, s0.bin, s0.row,
	                       s0.skip };
	for (size_t i = 0; i < sizeof st / sizeof *st; i++)
		push(g, st[i]);
	get(g, BA_OUTMAX);
	get(g, BA_SCANMAX);
	push(g, 0);                                 /* end: the file's */
	asm_call(B, grep_fn);
	tee(g, BL_V);
	op(g, OP_OUTQ);
	get(g, BL_START);
	op(g, OP_OUTQ);
	inc(g, BL_I, 1);
	get(g, BL_V);
	push(g, 0);
	jump(g, OP_JLTS, loop);                     /* an error: no output, nothing scanned */
	/* the trailer ends 16 bytes back: more, then pos (how far the file was scanned) */
	asm_mem(B, OP_RLEN, ISA_R_OUT);
	push(g, 16 + GREP_ARF_TRAILER);
	op(g, OP_SUB);
	asm_mem(B, OP_LD64, ISA_R_OUT);
	jump(g, OP_JNZ, done);
	get(g, BA_SCANMAX);
	asm_mem(B, OP_RLEN, ISA_R_OUT);
	push(g, 16 + GREP_ARF_TRAILER - 8);
	op(g, OP_SUB);
	asm_mem(B, OP_LD64, ISA_R_OUT);
	op(g, OP_SUB);
	tee(g, BA_SCANMAX);
	push(g, 0);
	jump(g, OP_JGTS, loop);
	bind(g, done);
	get(g, BL_I);
	op(g, OP_OUTQ);
	get(g, BL_I);
	op(g, OP_RET);
	asm_func_end(B);
	asm_export(B, "grep_batch", f);
}

int grep_arf_gen(struct grep *gr, char *err, size_t errlen)
{
	const struct grep_opts *o = &gr->o;
	struct plan pl = { 0 };
	pl.d = &gr->dfa;
	pl.eol = o->null_data ? 0 : '\n';
	pl.line_number = o->line_number;
	pl.lit = (int)gr->lit_len;
	pl.lit_icase = gr->lit_icase;
	pl.lit_sets = gr->lit_is_sets;
	pl.lit_exact = gr->lit_exact && !gr->exact;
	pl.maybe = gr->maybe_redo;
	if (gr->exact) {
		pl.emit = 1;
		pl.max = -1;
		pl.binary_flag = !o->text && !o->null_data;
	} else {
		pl.invert = o->invert;
		pl.count_only = o->count;
		pl.stop_first = o->quiet || o->list || o->list_nomatch;
		pl.emit = !pl.count_only && !pl.stop_first;
		pl.max = o->max_count;
		pl.after = pl.emit && o->after > 0 ? o->after : 0;
		pl.binary_check = !o->text && !o->null_data;
		pl.binary_nomatch = o->binary_nomatch;
		pl.bd = gr->have_bdfa ? &gr->bdfa : NULL;
		if (pl.binary_check && !pl.bd && !pl.binary_nomatch) {
			snprintf(err, errlen, "no binary-file table");
			return -1;
		}
		/* every line without the literal is selected: -c without -m counts the lines
		 * between the literal's occurrences; else each line runs the DFA */
		if (pl.invert && !(pl.count_only && pl.max < 0 && !pl.stop_first))
			pl.lit = 0;
		if (o->before > 0 && pl.emit && !gr->lead_client) {
			snprintf(err, errlen, "-B needs the exact path (grep_opts.no_walk_back)");
			return -1;
		}
		if (pl.bd) {
			const struct dfa *b = pl.bd;
			uint32_t v = b->t[(size_t)b->start * (size_t)(b->n_cls + 1) + (size_t)b->n_cls];
			pl.empty_sel = (v == DFA_MATCH) != !!pl.invert;
		}
	}
	struct gen gs = { 0 }, *g = &gs;
	g->pl = &pl;
	g->b = asm_builder_new();
	if (!g->b) {
		snprintf(err, errlen, "memory exhausted");
		return -1;
	}
	g->arf = asm_region(B, "arf", ISA_ACC_RO);
	if (grep_put_dfa(B, pl.d, &g->map, &g->tab, &g->mul) != 0)
		goto fail;
	if (pl.bd && grep_put_bdfa(B, pl.bd, g->tab, &g->bmap, &g->btab, &g->bmul) != 0)
		goto fail;
	if (pl.lit == 1 && !pl.lit_icase && !pl.lit_sets)
		g->lit = gr->lit[0];
	else if (pl.lit > 0 && pl.lit_sets)
		g->lit = asm_const(B, gr->lit_set, 32 * (size_t)pl.lit, 1);
	else if (pl.lit > 0)
		g->lit = asm_const(B, gr->lit, (size_t)pl.lit, 1);
	if (pl.eol == 0) {
		uint8_t *z = calloc(1, ZCHUNK);
		if (!z)
			goto fail;
		g->zeros = asm_const(B, z, ZCHUNK, 8);
		free(z);
	}
	int f = asm_func_begin(B, "grep", N_ARGS, N_LOCALS);
	gen_main(g);
	asm_func_end(B);
	asm_export(B, "grep", f);
	gen_batch(g, f);
	if (asm_builder_finish(B, &gr->arf_seg, &gr->arf_seg_len, err, errlen) != 0)
		goto fail;
	asm_builder_free(B);
	return 0;
fail:
	if (!err[0])
		snprintf(err, errlen, "memory exhausted");
	asm_builder_free(B);
	return -1;
}
