/* warmup_clients.c — a two-client benchmark with a timed warm-up that resets its statistics:
 * the ground truth for a claim's timed period (tests/kernel/test_claim_windows_real.py).
 *
 * Usage: warmup_clients PATH WARMUP_S PERIOD_S
 *   Two threads (the clients) each pwrite 4 KiB records to a file of their own, PATH.0 and
 *   PATH.1, at the next offset, sleeping 100 µs between two calls. The benchmark's one clock
 *   starts when the first client passes the barrier the two wait at (the other may be
 *   scheduled later); for WARMUP_S seconds from it, the calls are the warm-up; each client's
 *   first call that starts after them resets its statistics (bytes, calls, max latency), and
 *   the timed period runs PERIOD_S seconds more. Each call is timed alone (CLOCK_MONOTONIC
 *   before and after the pwrite). Then it prints:
 *
 *     clients: 2, warm-up 1.00 s, timed 1.00 s
 *     timed calls: 15234
 *     write: 12.34 MB/s
 *     max latency: 56.789 us
 *
 *   MB/s: the bytes of both clients' timed calls, 10^6 bytes, over the time from the first
 *   timed call's start to the last one's end; max latency: the longest timed call.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_clock.h"

#define RECORD 4096

struct client {
	int fd;
	double warmup, period;
	long calls;
	double bytes, max, first, last;
};

static pthread_barrier_t together;
static long long started;   /* the benchmark's start, in ns: set once, by the first client */

static void *client(void *arg)
{
	struct client *c = arg;
	static const char block[RECORD];
	long offset = 0;
	int timed = 0;
	pthread_barrier_wait(&together);
	__sync_val_compare_and_swap(&started, 0LL, (long long)(now() * 1e9));
	double start = __atomic_load_n(&started, __ATOMIC_SEQ_CST) / 1e9;
	for (;;) {
		double t0 = now();
		if (!timed && t0 >= start + c->warmup) {
			timed = 1;   /* the warm-up is over: its figures are forgotten */
			c->calls = 0, c->bytes = 0, c->max = 0, c->first = t0;
		}
		if (timed && t0 >= start + c->warmup + c->period)
			break;
		if (pwrite(c->fd, block, RECORD, offset) != RECORD)
			die("pwrite");
		double t1 = now();
		offset += RECORD;
		c->calls++, c->bytes += RECORD, c->last = t1;
		if (t1 - t0 > c->max)
			c->max = t1 - t0;
		usleep(100);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: warmup_clients PATH WARMUP_S PERIOD_S\n");
		return 2;
	}
	struct client c[2];
	pthread_t tid[2];
	pthread_barrier_init(&together, NULL, 2);
	for (int i = 0; i < 2; i++) {
		char name[4096];
		snprintf(name, sizeof name, "%s.%d", argv[1], i);
		memset(&c[i], 0, sizeof c[i]);
		c[i].fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (c[i].fd < 0)
			die("open");
		c[i].warmup = atof(argv[2]), c[i].period = atof(argv[3]);
	}
	for (int i = 0; i < 2; i++)
		if (pthread_create(&tid[i], NULL, client, &c[i]))
			die("pthread_create");
	for (int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	double first = c[0].first < c[1].first ? c[0].first : c[1].first;
	double last = c[0].last > c[1].last ? c[0].last : c[1].last;
	double max = c[0].max > c[1].max ? c[0].max : c[1].max;
	printf("clients: 2, warm-up %.2f s, timed %.2f s\n", c[0].warmup, c[0].period);
	printf("timed calls: %ld\n", c[0].calls + c[1].calls);
	printf("write: %.2f MB/s\n", (c[0].bytes + c[1].bytes) / 1e6 / (last - first));
	printf("max latency: %.3f us\n", max * 1e6);
	for (int i = 0; i < 2; i++)
		close(c[i].fd);
	return 0;
}
