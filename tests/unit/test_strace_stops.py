"""An strace-imported rate above the trace's (analysis/judge/strace_stops.py): CANNOT JUDGE
when the time between the calls and the fastest call's time on every call, which may be ptrace's
stops, bound it; DISAGREES above even that, and under the probe as before."""

from __future__ import annotations

import pytest

from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, Calls
from tests.unit.test_claim_windows import MS, KiB, _judge

SPEC = """
[[claim]]
pattern = '^write: (?P<value>[\\d.]+) MB/s$'
test = "write"
direction = "write"
unit = "MB/s"
"""


def _writes(factor: float):
    """200 writes of 64 KiB, 20 or 40 µs each, 30 µs apart; the line claims `factor` times the
    calls' rate (first call to last)."""
    calls = Calls().open("/d/f", O_WRONLY | O_CREAT | O_TRUNC)
    first = calls.now
    for i in range(200):
        calls.write(64 * KiB, latency=20_000 if i % 2 else 40_000).gap(30_000)
    rate = 200 * 64 * KiB / ((calls.now - 30_000 - first) / 1e9) / 1e6
    calls.close().gap(MS)
    return calls, [(f"write: {rate * factor:.1f} MB/s", calls.now)]


@pytest.mark.parametrize("backend, factor, verdict", [
    ("strace", 1.5, "cannot judge"),    # the stops the trace bounds explain it (up to ~6x)
    ("strace", 10.0, "disagrees"),      # above even that
    (None, 1.5, "disagrees"),           # the probe's trace: no stops to account for
])
def test_a_rate_above_the_trace_under_strace(tmp_path, monkeypatch, backend, factor, verdict):
    # GIVEN a claim above the calls' rate, from an strace import or from the probe
    calls, lines = _writes(factor)
    meta = {"backend": backend} if backend else {}
    # WHEN judged
    [v] = _judge(calls, lines, SPEC, tmp_path, monkeypatch, meta=meta)
    # THEN as the stops the trace bounds allow
    assert v.verdict == verdict, (v.ratio, v.reasons)
    if verdict == "cannot judge":
        assert v.reasons[0].startswith("imported from strace: the claim is above the trace's")
        assert "within what ptrace's stops explain" in v.reasons[0]
