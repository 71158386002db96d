/* SPDX-License-Identifier: GPL-2.0 */
/* aio.bpf.h - libaio requests: io_submit's iocbs paired with their io_getevents completions.
 *
 * (being written: issue 16)
 */
#ifndef IOWITNESS_AIO_BPF_H
#define IOWITNESS_AIO_BPF_H

#include "maps.bpf.h"
#include "targets.bpf.h"
#include "ops.bpf.h"
#include "summary.bpf.h"

/* io_submit or io_getevents (slot: IOW_ASYNC_*) of a traced thread has returned */
static __always_inline void on_aio_call(__u32 slot, struct task_struct *task, struct pt_regs *regs, long ret,
					__u64 start_ts, __u64 now)
{
}

#endif
