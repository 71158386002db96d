"""What the verdicts ask of the events (analysis/measure/evidence.py), answered from events read block
by block (analysis/measure/stream_evidence.py) exactly as from the whole table: every question on
traces cut into blocks of 7, 37 and 1000 rows (random ones, which are short, of 1 and 37), so
every per-phase and per-thread state crosses block boundaries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.judge import latency
from iowitness.analysis.measure.stream_evidence import (
    StreamedEvidence,
    closes_question,
    neighbours_question,
    operations_question,
    stonewall_question,
)
from iowitness.analysis.phasing import stream_assign, stream_table
from tests.support.blocks import Blocks, cutting
from tests.support.synthetic import O_CREAT, O_RDONLY, O_RDWR, O_WRONLY, SEEK_SET, START_NS, Calls
from tests.unit.test_stream_table import random_trace

REC = 4096
TIMED = latency.TIMED + ("interval",)


def answers(evidence, table: pd.DataFrame, events: pd.DataFrame) -> dict:
    """Every question, asked of `evidence` about the trace's phases, files and times."""
    numbers = [int(p) for p in table["phase"]]
    out = {"late_flushes": evidence.late_flushes(table),
           "final_write": {p: evidence.final_write(table, p) for p in numbers},
           "reach": evidence.reach().to_dict()}
    # every window and direction over all phases; each window of a few single phases
    asked = [(numbers, direction) for direction in (None, "read", "write")] + [([p], None) for p in numbers[:4]]
    for group, direction in asked:
        for timed in TIMED:
            out[("operations", tuple(group), timed, direction)] = evidence.operations(group, timed, direction).tolist()
    starts = np.sort(events["start_ns"].to_numpy(np.int64)) if len(events) else np.zeros(1, np.int64)
    for at in np.quantile(starts, [0, 0.5, 1]).astype(np.int64):
        out[("stonewall", int(at))] = evidence.stonewall_counts(numbers, int(at))
    paths = sorted({str(p) for p in events["path"].dropna().astype(str)}) if len(events) else []
    out["closes"] = evidence.closes_on(paths).to_dict("list")
    for path in paths:
        out[("first", path)] = evidence.first_call_on(path, int(np.median(starts)), int(starts[-1]))
    return out


def same_answers(events: pd.DataFrame, sizes=(7, 37, 1000)) -> dict:
    """The answers over the whole table as one block, and the same in blocks of every size."""
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events, assigned)
    expected = answers(_fed(events, assigned, table, max(len(events), 1)), table, events)
    for rows in cutting(sizes, len(events)):
        got = answers(_fed(events, assigned, table, rows), table, events)
        assert got.keys() == expected.keys()
        for key in expected:
            assert got[key] == expected[key], (rows, key)
    return expected


def _fed(events, assigned, table, rows: int) -> StreamedEvidence:
    blocks = Blocks(events, assigned, rows)
    evidence = StreamedEvidence(blocks, table)
    for e, a in blocks.blocks():
        evidence.add(e, a)
    evidence.finish()
    return evidence


def stdio(calls: Calls, path: str, full: int, tail: list[int], then_close: bool = True) -> Calls:
    calls.open(path, O_WRONLY | O_CREAT)
    for _ in range(full):
        calls.write(REC)
    for size in tail:
        calls.write(size)
    return calls.close() if then_close else calls


def test_a_buffered_streams_final_flush_is_found_across_blocks():
    # GIVEN a stdio stream: full 4 KiB writes, two short ones, then close (a late flush), and
    # a second stream whose short write is followed by another call before its close
    calls = stdio(Calls(), "/data/a", 60, [100, 37])
    calls.process(2000)
    stdio(calls, "/data/b", 50, [512], then_close=False).lseek(0, SEEK_SET).close()
    found = same_answers(calls.frame())
    # THEN the first is a late flush of 137 bytes in 2 writes; the second is not
    assert [(f["bytes"], f["calls"]) for f in found["late_flushes"].values()] == [(137, 2)]


def test_a_short_last_write_after_writes_of_other_sizes_is_no_streams_flush():
    # GIVEN dbench's shape: a 1-byte write, then full 64 KiB writes (its record), a 510-byte one,
    # more full ones and a last short write, then close: the program's own sizes, not a buffer's
    calls = Calls().open("/data/d", O_WRONLY | O_CREAT).write(1, 65_534)
    for k in range(40):
        calls.write(65_536 if k != 20 else 510, k * 65_536)
    calls.write(777).close()
    # WHEN the late flushes are asked, in blocks of every size
    found = same_answers(calls.frame())
    # THEN there is none (before: "a final flush just before close (a buffered stream)" on each of
    # dbench's files), while a stream of whole buffers and a short last one still has its flush
    assert found["late_flushes"] == {}, found["late_flushes"]
    assert len(same_answers(stdio(Calls(), "/data/a", 60, [100]).frame())["late_flushes"]) == 1


def test_the_last_write_before_close_of_stdio_sized_streams():
    # GIVEN streams that end with a full buffer and close, one closed by another thread's call first
    calls = stdio(Calls(), "/data/a", 40, [])
    calls.process(1000, 1001)
    stdio(calls, "/data/c", 30, [], then_close=False)
    calls.process(1000, 1002).open("/data/d", O_RDWR).write(REC).process(1000, 1001).close()
    found = same_answers(calls.frame())
    assert sum(v is not None for v in found["final_write"].values()) >= 2


