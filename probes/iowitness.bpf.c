// SPDX-License-Identifier: GPL-2.0
/* iowitness.bpf.c — one record per completed file syscall of a benchmark, from the kernel.
 *
 * Purpose: follow a process set (a PID and everything it forks, or any process) and a file
 * set (names matched when opened, inodes already known) and stream open/read/write/
 * pread/pwrite/readv/writev/preadv/pwritev(2)/lseek/fsync/fdatasync/close/dup/dup2/dup3/fcntl/
 * ftruncate/fallocate calls on target files, with latency, offset and size, to user space.
 *
 * Example (from `iowitness show` of scripts/demo.sh: iozone -i0 -i1 -i2 -s 64m -r 64k):
 *
 *     syscall    calls  errors      bytes  short  min µs  mean µs  p50 µs   p90 µs   p99 µs
 *     read       3,074       0  192.1 MiB      0    2.60     14.0    9.48     11.0     47.2
 *     write      3,072       0  192.0 MiB      0    7.67     15.7    11.3     18.2     31.1
 *     fsync         10       0        0 B      0    46.8  13.6 ms   820.7  42.5 ms  48.0 ms
 *
 * How to read it: each row sums struct iow_event records (probes/events.h); latency is
 * sys_exit minus sys_enter of the same thread, so it includes time blocked in the kernel.
 *
 * Overhead: two raw tracepoint programs (sys_enter, sys_exit) run for every syscall on the
 * machine; calls that are not file syscalls return after a switch. The rest works through a
 * per-CPU slot (struct cpu_slot): the entry time of the call in progress and memos of the
 * last target file and --summary key, all inlined array lookups. Threads outside the set
 * return after one compare (one task-storage lookup each time they come on a CPU), calls on
 * non-target files after an fd-table walk (plain loads, no helper call) and one hash
 * lookup. A target call writes one 72-byte record into its CPU's ring of the event area
 * (events.h): no lock, no atomic; the reader is woken once per `doorbell_events` records,
 * never per record. With settings.summary (--summary) no record is written: the call is
 * added to its per-CPU aggregate instead. Measured on a 1-byte pread loop with kernel BPF
 * statistics on (which add a clock read to each): entry ~70-100 ns, exit ~150-160 ns
 * (summary ~110-165 ns) per traced call, of which ~55 ns are the two clock reads a latency
 * needs. See docs/performance.md for the measured slowdowns.
 *
 * Why raw tracepoints (tp_btf) and not syscalls:sys_enter_*: one program pair covers every
 * syscall and costs about half as much per call; kprobes and fentry are unavailable on the
 * kernels we target. Why the arguments are read at exit: x86-64 keeps the caller's argument
 * registers in pt_regs for the whole call, so the enter hook only has to stamp the time.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "events.h"

#ifndef __TARGET_ARCH_x86
#error "iowitness probes know the x86-64 syscall table only"
#endif

#define AT_FDCWD -100
#define S_IFMT 00170000
#define S_IFREG 0100000
#define O_WRONLY 01
#define O_CREAT 0100
#define O_TRUNC 01000
#define MAX_IOVEC 64

char LICENSE[] SEC("license") = "GPL";

const volatile struct iow_settings settings SEC(".rodata.settings") = {
	.area_events = 1,
	.doorbell_events = 1,
};

/* the event area (events.h); user space sizes both maps before loading */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iow_event);
} event_area SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iow_area_position);
} event_positions SEC(".maps");

/* a tiny ring whose only use is to wake the reader: one 8-byte record per doorbell_events */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} doorbell SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct iow_file_key);
	__type(value, struct iow_file_state);
} files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct iow_name_key);
	__type(value, __u8);
} names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, IOW_EXCLUDE_MAX);
	__type(key, __u32);
	__type(value, struct iow_exclude);
} excludes SEC(".maps");

