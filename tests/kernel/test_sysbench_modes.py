"""sysbench fileio's mixed test, for real: rndrw reads and writes its files at once, so every
phase of the trace is mixed. Its reads/s, writes/s and MiB/s each way are judged on those
phases, each direction's calls counted apart (docs/specs/sysbench_fileio.toml, match =
"operation"); before, all four were CANNOT JUDGE "no phase of the trace matches". The ground
truth is sysbench's own count of events (reads, writes and fsyncs), which the trace's calls equal."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from iowitness import load
from tests.conftest import require_tool
from tests.support.cli import iowitness

SPEC = Path(__file__).resolve().parents[2] / "docs" / "specs" / "sysbench_fileio.toml"


def test_rndrw_reads_and_writes_are_judged_on_its_mixed_phases(tmp_path):
    sysbench = require_tool("sysbench")
    base = [sysbench, "fileio", "--file-num=2", "--file-total-size=8M"]
    subprocess.run([*base, "prepare"], cwd=tmp_path, check=True, capture_output=True)
    trace = tmp_path / "rndrw.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", *base, "--file-test-mode=rndrw", "--events=4000",
                    "--file-fsync-end=off", "--time=0", "run", cwd=str(tmp_path), timeout=120)
    events = int(re.search(r"total number of events:\s+(\d+)", run.stdout).group(1))
    ev = load(trace).events
    data = ev[ev["path"].astype(str).str.contains("test_file")]
    # sysbench's events are its reads, writes and periodic fsyncs (no final fsync per file, off here): the
    # trace saw each one
    assert int(data["syscall"].isin(["pread64", "pwrite64", "fsync", "fdatasync"]).sum()) == events == 4000
    check = iowitness("check", "--spec", str(SPEC), str(trace), check=False)
    out = check.stdout
    rates = [line for line in out.splitlines() if re.match(r"\S.*? (read|write): claims [\d,.]+ (ops/s|MiB/s)", line)]
    assert len(rates) == 4 and all(line.startswith(("AGREES", "EXPLAINED")) for line in rates), out
    assert "no phase of the trace matches" not in out and "DISAGREES" not in out, out
