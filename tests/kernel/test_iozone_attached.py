"""IOzone -C -t 2 traced by `iowitness attach --pid` after its first test ended, its output
given afterwards: `report TRACE --claims OUTPUT` (issue 30). IOzone prints each test's lines
as the test ends; the trace's output timeline holds the lines written after the attach. The
first test's lines are not in it: its claims are "before the trace", never matched to a later
test's phases; the later tests' claims are each judged on their own phases.

The attach lands between two tests: IOzone (threads, -T, one process) is stopped with SIGSTOP
once its first test's lines are in its output file, attached to, then let go. Ground truth:
IOzone's own output (its tests and each child's xfer count) and what the command line makes
each child move (16 MiB a pass, one file each)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import pytest

from tests.support.cli import IOWITNESS, iowitness
from tests.support.collectors import attach_while_stopped, stop, wait_attached

pytestmark = pytest.mark.kernel
FIRST_DONE = b"Child[1] xfer count"   # the last line of the first test's block (-C)
VERDICT = re.compile(r"^  (AGREES|EXPLAINED|DISAGREES|CANNOT JUDGE) +(\w+) \(([\w ]+?),", re.M)


def _attached_after_the_first_test(where) -> tuple:
    """(trace, IOzone's output file) of `iozone -T -t 2 -C -i 0 -i 1`, attached to between its
    initial writers and its rewriters."""
    output, trace = where / "iozone.out", where / "iozone.iwt"
    command = ["iozone", "-T", "-t", "2", "-C", "-s", "16m", "-r", "4k", "-i", "0", "-i", "1", "-F", "f1", "f2"]
    with open(output, "w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, cwd=where)
    try:
        deadline = time.monotonic() + 120
        while FIRST_DONE not in output.read_bytes():
            assert proc.poll() is None and time.monotonic() < deadline, output.read_text()
            time.sleep(0.002)
    except BaseException:
        stop(proc)
        raise
    attach_while_stopped(proc, trace, IOWITNESS)
    return trace, output


def test_tests_before_the_attach_say_so_and_the_later_ones_match_their_phases(tmp_path):
    if shutil.which("iozone") is None:
        pytest.skip("iozone is not installed (scripts/setup.sh installs it)")
    # GIVEN IOzone's four tests, attached to after the first (the initial writers) ended
    trace, output = _attached_after_the_first_test(tmp_path)
    printed = output.read_text()
    tests = re.findall(r"Children see throughput for\s+2 (initial writers|rewriters|readers|re-readers)", printed)
    assert tests == ["initial writers", "rewriters", "readers", "re-readers"], printed
    xfers = [float(x) for x in re.findall(r"Child\[\d\] xfer count =\s+([\d.]+) kB", printed)]
    assert len(xfers) == 8 and all(0 <= x <= 16384 for x in xfers), printed
    # WHEN reported with IOzone's whole output given afterwards, from another directory (its -F
    # paths are relative: they resolve against the recorded cwd)
    report = iowitness("report", str(trace), "--claims", str(output), cwd="/")
    verdicts = VERDICT.findall(report.stdout)
    # THEN the 8 figures of the initial writers (children, parent, min, max, avg, min xfer, two
    # children) are before the trace, each saying so: not "no phase matches", not a later test's
    write = [line for line in report.stdout.splitlines() if re.match(r"^  \S.*? write \(", line)]
    assert len(write) == 8 and all(line.startswith("  CANNOT JUDGE") and "before the trace" in line
                                   for line in write), report.stdout
    # AND the 24 figures of the three tests after it are judged on their own phases: none
    # disagrees, none is "no phase matches" (before: matched by order, the initial writers' lines
    # took the rewriters' phases, and the rewriters' found none)
    later = [(v, test) for v, test, _ in verdicts if test != "write"]
    assert sorted({test for _, test in later}) == ["read", "reread", "rewrite"] and len(later) == 24, report.stdout
    assert "no phase of the trace matches" not in report.stdout, report.stdout
    assert "DISAGREES" not in report.stdout, report.stdout
    assert "claims placed on the benchmark's output timeline" in report.stdout, report.stdout
    # AND the rewriters' figures are about the trace's first two write phases, each child's 16
    # MiB or less: the children's figure of each later test agrees (or is explained)
    children = {test: v for v, test, scope in verdicts if scope == "children"}
    assert all(children[test] in ("AGREES", "EXPLAINED") for test in ("rewrite", "read", "reread")), report.stdout


# -x: no stonewall. With it, at load 25-30 one child of a test was not yet running when its
# sibling finished its 8 MiB (1 ms in the page cache), did 0 records, and the next test's lone
# reader of that file was a first read, "read", leaving IOzone's reread lines no phase (CANNOT
# JUDGE): an IOzone edge of its own, not what a gate changes
IOZONE_T2 = ["iozone", "-x", "-i", "0", "-i", "1", "-t", "2", "-s", "8m", "-r", "64k", "-F", "f1", "f2"]


def _through_a_gate(where, script: str) -> tuple:
    """(IOzone's printed output, trace): `sh -c SCRIPT` (dash here) waits on its stdin, is
    attached to by its PID, then let go."""
    if shutil.which("iozone") is None:
        pytest.skip("iozone is not installed (scripts/setup.sh installs it)")
    output, trace = where / "iozone.out", where / "gate.iwt"
    with open(output, "w") as out:
        gate = subprocess.Popen(["sh", "-c", script], stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                                cwd=where)
    collector = None
    try:
        collector = subprocess.Popen([*IOWITNESS, "attach", "--pid", str(gate.pid), "-o", str(trace)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_attached(collector, timeout=180)   # the probe's load took 60 s and more at load 27
        gate.communicate(b"go\n", timeout=180)
        assert gate.returncode == 0 and collector.wait(60) == 0, output.read_text()
    finally:
        stop(gate)
        if collector is not None:
            stop(collector)
    printed = output.read_text()
    figures = len(re.findall(r"(?:Children|Parent) see|(?:Min|Max|Avg) throughput per process|Min xfer", printed))
    assert figures == 24, printed   # IOzone's own: 4 tests, 6 figures each
    return printed, trace


def _judged_whole(trace, figures: int = 24) -> str:
    """The report, once its command is IOzone's and every figure is judged on a trace that saw
    IOzone from its start: none DISAGREES, none cut to CANNOT JUDGE as attached mid-run."""
    shown = iowitness("show", str(trace)).stdout
    assert re.search(r"^command +" + re.escape(" ".join(IOZONE_T2)) + "$", shown, re.M), shown
    report = iowitness("report", str(trace)).stdout
    assert "benchmark: iozone" in report.splitlines()[0], report
    verdicts = VERDICT.findall(report)
    assert len(verdicts) == figures and "DISAGREES" not in report, report
    assert "attached mid-run" not in report and "no phase of the trace matches" not in report, report
    return report


def test_iozone_execd_by_a_gate_attached_to_is_recognised_and_judged_whole(tmp_path):
    # GIVEN IOzone -t 2 started through a shell that waits on its stdin, then execs it
    # WHEN attached to by the shell's PID, then let go
    _, trace = _through_a_gate(tmp_path, "read go; exec " + " ".join(IOZONE_T2))
    # THEN the trace's command is what the shell exec'd (before: the shell's, "not recognised"),
    # and every figure IOzone printed is judged: it saw IOzone from its exec
    _judged_whole(trace)


def test_iozone_forked_by_a_dash_gate_attached_to_is_the_benchmark(tmp_path):
    # GIVEN dash's `sh -c 'read go; iozone -t 2 ...'`: dash forks IOzone as its child and waits
    # (no exec: the attached process stays the shell)
    assert os.path.basename(os.path.realpath(shutil.which("sh") or "sh")) == "dash"
    # WHEN attached to by the shell's PID, then let go
    _, trace = _through_a_gate(tmp_path, "read go; " + " ".join(IOZONE_T2))
    # THEN the trace's command is the child's, IOzone's (before: the shell's command line, IOzone
    # not recognised, none of its 24 figures judged), every figure judged, none DISAGREES
    report = _judged_whole(trace)
    assert "ran 1 programs" not in report and "the shell attached to" not in report, report


def test_iozone_among_the_programs_of_a_gate_is_taken_and_named(tmp_path):
    # GIVEN a gate that runs three programs after it is let go: cat reads a notes file (a file
    # the trace follows), IOzone -t 2, then ls
    (tmp_path / "notes.txt").write_text("run 1\n")
    script = "read go; cat notes.txt > /dev/null; " + " ".join(IOZONE_T2) + "; ls > /dev/null"
    # WHEN attached to by the shell's PID, then let go
    _, trace = _through_a_gate(tmp_path, script)
    # THEN the benchmark is IOzone, the longest of those that opened a followed file, every figure
    # judged; the report names the three programs and which was taken
    report = _judged_whole(trace)
    said = [line for line in report.splitlines() if "the shell attached to" in line]
    assert len(said) == 1 and "ran 3 programs: cat (PID" in said[0] and "iozone (PID" in said[0], report
    assert "ls (PID" in said[0] and "the benchmark is taken to be iozone" in said[0], report
