"""The .iwt trace format: round trip, crash safety, refusals, and export (collector/format/traceformat.py, tracewriter.py, tracereader.py; analysis/read/run.py)."""

import json
import os
import re
import signal
import struct
import subprocess
import sys
import threading
from collections import Counter

import numpy as np
import pytest
import zstandard

from iowitness.analysis.read.run import export_parquet, load
from iowitness.collector.format import codec
from iowitness.collector.format.traceformat import CHUNK, describe_layout, names_lost_text
from iowitness.collector.format.tracewriter import TraceWriter, chunk_head, file_header
from iowitness.errors import BadTrace, OutputError
from iowitness.probes.layout import layout

OP = {name: number for number, name in layout().names("iow_op", "IOW_OP_").items()}
KIND = {name: number for number, name in layout().names("iow_meta_kind", "IOW_META_").items()}
SDA1 = (8 << 20) | 1          # kernel encoding of device 8:1
NVME = (259 << 20) | 3        # and of 259:3


def events(*rows):
    """Event records from dicts of field values; `op` may be a syscall name; the rest is 0."""
    records = np.zeros(len(rows), layout().event)
    for record, row in zip(records, rows):
        for field, value in row.items():
            record[field] = OP[value] if field == "op" and isinstance(value, str) else value
    return records


def fact(kind, **fields):
    """One meta record; text fields are given as str and stored NUL-terminated."""
    record = np.zeros(1, layout().meta)
    record["kind"] = KIND[kind]
    for field, value in fields.items():
        if isinstance(value, str):
            encoded = np.frombuffer(value.encode(), np.uint8)
            record[field][0, :len(encoded)] = encoded
        else:
            record[field] = value
    return record


CALLS = [
    {"start_ns": 300, "latency_ns": 7, "op": "pread64", "dev": SDA1, "ino": 12, "offset": 4096,
     "requested": 4096, "ret": 4096, "tgid": 41, "tid": 42, "fd": 3},
    {"start_ns": 100, "latency_ns": 5, "op": "openat", "dev": SDA1, "ino": 12, "offset": -1,
     "ret": 3, "tgid": 41, "tid": 41, "fd": 3, "flags": 0o2},
    {"start_ns": 300, "latency_ns": 9, "op": "write", "dev": NVME, "ino": 77, "offset": 0,
     "requested": 512, "ret": -28, "tgid": 41, "tid": 43, "fd": 4},
]


def hand_written(version, chunks):
    """A trace file's bytes of one format version: its header, then these (kind, payload)
    chunks, framed by the writer's own functions."""
    return file_header(version) + b"".join(chunk_head(kind, payload, version) + payload for kind, payload in chunks)


def chunk_offsets(data):
    """(offset, kind, payload length) of each chunk of a trace file."""
    found, at = [], 16
    while at < len(data):
        kind, _, length = CHUNK.unpack_from(data, at)
        found.append((at, kind, length))
        at += CHUNK.size + length
    return found


def write_trace(path, *event_batches, facts=(), start=None, end=None, counters=(), output=()):
    """A trace of these chunks; with end=None it is closed without END, as after a crash."""
    writer = TraceWriter(path, start if start is not None else {"command": ["bench"]})
    for batch in event_batches:
        writer.write_events(events(*batch))
    for record in facts:
        writer.write_facts(record)
    for stream, data in output:
        writer.write_output(stream, data)
    for counter in counters:
        writer.write_counters(counter)
    if end is None:
        writer.abort()
    else:
        writer.close(end)
    return writer


