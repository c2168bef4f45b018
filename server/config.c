/* config.c: arfd's settings, from command-line options or a configuration file (one
 * "key value" per line, the option names without "--", '#' starts a comment), and its log.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ar_proto.h"
#include "server.h"

int arfd_parse_size(const char *s, uint64_t *out)
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

/* Strings given to the config outlive it: copies are kept for the process's life. */
static const char *keep(const char *s)
{
	return strdup(s);
}

/* The first line of path, without its newline: a secret kept out of the command line and
 * the process list.  0, or -1 with a message. */
static int read_secret_file(const char *path, char *buf, size_t cap, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf[0] = '\0';
	bool got = fgets(buf, (int)cap, f) != NULL;
	fclose(f);
	size_t n = got ? strlen(buf) : 0;
	if (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	else if (n == cap - 1) {
		snprintf(err, errlen, "%s: secret longer than 1024 bytes", path);
		return -1;
	}
	if (n && buf[n - 1] == '\r')
		buf[--n] = '\0';
	return 0;
}

static int region_spec(struct arfd_config *cfg, const char *v, char *err, size_t errlen)
{
	if (cfg->n_regions == ARFD_MAX_REGIONS) {
		snprintf(err, errlen, "at most %d regions", ARFD_MAX_REGIONS);
		return -1;
	}
	struct arfd_region_spec *r = &cfg->regions[cfg->n_regions];
	memset(r, 0, sizeof *r);
	const char *eq = strchr(v, '=');
	if (!eq || eq == v || (size_t)(eq - v) >= sizeof r->name) {
		snprintf(err, errlen, "region '%s': expected NAME=SIZE[:ro|:rw|:admin] or NAME=@FILE[:ro|:rw|:admin]", v);
		return -1;
	}
	memcpy(r->name, v, (size_t)(eq - v));
	char what[4096];
	snprintf(what, sizeof what, "%s", eq + 1);
	r->access = ISA_ACC_RW;
	char *colon = strrchr(what, ':');
	if (colon && (!strcmp(colon, ":ro") || !strcmp(colon, ":rw") || !strcmp(colon, ":admin"))) {
		r->access = !strcmp(colon, ":ro") ? ISA_ACC_RO : ISA_ACC_RW;
		r->admin_write = !strcmp(colon, ":admin");
		*colon = '\0';
	}
	if (isa_name_check(r->name, strlen(r->name)) != 0 || !strcmp(r->name, "args") ||
	    !strcmp(r->name, "out") || !strcmp(r->name, "const") ||
	    !strcmp(r->name, VM_FRAME_REGION)) {
		snprintf(err, errlen, "region name '%s': 1-255 printable characters, not args/out/const"
		         "/" VM_FRAME_REGION, r->name);
		return -1;
	}
	for (unsigned i = 0; i < cfg->n_regions; i++)
		if (!strcmp(cfg->regions[i].name, r->name)) {
			snprintf(err, errlen, "region '%s' given twice", r->name);
			return -1;
		}
	if (what[0] == '@') {
		if (!what[1] || strlen(what + 1) >= sizeof r->file) {
			snprintf(err, errlen, "region %s: bad file name", r->name);
			return -1;
		}
		snprintf(r->file, sizeof r->file, "%s", what + 1);
	} else if (arfd_parse_size(what, &r->size) != 0) {
		snprintf(err, errlen, "region %s: bad size '%s' (like 4096, 64K, 16M, 2G)", r->name, what);
		return -1;
	}
	cfg->n_regions++;
	return 0;
}

int arfd_config_line(struct arfd_config *cfg, const char *key, const char *v, char *err,
                     size_t errlen)
{
	uint64_t n;
	if (!strcmp(key, "listen")) {
		if (cfg->n_listen == ARFD_MAX_LISTEN) {
			snprintf(err, errlen, "at most %d listen endpoints", ARFD_MAX_LISTEN);
			return -1;
		}
		cfg->listen[cfg->n_listen++] = keep(v);
		return 0;
	}
	if (!strcmp(key, "tls-cert") || !strcmp(key, "tls-key") || !strcmp(key, "tls-ca")) {
		const char **slot = !strcmp(key, "tls-cert") ? &cfg->tls_cert :
		                    !strcmp(key, "tls-key") ? &cfg->tls_key : &cfg->tls_ca;
		*slot = keep(v);
		return 0;
	}
	if (!strcmp(key, "region"))
		return region_spec(cfg, v, err, errlen);
	if (!strcmp(key, "move-to")) {
		/* checked as a client checks the MOVED reply that will carry it */
		char why[64];
		if (ar_moved_target(v, why, sizeof why) != 0) {
			snprintf(err, errlen, "move-to '%.300s': %s (expected SCHEME:HOST:PORT)", v, why);
			return -1;
		}
		free((char *)cfg->move_to);
		cfg->move_to = keep(v);
		return 0;
	}
	if (!strcmp(key, "arf")) {
		cfg->arf_image = keep(v);
		return 0;
	}
	if (!strcmp(key, "log")) {
		for (int l = 0; l <= ARFD_LOG_DEBUG; l++)
			if (!strcmp(v, arfd_log_names[l])) {
				cfg->log_level = (enum arfd_log_level)l;
				cfg->log_given = true;
				return 0;
			}
		snprintf(err, errlen, "log '%s': expected error, warning, info or debug", v);
		return -1;
	}
	if (!strcmp(key, "syslog")) {
		if (*v) {
			snprintf(err, errlen, "syslog takes no value (got '%s')", v);
			return -1;
		}
		cfg->log_syslog = true;
		return 0;
	}
	if (!strcmp(key, "member")) {
		if (cfg->n_members >= ARFD_MAX_MEMBERS) {
			snprintf(err, errlen, "member %s: at most %d members", v, ARFD_MAX_MEMBERS);
			return -1;
		}
		if (!strchr(v, ':')) {
			snprintf(err, errlen, "member '%s': expected tcp:HOST:PORT", v);
			return -1;
		}
		cfg->members[cfg->n_members++] = keep(v);
		return 0;
	}
	if (!strcmp(key, "secret") || !strcmp(key, "admin-secret") ||
	    !strcmp(key, "secret-file") || !strcmp(key, "admin-secret-file") ||
	    !strcmp(key, "cluster-key") || !strcmp(key, "cluster-key-file")) {
		bool admin = !strncmp(key, "admin-", 6), cluster = !strncmp(key, "cluster-", 8);
		char buf[AR_MAX_SECRET + 2];
		if (strstr(key, "-file") && read_secret_file(v, buf, sizeof buf, err, errlen) != 0)
			return -1;
		const char *sv = strstr(key, "-file") ? buf : v;
		if (!*sv) {
			/* (an empty secret would be one any client carries without knowing it) */
			snprintf(err, errlen, "%s: empty", key);
			explicit_bzero(buf, sizeof buf);
			return -1;
		}
		if (strlen(sv) > AR_MAX_SECRET) {
			snprintf(err, errlen, "%s: longer than 1024 bytes", key);
			explicit_bzero(buf, sizeof buf);
			return -1;
		}
		const char **slot = cluster ? &cfg->cluster_key : admin ? &cfg->admin_secret :
		                    &cfg->secret;
		free((char *)*slot);
		*slot = keep(sv);
		explicit_bzero(buf, sizeof buf);
		return 0;
	}
	static const struct { const char *key; int is_size; size_t off, width; uint64_t min, max; } nums[] = {
#define N(k, sz, field, lo, hi) { k, sz, offsetof(struct arfd_config, field), \
		sizeof(((struct arfd_config *)0)->field), lo, hi }
		N("threads", 0, threads, 1, 1024),
		N("cache", 0, cache_max, 1, 1u << 20),
		N("max-segment", 1, max_segment, 1024, 1u << 30),
		N("fuel", 0, fuel_default, 1, UINT64_MAX / 16),
		N("max-fuel", 0, fuel_max, 1, UINT64_MAX / 16),
		N("max-output", 1, out_max, 0, 1ull << 32),
		N("max-inflight", 0, max_inflight, 1, 1u << 20),
		N("max-run-ms", 0, max_run_ms, 1, 86400000),
		N("hook-fuel-ns", 0, hook_fuel_ns, 1, 1000000000),
		N("max-conns", 0, max_conns, 1, 1u << 24),
		N("max-conns-per-addr", 0, max_conns_per_addr, 1, 1u << 24),
		N("auth-timeout", 0, auth_timeout, 1, 86400),
		N("idle-timeout", 0, idle_timeout, 1, 100u * 86400),
		N("rx-budget", 1, rx_budget, 1u << 20, 1ull << 40),
		N("lock-wait", 0, lock_wait_s, 0, 86400),
#undef N
	};
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
		if (strcmp(key, nums[i].key))
			continue;
		if (arfd_parse_size(v, &n) != 0 || n < nums[i].min || n > nums[i].max) {
			snprintf(err, errlen, "%s: '%s' is not a %s in %" PRIu64 "..%" PRIu64, key, v,
			         nums[i].is_size ? "size" : "number", nums[i].min, nums[i].max);
			return -1;
		}
		uint8_t *field = (uint8_t *)cfg + nums[i].off;
		if (nums[i].width == sizeof(unsigned)) {
			unsigned u = (unsigned)n;
			memcpy(field, &u, sizeof u);
		} else {
			memcpy(field, &n, sizeof n);
		}
		return 0;
	}
	snprintf(err, errlen, "unknown setting '%s'", key);
	return -1;
}

