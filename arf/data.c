/* data.c: ARF file data operations (docs/arf.md, "File data"), run inside arfd against region
 * "arf" (the mapped image).  A segment written in C: clang's BPF back end, then pncc
 * (docs/cc.md); the Makefile installs it as build/arfseg/data.pno.  It replaced the hand-written
 * assembly arf/data.pna (issue 16: checked against it operation by operation, image bytes
 * included, until it was removed; docs/arf.md, "The data segment in C").
 *
 * Exports (integer arguments; written bytes are the whole "args" region):
 *   write(ino, off, gen)                     args -> bytes written (may be short: call again)
 *   append(ino, gen, key)                    args at the end of file -> bytes written; output
 *                                            where they went and the end the file keeps;
 *                                            key: exactly once across a restart (0: none)
 *   writeafter(ino, off, gen, after)         write, once the size has reached after
 *   extend(ino, len, gen, key)               a cluster file's append: the size raised by len
 *                                            -> len; output where the range starts and ends
 *   space()                                  -> 0; output the image's blocks and free blocks
 *   read(ino, off, len, gen)                 the bytes on the output -> how many (0 at EOF)
 *   truncate(ino, size, gen)                 -> 0
 *   punch(ino, off, len, gen)                fallocate's PUNCH_HOLE -> bytes covered (may be
 *                                            short: call again for the rest)
 *   setattr(ino, valid, mode, uid, gid, atime, mtime)   -> 0
 *   setattrattr(the same)                    setattr, then ino's getattr on the output
 *   fsync(ino, gen)                          -> 0 once its blocks and inode are durable
 *   edges(ino, gen, n, lim)                  arf grep's: n pieces' first and last partial
 *                                            lines (args: u64 off, len each) -> n
 * gen: the inode's generation when the caller opened it, or 0 for any: a file deleted and its
 * inode number reused since (by another client) is ESTALE, not someone else's file.  Every
 * result is >= 0 or a negative Linux errno.  Nothing from the client or the image is trusted:
 * inode numbers, extents and extent blocks are range-checked before data moves through them
 * (a bad one is EIO, never a store into metadata).
 *
 * Crash discipline as in ops.c: journal slot, lock the inode, allocate everything the change
 * needs BEFORE the first logged change (ENOSPC leaves the tree untouched), log the old bytes
 * of the inode and of any extent block right before changing them, commit (free the slot),
 * free released blocks, unlock.  File DATA is not journalled (as ext4's ordered mode): a crash
 * may leave new bytes in blocks the file already owned, but never a block owned twice or a
 * size covering unwritten garbage: new blocks are filled (data, zeroed head and tail) before
 * the logged extent change that links them.
 *
 * pncc's rules shape the code: every value lives in a local (no arrays, no addresses of
 * locals), memory is reached only with ar_ld* / ar_st* on the region, and a function takes at
 * most 5 registers (setattr's last two arguments come through ar_arg, einsert gets the spare
 * block packed beside the insertion index).  All arithmetic is on u64, wrapping as the
 * bytecode's does; a negative result is an errno.
 */
#include <activerdma/ar.h>

#include "layout.h"

#define REGIONS(X) X(arf, rw)
AR_IMPORT_REGIONS(REGIONS);
#define HOOKS(X) X(now, ":l") X(sync, "lll:l") X(pause, "l:l") X(writeback, "lll:l")
AR_IMPORT_HOOKS(HOOKS);
/* setattr and setattrattr take 7 arguments: the 6th and 7th are read with ar_arg */
AR_EXPORT_ARGS(setattr, 7);

typedef unsigned long u64;

/* errno values (Linux) */
enum {
	E_NOENT = 2, E_IO = 5, E_NXIO = 6, E_AGAIN = 11, E_ISDIR = 21, E_INVAL = 22, E_FBIG = 27,
	E_NOSPC = 28, E_OPNOTSUPP = 95, E_STALE = 116,
};

/* largest file: 2^32 blocks of 4096 bytes (16 TiB) */
#define MAX_BYTES ((u64)ARF_MAX_FILE_BLOCKS << ARF_BLOCK_SHIFT)
#define BLOCK_MASK ((u64)ARF_BLOCK_SIZE - 1)
#define READ_MAX (64ul << 20)          /* longest read in one run */
#define ALLOC_RUN_BLOCKS 8192ul        /* most blocks allocate zeroes in one run (32 MiB) */

#define SB(field) ar_ld64(arf, ARF_SB_##field)

/* ---------------------------------------------------------------- shared with ops.c
 * ioff, the journal, inode locks and the bitmap claims: arf/seg_common.h */
#include "seg_common.h"

/* The inode lock for write.  A client keeps several writes of one file in flight (arf_data.h,
 * write-behind), so the next one usually arrives while the one before still copies its
 * bytes: giving up would make the client send the whole run again, and spinning all that time
 * would take a CPU from the run it waits for.  So after a short spin (2000 tries) it sleeps
 * 50 us between tries (arfd's pause hook), for up to 4000 more (about a quarter of a second),
 * then gives up with -EAGAIN as ilock does. */
static long ilockw(u64 i, u64 tag)
{
	long rc = ilockn(i, tag, 2000);
	if (rc == 0)
		return 0;
	for (u64 n = 0; n < 4000; n++) {
		(void)ar_hcall1(pause, 50);
		if (ilockn(i, tag, 1) == 0)
			return 0;
	}
	return rc;
}

/* Offset of regular file ino, or -EINVAL (no such number, or not a regular file), -ENOENT
 * (free), -EISDIR. */
static long fileoff(u64 ino)
{
	u64 c = ioff(ino);
	if (!c)
		return -E_INVAL;
	u64 m = ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT;
	if (!m)
		return -E_NOENT;
	if (m == ARF_S_IFREG)
		return (long)c;
	return m == ARF_S_IFDIR ? -E_ISDIR : -E_INVAL;
}

/* The lock is held: the inode may have been freed (or made again as another type) while we
 * waited, or freed and made again as another file since the caller opened it.  0, -ENOENT or
 * -ESTALE. */
static long still_ours(u64 c, u64 gen)
{
	if ((ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT) != ARF_S_IFREG)
		return -E_NOENT;
	if (gen && ar_ld64(arf, c + ARF_I_GEN) != gen)
		return -E_STALE;
	return 0;
}

/* 1 when x may be an extent (or directory) block: block-aligned, inside the data area.
 * Chains come from the image; a bad link must end in EIO, not in loads and stores anywhere. */
static int xok(u64 x)
{
	return (x & BLOCK_MASK) == 0 && x >= SB(DATA_OFF) &&
	       x < SB(N_BLOCKS) << ARF_BLOCK_SHIFT;
}

/* 1 when extent e maps data blocks: len >= 1 and pblk .. pblk+len-1 inside the data area.
 * Checked before any copy through it, so a damaged extent cannot aim a write at metadata. */
static int eok(u64 e)
{
	u64 n = ar_ld32u(arf, e + ARF_E_LEN);
	if (n == 0)
		return 0;
	u64 p = ar_ld64(arf, e + ARF_E_PBLK);
	u64 nb = SB(N_BLOCKS);
	/* the last test catches p + n wrapping around */
	return p >= SB(DATA_OFF) >> ARF_BLOCK_SHIFT && p + n <= nb && p < nb;
}

static u64 e_lblk(u64 e) { return ar_ld32u(arf, e + ARF_E_LBLK); }
static u64 e_len(u64 e)  { return ar_ld32u(arf, e + ARF_E_LEN); }
static u64 e_pblk(u64 e) { return ar_ld64(arf, e + ARF_E_PBLK); }

/* Address of extent k (0 <= k < n_extents) of the file inode at c: the 9 inline ones in the
 * body, then the extent-block chain (each block holds its own count).  0 when the chain is
 * damaged (a bad link, an empty or overfull block, or shorter than n_extents): the caller
 * answers EIO.  A loop in the chain ends by fuel. */
static u64 eat(u64 c, u64 k)
{
	if (k < ARF_I_INLINE_EXT)
		return c + ARF_I_BODY + k * ARF_E_SIZE;
	k -= ARF_I_INLINE_EXT;
	for (u64 x = ar_ld64(arf, c + ARF_I_XBLK);; x = ar_ld64(arf, x + ARF_X_NEXT)) {
		if (!xok(x))
			return 0;
		u64 n = ar_ld32u(arf, x + ARF_X_N);
		if (n == 0 || n > ARF_X_MAX)
			return 0;
		if (k < n)
			return x + ARF_X_EXT + k * ARF_E_SIZE;
		k -= n;
	}
}

/* Index of the first extent of file c that ends after logical block lb (the one holding lb,
 * or the next one after the hole lb is in), n_extents when there is none, -1 when the extent
 * list is damaged. */
