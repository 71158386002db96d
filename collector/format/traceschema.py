"""What the JSON and the record descriptions of a trace must be before anything uses them.

A chunk's CRC says its bytes are those the writer wrote, not that a writer wrote them: a
crafted or buggy trace can hold a START whose clock is a string, a record description with
a Python object type or a field of a terabyte, COUNTERS whose loss is a list. Each of those
used to surface far away, as a traceback in a reporter or a MemoryError in numpy. Here every
value the reader and the analysis later use is checked for its type and range, once, when
its chunk is read; a value the code never uses may be anything. Callers turn the ValueError
into a refusal (START) or the end of the reading (any later chunk): collector/format/tracereader.py.

The schemas name the keys the code reads (grep a key here to find who reads it); a new key
the analysis starts to read gets a line here, or a damaged trace can reach it unchecked.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

from iowitness.collector.format.traceformat import LOST_SLOTS

# --- leaves: a name for the message, and the test -------------------------------------------


class Leaf:
    def __init__(self, what: str, test):
        self.what, self.test = what, test


class Maybe:
    """The spec, or null."""

    def __init__(self, spec):
        self.spec = spec


class Need:
    """A key that must be present (keys of an object are optional otherwise)."""

    def __init__(self, spec):
        self.spec = spec


class MapOf:
    """An object with any keys, each value of the spec."""

    def __init__(self, spec):
        self.spec = spec


def _int_in(lo: int, hi: int):
    return lambda v: type(v) is int and lo <= v < hi


INT = Leaf("an integer", _int_in(-2**63, 2**64))
U32 = Leaf("an integer from 0 to 2^32 - 1", _int_in(0, 2**32))
U64 = Leaf("an integer from 0 to 2^64 - 1", _int_in(0, 2**64))
# clocks and counts: the analysis does signed 64-bit arithmetic on them
NS = Leaf("a count or time from 0 to 2^63 - 1", _int_in(0, 2**63))
NUMBER = Leaf("a finite number", lambda v: type(v) in (int, float) and math.isfinite(v) and abs(v) < 2**63)
TEXT = Leaf("text", lambda v: isinstance(v, str))
FLAG = Leaf("true or false", lambda v: isinstance(v, bool))
ANY = Leaf("anything", lambda v: True)


def check(value, spec, where: str) -> None:
    """ValueError naming `where` (a dotted path) when `value` does not match `spec`: a Leaf,
    Maybe, Need, MapOf, a dict of keys (each optional unless Need), or [spec] for a list."""
    if isinstance(spec, Need):
        spec = spec.spec
    if isinstance(spec, Maybe):
        if value is None:
            return
        spec = spec.spec
    if isinstance(spec, Leaf):
        if not spec.test(value):
            raise ValueError(f"{where} is not {spec.what}")
    elif isinstance(spec, list):
        if not isinstance(value, list):
            raise ValueError(f"{where} is not a list")
        for k, item in enumerate(value):
            check(item, spec[0], f"{where}[{k}]")
    elif isinstance(spec, MapOf):
        if not isinstance(value, dict):
            raise ValueError(f"{where} is not an object")
        for key, item in value.items():
            check(item, spec.spec, f"{where}.{key}")
    else:
        if not isinstance(value, dict):
            raise ValueError(f"{where} is not an object")
        for key, sub in spec.items():
            if key in value:
                check(value[key], sub, f"{where}.{key}")
            elif isinstance(sub, Need):
                raise ValueError(f"{where} has no {key}")


# a trace's JSON nests 5 deep; anything deeper than this is not a writer's, and a value nested
# near Python's recursion limit would load here and raise RecursionError wherever it is dumped
MAX_DEPTH = 32


def parse_json(payload, what: str):
    """A chunk's JSON; ValueError when it is not UTF-8 JSON, or nests deeper than MAX_DEPTH."""
    try:
        value = json.loads(bytes(payload))
    except RecursionError:
        raise ValueError(f"{what} is nested too deep to be a trace's") from None
    except ValueError as exc:   # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{what} is not JSON ({exc})") from None
    level = [value]
    for _ in range(MAX_DEPTH + 1):
        level = [v for item in level if isinstance(item, (list, dict))
                 for v in (item.values() if isinstance(item, dict) else item)]
        if not level:
            return value
    raise ValueError(f"{what} is nested too deep to be a trace's")


