"""scripts/bench/probe_compare.py still runs end to end: a commit's probe (exported, built with
its own Makefile, run by its own collector) against the working tree's.

Not a timed test: one short cycle, and what is checked is that every figure the tables are made
of is there and that neither probe lost an event."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_probe_compare_measures_a_commit_and_the_tree_in_one_run(tmp_path):
    # GIVEN the repository's last commit as the base (its probe is the tree's, or close to it)
    out = tmp_path / "compare.json"
    # WHEN the cost part runs one cycle of the pread loop, the tree's collector given an option
    # of its own (an option `iowitness run` does not know would end the run with an error), the
    # async floor beside the timing floor
    proc = subprocess.run([sys.executable, str(REPO / "scripts/bench/probe_compare.py"), "--base", "HEAD",
                           "--parts", "cost", "--cost-workloads", "pread-loop", "--cycles", "1", "--seconds", "0.5",
                           "--stats", "sampled", "--tree-args=--ring-buffer-mb 8", "--async-floor", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    cost = json.loads(out.read_text())["cost"][0]
    # THEN both probes were timed by the kernel's statistics, each ran the loop at a plausible
    # share of its untraced rate, and the paired difference was taken
    for name in ("base", "tree"):
        row = cost["summary"][name]
        assert row["on_sys_enter"]["median"] > 0 and row["on_sys_exit"]["median"] > 0, (name, row)
        assert 0.05 < row["ratio"]["median"] < 3, (name, row)
        assert row["lost"] == 0, (name, row)
    assert cost["summary"]["tree_minus_base"]["ratio"]["n"] == 1
    # AND the async floor (the timing floor and empty programs on the async tracepoints) ran
    # in the same cycle, its timing programs timed like the timing floor's
    assert cost["summary"]["timing-floor-async"]["ratio"]["n"] == 1
    assert cost["summary"]["tree_minus_timing_floor_async"]["ratio"]["n"] == 1
    assert "lost events or requests not followed, all runs: 0" in proc.stdout
    # AND the script removed its export of the commit
    export = re.search(r"exported and built in (\S+)/base;", proc.stdout)
    assert export and not Path(export.group(1)).exists(), proc.stdout
