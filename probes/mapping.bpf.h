/* SPDX-License-Identifier: GPL-2.0 */
/* mapping.bpf.h - memory-mapped target files: mmap, munmap, msync, madvise, and the faults on them.
 *
 * Purpose: a benchmark that maps a file moves its bytes with loads and stores, not syscalls.
 * What the kernel shows of that: the calls that make, sync, advise on and remove a mapping,
 * and each page fault, when a load or store touches a page not mapped yet (or a store touches
 * one mapped read-only). Records (events.h):
 *   mmap     offset = file offset mapped, requested = length, ret = address or -errno, fd,
 *            flags = prot | MAP_* << 8 (IOW_MMAP_*)
 *   munmap, msync, madvise   offset = file offset of the range's start (in the mapping that
 *            holds it), requested = length, flags = MS_* / MADV_* (munmap: 0), fd = -1
 *   fault_read, fault_write  offset = file offset of the first page the fault maps,
 *            requested = the bytes it maps (below), fd = -1, ret = 0, latency 0
 *            (IOW_FAULT_LATENCY_UNKNOWN); flags IOW_FAULT_MAJOR when the page was not ready
 *            in the page cache as the fault began, IOW_FAULT_IN_KERNEL for a fault a syscall
 *            took copying to or from the mapping, IOW_FAULT_AROUND for a read fault (the
 *            kernel maps cached neighbours too), IOW_FAULT_AROUND_COUNTED when it did and
 *            `requested` counts them (offset is then the fault-around window's start)

 * Example (`iowitness show` of tests/workloads/mapped_io.c on an ext4 loop device, Linux
 * 6.18: an 8 MiB file written with write(2) in 64 KiB pieces, stored to once a page through
 * a shared mapping, msync'ed, dropped from the page cache, loaded once a page through a
 * read-only mapping, half advised away; columns cut):
 *
 *     syscall      calls  errors    bytes   min µs  mean µs
 *     write          128       0  8.0 MiB    162.1   1883.5
 *     fault_write    128       0      0 B     0.00     0.00
 *     fault_read     128       0      0 B     0.00     0.00
 *     mmap             2       0      0 B     13.7     14.4
 *     munmap           2       0      0 B     59.3    114.9
 *     msync            1       0      0 B  13.9 ms  13.9 ms
 *     madvise          1       0      0 B     24.1     24.1
 *
 * In the records: fault_write's `requested` add up to 8 MiB, 128 folios of 64 KiB: the
 * file; fault_read's to 8 MiB + 64 KiB (the file, and the 64 KiB a write(2) from the
 * advised-away half faulted in again, in kernel mode), 5 of them major; the process's own
 * getrusage counted as many faults in each pass.
 *
 * How to read it: a fault record stands for the pages the kernel mapped for it, so that
 * loads and stores on them make no fault. A store to a page not mapped yet in a shared
 * mapping maps the folio holding it: all of it when the kernel maps whole folios (Linux
 * 6.18 and later, the folio inside the vma and the page table; folio_mapped), else the page;
 * a store to a page mapped read-only, or to a private mapping, one page. Write faults'
 * `requested` add up to what became writable through the mapping. A read fault also maps
 * the cached pages around it not mapped yet (fault-around: fault_around_bytes, 64 KiB by
 * default, whole large folios), which then never fault: the record counts them, from the
 * change of the process's count of mapped file pages across the fault (struct
 * pending_fault), so read faults' `requested` add up to what became readable. That count
 * is the process's: another thread faulting at the same moment adds its pages to the
 * record. Where the count cannot be read the record says the page alone
 * (IOW_FAULT_AROUND without _COUNTED: a lower bound). A fault's latency is unknown: the
 * kernel has tracepoints at fault entry only (exceptions:page_fault_user,
 * page_fault_kernel). IOW_FAULT_MAJOR is the page cache's state as the fault began (page
 * absent, or its read in flight): the kernel's own major count (getrusage) leaves out a
 * fault that waited for a read already in flight.
 *
 * How a fault finds its file: the vma holding the address, read from the process's maple
 * tree of vmas without a lock (vma_at, memory_walk.bpf.h), its vm_file looked up in the
 * file set, and the file's page cache (an xarray) for the page's folio. munmap's mapping is
 * gone at its exit: sys_enter resolves it (munmap_target), as it resolves close's fd; msync
 * and madvise are resolved at exit, where their mapping still exists. Not seen: mappings made before
 * tracing began (attach), pages a syscall maps without a fault (MAP_POPULATE,
 * madvise(MADV_WILLNEED / MADV_POPULATE_*), get_user_pages as in O_DIRECT from a mapped
 * buffer), a mapping mremap moved, a munmap, msync or madvise whose range starts outside a
 * target mapping (one that spans several mappings is recorded with its first one).
 *
 * Overhead: every user or kernel page fault on the machine runs a fault program: while no
 * traced process has mapped a target file it returns after one load (live_spans); then one
 * `mapped_spans` hash lookup by process, and only a fault inside the span of addresses where
 * its process mapped target files walks the vma tree and the page cache, by plain loads
 * (kernel_word); a read fault also sums the per-CPU count of mapped file pages twice (two
 * loads per possible CPU) and keeps its record in task storage until the fault's
 * filemap:mm_filemap_map_pages or its next fault (filemap events of other processes cost a
 * hash lookup). Measured with BPF statistics on (tests/kernel/test_mmap.py's machine, a
 * 2-CPU VM): 386 ns of fault-program time per recorded fault over a loop of 20,480 private
 * write faults on a target mapping (about 2 us each untraced), every other fault of the
 * machine in the window included. mmap of a traced thread costs a flag test when anonymous,
 * an fd-table walk and a `files` lookup otherwise; munmap, msync and madvise a span test when
 * outside every target mapping, a vma walk when inside. (Not bpf_find_vma: about 7 us a
 * fault, memory_walk.bpf.h says why.)
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
#define X86_PF_PROT 0x1    /* the page was present: a protection fault (a store to a read-only PTE) */
#define X86_PF_WRITE 0x2
#define EBUSY 16
#define VM_SHARED 0x8
#define PTES_PER_TABLE 512

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
	__u32 fault;             /* in: a fault (with error_code), not a call */
	__u32 target;            /* out: the address lies in a mapping of a target file */
	struct iow_file_key key;
	__s64 offset;            /* the file offset of addr */
	/* faults */
	__u32 page_ready;        /* the page is in the page cache and up to date */
	__u32 around;            /* a read fault where the kernel maps cached neighbours too */
	__u64 error_code;        /* in: the fault's X86_PF_* bits */
	__u64 index;             /* the faulting file page, and where its vma maps the file */
	__u64 vm_start;
	__u64 vm_end;
	__u64 vm_pgoff;
	__u64 mapping;           /* the file's struct address_space, as a number */
	__u64 first;             /* the first file page the fault maps */
	__u64 pages;             /* and how many */
};

