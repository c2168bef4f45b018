/* arf: the ARF filesystem's command-line tool: mkfs and fsck of an image file (libarf does
 * the work), mount and umount (the FUSE client, arf/fuse.c); grep and import come later as
 * further subcommands.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arc.h"
#include "arf.h"
#include "arf_cli.h"
#include "arf_cluster.h"
#include "arf_data.h"
#include "arf_ops.h"
#include "arf_seg.h"
#include "server.h"

/* fuse.c */
int arf_cmd_mount(int argc, char **argv);
int arf_cmd_umount(int argc, char **argv);
/* xfer.c */
int arf_cmd_import(int argc, char **argv);
int arf_cmd_export(int argc, char **argv);
/* grep.c */
int arf_cmd_grep(int argc, char **argv);

static void usage(FILE *f)
{
	fprintf(f,
	"usage: arf mkfs IMAGE --size SIZE [--inodes N]\n"
	"       arf fsck IMAGE [--repair]\n"
	"       arf fsck --cluster META_ENDPOINT [--repair]\n"
	"       arf fsck --cluster META_IMAGE DATA_IMAGE... [--repair]\n"
	"       arf mount ENDPOINT MOUNTPOINT [-o OPTIONS] [-f] [-s]\n"
	"       arf umount MOUNTPOINT\n"
	"       arf import [-j N] [--stripe-unit SIZE] SRC_DIR ENDPOINT:/DEST\n"
	"       arf export [-j N] ENDPOINT:/SRC DEST_DIR\n"
	"       arf grep [GREP OPTIONS] PATTERNS FILE...   (arf grep --help)\n"
	"       arf cluster init [--stripe-unit SIZE] [--layout rotate|flat] META_ENDPOINT DATA_ENDPOINT...\n"
	"       arf cluster show META_ENDPOINT\n"
	"       arf cluster move META_ENDPOINT OLD_DATA_ENDPOINT NEW_DATA_ENDPOINT\n"
	"       arf cluster cat [--offset N] [--length N] [--stats] [--direct] META_ENDPOINT:/PATH\n"
	"       arf --help\n"
	"\n"
	"  mkfs   create IMAGE (a sparse file; an existing file is overwritten) holding an empty\n"
	"         filesystem: SIZE like 64M, 200G, 2T (4 MiB to 16 TiB); N inodes (default one\n"
	"         per 16 KiB)\n"
	"  fsck   check every invariant of IMAGE and report each problem; --repair fixes what\n"
	"         it can (orphans go to /lost+found as #INODE, unlinked ones are freed).  Never\n"
	"         run it on an image arfd is serving.  Exit status: 0 clean, 1 repaired, 4\n"
	"         problems left, 8 could not check.  --cluster checks a running cluster's\n"
	"         data servers against its metadata server: leaked stripe objects and stale\n"
	"         tails (--repair removes and cuts them; run it while no client writes);\n"
	"         given the images instead (metadata first, then the data images in the\n"
	"         order arf cluster show lists them), it checks a cluster nobody serves\n"
	"  mount  mount the image an arfd serves (arfd --arf) at MOUNTPOINT through FUSE; -f\n"
	"         stays in the foreground, -s serves requests on one thread.  OPTIONS:\n"
	"         attr_timeout=S, entry_timeout=S (seconds\n"
	"         the kernel caches attributes and names, default 1), outage=S (ride\n"
	"         through a lost connection to arfd this long, default 60), sync_writes (each\n"
	"         write waits for the server; by default writes are queued and their\n"
	"         errors come at a later write, fsync or close), writeback (the kernel's\n"
	"         cache), and FUSE's own (allow_other, ...).  Mounted by root it serves\n"
	"         every user (allow_other), with the kernel's permission checks.\n"
	"         $ARC_SECRET is the server's secret\n"
	"  umount unmount it (fusermount3 -u)\n"
	"  import copy a local tree into the image (no mount needed), N files at once\n"
	"         (default 8), with a progress line on a terminal; export copies one out.\n"
	"         On a cluster, files' bytes go to and come from the data servers;\n"
	"         --stripe-unit gives the files it writes their own stripe unit (as\n"
	"         cluster init's SIZE; getfattr -n user.arf.stripe_unit on a mount shows it)\n"
	"  cluster init: make the arfd at META_ENDPOINT (its image empty) the metadata\n"
	"         server of a cluster whose files are striped over the DATA_ENDPOINTs (each\n"
	"         an arfd serving its own image) in units of SIZE (default 1M, a multiple\n"
	"         of 4K up to 4M); show prints the description the metadata image holds\n"
	"         (docs/cluster.md).  import, export, grep and mount serve clusters\n"
	"  cluster move: a data server's image now served at NEW_DATA_ENDPOINT (moved\n"
	"         there by the old arfd's move-to, or a copy served once the old one\n"
	"         stopped): the description names the new endpoint.  Restart the metadata\n"
	"         arfd with the new --member list if it delegates\n"
	"\n"
	"Serve an image with: arfd --listen ENDPOINT --arf IMAGE (region \"arf\").\n");
}

