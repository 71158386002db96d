/* threads_bench.c — a home-made multi-threaded benchmark: THREADS threads write one file (each
 * its own region) or a file each, and the program prints the total, for the claim tests.
 *
 * Usage: threads_bench one|many PATH THREADS MIB
 *   one:  every thread pwrites its MIB/THREADS MiB share of PATH in 4 KiB records;
 *   many: thread i pwrites MIB/THREADS MiB to PATH.i.
 * The clock runs from before the threads start to after the last one is joined; the files
 * are opened before and closed after it. Prints two lines about the one test:
 *
 *   write IOPS: 51234
 *   write MB/s: 209.8
 *
 * IOPS = 4 KiB records written per second, MB = 1,000,000 bytes, both over the whole test.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"

#define RECORD 4096

struct job {
	int fd;
	long first, records;
};

static void *writer(void *arg)
{
	struct job *j = arg;
	char block[RECORD];
	memset(block, 'w', sizeof block);
	for (long r = 0; r < j->records; r++)
		if (pwrite(j->fd, block, RECORD, (j->first + r) * RECORD) != RECORD) {
			perror("pwrite");
			exit(1);
		}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[1], "one") && strcmp(argv[1], "many"))) {
		fprintf(stderr, "usage: threads_bench one|many PATH THREADS MIB\n");
		return 2;
	}
	int many = !strcmp(argv[1], "many"), threads = atoi(argv[3]);
	long share = atol(argv[4]) * 1048576L / RECORD / threads;
	pthread_t tid[64];
	struct job jobs[64];
	if (threads < 1 || threads > 64)
		return 2;
	for (int i = 0; i < threads; i++) {
		char path[4096];
		snprintf(path, sizeof path, many ? "%s.%d" : "%s", argv[2], i);
		jobs[i].fd = (!many && i) ? jobs[0].fd : open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (jobs[i].fd < 0) {
			perror(path);
			return 1;
		}
		jobs[i].first = many ? 0 : i * share;
		jobs[i].records = share;
	}
	double t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, writer, &jobs[i]);
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	double seconds = now() - t0;
	long records = share * threads;
	printf("write IOPS: %.0f\n", records / seconds);
	printf("write MB/s: %.1f\n", records * (double)RECORD / seconds / 1e6);
	for (int i = 0; i < threads; i++)
		if (many || !i)
			close(jobs[i].fd);
	return 0;
}
