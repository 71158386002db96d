"""compare of two groups of runs: the test it uses (Welch's t on the logs of per-run figures)
and the gate on it, on synthetic runs whose latency distributions the test sets.

Ground truth: the medians the runs were drawn around (the true change between the groups), and
for the t distribution, the printed tables' critical values (t 0.975 at 1 and 4 degrees of
freedom: 12.706 and 2.776; 0.995 at 10: 3.169).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from iowitness.analysis.runs import significance
from tests.support.cli import iowitness
from tests.support.run_groups import write_run

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schema" / "compare-groups.schema.json"


@pytest.mark.parametrize("t, df, p", [(12.706, 1, 0.05), (2.776, 4, 0.05), (3.169, 10, 0.01), (0.0, 3, 1.0)])
def test_the_t_distribution_gives_the_printed_tables_critical_values(t, df, p):
    assert significance.t_two_sided_p(t, df) == pytest.approx(p, abs=2e-4)
    if p < 1:
        assert significance.t_quantile(1 - p / 2, df) == pytest.approx(t, abs=2e-3)


def test_welch_by_hand():
    # GIVEN two groups of per-run figures; THEN the test's t, df and interval are Welch's, on the logs
    a, b = [10.0, 12.0, 11.0], [20.0, 25.0, 22.0]
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / 3, lb.var(ddof=1) / 3
    t = (lb.mean() - la.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
    test = significance.welch(a, b)
    assert test.scale == "log" and test.n == (3, 3)
    assert test.estimate == pytest.approx(math.exp(lb.mean() - la.mean()))
    assert test.p == pytest.approx(significance.t_two_sided_p(t, df))
    assert test.low < test.estimate < test.high and test.significant()


def test_a_group_of_one_run_or_figures_without_scatter():
    assert significance.welch([1.0], [2.0, 3.0]).p is None              # one run: no scatter, no test
    assert significance.welch([100, 100], [150, 150]).p == 0.0          # bytes: exact, any change is real
    assert significance.welch([100, 100], [100, 100]).p == 1.0
    assert significance.welch([0.0, 1.0], [2.0, 3.0]).scale == "linear"  # a zero: no log


def _gate_fires(rng, spread_low: float, spread_high: float, ratio: float, runs: int = 3) -> bool:
    """One draw of two groups whose runs' figures scatter so that the slowest run of a group of
    identical runs is 2-7x its fastest; does a 'p99>+10%' gate fail on them?"""
    sigma = rng.uniform(math.log(spread_low), math.log(spread_high)) / 2.0   # range of 3 ≈ 2 sigma
    a = rng.lognormal(math.log(50.0), sigma, runs)
    b = rng.lognormal(math.log(50.0 * ratio), sigma, runs)
    test = significance.welch(list(a), list(b))
    return bool(np.median(b) > 1.1 * np.median(a) and test.significant())


def test_identical_runs_scattering_2_to_7_times_rarely_fire_a_10_percent_gate():
    # GIVEN 4,000 pairs of identical groups of 3 runs, each group's runs 2-7x apart
    rng = np.random.default_rng(7)
    fired = sum(_gate_fires(rng, 2, 7, 1.0) for _ in range(4000))
    # THEN the one-sided gate fires about alpha/2 of the time (2.5 %), never as often as 4 %
    assert fired / 4000 < 0.04, fired
    # AND a gate on the medians alone (what compare of single runs does) fires about half the time
    rng = np.random.default_rng(7)
    naive = 0
    for _ in range(1000):
        sigma = rng.uniform(math.log(2), math.log(7)) / 2
        naive += rng.lognormal(0, sigma) > 1.1 * rng.lognormal(0, sigma)
    assert naive / 1000 > 0.3


def test_a_doubling_with_modest_scatter_is_found():
    # GIVEN groups of 3 runs 20 % apart, the second group's figures twice the first's
    rng = np.random.default_rng(11)
    found = sum(_gate_fires(rng, 1.1, 1.3, 2.0) for _ in range(1000))
    assert found / 1000 > 0.95, found


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """GIVEN synthetic runs of 400 4 KiB writes: A and A' drawn around 20 µs (3 each), B around
    40 µs (a real doubling), N around 20 µs but each run's median 2-7x from another's, R reads."""
    tmp = tmp_path_factory.mktemp("groups")
    made: dict[str, list[str]] = {}
    plans = {"A": [20e3] * 3, "A2": [20e3] * 3, "B": [40e3] * 3, "N1": [10e3, 40e3, 20e3],
             "N2": [25e3, 70e3, 12e3], "R": [20e3] * 3}
    for seed, (name, medians) in enumerate(plans.items()):
        made[name] = []
        for i, median in enumerate(medians):
            path = tmp / f"{name}{i}.iwt"
            write_run(path, median, seed * 10 + i, op="read" if name == "R" else "write")
            made[name].append(str(path))
    return made


def test_a_doubling_fails_the_gate_and_identical_groups_do_not(runs):
    proc = iowitness("compare", *runs["A"], "--", *runs["B"], "--fail-if", "p99>+10%", check=False)
    assert proc.returncode == 1, proc.stderr
    assert "crossed by 'sequential write'" in proc.stderr and "significant (p=" in proc.stderr
    proc = iowitness("compare", *runs["A"], "--", *runs["A2"], "--fail-if", "p99>+10%", "--fail-if", "p99<-10%",
                     "--fail-if", "wall<-10%", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "crossed by" not in proc.stderr


def test_runs_2_to_7_times_apart_do_not_fire_a_10_percent_gate(runs):
    # the medians differ by far more than 10 %, within the runs' scatter
    proc = iowitness("compare", *runs["N1"], "--", *runs["N2"], "--fail-if", "p99>+10%", "--json", check=False)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    judged = doc["fail_if"][0]
    assert judged["judged"] == 1 and not judged["hits"] and judged["not_significant"]
    assert "within the runs' scatter" in proc.stderr
    # AND compare of two single runs of them (the old gate) does fail
    assert iowitness("compare", runs["N1"][0], runs["N2"][1], "--fail-if", "p99>+10%", check=False).returncode == 1


def test_the_json_validates_and_carries_every_run(runs):
    import jsonschema

    doc = json.loads(iowitness("compare", *runs["A"], "--vs", *runs["B"], "--json", "--label", "old",
                               "--label", "new").stdout)
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()), cls=jsonschema.Draft202012Validator)
    assert [g["label"] for g in doc["groups"]] == ["old", "new"]
    assert [len(g["runs"]) for g in doc["groups"]] == [3, 3]
    ops = next(m for m in doc["phases"][0]["metrics"] if m["metric"] == "ops")
    assert ops["values"] == [[400, 400, 400], [400, 400, 400]] and ops["test"]["p"] == 1.0


@pytest.mark.parametrize("single", [True, False])
def test_a_gate_with_nothing_matched_exits_2_with_one_line(runs, single):
    # GIVEN writes against reads: no phase of one is a phase of the other
    args = [runs["A"][0], runs["R"][0]] if single else [*runs["A"], "--", *runs["R"]]
    proc = iowitness("compare", *args, "--fail-if", "p99>+10%", check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "nothing to judge (no phase of the runs matched)" in proc.stderr
    # AND without a gate it is only a comparison
    assert iowitness("compare", *args, check=False).returncode == 0


@pytest.mark.parametrize("args, message", [
    (["--alpha", "2"], "--alpha 2.0: give a probability"),
    (["--label", "a", "--label", "b", "--label", "c"], "3 --label for two groups"),
])
def test_usage_errors_are_one_line(runs, args, message):
    proc = iowitness("compare", *runs["A"], "--vs", *runs["B"], *args, check=False)
    assert proc.returncode == 2 and message in proc.stderr and proc.stderr.count("\n") == 1


def test_a_glob_that_matches_nothing_is_named(tmp_path):
    proc = iowitness("compare", str(tmp_path / "none*.iwt"), "--", str(tmp_path / "x.iwt"), check=False)
    assert proc.returncode == 2 and "no trace matches" in proc.stderr


def test_the_html_page_holds_the_same_changes_as_the_markdown(runs, tmp_path):
    from tests.support.doc_tables import html_tables, markdown_tables

    page = tmp_path / "groups.html"
    iowitness("compare", *runs["A"], "--", *runs["B"], "--html", str(page))
    markdown = iowitness("compare", *runs["A"], "--", *runs["B"], "--markdown").stdout
    text = page.read_text()
    changes = next(t["rows"] for t in html_tables(text) if t["rows"][0][:2] == ["phase", "metric"])
    assert changes in markdown_tables(markdown)
    assert "<svg" in text and "median of the runs" in text
