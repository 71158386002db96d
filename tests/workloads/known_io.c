/* known_io.c — a workload whose file syscalls are known exactly: the ground truth of the tracer tests.
 *
 * Usage: known_io TARGET_DIR LOG_PATH
 *   Works on TARGET_DIR/target.dat (the target) and TARGET_DIR/other/nontarget.dat (never a
 *   target: a tracer watching target.dat must not report it). For every syscall made on the
 *   target, and only for those, appends one JSON line to LOG_PATH (which must lie outside
 *   TARGET_DIR). Prints nothing; exits 0, or 1 with a message on stderr when a call did not
 *   return what the sequence below documents.
 *
 * Example log line (fields as in probes/events.h, struct iow_event):
 *   {"op": "pread64", "pid": 4242, "tid": 4242, "fd": 3, "offset": 14336, "requested": 4096, "ret": 2048, "flags": 0}
 *   offset   where the I/O began; for read/write/readv/writev and p*v2 at offset -1 this is the
 *            file position, tracked here rather than asked for (asking is an lseek on the target,
 *            which would itself be a call to log); -1 for ops without one; fallocate: its offset
 *   requested bytes asked (vector calls: sum of iov_len); lseek: offset; ftruncate/fallocate:
 *            length; fcntl: arg; else 0
 *   ret      raw syscall return: bytes, fd, new offset, or -errno
 *   flags    opens: flags as passed (creat: O_CREAT|O_WRONLY|O_TRUNC, what the kernel uses);
 *            lseek: whence; fcntl: cmd; fallocate: mode; preadv2/pwritev2: RWF flags; else 0
 *   fd       the fd the call used; opens: the fd returned; dup*: the old fd (new one is ret)
 *
 * The sequence on the target (F = 4197 bytes after step 1; V = iovecs of 10+200+3000 = 3210):
 *   parent, main thread
 *     1  openat O_CREAT|O_TRUNC|O_RDWR; write 4096, 100, 1                      pos 4197
 *     2  lseek 0 SET; read 4096; lseek 50 CUR; read 100 = 51 (short); read 100 = 0 (EOF)
 *        lseek 0 END = 4197
 *     3  pwrite64 8192 @8192 (leaves a hole); pread64 4096 @0; pread64 4096 @14336 = 2048
 *     4  writev V @4197; lseek 0 SET; readv V @0                                 pos 3210
 *     5  pwritev V @16384; preadv V @19000 = 594 (short)
 *        preadv2 V @0 flags 0; preadv2 V @-1 (at pos 3210)                       pos 6420
 *        pwritev2 V @20000 RWF_DSYNC; pwritev2 V @-1 (at pos 6420)               pos 9630
 *     6  fsync; fdatasync; ftruncate 20000; fallocate KEEP_SIZE @20000 len 4096 (0 or -EOPNOTSUPP)
 *        (between 6 and 7: I/O on other/nontarget.dat, not logged)
 *   second thread, concurrent with 4 x pread64 4096 @0 by the main thread
 *     7  openat O_RDWR; pwrite64 4096 @12288; pread64 4096 @12288; pread64 4096 @8192 on the
 *        main thread's fd; close
 *   forked child (its own pid), while the parent waits
 *     8  openat O_WRONLY; write 512 @0; close
 *   parent, main thread: duplicates share the main fd's file position
 *     9  dup -> write 100 @9630 through it; dup2 -> 100, lseek 0 SET and read 4096 through it;
 *        dup3 O_CLOEXEC -> 101, pwrite64 100 @0 through it; fcntl F_DUPFD 200 -> 200, readv V
 *        @4096 through it; close all four duplicates, then the main fd
 *    10  open (the open syscall, not openat) O_RDONLY|O_CLOEXEC; read 4096 @0; close
 *    11  creat (truncates); write 1 @0; read 10 on the write-only fd = -EBADF (logged @1); close
 *
 * Build: gcc -O1 -pthread -Wall -Werror -o known_io known_io.c   (tests/support/workload.py)
 * Overhead: none to speak of; about 60 syscalls on the target, under a second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define NONE (-1LL)
#define IOV_COUNT 3
#define IOV_TOTAL (10 + 200 + 3000)

static const size_t iov_lens[IOV_COUNT] = {10, 200, 3000};
static char out_buf[16384];
static char in_buf[16384];
static int log_fd = -1;
static char target[4096];

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("known_io: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	/* _exit: a forked child must not run the parent's atexit handlers or flush its stdio */
	_exit(1);
}

