/* arfd: the Active RDMA server.  Exports regions and runs the code segments clients ship
 * against them (server.c does the work; this is the command line, the signal handling and
 * the service manager's notifications: ready, reloading, stopping).
 */
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "server.h"

/* How long SIGTERM waits for requests in flight before cancelling them: the rest of the
 * documented 10 s is for the cancelled runs to stop (one chunk of fuel or one hook call),
 * the endpoints to close and file regions to be msync'd. */
#define ARFD_STOP_WAIT_MS 8000

static void usage(FILE *f)
{
	fprintf(f,
	"usage: arfd --listen ENDPOINT [--listen ENDPOINT ...] [--region SPEC ...] [options]\n"
	"\n"
	"  --listen ENDPOINT      tcp:HOST:PORT, tls:HOST:PORT or udp:HOST:PORT (loopback unless\n"
	"                         told otherwise: tcp:0.0.0.0:7070 listens on every interface)\n"
	"  --region NAME=SIZE[:ro|:rw]   anonymous zeroed memory (SIZE like 4096, 64M, 2G)\n"
	"  --region NAME=@FILE[:ro|:rw]  a file mapped MAP_SHARED (rw writes reach the file,\n"
	"                         msync'd on shutdown); default access rw; :admin is rw for\n"
	"                         clients with --admin-secret, ro for the others\n"
	"  --arf IMAGE            serve an ARF filesystem image (arf mkfs) as rw region \"arf\";\n"
	"                         a corrupt image is refused (repair it with arf fsck --repair)\n"
	"  --config FILE          settings, one \"key value\" per line (the option names\n"
	"                         without --; '#' comments), e.g. \"region data=@/srv/d.bin:ro\"\n"
	"  --secret S             clients must know S (proved by HMAC challenge-response,\n"
	"                         never sent)\n"
	"  --admin-secret S       INSTALL, and writing :admin regions, need S; --secret (or,\n"
	"                         without it, nothing) allows EXEC, READ, WRITE, REGIONS,\n"
	"                         STATS.  Without it, --secret allows everything\n"
	"  --secret-file F, --admin-secret-file F   the same, from the first line of F\n"
	"  --cluster-key S, --cluster-key-file F   the key a cluster's servers share: a request\n"
	"                         another server forwards is believed only from one that\n"
	"                         proved it (docs/cluster.md, \"Delegation\")\n"
	"  --member ENDPOINT      repeated: members 0, 1, ... a segment's forward(k) hook sends\n"
	"                         its request to (an ARF metadata server: its data servers,\n"
	"                         in the order of the --arf image's cluster description,\n"
	"                         which arfd checks)\n"
	"  --tls-cert F, --tls-key F   this server's certificate chain and key (PEM) for tls:\n"
	"                         (TLS 1.3; the certificate names the address: subjectAltName\n"
	"                         IP); the secrets are proved inside it as over tcp:\n"
	"  --tls-ca F             CAs trusted when connecting to a tls: peer (system's default)\n"
	"  --threads N            worker threads running segments (default 4)\n"
	"  --cache N              installed segments kept, least recently used evicted (256)\n"
	"  --max-segment SIZE     largest segment accepted (16M)\n"
	"  --fuel N               fuel of a run that asks for none (%llu)\n"
	"  --max-fuel N           most fuel a run may ask for (10 x --fuel)\n"
	"  --max-output SIZE      most output bytes per run, and per READ (64M)\n"
	"  --max-inflight N       concurrent requests per client (64)\n"
	"  --max-run-ms N         wall-clock limit of a run, trap 'time' (%d; a request may\n"
	"                         ask for less)\n"
	"  --hook-fuel-ns N       a hook call costs 1 unit of fuel per N ns it takes (%d: the\n"
	"                         default fuel pays for 10 s of pause)\n"
	"  --max-conns N          connections at once (RLIMIT_NOFILE - 64); past it, and past\n"
	"  --max-conns-per-addr N   this many from one IP address (256), the oldest connection\n"
	"                         that has sent no request with the secret yet is closed, else\n"
	"                         the new one\n"
	"  --auth-timeout S       a connection without such a request by then is closed (10)\n"
	"  --idle-timeout S       a connection silent this long is closed (600)\n"
	"  --rx-budget SIZE       request bytes being received at once over all connections;\n"
	"                         past it, the server stops reading large ones until some\n"
	"                         finish (256M)\n"
	"  --log LEVEL            error, warning, info (default) or debug\n"
	"  --syslog               log to syslog instead of stderr\n"
	"  --check                read the settings and exit: 0 when they are valid, else 2\n"
	"                         with the reason (systemctl reload runs it first)\n"
	"  --lock-wait S          another arfd serves the --arf image (holds its lock): wait\n"
	"                         up to S seconds for it to stop or move (0: refuse at once)\n"
	"  --move-to ENDPOINT     in the --config file, applied by SIGHUP: finish the requests\n"
	"                         in flight, write the image back and let it go, then answer\n"
	"                         every request with MOVED naming ENDPOINT (the arfd that now\n"
	"                         serves the image: libarc clients continue there)\n"
	"\n"
	"Runs go to 2 x --threads workers, at most --threads of them running requests that have\n"
	"run less than 100 ms, and at most --threads for one client, so long runs leave room\n"
	"for short ones and for other clients.  A run whose client disconnects (tcp:, rdma:)\n"
	"is cancelled a second later.  READ, WRITE, REGIONS and STATS are answered on the I/O\n"
	"thread.\n"
	"Hooks offered to segments: now \":l\" (ns since the epoch), log \"lll:v\" (region,\n"
	"offset, length: a line into this log), sync, writeback, pause (docs/protocol.md).\n"
	"SIGTERM or SIGINT: finish the requests in flight for up to %d s, then cancel what\n"
	"still runs (its client gets SHUTDOWN), msync file-backed regions, exit 0: within 10 s.\n"
	"SIGHUP: read the options and the --config file again and apply the log level and a\n"
	"move-to (the rest needs a restart).  Under systemd (Type=notify) it tells when it is ready,\n"
	"reloading and stopping.\n",
	(unsigned long long)VM_DEFAULT_FUEL, ARFD_DEFAULT_RUN_MS, ARFD_DEFAULT_HOOK_FUEL_NS,
	ARFD_STOP_WAIT_MS / 1000);
}

