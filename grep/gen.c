/* gen.c: emit the grep code segment with the builder API (asm/asm.h).
 *
 * The segment scans region "data" line by line.  A required literal, when there is one,
 * skips to the next candidate line with finds/findb (memmem/memchr speed); the DFA then runs
 * from the candidate line's start.  Its table lives in the constant data: a byte-to-class map
 * at offset 0 and rows of u32 entries holding the constant offset of the next row (so a step
 * is two loads and an add), or a special value < 3: match, end of line, dead.  Only the
 * options that were given generate code; selection, -v, -c, -m, -q/-l and context are decided
 * here, and the output is records (docs/grep.md) that grep_format prints as grep would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "grep_int.h"

enum { L_END, L_POS, L_P, L_ROW, L_LE, L_COUNT, L_LINENO, L_AFTER, L_LAST, L_M, L_T, L_LASTNL,
       L_K, L_Q, L_BIN, N_LOCALS };

#define REC_CONTEXT (1ull << 63)

struct plan {
	const struct dfa *d, *bd;   /* text table; binary table or NULL */
	int invert, count_only, stop_first, emit, line_number;
	int64_t max;                 /* < 0: none */
	int before, after;
	int eol;
	int binary_check, binary_nomatch;
	int binary_flag;             /* exact mode: only report a NUL in the result's bit 0 */
	int lit;
	int lit_icase;               /* find the literal with findsi (letters folded) */
	int lit_sets;                /* the literal is lit sets of 32 bytes: findset */
	int lit_exact;               /* the pattern is the literal: found is matched */
	int maybe;                   /* the tables may say DFA_MAYBE (dfa_build_ascii_w) */
};

struct gen {
	struct asm_builder *b;
	int data;                    /* region index of "data" */
	uint32_t map, tab;           /* text DFA: class map and row 0 */
	uint32_t bmap, btab;
	uint32_t lit;
	unsigned mul;                /* 1 when the map holds class*4, else 4 */
	unsigned bmul;
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

/* Put a DFA in the constants: class map (class * 4 when it fits a byte) and rows whose
 * entries are constant offsets of rows; returns the offset of row 0 in *tab.  arfscan.c
 * uses it too (grep_int.h). */
static void put_map(struct asm_builder *b, const struct dfa *d, uint32_t *map, unsigned *mul)
{
	uint8_t m[256];
	size_t w = (size_t)d->n_cls + 1;
	*mul = w * 4 <= 256 ? 1 : 4;
	for (int c = 0; c < 256; c++)
		m[c] = (uint8_t)(*mul == 1 ? d->cls[c] * 4 : d->cls[c]);
	*map = asm_const(b, m, 256, 1);
}

int grep_put_bdfa(struct asm_builder *b, const struct dfa *bd, uint32_t text_tab, uint32_t *map,
                  uint32_t *tab, unsigned *mul)
{
	if (!bd->rows_shared)
		return grep_put_dfa(b, bd, map, tab, mul);
	put_map(b, bd, map, mul);
	*tab = text_tab;
	return 0;
}

int grep_put_dfa(struct asm_builder *b, const struct dfa *d, uint32_t *map, uint32_t *tab,
                 unsigned *mul)
{
	size_t w = (size_t)d->n_cls + 1;
	put_map(b, d, map, mul);
	size_t n = (size_t)d->n_rows * w;
	uint32_t *t = malloc(n * sizeof *t);
	if (!t)
		return -1;
	/* the table's offset is known before its contents: constants are laid out in order */
	uint32_t base = asm_const(b, NULL, 0, 4);
	for (size_t i = 0; i < n; i++) {
		uint32_t v = d->t[i];
		t[i] = v < DFA_N_SPECIAL ? v : base + (uint32_t)(v * w * 4);
	}
	*tab = asm_const(b, t, n * 4, 4);
	free(t);
	return *tab == base ? 0 : -1;
}

/* row = T[row + class(data[p]) * 4]; p++ */
static void step(struct gen *g, uint32_t map, unsigned mul)
{
	get(g, L_P);
	asm_mem(B, OP_LD8U, (unsigned)g->data);
	if (map) {
		push(g, map);
		op(g, OP_ADD);
	}
	asm_mem(B, OP_LD8U, 2);
	if (mul == 4) {
		push(g, 2);
		op(g, OP_SHL);
	}
	get(g, L_ROW);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, 2);
	set(g, L_ROW);
	asm_linc(B, L_P, 1);
}

