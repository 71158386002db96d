"""The HTML report and `compare` of real traced IOzone runs, opened in real headless Chromium.

Ground truth comes from IOzone's own output, never from iowitness: the tests it ran (its
table's columns: -i0 -i1 -i2 print write, rewrite, read, reread, random read, random write)
and the kB/s it printed for each. The page must load offline with no console error, draw
every chart (pixels at each chart's place are not blank), and hold a verdict row per number
IOzone printed, with that number.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support import browser
from tests.support.cli import iowitness
from tests.support.doc_tables import html_tables, markdown_tables

TESTS = ["write", "rewrite", "read", "reread", "random read", "random write"]
PAGE = """({
  charts: [...document.querySelectorAll("figure.chart")].map(f => {
    const r = f.getBoundingClientRect();
    return {name: f.dataset.chart, x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height};
  }),
  controls: [{name: "margin", x: innerWidth - 24, y: 0, width: 20, height: 400}],
  verdicts: [...document.querySelectorAll("table.verdicts tbody tr")].map(tr => [...tr.cells].map(c => c.textContent)),
  compare: [...document.querySelectorAll("section.compare")].map(s => ({
    phase: s.querySelector("h3").textContent,
    header: [...s.querySelectorAll("thead th")].map(th => th.textContent),
    rows: [...s.querySelectorAll("tbody tr")].map(tr => tr.cells[0].textContent)
  }))
})"""


def iozone_printed(stdout: str) -> list[int]:
    """The kB/s IOzone printed in its result row: after the file size and record size columns."""
    rows = [line.split() for line in stdout.splitlines()
            if re.fullmatch(r"\s*\d+(\s+\d+){2,}\s*", line)]
    assert len(rows) == 1, stdout
    return [int(v) for v in rows[0][2:]]


@pytest.fixture(scope="module")
def iozone_runs(tmp_path_factory):
    """Two real IOzone runs on the same file system, 4 KiB and 64 KiB records."""
    iozone = require_tool("iozone")
    where = tmp_path_factory.mktemp("iozone-html")
    traces = {}
    for record in ("4k", "64k"):
        out = where / f"r{record}.iwt"
        iowitness("run", "-q", "-o", str(out), "--", iozone, "-i0", "-i1", "-i2", "-s", "32m", "-r", record,
                  "-f", str(where / "iozone.tmp"))
        traces[record] = out
    return traces


def check_charts(page) -> None:
    assert page.errors == [], page.errors
    assert browser.ink(page.found["controls"][0]["png"]) < 0.001   # blank looks blank to the measure
    for chart in page.found["charts"]:
        assert chart["width"] > 100 and chart["height"] > 100, chart["name"]
        assert browser.ink(chart["png"]) > 0.01, f"chart {chart['name']} is blank"


def test_html_report_of_a_real_iozone_run_renders_with_its_verdicts(iozone_runs, tmp_path):
    # GIVEN a real traced IOzone run and the kB/s it printed
    trace = iozone_runs["4k"]
    printed = iozone_printed(load(trace).output["stdout"])
    assert len(printed) == len(TESTS)
    # WHEN its HTML report is written and opened in headless Chromium
    out = tmp_path / "report.html"
    iowitness("report", str(trace), "--html", str(out))
    page = browser.open_page(out, PAGE)
    # THEN it loads with no console error, and every chart is drawn
    check_charts(page)
    names = [c["name"] for c in page.found["charts"]]
    assert "timeline" in names
    for phase in range(1, len(TESTS) + 1):
        assert {f"latency {phase}", f"offset {phase}"} <= set(names)
    # AND the verdict table has one row per number IOzone printed, with that number, in its order
    rows = page.found["verdicts"]
    assert [r[1].split(" (")[0] for r in rows] == TESTS
    assert [int(r[2].split()[0].replace(",", "")) for r in rows] == printed
    assert all(r[0] in ("AGREES", "EXPLAINED", "DISAGREES", "CANNOT JUDGE") for r in rows)
    # AND the Markdown report holds the same verdict and phase tables
    markdown = markdown_tables(iowitness("report", str(trace), "--markdown").stdout)
    tables = {t["class"]: t["rows"] for t in html_tables(out.read_text())}

    def plain(rows):  # the HTML lists reasons one per line, the Markdown joins them with " · "
        return [[re.sub(r"\s*·\s*", " · ", c).strip(" ·") for c in r] for r in rows]

    assert plain(tables["verdicts"]) in [plain(t) for t in markdown]
    assert tables["phases"] in markdown


def test_compare_puts_two_real_runs_side_by_side(iozone_runs, tmp_path):
    # GIVEN two real IOzone runs with different record sizes
    out = tmp_path / "compare.html"
    # WHEN they are compared with labels
    iowitness("compare", str(iozone_runs["4k"]), str(iozone_runs["64k"]), "--label", "4k records",
              "--label", "64k records", "--html", str(out))
    page = browser.open_page(out, PAGE)
    # THEN the page renders every chart, with no console error
    check_charts(page)
    assert {"timelines", "bars"} <= {c["name"] for c in page.found["charts"]}
    # AND each IOzone test is a table with one column per run, holding the metrics
    tables = page.found["compare"]
    assert [t["phase"] for t in tables] == TESTS
    for t in tables:
        assert t["header"] == ["", "4k records", "64k records"]
        assert {"claim", "active", "ratio", "latency p99"} <= set(t["rows"])
    # AND without --label each run is named by its file system (as findmnt sees the directory)
    # and its trace file, and the record size each run used is the one its command line gave
    fstype = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", str(iozone_runs["4k"].parent)],
                            capture_output=True, text=True, check=True).stdout.strip()
    md = markdown_tables(iowitness("compare", str(iozone_runs["4k"]), str(iozone_runs["64k"]), "--markdown").stdout)
    write = md[1]
    assert [h.split()[0] for h in write[0][1:]] == [fstype, fstype]
    assert write[0][1].endswith("(r4k)") and write[0][2].endswith("(r64k)")
    assert write[1][1:] == ["4.0 KiB", "64.0 KiB"] and write[1][0] == "record"


def test_an_iozone_sweep_gets_throughput_against_file_and_record_size(tmp_path):
    # GIVEN a real IOzone -a sweep: file sizes 64k..256k, record sizes 4k..16k, write and read tests
    iozone = require_tool("iozone")
    trace, out = tmp_path / "sweep.iwt", tmp_path / "sweep.html"
    iowitness("run", "-q", "-o", str(trace), "--", iozone, "-a", "-n", "64k", "-g", "256k", "-y", "4k", "-q", "16k",
              "-i0", "-i1", "-f", str(tmp_path / "iozone.tmp"))
    # WHEN its HTML report is opened in Chromium
    iowitness("report", str(trace), "--html", str(out))
    page = browser.open_page(out, PAGE)
    # THEN there is one sweep chart per test IOzone ran, each drawn, and no console error
    check_charts(page)
    sweeps = sorted(c["name"] for c in page.found["charts"] if c["name"].startswith("sweep "))
    assert sweeps == sorted(f"sweep {t}" for t in ("write", "rewrite", "read", "reread"))
    # AND each sweep chart has a line per record size IOzone used (its legend names them)
    text = out.read_text()
    for record in ("4.0 KiB record", "8.0 KiB record", "16.0 KiB record"):
        assert text.count(record) >= 4
