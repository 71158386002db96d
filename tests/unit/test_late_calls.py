"""Each phase's timed fsync and close found in the sums pass (analysis/phasing/late_calls.py) is
what the pass after it found (phase_table.first_late over every call, against the phase's last
data end over the whole trace), whatever the blocks: random calls with many equal start times
and calls of no duration (the only case where a call before a phase's last data call can
still start at its end), cut into blocks of random sizes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.phasing import phase_table as pt, phases as ph
from iowitness.analysis.phasing.late_calls import LateCalls

DATA = 99   # a kind that is none of the three: these calls are the data calls below


def calls(rng: np.random.Generator, n: int, phases: int) -> dict[str, np.ndarray]:
    start = np.cumsum(rng.integers(0, 3, n)).astype(np.int64)          # many equal starts
    latency = np.where(rng.random(n) < 0.3, 0, rng.integers(1, 5, n))  # many calls of no duration
    kinds = rng.choice([ph.SYNC, ph.CLOSE, DATA, ph.OPEN], n, p=[0.25, 0.2, 0.45, 0.1])
    return {"slot": rng.integers(0, phases, n).astype(np.int64), "kinds": kinds, "start": start,
            "end": start + latency}


def expected(c: dict[str, np.ndarray], name: str) -> dict[int, int]:
    data = c["kinds"] == DATA
    data &= c["slot"] > 0
    last = pd.Series(c["end"][data]).groupby(c["slot"][data]).max()
    at = np.flatnonzero(c["kinds"] == LateCalls.KINDS[name])
    found = pt.first_late(c["slot"][at], c["start"][at], c["end"][at], last)
    return {int(p): int(v) for p, v in found.items()}


def streamed(c: dict[str, np.ndarray], cuts: np.ndarray, phases: int) -> LateCalls:
    late = LateCalls(phases)
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(c["start"])]):
        part = {k: v[lo:hi] for k, v in c.items()}
        data = np.flatnonzero((part["kinds"] == DATA) & (part["slot"] > 0))
        late.add(part["slot"], part["kinds"], part["start"], part["end"], data)
    return late


@pytest.mark.parametrize("seed", range(40))
def test_the_first_fsync_and_close_after_the_last_data_call_whatever_the_blocks(seed):
    # GIVEN random calls of a few phases, in start order
    rng = np.random.default_rng(seed)
    phases = int(rng.integers(2, 6))
    c = calls(rng, int(rng.integers(1, 400)), phases)
    with_data = np.unique(c["slot"][(c["kinds"] == DATA) & (c["slot"] > 0)])
    for cuts in (np.empty(0, np.int64), np.arange(1, len(c["start"])),
                 np.unique(rng.integers(1, max(len(c["start"]), 2), int(rng.integers(1, 30))))):
        # WHEN they come in one block, a block per call, or blocks of random sizes
        late = streamed(c, cuts[cuts < len(c["start"])], phases)
        # THEN each phase's timed fsync and close are the ones found over every call at once
        for name in LateCalls.KINDS:
            assert late.found(name, with_data) == expected(c, name)


def test_a_block_out_of_start_order_leaves_them_to_the_later_pass():
    # GIVEN a second block that starts before the first ended
    late = LateCalls(2)
    one = np.array([1], np.int64)
    late.add(one, np.array([ph.SYNC]), np.array([10], np.int64), np.array([11], np.int64), np.empty(0, np.int64))
    late.add(one, np.array([ph.SYNC]), np.array([5], np.int64), np.array([6], np.int64), np.empty(0, np.int64))
    # WHEN asked THEN it says it does not know (the windows pass counts them as before)
    assert late.found("sync", one) is None
    assert late.found("close", one) is None
