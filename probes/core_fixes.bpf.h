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

/* Two builds of one source (probes/Makefile): the fast object, and with -DIOW_COMPAT the
 * compatible one for kernels back to Linux 5.8. collector/kfeatures.py probes the running
 * kernel for what the fast one needs and loads the compatible one when something is missing
 * (or when --probe compat / IOWITNESS_PROBE=compat asks for it). Every kernel interface the
 * compatible object uses is checked against the version that introduced it by
 * tests/unit/test_compat_kernel_table.py (table: probes/kernel_versions.py). */

/* The hot path reads kernel memory with plain loads (the verifier turns them into
 * fault-safe ones) instead of bpf_probe_read_kernel calls: BTF-typed pointers allow it, and a
 * load costs a few ns where a helper call costs tens. `regs` of tp_btf is such a pointer, and
 * so is `task` (bpf_get_current_task_btf, Linux 5.11: 3ca1032ab7ab "bpf: Add
 * bpf_get_current_task_btf helper"); a file read out of the fd table becomes one through
 * bpf_rdonly_cast, a kfunc since Linux 6.2 (a35b9af4ec2c "bpf: Add a kfunc for generic type
 * cast"). The compatible object has neither: its task is a plain number
 * (bpf_get_current_task, Linux 4.8) and every field of a task or file is read with
 * BPF_CORE_READ (bpf_probe_read_kernel, Linux 5.5). KFIELD(p, f) is the one spelling of both. */
#ifdef IOW_COMPAT
#define KFIELD(p, f) BPF_CORE_READ(p, f)
#define current_task() ((struct task_struct *)bpf_get_current_task())
#else
#define KFIELD(p, f) ((p)->f)
#define current_task() bpf_get_current_task_btf()
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#endif

/* A task_struct at an address the probe kept (struct cpu_slot's owner): a pointer the fast
 * object loads fields through (bpf_rdonly_cast, as for a file below), a plain number for the
 * compatible one (its KFIELD reads with bpf_probe_read_kernel). */
#ifdef IOW_COMPAT
#define task_at(address) ((struct task_struct *)(address))
#else
#define task_at(address) \
	((struct task_struct *)bpf_rdonly_cast((void *)(address), bpf_core_type_id_kernel(struct task_struct)))
#endif

#ifndef IOW_COMPAT
/* the file at fd of fd table `files` (task->files), NULL for none */
static __always_inline struct file *file_in_table(struct files_struct *files, long fd)
{
	struct fdtable *fdt = files->fdt;
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

/* a struct file at an address the probe kept (struct cpu_slot's fd_file), as task_at */
#define file_at(address) ((struct file *)bpf_rdonly_cast((void *)(address), bpf_core_type_id_kernel(struct file)))
#endif

static __always_inline struct file *file_of_fd(struct task_struct *task, long fd)
{
#ifdef IOW_COMPAT
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **slots;
	struct file *file = NULL;

	if (fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	slots = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&file, sizeof(file), &slots[fd]);
	return file;
#else
	return file_in_table(task->files, fd);
#endif
}

/* Who submitted a block request is known only from block_io_start, a tracepoint since Linux
 * 6.5 (5a80bd075f3b "block: introduce block_io_start/block_io_done tracepoints"). On an older
 * kernel collector/probe.py does not load on_block_io_start, and on_block_rq_issue records the
 * request with its submitter unknown (note_submitter(rq, false), block.bpf.h).
 *
 * The device a request is accounted to: rq->part, NULL for requests the block layer does not
 * account (flushes, passthrough); then the bio's device (bio->bi_bdev, since Linux 5.12:
 * 309dca309fc3 "block: store a block_device pointer in struct bio"), then the whole disk. */
#ifdef IOW_COMPAT
/* Before Linux 5.11 (0d02129e76ed "block: merge struct block_device and struct hd_struct")
 * rq->part was a struct hd_struct, whose device number is in its struct device; the whole
 * disk was rq->rq_disk (q->disk came in 5.15). The ___old types name those layouts for CO-RE;
 * on a newer kernel they do not resolve and bpf_core_type_exists() cuts their branch. */
struct hd_struct___old {
	struct device __dev;
} __attribute__((preserve_access_index));

struct gendisk___old {
	struct hd_struct___old part0;
} __attribute__((preserve_access_index));

struct request___old {
	struct hd_struct___old *part;
	struct gendisk___old *rq_disk;
} __attribute__((preserve_access_index));

static __always_inline __u32 request_dev(struct request *rq)
{
	struct block_device *part = NULL;

	if (bpf_core_type_exists(struct hd_struct___old)) {
		struct request___old *old = (void *)rq;
		struct hd_struct___old *hd = BPF_CORE_READ(old, part);

		if (hd)
			return BPF_CORE_READ(hd, __dev.devt);
		return BPF_CORE_READ(old, rq_disk, part0.__dev.devt);
	}
	part = BPF_CORE_READ(rq, part);
	if (!part && bpf_core_field_exists(struct bio, bi_bdev))
		part = BPF_CORE_READ(rq, bio, bi_bdev);
	if (!part && bpf_core_field_exists(struct request_queue, disk))
		part = BPF_CORE_READ(rq, q, disk, part0);
	return part ? BPF_CORE_READ(part, bd_dev) : 0;
}
#else
static __always_inline __u32 request_dev(struct request *rq)
{
	struct block_device *part = BPF_CORE_READ(rq, part);

	if (!part)
		part = BPF_CORE_READ(rq, bio, bi_bdev);
	if (!part)
		part = BPF_CORE_READ(rq, q, disk, part0);
	return part ? BPF_CORE_READ(part, bd_dev) : 0;
}

#endif

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
 * p->state when emitting sched_switch event"): the fast on_sched_switch takes it as its fourth
 * argument, which an older kernel's tracepoint does not have. The compatible one reads the
 * state from the task, as the kernel did before that change (a wake-up racing the switch can
 * show the thread running where it was blocked: the off-CPU reason is then "preempted").
 * The field was `state` until Linux 5.14 (2f064a59a11f "sched: Change task_struct::state"). */
#ifdef IOW_COMPAT
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *task)
{
	if (bpf_core_field_exists(task->__state))
		return BPF_CORE_READ(task, __state);
	return BPF_CORE_READ((struct task_struct___old *)task, state);
}
#endif

#endif
