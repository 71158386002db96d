"""The trace reader: a .iwt file into numpy arrays, with no pandas and no analysis.

A bad header or START chunk raises BadTrace; a damaged tail ends the reading, and what came
before it is kept (`meta["truncated_bytes"]` says how much was left, `meta["unread_reason"]`
why). Nothing is allocated on a size the file states before that size is checked against
what the chunk can hold (traceformat, "Limits"); every JSON value the analysis uses is
checked by collector/format/traceschema.py. The format is in
collector/format/traceformat.py and docs/trace-format.md; the pandas view of a run is
analysis/read/run.py.
"""

from __future__ import annotations

import fcntl
import functools
import os
import stat

import numpy as np

from iowitness.collector.format import codec, knownlayout, printed_timeline, tracecensus, traceschema
from iowitness.collector.format.traceformat import (
    BLOCK,
    CHUNK,
    COUNTERS,
    DECODE_FLOOR,
    DECODE_RATIO,
    END,
    EVENTS,
    FACTS,
    HEADER,
    HEADS_CHECKED_SINCE,
    KIND_NAMES,
    MAGIC,
    OFFCPU,
    OUTPUT,
    PRINTED,
    READABLE_VERSIONS,
    RECORD_KINDS,
    SAMPLES,
    START,
    STREAMS,
    SUMMARY,
    SUMMARY_HEAD,
    chunk_crc,
    lost_total,
    missing_text,
    ops_of_kind,
    spoken,
)
from iowitness.errors import BadTrace, TooLarge
from iowitness.version import __version__


class TraceData:
    """What a trace holds, as read: meta, event columns, facts, output, counters, device view."""

    # the device view (BLOCK, OFFCPU, SAMPLES chunks): empty in traces that have none. A trace
    # read whole holds the BLOCK and OFFCPU records as arrays; one scanned (read block by block)
    # holds none of them: `device_batches` says where their chunks are (kind name -> [(offset,
    # payload, rows)], a name for each kind the trace's layout describes), for
    # collector/format/tracestream.record_blocks to decode a block at a time
    block: np.ndarray | None = None
    offcpu: np.ndarray | None = None
    device_batches: dict = {}
    device_dtypes: dict = {}
    samples: tuple = ()
    summary = None   # --summary traces: the kernel's aggregates
    printed = None   # the output timeline (printed_timeline.Timeline); None: the trace has none

    def __init__(self, meta, events: dict, event_dtype: np.dtype, facts, ops, meta_kinds, output, counters):
        self.meta, self.output, self.counters = meta, output, counters
        self.lost = lost_total(counters)
        # what the probe could not follow at all, in words ("" when nothing): traceformat.missing_text
        self.missing = missing_text(counters)
        self.ops, self.meta_kinds, self.facts = ops, meta_kinds, facts
        # bytes on disk per chunk kind ("events", "facts", ...), chunk heads included
        self.stored_bytes: dict[str, int] = {}
        # several CPUs fill the ring at once: record order is only roughly time order
        starts = events["start_ns"]
        if len(starts) > 1 and np.any(starts[1:] < starts[:-1]):
            order = np.argsort(starts, kind="stable")
            events = {name: column[order] for name, column in events.items()}
        # one contiguous array per field: the analysis reads columns, never whole records
        self.columns, self.event_dtype = events, event_dtype

    @property
    def event_count(self) -> int:
        return len(self.columns["start_ns"])

    def raw_events(self) -> np.ndarray:
        """The event records as a numpy structured array, in time order (padding zeroed)."""
        records = np.zeros(len(self.columns["start_ns"]), self.event_dtype)
        for name, column in self.columns.items():
            records[name] = column
        return records


def read(path, afford=None) -> TraceData:
    """Read a .iwt file. A bad header or START raises BadTrace; a damaged tail ends the reading.
    afford(events): called with the number of events the chunks declare, after their heads are
    checked and before any is decoded (raising, e.g. TooLarge, stops the reading)."""
    data, active = _file_bytes(path)
    return _mark_active(_checked(path, memoryview(data), afford=afford), active)


