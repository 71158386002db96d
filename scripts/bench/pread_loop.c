/* pread_loop.c — the tightest file syscall loop: 1-byte preads of a cached file for N seconds.
 *
 * Usage: pread_loop FILE SECONDS
 * Prints one line: "calls N seconds S calls_per_s R cpu_seconds C calls_per_cpu_s K".
 * calls_per_cpu_s counts only the time this process ran (user + system, which includes the
 * BPF programs run on its syscalls), so other load on the machine does not move it; calls_per_s
 * is wall-clock throughput. Each call costs a few hundred ns
 * untraced, so this is where a tracer's fixed cost per syscall shows most; the floor
 * (empty BPF programs, probes/floor.bpf.c) and iowitness are measured against it by
 * scripts/bench/observers.py, which builds this file with cc -O2.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

int main(int argc, char **argv)
{
	char byte;
	unsigned long calls = 0;
	double start, cpu_start, cpu, elapsed = 0, seconds;
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
	cpu_start = clock_s(CLOCK_PROCESS_CPUTIME_ID);
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
	cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
	close(fd);
	printf("calls %lu seconds %.6f calls_per_s %.0f cpu_seconds %.6f calls_per_cpu_s %.0f\n",
	       calls, elapsed, calls / elapsed, cpu, calls / cpu);
	return 0;
}
