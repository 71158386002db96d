"""Phases rebuilt from events (analysis/phasing/phases.py), on event tables written call by call.

Every expected phase is written out by hand from the calls the test makes: which calls, how
many bytes, at which offsets. Records are 4 KiB and every call takes 1000 ns unless the test
says otherwise (tests/support/synthetic.py).
"""

import pandas as pd

from iowitness.analysis.phasing import groups, stream_assign, stream_table
from tests.support.synthetic import (
    EINVAL,
    EIO,
    O_APPEND,
    O_CREAT,
    O_RDONLY,
    O_RDWR,
    O_TRUNC,
    O_WRONLY,
    SEEK_CUR,
    SEEK_END,
    Calls,
)

REC = 4096
F = "/data/testfile"
MAIN = ("phase", "operation", "pattern", "stride", "record_size", "bytes", "ops")


def rows(table: pd.DataFrame, *columns: str) -> list[dict]:
    """The table's rows as plain dicts of these columns, to compare with rows written by hand."""
    return [{c: (v.item() if hasattr(v, "item") else v) for c, v in row.items()}
            for row in table[list(columns)].to_dict("records")]


def phase_of_each_call(events: pd.DataFrame) -> list[tuple[str, int]]:
    assigned = stream_assign.of_frame(events)
    return list(zip(events["syscall"].astype(str), assigned["phase"].tolist()))


# the builder itself: the offsets the phase tests rely on

def test_builder_places_calls_like_the_kernel():
    # GIVEN a file of 10000 bytes opened with O_APPEND, and calls that move the position every way
    events = (Calls().open(F, O_RDWR | O_APPEND, size=10000)
              .write(100)                 # lands at the end: 10000, the file is now 10100 long
              .lseek(-50, SEEK_CUR)       # 10100 - 50
              .read(10)                   # at 10050
              .lseek(0, SEEK_END)         # 10100
              .lseek(-20000, SEEK_CUR)    # before 0: EINVAL, the position stays
              .pread(10, 5)               # at 5, the position stays
              .read(10, ret=-EIO)         # at 10100, moves nothing
              .read(10, ret=3)            # at 10100, moves 3
              .read(10)                   # at 10103
              .close()
              .frame())

    # WHEN the table is read
    # THEN each call is where the kernel would have put it, with the probe's conventions
    assert list(events["syscall"].astype(str)) == ["openat", "write", "lseek", "read", "lseek", "lseek",
                                                   "pread64", "read", "read", "read", "close"]
    assert events["offset"].tolist() == [-1, 10000, -1, 10050, -1, -1, 5, 10100, 10100, 10103, -1]
    assert events["requested"].tolist() == [0, 100, -50, 10, 0, -20000, 10, 10, 10, 10, 0]
    assert events["ret"].tolist() == [3, 100, 10050, 10, 10100, -EINVAL, 10, -EIO, 3, 10, 0]
    assert events["flags"].tolist() == [O_RDWR | O_APPEND, 0, SEEK_CUR, 0, SEEK_END, SEEK_CUR, 0, 0, 0, 0, 0]
    assert events["start_ns"].tolist() == [1_000_000_000 + 1000 * i for i in range(11)]
    assert events["end_ns"].tolist() == [1_000_001_000 + 1000 * i for i in range(11)]
    assert dict(events.dtypes.astype(str)) == {
        "start_ns": "uint64", "latency_ns": "uint64", "ino": "uint64", "offset": "int64", "requested": "int64",
        "ret": "int64", "tgid": "uint32", "tid": "uint32", "dev": "uint32", "fd": "int32", "flags": "uint32", "ring": "uint16",
        "syscall": "category", "end_ns": "uint64", "device": "category", "path": "category"}
    assert isinstance(events.index, pd.RangeIndex)


# no phase at all

def test_empty_trace_gives_an_empty_table():
    # GIVEN a trace without a single event
    events = Calls().frame()

    # WHEN its phases are rebuilt
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events)

    # THEN there is no phase, and no error
    assert len(assigned) == 0
    assert len(table) == 0
    assert {"phase", "operation", "pattern", "bytes", "ops"} <= set(table.columns)


def test_open_close_without_data_is_no_phase():
    # GIVEN a file opened and closed with nothing in between
    events = Calls().open(F, O_RDONLY).close().frame()

    # WHEN its phases are rebuilt
    # THEN both calls are in one span and in no phase, and the table is empty
    assigned = stream_assign.of_frame(events)
    assert assigned["span"].tolist() == [0, 0]
    assert assigned["phase"].tolist() == [-1, -1]
    assert len(stream_table.of_frame(events)) == 0


