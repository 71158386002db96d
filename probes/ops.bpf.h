/* SPDX-License-Identifier: GPL-2.0 */
/* ops.bpf.h — the syscalls iowitness traces: number to op, op to kind, and what each op's
 * arguments mean.
 *
 * Purpose: syscall_routes is the x86-64 syscall table of the traced calls (enum iow_op,
 * events.h) and of how each is handled (enum iow_route); kind_of_op() expands events.h's IOW_OP_KINDS table, so the probe and the Python
 * reader class ops from the same lines. The argument decoders fill the fields of struct
 * iow_event per op family: opens (handle_open, which also decides whether the new file is a
 * target and describes it in a fact), reads and writes at the file position or at an offset,
 * with one buffer or an iovec, and the rest (lseek, fcntl, ftruncate, fallocate, fadvise, readahead).
 *
 * Overhead: route_of_syscall() is one bounded load, run for every syscall of the machine; the
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

/* How the two syscall programs treat a syscall: its op and its route, one row per traced
 * syscall number. Routes that sys_exit handles come from IOW_ROUTE_FD on; a plain call on an
 * fd (the common case: a read or write) is tested first, so it never pays for the tests of
 * the rarer routes (async I/O, copies, mappings), and the table is one bounded load where a
 * compiled switch was a tree of up to six compares, run twice per call and for every other
 * syscall of the machine too (and again for the async calls). */
enum iow_route {
	IOW_ROUTE_NONE = 0,      /* not traced: both programs return after the load */
	IOW_ROUTE_AIO_DESTROY,   /* io_destroy: the context's requests still in flight are forgotten at entry */
	IOW_ROUTE_FD,            /* a call on an fd that stays open: reads, writes, lseek, syncs, dups, fcntl, resizes */
	IOW_ROUTE_OPEN,          /* the new fd is the return value */
	IOW_ROUTE_CLOSE,         /* the fd is gone at exit: its file resolved at entry */
	IOW_ROUTE_TRANSFER,      /* two fds (copy_file_range, sendfile, splice), or ioctl (transfer.bpf.h) */
	IOW_ROUTE_MAPPING,       /* mmap, munmap, msync, madvise (mapping.bpf.h) */
	IOW_ROUTE_ASYNC,         /* io_uring_enter, io_submit, io_getevents, io_pgetevents: op is IOW_ASYNC_* */
	IOW_ROUTE_DUP,           /* dup2, dup3: a call on an fd (oldfd) that may close another (newfd) */
	IOW_ROUTE_FDS_GONE,      /* close_range, execve(at), unshare: not recorded, may close fds (fd memo) */
};

struct syscall_route {
	__u16 op;      /* enum iow_op, IOW_CALL_IOCTL, or for IOW_ROUTE_ASYNC an IOW_ASYNC_* slot */
	__u16 route;   /* enum iow_route */
};

#define IOW_SYSCALL_TABLE 448    /* past the highest traced number (openat2, 437) */

/* the x86-64 syscall numbers; an open's, a close's, a transfer's and a mapping's route must
 * agree with its kind in events.h's IOW_OP_KINDS (tests/kernel/test_known_calls.py runs each) */
