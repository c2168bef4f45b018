/* pn_tls.c: the TLS record layer under the tls: transport (OpenSSL's libssl).
 *
 * pn_tcp.c carries both tcp: and tls:; for a tls: connection it calls these instead of
 * recv/sendmsg on the socket, which is then non-blocking.  Everything else (frames, HELLO
 * and its HMAC proofs, admission, limits, sessions, waiters) is the same code on both.
 *
 * Authentication of the channel is the server's certificate (docs/net.md, "TLS"): the
 * acceptor presents pn_opts.tls_cert/tls_key, the connector verifies its chain against
 * pn_opts.tls_ca (else the system's roots) and that it names the IP address connected to.
 * TLS 1.3 only (ECDHE: forward secrecy), no session tickets and no client certificates: who
 * a client is stays what it proves inside, with the secret's challenge-response.
 *
 * Threads: one SSL object is never entered by two threads at once (t->lock), but the lock
 * is held only inside SSL calls, never while waiting for the socket: a reader and a writer
 * of one connection take turns record by record, as a reader and a writer of a plain socket
 * would, so a sender blocked on a full socket never stops the other direction (two peers
 * sending large frames to each other would otherwise wait for each other for ever).  With
 * tickets off, TLS 1.3 sends nothing after the handshake unless asked to write, so a
 * reading call never has bytes of its own to write.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "pn_int.h"

#define TLS_GATHER (16 * 1024)     /* small pieces of a frame are written as one record */
#define TLS_WRITE_MAX (256 * 1024) /* plaintext per SSL_write: the lock is let go between */

struct pn_tls_ctx {
	SSL_CTX *accept;               /* NULL: no certificate, this endpoint only connects */
	SSL_CTX *connect;
	BIO_METHOD *sock;              /* the socket under it (sock_write) */
};

struct pn_tls {
	SSL *ssl;
	pthread_mutex_t lock;
};

/* The reason of the last OpenSSL failure into err (and the error queue emptied, so it does
 * not show up in an unrelated call of this thread later). */
static void ssl_reason(const char *what, char *err, size_t errlen)
{
	unsigned long e = ERR_get_error();
	char buf[160] = "";
	if (e)
		ERR_error_string_n(e, buf, sizeof buf);
	snprintf(err, errlen, "%s: %s", what, e ? buf : "failed");
	ERR_clear_error();
}

/* The socket BIO of OpenSSL writes with write(2): a peer gone would raise SIGPIPE and kill
 * a program that does not ignore it, where the plain transport gets EPIPE (send with
 * MSG_NOSIGNAL, writev_all in pn_tcp.c).  So TLS goes over this small BIO instead: send
 * with MSG_NOSIGNAL, recv, and EAGAIN as "retry". */
static int sock_write(BIO *b, const char *buf, size_t len, size_t *done)
{
	BIO_clear_retry_flags(b);
	ssize_t w;
	do
		w = send((int)(intptr_t)BIO_get_data(b), buf, len, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			BIO_set_retry_write(b);
		return 0;
	}
	*done = (size_t)w;
	return 1;
}

static int sock_read(BIO *b, char *buf, size_t len, size_t *done)
{
	BIO_clear_retry_flags(b);
	ssize_t r;
	do
		r = recv((int)(intptr_t)BIO_get_data(b), buf, len, 0);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			BIO_set_retry_read(b);
		else if (r == 0)
			errno = 0;             /* end of stream, as OpenSSL's own socket BIO says */
		return 0;
	}
	*done = (size_t)r;
	return 1;
}

static long sock_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	return cmd == BIO_CTRL_FLUSH;  /* nothing is buffered here */
}

