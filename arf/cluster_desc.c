/* cluster_desc.c: the parts of a cluster (arf_cluster.h) that need no server: the
 * description's text (parse, format) and the stripe layout's arithmetic. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_cluster.h"

static bool endpoint_ok(const char *s)
{
	return !strncmp(s, "tcp:", 4) || !strncmp(s, "tls:", 4) || !strncmp(s, "udp:", 4) ||
	       !strncmp(s, "rdma:", 5);
}

int arf_cluster_parse(const char *text, size_t len, struct arf_cluster_desc *d, char *err,
                      size_t errlen)
{
	memset(d, 0, sizeof *d);
	d->unit = ARF_STRIPE_DEFAULT;
	if (len > ARF_CLUSTER_FILE_MAX) {
		snprintf(err, errlen, "%zu bytes (at most %u)", len, ARF_CLUSTER_FILE_MAX);
		return -1;
	}
	bool header = false;
	unsigned line = 0;
	size_t i = 0;
	while (i < len) {
		size_t e = i;
		while (e < len && text[e] != '\n')
			e++;
		line++;
		char l[256];
		size_t ll = e - i;
		if (ll >= sizeof l) {
			snprintf(err, errlen, "line %u: too long", line);
			return -1;
		}
		memcpy(l, text + i, ll);
		l[ll] = '\0';
		i = e + 1;
		char *save = NULL, *key = strtok_r(l, " \t\r", &save);
		char *val = key ? strtok_r(NULL, " \t\r", &save) : NULL;
		if (!key || key[0] == '#')
			continue;                    /* blank line, comment */
		if (!val || strtok_r(NULL, " \t\r", &save)) {
			snprintf(err, errlen, "line %u: expected KEY VALUE", line);
			return -1;
		}
		if (!header) {
			/* the version is the layout (arf_cluster.h): a reader that does not know
			 * one refuses it, rather than read stripes from the wrong servers */
			if (strcmp(key, "arf-cluster") != 0 ||
			    (strcmp(val, "1") != 0 && strcmp(val, "2") != 0)) {
				snprintf(err, errlen, "line %u: expected \"arf-cluster 1\" or \"arf-cluster "
				         "2\" first", line);
				return -1;
			}
			d->layout = val[0] == '2' ? ARF_LAYOUT_ROTATE : ARF_LAYOUT_FLAT;
			header = true;
		} else if (!strcmp(key, "unit")) {
			char *end;
			unsigned long long u = strtoull(val, &end, 10);
			if (*end || u < ARF_STRIPE_MIN || u > ARF_STRIPE_MAX || u % ARF_STRIPE_MIN) {
				snprintf(err, errlen, "line %u: unit %s: expected a multiple of %u from %u "
				         "to %u", line, val, ARF_STRIPE_MIN, ARF_STRIPE_MIN, ARF_STRIPE_MAX);
				return -1;
			}
			d->unit = (uint32_t)u;
		} else if (!strcmp(key, "server")) {
			if (d->n == ARF_CLUSTER_MAX) {
				snprintf(err, errlen, "line %u: more than %d servers", line, ARF_CLUSTER_MAX);
				return -1;
			}
			if (strlen(val) >= ARF_CLUSTER_EP_MAX) {
				snprintf(err, errlen, "line %u: server: %zu bytes (at most %d)", line,
				         strlen(val), ARF_CLUSTER_EP_MAX - 1);
				return -1;
			}
			if (!endpoint_ok(val)) {
				snprintf(err, errlen, "line %u: server %s: expected tcp:HOST:PORT", line, val);
				return -1;
			}
			for (unsigned k = 0; k < d->n; k++)
				if (!strcmp(d->server[k], val)) {
					snprintf(err, errlen, "line %u: server %s: listed twice", line, val);
					return -1;
				}
			snprintf(d->server[d->n++], ARF_CLUSTER_EP_MAX, "%s", val);
		} else {
			snprintf(err, errlen, "line %u: unknown key '%.32s'", line, key);
			return -1;
		}
	}
	if (!header || d->n == 0) {
		snprintf(err, errlen, header ? "no server" : "empty");
		return -1;
	}
	return 0;
}

