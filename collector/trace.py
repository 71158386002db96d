"""The saved trace (.iwt): a versioned, self-describing file that survives its writer's death.

Layout, byte by byte, in docs/trace-format.md. In short: a 16-byte header (magic, format
version) and then chunks, each `kind, crc32, length, payload`. The writer only ever appends
whole chunks, so whatever a SIGKILL leaves behind is a run of good chunks plus at most one
torn one; the reader keeps the good run and reports the rest as `truncated_bytes`.

Record chunks (EVENTS, FACTS, and any kind listed in RECORD_KINDS) hold a batch of records of
one dtype. Format 2 stores each batch as a block of collector/codec.py (columnar, lossless,
zstd: about 3 to 7 bytes per event instead of 72); format 1 stored the records as they were.
The reader reads both.

The START chunk describes the record dtypes it was written with, and the reader builds its
dtypes from that description, never from events.h: a trace stays readable after the probe's
layout changes.
"""

from __future__ import annotations

import json
import struct
import threading
import weakref
import zlib
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iowitness.collector import codec
from iowitness.collector.mounts import dev_name
from iowitness.errors import BadTrace, OutputError

if TYPE_CHECKING:
    import pandas as pd
from iowitness.probes.layout import Layout, layout

MAGIC = b"IOWTRACE"
FORMAT_VERSION = 2               # what the writer writes
READABLE_VERSIONS = (1, 2)       # what the reader reads: 1 = raw record chunks, 2 = codec blocks
HEADER = struct.Struct("<8sII")        # magic, format version, reserved (0)
CHUNK = struct.Struct("<IIQ")          # kind, crc32 of payload, payload length

START, EVENTS, FACTS, OUTPUT, COUNTERS, END = 1, 2, 3, 4, 5, 6
# the device view (docs/trace-format.md): block requests, off-CPU stretches, kernel counters
BLOCK, OFFCPU, SAMPLES = 7, 8, 9
# --summary traces: the kernel's aggregates (collector/aggregates.py), a self-describing
# snapshot: u32 length of a JSON dtype description, the description, then the rows; the
# last SUMMARY chunk of a trace holds the totals of the run
SUMMARY = 10
_SUMMARY_HEAD = struct.Struct("<I")
STREAMS = {"stdout": 1, "stderr": 2}
# chunk kinds that hold a batch of records, and the key of their dtype in START's "layout";
# a new kind of record gets a number here and a description in describe_layout, nothing else
RECORD_KINDS = {EVENTS: "event", FACTS: "meta", BLOCK: "block", OFFCPU: "offcpu"}
# record batches smaller than this wait in memory for the next flush and go out as one chunk:
# a slow benchmark's drains of a few events would each pay a block's fixed cost (60 bytes)
GATHER_ROWS = 8192
KIND_NAMES = {START: "start", EVENTS: "events", FACTS: "facts", OUTPUT: "output",
              COUNTERS: "counters", END: "end", BLOCK: "block", OFFCPU: "offcpu", SAMPLES: "samples",
              SUMMARY: "summary"}

# fields the reader derives columns and tables from; a layout without them is not readable
_EVENT_NEEDS = ("start_ns", "latency_ns", "op", "dev", "ino")
_META_NEEDS = ("ts_ns", "kind", "tgid", "parent_tgid", "dev", "ino", "fd", "dirfd",
               "s_magic", "comm", "path")


def describe_layout(lay: Layout) -> dict:
    """The JSON form of the record layout that START carries."""
    def struct_of(dtype: np.dtype) -> dict:
        fields = [(name, *dtype.fields[name][:2]) for name in dtype.names]
        return {"itemsize": dtype.itemsize,
                "fields": [[name, sub.base.str, offset, list(sub.shape)]
                           for name, sub, offset in fields]}

    return {
        "version": lay.version,
        "event": struct_of(lay.event),
        "meta": struct_of(lay.meta),
        "ops": {str(k): v for k, v in lay.names("iow_op", "IOW_OP_").items()},
        "meta_kinds": {str(k): v for k, v in lay.names("iow_meta_kind", "IOW_META_").items()},
        "block": struct_of(lay.structs["iow_block"]),
        "offcpu": struct_of(lay.structs["iow_offcpu"]),
    }


