"""Many runs as one Parquet dataset: what DuckDB (embedded) and Spark (a cluster) read as they are.

    DIR/runs/benchmark=fio/<run_id>.parquet       one row per run: host, command, wall-clock start, ...
    DIR/events/benchmark=fio/<run_id>.parquet     one row per call, with its phase
    DIR/phases/benchmark=fio/<run_id>.parquet     the report's phase table
    DIR/verdicts/benchmark=fio/<run_id>.parquet   one row per claim judged
    DIR/device/benchmark=fio/<run_id>.parquet     the device view per phase

Why this shape:
- One file per run and table, so that adding runs to a dataset is writing new files (a sweep
  exports as it goes), and exporting a run again replaces its own files: the run id is made
  from what the run was (host, wall-clock start, PID, command), not from the file's name.
- Hive partitions by benchmark (iozone, fio, dd, ..., "other"): names from a fixed list, so
  no escaping questions, and a query about one benchmark skips the others' files. The host is
  a column, not a partition: host names are free text.
- Every file of a table has the same column types, whatever the run held (Spark reads one
  file's schema for all): unsigned kernel numbers become signed 64-bit, text is string, and a
  table with no row for a run is still written for runs and verdicts (fixed schemas) and left
  out for the others (no file: no rows).
- Times: the trace's monotonic nanoseconds stay as signed 64-bit integers (differences never
  wrap, never round), and each gets its wall-clock twin: `*_wall_ns` (integer nanoseconds
  since the epoch) and a microsecond `*_time` timestamp in UTC, the finest unit Spark reads.

Built on the public Trace and Report objects only (load, report(), events, phases, device),
so a streaming report feeds it unchanged. The events table is also written block by block
(events_blocks into write_run: a row group per block, the same file as from one frame), so a
trace of any size exports with memory bounded by a block.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from iowitness.errors import OutputError, UsageError
from iowitness.outputfile import Output, make_folder
from iowitness.safepath import Refused

TABLES = ("runs", "events", "phases", "verdicts", "device")
SCHEMA_VERSION = 1   # of the dataset's tables; in each file's key-value metadata "iowitness_dataset"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def clock_offset_ns(meta: dict) -> int | None:
    """Wall clock minus the trace's monotonic clock, as measured when recording began."""
    start = meta.get("clock_start") or {}
    offset = start.get("offset_ns")
    if isinstance(offset, int):
        return offset
    if isinstance(start.get("realtime_ns"), int) and isinstance(start.get("monotonic_ns"), int):
        return start["realtime_ns"] - start["monotonic_ns"]
    return None


