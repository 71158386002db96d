/* stdio_bench.c — a home-made benchmark of the kind a claims spec reads: it prints its
 * results as sentences, in units it chooses.
 *
 * Usage: stdio_bench FILE
 *   writes FILE (8 MiB through stdio in 64 KiB records, then fflush + fsync), reads it back
 *   the same way, then reads 2000 random 4 KiB records with pread. Prints, one per line:
 *
 *   Sequential write: 1234.5 MB/s       MB = 1,000,000 bytes, fsync included
 *   Sequential read: 5678.9 MB/s
 *   Random read: 250000 ops/s, 4.00 us/op
 *   Total: 0.012 s
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILE_BYTES (8L << 20)
#define RECORD (64 << 10)
#define RANDOM_RECORD 4096
#define RANDOM_READS 2000

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static char buf[RECORD];
	if (argc != 2) {
		fprintf(stderr, "usage: stdio_bench FILE\n");
		return 2;
	}
	memset(buf, 'x', sizeof buf);
	double start = now();

	/* sequential write, fsync inside the timing */
	FILE *f = fopen(argv[1], "w");
	if (!f) { perror(argv[1]); return 1; }
	double t0 = now();
	for (long done = 0; done < FILE_BYTES; done += RECORD)
		if (fwrite(buf, 1, RECORD, f) != RECORD) { perror("fwrite"); return 1; }
	if (fflush(f) || fsync(fileno(f))) { perror("fsync"); return 1; }
	double write_s = now() - t0;
	fclose(f);

	/* sequential read */
	f = fopen(argv[1], "r");
	if (!f) { perror(argv[1]); return 1; }
	t0 = now();
	for (long done = 0; done < FILE_BYTES; done += RECORD)
		if (fread(buf, 1, RECORD, f) != RECORD) { perror("fread"); return 1; }
	double read_s = now() - t0;
	fclose(f);

	/* random 4 KiB reads */
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) { perror(argv[1]); return 1; }
	srand(42);
	t0 = now();
	for (int i = 0; i < RANDOM_READS; i++) {
		off_t at = (off_t)(rand() % (FILE_BYTES / RANDOM_RECORD)) * RANDOM_RECORD;
		if (pread(fd, buf, RANDOM_RECORD, at) != RANDOM_RECORD) { perror("pread"); return 1; }
	}
	double random_s = now() - t0;
	close(fd);

	printf("Sequential write: %.1f MB/s\n", FILE_BYTES / write_s / 1e6);
	printf("Sequential read: %.1f MB/s\n", FILE_BYTES / read_s / 1e6);
	printf("Random read: %.0f ops/s, %.2f us/op\n", RANDOM_READS / random_s, random_s / RANDOM_READS * 1e6);
	printf("Total: %.3f s\n", now() - start);
	return 0;
}
