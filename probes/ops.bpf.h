/* SPDX-License-Identifier: GPL-2.0 */
/* ops.bpf.h — the syscalls iowitness traces: number to op, op to kind, and what each op's
 * arguments mean.
 *
 * Purpose: op_of_syscall() is the x86-64 syscall table of the 24 traced calls (enum iow_op,
 * events.h); kind_of_op() expands events.h's IOW_OP_KINDS table, so the probe and the Python
 * reader class ops from the same lines. The argument decoders fill the fields of struct
 * iow_event per op family: opens (handle_open, which also decides whether the new file is a
 * target and describes it in a fact), reads and writes at the file position or at an offset,
 * with one buffer or an iovec, and the rest (lseek, fcntl, ftruncate, fallocate).
 *
 * Overhead: op_of_syscall() is a compiled switch, run for every syscall of the machine; the
 * decoders are a few register reads, plus one bpf_probe_read_user per iovec entry (at most
 * MAX_IOVEC) for the *v calls.
 */
#ifndef IOWITNESS_OPS_BPF_H
#define IOWITNESS_OPS_BPF_H

#include "maps.bpf.h"
#include "core_fixes.bpf.h"
#include "targets.bpf.h"
#include "block.bpf.h"
#include "event_area.bpf.h"

#ifndef __TARGET_ARCH_x86
#error "iowitness probes know the x86-64 syscall table only"
#endif

#define O_WRONLY 01
#define O_CREAT 0100
#define O_TRUNC 01000
#define MAX_IOVEC 64

/* Not an op of events.h, never in a record: ioctl is timed and routed like a transfer only so
 * that a clone or dedupe of a target file (FICLONE, FICLONERANGE, FIDEDUPERANGE) is counted as
 * an undecoded transfer (transfer.bpf.h). A case here costs only the traced threads' ioctls;
 * a program of its own on sys_exit cost every syscall of the machine ~60-90 ns (measured: an
 * ioctl loop of a traced process went from 405 to 515 ns a call, getppid stayed at 288). */
#define IOW_CALL_IOCTL 0xffff

static __always_inline __u16 op_of_syscall(long nr)
{
	switch (nr) {
	case 0: return IOW_OP_READ;
	case 1: return IOW_OP_WRITE;
	case 2: return IOW_OP_OPEN;
	case 3: return IOW_OP_CLOSE;
	case 8: return IOW_OP_LSEEK;
	case 9: return IOW_OP_MMAP;
	case 16: return IOW_CALL_IOCTL;             /* not recorded: clones counted (transfer.bpf.h) */
	case 11: return IOW_OP_MUNMAP;
	case 17: return IOW_OP_PREAD64;
	case 18: return IOW_OP_PWRITE64;
	case 19: return IOW_OP_READV;
	case 20: return IOW_OP_WRITEV;
	case 26: return IOW_OP_MSYNC;
	case 28: return IOW_OP_MADVISE;
	case 32: return IOW_OP_DUP;
	case 33: return IOW_OP_DUP2;
	case 40: return IOW_OP_SENDFILE_FROM;      /* and _TO: one record per target side */
	case 72: return IOW_OP_FCNTL;
	case 74: return IOW_OP_FSYNC;
	case 75: return IOW_OP_FDATASYNC;
	case 77: return IOW_OP_FTRUNCATE;
	case 85: return IOW_OP_CREAT;
	case 257: return IOW_OP_OPENAT;
	case 275: return IOW_OP_SPLICE_FROM;
	case 285: return IOW_OP_FALLOCATE;
	case 292: return IOW_OP_DUP3;
	case 295: return IOW_OP_PREADV;
	case 296: return IOW_OP_PWRITEV;
	case 326: return IOW_OP_COPY_FILE_RANGE_FROM;
	case 327: return IOW_OP_PREADV2;
	case 328: return IOW_OP_PWRITEV2;
	case 437: return IOW_OP_OPENAT2;
	}
	return 0;
}

/* Calls that drive asynchronous I/O without moving file data: IOW_ASYNC_* + 1, or 0. They
 * are timed like traced calls and counted in `async_calls`; io_submit and io_getevents also
 * carry the libaio requests (aio.bpf.h). */
static __always_inline __u32 async_call_of_syscall(long nr)
{
	switch (nr) {
	case 208: return IOW_ASYNC_IO_GETEVENTS + 1;
	case 209: return IOW_ASYNC_IO_SUBMIT + 1;
	case 333: return IOW_ASYNC_IO_GETEVENTS + 1;   /* io_pgetevents */
	case 426: return IOW_ASYNC_URING_ENTER + 1;
	}
	return 0;
}

/* calls whose first argument is not the fd of the file they move data on (and ioctl) */
static __always_inline bool op_is_transfer(__u16 op)
{
	return op == IOW_OP_COPY_FILE_RANGE_FROM || op == IOW_OP_SENDFILE_FROM || op == IOW_OP_SPLICE_FROM ||
	       op == IOW_CALL_IOCTL;
}

static __always_inline bool op_is_mapping(__u16 op)
{
	return op == IOW_OP_MMAP || op == IOW_OP_MUNMAP || op == IOW_OP_MSYNC || op == IOW_OP_MADVISE;
}

/* enum iow_kind of an op, from the table in events.h (a duplicate line fails to compile here;
 * a missing one makes probes/layout.py refuse the header) */
static __always_inline __u32 kind_of_op(__u16 op)
{
	switch (op) {
#define IOW_KIND_CASE(op, kind) case op: return kind;
	IOW_OP_KINDS(IOW_KIND_CASE)
#undef IOW_KIND_CASE
	}
	return 0;
}

