"""Runs read back from a Parquet dataset (analysis/runs/dataset.py), chosen by a selection, for compare.

A selection is the dataset's directory, alone (every run in it) or followed by conditions on
the columns of its runs table in brackets, joined by commas (all must hold):

    sweep/                                   every run
    'sweep[host=node-a]'                     the runs of one host
    'sweep[benchmark=fio,command=*bs=4k*]'   a glob (* ? [..]) on a text column
    'sweep[host=a|b]'                        either value
    'sweep[start_time>=2026-11-27T10:00]'    a time (UTC unless it says otherwise), a number

Operators: = and != (a glob, or one of several values split by |), < <= > >= (numbers and
times). The keys are the runs table's columns (docs/dataset.md): benchmark, host, run_id,
command, kernel, file_systems, devices, mode, trace, events, phases, start_time, ...

A run comes back as compare takes one: a trace-like object (its metadata, from the runs
table), a report-like one (its phase table, from the phases table, under the report's own
column names) and its verdicts (from the verdicts table): the figures compare of groups
uses are the ones the export wrote, so the traces need not be at hand. The dataset holds no
events: what needs them (charts of calls) is not available from it.
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import re
from dataclasses import dataclass, field
from types import SimpleNamespace

import pandas as pd

from iowitness.errors import UsageError

_SELECTION = re.compile(r"^(?P<dir>.*?)/?\[(?P<where>.*)\]$", re.S)
_CONDITION = re.compile(r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op>!=|<=|>=|=|<|>)\s*(?P<value>.*?)\s*$", re.S)
# a comma starts a new condition only where KEY OP follows: a glob may hold commas
_SPLIT = re.compile(r",(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*(?:!=|<=|>=|=|<|>))")
_TIME_KEYS = ("start_time", "end_time")
EXAMPLE = "e.g. 'sweep[host=node-a]' or 'sweep[benchmark=fio,start_time>=2026-11-27T10:00]'"


@dataclass(frozen=True)
class Selection:
    text: str                       # as the user wrote it
    root: str                       # the dataset's directory
    conditions: tuple = ()          # (key, op, value) each


def is_dataset(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "runs"))


def parse(text: str) -> Selection | None:
    """The selection `text` names, or None when it is no dataset (a trace, or a glob of them).
    A directory that is no dataset, and a malformed condition, are UsageErrors."""
    match = _SELECTION.match(text)
    root = match["dir"] if match else text
    if not match and not os.path.isdir(text):
        return None
    if match and not os.path.isdir(root or "."):
        if os.path.exists(text) or not re.search(r"[=<>]", match["where"]):
            return None    # a trace whose name ends in brackets, or a glob's [...]
        raise UsageError(f"{text!r}: {root!r} is not a directory: a dataset selection is DIR[KEY=VALUE,...], "
                         f"{EXAMPLE}")
    if not is_dataset(root or "."):
        raise UsageError(f"{text!r}: {root or '.'} is a directory but not a Parquet dataset (no runs/ in it; "
                         "write one with iowitness export --parquet DIR TRACE...)")
    conditions = []
    for part in _SPLIT.split(match["where"]) if match and match["where"].strip() else []:
        cond = _CONDITION.match(part)
        if not cond or not cond["value"]:
            raise UsageError(f"{text!r}: {part.strip()!r} is not KEY=VALUE (or != < <= > >=); {EXAMPLE}")
        conditions.append((cond["key"], cond["op"], cond["value"]))
    return Selection(text, root or ".", tuple(conditions))


def _runs_table(root: str) -> pd.DataFrame:
    import pyarrow.dataset as ds

    try:
        table = ds.dataset(os.path.join(root, "runs"), format="parquet", partitioning="hive").to_table()
    except Exception as exc:   # pyarrow says what is wrong with which file
        raise UsageError(f"cannot read the dataset {root}: {str(exc).splitlines()[0]}") from None
    frame = table.to_pandas()
    if "benchmark" in frame:
        frame["benchmark"] = frame["benchmark"].astype("string")
    return frame


def _holds(column: pd.Series, op: str, value: str, selection: Selection, key: str) -> pd.Series:
    if op in ("=", "!="):
        if key in _TIME_KEYS or pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            numbers = _compared(column, value, selection, key)
            return column.eq(numbers) if op == "=" else column.ne(numbers)
        texts = column.astype("string").fillna("")
        options = value.split("|")
        hit = pd.Series(False, index=column.index)
        for option in options:
            hit |= texts.map(lambda s, o=option: fnmatch.fnmatchcase(s, o)).astype(bool)
        return hit if op == "=" else ~hit
    if not (key in _TIME_KEYS or pd.api.types.is_numeric_dtype(column)):
        raise UsageError(f"{selection.text!r}: {key} is text: it takes = or != (a glob), not {op}")
    bound = _compared(column, value, selection, key)
    return {"<": column.lt, "<=": column.le, ">": column.gt, ">=": column.ge}[op](bound).fillna(False)


def _compared(column: pd.Series, value: str, selection: Selection, key: str):
    if key in _TIME_KEYS:
        try:
            when = pd.Timestamp(value)
        except ValueError:
            raise UsageError(f"{selection.text!r}: {key} {value!r} is not a time; give one like "
                             "2026-11-27T10:00 (UTC) or 2026-11-27T10:00+01:00") from None
        return when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"{selection.text!r}: {key} is a number; {value!r} is not one") from None


def select(selection: Selection) -> pd.DataFrame:
    """The rows of the runs table the selection chooses, oldest first; none is a UsageError."""
    runs = _runs_table(selection.root)
    keep = pd.Series(True, index=runs.index)
    for key, op, value in selection.conditions:
        if key not in runs:
            raise UsageError(f"{selection.text!r}: no column {key!r} in the dataset's runs; the keys are "
                             f"{', '.join(runs.columns)}")
        keep &= _holds(runs[key], op, value, selection, key)
    chosen = runs[keep.to_numpy(bool)]
    if chosen.empty:
        hosts = ", ".join(sorted(runs["host"].dropna().astype(str).unique())[:6]) if "host" in runs else ""
        raise UsageError(f"{selection.text!r} selects no run ({len(runs)} runs in {selection.root}"
                         + (f"; hosts {hosts}" if hosts else "") + ")")
    return chosen.sort_values(["start_ns" if "start_wall_ns" not in chosen else "start_wall_ns", "run_id"],
                              kind="stable")


def _table(root: str, name: str, ids: list[str]) -> pd.DataFrame:
    import pyarrow.dataset as ds

    folder = os.path.join(root, name)
    if not os.path.isdir(folder):
        return pd.DataFrame({"run_id": pd.Series([], dtype="string")})
    data = ds.dataset(folder, format="parquet", partitioning="hive")
    return data.to_table(filter=ds.field("run_id").isin(ids)).to_pandas()


_DOTTED = re.compile(r"^lat_p(\d+)_(\d+)_us$")


def _report_phases(frame: pd.DataFrame) -> pd.DataFrame:
    """The dataset's phase rows under the report's column names (lat_p99_9_us -> lat_p99.9_us),
    text as plain objects (None where missing) and nullable integers as floats (NaN): what the
    compare code reads of a report's phase table."""
    out = {}
    for name, column in frame.drop(columns=["run_id", "host", "benchmark"], errors="ignore").items():
        dotted = _DOTTED.match(str(name))
        key = f"lat_p{dotted[1]}.{dotted[2]}_us" if dotted else str(name)
        if isinstance(column.dtype, pd.StringDtype) or column.dtype == object:
            out[key] = column.astype(object).where(column.notna(), None)
        elif isinstance(column.dtype, pd.api.extensions.ExtensionDtype) and key != "phase" \
                and pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype):
            out[key] = pd.to_numeric(column).astype(float)
        else:
            out[key] = column
    return pd.DataFrame(out).reset_index(drop=True)


