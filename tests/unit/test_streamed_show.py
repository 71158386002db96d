"""`show` streamed (analysis/read/streamed.py) against `show` of the loaded trace (summary.py's tables).

The reference is the in-memory path: reporters/summary.render on a loaded trace,
whose tables are pandas group-bys over every event. The streamed path makes the same tables
from aggregates, block by block; blocks are forced small (one chunk of a few calls) so that
every syscall, file and process crosses many block boundaries. The text must be identical.
"""

from pathlib import Path

import numpy as np

from iowitness.analysis.read import streamed
from iowitness.analysis.read.run import load
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.probes.layout import layout
from iowitness.reporters import summary
from tests.support import trace_mutants
from tests.support.bench import script
from tests.support.cli import iowitness
from tests.support.synthetic import (
    DEV,
    EIO,
    O_CREAT,
    O_RDONLY,
    O_WRONLY,
    Calls,
    event_records,
)

ROOT = Path(__file__).resolve().parents[2]


def same_show(path, block_rows=1):
    with streamed.open_trace(path, block_rows=block_rows) as trace:
        text = summary.render(trace)
    assert text == summary.render(load(path))
    return text


records_of = event_records


def write_interleaved(path: Path) -> None:
    """Two processes (one with two threads) on two files, a failed read and short reads, two
    syscalls tied in calls, the records written out of time order (as two CPUs' batches arrive), a FILE fact per file."""
    calls = Calls(tgid=100).open("/data/a", O_WRONLY | O_CREAT)
    for _ in range(40):
        calls.write(4096, latency=int(np.random.default_rng(len(calls.rows)).integers(500, 90_000)))
    calls.process(200).at(calls.now - 100_000).open("/data/b", O_RDONLY, size=50_000)
    for k in range(30):
        calls.read(4096, ret=-EIO if k == 7 else (1000 if k % 9 == 0 else None), latency=1000 + 37 * k)
    calls.thread(201)
    for k in range(25):
        calls.pread(8192, 8192 * k, latency=2000 + 11 * k)
    # close (by 200) comes before fsync (by 100) and both end with 2 calls: a tie that the
    # tables order by first appearance in time, not by syscall number (fsync's is lower)
    calls.process(200).close()
    frame = calls.process(100).fsync(latency=700_000).fsync().close().frame()
    records = records_of(frame)
    lay = layout()
    facts = np.zeros(2, lay.meta)
    facts["kind"] = [k for k, n in lay.names("iow_meta_kind", "IOW_META_").items() if n == "file"][0]
    facts["dev"], facts["tgid"] = DEV, [100, 200]
    facts["ino"] = [int(frame.loc[frame["tgid"] == t, "ino"].iloc[0]) for t in (100, 200)]
    facts["ts_ns"] = [int(records["start_ns"].min())] * 2
    for i, name in enumerate(("/data/a", "/data/b")):
        facts["path"][i] = trace_mutants._text(name, facts["path"].shape[1])
    start = {"mode": "run", "command": ["bench"], "host": "unit", "kernel": "Linux", "targets": [],
             "clock_start": {"monotonic_ns": int(records["start_ns"].min()) - 10, "realtime_ns": 0, "offset_ns": 0}}
    halves = np.array_split(np.arange(len(records)), 6)
    with TraceWriter(path, start) as writer:
        writer.write_facts(facts)
        for part in halves[3:] + halves[:3]:       # later calls first: the reader must sort
            writer.write_events(records[part])
            writer.flush()
        writer.close({"exit_code": 0})


def test_show_of_a_full_trace_streams_identically(tmp_path):
    # GIVEN the fuzzer's dd trace (facts, output, device view, samples) and a --summary trace
    trace_mutants.write_bases(tmp_path)
    for name in ("dd", "summary"):
        # WHEN show is made streamed, one chunk per block, and loaded
        # THEN the two texts are the same
        same_show(tmp_path / f"{name}.iwt")


def test_show_of_interleaved_records_streams_identically(tmp_path):
    # GIVEN records written out of time order, by two processes and three threads on two files
    path = tmp_path / "interleaved.iwt"
    write_interleaved(path)
    # WHEN show is made streamed (blocks of 1 and of 7 calls) and loaded
    for rows in (1, 7):
        text = same_show(path, rows)
    # THEN the texts are the same, and they show what was written: 2 files, the failed read
    assert "/data/a" in text and "/data/b" in text
    assert any(line.split()[:3] == ["read", "30", "1"] for line in text.splitlines())
    rows = [line.split()[0] for line in text.splitlines() if line.split()[:1] in (["close"], ["fsync"])]
    assert rows == ["close", "fsync"]


def test_show_of_an_iozone_shaped_trace_streams_identically(tmp_path):
    # GIVEN an IOzone-shaped trace of 60 000 calls (report_10m's writer: 4 processes, 6 tests)
    module = script("report_10m")
    path = tmp_path / "iozone.iwt"
    module.build_trace(path, 60_000, children=4, rounds=1)
    # WHEN show is made streamed in blocks of 5 000 calls, and loaded
    # THEN the texts are the same (percentiles included, to the digit shown)
    same_show(path, 5000)


def test_show_command_streams(tmp_path):
    # GIVEN the interleaved trace
    path = tmp_path / "interleaved.iwt"
    write_interleaved(path)
    # WHEN `iowitness show` runs on it
    result = iowitness("show", str(path))
    # THEN it prints the loaded trace's text
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip("\n") == summary.render(load(path)).rstrip("\n")
