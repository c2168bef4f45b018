/* attach.c: making an image ready to serve, and the undo journal's roll-back.
 *
 * An operation that dies with arfd (SIGKILL) leaves its stores in the page cache: nothing
 * is lost, but the operation may be half done.  Its journal slot holds the old bytes of
 * everything it changed so far; rolling back restores them, newest first, so the tree is as
 * before the operation.  Allocation maps are not journalled: after an unclean stop they are
 * recomputed from the tree (docs/arf.md, "Crash consistency").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "arf_int.h"

#define MAX_UNDO ((ARF_J_SLOT_SIZE - ARF_J_HDR) / ARF_U_DATA)

static uint64_t pad8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

/* Parse slot k's committed records into pos[]; the count, or -1 with a message. */
static int parse_slot(const uint8_t *base, uint64_t len, const struct arf_sb *sb, unsigned k,
                      uint32_t pos[MAX_UNDO], char *err, size_t errlen)
{
	const uint8_t *slot = base + sb->journal_off + (uint64_t)k * ARF_J_SLOT_SIZE;
	const struct arf_jslot *j = (const struct arf_jslot *)slot;
	uint64_t room = ARF_J_SLOT_SIZE - ARF_J_HDR, p = 0;
	if (j->n_undo > MAX_UNDO) {
		snprintf(err, errlen, "slot %u claims %" PRIu64 " undo records, at most %d fit", k,
		         j->n_undo, (int)MAX_UNDO);
		return -1;
	}
	for (uint64_t r = 0; r < j->n_undo; r++) {
		if (room - p < ARF_U_DATA) {
			snprintf(err, errlen, "slot %u: undo record %" PRIu64 " runs past the slot", k, r);
			return -1;
		}
		const struct arf_undo *u = (const struct arf_undo *)(slot + ARF_J_HDR + p);
		/* operations journal tree structures only: inodes and the data area, and the
		 * keyed results' key, result and generation (never an entry's lock word) */
		uint64_t o = u->off - arf_once_off(sb);
		bool once = u->off >= arf_once_off(sb) && o < arf_once_n(sb) * ARF_O_SIZE &&
		            o % ARF_O_SIZE == ARF_O_KEY && u->len == ARF_O_SIZE - ARF_O_KEY;
		if (u->len > room - p - ARF_U_DATA || (u->off < sb->itable_off && !once) ||
		    u->off > len || u->len > len - u->off) {
			snprintf(err, errlen, "slot %u: undo record %" PRIu64 " (%" PRIu64 " bytes at %"
			         PRIu64 ") is outside the slot, the inode table and data area and the keyed results", k, r,
			         u->len, u->off);
			return -1;
		}
		pos[r] = (uint32_t)p;
		p += ARF_U_DATA + pad8(u->len);
	}
	return (int)j->n_undo;
}

int arf_journal_rollback(void *basev, uint64_t len, char *err, size_t errlen)
{
	uint8_t *base = basev;
	const struct arf_sb *sb = basev;
	uint32_t pos[MAX_UNDO];
	char e2[256];
	/* validate every slot before changing anything */
	for (unsigned k = 0; k < ARF_J_SLOTS; k++)
		if (parse_slot(base, len, sb, k, pos, e2, sizeof e2) < 0) {
			snprintf(err, errlen, "journal %s", e2);
			return -1;
		}
	int ops = 0;
	for (unsigned k = 0; k < ARF_J_SLOTS; k++) {
		uint8_t *slot = base + sb->journal_off + (uint64_t)k * ARF_J_SLOT_SIZE;
		struct arf_jslot *j = (struct arf_jslot *)slot;
		if (!j->owner && !j->n_undo && !j->used)
			continue;
		int n = parse_slot(base, len, sb, k, pos, e2, sizeof e2);
		for (int r = n - 1; r >= 0; r--) {
			const struct arf_undo *u = (const struct arf_undo *)(slot + ARF_J_HDR + pos[r]);
			memmove(base + u->off, u->data, u->len);
		}
		ops += n > 0;
		memset(j, 0, sizeof *j);
	}
	return ops;
}

struct first_problem {
	char text[512];
	unsigned n;
};

static void keep_first(void *user, enum arf_fsck_line kind, const char *line)
{
	struct first_problem *fp = user;
	if (kind == ARF_FSCK_PROBLEM && !fp->n++)
		snprintf(fp->text, sizeof fp->text, "%s", line);
}

int arf_attach(void *basev, uint64_t len, struct arf_attach_info *info, char *err, size_t errlen)
{
	struct arf_attach_info dummy;
	if (!info)
		info = &dummy;
	memset(info, 0, sizeof *info);
	char e2[512];
	if (arf_sb_check(basev, len, e2, sizeof e2) != 0) {
		snprintf(err, errlen, "%s", e2);
		return -1;
	}
	struct arf_sb *sb = basev;
	info->was_clean = sb->clean == 1;
	int n = arf_journal_rollback(basev, len, e2, sizeof e2);
	if (n < 0) {
		snprintf(err, errlen, "%s (run arf fsck --repair)", e2);
		return -1;
	}
	info->rolled_back = (unsigned)n;
	if (!info->was_clean || n > 0) {
		sb->clean = 0;             /* so the check treats the maps as derived */
		struct first_problem fp = { "", 0 };
		struct arf_fsck_opts o = { .repair = false, .report = keep_first, .user = &fp };
		struct arf_fsck_result res = { 0 };
		int rc = arf_fsck_mem(basev, len, &o, true, &res);
		if (rc != ARF_FSCK_CLEAN) {
			snprintf(err, errlen, "the image has %" PRIu64 " problems (first: %s): run arf "
			         "fsck --repair", res.problems, fp.text[0] ? fp.text : "?");
			return -1;
		}
		info->map_fixes = res.repaired;
	}
	if (sb->balloc_hint >= sb->bbmap_len / 8)
		sb->balloc_hint = 0;
	if (sb->ialloc_hint >= sb->ibmap_len / 8)
		sb->ialloc_hint = 0;
	info->epoch = ++sb->epoch;
	sb->clean = 0;
	/* the superblock saying "attached" reaches the disk before any operation runs, so a
	 * machine crash is seen as an unclean stop too */
	msync(basev, ARF_BLOCK_SIZE, MS_SYNC);
	return 0;
}

void arf_detach(void *basev, uint64_t len)
{
	struct arf_sb *sb = basev;
	/* everything first, then the flag that says everything is there */
	if (msync(basev, len, MS_SYNC) != 0)
		return;
	sb->clean = 1;
	msync(basev, ARF_BLOCK_SIZE, MS_SYNC);
}