def test_round_trip_keeps_events_facts_output_and_counters(tmp_path):
    # GIVEN a trace with two event batches, a file fact, output on both streams (one character
    # split across two chunks) and counters
    path = tmp_path / "run.iwt"
    said = "débit: 12 MB/s\n".encode()
    write_trace(path, CALLS[:2], CALLS[2:],
                facts=[fact("file", dev=SDA1, ino=12, path="/data/f", tgid=41, fd=3, dirfd=-100,
                            s_magic=0xEF53, comm="bench", ts_ns=99)],
                output=[("stdout", said[:2]), ("stdout", said[2:]), ("stderr", b"warn\n")],
                counters=[{"lost_events": 9, "lost_meta": 9, "events": 1},
                          {"lost_events": 2, "lost_meta": 1, "events": len(CALLS)}],
                start={"command": ["bench", "-x"]}, end={"exit_code": 0})

    # WHEN it is loaded
    trace = load(path)

    # THEN every record comes back, sorted by start time, ties kept in written order
    expected = sorted(CALLS, key=lambda row: row["start_ns"])
    got = trace.events
    assert list(got["start_ns"]) == [row["start_ns"] for row in expected]
    assert list(got["syscall"]) == [row["op"] for row in expected]
    assert list(got["ret"]) == [row["ret"] for row in expected]
    assert list(got["offset"]) == [row["offset"] for row in expected]
    assert list(got["end_ns"]) == [row["start_ns"] + row["latency_ns"] for row in expected]
    assert "pad0" not in got.columns
    assert len(trace.raw_events()) == len(CALLS)
    # AND the output, the last counters, and the metadata of START and END are all there
    assert trace.output == {"stdout": said.decode(), "stderr": "warn\n"}
    assert trace.counters == {"lost_events": 2, "lost_meta": 1, "events": len(CALLS)}
    assert trace.lost == 2   # the fact lost is a name, not a call: said apart
    assert "1 file-open and process record lost" in names_lost_text(trace.counters)
    assert trace.meta["command"] == ["bench", "-x"] and trace.meta["exit_code"] == 0
    assert trace.meta["complete"] is True and trace.meta["truncated_bytes"] == 0
    assert trace.meta["path"] == str(path)
    assert trace.files.loc[0, "comm"] == "bench" and trace.files.loc[0, "s_magic"] == 0xEF53


def test_device_is_shown_as_major_minor_of_the_kernel_encoding(tmp_path):
    # GIVEN events on two devices
    path = tmp_path / "run.iwt"
    write_trace(path, CALLS, end={})

    # WHEN loaded
    got = load(path).events

    # THEN each reads as MAJOR:MINOR, major = dev >> 20
    assert dict(zip(got["dev"], got["device"])) == {SDA1: "8:1", NVME: "259:3"}


def test_paths_come_from_file_facts_and_start_targets(tmp_path):
    # GIVEN a target registered before tracing, and file facts that name the same file twice
    path = tmp_path / "run.iwt"
    targets = [{"dev": NVME, "ino": 77, "path": "/mnt/nvme/out"}]
    facts = [fact("file", dev=SDA1, ino=12, path="/data/f", ts_ns=1),
             fact("file", dev=SDA1, ino=12, path="/data/hardlink-to-f", ts_ns=2),
             fact("file", dev=NVME, ino=77, path="/mnt/nvme/out", ts_ns=3)]
    write_trace(path, CALLS, [{"start_ns": 1, "op": "read", "dev": SDA1, "ino": 999}],
                facts=facts, start={"targets": targets}, end={})

    # WHEN loaded
    trace = load(path)

    # THEN a file with one name has it; an unknown file has none
    paths = {(row.dev, row.ino): row.path for row in trace.events.itertuples()}
    assert paths[(NVME, 77)] == "/mnt/nvme/out"
    assert paths[(SDA1, 999)] != paths[(SDA1, 999)]   # NaN
    # AND a (dev, ino) opened under several names takes the last name before each event
    # (an inode number reused by a new file, or a hard link)
    assert paths[(SDA1, 12)] == "/data/hardlink-to-f"
    assert list(trace.files["source"]) == ["target", "open", "open", "open"]


def test_an_inode_number_reused_by_another_file_is_named_by_time(tmp_path):
    # GIVEN inode 12 opened as /a at t=10, then (after /a was deleted) as /b at t=20
    path = tmp_path / "run.iwt"
    facts = [fact("file", dev=SDA1, ino=12, path="/a", ts_ns=10),
             fact("file", dev=SDA1, ino=12, path="/b", ts_ns=20)]
    calls = [{"start_ns": t, "op": "write", "dev": SDA1, "ino": 12, "ret": 1} for t in (11, 15, 21, 30)]
    write_trace(path, calls, facts=facts, end={})
    # WHEN loaded, THEN each write is named after the file open at its time
    assert list(load(path).events["path"].astype(str)) == ["/a", "/a", "/b", "/b"]


def test_processes_come_from_fork_and_exec_facts(tmp_path):
    # GIVEN a fork then an exec of the child, written out of time order
    path = tmp_path / "run.iwt"
    write_trace(path, facts=[fact("exec", tgid=51, comm="dd", path="/usr/bin/dd", ts_ns=20),
                             fact("fork", tgid=51, parent_tgid=50, comm="sh", ts_ns=10)], end={})

    # WHEN loaded
    processes = load(path).processes

    # THEN both are listed in time order, with their kind
    assert list(processes["kind"]) == ["fork", "exec"]
    assert list(processes["parent_tgid"]) == [50, 0]
    assert list(processes["path"]) == ["", "/usr/bin/dd"]