/* --summary: aggregates per (file, process, phase, syscall). A key gets a slot number once
 * (`summary_slots`); the values live in a per-CPU array at that number, which the hot path
 * reaches with an inlined array lookup after a per-CPU memo of the last key (struct cpu_slot)
 * instead of a hash lookup per call. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, IOW_SUMMARY_MAX);
	__type(key, struct iow_summary_key);
	__type(value, __u32);
} summary_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, IOW_SUMMARY_MAX);
	__type(key, __u32);
	__type(value, struct iow_summary);
} summary SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, IOW_SUMMARY_MAX);
	__type(key, __u32);
	__type(value, __u8);
} summary_numbers SEC(".maps");

__u32 summary_next_number = 0;

/* bumped whenever a file's epoch moves: the per-CPU memos of target files are then stale */
__u64 files_version = 0;

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
	__u64 ino;   /* close: identity of the file, resolved before the fd disappears */
	__u32 dev;
	__u32 nr;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct call_start);
} starts SEC(".maps");

struct cpu_slot {
	__u64 owner;    /* task_struct address of the thread it describes; 0: nobody */
	__u32 traced;   /* the owner belongs to the traced set (and has task storage to spill to) */
	__u32 pad0;
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

static __always_inline __u16 op_of_syscall(long nr)
{
	switch (nr) {
	case 0: return IOW_OP_READ;
	case 1: return IOW_OP_WRITE;
	case 2: return IOW_OP_OPEN;
	case 3: return IOW_OP_CLOSE;
	case 8: return IOW_OP_LSEEK;
	case 17: return IOW_OP_PREAD64;
	case 18: return IOW_OP_PWRITE64;
	case 19: return IOW_OP_READV;
	case 20: return IOW_OP_WRITEV;
	case 32: return IOW_OP_DUP;
	case 33: return IOW_OP_DUP2;
	case 72: return IOW_OP_FCNTL;
	case 74: return IOW_OP_FSYNC;
	case 75: return IOW_OP_FDATASYNC;
	case 77: return IOW_OP_FTRUNCATE;
	case 85: return IOW_OP_CREAT;
	case 257: return IOW_OP_OPENAT;
	case 285: return IOW_OP_FALLOCATE;
	case 292: return IOW_OP_DUP3;
	case 295: return IOW_OP_PREADV;
	case 296: return IOW_OP_PWRITEV;
	case 327: return IOW_OP_PREADV2;
	case 328: return IOW_OP_PWRITEV2;
	case 437: return IOW_OP_OPENAT2;
	}
	return 0;
}

static __always_inline bool is_open(__u16 op)
{
	return op == IOW_OP_OPEN || op == IOW_OP_OPENAT || op == IOW_OP_OPENAT2 || op == IOW_OP_CREAT;
}

static __always_inline void count_lost(__u32 slot)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &slot);

	if (n)
		*n += 1;
}

static __always_inline bool process_is_traced(__u32 tgid)
{
	if (tgid == settings.collector_tgid)
		return false;
	if (settings.all_processes)
		return true;
	return bpf_map_lookup_elem(&procs, &tgid) != NULL;
}

/* The hot path reads kernel memory with plain loads (the verifier turns them into
 * fault-safe ones) instead of bpf_probe_read_kernel calls: BTF-typed pointers allow it, and a
 * load costs a few ns where a helper call costs tens. `regs` of tp_btf is such a pointer, and
 * so is `task`; a file read out of the fd table becomes one through bpf_rdonly_cast (6.2). */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

#define ARG1(regs) ((regs)->di)
#define ARG2(regs) ((regs)->si)
#define ARG3(regs) ((regs)->dx)
#define ARG4(regs) ((regs)->r10)
#define ARG6(regs) ((regs)->r9)

static __always_inline struct file *file_of_fd(struct task_struct *task, long fd)
{
	struct fdtable *fdt = task->files->fdt;
	struct kiocb *entry;

	if (fd < 0 || fd >= fdt->max_fds)
		return NULL;
	/* an array indexed at run time is not a BTF access the verifier allows: its slot is read
	 * as the first field of a struct that starts with a file pointer (kiocb), a plain load
	 * where bpf_probe_read_kernel was a helper call (~15-20 ns a call, pread loop) */
	entry = bpf_rdonly_cast((void *)((unsigned long)fdt->fd + fd * sizeof(struct file *)),
				bpf_core_type_id_kernel(struct kiocb));
	return entry->ki_filp;
}

