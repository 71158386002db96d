"""A trace as a Perfetto trace (`export --perfetto FILE`): Perfetto's protobuf format
(TracePacket with TrackDescriptor and TrackEvent), which ui.perfetto.dev opens offline in the
browser and trace_processor reads.

Tracks:
  a process per traced process, a thread track per thread: each call a slice named after the
    call (args: fd, offset, bytes = its result, requested, latency_us, path); calls of one
    thread that overlap (asynchronous requests: io_uring, libaio) go to child tracks
    "tid N overlap K", as slices on one track must nest
  "phases": each phase of the report a slice (args: phase, operation, pattern, path, bytes,
    ops, tid), overlapping phases on "phases K"
  "block DEV": each block request a slice from its start to its completion (args: sector,
    bytes, latency_us (issue to complete), queue_us, submitter); overlapping requests on
    "block DEV K"
  counters: "syscall read B/s" and "syscall write B/s" (the calls' bytes by the end of each
    100 ms), "DEV read B/s", "DEV write B/s" (the device's, by completion), "DEV queue depth"
    (requests in flight)

The events are read block by block (analysis/read/stream_events.py) and written a block at a time,
each block's packets encoded together (reporters/perfetto_wire.py): memory is one block, the
tracks and the counters' bins, whatever the number of calls. Names (calls, paths, argument
names) are interned on one packet sequence. Times are the trace's CLOCK_MONOTONIC nanoseconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phasing.phases import READS, WRITES
from iowitness.reporters import perfetto_wire as w

BIN_NS = 100_000_000
CHUNK = 1 << 16   # rows encoded together
SEQ = 1
# TracePacket, TrackEvent, TrackDescriptor fields (protos/perfetto/trace/)
P_TIMESTAMP, P_EVENT, P_SEQ, P_INTERNED, P_FLAGS, P_DESCRIPTOR = 8, 11, 10, 12, 13, 60
E_TYPE, E_TRACK, E_NAME_IID, E_ANNOTATION, E_NAME, E_COUNTER = 9, 11, 10, 4, 23, 30
BEGIN, END, COUNTER = 1, 2, 4
CLEARED, NEEDS_STATE = 1, 2
A_NAME_IID, A_INT, A_DOUBLE, A_STRING_IID = 1, 4, 5, 17
# track uuids: a kind in the top byte
PROCESS, THREAD, LANE, PHASES, DEVICE, COUNTERS = (k << 56 for k in range(1, 7))
CALL_ARGS = ("fd", "offset", "bytes", "requested", "latency_us", "path")


def _lanes(start: np.ndarray, end: np.ndarray, ends: list[int]) -> np.ndarray:
    """Greedy lanes for intervals sorted by start: each takes the first lane free at its start;
    `ends` (each lane's end so far) carries from one call to the next."""
    lane = np.zeros(len(start), np.int64)
    if not len(start):
        return lane
    reach = np.maximum.accumulate(end)
    before = np.r_[max(ends) if ends else np.iinfo(np.int64).min, reach[:-1]]
    if (start >= before).all():   # nothing overlaps: all on the first lane
        if ends:
            ends[0] = int(reach[-1])
        else:
            ends.append(int(reach[-1]))
        return lane
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist())):
        k = next((k for k, free in enumerate(ends) if free <= s), len(ends))
        if k == len(ends):
            ends.append(e)
        else:
            ends[k] = e
        lane[i] = k
    return lane


