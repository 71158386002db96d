"""A real dd cut by the trace's end: the collector gets SIGTERM under `run --on-fault continue`
24 MiB into dd's 256 MiB; dd runs on untraced and prints its whole-run figure. That claim is
about 256 MiB, the trace saw 24: it cannot be judged, and says so (analysis/judge/cut_short.py).

dd reads a pipe fed 1 MiB every 10 ms, so it writes at a steady rate the test controls, and
its output file's size says when 24 MiB are written (ground truth outside the analysis).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.cli import IOWITNESS, iowitness

MIB = 1024 * 1024
FEEDER = "import os, time\nblock = bytes(1 << 20)\nfor _ in range(256):\n    os.write(1, block)\n    time.sleep(0.01)\n"


def test_a_dd_cut_by_the_trace_end_cannot_be_judged_and_says_how_far_the_trace_got(tmp_path):
    dd = require_tool("dd")
    data, out = tmp_path / "out.bin", tmp_path / "dd.iwt"
    # GIVEN dd writing 256 MiB at a steady pace, under `run --on-fault continue`
    feeder = subprocess.Popen([sys.executable, "-c", FEEDER], stdout=subprocess.PIPE)
    run = subprocess.Popen([*IOWITNESS, "run", "-q", "--on-fault", "continue", "-o", str(out), "--", dd,
                            f"of={data}", "bs=128k", "count=2048", "iflag=fullblock"],
                           stdin=feeder.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    feeder.stdout.close()
    try:
        deadline = time.monotonic() + 60
        while (not data.exists() or data.stat().st_size < 24 * MIB) and time.monotonic() < deadline:
            time.sleep(0.01)
        # WHEN the collector gets SIGTERM 24 MiB in: dd runs on untraced to its end
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=120)
    finally:
        for proc in (run, feeder):
            if proc.poll() is None:
                proc.kill()
        feeder.wait(timeout=60)
    assert "runs on untraced (--on-fault continue)" in stderr and data.stat().st_size == 256 * MIB
    trace = load(out)
    assert trace.meta["left_running"] is True
    seen = int(trace.phases()["bytes"].sum())
    assert 24 * MIB <= seen < 256 * MIB
    # THEN dd's claim cannot be judged, and says how far the trace got
    checked = iowitness("check", str(out), check=False)
    [line] = [ln for ln in checked.stdout.splitlines() if "dd write" in ln]
    assert line.startswith("CANNOT JUDGE"), line
    assert f"the trace ends {seen / MIB:.1f} MiB into 256.0 MiB: phase " in line and "was under way" in line, line