def _figure(value):
    return float("nan") if value is None else value


def _verdicts(frame: pd.DataFrame) -> list:
    """The verdicts table's rows as compare reads a verdict: its phases, window, kind and figures."""
    out = []
    for row in frame.sort_values("claim_index", kind="stable").itertuples():
        def text(x):
            return None if x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)) else x

        figures = {k: _figure(v) for k, v in json.loads(row.figures or "{}").items()}
        claim = SimpleNamespace(index=text(row.claim_index), test=text(row.test), source=text(row.source),
                                scope=text(row.scope), direction=text(row.direction), value=text(row.claim_value),
                                unit=text(row.claim_unit), printed=text(row.printed), bytes_per_s=text(row.claim_Bps),
                                record_size=text(row.record_size), file_size=text(row.file_size), job=text(row.job),
                                extra={})
        phases = [int(p) for p in str(text(row.phases) or "").split(",") if p.strip()]
        out.append(SimpleNamespace(claim=claim, phases=phases, verdict=text(row.verdict), kind=text(row.kind),
                                   window=text(row.window), ratio=text(row.ratio),
                                   reasons=[r for r in str(text(row.reasons) or "").split("; ") if r],
                                   figures=figures))
    return out


@dataclass
class DatasetTrace:
    """What compare reads of a trace, from a row of the runs table (which keeps no counters
    beside the lost events: none is said to be missing)."""
    meta: dict
    event_count: int
    lost: int
    selection: str = ""
    counters: dict = field(default_factory=dict)
    missing: str = ""


