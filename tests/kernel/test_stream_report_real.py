"""`report --csv --stream` (the phase table built block by block, analysis/stream_report.py)
against `report --csv` (every event in memory) on real runs: the same bytes.

The runs are the shapes the phase rebuild has rules for: IOzone in throughput mode (a group of
processes per test, warm-up reads, fsync after the timed window), fio with a job file of two
jobs (its own files in no phase) and a mixed random read/write thread, fio libaio O_DIRECT at
depth 16 (asynchronous phases, kernel completion columns), fio io_uring, and dd. Blocks of 997
events, so that every open file, thread and phase crosses block boundaries many times.
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
    streamed = iowitness("report", str(trace), "--csv", "--stream",
                         env={**os.environ, "IOWITNESS_STREAM_BLOCK_ROWS": BLOCK_ROWS}).stdout
    assert streamed == loaded
    assert loaded.count("\n") > 1   # a header and at least one phase
    return loaded


RUNS = {
    "iozone-throughput": lambda d: ["iozone", "-t", "2", "-i", "0", "-i", "1", "-i", "2", "-s", "2m", "-r", "16k",
                                    "-e", "-F", str(d / "f0"), str(d / "f1")],
    "fio-randrw-threads": lambda d: ["fio", "--name=mix", f"--directory={d}", "--rw=randrw", "--bs=4k",
                                     "--size=4m", "--numjobs=2", "--thread", "--ioengine=psync"],
    "fio-libaio-direct": lambda d: ["fio", "--name=aio", f"--filename={d / 'a.bin'}", "--rw=randread", "--bs=4k",
                                    "--size=8m", "--ioengine=libaio", "--iodepth=16", "--direct=1"],
    "fio-io_uring": lambda d: ["fio", "--name=ur", f"--filename={d / 'u.bin'}", "--rw=randwrite", "--bs=4k",
                               "--size=4m", "--ioengine=io_uring", "--iodepth=8"],
    "dd": lambda d: ["dd", "if=/dev/zero", f"of={d / 'dd.bin'}", "bs=64k", "count=300", "conv=fsync"],
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_streamed_phase_table_is_the_loaded_one(name, tmp_path):
    require_tool(RUNS[name](tmp_path)[0])
    # GIVEN a real run of the benchmark on ext4, traced
    with loop_ext4(96) as (_, mnt):
        trace = tmp_path / "run.iwt"
        iowitness("run", "-q", "-o", str(trace), "--", *RUNS[name](mnt), cwd=mnt, timeout=600)
    # WHEN its phase table is made block by block, THEN it is the in-memory one, byte for byte
    _same_tables(trace)


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
