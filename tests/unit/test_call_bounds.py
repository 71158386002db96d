"""The calls around a stretch of one thread's calls (analysis/phasing/call_bounds.py), block by block:
a table built call by call, whose every time is known."""

from __future__ import annotations

import numpy as np

from iowitness.analysis.phasing import call_bounds
from tests.support.synthetic import O_RDONLY, START_NS, Calls


def test_the_calls_around_a_read_are_found_per_thread_in_any_blocks():
    # GIVEN thread 1000: open, lseek, read (the stretch), fsync, close, each 1 µs back to
    # back; thread 2000 calling in between (never its neighbour)
    calls = Calls().open("/d/f", O_RDONLY).lseek(0).read(65536).fsync().close()
    calls.process(2000).at(START_NS + 2500).open("/d/g", O_RDONLY).at(START_NS + 3500).read(10).close()
    events = calls.frame().sort_values("start_ns", kind="stable").reset_index(drop=True)
    read_start, read_end = START_NS + 2000, START_NS + 3000
    # WHEN asked in one block, and in blocks of 1 and 3 events
    whole = call_bounds.neighbours(events, [1000], [read_start], [read_end])
    for size in (1, 3):
        blocks = [events.iloc[i:i + size] for i in range(0, len(events), size)]
        parts = call_bounds.combine([call_bounds.neighbours(b, [1000], [read_start], [read_end]) for b in blocks])
        # THEN the same answer: the lseek ended where the read began, the fsync starts where it ended
        assert parts[0].tolist() == whole[0].tolist() and parts[1] == whole[1]
        assert parts[2].tolist() == whole[2].tolist() and parts[3] == whole[3]
    assert whole[0].tolist() == [read_start] and whole[1] == ["lseek"]
    assert whole[2].tolist() == [read_end] and whole[3] == ["fsync"]


def test_a_stretch_with_nothing_around_it_says_so():
    events = Calls().open("/d/f", O_RDONLY).frame()   # its one call is the stretch
    before, names, after, after_names = call_bounds.neighbours(events, [1000], [START_NS], [START_NS + 1000])
    assert before[0] == call_bounds.NONE_BEFORE and names == [None]
    assert after[0] == call_bounds.NONE_AFTER and after_names == [None]
    assert np.all(call_bounds.neighbours(events.iloc[0:0], [1000], [0], [0])[0] == call_bounds.NONE_BEFORE)
