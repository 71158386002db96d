/* SPDX-License-Identifier: GPL-2.0 */
/* transfer.bpf.h — copy_file_range, sendfile and splice: one record per side that is a target file.
 *
 * Purpose: these calls move bytes from one fd to another inside the kernel, so neither the
 * read nor the write the benchmark "does" is a read or write syscall. At the exit of such a
 * call of a traced thread, each side whose file is a target gets a record: the source side
 * op *_FROM (kind read), the destination side op *_TO (kind write), both with the call's
 * entry time, latency and return (bytes moved, or -errno). In a record, fd is that side's
 * fd, flags the OTHER side's fd, requested the length asked, offset where the transfer
 * began on that side (the offset argument or the file position, minus what moved). A side
 * that is a pipe or a socket is never a target: splice file -> pipe -> file gives one
 * SPLICE_FROM and, by the second call, one SPLICE_TO.
 * The FICLONE, FICLONERANGE and FIDEDUPERANGE ioctls share (or compare) file extents with no
 * byte count to record: each successful one with a target on either side is counted in
 * lost[IOW_LOST_UNDECODED] instead, and so is each btrfs encoded read or write
 * (BTRFS_IOC_ENCODED_READ/WRITE, compressed extents as they are on disk) that moved bytes. ioctl is in the syscall table for that alone
 * (IOW_CALL_IOCTL, ops.bpf.h): it is routed here like a transfer and never recorded.
 *
 * Example (`iowitness run -- cp src.dat dst.dat` on ext4, 32 MiB, coreutils 9.1; trace columns
 * syscall, fd, flags, offset, requested, ret):
 *
 *     copy_file_range_from  3  4         0  9223372035781033984  33554432
 *     copy_file_range_to    4  3         0  9223372035781033984  33554432
 *     copy_file_range_from  3  4  33554432  9223372035781033984         0
 *     copy_file_range_to    4  3  33554432  9223372035781033984         0
 *
 * How to read it: cp asked for "as much as possible" (SSIZE_MAX minus a page), got the whole
 * file in one call, then a call returning 0 at the end of the file. The bytes of the _FROM
 * records of the source equal those of the _TO records of the destination; a side that is
 * not a target is simply absent (flags still names its fd). copy_file_range on btrfs or XFS
 * may share extents (a reflink) instead of copying: the record still counts the bytes the
 * call reports, which the device may never have seen.
 *
 * Overhead: the calls are rare (one per large chunk); per call, two fd-table walks and at
 * most two `files` lookups, a user read of each offset pointer given, one record per target
 * side. Every ioctl of a traced thread is now timed like a traced call (~110 ns more on an
 * ioctl loop, measured) and stops at a switch on the command unless it is one of the five
 * clone, dedupe or encoded ones; benchmarks make a few ioctls at start, none per I/O. Ioctls of other
 * processes pay the untraced-thread test only, other syscalls nothing. The alternatives cost
 * every syscall of the machine: a second tp_btf/sys_exit program, or syscalls:sys_exit_ioctl
 * (which hooks sys_exit for all), each added ~60-90 ns to a getppid loop.
 */
#ifndef IOWITNESS_TRANSFER_BPF_H
#define IOWITNESS_TRANSFER_BPF_H

#include "maps.bpf.h"
#include "targets.bpf.h"
#include "ops.bpf.h"
#include "summary.bpf.h"

/* linux/fs.h: _IOW(0x94, 9, int), _IOW(0x94, 13, struct file_clone_range),
 * _IOWR(0x94, 54, struct file_dedupe_range) */
#define IOW_FICLONE 0x40049409
#define IOW_FICLONERANGE 0x4020940d
#define IOW_FIDEDUPERANGE 0xc0189436
/* linux/btrfs.h: _IOR and _IOW(0x94, 64, struct btrfs_ioctl_encoded_io_args), 128 bytes on x86-64 */
#define IOW_BTRFS_ENCODED_READ 0x80809440
#define IOW_BTRFS_ENCODED_WRITE 0x40809440
/* FIDEDUPERANGE: destinations looked at (the kernel allows up to a page's worth) */
#define MAX_DEDUPE_DESTS 8

/* One side of a transfer: record it if its file is a target. off_ptr: the user's offset
 * pointer for this side, or 0 when the call used (and advanced) the file position. */
