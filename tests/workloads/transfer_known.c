/* transfer_known.c — sendfile, splice and copy_file_range calls whose every field is known:
 * the ground truth of the transfer tests (tests/kernel/test_transfer.py).
 *
 * Usage: transfer_known SRC DST LOG_PATH
 *   SRC must exist and hold at least 262144 bytes (the test writes it); DST is created or
 *   truncated. For every transfer call, appends to LOG_PATH (outside the traced files) one
 *   JSON line per side that is a file, as the probe should record it, and prints one line per
 *   call on stdout. Exits 0, or 1 with a message on stderr when a call did not return what
 *   the sequence below documents.
 *
 * Example log line (fields as in probes/events.h, struct iow_event):
 *   {"op": "splice_to", "fd": 4, "flags": 5, "offset": 17000, "requested": 4096, "ret": 4096}
 *   op        <call>_from on the source side, <call>_to on the destination side
 *   fd        that side's fd;  flags: the other side's fd (a pipe's, for splice)
 *   offset    where the transfer began on that side: the offset argument when a pointer is
 *             given, the file position otherwise (tracked here, never asked: an lseek would
 *             be a call on the target)
 *   requested the length argument;  ret: the raw return, bytes moved or -errno
 *
 * The sequence (S = SRC fd, read only; D = DST fd; p = a pipe; positions start at 0):
 *   1  sendfile(D, S, NULL, 10000)                      S @0     D @0        S 10000 D 10000
 *   2  sendfile(D, S, &50000, 7000)                     S @50000 D @10000    D 17000
 *   3  splice(S, NULL, p, NULL, 4096); splice(p, NULL, D, NULL, 4096)
 *                                                       S @10000; D @17000   S 14096 D 21096
 *   4  splice(S, &100000, p, NULL, 3000); splice(p, NULL, D, &200000, 3000)
 *   5  copy_file_range(S, NULL, D, NULL, 8192)          S @14096 D @21096    S 22288 D 29288
 *   6  copy_file_range(S, &65536, D, &131072, 12345)
 *   7  copy_file_range(S, &1000, D, NULL, 500)          D @29288             D 29788
 *   8  copy_file_range(S, &SIZE-100, D, &300000, 4096) = 100 (short: the end of SRC)
 *   9  copy_file_range(S, &SIZE, D, &400000, 4096) = 0 (at the end)
 *  10  copy_file_range(S, &7, D, NULL, 64, flags 1) = -EINVAL: offsets where it would have begun
 *  11  sendfile(D, S, NULL, 20000) at S's position      S @22288 D @29788
 *
 * Build: gcc -O1 -pthread -Wall -Werror -o transfer_known transfer_known.c (tests/support/workload.py)
 * Overhead: none to speak of; 13 transfer calls, about 80 KiB moved, well under a second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NONE (-1LL)

static int log_fd = -1;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("transfer_known: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
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

static void log_side(const char *op, int fd, int other_fd, long long offset, long long requested, long long ret)
{
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "{\"op\": \"%s\", \"fd\": %d, \"flags\": %d, \"offset\": %lld, \"requested\": %lld, "
			 "\"ret\": %lld}\n", op, fd, other_fd, offset, requested, ret);

	if (n <= 0 || n >= (int)sizeof(line) || write(log_fd, line, n) != n)
		die("cannot write the log line for %s", op);
}

/* one transfer between two sides; a side whose offset is NONE is a pipe (not logged) */
static void log_call(const char *call, int in_fd, long long in_at, int out_fd, long long out_at,
		     long long requested, long long ret)
{
	char op[64];

	if (in_at != NONE) {
		snprintf(op, sizeof(op), "%s_from", call);
		log_side(op, in_fd, out_fd, in_at, requested, ret);
	}
	if (out_at != NONE) {
		snprintf(op, sizeof(op), "%s_to", call);
		log_side(op, out_fd, in_fd, out_at, requested, ret);
	}
	printf("%s in %d @%lld out %d @%lld len %lld = %lld\n", call, in_fd, in_at, out_fd, out_at, requested, ret);
}

static void advance(long long *pos, long long ret)
{
	if (ret > 0)
		*pos += ret;
}

static long long do_sendfile(int out, int in, long long *in_off, long long count, long long *in_pos,
			     long long *out_pos, long long expect)
{
	off_t off = in_off ? *in_off : 0;
	long long in_at = in_off ? *in_off : *in_pos;
	long long r = sysret(sendfile(out, in, in_off ? &off : NULL, count));

	want(r, expect, "sendfile");
	log_call("sendfile", in, in_at, out, *out_pos, count, r);
	if (in_off)
		want(off, *in_off + (r > 0 ? r : 0), "sendfile's offset pointer");
	else
		advance(in_pos, r);
	advance(out_pos, r);
	return r;
}

