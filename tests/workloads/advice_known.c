/* advice_known.c — page-cache advice on one file whose every argument is known, for the replay's
 * test of posix_fadvise and readahead.
 *
 * Usage: advice_known DIR LOG
 *
 * Writes DIR/advice.dat (256 writes of 4 KiB, then fsync, so its pages are clean), and then,
 * each logged to LOG as "call offset length advice result":
 *   posix_fadvise 0 0 DONTNEED (the whole file out of the page cache)
 *   readahead 65536 131072
 *   posix_fadvise 262144 65536 WILLNEED
 *   pread of 4096 at 65536
 *   posix_fadvise 0 0 DONTNEED
 * and closes it: the file ends out of the page cache, as fio's invalidate=1 leaves a file.
 * Before the last DONTNEED it reads both advised ranges whole (pread 131072 at 65536, 65536 at
 * 262144): readahead and WILLNEED only start their reads, and DONTNEED skips a page still locked
 * under a read; a pread returns once its pages are read. Without it, on a loaded machine the
 * WILLNEED range (16 pages) was still being read and stayed cached.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "known_start.h"

static char ranges[131072];

static void advise(int fd, long long offset, long long length, int advice)
{
	int res = posix_fadvise(fd, offset, length, advice);   /* returns the error, 0 on success */

	fprintf(logf, "fadvise64 %lld %lld %d %d\n", offset, length, advice, -res);
}

int main(int argc, char **argv)
{
	char buf[4096];
	int fd = known_start(argc, argv, "advice_known DIR LOG", "advice.dat");

	memset(buf, 'a', sizeof(buf));
	for (int k = 0; k < 256; k++)
		if (write(fd, buf, sizeof(buf)) != sizeof(buf))
			return 1;
	if (fsync(fd))
		return 1;
	advise(fd, 0, 0, POSIX_FADV_DONTNEED);
	fprintf(logf, "readahead 65536 131072 0 %zd\n", readahead(fd, 65536, 131072));
	advise(fd, 262144, 65536, POSIX_FADV_WILLNEED);
	if (pread(fd, buf, sizeof(buf), 65536) != sizeof(buf))
		return 1;
	/* wait for the advised reads: no page under a read when DONTNEED runs */
	if (pread(fd, ranges, 131072, 65536) != 131072 || pread(fd, ranges, 65536, 262144) != 65536)
		return 1;
	advise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	fclose(logf);
	return 0;
}