static __always_inline __u32 file_key_of(struct file *file, struct iow_file_key *key)
{
	struct inode *inode = file->f_inode;

	key->ino = inode->i_ino;
	key->dev = inode->i_sb->s_dev;
	key->pad0 = 0;
	return inode->i_generation;
}

/* Is this (already opened) file a target? Its inode is in the set, and is the same file. */
static __always_inline struct iow_file_state *target_state(struct iow_file_key *key, __u32 generation)
{
	struct iow_file_state *state = bpf_map_lookup_elem(&files, key);

	return state && (!state->generation_known || state->generation == generation) ? state : NULL;
}

static __always_inline bool is_target(struct iow_file_key *key, __u32 generation)
{
	return target_state(key, generation) != NULL;
}

/* Is this (already opened) file a target? Through the CPU's memo first; sets its epoch. */
static __always_inline bool target_file(struct cpu_slot *slot, struct iow_file_key *key, __u32 generation,
					__u32 *epoch)
{
	__u64 version = *(volatile __u64 *)&files_version;
	struct iow_file_state *state;

	if (slot->file_known && slot->file.ino == key->ino && slot->file.dev == key->dev &&
	    slot->file_generation == generation && slot->file_version == version) {
		*epoch = slot->file_epoch;
		return true;
	}
	state = target_state(key, generation);
	if (!state)
		return false;
	*epoch = state->epoch;
	slot->file = *key;
	slot->file_generation = generation;
	slot->file_epoch = *epoch;
	slot->file_version = version;
	slot->file_known = 1;
	return true;
}

static __always_inline bool is_pseudo_fs(__u32 magic)
{
	switch (magic) {
	case 0x9fa0:      /* proc */
	case 0x62656572:  /* sysfs */
	case 0x64626720:  /* debugfs */
	case 0x74726163:  /* tracefs */
	case 0x27e0eb:    /* cgroup */
	case 0x63677270:  /* cgroup2 */
	case 0xcafe4a11:  /* bpf */
	case 0x73636673:  /* securityfs */
	case 0x1cd1:      /* devpts */
		return true;
	}
	return false;
}

static __always_inline bool path_is_excluded(const __u8 *path)
{
	for (__u32 i = 0; i < IOW_EXCLUDE_MAX; i++) {
		__u32 slot = i;
		struct iow_exclude *ex = bpf_map_lookup_elem(&excludes, &slot);
		bool match = true;

		if (!ex || ex->prefix[0] == 0)
			return false;
		for (__u32 j = 0; j < IOW_EXCLUDE_LEN; j++) {
			if (ex->prefix[j] == 0)
				break;
			if (path[j] != ex->prefix[j]) {
				match = false;
				break;
			}
		}
		if (match)
			return true;
	}
	return false;
}

/* Is the file just opened by name a target? Files already in `files` are handled before. */
static __always_inline bool opened_file_is_target(struct file *file, struct iow_meta *meta,
						  struct iow_name_key *name)
{
	struct dentry *dentry = BPF_CORE_READ(file, f_path.dentry);
	struct inode *inode = BPF_CORE_READ(file, f_inode);

	if (settings.mode == IOW_MODE_ALL_FILES) {
		if ((BPF_CORE_READ(inode, i_mode) & S_IFMT) != S_IFREG)
			return false;
		if (is_pseudo_fs(meta->s_magic))
			return false;
		return !path_is_excluded(meta->path);
	}

	/* IOW_MODE_FILE_SET: a name rule for (directory, name) or for the whole directory */
	__builtin_memset(name, 0, sizeof(*name));
	name->dir_ino = BPF_CORE_READ(dentry, d_parent, d_inode, i_ino);
	name->dir_dev = meta->dev;
	bpf_probe_read_kernel_str(name->name, sizeof(name->name), BPF_CORE_READ(dentry, d_name.name));
	if (bpf_map_lookup_elem(&names, name))
		return true;
	__builtin_memset(name->name, 0, sizeof(name->name));
	return bpf_map_lookup_elem(&names, name) != NULL;
}

