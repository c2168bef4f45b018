/* fuzz_spin.c: libFuzzer target for the spin gate's parsers (net/pn_spin.c) of what the
 * kernel shows: cgroup v2 cpu.max, v1 cpu.cfs_quota_us with cpu.cfs_period_us, and
 * /proc/loadavg.  A container can hand a process any bytes there (a bind mount, a
 * hostile runtime).  The input is split at its first NUL into two texts.  Whatever they
 * answer must be -1 (not understood), INFINITY (no limit) or a finite CPU count >= 0, and a
 * runnable count -1 or >= 0; anything else aborts.  Build and run with `make fuzz`.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pn_int.h"

static void check_cpus(double v)
{
	if (!(v == -1 || isinf(v) || (isfinite(v) && v >= 0)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char a[256], b[256];
	size_t n = size < sizeof a - 1 ? size : sizeof a - 1;
	memcpy(a, data, n);
	a[n] = '\0';
	size_t la = strlen(a), rest = size > la + 1 ? size - la - 1 : 0;
	size_t m = rest < sizeof b - 1 ? rest : sizeof b - 1;
	memcpy(b, data + (size > la + 1 ? la + 1 : size), m);
	b[m] = '\0';
	check_cpus(pn_spin_parse_cpu_max(a));
	check_cpus(pn_spin_parse_cfs(a, b));
	int r = pn_spin_parse_loadavg(a);
	if (r < -1)
		abort();
	return 0;
}
