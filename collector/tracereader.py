"""The trace reader: a .iwt file into numpy arrays, with no pandas and no analysis.

A bad header or START chunk raises BadTrace; a damaged tail ends the reading, and what came
before it is kept (`meta["truncated_bytes"]` says how much was left). The format is in
collector/traceformat.py and docs/trace-format.md; the pandas view of a run is
analysis/run.py.
"""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path

import numpy as np

from iowitness.collector import codec
from iowitness.collector.traceformat import (BLOCK, CHUNK, COUNTERS, END, EVENT_NEEDS, EVENTS, FACTS, HEADER,
                                             KIND_NAMES, MAGIC, META_NEEDS, OFFCPU, OUTPUT, READABLE_VERSIONS,
                                             RECORD_KINDS, SAMPLES, START, STREAMS, SUMMARY, SUMMARY_HEAD, dtype_from,
                                             lost_total, missing_text, spoken)
from iowitness.errors import BadTrace
from iowitness.version import __version__


class TraceData:
    """What a trace holds, as read: meta, event columns, facts, output, counters, device view."""

    # the device view (BLOCK, OFFCPU, SAMPLES chunks): empty in traces that have none
    block: np.ndarray | None = None
    offcpu: np.ndarray | None = None
    samples: tuple = ()
    summary = None   # --summary traces: the kernel's aggregates

    def __init__(self, meta, events: dict, event_dtype: np.dtype, facts, ops, meta_kinds, output, counters):
        self.meta, self.output, self.counters = meta, output, counters
        self.lost = lost_total(counters)
        # what the probe could not follow at all, in words ("" when nothing): traceformat.missing_text
        self.missing = missing_text(counters)
        self.ops, self.meta_kinds, self.facts = ops, meta_kinds, facts
        # bytes on disk per chunk kind ("events", "facts", ...), chunk heads included
        self.stored_bytes: dict[str, int] = {}
        # several CPUs fill the ring at once: record order is only roughly time order
        starts = events["start_ns"]
        if len(starts) > 1 and np.any(starts[1:] < starts[:-1]):
            order = np.argsort(starts, kind="stable")
            events = {name: column[order] for name, column in events.items()}
        # one contiguous array per field: the analysis reads columns, never whole records
        self.columns, self.event_dtype = events, event_dtype

    @property
    def event_count(self) -> int:
        return len(self.columns["start_ns"])

    def raw_events(self) -> np.ndarray:
        """The event records as a numpy structured array, in time order (padding zeroed)."""
        records = np.zeros(len(self.columns["start_ns"]), self.event_dtype)
        for name, column in self.columns.items():
            records[name] = column
        return records


def read(path) -> TraceData:
    """Read a .iwt file. A bad header or START raises BadTrace; a damaged tail ends the reading."""
    try:
        data = memoryview(Path(path).read_bytes())
    except FileNotFoundError:
        raise BadTrace(f"no such trace: {path}") from None
    except OSError as exc:
        raise BadTrace(f"cannot read trace {path}: {exc.strerror or exc}") from None

    if len(data) < HEADER.size and MAGIC.startswith(bytes(data[:len(MAGIC)])):
        raise BadTrace(f"{path} ends before its header: the tracer stopped at once; trace again")
    if bytes(data[:len(MAGIC)]) != MAGIC:
        raise BadTrace(f"{path} is not an iowitness trace (it does not start with IOWTRACE); "
                       "give the file that `iowitness run -o` wrote")
    _, version, _ = HEADER.unpack_from(data)
    if version not in READABLE_VERSIONS:
        from iowitness.version import __version__
        raise BadTrace(f"{path} is trace format version {version}, but iowitness {__version__} "
                       f"reads versions {spoken(READABLE_VERSIONS)} only; open it "
                       "with the iowitness that wrote it")
    return _read(path, data, version, len(data))


