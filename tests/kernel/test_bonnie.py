"""bonnie++ -f (fast mode: no per-char tests), a benchmark the project was not written for
(Debian's bonnie++), read with docs/specs/bonnie.toml: its CSV line leaves the per-char fields
empty and prints "+++++" for a test too fast to time, and each figure it does print is judged
(before, the spec's pattern needed the per-char fields and the whole output was refused).
Ground truth: the CSV line's own fields, read by splitting it (bon_csv2txt(1)'s numbering), and
its file size against the trace's bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowitness.analysis.judge import trace_verdicts as judged
from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel

SPEC = Path(__file__).resolve().parents[2] / "docs" / "specs" / "bonnie.toml"
# bon_csv2txt(1)'s fields (from 0) of the block tests: rate in K/sec, latency with its unit
RATES = {11: "put_block", 13: "rewrite", 17: "get_block"}
LATENCIES = {39: "put_block", 40: "rewrite", 42: "get_block"}


def test_bonnie_fast_mode_figures_are_judged(tmp_path):
    bonnie = require_tool("bonnie++")
    # GIVEN bonnie++ -f on a 64 MiB file of 4 KiB chunks, its block writes O_DIRECT (-D) so that
    # its block write lasts long enough (over half a second) to be given a rate
    work = tmp_path / "b"
    work.mkdir()
    out = tmp_path / "bonnie.iwt"
    iowitness("run", "-q", "-o", str(out), "--", bonnie, "-d", str(work), "-s", "64M:4k", "-r", "32M",
              "-n", "0", "-u", "root", "-q", "-f", "-D", cwd=tmp_path)
    trace = load(out)
    line = next(x for x in trace.output["stdout"].splitlines() if x.startswith("1.9"))
    fields = line.split(",")
    assert fields[9] == "" and fields[38] == "", line          # -f: no per-char figures
    printed = {(name, "rate"): fields[i] for i, name in RATES.items() if fields[i].isdigit()}
    printed |= {(name, "latency"): fields[i] for i, name in LATENCIES.items() if fields[i][:1].isdigit()}
    assert ("put_block", "latency") in printed, line
    # (the trace's writes by bonnie++'s own process are its file: 64 MiB, once by the block write,
    # once by the rewrite; its seeker processes rewrite some blocks after)
    e = trace.events
    writes = e[e["syscall"].astype(str).isin(["write", "pwrite64"])]
    writes = writes[writes["tid"] == writes["tid"].iloc[0]]
    written = int(writes["ret"].clip(lower=0).sum())
    assert written == 2 * 64 * 2 ** 20, written
    # WHEN judged with the shipped spec
    verdicts = judged.verdicts(trace, spec=str(SPEC))
    # THEN every figure it printed is a claim, each on its phase, and none disagrees
    said = {(v.claim.test, "latency" if v.claim.extra.get("statistic") else "rate"): v.claim.extra["printed_value"]
            for v in verdicts}
    assert said == {k: v.rstrip("mus") for k, v in printed.items()}, (said, line)
    for v in verdicts:
        assert v.phases and v.verdict in ("agrees", "explained"), (v.claim.test, v.claim.printed, v.reasons)
    assert iowitness("check", "--spec", str(SPEC), str(out), check=False).returncode == 0