def dtype_from(description: dict, needs: tuple[str, ...]) -> np.dtype:
    """Rebuild a record dtype from its START description; ValueError/KeyError/TypeError if bad."""
    fields = description["fields"]
    dtype = np.dtype({
        "names": [f[0] for f in fields],
        "formats": [(f[1], tuple(f[3])) if f[3] else f[1] for f in fields],
        "offsets": [int(f[2]) for f in fields],
        "itemsize": int(description["itemsize"]),
    })
    missing = [n for n in needs if n not in dtype.names]
    if missing:
        raise ValueError(f"the layout has no field {', '.join(missing)}")
    return dtype


def _json(obj) -> bytes:
    # default=str: metadata may hold Paths and the like that the caller did not convert
    return json.dumps(obj, default=str, separators=(",", ":")).encode()


def _joined(batches: list[np.ndarray]) -> np.ndarray:
    """Record arrays of one dtype end to end, copied as bytes: numpy copies a structured array
    field by field, two to three times slower (a 65,536-record batch: 5.5 ms vs 2.2 ms)."""
    if len(batches) == 1:
        return batches[0]
    return np.concatenate([np.ascontiguousarray(b).view(np.uint8) for b in batches]).view(batches[0].dtype)


class TraceWriter:
    """Appends chunks to a new .iwt file. Safe to call from several threads."""

    def __init__(self, path, start_meta: dict):
        self.path = str(path)
        lay = layout()
        self._event, self._meta = lay.event, lay.meta
        # the collector's ring-buffer reader and its output pumps share one writer
        self._lock = threading.Lock()
        self._closed = False
        self._waiting: dict[int, list[np.ndarray]] = {}   # kind -> small batches not yet written
        self.bytes_written = 0
        try:
            self._file = open(self.path, "wb")
        except OSError as exc:
            raise self._cannot_write(exc) from None
        self._write(HEADER.pack(MAGIC, FORMAT_VERSION, 0))
        self._chunk(START, _json({**start_meta, "layout": describe_layout(lay)}))
        # a trace killed in its first second still names what it traced
        self.flush()

    def write_events(self, records) -> None:
        """One EVENTS chunk: an array of layout().event, or the raw bytes of such records."""
        self.write_records(EVENTS, records, self._event)

    def write_facts(self, records) -> None:
        """One FACTS chunk: an array of layout().meta, or the raw bytes of such records."""
        self.write_records(FACTS, records, self._meta)

    def write_records(self, kind: int, records, dtype: np.dtype) -> None:
        """Records of `kind` (an array of `dtype`, or the raw bytes of such records), stored as
        codec blocks in chunks of that kind. A batch of GATHER_ROWS or more is written at once;
        smaller ones are gathered and written together by the next flush (or sooner, once they
        add up to GATHER_ROWS). Nothing is written for an empty batch."""
        records = self._records_of(records, dtype)
        if not len(records):
            return
        with self._lock:
            if self._closed:
                raise ValueError(f"trace {self.path} is closed")
            waiting = self._waiting.setdefault(kind, [])
            if len(records) >= GATHER_ROWS:
                batch = _joined(waiting + [records]) if waiting else records
            else:
                # a copy: raw bytes may be a buffer the caller reuses
                waiting.append(np.frombuffer(records.tobytes(), dtype))
                if sum(len(w) for w in waiting) < GATHER_ROWS:
                    return
                batch = _joined(waiting)
            waiting.clear()
        # encoded outside the lock: the output pumps need not wait for the compression
        self._chunk(kind, codec.encode(batch))

    def _write_waiting(self) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, {}
        for kind, batches in waiting.items():
            if batches:
                self._chunk(kind, codec.encode(_joined(batches)))

    def write_device(self, block, offcpu) -> None:
        """BLOCK and OFFCPU chunks: arrays of iow_block and iow_offcpu records (empty ones are skipped)."""
        lay = layout()
        self.write_records(BLOCK, block, lay.structs["iow_block"])
        self.write_records(OFFCPU, offcpu, lay.structs["iow_offcpu"])

    def write_sample(self, sample: dict) -> None:
        """One SAMPLES chunk: /proc/diskstats and /proc/stat read at one moment."""
        self._chunk(SAMPLES, _json(sample))

    def write_output(self, stream: str, data: bytes) -> None:
        if stream not in STREAMS:
            raise ValueError(f"stream must be one of {sorted(STREAMS)}, not {stream!r}")
        if data:
            self._chunk(OUTPUT, bytes([STREAMS[stream]]) + bytes(data))

    def write_summary(self, records: np.ndarray) -> None:
        """One SUMMARY chunk: a snapshot of the kernel's aggregates (rows of any flat dtype)."""
        fields = [(name, records.dtype.fields[name][0]) for name in records.dtype.names]
        description = _json([[name, sub.base.str, list(sub.shape)] for name, sub in fields])
        rows = np.ascontiguousarray(records)
        self._chunk(SUMMARY, _SUMMARY_HEAD.pack(len(description)) + description + rows.tobytes())

    def write_counters(self, counters: dict) -> None:
        self._chunk(COUNTERS, _json(counters))

    def flush(self) -> None:
        """Write the records waiting and hand every chunk to the kernel: from then on they
        survive a SIGKILL."""
        self._write_waiting()
        with self._lock:
            self._guard(self._file.flush)

    def close(self, end_meta: dict) -> None:
        """Write what is waiting, then END, the mark of a complete trace, and close."""
        if not self._closed:
            try:
                self._write_waiting()
                self._chunk(END, _json(end_meta))
            finally:
                self.abort()

    def abort(self) -> None:
        """Close without END: the trace will read as incomplete, with all it holds so far."""
        if self._closed:
            return
        try:
            self._write_waiting()
        finally:
            with self._lock:
                if not self._closed:
                    self._closed = True
                    try:
                        self._guard(self._file.flush)
                    finally:
                        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.abort()   # a no-op after close(end_meta)

    @staticmethod
    def _records_of(records, dtype: np.dtype) -> np.ndarray:
        if isinstance(records, np.ndarray):
            if records.dtype != dtype:
                raise TypeError(f"records have dtype {records.dtype}, expected {dtype}")
            return records
        view = memoryview(records).cast("B")
        if len(view) % dtype.itemsize:
            raise ValueError(f"{len(view)} bytes are not whole {dtype.itemsize}-byte records")
        return np.frombuffer(view, dtype)

    def _chunk(self, kind: int, payload) -> None:
        header = CHUNK.pack(kind, zlib.crc32(payload), len(payload))
        with self._lock:
            if self._closed:
                raise ValueError(f"trace {self.path} is closed")
            self._write(header)
            self._write(payload)

    def _write(self, data) -> None:
        self._guard(self._file.write, data)
        self.bytes_written += len(data)

    def _guard(self, call, *args):
        try:
            return call(*args)
        except OSError as exc:
            raise self._cannot_write(exc) from None

    def _cannot_write(self, exc: OSError) -> OutputError:
        return OutputError(f"cannot write trace {self.path}: {exc.strerror or exc}; "
                           "choose another place with -o")