/* errno must be read right after the call: taking the return as an argument does that */
static long long sysret(long long r)
{
	return r < 0 ? -(long long)errno : r;
}

static void want(long long got, long long expected, const char *what)
{
	if (got != expected)
		die("%s returned %lld, expected %lld", what, got, expected);
}

/* one line, one write: O_APPEND keeps lines from the three writers whole */
static void log_call(const char *op, int fd, long long offset, long long requested, long long ret,
		     long long flags)
{
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "{\"op\": \"%s\", \"pid\": %d, \"tid\": %d, \"fd\": %d, \"offset\": %lld, "
			 "\"requested\": %lld, \"ret\": %lld, \"flags\": %lld}\n",
			 op, getpid(), gettid(), fd, offset, requested, ret, flags);

	if (n <= 0 || n >= (int)sizeof(line) || write(log_fd, line, n) != n)
		die("cannot write the log line for %s", op);
}

static void fill_iov(struct iovec *iov, char *base)
{
	size_t at = 0;

	for (int i = 0; i < IOV_COUNT; i++) {
		iov[i].iov_base = base + at;
		iov[i].iov_len = iov_lens[i];
		at += iov_lens[i];
	}
}

/* A position-using call moves the shared file position by what it did, nothing else. */
static void advance(long long *pos, long long ret)
{
	if (ret > 0)
		*pos += ret;
}

/* Opens go through syscall(): glibc's open() is an openat, and the exact flags matter. */
static int do_openat(const char *path, int flags)
{
	long long r = sysret(syscall(SYS_openat, AT_FDCWD, path, flags, 0644));

	log_call("openat", r < 0 ? -1 : (int)r, NONE, 0, r, flags);
	if (r < 0)
		die("openat %s: %s", path, strerror((int)-r));
	return (int)r;
}

static int do_open(const char *path, int flags)
{
	long long r = sysret(syscall(SYS_open, path, flags, 0644));

	log_call("open", r < 0 ? -1 : (int)r, NONE, 0, r, flags);
	if (r < 0)
		die("open %s: %s", path, strerror((int)-r));
	return (int)r;
}

static int do_creat(const char *path)
{
	long long r = sysret(syscall(SYS_creat, path, 0644));

	log_call("creat", r < 0 ? -1 : (int)r, NONE, 0, r, O_CREAT | O_WRONLY | O_TRUNC);
	if (r < 0)
		die("creat %s: %s", path, strerror((int)-r));
	return (int)r;
}

static long long do_write(int fd, size_t n, long long *pos)
{
	long long r = sysret(write(fd, out_buf, n));

	log_call("write", fd, *pos, n, r, 0);
	advance(pos, r);
	return r;
}

static long long do_read(int fd, size_t n, long long *pos)
{
	long long r = sysret(read(fd, in_buf, n));

	log_call("read", fd, *pos, n, r, 0);
	advance(pos, r);
	return r;
}

static long long do_pwrite(int fd, size_t n, long long off)
{
	long long r = sysret(pwrite(fd, out_buf, n, off));

	log_call("pwrite64", fd, off, n, r, 0);
	return r;
}

static long long do_pread(int fd, size_t n, long long off)
{
	long long r = sysret(pread(fd, in_buf, n, off));

	log_call("pread64", fd, off, n, r, 0);
	return r;
}

