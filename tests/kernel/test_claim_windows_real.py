"""Claims judged in their windows on the output timeline, on real runs: a two-client benchmark
with a timed warm-up it resets (tests/workloads/warmup_clients.c), and a benchmark printing one
line per test in varied directions (per_test_lines.c), run and attached after its first test.

Real probe, real programs; specs written from docs/claims-spec.md. Ground truth: the programs'
own counts and clocks (warmup_clients prints how many calls it timed; per_test_lines's tests
each touch their own file, so a test's phase is known by its path), never the code under test.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iowitness.analysis.judge import trace_verdicts as judged
from iowitness.analysis.read.run import load
from tests.support.attach import attached_at_gate, line_in_file
from tests.support.cli import iowitness
from tests.support.workload import build

pytestmark = pytest.mark.kernel

REPO = Path(__file__).resolve().parents[2]
WORKLOADS = REPO / "tests" / "workloads"


def test_a_two_client_warm_up_is_left_out_of_the_throughput_and_the_max_latency(tmp_path):
    # GIVEN two clients writing for a 1 s warm-up the program resets, then a timed second
    exe = build("warmup_clients")
    out = tmp_path / "clients.iwt"
    iowitness("run", "-q", "-o", str(out), "--", str(exe), str(tmp_path / "f"), "1.0", "1.0")
    trace = load(out)
    timed_calls = int(trace.output["stdout"].split("timed calls: ")[1].split()[0])
    # WHEN its claims are judged with its spec (warmup_seconds = 1.0)
    verdicts = judged.verdicts(trace, spec=str(WORKLOADS / "warmup_clients.toml"))
    # THEN the throughput agrees, and the max latency is judged over the timed calls only: as
    # many as the program counted (its clock starts a few µs before the first call: a call
    # may move across the edge)
    assert verdicts[0].verdict == "agrees", verdicts[0].reasons
    assert abs(verdicts[1].counts["operations"] - timed_calls) <= 2
    # AND no timed call of the trace is longer than the program's max: it agrees, or (on a busy
    # machine) the program's clock took in a preemption outside its call, which no syscall
    # tracepoint sees: the claim is then above the trace's max, never below it (a warm-up call)
    assert verdicts[1].verdict == "agrees" or verdicts[1].ratio > 1.05, verdicts[1].reasons
    assert all(v.placement == "claims placed on the benchmark's output timeline" for v in verdicts)
    assert sorted(verdicts[0].phases) == sorted(verdicts[1].phases) and len(verdicts[0].phases) == 2


def _phase_of(trace, path: Path) -> set[int]:
    phases = trace.report().phases
    return {int(p) for p in phases[phases["path"].astype(str) == str(path)]["phase"]}


@pytest.fixture(scope="module")
def per_test() -> Path:
    return build("per_test_lines")


SPEC = str(WORKLOADS / "per_test_lines.toml")


def test_one_line_per_test_is_judged_in_its_own_window(per_test, tmp_path):
    # GIVEN four tests (write, read, write, read), one line after each, under run
    out = tmp_path / "run.iwt"
    iowitness("run", "-q", "-o", str(out), "--", str(per_test), str(tmp_path / "f"), "-")
    trace = load(out)
    verdicts = judged.verdicts(trace, spec=SPEC)
    # THEN every line agrees, each about the phase of its own test's file
    assert [v.verdict for v in verdicts] == ["agrees"] * 4, [v.reasons for v in verdicts]
    files = [tmp_path / "f.a", tmp_path / "f.a", tmp_path / "f.b", tmp_path / "f.b"]
    directions = ["write", "read", "write", "read"]
    for v, path, direction in zip(verdicts, files, directions):
        assert set(v.phases) <= _phase_of(trace, path) and len(v.phases) == 1
        assert v.claim.direction == direction and v.claim.printed_ns is not None
    # AND each window begins at the line before it
    assert "the trace's start" in verdicts[0].reasons[-1]
    assert all("'test %d " % (k - 1) in verdicts[k].reasons[-1] for k in (1, 2, 3))


def test_attached_after_the_first_test_its_line_is_before_the_trace(per_test, tmp_path):
    # GIVEN the benchmark attached after its test 0, its whole output kept in a file
    gate, out, saved = tmp_path / "go", tmp_path / "attach.iwt", tmp_path / "out.txt"
    with saved.open("w") as stdout:
        attached_at_gate([str(per_test), str(tmp_path / "f"), str(gate)], gate, out, stdout=stdout,
                         ready=line_in_file(saved, b"test 0 "))
    trace = load(out)
    # WHEN judged from the lines the trace recorded: tests 1-3, each agreeing in its window
    recorded = judged.verdicts(trace, spec=SPEC)
    assert [v.claim.test for v in recorded] == ["test 1", "test 2", "test 3"]
    assert [v.verdict for v in recorded] == ["agrees"] * 3, [v.reasons for v in recorded]
    # AND from the whole output given after the fact (--claims): test 0 is before the trace,
    # never matched to a later phase; the others as before
    given = judged.verdicts(trace, saved.read_text(), spec=SPEC)
    assert given[0].verdict == "cannot judge" and given[0].phases == []
    assert given[0].reasons[0].startswith("before the trace")
    assert [v.verdict for v in given[1:]] == ["agrees"] * 3
    assert [v.phases for v in given[1:]] == [v.phases for v in recorded]
    # AND check says so, exit 1 (a claim it cannot judge)
    checked = iowitness("check", "--spec", SPEC, "--claims", str(saved), str(out), check=False)
    assert checked.returncode == 1 and checked.stdout.startswith("CANNOT JUDGE")


def _by_order(trace, **options):
    """The same claims judged with their times taken away: today's matching by order."""
    source, claims = judged.claims_of(trace, **options)
    for claim in claims:
        claim.printed_ns = None
    return judged.judge(trace, source, claims)


@pytest.mark.parametrize("name,command", [
    ("iozone", ["iozone", "-a", "-n", "64k", "-g", "512k", "-i", "0", "-i", "1", "-f", "{dir}/iozone.tmp"]),
    ("fio", ["fio", "--name=w", "--filename={dir}/w.dat", "--rw=write", "--bs=64k", "--size=8m",
             "--name=r", "--filename={dir}/r.dat", "--rw=randread", "--bs=4k", "--size=4m", "--stonewall"]),
    ("dd", ["dd", "if=/dev/zero", "of={dir}/dd.dat", "bs=1M", "count=16", "conv=fdatasync"]),
])
def test_every_benchmark_module_judges_in_windows_what_it_matched_by_order(name, command, tmp_path):
    # GIVEN a plain run of IOzone, fio or dd, whose claims order alone already matches well
    if not shutil.which(command[0]):
        pytest.skip(f"{command[0]} is not installed")
    out = tmp_path / f"{name}.iwt"
    iowitness("run", "-q", "-o", str(out), "--", *[word.format(dir=tmp_path) for word in command])
    trace = load(out)
    # WHEN its claims are judged on the output timeline, and by order
    windowed, ordered = judged.verdicts(trace), _by_order(trace)
    # THEN each claim is about the same phases with the same verdict, now with its window said
    assert [v.phases for v in windowed] == [v.phases for v in ordered]
    assert [v.verdict for v in windowed] == [v.verdict for v in ordered]
    assert all(v.placement == "claims placed on the benchmark's output timeline" for v in windowed)
    assert all(v.reasons[-1].startswith("window: calls that ended after ") for v in windowed if v.phases)
