"""`iowitness attach --pid` to a program of our own that waits at a gate after its first test
(tests/workloads/per_test_lines.c, timeline_bench.c; or a shell that waits and then execs one):
start it, wait until it is at the gate, attach, open the gate, wait for both. One helper for
every test that attaches between two tests of a benchmark (test_attach_shapes.py,
test_claim_windows_real.py, test_output_timeline.py).

"At the gate" is a condition the test can see, never a fixed sleep: the program's first result
line (in a pipe or in the file its stdout goes to), or its first file at its full size.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path
from typing import Callable

from .cli import IOWITNESS
from .collectors import stop, wait_attached

Ready = Callable[[subprocess.Popen], bool]


def line_in_pipe(prefix: bytes) -> Ready:
    """At the gate once the program (stdout=PIPE) has written a line starting with `prefix`
    (the trace holds the write whoever reads the pipe)."""
    def ready(proc: subprocess.Popen) -> bool:
        line = proc.stdout.readline()
        assert line, f"the program ended before it wrote {prefix!r}"
        return line.startswith(prefix)
    return ready


def line_in_file(path: Path, text: bytes) -> Ready:
    """At the gate once the file the program's stdout goes to holds `text`."""
    return lambda proc: text in path.read_bytes()


def file_of_size(path: Path, size: int) -> Ready:
    """At the gate once `path` holds `size` bytes (the program writes it, closes it, then waits:
    for a program that prints nothing before its end)."""
    return lambda proc: path.exists() and path.stat().st_size >= size


def attached_from_start(command: list[str], where: Path, out: Path, printed: Path) -> None:
    """Attach to a benchmark that is not ours before it starts its work: a shell in `where`
    waits at a gate, then execs `command` (stdout to `printed`) in the process attached to."""
    gate = where / "gate"
    with open(printed, "w") as output:
        attached_at_gate(["sh", "-c", f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.05; done; exec "
                          + shlex.join(command)], gate, out, stdout=output, cwd=where)


def attached_at_gate(command: list[str], gate: Path, out: Path, *, stdout=subprocess.DEVNULL,
                     ready: Ready | None = None, timeout: float = 120, cwd: Path | None = None) -> None:
    """Start `command` (it waits for `gate` to exist), wait until `ready` says it is at the
    gate, attach to it (trace to `out`), open the gate, and wait for both to exit 0."""
    proc = subprocess.Popen(command, stdout=stdout, stderr=subprocess.DEVNULL, cwd=cwd)
    collector = None
    try:
        deadline = time.monotonic() + timeout
        while ready is not None and not ready(proc):
            assert proc.poll() is None, f"{command[0]} ended (exit {proc.returncode}) before its gate"
            assert time.monotonic() < deadline, f"{command[0]} did not reach its gate in {timeout:.0f} s"
            time.sleep(0.05)
        collector = subprocess.Popen([*IOWITNESS, "attach", "--pid", str(proc.pid), "-o", str(out)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_attached(collector)
        gate.touch()
        assert proc.wait(timeout) == 0
        assert collector.wait(60) == 0
    finally:
        stop(proc)
        if collector is not None:
            stop(collector)