class Trace:
    """A loaded trace: meta, events, files, processes, output, counters, lost."""

    # the device view (BLOCK, OFFCPU, SAMPLES chunks): empty in traces that have none
    block: np.ndarray | None = None
    offcpu: np.ndarray | None = None
    samples: tuple = ()
    summary = None   # --summary traces: the kernel's aggregates (set by load)

    def __init__(self, meta, events: dict, event_dtype: np.dtype, facts, ops, meta_kinds, output, counters, lost):
        self.meta, self.output, self.counters, self.lost = meta, output, counters, lost
        self._ops, self._meta_kinds, self._facts = ops, meta_kinds, facts
        # bytes on disk per chunk kind ("events", "facts", ...), chunk heads included
        self.stored_bytes: dict[str, int] = {}
        # several CPUs fill the ring at once: record order is only roughly time order
        starts = events["start_ns"]
        if len(starts) > 1 and np.any(starts[1:] < starts[:-1]):
            order = np.argsort(starts, kind="stable")
            events = {name: column[order] for name, column in events.items()}
        # one contiguous array per field: the analysis reads columns, never whole records
        self._columns, self._event_dtype = events, event_dtype

    @property
    def event_count(self) -> int:
        return len(self._columns["start_ns"])

    def raw_events(self) -> np.ndarray:
        """The event records as a numpy structured array, row for row as `events` (padding zeroed)."""
        records = np.zeros(len(self._columns["start_ns"]), self._event_dtype)
        for name, column in self._columns.items():
            records[name] = column
        return records

    @cached_property
    def events(self) -> pd.DataFrame:
        import pandas as pd  # lazily: the collector never needs it
        raw = self._columns
        columns = {name: [_text(v) for v in column] if column.ndim > 1 else column
                   for name, column in raw.items()}
        # copy=False: each column stays its own block instead of being copied into 2-D blocks
        frame = _event_table_class()(columns, index=pd.RangeIndex(len(raw["start_ns"])), copy=False)
        object.__setattr__(frame, "_trace", weakref.ref(self))
        frame["syscall"] = _categorical(raw["op"], lambda op: self._ops.get(op, f"op{op}"))
        frame["end_ns"] = raw["start_ns"] + raw["latency_ns"]
        frame["device"] = _categorical(raw["dev"], dev_name)
        frame["path"] = self._paths(raw["dev"], raw["ino"], raw["start_ns"])
        if "requested" in frame:
            # a size_t for I/O, but an off_t for lseek: signed shows lseek(fd, -4096, SEEK_CUR) as it was
            frame["requested"] = frame["requested"].to_numpy().view(np.int64)
        return frame

    def report(self):
        """Phases, groups and outliers (iowitness.analysis.report.Report), computed once."""
        if getattr(self, "_report", None) is None:
            from iowitness.analysis.report import build
            self._report = build(self)
        return self._report

    def phases(self) -> pd.DataFrame:
        """One row per phase of the benchmark, rebuilt from the events (see analysis/phases.py)."""
        return self.report().phases

    @cached_property
    def files(self) -> pd.DataFrame:
        import pandas as pd  # lazily: the collector never needs it
        rows = [{"dev": int(t["dev"]), "ino": int(t["ino"]), "path": str(t["path"]),
                 "source": "target"} for t in self.meta.get("targets", [])]
        opened = self._facts_of("file")
        for f in opened[np.argsort(opened["ts_ns"], kind="stable")]:
            rows.append({"dev": int(f["dev"]), "ino": int(f["ino"]), "path": _text(f["path"]),
                         "tgid": int(f["tgid"]), "fd": int(f["fd"]), "dirfd": int(f["dirfd"]),
                         "s_magic": int(f["s_magic"]), "comm": _text(f["comm"]),
                         "ts_ns": int(f["ts_ns"]), "source": "open"})
        columns = ["dev", "ino", "device", "path", "tgid", "fd", "dirfd", "s_magic", "comm",
                   "ts_ns", "source"]
        frame = pd.DataFrame(rows, columns=columns)
        # targets registered before tracing know only dev, ino and path: the rest is <NA>
        frame = frame.astype({"dev": "uint32", "ino": "uint64", "tgid": "UInt32", "fd": "Int32",
                              "dirfd": "Int32", "s_magic": "UInt32", "ts_ns": "UInt64"})
        frame["device"] = [dev_name(int(d)) for d in frame["dev"]]
        return frame

    @cached_property
    def processes(self) -> pd.DataFrame:
        import pandas as pd  # lazily: the collector never needs it
        facts = self._facts_of("fork", "exec")
        rows = [{"kind": self._meta_kinds[int(f["kind"])], "tgid": int(f["tgid"]),
                 "parent_tgid": int(f["parent_tgid"]), "comm": _text(f["comm"]),
                 "path": _text(f["path"]), "ts_ns": int(f["ts_ns"])}
                for f in facts[np.argsort(facts["ts_ns"], kind="stable")]]
        frame = pd.DataFrame(rows, columns=["kind", "tgid", "parent_tgid", "comm", "path", "ts_ns"])
        return frame.astype({"tgid": "uint32", "parent_tgid": "uint32", "ts_ns": "uint64"})

    def _facts_of(self, *kinds: str) -> np.ndarray:
        wanted = [k for k, name in self._meta_kinds.items() if name in kinds]
        return self._facts[np.isin(self._facts["kind"], wanted)]

    def _paths(self, dev: np.ndarray, ino: np.ndarray, start: np.ndarray) -> pd.Categorical:
        """The path of each event's file: the last one it was opened under before the event.

        An inode number can name several files over a run (ext4 gives a deleted file's number
        to the next new file), so the mapping is by time when a (dev, ino) had several paths.
        """
        import pandas as pd  # lazily: the collector never needs it
        files = self.files
        categories = sorted(set(files["path"]))
        code_of = {p: k for k, p in enumerate(categories)}
        key = dev.astype(np.uint64) << np.uint64(44) ^ ino.astype(np.uint64)
        file_key = files["dev"].to_numpy(np.uint64) << np.uint64(44) ^ files["ino"].to_numpy(np.uint64)
        file_code = np.array([code_of[p] for p in files["path"]], dtype=np.int64)
        ambiguous = pd.Series(file_code).groupby(file_key).nunique()
        codes = np.full(len(key), -1, dtype=np.int64)
        if len(files):
            # first path of each file: enough unless a file had several. Looked up once per
            # distinct file, then spread to the events by the file's code
            first = pd.Series(file_code).groupby(file_key).first()
            key_codes, distinct = pd.factorize(key)
            codes = first.reindex(distinct).fillna(-1).to_numpy(np.int64)[key_codes]
        if (ambiguous > 1).any():
            when = files["ts_ns"].fillna(0).to_numpy(np.int64)
            table = pd.DataFrame({"key": file_key, "ts": when, "code": file_code}).sort_values("ts")
            probe = pd.DataFrame({"key": key, "ts": start.astype(np.int64), "row": np.arange(len(key))})
            mixed = probe[np.isin(key, ambiguous.index[ambiguous > 1].to_numpy())].sort_values("ts")
            found = pd.merge_asof(mixed, table, on="ts", by="key", direction="backward")
            hit = found["code"].notna().to_numpy()
            codes[found["row"].to_numpy()[hit]] = found["code"].to_numpy()[hit].astype(np.int64)
        return pd.Categorical.from_codes(codes, categories=_names(categories))


