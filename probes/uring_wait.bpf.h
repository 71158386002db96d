/* SPDX-License-Identifier: GPL-2.0 */
/* uring_wait.bpf.h — where an io_uring request waits between its submission and its CQE.
 *
 * Purpose: uring.bpf.h decides which requests to follow and what their records say; this
 * header keeps them in between (struct uring_request) and numbers the rings. A request waits
 * in a slot of its ring's own row of `uring_slots` (an array: a ring's submissions are
 * serialised by the kernel, so taking a free slot needs no lock and no atomic), or, when that
 * slot is taken or the ring has no row, in the hash `uring_inflight`. Either way it is known
 * by its struct io_kiocb address, which the kernel frees only after the CQE.
 *
 * Example: fio --ioengine=io_uring --iodepth=32 --numjobs=2 keeps up to 64 requests waiting,
 * in rows 1 and 2 (its two rings), a few in the hash when two of a ring's requests hash to
 * one slot; `iowitness show` lists them as uring_read/uring_write rows (uring.bpf.h).
 *
 * How to read the ring numbers: a record's `ring` is 1 for the first ring a traced request
 * was seen on, 2 for the next, ...; never reused in a trace; 0 when more than 4,096 rings
 * were seen (`uring_rings` full).
 *
 * Overhead: at submission, one array lookup (inlined) and the stores of a 64-byte request;
 * a hash update (~185 ns) only for a request whose slot is taken. At a CQE, the ring's number
 * from a per-CPU memo or one hash lookup (the only cost for the CQEs of rings nobody traces),
 * then an array lookup; a hash lookup and delete only for a request that waited there.
 */
#ifndef IOWITNESS_URING_WAIT_BPF_H
#define IOWITNESS_URING_WAIT_BPF_H

#include "maps.bpf.h"

/* A request between submission and CQE. key.ino == 0: its file was not known at submission
 * (a registered slot filled by an earlier linked request), it is looked at on completion. */
struct uring_request {
	__u64 start_ns;
	__s64 offset;      /* the SQE's; -1: the file position (IOW_URING_FILE_POS) */
	__u64 requested;
	struct iow_file_key key;
	__u32 tgid;
	__u32 tid;
	__s32 fd;
	__u32 flags;       /* opcode | IOW_URING_* */
	__u16 op;
	__u16 ring;
	__u32 pad0;
};

/* The second place a request may wait (its ring's slot taken, or its ring without a row):
 * 16,384 requests in flight at once over every traced ring; a request with no room counts
 * IOW_LOST_REQUESTS. Preallocated: the update on the submission path takes no allocation. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct uring_request);
} uring_inflight SEC(".maps");

/* io_ring_ctx address -> its number; an entry goes when a new ring is created at the address */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u16);
} uring_rings SEC(".maps");

/* ring numbers handed out: an insert that fails when the number is taken is the atomic claim
 * (the BPF instructions our clang targets have no fetch-and-add returning the old value) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} uring_ring_numbers SEC(".maps");

__u32 uring_next_ring = 1;
/* bumped when a ring is created: a CPU's memo of a ring may name an address now reused */
__u64 uring_rings_version = 0;

/* per CPU, the last ring a request was numbered for: a benchmark's requests come from few
 * rings, and an array lookup is inlined where a hash lookup is a helper call */
struct uring_ring_memo {
	__u64 ctx;
	__u64 version;
	__u16 number;
	__u16 pad0[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uring_ring_memo);
} uring_ring_memos SEC(".maps");

/* 1: a ring went without a number (`uring_rings` full): its requests are only in the hash */
__u32 uring_rings_full = 0;

/* Where a request waits for its CQE, first choice: a slot of its ring's own row, picked by its
 * address. A ring's submissions are serialised by the kernel (ctx->uring_lock, held by
 * io_uring_enter and by the SQPOLL thread around io_submit_sqes), so one submission at a
 * time takes a free slot of a row: no race, no lock, no atomic; the CQE, in any context,
 * reads the slot and frees it last (req = 0), and a submission writes only into a free slot.
 * An array slot costs a few stores where the locked hash update cost ~185 ns (BPF statistics,
 * fio io_uring 4 KiB reads at iodepth 32). A slot already taken, and a ring numbered above
 * URING_FAST_RINGS, go to `uring_inflight` instead. */
#define URING_FAST_RINGS 64
#define URING_FAST_SLOT_BITS 8
#define URING_FAST_SLOTS (1 << URING_FAST_SLOT_BITS)   /* per ring, a few times a usual iodepth */

struct uring_slot {
	__u64 req;         /* the request's io_kiocb address; 0: free */
	struct uring_request r;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, URING_FAST_RINGS * URING_FAST_SLOTS);
	__type(key, __u32);
	__type(value, struct uring_slot);
} uring_slots SEC(".maps");

/* The slot is picked by a hash of the request's user_data, not of its address: the verifier
 * allows no arithmetic on the typed request pointer at submission. user_data need not be
 * unique (fio's is the io_u's address): the slot's `req` says whose it is, and a slot taken
 * sends the request to the hash. */
static __always_inline struct uring_slot *uring_slot_of(__u16 ring, __u64 user_data)
{
	__u32 index;

	if (ring == 0 || ring > URING_FAST_RINGS)
		return NULL;
	index = (ring - 1) * URING_FAST_SLOTS + ((user_data * 0x9E3779B97F4A7C15ULL) >> (64 - URING_FAST_SLOT_BITS));
	return bpf_map_lookup_elem(&uring_slots, &index);
}