static __always_inline bool op_is_open(__u16 op)
{
	return kind_of_op(op) == IOW_KIND_OPEN;
}

/* reads and writes: the calls with bytes asked for, bytes done and an offset */
static __always_inline bool op_moves_data(__u16 op)
{
	__u32 kind = kind_of_op(op);

	return kind == IOW_KIND_READ || kind == IOW_KIND_WRITE;
}

static __always_inline __u64 iovec_bytes(const struct iovec *iov, unsigned long count)
{
	__u64 total = 0;

	for (__u32 i = 0; i < MAX_IOVEC; i++) {
		struct iovec v = {};

		if (i >= count)
			break;
		bpf_probe_read_user(&v, sizeof(v), &iov[i]);
		total += v.iov_len;
	}
	return total;
}

/* The arguments of a call on an fd that stays open: struct iow_event's offset, requested and
 * flags (docs/trace-format.md says what each means per op). */
static __always_inline void call_args_of(__u16 op, struct pt_regs *regs, struct file *file, long ret,
					 struct call_args *a)
{
	switch (op) {
	case IOW_OP_READ:
	case IOW_OP_WRITE:
	case IOW_OP_READV:
	case IOW_OP_WRITEV:
		/* the kernel's own file position moved by ret: where the call began */
		a->offset = KFIELD(file, f_pos) - (ret > 0 ? ret : 0);
		if (op == IOW_OP_READ || op == IOW_OP_WRITE)
			a->requested = ARG3(regs);
		else
			a->requested = iovec_bytes((const struct iovec *)ARG2(regs), ARG3(regs));
		break;
	case IOW_OP_PREAD64:
	case IOW_OP_PWRITE64:
		a->requested = ARG3(regs);
		a->offset = ARG4(regs);
		break;
	case IOW_OP_PREADV:
	case IOW_OP_PWRITEV:
	case IOW_OP_PREADV2:
	case IOW_OP_PWRITEV2:
		a->requested = iovec_bytes((const struct iovec *)ARG2(regs), ARG3(regs));
		a->offset = ARG4(regs);
		if (op == IOW_OP_PREADV2 || op == IOW_OP_PWRITEV2) {
			a->flags = ARG6(regs);
			/* offset -1 means "at the file position", as readv/writev */
			if (a->offset == -1)
				a->offset = KFIELD(file, f_pos) - (ret > 0 ? ret : 0);
		}
		break;
	case IOW_OP_LSEEK:
		a->requested = ARG2(regs);
		a->flags = ARG3(regs);
		break;
	case IOW_OP_FCNTL:
		a->flags = ARG2(regs);
		a->requested = ARG3(regs);
		break;
	case IOW_OP_FTRUNCATE:
		a->requested = ARG2(regs);
		break;
	case IOW_OP_FALLOCATE:
		a->flags = ARG2(regs);
		a->offset = ARG3(regs);
		a->requested = ARG4(regs);
		break;
	}
}

/* An open's path (user memory) and flags, per op. */
static __always_inline const char *open_args_of(struct pt_regs *regs, __u16 op, __u32 *flags)
{
	switch (op) {
	case IOW_OP_OPEN:
		*flags = ARG2(regs);
		return (const char *)ARG1(regs);
	case IOW_OP_CREAT:
		*flags = O_CREAT | O_WRONLY | O_TRUNC;
		return (const char *)ARG1(regs);
	case IOW_OP_OPENAT2: {
		struct open_how *how = (struct open_how *)ARG3(regs);
		__u64 how_flags = 0;

		bpf_probe_read_user(&how_flags, sizeof(how_flags), &how->flags);
		*flags = how_flags;
		return (const char *)ARG2(regs);
	}
	default:
		*flags = ARG3(regs);
		return (const char *)ARG2(regs);
	}
}

/* An open succeeded: decide whether the new fd's file is a target, and describe it if so. */
static __always_inline bool handle_open(struct pt_regs *regs, __u16 op, long fd,
					struct iow_file_key *key, __u32 *flags)
{
	struct task_struct *task = current_task();
	struct file *file = file_of_fd(task, fd);
	struct iow_file_state state = { .generation_known = 1 };
	const char *user_path;
	struct scratch *s;
	__u32 zero = 0;

	if (!file)
		return false;
	state.generation = file_key_of(file, key);
	user_path = open_args_of(regs, op, flags);
	if (is_target(key, state.generation))
		return true;

	s = bpf_map_lookup_elem(&scratch_space, &zero);
	if (!s)
		return false;
	s->meta.ts_ns = bpf_ktime_get_ns();
	s->meta.ino = key->ino;
	s->meta.kind = IOW_META_FILE;
	s->meta.tgid = bpf_get_current_pid_tgid() >> 32;
	s->meta.parent_tgid = 0;
	s->meta.dev = key->dev;
	s->meta.fd = fd;
	s->meta.dirfd = (op == IOW_OP_OPENAT || op == IOW_OP_OPENAT2) ?
			(int)ARG1(regs) : AT_FDCWD;
	s->meta.s_magic = BPF_CORE_READ(file, f_inode, i_sb, s_magic);
	s->meta.pad0 = 0;
	bpf_get_current_comm(s->meta.comm, sizeof(s->meta.comm));
	__builtin_memset(s->meta.path, 0, sizeof(s->meta.path));
	bpf_probe_read_user_str(s->meta.path, sizeof(s->meta.path), user_path);

	if (!opened_file_is_target(file, &s->meta, &s->name))
		return false;
	if (!follow_file(key, &state))
		return false;
	watch_block_device(file);
	if (bpf_ringbuf_output(&meta_events, &s->meta, sizeof(s->meta), 0))
		count_lost(IOW_LOST_META);
	return true;
}

#endif
