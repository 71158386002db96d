"""Damaged and crafted copies of small real-ish traces, and the judge of what iowitness made of
each: tests/unit/test_trace_fuzz.py runs a few hundred, scripts/fuzz_traces.py as many as asked.

The base traces are written by the real writer (collector/tracewriter.TraceWriter): a dd run
with everything a full trace holds (events from tests/support/synthetic.py, facts, output with
dd's claim, the device view, samples, counters, END), and a --summary run. A mutant is one of:

  truncate     the file cut anywhere
  flip         one bit flipped anywhere
  head         one bit flipped in a chunk head (kind, CRC or length), CRC left as it was
  field        a chunk head's kind or length set to another value, CRC left as it was
  json         a JSON chunk (START, END, COUNTERS, SAMPLES) with one value made odd (a string
               for a number, a huge number, NaN, a deep nest, ...), its CRC made good again
  layout       START's record description with a field given an odd type, shape, offset or size
  block        a record block whose head claims other rows, record size or columns, CRC good
  bomb         a record block whose zstd frame declares or holds far more than its rows
  summary      a SUMMARY chunk with an odd description or sizes, CRC good
  kind         a chunk renamed to a kind no reader knows, CRC good (a newer writer's chunk)

The judge reads each mutant with the reader, and runs the commands on it in this process
(iowitness.cli.main, output captured, a time limit per command). The rules it checks:
no traceback, an exit code docs/exit-codes.md documents for the command, and no silent loss: a
mutant that reads with fewer records, output or samples than its original must say so
(incomplete, bytes left unread, chunks skipped, or an old format's unchecked heads).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import signal
import struct
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import zstandard

from iowitness import cli
from iowitness.collector.aggregates import record_dtype
from iowitness.collector.format import codec, traceschema
from iowitness.collector.format.traceformat import (
    BLOCK,
    CHUNK,
    END,
    EVENTS,
    FACTS,
    HEADER,
    KIND_NAMES,
    OFFCPU,
    START,
    SUMMARY,
    SUMMARY_HEAD,
)
from iowitness.collector.format.tracereader import read
from iowitness.collector.format.tracewriter import TraceWriter, chunk_head
from iowitness.errors import BadTrace
from iowitness.probes.layout import layout
from tests.support.synthetic import DEV, O_CREAT, O_TRUNC, O_WRONLY, Calls, event_records

# what each command may exit with (docs/exit-codes.md): check also 1 (a claim disagrees or
# cannot be judged) and 2 (the output holds no claim)
EXITS = {"show": {0, 6}, "report": {0, 6}, "check": {0, 1, 2, 6}, "export": {0, 2, 6}}   # 2: a --summary trace, or one with no event, has none to export
COMMAND_LIMIT_S = 20

DD_OUTPUT = (b"200+0 records in\n200+0 records out\n"
             b"13107200 bytes (13 MB, 12 MiB) copied, 0.0146066 s, 897 MB/s\n")


# --- the base traces ------------------------------------------------------------------------

def _text(value: str, size: int) -> np.ndarray:
    out = np.zeros(size, np.uint8)
    raw = value.encode()[:size - 1]
    out[:len(raw)] = np.frombuffer(raw, np.uint8)
    return out


def dd_events() -> np.ndarray:
    calls = Calls(tgid=4242, latency=60_000).open("/data/f", O_WRONLY | O_CREAT | O_TRUNC, latency=20_000)
    for _ in range(200):
        calls.write(65536)
    frame = calls.fsync(latency=900_000).close().frame()
    return event_records(frame)


def write_dd_trace(path: Path, events: np.ndarray | None = None) -> None:
    """A trace of `dd bs=64k count=200 conv=fsync` as the collector writes one, flushed in three
    parts; `events`: other event records instead of dd's (its clock, file and device stay)."""
    lay = layout()
    dd = dd_events()
    first, ino = int(dd["start_ns"][0]), int(dd["ino"][0])
    end_ns = int(dd["start_ns"][-1] + dd["latency_ns"][-1]) + 10**6
    events = dd if events is None else events
    clock = {"monotonic_ns": first - 10**6, "realtime_ns": 1_700_000_000 * 10**9, "offset_ns": 10**18}
    start = {"mode": "run", "command": ["dd", "if=/dev/zero", "of=/data/f", "bs=64k", "count=200", "conv=fsync"],
             "cwd": "/data", "host": "fuzz", "kernel": "Linux 6.18", "clock_start": clock, "targets": [],
             "summary_mode": False, "collector_cpu_start_s": 0.5}
    facts = np.zeros(2, lay.meta)
    facts["kind"] = [k for k, n in lay.names("iow_meta_kind", "IOW_META_").items() if n in ("exec", "file")]
    facts["ts_ns"], facts["tgid"], facts["dev"], facts["ino"] = [first - 500, first], 4242, DEV, [0, ino]
    facts["comm"] = _text("dd", facts["comm"].shape[1])
    facts["path"][0], facts["path"][1] = _text("/usr/bin/dd", 256), _text("/data/f", 256)
    block = np.zeros(20, lay.structs["iow_block"])
    block["complete_ns"] = first + np.arange(20) * 600_000
    block["start_ns"] = block["issue_ns"] = block["complete_ns"] - 200_000
    block["sector"], block["bytes"], block["dev"], block["op"] = np.arange(20) * 1280, 655360, DEV, 1
    offcpu = np.zeros(10, lay.structs["iow_offcpu"])
    offcpu["off_ns"] = first + np.arange(10) * 1_000_000
    offcpu["on_ns"], offcpu["tgid"], offcpu["tid"], offcpu["state"] = offcpu["off_ns"] + 300_000, 4242, 4242, 2
    fields = ["reads", "reads_merged", "sectors_read", "read_ms", "writes", "writes_merged", "sectors_written",
              "write_ms", "in_flight", "io_ms", "weighted_ms", "discards", "discards_merged", "sectors_discarded",
              "discard_ms", "flushes", "flush_ms"]
    cpu_fields = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
    counters = {"events": len(events), "facts": 2, "block_requests": 20, "lost_events": 0, "lost_meta": 0,
                "lost_block": 0, "lost_offcpu": 0, "lost_summary": 0, "missed_runs": 0,
                "probe_cost": {"source": "BPF_ENABLE_STATS, sampled", "mode": "sampled", "run_time_ns": 400_000,
                               "run_cnt": 800, "sampled_calls": len(events), "sampled_s": 0.05,
                               "programs": {"on_sys_enter": {"run_time_ns": 150_000, "run_cnt": 400,
                                                             "recursion_misses": 0}}}}
    with TraceWriter(path, start) as writer:
        writer.write_sample({"ts_ns": first - 10**5, "diskstats": {"8:1": [0] * 17}, "cpu": [100] * 8})
        writer.write_facts(facts)
        for part in np.array_split(np.arange(len(events)), 3):
            writer.write_events(events[part])
            writer.flush()      # one EVENTS chunk per part, as the collector's flushes make
        writer.write_device(block, offcpu)
        writer.write_output("stderr", DD_OUTPUT)
        writer.write_sample({"ts_ns": end_ns, "diskstats": {"8:1": [0, 0, 0, 0, 20, 0, 25600] + [0] * 10},
                             "cpu": [110, 0, 120, 130, 140, 0, 0, 0]})
        writer.write_counters(counters)
        writer.close({"clock_end": {**clock, "monotonic_ns": end_ns}, "stop_reason": "the command exited",
                      "exit_code": 0, "pid": 4242, "counters": counters,
                      "files": [{"dev": DEV, "ino": ino, "path": "/data/f", "device": "8:1", "fs_type": "ext4",
                                 "mount_point": "/data", "source": "/dev/sda1", "block_device": "/dev/sda1"}],
                      "device_view": {"diskstats_fields": fields, "cpu_fields": cpu_fields, "clock_ticks_per_s": 100,
                                      "sector_bytes": 512, "offcpu": True, "watched_from_start": [DEV],
                                      "no_block_device": {},
                                      "devices": [{"device": "8:1", "dev": DEV, "name": "sda1", "disk": "sda",
                                                   "partition": True, "rotational": 0, "logical_block_size": 512}]},
                      "collector_cpu_s": {"user": 0.6, "system": 0.2}, "collector_cpu_recording_s": 0.3,
                      "trace_file_bytes": 9000})


