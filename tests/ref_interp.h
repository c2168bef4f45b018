/* ref_interp.h: the naive reference interpreter used by the differential tests. */
#ifndef REF_INTERP_H
#define REF_INTERP_H

#include "isa.h"
#include "vm.h"

struct ref_region {
	uint8_t *base;
	uint64_t len;
};

/* Run function `entry` of a verified segment without hooks; regions[i] is import i.
 * Same contract and results as vm_run (value, out_len, fuel_used, trap kind/func/pc/code). */
int ref_run(const struct isa_seg *seg, const struct ref_region *regions, uint32_t entry,
            const int64_t *argv, const struct vm_run_opts *opts, struct vm_result *res);

#endif