def test_lseek_only_span_is_no_phase():
    # GIVEN a file of 64 KiB opened, seeked around, and closed: no data call
    events = (Calls().open(F, O_RDONLY, size=65536)
              .lseek(REC).lseek(0, SEEK_END).lseek(-REC, SEEK_CUR)
              .close().frame())

    # WHEN its phases are rebuilt
    # THEN no call is in a phase and the table is empty
    assert phase_of_each_call(events) == [("openat", -1), ("lseek", -1), ("lseek", -1), ("lseek", -1),
                                          ("close", -1)]
    assert len(stream_table.of_frame(events)) == 0


# one phase, by pattern

def test_single_call():
    # GIVEN one read of one record between an open and a close
    events = Calls().open(F, O_RDONLY).read(REC).close().frame()

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN one phase holds the three calls: a single read, too short to time
    assert phase_of_each_call(events) == [("openat", 1), ("read", 1), ("close", 1)]
    assert rows(table, *MAIN, "name", "too_short") == [
        {"phase": 1, "operation": "read", "pattern": "single call", "stride": 0, "record_size": 4096,
         "bytes": 4096, "ops": 1, "name": "single read", "too_short": True}]


def test_o_append_writes_are_sequential_and_flagged():
    # GIVEN a file of 8 KiB opened O_WRONLY|O_APPEND, then four writes of a record: they land at
    # 8192, 12288, 16384, 20480
    events = Calls().open(F, O_WRONLY | O_APPEND, size=8192).write(REC).write(REC).write(REC).write(REC).close().frame()
    assert events["offset"].tolist() == [-1, 8192, 12288, 16384, 20480, -1]

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN one sequential write of 16 KiB, marked O_APPEND and nothing else
    assert rows(table, *MAIN, "name", "O_APPEND", "O_DIRECT", "O_SYNC", "O_DSYNC") == [
        {"phase": 1, "operation": "write", "pattern": "sequential", "stride": 0, "record_size": 4096,
         "bytes": 16384, "ops": 4, "name": "sequential write",
         "O_APPEND": True, "O_DIRECT": False, "O_SYNC": False, "O_DSYNC": False}]


def test_backward_read_with_lseek_back_two_records():
    # GIVEN a file of 8 records read from its last record to its first, IOzone's way:
    # lseek(-rec, SEEK_END), read, then lseek(-2 rec, SEEK_CUR) before each next read
    calls = Calls().open(F, O_RDONLY, size=8 * REC).lseek(-REC, SEEK_END).read(REC)
    for _ in range(7):
        calls.lseek(-2 * REC, SEEK_CUR).read(REC)
    events = calls.close().frame()
    reads = events[events["syscall"] == "read"]
    assert reads["offset"].tolist() == [28672, 24576, 20480, 16384, 12288, 8192, 4096, 0]

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN one backward read of the whole file
    assert rows(table, *MAIN, "name") == [
        {"phase": 1, "operation": "read", "pattern": "backward", "stride": 0, "record_size": 4096,
         "bytes": 32768, "ops": 8, "name": "backward read"}]


def test_stride_read_with_lseek_forward():
    # GIVEN reads of one record each 3 records apart: read, lseek(+2 rec, SEEK_CUR), read, ...
    calls = Calls().open(F, O_RDONLY, size=1 << 20).read(REC)
    for _ in range(7):
        calls.lseek(2 * REC, SEEK_CUR).read(REC)
    events = calls.close().frame()
    reads = events[events["syscall"] == "read"]
    assert reads["offset"].tolist() == [0, 12288, 24576, 36864, 49152, 61440, 73728, 86016]

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN one strided read whose stride is the distance between the starts of two reads
    assert rows(table, *MAIN, "name") == [
        {"phase": 1, "operation": "read", "pattern": "strided", "stride": 12288, "record_size": 4096,
         "bytes": 32768, "ops": 8, "name": "strided read"}]


def test_same_record_rewrite():
    # GIVEN a new file whose first record is written 8 times, with lseek(0) before each rewrite
    calls = Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC).write(REC)
    for _ in range(7):
        calls.lseek(0).write(REC)
    events = calls.close().frame()

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN one same-record write; nothing was written before it, so it is no re-write of an earlier phase
    assert rows(table, *MAIN, "name", "rewrite") == [
        {"phase": 1, "operation": "write", "pattern": "same record", "stride": 0, "record_size": 4096,
         "bytes": 32768, "ops": 8, "name": "same-record rewrite", "rewrite": False}]


