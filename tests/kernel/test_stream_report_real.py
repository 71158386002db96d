"""Block by block against one block, on real runs: `show --events` (always block by block),
`export TRACE --parquet FILE.parquet --stream`, and the report in every form that carries
state across blocks (the phase table, the JSON report with its verdicts, the HTML page with its
charts, `check`, the `export` dataset), read in small blocks against the same read in blocks of
a million (for these runs: one block). The runs are the shapes the phase rebuild has rules for:
IOzone in throughput mode (a group of processes per test, warm-up reads, fsync after the timed
window), fio with a job file of two jobs (its own job file and output in no phase), fio's threads
on one file (show and export), fio libaio O_DIRECT (asynchronous phases, kernel completion
columns) and fio io_uring (the report). Each run is recorded once (a module fixture) and checked
both ways.

(The text and Markdown reports are not compared here: they format the Report the JSON carries,
and tests/unit/test_stream_full.py holds every form block by block, byte for byte.)"""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest

from iowitness.analysis.read import event_lines, stream_events
from iowitness.analysis.read.run import export_parquet, load
from tests.conftest import require_tool
from tests.support.blockdev import loop_ext4
from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel
BLOCK_ROWS = 251
SMALL_BLOCKS = {**os.environ, "IOWITNESS_STREAM_BLOCK_ROWS": str(BLOCK_ROWS)}
REPORT_BLOCKS = {**os.environ, "IOWITNESS_STREAM_BLOCK_ROWS": "997"}

