"""Operations of several calls (analysis/phasing/operations.py): the `timed` texts, the groups of calls
an operation is, successive open..close stretches of one file joined into one phase, and a
verdict's phases as ranges (reporters/phase_ranges.py). Built from calls written by hand
(tests/support/synthetic.py), whose counts are known exactly."""

from __future__ import annotations

import pytest

from iowitness.analysis.judge import latency
from iowitness.analysis.phasing import operations, stream_assign, stream_table
from iowitness.reporters import phase_ranges
from tests.support.synthetic import O_CREAT, O_WRONLY, Calls

F = "/data/file"


def test_timed_texts_are_read_and_written_one_way():
    assert operations.canonical("8 calls + sync") == "8 calls+sync"
    assert operations.canonical("1 call") == "call" and operations.canonical("calls+sync") == "calls+sync"
    assert operations.parse("4 calls") == ("calls", 4) and operations.canonical("1 call+sync") == "call+sync"
    with pytest.raises(ValueError, match="N calls"):
        operations.canonical("call+fsync")
    assert not operations.is_several("call+sync") and operations.is_several("open..close")


def _open_write_close(times: int, size: int = 4096, files: int = 1, gap_ns: int = 1000) -> Calls:
    calls = Calls()
    for k in range(times):
        calls.open(f"{F}{k % files}", O_WRONLY | O_CREAT)
        calls.write(size, 0)
        calls.close()
        calls.gap(gap_ns)
    return calls


def test_successive_open_close_stretches_of_one_file_are_one_phase():
    # GIVEN 50 operations, each open, one 4 KiB write at offset 0, close, of one file
    events = _open_write_close(50).frame()
    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)
    # THEN they are one phase of 50 writes and 50 opens, every call in it
    assert list(table["ops"]) == [50] and list(table["opens"]) == [50]
    assert set(stream_assign.of_frame(events)["phase"]) == {1}


def test_a_few_stretches_of_one_file_stay_phases_of_their_own():
    # GIVEN IOzone's write, rewrite, fwrite and frewrite of one file: four stretches of the same calls
    calls = Calls()
    for _ in range(operations.JOIN_CHAIN - 1):
        calls.open(F, O_WRONLY | O_CREAT)
        for k in range(16):
            calls.write(4096, k * 4096)
        calls.close()
    # THEN each is a phase: fewer than JOIN_CHAIN in a row are separate tests
    assert list(stream_table.of_frame(calls.frame())["ops"]) == [16] * (operations.JOIN_CHAIN - 1)


def test_stretches_of_other_shapes_or_other_files_are_not_joined():
    # GIVEN 20 small files, one open..write..close each, then 20 stretches of one file
    # alternating 4 KiB and 8 KiB writes
    files = _open_write_close(20, files=20)
    for k in range(20):
        files.open(F, O_WRONLY | O_CREAT)
        files.write(4096 * (1 + k % 2), 0)
        files.close()
    table = stream_table.of_frame(files.frame())
    # THEN every stretch is a phase of its own
    assert len(table) == 40


def test_blocks_give_the_same_joined_phases():
    # GIVEN 30 open..write..close of one file then 30 of another, read in blocks of 1 and 7 events
    calls = _open_write_close(30)
    for _ in range(30):
        calls.open(F + "-other", O_WRONLY | O_CREAT)
        calls.write(1024, 0)
        calls.close()
    events = calls.frame()
    whole = stream_assign.of_frame(events)["phase"].tolist()
    assert sorted(set(whole)) == [1, 2]
    for rows in (1, 7):
        class Blocks:
            def blocks(self, rows=rows):
                for at in range(0, len(events), rows):
                    yield events.iloc[at:at + rows]
        with stream_assign.assign(Blocks()) as assigned:
            assert [p for _, a in assigned.blocks() for p in a["phase"].tolist()] == whole


def test_operations_of_n_calls_and_a_sync_are_timed_first_call_to_sync():
    # GIVEN 10 operations of 3 writes (10 µs each, 1 µs apart) and an fdatasync (100 µs)
    calls = Calls(latency=10_000).open(F, O_WRONLY | O_CREAT)
    for _ in range(10):
        for _ in range(3):
            calls.write(4096).gap(1000)
        calls.fsync(syscall="fdatasync", latency=100_000).gap(5000)
    events = calls.frame()
    assigned = stream_assign.of_frame(events)
    # THEN "calls+sync" and "3 calls+sync" find the same 10 operations of 3 × 10 + 2 × 1 + 1 + 100 µs
    for timed in ("calls+sync", "3 calls+sync"):
        spans = operations.spans(events, assigned, [1], timed, "write") * 1e6
        assert spans == pytest.approx([10 + 1 + 10 + 1 + 10 + 1 + 100] * 10), timed
    # AND "3 calls" ends each at its third write
    assert operations.spans(events, assigned, [1], "3 calls", "write") * 1e6 == pytest.approx([32] * 10)
    # AND ops/s counts 10 operations, not 30 calls
    table = stream_table.of_frame(events)
    assert list(operations.per_operation(table, "calls+sync")["ops"]) == [10]
    assert list(operations.per_operation(table, "3 calls")["ops"]) == [10]


