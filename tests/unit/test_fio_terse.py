"""fio's terse output (analysis/benchmarks/fio_terse.py), read from real outputs of fio 3.33
(tests/data/claims/README.md says the commands): versions 2, 3 (fio's default) and 5. Each
field's place is checked against the line's own arithmetic: fio's bandwidth is its KiB over its
runtime, so a field read from the wrong place would not fit."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowitness.analysis.benchmarks import fio
from iowitness.analysis.judge.claim import UnparsableOutput

DATA = Path(__file__).resolve().parents[1] / "data" / "claims" / "fio"


def _claims(name: str):
    return fio.parse((DATA / name).read_text())


@pytest.mark.parametrize("name, expected", [
    ("two_jobs.terse", [("writer", "write"), ("reader", "read")]),
    ("randrw_v5.terse", [("mixed", "read"), ("mixed", "write")]),
    ("read_v2.terse", [("reader", "read")]),
])
def test_each_job_and_direction_that_moved_data_is_a_rate_and_a_latency(name, expected):
    claims = _claims(name)
    rates = [c for c in claims if c.unit == "KiB/s"]
    latencies = [c for c in claims if c.unit == "ns"]
    assert [(c.job, c.direction) for c in rates] == expected
    assert [(c.job, c.direction) for c in latencies] == expected
    for rate in rates:
        # the bandwidth is the KiB over the runtime, to fio's rounding
        implied = rate.extra["io_bytes"] / 1024 / (rate.extra["runtime_ms"] / 1000)
        assert rate.value == pytest.approx(implied, rel=0.002), rate.printed
        assert rate.bytes_per_s == rate.value * 1024 and rate.extra["clock_rounds"] == "up"
    for latency in latencies:
        blocks = latency.extra["fio_latency"]
        # completion latency within total latency, and its percentiles in order
        assert 0 < blocks["clat"]["mean"] <= blocks["lat"]["mean"] + 1e-9
        pcts = [v for k, v in blocks["clat"].items() if k.startswith("p")]
        assert len(pcts) == 17 and pcts == sorted(pcts)


def test_the_8_mib_jobs_say_8_mib():
    assert [c.extra["io_bytes"] for c in _claims("two_jobs.terse") if c.unit == "KiB/s"] == [8 << 20, 8 << 20]
    mixed = [c.extra["io_bytes"] for c in _claims("randrw_v5.terse") if c.unit == "KiB/s"]
    assert sum(mixed) == 8 << 20


def test_a_cut_line_or_other_output_is_one_clear_error():
    line = (DATA / "two_jobs.terse").read_text().splitlines()[0]
    with pytest.raises(UnparsableOutput, match="cut short"):
        fio.parse(line[:200] + "\n")
    with pytest.raises(UnparsableOutput, match="no terse line"):
        fio.parse("hello\n")