class Writer:
    """Packets to a binary file, in the order they must be read: descriptors and interned
    names before the events that use them."""

    def __init__(self, out):
        self.out = out
        self.names: dict[str, int] = {}      # event names
        self.args: dict[str, int] = {}       # debug annotation names
        self.strings: dict[str, int] = {}    # debug annotation string values
        self.tracks: set[int] = set()
        self.slices = 0
        self.bytes = 0
        self._put(w.msg_varint(P_SEQ, SEQ) + w.msg_varint(P_FLAGS, CLEARED))

    def _put(self, packet: bytes) -> None:
        self._write(w.msg_bytes(1, packet))

    def _write(self, raw: bytes) -> None:
        self.out.write(raw)
        self.bytes += len(raw)

    def intern(self, table: dict, values, field: int) -> None:
        """Give the new ones of `values` an iid, in one interned_data packet."""
        new = [v for v in dict.fromkeys(values) if v not in table]
        if not new:
            return
        entries = b""
        for v in new:
            table[v] = len(table) + 1
            entries += w.msg_bytes(field, w.msg_varint(1, table[v]) + w.msg_bytes(2, v))
        self._put(w.msg_varint(P_SEQ, SEQ) + w.msg_varint(P_FLAGS, NEEDS_STATE) + w.msg_bytes(P_INTERNED, entries))

    def track(self, uuid: int, name: str | None = None, parent: int | None = None, process: tuple | None = None,
              thread: tuple | None = None, counter_unit: str | None = None) -> int:
        if uuid in self.tracks:
            return uuid
        self.tracks.add(uuid)
        body = w.msg_varint(1, uuid)
        if name is not None:
            body += w.msg_bytes(2, name)
        if parent is not None:
            body += w.msg_varint(5, parent)
        if process is not None:   # ProcessDescriptor: pid, process_name
            body += w.msg_bytes(3, w.msg_varint(1, process[0]) + w.msg_bytes(6, process[1]))
        if thread is not None:    # ThreadDescriptor: pid, tid, thread_name
            body += w.msg_bytes(4, w.msg_varint(1, thread[0]) + w.msg_varint(2, thread[1]) + w.msg_bytes(5, thread[2]))
        if counter_unit is not None:   # CounterDescriptor: unit_name
            body += w.msg_bytes(8, w.msg_bytes(6, counter_unit))
        self._put(w.msg_bytes(P_DESCRIPTOR, body))
        return uuid

    def write_slices(self, track: np.ndarray, start: np.ndarray, end: np.ndarray, name_iid: np.ndarray,
                     args: list[tuple]) -> None:
        """Slices, each a BEGIN packet then its END (a slice ending when the next begins, at the
        same time, is closed first). args: (name, kind "int" | "double" | "string", values,
        present or None); a string's values are already iids."""
        n = len(start)
        if n > CHUNK:   # the encoder's index arrays take ~1 KiB a row: bounded by the chunk
            for at in range(0, n, CHUNK):
                part = slice(at, at + CHUNK)
                self.write_slices(track[part], start[part], end[part], name_iid[part],
                                  [(a, k, v[part], None if p is None else p[part]) for a, k, v, p in args])
            return
        if not n:
            return
        notes = []
        for name, kind, values, present in args:
            field = {"int": A_INT, "double": A_DOUBLE, "string": A_STRING_IID}[kind]
            value = (w.join(n, [w.tag(field, 1), _doubles(values)]) if kind == "double"
                     else w.field_varint(field, values))
            note = w.nested(E_ANNOTATION, w.join(n, [w.msg_varint(A_NAME_IID, self.args[name]), value]))
            notes.append(note if present is None else w.where(note, present))
        event = w.join(n, [w.msg_varint(E_TYPE, BEGIN), w.field_varint(E_TRACK, track),
                           w.field_varint(E_NAME_IID, name_iid), *notes])
        head = w.msg_varint(P_SEQ, SEQ) + w.msg_varint(P_FLAGS, NEEDS_STATE)
        begin = w.join(n, [w.field_varint(P_TIMESTAMP, start), head, w.nested(P_EVENT, event)])
        stop = w.join(n, [w.field_varint(P_TIMESTAMP, end), w.msg_varint(P_SEQ, SEQ),
                          w.nested(P_EVENT, w.join(n, [w.msg_varint(E_TYPE, END), w.field_varint(E_TRACK, track)]))])
        self._write(w.join(n, [w.nested(1, begin), w.nested(1, stop)]).flat())
        self.slices += n

    def write_counter(self, uuid: int, times: np.ndarray, values: np.ndarray) -> None:
        n = len(times)
        if not n:
            return
        event = w.join(n, [w.msg_varint(E_TYPE, COUNTER), w.msg_varint(E_TRACK, uuid),
                           w.field_varint(E_COUNTER, np.asarray(values, np.int64))])
        packet = w.join(n, [w.field_varint(P_TIMESTAMP, times), w.msg_varint(P_SEQ, SEQ), w.nested(P_EVENT, event)])
        self._write(w.packets(packet))


def _doubles(values) -> w.Col:
    return w.fixed(np.ascontiguousarray(np.asarray(values, "<f8")).view(np.uint8).reshape(-1, 8))