def test_write_events_takes_raw_record_bytes_as_the_ring_buffer_gives_them(tmp_path):
    # GIVEN records handed over as bytes
    path = tmp_path / "run.iwt"
    writer = TraceWriter(path, {})
    writer.write_events(events(*CALLS).tobytes())
    writer.close({})

    # WHEN loaded THEN they are the same records
    assert sorted(load(path).events["start_ns"]) == sorted(row["start_ns"] for row in CALLS)


def test_cut_inside_the_last_chunk_keeps_every_earlier_chunk(tmp_path):
    # GIVEN a trace whose last chunk is cut in the middle, as a crash mid-write leaves it
    path = tmp_path / "run.iwt"
    writer = TraceWriter(path, {})
    writer.write_events(events(*CALLS[:2]))
    writer.flush()
    good = writer.bytes_written
    writer.write_events(events(*CALLS[2:]))
    writer.flush()
    second = writer.bytes_written
    writer.close({"exit_code": 0})
    cut = good + (second - good) // 2   # inside the second batch's chunk
    path.write_bytes(path.read_bytes()[:cut])

    # WHEN loaded
    trace = load(path)

    # THEN the first batch is all there, and the damage is reported, not raised
    assert sorted(trace.events["start_ns"]) == sorted(row["start_ns"] for row in CALLS[:2])
    assert trace.meta["complete"] is False
    assert trace.meta["truncated_bytes"] == cut - good


def test_show_and_report_say_how_much_of_a_damaged_trace_was_left_out(tmp_path, capsys):
    # GIVEN a trace whose last 40 bytes are cut off
    from iowitness import cli
    path = tmp_path / "run.iwt"
    write_trace(path, CALLS[:2], CALLS[2:], end={"exit_code": 0})
    path.write_bytes(path.read_bytes()[:-40])
    unread = load(path).meta["truncated_bytes"]
    assert unread > 40   # the whole torn chunk is left out, not only the missing bytes
    # WHEN it is shown and reported
    for command in ("show", "report"):
        assert cli.main([command, str(path)]) == 0
        out = capsys.readouterr().out
        # THEN each says, with the number, that the end of the file could not be read
        assert f"the last {unread:,} bytes of the file could not be read" in out, command


def test_crc_failure_mid_file_stops_reading_there(tmp_path):
    # GIVEN three event chunks, the second one with a flipped byte
    path = tmp_path / "run.iwt"
    writer = TraceWriter(path, {})
    writer.write_events(events(CALLS[0]))
    writer.flush()
    first_end = writer.bytes_written
    writer.write_events(events(CALLS[1]))
    writer.flush()
    writer.write_events(events(CALLS[2]))
    writer.close({})
    data = bytearray(path.read_bytes())
    data[first_end + 16 + 3] ^= 0xFF
    path.write_bytes(bytes(data))

    # WHEN loaded
    trace = load(path)

    # THEN only what came before the bad chunk is kept, and the rest is reported
    assert list(trace.events["start_ns"]) == [CALLS[0]["start_ns"]]
    assert trace.meta["complete"] is False
    assert trace.meta["truncated_bytes"] == len(data) - first_end


KILLED_WRITER = """
import sys, time
import numpy as np
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.probes.layout import layout
writer = TraceWriter(sys.argv[1], {"command": ["killed"]})
flushed = np.zeros(3, layout().event)
flushed["start_ns"] = [10, 20, 30]
writer.write_events(flushed)
writer.flush()
buffered = np.zeros(2, layout().event)
buffered["start_ns"] = [40, 50]
writer.write_events(buffered)
print("flushed", flush=True)
time.sleep(60)
"""


def test_writer_killed_with_sigkill_leaves_exactly_the_flushed_events(tmp_path):
    # GIVEN a writer process that flushed three events and holds two more in its buffer
    path = tmp_path / "run.iwt"
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(path)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "flushed"
    finally:
        # WHEN it is killed without a chance to clean up
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()

    # THEN the trace holds exactly the flushed events and says it is incomplete
    trace = load(path)
    assert list(trace.events["start_ns"]) == [10, 20, 30]
    assert trace.meta["command"] == ["killed"]
    assert trace.meta["complete"] is False


def test_missing_file_is_refused_by_name(tmp_path):
    # GIVEN a path where nothing is
    path = tmp_path / "nothing.iwt"
    # WHEN loaded THEN BadTrace names it
    with pytest.raises(BadTrace, match=f"^no such trace: {path}$"):
        load(path)


