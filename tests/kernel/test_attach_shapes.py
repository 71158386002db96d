"""The shapes of issue 30 under `attach -p` and under an strace import, on real runs of programs of
our own: a benchmark that prints every result at its end, attached after its first test
(tests/workloads/per_test_lines.c with "end"), and operations of several calls
(tests/workloads/ops_bench.c: n writes + fdatasync, n O_DSYNC writes, open..write..close).

Ground truth: the programs' own arithmetic (each test's file and calls, each operation's calls),
never the code under test.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from iowitness.analysis.judge import trace_verdicts as judged
from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.attach import attached_at_gate, file_of_size
from tests.support.cli import iowitness
from tests.support.workload import build

pytestmark = pytest.mark.kernel

WORKLOADS = Path(__file__).resolve().parents[2] / "tests" / "workloads"
OPS = 30            # operations per ops_bench method
OPENS = 500         # open..write..close operations


def _silent(spec: Path, where: Path) -> Path:
    """The spec without any `timed`: a user who did not say what one operation is."""
    silent = where / "silent.toml"
    silent.write_text("\n".join(ln for ln in spec.read_text().splitlines() if not ln.startswith("timed =")))
    return silent


def test_attached_after_the_first_test_of_a_benchmark_that_prints_at_its_end(tmp_path):
    # GIVEN per_test_lines, attached while it waits after its test 0, printing all four lines
    # together after its test 3: one burst, one window from the trace's start
    exe = build("per_test_lines")
    gate, out, saved = tmp_path / "go", tmp_path / "attach.iwt", tmp_path / "out.txt"
    with saved.open("w") as stdout:
        # (it prints nothing before its end: at the gate once test 0's file is whole, 2048 x 4 KiB)
        attached_at_gate([str(exe), str(tmp_path / "f"), str(gate), "end"], gate, out, stdout=stdout,
                         ready=file_of_size(tmp_path / "f.a", 2048 * 4096))
    assert [ln.split()[1] for ln in saved.read_text().splitlines()] == ["0", "1", "2", "3"]
    trace = load(out)
    verdicts = judged.verdicts(trace, spec=str(WORKLOADS / "per_test_lines.toml"))
    # THEN the four lines are recorded and placed on the timeline, all in one window that
    # starts at the trace's start (the attach)
    assert [v.claim.test for v in verdicts] == [f"test {k}" for k in range(4)]
    for v in verdicts:
        assert v.claim.printed_ns is not None
    for v in verdicts[1:]:
        assert any("after the trace's start" in r for r in v.reasons), v.reasons
    # AND no figure is judged against another test's calls: test 0's write ended before the
    # attach (the window holds one write phase for two write lines): "before the trace", no
    # phase; tests 1-3 each on its own test's file, and agree
    phases = trace.report().phases
    path_of = {int(p): str(f) for p, f in zip(phases["phase"], phases["path"])}
    files = {1: tmp_path / "f.a", 2: tmp_path / "f.b", 3: tmp_path / "f.b"}
    assert verdicts[0].verdict == "cannot judge" and not verdicts[0].phases, (verdicts[0].phases, verdicts[0].reasons)
    assert verdicts[0].reasons[0].startswith("before the trace"), verdicts[0].reasons
    for k in (1, 2, 3):
        v = verdicts[k]
        assert v.verdict == "agrees", (k, v.reasons)
        assert {path_of[p] for p in v.phases} == {str(files[k])}, (k, v.phases)


def test_operations_of_several_calls_under_attach(tmp_path):
    # GIVEN ops_bench's three methods (8 writes + fdatasync, 2 writes + fdatasync, 4 O_DSYNC
    # writes), started by a shell that waits for a gate and then execs it, attached before the gate
    exe = build("ops_bench")
    data = tmp_path / "data"
    data.mkdir()
    gate, out = tmp_path / "go", tmp_path / "ops.iwt"
    script = f"while [ ! -e '{gate}' ]; do sleep 0.01; done; exec '{exe}' groups '{data}' {OPS}"
    attached_at_gate(["sh", "-c", script], gate, out)
    trace = load(out)
    assert int((trace.events["syscall"].astype(str) == "fdatasync").sum()) == 2 * OPS
    spec = WORKLOADS / "ops_bench.toml"
    # WHEN judged with the output the trace recorded (no --claims), as the spec says
    verdicts = judged.verdicts(trace, spec=str(spec))
    # THEN each method's ops/s and µs/op are judged per operation over the program's own count
    assert [v.claim.test for v in verdicts] == [m for m in ("8w+fdatasync", "2w+fdatasync", "4w-dsync") for _ in "ab"]
    for v in verdicts:
        assert v.verdict != "disagrees", (v.claim.printed, v.reasons)
    assert [v.counts["operations"] for v in verdicts[1::2] if v.verdict != "cannot judge"] == \
        [OPS] * len([v for v in verdicts[1::2] if v.verdict != "cannot judge"])
    assert sum(v.verdict == "agrees" for v in verdicts[::2]) == 3, [v.reasons for v in verdicts[::2]]
    # AND silent on the operation, no verdict disagrees (found groups, or the O_DSYNC one named)
    for v in judged.verdicts(trace, spec=str(_silent(spec, tmp_path))):
        assert v.verdict != "disagrees", (v.claim.printed, v.reasons)


def test_operations_of_several_calls_under_strace_import(tmp_path):
    strace = require_tool("strace")
    # GIVEN ops_bench's groups and its open..write..close loop, each run under strace
    exe = build("ops_bench")
    spec = WORKLOADS / "ops_bench.toml"
    for mode, target, count in (("groups", tmp_path / "g", OPS), ("openclose", tmp_path / "o" / "file", OPENS)):
        target.parent.mkdir(exist_ok=True)
        if mode == "groups":
            target.mkdir()
        raw, out = tmp_path / f"{mode}.strace", tmp_path / f"{mode}.iwt"
        subprocess.run([strace, "-f", "-ttt", "-T", "-y", "-s", "4096", "-o", str(raw), str(exe), mode, str(target),
                        str(count)], check=True, timeout=300, stdout=subprocess.DEVNULL)
        iowitness("import", str(raw), "-o", str(out))
        trace = load(out)
        # WHEN judged as the spec says, and silent on the operation
        said = judged.verdicts(trace, spec=str(spec))
        silent = judged.verdicts(trace, spec=str(_silent(spec, tmp_path)))
        # THEN every rate is judged per operation: none disagrees, and the rates agree or (on a busy
        # machine, where ptrace stops take long) say they cannot be judged for strace's stops,
        # which lie inside the program's clock and strace's -T alike
        assert said and all(v.verdict != "disagrees" for v in said + silent), \
            [(v.claim.printed, v.verdict, v.reasons[:1]) for v in said + silent]
        rates = [v for v in said if v.kind == "ops"]
        assert rates and all(v.verdict == "agrees" or v.reasons[0].startswith("imported from strace")
                             for v in rates), [(v.claim.printed, v.reasons) for v in rates]
        if mode == "openclose":
            assert len(trace.phases()) == 1 and int(trace.phases()["opens"].iloc[0]) == OPENS
