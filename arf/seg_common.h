/* seg_common.h: the inode table, the journal, inode locks and bitmap claims of ARF's
 * segments (docs/arf.md, "Crash consistency"): ioff, jclaim, jlog, jend, ilockn, ilock,
 * iunlock, low_bits, bclaim, bfree, balloc, bput, and getattr's answer (do_getattr).  Included by arf/ops.c and arf/data.c (and
 * stripe.c through it), AFTER what it uses: the region arf, u64, SB and E_AGAIN.  Its
 * functions are static: each segment gets its own copy, as segments are self-contained, but
 * the source is one (they were two copies, "a fix in one must be made in the other").
 * pncc's line table names the including file's lines only, so a trap in these functions
 * (jlog's) has no line (docs/cc.md, "Lines"). */
#ifndef ARF_SEG_COMMON_H
#define ARF_SEG_COMMON_H

/* Byte offset of inode ino, or 0 when ino is not an inode number of this image (0 is "no
 * inode"; the table has n_inodes entries). */
static u64 ioff(u64 ino)
{
	if (ino == 0 || ino >= SB(N_INODES))
		return 0;
	return SB(ITABLE_OFF) + (ino << ARF_INO_SHIFT);
}

/* Claim a free journal slot with cas (owner = epoch << 32 | slot + 1): its offset, or 0 when
 * all are busy (the caller answers EAGAIN). */
static u64 jclaim(void)
{
	for (u64 k = 0; k < ARF_J_SLOTS; k++) {
		u64 j = SB(JOURNAL_OFF) + k * ARF_J_SLOT_SIZE;
		u64 tag = SB(EPOCH) << 32 | (k + 1);
		if (ar_cas(arf, j + ARF_J_OWNER, 0, tag) == 0)
			return j;
	}
	return 0;
}

/* Append an undo record for arf[off .. off+len) to slot j, then commit it by storing
 * n_undo + 1: only after that store does the roll-back see (and apply) the record, and only
 * after this returns may the caller change those bytes.  Never inlined (nor jend): each
 * record is a call, which spends fuel, so the crash tests that stop runs by fuel
 * (test_arf_data, "crash") reach the points between records. */
static __attribute__((noinline)) void jlog(u64 j, u64 off, u64 len)
{
	u64 used = ar_ld64(arf, j + ARF_J_USED);
	u64 pad = (len + 7) & ~7ul;
	/* operations log a few inodes and headers, far below a slot: more is a bug */
	if (ARF_J_HDR + used + ARF_U_DATA + pad > ARF_J_SLOT_SIZE)
		ar_trap(3);
	u64 rec = j + ARF_J_HDR + used;
	ar_st64(arf, rec + ARF_U_OFF, off);
	ar_st64(arf, rec + ARF_U_LEN, len);
	ar_copy(arf, arf, rec + ARF_U_DATA, off, len);
	ar_st64(arf, j + ARF_J_USED, used + ARF_U_DATA + pad);
	ar_st64(arf, j + ARF_J_N_UNDO, ar_ld64(arf, j + ARF_J_N_UNDO) + 1);  /* the commit point */
}

/* The operation is complete: n_undo = 0 first (nothing to roll back any more), then free the
 * slot. */
static __attribute__((noinline)) void jend(u64 j)
{
	ar_st64(arf, j + ARF_J_N_UNDO, 0);
	ar_st64(arf, j + ARF_J_USED, 0);
	ar_st64(arf, j + ARF_J_OWNER, 0);
}

/* Lock inode at offset i for tag, trying max times: cas 0 -> tag.  A word holding a tag of an
 * older epoch belongs to a server that died (attach bumped the epoch) and is taken over.
 * -EAGAIN after max tries (the holder may be a run that trapped mid-operation, which only the
 * next attach's roll-back ends). */
static long ilockn(u64 i, u64 tag, u64 max)
{
	for (u64 n = 0; n < max; n++) {
		u64 old = ar_cas(arf, i + ARF_I_LOCK, 0, tag);
		if (old == 0)
			return 0;
		if (old >> 32 != SB(EPOCH) && ar_cas(arf, i + ARF_I_LOCK, old, tag) == old)
			return 0;
	}
	return -E_AGAIN;
}

static long ilock(u64 i, u64 tag)
{
	return ilockn(i, tag, 200000);
}

static void iunlock(u64 i, u64 tag)
{
	(void)ar_cas(arf, i + ARF_I_LOCK, tag, 0);
}

/* A mask of n (1..64) bits from bit 0. */
static u64 low_bits(u64 n)
{
	return n == 64 ? ~0ul : (1ul << n) - 1;
}

/* Claim n clear bits in a row (1..64 inside one word, or a multiple of 64 as whole words) of
 * the bitmap at map (nwords u64 words), searching from the word the hint at hintoff names
 * and wrapping.  Each word changes by cas only (other operations claim in the same words at
 * the same time); a lost race re-reads the word.  Returns the first bit, or -1.  Counters are
 * the caller's (fadd right after). */