def write_summary_trace(path: Path) -> None:
    """A --summary trace: two snapshots of the kernel's aggregates, the last one the run's."""
    ops = {name: number for number, name in layout().names("iow_op", "IOW_OP_").items()}
    rows = np.zeros(3, record_dtype())
    rows["ino"], rows["dev"], rows["tgid"], rows["epoch"] = 12, DEV, 77, [1, 1, 2]
    rows["op"] = [ops["write"], ops["fsync"], ops["read"]]
    rows["calls"], rows["bytes"] = [100, 1, 50], [409600, 0, 204800]
    rows["latency_ns"], rows["latency_max_ns"] = [500_000, 30_000, 100_000], [8000, 30_000, 4000]
    rows["first_start_ns"], rows["last_end_ns"] = [10**6, 3 * 10**6, 4 * 10**6], [2 * 10**6, 3 * 10**6 + 1, 5 * 10**6]
    rows["hist"][:, 12] = rows["calls"]
    with TraceWriter(path, {"mode": "run", "command": ["bench"], "summary_mode": True,
                            "clock_start": {"monotonic_ns": 0}}) as writer:
        writer.write_summary(rows[:1])
        writer.write_summary(rows)
        writer.write_counters({"events": 0, "calls": 151, "lost_events": 0, "lost_meta": 0, "lost_summary": 0})
        writer.close({"clock_end": {"monotonic_ns": 6 * 10**6}, "collector_cpu_s": {"user": 0.1, "system": 0.0},
                      "trace_file_bytes": 2000, "exit_code": 0})