int arf_parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int cmd_mkfs(int argc, char **argv)
{
	const char *image = NULL;
	uint64_t size = 0, inodes = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc) {
			if (arf_parse_size(argv[++i], &size) != 0) {
				fprintf(stderr, "arf mkfs: --size %s: expected a size like 64M or 200G\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--inodes") && i + 1 < argc) {
			if (arf_parse_size(argv[++i], &inodes) != 0 || inodes == 0) {
				fprintf(stderr, "arf mkfs: --inodes %s: expected a positive number\n", argv[i]);
				return 2;
			}
		} else if (argv[i][0] != '-' && !image) {
			image = argv[i];
		} else {
			fprintf(stderr, "arf mkfs: %s: unexpected argument (see arf --help)\n", argv[i]);
			return 2;
		}
	}
	if (!image || !size) {
		fprintf(stderr, "arf mkfs: needs IMAGE and --size SIZE (see arf --help)\n");
		return 2;
	}
	char err[512];
	if (arf_mkfs(image, size, inodes, err, sizeof err) != 0) {
		fprintf(stderr, "arf mkfs: %s\n", err);
		return 1;
	}
	return 0;
}

static void print_line(void *user, enum arf_fsck_line kind, const char *line)
{
	printf("%s%s\n", kind == ARF_FSCK_NOTE ? "note: " : "", line);
}

static void print_cluster_line(void *user, int kind, const char *line)
{
	print_line(user, (enum arf_fsck_line)kind, line);
}

/* The description's data servers replaced by eps (n of them, as many as it names). */
static bool set_servers(struct arf_cluster_desc *desc, const char *const *eps, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		if (strlen(eps[k]) >= sizeof desc->server[k])
			return false;
		snprintf(desc->server[k], sizeof desc->server[k], "%s", eps[k]);
	}
	return true;
}

/* arf fsck --cluster META_ENDPOINT: every data server's objects against the metadata image
 * (arf_cluster_fsck), through the servers.  data_eps (n_data of them, or NULL): the data
 * servers to use in place of the ones the description names (the offline check's own);
 * label: what the report names. */
