/* SPDX-License-Identifier: GPL-2.0 */
/* compat.bpf.h — what the compatible object (-DIOW_COMPAT) does in place of the parts it leaves out.
 *
 * Purpose: the compatible object loads on kernels back to Linux 5.8 (core_fixes.bpf.h says
 * how it differs). Three parts of the fast object cannot be built from what 5.8 has and are
 * not in it: libaio (aio.bpf.h walks the iocbs with bpf_loop, Linux 5.17, and forgets a
 * context with bpf_for_each_map_elem, 5.13), io_uring (uring.bpf.h follows requests on
 * io_uring_submit_req, 5.19/6.0, through bpf_rdonly_cast, 6.2) and memory-mapped files
 * (mapping.bpf.h, faults.bpf.h and memory_walk.bpf.h walk page tables and the vma tree with
 * bpf_rdonly_cast and bpf_map_lookup_percpu_elem, 5.19, and keep faults in task storage).
 * Their calls are counted, never dropped silently: each io_submit's and io_uring_enter's
 * requests and each mmap of a target file add to IOW_LOST_COMPAT, which every report states
 * as "not followed" with the reason. The calls themselves stay counted in `async_calls`.
 *
 * Overhead: one counter per such call; a mmap also looks its fd up (file_of_fd).
 */
#ifndef IOWITNESS_COMPAT_BPF_H
#define IOWITNESS_COMPAT_BPF_H

#include "maps.bpf.h"
#include "targets.bpf.h"

/* io_submit returns the requests it queued, io_uring_enter the SQEs it consumed: those are
 * the requests not followed (io_getevents only reaps them) */
static __always_inline void on_aio_call(__u32 slot, struct task_struct *task, struct pt_regs *regs, long ret,
					__u64 start_ts, __u64 now)
{
	if (ret > 0 && (slot == IOW_ASYNC_IO_SUBMIT || slot == IOW_ASYNC_URING_ENTER))
		count_lost_n(IOW_LOST_COMPAT, ret);
}

/* a successful mmap of a target file: its page faults are not followed */
static __always_inline void on_mapping_call(__u16 op, struct task_struct *task, struct pt_regs *regs, long ret,
					    __u64 start_ts, __u64 now)
{
	struct iow_file_key key = {};
	struct file *file;

	if (op != IOW_OP_MMAP || (ret < 0 && ret > -4096))
		return;
	file = file_of_fd(task, (long)ARG5(regs));
	if (file && is_target(&key, file_key_of(file, &key)))
		count_lost(IOW_LOST_COMPAT);
}

/* munmap, msync, madvise of a mapping: not followed (their mmap was counted) */
static __always_inline bool munmap_target(struct task_struct *task, struct pt_regs *regs, struct call_start *call)
{
	return false;
}

/* io_destroy: no libaio request is kept, so none is left to forget */
static __always_inline void aio_context_destroyed(struct task_struct *task, __u64 ctx)
{
}

#endif