def being_written(fd: int) -> bool:
    """Whether a collector still holds the trace open for writing (collector/format/tracewriter.py
    locks it for its life)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def _mark_active(trace: "TraceData", active: bool) -> "TraceData":
    # a trace read while recorded ends where the collector's last flush ended: incomplete,
    # not broken (said so by the reports, reporters/tables.status)
    if active and not trace.meta.get("complete"):
        trace.meta["being_written"] = True
    return trace


def scan(path, data: memoryview, release=None, device_blocks: bool = False) -> TraceData:
    """As read, over `data` (the file, mapped by collector/format/tracestream.py), but the events are
    only checked, never kept: `columns` is empty and `event_batches` says where each chunk of
    events is, (offset, payload, rows), for the caller to decode one at a time. `device_blocks`:
    the BLOCK and OFFCPU records likewise (`device_batches`), instead of decoded whole."""
    return _checked(path, data, keep_events=False, release=release, device_blocks=device_blocks)


def _checked(path, data: memoryview, keep_events: bool = True, release=None, afford=None,
             device_blocks: bool = False) -> TraceData:
    if len(data) < HEADER.size and MAGIC.startswith(bytes(data[:len(MAGIC)])):
        raise BadTrace(f"{path} ends before its header: the tracer stopped at once; trace again")
    if bytes(data[:len(MAGIC)]) != MAGIC:
        raise BadTrace(f"{path} is not an iowitness trace (it does not start with IOWTRACE); "
                       "give the file that `iowitness run -o` wrote")
    _, version, _ = HEADER.unpack_from(data)
    if version not in READABLE_VERSIONS:
        raise BadTrace(f"{path} is trace format version {version}, but iowitness {__version__} "
                       f"reads versions {spoken(READABLE_VERSIONS)} only; open it "
                       "with the iowitness that wrote it")
    return _read(path, data, version, len(data), keep_events=keep_events, release=release, afford=afford,
                 device_blocks=device_blocks)


_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_fd(path) -> int:
    """The trace file opened for reading, or BadTrace saying why not (O_NONBLOCK: opening a
    FIFO must not wait for a writer)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadTrace(f"no such trace: {path}") from None
    except OSError as exc:
        raise BadTrace(f"cannot read trace {path}: {exc.strerror or exc}") from None


def _file_bytes(path) -> tuple[bytes, bool]:
    """The whole file, when it is a regular file: a pipe or a device (/dev/zero) has no end
    to read up to, and opening a FIFO waits for a writer (hence O_NONBLOCK, and fstat after
    the open: the path cannot become something else in between)."""
    fd = open_fd(path)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")
        raise BadTrace(f"{path} is {what}, not a trace file; give the file that `iowitness run -o` wrote")
    active = being_written(fd)
    with open(fd, "rb") as file:
        try:
            head = file.read(len(MAGIC))
            if head != MAGIC:
                return head, active   # not a trace: said from these bytes, without reading the rest
            return head + file.read(), active
        except OSError as exc:
            raise BadTrace(f"cannot read trace {path}: {exc.strerror or exc}") from None
        except MemoryError:
            raise TooLarge(f"{path} ({os.fstat(fd).st_size:,} bytes) is larger than the memory free to read "
                           "it; `iowitness show` reads a trace of any size block by block") from None