/* DFA_MAYBE (dfa_build_ascii_w): a line the table cannot decide ends the run with a
 * GREP_REC_REDO record; the client runs the file again on the exact path */
static void maybe_check(struct gen *g, const struct plan *pl)
{
	if (!pl->maybe)
		return;
	asm_label no = label(g);
	get(g, L_ROW);
	push(g, DFA_MAYBE);
	jump(g, OP_JNE, no);
	push(g, -1);                     /* GREP_REC_REDO */
	op(g, OP_OUTQ);
	push(g, 0);
	op(g, OP_OUTQ);
	if (pl->line_number) {
		push(g, 0);
		op(g, OP_OUTQ);
	}
	push(g, 0);
	op(g, OP_RET);
	bind(g, no);
}

/* le = offset of the terminator at or after local `from`, or end */
static void find_eol(struct gen *g, unsigned from, int eol)
{
	asm_label ok = label(g);
	get(g, from);
	get(g, L_END);
	get(g, from);
	op(g, OP_SUB);
	push(g, eol);
	asm_mem(B, OP_FINDB, (unsigned)g->data);
	tee(g, L_LE);
	push(g, -1);
	jump(g, OP_JNE, ok);
	get(g, L_END);
	set(g, L_LE);
	bind(g, ok);
}

/* A record: u64 offset (| REC_CONTEXT), u64 length, [u64 line number], the line's bytes. */
static void emit_rec(struct gen *g, const struct plan *pl, unsigned s, unsigned e,
                     unsigned lineno, int context)
{
	get(g, s);
	if (context) {
		push(g, (int64_t)REC_CONTEXT);
		op(g, OP_OR);
	}
	op(g, OP_OUTQ);
	get(g, e);
	get(g, s);
	op(g, OP_SUB);
	op(g, OP_OUTQ);
	if (pl->line_number) {
		get(g, lineno);
		op(g, OP_OUTQ);
	}
	get(g, s);
	get(g, e);
	get(g, s);
	op(g, OP_SUB);
	asm_mem(B, OP_OUTPUT, (unsigned)g->data);
}

/* Before context: up to pl->before lines above pos, none at or before last_end. */
static void emit_before(struct gen *g, const struct plan *pl)
{
	asm_label bc = label(g), bcw = label(g), bcw_done = label(g), bc_done = label(g);
	asm_label be = label(g), be_done = label(g);
	get(g, L_POS);
	set(g, L_Q);
	push(g, 0);
	set(g, L_K);
	bind(g, bc);
	get(g, L_K);
	push(g, pl->before);
	jump(g, OP_JGEU, bc_done);
	get(g, L_Q);
	get(g, L_LAST);
	jump(g, OP_JLEU, bc_done);
	asm_linc(B, L_Q, -1);            /* over the terminator of the line above */
	bind(g, bcw);
	get(g, L_Q);
	get(g, L_LAST);
	jump(g, OP_JLEU, bcw_done);
	get(g, L_Q);
	push(g, 1);
	op(g, OP_SUB);
	asm_mem(B, OP_LD8U, (unsigned)g->data);
	push(g, pl->eol);
	jump(g, OP_JEQ, bcw_done);
	asm_linc(B, L_Q, -1);
	jump(g, OP_JMP, bcw);
	bind(g, bcw_done);
	asm_linc(B, L_K, 1);
	jump(g, OP_JMP, bc);
	bind(g, bc_done);
	get(g, L_LINENO);
	get(g, L_K);
	op(g, OP_SUB);
	set(g, L_T);                     /* line number of the first context line */
	bind(g, be);
	get(g, L_Q);
	get(g, L_POS);
	jump(g, OP_JGEU, be_done);
	get(g, L_Q);
	get(g, L_POS);
	get(g, L_Q);
	op(g, OP_SUB);
	push(g, pl->eol);
	asm_mem(B, OP_FINDB, (unsigned)g->data);
	set(g, L_M);
	emit_rec(g, pl, L_Q, L_M, L_T, 1);
	asm_linc(B, L_T, 1);
	get(g, L_M);
	push(g, 1);
	op(g, OP_ADD);
	set(g, L_Q);
	jump(g, OP_JMP, be);
	bind(g, be_done);
}

