/* linkrate.c: what pn_tcp.c knows of a link's rate.  The kernel's estimate of a tcp
 * connection's delivery rate (TCP_INFO; apart from pn_tcp.c because glibc's <netinet/tcp.h>
 * lacks the fields and <linux/tcp.h> cannot be included beside it), what the sender makes of
 * its samples (pn_tx_rate_look), and what a connection carried (pn_carried_*): plain
 * functions of their inputs, which test_pn drives with made-up looks. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <linux/tcp.h>

#include "pn_int.h"

int pn_sock_delivery_rate(int fd, uint64_t *bytes_per_s, bool *app_limited,
                          struct pn_sock_busy *busy)
{
	struct tcp_info ti = { 0 };
	socklen_t len = sizeof ti;
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
	    len < offsetof(struct tcp_info, tcpi_delivery_rate) + sizeof ti.tcpi_delivery_rate)
		return -PN_ENOTSUP;
	*bytes_per_s = ti.tcpi_delivery_rate;
	*app_limited = ti.tcpi_delivery_rate_app_limited;
	/* (kernels before 4.10 lack these: zeros, never "limited by the receiver") */
	bool has_busy = len >= offsetof(struct tcp_info, tcpi_rwnd_limited) + sizeof ti.tcpi_rwnd_limited;
	busy->busy_us = has_busy ? ti.tcpi_busy_time : 0;
	busy->rwnd_us = has_busy ? ti.tcpi_rwnd_limited : 0;
	busy->acked = len >= offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof ti.tcpi_bytes_acked ?
	              ti.tcpi_bytes_acked : 0;
	return 0;
}

/* total bytes have crossed in w's direction by now: close w's window when it is long enough.
 * A rate sample is short, one payload's arrival or one ACK's, and on a machine whose CPUs
 * the two ends share with others (a veth pair between namespaces, a loaded virtual machine)
 * a sender loses its CPU in the middle of a payload, or a receiver's ACK comes late, now and
 * then: that one waits a time slice, and 30-100 KiB over 2-5 ms look like a 20 MB/s link
 * that carried 150 MB/s in the same second (one such sample packed the rest of an export
 * through an unshaped veth pair: 0.69x).  What crossed in a quarter second cannot be
 * faster than the link; an idle link makes a window slow, never fast, so windows only ever
 * raise the rates pn_link_rate and pn_link_rx_rate report (pn_carried_floor). */
void pn_carried_add(struct pn_carried *w, uint64_t now, uint64_t total)
{
	if (!w->t0 || total < w->from) {
		w->t0 = now;
		w->from = total;
		return;
	}
	if (now - w->t0 < PN_CARRIED_NS)
		return;
	if (total - w->from >= PN_CARRIED_BYTES) {
		uint64_t rate = (uint64_t)((double)(total - w->from) * 1e9 / (double)(now - w->t0));
		if (rate > atomic_load_explicit(&w->bps, memory_order_relaxed) ||
		    now - atomic_load_explicit(&w->at_ns, memory_order_relaxed) >= PN_CARRIED_KEEP_NS) {
			atomic_store_explicit(&w->bps, rate, memory_order_relaxed);
			atomic_store_explicit(&w->at_ns, now, memory_order_relaxed);
		}
	}
	w->t0 = now;
	w->from = total;
}

/* rate, or what w's link carried lately when that is more */
uint64_t pn_carried_floor(struct pn_carried *w, uint64_t now, uint64_t rate)
{
	uint64_t bps = atomic_load_explicit(&w->bps, memory_order_relaxed);
	return rate < bps &&
	       now - atomic_load_explicit(&w->at_ns, memory_order_relaxed) < PN_CARRIED_KEEP_NS ?
	       bps : rate;
}

void pn_tx_rate_look(struct pn_tx_rate *k, uint64_t now, uint64_t rate, bool app,
                     const struct pn_sock_busy *busy, uint64_t *bytes_per_s, bool *limited)
{
	/* held back by the receiver's window for at least half the time it sent since the last
	 * look: the rate is the reader's (a receiver busy writing files), which packing would
	 * only slow down further; as good as app-limited */
	if (busy->busy_us > k->last.busy_us) {
		if ((busy->rwnd_us - k->last.rwnd_us) * 2 >= busy->busy_us - k->last.busy_us)
			app = true;
		k->last = *busy;
	}
	bool fresh = k->rate_at_ns && now - k->rate_at_ns < PN_TX_RATE_KEEP_NS;
	if (busy->acked)
		pn_carried_add(&k->carried, now, busy->acked);
	/* The lowest recent sample, not the last: a burst a shaper's bucket lets through at the
	 * speed of the wire would otherwise hide the link's rate every other transfer.  Tried
	 * and taken out again: forgetting it after 4 MiB of samples twice as fast, and taking a
	 * lower one only once a second sample confirmed it, both against one late ACK on a
	 * loaded machine (a sample of 27 MB/s among 1-3 GB/s on an unshaped veth pair, which
	 * packed a few hundred outputs of an export).  On a 100 Mbit/s link the packed replies
	 * of a tar through a mount go out whole, app-limited, at a bucket's speed, and its
	 * samples that are not come one per large reply: with either rule the server's view
	 * lost the link for the 3,683 replies before the client's own view had its first
	 * sample, and the tar took 5.6-7.6 s against 3.4-3.5. */
	if (!app && rate > 0 && (!fresh || rate < k->rate_bps)) {
		k->rate_bps = rate;
		k->rate_at_ns = now;
		fresh = true;
	}
	*bytes_per_s = pn_carried_floor(&k->carried, now, fresh ? k->rate_bps : rate);
	*limited = !fresh;
}
