"""`iowitness report` of a --summary trace: phases from the kernel's aggregates, with what is
missing said plainly (text, JSON and CSV)."""

from __future__ import annotations

import json
import os

import pandas as pd

from iowitness import escape, units
from iowitness.analysis.measure import observer
from iowitness.analysis.read import aggregates
from iowitness.collector.format.traceformat import not_followed
from iowitness.reporters import tables
from iowitness.reporters.machine import SCHEMA_VERSION, _records


def _phases(trace) -> pd.DataFrame:
    return aggregates.phase_table(aggregates.rows(trace))


def render(trace) -> str:
    phases = _phases(trace)
    parts = [escape.terminal(f"trace {trace.meta.get('path')}   mode: summary (in-kernel aggregates)   "
                             f"lost events: {tables.lost_figure(trace)}"), observer.line(trace)]
    if trace.lost:
        parts.append(f"WARNING: {trace.lost} calls could not be counted; phases may miss calls")
    if not_followed(trace.counters):
        parts.append(f"WARNING: the probe could not follow everything ({trace.missing}); phases may miss calls")
    if phases.empty:
        parts.append("no phases: the trace holds no read or write calls on target files")
    else:
        rows = [{"#": r.phase, "operation": r.operation, "file": os.path.basename(r.path), "pid": r.tgid,
                 "record": units.bytes_(r.record_size), "bytes": units.bytes_(r.bytes), "ops": r.calls,
                 "sequential": f"{r.sequential_share:.0%}", "time": units.seconds((r.last_ns - r.first_ns) / 1e9),
                 "wall": units.rate(r.wall_Bps), "busy": units.rate(r.busy_Bps),
                 "mean µs": units.micros(r.mean_us), "p50 ≤ µs": units.micros(r.p50_max_us),
                 "p99 ≤ µs": units.micros(r.p99_max_us), "max µs": units.micros(r.max_us),
                 "fsync": f"{r.fsyncs} / {units.seconds(r.fsync_ns / 1e9)}" if r.fsyncs else ""}
                for r in phases.itertuples()]
        parts += ["", units.table(pd.DataFrame(rows), title="phases (a phase ends at each open, close, fsync)")]
    parts += ["", "not available in summary mode (re-record without --summary for them):"]
    parts += [f"  - {what}" for what in aggregates.UNAVAILABLE]
    return "\n".join(parts)


def to_json(trace) -> str:
    """report --json of a --summary trace: report --json's version, as one schema describes both
    (docs/schema/report.schema.json; "mode": "summary" tells them apart)."""
    return json.dumps({"schema_version": SCHEMA_VERSION, "trace": trace.meta.get("path"),
                       "command": trace.meta.get("command"), "mode": "summary", "lost_events": int(trace.lost),
                       "not_followed": not_followed(trace.counters), "complete": trace.meta.get("complete"),
                       "warnings": tables.warnings(trace),
                       "observer": observer.cost(trace), "phases": _records(_phases(trace)),
                       "unavailable": aggregates.UNAVAILABLE}, indent=2)


def to_csv(trace) -> str:
    return escape.csv(_phases(trace))
