/* vm.h: load, verify and run Active RDMA code segments against bound memory regions.
 *
 * A struct vm holds what a host exports: named regions (base, length, access) and named host
 * hooks (C functions with a signature, called through libffi).  vm_load decodes a segment,
 * links its imports against those bindings, verifies every function and prepares it for the
 * interpreter and, on x86-64 Linux, the JIT (vm_set_engine).  A loaded struct vm_prog is immutable: any number of threads may vm_run it at
 * once, each run keeping its own state.  Bindings must not change while programs loaded from
 * the vm exist (programs keep the region bases they were linked with).
 *
 * Errors: functions return 0 or a negative VM_E* code; detail goes to the caller's buffer.
 */
#ifndef VM_H
#define VM_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"

enum vm_err {
#define ERR(name, value, msg) VM_E##name = value,
#include "err.def"
#undef ERR
	VM_ECOUNT
};
const char *vm_strerror(int err);   /* accepts err or -err */

struct vm;
struct vm_prog;

struct vm *vm_new(void);
void vm_free(struct vm *vm);

/* Engines that run a program: the interpreter (vm/interp.c) or the x86-64 JIT
 * (vm/jit_x86_64.c).  Both give the same results, traps, output and fuel use.
 *   VM_ENGINE_AUTO    the JIT where it exists and compiled the program, else the interpreter
 *   VM_ENGINE_INTERP  always the interpreter; vm_load does not compile
 *   VM_ENGINE_JIT     always the JIT; vm_load fails with -VM_ENOJIT (and the reason) when it
 *                     cannot compile the segment, e.g. on other architectures
 * The default of a new vm is VM_ENGINE_AUTO.  vm_set_engine affects programs loaded after it;
 * returns 0 or -VM_EINVAL. */
enum vm_engine { VM_ENGINE_AUTO, VM_ENGINE_INTERP, VM_ENGINE_JIT, VM_ENGINE_COUNT };
int vm_set_engine(struct vm *vm, int engine);
const char *vm_engine_name(int engine);    /* "auto", "interp", "jit"; "?" out of range */

/* Export a region to segments that import it by name.  access is ISA_ACC_RO or ISA_ACC_RW;
 * a segment importing rw may only link against an rw region.  base must stay valid while
 * programs linked against it exist, and an rw region's base must be 8-byte aligned (atomics
 * on offsets that are multiples of 8 are then aligned words); -VM_EINVAL otherwise. */
int vm_bind_region(struct vm *vm, const char *name, void *base, uint64_t len, unsigned access);

/* A region whose bytes live elsewhere (another machine's memory), reached through callbacks:
 * this is how a client runs a segment locally against a server's memory ("local placement",
 * the plain-RDMA way).  Loads go through a small per-run read cache of REMOTE_BLOCK-sized
 * blocks, stores are written through, atomics are delegated whole (so they stay atomic at
 * the owner), bulk operations fetch their range.  Results are identical to running where
 * the memory is; only the cost differs.  Programs linking a remote region run in the
 * interpreter.  Each callback returns 0, or -1 with a message in err (the run then traps
 * 'remote' with that message).  Callbacks may be called from any thread running the vm. */
struct vm_remote_ops {
	int (*read)(void *user, const char *region, uint64_t off, void *dst, uint64_t len,
	            char *err, size_t errlen);
	int (*write)(void *user, const char *region, uint64_t off, const void *src, uint64_t len,
	             char *err, size_t errlen);
	/* op is OP_CAS (a = expected, b = new) or OP_FADD (a = delta); *old the previous value */
	int (*atomic)(void *user, const char *region, int op, uint64_t off, uint64_t a, uint64_t b,
	              uint64_t *old, char *err, size_t errlen);
};
#define VM_REMOTE_BLOCK 1024        /* bytes fetched per cache miss */
#define VM_REMOTE_MAX_BULK (64u << 20) /* largest range one bulk operation may fetch */
int vm_bind_remote_region(struct vm *vm, const char *name, uint64_t len, unsigned access,
                          const struct vm_remote_ops *ops, void *user);

/* A host hook is a C function whose first parameter is struct vm_hook_ctx *, followed by the
 * arguments its signature declares (isa.h: "ll:l" is int64_t f(struct vm_hook_ctx *, int64_t,
 * int64_t)).  Segments import hooks by name and signature; a mismatch is a link error. */
struct vm_hook_ctx;
int vm_bind_hook(struct vm *vm, const char *name, void *fn, const char *sig, void *user);
/* Mark the bound hook `name` as one that may block (sleep, wait for I/O): a run's pending
 * vm_run_opts.on_slow is called before every call of it, so the host can move the thread's
 * other duties away first.  -VM_EINVAL when no hook of that name is bound. */
