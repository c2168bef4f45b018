/* ops.c: ARF's namespace operations (docs/arf.md) in C, run inside arfd against region "arf"
 * (the mapped image).  clang's BPF back end, then pncc (docs/cc.md), as arf/data.c; the
 * Makefile installs it as build/arfseg/ops.pno.  It replaced the hand-written assembly
 * arf/ops.pna (issue 16): its 18 exports were checked against the assembly's operation by
 * operation (results, output and image bytes) until that was removed; "ops.pna" below names
 * choices carried over from it.
 *
 * Exports (integer arguments; a name or path is the whole "args" byte region):
 *   lookup(start)                   path -> inode number
 *   getattr(ino)                    15 u64 attribute records on the output -> ino
 *   readlink(ino)                   the target on the output -> its length
 *   readdir(dir, cookie, max)       a batch of entries on the output -> count
 *   readdirplus(dir, cookie, max)   readdir's, then each entry's getattr
 *   walk(nf, max, soft)             a subtree depth first from the frames in args -> count
 *   lookupattr(start)               lookup, then getattr of what it found
 *   mkdir(dir, mode, uid, gid)      name -> new inode number
 *   mknod(dir, mode, uid, gid, rdev)  name -> new inode number (S_IFREG, S_IFIFO, S_IFCHR,
 *                                   S_IFBLK or S_IFSOCK in mode; rdev: a device's number)
 *   mkdirattr, mknodattr            the same, then getattr of the new inode
 *   unlink(dir), rmdir(dir)         name -> 0
 *   unlinkattr, rmdirattr           the same, then getattr of dir (the parent)
 *   symlink(dir, nlen, uid, gid)    name then target -> new inode number
 *   link(ino, dir)                  name -> 0
 *   rename(olddir, newdir, olen, flags)  old name then new name -> 0
 *   symlinkattr, linkattr           the same, then getattr of the inode
 *   mkdirattrs, mknodattrs, symlinkattrs, linkattrs   the *attr form's, then getattr of dir
 *                                   (the parent) after the change
 *   setxattr(ino, nlen, flags, mode)  name (nlen bytes) then value -> 0
 *   getxattr(ino, size)             name -> the value's length; the value on the output
 *   listxattr(ino, size)            the names, each with a NUL, on the output -> their bytes
 *   removexattr(ino, mode)          name -> 0
 *   setlayout(ino, unit, count << 32 | first)  -> 0 (an empty regular file's record)
 * Every export that changes the tree (mkdir, mknod, their attr and attrs forms, unlink,
 * rmdir, their attr forms, symlink, link, their attr and attrs forms, rename, setxattr,
 * removexattr) takes one more argument, last: its idempotency key, 0 or client << 32 |
 * sequence number ("keyed results" below; mknod, mknodattr and mknodattrs: the sixth,
 * AR_EXPORT_ARGS).
 * Every result is >= 0 or a negative Linux errno.  Nothing from the client or the image is
 * trusted: inode numbers are range- and type-checked, names and paths length- and
 * byte-checked; a table or record offset read from the image is used only through the VM's
 * bounds-checked loads (a hostile one traps).
 *
 * Crash discipline (docs/arf.md, "Crash consistency"): an operation that changes
 * the tree claims a journal slot, locks the inodes it changes (lock word = the slot's owner
 * tag), allocates everything it may need BEFORE its first logged change (ENOSPC never leaves
 * half an operation), logs the old bytes of each structure right before changing it, commits
 * by freeing the slot, unlocks, and only then returns freed bits to the bitmaps.
 *
 * The small helpers of the logged half (dtype, dtouch, add32, newgid, newmode, besides jlog
 * and jend) are never inlined, as in data.c: each is a call, which spends fuel, so the crash
 * tests that stop runs by fuel (test_arf_ops "crash ...") reach every point between the
 * logged changes.
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
	E_PERM = 1, E_NOENT = 2, E_IO = 5, E_AGAIN = 11, E_EXIST = 17, E_NOTDIR = 20, E_INVAL = 22,
	E_BUSY = 16, E_ISDIR = 21, E_NOSPC = 28, E_MLINK = 31, E_NAMETOOLONG = 36, E_NOTEMPTY = 39, E_LOOP = 40,
	E_RANGE = 34, E_NODATA = 61,
};

#define PATH_MAX_LEN 4095      /* longest path lookup accepts */

#define SB(field) ar_ld64(arf, ARF_SB_##field)

/* ---------------------------------------------------------------- inodes
 * ioff, the journal, inode locks and the bitmap claims are arf/seg_common.h's, shared with
 * data.c */
#include "seg_common.h"

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

/* ---------------------------------------------------------------- keyed results
 * Exactly once across a restart: oentry, ohash, oget, oput, oend and the OP_* names are
 * arf/once.h's, shared with data.c's append.  A keyed operation answers a repeat with O_HIT
 * + the recorded result from its inner function (mk, rm, do_symlink, do_link). */
#include "once.h"

#define O_HIT (1l << 61)       /* mk, rm, do_symlink, do_link: O_HIT + a result oget answered */

/* Claim an inode number, or 0 (ENOSPC). */
static u64 ialloc(void)
{
	long i = bclaim(SB(IBMAP_OFF), SB(IBMAP_LEN) >> 3, ARF_SB_IALLOC_HINT, 1);
	if (i <= 0)
		return 0;
	(void)ar_fadd(arf, ARF_SB_FREE_INODES, -1ul);
	return (u64)i;
}

