"""The output timeline from the kernel: every write the benchmark makes to its fd 1 and 2 has
its time on the trace's clock, under `run`, `attach -p` and an strace import; and whatever fd 1
and 2 point at (a file, here) is output, never a data phase.

Real probe, real runs of tests/workloads/timeline_bench.c: three tests with a 200 ms sleep
between them, one line after each carrying the program's own CLOCK_MONOTONIC reading (the
clock the probe's times are on). Ground truth: that reading (a line is written after it) and
the first call of the next test (a line is written before it), both independent of the
timeline; the bytes the program writes (10,000 in its "big" write).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from iowitness.analysis.judge import trace_verdicts as judged
from iowitness.analysis.read.printed import lines_of
from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.attach import attached_at_gate, line_in_file, line_in_pipe
from tests.support.cli import iowitness
from tests.support.workload import build

pytestmark = pytest.mark.kernel

REPO = Path(__file__).resolve().parents[2]
WORKLOADS = REPO / "tests" / "workloads"
SPEC = str(WORKLOADS / "timeline_bench.toml")
LINE = re.compile(r"^test (\d) write [\d.]+ MiB/s clock (\d+)$")


@pytest.fixture(scope="module")
def bench() -> Path:
    return build("timeline_bench")


def _result_lines(trace) -> dict[int, tuple[int, int | None]]:
    """test number -> (its own clock, the line's time from the timeline)."""
    found = {}
    for line in lines_of(trace):
        m = LINE.match(line.text)
        if m:
            found[int(m.group(1))] = (int(m.group(2)), line.t_ns)
    return found


def _first_call_of_test(trace, prefix: Path) -> dict[int, int]:
    ev = trace.events
    path = ev["path"].astype(str)
    return {n: int(ev["start_ns"][path == f"{prefix}.{n}"].min()) for n in range(3) if (path == f"{prefix}.{n}").any()}


def _assert_each_line_between_its_clock_and_the_next_test(trace, prefix: Path, tests) -> None:
    lines, firsts = _result_lines(trace), _first_call_of_test(trace, prefix)
    assert sorted(lines) == list(tests)
    for n, (clock, t_ns) in lines.items():
        assert t_ns is not None, f"test {n}'s line has no time"
        assert t_ns >= clock, f"test {n}'s line at {t_ns} before its own clock {clock}"
        if n + 1 in firsts:
            assert t_ns < firsts[n + 1], f"test {n}'s line at {t_ns}, after test {n + 1} began at {firsts[n + 1]}"


def _assert_no_data_phase_on(trace, path: Path) -> None:
    assert str(path) not in set(trace.report().phases["path"].astype(str))


def _assert_claims_judged(trace, tests) -> None:
    verdicts = judged.verdicts(trace, spec=SPEC)
    assert sorted(v.claim.test for v in verdicts) == [f"write {n}" for n in tests]
    assert all(v.verdict in ("agrees", "explained") for v in verdicts), [(v.claim.test, v.verdict, v.reasons)
                                                                          for v in verdicts]


def test_run_gives_every_line_the_time_it_was_written(bench, tmp_path):
    # GIVEN the benchmark run with its output captured, ending with one write of 10,000 bytes
    out = tmp_path / "run.iwt"
    iowitness("run", "-q", "-o", str(out), "--", str(bench), str(tmp_path / "f"), "-", "big")
    trace = load(out)
    # THEN each result line is timed after its own clock reading and before the next test
    _assert_each_line_between_its_clock_and_the_next_test(trace, tmp_path / "f", range(3))
    # AND stderr's lines are timed too, interleaved by time with stdout's
    lines = lines_of(trace)
    assert [line.text for line in lines if line.stream == "stderr"] == ["done 0", "done 1", "done 2"]
    times = [line.t_ns for line in lines]
    assert all(t is not None for t in times) and times == sorted(times)
    # AND the long write is cut at the bound and counted, while the captured text keeps it whole
    assert trace.printed.writes == 7 and trace.printed.cut == 1
    assert trace.printed.bytes_not_kept == 10_000 - 4096
    assert trace.output["stdout"].count("x" * 249 + "\n") == 40
    assert "output: 7 writes, 1 cut at 4 KiB" in iowitness("report", str(out)).stdout


def _attach(bench, tmp_path: Path, stdout) -> object:
    """The benchmark attached after its test 0 (at its gate once its line 0 is written, the last
    thing it does before it waits: the line itself, never a fixed sleep); the trace."""
    gate, out = tmp_path / "go", tmp_path / "attach.iwt"
    ready = line_in_pipe(b"test 0 ") if stdout == subprocess.PIPE else line_in_file(Path(stdout.name), b"test 0 ")
    attached_at_gate([str(bench), str(tmp_path / "f"), str(gate)], gate, out, stdout=stdout, ready=ready, timeout=60)
    return load(out)


def test_attach_after_the_first_test_times_the_lines_after_it_and_finds_their_claims(bench, tmp_path):
    # GIVEN the benchmark writing into a pipe, attached between its test 0 and test 1
    trace = _attach(bench, tmp_path, subprocess.PIPE)
    # THEN the lines printed after the attach are in the trace, with their times
    _assert_each_line_between_its_clock_and_the_next_test(trace, tmp_path / "f", (1, 2))
    # AND their claims are found with no --claims file, and judged
    assert "test 1 write" in trace.output["stdout"]
    _assert_claims_judged(trace, (1, 2))


def test_attach_to_a_benchmark_whose_stdout_is_a_file(bench, tmp_path):
    # GIVEN the benchmark's stdout redirected to a file before the attach
    results = tmp_path / "out.txt"
    with open(results, "wb") as f:
        trace = _attach(bench, tmp_path, f)
    # THEN the file is output: no data phase, and its lines are the claims, judged
    _assert_no_data_phase_on(trace, results)
    _assert_each_line_between_its_clock_and_the_next_test(trace, tmp_path / "f", (1, 2))
    _assert_claims_judged(trace, (1, 2))


def test_run_of_a_shell_that_sends_stdout_to_a_file(bench, tmp_path):
    # GIVEN `sh -c 'bench > out.txt'`: the shell opens out.txt and dup2s it onto fd 1
    results, out = tmp_path / "out.txt", tmp_path / "shell.iwt"
    iowitness("run", "-q", "-o", str(out), "--", "sh", "-c", f"'{bench}' '{tmp_path / 'f'}' > '{results}'")
    trace = load(out)
    # THEN out.txt is no data phase, and the claims printed into it are judged, with times
    _assert_no_data_phase_on(trace, results)
    assert trace.output["stdout"] == results.read_text()
    _assert_each_line_between_its_clock_and_the_next_test(trace, tmp_path / "f", range(3))
    _assert_claims_judged(trace, range(3))


def test_strace_import_of_a_shell_that_sends_stdout_to_a_file(bench, tmp_path):
    strace = require_tool("strace")
    results, raw, out = tmp_path / "out.txt", tmp_path / "run.strace", tmp_path / "import.iwt"
    subprocess.run([strace, "-f", "-ttt", "-T", "-y", "-s", "4096", "-o", str(raw), "sh", "-c",
                    f"'{bench}' '{tmp_path / 'f'}' > '{results}'"], check=True, timeout=120)
    iowitness("import", str(raw), "-o", str(out))
    trace = load(out)
    # THEN the same as live: no data phase for out.txt, every line timed (strace's clock), claims judged
    _assert_no_data_phase_on(trace, results)
    assert [n for n in sorted(_result_lines(trace))] == [0, 1, 2]
    lines, firsts = _result_lines(trace), _first_call_of_test(trace, tmp_path / "f")
    assert all(t is not None for _, t in lines.values())
    # (strace's clock is the wall clock, not the program's CLOCK_MONOTONIC: the order is what is checked)
    assert all(lines[n][1] < firsts[n + 1] for n in (0, 1))
    _assert_claims_judged(trace, range(3))


def test_data_dd_writes_through_its_own_stdout_stays_data(tmp_path):
    # GIVEN `dd of=/dev/stdout > file`: dd itself opens its stdout's file again and writes 4 MiB through fd 1
    dd = require_tool("dd")
    data, out = tmp_path / "dd.out", tmp_path / "dd.iwt"
    iowitness("run", "-q", "-o", str(out), "--", "sh", "-c",
              f"'{dd}' if=/dev/zero of=/dev/stdout bs=64k count=64 > '{data}'")
    trace = load(out)
    # THEN its writes are a data phase of 4 MiB, and the output is dd's report alone
    phases = trace.report().phases
    assert phases["path"].astype(str).tolist() == [str(data)] and int(phases["bytes"].sum()) == 4 << 20
    assert [line.stream for line in lines_of(trace)] == ["stderr"] * 3 and trace.output["stdout"] == ""


def test_attach_file_records_no_process_output_however_chatty_the_machine(tmp_path):
    # GIVEN a program writing to its stdout without pause (as `yes > /dev/null` does) while
    # `attach --file` follows every process until one touches the file
    chatty = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
    try:
        out = tmp_path / "attached.iwt"
        iowitness("attach", "--file", str(tmp_path / "quiet.dat"), "--duration", "1", "-q", "-o", str(out))
    finally:
        chatty.kill()
        chatty.wait()
    # WHEN it is read THEN it holds no output (the chatter is no benchmark's), and check says
    # at once where the claims must come from
    trace = load(out)
    assert not trace.output.get("stdout") and not trace.output.get("stderr")
    assert all(line.t_ns is None for line in lines_of(trace))
    proc = iowitness("check", str(out), check=False)
    assert proc.returncode == 2 and "attach --file" in proc.stderr, proc.stderr