static int fsck_cluster(const char *meta, bool repair, const char *const *data_eps,
                        unsigned n_data, const char *label)
{
	char err[1400];
	char *ops_seg = arf_seg_path("ARF_OPS_SEG", "ops.pno");
	char *data_seg = arf_seg_path("ARF_DATA_SEG", "data.pno");
	struct arc_opts ao = { .secret = getenv("ARC_SECRET") };
	struct arc_opts dao = { .secret = getenv("ARC_SECRET"),
	                        .timeout_ms = ARF_CLUSTER_TIMEOUT_MS,
	                        .outage_ms = ARF_CLUSTER_OUTAGE_MS };
	struct arf_cluster_desc *desc = calloc(1, sizeof *desc);
	struct arc *a = desc ? arc_connect(meta, &ao, err, sizeof err) : NULL;
	struct arf_client *c = a ? arf_client_open(a, ops_seg, err, sizeof err) : NULL;
	struct arf_data *d = c ? arf_data_open(a, data_seg, err, sizeof err) : NULL;
	struct arf_cluster *cl = NULL;
	int rc = ARF_FSCK_ERROR;
	if (!d || arf_cluster_read(c, d, desc, err, sizeof err) < 0) {
		fprintf(stderr, "arf fsck: %s: %s\n", label, desc ? err : "out of memory");
	} else if (desc->n == 0) {
		fprintf(stderr, "arf fsck: %s: not a cluster (fsck its image: arf fsck IMAGE)\n", label);
	} else if (data_eps && desc->n != n_data) {
		fprintf(stderr, "arf fsck: %s: its description names %u data servers, %u images "
		        "given\n", label, desc->n, n_data);
	} else if (data_eps && !set_servers(desc, data_eps, n_data)) {
		fprintf(stderr, "arf fsck: %s: an endpoint too long\n", label);
	} else if (!(cl = arf_cluster_open(a, desc, &dao, ops_seg, data_seg, err, sizeof err))) {
		fprintf(stderr, "arf fsck: %s\n", err);
	} else {
		struct arf_cluster_fsck fk = { .repair = repair, .report = print_cluster_line };
		rc = arf_cluster_fsck(cl, c, &fk);
		if (rc == ARF_FSCK_CLEAN)
			printf("%s: cluster clean, %" PRIu64 " objects on %u data servers\n", label,
			       fk.objects, desc->n);
		else if (rc == ARF_FSCK_REPAIRED)
			printf("%s: %" PRIu64 " problems, all repaired\n", label, fk.problems);
		else if (rc == ARF_FSCK_PROBLEMS)
			printf("%s: %" PRIu64 " problems, %" PRIu64 " repaired%s\n", label, fk.problems,
			       fk.repaired, repair ? "" : " (run with --repair to fix them)");
		else
			printf("%s: the cluster could not be checked\n", label);
	}
	arf_cluster_close(cl);
	arf_data_close(d);
	arf_client_close(c);
	if (a)
		arc_close(a);
	free(desc);
	free(ops_seg);
	free(data_seg);
	fflush(stdout);
	return rc;
}

/* arf fsck --cluster META_IMAGE DATA_IMAGE...: the same check with no server running (after a
 * crash, before the cluster is started again): an arfd for each image inside this process on
 * loopback, the description's data servers taken as the images in the order given (as
 * `arf cluster show` lists them).  The images must not be served by anyone else meanwhile,
 * as for `arf fsck IMAGE`.  Repairs go through those servers into the images. */
static int fsck_cluster_images(char **imgs, unsigned n, bool repair)
{
	if (n < 2 || n > 1 + ARF_CLUSTER_MAX) {
		fprintf(stderr, "arf fsck: --cluster with images: the metadata image and 1 to %d data "
		        "images\n", ARF_CLUSTER_MAX);
		return ARF_FSCK_ERROR;
	}
	arfd_log_setup(ARFD_LOG_WARN, false);
	struct arfd_config *cfg = calloc(n, sizeof *cfg);
	struct arfd **srv = calloc(n, sizeof *srv);
	const char **eps = calloc(n, sizeof *eps);
	int rc = ARF_FSCK_ERROR;
	unsigned up = 0;
	char err[512];
	for (; cfg && srv && eps && up < n; up++) {
		cfg[up].listen[cfg[up].n_listen++] = "tcp:127.0.0.1:0";
		cfg[up].arf_image = imgs[up];
		if (!(srv[up] = arfd_start(&cfg[up], err, sizeof err))) {
			fprintf(stderr, "arf fsck: %s: %s\n", imgs[up], err);
			break;
		}
		eps[up] = arfd_endpoint(srv[up], "tcp");
	}
	if (!cfg || !srv || !eps)
		fprintf(stderr, "arf fsck: out of memory\n");
	else if (up == n)
		rc = fsck_cluster(eps[0], repair, eps + 1, n - 1, imgs[0]);
	for (unsigned i = 0; srv && i < up; i++)
		arfd_stop(srv[i], 2000);
	free(cfg);
	free(srv);
	free(eps);
	return rc;
}

