/* native.h: the benchmark kernels written in C, the baseline the VM is measured against.
 *
 * native.c is its own translation unit compiled with gcc -O2, and the harness is linked
 * without LTO, so none of these is inlined into the timing loop or specialised for the
 * harness's constant sizes.  Each mirrors one kernel in bench/vm/<name>.pna exactly.
 */
#ifndef BENCH_NATIVE_H
#define BENCH_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#define CHASE_END UINT64_MAX    /* next offset that ends a chase list */
#define BT_KEYS   256           /* btree: u32 keys per node (btree.c) */
#define SORT_RUN  64            /* rsort: records per sorted run (rsort.c) */

uint64_t native_isum(uint64_t n);
uint64_t native_count_nl(const uint8_t *p, size_t len);
uint64_t native_count_nl_memchr(const uint8_t *p, size_t len);
uint64_t native_fnv1a(const uint8_t *p, size_t len);
uint64_t native_chase(const uint8_t *nodes, uint64_t head);
uint64_t native_varint(const uint8_t *p, size_t len);
uint64_t native_hprobe(const uint8_t *tab, size_t tab_len, const uint8_t *keys,
                       const uint8_t *q, size_t q_len);
uint64_t native_bitmap(const uint8_t *bits, size_t len);
uint64_t native_btree(const uint8_t *nodes, size_t nodes_len, const uint8_t *q, size_t q_len);
uint64_t native_rsort(const uint8_t *recs, size_t len);
uint64_t native_fib(uint64_t n);

extern const char native_compiler[];    /* __VERSION__ of the compiler that built native.c */

#endif
