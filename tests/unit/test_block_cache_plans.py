"""The block cache's compact forms (analysis/read/block_cache.py): a column of one value and
times in order kept in fewer bytes, and made again to the same values and types."""

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.read import block_cache


def _frame(start: np.ndarray) -> pd.DataFrame:
    n = len(start)
    return pd.DataFrame({"start_ns": start, "latency_ns": np.arange(n, dtype=np.uint64) * 7 + 3,
                         "tgid": np.full(n, 4242, np.uint32), "dev": np.full(n, 2049, np.uint64),
                         "ret": np.arange(n, dtype=np.int64) - 5}, index=pd.RangeIndex(100, 100 + n))


@pytest.mark.parametrize("start, plan", [
    (np.cumsum(np.arange(1, 50_001, dtype=np.uint64)) + np.uint64(10**15), "steps"),   # in order, small steps
    (np.array([5, 5, 5, 9, 2**40], dtype=np.uint64), "plain"),                         # a step of 2^40: as it is
    (np.array([9, 5, 7, 11], dtype=np.uint64), "offset"),                              # out of order
    (np.array([7], dtype=np.uint64), "constant"),                                      # one event
])
def test_a_kept_block_is_made_again_the_same(start, plan):
    # GIVEN a block with a process and a device of one value each, and start times of one shape
    frame = _frame(start)
    # WHEN it is kept compact and made again
    plans, arrays, index = block_cache._compact(frame)
    again = block_cache._restored(plans, arrays, index)
    # THEN the same values, types and index, and the one-value columns keep no array
    pd.testing.assert_frame_equal(again, frame, check_exact=True)
    kinds = {name: how for name, how, _ in plans}
    assert kinds["start_ns"] == plan
    assert kinds["tgid"] == kinds["dev"] == "constant"
    assert len(arrays) == len([k for k in kinds.values() if k not in ("constant", "end")])


def test_a_made_again_block_is_a_fresh_array_each_time():
    # GIVEN a kept block with a one-value column and ordered times
    plans, arrays, index = block_cache._compact(_frame(np.arange(10, 20, dtype=np.uint64)))
    # WHEN a caller changes its block in place
    first = block_cache._restored(plans, arrays, index)
    for name in ("tgid", "start_ns"):
        values = first[name].to_numpy()
        values.setflags(write=True)   # pandas hands a read-only view; the array is the frame's own
        values[:] = 0
    assert (first["tgid"] == 0).all()
    # THEN the next pass gets the values as kept
    second = block_cache._restored(plans, arrays, index)
    assert (second["tgid"] == 4242).all() and second["start_ns"].tolist() == list(range(10, 20))