static long esearch(u64 c, u64 lb)
{
	u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
	u64 k = 0;
	for (; k < n && k < ARF_I_INLINE_EXT; k++) {
		u64 e = c + ARF_I_BODY + k * ARF_E_SIZE;
		if (e_lblk(e) + e_len(e) > lb)
			return (long)k;
	}
	/* the extent blocks, walked once (eat per index walked the chain from its start for
	 * every extent: quadratic in a fragmented file's extents, which ran a batch of grep's
	 * edges out of fuel); a block whose last extent ends at or before lb is passed whole
	 * (extents are in order: fsck checks it).  Each turn moves k on, so a loop in the chain
	 * ends too. */
	for (u64 x = ar_ld64(arf, c + ARF_I_XBLK); k < n; x = ar_ld64(arf, x + ARF_X_NEXT)) {
		if (!xok(x))
			return -1;
		u64 m = ar_ld32u(arf, x + ARF_X_N);
		if (m == 0 || m > ARF_X_MAX)
			return -1;
		u64 last = x + ARF_X_EXT + (m - 1) * ARF_E_SIZE;
		if (m <= n - k && e_lblk(last) + e_len(last) <= lb) {
			k += m;
			continue;
		}
		for (u64 j = 0; j < m && k < n; j++, k++) {
			u64 e = x + ARF_X_EXT + j * ARF_E_SIZE;
			if (e_lblk(e) + e_len(e) > lb)
				return (long)k;
		}
	}
	return (long)n;
}

/* Claim blocks b, b+1, ... exactly (each while its bit is clear, below n_blocks), at most
 * want of them: how many were claimed (0 .. want), counted off free_blocks.  This is how a
 * file grows in place: the blocks right after its last extent extend that extent. */
static u64 bgrab(u64 b, u64 want)
{
	u64 map = SB(BBMAP_OFF), nb = SB(N_BLOCKS);
	u64 k = 0;
	for (; k < want && b + k < nb; k++) {
		u64 w = map + ((b + k) >> 6 << 3);
		u64 m = 1ul << ((b + k) & 63);
		u64 word;
		do {
			word = ar_ld64(arf, w);
			if (word & m)
				goto done;      /* taken: the run ends here */
		} while (ar_cas(arf, w, word, word | m) != word);  /* a neighbour bit changed */
	}
done:
	if (k)
		(void)ar_fadd(arf, ARF_SB_FREE_BLOCKS, 0 - k);
	return k;
}

/* Store extent (w0 = lblk | len << 32, w1 = pblk) at address e. */
static void eput(u64 e, u64 w0, u64 w1)
{
	ar_st64(arf, e, w0);
	ar_st64(arf, e + 8, w1);
}

/* A fresh extent block at y (a block the caller allocated, linked by nobody yet, so no undo
 * record): zeroed, magic, n extents, next. */
static void xinit(u64 y, u64 n, u64 next)
{
	ar_fill(arf, y, ARF_BLOCK_SIZE, 0);
	ar_st32(arf, y + ARF_X_MAGIC, ARF_X_MAGIC_VALUE);
	ar_st32(arf, y + ARF_X_N, n);
	ar_st64(arf, y + ARF_X_NEXT, next);
}

/* einsert's spare block travels beside the insertion index (pncc passes 5 registers): both
 * are below 2^32 (an extent index is a u32, a block number is below n_blocks <= 2^32). */
#define PY(p, y) ((p) | ((y) >> ARF_BLOCK_SHIFT) << 32)

/* Insert extent (w0, w1) at index p of file c (the inode already logged by the caller, its
 * lock held; py = PY(p, y)): extents after p move up by one.  Inline ones shift in the body;
 * when the 9 inline slots are full the ninth moves to the front of the chain.  In the chain
 * only one block changes (logged whole): it takes the extent if it has room, else it is split
 * with the spare block y (extents from the insertion point move to y, linked right after
 * it).  Returns 1 when y was used (the caller counts it in nblocks), else 0. */
static u64 einsert(u64 c, u64 j, u64 py, u64 w0, u64 w1)
{
	u64 p = py & 0xffffffff, y = py >> 32 << ARF_BLOCK_SHIFT;
	u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
	ar_st32(arf, c + ARF_I_NEXTENTS, n + 1);
	u64 b = c + ARF_I_BODY, q;
	if (p < ARF_I_INLINE_EXT) {
		u64 s = b + p * ARF_E_SIZE;
		if (n < ARF_I_INLINE_EXT) {
			ar_copy(arf, arf, s + ARF_E_SIZE, s, (n - p) * ARF_E_SIZE);
			eput(s, w0, w1);
			return 0;
		}
		/* carry the last inline extent into the chain at position 0 */
		u64 last = b + (ARF_I_INLINE_EXT - 1) * ARF_E_SIZE;
		u64 c0 = ar_ld64(arf, last), c1 = ar_ld64(arf, last + 8);
		ar_copy(arf, arf, s + ARF_E_SIZE, s, (ARF_I_INLINE_EXT - 1 - p) * ARF_E_SIZE);
		eput(s, w0, w1);
		w0 = c0;
		w1 = c1;
		q = 0;
	} else {
		q = p - ARF_I_INLINE_EXT;
	}
	u64 x = ar_ld64(arf, c + ARF_I_XBLK);
	if (!x) {
		/* no chain yet: y becomes it (the inode is logged, so the link is undone on a crash) */
		xinit(y, 1, 0);
		eput(y + ARF_X_EXT, w0, w1);
		ar_st64(arf, c + ARF_I_XBLK, y);
		return 1;
	}
	/* the block holding chain position q (or q = its end) */
	u64 nx;
	for (;;) {
		if (!xok(x))
			goto bad;
		nx = ar_ld32u(arf, x + ARF_X_N);
		if (nx >= q)
			break;
		q -= nx;
		x = ar_ld64(arf, x + ARF_X_NEXT);
	}
	if (nx > ARF_X_MAX)
		goto bad;
	jlog(j, x, ARF_BLOCK_SIZE);
	u64 s = x + ARF_X_EXT + q * ARF_E_SIZE;
	if (nx < ARF_X_MAX) {
		ar_copy(arf, arf, s + ARF_E_SIZE, s, (nx - q) * ARF_E_SIZE);
		eput(s, w0, w1);
		ar_st32(arf, x + ARF_X_N, nx + 1);
		return 0;
	}
	if (q == ARF_X_MAX) {
		/* at the very end of a full block: y holds just the new extent */
		xinit(y, 1, ar_ld64(arf, x + ARF_X_NEXT));
		eput(y + ARF_X_EXT, w0, w1);
	} else {
		/* y takes x's extents q .. 254, x keeps 0 .. q-1 and the new one */
		xinit(y, ARF_X_MAX - q, ar_ld64(arf, x + ARF_X_NEXT));
		ar_copy(arf, arf, y + ARF_X_EXT, s, (ARF_X_MAX - q) * ARF_E_SIZE);
		eput(s, w0, w1);
		ar_st32(arf, x + ARF_X_N, q + 1);
	}
	ar_st64(arf, x + ARF_X_NEXT, y);
	return 1;
bad:
	/* the chain was walked by esearch just before, under the lock: cannot happen */
	ar_trap(5);
	return 0;
}

/* ---------------------------------------------------------------- write */

/* Start writing image bytes o..o+n to disk without waiting (arfd's writeback hook): a run's
 * copied data is on its way while the next runs arrive, so an fsync after a bulk write finds
 * little left to write (docs/arf.md, Durability).  Advisory: its result is dropped. */
static void wbstart(u64 o, u64 n)
{
	(void)ar_hcall3(writeback, arf, o, n);
}

/* A run's copied bytes are gathered into one range o..o+n for wbstart.  A piece copied to p:
 * 0 when it continues the range (the caller adds it), else 1 after starting writeback of the
 * range so far (the caller begins a new one at p). */
static int wbcut(u64 o, u64 n, u64 p)
{
	if (n == 0)
		return 1;
	if (o + n == p)
		return 0;
	wbstart(o, n);
	return 1;
}

/* ---------------------------------------------------------------- keyed appends
 * An append is not idempotent: one whose commit happened but whose reply was lost (arfd
 * killed) would, sent again to the restarted arfd, put its bytes at the end a second time.
 * So append takes a key as ops.c's tree-changing exports do (docs/arf.md, "Exactly once
 * across a restart"; the table and its functions are arf/once.h's) and records its answer in
 * the same table inside its own transaction: result = the bytes written, gen = ARF_O_APPEND
 * | the offset they went to | ARF_O_RESERVE when the run kept the request's whole range
 * (then its end, the second output, is that offset + the request's length). */
#include "once.h"

#define APPEND_HASHED 64ul     /* bytes at each end of an append its op hash covers */
#define EXTEND_TAG 0x657874656e64ul  /* "extend": its op hash's stand-in for the bytes */

