/* SPDX-License-Identifier: GPL-2.0 */
/* uring.bpf.h — io_uring requests on target files: one record per request, submission to CQE.
 *
 * Purpose: a benchmark on io_uring (fio ioengine=io_uring, ...) moves its data without any
 * read or write syscall: io_uring_enter only hands the kernel a batch of SQEs (and is merely
 * counted, `async_calls`). This header follows each request itself, on two tracepoints:
 * io_uring_submit_req, after the SQE is prepared (io_init_req: opcode, fd, offset and length
 * are in the request, the file may not be: it is looked up at issue time), in the context of
 * the thread that submitted it (the io_uring_enter caller, or the ring's SQPOLL thread
 * iou-sqp-PID, a thread of the same process); and io_uring_complete, when its CQE is posted
 * (res known; in any task's context). Between the two the request waits in a slot of its
 * ring's row of `uring_slots`, or, when that slot is taken, in the hash `uring_inflight`;
 * either way known by its struct io_kiocb address.
 *
 * Example (`iowitness show` of fio --ioengine=io_uring --rw=randread --bs=4k --iodepth=32
 * --size=8m: fio lays the file out with write(2), drops it from the page cache, then reads
 * it from the disk 32 requests at a time):
 *
 *     syscall     calls  errors    bytes  short  min µs  mean µs  p50 µs  p90 µs  p99 µs
 *     write       2,050       0  8.0 MiB      0    2.67     3.63    3.23    3.66    6.95
 *     uring_read  2,048       0  8.0 MiB      0    26.6    260.1   264.1   381.4   449.9
 *
 * How to read it: a uring_read row counts requests, not syscalls (fio's io_uring_enter calls
 * are in the trace's `async_calls` counter); its latency runs from submission to the CQE, so
 * it includes the time spent in flight with up to 31 others, as fio's completion latency does.
 *
 * A record (struct iow_event): op IOW_OP_URING_READ/WRITE/FSYNC; start_ns the
 * submission, latency_ns until the CQE; offset where the I/O began in the file (an SQE offset
 * of -1, the file position, is resolved at completion: ki_pos then minus res); requested the
 * length asked (vectored ops: the sum of the iovecs); ret the CQE's res; fd the SQE's fd, or
 * the registered-file index with IOW_URING_FIXED_FILE; flags the IORING_OP_* opcode in bits
 * 0-7 and IOW_URING_* bits (events.h); ring the io_ring_ctx, numbered from 1 in the order
 * the probe first saw each ring used; tgid/tid the submitting thread.
 *
 * What is counted rather than recorded: a target request the in-flight map has no room for,
 * one that asks for no CQE on success (IOSQE_CQE_SKIP_SUCCESS), and one whose slot is found
 * still taken when its address is reused (its completion was never seen: a CQE overflow
 * flush posts without the request) count IOW_LOST_REQUESTS; other opcodes that move data of a
 * target file (READ_MULTISHOT, SPLICE, TEE, URING_CMD) count IOW_LOST_UNDECODED.
 *
 * Overhead: per io_uring request on the machine, an opcode switch; for a file-data opcode, the
 * submitter's traced bit (the CPU slot sys_enter claimed for io_uring_enter; a `procs` lookup
 * for an SQPOLL thread); for a traced one, the fd-table walk and target-file memo the syscalls
 * use, a few plain loads of the prepared request and a few stores into its slot. Per CQE on
 * the machine one hash lookup (is its ring one a traced request was seen on?), and for a
 * traced request a record. Vectored requests add one bpf_probe_read_user per iovec (at most
 * MAX_IOVEC). Measured with kernel BPF statistics (which add a clock read to each run) on fio
 * io_uring 4 KiB random reads of a cached file at iodepth 32: ~140 ns at submission and
 * ~125 ns at the CQE per traced request (~310 and ~255 with every request in the hash), plus
 * ~180 ns for the timing of its io_uring_enter; docs/performance.md has the slowdown.
 */
#ifndef IOWITNESS_URING_BPF_H
#define IOWITNESS_URING_BPF_H

#include "maps.bpf.h"
#include "core_fixes.bpf.h"
#include "targets.bpf.h"
#include "ops.bpf.h"
#include "summary.bpf.h"
#include "uring_wait.bpf.h"

/* io_uring's user ABI (include/uapi/linux/io_uring.h): numbers that never change, spelled
 * here so the probe builds against a vmlinux.h that lacks the newer ones */