/* splice or copy_file_range: a side's position pointer is NULL (use and advance *pos) or an
 * explicit offset; pos NULL means the side is a pipe */
static long long do_two_sided(const char *call, int in, long long *in_off, long long *in_pos, int out,
			      long long *out_off, long long *out_pos, long long len, unsigned flags,
			      long long expect)
{
	loff_t ioff = in_off ? *in_off : 0, ooff = out_off ? *out_off : 0;
	long long in_at = in_off ? *in_off : in_pos ? *in_pos : NONE;
	long long out_at = out_off ? *out_off : out_pos ? *out_pos : NONE;
	long long r;

	if (strcmp(call, "splice") == 0)
		r = sysret(splice(in, in_off ? &ioff : NULL, out, out_off ? &ooff : NULL, len, flags));
	else
		r = sysret(copy_file_range(in, in_off ? &ioff : NULL, out, out_off ? &ooff : NULL, len, flags));
	want(r, expect, call);
	log_call(call, in, in_at, out, out_at, len, r);
	if (in_off)
		want(ioff, *in_off + (r > 0 ? r : 0), "the input offset pointer");
	else if (in_pos)
		advance(in_pos, r);
	if (out_off)
		want(ooff, *out_off + (r > 0 ? r : 0), "the output offset pointer");
	else if (out_pos)
		advance(out_pos, r);
	return r;
}

int main(int argc, char **argv)
{
	long long s_pos = 0, d_pos = 0, size, off, off2;
	struct stat st;
	int s, d, p[2];

	if (argc != 4)
		die("usage: transfer_known SRC DST LOG_PATH");
	log_fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (log_fd < 0)
		die("cannot open the log %s: %s", argv[3], strerror(errno));
	s = open(argv[1], O_RDONLY);
	if (s < 0 || fstat(s, &st) != 0)
		die("cannot open %s: %s", argv[1], strerror(errno));
	size = st.st_size;
	if (size < 262144)
		die("%s holds %lld bytes, fewer than 262144", argv[1], size);
	d = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (d < 0)
		die("cannot open %s: %s", argv[2], strerror(errno));
	if (pipe(p) != 0)
		die("pipe: %s", strerror(errno));

	/* 1, 2: sendfile at the input's position, then at an offset */
	do_sendfile(d, s, NULL, 10000, &s_pos, &d_pos, 10000);
	off = 50000;
	do_sendfile(d, s, &off, 7000, &s_pos, &d_pos, 7000);
	/* 3, 4: splice through a pipe, at the positions, then at offsets */
	do_two_sided("splice", s, NULL, &s_pos, p[1], NULL, NULL, 4096, 0, 4096);
	do_two_sided("splice", p[0], NULL, NULL, d, NULL, &d_pos, 4096, 0, 4096);
	off = 100000;
	do_two_sided("splice", s, &off, &s_pos, p[1], NULL, NULL, 3000, 0, 3000);
	off = 200000;
	do_two_sided("splice", p[0], NULL, NULL, d, &off, &d_pos, 3000, 0, 3000);
	/* 5-7: copy_file_range with both, neither and one offset pointer */
	do_two_sided("copy_file_range", s, NULL, &s_pos, d, NULL, &d_pos, 8192, 0, 8192);
	off = 65536, off2 = 131072;
	do_two_sided("copy_file_range", s, &off, &s_pos, d, &off2, &d_pos, 12345, 0, 12345);
	off = 1000;
	do_two_sided("copy_file_range", s, &off, &s_pos, d, NULL, &d_pos, 500, 0, 500);
	/* 8, 9: short at the end of the source, then nothing at it */
	off = size - 100, off2 = 300000;
	do_two_sided("copy_file_range", s, &off, &s_pos, d, &off2, &d_pos, 4096, 0, 100);
	off = size, off2 = 400000;
	do_two_sided("copy_file_range", s, &off, &s_pos, d, &off2, &d_pos, 4096, 0, 0);
	/* 10: refused (no flag is defined): nothing moved, the offsets say where it would have begun */
	off = 7;
	do_two_sided("copy_file_range", s, &off, &s_pos, d, NULL, &d_pos, 64, 1, -EINVAL);
	/* 11: sendfile again at the input's position, which the earlier calls moved */
	do_sendfile(d, s, NULL, 20000, &s_pos, &d_pos, 20000);

	close(p[0]);
	close(p[1]);
	close(d);
	close(s);
	return 0;
}