/* The op hash of append(ino, gen) of the args bytes: the operation, ino, gen, the length and
 * a hash (FNV-1a 64) of the first and last APPEND_HASHED bytes.  Not of every byte: an
 * append carries up to 4 MiB, and a loop over all of it in bytecode would cost more than the
 * append's own copy; a key used twice with the same length and the same ends, only the
 * middle differing, is the one such reuse answered from the record. */
static __attribute__((noinline)) u64 ahash(u64 ino, u64 gen, u64 len)
{
	u64 n = len < APPEND_HASHED ? len : APPEND_HASHED;
	u64 h = ARF_FNV_OFFSET;
	for (u64 i = 0; i < n; i++)
		h = (h ^ ar_ld8u(AR_ARGS, i)) * ARF_FNV_PRIME;
	for (u64 i = len - n; i < len; i++)
		h = (h ^ ar_ld8u(AR_ARGS, i)) * ARF_FNV_PRIME;
	return ohash(h, (u64)OP_APPEND << 32, ino, gen, len);
}

/* A repeat of a keyed append of len bytes (op hash oh) that was done: its two outputs queued
 * as the first run queued them and the bytes it wrote answered; or O_MISS (no record, or one
 * that is not an append's: a key used twice whose op hashes collide). */
static __attribute__((noinline)) long arepeat(u64 key, u64 oh, u64 len)
{
	long r = oget(key, oh);
	if (r == O_MISS)
		return O_MISS;
	u64 g = ogen(key, r, oh);
	if (!(g & ARF_O_APPEND))
		return O_MISS;
	u64 off = g & (MAX_BYTES - 1);
	ar_outq(off);
	ar_outq(g & ARF_O_RESERVE ? off + len : 0);
	return r;
}

/* put(ino, off, gen, app, zlen): write's body; app 1: append (off is the size, found under
 * the lock; zlen its key, recorded with its answer: see "keyed appends"); app 2: allocate
 * (fallocate's mode 0): zlen bytes from off, no bytes to copy: mapped blocks are left as they
 * are and a hole's new blocks are zeroed.
 * Mapped blocks are overwritten in place; a hole in the range gets blocks: first the ones
 * right after the previous extent (that extent grows), else a new run anywhere (a new extent,
 * plus a spare extent block when the inline slots are full, in case the chain must grow or
 * split).  A run fills at most ONE hole (one allocation keeps the undo records of a run small
 * and bounded: the inode and at most one extent block) and then stops with a short count; the
 * client calls again for the rest.  A write past the end grows the size; blocks it skips stay
 * holes.  ENOSPC when not even the first byte could be placed (nothing changed); after some
 * bytes, the short count.  EFBIG past 16 TiB. */
static long put(u64 ino, u64 off, u64 gen, u64 app, u64 zlen)
{
	u64 alloc = app == 2;
	u64 keep = alloc && zlen >> 63;         /* allocate with KEEP_SIZE: the size stays */
	u64 len = alloc ? zlen & ~(1ul << 63) : (u64)ar_len(AR_ARGS);
	/* a keyed append: answered from its record when it was done (before anything reads the
	 * tree); a count of 2^32 or more (no client sends one) would not fit one: unkeyed */
	u64 key = app == 1 && len != 0 && len >> 32 == 0 ? zlen : 0;
	u64 oh = 0;
	if (key != 0) {
		oh = ahash(ino, gen, len);
		long r = arepeat(key, oh, len);
		if (r != O_MISS)
			return r;
	}
	long rc = fileoff(ino);
	if (rc <= 0)
		return rc;
	u64 c = (u64)rc;
	if (len == 0)
		return 0;
	if (off >= MAX_BYTES)
		return -E_FBIG;
	u64 end = off + len;
	if (end > MAX_BYTES)
		return -E_FBIG;
	u64 j = jclaim();
	if (!j)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	rc = ilockw(c, tag);
	if (rc) {
		jend(j);
		return rc;
	}
	/* unlinked while we waited for the lock, or not the caller's file any more */
	rc = still_ours(c, gen);
	if (rc)
		goto fail;
	if (ar_ld32u(arf, c + ARF_I_FLAGS) & ARF_IF_STRIPED) {
		rc = -E_INVAL;          /* a cluster file: its body is a layout record, not extents */
		goto fail;
	}
	if (keep && end > ar_ld64(arf, c + ARF_I_SIZE)) {
		rc = -E_OPNOTSUPP;      /* blocks past the size cannot be held (extents lie below it) */
		goto fail;
	}
	if (app == 1) {
		/* append: from the size as it is now, under the lock */
		off = ar_ld64(arf, c + ARF_I_SIZE);
		ar_outq(off);
		if (off > MAX_BYTES - len) {
			rc = -E_FBIG;
			goto fail;
		}
		end = off + len;
	}

	u64 pos = off;
	long found = esearch(c, pos >> ARF_BLOCK_SHIFT);
	if (found < 0) {
		rc = -E_IO;
		goto fail;
	}
	u64 idx = (u64)found;
	u64 logged = 0, got = 0;        /* the inode is logged; the run's one hole is filled */
	u64 y = 0;                      /* a spare extent block, given back if unused */
	u64 reserve = 0;                /* an append's whole range when it places only part */
	u64 wbo = 0, wbl = 0;           /* the range copied so far, for wbstart */
	while (pos < end) {
		u64 lb = pos >> ARF_BLOCK_SHIFT;
		u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
		u64 holeend = ARF_MAX_FILE_BLOCKS;
		if (idx < n) {
			u64 e = eat(c, idx);
			if (!e || !eok(e))
				goto damaged;
			u64 el = e_lblk(e), elen = e_len(e);
			if (lb >= el + elen) {
				idx++;          /* (not reached after esearch; kept for safety) */
				continue;
			}
			if (lb >= el) {
				/* mapped: overwrite in place up to the extent's end (allocate: leave) */
				u64 wend = (el + elen) << ARF_BLOCK_SHIFT;
				if (wend > end)
					wend = end;
				if (alloc) {
					pos = wend;
					idx++;
					continue;
				}
				u64 pd = ((e_pblk(e) + lb - el) << ARF_BLOCK_SHIFT) + (pos & BLOCK_MASK);
				ar_copy(arf, AR_ARGS, pd, pos - off, wend - pos);
				if (wbcut(wbo, wbl, pd)) {
					wbo = pd;
					wbl = 0;
				}
				wbl += wend - pos;
				pos = wend;
				idx++;
				continue;
			}
			holeend = el;
		}

		/* a hole from lb to holeend */
		if (got) {
			/* one allocation per run: the client sends the rest again; an append keeps
			 * its whole range (see append) */
			if (app == 1)
				reserve = end;
			break;
		}
		/* blocks wanted: up to the next extent or the last block the write touches */
		u64 want = ((end - 1) >> ARF_BLOCK_SHIFT) + 1;
		if (want > holeend)
			want = holeend;
		want -= lb;
		if (alloc && want > ALLOC_RUN_BLOCKS)
			want = ALLOC_RUN_BLOCKS;        /* zeroing is work: bounded per run */
		u64 k = 0, ins = 0, newp = 0, pe = 0;
		if (idx != 0) {
			/* grow the previous extent in place when it ends right at lb and the blocks
			 * after it are free */
			pe = eat(c, idx - 1);
			if (!pe)
				goto damaged;
			if (e_lblk(pe) + e_len(pe) == lb) {
				newp = e_pblk(pe) + e_len(pe);
				k = bgrab(newp, want);
			}
		}
		if (k == 0) {
			/* a fresh run anywhere: one block, grown in place as far as it goes */
			newp = balloc(1);
			if (!newp)
				goto nospace;
			newp >>= ARF_BLOCK_SHIFT;
			k = bgrab(newp + 1, want - 1) + 1;
			ins = 1;
			if (n >= ARF_I_INLINE_EXT) {
				/* the insert may need a new or split extent block: take a spare one
				 * now, while failing still changes nothing */
				y = balloc(1);
				if (!y) {
					bput(newp << ARF_BLOCK_SHIFT, k);
					goto nospace;
				}
			}
		}

		/* ---- logged changes from here; the new blocks are filled before they are linked */
		if (!logged) {
			jlog(j, c, ARF_INO_SIZE);
			logged = 1;
		}
		u64 blkend = (lb + k) << ARF_BLOCK_SHIFT;
		u64 wend = blkend;
		if (alloc) {
			/* allocate: the new blocks hold zeros, as the hole read before */
			ar_fill(arf, newp << ARF_BLOCK_SHIFT, k << ARF_BLOCK_SHIFT, 0);
			if (end < wend)
				wend = end;
		} else if (end < wend) {
			wend = end;
			/* zero the tail of the last new block past the write (reads see zeros up
			 * to EOF) */
			ar_fill(arf, ((newp + k) << ARF_BLOCK_SHIFT) - (blkend - wend), blkend - wend, 0);
		}
		if (!alloc) {
			/* zero the head of the first new block before the write */
			ar_fill(arf, newp << ARF_BLOCK_SHIFT, pos & BLOCK_MASK, 0);
			u64 pd = (newp << ARF_BLOCK_SHIFT) + (pos & BLOCK_MASK);
			ar_copy(arf, AR_ARGS, pd, pos - off, wend - pos);
			if (wbcut(wbo, wbl, pd)) {
				wbo = pd;
				wbl = 0;
			}
			wbl += wend - pos;
		}
		if (!ins) {
			jlog(j, pe, ARF_E_SIZE);
			ar_st32(arf, pe + ARF_E_LEN, e_len(pe) + k);
		} else {
			u64 used = einsert(c, j, PY(idx, y), lb | k << 32, newp);
			if (used)
				y = 0;          /* linked: no longer ours to give back */
			k += used;
			idx++;              /* the new extent; the loop goes on after it */
		}
		ar_st64(arf, c + ARF_I_NBLOCKS, ar_ld64(arf, c + ARF_I_NBLOCKS) + k);
		pos = wend;
		got = 1;
	}
	goto done;

nospace:
	if (pos != off)
		goto done;              /* some bytes went in: a short write */
	rc = -E_NOSPC;
	goto fail;
damaged:
	if (pos != off)
		goto done;
	rc = -E_IO;
	goto fail;

done:
	/* size and times: the inode is logged once per run */
	if (!logged)
		jlog(j, c, ARF_INO_SIZE);
	u64 t_now = (u64)ar_hcall0(now);
	u64 newsize = reserve > pos ? reserve : pos;
	if (ar_ld64(arf, c + ARF_I_SIZE) < newsize)
		ar_st64(arf, c + ARF_I_SIZE, newsize);
	if (!alloc)                     /* fallocate moves ctime only, as tmpfs does */
		ar_st64(arf, c + ARF_I_MTIME, t_now);
	ar_st64(arf, c + ARF_I_CTIME, t_now);
	if (key != 0) {
		/* a keyed append: its answer, in the same transaction */
		u64 g = ARF_O_APPEND | off | (reserve != 0 ? ARF_O_RESERVE : 0);
		oend(j, oput(j, key, pos - off, g, oh));
	} else {
		jend(j);
	}
	if (y)
		bput(y, 1);             /* the spare extent block, when the insert did not need it */
	iunlock(c, tag);
	wbstart(wbo, wbl);          /* the bytes copied start on their way to disk, outside the lock */
	if (app == 1)
		ar_outq(reserve);
	return (long)(pos - off);
fail:
	jend(j);
	iunlock(c, tag);
	return rc;
}

