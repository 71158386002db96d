"""The report a person reads, on a real IOzone -a sweep: the sweep grid against IOzone's own
table, the terminal width, the pager, and the HTML's order and legends in headless Chromium;
and the in-call time of each open-to-close stretch against a program's own clock.

Ground truth is IOzone's own output (its table: a row per file size and record size, a kB/s
column per test), never iowitness. The sweep is small (files of 64 KiB to 1 MiB, records of
4 KiB up to the file size, six tests: 210 numbers) and takes about a second.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading

import pytest

from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support import browser
from tests.support.cli import IOWITNESS, iowitness
from tests.support.workload import build

TESTS = ["write", "rewrite", "read", "reread", "random read", "random write"]
TOLERANCE = 0.05     # iowitness's default: a cell without a mark is a claim that agreed within it


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A real traced IOzone -a sweep, and IOzone's own table: {(test, file kB, record kB): kB/s}."""
    iozone = require_tool("iozone")
    where = tmp_path_factory.mktemp("sweep")
    trace = where / "sweep.iwt"
    iowitness("run", "-q", "-o", str(trace), "--", iozone, "-a", "-n", "64k", "-g", "1m", "-y", "4k", "-q", "1m",
              "-i0", "-i1", "-i2", "-f", str(where / "iozone.tmp"))
    rows = [line.split() for line in load(trace).output["stdout"].splitlines()
            if re.fullmatch(r"\s*\d+(\s+\d+){2,}\s*", line)]
    printed = {(test, int(r[0]), int(r[1])): int(r[2 + i]) for r in rows for i, test in enumerate(TESTS)}
    assert len(printed) == 35 * len(TESTS)   # file sizes 64k..1m, records 4k..file size
    return trace, printed


@pytest.fixture(scope="module")
def texts(sweep):
    """The sweep's text report at 80 columns (the real command on a terminal that wide and taller
    than the report: printed, not paged), and at 200 and
    with every column (rendered in-process from the same claims: judging 210 claims is the
    slow part of a report, and is done once here); and its HTML report, from the same claims."""
    from iowitness.cli import build_parser
    from iowitness.commands import _claims
    from iowitness.reporters import text

    trace, _ = sweep
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = {80: _on_a_terminal(["report", str(trace)], 10_000, env, columns=80)}
    loaded = load(trace)
    report = loaded.report()
    verdicts, note = _claims.verdicts_for(loaded, build_parser().parse_args(["report", str(trace)]), required=False)
    for width in (200, None):
        out[width or "wide"] = (text.render(report, loaded, verdicts, width) + "\n\n"
                                + text.verdict_section(verdicts, note, width))
    from iowitness.reporters import html

    out["html"] = trace.with_suffix(".html")
    out["html"].write_text(html.render(report, loaded, verdicts, note))
    return out