_EVENT_TABLE = None


def _event_table_class():
    """A DataFrame that can also be called: trace.events(phase=3) gives one phase's events."""
    global _EVENT_TABLE
    if _EVENT_TABLE is None:
        import pandas as pd

        class EventTable(pd.DataFrame):
            _metadata = ["_trace"]

            @property
            def _constructor(self):
                return pd.DataFrame

            def __call__(self, phase: int | None = None) -> pd.DataFrame:
                if phase is None:
                    return pd.DataFrame(self)
                assigned = self._trace().report().assigned
                return pd.DataFrame(self[assigned["phase"].to_numpy() == phase])

        _EVENT_TABLE = EventTable
    return _EVENT_TABLE


def _text(raw: np.ndarray) -> str:
    """A NUL-terminated byte array as text."""
    return raw.tobytes().split(b"\0", 1)[0].decode("utf-8", errors="replace")


def _categorical(values: np.ndarray, name_of) -> pd.Categorical:
    """Few distinct values over many rows: name each distinct value once, not each row."""
    import pandas as pd  # lazily: the collector never needs it
    if len(values) and values.dtype.kind == "u" and values.max() < 2**16:
        # small codes (syscall numbers): a counting pass instead of hashing every row
        uniques = np.flatnonzero(np.bincount(values))
        lookup = np.zeros(int(uniques[-1]) + 1, dtype=np.int64)
        lookup[uniques] = np.arange(len(uniques))
        codes = lookup[values]
    else:
        codes, uniques = pd.factorize(values, sort=True)
    names = [name_of(int(u)) for u in uniques]
    categories = list(dict.fromkeys(names))
    to_code = np.array([categories.index(n) for n in names], dtype=np.int64)
    return pd.Categorical.from_codes(to_code[codes], categories=_names(categories))


