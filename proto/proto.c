/* proto.c: encoding and decoding of Active RDMA requests and replies (ar_proto.h).
 * Every byte from the network is read through struct ar_rd, which never reads past its end
 * and makes every later read fail once one did; callers check r.failed once at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ar_proto.h"

static const char *const err_msgs[] = {
#define ERR(name, value, msg) [value] = msg,
#include "ar_err.def"
#undef ERR
};

const char *ar_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err >= AR_ECOUNT || !err_msgs[err])
		return "unknown error";
	return err_msgs[err];
}

/* ---- writing ---- */

void ar_buf_free(struct ar_buf *b)
{
	if (!b->fixed)
		free(b->p);
	*b = (struct ar_buf){ 0 };
}

/* The growth path, out of line: most reservations fit the capacity already (a request is a
 * dozen small numbers into a buffer sized once) and take only ar_put_space's first test. */
static uint8_t *put_grow(struct ar_buf *b, size_t n)
{
	if (b->failed)
		return NULL;
	if (n > SIZE_MAX / 2 - b->len || b->fixed) {
		b->failed = 1;
		return NULL;
	}
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	uint8_t *p = realloc(b->p, cap);
	if (!p) {
		b->failed = 1;
		return NULL;
	}
	b->p = p;
	b->cap = cap;
	uint8_t *at = b->p + b->len;
	b->len += n;
	return at;
}

uint8_t *ar_put_space(struct ar_buf *b, size_t n)
{
	/* (ar_put_fast's test again: ar_put_bytes and others call here directly) */
	if (!b->failed && b->p && n <= b->cap - b->len) {
		uint8_t *at = b->p + b->len;
		b->len += n;
		return at;
	}
	return put_grow(b, n);
}

void ar_put_bytes(struct ar_buf *b, const void *src, size_t n)
{
	uint8_t *p = ar_put_fast(b, n);
	if (p && n)
		memcpy(p, src, n);
}
void ar_put_str16(struct ar_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n > 0xffff) {
		b->failed = 1;
		return;
	}
	ar_put16(b, (uint16_t)n);
	ar_put_bytes(b, s, n);
}

/* ---- reading ---- */

void ar_get_str16(struct ar_rd *r, char *out, size_t cap)
{
	uint16_t n = ar_get16(r);
	const uint8_t *p = ar_get_bytes(r, n);
	if (!p || n >= cap) {
		r->failed = 1;
		if (cap)
			out[0] = '\0';
		return;
	}
	memcpy(out, p, n);
	out[n] = '\0';
}

/* ---- headers ---- */

/* The headers are reserved whole, once (each request and reply has one). */
void ar_req_begin(struct ar_buf *b, const char *secret)
{
	size_t n = secret ? strlen(secret) : 0;
	if (n > 0xffff) {
		b->failed = 1;
		return;
	}
	uint8_t *p = ar_put_space(b, 6 + n);
	if (!p)
		return;
	ar_put_le32(p, AR_REQ_MAGIC);
	p[4] = (uint8_t)n;
	p[5] = (uint8_t)(n >> 8);
	if (n)
		memcpy(p + 6, secret, n);
}

int ar_req_parse(struct ar_rd *r, char *secret, size_t cap)
{
	if (ar_get32(r) != AR_REQ_MAGIC)
		return -AR_EPROTO;
	uint16_t n = ar_get16(r);
	const uint8_t *p = ar_get_bytes(r, n);
	if (r->failed || n > AR_MAX_SECRET || n >= cap)
		return -AR_EPROTO;
	memcpy(secret, p, n);
	secret[n] = '\0';
	return 0;
}

void ar_rep_begin(struct ar_buf *b, int status, const char *msg)
{
	size_t n = msg ? strlen(msg) : 0;
	if (n > AR_MAX_MSG)
		n = AR_MAX_MSG;
	uint8_t *p = ar_put_space(b, 10 + n);
	if (!p)
		return;
	ar_put_le32(p, AR_REP_MAGIC);
	ar_put_le32(p + 4, (uint32_t)status);
	p[8] = (uint8_t)n;
	p[9] = (uint8_t)(n >> 8);
	if (n)
		memcpy(p + 10, msg, n);
}

int ar_rep_parse(struct ar_rd *r, int *status, char *msg, size_t cap)
{
	if (ar_get32(r) != AR_REP_MAGIC)
		return -AR_EPROTO;
	*status = (int32_t)ar_get32(r);
	uint16_t n = ar_get16(r);
	const uint8_t *p = ar_get_bytes(r, n);
	if (r->failed || n > AR_MAX_MSG || *status > 0 || *status <= -AR_ECOUNT)
		return -AR_EPROTO;
	if (cap) {
		size_t k = n < cap - 1 ? n : cap - 1;
		memcpy(msg, p, k);
		msg[k] = '\0';
	}
	return 0;
}

/* A MOVED reply comes from the network: whatever it names, the client connects there next, so
 * only a plain endpoint of ours passes (no spaces or control bytes to smuggle into a log line,
 * no unbounded length, a port that is one). */
int ar_moved_target(const char *msg, char *why, size_t whylen)
{
	static const char *const schemes[] = { "tcp:", "tls:", "udp:", "rdma:" };
	const char *reason = NULL;
	size_t n = strnlen(msg, AR_MAX_ENDPOINT + 1);
	const char *host = NULL;
	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0] && !host; i++)
		if (!strncmp(msg, schemes[i], strlen(schemes[i])))
			host = msg + strlen(schemes[i]);
	const char *colon = host ? strrchr(host, ':') : NULL;
	if (n == 0)
		reason = "empty";
	else if (n > AR_MAX_ENDPOINT)
		reason = "longer than 255 bytes";
	else if (!host)
		reason = "not tcp:, tls:, udp: or rdma:";
	else if (!colon || colon == host)
		reason = "no HOST:PORT";
	if (!reason)
		for (const char *q = host; q < colon && !reason; q++)
			if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
			      (*q >= '0' && *q <= '9') || *q == '.' || *q == '-' || *q == '_'))
				reason = "a character that is not in a host name";
	if (!reason) {
		const char *port = colon + 1;
		size_t len = strlen(port);
		unsigned long v = 0;
		if (len == 0 || len > 5)
			reason = "a port outside 1..65535";
		for (size_t i = 0; i < len && !reason; i++) {
			if (port[i] < '0' || port[i] > '9')
				reason = "a port that is not a number";
			else
				v = v * 10 + (unsigned long)(port[i] - '0');
		}
		if (!reason && (port[0] == '0' || v > 65535))
			reason = "a port outside 1..65535";
	}
	if (reason && why && whylen)
		snprintf(why, whylen, "%s", reason);
	return reason ? -1 : 0;
}