def _read(path, data: memoryview, version: int, file_size: int, damage: str | None = None,
          keep_events: bool = True, release=None, afford=None, device_blocks: bool = False) -> TraceData:
    """The trace in data[:len(data)] (all of the file, or the part before a damaged chunk);
    `damage` says why the reading ended before the end of the file, when it did.
    `release(begin, end)`, when given, is told of each stretch of `data` walked (about every
    RELEASE_BYTES): the streamed reader hands those pages back as it goes."""
    chunks, good_end, torn = _good_chunks(data, version, release)
    damage = damage or torn
    if not chunks or chunks[0][1] != START:
        why = f" ({damage})" if damage else ""
        raise BadTrace(f"{path} has no readable START chunk{why}; it cannot be read, trace again")
    try:
        start, dtypes, ops, meta_kinds = _start(chunks[0][2])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadTrace(f"{path} has a broken START chunk ({exc}); it cannot be read") from None

    stored = {"start": CHUNK.size + len(chunks[0][2])}
    end, counters, samples, summary, unknown = None, {}, [], None, {}
    output = {name: [] for name in STREAMS}
    stream_of = {number: name for name, number in STREAMS.items()}
    batches = {kind: [] for kind in dtypes}     # kind -> [(offset, payload, rows)]
    # what the records would decode to, bounded before anything is decoded (traceformat, Limits)
    budget, decoded = max(DECODE_FLOOR, DECODE_RATIO * file_size), 0
    walked = 0
    for at, kind, payload in chunks[1:]:
        if release is not None and at - walked >= RELEASE_BYTES:
            release(walked, at)   # the records' heads are read: their pages are walked too
            walked = at
        # a chunk whose CRC holds but whose content is not what its kind holds ends the
        # reading, as a bad CRC does: never a silent drop, never a traceback
        try:
            if kind in batches:
                rows = _rows_in(payload, dtypes[kind], version)
                decoded += rows * dtypes[kind].itemsize
                if decoded > budget:
                    raise ValueError(f"its records would make {decoded:,} bytes from a file of {file_size:,}, "
                                     "more than any trace holds (a decompression bomb?)")
                batches[kind].append((at, payload, rows))
            elif kind == OUTPUT:
                if not len(payload) or payload[0] not in stream_of:
                    raise ValueError("it names no output stream")
                output[stream_of[payload[0]]].append(bytes(payload[1:]))
            elif kind == COUNTERS:
                read_counters = _json_object(payload, "COUNTERS")
                traceschema.check_counters(read_counters)
                counters = read_counters
            elif kind == END:
                read_end = _json_object(payload, "END")
                traceschema.check_meta(read_end, "END")
                if "clock_end" in read_end and "clock_start" not in {**start, **read_end}:
                    raise ValueError("END has an end clock, but the trace has no start clock")
                traceschema.check_samples_against_view(samples, read_end.get("device_view"))
                if "counters" in read_end:
                    traceschema.check_counters(read_end["counters"])
                end, end_at = read_end, at
            elif kind == SAMPLES:
                sample = _json_object(payload, "SAMPLES")
                traceschema.check_sample(sample, samples[0] if samples else None)
                traceschema.check_samples_against_view([sample], (end or {}).get("device_view"))
                samples.append(sample)
            elif kind == SUMMARY:
                summary = _summary_rows(payload)
            else:
                # a kind this reader does not know, under a good CRC: a newer writer's, skipped
                # and counted (meta["unknown_chunks"]), so that the reports can say so
                unknown[str(kind)] = unknown.get(str(kind), 0) + 1
        except (ValueError, TypeError) as exc:
            good_end, damage = at, f"{_kind_name(kind)} chunk at byte {at:,}: {exc}"
            break
        name = KIND_NAMES.get(kind, str(kind))
        stored[name] = stored.get(name, 0) + CHUNK.size + len(payload)

    if afford is not None and keep_events:
        afford(sum(rows for _, _, rows in batches[EVENTS]))
    records = {}
    for kind, dtype in dtypes.items():
        # events are read column by column (what the analysis uses), other records as records
        decode_all = _decode_columns if kind == EVENTS else _decode_all
        if (kind == EVENTS and not keep_events) or (kind in (BLOCK, OFFCPU) and device_blocks):
            # checked chunk by chunk, never held: read again a block at a time when asked for
            decode_all = functools.partial(_check_columns, release=release)
        records[kind], bad_at, why = decode_all(batches[kind], dtype, version)
        if bad_at is not None:
            # a record chunk that passed its CRC yet does not decode: it and what comes after
            # it are dropped, exactly as after a bad CRC (the writer never produces one)
            return _read(path, data[:bad_at], version, file_size,
                         f"{_kind_name(kind)} chunk at byte {bad_at:,}: {why}", keep_events, release, afford,
                         device_blocks)

    missing = _records_missing(end, records, batches)
    if end is not None:   # whole chunks cut, repeated or moved: END's census and counters say so
        said = ("events", "facts", "block") if missing else ()
        found = [m for m in (missing, _census_gaps(end, data, [c for c in chunks if c[0] < end_at], counters, said))
                 if m]
        missing, counters = "; ".join(found) or None, end.get("counters", counters)
    meta = {**start, **(end or {}), "complete": end is not None and not missing,
            "truncated_bytes": file_size - good_end, "unread_reason": damage if good_end < file_size else None,
            "records_missing": missing,
            "format_version": version, "chunk_heads_checked": version >= HEADS_CHECKED_SINCE,
            "unknown_chunks": unknown, "path": str(path)}
    text = {name: b"".join(parts).decode("utf-8", errors="replace")
            for name, parts in output.items()}
    trace = TraceData(meta, records[EVENTS], dtypes[EVENTS], records[FACTS], ops, meta_kinds, text, counters)
    trace.version = version
    trace.event_batches = [] if keep_events else batches[EVENTS]
    trace.event_rows = sum(rows for _, _, rows in batches[EVENTS])
    trace.stored_bytes = {"header": HEADER.size, **stored}
    _attach_device_view(trace, records, batches, dtypes, samples, not device_blocks)
    # the output timeline (traces since it exists; None before): the lines with their times,
    # and the output's text rebuilt from it where the capture did not see the writes
    own = printed_timeline.OwnFiles(records[FACTS], meta_kinds, meta)
    if keep_events and PRINTED in records and len(records[PRINTED]):
        # opens of files already targets have no FILE fact: the events hold them (read whole
        # here; a trace read block by block knows its FILE facts only, docs/tracing.md)
        columns, open_ops = records[EVENTS], [n for n, name in ops.items() if name in ops_of_kind("open")]
        opened = np.isin(columns["op"], open_ops) & (columns["ret"] >= 0)
        own.add_opens(*(columns[k][opened] for k in ("tgid", "dev", "ino", "start_ns")))
    captured = {name: b"".join(parts) for name, parts in output.items()}
    # the bpftrace backend (collector/backends.py) describes the record but records none
    printed = records.get(PRINTED) if meta.get("backend") != "bpftrace" else None
    trace.printed = printed_timeline.timeline(printed, captured, own, captures=meta.get("mode") == "run")
    trace.output = printed_timeline.text_of(trace.printed, text)
    trace.summary = summary   # --summary traces: the kernel's aggregates; None otherwise
    return trace


