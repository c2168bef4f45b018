/* arfd: the Active RDMA server.  Exports regions and runs the code segments clients ship
 * against them (server.c does the work; this is the command line and the signal handling).
 */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

static void usage(FILE *f)
{
	fprintf(f,
	"usage: arfd --listen ENDPOINT [--listen ENDPOINT ...] [--region SPEC ...] [options]\n"
	"\n"
	"  --listen ENDPOINT      tcp:HOST:PORT or udp:HOST:PORT (loopback unless told otherwise:\n"
	"                         tcp:0.0.0.0:7070 listens on every interface)\n"
	"  --region NAME=SIZE[:ro|:rw]   anonymous zeroed memory (SIZE like 4096, 64M, 2G)\n"
	"  --region NAME=@FILE[:ro|:rw]  a file mapped MAP_SHARED (rw writes reach the file,\n"
	"                         msync'd on shutdown); default access rw\n"
	"  --arf IMAGE            serve an ARF filesystem image (arf mkfs) as rw region \"arf\";\n"
	"                         a corrupt image is refused (repair it with arf fsck --repair)\n"
	"  --config FILE          settings, one \"key value\" per line (the option names\n"
	"                         without --; '#' comments), e.g. \"region data=@/srv/d.bin:ro\"\n"
	"  --secret S             clients must know S (tcp: proved by HMAC challenge-response,\n"
	"                         never sent; udp: sent with each request)\n"
	"  --threads N            worker threads running segments (default 4)\n"
	"  --cache N              installed segments kept, least recently used evicted (256)\n"
	"  --max-segment SIZE     largest segment accepted (16M)\n"
	"  --fuel N               fuel of a run that asks for none (%llu)\n"
	"  --max-fuel N           most fuel a run may ask for (10 x --fuel)\n"
	"  --max-output SIZE      most output bytes per run, and per READ (64M)\n"
	"  --max-inflight N       concurrent requests per client (64)\n"
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
	"\n"
	"Hooks offered to segments: now \":l\" (ns since the epoch), log \"lll:v\" (region,\n"
	"offset, length: a line into this log).  SIGTERM or SIGINT: finish the requests in\n"
	"flight (10 s at most), msync file-backed regions, exit 0.\n",
	(unsigned long long)VM_DEFAULT_FUEL);
}

int main(int argc, char **argv)
{
	/* replies and outputs of up to a few MiB per request: keep their pages (arc.h) */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	static struct arfd_config cfg;
	char err[512];
	enum arfd_log_level level = ARFD_LOG_INFO;
	bool use_syslog = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--syslog")) {
			use_syslog = true;
			continue;
		}
		if (strncmp(a, "--", 2) != 0 || i + 1 >= argc) {
			fprintf(stderr, "arfd: %s: %s (see --help)\n", a,
			        strncmp(a, "--", 2) ? "unexpected argument" : "needs a value");
			return 2;
		}
		const char *v = argv[++i];
		if (!strcmp(a, "--config")) {
			if (arfd_config_file(&cfg, v, err, sizeof err) != 0) {
				fprintf(stderr, "arfd: %s\n", err);
				return 2;
			}
		} else if (!strcmp(a, "--log")) {
			static const char *const names[] = { "error", "warning", "info", "debug" };
			int found = -1;
			for (int l = 0; l < 4; l++)
				if (!strcmp(v, names[l]))
					found = l;
			if (found < 0) {
				fprintf(stderr, "arfd: --log %s: expected error, warning, info or debug\n", v);
				return 2;
			}
			level = (enum arfd_log_level)found;
		} else if (arfd_config_line(&cfg, a + 2, v, err, sizeof err) != 0) {
			fprintf(stderr, "arfd: %s\n", err);
			return 2;
		}
	}
	arfd_log_setup(level, use_syslog);

	/* Signals are taken synchronously by this thread only; every other thread blocks them. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct arfd *s = arfd_start(&cfg, err, sizeof err);
	if (!s) {
		arfd_log(ARFD_LOG_ERROR, "%s", err);
		return 1;
	}
	for (unsigned i = 0; i < cfg.n_listen; i++)
		arfd_log(ARFD_LOG_INFO, "listening on %s", cfg.listen[i]);
	const char *schemes[] = { "tcp", "udp" };
	for (int i = 0; i < 2; i++)
		if (arfd_endpoint(s, schemes[i]))
			arfd_log(ARFD_LOG_INFO, "endpoint %s", arfd_endpoint(s, schemes[i]));
	for (unsigned i = 0; i < cfg.n_regions; i++)
		arfd_log(ARFD_LOG_INFO, "region %s: %s%s (%s)", cfg.regions[i].name,
		         cfg.regions[i].file[0] ? "file " : "anonymous",
		         cfg.regions[i].file, cfg.regions[i].access & ISA_ACC_WRITE ? "rw" : "ro");
	int sig = 0;
	sigwait(&set, &sig);
	arfd_log(ARFD_LOG_INFO, "%s: draining requests in flight", strsignal(sig));
	arfd_stop(s, 10000);
	arfd_log(ARFD_LOG_INFO, "stopped");
	return 0;
}
