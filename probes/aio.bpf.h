/* SPDX-License-Identifier: GPL-2.0 */
/* aio.bpf.h — libaio requests: each iocb io_submit accepts on a target file, paired with the
 * io_getevents (or io_pgetevents) that reaps it, becomes one record.
 *
 * Purpose: Linux native AIO moves file data in requests (struct iocb) that io_submit hands
 * to the kernel and io_getevents collects later, maybe in another thread. At io_submit's
 * exit each accepted iocb on a target file is decoded (IOCB_CMD_PREAD, PWRITE, PREADV,
 * PWRITEV, FSYNC, FDSYNC) and kept in `aio_inflight` under (process, the iocb's user
 * address), the address the kernel hands back in io_event.obj. At io_getevents' exit each
 * reaped event finds its request there and leaves as a record: op IOW_OP_AIO_READ/WRITE/
 * FSYNC, start_ns = io_submit's entry, latency_ns = until this reap, ret = io_event.res,
 * offset/requested/fd of the iocb, tgid/tid of the submitting thread, `ring` = the context,
 * numbered from 1 in order of first use. flags: the iocb's RWF_* flags, IOW_AIO_VECTORED
 * for PREADV/PWRITEV, IOW_AIO_DATASYNC for FDSYNC.
 *
 * Example (`iowitness show` of fio --ioengine=libaio --direct=1 --rw=randrw --bs=4k
 * --iodepth=32 --size=16m on ext4; fio's JSON: 1,992 reads, 2,104 writes, the same bytes):
 *
 *     syscall    calls  errors      bytes  short  min µs  mean µs  p50 µs   p90 µs   p99 µs
 *     aio_write  2,104       0    8.2 MiB      0   240.9    902.8   535.9  1,957.8  5,440.8
 *     aio_read   1,992       0    7.8 MiB      0    46.7    632.9   371.4  1,306.6  5,270.7
 *
 * How to read it: a latency is submission to reap, what the program saw: it includes the
 * time a completed request waited in the ring before the program asked for it, so it grows
 * with iodepth. The kernel's own completion (what posts the io_event) is recorded too, for
 * direct I/O on iomap file systems (ext4, xfs, btrfs): there is no aio tracepoint, but
 * iomap_dio_complete gives the kiocb, inside struct aio_kiocb with the user iocb address
 * (ki_res.obj) and the kernel context (ki_ctx), and no process. So io_submit's exit finds its
 * kernel context (the slot of mm->ioctx_table whose user_id is the context it was given) and
 * files each O_DIRECT target request under (kernel context, iocb) in `aio_kernel`; the
 * completion sets done_ns in the request's entry, or, when it came before io_submit's exit
 * filed it, leaves its time in `aio_done_early` for that exit to take. The reap then sends an
 * IOW_BLOCK_AIO_DONE record beside the request's own. Buffered requests complete inside
 * io_submit and have no such record; block_rq_complete cannot name the iocb (a request
 * merges bios of several iocbs, one iocb spans several bios).
 * A request completed inside io_submit may be reaped by another thread before io_submit
 * returns (aio_known.c sees it for nearly all of 48 buffered writes): the reaper leaves it
 * in the map marked reaped, and io_submit's exit sends it. What is not followed is
 * counted, never dropped: a full map or an io_submit past AIO_WALK_MAX iocbs
 * (IOW_LOST_REQUESTS), a request with an opcode that moves data in a way not decoded here
 * (IOW_LOST_UNDECODED; IOCB_CMD_POLL and NOOP move none), requests never reaped because
 * their context was destroyed or their process ended or called exec (IOW_LOST_REQUESTS,
 * when their entries are cleared). A completion reaped in user space from the ring (fio's
 * userspace_reap) is never seen: its entry stays until the iocb is submitted again (then
 * counted lost) or the process ends (then counted too). A request submitted before the
 * trace began and reaped after is not recorded, nor counted, like a syscall in progress
 * when the trace begins.
 *
 * Overhead: an io_submit or io_getevents of a process outside the set costs nothing here.
 * Of a traced one: per iocb two user-memory reads (pointer, 64-byte iocb), an fd-table walk
 * and a file-set lookup, and for a target request a hash insert and its context's count;
 * per reaped event a 32-byte read, a hash lookup and delete and the count. The walks are
 * bpf_loop callbacks. fio libaio 4 KiB randread, iodepth 32, cached file: sys_enter 64 ns
 * and sys_exit 140 ns a call on average, io_submit and io_getevents included. Any exit or
 * exec on the machine costs one lookup; that of a process with target requests walks
 * aio_contexts (4,096 slots, ~50 µs), and the in-flight map (65,536 slots, ~0.8 ms) only
 * when requests were left in it; io_destroy of such a context costs a lookup, plus that
 * second walk when requests were left.
 */
