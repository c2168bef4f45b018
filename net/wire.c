/* wire.c: the frame header and endpoint names, the only place that knows their byte layout.
 * Every frame header read from the network goes through pn_wire_get before anything trusts it.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pn_int.h"

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }
static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

void pn_wire_put(uint8_t o[PN_HDR_LEN], const struct pn_hdr *h)
{
	put16(o, PN_MAGIC);
	o[2] = PN_VERSION;
	o[3] = h->kind;
	put16(o + 4, h->type);
	put16(o + 6, h->flags);
	put32(o + 8, h->len);
	put64(o + 12, h->coop);
	if (h->kind == PN_K_SREQ) {
		put32(o + 20, h->slot);
		put32(o + 24, h->seq);
		memset(o + 28, 0, PN_HDR_LEN - 28);
		return;
	}
	o[20] = h->origin.scheme;
	o[21] = h->origin.family;
	memcpy(o + 22, &h->origin.port, 2);      /* network order already */
	memcpy(o + 24, h->origin.addr, 16);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;
	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

int pn_wire_get(const uint8_t in[PN_HDR_LEN], struct pn_hdr *h, uint64_t max_msg)
{
	if (get16(in) != PN_MAGIC || in[2] != PN_VERSION)
		return -PN_EPROTO;
	h->kind = in[3];
	h->type = get16(in + 4);
	h->flags = get16(in + 6);
	h->len = get32(in + 8);
	h->coop = get64(in + 12);
	h->origin.scheme = in[20];
	h->origin.family = in[21];
	memcpy(&h->origin.port, in + 22, 2);
	memcpy(h->origin.addr, in + 24, 16);
	h->slot = h->seq = 0;
	if (h->kind < PN_K_MSG || h->kind > PN_K_BYE)
		return -PN_EPROTO;
	if ((h->kind == PN_K_MSG || h->kind == PN_K_SREQ) && (h->type == 0 || h->type > PN_MAX_TYPE))
		return -PN_EPROTO;
	if (h->kind == PN_K_SREQ) {
		/* never forwarded; slot and seq where the origin would be, the rest zero */
		if ((h->flags & ~PN_F_IDEMPOTENT) || !all_zero(in + 28, PN_HDR_LEN - 28))
			return -PN_EPROTO;
		h->slot = get32(in + 20);
		h->seq = get32(in + 24);
		memset(&h->origin, 0, sizeof h->origin);
		return h->len > max_msg ? -PN_ETOOBIG : 0;
	}
	if (h->flags & ~(h->kind == PN_K_HELLO ?
	                 PN_F_PROVE | PN_F_SECRET | PN_F_ADMIN | PN_F_SESSION :
	                 h->kind == PN_K_NACK || h->kind == PN_K_BYE ? 0 : PN_F_FORWARDED))
		return -PN_EPROTO;
	if ((h->origin.family != 4 && h->origin.family != 6) || h->origin.scheme < PN_S_TCP ||
	    h->origin.scheme > PN_S_MAX)
		return -PN_EPROTO;
	if (h->len > max_msg)
		return -PN_ETOOBIG;
	return 0;
}

static const char *const scheme_names[] = { [PN_S_TCP] = "tcp", [PN_S_UDP] = "udp",
                                            [PN_S_RDMA] = "rdma", [PN_S_TLS] = "tls" };

/* "scheme:host:port" with host an IPv4 address, a name, or [IPv6]. */
int pn_addr_parse(const char *name, struct pn_addr *a, int resolve)
{
	memset(a, 0, sizeof *a);
	const char *colon = strchr(name, ':');
	if (!colon)
		return -PN_EADDR;
	size_t slen = (size_t)(colon - name);
	for (int s = PN_S_TCP; s <= PN_S_MAX; s++)
		if (strlen(scheme_names[s]) == slen && !strncmp(name, scheme_names[s], slen))
			a->scheme = (uint8_t)s;
	if (!a->scheme)
		return -PN_EADDR;
	const char *host = colon + 1, *port;
	char hostbuf[256];
	if (*host == '[') {
		const char *close = strchr(host, ']');
		if (!close || close[1] != ':' || (size_t)(close - host - 1) >= sizeof hostbuf)
			return -PN_EADDR;
		memcpy(hostbuf, host + 1, (size_t)(close - host - 1));
		hostbuf[close - host - 1] = '\0';
		port = close + 2;
	} else {
		const char *pc = strrchr(host, ':');
		if (!pc || (size_t)(pc - host) >= sizeof hostbuf || pc == host)
			return -PN_EADDR;
		memcpy(hostbuf, host, (size_t)(pc - host));
		hostbuf[pc - host] = '\0';
		port = pc + 1;
	}
	char *end;
	unsigned long p = strtoul(port, &end, 10);
	if (*port == '\0' || *end || p > 65535)
		return -PN_EADDR;
	a->port = htons((uint16_t)p);
	if (inet_pton(AF_INET, hostbuf, a->addr) == 1) {
		a->family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, hostbuf, a->addr) == 1) {
		a->family = 6;
		return 0;
	}
	if (!resolve)
		return -PN_EADDR;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
	if (getaddrinfo(hostbuf, NULL, &hints, &res) != 0)
		return -PN_EADDR;
	int rc = -PN_EADDR;
	for (struct addrinfo *ai = res; ai && rc; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			memcpy(a->addr, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
			a->family = 4;
			rc = 0;
		} else if (ai->ai_family == AF_INET6) {
			memcpy(a->addr, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
			a->family = 6;
			rc = 0;
		}
	}
	freeaddrinfo(res);
	return rc;
}

void pn_addr_name(const struct pn_addr *a, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	inet_ntop(a->family == 6 ? AF_INET6 : AF_INET, a->addr, host, sizeof host);
	const char *scheme = a->scheme >= PN_S_TCP && a->scheme <= PN_S_MAX ? scheme_names[a->scheme] : "?";
	if (a->family == 6)
		snprintf(buf, len, "%s:[%s]:%u", scheme, host, ntohs(a->port));
	else
		snprintf(buf, len, "%s:%s:%u", scheme, host, ntohs(a->port));
}

socklen_t pn_addr_to_sockaddr(const struct pn_addr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	if (a->family == 6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = a->port;
		memcpy(&s6->sin6_addr, a->addr, 16);
		return sizeof *s6;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	s4->sin_family = AF_INET;
	s4->sin_port = a->port;
	memcpy(&s4->sin_addr, a->addr, 4);
	return sizeof *s4;
}

void pn_addr_from_sockaddr(struct pn_addr *a, uint8_t scheme, const struct sockaddr *sa)
{
	memset(a, 0, sizeof *a);
	a->scheme = scheme;
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		a->family = 6;
		a->port = s6->sin6_port;
		memcpy(a->addr, &s6->sin6_addr, 16);
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		a->family = 4;
		a->port = s4->sin_port;
		memcpy(a->addr, &s4->sin_addr, 4);
	}
}

bool pn_addr_same_host(const struct pn_addr *a, const struct pn_addr *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, sizeof a->addr);
}

int pn_addr_eq(const struct pn_addr *a, const struct pn_addr *b)
{
	return a->scheme == b->scheme && a->family == b->family && a->port == b->port &&
	       !memcmp(a->addr, b->addr, a->family == 6 ? 16 : 4);
}
