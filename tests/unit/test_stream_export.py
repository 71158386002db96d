"""The events table of a dataset written block by block (analysis/runs/dataset.py events_blocks and
write_run given an iterable) is the file the in-memory frame makes: the same rows
(events_rows over blocks of 1, 37 and 1000 rows against events_table, bit for bit) and the same
Parquet file read back (schema, key-value metadata, values), on traces written by the
collector's own TraceWriter; DuckDB reads it."""

from __future__ import annotations

import random
import stat

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from iowitness.analysis.phasing import stream_assign
from iowitness.analysis.read import stream_events
from iowitness.analysis.read.run import load
from iowitness.analysis.runs import dataset
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.probes.layout import layout
from tests.support.bench import script
from tests.support.blocks import assigned_of, cutting
from tests.support.synthetic import (
    DEV,
    O_CREAT,
    O_RDWR,
    O_TRUNC,
    O_WRONLY,
    Calls,
    event_records,
)
from tests.support.trace_mutants import write_dd_trace
from tests.unit.test_stream_table import random_trace

BLOCKS = (1, 37, 1000)
MODE = 0o640
OTHER_DEV = (8 << 20) | 17       # 8:17, a device the trace's metadata gives no file system


class Blocks:
    """(events, assigned) sliced with .iloc: what stream_assign gives, for the test. shuffled:
    each block's categories made anew, in another order, as blocks read apart can have them."""

    def __init__(self, events: pd.DataFrame, assigned: pd.DataFrame, rows: int, shuffled: bool = False):
        self.events, self.assigned, self.rows, self.shuffled = events, assigned, rows, shuffled

    def blocks(self):
        for at in range(0, len(self.events), self.rows):
            events, assigned = self.events.iloc[at:at + self.rows], self.assigned.iloc[at:at + self.rows]
            if self.shuffled:
                events, assigned = _own_categories(events), _own_categories(assigned)
            yield events, assigned