class Calls:
    """The calls, block by block: slices on their threads' tracks, and the bytes per bin."""

    def __init__(self, writer: Writer, comms: dict[int, str]):
        self.w, self.comms = writer, comms
        self.ends: dict[int, list[int]] = {}         # tid -> its lanes' ends
        self.bins: dict[str, dict[int, int]] = {"read": {}, "write": {}}
        writer.intern(writer.args, CALL_ARGS, 3)

    def add(self, events: pd.DataFrame) -> None:
        n = len(events)
        if not n:
            return
        w = self.w
        start = events["start_ns"].to_numpy(np.int64)
        end = start + events["latency_ns"].to_numpy(np.int64)
        tid = events["tid"].to_numpy(np.int64)
        tgid = events["tgid"].to_numpy(np.int64)
        track = np.empty(n, np.int64)
        codes, tids = pd.factorize(tid)
        for k, t in enumerate(tids.tolist()):
            rows = np.flatnonzero(codes == k)
            pid = int(tgid[rows[0]])
            comm = self.comms.get(pid, "")
            w.track(PROCESS | pid, process=(pid, comm or str(pid)))
            w.track(THREAD | t, parent=PROCESS | pid, thread=(pid, t, f"{comm} {t}".strip()))
            lane = _lanes(start[rows], end[rows], self.ends.setdefault(t, []))
            for k2 in np.unique(lane[lane > 0]).tolist():
                w.track(LANE | k2 << 32 | t, name=f"tid {t} overlap {k2}", parent=THREAD | t)
            track[rows] = np.where(lane > 0, LANE | lane << 32 | t, THREAD | t)
        syscall = events["syscall"].astype(str)
        names = pd.Categorical(syscall)
        w.intern(w.names, [str(c) for c in names.categories], 2)
        name_iid = np.array([w.names[str(c)] for c in names.categories], np.int64)[names.codes]
        path = events["path"]
        has_path = path.notna().to_numpy()
        paths = pd.Categorical(path)
        w.intern(w.strings, [str(c) for c in paths.categories], 29)
        path_iid = np.array([w.strings[str(c)] for c in paths.categories] or [0], np.int64)[np.maximum(paths.codes, 0)]
        offset = events["offset"].to_numpy(np.int64)
        w.write_slices(track, start, end, name_iid, [
            ("fd", "int", events["fd"].to_numpy(np.int64), None),
            ("offset", "int", offset, offset >= 0),
            ("bytes", "int", events["ret"].to_numpy(np.int64), None),
            ("requested", "int", events["requested"].to_numpy(np.int64), None),
            ("latency_us", "double", (end - start) / 1e3, None),
            ("path", "string", path_iid, has_path)])
        ret = events["ret"].to_numpy(np.int64)
        for kind, calls in (("read", READS), ("write", WRITES)):
            moved = syscall.isin(calls).to_numpy() & (ret > 0)
            if moved.any():
                _add_bins(self.bins[kind], end[moved], ret[moved])

    def finish(self) -> None:
        for kind in ("read", "write"):
            uuid = self.w.track(COUNTERS | (1 if kind == "read" else 2), name=f"syscall {kind} B/s", counter_unit="B/s")
            self.w.write_counter(uuid, *_series(self.bins[kind]))


