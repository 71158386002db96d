"""One text line per recorded call, as `perf script` and strace print them: `show --events`.

    process   pid/tid     time (s)  call      fd        offset      asked     result  latency (µs)  phase  file
    dd        4242/4242   0.001204  write      1             0    1048576    1048576         812.4      2  /mnt/t/out

time: seconds since the recording began (the trace's clock_start; its first event when it has
none); offset: where a read or write began (the file position for read/write, the explicit
offset for p* calls), "-" for calls that have none; asked: bytes asked for (lseek: the offset
argument); result: bytes done, or the error's name (-ENOSPC); phase: the phase the call is
counted in (analysis/phasing/phases.py), "-" for none. Filters (Filter) keep calls of some phases,
files, syscalls or processes; the lines come in time order, in chunks, and are never all held.

`show --events` reads the trace block by block (`streamed`): the events in load's exact order
(analysis/read/stream_events.py), each call's phase rebuilt as the report numbers it
(analysis/phasing/stream_assign.py), so memory is bounded by a block and the phases, not by the events.
`select` and `lines` do the same over a loaded trace; tests/unit/test_show_events_stream.py holds
the streamed text to theirs, byte for byte.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import stream_assign, stream_report
from iowitness.analysis.read import stream_events
from iowitness.errors import UsageError
from iowitness.escape import terminal
from iowitness.probes.layout import layout

CHUNK = 50_000
HEADER = (f"{'process':<15} {'pid/tid':>13} {'time (s)':>12}  {'call':<12} {'fd':>4} {'offset':>13} "
          f"{'asked':>10} {'result':>10} {'latency (µs)':>13} {'phase':>6}  file")
# calls whose record's offset is a file position worth showing
_OFFSET_CALLS = ("read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2",
                 "pwritev2", "fault_read", "fault_write", "fallocate", "fadvise64", "readahead")
_LINE = "%-15.15s %13s %12.6f  %-12s %4d %13s %10s %10s %13.1f %6s  %s"


class Filter:
    """What --phase, --file, --syscall, --pid and --slower keep: each keeps a call that matches
    any of its values (--slower: that took at least so long, as bcc's fileslower), and all must
    hold. Made from an events table with the trace's categories (the loaded table, or
    stream_events' empty one): it refuses an unknown call at once, and then applies to any
    block of the trace, whose categories are the same."""

    def __init__(self, events: pd.DataFrame, phases: list[int] | None = None, files: list[str] | None = None,
                 syscalls: list[str] | None = None, pids: list[int] | None = None, slower_ns: int | None = None):
        self.phases, self.syscalls, self.pids, self.slower_ns = phases, syscalls, pids, slower_ns
        if syscalls:
            known = set(events["syscall"].cat.categories)
            unknown = [s for s in syscalls if s not in known and s not in layout().op_kinds]
            if unknown:
                raise UsageError(f"--syscall {unknown[0]!r}: not a call iowitness records; this trace holds "
                                 f"{', '.join(sorted(known)) or 'no call'}")
        self._path_match = None
        if files:
            wanted = {os.path.abspath(f) for f in files}
            names = set(files)
            # per path category, and a last False for the calls without a path (code -1)
            self._path_match = np.array([str(p) in wanted or os.path.basename(str(p)) in names
                                         for p in events["path"].cat.categories] + [False], dtype=bool)

    def __call__(self, events: pd.DataFrame, phase: np.ndarray | None) -> np.ndarray:
        """Per row of `events`, whether it is kept; `phase`: its phases (needed for --phase only)."""
        keep = np.ones(len(events), dtype=bool)
        if self.syscalls:
            keep &= events["syscall"].isin(self.syscalls).to_numpy()
        if self._path_match is not None:
            keep &= self._path_match[events["path"].cat.codes.to_numpy()]
        if self.pids:
            keep &= events["tgid"].isin(self.pids).to_numpy() | events["tid"].isin(self.pids).to_numpy()
        if self.phases:
            keep &= np.isin(phase, self.phases)
        if self.slower_ns is not None:
            keep &= events["latency_ns"].to_numpy() >= self.slower_ns
        return keep


def select(trace, phases: list[int] | None = None, files: list[str] | None = None,
           syscalls: list[str] | None = None, pids: list[int] | None = None,
           slower_ns: int | None = None) -> np.ndarray:
    """Row numbers of the loaded trace's events the filters keep (all of them when none is given)."""
    events = trace.events
    keep = Filter(events, phases, files, syscalls, pids, slower_ns)
    phase = trace.report().event_phases() if phases else None
    return np.flatnonzero(keep(events, phase))


def lines(trace, rows: np.ndarray) -> Iterator[str]:
    """The text lines of the loaded trace's events at `rows` (row numbers of trace.events, in time order)."""
    events = trace.events
    phase_all = trace.report().event_phases() if len(rows) else np.empty(0, np.int64)
    shown = Lines(trace, first_start(trace.meta, events))
    for at in range(0, len(rows), CHUNK):
        take = rows[at:at + CHUNK]
        yield from shown(events.iloc[take], phase_all[take])


def first_start(meta: dict, events: pd.DataFrame) -> int:
    """Where the time column counts from: the recording's start, else the first event's (of the
    whole trace: `events` is its table or its first block)."""
    start = (meta.get("clock_start") or {}).get("monotonic_ns")
    if start is None:
        start = int(events["start_ns"].iloc[0]) if len(events) else 0
    return int(start)


class Lines:
    """Formats events as text lines, chunk by chunk; what does not change from one chunk to the
    next (the processes' names over time, each name escaped for the terminal) is made once."""

    def __init__(self, trace, start: int):
        self._start = start
        procs = trace.processes
        self._procs = None
        if len(procs):
            table = procs[["tgid", "ts_ns", "comm"]].astype({"tgid": np.int64, "ts_ns": np.int64})
            self._procs = table.sort_values("ts_ns", kind="stable")
            # a process seen only later (an exec after its first calls, a fork record lost): its first name
            self._first_name = self._procs.groupby("tgid")["comm"].first()
        self._shown: dict = {}   # a name as the terminal may show it, escaped once per distinct name

    def _safe(self, name) -> str:
        if name not in self._shown:
            self._shown[name] = terminal(name) if isinstance(name, str) else "?"
        return self._shown[name]

    def _commands(self, rows: pd.DataFrame) -> np.ndarray:
        """The command name of each event's process at the time of the call (exec changes it)."""
        if self._procs is None or not len(rows):
            return np.full(len(rows), "?", dtype=object)
        probe = pd.DataFrame({"tgid": rows["tgid"].to_numpy(np.int64), "ts_ns": rows["start_ns"].to_numpy(np.int64),
                              "row": np.arange(len(rows))}).sort_values("ts_ns", kind="stable")
        found = pd.merge_asof(probe, self._procs, on="ts_ns", by="tgid", direction="backward")
        comm = found["comm"].fillna(found["tgid"].map(self._first_name)).fillna("?")
        out = np.empty(len(rows), dtype=object)
        out[found["row"].to_numpy()] = comm.to_numpy()
        return out

    def __call__(self, chunk: pd.DataFrame, phase: np.ndarray) -> Iterator[str]:
        """The lines of the events of `chunk` (rows of the events table), whose phases are `phase`."""
        comm = self._commands(chunk)
        syscall = chunk["syscall"].astype(str).to_numpy()
        shows_offset = np.isin(syscall, _OFFSET_CALLS)
        offset = np.where(shows_offset, chunk["offset"].to_numpy(np.int64).astype(str), "-")
        asked = np.where(shows_offset | (syscall == "lseek"), chunk["requested"].to_numpy(np.int64).astype(str), "-")
        seconds = (chunk["start_ns"].to_numpy(np.int64) - self._start) / 1e9
        latency = chunk["latency_ns"].to_numpy(np.int64) / 1e3
        phase_text = np.where(phase > 0, phase.astype(str), "-")
        who = np.char.add(np.char.add(chunk["tgid"].to_numpy().astype(str), "/"), chunk["tid"].to_numpy().astype(str))
        paths = chunk["path"].astype(object).to_numpy()
        safe = self._safe
        for c, w, s, call, fd, off, ask, res, lat, ph, path in zip(
                comm.tolist(), who.tolist(), seconds.tolist(), syscall.tolist(), chunk["fd"].tolist(), offset.tolist(),
                asked.tolist(), _result(chunk["ret"].to_numpy(np.int64)), latency.tolist(), phase_text.tolist(),
                paths.tolist()):
            yield _LINE % (safe(c), w, s, call, fd, off, ask, res, lat, ph, safe(path))


def _result(ret: np.ndarray) -> list[str]:
    return [str(r) if r >= 0 else f"-{errno.errorcode.get(-r, str(-r))}" for r in ret.tolist()]


@contextmanager
def streamed(path, phases: list[int] | None = None, files: list[str] | None = None,
             syscalls: list[str] | None = None, pids: list[int] | None = None, block_rows: int | None = None,
             slower_ns: int | None = None):
    """The lines of the trace at `path` the filters keep, read block by block: the iterator
    `lines(load(path), select(load(path), ...))` gives, without the trace in memory. What can be
    refused (a trace that cannot be read, a --summary trace, an unknown call) is, on entering;
    the phases are rebuilt then (a pass over the file, about 15 bytes per event of temporary
    files). Valid until the `with` ends."""
    with stream_events.open_events(path, block_rows=block_rows or stream_report.BLOCK_ROWS) as source:
        trace = source.trace
        if trace.summary is not None and len(trace.summary) and not trace.event_count:
            raise UsageError(f"{path} is a summary trace (--summary): it holds no record per call to print")
        keep = Filter(source.empty(), phases, files, syscalls, pids, slower_ns)
        with stream_report.temporary_files(path):
            assigned = stream_assign.assign(source, stream_report.outside_of(source.meta))
        with assigned:
            yield _streamed_lines(path, trace, assigned, keep)


def _streamed_lines(path, trace, assigned, keep: Filter) -> Iterator[str]:
    shown = None
    # only this generator's own reading is under temporary_files (the first pass writes each
    # call's phase to a file); the caller's writes (a full disk under stdout, a closed pipe) are not
    with stream_report.temporary_files(path):
        for events, assigned_block in assigned.blocks():
            if shown is None:   # blocks come in time order: the first holds the trace's first event
                shown = Lines(trace, first_start(trace.meta, events))
            phase = assigned_block["phase"].to_numpy()
            rows = np.flatnonzero(keep(events, phase))
            for at in range(0, len(rows), CHUNK):
                take = rows[at:at + CHUNK]
                yield from shown(events.iloc[take], phase[take])
