/* relay.h: a tcp relay on loopback that can lose a reply, for the session tests (test_pn,
 * test_arfd): it forwards one connection at a time between a client and a server, and with
 * `cut` set it drops the next bytes coming back from the server and closes both connections,
 * after the server ran a request and before the client read its reply.  With `pace_bps`
 * set it passes the bytes on, both ways, in pieces of PACE_PIECE bytes at that rate (a slow
 * link, for pn_link_rx_rate and compression).  With `pause_us` set it stops that long once, in
 * the middle of the next piece coming back from the server (a sender that lost its CPU for
 * a time slice in the middle of a reply).  Included by each test (static: one copy per test
 * program). */
#ifndef RELAY_H
#define RELAY_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PACE_PIECE 4096

struct relay {
	int lfd, port, to_port;
	atomic_bool stop;
	_Atomic int cut;
	atomic_bool down;              /* the link is down: connections are closed at once */
	atomic_bool down_at_cut;       /* the link goes down with the cut (nothing comes back) */
	_Atomic int cuts;
	_Atomic long pace_bps;         /* 0: as fast as it comes */
	_Atomic long pause_us;         /* 0: no pause */
	pthread_t t;
};

/* Send n bytes of buf to fd at r->pace_bps (in PACE_PIECE pieces), or at once.  0 or -1. */
static int relay_send(struct relay *r, int fd, const char *buf, size_t n)
{
	long bps = atomic_load(&r->pace_bps);
	for (size_t off = 0; off < n;) {
		size_t k = bps > 0 && n - off > PACE_PIECE ? PACE_PIECE : n - off;
		if (send(fd, buf + off, k, MSG_NOSIGNAL) != (ssize_t)k)
			return -1;
		off += k;
		if (bps > 0) {
			long ns = (long)((double)k * 1e9 / (double)bps);
			struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

static void *relay_main(void *arg)
{
	struct relay *r = arg;
	while (!atomic_load(&r->stop)) {
		struct pollfd lp = { .fd = r->lfd, .events = POLLIN };
		if (poll(&lp, 1, 50) <= 0)
			continue;
		int c = accept(r->lfd, NULL, NULL);
		if (c < 0)
			continue;
		if (atomic_load(&r->down)) {
			close(c);
			continue;
		}
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)r->to_port) };
		inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
		if (connect(s, (struct sockaddr *)&sa, sizeof sa) != 0) {
			close(c);
			close(s);
			continue;
		}
		/* a link passes bytes on as they come: without this, the tail of a piece waited
		 * for the ACK of the last one (Nagle), which the other end delays up to 40 ms */
		int one = 1;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		for (;;) {
			struct pollfd p[2] = { { .fd = c, .events = POLLIN }, { .fd = s, .events = POLLIN } };
			if (atomic_load(&r->stop) || atomic_load(&r->down))
				break;
			if (poll(p, 2, 50) <= 0)
				continue;
			if (atomic_load(&r->down))     /* (set while we polled: forward nothing) */
				break;
			char buf[65536];
			if (p[0].revents) {
				ssize_t n = read(c, buf, sizeof buf);
				if (n <= 0 || relay_send(r, s, buf, (size_t)n) != 0)
					break;
			}
			if (p[1].revents) {
				ssize_t n = read(s, buf, sizeof buf);
				if (n > 0 && atomic_load(&r->cut)) {
					atomic_store(&r->cut, 0);
					atomic_fetch_add(&r->cuts, 1);
					if (atomic_load(&r->down_at_cut))
						atomic_store(&r->down, true);
					break;             /* the reply is lost with the connection */
				}
				long pause = n > 1 ? atomic_exchange(&r->pause_us, 0) : 0;
				if (pause > 0) {
					struct timespec ts = { pause / 1000000, pause % 1000000 * 1000 };
					if (relay_send(r, c, buf, (size_t)n / 2) != 0)
						break;
					nanosleep(&ts, NULL);
					if (relay_send(r, c, buf + n / 2, (size_t)(n - n / 2)) != 0)
						break;
				} else if (n <= 0 || relay_send(r, c, buf, (size_t)n) != 0) {
					break;
				}
			}
		}
		close(c);
		close(s);
	}
	return NULL;
}

static int relay_start(struct relay *r, int to_port)
{
	memset(r, 0, sizeof *r);
	r->to_port = to_port;
	r->lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	socklen_t sl = sizeof sa;
	if (bind(r->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(r->lfd, 8) != 0 ||
	    getsockname(r->lfd, (struct sockaddr *)&sa, &sl) != 0) {
		close(r->lfd);
		return -1;
	}
	r->port = ntohs(sa.sin_port);
	return pthread_create(&r->t, NULL, relay_main, r);
}

static void relay_stop(struct relay *r)
{
	atomic_store(&r->stop, true);
	pthread_join(r->t, NULL);
	close(r->lfd);
}

#endif
