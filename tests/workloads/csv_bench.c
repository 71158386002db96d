/* csv_bench.c — a home-made benchmark that prints every test of its run on one CSV line, for
 * the spec tests (several figures on one line, each about its own test; a multiplier suffix).
 *
 * Usage: csv_bench DIR MIB SYNCS
 *   write:       DIR/a, MIB MiB in 64 KiB write(2) records (open and close outside the clock)
 *   read:        DIR/a read back in 64 KiB records
 *   random read: 2000 pread(2) of 4 KiB at random 4 KiB offsets of DIR/a opened again (fixed seed)
 *   sync write:  DIR/b, SYNCS records of 4 KiB, each write(2) followed by fdatasync(2)
 * Each test is timed from before its first call to after its last (the sync write's last
 * fdatasync included). Prints a header and one line:
 *
 *   record_kb,write_MBps,read_MBps,randread_iops,randread_us,syncwrite_MBps
 *   64,812.3,5120.4,402.1k,2.49,1.02
 *
 * MB = 1,000,000 bytes; randread_iops with a "k" suffix (thousands); randread_us = microseconds
 * per pread, the test's time over its calls.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_clock.h"

#define RECORD (64 * 1024)
#define SMALL 4096
#define RANDOM_READS 2000

static int open_in(const char *dir, const char *name, int flags)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, flags, 0644);
	if (fd < 0)
		die(path);
	return fd;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: csv_bench DIR MIB SYNCS\n");
		return 2;
	}
	long records = atol(argv[2]) * 1024 * 1024 / RECORD, syncs = atol(argv[3]);
	static char block[RECORD];
	memset(block, 'c', sizeof block);
	now();  /* resolve the clock before any test's clock runs */

	int fd = open_in(argv[1], "a", O_WRONLY | O_CREAT | O_TRUNC);
	double t0 = now();
	for (long r = 0; r < records; r++)
		if (write(fd, block, RECORD) != RECORD)
			die("write");
	double write_s = now() - t0;
	close(fd);

	fd = open_in(argv[1], "a", O_RDONLY);
	t0 = now();
	for (long r = 0; r < records; r++)
		if (read(fd, block, RECORD) != RECORD)
			die("read");
	double read_s = now() - t0;
	close(fd);

	/* a file opened again: the same fd's reads and preads would be one stretch of reading */
	fd = open_in(argv[1], "a", O_RDONLY);
	srand(7);
	long blocks = records * RECORD / SMALL;
	t0 = now();
	for (int i = 0; i < RANDOM_READS; i++)
		if (pread(fd, block, SMALL, (off_t)(rand() % blocks) * SMALL) != SMALL)
			die("pread");
	double random_s = now() - t0;
	close(fd);

	fd = open_in(argv[1], "b", O_WRONLY | O_CREAT | O_TRUNC);
	t0 = now();
	for (long r = 0; r < syncs; r++)
		if (write(fd, block, SMALL) != SMALL || fdatasync(fd))
			die("write+fdatasync");
	double sync_s = now() - t0;
	close(fd);

	double bytes = (double)records * RECORD;
	printf("record_kb,write_MBps,read_MBps,randread_iops,randread_us,syncwrite_MBps\n");
	printf("%d,%.1f,%.1f,%.1fk,%.2f,%.3f\n", RECORD / 1024, bytes / write_s / 1e6, bytes / read_s / 1e6,
	       RANDOM_READS / random_s / 1e3, random_s / RANDOM_READS * 1e6, syncs * (double)SMALL / sync_s / 1e6);
	return 0;
}
