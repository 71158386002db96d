"""A rate whose end line states how long its period was (analysis/judge/stated_period.py):
dbench -t 5's shape, its statistics reset at a silent alarm after a warm-up, its "execute T sec"
lines over the time since that reset, on synthetic traces whose times are known."""

from __future__ import annotations

import numpy as np
import pytest

from iowitness.analysis.judge.stated_period import figure_range
from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, Calls
from tests.unit.test_claim_windows import MS, KiB, _judge

SPEC = """
[[claim]]
pattern = '^\\s+\\d+\\s+\\d+\\s+(?P<value>[\\d.]+) MB/sec\\s+execute\\s+(?P<sec>\\d+) sec'
test = "execute {sec} s"
direction = "write"
unit = "MB/s"
scope = "run"
timing_line = '^releasing clients'
timing_end_line = 'MB/sec\\s+execute\\s+(?P<seconds>\\d+) sec'

[[claim]]
pattern = '^Throughput (?P<value>[\\d.]+) MB/sec'
test = "throughput"
direction = "write"
unit = "MB/s"
scope = "run"
timing_line = '^releasing clients'
timing_end_line = 'MB/sec\\s+execute\\s+(?P<seconds>\\d+) sec'
"""


def _warmed_up(factor: float = 1.0, late_ms: int = 40):
    """'releasing clients', 1 s of warm-up writing 64 KiB every 0.5 ms, then a silent reset (at
    1 s + `late_ms`: an alarm delivered late), then 64 KiB every 2 ms; an 'execute k sec' line
    each 1 s + `late_ms` after the reset (or the line before), each the bytes of the writes since
    the reset over the time since (times `factor`: a doctored figure), then 'Throughput', the
    last one's again."""
    calls = Calls()
    lines = [("releasing clients", calls.now)]
    calls.open("/d/f", O_WRONLY | O_CREAT | O_TRUNC)
    reset = calls.now + (1000 + late_ms) * MS
    beats = [reset + k * (1000 + late_ms) * MS for k in (1, 2, 3)]
    writes: list[tuple[int, int]] = []   # (start, end) of each write
    figure = 0.0
    while calls.now < beats[-1] + 500 * MS:
        step = 500_000 if calls.now < reset else 2 * MS
        started = calls.now
        calls.write(64 * KiB, latency=100_000)
        writes.append((started, calls.now))
        calls.gap(step - 100_000)
        for k, beat in enumerate(beats, 1):
            if calls.now - step < beat <= calls.now:
                moved = sum(64 * KiB for start, end in writes if start >= reset and end <= beat)
                figure = moved / ((beat - reset) / 1e9) / 1e6 * factor
                lines.append((f"   1     {k * 1000:5d}  {figure:7.2f} MB/sec  execute {k:3d} sec  latency 1.0 ms",
                              beat))
    calls.close()
    lines.append((f"Throughput {figure:g} MB/sec  1 clients  1 procs  max_latency=1.0 ms", calls.now))
    return calls, lines


def test_lines_over_the_seconds_since_a_silent_reset_agree(tmp_path, monkeypatch):
    # GIVEN a benchmark that warms up 1 s at 4x the rate, resets its statistics silently, then
    # prints each second the bytes since the reset over the time since ("execute k sec"), its
    # alarms 40 ms late, and a final Throughput that is the last line's figure again
    calls, lines = _warmed_up()
    # WHEN judged with a spec whose end line states the seconds
    verdicts = _judge(calls, lines, SPEC, tmp_path, monkeypatch)
    # THEN every line agrees, each over the period its printed seconds allow
    assert [v.claim.test for v in verdicts] == ["execute 1 s", "execute 2 s", "execute 3 s", "throughput"]
    for v in verdicts:
        assert v.verdict == "agrees", (v.claim.printed, v.ratio, v.reasons)
        assert any("as its timing_end_line's seconds say" in r for r in v.reasons), v.reasons


def test_from_the_timing_line_the_warm_up_makes_them_disagree(tmp_path, monkeypatch):
    # GIVEN the same run, its spec starting the period at 'releasing clients' (the end line
    # stating no seconds): the warm-up's 4x rate counted in
    calls, lines = _warmed_up()
    spec = SPEC.replace("\\s+(?P<seconds>\\d+) sec'", "'")
    assert "seconds" not in spec
    # WHEN judged THEN the first line disagrees: what the stated seconds fix
    first = _judge(calls, lines, spec, tmp_path, monkeypatch)[0]
    assert first.verdict == "disagrees", (first.ratio, first.reasons)


@pytest.mark.parametrize("factor", [0.7, 1.4])
def test_a_figure_off_every_stated_period_disagrees(tmp_path, monkeypatch, factor):
    # GIVEN the same run printing 0.7x or 1.4x its figures
    calls, lines = _warmed_up(factor)
    # WHEN judged
    verdicts = _judge(calls, lines, SPEC, tmp_path, monkeypatch)
    # THEN the last second's line (T = 3 allows 2.5 to 3.5 s, none in the warm-up) disagrees,
    # naming the range the stated seconds allow
    last = verdicts[2]
    assert last.verdict == "disagrees", (last.ratio, last.reasons)
    assert any("its printed precision" in r and "the claim is outside it too" in r for r in last.reasons), last.reasons


def test_figure_range_over_the_starts_a_printed_number_allows():
    # GIVEN ten calls of 100 bytes starting every 100 ms from 0, a line at 1 s
    starts = np.arange(10, dtype=np.int64) * 100 * MS
    moved = np.full(10, 100.0)
    # WHEN the period starts anywhere from 0 to 0.5 s
    least, most = figure_range(starts, moved, 0, 500 * MS, 1000 * MS)
    # THEN the least is just after the start at 0.4 s (the five calls from 0.5 s over 0.6 s),
    # the most at 0.4 s or at 0.5 s (six calls over 0.6 s, five over 0.5 s)
    assert least == pytest.approx(500 / 0.6)
    assert most == pytest.approx(1000.0)
    # AND no period at all when the bracket is empty
    assert figure_range(starts, moved, 500 * MS, 500 * MS, 1000 * MS) is None
