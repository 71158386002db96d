/* SPDX-License-Identifier: GPL-2.0 */
/* faults.bpf.h - page faults on memory-mapped target files: what each one maps, and when
 * the page had to be read.
 *
 * Purpose: a load or store on a page of a target mapping that is not mapped yet (or a store
 * on one mapped read-only) makes no syscall, only a fault; the fault is the record. Fields
 * (events.h): offset = file offset of the first page the fault maps, requested = the bytes
 * it maps, fd = -1, ret = 0, latency 0 with IOW_FAULT_LATENCY_UNKNOWN (the kernel has
 * tracepoints at fault entry only: exceptions:page_fault_user, page_fault_kernel); flags
 * IOW_FAULT_MAJOR when the page was not ready in the page cache as the fault began (absent,
 * or its read in flight), IOW_FAULT_IN_KERNEL for a fault a syscall took copying to or from
 * the mapping, IOW_FAULT_AROUND for a read fault (the kernel maps cached neighbours too),
 * IOW_FAULT_AROUND_COUNTED when it did and `requested` counts them (offset is then the
 * fault-around window's start: which pages of the window were mapped, and which were mapped
 * already, the count does not say).
 *
 * Example: see mapping.bpf.h (tests/workloads/mapped_io.c through `iowitness show`).
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
 * pending_fault), so read faults' `requested` add up to what became readable. That count is
 * the process's: another thread faulting at the same moment adds its pages to the record.
 * Where the count cannot be read the record says the page alone (IOW_FAULT_AROUND without
 * _COUNTED: a lower bound). IOW_FAULT_MAJOR is the page cache's state as the fault began:
 * the kernel's own major count (getrusage) leaves out a fault that waited for a read
 * already in flight. Huge-page (PMD) mappings of a file are sized as their folio allows.
 *
 * Overhead: every user or kernel page fault on the machine runs on_page_fault: while no
 * traced process has mapped a target file it returns after one load (live_spans); then one
 * `mapped_spans` hash lookup by process, and only a fault inside the span of addresses
 * where its process mapped target files walks the vma tree and the page cache, by plain
 * loads (memory_walk.bpf.h). A read fault also sums the per-CPU count of mapped file pages
 * twice (a load per possible CPU) and keeps its record in task storage until its
 * filemap:mm_filemap_map_pages, or its thread's next target fault; those filemap events of
 * other processes cost a hash lookup. Measured with BPF statistics on (a 2-CPU VM), all
 * fault-program time divided by the faults recorded, every other fault of the machine in
 * the window included: 386 ns over 20,480 private write faults on a target mapping (about
 * 2 us each untraced); 1.2 us over 160 read faults of a cached 16 MiB file mapped 20 times
 * (8 faults a pass: 2 MiB mapped by each, on average).
 */
#ifndef IOWITNESS_FAULTS_BPF_H
#define IOWITNESS_FAULTS_BPF_H

#include "mapping.bpf.h"
#include "memory_walk.bpf.h"

/* x86-64 page-fault error code (arch/x86/include/asm/trap_pf.h) */
#define X86_PF_PROT 0x1    /* the page was present: a protection fault (a store to a read-only PTE) */
#define X86_PF_WRITE 0x2
#define PTES_PER_TABLE 512

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

/* What a fault maps, as far as its entry tells. */
struct fault_unit {
	__u64 first;             /* the first file page */
	__u64 pages;             /* and how many */
	__u32 page_ready;        /* the faulting page is in the page cache and up to date */
	__u32 around;            /* a read fault: the kernel maps cached neighbours first */
};

/* The file pages a fault at hit->addr maps, as far as its entry tells. Which path the
 * kernel takes (mm/memory.c, handle_pte_fault):
 *   read, not present, the file can map pages (map_pages): do_fault_around maps the cached
 *     pages of a window around it first, a number learnt later (struct pending_fault); the
 *     page itself is what is sure now
 *   write on a present page (X86_PF_PROT): do_wp_page makes that one page writable
 *   write to a private mapping: do_cow_fault copies one page
 *   otherwise finish_fault maps the folio (folio_mapped). A page not ready is read first,
 *     into a folio of a size not known yet: one page is what is sure. */
static __always_inline void fault_unit_of(struct mapping_hit *hit, __u64 error_code, struct fault_unit *unit)
{
	struct address_space *mapping = bpf_rdonly_cast((void *)hit->mapping,
							bpf_core_type_id_kernel(struct address_space));
	__u64 pages = cached_folio_pages(mapping, hit->index);
	bool write = error_code & X86_PF_WRITE;

	unit->first = hit->index;
	unit->pages = 1;
	unit->page_ready = pages > 0;
	unit->around = !write && hit->maps_around;
	if (unit->around || (error_code & X86_PF_PROT) || (write && !hit->shared))
		return;
	unit->pages = folio_mapped(hit->vm_start, hit->vm_end, hit->vm_pgoff, hit->addr, hit->index, pages,
				   &unit->first);
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
	struct mapping_hit hit = {};
	struct fault_unit unit;
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
	fault_unit_of(&hit, error_code, &unit);
	args.offset = unit.first * MAPPING_PAGE_SIZE;
	args.requested = unit.pages * MAPPING_PAGE_SIZE;
	args.flags = IOW_FAULT_LATENCY_UNKNOWN | (unit.page_ready ? 0 : IOW_FAULT_MAJOR) |
		     (in_kernel ? IOW_FAULT_IN_KERNEL : 0) | (unit.around ? IOW_FAULT_AROUND : 0);
	if (unit.around) {
		/* the kernel maps cached neighbours too: learn how many before sending */
		struct pending_fault *f = bpf_task_storage_get(&pending_faults, task, 0,
							       BPF_LOCAL_STORAGE_GET_F_CREATE);

		if (f) {
			f->ts = now;
			f->first = unit.first;
			f->pages = unit.pages;
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

#endif