static __always_inline void record_transfer_side(__u16 op, struct task_struct *task, long fd, __u64 off_ptr,
						 long other_fd, __u64 requested, long ret, __u64 start_ts,
						 __u64 now)
{
	struct file *file = file_of_fd(task, fd);
	struct call_args args = {};
	struct iow_file_key key;
	__s64 moved = ret > 0 ? ret : 0;
	__s64 end = 0;

	if (!file || !is_target(&key, file_key_of(file, &key)))
		return;
	/* the kernel advanced the pointer (or the position) by what moved: where it began is
	 * that much before. The pointer was just written by the kernel, so it is resident. */
	if (!off_ptr)
		args.offset = KFIELD(file, f_pos) - moved;
	else if (bpf_probe_read_user(&end, sizeof(end), (void *)off_ptr))
		args.offset = -1;  /* unreadable: none known */
	else
		args.offset = end - moved;
	args.requested = requested;
	args.flags = other_fd;
	args.fd = fd;
	deliver_record(KFIELD(task, tgid), KFIELD(task, pid), &key, op, start_ts, now, ret, &args);
}

static __always_inline bool fd_is_target(struct task_struct *task, long fd)
{
	struct file *file = file_of_fd(task, fd);
	struct iow_file_key key;

	return file && is_target(&key, file_key_of(file, &key));
}

/* Does a successful clone or dedupe ioctl (cmd on fd, argument arg) touch a target file? */
static __always_inline bool clone_touches_target(struct task_struct *task, long fd, __u32 cmd, __u64 arg)
{
	if (fd_is_target(task, fd))
		return true;
	if (cmd == IOW_FICLONE)
		return fd_is_target(task, (int)arg);
	if (cmd == IOW_FICLONERANGE) {
		struct file_clone_range *range = (struct file_clone_range *)arg;
		__s64 src_fd = -1;

		bpf_probe_read_user(&src_fd, sizeof(src_fd), &range->src_fd);
		return fd_is_target(task, (int)src_fd);
	}
	/* FIDEDUPERANGE: fd is the source, the destinations follow the header */
	struct file_dedupe_range *dedupe = (struct file_dedupe_range *)arg;
	__u16 count = 0;

	bpf_probe_read_user(&count, sizeof(count), &dedupe->dest_count);
	for (__u32 i = 0; i < MAX_DEDUPE_DESTS; i++) {
		__s64 dest_fd = -1;

		if (i >= count)
			break;
		bpf_probe_read_user(&dest_fd, sizeof(dest_fd), &dedupe->info[i].dest_fd);
		if (fd_is_target(task, (int)dest_fd))
			return true;
	}
	return false;
}

/* An ioctl of a traced thread returned. A clone or dedupe that succeeded (0) with a target on
 * either side shared or compared its data; a btrfs encoded read or write that moved bytes (> 0)
 * moved them in a form the probe does not decode (compressed extents, no file offset known
 * here): each is counted, never silent. Any other ioctl stops at the switch. */
static __always_inline void on_file_ioctl(struct task_struct *task, struct pt_regs *regs, long ret)
{
	__u32 cmd = ARG2(regs);
	long fd = (int)ARG1(regs);

	switch (cmd) {
	case IOW_FICLONE:
	case IOW_FICLONERANGE:
	case IOW_FIDEDUPERANGE:
		if (ret == 0 && clone_touches_target(task, fd, cmd, ARG3(regs)))
			count_lost(IOW_LOST_UNDECODED);
		return;
	case IOW_BTRFS_ENCODED_READ:
	case IOW_BTRFS_ENCODED_WRITE:
		if (ret > 0 && fd_is_target(task, fd))
			count_lost(IOW_LOST_UNDECODED);
		return;
	}
}

/* copy_file_range, sendfile or splice (op: its _FROM op) of a traced thread has returned; or an
 * ioctl (IOW_CALL_IOCTL, ops.bpf.h) */
static __always_inline void on_transfer_call(__u16 op, struct task_struct *task, struct pt_regs *regs, long ret,
					     __u64 start_ts, __u64 now)
{
	long in_fd, out_fd;
	__u64 in_off, out_off, len;
	__u16 to_op;

	if (op == IOW_CALL_IOCTL) {
		on_file_ioctl(task, regs, ret);
		return;
	}
	if (op == IOW_OP_SENDFILE_FROM) {
		/* sendfile(out_fd, in_fd, *offset, count): the pointer is the input's; the output
		 * is written at its file position */
		out_fd = (int)ARG1(regs);
		in_fd = (int)ARG2(regs);
		in_off = ARG3(regs);
		out_off = 0;
		len = ARG4(regs);
		to_op = IOW_OP_SENDFILE_TO;
	} else {
		/* splice and copy_file_range(fd_in, *off_in, fd_out, *off_out, len, flags) */
		in_fd = (int)ARG1(regs);
		in_off = ARG2(regs);
		out_fd = (int)ARG3(regs);
		out_off = ARG4(regs);
		len = ARG5(regs);
		to_op = op == IOW_OP_SPLICE_FROM ? IOW_OP_SPLICE_TO : IOW_OP_COPY_FILE_RANGE_TO;
	}
	record_transfer_side(op, task, in_fd, in_off, out_fd, len, ret, start_ts, now);
	record_transfer_side(to_op, task, out_fd, out_off, in_fd, len, ret, start_ts, now);
}

#endif