BASES = {"dd": write_dd_trace, "summary": write_summary_trace}


# --- mutations ------------------------------------------------------------------------------

def chunks_of(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, kind, payload length) of each chunk of an undamaged trace."""
    found, at = [], HEADER.size
    while at < len(data):
        kind, _, length = CHUNK.unpack_from(data, at)
        found.append((at, kind, length))
        at += CHUNK.size + length
    return found


def _reframed(data: bytes, at: int, kind: int, payload: bytes) -> bytes:
    """The trace with the chunk at `at` replaced by `kind, payload`, with a good CRC."""
    _, _, length = CHUNK.unpack_from(data, at)
    return data[:at] + chunk_head(kind, payload) + payload + data[at + CHUNK.size + length:]


def _odd_value(rng: random.Random):
    deep = "x"
    for _ in range(rng.choice((3, 50, 5000))):
        deep = [deep]
    return rng.choice([None, True, "x", "", [], {}, -1, 0, 2**64, -2**70, 10**400, 1e308, float("nan"),
                       float("inf"), [1, "a", None], {"a": {"b": [{}]}}, deep, "\udcff".encode("utf-8", "surrogatepass")
                       .decode("latin-1")])


def _paths(value, prefix=()):
    """Every path to a value inside a JSON document."""
    yield prefix
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _paths(sub, prefix + (key,))
    elif isinstance(value, list):
        for k, sub in enumerate(value[:20]):
            yield from _paths(sub, prefix + (k,))


def _set(doc, path, value):
    if not path:
        return value
    target = doc
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return doc


def _json_dump(doc) -> bytes:
    try:
        return json.dumps(doc).encode("utf-8", "surrogatepass")
    except RecursionError:
        return b"[" * 100_000


def truncate(data, chunks, rng):
    return data[:rng.randrange(len(data))]


def flip(data, chunks, rng):
    out = bytearray(data)
    bit = rng.randrange(len(data) * 8)
    out[bit // 8] ^= 1 << bit % 8
    return bytes(out)


def head(data, chunks, rng):
    at, _, _ = rng.choice(chunks)
    out = bytearray(data)
    bit = rng.randrange(CHUNK.size * 8)
    out[at + bit // 8] ^= 1 << bit % 8
    return bytes(out)


def field_edit(data, chunks, rng):
    at, kind, length = rng.choice(chunks)
    out = bytearray(data)
    if rng.random() < 0.5:
        struct.pack_into("<I", out, at, rng.choice([k for k in KIND_NAMES if k != kind] + [0, 99, 2**32 - 1]))
    else:
        new = rng.choice([0, 1, length - 1, length + 1, length * 2, length // 2, len(data), 2**40, 2**64 - 1])
        struct.pack_into("<Q", out, at + 8, max(0, min(new, 2**64 - 1)))
    return bytes(out)


def odd_json(data, chunks, rng):
    picks = [c for c in chunks if c[1] in (START, END, 5, 9)]
    at, kind, length = rng.choice(picks)
    doc = json.loads(data[at + CHUNK.size:at + CHUNK.size + length])
    paths = [p for p in _paths(doc) if not (kind == START and p[:1] == ("layout",))] or [()]
    path = rng.choice(paths)
    edit = rng.randrange(4)
    if edit == 0 and path:
        # a key or an item left out
        parent = _get(doc, path[:-1])
        del parent[path[-1]]
    elif edit == 1 and isinstance(doc, dict):
        # a key the code reads, which this chunk may not have had
        known = {START: traceschema.META, END: traceschema.META, 5: traceschema.COUNTERS, 9: traceschema.SAMPLE}[kind]
        doc[rng.choice(sorted(known))] = _odd_value(rng)
    else:
        doc = _set(doc, path, _odd_value(rng))
    return _reframed(data, at, kind, _json_dump(doc))


def _get(doc, path):
    for step in path:
        doc = doc[step]
    return doc


def odd_layout(data, chunks, rng):
    at, kind, length = chunks[0]
    doc = json.loads(data[at + CHUNK.size:at + CHUNK.size + length])
    lay = doc["layout"]
    name = rng.choice([n for n in ("event", "meta", "block", "offcpu") if n in lay])
    record = lay[name]
    f = rng.choice(record["fields"])
    how = rng.randrange(7)
    if how == 0:
        f[1] = rng.choice(["|O", "<U8", "<M8[ns]", "|V8", "<f8", "<c16", "<u3", "S2", 7, None])
    elif how == 1:
        f[3] = rng.choice([[2**40], [2**20, 2**20], [-1], ["a"], 5, [0]])
    elif how == 2:
        f[2] = rng.choice([-8, record["itemsize"], 2**63, "0", 1])
    elif how == 3:
        record["itemsize"] = rng.choice([0, 1, 2**40, -72, "72", record["itemsize"] * 2])
    elif how == 4:
        record["fields"].remove(f)
    elif how == 5:
        record["fields"] = rng.choice([[], "x", [[]], [f] * 2, None])
    else:
        lay[rng.choice(["ops", "meta_kinds"])] = rng.choice([[], {"x": "read"}, {"1": 5}, {str(2**70): "a"}, None])
    return _reframed(data, at, kind, _json_dump(doc))


def odd_block(data, chunks, rng):
    at, kind, length = rng.choice([c for c in chunks if c[1] in (EVENTS, FACTS, BLOCK, OFFCPU)])
    block = bytearray(data[at + CHUNK.size:at + CHUNK.size + length])
    rows, itemsize, columns, compressor, reserved = codec.HEAD.unpack_from(block)
    edit = rng.randrange(5)
    if edit == 0:
        rows = rng.choice([0, rows + 1, max(rows - 1, 0), 2**32 - 1, 2**31])
    elif edit == 1:
        itemsize = rng.choice([0, 1, itemsize + 8, 2**32 - 1])
    elif edit == 2:
        columns = rng.choice([0, columns + 1, 2**16 - 1])
    elif edit == 3:
        compressor = rng.choice([0, 2, 255])
    else:
        # the column table made odd inside a good frame: a transform or width out of range
        body = bytearray(zstandard.ZstdDecompressor().decompress(bytes(block[codec.HEAD.size:])))
        k = rng.randrange(columns) * codec.COLUMN.size
        body[k + rng.randrange(2)] = rng.choice([5, 9, 255, 3])
        block[codec.HEAD.size:] = zstandard.ZstdCompressor().compress(bytes(body))
    codec.HEAD.pack_into(block, 0, rows, itemsize, columns, compressor, reserved)
    return _reframed(data, at, kind, bytes(block))


def _rle_frame(declared: int, blocks: int) -> bytes:
    """A zstd frame (RFC 8878) built by hand: it declares `declared` bytes, and holds `blocks`
    RLE blocks of 128 KiB of zeros, 4 bytes each: the cheapest bomb there is."""
    header = b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + struct.pack("<Q", declared)
    body = b"".join(struct.pack("<I", ((128 << 10) << 3 | 1 << 1 | (k == blocks - 1)))[:3] + b"\0"
                    for k in range(blocks))
    return header + body


def bomb(data, chunks, rng):
    at, kind, length = rng.choice([c for c in chunks if c[1] in (EVENTS, FACTS)])
    block = data[at + CHUNK.size:at + CHUNK.size + length]
    _, itemsize, columns, _, _ = codec.HEAD.unpack_from(block)
    honest = rng.random() < 0.5
    # rows as many as the frame could fill, or as many as the head may claim
    rows = rng.choice([2**32 - 1, (8 << 30) // itemsize, (60 << 20) // itemsize])
    frame = _rle_frame(declared=rng.choice([8 << 30, 1 << 40]) if not honest else 8192 * (128 << 10),
                       blocks=8192 if honest else 4)
    payload = codec.HEAD.pack(rows, itemsize, columns, codec.ZSTD, 0) + frame
    return _reframed(data, at, kind, payload)


def odd_summary(data, chunks, rng):
    at, kind, length = rng.choice([c for c in chunks if c[1] == SUMMARY])
    payload = data[at + CHUNK.size:at + CHUNK.size + length]
    (size,) = SUMMARY_HEAD.unpack_from(payload)
    description = json.loads(payload[SUMMARY_HEAD.size:SUMMARY_HEAD.size + size])
    rows = payload[SUMMARY_HEAD.size + size:]
    how = rng.randrange(4)
    if how == 0:
        f = rng.choice(description)
        f[rng.choice([1, 2])] = rng.choice(["|O", "<U4", [2**40], [-3], "<f2", None, [1, 2, 3]])
    elif how == 1:
        description = _odd_value(rng)
    elif how == 2:
        # rows cut short of a whole row (whole rows fewer would be a valid snapshot)
        rows = rows[:len(rows) - rng.randrange(1, 64)]
    else:
        new = _json_dump(description)
        return _reframed(data, at, kind, SUMMARY_HEAD.pack(rng.choice([2**32 - 1, len(new) + 1, 0])) + new + rows)
    new = _json_dump(description)
    return _reframed(data, at, kind, SUMMARY_HEAD.pack(len(new)) + new + rows)


def unknown_kind(data, chunks, rng):
    at, kind, length = rng.choice(chunks[1:])
    return _reframed(data, at, rng.choice([11, 99, 2**31]), data[at + CHUNK.size:at + CHUNK.size + length])


def cut(data, chunks, rng):
    """A whole record chunk taken out, the framing of the rest intact: no CRC can see it."""
    at, _, length = rng.choice([c for c in chunks if c[1] in (EVENTS, FACTS, BLOCK)])
    return data[:at] + data[at + CHUNK.size + length:]


MUTATIONS = {"truncate": truncate, "flip": flip, "head": head, "field": field_edit, "json": odd_json,
             "layout": odd_layout, "block": odd_block, "bomb": bomb, "summary": odd_summary, "kind": unknown_kind,
             "cut": cut}

# the chunk kinds a mutation works on, when not any
_NEEDS = {"block": (EVENTS, FACTS, BLOCK, OFFCPU), "bomb": (EVENTS, FACTS), "summary": (SUMMARY,),
          "cut": (EVENTS, FACTS, BLOCK)}


def mutants(bases: dict[str, bytes], count: int, seed: int):
    """`count` (base name, mutation name, bytes), the mutations taken in turn, the rest by `seed`."""
    rng = random.Random(seed)
    names = list(MUTATIONS)
    chunks = {name: chunks_of(data) for name, data in bases.items()}
    for k in range(count):
        how = names[k % len(names)]
        needs = _NEEDS.get(how)
        base = rng.choice([name for name in sorted(bases)
                           if needs is None or any(kind in needs for _, kind, _ in chunks[name])])
        yield base, how, MUTATIONS[how](bases[base], chunks[base], rng)


# --- the judge -----------------------------------------------------------------------------

class _Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Hang()


def run_command(argv: list[str], limit_s: float = COMMAND_LIMIT_S) -> tuple[int | None, str, str | None]:
    """iowitness `argv` in this process: (exit code, stderr, traceback text or None); a run
    over the time limit gives (None, "", "hang")."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    except _Hang:
        return None, "", "hang"
    except SystemExit as exc:     # argparse
        return int(exc.code or 0), err.getvalue(), None
    except BaseException:         # noqa: B036 - every escape is what the fuzzing looks for
        return None, err.getvalue(), traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return code, err.getvalue(), None