/* write(ino, off, gen): store the args bytes at byte off of regular file ino; the bytes
 * written (see put). */
long write(u64 ino, u64 off, u64 gen)
{
	return put(ino, off, gen, 0, 0);
}

/* append(ino, gen, key): the args bytes at the end of regular file ino, where the end is the size
 * when this run holds the inode's lock, whatever any client believes it to be: appends of
 * several clients (O_APPEND) never land on one another.  The result is write's; the output
 * two u64: the offset the bytes went to, and 0, or the end of the whole range when the run
 * placed only part of it (free space in pieces: one allocation per run, as write).  Then the
 * size already covers the whole range, so a later append goes after it, and the client writes
 * the rest into that range (a hole until then) with plain writes.  When not even part of the
 * blocks could be had (ENOSPC) nothing is kept past the bytes placed.  key: 0, or client << 32
 * | sequence number: a repeat of a done append with the same key and request is answered
 * (result and outputs) from its record without appending again ("keyed appends"). */
long append(u64 ino, u64 gen, u64 key)
{
	return put(ino, 0, gen, 1, key);
}

/* extend(ino, len, gen, key): the append of a cluster's file (docs/cluster.md, "Appends"),
 * whose bytes are not in this image but in objects on the data servers: the size raised by
 * len under the inode's lock, whatever any client believes it to be, mtime and ctime now; the
 * result len, the output two u64: the old size (where the client then writes its bytes, on
 * the data servers) and the end of the range, so appends of several clients never land on
 * one another.  key as append's (client << 32 | sequence number, 0: none): a repeat of a
 * done extend is answered from its record without raising the size again.  EINVAL for len 0
 * or over 2^32 (no client asks for more at once), EFBIG past 16 TiB. */
long extend(u64 ino, u64 len, u64 gen, u64 key)
{
	if (len == 0 || len >> 32)
		return -E_INVAL;
	/* the op hash of an extend: no bytes of its own, so a constant in their place */
	u64 oh = ohash(EXTEND_TAG, (u64)OP_APPEND << 32, ino, gen, len);
	if (key != 0) {
		long r = arepeat(key, oh, len);
		if (r != O_MISS)
			return r;
	}
	long rc = fileoff(ino);
	if (rc <= 0)
		return rc;
	u64 c = (u64)rc;
	u64 j = jclaim();
	if (!j)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	rc = ilockw(c, tag);
	if (rc) {
		jend(j);
		return rc;
	}
	rc = still_ours(c, gen);
	if (rc)
		goto fail;
	u64 off = ar_ld64(arf, c + ARF_I_SIZE);
	if (off > MAX_BYTES - len) {
		rc = -E_FBIG;
		goto fail;
	}
	jlog(j, c, ARF_INO_SIZE);
	u64 t_now = (u64)ar_hcall0(now);
	ar_st64(arf, c + ARF_I_SIZE, off + len);
	ar_st64(arf, c + ARF_I_MTIME, t_now);
	ar_st64(arf, c + ARF_I_CTIME, t_now);
	if (key != 0)
		oend(j, oput(j, key, len, ARF_O_APPEND | off | ARF_O_RESERVE, oh));
	else
		jend(j);
	iunlock(c, tag);
	ar_outq(off);
	ar_outq(off + len);
	return (long)len;
fail:
	jend(j);
	iunlock(c, tag);
	return rc;
}

/* space(): the image's block count and its free blocks, two u64 on the output: a cluster's
 * statfs sums its data servers' (their images hold the file data), through the segment the
 * client has installed there already. */
long space(void)
{
	ar_outq(SB(N_BLOCKS));
	ar_outq(SB(FREE_BLOCKS));
	return 0;
}

/* writeafter(ino, off, gen, after): write, once the file's size has reached after (read
 * without the lock: this orders, it does not protect).  The mount's write queue sends a run
 * that continues the one before it this way (after = its own offset): several runs of one
 * file are in flight and arfd's workers would otherwise take them in any order, each one that
 * overtakes another leaving a hole that the other then fills with an extent of its own, so a
 * file written front to back would end up in many extents.  It waits 50 us at a time (arfd's
 * pause hook) for up to about a quarter of a second (the run before may have failed), then
 * writes anyway. */
long writeafter(u64 ino, u64 off, u64 gen, u64 after)
{
	long c = fileoff(ino);
	if (c > 0) {                    /* not a regular file: write says why */
		for (u64 n = 1; ar_ld64(arf, (u64)c + ARF_I_SIZE) < after && n < 5000; n++)
			(void)ar_hcall1(pause, 50);
	}
	return put(ino, off, gen, 0, 0);
}

/* allocate(ino, off, len, gen): fallocate's mode 0: blocks for every hole of [off, off+len),
 * zeroed, and the size raised to off+len when it was smaller; mapped blocks are left alone.
 * len's top bit is FALLOC_FL_KEEP_SIZE: then a range past the size is EOPNOTSUPP.
 * As write, one hole is filled per run: the count of bytes covered (the client calls again
 * for the rest); ENOSPC when not even the first hole got a block; EFBIG past 16 TiB. */
long allocate(u64 ino, u64 off, u64 len, u64 gen)
{
	return put(ino, off, gen, 2, len);
}

/* ---------------------------------------------------------------- read */

/* The inode of regular file ino for a look without the lock (read, seek): fileoff's answer,
 * or -ESTALE when gen says the caller opened another file of that number. */
static long unlocked_file(u64 ino, u64 gen)
{
	long rc = fileoff(ino);
	if (rc > 0 && gen && ar_ld64(arf, (u64)rc + ARF_I_GEN) != gen)
		return -E_STALE;
	return rc;
}

/* After a look without the lock: rc, when the inode is still the regular file gen names;
 * else -ESTALE.  Another client may have removed the file and made another of the same
 * number between unlocked_file's check and the loads after it (arf_race.sh read-removed once
 * read the new file's size, 0, as the old file's end): what was read may be the new file's. */
static long recheck(u64 c, u64 gen, long rc)
{
	if (gen && (ar_ld64(arf, c + ARF_I_GEN) != gen ||
	            (ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT) != ARF_S_IFREG))
		return -E_STALE;
	return rc;
}

/* Append n zero bytes to the output (a hole). */
static void zeros(u64 n)
{
	ar_fill(AR_OUT, (u64)ar_len(AR_OUT), n, 0);
}