# --- the JSON chunks ----------------------------------------------------------------------

CLOCK = {"monotonic_ns": Need(NS), "realtime_ns": NS, "offset_ns": INT}
PROCESS = {"pid": Need(U32), "comm": Maybe(TEXT), "cwd": Maybe(TEXT), "cmdline": Maybe([TEXT]),
           "age_s": Maybe(NUMBER), "output_files": Maybe(MapOf(TEXT)), "output_flags": Maybe(MapOf(U32))}
FILE = {"dev": Need(U32), "ino": U64, "path": Maybe(TEXT), "device": Maybe(TEXT), "mount_point": Maybe(TEXT),
        "fs_type": Maybe(TEXT), "source": Maybe(TEXT), "block_device": Maybe(TEXT)}
DEVICE = {"device": Need(TEXT), "dev": Need(U32), "name": Maybe(TEXT)}
# the /proc/diskstats counters device_checks.py reads by name
DISKSTATS_USED = ("reads", "writes", "sectors_read", "sectors_written", "in_flight")
DEVICE_VIEW = {"diskstats_fields": [TEXT], "cpu_fields": [TEXT],
               "clock_ticks_per_s": NUMBER, "sector_bytes": Leaf("a sector size", _int_in(1, 1 << 20)),
               "devices": [DEVICE], "no_block_device": MapOf(TEXT), "offcpu": FLAG, "watched_from_start": [U32]}

# START and END: END's keys override START's, so both are checked against the one schema
META = {
    "command": Maybe([TEXT]), "benchmark": Maybe(TEXT), "pid": Maybe(U32), "mode": Maybe(TEXT), "cwd": Maybe(TEXT),
    "backend": Maybe(TEXT),
    "attached": Maybe([PROCESS]), "files": [FILE],
    # attach --pid: the process attached to exec'd while traced, or a shell attached to ran a
    # program (its pid the shell's child); END's command is what it ran (collector/gate_programs.py)
    "command_exec": Maybe({"pid": Need(U32), "path": Need(TEXT), "ts_ns": Need(NS), "comm": Maybe(TEXT),
                           "cmdline": Maybe([TEXT]), "cwd": Maybe(TEXT)}),
    # a shell attached to ran several programs: each, and which one is command_exec and why
    "gate_programs": Maybe({"shell": Need(U32), "count": Need(NS), "chosen": Need(NS), "why": Need(TEXT),
                            "programs": [{"pid": Need(U32), "path": Need(TEXT), "cmdline": Maybe([TEXT]),
                                          "ts_ns": Need(NS), "lasted_ns": Need(NS), "opened_target": FLAG}]}),
    "targets": [{"dev": Need(U32), "ino": Need(U64), "path": Need(TEXT)}],
    "clock_start": CLOCK, "clock_end": CLOCK,
    "collector_cpu_s": Maybe({"user": Need(NUMBER), "system": Need(NUMBER)}),
    "collector_cpu_start_s": NUMBER, "collector_cpu_recording_s": Maybe(NUMBER),
    "trace_file_bytes": Maybe(NS), "exit_code": Maybe(INT), "stop_reason": Maybe(TEXT),
    "device_view": Maybe(DEVICE_VIEW),
    # iowitness replay: the trace it replays (its command names the replay's phases)
    "replay_of": Maybe({"trace": TEXT, "command": Maybe([TEXT]), "host": Maybe(TEXT), "timing": TEXT,
                        "into": TEXT, "files": MapOf(TEXT), "not_replayed": MapOf(NS),
                        # what the replayed trace's own recording lost, in words ("" nothing)
                        "original_missing": TEXT}),
    # END's census of the chunks before it (collector/format/tracecensus.py)
    "chunks": Maybe({"through": Need(NS), "counts": Need(MapOf(NS)), "digest": Need(U32)}),
}
RUN_COST = {"run_time_ns": Need(NS), "run_cnt": Need(NS), "recursion_misses": NS}
COUNTERS = {
    # every collector writes these two: a COUNTERS chunk without them cannot say what was lost
    "events": Need(NS), "lost_events": Need(NS),
    **{name: NS for name in ("facts", "calls", "block_requests", "missed_runs", "aio_completions_missed",
                             *LOST_SLOTS)},
    "async_calls": Maybe(MapOf({"calls": Need(NS), "ns": Need(NS)})),
    "probe_cost": Maybe({"run_time_ns": NS, "run_cnt": NS, "source": TEXT, "mode": TEXT,
                         "sampled_calls": Maybe(NS), "sampled_s": Maybe(NUMBER),
                         "programs": Maybe(MapOf(RUN_COST))}),
}
SAMPLE = {"ts_ns": Need(NS), "diskstats": Maybe(MapOf([INT])), "cpu": Maybe([INT])}


