"""`report` in every form, `check` and `export` (analysis/measure/stream_full.py) read in small blocks
against the same commands reading the trace in one block, on traces written by the collector's own
TraceWriter: an IOzone-shaped run of four children, dd runs whose printed rate is true or not,
a run on files with hostile names, a --summary trace. Real runs:
tests/kernel/test_stream_report_real.py."""

from __future__ import annotations

import json
import os

import pytest

from tests.support import sweep
from tests.support.bench import script
from tests.support.cli import iowitness
from tests.support.hostile import write_hostile_trace
from tests.support.trace_mutants import write_dd_trace, write_summary_trace

# the block size of the side read in small blocks: 997 rows cut the IOzone-shaped trace (30,000
# events) only; the others (18 to 203 events) are one block at 997 rows, the default's one block
# again, so they are cut in blocks of 7
ROWS = {"iozone": 997}
SMALL = 7
FORMS = (["--json"], ["--markdown"], ["--no-pager"], ["--csv"])


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    folder = tmp_path_factory.mktemp("full")
    made = {"iozone": folder / "iozone.iwt", "dd": folder / "dd.iwt", "hostile": folder / "hostile.iwt"}
    script("report_10m").build_trace(made["iozone"], 30_000, 4, 2)
    write_dd_trace(made["dd"])
    write_hostile_trace(made["hostile"])
    for run in sweep.plan(4):
        made[f"sweep{run.number}"] = folder / f"sweep{run.number}.iwt"
        sweep.write(run, made[f"sweep{run.number}"])
    return made


def streamed(*args, rows: int, check=True):
    """The command reading the trace(s) in blocks of `rows` (the other side: the default, one block)."""
    return iowitness(*args, env={**os.environ, "IOWITNESS_STREAM_BLOCK_ROWS": str(rows)}, check=check)


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f[0])
def test_every_form_is_the_same_bytes(traces, form):
    for name, trace in traces.items():
        loaded = iowitness("report", str(trace), *form)
        assert streamed("report", str(trace), *form, rows=ROWS.get(name, SMALL)).stdout == loaded.stdout, name
        assert loaded.stdout.strip()


def test_the_html_page_is_the_same_bytes(traces, tmp_path):
    # GIVEN every trace of the module (phases of one call to thousands, hostile names, sweeps)
    for name, trace in traces.items():
        # WHEN its page is made with every event in memory and block by block
        iowitness("report", str(trace), "--html", str(tmp_path / f"{name}.loaded.html"))
        streamed("report", str(trace), "--html", str(tmp_path / f"{name}.streamed.html"), rows=ROWS.get(name, SMALL))
        # THEN the pages are the same bytes, charts and all
        page = (tmp_path / f"{name}.loaded.html").read_bytes()
        assert (tmp_path / f"{name}.streamed.html").read_bytes() == page, name
        assert b"<svg" in page


def test_check_says_the_same_and_exits_the_same(traces):
    # GIVEN dd runs whose printed rate is true for some and false for others
    codes = set()
    for name, trace in traces.items():
        if not name.startswith(("sweep", "dd")):
            continue
        loaded = iowitness("check", str(trace), check=False)
        got = streamed("check", str(trace), rows=SMALL, check=False)
        assert (got.returncode, got.stdout, got.stderr) == (loaded.returncode, loaded.stdout, loaded.stderr), name
        codes.add(loaded.returncode)
    # THEN both exit codes were seen, the same way each time
    assert codes == {0, 1}


def test_export_writes_the_same_dataset(traces, tmp_path):
    import pyarrow.parquet as pq

    runs = [str(traces[n]) for n in sorted(traces) if n.startswith("sweep")] + [str(traces["iozone"])]
    iowitness("export", "--parquet", str(tmp_path / "loaded"), *runs)
    said = streamed("export", "--parquet", str(tmp_path / "streamed"), *runs, rows=ROWS["iozone"]).stdout
    assert "5 run(s)" in said
    files = sorted(p.relative_to(tmp_path / "loaded") for p in (tmp_path / "loaded").rglob("*.parquet"))
    assert files == sorted(p.relative_to(tmp_path / "streamed") for p in (tmp_path / "streamed").rglob("*.parquet"))
    assert any(f.parts[0] == "events" for f in files)
    for name in files:
        assert pq.read_table(tmp_path / "streamed" / name).equals(pq.read_table(tmp_path / "loaded" / name)), name


def test_a_summary_trace_is_reported_from_its_aggregates(tmp_path):
    # GIVEN a --summary trace (no events: blocks do not enter into it, so one reading is enough;
    # it was read with and without --stream, which does nothing now)
    path = tmp_path / "summary.iwt"
    write_summary_trace(path)
    # WHEN reported, THEN the report is the aggregates' and says so
    report = json.loads(iowitness("report", str(path), "--json").stdout)
    assert report["mode"] == "summary", report
    assert iowitness("report", str(path), "--markdown").stdout.strip()


def test_no_room_for_temporary_files_is_an_output_error(traces, monkeypatch):
    # GIVEN a temporary directory whose file system is full (posix_fallocate: ENOSPC)
    import errno

    from iowitness.analysis.measure import stream_full
    from iowitness.analysis.phasing import stream_walk
    from iowitness.errors import OutputError

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(stream_walk.os, "posix_fallocate", full)
    # WHEN the report is built block by block (when first asked for), THEN the error says where
    # and what to do
    with pytest.raises(OutputError, match="No space left on device.*TMPDIR"):
        with stream_full.open_report(traces["dd"]) as trace:
            trace.report()


def test_compare_gives_the_same_page(traces, tmp_path):
    # GIVEN runs of a sweep and runs of other benchmarks, compared on one page
    runs = [str(traces[n]) for n in sorted(traces) if n != "hostile"]
    iowitness("compare", *runs, "--html", str(tmp_path / "loaded.html"))
    streamed("compare", *runs, "--html", str(tmp_path / "streamed.html"), rows=ROWS["iozone"])
    # THEN the overlaid timelines and latency curves are the same bytes
    page = (tmp_path / "loaded.html").read_bytes()
    assert (tmp_path / "streamed.html").read_bytes() == page and page.count(b"<svg") > 2


@pytest.mark.parametrize("form", [["--json"], ["--markdown"], []], ids=["json", "markdown", "text"])
def test_compare_gives_the_same_tables_and_gate(traces, form):
    runs = [str(traces[n]) for n in sorted(traces) if n.startswith("sweep")]
    gate = ["--fail-if", "wall<-5%", "--fail-if", "p99>+10%"]
    loaded = iowitness("compare", *runs, *form, *gate, check=False)
    got = streamed("compare", *runs, *form, *gate, rows=SMALL, check=False)
    assert (got.returncode, got.stdout, got.stderr) == (loaded.returncode, loaded.stdout, loaded.stderr)
    assert loaded.stdout.strip()


def test_the_report_is_built_only_when_asked_for(traces, monkeypatch):
    # GIVEN the phases' rebuild made to fail if it runs
    from iowitness.analysis.measure import stream_full
    from iowitness.analysis.phasing import stream_assign

    def refused(*args, **kwargs):
        raise AssertionError("the blocks were read")
    monkeypatch.setattr(stream_assign, "assign", refused)
    # WHEN a trace is opened and only its meta read (a check whose trace holds no claim)
    with stream_full.open_report(traces["dd"]) as trace:
        command = trace.meta.get("command")
        # THEN no block was read for it; asking for the report builds it then
        with pytest.raises(AssertionError, match="the blocks were read"):
            trace.report()
    assert command and command[0] == "dd"
