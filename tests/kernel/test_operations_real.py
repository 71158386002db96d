"""Operations of several calls, judged per operation, on real runs of a program of our own.

tests/workloads/ops_bench.c: three methods whose operation is n writes and an fdatasync (n = 8,
2) or 4 writes on an O_DSYNC file, printing ops/sec and µs/op each; a loop that opens, writes
and closes one file for every operation; a loop that makes a few thousand small files. Read
with tests/workloads/ops_bench.toml, written from docs/claims-spec.md. Ground truth: the
program's own arithmetic (how many calls of each kind each operation makes, how many
operations); the trace's figures are what is judged, never the expected answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from iowitness.analysis.benchmarks import spec
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.read.run import load
from tests.support.cli import iowitness
from tests.support.workload import build

REPO = Path(__file__).resolve().parents[2]
WORKLOADS = REPO / "tests" / "workloads"
SPEC = WORKLOADS / "ops_bench.toml"
OPS = 100          # operations per method (each with an fdatasync or O_DSYNC writes: a second or two)
OPENS = 2000       # open..write..close operations of one file
FILES = 1000       # small files (1,000 phase numbers listed are ~5,000 characters: the range keeps a line short)
# what each method's operation is: (data calls, syncs)
METHODS = {"8w+fdatasync": (8, 1), "2w+fdatasync": (2, 1), "4w-dsync": (4, 0)}


def _silent_text() -> str:
    """The spec without any `timed`: as a user who did not say what one operation is."""
    return "\n".join(line for line in SPEC.read_text().splitlines() if not line.startswith("timed ="))


def _silent():
    return spec.loads(_silent_text())


def _verdicts(trace, checked):
    claims = spec.parse(trace.output["stdout"], checked)
    return matching.match(trace.report(), claims, "spec", trace.meta["command"], 0.05, trace.missing, trace=trace)


def _calls(trace, syscall: str) -> int:
    return int((trace.events["syscall"].astype(str) == syscall).sum())


@pytest.fixture(scope="module")
def ops_bench(tmp_path_factory):
    where = tmp_path_factory.mktemp("ops")
    exe = build("ops_bench")
    runs = {}

    def run(mode: str, count: int):
        if mode not in runs:
            data = where / mode
            data.mkdir()
            target = data / "file" if mode == "openclose" else data
            out = where / f"{mode}.iwt"
            iowitness("run", "-q", "-o", str(out), "--", str(exe), mode, str(target), str(count))
            runs[mode] = (load(out), out)
        return runs[mode]
    return run


def test_an_operation_of_n_writes_and_a_sync_is_judged_per_operation(ops_bench):
    # GIVEN three methods of 100 operations each: 8 writes + fdatasync, 2 writes + fdatasync,
    # 4 writes on an O_DSYNC file; each method one open..close of its own file
    trace, _ = ops_bench("groups", OPS)
    assert _calls(trace, "write") == sum(n for n, _ in METHODS.values()) * OPS
    assert _calls(trace, "fdatasync") == sum(s for _, s in METHODS.values()) * OPS
    phases = trace.phases().sort_values("data_first_ns")
    assert list(phases["ops"]) == [n * OPS for n, _ in METHODS.values()]
    # WHEN judged as the spec says (timed = "calls+sync", "4 calls")
    verdicts = _verdicts(trace, spec.load(SPEC))
    # THEN each method's ops/sec and µs/op are about its own phase and agree: per operation,
    # not per call (the calls' rate is n times the claim)
    assert [v.claim.test for v in verdicts] == [m for m in METHODS for _ in range(2)]
    assert [v.phases for v in verdicts] == [[int(p)] for p in phases["phase"] for _ in range(2)]
    for v in verdicts:
        assert v.verdict == "agrees", (v.claim.printed, v.reasons)
    # AND the latency is over the program's own count of operations
    assert [v.counts["operations"] for v in verdicts[1::2]] == [OPS] * 3


def test_a_spec_silent_on_the_operation_is_told_the_group_it_repeats(ops_bench, tmp_path):
    # GIVEN the same run, with a spec that leaves `timed` out (one operation = one call)
    trace, path = ops_bench("groups", OPS)
    verdicts = _verdicts(trace, _silent())
    by = {(v.claim.test, v.kind): v for v in verdicts}
    # THEN the fdatasync methods are not DISAGREES at 1/n: the group the phase repeats (n writes
    # and a sync) makes the ops/s fit, and the verdict says what to write in the spec
    for method, (n, _) in list(METHODS.items())[:2]:
        rate = by[(method, "ops")]
        assert rate.verdict == "explained", rate.reasons
        assert f"{n} writes and a sync" in rate.reasons[0] and 'timed = "calls+sync"' in rate.reasons[0], rate.reasons
        assert by[(method, "latency")].verdict == "explained", by[(method, "latency")].reasons
    # AND the O_DSYNC method, whose group no call shows, is never DISAGREES at 1/4: its ops/s and
    # µs/op cannot be judged per call, and the reason names the whole n it may be
    dsync = by[("4w-dsync", "ops")]
    assert dsync.ratio == pytest.approx(0.25, rel=0.05)
    for kind in ("ops", "latency"):
        v = by[("4w-dsync", kind)]
        assert v.verdict == "cannot judge", (kind, v.reasons)
        assert "groups of 4" in v.reasons[0] and 'timed = "4 calls"' in v.reasons[0], v.reasons
    assert not [v for v in verdicts if v.verdict == "disagrees"], [(v.claim.printed, v.reasons) for v in verdicts]
    # AND check -v gives every reason of every verdict, one line each under its verdict line
    silent = tmp_path / "silent.toml"
    silent.write_text(_silent_text())
    verbose = iowitness("check", str(path), "--spec", str(silent), "-v", check=False).stdout
    assert sum(len(v.reasons) - 1 for v in verdicts) >= 3
    for v in verdicts:
        for reason in v.reasons[1:]:
            assert f"  · {reason}" in verbose, (reason, verbose)


def test_open_write_close_per_operation_is_one_phase_judged_per_operation(ops_bench):
    # GIVEN 2000 operations, each open, one 256 KiB write, close of one file by one thread
    trace, _ = ops_bench("openclose", OPENS)
    assert _calls(trace, "openat") == OPENS and _calls(trace, "write") == OPENS and _calls(trace, "close") == OPENS
    # THEN the 2000 open..close stretches are one phase, not 2000
    phases = trace.phases()
    assert len(phases) == 1 and int(phases["ops"].iloc[0]) == OPENS and int(phases["opens"].iloc[0]) == OPENS
    # AND its ops/s agrees, and its mean latency is judged over 2000 operations (open..close),
    # not "over 1": it agrees, at the operations' own mean or (the probe's cost per call, a wait for
    # a CPU inside the program's clock, on a busy machine) between it and the rooms' (from the end of
    # the close before each open to the start of the open after its close: room_bound.py), or is
    # explained by another account; never disagrees, never "cannot judge"
    # (a wait for a CPU between the program's first clock read and its first open, or after its
    # last close, lands in its figures and in no call; the first operation's room is open on that
    # side: such a verdict says it is at the edge, and is never DISAGREES)
    verdicts = _verdicts(trace, spec.load(SPEC))
    assert verdicts[0].verdict == "agrees" or _at_the_edge(verdicts[0]), verdicts[0].reasons
    assert verdicts[1].ok or _at_the_edge(verdicts[1]), verdicts[1].reasons
    assert verdicts[1].counts["operations"] == OPENS
    # AND silent on the operation, no verdict disagrees: open..close is found and named
    for v in _verdicts(trace, _silent()):
        assert v.ok or _at_the_edge(v), (v.claim.printed, v.reasons)


def _at_the_edge(verdict) -> bool:
    """Whether a verdict is EXPLAINED or CANNOT JUDGE by the time at its window's edges: a rate
    (rate_edges.py) or a statistic only a thread's first or last operation could hold (room_bound.py)."""
    first = verdict.reasons[0] if verdict.reasons else ""
    return verdict.verdict in ("explained", "cannot judge") and (
        first.startswith(("preempted at the edge", "at the edge")) or "only a thread's first or last call" in first)


