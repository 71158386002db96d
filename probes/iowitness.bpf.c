// SPDX-License-Identifier: GPL-2.0
/* iowitness.bpf.c — one record per completed file syscall of a benchmark, from the kernel.
 *
 * Purpose: follow a process set (a PID and everything it forks, or any process) and a file
 * set (names matched when opened, inodes already known) and stream open/read/write/
 * pread/pwrite/readv/writev/preadv/pwritev(2)/lseek/fsync/fdatasync/close/dup/dup2/dup3/fcntl/
 * ftruncate/fallocate calls on target files, with latency, offset and size, to user space;
 * and the same for io_uring and libaio requests, copies, mappings and page faults on them.
 *
 * Example (from `iowitness show` of scripts/demo.sh: iozone -i0 -i1 -i2 -s 64m -r 64k):
 *
 *     syscall    calls  errors      bytes  short  min µs  mean µs  p50 µs   p90 µs   p99 µs
 *     read       3,074       0  192.1 MiB      0    2.60     14.0    9.48     11.0     47.2
 *     write      3,072       0  192.0 MiB      0    7.67     15.7    11.3     18.2     31.1
 *     fsync         10       0        0 B      0    46.8  13.6 ms   820.7  42.5 ms  48.0 ms
 *
 * How to read it: each row sums struct iow_event records (probes/events.h); latency is
 * sys_exit minus sys_enter of the same thread, so it includes time blocked in the kernel.
 *
 * Overhead: two raw tracepoint programs (sys_enter, sys_exit) run for every syscall on the
 * machine; calls that are not file syscalls return after one load from the syscall table
 * (ops.bpf.h), and the rarer routes (opens, closes, copies, mappings, async I/O) run out of
 * line, so a plain read or write on an fd runs a short path of its own. The rest works through a
 * per-CPU slot (struct cpu_slot): the entry time of the call in progress and memos of the
 * last target file and --summary key, all inlined array lookups. Threads outside the set
 * return after one compare (one task-storage lookup each time they come on a CPU), calls on
 * non-target files after an fd-table walk (plain loads, no helper call) and one hash
 * lookup. A target call writes one 72-byte record into its CPU's ring of the event area
 * (events.h): no lock, no atomic; the reader is woken once per `doorbell_events` records,
 * never per record. With settings.summary (--summary) no record is written: the call is
 * added to its per-CPU aggregate instead. Measured on a 1-byte pread loop with kernel BPF
 * statistics on (which add a clock read to each): entry ~70-100 ns, exit ~150-160 ns
 * (summary ~110-165 ns) per traced call, of which ~55 ns are the two clock reads a latency
 * needs. See docs/performance.md for the measured slowdowns.
 *
 * Where things are: this file holds every program (the entry points, by the names
 * collector/probe.py attaches); the work is in headers, each one idea: maps.bpf.h (settings,
 * per-CPU call state, shared maps), core_fixes.bpf.h (what depends on a kernel version),
 * targets.bpf.h (process and file sets), ops.bpf.h (syscall table, op kinds, argument
 * decoding), event_area.bpf.h (the record's way out), summary.bpf.h (--summary), block.bpf.h
 * and offcpu.bpf.h (the device view), and the other ways of moving a file's bytes: uring.bpf.h
 * (io_uring requests, submission to CQE), aio.bpf.h (libaio, io_submit to the io_getevents that
 * reaps), transfer.bpf.h (copy_file_range, sendfile, splice; clones counted), mapping.bpf.h,
 * faults.bpf.h and memory_walk.bpf.h (mmap and the page faults on target mappings). events.h is
 * the one definition shared with user space.
 *
 * Why raw tracepoints (tp_btf) and not syscalls:sys_enter_*: one program pair covers every
 * syscall and costs about half as much per call; kprobes and fentry are unavailable on the
 * kernels we target. Why the arguments are read at exit: x86-64 keeps the caller's argument
 * registers in pt_regs for the whole call, so the enter hook only has to stamp the time.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "events.h"
#include "core_fixes.bpf.h"
#include "maps.bpf.h"
#include "targets.bpf.h"
#include "event_area.bpf.h"
#include "ops.bpf.h"
#include "summary.bpf.h"
#include "block.bpf.h"
#include "offcpu.bpf.h"
#include "transfer.bpf.h"
#include "output.bpf.h"
#ifdef IOW_COMPAT
#include "compat.bpf.h"
#else
#include "aio.bpf.h"
#include "mapping.bpf.h"
#include "uring.bpf.h"
#include "faults.bpf.h"
#endif

char LICENSE[] SEC("license") = "GPL";

/* The rarer routes of a syscall run out of line, as BPF-to-BPF calls: the common path of a
 * plain read or write on an fd stays a short stretch of code of its own instead of being
 * spread through the opens', closes', copies', mappings' and async I/O's inlined work (what
 * those features added to the two programs tripled their size). */

