/* arf_fork.h: an arfd serving an ARF image in a forked child, for the tests that SIGKILL
 * it (test_arf_data, test_arf_ops, test_arf_crash).  Included by each test (static: one
 * copy per test program). */
#ifndef ARF_FORK_H
#define ARF_FORK_H

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server.h"

/* A forked arfd serving img on loopback tcp; its endpoint in ep.  The child's pid, or -1
 * (the child's reason on stderr). */
static pid_t fork_server(const char *img, char ep[256])
{
	int pfd[2];
	if (pipe(pfd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		static struct arfd_config cfg;
		char err[512], e[256] = "";
		cfg.listen[cfg.n_listen++] = "tcp:127.0.0.1:0";
		cfg.arf_image = img;
		/* hooks nearly free (a unit per second): the tests step the fuel to stop runs at
		 * each instruction, which the time a sync takes must not shift */
		cfg.hook_fuel_ns = 1000000000;
		struct arfd *s = arfd_start(&cfg, err, sizeof err);
		if (s)
			snprintf(e, sizeof e, "%s", arfd_endpoint(s, "tcp"));
		else
			fprintf(stderr, "arfd: %s\n", err);
		if (write(pfd[1], e, sizeof e) != (ssize_t)sizeof e)
			_exit(1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ssize_t got = read(pfd[0], ep, 256);
	close(pfd[0]);
	if (got != 256 || !ep[0]) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

#endif