#ifndef IOWITNESS_AIO_BPF_H
#define IOWITNESS_AIO_BPF_H

#include "maps.bpf.h"
#include "targets.bpf.h"
#include "ops.bpf.h"
#include "summary.bpf.h"

/* O_DIRECT (uapi asm/fcntl.h): a macro, not in BTF */
#if defined(__TARGET_ARCH_arm64) || defined(__TARGET_ARCH_arm)
#define IOW_O_DIRECT 0200000
#else
#define IOW_O_DIRECT 040000
#endif

/* iocbs (or events) one io_submit (or io_getevents) is followed for: the default aio-max-nr
 * of the whole machine. More needs the sysctl raised; each one past it is counted lost
 * without being read, since reading it is the cost the bound is for. */
#define AIO_WALK_MAX 65536
/* requests in flight at once, all processes together: again the default aio-max-nr */
#define AIO_INFLIGHT_MAX 65536
/* contexts of traced processes alive at once with target requests: small, because an exit
 * walks them all (about 15 ns a slot) */
#define AIO_CONTEXTS_MAX 4096
/* contexts numbered in a run (the record's `ring` is a __u16; 0: past this) */
#define AIO_RINGS_MAX 65535

struct aio_key {
	__u32 tgid;
	__u32 pad0;
	__u64 iocb;        /* the iocb's user address: io_event.obj */
};

struct aio_request {
	__u64 submit_ns;   /* io_submit's entry */
	__u64 reaped_ns;   /* 0 in flight; else reaped before its io_submit returned, at this time */
	__s64 res;         /* reaped early: io_event.res */
	__s64 offset;
	__u64 requested;
	__u64 ctx;         /* the aio context (io_submit's ARG1): what io_destroy names */
	__u64 kctx;        /* its struct kioctx, 0 unknown: what the kernel's completion names */
	__u64 done_ns;     /* the kernel's completion (iomap_dio_complete), 0 not seen */
	struct iow_file_key file;
	__u32 tid;         /* the submitting thread */
	__s32 fd;
	__u32 flags;
	__u16 op;
	__u16 ring;
	__u32 direct;      /* the file is open with O_DIRECT: the kernel's completion is looked for */
	__u32 pad0;
};

struct aio_ctx_key {
	__u32 tgid;
	__u32 pad0;
	__u64 ctx;
};

struct aio_context {
	__u64 inflight;    /* its entries in aio_inflight: an io_destroy or exit walks that map only if > 0 */
	__u32 ring;
	__u32 pad0;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, AIO_INFLIGHT_MAX);
	__type(key, struct aio_key);
	__type(value, struct aio_request);
} aio_inflight SEC(".maps");

/* (process, context) -> its ring number and requests in flight */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AIO_CONTEXTS_MAX);
	__type(key, struct aio_ctx_key);
	__type(value, struct aio_context);
} aio_contexts SEC(".maps");

/* processes with an entry in aio_contexts: an exit or exec of any other costs one lookup */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AIO_CONTEXTS_MAX);
	__type(key, __u32);
	__type(value, __u8);
} aio_procs SEC(".maps");

/* numbers given, claimed by an insert that fails when taken (see claim_summary_number) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, AIO_RINGS_MAX + 1);
	__type(key, __u32);
	__type(value, __u8);
} aio_ring_numbers SEC(".maps");

/* what a walk of aio_contexts found: in a map, not on the stack, so that the verifier does not
 * follow each value a sum can take through the callback (it gives up after 8,192) */
struct aio_forget_sums {
	__u64 inflight;
	__u64 requests;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct aio_forget_sums);
} aio_forget_space SEC(".maps");

/* a request as the kernel's completion names it */
struct aio_kernel_key {
	__u64 kctx;        /* struct kioctx */
	__u64 iocb;        /* the iocb's user address */
};