/* read(ino, off, len, gen): output the bytes of regular file ino from off, stopping at EOF;
 * the count (0 at or past EOF).  Holes read as zeros.  len is at most 64 MiB (EINVAL above;
 * the client asks for a few MiB at a time).  No lock, as getattr: a read racing a write or
 * truncate of the same range may see either side of it; extents are range-checked before
 * use, so it never outputs bytes from outside the data area (EIO instead). */
long read(u64 ino, u64 off, u64 len, u64 gen)
{
	long rc = unlocked_file(ino, gen);
	if (rc <= 0)
		return rc;
	u64 c = (u64)rc;
	if (len > READ_MAX)
		return -E_INVAL;
	u64 size = ar_ld64(arf, c + ARF_I_SIZE);
	if (size <= off)
		return recheck(c, gen, 0);
	u64 end = len > size - off ? size : off + len;
	u64 pos = off;
	u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
	long found = esearch(c, pos >> ARF_BLOCK_SHIFT);
	if (found < 0)
		return -E_IO;
	for (u64 idx = (u64)found; pos < end;) {
		if (idx >= n) {
			zeros(end - pos);   /* a hole up to the size */
			break;
		}
		u64 e = eat(c, idx);
		if (!e || !eok(e))
			return -E_IO;
		u64 el = e_lblk(e), elen = e_len(e);
		u64 piece = el << ARF_BLOCK_SHIFT;
		if (piece > pos) {
			/* a hole before this extent */
			if (piece > end)
				piece = end;
			zeros(piece - pos);
			pos = piece;
			continue;
		}
		piece = (el + elen) << ARF_BLOCK_SHIFT;
		if (piece > end)
			piece = end;
		if (piece > pos) {      /* else the extent ends before pos (changed under us) */
			ar_output(arf, ((e_pblk(e) + (pos >> ARF_BLOCK_SHIFT) - el) << ARF_BLOCK_SHIFT) +
			                   (pos & BLOCK_MASK),
			          piece - pos);
			pos = piece;
		}
		idx++;
	}
	return recheck(c, gen, (long)(end - off));
}

/* readv(ino, n, gen): read's bytes of n ranges of regular file ino, one after the other in
 * the output; the argument bytes hold the ranges as n pairs (u64 off, u64 len).  The total
 * count: a range is short only at EOF, and the ranges after a short one are not read.  At
 * most READ_MAX bytes in all (EINVAL above).  arf grep reads -B's leading lines of a run's
 * groups with it: one round trip for all of them, not one each. */
long readv(u64 ino, u64 n, u64 gen)
{
	if (n > (u64)ar_len(AR_ARGS) / 16)
		return -E_INVAL;
	u64 total = 0;
	for (u64 i = 0; i < n; i++) {
		u64 off = ar_ld64(AR_ARGS, 16 * i), len = ar_ld64(AR_ARGS, 16 * i + 8);
		if (len > READ_MAX - total)
			return -E_INVAL;
		long rc = read(ino, off, len, gen);
		if (rc < 0)
			return rc;
		total += (u64)rc;
		if ((u64)rc < len)
			break;
	}
	return (long)total;
}

/* ---------------------------------------------------------------- edges (arf grep)
 * arf grep on a cluster (docs/cluster.md, "arf grep on a cluster") joins the lines that cross
 * stripe boundaries from each stripe's first and last partial lines.  edges(ino, gen, n, lim)
 * finds them for n pieces of the file (object) ino in one run: args holds n pairs of u64
 * (off, len), a stripe's bytes [off, off+len) in the object; bit 63 of len: its head is not
 * wanted (the file's first stripe); bit 62: lines end with NUL, not '\n' (grep -z).  For each piece the output is u64 hl, u64 tl, then the
 * hl bytes from off (up to and with the first terminator, searched in the first lim bytes)
 * and the tl bytes up to off+len after the last terminator (searched in the last lim bytes);
 * hl = tl = EDGE_NONE when either has no terminator there, the piece reaches past the size,
 * or a byte searched lies in a hole (zeros: the caller gathers the file).  -> n, or -errno. */
#define EDGE_LIM_MAX (1ul << 20)       /* lim's largest */
#define EDGES_MAX 4096ul               /* pieces a run */
#define EDGE_NONE (~0ul)
#define EDGE_NOHEAD (1ul << 63)
#define EDGE_NUL (1ul << 62)

/* Offset of the first terminator eol in [from, to) of file c, -1 when there is none, -2
 * when a byte there is in a hole or past the extents (zeros), or the extents are damaged. */
static long nlfind(u64 c, u64 from, u64 to, u64 eol)
{
	u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
	if (from >= to)
		return -1;
	long found = esearch(c, from >> ARF_BLOCK_SHIFT);
	if (found < 0)
		return -2;
	for (u64 idx = (u64)found; from < to; idx++) {   /* at most n extents */
		if (idx >= n)
			return -2;
		u64 e = eat(c, idx);
		if (!e || !eok(e))
			return -2;
		u64 el = e_lblk(e);
		u64 end = (el + e_len(e)) << ARF_BLOCK_SHIFT;
		if ((el << ARF_BLOCK_SHIFT) > from || end <= from)
			return -2;
		if (end > to)
			end = to;
		u64 addr = ((e_pblk(e) + (from >> ARF_BLOCK_SHIFT) - el) << ARF_BLOCK_SHIFT) +
		           (from & BLOCK_MASK);
		long r = ar_findb(arf, addr, end - from, eol);
		if (r != -1)
			return (long)(from + ((u64)r - addr));
		from = end;
	}
	return -1;
}

/* The last terminator eol in [from, to) of file c, as nlfind (every byte of the range
 * checked).  One extent search, then the terminators of each extent's piece one after
 * another with findb: asking nlfind again after each terminator searched the extents once a
 * line, which for a batch of 1024 stripes of 8 KiB windows of short lines ran out of fuel
 * on a large object. */
static long nllast(u64 c, u64 from, u64 to, u64 eol)
{
	u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
	if (from >= to)
		return -1;
	long found = esearch(c, from >> ARF_BLOCK_SHIFT);
	if (found < 0)
		return -2;
	long last = -1;
	for (u64 idx = (u64)found; from < to; idx++) {   /* at most n extents */
		if (idx >= n)
			return -2;
		u64 e = eat(c, idx);
		if (!e || !eok(e))
			return -2;
		u64 el = e_lblk(e);
		u64 end = (el + e_len(e)) << ARF_BLOCK_SHIFT;
		if ((el << ARF_BLOCK_SHIFT) > from || end <= from)
			return -2;
		if (end > to)
			end = to;
		u64 addr = ((e_pblk(e) + (from >> ARF_BLOCK_SHIFT) - el) << ARF_BLOCK_SHIFT) +
		           (from & BLOCK_MASK);
		u64 len = end - from, at = 0;
		for (u64 k = 0; k < len && at < len; k++) {  /* each turn moves past a terminator */
			long r = ar_findb(arf, addr + at, len - at, eol);
			if (r == -1)
				break;
			at = (u64)r - addr + 1;
			last = (long)(from + at - 1);
		}
		from = end;
	}
	return last;
}

long edges(u64 ino, u64 gen, u64 n, u64 lim)
{
	long rc = unlocked_file(ino, gen);
	if (rc <= 0)
		return rc;
	u64 c = (u64)rc;
	if (n > EDGES_MAX || lim == 0 || lim > EDGE_LIM_MAX || (u64)ar_len(AR_ARGS) < n * 16)
		return -E_INVAL;
	u64 size = ar_ld64(arf, c + ARF_I_SIZE);
	for (u64 i = 0; i < n; i++) {
		u64 off = ar_ld64(AR_ARGS, i * 16), len = ar_ld64(AR_ARGS, i * 16 + 8);
		u64 nohead = len & EDGE_NOHEAD;
		u64 eol = len & EDGE_NUL ? 0 : '\n';
		len &= ~(EDGE_NOHEAD | EDGE_NUL);
		u64 hl = EDGE_NONE, tl = EDGE_NONE;
		if (len != 0 && off <= size && len <= size - off) {
			u64 w = len < lim ? len : lim;
			long h = nohead ? (long)off - 1 : nlfind(c, off, off + w, eol);
			long t = h >= -1 ? nllast(c, off + len - w, off + len, eol) : -2;
			if ((h >= 0 || nohead) && t >= 0) {
				hl = (u64)(h + 1) - off;
				tl = off + len - ((u64)t + 1);
			}
		}
		ar_outq(hl);
		ar_outq(tl);
		if (hl != EDGE_NONE) {
			if (hl && read(ino, off, hl, 0) != (long)hl)
				return -E_IO;
			if (tl && read(ino, off + len - tl, tl, 0) != (long)tl)
				return -E_IO;
		}
	}
	return recheck(c, gen, (long)n);
}

