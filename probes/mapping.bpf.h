/* SPDX-License-Identifier: GPL-2.0 */
/* mapping.bpf.h - memory-mapped target files: mmap, munmap, msync, madvise, and the faults on them.
 *
 * (being written: issue 16)
 */
#ifndef IOWITNESS_MAPPING_BPF_H
#define IOWITNESS_MAPPING_BPF_H

#include "maps.bpf.h"
#include "targets.bpf.h"
#include "ops.bpf.h"
#include "summary.bpf.h"

/* mmap, munmap, msync or madvise of a traced thread has returned */
static __always_inline void on_mapping_call(__u16 op, struct task_struct *task, struct pt_regs *regs, long ret,
					    __u64 start_ts, __u64 now)
{
}

#endif
