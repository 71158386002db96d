"""What a trace holds, at a glance: processes, files, and per-syscall counts, bytes, latency.

This is the view `iowitness show` prints. It needs only a loaded trace, never the kernel.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness import units
from iowitness.analysis.measure import observer
from iowitness.analysis.phasing.phases import FAULTS, READS, WRITES
from iowitness.analysis.read import aggregates, printed
from iowitness.analysis.report import unseen
from iowitness.escape import terminal
from iowitness.reporters import tables

PERCENTILES = (50, 90, 99, 99.9)
DATA_SYSCALLS = set(READS) | set(WRITES)


def syscall_table(events: pd.DataFrame) -> pd.DataFrame:
    """One row per syscall name: calls, errors, bytes done, latency percentiles in µs."""
    rows = []
    for name, group in events.groupby("syscall", observed=True, sort=False):
        latency_us = group["latency_ns"].to_numpy(dtype=np.float64) / 1e3
        if name in FAULTS:   # the kernel marks a fault's entry only: no latency to show
            latency_us = np.full(len(group), np.nan)
        ret = group["ret"].to_numpy()
        is_data = name in DATA_SYSCALLS
        # a fault returns nothing: what it moved is what it mapped
        moved = int(group["requested"].to_numpy().astype(np.int64).sum()) if name in FAULTS else \
            int(ret[ret > 0].sum()) if is_data else 0
        row = {
            "syscall": name,
            "calls": len(group),
            "errors": int((ret < 0).sum()),
            "bytes": moved,
            "short": int(((ret >= 0) & (ret < group["requested"].to_numpy().astype(np.int64))).sum())
            if is_data else 0,
            "min_us": latency_us.min(),
            "mean_us": latency_us.mean(),
        }
        for p in PERCENTILES:
            row[f"p{p:g}_us"] = np.percentile(latency_us, p)
        row["max_us"] = latency_us.max()
        rows.append(row)
    table = pd.DataFrame(rows)
    return table.sort_values("calls", ascending=False, kind="stable").reset_index(drop=True) if rows else table


def file_table(events: pd.DataFrame) -> pd.DataFrame:
    """One row per target file: calls, bytes read and written."""
    if events.empty:
        return pd.DataFrame(columns=["path", "calls", "read_bytes", "written_bytes"])
    name = events["syscall"].astype(str)
    ret = events["ret"].clip(lower=0).where(~name.isin(FAULTS), events["requested"].astype(np.int64))
    reads = name.isin(READS + ("fault_read",))
    writes = name.isin(WRITES + ("fault_write",))
    frame = pd.DataFrame({"path": events["path"].astype(str), "read_bytes": ret.where(reads, 0),
                          "written_bytes": ret.where(writes, 0)})
    table = frame.groupby("path", sort=False).agg(calls=("path", "size"), read_bytes=("read_bytes", "sum"),
                                                  written_bytes=("written_bytes", "sum"))
    return table.reset_index()


def process_table(events: pd.DataFrame, processes: pd.DataFrame) -> pd.DataFrame:
    """One row per process seen in events: threads, calls, and its name where known."""
    if events.empty:
        return pd.DataFrame(columns=["tgid", "threads", "calls", "comm"])
    table = events.groupby("tgid").agg(threads=("tid", "nunique"), calls=("tid", "size")).reset_index()
    names = {}
    if not processes.empty:
        for row in processes.itertuples():
            names[int(row.tgid)] = row.comm
    table["comm"] = [names.get(int(t), "") for t in table["tgid"]]
    return table


def render(trace) -> str:
    """The text of `show`; `trace` is loaded (analysis/read/run.py) or streamed (analysis/read/streamed.py:
    the same tables from aggregates made block by block)."""
    meta = trace.meta
    if hasattr(trace, "show_tables"):
        streamed = trace.show_tables()
        count, processes, files, calls = (trace.event_count, streamed.process_table(trace.processes),
                                          streamed.file_table(), streamed.syscall_table())
    else:
        events = trace.events
        count, processes, files, calls = (len(events), process_table(events, trace.processes), file_table(events),
                                          syscall_table(events))
    lines = []
    command = " ".join(meta.get("command") or []) or f"attach ({meta.get('mode', '?')})"
    duration = (meta.get("clock_end", {}).get("monotonic_ns", 0) - meta["clock_start"]["monotonic_ns"]) / 1e9 \
        if meta.get("clock_end") else None
    # names from the trace: each line escaped whole, so a newline in one stays on its line
    lines.append(terminal(f"trace     {meta.get('path')}"))
    lines.append(terminal(f"command   {command}"))
    lines.append(terminal(f"host      {meta.get('host')}  kernel {meta.get('kernel')}"))
    lines += [terminal(f"WARNING   {note}") for note in tables.integrity_notes(meta)]
    lines.append(terminal(f"recorded  {units.seconds(duration) if duration is not None else '?'}  {tables.status(meta)}"
                          + (f", exit code {meta['exit_code']}" if meta.get("exit_code") is not None else "")
                          + (f", stopped: {meta['stop_reason']}" if meta.get("stop_reason") else "")))
    lost = tables.lost_figure(trace)
    if trace.summary is not None:
        lines.append(f"mode      summary (in-kernel aggregates, no record per call)   lost {lost}")
    else:
        lines.append(f"events    {count:,}   lost {lost}" + ("" if not trace.lost else
                     "   (the trace misses calls: re-run with a larger --ring-buffer-mb)"))
    lines.append(observer.line(trace))
    timeline = printed.timeline_summary(trace)
    if timeline:
        lines.append(terminal(timeline.replace("output: ", "output    ", 1)))
    blind = unseen(trace)
    if blind:
        lines.append(terminal(f"WARNING   {blind}"))
    lines.append("")
    if trace.summary is not None:
        return "\n".join(lines + [_aggregate_tables(trace)])
    lines.append(units.table(processes, {"tgid": "pid"}, title="processes"))
    lines.append("")
    files["read_bytes"] = files["read_bytes"].map(units.bytes_)
    files["written_bytes"] = files["written_bytes"].map(units.bytes_)
    lines.append(units.table(files, {"read_bytes": "read", "written_bytes": "written"}, title="files"))
    lines.append("")
    if not calls.empty:
        calls["bytes"] = calls["bytes"].map(units.bytes_)
        for col in [c for c in calls.columns if c.endswith("_us")]:
            calls[col] = calls[col].map(units.micros)
    lines.append(units.table(calls, {c: c.replace("_us", " µs") for c in calls.columns}, title="syscalls"))
    driving = tables.async_calls_line(trace.counters)
    if driving:
        lines.append(f"asynchronous I/O driven by (counted, not recorded): {driving}")
    return "\n".join(lines)


def _aggregate_tables(trace) -> str:
    """show for a --summary trace: the same tables, from the kernel's aggregates."""
    frame = aggregates.rows(trace)
    lines = [units.table(aggregates.process_table(frame), {"tgid": "pid"}, title="processes"), ""]
    files = aggregates.file_table(frame)
    files["read_bytes"] = files["read_bytes"].map(units.bytes_)
    files["written_bytes"] = files["written_bytes"].map(units.bytes_)
    lines += [units.table(files, {"read_bytes": "read", "written_bytes": "written"}, title="files"), ""]
    calls = aggregates.syscall_table(frame)
    if not calls.empty:
        calls["bytes"] = calls["bytes"].map(units.bytes_)
        for col in [c for c in calls.columns if c.endswith("_us")]:
            calls[col] = calls[col].map(units.micros)
    headers = {"mean_us": "mean µs", "p50_max_us": "p50 ≤ µs", "p99_max_us": "p99 ≤ µs", "max_us": "max µs"}
    lines.append(units.table(calls, headers, title="syscalls (percentiles: upper edge of their log2 bin)"))
    return "\n".join(lines)