def test_thousands_of_small_files_give_short_verdict_lines_with_phase_ranges(ops_bench):
    # GIVEN 1000 new files, each open, one 1 KiB write, close
    trace, path = ops_bench("files", FILES)
    assert _calls(trace, "openat") == FILES and _calls(trace, "write") == FILES
    # THEN each file is a phase of its own (different files are never joined)
    assert len(trace.phases()) == FILES
    # AND the files/s claim over the run agrees, though each phase alone is too short to time
    verdicts = _verdicts(trace, spec.load(SPEC))
    assert [v.verdict for v in verdicts] == ["agrees"], verdicts[0].reasons
    assert len(verdicts[0].phases) == FILES
    assert not any("too short" in r for r in verdicts[0].reasons), verdicts[0].reasons
    # AND check's line names the phases as a range, not 1000 numbers; -v lists every one
    line = iowitness("check", str(path), "--spec", str(SPEC)).stdout
    assert "phases 1–1,000" in line and len(line) < 600, line
    # (1–1,000 is every phase: -v has no list to add)
    assert iowitness("check", str(path), "--spec", str(SPEC), "-v").stdout.splitlines()[0] == line.splitlines()[0]
    # AND the text and Markdown reports' verdict lines stay short too
    for form in ((), ("--markdown",)):
        text = iowitness("report", str(path), "--spec", str(SPEC), *form).stdout
        longest = max((ln for ln in text.splitlines() if "create files" in ln), key=len)
        assert "1–1,000" in longest and len(longest) < 1000, longest[:300]