/* The pages finish_fault maps for page `index` (at `addr`) of a vma [vm_start, vm_end) that
 * maps the file from page vm_pgoff, the folio holding it having `pages`: all of them since
 * Linux 6.18 (core_fixes.bpf.h) when the folio lies inside the vma and the page table and
 * the vma is aligned to it in the file, else the page. *first: the first page mapped. */
static __always_inline __u64 folio_mapped(__u64 vm_start, __u64 vm_end, __u64 vm_pgoff, __u64 addr,
					  __u64 index, __u64 pages, __u64 *first)
{
	__u64 vma_off = index - vm_pgoff, vma_pages = (vm_end - vm_start) / MAPPING_PAGE_SIZE;
	__u64 pte_off = (addr / MAPPING_PAGE_SIZE) & (PTES_PER_TABLE - 1), idx;

	*first = index;
	if (pages <= 1 || !fault_maps_whole_folio())
		return 1;
	idx = index & (pages - 1);   /* folios are aligned to their size in the file */
	if (vma_off < idx || vma_off + (pages - idx) > vma_pages || pte_off < idx ||
	    pte_off + (pages - idx) > PTES_PER_TABLE || (((vm_start / MAPPING_PAGE_SIZE) - vm_pgoff) & (pages - 1)))
		return 1;
	*first = index - idx;
	return pages;
}

/* The file pages a fault on page `index` maps, as far as its entry tells (mapping_hit.first,
 * .pages), `pages` being the size of the ready folio that holds it (0: not ready). Which
 * path the kernel takes (mm/memory.c, handle_pte_fault):
 *   read, not present, the file can map pages (map_pages): do_fault_around maps the cached
 *     pages of a window around it first, a number learnt later (struct pending_fault); the
 *     page itself is what is sure now
 *   write on a present page (X86_PF_PROT): do_wp_page makes that one page writable
 *   write to a private mapping: do_cow_fault copies one page
 *   otherwise finish_fault maps the folio (folio_mapped). A page not ready is read first,
 *     into a folio of a size not known yet: one page is what is sure. */
