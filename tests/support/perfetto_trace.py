"""A Perfetto trace read back with Perfetto's own message definitions (perfetto_trace_pb2 of
the `perfetto` package, decoded by the `protobuf` package): none of iowitness's encoder is
used. The slices are rebuilt as trace_processor builds them from TrackEvents: packets sorted
by timestamp (stably, in file order at a tie), a BEGIN opens a slice on its track, an END
closes the innermost open one; an END with none open, or a slice left open, is an error.
(trace_processor itself downloads its binary at first use, which a machine offline cannot.)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pytest

BEGIN, END, COUNTER = 1, 2, 4


@dataclass
class Slice:
    track: int
    name: str
    ts: int
    dur: int = -1
    args: dict = field(default_factory=dict)
    depth: int = 0


@dataclass
class Decoded:
    tracks: dict        # uuid -> {"name", "parent", "pid", "tid", "thread_name", "counter"}
    slices: list
    counters: dict      # uuid -> [(ts, value)]
    errors: list

    def track_name(self, uuid: int) -> str:
        t = self.tracks[uuid]
        return t["name"] or t["thread_name"] or t["process_name"] or ""

    def thread_of(self, uuid: int):
        """The tid of a thread track, or of the thread track a child track hangs from."""
        while uuid in self.tracks:
            if self.tracks[uuid]["tid"] is not None:
                return self.tracks[uuid]["tid"]
            uuid = self.tracks[uuid]["parent"]
        return None


def _value(a, strings):
    kind = a.WhichOneof("value")
    if kind == "string_value_iid":
        return strings[a.string_value_iid]
    return getattr(a, kind) if kind else None


def read(path) -> Decoded:
    pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2",
                             reason="the perfetto package (Perfetto's proto definitions) is not installed")
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    names, arg_names, strings = {}, {}, {}
    tracks, events, errors = {}, [], []
    cleared = False
    for order, p in enumerate(trace.packet):
        if p.sequence_flags & 1:
            cleared = True
        if p.HasField("interned_data"):
            for e in p.interned_data.event_names:
                names[e.iid] = e.name
            for e in p.interned_data.debug_annotation_names:
                arg_names[e.iid] = e.name
            for e in p.interned_data.debug_annotation_string_values:
                strings[e.iid] = e.str.decode()
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            pid = d.thread.pid if d.HasField("thread") else d.process.pid if d.HasField("process") else None
            tracks[d.uuid] = {"name": d.name, "parent": d.parent_uuid if d.HasField("parent_uuid") else None,
                              "pid": pid,
                              "tid": d.thread.tid if d.HasField("thread") else None,
                              "thread_name": d.thread.thread_name if d.HasField("thread") else "",
                              "process_name": d.process.process_name if d.HasField("process") else "",
                              "counter": d.counter.unit_name if d.HasField("counter") else None}
        if p.HasField("track_event"):
            e = p.track_event
            if e.track_uuid not in tracks:
                errors.append(f"event on track {e.track_uuid} before its descriptor")
            if p.sequence_flags & 2 and not cleared:
                errors.append("interned data used before the sequence's state was cleared")
            events.append((p.timestamp, order, e))
    events.sort(key=lambda x: (x[0], x[1]))
    open_: dict[int, list] = defaultdict(list)
    slices, counters = [], defaultdict(list)
    for ts, _, e in events:
        if e.type == BEGIN:
            s = Slice(e.track_uuid, names.get(e.name_iid, e.name), ts, depth=len(open_[e.track_uuid]),
                      args={arg_names.get(a.name_iid, a.name): _value(a, strings) for a in e.debug_annotations})
            open_[e.track_uuid].append(s)
            slices.append(s)
        elif e.type == END:
            if not open_[e.track_uuid]:
                errors.append(f"END at {ts} on track {e.track_uuid} with no slice open")
                continue
            s = open_[e.track_uuid].pop()
            s.dur = ts - s.ts
        elif e.type == COUNTER:
            counters[e.track_uuid].append((ts, e.counter_value))
    errors += [f"slice {s.name} at {s.ts} never ended" for left in open_.values() for s in left]
    return Decoded(tracks, slices, dict(counters), errors)
