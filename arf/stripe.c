/* stripe.c: a data server's side of delegation (docs/cluster.md, "Delegation"): data.c's
 * operations and objread, which finds an object by its name and reads it in one run, so a
 * request the metadata server forwarded (deleg.c's route) is answered without a lookup
 * round trip first; and objinos, which finds many objects in one run (arf grep -r on a
 * cluster: a batch of small files' objects, then one grep_batch over them).  data.c is included whole (pncc sees one translation unit); dfind and
 * nhash are copies of ops.c's functions of the same name (segments are self-contained; the
 * functions data.c and ops.c share are arf/seg_common.h's): a fix there must be made here too.
 */
#include "data.c"

enum { E_NOTDIR = 20, E_NAMETOOLONG = 36 };

#define ROOT_INO 1

/* FNV-1a 64 of args[off .. off+len): the directory hash (layout.h arf_name_hash). */
static u64 nhash(u64 off, u64 len)
{
	u64 h = ARF_FNV_OFFSET;
	for (u64 i = 0; i < len; i++)
		h = (h ^ ar_ld8u(AR_ARGS, off + i)) * ARF_FNV_PRIME;
	return h;
}

/* Slot of the live entry named args[noff .. +nlen) (hash h) in directory d, or 0 (ops.c). */
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
			return 0;
		if (rec != ARF_T_TOMB && ar_ld64(arf, s + ARF_T_HASH) == h &&
		    ar_ld8u(arf, rec + ARF_R_NAMELEN) == nlen &&
		    ar_cmp(arf, AR_ARGS, rec + ARF_R_NAME, noff, nlen) == 0)
			return s;
		i = (i + 1) & mask;
	}
	return 0;
}

/* The inode the relative path args[base .. base+plen) names from the root
 * ("stripes/INO.GEN"), or -errno: no "." or "..", no symlinks (an object's path has none). */
static long objfind(u64 base, u64 plen)
{
	if (plen == 0 || plen > 255)
		return -E_NAMETOOLONG;
	u64 cur = ROOT_INO, p = base, end = base + plen;
	while (p < end) {
		u64 d = ioff(cur);
		if (d == 0)
			return -E_IO;
		if ((ar_ld32u(arf, d + ARF_I_MODE) & ARF_S_IFMT) != ARF_S_IFDIR)
			return -E_NOTDIR;
		long f = ar_findb(AR_ARGS, p, end - p, '/');
		u64 e = f == -1 ? end : (u64)f;
		u64 n = e - p;
		if (n == 0 || n > ARF_NAME_MAX)
			return -E_NOENT;
		u64 s = dfind(d, nhash(p, n), p, n);
		if (s == 0)
			return -E_NOENT;
		u64 rec = ar_ld64(arf, s + ARF_T_REC);
		if (rec <= ARF_T_TOMB)
			return -E_NOENT;
		cur = ar_ld64(arf, rec + ARF_R_INO);
		if (cur == 0)
			return -E_NOENT;
		p = e + 1;
	}
	return (long)cur;
}

/* objread(off, len): len bytes of the object named in args from off: what it holds, then
 * zeros (a hole, a short object, no object at all: the file's bytes there were never
 * written) -> len.  -errno when the name is not an object's (not a regular file). */
long objread(u64 off, u64 len)
{
	if (len > READ_MAX)
		return -E_INVAL;
	long ino = objfind(0, (u64)ar_len(AR_ARGS));
	if (ino == -E_NOENT) {
		zeros(len);
		return (long)len;
	}
	if (ino < 0)
		return ino;
	long got = read((u64)ino, off, len, 0);
	if (got < 0)
		return got;
	if ((u64)got < len)
		zeros(len - (u64)got);
	return (long)len;
}

/* objinos(n): the inodes of the n objects named in args, each path ("stripes/INO.GEN", as
 * objread's) followed by a NUL, the args holding exactly those n names: n, with n pairs of
 * u64s on the output, each the object's inode and size, or -errno and 0 (ENOENT: no object;
 * EINVAL: not a regular file; ENAMETOOLONG, ENOTDIR as objread).  The size lets the caller
 * see that a scan of the whole object is a scan of the whole file.  -EINVAL for n above
 * OBJINOS_MAX or names that do not fill the args exactly (a name without its NUL, bytes
 * left over). */
#define OBJINOS_MAX 4096
long objinos(u64 n)
{
	u64 len = (u64)ar_len(AR_ARGS), off = 0;
	if (n > OBJINOS_MAX)
		return -E_INVAL;
	for (u64 i = 0; i < n; i++) {      /* the names first: a malformed list answers nothing */
		long z = ar_findb(AR_ARGS, off, len - off, 0);
		if (z == -1)
			return -E_INVAL;
		off = (u64)z + 1;
	}
	if (off != len)
		return -E_INVAL;
	off = 0;
	for (u64 i = 0; i < n; i++) {
		u64 z = (u64)ar_findb(AR_ARGS, off, len - off, 0);
		long ino = objfind(off, z - off);
		u64 size = 0;
		if (ino > 0) {
			u64 d = ioff((u64)ino);
			if (d == 0 || (ar_ld32u(arf, d + ARF_I_MODE) & ARF_S_IFMT) != ARF_S_IFREG)
				ino = -E_INVAL;
			else
				size = ar_ld64(arf, d + ARF_I_SIZE);
		}
		ar_outq((u64)ino);
		ar_outq(size);
		off = z + 1;
	}
	return (long)n;
}