/* sys_enter of a close, a mapping call or io_destroy: 1 if the call is to be timed */
static __noinline int enter_other_route(struct pt_regs *regs, __u32 route, __u32 op, struct cpu_slot *slot)
{
	struct task_struct *task = current_task();

	if (route == IOW_ROUTE_CLOSE) {
		/* the fd is gone at exit: resolve the file now. Timed whatever the file, so that
		 * its exit counts the close's end (the fd memo, targets.bpf.h); ino and dev 0: not
		 * a target, no record */
		struct file *file = file_of_fd(task, ARG1(regs));
		struct iow_file_key key;
		__u32 generation;

		fd_close_begins();
		slot->call.ino = 0;
		slot->call.dev = 0;
		if (!file)
			return 1;
		generation = file_key_of(file, &key);
		if (!is_target(&key, generation))
			return 1;
		slot->call.ino = key.ino;
		slot->call.dev = key.dev;
	} else if (route == IOW_ROUTE_DUP || route == IOW_ROUTE_FDS_GONE) {
		/* may close an fd: counted at entry and (timed) at exit (targets.bpf.h) */
		fd_close_begins();
	} else if (route == IOW_ROUTE_MAPPING) {
		/* munmap's mapping is gone at exit too: find its file now (mapping.bpf.h) */
		if (op == IOW_OP_MUNMAP && !munmap_target(task, regs, &slot->call))
			return 0;
	} else if (route == IOW_ROUTE_AIO_DESTROY) {
		/* not timed: its context's requests still in flight are forgotten (aio.bpf.h) */
		aio_context_destroyed(task, ARG1(regs));
		return 0;
	}
	return 1;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long nr)
{
	struct syscall_route route = route_of_syscall(nr);
	struct cpu_slot *slot;

	if (!route.route)
		return 0;
	slot = this_cpu_slot();
	if (!slot)
		return 0;
	/* the thread is known by its pt_regs: the task is looked up only for a new owner */
	if (slot->owner_regs != (__u64)regs)
		claim_cpu_slot(slot, current_task(), regs);
	if (!slot->traced)
		return 0;
	slot->call.nr = nr;
	/* a plain call on an fd needs only the time, as opens, async calls and transfers do; a
	 * call not to be timed leaves no time (a plain call's store of 0 here was overwritten
	 * by its clock read at once) */
	if (route.route != IOW_ROUTE_FD &&
	    (route.route == IOW_ROUTE_CLOSE || route.route == IOW_ROUTE_MAPPING || route.route == IOW_ROUTE_AIO_DESTROY ||
	     route.route == IOW_ROUTE_DUP || route.route == IOW_ROUTE_FDS_GONE) &&
	    !enter_other_route(regs, route.route, route.op, slot)) {
		slot->call.ts = 0;
		return 0;
	}
	slot->call.ts = bpf_ktime_get_ns();
	return 0;
}

/* sys_exit of a successful open: 1 if its file is a target (key and flags filled) */
static __noinline int exit_open(struct pt_regs *regs, __u32 op, long fd, struct iow_file_key *key, __u32 *flags)
{
	if (!handle_open(regs, op, fd, key, flags))
		return 0;
	if (settings.summary)
		next_phase_of(key);
	return 1;
}

/* when and what: the rarer routes' arguments beyond the five a BPF call takes */
struct call_span {
	__u64 start_ts;
	__u64 now;
	__u32 route;
	__u32 op;
};

/* sys_exit of an async call, a transfer or a mapping call: each part records its own */
static __noinline int exit_other_route(struct pt_regs *regs, long ret, struct call_span *span)
{
	struct task_struct *task = current_task();

	if (span->route == IOW_ROUTE_ASYNC) {
		count_async_call(span->op, span->now - span->start_ts);
#ifdef IOW_COMPAT
		on_aio_call(span->op, task, regs, ret, span->start_ts, span->now);
#endif
	} else if (span->route == IOW_ROUTE_TRANSFER) {
		on_transfer_call(span->op, task, regs, ret, span->start_ts, span->now);
	} else if (span->route == IOW_ROUTE_MAPPING) {
		on_mapping_call(span->op, task, regs, ret, span->start_ts, span->now);
	} else if (span->route == IOW_ROUTE_FDS_GONE) {
		fd_close_ends();
	}
	return 0;
}

