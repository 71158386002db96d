"""dd started by a shell (`iowitness run -- sh -c "dd ..."`), on real runs: the benchmark is read
from the command the shell runs (analysis/benchmarks/shell_command.py), so dd's claim gets what
its command line says (a write, conv=fdatasync inside its clock) as when dd runs alone.
Ground truth: dd's own arithmetic (bs x count bytes, one fdatasync), against the trace's calls;
dd(1): conv=fdatasync "physically write output file data before finishing"."""

from __future__ import annotations

import shlex

import pytest

from iowitness.analysis.judge import trace_verdicts as judged
from tests.conftest import require_tool
from tests.support import dd_clock
from tests.support.cli import iowitness

MIB = 1 << 20
COUNT = 64


@pytest.mark.parametrize("shell, exec_", [("sh", ""), ("bash", "exec "), ("dash", "")])
def test_dd_under_a_shells_c_is_judged_as_dd(shell, exec_, traced, workdir):
    # GIVEN dd writing 64 MiB with conv=fdatasync, run by a shell's -c
    dd, sh = require_tool("dd"), require_tool(shell)
    out = workdir / "dd.dat"
    line = f"{exec_}{shlex.quote(dd)} if=/dev/zero of={shlex.quote(str(out))} bs=1M count={COUNT} conv=fdatasync"
    trace, _ = traced([sh, "-c", line])
    writes = trace.events[(trace.events["syscall"].astype(str) == "write") & (trace.events["ret"] == MIB)]
    assert len(writes) == COUNT
    assert int((trace.events["syscall"].astype(str) == "fdatasync").sum()) == 1
    # WHEN its claim is judged as `check` does
    source, claims = judged.claims_of(trace, None)
    [verdict] = judged.judge(trace, source, claims)
    # THEN it is dd's write, its clock up to the end of the fdatasync, and it agrees; beside two
    # CPU hogs its 64 calls (about 80 ms) can be preempted past 5 %, and a phase that short is
    # then CANNOT JUDGE "too short to tell why" (one run of dash at 0.91x), or EXPLAINED by a wait
    # for a CPU inside dd's clock, which the off-CPU records show (a fresh-clone run beside two hogs
    # was held 8.7 ms between its open and its first write; only what follows its reopen's close is
    # inside its clock, tests/support/dd_clock.py): judged as dd, never DISAGREES, never "no phase
    # matches" as before the shell was read
    assert source == "dd" and verdict.claim.test == "dd write", verdict.claim
    assert verdict.window == "+fsync" and verdict.verdict != "disagrees", (verdict.window, verdict.reasons)
    assert verdict.reasons[0].endswith("too short to tell why") or dd_clock.why_not_honest(verdict, trace) is None, \
        (dd_clock.why_not_honest(verdict, trace), verdict.reasons)
    assert verdict.claim.extra["bytes"] == COUNT * MIB
    # AND `check` says the same of dd's write
    proc = iowitness("check", trace.meta["path"], check=False)
    assert "dd write" in proc.stdout and "no phase" not in proc.stdout, (proc.stdout, proc.stderr)
    assert (proc.returncode == 0) == proc.stdout.startswith(("AGREES", "EXPLAINED")), (proc.stdout, proc.stderr)


def test_dd_in_a_pipeline_is_not_read_from_the_shell_and_says_so_in_one_line(traced, workdir):
    # GIVEN dd's report sent through a pipe to cat, by a shell
    dd, sh = require_tool("dd"), require_tool("sh")
    line = f"{shlex.quote(dd)} if=/dev/zero of={shlex.quote(str(workdir / 'dd.dat'))} bs=1M count=16 2>&1 | cat"
    trace, _ = traced([sh, "-c", line])
    # WHEN it is checked
    proc = iowitness("check", trace.meta["path"], check=False)
    # THEN the pipeline is named in one line, never a traceback; the output is still dd's by its look
    assert "Traceback" not in proc.stderr, proc.stderr
    notes = [ln for ln in proc.stderr.splitlines() if "more than one command" in ln]
    assert len(notes) == 1 and "the benchmark is not read from it" in notes[0], proc.stderr
    assert "dd " in proc.stdout, proc.stdout
