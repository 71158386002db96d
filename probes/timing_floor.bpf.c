// SPDX-License-Identifier: GPL-2.0
/* timing_floor.bpf.c — the least a per-call latency tracer can do: time every syscall.
 *
 * Purpose: scripts/bench/observers.py (observer "timing-floor", opt-in) attaches these two
 * programs to measure what timing each call costs above the empty-program floor
 * (floor.bpf.c): one clock read at entry kept in a per-CPU slot, one at exit, the difference
 * added to a per-CPU total. No filter, no record, no per-thread state: every syscall of the
 * machine is timed, which for the benchmark's own calls is exactly what any tracer that
 * reports latencies must do.
 *
 * Example (observers.py --observers floor,timing-floor,iowitness,iowitness-summary):
 *
 *     workload       observer       ratio median
 *     fio-rand-read  floor          0.94
 *     fio-rand-read  timing-floor   0.90
 *
 * How to read it: what lies between the floor and this is the clock; what lies between this
 * and iowitness is iowitness's filtering, bookkeeping and record (or aggregate).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct timing_slot {
	__u64 entry_ns;
	__u64 total_ns;   /* read by nobody: it keeps the exit program's clock read from being dropped */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct timing_slot);
} timing_slots SEC(".maps");

SEC("tp_btf/sys_enter")
int BPF_PROG(timing_sys_enter, struct pt_regs *regs, long nr)
{
	__u32 zero = 0;
	struct timing_slot *slot = bpf_map_lookup_elem(&timing_slots, &zero);

	if (slot)
		slot->entry_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(timing_sys_exit, struct pt_regs *regs, long ret)
{
	__u32 zero = 0;
	struct timing_slot *slot = bpf_map_lookup_elem(&timing_slots, &zero);

	if (slot)
		slot->total_ns += bpf_ktime_get_ns() - slot->entry_ns;
	return 0;
}
