/* segpath.c: finding the operations' segment files for the `arf` command (arf_cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arf_cli.h"

char *arf_seg_path(const char *env, const char *name)
{
	const char *e = getenv(env);
	if (e)
		return strdup(e);
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			/* BUILD/arf beside BUILD/arfseg; PREFIX/bin/arf beside PREFIX/lib/activerdma
			 * (make install) */
			static const char *const beside[] = { "%s/arfseg/%s",
			                                      "%s/../lib/activerdma/arfseg/%s" };
			for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++) {
				char *p;
				if (asprintf(&p, beside[i], self, name) < 0)
					continue;
				if (access(p, R_OK) == 0)
					return p;
				free(p);
			}
		}
	}
	char *p;
	return asprintf(&p, "build/arfseg/%s", name) >= 0 ? p : NULL;
}

/* An endpoint never holds ":/" (tcp:HOST:PORT, [v6]:PORT included), so the first splits. */
int arf_split_remote(const char *s, char **endpoint, const char **path)
{
	const char *cut = strstr(s, ":/");
	if (!cut || cut == s)
		return -1;
	*endpoint = strndup(s, (size_t)(cut - s));
	*path = cut + 1;
	return *endpoint ? 0 : -1;
}
