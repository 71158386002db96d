"""The block and off-CPU records' one pass (analysis/read/device_records.py) on a trace written by
hand, a record per chunk and out of time order, whose requests, flush sequences, libaio
completions and off-CPU stretches are known: read from its file block by block (blocks of 1
chunk, 7 chunks and all of them) and from the arrays of the trace loaded whole, it keeps what
each reader needs, and the device view made from it counts what the records hold."""

from __future__ import annotations

import numpy as np
import pytest

from iowitness.analysis.measure import block_views, device
from iowitness.analysis.phasing.aio_kernel import AIO_DONE
from iowitness.analysis.read import device_records, streamed
from iowitness.analysis.read.run import load
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.probes.layout import layout

MS = 1_000_000
T0 = 1000 * MS
DEV_A, DEV_B = 7 << 20, (7 << 20) | 1     # loop0, loop1
READ, WRITE, FLUSH = 0, 1, 2
KWORKER = b"kworker/1:2"

# (start ms, complete ms, bytes, op, dev, sector, tgid, tid, comm): in the order they are written
REQUESTS = [
    (30, 32, 4096, READ, DEV_A, 800, 10, 11, b"fio"),
    (0, 5, 8192, WRITE, DEV_A, 100, 10, 11, b"fio"),
    (1, 3, 65536, READ, DEV_B, 900, 99, 99, b"other"),
    # a journal commit on loop0: its data completion, the flush, then the same request again, no bytes left
    (10, 12, 1024, WRITE, DEV_A, 229396, 0, 0, KWORKER),
    (10, 13, 0, FLUSH, DEV_A, 0, 0, 0, KWORKER),
    (10, 14, 0, WRITE, DEV_A, 229396, 0, 0, KWORKER),
    # an empty PREFLUSH write: no data completion of its own, a write diskstats counts
    (20, 21, 0, WRITE, DEV_A, 555, 0, 0, KWORKER),
    # a zero-byte write starting when the commit did, at another sector: not the commit's end
    (10, 15, 0, WRITE, DEV_B, 7, 0, 0, KWORKER),
    (2, 5, 4096, READ, DEV_B, 901, 10, 12, b"fio"),
]
# the libaio completions (start ms, complete ms, offset, tid): not block requests
AIO = [(40, 41, 4096, 11), (40, 42, 0, 11), (39, 43, 8192, 12)]
# (off ms, on ms, tid, state), in the order written
OFFCPU = [(9, 11, 11, 1), (1, 2, 11, 2), (1, 3, 12, 0), (20, 21, 12, 1)]


def _block_records() -> np.ndarray:
    block = np.zeros(len(REQUESTS) + len(AIO), dtype=layout().structs["iow_block"])
    for i, (start, complete, size, op, dev, sector, tgid, tid, comm) in enumerate(REQUESTS):
        block[i]["start_ns"] = block[i]["issue_ns"] = T0 + start * MS
        block[i]["complete_ns"], block[i]["bytes"], block[i]["op"] = T0 + complete * MS, size, op
        block[i]["dev"], block[i]["sector"], block[i]["tgid"], block[i]["tid"] = dev, sector, tgid, tid
        block[i]["comm"][:len(comm)] = np.frombuffer(comm, dtype=np.uint8)
    for i, (start, complete, offset, tid) in enumerate(AIO, start=len(REQUESTS)):
        block[i]["start_ns"], block[i]["complete_ns"] = T0 + start * MS, T0 + complete * MS
        block[i]["sector"], block[i]["bytes"], block[i]["op"] = offset, 4096, AIO_DONE
        block[i]["dev"], block[i]["tgid"], block[i]["tid"] = DEV_A, 10, tid
    return block


def _offcpu_records() -> np.ndarray:
    off = np.zeros(len(OFFCPU), dtype=layout().structs["iow_offcpu"])
    for i, (lo, hi, tid, state) in enumerate(OFFCPU):
        off[i]["off_ns"], off[i]["on_ns"], off[i]["tgid"], off[i]["tid"], off[i]["state"] = \
            T0 + lo * MS, T0 + hi * MS, 10, tid, state
    return off


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("records") / "t.iwt"
    block, off = _block_records(), _offcpu_records()
    view = {"devices": [{"dev": DEV_A, "device": "7:0", "name": "loop0"},
                        {"dev": DEV_B, "device": "7:1", "name": "loop1"}], "offcpu": True}
    with TraceWriter(path, {"command": ["x"]}) as w:
        # a chunk per record, interleaved: the reader's blocks are whole chunks
        for i in range(max(len(block), len(off))):
            w.write_device(block[i:i + 1], off[i:i + 1])
            w.flush()
        w.close({"device_view": view})
    return path


def _sources(path):
    """(what, DeviceRecords) of the trace read from its file block by block, 1, 7 and all chunks
    at a time, and of it loaded whole."""
    for rows in (1, 7, 1 << 20):
        with streamed.open_trace(path) as trace:
            assert trace.block is None and trace.offcpu is None   # nothing read whole
            yield f"file, blocks of {rows}", trace, device_records.DeviceRecords(trace, block_rows=rows)
    loaded = load(path)
    yield "loaded", loaded, device_records.DeviceRecords(loaded)


def _ms(values) -> list[float]:
    return [(int(v) - T0) / MS for v in values]


