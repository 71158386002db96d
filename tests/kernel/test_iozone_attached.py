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


def test_iozone_execd_by_a_gate_attached_to_is_recognised_and_judged_whole(tmp_path):
    if shutil.which("iozone") is None:
        pytest.skip("iozone is not installed (scripts/setup.sh installs it)")
    # GIVEN IOzone -t 2 started through a shell that waits on its stdin, then execs it
    command = ["iozone", "-i", "0", "-i", "1", "-t", "2", "-s", "8m", "-r", "64k", "-F", "f1", "f2"]
    output, trace = tmp_path / "iozone.out", tmp_path / "gate.iwt"
    with open(output, "w") as out:
        gate = subprocess.Popen(["sh", "-c", "read go; exec " + " ".join(command)], stdin=subprocess.PIPE,
                                stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    collector = None
    try:
        # WHEN attached to by the shell's PID, then let go
        collector = subprocess.Popen([*IOWITNESS, "attach", "--pid", str(gate.pid), "-o", str(trace)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_attached(collector)
        gate.communicate(b"go\n", timeout=120)
        assert gate.returncode == 0 and collector.wait(60) == 0, output.read_text()
    finally:
        stop(gate)
        if collector is not None:
            stop(collector)
    printed = output.read_text()
    figures = len(re.findall(r"(?:Children|Parent) see|(?:Min|Max|Avg) throughput per process|Min xfer", printed))
    assert figures == 24, printed   # IOzone's own: 4 tests, 6 figures each
    # THEN the trace's command is what the shell exec'd (before: the shell's, "not recognised")
    shown = iowitness("show", str(trace)).stdout
    assert re.search(r"^command +" + re.escape(" ".join(command)) + "$", shown, re.M), shown
    report = iowitness("report", str(trace)).stdout
    assert "benchmark: iozone" in report.splitlines()[0], report
    # AND every figure IOzone printed is judged, none DISAGREES, and none is cut to CANNOT JUDGE
    # as if the trace began mid-run: it saw IOzone from its exec
    verdicts = VERDICT.findall(report)
    assert len(verdicts) == figures and "DISAGREES" not in report, report
    assert "attached mid-run" not in report and "no phase of the trace matches" not in report, report