def _read(path, data: memoryview, version: int, file_size: int) -> TraceData:
    """The trace in data[:len(data)] (all of the file, or the part before a damaged chunk)."""
    chunks, good_end = _good_chunks(data)
    try:
        if not chunks or chunks[0][1] != START:
            raise BadTrace(f"{path} has no readable START chunk; it cannot be read, trace again")
        start = json.loads(bytes(chunks[0][2]))
        lay = start["layout"]
        dtypes = {EVENTS: dtype_from(lay["event"], EVENT_NEEDS),
                  FACTS: dtype_from(lay["meta"], META_NEEDS)}
        # the device view's records, in traces written since they exist
        dtypes.update({kind: dtype_from(lay[name], ()) for kind, name in RECORD_KINDS.items()
                       if kind not in dtypes and name in lay})
        ops = {int(k): str(v) for k, v in lay["ops"].items()}
        meta_kinds = {int(k): str(v) for k, v in lay["meta_kinds"].items()}
        for target in start.get("targets", []):
            int(target["dev"]), int(target["ino"]), str(target["path"])   # checked here, used later
        _check_attached(start.get("attached"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadTrace(f"{path} has a broken START chunk ({exc}); it cannot be read") from None

    stored = {"start": CHUNK.size + len(chunks[0][2])}
    end, counters, samples, summary = None, {}, [], None
    output = {name: [] for name in STREAMS}
    stream_of = {number: name for name, number in STREAMS.items()}
    batches = {kind: [] for kind in dtypes}     # kind -> [(offset, payload, rows)]
    for at, kind, payload in chunks[1:]:
        # a chunk whose CRC holds but whose content does not parse ends the reading, as a bad CRC
        try:
            if kind in batches:
                batches[kind].append((at, payload, _rows_in(payload, dtypes[kind], version)))
            elif kind == OUTPUT and len(payload) and payload[0] in stream_of:
                output[stream_of[payload[0]]].append(bytes(payload[1:]))
            elif kind == COUNTERS:
                counters = dict(json.loads(bytes(payload)))
                missing_text(counters)   # a counter that is not a number ends the reading here
            elif kind == END:
                end = dict(json.loads(bytes(payload)))
            elif kind == SAMPLES:
                samples.append(_sample(payload))
            elif kind == SUMMARY:
                summary = _summary_rows(payload)
            # any other kind comes from a newer writer of the same format: skipped on purpose
        except (ValueError, TypeError):
            good_end = at
            break
        name = KIND_NAMES.get(kind, str(kind))
        stored[name] = stored.get(name, 0) + CHUNK.size + len(payload)

    records = {}
    for kind, dtype in dtypes.items():
        # events are read column by column (what the analysis uses), other records as records
        decode_all = _decode_columns if kind == EVENTS else _decode_all
        records[kind], bad_at = decode_all(batches[kind], dtype, version)
        if bad_at is not None:
            # a record chunk that passed its CRC yet does not decode: it and what comes after
            # it are dropped, exactly as after a bad CRC (the writer never produces one)
            return _read(path, data[:bad_at], version, file_size)

    meta = {**start, **(end or {}), "complete": end is not None,
            "truncated_bytes": file_size - good_end, "path": str(path)}
    text = {name: b"".join(parts).decode("utf-8", errors="replace")
            for name, parts in output.items()}
    trace = TraceData(meta, records[EVENTS], dtypes[EVENTS], records[FACTS], ops, meta_kinds, text, counters)
    trace.stored_bytes = {"header": HEADER.size, **stored}
    _attach_device_view(trace, records, samples)
    trace.summary = summary   # --summary traces: the kernel's aggregates; None otherwise
    return trace


def _check_attached(attached) -> None:
    """START's `attached` (attach --pid: what /proc said of each process): ValueError unless it
    is a list of {pid: int, comm: str, cmdline: [str], cwd: str, age_s: finite number}, each
    but pid possibly null."""
    if attached is None:
        return
    if not isinstance(attached, list):
        raise ValueError("'attached' is not a list")
    for p in attached:
        if not isinstance(p, dict) or type(p.get("pid")) is not int:
            raise ValueError("an 'attached' process has no PID")
        age = p.get("age_s")
        if age is not None and (type(age) not in (int, float) or not math.isfinite(age)):
            raise ValueError("an 'attached' process has an age that is not a number")
        for key in ("comm", "cwd"):
            if p.get(key) is not None and not isinstance(p[key], str):
                raise ValueError(f"an 'attached' process has a {key} that is not text")
        cmdline = p.get("cmdline")
        if cmdline is not None and not (isinstance(cmdline, list) and all(isinstance(a, str) for a in cmdline)):
            raise ValueError("an 'attached' process has a command line that is not a list of words")


def _summary_rows(payload) -> np.ndarray:
    (size,) = SUMMARY_HEAD.unpack_from(payload)
    fields = json.loads(bytes(payload[SUMMARY_HEAD.size:SUMMARY_HEAD.size + size]))
    dtype = np.dtype([(name, kind, tuple(shape)) if shape else (name, kind) for name, kind, shape in fields])
    return np.frombuffer(payload[SUMMARY_HEAD.size + size:], dtype=dtype)


def _sample(payload) -> dict:
    """A SAMPLES chunk: /proc/diskstats and /proc/stat at one moment; ValueError when it does not parse."""
    sample = json.loads(bytes(payload))
    if not isinstance(sample, dict):
        raise ValueError("a SAMPLES chunk is not a JSON object")
    return sample


def _attach_device_view(trace: TraceData, records: dict, samples: list) -> None:
    for kind, name, key in ((BLOCK, "block", "complete_ns"), (OFFCPU, "offcpu", "off_ns")):
        if kind in records:
            setattr(trace, name, records[kind][np.argsort(records[kind][key], kind="stable")])
    trace.samples = tuple(samples)


def _rows_in(payload, dtype: np.dtype, version: int) -> int:
    """How many records a record chunk holds (ValueError when it cannot hold whole ones)."""
    if version == 1:
        if len(payload) % dtype.itemsize:
            raise ValueError(f"{len(payload)} bytes are not whole {dtype.itemsize}-byte records")
        return len(payload) // dtype.itemsize
    return codec.rows_of(payload)


def _decode_columns(batches: list, dtype: np.dtype, version: int) -> tuple[dict, int | None]:
    """As _decode_all, into one contiguous array per field (padding left out)."""
    total = sum(rows for _, _, rows in batches)
    columns = {name: np.empty((total, *dtype.fields[name][0].shape), dtype.fields[name][0].base)
               for name in dtype.names if not name.startswith("pad")}
    at = 0
    for offset, payload, rows in batches:
        try:
            if version == 1:
                records = np.frombuffer(payload, dtype)
                for name, column in columns.items():
                    column[at:at + rows] = records[name]
            else:
                codec.decode_columns(payload, dtype, columns, at)
        except (ValueError, TypeError):
            return {name: column[:at] for name, column in columns.items()}, offset
        at += rows
    return columns, None


def _decode_all(batches: list, dtype: np.dtype, version: int) -> tuple[np.ndarray, int | None]:
    """Every batch of one record kind into one array, allocated once; and the offset of the
    first chunk that did not decode (None when all did)."""
    out = np.empty(sum(rows for _, _, rows in batches), dtype)
    firsts = np.cumsum([0] + [rows for _, _, rows in batches])

    def decode(k: int) -> bool:
        _, payload, rows = batches[k]
        part = out[firsts[k]:firsts[k] + rows]
        try:
            if version == 1:
                part[...] = np.frombuffer(payload, dtype)
            else:
                codec.decode_into(payload, part)
        except (ValueError, TypeError):
            return False
        return True

    for k in range(len(batches)):
        if not decode(k):
            return out[:firsts[k]], batches[k][0]
    return out, None


def _good_chunks(data: memoryview) -> tuple[list, int]:
    """(offset, kind, payload) of each chunk up to the first torn or corrupt one, and where
    the good run ends."""
    chunks, at = [], HEADER.size
    while at + CHUNK.size <= len(data):
        kind, crc, length = CHUNK.unpack_from(data, at)
        end = at + CHUNK.size + length
        if end > len(data) or zlib.crc32(data[at + CHUNK.size:end]) != crc:
            break
        chunks.append((at, kind, data[at + CHUNK.size:end]))
        at = end
    return chunks, at

