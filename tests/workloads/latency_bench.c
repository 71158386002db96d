/* latency_bench.c — a home-made latency benchmark: it times each request on its own and prints
 * one line per request and a ping-style summary, for the latency claim tests.
 *
 * Usage: latency_bench PATH COUNT SIZE [sync] [warmup]
 *   COUNT requests, each one pwrite of SIZE bytes at offset i * SIZE of PATH (created), timed
 *   alone with CLOCK_MONOTONIC; "sync": each request is the pwrite and an fdatasync of the file,
 *   timed together; "warmup": one more request comes first, untimed in the figures and unprinted.
 *   Prints, for the requests it counts (numbered from 1):
 *
 *   req 1 4096 bytes 12.345 us
 *   ...
 *   200 requests, min/avg/max/mdev = 10.123/12.345/98.765/3.210 us
 *
 * mdev as ping computes it: sqrt(mean(t^2) - mean(t)^2), the population standard deviation.
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_clock.h"

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: latency_bench PATH COUNT SIZE [sync] [warmup]\n");
		return 2;
	}
	long count = atol(argv[2]), size = atol(argv[3]);
	int sync = 0, warmup = 0;
	for (int a = 4; a < argc; a++) {
		sync |= !strcmp(argv[a], "sync");
		warmup |= !strcmp(argv[a], "warmup");
	}
	char *block = malloc(size);
	double *us = malloc(sizeof(double) * count);
	if (!block || !us || count < 1)
		die("malloc");
	memset(block, 'l', size);
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	/* the first clock read resolves clock_gettime through the dynamic linker: not a request's time */
	now();
	long first = warmup ? -1 : 0;
	for (long i = first; i < count; i++) {
		off_t at = (i - first) * size;
		double t0 = now();
		if (pwrite(fd, block, size, at) != size)
			die("pwrite");
		if (sync && fdatasync(fd))
			die("fdatasync");
		double t1 = now();
		if (i >= 0)
			us[i] = (t1 - t0) * 1e6;
	}
	if (close(fd))
		die("close");
	double min = us[0], max = us[0], sum = 0, sum2 = 0;
	for (long i = 0; i < count; i++) {
		printf("req %ld %ld bytes %.3f us\n", i + 1, size, us[i]);
		min = us[i] < min ? us[i] : min;
		max = us[i] > max ? us[i] : max;
		sum += us[i];
		sum2 += us[i] * us[i];
	}
	double avg = sum / count;
	double var = sum2 / count - avg * avg;
	printf("%ld requests, min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f us\n", count, min, avg, max,
	       sqrt(var > 0 ? var : 0));
	return 0;
}
