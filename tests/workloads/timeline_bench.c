/* timeline_bench.c — a home-made benchmark that prints one result line after each of its
 * three tests, each line carrying its own CLOCK_MONOTONIC reading: the ground truth for the
 * output timeline (tests/kernel/test_output_timeline.py).
 *
 * Usage: timeline_bench PATH [GATE] [big]
 *   Test i (0, 1, 2) writes PATH.i: 1024 writes of 4 KiB, fsync, close; then the line
 *
 *     test 1 write 812.3 MiB/s clock 123456789012
 *
 *   (clock: CLOCK_MONOTONIC in ns read just before the line is written, one write(2) per
 *   line) and a line on stderr ("done 1"). Between two tests it sleeps 200 ms.
 *   GATE (a path, or "-" for none): after test 0 it waits until GATE exists, so that a test
 *   can attach to it between test 0 and test 1 without guessing a time.
 *   big: after the tests, one write of 10,000 bytes to stdout (40 lines of 249 'x' and a newline).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"

#define RECORD 4096
#define RECORDS 1024

static long long clock_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void say(int fd, const char *text)
{
	size_t n = strlen(text);
	if (write(fd, text, n) != (ssize_t)n)
		die("write");
}

int main(int argc, char **argv)
{
	static char block[RECORD];
	char name[4096], line[256];

	if (argc < 2) {
		fprintf(stderr, "usage: timeline_bench PATH [GATE] [big]\n");
		return 2;
	}
	memset(block, 't', sizeof block);
	for (int test = 0; test < 3; test++) {
		snprintf(name, sizeof name, "%s.%d", argv[1], test);
		int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("open");
		double begin = now();
		for (int r = 0; r < RECORDS; r++)
			if (write(fd, block, RECORD) != RECORD)
				die("write");
		if (fsync(fd) || close(fd))
			die("fsync");
		double rate = RECORDS * (double)RECORD / (1 << 20) / (now() - begin);
		snprintf(line, sizeof line, "test %d write %.1f MiB/s clock %lld\n", test, rate, clock_ns());
		say(1, line);
		snprintf(line, sizeof line, "done %d\n", test);
		say(2, line);
		if (test == 0 && argc > 2 && strcmp(argv[2], "-") != 0)
			while (access(argv[2], F_OK) != 0)
				usleep(10000);
		if (test < 2)
			usleep(200000);
	}
	if (argc > 3 && strcmp(argv[3], "big") == 0) {
		static char big[10000];
		for (int i = 0; i < 10000; i++)
			big[i] = (i % 250 == 249) ? '\n' : 'x';
		if (write(1, big, sizeof big) != sizeof big)
			die("write");
	}
	return 0;
}
