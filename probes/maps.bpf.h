/* SPDX-License-Identifier: GPL-2.0 */
/* maps.bpf.h — the settings, and the maps and per-CPU state every part of the probe shares.
 *
 * Purpose: what sys_enter leaves for sys_exit (the per-CPU slot and its task-storage spill),
 * the side ring of rare facts (`meta_events`), the lost counters, and the maps kept only so
 * the object's BTF carries the shared structs. Maps that belong to one part live with it:
 * the event area in event_area.bpf.h, the target sets in targets.bpf.h, --summary's in
 * summary.bpf.h, the device view's in block.bpf.h and offcpu.bpf.h. collector/probe.py finds
 * every map by its name.
 *
 * Overhead: this_cpu_slot() and count_lost() are inlined per-CPU array lookups, a few
 * instructions each; end_of_call() looks in task storage (~70 ns) only for a call during
 * which its thread left the CPU; wake_when_filling() is two helper calls per record.
 */
#ifndef IOWITNESS_MAPS_BPF_H
#define IOWITNESS_MAPS_BPF_H

#include "events.h"
#include "core_fixes.bpf.h"

/* settings fixed between open and load (struct iow_settings, events.h) */
const volatile struct iow_settings settings SEC(".rodata.settings") = {
	.area_events = 1,
	.doorbell_events = 1,
};

#define AT_FDCWD -100

/* rare facts that give events their context (struct iow_meta): files, forks, execs */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} meta_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, IOW_LOST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline void count_lost_n(__u32 slot, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&lost, &slot);

	if (c)
		*c += n;
}

static __always_inline void count_lost(__u32 slot)
{
	count_lost_n(slot, 1);
}

/* A free number for a new key (an aggregate's slot, a ring's number), from `numbers`, a hash
 * of __u32 numbers taken. Claimed by an insert that fails if the number is there, which is
 * atomic: no fetch-and-add, which the BPF instruction set our clang targets (v1) lacks.
 * *next is the next number to try, a hint shared by all CPUs; a CPU that loses a race moves
 * on to the next. -1 when the numbers up to `last` are used, or 16 races were lost. */
static __always_inline int claim_number(void *numbers, __u32 *next, __u32 last, __u32 *number)
{
	__u32 candidate = *(volatile __u32 *)next;
	__u8 taken = 1;

	for (int i = 0; i < 16; i++, candidate++) {
		if (candidate > last)
			return -1;
		if (!bpf_map_update_elem(numbers, &candidate, &taken, BPF_NOEXIST)) {
			*next = candidate + 1;
			*number = candidate;
			return 0;
		}
	}
	return -1;
}

/* io_uring_enter, io_submit, io_getevents of traced processes: counted, not recorded */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, IOW_ASYNC_SLOTS);
	__type(key, __u32);
	__type(value, struct iow_async_count);
} async_calls SEC(".maps");

static __always_inline void count_async_call(__u32 slot, __u64 ns)
{
	struct iow_async_count *c = bpf_map_lookup_elem(&async_calls, &slot);

	if (c) {
		c->calls += 1;
		c->ns += ns;
	}
}

/* never used at run time: keeps struct iow_event in the object's BTF, which is what
 * tests/unit/test_layout.py compares with the Python reader's layout */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iow_event);
} event_layout SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iow_block);
} block_layout SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iow_offcpu);
} offcpu_layout SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iow_output);
} output_layout SEC(".maps");

