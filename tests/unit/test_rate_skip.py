"""A rate's `skip` (docs/claims-spec.md): the benchmark's warm-up calls are out of its figure, so
the window starts at the first call after them. The shape is hdparm -T's: one 2 MiB read primes
the cache, a flush and a second's sleep follow, then the timed loop of lseek + read of the same
2 MiB; the figure is the loop's bytes over the loop's time."""

from __future__ import annotations

import pytest

from iowitness.analysis.benchmarks import spec as spec_module
from tests.support.synthetic import O_RDONLY, Calls
from tests.unit.test_claim_windows import MS, _judge

MiB = 1 << 20
SPEC = """
[[claim]]
pattern = '^cached: (?P<value>[\\d.]+) MB/sec$'
test = "cached reads"
direction = "read"
unit = "MiB/s"
{skip}
"""


def _primed_loop():
    """(calls, lines): the prime (20 ms from the device), fsync, 1 s of sleep, then 100 reads of
    2 MiB at 2 ms each; the line prints the loop's own rate."""
    calls = Calls()
    calls.open("/dev/loop7", O_RDONLY)
    calls.lseek(0, latency=1_000).read(2 * MiB, offset=0, latency=20 * MS)
    calls.fsync(latency=5 * MS).gap(1_000 * MS)
    first = calls.now
    for _ in range(100):
        calls.lseek(0, latency=500).read(2 * MiB, offset=0, latency=2 * MS)
    rate = 100 * 2 / ((calls.now - first) / 1e9)
    lines = [(f"cached: {rate:.2f} MB/sec", calls.now + MS)]
    return calls, lines


@pytest.mark.parametrize("skip", ["", "skip = 1"])
def test_a_rates_skip_starts_its_window_after_the_warm_up_calls(tmp_path, monkeypatch, skip):
    calls, lines = _primed_loop()
    (verdict,) = _judge(calls, lines, SPEC.replace("{skip}", skip), tmp_path, monkeypatch)
    if skip:
        # THEN the window is the loop's: the figure agrees
        assert verdict.verdict == "agrees", (verdict.ratio, verdict.reasons)
        assert verdict.ratio == pytest.approx(1.0, abs=0.01)
    else:
        # (without it the prime and the second of sleep are in the window: 1.4 s against 0.25 s)
        assert verdict.verdict == "disagrees" and verdict.ratio > 3


def test_skip_beyond_the_calls_leaves_the_window_whole(tmp_path, monkeypatch):
    calls, lines = _primed_loop()
    (verdict,) = _judge(calls, lines, SPEC.replace("{skip}", "skip = 500"), tmp_path, monkeypatch)
    assert verdict.verdict == "disagrees"


def test_a_rates_skip_with_operations_of_several_calls_is_refused_in_one_line():
    text = SPEC.replace("{skip}", 'skip = 2\ntimed = "calls+sync"').replace('"MiB/s"', '"ops/s"')
    with pytest.raises(spec_module.SpecError, match="'skip': a rate's skip"):
        spec_module.loads(text)