/* The settings of the command line, in order; a --config file's lines count where the
 * option stands.  0, or -1 with a message. */
static int parse_args(int argc, char **argv, struct arfd_config *cfg, char *err, size_t errlen)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--syslog")) {
			cfg->log_syslog = true;
			continue;
		}
		if (!strcmp(a, "--check"))
			continue;   /* main's */
		if (strncmp(a, "--", 2) != 0 || i + 1 >= argc) {
			snprintf(err, errlen, "%s: %s (see --help)", a,
			         strncmp(a, "--", 2) ? "unexpected argument" : "needs a value");
			return -1;
		}
		const char *v = argv[++i];
		int rc = !strcmp(a, "--config") ? arfd_config_file(cfg, v, err, errlen)
		                                 : arfd_config_line(cfg, a + 2, v, err, errlen);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static enum arfd_log_level level_of(const struct arfd_config *cfg)
{
	return cfg->log_given ? cfg->log_level : ARFD_LOG_INFO;
}

/* A state line for the service manager (sd_notify(3): READY=1, RELOADING=1, STOPPING=1,
 * STATUS=...); nothing when arfd was built without libsystemd or is not run by systemd. */
__attribute__((format(printf, 1, 2)))
static void notify(const char *fmt, ...)
{
#ifdef HAVE_LIBSYSTEMD
	char state[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(state, sizeof state, fmt, ap);
	va_end(ap);
	sd_notify(0, state);
#else
	(void)fmt;
#endif
}

/* SIGHUP: the same arguments read again, so an edited --config file is seen.  The log level
 * is applied (to syslog, or not, as at the start: use_syslog), and a "move-to" the file now
 * has (arfd_move: the image goes to that server, this one redirects its clients there); the
 * other settings are built into the running server (threads, endpoints, mapped regions, the
 * sizes its buffers were made for) and wait for a restart.  A file with an error changes
 * nothing. */
static void reload(struct arfd *s, int argc, char **argv, bool use_syslog)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	notify("RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)now.tv_sec * 1000000 +
	       (unsigned long long)now.tv_nsec / 1000);
	struct arfd_config *cfg = calloc(1, sizeof *cfg);
	char err[512];
	if (!cfg) {
		arfd_log(ARFD_LOG_ERROR, "reload: out of memory; settings unchanged");
	} else if (parse_args(argc, argv, cfg, err, sizeof err) != 0) {
		arfd_log(ARFD_LOG_ERROR, "reload: %s; settings unchanged", err);
	} else {
		arfd_log_setup(level_of(cfg), use_syslog);
		arfd_log(ARFD_LOG_INFO, "reload: log level %s; other settings change on restart",
		         arfd_log_names[level_of(cfg)]);
		if (cfg->move_to) {
			notify("STATUS=moving to %s: draining requests in flight", cfg->move_to);
			arfd_log(ARFD_LOG_INFO, "reload: moving to %s: draining requests in flight",
			         cfg->move_to);
			if (arfd_move(s, cfg->move_to, err, sizeof err) != 0)
				arfd_log(ARFD_LOG_ERROR, "reload: %s", err);
			else
				notify("STATUS=moved to %s: redirecting clients there", cfg->move_to);
		}
	}
	if (cfg) {
		/* the strings arfd_config_line copied: nothing else holds them */
		for (unsigned i = 0; i < cfg->n_listen; i++)
			free((char *)cfg->listen[i]);
		free((char *)cfg->secret);
		free((char *)cfg->admin_secret);
		free((char *)cfg->cluster_key);
		for (unsigned i = 0; i < cfg->n_members; i++)
			free((char *)cfg->members[i]);
		free((char *)cfg->arf_image);
		free((char *)cfg->move_to);
		free(cfg);
	}
	notify("READY=1");
}

