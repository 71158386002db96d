"""Collectors run as separate processes by a test (one `iowitness attach` per host, say):
wait until one is recording, attach to a benchmark held stopped, and stop a process however it
has to be stopped."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from pathlib import Path


def wait_attached(collector: subprocess.Popen, timeout: float = 60) -> None:
    """Return once `collector` (stderr=PIPE) says it is recording; fail with what it said.

    Read from the pipe's fd, not line by line through a text wrapper: a readline can take the
    "attached" line into the wrapper's buffer along with the line before it, and a select on
    the fd would then wait for output that never comes until the run ends."""
    deadline, fd, seen = time.monotonic() + timeout, collector.stderr.fileno(), b""
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            chunk = os.read(fd, 65536)
            seen += chunk
            if b"attached; recording" in seen:
                return
            if not chunk:
                break
    raise AssertionError(f"the collector did not attach: {seen.decode(errors='replace')}")


def stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> None:
    """Stop `proc` with `sig`, then kill it if it has not ended within 30 s."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def attach_while_stopped(proc: subprocess.Popen, trace: Path, command: list[str]) -> None:
    """Stop `proc` (SIGSTOP), attach `command` (iowitness's, as a list) to it writing `trace`,
    let it go once the collector records, and wait for both to end well; whatever happens,
    neither is left running or stopped."""
    collector = None
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        collector = subprocess.Popen([*command, "attach", "--pid", str(proc.pid), "-o", str(trace)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_attached(collector)
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(120) == 0
        assert collector.wait(60) == 0
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
        stop(proc)
        if collector is not None:
            stop(collector)
