"""The events table block by block (analysis/read/stream_events.py) against `load(path).events`.

The reference is the in-memory table: the reader sorts the records by start time, stably, and
analysis/read/run.py Trace.events names them. Each trace here is written by the collector's own
TraceWriter, one small chunk (1 to 9 records) per flush, so that blocks of 1, 37 and 1,000
rows cut it in many places; the blocks, put end to end, must be that table exactly.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.read import stream_events
from iowitness.analysis.read.run import load
from iowitness.collector.format.tracereader import read
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.errors import BadTrace
from iowitness.probes.layout import layout
from tests.support import trace_mutants

BLOCK_ROWS = (1, 37, 1000)
DEV = (8 << 20) | 1
T0 = 10**12


def ops() -> dict[str, int]:
    return {name: code for code, name in layout().names("iow_op", "IOW_OP_").items()}


def records(start, latency, *, op="read", ino=11, tid=None) -> np.ndarray:
    """Event records with these start times and latencies (the rest: one plain read each)."""
    start = np.asarray(start, np.uint64)
    ev = np.zeros(len(start), layout().event)
    ev["start_ns"], ev["latency_ns"] = start, latency
    ev["op"] = ops()[op] if isinstance(op, str) else [ops()[o] for o in op]
    ev["tgid"] = 4000
    ev["tid"] = 4000 if tid is None else tid
    ev["dev"], ev["ino"], ev["fd"] = DEV, ino, 3
    ev["offset"] = np.arange(len(start)) * 4096
    ev["requested"], ev["ret"] = 4096, 4096
    return ev


def file_fact(ino: int, path: str, ts_ns: int) -> np.ndarray:
    fact = np.zeros(1, layout().meta)
    kinds = {name: code for code, name in layout().names("iow_meta_kind", "IOW_META_").items()}
    fact["kind"], fact["ts_ns"], fact["tgid"], fact["dev"], fact["ino"] = kinds["file"], ts_ns, 4000, DEV, ino
    fact["fd"], fact["dirfd"] = 3, -100
    raw = path.encode()
    fact["path"][0, :len(raw)] = np.frombuffer(raw, np.uint8)
    return fact


def write_trace(path: Path, events: np.ndarray, facts=(), seed: int = 0, chunk: int = 9) -> Path:
    """`events` in this file order, in chunks of 1 to `chunk` records (one flush each), as the
    collector writes them; a FILE fact per (ino, path, ts)."""
    start = {"iowitness_version": "test", "mode": "run", "command": ["bench"], "host": "test", "kernel": "test",
             "targets": [], "clock_start": {"monotonic_ns": T0 - 10**6, "realtime_ns": 0, "offset_ns": 0}}
    rng = np.random.default_rng(seed)
    with TraceWriter(path, start) as writer:
        if len(facts):
            writer.write_facts(np.concatenate([file_fact(*f) for f in facts]))
        at = 0
        while at < len(events):
            n = int(rng.integers(1, chunk + 1))
            writer.write_events(events[at:at + n])
            writer.flush()
            at += n
        writer.close({"exit_code": 0, "stopped": "the command exited",
                      "clock_end": {"monotonic_ns": T0 + 10**12, "realtime_ns": 0, "offset_ns": 0}})
    return path


def streamed(path: Path, block_rows: int) -> pd.DataFrame:
    with stream_events.open_events(path, block_rows=block_rows) as source:
        first = list(source.blocks())
        if block_rows == 37:                          # re-iterable: a second pass gives the same
            for one, two in zip(first, source.blocks(), strict=True):
                pd.testing.assert_frame_equal(one, two, check_exact=True)
    rows = [len(b) for b in first]
    assert all(rows) or rows == [0]                   # no empty block, but for an empty trace
    return pd.concat(first)


def same_as_loaded(path: Path, block_rows=BLOCK_ROWS) -> pd.DataFrame:
    events = load(path).events
    for rows in block_rows:
        pd.testing.assert_frame_equal(events, streamed(path, rows), check_exact=True, check_categorical=True,
                                      check_frame_type=False)
    return events


def in_cpu_order(start, latency) -> np.ndarray:
    """Rows in the order the ring buffer receives them: by the end of each call (records are
    written at the call's exit), ties by start."""
    return np.lexsort((start, np.asarray(start) + np.asarray(latency)))


def test_records_in_time_order(tmp_path):
    # GIVEN 1,500 reads written in start-time order, as one thread makes them (two blocks of 1,000)
    start = T0 + np.arange(1500) * 2000
    path = write_trace(tmp_path / "t.iwt", records(start, 1500), [(11, "/data/f", T0 - 1)])
    # WHEN the events are read block by block
    # THEN the blocks are the loaded table, and nothing was kept out of order
    events = same_as_loaded(path)
    assert len(events) == 1500
    with stream_events.open_events(path, block_rows=37) as source:
        assert source.straggler_count == 0 and source.event_count == 1500


def test_records_interleaved_like_several_cpus(tmp_path):
    # GIVEN four threads' calls (latencies from 0.2 to 200 µs), written in the order they return
    rng = np.random.default_rng(1)
    parts = []
    for tid in range(4):
        latency = rng.lognormal(np.log(3000), 1.2, 1500).astype(np.int64) + 200
        start = T0 + tid * 77 + np.concatenate([[0], np.cumsum(latency[:-1] + rng.integers(100, 900, 1499))])
        parts.append(records(start, latency, tid=4000 + tid, op=rng.choice(["read", "write", "lseek"], 1500)))
    ev = np.concatenate(parts)
    ev = ev[in_cpu_order(ev["start_ns"], ev["latency_ns"])]
    assert np.any(np.diff(ev["start_ns"].astype(np.int64)) < 0)
    path = write_trace(tmp_path / "t.iwt", ev, [(11, "/data/f", T0 - 1)], chunk=30)
    # WHEN the events are read block by block
    # THEN the blocks are the loaded table; with blocks of 1,000 rows no record is far enough
    # out of order to be kept aside
    same_as_loaded(path)
    with stream_events.open_events(path, block_rows=1000) as source:
        assert source.straggler_count == 0


def test_one_long_call_written_after_three_thousand_later_calls(tmp_path):
    # GIVEN an fsync that starts first and lasts 2 s, and 3,000 writes that start after it
    # and return before it: the fsync's record is written after theirs, three blocks of 1,000
    # rows late (a straggler is two blocks or more late)
    writes = records(T0 + 1000 + np.arange(3_000) * 150, 100, op="write")
    fsync = records([T0], 2 * 10**9, op="fsync")
    after = records(T0 + 2 * 10**9 + 10**6 + np.arange(500) * 150, 100, op="close")
    path = write_trace(tmp_path / "t.iwt", np.concatenate([writes, fsync, after]), [(11, "/data/f", T0 - 1)],
                       chunk=60)
    # WHEN the events are read block by block
    # THEN the blocks are the loaded table: the fsync first
    events = same_as_loaded(path)
    assert events["syscall"].iloc[0] == "fsync"
    # AND with blocks of 1,000 rows only that one record was kept aside
    with stream_events.open_events(path, block_rows=1000) as source:
        assert source.straggler_count == 1


def test_ties_in_start_time_keep_file_order(tmp_path):
    # GIVEN 1,500 calls starting at one of six instants, in random file order (the stable sort
    # keeps file order among equal start times), each row told apart by its offset
    rng = np.random.default_rng(2)
    start = T0 + rng.integers(0, 6, 1500) * 1000
    path = write_trace(tmp_path / "t.iwt", records(start, 10), [(11, "/data/f", T0 - 1)])
    # WHEN the events are read block by block
    # THEN the blocks are the loaded table, ties in the file's order
    events = same_as_loaded(path)
    assert events["start_ns"].is_monotonic_increasing


def test_ties_between_held_records_and_stragglers(tmp_path):
    # GIVEN runs of calls at the same instant, a few of them written blocks later than their
    # peers (each run's start equals the largest start seen before a later block)
    rng = np.random.default_rng(3)
    start = np.repeat(T0 + np.arange(60) * 1000, 50)
    order = np.argsort(np.arange(len(start)) + rng.choice([0, 0, 0, 400, 2500], len(start)), kind="stable")
    path = write_trace(tmp_path / "t.iwt", records(start[order], 10), [(11, "/data/f", T0 - 1)])
    # WHEN the events are read block by block
    # THEN the blocks are the loaded table
    same_as_loaded(path, (1, 7, 37, 100, 1000))


def test_random_file_order(tmp_path):
    # GIVEN 2,000 calls written in an order unrelated to their start times (every record
    # out of order: the worst case, all kept aside)
    rng = np.random.default_rng(4)
    start = T0 + rng.integers(0, 10**6, 2000)
    path = write_trace(tmp_path / "t.iwt", records(start, 10, op=rng.choice(["read", "pwrite64"], 2000)))
    # WHEN the events are read block by block
    # THEN the blocks are the loaded table
    same_as_loaded(path)


def test_inode_reused_under_two_paths(tmp_path):
    # GIVEN inode 50 opened as /data/a, deleted, then given to /data/b (ext4 reuses the number),
    # calls on both written out of order around the switch, and calls on a file no fact names
    rng = np.random.default_rng(5)
    start = T0 + np.arange(2000) * 100
    ev = records(start, rng.integers(10, 5000, 2000), ino=np.where(np.arange(2000) % 5 == 0, 99, 50))
    ev = ev[in_cpu_order(ev["start_ns"], ev["latency_ns"])]
    facts = [(50, "/data/a", T0 - 1), (50, "/data/b", T0 + 100_000), (51, "/data/c", T0)]
    path = write_trace(tmp_path / "t.iwt", ev, facts)
    # WHEN the events are read block by block
    # THEN each call has the path its inode had when it started, as in the loaded table
    events = same_as_loaded(path)
    assert set(events["path"].dropna()) == {"/data/a", "/data/b"}
    assert list(events["path"].cat.categories) == ["/data/a", "/data/b", "/data/c"]


def test_empty_trace(tmp_path):
    # GIVEN a trace with no event
    path = write_trace(tmp_path / "t.iwt", records([], 0))
    # WHEN it is read block by block
    # THEN one empty block comes, with the loaded table's columns and dtypes
    same_as_loaded(path)
    with stream_events.open_events(path) as source:
        assert source.event_count == 0 and [len(b) for b in source.blocks()] == [0]


def test_one_event_trace(tmp_path):
    # GIVEN a trace with a single fsync
    path = write_trace(tmp_path / "t.iwt", records([T0], 5000, op="fsync"), [(11, "/data/f", T0 - 1)])
    # WHEN it is read block by block
    # THEN the one block is the loaded table
    assert len(same_as_loaded(path)) == 1


def test_damaged_trace_gives_what_read_keeps(tmp_path):
    # GIVEN a trace of out-of-order calls whose file is cut in the middle of its events
    rng = np.random.default_rng(6)
    start = T0 + np.arange(4000) * 100
    latency = rng.integers(10, 30_000, 4000)
    ev = records(start, latency)[in_cpu_order(start, latency)]
    whole = write_trace(tmp_path / "whole.iwt", ev, [(11, "/data/f", T0 - 1)])
    path = tmp_path / "cut.iwt"
    path.write_bytes(whole.read_bytes()[:whole.stat().st_size * 2 // 3])
    kept = read(path)
    assert 0 < kept.event_count < 4000
    # WHEN it is read block by block
    # THEN the blocks hold the events the whole-file reader keeps, in its order
    events = same_as_loaded(path)
    assert len(events) == kept.event_count
    with stream_events.open_events(path) as source:
        assert source.meta == kept.meta


@pytest.mark.parametrize("seed", range(5))
def test_random_displacements(tmp_path, seed):
    # GIVEN calls whose records are moved back by random amounts, from none to thousands of
    # rows (heavy-tailed latencies), some sharing a start time
    rng = np.random.default_rng(100 + seed)
    n = 3000
    start = T0 + np.sort(rng.integers(0, n * 50, n))
    latency = (rng.pareto(1.0, n) * 200).astype(np.int64)
    path = write_trace(tmp_path / "t.iwt", records(start, latency)[in_cpu_order(start, latency)], seed=seed)
    # WHEN the events are read block by block (blocks of 1 row, a block a chunk of the file: 480
    # blocks, 4.0 of the 5.7 CPU-s of a seed, on two seeds; every seed in blocks of 37, 250, 1,000)
    # THEN the blocks are the loaded table
    same_as_loaded(path, (1, 37, 250, 1000) if seed < 2 else (37, 250, 1000))


def test_damaged_copies_read_as_loading_reads_them(tmp_path):
    # GIVEN 60 damaged copies of the fuzzer's base traces (cut, flipped bits, odd blocks under
    # good CRCs, ...: tests/support/trace_mutants.py)
    bases = trace_mutants.write_bases(tmp_path)
    for k, (_, how, data) in enumerate(trace_mutants.mutants(bases, 60, seed=18)):
        path = tmp_path / f"mutant-{k}.iwt"
        path.write_bytes(data)
        # WHEN each is loaded, and read block by block
        try:
            events = load(path).events
        except BadTrace as exc:
            # THEN a trace that cannot be loaded cannot be streamed either, for the same reason
            with pytest.raises(BadTrace) as caught:
                stream_events.open_events(path)
            assert str(caught.value) == str(exc), how
            continue
        # THEN otherwise the blocks are the loaded table
        pd.testing.assert_frame_equal(events, streamed(path, 3), check_exact=True, check_frame_type=False, obj=how)
        path.unlink()