int arf_cluster_format(const struct arf_cluster_desc *d, char *buf, size_t cap)
{
	size_t n = 0;
	int w = snprintf(buf, cap, "arf-cluster %d\nunit %u\n",
	                 d->layout == ARF_LAYOUT_ROTATE ? 2 : 1, d->unit);
	if (w < 0 || (size_t)w >= cap)
		return -1;
	n = (size_t)w;
	for (unsigned k = 0; k < d->n; k++) {
		w = snprintf(buf + n, cap - n, "server %s\n", d->server[k]);
		if (w < 0 || (size_t)w >= cap - n)
			return -1;
		n += (size_t)w;
	}
	return (int)n;
}

uint64_t arf_cl_obj_len(uint64_t size, uint32_t unit, unsigned n, unsigned k)
{
	uint64_t row = (uint64_t)unit * n;
	uint64_t rem = size % row, part = rem > (uint64_t)k * unit ? rem - (uint64_t)k * unit : 0;
	return size / row * unit + (part < unit ? part : unit);
}

unsigned arf_cl_first(int layout, unsigned n, uint64_t ino)
{
	return layout == ARF_LAYOUT_ROTATE && n ? (unsigned)(ino % n) : 0;
}

unsigned arf_cl_server(unsigned first, unsigned n, uint64_t s)
{
	return (unsigned)((s % n + first) % n);
}

unsigned arf_cl_slot(unsigned first, unsigned n, unsigned k)
{
	return (k + n - first) % n;
}

/* ---- a file's layout (from its attributes: getattr's answer carries the record) ---- */

void arf_cl_layout_default(const struct arf_cluster_desc *desc, uint64_t ino,
                           struct arf_cl_layout *lay)
{
	*lay = (struct arf_cl_layout){ .unit = desc->unit, .count = desc->n,
	                               .first = arf_cl_first(desc->layout, desc->n, ino) };
}

/* A layout record's 4 u32 against desc: 0, or -1 with a message. */
static int layout_check(const struct arf_cluster_desc *desc, const uint32_t rec[4], char *err,
                        size_t errlen)
{
	if (!arf_cl_unit_ok(rec[0]))
		snprintf(err, errlen, "layout record: unit %u: not a multiple of %u from %u to %u",
		         rec[0], ARF_STRIPE_MIN, ARF_STRIPE_MIN, ARF_STRIPE_MAX);
	else if (rec[1] != desc->n)
		snprintf(err, errlen, "layout record: stripe count %u: this version stripes a file "
		         "over all %u data servers", rec[1], desc->n);
	else if (rec[2] >= desc->n)
		snprintf(err, errlen, "layout record: first server %u of %u", rec[2], desc->n);
	else if (rec[3] != 0)
		snprintf(err, errlen, "layout record: reserved field %u (a later version's?)",
		         rec[3]);
	else
		return 0;
	return -1;
}

int arf_cl_layout(const struct arf_cluster_desc *desc, uint64_t ino, const uint32_t rec[4],
                  struct arf_cl_layout *lay, char *err, size_t errlen)
{
	arf_cl_layout_default(desc, ino, lay);
	if ((rec[0] | rec[1] | rec[2] | rec[3]) == 0)
		return 0;                    /* no record: the cluster's layout */
	if (layout_check(desc, rec, err, errlen) < 0)
		return -EIO;
	lay->unit = rec[0];
	lay->first = rec[2];
	return 0;
}

bool arf_cl_unit_ok(uint64_t unit)
{
	return unit >= ARF_STRIPE_MIN && unit <= ARF_STRIPE_MAX && unit % ARF_STRIPE_MIN == 0;
}
