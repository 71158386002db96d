"""fio's psync clat above the kernel's calls (analysis/benchmarks/fio_latency.py): fio reads its
clock after its previous call ends and before its next one starts, so a request fio timed can
take in the time before its call as well as after it. A trace built call by call, whose times
are known: 200 preads of 4 KiB, 10 µs each, 2 µs of fio's own work between them; one of them
600 µs long. The shape of a CI run where fio printed max=755.72 µs over calls whose largest was
655.87 µs: fio was preempted between its clock read and that call."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from iowitness.analysis.benchmarks import fio_latency
from iowitness.analysis.measure import stream_full
from tests.support.synthetic import O_RDONLY, Calls

CALL_NS, WORK_NS, LONG_NS, COUNT, LONG_AT = 10_000, 2_000, 600_000, 200, 100


def _judge(max_ns: float, preempted_ns: int):
    calls = Calls().open("/data/j.0.0", O_RDONLY)
    for i in range(COUNT):
        calls.gap(WORK_NS + (preempted_ns if i == LONG_AT else 0))
        calls.pread(4096, 4096 * i, latency=LONG_NS if i == LONG_AT else CALL_NS)
    trace = SimpleNamespace(events=calls.close().frame(), meta={"command": ["fio"], "pid": None})
    report = stream_full.build(trace)
    latencies = np.array([LONG_NS if i == LONG_AT else CALL_NS for i in range(COUNT)], float)
    # fio's clat as fio would print it: its own max, every other figure the calls' own
    stats = {"clat_ns": {"N": COUNT, "min": CALL_NS, "max": max_ns, "mean": latencies.mean(),
                         "stddev": latencies.std()}, "slat_ns": {"N": 0}}
    claim = fio_latency.claim("j", "read", stats, 0, 0, {"ioengine": "psync"})
    rows = report.phases[report.phases["bytes"] > 0]
    return fio_latency.judge(claim, rows, trace, report, 0.05)


def test_a_max_taken_in_before_its_call_is_explained_by_the_room_around_it():
    # GIVEN fio preempted for 100 µs after its clock read, before the 600 µs call: fio's max 702 µs,
    # above the call (600 µs) and above the call's start to the next one's (600 + 2 µs), within
    # the previous call's end to the next one's start (2 + 100 + 600 + 2 µs)
    verdict = _judge(max_ns=2_000 + 100_000 + 600_000, preempted_ns=100_000)
    # THEN it is explained, by fio's clock taking in time outside the call, and says where
    assert verdict.verdict == "explained", verdict.reasons
    assert verdict.reasons[0].startswith("fio's clock took in time outside the calls: max"), verdict.reasons
    assert "previous call's end to the next one's start" in verdict.reasons[0]


def test_a_max_no_room_around_any_call_allows_disagrees():
    # GIVEN the same calls with no preemption, and fio claiming a max of 800 µs: more than the
    # whole room around the longest call (604 µs) and its band
    verdict = _judge(max_ns=800_000, preempted_ns=0)
    # THEN nothing accounts for it
    assert verdict.verdict == "disagrees", verdict.reasons
    assert "outside: max" in verdict.reasons[0]


def test_a_max_equal_to_the_calls_agrees():
    verdict = _judge(max_ns=LONG_NS, preempted_ns=100_000)
    assert verdict.verdict == "agrees", verdict.reasons
    assert verdict.reasons[0].startswith("clat: 4 of 4 statistics within their band")


def _judge_min(min_ns: float, last_ns: int):
    """200 preads of 10 µs, 2 µs of fio's work between them, the last one `last_ns` long; fio's
    min as given, every other figure the calls' own."""
    calls = Calls().open("/data/j.0.0", O_RDONLY)
    latencies = np.array([CALL_NS] * (COUNT - 1) + [last_ns], float)
    for i, took in enumerate(latencies):
        calls.gap(WORK_NS)
        calls.pread(4096, 4096 * i, latency=int(took))
    trace = SimpleNamespace(events=calls.close().frame(), meta={"command": ["fio"], "pid": None})
    report = stream_full.build(trace)
    stats = {"clat_ns": {"N": COUNT, "min": min_ns, "max": latencies.max(), "mean": latencies.mean(),
                         "stddev": latencies.std()}, "slat_ns": {"N": 0}}
    claim = fio_latency.claim("j", "read", stats, 0, 0, {"ioengine": "psync"})
    return fio_latency.judge(claim, report.phases[report.phases["bytes"] > 0], trace, report, 0.05)


def test_a_min_above_the_shortest_call_that_is_the_last_is_held_to_the_time_before_it_too():
    # GIVEN the thread's last call the shortest (5 µs), and fio's min 6.5 µs: above the calls'
    # band (5 µs, 5 % and 1 µs: 6.25 µs), as fio's clock always takes in some of its own work.
    # The CI shape of 2026-12-07: fio's all-clients min over three hosts' calls, 1.2x theirs
    verdict = _judge_min(min_ns=6_500, last_ns=5_000)
    # THEN the last call's room runs from the previous call's end to its own end (2 + 5 µs), not
    # its own 5 µs alone: fio's clock took in time outside the call, explained
    assert verdict.verdict == "explained", verdict.reasons
    assert verdict.reasons[0].startswith("fio's clock took in time outside the calls: min"), verdict.reasons


def test_a_min_beyond_the_room_of_every_call_disagrees():
    # GIVEN fio's min 12 µs over calls whose every room is at most 2 + 10 + 2 µs... and the last
    # call's 2 + 5 µs: no clock read around the last call could take 12 µs
    verdict = _judge_min(min_ns=12_000, last_ns=5_000)
    assert verdict.verdict == "disagrees", verdict.reasons
    assert "outside: min" in verdict.reasons[0]
