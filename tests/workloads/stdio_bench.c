/* stdio_bench.c — a home-made file-system benchmark in the style of the seed study
 * 004 (a C program on stdio: fprintf, fputc, fgetc, fseek), for the verdict tests.
 *
 * Usage: stdio_bench FILE MIB [OPS]
 *   1. sequential write: MIB MiB of 100-byte text records with fprintf and fputc, plus a
 *      1000-byte tail record, so the stream's last buffer is partly full (968 bytes at 32 MiB);
 *   2. random read: OPS times fseek to a random block and read one 100-byte record with fgetc;
 *   3. sequential read: the whole file with fgetc;
 *   4. random write: OPS times fseek to a random block and fprintf one 100-byte record.
 * Each test opens the file, starts its clock, loops, stops its clock and only then calls
 * fclose, as the seed's program does: the stream's final flush (the bytes still in its
 * buffer) reaches the kernel after the clock stopped. Prints one line per test:
 *
 *   Sequential write: 412.7 MB/s
 *   Random read: 23.1 MB/s
 *   Sequential read: 301.9 MB/s
 *   Random write: 36.5 MB/s
 *
 * MB = 1,000,000 bytes, counted as the program sees them: bytes it printed or got.
 *
 * What the kernel sees instead (glibc, st_blksize 4096): writes of 4096 bytes and a final
 * shorter one from fclose; for the random read, an lseek to the block and a 4096-byte read
 * per record (41 times the bytes the program uses); for the random write, each record
 * flushed as a 100-byte write by the next fseek, the last one by fclose.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"

#define RECORD 100
#define TAIL 1000
#define BLOCK 4096L

/* a 100-byte record: 99 characters of text and a newline */
static void put_record(FILE *f, long i)
{
	if (fprintf(f, "record %010ld ", i) != 18)
		die("fprintf");
	for (int k = 18; k < RECORD - 1; k++)
		if (fputc('a' + (i + k) % 26, f) == EOF)
			die("fputc");
	if (fputc('\n', f) == EOF)
		die("fputc");
}

static FILE *open_or_die(const char *path, const char *mode)
{
	FILE *f = fopen(path, mode);
	if (!f)
		die(path);
	return f;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: stdio_bench FILE MIB [OPS]\n");
		return 2;
	}
	const char *path = argv[1];
	long records = atol(argv[2]) * 1048576L / RECORD;
	long ops = argc == 4 ? atol(argv[3]) : 20000;
	long size = records * RECORD + TAIL;
	long blocks = size / BLOCK;
	srand(42);

	/* sequential write */
	FILE *f = open_or_die(path, "w");
	double t0 = now();
	for (long i = 0; i < records; i++)
		put_record(f, i);
	if (fprintf(f, "%0*d\n", TAIL - 1, 0) != TAIL)
		die("fprintf");
	double write_s = now() - t0;
	fclose(f);  /* after the clock: the last partial buffer is written here */

	/* random read: one record at the start of a random block */
	f = open_or_die(path, "r");
	long got = 0;
	t0 = now();
	for (long n = 0; n < ops; n++) {
		if (fseek(f, (rand() % blocks) * BLOCK, SEEK_SET))
			die("fseek");
		for (int k = 0; k < RECORD; k++, got++)
			if (fgetc(f) == EOF)
				die("fgetc");
	}
	double random_read_s = now() - t0;
	fclose(f);

	/* sequential read */
	f = open_or_die(path, "r");
	long seen = 0;
	t0 = now();
	while (fgetc(f) != EOF)
		seen++;
	double read_s = now() - t0;
	fclose(f);
	if (seen != size) {
		fprintf(stderr, "read %ld bytes of %ld\n", seen, size);
		return 1;
	}

	/* random write: one record at the start of a random block */
	f = open_or_die(path, "r+");
	t0 = now();
	for (long n = 0; n < ops; n++) {
		if (fseek(f, (rand() % blocks) * BLOCK, SEEK_SET))
			die("fseek");
		put_record(f, n);
	}
	double random_write_s = now() - t0;
	fclose(f);  /* after the clock: the last record is written here */

	printf("Sequential write: %.1f MB/s\n", size / write_s / 1e6);
	printf("Random read: %.1f MB/s\n", got / random_read_s / 1e6);
	printf("Sequential read: %.1f MB/s\n", seen / read_s / 1e6);
	printf("Random write: %.1f MB/s\n", ops * RECORD / random_write_s / 1e6);
	return 0;
}
