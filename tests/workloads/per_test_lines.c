/* per_test_lines.c — a benchmark of four tests in varied directions that prints one line after
 * each: the ground truth for each claim's window on the output timeline
 * (tests/kernel/test_claim_windows_real.py).
 *
 * Usage: per_test_lines PATH [GATE [end]]
 *   test 0 write   PATH.a: 2048 writes of 4 KiB
 *   test 1 read    PATH.a: 2048 reads of 4 KiB, opened again
 *   test 2 write   PATH.b: 1024 pwrites of 4 KiB
 *   test 3 read    PATH.b: 1024 preads of 4 KiB at offsets in a scrambled order
 *   Each test is timed from before its first call to after its last one (CLOCK_MONOTONIC);
 *   its file is opened before and closed after the clock. Then it prints (one write(2)):
 *
 *     test 2 write 812.3 MiB/s
 *
 *   and sleeps 200 ms. GATE (a path, or "-"): after test 0 it waits until GATE exists, so a
 *   test can attach between test 0 and test 1 without guessing a time. With "end", the four
 *   lines are kept and printed together after test 3 (one write each), as a benchmark that
 *   prints every result at its end.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_clock.h"

#define RECORD 4096

static int at_end;
static char kept[4][128];
static int kept_n[4];

static void report(int test, const char *op, long records, double seconds)
{
	char *line = kept[test];
	int n = snprintf(line, sizeof kept[test], "test %d %s %.1f MiB/s\n", test, op,
			 records * (double)RECORD / (1 << 20) / seconds);
	kept_n[test] = n;
	if (!at_end && write(1, line, n) != n)
		die("write");
}

static void run(int test, const char *path, int writing, int positioned, long records)
{
	static char block[RECORD];
	int fd = open(path, writing ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY, 0644);
	if (fd < 0)
		die("open");
	double begin = now();
	for (long r = 0; r < records; r++) {
		long at = (r * 389) % records * RECORD;   /* 389 is prime to 1024: every record once */
		ssize_t done = positioned ? (writing ? pwrite(fd, block, RECORD, r * RECORD) : pread(fd, block, RECORD, at))
					  : (writing ? write(fd, block, RECORD) : read(fd, block, RECORD));
		if (done != RECORD)
			die(writing ? "write" : "read");
	}
	double seconds = now() - begin;
	close(fd);
	report(test, writing ? "write" : "read", records, seconds);
}

int main(int argc, char **argv)
{
	char a[4096], b[4096];
	if (argc < 2) {
		fprintf(stderr, "usage: per_test_lines PATH [GATE]\n");
		return 2;
	}
	at_end = argc > 3 && !strcmp(argv[3], "end");
	snprintf(a, sizeof a, "%s.a", argv[1]);
	snprintf(b, sizeof b, "%s.b", argv[1]);
	run(0, a, 1, 0, 2048);
	if (argc > 2 && strcmp(argv[2], "-") != 0)
		while (access(argv[2], F_OK) != 0)
			usleep(10000);
	usleep(200000);
	run(1, a, 0, 0, 2048);
	usleep(200000);
	run(2, b, 1, 1, 1024);
	usleep(200000);
	run(3, b, 0, 1, 1024);
	for (int t = 0; at_end && t < 4; t++)
		if (write(1, kept[t], kept_n[t]) != kept_n[t])
			die("write");
	return 0;
}
