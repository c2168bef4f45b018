/* ops.c: ARF's namespace operations (docs/arf.md) in C, run inside arfd against region "arf"
 * (the mapped image).  clang's BPF back end, then pncc (docs/cc.md), as arf/data.c.  It is to
 * replace arf/ops.pna export by export; until every export is here the Makefile builds it as
 * build/arfseg/ops_c.pno, which nothing installs: ARF still installs ops.pna's ops.pno, and
 * tests/unit/test_arf_opsdiff.c runs the exports done here against ops.pna's, side by side.
 *
 * STATUS (issue #16, second half; continue here):
 *   done, checked by test_arf_opsdiff:  lookup, getattr, readlink, lookupattr, readdir,
 *                                       readdirplus, walk
 *   still only in ops.pna:              mkdir, mknod, unlink, rmdir, symlink, link, rename,
 *                                       mkdirattr, mknodattr, symlinkattr, linkattr
 *   next: the journal/lock/bitmap helpers (copy them from data.c, they are the same
 *   functions), then mk (mkdir, mknod), dins/ddel/tsize/bneed/bnew, rm, symlink, link,
 *   rename.  When all are here: rename this
 *   segment's target to ops.pno in the Makefile (ARF_SEG_C, ARF_SEG_REF as data.c), run the
 *   ARF suites with it installed.
 *
 * Exports (integer arguments; a name or path is the whole "args" byte region), as ops.pna:
 *   lookup(start)                   path -> inode number
 *   getattr(ino)                    13 u64 attribute records on the output -> ino
 *   readlink(ino)                   the target on the output -> its length
 *   readdir(dir, cookie, max)       a batch of entries on the output -> count
 *   readdirplus(dir, cookie, max)   readdir's, then each entry's getattr
 *   walk(nf, max, soft)             a subtree depth first from the frames in args -> count
 *   lookupattr(start)               lookup, then getattr of what it found
 * Every result is >= 0 or a negative Linux errno.  Nothing from the client or the image is
 * trusted: inode numbers are range- and type-checked, names and paths length- and
 * byte-checked; a table or record offset read from the image is used only through the VM's
 * bounds-checked loads (a hostile one traps, as in ops.pna).
 *
 * pncc's rules shape the code as in data.c: every value in a local, memory only through
 * ar_ld* / ar_st*, at most 5 arguments per function, u64 arithmetic.  Shifts by a count read
 * from the image are masked with & 63 (the bytecode's shifts do that; C's would be UB).
 */
#include <activerdma/ar.h>

#include "layout.h"

#define REGIONS(X) X(arf, rw)
AR_IMPORT_REGIONS(REGIONS);
#define HOOKS(X) X(now, ":l")
AR_IMPORT_HOOKS(HOOKS);

typedef unsigned long u64;

/* errno values (Linux) */
enum {
	E_NOENT = 2, E_IO = 5, E_EXIST = 17, E_NOTDIR = 20, E_INVAL = 22, E_NAMETOOLONG = 36,
	E_LOOP = 40,
};

#define PATH_MAX_LEN 4095      /* longest path lookup accepts */

#define SB(field) ar_ld64(arf, ARF_SB_##field)

/* ---------------------------------------------------------------- inodes */

/* Byte offset of inode ino, or 0 when ino is not an inode number of this image (0 is "no
 * inode"; the table has n_inodes entries). */
static u64 ioff(u64 ino)
{
	if (ino == 0 || ino >= SB(N_INODES))
		return 0;
	return SB(ITABLE_OFF) + (ino << ARF_INO_SHIFT);
}

/* Offset of directory ino, or -EINVAL (no such number), -ENOENT (free), -ENOTDIR. */
static long diroff(u64 ino)
{
	u64 d = ioff(ino);
	if (d == 0)
		return -E_INVAL;
	u64 type = ar_ld32u(arf, d + ARF_I_MODE) & ARF_S_IFMT;
	if (type == 0)
		return -E_NOENT;
	if (type != ARF_S_IFDIR)
		return -E_NOTDIR;
	return (long)d;
}

