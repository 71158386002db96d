"""export --perfetto on traces written by the collector's own TraceWriter from call tables made
call by call (tests/support/synthetic.py): the file is read back with Perfetto's own message
definitions (tests/support/perfetto_trace.py, no iowitness code) and every call of the table is
one slice on its thread's track, with its fd, offset, bytes and latency; slices nest on every
track; the file is the same whatever the size of the blocks it was written in."""

from __future__ import annotations

import random

import numpy as np
import pytest

from iowitness.reporters import perfetto, perfetto_wire
from tests.support import perfetto_trace
from tests.support.cli import iowitness
from tests.support.synthetic import O_CREAT, O_RDWR, O_WRONLY, Calls
from tests.unit.test_stream_export import write_trace


def _calls() -> Calls:
    c = (Calls().process(1000).open("/data/a", O_WRONLY | O_CREAT)
         .write(4096).write(4096).pwrite(100, offset=1 << 40).fsync(latency=50_000).close())
    # a second thread of the same process on another file, overlapping the first in time
    c.thread(1001).at(1_000_002_500).open("/data/b", O_RDWR | O_CREAT).pwrite(8192, 0).pread(8192, 0, ret=-5)
    # asynchronous requests of one thread overlap each other: they need lanes of their own
    c.request("aio_write", 4096, 0, latency=30_000)
    c.request("aio_write", 4096, 4096, latency=30_000, at=c.now + 1_000)
    c.request("aio_write", 4096, 8192, latency=5_000, at=c.now + 1_000)
    c.close()
    return c


def _export(tmp_path, frame, name="t", block_rows=None):
    trace = tmp_path / f"{name}.iwt"
    write_trace(trace, frame)
    out = tmp_path / f"{name}.perfetto-trace"
    if block_rows is None:
        done = iowitness("export", str(trace), "--perfetto", str(out))
        assert done.returncode == 0, done.stderr
    else:
        from iowitness.commands import _reading
        from iowitness.outputfile import Output

        with _reading.trace_of(str(trace)) as t:
            perfetto.write(str(trace), t, Output(str(out)), block_rows=block_rows)
    return out


def test_every_call_is_one_slice_on_its_threads_track(tmp_path):
    # GIVEN a trace of two threads, one with overlapping asynchronous requests
    frame = _calls().frame()
    # WHEN it is exported and read back with Perfetto's definitions
    decoded = perfetto_trace.read(_export(tmp_path, frame))
    # THEN it is well formed: descriptors before use, every slice closed on its own track
    assert decoded.errors == []
    calls = [s for s in decoded.slices if decoded.thread_of(s.track) is not None]
    assert len(calls) == len(frame)
    # and each call of the table is a slice with its thread, name, time, latency and arguments
    got = sorted((decoded.thread_of(s.track), s.ts, s.name, s.dur, s.args["fd"], s.args.get("offset", -1),
                  s.args["bytes"]) for s in calls)
    want = sorted(zip(frame["tid"], frame["start_ns"], frame["syscall"].astype(str), frame["latency_ns"],
                      frame["fd"], frame["offset"], frame["ret"]))
    assert got == [tuple(int(x) if not isinstance(x, str) else x for x in row) for row in want]
    assert {s.args["path"] for s in calls} == {"/data/a", "/data/b"}
    assert any(s.args["bytes"] == -5 for s in calls)            # an error as the kernel returned it
    assert any(s.args.get("offset") == 1 << 40 for s in calls)  # an offset past 32 bits
    # the overlapping requests went to child tracks of their thread, one slice per track at a time
    lanes = {s.track for s in calls if s.name == "aio_write"}
    assert len(lanes) == 3 and all(decoded.thread_of(t) == 1001 for t in lanes)
    assert all(s.depth == 0 for s in calls)


def test_phases_and_throughput_counters(tmp_path):
    frame = _calls().frame()
    decoded = perfetto_trace.read(_export(tmp_path, frame))
    # THEN the phases are slices on tracks named "phases", one per phase of the report
    phases = [s for s in decoded.slices if decoded.track_name(s.track).startswith("phases")]
    report = iowitness("report", str(tmp_path / "t.iwt"), "--json")
    import json
    doc = json.loads(report.stdout)
    assert sorted(s.args["phase"] for s in phases) == sorted(p["phase"] for p in doc["phases"])
    # and the write counter's rate times its bin sums to the bytes the table's writes moved
    names = {u: t["name"] for u, t in decoded.tracks.items()}
    written = next(u for u, n in names.items() if n == "syscall write B/s")
    total = sum(v for _, v in decoded.counters[written]) * perfetto.BIN_NS // 1_000_000_000
    writes = frame[frame["syscall"].isin(["write", "pwrite64", "aio_write"]) & (frame["ret"] > 0)]
    assert total == int(writes["ret"].sum())
    assert decoded.counters[written][-1][1] == 0   # it falls back to 0 after the last write


def test_the_file_does_not_depend_on_the_blocks(tmp_path):
    frame = _calls().frame()
    whole = perfetto_trace.read(_export(tmp_path, frame, "whole", block_rows=1 << 20))
    # GIVEN the same trace written a block of 1, then 3 rows at a time
    for rows in (1, 3):
        pieces = perfetto_trace.read(_export(tmp_path, frame, f"b{rows}", block_rows=rows))
        # THEN the same slices come out (interned names come in other packets, so the bytes differ)
        assert sorted((s.track, s.ts, s.dur, s.name) for s in pieces.slices) == \
            sorted((s.track, s.ts, s.dur, s.name) for s in whole.slices)
    assert len(whole.slices) > len(frame)


def test_varints_match_protobufs_own_encoding():
    pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2", reason="perfetto not installed")
    rng = random.Random(7)
    values = [0, 1, 127, 128, 300, -1, -5, 2**31, 2**40 + 3, 2**63 - 1, -(2**63)] + \
        [rng.randrange(-(2**63), 2**63) for _ in range(200)]
    # GIVEN int64 values, negative ones included, encoded column-wise as DebugAnnotation.int_value
    col = perfetto_wire.field_varint(4, np.array(values, np.int64))
    for k, v in enumerate(values):
        mine = col.row(k)
        # THEN each is the bytes protobuf writes for the same field
        assert mine == pb.DebugAnnotation(int_value=v).SerializeToString()


def test_one_trace_alone(tmp_path):
    frame = _calls().frame()
    trace = tmp_path / "t.iwt"
    write_trace(trace, frame)
    done = iowitness("export", str(trace), str(trace), "--perfetto", str(tmp_path / "x"), check=False)
    assert done.returncode == 2 and "--perfetto exports one trace" in done.stderr
    assert "Traceback" not in done.stderr
