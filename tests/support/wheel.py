"""A wheel built from this checkout the way `pip install .` builds it, one build at a time.

pip builds a local project in its tree: setuptools' build/ folder, iowitness.egg-info and the
probe's make all write there. Two builds at once (test_packaging's and test_install_paths'
fixtures, each file on its own xdist process) share that folder, and the compiler-less build
deletes the probe objects it finds in build/lib (setup.py: a pure wheel ships none): the other
build's wheel could lose its probe. A lock on a file in build/ makes them take turns."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def build_wheel(dest: Path, env: dict[str, str] | None = None) -> Path:
    """`pip wheel --no-deps` of the checkout into `dest` (with `env`, say a PATH without clang);
    the path of the wheel it wrote."""
    (REPO / "build").mkdir(exist_ok=True)
    with open(REPO / "build" / ".wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(REPO)],
                       check=True, capture_output=True, timeout=600, env=env)
    return next(dest.glob("iowitness-*.whl"))
