/* uring_setup.h — one io_uring ring set up by hand (io_uring_setup and the three mappings, no
 * liburing), shared by the replay player (replay/player.c) and the probe's io_uring test
 * workload (tests/workloads/uring_known.c), so both map the queues the same way.
 *
 * uring_queues_setup(q, entries) makes the ring and fills q; it returns 0, or -1 with errno
 * and the step that failed in *failed ("io_uring_setup" or "mmap"). A caller submits by
 * writing an SQE at sqes[*sq_tail & *sq_mask], its index into sq_array, and a release store
 * of the new tail; it reaps from cqes[*cq_head & *cq_mask] up to an acquire load of *cq_tail.
 */
#ifndef IOWITNESS_URING_SETUP_H
#define IOWITNESS_URING_SETUP_H

#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct uring_queues {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static inline int uring_queues_setup(struct uring_queues *q, unsigned entries, const char **failed)
{
	struct io_uring_params p;
	unsigned char *sq, *cq;

	memset(&p, 0, sizeof(p));
	memset(q, 0, sizeof(*q));
	q->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (q->fd < 0) {
		*failed = "io_uring_setup";
		return -1;
	}
	/* MAP_POPULATE: the first requests do not fault the queues in */
	sq = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof(unsigned), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_POPULATE, q->fd, IORING_OFF_SQ_RING);
	cq = mmap(NULL, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_POPULATE, q->fd, IORING_OFF_CQ_RING);
	q->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, q->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || q->sqes == MAP_FAILED) {
		*failed = "mmap";
		return -1;
	}
	q->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	q->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	q->sq_array = (unsigned *)(sq + p.sq_off.array);
	q->cq_head = (unsigned *)(cq + p.cq_off.head);
	q->cq_tail = (unsigned *)(cq + p.cq_off.tail);
	q->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	q->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	return 0;
}

#endif
