"""`compare A A` analyses A once (iowitness/commands/compare.py _entries): the same tables
as comparing A with a copy of it, which is analysed on its own."""

from __future__ import annotations

import shutil

import pytest

from tests.support.cli import iowitness
from tests.support.trace_mutants import write_dd_trace


@pytest.mark.parametrize("form", [["--json"], []], ids=["json", "text"])
def test_a_trace_named_twice_compares_as_its_copy(tmp_path, form):
    # GIVEN a dd trace and a copy of it under the same name in another folder
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    trace = tmp_path / "a" / "dd.iwt"
    write_dd_trace(trace)
    copy = tmp_path / "b" / "dd.iwt"
    shutil.copyfile(trace, copy)
    # WHEN the trace is compared with itself, and with its copy
    itself = iowitness("compare", str(trace), str(trace), *form, check=False)
    copied = iowitness("compare", str(trace), str(copy), *form, check=False)
    # THEN both say the same, byte for byte (the copy's path aside), and exit alike
    assert itself.stdout.strip()
    said = copied.stdout.replace(str(copy), str(trace))
    assert (itself.returncode, itself.stdout, itself.stderr) == (copied.returncode, said, copied.stderr)
