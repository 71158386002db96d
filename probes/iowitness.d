#!/usr/sbin/dtrace -qs
/*
 * iowitness.d — iowitness for DTrace systems (illumos, FreeBSD, macOS): one line per completed
 * file syscall of the traced processes, in the line protocol of the bpftrace backend
 * (probes/iowitness.bt), for `iowitness import --dtrace FILE` to turn into a trace.
 *
 * NOT YET RUN ON A DTRACE SYSTEM. It is written against the documented providers (syscall,
 * proc, the fds[] array and fileinfo_t) and its output format is tested on Linux with lines
 * made in that format (tests/data/dtrace/, tests/unit/test_dtrace_import.py); the first run on
 * illumos, FreeBSD or macOS may need fixes. Please report what it printed.
 *
 * Usage (root, or the dtrace_proc and dtrace_user privileges):
 *   dtrace -q -c './mybench args' -o run.d.txt -s probes/iowitness.d /data/bench
 *   dtrace -q -p PID -o run.d.txt -s probes/iowitness.d
 *   iowitness import --dtrace run.d.txt -o run.iwt
 * The one argument is a path prefix: only files under it are traced (none: every file outside
 * /dev and /proc). With -c or -p, the command or process and every process it starts are
 * traced ($target and its progeny); without either, every process.
 *
 * Example output (tab-separated; what `iowitness import --dtrace` reads; cf. probes/iowitness.bt):
 *   READY
 *   P	8811834533121	4120	iozone	/usr/bin/iozone
 *   F	8811836120442	4120	3	-100	0	0	0	iozone	/data/bench/iozone.tmp
 *   E	tracepoint:syscalls:sys_exit_open	8811836101210	19232	4120	1	3	0	0	-1	0	3	770
 *   E	tracepoint:syscalls:sys_exit_write	8811836212003	30110	4120	1	3	0	0	0	65536	65536	0
 *
 * How to read it: E = one call: op (named as Linux's exit tracepoint: pread is pread64),
 * start (ns, DTrace's `timestamp`: monotonic, from an arbitrary origin), latency (ns), pid,
 * thread id, fd, dev and inode (always 0: fileinfo_t has neither; import numbers the files by
 * path), offset where the I/O began (fds[fd].fi_offset; the explicit offset of pread/pwrite;
 * -1: none), bytes asked for (readv/writev: 0, the vector is not summed; lseek: its offset;
 * ftruncate: the length), return value (or -errno), flags (opens: open flags; lseek: whence).
 * F = a file became a target at this open (time, pid, fd, dirfd, 0, 0, 0, execname, its path
 * as fds[] names it), K = a process started one (time, parent, child, execname), P = exec
 * (time, pid, execname, the command's arguments), X = a traced process exited. DTrace's own
 * "dtrace: N drops on CPU M" lines (stderr; give -o the same file or append them) are counted
 * as lost events.
 *
 * Overhead: each call of a traced process fires the entry and return probes of its syscall
 * (the syscall provider: a few hundred ns each, more on a busy machine); the predicates stop
 * other processes' calls at once. Every line is formatted in user space by dtrace(1) from its
 * per-CPU buffers (bufsize below): a benchmark making more calls than dtrace drains per
 * switchrate interval loses records, counted in the "drops" lines.
 *
 * Not recorded: io_uring, aio, mmap and page faults, dup/fcntl (an fd made by them is not
 * followed), fds a child inherits across fork (its own opens are followed), the device view,
 * and inode identity (two paths of one file are two files).
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option switchrate=10hz
#pragma D option bufsize=32m
#pragma D option dynvarsize=32m
#pragma D option strsize=256

BEGIN
{
	printf("READY\n");
}

/* the process set: the -c command or -p process and its progeny; every process without them */
proc:::exec-success
/$target == 0 || progenyof($target)/
{
	printf("P\t%d\t%d\t%s\t%s\n", timestamp, pid, execname, curpsinfo->pr_psargs);
}

proc:::create
/$target == 0 || progenyof($target)/
{
	printf("K\t%d\t%d\t%d\t%s\n", timestamp, pid, args[0]->pr_pid, execname);
}

proc:::exit
/$target == 0 || progenyof($target)/
{
	printf("X\t%d\n", pid);
}

/* opens: remember the call, decide at its return (when fds[] names the file) */
syscall::open:entry, syscall::open64:entry, syscall::open_nocancel:entry
/$target == 0 || progenyof($target)/
{
	self->ts = timestamp;
	self->op = "open";
	self->dirfd = -100;
	self->flags = arg1;
	self->opening = 1;
}

syscall::creat:entry, syscall::creat64:entry
/$target == 0 || progenyof($target)/
{
	self->ts = timestamp;
	self->op = "creat";
	self->dirfd = -100;
	self->flags = 0x241;    /* creat(2): O_WRONLY|O_CREAT|O_TRUNC, in Linux's numbers */
	self->opening = 1;
}

