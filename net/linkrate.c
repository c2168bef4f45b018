/* linkrate.c: the kernel's estimate of a tcp connection's delivery rate (TCP_INFO), apart
 * from pn_tcp.c because glibc's <netinet/tcp.h> lacks the fields and <linux/tcp.h> cannot be
 * included beside it. */
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