/* ---------------------------------------------------------------- names (in region args) */

/* FNV-1a 64 of args[off .. off+len): the directory hash (layout.h arf_name_hash). */
static u64 nhash(u64 off, u64 len)
{
	u64 h = ARF_FNV_OFFSET;
	for (u64 i = 0; i < len; i++)
		h = (h ^ ar_ld8u(AR_ARGS, off + i)) * ARF_FNV_PRIME;
	return h;
}

/* 1 when args[off .. off+len) is "." or "..", else 0. */
static u64 isdots(u64 off, u64 len)
{
	if (len == 1)
		return ar_ld8u(AR_ARGS, off) == '.';
	if (len == 2)
		return ar_ld8u(AR_ARGS, off) == '.' && ar_ld8u(AR_ARGS, off + 1) == '.';
	return 0;
}

/* Check the name args[off .. off+len): 0, 1 for "." or "..", or -errno: empty ENOENT (as
 * Linux for ""), longer than 255 ENAMETOOLONG, a '/' or NUL byte EINVAL.  The mutating
 * exports (still in ops.pna) use it through namecheck. */
static __attribute__((unused)) long ncheck(u64 off, u64 len)
{
	if (len == 0)
		return -E_NOENT;
	if (len > ARF_NAME_MAX)
		return -E_NAMETOOLONG;
	if (ar_findb(AR_ARGS, off, len, '/') != -1 || ar_findb(AR_ARGS, off, len, 0) != -1)
		return -E_INVAL;
	return (long)isdots(off, len);
}

/* Check a new entry's name, the whole args region: 0 or -errno (ncheck's; "." and "..":
 * EEXIST, they always exist). */
static __attribute__((unused)) long namecheck(void)
{
	long rc = ncheck(0, (u64)ar_len(AR_ARGS));
	return rc == 1 ? -E_EXIST : rc;
}

/* ---------------------------------------------------------------- directory table probes */

/* Slot of the live entry named args[noff .. +nlen) (hash h) in directory d, or 0.  Probes
 * linearly from the home slot until an empty slot; at most nslots probes, so a table with no
 * empty slot (never written by ARF, but the bytes are not trusted) still ends the loop. */
static __attribute__((noinline)) u64 dfind(u64 d, u64 h, u64 noff, u64 nlen)
{
	u64 t = ar_ld64(arf, d + ARF_D_TABLE);
	if (t == 0)
		return 0;
	u64 mask = ar_ld64(arf, d + ARF_D_NSLOTS) - 1;
	u64 shift = ar_ld64(arf, d + ARF_D_SHIFT) & 63;
	u64 i = ((h * ARF_HASH_MUL) >> shift) & mask;
	for (u64 n = 0; n <= mask; n++) {
		u64 s = t + i * ARF_T_SIZE;
		u64 rec = ar_ld64(arf, s + ARF_T_REC);
		if (rec == ARF_T_EMPTY)
			return 0;              /* empty slot: the name is not here */
		if (rec != ARF_T_TOMB && ar_ld64(arf, s + ARF_T_HASH) == h &&
		    ar_ld8u(arf, rec + ARF_R_NAMELEN) == nlen &&
		    ar_cmp(arf, AR_ARGS, rec + ARF_R_NAME, noff, nlen) == 0)
			return s;
		i = (i + 1) & mask;
	}
	return 0;
}

/* ---------------------------------------------------------------- lookup */

/* lookup(start): the path in args, from directory start -> inode number.  Slashes repeat
 * freely, "." and ".." are the directory and its parent; a symlink before the last component
 * is ELOOP (the client resolves links), any other non-directory there ENOTDIR. */