/* (kernel context, iocb) -> the process whose aio_inflight entry it is: one per entry there,
 * removed with it. Not an LRU map: an LRU map may evict a live entry before it is full, when
 * one CPU's share of its free slots runs out. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, AIO_INFLIGHT_MAX);
	__type(key, struct aio_kernel_key);
	__type(value, __u32);
} aio_kernel SEC(".maps");

/* completions of direct I/O on target files that no entry of aio_kernel named yet: the time,
 * for the io_submit still going to take (a completion on another CPU can come first). LRU:
 * one its io_submit never takes (no kernel context found there) ages out; an entry is taken
 * microseconds after it is made, so an early eviction is rare here. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, AIO_INFLIGHT_MAX);
	__type(key, struct aio_kernel_key);
	__type(value, __u64);
} aio_done_early SEC(".maps");

__u32 aio_next_ring = 1;
/* 1, as the verifier cannot know it (a writable global): a walk's counts go up by it, and a
 * count the verifier followed as a constant through each bpf_loop callback made it give up
 * ("the sequence of 8193 jumps is too complex") */
__u32 aio_one = 1;
#define AIO_COUNT_UP(n) ((n) += *(volatile __u32 *)&aio_one)
/* the target of aio_fence's atomic */
__u64 aio_fence_word;

/* A full barrier: an atomic that fetches is ordered with every load and store around it. The
 * io_submit filing a request and the completion noting its time each store, then look for the
 * other's store: without it both loads could pass their own store (x86 lets a load go before
 * an earlier store) and both miss. */
static __always_inline void aio_fence(void)
{
	if (__sync_fetch_and_add(&aio_fence_word, 0) == (__u64)-1)
		aio_fence_word = 0;   /* never: makes the fetch a fetch */
}

/* A process's context, numbered at its first target request; NULL when the map is full. */
static __always_inline struct aio_context *aio_context_of(__u32 tgid, __u64 ctx)
{
	struct aio_ctx_key key = { .tgid = tgid, .ctx = ctx };
	struct aio_context *found, fresh = {};
	__u8 yes = 1;

	found = bpf_map_lookup_elem(&aio_contexts, &key);
	if (found)
		return found;
	if (bpf_map_update_elem(&aio_procs, &tgid, &yes, BPF_ANY))
		return NULL;   /* no way to clean its entries up: not followed */
	if (claim_number(&aio_ring_numbers, &aio_next_ring, AIO_RINGS_MAX, &fresh.ring))
		fresh.ring = 0;   /* numbers used up: its records say ring 0 */
	/* another thread may number it first: then its number holds (ours stays a gap) */
	bpf_map_update_elem(&aio_contexts, &key, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&aio_contexts, &key);
}

/* an entry of aio_inflight was added or removed for the context */
static __always_inline void aio_count_inflight(__u32 tgid, __u64 ctx, __s64 delta)
{
	struct aio_ctx_key key = { .tgid = tgid, .ctx = ctx };
	struct aio_context *c = bpf_map_lookup_elem(&aio_contexts, &key);

	if (c)
		__sync_fetch_and_add(&c->inflight, delta);
}

/* An iocb's op and fields; false when it is not a request on a target file. A target
 * request that moves data in a way not decoded here is counted (once: at its submission). */
static __always_inline bool aio_decode(struct task_struct *task, const struct iocb *iocb,
				       struct aio_request *req, bool count_undecoded)
{
	__u16 opcode = iocb->aio_lio_opcode;
	struct cpu_slot *slot = this_cpu_slot();
	long fd = iocb->aio_fildes;
	struct files_struct *files;
	struct iow_file_key *memo;
	struct file *file;
	__u32 epoch;

