/* SPDX-License-Identifier: GPL-2.0 */
/* core_fixes.bpf.h — what the probe does differently because of one kernel version or another.
 *
 * Purpose: every place where iowitness.bpf.c depends on a kernel change, in one file, each
 * naming the change: a reader checking the probe against a kernel looks here first. The
 * kernel interfaces the probe needs (tp_btf, task storage, BPF ring buffers, mmapable arrays,
 * BTF) are checked by the loader (collector/preflight.py), not here.
 *
 * Overhead: none of its own; file_of_fd is on every traced call's path (a few plain loads).
 */
#ifndef IOWITNESS_CORE_FIXES_BPF_H
#define IOWITNESS_CORE_FIXES_BPF_H

/* The x86-64 syscall ABI: arguments in di, si, dx, r10, r8, r9 (r10, not cx, for the 4th);
 * the syscall number stays in orig_ax for the whole call. */
#define ARG1(regs) ((regs)->di)
#define ARG2(regs) ((regs)->si)
#define ARG3(regs) ((regs)->dx)
#define ARG4(regs) ((regs)->r10)
#define ARG5(regs) ((regs)->r8)
#define ARG6(regs) ((regs)->r9)

/* The hot path reads kernel memory with plain loads (the verifier turns them into
 * fault-safe ones) instead of bpf_probe_read_kernel calls: BTF-typed pointers allow it, and a
 * load costs a few ns where a helper call costs tens. `regs` of tp_btf is such a pointer, and
 * so is `task`; a file read out of the fd table becomes one through bpf_rdonly_cast, a kfunc
 * since Linux 6.2 (a35b9af4ec2c "bpf: Add a kfunc for generic type cast"). */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

static __always_inline struct file *file_of_fd(struct task_struct *task, long fd)
{
	struct fdtable *fdt = task->files->fdt;
	struct kiocb *entry;

	if (fd < 0 || fd >= fdt->max_fds)
		return NULL;
	/* an array indexed at run time is not a BTF access the verifier allows: its slot is read
	 * as the first field of a struct that starts with a file pointer (kiocb), a plain load
	 * where bpf_probe_read_kernel was a helper call (~15-20 ns a call, pread loop) */
	entry = bpf_rdonly_cast((void *)((unsigned long)fdt->fd + fd * sizeof(struct file *)),
				bpf_core_type_id_kernel(struct kiocb));
	return entry->ki_filp;
}

/* Who submitted a block request is known only from block_io_start, a tracepoint since Linux
 * 6.5 (5a80bd075f3b "block: introduce block_io_start/block_io_done tracepoints"). On an older
 * kernel collector/probe.py does not load on_block_io_start, and on_block_rq_issue records the
 * request with its submitter unknown (note_submitter(rq, false), block.bpf.h).
 *
 * The device a request is accounted to: rq->part, NULL for requests the block layer does not
 * account (flushes, passthrough); then the bio's device (bio->bi_bdev, since Linux 5.12:
 * 309dca309fc3 "block: store a block_device pointer in struct bio"), then the whole disk. */
static __always_inline __u32 request_dev(struct request *rq)
{
	struct block_device *part = BPF_CORE_READ(rq, part);

	if (!part)
		part = BPF_CORE_READ(rq, bio, bi_bdev);
	if (!part)
		part = BPF_CORE_READ(rq, q, disk, part0);
	return part ? BPF_CORE_READ(part, bd_dev) : 0;
}

/* REQ_OP_MASK is a macro, which BTF does not carry: the low REQ_OP_BITS (8) bits of cmd_flags */
#define REQUEST_OP(rq) (BPF_CORE_READ(rq, cmd_flags) & 0xff)

/* How much of a file finish_fault maps: one page, except on tmpfs, until Kiryl Shutsemau's
 * change to mm/memory.c "map large folios in one shot" (series "mm: Improve mlock tracking
 * for large folios"); with it, the whole large folio holding the page when it fits the vma
 * and the page table. Seen on 6.18.44: one write fault per 64 KiB folio of an ext4 file.
 * Taken as from 6.18: on a kernel that has it earlier, a fault record says one page where
 * the kernel mapped a folio (short, never more than was mapped). mapping.bpf.h sizes a
 * fault record with it. */
extern int LINUX_KERNEL_VERSION __kconfig;

static __always_inline bool fault_maps_whole_folio(void)
{
	return LINUX_KERNEL_VERSION >= KERNEL_VERSION(6, 18, 0);
}

/* io_uring: the probe follows requests on io_uring_submit_req (struct io_kiocb *req), which
 * replaced io_uring_submit_sqe when the io_uring tracepoints were given the request (Linux
 * 5.19/6.0); collector/probe.py does not load the io_uring programs on a kernel without it.
 * io_uring_complete's arguments changed too (ctx, req, user_data, res, ... before; ctx, req,
 * cqe now): on_uring_complete reads only the first two, the same on both, and takes the
 * result from the request. A ring's registered files moved into io_file_table.data.nodes
 * (checked on 6.18); uring_file_of (uring.bpf.h) tests the field and, where it is missing,
 * leaves the file to be checked on completion. */

/* sched_switch passes prev_state since Linux 5.18 (fa2c3254d7cf "sched/tracing: Don't re-read
 * p->state when emitting sched_switch event"): on_sched_switch takes it as its fourth
 * argument, which an older kernel's tracepoint does not have (the load fails there). */

#endif
