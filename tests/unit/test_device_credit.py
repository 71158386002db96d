"""Device bytes credited to phases once each (analysis/measure/device_credit.py and its use in
analysis/measure/device.py), on block records and calls written by hand: every expected figure is
counted from the records, or by a plain loop over them that follows the rule word by word."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.measure import device, device_checks, device_credit
from iowitness.analysis.measure.device_credit import credit
from iowitness.analysis.phasing import stream_assign, stream_table
from iowitness.probes.layout import layout
from tests.support.synthetic import DEV, O_DIRECT, O_RDWR, O_WRONLY, START_NS, Calls

MS = 1_000_000
KIB = 1024
MIB = 1 << 20
KWORKER = b"kworker/u4:1"


def _block(rows) -> np.ndarray:
    """rows: (complete_ns, bytes, op, tid) on device DEV; tids from 1000 are threads of the traced
    process 1000, 0 is a kworker (write-back, the journal), any other tid another program."""
    block = np.zeros(len(rows), dtype=layout().structs["iow_block"])
    for i, (complete, size, op, tid) in enumerate(rows):
        block[i]["start_ns"] = block[i]["issue_ns"] = complete - 100_000
        block[i]["complete_ns"], block[i]["bytes"], block[i]["op"], block[i]["dev"] = complete, size, op, DEV
        block[i]["tgid"], block[i]["tid"] = 1000 if tid >= 1000 else tid, tid
        if tid == 0:
            block[i]["comm"][:len(KWORKER)] = np.frombuffer(KWORKER, dtype=np.uint8)
    return block


def _view(events: pd.DataFrame, block: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(phases, device table) of a trace made of these calls and block records."""
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events, assigned)
    trace = SimpleNamespace(events=events, block=block, offcpu=None, samples=[], processes=None,
                            meta={"files": [], "device_view": {"devices": [{"dev": DEV, "name": "loop0"}]}})
    facts = device.DeviceFacts(table, trace)
    facts.add(events, assigned)
    return table, device.from_facts(trace, table, facts)


def _threads_reading(count: int, reads: int, flags: int = O_DIRECT) -> pd.DataFrame:
    """`count` threads of one process (tids 1001...) each reading 64 KiB every ms, all at once."""
    calls = Calls()
    for k in range(count):
        calls.thread(1001 + k).at(START_NS + k * 1000).open("/data/f", flags)
    for i in range(reads):
        for k in range(count):
            calls.thread(1001 + k).at(START_NS + (i + 1) * MS + k * 1000).read(64 * KIB, latency=500)
    for k in range(count):
        calls.thread(1001 + k).at(START_NS + (reads + 2) * MS + k * 1000).close()
    return calls.frame()


def test_sixteen_direct_reading_threads_are_credited_what_each_submitted_and_the_group_the_device_total():
    # GIVEN 16 threads reading 64 KiB with O_DIRECT every ms for 20 ms, each read one request
    # submitted by its own thread, completing while all 16 windows are open
    events = _threads_reading(16, 20)
    block = _block([(START_NS + (i + 1) * MS + k * 1000 + 400, 64 * KIB, 0, 1001 + k)
                    for i in range(20) for k in range(16)])
    # WHEN the device view is built
    phases, table = _view(events, block)
    # THEN each phase holds its own 20 requests, and the 16 add up to what the device read
    assert len(phases) == 16
    assert list(table["device_bytes"]) == [20 * 64 * KIB] * 16
    assert list(table["calls_device_bytes"]) == [20 * 64 * KIB] * 16
    assert table["device_bytes"].sum() == int(block["bytes"].sum())
    assert list(table["device_ratio"]) == [1.0] * 16
    # and the claim about the group says the device read the bytes once, not 16 times
    claim = Claim(source="fio", test="r", direction="read", value=1e9, unit="B/s", printed="", bytes_per_s=1e9)
    reasons = device_checks.claim_reasons(claim, phases, table)
    total = int(block["bytes"].sum())
    assert reasons == [f"the device answered: {total:,} bytes read, {total:,} from the device (1.00×)"]
    # while the iostat -x figures stay those of each whole window, as iostat shows them: every
    # window holds nearly all 16 threads' requests (it opens a microsecond after the one before)
    assert table.at[0, "read_bytes"] == total and (table["read_bytes"] > 15 * 20 * 64 * KIB).all()


def test_buffered_threads_sharing_a_file_are_credited_the_one_read_of_it():
    # GIVEN 4 threads reading the same 1.25 MiB through the page cache at once (5 MiB of calls):
    # the device reads it once, by whichever thread met each page first, plus a kworker's 4 KiB
    events = _threads_reading(4, 20, flags=0)
    block = _block([(START_NS + (i + 1) * MS + 400, 256 * KIB, 0, 1001 + i % 2) for i in range(5)]
                   + [(START_NS + 10 * MS, 4 * KIB, 0, 0)])
    phases, table = _view(events, block)
    # THEN the submitters hold their requests, the kworker's is split four ways, and the group's
    # reason counts the device's 1.25 MiB once: partly from the page cache
    assert list(table["device_bytes"]) == [3 * 256 * KIB + KIB, 2 * 256 * KIB + KIB, KIB, KIB]
    claim = Claim(source="fio", test="r", direction="read", value=1e9, unit="B/s", printed="", bytes_per_s=1e9)
    [reason] = device_checks.claim_reasons(claim, phases, table)
    assert reason == f"partly from the page cache: {4 * 20 * 64 * KIB:,} bytes read, {1284 * KIB:,} from the device (25 %)"