def test_random_reads():
    # GIVEN ten preads of a record at records picked at random in a 1 MiB file
    calls = Calls().open(F, O_RDONLY, size=1 << 20)
    for record in (93, 12, 250, 41, 177, 6, 138, 64, 219, 101):
        calls.pread(REC, record * REC)
    events = calls.close().frame()

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN one random read
    assert rows(table, *MAIN, "name") == [
        {"phase": 1, "operation": "read", "pattern": "random", "stride": 0, "record_size": 4096,
         "bytes": 40960, "ops": 10, "name": "random read"}]


def test_errors_and_short_reads_are_counted():
    # GIVEN four reads of a record: one whole, one failing with EIO, one short (1000 bytes), one whole
    events = (Calls().open(F, O_RDONLY)
              .read(REC).read(REC, ret=-EIO).read(REC, ret=1000).read(REC)
              .close().frame())

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN one read phase with 1 error and 1 short read, whose bytes are the bytes done:
    # 4096 + 1000 + 4096
    assert rows(table, "phase", "operation", "errors", "short", "bytes") == [
        {"phase": 1, "operation": "read", "errors": 1, "short": 1, "bytes": 9192}]


def test_a_failed_read_does_not_break_a_sequential_read():
    # GIVEN the reads of the test above: each one starts where the one before it ended
    # (0, 4096 failed and moved nothing, 4096 short by 3096, 5096)
    events = (Calls().open(F, O_RDONLY)
              .read(REC).read(REC, ret=-EIO).read(REC, ret=1000).read(REC)
              .close().frame())
    assert events["offset"].tolist() == [-1, 0, 4096, 4096, 5096, -1]

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN the phase is a sequential read: a call that moved nothing is no step of the pattern
    assert rows(table, "phase", "pattern", "stride") == [{"phase": 1, "pattern": "sequential", "stride": 0}]


def test_warm_up_read_is_kept_out_of_the_counts():
    # GIVEN IOzone's read test: read record 0 to prime, lseek(0), then 8 sequential reads
    calls = Calls().open(F, O_RDONLY, size=8 * REC).read(REC).lseek(0)
    for _ in range(8):
        calls.read(REC)
    events = calls.close().frame()

    # WHEN the phases are rebuilt
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events, assigned)

    # THEN the first read is the phase's warm-up: in the phase, out of its bytes and counts
    assert assigned["warmup"].tolist() == [False, True] + [False] * 10
    assert assigned["phase"].tolist() == [1] * 12
    assert rows(table, *MAIN, "warmup_ops") == [
        {"phase": 1, "operation": "read", "pattern": "sequential", "stride": 0, "record_size": 4096,
         "bytes": 32768, "ops": 8, "warmup_ops": 1}]


def test_warm_up_read_of_a_file_no_bigger_than_its_record():
    # GIVEN IOzone -a where the record size is the file size: prime read, lseek(0), the one record
    events = Calls().open(F, O_RDONLY, size=REC).read(REC).lseek(0).read(REC).close().frame()
    # WHEN the phases are rebuilt
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events, assigned)
    # THEN the prime is the warm-up: the phase moved the file once, as IOzone counts it
    assert assigned["warmup"].tolist() == [False, True, False, False, False]
    assert rows(table, "phase", "bytes", "ops", "warmup_ops") == [{"phase": 1, "bytes": REC, "ops": 1, "warmup_ops": 1}]
    # AND two reads of different records, or two writes, are no warm-up
    other = Calls().open(F, O_RDONLY, size=2 * REC).read(REC).read(REC).close().frame()
    assert not stream_assign.of_frame(other)["warmup"].any()
    writes = Calls().open(F, O_RDWR, size=REC).write(REC).lseek(0).write(REC).close().frame()
    assert not stream_assign.of_frame(writes)["warmup"].any()


# time

def test_fsyncs_are_counted_and_timed_in_their_phase():
    # GIVEN 4 writes, an fsync of 50 µs, 4 writes, an fsync of 70 µs
    calls = Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(4):
        calls.write(REC)
    calls.fsync(latency=50_000)
    for _ in range(4):
        calls.write(REC)
    events = calls.fsync(latency=70_000).close().frame()

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN the fsyncs do not cut the writes; the phase has both, and their time apart from the writes'
    assert ("fsync", 1) in phase_of_each_call(events) and ("fsync", -1) not in phase_of_each_call(events)
    assert rows(table, "phase", "operation", "pattern", "bytes", "ops", "fsyncs", "fsync_ns", "data_ns") == [
        {"phase": 1, "operation": "write", "pattern": "sequential", "bytes": 32768, "ops": 8,
         "fsyncs": 2, "fsync_ns": 120_000, "data_ns": 8000}]


