/* SPDX-License-Identifier: GPL-2.0 */
/* transfer.bpf.h - copy_file_range, sendfile and splice: a record per target side.
 *
 * (being written: issue 16)
 */
#ifndef IOWITNESS_TRANSFER_BPF_H
#define IOWITNESS_TRANSFER_BPF_H

#include "maps.bpf.h"
#include "targets.bpf.h"
#include "ops.bpf.h"
#include "summary.bpf.h"

/* copy_file_range, sendfile or splice (op: its _FROM op) of a traced thread has returned */
static __always_inline void on_transfer_call(__u16 op, struct task_struct *task, struct pt_regs *regs, long ret,
					     __u64 start_ts, __u64 now)
{
}

#endif