def test_interleaved_threads_their_stonewalls_and_syncs():
    # GIVEN three threads writing their own files at once, each fsyncing now and then, then reading
    calls = Calls()
    for t in range(3):
        calls.process(1000, 1000 + t).open(f"/data/t{t}", O_RDWR | O_CREAT)
    # (150 writes and 120 reads: 7- and 37-row blocks cut each thread's run 40 and 8 times; every
    # question reads every block again, so the rows are the test's time)
    for i in range(150):
        t = i % 3
        calls.process(1000, 1000 + t).write(REC, latency=1000 + 97 * (i % 11))
        if i % 7 == 0:
            calls.fsync()
    for t in range(3):
        calls.process(1000, 1000 + t).lseek(0, SEEK_SET)
    for i in range(120):
        calls.process(1000, 1000 + i % 3).read(REC, latency=500 + 13 * (i % 5))
    for t in range(3):
        calls.process(1000, 1000 + t).close()
    found = same_answers(calls.frame())
    assert any(found[k][0] for k in found if isinstance(k, tuple) and k[0] == "stonewall")


# a guard of block boundaries, not a search: random traces are short, so blocks of one row too, on
# half of them (each question reads every block again: one-row blocks cost 90 % of the test)
@pytest.mark.parametrize("seed", range(10))
def test_random_traces(seed):
    same_answers(random_trace(seed), sizes=(1, 37) if seed < 5 else (37,))


def test_no_event():
    assert same_answers(Calls().frame())["late_flushes"] == {}


class _Counted(Blocks):
    """Blocks that count the passes made over them."""

    passes = 0

    def blocks(self):
        self.passes += 1
        yield from super().blocks()


def test_questions_asked_together_read_the_blocks_once():
    # GIVEN thread 1000: open, lseek, a 64 KiB read, fsync, close, 1 µs each back to back from
    # START_NS; thread 2000 calling in between; cut into blocks of 2 events
    calls = Calls().open("/d/f", O_RDONLY).lseek(0).read(65536).fsync().close()
    calls.process(2000).at(START_NS + 2500).open("/d/g", O_RDONLY).at(START_NS + 3500).read(10).close()
    events = calls.frame().sort_values("start_ns", kind="stable").reset_index(drop=True)
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events, assigned)
    blocks = _Counted(events, assigned, 2)
    evidence = StreamedEvidence(blocks, table)
    read_start, read_end = START_NS + 2000, START_NS + 3000
    phase = int(table.loc[table["tid"] == 1000, "phase"].iloc[0])
    # WHEN a stonewall count at the read's end, the closes on /d/f and the calls around the
    # read are asked together, then each as its own question
    evidence.ask([stonewall_question([phase], read_end), closes_question(["/d/f"]),
                  neighbours_question([1000], [read_start], [read_end])])
    counted, ops, _ = evidence.stonewall_counts([phase], read_end)
    closes = evidence.closes_on(["/d/f"])
    before, before_name, after, after_name = evidence.neighbours([1000], [read_start], [read_end])
    # THEN one pass for the three, none for the questions after it; the answers as the calls were
    # made: the read's 64 KiB done by its end, the close of /d/f from 4 to 5 µs, the lseek
    # ending where the read began and the fsync starting where it ended
    assert blocks.passes == 1
    assert counted == {phase: 65536} and ops == {phase: 1}
    assert closes.to_dict("list") == {"start_ns": [START_NS + 4000], "end_ns": [START_NS + 5000]}
    assert before.tolist() == [read_start] and before_name == ["lseek"]
    assert after.tolist() == [read_end] and after_name == ["fsync"]


def test_latency_questions_asked_together_read_the_blocks_once():
    # GIVEN thread 1000 reading twice (3 and 5 µs) and thread 2000 writing once (7 µs), each in
    # a phase of its own, cut into blocks of 2 events
    calls = Calls().open("/d/f", O_RDONLY).read(4096, latency=3000).read(4096, latency=5000).close()
    calls.process(2000).at(START_NS + 20_000).open("/d/g", O_WRONLY).write(10, latency=7000).close()
    events = calls.frame().sort_values("start_ns", kind="stable").reset_index(drop=True)
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events, assigned)
    blocks = _Counted(events, assigned, 2)
    evidence = StreamedEvidence(blocks, table)
    reads = [int(table.loc[table["tid"] == 1000, "phase"].iloc[0])]
    writes = [int(table.loc[table["tid"] == 2000, "phase"].iloc[0])]
    second_read = int(events.loc[events["latency_ns"] == 5000, "start_ns"].iloc[0])
    # WHEN the requests of both phases, and of the reads from the second one on, are asked
    # together (as fio's latency claims are), then each on its own
    evidence.ask([operations_question(reads, "call", "read"), operations_question(writes, "call", "write"),
                  operations_question(reads, "call", "read", second_read)])
    # THEN one pass for the three, none after it; each answer the calls' own latencies in seconds
    assert evidence.operations(reads, "call", "read").tolist() == [3e-6, 5e-6]
    assert evidence.operations(writes, "call", "write").tolist() == [7e-6]
    assert evidence.operations(reads, "call", "read", second_read).tolist() == [5e-6]
    assert blocks.passes == 1
