/* arf_cli.h: helpers shared by the `arf` command's subcommands (mount, import, export, grep). */
#ifndef ARF_CLI_H
#define ARF_CLI_H

/* Where segment file name (ops.pno, data.pno, statfs.pno) is: $env if set, else arfseg/
 * beside the running program (BUILD/arf -> BUILD/arfseg/NAME), else ../lib/activerdma/arfseg/
 * beside it (where make install puts them), else build/arfseg/NAME.
 * malloc'd; NULL when out of memory. */
char *arf_seg_path(const char *env, const char *name);

/* "ENDPOINT:/PATH" (tcp:HOST:PORT:/dir/file) -> *endpoint (malloc'd) and *path (inside s,
 * starting at the '/'): 0, or -1 when s has no ":/" after a non-empty endpoint. */
int arf_split_remote(const char *s, char **endpoint, const char **path);

/* A size: decimal, 0x hex or 0 octal, optionally K, M, G or T (binary): 0, or -1. */
#include <stdint.h>
int arf_parse_size(const char *s, uint64_t *out);

#endif