def grids(text: str) -> dict[tuple[str, int, int], tuple[int | None, str]]:
    """The text report's sweep grids, cell by cell: {(test, file kB, record kB): (kB/s, mark)}.
    Columns are right-aligned under their record size, so a cell is read between the ends of
    two headers; a grid cut into column groups (a narrow terminal) repeats its test's name."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("sweep (IOzone -a"))
    out, test, ends, records = {}, None, None, []
    for line in lines[start + 1:]:
        if line.startswith("phases"):
            break
        if line.startswith("file kB"):
            ends = [m.end() for m in re.finditer(r"\S+", line)][1:]
            records = [int(x.replace(",", "")) for x in line.split()[2:]]
        elif ends and line.startswith(" "):
            size = int(line[:ends[0]].replace(",", ""))
            for record, lo, hi in zip(records, ends[:-1], ends[1:]):
                cell = line[lo:hi].strip()
                if cell:
                    mark = cell[-1] if cell[-1] in "!~?" else ""
                    value = cell.rstrip("!~?").replace(",", "")
                    out[(test, size, record)] = (int(value) if value != "-" else None, mark)
        elif line and not line.startswith(("mark", " ")):
            test, ends = line, None
    return out


def test_the_sweep_grid_is_iozones_own_table_with_the_active_figures(sweep, texts):
    # GIVEN a real IOzone -a sweep and the 210 kB/s figures IOzone printed
    _, printed = sweep
    # WHEN its text report is read at 80 columns (the grids cut into column groups)
    text = texts[80]
    grid = grids(text)
    # THEN the grids come before the phase table and hold a cell for every number IOzone
    # printed, at IOzone's own file size and record size, and no other
    assert text.index("sweep (IOzone -a") < text.index("\nphases")
    assert set(grid) == set(printed)
    # AND every cell the report marks as agreeing is within the tolerance of IOzone's own
    # figure for that cell (a grid shifted or transposed would not be), in IOzone's kB/s
    agreed = {k: v for k, (v, mark) in grid.items() if not mark}
    assert len(agreed) >= len(grid) // 2, grid
    for key, value in agreed.items():
        assert abs(printed[key] / value - 1) <= TOLERANCE + 0.001, (key, value, printed[key])
    # AND the same figures at 200 columns, where fewer column groups are needed
    assert grids(texts[200]) == grid


@pytest.mark.parametrize("columns", [80, 200])
def test_the_text_report_fits_the_terminal_and_wide_shows_all(texts, columns):
    # GIVEN the sweep's text report for a terminal of 80 or 200 columns
    text = texts[columns]
    # THEN no line is longer than the terminal
    assert max(len(line) for line in text.splitlines()) <= columns
    header = next(line for line in text.splitlines() if re.match(r"\s*#  name", line))
    if columns == 80:   # AND a table that left columns out says which, and how to see them
        assert "columns left out to fit 80 columns: tid, pid" in text and "--wide shows all" in text
        assert "user" not in header
    else:               # AND at 200 the phase table keeps every column (its notes wrap instead)
        assert header.split()[-1] == "notes" and "user" in header and "pid" in header
    # AND with every column, each table row is one line, however wide
    wide = texts["wide"]
    assert max(len(line) for line in wide.splitlines()) > 200
    header = next(line for line in wide.splitlines() if re.match(r"\s*#  name", line))
    assert header.split()[1:4] == ["name", "pattern", "file"] and header.split()[-1] == "notes"


def test_each_column_says_its_unit_once_and_each_claim_keeps_its_own(sweep, texts):
    # GIVEN the sweep's report with every column
    _, printed = sweep
    text = texts["wide"]
    lines = text.splitlines()
    # THEN the phase table's figures carry their unit in the header only
    at = lines.index(next(line for line in lines if re.match(r"\s*#  name", line)))
    header = lines[at].split("  ")
    for name in ("record", "bytes", "time", "wall", "busy", "p50", "p99", "max", "user"):
        assert any(re.fullmatch(rf"{name} (B|KiB|MiB|GiB|µs|ms|s|B/s|KiB/s|MiB/s|GiB/s)", h.strip())
                   for h in header), (name, lines[at])
    figures = slice(lines[at].index(" file") + 1, lines[at].index("notes"))   # file .. user: no units in cells
    for row in lines[at + 1:at + 40]:
        assert not re.search(r"\d ?(B|KiB|MiB|GiB|µs|ms|s)\b", row[figures]), row
    # AND no figure says two units ("32.2 ms µs")
    assert not re.search(r"\d (ns|µs|ms|s|B|KiB|MiB|GiB)(/s)? (µs|ms|s|KiB|MiB|GiB)\b", text)
    # AND each verdict gives IOzone's number in IOzone's unit, iowitness's conversion, what a kB is,
    # and the active figure in both
    verdicts = [line for line in lines if re.match(r"  (AGREES|EXPLAINED|DISAGREES|CANNOT JUDGE) ", line)]
    assert len(verdicts) == len(printed)
    first = printed[("write", 64, 4)]
    # (the conversion's unit follows the rate: a 64 KiB write is MiB/s or GiB/s by the machine's speed)
    assert f"claims {first:,} kB/s (= " in verdicts[0]
    assert re.search(r"[KMG]iB/s; kB = 1,024 B\)", verdicts[0]), verdicts[0]
    assert re.search(r"active [\d.]+ [KMG]iB/s = [\d,]+ kB/s", verdicts[0]), verdicts[0]


def _on_a_terminal(args: list[str], rows: int, env: dict, columns: int = 100) -> str:
    """Run the CLI with its stdout on a pseudo-terminal of `rows` × `columns`; what reached the
    screen (its lines ended by a newline as printed, not the terminal's carriage return too)."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen([*IOWITNESS, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE,
                            env=env)
    os.close(slave)
    screen = []

    def drain():   # a terminal that nobody reads fills up and stops the writer
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            screen.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        os.close(master)
        proc.stderr.close()
    return b"".join(screen).decode(errors="replace")


