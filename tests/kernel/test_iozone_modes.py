"""IOzone's other units, for real: -N prints whole microseconds per operation, cut down (a
rewrite whose calls alone took 1.77 µs each printed "1"), and -O operations per second. Every
figure of the table is judged on its own test's phase and none DISAGREES."""

from __future__ import annotations

import re

import pytest

from tests.conftest import require_tool
from tests.support.cli import iowitness


@pytest.mark.parametrize("flag, unit", [("-N", "us/op"), ("-O", "ops/s")])
def test_iozone_microseconds_and_operations_per_second(tmp_path, flag, unit):
    iozone = require_tool("iozone")
    trace = tmp_path / "iozone.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", iozone, "-i0", "-i1", "-s", "4m", "-r", "4k", flag,
                    "-f", str(tmp_path / "f"), timeout=120)
    assert "Output is in" in run.stdout or "Mode. Output" in run.stdout, run.stdout
    check = iowitness("check", str(trace), check=False)
    verdicts = [re.match(r"(AGREES|EXPLAINED|DISAGREES|CANNOT JUDGE) +(\w+) \(", line)
                for line in check.stdout.splitlines()]
    lines = [m.string for m in verdicts if m]
    assert [m.group(2) for m in verdicts if m] == ["write", "rewrite", "read", "reread"], check.stdout
    assert all(f" {unit}" in line for line in lines), check.stdout
    assert check.returncode == 0 and "DISAGREES" not in check.stdout, check.stdout