static __always_inline void fault_unit(struct vm_area_struct *vma, __u64 index, __u64 pages, __u64 error_code,
				       struct mapping_hit *hit)
{
	bool write = error_code & X86_PF_WRITE;

	hit->first = index;
	hit->pages = 1;
	hit->around = !write && vma->vm_ops && vma->vm_ops->map_pages;
	if (hit->around || (error_code & X86_PF_PROT) || (write && !(vma->vm_flags & VM_SHARED)))
		return;
	hit->pages = folio_mapped(vma->vm_start, vma->vm_end, vma->vm_pgoff, hit->addr, index, pages, &hit->first);
}

static __always_inline void mapping_at_vma(struct vm_area_struct *vma, struct mapping_hit *hit)
{
	struct file *file = vma->vm_file;
	__u32 generation;
	__u64 index, pages;

	if (!file)
		return;   /* anonymous memory */
	generation = file_key_of(file, &hit->key);
	if (!is_target(&hit->key, generation))
		return;
	index = ((hit->addr - vma->vm_start) / MAPPING_PAGE_SIZE) + vma->vm_pgoff;
	hit->offset = (hit->addr - vma->vm_start) + vma->vm_pgoff * MAPPING_PAGE_SIZE;
	hit->target = 1;
	if (hit->fault) {
		hit->index = index;
		hit->vm_start = vma->vm_start;
		hit->vm_end = vma->vm_end;
		hit->vm_pgoff = vma->vm_pgoff;
		hit->mapping = as_number(file->f_mapping);
		pages = cached_folio_pages(file->f_mapping, index);
		hit->page_ready = pages > 0;
		fault_unit(vma, index, pages, hit->error_code, hit);
	}
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

/* A read fault with fault-around, waiting to learn how many pages the kernel maps for it.
 * on_page_fault arms it with the process's count of mapped file pages. Within the fault,
 * filemap:mm_filemap_map_pages says fault-around is done: the count's growth is what it
 * mapped, and when the faulting page was ready to be among them the record goes. Otherwise
 * the kernel looks the page up (filemap:mm_filemap_fault), waits for its read if needed,
 * and maps its folio (finish_fault) with no tracepoint after: the record goes at the
 * thread's next fault on a target, or its exit, with that folio as the page cache then
 * holds it. */
struct pending_fault {
	__u64 ts;
	__u64 first;             /* file page, and pages, sure at fault entry (fault_unit) */
	__u64 pages;
	__s64 mapped_before;     /* the process's mapped file pages as the fault began; -1 unknown */
	__u64 around_first;      /* fault-around: the window's first page, and the pages it mapped */
	__u64 around_pages;
	__u64 index;             /* the faulting page, its vma's geometry and file (mapping_hit) */
	__u64 addr;
	__u64 vm_start;
	__u64 vm_end;
	__u64 vm_pgoff;
	__u64 mapping;
	struct iow_file_key key;
	__u32 flags;
	__u16 armed;
	__u16 looked_up;         /* mm_filemap_fault came: finish_fault maps the page's folio */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pending_fault);
} pending_faults SEC(".maps");

static __always_inline void send_fault(struct task_struct *task, struct pending_fault *f)
{
	struct call_args args = { .fd = -1, .flags = f->flags };
	__u64 first = f->first, pages = f->pages;

	if (f->looked_up) {
		/* the folio finish_fault mapped, as the page cache holds it now */
		struct address_space *mapping = bpf_rdonly_cast((void *)f->mapping,
								bpf_core_type_id_kernel(struct address_space));
		__u64 folio = cached_folio_pages(mapping, f->index);

		pages = folio_mapped(f->vm_start, f->vm_end, f->vm_pgoff, f->addr, f->index, folio ? folio : 1, &first);
	} else if (f->around_pages) {
		pages = 0;
	}
	if (f->around_pages) {
		args.flags |= IOW_FAULT_AROUND_COUNTED;
		first = f->around_first;
		pages += f->around_pages;
	}
	args.offset = first * MAPPING_PAGE_SIZE;
	args.requested = pages * MAPPING_PAGE_SIZE;
	f->armed = 0;
	deliver_record(task->tgid, task->pid, &f->key, IOW_OP_FAULT_READ, f->ts, f->ts, 0, &args);
}

