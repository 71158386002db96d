/* aio_known.c — libaio requests whose every field is known: the ground truth of tests/kernel/test_aio.py.
 *
 * Usage: aio_known TARGET_DIR LOG_PATH [--abandon]
 *   Works on TARGET_DIR/aio.dat through the raw syscalls (io_setup, io_submit, io_getevents,
 *   io_destroy: no libaio library). For every request it submits, appends one JSON line to
 *   LOG_PATH (outside TARGET_DIR) once the request is reaped. Exits 0, or 1 with a message on
 *   stderr when a request did not end as documented below.
 *
 * Example log line:
 *   {"op": "aio_read", "tid": 4242, "fd": 4, "offset": 0, "requested": 4096, "ret": 4096,
 *    "ring": 2, "flags": 0, "before_submit_ns": 81234000, "after_reap_ns": 81290000}
 *   op        aio_read (PREAD, PREADV), aio_write (PWRITE, PWRITEV), aio_fsync (FSYNC, FDSYNC)
 *   tid       the thread that called io_submit
 *   requested aio_nbytes, or the sum of the iovecs; 0 for the syncs (offset -1)
 *   ret       io_event.res: bytes, 0, or -errno
 *   ring      the context, numbered from 1 in the order this program first submitted to it
 *   flags     0x10000 for PREADV/PWRITEV, 0x20000 for FDSYNC (probes/events.h IOW_AIO_*)
 *   *_ns      CLOCK_MONOTONIC just before io_submit, just after the io_getevents that reaped it
 *
 * The sequence (B = buffered fd, D = O_DIRECT fd, both on aio.dat; ring 1 for B, 2 for D):
 *   1  ring 1: one io_submit of PWRITE 4096 @0, 4096 @4096, 8192 @8192 (three in flight);
 *      one io_getevents reaps them                                          file 16384 bytes
 *   2  ring 1: PWRITEV 100+200+3796 @16384; PREADV 1000+2000+1096 @0; PREAD 8192 @16384
 *      (= 4096: short, at the end of the file), one io_submit; reaped one at a time
 *   3  ring 1: FSYNC, FDSYNC, one io_submit
 *   4  ring 2 (D, 4096-aligned buffers): PREAD 4096 @0, @4096, @8192, @12288, PWRITE 4096
 *      @20480, @24576, and PREAD 4096 @100 (misaligned: res -EINVAL), one io_submit; reaped
 *      by io_getevents(min_nr 1) calls until all seven are in
 *   5  ring 3 (B): a second thread waits in io_getevents while the main thread submits 48
 *      PWRITE 16384 @32768 + 16384 i in one io_submit: buffered writes complete inside io_submit,
 *      so the reaper may have some before io_submit returns (it prints how many to stdout)
 *   6  io_destroy all three contexts
 *   7  with --abandon only, requests never reaped (not logged): 5 PWRITE 512 @0 on ring 4,
 *      then io_destroy it; 3 PWRITE 512 @0 on ring 5, then exit with them unreaped
 *
 * Build: gcc -O1 -pthread -Wall -Werror -o aio_known aio_known.c   (tests/support/workload.py)
 * Overhead: none to speak of; 63 requests, well under a second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_REQ 48

struct expect {
	const char *op;
	long tid;
	int fd;
	long long offset;
	unsigned long long requested;
	long long ret;
	int ring;
	unsigned flags;
	unsigned long long before_submit_ns;
	unsigned long long after_reap_ns;
};

static FILE *logf;
static char path[4096];

static void fail(const char *what)
{
	fprintf(stderr, "aio_known: %s: %s\n", what, strerror(errno));
	exit(1);
}

static unsigned long long mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static long tid(void)
{
	return syscall(SYS_gettid);
}

static void log_request(const struct expect *e)
{
	fprintf(logf, "{\"op\": \"%s\", \"tid\": %ld, \"fd\": %d, \"offset\": %lld, \"requested\": %llu, "
		"\"ret\": %lld, \"ring\": %d, \"flags\": %u, \"before_submit_ns\": %llu, \"after_reap_ns\": %llu}\n",
		e->op, e->tid, e->fd, e->offset, e->requested, e->ret, e->ring, e->flags,
		e->before_submit_ns, e->after_reap_ns);
}

static void prep(struct iocb *cb, int opcode, int fd, void *buf, unsigned long long nbytes, long long offset)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_lio_opcode = opcode;
	cb->aio_fildes = fd;
	cb->aio_buf = (uintptr_t)buf;
	cb->aio_nbytes = nbytes;
	cb->aio_offset = offset;
}

/* Submit n requests in one io_submit and reap them with io_getevents(min_nr) calls; each
 * reaped request is checked against want[i].ret and logged. */
