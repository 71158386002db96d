/* ops_bench.c — a home-made benchmark whose operation is several calls, for the tests of
 * operations of several calls (analysis/operations.py).
 *
 * Usage:
 *   ops_bench groups DIR OPS      three methods, each on its own file DIR/m<k>, OPS operations each:
 *                                   "8w+fdatasync"  8 writes of 4 KiB, then fdatasync
 *                                   "2w+fdatasync"  2 writes of 4 KiB, then fdatasync
 *                                   "4w-dsync"      4 writes of 512 B on a file opened O_DSYNC
 *                                 each timed as a whole (the first operation's start to the last
 *                                 one's end) and printed as
 *                                   8w+fdatasync: 1234.5 ops/sec, 810.12 us/op
 *   ops_bench openclose PATH OPS  OPS operations, each open(PATH), one 256 KiB write at offset 0, close,
 *                                 each timed alone:
 *                                   openclose: 1234.5 ops/s, mean latency 810.12 us
 *   ops_bench files DIR COUNT     COUNT new files DIR/f<k>, each open (O_CREAT), one 1 KiB
 *                                 write, close:
 *                                   created 2000 files: 12345.6 files/s
 *
 * Every count is exact: the tests check the trace's calls against them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_clock.h"

static char block[256 * 1024];

static void method(const char *dir, const char *name, int k, long ops, int writes, size_t size, int dsync)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/m%d", dir, k);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | (dsync ? O_DSYNC : 0), 0644);
	if (fd < 0)
		die("open");
	double t0 = now();
	for (long i = 0; i < ops; i++) {
		for (int w = 0; w < writes; w++)
			if (write(fd, block, size) != (ssize_t)size)
				die("write");
		if (!dsync && fdatasync(fd))
			die("fdatasync");
	}
	double t = now() - t0;
	if (close(fd))
		die("close");
	printf("%s: %.1f ops/sec, %.2f us/op\n", name, ops / t, t / ops * 1e6);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: ops_bench groups DIR OPS | openclose PATH OPS | files DIR COUNT\n");
		return 2;
	}
	long n = atol(argv[3]);
	if (n < 1)
		die("count");
	memset(block, 'o', sizeof block);
	/* the first clock read resolves clock_gettime through the dynamic linker: not an operation's time */
	now();
	if (!strcmp(argv[1], "groups")) {
		method(argv[2], "8w+fdatasync", 1, n, 8, 4096, 0);
		method(argv[2], "2w+fdatasync", 2, n, 2, 4096, 0);
		method(argv[2], "4w-dsync", 3, n, 4, 512, 1);
	} else if (!strcmp(argv[1], "openclose")) {
		double total = 0, t0 = now();
		for (long i = 0; i < n; i++) {
			double s = now();
			int fd = open(argv[2], O_WRONLY | O_CREAT, 0644);
			if (fd < 0)
				die("open");
			if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
				die("write");
			if (close(fd))
				die("close");
			total += now() - s;
		}
		double t = now() - t0;
		printf("openclose: %.1f ops/s, mean latency %.2f us\n", n / t, total / n * 1e6);
	} else if (!strcmp(argv[1], "files")) {
		char path[4096];
		double t0 = now();
		for (long i = 0; i < n; i++) {
			snprintf(path, sizeof path, "%s/f%06ld", argv[2], i);
			int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0)
				die("open");
			if (write(fd, block, 1024) != 1024)
				die("write");
			if (close(fd))
				die("close");
		}
		double t = now() - t0;
		printf("created %ld files: %.1f files/s\n", n, n / t);
	} else {
		fprintf(stderr, "ops_bench: unknown mode %s\n", argv[1]);
		return 2;
	}
	return 0;
}
