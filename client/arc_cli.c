/* arc: command-line client of arfd.
 *
 *   arc run ENDPOINT SEG.pno [--entry NAME] [--arg N ...] [--args-str S | --args-file F]
 *                            [--fuel N] [--out-max SIZE] [--time-limit MS] [--local]
 *       --local runs the segment here, each region access a READ/WRITE of the server's
 *       memory (the plain-RDMA way); the results are the same, the round trips are not
 *   arc install ENDPOINT SEG.pno         prints the segment id
 *   arc read ENDPOINT REGION OFFSET LENGTH     the bytes to standard output
 *   arc write ENDPOINT REGION OFFSET (--data STRING | --file FILE)
 *   arc regions ENDPOINT
 *   arc stats ENDPOINT
 * Common options: --secret S (or ARC_SECRET), --admin-secret S (or ARC_ADMIN_SECRET),
 * --timeout MS, --outage MS, --tls-ca FILE (tls: endpoints).
 * Exit status: 0 success; 1 usage or local error; 2 the server refused or failed the request
 * (message on stderr); 3 the run trapped (the trap on stderr, output so far on stdout).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arc.h"
#include "isa.h"

static void usage(FILE *f)
{
	fprintf(f,
	"usage: arc COMMAND ENDPOINT ...\n"
	"  arc run ENDPOINT SEG.pno [--entry NAME] [--arg N ...] [--args-str S | --args-file F]\n"
	"                           [--fuel N] [--out-max SIZE] [--time-limit MS] [--local] [--delegated]\n"
	"  arc install ENDPOINT SEG.pno\n"
	"  arc read ENDPOINT REGION OFFSET LENGTH\n"
	"  arc write ENDPOINT REGION OFFSET (--data STRING | --file FILE)\n"
	"  arc regions ENDPOINT\n"
	"  arc stats ENDPOINT\n"
	"options: --secret S (default: $ARC_SECRET), --admin-secret S (default:\n"
	"         $ARC_ADMIN_SECRET; arfd --admin-secret: install, admin-only regions; used\n"
	"         instead of --secret), --timeout MS (default 30000),\n"
	"         --outage MS (ride through a lost connection or a server not up yet, tcp;\n"
	"         default 60000, 0: off), --tls-ca FILE (tls:HOST:PORT: the CAs that vouch\n"
	"         for the server's certificate; default $PN_TLS_CA, else the system's)\n"
	"exit status: 0 ok, 1 usage/local error, 2 server error, 3 the run trapped\n");
}

static void *slurp(const char *path, size_t *len)
{
	void *buf;
	return isa_read_file(path, &buf, len) == 0 ? buf : NULL;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k') shift = 10;
	else if (*end == 'M' || *end == 'm') shift = 20;
	else if (*end == 'G' || *end == 'g') shift = 30;
	if (shift)
		end++;
	if (errno || end == s || *end || *s == '-' || (shift && x > (UINT64_MAX >> shift)))
		return -1;
	*v = (uint64_t)x << shift;
	return 0;
}

int main(int argc, char **argv)
{
	arc_keep_buffers();
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2;
	}
	const char *cmd = argv[1];
	/* positional arguments and options, in any order */
	const char *pos[8];
	int n_pos = 0;
	const char *entry = NULL, *args_str = NULL, *args_file = NULL, *data = NULL, *file = NULL;
	const char *secret = getenv("ARC_SECRET"), *admin_secret = getenv("ARC_ADMIN_SECRET");
	const char *tls_ca = NULL;
	int64_t args[AR_MAX_ARGS];
	unsigned n_args = 0;
	uint64_t fuel = 0, out_max = 16u << 20, timeout = 30000, outage = 60000;
	uint32_t time_limit = 0;
	int local = 0, delegated = 0;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--local")) {
			local = 1;
			continue;
		}
		if (!strcmp(a, "--delegated")) {
			delegated = 1;     /* the server may forward it: the reply from whoever sends it */
			continue;
		}
		if (strncmp(a, "--", 2) != 0) {
			if (n_pos == 8) {
				fprintf(stderr, "arc: too many arguments\n");
				return 1;
			}
			pos[n_pos++] = a;
			continue;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "arc: %s needs a value\n", a);
			return 1;
		}
		const char *v = argv[++i];
		uint64_t u;
		if (!strcmp(a, "--entry")) entry = v;
		else if (!strcmp(a, "--args-str")) args_str = v;
		else if (!strcmp(a, "--args-file")) args_file = v;
		else if (!strcmp(a, "--data")) data = v;
		else if (!strcmp(a, "--file")) file = v;
		else if (!strcmp(a, "--secret")) secret = v;
		else if (!strcmp(a, "--admin-secret")) admin_secret = v;
		else if (!strcmp(a, "--tls-ca")) tls_ca = v;
		else if (!strcmp(a, "--arg")) {
			char *end;
			errno = 0;
			long long x = strtoll(v, &end, 0);
			if (errno || *end || end == v || n_args == AR_MAX_ARGS) {
				fprintf(stderr, "arc: --arg %s: not an integer (or too many)\n", v);
				return 1;
			}
			args[n_args++] = x;
		} else if (!strcmp(a, "--fuel") && parse_u64(v, &u) == 0) fuel = u;
		else if (!strcmp(a, "--out-max") && parse_u64(v, &u) == 0) out_max = u;
		else if (!strcmp(a, "--time-limit") && parse_u64(v, &u) == 0 && u <= UINT32_MAX)
			time_limit = (uint32_t)u;
		else if (!strcmp(a, "--timeout") && parse_u64(v, &u) == 0 && u <= 86400000) timeout = u;
		else if (!strcmp(a, "--outage") && parse_u64(v, &u) == 0 && u <= 86400000) outage = u;
		else {
			fprintf(stderr, "arc: bad option %s %s (see --help)\n", a, v);
			return 1;
		}
	}
	static const struct { const char *name; int n_pos; } cmds[] = {
		{ "run", 2 }, { "install", 2 }, { "read", 4 }, { "write", 3 }, { "regions", 1 },
		{ "stats", 1 },
	};
	int want = -1;
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strcmp(cmd, cmds[i].name))
			want = cmds[i].n_pos;
	if (want < 0 || n_pos != want) {
		fprintf(stderr, want < 0 ? "arc: unknown command '%s'\n" : "arc: %s: wrong number of arguments\n", cmd);
		usage(stderr);
		return 1;
	}
	char err[512];
	struct arc_opts o = { .secret = secret, .admin_secret = admin_secret,
	                      .timeout_ms = (int)timeout,
	                      .outage_ms = outage ? (int)outage : -1, .wait_first = 1,
	                      .tls_ca = tls_ca };
	struct arc *a = arc_connect(pos[0], &o, err, sizeof err);
	if (!a) {
		fprintf(stderr, "arc: %s\n", err);
		return 1;
	}
	int rc = 0, status = 0;
	if (!strcmp(cmd, "run") || !strcmp(cmd, "install")) {
		size_t seg_len;
		void *seg = slurp(pos[1], &seg_len);
		if (!seg) {
			fprintf(stderr, "arc: %s: %s\n", pos[1], strerror(errno));
			arc_close(a);
			return 1;
		}
		if (!strcmp(cmd, "install")) {
			uint8_t id[AR_ID_LEN];
			rc = arc_install(a, seg, seg_len, id);
			if (rc == 0) {
				char hex[2 * AR_ID_LEN + 1];
				isa_id_hex(id, hex);
				printf("%s\n", hex);
			}
		} else {
			size_t ab_len = args_str ? strlen(args_str) : 0;
			void *ab = args_file ? slurp(args_file, &ab_len) : NULL;
			if (args_file && !ab) {
				fprintf(stderr, "arc: %s: %s\n", args_file, strerror(errno));
				arc_close(a);
				return 1;
			}
			struct arc_exec x = { .seg = seg, .seg_len = seg_len, .entry = entry, .args = args,
			                      .n_args = n_args, .argbytes = ab ? ab : args_str,
			                      .argbytes_len = ab_len, .fuel = fuel, .out_max = out_max,
			                      .time_limit_ms = time_limit, .delegated = delegated };
			rc = local ? arc_exec_local(a, &x) : arc_exec(a, &x);
			if (rc == 0 || rc == -AR_ETRAP) {
				fwrite(x.out, 1, x.out_len, stdout);
				fflush(stdout);
			}
			if (rc == 0)
				fprintf(stderr, "result: %" PRId64 "\n", x.value);
			else if (rc == -AR_ETRAP)
				status = 3;
			free(x.out);
			free(ab);
		}
		free(seg);
	} else if (!strcmp(cmd, "read")) {
		uint64_t off, len;
		if (parse_u64(pos[2], &off) != 0 || parse_u64(pos[3], &len) != 0 || len > UINT32_MAX) {
			fprintf(stderr, "arc: read: bad offset or length\n");
			arc_close(a);
			return 1;
		}
		void *buf = malloc(len ? len : 1);
		rc = buf ? arc_read(a, pos[1], off, buf, (uint32_t)len) : -AR_ENOMEM;
		if (rc == 0)
			fwrite(buf, 1, len, stdout);
		free(buf);
	} else if (!strcmp(cmd, "write")) {
		uint64_t off;
		size_t len = data ? strlen(data) : 0;
		void *buf = file ? slurp(file, &len) : NULL;
		if (parse_u64(pos[2], &off) != 0 || (!data && !buf) || len > UINT32_MAX) {
			fprintf(stderr, "arc: write: need an offset and --data or a readable --file\n");
			free(buf);
			arc_close(a);
			return 1;
		}
		rc = arc_write(a, pos[1], off, buf ? buf : data, (uint32_t)len);
		free(buf);
	} else if (!strcmp(cmd, "regions")) {
		struct arc_region *list;
		unsigned n;
		rc = arc_regions(a, &list, &n);
		for (unsigned i = 0; rc == 0 && i < n; i++)
			printf("%s\t%" PRIu64 "\t%s\n", list[i].name, list[i].size,
			       list[i].access & ISA_ACC_WRITE ? "rw" : "ro");
		if (rc == 0)
			free(list);
	} else {
		char *text;
		rc = arc_stats(a, &text);
		if (rc == 0) {
			fputs(text, stdout);
			free(text);
			/* this client's side: which transport it took, and why (auto:) */
			printf("client.endpoint %s\n", arc_endpoint(a));
			if (arc_moves(a))
				printf("client.moves %u\n", arc_moves(a));
			if (arc_transport_note(a)[0])
				printf("client.transport %s\n", arc_transport_note(a));
		}
	}
	if (rc != 0 && status == 0) {
		fprintf(stderr, "arc: %s: %s\n", cmd, arc_errmsg(a));
		status = 2;
	} else if (status == 3) {
		fprintf(stderr, "arc: %s\n", arc_errmsg(a));
	}
	arc_close(a);
	return status;
}