	if (!slot)
		return false;
	/* through the CPU's memo of the last target call's fd, as the syscalls (targets.bpf.h):
	 * a benchmark's iocbs are on one file or few, and the memo spares the fd-table walk and
	 * the file's identity each time */
	files = task->files;
	memo = fd_memo_hit(slot, files, fd, &epoch);
	if (memo) {
		req->file = *memo;
		file = file_at(slot->fd_file);
	} else {
		__u64 closed = *(volatile __u64 *)&fds_closed;
		__u64 version = *(volatile __u64 *)&files_version;

		asm volatile("" ::: "memory");
		file = file_in_table(files, fd);
		if (!file || !target_file(slot, &req->file, file_key_of(file, &req->file), &epoch))
			return false;
		fd_memo_fill(slot, files, fd, file, &req->file, epoch, closed, version);
	}
	req->direct = (KFIELD(file, f_flags) & IOW_O_DIRECT) != 0;
	req->fd = iocb->aio_fildes;
	req->offset = iocb->aio_offset;
	req->requested = iocb->aio_nbytes;
	req->flags = iocb->aio_rw_flags;
	switch (opcode) {
	case IOCB_CMD_PREAD:
		req->op = IOW_OP_AIO_READ;
		return true;
	case IOCB_CMD_PWRITE:
		req->op = IOW_OP_AIO_WRITE;
		return true;
	case IOCB_CMD_PREADV:
	case IOCB_CMD_PWRITEV:
		req->op = opcode == IOCB_CMD_PREADV ? IOW_OP_AIO_READ : IOW_OP_AIO_WRITE;
		/* aio_buf is the iovec array, aio_nbytes its length */
		req->requested = iovec_bytes((const struct iovec *)iocb->aio_buf, iocb->aio_nbytes);
		req->flags |= IOW_AIO_VECTORED;
		return true;
	case IOCB_CMD_FSYNC:
	case IOCB_CMD_FDSYNC:
		req->op = IOW_OP_AIO_FSYNC;
		req->offset = -1;
		req->requested = 0;
		req->flags = opcode == IOCB_CMD_FDSYNC ? IOW_AIO_DATASYNC : 0;
		return true;
	case IOCB_CMD_POLL:
	case IOCB_CMD_NOOP:
		return false;   /* they move no data */
	}
	if (count_undecoded)
		count_lost(IOW_LOST_UNDECODED);
	return false;
}

/* The kernel's completion of a request (IOW_BLOCK_AIO_DONE in events.h), on the block ring. */
static __always_inline void aio_send_done(__u32 tgid, struct aio_request *req, __u64 start_ns)
{
	struct iow_block *b = bpf_ringbuf_reserve(&block_events, sizeof(*b), 0);

	if (!b) {
		count_lost(IOW_LOST_BLOCK);
		return;
	}
	b->start_ns = start_ns;
	b->issue_ns = 0;
	b->complete_ns = req->done_ns;
	b->sector = req->offset;
	b->bytes = req->requested;
	b->dev = req->file.dev;
	b->tgid = tgid;
	b->tid = req->tid;
	b->op = IOW_BLOCK_AIO_DONE;
	b->error = 0;
	__builtin_memset(b->comm, 0, sizeof(b->comm));
	bpf_ringbuf_submit(b, wake_when_filling(&block_events));
}

/* slots of mm->ioctx_table looked at: it starts at 4 and grows 4-fold as contexts are added */
#define AIO_TABLE_SLOTS 16

/* The struct kioctx of the current process's aio context `ctx` (the ring's user address), 0
 * if not found: the table's slots compared with it, as lookup_ioctx does after reading the
 * slot's index from the ring's header. That header is user memory, which a probe cannot fault
 * in (the kernel moves the ring's pages, and a read of one in flight fails).
 * A global function, so the verifier checks it once on its own: inlined into io_submit's
 * bpf_loop callback, its loop multiplied the callback's states past the verifier's 1,000,000
 * instructions on Linux 6.18.44 (the probe did not load there). */
__noinline __u64 aio_kernel_context(__u64 ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct kioctx_table *table = BPF_CORE_READ(task, mm, ioctx_table);
	__u64 slots;
	__u32 nr;

	if (!table)
		return 0;
	nr = BPF_CORE_READ(table, nr);
	slots = (__u64)table + bpf_core_field_offset(struct kioctx_table, table);
	for (__u32 i = 0; i < AIO_TABLE_SLOTS && i < nr; i++) {
		struct kioctx *k = NULL;

		if (bpf_probe_read_kernel(&k, sizeof(k), (void *)(slots + i * sizeof(k))) == 0 && k &&
		    BPF_CORE_READ(k, user_id) == ctx)
			return (__u64)k;
	}
	return 0;
}