/* ---------------------------------------------------------------- seek */

/* lseek's SEEK_DATA (whence 3) and SEEK_HOLE (4), answered from the extents: the first
 * offset at or after off that is data (inside an extent) or in a hole (outside every extent;
 * the end of the file counts as a hole, as on Linux).  -ENXIO when off is at or past the
 * size, or for SEEK_DATA when only holes follow.  No lock: the answer may be stale by the time
 * the caller uses it, which lseek allows. */
long seek(u64 ino, u64 off, u64 whence, u64 gen)
{
	long rc = unlocked_file(ino, gen);
	if (rc <= 0)
		return rc;
	u64 c = (u64)rc;
	if (whence != 3 && whence != 4)
		return -E_INVAL;
	u64 size = ar_ld64(arf, c + ARF_I_SIZE);
	if (off >= size)
		return -E_NXIO;
	u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
	long found = esearch(c, off >> ARF_BLOCK_SHIFT);
	if (found < 0)
		return -E_IO;
	u64 pos = off;
	for (u64 idx = (u64)found; idx < n; idx++) {
		u64 e = eat(c, idx);
		if (!e)
			return -E_IO;
		u64 start = e_lblk(e) << ARF_BLOCK_SHIFT;
		if (start > pos)                  /* pos is in the hole before this extent */
			return whence == 4 ? (long)pos : start < size ? (long)start : -E_NXIO;
		if (whence == 3)
			return (long)pos;
		pos = (e_lblk(e) + e_len(e)) << ARF_BLOCK_SHIFT;   /* data up to here */
		if (pos >= size)
			return (long)size;
	}
	/* past the last extent: a hole up to the size */
	return whence == 4 ? (long)pos : -E_NXIO;
}

/* ---------------------------------------------------------------- truncate */

/* Give back the blocks of extents a .. b-1 of the array at base (after the commit: their
 * bytes are no longer reachable from the inode, but still readable here). */
static void efree(u64 base, u64 a, u64 b)
{
	for (; a < b; a++) {
		u64 e = base + a * ARF_E_SIZE;
		if (eok(e))             /* a bad extent names nothing of ours to give back */
			bput(e_pblk(e) << ARF_BLOCK_SHIFT, e_len(e));
	}
}

/* How many blocks the extent-block chain from x has (up to its first bad link). */
static u64 xcount(u64 x)
{
	u64 k = 0;
	for (; xok(x); x = ar_ld64(arf, x + ARF_X_NEXT))
		k++;
	return k;
}

/* Give back the extent-block chain from x with every extent it holds (after the commit that
 * unlinked them). */
static void xfree(u64 x)
{
	while (xok(x)) {
		u64 nx = ar_ld64(arf, x + ARF_X_NEXT);
		u64 k = ar_ld32u(arf, x + ARF_X_N);
		efree(x + ARF_X_EXT, 0, k > ARF_X_MAX ? ARF_X_MAX : k);
		bput(x, 1);
		x = nx;
	}
}

/* truncate(ino, size, gen): set the size of regular file ino.  Growing leaves a hole (the
 * bytes past the old size in its last block are already zero: every operation keeps the tail
 * of the last block zero).  Shrinking shortens the extent across the new end, drops the
 * extents past it (the extent block holding the new last extent becomes the chain's end),
 * zeroes the new last block past the size, and gives the blocks back after the commit.  The
 * undo records are the inode, one extent, and one extent block header.  EFBIG past 16 TiB. */
long truncate(u64 ino, u64 size, u64 gen)
{
	long rc = fileoff(ino);
	if (rc <= 0)
		return rc;
	u64 c = (u64)rc;
	if (size > MAX_BYTES)
		return -E_FBIG;
	u64 j = jclaim();
	if (!j)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	rc = ilock(c, tag);
	if (rc) {
		jend(j);
		return rc;
	}
	rc = still_ours(c, gen);
	if (rc)
		goto fail;

	u64 old = ar_ld64(arf, c + ARF_I_SIZE);
	u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
	u64 newn = n;                   /* extents kept */
	u64 nb = 0;                     /* blocks the new size touches */
	u64 freed = 0;                  /* blocks given back: data and extent blocks */
	u64 se = 0, el = 0, tailp = 0, tailn = 0;   /* the extent cut in two, its cut tail */
	u64 lastx = 0, q = 0, oldbn = 0, oldnext = 0;   /* the chain's new last block */
	u64 oldx = 0;
	if (size < old) {
		nb = (size + BLOCK_MASK) >> ARF_BLOCK_SHIFT;
		long k;
		u64 e;
		if (size & BLOCK_MASK) {
			/* zero the rest of the block the new size ends in, so a later growth reads
			 * zeros (data: not journalled) */
			u64 lb = size >> ARF_BLOCK_SHIFT;
			k = esearch(c, lb);
			if (k < 0)
				goto damaged;
			if ((u64)k < n) {
				e = eat(c, (u64)k);
				if (!e || !eok(e))
					goto damaged;
				el = e_lblk(e);
				if (el <= lb)   /* else the new end is in a hole */
					ar_fill(arf,
					        ((e_pblk(e) + lb - el) << ARF_BLOCK_SHIFT) + (size & BLOCK_MASK),
					        ARF_BLOCK_SIZE - (size & BLOCK_MASK), 0);
			}
		}
		/* the first extent reaching past block nb: kept in part when it starts below nb */
		k = esearch(c, nb);
		if (k < 0)
			goto damaged;
		newn = (u64)k;
		if (newn < n) {
			e = eat(c, newn);
			if (!e || !eok(e))
				goto damaged;
			el = e_lblk(e);
			if (el < nb) {
				tailp = e_pblk(e) + nb - el;
				tailn = e_len(e) - (nb - el);
				freed = tailn;
				se = e;
				newn++;
			}
			/* count what goes: extents newn .. n-1 and the chain blocks after the new last
			 * one */
			for (u64 i = newn; i < n; i++) {
				e = eat(c, i);
				if (!e)
					goto damaged;
				freed += e_len(e);
			}
			oldx = ar_ld64(arf, c + ARF_I_XBLK);
			if (newn <= ARF_I_INLINE_EXT) {
				freed += xcount(oldx);
			} else {
				/* the block holding extent newn - 1 becomes the last */
				u64 x = oldx;
				q = newn - 1 - ARF_I_INLINE_EXT;
				for (;;) {
					if (!xok(x))
						goto damaged;
					oldbn = ar_ld32u(arf, x + ARF_X_N);
					if (oldbn > q)
						break;
					q -= oldbn;
					x = ar_ld64(arf, x + ARF_X_NEXT);
				}
				lastx = x;
				oldnext = ar_ld64(arf, x + ARF_X_NEXT);
				freed += xcount(oldnext);
			}
		}
	}

	/* ---- logged changes; nothing fails from here ---- */
	jlog(j, c, ARF_INO_SIZE);
	if (freed) {
		if (tailn) {
			jlog(j, se, ARF_E_SIZE);
			ar_st32(arf, se + ARF_E_LEN, nb - el);
		}
		if (lastx) {
			jlog(j, lastx, ARF_X_EXT);          /* the header: next and n */
			ar_st32(arf, lastx + ARF_X_N, q + 1);
			ar_st64(arf, lastx + ARF_X_NEXT, 0);
		} else {
			ar_st64(arf, c + ARF_I_XBLK, 0);
		}
		ar_st32(arf, c + ARF_I_NEXTENTS, newn);
		ar_st64(arf, c + ARF_I_NBLOCKS, ar_ld64(arf, c + ARF_I_NBLOCKS) - freed);
	}
	u64 t_now = (u64)ar_hcall0(now);
	ar_st64(arf, c + ARF_I_SIZE, size);
	ar_st64(arf, c + ARF_I_MTIME, t_now);
	ar_st64(arf, c + ARF_I_CTIME, t_now);
	jend(j);

	/* ---- committed: give the blocks back (still under the lock), from the bytes the change
	 * left in place ---- */
	if (freed) {
		bput(tailp << ARF_BLOCK_SHIFT, tailn);
		if (newn <= ARF_I_INLINE_EXT) {
			/* as the count above: up to 9 kept, the whole chain goes */
			efree(c + ARF_I_BODY, newn, n < ARF_I_INLINE_EXT ? n : ARF_I_INLINE_EXT);
			xfree(oldx);
		} else {
			efree(lastx + ARF_X_EXT, q + 1, oldbn < ARF_X_MAX ? oldbn : ARF_X_MAX);
			xfree(oldnext);
		}
	}
	iunlock(c, tag);
	return 0;
damaged:
	rc = -E_IO;
fail:
	jend(j);
	iunlock(c, tag);
	return rc;
}

/* ---------------------------------------------------------------- punch */

/* most blocks punch gives back in one run (1 GiB: 4096 bitmap words); the client calls
 * again for the rest */
