/* SPDX-License-Identifier: GPL-2.0 */
/* memory_walk.bpf.h - reading a process's vmas and a file's page cache without a lock.
 *
 * Purpose: a page fault has to be tied to its file (which vma holds the address?) and told
 * major or minor (is the page in the page cache, and how big is its folio?) from a
 * tracepoint where interrupts are off. The kernel's helper for the first, bpf_find_vma,
 * takes the mmap lock and, with interrupts off, defers the unlock to an irq_work, a
 * self-interrupt: about 7 us a fault in this VM. Both trees are RCU-protected, as the
 * kernel's own lockless lookups rely on (lock_vma_under_rcu, filemap_get_entry), and every
 * BPF program runs under the RCU read lock: vma_at walks the maple tree of vmas and
 * cached_folio_pages the xarray of the page cache, by plain loads (kernel_word). A walk that
 * meets a node being replaced says so (*unsure); a vma is checked to still be the process's
 * and to hold the address, since vmas are reused without waiting for a grace period.
 *
 * It also sums a process's count of mapped file pages (mapped_file_pages: a per-CPU
 * counter, each CPU's part found at that CPU's per-CPU offset, which find_cpu_offsets learns
 * from a per-CPU array of our own), which tells how many pages a read fault's fault-around
 * mapped.
 *
 * Example and how to read it: see mapping.bpf.h and faults.bpf.h, the users (munmap, msync
 * and madvise ranges; fault records).
 *
 * Overhead: a vma lookup is 3-4 tree levels of at most 15 pivot loads and one slot load
 * each; a page-cache lookup 2-3 levels of two loads, and two loads of the folio; a count of
 * mapped file pages one load per possible CPU (the offsets: one helper call per CPU, once).
 * No lock.
 */
#ifndef IOWITNESS_MEMORY_WALK_BPF_H
#define IOWITNESS_MEMORY_WALK_BPF_H

#include "core_fixes.bpf.h"

/* maple tree internals (include/linux/maple_tree.h): a node pointer carries its type in
 * bits 3-6; range nodes have 15 pivots, allocation-range nodes (internal nodes of the vma
 * tree) 9; a process's vma tree is 3 or 4 levels deep at most in practice */
#define MAPLE_NODE_MASK 255ULL
#define MAPLE_TYPE_SHIFT 3
#define MAPLE_TYPE_MASK 15
#define MAPLE_RANGE64_PIVOTS 15
#define MAPLE_ARANGE64_PIVOTS 9
#define MAPLE_MAX_LEVELS 8

/* xarray internals (include/linux/xarray.h): 6 bits of index per level; an internal entry
 * has low bits 10; a node pointer is an internal entry above 4096, a sibling one below 256 */
#define XA_CHUNK_SHIFT 6
#define XA_CHUNK_MASK 63
#define XA_MAX_LEVELS 11

/* One 8-byte word of kernel memory at `addr`, by a plain load that the verifier makes
 * fault-safe (a bad address reads 0): a bpf_probe_read_kernel call costs ~20-40 ns, and a
 * fault walks two trees of several levels. The word is read as the first field of a struct
 * that starts with an unsigned long (rb_node), as file_of_fd does (core_fixes.bpf.h). */
static __always_inline __u64 kernel_word(__u64 addr)
{
	struct rb_node *word = bpf_rdonly_cast((void *)addr, bpf_core_type_id_kernel(struct rb_node));

	return word->__rb_parent_color;
}

/* Each CPU's per-CPU offset (the kernel's __per_cpu_offset[], which BPF cannot name on a
 * kernel without KALLSYMS_ALL): the address of CPU c's copy of a per-CPU array's value,
 * less the value's per-CPU pointer (bpf_array.pptrs[0]). Found once, on first use. */
#define MAX_SUM_CPUS 256

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} percpu_probe SEC(".maps");