/* A new ring's number: claimed in `uring_ring_numbers`, then given to the ring (0: no room). */
static __always_inline __u16 uring_new_ring_number(__u64 key)
{
	__u32 claimed;
	__u16 number, *found;

	if (claim_number(&uring_ring_numbers, &uring_next_ring, 0xffff, &claimed))
		return 0;
	number = claimed;
	if (bpf_map_update_elem(&uring_rings, &key, &number, BPF_NOEXIST)) {
		/* another CPU numbered this ring first */
		found = bpf_map_lookup_elem(&uring_rings, &key);
		return found ? *found : 0;
	}
	return number;
}

/* The number of a ring a traced request was seen on; 0 for any other ring. */
static __always_inline __u16 uring_known_ring(void *ctx)
{
	__u64 key = (__u64)ctx, version = *(volatile __u64 *)&uring_rings_version;
	struct uring_ring_memo *memo;
	__u32 zero = 0;
	__u16 *found;

	memo = bpf_map_lookup_elem(&uring_ring_memos, &zero);
	if (memo && memo->ctx == key && memo->version == version && memo->number)
		return memo->number;
	found = bpf_map_lookup_elem(&uring_rings, &key);
	return found ? *found : 0;
}

/* The ring's number, given at its first traced request; 0 when the table is full. */
static __always_inline __u16 uring_ring_number(struct io_ring_ctx *ctx)
{
	__u64 key = (__u64)ctx, version = *(volatile __u64 *)&uring_rings_version;
	struct uring_ring_memo *memo;
	__u32 zero = 0;
	__u16 *found, number;

	memo = bpf_map_lookup_elem(&uring_ring_memos, &zero);
	if (memo && memo->ctx == key && memo->version == version && memo->number)
		return memo->number;
	found = bpf_map_lookup_elem(&uring_rings, &key);
	number = found ? *found : uring_new_ring_number(key);
	if (!number)
		uring_rings_full = 1;
	if (memo) {
		memo->ctx = key;
		memo->version = version;
		memo->number = number;
	}
	return number;
}

/* Submission, first: where the request will wait, so that its fields are written there and
 * not copied: its ring's slot if free (*slot), else `spare` (the submitter's stack), which
 * uring_park puts in the hash. A slot still taken at the request's own address is counted
 * (IOW_LOST_REQUESTS) and taken: a request is freed after its CQE, so one still there never
 * showed its end (a CQE overflow flushed later posts without the request), and no CQE of
 * this address can come before this submission ends. Until uring_park publishes it, a CQE
 * takes a free slot's fields for no one's (its req is 0). */
static __always_inline struct uring_request *uring_place(__u16 ring, __u64 key, __u64 user_data,
							 struct uring_slot **slot, struct uring_request *spare)
{
	struct uring_slot *s = uring_slot_of(ring, user_data);

	if (s && (!s->req || s->req == key)) {
		if (s->req)
			count_lost(IOW_LOST_REQUESTS);
		*slot = s;
		return &s->r;
	}
	*slot = NULL;
	return spare;
}

/* Submission, last: the request uring_place placed, its fields written, waits: published in
 * its slot, or put in the hash; one with no room there, or found already waiting at its
 * address, is counted (IOW_LOST_REQUESTS). */
static __always_inline void uring_park(struct uring_slot *slot, __u64 key, struct uring_request *r)
{
	long err;

	if (slot) {
		/* the fields before the address that publishes them: x86 keeps stores in order, and
		 * the CQE's loads (address, then fields) in theirs */
		asm volatile("" ::: "memory");
		slot->req = key;
		return;
	}
	err = bpf_map_update_elem(&uring_inflight, &key, r, BPF_NOEXIST);
	if (!err)
		return;
	count_lost(IOW_LOST_REQUESTS);
	if (err == -17 /* EEXIST: the same, never seen ending; this one takes its place */)
		bpf_map_update_elem(&uring_inflight, &key, r, BPF_ANY);
}

/* CQE: the request that waited at this address, NULL if none; *slot says where (NULL: the
 * hash), for uring_unpark once its record is made */
static __always_inline struct uring_request *uring_find(void *ctx, __u64 key, __u64 user_data,
							struct uring_slot **slot)
{
	__u16 number = uring_known_ring(ctx);

	/* a ring no traced request was seen on: nothing of it waits, unless rings went without
	 * a number (their requests are in the hash) */
	if (!number && !*(volatile __u32 *)&uring_rings_full)
		return NULL;
	*slot = uring_slot_of(number, user_data);
	if (*slot && (*slot)->req == key)
		return &(*slot)->r;
	*slot = NULL;
	return bpf_map_lookup_elem(&uring_inflight, &key);
}

static __always_inline void uring_unpark(struct uring_slot *slot, __u64 key)
{
	if (!slot) {
		bpf_map_delete_elem(&uring_inflight, &key);
		return;
	}
	/* free the slot last: the ring's next submission may take it at once */
	asm volatile("" ::: "memory");
	slot->req = 0;
}

/* io_uring_create: a new ring at an address an old one may have had gets a number of its own */
static __always_inline void uring_created(void *ctx)
{
	__u64 key = (__u64)ctx;

	if (bpf_map_delete_elem(&uring_rings, &key) == 0)
		__sync_fetch_and_add(&uring_rings_version, 1);
}

#endif
