"""A spec rate over several phases whose benchmark's clock ran on after their last call.

A benchmark that makes a set of files, then syncs them, times the whole: fs_mark's loop clock
(`fs_mark -S N`) stops after its sync() (-S 2, a call the trace does not follow), or after it
reopened each file to fsync it (-S 3 and 5, a pass of open, fsync, close after the files'
own calls, which no file's phase holds). Its files/sec is then below the phases' figure. For a
spec rate over several phases that DISAGREES below its calls' figure (ratio < 1):

- the claim fits the figure up to the end of the last fsync its processes made after the
  phases' calls and before its line: **EXPLAINED**, "its clock ran through the syncs after";
- it lies between the calls' figure and the figure up to its own line, or up to its processes'
  next data call when that comes first (the latest any clock of the test can have stopped):
  **CANNOT JUDGE**, "its clock may have run on after its calls" (a sync() untraced, or the
  benchmark's own work), that widest figure named;
- below even that: it still disagrees, the widest figure added to its reasons.

One phase of one thread has its own account, with the calls and waits at both edges
(rate_edges.py). Example: `apply(verdicts, rows_of, report, tolerance)` after matching.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness import units
from iowitness.analysis.judge.verdict_rules import Verdict, cannot_judge, claimed
from iowitness.analysis.measure.figures import figures_of, fmt
from iowitness.analysis.phasing import operations as several
from iowitness.collector.format.traceformat import ops_of_kind

SYNCS = ops_of_kind("sync")
DATA = ops_of_kind("read") + ops_of_kind("write")
N_FOLD = "the claim and the per-call figure differ"   # operations.whole_hint's first words


def _n_fold_hint(verdict: Verdict) -> bool:
    """A CANNOT JUDGE by operations.whole_hint: an n-fold gap read as n calls an operation."""
    return verdict.verdict == "cannot judge" and bool(verdict.reasons) and verdict.reasons[0].startswith(N_FOLD)


def _candidate(verdict: Verdict, rows: pd.DataFrame | None) -> bool:
    value, kind = claimed(verdict.claim)
    return ((verdict.verdict == "disagrees" or _n_fold_hint(verdict)) and verdict.claim.source == "spec"
            and kind in ("bytes", "ops") and bool(value) and verdict.ratio is not None and verdict.ratio < 1
            and rows is not None and len(rows) > 1 and verdict.window == "calls"
            and verdict.claim.printed_ns is not None)


def _after_calls(report, tgids: set[int], low: int, high: int) -> tuple[dict[int, int], int]:
    """After the phases' last call (`low`), before the line (`high`): per process, the end of its
    last fsync-kind call, and when the next data call of any of them began (`high` if none):
    no clock of the claim's test runs into the next test's data."""
    last: dict[int, int] = {}
    syncs: list[tuple[int, int, int]] = []
    for events, _ in report.event_blocks():
        theirs = events["tgid"].isin(tgids).to_numpy()
        start, end = events["start_ns"].to_numpy(np.int64), events["end_ns"].to_numpy(np.int64)
        data = theirs & events["syscall"].isin(DATA).to_numpy() & (start > low) & (start < high)
        if data.any():
            high = int(start[data].min())
        mine = theirs & events["syscall"].isin(SYNCS).to_numpy() & (end >= low)
        syncs += zip(events["tgid"].to_numpy(np.int64)[mine].tolist(), start[mine].tolist(), end[mine].tolist())
    for tgid, _, e in syncs:
        if e <= high:
            last[tgid] = max(last.get(tgid, 0), e)
    return last, high


def _ended_at(rows: pd.DataFrame, ends: dict[int, int]) -> pd.DataFrame:
    """The rows with each process's last data call moved to `ends[process]`, when later."""
    out = rows.copy()
    for tgid, end in ends.items():
        mine = out.index[out["tgid"] == tgid]
        if len(mine):
            last = out.loc[mine, "data_last_ns"].idxmax()
            out.loc[last, "data_last_ns"] = max(int(out.loc[last, "data_last_ns"]), end)
    return out


def apply(verdicts: list[Verdict], rows_of: dict[int, pd.DataFrame], report, tolerance: float) -> None:
    """Each disagreeing spec rate over several phases, below its calls: its clock after the calls."""
    for verdict in verdicts:
        rows = rows_of.get(id(verdict))
        if not _candidate(verdict, rows) or not hasattr(report, "event_blocks"):
            continue
        claim = verdict.claim
        value, kind = claimed(claim)
        if rows is None or value is None or claim.printed_ns is None:   # _candidate has ruled them out
            continue
        combine = "processes" if claim.extra.get("sum_of") == "processes" else "wall"
        counted = several.per_operation(rows, claim.extra.get("timed") if kind == "ops" else None)
        line, last_call = int(claim.printed_ns), int(counted["data_last_ns"].max())
        tgids = {int(t) for t in counted["tgid"]}
        syncs, line = _after_calls(report, tgids, last_call, line)
        widest = figures_of(_ended_at(counted, {t: line for t in tgids}), claim.direction, kind, combine)["calls"]
        through = figures_of(_ended_at(counted, syncs), claim.direction, kind, combine)["calls"] if syncs else None
        after = units.seconds((line - last_call) / 1e9)
        edge = "its line" if line == int(claim.printed_ns) else "its processes' next data call"
        if through and abs(value / through - 1) <= tolerance:
            _drop_n_fold_hint(verdict)
            verdict.verdict = "explained"
            verdict.reasons.insert(0, f"its clock ran through the syncs after its calls: the last fsync of its "
                                      f"processes ends {units.seconds((max(syncs.values()) - last_call) / 1e9)} after "
                                      f"the phases' last call; counting it, the figure is {fmt(through, kind)}, within "
                                      f"{abs(value / through - 1):.1%} of the claim")
        elif widest == widest and value >= widest * (1 - tolerance):
            # the gap is the clock after the calls as well as n calls an operation: say the first
            _drop_n_fold_hint(verdict)
            cannot_judge(verdict, f"its clock may have run on after its calls, up to {edge} {after} later (a "
                                  f"sync() the trace does not follow, or the benchmark's own work): up to {edge} "
                                  f"the figure is {fmt(widest, kind)}, and the claim lies between that and the calls'")
        elif widest == widest and verdict.verdict == "disagrees":
            verdict.reasons.append(f"even up to {edge}, {after} after the phases' last call, the figure is "
                                   f"{fmt(widest, kind)}")


def _drop_n_fold_hint(verdict: Verdict) -> None:
    if _n_fold_hint(verdict):
        verdict.reasons.pop(0)