/* the kernel completion of a request made before its entry was filed (from aio_done_early,
 * which gives it up), 0 if none was, or if the one there is older than the request */
static __always_inline __u64 aio_take_early_completion(__u64 kctx, __u64 iocb, __u64 submit_ns)
{
	struct aio_kernel_key k = { .kctx = kctx, .iocb = iocb };
	__u64 *early = bpf_map_lookup_elem(&aio_done_early, &k), done;

	if (!early)
		return 0;
	done = *early >= submit_ns ? *early : 0;
	bpf_map_delete_elem(&aio_done_early, &k);
	return done;
}

/* A request is in aio_inflight under `key`: its kernel completion is looked for from now on,
 * or was already made (before this io_submit's exit). */
static __always_inline void aio_watch_completion(struct aio_key *key, __u64 kctx, __u64 submit_ns)
{
	struct aio_kernel_key k = { .kctx = kctx, .iocb = key->iocb };
	struct aio_request *req;
	__u64 done;

	if (!kctx)
		return;
	bpf_map_update_elem(&aio_kernel, &k, &key->tgid, BPF_ANY);
	aio_fence();
	done = aio_take_early_completion(kctx, key->iocb, submit_ns);
	if (!done)
		return;
	req = bpf_map_lookup_elem(&aio_inflight, key);
	if (req && !req->done_ns)
		req->done_ns = done;
}

/* the request's entry leaves aio_inflight: its completion is no longer looked for */
static __always_inline void aio_unwatch_completion(__u64 kctx, __u64 iocb)
{
	struct aio_kernel_key k = { .kctx = kctx, .iocb = iocb };

	if (kctx)
		bpf_map_delete_elem(&aio_kernel, &k);
}

/* libaio's completion of a read or write kiocb (fs/aio.c, static): what tells an aio kiocb
 * from io_uring's or a synchronous call's at once. libbpf finds its address in /proc/kallsyms;
 * 0 where it cannot (then every kiocb goes through the lookups, which find nothing for others). */
extern const void aio_complete_rw __ksym __weak;

/* iomap completed a direct-I/O kiocb: if it is a target libaio request, its kernel completion */
static __always_inline void aio_dio_completed(struct kiocb *iocb)
{
	struct aio_kiocb *aio = (void *)iocb - bpf_core_field_offset(struct aio_kiocb, rw);
	struct aio_kernel_key k;
	struct iow_file_key file_key;
	struct aio_request *req;
	struct aio_key key = {};
	__u64 now = bpf_ktime_get_ns();
	struct file *file;
	__u32 *tgid;

	if (!iocb->ki_complete)
		return;   /* a synchronous call's kiocb: its syscall is traced as such */
	if (&aio_complete_rw && (void *)iocb->ki_complete != &aio_complete_rw)
		return;   /* io_uring's, or another in-kernel user's */
	k.kctx = (__u64)BPF_CORE_READ(aio, ki_ctx);
	k.iocb = BPF_CORE_READ(aio, ki_res.obj);
	tgid = bpf_map_lookup_elem(&aio_kernel, &k);
	if (!tgid) {
		/* not filed yet: a target request's io_submit may still be going (where
		 * aio_complete_rw was not found, an io_uring request lands here too, and ages out) */
		file = iocb->ki_filp;
		if (!file || !is_target(&file_key, file_key_of(file, &file_key)))
			return;
		bpf_map_update_elem(&aio_done_early, &k, &now, BPF_ANY);
		/* that io_submit may have filed it and looked for an early time just before the
		 * update: look again, as it does after filing (one of the two sees the other) */
		aio_fence();
		tgid = bpf_map_lookup_elem(&aio_kernel, &k);
		if (!tgid)
			return;
		bpf_map_delete_elem(&aio_done_early, &k);
	}
	key.tgid = *tgid;
	key.iocb = k.iocb;
	req = bpf_map_lookup_elem(&aio_inflight, &key);
	if (req && req->kctx == k.kctx && !req->done_ns)
		req->done_ns = now;
}

/* A request reaped at `now` with result `res`: its record, as the submitting thread's. */
static __always_inline void aio_send(__u32 tgid, struct aio_request *req, __u64 start_ns, __u64 now, __s64 res)
{
	struct call_args args = {
		.offset = req->offset, .requested = req->requested, .flags = req->flags,
		.fd = req->fd, .ring = req->ring,
	};

	deliver_record(tgid, req->tid, &req->file, req->op, start_ns, now, res, &args);
	if (req->done_ns)
		aio_send_done(tgid, req, start_ns);
}