def _names(categories: list) -> pd.Index:
    import pandas as pd  # lazily: the collector never needs it
    # typed even when empty, so that Parquet gets a string column, not a null one
    return pd.Index(categories, dtype="str")


def load(path) -> Trace:
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
        from iowitness import __version__
        raise BadTrace(f"{path} is trace format version {version}, but iowitness {__version__} "
                       f"reads versions {_spoken(READABLE_VERSIONS)} only; open it "
                       "with the iowitness that wrote it")
    return _read(path, data, version, len(data))


def _read(path, data: memoryview, version: int, file_size: int) -> Trace:
    """The trace in data[:len(data)] (all of the file, or the part before a damaged chunk)."""
    chunks, good_end = _good_chunks(data)
    try:
        if not chunks or chunks[0][1] != START:
            raise BadTrace(f"{path} has no readable START chunk; it cannot be read, trace again")
        start = json.loads(bytes(chunks[0][2]))
        lay = start["layout"]
        dtypes = {EVENTS: dtype_from(lay["event"], _EVENT_NEEDS),
                  FACTS: dtype_from(lay["meta"], _META_NEEDS)}
        # the device view's records, in traces written since they exist
        dtypes.update({kind: dtype_from(lay[name], ()) for kind, name in RECORD_KINDS.items()
                       if kind not in dtypes and name in lay})
        ops = {int(k): str(v) for k, v in lay["ops"].items()}
        meta_kinds = {int(k): str(v) for k, v in lay["meta_kinds"].items()}
        for target in start.get("targets", []):
            int(target["dev"]), int(target["ino"]), str(target["path"])   # checked here, used later
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadTrace(f"{path} has a broken START chunk ({exc}); it cannot be read") from None

    stored = {"start": CHUNK.size + len(chunks[0][2])}
    end, counters, lost, samples, summary = None, {}, 0, [], None
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
                lost = sum(int(counters.get(k, 0)) for k in ("lost_events", "lost_meta", "lost_summary",
                                                             "missed_runs"))
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
    trace = Trace(meta, records[EVENTS], dtypes[EVENTS], records[FACTS], ops, meta_kinds, text, counters, lost)
    trace.stored_bytes = {"header": HEADER.size, **stored}
    _attach_device_view(trace, records, samples)
    trace.summary = summary   # --summary traces: the kernel's aggregates; None otherwise
    return trace