static const struct syscall_route syscall_routes[IOW_SYSCALL_TABLE] = {
	[0] = { IOW_OP_READ, IOW_ROUTE_FD },
	[1] = { IOW_OP_WRITE, IOW_ROUTE_FD },
	[2] = { IOW_OP_OPEN, IOW_ROUTE_OPEN },
	[3] = { IOW_OP_CLOSE, IOW_ROUTE_CLOSE },
	[8] = { IOW_OP_LSEEK, IOW_ROUTE_FD },
	[9] = { IOW_OP_MMAP, IOW_ROUTE_MAPPING },
	[11] = { IOW_OP_MUNMAP, IOW_ROUTE_MAPPING },
	[16] = { IOW_CALL_IOCTL, IOW_ROUTE_TRANSFER },   /* not recorded: clones counted (transfer.bpf.h) */
	[17] = { IOW_OP_PREAD64, IOW_ROUTE_FD },
	[18] = { IOW_OP_PWRITE64, IOW_ROUTE_FD },
	[19] = { IOW_OP_READV, IOW_ROUTE_FD },
	[20] = { IOW_OP_WRITEV, IOW_ROUTE_FD },
	[26] = { IOW_OP_MSYNC, IOW_ROUTE_MAPPING },
	[28] = { IOW_OP_MADVISE, IOW_ROUTE_MAPPING },
	[32] = { IOW_OP_DUP, IOW_ROUTE_FD },
	[33] = { IOW_OP_DUP2, IOW_ROUTE_DUP },
	[40] = { IOW_OP_SENDFILE_FROM, IOW_ROUTE_TRANSFER },   /* and _TO: one record per target side */
	[59] = { 0, IOW_ROUTE_FDS_GONE },   /* execve: close-on-exec (targets.bpf.h, the fd memo) */
	[72] = { IOW_OP_FCNTL, IOW_ROUTE_FD },
	[74] = { IOW_OP_FSYNC, IOW_ROUTE_FD },
	[75] = { IOW_OP_FDATASYNC, IOW_ROUTE_FD },
	[77] = { IOW_OP_FTRUNCATE, IOW_ROUTE_FD },
	[85] = { IOW_OP_CREAT, IOW_ROUTE_OPEN },
	[187] = { IOW_OP_READAHEAD, IOW_ROUTE_FD },
	[207] = { 0, IOW_ROUTE_AIO_DESTROY },
	[221] = { IOW_OP_FADVISE64, IOW_ROUTE_FD },
	[208] = { IOW_ASYNC_IO_GETEVENTS, IOW_ROUTE_ASYNC },
	[209] = { IOW_ASYNC_IO_SUBMIT, IOW_ROUTE_ASYNC },
	[257] = { IOW_OP_OPENAT, IOW_ROUTE_OPEN },
	[272] = { 0, IOW_ROUTE_FDS_GONE },   /* unshare */
	[275] = { IOW_OP_SPLICE_FROM, IOW_ROUTE_TRANSFER },
	[285] = { IOW_OP_FALLOCATE, IOW_ROUTE_FD },
	[292] = { IOW_OP_DUP3, IOW_ROUTE_DUP },
	[295] = { IOW_OP_PREADV, IOW_ROUTE_FD },
	[296] = { IOW_OP_PWRITEV, IOW_ROUTE_FD },
	[322] = { 0, IOW_ROUTE_FDS_GONE },   /* execveat */
	[326] = { IOW_OP_COPY_FILE_RANGE_FROM, IOW_ROUTE_TRANSFER },
	[327] = { IOW_OP_PREADV2, IOW_ROUTE_FD },
	[328] = { IOW_OP_PWRITEV2, IOW_ROUTE_FD },
	[333] = { IOW_ASYNC_IO_GETEVENTS, IOW_ROUTE_ASYNC },   /* io_pgetevents */
	[426] = { IOW_ASYNC_URING_ENTER, IOW_ROUTE_ASYNC },
	[436] = { 0, IOW_ROUTE_FDS_GONE },   /* close_range */
	[437] = { IOW_OP_OPENAT2, IOW_ROUTE_OPEN },
};

static __always_inline struct syscall_route route_of_syscall(long nr)
{
	struct syscall_route none = {};

	if ((unsigned long)nr >= IOW_SYSCALL_TABLE)
		return none;
	return syscall_routes[nr];
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
	case IOW_OP_FADVISE64:
		a->flags = ARG4(regs);
		/* the same offset and length as readahead's */
	case IOW_OP_READAHEAD:
		a->offset = ARG2(regs);
		a->requested = ARG3(regs);
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
