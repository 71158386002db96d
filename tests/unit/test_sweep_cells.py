"""The sweep grid (reporters/sweep.py) without claims: only for IOzone's sweeps."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from iowitness.reporters import sweep


def _report(command, sizes):
    phases = pd.DataFrame({"benchmark_name": ["read"] * len(sizes), "bytes": sizes,
                           "record_size": [65536] * len(sizes), "wall_Bps": [1e9] * len(sizes)})
    return SimpleNamespace(phases=phases, benchmark="iozone", trace=SimpleNamespace(meta={"command": command}))


def test_a_throughput_run_whose_children_were_stonewalled_is_no_sweep():
    # GIVEN iozone -t 2, where the stonewall stopped one child after 85 MiB of its 256 MiB
    report = _report(["iozone", "-t", "2", "-i", "0", "-i", "1", "-s", "256m"], [89_325_568, 268_435_456])
    # THEN there is no grid: two byte counts are not two file sizes
    assert sweep.cells(report, []) == {}


def test_an_auto_sweep_gets_its_grid_from_the_phases():
    # GIVEN iozone -a, one read phase per file size
    report = _report(["iozone", "-a", "-i", "0", "-i", "1"], [65536, 131072])
    # THEN a cell per file size
    assert sorted(c.file_size for c in sweep.cells(report, [])["read"]) == [65536, 131072]
