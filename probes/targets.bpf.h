/* SPDX-License-Identifier: GPL-2.0 */
/* targets.bpf.h — which processes and which files are traced: the process set and the file set.
 *
 * Purpose: the process set is a PID and everything it forks (`procs`, kept up to date by
 * on_fork), or every process (settings.all_processes) but the collector. The file set is
 * `files`, inodes known to be targets, grown when a traced process opens a file whose name
 * matches a rule of `names` (IOW_MODE_FILE_SET) or any regular file outside the pseudo file
 * systems and the excluded path prefixes (IOW_MODE_ALL_FILES, `excludes`).
 *
 * Overhead: a plain call on the fd of the CPU's last target call costs one load (task->files)
 * and a compare (the fd memo, below); a call on a file already known otherwise costs the
 * fd-table walk and a compare against the CPU's memo of the last target file, or one `files`
 * hash lookup. The name rules, the exclusions and the path
 * copy run only at an open of a file not yet in the set.
 */
#ifndef IOWITNESS_TARGETS_BPF_H
#define IOWITNESS_TARGETS_BPF_H

#include "maps.bpf.h"

#define S_IFMT 00170000
#define S_IFREG 0100000
#define S_IFBLK 0060000

/* The two sets are sized by user space before the load (--max-processes, --max-files) and
 * not preallocated: the kernel's memory grows with what the run uses, up to that size. A set
 * that is full counts each miss (IOW_LOST_PROCESSES, IOW_LOST_FILES), never drops it silently.
 * A process leaves the set when it exits (on_exit), so a later process that reuses its PID is
 * never taken for it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 262144);
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

/* bumped whenever a file's epoch moves: the per-CPU memos of target files are then stale */
__u64 files_version = 0;

static __always_inline bool process_is_traced(__u32 tgid)
{
	if (tgid == settings.collector_tgid)
		return false;
	if (settings.all_processes)
		return true;
	return bpf_map_lookup_elem(&procs, &tgid) != NULL;
}

/* A thread's first file syscall since it came on this CPU: decide once per stint whether it
 * is traced. A thread with storage is traced; a new thread of a traced process gets some. */
static __always_inline void claim_cpu_slot(struct cpu_slot *slot, struct task_struct *task, struct pt_regs *regs)
{
	__u32 tgid = KFIELD(task, tgid);
	struct call_start *start;

	slot->owner = (__u64)task;
	slot->owner_regs = (__u64)regs;
	slot->owner_tid = KFIELD(task, pid);
	slot->owner_tgid = tgid;
	slot->call.ts = 0;
	start = task_start(task, false);
	if (!start && process_is_traced(tgid)) {
		start = task_start(task, true);
		if (!start)
			count_lost(IOW_LOST_THREADS);
	}
	slot->traced = start != NULL;
}

/* A process of the set forked another: the child joins the set, or is counted as missed. */
static __always_inline bool follow_process(__u32 tgid)
{
	__u8 yes = 1;

	if (bpf_map_update_elem(&procs, &tgid, &yes, BPF_ANY)) {
		count_lost(IOW_LOST_PROCESSES);
		return false;
	}
	return true;
}

/* A file opened by name is a target: it joins the file set, or is counted as missed. */
static __always_inline bool follow_file(struct iow_file_key *key, struct iow_file_state *state)
{
	if (bpf_map_update_elem(&files, key, state, BPF_ANY)) {
		count_lost(IOW_LOST_FILES);
		return false;
	}
	return true;
}

/* A fact about a process of the set (IOW_META_FORK, IOW_META_EXEC) for the side ring. */
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

static __always_inline __u32 file_key_of(struct file *file, struct iow_file_key *key)
{
	struct inode *inode = KFIELD(file, f_inode);
	struct super_block *sb = KFIELD(inode, i_sb);

	key->ino = KFIELD(inode, i_ino);
	key->dev = KFIELD(sb, s_dev);
	key->pad0 = 0;
	return KFIELD(inode, i_generation);
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

/* The memo of a plain call's file by fd (struct cpu_slot's fd_*): a call on the fd the
 * CPU's last traced call on a target used, in the same fd table, skips the fd-table walk
 * (files->fdt, its size and array, the fd's slot) and the file's identity (f_inode, i_sb,
 * i_ino, s_dev, i_generation): one load (task->files) where there were ten, each
 * fault-checked once JITed.
 *
 * Why it is never stale: an fd's slot changes only when the fd is closed or replaced, and a
 * struct file is freed (and its address given to another file) only after every fd of it
 * is. Every way a traced process drops fds is counted before (fds_closing) and after
 * (fds_closed): close, dup2 and dup3 (over an open fd), close_range, execve and execveat
 * (close-on-exec), unshare, at the syscalls' entry and exit (each exit counted only when its
 * entry was: the same thread's call, struct call_start), and a thread's exit (both at
 * sched_process_exit, before exit_files: the last thread of a table makes no call after it);
 * an io_uring IORING_OP_CLOSE counts as begun only, which turns the memo off for the rest of
 * the run. The memo keeps fds_closed as read before its walk; a later call uses it only if
 * fds_closing, read after the load of task->files, is that same number: no close was in
 * flight when the memo was filled and none has begun since, so the table's slot still holds
 * the file the memo names. Not seen, so not covered: a seccomp supervisor replacing a traced
 * process's fd (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SETFD), and drops made
 * while the probe's programs are still being attached. The compatible object keeps the
 * walk (it has no io_uring programs to see a close there). */
__u64 fds_closing = 0;
__u64 fds_closed = 0;

static __always_inline void fd_close_begins(void)
{
	__sync_fetch_and_add(&fds_closing, 1);
}

static __always_inline void fd_close_ends(void)
{
	__sync_fetch_and_add(&fds_closed, 1);
}

#ifndef IOW_COMPAT
/* the target file of fd in table `files` by the memo: its identity, in the slot (a plain
 * call's record reads it from there: no copy on the stack), and *epoch; NULL: not memoised,
 * walk */
static __always_inline struct iow_file_key *fd_memo_hit(struct cpu_slot *slot, struct files_struct *files, long fd,
							__u32 *epoch)
{
	__u64 closing, version;

	asm volatile("" ::: "memory");
	closing = *(volatile __u64 *)&fds_closing;
	version = *(volatile __u64 *)&files_version;
	if (slot->fd_files != (__u64)files || slot->fd_num != fd || slot->fd_closed != closing ||
	    slot->fd_version != version)
		return NULL;
	*epoch = slot->fd_epoch;
	return &slot->fd_key;
}

/* after a walk that found a target: `closed` and `version` as read before the walk */
static __always_inline void fd_memo_fill(struct cpu_slot *slot, struct files_struct *files, long fd,
					 struct file *file, struct iow_file_key *key, __u32 epoch, __u64 closed,
					 __u64 version)
{
	slot->fd_files = (__u64)files;
	slot->fd_num = fd;
	slot->fd_file = (__u64)file;
	slot->fd_closed = closed;
	slot->fd_version = version;
	slot->fd_key = *key;
	slot->fd_epoch = epoch;
}
#endif

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
		__u32 kind = BPF_CORE_READ(inode, i_mode) & S_IFMT;

		/* a block device a benchmark opens is its disk (fio on /dev/nvme0n1, hdparm -t):
		 * data, wherever it lives; character devices (/dev/null, /dev/urandom) never are */
		if (kind == S_IFBLK)
			return true;
		if (kind != S_IFREG)
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

#endif