static __attribute__((noinline)) long do_lookup(u64 start)
{
	u64 plen = (u64)ar_len(AR_ARGS);
	if (plen > PATH_MAX_LEN)
		return -E_NAMETOOLONG;
	u64 cur = start;
	long dr = diroff(cur);
	if (dr <= 0)
		return dr;
	u64 d = (u64)dr;
	u64 p = 0;
	while (p < plen) {
		/* cur is a directory at d; skip slashes */
		if (ar_ld8u(AR_ARGS, p) == '/') {
			p++;
			continue;
		}
		long f = ar_findb(AR_ARGS, p, plen - p, '/');
		u64 e = f == -1 ? plen : (u64)f;
		u64 n = e - p;
		if (n > ARF_NAME_MAX)
			return -E_NAMETOOLONG;
		if (isdots(p, n)) {
			if (n == 1) {              /* "." : same directory */
				p = e;
				continue;
			}
			cur = ar_ld64(arf, d + ARF_I_PARENT);
		} else {
			u64 s = dfind(d, nhash(p, n), p, n);
			if (s == 0)
				return -E_NOENT;
			/* No lock: a concurrent unlink or rename may have made the slot a tombstone
			 * since dfind read it (its rec word is then 1, no record) or killed the record
			 * (ino 0): either way the name is gone now. */
			u64 rec = ar_ld64(arf, s + ARF_T_REC);
			if (rec <= ARF_T_TOMB)
				return -E_NOENT;
			cur = ar_ld64(arf, rec + ARF_R_INO);
			if (cur == 0)
				return -E_NOENT;
		}
		/* cur came from the image: check it before using it */
		u64 c = ioff(cur);
		if (c == 0)
			return -E_IO;
		p = e;
		if (p == plen)
			break;         /* last component, no trailing slash: whatever it is */
		u64 type = ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT;
		if (type != ARF_S_IFDIR)
			return type == ARF_S_IFLNK ? -E_LOOP : -E_NOTDIR;
		d = c;
	}
	return (long)cur;
}

long lookup(u64 start)
{
	return do_lookup(start);
}

/* ---------------------------------------------------------------- getattr */

/* getattr(ino): outputs 13 little-endian u64: mode, nlink, uid, gid, size, nblocks (4 KiB
 * blocks), atime, mtime, ctime, btime (ns since the epoch), gen, parent, rdev; returns ino,
 * or -EINVAL (no such number) / -ENOENT (free inode).  The fields are read without the lock:
 * a getattr racing a change of the same inode may mix old and new fields. */
static __attribute__((noinline)) long do_getattr(u64 ino)
{
	u64 c = ioff(ino);
	if (c == 0)
		return -E_INVAL;
	u64 mode = ar_ld32u(arf, c + ARF_I_MODE);
	if (mode == 0)
		return -E_NOENT;
	ar_outq(mode);
	ar_outq(ar_ld32u(arf, c + ARF_I_NLINK));
	ar_outq(ar_ld32u(arf, c + ARF_I_UID));
	ar_outq(ar_ld32u(arf, c + ARF_I_GID));
	ar_outq(ar_ld64(arf, c + ARF_I_SIZE));
	ar_outq(ar_ld64(arf, c + ARF_I_NBLOCKS));
	ar_outq(ar_ld64(arf, c + ARF_I_ATIME));
	ar_outq(ar_ld64(arf, c + ARF_I_MTIME));
	ar_outq(ar_ld64(arf, c + ARF_I_CTIME));
	ar_outq(ar_ld64(arf, c + ARF_I_BTIME));
	ar_outq(ar_ld64(arf, c + ARF_I_GEN));
	ar_outq(ar_ld64(arf, c + ARF_I_PARENT));
	ar_outq(ar_ld64(arf, c + ARF_I_RDEV));
	return (long)ino;
}

long getattr(u64 ino)
{
	return do_getattr(ino);
}

/* ---------------------------------------------------------------- readlink */

/* readlink(ino): the target on the output -> its length.  -EINVAL for no such number or not
 * a symlink, -ENOENT for a free inode, -EIO for a symlink whose size or block the image
 * makes impossible (0, over ARF_SYMLINK_MAX, an inline target longer than the body, not one
 * extent, a block outside the data area). */
