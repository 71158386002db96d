"""Crediting device bytes to phases so that each byte is credited once.

Concurrent phases (16 fio threads, IOzone -t children) have overlapping windows: every
request completed while they all ran lies inside all their windows. Giving each phase every
request of its window credits the same bytes once per phase, and a claim about the group,
which adds its phases up, then says the device moved 16 times what it did.

So a request completed inside several windows is shared among them:
  - when the thread that submitted it (the block record's tid) is a thread of some of those
    phases, it goes to those phases alone (direct I/O and read-ahead are submitted by the
    thread that reads or writes);
  - otherwise (a kworker writing back, the journal, an unknown submitter) it is split evenly
    among all the phases whose window holds it.
Only phases that would claim a request share it: reads go to read phases, writes to write
phases, both to mixed ones (`claims`); and only the benchmark's own requests count (those
device.Requests marks `own`: not other programs' on the same device).

Then the phases' credits add up to the bytes of the requests inside the union of their
windows (to within a byte per phase: each phase's credit is rounded to whole bytes), and a
phase alone in its window keeps all of them, as before.

Cost: O((requests + phases) log requests), prefix sums over the requests in time order and
over the same requests by thread; no loop over requests.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def claims(phases: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Which phases claim device reads, which device writes: a mixed phase both."""
    operation = phases["operation"].to_numpy()
    return operation != "write", operation != "read"


def phase_threads(phases: pd.DataFrame, assigned: pd.DataFrame, events: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(row of the phase, thread id) for every thread of every phase."""
    # only the calls of phases with several threads are looked at: most phases have one
    several = phases["phase"].to_numpy(np.int64)[phases["threads"].to_numpy() > 1]
    phase = assigned["phase"].to_numpy()
    calls = np.flatnonzero(np.isin(phase, several))
    pairs = np.unique(np.stack([phase[calls].astype(np.int64), events["tid"].to_numpy(np.int64)[calls]]), axis=1)
    return threads_of(phases, pairs)


def threads_of(phases: pd.DataFrame, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """phase_threads from the distinct (phase, thread id) columns of the calls: a phase of one
    thread is its table row's thread, one of several each thread its calls name."""
    one = phases["threads"].to_numpy() <= 1
    rows, tids = np.flatnonzero(one), phases["tid"].to_numpy(np.int64)[one]
    several = phases["phase"].to_numpy(np.int64)[~one]
    if not len(several):
        return rows, tids
    pairs = pairs[:, np.isin(pairs[0], several)]
    return np.r_[rows, pd.Index(phases["phase"]).get_indexer(pairs[0])], np.r_[tids, pairs[1]]


def credited(phases: pd.DataFrame, devices: dict[int, int], requests: dict, threads: tuple[np.ndarray, np.ndarray],
             lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Each phase's own device bytes over its window [lo, hi), in the directions it claims, every
    byte credited once; NaN for a phase without a device.

    devices: phase -> device; requests: device -> device.Requests; threads: from phase_threads.
    """
    out = np.full(len(phases), np.nan)
    device_of = np.array([devices.get(int(p), -1) for p in phases["phase"]], dtype=np.int64)
    claims_read, claims_write = claims(phases)
    for dev, req in requests.items():
        on_dev = device_of == dev
        out[on_dev] = 0
        for claiming, kind in ((claims_read, req.read), (claims_write, req.write)):
            mine = np.flatnonzero(claiming & on_dev)
            if not len(mine):
                continue
            pick = kind & req.own
            take = np.isin(threads[0], mine)
            out[mine] += credit(req.complete[pick], req.bytes[pick], req.tid[pick], lo[mine], hi[mine],
                                np.searchsorted(mine, threads[0][take]), threads[1][take])
    return np.round(out)


def credit(complete: np.ndarray, size: np.ndarray, tid: np.ndarray, lo_ns: np.ndarray, hi_ns: np.ndarray,
           pair_phase: np.ndarray, pair_tid: np.ndarray) -> np.ndarray:
    """Bytes credited to each phase (float: a split request gives fractions of a byte).

    complete: completion times, sorted; size: their bytes; tid: their submitters (0 unknown).
    lo_ns, hi_ns: each phase's window [lo, hi), as iostat counts a completion in an interval.
    pair_phase, pair_tid: which threads each phase has (index into lo_ns, thread id).
    """
    n = len(complete)
    if not n or not len(lo_ns):
        return np.zeros(len(lo_ns))
    size = size.astype(np.float64)
    lo = np.searchsorted(complete, lo_ns, side="left")
    hi = np.maximum(lo, np.searchsorted(complete, hi_ns, side="left"))
    holders = _cover(lo, hi, n)
    # a request inside one window is that phase's: only those inside several are shared out,
    # so phases that do not overlap (most runs) cost two prefix sums
    out = _between(np.where(holders == 1, size, 0.0), lo, hi)
    several = np.flatnonzero(holders > 1)
    if len(several):
        out += _share(size[several], tid[several], holders[several], np.searchsorted(several, lo),
                      np.searchsorted(several, hi), np.asarray(pair_phase, np.int64), np.asarray(pair_tid, np.int64))
    return out


def _share(size, tid, holders, lo, hi, pair_phase, pair_tid) -> np.ndarray:
    """Requests each inside several windows ([lo, hi) as positions among them): to the phases of
    the thread that submitted it, or evenly among the windows."""
    n, phases = len(size), len(lo)
    # the same requests by submitter, each thread's in time order: the position in time order
    # is the rank within a thread, so (thread, rank) is one sortable key
    by_tid = np.argsort(tid, kind="stable")
    key = tid[by_tid].astype(np.int64) * (n + 1) + by_tid
    pairs = np.unique(np.stack([pair_phase, pair_tid]), axis=1)
    p_phase, p_tid = pairs[:, pairs[1] > 0]
    p_lo = np.searchsorted(key, p_tid * (n + 1) + lo[p_phase], side="left")
    p_hi = np.maximum(p_lo, np.searchsorted(key, p_tid * (n + 1) + hi[p_phase], side="left"))
    owners = _cover(p_lo, p_hi, n)
    mine = np.divide(size[by_tid], owners, out=np.zeros(n), where=owners > 0)
    out = np.bincount(p_phase, weights=_between(mine, p_lo, p_hi), minlength=phases)
    owned = np.zeros(n, dtype=bool)
    owned[by_tid] = owners > 0
    return out + _between(np.where(owned, 0.0, size / holders), lo, hi)


def holding(times: np.ndarray, lo_ns: np.ndarray, hi_ns: np.ndarray) -> np.ndarray:
    """How many of the windows [lo, hi) hold each of the (sorted) times."""
    lo = np.searchsorted(times, lo_ns, side="left")
    return _cover(lo, np.maximum(lo, np.searchsorted(times, hi_ns, side="left")), len(times))


def _cover(lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """How many of the ranges [lo, hi) hold each position 0..n-1."""
    steps = np.zeros(n + 1, dtype=np.int64)
    np.add.at(steps, lo, 1)
    np.add.at(steps, hi, -1)
    return np.cumsum(steps[:n])


def _between(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Sum of values[lo:hi] for each range, through one prefix sum."""
    total = np.r_[0.0, np.cumsum(values)]
    return total[hi] - total[lo]
