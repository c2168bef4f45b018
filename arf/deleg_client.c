/* deleg_client.c: a client's side of delegation on a cluster (arf_cluster.h,
 * docs/cluster.md "Delegation"): a read sent to the metadata server, stripe piece by piece,
 * each answered by the data server that holds it (deleg.c's route forwards it there). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arc.h"
#include "arf_cluster.h"
#include "arf_seg.h"
#include "isa.h"

int64_t arf_cl_read_delegated(struct arc *meta, struct arf_seg *route, const void *stripe,
                              size_t stripe_len, const struct arf_cluster_desc *desc,
                              const struct arf_cl_layout *lay, uint64_t ino, uint64_t off,
                              void *buf, size_t len, char *msg, size_t msglen)
{
	/* route takes a file's own layout from its inode; the unit sent is for the others
	 * (and sizes the reply) */
	uint32_t unit = lay->unit;
	uint8_t id[AR_ID_LEN];
	isa_seg_id(stripe, stripe_len, id);
	bool whole = false;                /* a data server lacked stripe.pno: send it along */
	size_t done = 0;
	while (done < len) {
		/* route's last argument: the layout's rotation in the high half (deleg.c) */
		int64_t args[5] = { (int64_t)ino, (int64_t)(off + done), (int64_t)(len - done),
		                    (int64_t)unit,
		                    (int64_t)((uint64_t)(desc->layout == ARF_LAYOUT_ROTATE) << 32 |
		                              desc->n) };
		struct arc_exec x = { .seg = route->bytes, .seg_len = route->len, .seg_id = route->id,
		                      .entry = "route", .args = args, .n_args = 5,
		                      .argbytes = whole ? stripe : (const void *)id,
		                      .argbytes_len = whole ? stripe_len : AR_ID_LEN,
		                      /* route's output is the request it forwards (stripe.pno
		                       * whole, maybe); the data server's reply is at most a unit */
		                      .out_max = unit > stripe_len + 4096 ? unit :
		                                 stripe_len + 4096,
		                      .delegated = 1, .wait_ms = ARF_CLUSTER_TIMEOUT_MS };
		int rc = arc_exec(meta, &x);
		if (rc == -AR_ENOSEG && !whole) {
			free(x.out);
			whole = true;
			continue;
		}
		if (rc == -AR_ETIMEDOUT && unit && desc->n) {
			/* the forward was lost (the data server died with it in its connection) */
			uint64_t k = arf_cl_server(lay->first, desc->n, (off + done) / unit);
			snprintf(msg, msglen, "read at %llu: no reply from data server %llu (%s) "
			         "within %d ms", (unsigned long long)(off + done), (unsigned long long)k,
			         desc->server[k], ARF_CLUSTER_TIMEOUT_MS);
			free(x.out);
			return -EIO;
		}
		if (rc != 0) {
			snprintf(msg, msglen, "read at %llu: %s", (unsigned long long)(off + done),
			         arc_errmsg(meta));
			free(x.out);
			return -EIO;
		}
		if (x.value < 0) {
			snprintf(msg, msglen, "read at %llu: %s", (unsigned long long)(off + done),
			         strerror((int)-x.value));
			free(x.out);
			return x.value;
		}
		if (x.value == 0) {
			free(x.out);
			break;                     /* the end of the file */
		}
		if ((uint64_t)x.value > len - done || x.out_len != (uint64_t)x.value) {
			snprintf(msg, msglen, "read at %llu: %lld bytes, %llu of output",
			         (unsigned long long)(off + done), (long long)x.value,
			         (unsigned long long)x.out_len);
			free(x.out);
			return -EIO;
		}
		memcpy((char *)buf + done, x.out, (size_t)x.value);
		free(x.out);
		done += (size_t)x.value;
	}
	return (int64_t)done;
}