static void gen_binary(struct gen *g, const struct plan *pl, asm_label binary)
{
	asm_label bline = label(g), bstep = label(g), at_end = label(g), bdone = label(g);
	asm_label special = label(g), skip = label(g), skip_done = label(g), classify = label(g);
	asm_label nsel = label(g), next = label(g);
	bind(g, binary);
	if (pl->binary_nomatch) {
		push(g, 1);
		op(g, OP_RET);
		return;
	}
	push(g, 0);
	set(g, L_POS);
	bind(g, bline);
	get(g, L_POS);
	get(g, L_END);
	jump(g, OP_JGEU, bdone);
	push(g, g->btab + (uint32_t)(pl->bd->start * (pl->bd->n_cls + 1) * 4));
	set(g, L_ROW);
	get(g, L_POS);
	set(g, L_P);
	bind(g, bstep);
	get(g, L_P);
	get(g, L_END);
	jump(g, OP_JGEU, at_end);
	step(g, g->bmap, g->bmul);
	get(g, L_ROW);
	push(g, DFA_N_SPECIAL);
	jump(g, OP_JGEU, bstep);
	bind(g, special);
	get(g, L_P);
	push(g, 1);
	op(g, OP_SUB);
	set(g, L_LE);
	get(g, L_ROW);
	push(g, DFA_EOL);
	jump(g, OP_JEQ, classify);
	/* matched before the byte at le: the piece goes on to the next '\n' or NUL */
	bind(g, skip);
	get(g, L_LE);
	get(g, L_END);
	jump(g, OP_JGEU, skip_done);
	get(g, L_LE);
	asm_mem(B, OP_LD8U, (unsigned)g->data);
	set(g, L_T);
	get(g, L_T);
	push(g, '\n');
	jump(g, OP_JEQ, skip_done);
	get(g, L_T);
	jump(g, OP_JZ, skip_done);
	asm_linc(B, L_LE, 1);
	jump(g, OP_JMP, skip);
	bind(g, skip_done);
	jump(g, OP_JMP, classify);
	bind(g, at_end);
	get(g, L_ROW);
	push(g, (pl->bd->n_cls) * 4);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, 2);
	set(g, L_ROW);
	get(g, L_END);
	set(g, L_LE);
	bind(g, classify);
	maybe_check(g, pl);
	get(g, L_ROW);
	jump(g, pl->invert ? OP_JZ : OP_JNZ, nsel);     /* DFA_MATCH is 0 */
	asm_linc(B, L_COUNT, 1);
	if (!pl->count_only || pl->max >= 0) {
		get(g, L_COUNT);
		push(g, pl->count_only ? pl->max : 1);
		jump(g, OP_JGEU, bdone);
	}
	bind(g, nsel);
	bind(g, next);
	get(g, L_LE);
	push(g, 1);
	op(g, OP_ADD);
	set(g, L_POS);
	jump(g, OP_JMP, bline);
	bind(g, bdone);
	get(g, L_COUNT);
	push(g, 2);
	op(g, OP_SHL);
	push(g, 1);
	op(g, OP_OR);
	op(g, OP_RET);
}