#ifndef IOW_COMPAT
/* io_submit's and io_getevents' walks of their iocbs and events (aio.bpf.h) run in a program
 * of their own, which on_sys_exit tail-calls with the call's span in aio_exit_spans: verified
 * apart, they have a stack of their own (on_sys_exit's frames and theirs added up past the
 * verifier's 512 bytes) and multiply no state of on_sys_exit's (inlined, they took the
 * verifier past 1,000,000 instructions on Linux 6.18.44, and the probe did not load there).
 * A plain read or write never reaches the tail call. Loaded, never attached (collector/probe.py
 * TAIL_CALLED). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct call_span);
} aio_exit_spans SEC(".maps");

SEC("tp_btf/sys_exit")
int BPF_PROG(on_aio_exit, struct pt_regs *regs, long ret)
{
	__u32 zero = 0;
	struct call_span *span = bpf_map_lookup_elem(&aio_exit_spans, &zero);

	if (!span)
		return 0;
	count_async_call(span->op, span->now - span->start_ts);
	on_aio_call(span->op, current_task(), regs, ret, span->start_ts, span->now);
	return 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, int (void *));
} aio_exits SEC(".maps") = {
	.values = { [0] = (void *)&on_aio_exit },
};
#endif

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	long nr = regs->orig_ax;
	struct syscall_route route = route_of_syscall(nr);
	__u16 op = route.op;
	/* set in each route's branch, not here: clang zeroed them before the test above, on
	 * every syscall of the machine */
	struct call_args args;
	struct iow_file_key key, *target = &key;   /* the record's file: the memo's, in place */
	struct call_start *start;
	struct task_struct *task;
	struct task_ids ids;
	struct cpu_slot *slot;
	struct file *file;
	bool epoch_known = false;
	__u64 now, start_ts;
	__u32 epoch = 0;

	if (route.route < IOW_ROUTE_FD)
		return 0;
	/* the clock after the cheap test: most syscalls of the machine are not file syscalls */
	now = bpf_ktime_get_ns();
	slot = this_cpu_slot();
	if (!slot)
		return 0;
	start = end_of_call(slot, regs, nr, &start_ts, &task, &ids);
	if (!start)
		return 0;

	/* the call's file, and whether it is a target; the plain call on an fd first */
	if (route.route == IOW_ROUTE_FD) {
		args = (struct call_args){ .offset = -1, .fd = ARG1(regs) };
		/* the benchmark's own output (output.bpf.h): a call on any other fd pays this one
		 * compare; a write to fd 1 or 2 goes on below, in case its file is a target */
		if ((unsigned long)(args.fd - 1) < 2 && (op == IOW_OP_WRITE || op == IOW_OP_WRITEV)) {
			struct output_call call = { .start_ts = start_ts, .now = now, .ret = ret,
						    .fd = args.fd, .op = op };

			record_output(regs, &call);
		}
#ifdef IOW_COMPAT
		file = file_of_fd(task, args.fd);
		if (!file || !target_file(slot, &key, file_key_of(file, &key), &epoch))
			return 0;
#else
		/* the CPU's memo of the last target call's fd first: one load (targets.bpf.h) */
		struct files_struct *files = task->files;
		struct iow_file_key *memo = fd_memo_hit(slot, files, args.fd, &epoch);

		if (memo) {
			target = memo;
			file = file_at(slot->fd_file);
		} else {
			__u64 closed = *(volatile __u64 *)&fds_closed;
			__u64 version = *(volatile __u64 *)&files_version;

			asm volatile("" ::: "memory");
			file = file_in_table(files, args.fd);
			if (!file || !target_file(slot, &key, file_key_of(file, &key), &epoch))
				return 0;
			fd_memo_fill(slot, files, args.fd, file, &key, epoch, closed, version);
		}
#endif
		epoch_known = true;
		call_args_of(op, regs, file, ret, &args);
	} else if (route.route == IOW_ROUTE_OPEN) {
		args = (struct call_args){ .offset = -1, .fd = ret };
		if (ret < 0 || !exit_open(regs, op, ret, &key, &args.flags))
			return 0;
	} else if (route.route == IOW_ROUTE_CLOSE) {
		fd_close_ends();
		if (!start->ino && !start->dev)   /* not a target (enter_other_route) */
			return 0;
		args = (struct call_args){ .offset = -1, .fd = ARG1(regs) };
		key = (struct iow_file_key){ .ino = start->ino, .dev = start->dev };
	} else if (route.route == IOW_ROUTE_DUP) {
		/* newfd, if it was open, is closed now (targets.bpf.h); the record is oldfd's */
		fd_close_ends();
		args = (struct call_args){ .offset = -1, .fd = ARG1(regs) };
		file = file_of_fd(task, args.fd);
		if (!file || !target_file(slot, &key, file_key_of(file, &key), &epoch))
			return 0;
		epoch_known = true;
	} else {
		struct call_span span = { .start_ts = start_ts, .now = now, .route = route.route, .op = op };

#ifndef IOW_COMPAT
		if (route.route == IOW_ROUTE_ASYNC && ret > 0 &&
		    (op == IOW_ASYNC_IO_SUBMIT || op == IOW_ASYNC_IO_GETEVENTS)) {
			__u32 zero = 0;

			if (bpf_map_update_elem(&aio_exit_spans, &zero, &span, BPF_ANY) == 0)
				bpf_tail_call(ctx, &aio_exits, 0);
			/* only when the tail call could not be made: the requests are not followed */
			count_lost_n(IOW_LOST_REQUESTS, ret);
			return 0;
		}
#endif
		return exit_other_route(regs, ret, &span);
	}

	if (settings.summary)  /* no record: the verifier drops send_record in this mode */
		summarize_call(slot, target, epoch, epoch_known, op, ids.tgid, start_ts, now, &args, ret);
	else
		send_record(ids.tgid, ids.tid, target, op, start_ts, now, ret, &args);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid);
	__u32 child_tgid = BPF_CORE_READ(child, tgid);

	/* a new thread shares its tgid, which is already in the set */
	if (settings.all_processes || child_tgid == parent_tgid)
		return 0;
	if (!bpf_map_lookup_elem(&procs, &parent_tgid))
		return 0;
	if (follow_process(child_tgid))
		send_process_fact(IOW_META_FORK, child, parent_tgid, NULL);
	return 0;
}