def _records_missing(end: dict | None, records: dict, batches: dict) -> str | None:
    """What END's counters say the collector wrote and the file does not hold (whole chunks
    cut out with their framing intact: no CRC sees that); None when all is there."""
    if end is None or not isinstance(end.get("counters"), dict):
        return None
    held = {"events": sum(rows for _, _, rows in batches[EVENTS]), "facts": len(records[FACTS]),
            "block_requests": sum(rows for _, _, rows in batches[BLOCK]) if BLOCK in batches else None}
    gaps = [f"{int(end['counters'][name]):,} {name.replace('_', ' ')} counted, {count:,} held"
            for name, count in held.items()
            if count is not None and isinstance(end["counters"].get(name), int) and end["counters"][name] != count]
    return "; ".join(gaps) or None


def _census_gaps(end: dict, data, before_end: list, counters: dict, said: tuple) -> str | None:
    found = []
    if isinstance(end.get("chunks"), dict):
        found.append(tracecensus.gaps(end["chunks"], data, before_end, said))
    if isinstance(end.get("counters"), dict) and counters != end["counters"]:
        found.append("the last COUNTERS chunk is not END's counters")
    return "; ".join(f for f in found if f) or None


def _kind_name(kind: int) -> str:
    return KIND_NAMES[kind].upper() if kind in KIND_NAMES else f"kind {kind}"