def test_requests_are_kept_per_device_by_completion_each_once(trace_file):
    for what, _, records in _sources(trace_file):
        # GIVEN the trace WHEN its requests are read THEN each device's are in order of completion,
        # the commit's second completion left out, the empty PREFLUSH write and the other zero-byte write kept
        assert records.has_block and records.devices == [DEV_A, DEV_B], what
        a, b = records.requests(DEV_A), records.requests(DEV_B)
        assert _ms(a["complete_ns"]) == [5, 12, 13, 21, 32], what
        assert a["bytes"].tolist() == [8192, 1024, 0, 0, 4096], what
        assert a["op"].tolist() == [WRITE, WRITE, FLUSH, WRITE, READ], what
        assert a["kernel"].tolist() == [False, True, True, True, False], what
        assert a["tid"].tolist() == [11, 0, 0, 0, 11] and a["tgid"].tolist() == [10, 0, 0, 0, 10], what
        assert _ms(b["complete_ns"]) == [3, 5, 15] and b["tgid"].tolist() == [99, 10, 0], what
        assert _ms(b["start_ns"]) == [1, 2, 10] and _ms(b["issue_ns"]) == [1, 2, 10], what


def test_libaio_completions_are_apart_and_by_submission(trace_file):
    for what, _, records in _sources(trace_file):
        # WHEN the libaio completions are read THEN they are not requests, and come by start, then completion
        done = records.aio_done
        assert _ms(done["start_ns"]) == [39, 40, 40] and _ms(done["complete_ns"]) == [43, 41, 42], what
        assert done["sector"].tolist() == [8192, 4096, 0] and done["tid"].tolist() == [12, 11, 11], what
        assert sum(len(records.requests(d)["complete_ns"]) for d in records.devices) == 8, what


def test_off_cpu_stretches_are_by_thread_then_by_when_they_began(trace_file):
    for what, _, records in _sources(trace_file):
        off = records.offcpu
        if what == "loaded":
            # THEN a trace loaded whole gives its array as read: by off_ns, ties in the order written
            assert _ms(off["off_ns"]) == [1, 1, 9, 20] and off["tid"].tolist() == [11, 12, 11, 12], what
            continue
        # THEN read by blocks: thread by thread, each thread's by off_ns (what every reader takes of them)
        assert off["tid"].tolist() == [11, 11, 12, 12] and _ms(off["off_ns"]) == [1, 9, 1, 20], what
        assert _ms(off["on_ns"]) == [2, 11, 3, 21] and off["state"].tolist() == [2, 1, 0, 1], what


def test_the_listing_keeps_sector_name_and_file_order(trace_file):
    for what, trace, _ in _sources(trace_file):
        # WHEN every request is listed (show --block) THEN in completion order, ties in file order
        rows = block_views.requests(trace, None)
        assert _ms(rows["complete_ns"]) == [3, 5, 5, 12, 13, 15, 21, 32], what
        # the two completions at 5 ms: loop0's write is written before loop1's read
        assert rows["device"].tolist()[:3] == ["loop1", "loop0", "loop1"], what
        assert rows["sector"].tolist() == [900, 100, 901, 229396, 0, 7, 555, 800], what
        assert rows["comm"].tolist() == ["other", "fio", "fio", "kworker/1:2", "kworker/1:2", "kworker/1:2",
                                         "kworker/1:2", "fio"], what


def test_the_window_counts_what_the_records_hold(trace_file):
    for what, trace, records in _sources(trace_file):
        # WHEN loop0's figures are taken over 0..40 ms with process 10 traced
        req = device.Requests(records.requests(DEV_A), np.array([10], dtype=np.uint32))
        w = req.window(T0, T0 + 40 * MS)
        # THEN two data writes (8 KiB and the commit's 1 KiB) and the empty write, one read, all the benchmark's
        assert (w["writes"], w["write_bytes"], w["reads"], w["read_bytes"]) == (3, 9216, 1, 4096), what
        assert (w["own_write_bytes"], w["own_read_bytes"], w["other_bytes"]) == (9216, 4096, 0), what
        # in flight: 0-5, 10-12, 10-13 (the flush), 20-21, 30-32 ms: 11 ms covered, 13 ms summed
        assert w["util"] == pytest.approx(11 / 40) and w["aqu_sz"] == pytest.approx(13 / 40), what
        # and loop1's other program's read is not the benchmark's
        other = device.Requests(records.requests(DEV_B), np.array([10], dtype=np.uint32)).window(T0, T0 + 40 * MS)
        assert (other["read_bytes"], other["own_read_bytes"], other["other_bytes"]) == (69632, 4096, 65536), what


def test_a_reader_that_does_not_ask_for_blocks_still_gets_the_records_whole(trace_file):
    from iowitness.collector.format import tracestream

    # GIVEN the trace opened block by block as replay's plan opens it (device_blocks not asked)
    with tracestream.open_trace(trace_file) as stream:
        # THEN its BLOCK and OFFCPU records are decoded whole, sorted, and none is left in the file
        assert _ms(stream.data.block["complete_ns"]) == [3, 5, 5, 12, 13, 14, 15, 21, 32, 41, 42, 43]
        assert len(stream.data.offcpu) == len(OFFCPU) and stream.data.device_batches == {}
    # WHEN the analysis opens it THEN they are left in the file, a chunk per record here
    with tracestream.open_trace(trace_file, device_blocks=True) as stream:
        assert stream.data.block is None and stream.data.offcpu is None
        assert [sum(rows for _, _, rows in stream.data.device_batches[k]) for k in ("block", "offcpu")] == \
            [len(REQUESTS) + len(AIO), len(OFFCPU)]
        # and a block is decoded only when asked for
        only = list(tracestream.record_blocks(stream.data, "block", ["complete_ns"], block_rows=1, only={2, 5}))
        assert [b.number for b in only] == [2, 5] and _ms([b["complete_ns"][0] for b in only]) == [3, 14]
