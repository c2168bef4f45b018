/* grep.h: libgrep, the remote-grep pattern compiler.
 *
 * grep_compile turns grep patterns (GNU grep 3.8 semantics in the C locale: -F, -G, -E, with
 * -i -w -x -v and the output options) into a code segment that scans one read-only region
 * named "data" (one file's bytes) and outputs compact records of the lines grep would print.
 * grep_format turns those records into exactly the bytes GNU grep prints for that file.  The
 * segment runs wherever the file is: in arfd next to the file (arf grep), or in a local VM
 * (pngrep, arf grep --local).  docs/grep.md describes the segment and the record format.
 *
 * Segment: one export "grep", no arguments, imports region "data" (ro).  Fuel needed is at
 * most 4 per byte of data plus 64 per line; pass GREP_FUEL(len).  Output is bounded by the
 * data's size plus 24 bytes per line: GREP_OUT_CAP(len) is always enough.
 */
#ifndef GREP_H
#define GREP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum grep_syntax { GREP_FIXED, GREP_BASIC, GREP_EXTENDED };

struct grep_opts {
	int syntax;               /* enum grep_syntax */
	int icase;                /* -i, -y */
	int word;                 /* -w */
	int line;                 /* -x (wins over -w, as in grep) */
	int invert;               /* -v */
	int count;                /* -c */
	int list;                 /* -l */
	int list_nomatch;         /* -L */
	int quiet;                /* -q */
	int only;                 /* -o */
	int line_number;          /* -n */
	int byte_offset;          /* -b */
	int with_filename;        /* -H (1), -h (0): decided by the caller */
	int null_name;            /* --null: NUL after file names */
	int null_data;            /* -z: lines end with NUL */
	int text;                 /* -a: binary files as text */
	int binary_nomatch;       /* -I */
	int color;                /* --color=always (the caller resolves auto) */
	int64_t max_count;        /* -m NUM; negative: unlimited */
	int before, after;        /* -B, -A (-C sets both); negative: not given (0 still prints
	                           * "--" between groups, as in grep) */
	int initial_tab;          /* -T */
	int utf8;                 /* the locale is UTF-8 (grep_locale): characters, not bytes;
	                           * LC_CTYPE must be that locale while compiling and formatting */
	int no_walk_back;         /* the segment cannot walk back over earlier lines (arf grep:
	                           * they may lie in another extent): the caller adds -B's
	                           * lines (grep_lead_client) */
};

struct grep;

/* Compile n patterns (pats[i] of lens[i] bytes; grep splits -e/-f at newlines before: pass
 * one entry per line).  Returns 0 and *out, or -1 with grep's message in err (without the
 * "grep: " prefix, e.g. "Unmatched [, [^, [:, [., or [=").  Warnings grep prints but goes on
 * after ("warning: * at start of expression") are written to warn, one per line ("" if
 * none).  Out of memory is reported as "memory exhausted". */
int grep_compile(const char *const *pats, const size_t *lens, size_t n,
                 const struct grep_opts *o, struct grep **out, char *err, size_t errlen,
                 char *warn, size_t warnlen);
void grep_free(struct grep *g);

/* Print file names before lines (-H) or not: set after compiling, when -r meets its one
 * operand and finds a directory (struct grep_args name_if_dir). */
void grep_set_with_filename(struct grep *g, int on);

/* The size of the file about to be formatted (-1: not a regular file), for -T, which
 * aligns line numbers and byte offsets to its width. */
void grep_set_file_size(struct grep *g, int64_t size);

/* The segment (owned by g). */
const uint8_t *grep_segment(const struct grep *g, size_t *len);

/* Run the segment here over data[0..len) (local.c) on engine (enum vm_engine; 0: auto), its
 * records into out's buffer (reserved, reused across runs; grep_out_free).  0 with *value and
 * *out_len; -1 with a message in err (the segment did not load, or trapped); -2 when the
 * output could not be reserved (memory exhausted). */
struct grep_out {
	uint8_t *buf;
	size_t cap;
};
int grep_run_local(struct grep *g, int engine, const uint8_t *data, size_t len,
                   struct grep_out *out, int64_t *value, size_t *out_len, char *err,
                   size_t errlen);
void grep_out_free(struct grep_out *out);
/* How the pattern is matched, for --explain: "dfa (N states, M classes), literal "x"" ... */
void grep_describe(const struct grep *g, char *buf, size_t len);

#define GREP_FUEL(len)    (4 * (uint64_t)(len) + (1u << 20))
#define GREP_OUT_CAP(len) (25 * (uint64_t)(len) + 64)

