"""A latency statistic of operations of several calls held between the operations' figure and
their rooms (analysis/judge/room_bound.py, analysis/judge/room_operations.py), on traces built
call by call: 200 operations of an open (2 µs), a 256 KiB write (5 µs) and a close (2 µs),
16 µs apart (the loop's clock reads), one of them after 5 ms the thread spent outside its calls
(preempted between its clock read and its open, as ops_bench's thread is under two CPU hogs).
Ground truth: the built calls' own times. Doctored figures beyond the rooms or below the
operations still disagree."""

from __future__ import annotations

import numpy as np
import pytest

from iowitness.analysis.benchmarks import spec
from iowitness.analysis.judge import latency, match_claims as matching, room_bound, room_operations
from tests.support.blocks import assigned_of
from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, Calls
from tests.unit.test_latency import US, _built

OPEN_US, WRITE_US, CLOSE_US, GAP_US, LONG_US, N, AFTER = 2, 5, 2, 16, 5_000, 200, 100
OP_US = OPEN_US + WRITE_US + CLOSE_US

SPEC = """
[[claim]]
pattern = '^(?P<stat>min|avg|max|p95): (?P<value>[\\d.]+) ms$'
test = "openclose"
direction = "write"
unit = "ms"
statistic = "{stat}"
timed = "open..close"
match = "operation"
"""


def _open_write_close(calls: Calls, path: str, gap_us: int) -> Calls:
    calls.gap(gap_us * US).open(path, O_WRONLY | O_CREAT, latency=OPEN_US * US)
    return calls.write(256 * 1024, latency=WRITE_US * US).close(latency=CLOSE_US * US)


@pytest.fixture(scope="module")
def run():
    calls = Calls()
    for i in range(N):
        _open_write_close(calls, "/d/f", LONG_US if i == AFTER else GAP_US)
    return _built(calls)


def _judged(line: str, run):
    rep, trace = run
    (verdict,) = matching.match(rep, spec.parse(line + "\n", spec.loads(SPEC)), "spec", ["./bench"], trace=trace)
    return verdict


# the operations' mean is 9 µs; a thread's first operation's start to its last one's end over
# 200: (200 x 9 + 198 x 16 + 5000) / 200 = 49.8 µs; the largest room 16 + 9 + 5000 µs;
# the rooms' p95 16 + 9 + 16 = 41 µs
WITHIN = ["avg: 0.045 ms", "max: 5.02 ms", "p95: 0.04 ms"]
BEYOND = [
    "avg: 0.09 ms",    # 85 to 95 µs: above all the thread's time over its operations
    "max: 7.00 ms",    # 2 ms beyond the largest room
    "p95: 0.50 ms",    # 12 times the rooms' p95
    "avg: 0.003 ms",   # 2.5 to 3.5 µs: below every operation (9 µs) and every write (5 µs)
]


def test_the_operations_are_one_phase_of_open_write_close_each(run):
    rep, _ = run
    assert len(rep.phases) == 1 and int(rep.phases["opens"].iloc[0]) == N


@pytest.mark.parametrize("line", WITHIN)
def test_a_statistic_of_open_close_operations_within_their_rooms_agrees(line, run):
    # WHEN a statistic above the open..close operations' own, within their rooms, is judged
    verdict = _judged(line, run)
    # THEN it agrees, the operations' figure and the rooms' named
    assert verdict.verdict == "agrees", verdict.reasons
    assert " lies between the " in verdict.reasons[0] and "open..close operations" in verdict.reasons[0], \
        verdict.reasons[0]
    assert verdict.counts["operations"] == N


@pytest.mark.parametrize("line", BEYOND)
def test_a_doctored_statistic_of_operations_beyond_the_rooms_or_below_them_disagrees(line, run):
    verdict = _judged(line, run)
    assert verdict.verdict == "disagrees", verdict.reasons


def test_the_room_of_an_operation_runs_from_the_call_before_its_first_to_the_call_after_its_last():
    # GIVEN eight open..write..close operations, 16 µs apart
    calls = Calls()
    for _ in range(8):
        _open_write_close(calls, "/d/f", GAP_US)
    rep, trace = _built(calls)
    phases = [int(p) for p in rep.phases["phase"]]
    clocks = room_bound.clocks(trace.events, assigned_of(rep), phases, "open..close", "write")
    # THEN each operation is its open's start to its close's end, and a middle one's room is
    # the gap before its open, the operation and the gap after its close (not its write's room)
    assert clocks.calls * 1e6 == pytest.approx([OP_US] * 8)
    assert clocks.closed[1:-1] * 1e6 == pytest.approx([GAP_US + OP_US + GAP_US] * 6)
    assert clocks.spans * 1e6 == pytest.approx(8 * OP_US + 7 * GAP_US)


def _mixed() -> Calls:
    """Two threads of one process: groups of 3 writes and an fdatasync on one file each,
    interleaved in time, a sync before a thread's first write, and open..write..close stretches."""
    calls = Calls()
    calls.open("/d/a", O_WRONLY | O_CREAT | O_TRUNC)
    calls.thread(1001).open("/d/b", O_WRONLY | O_CREAT | O_TRUNC).thread(1000)
    calls.thread(1001).fsync(syscall="fdatasync", latency=7 * US).thread(1000)
    for k in range(6):
        for tid, fd in ((1000, 3), (1001, 4)):
            calls.thread(tid)
            for w in range(3):
                calls.gap(2 * US).write(4096, fd=fd, latency=(3 + w + tid % 2) * US)
            calls.fsync(syscall="fdatasync", fd=fd, latency=(40 + k) * US)
    calls.thread(1000).close(fd=3).thread(1001).close(fd=4).thread(1000)
    for _ in range(10):
        _open_write_close(calls, "/d/c", GAP_US)
    return calls


@pytest.mark.parametrize("timed", ["call", "call or sync", "call+sync", "calls+sync", "3 calls", "2 calls",
                                   "3 calls+sync", "open..close"])
def test_the_operations_spans_are_latency_operations_own(timed):
    # GIVEN a trace of groups of writes and syncs in two threads, and open..close stretches
    rep, trace = _built(_mixed())
    events, assigned = trace.events, assigned_of(rep)
    phases = [int(p) for p in rep.phases["phase"]]
    # WHEN the operations are taken with their threads and edges, and as latency.py times them
    start, end, tid = room_operations.spans(events, assigned, phases, timed, "write")
    own = latency.operations(events, assigned, phases, timed, "write")
    # THEN they are the same operations: the same durations, and each within one thread
    assert len(start) == len(own) > 0
    assert np.sort((end - start) / 1e9) == pytest.approx(np.sort(own))
    assert set(np.unique(tid)) <= {1000, 1001}


def test_every_timed_a_spec_accepts_has_rooms_and_nothing_else_does():
    for timed in ("call", "call or sync", "call+sync", "open..close", "calls+sync", "8 calls", "8 calls+sync"):
        assert room_operations.roomed(timed), timed
    assert not room_operations.roomed("call+fsync")