/* Give inode number ino back. */
static void iput(u64 ino)
{
	bfree(SB(IBMAP_OFF), ino, 1);
	(void)ar_fadd(arf, ARF_SB_FREE_INODES, 1);
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

/* A hash of args[off .. off+len) read a word at a time, 8 words a loop step (the last
 * word: the last 8 bytes, overlapping the one before; under 8 bytes: byte by byte), the
 * length mixed in: the op hash of bytes that may be long (a symlink's target, an xattr's
 * value: up to 4 KiB).  Fuel is spent per step, not per byte: about len / 64 + 8, which
 * keeps a keyed operation's logged half where the crash tests' fuel steps reach it (4 KiB
 * byte by byte, as nhash, would be 4096). */
#define BSTEP(h, o) ((ar_rotl(h, 27) ^ ar_ld64(AR_ARGS, o)) * ARF_HASH_MUL)

static u64 bhash(u64 off, u64 len)
{
	u64 h = ARF_FNV_OFFSET ^ len;
	if (len < 8) {
		for (u64 i = 0; i < len; i++)
			h = (h ^ ar_ld8u(AR_ARGS, off + i)) * ARF_FNV_PRIME;
		return h;
	}
	u64 i = 0;
	for (; i + 64 < len; i += 64) {
		u64 p = off + i;
		h = BSTEP(h, p);
		h = BSTEP(h, p + 8);
		h = BSTEP(h, p + 16);
		h = BSTEP(h, p + 24);
		h = BSTEP(h, p + 32);
		h = BSTEP(h, p + 40);
		h = BSTEP(h, p + 48);
		h = BSTEP(h, p + 56);
	}
	for (; i + 8 < len; i += 8)
		h = BSTEP(h, off + i);
	return BSTEP(h, off + len - 8);
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
 * exports use it through namecheck. */
static long ncheck(u64 off, u64 len)
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
static long namecheck(void)
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

/* getattr(ino): do_getattr, arf/seg_common.h's (data.c's setattrattr answers it too). */
long getattr(u64 ino)
{
	return do_getattr(ino);
}

/* getattrs(n): getattr of each of the n inode numbers in args (u64s), in order: u64 its
 * result (ino, or -EINVAL / -ENOENT as getattr's) and, when that is ino, getattr's
 * fields -> n; -EINVAL when args holds fewer than n numbers or n is over 4096.  (arf grep -r
 * on a cluster asks for a window's files in one round trip, not one each.) */
long getattrs(u64 n)
{
	if (n > 4096 || (u64)ar_len(AR_ARGS) < n * 8)
		return -E_INVAL;
	for (u64 i = 0; i < n; i++) {
		u64 ino = ar_ld64(AR_ARGS, i * 8);
		u64 c = ioff(ino);
		if (c == 0) {
			ar_outq((u64)-E_INVAL);
		} else if (ar_ld32u(arf, c + ARF_I_MODE) == 0) {
			ar_outq((u64)-E_NOENT);
		} else {
			ar_outq(ino);
			/* the mode read again: freed in between, its fields are still its own */
			if (do_getattr(ino) < 0)
				return -E_AGAIN;
		}
	}
	return (long)n;
}

/* ---------------------------------------------------------------- layout
 * A regular file of a cluster's metadata image owns no blocks there (its bytes are on the
 * data servers), so its body is free for a layout record (docs/cluster.md, "A file's own
 * stripe unit"): ARF_IF_STRIPED says it is one.  Such an inode never has extents
 * (ARF_I_NEXTENTS 0), so data.c's and irelease's extent walks, which go by that count,
 * never read the record; data.c's write refuses the inode. */

/* setlayout(ino, unit, count << 32 | first): give regular file ino the layout record (unit,
 * count, first, 0) -> 0.  Only while it is empty: -EBUSY when it has a size, extents or
 * blocks (its bytes would be read with another unit); -EINVAL for another type, a unit not a
 * multiple of ARF_L_UNIT_MIN within [ARF_L_UNIT_MIN, ARF_L_UNIT_MAX], a count of 0 or over
 * ARF_L_COUNT_MAX, first >= count; -ENOENT a free inode.  Setting it again (empty still)
 * replaces it.  ctime becomes now.  Not keyed: repeating it gives the same inode. */
long setlayout(u64 ino, u64 unit, u64 cf)
{
	u64 count = cf >> 32, first = cf & 0xffffffff;
	if (unit < ARF_L_UNIT_MIN || unit > ARF_L_UNIT_MAX || unit % ARF_L_UNIT_MIN ||
	    count == 0 || count > ARF_L_COUNT_MAX || first >= count)
		return -E_INVAL;
	u64 c = ioff(ino);
	if (c == 0)
		return -E_INVAL;
	u64 j = jclaim();
	if (j == 0)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	if (ilock(c, tag) != 0) {
		jend(j);
		return -E_AGAIN;
	}
	long rc = 0;
	u64 mode = ar_ld32u(arf, c + ARF_I_MODE);
	if (mode == 0)
		rc = -E_NOENT;
	else if ((mode & ARF_S_IFMT) != ARF_S_IFREG)
		rc = -E_INVAL;
	else if (ar_ld64(arf, c + ARF_I_SIZE) != 0 || ar_ld32u(arf, c + ARF_I_NEXTENTS) != 0 ||
	         ar_ld64(arf, c + ARF_I_NBLOCKS) != 0 || ar_ld64(arf, c + ARF_I_XBLK) != 0)
		rc = -E_BUSY;
	if (rc == 0) {
		jlog(j, c, ARF_INO_SIZE);
		ar_st32(arf, c + ARF_I_FLAGS, ar_ld32u(arf, c + ARF_I_FLAGS) | ARF_IF_STRIPED);
		ar_st32(arf, c + ARF_I_BODY + ARF_L_UNIT, unit);
		ar_st32(arf, c + ARF_I_BODY + ARF_L_COUNT, count);
		ar_st32(arf, c + ARF_I_BODY + ARF_L_FIRST, first);
		ar_st32(arf, c + ARF_I_BODY + ARF_L_RESERVED, 0);
		ar_st64(arf, c + ARF_I_CTIME, (u64)ar_hcall0(now));
	}
	jend(j);
	iunlock(c, tag);
	return rc;
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

/* ---------------------------------------------------------------- directory table inserts */

/* Directory record type of a mode (0 for types ARF does not store). */
static __attribute__((noinline)) u64 dtype(u64 mode)
{
	switch (mode & ARF_S_IFMT) {
	case ARF_S_IFDIR: return ARF_DT_DIR;
	case ARF_S_IFREG: return ARF_DT_REG;
	case ARF_S_IFIFO: return ARF_DT_FIFO;
	case ARF_S_IFCHR: return ARF_DT_CHR;
	case ARF_S_IFBLK: return ARF_DT_BLK;
	case ARF_S_IFSOCK: return ARF_DT_SOCK;
	case ARF_S_IFLNK: return ARF_DT_LNK;
	default: return 0;
	}
}

/* Put (h, rec) into the first empty or tombstone slot of h's probe in table t (mask =
 * nslots - 1, shift); returns that slot's offset.  The caller guarantees a free slot (the
 * table is at most half full after growth), and the loop is bounded by mask anyway: a
 * table with none (damaged) is user trap 2, as in ops.pna. */
static __attribute__((noinline)) u64 tslot(u64 t, u64 mask, u64 shift, u64 h)
{
	u64 i = ((h * ARF_HASH_MUL) >> (shift & 63)) & mask;
	for (u64 n = 0;; n++) {
		u64 s = t + i * ARF_T_SIZE;
		if (ar_ld64(arf, s + ARF_T_REC) <= ARF_T_TOMB)
			return s;
		if (n >= mask)
			break;
		i = (i + 1) & mask;
	}
	ar_trap(2);                    /* cannot happen with the load the growth rule keeps */
	return 0;
}

/* ---------------------------------------------------------------- mkdir, mknod */

/* The group of a new inode in the directory at offset d: in a setgid directory the
 * directory's group, else gid (the creator's), as every Unix filesystem does it. */
static __attribute__((noinline)) u64 newgid(u64 d, u64 gid)
{
	if (ar_ld32u(arf, d + ARF_I_MODE) & ARF_S_ISGID)
		return ar_ld32u(arf, d + ARF_I_GID);
	return gid;
}

/* The mode of a new inode in the directory at offset d: a directory made in a setgid
 * directory is setgid too, so the group carries down the tree. */
static __attribute__((noinline)) u64 newmode(u64 d, u64 mode)
{
	if ((mode & ARF_S_IFMT) != ARF_S_IFDIR)
		return mode;
	return (ar_ld32u(arf, d + ARF_I_MODE) & ARF_S_ISGID) | mode;
}

/* Create entry args -> a new inode of mode in directory pino.  Order: checks of the name,
 * the key's record (a repeat: O_HIT + the recorded inode), journal slot, lock the
 * directory, EEXIST check under the lock, then every allocation (inode, grown slot table,
 * new directory block) so that ENOSPC is answered before anything is changed; then the
 * logged changes; commit; unlock; free the old table's blocks. */
static __attribute__((noinline)) long mk(u64 pino, u64 mode, u64 ugid, u64 rdev, u64 key)
{
	u64 uid = ugid >> 32, gid = ugid & 0xfffffffful;
	long rc = namecheck();
	if (rc != 0)
		return rc;
	u64 len = (u64)ar_len(AR_ARGS);
	u64 h = nhash(0, len);
	/* a repeat of a recorded request (mkdir and mknod: mode's type bits differ) */
	u64 oh = ohash(h, (u64)OP_MK << 32 | mode, pino, ugid, rdev);
	long r0 = oget(key, oh);
	if (r0 != O_MISS)
		return r0 + O_HIT;
	long dr = diroff(pino);
	if (dr <= 0)
		return dr;
	u64 d = (u64)dr;
	u64 isdir = (mode & ARF_S_IFMT) == ARF_S_IFDIR;
	u64 j = jclaim();
	if (j == 0)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	rc = ilock(d, tag);
	if (rc != 0) {
		jend(j);
		return rc;
	}
	u64 ino = 0, newt = 0, ns = 0, newb = 0;
	/* the directory may have been removed while we waited for its lock */
	if (ar_ld32u(arf, d + ARF_I_MODE) == 0) {
		rc = -E_NOENT;
		goto fail;
	}
	if (dfind(d, h, 0, len) != 0) {
		rc = -E_EXIST;
		goto fail;
	}
	if (isdir && ar_ld32u(arf, d + ARF_I_NLINK) >= 0xfffffff0u) {
		rc = -E_MLINK;
		goto fail;
	}
	ino = ialloc();
	if (ino == 0) {
		rc = -E_NOSPC;
		goto fail;
	}
	/* grow the table before the insert would pass half of it: live + tombstones + 1 > n/2 */
	u64 nent = ar_ld64(arf, d + ARF_D_NENT);
	u64 ntomb = ar_ld64(arf, d + ARF_D_NTOMB);
	u64 nslots = ar_ld64(arf, d + ARF_D_NSLOTS);
	u64 oldt = ar_ld64(arf, d + ARF_D_TABLE);
	if (oldt == 0 || (nent + ntomb + 1) << 1 > nslots) {
		/* max(256, next power of two >= 2 * (nent + 1)); hostile counts end by fuel */
		ns = ARF_D_MIN_SLOTS;
		while (ns < (nent + 1) << 1)
			ns <<= 1;
		newt = balloc(ns >> 8);
		if (newt == 0) {
			iput(ino);
			rc = -E_NOSPC;
			goto fail;
		}
		/* a block we own: filled before anything links it, so it needs no undo record */
		ar_fill(arf, newt, ns * ARF_T_SIZE, 0);
	}
	u64 rl = (ARF_R_NAME + len + 7) & ~7ul;
	u64 tail = ar_ld64(arf, d + ARF_D_TAIL);
	if (tail == 0 || ar_ld64(arf, tail + ARF_B_USED) + rl > ARF_BLOCK_SIZE) {
		newb = balloc(1);
		if (newb == 0) {
			iput(ino);
			bput(newt, ns >> 8);
			rc = -E_NOSPC;
			goto fail;
		}
		ar_fill(arf, newb, ARF_BLOCK_SIZE, 0);
		ar_st64(arf, newb + ARF_B_USED, ARF_B_HDR);
		ar_st64(arf, newb + ARF_B_MAGIC, ARF_B_MAGIC_VALUE);
	}
	/* ---- from here on nothing fails: every change is logged first ---- */
	u64 tnow = (u64)ar_hcall0(now);
	u64 c = ioff(ino);
	jlog(j, c, ARF_INO_SIZE);      /* a crash before the link must leave the inode free again */
	ar_fill(arf, c, ARF_INO_SIZE, 0);
	ar_st32(arf, c + ARF_I_MODE, newmode(d, mode));
	ar_st32(arf, c + ARF_I_NLINK, 1 + isdir);
	ar_st32(arf, c + ARF_I_UID, uid);
	ar_st32(arf, c + ARF_I_GID, newgid(d, gid));
	ar_st64(arf, c + ARF_I_RDEV, rdev);
	ar_st64(arf, c + ARF_I_ATIME, tnow);
	ar_st64(arf, c + ARF_I_MTIME, tnow);
	ar_st64(arf, c + ARF_I_CTIME, tnow);
	ar_st64(arf, c + ARF_I_BTIME, tnow);
	ar_st64(arf, c + ARF_I_GEN, ar_fadd(arf, ARF_SB_NEXT_GEN, 1));
	if (isdir)
		ar_st64(arf, c + ARF_I_PARENT, pino);
	jlog(j, d, ARF_INO_SIZE);      /* the directory inode: table, counts, chain, size, times */
	if (newt != 0) {
		/* rehash every live slot of the old table into the new run, then publish it */
		u64 sh = 64 - (u64)ar_ctz(ns);
		for (u64 i = 0; oldt != 0 && i < nslots; i++) {
			u64 s = oldt + i * ARF_T_SIZE;
			u64 rec = ar_ld64(arf, s + ARF_T_REC);
			if (rec <= ARF_T_TOMB)
				continue;
			u64 r = tslot(newt, ns - 1, sh, ar_ld64(arf, s + ARF_T_HASH));
			ar_st64(arf, r + ARF_T_HASH, ar_ld64(arf, s + ARF_T_HASH));
			ar_st64(arf, r + ARF_T_REC, rec);
		}
		ar_st64(arf, d + ARF_D_TABLE, newt);
		ar_st64(arf, d + ARF_D_NSLOTS, ns);
		ar_st64(arf, d + ARF_D_SHIFT, sh);
		ar_st64(arf, d + ARF_D_NTOMB, 0);
		u64 nb = ar_ld64(arf, d + ARF_I_NBLOCKS) + (ns >> 8);
		if (oldt != 0)
			nb -= nslots >> 8;
		ar_st64(arf, d + ARF_I_NBLOCKS, nb);
	}
	if (newb != 0) {
		/* link the new block after the tail (or as the first block) */
		if (tail != 0) {
			jlog(j, tail, ARF_B_HDR);
			ar_st64(arf, tail + ARF_B_NEXT, newb);
		} else {
			ar_st64(arf, d + ARF_D_HEAD, newb);
		}
		ar_st64(arf, d + ARF_D_TAIL, newb);
		ar_st64(arf, d + ARF_I_NBLOCKS, ar_ld64(arf, d + ARF_I_NBLOCKS) + 1);
		ar_st64(arf, d + ARF_I_SIZE, ar_ld64(arf, d + ARF_I_SIZE) + ARF_BLOCK_SIZE);
		tail = newb;
	} else {
		jlog(j, tail, ARF_B_HDR);  /* its used and live change */
	}
	/* the record goes past `used`: bytes no structure covers yet, so no undo record */
	u64 used = ar_ld64(arf, tail + ARF_B_USED);
	u64 r = tail + used;
	ar_fill(arf, r, rl, 0);
	ar_st64(arf, r + ARF_R_INO, ino);
	ar_st64(arf, r + ARF_R_HASH, h);
	ar_st16(arf, r + ARF_R_LEN, rl);
	ar_st8(arf, r + ARF_R_NAMELEN, len);
	ar_st8(arf, r + ARF_R_TYPE, dtype(mode));
	ar_copy(arf, AR_ARGS, r + ARF_R_NAME, 0, len);
	ar_st64(arf, tail + ARF_B_USED, used + rl);
	ar_st64(arf, tail + ARF_B_LIVE, ar_ld64(arf, tail + ARF_B_LIVE) + 1);
	/* index it: the first tombstone or empty slot of its probe */
	u64 s = tslot(ar_ld64(arf, d + ARF_D_TABLE), ar_ld64(arf, d + ARF_D_NSLOTS) - 1,
	              ar_ld64(arf, d + ARF_D_SHIFT), h);
	jlog(j, s, ARF_T_SIZE);
	if (ar_ld64(arf, s + ARF_T_REC) == ARF_T_TOMB)
		ar_st64(arf, d + ARF_D_NTOMB, ar_ld64(arf, d + ARF_D_NTOMB) - 1);
	ar_st64(arf, s + ARF_T_HASH, h);
	ar_st64(arf, s + ARF_T_REC, r);
	ar_st64(arf, d + ARF_D_NENT, ar_ld64(arf, d + ARF_D_NENT) + 1);
	if (isdir)                     /* the subdirectory's ".." names the parent */
		ar_st32(arf, d + ARF_I_NLINK, ar_ld32u(arf, d + ARF_I_NLINK) + 1);
	ar_st64(arf, d + ARF_I_MTIME, tnow);
	ar_st64(arf, d + ARF_I_CTIME, tnow);
	/* record (a keyed request), commit, unlock, and only then give the old table's blocks back */
	oend(j, oput(j, key, ino, ar_ld64(arf, c + ARF_I_GEN), oh));
	iunlock(d, tag);
	if (newt != 0 && oldt != 0)
		bput(oldt, nslots >> 8);
	return (long)ino;
fail:                                  /* nothing was changed */
	jend(j);
	iunlock(d, tag);
	return rc;
}

static __attribute__((noinline)) long do_mkdir(u64 dir, u64 mode, u64 uid, u64 gid, u64 key)
{
	return mk(dir, (mode & 07777) | ARF_S_IFDIR, (uid & 0xfffffffful) << 32 | (gid & 0xfffffffful),
	          0, key);
}

/* The plain forms answer a recorded result as it was (oplain: r without O_HIT); the *attr
 * forms (attrof) getattr of the inode it names when that still has the recorded generation,
 * else -ENOENT (it was removed since, by a later operation). */
static long oplain(long r)
{
	return r >= O_HIT ? r - O_HIT : r;
}

static __attribute__((noinline)) long oattr(u64 key, long ino)
{
	u64 c = ioff((u64)ino);
	if (c == 0 || ar_ld32u(arf, c + ARF_I_MODE) == 0 ||
	    ar_ld64(arf, c + ARF_I_GEN) != ar_ld64(arf, oentry(key) + ARF_O_GEN))
		return -E_NOENT;
	return do_getattr((u64)ino);
}

/* The *attr forms' answer to r, the result of mk, do_symlink or do_link about inode ino:
 * its error, the recorded inode's attributes (a repeat: oattr), or ino's. */
static __attribute__((noinline)) long attrof(u64 key, long r, u64 ino)
{
	if (r < 0)
		return r;
	if (r >= O_HIT)
		return oattr(key, (long)ino);
	return do_getattr(ino);
}

long mkdir(u64 dir, u64 mode, u64 uid, u64 gid, u64 key)
{
	return oplain(do_mkdir(dir, mode, uid, gid, key));
}

/* mknod(dir, mode, uid, gid, rdev): regular files (create), fifos, character and block
 * devices (rdev: the device number, as Linux's dev_t; kept for devices only) and sockets;
 * other types: -EINVAL. */
static __attribute__((noinline)) long do_mknod(u64 dir, u64 mode, u64 ugid, u64 rdev, u64 key)
{
	u64 t = mode & ARF_S_IFMT;
	if (t != ARF_S_IFCHR && t != ARF_S_IFBLK) {
		rdev = 0;              /* only a device has a number */
		if (t != ARF_S_IFREG && t != ARF_S_IFIFO && t != ARF_S_IFSOCK)
			return -E_INVAL;
	}
	return mk(dir, mode & (ARF_S_IFMT | 07777), ugid, rdev, key);
}

static u64 ugid(u64 uid, u64 gid)
{
	return (uid & 0xfffffffful) << 32 | (gid & 0xfffffffful);
}

/* mknod(dir, mode, uid, gid, rdev, key): six arguments, the last past BPF's five */
AR_EXPORT_ARGS(mknod, 6);
long mknod(u64 dir, u64 mode, u64 uid, u64 gid, u64 rdev)
{
	u64 key = ar_arg(5);
	return oplain(do_mknod(dir, mode, ugid(uid, gid), rdev, key));
}

/* mkdirattr, mknodattr: the operation, then getattr of the new inode (one round trip). */
long mkdirattr(u64 dir, u64 mode, u64 uid, u64 gid, u64 key)
{
	long r = do_mkdir(dir, mode, uid, gid, key);
	return attrof(key, r, (u64)oplain(r));
}

AR_EXPORT_ARGS(mknodattr, 6);
long mknodattr(u64 dir, u64 mode, u64 uid, u64 gid, u64 rdev)
{
	u64 key = ar_arg(5);
	long r = do_mknod(dir, mode, ugid(uid, gid), rdev, key);
	return attrof(key, r, (u64)oplain(r));
}

/* mkdirattrs, mknodattrs (and symlinkattrs, linkattrs below): the *attr form's result and
 * output, then, when it is >= 0, getattr of the directory the name went into, after the
 * change (nothing when the directory went meanwhile), as unlinkattr.  The kernel drops a
 * directory's attributes after each entry made in it and asks for them again before the
 * next one: with them here, a mount answers that getattr itself (untar: one run a name
 * less).  A repeat of a recorded request (the same key) answers as the *attr form does,
 * then the directory as it is now: no change between, the same bytes as the first answer;
 * nothing is made twice (the change is mk's, recorded once under the key). */
static __attribute__((noinline)) long pattr(long r, u64 dir)
{
	if (r >= 0)
		do_getattr(dir);
	return r;
}

long mkdirattrs(u64 dir, u64 mode, u64 uid, u64 gid, u64 key)
{
	long r = do_mkdir(dir, mode, uid, gid, key);
	return pattr(attrof(key, r, (u64)oplain(r)), dir);
}

AR_EXPORT_ARGS(mknodattrs, 6);
long mknodattrs(u64 dir, u64 mode, u64 uid, u64 gid, u64 rdev)
{
	u64 key = ar_arg(5);
	long r = do_mknod(dir, mode, ugid(uid, gid), rdev, key);
	return pattr(attrof(key, r, (u64)oplain(r)), dir);
}

/* ---------------------------------------------------------------- unlink, rmdir */

/* Is x a block of the data area?  A hostile ARF_I_XATTR (the inode's xattr block, see
 * "extended attributes" below) must not aim stores at metadata. */
static u64 xinside(u64 x)
{
	return (x & (ARF_BLOCK_SIZE - 1)) == 0 && x >= SB(DATA_OFF) &&
	       x < SB(N_BLOCKS) << ARF_BLOCK_SHIFT;
}

/* Give back what inode c (of type, a S_IF* value) owned, then the inode itself: a
 * directory's slot table and block chain, a file's or long symlink's extents and extent
 * blocks (an inline symlink owns none).  Called after the commit that freed it (mode 0,
 * nothing names it), by the holder of its lock word, which the final fill clears.  A chain
 * that loops (damaged) ends by fuel, an extent off the bitmap by a bounds trap, as in
 * ops.pna. */
static __attribute__((noinline)) void irelease(u64 c, u64 type)
{
	if (type == ARF_S_IFDIR) {
		u64 x = ar_ld64(arf, c + ARF_D_TABLE);
		if (x != 0)
			bput(x, ar_ld64(arf, c + ARF_D_NSLOTS) >> 8);
		x = ar_ld64(arf, c + ARF_D_HEAD);
		while (x != 0) {
			u64 nx = ar_ld64(arf, x + ARF_B_NEXT);
			bput(x, 1);
			x = nx;
		}
	} else {
		/* files and long symlinks: inline extents, then the extent-block chain */
		u64 ne = ar_ld32u(arf, c + ARF_I_NEXTENTS);
		for (u64 k = 0; k < ne && k < ARF_I_INLINE_EXT; k++) {
			u64 e = c + ARF_I_BODY + k * ARF_E_SIZE;
			bput(ar_ld64(arf, e + ARF_E_PBLK) << ARF_BLOCK_SHIFT, ar_ld32u(arf, e + ARF_E_LEN));
		}
		u64 x = ar_ld64(arf, c + ARF_I_XBLK);
		while (x != 0) {
			for (u64 k = 0; k < ar_ld32u(arf, x + ARF_X_N) && k < ARF_X_MAX; k++) {
				u64 e = x + ARF_X_EXT + k * ARF_E_SIZE;
				bput(ar_ld64(arf, e + ARF_E_PBLK) << ARF_BLOCK_SHIFT,
				     ar_ld32u(arf, e + ARF_E_LEN));
			}
			u64 nx = ar_ld64(arf, x + ARF_X_NEXT);
			bput(x, 1);
			x = nx;
		}
	}
	/* the xattr block (one outside the data area is left alone: fsck finds it) */
	u64 xa = ar_ld64(arf, c + ARF_I_XATTR);
	if (xa != 0 && xinside(xa))
		bput(xa, 1);
	ar_fill(arf, c, ARF_INO_SIZE, 0);
	iput((c - SB(ITABLE_OFF)) >> ARF_INO_SHIFT);
}

/* Remove entry args from directory pino: unlink (isdir 0) a non-directory, rmdir (isdir 1)
 * an empty directory.  The slot becomes a tombstone, the record's ino 0; the child loses a
 * link, and an inode left with none is freed with its blocks after the commit (ARF keeps no
 * open-file state yet: an unlinked file is gone at once).  Locks the directory, then the
 * child. */
static long rm(u64 pino, u64 isdir, u64 key)
{
	u64 len = (u64)ar_len(AR_ARGS);
	if (len == 0)
		return -E_NOENT;
	if (len > ARF_NAME_MAX)
		return -E_NAMETOOLONG;
	if (isdots(0, len)) {
		/* unlink(".") is EISDIR; rmdir(".") EINVAL, rmdir("..") ENOTEMPTY (as Linux) */
		if (!isdir)
			return -E_ISDIR;
		return len == 1 ? -E_INVAL : -E_NOTEMPTY;
	}
	if (ar_findb(AR_ARGS, 0, len, '/') != -1)
		return -E_INVAL;
	u64 h = nhash(0, len);
	u64 oh = ohash(h, (u64)OP_RM << 32 | isdir, pino, 0, 0);
	long r0 = oget(key, oh);
	if (r0 != O_MISS)
		return r0 + O_HIT;
	long dr = diroff(pino);
	if (dr <= 0)
		return dr;
	u64 d = (u64)dr;
	u64 j = jclaim();
	if (j == 0)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	long rc = ilock(d, tag);
	if (rc != 0) {
		jend(j);
		return rc;
	}
	if (ar_ld32u(arf, d + ARF_I_MODE) == 0) {
		rc = -E_NOENT;
		goto fail1;
	}
	u64 s = dfind(d, h, 0, len);
	if (s == 0) {
		rc = -E_NOENT;
		goto fail1;
	}
	u64 r = ar_ld64(arf, s + ARF_T_REC);
	u64 c = ioff(ar_ld64(arf, r + ARF_R_INO));
	if (c == 0) {
		rc = -E_IO;
		goto fail1;
	}
	u64 type = ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT;
	if (isdir && type != ARF_S_IFDIR) {
		rc = -E_NOTDIR;
		goto fail1;
	}
	if (!isdir && type == ARF_S_IFDIR) {
		rc = -E_ISDIR;
		goto fail1;
	}
	rc = ilock(c, tag);
	if (rc != 0)
		goto fail1;
	if (isdir && ar_ld64(arf, c + ARF_D_NENT) != 0) {
		rc = -E_NOTEMPTY;
		iunlock(c, tag);
		goto fail1;
	}
	/* ---- logged changes; nothing fails from here ---- */
	u64 tnow = (u64)ar_hcall0(now);
	jlog(j, d, ARF_INO_SIZE);
	jlog(j, c, ARF_INO_SIZE);
	jlog(j, s, ARF_T_SIZE);
	u64 blk = r & ~((u64)ARF_BLOCK_SIZE - 1);
	jlog(j, blk, ARF_B_HDR);
	jlog(j, r, 8);
	ar_st64(arf, s + ARF_T_REC, ARF_T_TOMB);
	ar_st64(arf, r + ARF_R_INO, 0);
	ar_st64(arf, blk + ARF_B_LIVE, ar_ld64(arf, blk + ARF_B_LIVE) - 1);
	ar_st64(arf, d + ARF_D_NENT, ar_ld64(arf, d + ARF_D_NENT) - 1);
	ar_st64(arf, d + ARF_D_NTOMB, ar_ld64(arf, d + ARF_D_NTOMB) + 1);
	ar_st64(arf, d + ARF_I_MTIME, tnow);
	ar_st64(arf, d + ARF_I_CTIME, tnow);
	u64 nl = 0;
	if (isdir) {
		/* the removed directory's ".." no longer names the parent; the directory dies */
		ar_st32(arf, d + ARF_I_NLINK, ar_ld32u(arf, d + ARF_I_NLINK) - 1);
	} else {
		nl = ar_ld32u(arf, c + ARF_I_NLINK) - 1ul;   /* a count of 0 (damaged) stays > 0 */
		ar_st32(arf, c + ARF_I_NLINK, nl);
		ar_st64(arf, c + ARF_I_CTIME, tnow);
	}
	if (nl == 0) {
		/* no links left: the inode is free from the commit on (its body is read below) */
		ar_st32(arf, c + ARF_I_NLINK, 0);
		ar_st32(arf, c + ARF_I_MODE, 0);
	}
	oend(j, oput(j, key, 0, 0, oh));
	iunlock(d, tag);
	if (nl != 0) {
		iunlock(c, tag);
		return 0;
	}
	irelease(c, type);
	return 0;
fail1:                                 /* nothing was changed */
	jend(j);
	iunlock(d, tag);
	return rc;
}

long unlink(u64 dir, u64 key)
{
	return oplain(rm(dir, 0, key));
}

long rmdir(u64 dir, u64 key)
{
	return oplain(rm(dir, 1, key));
}

/* unlinkattr(dir, key), rmdirattr(dir, key): unlink's or rmdir's result and, when it is
 * >= 0, getattr of dir on the output (nothing when dir went meanwhile).  The kernel drops
 * a directory's attributes after each change in it and asks for them again before the next
 * one (its permission check): with them here, a mount answers that getattr itself (rm -r:
 * one run a name instead of two; docs/arf.md, "Mounting"). */
long unlinkattr(u64 dir, u64 key)
{
	long r = oplain(rm(dir, 0, key));
	if (r >= 0)
		do_getattr(dir);
	return r;
}

long rmdirattr(u64 dir, u64 key)
{
	long r = oplain(rm(dir, 1, key));
	if (r >= 0)
		do_getattr(dir);
	return r;
}

/* ---------------------------------------------------------------- entry helpers
 * Used by symlink, link and rename: the allocation half (before the first logged change)
 * and the logged half of inserting and removing an entry.  The caller holds the directory's
 * lock and has logged its inode. */

/* Slots of the new table directory d needs before one more insert (the growth rule of mk:
 * live + tombstones + 1 > nslots / 2, or no table yet), or 0 when its table has room. */
static u64 tsize(u64 d)
{
	u64 nent = ar_ld64(arf, d + ARF_D_NENT);
	if (ar_ld64(arf, d + ARF_D_TABLE) != 0 &&
	    (nent + ar_ld64(arf, d + ARF_D_NTOMB) + 1) << 1 <= ar_ld64(arf, d + ARF_D_NSLOTS))
		return 0;
	u64 ns = ARF_D_MIN_SLOTS;      /* max(256, next power of two >= 2 * (nent + 1)) */
	while (ns < (nent + 1) << 1)
		ns <<= 1;
	return ns;
}

/* Bytes of the record of a name of len bytes. */
static u64 reclen(u64 len)
{
	return (ARF_R_NAME + len + 7) & ~7ul;
}

/* 1 when a record for a name of len bytes does not fit directory d's tail block (or d has
 * no block yet), else 0. */
static u64 bneed(u64 d, u64 len)
{
	u64 tail = ar_ld64(arf, d + ARF_D_TAIL);
	return tail == 0 || ar_ld64(arf, tail + ARF_B_USED) + reclen(len) > ARF_BLOCK_SIZE;
}

/* A new, empty directory block (ours until a logged store links it): its offset, or 0
 * (ENOSPC). */
static u64 bnew(void)
{
	u64 b = balloc(1);
	if (b != 0) {
		ar_fill(arf, b, ARF_BLOCK_SIZE, 0);
		ar_st64(arf, b + ARF_B_USED, ARF_B_HDR);
		ar_st64(arf, b + ARF_B_MAGIC, ARF_B_MAGIC_VALUE);
	}
	return b;
}

/* ops.pna's dins(j, d, h, noff, nlen, ino, dt, newt, ns, newb) takes ten arguments; pncc
 * allows five, so it is three calls in the same order: dgrow, dlink, dput.  Insert the
 * entry args[noff .. +nlen) (hash h) -> ino, record type dt, into directory d (locked, its
 * inode logged, the name known absent).  newt (a run of ns slots, from tsize) and newb
 * (from bnew) were allocated before the operation's first logged change, 0 when not needed.
 * As mk: rehash into newt and publish it, link newb after the tail, append the record past
 * the tail's used bytes (no undo record: nothing covers those bytes yet), log and fill its
 * slot, nent + 1.  The caller reads the old table first and frees it after its commit;
 * times and link counts are the caller's. */

/* The table part: newt zeroed (ours: no undo record), the live slots of the old table
 * rehashed into it, then published in d's (logged) inode. */
static __attribute__((noinline)) void dgrow(u64 d, u64 newt, u64 ns)
{
	if (newt == 0)
		return;
	u64 oldt = ar_ld64(arf, d + ARF_D_TABLE);
	u64 nslots = ar_ld64(arf, d + ARF_D_NSLOTS);
	ar_fill(arf, newt, ns * ARF_T_SIZE, 0);
	u64 sh = 64 - (u64)ar_ctz(ns);
	for (u64 i = 0; oldt != 0 && i < nslots; i++) {
		u64 s = oldt + i * ARF_T_SIZE;
		u64 rec = ar_ld64(arf, s + ARF_T_REC);
		if (rec <= ARF_T_TOMB)
			continue;
		u64 r = tslot(newt, ns - 1, sh, ar_ld64(arf, s + ARF_T_HASH));
		ar_st64(arf, r + ARF_T_HASH, ar_ld64(arf, s + ARF_T_HASH));
		ar_st64(arf, r + ARF_T_REC, rec);
	}
	ar_st64(arf, d + ARF_D_TABLE, newt);
	ar_st64(arf, d + ARF_D_NSLOTS, ns);
	ar_st64(arf, d + ARF_D_SHIFT, sh);
	ar_st64(arf, d + ARF_D_NTOMB, 0);
	u64 nb = ar_ld64(arf, d + ARF_I_NBLOCKS) + (ns >> 8);
	if (oldt != 0)
		nb -= nslots >> 8;
	ar_st64(arf, d + ARF_I_NBLOCKS, nb);
}

/* The block part: newb linked after the tail (or as the first block), or the tail's
 * header logged (its used and live change).  Afterwards d's tail is where the record
 * goes. */
static __attribute__((noinline)) void dlink(u64 j, u64 d, u64 newb)
{
	u64 tail = ar_ld64(arf, d + ARF_D_TAIL);
	if (newb == 0) {
		jlog(j, tail, ARF_B_HDR);
		return;
	}
	if (tail != 0) {
		jlog(j, tail, ARF_B_HDR);
		ar_st64(arf, tail + ARF_B_NEXT, newb);
	} else {
		ar_st64(arf, d + ARF_D_HEAD, newb);
	}
	ar_st64(arf, d + ARF_D_TAIL, newb);
	ar_st64(arf, d + ARF_I_NBLOCKS, ar_ld64(arf, d + ARF_I_NBLOCKS) + 1);
	ar_st64(arf, d + ARF_I_SIZE, ar_ld64(arf, d + ARF_I_SIZE) + ARF_BLOCK_SIZE);
}

/* Pack noff (< 2^32: an offset inside args), nlen and dt for dput. */
#define NAMEREF(noff, nlen, dt) ((noff) | (u64)(nlen) << 32 | (u64)(dt) << 48)

/* The record part: appended at d's tail, indexed in the first tombstone or empty slot of
 * its probe (logged), nent + 1.  nr = NAMEREF(noff, nlen, dt). */
static __attribute__((noinline)) void dput(u64 j, u64 d, u64 h, u64 ino, u64 nr)
{
	u64 noff = nr & 0xffffffffu, nlen = nr >> 32 & 0xffff, dt = nr >> 48;
	u64 tail = ar_ld64(arf, d + ARF_D_TAIL);
	u64 rl = reclen(nlen);
	u64 used = ar_ld64(arf, tail + ARF_B_USED);
	u64 r = tail + used;
	ar_fill(arf, r, rl, 0);
	ar_st64(arf, r + ARF_R_INO, ino);
	ar_st64(arf, r + ARF_R_HASH, h);
	ar_st16(arf, r + ARF_R_LEN, rl);
	ar_st8(arf, r + ARF_R_NAMELEN, nlen);
	ar_st8(arf, r + ARF_R_TYPE, dt);
	ar_copy(arf, AR_ARGS, r + ARF_R_NAME, noff, nlen);
	ar_st64(arf, tail + ARF_B_USED, used + rl);
	ar_st64(arf, tail + ARF_B_LIVE, ar_ld64(arf, tail + ARF_B_LIVE) + 1);
	u64 s = tslot(ar_ld64(arf, d + ARF_D_TABLE), ar_ld64(arf, d + ARF_D_NSLOTS) - 1,
	              ar_ld64(arf, d + ARF_D_SHIFT), h);
	jlog(j, s, ARF_T_SIZE);
	if (ar_ld64(arf, s + ARF_T_REC) == ARF_T_TOMB)
		ar_st64(arf, d + ARF_D_NTOMB, ar_ld64(arf, d + ARF_D_NTOMB) - 1);
	ar_st64(arf, s + ARF_T_HASH, h);
	ar_st64(arf, s + ARF_T_REC, r);
	ar_st64(arf, d + ARF_D_NENT, ar_ld64(arf, d + ARF_D_NENT) + 1);
}

/* Remove the entry of slot s from directory d (locked, its inode logged), as rm: log the
 * slot, the record's block header and its ino; the slot becomes a tombstone, the record
 * dead; live, nent and ntomb follow. */
static __attribute__((noinline)) void ddel(u64 j, u64 d, u64 s)
{
	u64 r = ar_ld64(arf, s + ARF_T_REC);
	u64 blk = r & ~((u64)ARF_BLOCK_SIZE - 1);
	jlog(j, s, ARF_T_SIZE);
	jlog(j, blk, ARF_B_HDR);
	jlog(j, r, 8);
	ar_st64(arf, s + ARF_T_REC, ARF_T_TOMB);
	ar_st64(arf, r + ARF_R_INO, 0);
	ar_st64(arf, blk + ARF_B_LIVE, ar_ld64(arf, blk + ARF_B_LIVE) - 1);
	ar_st64(arf, d + ARF_D_NENT, ar_ld64(arf, d + ARF_D_NENT) - 1);
	ar_st64(arf, d + ARF_D_NTOMB, ar_ld64(arf, d + ARF_D_NTOMB) + 1);
}

/* Set directory (or inode) d's mtime and ctime to t. */
static __attribute__((noinline)) void dtouch(u64 d, u64 t)
{
	ar_st64(arf, d + ARF_I_MTIME, t);
	ar_st64(arf, d + ARF_I_CTIME, t);
}

/* ---------------------------------------------------------------- symlink */

/* symlink(dir, nlen, uid, gid): args is the name (nlen bytes) then the target.  A new inode
 * S_IFLNK | 0777 with size = the target's length; a target of up to 144 bytes is the body
 * itself (ARF_IF_INLINE), a longer one fills one data block named by one extent (lblk 0,
 * len 1).  Errors: target empty ENOENT, longer than 4095 ENAMETOOLONG, with a NUL EINVAL;
 * the name's as mknod; nlen past the args EINVAL.  Order as mk: checks, slot, directory
 * lock, EEXIST, every allocation (inode, table, directory block, target block), then the
 * logged changes, commit, unlock, free the old table. */
static __attribute__((noinline)) long do_symlink(u64 pino, u64 nlen, u64 uid, u64 gid, u64 key)
{
	u64 alen = (u64)ar_len(AR_ARGS);
	if (nlen > alen)
		return -E_INVAL;
	u64 tl = alen - nlen;
	if (tl == 0)
		return -E_NOENT;
	if (tl > ARF_SYMLINK_MAX)
		return -E_NAMETOOLONG;
	if (ar_findb(AR_ARGS, nlen, tl, 0) != -1)
		return -E_INVAL;
	long rc = ncheck(0, nlen);
	if (rc != 0)
		return rc == 1 ? -E_EXIST : rc;
	u64 h = nhash(0, nlen);
	u64 oh = 0;                    /* the target's hash only for a keyed request */
	if (key != 0)
		oh = ohash(h, (u64)OP_SYMLINK << 32, pino, ugid(uid, gid), bhash(nlen, tl));
	long r0 = oget(key, oh);
	if (r0 != O_MISS)
		return r0 + O_HIT;
	long dr = diroff(pino);
	if (dr <= 0)
		return dr;
	u64 d = (u64)dr;
	u64 j = jclaim();
	if (j == 0)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	rc = ilock(d, tag);
	if (rc != 0) {
		jend(j);
		return rc;
	}
	u64 ino = 0, ns = 0, newt = 0, newb = 0, blk = 0;
	if (ar_ld32u(arf, d + ARF_I_MODE) == 0) {
		rc = -E_NOENT;
		goto fail;
	}
	if (dfind(d, h, 0, nlen) != 0) {
		rc = -E_EXIST;
		goto fail;
	}
	ino = ialloc();
	if (ino == 0) {
		rc = -E_NOSPC;
		goto fail;
	}
	ns = tsize(d);
	if (ns != 0) {
		newt = balloc(ns >> 8);
		if (newt == 0) {
			ns = 0;
			goto nospc;
		}
	}
	if (bneed(d, nlen)) {
		newb = bnew();
		if (newb == 0)
			goto nospc;
	}
	if (tl > ARF_I_BODY_LEN) {
		blk = balloc(1);
		if (blk == 0)
			goto nospc;
		/* the target block is ours until the logged inode names it: filled without undo */
		ar_fill(arf, blk, ARF_BLOCK_SIZE, 0);
		ar_copy(arf, AR_ARGS, blk, nlen, tl);
	}
	/* ---- from here on nothing fails: every change is logged first ---- */
	u64 tnow = (u64)ar_hcall0(now);
	u64 c = ioff(ino);
	jlog(j, c, ARF_INO_SIZE);      /* a crash before the link must leave the inode free again */
	jlog(j, d, ARF_INO_SIZE);
	ar_fill(arf, c, ARF_INO_SIZE, 0);
	ar_st32(arf, c + ARF_I_MODE, ARF_S_IFLNK | 0777);
	ar_st32(arf, c + ARF_I_NLINK, 1);
	ar_st32(arf, c + ARF_I_UID, uid);
	ar_st32(arf, c + ARF_I_GID, newgid(d, gid));
	ar_st64(arf, c + ARF_I_SIZE, tl);
	ar_st64(arf, c + ARF_I_ATIME, tnow);
	ar_st64(arf, c + ARF_I_BTIME, tnow);
	dtouch(c, tnow);
	ar_st64(arf, c + ARF_I_GEN, ar_fadd(arf, ARF_SB_NEXT_GEN, 1));
	if (blk == 0) {
		ar_st32(arf, c + ARF_I_FLAGS, ARF_IF_INLINE);
		ar_copy(arf, AR_ARGS, c + ARF_I_BODY, nlen, tl);
	} else {
		ar_st32(arf, c + ARF_I_NEXTENTS, 1);
		ar_st64(arf, c + ARF_I_NBLOCKS, 1);
		ar_st32(arf, c + ARF_I_BODY + ARF_E_LEN, 1);
		ar_st64(arf, c + ARF_I_BODY + ARF_E_PBLK, blk >> ARF_BLOCK_SHIFT);
	}
	u64 oldt = ar_ld64(arf, d + ARF_D_TABLE);
	u64 nslots = ar_ld64(arf, d + ARF_D_NSLOTS);
	dgrow(d, newt, ns);
	dlink(j, d, newb);
	dput(j, d, h, ino, NAMEREF(0, nlen, ARF_DT_LNK));
	dtouch(d, tnow);
	oend(j, oput(j, key, ino, ar_ld64(arf, c + ARF_I_GEN), oh));
	iunlock(d, tag);
	if (newt != 0 && oldt != 0)
		bput(oldt, nslots >> 8);
	return (long)ino;
nospc:                                 /* give back what was claimed; nothing was changed */
	iput(ino);
	bput(newt, ns >> 8);
	bput(newb, newb != 0);
	rc = -E_NOSPC;
fail:
	jend(j);
	iunlock(d, tag);
	return rc;
}

long symlink(u64 pino, u64 nlen, u64 uid, u64 gid, u64 key)
{
	return oplain(do_symlink(pino, nlen, uid, gid, key));
}

long symlinkattr(u64 pino, u64 nlen, u64 uid, u64 gid, u64 key)
{
	long r = do_symlink(pino, nlen, uid, gid, key);
	return attrof(key, r, (u64)oplain(r));
}

long symlinkattrs(u64 pino, u64 nlen, u64 uid, u64 gid, u64 key)
{
	long r = do_symlink(pino, nlen, uid, gid, key);
	return pattr(attrof(key, r, (u64)oplain(r)), pino);
}

/* ---------------------------------------------------------------- link */

/* link(ino, dir): args is the new name.  A second (third, ...) entry for the existing
 * non-directory ino: nlink + 1, ctime now.  Locks the directory, then the inode
 * (directories before what they name, as rm).  Errors: the name's as mknod (EEXIST first,
 * as Linux), EPERM for a directory, ENOENT when ino is free (or unlinked while we waited),
 * EINVAL for no such number, EMLINK when nlink would pass 2^32 - 1, ENOSPC, EAGAIN. */
static __attribute__((noinline)) long do_link(u64 ino, u64 pino, u64 key)
{
	long rc = namecheck();
	if (rc != 0)
		return rc;
	u64 len = (u64)ar_len(AR_ARGS);
	u64 h = nhash(0, len);
	u64 c = ioff(ino);
	if (c == 0)
		return -E_INVAL;
	u64 oh = ohash(h, (u64)OP_LINK << 32, ino, pino, 0);
	long r0 = oget(key, oh);
	if (r0 != O_MISS)
		return r0 + O_HIT;
	long dr = diroff(pino);
	if (dr <= 0)
		return dr;
	u64 d = (u64)dr;
	u64 j = jclaim();
	if (j == 0)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	rc = ilock(d, tag);
	if (rc != 0) {
		jend(j);
		return rc;
	}
	if (ar_ld32u(arf, d + ARF_I_MODE) == 0) {
		rc = -E_NOENT;
		goto fail1;
	}
	if (dfind(d, h, 0, len) != 0) {
		rc = -E_EXIST;
		goto fail1;
	}
	u64 type = ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT;
	if (type == 0) {
		rc = -E_NOENT;
		goto fail1;
	}
	if (type == ARF_S_IFDIR) {
		rc = -E_PERM;
		goto fail1;
	}
	rc = ilock(c, tag);
	if (rc != 0)
		goto fail1;
	/* unlinked while we waited for its lock? */
	u64 mode = ar_ld32u(arf, c + ARF_I_MODE);
	u64 ns = 0, newt = 0, newb = 0;
	if (mode == 0) {
		rc = -E_NOENT;
		goto fail2;
	}
	if (ar_ld32u(arf, c + ARF_I_NLINK) >= 0xffffffffu) {
		rc = -E_MLINK;
		goto fail2;
	}
	ns = tsize(d);
	if (ns != 0) {
		newt = balloc(ns >> 8);
		if (newt == 0) {
			rc = -E_NOSPC;
			goto fail2;
		}
	}
	if (bneed(d, len)) {
		newb = bnew();
		if (newb == 0) {
			bput(newt, ns >> 8);
			rc = -E_NOSPC;
			goto fail2;
		}
	}
	/* ---- logged changes; nothing fails from here ---- */
	u64 tnow = (u64)ar_hcall0(now);
	jlog(j, c, ARF_INO_SIZE);
	jlog(j, d, ARF_INO_SIZE);
	u64 oldt = ar_ld64(arf, d + ARF_D_TABLE);
	u64 nslots = ar_ld64(arf, d + ARF_D_NSLOTS);
	dgrow(d, newt, ns);
	dlink(j, d, newb);
	dput(j, d, h, ino, NAMEREF(0, len, dtype(mode)));
	ar_st32(arf, c + ARF_I_NLINK, ar_ld32u(arf, c + ARF_I_NLINK) + 1);
	ar_st64(arf, c + ARF_I_CTIME, tnow);
	dtouch(d, tnow);
	oend(j, oput(j, key, 0, ar_ld64(arf, c + ARF_I_GEN), oh));
	iunlock(c, tag);
	iunlock(d, tag);
	if (newt != 0 && oldt != 0)
		bput(oldt, nslots >> 8);
	return 0;
fail2:
	iunlock(c, tag);
fail1:                                 /* nothing was changed */
	jend(j);
	iunlock(d, tag);
	return rc;
}

long link(u64 ino, u64 pino, u64 key)
{
	return oplain(do_link(ino, pino, key));
}

/* link returns 0 on success: the attributes are ino's (its nlink already counts the new
 * name); the result is ino. */
long linkattr(u64 ino, u64 pino, u64 key)
{
	return attrof(key, do_link(ino, pino, key), ino);
}

long linkattrs(u64 ino, u64 pino, u64 key)
{
	return pattr(attrof(key, do_link(ino, pino, key), ino), pino);
}

/* ---------------------------------------------------------------- rename */

/* 1 when directory (offset) x is directory a or lies under it: walks x's parent chain to
 * the root (whose parent is itself), at most n_inodes steps (the bytes are not trusted). */
static __attribute__((noinline)) u64 under(u64 x, u64 a)
{
	for (u64 n = 0;; n++) {
		if (x == a)
			return 1;
		if (n >= SB(N_INODES))
			return 0;
		u64 p = ioff(ar_ld64(arf, x + ARF_I_PARENT));
		if (p == 0 || p == x)
			return 0;
		x = p;
	}
}

/* Add delta to the u32 at arf[off] (link counts). */
static __attribute__((noinline)) void add32(u64 off, u64 delta)
{
	ar_st32(arf, off, ar_ld32u(arf, off) + delta);
}

/* Unlock each nonzero inode offset of a .. d, held with tag (ops.pna's iunlock5 also takes
 * a fifth; pncc allows five arguments, so rename calls this and iunlock). */
static __attribute__((noinline)) void iunlock4(u64 tag, u64 a, u64 b, u64 c, u64 d)
{
	if (a != 0)
		iunlock(a, tag);
	if (b != 0)
		iunlock(b, tag);
	if (c != 0)
		iunlock(c, tag);
	if (d != 0)
		iunlock(d, tag);
}

/* rename(olddir, newdir, olen, flags): args is the old name (olen bytes) then the new one.
 * flags 0, 1 RENAME_NOREPLACE, 2 RENAME_EXCHANGE (both: EINVAL), as renameat2(2) on a Linux
 * local filesystem:
 *   - the new name may exist: a file replaces a non-directory (which loses a link, freed with
 *     its blocks after the commit when none is left), a directory replaces an empty
 *     directory; else EISDIR (file over directory), ENOTDIR (directory over file),
 *     ENOTEMPTY; NOREPLACE: EEXIST; EXCHANGE swaps the two entries (both must exist: ENOENT)
 *   - a directory moved into its own subtree: EINVAL (also an exchange making one); a
 *     target that lies above the source: ENOTEMPTY (exchange: EINVAL)
 *   - two names of one inode (or one name): nothing happens, 0
 *   - "." or ".." as either name: EBUSY (NOREPLACE on the new one: EEXIST), other name
 *     errors as mknod; EMLINK when a directory would pass 2^32 - 16 links
 *   - a moved directory's parent field (its "..") and both parents' link counts follow;
 *     ctime of the moved (and replaced, exchanged) inodes and both parents' mtime/ctime: now
 * Locks, in one order every operation keeps: between two directories, inode 0's lock word
 * (renames across directories one at a time, so what lies under what cannot change while it
 * is checked; taken first, by renames only), then the directories, the one above the other
 * first (unrelated ones: olddir first), then the entries' inodes, directories before
 * others, else by number.  rm and link lock a directory before what it names, so no cycle
 * of waits can form.  Then: every allocation (only a new name needs one), the logged
 * changes, commit, unlock, free what the replaced inode and an old table owned. */
long rename(u64 olddir, u64 newdir, u64 olen, u64 flags, u64 key)
{
	if ((flags & ~3ul) != 0 || flags == 3 || olen > (u64)ar_len(AR_ARGS))
		return -E_INVAL;
	u64 nlen = (u64)ar_len(AR_ARGS) - olen;
	long rc = ncheck(0, olen);
	if (rc != 0)
		return rc == 1 ? -E_BUSY : rc;
	rc = ncheck(olen, nlen);
	if (rc != 0) {
		if (rc != 1)
			return rc;
		return flags == 1 ? -E_EXIST : -E_BUSY;
	}
	u64 h1 = nhash(0, olen), h2 = nhash(olen, nlen);
	u64 oh = ohash(h1, (u64)OP_RENAME << 32 | flags, olddir, newdir, h2);
	long r0 = oget(key, oh);
	if (r0 != O_MISS)
		return r0;
	long dr = diroff(olddir);
	if (dr <= 0)
		return dr;
	u64 d1 = (u64)dr;
	dr = diroff(newdir);
	if (dr <= 0)
		return dr;
	u64 d2 = (u64)dr;
	u64 j = jclaim();
	if (j == 0)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	u64 cross = d1 != d2;
	u64 g = 0, lx = 0, ly = 0, ls = 0, lt = 0, a, b = 0;
	u64 s2 = 0, r2 = 0, tino = 0, ct = 0, tt = 0, ns = 0, newt = 0, newb = 0, freet = 0;
	u64 oldt = 0, nslots = 0;
	if (cross) {
		rc = ilock(SB(ITABLE_OFF), tag);
		if (rc != 0)
			goto fail;
		g = SB(ITABLE_OFF);
		if (under(d1, d2)) {   /* olddir lies under newdir: newdir first */
			a = d2;
			b = d1;
		} else {
			a = d1;
			b = d2;
		}
	} else {
		a = d1;
	}
	rc = ilock(a, tag);
	if (rc != 0)
		goto fail;
	lx = a;
	if (b != 0) {
		rc = ilock(b, tag);
		if (rc != 0)
			goto fail;
		ly = b;
	}
	/* either directory may have been removed while we waited */
	rc = -E_NOENT;
	if (ar_ld32u(arf, d1 + ARF_I_MODE) == 0 || ar_ld32u(arf, d2 + ARF_I_MODE) == 0)
		goto fail;
	u64 s1 = dfind(d1, h1, 0, olen);
	if (s1 == 0)
		goto fail;
	u64 r1 = ar_ld64(arf, s1 + ARF_T_REC);
	u64 sino = ar_ld64(arf, r1 + ARF_R_INO);
	u64 cs = ioff(sino);
	rc = -E_IO;
	if (cs == 0)
		goto fail;
	u64 ts = ar_ld32u(arf, cs + ARF_I_MODE) & ARF_S_IFMT;
	s2 = dfind(d2, h2, olen, nlen);
	if (s2 != 0) {
		r2 = ar_ld64(arf, s2 + ARF_T_REC);
		tino = ar_ld64(arf, r2 + ARF_R_INO);
		ct = ioff(tino);
		if (ct == 0)
			goto fail;
		tt = ar_ld32u(arf, ct + ARF_I_MODE) & ARF_S_IFMT;
	}
	rc = -E_EXIST;
	if (flags == 1 && s2 != 0)
		goto fail;
	rc = -E_NOENT;
	if (flags == 2 && s2 == 0)
		goto fail;
	/* the tree's shape (under the rename lock when the directories differ) */
	if (cross) {
		rc = -E_INVAL;     /* a directory into its own subtree */
		if (ts == ARF_S_IFDIR && under(d2, cs))
			goto fail;
		/* the target holds the source: exchange EINVAL, else ENOTEMPTY */
		rc = flags == 2 ? -E_INVAL : -E_NOTEMPTY;
		if (s2 != 0 && tt == ARF_S_IFDIR && under(d1, ct))
			goto fail;
	}
	if (s2 != 0) {
		rc = 0;            /* two names of one inode, or one name: nothing to do */
		if (sino == tino)
			goto fail;
		if (flags != 2) {
			rc = -E_NOTDIR;
			if (ts == ARF_S_IFDIR && tt != ARF_S_IFDIR)
				goto fail;
			rc = -E_ISDIR;
			if (ts != ARF_S_IFDIR && tt == ARF_S_IFDIR)
				goto fail;
		}
	}
	/* a directory gaining a subdirectory: newdir when a directory arrives and none leaves,
	 * olddir when an exchange brings it one for a non-directory */
	rc = -E_MLINK;
	if (cross) {
		if (ts == ARF_S_IFDIR) {
			if (tt != ARF_S_IFDIR && ar_ld32u(arf, d2 + ARF_I_NLINK) >= 0xfffffff0u)
				goto fail;
		} else if (flags == 2 && tt == ARF_S_IFDIR &&
		           ar_ld32u(arf, d1 + ARF_I_NLINK) >= 0xfffffff0u) {
			goto fail;
		}
	}
	/* the entries' inodes: directories first, then by offset */
	a = cs;
	b = ct;
	if (b != 0 && cs + ((u64)(ts != ARF_S_IFDIR) << 60) >= ct + ((u64)(tt != ARF_S_IFDIR) << 60)) {
		a = ct;
		b = cs;
	}
	rc = ilock(a, tag);
	if (rc != 0)
		goto fail;
	ls = a;
	if (b != 0) {
		rc = ilock(b, tag);
		if (rc != 0)
			goto fail;
		lt = b;
	}
	rc = -E_NOTEMPTY;
	if (flags != 2 && tt == ARF_S_IFDIR && ar_ld64(arf, ct + ARF_D_NENT) != 0)
		goto fail;
	/* only a new name needs space; ENOSPC before anything changes */
	if (s2 == 0) {
		rc = -E_NOSPC;
		ns = tsize(d2);
		if (ns != 0) {
			newt = balloc(ns >> 8);
			if (newt == 0)
				goto fail;
		}
		if (bneed(d2, nlen)) {
			newb = bnew();
			if (newb == 0) {
				bput(newt, ns >> 8);
				goto fail;
			}
		}
	}
	/* ---- logged changes; nothing fails from here ---- */
	u64 tnow = (u64)ar_hcall0(now);
	jlog(j, d1, ARF_INO_SIZE);
	if (cross)
		jlog(j, d2, ARF_INO_SIZE);
	jlog(j, cs, ARF_INO_SIZE);
	if (ct != 0)
		jlog(j, ct, ARF_INO_SIZE);
	if (flags == 2) {
		jlog(j, r1, ARF_R_MIN);
		jlog(j, r2, ARF_R_MIN);
		ar_st64(arf, r1 + ARF_R_INO, tino);
		ar_st8(arf, r1 + ARF_R_TYPE, dtype(ar_ld32u(arf, ct + ARF_I_MODE)));
		ar_st64(arf, r2 + ARF_R_INO, sino);
		ar_st8(arf, r2 + ARF_R_TYPE, dtype(ar_ld32u(arf, cs + ARF_I_MODE)));
		ar_st64(arf, ct + ARF_I_CTIME, tnow);
		if (cross && tt == ARF_S_IFDIR) {
			ar_st64(arf, ct + ARF_I_PARENT, olddir);
			add32(d2 + ARF_I_NLINK, -1ul);
			add32(d1 + ARF_I_NLINK, 1);
		}
	} else if (s2 != 0) {
		/* the target's record now names the source; the source's entry goes */
		jlog(j, r2, ARF_R_MIN);    /* ino .. type */
		ar_st64(arf, r2 + ARF_R_INO, sino);
		ar_st8(arf, r2 + ARF_R_TYPE, dtype(ar_ld32u(arf, cs + ARF_I_MODE)));
		ddel(j, d1, s1);
		u64 nl = 0;
		if (tt == ARF_S_IFDIR) {
			add32(d2 + ARF_I_NLINK, -1ul);  /* the replaced directory's ".." named newdir */
		} else {
			nl = ar_ld32u(arf, ct + ARF_I_NLINK) - 1ul;
			ar_st32(arf, ct + ARF_I_NLINK, nl);
			ar_st64(arf, ct + ARF_I_CTIME, tnow);
		}
		if (nl == 0) {
			/* no links left: free from the commit on, its blocks given back after it */
			ar_st32(arf, ct + ARF_I_NLINK, 0);
			ar_st32(arf, ct + ARF_I_MODE, 0);
			freet = 1;
		}
	} else {
		/* a new name: the old entry goes first (in one directory the insert may rehash,
		 * and the old slot must be a tombstone by then, as the growth rule counted it) */
		ddel(j, d1, s1);
		oldt = ar_ld64(arf, d2 + ARF_D_TABLE);
		nslots = ar_ld64(arf, d2 + ARF_D_NSLOTS);
		dgrow(d2, newt, ns);
		dlink(j, d2, newb);
		dput(j, d2, h2, sino, NAMEREF(olen, nlen, dtype(ar_ld32u(arf, cs + ARF_I_MODE))));
	}
	/* a directory that changed parents: its ".." and both link counts */
	if (cross && ts == ARF_S_IFDIR) {
		ar_st64(arf, cs + ARF_I_PARENT, newdir);
		add32(d1 + ARF_I_NLINK, -1ul);
		add32(d2 + ARF_I_NLINK, 1);
	}
	ar_st64(arf, cs + ARF_I_CTIME, tnow);
	dtouch(d1, tnow);
	dtouch(d2, tnow);
	/* record, commit, unlock (a freed inode's lock word is cleared with it), give back */
	oend(j, oput(j, key, 0, 0, oh));
	if (freet) {
		if (ls == ct)
			ls = 0;
		if (lt == ct)
			lt = 0;
	}
	iunlock4(tag, lt, ls, ly, lx);
	if (g != 0)
		iunlock(g, tag);
	if (freet)
		irelease(ct, tt);
	if (newt != 0 && oldt != 0)
		bput(oldt, nslots >> 8);
	return 0;
fail:                                  /* nothing was changed (rc 0: nothing to do) */
	jend(j);
	iunlock4(tag, lt, ls, ly, lx);
	if (g != 0)
		iunlock(g, tag);
	return rc;
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
 * ATTR_WORDS u64 (all zeros when the entry's inode was freed since: mode 0 says "no attributes").
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
			for (int i = 0; i < ATTR_WORDS; i++)   /* freed meanwhile: zeros */
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

/* ---------------------------------------------------------------- extended attributes
 * All of an inode's xattrs live in one block, its ARF_I_XATTR (docs/arf.md, "Extended
 * attributes"): a header, then entries packed up to ARF_A_USED, each a u8 name length, a
 * zero byte, a u16 value length, the full name ("user.x") and the value, padded to 4.  A
 * change logs the inode and the whole block, then rewrites the block in place: a removal
 * moves the entries after it down, a set removes the old entry and appends the new one.
 * The reads lock the inode too (with a journal slot's tag, logging nothing), since a
 * concurrent removal moves the bytes they would be reading.  The helpers are never inlined,
 * as dtouch and the others above: the crash tests stop runs by fuel, which only calls and
 * backward jumps spend. */

/* Inode c's xattr block: its offset, 0 for none, -EIO when the field or the header is not
 * one the operations could have written. */
static __attribute__((noinline)) long xblock(u64 c)
{
	u64 x = ar_ld64(arf, c + ARF_I_XATTR);
	if (x == 0)
		return 0;
	if (!xinside(x) || ar_ld32u(arf, x + ARF_A_MAGIC) != ARF_A_MAGIC_VALUE)
		return -E_IO;
	u64 used = ar_ld64(arf, x + ARF_A_USED);
	if (used < ARF_A_HDR || used > ARF_BLOCK_SIZE)
		return -E_IO;
	return (long)x;
}

/* Bytes of the entry at e, padding included. */
static __attribute__((noinline)) u64 xelen(u64 e)
{
	return (ARF_XE_NAME + ar_ld8u(arf, e + ARF_XE_NAMELEN) + ar_ld16u(arf, e + ARF_XE_VLEN) +
	        3) & ~(u64)3;
}

/* The entry of block x named args[0..nlen): its offset, 0 when there is none, -EIO when an
 * entry is empty-named or crosses the used bytes (the walk is bounded by them). */
static __attribute__((noinline)) long xfind(u64 x, u64 nlen)
{
	u64 end = x + ar_ld64(arf, x + ARF_A_USED);
	for (u64 e = x + ARF_A_HDR; e < end; e += xelen(e)) {
		u64 l = ar_ld8u(arf, e + ARF_XE_NAMELEN);
		if (e + ARF_XE_NAME > end || l == 0 || e + xelen(e) > end)
			return -E_IO;
		if (l == nlen && ar_cmp(arf, AR_ARGS, e + ARF_XE_NAME, 0, nlen) == 0)
			return (long)e;
	}
	return 0;
}

/* Check the name args[0..nlen) of a request with len argument bytes: 0, -ERANGE for an
 * empty name or one over ARF_XATTR_NAME_MAX (Linux's answer to both), -EINVAL for nlen past
 * the bytes or a NUL in the name. */
static __attribute__((noinline)) long xname(u64 nlen, u64 len)
{
	if (nlen == 0 || nlen > ARF_XATTR_NAME_MAX)
		return -E_RANGE;
	if (nlen > len || ar_findb(AR_ARGS, 0, nlen, 0) >= 0)
		return -E_INVAL;
	return 0;
}

/* Does the name args[0..nlen) start with "user."?  Linux allows user.* only on regular files
 * and directories (the other types' permission bits do not govern their contents). */
static __attribute__((noinline)) u64 xuser(u64 nlen)
{
	/* 0x72657375 is "user" as a little-endian u32 */
	return nlen >= 5 && ar_ld32u(AR_ARGS, 0) == 0x72657375 && ar_ld8u(AR_ARGS, 4) == '.';
}

/* Move the entries after e (of elen bytes) in block x down over it. */
static __attribute__((noinline)) void xcut(u64 x, u64 e, u64 elen)
{
	u64 used = ar_ld64(arf, x + ARF_A_USED);
	ar_copy(arf, arf, e, e + elen, x + used - (e + elen));
	ar_fill(arf, x + used - elen, elen, 0);
	ar_st64(arf, x + ARF_A_USED, used - elen);
	ar_st32(arf, x + ARF_A_N, ar_ld32u(arf, x + ARF_A_N) - 1);
}

/* Append the entry of elen bytes named args[0..nlen) with the value args[nlen..len) to
 * block x (the caller checked that it fits). */
static __attribute__((noinline)) void xput(u64 x, u64 nlen, u64 len, u64 elen)
{
	u64 used = ar_ld64(arf, x + ARF_A_USED);
	u64 p = x + used;
	ar_st8(arf, p + ARF_XE_NAMELEN, nlen);
	ar_st8(arf, p + ARF_XE_PAD, 0);
	ar_st16(arf, p + ARF_XE_VLEN, len - nlen);
	ar_copy(arf, AR_ARGS, p + ARF_XE_NAME, 0, len);
	ar_fill(arf, p + ARF_XE_NAME + len, elen - ARF_XE_NAME - len, 0);
	ar_st64(arf, x + ARF_A_USED, used + elen);
	ar_st32(arf, x + ARF_A_N, ar_ld32u(arf, x + ARF_A_N) + 1);
}

/* The mode argument of setxattr and removexattr: 0, or ARF_XATTR_SETMODE with new 0777 bits
 * for inode c, stored in the same logged change (a POSIX ACL and the mode it implies must
 * not part in a crash).  The caller logged the inode. */
static __attribute__((noinline)) void xmode(u64 c, u64 mode)
{
	if (mode & ARF_XATTR_SETMODE)
		ar_st32(arf, c + ARF_I_MODE, (ar_ld32u(arf, c + ARF_I_MODE) & ~(u64)0777) | (mode & 0777));
}

/* Lock the inode at offset c (not 0) for a read or change: claims a journal slot (the lock's
 * tag) and returns it, or -EAGAIN.  The slot comes back as the result rather than through a
 * pointer: a pointer to a local would give the segment a stack frame in memory (docs/cc.md),
 * which every run of every export pays for. */
static __attribute__((noinline)) long xlock(u64 c)
{
	u64 j = jclaim();
	if (j == 0)
		return -E_AGAIN;
	if (ilock(c, ar_ld64(arf, j + ARF_J_OWNER)) != 0) {
		jend(j);
		return -E_AGAIN;
	}
	return (long)j;
}

static __attribute__((noinline)) void xunlock(u64 j, u64 c)
{
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	jend(j);
	iunlock(c, tag);
}

/* setxattr(ino, nlen, flags, mode): args are the name (nlen bytes) then the value; mode as
 * xmode says.  flags 0, or
 * ARF_XATTR_CREATE (-EEXIST when the name exists) and/or ARF_XATTR_REPLACE (-ENODATA when
 * it does not).  -ENOSPC when the entries would not fit the block or no block is free, -EPERM
 * for user.* on a type other than a file or directory, -ENOENT for a free inode, the name's
 * errors (xname).  ctime becomes now. */
long setxattr(u64 ino, u64 nlen, u64 flags, u64 mode, u64 key)
{
	u64 len = (u64)ar_len(AR_ARGS);
	if (flags & ~(u64)(ARF_XATTR_CREATE | ARF_XATTR_REPLACE) ||
	    mode & ~(u64)(ARF_XATTR_SETMODE | 0777))
		return -E_INVAL;
	long rc = xname(nlen, len);
	if (rc != 0)
		return rc;
	u64 vlen = len - nlen;
	if (vlen > ARF_XATTR_VALUE_MAX)
		return -E_NOSPC;
	u64 elen = (ARF_XE_NAME + nlen + vlen + 3) & ~(u64)3;
	u64 c = ioff(ino);
	if (c == 0)
		return -E_INVAL;
	/* the name and the value: one hash of the bytes, nlen says where they part */
	u64 oh = 0;
	if (key != 0)
		oh = ohash(bhash(0, len), (u64)OP_SETXATTR << 32 | flags, ino, nlen, mode);
	long r0 = oget(key, oh);
	if (r0 != O_MISS)
		return r0;
	long lj = xlock(c);
	if (lj < 0)
		return lj;
	u64 j = (u64)lj;
	u64 type = ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT;
	long x = xblock(c);
	long e = 0;
	u64 newx = 0;
	if (type == 0) {
		rc = -E_NOENT;
		goto fail;
	}
	if (xuser(nlen) && type != ARF_S_IFREG && type != ARF_S_IFDIR) {
		rc = -E_PERM;
		goto fail;
	}
	if (x < 0) {
		rc = x;
		goto fail;
	}
	if (x != 0)
		e = xfind((u64)x, nlen);
	if (e < 0) {
		rc = e;
		goto fail;
	}
	/* both flags: always one of the two errors, as Linux's simple_xattr_set */
	if (e != 0 && (flags & ARF_XATTR_CREATE)) {
		rc = -E_EXIST;
		goto fail;
	}
	if (e == 0 && (flags & ARF_XATTR_REPLACE)) {
		rc = -E_NODATA;
		goto fail;
	}
	u64 used = x != 0 ? ar_ld64(arf, (u64)x + ARF_A_USED) : ARF_A_HDR;
	if (used - (e != 0 ? xelen((u64)e) : 0) + elen > ARF_BLOCK_SIZE) {
		rc = -E_NOSPC;
		goto fail;
	}
	if (x == 0) {
		/* filled before the logged change that links it; a crash before that leaves only
		 * a claimed bit, which attach's recount after a roll-back gives back */
		newx = balloc(1);
		if (newx == 0) {
			rc = -E_NOSPC;
			goto fail;
		}
		ar_fill(arf, newx, ARF_BLOCK_SIZE, 0);
		ar_st32(arf, newx + ARF_A_MAGIC, ARF_A_MAGIC_VALUE);
		ar_st64(arf, newx + ARF_A_USED, ARF_A_HDR);
	}
	/* ---- logged changes; nothing fails from here ---- */
	u64 tnow = (u64)ar_hcall0(now);
	jlog(j, c, ARF_INO_SIZE);
	if (newx != 0) {
		ar_st64(arf, c + ARF_I_XATTR, newx);
		x = (long)newx;
	} else {
		jlog(j, (u64)x, ARF_BLOCK_SIZE);
	}
	if (e != 0)
		xcut((u64)x, (u64)e, xelen((u64)e));
	xput((u64)x, nlen, len, elen);
	xmode(c, mode);
	ar_st64(arf, c + ARF_I_CTIME, tnow);
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	oend(j, oput(j, key, 0, 0, oh));
	iunlock(c, tag);
	return 0;
fail:
	xunlock(j, c);
	return rc;
}

/* getxattr(ino, size): args are the name.  The value's length; its bytes on the output when
 * size is not 0.  -ERANGE when the value is longer than size, -ENODATA for no such name,
 * -ENOENT for a free inode, -EIO for a damaged block, the name's errors (xname). */
long getxattr(u64 ino, u64 size)
{
	u64 nlen = (u64)ar_len(AR_ARGS);
	long rc = xname(nlen, nlen);
	if (rc != 0)
		return rc;
	u64 c = ioff(ino);
	if (c == 0)
		return -E_INVAL;
	long lj = xlock(c);
	if (lj < 0)
		return lj;
	u64 j = (u64)lj;
	long x = xblock(c);
	long e = 0;
	if ((ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT) == 0)
		rc = -E_NOENT;
	else if (x < 0)
		rc = x;
	else if (x != 0)
		e = xfind((u64)x, nlen);
	if (rc == 0 && e <= 0)
		rc = e < 0 ? e : -E_NODATA;
	if (rc == 0) {
		u64 vlen = ar_ld16u(arf, (u64)e + ARF_XE_VLEN);
		if (size != 0 && vlen > size)
			rc = -E_RANGE;
		else {
			if (size != 0)
				ar_output(arf, (u64)e + ARF_XE_NAME + nlen, vlen);
			rc = (long)vlen;
		}
	}
	xunlock(j, c);
	return rc;
}

/* listxattr(ino, size): the bytes of all names, each with a NUL after it; the names on the
 * output when size is not 0.  -ERANGE when they are longer than size, -ENOENT for a free
 * inode, -EIO for a damaged block. */
long listxattr(u64 ino, u64 size)
{
	u64 c = ioff(ino);
	if (c == 0)
		return -E_INVAL;
	long lj = xlock(c);
	if (lj < 0)
		return lj;
	u64 j = (u64)lj;
	long rc = 0;
	long x = xblock(c);
	if ((ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT) == 0)
		rc = -E_NOENT;
	else if (x < 0)
		rc = x;
	else if (x != 0) {
		/* two passes: the total first, so an ERANGE outputs nothing */
		u64 end = (u64)x + ar_ld64(arf, (u64)x + ARF_A_USED);
		u64 total = 0;
		for (u64 e = (u64)x + ARF_A_HDR; e < end; e += xelen(e)) {
			if (e + ARF_XE_NAME > end || ar_ld8u(arf, e + ARF_XE_NAMELEN) == 0 ||
			    e + xelen(e) > end) {
				rc = -E_IO;
				goto out;
			}
			total += ar_ld8u(arf, e + ARF_XE_NAMELEN) + 1;
		}
		rc = (long)total;
		if (size != 0 && total > size)
			rc = -E_RANGE;
		else if (size != 0) {
			for (u64 e = (u64)x + ARF_A_HDR; e < end; e += xelen(e)) {
				ar_output(arf, e + ARF_XE_NAME, ar_ld8u(arf, e + ARF_XE_NAMELEN));
				ar_outb(0);
			}
		}
	}
out:
	xunlock(j, c);
	return rc;
}

/* removexattr(ino, mode): args are the name; mode as xmode says.  0, -ENODATA for no such name, -EPERM for user.* on a
 * type other than a file or directory (as Linux), -ENOENT, -EIO, the name's errors.  The
 * last entry's removal gives the block back after the commit.  ctime becomes now. */
long removexattr(u64 ino, u64 mode, u64 key)
{
	u64 nlen = (u64)ar_len(AR_ARGS);
	if (mode & ~(u64)(ARF_XATTR_SETMODE | 0777))
		return -E_INVAL;
	long rc = xname(nlen, nlen);
	if (rc != 0)
		return rc;
	u64 c = ioff(ino);
	if (c == 0)
		return -E_INVAL;
	u64 oh = ohash(bhash(0, nlen), (u64)OP_REMOVEXATTR << 32, ino, mode, 0);
	long r0 = oget(key, oh);
	if (r0 != O_MISS)
		return r0;
	long lj = xlock(c);
	if (lj < 0)
		return lj;
	u64 j = (u64)lj;
	u64 type = ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT;
	long x = xblock(c);
	long e = 0;
	if (type == 0)
		rc = -E_NOENT;
	else if (xuser(nlen) && type != ARF_S_IFREG && type != ARF_S_IFDIR)
		rc = -E_PERM;
	else if (x < 0)
		rc = x;
	else if (x != 0)
		e = xfind((u64)x, nlen);
	if (rc == 0 && e <= 0)
		rc = e < 0 ? e : -E_NODATA;
	if (rc != 0) {
		xunlock(j, c);
		return rc;
	}
	/* ---- logged changes ---- */
	u64 tnow = (u64)ar_hcall0(now);
	u64 elen = xelen((u64)e);
	u64 last = ar_ld64(arf, (u64)x + ARF_A_USED) - elen == ARF_A_HDR;
	jlog(j, c, ARF_INO_SIZE);
	if (last) {
		ar_st64(arf, c + ARF_I_XATTR, 0);
	} else {
		jlog(j, (u64)x, ARF_BLOCK_SIZE);
		xcut((u64)x, (u64)e, elen);
	}
	xmode(c, mode);
	ar_st64(arf, c + ARF_I_CTIME, tnow);
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	oend(j, oput(j, key, 0, 0, oh));
	iunlock(c, tag);
	if (last)
		bput((u64)x, 1);
	return 0;
}
