/* SPDX-License-Identifier: GPL-2.0 */
/* mapping.bpf.h - memory-mapped target files: mmap, munmap, msync and madvise, and where an
 * address of a traced process lies in a target file.
 *
 * Purpose: a benchmark that maps a file moves its bytes with loads and stores, not
 * syscalls. What the kernel shows of that: the calls that make, sync, advise on and remove
 * a mapping (here), and the page faults on it (faults.bpf.h). Records (events.h):
 *   mmap     offset = file offset mapped, requested = length, ret = address or -errno, fd,
 *            flags = prot | MAP_* << 8 (IOW_MMAP_*)
 *   munmap, msync, madvise   offset = file offset of the range's start (in the mapping that
 *            holds it), requested = length, flags = MS_* / MADV_* (munmap: 0), fd = -1
 * Both need to know whether an address lies in a mapping of a target file, and where:
 * find_target_mapping, after a cheap test against the span of addresses where the process
 * mapped target files (`mapped_spans`).
 *
 * Example (`iowitness show` of tests/workloads/mapped_io.c on an ext4 loop device, Linux
 * 6.18: an 8 MiB file written with write(2) in 64 KiB pieces, stored to once a page through
 * a shared mapping, msync'ed, dropped from the page cache, loaded once a page through a
 * read-only mapping, half advised away, 64 KiB of that half copied out by write(2);
 * columns cut):
 *
 *     syscall      calls  errors    bytes   min µs  mean µs
 *     write          128       0  8.0 MiB    162.1   1883.5
 *     fault_write    128       0  8.0 MiB        -        -
 *     fault_read     128       0  8.1 MiB        -        -
 *     mmap             2       0      0 B     13.7     14.4
 *     munmap           2       0      0 B     59.3    114.9
 *     msync            1       0      0 B  13.9 ms  13.9 ms
 *     madvise          1       0      0 B     24.1     24.1
 *
 * How to read it: the mmap records say which file ranges were mapped, how (prot, MAP_*),
 * at which address; msync, madvise and munmap which file range they acted on. In the fault
 * records (faults.bpf.h): fault_write's `requested` add up to 8 MiB, 128 folios of 64 KiB:
 * the file; fault_read's to 8 MiB + 64 KiB (the file, and the 64 KiB the write(2) faulted
 * in again, in kernel mode); the process's own getrusage counted as many faults in each
 * pass.
 *
 * How an address finds its file: the vma holding it, read from the process's maple tree of
 * vmas without a lock (vma_at, memory_walk.bpf.h), its vm_file looked up in the file set.
 * munmap's mapping is gone at its exit: sys_enter resolves it (munmap_target), as it
 * resolves close's fd; msync and madvise are resolved at exit, where their mapping still
 * exists. Not seen: mappings made before tracing began (attach), pages a syscall maps
 * without a fault (MAP_POPULATE, madvise(MADV_WILLNEED / MADV_POPULATE_*), get_user_pages
 * as in O_DIRECT from a mapped buffer: the mmap or madvise record shows the flag), a
 * mapping mremap moved, a munmap, msync or madvise whose range starts outside a target
 * mapping (one that spans several mappings is recorded with its first one's offset).
 *
 * Overhead: mmap of a traced thread costs a flag test when anonymous, an fd-table walk and
 * a `files` lookup otherwise; munmap, msync and madvise one load while no traced process
 * has mapped a target file, a span test when outside every target mapping, a vma walk when
 * inside. (Not bpf_find_vma: about 7 us a fault, memory_walk.bpf.h says why.)
 */
#ifndef IOWITNESS_MAPPING_BPF_H
#define IOWITNESS_MAPPING_BPF_H

#include "maps.bpf.h"
#include "targets.bpf.h"
#include "ops.bpf.h"
#include "summary.bpf.h"
#include "memory_walk.bpf.h"

#ifndef ARG5
#define ARG5(regs) ((regs)->r8)
#endif

/* x86-64 (ops.bpf.h refuses any other architecture) */
#define MAPPING_PAGE_SIZE 4096ULL
#define MAP_ANONYMOUS 0x20
#define EBUSY 16
#define VM_SHARED 0x8

/* The addresses [lo, hi) that hold every target mapping a process made while traced: the
 * cheap first test for a fault, a munmap or an madvise, most of which are on anonymous
 * memory (malloc). Grown at each mmap of a target file, never shrunk (a stale span only
 * costs a vma lookup); removed when the process exits, copied to a child at fork. */