static void submit_and_reap(aio_context_t ctx, struct iocb *cbs, struct expect *want, int n, long min_nr)
{
	struct iocb *ptrs[MAX_REQ];
	struct io_event events[MAX_REQ];
	unsigned long long before;
	int reaped = 0;

	for (int i = 0; i < n; i++) {
		ptrs[i] = &cbs[i];
		want[i].tid = tid();
	}
	before = mono_ns();
	long got = syscall(SYS_io_submit, ctx, n, ptrs);
	if (got != n)
		fail("io_submit accepted fewer requests than asked");
	while (reaped < n) {
		long k = syscall(SYS_io_getevents, ctx, min_nr, n - reaped, events, NULL);
		unsigned long long after = mono_ns();

		if (k <= 0)
			fail("io_getevents");
		for (long j = 0; j < k; j++) {
			int i = (struct iocb *)(uintptr_t)events[j].obj - cbs;

			if (i < 0 || i >= n)
				fail("io_getevents returned an iocb never submitted");
			if (events[j].res != want[i].ret) {
				fprintf(stderr, "aio_known: request %d (%s @%lld) gave %lld, not %lld\n", i,
					want[i].op, want[i].offset, (long long)events[j].res, want[i].ret);
				exit(1);
			}
			want[i].before_submit_ns = before;
			want[i].after_reap_ns = after;
			log_request(&want[i]);
		}
		reaped += k;
	}
}

static void expect(struct expect *e, const char *op, int fd, long long offset, unsigned long long requested,
		   long long ret, int ring, unsigned flags)
{
	*e = (struct expect){ .op = op, .fd = fd, .offset = offset, .requested = requested, .ret = ret,
			      .ring = ring, .flags = flags };
}

/* step 5: the reaper thread */
struct reaper {
	aio_context_t ctx;
	struct iocb *cbs;
	struct expect *want;
	int n;
	unsigned long long before_submit_ns, submit_returned_ns;
	int early;
};

static void *reap_all(void *arg)
{
	struct reaper *r = arg;
	struct io_event events[MAX_REQ];
	int reaped = 0;

	while (reaped < r->n) {
		long k = syscall(SYS_io_getevents, r->ctx, 1, r->n - reaped, events, NULL);
		unsigned long long after = mono_ns();

		if (k <= 0)
			fail("io_getevents (reaper)");
		for (long j = 0; j < k; j++) {
			int i = (struct iocb *)(uintptr_t)events[j].obj - r->cbs;

			if (i < 0 || i >= r->n || events[j].res != r->want[i].ret)
				fail("reaper: unexpected event");
			r->want[i].after_reap_ns = after;
		}
		reaped += k;
	}
	return NULL;
}

/* step 7: requests submitted and never reaped, in a context destroyed and in one left open */
static void abandon(int fd, char *buf)
{
	struct iocb cbs[5], *ptrs[5];
	aio_context_t ctx[2] = { 0, 0 };
	int n[2] = { 5, 3 };

	for (int c = 0; c < 2; c++) {
		if (syscall(SYS_io_setup, 8, &ctx[c]))
			fail("io_setup (step 7)");
		for (int i = 0; i < n[c]; i++) {
			prep(&cbs[i], IOCB_CMD_PWRITE, fd, buf, 512, 0);
			ptrs[i] = &cbs[i];
		}
		if (syscall(SYS_io_submit, ctx[c], n[c], ptrs) != n[c])
			fail("io_submit (step 7)");
	}
	if (syscall(SYS_io_destroy, ctx[0]))
		fail("io_destroy (step 7)");
	/* ctx[1] is left for the exit to tear down */
}