/* scratch space too large for the 512-byte BPF stack */
struct scratch {
	struct iow_meta meta;
	struct iow_name_key name;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_space SEC(".maps");

/* What sys_enter leaves for sys_exit of the same thread.
 *
 * Fast path: one slot per CPU, owned by the thread that last entered a file syscall there
 * since it was switched in. A per-CPU array lookup is a few inlined instructions where a
 * task-storage lookup costs ~70 ns, and it is done twice per call. A thread that leaves the
 * CPU in the middle of a call (it blocks, is preempted, migrates) passes through
 * sched_switch first, which moves the slot into the thread's task storage (slow path) and
 * frees the slot; sys_exit looks there when the CPU's slot is not its own.
 */
struct call_start {
	__u64 ts;    /* entry time; 0: no traced call in progress */
	__u64 ino;   /* close, munmap: identity of the file, resolved before the fd or mapping disappears */
	__u32 dev;
	__u32 nr;
	__s64 offset;   /* munmap: file offset of the range's start, resolved with the file */
};

#ifdef IOW_COMPAT
/* Task storage (BPF_MAP_TYPE_TASK_STORAGE) is Linux 5.11 for LSM programs and 5.12 for
 * tracing ones (a10787e6d58c "bpf: Enable task local storage for tracing programs"): the
 * compatible object keeps the spilled entries in a hash by thread id instead, sized by
 * collector/probe.py and emptied at each thread's exit (forget_task_start, on_exit). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct call_start);
} starts SEC(".maps");

static __always_inline struct call_start *task_start(struct task_struct *task, bool create)
{
	__u32 tid = BPF_CORE_READ(task, pid);
	struct call_start *start = bpf_map_lookup_elem(&starts, &tid);
	struct call_start fresh = {};

	if (start || !create)
		return start;
	bpf_map_update_elem(&starts, &tid, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&starts, &tid);
}

static __always_inline void forget_task_start(__u32 tid)
{
	bpf_map_delete_elem(&starts, &tid);
}
#else
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct call_start);
} starts SEC(".maps");

static __always_inline struct call_start *task_start(struct task_struct *task, bool create)
{
	return bpf_task_storage_get(&starts, task, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* task storage dies with its task */
static __always_inline void forget_task_start(__u32 tid)
{
}
#endif

struct cpu_slot {
	__u64 owner;    /* task_struct address of the thread it describes; 0: nobody */
	/* the owner's pt_regs (on its kernel stack, one per live thread), which both syscall
	 * programs get as an argument: comparing it spares them a helper call for the task */
	__u64 owner_regs;
	__u32 traced;   /* the owner belongs to the traced set (and has task storage to spill to) */
	__u32 pad0;
	/* the owner's thread and process ids, read once per stint: a traced call's record then
	 * loads them from the slot, not from the task (each load through a task pointer kept as a
	 * number is a fault-checked one, about eight instructions once JITed) */
	__u32 owner_tid;
	__u32 owner_tgid;
	struct call_start call;
	/* memo of the last target file a call on this CPU used, whatever the thread: saves the
	 * `files` hash lookup while a benchmark works on one file. Only targets are memoised
	 * (user space only ever adds files), and an epoch move invalidates it (files_version). */
	struct iow_file_key file;
	__u32 file_generation;
	__u32 file_epoch;
	__u64 file_version;   /* files_version when memoised; valid only when file_known */
	__u32 file_known;
	/* --summary: memo of the last aggregate key and its slot number */
	__u32 summary_known;
	__u32 summary_slot;
	__u32 pad1;
	struct iow_summary_key summary_key;
	/* memo of the last plain call on a target, by fd (targets.bpf.h, fd_memo_*): the fd
	 * table (task->files) and fd number it was read from, the file found there and that
	 * file's identity; valid while no fd of a traced process has been closed since
	 * (fds_closing, fds_closed), so a call on the same fd of the same table skips the fd-table
	 * walk and the inode walk. fd_files 0: empty. */
	__u64 fd_files;
	__u64 fd_file;
	__u64 fd_closed;    /* fds_closed read before the walk that filled the memo */
	__u64 fd_version;   /* files_version then */
	struct iow_file_key fd_key;
	__u32 fd_epoch;
	__s32 fd_num;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_slot);
} cpu_slots SEC(".maps");

static __always_inline struct cpu_slot *this_cpu_slot(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_slots, &zero);
}

/* the thread a call's record is written for */
struct task_ids {
	__u32 tid;
	__u32 tgid;
};

/* sys_exit: the entry sys_enter left for this thread's call `nr`, on this CPU's slot or in the
 * thread's storage; NULL when there is none (the call is not traced). The entry is consumed
 * (its ts cleared), its time returned in *start_ts, the calling thread in *task and its ids in
 * *ids. */
static __always_inline struct call_start *end_of_call(struct cpu_slot *slot, struct pt_regs *regs, long nr,
						      __u64 *start_ts, struct task_struct **task, struct task_ids *ids)
{
	struct call_start *start;

	if (slot->owner_regs == (__u64)regs) {
		start = &slot->call;
		*task = task_at(slot->owner);
		ids->tid = slot->owner_tid;
		ids->tgid = slot->owner_tgid;
	} else {
		/* the thread left the CPU during the call: sched_switch kept its entry */
		struct task_struct *current = current_task();

		*task = current;
		start = task_start(current, false);
		if (!start)
			return NULL;
		/* a helper's scalars, not loads: clang would merge loads from the task and from the
		 * slot into one instruction the verifier refuses (two kinds of pointer) */
		__u64 pid_tgid = bpf_get_current_pid_tgid();

		ids->tid = (__u32)pid_tgid;
		ids->tgid = pid_tgid >> 32;
	}
	if (!start->ts || start->nr != nr)
		return NULL;
	*start_ts = start->ts;
	start->ts = 0;
	return start;
}

/* sched_switch: the thread leaving owns this CPU's syscall slot: keep a call in progress in
 * its own storage (sys_exit may run on another CPU) and free the slot for the next thread */
static __always_inline void release_cpu_slot(struct task_struct *prev)
{
	struct cpu_slot *slot = this_cpu_slot();

	if (!slot || slot->owner != (__u64)prev)
		return;
	if (slot->call.ts) {
		struct call_start *start = task_start(prev, false);

		if (start)
			*start = slot->call;
		else
			count_lost(IOW_LOST_EVENTS);
	}
	slot->owner = 0;
	slot->owner_regs = 0;
	slot->call.ts = 0;
}

/* Wake the collector once a ring is an eighth full, not for each record: a block request or
 * a context switch can come tens of thousands of times a second, and a default submit wakes a
 * caught-up reader every time. The collector also reads every ring on a timer. */
static __always_inline __u64 wake_when_filling(void *ring)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= bpf_ringbuf_query(ring, BPF_RB_RING_SIZE) / 8 ?
		       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

#endif
