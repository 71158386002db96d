"""A spec's latency of one call over asynchronous requests (analysis/judge/submitted.py), on a
real trace (tests/data/traces/README.md): sysbench fileio --file-io-mode=async reads its clock
around io_submit, the trace times each request from its submission to its reaping."""

from __future__ import annotations

import re
from pathlib import Path

from iowitness import load
from iowitness.analysis.judge import trace_verdicts

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "data" / "traces" / "sysbench_async_rndrd.iwt"
SPEC = ROOT / "docs" / "specs" / "sysbench_fileio.toml"


def test_a_latency_below_its_asynchronous_requests_cannot_be_judged_against_them():
    # GIVEN sysbench's 4,000 asynchronous random reads, traced: each one a request of the trace
    trace = load(str(TRACE))
    events = int(re.search(r"total number of events:\s+(\d+)", trace.output.get("stdout", "")).group(1))
    assert events == int((trace.events["syscall"] == "aio_read").sum()) == 4000

    # WHEN its claims are judged as `check --spec docs/specs/sysbench_fileio.toml` judges them
    verdicts = trace_verdicts.verdicts(trace, spec=str(SPEC))
    mean = next(v for v in verdicts if v.claim.test == "latency" and v.claim.extra["statistic"] == "mean")

    # THEN its mean, "avg: 0.01" ms against the requests' 806 µs from submission to reaping,
    # cannot be judged, and says why; before, it DISAGREED (0.01x)
    assert mean.claim.printed.startswith("avg:") and mean.verdict == "cannot judge", mean.reasons
    assert "requests are asynchronous" in mean.reasons[0] and "4,000 requests" in mean.reasons[0], mean.reasons[0]
    assert not [v for v in verdicts if v.verdict == "disagrees"], [(v.claim.printed, v.reasons[0]) for v in verdicts]


def latency_judged_with(printed_as: str, figure: str, statistic: str):
    """The verdict on the trace's `statistic` latency claim (mean, p95) when its stdout printed
    `figure` after `printed_as` ("avg:") in place of 0.01, judged as `check --spec` judges it."""
    trace = load(str(TRACE))
    output = re.sub(rf"({re.escape(printed_as)}\s+)0\.01", rf"\g<1>{figure}", trace.output["stdout"])
    verdicts = trace_verdicts.verdicts(trace, output, spec=str(SPEC))
    return next(v for v in verdicts if v.claim.test == "latency" and v.claim.extra["statistic"] == statistic)


def test_a_latency_above_its_asynchronous_requests_still_disagrees():
    # GIVEN the same trace, its mean doctored to ten times the requests' own; WHEN judged
    mean = latency_judged_with("avg:", "8.06", "mean")

    # THEN no submission takes longer than its request: it disagrees
    assert mean.claim.value == 8.06 and mean.verdict == "disagrees", mean.reasons


def test_a_latency_printed_as_zero_over_asynchronous_requests_cannot_be_judged():
    # GIVEN the same trace, its p95 as another run printed it: "0.00" ms (a submission below 5 µs);
    # WHEN judged
    p95 = latency_judged_with("95th percentile:", "0.00", "p95")

    # THEN a zero is a figure below the requests' too: cannot judge, never DISAGREES (seen on a real run)
    assert p95.claim.value == 0 and p95.verdict == "cannot judge", p95.reasons
    assert "requests are asynchronous" in p95.reasons[0], p95.reasons[0]
