"""Per-request lines above their own calls (analysis/judge/seam.py, requests): the seam is
measured from the run's own lines, bounded per line by the room around its call (the previous
call's end to the next call's start), never by a size fixed beforehand. Traces built call by
call: 20 pwrites of 5 µs, 10 ms apart, as ioping's requests are (each after a nanosleep)."""

from __future__ import annotations

import numpy as np
import pytest

from iowitness.analysis.judge import latency, seam
from tests.unit.test_latency import _judge, _requests

CALL_US, GAP_US, N = 5, 10_000, 20


def _lines(printed_us) -> str:
    return "".join(f"req {i} {us:.2f} us\n" for i, us in enumerate(printed_us, 1)) + "mean 5.0 us\n"


@pytest.fixture(scope="module")
def run():
    return _requests([CALL_US] * N, [0] * N, gap_us=GAP_US)


def test_a_seam_larger_than_five_microseconds_with_a_preempted_request_cannot_be_judged(run):
    # GIVEN every line 7 µs above its call (beyond the 5 µs the old fixed seam allowed; the CI
    # machine's ioping showed 6-7 µs) and one request preempted between its clock and its call
    printed = [CALL_US + 7.0] * N
    printed[9] = CALL_US + 120.0
    # WHEN judged
    requests, _ = _judge(_lines(printed), "call", *run)
    # THEN it is the gap in user space, measured from the run: never DISAGREES
    assert requests.verdict == "cannot judge", requests.reasons
    assert requests.reasons[0].startswith("gap in user space: 20 of 20 requests are above their own call"), \
        requests.reasons[0]
    assert "median 7.00 µs/op above (19 within" in requests.reasons[0] and "1 more" in requests.reasons[0]


def test_a_doctored_line_far_beyond_the_room_around_its_call_still_disagrees(run):
    # GIVEN the same seam, and one line doctored to 50 ms: more than the 20 ms from its previous
    # call's end to its next call's start, which is all a clock around it could span
    printed = [CALL_US + 3.0] * N
    printed[9] = 50_000.0
    requests, _ = _judge(_lines(printed), "call", *run)
    # THEN it disagrees, and says no gap explains that line
    assert requests.verdict == "disagrees", requests.reasons
    assert "furthest: request 10 claims 50000.00 µs/op" in requests.reasons[0], requests.reasons[0]
    assert requests.reasons[1].startswith("1 of 20 requests no gap in user space explains"), requests.reasons


def test_a_line_below_its_own_call_still_disagrees(run):
    # GIVEN lines above their calls by the seam, and one at a fifth of its call's time
    printed = [CALL_US + 3.0] * N
    printed[4] = 1.0
    requests, _ = _judge(_lines(printed), "call", *run)
    # THEN a clock around a call cannot read less than the call: DISAGREES
    assert requests.verdict == "disagrees", requests.reasons
    assert "furthest: request 5 claims 1.00 µs/op" in requests.reasons[0]


def test_the_room_is_the_previous_calls_end_to_the_next_calls_start(run):
    rep, trace = run
    from tests.support.blocks import assigned_of
    rooms = latency.operations(trace.events, assigned_of(rep), [1], "room", "write") * 1e6
    # a thread's first and last calls have no edge on one side; the others: gap, call, gap
    assert np.isinf(rooms[0]) and np.isinf(rooms[-1])
    assert rooms[1:-1] == pytest.approx(np.full(N - 2, GAP_US + CALL_US + GAP_US))
    assert seam.unexplained(np.array([30e-3]), np.array([5e-6]), np.array([20e-3]), 0.05, 1e-6).all()


SUMMARY = """
[[claim]]
pattern = '^req (?P<request>\\d+) (?P<value>[\\d.]+) us$'
test = "write"
direction = "write"
unit = "us"
match = "operation"
requests = true

[[claim]]
pattern = '^mean/max/mdev = (?P<mean>[\\d.]+)/(?P<max>[\\d.]+)/(?P<mdev>[\\d.]+) us$'
test = "write"
direction = "write"
unit = "us"
match = "operation"
[claim.columns]
mean = { statistic = "mean" }
max = { statistic = "max" }
mdev = { statistic = "mdev" }
"""


def _summary(printed_us, run, mdev_us=None):
    from iowitness.analysis.benchmarks import spec
    from iowitness.analysis.judge import match_claims as matching
    us = np.array(printed_us)
    mdev = float(np.std(us)) if mdev_us is None else mdev_us
    text = "".join(f"req {i} {v:.2f} us\n" for i, v in enumerate(us, 1)) + \
        f"mean/max/mdev = {us.mean():.2f}/{us.max():.2f}/{mdev:.2f} us\n"
    rep, trace = run
    return matching.match(rep, spec.parse(text, spec.loads(SUMMARY)), "spec", ["./bench"], trace=trace)


def test_a_summary_moved_by_a_preempted_request_is_the_seam_of_its_own_lines(run):
    # GIVEN lines 3 µs above their calls and one request preempted between clock read and call
    # (400 µs above it, as under two CPU hogs): its mdev is 87 µs where the calls' is 0, its
    # mean 25 µs above theirs (beyond the 20 µs a mean may hold of the benchmark's own work)
    printed = [CALL_US + 3.0] * N
    printed[9] = CALL_US + 400.0
    lines, mean, top, mdev = _summary(printed, run)
    # THEN none disagrees: the mdev is the statistic of the benchmark's own lines, every one of
    # them above its call and within the room around it
    assert lines.verdict == "cannot judge", lines.reasons
    assert mdev.verdict == "cannot judge", (mdev.claim.printed, mdev.reasons)
    assert mdev.reasons[0].startswith("gap in user space: the claimed "), mdev.reasons[0]
    assert "of the benchmark's own 20 request lines" in mdev.reasons[0], mdev.reasons[0]
    # AND the mean and the max lie between the calls' and the rooms' (analysis/judge/room_bound.py):
    # they agree, the rooms named
    for v in (mean, top):
        assert v.verdict == "agrees", (v.claim.printed, v.reasons)
        assert " lies between the " in v.reasons[0] and "a clock read just before each call" in v.reasons[0], \
            v.reasons[0]
    # AND an mdev its lines do not give still disagrees
    *_, wrong = _summary(printed, run, mdev_us=300.0)
    assert wrong.verdict == "disagrees", wrong.reasons
