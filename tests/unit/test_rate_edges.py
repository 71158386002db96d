"""A spec rate whose benchmark's clock started before its first call (analysis/judge/rate_edges.py),
on traces built call by call in hdparm -T's shape: a 2 MiB read primes the cache, an fsync and an
fdatasync flush, the thread sleeps a second, reads its clock, is preempted 30 ms before its loop's
first lseek, then times 100 lseeks and 2 MiB reads of 2 ms each and prints bytes over the time
from its clock read. Ground truth: the built calls' times and the built wait; the printed figure
is the program's own arithmetic over them. Doctored figures beyond every window still disagree."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from iowitness.analysis.judge import match_claims as matching, trace_verdicts as judged
from iowitness.analysis.measure import stream_full
from iowitness.analysis.read import printed
from iowitness.analysis.read.printed import PrintedLine
from tests.support.synthetic import O_RDONLY, Calls

MS, MiB = 1_000_000, 1 << 20
SLEEP_MS, WAIT_MS, READS, READ_MS = 1_000, 30, 100, 2
SPEC = """
[[claim]]
pattern = '^cached: (?P<value>[\\d.]+) MB/sec$'
test = "cached reads"
direction = "read"
unit = "MiB/s"
skip = 1
timing_end_line = 'cached:'
"""
OFF = [("off_ns", "<u8"), ("on_ns", "<u8"), ("tgid", "<u4"), ("tid", "<u4"), ("state", "<u4"), ("pad0", "<u4")]


def _cached_reads():
    """(calls, clock, loop_end, off-CPU records): hdparm -T's calls, when its clock started, when
    its loop's last read ended, and its thread's sleep and wait for a CPU."""
    calls = Calls().open("/dev/loop7", O_RDONLY)
    calls.lseek(0, latency=1_000).read(2 * MiB, offset=0, latency=20 * MS)
    calls.fsync(latency=5 * MS).fsync(syscall="fdatasync", latency=MS)
    asleep = (calls.now + 10_000, calls.now + 10_000 + SLEEP_MS * MS)
    calls.gap(SLEEP_MS * MS + 20_000)
    clock = calls.now
    waited = (clock + 5_000, clock + 5_000 + WAIT_MS * MS)
    calls.gap(WAIT_MS * MS + 10_000)
    for _ in range(READS):
        calls.lseek(0, latency=500).read(2 * MiB, offset=0, latency=READ_MS * MS)
    loop_end = calls.now
    calls.gap(50_000).close()
    off = np.zeros(2, dtype=OFF)
    off["off_ns"], off["on_ns"] = (asleep[0], waited[0]), (asleep[1], waited[1])
    off["tgid"] = off["tid"] = 1000
    off["state"] = (1, 0)           # sleeping, preempted (probes/events.h)
    return calls, clock, loop_end, off


def _judge(value: float, *, offcpu: bool = True, tmp_path, monkeypatch, sleep_known: bool = True):
    calls, _, loop_end, off = _cached_reads()
    spec = tmp_path / "bench.toml"
    spec.write_text(SPEC)
    line = f"cached: {value:.2f} MB/sec"
    trace = SimpleNamespace(events=calls.frame(), meta={"command": ["./bench"], "pid": None},
                            output={"stdout": line + "\n", "stderr": ""},
                            offcpu=(off if sleep_known else off[1:]) if offcpu else None)
    monkeypatch.setattr(printed, "lines_of", lambda tr: [PrintedLine(line, loop_end + 2 * MS, "stdout")])
    source, claims = judged.claims_of(trace, None, spec=str(spec))
    (verdict,) = matching.match(stream_full.build(trace), claims, source, ["./bench"], trace=trace)
    return verdict


def _printed() -> float:
    """The benchmark's own figure: 100 reads of 2 MiB over the time from its clock read."""
    _, clock, loop_end, _ = _cached_reads()
    return READS * 2 / ((loop_end - clock) / 1e9)


def test_the_figure_is_below_its_calls_beyond_the_tolerance():
    calls, clock, loop_end, _ = _cached_reads()
    # the loop's calls alone: 100 x (0.5 µs + 2 ms); the clock took in the 30 ms wait too
    assert _printed() / (READS * 2 / ((READS * (READ_MS * MS + 500)) / 1e9)) == pytest.approx(0.87, abs=0.01)


def test_a_wait_for_a_cpu_before_the_first_call_explains_the_figure(tmp_path, monkeypatch):
    # WHEN the trace's off-CPU records show the thread preempted between the flush and the loop
    verdict = _judge(_printed(), tmp_path=tmp_path, monkeypatch=monkeypatch)
    # THEN the figure is explained by that wait, named with the figure it gives
    assert verdict.verdict == "explained", verdict.reasons
    assert verdict.reasons[0].startswith("preempted at the edge: the thread waited 30"), verdict.reasons[0]
    assert "the end of its fdatasync before" in verdict.reasons[0], verdict.reasons[0]
    assert verdict.figures["with the waits at the edges"] == pytest.approx(_printed() * MiB, rel=0.01)


def test_without_off_cpu_records_the_edge_cannot_be_judged(tmp_path, monkeypatch):
    # WHEN the trace has no off-CPU records (no evidence of the wait, no sleep to take out)
    verdict = _judge(_printed(), offcpu=False, tmp_path=tmp_path, monkeypatch=monkeypatch)
    # THEN the figure lies between the calls' and the widest window's: cannot be judged, never disagrees
    assert verdict.verdict == "cannot judge", verdict.reasons
    assert verdict.reasons[0].startswith("at the edge: ") and "no off-CPU records" in verdict.reasons[0], \
        verdict.reasons[0]


@pytest.mark.parametrize("share, expected", [
    (0.5, "cannot judge"),     # within the window only with the second's sleep left in
    (0.1, "disagrees"),        # below even that: 1.25 s over 200 MiB is 160 MiB/s, 0.16 of the calls'
    (1.3, "disagrees"),        # above the calls: no edge gives a faster figure
])
def test_a_doctored_figure_beyond_the_edges_is_not_explained(share, expected, tmp_path, monkeypatch):
    verdict = _judge(_printed() / 0.87 * share, tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert verdict.verdict == expected, verdict.reasons
    if share == 0.5:
        assert "only a clock that ran on while its thread slept" in verdict.reasons[0], verdict.reasons[0]
    if share == 0.1:
        assert "no clock between those edges gives it" in verdict.reasons[1], verdict.reasons


def test_a_figure_of_the_calls_own_is_left_as_it_is(tmp_path, monkeypatch):
    verdict = _judge(READS * 2 / ((READS * (READ_MS * MS + 500)) / 1e9), tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert verdict.verdict == "agrees" and not any("edge" in r for r in verdict.reasons), verdict.reasons