def _add_bins(bins: dict[int, int], at: np.ndarray, amount: np.ndarray) -> None:
    index, codes = np.unique(at // BIN_NS, return_inverse=True)
    sums = np.bincount(codes, weights=amount.astype(np.float64))
    for b, s in zip(index.tolist(), sums.tolist()):
        bins[b] = bins.get(b, 0) + int(s)


def _series(bins: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Bytes per bin as a rate per second at each bin's start, every bin from the first to one
    past the last (zero where nothing moved), so the counter falls back to 0."""
    if not bins:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    first, last = min(bins), max(bins) + 1
    index = np.arange(first, last + 1)
    values = np.array([bins.get(int(b), 0) for b in index], np.int64) * (1_000_000_000 // BIN_NS)
    return index * BIN_NS, values


def write_phases(writer: Writer, phases: pd.DataFrame) -> None:
    if phases is None or phases.empty:
        return
    rows = phases.sort_values("first_ns", kind="stable")
    start = rows["first_ns"].to_numpy(np.int64)
    end = np.maximum.reduce([rows[c].to_numpy(np.int64) for c in ("last_ns", "sync_end_ns", "close_end_ns")])
    end = np.maximum(end, start)
    lane = _lanes(start, end, [])
    for k in np.unique(lane).tolist():
        writer.track(PHASES | k, name="phases" if k == 0 else f"phases {k + 1}")
    label = [str(n) if isinstance(n, str) and n else f"{o}" for n, o in zip(rows["name"], rows["operation"])]
    writer.intern(writer.names, label, 2)
    writer.intern(writer.args, ("phase", "operation", "pattern", "path", "bytes", "ops", "tid"), 3)
    texts = {c: rows[c].astype(str).tolist() for c in ("operation", "pattern", "path")}
    writer.intern(writer.strings, [t for c in texts.values() for t in c], 29)
    writer.write_slices(PHASES | lane, start, end, np.array([writer.names[x] for x in label], np.int64), [
        ("phase", "int", rows["phase"].to_numpy(np.int64), None),
        *((c, "string", np.array([writer.strings[t] for t in texts[c]], np.int64), None) for c in texts),
        ("bytes", "int", rows["bytes"].fillna(0).to_numpy(np.int64), None),
        ("ops", "int", rows["ops"].fillna(0).to_numpy(np.int64), None),
        ("tid", "int", rows["tid"].to_numpy(np.int64), None)])


def write_block(writer: Writer, requests: pd.DataFrame, depth: dict) -> None:
    """Block requests (analysis/block_views.requests) on a track per device, and the device's
    counters: bytes per second by completion, queue depth."""
    if requests.empty:
        return
    writer.intern(writer.args, ("sector", "bytes", "latency_us", "queue_us", "submitter", "phase"), 3)
    for k, (name, part) in enumerate(requests.groupby("device", sort=True)):
        part = part.sort_values("start_ns", kind="stable")
        start, end = part["start_ns"].to_numpy(np.int64), part["complete_ns"].to_numpy(np.int64)
        dev = int(part["dev"].iloc[0])
        lane = _lanes(start, end, [])
        for j in np.unique(lane).tolist():
            writer.track(DEVICE | j << 32 | dev, name=f"block {name}" if j == 0 else f"block {name} {j + 1}")
        writer.intern(writer.names, part["op"].tolist(), 2)
        who = (part["comm"] + " " + part["tgid"].astype(str) + "/" + part["tid"].astype(str)).tolist()
        writer.intern(writer.strings, who, 29)
        writer.write_slices(DEVICE | lane << 32 | dev, start, end,
                            np.array([writer.names[o] for o in part["op"]], np.int64), [
            ("sector", "int", part["sector"].to_numpy(np.int64), None),
            ("bytes", "int", part["bytes"].to_numpy(np.int64), None),
            ("latency_us", "double", part["latency_ns"].to_numpy(np.int64) / 1e3, None),
            ("queue_us", "double", part["queue_ns"].to_numpy(np.int64) / 1e3, None),
            ("submitter", "string", np.array([writer.strings[x] for x in who], np.int64), None),
            ("phase", "int", part["phase"].to_numpy(np.int64), part["phase"].to_numpy() >= 0)])
        for j, kind in ((1, "read"), (2, "write")):
            rows = part[part["op"] == kind]
            bins: dict[int, int] = {}
            if len(rows):
                _add_bins(bins, rows["complete_ns"].to_numpy(np.int64), rows["bytes"].to_numpy(np.int64))
            uuid = writer.track(COUNTERS | (4 + 4 * k + j) << 32 | dev, name=f"{name} {kind} B/s", counter_unit="B/s")
            writer.write_counter(uuid, *_series(bins))
        if name in depth:
            uuid = writer.track(COUNTERS | (4 + 4 * k + 3) << 32 | dev, name=f"{name} queue depth",
                                counter_unit="requests")
            writer.write_counter(uuid, *depth[name])


def write(path: str, trace, out, block_rows: int | None = None) -> dict:
    """The trace at `path` (its report built already: `trace`, a StreamedTrace) as a Perfetto
    trace in `out` (an iowitness.outputfile.Output); what was written."""
    from iowitness.analysis.measure import block_views
    from iowitness.analysis.read import stream_events

    report = trace.report()
    requests = block_views.requests(trace, report.phases)
    comms = {}
    if trace.processes is not None and len(trace.processes):
        comms = {int(r.tgid): str(r.comm) for r in trace.processes.itertuples()}
    done: dict[str, int] = {}

    def produce(f) -> None:
        writer = Writer(f)
        write_phases(writer, report.phases)
        write_block(writer, requests, block_views.queue_depth(requests))
        calls = Calls(writer, comms)
        count = 0
        with stream_events.open_events(path, block_rows=block_rows or stream_events.BLOCK_ROWS) as source:
            for block in source.blocks():
                calls.add(block)
                count += len(block)
        calls.finish()
        done.update(calls=count, phases=len(report.phases), requests=len(requests), bytes=writer.bytes,
                    slices=writer.slices)

    out.write(produce)
    return done