def run_id(meta: dict) -> str:
    """A name for the run that is the same each time it is exported: its UTC start, host and a hash."""
    start = (meta.get("clock_start") or {}).get("realtime_ns")
    when = (datetime.fromtimestamp(start / 1e9, timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            if isinstance(start, int) else "unknown-time")
    identity = json.dumps([meta.get("host"), start, meta.get("pid"), meta.get("command"), meta.get("attached")],
                          sort_keys=True, default=str)
    host = _SAFE.sub("_", str(meta.get("host") or "host"))[:32]
    return f"{when}-{host}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}"


def benchmark_of(report) -> str:
    return _SAFE.sub("_", report.benchmark) if report.benchmark else "other"


def _signed(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "u":
        return values.astype(np.int64)   # kernel counts and times are far below 2^63
    if values.dtype.kind == "i":
        return values.astype(np.int64)
    return values


def _plain(frame: pd.DataFrame, floats: bool = False) -> pd.DataFrame:
    """One type per kind of column, whatever pandas inferred: int64, float64, bool or string;
    column names Spark selects without quoting (lat_p99.9_us -> lat_p99_9_us). `floats`: every
    number but the phase number as float64, for a table whose integer columns become floats
    (NaN) in a run without their data, so that every run's file has the same types."""
    out = {}
    for name, column in frame.items():
        key = str(name).replace(".", "_")
        kind = column.dtype.kind
        if floats and key != "phase" and (kind in "iuf" or isinstance(column.dtype, pd.api.extensions.ExtensionDtype)
                                          and pd.api.types.is_numeric_dtype(column.dtype)
                                          and not pd.api.types.is_bool_dtype(column.dtype)):
            out[key] = pd.to_numeric(column, errors="coerce").astype(np.float64).to_numpy()
        elif kind in "iu":
            out[key] = _signed(column.to_numpy())
        elif kind == "f":
            out[key] = column.to_numpy(np.float64)
        elif kind == "b":
            out[key] = column.to_numpy(bool)
        elif isinstance(column.dtype, pd.BooleanDtype):
            out[key] = column.astype("boolean")
        elif isinstance(column.dtype, (pd.Int64Dtype, pd.UInt32Dtype, pd.UInt64Dtype, pd.Int32Dtype)):
            out[key] = column.astype("Int64")
        else:
            out[key] = column.astype("string")
    return pd.DataFrame(out, index=pd.RangeIndex(len(frame)))


def _wall(frame: pd.DataFrame, column: str, offset: int | None, stem: str) -> None:
    """Add the wall-clock twins of a monotonic-ns column: STEM_wall_ns and STEM_time."""
    mono = frame[column].to_numpy(np.int64)
    if offset is None:
        frame[f"{stem}_wall_ns"] = pd.array([None] * len(frame), dtype="Int64")
        frame[f"{stem}_time"] = pd.Series([pd.NaT] * len(frame), dtype="datetime64[us, UTC]")
        return
    wall = mono + np.int64(offset)
    frame[f"{stem}_wall_ns"] = wall
    frame[f"{stem}_time"] = pd.to_datetime(wall // 1000, unit="us", utc=True).astype("datetime64[us, UTC]")


def _identify(frame: pd.DataFrame, rid: str, host: str) -> pd.DataFrame:
    frame.insert(0, "run_id", pd.array([rid] * len(frame), dtype="string"))
    frame.insert(1, "host", pd.array([host] * len(frame), dtype="string"))
    return frame


def runs_table(trace, report, rid: str, verdicts) -> pd.DataFrame:
    meta = trace.meta
    start, end = meta.get("clock_start") or {}, meta.get("clock_end") or {}
    files = [f for f in meta.get("files") or [] if isinstance(f, dict)]
    offset = clock_offset_ns(meta)
    row = {
        "trace": str(meta.get("path") or ""),
        "command": " ".join(str(w) for w in meta.get("command") or []),
        "mode": str(meta.get("mode") or ""),
        "kernel": str(meta.get("kernel") or ""),
        "file_systems": ",".join(sorted({str(f["fs_type"]) for f in files if f.get("fs_type")})),
        "devices": ",".join(sorted({str(f.get("block_device") or f.get("device")) for f in files
                                    if f.get("block_device") or f.get("device")})),
        "start_ns": int(start.get("monotonic_ns") or 0),
        "end_ns": int(end.get("monotonic_ns") or start.get("monotonic_ns") or 0),
        "events": int(trace.event_count), "lost_events": int(trace.lost),
        "phases": int(len(report.phases)), "claims": len(verdicts or []),
        "disagreeing": sum(1 for v in verdicts or [] if v.verdict == "disagrees"),
        "complete": bool(meta.get("complete")), "exit_code": meta.get("exit_code"),
        "iowitness_version": str(meta.get("iowitness_version") or ""),
    }
    frame = pd.DataFrame([row]).astype({"exit_code": "Int64"})
    frame["duration_s"] = (frame["end_ns"] - frame["start_ns"]) / 1e9
    _wall(frame, "start_ns", offset, "start")
    _wall(frame, "end_ns", offset, "end")
    return frame


def _file_systems(meta: dict) -> tuple[dict[int, str], dict[str, str]]:
    """The file system type of each target file, by device number and by path (from the trace's
    metadata: where each file lived when recording began or when it was created)."""
    files = [f for f in meta.get("files") or [] if isinstance(f, dict) and f.get("fs_type")]
    by_dev = {int(f["dev"]): str(f["fs_type"]) for f in files if isinstance(f.get("dev"), int)}
    by_path = {str(f["path"]): str(f["fs_type"]) for f in files if f.get("path")}
    return by_dev, by_path


def events_rows(events: pd.DataFrame, assigned: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """The rows of events_table for some consecutive rows of the events and of the phase assignment's
    result (the whole table, or one block of a streamed one), indexed as `events` is: every
    column a plain type (_plain), so blocks whose categories differ give the same types."""
    columns = pd.DataFrame({name: events[name] for name in events.columns})
    columns.index = pd.RangeIndex(len(columns))   # _plain and _wall build on row positions
    frame = _plain(columns)
    frame["phase"] = assigned["phase"].to_numpy(np.int64)
    by_dev, _ = _file_systems(meta)
    frame["fs_type"] = pd.array(pd.Series(events["dev"].to_numpy()).map(by_dev), dtype="string")
    _wall(frame, "start_ns", clock_offset_ns(meta), "start")
    frame.index = events.index
    return frame


def events_blocks(blocks, meta: dict):
    """The events table of a run as write_run takes it streamed: per (events, assigned) block
    (stream_assign's blocks(), or slices of the in-memory ones), its rows with the run's id and host."""
    rid, host = run_id(meta), str(meta.get("host") or "")
    for events, assigned in blocks:
        yield _identify(events_rows(events, assigned, meta), rid, host)


def phases_table(trace, report) -> pd.DataFrame:
    frame = _plain(report.phases)
    _, by_path = _file_systems(trace.meta)
    frame["fs_type"] = pd.array(frame["path"].map(by_path), dtype="string")
    offset = clock_offset_ns(trace.meta)
    for column, stem in (("first_ns", "first"), ("last_ns", "last")):
        if column in frame:
            _wall(frame, column, offset, stem)
    return frame


VERDICT_COLUMNS = {"claim_index": "Int64", "test": "string", "source": "string", "scope": "string",
                   "direction": "string", "claim_value": "float64", "claim_unit": "string", "printed": "string",
                   "claim_Bps": "float64", "record_size": "Int64", "file_size": "Int64", "job": "string",
                   "phase": "Int64", "phases": "string", "verdict": "string", "kind": "string", "window": "string",
                   "active": "float64", "ratio": "float64", "reasons": "string", "figures": "string"}


def verdicts_table(verdicts) -> pd.DataFrame:
    rows = []
    for v in verdicts or []:
        c = v.claim
        active = v.figures.get(v.window) if v.figures else None
        rows.append({"claim_index": c.index, "test": c.test, "source": c.source, "scope": c.scope,
                     "direction": c.direction, "claim_value": c.value, "claim_unit": c.unit, "printed": c.printed,
                     "claim_Bps": c.bytes_per_s, "record_size": c.record_size, "file_size": c.file_size,
                     "job": c.job, "phase": v.phases[0] if v.phases else None,
                     "phases": ",".join(str(p) for p in v.phases), "verdict": v.verdict, "kind": v.kind,
                     "window": v.window, "active": active, "ratio": v.ratio, "reasons": "; ".join(v.reasons),
                     "figures": json.dumps({k: (None if x != x else x) for k, x in v.figures.items()})})
    frame = pd.DataFrame(rows, columns=list(VERDICT_COLUMNS))
    return frame.astype(VERDICT_COLUMNS)


def device_table(report) -> pd.DataFrame | None:
    table = report.device
    # a run without a device view has NaN where another has byte counts: floats in every run
    # (exact to 2^53 bytes, 8 PiB)
    return _plain(table, floats=True) if table is not None and len(table) else None


def tables_of(trace, report, verdicts) -> tuple[str, str, dict[str, pd.DataFrame]]:
    """(run id, benchmark partition, table name -> frame) for one run; a table without rows
    and without a fixed schema is left out."""
    rid, host = run_id(trace.meta), str(trace.meta.get("host") or "")
    frames = {"runs": runs_table(trace, report, rid, verdicts),
              "phases": phases_table(trace, report) if len(report.phases) else None,
              "verdicts": verdicts_table(verdicts), "device": device_table(report)}
    tables = {name: _identify(frame, rid, host) for name, frame in frames.items() if frame is not None}
    tables["events"] = events_blocks(report.event_blocks(), trace.meta)
    return rid, benchmark_of(report), tables


def _folder(path: str, mode: int) -> None:
    """Make a folder of the dataset, refusing one that is a symbolic link (it could point anywhere)."""
    if os.path.islink(path.rstrip("/") or "/"):
        raise OutputError(f"cannot write the dataset: {path} is a symbolic link, and iowitness never writes "
                          "through one; remove it or choose another directory")
    if os.path.exists(path) and not os.path.isdir(path):
        raise OutputError(f"cannot write the dataset: {path} exists and is not a directory; choose another one")
    try:
        make_folder(path, mode | (mode & 0o444) >> 2)
    except Refused as exc:
        raise OutputError(f"cannot write the dataset: {exc}; choose another directory") from None
    except OSError as exc:
        raise OutputError(f"cannot write the dataset: {path}: {exc.strerror}; choose another directory") from None


def write_run(root: str, rid: str, benchmark: str, frames: dict, mode: int) -> list[str]:
    """Write one run's tables under `root`; returns the files written. A table is a frame, or an
    iterable of frames (events_blocks: a streamed run's events), written a row group per frame
    without ever holding more than one; an iterable that gives no frame leaves its table out
    (no file: no rows; a streamed trace without events gives one empty block, hence a file
    without rows, as its in-memory frame does)."""
    written = []
    _folder(root, mode)
    for name, frame in frames.items():
        folder = os.path.join(root, name, f"benchmark={benchmark}")
        metadata = {b"iowitness_dataset": json.dumps(
            {"schema_version": SCHEMA_VERSION, "table": name, "run_id": rid}).encode()}
        if isinstance(frame, pd.DataFrame):
            produce = _whole(frame, metadata)
        else:
            blocks = iter(frame)
            first = next(blocks, None)
            if first is None:
                continue
            produce = row_groups_by_block(itertools.chain([first], blocks), metadata)
            del first   # let the writer drop it once written
        _folder(os.path.join(root, name), mode)
        _folder(folder, mode)
        path = os.path.join(folder, f"{rid}.parquet")
        Output(path, mode, what="dataset file", hint="choose another directory").write(produce)
        written.append(path)
    return written


def _arrow(frame: pd.DataFrame, schema=None):
    import pyarrow as pa

    return pa.Table.from_pandas(frame, schema=schema, preserve_index=False)


def _whole(frame: pd.DataFrame, metadata: dict):
    """produce(file) for Output.write: one frame, one write."""
    import pyarrow.parquet as pq

    table = _arrow(frame).replace_schema_metadata(metadata)
    return lambda f: pq.write_table(table, f)


def row_groups_by_block(blocks, metadata: dict):
    """produce(file) for Output.write: the frames of `blocks` (an iterator that gives at least
    one) a row group each, in the schema the first one has (the in-memory frame's: every column
    of a plain type, _plain) with the metadata _whole gives; a frame that does not fit that
    schema fails the file (pyarrow's error). One block is held at a time."""
    import pyarrow.parquet as pq

    def produce(f) -> None:
        writer = schema = None
        try:
            for block in blocks:
                table = _arrow(block, schema)
                del block
                if writer is None:
                    schema = table.schema.remove_metadata()
                    writer = pq.ParquetWriter(f, schema.with_metadata(metadata))
                if len(table):
                    writer.write_table(table, row_group_size=len(table))
        finally:
            if writer is not None:
                writer.close()
    return produce


def check_distinct(named_ids: list[tuple[str, str]]) -> None:
    """Two traces of one run (a copy) would overwrite each other's files: say so before writing."""
    seen: dict[str, str] = {}
    for path, rid in named_ids:
        if rid in seen:
            raise UsageError(f"{seen[rid]} and {path} are the same run ({rid}): give each trace once")
        seen[rid] = path