def test_a_phase_alone_in_its_window_keeps_every_own_request_of_its_direction():
    # GIVEN one thread reading 64 KiB every ms for 20 ms, and reads on its device by the thread,
    # a kworker and an unknown submitter inside its calls, by another program (tgid 99), a
    # write (not a read phase's), a read after its calls but before its close, and one after it
    events = _threads_reading(1, 20)
    block = _block([(START_NS + 2 * MS, 64 * KIB, 0, 1001), (START_NS + 5 * MS, 4 * KIB, 0, 0),
                    (START_NS + 6 * MS, 8 * KIB, 0, 0), (START_NS + 7 * MS, 128 * KIB, 0, 99),
                    (START_NS + 8 * MS, 16 * KIB, 1, 1001), (START_NS + 21_900_000, 32 * KIB, 0, 1001),
                    (START_NS + 40 * MS, MIB, 0, 1001)])
    block["tgid"][2], block["comm"][2] = 0, 0
    # WHEN the device view is built
    _, table = _view(events, block)
    # THEN it holds, as before credits were shared, the benchmark's reads of its window; over its
    # calls alone, those before the read at 21.9 ms (after its last call ended)
    [row] = table.to_dict("records")
    assert row["device_bytes"] == (64 + 4 + 8 + 32) * KIB
    assert row["calls_device_bytes"] == (64 + 4 + 8) * KIB
    assert row["other_bytes"] == 128 * KIB and row["read_bytes"] == (64 + 4 + 8 + 128 + 32) * KIB


def test_requests_of_no_phase_thread_are_split_evenly_among_the_windows_holding_them():
    # GIVEN windows [0, 10), [5, 15), [5, 20) and 1200-byte requests from a kworker at 2, 7, 12, 17 and 25
    complete = np.array([2, 7, 12, 17, 25])
    shares = credit(complete, np.full(5, 1200), np.zeros(5, np.int64), np.array([0, 5, 5]), np.array([10, 15, 20]),
                    np.array([0, 1, 2]), np.array([1, 2, 3]))
    # THEN at 7 each of the three gets 400, at 12 the last two 600, at 25 nobody: 4,800 bytes in all
    assert list(shares) == [1200 + 400, 400 + 600, 400 + 600 + 1200]


def test_a_thread_of_two_windows_shares_its_request_with_its_own_phases_only():
    # GIVEN three windows holding t=5, thread 7 in the first two (one with thread 8 too), thread 9 in the third
    shares = credit(np.array([5]), np.array([900]), np.array([7]), np.array([0, 0, 0]), np.array([10, 10, 10]),
                    np.array([0, 1, 1, 2]), np.array([7, 7, 8, 9]))
    # THEN thread 7's request goes half to each of its phases, nothing to the third
    assert list(shares) == [450, 450, 0]


def test_a_read_phase_takes_no_writes_and_a_mixed_phase_takes_both():
    # GIVEN a read, a write and a mixed phase over the same 100 ms, and a kworker's 3,000-byte
    # read and 3,000-byte write inside
    phases = pd.DataFrame({"phase": [1, 2, 3], "operation": ["read", "write", "mixed"], "threads": [1, 1, 1],
                           "tid": [1, 2, 3]})
    block = _block([(START_NS + 50 * MS, 3000, 0, 0), (START_NS + 60 * MS, 3000, 1, 0)])
    requests = device.Requests.of(SimpleNamespace(block=block), DEV)
    lo, hi = np.full(3, START_NS), np.full(3, START_NS + 100 * MS)
    # WHEN credited
    shares = device_credit.credited(phases, {1: DEV, 2: DEV, 3: DEV}, {DEV: requests}, (np.arange(3), np.array([1, 2, 3])),
                              lo, hi)
    # THEN the read is halved between the read and mixed phases, the write between write and mixed
    assert list(shares) == [1500, 1500, 3000]


def test_credits_follow_the_rule_request_by_request_and_add_up_to_the_union_of_the_windows():
    # GIVEN random requests (some by unknown submitters) and random windows, some threads in several phases
    rng = np.random.default_rng(19)
    for _ in range(50):
        n, p = int(rng.integers(0, 60)), int(rng.integers(1, 8))
        complete = np.sort(rng.integers(0, 1000, n))
        size = rng.integers(1, 100_000, n)
        tid = rng.integers(0, 6, n)
        lo = rng.integers(0, 900, p)
        hi = lo + rng.integers(0, 400, p)
        pair_phase, pair_tid = rng.integers(0, p, 2 * p), rng.integers(1, 6, 2 * p)
        # WHEN credited
        shares = credit(complete, size, tid, lo, hi, pair_phase, pair_tid)
        # THEN each phase gets what a plain loop over the requests gives it
        expected = np.zeros(p)
        for t, s, who in zip(complete, size, tid):
            holding = [i for i in range(p) if lo[i] <= t < hi[i]]
            mine = [i for i in holding if who in pair_tid[pair_phase == i]]
            for i in mine or holding:
                expected[i] += s / len(mine or holding)
        assert shares == pytest.approx(expected)
        # and together they hold each request inside any window exactly once
        inside = [s for t, s in zip(complete, size) if any(lo[i] <= t < hi[i] for i in range(p))]
        assert shares.sum() == pytest.approx(sum(inside))