struct aio_submit_walk {
	__u64 iocbpp;      /* io_submit's ARG3: user array of iocb pointers */
	__u64 ctx;
	__u64 start_ts;
	__u32 tgid;
	__u32 tid;
	__u64 kctx;        /* its struct kioctx (0 unknown), found at the call's first O_DIRECT request */
	__u32 ring;        /* 0 until the call's first target request numbers it */
	__u32 known;       /* the context is in aio_contexts */
	__u32 kctx_looked; /* kctx was looked for */
	__u32 walked;      /* iocbs the walk reads */
	/* the context's in-flight count is raised once, at the first target request, by every
	 * iocb left to walk (`reserved`), and lowered once after the walk by those not filed:
	 * one atomic a call instead of a hash lookup and an atomic a request, and the count is
	 * never below the entries while the walk files them (an io_destroy or exit that reads it
	 * meanwhile walks the in-flight map when it must) */
	__u32 reserved;
	__u32 filed;
	__u32 pad0;
};

/* One iocb io_submit accepted: into the in-flight map if it is a target request.
 * A global function, verified once on its own: as the body of the bpf_loop callback, its
 * branches times the callback's iterations took the verifier past 1,000,000 instructions on
 * Linux 6.18.44 (the probe did not load there). */
__noinline long aio_submit_request(__u32 i, struct aio_submit_walk *w)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct aio_key key = {};
	struct aio_request req = {}, *old;
	struct iocb iocb;

	if (!w)
		return 1;
	key.tgid = w->tgid;

	if (bpf_probe_read_user(&key.iocb, sizeof(key.iocb), (void *)(w->iocbpp + i * sizeof(__u64))) ||
	    bpf_probe_read_user(&iocb, sizeof(iocb), (void *)key.iocb)) {
		/* not readable at exit (the program changed its mapping?): cannot tell if a target */
		count_lost(IOW_LOST_REQUESTS);
		return 0;
	}
	if (!aio_decode(task, &iocb, &req, true))
		return 0;
	if (!w->known) {
		struct aio_context *c = aio_context_of(w->tgid, w->ctx);

		if (!c) {
			count_lost(IOW_LOST_REQUESTS);
			return 0;
		}
		w->ring = c->ring;
		w->known = 1;
		w->reserved = w->walked - i;
		__sync_fetch_and_add(&c->inflight, w->reserved);
	}
	if (req.direct && !w->kctx_looked) {
		/* buffered requests complete inside io_submit: only direct ones need it */
		w->kctx = aio_kernel_context(w->ctx);
		w->kctx_looked = 1;
	}
	req.submit_ns = w->start_ts;
	req.ctx = w->ctx;
	req.kctx = req.direct ? w->kctx : 0;
	req.tid = w->tid;
	req.ring = w->ring;
	if (!bpf_map_update_elem(&aio_inflight, &key, &req, BPF_NOEXIST)) {
		AIO_COUNT_UP(w->filed);
		aio_watch_completion(&key, req.kctx, w->start_ts);
		return 0;
	}
	old = bpf_map_lookup_elem(&aio_inflight, &key);
	if (old && old->reaped_ns >= w->start_ts) {
		/* another thread reaped it while this io_submit was still going */
		req.done_ns = req.kctx ? aio_take_early_completion(req.kctx, key.iocb, w->start_ts) : 0;
		aio_send(w->tgid, &req, w->start_ts, old->reaped_ns, old->res);
		aio_count_inflight(w->tgid, old->ctx, -1);
		bpf_map_delete_elem(&aio_inflight, &key);
		return 0;
	}
	if (old) {
		/* The iocb's previous request: reaped unseen (from the ring in user space), its
		 * completion lost; or reaped, but submitted before the trace began, which is not
		 * counted, as a syscall in progress when the trace begins is not. This one takes
		 * its place. */
		if (!old->reaped_ns)
			count_lost(IOW_LOST_REQUESTS);
		aio_count_inflight(w->tgid, old->ctx, -1);
		aio_unwatch_completion(old->kctx, key.iocb);
		*old = req;
		AIO_COUNT_UP(w->filed);
		aio_watch_completion(&key, req.kctx, w->start_ts);
		return 0;
	}
	if (bpf_map_update_elem(&aio_inflight, &key, &req, BPF_NOEXIST)) {
		count_lost(IOW_LOST_REQUESTS);
	} else {
		AIO_COUNT_UP(w->filed);
		aio_watch_completion(&key, req.kctx, w->start_ts);
	}
	return 0;
}