@pytest.fixture(scope="module")
def dd_trace(tmp_path_factory):
    """A real traced dd: a report of some 30 lines, quick to make."""
    where = tmp_path_factory.mktemp("dd")
    trace = where / "dd.iwt"
    iowitness("run", "-q", "-o", str(trace), "--", require_tool("dd"), "if=/dev/zero", f"of={where / 'out'}",
              "bs=64k", "count=64", "conv=fsync")
    return trace


def test_a_report_longer_than_the_screen_is_paged_on_a_terminal_never_when_piped(dd_trace, tmp_path):
    # GIVEN a real dd trace and a pager that records what it was given
    paged, less = tmp_path / "paged.txt", tmp_path / "less.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("LESS", "COLUMNS")}
    env["PAGER"] = f"printf '%s' \"$LESS\" > {less}; cat > {paged}"
    whole = iowitness("report", str(dd_trace), "--wide", env=env).stdout
    assert 12 < len(whole.splitlines()) < 1000
    # WHEN the report goes to a terminal of 10 rows
    screen = _on_a_terminal(["report", str(dd_trace)], 10, env)
    # THEN it went through the pager, whole, with LESS=FRX as git sets it, and not to the screen
    assert paged.read_text().startswith("trace ") and "claims vs active" in paged.read_text()
    assert less.read_text() == "FRX"
    assert "claims vs active" not in screen
    # AND each line the pager got fits the terminal's 100 columns
    assert max(len(line) for line in paged.read_text().splitlines()) <= 100
    paged.unlink()
    # WHEN the same report is piped, even with COLUMNS exported
    piped = iowitness("report", str(dd_trace), env={**env, "COLUMNS": "50"}).stdout
    # THEN no pager runs and the whole report is on stdout, as --wide (no terminal to fit)
    assert not paged.exists() and piped == whole
    # WHEN the terminal is taller than the report, or --no-pager is given
    for args, rows in ((["report", str(dd_trace)], 2000), (["report", str(dd_trace), "--no-pager"], 10)):
        screen = _on_a_terminal(args, rows, env)
        # THEN it is printed on the terminal and no pager runs
        assert not paged.exists() and "claims vs active" in screen, args


LAYOUT = """({
  sections: [...document.querySelectorAll("h2")].map(h => [h.id, h.getBoundingClientRect().top + scrollY]),
  verdictRows: document.querySelectorAll("table.verdicts tbody tr").length,
  figures: [...document.querySelectorAll("figure.chart")].map(f => {
    const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
    // matplotlib's SVG: a group per axes whose first patch is the plotting area, a group per legend
    return {name: f.dataset.chart,
            legends: [...f.querySelectorAll('svg g[id^="legend"]')].map(box),
            plots: [...f.querySelectorAll('svg g[id^="axes"]')].map(a => box(a.querySelector('g[id^="patch"]')))};
  })
})"""