@dataclass
class DatasetRun:
    trace: DatasetTrace
    report: SimpleNamespace
    verdicts: list = field(default_factory=list)


def _meta(row, root: str) -> dict:
    def text(name: str) -> str:
        value = getattr(row, name, None)
        return "" if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) else str(value)

    files = [{"fs_type": fs, "mount_point": "?"} for fs in text("file_systems").split(",") if fs]
    files += [{"device": dev} for dev in text("devices").split(",") if dev]
    start = {"monotonic_ns": int(row.start_ns)}
    wall = getattr(row, "start_wall_ns", None)
    if wall is not None and wall is not pd.NA and not (isinstance(wall, float) and math.isnan(wall)):
        start |= {"realtime_ns": int(wall), "offset_ns": int(wall) - int(row.start_ns)}
    exit_code = getattr(row, "exit_code", None)
    return {"path": f"{root.rstrip('/') or '/'}[run_id={row.run_id}]", "command": [text("command")] if text("command")
            else [], "host": text("host"), "kernel": text("kernel"), "mode": text("mode"), "files": files,
            "complete": bool(row.complete), "clock_start": start, "clock_end": {"monotonic_ns": int(row.end_ns)},
            "exit_code": None if exit_code is None or exit_code is pd.NA else int(exit_code),
            "iowitness_version": text("iowitness_version"), "run_id": str(row.run_id)}


def runs(selection: Selection) -> list[DatasetRun]:
    """The runs the selection chooses, oldest first, each with its phases and verdicts."""
    chosen = select(selection)
    ids = [str(i) for i in chosen["run_id"]]
    phases, verdicts = _table(selection.root, "phases", ids), _table(selection.root, "verdicts", ids)
    out = []
    for row in chosen.itertuples():
        rid = str(row.run_id)
        own = phases[phases["run_id"] == rid] if len(phases) else phases
        table = _report_phases(own) if len(own) else pd.DataFrame({"phase": [], "name": [], "benchmark_name": [],
                                                                   "data_first_ns": []})
        benchmark = str(row.benchmark) if getattr(row, "benchmark", None) not in (None, "other") else None
        report = SimpleNamespace(phases=table, benchmark=benchmark)
        trace = DatasetTrace(_meta(row, selection.root), int(row.events), int(row.lost_events), selection.text)
        mine = verdicts[verdicts["run_id"] == rid] if len(verdicts) else verdicts
        out.append(DatasetRun(trace, report, _verdicts(mine) if len(mine) else []))
    return out