__u64 cpu_offsets[MAX_SUM_CPUS] = {};
__u32 cpu_count = 0;   /* possible CPUs, once cpu_offsets is filled; 0 before */

/* a pointer's value as a number the verifier lets the program compute with */
static __always_inline __u64 as_number(const void *pointer)
{
	__u64 n = 0;

	bpf_probe_read_kernel(&n, sizeof(n), &pointer);
	return n;
}

static __always_inline __u32 find_cpu_offsets(void)
{
	__u64 pptr = kernel_word(as_number(&percpu_probe) + bpf_core_field_offset(struct bpf_array, pptrs));
	__u32 zero = 0, cpu;

	for (cpu = 0; cpu < MAX_SUM_CPUS; cpu++) {
		void *copy = bpf_map_lookup_percpu_elem(&percpu_probe, &zero, cpu);

		if (!copy)
			break;
		cpu_offsets[cpu] = as_number(copy) - pptr;
	}
	if (cpu < MAX_SUM_CPUS)
		cpu_count = cpu;
	return cpu_count;
}

/* How many file pages the process has mapped: mm->rss_stat[MM_FILEPAGES], a per-CPU
 * counter, read as percpu_counter_sum() does (the shared count plus every CPU's part).
 * -1 when it cannot be summed (more than MAX_SUM_CPUS possible CPUs). */
#define MM_FILEPAGES_SLOT 0   /* enum MM_FILEPAGES: 0 on every kernel */

static __always_inline __s64 mapped_file_pages(struct mm_struct *mm)
{
	struct percpu_counter *fbc = &mm->rss_stat[MM_FILEPAGES_SLOT];
	__u64 counters = as_number(fbc->counters);
	__u32 cpus = *(volatile __u32 *)&cpu_count;
	__s64 sum = fbc->count;

	if (!cpus)
		cpus = find_cpu_offsets();
	if (!cpus)
		return -1;
	for (__u32 cpu = 0; cpu < MAX_SUM_CPUS; cpu++) {
		if (cpu >= cpus)
			break;
		sum += (__s32)kernel_word(counters + cpu_offsets[cpu]);
	}
	return sum;
}

/* Is file page `index` in the mapping's page cache and up to date, and how many pages has
 * the folio that holds it? A read of the xarray under the RCU read lock every BPF program
 * holds: a folio found is not freed meanwhile. Returns 0 when the page is not ready. */