def test_the_html_opens_with_the_verdicts_then_the_sweep_charts_legends_off_the_data(sweep, texts):
    # GIVEN the sweep's HTML report
    _, printed = sweep
    # WHEN it is opened in headless Chromium
    page = browser.open_page(texts["html"], LAYOUT)
    assert page.errors == [], page.errors
    found = page.found
    # THEN the page opens with the verdicts, then the sweep charts within the first screen,
    # the tables after them
    order = [name for name, _ in found["sections"]]
    assert order[:3] == ["verdicts", "sweep", "phases"], order
    top = dict(found["sections"])
    assert top["sweep"] < 900, top
    # AND the verdict table still holds a row per number IOzone printed
    assert found["verdictRows"] == len(printed)
    # AND a sweep chart per test, each with its legends, none of which covers a plot
    sweeps = [c for c in found["figures"] if c["name"].startswith("sweep ")]
    assert sorted(c["name"] for c in sweeps) == sorted(f"sweep {t}" for t in TESTS)
    with_legend = [c for c in found["figures"] if c["legends"]]
    assert len(with_legend) > len(sweeps)   # the timeline and per-phase charts too
    for chart in with_legend:
        for legend in chart["legends"]:
            for plot in chart["plots"]:
                overlap_x = min(legend[2], plot[2]) - max(legend[0], plot[0])
                overlap_y = min(legend[3], plot[3]) - max(legend[1], plot[1])
                assert overlap_x <= 1 or overlap_y <= 1, (chart["name"], legend, plot)


SECONDS_IN = {"µs": 1e-6, "ms": 1e-3, "s": 1.0}


def stretch_table(text: str) -> list[dict]:
    """The text report's stretches, each figure in seconds: [{"calls": 19, "in calls": 0.0389, ...}]."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("stretches ("))
    header = lines[at + 1]
    names = re.split(r"\s{2,}", header.strip())
    ends = [m.end() for m in re.finditer(r"\S+(?: \S+)*", header)]
    rows = []
    for line in lines[at + 2:]:
        if not line.strip():
            break
        row, start = {}, 0
        for name, end in zip(names, ends):
            cell = line[start:end].strip().replace(",", "")
            start = end
            unit = name.rsplit(" ", 1)[-1]
            if unit in SECONDS_IN:
                row[name.rsplit(" ", 1)[0]] = float(cell) * SECONDS_IN[unit] if cell else 0.0
            else:
                row[name] = cell
        rows.append(row)
    return rows


def test_each_stretch_shows_the_time_inside_its_calls_against_the_programs_own_clock(tmp_path):
    # GIVEN tests/workloads/timed_stretches.c: a file written (16 writes of 1 MiB, fsync) in one
    # open-to-close stretch and read back in another, every call timed by the program itself
    exe, trace = build("timed_stretches"), tmp_path / "ts.iwt"
    iowitness("run", "-q", "-o", str(trace), "--", str(exe), str(tmp_path / "data"), "16")
    own = [dict(zip(line.split()[2::2], map(int, line.split()[3::2])))
           for line in load(trace).output["stdout"].splitlines() if line.startswith("stretch ")]
    # WHEN its text report is read
    rows = stretch_table(iowitness("report", str(trace), "--wide").stdout)
    # THEN there is a row per stretch, with the calls the program made in it (open and close too)
    assert [int(r["calls"]) for r in rows] == [o["calls"] for o in own] == [19, 18]
    assert [r["phases"] for r in rows] == ["1", "2"]
    for row, truth in zip(rows, own):
        # AND the time inside its calls, by kind, is inside the program's own bracket of each
        # call (rounding: 3 digits). The bracket is an upper bound only: the program's clock also
        # holds the calls' entry and exit and, on a busy machine, the wait for a CPU after a call
        # returns, which is no time inside it and has no bound (5.5x the calls' time in one run
        # with two CPU hogs): below, calls of a kind the stretch made took some time, which is all
        # the program can say
        for name, key in (("in calls", "in_calls_ns"), ("writes", "writes_ns"), ("sync", "sync_ns"),
                          ("reads", "reads_ns"), ("open to close", "open_to_close_ns")):
            ours, theirs = row[name], truth[key] / 1e9
            assert ours <= theirs * 1.01 + 1e-5, (name, ours, theirs)
            assert ours > 0 or truth[key] == 0, (name, ours, theirs)
        # AND its kinds add up to its time in calls
        parts = row["reads"] + row["writes"] + row["sync"] + row["other"]
        assert parts == pytest.approx(row["in calls"], rel=0.01, abs=2e-5)