static long aio_submit_one(__u32 i, void *data)
{
	return aio_submit_request(i, data) ? 1 : 0;
}

struct aio_reap_walk {
	__u64 events;      /* io_getevents' ARG4: user array of struct io_event */
	__u64 ctx;
	__u64 now;
	__u32 tgid;
	__u32 tid;
	/* entries of this context removed: its count is lowered once, after the walk (until
	 * then it is above the entries, which only makes an io_destroy or exit walk the map) */
	__u64 removed;
};

/* the record of a request found in flight, and its entry gone */
static __always_inline void aio_reaped(struct aio_key *key, struct aio_request *req, __u64 now, __s64 res,
				       struct aio_reap_walk *w)
{
	aio_unwatch_completion(req->kctx, key->iocb);
	aio_send(key->tgid, req, req->submit_ns, now, res);
	if (req->ctx == w->ctx)
		AIO_COUNT_UP(w->removed);
	else
		aio_count_inflight(key->tgid, req->ctx, -1);
	bpf_map_delete_elem(&aio_inflight, key);
}

/* One event io_getevents reaped: the record of its request. A global function, verified once
 * on its own, as aio_submit_request is. */
__noinline long aio_reap_request(__u32 i, struct aio_reap_walk *w)
{
	struct aio_key key = {};
	struct aio_request *req, early = {};
	struct task_struct *task;
	struct aio_context *c;
	struct io_event ev;
	struct iocb iocb;

	if (!w)
		return 1;
	key.tgid = w->tgid;

	if (bpf_probe_read_user(&ev, sizeof(ev), (void *)(w->events + i * sizeof(ev)))) {
		count_lost(IOW_LOST_REQUESTS);
		return 0;
	}
	key.iocb = ev.obj;
	req = bpf_map_lookup_elem(&aio_inflight, &key);
	if (req && !req->reaped_ns) {
		aio_reaped(&key, req, w->now, ev.res, w);
		return 0;
	}
	if (req)
		return 0;   /* reaped twice unseen in between: the entry stands for the earlier */
	/* Not (yet) in flight: a request on another file, or one whose io_submit has not returned
	 * (another thread's, completed at once). The iocb is still the program's as submitted:
	 * it has not seen this event yet. A target request waits for its io_submit's exit. */
	task = bpf_get_current_task_btf();
	if (bpf_probe_read_user(&iocb, sizeof(iocb), (void *)ev.obj) || !aio_decode(task, &iocb, &early, false))
		return 0;
	c = aio_context_of(w->tgid, w->ctx);
	if (!c) {
		count_lost(IOW_LOST_REQUESTS);
		return 0;
	}
	early.reaped_ns = w->now;
	early.res = ev.res;
	early.ctx = w->ctx;
	early.ring = c->ring;
	if (!bpf_map_update_elem(&aio_inflight, &key, &early, BPF_NOEXIST)) {
		aio_count_inflight(w->tgid, w->ctx, 1);
		return 0;
	}
	/* its io_submit returned in between: the entry is there now */
	req = bpf_map_lookup_elem(&aio_inflight, &key);
	if (req && !req->reaped_ns)
		aio_reaped(&key, req, w->now, ev.res, w);
	else if (!req)
		count_lost(IOW_LOST_REQUESTS);
	return 0;
}

static long aio_reap_one(__u32 i, void *data)
{
	return aio_reap_request(i, data) ? 1 : 0;
}

