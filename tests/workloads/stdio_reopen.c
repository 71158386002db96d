/* stdio_reopen.c — a home-made stdio benchmark that keeps its first stream open while it
 * opens the same file again, for the phase tests (issue: "phases per open file").
 *
 * Usage: stdio_reopen FILE MIB OPS
 *   1. sequential write: fopen "w", MIB MiB of 100-byte records with fprintf, fflush; the
 *      stream is left open until the very end of the program;
 *   2. random read: fopen "r", OPS times fseek to a random record and read it with fgetc, fclose;
 *   3. sequential read: fopen "r", the whole file with fgetc, fclose;
 *   4. random write: fopen "r+", OPS times fseek to a random record and fprintf one, fclose.
 * Each test times its loop only (its fopen and fclose are outside the clock). Prints one line
 * per test, MB = 1,000,000 bytes, counted as the program sees them:
 *
 *   Sequential write: 412.7 MB/s
 *   Random read: 23.1 MB/s
 *   Sequential read: 301.9 MB/s
 *   Random write: 36.5 MB/s
 *
 * What the kernel sees: four open file descriptions of one file, the first one open across
 * the other three; 4096-byte writes and reads through the streams' buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"

#define RECORD 100

static FILE *open_or_die(const char *path, const char *mode)
{
	FILE *f = fopen(path, mode);
	if (!f)
		die(path);
	return f;
}

static void put_record(FILE *f, long i)
{
	if (fprintf(f, "record %010ld %81s\n", i, "x") != RECORD)
		die("fprintf");
}

static void report(const char *test, long bytes, double seconds)
{
	printf("%s: %.1f MB/s\n", test, bytes / seconds / 1e6);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: stdio_reopen FILE MIB OPS\n");
		return 2;
	}
	const char *path = argv[1];
	long records = atol(argv[2]) * 1048576L / RECORD, ops = atol(argv[3]);
	srand(7);

	FILE *w = open_or_die(path, "w");
	double t0 = now();
	for (long i = 0; i < records; i++)
		put_record(w, i);
	if (fflush(w))
		die("fflush");
	report("Sequential write", records * RECORD, now() - t0);

	FILE *r = open_or_die(path, "r");
	long got = 0;
	t0 = now();
	for (long i = 0; i < ops; i++) {
		if (fseek(r, (rand() % records) * RECORD, SEEK_SET))
			die("fseek");
		for (int k = 0; k < RECORD; k++, got++)
			if (fgetc(r) == EOF)
				die("fgetc");
	}
	report("Random read", got, now() - t0);
	fclose(r);

	r = open_or_die(path, "r");
	got = 0;
	t0 = now();
	while (fgetc(r) != EOF)
		got++;
	report("Sequential read", got, now() - t0);
	fclose(r);

	FILE *u = open_or_die(path, "r+");
	t0 = now();
	for (long i = 0; i < ops; i++) {
		if (fseek(u, (rand() % records) * RECORD, SEEK_SET))
			die("fseek");
		put_record(u, i);
	}
	report("Random write", ops * RECORD, now() - t0);
	fclose(u);

	fclose(w);
	fflush(stdout);
	return 0;
}