#define PUNCH_RUN_BLOCKS (1ul << 18)

/* Byte offset of the block holding logical block lb of file c, 0 when lb is in a hole, -1
 * when the extents are damaged. */
static long blkat(u64 c, u64 lb)
{
	long k = esearch(c, lb);
	if (k < 0)
		return -1;
	if ((u64)k >= ar_ld32u(arf, c + ARF_I_NEXTENTS))
		return 0;
	u64 e = eat(c, (u64)k);
	if (!e || !eok(e))
		return -1;
	if (e_lblk(e) > lb)
		return 0;
	return (long)((e_pblk(e) + lb - e_lblk(e)) << ARF_BLOCK_SHIFT);
}

/* Remove extent k of file c (the inode already logged by the caller, its lock held): the
 * extents after it move down by one.  Inline ones shift in the body, and when the chain holds
 * extents its first one moves into the last inline slot.  In the chain only one block
 * changes: it is logged whole and loses the extent, or, when that was its only one, it is
 * unlinked (the header of the block before it logged, or the inode's link) and returned for
 * the caller to give back after the commit; else 0.  So a chain never holds an empty block,
 * and the chain goes when 9 or fewer extents remain. */
static u64 edelete(u64 c, u64 j, u64 k)
{
	u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
	ar_st32(arf, c + ARF_I_NEXTENTS, n - 1);
	u64 b = c + ARF_I_BODY, x = ar_ld64(arf, c + ARF_I_XBLK), q;
	if (k < ARF_I_INLINE_EXT) {
		u64 in = n < ARF_I_INLINE_EXT ? n : ARF_I_INLINE_EXT;
		u64 s = b + k * ARF_E_SIZE;
		ar_copy(arf, arf, s, s + ARF_E_SIZE, (in - 1 - k) * ARF_E_SIZE);
		if (n <= ARF_I_INLINE_EXT) {
			eput(b + (in - 1) * ARF_E_SIZE, 0, 0);
			return 0;
		}
		/* the chain's first extent comes into the last inline slot */
		if (!xok(x))
			goto bad;
		ar_copy(arf, arf, b + (ARF_I_INLINE_EXT - 1) * ARF_E_SIZE, x + ARF_X_EXT, ARF_E_SIZE);
		q = 0;
	} else {
		q = k - ARF_I_INLINE_EXT;
	}
	/* the block holding chain position q, and the one before it (0: the inode links it) */
	u64 prev = 0, nx;
	for (;;) {
		if (!xok(x))
			goto bad;
		nx = ar_ld32u(arf, x + ARF_X_N);
		if (nx == 0 || nx > ARF_X_MAX)
			goto bad;
		if (q < nx)
			break;
		q -= nx;
		prev = x;
		x = ar_ld64(arf, x + ARF_X_NEXT);
	}
	u64 next = ar_ld64(arf, x + ARF_X_NEXT);
	if (nx == 1) {
		if (prev) {
			jlog(j, prev, ARF_X_EXT);           /* the header: next and n */
			ar_st64(arf, prev + ARF_X_NEXT, next);
		} else {
			ar_st64(arf, c + ARF_I_XBLK, next);
		}
		return x;
	}
	jlog(j, x, ARF_BLOCK_SIZE);
	u64 s = x + ARF_X_EXT + q * ARF_E_SIZE;
	ar_copy(arf, arf, s, s + ARF_E_SIZE, (nx - 1 - q) * ARF_E_SIZE);
	eput(x + ARF_X_EXT + (nx - 1) * ARF_E_SIZE, 0, 0);
	ar_st32(arf, x + ARF_X_N, nx - 1);
	return 0;
bad:
	/* the chain was walked by esearch just before, under the lock: cannot happen */
	ar_trap(5);
	return 0;
}

/* punch(ino, off, len, gen): fallocate's PUNCH_HOLE (with KEEP_SIZE, as Linux requires):
 * bytes [off, off+len) of regular file ino read as zeros afterwards and the whole blocks
 * inside the range are given back; the size stays.  The partial blocks at the ends are zeroed
 * in place (logged: a crash leaves the old bytes or the new), as tmpfs does (the range decides,
 * not the size: a block is freed only when the range covers all of it).  A range past the
 * size or past 16 TiB is fine (nothing to free there).  Per run at most ONE extent changes
 * (removed, shortened at one end, or split in two around the hole, which may need a spare
 * extent block: ENOSPC before any change) and at most PUNCH_RUN_BLOCKS blocks are given back,
 * so the undo records stay bounded (the inode, the two partial blocks, one extent block and
 * one header); then it returns a short count and the client calls again from there.  mtime
 * and ctime become now (also past the size, as tmpfs).  The bytes covered (len when done);
 * EINVAL for len 0 or off or len past 2^63 (negative to the kernel), and as write. */
long punch(u64 ino, u64 off, u64 len, u64 gen)
{
	if (len == 0 || len >> 63 || off >> 63)
		return -E_INVAL;
	long rc = fileoff(ino);
	if (rc <= 0)
		return rc;
	u64 c = (u64)rc;
	u64 end = off + len;                    /* below 2^64: both are below 2^63 */
	if (end > MAX_BYTES)
		end = MAX_BYTES;                /* no block lies past 16 TiB */
	u64 o = off < end ? off : end;
	u64 fb = (o + BLOCK_MASK) >> ARF_BLOCK_SHIFT, lbe = end >> ARF_BLOCK_SHIFT;
	u64 j = jclaim();
	if (!j)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	rc = ilock(c, tag);
	if (rc) {
		jend(j);
		return rc;
	}
	rc = still_ours(c, gen);
	if (rc)
		goto fail;

	/* the partial blocks to zero: bytes past the size are zero already */
	u64 size = ar_ld64(arf, c + ARF_I_SIZE);
	u64 zend = end < size ? end : size;
	u64 hz = 0, hn = 0, tz = 0, tn = 0;     /* head and tail: address, bytes */
	long p;
	if ((o & BLOCK_MASK) && o < zend) {
		p = blkat(c, o >> ARF_BLOCK_SHIFT);
		if (p < 0)
			goto damaged;
		u64 stop = (o | BLOCK_MASK) + 1;
		if (stop > zend)
			stop = zend;
		if (p) {
			hz = (u64)p + (o & BLOCK_MASK);
			hn = stop - o;
		}
	}
	/* the whole blocks [fb, lbe): the first extent reaching into them, cut to the run's
	 * limit lim */
	u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
	u64 e = 0, k = 0, el = lbe, eend = lbe, a = 0, b = 0, next = lbe;
	if (fb < lbe) {
		long found = esearch(c, fb);
		if (found < 0)
			goto damaged;
		k = (u64)found;
		if (k < n) {
			e = eat(c, k);
			if (!e || !eok(e))
				goto damaged;
			el = e_lblk(e);
			eend = el + e_len(e);
		}
		u64 lim = lbe - fb > PUNCH_RUN_BLOCKS ? fb + PUNCH_RUN_BLOCKS : lbe;
		if (e && el < lim) {
			a = el > fb ? el : fb;
			b = eend < lim ? eend : lim;
			next = b;
		} else {
			e = 0;                  /* a hole up to the next extent: nothing to free */
			next = el < lbe ? el : lbe;
		}
	}
	u64 finished = next >= lbe;
	if (finished && (end & BLOCK_MASK) && lbe >= fb && lbe << ARF_BLOCK_SHIFT < zend) {
		p = blkat(c, lbe);
		if (p < 0)
			goto damaged;
		if (p) {
			tz = (u64)p;
			tn = zend - (lbe << ARF_BLOCK_SHIFT);
		}
	}
	/* a hole inside an extent splits it: the second part may need a new or split extent
	 * block, taken now while failing still changes nothing */
	u64 y = 0;
	u64 split = e && a > el && b < eend;
	if (split && n >= ARF_I_INLINE_EXT) {
		y = balloc(1);
		if (!y) {
			rc = -E_NOSPC;
			goto fail;
		}
	}

	/* ---- logged changes; nothing fails from here ---- */
	jlog(j, c, ARF_INO_SIZE);
	if (hn) {
		jlog(j, hz, hn);
		ar_fill(arf, hz, hn, 0);
	}
	if (tn) {
		jlog(j, tz, tn);
		ar_fill(arf, tz, tn, 0);
	}
	u64 fp = 0, fn = 0, xfree1 = 0;         /* data blocks to give back; an emptied extent block */
	if (e) {
		u64 pb = e_pblk(e);
		fp = pb + a - el;
		fn = b - a;
		u64 nblocks = ar_ld64(arf, c + ARF_I_NBLOCKS) - fn;
		if (a == el && b == eend) {
			xfree1 = edelete(c, j, k);
			if (xfree1)
				nblocks--;
		} else if (a == el) {
			/* the head goes: the extent starts at b */
			jlog(j, e, ARF_E_SIZE);
			eput(e, b | (eend - b) << 32, pb + b - el);
		} else {
			if (split) {
				/* the part after the hole becomes an extent of its own, right after e
				 * (e stays where it is: einsert moves only what follows it) */
				if (einsert(c, j, PY(k + 1, y), b | (eend - b) << 32, pb + b - el)) {
					y = 0;
					nblocks++;
				}
			}
			jlog(j, e, ARF_E_SIZE);
			ar_st32(arf, e + ARF_E_LEN, a - el);
		}
		ar_st64(arf, c + ARF_I_NBLOCKS, nblocks);
	}
	u64 t_now = (u64)ar_hcall0(now);
	ar_st64(arf, c + ARF_I_MTIME, t_now);
	ar_st64(arf, c + ARF_I_CTIME, t_now);
	jend(j);

	/* ---- committed: give the blocks back, still under the lock ---- */
	bput(fp << ARF_BLOCK_SHIFT, fn);
	if (xfree1)
		bput(xfree1, 1);
	if (y)
		bput(y, 1);             /* the spare extent block, when the insert did not need it */
	iunlock(c, tag);
	return finished ? (long)len : (long)((next << ARF_BLOCK_SHIFT) - off);
damaged:
	rc = -E_IO;
fail:
	jend(j);
	iunlock(c, tag);
	return rc;
}