struct mapped_span {
	__u64 lo;
	__u64 hi;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct mapped_span);
} mapped_spans SEC(".maps");

/* spans in `mapped_spans`: while no traced process has mapped a target file, a fault on the
 * machine returns after one load */
__u64 live_spans = 0;

/* What the vma walk found at an address (find_target_mapping). */
struct mapping_hit {
	__u64 addr;              /* in: the address */
	__u32 target;            /* out: the address lies in a mapping of a target file */
	__u32 pad0;
	struct iow_file_key key;
	__s64 offset;            /* the file offset of addr */
	/* the vma, for a fault (faults.bpf.h) */
	__u64 index;             /* the file page at addr */
	__u64 vm_start;
	__u64 vm_end;
	__u64 vm_pgoff;          /* the file page the vma maps at vm_start */
	__u64 mapping;           /* the file's struct address_space, as a number */
	__u32 shared;            /* VM_SHARED */
	__u32 maps_around;       /* the file can map pages around a read fault (vm_ops->map_pages) */
};

static __always_inline void mapping_at_vma(struct vm_area_struct *vma, struct mapping_hit *hit)
{
	struct file *file = vma->vm_file;
	__u32 generation;

	if (!file)
		return;   /* anonymous memory */
	generation = file_key_of(file, &hit->key);
	if (!is_target(&hit->key, generation))
		return;
	hit->offset = (hit->addr - vma->vm_start) + vma->vm_pgoff * MAPPING_PAGE_SIZE;
	hit->index = hit->offset / MAPPING_PAGE_SIZE;
	hit->vm_start = vma->vm_start;
	hit->vm_end = vma->vm_end;
	hit->vm_pgoff = vma->vm_pgoff;
	hit->mapping = as_number(file->f_mapping);
	hit->shared = (vma->vm_flags & VM_SHARED) != 0;
	hit->maps_around = vma->vm_ops && vma->vm_ops->map_pages;
	hit->target = 1;
}

/* Does `addr` of the current process lie in a mapping of a target file? Fills `hit`.
 * Returns -EBUSY when the vma could not be read (the tree changing under the walk): the
 * caller counts it as a call or fault that may have been on a target, unrecorded. */
static __always_inline long find_target_mapping(struct task_struct *task, __u64 addr, struct mapping_hit *hit)
{
	__u32 tgid = task->tgid;
	struct mapped_span *span;
	struct vm_area_struct *vma;
	bool unsure = false;

	hit->target = 0;
	if (!*(volatile __u64 *)&live_spans)
		return 0;
	span = bpf_map_lookup_elem(&mapped_spans, &tgid);
	if (!span || addr < span->lo || addr >= span->hi)
		return 0;
	hit->addr = addr;
	vma = vma_at(task->mm, addr, &unsure);
	if (unsure)
		return -EBUSY;
	if (vma)
		mapping_at_vma(vma, hit);
	return 0;
}

/* A target file was mapped at [lo, hi): make the process's span cover it. Two threads
 * mapping at once may each write its own widening; the later write would then lose the
 * other's, so each one writes until it reads its range covered. */
static __always_inline void grow_span(__u32 tgid, __u64 lo, __u64 hi)
{
	for (int i = 0; i < 4; i++) {
		struct mapped_span *span = bpf_map_lookup_elem(&mapped_spans, &tgid);
		struct mapped_span wider = { .lo = lo, .hi = hi };

		if (span) {
			if (span->lo <= lo && span->hi >= hi)
				return;
			wider.lo = span->lo < lo ? span->lo : lo;
			wider.hi = span->hi > hi ? span->hi : hi;
			bpf_map_update_elem(&mapped_spans, &tgid, &wider, BPF_EXIST);
		} else if (!bpf_map_update_elem(&mapped_spans, &tgid, &wider, BPF_NOEXIST)) {
			__sync_fetch_and_add(&live_spans, 1);
		} else if (!bpf_map_lookup_elem(&mapped_spans, &tgid)) {
			/* the span map is full: this mapping's faults and calls will go unseen */
			count_lost(IOW_LOST_UNDECODED);
			return;
		}
	}
}

/* sys_enter of munmap: the mapping is gone at exit, so find its file now. True when the
 * range starts in a target mapping; the file and offset are left in `call`. */