long readlink(u64 ino)
{
	u64 c = ioff(ino);
	if (c == 0)
		return -E_INVAL;
	u64 type = ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT;
	if (type == 0)
		return -E_NOENT;
	if (type != ARF_S_IFLNK)
		return -E_INVAL;
	u64 sz = ar_ld64(arf, c + ARF_I_SIZE);
	if (sz == 0 || sz > ARF_SYMLINK_MAX)
		return -E_IO;
	if (ar_ld32u(arf, c + ARF_I_FLAGS) & ARF_IF_INLINE) {
		if (sz > ARF_I_BODY_LEN)
			return -E_IO;
		ar_output(arf, c + ARF_I_BODY, sz);
		return (long)sz;
	}
	if (ar_ld32u(arf, c + ARF_I_NEXTENTS) != 1)
		return -E_IO;
	u64 p = ar_ld64(arf, c + ARF_I_BODY + ARF_E_PBLK);
	if (p >= SB(N_BLOCKS))
		return -E_IO;
	p <<= ARF_BLOCK_SHIFT;
	if (p < SB(DATA_OFF))
		return -E_IO;
	ar_output(arf, p, sz);
	return (long)sz;
}

/* ---------------------------------------------------------------- with attributes */

/* lookupattr(start): lookup, then getattr of the inode found, in one round trip: output as
 * getattr's, the inode number or the error. */
long lookupattr(u64 start)
{
	long ino = do_lookup(start);
	if (ino < 0)
		return ino;
	return do_getattr((u64)ino);
}

/* ---------------------------------------------------------------- readdir */

/* The block of directory d (its offset) that holds cookie c (not 0: a byte offset in the
 * block chain at a record boundary, what readdir and walk hand out; one at a block's very
 * end names that block), or -EINVAL when c is no record boundary of d.  A chain that loops
 * (damaged) ends by fuel, as in ops.pna. */
static __attribute__((noinline)) long dirblk(u64 d, u64 c)
{
	u64 blk = ar_ld64(arf, d + ARF_D_HEAD);
	for (;;) {
		if (blk == 0)
			return -E_INVAL;
		if (blk + ARF_B_HDR <= c && c <= blk + ARF_BLOCK_SIZE)
			break;
		blk = ar_ld64(arf, blk + ARF_B_NEXT);
	}
	/* walk the block's records to c: it must be a record boundary <= used */
	if (ar_ld64(arf, blk + ARF_B_USED) + blk < c)
		return -E_INVAL;
	u64 o = blk + ARF_B_HDR;
	while (o < c) {
		u64 rl = ar_ld16u(arf, o + ARF_R_LEN);
		if (rl < ARF_R_MIN)
			return -E_INVAL;    /* a damaged record: stop rather than loop */
		o += rl;
	}
	if (o != c)
		return -E_INVAL;
	return (long)blk;
}

/* One record's name as readdir and walk put it on the output: u8 length, the name. */
static void outname(u64 pos)
{
	ar_outb(ar_ld8u(arf, pos + ARF_R_NAMELEN));
	ar_output(arf, pos + ARF_R_NAME, ar_ld8u(arf, pos + ARF_R_NAMELEN));
}

/* readdir(dir, cookie, max): up to max (1..1024) entries from cookie on.  Cookie 0 is the
 * start; any other cookie is a byte offset inside the directory's block chain at a record
 * boundary (what an earlier batch gave), checked here.  Output: u64 next cookie (0 when the
 * end of the directory was reached), then per entry: u64 ino, u64 cookie after it, u8 type
 * (DT_*), u8 name length, the name.  Returns the number of entries.  "." and ".." are not
 * stored (docs/arf.md) and not returned: the client adds them.  Reads without the lock:
 * entries added or removed meanwhile may or may not show, every other one shows once. */