/* A thread exits. The last thread of a process takes the process out of the set: its PID may
 * be given to an unrelated process next (pid_max is 32,768 on many machines). Its PID is not
 * free before the parent reaps it, so no new process can hold it while it is still listed.
 * Why signal->live and not the tracepoint's group_dead argument: the argument exists only
 * since Linux 6.16; live has reached 0 for the last thread on every kernel we load on. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 tid = BPF_CORE_READ(task, pid);
	__u32 tgid = BPF_CORE_READ(task, tgid);

	/* its fd table may be dropped next (exit_files): the fd memo's count (targets.bpf.h) */
	fd_close_begins();
	fd_close_ends();
	forget_task_start(tid);
	if (settings.all_processes)
		return 0;
	forget_off_cpu(tid);
	if (BPF_CORE_READ(task, signal, live.counter) == 0)
		bpf_map_delete_elem(&procs, &tgid);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);

	/* a thread other than the leader that execs takes the leader's pid (de_thread), maybe
	 * without leaving the CPU: its slot's ids are stale, and the next file syscall claims the
	 * slot afresh */
	release_cpu_slot(task);
	if (settings.all_processes || !bpf_map_lookup_elem(&procs, &tgid))
		return 0;
	send_process_fact(IOW_META_EXEC, task, 0, BPF_CORE_READ(bprm, filename));
	return 0;
}

/* the device view (block.bpf.h): a request on a watched device is noted when it starts and
 * when it is issued, and recorded when it completes */
SEC("tp_btf/block_io_start")
int BPF_PROG(on_block_io_start, struct request *rq)
{
	__u32 dev = request_dev(rq);

	if (!bpf_map_lookup_elem(&block_devs, &dev))
		return 0;
	note_submitter(rq, true);
	return 0;
}