/* The device view's filter (maps after `starts`), declared here for handle_open. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u8);
} block_devs SEC(".maps");

/* A new target file's block device (none on tmpfs, NFS, ...) joins the device filter. */
static __always_inline void watch_block_device(struct file *file)
{
	struct block_device *bdev = BPF_CORE_READ(file, f_inode, i_sb, s_bdev);
	__u32 dev;
	__u8 yes = 1;

	if (!bdev)
		return;
	dev = BPF_CORE_READ(bdev, bd_dev);
	if (!bpf_map_lookup_elem(&block_devs, &dev))
		bpf_map_update_elem(&block_devs, &dev, &yes, BPF_ANY);
}

/* An open succeeded: decide whether the new fd's file is a target, and describe it if so. */
static __always_inline bool handle_open(struct pt_regs *regs, __u16 op, long fd,
					struct iow_file_key *key, __u32 *flags)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file *file = file_of_fd(task, fd);
	struct iow_file_state state = { .generation_known = 1 };
	const char *user_path;
	struct scratch *s;
	__u32 zero = 0;

	if (!file)
		return false;
	state.generation = file_key_of(file, key);

	switch (op) {
	case IOW_OP_OPEN:
		user_path = (const char *)ARG1(regs);
		*flags = ARG2(regs);
		break;
	case IOW_OP_CREAT:
		user_path = (const char *)ARG1(regs);
		*flags = O_CREAT | O_WRONLY | O_TRUNC;
		break;
	case IOW_OP_OPENAT2: {
		struct open_how *how = (struct open_how *)ARG3(regs);
		__u64 how_flags = 0;

		bpf_probe_read_user(&how_flags, sizeof(how_flags), &how->flags);
		user_path = (const char *)ARG2(regs);
		*flags = how_flags;
		break;
	}
	default:
		user_path = (const char *)ARG2(regs);
		*flags = ARG3(regs);
	}

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
	bpf_map_update_elem(&files, key, &state, BPF_ANY);
	watch_block_device(file);
	if (bpf_ringbuf_output(&meta_events, &s->meta, sizeof(s->meta), 0))
		count_lost(IOW_LOST_META);
	return true;
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

/* --summary: a file's phase ends at close/fsync/fdatasync and a new one begins at open */
static __always_inline void next_phase_of(struct iow_file_key *key)
{
	struct iow_file_state *state = bpf_map_lookup_elem(&files, key);

	if (state) {
		__sync_fetch_and_add(&state->epoch, 1);
		__sync_fetch_and_add(&files_version, 1);
	}
}

static __always_inline __u32 log2_bucket(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r < IOW_HIST_BUCKETS ? r : IOW_HIST_BUCKETS - 1;
}

/* --summary: a free slot number for a new key. Claimed by inserting it into
 * `summary_numbers` (an insert that fails if the number is there is atomic): no fetch-and-add,
 * which the BPF instruction set our clang targets (v1) lacks. The next number to try is a
 * hint shared by all CPUs; a CPU that loses a race moves on to the next. */
static __always_inline int claim_summary_number(__u32 *number)
{
	__u32 candidate = *(volatile __u32 *)&summary_next_number;
	__u8 taken = 1;

	for (int i = 0; i < 16; i++, candidate++) {
		if (candidate >= IOW_SUMMARY_MAX)
			return -1;
		if (!bpf_map_update_elem(&summary_numbers, &candidate, &taken, BPF_NOEXIST)) {
			summary_next_number = candidate + 1;
			*number = candidate;
			return 0;
		}
	}
	return -1;
}

/* --summary: the aggregate of a key on this CPU, through the CPU's memo of the last key */
static __always_inline struct iow_summary *summary_of(struct cpu_slot *slot, struct iow_summary_key *key)
{
	struct iow_summary_key *memo = &slot->summary_key;
	__u32 *found, number;

	if (slot->summary_known && memo->ino == key->ino && memo->dev == key->dev &&
	    memo->tgid == key->tgid && memo->epoch == key->epoch && memo->op == key->op)
		return bpf_map_lookup_elem(&summary, &slot->summary_slot);
	found = bpf_map_lookup_elem(&summary_slots, key);
	if (found) {
		number = *found;
	} else {
		if (claim_summary_number(&number))
			return NULL;
		if (bpf_map_update_elem(&summary_slots, key, &number, BPF_NOEXIST)) {
			/* another CPU gave the key a number first: use that one */
			found = bpf_map_lookup_elem(&summary_slots, key);
			if (!found)
				return NULL;
			number = *found;
		}
	}
	slot->summary_key = *key;
	slot->summary_slot = number;
	slot->summary_known = 1;
	return bpf_map_lookup_elem(&summary, &number);
}

