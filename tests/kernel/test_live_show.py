"""`show` of a trace still being recorded: it reads what the collector has flushed so far.

Ground truth: the workload's own count of the writes it made (it prints it), and the
collector's state seen from outside (the `iowitness run` process still running, or not).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

from tests.support.cli import IOWITNESS, iowitness

# writes 4 KiB records in bursts of 50, a burst every 0.1 s, until told to stop by a file
WORKLOAD = r"""
import os, sys, time
target, stop = sys.argv[1], sys.argv[2]
fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
writes = 0
while not os.path.exists(stop):
    for _ in range(50):
        os.write(fd, b"x" * 4096)
        writes += 1
    time.sleep(0.1)
os.close(fd)
print(f"writes={writes}")
"""


def shown_writes(text: str) -> int:
    """The `write` row's call count in show's syscall table (0 when there is none yet)."""
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["write"] and len(words) > 1:
            return int(words[1].replace(",", ""))
    return 0


def test_show_reads_a_trace_while_it_is_recorded(tmp_path):
    # GIVEN a workload writing bursts of 4 KiB records under `iowitness run`, still running
    target, stop, trace = tmp_path / "out.dat", tmp_path / "stop", tmp_path / "live.iwt"
    script = tmp_path / "writer.py"
    script.write_text(WORKLOAD)
    recorder = subprocess.Popen([*IOWITNESS, "run", "-q", "-o", str(trace), "--file", str(target), "--",
                                 sys.executable, str(script), str(target), str(stop)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        deadline = time.monotonic() + 60
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(1.5)
            if not trace.exists():
                continue
            # WHEN show reads the trace while the collector is still writing it
            proc = iowitness("show", str(trace))
            assert recorder.poll() is None, "the recording ended before show read it"
            if shown_writes(proc.stdout):
                seen.append(proc.stdout)
        assert len(seen) == 2, "show never saw a write while the trace was recorded"
    finally:
        stop.touch()
        out, err = recorder.communicate(timeout=60)
    # THEN each reading says the trace is still being recorded, and shows more writes than the one before
    for text in seen:
        assert "INCOMPLETE (still being recorded" in text
    first, second = (shown_writes(text) for text in seen)
    assert 0 < first < second
    # AND once the recording ended, show reads it complete, with every write the workload made
    assert recorder.returncode == 0, err
    made = int(re.search(r"writes=(\d+)", out).group(1))
    final = iowitness("show", str(trace)).stdout
    assert "complete" in final and "INCOMPLETE" not in final
    assert second <= shown_writes(final) == made
