"""The known_io workload (tests/workloads/known_io.c): build it, and read the calls it logged.

known_io logs every syscall it makes on its target file as one JSON line; that log is the
ground truth the tracer's events are checked against. The sequence is documented at the top
of the C file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from .strace import DATA_CALLS

WORKLOADS = Path(__file__).resolve().parents[1] / "workloads"
KNOWN_IO_SOURCE = WORKLOADS / "known_io.c"


def build(name: str, tmp_dir) -> Path:
    """Compile tests/workloads/NAME.c into tmp_dir and return the executable; skip when gcc is missing."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip(f"gcc is not installed: cannot build the {name} workload")
    exe = Path(tmp_dir) / name
    source = WORKLOADS / f"{name}.c"
    build = subprocess.run([gcc, "-O1", "-pthread", "-Wall", "-Werror", "-o", str(exe), str(source)],
                           capture_output=True, text=True)
    # a compiler error is a bug in the workload, not a missing capability: fail, don't skip
    if build.returncode != 0:
        raise AssertionError(f"gcc could not build {source}:\n{build.stderr}")
    return exe


def build_known_io(tmp_dir) -> Path:
    return build("known_io", tmp_dir)


def read_truth(log_path) -> list[dict]:
    """The calls known_io logged, in log order: dicts with op, pid, tid, fd, offset, requested, ret, flags."""
    return [json.loads(line) for line in Path(log_path).read_text().splitlines() if line.strip()]


def truth_totals(records: list[dict]) -> dict:
    """Per-op call counts and byte totals of a known_io log, shaped like strace_file_calls().

    Bytes are summed over positive returns of the data calls, as strace_file_calls() does.
    """
    counts = Counter(r["op"] for r in records)
    total_bytes = Counter()
    for r in records:
        if r["op"] in DATA_CALLS:
            total_bytes[r["op"]] += max(r["ret"], 0)
    return {"counts": dict(counts), "bytes": dict(total_bytes)}