/* io_submit or io_getevents (slot: IOW_ASYNC_*) of a traced thread has returned */
static __always_inline void on_aio_call(__u32 slot, struct task_struct *task, struct pt_regs *regs, long ret,
					__u64 start_ts, __u64 now)
{
	long walked = ret < AIO_WALK_MAX ? ret : AIO_WALK_MAX;

	if (ret <= 0)
		return;
	if (slot == IOW_ASYNC_IO_SUBMIT) {
		struct aio_submit_walk w = {
			.iocbpp = ARG3(regs), .ctx = ARG1(regs), .start_ts = start_ts,
			.tgid = task->tgid, .tid = task->pid, .walked = walked,
		};

		bpf_loop(walked, aio_submit_one, &w, 0);
		if (w.reserved != w.filed)
			aio_count_inflight(w.tgid, w.ctx, (__s64)w.filed - (__s64)w.reserved);
	} else if (slot == IOW_ASYNC_IO_GETEVENTS) {
		struct aio_reap_walk w = {
			.events = ARG4(regs), .ctx = ARG1(regs), .now = now,
			.tgid = task->tgid, .tid = task->pid,
		};

		bpf_loop(walked, aio_reap_one, &w, 0);
		if (w.removed)
			aio_count_inflight(w.tgid, w.ctx, -(__s64)w.removed);
	}
	if (ret > walked)
		count_lost_n(IOW_LOST_REQUESTS, ret - walked);
}

/* Which entries to clear: a process's (ctx 0) or one of its contexts'. */
struct aio_forget {
	__u32 tgid;
	__u32 pad0;
	__u64 ctx;
};

static long aio_forget_context(struct bpf_map *map, struct aio_ctx_key *key, struct aio_context *c,
			       struct aio_forget *f)
{
	__u32 zero = 0;
	struct aio_forget_sums *sums;

	if (key->tgid != f->tgid || (f->ctx && key->ctx != f->ctx))
		return 0;
	sums = bpf_map_lookup_elem(&aio_forget_space, &zero);
	if (sums)
		sums->inflight += c->inflight;
	bpf_map_delete_elem(map, key);
	return 0;
}

static long aio_forget_request(struct bpf_map *map, struct aio_key *key, struct aio_request *req,
			       struct aio_forget *f)
{
	__u32 zero = 0;
	struct aio_forget_sums *sums;

	if (key->tgid != f->tgid || (f->ctx && req->ctx != f->ctx))
		return 0;
	/* one reaped early whose io_submit never returned (the process died in it, or it was
	 * submitted before the trace) is not a loss, as a call that never returned is not */
	sums = bpf_map_lookup_elem(&aio_forget_space, &zero);
	if (sums && !req->reaped_ns)
		sums->requests += 1;
	aio_unwatch_completion(req->kctx, key->iocb);
	bpf_map_delete_elem(map, key);
	return 0;
}

/* The process's contexts are gone (exit, exec: the kernel's exit_aio) or one is (io_destroy):
 * requests still in flight will never be reaped, and are counted lost. The contexts' map is
 * walked at the exit of a process that had target requests; the in-flight map only when
 * some were left. */
static __always_inline void aio_forget(__u32 tgid, __u64 ctx)
{
	struct aio_forget f = { .tgid = tgid, .ctx = ctx };
	struct aio_forget_sums *sums;
	__u32 zero = 0;

	sums = bpf_map_lookup_elem(&aio_forget_space, &zero);
	if (!sums)
		return;
	sums->inflight = 0;
	sums->requests = 0;
	if (ctx) {
		struct aio_ctx_key key = { .tgid = tgid, .ctx = ctx };
		struct aio_context *c = bpf_map_lookup_elem(&aio_contexts, &key);

		if (!c)
			return;
		sums->inflight = c->inflight;
		bpf_map_delete_elem(&aio_contexts, &key);
	} else {
		if (!bpf_map_lookup_elem(&aio_procs, &tgid))
			return;
		bpf_for_each_map_elem(&aio_contexts, aio_forget_context, &f, 0);
		bpf_map_delete_elem(&aio_procs, &tgid);
	}
	if (!sums->inflight)
		return;
	bpf_for_each_map_elem(&aio_inflight, aio_forget_request, &f, 0);
	count_lost_n(IOW_LOST_REQUESTS, sums->requests);
}

/* io_destroy (on_sys_enter, IOW_ROUTE_AIO_DESTROY): one context of the calling process goes */
static __always_inline void aio_context_destroyed(struct task_struct *task, __u64 ctx)
{
	if (ctx)
		aio_forget(KFIELD(task, tgid), ctx);
}

#endif
