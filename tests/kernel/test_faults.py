"""Faults during `run`: the trace's disk fills, the collector gets SIGTERM or SIGKILL, the
benchmark ignores SIGINT. The trace stays readable up to the fault, one line says what
happened, and the benchmark is stopped or runs on as --on-fault says; its output is never lost.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from iowitness.analysis.read.run import load
from iowitness.collector.stopping import GRACE_S
from tests.support.cli import IOWITNESS, iowitness

# many small writes at random offsets: about 5 trace bytes each, so a 2 MiB trace disk fills
# after some 400,000 of them (well under a second of this loop)
WRITER = textwrap.dedent("""
    import os, random, sys
    path, count, done = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for i in range(count):
            os.pwrite(fd, b"x" * random.randrange(1, 64), random.randrange(1 << 20))
            if i % 100000 == 0:
                print("wrote", i, flush=True)
    except KeyboardInterrupt:
        print("writer interrupted", flush=True)
        sys.exit(130)
    open(done, "w").close()
    print("writer done", flush=True)
""")
# prints and counts 120 lines over 6 s
PRINTER = 'for i in $(seq 1 120); do echo "line $i"; echo "$i" >> "$1"; sleep 0.05; done; echo "printed all" >&2'
IGNORER = textwrap.dedent("""
    import pathlib, signal, sys, time
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if len(sys.argv) > 1:   # when it started, on the clock the test reads (CLOCK_MONOTONIC)
        pathlib.Path(sys.argv[1]).write_text(repr(time.monotonic()))
    print("ignoring SIGINT", flush=True)
    time.sleep(120)
""")


@contextmanager
def small_disk(where: Path, size: str = "2m"):
    """A tmpfs of `size` at `where`, unmounted whatever happens."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def iowitness_lines(stderr: str) -> list[str]:
    """What iowitness said (the benchmark's own stderr aside); never a traceback."""
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("iowitness")]


