"""Latency claims (analysis/judge/latency.py): operations, statistics, bands and verdicts, on
traces built call by call, whose every latency is known."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from iowitness.analysis.benchmarks import spec
from iowitness.analysis.judge import latency, match_claims as matching
from iowitness.analysis.measure import stream_full
from tests.support.blocks import assigned_of
from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, Calls

US = 1000


def _built(calls: Calls):
    trace = SimpleNamespace(events=calls.frame(), meta={"command": ["./bench"], "pid": None})
    return stream_full.build(trace), trace


def _requests(write_us, sync_us, gap_us=5):
    """A thread writing 4 KiB with pwrite, each followed by an fdatasync (when sync_us)."""
    calls = Calls().open("/d/f", O_WRONLY | O_CREAT | O_TRUNC)
    for i, (w, s) in enumerate(zip(write_us, sync_us)):
        calls.pwrite(4096, i * 4096, latency=int(w * US))
        if s:
            calls.fsync(syscall="fdatasync", latency=int(s * US))
        calls.gap(gap_us * US)
    return _built(calls.close())


def test_an_operation_is_a_call_or_a_call_and_its_sync():
    # GIVEN three pwrites of 10, 20, 30 µs, each followed by an fdatasync of 100 µs
    rep, trace = _requests([10, 20, 30], [100, 100, 100])
    # THEN per call they take 10, 20, 30 µs; per call and its sync 110, 120, 130 µs
    # (start of the call to the end of its sync: nothing ran between them here)
    def ops(timed):
        return latency.operations(trace.events, assigned_of(rep), [1], timed, "write") * 1e6
    assert ops("call") == pytest.approx([10, 20, 30])
    assert ops("call+sync") == pytest.approx([110, 120, 130])
    # AND each call's start to the next one's takes in the sync and the 5 µs the program spent
    # before its next call (the last call: its own time)
    assert ops("interval") == pytest.approx([115, 125, 30])
    # AND open..close is one operation: from the open's start to the close's end
    assert len(ops("open..close")) == 1


def test_statistics_as_benchmarks_print_them():
    values = np.array([1.0, 2.0, 3.0, 4.0])
    assert latency.figure(values, "mean") == 2.5 and latency.figure(values, "min") == 1.0
    assert latency.figure(values, "mdev") == pytest.approx(np.sqrt(1.25))       # ping: population
    assert latency.figure(values, "stddev") == pytest.approx(np.sqrt(5 / 3))    # fio: n - 1
    assert latency.statistic_name("avg") == "mean" and latency.statistic_name("p99.9") == "p99.9"
    assert latency.statistic_name("p999") is None and latency.statistic_name("p50") == "median"


def test_a_percentile_of_few_operations_is_held_to_a_wide_band_and_of_many_to_a_narrow_one():
    # GIVEN latencies 1..200 µs, and 1..2,000,000 (the same shape, 10,000 times more)
    few = np.arange(1, 201) * 1e-6
    many = np.linspace(1e-6, 200e-6, 2_000_000)
    # THEN a p99.99 of 200 may be anything from 70 % of the way from the 199th value to the
    # 200th on (every definition, and the rank's 95 % interval); of 2 million, its neighbours
    lo, hi, rule = latency.band(few, "p99.99", 0.0)
    assert lo == pytest.approx(199.7e-6 - latency.ALLOWANCE_S, abs=1e-8)
    assert hi == pytest.approx(200e-6 + latency.ALLOWANCE_S)
    assert "ranks 199.7 and 200 of 200" in rule
    lo, hi, _ = latency.band(many, "p99.99", 0.0)
    assert (hi - lo) - 2 * latency.ALLOWANCE_S < 1e-8
    # AND min is held to the smallest value
    assert "rank 1 of 200" in latency.band(few, "min", 0.05)[2]


def test_a_max_is_the_largest_value_not_anything_up_to_it():
    # GIVEN 1,000 calls of 100 µs and one of 50 ms (the issue: a max claim "fit" anything
    # between the two largest values)
    values = np.r_[np.full(1000, 100e-6), 50e-3]
    lo, hi, rule = latency.band(values, "max", 0.05)
    # THEN a max of 1 ms or 20 ms is outside; 50 ms within 5 % and ± 1 µs is inside
    assert not lo <= 1e-3 <= hi and not lo <= 20e-3 <= hi
    assert lo <= 50e-3 * 0.951 and 50e-3 * 1.049 <= hi
    assert lo == pytest.approx(50e-3 * 0.95 - 1e-6) and "rank 1,001 of 1,001" in rule
    # AND a true max off by 1 µs alone (a 3 µs call claimed as 3.9 or 2.1 µs) is inside
    lo, hi, _ = latency.band(np.r_[np.full(9, 2e-6), 3e-6], "max", 0.0)
    assert lo <= 3.9e-6 <= hi and lo <= 2.1e-6 <= hi
    # AND a min is the smallest value in the same way
    lo, hi, _ = latency.band(np.r_[1e-3, np.full(1000, 10e-3)], "min", 0.05)
    assert not lo <= 5e-3 <= hi and lo <= 1e-3 <= hi


SPEC = """
[[claim]]
pattern = '^req (?P<request>\\d+) (?P<value>[\\d.]+) us$'
test = "write"
direction = "write"
unit = "us"
match = "operation"
requests = true
timed = "TIMED"

