"""A latency claim's gaps around each call (analysis/judge/latency.py ThreadGaps: "interval",
"to next", "room", "around") from events given block by block, holding a value per call and one call per
thread: what fio's latency claims ask when a figure is above the calls' own band."""

from __future__ import annotations

import numpy as np
import pytest

from iowitness.analysis.judge import latency
from iowitness.analysis.phasing import stream_assign, stream_table
from iowitness.analysis.phasing.operation_values import OperationValues
from tests.support.blocks import Blocks
from tests.support.synthetic import O_RDONLY, START_NS, Calls
from tests.unit.test_stream_table import random_trace

US = 1000


def _two_threads():
    """Thread 1000 reads at 1, 3 and 6 µs (1 µs each); thread 1001 at 2 and 4 µs (500 ns each);
    their opens and closes around them, in time order."""
    calls = Calls(tgid=1000).at(START_NS).open("/d/f", O_RDONLY, latency=100)
    calls.process(1000, 1001).at(START_NS + 200).open("/d/f", O_RDONLY, latency=100)
    for tid, at, took in ((1000, 1, 1000), (1001, 2, 500), (1000, 3, 1000), (1001, 4, 500), (1000, 6, 1000)):
        calls.process(1000, tid).at(START_NS + at * US).read(4096, latency=took)
    calls.process(1000, 1000).at(START_NS + 8 * US).close()
    calls.process(1000, 1001).at(START_NS + 9 * US).close()
    events = calls.frame().sort_values("start_ns", kind="stable").reset_index(drop=True)
    return events, stream_assign.of_frame(events)


def _gaps(events, assigned, phases, timed, rows):
    gaps = latency.ThreadGaps(phases, timed, "read")
    for e, a in Blocks(events, assigned, rows).blocks():
        gaps.add(e, a)
    return gaps.result()


@pytest.mark.parametrize("rows", [1, 2, 3, 100])
def test_each_read_gets_its_threads_calls_around_it_across_blocks(rows):
    # GIVEN two threads' reads, cut into blocks of `rows` events
    events, assigned = _two_threads()
    phases = sorted(int(p) for p in set(assigned["phase"]) if p >= 0)
    # WHEN the gaps are taken block by block
    interval = _gaps(events, assigned, phases, "interval", rows)
    to_next = _gaps(events, assigned, phases, "to next", rows)
    room = _gaps(events, assigned, phases, "room", rows)
    around = _gaps(events, assigned, phases, "around", rows)
    # THEN in the reads' time order (1, 2, 3, 4, 6 µs): the start to the thread's next read's start
    # (a last read: its own latency), those followed only, and the previous read's end to the
    # next one's start (a first or last read: unbounded)
    assert (interval * 1e6).round(3).tolist() == [2.0, 2.0, 3.0, 0.5, 1.0]
    assert (to_next * 1e6).round(3).tolist() == [2.0, 2.0, 3.0]
    assert (room * 1e6).round(3).tolist()[2] == 4.0   # 2 µs (the first read's end) to 6 µs
    assert np.isinf(room[[0, 1, 3, 4]]).all()
    # AND "around" is the room, a first read's bounded from its own start (1 to 3 µs, 2 to 4 µs)
    # and a last read's to its own end (4 to 7 µs, 2.5 to 4.5 µs): never the call's latency alone
    assert (around * 1e6).round(3).tolist() == [2.0, 2.0, 4.0, 2.0, 3.0]


def _by_hand(events, assigned, phases, timed, direction):
    """Each data call's gap from its thread's calls before and after it, one call at a time."""
    rows = np.flatnonzero(latency.data_calls(events, assigned, phases, direction))
    start, end, tid = (events[c].to_numpy(np.int64) for c in ("start_ns", "end_ns", "tid"))
    of_thread = {t: [r for r in rows if tid[r] == t] for t in set(tid[rows])}
    out = []
    for r in rows:
        mine = of_thread[tid[r]]
        k = mine.index(r)
        before = end[mine[k - 1]] if k else None
        after = start[mine[k + 1]] if k + 1 < len(mine) else None
        if timed == "interval":
            out.append((after if after is not None else end[r]) - start[r])
        elif timed == "to next":
            if after is not None:
                out.append(after - start[r])
        elif timed == "room":
            out.append(np.inf if before is None or after is None else after - before)
        else:
            out.append((after if after is not None else end[r]) - (before if before is not None else start[r]))
    return np.array(out, np.float64) / 1e9


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("timed", latency.GAPS)
def test_random_traces_block_by_block_are_the_rule_call_by_call(seed, timed):
    # GIVEN a random trace of several threads and files, cut into blocks of 1 and 7 events
    events = random_trace(seed)
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events, assigned)
    phases = [int(p) for p in table["phase"]]
    for direction in ("read", "write", None):
        whole = _by_hand(events, assigned, phases, timed, direction)
        for rows in (1, 7):
            gaps = latency.ThreadGaps(phases, timed, direction)
            for e, a in Blocks(events, assigned, rows).blocks():
                gaps.add(e, a)
            # THEN the values are the rule's, one call at a time, in the table's order
            np.testing.assert_array_equal(gaps.result(), whole)
            if timed not in ("interval", "around"):
                continue
            # AND likewise when they go to OperationValues spilled from the first (a value
            # given later written into the file)
            held = OperationValues(0)
            gaps = latency.ThreadGaps(phases, timed, direction, into=held)
            for e, a in Blocks(events, assigned, rows).blocks():
                gaps.add(e, a)
            held.finish()
            np.testing.assert_array_equal(held.at_ns(np.arange(len(held))) / 1e9, np.sort(whole))
            assert held.mean() == (float(whole.mean()) if len(whole) else held.mean())
