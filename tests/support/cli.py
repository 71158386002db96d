"""Run the real iowitness command line from tests, as a user would."""

from __future__ import annotations

import subprocess
import sys

IOWITNESS = [sys.executable, "-m", "iowitness.cli"]


def iowitness(*args, check=True, timeout=300, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([*IOWITNESS, *args], capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"iowitness {' '.join(args)} exited {proc.returncode}\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc
