"""Run the real iowitness command line from tests, as a user would."""

from __future__ import annotations

import subprocess
import sys

from tests.support.cli_forks import forked

IOWITNESS = [sys.executable, "-m", "iowitness.cli"]


def iowitness(*args, check=True, timeout=300, refused=False, **kwargs) -> subprocess.CompletedProcess:
    """The command's exit code, stdout and stderr; each call its own process, forked from a warm one
    where it can be (tests/support/cli_forks.py says when it cannot; IOWITNESS_TEST_FORKS=0: never).
    refused: a run or attach the test expects refused before it launches or follows anything (a
    fork will do for it too)."""
    proc = forked(list(args), timeout=timeout, refused=refused, **kwargs)
    if proc is None:
        proc = subprocess.run([*IOWITNESS, *args], capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"iowitness {' '.join(args)} exited {proc.returncode}\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc
