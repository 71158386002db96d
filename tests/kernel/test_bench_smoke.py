"""The observer benchmark (scripts/bench/observers.py) still runs end to end.

Not a timed test: CI never fails on a slow run. One workload, one round (--smoke): every
available observer must run, iowitness must lose no event in either mode, and the figures the
table is made of must be there."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO, require_tool


def test_bench_smoke_runs_every_available_observer_without_losing_events(tmp_path):
    # GIVEN fio and the built probes (the floor and timing-floor objects included)
    require_tool("fio")
    out = tmp_path / "bench.json"
    # WHEN the benchmark runs in smoke mode
    proc = subprocess.run([sys.executable, str(REPO / "scripts/bench/observers.py"), "--smoke",
                           "--observers", "floor,timing-floor,iowitness,iowitness-summary,strace,bpftrace,perf-trace",
                           "--dir", str(tmp_path / "work"), "--json", str(out)],
                          capture_output=True, text=True, timeout=240, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(out.read_text())["results"]
    # THEN the one workload has a ratio for untraced-vs-each observer that ran, none failed
    (workload, per_observer), = results.items()
    assert workload == "fio-seq-read"
    failed = {name: row["failed"] for name, row in per_observer.items() if "failed" in row}
    assert not failed, failed
    for name in ("floor", "timing-floor", "iowitness", "iowitness-summary", "strace"):
        assert per_observer[name]["ratio"]["median"] > 0, name
    # AND iowitness lost nothing in either mode, and says what it cost
    for name in ("iowitness", "iowitness-summary"):
        row = per_observer[name]
        assert row["lost"]["max"] == 0, name
        assert row["calls_per_s"]["median"] > 0, name
        assert row["probe_ns_per_call"]["median"] > 0, name
    # AND the printed table names each observer
    for name in per_observer:
        assert name in proc.stdout


def test_interleaved_bench_measures_every_observer_inside_one_run(tmp_path):
    # GIVEN the built probes and the pread loop (built by the bench itself)
    out = tmp_path / "interleaved.json"
    # WHEN the interleaved benchmark runs one short cycle
    proc = subprocess.run([sys.executable, str(REPO / "scripts/bench/interleaved.py"), "--workloads", "pread-loop",
                           "--cycles", "1", "--slot", "0.6", "--dir", str(tmp_path / "work"), "--json", str(out)],
                          capture_output=True, text=True, timeout=240, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # THEN each observer got one stretch, with a rate that is a plausible share of the untraced
    # one around it (the rates come from /proc/PID/io, not from the loop or from iowitness)
    rows = json.loads(out.read_text())["results"]["pread-loop"]
    assert set(rows) == {"floor", "timing-floor", "iowitness", "iowitness-summary"}
    for name, row in rows.items():
        assert row["n"] == 1 and 0.05 < row["median"] < 3, (name, row)
        assert name in proc.stdout
    # AND every other observer is also compared with the floor's stretch of the same cycle
    for name, row in rows.items():
        if name != "floor":
            assert row["paired"] == 1 and row["minus_floor"] == row["median"] - rows["floor"]["median"], (name, row)