/* What one file's run produced: the entry's result and its output records. */
struct grep_file_result {
	int matched;              /* some line selected (the file counts for the exit status) */
	int binary;               /* the file was treated as binary */
};

/* Format one file's run as grep prints it to f: name is what grep prints for the file (the
 * path, or the --label for standard input).  `value` and `rec` are the run's result and
 * output.  Returns 0, or -1 when the records are malformed (a broken segment or transport).
 * -2 when the exact matcher (back-references) gave up on a line: the caller prints grep's
 * "memory exhausted" and exits with status 2, as grep does when its regex engine runs out;
 * the lines before were printed.  Sets *res.  Writes "binary file matches" to err_f (grep writes it to stderr) as
 * "PROG: NAME: binary file matches". */
int grep_format(struct grep *g, const char *prog, const char *name, int64_t value,
                const uint8_t *rec, size_t rec_len, FILE *f, FILE *err_f,
                struct grep_file_result *res);

/* The offset just after the n-th line of p[0..len) that grep selects (-v included), or -1
 * when there are fewer (or the exact matcher gave up).  Lines are matched here, on the
 * client: for leaving a seekable standard input where grep -m leaves it. */
int64_t grep_selected_end(struct grep *g, const uint8_t *p, size_t len, int64_t n);

/* Separator state shared between files: grep prints "--" between context groups across
 * files too.  Reset by grep_compile. */

/* Exact path: the records are candidate lines that grep_format selects, so it needs all of a
 * file's records at once. */
int grep_is_exact(const struct grep *g);

/* UTF-8 context (-A, -B, -C without -a): a file is run on the fast path first, whose
 * records print what grep 3.8 prints unless one of their lines has an encoding error (grep
 * then prints other lines around it).  grep_needs_exact says so for a run's records (all of
 * them, or any part: 1 as soon as a part holds such a line; always 0 when g needs no such
 * check); the caller then drops what it has of the file and runs the file again from its
 * start with grep_exact_twin(g), formatting with it: the same patterns and options on the
 * exact path, compiled on first use and owned by g (g itself when it needs no twin; NULL
 * when out of memory).  Set -H/-h on g: the twin follows it. */
int grep_needs_exact(const struct grep *g, const uint8_t *rec, size_t rec_len);
struct grep *grep_exact_twin(struct grep *g);
/* The same for a caller that runs the file (or a stream's part and the rest) again from its
 * start, formatting every record of the new run as usual (pngrep): where the redo is
 * dfa_build_ascii_w's (a word assertion next to a byte >= 0x80, no context), the patterns
 * compiled with the decoder's DFA, on the fast path as before that table; else
 * grep_exact_twin(g).  Owned by g; NULL when out of memory. */
struct grep *grep_redo_twin(struct grep *g);
/* Whether grep_needs_exact can say 1 for g (the caller then holds a file's records until it
 * ends, rather than printing them as they come): UTF-8 context, or a GREP_REC_REDO record
 * (dfa_build_ascii_w's table, which ends the run there: what came before it stands). */
int grep_ctx_redo(const struct grep *g);
/* -B with no_walk_back (arf grep), lines printed: the arf segment sends no leading context;
 * the caller reads up to B lines before each selected line (back to the end of the record
 * before it, or to the file's start) and adds them to the records as context lines
 * (GREP_REC_CONTEXT) before formatting.  Where it cannot, grep_exact_twin(g) is the exact
 * path, which needs none. */
int grep_lead_client(const struct grep *g);

/* Streaming (not exact): print the records of one part of a run; *last_end (-1 before the
 * first part) carries the separator state to the next part.  grep_format_end then prints
 * what comes after the lines (-c, -l, -L, the binary message) from the run's value; rec holds
 * all the records in the exact path, none otherwise.  Returns 0, -1 (malformed) or -2
 * (memory exhausted, as grep_format). */
int grep_format_records(struct grep *g, const char *name, const uint8_t *rec, size_t rec_len,
                        FILE *f, int64_t *last_end);
int grep_format_end(struct grep *g, const char *prog, const char *name, int64_t value,
                    const uint8_t *rec, size_t rec_len, FILE *f, FILE *err_f,
                    struct grep_file_result *res, int64_t *last_end);

/* A file in parts (pngrep's standard input, streamed): grep_format_part prints one part's
 * records (value and rec as for grep_format, offsets and line numbers already counted from the
 * file's start).  Parts may overlap, to carry context: lines before *last_end were printed and
 * are skipped, and selected lines before pt->new_from were counted by an earlier part.  At
 * most pt->limit new lines are selected (-m across parts, -1: no limit), and after the last
 * of them only the trailing context that this part holds is printed.  grep_format_done then
 * prints what follows the lines (-c, -l, -L, the binary message) for the file's count and
 * binary flag.  Return values as grep_format. */