[[claim]]
pattern = '^mean (?P<value>[\\d.]+) us$'
test = "write"
direction = "write"
unit = "us"
match = "operation"
timed = "TIMED"
"""


def _judge(output: str, timed: str, rep, trace):
    claims = spec.parse(output, spec.loads(SPEC.replace("TIMED", timed)))
    return matching.match(rep, claims, "spec", ["./bench"], trace=trace)


def test_per_request_lines_give_one_verdict_and_a_sync_the_benchmark_timed_explains():
    # GIVEN 100 requests of a 10 µs pwrite and a 990 µs fdatasync, the program printing each
    # request at 1000 µs and their mean
    rep, trace = _requests([10] * 100, [990] * 100)
    output = "".join(f"req {i} 1000.0 us\n" for i in range(1, 101)) + "mean 1000.0 us\n"
    # WHEN judged over call+sync, as the benchmark times it
    requests, mean = _judge(output, "call+sync", rep, trace)
    # THEN one verdict for the 100 lines, all within, and the mean agrees
    assert requests.verdict == "agrees" and requests.counts["within"] == 100
    assert requests.reasons[0].startswith("100 of 100 requests within 5% ± 1 µs of their own call+sync")
    assert mean.verdict == "agrees" and mean.ratio == pytest.approx(1.0)
    # WHEN judged over the calls alone
    requests, mean = _judge(output, "call", rep, trace)
    # THEN both are explained by call+sync, not called wrong (the DISAGREES 38x)
    assert requests.verdict == mean.verdict == "explained"
    assert "the benchmark times call+sync per request" in requests.reasons[0]
    assert mean.reasons[0].startswith("mean: the claim 1000.00 µs/op fits call+sync per operation")


def test_requests_that_do_not_fit_disagree_and_name_the_furthest():
    rep, trace = _requests([10] * 100, [0] * 100)
    output = "".join(f"req {i} {10.0 if i != 7 else 500.0} us\n" for i in range(1, 101)) + "mean 10.0 us\n"
    requests, _ = _judge(output, "call", rep, trace)
    # THEN 99 of 100 are within: still agreeing (95 % rule); 90 of 100 would not
    assert requests.verdict == "agrees" and requests.counts["within"] == 99
    output = "".join(f"req {i} {10.0 if i > 10 else 500.0} us\n" for i in range(1, 101)) + "mean 10.0 us\n"
    requests, _ = _judge(output, "call", rep, trace)
    assert requests.verdict == "disagrees" and "furthest: request 1 claims 500.00 µs/op" in requests.reasons[0]


MIXED = """
[[claim]]
pattern = '^req (?P<request>\\d+) (?P<value>[\\d.]+) (?P<unit>us|ms)$'
test = "write"
direction = "write"
match = "operation"
requests = true
"""


def test_request_lines_in_mixed_units_show_the_median_of_their_times():
    # GIVEN 5 requests of 10, 20, 30, 1000 and 2000 µs, printed as a benchmark that switches
    # to ms above 999 µs does: "10.0 us" ... "1.0 ms", "2.0 ms"
    rep, trace = _requests([10, 20, 30, 1000, 2000], [0] * 5)
    output = "req 1 10.0 us\nreq 2 20.0 us\nreq 3 30.0 us\nreq 4 1.0 ms\nreq 5 2.0 ms\n"
    claims = spec.parse(output, spec.loads(MIXED))
    # WHEN judged
    [requests] = matching.match(rep, claims, "spec", ["./bench"], trace=trace)
    # THEN the median shown is 30 µs (the third time), not "2.0 us" (the printed numbers sorted
    # without their units: 1.0, 2.0, 10.0, 20.0, 30.0)
    assert requests.claim.printed.endswith("median 30 us"), requests.claim.printed
    assert (requests.claim.value, requests.claim.unit) == (30.0, "us")
    assert requests.claim.seconds_per_op == pytest.approx(30e-6)
    assert requests.verdict == "agrees" and requests.counts["within"] == 5


def test_sync_time_between_writes_is_not_user_time():
    # GIVEN 200 writes of 10 µs each followed by a 990 µs fdatasync, and a rate claim that fits
    rep, trace = _requests([10] * 200, [990] * 200, gap_us=1)
    from iowitness.analysis.judge.claim import Claim
    bps = float(rep.phases.iloc[0]["wall_Bps"])
    c = Claim("spec", "w", bps, "B/s", "w", bytes_per_s=bps, direction="write", extra={"match": "order"})
    [v] = matching.match(rep, [c], "spec", ["./bench"], trace=trace)
    # THEN no reason calls the time in fdatasync user space (it was 99 % of the phase)
    assert not any("user space" in r for r in v.reasons), v.reasons


def test_multipliers_decimal_and_binary():
    assert spec.number("12.8k") == 12800 and spec.number("146 K") == 146000 and spec.number("1.5M") == 1.5e6
    assert spec.number("2G", 1024) == 2 * 1024 ** 3 and spec.number("1,234") is None
    checked = spec.loads("[benchmark]\nmultipliers = \"binary\"\n[[claim]]\npattern = '^W: (?P<value>\\S+) B/s$'\n"
                         "test = \"w\"\nunit = \"B/s\"\n")
    assert spec.parse("W: 4K B/s\n", checked)[0].bytes_per_s == 4096


def test_a_warm_up_the_spec_did_not_mention_is_found_when_it_alone_accounts_for_the_claim():
    # GIVEN a first request of 5 ms (the benchmark's warm-up, dropped from its figures) and 100
    # of 100 µs, the program printing the mean of the 100 it counts (the trace's mean of all
    # 101 is 148.5 µs)
    rep, trace = _requests([5000] + [100] * 100, [0] * 101)
    mean_only = "[[claim]]" + SPEC.split("[[claim]]")[2].replace("TIMED", "call")
    [v] = matching.match(rep, spec.parse("mean 100.0 us\n", spec.loads(mean_only)), "spec", ["./bench"], trace=trace)
    # THEN it is explained by leaving the first operation out, and says how to say so
    assert v.verdict == "explained" and "without the first 1" in v.reasons[0] and "skip = 1" in v.reasons[0], v.reasons


def test_a_latency_that_does_not_fit_an_strace_import_cannot_be_judged_one_that_fits_agrees():
    # GIVEN 100 writes of 10 µs, imported from strace (its -T times), and a program that says
    # its mean was 30 µs (strace's stops inside its clock) or 10 µs
    rep, trace = _requests([10] * 100, [0] * 100)
    trace.meta["backend"] = "strace"
    # WHEN judged
    _, slow = _judge("req 1 10.0 us\nmean 30.0 us\n", "call", rep, trace)
    _, fits = _judge("req 1 10.0 us\nmean 10.0 us\n", "call", rep, trace)
    # THEN the one that does not fit cannot be judged, and says why; the one that fits agrees
    assert slow.verdict == "cannot judge" and slow.reasons[0].startswith("imported from strace: its ptrace stops")
    assert fits.verdict == "agrees"
    # AND the same trace recorded by the probe calls the first wrong
    trace.meta["backend"] = "libbpf"
    _, probe = _judge("req 1 10.0 us\nmean 30.0 us\n", "call", rep, trace)
    assert probe.verdict == "disagrees"
