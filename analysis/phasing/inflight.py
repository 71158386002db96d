"""Requests in flight: how deep an asynchronous benchmark's queue really was.

A thread that submits io_uring or libaio requests keeps many of them in flight at once, so
the time its phase spent waiting on I/O is the time covered by at least one request, not the
sum of their latencies (32 requests of 1 ms in flight together cover 1 ms, not 32), and the
queue depth it reached is a figure of its own. For each phase this module gives:

- covered_ns: the union of its calls' [start, end] intervals;
- depth_mean: the requests in flight on average over its data window (the sum of their
  latencies over the window: Little's law, exact for a window from first start to last end);
- depth_max: the most in flight at one time;
- depth_levels: at each submission, how many were in flight counting it, in fio's buckets
  (fio's `iodepth_level`: 1, 2, 4, 8, 16, 32, >=64; a depth of 5 counts under 4), as shares;
- a depth-over-time series for the charts.

A call that ends exactly when another starts does not overlap it: ends are taken before
starts at the same nanosecond.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# fio's iodepth_level buckets (fio's stat.c names them by their lower bound)
DEPTH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)
DEPTH_LABELS = ("1", "2", "4", "8", "16", "32", ">=64")


def _sweep(phase: np.ndarray, start: np.ndarray, end: np.ndarray):
    """The +1/-1 steps of every interval, in (phase, time, ends first) order, and the number in
    flight after each step. Every interval opens and closes within its phase, so the running
    sum over all phases comes back to 0 at each phase's end."""
    n = len(phase)
    when = np.concatenate([start, end]).astype(np.int64)
    step = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
    where = np.concatenate([phase, phase]).astype(np.int64)
    order = np.lexsort((step, when, where))    # last key first: phase, then time, then -1 before +1
    return where[order], when[order], step[order], np.cumsum(step[order])


def covered_ns(phase: np.ndarray, start: np.ndarray, end: np.ndarray) -> pd.Series:
    """Per phase: the time covered by at least one of its intervals."""
    if not len(phase):
        return pd.Series(dtype=np.int64)
    where, when, _, depth = _sweep(phase, start, end)
    busy = depth[:-1] > 0
    same = where[1:] == where[:-1]
    length = np.where(busy & same, np.diff(when), 0)
    return pd.Series(length, index=where[:-1]).groupby(level=0).sum().astype(np.int64)


def depth_table(phase: np.ndarray, start: np.ndarray, end: np.ndarray) -> pd.DataFrame:
    """Per phase: depth_max, depth_mean and the share of submissions in each fio bucket
    (columns depth_level_1 ... depth_level_>=64)."""
    columns = ["depth_max", "depth_mean"] + [f"depth_level_{label}" for label in DEPTH_LABELS]
    if not len(phase):
        return pd.DataFrame(columns=columns)
    where, when, step, depth = _sweep(phase, start, end)
    frame = pd.DataFrame({"phase": where, "depth": depth})
    span = pd.Series(end.astype(np.int64), index=phase).groupby(level=0).max() - \
        pd.Series(start.astype(np.int64), index=phase).groupby(level=0).min()
    in_calls = pd.Series((end - start).astype(np.int64), index=phase).groupby(level=0).sum()
    submitted = step > 0
    counts = pd.crosstab(where[submitted], bucket_of(depth[submitted]))
    return depth_frame(frame.groupby("phase")["depth"].max(), in_calls, span, counts)


def bucket_of(depth: np.ndarray) -> np.ndarray:
    """fio's iodepth_level bucket of each depth at a submission (-1 below 1: in none)."""
    return np.searchsorted(DEPTH_BUCKETS, depth, side="right") - 1


def depth_frame(depth_max: pd.Series, in_calls: pd.Series, span: pd.Series, counts: pd.DataFrame) -> pd.DataFrame:
    """depth_table's rows from per-phase figures: the most in flight, the time in calls, the
    data window (last end - first start) and the submissions per bucket (columns: bucket)."""
    columns = ["depth_max", "depth_mean"] + [f"depth_level_{label}" for label in DEPTH_LABELS]
    out = pd.DataFrame({"depth_max": depth_max})
    out["depth_mean"] = (in_calls / span.where(span > 0)).reindex(out.index)
    counts = counts.reindex(columns=range(len(DEPTH_LABELS)), fill_value=0)
    shares = counts.div(counts.sum(axis=1), axis=0)
    for i, label in enumerate(DEPTH_LABELS):
        out[f"depth_level_{label}"] = shares[i].reindex(out.index).fillna(0.0)
    return out[columns]


def depth_series(start: np.ndarray, end: np.ndarray, points: int = 400) -> pd.DataFrame:
    """Requests in flight over time for one phase, at most `points` rows: the highest depth of
    each time bucket, so a short burst stays visible (columns t_s from the first start, depth)."""
    if not len(start):
        return pd.DataFrame(columns=["t_s", "depth"])
    series = DepthSeries(int(np.min(start)), int(np.max(end)), points)
    series.add(start, end)
    return series.finish()


class DepthSeries:
    """depth_series over requests given a block at a time, in order of their start, from the
    first start `t0` to the last end `t1` (which fix the buckets). A step (a start or an end)
    is counted once no later request can come before it: each block's steps before its last
    start; the rest wait for the next block (at most the requests still in flight)."""

    def __init__(self, t0: int, t1: int, points: int = 400):
        self.t0, self.t1, self.points = int(t0), int(t1), points
        self.highest = np.full(points, np.iinfo(np.int64).min)
        self.depth = 0
        self._when, self._step = np.empty(0, np.int64), np.empty(0, np.int64)

    def add(self, start: np.ndarray, end: np.ndarray) -> None:
        if not len(start):
            return
        when = np.concatenate([self._when, np.asarray(start, np.int64), np.asarray(end, np.int64)])
        step = np.concatenate([self._step, np.ones(len(start), np.int64), -np.ones(len(end), np.int64)])
        later = when >= int(np.max(start))   # a later request starts there or after, and may end there
        self._when, self._step = when[later], step[later]
        self._count(when[~later], step[~later])

    def finish(self) -> pd.DataFrame:
        """The series (columns t_s, depth); the same again on a later call."""
        self._count(self._when, self._step)
        self._when, self._step = self._when[:0], self._step[:0]
        seen = np.flatnonzero(self.highest > np.iinfo(np.int64).min)
        if self.t1 <= self.t0:
            return pd.DataFrame({"t_s": [0.0], "depth": [int(self.highest.max())]})
        return pd.DataFrame({"t_s": seen * (self.t1 - self.t0) / self.points / 1e9, "depth": self.highest[seen]})

    def _count(self, when: np.ndarray, step: np.ndarray) -> None:
        if not len(when):
            return
        order = np.lexsort((step, when))    # time, then ends before starts (as _sweep)
        when, depth = when[order], self.depth + np.cumsum(step[order])
        self.depth = int(depth[-1])
        if self.t1 <= self.t0:
            self.highest[0] = max(self.highest[0], int(depth.max()))
            return
        bucket = np.minimum((when - self.t0) * self.points // (self.t1 - self.t0), self.points - 1)
        np.maximum.at(self.highest, bucket, depth)


def level_text(row) -> str:
    """The depth distribution of a phase row, as fio prints iodepth_level: '16=0.4%, 32=99.6%'."""
    parts = []
    for label in DEPTH_LABELS:
        share = float(row.get(f"depth_level_{label}", 0) or 0)
        if share >= 0.001:
            parts.append(f"{label}={share:.1%}")
    return ", ".join(parts)
