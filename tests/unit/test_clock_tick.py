"""A figure timed by a coarse clock (analysis/judge/clock_tick.py): fio's runtime in whole
milliseconds rounded up, postmark's whole seconds. A trace built call by call, whose times are
known: 1,024 reads of 4 KiB of 13.64 µs each, 13.97 ms of calls, the shape of fio's randread of a
cached raw disk that one CI run printed as "BW=267MiB/s (4096KiB/15msec)"."""

from __future__ import annotations

from types import SimpleNamespace

from iowitness.analysis.benchmarks import fio
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.measure import stream_full
from tests.support.synthetic import O_RDONLY, Calls

MIB = 1024 * 1024
CALLS_NS = 1024 * 13_640


def _reader(count: int = 1024, size: int = 4096, latency: int = 13_640):
    calls = Calls().open("/dev/loop9", O_RDONLY)
    for _ in range(count):
        calls.read(size, latency=latency)
    trace = SimpleNamespace(events=calls.close().frame(), meta={"command": ["./bench"], "pid": None})
    return stream_full.build(trace), trace


def _verdict(elapsed_s: float, reader=(), **clock):
    rep, trace = _reader(*reader)
    rate = 4 * MIB / elapsed_s
    claim = Claim("spec", "read", rate / MIB, "MiB/s", "...", bytes_per_s=rate, direction="read",
                  extra={"match": "order", **clock})
    [verdict] = matching.match(rep, [claim], "spec", ["./bench"], trace=trace)
    return verdict


def test_fios_millisecond_runtime_rounded_up_agrees_to_its_tick():
    # GIVEN fio's figure over its runtime of 15 ms for 13.97 ms of calls (7 % below their rate)
    verdict = _verdict(0.015, **fio.CLOCK)
    # THEN it agrees, judged to fio's clock, and says so
    assert verdict.verdict == "agrees", verdict.reasons
    assert verdict.reasons[0].startswith("judged to its clock's tick") and "fio's runtime" in verdict.reasons[0]
    # AND without the tick the same figure disagrees
    assert _verdict(0.015).verdict == "disagrees"


def test_a_tick_does_not_cover_what_it_cannot_explain():
    # a runtime two ticks above the calls is not the tick's doing
    assert _verdict(0.017, **fio.CLOCK).verdict == "disagrees"
    # a clock rounded up never reads below the true time: 13 ms for 13.97 ms of calls is too fast ...
    assert _verdict(0.0125, **fio.CLOCK).verdict == "disagrees"
    # ... where a clock truncated at both ends (postmark's time()) may read a tick short
    truncated = _verdict(0.0125, clock_s=1e-3)
    assert truncated.verdict == "agrees" and "spec clock_seconds" in truncated.reasons[0]


def test_a_phase_too_short_to_tell_why_is_told_by_the_tick():
    # GIVEN fio's 4 MiB read of a cached file in 64 calls of 8 µs (0.51 ms), printed over 1 ms
    # ("BW=4000MiB/s (4194MB/s)(4096KiB/1msec)", seen on this machine): half the calls' rate
    short = (64, 65536, 8_000)
    # WITHOUT the tick it cannot be judged: too short to tell why
    bare = _verdict(0.001, short)
    assert bare.verdict == "cannot judge" and bare.reasons[0].endswith("too short to tell why"), bare.reasons
    # WITH it, the tick tells why: it agrees to fio's clock, and the old reason is gone
    ticked = _verdict(0.001, short, **fio.CLOCK)
    assert ticked.verdict == "agrees" and ticked.reasons[0].startswith("judged to its clock's tick"), ticked.reasons
    assert not any("too short to tell why" in r for r in ticked.reasons)
    # AND a figure a rounded-up clock cannot print for these calls still cannot be judged
    assert _verdict(0.0002, short, **fio.CLOCK).verdict == "cannot judge"


def test_fios_rate_claims_carry_its_clock_and_its_latencies_do_not():
    text = ("raw: (groupid=0, jobs=1): err= 0: pid=1: Sat Nov 28 01:00:00 2026\n"
            "  read: IOPS=68.3k, BW=267MiB/s (280MB/s)(4096KiB/15msec)\n"
            "    clat (nsec): min=9000, max=90000, avg=13400.00, stdev=2000.00\n"
            "     lat (nsec): min=9100, max=90100, avg=13500.00, stdev=2000.00\n")
    claims = fio.parse(text)
    rates = [c for c in claims if c.bytes_per_s]
    assert rates and all(c.extra["clock_s"] == 1e-3 and c.extra["clock_rounds"] == "up" for c in rates)
    assert all("clock_s" not in c.extra for c in claims if not c.bytes_per_s)
