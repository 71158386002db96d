"""PostMark, a benchmark the project was not written for (Debian's postmark), read with
docs/specs/postmark.toml: its clock is time(), whole seconds, so its figures are judged to that
tick (spec clock_seconds), never a false DISAGREES at 2-3x on a run shorter than a second.
Ground truth: the megabytes postmark itself prints it read and wrote, against the trace's bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iowitness.analysis.judge import trace_verdicts as judged
from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel

SPEC = Path(__file__).resolve().parents[2] / "docs" / "specs" / "postmark.toml"


def test_postmark_figures_are_judged_to_its_clocks_whole_seconds(tmp_path):
    postmark = require_tool("postmark")
    # GIVEN postmark making 300 files and 600 transactions (well under a few seconds)
    work = tmp_path / "pm"
    work.mkdir()
    config = tmp_path / "pm.cfg"
    config.write_text(f"set location {work}\nset number 300\nset transactions 600\nrun\nquit\n")
    out = tmp_path / "pm.iwt"
    iowitness("run", "-q", "-o", str(out), "--", postmark, str(config), cwd=tmp_path)
    trace = load(out)
    text = trace.output["stdout"]
    # (the trace's bytes are postmark's own, to its printed 0.01 MiB)
    said = {op: float(mb) for mb, op in re.findall(r"([\d.]+) megabytes (read|written) \(", text)}
    e = trace.events
    kind = e["syscall"].astype(str)
    moved = {"read": int(e[kind.isin(["read", "pread64"])]["ret"].clip(lower=0).sum()),
             "written": int(e[kind.isin(["write", "pwrite64"])]["ret"].clip(lower=0).sum())}
    for op in ("read", "written"):
        assert abs(moved[op] / 2 ** 20 - said[op]) <= 0.006, (op, moved[op], said[op])
    # WHEN judged with the shipped spec
    verdicts = judged.verdicts(trace, spec=str(SPEC))
    # THEN its three figures agree: exactly, or to its clock's tick (or the digits printed), saying so
    assert sorted(v.claim.test for v in verdicts) == ["data read", "data written", "total"]
    for v in verdicts:
        assert v.verdict == "agrees", (v.claim.printed, v.reasons)
        if abs((v.ratio or 1) - 1) > 0.05:
            assert v.reasons[0].startswith(("judged to its clock's tick", "judged to its printed precision")), \
                v.reasons
    assert iowitness("check", "--spec", str(SPEC), str(out), check=False).returncode == 0
