/* pread_loop.c — the tightest file syscall loop: 1-byte preads of a cached file for N seconds.
 *
 * Usage: pread_loop FILE SECONDS
 * Prints one line: "calls N seconds S calls_per_s R". Each call costs a few hundred ns
 * untraced, so this is where a tracer's fixed cost per syscall shows most; the floor
 * (empty BPF programs, probes/floor.bpf.c) and iowitness are measured against it by
 * scripts/bench/observers.py, which builds this file with cc -O2.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char byte;
	unsigned long calls = 0;
	double start, elapsed = 0, seconds;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: %s FILE SECONDS\n", argv[0]);
		return 2;
	}
	seconds = atof(argv[2]);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	start = now();
	/* read the clock once per 4096 calls: clock_gettime is a vDSO call, not a syscall,
	 * but keeping it out of the loop keeps the loop what it says */
	while (elapsed < seconds) {
		for (int i = 0; i < 4096; i++) {
			if (pread(fd, &byte, 1, 0) != 1) {
				perror("pread");
				return 1;
			}
		}
		calls += 4096;
		elapsed = now() - start;
	}
	close(fd);
	printf("calls %lu seconds %.6f calls_per_s %.0f\n", calls, elapsed, calls / elapsed);
	return 0;
}