def gone(pid: int, within: float = 5.0) -> bool:
    """The process has exited and been reaped (by us or, once its parent died, by init)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not os.path.exists(f"/proc/{pid}"):
            return True
        time.sleep(0.05)
    return False


def pid_in(line: str) -> int:
    return int(line.split("(PID ", 1)[1].split(")", 1)[0])


def _fill_the_disk(tmp_path, on_fault: str, count: int):
    script, done = tmp_path / "writer.py", tmp_path / "writer.done"
    script.write_text(WRITER)
    with small_disk(tmp_path / "small") as disk:
        out = disk / "full.iwt"
        started = time.monotonic()
        proc = iowitness("run", "-q", "--on-fault", on_fault, "-o", str(out), "--", sys.executable, str(script),
                         str(tmp_path / "data.bin"), str(count), str(done), check=False, timeout=120)
        elapsed = time.monotonic() - started
        shown = iowitness("show", str(out), check=False)
        trace = load(out)
    return proc, elapsed, shown, trace, done


def test_a_full_trace_disk_stops_the_benchmark_by_default(tmp_path):
    # GIVEN a benchmark that writes far more calls than a 2 MiB trace disk holds
    # WHEN it runs under iowitness with the default --on-fault stop
    proc, elapsed, shown, trace, done = _fill_the_disk(tmp_path, "stop", 5_000_000)
    # THEN exit 5 and one line that says the disk is full and that the benchmark was stopped
    assert proc.returncode == 5, proc.stderr
    (line,) = iowitness_lines(proc.stderr)
    assert "No space left on device" in line and "was stopped with SIGINT (--on-fault stop)" in line
    # AND the benchmark is gone, ended by the SIGINT long before its 5 million calls, and what
    # it printed on the way out reached us
    assert gone(pid_in(line)) and not done.exists()
    assert "writer interrupted" in proc.stdout and elapsed < 30
    # AND the trace reads whole up to the fault: marked incomplete, no torn tail, thousands of calls
    assert shown.returncode == 0 and "INCOMPLETE" in shown.stdout and "WARNING" not in shown.stdout
    assert trace.meta["complete"] is False and trace.meta["truncated_bytes"] == 0
    assert (trace.events["syscall"] == "pwrite64").sum() > 100_000


def test_a_full_trace_disk_with_continue_lets_the_benchmark_finish(tmp_path):
    # GIVEN the same benchmark, 1 million calls, WHEN it runs with --on-fault continue
    proc, _, shown, trace, done = _fill_the_disk(tmp_path, "continue", 1_000_000)
    # THEN exit 5 and one line that says the benchmark runs on untraced
    assert proc.returncode == 5, proc.stderr
    (line,) = iowitness_lines(proc.stderr)
    assert "No space left on device" in line and "runs on untraced (--on-fault continue)" in line
    # AND it ran to its end, and all it printed reached us (the capture holds our pipes until then)
    assert done.exists() and proc.stdout.splitlines()[-1] == "writer done"
    assert [ln for ln in proc.stdout.splitlines() if ln.startswith("wrote")] == [f"wrote {i}" for i in range(0, 1_000_000, 100_000)]
    # AND the trace holds its calls up to the fault, readable
    assert shown.returncode == 0 and trace.meta["complete"] is False and trace.meta["truncated_bytes"] == 0
    assert 100_000 < (trace.events["syscall"] == "pwrite64").sum() < 1_000_000


def _printer_under_iowitness(tmp_path, on_fault: str, signum: int):
    counted, out = tmp_path / "counted", tmp_path / "printer.iwt"
    proc = subprocess.Popen([*IOWITNESS, "run", "-q", "--on-fault", on_fault, "-o", str(out), "--",
                             "bash", "-c", PRINTER, "printer", str(counted)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        # (1.5 s in: the collector flushes every 0.5 s, and a SIGKILL keeps only what it flushed)
        while not (counted.exists() and counted.read_text().count("\n") >= 30) and time.monotonic() < deadline:
            time.sleep(0.02)
        # WHEN the collector gets the signal
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, stdout, stderr, counted.read_text().split(), out


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_signalled_collector_stops_the_benchmark_by_default(tmp_path, signum):
    # GIVEN a benchmark that prints for 6 s, WHEN the collector gets SIGTERM or SIGKILL 1.5 s in
    code, stdout, stderr, counted, out = _printer_under_iowitness(tmp_path, "stop", signum)
    # THEN the benchmark is stopped with SIGINT: it counted far fewer than its 120 lines, and
    # every line it printed reached us
    assert 30 <= len(counted) < 100
    assert stdout.splitlines() == [f"line {i}" for i in range(1, len(counted) + 1)]
    lines = iowitness_lines(stderr)
    trace = load(out)
    if signum == signal.SIGTERM:
        # by the collector itself: the benchmark's exit code passed on, the trace closed whole
        assert code == 130 and lines == []
        assert trace.meta["complete"] is True and trace.meta["stop_reason"] == "terminated"
    else:
        # by the output capture, once the collector is dead: it says so
        (line,) = lines
        assert code == -signal.SIGKILL and "stopping the benchmark" in line and "(--on-fault stop)" in line
        assert gone(pid_in(line))
        assert trace.meta["complete"] is False
    assert len(trace.events) > 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_signalled_collector_with_continue_lets_the_benchmark_finish(tmp_path, signum):
    # GIVEN the same benchmark under --on-fault continue, WHEN the collector gets the signal
    code, stdout, stderr, counted, out = _printer_under_iowitness(tmp_path, "continue", signum)
    # THEN the benchmark ran to its end and every line reached us, and the trace
    assert counted == [str(i) for i in range(1, 121)]
    assert stdout.splitlines() == [f"line {i}" for i in range(1, 121)] and "printed all" in stderr
    (line,) = iowitness_lines(stderr)
    assert "runs on untraced (--on-fault continue)" in line
    trace = load(out)
    assert trace.output["stdout"].splitlines() == [f"line {i}" for i in range(1, 121)]
    if signum == signal.SIGTERM:
        # one line and 143; the trace closed whole at the signal, its calls up to then
        assert code == 143 and trace.meta["complete"] is True and trace.meta["left_running"] is True
    else:
        assert code == -signal.SIGKILL and trace.meta["complete"] is False
    assert 0 < (trace.events["syscall"] == "write").sum() < 120 * 2


def test_a_benchmark_that_ignores_sigint_is_killed_after_the_grace_period(tmp_path):
    # GIVEN a benchmark that ignores SIGINT, WHEN --duration ends the recording after 1 s
    script = tmp_path / "ignorer.py"
    script.write_text(IGNORER)
    started_at = tmp_path / "started"
    proc = iowitness("run", "-q", "--duration", "1", "-o", str(tmp_path / "i.iwt"), "--", sys.executable, str(script),
                     str(started_at), check=False, timeout=60)
    # from the benchmark's own start: timed from the test's, iowitness's start-up (imports, the
    # probe's load) was in it, and the run took 17.6 s beside two CPU hogs at load 10
    elapsed = time.monotonic() - float(started_at.read_text())
    # THEN SIGKILL follows the grace period (not its 120 s sleep), one line says so, and its exit
    # code is passed on
    (line,) = iowitness_lines(proc.stderr)
    assert f"did not stop within {GRACE_S:g} s of SIGINT and was killed with SIGKILL" in line
    assert proc.returncode == 137 and elapsed < 1 + GRACE_S + 10
    assert proc.stdout == "ignoring SIGINT\n"


def test_a_killed_collector_escalates_too(tmp_path):
    # GIVEN the same benchmark, WHEN the collector is killed with SIGKILL
    script = tmp_path / "ignorer.py"
    script.write_text(IGNORER)
    proc = subprocess.Popen([*IOWITNESS, "run", "-q", "-o", str(tmp_path / "k.iwt"), "--", sys.executable, str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline() == "ignoring SIGINT\n"
        proc.kill()
        started = time.monotonic()
        _, stderr = proc.communicate(timeout=60)   # the capture holds our pipes until the benchmark ends
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # THEN the capture sends SIGINT, then SIGKILL after the grace period, and says both
    first, second = iowitness_lines(stderr)
    assert "stopping the benchmark" in first and "killed with SIGKILL (--on-fault stop)" in second
    assert GRACE_S - 0.5 < elapsed < GRACE_S + 10 and gone(pid_in(second))


# The bug strikes once the benchmark has printed 5 lines (its counted file, the last argument),
# not at a time: the collector's first drain comes before the benchmark is launched (the
# Recorder opens its first statistics window), and on a loaded machine Python and the probe's
# load took 7.8 s to reach it, so a crash "2 s in" struck before there was a benchmark, its
# capture or a line to say.
CRASHING = textwrap.dedent("""
    import os, sys
    from iowitness import cli
    from iowitness.collector import session

    drain, counted = session.Recorder.drain, sys.argv[-1]

    def crash_once_the_benchmark_runs(self):
        if os.path.exists(counted) and len(open(counted).read().split()) >= 5:
            raise RuntimeError("a bug in the collector")
        return drain(self)

    session.Recorder.drain = crash_once_the_benchmark_runs
    sys.exit(cli.main(sys.argv[1:]))
