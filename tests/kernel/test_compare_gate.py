"""compare as a CI gate on real runs: changes per phase against the first run, --fail-if exit
codes, and --json checked against docs/schema/compare.schema.json (and report --json against
docs/schema/report.schema.json).

Ground truth is what dd was told to do (count × bs bytes in count write calls), and dd's own
"N bytes copied" line: both independent of iowitness. Thresholds on bytes and calls make the
exit codes certain; timing figures are only checked for consistency (delta = value − base).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel
SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schema" / "compare.schema.json"
BS = 64 * 1024


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """GIVEN two real dd runs writing 100 and 150 blocks of 64 KiB to one file."""
    tmp = tmp_path_factory.mktemp("compare")
    traces = []
    for count in (100, 150):
        trace = tmp / f"dd{count}.iwt"
        proc = iowitness("run", "-q", "-o", str(trace), "--", "dd", "if=/dev/zero", f"of={tmp}/f",
                         f"bs={BS}", f"count={count}", "conv=fsync")
        assert f"{count * BS} bytes" in proc.stderr + proc.stdout   # dd's own count of what it wrote
        traces.append(str(trace))
    return traces


def metric(doc: dict, phase: str, name: str) -> dict:
    row = next(r for r in doc["phases"] if r["phase"] == phase)
    return next(m for m in row["metrics"] if m["metric"] == name)


def test_json_gives_exact_byte_and_call_changes_and_validates_against_the_schema(two_runs):
    import jsonschema

    # WHEN the two runs are compared as JSON
    doc = json.loads(iowitness("compare", *two_runs, "--json").stdout)
    # THEN it validates against the published schema and carries its version
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()), cls=jsonschema.Draft202012Validator)
    assert doc["schema_version"] == 1 and doc["failed"] is False
    # AND the dd write phase changed by exactly 50 blocks: +50 calls, +50 × 64 KiB, +50 %
    assert metric(doc, "dd write", "bytes")["values"] == [100 * BS, 150 * BS]
    assert metric(doc, "dd write", "bytes")["delta"] == [0, 50 * BS]
    assert metric(doc, "dd write", "ops")["delta_pct"] == [0, pytest.approx(50.0)]
    # AND every timing delta is the difference of the two values it comes from
    for name in ("wall", "p99", "duration"):
        m = metric(doc, "dd write", name)
        assert m["delta"][1] == pytest.approx(m["values"][1] - m["values"][0])
        assert m["delta_pct"][1] == pytest.approx(100 * m["delta"][1] / m["values"][0])


@pytest.mark.parametrize("expression, code", [
    ("bytes>+40%", 1), ("bytes>+60%", 0), ("ops>=+50", 1), ("ops>+50", 0), ("bytes<-1%", 0),
    ("bytes>+3MiB", 1), ("bytes>+4MiB", 0),
])
def test_fail_if_exits_1_exactly_when_a_threshold_is_crossed(two_runs, expression, code):
    # WHEN compare gates on a change of bytes or calls (+50 %: 50 calls, 3.125 MiB)
    proc = iowitness("compare", *two_runs, "--fail-if", expression, check=False)
    # THEN it exits 1 when crossed, naming the phase and the change on stderr; 0 when not
    assert proc.returncode == code, proc.stderr
    assert ("crossed by 'dd write'" in proc.stderr) == (code == 1)
    assert "Traceback" not in proc.stderr


def test_several_thresholds_fail_when_any_is_crossed_and_the_json_says_which(two_runs):
    proc = iowitness("compare", *two_runs, "--json", "--fail-if", "ops<-10%", "--fail-if", "ops>+10%", check=False)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert [j["crossed"] for j in doc["fail_if"]] == [False, True] and doc["failed"] is True
    assert doc["fail_if"][1]["hits"][0]["delta"] == 50


@pytest.mark.parametrize("expression, words", [
    ("p99>>10%", "is not METRIC OP CHANGE"), ("latency>+10%", "no metric 'latency'"),
    ("p99>+3MiB", "'MiB' is not a unit of p99"), ("wall<-5", "give a % or a unit for wall"),
])
def test_a_bad_expression_is_one_line_and_exit_2(two_runs, expression, words):
    proc = iowitness("compare", *two_runs, "--fail-if", expression, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


def test_report_json_carries_its_schema_version_and_validates_against_the_schema(two_runs):
    import jsonschema

    schema = json.loads((SCHEMA.parent / "report.schema.json").read_text())
    for trace in two_runs:
        # WHEN a real run is reported as JSON
        doc = json.loads(iowitness("report", trace, "--json").stdout)
        # THEN it validates against docs/schema/report.schema.json, dd's claim judged in it
        jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
        assert doc["schema_version"] == 1 and doc["verdicts"][0]["claim"]["source"] == "dd"
