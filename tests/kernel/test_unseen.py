"""A trace that saw no data call says why, instead of a silent empty report."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from iowitness.analysis.read.run import load
from tests.support.cli import iowitness


@pytest.fixture
def shm_file():
    path = Path("/dev/shm") / f"iowitness-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    if not path.parent.is_dir():
        pytest.skip("no /dev/shm on this machine")
    yield path
    path.unlink(missing_ok=True)


def _dd(path: Path) -> list[str]:
    return ["dd", "if=/dev/zero", f"of={path}", "bs=64k", "count=10"]


def test_a_benchmark_file_under_dev_shm_is_named_as_the_reason_and_with_file_it_is_traced(tmp_path, shm_file):
    # GIVEN dd writing 10 × 64 KiB to a file under /dev/shm, which the all-files mode skips (/dev/)
    blind, seen = tmp_path / "blind.iwt", tmp_path / "seen.iwt"
    iowitness("run", "-q", "-o", str(blind), "--", *_dd(shm_file))
    # WHEN show, report and check read its trace
    said = f"{shm_file} is under /dev/, which iowitness skips unless it is named: trace again with --file {shm_file}"
    # THEN each says that no data call was recorded, and what to do
    assert said in iowitness("show", str(blind)).stdout
    assert said in iowitness("report", str(blind)).stdout
    checked = iowitness("check", str(blind), check=False)
    assert checked.returncode == 1 and said in checked.stderr
    assert "loads and stores on pages of a mapped file" in checked.stderr

    # AND named with --file, the same run is traced, call for call (dd's own 10 writes), with no such warning
    iowitness("run", "-q", "-o", str(seen), "--file", str(shm_file), "--", *_dd(shm_file))
    trace = load(seen)
    writes = trace.events[trace.events["syscall"] == "write"]
    assert len(writes) == 10 and int(writes["ret"].sum()) == 10 * 65536
    assert "no read or write call" not in iowitness("show", str(seen)).stdout
