/* SPDX-License-Identifier: GPL-2.0 */
/* block.bpf.h — the device view: block requests on the devices under target files.
 *
 * Purpose: block_io_start fires where a request is accounted as started, in the submitter's
 * context (the benchmark for direct I/O and fsync, a kworker for write-back); block_rq_issue
 * when the driver gets it; block_rq_complete when (part of) it is done. One struct iow_block
 * record per completion goes to `block_events`, filtered in the kernel to the devices in
 * `block_devs`, which a target file's device joins when the file enters the set. The device
 * is the one diskstats accounts the request to (request_dev, core_fixes.bpf.h).
 *
 * How to read a record: issue_ns - start_ns is time queued in the block layer, complete_ns -
 * issue_ns the time the device took (struct iow_block in events.h; docs/trace-format.md).
 *
 * Overhead: per block request on the machine, one hash lookup (`block_devs`) on each of the
 * three tracepoints; on a watched device, a hash update and lookup more and one ring record.
 */
#ifndef IOWITNESS_BLOCK_BPF_H
#define IOWITNESS_BLOCK_BPF_H

#include "maps.bpf.h"
#include "core_fixes.bpf.h"
#include "targets.bpf.h"   /* S_IFMT, S_IFBLK */

/* the device view's filter: devices under target files, kernel encoding; sized by user space
 * (ProbeConfig.max_devices), a device it has no room for is counted (IOW_LOST_DEVICES) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} block_devs SEC(".maps");

struct block_start {
	__u64 issue_ns;
	__u32 tgid;
	__u32 tid;
	__u8 comm[IOW_COMM_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} block_events SEC(".maps");

/* requests in flight on watched devices, by address */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct block_start);
} block_inflight SEC(".maps");

/* A new target file's block device (none on tmpfs, NFS, ...) joins the device filter. */
static __always_inline void watch_block_device(struct file *file)
{
	struct inode *inode = BPF_CORE_READ(file, f_inode);
	struct block_device *bdev = BPF_CORE_READ(inode, i_sb, s_bdev);
	__u32 dev;
	__u8 yes = 1;

	/* a block device opened as a file: its requests go to the device it is, not to the
	 * device under /dev's file system (none) */
	if ((BPF_CORE_READ(inode, i_mode) & S_IFMT) == S_IFBLK)
		dev = BPF_CORE_READ(inode, i_rdev);
	else if (bdev)
		dev = BPF_CORE_READ(bdev, bd_dev);
	else
		return;
	if (!bpf_map_lookup_elem(&block_devs, &dev) && bpf_map_update_elem(&block_devs, &dev, &yes, BPF_ANY))
		count_lost(IOW_LOST_DEVICES);
}

static __always_inline struct block_start *note_submitter(struct request *rq, bool known)
{
	__u64 key = (__u64)rq;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct block_start s = {};

	/* only a task context knows who submitted; an interrupt context does not */
	if (known) {
		s.tgid = pid_tgid >> 32;
		s.tid = (__u32)pid_tgid;
		bpf_get_current_comm(s.comm, sizeof(s.comm));
	}
	bpf_map_update_elem(&block_inflight, &key, &s, BPF_ANY);
	return bpf_map_lookup_elem(&block_inflight, &key);
}

/* one record for a completion; s: what start and issue noted, NULL when they were not seen */
static __always_inline void send_block_record(struct request *rq, struct block_start *s, __u32 dev,
					      blk_status_t error, unsigned int nr_bytes)
{
	struct iow_block *b = bpf_ringbuf_reserve(&block_events, sizeof(*b), 0);

	if (!b) {
		count_lost(IOW_LOST_BLOCK);
		return;
	}
	b->start_ns = BPF_CORE_READ(rq, start_time_ns);
	b->issue_ns = s ? s->issue_ns : 0;
	b->complete_ns = bpf_ktime_get_ns();
	b->sector = BPF_CORE_READ(rq, __sector);
	b->bytes = nr_bytes;
	b->dev = dev;
	b->tgid = s ? s->tgid : 0;
	b->tid = s ? s->tid : 0;
	b->op = REQUEST_OP(rq);
	b->error = error;
	if (s)
		__builtin_memcpy(b->comm, s->comm, sizeof(b->comm));
	else
		__builtin_memset(b->comm, 0, sizeof(b->comm));
	bpf_ringbuf_submit(b, wake_when_filling(&block_events));
}

#endif