/* the current thread's armed read fault, if it is on this file */
static __always_inline struct pending_fault *pending_on(struct task_struct *task, struct address_space *mapping)
{
	struct pending_fault *f;
	__u32 tgid = task->tgid;

	/* filemap events of every process come here: only one with target mappings goes on */
	if (!*(volatile __u64 *)&live_spans || !bpf_map_lookup_elem(&mapped_spans, &tgid))
		return NULL;
	f = bpf_task_storage_get(&pending_faults, task, 0, 0);
	if (!f || !f->armed || f->mapping != as_number(mapping))
		return NULL;
	return f;
}

/* filemap:mm_filemap_map_pages: fault-around mapped the cached pages of the window from
 * file page `start` that were not mapped yet */
static __always_inline void on_fault_around(struct address_space *mapping, __u64 start)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pending_fault *f = pending_on(task, mapping);
	__s64 mapped;

	if (!f || f->mapped_before < 0)
		return;
	mapped = mapped_file_pages(task->mm) - f->mapped_before;
	if (mapped <= 0)
		return;
	f->around_first = start;
	f->around_pages = mapped;
	/* the faulting page went with the window if fault-around could map it: the fault ends
	 * here (a fault that waited for its page's read comes back through fault-around when the
	 * read is done). Else the kernel looks it up and maps its folio after. */
	if (page_mappable_around(mapping, f->index)) {
		f->looked_up = 0;
		send_fault(task, f);
	}
}

/* filemap:mm_filemap_fault: the faulting page is looked up: its folio is mapped after */
static __always_inline void on_filemap_fault(struct address_space *mapping)
{
	struct pending_fault *f = pending_on(bpf_get_current_task_btf(), mapping);

	if (f)
		f->looked_up = 1;
}

/* a thread's armed fault, at its next fault on a target or its exit */
static __always_inline void flush_pending_fault(struct task_struct *task)
{
	struct pending_fault *f;

	if (!*(volatile __u64 *)&live_spans)
		return;
	f = bpf_task_storage_get(&pending_faults, task, 0, 0);
	if (f && f->armed)
		send_fault(task, f);
}

/* A page fault of the current task at `address` (exceptions:page_fault_user / _kernel). */
static __always_inline void on_page_fault(__u64 address, __u64 error_code, bool in_kernel)
{
	struct task_struct *task;
	struct mapping_hit hit = { .fault = 1, .error_code = error_code };
	struct call_args args = { .fd = -1 };
	__u64 now;
	long err;

	if (!*(volatile __u64 *)&live_spans)
		return;
	task = bpf_get_current_task_btf();
	/* a copy that may not fault (a BPF probe read among them) is not the program's access */
	if (in_kernel && task->pagefault_disabled)
		return;
	now = bpf_ktime_get_ns();
	err = find_target_mapping(task, address & ~(MAPPING_PAGE_SIZE - 1), &hit);
	if (err == -EBUSY) {
		count_lost(IOW_LOST_UNDECODED);
		return;
	}
	if (!hit.target)
		return;
	flush_pending_fault(task);
	args.offset = hit.first * MAPPING_PAGE_SIZE;
	args.requested = hit.pages * MAPPING_PAGE_SIZE;
	args.flags = IOW_FAULT_LATENCY_UNKNOWN | (hit.page_ready ? 0 : IOW_FAULT_MAJOR) |
		     (in_kernel ? IOW_FAULT_IN_KERNEL : 0) | (hit.around ? IOW_FAULT_AROUND : 0);
	if (hit.around) {
		/* the kernel maps cached neighbours too: learn how many before sending */
		struct pending_fault *f = bpf_task_storage_get(&pending_faults, task, 0,
							       BPF_LOCAL_STORAGE_GET_F_CREATE);

		if (f) {
			f->ts = now;
			f->first = hit.first;
			f->pages = hit.pages;
			f->mapped_before = mapped_file_pages(task->mm);
			f->around_first = 0;
			f->around_pages = 0;
			f->index = hit.index;
			f->addr = hit.addr;
			f->vm_start = hit.vm_start;
			f->vm_end = hit.vm_end;
			f->vm_pgoff = hit.vm_pgoff;
			f->mapping = hit.mapping;
			f->key = hit.key;
			f->flags = args.flags;
			f->looked_up = 0;
			f->armed = 1;
			return;
		}
	}
	deliver_record(task->tgid, task->pid, &hit.key,
		       error_code & X86_PF_WRITE ? IOW_OP_FAULT_WRITE : IOW_OP_FAULT_READ, now, now, 0, &args);
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
