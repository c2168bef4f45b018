/* arf_check.h: what the ARF unit tests (test_arf_ops, test_arf_data, test_arf_image) share:
 * counting checks (CHECK), paths in the test's temporary directory (dir, path_of), and fsck
 * with its report collected (fsck, fsck_clean).  Included by each test (static: one copy per
 * test program), after <stdio.h>, <stdbool.h> and "arf.h". */
#ifndef ARF_CHECK_H
#define ARF_CHECK_H

static int passed, failed;

#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

static char dir[256];

/* dir/name, in one of four rotating buffers: copy it to keep it longer */
static const char *path_of(const char *name)
{
	static char buf[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
	return buf[k];
}

/* the last fsck's report, its lines as fsck printed them ("note: " before the notes) */
static char report[1 << 16];
static size_t report_len;

static void collect(void *user, enum arf_fsck_line kind, const char *line)
{
	(void)user;
	int n = snprintf(report + report_len, sizeof report - report_len, "%s%s\n",
	                 kind == ARF_FSCK_NOTE ? "note: " : "", line);
	if (n > 0 && (size_t)n < sizeof report - report_len)
		report_len += (size_t)n;
}

/* fsck of the image at path (repairing it when asked): its exit status, the report in report */
static int fsck(const char *path, bool repair)
{
	report_len = 0;
	report[0] = '\0';
	struct arf_fsck_opts o = { .repair = repair, .report = collect };
	struct arf_fsck_result r;
	return arf_fsck(path, &o, &r);
}

/* A check that the image at img is clean; what says when (a failure prints the report) */
static inline void fsck_clean(const char *what, const char *img)
{
	int rc = fsck(img, false);
	CHECK(rc == ARF_FSCK_CLEAN, "%s: fsck exit %d:\n%s", what, rc, report);
}

#endif