def test_file_with_wrong_magic_is_refused(tmp_path):
    # GIVEN a file that is not a trace
    path = tmp_path / "notes.iwt"
    path.write_bytes(b"just some text, long enough for a header\n")
    # WHEN loaded THEN BadTrace says what is wrong
    with pytest.raises(BadTrace, match="is not an iowitness trace"):
        load(path)


def test_unknown_format_version_is_refused_naming_both_versions(tmp_path):
    # GIVEN a trace whose header claims a format version from the future
    path = tmp_path / "run.iwt"
    write_trace(path, CALLS, end={})
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, 8, 7)
    path.write_bytes(bytes(data))
    # WHEN loaded THEN BadTrace names the file's version and the one this iowitness reads
    with pytest.raises(BadTrace, match="format version 7, but iowitness .* reads versions 1, 2 and 3 only"):
        load(path)


def test_broken_start_chunk_is_refused(tmp_path):
    # GIVEN a trace whose START chunk has a good CRC but no layout
    path = tmp_path / "run.iwt"
    path.write_bytes(hand_written(3, [(1, json.dumps({"command": ["x"]}).encode())]))
    # WHEN loaded THEN BadTrace says START is broken
    with pytest.raises(BadTrace, match="broken START chunk"):
        load(path)


def test_trace_cut_before_its_start_chunk_is_refused(tmp_path):
    # GIVEN a trace that ends inside its START chunk
    path = tmp_path / "run.iwt"
    write_trace(path, CALLS, end={})
    path.write_bytes(path.read_bytes()[:40])
    # WHEN loaded THEN BadTrace says START is missing
    with pytest.raises(BadTrace, match="no readable START chunk"):
        load(path)


def test_a_trace_is_read_with_the_layout_it_describes_not_the_current_one(tmp_path):
    # GIVEN a trace written by hand, as docs/trace-format.md describes, by an older writer
    # whose event record orders its fields otherwise and has a field today's layout lacks
    today = layout().event
    names = [n for n in reversed(today.names) if n != "pad0"] + ["old"]
    formats = [today.fields[n][0] for n in names[:-1]] + [np.dtype("<u4")]
    offsets = list(np.cumsum([0] + [f.itemsize for f in formats]))
    old_event = np.dtype({"names": names, "formats": formats, "offsets": [int(o) for o in offsets[:-1]],
                          "itemsize": int(offsets[-1]) + 4})
    def describe(dtype):
        return {"itemsize": dtype.itemsize, "fields": [
            [name, sub.base.str, offset, list(sub.shape)]
            for name, (sub, offset) in ((n, dtype.fields[n][:2]) for n in dtype.names)]}

    start = {"layout": {"version": 0, "event": describe(old_event), "meta": describe(layout().meta),
                        "ops": {"1": "read"}, "meta_kinds": {"1": "file"}}}
    records = np.zeros(2, old_event)
    records["start_ns"], records["op"], records["old"], records["dev"] = [5, 6], 1, [70, 71], SDA1
    records["requested"] = [4096, 512]
    path = tmp_path / "old.iwt"
    path.write_bytes(hand_written(1, [(1, json.dumps(start).encode()), (2, records.tobytes()), (6, b"{}")]))

    # WHEN loaded
    trace = load(path)

    # THEN the columns are those of the trace's own layout
    assert list(trace.events["old"]) == [70, 71]
    assert list(trace.events["syscall"]) == ["read", "read"]
    assert list(trace.events["requested"]) == [4096, 512]
    assert trace.meta["complete"] is True


def test_parquet_export_is_read_by_duckdb_as_is(tmp_path):
    # GIVEN a trace of a few syscalls
    path, out = tmp_path / "run.iwt", tmp_path / "run.parquet"
    rows = CALLS + [{"start_ns": 400 + k, "op": "read", "dev": SDA1, "ino": 12,
                     "requested": 100 * k} for k in range(5)]
    write_trace(path, rows, facts=[fact("file", dev=SDA1, ino=12, path="/data/f")],
                start={"command": ["bench"]}, end={"exit_code": 3})

    # WHEN it is exported to Parquet and queried with DuckDB
    export_parquet(load(path), out)
    duckdb = pytest.importorskip("duckdb")
    per_syscall = duckdb.sql(
        f"select syscall, count(*), sum(requested) from '{out}' group by 1").fetchall()
    per_path = duckdb.sql(f"select path, count(*) from '{out}' group by 1").fetchall()

    # THEN counts and sums match the records, paths included
    calls, asked = Counter(), Counter()
    for row in rows:
        calls[row["op"]] += 1
        asked[row["op"]] += row.get("requested", 0)
    assert {name: (n, int(total)) for name, n, total in per_syscall} == \
        {name: (calls[name], asked[name]) for name in calls}
    assert dict(per_path) == {"/data/f": sum(1 for row in rows if row["ino"] == 12), None: 1}
    # AND the trace metadata travels in the file's key-value metadata
    import pyarrow.parquet as pq
    meta = json.loads(pq.read_schema(out).metadata[b"iowitness"])
    assert meta["exit_code"] == 3 and meta["command"] == ["bench"]