def _summary_rows(payload) -> np.ndarray:
    (size,) = _SUMMARY_HEAD.unpack_from(payload)
    fields = json.loads(bytes(payload[_SUMMARY_HEAD.size:_SUMMARY_HEAD.size + size]))
    dtype = np.dtype([(name, kind, tuple(shape)) if shape else (name, kind) for name, kind, shape in fields])
    return np.frombuffer(payload[_SUMMARY_HEAD.size + size:], dtype=dtype)


def _sample(payload) -> dict:
    """A SAMPLES chunk: /proc/diskstats and /proc/stat at one moment; ValueError when it does not parse."""
    sample = json.loads(bytes(payload))
    if not isinstance(sample, dict):
        raise ValueError("a SAMPLES chunk is not a JSON object")
    return sample


def _attach_device_view(trace: Trace, records: dict, samples: list) -> None:
    for kind, name, key in ((BLOCK, "block", "complete_ns"), (OFFCPU, "offcpu", "off_ns")):
        if kind in records:
            setattr(trace, name, records[kind][np.argsort(records[kind][key], kind="stable")])
    trace.samples = tuple(samples)


def _spoken(numbers) -> str:
    """(1, 2, 3) -> '1, 2 and 3'."""
    words = [str(n) for n in numbers]
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


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


def export_parquet(trace: Trace, out_path) -> None:
    """Write the events table to Parquet, with the trace metadata under the key b"iowitness"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(trace.events, preserve_index=False)
    metadata = {**(table.schema.metadata or {}), b"iowitness": _json(trace.meta)}
    try:
        pq.write_table(table.replace_schema_metadata(metadata), str(out_path))
    except OSError as exc:
        reason = exc.strerror or str(exc).splitlines()[0]
        message = f"cannot write {out_path}: {reason}; choose another output path"
        raise OutputError(message) from None
