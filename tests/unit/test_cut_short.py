"""A test the trace's end cut short (analysis/judge/cut_short.py): its claims cannot be judged and
say how far the trace got; a test the trace saw whole, or a trace that saw the benchmark to its
end, is judged as any other. Traces built call by call, whose every byte is known."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.measure import stream_full
from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, Calls

MIB = 1024 * 1024
# 24 MiB in 1 MiB writes, 10 ms apart: 100 MiB/s, as dd says of its whole 256 MiB
CLAIMED_BPS = 24 * MIB / (23 * 0.010 + 24 * 1e-6)


def _writer(closed: bool, meta: dict):
    calls = Calls().open("/d/out.bin", O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(24):
        calls.write(MIB).gap(10_000_000)
    if closed:
        calls.close()
    trace = SimpleNamespace(events=calls.frame(), meta={"command": ["dd"], "pid": None, **meta})
    return stream_full.build(trace), trace


def _verdict(rep, trace, said_bytes: int):
    claim = Claim("dd", "dd write", CLAIMED_BPS / 1e6, "MB/s", "...", bytes_per_s=CLAIMED_BPS, direction="write",
                  extra={"bytes": said_bytes, "match": "order"})
    [verdict] = matching.match(rep, [claim], "spec", ["dd"], trace=trace)
    return verdict


@pytest.mark.parametrize("meta", [{"complete": True, "left_running": True}, {"complete": False}],
                         ids=["--on-fault continue", "collector killed"])
def test_a_test_the_trace_end_cut_cannot_be_judged_and_says_how_far_the_trace_got(meta):
    # GIVEN 24 MiB written at the claimed rate, the file still open when the trace ended early
    rep, trace = _writer(closed=False, meta=meta)
    # WHEN dd's claim of 256 MiB at that rate is judged
    verdict = _verdict(rep, trace, 256 * MIB)
    # THEN it cannot be judged, and says how far the trace got, never AGREES (the issue: 0.990)
    assert verdict.verdict == "cannot judge", verdict.reasons
    assert verdict.reasons[0].startswith("the trace ends 24.0 MiB into 256.0 MiB: phase 1 was under way")
    assert "the trace ended before the benchmark" in verdict.reasons[1]


def test_a_whole_test_or_a_whole_trace_is_judged():
    # GIVEN the same writes in a trace that saw the benchmark to its end
    rep, trace = _writer(closed=False, meta={"complete": True})
    # THEN the claim agrees
    assert _verdict(rep, trace, 24 * MIB).verdict == "agrees"
    # AND in a trace that ended early, a test whose bytes are all in it, or whose file was
    # closed, is judged too
    rep, trace = _writer(closed=False, meta={"complete": False})
    assert _verdict(rep, trace, 24 * MIB).verdict == "agrees"
    rep, trace = _writer(closed=True, meta={"complete": False})
    assert _verdict(rep, trace, 256 * MIB).verdict != "cannot judge"