static void gen_main(struct gen *g, const struct plan *pl)
{
	asm_label line = label(g), done = label(g), binary = label(g), noskip = label(g);
	asm_label dfa_fast = label(g), dfa_slow = label(g), at_end = label(g), special = label(g);
	asm_label classify = label(g), nsel = label(g), next = label(g), at_max = label(g);
	asm_label lnl = label(g), lnl_done = label(g);
	int eol = pl->eol;
	uint32_t start = g->tab + (uint32_t)(pl->d->start * (pl->d->n_cls + 1) * 4);

	asm_mem(B, OP_RLEN, (unsigned)g->data);
	set(g, L_END);
	if (pl->binary_check) {
		push(g, 0);
		get(g, L_END);
		push(g, 0);
		asm_mem(B, OP_FINDB, (unsigned)g->data);
		push(g, -1);
		jump(g, OP_JNE, binary);
	}
	if (pl->binary_flag) {
		push(g, 0);
		get(g, L_END);
		push(g, 0);
		asm_mem(B, OP_FINDB, (unsigned)g->data);
		push(g, -1);
		op(g, OP_NE);
		set(g, L_BIN);
	}
	/* lastnl: just past the last terminator; lines starting before it need no end check */
	get(g, L_END);
	set(g, L_LASTNL);
	bind(g, lnl);
	get(g, L_LASTNL);
	jump(g, OP_JZ, lnl_done);
	get(g, L_LASTNL);
	push(g, 1);
	op(g, OP_SUB);
	asm_mem(B, OP_LD8U, (unsigned)g->data);
	push(g, eol);
	jump(g, OP_JEQ, lnl_done);
	asm_linc(B, L_LASTNL, -1);
	jump(g, OP_JMP, lnl);
	bind(g, lnl_done);

	bind(g, line);
	get(g, L_POS);
	get(g, L_END);
	jump(g, OP_JGEU, done);
	if (pl->lit) {
		asm_label back = label(g), back_done = label(g), rest = label(g);
		if (pl->after > 0) {
			get(g, L_AFTER);
			jump(g, OP_JNZ, noskip);
		}
		get(g, L_POS);
		get(g, L_END);
		get(g, L_POS);
		op(g, OP_SUB);
		if (pl->lit == 1 && !pl->lit_icase && !pl->lit_sets) {
			push(g, g->lit);        /* the byte itself, see grep_gen */
			asm_mem(B, OP_FINDB, (unsigned)g->data);
		} else {
			push(g, g->lit);
			push(g, pl->lit_sets ? 32 * pl->lit : pl->lit);
			asm_mem2(B, pl->lit_sets ? OP_FINDSET : pl->lit_icase ? OP_FINDSI : OP_FINDS,
			         (unsigned)g->data, 2);
		}
		tee(g, L_M);
		push(g, -1);
		/* -c -v: the lines after the last occurrence are all selected: count them */
		jump(g, OP_JEQ, pl->invert ? rest : done);
		/* pos starts a line: when no terminator lies between it and the candidate, that
		 * line is the candidate's, and the walk back is skipped.  Where most lines match,
		 * the candidate is mostly in the line at pos, and the walk (a byte at a time, half
		 * a line a match) was a fifth of the run; where few do, this costs one memchr of
		 * the line at pos. */
		get(g, L_POS);
		get(g, L_M);
		get(g, L_POS);
		op(g, OP_SUB);
		push(g, eol);
		asm_mem(B, OP_FINDB, (unsigned)g->data);
		push(g, -1);
		jump(g, OP_JNE, back);
		get(g, L_POS);
		set(g, L_M);
		jump(g, OP_JMP, back_done);
		bind(g, back);                  /* back to the start of the candidate's line */
		get(g, L_M);
		get(g, L_POS);
		jump(g, OP_JLEU, back_done);
		get(g, L_M);
		push(g, 1);
		op(g, OP_SUB);
		asm_mem(B, OP_LD8U, (unsigned)g->data);
		push(g, eol);
		jump(g, OP_JEQ, back_done);
		asm_linc(B, L_M, -1);
		jump(g, OP_JMP, back);
		bind(g, back_done);
		if (pl->line_number || pl->invert) {
			/* count the lines skipped: for -n, and for -c -v, which selects them all
			 * (a line without the literal cannot match) */
			asm_label cnt = label(g), cnt_done = label(g);
			bind(g, cnt);
			get(g, L_POS);
			get(g, L_M);
			get(g, L_POS);
			op(g, OP_SUB);
			push(g, eol);
			asm_mem(B, OP_FINDB, (unsigned)g->data);
			tee(g, L_T);
			push(g, -1);
			jump(g, OP_JEQ, cnt_done);
			if (pl->line_number)
				asm_linc(B, L_LINENO, 1);
			if (pl->invert)
				asm_linc(B, L_COUNT, 1);
			get(g, L_T);
			push(g, 1);
			op(g, OP_ADD);
			set(g, L_POS);
			jump(g, OP_JMP, cnt);
			bind(g, cnt_done);
		}
		get(g, L_M);
		set(g, L_POS);
		if (pl->lit_exact) {
			/* the line holds the pattern itself: matched, no DFA over it (a third of
			 * the run where most lines match); the line ends at the next terminator */
			find_eol(g, L_POS, eol);
			push(g, DFA_MATCH);
			set(g, L_ROW);
			jump(g, OP_JMP, classify);
		}
		if (pl->invert) {
			/* [pos, end) has no occurrence: each of its lines counts, the last one too
			 * when it has no terminator (it is not empty: pos < end) */
			asm_label skip_rest = label(g), rl = label(g), rl_last = label(g);
			jump(g, OP_JMP, skip_rest);
			bind(g, rest);
			bind(g, rl);
			get(g, L_POS);
			get(g, L_END);
			jump(g, OP_JGEU, done);
			get(g, L_POS);
			get(g, L_END);
			get(g, L_POS);
			op(g, OP_SUB);
			push(g, eol);
			asm_mem(B, OP_FINDB, (unsigned)g->data);
			tee(g, L_T);
			push(g, -1);
			jump(g, OP_JEQ, rl_last);
			asm_linc(B, L_COUNT, 1);
			get(g, L_T);
			push(g, 1);
			op(g, OP_ADD);
			set(g, L_POS);
			jump(g, OP_JMP, rl);
			bind(g, rl_last);
			asm_linc(B, L_COUNT, 1);
			jump(g, OP_JMP, done);
			bind(g, skip_rest);
		}
	}
	bind(g, noskip);
	get(g, L_POS);
	set(g, L_P);
	push(g, start);
	set(g, L_ROW);
	get(g, L_POS);
	get(g, L_LASTNL);
	jump(g, OP_JLTU, dfa_fast);
	/* the last line has no terminator: check the end before each byte */
	bind(g, dfa_slow);
	get(g, L_P);
	get(g, L_END);
	jump(g, OP_JGEU, at_end);
	step(g, g->map, g->mul);
	get(g, L_ROW);
	push(g, DFA_N_SPECIAL);
	jump(g, OP_JGEU, dfa_slow);
	jump(g, OP_JMP, special);
	bind(g, at_end);
	get(g, L_ROW);
	push(g, pl->d->n_cls * 4);
	op(g, OP_ADD);
	asm_mem(B, OP_LD32U, 2);
	set(g, L_ROW);
	get(g, L_END);
	set(g, L_LE);
	jump(g, OP_JMP, classify);
	/* the hot loop: every line before lastnl ends in a terminator, whose column is special */
	bind(g, dfa_fast);
	step(g, g->map, g->mul);
	get(g, L_ROW);
	push(g, DFA_N_SPECIAL);
	jump(g, OP_JGEU, dfa_fast);
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
		get(g, L_T);
		set(g, L_LE);
		jump(g, OP_JMP, classify);
		bind(g, not_eol);
		find_eol(g, L_T, eol);
	}
	bind(g, classify);                   /* the line is [pos, le) */
	maybe_check(g, pl);
	if (pl->line_number)
		asm_linc(B, L_LINENO, 1);
	get(g, L_ROW);
	jump(g, pl->invert ? OP_JZ : OP_JNZ, nsel);     /* DFA_MATCH is 0 */
	asm_linc(B, L_COUNT, 1);
	if (pl->stop_first) {
		push(g, 4);
		op(g, OP_RET);
	}
	if (pl->emit) {
		if (pl->before > 0)
			emit_before(g, pl);
		emit_rec(g, pl, L_POS, L_LE, L_LINENO, 0);
		if (pl->before > 0 || pl->after > 0) {
			get(g, L_LE);
			push(g, 1);
			op(g, OP_ADD);
			set(g, L_LAST);
		}
		if (pl->after > 0) {
			push(g, pl->after);
			set(g, L_AFTER);
		}
	}
	if (pl->max >= 0) {
		get(g, L_COUNT);
		push(g, pl->max);
		jump(g, OP_JGEU, at_max);
	}
	jump(g, OP_JMP, next);
	bind(g, nsel);
	if (pl->emit && pl->after > 0) {
		get(g, L_AFTER);
		jump(g, OP_JZ, next);
		asm_linc(B, L_AFTER, -1);
		emit_rec(g, pl, L_POS, L_LE, L_LINENO, 1);
		get(g, L_LE);
		push(g, 1);
		op(g, OP_ADD);
		set(g, L_LAST);
	}
	bind(g, next);
	get(g, L_LE);
	push(g, 1);
	op(g, OP_ADD);
	set(g, L_POS);
	jump(g, OP_JMP, line);
	bind(g, at_max);
	if (pl->emit && pl->after > 0) {
		/* grep prints the trailing context of the last match, matching lines included */
		asm_label tl = label(g);
		push(g, pl->after);
		set(g, L_K);
		bind(g, tl);
		get(g, L_K);
		jump(g, OP_JZ, done);
		get(g, L_LE);
		push(g, 1);
		op(g, OP_ADD);
		tee(g, L_POS);
		get(g, L_END);
		jump(g, OP_JGEU, done);
		find_eol(g, L_POS, eol);
		if (pl->line_number)
			asm_linc(B, L_LINENO, 1);
		emit_rec(g, pl, L_POS, L_LE, L_LINENO, 1);
		asm_linc(B, L_K, -1);
		jump(g, OP_JMP, tl);
	}
	bind(g, done);
	get(g, L_COUNT);
	push(g, 2);
	op(g, OP_SHL);
	get(g, L_LASTNL);                /* bit 1: the data does not end with a terminator */
	get(g, L_END);
	op(g, OP_NE);
	push(g, 1);
	op(g, OP_SHL);
	op(g, OP_OR);
	if (pl->binary_flag) {
		get(g, L_BIN);
		op(g, OP_OR);
	}
	op(g, OP_RET);
	if (pl->binary_check)
		gen_binary(g, pl, binary);
}