syscall::openat:entry, syscall::openat64:entry, syscall::openat_nocancel:entry
/$target == 0 || progenyof($target)/
{
	self->ts = timestamp;
	self->op = "openat";
	self->dirfd = (int)arg0;
	self->flags = arg2;
	self->opening = 1;
}

syscall::open*:return, syscall::creat*:return
/self->opening && (int)arg1 >= 0/
{
	this->path = fds[arg1].fi_pathname;
	this->wanted = index(this->path, $$1) == 0 && index(this->path, "/dev/") != 0 &&
	    index(this->path, "/proc/") != 0;
}

syscall::open*:return, syscall::creat*:return
/self->opening && (int)arg1 >= 0 && this->wanted/
{
	target[pid, arg1] = 1;
	printf("F\t%d\t%d\t%d\t%d\t0\t0\t0\t%s\t%s\n", timestamp, pid, arg1, self->dirfd, execname, this->path);
	printf("E\ttracepoint:syscalls:sys_exit_%s\t%d\t%d\t%d\t%d\t%d\t0\t0\t-1\t0\t%d\t%d\n", self->op,
	    self->ts, timestamp - self->ts, pid, tid, arg1, arg1, self->flags);
}

syscall::open*:return, syscall::creat*:return
/self->opening/
{
	self->opening = 0;
	self->ts = 0;
}

/* calls on a target fd: what the call asked at entry, the line at return */
syscall::read:entry, syscall::write:entry, syscall::read_nocancel:entry, syscall::write_nocancel:entry
/target[pid, arg0]/
{
	self->ts = timestamp;
	self->op = probefunc == "read_nocancel" ? "read" : probefunc == "write_nocancel" ? "write" : probefunc;
	self->fd = arg0;
	self->offset = fds[arg0].fi_offset;
	self->asked = arg2;
	self->flags = 0;
}

syscall::readv:entry, syscall::writev:entry
/target[pid, arg0]/
{
	self->ts = timestamp;
	self->op = probefunc;
	self->fd = arg0;
	self->offset = fds[arg0].fi_offset;
	self->asked = 0;
	self->flags = 0;
}

syscall::pread:entry, syscall::pwrite:entry, syscall::pread64:entry, syscall::pwrite64:entry,
syscall::pread_nocancel:entry, syscall::pwrite_nocancel:entry
/target[pid, arg0]/
{
	self->ts = timestamp;
	self->op = index(probefunc, "pread") == 0 ? "pread64" : "pwrite64";
	self->fd = arg0;
	self->offset = arg3;
	self->asked = arg2;
	self->flags = 0;
}

syscall::lseek:entry, syscall::llseek:entry
/target[pid, arg0]/
{
	self->ts = timestamp;
	self->op = "lseek";
	self->fd = arg0;
	self->offset = -1;
	self->asked = arg1;
	self->flags = arg2;
}

syscall::fsync:entry, syscall::fdatasync:entry, syscall::fdsync:entry, syscall::fsync_nocancel:entry,
syscall::close:entry, syscall::close_nocancel:entry
/target[pid, arg0]/
{
	self->ts = timestamp;
	self->op = probefunc == "fdatasync" ? "fdatasync" : index(probefunc, "close") == 0 ? "close" : "fsync";
	self->fd = arg0;
	self->offset = -1;
	self->asked = 0;
	self->flags = 0;
}

syscall::ftruncate:entry, syscall::ftruncate64:entry
/target[pid, arg0]/
{
	self->ts = timestamp;
	self->op = "ftruncate";
	self->fd = arg0;
	self->offset = -1;
	self->asked = arg1;
	self->flags = 0;
}

syscall::read*:return, syscall::write*:return, syscall::pread*:return, syscall::pwrite*:return,
syscall::lseek:return, syscall::llseek:return, syscall::fsync*:return, syscall::fdatasync:return,
syscall::fdsync:return, syscall::close*:return, syscall::ftruncate*:return
/self->ts && !self->opening/
{
	printf("E\ttracepoint:syscalls:sys_exit_%s\t%d\t%d\t%d\t%d\t%d\t0\t0\t%d\t%d\t%d\t%d\n", self->op,
	    self->ts, timestamp - self->ts, pid, tid, self->fd, self->offset, self->asked,
	    errno != 0 ? -errno : (int64_t)arg1, self->flags);
}

syscall::close*:return
/self->ts && !self->opening && errno == 0/
{
	target[pid, self->fd] = 0;
}

syscall::read*:return, syscall::write*:return, syscall::pread*:return, syscall::pwrite*:return,
syscall::lseek:return, syscall::llseek:return, syscall::fsync*:return, syscall::fdatasync:return,
syscall::fdsync:return, syscall::close*:return, syscall::ftruncate*:return
/self->ts && !self->opening/
{
	self->ts = 0;
}

END
{
	printf("S\t0\n");
}
