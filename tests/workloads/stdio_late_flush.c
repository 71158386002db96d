/* stdio_late_flush.c — a stdio benchmark whose stream's last full buffer reaches the kernel
 * only at fclose, after the program has stopped its clock and done other work.
 *
 * Usage: stdio_late_flush FILE
 *   40,960 records of 100 bytes with fwrite (4,096,000 bytes: exactly 1,000 blocks of 4 KiB,
 *   so glibc holds the last full block until fclose), the clock stopped after the loop, then
 *   0.2 s of other work (as a benchmark that computes its report), then fclose. Prints:
 *
 *   Write: 412.7 MB/s
 *
 * MB = 1,000,000 bytes, the bytes the program wrote over its loop's time.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"

#define RECORDS 40960
#define RECORD 100

int main(int argc, char **argv)
{
	char record[RECORD];
	if (argc != 2) {
		fprintf(stderr, "usage: stdio_late_flush FILE\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	memset(record, 'r', sizeof record);
	double t0 = now();
	for (long i = 0; i < RECORDS; i++)
		if (fwrite(record, RECORD, 1, f) != 1) {
			perror("fwrite");
			return 1;
		}
	double seconds = now() - t0;
	printf("Write: %.1f MB/s\n", (double)RECORDS * RECORD / seconds / 1e6);
	fflush(stdout);
	usleep(200000);
	return fclose(f) ? 1 : 0;
}