static __attribute__((noinline)) long do_readdir(u64 dir, u64 cookie, u64 max)
{
	long dr = diroff(dir);
	if (dr <= 0)
		return dr;
	u64 d = (u64)dr;
	if (max == 0 || max > 1024)
		return -E_INVAL;
	u64 blk = ar_ld64(arf, d + ARF_D_HEAD);
	u64 pos = blk + ARF_B_HDR;
	if (cookie != 0) {
		long b = dirblk(d, cookie);
		if (b < 0)
			return -E_INVAL;
		blk = (u64)b;
		pos = cookie;
	}
	ar_outq(0);                    /* next cookie, filled in when the batch is full */
	u64 n = 0;
	if (blk == 0)
		return 0;
	for (;;) {
		if (ar_ld64(arf, blk + ARF_B_USED) + blk <= pos) {
			blk = ar_ld64(arf, blk + ARF_B_NEXT);
			if (blk == 0)
				return (long)n;
			pos = blk + ARF_B_HDR;
			continue;
		}
		if (n >= max) {
			ar_st64(AR_OUT, 0, pos);
			return (long)n;
		}
		u64 rl = ar_ld16u(arf, pos + ARF_R_LEN);
		if (rl < ARF_R_MIN)
			return -E_IO;
		u64 ino = ar_ld64(arf, pos + ARF_R_INO);
		if (ino != 0) {            /* 0: a deleted record */
			ar_outq(ino);
			ar_outq(pos + rl);
			ar_outb(ar_ld8u(arf, pos + ARF_R_TYPE));
			outname(pos);
			n++;
		}
		pos += rl;
	}
}

long readdir(u64 dir, u64 cookie, u64 max)
{
	return do_readdir(dir, cookie, max);
}

/* readdirplus(dir, cookie, max): readdir's output, then for each entry in order getattr's
 * 13 u64 (all zeros when the entry's inode was freed since: mode 0 says "no attributes").
 * Result as readdir's. */
long readdirplus(u64 dir, u64 cookie, u64 max)
{
	long n = do_readdir(dir, cookie, max);
	if (n <= 0)
		return n;
	u64 pos = 8;
	for (long k = 0; k < n; k++) {
		u64 ino = ar_ld64(AR_OUT, pos);
		pos = pos + 18 + ar_ld8u(AR_OUT, pos + 17);
		if (do_getattr(ino) < 0)
			for (int i = 0; i < 13; i++)   /* freed meanwhile: thirteen zeros */
				ar_outq(0);
	}
	return n;
}

/* ---------------------------------------------------------------- walk */

/* The rest of walk's entry for the record at pos: type t, depth top, the name. */
static __attribute__((noinline)) void wname(u64 pos, u64 t, u64 top)
{
	ar_outb(t);
	ar_outb(top);
	outname(pos);
}

/* Offset on the output of frame k: { u64 dir, u64 cookie } after the u64 "frames left". */
#define FRAME(k) (((k) << 4) + 8)

/* walk(nf, max, soft): the entries of a whole subtree, depth first: each directory's entries
 * in readdir's order, a subdirectory's subtree right after its entry (the order of fts, so of
 * grep -r and find).  The walk's state is a stack of frames { u64 dir, u64 cookie }, the
 * directories being walked, outermost first; args holds the nf frames to go on from (a new
 * walk: one frame { start, 0 }).  Output: u64 frames left (0: the walk is done), the
 * ARF_WALK_FRAMES frames to pass back next time (the first "frames left" of them), then from
 * ARF_WALK_HDR per entry: u64 ino, u8 type, u8 depth (the frame of the directory it is in),
 * u8 name length, the name.  A directory with no frame left for it gets type
 * ARF_DT_DIR | ARF_WALK_DEEP and ends the batch: the client walks it anew.  A directory that
 * cannot be walked (removed meanwhile, a damaged record) gives one entry of type ARF_WALK_ERR
 * with the errno as ino, at the depth of that directory, and is left.  Stops before max
 * entries are passed or once the output holds soft bytes.  Returns the number of entries, or
 * -EINVAL for bad arguments.  Reads without locks, as readdir.
 *
 * The frames live on the output itself (ld64/st64 of AR_OUT), as in ops.pna. */
