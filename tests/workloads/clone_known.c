/* clone_known.c — clone and dedupe ioctls whose outcome is known: what the probe can only count
 * (lost[IOW_LOST_UNDECODED], probes/transfer.bpf.h), for tests/kernel/test_transfer.py.
 *
 * Usage: clone_known SRC DST
 *   SRC must exist and hold at least 65536 bytes; DST is created or truncated. Both must be on
 *   btrfs (clones, dedupes and encoded reads: XFS has the first two only). Makes these ioctls,
 *   prints one line per call and, last, "cloned N" with N the calls that succeeded and moved or
 *   shared data (the ones the probe should count):
 *     1  FICLONE from SRC                                   succeeds
 *     2  FICLONERANGE 16384 bytes of SRC @0 to DST @65536   succeeds
 *     3  FIDEDUPERANGE SRC @0 16384 bytes against DST @0    succeeds (the same bytes since 1)
 *     4  FICLONERANGE from SRC @1 (not block aligned)       refused: -EINVAL, nothing shared
 *     5  BTRFS_IOC_ENCODED_READ of SRC @0 (root only)       succeeds: the extent's bytes as stored
 *     6  BTRFS_IOC_ENCODED_READ of SRC @ its size           0: nothing there, nothing moved
 *   Exits 1 with a message on stderr when a call did not return what is documented.
 *
 * Build: gcc -O1 -pthread -Wall -Werror -o clone_known clone_known.c (tests/support/workload.py)
 * Overhead: none to speak of; six ioctls, 128 KiB read at most.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int ok;

static void check(const char *what, int r, int expected_errno)
{
	int got = r < 0 ? errno : 0;

	printf("%s = %d%s%s\n", what, r, got ? " " : "", got ? strerror(got) : "");
	if (got != expected_errno) {
		fprintf(stderr, "clone_known: %s: expected %s, got %s\n", what,
			expected_errno ? strerror(expected_errno) : "success", got ? strerror(got) : "success");
		exit(1);
	}
	if (!got)
		ok++;
}

int main(int argc, char **argv)
{
	struct file_clone_range range = { .src_length = 16384, .dest_offset = 65536 };
	struct {
		struct file_dedupe_range head;
		struct file_dedupe_range_info info[1];
	} dedupe = { .head = { .src_offset = 0, .src_length = 16384, .dest_count = 1 } };
	int s, d;

	if (argc != 3) {
		fprintf(stderr, "usage: clone_known SRC DST\n");
		return 1;
	}
	s = open(argv[1], O_RDONLY);
	d = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (s < 0 || d < 0) {
		fprintf(stderr, "clone_known: cannot open %s or %s: %s\n", argv[1], argv[2], strerror(errno));
		return 1;
	}
	check("ioctl(DST, FICLONE, SRC)", ioctl(d, FICLONE, s), 0);
	range.src_fd = s;
	check("ioctl(DST, FICLONERANGE, SRC @0 16384 -> @65536)", ioctl(d, FICLONERANGE, &range), 0);
	dedupe.info[0].dest_fd = d;
	check("ioctl(SRC, FIDEDUPERANGE, @0 16384 -> DST @0)", ioctl(s, FIDEDUPERANGE, &dedupe), 0);
	if (dedupe.info[0].status != FILE_DEDUPE_RANGE_SAME || dedupe.info[0].bytes_deduped != 16384) {
		fprintf(stderr, "clone_known: dedupe status %d, %llu bytes\n", dedupe.info[0].status,
			(unsigned long long)dedupe.info[0].bytes_deduped);
		return 1;
	}
	range.src_offset = 1;
	check("ioctl(DST, FICLONERANGE, SRC @1 ...)", ioctl(d, FICLONERANGE, &range), EINVAL);
	/* an encoded read returns the bytes of the extent as stored (here: not compressed) */
	static char buf[131072];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct btrfs_ioctl_encoded_io_args enc = { .iov = &iov, .iovcnt = 1, .offset = 0 };
	long r = ioctl(s, BTRFS_IOC_ENCODED_READ, &enc);

	printf("ioctl(SRC, BTRFS_IOC_ENCODED_READ, @0) = %ld%s%s\n", r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
	if (r <= 0) {
		fprintf(stderr, "clone_known: the encoded read returned %ld\n", r);
		return 1;
	}
	ok++;
	enc.offset = lseek(s, 0, SEEK_END);
	r = ioctl(s, BTRFS_IOC_ENCODED_READ, &enc);
	printf("ioctl(SRC, BTRFS_IOC_ENCODED_READ, @end) = %ld\n", r);
	if (r != 0) {
		fprintf(stderr, "clone_known: the encoded read at the end returned %ld\n", r);
		return 1;
	}
	printf("cloned %d\n", ok);
	close(d);
	close(s);
	return 0;
}