""")


def test_a_crashing_collector_leaves_the_benchmark_to_the_capture(tmp_path):
    # GIVEN a collector with a bug that raises once the printer it records has printed 5 lines
    # (for a minute: it must outlive the collector's end, however long a loaded machine takes
    # to unwind and close the probe; it ends sooner only when the capture stops it)
    counted, out = tmp_path / "counted", tmp_path / "crash.iwt"
    proc = subprocess.run([sys.executable, "-c", CRASHING, "run", "-q", "-o", str(out), "--",
                           "bash", "-c", PRINTER.replace("seq 1 120", "seq 1 1200"), "printer", str(counted)],
                          capture_output=True, text=True, timeout=120)
    # THEN the bug shows as such (its traceback, exit 1), and the output capture, left behind,
    # stops the benchmark as --on-fault stop says and says so
    assert proc.returncode == 1 and "RuntimeError: a bug in the collector" in proc.stderr
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("iowitness:"))
    assert "ended without closing the trace (killed or crashed)" in line and "stopping the benchmark" in line
    assert gone(pid_in(line)) and len(counted.read_text().split()) < 1200
    # AND every line it printed reached us, and the trace reads up to the crash
    assert proc.stdout.splitlines() == [f"line {i}" for i in range(1, len(counted.read_text().split()) + 1)]
    trace = load(out)
    assert trace.meta["complete"] is False and trace.meta["truncated_bytes"] == 0 and len(trace.events) > 0
