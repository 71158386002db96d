"""A rate timed from its spec's timing_line to its timing_end_line (analysis/judge/timed_lines.py):
dbench's shape, its client let go late and inside a flush when the clock is read, on a
synthetic trace whose times are known."""

from __future__ import annotations

import pytest

from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, Calls
from tests.unit.test_claim_windows import MS, KiB, _judge

SPEC = """
[[claim]]
pattern = '^total (?P<sec>\\d): (?P<value>[\\d.]+) MB/s$'
test = "total {sec}"
direction = "write"
unit = "MB/s"
scope = "run"
timing_line = '^go$'
timing_end_line = '^total'
"""


def _late_and_flushing(factor: float = 1.0):
    """'go', then 50 ms with no call (the client let go late), 200 writes of 64 KiB in 500 ms,
    then a 400 ms fsync still running when the line is printed, 1 s after 'go': the line says
    the bytes over that second (times `factor`: a doctored figure)."""
    calls = Calls()
    go = calls.now
    lines = [("go", go)]
    calls.gap(50 * MS).open("/d/f", O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(200):
        calls.write(64 * KiB, latency=2 * MS).gap(500_000)
    calls.fsync(latency=2000 * MS)   # ends after the line: it is no data call anyway
    printed = go + 1000 * MS
    rate = 200 * 64 * KiB / 1.0 / 1e6 * factor
    lines.append((f"total 1: {rate:.2f} MB/s", printed))
    calls.close()
    return calls, lines


def test_a_rate_timed_between_its_lines_agrees_though_its_calls_span_less(tmp_path, monkeypatch):
    # GIVEN a benchmark whose clock runs from its 'go' line to its 'total' line (1 s), its calls
    # spanning 0.5 s of it
    calls, lines = _late_and_flushing()
    # WHEN judged
    v, = _judge(calls, lines, SPEC, tmp_path, monkeypatch)
    # THEN it agrees with the bytes over the time between the two lines, and says so with both figures
    assert v.verdict == "agrees" and v.window == "lines", (v.verdict, v.reasons)
    assert v.ratio == pytest.approx(1.0, abs=0.01)
    assert v.figures["calls"] > 1.8 * v.figures["lines"]   # (judged on its calls' span: 0.5x, DISAGREES before)
    assert v.reasons[0].startswith("timed between its lines: claim 12.5 MiB/s"), v.reasons


@pytest.mark.parametrize("factor, verdict", [(1.5, "explained"), (0.6, "disagrees"), (3.5, "disagrees")])
def test_a_rate_off_its_lines_is_explained_only_within_its_calls(tmp_path, monkeypatch, factor, verdict):
    # GIVEN the same run printing 1.5x its figure (its clock started late, within its calls'
    # span), 0.6x (below any window between the lines) or 3.5x (above its calls' own figures)
    calls, lines = _late_and_flushing(factor)
    # WHEN judged
    v, = _judge(calls, lines, SPEC, tmp_path, monkeypatch)
    # THEN only the figure a clock between the lines and over the calls could read is explained
    assert v.verdict == verdict, (v.ratio, v.reasons)
    if verdict == "explained":
        assert v.reasons[0].startswith("clock between its lines and its calls"), v.reasons
    else:
        assert any("and the claim is outside it too" in r for r in v.reasons), v.reasons


@pytest.mark.parametrize("left_out", ["timing_end_line = '^total'\n", 'scope = "run"\n'])
def test_without_an_end_line_or_for_a_tests_own_figure_the_calls_window_stands(tmp_path, monkeypatch, left_out):
    # GIVEN the same run, its spec naming only where the clock starts, or its figure not a
    # run-wide total (a test's own figure may be timed from some point after its timing_line:
    # hdparm -t flushes and waits first)
    calls, lines = _late_and_flushing()
    # WHEN judged THEN the lines rule does not apply
    v, = _judge(calls, lines, SPEC.replace(left_out, ""), tmp_path, monkeypatch)
    assert "lines" not in v.figures
