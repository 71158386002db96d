"""The report read in blocks of 997 events against the same report read in blocks of a million
(for these runs: one block) on real runs, so that the block pipeline's state carried across
blocks is held to what one block gives: the same bytes in every form (CSV, JSON, Markdown,
text, the HTML page with its charts), the same `check` lines and exit code, and the same `export` dataset.

The runs are the shapes the phase rebuild has rules for: IOzone in throughput mode (a group of
processes per test, warm-up reads, fsync after the timed window), fio with a job file of two
jobs (its own files in no phase), fio libaio O_DIRECT at depth 16 (asynchronous phases, kernel
completion columns) and fio io_uring. Blocks of 997 events, so that every open file, thread and
phase crosses block boundaries many times. (dd and fio's threads on one file were cut from this
list for the suite's time: tests/unit/test_stream_full.py holds dd runs block by block, and
tests/kernel/test_show_export_stream_real.py streams the same fio threads.)
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import require_tool
from tests.support.blockdev import loop_ext4
from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel
BLOCK_ROWS = "997"


def _same_tables(trace) -> str:
    loaded = iowitness("report", str(trace), "--csv").stdout
    assert _streamed("report", str(trace), "--csv").stdout == loaded
    assert loaded.count("\n") > 1   # a header and at least one phase
    return loaded


def _streamed(*args, check=True):
    return iowitness(*args, "--stream", env={**os.environ, "IOWITNESS_STREAM_BLOCK_ROWS": BLOCK_ROWS}, check=check)


def _same_report(trace, tmp_path) -> dict:
    """Every form of the report, check and export, streamed and in memory: the same."""
    import json

    printed = {}
    for form in ("--json", "--markdown", "--no-pager"):
        printed[form] = iowitness("report", str(trace), form).stdout
        assert _streamed("report", str(trace), form).stdout == printed[form], form
    iowitness("report", str(trace), "--html", str(tmp_path / "loaded.html"))
    _streamed("report", str(trace), "--html", str(tmp_path / "streamed.html"))
    assert (tmp_path / "streamed.html").read_bytes() == (tmp_path / "loaded.html").read_bytes()
    checked = iowitness("check", str(trace), check=False)
    streamed = _streamed("check", str(trace), check=False)
    assert (streamed.returncode, streamed.stdout, streamed.stderr) == (checked.returncode, checked.stdout,
                                                                     checked.stderr)
    _same_dataset(trace, tmp_path)
    return json.loads(printed["--json"])


def _same_dataset(trace, tmp_path) -> None:
    import pyarrow.parquet as pq

    iowitness("export", str(trace), "--parquet", str(tmp_path / "loaded"))
    _streamed("export", str(trace), "--parquet", str(tmp_path / "streamed"))
    files = sorted(p.relative_to(tmp_path / "loaded") for p in (tmp_path / "loaded").rglob("*.parquet"))
    assert files == sorted(p.relative_to(tmp_path / "streamed") for p in (tmp_path / "streamed").rglob("*.parquet"))
    for name in files:
        assert pq.read_table(tmp_path / "streamed" / name).equals(pq.read_table(tmp_path / "loaded" / name)), name


RUNS = {
    "iozone-throughput": lambda d: ["iozone", "-t", "2", "-i", "0", "-i", "1", "-i", "2", "-s", "2m", "-r", "16k",
                                    "-e", "-F", str(d / "f0"), str(d / "f1")],
    "fio-libaio-direct": lambda d: ["fio", "--name=aio", f"--filename={d / 'a.bin'}", "--rw=randread", "--bs=4k",
                                    "--size=8m", "--ioengine=libaio", "--iodepth=16", "--direct=1"],
    "fio-io_uring": lambda d: ["fio", "--name=ur", f"--filename={d / 'u.bin'}", "--rw=randwrite", "--bs=4k",
                               "--size=4m", "--ioengine=io_uring", "--iodepth=8"],
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_streamed_phase_table_is_the_loaded_one(name, tmp_path):
    require_tool(RUNS[name](tmp_path)[0])
    # GIVEN a real run of the benchmark on ext4, traced
    with loop_ext4(96) as (_, mnt):
        trace = tmp_path / "run.iwt"
        iowitness("run", "-q", "-o", str(trace), "--", *RUNS[name](mnt), cwd=mnt, timeout=600)
    # WHEN its phase table, report, verdicts and dataset are made block by block, THEN they are
    # the in-memory ones, byte for byte
    _same_tables(trace)
    report = _same_report(trace, tmp_path)
    assert report["phases"]
    assert report["verdicts"]   # their output was captured: claims judged in both


def test_a_fio_job_file_of_two_jobs_streams_the_same_table(tmp_path):
    require_tool("fio")
    with loop_ext4(64) as (_, mnt):
        job = mnt / "two.fio"
        job.write_text(f"[global]\ndirectory={mnt}\nsize=2m\nbs=8k\n[writer]\nrw=write\n[reader]\nrw=read\n")
        trace = tmp_path / "job.iwt"
        iowitness("run", "-q", "-o", str(trace), "--", "fio", str(job), "--output", str(mnt / "out.txt"),
                  cwd=mnt, timeout=600)
    table = _same_tables(trace)
    # (fio's own job file and output are in no phase in either)
    assert "two.fio" not in table and "out.txt" not in table
    _same_report(trace, tmp_path)