static __always_inline void block_rq_issued(struct request *rq)
{
	__u64 key = (__u64)rq;
	__u32 dev = request_dev(rq);
	struct block_start *s;

	if (!bpf_map_lookup_elem(&block_devs, &dev))
		return;
	s = bpf_map_lookup_elem(&block_inflight, &key);
	/* not seen starting (a flush, or a kernel without block_io_start): the issuer may be anyone */
	if (!s)
		s = note_submitter(rq, false);
	if (s)
		s->issue_ns = bpf_ktime_get_ns();
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(on_block_rq_issue, struct request *rq)
{
	block_rq_issued(rq);
	return 0;
}

#ifdef IOW_COMPAT
/* before Linux 5.11 (a54895fa057c "block: remove the request_queue to argument request based
 * tracepoints") the request came second: collector/probe.py loads the one that fits */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(on_block_rq_issue_q, struct request_queue *q, struct request *rq)
{
	block_rq_issued(rq);
	return 0;
}
#endif

SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_block_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	__u32 dev = request_dev(rq);

	if (!bpf_map_lookup_elem(&block_devs, &dev))
		return 0;
	send_block_record(rq, bpf_map_lookup_elem(&block_inflight, &key), dev, error, nr_bytes);
	/* a partial completion leaves the rest in flight: __data_len still counts it here */
	if (nr_bytes >= BPF_CORE_READ(rq, __data_len))
		bpf_map_delete_elem(&block_inflight, &key);
	return 0;
}

/* per-phase CPU (offcpu.bpf.h), and the syscall slot of the thread leaving the CPU */
#ifdef IOW_COMPAT
SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 prev_state = preempt ? 0 : task_state(prev);
#else
SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
#endif
	release_cpu_slot(prev);
	if (settings.all_processes)
		return 0;
	note_off_cpu(prev, preempt ? 0 : prev_state & 0xff);
	send_off_cpu_stretch(next);
	return 0;
}

#ifndef IOW_COMPAT
/* io_uring requests (uring.bpf.h): in flight from the SQE's submission to its CQE. The
 * completion comes first in this file, so it is attached first (attach_all goes in program
 * order): a request the submission hook sees always has its CQE seen too. */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(on_uring_complete, void *ring, void *req)
{
	uring_complete(ring, req);
	return 0;
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(on_uring_submit, struct io_kiocb *req)
{
	uring_submit(req);
	return 0;
}

SEC("tp_btf/io_uring_create")
int BPF_PROG(on_uring_create, int fd, void *ring, __u32 sq_entries, __u32 cq_entries, __u32 flags)
{
	uring_created(ring);
	return 0;
}

/* libaio (aio.bpf.h): requests that will never be reaped are cleared, not kept forever. A
 * process's contexts die with its last thread or its exec (the kernel's exit_aio); one
 * context dies at io_destroy, seen by on_sys_enter (IOW_ROUTE_AIO_DESTROY). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(aio_on_exit, struct task_struct *task)
{
	if (BPF_CORE_READ(task, signal, live.counter) == 0)
		aio_forget(BPF_CORE_READ(task, tgid), 0);
	return 0;
}

/* a libaio request's kernel completion (aio.bpf.h), for direct I/O on iomap file systems */
SEC("tp_btf/iomap_dio_complete")
int BPF_PROG(on_iomap_dio_complete, struct kiocb *iocb, int error, ssize_t ret)
{
	aio_dio_completed(iocb);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(aio_on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	aio_forget(BPF_CORE_READ(task, tgid), 0);
	return 0;
}

/* memory-mapped target files (mapping.bpf.h): a load or store on a page of a target mapping
 * that is not mapped yet makes no syscall, only a fault */
SEC("tp_btf/page_fault_user")
int BPF_PROG(on_page_fault_user, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	on_page_fault(address, error_code, false);
	return 0;
}

/* the same in kernel mode: a syscall copying to or from a target mapping (write(2) from a
 * mapped buffer) */
SEC("tp_btf/page_fault_kernel")
int BPF_PROG(on_page_fault_kernel, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	on_page_fault(address, error_code, true);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork_mappings, struct task_struct *parent, struct task_struct *child)
{
	inherit_span(BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, tgid));
	return 0;
}

/* a read fault's fault-around is done, or it looks its page up: how much the fault mapped
 * (mapping.bpf.h, struct pending_fault) */
SEC("tp_btf/mm_filemap_map_pages")
int BPF_PROG(on_fault_around_done, struct address_space *mapping, unsigned long start, unsigned long end)
{
	on_fault_around(mapping, start);
	return 0;
}

SEC("tp_btf/mm_filemap_fault")
int BPF_PROG(on_filemap_fault_start, struct address_space *mapping, unsigned long index)
{
	on_filemap_fault(mapping);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit_mappings, struct task_struct *task)
{
	flush_pending_fault(task);
	forget_span(task);
	return 0;
}
#endif
