"""A figure judged to its printed precision (analysis/judge/precision.py): "1.3 GB/s" is anything
from 1.25 to 1.35, "0.00 ms" anything below 0.005 ms. Traces built call by call, whose rate and
latencies are known exactly."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from iowitness.analysis.benchmarks import spec
from iowitness.analysis.judge import match_claims as matching, precision
from iowitness.analysis.measure import stream_full
from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, Calls

SPEC = """
[[claim]]
pattern = '^rate (?P<value>[\\d.]+) GB/s$'
test = "write"
direction = "write"
unit = "GB/s"
required = false

[[claim]]
pattern = '^avg (?P<value>[\\d.]+) ms$'
test = "write"
direction = "write"
unit = "ms"
match = "operation"
required = false
"""


def _writer(latency_ns: int):
    """200 writes of 1 MB back to back, each taking latency_ns: 1e6 / latency_ns GB/s."""
    calls = Calls().open("/d/f", O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(200):
        calls.write(1_000_000, latency=latency_ns)
    trace = SimpleNamespace(events=calls.close().frame(), meta={"command": ["./bench"], "pid": None})
    return stream_full.build(trace), trace


def _judge(output: str, latency_ns: int):
    rep, trace = _writer(latency_ns)
    return matching.match(rep, spec.parse(output, spec.loads(SPEC)), "spec", ["./bench"], trace=trace)


def test_half_the_last_printed_digit():
    assert precision.half_digit("1.2") == pytest.approx(0.05)
    assert precision.half_digit("0.00") == pytest.approx(0.005)
    assert precision.half_digit("146k") == pytest.approx(500)
    assert precision.half_digit("146K", 1024) == pytest.approx(512)
    assert precision.half_digit("1.5e3") == pytest.approx(50)
    assert precision.half_digit("12") == pytest.approx(0.5) and precision.half_digit("x") is None


def test_a_rate_printed_with_few_digits_is_judged_to_its_last_digit():
    # GIVEN writes at exactly 1.4 GB/s (1 MB in 714,286 ns) WHEN "1.3 GB/s" is claimed
    [rate] = _judge("rate 1.3 GB/s\n", 714_286)
    # THEN it agrees: 1.25 to 1.35 GB/s meets 1.4 GB/s within 5 % (1.3 / 1.4 alone is 0.93×)
    assert rate.verdict == "agrees", rate.reasons
    assert rate.reasons[0].startswith("judged to its printed precision: '1.3 GB/s' is ")
    # AND "1.2 GB/s" (1.15 to 1.25) still disagrees, and "1.40 GB/s" agrees as any claim does
    assert _judge("rate 1.2 GB/s\n", 714_286)[0].verdict == "disagrees"
    exact = _judge("rate 1.40 GB/s\n", 714_286)[0]
    assert exact.verdict == "agrees" and not any("printed precision" in r for r in exact.reasons)


def test_a_zero_printed_is_a_value_below_the_last_digit_not_a_zero():
    # GIVEN writes of 3 µs each WHEN their mean is printed "0.00 ms"
    _, mean = _judge("rate 333 GB/s\navg 0.00 ms\n", 3000)
    # THEN it agrees: below 0.005 ms, which 3 µs is (the issue: a zero that disagrees with everything)
    assert mean.verdict == "agrees", mean.reasons
    assert "'0.00 ms' is below" in mean.reasons[0]
    # AND writes of 2 ms each printed "0.00 ms" disagree: 2 ms does not round to 0.00
    _, mean = _judge("rate 0.5 GB/s\navg 0.00 ms\n", 2_000_000)
    assert mean.verdict == "disagrees", mean.reasons


def _cut_judge(printed: str, latency_ns: int):
    """The spec's mean latency claim, marked as IOzone marks its -N table: cut down, not rounded."""
    rep, trace = _writer(latency_ns)
    claims = spec.parse(f"rate 1 GB/s\navg {printed} ms\n", spec.loads(SPEC))
    claims[1].extra["printed_truncated"] = True
    return matching.match(rep, claims, "spec", ["./bench"], trace=trace)[1]


def test_a_figure_cut_down_to_its_last_digit_stands_for_up_to_a_digit_above():
    # GIVEN writes of 1.77 ms each (IOzone's rewrite of one run: 1.77 µs/op printed "1" with -N)
    # THEN "1" cut down is 1 to 2: it agrees, and says how it was read
    verdict = _cut_judge("1", 1_770_000)
    assert verdict.verdict == "agrees", verdict.reasons
    assert "'1 ms' is 1 to 2 ms (its last digit cut down)" in verdict.reasons[0]
    # AND the same "1" does not stand for a figure below it (0.5 ms), as a rounded one would
    # (it is not agreed; a figure above the calls' may still be user space, the seam's CANNOT JUDGE)
    assert _cut_judge("1", 500_000).verdict in ("disagrees", "cannot judge")
    # AND nor for two digits above it
    assert _cut_judge("1", 2_500_000).verdict == "disagrees"


def test_the_span_a_printed_figure_stands_for():
    # GIVEN IOzone -N's reread as it printed it under load: "5" whole microseconds, cut down,
    # which its calls bound at 5.80 µs/op (iozone_bounds.py judged it DISAGREES, 5 < 5.80 - 5%)
    from iowitness.analysis.judge.claim import Claim
    cut = Claim(source="iozone", test="reread", value=5, unit="us/op", printed="5", seconds_per_op=5e-6,
                extra={"printed_value": "5", "printed_truncated": True})
    # THEN it stands for 5 to 6 µs/op: nothing below, a whole digit above
    below, above = precision.printed_span(cut, 5e-6, "latency")
    assert below == 0 and above == pytest.approx(1e-6)
    # AND a rounded figure, "1.3" GB/s, stands for half its last digit either way; an unprinted one for itself
    rounded = Claim(source="spec", test="w", value=1.3, unit="GB/s", printed="1.3", bytes_per_s=1.3e9,
                    extra={"printed_value": "1.3"})
    assert precision.printed_span(rounded, 1.3e9, "bytes") == pytest.approx((0.05e9, 0.05e9))
    assert precision.printed_span(Claim(source="dd", test="w", value=1.0, unit="MB/s", printed="1"), 1e6, "bytes") \
        == (0.0, 0.0)
