/* relay.h: a tcp relay on loopback that can lose a reply, for the session tests (test_pn,
 * test_arfd): it forwards one connection at a time between a client and a server, and with
 * `cut` set it drops the next bytes coming back from the server and closes both connections,
 * after the server ran a request and before the client read its reply.  Included by each
 * test (static: one copy per test program). */
#ifndef RELAY_H
#define RELAY_H

#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct relay {
	int lfd, port, to_port;
	atomic_bool stop;
	_Atomic int cut;
	atomic_bool down;              /* the link is down: connections are closed at once */
	atomic_bool down_at_cut;       /* the link goes down with the cut (nothing comes back) */
	_Atomic int cuts;
	pthread_t t;
};

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
				if (n <= 0 || send(s, buf, (size_t)n, MSG_NOSIGNAL) != n)
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
				if (n <= 0 || send(c, buf, (size_t)n, MSG_NOSIGNAL) != n)
					break;
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