long walk(u64 nf, u64 max, u64 soft)
{
	if (nf == 0 || nf > ARF_WALK_FRAMES || max == 0 || (u64)ar_len(AR_ARGS) != nf << 4)
		return -E_INVAL;
	ar_outq(0);                    /* frames left, set when the batch ends */
	ar_copy(AR_OUT, AR_ARGS, 8, 0, nf << 4);
	ar_st8(AR_OUT, ARF_WALK_HDR - 1, 0);   /* the rest of the header, zeros */
	u64 top = nf - 1, n = 0, blk = 0, pos = 0;
	long err;
load:                                  /* go on with frame top: its directory, its cookie */
	{
		u64 f = FRAME(top);
		long dr = diroff(ar_ld64(AR_OUT, f));
		if (dr <= 0) {
			err = dr;
			goto broken;
		}
		u64 d = (u64)dr;
		u64 cookie = ar_ld64(AR_OUT, f + 8);
		if (cookie == 0) {
			blk = ar_ld64(arf, d + ARF_D_HEAD);
			if (blk == 0)
				goto pop;          /* no block: empty */
			pos = blk + ARF_B_HDR;
		} else {
			long b = dirblk(d, cookie);
			if (b <= 0) {
				err = b;
				goto broken;
			}
			blk = (u64)b;
			pos = cookie;
		}
	}
	for (;;) {
		if (ar_ld64(arf, blk + ARF_B_USED) + blk <= pos) {
			blk = ar_ld64(arf, blk + ARF_B_NEXT);
			if (blk == 0)
				goto pop;
			pos = blk + ARF_B_HDR;
			continue;
		}
		if (n >= max || (u64)ar_len(AR_OUT) >= soft)
			goto full;
		u64 rl = ar_ld16u(arf, pos + ARF_R_LEN);
		if (rl < ARF_R_MIN) {
			err = -E_IO;       /* a damaged record: leave the directory rather than loop */
			goto broken;
		}
		u64 ino = ar_ld64(arf, pos + ARF_R_INO);
		if (ino == 0) {            /* a deleted record */
			pos += rl;
			continue;
		}
		ar_outq(ino);
		u64 t = ar_ld8u(arf, pos + ARF_R_TYPE);
		if (t == ARF_DT_DIR) {
			if (top + 1 >= ARF_WALK_FRAMES) {
				/* no frame left: the client walks it anew; the batch ends */
				wname(pos, t | ARF_WALK_DEEP, top);
				n++;
				pos += rl;
				goto full;
			}
			if (diroff(ino) > 0) {
				wname(pos, t, top);
				n++;
				/* this frame goes on after the entry; the directory is the next frame */
				ar_st64(AR_OUT, FRAME(top) + 8, pos + rl);
				top++;
				ar_st64(AR_OUT, FRAME(top), ino);
				ar_st64(AR_OUT, FRAME(top) + 8, 0);
				goto load;
			}
			/* removed meanwhile: listed, not entered */
		}
		wname(pos, t, top);
		n++;
		pos += rl;
	}
broken:                                /* frame top cannot go on (err): it is left */
	if (n >= max || (u64)ar_len(AR_OUT) >= soft)
		goto stop;             /* the batch is full: the next one meets the error again */
	ar_outq(-(u64)err);
	ar_outb(ARF_WALK_ERR);
	ar_outb(top);
	ar_outb(0);
	n++;
pop:
	if (top == 0)
		return (long)n;
	top--;
	goto load;
full:
	ar_st64(AR_OUT, FRAME(top) + 8, pos);
stop:
	ar_st64(AR_OUT, 0, top + 1);
	return (long)n;
}
