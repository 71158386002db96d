"""compare's Markdown and HTML forms carry the changes against the first run that --json gives:
the same figures, formatted as the terminal formats them (reporters/compare.py).

The traces are synthetic (no root needed), written record for record in the probe's layout by
scripts/bench/report_10m.py, shaped like `iozone -t 1 -i0 -i1 -i2` with three file sizes: six
phases each, whose durations and latencies differ from run to run.
"""

from __future__ import annotations

import json
import re

import pytest

from iowitness.analysis.runs import deltas
from iowitness.reporters.compare import shown, signed
from tests.support.bench import script
from tests.support.cli import iowitness
from tests.support.doc_tables import html_tables, markdown_tables

LABELS = ("base", "bigger", "biggest")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """GIVEN three IOzone-shaped traces of about 2,000, 3,000 and 4,000 events."""
    bench = script("report_10m")
    tmp = tmp_path_factory.mktemp("compare")
    paths = []
    for seed, events in enumerate((2000, 3000, 4000), start=1):
        path = tmp / f"run{seed}.iwt"
        bench.build_trace(path, events, children=1, rounds=1, seed=seed)
        paths.append(str(path))
    labels = [arg for label in LABELS for arg in ("--label", label)]
    return [*paths, *labels]


def expected_rows(doc: dict) -> list[list[str]]:
    """The changes table as the JSON's figures read: per phase and text metric, every run's value,
    then each later run's change and change in percent."""
    header = ["phase", "metric", *LABELS]
    for label in LABELS[1:]:
        header += [f"Δ {label}", f"Δ% {label}"]
    out = [header]
    for row in doc["phases"]:
        for m in row["metrics"]:
            if m["metric"] not in deltas.TEXT_METRICS:
                continue
            cells = [row["phase"], m["metric"], *(shown(v, m["unit"]) for v in m["values"])]
            for i in range(1, len(LABELS)):
                pct = m["delta_pct"][i]
                cells += [signed(m["delta"][i], m["unit"]), "-" if pct is None else f"{pct:+.1f}%"]
            out.append(cells)
    return out


def _reorder(rows: list[list[str]]) -> list[list[str]]:
    """The tables give run values, then Δ and Δ% per later run; put all values first, as expected_rows does."""
    header = rows[0]
    order = [header.index(c) for c in ("phase", "metric", *LABELS)]
    order += [header.index(f"{d} {label}") for label in LABELS[1:] for d in ("Δ", "Δ%")]
    return [[r[i] for i in order] for r in rows]


def test_markdown_and_html_hold_the_changes_json_gives(runs, tmp_path):
    # WHEN the runs are compared as JSON, as Markdown and as HTML
    doc = json.loads(iowitness("compare", *runs, "--json").stdout)
    markdown = iowitness("compare", *runs, "--markdown").stdout
    page = tmp_path / "c.html"
    iowitness("compare", *runs, "--html", str(page))
    md_changes = next(t for t in markdown_tables(markdown) if t[0][:2] == ["phase", "metric"])
    html_changes = next(t["rows"] for t in html_tables(page.read_text()) if t["class"] == "changes")
    # THEN both hold, cell for cell, the JSON's values and changes of every phase and text metric
    want = expected_rows(doc)
    assert len(want) == 1 + 6 * len(deltas.TEXT_METRICS)
    assert _reorder(md_changes) == want
    assert _reorder(html_changes) == want
    # AND both say what they compare against
    assert "## Changes against base" in markdown and '<h2 id="changes">Changes against base</h2>' in page.read_text()


def test_the_shown_changes_read_back_as_the_json_numbers(runs):
    # GIVEN the JSON and the Markdown of one comparison
    doc = json.loads(iowitness("compare", *runs, "--json").stdout)
    md_changes = markdown_tables(iowitness("compare", *runs, "--markdown").stdout)[-1]
    header, body = md_changes[0], md_changes[1:]
    by_key = {(r[0], r[1]): dict(zip(header, r)) for r in body}
    checked = 0
    for row in doc["phases"]:
        for m in row["metrics"]:
            if m["metric"] not in ("p99", "duration"):
                continue
            for i, label in enumerate(LABELS[1:], start=1):
                # WHEN a shown change is read back: its number, and its unit's factor to the JSON unit
                cell = by_key[(row["phase"], m["metric"])]
                pct = float(cell[f"Δ% {label}"].rstrip("%"))
                number, unit = re.fullmatch(r"([+-]\d+(?:\.\d+)?) (\S+)", cell[f"Δ {label}"]).groups()
                factor = {"µs": 1.0, "ms": 1e3, "s": 1e6} if m["unit"] == "us" else {"µs": 1e-6, "ms": 1e-3, "s": 1.0}
                # THEN it is the JSON's change, to the digits shown
                assert pct == pytest.approx(m["delta_pct"][i], abs=0.05)
                decimals = len(number.partition(".")[2])
                assert float(number) * factor[unit] == pytest.approx(m["delta"][i], abs=0.51 * 10**-decimals * factor[unit])
                checked += 1
    assert checked == 6 * 2 * 2


def test_a_fail_if_gate_says_the_same_whatever_the_form(runs, tmp_path):
    # GIVEN a threshold every later run crosses: each phase of the bigger runs lasts longer
    gate = ["--fail-if", "duration>+0%"]
    # WHEN the runs are compared as text, Markdown and HTML with it
    procs = [iowitness("compare", *runs, *gate, *form, check=False)
             for form in ([], ["--markdown"], ["--html", str(tmp_path / "g.html")])]
    # THEN every form exits 1 and names the same crossings on stderr, one per phase and later run
    assert [p.returncode for p in procs] == [1, 1, 1]
    assert procs[0].stderr == procs[1].stderr == procs[2].stderr
    assert procs[0].stderr.count("crossed by") == 6 * 2
    # AND the crossed figures are those the Markdown's changes table shows
    first = procs[0].stderr.splitlines()[0]
    changes = markdown_tables(procs[1].stdout)[-1]
    row = next(r for r in changes if r[:2] == ["write", "duration"])
    assert f"{row[2]} -> {row[3]} ({row[4]}, {row[5]})" in first


def test_labels_with_control_characters_are_shown_escaped_in_every_chart(runs, tmp_path):
    # GIVEN labels holding an escape sequence and a tab (a label is the user's, or a file's name)
    labels = ["a\x1b[31mb", "c\td"]
    page = tmp_path / "labels.html"
    done = iowitness("compare", *runs[:2], "--label", labels[0], "--label", labels[1], "--html", str(page))
    # THEN no raw control character reaches the page (the timelines' and the latency curves'
    # legends included), and matplotlib was never asked to draw one
    text = page.read_text()
    assert "\x1b" not in text and "\t" not in text and "Glyph" not in done.stderr
    assert text.count("<svg") >= 3
