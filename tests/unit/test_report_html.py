"""The HTML and Markdown reports of a big trace: the size bound, and what the page shows.

The trace is synthetic (no root needed): 1 million events written record for record in the
probe's layout by scripts/bench/report_10m.py, shaped like `iozone -t 4 -i0 -i1 -i2` run 12
times (288 phases). Its HTML report must stay under 5 MB, keep every phase in its tables,
say where it summarised, and render in real headless Chromium with no console error.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.support import browser
from tests.support.bench import script
from tests.support.cli import iowitness
from tests.support.doc_tables import html_tables, markdown_tables

SIZE_LIMIT = 5 * 10**6
EVENTS = 1_000_000
CHARTS_AND_ROWS = """({
  charts: [...document.querySelectorAll("figure.chart")].map(f => {
    const r = f.getBoundingClientRect();
    return {name: f.dataset.chart, x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height};
  }),
  // a strip of page margin: blank on any page, so a blank chart would look like it
  controls: [{name: "margin", x: innerWidth - 24, y: 0, width: 20, height: 400}],
  phaseRows: document.querySelectorAll("table.phases tbody tr").length,
  width: document.documentElement.scrollWidth
})"""


def _bench():
    return script("report_10m")


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "synthetic-1m.iwt"
    written = _bench().build_trace(path, EVENTS, children=4, rounds=12)
    assert written >= 0.99 * EVENTS
    return path


@pytest.fixture(scope="module")
def big_report(big_trace):
    out = big_trace.with_suffix(".html")
    begin = time.perf_counter()
    iowitness("report", str(big_trace), "--html", str(out))
    seconds = time.perf_counter() - begin
    print(f"\n1M-event HTML report: {out.stat().st_size / 1e6:.2f} MB in {seconds:.1f} s")
    return out


def test_a_million_event_report_stays_under_5_mb_and_keeps_every_phase(big_report):
    # GIVEN the HTML report of a 1-million-event trace with 288 phases
    text = big_report.read_text()
    # THEN it is one file under 5 MB that fetches nothing (no script, no link, no remote URL)
    assert len(text.encode()) < SIZE_LIMIT
    assert not re.search(r"<script|<link|<img|<iframe|src=|url\((?!#)|@import", text, re.IGNORECASE)
    assert not re.search(r"https?://(?!www\.w3\.org/)", text)
    # AND every phase is in its table, while charts are drawn for a chosen few and it says so
    phases = next(t for t in html_tables(text) if t["class"] == "phases")
    assert len(phases["rows"]) - 1 == 288
    charted = re.search(r"Charts for (\d+) of 288 phases", text)
    assert charted and 0 < int(charted.group(1)) < 288
    assert text.count('data-chart="offset ') == int(charted.group(1))
    # AND big phases' per-call charts say they were binned, not sampled
    assert "data calls, binned into" in text
    # AND a trace without a device view says so where the device chart would be
    assert text.count("Device vs syscall bytes: no device data in this trace.") == int(charted.group(1))


def test_markdown_holds_the_same_tables_as_the_html(big_trace, big_report):
    # GIVEN the Markdown and the HTML report of the same trace
    markdown = iowitness("report", str(big_trace), "--markdown").stdout
    html_text = big_report.read_text()
    # THEN the phase table, the group table and the run table are cell for cell the same
    from_html = {t["class"]: t["rows"] for t in html_tables(html_text)}
    from_md = markdown_tables(markdown)
    assert from_html["phases"] in from_md
    assert from_html["metadata"] in from_md
    groups = next(t["rows"] for t in html_tables(html_text) if t["rows"][0][:2] == ["group", "name"])
    assert groups in from_md
    assert "<svg" not in markdown


def test_the_big_report_renders_in_chromium(big_report):
    # GIVEN real headless Chromium (skipped only when it cannot run here)
    page = browser.open_page(big_report, CHARTS_AND_ROWS)
    # THEN no console error, every phase row is in the DOM, and no chart is blank
    assert page.errors == []
    assert page.found["phaseRows"] == 288
    assert len(page.found["charts"]) >= 3
    assert browser.ink(page.found["controls"][0]["png"]) < 0.001   # the measure sees blank as blank
    for chart in page.found["charts"]:
        assert browser.ink(chart["png"]) > 0.01, chart["name"]



def test_an_unwritable_html_path_and_a_lone_trace_are_one_line_errors(big_trace, tmp_path):
    # GIVEN a report asked into a directory that does not exist
    bad = iowitness("report", str(big_trace), "--html", str(tmp_path / "missing" / "r.html"), check=False)
    # THEN it fails at once with one line and the output-error code, and writes nothing
    assert bad.returncode == 5 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == [f"iowitness: cannot write {tmp_path / 'missing' / 'r.html'}: "
                                               f"no such directory {tmp_path / 'missing'}; create it or "
                                               "choose another output path"]
    # AND compare with a single trace is a usage error
    lone = iowitness("compare", str(big_trace), check=False)
    assert lone.returncode == 2 and lone.stderr.strip() == "iowitness: compare needs two or more traces"


def test_a_page_asked_on_dash_goes_to_stdout(tmp_path):
    # GIVEN a small dd trace, its page written to a file
    from tests.support.trace_mutants import write_dd_trace

    trace = tmp_path / "dd.iwt"
    write_dd_trace(trace)
    iowitness("report", str(trace), "--html", str(tmp_path / "r.html"), cwd=tmp_path)
    # WHEN the page is asked on "-", as Unix tools read it
    printed = iowitness("report", str(trace), "--html", "-", cwd=tmp_path)
    # THEN it is the same page, on stdout, and no file named "-" was made
    assert printed.stdout == (tmp_path / "r.html").read_text() and printed.stdout.startswith("<!DOCTYPE html>")
    assert not (tmp_path / "-").exists()
    assert iowitness("compare", str(trace), str(trace), "--html", "-", cwd=tmp_path).stdout.startswith("<!DOCTYPE")
    assert not (tmp_path / "-").exists()


def test_markdown_cells_keep_pipes_and_backslashes():
    # GIVEN cells a Markdown table would break on: a pipe, a backslash, a newline
    import pandas as pd

    from iowitness.reporters import markdown

    frame = pd.DataFrame({"path": ["/data/a|b", "C:\\dir"], "note": ["two\nlines", "plain"], "ops": [1024, 7]})
    # WHEN it is written as Markdown and read back
    tables = markdown_tables(markdown.table(frame))
    # THEN every cell reads as it was (the newline shown as \n), numbers with thousands separators
    assert tables == [[["path", "note", "ops"], ["/data/a|b", "two\\nlines", "1,024"], ["C:\\dir", "plain", "7"]]]
