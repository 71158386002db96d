/* SPDX-License-Identifier: GPL-2.0 */
/* event_area.bpf.h — where a traced call's record goes: the event area, and the doorbell.
 *
 * Purpose: one ring of struct iow_event per CPU inside a memory-mapped array map
 * (`event_area`), that CPU's head and tail in `event_positions` (events.h has the protocol),
 * and a small BPF ring buffer (`doorbell`) that only wakes the reader, once per
 * settings.doorbell_events records. collector/eventarea.py is the reading side.
 *
 * Overhead: per record, a per-CPU position lookup, one 72-byte store and the head update:
 * programs run with preemption off, so each ring has one writer and needs no lock and no
 * atomic; a ring-buffer submit (~35 ns) only once per doorbell_events records.
 */
#ifndef IOWITNESS_EVENT_AREA_BPF_H
#define IOWITNESS_EVENT_AREA_BPF_H

#include "maps.bpf.h"

/* user space sizes both maps before loading */
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

/* What a call's arguments say, decoded per op (ops.bpf.h); the fields of struct iow_event. */
struct call_args {
	__s64 offset;      /* -1 when the op has none */
	__u64 requested;
	__u32 flags;
	long fd;
	__u16 ring;        /* async requests: their context's number; 0 for a syscall */
};

/* One record into this CPU's ring of the event area, on behalf of thread tid of process tgid
 * (an async completion may run in another task's context); a full ring is counted, never
 * silent. */
static __always_inline void send_record(__u32 tgid, __u32 tid, struct iow_file_key *key, __u16 op,
					__u64 start_ts, __u64 now, long ret, struct call_args *args)
{
	__u32 cpu = bpf_get_smp_processor_id(), index;
	struct iow_area_position *position = bpf_map_lookup_elem(&event_positions, &cpu);
	struct iow_event *e;
	__u64 head;

	if (!position)
		return;
	head = position->head;
	if (head - *(volatile __u64 *)&position->tail >= settings.area_events) {
		count_lost(IOW_LOST_EVENTS);
		return;
	}
	index = cpu * settings.area_events + (__u32)(head & (settings.area_events - 1));
	e = bpf_map_lookup_elem(&event_area, &index);
	if (!e)
		return;
	e->start_ns = start_ts;
	e->latency_ns = now - start_ts;
	e->ino = key->ino;
	e->offset = args->offset;
	e->requested = args->requested;
	e->ret = ret;
	e->tgid = tgid;
	e->tid = tid;
	e->dev = key->dev;
	e->fd = args->fd;
	e->flags = args->flags;
	e->op = op;
	e->ring = args->ring;
	/* the record before the head that publishes it: x86 keeps stores in program order, the
	 * barrier keeps the compiler from moving them */
	asm volatile("" ::: "memory");
	position->head = head + 1;
	/* wake the reader once per batch, never per record; it also polls on a timer */
	if (((head + 1) & (settings.doorbell_events - 1)) == 0)
		bpf_ringbuf_output(&doorbell, &head, sizeof(head), BPF_RB_FORCE_WAKEUP);
}


#endif