def _own_categories(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for name, column in frame.items():
        if isinstance(column.dtype, pd.CategoricalDtype):
            values = column.astype(object)
            frame[name] = pd.Categorical(values, categories=sorted(set(values.dropna()), reverse=True))
    return frame


def _text(value: str, size: int) -> np.ndarray:
    out = np.zeros(size, np.uint8)
    raw = value.encode()[:size - 1]
    out[:len(raw)] = np.frombuffer(raw, np.uint8)
    return out


def write_trace(path, frame: pd.DataFrame, *, clock: bool = True, host: str = "node-a") -> None:
    """A Calls frame as the collector writes a trace: one file fact per file, the file system
    of device DEV only (calls on another device have none), the clock offset or none."""
    lay = layout()
    events = event_records(frame)
    first = int(events["start_ns"][0]) if len(events) else 10**9
    files = frame[["path", "dev", "ino"]].drop_duplicates("path") if len(frame) else frame.iloc[:0]
    start = {"mode": "run", "command": ["writer", "/data/f"], "cwd": "/data", "host": host, "kernel": "Linux 6.18",
             "targets": [], "summary_mode": False}
    if clock:
        start["clock_start"] = {"monotonic_ns": first - 10**6, "realtime_ns": 1_790_000_000 * 10**9,
                                "offset_ns": 1_790_000_000 * 10**9 - (first - 10**6)}
    facts = np.zeros(len(files), lay.meta)
    facts["kind"] = [k for k, n in lay.names("iow_meta_kind", "IOW_META_").items() if n == "file"]
    facts["ts_ns"], facts["tgid"] = first, 1000
    facts["dev"], facts["ino"] = files["dev"].to_numpy(), files["ino"].to_numpy()
    facts["comm"] = _text("writer", facts["comm"].shape[1])
    for k, name in enumerate(files["path"]):
        facts["path"][k] = _text(name, 256)
    counters = {"events": len(events), "facts": len(files), "lost_events": 0, "lost_meta": 0}
    with TraceWriter(path, start) as writer:
        writer.write_facts(facts)
        writer.write_events(events)
        writer.write_counters(counters)
        writer.close({"stop_reason": "the command exited", "exit_code": 0, "pid": 1000, "counters": counters,
                      "files": [{"dev": DEV, "ino": int(ino), "path": name, "device": "8:1", "fs_type": "xfs",
                                 "mount_point": "/data"} for name, ino in zip(files["path"], files["ino"])]})


def written(root, trace, events) -> pq.ParquetFile:
    """Write `events` (a frame or blocks) as the events table of `trace`'s run under `root`: the file."""
    rid = dataset.run_id(trace.meta)
    paths = dataset.write_run(str(root), rid, "other", {"events": events}, MODE)
    assert paths == [str(root / "events" / "benchmark=other" / f"{rid}.parquet")]
    assert stat.S_IMODE((root / "events" / "benchmark=other" / f"{rid}.parquet").stat().st_mode) == MODE
    return pq.ParquetFile(paths[0])


def same_files(path, tmp_path, sizes=BLOCKS, shuffled: bool = False) -> pd.DataFrame:
    """GIVEN the trace at `path`, WHEN its events table is written in memory and streamed in
    blocks of each size, THEN the rows and the files are the same; the in-memory table."""
    trace = load(path)
    report = trace.report()
    _, _, frames = dataset.tables_of(trace, report, [])
    expected = pd.concat(list(frames["events"]))
    whole = written(tmp_path / "memory", trace, expected).read()
    assert whole.schema.metadata == {b"iowitness_dataset": dataset.json.dumps(
        {"schema_version": dataset.SCHEMA_VERSION, "table": "events", "run_id": dataset.run_id(trace.meta)}).encode()}
    for rows in cutting(sizes, len(expected)):
        pairs = Blocks(trace.events, assigned_of(report), rows, shuffled)
        # the rows: each block's are the in-memory table's, index included
        got = pd.concat(list(dataset.events_blocks(pairs.blocks(), trace.meta)))
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
        # the file: a row group per block, read back as the in-memory one
        streamed = written(tmp_path / f"blocks{rows}", trace, dataset.events_blocks(pairs.blocks(), trace.meta))
        assert streamed.metadata.num_row_groups == -(-len(expected) // rows)
        table = streamed.read()
        assert table.schema.equals(whole.schema, check_metadata=True)
        assert table.equals(whole, check_metadata=True)
    return expected


@pytest.fixture(scope="module")
def iozone_trace(tmp_path_factory):
    """An IOzone-shaped trace (iozone -t 4 -i0 -i1 -i2, three rounds) of 6,000 events."""
    path = tmp_path_factory.mktemp("export") / "iozone.iwt"
    script("report_10m").build_trace(path, 6_000, 4, 3)
    return path


# the cases

def test_a_dd_trace_with_its_file_system_and_wall_clock(tmp_path):
    path = tmp_path / "dd.iwt"
    write_dd_trace(path)
    table = same_files(path, tmp_path)
    assert set(table["fs_type"].dropna()) == {"ext4"} and table["start_wall_ns"].notna().all()


def test_an_iozone_shaped_trace(iozone_trace, tmp_path):
    table = same_files(iozone_trace, tmp_path, sizes=(37, 1000))
    assert len(table) >= 5000 and (table["phase"] > 0).sum() > 0


def test_blocks_whose_categories_differ_give_the_same_file(iozone_trace, tmp_path):
    # GIVEN blocks whose syscall, path and operation categories are each block's own, reversed
    same_files(iozone_trace, tmp_path, sizes=(37,), shuffled=True)


def test_no_clock_and_calls_on_a_device_without_file_system(tmp_path):
    # GIVEN a trace without the wall clock (its columns are nulls), some calls on a device whose
    # file system the metadata does not give (fs_type null in some blocks, all of others)
    calls = Calls().open("/data/f", O_RDWR | O_CREAT)
    for i in range(120):
        calls.pwrite(4096, i * 4096)
    frame = calls.close().open("/data/g", O_WRONLY | O_CREAT | O_TRUNC).write(100).close().frame()
    frame.loc[frame.index[60:], "dev"] = OTHER_DEV
    path = tmp_path / "t.iwt"
    write_trace(path, frame, clock=False)
    table = same_files(path, tmp_path)
    assert table["start_wall_ns"].isna().all() and table["fs_type"].isna().sum() == len(table) - 60


def test_a_trace_without_events_is_a_file_without_rows_both_ways(tmp_path):
    # GIVEN a trace without events, read in memory and streamed (one empty block)
    path = tmp_path / "empty.iwt"
    write_trace(path, Calls().frame())
    trace = load(path)
    whole = written(tmp_path / "memory", trace, dataset.tables_of(trace, trace.report(), [])[2]["events"]).read()
    with stream_events.open_events(path) as source, stream_assign.assign(source) as assigned:
        streamed = written(tmp_path / "streamed", trace, dataset.events_blocks(assigned.blocks(), source.meta))
    # THEN both files hold no row, in the same schema
    assert streamed.read().equals(whole, check_metadata=True) and whole.num_rows == 0
    # AND blocks that give nothing at all (nothing to take a schema from) leave the table out
    assert dataset.write_run(str(tmp_path / "none"), "r", "other", {"events": iter(())}, MODE) == []


def test_the_real_stream_writes_the_same_file_and_duckdb_reads_it(iozone_trace, tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="duckdb is in the test extra: pip install -e '.[test]'")
    # GIVEN the trace's events read block by block from the file and their phases rebuilt
    trace = load(iozone_trace)
    whole = written(tmp_path / "memory", trace, dataset.tables_of(trace, trace.report(), [])[2]["events"]).read()
    with stream_events.open_events(iozone_trace, block_rows=997) as source, \
            stream_assign.assign(source, None) as assigned:
        streamed = written(tmp_path / "streamed", trace, dataset.events_blocks(assigned.blocks(), source.meta))
    # THEN the file is the in-memory one (report_10m's trace: no own files, so no `outside`)
    assert streamed.read().equals(whole, check_metadata=True)
    # AND DuckDB reads it: every call, its phase and its wall-clock time
    rows = duckdb.connect().execute(
        f"select count(*), count(distinct phase), min(start_wall_ns) // 1000 * 1000 = min(epoch_ns(start_time)), "
        f"sum(ret) from '{tmp_path}/streamed/events/*/*.parquet'").fetchall()
    assert rows == [(len(trace.events), len(set(whole["phase"].to_pylist())), True,
                     int(trace.events["ret"].sum()))]


def test_exporting_again_replaces_the_streamed_file(iozone_trace, tmp_path):
    trace = load(iozone_trace)
    assigned = assigned_of(trace.report())
    first = written(tmp_path, trace, dataset.events_blocks(Blocks(trace.events, assigned, 1000).blocks(),
                                                          trace.meta))
    again = written(tmp_path, trace, dataset.events_blocks(Blocks(trace.events, assigned, 37).blocks(), trace.meta))
    assert first.metadata.num_row_groups != again.metadata.num_row_groups
    # THEN one file of the run's name, no temporary left beside it
    assert sorted(p.name for p in (tmp_path / "events").rglob("*")) == [
        f"{dataset.run_id(trace.meta)}.parquet", "benchmark=other"]
    assert again.read().equals(first.read())


# 20 seeds (40 before: the suite's time): a guard of block boundaries, not a search (the cases above
# hold each rule); a failure names its seed
@pytest.mark.parametrize("chunk", range(2))
def test_random_small_traces(tmp_path, chunk):
    for seed in range(chunk * 10, chunk * 10 + 10):
        frame = random_trace(seed)
        path = tmp_path / f"r{seed}.iwt"
        rng = random.Random(seed)
        if len(frame) > 4:
            frame.loc[frame.index[rng.randrange(len(frame)):], "dev"] = OTHER_DEV
        write_trace(path, frame, clock=bool(seed % 2), host=f"h{seed}")
        try:
            # blocks of one row (a row group each, the costly part) on a quarter of the seeds
            same_files(path, tmp_path / f"s{seed}", sizes=(1, 37) if seed % 4 == 1 else (37, 1000),
                       shuffled=seed % 3 == 0)
        except AssertionError as error:
            raise AssertionError(f"seed {seed}: {error}") from None
