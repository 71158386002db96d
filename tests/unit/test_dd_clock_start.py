"""Where dd's clock starts, on a trace built call by call in dd's own order (coreutils dd.c, main:
fd_reopen opens the output on fd 3, dup2s it onto fd 1 and closes fd 3; only then does dd read
its clock, allocate its buffer and copy; it closes its output, prints "records in/out" and reads
its clock again). A real trace of `dd if=/dev/zero of=F bs=1M count=256` here held that order,
its thread preempted 13.3 ms between the dup2 and the close (off-CPU records), a wait dd's clock
never saw. Ground truth: the built calls' times and waits; dd's figure is its own arithmetic
over them (bytes over the time between its two clock reads)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from iowitness.analysis.judge import match_claims as matching, trace_verdicts as judged
from iowitness.analysis.measure import stream_full
from iowitness.analysis.read import printed
from iowitness.analysis.read.printed import PrintedLine
from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, Calls

MS, MIB = 1_000_000, 1 << 20
WRITES, WRITE_NS = 256, 500_000
OUT = "/d/dd.dat"
COMMAND = ["dd", "if=/dev/zero", f"of={OUT}", "bs=1M", "count=256"]
OFF = [("off_ns", "<u8"), ("on_ns", "<u8"), ("tgid", "<u4"), ("tid", "<u4"), ("state", "<u4"), ("pad0", "<u4")]
PREEMPTED = 0   # probes/events.h, struct iow_offcpu


def _dd(before_ms: float, after_ms: float):
    """(trace, dd's seconds): dd preempted `before_ms` between its reopen's dup2 and close (outside
    its clock) and `after_ms` after its output's close, before it prints (inside its clock)."""
    calls = Calls().open(OUT, O_WRONLY | O_CREAT | O_TRUNC, fd=3, latency=100_000)
    calls.raw("dup2", fd=3, ret=1).open(OUT, O_WRONLY, fd=1, traced=False)
    waits = [(calls.now + 1_000, calls.now + 1_000 + int(before_ms * MS))]
    calls.gap(int(before_ms * MS) + 2_000).close(fd=3)
    clock_start = calls.now + 5_000
    calls.gap(300_000)   # its clock read, its 1 MiB buffer, its first read of /dev/zero (untraced)
    for _ in range(WRITES):
        calls.write(MIB, fd=1, latency=WRITE_NS)
    calls.close(fd=1)
    waits.append((calls.now + 1_000, calls.now + 1_000 + int(after_ms * MS)))
    printed_at = calls.now + int(after_ms * MS) + 20_000
    seconds = (printed_at + 5_000 - clock_start) / 1e9
    rate = WRITES * MIB / seconds
    text = [f"{WRITES}+0 records in", f"{WRITES}+0 records out",
            f"{WRITES * MIB} bytes (268 MB, 256 MiB) copied, {seconds:.6f} s, {rate / 1e6:.0f} MB/s"]
    lines = [PrintedLine(t, printed_at + i * 2_000, "stderr", 1000) for i, t in enumerate(text)]
    off = np.zeros(2, dtype=OFF)
    off["off_ns"], off["on_ns"] = [w[0] for w in waits], [w[1] for w in waits]
    off["tgid"] = off["tid"] = 1000
    off["state"] = PREEMPTED
    trace = SimpleNamespace(events=calls.frame(), meta={"command": COMMAND, "pid": 1000},
                            output={"stdout": "", "stderr": "\n".join(text) + "\n"}, offcpu=off)
    return trace, lines, seconds


def _verdict(trace, lines, monkeypatch):
    monkeypatch.setattr(printed, "lines_of", lambda tr: lines)
    source, claims = judged.claims_of(trace, None)
    (verdict,) = matching.match(stream_full.build(trace), claims, source, COMMAND, trace=trace)
    return verdict


def test_a_wait_before_dds_clock_is_not_counted_as_inside_it(monkeypatch):
    # GIVEN dd preempted 9 ms in its reopen (before its clock) and 9 ms after its close (inside it):
    # from its open to its close the writes' figure is its own, to 0.1 %
    trace, lines, seconds = _dd(9, 9)
    writes = trace.events[trace.events["syscall"].astype(str) == "write"]
    assert WRITES * MIB / seconds / (WRITES * MIB / ((writes["end_ns"].max() - writes["start_ns"].min()) / 1e9)) \
        == pytest.approx(0.93, abs=0.01)
    # WHEN its claim is judged
    verdict = _verdict(trace, lines, monkeypatch)
    # THEN it is the wait after the close, inside dd's clock, that explains it: 9.0 ms, from the end
    # of the reopen's close (not the open-to-close window, which holds the wait before the clock)
    assert verdict.claim.source == "dd" and verdict.window == "calls", verdict
    assert verdict.verdict == "explained", verdict.reasons
    why = verdict.reasons[0]
    assert why.startswith("preempted at the edge: the thread waited 9.0 ms for a CPU"), why
    assert "the end of its close before" in why, why
    assert "open to close" not in verdict.figures


def test_a_wait_only_before_dds_clock_leaves_its_figure_the_calls(monkeypatch):
    # GIVEN dd preempted 18 ms in its reopen only: its clock never saw it
    trace, lines, _ = _dd(18, 0)
    # WHEN its claim is judged
    verdict = _verdict(trace, lines, monkeypatch)
    # THEN its figure is its calls' (the buffer and the first read of /dev/zero: 0.3 ms) and agrees
    assert verdict.verdict == "agrees", verdict.reasons