def test_unwritable_places_raise_output_error_with_advice(tmp_path):
    # GIVEN a directory that does not exist
    missing = tmp_path / "no" / "such" / "dir"
    # WHEN a trace or an export is written there THEN OutputError says what to do
    with pytest.raises(OutputError, match=r"cannot write trace .*: no such directory .*choose another place with -o$"):
        TraceWriter(missing / "run.iwt", {})
    path = tmp_path / "run.iwt"
    write_trace(path, CALLS, end={})
    with pytest.raises(OutputError, match=r"^cannot write .*run\.parquet"):
        export_parquet(load(path), missing / "run.parquet")


def test_chunks_written_from_several_threads_never_interleave(tmp_path):
    # GIVEN a writer shared by threads, as the collector's ring reader and output pumps share it
    path = tmp_path / "run.iwt"
    writer = TraceWriter(path, {})
    batches, batch_size = 50, 40

    def pump(thread):
        for batch in range(batches):
            first = (thread * batches + batch) * batch_size
            writer.write_events(events(*({"start_ns": first + k, "op": "write"}
                                         for k in range(batch_size))))
            writer.write_output("stdout", b"x" * (batch + 1))

    # WHEN four threads write at once
    threads = [threading.Thread(target=pump, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close({})

    # THEN every record and every output byte is read back from an undamaged file
    trace = load(path)
    assert trace.meta["complete"] is True and trace.meta["truncated_bytes"] == 0
    assert list(trace.events["start_ns"]) == list(range(len(threads) * batches * batch_size))
    assert len(trace.output["stdout"]) == len(threads) * sum(range(1, batches + 1))


def test_a_trace_without_events_exports_typed_columns(tmp_path):
    # GIVEN a trace that saw no syscall
    path, out = tmp_path / "run.iwt", tmp_path / "run.parquet"
    write_trace(path, end={"exit_code": 0})

    # WHEN exported
    export_parquet(load(path), out)

    # THEN DuckDB still sees the names as text, and finds no rows
    duckdb = pytest.importorskip("duckdb")
    types = dict(duckdb.sql(f"select column_name, column_type from (describe '{out}')").fetchall())
    assert types["syscall"] == types["path"] == types["device"] == "VARCHAR"
    assert duckdb.sql(f"select count(*) from '{out}'").fetchall() == [(0,)]


# --- format 2 (compressed record chunks) and format 1 (raw records) side by side ---

def fio_like(rows, first_ns=10**12):
    """Sequential 4 KiB preads of one thread, with jitter in start times and latencies."""
    rng = np.random.default_rng(rows)
    records = np.zeros(rows, layout().event)
    records["start_ns"] = first_ns + np.cumsum(rng.integers(2500, 4000, rows))
    records["latency_ns"] = rng.integers(900, 3000, rows)
    records["offset"] = np.arange(rows) * 4096
    records["requested"] = records["ret"] = 4096
    records["tgid"] = records["tid"] = 4242
    records["ino"], records["dev"], records["fd"], records["op"] = 12, SDA1, 3, OP["pread64"]
    return records




def test_the_writer_writes_format_3_with_event_chunks_under_16_bytes_per_event(tmp_path):
    # GIVEN 50,000 events written in batches as the collector drains them
    path = tmp_path / "run.iwt"
    records = fio_like(50_000)
    writer = TraceWriter(path, {})
    for at in range(0, len(records), 16384):
        writer.write_events(records[at:at + 16384])
    writer.close({})

    # WHEN loaded
    trace = load(path)

    # THEN the file says format 3, its event chunks take under 16 bytes per event
    assert struct.unpack_from("<I", path.read_bytes(), 8) == (3,)
    assert trace.stored_bytes["events"] / len(records) < 16
    assert sum(trace.stored_bytes.values()) == path.stat().st_size
    # AND every byte of every record comes back
    assert trace.raw_events().tobytes() == records.tobytes()


def test_a_format_1_trace_still_loads_record_for_record(tmp_path):
    # GIVEN a format 1 trace, records stored as they are, as the first iowitness wrote them
    events_in = fio_like(300)
    facts_in = fact("file", dev=SDA1, ino=12, path="/data/f", ts_ns=5)
    start = {"command": ["fio"], "layout": describe_layout(layout())}
    path = tmp_path / "v1.iwt"
    path.write_bytes(hand_written(1, [(1, json.dumps(start).encode()),
                                      (2, events_in[:100].tobytes()), (3, facts_in.tobytes()),
                                      (2, events_in[100:].tobytes()), (6, b'{"exit_code": 0}')]))

    # WHEN loaded
    trace = load(path)

    # THEN it reads exactly as before: every record, the file's path, complete
    assert trace.raw_events().tobytes() == events_in.tobytes()
    assert set(trace.events["path"].astype(str)) == {"/data/f"}
    assert trace.meta["complete"] is True and trace.meta["exit_code"] == 0


@pytest.mark.parametrize("version", [1, 2])
def test_a_trace_cut_in_its_second_event_chunk_keeps_the_first_in_both_formats(tmp_path, version):
    # GIVEN a format 1 or format 2 trace of two event chunks, cut inside the second
    first, second = fio_like(200), fio_like(200, first_ns=2 * 10**12)
    path = tmp_path / "run.iwt"
    if version == 1:
        start = {"layout": describe_layout(layout())}
        path.write_bytes(hand_written(1, [(1, json.dumps(start).encode()),
                                          (2, first.tobytes()), (2, second.tobytes())]))
    else:
        writer = TraceWriter(path, {})
        writer.write_events(first)
        writer.flush()                  # small batches wait for a flush: one chunk each
        writer.write_events(second)
        writer.abort()
    data = path.read_bytes()
    at, _, length = chunk_offsets(data)[-1]
    path.write_bytes(data[:at + 16 + length // 2])

    # WHEN loaded
    trace = load(path)

    # THEN the first chunk is all there and the cut is reported
    assert trace.raw_events().tobytes() == first.tobytes()
    assert trace.meta["complete"] is False
    assert trace.meta["truncated_bytes"] == 16 + length // 2


def test_a_format_2_chunk_with_a_good_crc_that_does_not_decode_ends_the_reading(tmp_path):
    # GIVEN three event chunks, output and END, where the second event chunk's block is damaged
    # and its CRC recomputed (what a writer bug would leave; a torn write fails the CRC)
    path = tmp_path / "run.iwt"
    batches = [fio_like(100, first_ns=k * 10**12) for k in (1, 2, 3)]
    writer = TraceWriter(path, {})
    for batch in batches:
        writer.write_events(batch)
        writer.flush()                  # small batches wait for a flush: one chunk each
    writer.write_output("stdout", b"written after the damage\n")
    writer.close({"exit_code": 0})
    data = bytearray(path.read_bytes())
    at, kind, length = [c for c in chunk_offsets(data) if c[1] == 2][1]
    payload = bytearray(data[at + 16:at + 16 + length])
    payload[0] += 1                                   # one record more than the block holds
    data[at:at + 16 + length] = chunk_head(kind, payload) + payload
    path.write_bytes(bytes(data))

    # WHEN loaded
    trace = load(path)

    # THEN what came before the damaged chunk is kept, nothing after it, and the rest is reported
    assert trace.raw_events().tobytes() == batches[0].tobytes()
    assert trace.output["stdout"] == ""
    assert trace.meta["complete"] is False
    assert trace.meta["truncated_bytes"] == len(data) - at


def test_a_format_2_trace_written_by_hand_from_the_docs(tmp_path):
    # GIVEN a format 2 trace built from docs/trace-format.md alone: an EVENTS block of two
    # records, start_ns as DELTA (first 1000, then a step of -6 in one signed byte), ret as PLAIN
    # (2-byte numbers, sign-extended: 4096 and -28, as byte planes), op as CONST, the rest ZERO
    event = layout().event
    names = sorted(event.names, key=lambda n: event.fields[n][1])
    ZERO, CONST, PLAIN, DELTA = 0, 2, 3, 4
    columns, body = [], b""
    for name in names:
        if name == "start_ns":
            columns.append(struct.pack("<BBQ", DELTA, 1, 1000))
            body += struct.pack("<b", -6)
        elif name == "ret":
            columns.append(struct.pack("<BBQ", PLAIN, 2, 0))
            body += bytes([4096 & 0xFF, (-28) & 0xFF, 4096 >> 8, ((-28) >> 8) & 0xFF])
        elif name == "op":
            columns.append(struct.pack("<BBQ", CONST, 0, OP["pwrite64"]))
        else:
            columns.append(struct.pack("<BBQ", ZERO, 0, 0))
    block = (struct.pack("<IIHBB", 2, event.itemsize, len(names), 1, 0)
             + zstandard.ZstdCompressor().compress(b"".join(columns) + body))
    start = {"layout": describe_layout(layout())}
    path = tmp_path / "by-hand.iwt"
    path.write_bytes(hand_written(2, [(1, json.dumps(start).encode()), (2, block), (6, b"{}")]))

    # WHEN loaded
    got = load(path).events

    # THEN the records are as the page says: steps are signed (1000, then 1000 - 6)
    assert list(got["start_ns"]) == [994, 1000]         # sorted by start time
    assert list(got["ret"]) == [-28, 4096]
    assert set(got["syscall"]) == {"pwrite64"} and set(got["fd"]) == {0}


def test_a_new_record_chunk_kind_uses_the_same_codec_and_old_readers_skip_it(tmp_path):
    # GIVEN a record kind this reader does not know (as another part of iowitness may add),
    # written through the generic record chunk writer
    request = np.dtype([("sector", "<u8"), ("bytes", "<u4"), ("rwbs", "u1", (8,))])
    rows = np.zeros(40, request)
    rows["sector"] = np.arange(40) * 8
    rows["bytes"] = 4096
    path = tmp_path / "run.iwt"
    writer = TraceWriter(path, {})
    writer.write_events(fio_like(10))
    writer.write_records(99, rows, request)
    writer.close({})

    # WHEN loaded THEN the unknown kind is skipped, and the rest reads
    trace = load(path)
    assert len(trace.raw_events()) == 10 and trace.meta["complete"] is True
    # AND its payload is a codec block that gives the rows back
    data = path.read_bytes()
    at, _, length = [c for c in chunk_offsets(data) if c[1] == 99][0]
    assert codec.decode(data[at + 16:at + 16 + length], request).tobytes() == rows.tobytes()


def test_small_batches_wait_for_the_flush_and_go_out_as_one_chunk(tmp_path):
    # GIVEN a slow benchmark's drains: 60 batches of 5 events, then a flush, then 2 more
    path = tmp_path / "run.iwt"
    records = fio_like(310)
    writer = TraceWriter(path, {})
    for at in range(0, 300, 5):
        writer.write_events(records[at:at + 5])
    writer.flush()
    flushed = writer.bytes_written
    writer.write_events(records[300:305])
    writer.write_events(records[305:])
    # WHEN the writer is closed
    writer.close({})

    # THEN the 60 batches made one chunk, the 2 after the flush another, and nothing is lost
    kinds = [kind for _, kind, _ in chunk_offsets(path.read_bytes())]
    assert kinds.count(2) == 2 and flushed > 0
    assert load(path).raw_events().tobytes() == records.tobytes()


def test_a_large_batch_after_small_ones_goes_out_with_them_in_order(tmp_path):
    # GIVEN small batches waiting for the flush, then a batch of GATHER_ROWS or more, given as
    # a strided view (every other record of a larger array), then one more small batch
    from iowitness.collector.format.traceformat import GATHER_ROWS
    path = tmp_path / "run.iwt"
    records = fio_like(2 * GATHER_ROWS + 40)
    large = records[20:20 + 2 * GATHER_ROWS:2]
    writer = TraceWriter(path, {})
    writer.write_events(records[:10])
    writer.write_events(records[10:20])
    writer.write_events(large)
    writer.write_events(records[-5:])
    writer.close({})
    # THEN the first three batches made one chunk, the last its own, and every record is there
    # in the order written
    kinds = [kind for _, kind, _ in chunk_offsets(path.read_bytes())]
    assert kinds.count(2) == 2
    expected = np.concatenate([records[:20], large, records[-5:]])
    assert load(path).raw_events().tobytes() == expected.tobytes()


def test_runs_the_kernel_skipped_count_as_lost_and_the_report_says_why(tmp_path):
    # GIVEN a trace whose counters say the kernel skipped 3 runs of the programs (recursion) and
    # the event area overflowed twice
    path = tmp_path / "run.iwt"
    write_trace(path, CALLS, counters=[{"lost_events": 2, "lost_meta": 0, "missed_runs": 3,
                                        "events": len(CALLS)}], end={"exit_code": 0})
    # WHEN it is loaded and reported
    trace = load(path)
    from iowitness.reporters import tables
    # THEN both kinds of loss are counted, and the report names the skipped runs
    assert trace.lost == 2 + 3
    warnings = tables.warnings(trace)
    assert any(w.startswith("5 events were lost") for w in warnings)
    assert any(w.startswith("the kernel skipped 3 runs of iowitness's programs") for w in warnings)


def test_a_killed_run_is_counted_by_what_its_trace_holds_not_by_its_last_counters(tmp_path):
    # GIVEN a run killed after its last COUNTERS chunk: that chunk counted 1 event and 2 lost
    # events, the events written after it bring the trace to 3
    path = tmp_path / "killed.iwt"
    writer = TraceWriter(path, {"command": ["bench"]})
    writer.write_events(events(CALLS[1]))
    writer.write_counters({"events": 1, "lost_events": 2, "lost_meta": 0, "missed_runs": 0})
    writer.write_events(events(CALLS[0], CALLS[2]))
    writer.abort()
    # WHEN it is loaded and its observer line is written
    from iowitness.analysis.measure import observer
    trace = load(path)
    # THEN the line counts the 3 events the trace holds, and the one loss total
    assert trace.event_count == 3 and trace.lost == 2
    assert observer.cost(trace)["calls"] == 3
    assert observer.line(trace).startswith("observer  3 events, 2 lost")


@pytest.mark.parametrize("attached, why", [
    ("str", "START.attached is not a list"),
    ([{"pid": "x"}], "START.attached[0].pid is not an integer from 0 to 2^32 - 1"),
    ([{"comm": "fio"}], "START.attached[0] has no pid"),
    ([{"pid": 1, "age_s": "y"}], "START.attached[0].age_s is not a finite number"),
    ([{"pid": 1, "cmdline": 7}], "START.attached[0].cmdline is not a list"),
])
def test_a_start_chunk_with_a_broken_attached_list_is_refused_in_one_line(tmp_path, attached, why):
    # GIVEN a trace whose START says something impossible of the processes attached to
    path = tmp_path / "odd.iwt"
    writer = TraceWriter(path, {"mode": "attach", "attached": attached})
    writer.close({})
    # WHEN it is read THEN it is refused, naming what is wrong, as any broken START
    with pytest.raises(BadTrace, match=re.escape(why)):
        load(path)


def test_an_attached_list_reads_back_as_written(tmp_path):
    path = tmp_path / "ok.iwt"
    attached = [{"pid": 42, "comm": "fio", "cmdline": ["fio", "--name=a"], "cwd": "/w", "age_s": 1.5}]
    writer = TraceWriter(path, {"mode": "attach", "attached": attached})
    writer.close({})
    trace = load(path)
    assert trace.meta["attached"] == attached and list(trace.processes["comm"]) == ["fio"]


def test_an_open_on_a_reused_inode_number_is_named_after_the_file_it_opened(tmp_path):
    # GIVEN inode 12 opened as /a by process 7 (fd 4) at t=10; after /a was deleted, process 8
    # creates /b: its openat runs from t=100 to t=150 and returns fd 5, and its record of fd 5
    # (made at the open's exit) comes at t=151; process 9 then reopens /b (no new record)
    path = tmp_path / "run.iwt"
    facts = [fact("file", dev=SDA1, ino=12, path="/a", ts_ns=10, tgid=7, fd=4),
             fact("file", dev=SDA1, ino=12, path="/b", ts_ns=151, tgid=8, fd=5)]
    calls = [{"start_ns": 9, "latency_ns": 1, "op": "openat", "dev": SDA1, "ino": 12, "ret": 4, "tgid": 7},
             {"start_ns": 100, "latency_ns": 50, "op": "openat", "dev": SDA1, "ino": 12, "ret": 5, "tgid": 8},
             {"start_ns": 160, "op": "write", "dev": SDA1, "ino": 12, "ret": 1, "tgid": 8},
             {"start_ns": 170, "latency_ns": 5, "op": "openat", "dev": SDA1, "ino": 12, "ret": 3, "tgid": 9}]
    write_trace(path, calls, facts=facts, end={})
    # WHEN loaded, THEN the creating open is /b's, not /a's (before: /a, the last name before
    # its start), and the reopen, which records nothing, keeps the name before it
    assert list(load(path).events["path"].astype(str)) == ["/a", "/b", "/b", "/b"]
