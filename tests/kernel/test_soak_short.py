"""The soak (scripts/bench/soak.py) shortened to 20 s: a recording that stays flat.

Ground truth: the workload's own count of its pwrite calls; the collector's memory and CPU
time read from /proc, outside it; the trace's size from the file system. The hour-long run
and its figures are in docs/performance.md.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _soak_module():
    spec = importlib.util.spec_from_file_location("soak", ROOT / "scripts/bench/soak.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def test_a_short_soak_stays_flat_and_loses_no_call(tmp_path):
    # GIVEN a workload making 20 000 pwrite calls a second under `iowitness run`
    soak = _soak_module()
    # WHEN it is recorded for 20 s, sampled every 2 s
    samples, made, traced = soak.soak(20, 2, 20_000, tmp_path)
    steady = soak.steady(samples)
    assert len(steady) >= 5, f"the workload ran for too few samples: {samples}"
    # THEN the trace holds every call the workload made
    assert made == traced > 100_000
    # AND the collector's memory stops growing once recording (within 16 MiB of a third of the way)
    third = len(steady) // 3
    assert steady[-1].rss - steady[third].rss <= 16 * 2**20, [s.rss for s in steady]
    # AND the trace grows by a few bytes per call, as the format's figure says (docs/performance.md)
    calls = steady[-1].calls - steady[0].calls
    per_call = (steady[-1].size - steady[0].size) / calls
    assert 1 <= per_call <= 16, per_call
    # AND the collector's CPU per call stays in the microseconds: it does not grow with the trace
    cpu_us = (steady[-1].cpu - steady[0].cpu) / calls * 1e6
    late = steady[third:]
    late_us = (late[-1].cpu - late[0].cpu) / (late[-1].calls - late[0].calls) * 1e6
    assert cpu_us < 20 and late_us < 2 * cpu_us + 0.5, (cpu_us, late_us)