/* --summary: add one completed call to its aggregate instead of sending a record */
static __always_inline void summarize(struct cpu_slot *slot, struct iow_file_key *file, __u32 epoch,
				      __u16 op, __u32 tgid, __u64 start_ts, __u64 now, __s64 offset,
				      __u64 requested, long ret)
{
	struct iow_summary_key key = {
		.ino = file->ino, .dev = file->dev, .tgid = tgid, .epoch = epoch, .op = op,
	};
	struct iow_summary *sum = summary_of(slot, &key);
	__u64 latency = now - start_ts;

	if (!sum) {
		count_lost(IOW_LOST_SUMMARY);
		return;
	}
	if (!sum->calls)
		sum->first_start_ns = start_ts;
	sum->calls += 1;
	sum->last_end_ns = now;
	sum->latency_ns += latency;
	if (latency > sum->latency_max_ns)
		sum->latency_max_ns = latency;
	sum->hist[log2_bucket(latency)] += 1;
	if (ret < 0) {
		sum->errors += 1;
		return;
	}
	if (op >= IOW_OP_READ && op <= IOW_OP_PWRITEV2) {  /* reads and writes */
		sum->requested += requested;
		sum->bytes += ret;
		if ((__u64)ret < requested)
			sum->short_calls += 1;
		if (offset == sum->next_offset)
			sum->sequential += 1;
		sum->next_offset = offset + ret;
	}
}

SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long nr)
{
	__u16 op = op_of_syscall(nr);
	struct task_struct *task;
	struct cpu_slot *slot;
	struct call_start *start;

	if (!op)
		return 0;
	task = bpf_get_current_task_btf();
	slot = this_cpu_slot();
	if (!slot)
		return 0;
	if (slot->owner != (__u64)task) {
		/* first file syscall since the thread came on this CPU: decide once per stint.
		 * A thread with storage is traced; a new thread of a traced process gets some. */
		slot->owner = (__u64)task;
		slot->call.ts = 0;
		start = bpf_task_storage_get(&starts, task, 0, 0);
		if (!start && process_is_traced(task->tgid))
			start = bpf_task_storage_get(&starts, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		slot->traced = start != NULL;
	}
	if (!slot->traced)
		return 0;
	slot->call.nr = nr;
	slot->call.ts = 0;
	if (op == IOW_OP_CLOSE) {
		/* the fd is gone at exit: resolve the file now */
		struct file *file = file_of_fd(task, ARG1(regs));
		struct iow_file_key key;
		__u32 generation;

		if (!file)
			return 0;
		generation = file_key_of(file, &key);
		if (!is_target(&key, generation))
			return 0;
		slot->call.ino = key.ino;
		slot->call.dev = key.dev;
	}
	slot->call.ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	long nr = regs->orig_ax;
	__u16 op = op_of_syscall(nr);
	__u64 now;
	struct task_struct *task;
	struct cpu_slot *slot;
	struct call_start *start;
	struct iow_file_key key = {};
	__u32 epoch = 0;
	bool epoch_known = false;
	struct iow_event *e;
	struct file *file = NULL;
	__u64 start_ts, requested = 0, head;
	struct iow_area_position *position;
	__u32 cpu, index;
	__s64 offset = -1;
	__u32 flags = 0;
	long fd;

	if (!op)
		return 0;
	/* the clock after the cheap test: most syscalls of the machine are not file syscalls */
	now = bpf_ktime_get_ns();
	task = bpf_get_current_task_btf();
	slot = this_cpu_slot();
	if (!slot)
		return 0;
	if (slot->owner == (__u64)task) {
		start = &slot->call;
	} else {
		/* the thread left the CPU during the call: sched_switch kept its entry */
		start = bpf_task_storage_get(&starts, task, 0, 0);
		if (!start)
			return 0;
	}
	if (!start->ts || start->nr != nr)
		return 0;
	start_ts = start->ts;
	start->ts = 0;

	if (is_open(op)) {
		fd = ret;
		if (ret < 0 || !handle_open(regs, op, ret, &key, &flags))
			return 0;
		if (settings.summary)
			next_phase_of(&key);
	} else if (op == IOW_OP_CLOSE) {
		fd = ARG1(regs);
		key.ino = start->ino;
		key.dev = start->dev;
	} else {
		fd = ARG1(regs);
		file = file_of_fd(task, fd);
		if (!file || !target_file(slot, &key, file_key_of(file, &key), &epoch))
			return 0;
		epoch_known = true;
	}

	switch (op) {
	case IOW_OP_READ:
	case IOW_OP_WRITE:
	case IOW_OP_READV:
	case IOW_OP_WRITEV:
		/* the kernel's own file position moved by ret: where the call began */
		offset = file->f_pos - (ret > 0 ? ret : 0);
		if (op == IOW_OP_READ || op == IOW_OP_WRITE)
			requested = ARG3(regs);
		else
			requested = iovec_bytes((const struct iovec *)ARG2(regs),
						ARG3(regs));
		break;
	case IOW_OP_PREAD64:
	case IOW_OP_PWRITE64:
		requested = ARG3(regs);
		offset = ARG4(regs);
		break;
	case IOW_OP_PREADV:
	case IOW_OP_PWRITEV:
	case IOW_OP_PREADV2:
	case IOW_OP_PWRITEV2:
		requested = iovec_bytes((const struct iovec *)ARG2(regs),
					ARG3(regs));
		offset = ARG4(regs);
		if (op == IOW_OP_PREADV2 || op == IOW_OP_PWRITEV2) {
			flags = ARG6(regs);
			/* offset -1 means "at the file position", as readv/writev */
			if (offset == -1)
				offset = file->f_pos - (ret > 0 ? ret : 0);
		}
		break;
	case IOW_OP_LSEEK:
		requested = ARG2(regs);
		flags = ARG3(regs);
		break;
	case IOW_OP_FCNTL:
		flags = ARG2(regs);
		requested = ARG3(regs);
		break;
	case IOW_OP_FTRUNCATE:
		requested = ARG2(regs);
		break;
	case IOW_OP_FALLOCATE:
		flags = ARG2(regs);
		offset = ARG3(regs);
		requested = ARG4(regs);
		break;
	}

	if (settings.summary) {
		/* no record: the verifier drops the ring-buffer path below in this mode */
		if (!epoch_known) {  /* opens and closes: rare, one more lookup */
			struct iow_file_state *state = bpf_map_lookup_elem(&files, &key);

			epoch = state ? state->epoch : 0;
		}
		summarize(slot, &key, epoch, op, task->tgid, start_ts, now, offset, requested, ret);
		if (op == IOW_OP_CLOSE || op == IOW_OP_FSYNC || op == IOW_OP_FDATASYNC)
			next_phase_of(&key);
		return 0;
	}

	/* this CPU's next entry in the event area; a full area is counted, never silent */
	cpu = bpf_get_smp_processor_id();
	position = bpf_map_lookup_elem(&event_positions, &cpu);
	if (!position)
		return 0;
	head = position->head;
	if (head - *(volatile __u64 *)&position->tail >= settings.area_events) {
		count_lost(IOW_LOST_EVENTS);
		return 0;
	}
	index = cpu * settings.area_events + (__u32)(head & (settings.area_events - 1));
	e = bpf_map_lookup_elem(&event_area, &index);
	if (!e)
		return 0;
	e->start_ns = start_ts;
	e->latency_ns = now - start_ts;
	e->ino = key.ino;
	e->offset = offset;
	e->requested = requested;
	e->ret = ret;
	e->tgid = task->tgid;
	e->tid = task->pid;
	e->dev = key.dev;
	e->fd = fd;
	e->flags = flags;
	e->op = op;
	e->pad0 = 0;
	/* the record before the head that publishes it: x86 keeps stores in program order, the
	 * barrier keeps the compiler from moving them */
	asm volatile("" ::: "memory");
	position->head = head + 1;
	/* wake the reader once per batch, never per record; it also polls on a timer */
	if (((head + 1) & (settings.doorbell_events - 1)) == 0)
		bpf_ringbuf_output(&doorbell, &head, sizeof(head), BPF_RB_FORCE_WAKEUP);
	return 0;
}

static __always_inline void send_process_fact(__u32 kind, struct task_struct *task, __u32 parent_tgid,
					      const char *kernel_path)
{
	struct iow_meta *m = bpf_ringbuf_reserve(&meta_events, sizeof(*m), 0);

	if (!m) {
		count_lost(IOW_LOST_META);
		return;
	}
	__builtin_memset(m, 0, sizeof(*m));
	m->ts_ns = bpf_ktime_get_ns();
	m->kind = kind;
	m->tgid = BPF_CORE_READ(task, tgid);
	m->parent_tgid = parent_tgid;
	m->fd = -1;
	m->dirfd = AT_FDCWD;
	bpf_probe_read_kernel_str(m->comm, sizeof(m->comm), &task->comm);
	if (kernel_path)
		bpf_probe_read_kernel_str(m->path, sizeof(m->path), kernel_path);
	bpf_ringbuf_submit(m, 0);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid);
	__u32 child_tgid = BPF_CORE_READ(child, tgid);
	__u8 yes = 1;

	/* a new thread shares its tgid, which is already in the set */
	if (settings.all_processes || child_tgid == parent_tgid)
		return 0;
	if (!bpf_map_lookup_elem(&procs, &parent_tgid))
		return 0;
	bpf_map_update_elem(&procs, &child_tgid, &yes, BPF_ANY);
	send_process_fact(IOW_META_FORK, child, parent_tgid, NULL);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);

	if (settings.all_processes || !bpf_map_lookup_elem(&procs, &tgid))
		return 0;
	send_process_fact(IOW_META_EXEC, task, 0, BPF_CORE_READ(bprm, filename));
	return 0;
}