_LAYOUT = {"event": traceschema.Need(traceschema.ANY), "meta": traceschema.Need(traceschema.ANY),
           "ops": traceschema.Need(traceschema.MapOf(traceschema.TEXT)),
           "meta_kinds": traceschema.Need(traceschema.MapOf(traceschema.TEXT))}
# the records' descriptions in START's layout, and what of each the reader and analysis read
_NEEDS = {EVENTS: traceschema.EVENT_FIELDS, FACTS: traceschema.META_FIELDS,
          BLOCK: traceschema.BLOCK_FIELDS, OFFCPU: traceschema.OFFCPU_FIELDS, PRINTED: traceschema.OUTPUT_FIELDS}


def _start(payload) -> tuple[dict, dict, dict, dict]:
    """START's metadata, the record dtypes its layout describes, and its name tables;
    ValueError naming what is wrong."""
    start = _json_object(payload, "START")
    traceschema.check_meta(start, "START")
    traceschema.check(start.get("layout"), traceschema.Need(_LAYOUT), "START.layout")
    lay = start["layout"]
    knownlayout.check(lay)   # a START claiming this layout's version describes it as it is
    # the device view's records, in traces written since they exist
    dtypes = {kind: traceschema.dtype_from(lay[name], _NEEDS[kind]) for kind, name in RECORD_KINDS.items()
              if kind in (EVENTS, FACTS) or name in lay}
    return start, dtypes, _numbered(lay["ops"], "ops"), _numbered(lay["meta_kinds"], "meta_kinds")


def _numbered(names: dict, what: str) -> dict:
    """{"1": "open", ...} as {1: "open", ...}: the numbers a record's op or kind can take."""
    try:
        numbered = {int(k): v for k, v in names.items()}
    except ValueError:
        raise ValueError(f"START.layout.{what} has a key that is not a number") from None
    if any(not 0 <= k < 2**32 for k in numbered):
        raise ValueError(f"START.layout.{what} has a number out of range")
    return numbered


def _json_object(payload, kind: str) -> dict:
    value = traceschema.parse_json(payload, kind)
    if not isinstance(value, dict):
        raise ValueError(f"{kind} is not a JSON object")
    return value


def _summary_rows(payload) -> np.ndarray:
    """A SUMMARY chunk's rows (a view of the payload: nothing is allocated for them)."""
    if len(payload) < SUMMARY_HEAD.size:
        raise ValueError("it is shorter than its head")
    (size,) = SUMMARY_HEAD.unpack_from(payload)
    if size > len(payload) - SUMMARY_HEAD.size:
        raise ValueError(f"its description of {size:,} bytes runs past its end")
    fields = traceschema.parse_json(payload[SUMMARY_HEAD.size:SUMMARY_HEAD.size + size], "SUMMARY's description")
    dtype = traceschema.summary_dtype(fields)
    rows = payload[SUMMARY_HEAD.size + size:]
    if len(rows) % dtype.itemsize:
        raise ValueError(f"{len(rows):,} bytes are not whole {dtype.itemsize}-byte rows")
    return np.frombuffer(rows, dtype=dtype)


def _attach_device_view(trace: TraceData, records: dict, batches: dict, dtypes: dict, samples: list,
                        whole: bool) -> None:
    """The BLOCK and OFFCPU records: sorted arrays when the trace is read whole, where their
    chunks are when it is scanned (TraceData.device_batches)."""
    for kind, name, key in ((BLOCK, "block", "complete_ns"), (OFFCPU, "offcpu", "off_ns")):
        if kind not in records:
            continue
        if whole:
            setattr(trace, name, records[kind][np.argsort(records[kind][key], kind="stable")])
        else:
            trace.device_batches = {**trace.device_batches, name: batches[kind]}
            trace.device_dtypes = {**trace.device_dtypes, name: dtypes[kind]}
    trace.samples = tuple(samples)


