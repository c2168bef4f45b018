/* deleg.c: delegation on an ARF cluster's metadata server (docs/cluster.md, "Delegation"),
 * in C through pncc as data.c and ops.c.  A client that has not reached the data servers
 * (no connection to them, no object looked up) sends a small read of a striped file to the
 * metadata server, which holds the inode but not the bytes:
 *   1. client -> metadata arfd: EXEC route(ino, off, len, unit, rot << 32 | n), the argument bytes the
 *      id of stripe.pno (32 bytes) or the whole segment (when a data server lacks it);
 *   2. route reads the inode (its generation names the object, its size ends the read),
 *      finds the stripe and its server k = (stripe + first) % n (first = ino % n when the
 *      layout rotates, rot 1; else 0: arf_cluster.h), writes an EXEC request for
 *      stripe.pno's objread(object offset, length) of "stripes/INO.GEN" on its output and
 *      calls the hook forward(k): arfd sends that request to its member k;
 *   3. member k runs it and answers the client directly.
 * Three messages (client -> metadata, metadata -> data, data -> client), where asking the
 * metadata server and then the data server takes four, and a client without the object's
 * number there six (getattr, lookupattr, read).  unit and n come from the cluster's
 * description, which the client read, except for a file with its own layout
 * (ARF_IF_STRIPED): its record's unit and first server are taken from the inode; the
 * servers' order is arfd's --member list, which
 * must be the description's: arfd checks it against the description in its image (at
 * start-up, or at the first forward: arf/members.c), since a wrong order would read
 * another server's object without an error.
 */
#include <activerdma/ar.h>

#include "layout.h"

#define REGIONS(X) X(arf, ro)
AR_IMPORT_REGIONS(REGIONS);
#define HOOKS(X) X(forward, "l:l")
AR_IMPORT_HOOKS(HOOKS);

typedef unsigned long u64;

enum { E_NOENT = 2, E_INVAL = 22, E_ISDIR = 21 };

#define SB(field) ar_ld64(arf, ARF_SB_##field)
#define SEG_ID_LEN 32
#define UNIT_MIN 4096ul
#define UNIT_MAX (4ul << 20)
#define SERVERS_MAX 64

/* Byte offset of inode ino, or 0 when ino is not an inode number of this image (as
 * ops.c's). */
static u64 ioff(u64 ino)
{
	if (ino == 0 || ino >= SB(N_INODES))
		return 0;
	return SB(ITABLE_OFF) + (ino << ARF_INO_SHIFT);
}

static void out16(u64 v)
{
	ar_outb(v & 0xff);
	ar_outb((v >> 8) & 0xff);
}

static void out32(u64 v)
{
	out16(v & 0xffff);
	out16((v >> 16) & 0xffff);
}

/* v in decimal: its digits, or (out 0) only how many there are. */
static u64 decimal(u64 v, u64 out)
{
	u64 p = 1, n = 1;
	while (v / p >= 10 && n < 20) {
		p *= 10;
		n++;
	}
	if (out)
		for (u64 i = 0; i < n; i++) {
			ar_outb('0' + (v / p) % 10);
			p /= 10;
		}
	return n;
}

/* route(ino, off, len, unit, rot << 32 | n): bytes [off, off+len) of regular file ino, cut at the end of
 * the stripe off is in and at the size, forwarded to the data server holding that stripe;
 * the data server's reply is the answer (the length, the bytes).  0 (answered here) at or
 * past the end; -EINVAL for a bad inode, unit or n (or a layout record out of range, or
 * of another stripe count), or a member arfd does not have;
 * -ENOENT for a free inode, -EISDIR for a directory. */
long route(u64 ino, u64 off, u64 len, u64 unit, u64 nr)
{
	/* rot rides in n's high half: pncc's exports take five arguments at most */
	u64 n = nr & 0xffffffff, rot = nr >> 32;
	u64 c = ioff(ino);
	if (c == 0 || unit < UNIT_MIN || unit > UNIT_MAX || unit % UNIT_MIN || n == 0 ||
	    n > SERVERS_MAX || rot > 1)
		return -E_INVAL;
	u64 mode = ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT;
	if (mode == 0)
		return -E_NOENT;
	if (mode != ARF_S_IFREG)
		return mode == ARF_S_IFDIR ? -E_ISDIR : -E_INVAL;
	/* a file with its own layout: the record in its inode, not the client's word */
	u64 first = rot ? ino % n : 0;
	if (ar_ld32u(arf, c + ARF_I_FLAGS) & ARF_IF_STRIPED) {
		unit = ar_ld32u(arf, c + ARF_I_BODY + ARF_L_UNIT);
		first = ar_ld32u(arf, c + ARF_I_BODY + ARF_L_FIRST);
		if (unit < UNIT_MIN || unit > UNIT_MAX || unit % UNIT_MIN || first >= n ||
		    ar_ld32u(arf, c + ARF_I_BODY + ARF_L_COUNT) != n)
			return -E_INVAL;
	}
	u64 size = ar_ld64(arf, c + ARF_I_SIZE), gen = ar_ld64(arf, c + ARF_I_GEN);
	if (off >= size || len == 0)
		return 0;
	u64 s = off / unit;
	u64 want = len;
	if (want > (s + 1) * unit - off)
		want = (s + 1) * unit - off;
	if (want > size - off)
		want = size - off;
	long rc = ar_hcall1(forward, (s % n + first) % n);
	if (rc < 0)
		return rc;
	/* the EXEC request (docs/protocol.md): the segment, by id or inline */
	u64 seg = (u64)ar_len(AR_ARGS);
	if (seg == SEG_ID_LEN) {
		ar_outb(0);
	} else {
		ar_outb(1);
		out32(seg);
	}
	ar_output(AR_ARGS, 0, seg);
	out16(7);
	ar_outb('o'); ar_outb('b'); ar_outb('j'); ar_outb('r'); ar_outb('e'); ar_outb('a');
	ar_outb('d');
	ar_outb(2);
	ar_outq((s / n) * unit + off % unit);
	ar_outq(want);
	ar_outq(0);                           /* fuel: the data server's default */
	ar_outq(want);                        /* out_max */
	u64 nlen = 8 + decimal(ino, 0) + 1 + decimal(gen, 0);
	out32(nlen);
	ar_outb('s'); ar_outb('t'); ar_outb('r'); ar_outb('i'); ar_outb('p'); ar_outb('e');
	ar_outb('s'); ar_outb('/');
	decimal(ino, 1);
	ar_outb('.');
	decimal(gen, 1);
	return (long)want;
}