def check_meta(meta, chunk: str) -> None:
    check(meta, META, chunk)


def check_counters(counters) -> None:
    check(counters, COUNTERS, "COUNTERS")


def check_sample(sample, first: dict | None) -> None:
    """A SAMPLES chunk; each holds as many counters per device and CPU as the first one."""
    check(sample, SAMPLE, "SAMPLES")
    if first is None:
        return
    for key in ("cpu", "diskstats"):
        if _widths(sample, key) - _widths(first, key):
            raise ValueError(f"SAMPLES.{key} has not as many counters as the first sample's")


def check_samples_against_view(samples: list, view) -> None:
    """END's device_view names the samples' counters: no more names than counters, and the
    counters the device checks read by name among them."""
    if not isinstance(view, dict):
        return
    fields = view.get("diskstats_fields") or []
    missing = [name for name in DISKSTATS_USED if name not in fields]
    if fields and missing:
        raise ValueError(f"END.device_view.diskstats_fields has no {missing[0]}")
    for key, names in (("diskstats", fields), ("cpu", view.get("cpu_fields") or [])):
        if any(width < len(names) for s in samples for width in _widths(s, key)):
            raise ValueError(f"END.device_view names more {key} counters than the samples hold")


def _widths(sample: dict, key: str) -> set:
    value = sample.get(key)
    if not value:
        return set()
    return {len(value)} if key == "cpu" else {len(v) for v in value.values()}


# --- record descriptions ------------------------------------------------------------------

MAX_RECORD_BYTES = 64 << 10    # a record of the probe is at most a few hundred bytes
MAX_FIELDS = 256
_TYPE = re.compile(r"^[<>|=]?[iufb][1248]$")

# What the reader and the analysis read of each record, and as what numpy type (a text field:
# bytes of any length). A description that lacks one, or gives it another type, is refused:
# reading it under another type would give wrong numbers, not an error.
BYTES = "bytes"
EVENT_FIELDS = {"start_ns": "<u8", "latency_ns": "<u8", "ino": "<u8", "offset": "<i8", "requested": "<u8",
                "ret": "<i8", "tgid": "<u4", "tid": "<u4", "dev": "<u4", "fd": "<i4", "flags": "<u4", "op": "<u2"}
META_FIELDS = {"ts_ns": "<u8", "ino": "<u8", "kind": "<u4", "tgid": "<u4", "parent_tgid": "<u4", "dev": "<u4",
               "fd": "<i4", "dirfd": "<i4", "s_magic": "<u4", "comm": BYTES, "path": BYTES}
BLOCK_FIELDS = {"start_ns": "<u8", "issue_ns": "<u8", "complete_ns": "<u8", "sector": "<u8", "bytes": "<u4",
                "dev": "<u4", "tgid": "<u4", "tid": "<u4", "op": "<u4", "error": "<i4", "comm": BYTES}
OUTPUT_FIELDS = {"start_ns": "<u8", "end_ns": "<u8", "ino": "<u8", "ret": "<i8", "tgid": "<u4", "tid": "<u4",
                 "dev": "<u4", "fd": "<i4", "copied": "<u4", "op": "<u2", "data": BYTES}
OFFCPU_FIELDS = {"off_ns": "<u8", "on_ns": "<u8", "tgid": "<u4", "tid": "<u4", "state": "<u4"}
SUMMARY_FIELDS = {"ino": "<u8", "dev": "<u4", "tgid": "<u4", "epoch": "<u4", "op": "<u2",
                  **{name: "<u8" for name in ("calls", "errors", "short_calls", "bytes", "requested", "latency_ns",
                                              "latency_max_ns", "first_start_ns", "last_end_ns", "sequential")},
                  "hist": "<u8[]"}


