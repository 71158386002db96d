/* SPDX-License-Identifier: GPL-2.0 */
/* summary.bpf.h — --summary: aggregates per (file, process, phase, op) instead of records.
 *
 * Purpose: with settings.summary a traced call adds itself to struct iow_summary (events.h)
 * of its key. A key gets a slot number once (`summary_slots`, numbers claimed in
 * `summary_numbers`); the values live in the per-CPU array `summary` at that number, which
 * the hot path reaches with an inlined array lookup after a per-CPU memo of the last key
 * (struct cpu_slot) instead of a hash lookup per call. User space adds the CPUs up
 * (collector/aggregates.py). A file's phase ends at each close, fsync or fdatasync of it
 * (kinds IOW_KIND_CLOSE and IOW_KIND_SYNC) and a new one starts at each open: the boundaries
 * the probe sees anyway, at no cost per data call.
 *
 * Overhead: per call, a memo compare, an array lookup and a dozen adds; a new key costs two
 * hash updates. The clock reads a latency needs are the same as without --summary.
 */
#ifndef IOWITNESS_SUMMARY_BPF_H
#define IOWITNESS_SUMMARY_BPF_H

#include "maps.bpf.h"
#include "targets.bpf.h"
#include "ops.bpf.h"

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

/* the calls after which a file's phase ends */
static __always_inline bool op_ends_phase(__u16 op)
{
	__u32 kind = kind_of_op(op);

	return kind == IOW_KIND_CLOSE || kind == IOW_KIND_SYNC;
}

/* a file's phase ends at close/fsync/fdatasync and a new one begins at open */
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

/* the aggregate of a key on this CPU, through the CPU's memo of the last key */
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
		if (claim_number(&summary_numbers, &summary_next_number, IOW_SUMMARY_MAX - 1, &number))
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

/* add one completed call to its aggregate instead of sending a record */
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
	if (op_moves_data(op)) {
		sum->requested += requested;
		sum->bytes += ret;
		if ((__u64)ret < requested)
			sum->short_calls += 1;
		if (offset == sum->next_offset)
			sum->sequential += 1;
		sum->next_offset = offset + ret;
	}
}

/* A traced call's end in --summary mode: its aggregate, and the phase it may close. The
 * epoch is known from the target-file lookup for calls on an open fd; opens and closes,
 * rare, look it up. */
static __always_inline void summarize_call(struct cpu_slot *slot, struct iow_file_key *key, __u32 epoch,
					   bool epoch_known, __u16 op, __u32 tgid, __u64 start_ts, __u64 now,
					   struct call_args *args, long ret)
{
	if (!epoch_known) {
		struct iow_file_state *state = bpf_map_lookup_elem(&files, key);

		epoch = state ? state->epoch : 0;
	}
	summarize(slot, key, epoch, op, tgid, start_ts, now, args->offset, args->requested, ret);
	if (op_ends_phase(op))
		next_phase_of(key);
}

/* A record made outside a data syscall's exit (an async request's completion, a fault, one
 * side of a copy): into the event area, or into its aggregate under --summary. */
static __always_inline void deliver_record(__u32 tgid, __u32 tid, struct iow_file_key *key, __u16 op,
					   __u64 start_ts, __u64 end_ts, long ret, struct call_args *args)
{
	struct cpu_slot *slot;

	if (!settings.summary) {
		send_record(tgid, tid, key, op, start_ts, end_ts, ret, args);
		return;
	}
	slot = this_cpu_slot();
	if (slot)
		summarize_call(slot, key, 0, false, op, tgid, start_ts, end_ts, args, ret);
}

#endif
