/* uring_known.c — io_uring requests on one file whose every field is known, for the probe's test.
 *
 * Usage: uring_known DIR LOG
 *
 * Makes DIR/target.dat through one ring (raw io_uring_setup/io_uring_enter, no liburing), one
 * request at a time, and writes one JSON line per request to LOG: its opcode, sqe flags, fd,
 * where it began in the file (for an SQE offset of -1 the file position, read with lseek
 * before the request), the bytes asked for and the CQE's res (or "skipped": no CQE asked).
 * The sequence:
 *   4 x WRITEV at the file position, iovecs of 3000 + 1096 bytes
 *   WRITE of 5000 bytes at 16384
 *   lseek to 0, then 2 x READ of 4096 at the file position
 *   READV of 100 + 200 + 300 bytes at 1000
 *   READ of 8192 at 20000 (short: the file ends at 21384)
 *   FSYNC with IORING_FSYNC_DATASYNC, SYNC_FILE_RANGE of 0..4096
 *   SPLICE of 100 bytes from the file to a pipe (not decoded by the probe: counted)
 *   READ with IOSQE_CQE_SKIP_SUCCESS (no CQE: counted as a request not followed)
 *   READ of 4096 at 0 of DIR/other.dat (not a target)
 *   the ring closed, a second ring set up, READ of 4096 at 8192 through it
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../../replay/uring_setup.h"
#include "known_start.h"

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* the ring set up as the replay player sets up its rings */
static void ring_setup(struct uring_queues *r)
{
	const char *failed = "";

	if (uring_queues_setup(r, 8, &failed) < 0)
		die(failed);
}

/* submit one request; wait for its CQE unless it asks for none; log it */
static int request(struct uring_queues *r, struct io_uring_sqe *sqe, long long start, unsigned long long requested)
{
	unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask, head;
	int skip = sqe->flags & IOSQE_CQE_SKIP_SUCCESS, res = 0;

	r->sqes[idx] = *sqe;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, r->fd, 1, skip ? 0 : 1, skip ? 0 : IORING_ENTER_GETEVENTS, NULL, 0) != 1)
		die("io_uring_enter");
	if (!skip) {
		head = *r->cq_head;
		if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
			die("no CQE");
		res = r->cqes[head & *r->cq_mask].res;
		__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	}
	fprintf(logf, "{\"opcode\": %u, \"sqe_flags\": %u, \"fd\": %d, \"offset\": %lld, \"requested\": %llu, "
		"\"res\": %s%d}\n", sqe->opcode, sqe->flags, sqe->fd, start, requested,
		skip ? "null, \"skipped\": " : "", skip ? 1 : res);
	return res;
}

static struct io_uring_sqe rw(int opcode, int fd, void *addr, unsigned len, long long off)
{
	struct io_uring_sqe s;

	memset(&s, 0, sizeof(s));
	s.opcode = opcode;
	s.fd = fd;
	s.addr = (unsigned long)addr;
	s.len = len;
	s.off = off;
	return s;
}

int main(int argc, char **argv)
{
	static char buf[3][8192];
	struct iovec iov[3];
	struct uring_queues r;
	struct io_uring_sqe s;
	char path[4096];
	int fd, other, pipefd[2];

	fd = known_start(argc, argv, "uring_known DIR LOG", "target.dat");
	snprintf(path, sizeof(path), "%s/other.dat", argv[1]);
	other = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (other < 0 || pipe(pipefd))
		die("open");
	memset(buf, 'x', sizeof(buf));
	if (pwrite(other, buf[0], 4096, 0) != 4096)
		die("pwrite");
	ring_setup(&r);

	for (int i = 0; i < 4; i++) {
		long long pos = lseek(fd, 0, SEEK_CUR);

		iov[0] = (struct iovec){ buf[0], 3000 };
		iov[1] = (struct iovec){ buf[1], 1096 };
		s = rw(IORING_OP_WRITEV, fd, iov, 2, -1);
		request(&r, &s, pos, 4096);
	}
	s = rw(IORING_OP_WRITE, fd, buf[0], 5000, 16384);
	request(&r, &s, 16384, 5000);
	lseek(fd, 0, SEEK_SET);
	for (int i = 0; i < 2; i++) {
		long long pos = lseek(fd, 0, SEEK_CUR);

		s = rw(IORING_OP_READ, fd, buf[2], 4096, -1);
		request(&r, &s, pos, 4096);
	}
	iov[0] = (struct iovec){ buf[0], 100 };
	iov[1] = (struct iovec){ buf[1], 200 };
	iov[2] = (struct iovec){ buf[2], 300 };
	s = rw(IORING_OP_READV, fd, iov, 3, 1000);
	request(&r, &s, 1000, 600);
	s = rw(IORING_OP_READ, fd, buf[2], 8192, 20000);
	request(&r, &s, 20000, 8192);

	s = rw(IORING_OP_FSYNC, fd, NULL, 0, 0);
	s.fsync_flags = IORING_FSYNC_DATASYNC;
	request(&r, &s, 0, 0);
	s = rw(IORING_OP_SYNC_FILE_RANGE, fd, NULL, 4096, 0);
	request(&r, &s, 0, 4096);

	s = rw(IORING_OP_SPLICE, pipefd[1], NULL, 100, -1);
	s.splice_fd_in = fd;
	s.splice_off_in = 0;
	request(&r, &s, 0, 100);
	s = rw(IORING_OP_READ, fd, buf[2], 10, 0);
	s.flags = IOSQE_CQE_SKIP_SUCCESS;
	request(&r, &s, 0, 10);
	/* the skipped request's end is seen by the next one on the same ring */
	s = rw(IORING_OP_READ, other, buf[2], 4096, 0);
	request(&r, &s, 0, 4096);

	close(r.fd);
	ring_setup(&r);
	s = rw(IORING_OP_READ, fd, buf[2], 4096, 8192);
	request(&r, &s, 8192, 4096);
	fclose(logf);
	return 0;
}