static SSL_CTX *ctx_base(bool server)
{
	SSL_CTX *x = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (!x)
		return NULL;
	SSL_CTX_set_min_proto_version(x, TLS1_3_VERSION);
	SSL_CTX_set_max_proto_version(x, TLS1_3_VERSION);
	/* partial writes and a retry from another address: writev_all (pn_tcp.c) goes on from
	 * where the last call stopped, rebuilding the same bytes.  Buffers are let go while a
	 * connection is idle, so a crowd of idle or stalled ones costs their SSL objects only
	 * (no difference measured per request: bench/tls) */
	SSL_CTX_set_mode(x, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
	                    SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(x, SSL_OP_NO_TICKET);
	/* whole socket buffers per read, not a record header and body apart: half the
	 * system calls for bulk data (what it reads ahead, pn_tls_pending reports) */
	SSL_CTX_set_read_ahead(x, 1);
	if (server)
		SSL_CTX_set_num_tickets(x, 0);   /* nothing is written after the handshake */
	return x;
}

int pn_tls_ctx_new(const struct pn_opts *o, struct pn_tls_ctx **out, char *err, size_t errlen)
{
	struct pn_tls_ctx *x = calloc(1, sizeof *x);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return -PN_ENOMEM;
	}
	x->sock = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "pn socket");
	if (!x->sock || !BIO_meth_set_write_ex(x->sock, sock_write) ||
	    !BIO_meth_set_read_ex(x->sock, sock_read) || !BIO_meth_set_ctrl(x->sock, sock_ctrl)) {
		ssl_reason("tls: BIO_meth_new", err, errlen);
		goto fail;
	}
	if (!(x->connect = ctx_base(false))) {
		ssl_reason("tls: SSL_CTX_new", err, errlen);
		goto fail;
	}
	SSL_CTX_set_verify(x->connect, SSL_VERIFY_PEER, NULL);
	if (o->tls_ca ? SSL_CTX_load_verify_locations(x->connect, o->tls_ca, NULL) != 1 :
	                SSL_CTX_set_default_verify_paths(x->connect) != 1) {
		char what[300];
		snprintf(what, sizeof what, "tls: CA %s", o->tls_ca ? o->tls_ca : "(system default)");
		ssl_reason(what, err, errlen);
		goto fail;
	}
	if (o->tls_cert || o->tls_key) {
		char what[300];
		if (!o->tls_cert || !o->tls_key) {
			snprintf(err, errlen, "tls: a certificate needs its key and a key its certificate");
			goto fail;
		}
		if (!(x->accept = ctx_base(true))) {
			ssl_reason("tls: SSL_CTX_new", err, errlen);
			goto fail;
		}
		snprintf(what, sizeof what, "tls: certificate %s", o->tls_cert);
		if (SSL_CTX_use_certificate_chain_file(x->accept, o->tls_cert) != 1) {
			ssl_reason(what, err, errlen);
			goto fail;
		}
		snprintf(what, sizeof what, "tls: key %s", o->tls_key);
		if (SSL_CTX_use_PrivateKey_file(x->accept, o->tls_key, SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(x->accept) != 1) {
			ssl_reason(what, err, errlen);
			goto fail;
		}
	}
	*out = x;
	return 0;
fail:
	pn_tls_ctx_free(x);
	return -PN_EINVAL;
}

void pn_tls_ctx_free(struct pn_tls_ctx *x)
{
	if (!x)
		return;
	SSL_CTX_free(x->accept);
	SSL_CTX_free(x->connect);
	BIO_meth_free(x->sock);
	free(x);
}

bool pn_tls_can_accept(const struct pn_tls_ctx *x)
{
	return x->accept != NULL;
}

