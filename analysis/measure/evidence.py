"""What the verdicts ask of a trace's events: the rules, on one block of events at a time.

The judgement (analysis/judge/match_claims.py, latency.py, stonewall.py, the benchmark modules) needs
more than the phase table for some claims: a buffered stream's final flush, the operations a
latency claim is about, how far each member of a group had got at its stonewall, where
IOzone's parent started its clock. It asks `report.evidence` (stream_evidence.StreamedEvidence,
which answers by passes over the blocks), never an events table; the functions here are the
rules it applies to each block.

    >>> report.evidence.late_flushes(report.phases)     # {phase: {"bytes": ..., ...}}
    >>> report.evidence.operations([3, 4], "call", "read")   # seconds per operation
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import phases as phase_module

I64_MAX = np.iinfo(np.int64).max


# the rules themselves, on an events table (the whole trace's, or one block's)

def stonewall_counts(events: pd.DataFrame, assigned: pd.DataFrame, phases: list[int], at: int):
    """(bytes, calls) each phase's counted data calls had done by `at` (ended by then), and the
    start of each phase's first call after `at`: dicts by phase, phases without any left out."""
    phase = assigned["phase"].to_numpy()
    mine = np.isin(phase, phases)
    ev = pd.DataFrame({"phase": phase[mine], "start": events["start_ns"].to_numpy()[mine],
                       "end": events["end_ns"].to_numpy()[mine],
                       "ret": events["ret"].to_numpy()[mine], "warmup": phase_module.uncounted(assigned)[mine],
                       "data": np.isin(phase_module.call_kinds(events["syscall"])[mine],
                                       (phase_module.READ, phase_module.WRITE))})
    data = ev[ev["data"] & ~ev["warmup"] & (ev["end"] <= at)]
    counted = data.groupby("phase")["ret"].apply(lambda r: int(r.clip(lower=0).sum())).to_dict()
    calls = data.groupby("phase").size().to_dict()
    later = ev[ev["start"] > at].groupby("phase")["start"].min().to_dict()
    return ({int(p): int(v) for p, v in counted.items()}, {int(p): int(v) for p, v in calls.items()},
            {int(p): int(v) for p, v in later.items()})


def reach(events: pd.DataFrame, assigned: pd.DataFrame) -> pd.Series:
    """Per phase: the end of the furthest byte its calls reached (offset + bytes moved)."""
    phase = assigned["phase"].to_numpy()
    inside = phase > 0
    ends = (events["offset"].to_numpy(np.int64) + np.maximum(events["ret"].to_numpy(np.int64), 0))[inside]
    phase = phase[inside].astype(np.int64)
    # one np.maximum.at over an array by phase number (a pandas groupby of the rows cost 5 times more)
    furthest = np.full(int(phase.max(initial=0)) + 1, np.iinfo(np.int64).min)
    np.maximum.at(furthest, phase, ends)
    seen = np.flatnonzero(np.bincount(phase, minlength=len(furthest)))
    return pd.Series(furthest[seen], index=pd.Index(seen, dtype=np.int64))


def closes_on(events: pd.DataFrame, paths: list[str]) -> pd.DataFrame:
    """The close calls on `paths` (absolute), in time order: their start and end."""
    mine = _path_in(events["path"], paths) & phase_module.named(events["syscall"], phase_module.ops_of_kind("close"))
    return pd.DataFrame({"start_ns": events["start_ns"].to_numpy(np.int64)[mine],
                         "end_ns": events["end_ns"].to_numpy(np.int64)[mine]})


def _path_in(path: pd.Series, paths: list[str]) -> np.ndarray:
    """Per event: whether its path as text is one of `paths`; of a column of categories, asked
    of each category once (a call without a path, "nan" as text, is on none of them)."""
    if isinstance(path.dtype, pd.CategoricalDtype):
        wanted = np.r_[np.asarray(path.cat.categories.astype(str).isin(paths), dtype=bool), False]
        return wanted[path.cat.codes.to_numpy()]
    return path.astype(str).isin(paths).to_numpy()


def first_call_on(events: pd.DataFrame, path: str, low: int, high) -> int | None:
    """The start of the first call on `path` other than an open, starting in [low, high]."""
    paths = events["path"].astype(str).to_numpy()
    begin, syscall = events["start_ns"].to_numpy(), events["syscall"].astype(str).to_numpy()
    mine = np.flatnonzero((paths == os.path.abspath(path)) & (begin >= low) & (begin <= high))
    after_open = [i for i in mine if not syscall[i].startswith("open")]
    return int(begin[after_open[0]]) if after_open else None