static long bclaim(u64 map, u64 nwords, u64 hintoff, u64 n)
{
	u64 w = ar_ld64(arf, hintoff);
	if (w >= nwords)
		w = 0;                  /* the hint is advisory: any value inside the map is fine */
	u64 cnt = n >> 6;
	u64 k = 0;
	while (k < nwords) {
		u64 wo = map + (w << 3);
		u64 word = ar_ld64(arf, wo);
		if (n > 64) {
			/* cnt whole clear words from w, each claimed 0 -> ~0 */
			if (w + cnt > nwords) {
				w = 0;
				k++;
				continue;
			}
			u64 j = 0;
			while (j < cnt && ar_cas(arf, map + ((w + j) << 3), 0, ~0ul) == 0)
				j++;
			if (j == cnt) {
				ar_st64(arf, hintoff, w);
				return (long)(w << 6);
			}
			/* give back the j words already taken (only we own them) */
			while (j > 0) {
				j--;
				ar_st64(arf, map + ((w + j) << 3), 0);
			}
		} else if (word != ~0ul) {          /* a full word: 64 bits in use at once */
			/* m keeps bit p iff bits p .. p+n-1 are all clear */
			u64 free = ~word, m = free;
			for (u64 j = 1; j < n; j++)
				m &= free >> j;
			if (m) {
				u64 p = (u64)ar_ctz(m);
				u64 mask = low_bits(n) << p;
				if (ar_cas(arf, wo, word, word | mask) != word)
					continue;   /* lost a race on this word: look at it again */
				ar_st64(arf, hintoff, w);
				return (long)((w << 6) + p);
			}
		}
		if (++w >= nwords)
			w = 0;
		k++;
	}
	return -1;
}

/* Clear bits first .. first+n-1 of the bitmap at map, a word at a time with cas. */
static void bfree(u64 map, u64 first, u64 n)
{
	while (n) {
		u64 w = first >> 6, b = first & 63;
		u64 k = 64 - b;
		if (k > n)
			k = n;
		u64 mask = low_bits(k) << b;
		u64 wo = map + (w << 3), word;
		do
			word = ar_ld64(arf, wo);
		while (ar_cas(arf, wo, word, word & ~mask) != word);
		first += k;
		n -= k;
	}
}

/* Claim n blocks in a row (see bclaim): the byte offset of the first, or 0 (ENOSPC). */
static u64 balloc(u64 n)
{
	long b = bclaim(SB(BBMAP_OFF), SB(BBMAP_LEN) >> 3, ARF_SB_BALLOC_HINT, n);
	if (b < 0)
		return 0;
	(void)ar_fadd(arf, ARF_SB_FREE_BLOCKS, 0 - n);
	return (u64)b << ARF_BLOCK_SHIFT;
}

/* Give back n blocks from byte offset off. */
static void bput(u64 off, u64 n)
{
	if (n == 0)
		return;
	bfree(SB(BBMAP_OFF), off >> ARF_BLOCK_SHIFT, n);
	(void)ar_fadd(arf, ARF_SB_FREE_BLOCKS, n);
}

/* ---------------------------------------------------------------- getattr */

/* do_getattr(ino), the export getattr (ops.c) and the answer of data.c's setattrattr:
 * outputs ATTR_WORDS little-endian u64: mode, nlink, uid, gid, size, nblocks
 * (4 KiB blocks), atime, mtime, ctime, btime (ns since the epoch), gen, parent, rdev, then
 * the layout record's 16 bytes (u32 unit, count, first, reserved: a cluster file's own,
 * ARF_IF_STRIPED; zeros when it has none), so that opening a file costs no request for its
 * layout.  The mode word's bit ARF_GA_NOXATTR_BIT says the inode has no xattr block, so
 * that a mount can answer `ls -l`'s getxattr calls (ACLs, security.selinux) without a
 * request each (docs/arf.md, "Mounting"); an older segment leaves it 0 (ask).  Returns ino, or -EINVAL (no such number) / -ENOENT (free inode).  The fields are
 * read without the lock: a getattr racing a change of the same inode may mix old and new
 * fields. */
enum { ATTR_WORDS = 15 };
static __attribute__((noinline, unused)) long do_getattr(u64 ino)
{
	u64 c = ioff(ino);
	if (c == 0)
		return -E_INVAL;
	u64 mode = ar_ld32u(arf, c + ARF_I_MODE);
	if (mode == 0)
		return -E_NOENT;
	u64 noxattr = ar_ld64(arf, c + ARF_I_XATTR) == 0;
	ar_outq(mode | noxattr << ARF_GA_NOXATTR_BIT);
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
	if (ar_ld32u(arf, c + ARF_I_FLAGS) & ARF_IF_STRIPED) {
		ar_output(arf, c + ARF_I_BODY, ARF_L_SIZE);
	} else {
		ar_outq(0);
		ar_outq(0);
	}
	return (long)ino;
}

#endif
