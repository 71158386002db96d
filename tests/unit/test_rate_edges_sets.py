"""A spec rate over several phases held to its clock's edges (analysis/judge/rate_edges.py), on
traces built call by call. One thread: it flushes, reads its clock, waits 30 ms for a CPU, then
writes file A and file B (120 writes of 256 KiB, 1 ms each, a file) and prints all the bytes over
the time from its clock read: one window over both phases, held to that thread's calls, as one
phase is. Two threads writing A and B at once, timed by a clock the trace cannot place: held
to the benchmark's output lines only. Ground truth: the built calls' times and the built wait;
the printed figure is the program's own arithmetic over them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from iowitness.analysis.judge import match_claims as matching, trace_verdicts as judged
from iowitness.analysis.measure import stream_full
from iowitness.analysis.read import printed
from iowitness.analysis.read.printed import PrintedLine
from tests.support.synthetic import O_WRONLY, Calls

MS, MiB = 1_000_000, 1 << 20
WAIT_MS, WRITES, WRITE_MS, SIZE = 30, 120, 1, 256 << 10
SPEC = """
[[claim]]
pattern = '^wrote: (?P<value>[\\d.]+) MiB/s$'
test = "writes"
direction = "write"
unit = "MiB/s"
scope = "{scope}"
"""
OFF = [("off_ns", "<u8"), ("on_ns", "<u8"), ("tgid", "<u4"), ("tid", "<u4"), ("state", "<u4"), ("pad0", "<u4")]


def _writes(calls: Calls, path: str, fd: int) -> None:
    calls.open(path, O_WRONLY, fd=fd)
    for k in range(WRITES):
        calls.write(SIZE, offset=k * SIZE, latency=WRITE_MS * MS)
    calls.close()


def _one_thread(read_first: bool = True):
    """(calls, clock, end, off-CPU records): a read (read_first) and a flush of another file,
    the clock read, the wait, files A and B."""
    calls = Calls().open("/w/prev")
    if read_first:
        calls.read(4096, offset=0)
    calls.fsync(latency=MS).close()
    clock = calls.now + 10_000
    calls.gap(10_000 + WAIT_MS * MS + 5_000)
    _writes(calls, "/w/a", 4)
    _writes(calls, "/w/b", 4)
    off = np.zeros(1, dtype=OFF)
    off["off_ns"], off["on_ns"] = clock + 2_000, clock + 2_000 + WAIT_MS * MS
    off["tgid"] = off["tid"] = 1000
    off["state"] = 0                # preempted (probes/events.h)
    return calls, clock, calls.now, off


def _two_threads():
    """(calls, clock, end, no off-CPU record): a starting line, the clock, threads 1001 and 1002."""
    calls = Calls()
    clock = calls.now + 1 * MS
    start = clock + WAIT_MS * MS
    calls.process(1000, 1001).at(start)
    _writes(calls, "/w/a", 4)
    calls.process(1000, 1002).at(start + 1_000)
    _writes(calls, "/w/b", 5)
    return calls, clock, calls.now, None


def _judge(value: float, shape, scope: str, tmp_path, monkeypatch, offcpu: bool = True):
    return _judged(shape(), SPEC.format(scope=scope), f"wrote: {value:.2f} MiB/s", tmp_path, monkeypatch, offcpu)


def _judged(built, spec_text: str, line: str, tmp_path, monkeypatch, offcpu: bool):
    """The one verdict of `line`, printed 2 ms after the built calls' end, under `spec_text`."""
    calls, clock, end, off = built
    spec = tmp_path / "bench.toml"
    spec.write_text(spec_text)
    trace = SimpleNamespace(events=calls.frame(), meta={"command": ["./bench"], "pid": None},
                            output={"stdout": "starting\n" + line + "\n", "stderr": ""},
                            offcpu=off if offcpu else None)
    monkeypatch.setattr(printed, "lines_of", lambda tr: [PrintedLine("starting", clock - 500_000, "stdout"),
                                                         PrintedLine(line, end + 2 * MS, "stdout")])
    source, claims = judged.claims_of(trace, None, spec=str(spec))
    (verdict,) = matching.match(stream_full.build(trace), claims, source, ["./bench"], trace=trace)
    return verdict


def _printed(shape) -> float:
    """The benchmark's own figure: the 60 MiB over the time from its clock read to its last write."""
    _, clock, end, _ = shape()
    return 2 * WRITES * SIZE / MiB / ((end - clock) / 1e9)