int main(int argc, char **argv)
{
	static char wbuf[16384], rbuf[16384];
	static char dbuf[8][4096] __attribute__((aligned(4096)));
	struct iocb cbs[MAX_REQ];
	struct expect want[MAX_REQ];
	aio_context_t ctx[3] = { 0, 0, 0 };
	int b, d;

	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "--abandon"))) {
		fprintf(stderr, "usage: aio_known TARGET_DIR LOG_PATH [--abandon]\n");
		return 2;
	}
	logf = fopen(argv[2], "w");
	if (!logf)
		fail("open the log");
	setvbuf(logf, NULL, _IOLBF, 0);
	snprintf(path, sizeof(path), "%s/aio.dat", argv[1]);
	b = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (b < 0)
		fail("open aio.dat");
	memset(wbuf, 'a', sizeof(wbuf));
	for (int i = 0; i < 3; i++)
		if (syscall(SYS_io_setup, 64, &ctx[i]))
			fail("io_setup");

	/* 1: three writes in flight at once */
	prep(&cbs[0], IOCB_CMD_PWRITE, b, wbuf, 4096, 0);
	prep(&cbs[1], IOCB_CMD_PWRITE, b, wbuf, 4096, 4096);
	prep(&cbs[2], IOCB_CMD_PWRITE, b, wbuf, 8192, 8192);
	expect(&want[0], "aio_write", b, 0, 4096, 4096, 1, 0);
	expect(&want[1], "aio_write", b, 4096, 4096, 4096, 1, 0);
	expect(&want[2], "aio_write", b, 8192, 8192, 8192, 1, 0);
	submit_and_reap(ctx[0], cbs, want, 3, 3);

	/* 2: vectored requests and a short read at the end of the file */
	struct iovec wv[3] = { { wbuf, 100 }, { wbuf, 200 }, { wbuf, 3796 } };
	struct iovec rv[3] = { { rbuf, 1000 }, { rbuf + 1000, 2000 }, { rbuf + 3000, 1096 } };
	prep(&cbs[0], IOCB_CMD_PWRITEV, b, wv, 3, 16384);
	prep(&cbs[1], IOCB_CMD_PREADV, b, rv, 3, 0);
	prep(&cbs[2], IOCB_CMD_PREAD, b, rbuf + 4096, 8192, 16384);
	expect(&want[0], "aio_write", b, 16384, 4096, 4096, 1, 0x10000);
	expect(&want[1], "aio_read", b, 0, 4096, 4096, 1, 0x10000);
	expect(&want[2], "aio_read", b, 16384, 8192, 4096, 1, 0);
	/* the short read must see the vectored write: submitted after it is reaped */
	submit_and_reap(ctx[0], cbs, want, 2, 1);
	submit_and_reap(ctx[0], cbs + 2, want + 2, 1, 1);

	/* 3: the two syncs */
	prep(&cbs[0], IOCB_CMD_FSYNC, b, NULL, 0, 0);
	prep(&cbs[1], IOCB_CMD_FDSYNC, b, NULL, 0, 0);
	expect(&want[0], "aio_fsync", b, -1, 0, 0, 1, 0);
	expect(&want[1], "aio_fsync", b, -1, 0, 0, 1, 0x20000);
	submit_and_reap(ctx[0], cbs, want, 2, 2);

	/* 4: O_DIRECT, several in flight, one misaligned */
	d = open(path, O_RDWR | O_DIRECT);
	if (d < 0)
		fail("open aio.dat with O_DIRECT");
	for (int i = 0; i < 4; i++) {
		prep(&cbs[i], IOCB_CMD_PREAD, d, dbuf[i], 4096, 4096 * i);
		expect(&want[i], "aio_read", d, 4096 * i, 4096, 4096, 2, 0);
	}
	memset(dbuf[4], 'd', 2 * 4096);
	prep(&cbs[4], IOCB_CMD_PWRITE, d, dbuf[4], 4096, 20480);
	prep(&cbs[5], IOCB_CMD_PWRITE, d, dbuf[5], 4096, 24576);
	prep(&cbs[6], IOCB_CMD_PREAD, d, dbuf[6], 4096, 100);
	expect(&want[4], "aio_write", d, 20480, 4096, 4096, 2, 0);
	expect(&want[5], "aio_write", d, 24576, 4096, 4096, 2, 0);
	expect(&want[6], "aio_read", d, 100, 4096, -EINVAL, 2, 0);
	submit_and_reap(ctx[1], cbs, want, 7, 1);

	/* 5: another thread reaps while io_submit is still going */
	struct reaper r = { .ctx = ctx[2], .cbs = cbs, .want = want, .n = MAX_REQ };
	struct iocb *ptrs[MAX_REQ];
	pthread_t thread;

	for (int i = 0; i < MAX_REQ; i++) {
		prep(&cbs[i], IOCB_CMD_PWRITE, b, wbuf, 16384, 32768 + 16384 * i);
		expect(&want[i], "aio_write", b, 32768 + 16384 * i, 16384, 16384, 3, 0);
		want[i].tid = tid();
		ptrs[i] = &cbs[i];
	}
	if (pthread_create(&thread, NULL, reap_all, &r))
		fail("pthread_create");
	usleep(20000);   /* let the reaper block in io_getevents first */
	r.before_submit_ns = mono_ns();
	if (syscall(SYS_io_submit, ctx[2], MAX_REQ, ptrs) != MAX_REQ)
		fail("io_submit (step 5)");
	r.submit_returned_ns = mono_ns();
	pthread_join(thread, NULL);
	for (int i = 0; i < MAX_REQ; i++) {
		want[i].before_submit_ns = r.before_submit_ns;
		r.early += want[i].after_reap_ns < r.submit_returned_ns;
		log_request(&want[i]);
	}
	printf("aio_known: %d of %d requests of step 5 were reaped before their io_submit returned\n", r.early, MAX_REQ);

	/* 6 */
	for (int i = 0; i < 3; i++)
		if (syscall(SYS_io_destroy, ctx[i]))
			fail("io_destroy");
	close(d);
	fclose(logf);
	if (argc == 4)
		abandon(b, wbuf);
	close(b);
	return 0;
}
