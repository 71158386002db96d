/* SPDX-License-Identifier: GPL-2.0 */
/* output.bpf.h — the benchmark's own output: every write and writev a traced process makes to
 * its fd 1 or 2, whatever they point at (a pipe, a pty, a file, a socket), with its kernel
 * times and its first bytes.
 *
 * Purpose: a figure a benchmark prints at time t is about calls that ended before t; this is
 * where the trace learns t. One struct iow_output (events.h) per call into `output_events`,
 * with up to IOW_OUTPUT_BYTES of what the call wrote; the rest of a longer call is counted by
 * user space (ret - copied), never kept. A record the ring has no room for is counted
 * (IOW_LOST_OUTPUT): that line then has no time.
 *
 * Example (`iowitness show` of a run of tests/workloads/timeline_bench): "output: 4 writes,
 * 0 cut at 4 KiB".
 *
 * How to read it: the records join the text the capture process kept by bytes, stream by
 * stream (collector/format/printed_timeline.py); under `attach` they are the text.
 *
 * Overhead: on_sys_exit's plain-fd path tests `fd - 1 < 2` (one compare and branch) before it
 * looks at the fd's file; only a call on fd 1 or 2 comes here, out of line. Such a call costs
 * a ring reservation and a copy of at most 4 KiB (a writev: each iovec into a per-CPU scratch
 * buffer, then one copy).
 */
#ifndef IOWITNESS_OUTPUT_BPF_H
#define IOWITNESS_OUTPUT_BPF_H

#include "maps.bpf.h"
#include "core_fixes.bpf.h"

#define IOW_OUTPUT_IOVEC 16   /* iovecs of a writev looked at for its first bytes */

/* 4 MiB: about a thousand calls between two drains (the collector drains every 0.1 s or
 * when the ring is an eighth full) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} output_events SEC(".maps");

/* a writev's first bytes, gathered iovec by iovec: twice the bytes kept, so that an iovec
 * copied at any offset below IOW_OUTPUT_BYTES stays inside it (what the verifier proves) */
struct output_scratch {
	__u8 bytes[2 * IOW_OUTPUT_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct output_scratch);
} output_scratch_space SEC(".maps");

/* what on_sys_exit knows of the call: more than the five arguments a BPF call takes */
struct output_call {
	__u64 start_ts;
	__u64 now;
	__s64 ret;
	__s32 fd;
	__u32 op;
};

static __always_inline __u32 writev_first_bytes(struct iow_output *o, struct pt_regs *regs, __u64 want)
{
	const struct iovec *iov = (const struct iovec *)ARG2(regs);
	unsigned long count = ARG3(regs);
	struct output_scratch *s;
	__u32 zero = 0;
	__u64 off = 0;

	s = bpf_map_lookup_elem(&output_scratch_space, &zero);
	if (!s)
		return 0;
	for (__u32 i = 0; i < IOW_OUTPUT_IOVEC; i++) {
		struct iovec v = {};
		__u64 len;

		if (i >= count || off >= want)
			break;
		bpf_probe_read_user(&v, sizeof(v), &iov[i]);
		len = v.iov_len;
		if (len > want - off)
			len = want - off;
		/* both bounded for the verifier: off < 4096, len <= 4096 */
		off &= IOW_OUTPUT_BYTES - 1;
		len &= 2 * IOW_OUTPUT_BYTES - 1;
		if (len > IOW_OUTPUT_BYTES)
			len = IOW_OUTPUT_BYTES;
		if (bpf_probe_read_user(&s->bytes[off], len, v.iov_base))
			break;
		off += len;
	}
	if (off > IOW_OUTPUT_BYTES)
		off = IOW_OUTPUT_BYTES;
	bpf_probe_read_kernel(o->data, sizeof(o->data), s->bytes);
	return off;
}

/* sys_exit of a write or writev on fd 1 or 2 of a traced thread: one record, whatever the
 * fd points at. The call goes on to the target-file path after this: a target file on fd 1
 * or 2 is still recorded as an event, and the analysis decides whether it is output or data
 * (analysis/stream_walk.py: what fd 1 and 2 pointed at when the program started is output). */
static __noinline int record_output(struct pt_regs *regs, struct output_call *call)
{
	struct task_struct *task = current_task();
	struct file *file = file_of_fd(task, call->fd);
	struct iow_file_key key = {};
	struct iow_output *o;
	__u64 want;

	/* attach --file follows every process of the machine until one touches a target: which of
	 * them is the benchmark is known only afterwards, and every other program's chatter (a
	 * `yes > /dev/null` makes a write to fd 1 per 8 KiB) would fill the ring and the trace */
	if (settings.all_processes)
		return 0;
	o = bpf_ringbuf_reserve(&output_events, sizeof(*o), 0);
	if (!o) {
		count_lost(IOW_LOST_OUTPUT);
		return 0;
	}
	o->type = 0;
	if (file) {
		file_key_of(file, &key);
		o->type = BPF_CORE_READ(file, f_inode, i_mode) >> 12;
	}
	o->start_ns = call->start_ts;
	o->end_ns = call->now;
	o->ino = key.ino;
	o->ret = call->ret;
	o->tgid = KFIELD(task, tgid);
	o->tid = KFIELD(task, pid);
	o->dev = key.dev;
	o->fd = call->fd;
	o->op = call->op;
	o->copied = 0;
	want = call->ret > 0 ? call->ret : 0;
	if (want > IOW_OUTPUT_BYTES)
		want = IOW_OUTPUT_BYTES;
	if (call->op == IOW_OP_WRITE) {
		if (want && !bpf_probe_read_user(o->data, want, (const void *)ARG2(regs)))
			o->copied = want;
	} else if (want) {
		o->copied = writev_first_bytes(o, regs, want);
	}
	bpf_ringbuf_submit(o, wake_when_filling(&output_events));
	return 0;
}

#endif
