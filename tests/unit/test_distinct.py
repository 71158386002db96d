"""analysis/read/distinct.py unique against np.unique itself: the same arrays and dtypes, whatever asked."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from iowitness.analysis.read import distinct

ASKED = list(itertools.product([False, True], repeat=3))


def columns():
    rng = np.random.default_rng(7)
    yield rng.integers(0, 5, 100_000).astype(np.int64)             # a few phases
    yield rng.integers(-3, 3, 1000).astype(np.int32)               # negatives (-1: no phase)
    yield (rng.integers(0, 40, 5000).astype(np.int64) << 32) | rng.integers(0, 9, 5000)   # (slot, tid) keys
    yield rng.integers(0, 2**63, 2000, dtype=np.uint64) | np.uint64(2**63)                 # the top bit set
    yield np.arange(1000, dtype=np.int64)[::-1].copy()             # all distinct, descending
    yield np.full(10, 4, np.int16)
    yield np.array([3], np.int64)
    yield np.array([], np.int64)


@pytest.mark.parametrize("asked", ASKED)
def test_the_same_as_np_unique(asked):
    for values in columns():
        # WHEN asked for the same results of the same column
        want = np.unique(values, return_index=asked[0], return_inverse=asked[1], return_counts=asked[2])
        got = distinct.unique(values, return_index=asked[0], return_inverse=asked[1], return_counts=asked[2])
        # THEN each array is np.unique's, value and dtype
        want, got = (want if isinstance(want, tuple) else (want,)), (got if isinstance(got, tuple) else (got,))
        assert len(want) == len(got)
        for w, g in zip(want, got):
            assert w.dtype == g.dtype and w.shape == g.shape and np.array_equal(w, g), values.dtype