static int cmd_fsck(int argc, char **argv)
{
	const char *image = NULL;
	struct arf_fsck_opts o = { .report = print_line };
	bool cluster = false;
	char **names = calloc((size_t)argc + 1, sizeof *names);   /* the operands, in order */
	unsigned n_names = 0;
	if (!names) {
		fprintf(stderr, "arf fsck: out of memory\n");
		return ARF_FSCK_ERROR;
	}
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--repair"))
			o.repair = true;
		else if (!strcmp(argv[i], "--cluster"))
			cluster = true;
		else if (argv[i][0] != '-')
			image = image ? image : argv[i], names[n_names++] = argv[i];
		else {
			free(names);
			fprintf(stderr, "arf fsck: %s: unexpected argument (see arf --help)\n", argv[i]);
			return ARF_FSCK_ERROR;
		}
	}
	if (!image) {
		fprintf(stderr, "arf fsck: needs %s (see arf --help)\n",
		        cluster ? "META_ENDPOINT" : "IMAGE");
		free(names);
		return ARF_FSCK_ERROR;
	}
	if (!cluster && n_names > 1) {
		fprintf(stderr, "arf fsck: %s: unexpected argument (see arf --help)\n", names[1]);
		free(names);
		return ARF_FSCK_ERROR;
	}
	if (cluster) {
		/* images (offline) or the metadata server's endpoint (through the servers) */
		int rc = n_names > 1 ? fsck_cluster_images(names, n_names, o.repair)
		                     : fsck_cluster(image, o.repair, NULL, 0, image);
		free(names);
		return rc;
	}
	free(names);
	struct arf_fsck_result r;
	int rc = arf_fsck(image, &o, &r);
	switch (rc) {
	case ARF_FSCK_CLEAN:
		printf("%s: clean, %" PRIu64 " inodes and %" PRIu64 " blocks in use\n", image,
		       r.inodes_used, r.blocks_used);
		break;
	case ARF_FSCK_REPAIRED:
		printf("%s: %" PRIu64 " problems, all repaired\n", image, r.problems);
		break;
	case ARF_FSCK_PROBLEMS:
		printf("%s: %" PRIu64 " problems, %" PRIu64 " repaired%s\n", image, r.problems,
		       r.repaired, o.repair ? "" : " (run with --repair to fix them)");
		break;
	default:
		printf("%s: could not be checked\n", image);
		break;
	}
	fflush(stdout);
	return rc;
}

/* arf cluster cat [--offset N] [--length N] [--stats] [--direct] META_ENDPOINT:/PATH: a
 * file's bytes through the metadata server alone, each stripe piece delegated to its data
 * server (arf_cl_read_delegated); --stats: this client's messages for the reads, to stderr;
 * --direct: the ordinary path instead (the data servers reached, the objects looked up,
 * then read: arf_cl_read), to compare. */