int vm_hook_blocks(struct vm *vm, const char *name);

/* For use inside a hook: the user pointer given to vm_bind_hook; the run's opaque pointer
 * (vm_run_opts.user); a bounds-checked view of [off, off+len) of a region of the running
 * segment (region index as in isa.h, NULL if out of bounds, or if write is asked of a
 * read-only region); and failing the hook, which ends the run with trap kind 'hook' and the
 * message. */
void *vm_hook_user(struct vm_hook_ctx *ctx);
void *vm_hook_run_user(struct vm_hook_ctx *ctx);
void *vm_hook_mem(struct vm_hook_ctx *ctx, unsigned region, uint64_t off, uint64_t len, int write);
void vm_hook_fail(struct vm_hook_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Decode, link and verify a segment.  On success *out is a program (vm_prog_free).  On failure
 * returns -VM_EMALFORMED, -VM_ELINK, -VM_EVERIFY or -VM_ENOMEM with a message in err, e.g.
 * "verify: function main at pc 12 (add): stack underflow (depth 1, needs 2)". */
int vm_load(struct vm *vm, const void *seg, size_t len, struct vm_prog **out, char *err,
            size_t errlen);
void vm_prog_free(struct vm_prog *prog);

/* The decoded segment behind a program (read-only) and its id (SHA-256 of its bytes). */
const struct isa_seg *vm_prog_seg(const struct vm_prog *prog);
const uint8_t *vm_prog_id(const struct vm_prog *prog);

/* NULL when the JIT compiled the program, else why not ("not compiled: the vm's engine is
 * interp", "jit: not available on this architecture", ...).  The string lives as long as prog. */
const char *vm_prog_jit_error(const struct vm_prog *prog);

/* The machine code the JIT made of function fi, for listings (pndis --jit).  marks[i] tells
 * where the code of translated instruction i starts (off, bytes from code), the bytecode pc
 * it came from and its name; they are in increasing order of off.  Before marks[0] is the
 * prologue; from body_len to len, the trap stubs.  Returns 0 and fills *out
 * (out->marks is malloc'd, freed by the caller; code belongs to prog), -VM_ENOJIT when the
 * program was not compiled, -VM_EINVAL for a bad fi, -VM_ENOMEM. */
struct vm_jit_mark { uint32_t off, pc; const char *name; };
struct vm_jit_listing {
	const uint8_t *code;
	size_t len, body_len;
	uint32_t n_marks;
	struct vm_jit_mark *marks;
};
int vm_prog_jit_listing(const struct vm_prog *prog, unsigned fi, struct vm_jit_listing *out);

/* The interpreter's code of function fi, for listings and tests (test_diff counts the
 * superinstructions its programs make): for each translated instruction i < cap, names[i] is
 * the name of its handler ("ADD_RI"; at the first instruction of a superinstruction its name,
 * "SHLI_ADDR_LD32U", while the instructions it takes in keep their own though they are not
 * dispatched) and pcs[i] the bytecode pc it came from (a trap there reports that pc).  Either
 * array may be NULL; the names are static strings.  Returns the number of translated
 * instructions, or -VM_EINVAL for a bad fi. */
int vm_prog_xops(const struct vm_prog *prog, unsigned fi, const char **names, uint32_t *pcs,
                 uint32_t cap);

/* Find an exported entry by name: returns its function index (>= 0) and its argument count
 * in *n_args, or -VM_ENOENTRY. */
int vm_prog_entry(const struct vm_prog *prog, const char *name, unsigned *n_args);

struct vm_run_opts {
	const void *args;          /* argument bytes, region 'args' (read-only); may be NULL */
	uint64_t args_len;
	void *out;                 /* output buffer, region 'out'; may be NULL if out_cap is 0 */
	uint64_t out_cap;          /* output limit in bytes: appending or storing beyond it traps
	                            * 'output_full'; loads from out see only what was written
	                            * (beyond that: 'bounds') */
	uint64_t fuel;             /* budget of backward jumps and calls; 0 means VM_DEFAULT_FUEL */
	void *user;                /* handed to hooks (vm_hook_run_user) */
	int engine;                /* enum vm_engine: 0 (AUTO) = as the program was loaded;
	                            * JIT on a program the JIT did not compile: -VM_ENOJIT */
	/* Bounds on the run's wall-clock time, for hosts that run segments of strangers.  They
	 * are looked at whenever VM_FUEL_CHUNK units of fuel have been spent and after every hook
	 * call, never on the paths a loop takes otherwise, so they cost nothing measurable;
	 * between two looks a run may go on for one chunk of fuel (a tight loop: well under a
	 * millisecond; a loop of bulk operations over large ranges: longer). */
	uint64_t deadline_ns;      /* CLOCK_MONOTONIC ns: past it the run traps 'time'; 0: none */
	const _Atomic uint64_t *cancel_at; /* CLOCK_MONOTONIC ns from which the run traps
	                            * 'cancelled': another thread sets it (or moves it earlier)
	                            * while the run goes on; 0: not set; NULL: none */
	uint64_t hook_ns_per_fuel; /* a hook costs one unit of fuel per this many ns it takes, so
	                            * fuel bounds the time spent in hooks (a sleeping hook) as it
	                            * bounds loops; a run whose fuel cannot pay traps 'fuel' at the
	                            * hcall.  0: hooks cost no fuel (runs are then deterministic) */
	/* For a host that starts every run on a thread with other duties and moves those duties
	 * elsewhere only when a run turns out long (arfd runs requests on the thread that read
	 * them): on_slow(slow_arg) is called once, on the run's own thread, at the first look at
	 * the clock at or after slow_at_ns (CLOCK_MONOTONIC).  Until it is called the VM looks
	 * every VM_SLOW_CHUNK units of fuel (and after every hook call), not every
	 * VM_FUEL_CHUNK.  NULL: none. */
	void (*on_slow)(void *slow_arg);
	void *slow_arg;
	uint64_t slow_at_ns;
};
#define VM_DEFAULT_FUEL   100000000ull
#define VM_FUEL_CHUNK     65536     /* fuel between two looks at deadline and cancel_at */
#define VM_SLOW_CHUNK     2048      /* ... while on_slow waits: tens of microseconds */
#define VM_MAX_CALL_DEPTH 256       /* calls nested below the entry; one more traps 'stack' */
#define VM_STACK_SLOTS    8192      /* 64-bit frame slots of one run: each call needs its
                                     * callee's n_locals + max_stack above the caller's
                                     * operands; running out is trap 'stack' */
#define VM_HOOK_MSG_LEN   200

/* The frame region: a segment that imports a region of this name (rw) gets scratch memory
 * of its own for each run, which no host binds (vm_bind_region refuses the name).  pncc puts
 * the frames of C functions that take a stack address there (docs/cc.md, "Stack memory").
 * Its length is VM_FRAME_FIRST + VM_FRAME_SIZE for each activation of the segment's longest
 * chain of calls (VM_FRAME_BYTES when its call graph has a cycle).  A run starts with it all
 * zero but its first word, VM_FRAME_FIRST (the frame pointer a segment keeps there); when
 * the run ends the VM zeroes it again, so no run ever sees the bytes of another.  The memory
 * belongs to the thread (one allocation of VM_FRAME_BYTES, reused). */
#define VM_FRAME_REGION   "ar.frame"
#define VM_FRAME_SIZE     512       /* bytes of one C frame (clang's BPF stack) */
#define VM_FRAME_FIRST    8         /* offset of the first frame: word 0 is the pointer */
#define VM_FRAME_BYTES    (VM_FRAME_FIRST + (VM_MAX_CALL_DEPTH + 1) * VM_FRAME_SIZE)

struct vm_trap {
	int kind;                  /* enum isa_trap; ISA_TRAP_NONE when the run returned */
	uint32_t code;             /* user trap code (trap instruction) */
	uint32_t func;             /* function index and bytecode offset of the trapping insn */
	uint32_t pc;
	uint32_t line;             /* source line from the segment's line table, 0 if unknown */
	char msg[VM_HOOK_MSG_LEN]; /* hook failure message, or empty */
};

struct vm_result {
	int64_t value;             /* what the entry returned (when trap.kind is NONE) */
	uint64_t out_len;          /* bytes written to opts.out */
	uint64_t fuel_used;
	struct vm_trap trap;
};

/* Run function `entry` (from vm_prog_entry, or any function index) with n_args arguments.
 * Returns 0 when the entry returned, -VM_ETRAP when a trap stopped it (res->trap says which,
 * res->out_len what was written before), -VM_EARGS / -VM_EINVAL for bad parameters, -VM_ENOMEM (the frame region),
 * -VM_ENOJIT when opts->engine asks for the JIT and prog was not compiled.
 * Never touches memory outside the bound regions, args and out. Thread-safe per prog. */
int vm_run(const struct vm_prog *prog, unsigned entry, const int64_t *argv, unsigned n_args,
           const struct vm_run_opts *opts, struct vm_result *res);

/* Format a trap as one line: "trap bounds (memory access out of bounds) in main at pc 12,
 * line 7".  Returns buf. */
char *vm_trap_str(const struct vm_prog *prog, const struct vm_trap *trap, char *buf, size_t len);

#endif
