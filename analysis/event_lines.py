"""One text line per recorded call, as `perf script` and strace print them: `show --events`.

    process   pid/tid     time (s)  call      fd        offset      asked     result  latency (µs)  phase  file
    dd        4242/4242   0.001204  write      1             0    1048576    1048576         812.4      2  /mnt/t/out

time: seconds since the recording began (the trace's clock_start; its first event when it has
none); offset: where a read or write began (the file position for read/write, the explicit
offset for p* calls), "-" for calls that have none; asked: bytes asked for (lseek: the offset
argument); result: bytes done, or the error's name (-ENOSPC); phase: the phase the call is
counted in (analysis/phases.py), "-" for none. Filters (select) keep calls of some phases,
files, syscalls or processes; the lines come in time order, in chunks, so that a trace of
millions of calls starts printing at once and never holds all its lines in memory.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator

import numpy as np
import pandas as pd

from iowitness.errors import UsageError
from iowitness.escape import terminal
from iowitness.probes.layout import layout

CHUNK = 50_000
HEADER = (f"{'process':<15} {'pid/tid':>13} {'time (s)':>12}  {'call':<12} {'fd':>4} {'offset':>13} "
          f"{'asked':>10} {'result':>10} {'latency (µs)':>13} {'phase':>6}  file")
# calls whose record's offset is a file position worth showing
_OFFSET_CALLS = ("read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2",
                 "pwritev2", "fault_read", "fault_write", "fallocate")


def select(trace, phases: list[int] | None = None, files: list[str] | None = None,
           syscalls: list[str] | None = None, pids: list[int] | None = None) -> np.ndarray:
    """Row numbers of the events the filters keep (all of them when no filter is given); each
    filter keeps a call that matches any of its values, and all filters must hold."""
    events = trace.events
    keep = np.ones(len(events), dtype=bool)
    if syscalls:
        known = set(events["syscall"].cat.categories)
        unknown = [s for s in syscalls if s not in known and s not in layout().op_kinds]
        if unknown:
            raise UsageError(f"--syscall {unknown[0]!r}: not a call iowitness records; this trace holds "
                             f"{', '.join(sorted(known)) or 'no call'}")
        keep &= events["syscall"].isin(syscalls).to_numpy()
    if files:
        wanted = {os.path.abspath(f) for f in files}
        names = set(files)
        match = np.array([str(p) in wanted or os.path.basename(str(p)) in names
                          for p in events["path"].cat.categories] + [False], dtype=bool)
        keep &= match[events["path"].cat.codes.to_numpy()]
    if pids:
        keep &= events["tgid"].isin(pids).to_numpy() | events["tid"].isin(pids).to_numpy()
    if phases:
        keep &= np.isin(trace.report().assigned["phase"].to_numpy(), phases)
    return np.flatnonzero(keep)


def _commands(trace, rows: pd.DataFrame) -> np.ndarray:
    """The command name of each event's process at the time of the call (exec changes it)."""
    procs = trace.processes
    if not len(procs) or not len(rows):
        return np.full(len(rows), "?", dtype=object)
    table = procs[["tgid", "ts_ns", "comm"]].astype({"tgid": np.int64, "ts_ns": np.int64})
    table = table.sort_values("ts_ns", kind="stable")
    probe = pd.DataFrame({"tgid": rows["tgid"].to_numpy(np.int64), "ts_ns": rows["start_ns"].to_numpy(np.int64),
                          "row": np.arange(len(rows))}).sort_values("ts_ns", kind="stable")
    found = pd.merge_asof(probe, table, on="ts_ns", by="tgid", direction="backward")
    # a process seen only later (an exec after its first calls, a fork record lost): its first name
    first = table.groupby("tgid")["comm"].first()
    comm = found["comm"].fillna(found["tgid"].map(first)).fillna("?")
    out = np.empty(len(rows), dtype=object)
    out[found["row"].to_numpy()] = comm.to_numpy()
    return out


def _result(ret: np.ndarray) -> list[str]:
    return [str(r) if r >= 0 else f"-{errno.errorcode.get(-r, str(-r))}" for r in ret.tolist()]


def lines(trace, rows: np.ndarray) -> Iterator[str]:
    """The text lines of the events at `rows` (row numbers of trace.events, in time order)."""
    events = trace.events
    start = (trace.meta.get("clock_start") or {}).get("monotonic_ns")
    if start is None:
        start = int(events["start_ns"].iloc[0]) if len(events) else 0
    phase_all = trace.report().assigned["phase"].to_numpy() if len(rows) else np.empty(0, np.int64)
    shown: dict = {}   # a name as the terminal may show it, escaped once per distinct name

    def safe(name) -> str:
        if name not in shown:
            shown[name] = terminal(name) if isinstance(name, str) else "?"
        return shown[name]

    line = "%-15.15s %13s %12.6f  %-12s %4d %13s %10s %10s %13.1f %6s  %s"
    for at in range(0, len(rows), CHUNK):
        take = rows[at:at + CHUNK]
        chunk = events.iloc[take]
        comm = _commands(trace, chunk)
        syscall = chunk["syscall"].astype(str).to_numpy()
        shows_offset = np.isin(syscall, _OFFSET_CALLS)
        offset = np.where(shows_offset, chunk["offset"].to_numpy(np.int64).astype(str), "-")
        asked = np.where(shows_offset | (syscall == "lseek"), chunk["requested"].to_numpy(np.int64).astype(str), "-")
        seconds = (chunk["start_ns"].to_numpy(np.int64) - int(start)) / 1e9
        latency = chunk["latency_ns"].to_numpy(np.int64) / 1e3
        phase = phase_all[take]
        phase_text = np.where(phase > 0, phase.astype(str), "-")
        who = np.char.add(np.char.add(chunk["tgid"].to_numpy().astype(str), "/"), chunk["tid"].to_numpy().astype(str))
        paths = chunk["path"].astype(object).to_numpy()
        for c, w, s, call, fd, off, ask, res, lat, ph, path in zip(
                comm.tolist(), who.tolist(), seconds.tolist(), syscall.tolist(), chunk["fd"].tolist(), offset.tolist(),
                asked.tolist(), _result(chunk["ret"].to_numpy(np.int64)), latency.tolist(), phase_text.tolist(),
                paths.tolist()):
            yield line % (safe(c), w, s, call, fd, off, ask, res, lat, ph, safe(path))