struct grep_part {
	int64_t new_from;        /* in: offset of the first line no earlier part ran */
	int64_t limit;           /* in: lines that may still be selected; -1: no limit */
	int64_t selected;        /* out: new lines selected */
	int64_t last_selected;   /* out: offset of the last selected line (new or not); -1 */
	int whole;               /* in: rec holds the file from its start (exact path) and the
	                          * lines before *last_end were printed already, as the fast
	                          * path prints them (arf grep's streamed UTF-8 context, then a
	                          * redo): the lines and "--" before it are not printed again */
};
int grep_format_part(struct grep *g, const char *name, int64_t value, const uint8_t *rec,
                     size_t rec_len, FILE *f, int64_t *last_end, struct grep_part *pt);
/* Print one line (at offset off, number lineno) as a context line: the trailing context of
 * the last line -m selected, when it lies past the part that selected it. */
int grep_format_context_line(struct grep *g, const char *name, const uint8_t *p, size_t n,
                             uint64_t off, uint64_t lineno, FILE *f, int64_t *last_end);
int grep_format_done(struct grep *g, const char *prog, const char *name, int64_t count,
                     int binary, FILE *f, FILE *err_f, struct grep_file_result *res);

/* ---- the command line: GNU grep 3.8's options, shared by pngrep and arf grep (options.c) ----
 * Short options bundle ("-inA3", "-e PAT", "-ePAT"); -NUM is -C NUM; long ones are
 * "--max-count=3" or "--max-count 3", or any unambiguous beginning of the name ("--max=3"), as
 * getopt_long takes them; "--" ends the options; -e and -f patterns are split at newlines;
 * without -e or -f the first operand is the pattern. */
struct grep_strv {            /* strings (malloc'd, NUL-terminated) and their lengths */
	char **v;
	size_t *len;
	size_t n, cap;
};

struct grep_pat_src {         /* where a pattern came from: -f FILE's line, or -e (NULL) */
	const char *file;         /* into argv */
	size_t line;              /* from 1 */
};

struct grep_args {
	struct grep_opts o;       /* with_filename and color decided; no_walk_back left 0 */
	struct grep_strv pats;    /* one per line, as grep_compile takes them */
	struct grep_pat_src *pat_src;  /* one per pattern */
	size_t pat_src_cap;
	struct grep_strv files;   /* the operands after the pattern */
	struct grep_strv file_globs;   /* --include=GLOB as "+GLOB", --exclude=GLOB as "-GLOB",
	                                * in the order given */
	struct grep_strv exclude_dir;  /* --exclude-dir=GLOB */
	const char *label;        /* --label (points into argv), or NULL */
	int recursive, deref;     /* -r, -R */
	int name_if_dir;          /* -r with one operand, -H/-h not given: names are printed
	                           * when it is a directory (grep_set_with_filename), not for a
	                           * file */
	int no_messages;          /* -s */
	int line_buffered;        /* --line-buffered: the output is flushed after each line */
};

/* A program's own long option, "--name" or "--name=VALUE" / "--name VALUE" (has_arg).  When
 * given, *val is set to its value (into argv), "" for a flag: the last one given wins. */
struct grep_extra_opt {
	const char *name;         /* without the "--"; NULL ends the table */
	int has_arg;
	const char **val;
};

/* Parse argv[1..argc) as GNU grep does.  extra: the caller's own long options (NULL: none).
 * Returns 0; 1 for --help (the caller prints its usage and exits 0; as in grep, every
 * argument is read first, and an error in any wins); or -1 after writing grep's message to
 * err_f, each line starting with prog
 * ("PROG: invalid max count argument", the usage hint where grep adds it): grep exits with
 * status 2.  -f reads its file (standard input for "-") here.  Whatever it returns, *ga is
 * freed by grep_args_free. */
int grep_args_parse(struct grep_args *ga, int argc, char **argv,
                    const struct grep_extra_opt *extra, const char *prog, FILE *err_f);
void grep_args_free(struct grep_args *ga);

/* Whether grep would select no line of any file: -m 0, no pattern at all (-f /dev/null)
 * without -v, or only the empty pattern with -v (and neither -x nor -w).  grep then exits with status 1 at once, reading nothing, unless -L asks for
 * the files without a selected line: it opens each (errors as usual) and names it. */