def dtype_from(description, needs: dict) -> np.dtype:
    """A record dtype from its START description ({"itemsize", "fields": [[name, type,
    offset, shape]]}); ValueError unless it is one the reader can hold and the analysis read."""
    check(description, {"itemsize": Need(Leaf("a record size", _int_in(1, MAX_RECORD_BYTES + 1))),
                        "fields": Need([[ANY]])}, "the layout")
    fields = description["fields"]
    if not 0 < len(fields) <= MAX_FIELDS or any(len(f) != 4 for f in fields):
        raise ValueError("the layout's fields are not a list of [name, type, offset, shape]")
    itemsize = description["itemsize"]
    spans = [(_offset(f[2], itemsize), f[0], _field_type(f[0], f[1], f[3])) for f in fields]
    at = 0
    for offset, name, sub in sorted(spans, key=lambda s: s[0]):
        if offset < at or offset + sub.itemsize > itemsize:
            raise ValueError(f"the layout's field {name} overlaps another or the record's end")
        at = offset + sub.itemsize
    dtype = _dtype([name for _, name, _ in spans], [sub for _, _, sub in spans],
                   [offset for offset, _, _ in spans], itemsize)
    _check_needs(dtype, needs, "the layout")
    return dtype


def summary_dtype(fields) -> np.dtype:
    """The dtype of a SUMMARY chunk's rows from its description ([[name, type, shape]])."""
    if not isinstance(fields, list) or not 0 < len(fields) <= MAX_FIELDS or \
            any(not isinstance(f, list) or len(f) != 3 for f in fields):
        raise ValueError("SUMMARY's description is not a list of [name, type, shape]")
    subs = [_field_type(f[0], f[1], f[2]) for f in fields]
    names = [f[0] for f in fields]
    offsets = np.cumsum([0] + [sub.itemsize for sub in subs])
    if offsets[-1] > MAX_RECORD_BYTES:
        raise ValueError(f"SUMMARY's rows are {offsets[-1]:,} bytes long")
    dtype = _dtype(names, subs, [int(o) for o in offsets[:-1]], int(offsets[-1]))
    _check_needs(dtype, SUMMARY_FIELDS, "SUMMARY")
    return dtype


def _offset(value, itemsize: int) -> int:
    if type(value) is not int or not 0 <= value < itemsize:
        raise ValueError("a field of the layout has an offset outside its record")
    return value


def _field_type(name, type_text, shape) -> np.dtype:
    """One field's numpy type: a plain number type (no objects, text or dates) of a bounded shape."""
    if not isinstance(name, str) or not 0 < len(name) <= 64:
        raise ValueError("a field has no name")
    if not isinstance(type_text, str) or not _TYPE.match(type_text):
        raise ValueError(f"field {name} has a type that is not a number type")
    if not isinstance(shape, list) or len(shape) > 2 or \
            any(type(n) is not int or not 0 < n <= MAX_RECORD_BYTES for n in shape):
        raise ValueError(f"field {name} has a shape that is not a short list of sizes")
    try:
        base = np.dtype(type_text)
    except TypeError:   # a size numpy has no such type of ("f1", "b8")
        raise ValueError(f"field {name} has a type that is not a number type") from None
    if base.itemsize * math.prod(shape) > MAX_RECORD_BYTES:
        raise ValueError(f"field {name} is larger than a record can be")
    return np.dtype((base, tuple(shape))) if shape else base


def _dtype(names: list, subs: list, offsets: list, itemsize: int) -> np.dtype:
    if len(set(names)) != len(names):
        raise ValueError("two fields have one name")
    return np.dtype({"names": names, "formats": subs, "offsets": offsets, "itemsize": itemsize})


def _check_needs(dtype: np.dtype, needs: dict, where: str) -> None:
    missing = [name for name in needs if name not in dtype.names]
    if missing:
        raise ValueError(f"{where} has no field {', '.join(missing)}")
    for name, wanted in needs.items():
        sub = dtype.fields[name][0]
        if wanted == BYTES:
            ok = sub.base == np.uint8 and len(sub.shape) == 1
        elif wanted.endswith("[]"):
            ok = sub.base == np.dtype(wanted[:-2]) and len(sub.shape) == 1
        else:
            ok = sub == np.dtype(wanted)
        if not ok:
            raise ValueError(f"{where} gives field {name} the type {sub.base.str}{list(sub.shape) or ''}, "
                             f"not {wanted}")

