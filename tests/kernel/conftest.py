from __future__ import annotations

from pathlib import Path

import pytest

from iowitness.analysis.read.run import load
from tests.support.cli import iowitness


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    d = tmp_path / "bench"
    d.mkdir()
    return d


@pytest.fixture
def traced(tmp_path):
    """Run a command under `iowitness run` and load its trace."""
    def run(command: list[str], *options: str, cwd=None):
        out = tmp_path / f"trace-{len(list(tmp_path.glob('trace-*.iwt')))}.iwt"
        proc = iowitness("run", "-q", "-o", str(out), *options, "--", *command, cwd=cwd)
        return load(out), proc
    return run
