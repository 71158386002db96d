/* crowd.c — a benchmark that drives the probe's sets past their sizes, with I/O known exactly.
 *
 *   crowd files DIR N     creates DIR/file-0 .. DIR/file-{N-1}: open, one 4096-byte write, close;
 *                         prints the rate it timed from the first open to the last close
 *   crowd forks DIR N     N children one after the other; child i opens DIR/shared, writes one
 *                         byte at offset i with pwrite, closes and exits before the next is made
 *   crowd alive DIR N     N children alive at once (each waits until all are made), then each
 *                         does what a `forks` child does
 *   crowd reuse DIR       one child writes 100 bytes to DIR/shared and exits; its PID goes to
 *                         DIR/child.pid; then crowd waits (at most 60 s) until DIR/go exists
 *
 * Each prints what it did, one line, e.g. "crowd: 30 files, 122880 bytes, 61.2 MB/s". Exit 0 on success;
 * any failed call prints its errno and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "crowd: %s: %s\n", what, strerror(errno));
	exit(1);
}

static char *path_in(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		die("asprintf");
	return p;
}

static void write_one_byte(const char *shared, long i)
{
	int fd = open(shared, O_WRONLY);

	if (fd < 0)
		die("open shared");
	if (pwrite(fd, "x", 1, i) != 1)
		die("pwrite");
	if (close(fd))
		die("close");
}

static void files(const char *dir, long n)
{
	static char block[4096];
	struct timespec t0, t1;
	double seconds;

	memset(block, 'f', sizeof(block));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		char name[64];
		char *p;
		int fd;

		snprintf(name, sizeof(name), "file-%ld", i);
		p = path_in(dir, name);
		fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (fd < 0)
			die("open");
		if (write(fd, block, sizeof(block)) != sizeof(block))
			die("write");
		if (close(fd))
			die("close");
		free(p);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	seconds = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("crowd: %ld files, %ld bytes, %.3f MB/s\n", n, n * (long)sizeof(block),
	       n * (double)sizeof(block) / seconds / 1e6);
}

static void create_shared(const char *shared)
{
	int fd = open(shared, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	if (fd < 0 || close(fd))
		die("create shared");
}

static void wait_all(long n)
{
	for (long i = 0; i < n; i++) {
		int status;

		if (wait(&status) < 0)
			die("wait");
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			die("a child failed");
	}
}

static void forks(const char *dir, long n)
{
	char *shared = path_in(dir, "shared");

	create_shared(shared);
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			write_one_byte(shared, i);
			_exit(0);
		}
		wait_all(1);
	}
	printf("crowd: %ld children one after the other, %ld bytes\n", n, n);
}

static void alive(const char *dir, long n)
{
	char *shared = path_in(dir, "shared");
	int gate[2];

	create_shared(shared);
	if (pipe(gate))
		die("pipe");
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		char c;

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			/* every child is alive until the parent closes the gate's write end */
			close(gate[1]);
			if (read(gate[0], &c, 1) < 0)
				die("read gate");
			write_one_byte(shared, i);
			_exit(0);
		}
	}
	close(gate[1]);
	wait_all(n);
	printf("crowd: %ld children alive at once, %ld bytes\n", n, n);
}

static void reuse(const char *dir)
{
	char *shared = path_in(dir, "shared"), *go = path_in(dir, "go"), *pidfile = path_in(dir, "child.pid");
	char hundred[100];
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	FILE *f;
	pid_t pid;

	create_shared(shared);
	memset(hundred, 'c', sizeof(hundred));
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int fd = open(shared, O_WRONLY);

		if (fd < 0 || write(fd, hundred, sizeof(hundred)) != sizeof(hundred) || close(fd))
			die("child write");
		_exit(0);
	}
	wait_all(1);
	f = fopen(pidfile, "w");
	if (!f || fprintf(f, "%d\n", pid) < 0 || fclose(f))
		die("child.pid");
	for (int i = 0; i < 6000 && access(go, F_OK); i++)
		nanosleep(&tick, NULL);
	printf("crowd: child %d wrote 100 bytes and exited\n", pid);
}

int main(int argc, char **argv)
{
	long n = argc > 3 ? atol(argv[3]) : 0;

	if (argc >= 4 && !strcmp(argv[1], "files"))
		files(argv[2], n);
	else if (argc >= 4 && !strcmp(argv[1], "forks"))
		forks(argv[2], n);
	else if (argc >= 4 && !strcmp(argv[1], "alive"))
		alive(argv[2], n);
	else if (argc >= 3 && !strcmp(argv[1], "reuse"))
		reuse(argv[2]);
	else {
		fprintf(stderr, "usage: crowd files|forks|alive DIR N, or crowd reuse DIR\n");
		return 2;
	}
	return 0;
}