struct pn_tls *pn_tls_new(struct pn_tls_ctx *x, int fd, const struct pn_addr *server)
{
	struct pn_tls *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->ssl = SSL_new(server ? x->connect : x->accept);
	BIO *b = t->ssl ? BIO_new(x->sock) : NULL;
	if (!b) {
		SSL_free(t->ssl);
		free(t);
		ERR_clear_error();
		return NULL;
	}
	BIO_set_data(b, (void *)(intptr_t)fd);
	BIO_set_init(b, 1);
	SSL_set_bio(t->ssl, b, b);     /* owned by the SSL object from here */
	if (server) {
		/* endpoints are named by address (pn_peer_get resolves names once), so the
		 * certificate must name that address: a subjectAltName IP entry */
		X509_VERIFY_PARAM *vp = SSL_get0_param(t->ssl);
		X509_VERIFY_PARAM_set1_ip(vp, server->addr, server->family == 6 ? 16 : 4);
		SSL_set_connect_state(t->ssl);
	} else {
		SSL_set_accept_state(t->ssl);
	}
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void pn_tls_free(struct pn_tls *t)
{
	if (!t)
		return;
	SSL_free(t->ssl);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

int pn_tls_handshake(struct pn_tls *t, char *err, size_t errlen)
{
	pthread_mutex_lock(&t->lock);
	ERR_clear_error();
	errno = 0;
	int r = SSL_do_handshake(t->ssl);
	int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, r);
	int rc = 0;
	if (e == SSL_ERROR_NONE) {
		/* done */
	} else if (e == SSL_ERROR_WANT_READ) {
		rc = PN_TLS_WANT_READ;
	} else if (e == SSL_ERROR_WANT_WRITE) {
		rc = PN_TLS_WANT_WRITE;
	} else {
		long v = SSL_get_verify_result(t->ssl);
		if (v != X509_V_OK) {
			snprintf(err, errlen, "certificate verify failed: %s",
			         X509_verify_cert_error_string(v));
			ERR_clear_error();
			rc = -PN_ETLS;
		} else if (e == SSL_ERROR_SYSCALL && !ERR_peek_error()) {
			/* the peer went away (a server restarting, a limit that shed us): a
			 * session rides through this as through a refused connection */
			snprintf(err, errlen, "connection closed during the handshake%s%s",
			         errno && errno != EAGAIN ? ": " : "",
			         errno && errno != EAGAIN ? strerror(errno) : "");
			rc = -PN_EPEERDOWN;
		} else {
			ssl_reason("handshake", err, errlen);
			rc = -PN_ETLS;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/* SSL_read/SSL_write's outcome as recv/send would say it: bytes, 0 (end), or -1 and errno
 * (EAGAIN: nothing now, the socket is what we wait for). */
static ssize_t as_syscall(struct pn_tls *t, int r, size_t n)
{
	if (r > 0)
		return (ssize_t)n;
	int e = SSL_get_error(t->ssl, r);
	ERR_clear_error();
	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;                  /* close_notify */
	case SSL_ERROR_SYSCALL:
		if (errno == 0 || errno == EAGAIN)
			errno = ECONNRESET;    /* EOF without close_notify, or a record layer error */
		return -1;
	default:
		errno = EPROTO;            /* a bad record: the connection is unusable */
		return -1;
	}
}

ssize_t pn_tls_recv(struct pn_tls *t, void *buf, size_t len)
{
	size_t n = 0;
	pthread_mutex_lock(&t->lock);
	ERR_clear_error();
	errno = 0;
	int r = SSL_read_ex(t->ssl, buf, len, &n);
	ssize_t rc = as_syscall(t, r, n);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

ssize_t pn_tls_send(struct pn_tls *t, const struct iovec *iov, int n_iov)
{
	/* a frame's 40-byte header and a small payload go out as one record (one segment on
	 * the wire, as the plain transport's writev); a large payload straight from its memory */
	uint8_t gather[TLS_GATHER];
	const void *p = iov[0].iov_base;
	size_t len = iov[0].iov_len;
	if (len < TLS_GATHER && n_iov > 1) {
		len = 0;
		for (int i = 0; i < n_iov && len < TLS_GATHER; i++) {
			size_t k = iov[i].iov_len < TLS_GATHER - len ? iov[i].iov_len : TLS_GATHER - len;
			memcpy(gather + len, iov[i].iov_base, k);
			len += k;
		}
		p = gather;
	} else if (len > TLS_WRITE_MAX) {
		len = TLS_WRITE_MAX;
	}
	size_t w = 0;
	pthread_mutex_lock(&t->lock);
	ERR_clear_error();
	errno = 0;
	int r = SSL_write_ex(t->ssl, p, len, &w);
	ssize_t rc = as_syscall(t, r, w);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

bool pn_tls_pending(struct pn_tls *t)
{
	pthread_mutex_lock(&t->lock);
	bool p = SSL_has_pending(t->ssl);
	pthread_mutex_unlock(&t->lock);
	return p;
}