#define URING_OP_READV 1
#define URING_OP_WRITEV 2
#define URING_OP_FSYNC 3
#define URING_OP_READ_FIXED 4
#define URING_OP_WRITE_FIXED 5
#define URING_OP_SYNC_FILE_RANGE 8
#define URING_OP_CLOSE 19
#define URING_OP_READ 22
#define URING_OP_WRITE 23
#define URING_OP_SPLICE 30
#define URING_OP_TEE 33
#define URING_OP_URING_CMD 46
#define URING_OP_READ_MULTISHOT 49
#define URING_OP_READV_FIXED 60
#define URING_OP_WRITEV_FIXED 61
/* the low byte of io_kiocb.flags is the SQE's IOSQE_* flags, bit for bit */
#define URING_SQE_FIXED_FILE 0x01
#define URING_SQE_IO_LINK 0x04
#define URING_SQE_IO_HARDLINK 0x08
#define URING_SQE_ASYNC 0x10
#define URING_SQE_CQE_SKIP_SUCCESS 0x40
#define URING_SETUP_IOPOLL 0x1
#define URING_SETUP_SQPOLL 0x2
#define URING_FSYNC_DATASYNC 0x1
#define URING_SPLICE_FD_IN_FIXED (1U << 31)
/* a registered file's slot keeps two flag bits under the file pointer (FFS_NOWAIT, FFS_ISREG) */
#define URING_FILE_PTR_FLAGS 0x3UL

/* not an op of events.h: an opcode that moves file data in a way no record describes */
#define URING_UNDECODED 0xffff

/* What an opcode is to the trace: an IOW_OP_URING_*, URING_UNDECODED, or 0 (not file data) */
static __always_inline __u16 uring_op_of(__u8 opcode)
{
	switch (opcode) {
	case URING_OP_READ:
	case URING_OP_READV:
	case URING_OP_READ_FIXED:
	case URING_OP_READV_FIXED:
		return IOW_OP_URING_READ;
	case URING_OP_WRITE:
	case URING_OP_WRITEV:
	case URING_OP_WRITE_FIXED:
	case URING_OP_WRITEV_FIXED:
		return IOW_OP_URING_WRITE;
	case URING_OP_FSYNC:
	case URING_OP_SYNC_FILE_RANGE:
		return IOW_OP_URING_FSYNC;
	case URING_OP_READ_MULTISHOT:
	case URING_OP_SPLICE:
	case URING_OP_TEE:
	case URING_OP_URING_CMD:
		return URING_UNDECODED;
	}
	return 0;
}

/* The file an SQE's fd names, as the issue will find it: the submitter's fd table (an SQPOLL
 * thread shares it), or the ring's registered files. NULL when not found now. */
static __always_inline struct file *uring_file_of(struct task_struct *task, struct io_ring_ctx *ctx, int fd,
						  bool fixed)
{
	struct io_rsrc_node *node = NULL;
	struct io_rsrc_node **nodes;

	if (!fixed)
		return file_of_fd(task, fd);
	if (!bpf_core_field_exists(ctx->file_table.data.nodes))
		return NULL;   /* an older table layout: the file is looked at on completion */
	if (fd < 0 || fd >= ctx->file_table.data.nr)
		return NULL;
	nodes = ctx->file_table.data.nodes;
	bpf_probe_read_kernel(&node, sizeof(node), &nodes[fd]);
	if (!node)
		return NULL;
	node = bpf_rdonly_cast(node, bpf_core_type_id_kernel(struct io_rsrc_node));
	return bpf_rdonly_cast((void *)(node->file_ptr & ~URING_FILE_PTR_FLAGS),
			       bpf_core_type_id_kernel(struct file));
}

static __always_inline bool uring_file_is_target(struct file *file, struct iow_file_key *key)
{
	if (!file)
		return false;
	return is_target(key, file_key_of(file, key));
}

/* Is the submitter traced? Inside io_uring_enter, sys_enter has already decided for this
 * thread on this CPU (struct cpu_slot); an SQPOLL thread makes no syscall: look it up. */
static __always_inline bool uring_submitter_traced(struct task_struct *task, struct cpu_slot *slot)
{
	if (slot && slot->owner == (__u64)task)
		return slot->traced;
	return process_is_traced(task->tgid);
}

/* SPLICE and TEE read from a second file (the SQE's splice_fd_in) */
static __always_inline bool uring_undecoded_on_target(struct task_struct *task, struct io_kiocb *req,
						      struct file *file)
{
	struct iow_file_key key;
	struct io_splice *sp;

