"""What `iowitness report` shows beside the phase table, from events read block by block.

    extras = stream_extras.Extras(table)     # the finished phase table (groups, names)
    for events, a in assigned.blocks():       # analysis/phasing/stream_assign.py
        extras.add(events, a)
    extras.finish()
    extras.groups, extras.outliers, extras.histograms, extras.stretches, extras.t0

Each answer is the same whatever the blocks' size (groups.table, report.outliers,
machine.histograms, stretches.stretch_frame, and the trace's first start for
stretches.rows_of): each is made by the functions of groups.py and report.py, from what the
blocks add up to: the bytes each group member had done by its stonewall (added call after
call), the slowest calls of each phase so far, latency-bin counts, per-stretch sums.
Memory: per phase, per group member, per stretch, `per_phase` outliers per phase, and
the calls of small blocks gathered up to a fixed count before they are merged in; never per
event.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis import report
from iowitness.analysis.phasing import groups
from iowitness.analysis.read.distinct import unique


class GroupTable:
    """groups.table(table, report.Calls(events, assigned)), block by block."""

    def __init__(self, table: pd.DataFrame):
        self.multi = groups.multi_phase(table)
        self.limit = groups.stonewall_limits(self.multi) if len(self.multi) else np.empty(0, np.int64)
        self.done = np.zeros(len(self.limit))

    def add(self, events: pd.DataFrame, a: pd.DataFrame, calls: report.Calls | None = None) -> None:
        if not len(self.multi) or not len(events):
            return
        calls = calls if calls is not None else report.Calls(events, a)
        groups.add_done(self.done, self.limit, calls.data, calls.phase, calls.end_ns, calls.ret)

    def result(self) -> pd.DataFrame:
        if self.multi.empty:
            return pd.DataFrame(columns=groups.COLUMNS)
        return groups.rows(self.multi, self.done)


# candidate outliers gathered before they are merged with the slowest so far (a block of the
# stream is much larger: then each block is merged as it comes)
GATHER_OUTLIERS = 1 << 12
# the outliers' columns as a call has them (report.outlier_frame's arguments after by_phase)
_CALL_COLUMNS = ("phase", "syscall", "tid", "start_ns", "offset", "ret", "latency_ns")
# their types in a trace without a block (as the probe's records have them, analysis/report.Calls)
_EMPTY = {"phase": np.int64, "syscall": object, "tid": np.uint32, "start_ns": np.int64, "offset": np.int64,
          "ret": np.int64, "latency_ns": np.int64}


class Outliers:
    """report.outliers(report.Calls(events, assigned), table), block by block: the slowest
    `per_phase` calls of each phase so far, merged with the candidates of the blocks since
    (gathered up to `gather_rows` of them). The calls kept come before the new ones in time,
    so the stable sort orders equal latencies as one sort of all calls would."""

    def __init__(self, table: pd.DataFrame, per_phase: int = report.OUTLIERS_PER_PHASE,
                 gather_rows: int = GATHER_OUTLIERS):
        self.by_phase, self.per_phase = table.set_index("phase"), per_phase
        self.kept: dict[str, np.ndarray] | None = None
        self._gathered: list[dict[str, np.ndarray]] = []
        self._gathered_rows, self._gather_rows = 0, gather_rows
        # per phase: a call must be slower than this to be among its slowest so far (-1: any
        # call, fewer than per_phase kept); a later call as slow as the slowest kept ranks after
        # them. Not the phase's 99th percentile: the report's pass can come before it
        self._floor = np.full(int(table["phase"].max()) + 1 if len(table) else 1, -1, dtype=np.int64)

    def add(self, events: pd.DataFrame, a: pd.DataFrame, calls: report.Calls | None = None) -> None:
        calls = calls if calls is not None else report.Calls(events, a)
        counted = np.flatnonzero(calls.data & (calls.phase > 0) & (calls.phase < len(self._floor)))
        rows = counted[calls.latency_ns[counted] > self._floor[calls.phase[counted]]]
        rows = rows[_slowest_of_block(calls.phase[rows], calls.latency_ns[rows], self.per_phase)]
        if len(rows) or (self.kept is None and not self._gathered):   # the first block gives the types
            self._gathered.append({
                "phase": calls.phase[rows], "syscall": calls.syscall.iloc[rows].astype(str).to_numpy(),
                "tid": calls.tid[rows], "start_ns": calls.start_ns[rows], "offset": calls.offset[rows],
                "ret": calls.ret[rows], "latency_ns": calls.latency_ns[rows]})
            self._gathered_rows += len(rows)
        if self._gathered_rows >= self._gather_rows:
            self._merge()

    def _merge(self) -> None:
        parts = ([self.kept] if self.kept is not None else []) + self._gathered
        if not parts:
            return
        calls = {k: np.concatenate([p[k] for p in parts]) for k in _CALL_COLUMNS}
        self._gathered, self._gathered_rows = [], 0
        pick = report.slowest(calls["phase"], calls["latency_ns"], self.per_phase)
        self.kept = {k: v[pick] for k, v in calls.items()}
        # the slowest kept come by phase, slowest first: a phase's last is its floor once it has enough
        phase = self.kept["phase"]
        last = np.r_[phase[1:] != phase[:-1], True] if len(phase) else np.zeros(0, bool)
        full = last & (np.bincount(phase, minlength=len(self._floor))[phase] >= self.per_phase)
        self._floor[phase[full]] = self.kept["latency_ns"][full]

    def result(self) -> pd.DataFrame:
        self._merge()
        kept = self.kept if self.kept is not None else {k: np.empty(0, t) for k, t in _EMPTY.items()}
        return report.outlier_frame(self.by_phase, *(kept[k] for k in _CALL_COLUMNS))


def _slowest_of_block(phase: np.ndarray, latency_ns: np.ndarray, per_phase: int) -> np.ndarray:
    """Positions of the `per_phase` slowest of each phase among these calls, in the order
    report.slowest gives them (by phase, slowest first, equal ones in the order given): only
    they can be among the slowest of the trace. A sort of numbers, no string made."""
    if len(phase) <= per_phase:
        return np.arange(len(phase))
    # first each phase's per_phase-th slowest here (a partition per phase, no sort of all the
    # calls): only calls as slow go on to the sort
    distinct, code = unique(phase, return_inverse=True)
    code = code.ravel()
    by_code = np.argsort(code.astype(np.int16) if len(distinct) < 1 << 15 else code, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(code, minlength=len(distinct)))]
    floor = np.empty(len(distinct), latency_ns.dtype)
    for c in range(len(distinct)):
        mine = latency_ns[by_code[bounds[c]:bounds[c + 1]]]
        floor[c] = np.partition(mine, len(mine) - per_phase)[len(mine) - per_phase] if len(mine) > per_phase \
            else mine.min()
    keep = np.flatnonzero(latency_ns >= floor[code])
    order = keep[np.lexsort((-latency_ns[keep], phase[keep]))]   # stable: equal latencies in the order given
    p = phase[order]
    first = np.r_[True, p[1:] != p[:-1]]
    rank = np.arange(len(p)) - np.maximum.accumulate(np.where(first, np.arange(len(p)), 0))
    return order[rank < per_phase]


class Histograms:
    """machine.histograms(report), block by block: latency-bin counts per phase add up."""

    def __init__(self, table: pd.DataFrame):
        self.phases = table["phase"].to_numpy()
        self.counts = np.zeros((len(self.phases), len(report.LATENCY_BINS_US) - 1), dtype=np.int64)

    def add(self, events: pd.DataFrame, a: pd.DataFrame, calls: report.Calls | None = None) -> None:
        if len(events):
            calls = calls if calls is not None else report.Calls(events, a)
            self.counts += report.latency_bin_counts(self.phases, calls)

    def result(self) -> dict[int, list[int]]:
        return report.histogram_lists(self.phases, self.counts)


# how two partial sums of one stretch make one (report.stretch_sums' columns): the earlier
# part first, so "first" is the earlier's first path (a call without a path has none)
_MERGE = {"path": "first", "tgid": "first", "first": "min", "last": "max", "calls": "sum", "in_calls": "sum",
          **{k: "sum" for k in report.STRETCH_KINDS}}
# calls of stretches gathered before they are summed: small blocks are summed a few at a time
GATHER_ROWS = 1 << 16


class Stretches:
    """stretches.stretch_frame(report, trace), block by block, and the trace's first start
    (stretch_rows' t0): per stretch, sums merged block after block in order of first call, and
    the phases it holds calls of. `sums=False`: the first start alone (result() None), for the
    forms that show no stretch (the verdicts read t0): 5 % of `report --json`'s CPU at 10 M events."""

    def __init__(self, gather_rows: int = GATHER_ROWS, sums: bool = True):
        self.sums: pd.DataFrame | None = None
        self.phases: dict[int, set] = {}
        self.t0: int | None = None
        self._gathered: list[pd.DataFrame] = []
        self._gathered_rows, self._gather_rows = 0, gather_rows
        self._summed = sums

    def add(self, events: pd.DataFrame, a: pd.DataFrame, calls: report.Calls | None = None) -> None:
        if not len(events):
            return
        start = int(events["start_ns"].min())
        self.t0 = start if self.t0 is None else min(self.t0, start)
        frame = report.stretch_calls(events, a) if "span" in a and self._summed else None
        if frame is None:
            return
        self._gathered.append(frame)
        self._gathered_rows += len(frame)
        if self._gathered_rows >= self._gather_rows:
            self._sum()

    def _sum(self) -> None:
        if not self._gathered:
            return
        frame = pd.concat(self._gathered, ignore_index=True) if len(self._gathered) > 1 else self._gathered[0]
        self._gathered, self._gathered_rows = [], 0
        part = report.stretch_sums(frame)
        part["path"] = part["path"].astype(object)   # a part without any path has no str column
        if self.sums is not None:
            part = pd.concat([self.sums, part]).groupby(level=0, sort=False).agg(_MERGE)
            part["path"] = part["path"].astype(object)
        self.sums = part
        # (span, phase) pairs as one int64 key each: phases from -1 (none), spans below 2^31
        pairs = unique((frame["span"].to_numpy(np.int64) << 32) | (frame["phase"].to_numpy(np.int64) + 1))
        for span, phase in zip((pairs >> 32).tolist(), ((pairs & 0xFFFFFFFF) - 1).tolist()):
            self.phases.setdefault(span, set()).add(phase)

    def result(self) -> pd.DataFrame | None:
        if not self._summed:
            return None
        self._sum()
        if self.sums is None:
            return pd.DataFrame()
        out = self.sums.copy()
        # the path column: each stretch's first path
        first_path = pd.DataFrame({"span": out.index.to_numpy(), "path": out["path"].to_numpy(object)})
        out["path"] = first_path.groupby("span", sort=False).agg(path=("path", "first"))["path"]
        held = pd.DataFrame([(s, p) for s, ps in self.phases.items() for p in ps], columns=["span", "phase"])
        out["phases"] = report.stretch_phases(held)
        return report.stretches_in_order(out)


class Extras:
    """The four, fed in one pass: groups, outliers, histograms, stretches (and t0) after finish().
    `stretches=False`: their table is not gathered (extras.stretches None), only t0."""

    def __init__(self, table: pd.DataFrame, per_phase: int = report.OUTLIERS_PER_PHASE, gather_rows: int | None = None,
                 stretches: bool = True):
        gather = {} if gather_rows is None else {"gather_rows": gather_rows}
        self._parts = {"groups": GroupTable(table), "outliers": Outliers(table, per_phase, **gather),
                       "histograms": Histograms(table), "stretches": Stretches(**gather, sums=stretches)}

    def add(self, events: pd.DataFrame, a: pd.DataFrame, calls: report.Calls | None = None) -> None:
        # one Calls for the four: each array it gives (the data calls' mask above all) made once a block
        calls = calls if calls is not None else report.Calls(events, a)
        for part in self._parts.values():
            part.add(events, a, calls)

    def finish(self) -> Extras:
        for name, part in self._parts.items():
            setattr(self, name, part.result())
        self.t0 = self._parts["stretches"].t0
        return self