static int cluster_cat(int argc, char **argv)
{
	uint64_t off = 0, len = UINT64_MAX;
	bool stats = false, direct = false;
	const char *remote = NULL;
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "--offset") || !strcmp(argv[i], "--length")) && i + 1 < argc) {
			uint64_t v;
			if (arf_parse_size(argv[i + 1], &v) != 0) {
				fprintf(stderr, "arf cluster cat: %s %s: expected a size\n", argv[i], argv[i + 1]);
				return 2;
			}
			*(argv[i][2] == 'o' ? &off : &len) = v;
			i++;
		} else if (!strcmp(argv[i], "--stats")) {
			stats = true;
		} else if (!strcmp(argv[i], "--direct")) {
			direct = true;
		} else if (argv[i][0] != '-' && !remote) {
			remote = argv[i];
		} else {
			fprintf(stderr, "arf cluster cat: %s: unexpected argument (see arf --help)\n", argv[i]);
			return 2;
		}
	}
	char *meta = NULL;
	const char *path = NULL;
	if (!remote || arf_split_remote(remote, &meta, &path) != 0) {
		fprintf(stderr, "arf cluster cat: needs META_ENDPOINT:/PATH (see arf --help)\n");
		return 2;
	}
	int rc = 1;
	char err[1400];
	char *ops_seg = arf_seg_path("ARF_OPS_SEG", "ops.pno");
	char *data_seg = arf_seg_path("ARF_DATA_SEG", "data.pno");
	char *deleg_seg = arf_seg_path("ARF_DELEG_SEG", "deleg.pno");
	char *stripe_seg = arf_seg_path("ARF_STRIPE_SEG", "stripe.pno");
	struct arc_opts ao = { .secret = getenv("ARC_SECRET") };
	struct arf_cluster_desc *desc = calloc(1, sizeof *desc);
	struct arc *a = desc ? arc_connect(meta, &ao, err, sizeof err) : NULL;
	struct arf_client *c = a ? arf_client_open(a, ops_seg, err, sizeof err) : NULL;
	struct arf_data *d = c ? arf_data_open(a, data_seg, err, sizeof err) : NULL;
	struct arf_seg route;
	bool route_ok = d && arf_seg_open(&route, a, deleg_seg, NULL, NULL, err, sizeof err) == 0;
	void *stripe = NULL;
	size_t stripe_len = 0;
	char *buf = NULL;
	if (!route_ok) {
		fprintf(stderr, "arf cluster cat: %s: %s\n", meta, desc ? err : "out of memory");
		goto out;
	}
	FILE *f = fopen(stripe_seg, "rb");
	if (f) {
		stripe = malloc(1 << 20);
		stripe_len = stripe ? fread(stripe, 1, 1 << 20, f) : 0;
		fclose(f);
	}
	if (!stripe_len) {
		fprintf(stderr, "arf cluster cat: %s: cannot read it\n", stripe_seg);
		goto out_route;
	}
	if (arf_cluster_read(c, d, desc, err, sizeof err) < 0 || desc->n == 0) {
		fprintf(stderr, "arf cluster cat: %s: %s\n", meta, desc->n ? err : "not a cluster");
		goto out_route;
	}
	int64_t ino = arf_lookup(c, 1, path);
	if (ino < 0) {
		fprintf(stderr, "arf cluster cat: %s: %s\n", path, strerror((int)-ino));
		goto out_route;
	}
	/* the size from the metadata server first, so that the reads stop at the end without
	 * asking past it (route answers 0 there, itself: one round trip more) */
	struct arf_attr at;
	int grc = arf_getattr(c, (uint64_t)ino, &at);
	if (grc < 0) {
		fprintf(stderr, "arf cluster cat: %s: %s\n", path, strerror(-grc));
		goto out_route;
	}
	len = off >= at.size ? 0 : len < at.size - off ? len : at.size - off;
	struct arf_cl_layout lay;
	if (arf_cl_layout(desc, (uint64_t)ino, at.layout, &lay, err, sizeof err) < 0) {
		fprintf(stderr, "arf cluster cat: %s: %s\n", path, err);
		goto out_route;
	}
	uint64_t s0, r0, s1, r1;
	arc_net_counts(a, &s0, &r0);
	struct arc_opts dao = { .secret = getenv("ARC_SECRET"), .timeout_ms = ARF_CLUSTER_TIMEOUT_MS,
	                        .outage_ms = ARF_CLUSTER_OUTAGE_MS };
	struct arf_cluster *cl = direct ? arf_cluster_open(a, desc, &dao, ops_seg, data_seg, err,
	                                                   sizeof err) : NULL;
	struct arf_cl_file *cf = cl ? arf_cl_file_open(cl, (uint64_t)ino, at.gen, &lay) : NULL;
	if (direct && !cf) {
		fprintf(stderr, "arf cluster cat: %s: %s\n", meta, cl ? "out of memory" : err);
		arf_cluster_close(cl);
		goto out_route;
	}
	enum { CHUNK = 1 << 20 };
	buf = malloc(CHUNK);
	while (buf && len > 0) {
		size_t want = len < CHUNK ? (size_t)len : CHUNK;
		int64_t got = direct ? arf_cl_read(cf, off, buf, want) :
		              arf_cl_read_delegated(a, &route, stripe, stripe_len, desc, &lay, (uint64_t)ino,
		                                    off, buf, want, err, sizeof err);
		if (got < 0) {
			fprintf(stderr, "arf cluster cat: %s: %s\n", path, direct ? arf_cl_errmsg(cf) : err);
			arf_cl_file_close(cf);
			arf_cluster_close(cl);
			goto out_route;
		}
		if (got > 0 && fwrite(buf, 1, (size_t)got, stdout) != (size_t)got) {
			fprintf(stderr, "arf cluster cat: stdout: %s\n", strerror(errno));
			goto out_route;
		}
		off += (uint64_t)got;
		len -= (uint64_t)got;
		if ((size_t)got < want)
			break;
	}
	rc = buf ? 0 : 1;
	arc_net_counts(a, &s1, &r1);
	arf_cl_file_close(cf);
	arf_cluster_close(cl);
	if (stats)
		fprintf(stderr, "client.msgs_sent %llu\nclient.msgs_recv %llu\n",
		        (unsigned long long)(s1 - s0), (unsigned long long)(r1 - r0));
