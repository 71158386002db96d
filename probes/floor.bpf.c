// SPDX-License-Identifier: GPL-2.0
/* floor.bpf.c — empty programs on the tracepoints iowitness uses: the cost no tracer avoids.
 *
 * Purpose: the benchmark scripts/bench/observers.py attaches these programs to measure
 * the floor, what any tracer on tp_btf sys_enter/sys_exit costs before it does anything:
 * the tracepoint dispatch and one BPF program call per syscall entry and exit; and, for
 * io_uring benchmarks, one call per request submitted and per CQE posted (the io_uring
 * programs are left out on a kernel without io_uring: scripts/bench/tracers.py).
 *
 * Example (observers.py, tight 1-byte pread loop, calls/s relative to untraced):
 *
 *     workload     observer   ratio median (range)
 *     pread-loop   floor      0.72 (0.70 .. 0.75)
 *
 * How to read it: iowitness's full and summary modes are judged against this ratio, not
 * against 1.0: what lies between the floor and them is iowitness's own work.
 *
 * Overhead: the floor itself, by definition; nothing else is loaded.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sys_enter")
int BPF_PROG(floor_sys_enter, struct pt_regs *regs, long nr)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_sys_exit, struct pt_regs *regs, long ret)
{
	return 0;
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(floor_uring_submit, void *req)
{
	return 0;
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(floor_uring_complete, void *ring, void *req, void *cqe)
{
	return 0;
}