def test_user_time_is_the_time_between_calls():
    # GIVEN an open, 3 writes and a close, with 5, 7 and 3 µs of the benchmark's own work
    # before each write
    events = (Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC)
              .gap(5000).write(REC).gap(7000).write(REC).gap(3000).write(REC)
              .close().frame())

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN the phase's user time is those gaps: 15 µs
    assert rows(table, "phase", "ops", "user_ns") == [{"phase": 1, "ops": 3, "user_ns": 15_000}]


def test_too_short_below_100_calls_or_10_ms():
    # GIVEN three files written one after the other, 1 µs a write:
    # A: 99 writes 200 µs apart: 99 µs + 98 × 200 µs = 19.699 ms, but fewer than 100 calls
    # B: 100 writes 90 µs apart: 100 µs + 99 × 90 µs = 9.01 ms, shorter than 10 ms
    # C: 100 writes 100 µs apart: 100 µs + 99 × 100 µs = 10 ms exactly: long enough
    calls = Calls()
    for path, writes, gap in (("/data/A", 99, 200_000), ("/data/B", 100, 90_000), ("/data/C", 100, 100_000)):
        calls.open(path, O_WRONLY | O_CREAT | O_TRUNC).write(REC)
        for _ in range(writes - 1):
            calls.gap(gap).write(REC)
        calls.close()
    events = calls.frame()

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN A and B are too short to time and C is not
    assert rows(table, "phase", "path", "ops", "duration_s", "too_short") == [
        {"phase": 1, "path": "/data/A", "ops": 99, "duration_s": 0.019699, "too_short": True},
        {"phase": 2, "path": "/data/B", "ops": 100, "duration_s": 0.00901, "too_short": True},
        {"phase": 3, "path": "/data/C", "ops": 100, "duration_s": 0.010, "too_short": False}]


# several phases

def test_two_threads_interleaving_on_one_file_are_two_phases_of_one_group():
    # GIVEN two threads of process 1000, each with its own fd on one file, taking turns to
    # pwrite 4 records: thread 1001 from offset 0, thread 1002 from offset 1 MiB
    calls = Calls(1000).thread(1001).open(F, O_WRONLY | O_CREAT).thread(1002).open(F, O_WRONLY)
    for i in range(4):
        calls.thread(1001).pwrite(REC, i * REC).thread(1002).pwrite(REC, (1 << 20) + i * REC)
    events = calls.thread(1001).close().thread(1002).close().frame()
    assert events["fd"].tolist() == [3, 4] + [3, 4] * 4 + [3, 4]

    # WHEN the phases are rebuilt and grouped
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events, assigned)

    # THEN each thread is a phase of its own, with its open and close, and the two are one group
    assert list(zip(events["tid"].tolist(), assigned["phase"].tolist())) == (
        [(1001, 1), (1002, 2)] + [(1001, 1), (1002, 2)] * 4 + [(1001, 1), (1002, 2)])
    assert rows(table, "tid", *MAIN, "rewrite") == [
        {"tid": 1001, "phase": 1, "operation": "write", "pattern": "sequential", "stride": 0,
         "record_size": 4096, "bytes": 16384, "ops": 4, "rewrite": False},
        {"tid": 1002, "phase": 2, "operation": "write", "pattern": "sequential", "stride": 0,
         "record_size": 4096, "bytes": 16384, "ops": 4, "rewrite": False}]
    assert groups.assign(table).tolist() == [1, 1]