/* ---- device view: block requests on the devices under target files ---------------------
 *
 * block_io_start fires where a request is accounted as started, in the submitter's context
 * (the benchmark for direct I/O and fsync, a kworker for write-back); block_rq_issue when the
 * driver gets it; block_rq_complete when (part of) it is done. One record per completion,
 * filtered in the kernel to the devices in `block_devs`. The device is the one diskstats
 * accounts the request to: rq->part (a partition, or the whole disk's part0).
 */

/* Wake the collector once a ring is an eighth full, not for each record: a block request or
 * a context switch can come tens of thousands of times a second, and a default submit wakes a
 * caught-up reader every time. The collector also reads every ring on a timer. */
static __always_inline __u64 wake_when_filling(void *ring)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= bpf_ringbuf_query(ring, BPF_RB_RING_SIZE) / 8 ?
		       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

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

static __always_inline __u32 request_dev(struct request *rq)
{
	struct block_device *part = BPF_CORE_READ(rq, part);

	if (!part)
		part = BPF_CORE_READ(rq, bio, bi_bdev);
	if (!part)
		part = BPF_CORE_READ(rq, q, disk, part0);
	return part ? BPF_CORE_READ(part, bd_dev) : 0;
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

SEC("tp_btf/block_io_start")
int BPF_PROG(on_block_io_start, struct request *rq)
{
	__u32 dev = request_dev(rq);

	if (!bpf_map_lookup_elem(&block_devs, &dev))
		return 0;
	note_submitter(rq, true);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(on_block_rq_issue, struct request *rq)
{
	__u64 key = (__u64)rq;
	__u32 dev = request_dev(rq);
	struct block_start *s;

	if (!bpf_map_lookup_elem(&block_devs, &dev))
		return 0;
	s = bpf_map_lookup_elem(&block_inflight, &key);
	/* not seen starting (a flush, or a kernel without block_io_start): the issuer may be anyone */
	if (!s)
		s = note_submitter(rq, false);
	if (s)
		s->issue_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_block_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	__u32 dev = request_dev(rq);
	struct block_start *s;
	struct iow_block *b;

	if (!bpf_map_lookup_elem(&block_devs, &dev))
		return 0;
	s = bpf_map_lookup_elem(&block_inflight, &key);
	b = bpf_ringbuf_reserve(&block_events, sizeof(*b), 0);
	if (!b) {
		count_lost(IOW_LOST_BLOCK);
	} else {
		b->start_ns = BPF_CORE_READ(rq, start_time_ns);
		b->issue_ns = s ? s->issue_ns : 0;
		b->complete_ns = bpf_ktime_get_ns();
		b->sector = BPF_CORE_READ(rq, __sector);
		b->bytes = nr_bytes;
		b->dev = dev;
		b->tgid = s ? s->tgid : 0;
		b->tid = s ? s->tid : 0;
		b->op = BPF_CORE_READ(rq, cmd_flags) & 0xff;   /* REQ_OP_MASK: the low REQ_OP_BITS (8) */
		b->error = error;
		if (s)
			__builtin_memcpy(b->comm, s->comm, sizeof(b->comm));
		else
			__builtin_memset(b->comm, 0, sizeof(b->comm));
		bpf_ringbuf_submit(b, wake_when_filling(&block_events));
	}
	/* a partial completion leaves the rest in flight: __data_len still counts it here */
	if (nr_bytes >= BPF_CORE_READ(rq, __data_len))
		bpf_map_delete_elem(&block_inflight, &key);
	return 0;
}

/* ---- per-phase CPU: when a traced thread is off the CPU, and why ------------------------
 *
 * One record each time a thread of the process set comes back on the CPU: when it left, and
 * whether it was preempted or blocked. With the syscall events this splits a phase's time into
 * user CPU, kernel CPU, blocked in a call (the device, fsync) and waiting for a CPU. Costs two
 * hash lookups per context switch on the machine and nothing on the syscall path. Not with
 * attach --file alone (every process is traced, every switch would be a record).
 */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} offcpu_events SEC(".maps");

struct offcpu_since {
	__u64 ts;
	__u32 state;
	__u32 pad0;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_since);
} offcpu_start SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 tgid, tid;
	struct offcpu_since *since;
	struct iow_offcpu *o;
	struct cpu_slot *slot = this_cpu_slot();

	/* the thread leaving owns this CPU's syscall slot: keep a call in progress in its own
	 * storage (sys_exit may run on another CPU) and free the slot for the next thread */
	if (slot && slot->owner == (__u64)prev) {
		if (slot->call.ts) {
			struct call_start *start = bpf_task_storage_get(&starts, prev, 0, 0);

			if (start)
				*start = slot->call;
			else
				count_lost(IOW_LOST_EVENTS);
		}
		slot->owner = 0;
		slot->call.ts = 0;
	}
	if (settings.all_processes)
		return 0;
	tgid = BPF_CORE_READ(prev, tgid);
	if (bpf_map_lookup_elem(&procs, &tgid)) {
		struct offcpu_since now = { .ts = bpf_ktime_get_ns(), .state = preempt ? 0 : prev_state & 0xff };

		tid = BPF_CORE_READ(prev, pid);
		bpf_map_update_elem(&offcpu_start, &tid, &now, BPF_ANY);
	}
	tgid = BPF_CORE_READ(next, tgid);
	if (!bpf_map_lookup_elem(&procs, &tgid))
		return 0;
	tid = BPF_CORE_READ(next, pid);
	since = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!since || !since->ts)
		return 0;
	o = bpf_ringbuf_reserve(&offcpu_events, sizeof(*o), 0);
	if (!o) {
		count_lost(IOW_LOST_OFFCPU);
	} else {
		o->off_ns = since->ts;
		o->on_ns = bpf_ktime_get_ns();
		o->tgid = tgid;
		o->tid = tid;
		o->state = since->state;
		o->pad0 = 0;
		bpf_ringbuf_submit(o, wake_when_filling(&offcpu_events));
	}
	since->ts = 0;
	return 0;
}
