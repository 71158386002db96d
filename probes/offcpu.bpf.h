/* SPDX-License-Identifier: GPL-2.0 */
/* offcpu.bpf.h — per-phase CPU: when a traced thread is off the CPU, and why.
 *
 * Purpose: one struct iow_offcpu record each time a thread of the process set comes back on
 * the CPU: when it left, and whether it was preempted or blocked. With the syscall events
 * this splits a phase's time into user CPU, kernel CPU, blocked in a call (the device, fsync)
 * and waiting for a CPU. Not with attach --file alone (every process is traced, every switch
 * would be a record): on_sched_switch returns before this when settings.all_processes.
 *
 * Overhead: two hash lookups and four plain loads per context switch on the machine, one
 * update and one ring record per switch of a traced thread; nothing on the syscall path.
 */
#ifndef IOWITNESS_OFFCPU_BPF_H
#define IOWITNESS_OFFCPU_BPF_H

#include "maps.bpf.h"
#include "targets.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} offcpu_events SEC(".maps");

#define PF_EXITING 0x00000004   /* task->flags: the thread is in do_exit (include/linux/sched.h) */

struct offcpu_since {
	__u64 ts;
	__u32 state;
	__u32 pad0;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_since);
} offcpu_start SEC(".maps");

/* a thread of the set leaves the CPU: remember when, and in which state */
static __always_inline void note_off_cpu(struct task_struct *prev, __u32 state)
{
	/* sched_switch's task pointers are the kernel's own (trusted): a plain load each, not a
	 * bpf_probe_read_kernel call, on every context switch of the machine */
	__u32 tgid = prev->tgid, tid;

	/* an exiting thread's last switches are not waits of the benchmark, and its entry would
	 * outlive it (on_exit has already taken it out) */
	if (prev->flags & PF_EXITING)
		return;
	if (bpf_map_lookup_elem(&procs, &tgid)) {
		struct offcpu_since now = { .ts = bpf_ktime_get_ns(), .state = state };

		tid = prev->pid;
		if (bpf_map_update_elem(&offcpu_start, &tid, &now, BPF_ANY))
			count_lost(IOW_LOST_OFFCPU);
	}
}

/* a thread of the set exits: its entry goes, so the map holds live threads only */
static __always_inline void forget_off_cpu(__u32 tid)
{
	bpf_map_delete_elem(&offcpu_start, &tid);
}

/* a thread of the set comes back: one record of the stretch it was away */
static __always_inline void send_off_cpu_stretch(struct task_struct *next)
{
	__u32 tgid = next->tgid, tid;
	struct offcpu_since *since;
	struct iow_offcpu *o;

	if (!bpf_map_lookup_elem(&procs, &tgid))
		return;
	tid = next->pid;
	since = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!since || !since->ts)
		return;
	o = bpf_ringbuf_reserve(&offcpu_events, sizeof(*o), 0);
	if (!o) {
		count_lost(IOW_LOST_OFFCPU);
	} else {
		o->off_ns = since->ts;
		o->on_ns = bpf_ktime_get_ns();
		o->tgid = tgid;
		o->tid = tid;
		o->state = since->state;
		o->pad0 = 0;
		bpf_ringbuf_submit(o, wake_when_filling(&offcpu_events));
	}
	since->ts = 0;
}

#endif
