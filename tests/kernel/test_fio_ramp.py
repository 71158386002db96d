"""fio's ramp_time, for real: fio runs the job's first half second and counts only what follows.
The ground truth is fio's own count of the requests it timed (its "issued rwts" line, or its
JSON total_ios), read by the test; the claims are judged on those requests, the ramp's left out."""

from __future__ import annotations

import json
import re

import pytest

from iowitness import load
from tests.conftest import require_tool
from tests.support.cli import iowitness


@pytest.mark.parametrize("output_format", ["normal", "json"])
def test_a_ramp_is_left_out_of_fios_figures(tmp_path, output_format):
    fio = require_tool("fio")
    data = tmp_path / "data.bin"
    data.write_bytes(bytes(range(256)) * 16384)   # 4 MiB
    trace = tmp_path / "fio.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", fio, "--name=ramped", f"--filename={data}",
                    "--rw=randread", "--bs=4k", "--ramp_time=500ms", "--runtime=1", "--time_based",
                    "--rate_iops=1000", f"--output-format={output_format}", timeout=120)
    if output_format == "json":
        counted = json.loads(run.stdout[run.stdout.index("{"):])["jobs"][0]["read"]["total_ios"]
    else:
        counted = int(re.search(r"issued rwts: total=(\d+),", run.stdout).group(1))
    reads = int(load(trace).events["syscall"].isin(["read", "pread64"]).sum())
    # the ramp's half second at 1,000 IOPS ran requests fio did not count
    assert reads - counted >= 300, (reads, counted)
    check = iowitness("check", "-v", str(trace), check=False)
    out = check.stdout
    assert check.returncode == 0 and "DISAGREES" not in out, out
    verdict_lines = [line for line in out.splitlines() if line.startswith(("AGREES", "EXPLAINED"))]
    assert len(verdict_lines) == 2 and verdict_lines[0].startswith("AGREES") and "ramped read:" in verdict_lines[0], out
    # both the rate and the latencies are judged on the requests fio counted, and say so
    assert out.count(f"the first {reads - counted:,} calls ran before fio started counting") == 2, out
    assert f"fio counted {counted:,} requests, the trace {counted:,}" in out, out