out_route:
	arf_seg_close(&route);
out:
	fflush(stdout);
	free(buf);
	free(stripe);
	arf_data_close(d);
	arf_client_close(c);
	if (a)
		arc_close(a);
	free(desc);
	free(ops_seg);
	free(data_seg);
	free(deleg_seg);
	free(stripe_seg);
	free(meta);
	return rc;
}

/* arf cluster init|show|move: the cluster description in a metadata image (arf_cluster.h). */
static int cmd_cluster(int argc, char **argv)
{
	if (argc >= 1 && !strcmp(argv[0], "cat"))
		return cluster_cat(argc, argv);
	if (argc < 1 || (strcmp(argv[0], "init") != 0 && strcmp(argv[0], "show") != 0 &&
	                 strcmp(argv[0], "move") != 0)) {
		fprintf(stderr, "arf cluster: expected init, show, move or cat (see arf --help)\n");
		return 2;
	}
	bool init = !strcmp(argv[0], "init"), move = !strcmp(argv[0], "move");
	if (move && (argc != 4 || argv[1][0] == '-')) {
		fprintf(stderr, "arf cluster move: needs META_ENDPOINT OLD_DATA_ENDPOINT "
		        "NEW_DATA_ENDPOINT (see arf --help)\n");
		return 2;
	}
	struct arf_cluster_desc *desc = calloc(1, sizeof *desc);
	if (!desc)
		return 2;
	desc->unit = ARF_STRIPE_DEFAULT;
	/* a new cluster rotates its files' first servers (small files spread); flat is the
	 * layout of the first clusters, kept for them (arf_cluster.h) */
	desc->layout = ARF_LAYOUT_ROTATE;
	const char *meta = NULL;
	int rc = 2;
	for (int i = 1; i < argc; i++) {
		uint64_t u;
		if (init && !strcmp(argv[i], "--stripe-unit") && i + 1 < argc) {
			if (arf_parse_size(argv[++i], &u) != 0 || u < ARF_STRIPE_MIN || u > ARF_STRIPE_MAX ||
			    u % ARF_STRIPE_MIN) {
				fprintf(stderr, "arf cluster: --stripe-unit %s: expected a multiple of 4K "
				        "from 4K to 4M\n", argv[i]);
				goto out;
			}
			desc->unit = (uint32_t)u;
		} else if (init && !strcmp(argv[i], "--layout") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "rotate")) {
				desc->layout = ARF_LAYOUT_ROTATE;
			} else if (!strcmp(argv[i], "flat")) {
				desc->layout = ARF_LAYOUT_FLAT;
			} else {
				fprintf(stderr, "arf cluster: --layout %s: expected rotate or flat\n",
				        argv[i]);
				goto out;
			}
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "arf cluster: %s: unexpected option (see arf --help)\n", argv[i]);
			goto out;
		} else if (!meta) {
			meta = argv[i];
		} else if (move) {
			break;                       /* the two endpoints, taken below */
		} else if (init && desc->n < ARF_CLUSTER_MAX && strlen(argv[i]) < ARF_CLUSTER_EP_MAX) {
			snprintf(desc->server[desc->n++], ARF_CLUSTER_EP_MAX, "%s", argv[i]);
		} else {
			fprintf(stderr, "arf cluster: %s: unexpected argument (at most %d data servers)\n",
			        argv[i], ARF_CLUSTER_MAX);
			goto out;
		}
	}
	if (!meta || (init && desc->n == 0)) {
		fprintf(stderr, "arf cluster: needs %s (see arf --help)\n",
		        init ? "META_ENDPOINT and at least one DATA_ENDPOINT" : "META_ENDPOINT");
		goto out;
	}
	char err[1400];
	char *ops_seg = arf_seg_path("ARF_OPS_SEG", "ops.pno");
	char *data_seg = arf_seg_path("ARF_DATA_SEG", "data.pno");
	struct arc_opts ao = { .secret = getenv("ARC_SECRET") };
	struct arc_opts dao = { .secret = getenv("ARC_SECRET"),
	                        .timeout_ms = ARF_CLUSTER_TIMEOUT_MS,
	                        .outage_ms = ARF_CLUSTER_OUTAGE_MS };
	struct arc *a = arc_connect(meta, &ao, err, sizeof err);
	struct arf_client *c = a ? arf_client_open(a, ops_seg, err, sizeof err) : NULL;
	struct arf_data *d = c ? arf_data_open(a, data_seg, err, sizeof err) : NULL;
	if (!d) {
		fprintf(stderr, "arf cluster: %s: %s\n", meta, err);
	} else if (init) {
		int r = arf_cluster_make(a, c, d, desc, &dao, ops_seg, data_seg, err, sizeof err);
		if (r < 0)
			fprintf(stderr, "arf cluster: %s\n", err);
		else
			printf("%s: a cluster of %u data servers, stripe unit %u bytes, layout %s\n",
			       meta, desc->n, desc->unit,
			       desc->layout == ARF_LAYOUT_ROTATE ? "rotate" : "flat");
		rc = r < 0 ? 1 : 0;
	} else if (move) {
		int r = arf_cluster_move(a, c, d, argv[2], argv[3], &dao, ops_seg, data_seg, err,
		                         sizeof err);
		if (r < 0)
			fprintf(stderr, "arf cluster move: %s\n", err);
		else
			printf("%s: data server %s is now %s\n", meta, argv[2], argv[3]);
		rc = r < 0 ? 1 : 0;
	} else {
		int r = arf_cluster_read(c, d, desc, err, sizeof err);
		char text[ARF_CLUSTER_FILE_MAX];
		if (r < 0)
			fprintf(stderr, "arf cluster: %s: %s\n", meta, err);
		else if (desc->n == 0)
			printf("%s: one server (no data servers)\n", meta);
		else if (arf_cluster_format(desc, text, sizeof text) >= 0)
			fputs(text, stdout);
		rc = r < 0 ? 1 : 0;
	}
	arf_data_close(d);
	arf_client_close(c);
	if (a)
		arc_close(a);
	free(ops_seg);
	free(data_seg);
out:
	free(desc);
	return rc;
}

int main(int argc, char **argv)
{
	arc_keep_buffers();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "mkfs"))
		return cmd_mkfs(argc - 2, argv + 2);
	if (!strcmp(argv[1], "fsck"))
		return cmd_fsck(argc - 2, argv + 2);
	if (!strcmp(argv[1], "mount"))
		return arf_cmd_mount(argc - 2, argv + 2);
	if (!strcmp(argv[1], "grep"))
		return arf_cmd_grep(argc - 1, argv + 1);
	if (!strcmp(argv[1], "import"))
		return arf_cmd_import(argc - 2, argv + 2);
	if (!strcmp(argv[1], "export"))
		return arf_cmd_export(argc - 2, argv + 2);
	if (!strcmp(argv[1], "cluster"))
		return cmd_cluster(argc - 2, argv + 2);
	if (!strcmp(argv[1], "umount"))
		return arf_cmd_umount(argc - 2, argv + 2);
	fprintf(stderr, "arf: unknown command '%s' (see arf --help)\n", argv[1]);
	return 2;
}