	if (uring_file_is_target(file, &key))
		return true;
	if (req->opcode != URING_OP_SPLICE && req->opcode != URING_OP_TEE)
		return false;
	sp = bpf_rdonly_cast(&req->cmd, bpf_core_type_id_kernel(struct io_splice));
	return uring_file_is_target(uring_file_of(task, req->ctx, sp->splice_fd_in,
						  sp->flags & URING_SPLICE_FD_IN_FIXED), &key);
}

/* offset, length and flag bits of a prepared request, per op family */
static __always_inline void uring_request_args(struct io_kiocb *req, __u8 opcode, struct uring_request *r)
{
	if (r->op == IOW_OP_URING_FSYNC) {
		struct io_sync *sync = bpf_rdonly_cast(&req->cmd, bpf_core_type_id_kernel(struct io_sync));

		r->offset = sync->off;
		r->requested = sync->len;
		if (opcode == URING_OP_FSYNC && (sync->flags & URING_FSYNC_DATASYNC))
			r->flags |= IOW_URING_DATASYNC;
		return;
	}
	struct io_rw *rw = bpf_rdonly_cast(&req->cmd, bpf_core_type_id_kernel(struct io_rw));

	r->offset = rw->kiocb.ki_pos;
	if (r->offset == -1)
		r->flags |= IOW_URING_FILE_POS;
	if (opcode == URING_OP_READV || opcode == URING_OP_WRITEV || opcode == URING_OP_READV_FIXED ||
	    opcode == URING_OP_WRITEV_FIXED)
		/* the iovec array is still the submitter's (an SQPOLL thread shares its memory) */
		r->requested = iovec_bytes((const struct iovec *)rw->addr, rw->len);
	else
		r->requested = rw->len;
	if (opcode == URING_OP_READ_FIXED || opcode == URING_OP_WRITE_FIXED || opcode == URING_OP_READV_FIXED ||
	    opcode == URING_OP_WRITEV_FIXED)
		r->flags |= IOW_URING_FIXED_BUF;
}

