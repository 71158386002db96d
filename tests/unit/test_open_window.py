"""A claim timed from the open of its file to its close (analysis/judge/open_window.py): fio's read
job after a write job on the same file, whose runtime takes in the open and the cache
invalidation before its first read. A trace built call by call, whose times are known."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.measure import stream_full
from tests.support.synthetic import O_RDONLY, Calls

MIB = 1024 * 1024


def _reader(set_up_ns: int):
    """An open, set_up_ns of nothing the trace sees, 128 reads of 512 KiB of 0.5 ms, a close."""
    calls = Calls().open("/d/data.bin", O_RDONLY).gap(set_up_ns)
    for _ in range(128):
        calls.read(MIB // 2, latency=500_000)
    trace = SimpleNamespace(events=calls.close().frame(), meta={"command": ["./bench"], "pid": None})
    return stream_full.build(trace), trace


def _verdict(rep, trace, bytes_per_s: float):
    claim = Claim("spec", "read", bytes_per_s / MIB, "MiB/s", "...", bytes_per_s=bytes_per_s, direction="read",
                  extra={"match": "order"})
    [verdict] = matching.match(rep, [claim], "spec", ["./bench"], trace=trace)
    return verdict


def test_a_claim_timed_from_the_open_to_the_close_is_explained_so():
    # GIVEN 64 MiB read in 64 ms of 128 calls, 8 ms after the open (fio's invalidation)
    rep, trace = _reader(8_000_000)
    open_to_close = 64 * MIB / ((1_000 + 8_000_000 + 64_000_000 + 1_000) / 1e9)
    # WHEN the benchmark claims the bytes over its open-to-close time (0.89 of the calls' rate)
    verdict = _verdict(rep, trace, open_to_close)
    # THEN it is explained by that window, with its figure
    assert verdict.verdict == "explained", verdict.reasons
    assert verdict.reasons[0].startswith("the benchmark's clock ran from its open of the file to its close")
    assert verdict.figures["open to close"] == pytest.approx(open_to_close)
    # AND a claim that fits neither window still disagrees
    assert _verdict(rep, trace, open_to_close * 0.8).verdict == "disagrees"


def test_a_claim_that_fits_the_calls_is_not_touched():
    rep, trace = _reader(8_000_000)
    verdict = _verdict(rep, trace, 64 * MIB / 0.064)
    assert verdict.verdict == "agrees" and "open to close" not in verdict.figures