static long long do_writev(int fd, long long *pos)
{
	struct iovec iov[IOV_COUNT];
	long long r;

	fill_iov(iov, out_buf);
	r = sysret(writev(fd, iov, IOV_COUNT));
	log_call("writev", fd, *pos, IOV_TOTAL, r, 0);
	advance(pos, r);
	return r;
}

static long long do_readv(int fd, long long *pos)
{
	struct iovec iov[IOV_COUNT];
	long long r;

	fill_iov(iov, in_buf);
	r = sysret(readv(fd, iov, IOV_COUNT));
	log_call("readv", fd, *pos, IOV_TOTAL, r, 0);
	advance(pos, r);
	return r;
}

static long long do_pwritev(int fd, long long off)
{
	struct iovec iov[IOV_COUNT];
	long long r;

	fill_iov(iov, out_buf);
	r = sysret(pwritev(fd, iov, IOV_COUNT, off));
	log_call("pwritev", fd, off, IOV_TOTAL, r, 0);
	return r;
}

static long long do_preadv(int fd, long long off)
{
	struct iovec iov[IOV_COUNT];
	long long r;

	fill_iov(iov, in_buf);
	r = sysret(preadv(fd, iov, IOV_COUNT, off));
	log_call("preadv", fd, off, IOV_TOTAL, r, 0);
	return r;
}

/* offset -1 means "at the file position": the log then gives that position, as for readv */
static long long do_pwritev2(int fd, long long off, int flags, long long *pos)
{
	struct iovec iov[IOV_COUNT];
	long long r;

	fill_iov(iov, out_buf);
	r = sysret(pwritev2(fd, iov, IOV_COUNT, off, flags));
	log_call("pwritev2", fd, off == -1 ? *pos : off, IOV_TOTAL, r, flags);
	if (off == -1)
		advance(pos, r);
	return r;
}

static long long do_preadv2(int fd, long long off, int flags, long long *pos)
{
	struct iovec iov[IOV_COUNT];
	long long r;

	fill_iov(iov, in_buf);
	r = sysret(preadv2(fd, iov, IOV_COUNT, off, flags));
	log_call("preadv2", fd, off == -1 ? *pos : off, IOV_TOTAL, r, flags);
	if (off == -1)
		advance(pos, r);
	return r;
}

static long long do_lseek(int fd, long long off, int whence, long long *pos)
{
	long long r = sysret(lseek(fd, off, whence));

	log_call("lseek", fd, NONE, off, r, whence);
	if (r >= 0)
		*pos = r;
	return r;
}

static long long do_fsync(int fd)
{
	long long r = sysret(fsync(fd));

	log_call("fsync", fd, NONE, 0, r, 0);
	return r;
}

static long long do_fdatasync(int fd)
{
	long long r = sysret(fdatasync(fd));

	log_call("fdatasync", fd, NONE, 0, r, 0);
	return r;
}

static long long do_ftruncate(int fd, long long len)
{
	long long r = sysret(ftruncate(fd, len));

	log_call("ftruncate", fd, NONE, len, r, 0);
	return r;
}

static long long do_fallocate(int fd, int mode, long long off, long long len)
{
	long long r = sysret(fallocate(fd, mode, off, len));

	log_call("fallocate", fd, off, len, r, mode);
	return r;
}

static long long do_close(int fd)
{
	long long r = sysret(close(fd));

	log_call("close", fd, NONE, 0, r, 0);
	return r;
}

static int do_dup(int fd)
{
	long long r = sysret(dup(fd));

	log_call("dup", fd, NONE, 0, r, 0);
	if (r < 0)
		die("dup: %s", strerror((int)-r));
	return (int)r;
}

static int do_dup2(int fd, int newfd)
{
	long long r = sysret(dup2(fd, newfd));

	log_call("dup2", fd, NONE, 0, r, 0);
	want(r, newfd, "dup2");
	return (int)r;
}

/* dup3's own flags (O_CLOEXEC) are not among what `flags` records: see the header */
static int do_dup3(int fd, int newfd, int flags)
{
	long long r = sysret(dup3(fd, newfd, flags));

	log_call("dup3", fd, NONE, 0, r, 0);
	want(r, newfd, "dup3");
	return (int)r;
}