int arfd_config_file(struct arfd_config *cfg, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	char line[8192], e2[512];
	int lineno = 0, rc = 0;
	while (rc == 0 && fgets(line, sizeof line, f)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *p = line;
		while (isspace((unsigned char)*p))
			p++;
		char *end = p + strlen(p);
		while (end > p && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (!*p)
			continue;
		char *v = p;
		while (*v && !isspace((unsigned char)*v))
			v++;
		if (*v)
			*v++ = '\0';
		while (isspace((unsigned char)*v))
			v++;
		if (arfd_config_line(cfg, p, v, e2, sizeof e2) != 0) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, e2);
			rc = -1;
		}
	}
	fclose(f);
	return rc;
}

/* ---- log ---- */

const char *const arfd_log_names[ARFD_LOG_DEBUG + 1] = {
	[ARFD_LOG_ERROR] = "error", [ARFD_LOG_WARN] = "warning", [ARFD_LOG_INFO] = "info",
	[ARFD_LOG_DEBUG] = "debug",
};

/* log_max changes at run time (arfd's reload) while other threads log: read atomically */
static enum arfd_log_level log_max = ARFD_LOG_INFO;
static bool log_syslog;
static bool log_journal;

/* $JOURNAL_STREAM is "DEVICE:INODE" of the journal's socket when systemd connected stderr to
 * it (systemd.exec(5)); a child's redirected stderr no longer matches. */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) != 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void arfd_log_setup(enum arfd_log_level max, bool use_syslog)
{
	__atomic_store_n(&log_max, max, __ATOMIC_RELAXED);
	if (use_syslog && !log_syslog)
		openlog("arfd", LOG_PID, LOG_DAEMON);
	log_syslog = use_syslog;
	log_journal = !use_syslog && stderr_is_journal();
}

void arfd_log(enum arfd_log_level lvl, const char *fmt, ...)
{
	if (lvl > __atomic_load_n(&log_max, __ATOMIC_RELAXED))
		return;
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (log_syslog) {
		syslog(prio[lvl], "%s", msg);
		return;
	}
	if (log_journal) {
		/* the journal stamps the time and the program; the level word stays for grep */
		fprintf(stderr, "<%d>%s: %s\n", prio[lvl], arfd_log_names[lvl], msg);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ arfd: %s: %s\n", tm.tm_year + 1900,
	        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
	        arfd_log_names[lvl], msg);
}