def contents(trace) -> dict:
    """What a read trace holds, counted: a mutant with less of any must say it is damaged."""
    return {"events": trace.event_count, "facts": len(trace.facts),
            "block": 0 if trace.block is None else len(trace.block),
            "offcpu": 0 if trace.offcpu is None else len(trace.offcpu),
            "samples": len(trace.samples), "output": sum(len(t) for t in trace.output.values()),
            "summary": 0 if trace.summary is None else len(trace.summary),
            "counters": int(bool(trace.counters)), "end": int(bool(trace.meta.get("complete")))}


def damage_shown(meta: dict) -> bool:
    return (not meta.get("complete") or bool(meta.get("truncated_bytes")) or bool(meta.get("unknown_chunks"))
            or meta.get("chunk_heads_checked") is False)


@dataclass
class Verdict:
    base: str
    how: str
    outcome: str = ""                  # "refused", "damaged" (read, damage shown), "intact"
    problems: list = field(default_factory=list)


def judge(path: Path, base: str, how: str, original: dict, workdir: Path) -> Verdict:
    verdict = Verdict(base, how)
    try:
        trace = read(path)
    except BadTrace:
        verdict.outcome = "refused"
    except BaseException:   # noqa: B036
        verdict.problems.append("reader: " + traceback.format_exc(limit=-3))
        return verdict
    else:
        held = contents(trace)
        shown = damage_shown(trace.meta)
        verdict.outcome = "damaged" if shown else "intact"
        less = [k for k in held if held[k] < original[k]]
        if less and not shown:
            verdict.problems.append(f"silent loss: fewer {', '.join(less)} and the trace reads as whole")
    commands = {"show": ["show", str(path)], "report": ["report", str(path), "--json"],
                "check": ["check", str(path)], "export": ["export", str(path), "--parquet", str(workdir / "x.parquet")]}
    if verdict.outcome == "refused":
        commands = {"show": commands["show"]}     # every command reads through the same reader
    for name, argv in commands.items():
        code, err, escaped = run_command(argv)
        if escaped:
            verdict.problems.append(f"{name}: " + ("hang" if escaped == "hang" else escaped.strip().splitlines()[-1]))
            verdict.problems.append(escaped)
        elif code not in EXITS[name]:
            verdict.problems.append(f"{name}: exit code {code}")
        elif code == 6 and (verdict.outcome != "refused" or len(err.strip().splitlines()) != 1):
            verdict.problems.append(f"{name}: exit 6 without one line (or on a trace the reader reads): {err!r}")
    return verdict


def write_bases(folder: Path) -> dict[str, bytes]:
    out = {}
    for name, write in BASES.items():
        path = folder / f"{name}.iwt"
        write(path)
        out[name] = path.read_bytes()
    return out


def originals(folder: Path, bases: dict[str, bytes]) -> dict[str, dict]:
    found = {}
    for name in bases:
        trace = read(folder / f"{name}.iwt")
        assert trace.meta["complete"] and not damage_shown(trace.meta), name
        found[name] = contents(trace)
    return found



def write_in_small_chunks(writer, records: np.ndarray, rng) -> None:
    """`records` written 1 to 9 at a time, each flushed as a chunk of its own: a trace whose
    blocks end in many places (a streamed reader never splits a chunk)."""
    at = 0
    while at < len(records):
        n = int(rng.integers(1, 10))
        writer.write_events(records[at:at + n])
        writer.flush()
        at += n
