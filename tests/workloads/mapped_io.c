/* mapped_io.c — a workload that moves a file's bytes through two memory mappings, and says how.
 *
 * Usage: mapped_io FILE SIZE_KIB LOG_PATH
 *   FILE is created (SIZE_KIB KiB, a multiple of 64) and left in place, with FILE.copy. Every call made on the
 *   file's mappings, and what each pass saw, is appended to LOG_PATH as one JSON line (the
 *   ground truth of tests/kernel/test_mmap.py); the same lines go to stdout.
 *
 * The sequence (P = SIZE_KIB / 4 pages of 4 KiB):
 *   1  open O_RDWR|O_CREAT|O_TRUNC; write the file with write(2) in 64 KiB pieces; fsync:
 *      every page is in the page cache, so the write pass below reads nothing
 *   2  mmap(NULL, size, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0); store one byte at the start
 *      of each page, first access a store: one write fault per page
 *   3  msync(whole mapping, MS_SYNC); munmap(whole mapping)
 *   4  posix_fadvise(DONTNEED) on the (now clean) file: its pages leave the page cache
 *   5  mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0); mincore counts pages resident before
 *      the read; load one byte of each page; the sum of the bytes is checked
 *   6  madvise(second half, MADV_DONTNEED)
 *   7  write(2) 64 KiB from the start of that half into FILE.copy (not mapped, so the kernel
 *      faults the pages in itself, in kernel mode); munmap(whole mapping); close
 * Each pass logs the process's minor and major fault counts (getrusage) before and after.
 *
 * Example log lines:
 *   {"call": "mmap", "offset": 0, "length": 4194304, "prot": 3, "flags": 1, "ret": 140187...}
 *   {"call": "msync", "addr": 140187..., "offset": 0, "length": 4194304, "flags": 4, "ret": 0}
 *   {"pass": "read", "pages": 1024, "resident_before": 0, "minflt": 70, "majflt": 8}
 *
 * Build: gcc -O1 -pthread -Wall -Werror -o mapped_io mapped_io.c   (tests/support/workload.py)
 * Overhead: a few MiB written and read once; well under a second on a loop device.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define PAGE 4096L

static FILE *logf;

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(logf, fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(logf);
	fflush(stdout);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void faults(long *minflt, long *majflt)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*minflt = ru.ru_minflt;
	*majflt = ru.ru_majflt;
}

int main(int argc, char **argv)
{
	long size, pages, min0, maj0, min1, maj1, resident = 0, sum = 0;
	unsigned char *vec;
	char piece[64 * 1024];
	char *p;
	char copy_path[4096];
	int fd, copy, ret;

	if (argc != 4) {
		fprintf(stderr, "usage: mapped_io FILE SIZE_KIB LOG_PATH\n");
		return 2;
	}
	size = atol(argv[2]) * 1024;
	pages = size / PAGE;
	if (size <= 0 || size % sizeof(piece)) {
		fprintf(stderr, "mapped_io: SIZE_KIB must be a positive multiple of 64\n");
		return 2;
	}
	snprintf(copy_path, sizeof(copy_path), "%s.copy", argv[1]);
	logf = fopen(argv[3], "a");
	if (!logf)
		die("log");

	/* 1: the file, written with write(2): all of it in the page cache */
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	memset(piece, 'a', sizeof(piece));
	for (long done = 0; done < size; done += sizeof(piece))
		if (write(fd, piece, sizeof(piece)) != sizeof(piece))
			die("write");
	if (fsync(fd))
		die("fsync");
	say("{\"file\": \"%s\", \"size\": %ld, \"pages\": %ld}\n", argv[1], size, pages);

	/* 2: a shared writable mapping, one store per page */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	say("{\"call\": \"mmap\", \"offset\": 0, \"length\": %ld, \"prot\": %d, \"flags\": %d, \"ret\": %lu}\n",
	    size, PROT_READ | PROT_WRITE, MAP_SHARED, (unsigned long)p);
	faults(&min0, &maj0);
	for (long i = 0; i < pages; i++)
		p[i * PAGE] = 'b';
	faults(&min1, &maj1);
	say("{\"pass\": \"write\", \"pages\": %ld, \"minflt\": %ld, \"majflt\": %ld}\n", pages, min1 - min0,
	    maj1 - maj0);

	/* 3: made durable, then unmapped */
	ret = msync(p, size, MS_SYNC);
	say("{\"call\": \"msync\", \"addr\": %lu, \"offset\": 0, \"length\": %ld, \"flags\": %d, \"ret\": %d}\n",
	    (unsigned long)p, size, MS_SYNC, ret);
	ret = munmap(p, size);
	say("{\"call\": \"munmap\", \"addr\": %lu, \"offset\": 0, \"length\": %ld, \"flags\": 0, \"ret\": %d}\n",
	    (unsigned long)p, size, ret);

	/* 4: the clean pages out of the page cache */
	ret = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (ret)
		die("posix_fadvise");

	/* 5: a read-only mapping, one load per page, from a cold file */
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	say("{\"call\": \"mmap\", \"offset\": 0, \"length\": %ld, \"prot\": %d, \"flags\": %d, \"ret\": %lu}\n",
	    size, PROT_READ, MAP_SHARED, (unsigned long)p);
	vec = malloc(pages);
	if (!vec || mincore(p, size, vec))
		die("mincore");
	for (long i = 0; i < pages; i++)
		resident += vec[i] & 1;
	faults(&min0, &maj0);
	for (long i = 0; i < pages; i++)
		sum += ((volatile char *)p)[i * PAGE];
	faults(&min1, &maj1);
	if (sum != pages * 'b') {
		fprintf(stderr, "mapped_io: read back %ld, expected %ld\n", sum, pages * 'b');
		return 1;
	}
	say("{\"pass\": \"read\", \"pages\": %ld, \"resident_before\": %ld, \"minflt\": %ld, \"majflt\": %ld}\n",
	    pages, resident, min1 - min0, maj1 - maj0);

	/* 6: the second half advised away, then all unmapped */
	ret = madvise(p + size / 2, size / 2, MADV_DONTNEED);
	say("{\"call\": \"madvise\", \"addr\": %lu, \"offset\": %ld, \"length\": %ld, \"flags\": %d, \"ret\": %d}\n",
	    (unsigned long)(p + size / 2), size / 2, size / 2, MADV_DONTNEED, ret);

	/* 7: 64 KiB of the advised-away half copied into another file by write(2): the kernel
	 * faults the pages in itself, in kernel mode */
	copy = open(copy_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (copy < 0 || write(copy, p + size / 2, sizeof(piece)) != sizeof(piece))
		die("copy");
	close(copy);
	say("{\"copied\": \"%s\", \"offset\": %ld, \"length\": %zu}\n", copy_path, size / 2, sizeof(piece));
	ret = munmap(p, size);
	say("{\"call\": \"munmap\", \"addr\": %lu, \"offset\": 0, \"length\": %ld, \"flags\": 0, \"ret\": %d}\n",
	    (unsigned long)p, size, ret);
	close(fd);
	return 0;
}