int grep_gen(struct grep *gr, char *err, size_t errlen)
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
		/* candidates only: the client decides selection, counts and context */
		pl.emit = 1;
		pl.max = -1;
		pl.binary_check = 0;
		pl.binary_flag = !o->text && !o->null_data;
	} else {
		pl.invert = o->invert;
		pl.count_only = o->count;
		pl.stop_first = o->quiet || o->list || o->list_nomatch;
		pl.emit = !pl.count_only && !pl.stop_first;
		pl.max = o->max_count;
		pl.before = pl.emit && o->before > 0 ? o->before : 0;
		pl.after = pl.emit && o->after > 0 ? o->after : 0;
		pl.binary_check = !o->text && !o->null_data;
		pl.binary_nomatch = o->binary_nomatch;
		pl.bd = gr->have_bdfa ? &gr->bdfa : NULL;
		if (pl.binary_check && !pl.bd && !pl.binary_nomatch) {
			snprintf(err, errlen, "no binary-file table");
			return -1;
		}
		/* every line without the literal is selected: -c without -m counts those lines
		 * between the literal's occurrences (gen_main); else each line runs the DFA */
		if (pl.invert && !(pl.count_only && pl.max < 0 && !pl.stop_first))
			pl.lit = 0;
	}

	struct gen gs = { 0 }, *g = &gs;
	g->b = asm_builder_new();
	if (!g->b) {
		snprintf(err, errlen, "memory exhausted");
		return -1;
	}
	g->data = asm_region(B, "data", ISA_ACC_RO);
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
	int f = asm_func_begin(B, "grep", 0, N_LOCALS);
	gen_main(g, &pl);
	asm_func_end(B);
	asm_export(B, "grep", f);
	if (asm_builder_finish(B, &gr->seg, &gr->seg_len, err, errlen) != 0)
		goto fail;
	asm_builder_free(B);
	return 0;
fail:
	if (!err[0])
		snprintf(err, errlen, "memory exhausted");
	asm_builder_free(B);
	return -1;
}
