"""The shipped bonnie++ spec (docs/specs/bonnie.toml) reads every figure of its CSV line and
only those: "+++++" (a test too fast to time) and the empty per-char fields of -f give no
claim. Before, the pattern needed the per-char fields and refused a -f line whole. Ground
truth: the line split at its commas, fields as bon_csv2txt(1) numbers them."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowitness.analysis.benchmarks import spec
from iowitness.analysis.judge.claim import UnparsableOutput

ROOT = Path(__file__).resolve().parents[2]
SPEC = spec.load(str(ROOT / "docs" / "specs" / "bonnie.toml"))
RECORDED = ROOT / "tests" / "data" / "claims" / "bonnie"
RATES = {9: "putc", 11: "put_block", 13: "rewrite", 15: "getc", 17: "get_block"}
LATENCIES = {38: "putc", 39: "put_block", 40: "rewrite", 41: "getc", 42: "get_block"}


def _printed(line: str) -> dict:
    fields = line.split(",")
    out = {(name, "rate"): fields[i] for i, name in RATES.items() if fields[i].isdigit()}
    return out | {(name, "max"): fields[i].rstrip("mus") for i, name in LATENCIES.items() if fields[i][:1].isdigit()}


@pytest.mark.parametrize("name", ["per_char.csv", "fast.csv", "fast_direct.csv"])
def test_every_printed_figure_is_one_claim(name):
    # GIVEN a recorded CSV line
    line = (RECORDED / name).read_text()
    # WHEN read with the shipped spec
    claims = spec.parse(line, SPEC)
    # THEN each figure it printed is a claim of its test, in the line's order, and nothing else
    said = {(c.test, c.extra.get("statistic") or "rate"): c.extra["printed_value"] for c in claims}
    assert said == _printed(line)
    # (in the order the tests ran: match = "order" gives each the next phase of its direction)
    tests = list(dict.fromkeys(c.test for c in claims))
    assert tests == [t for t in RATES.values() if t in tests]


def test_per_char_latency_is_a_chunk_and_rewrite_a_read_and_a_write():
    # GIVEN the per-char run's line WHEN read THEN the per-char max is over 8,192 calls, the
    # rewrite's over its read and write, the block tests' over one call, each in its printed unit
    claims = {(c.test, c.extra.get("statistic")): c for c in spec.parse((RECORDED / "per_char.csv").read_text(), SPEC)}
    assert claims[("putc", "max")].extra["timed"] == "8192 calls"
    assert claims[("rewrite", "max")].extra["timed"] == "2 calls"
    assert claims[("get_block", "max")].extra.get("timed", "call") == "call"
    assert claims[("putc", "max")].seconds_per_op == pytest.approx(21942e-6)
    assert claims[("putc", None)].bytes_per_s == pytest.approx(925 * 1024)


def test_a_line_with_no_figure_says_so():
    # GIVEN a -f line whose every block test was too fast and no latency printed
    fields = (RECORDED / "fast.csv").read_text().split(",")
    fields[39:44] = [""] * 5
    # WHEN read THEN one line says the line gives no figure, not that nothing matched
    with pytest.raises(UnparsableOutput, match="output gives no figure"):
        spec.parse(",".join(fields), SPEC)
