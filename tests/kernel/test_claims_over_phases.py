"""Claims about several phases at once: totals over threads, over files, over the run.

Real programs, each printing its own totals: tests/workloads/threads_bench.c (4 threads on one
file, or on a file each) and sysbench fileio with --file-num=4, read with the spec in
docs/specs/. Ground truth: the programs' arithmetic (bytes = MIB MiB) and their own printed
figures. A claim judged against one phase of four would be off by about 4×: the tests check
that each total is judged against the concurrent set, and that its figure fits it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from iowitness.analysis.benchmarks import spec
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.blocks import assigned_of
from tests.support.cli import iowitness
from tests.support.workload import build

REPO = Path(__file__).resolve().parents[2]
WORKLOADS = REPO / "tests" / "workloads"
SPECS = REPO / "docs" / "specs"
MIB = 1024 * 1024


def _verdicts(trace, spec_path):
    claims = spec.parse(trace.output["stdout"], spec.load(spec_path))
    return matching.match(trace.report(), claims, "spec", trace.meta["command"], 0.05, trace.missing, trace=trace)


@pytest.fixture(scope="module")
def threads_bench(tmp_path_factory):
    where = tmp_path_factory.mktemp("threads")
    exe = build("threads_bench")

    def run(mode: str):
        out = where / f"{mode}.iwt"
        iowitness("run", "-q", "-o", str(out), "--", str(exe), mode, str(where / f"data-{mode}"), "4", "256")
        return load(out)
    return run


@pytest.mark.parametrize("mode", ["one", "many"])
def test_a_total_over_four_threads_is_judged_against_all_four(threads_bench, mode):
    # GIVEN 4 threads writing 256 MiB in all (one file, or a file each), the program printing
    # its total IOPS and MB/s on two lines
    trace = threads_bench(mode)
    phases = trace.phases()
    # THEN the trace has a phase per thread, moving exactly what the program wrote
    assert len(phases) == 4 and int(phases["bytes"].sum()) == 256 * MIB
    # WHEN the two printed lines are judged with the program's spec (no scope given)
    verdicts = _verdicts(trace, WORKLOADS / "threads_bench.toml")
    # THEN both are judged against the same four phases, and each figure fits the set
    # (against one thread's phase it would be off by about 4x)
    assert [sorted(v.phases) for v in verdicts] == [sorted(phases["phase"])] * 2
    for v in verdicts:
        assert 0.8 <= v.ratio <= 1.25 and v.ok, (v.claim.printed, v.verdict, v.figures, v.reasons)


@pytest.fixture(scope="module")
def sysbench(tmp_path_factory):
    require_tool("sysbench")
    where = tmp_path_factory.mktemp("sysbench")
    base = ["sysbench", "fileio", "--file-num=4", "--file-total-size=64M"]
    subprocess.run([*base, "prepare"], cwd=where, check=True, capture_output=True)

    def run(mode: str):
        out = where / f"{mode}.iwt"
        iowitness("run", "-q", "-o", str(out), "--", *base, f"--file-test-mode={mode}", "--time=2",
                  "--file-fsync-freq=0", "run", cwd=where)
        return load(out)
    return run


@pytest.mark.parametrize("mode, direction", [("seqwr", "write"), ("rndrd", "read")])
def test_sysbench_fileio_totals_over_four_files_agree(sysbench, mode, direction):
    # GIVEN sysbench fileio on 4 files from one thread, read with docs/specs/sysbench_fileio.toml
    trace = sysbench(mode)
    phases = trace.phases()
    files = {Path(p).name for p in phases["path"]}
    assert files == {f"test_file.{i}" for i in range(4)}
    # WHEN its claims are judged
    verdicts = _verdicts(trace, SPECS / "sysbench_fileio.toml")
    # THEN its ops/s and MiB/s in the test's direction (and the fsyncs/s of its writes: one per
    # file at the end, --file-fsync-end), its total time and its per-event latencies are each
    # judged against the four files' phases together, and fit them
    fsyncs = [("fsync", "ops/s")] if direction == "write" else []
    assert [(v.claim.test, v.claim.unit) for v in verdicts] == [(direction, "ops/s")] + fsyncs + [
        (direction, "MiB/s"), ("total time", "s")] + [("latency", "ms")] * 4
    for v in verdicts:
        assert sorted(v.phases) == sorted(phases["phase"]), v.phases
        if v.claim.test != "latency":
            assert 0.8 <= v.ratio <= 1.25 and v.ok, (v.claim.printed, v.verdict, v.figures, v.reasons)
        elif v.claim.extra["statistic"] == "max" and not v.ok:
            # sysbench's clock runs around each event: a preemption outside the call (no
            # tracepoint sees it) can only make its max larger than the slowest call, never smaller
            assert v.ratio > 1, (v.claim.printed, v.verdict, v.figures, v.reasons)
        else:
            assert v.ok, (v.claim.printed, v.verdict, v.figures, v.reasons)
    # AND `check` with the spec exits 0 (1 only for the max a preemption can raise)
    proc = iowitness("check", "--spec", str(SPECS / "sysbench_fileio.toml"), trace.meta["path"], check=False)
    assert proc.returncode == (0 if all(v.ok for v in verdicts) else 1), proc.stdout + proc.stderr


def test_a_thread_on_four_files_spends_its_time_on_the_others_not_in_user_space(sysbench):
    # GIVEN sysbench's one thread reading 4 files at random, in turn
    trace = sysbench("rndrd")
    phases, events = trace.phases(), trace.events
    assigned = assigned_of(trace.report())
    # THEN each file's phase counts, as time on other targets, exactly the time its thread spent
    # in calls of the other files' phases while it ran (summed here from the events themselves)
    for row in phases.itertuples():
        start = events["start_ns"].to_numpy()
        mine = ((events["tid"].to_numpy() == row.tid) & (start >= row.first_ns) & (start < row.last_ns)
                & (assigned["phase"].to_numpy() != row.phase))
        elsewhere = int(events["latency_ns"].to_numpy()[mine].sum())
        assert row.other_targets_ns == elsewhere, (row.phase, elsewhere)
        # (and most of them: sysbench picks each request's file at random, so about three calls
        # on the others for each of this file's. Counted in calls, not nanoseconds: at load
        # average 20 a few preemptions inside one file's calls (tens of ms each, no matter which
        # file) once took that file's time in calls above half its time on the others)
        assert int(mine.sum()) > 2 * row.ops, (row.phase, int(mine.sum()), row.ops)
        # AND user time is what is left of the window, not that time
        assert row.user_ns <= row.last_ns - row.first_ns - row.other_targets_ns
