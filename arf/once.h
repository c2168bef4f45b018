/* once.h: the keyed results of ARF's segments (docs/arf.md, "Exactly once across a
 * restart"): the table (an area of its own after the journal, sized by mkfs; block 0's 112
 * entries in older images) that ops.c's namespace operations and data.c's append record
 * their results in.  Included by arf/ops.c and arf/data.c (and stripe.c through it),
 * AFTER what it uses: the region arf, u64, SB, jlog and jend.  Its functions are static:
 * each segment gets its own copy, as segments are self-contained, but the source is one.
 * pncc's line table names the including file's lines only, so a trap in these functions
 * has no line (docs/cc.md, "Lines").
 *
 * Every export that changes the tree, and append, takes an argument key: 0, or client << 32
 * | sequence number, which the client makes unique per request and sends again unchanged
 * when it repeats the request (after a reconnect to a restarted arfd).  A keyed operation
 * that changes something records (key, op hash, result, generation) in the key's entry of
 * the table in block 0 inside its own journal transaction (oput before the commit, oend for
 * it), so a crash leaves both the change and its record, or neither.  The operation first
 * looks the key up (oget, after the checks of the request's own bytes, before anything that
 * reads the tree): when the entry holds the key AND the same op hash, the operation was
 * done and its result is answered without doing it again.
 *
 * The op hash (ohash) binds the record to the request: what it is (OP_*) and every
 * argument that defines it (directory, inode, names, target, mode, flags; an append's
 * length and some of its bytes).  A genuine repeat carries the very bytes of the first
 * request (the key is part of them), so the same key with another op hash is a key used
 * twice: a client that restarted its numbering under the same id, two clients that drew one
 * id, or a buggy one.  Such a request runs as a new one (and its record, once done,
 * replaces the entry): answering the old result would report an operation done that was
 * not, and an error would fail a well-formed request for its sender's numbering.  The owner
 * of the old record has no claim left on it: its sequence numbers only grow, so it repeats
 * a key only while that request is in flight, with the same bytes; if it does repeat it
 * after the entry was replaced, its request runs again and answers what the tree says
 * (EEXIST, ENOENT; an append: appended again), never a wrong success.
 *
 * An entry is overwritten by the next key that picks it: a client's consecutive sequence
 * numbers take consecutive entries, so its own record lasts its next (entries - 1) keyed
 * operations (fewer when other clients' keys land there). */

#define O_MISS (1l << 62)      /* oget: no record (never a result: those are < 2^32 or < 0) */

/* What ohash's first word names: the operation (plain and *attr forms are one: the same
 * change), shifted left 32 above a small argument of it.  One list for both segments, so
 * no two operations share a number. */
enum { OP_MK = 1, OP_RM, OP_SYMLINK, OP_LINK, OP_RENAME, OP_SETXATTR, OP_REMOVEXATTR, OP_APPEND };

/* The entry of key in the image's table (its own after the journal, ARF_FEAT_ONCE; block
 * 0's in images made before it: once_n 0).  arf_sb_check proved the table inside the image
 * at attach. */
static u64 oentry(u64 key)
{
	u64 n = SB(ONCE_N), off = SB(ONCE_OFF);
	if (n == 0) {
		n = ARF_O_N;
		off = ARF_O_OFF;
	}
	return off + ((key >> 32) * ARF_O_MIX + (key & 0xfffffffful)) % n * ARF_O_SIZE;
}

/* The op hash of a keyed request: s, a hash of its bytes (nhash, bhash; append's ahash),
 * mixed with a, b, c, d, the operation and its integer arguments (multiply by the Fibonacci
 * constant, fold the high bits down), folded to 32 bits, never 0: an entry's op word 0 was
 * recorded before op hashes (older images) and matches no request. */
static u64 ohash(u64 s, u64 a, u64 b, u64 c, u64 d)
{
	u64 h = (s ^ a) * ARF_HASH_MUL;
	h = (h ^ (h >> 29) ^ b) * ARF_HASH_MUL;
	h = (h ^ (h >> 29) ^ c) * ARF_HASH_MUL;
	h = (h ^ (h >> 29) ^ d) * ARF_HASH_MUL;
	h = (h ^ (h >> 32)) & 0xfffffffful;
	return h != 0 ? h : 1;
}

/* The recorded result of key sent with op hash oh, or O_MISS (always for key 0; also for
 * an entry holding key under another op hash: the key was used twice, see above).  No
 * lock: oput clears the key word before it changes the rest and stores it last, so a
 * second look at the key word tells whether the word read between (result | op << 32, one
 * load) was its. */
static __attribute__((noinline)) long oget(u64 key, u64 oh)
{
	if (key == 0)
		return O_MISS;
	u64 e = oentry(key);
	if (ar_ld64(arf, e + ARF_O_KEY) != key)
		return O_MISS;
	u64 w = ar_ld64(arf, e + ARF_O_RESULT);
	if (ar_ld64(arf, e + ARF_O_KEY) != key || w >> 32 != oh)
		return O_MISS;
	return (long)(w & 0xfffffffful);
}

/* The gen word of the record oget just answered r from (key, op hash oh), or 0 when the
 * entry changed since (another key took it: the caller treats that as a miss).  The same
 * protocol as oget's: the result word and the key word read again after it.  (Unused in
 * ops.c: its *attr forms check the generation against the inode's.) */
static __attribute__((noinline, unused)) u64 ogen(u64 key, long r, u64 oh)
{
	u64 e = oentry(key);
	u64 g = ar_ld64(arf, e + ARF_O_GEN);
	if (ar_ld64(arf, e + ARF_O_RESULT) != ((u64)r | oh << 32) || ar_ld64(arf, e + ARF_O_KEY) != key)
		return 0;
	return g;
}

/* Record key's result (below 2^32: an inode number, 0, an append's count) under op hash oh
 * in transaction j, after the operation's last logged change and before its commit (oend):
 * the entry's offset, locked with j's tag, or 0 (key 0, or the entry's lock held by a run
 * that trapped: the operation goes unrecorded rather than waiting).  gen: the record's gen
 * word (the generation of the inode the result names, or 0; an append's ARF_O_APPEND |
 * offset).  Taken after every inode lock and held only to the commit, never while waiting
 * for anything: no cycle of waits. */
static __attribute__((noinline)) u64 oput(u64 j, u64 key, u64 result, u64 gen, u64 oh)
{
	if (key == 0)
		return 0;
	u64 e = oentry(key);
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	u64 n = 0;
	for (;;) {
		u64 old = ar_cas(arf, e + ARF_O_LOCK, 0, tag);
		if (old == 0)
			break;
		if (old >> 32 != SB(EPOCH) && ar_cas(arf, e + ARF_O_LOCK, old, tag) == old)
			break;
		if (++n >= 20000)
			return 0;
	}
	jlog(j, e + ARF_O_KEY, ARF_O_SIZE - ARF_O_KEY);
	ar_st64(arf, e + ARF_O_KEY, 0);
	ar_st64(arf, e + ARF_O_RESULT, (result & 0xfffffffful) | oh << 32);
	ar_st64(arf, e + ARF_O_GEN, gen);
	ar_st64(arf, e + ARF_O_KEY, key);
	return e;
}

/* Commit j (jend) and release the entry oput locked (e 0: none). */
static __attribute__((noinline)) void oend(u64 j, u64 e)
{
	u64 tag = ar_ld64(arf, j + ARF_J_OWNER);
	jend(j);
	if (e != 0)
		(void)ar_cas(arf, e + ARF_O_LOCK, tag, 0);
}
