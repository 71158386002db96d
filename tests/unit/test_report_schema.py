"""report --json, of a trace with a record per call and of a --summary trace, against the one
published schema (docs/schema/report.schema.json), without the kernel.

The traces are tests/support/trace_mutants.py's bases, written by the collector's own writer:
a dd run with everything a full trace holds, and a --summary run (two snapshots of the
kernel's aggregates). tests/kernel/test_compare_gate.py validates real runs the same way.
"""

from __future__ import annotations

import json

import pytest

from iowitness.reporters.machine import SCHEMA_VERSION
from tests.conftest import REPO
from tests.support.cli import iowitness
from tests.support.trace_mutants import write_dd_trace, write_summary_trace

SCHEMA = REPO / "docs" / "schema" / "report.schema.json"


@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_a_summary_report_carries_the_schema_version_and_validates(validator, tmp_path):
    # GIVEN a --summary trace: a write phase of 100 calls ended by an fsync, then a read phase of 50
    trace = tmp_path / "summary.iwt"
    write_summary_trace(trace)
    # WHEN it is reported as JSON
    doc = json.loads(iowitness("report", str(trace), "--json").stdout)
    # THEN it carries report --json's schema version, says it is a summary, and validates
    assert doc["schema_version"] == SCHEMA_VERSION and doc["mode"] == "summary"
    assert list(validator.iter_errors(doc)) == []
    # AND its phases are the aggregates' figures
    assert [(p["operation"], p["calls"], p["bytes"], p["fsyncs"]) for p in doc["phases"]] == \
        [("write", 100, 409600, 1), ("read", 50, 204800, 0)]


def test_an_ordinary_report_validates_as_the_other_form_only(validator, tmp_path):
    # GIVEN a dd trace with a record per call, and the summary report's JSON
    full, summary = tmp_path / "dd.iwt", tmp_path / "summary.iwt"
    write_dd_trace(full)
    write_summary_trace(summary)
    doc = json.loads(iowitness("report", str(full), "--json").stdout)
    summary_doc = json.loads(iowitness("report", str(summary), "--json").stdout)
    # THEN the ordinary report validates (oneOf: it matches the events form and not the summary one)
    assert doc["schema_version"] == SCHEMA_VERSION and "mode" not in doc
    assert list(validator.iter_errors(doc)) == []
    # AND a summary report without its version, or with a phase of the other form, does not
    unversioned = {k: v for k, v in summary_doc.items() if k != "schema_version"}
    assert not validator.is_valid(unversioned)
    assert not validator.is_valid({**summary_doc, "phases": doc["phases"]})