/* ---------------------------------------------------------------- setattr */

enum {
	SET_MODE = 1, SET_UID = 2, SET_GID = 4, SET_ATIME = 8, SET_MTIME = 16,
	SET_ATIME_NOW = 32, SET_MTIME_NOW = 64, SET_ALL = 127,
};

/* setattr(ino, valid, mode, uid, gid, atime, mtime): change the fields valid names (any
 * inode type): 1 the permission bits (07777 of mode; the type stays), 2 uid, 4 gid, 8 atime,
 * 16 mtime (ns), 32 atime and 64 mtime to the server's clock.  ctime becomes now.  EINVAL for
 * unknown valid bits or no such inode number, ENOENT for a free inode.  (Size changes are
 * truncate, a separate run: it frees blocks.)  atime and mtime are arguments 5 and 6. */
static __attribute__((noinline)) long do_setattr(u64 ino, u64 vm, u64 ugid, u64 atime,
                                                 u64 mtime)
{
	u64 valid = vm >> 32, mode = vm & 0xfffffffful;
	u64 uid = ugid >> 32, gid = ugid & 0xfffffffful;
	if (valid & ~(u64)SET_ALL)
		return -E_INVAL;
	u64 c = ioff(ino);
	if (!c)
		return -E_INVAL;
	u64 j = jclaim();
	if (!j)
		return -E_AGAIN;
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	long rc = ilock(c, tag);
	if (rc) {
		jend(j);
		return rc;
	}
	if (ar_ld32u(arf, c + ARF_I_MODE) == 0) {
		rc = -E_NOENT;
		goto out;
	}
	jlog(j, c, ARF_INO_SIZE);
	u64 t_now = (u64)ar_hcall0(now);
	if (valid & SET_MODE)
		ar_st32(arf, c + ARF_I_MODE,
		        (ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT) | (mode & 07777));
	if (valid & SET_UID)
		ar_st32(arf, c + ARF_I_UID, uid);
	if (valid & SET_GID)
		ar_st32(arf, c + ARF_I_GID, gid);
	if (valid & SET_ATIME_NOW)
		ar_st64(arf, c + ARF_I_ATIME, t_now);
	else if (valid & SET_ATIME)
		ar_st64(arf, c + ARF_I_ATIME, atime);
	if (valid & SET_MTIME_NOW)
		ar_st64(arf, c + ARF_I_MTIME, t_now);
	else if (valid & SET_MTIME)
		ar_st64(arf, c + ARF_I_MTIME, mtime);
	ar_st64(arf, c + ARF_I_CTIME, t_now);
	rc = 0;
out:
	jend(j);
	iunlock(c, tag);
	return rc;
}

/* do_setattr's arguments: valid and mode, uid and gid packed in pairs (at most 5) */
static u64 pair(u64 hi, u64 lo)
{
	return (hi & 0xfffffffful) << 32 | (lo & 0xfffffffful);
}

long setattr(u64 ino, u64 valid, u64 mode, u64 uid, u64 gid)
{
	if (valid & ~(u64)SET_ALL)
		return -E_INVAL;
	return do_setattr(ino, pair(valid, mode), pair(uid, gid), ar_arg(5), ar_arg(6));
}

/* setattrattr: setattr, then when it is 0 getattr of ino after it (ops.c's getattr's 15
 * u64) on the output: a mount answers the kernel's setattr with them, one run instead of
 * two (untar's utimens of every file). */
AR_EXPORT_ARGS(setattrattr, 7);
long setattrattr(u64 ino, u64 valid, u64 mode, u64 uid, u64 gid)
{
	if (valid & ~(u64)SET_ALL)
		return -E_INVAL;
	long r = do_setattr(ino, pair(valid, mode), pair(uid, gid), ar_arg(5), ar_arg(6));
	if (r == 0)
		do_getattr(ino);
	return r;
}

/* ---------------------------------------------------------------- fsync */

/* msync (the server's sync hook) of blocks p .. p+n-1 of the image: 0 or -errno. */
static long syncblocks(u64 p, u64 n)
{
	return ar_hcall3(sync, arf, p << ARF_BLOCK_SHIFT, n << ARF_BLOCK_SHIFT);
}

/* msync of each block of a chain linked at next_off (extent blocks, directory blocks), from
 * x: 0, -errno, or -EIO at a bad link. */
static long syncchain(u64 x, u64 next_off)
{
	for (; x; x = ar_ld64(arf, x + next_off)) {
		if (!xok(x))
			return -E_IO;
		long rc = syncblocks(x >> ARF_BLOCK_SHIFT, 1);
		if (rc)
			return rc;
	}
	return 0;
}

/* fsync(ino, gen): make what the file's contents depend on durable: a regular file's data
 * extents and extent blocks, a directory's slot table and directory blocks, a symlink's
 * target block, the keyed results in block 0 (an append's record, a name's creation: after a
 * power loss a repeat must find the record of what fsync made durable, or it would append
 * or create again), and last the inode itself (docs/arf.md, "Durability").  It takes no lock and
 * logs nothing: it only reads the tree, and a concurrent change is covered by that change's
 * own fsync.  Every range is checked before it is synced; a damaged one is EIO. */
long fsync(u64 ino, u64 gen)
{
	u64 c = ioff(ino);
	if (!c)
		return -E_INVAL;
	u64 m = ar_ld32u(arf, c + ARF_I_MODE) & ARF_S_IFMT;
	if (!m)
		return -E_NOENT;
	if (gen && ar_ld64(arf, c + ARF_I_GEN) != gen)
		return -E_STALE;
	long rc;
	if (m == ARF_S_IFDIR) {
		u64 t = ar_ld64(arf, c + ARF_D_TABLE);
		if (t) {
			if (!xok(t))        /* block-aligned, inside the data area */
				return -E_IO;
			u64 nslots = ar_ld64(arf, c + ARF_D_NSLOTS);
			/* 256 slots a block: more than the image holds is damage */
			if (nslots > SB(N_BLOCKS) << 8)
				return -E_IO;
			u64 n = (nslots * ARF_T_SIZE + BLOCK_MASK) >> ARF_BLOCK_SHIFT;
			if (n + (t >> ARF_BLOCK_SHIFT) > SB(N_BLOCKS))
				return -E_IO;
			rc = syncblocks(t >> ARF_BLOCK_SHIFT, n);
			if (rc)
				return rc;
		}
		rc = syncchain(ar_ld64(arf, c + ARF_D_HEAD), ARF_B_NEXT);
		if (rc)
			return rc;
	} else if (!(ar_ld32u(arf, c + ARF_I_FLAGS) & ARF_IF_INLINE)) {
		/* (an inline symlink: all of it is in the inode) */
		u64 n = ar_ld32u(arf, c + ARF_I_NEXTENTS);
		for (u64 k = 0; k < n; k++) {
			u64 e = eat(c, k);
			if (!e || !eok(e))
				return -E_IO;
			rc = syncblocks(e_pblk(e), e_len(e));
			if (rc)
				return rc;
		}
		/* the extent blocks (eat checked each link it used) */
		rc = syncchain(ar_ld64(arf, c + ARF_I_XBLK), ARF_X_NEXT);
		if (rc)
			return rc;
	}
	u64 on = SB(ONCE_N);
	rc = on ? ar_hcall3(sync, arf, SB(ONCE_OFF), on * ARF_O_SIZE) :
	          ar_hcall3(sync, arf, ARF_O_OFF, ARF_O_N * ARF_O_SIZE);
	if (rc)
		return rc;
	return ar_hcall3(sync, arf, c, ARF_INO_SIZE);
}