static __always_inline bool munmap_target(struct task_struct *task, struct pt_regs *regs, struct call_start *call)
{
	struct mapping_hit hit = {};

	if (find_target_mapping(task, ARG1(regs), &hit) == -EBUSY) {
		count_lost(IOW_LOST_UNDECODED);
		return false;
	}
	if (!hit.target)
		return false;
	call->ino = hit.key.ino;
	call->dev = hit.key.dev;
	call->offset = hit.offset;
	return true;
}

/* what sys_enter left for this thread's call (end_of_call has consumed its time already) */
static __always_inline struct call_start *call_of(struct task_struct *task)
{
	struct cpu_slot *slot = this_cpu_slot();

	if (slot && slot->owner == (__u64)task)
		return &slot->call;
	return bpf_task_storage_get(&starts, task, 0, 0);
}

static __always_inline void on_mmap(struct task_struct *task, struct pt_regs *regs, long ret,
				    __u64 start_ts, __u64 now)
{
	__u64 map_flags = ARG4(regs), length = ARG2(regs);
	struct call_args args = {};
	struct iow_file_key key;
	struct file *file;
	long fd;

	if (map_flags & MAP_ANONYMOUS)
		return;
	fd = (int)ARG5(regs);
	file = file_of_fd(task, fd);
	if (!file || !is_target(&key, file_key_of(file, &key)))
		return;
	args.offset = ARG6(regs);
	args.requested = length;
	args.fd = fd;
	args.flags = (ARG3(regs) & IOW_MMAP_PROT_MASK) | ((map_flags & 0xffffff) << IOW_MMAP_FLAGS_SHIFT);
	/* a successful mmap returns an address: at most -4095 is an error */
	if ((unsigned long)ret < (unsigned long)-4095L)
		grow_span(task->tgid, ret, ret + length);
	deliver_record(task->tgid, task->pid, &key, IOW_OP_MMAP, start_ts, now, ret, &args);
}

/* mmap, munmap, msync or madvise of a traced thread has returned */
static __always_inline void on_mapping_call(__u16 op, struct task_struct *task, struct pt_regs *regs, long ret,
					    __u64 start_ts, __u64 now)
{
	struct call_args args = { .requested = ARG2(regs), .fd = -1 };
	struct iow_file_key key = {};

	if (op == IOW_OP_MMAP) {
		on_mmap(task, regs, ret, start_ts, now);
		return;
	}
	if (op == IOW_OP_MUNMAP) {
		/* sys_enter found the range in a target mapping (munmap_target), or did not time it */
		struct call_start *call = call_of(task);

		if (!call)
			return;
		key.ino = call->ino;
		key.dev = call->dev;
		args.offset = call->offset;
	} else {
		/* msync, madvise: the mapping is still there */
		struct mapping_hit hit = {};

		if (find_target_mapping(task, ARG1(regs), &hit) == -EBUSY) {
			count_lost(IOW_LOST_UNDECODED);
			return;
		}
		if (!hit.target)
			return;
		key = hit.key;
		args.offset = hit.offset;
		args.flags = ARG3(regs);
	}
	deliver_record(task->tgid, task->pid, &key, op, start_ts, now, ret, &args);
}

/* a process forked: the child has the parent's mappings, so its span too (a parent with a
 * span is traced, and on_fork follows its child) */
static __always_inline void inherit_span(__u32 parent_tgid, __u32 child_tgid)
{
	struct mapped_span *span;
	struct mapped_span copy;

	if (!*(volatile __u64 *)&live_spans || parent_tgid == child_tgid)
		return;
	span = bpf_map_lookup_elem(&mapped_spans, &parent_tgid);
	if (!span)
		return;
	copy = *span;
	if (bpf_map_update_elem(&mapped_spans, &child_tgid, &copy, BPF_NOEXIST))
		count_lost(IOW_LOST_UNDECODED);
	else
		__sync_fetch_and_add(&live_spans, 1);
}

/* the last thread of a process exits: its span goes (its PID may be reused) */
static __always_inline void forget_span(struct task_struct *task)
{
	__u32 tgid;

	if (!*(volatile __u64 *)&live_spans)
		return;
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return;
	tgid = BPF_CORE_READ(task, tgid);
	if (!bpf_map_delete_elem(&mapped_spans, &tgid))
		__sync_fetch_and_sub(&live_spans, 1);
}

#endif
