/* bench_clock.h — what the home-made benchmarks in tests/workloads share: their clock, as
 * such programs time themselves (CLOCK_MONOTONIC, in seconds), and how they give up. */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static inline void die(const char *what)
{
	perror(what);
	exit(1);
}

#endif