int main(int argc, char **argv)
{
	/* replies and outputs of up to a few MiB per request: keep their pages (arc.h) */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	static struct arfd_config cfg;
	char err[512];
	bool check_only = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--check"))
			check_only = true;
		else if (!strncmp(argv[i], "--", 2) && strcmp(argv[i], "--syslog"))
			i++;   /* its value, which may be any word */
	}
	if (parse_args(argc, argv, &cfg, err, sizeof err) != 0) {
		fprintf(stderr, "arfd: %s\n", err);
		return 2;
	}
	if (check_only) {
		/* what arfd_start would refuse before opening anything */
		if (cfg.n_listen == 0) {
			fprintf(stderr, "arfd: no --listen endpoint given\n");
			return 2;
		}
		return 0;
	}
	if (cfg.move_to) {
		/* a move gives away the image a running server holds: one starting with the setting
		 * has nothing to give (--check accepts it, since systemctl reload checks first) */
		fprintf(stderr, "arfd: move-to %s: applied by a reload (SIGHUP) of a running arfd; "
		        "remove it before starting arfd\n", cfg.move_to);
		return 2;
	}
	arfd_log_setup(level_of(&cfg), cfg.log_syslog);

	/* Signals are taken synchronously by this thread only; every other thread blocks them. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct arfd *s = arfd_start(&cfg, err, sizeof err);
	if (!s) {
		arfd_log(ARFD_LOG_ERROR, "%s", err);
		notify("STATUS=%s", err);
		return 1;
	}
	for (unsigned i = 0; i < cfg.n_listen; i++)
		arfd_log(ARFD_LOG_INFO, "listening on %s", cfg.listen[i]);
	const char *schemes[] = { "tcp", "tls", "udp" };
	char status[256] = "serving";
	for (int i = 0; i < 3; i++) {
		const char *ep = arfd_endpoint(s, schemes[i]);
		if (!ep)
			continue;
		arfd_log(ARFD_LOG_INFO, "endpoint %s", ep);
		size_t used = strlen(status);
		snprintf(status + used, sizeof status - used, " %s", ep);
	}
	for (unsigned i = 0; i < cfg.n_regions; i++)
		arfd_log(ARFD_LOG_INFO, "region %s: %s%s (%s)", cfg.regions[i].name,
		         cfg.regions[i].file[0] ? "file " : "anonymous",
		         cfg.regions[i].file, cfg.regions[i].access & ISA_ACC_WRITE ? "rw" : "ro");
	/* every endpoint accepts connections now: units ordered after arfd may start */
	notify("READY=1\nSTATUS=%s", status);
	int sig = 0;
	while (sigwait(&set, &sig) == 0 && sig == SIGHUP)
		reload(s, argc, argv, cfg.log_syslog);
	notify("STOPPING=1\nSTATUS=draining requests in flight");
	arfd_log(ARFD_LOG_INFO, "%s: draining requests in flight", strsignal(sig));
	arfd_stop(s, ARFD_STOP_WAIT_MS);
	arfd_log(ARFD_LOG_INFO, "stopped");
	return 0;
}
