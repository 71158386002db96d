"""`show --events` (always block by block) and `export TRACE --parquet FILE.parquet --stream`
against the loaded trace's lines and file, on real runs: the benchmarks' own files in no phase
(a fio job file and output), threads on one file, asynchronous requests, a group of processes.
Blocks of 251 events, so that every file, thread and phase crosses block boundaries."""

from __future__ import annotations

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

# each long enough (a rate, a time, IOzone's compute delay) for the collector's flushes, every
# 0.5 s, to make several chunks: a block is whole chunks
RUNS = {
    "iozone-throughput": lambda d: ["iozone", "-t", "2", "-i", "0", "-i", "1", "-s", "512k", "-r", "4k", "-J", "1",
                                    "-e", "-F", str(d / "f0"), str(d / "f1")],
    "fio-randrw-threads": lambda d: ["fio", "--name=mix", f"--directory={d}", "--rw=randrw", "--bs=4k",
                                     "--size=4m", "--numjobs=2", "--thread", "--ioengine=psync", "--rate_iops=3000",
                                     "--runtime=2", "--time_based"],
    "fio-libaio-direct": lambda d: ["fio", "--name=aio", f"--filename={d / 'a.bin'}", "--rw=randread", "--bs=4k",
                                    "--size=4m", "--ioengine=libaio", "--iodepth=16", "--direct=1",
                                    "--rate_iops=3000", "--runtime=2", "--time_based"],
    "fio-job-file": lambda d: ["fio", str(d / "two.fio"), "--output", str(d / "out.txt")],
}


def loaded_lines(trace, **filters) -> str:
    loaded = load(trace)
    return event_lines.HEADER + "\n" + "".join(
        line + "\n" for line in event_lines.lines(loaded, event_lines.select(loaded, **filters)))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_show_events_and_the_file_export_are_the_loaded_ones(name, tmp_path):
    require_tool(RUNS[name](tmp_path)[0])
    # GIVEN a real run of the benchmark on ext4, traced
    with loop_ext4(64) as (_, mnt):
        (mnt / "two.fio").write_text(f"[global]\ndirectory={mnt}\nsize=2m\nbs=8k\nrate_iops=2000\nruntime=2\n"
                                     "time_based\n[writer]\nrw=write\n[reader]\nrw=read\n")
        trace = tmp_path / "run.iwt"
        iowitness("run", "-q", "-o", str(trace), "--", *RUNS[name](mnt), cwd=mnt, timeout=600)
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