def _writers(count: int) -> pd.DataFrame:
    """`count` threads writing 1 MiB every ms for 4 ms through the page cache, all at once."""
    calls = Calls()
    for k in range(count):
        calls.thread(1001 + k).at(START_NS + k * 1000).open(f"/data/f{k}", O_WRONLY)
    for i in range(4):
        for k in range(count):
            calls.thread(1001 + k).at(START_NS + (i + 1) * MS + k * 1000).write(MIB, latency=500)
    for k in range(count):
        calls.thread(1001 + k).at(START_NS + 6 * MS + k * 1000).close()
    return calls.frame()


def test_concurrent_buffered_writers_share_the_write_back_once():
    # GIVEN two threads writing 4 MiB each through the page cache at once; a kworker writes
    # 2 MiB while both run and 6 MiB after
    block = _block([(START_NS + 3 * MS, 2 * MIB, 1, 0)] +
                   [(START_NS + (20 + i) * MS, MIB, 1, 0) for i in range(6)])
    _, table = _view(_writers(2), block)
    # THEN the 2 MiB inside is split, each phase has 3 MiB left dirty, each is paid 3 MiB of
    # write-back, and the device's 8 MiB are credited once between them
    assert list(table["device_bytes"]) == [MIB, MIB]
    assert list(table["dirty_bytes"]) == [3 * MIB, 3 * MIB]
    assert list(table["writeback_bytes"]) == [3 * MIB, 3 * MIB]
    assert int((table["device_bytes"] + table["writeback_bytes"]).sum()) == int(block["bytes"].sum())


def test_writes_inside_a_mixed_phases_window_are_its_own_not_an_earlier_phases_write_back():
    # GIVEN a buffered 4 MiB write phase (0-10 ms), then a mixed phase (40-60 ms) while the
    # device writes 2 MiB (at 50 ms), and 1 MiB more at 100 ms
    phases = pd.DataFrame({"phase": [1, 2], "operation": ["write", "mixed"], "O_DIRECT": [False, False],
                           "data_first_ns": [START_NS, START_NS + 40 * MS],
                           "data_last_ns": [START_NS + 10 * MS, START_NS + 60 * MS],
                           "sync_end_ns": [0, 0], "close_end_ns": [0, 0]})
    table = pd.DataFrame({"phase": [1, 2], "syscall_bytes": [4 * MIB, MIB], "device_bytes": [0, 2 * MIB]})
    block = _block([(START_NS + 50 * MS, 2 * MIB, 1, 0), (START_NS + 100 * MS, MIB, 1, 0)])
    req = device.Requests.of(SimpleNamespace(block=block), DEV)
    a, b = device._window(phases)
    # WHEN write-back is attributed
    device._writeback(table, phases, {1: DEV, 2: DEV}, {DEV: req}, a, b)
    # THEN the first phase is paid only the 1 MiB no phase holds
    assert list(table["writeback_bytes"]) == [MIB, 0]


def test_a_mixed_thread_on_one_file_is_credited_reads_and_writes():
    # GIVEN one thread alternating 64 KiB reads and writes on one file, and a read and a write of its own
    calls = Calls().open("/data/m", O_RDWR | O_DIRECT)
    for i in range(20):
        calls.at(START_NS + (i + 1) * MS).pread(64 * KIB, 0).pwrite(64 * KIB, 64 * KIB)
    events = calls.close().frame()
    block = _block([(START_NS + 3 * MS, 64 * KIB, 0, 1000), (START_NS + 4 * MS, 64 * KIB, 1, 1000)])
    phases, table = _view(events, block)
    # THEN its one mixed phase holds both
    assert list(phases["operation"]) == ["mixed"]
    assert list(table["device_bytes"]) == [128 * KIB]


def test_a_phase_of_several_threads_owns_what_any_of_them_submitted():
    # GIVEN phase 1 of thread 10 alone, and phase 2 whose calls come from threads 20 and 21
    phases = pd.DataFrame({"phase": [1, 2], "threads": [1, 2], "tid": [10, 20]})
    events = pd.DataFrame({"tid": np.array([10, 20, 21, 21, 30], dtype=np.uint32)})
    assigned = pd.DataFrame({"phase": [1, 2, 2, 2, -1]})
    # WHEN their threads are listed
    rows, tids = device_credit.phase_threads(phases, assigned, events)
    # THEN each phase (by row) has its own, a call of no phase adds none
    assert sorted(zip(rows.tolist(), tids.tolist())) == [(0, 10), (1, 20), (1, 21)]