def _rows_in(payload, dtype: np.dtype, version: int) -> int:
    """How many records a record chunk holds (ValueError when it cannot hold whole ones, or
    its head promises more than any block holds)."""
    if version == 1:
        if len(payload) % dtype.itemsize:
            raise ValueError(f"{len(payload)} bytes are not whole {dtype.itemsize}-byte records")
        return len(payload) // dtype.itemsize
    return codec.checked_rows(payload, dtype)


def _decode_columns(batches: list, dtype: np.dtype, version: int) -> tuple[dict, int | None, str | None]:
    """As _decode_all, into one contiguous array per field (padding left out)."""
    total = sum(rows for _, _, rows in batches)
    columns = {name: np.empty((total, *dtype.fields[name][0].shape), dtype.fields[name][0].base)
               for name in dtype.names if not name.startswith("pad")}
    at = 0
    for offset, payload, rows in batches:
        try:
            if version == 1:
                records = np.frombuffer(payload, dtype)
                for name, column in columns.items():
                    column[at:at + rows] = records[name]
            else:
                codec.decode_columns(payload, dtype, columns, at)
        except (ValueError, TypeError) as exc:
            return {name: column[:at] for name, column in columns.items()}, offset, str(exc)
        at += rows
    return columns, None, None


# the streamed reader's pages are handed back after this many bytes walked
RELEASE_BYTES = 32 << 20


def _check_columns(batches: list, dtype: np.dtype, version: int, release=None) -> tuple[dict, int | None, str | None]:
    """As _decode_columns, one chunk at a time into a scratch block that is dropped: the
    chunks are known to decode (as the in-memory reading would find) without holding them;
    the columns returned are empty."""
    walked = batches[0][0] if batches else 0
    for offset, payload, rows in batches:
        _, bad_at, why = _decode_columns([(offset, payload, rows)], dtype, version)
        if bad_at is not None:
            return _decode_columns([], dtype, version)[0], bad_at, why
        if release is not None and offset - walked >= RELEASE_BYTES:
            release(walked, offset)
            walked = offset
    if release is not None and batches:
        release(walked, batches[-1][0] + CHUNK.size + len(batches[-1][1]))
    return _decode_columns([], dtype, version)[0], None, None


def _decode_all(batches: list, dtype: np.dtype, version: int) -> tuple[np.ndarray, int | None, str | None]:
    """Every batch of one record kind into one array, allocated once; the offset of the first
    chunk that did not decode and why (None, None when all did)."""
    out = np.empty(sum(rows for _, _, rows in batches), dtype)
    first = 0
    for offset, payload, rows in batches:
        part = out[first:first + rows]
        try:
            if version == 1:
                part[...] = np.frombuffer(payload, dtype)
            else:
                codec.decode_into(payload, part)
        except (ValueError, TypeError) as exc:
            return out[:first], offset, str(exc)
        first += rows
    return out, None, None


def _good_chunks(data: memoryview, version: int, release=None) -> tuple[list, int, str | None]:
    """(offset, kind, payload) of each chunk up to the first torn or corrupt one, where the
    good run ends, and what is wrong with the chunk there (None at the end of the file)."""
    chunks, at = [], HEADER.size
    walked = 0
    while at < len(data):
        if release is not None and at - walked >= RELEASE_BYTES:
            release(walked, at)
            walked = at
        if at + CHUNK.size > len(data):
            return chunks, at, f"the file ends inside a chunk head at byte {at:,}"
        kind, crc, length = CHUNK.unpack_from(data, at)
        end = at + CHUNK.size + length
        if end > len(data):
            return chunks, at, f"chunk at byte {at:,} runs past the end of the file"
        payload = data[at + CHUNK.size:end]
        if chunk_crc(version, kind, payload) != crc:
            return chunks, at, f"chunk at byte {at:,} fails its CRC"
        chunks.append((at, kind, payload))
        at = end
    return chunks, at, None