def _rounds_of_three_writes_and_an_fsync():
    """10 rounds of 3 writes (10 µs each, 1 µs apart) and an fsync (100 µs), 5 µs between rounds."""
    calls = Calls(latency=10_000).open(F, O_WRONLY | O_CREAT)
    for _ in range(10):
        for _ in range(3):
            calls.write(4096).gap(1000)
        calls.fsync(latency=100_000).gap(5000)
    events = calls.frame()
    return events, stream_assign.of_frame(events)


def test_every_call_and_every_sync_is_one_operation_as_sysbench_counts_its_events():
    # GIVEN 10 rounds of 3 writes (10 µs each) and an fsync (100 µs): sysbench fileio's events
    events, assigned = _rounds_of_three_writes_and_an_fsync()
    # WHEN one operation is "call or sync"
    times = sorted(latency.operations(events, assigned, [1], "call or sync", "write") * 1e6)
    # THEN there are 40 operations, the 30 writes and the 10 fsyncs, each timed alone
    assert times == pytest.approx([10] * 30 + [100] * 10)
    # AND the mean is sysbench's: (30 × 10 + 10 × 100) / 40 µs, not the writes' 10 µs
    assert sum(times) / len(times) == pytest.approx(32.5)
    assert operations.canonical("call or sync") == "call or sync"


def test_every_sync_alone_is_one_operation_as_sysbench_counts_its_fsyncs():
    # GIVEN 10 rounds of 3 writes (10 µs each) and an fsync (100 µs): sysbench fileio's fsyncs/s
    events, assigned = _rounds_of_three_writes_and_an_fsync()
    # WHEN one operation is "sync"
    # THEN the 10 fsyncs are the operations, each timed alone, and the writes none
    times = latency.operations(events, assigned, [1], "sync", "mixed") * 1e6
    assert list(times) == pytest.approx([100] * 10)
    # AND an ops/s claim counts the phase's 10 fsyncs, not its 30 writes
    table = stream_table.of_frame(events)
    assert list(operations.per_operation(table, "sync")["ops"]) == [10]
    assert operations.canonical("sync") == "sync" and operations.is_several("sync")


def test_phases_are_written_as_ranges():
    assert phase_ranges.ranges([3]) == "phase 3"
    assert phase_ranges.ranges([1, 2, 3, 7]) == "phases 1–3, 7"
    assert phase_ranges.ranges(range(12, 9874)) == "phases 12–9,873"
    gappy = [12, 14, 16, 18, 20, *range(30, 9874)]
    assert phase_ranges.ranges(gappy) == f"phases 12–9,873, {len(gappy):,} phases"
    assert phase_ranges.ranges([]) == ""


def test_too_short_is_judged_on_what_the_claim_covers_not_its_smallest_member():
    import pandas as pd

    from iowitness.analysis.judge import verdict_rules as verdicts
    # GIVEN a group of three phases over 800 ms and 37,553 calls, one member of 2 calls in 50 µs
    rows = pd.DataFrame({"phase": [1, 2, 3], "ops": [20_000, 17_551, 2],
                         "data_first_ns": [0, 1_000, 400_000_000],
                         "data_last_ns": [800_700_000, 800_000_000, 400_050_000]})
    rows["duration_s"] = (rows["data_last_ns"] - rows["data_first_ns"]) / 1e9
    rows["too_short"] = (rows["duration_s"] < 0.010) | (rows["ops"] < 100)
    # THEN the claim over the group is timeable; the tiny member alone is not
    assert not verdicts.too_short(rows)
    assert verdicts.too_short(rows[rows["phase"] == 3])
    # AND a group that is short as a whole says so with its whole window and calls
    short = rows.assign(data_last_ns=rows["data_first_ns"] + 1000, ops=[10, 10, 2])
    short["data_first_ns"] = [0, 0, 0]
    assert verdicts.too_short(short)
    assert verdicts.too_short_reason(short).startswith("phases too short to time: ")
    assert "22 calls" in verdicts.too_short_reason(short)