static int do_fcntl_dupfd(int fd, int lowest)
{
	long long r = sysret(fcntl(fd, F_DUPFD, lowest));

	log_call("fcntl", fd, NONE, lowest, r, F_DUPFD);
	want(r, lowest, "fcntl(F_DUPFD)");
	return (int)r;
}

struct thread_args {
	int shared_fd;
};

static void *second_thread(void *arg)
{
	const struct thread_args *a = arg;
	int fd = do_openat(target, O_RDWR);

	want(do_pwrite(fd, 4096, 12288), 4096, "thread pwrite64");
	want(do_pread(fd, 4096, 12288), 4096, "thread pread64");
	/* threads share the fd table: the main thread's fd is usable here too */
	want(do_pread(a->shared_fd, 4096, 8192), 4096, "thread pread64 on the shared fd");
	want(do_close(fd), 0, "thread close");
	return NULL;
}

static void child_process(void)
{
	long long pos = 0;
	int fd = do_openat(target, O_WRONLY);

	want(do_write(fd, 512, &pos), 512, "child write");
	want(do_close(fd), 0, "child close");
	_exit(0);
}

/* The same kinds of calls on a file the tracer must ignore; none of them is logged. */
static void nontarget_io(const char *dir)
{
	char sub[4096], path[4096];
	int fd;

	snprintf(sub, sizeof(sub), "%s/other", dir);
	snprintf(path, sizeof(path), "%s/other/nontarget.dat", dir);
	if (mkdir(sub, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", sub, strerror(errno));
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	if (write(fd, out_buf, 4096) != 4096 || lseek(fd, 0, SEEK_SET) != 0 ||
	    read(fd, in_buf, 4096) != 4096 || pwrite(fd, out_buf, 100, 8192) != 100 ||
	    pread(fd, in_buf, 100, 0) != 100 || fsync(fd) != 0 || close(fd) != 0)
		die("I/O on %s failed: %s", path, strerror(errno));
}

int main(int argc, char **argv)
{
	struct thread_args targs;
	pthread_t thread;
	long long pos = 0, open_pos = 0, creat_pos = 0, r;
	int fd, d1, d2, d3, d4, ofd, cfd, status;
	pid_t child;

	if (argc != 3) {
		fprintf(stderr, "usage: known_io TARGET_DIR LOG_PATH\n");
		return 2;
	}
	if (snprintf(target, sizeof(target), "%s/target.dat", argv[1]) >= (int)sizeof(target))
		die("TARGET_DIR too long");
	log_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (log_fd < 0)
		die("cannot open the log %s: %s", argv[2], strerror(errno));
	for (size_t i = 0; i < sizeof(out_buf); i++)
		out_buf[i] = 'a' + i % 26;

	/* 1: create, then writes of three sizes */
	fd = do_openat(target, O_CREAT | O_TRUNC | O_RDWR);
	want(do_write(fd, 4096, &pos), 4096, "write 4096");
	want(do_write(fd, 100, &pos), 100, "write 100");
	want(do_write(fd, 1, &pos), 1, "write 1");

	/* 2: each whence; a short read and a read of 0 at end of file */
	want(do_lseek(fd, 0, SEEK_SET, &pos), 0, "lseek SET");
	want(do_read(fd, 4096, &pos), 4096, "read 4096");
	want(do_lseek(fd, 50, SEEK_CUR, &pos), 4146, "lseek CUR");
	want(do_read(fd, 100, &pos), 51, "short read");
	want(do_read(fd, 100, &pos), 0, "read at EOF");
	want(do_lseek(fd, 0, SEEK_END, &pos), 4197, "lseek END");

	/* 3: explicit offsets leave the file position alone */
	want(do_pwrite(fd, 8192, 8192), 8192, "pwrite64");
	want(do_pread(fd, 4096, 0), 4096, "pread64");
	want(do_pread(fd, 4096, 14336), 2048, "short pread64");

	/* 4: vectors at the file position */
	want(do_writev(fd, &pos), IOV_TOTAL, "writev");
	want(do_lseek(fd, 0, SEEK_SET, &pos), 0, "lseek SET");
	want(do_readv(fd, &pos), IOV_TOTAL, "readv");

	/* 5: vectors at explicit offsets, and the v2 calls both ways */
	want(do_pwritev(fd, 16384), IOV_TOTAL, "pwritev");
	want(do_preadv(fd, 19000), 19594 - 19000, "short preadv");
	want(do_preadv2(fd, 0, 0, &pos), IOV_TOTAL, "preadv2 @0");
	want(do_preadv2(fd, -1, 0, &pos), IOV_TOTAL, "preadv2 @-1");
	want(do_pwritev2(fd, 20000, RWF_DSYNC, &pos), IOV_TOTAL, "pwritev2 @20000");
	want(do_pwritev2(fd, -1, 0, &pos), IOV_TOTAL, "pwritev2 @-1");
	want(pos, 9630, "tracked position after step 5");

	/* 6: sync, size changes */
	want(do_fsync(fd), 0, "fsync");
	want(do_fdatasync(fd), 0, "fdatasync");
	want(do_ftruncate(fd, 20000), 0, "ftruncate");
	/* some file systems cannot preallocate: what they say is logged, and that is the truth */
	r = do_fallocate(fd, FALLOC_FL_KEEP_SIZE, 20000, 4096);
	if (r != 0 && r != -EOPNOTSUPP)
		die("fallocate returned %lld", r);

	nontarget_io(argv[1]);

	/* 7: a second thread works on the file while this one reads it */
	targs.shared_fd = fd;
	if (pthread_create(&thread, NULL, second_thread, &targs) != 0)
		die("pthread_create failed");
	for (int i = 0; i < 4; i++)
		want(do_pread(fd, 4096, 0), 4096, "pread64 beside the thread");
	if (pthread_join(thread, NULL) != 0)
		die("pthread_join failed");

	/* 8: a child process with its own pid and its own open */
	child = fork();
	if (child < 0)
		die("fork: %s", strerror(errno));
	if (child == 0)
		child_process();
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("the child failed");

	/* 9: every way to duplicate; I/O through each copy moves the one shared position */
	d1 = do_dup(fd);
	want(do_write(d1, 100, &pos), 100, "write through dup");
	d2 = do_dup2(fd, 100);
	want(do_lseek(d2, 0, SEEK_SET, &pos), 0, "lseek through dup2");
	want(do_read(d2, 4096, &pos), 4096, "read through dup2");
	d3 = do_dup3(fd, 101, O_CLOEXEC);
	want(do_pwrite(d3, 100, 0), 100, "pwrite64 through dup3");
	d4 = do_fcntl_dupfd(fd, 200);
	want(do_readv(d4, &pos), IOV_TOTAL, "readv through F_DUPFD");
	want(do_close(d1), 0, "close dup");
	want(do_close(d2), 0, "close dup2");
	want(do_close(d3), 0, "close dup3");
	want(do_close(d4), 0, "close F_DUPFD");
	want(do_close(fd), 0, "close");

	/* 10: the old open syscall, which glibc never uses by itself */
	ofd = do_open(target, O_RDONLY | O_CLOEXEC);
	want(do_read(ofd, 4096, &open_pos), 4096, "read after open");
	want(do_close(ofd), 0, "close after open");

	/* 11: creat gives a write-only fd: reading it is the failing call */
	cfd = do_creat(target);
	want(do_write(cfd, 1, &creat_pos), 1, "write after creat");
	want(do_read(cfd, 10, &creat_pos), -EBADF, "read on a write-only fd");
	want(do_close(cfd), 0, "close after creat");

	if (close(log_fd) != 0)
		die("cannot close the log: %s", strerror(errno));
	return 0;
}