# each long enough (a rate, a time, IOzone's compute delay) for the collector's flushes, every
# 0.5 s, to make several chunks: a block is whole chunks
RUNS = {
    "iozone-throughput": lambda d: ["iozone", "-t", "2", "-i", "0", "-i", "1", "-i", "2", "-s", "512k", "-r", "4k",
                                    "-J", "1", "-e", "-F", str(d / "f0"), str(d / "f1")],
    "fio-randrw-threads": lambda d: ["fio", "--name=mix", f"--directory={d}", "--rw=randrw", "--bs=4k",
                                     "--size=4m", "--numjobs=2", "--thread", "--ioengine=psync", "--rate_iops=3000",
                                     "--runtime=2", "--time_based"],
    "fio-libaio-direct": lambda d: ["fio", "--name=aio", f"--filename={d / 'a.bin'}", "--rw=randread", "--bs=4k",
                                    "--size=4m", "--ioengine=libaio", "--iodepth=16", "--direct=1",
                                    "--rate_iops=3000", "--runtime=2", "--time_based"],
    "fio-io_uring": lambda d: ["fio", "--name=ur", f"--filename={d / 'u.bin'}", "--rw=randwrite", "--bs=4k",
                               "--size=4m", "--ioengine=io_uring", "--iodepth=8", "--rate_iops=3000", "--runtime=2",
                               "--time_based"],
    "fio-job-file": lambda d: ["fio", str(d / "two.fio"), "--output", str(d / "out.txt")],
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """name -> the trace of that real run on ext4 (each run made once, for every test here)."""
    traces = {}

    def record(name: str):
        if name not in traces:
            where = tmp_path_factory.mktemp(name)
            require_tool(RUNS[name](where)[0])
            with loop_ext4(64) as (_, mnt):
                (mnt / "two.fio").write_text(f"[global]\ndirectory={mnt}\nsize=2m\nbs=8k\nrate_iops=2000\n"
                                             "runtime=2\ntime_based\n[writer]\nrw=write\n[reader]\nrw=read\n")
                trace = where / "run.iwt"
                iowitness("run", "-q", "-o", str(trace), "--", *RUNS[name](mnt), cwd=mnt, timeout=600)
            traces[name] = trace
        return traces[name]
    return record


def loaded_lines(trace, **filters) -> str:
    loaded = load(trace)
    return event_lines.HEADER + "\n" + "".join(
        line + "\n" for line in event_lines.lines(loaded, event_lines.select(loaded, **filters)))


@pytest.mark.parametrize("name", sorted(set(RUNS) - {"fio-io_uring"}))   # (its calls are uring_*: the report's)
def test_show_events_and_the_file_export_are_the_loaded_ones(name, recorded, tmp_path):
    # GIVEN a real run of the benchmark on ext4, traced
    trace = recorded(name)
    # WHEN show --events prints it, all of it and one phase's reads and writes, block by block
    # THEN the lines are the loaded trace's, byte for byte
    shown = iowitness("show", "--events", str(trace), env=SMALL_BLOCKS).stdout
    assert shown == loaded_lines(trace)
    one = iowitness("show", "--events", "--phase", "1", "-e", "read,write,pread64,pwrite64,aio_read",
                    str(trace), env=SMALL_BLOCKS).stdout
    assert one == loaded_lines(trace, phases=[1], syscalls=["read", "write", "pread64", "pwrite64", "aio_read"])
    assert shown.count("\n") > 100 and one.count("\n") > 1
    if name == "fio-job-file":   # (fio's own job file is in no phase in either)
        own = [line.split()[-2] for line in shown.splitlines() if line.endswith("/two.fio")]
        assert own and set(own) == {"-"}
    # WHEN the events are exported to one file block by block, THEN it reads back as the loaded one's
    export_parquet(load(trace), tmp_path / "loaded.parquet")
    iowitness("export", str(trace), "--parquet", str(tmp_path / "streamed.parquet"), "--stream", env=SMALL_BLOCKS)
    streamed = pq.ParquetFile(tmp_path / "streamed.parquet")
    with stream_events.open_events(trace, block_rows=BLOCK_ROWS) as source:
        blocks = sum(1 for _ in source.blocks())
    assert streamed.num_row_groups == blocks > 1   # a row group per block
    assert streamed.read().equals(pq.read_table(tmp_path / "loaded.parquet"), check_metadata=True)


def _streamed(*args, check=True):
    return iowitness(*args, env=REPORT_BLOCKS, check=check)


@pytest.mark.parametrize("name", sorted(set(RUNS) - {"fio-randrw-threads"}))
def test_the_report_in_blocks_is_the_report_in_one(name, recorded, tmp_path):
    # GIVEN a real run of the benchmark on ext4, traced
    trace = str(recorded(name))
    # WHEN its phase table, JSON report (verdicts included), HTML page, check and dataset are made
    # in blocks of 997 events, THEN they are the ones made in one block, byte for byte
    table = iowitness("report", trace, "--csv").stdout
    assert _streamed("report", trace, "--csv").stdout == table
    assert table.count("\n") > 1   # a header and at least one phase
    printed = iowitness("report", trace, "--json").stdout
    assert _streamed("report", trace, "--json").stdout == printed
    iowitness("report", trace, "--html", str(tmp_path / "loaded.html"))
    _streamed("report", trace, "--html", str(tmp_path / "streamed.html"))
    assert (tmp_path / "streamed.html").read_bytes() == (tmp_path / "loaded.html").read_bytes()
    checked = iowitness("check", trace, check=False)
    streamed = _streamed("check", trace, check=False)
    assert (streamed.returncode, streamed.stdout, streamed.stderr) == (checked.returncode, checked.stdout,
                                                                     checked.stderr)
    iowitness("export", trace, "--parquet", str(tmp_path / "loaded"))
    _streamed("export", trace, "--parquet", str(tmp_path / "streamed"))
    files = sorted(p.relative_to(tmp_path / "loaded") for p in (tmp_path / "loaded").rglob("*.parquet"))
    assert files == sorted(p.relative_to(tmp_path / "streamed") for p in (tmp_path / "streamed").rglob("*.parquet"))
    for part in files:
        assert pq.read_table(tmp_path / "streamed" / part).equals(pq.read_table(tmp_path / "loaded" / part)), part
    report = json.loads(printed)
    assert report["phases"]
    if name == "fio-job-file":   # (fio's own job file and output are in no phase in either)
        assert "two.fio" not in table and "out.txt" not in table
    else:
        assert report["verdicts"]   # their output was captured: claims judged in both
