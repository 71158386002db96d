"""The saved trace (.iwt): a versioned, self-describing file that survives its writer's death.

Layout, byte by byte, in docs/trace-format.md. In short: a 16-byte header (magic, format
version) and then chunks, each `kind, crc32, length, payload`. The writer only ever appends
whole chunks, so whatever a SIGKILL leaves behind is a run of good chunks plus at most one
torn one; the reader keeps the good run and reports the rest as `truncated_bytes`.

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

from iowitness.collector.mounts import dev_name
from iowitness.errors import BadTrace, OutputError

if TYPE_CHECKING:
    import pandas as pd
from iowitness.probes.layout import Layout, layout

MAGIC = b"IOWTRACE"
FORMAT_VERSION = 1
HEADER = struct.Struct("<8sII")        # magic, format version, reserved (0)
CHUNK = struct.Struct("<IIQ")          # kind, crc32 of payload, payload length

START, EVENTS, FACTS, OUTPUT, COUNTERS, END = 1, 2, 3, 4, 5, 6
# --summary traces: the kernel's aggregates (collector/aggregates.py), a self-describing
# snapshot: u32 length of a JSON dtype description, the description, then the rows; the
# last SUMMARY chunk of a trace holds the totals of the run
SUMMARY = 7
_SUMMARY_HEAD = struct.Struct("<I")
STREAMS = {"stdout": 1, "stderr": 2}

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


class TraceWriter:
    """Appends chunks to a new .iwt file. Safe to call from several threads."""

    def __init__(self, path, start_meta: dict):
        self.path = str(path)
        lay = layout()
        self._event, self._meta = lay.event, lay.meta
        # the collector's ring-buffer reader and its output pumps share one writer
        self._lock = threading.Lock()
        self._closed = False
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
        self._chunk(EVENTS, self._bytes_of(records, self._event))

    def write_facts(self, records) -> None:
        """One FACTS chunk: an array of layout().meta, or the raw bytes of such records."""
        self._chunk(FACTS, self._bytes_of(records, self._meta))

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
        """Hand buffered chunks to the kernel: from then on they survive a SIGKILL."""
        with self._lock:
            self._guard(self._file.flush)

    def close(self, end_meta: dict) -> None:
        """Write END, the mark of a complete trace, and close."""
        if not self._closed:
            try:
                self._chunk(END, _json(end_meta))
            finally:
                self.abort()

    def abort(self) -> None:
        """Close without END: the trace will read as incomplete, with all it holds so far."""
        with self._lock:
            if self._closed:
                return
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
    def _bytes_of(records, dtype: np.dtype):
        if isinstance(records, np.ndarray):
            if records.dtype != dtype:
                raise TypeError(f"records have dtype {records.dtype}, expected {dtype}")
            return np.ascontiguousarray(records).view(np.uint8)
        view = memoryview(records).cast("B")
        if len(view) % dtype.itemsize:
            raise ValueError(f"{len(view)} bytes are not whole {dtype.itemsize}-byte records")
        return view

    def _chunk(self, kind: int, payload) -> None:
        if len(payload) == 0 and kind in (EVENTS, FACTS):
            return
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

    summary = None   # --summary traces: the kernel's aggregates (set by load)

    def __init__(self, meta, raw, facts, ops, meta_kinds, output, counters, lost):
        self.meta, self.output, self.counters, self.lost = meta, output, counters, lost
        self._ops, self._meta_kinds, self._facts = ops, meta_kinds, facts
        # several CPUs fill the ring at once: record order is only roughly time order
        starts = raw["start_ns"]
        if len(raw) > 1 and np.any(starts[1:] < starts[:-1]):
            raw = raw[np.argsort(starts, kind="stable")]
        self._raw = raw

    def raw_events(self) -> np.ndarray:
        """The event records as a numpy structured array, row for row as `events`."""
        return self._raw

    @cached_property
    def events(self) -> pd.DataFrame:
        import pandas as pd  # lazily: the collector never needs it
        raw = self._raw
        columns = {}
        for name in raw.dtype.names:
            if not name.startswith("pad"):
                column = raw[name]
                columns[name] = [_text(v) for v in column] if column.ndim > 1 else column
        # copy=False: each column stays its own block instead of being copied into 2-D blocks
        frame = _event_table_class()(columns, index=pd.RangeIndex(len(raw)), copy=False)
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
            # first path of each file: enough unless a file had several
            first = pd.Series(file_code).groupby(file_key).first()
            codes = first.reindex(key).fillna(-1).to_numpy(np.int64, copy=True)
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
    if version != FORMAT_VERSION:
        from iowitness import __version__
        raise BadTrace(f"{path} is trace format version {version}, but iowitness {__version__} "
                       f"reads version {FORMAT_VERSION} only; open it with the iowitness that "
                       "wrote it")

    chunks, good_end = _good_chunks(data)
    try:
        if not chunks or chunks[0][1] != START:
            raise BadTrace(f"{path} has no readable START chunk; it cannot be read, trace again")
        start = json.loads(bytes(chunks[0][2]))
        lay = start["layout"]
        event_dtype = dtype_from(lay["event"], _EVENT_NEEDS)
        meta_dtype = dtype_from(lay["meta"], _META_NEEDS)
        ops = {int(k): str(v) for k, v in lay["ops"].items()}
        meta_kinds = {int(k): str(v) for k, v in lay["meta_kinds"].items()}
        for target in start.get("targets", []):
            int(target["dev"]), int(target["ino"]), str(target["path"])   # checked here, used later
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadTrace(f"{path} has a broken START chunk ({exc}); it cannot be read") from None

    events, facts, end, counters, lost, summary = [], [], None, {}, 0, None
    output = {name: [] for name in STREAMS}
    stream_of = {number: name for name, number in STREAMS.items()}
    for at, kind, payload in chunks[1:]:
        # a chunk whose CRC holds but whose content does not parse ends the reading, as a bad CRC
        try:
            if kind == EVENTS:
                events.append(np.frombuffer(payload, event_dtype))
            elif kind == FACTS:
                facts.append(np.frombuffer(payload, meta_dtype))
            elif kind == OUTPUT and len(payload) and payload[0] in stream_of:
                output[stream_of[payload[0]]].append(bytes(payload[1:]))
            elif kind == COUNTERS:
                counters = dict(json.loads(bytes(payload)))
                lost = int(counters.get("lost_events", 0)) + int(counters.get("lost_meta", 0)) \
                    + int(counters.get("lost_summary", 0))
            elif kind == END:
                end = dict(json.loads(bytes(payload)))
            elif kind == SUMMARY:
                summary = _summary_rows(payload)
            # any other kind comes from a newer writer of the same format: skipped on purpose
        except (ValueError, TypeError):
            good_end = at
            break

    meta = {**start, **(end or {}), "complete": end is not None,
            "truncated_bytes": len(data) - good_end, "path": str(path)}
    text = {name: b"".join(parts).decode("utf-8", errors="replace")
            for name, parts in output.items()}
    raw = np.concatenate(events) if events else np.empty(0, event_dtype)
    fact_records = np.concatenate(facts) if facts else np.empty(0, meta_dtype)
    trace = Trace(meta, raw, fact_records, ops, meta_kinds, text, counters, lost)
    trace.summary = summary   # --summary traces: the kernel's aggregates; None otherwise
    return trace


def _summary_rows(payload) -> np.ndarray:
    (size,) = _SUMMARY_HEAD.unpack_from(payload)
    fields = json.loads(bytes(payload[_SUMMARY_HEAD.size:_SUMMARY_HEAD.size + size]))
    dtype = np.dtype([(name, kind, tuple(shape)) if shape else (name, kind) for name, kind, shape in fields])
    return np.frombuffer(payload[_SUMMARY_HEAD.size + size:], dtype=dtype)


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