/* io_uring_submit_req: a prepared request of a traced thread on a target file goes in flight */
static __always_inline void uring_submit(struct io_kiocb *req)
{
	/* each load through the request is fault-checked (about eight instructions once JITed):
	 * the opcode is read once */
	__u8 opcode = req->opcode;
	__u16 op = uring_op_of(opcode);
	/* the file's identity; ino 0: not known at submission, looked at on completion */
	struct iow_file_key target = {};
	struct uring_request spare, *r;
	struct uring_slot *waits_in;
	struct task_struct *task;
	struct io_ring_ctx *ctx;
	struct cpu_slot *slot;
	struct file *file;
	__u64 key = (__u64)req, sqe_flags, start_ns;
	__u32 ctx_flags, epoch, flags;
	__u16 ring;
	int fd;

	if (!op) {
		/* a traced process's fd closed through the ring: the fd memo is off from now on
		 * (targets.bpf.h; its end is not seen) */
		if (opcode == URING_OP_CLOSE) {
			slot = this_cpu_slot();
			if (slot && uring_submitter_traced(bpf_get_current_task_btf(), slot))
				fd_close_begins();
		}
		return;
	}
	task = bpf_get_current_task_btf();
	slot = this_cpu_slot();
	if (!slot || !uring_submitter_traced(task, slot))
		return;
	ctx = req->ctx;
	sqe_flags = req->flags;
	fd = req->cqe.fd;
	/* the file is looked up at issue, after this tracepoint: find it the way the issue will;
	 * an fd of the submitter's table through the CPU's memo of the last target call's fd, as
	 * the plain syscalls (targets.bpf.h: one load where there were ten) */
	file = req->file;
	if (!file && !(sqe_flags & URING_SQE_FIXED_FILE) && op != URING_UNDECODED) {
		struct files_struct *files = task->files;
		struct iow_file_key *memo = fd_memo_hit(slot, files, fd, &epoch);

		if (memo) {
			target = *memo;
			goto on_target;
		}
		__u64 closed = *(volatile __u64 *)&fds_closed;
		__u64 version = *(volatile __u64 *)&files_version;

		asm volatile("" ::: "memory");
		file = file_in_table(files, fd);
		if (file) {
			if (!target_file(slot, &target, file_key_of(file, &target), &epoch))
				return;
			fd_memo_fill(slot, files, fd, file, &target, epoch, closed, version);
		}
		goto on_target;
	}
	if (!file)
		file = uring_file_of(task, ctx, fd, sqe_flags & URING_SQE_FIXED_FILE);
	if (op == URING_UNDECODED) {
		if (uring_undecoded_on_target(task, req, file))
			count_lost(IOW_LOST_UNDECODED);
		return;
	}
	/* through the CPU's memo of the last target file, as the syscalls */
	if (file && !target_file(slot, &target, file_key_of(file, &target), &epoch))
		return;
on_target:
	if (sqe_flags & URING_SQE_CQE_SKIP_SUCCESS) {
		/* no CQE when it succeeds: its end is never seen */
		count_lost(IOW_LOST_REQUESTS);
		return;
	}

	start_ns = bpf_ktime_get_ns();
	ring = uring_ring_number(ctx);
	ctx_flags = ctx->flags;
	flags = opcode;
	if (sqe_flags & URING_SQE_FIXED_FILE)
		flags |= IOW_URING_FIXED_FILE;
	if (ctx_flags & URING_SETUP_SQPOLL)
		flags |= IOW_URING_SQPOLL;
	if (ctx_flags & URING_SETUP_IOPOLL)
		flags |= IOW_URING_IOPOLL;
	if (sqe_flags & URING_SQE_ASYNC)
		flags |= IOW_URING_ASYNC;
	if (sqe_flags & (URING_SQE_IO_LINK | URING_SQE_IO_HARDLINK))
		flags |= IOW_URING_LINKED;
	/* the request is written where it will wait (uring_wait.bpf.h), not on the stack first */
	r = uring_place(ring, key, req->cqe.user_data, &waits_in, &spare);
	r->start_ns = start_ns;
	r->key = target;
	if (slot->owner == (__u64)task) {
		/* inside io_uring_enter: the ids the CPU slot read when the call began */
		r->tgid = slot->owner_tgid;
		r->tid = slot->owner_tid;
	} else {
		/* a helper's scalars, not loads from the task: clang would merge the two branches'
		 * loads into one instruction the verifier refuses (two kinds of pointer) */
		__u64 pid_tgid = bpf_get_current_pid_tgid();

		r->tgid = pid_tgid >> 32;
		r->tid = (__u32)pid_tgid;
	}
	r->fd = fd;
	r->flags = flags;
	r->op = op;
	r->ring = ring;
	r->pad0 = 0;
	uring_request_args(req, opcode, r);

	uring_park(waits_in, key, r);
}

/* A request's CQE is posted: its record. The CQE's res is read from the request (io_kiocb.cqe,
 * which the CQE is a copy of), not from the tracepoint's third argument: that argument is a
 * struct io_uring_cqe pointer on this kernel and was the user_data on older ones
 * (core_fixes.bpf.h). */
static __always_inline void uring_record(struct uring_request *r, void *req_address, __u64 now)
{
	struct io_kiocb *req = bpf_rdonly_cast(req_address, bpf_core_type_id_kernel(struct io_kiocb));
	long res = req->cqe.res;
	struct call_args args;

	if (!r->key.ino && !uring_file_is_target(req->file, &r->key))
		return;
	args.offset = r->offset;
	args.requested = r->requested;
	args.flags = r->flags;
	args.fd = r->fd;
	args.ring = r->ring;
	if (r->flags & IOW_URING_FILE_POS) {
		/* the file position was read at issue into ki_pos, which moved by what was done */
		struct io_rw *rw = bpf_rdonly_cast(&req->cmd, bpf_core_type_id_kernel(struct io_rw));

		args.offset = rw->kiocb.ki_pos - (res > 0 ? res : 0);
	}
	deliver_record(r->tgid, r->tid, &r->key, r->op, r->start_ns, now, res, &args);
}

/* io_uring_complete: the CQE of a request in flight is posted; its record goes out */
static __always_inline void uring_complete(void *ring, void *req_address)
{
	struct io_kiocb *req = bpf_rdonly_cast(req_address, bpf_core_type_id_kernel(struct io_kiocb));
	__u64 key = (__u64)req_address;
	struct uring_slot *slot = NULL;
	struct uring_request *r = uring_find(ring, key, req->cqe.user_data, &slot);

	if (!r)
		return;
	uring_record(r, req_address, bpf_ktime_get_ns());
	uring_unpark(slot, key);
}

#endif