static __always_inline __u64 cached_folio(struct address_space *mapping, __u64 index, __u64 *folio_flags)
{
	__u64 slots = bpf_core_field_offset(struct xa_node, slots);
	__u64 entry = (__u64)mapping->i_pages.xa_head, flags, order;

	*folio_flags = 0;

	for (int level = 0; level < XA_MAX_LEVELS; level++) {
		struct xa_node *node;
		__u64 at, offset;

		if ((entry & 3) != 2 || entry <= 4096)
			break;   /* not a node: a folio, a shadow of an evicted one, or nothing */
		at = entry - 2;   /* the node's address: kept as a number, the verifier allows math on it */
		node = bpf_rdonly_cast((void *)at, bpf_core_type_id_kernel(struct xa_node));
		offset = index >> node->shift;
		if (level == 0 && offset > XA_CHUNK_MASK)
			return 0;   /* beyond the tree: never cached */
		offset &= XA_CHUNK_MASK;
		entry = kernel_word(at + slots + offset * 8);
		/* a large folio fills several slots: the others point at its first */
		if ((entry & 3) == 2 && entry < 256)
			entry = kernel_word(at + slots + (entry >> 2) * 8);
	}
	if (!entry || (entry & 3))
		return 0;   /* nothing, a shadow (value) entry, or an internal retry entry */
	/* folio->flags is the first word of a folio on every kernel */
	flags = kernel_word(entry);
	*folio_flags = flags;
	if (!(flags & (1ULL << bpf_core_enum_value(enum pageflags, PG_uptodate))))
		return 0;
	if (!(flags & (1ULL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 1;
	/* a large folio: its order is the low byte of its second flags word (folio->_flags_1,
	 * Linux 6.3 and later; before, the probe takes the page alone) */
	if (!bpf_core_field_exists(struct folio, _flags_1))
		return 1;
	order = kernel_word(entry + bpf_core_field_offset(struct folio, _flags_1)) & 0xff;
	return order < 32 ? 1ULL << order : 1;
}

static __always_inline __u64 cached_folio_pages(struct address_space *mapping, __u64 index)
{
	__u64 flags;

	return cached_folio(mapping, index, &flags);
}

/* Would fault-around map this page now? It maps a folio that is up to date, not locked and
 * not marked for readahead (the fault on a marked page starts the next readahead itself). */
static __always_inline bool page_mappable_around(struct address_space *mapping, __u64 index)
{
	__u64 flags = 0;

	if (!cached_folio(mapping, index, &flags))
		return false;
	return !(flags & ((1ULL << bpf_core_enum_value(enum pageflags, PG_locked)) |
			  (1ULL << bpf_core_enum_value(enum pageflags, PG_readahead))));
}

/* The vma holding `addr` in `mm`, read from the maple tree of vmas as the kernel's own
 * lockless lookup does (mtree_lookup_walk). NULL when no vma holds it; *unsure when the
 * walk met a node being replaced (a concurrent mmap or munmap) or a tree deeper than
 * MAPLE_MAX_LEVELS. */
static __always_inline struct vm_area_struct *vma_at(struct mm_struct *mm, __u64 addr, bool *unsure)
{
	__u64 entry = (__u64)mm->mm_mt.ma_root;
	__u32 leaf = bpf_core_enum_value(enum maple_type, maple_leaf_64);
	__u32 range = bpf_core_enum_value(enum maple_type, maple_range_64);
	__u32 arange = bpf_core_enum_value(enum maple_type, maple_arange_64);
	struct vm_area_struct *vma;

	/* a root that is no node holds one entry, at address 0: no vma of ours */
	if ((entry & 3) != 2 || entry <= 4096)
		return NULL;
	for (int level = 0; level < MAPLE_MAX_LEVELS; level++) {
		__u64 node = entry & ~MAPLE_NODE_MASK, type = (entry >> MAPLE_TYPE_SHIFT) & MAPLE_TYPE_MASK;
		__u64 pivot_at, slot_at, count, offset = 0;

		if (type == arange) {
			pivot_at = bpf_core_field_offset(struct maple_arange_64, pivot);
			slot_at = bpf_core_field_offset(struct maple_arange_64, slot);
			count = MAPLE_ARANGE64_PIVOTS;
		} else if (type == range || type == leaf) {
			pivot_at = bpf_core_field_offset(struct maple_range_64, pivot);
			slot_at = bpf_core_field_offset(struct maple_range_64, slot);
			count = MAPLE_RANGE64_PIVOTS;
		} else {
			break;
		}
		/* the first slot whose pivot (last address) reaches addr; past the last, the last */
		for (int i = 0; i < MAPLE_RANGE64_PIVOTS; i++) {
			if (i >= count || kernel_word(node + pivot_at + i * 8) >= addr)
				break;
			offset++;
		}
		entry = kernel_word(node + slot_at + offset * 8);
		/* a dead node (replaced by a writer) has its parent pointing at itself */
		if ((kernel_word(node) & ~MAPLE_NODE_MASK) == node)
			break;
		if (type != leaf)
			continue;
		if (!entry)
			return NULL;
		/* vmas are reused without an RCU grace period: check it is still ours and holds addr */
		vma = bpf_rdonly_cast((void *)entry, bpf_core_type_id_kernel(struct vm_area_struct));
		if (vma->vm_mm != mm || addr < vma->vm_start || addr >= vma->vm_end)
			break;
		return vma;
	}
	*unsure = true;
	return NULL;
}

#endif
