"""The workloads of tests/workloads/: build one once per session (build), and read the calls known_io logged.

known_io logs every syscall it makes on its target file as one JSON line; that log is the
ground truth the tracer's events are checked against. The sequence is documented at the top
of the C file.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from .strace import DATA_CALLS

WORKLOADS = Path(__file__).resolve().parents[1] / "workloads"
KNOWN_IO_SOURCE = WORKLOADS / "known_io.c"


# -z now for every workload: the dynamic linker resolves pwrite, fdatasync and the rest at start,
# not inside a benchmark's first timed call (lazily bound, latency_bench's first request took
# 20 µs more than its call). Libraries only where a workload uses them: each one linked is a file
# the loader opens and reads at start, calls a trace holds
FLAGS = ("-O1", "-Wall", "-Werror", "-Wl,-z,now")
LIBS = {name: ("-pthread",) for name in ("known_io", "aio_known", "mapped_io", "uring_known", "transfer_known",
                                         "clone_known", "threads_bench", "crowd", "warmup_clients")}
LIBS["latency_bench"] = ("-lm",)

_built: dict[str, Path] = {}
_cache_dir: list[Path] = []


def _cache() -> Path:
    """This test session's folder of built workloads (made on first use, removed at exit)."""
    if not _cache_dir:
        where = Path(tempfile.mkdtemp(prefix="iowitness-workloads-"))
        atexit.register(shutil.rmtree, where, True)
        _cache_dir.append(where)
    return _cache_dir[0]


def _source_hash(source: Path) -> str:
    """The source, every header beside it (bench_clock.h), the flags and the compiler: what the binary is made of."""
    digest = hashlib.sha256()
    for part in [source, *sorted(WORKLOADS.glob("*.h"))]:
        digest.update(part.name.encode() + b"\0" + part.read_bytes() + b"\0")
    digest.update(" ".join((shutil.which("gcc") or "", *FLAGS, *LIBS.get(source.stem, ()))).encode())
    return digest.hexdigest()[:16]


def build(name: str) -> Path:
    """tests/workloads/NAME.c, compiled once per test session (cached by its source hash); skip when
    gcc is missing. The executable lives in the session's cache: run it, never write beside it."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip(f"gcc is not installed: cannot build the {name} workload")
    source = WORKLOADS / f"{name}.c"
    key = _source_hash(source)
    if key in _built and _built[key].exists():
        return _built[key]
    where = _cache() / key
    where.mkdir(exist_ok=True)
    exe = where / name
    build = subprocess.run([gcc, *FLAGS, "-o", str(exe), str(source), *LIBS.get(name, ())],
                           capture_output=True, text=True)
    # a compiler error is a bug in the workload, not a missing capability: fail, don't skip
    if build.returncode != 0:
        raise AssertionError(f"gcc could not build {source}:\n{build.stderr}")
    _built[key] = exe
    return exe


def build_known_io() -> Path:
    return build("known_io")


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
