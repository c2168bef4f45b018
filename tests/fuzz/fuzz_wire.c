/* fuzz_wire.c: libFuzzer target for what a tcp peer may write to a Paradis-Net endpoint:
 * frame headers (pn_wire_get, and for a header it accepts, pn_wire_put giving the same
 * bytes back), then the whole input written into a connection to a live endpoint that
 * serves sessions (HELLO with its session block, SREQ, NACK, BYE, messages, junk), whose
 * echo handler answers.  Nothing may crash or leak (ASan), and the endpoint must still
 * answer a request of its own afterwards.  Build and run with `make fuzz`; seeds are in
 * tests/fuzz/seeds/fuzz_wire (a HELLO naming a session followed by an SREQ, and others).
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pn_int.h"

static struct pn *srv, *cli;
static pn_peer to_srv;
static int srv_port;

static void h_echo(struct pn *pn, pn_peer from, pn_type type, pn_coop coop, void *msg,
                   size_t len, void *arg)
{
	pn_send(pn, from, 2, coop, msg, len);
}

static void setup(void)
{
	char err[200];
	const char *l[] = { "tcp:127.0.0.1:0" };
	struct pn_opts o = { .n_workers = 1, .max_msg = 1u << 20, .max_sessions = 8,
	                     .session_slots = 8, .session_idle_ms = 1000,
	                     .preauth_timeout_ms = 500 };
	srv = pn_init(l, 1, &o, err, sizeof err);
	cli = pn_init(l, 1, NULL, err, sizeof err);
	if (!srv || !cli) {
		fprintf(stderr, "pn_init: %s\n", err);
		abort();
	}
	pn_set_handler(srv, 1, PN_INLINE, h_echo, NULL);
	srv_port = atoi(strrchr(pn_self(srv, "tcp"), ':') + 1);
	pn_peer_get(cli, pn_self(srv, "tcp"), &to_srv);
	pn_session_open(cli, to_srv, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!srv)
		setup();
	/* the header decoder alone: what it accepts it encodes back to the same bytes */
	if (size >= PN_HDR_LEN) {
		struct pn_hdr h;
		if (pn_wire_get(data, &h, 1u << 20) == 0) {
			uint8_t back[PN_HDR_LEN];
			pn_wire_put(back, &h);
			/* (magic, version, and what the decoder keeps; the origin of an SREQ and its
			 * zeros are checked, so these agree byte for byte) */
			if (memcmp(back, data, PN_HDR_LEN)) {
				fprintf(stderr, "pn_wire_put does not give back what pn_wire_get took\n");
				abort();
			}
		}
	}
	/* the bytes into a connection, as a peer would write them */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)srv_port) };
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		abort();
	if (size && send(fd, data, size, MSG_NOSIGNAL) < 0) { /* it may close on us: fine */ }
	shutdown(fd, SHUT_WR);
	char buf[4096];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	for (int i = 0; i < 50 && poll(&p, 1, 20) > 0; i++)   /* read what it answers, bounded */
		if (recv(fd, buf, sizeof buf, 0) <= 0)
			break;
	close(fd);
	/* still serving */
	struct pn_rcv_desc d = { .buf = buf, .cap = sizeof buf, .type = 2, .from = to_srv };
	pn_coop c = pn_coop_start(cli, &d, 1);
	int rc = pn_send(cli, to_srv, 1, c, "ping", 4);
	int rc2 = pn_coop_end(cli, c, 5000);
	if (rc || rc2 || d.len != 4 || memcmp(buf, "ping", 4)) {
		fprintf(stderr, "the endpoint stopped answering: %s / %s\n", pn_strerror(rc),
		        pn_strerror(rc2));
		abort();
	}
	return 0;
}
