"""compare of groups whose runs are chosen in a Parquet dataset: 'DS[host=a]' 'DS[host=b]'.

Ground truth: the same runs compared from their own traces (the figures the dataset was
written from), and the medians the synthetic runs were drawn around (tests/support/run_groups.py):
A and A' around 20 µs per write on hosts node-a and node-c, B around 40 µs on node-b.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowitness.analysis.runs import dataset_runs
from iowitness.errors import UsageError
from tests.support.cli import iowitness
from tests.support.run_groups import write_run

pytest.importorskip("pyarrow", reason="pyarrow is in the parquet extra: pip install -e '.[parquet]'")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """GIVEN 9 runs exported into one dataset: 3 per host, node-b's twice as slow."""
    tmp = tmp_path_factory.mktemp("sweep")
    made: dict[str, list[str]] = {}
    for seed, (name, host, median) in enumerate([("A", "node-a", 20e3), ("B", "node-b", 40e3),
                                                 ("A2", "node-c", 20e3)]):
        made[name] = []
        for i in range(3):
            path = tmp / f"{name}{i}.iwt"
            write_run(path, median, seed * 10 + i, host=host)
            made[name].append(str(path))
    root = tmp / "ds"
    iowitness("export", "--parquet", str(root), *made["A"], *made["B"], *made["A2"])
    return {"root": str(root), **made}


def _same_figures(left: dict, right: dict) -> None:
    """Two compare --json documents hold the same per-phase figures, tests and gate results
    (each group's per-run figures as a set: a selection gives its runs oldest first)."""
    assert len(left["phases"]) == len(right["phases"]) == 1
    for a, b in zip(left["phases"], right["phases"]):
        assert a["phase"] == b["phase"]
        for ma, mb in zip(a["metrics"], b["metrics"]):
            assert ma["metric"] == mb["metric"]
            assert [sorted(v, key=str) for v in ma["values"]] == [sorted(v, key=str) for v in mb["values"]]
            assert ma["median"] == mb["median"] and ma["spread"] == mb["spread"]
            assert ma["test"]["p"] == pytest.approx(mb["test"]["p"], rel=1e-12, abs=1e-300)
    assert [j["crossed"] for j in left["fail_if"]] == [j["crossed"] for j in right["fail_if"]]


def test_selections_give_the_figures_of_the_traces_and_fail_a_real_doubling(sweep):
    ds = sweep["root"]
    # WHEN the two hosts are compared from the dataset, and from the traces themselves
    gate = ["--fail-if", "p99>+10%", "--json"]
    chosen = iowitness("compare", f"{ds}[host=node-a]", f"{ds}[host=node-b]", *gate, check=False)
    traced = iowitness("compare", *sweep["A"], "--", *sweep["B"], *gate, check=False)
    # THEN both fail the gate on the doubling, with the same figures
    assert chosen.returncode == traced.returncode == 1, chosen.stderr
    left, right = json.loads(chosen.stdout), json.loads(traced.stdout)
    _same_figures(left, right)
    p50 = next(m for m in left["phases"][0]["metrics"] if m["metric"] == "p50")
    assert 1.8 < p50["median"][1] / p50["median"][0] < 2.2          # drawn 20 µs against 40 µs
    # and each run says where it came from: the dataset and its run id, a selection of its own
    assert all(r["trace"].startswith(f"{ds}[run_id=") for g in left["groups"] for r in g["runs"])
    assert {r["host"] for r in left["groups"][1]["runs"]} == {"node-b"}
    # and the document is the one the schema describes
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extra")
    schema = Path(__file__).resolve().parents[2] / "docs" / "schema" / "compare-groups.schema.json"
    jsonschema.validate(left, json.loads(schema.read_text()), cls=jsonschema.Draft202012Validator)


def test_runs_made_the_same_pass_and_selections_mix_with_traces(sweep):
    ds = sweep["root"]
    # GIVEN two hosts whose runs were drawn alike; WHEN gated at ±10 % on latency and throughput
    same = iowitness("compare", f"{ds}/[host=node-a]", f"{ds}/[host=node-c]", "--fail-if", "p99>+10%",
                     "--fail-if", "p99<-10%", "--fail-if", "wall<-10%", check=False)
    assert same.returncode == 0, same.stderr
    assert "n=3" in same.stdout
    # and traces on one side of -- with a selection of either value and a glob on the other
    mixed = iowitness("compare", *sweep["B"], "--", f"{ds}[host=node-a|node-c,command=writer*]", "--json")
    doc = json.loads(mixed.stdout)
    assert [len(g["runs"]) for g in doc["groups"]] == [3, 6]
    # and the whole dataset is a group too
    whole = iowitness("compare", *sweep["B"], "--", ds, "--json")
    assert [len(g["runs"]) for g in json.loads(whole.stdout)["groups"]] == [3, 9]


@pytest.mark.parametrize("text, words", [
    ("{ds}[hots=node-a]", "no column 'hots' in the dataset's runs; the keys are"),
    ("{ds}[host=node-z]", "selects no run (9 runs in"),
    ("{ds}[host>node-a]", "host is text: it takes = or != (a glob), not >"),
    ("{ds}[start_time>=soon]", "is not a time; give one like 2026-11-27T10:00"),
    ("{ds}[events>=many]", "events is a number; 'many' is not one"),
    ("{ds}[host]", "'host' is not KEY=VALUE"),
    ("{ds}x[host=a]", "is not a directory: a dataset selection is DIR[KEY=VALUE,...]"),
    ("{tmp}", "is a directory but not a Parquet dataset (no runs/ in it"),
])
def test_a_bad_selection_says_what_is_wrong(sweep, text, words):
    ds = sweep["root"]
    with pytest.raises(UsageError) as caught:
        dataset_runs.runs(dataset_runs.parse(text.format(ds=ds, tmp=ds.rsplit("/", 1)[0])))
    assert words in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("args, words", [
    (["{ds}[host=node-z]", "{ds}[host=node-b]"], "selects no run (9 runs in"),
    (["{ds}[host=node-a]"], "is a group of runs: give two groups"),
])
def test_a_bad_selection_is_one_line_on_the_command_line(sweep, args, words):
    ds = sweep["root"]
    proc = iowitness("compare", *[a.format(ds=ds) for a in args], check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert words in proc.stderr and "Traceback" not in proc.stderr


def test_what_is_no_selection(tmp_path):
    # a glob's character class and a trace named with brackets are left to the glob and the reader
    assert dataset_runs.parse(str(tmp_path / "run[12].iwt")) is None
    assert dataset_runs.parse("nowhere/run[0-9]") is None
    named = tmp_path / "a[host=b]"
    named.write_bytes(b"")
    assert dataset_runs.parse(str(named)) is None
    # a comma inside a glob stays in its value; a comma before KEY= starts a condition
    (tmp_path / "runs").mkdir()
    parsed = dataset_runs.parse(f"{tmp_path}[command=*bs=4k,8k*,host=a]")
    assert parsed.conditions == (("command", "=", "*bs=4k,8k*"), ("host", "=", "a"))
