"""The device view's arithmetic (analysis/measure/device.py) on block records written by hand, where
every expected figure follows from the records by simple counting."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.measure import device, device_checks
from iowitness.collector import blockdev
from iowitness.commands import _claims
from iowitness.errors import UsageError
from iowitness.probes.layout import layout

MS = 1_000_000
T0 = 1000 * MS


def _requests(rows) -> np.ndarray:
    """rows: (start_ms, complete_ms, bytes, op), on a clock that starts at T0 (0 means "unknown")."""
    block = np.zeros(len(rows), dtype=layout().structs["iow_block"])
    for i, (start, complete, size, op) in enumerate(rows):
        block[i]["start_ns"], block[i]["issue_ns"] = T0 + start * MS, T0 + start * MS
        block[i]["complete_ns"], block[i]["bytes"], block[i]["op"] = T0 + complete * MS, size, op
    return block


def _req(block: np.ndarray, traced: np.ndarray | None = None) -> device.Requests:
    """The device view's requests of hand-made records on device 0, as a trace's are read."""
    return device.Requests.of(SimpleNamespace(block=block), 0, traced)


def test_window_figures_are_iostat_x_over_the_window():
    # GIVEN two writes of 1 MiB, each 10 ms in flight, one after the other, and a read
    req = _req(_requests([(0, 10, 1 << 20, 1), (10, 20, 1 << 20, 1), (50, 52, 4096, 0)]))
    # WHEN figures are taken over 0..100 ms
    w = req.window(T0, T0 + 100 * MS)
    # THEN counts, bytes, awaits, queue depth and utilisation follow from the records
    assert (w["writes"], w["write_bytes"], w["reads"], w["read_bytes"]) == (2, 2 << 20, 1, 4096)
    assert w["w_await_ms"] == pytest.approx(10) and w["r_await_ms"] == pytest.approx(2)
    assert w["util"] == pytest.approx(0.22) and w["aqu_sz"] == pytest.approx(0.22)
    assert w["areq_bytes"] == pytest.approx(((2 << 20) + 4096) / 3)
    assert w["write_Bps"] == pytest.approx((2 << 20) / 0.1)


def test_a_flush_sequence_completing_its_request_again_is_not_a_second_request():
    # GIVEN what the kernel's block_rq_complete gave for one ext4 journal commit on a loop device
    # (seen in a real trace: the PREFLUSH|FUA write's data completes with its 1024 bytes, the
    # flushes are their own op, then blk-flush ends the same request again with 0 bytes left),
    # which /proc/diskstats counted as one write of 1024 bytes
    rows = [(0, 4, 0, 2), (0, 5, 1024, 1), (5, 7, 0, 2), (0, 7, 0, 1)]
    block = _requests(rows)
    block["start_ns"][:] = T0   # one request: the kernel's start time of all of them
    block["sector"][1] = block["sector"][3] = 229396   # the commit block's
    req = _req(block)
    # WHEN figures are taken over the commit
    w = req.window(T0, T0 + 10 * MS)
    # THEN it is one write of 1024 bytes, as diskstats says, and the flushes are no data requests
    assert (w["writes"], w["write_bytes"], w["reads"]) == (1, 1024, 0)


def test_an_empty_preflush_write_is_a_write_diskstats_counts():
    # GIVEN what vda gave for an empty PREFLUSH write: its flush, then its own completion with
    # no bytes and no data completion before it (diskstats counted one write for it)
    block = _requests([(0, 2, 0, 2), (0, 3, 0, 1)])
    block["sector"][0] = (1 << 64) - 1
    # WHEN counted THEN it is one write of no bytes
    w = _req(block).window(T0, T0 + 10 * MS)
    assert (w["writes"], w["write_bytes"]) == (1, 0)


def test_overlapping_requests_count_once_in_util_and_twice_in_queue_depth():
    req = _req(_requests([(0, 10, 4096, 1), (0, 10, 4096, 1), (5, 15, 4096, 1)]))
    w = req.window(T0, T0 + 20 * MS)
    assert w["util"] == pytest.approx(15 / 20)
    assert w["aqu_sz"] == pytest.approx(30 / 20)


def test_a_request_started_before_the_window_counts_only_its_part_inside():
    req = _req(_requests([(0, 30, 4096, 1)]))
    w = req.window(T0 + 20 * MS, T0 + 40 * MS)
    assert w["writes"] == 1 and w["util"] == pytest.approx(0.5)


def test_flushes_and_discards_are_neither_reads_nor_writes():
    assert list(device.is_write(np.array([0, 1, 2, 3, 5, 9], dtype=np.uint32))) == \
        [False, True, False, False, False, True]


def _claim(direction: str, rate: float) -> Claim:
    return Claim(source="spec", test="t", direction=direction, value=rate, unit="B/s", printed="",
                 bytes_per_s=rate)


def _rows(operation: str) -> pd.DataFrame:
    return pd.DataFrame({"phase": [1], "operation": [operation]})


def _table(**figures) -> pd.DataFrame:
    base = {"phase": 1, "device": "loop0", "syscall_bytes": 16 << 20, "device_bytes": 0, "calls_device_bytes": 0,
            "writeback_bytes": 0, "writeback_s": np.nan}
    return pd.DataFrame([{**base, **figures}])


def test_a_read_without_device_bytes_was_answered_by_the_page_cache():
    reasons = device_checks.claim_reasons(_claim("read", 1e9), _rows("read"), _table())
    assert reasons == [f"the page cache answered: {16 << 20:,} bytes read, 0 from the device"]


def test_buffered_writes_flushed_later_are_named():
    table = _table(device_bytes=4096, writeback_bytes=16 << 20, writeback_s=1.5)
    reasons = device_checks.claim_reasons(_claim("write", 1e9), _rows("write"), table)
    assert reasons[0].startswith("writes absorbed by the page cache, flushed after the phase: ")
    assert "written back in the 1.500 s after the phase" in reasons[0]


def test_writes_flushed_by_the_phases_own_fsync_after_the_timed_calls_are_not_the_devices():
    # GIVEN 16 MiB written in 10 ms of calls, all on the device only during the fsync after them
    table = _table(device_bytes=16 << 20, calls_device_bytes=0)
    # WHEN the benchmark timed the calls alone, THEN the page cache absorbed them; with the fsync, the device
    calls = device_checks.claim_reasons(_claim("write", 1e9), _rows("write"), table, window="calls")
    synced = device_checks.claim_reasons(_claim("write", 1e9), _rows("write"), table, window="+fsync")
    assert calls[0].startswith("writes absorbed by the page cache, flushed after the phase")
    assert "by the phase's own fsync/close after its calls" in calls[0]
    assert synced[0].startswith("the writes reached the device inside the phase")


def test_ceiling_reasons():
    ceiling = {"read": 100e6, "write": 100e6, "source": "given"}
    over = device_checks.claim_reasons(_claim("write", 598e6), _rows("write"), None, ceiling)
    near = device_checks.claim_reasons(_claim("write", 97e6), _rows("write"), None, ceiling)
    assert over[0].startswith("claim exceeds the device's measured ceiling") and "598 %" in over[0]
    assert near[0].startswith("device-bound: claim within 3.0 % of the ceiling")
    assert device_checks.claim_reasons(_claim("write", 50e6), _rows("write"), None, ceiling) == []


def test_the_ceiling_applies_to_a_rate_of_calls_through_its_record_size():
    # GIVEN a write claim in ops/s on 4 KiB records, and a device that writes 100 MB/s
    ceiling = {"read": 100e6, "write": 100e6, "source": "given"}
    claim = Claim(source="spec", test="t", direction="write", value=146_000, unit="ops/s", printed="",
                  ops_per_s=146_000)
    rows = pd.DataFrame({"phase": [1], "operation": ["write"], "record_size": [4096]})
    # WHEN it is set against the ceiling THEN ops x record size (598 MB/s) exceeds it, said so
    [reason] = device_checks.claim_reasons(claim, rows, None, ceiling)
    assert reason.startswith("claim exceeds the device's measured ceiling") and "146,000 ops/s × 4.0 KiB" in reason


def test_union_of_intervals():
    assert device._union(np.array([0, 5, 20]), np.array([10, 8, 30])) == 20
    assert device._union(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == 0


def test_device_ceiling_option():
    assert _claims.rate("8MiB/s") == 8 << 20 and _claims.rate("200MB/s") == 200e6
    assert _claims.device_ceiling(None, "read=1GB/s,write=8MiB/s")["write"] == 8 << 20
    with pytest.raises(UsageError):
        _claims.device_ceiling(None, "fast")
    with pytest.raises(UsageError):
        _claims.device_ceiling(None, "up=8MiB/s")


def test_diskstats_lines_are_read_by_name_and_idle_devices_skipped():
    text = ("   7       0 loop0 10 0 80 5 20 0 160 9 0 12 14 0 0 0 0 0 0\n"
            "   7       1 loop1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
            " 259       0 loop0p1 4 0 32 1 2 0 16 1 0 2 2\n")
    stats = blockdev.read_diskstats(text)
    assert set(stats) == {"7:0", "259:0"}
    assert stats["7:0"][blockdev.DISKSTATS_FIELDS.index("sectors_written")] == 160
    assert len(stats["259:0"]) == len(blockdev.DISKSTATS_FIELDS)   # an older kernel's shorter line is padded


def test_block_offcpu_and_samples_round_trip_through_the_trace(tmp_path):
    from iowitness.analysis.read.run import load
    from iowitness.collector.format.tracewriter import TraceWriter

    # GIVEN a trace with two BLOCK chunks out of time order, an OFFCPU chunk and two SAMPLES
    block = _requests([(10, 20, 4096, 1), (0, 5, 8192, 0)])
    offcpu = np.zeros(1, dtype=layout().structs["iow_offcpu"])
    offcpu["off_ns"], offcpu["on_ns"], offcpu["tid"], offcpu["state"] = 5, 9, 42, 2
    with TraceWriter(tmp_path / "t.iwt", {"command": ["x"]}) as w:
        w.write_device(block[:1], offcpu)
        w.write_device(block[1:], offcpu[:0])
        w.write_sample({"ts_ns": 1, "diskstats": {"7:0": [0] * 17}, "cpu": [1] * 8})
        w.write_sample({"ts_ns": 2, "diskstats": {}, "cpu": [2] * 8})
        w.close({})
    # WHEN it is loaded
    t = load(tmp_path / "t.iwt")
    # THEN the records come back whole, in completion order, and the samples in file order
    assert list(t.block["bytes"]) == [8192, 4096]
    assert t.offcpu[0]["tid"] == 42 and t.offcpu[0]["state"] == 2
    assert [s["ts_ns"] for s in t.samples] == [1, 2]


def test_write_back_is_paid_first_in_first_out_and_only_after_the_phase():
    # GIVEN two buffered write phases of 4 MiB each (0-10 ms, 100-110 ms) and device writes of
    # 1 MiB at 50 ms (after the first) and 6 MiB at 200-230 ms (after both)
    phases = pd.DataFrame({"phase": [1, 2], "operation": ["write", "write"], "O_DIRECT": [False, False],
                           "data_first_ns": [T0, T0 + 100 * MS], "data_last_ns": [T0 + 10 * MS, T0 + 110 * MS],
                           "sync_end_ns": [0, 0], "close_end_ns": [0, 0]})
    table = pd.DataFrame({"phase": [1, 2], "syscall_bytes": [4 << 20, 4 << 20], "device_bytes": [0, 0]})
    req = _req(_requests([(45, 50, 1 << 20, 1), (200, 210, 2 << 20, 1), (210, 220, 2 << 20, 1),
                                     (220, 230, 2 << 20, 1)]))
    a, b = device._window(phases)
    # WHEN write-back is attributed
    device._writeback(table, phases, {1: 7, 2: 7}, {7: req}, a, b)
    # THEN the first phase gets 1 + 3 MiB (ending at 220 ms), the second the 3 MiB left
    assert list(table["writeback_bytes"]) == [4 << 20, 3 << 20]
    assert table.at[0, "writeback_s"] == pytest.approx(0.210)


def test_a_write_phase_on_another_device_does_not_hide_this_devices_write_back():
    # GIVEN a buffered 4 MiB write phase on device 7 (0-10 ms), then a write phase on device 8
    # (40-60 ms) while device 7 writes the first phase's 4 MiB back (45-55 ms)
    phases = pd.DataFrame({"phase": [1, 2], "operation": ["write", "write"], "O_DIRECT": [False, False],
                           "data_first_ns": [T0, T0 + 40 * MS], "data_last_ns": [T0 + 10 * MS, T0 + 60 * MS],
                           "sync_end_ns": [0, 0], "close_end_ns": [0, 0]})
    table = pd.DataFrame({"phase": [1, 2], "syscall_bytes": [4 << 20, 1 << 20], "device_bytes": [0, 0]})
    req = _req(_requests([(45, 50, 2 << 20, 1), (50, 55, 2 << 20, 1)]))
    a, b = device._window(phases)
    # WHEN write-back is attributed (device 8 has no requests)
    device._writeback(table, phases, {1: 7, 2: 8}, {7: req, 8: _req(_requests([]))}, a, b)
    # THEN device 7's writes during the other device's phase are the first phase's write-back
    assert table.at[0, "writeback_bytes"] == 4 << 20


def test_requests_of_other_programs_on_the_device_are_not_the_benchmarks():
    # GIVEN reads by the benchmark (tgid 10), by a kworker (write-back) and by another program (tgid 99)
    block = _requests([(0, 1, 4096, 0), (0, 1, 8192, 1), (0, 1, 65536, 0)])
    block["tgid"] = [10, 7, 99]
    block["comm"][1, :7] = np.frombuffer(b"kworker", dtype=np.uint8)
    # WHEN figures are taken with the benchmark as the traced set
    w = _req(block, np.array([10], dtype=np.uint32)).window(T0, T0 + 2 * MS)
    # THEN iostat's totals hold all three, the benchmark's own exclude the other program's
    assert (w["read_bytes"], w["own_read_bytes"], w["own_write_bytes"], w["other_bytes"]) == (69632, 4096, 8192, 65536)


def test_a_trace_cut_short_names_its_devices_by_number():
    from types import SimpleNamespace

    block = _requests([(0, 1, 4096, 1)])
    block["dev"] = 7 << 20 | 3
    # GIVEN BLOCK records but no END (no device_view), THEN the devices are named by number
    cut = SimpleNamespace(meta={}, block=block)
    assert device.block_dev_names(cut) == {7 << 20 | 3: "7:3"}
    assert device.no_device_lines(cut)[0].startswith("device view from an incomplete trace")