def test_one_threads_two_files_are_one_window_held_to_its_calls(tmp_path, monkeypatch):
    # GIVEN the one thread's figure, 30 ms of wait over 240 ms of writes below its calls'
    # WHEN judged over the run (both files) with the thread's off-CPU records
    verdict = _judge(_printed(_one_thread), _one_thread, "run", tmp_path, monkeypatch)
    # THEN its phases are one window: the wait before its first write explains the figure
    assert len(verdict.phases) == 2 and verdict.verdict == "explained", (verdict.phases, verdict.reasons)
    assert verdict.reasons[0].startswith("preempted at the edge: the thread waited 30"), verdict.reasons[0]
    assert "the end of its fsync before" in verdict.reasons[0], verdict.reasons[0]
    # AND without those records it cannot be judged, never disagrees
    verdict = _judge(_printed(_one_thread), _one_thread, "run", tmp_path, monkeypatch, offcpu=False)
    assert verdict.verdict == "cannot judge" and verdict.reasons[0].startswith("at the edge: "), verdict.reasons


def test_two_threads_are_held_to_the_output_lines_only(tmp_path, monkeypatch):
    # GIVEN two threads' figure, by a clock read 30 ms before either wrote, whose thread the trace cannot tell
    verdict = _judge(_printed(_two_threads), _two_threads, "concurrent", tmp_path, monkeypatch)
    # THEN it is between the calls' figure and the window from the line before: cannot be judged, saying whose edges
    assert len(verdict.phases) == 2 and verdict.verdict == "cannot judge", (verdict.phases, verdict.reasons)
    assert verdict.reasons[0].startswith("at the edge: ") and "its output line before" in verdict.reasons[0], \
        verdict.reasons[0]
    assert any("2 threads' clock is held to the benchmark's output lines" in r for r in verdict.reasons), \
        verdict.reasons


@pytest.mark.parametrize("shape", [_one_thread, _two_threads])
def test_a_doctored_figure_beyond_the_edges_still_disagrees(shape, tmp_path, monkeypatch):
    # GIVEN a figure a fifth of the printed one: no clock between the edges gives it
    verdict = _judge(_printed(shape) * 0.2, shape, "run" if shape is _one_thread else "concurrent", tmp_path,
                     monkeypatch)
    assert verdict.verdict == "disagrees", verdict.reasons
    assert any("no clock between those edges gives it" in r for r in verdict.reasons), verdict.reasons


ELAPSED_SPEC = """
[[claim]]
pattern = '^took: (?P<value>[\\d.]+) s$'
test = "total time"
unit = "s"
scope = "run"
"""


def _flush_then_writes():
    """_one_thread without its read: the other file's flush is no phase of its own."""
    return _one_thread(read_first=False)


def _elapsed(value: float, tmp_path, monkeypatch, offcpu: bool = True):
    """The one thread's elapsed time from its clock read to its last write, as a spec's "s" claim."""
    return _judged(_flush_then_writes(), ELAPSED_SPEC, f"took: {value:.4f} s", tmp_path, monkeypatch, offcpu)


def test_an_elapsed_time_over_its_calls_is_held_to_its_clocks_edges(tmp_path, monkeypatch):
    # GIVEN the one thread's time from its clock read (30 ms of wait for a CPU before its first
    # write) to its last write's end: 30 ms over its 240 ms of calls
    _, clock, end, _ = _flush_then_writes()
    took = (end - clock) / 1e9
    # WHEN judged with its off-CPU records THEN the wait explains it
    verdict = _elapsed(took, tmp_path, monkeypatch)
    assert verdict.verdict == "explained", verdict.reasons
    assert verdict.reasons[0].startswith("preempted at the edge: the thread waited 30"), verdict.reasons[0]
    # AND without them it cannot be judged, never disagrees
    verdict = _elapsed(took, tmp_path, monkeypatch, offcpu=False)
    assert verdict.verdict == "cannot judge" and verdict.reasons[0].startswith("at the edge: "), verdict.reasons
    # AND a time five times as long as the widest window the edges allow still disagrees
    verdict = _elapsed(took * 5, tmp_path, monkeypatch)
    assert verdict.verdict == "disagrees", verdict.reasons
    assert any("no clock between those edges gives it" in r for r in verdict.reasons), verdict.reasons
