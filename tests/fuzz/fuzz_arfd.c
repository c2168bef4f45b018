/* fuzz_arfd.c: libFuzzer target for arfd's request decoder and handlers: the input is one
 * request, sent over a connection that proved a secret to an arfd running in this process
 * (arfd_start), and it must be answered with a reply that parses, whatever it says.
 *
 * Input: byte 0 picks the message type (INSTALL, EXEC, READ, WRITE, REGIONS, STATS, an
 * unknown one, or REPLY, which nobody answers); byte 1 bit 0 picks the connection (client
 * secret or admin secret), bit 1 sends the rest as the whole payload instead of after a
 * valid request header (magic, empty secret field).  Runs are short (fuel, 50 ms), so every
 * input ends.  Seeds: tests/fuzz/seeds/fuzz_arfd (one valid request of each kind).
 * Build and run with `make fuzz`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ar_proto.h"
#include "pn.h"
#include "server.h"

static struct arfd *srv;
static struct pn *cli[2];
static pn_peer to_srv[2];

static const char *const client_secret = "fuzz-client";
static const char *const admin_secret = "fuzz-admin";

static struct pn *client(const char *secret, const char *admin)
{
	char err[256];
	const char *l[] = { "tcp:127.0.0.1:0" };
	struct pn_opts o = { .n_workers = 1, .max_msg = 4u << 20 };
	if (secret) { o.secret = secret; o.secret_len = strlen(secret); }
	if (admin) { o.admin_secret = admin; o.admin_secret_len = strlen(admin); }
	struct pn *pn = pn_init(l, 1, &o, err, sizeof err);
	if (!pn) {
		fprintf(stderr, "pn_init: %s\n", err);
		abort();
	}
	return pn;
}

static void setup(void)
{
	static struct arfd_config c;
	c.listen[c.n_listen++] = "tcp:127.0.0.1:0";
	static const struct { const char *name; uint64_t size; unsigned access; bool admin; } r[] = {
		{ "mem", 65536, ISA_ACC_RW, false }, { "rom", 4096, ISA_ACC_RO, false },
		{ "adm", 4096, ISA_ACC_RW, true },
	};
	for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
		struct arfd_region_spec *g = &c.regions[c.n_regions++];
		snprintf(g->name, sizeof g->name, "%s", r[i].name);
		g->size = r[i].size;
		g->access = r[i].access;
		g->admin_write = r[i].admin;
	}
	c.secret = client_secret;
	c.admin_secret = admin_secret;
	c.threads = 2;
	c.max_run_ms = 50;
	c.fuel_default = 100000;
	c.fuel_max = 1000000;
	c.out_max = 65536;
	c.max_segment = 65536;
	arfd_log_setup(ARFD_LOG_ERROR, false);
	char err[256];
	srv = arfd_start(&c, err, sizeof err);
	if (!srv) {
		fprintf(stderr, "arfd_start: %s\n", err);
		abort();
	}
	cli[0] = client(client_secret, NULL);
	cli[1] = client(NULL, admin_secret);
	for (int i = 0; i < 2; i++)
		pn_peer_get(cli[i], arfd_endpoint(srv, "tcp"), &to_srv[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!srv)
		setup();
	if (size < 2)
		return 0;
	static const pn_type types[] = { AR_T_INSTALL, AR_T_EXEC, AR_T_READ, AR_T_WRITE,
		AR_T_REGIONS, AR_T_STATS, 7, 4095, AR_T_REPLY };
	pn_type type = types[data[0] % (sizeof types / sizeof types[0])];
	int ch = data[1] & 1;
	struct ar_buf b = { 0 };
	if (!(data[1] & 2))
		ar_req_begin(&b, "");
	ar_put_bytes(&b, data + 2, size - 2);
	if (b.failed)
		abort();
	if (type == AR_T_REPLY) {          /* nobody answers a reply (docs/protocol.md) */
		pn_send(cli[ch], to_srv[ch], type, 0, b.p, b.len);
		ar_buf_free(&b);
		return 0;
	}
	static uint8_t reply[1u << 20];
	struct pn_rcv_desc d = { .buf = reply, .cap = sizeof reply, .type = AR_T_REPLY,
	                         .from = to_srv[ch] };
	pn_coop c = pn_coop_start(cli[ch], &d, 1);
	int rc = pn_send(cli[ch], to_srv[ch], type, c, b.p, b.len);
	int rc2 = pn_coop_end(cli[ch], c, 10000);
	ar_buf_free(&b);
	if (rc || rc2) {
		fprintf(stderr, "request of type %u not answered: %s / %s\n", type, pn_strerror(rc),
		        pn_strerror(rc2));
		abort();
	}
	struct ar_rd r = { reply, reply + d.len, 0 };
	int status;
	char msg[AR_MAX_MSG + 1];
	if (ar_rep_parse(&r, &status, msg, sizeof msg) != 0) {
		fprintf(stderr, "a reply that does not parse (%zu bytes)\n", d.len);
		abort();
	}
	return 0;
}