int grep_args_select_none(const struct grep_args *ga);
/* Whether -L lists files here: not under -q, nor when standard output is /dev/null (grep
 * then behaves as if -L were not given: -m 0 exits at once). */
int grep_args_lists_files(const struct grep_args *ga);

/* --include, --exclude, --exclude-dir: whether a file (a directory) is searched, as grep
 * decides.  cmdline 0, a name met while recursing: its globs are matched against its last
 * part; 1, an operand: against the whole name or what follows any of its slashes.  Of
 * --include and --exclude, the last that matches decides; when none does, the file is
 * searched unless the first of them is an --include.  Standard input is never filtered; grep
 * checks an operand once it has opened it (an error comes first), and a directory operand
 * against --exclude-dir even without -r, except the "." that -r searches without operands. */
int grep_args_want_file(const struct grep_args *ga, const char *name, int cmdline);
int grep_args_want_dir(const struct grep_args *ga, const char *name, int cmdline);

/* What both programs do with the parsed command line.  grep_args_compile: grep_compile of
 * ga's patterns and options, its warnings and error written to err_f as grep writes them
 * ("PROG: ..."): 0, or -1 (grep exits with status 2).  grep_explain (--explain): the
 * pattern's description, note (NULL: none) as a comment line, then the disassembly of seg
 * to out: 0, or -1 with the message on err_f. */
int grep_args_compile(const struct grep_args *ga, const char *prog, FILE *err_f,
                      struct grep **g);
/* The locale, as grep reads it (setlocale(LC_ALL, ""), nl_langinfo(CODESET)): sets ga->o.utf8
 * for a UTF-8 locale and returns 0; 0 for C/POSIX (also when the named locale is not
 * installed: grep then runs in C too); -1 after a message on err_f for any other character set
 * (ISO-8859-1, EUC-JP...), which is not supported (grep exits with status 2).  Call it once,
 * before grep_args_compile: it changes the process's locale. */
int grep_args_locale(struct grep_args *ga, const char *prog, FILE *err_f);
int grep_explain(const struct grep *g, const uint8_t *seg, size_t seg_len, const char *note,
                 const char *prog, FILE *out, FILE *err_f);

/* ---- arf grep: one file of an ARF image, scanned in arfd (arfscan.c, docs/grep.md) ----
 * The segment imports region "arf" and exports "grep" with GREP_ARF_NARGS arguments: the
 * file's inode, then the state (struct grep_arf_state, in order: zeros except bin = row =
 * -1 to start), then out_max (stop at a line once the output passed it), scan_max (stop
 * once that many bytes of the file were scanned) and end (0, or a file offset at a line's
 * start: the text scan takes the file as ending there, so a literal skip or a line count
 * never runs past it; arf grep on a cluster scans a window of an object so).  The value is 0, or a negative errno
 * (ENOENT, EISDIR, EINVAL: not a regular file, EIO: damaged extents).  The output is
 * records, then a trailer of GREP_ARF_TRAILER bytes: u64 more (1: run again with the state),
 * then the state.  Records flagged GREP_REC_SCRATCH are copies of lines that straddle
 * extents, scanned there; the formatter skips them.  Needs no_walk_back in the options. */
#define GREP_REC_SCRATCH (1ull << 62)
#define GREP_REC_CONTEXT (1ull << 63)   /* a record's offset word: a context line */
/* A record whose offset word is all ones (length 0, line number 0) ends a run that met a
 * line its table cannot decide (UTF-8 -w over ASCII patterns: grep.c maybe_redo):
 * grep_needs_exact says 1, the file runs again with grep_exact_twin.  It is flagged
 * scratch too, so a formatter skips it. */
#define GREP_REC_REDO    UINT64_MAX
#define GREP_ARF_NARGS   12
struct grep_arf_state {
	int64_t pos, lineno, count, after, stop, bin, row, skip, noeol;
};
#define GREP_ARF_TRAILER (8 * (1 + 9))
/* It also exports "grep_batch" (n, out_max, scan_max), the first runs of n files whose
 * inodes are u64s in the args region: each file's output (records, trailer; nothing for an
 * error) is followed by u64 value and u64 the offset where that output began, and the run
 * ends with u64 k, the number of files run (k <= n).  It stops after a file that is not done
 * (more in its trailer), or once the sizes scanned reach scan_max; files k.. are left. */
#define GREP_ARF_BATCH_NARGS 3
int grep_arf_segment(struct grep *g, const uint8_t **seg, size_t *len, char *err,
                     size_t errlen);

#endif