def test_random_mix_of_reads_and_writes_is_one_mixed_phase():
    # GIVEN one thread doing what fio randrw (rwmixread=70) does: 14 preads and 6 pwrites of a
    # record at random records of a 1 MiB file, the directions alternating
    mix = [("R", 17), ("R", 203), ("W", 88), ("R", 5), ("R", 142), ("R", 61), ("W", 230), ("R", 9),
           ("W", 177), ("R", 96), ("R", 34), ("R", 251), ("W", 120), ("R", 72), ("R", 199), ("W", 3),
           ("R", 158), ("R", 45), ("R", 214), ("W", 110)]
    calls = Calls().open(F, O_RDWR, size=1 << 20)
    for direction, record in mix:
        (calls.pread if direction == "R" else calls.pwrite)(REC, record * REC)
    events = calls.close().frame()

    # WHEN the phases are rebuilt
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events, assigned)

    # THEN it is one mixed phase, 70 % reads, not a dozen tiny ones
    assert assigned["phase"].tolist() == [1] * 22
    assert assigned["operation"].tolist() == [""] + ["mixed"] * 20 + [""]
    assert rows(table, *MAIN, "read_fraction", "name") == [
        {"phase": 1, "operation": "mixed", "pattern": "random", "stride": 0, "record_size": 4096,
         "bytes": 81920, "ops": 20, "read_fraction": 0.7, "name": "mixed read/write (random)"}]


def test_write_then_reads_and_rewrites_in_separate_opens():
    # GIVEN five open-close spans of 4 records each on one file:
    # 1 write (O_TRUNC), 2 read, 3 read again, 4 write after a truncating open, 5 write again
    calls = Calls()
    for operation, flags in (("write", O_WRONLY | O_CREAT | O_TRUNC), ("read", O_RDONLY), ("read", O_RDONLY),
                             ("write", O_WRONLY | O_TRUNC), ("write", O_WRONLY)):
        calls.open(F, flags)
        for _ in range(4):
            (calls.read if operation == "read" else calls.write)(REC)
        calls.close()
    events = calls.frame()

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN the first read is no re-read (nothing was read before), the second one is;
    # the write after O_TRUNC is no re-write (the file started again), the write after it is
    assert rows(table, "phase", "operation", "bytes", "ops", "reread", "rewrite") == [
        {"phase": 1, "operation": "write", "bytes": 16384, "ops": 4, "reread": False, "rewrite": False},
        {"phase": 2, "operation": "read", "bytes": 16384, "ops": 4, "reread": False, "rewrite": False},
        {"phase": 3, "operation": "read", "bytes": 16384, "ops": 4, "reread": True, "rewrite": False},
        {"phase": 4, "operation": "write", "bytes": 16384, "ops": 4, "reread": False, "rewrite": False},
        {"phase": 5, "operation": "write", "bytes": 16384, "ops": 4, "reread": False, "rewrite": True}]


def test_one_open_for_the_whole_run_writes_then_reads():
    # GIVEN fio's way with one open: 8 sequential writes, an fsync, lseek(0), 8 sequential reads, close
    calls = Calls().open(F, O_RDWR | O_CREAT | O_TRUNC)
    for _ in range(8):
        calls.write(REC)
    calls.fsync().lseek(0)
    for _ in range(8):
        calls.read(REC)
    events = calls.close().frame()

    # WHEN the phases are rebuilt
    table = stream_table.of_frame(events)

    # THEN a write phase then a read phase; the fsync and lseek after the writes belong to the
    # write phase, the close after the reads to the read phase
    assert phase_of_each_call(events) == (
        [("openat", 1)] + [("write", 1)] * 8 + [("fsync", 1), ("lseek", 1)] + [("read", 2)] * 8 + [("close", 2)])
    assert rows(table, *MAIN, "fsyncs", "name") == [
        {"phase": 1, "operation": "write", "pattern": "sequential", "stride": 0, "record_size": 4096,
         "bytes": 32768, "ops": 8, "fsyncs": 1, "name": "sequential write"},
        {"phase": 2, "operation": "read", "pattern": "sequential", "stride": 0, "record_size": 4096,
         "bytes": 32768, "ops": 8, "fsyncs": 0, "name": "sequential read"}]


def test_the_timed_fsync_is_the_first_after_the_last_write_not_a_later_clean_up():
    # GIVEN writes, the fsync a benchmark times (IOzone -e), then an untimed clean-up fsync
    # 30 ms later, as IOzone does before it closes
    events = (Calls().open("/data/f", O_WRONLY | O_CREAT | O_TRUNC)
              .write(4096).write(4096)
              .fsync(latency=20_000_000)
              .gap(30_000_000).fsync(latency=1_000)
              .close().frame())
    # WHEN the phase table is built
    row = stream_table.of_frame(events).iloc[0]
    # THEN the +fsync window ends with the first fsync, the +close one with the close
    first_fsync, close = events[events["syscall"] == "fsync"].iloc[0], events.iloc[-1]
    assert row["sync_end_ns"] == first_fsync["start_ns"] + first_fsync["latency_ns"]
    assert row["close_end_ns"] == close["start_ns"] + close["latency_ns"]
