"""The trace writer: appends chunks to a new .iwt file (the format: collector/format/traceformat.py)."""

from __future__ import annotations

import fcntl
import os
import threading

import numpy as np

from iowitness.collector.format import codec, tracecensus
from iowitness.collector.format.traceformat import (
    BLOCK,
    CHUNK,
    COUNTERS,
    END,
    EVENTS,
    FACTS,
    FORMAT_VERSION,
    GATHER_ROWS,
    HEADER,
    MAGIC,
    MAX_BLOCK_BYTES,
    OFFCPU,
    PRINTED,
    OUTPUT,
    SAMPLES,
    START,
    STREAMS,
    SUMMARY,
    SUMMARY_HEAD,
    chunk_crc,
    describe_layout,
    json_bytes,
)
from iowitness.errors import OutputError
from iowitness.outputfile import DEFAULT_MODE, TRACE_HINT, Output, still_holds
from iowitness.probes.layout import layout


def _joined(batches: list[np.ndarray]) -> np.ndarray:
    """Record arrays of one dtype end to end, copied as bytes: numpy copies a structured array
    field by field, two to three times slower (a 65,536-record batch: 5.5 ms vs 2.2 ms)."""
    if len(batches) == 1:
        return batches[0]
    return np.concatenate([np.ascontiguousarray(b).view(np.uint8) for b in batches]).view(batches[0].dtype)


def file_header(version: int = FORMAT_VERSION) -> bytes:
    """The 16 bytes a trace of this format version starts with."""
    return HEADER.pack(MAGIC, version, 0)


def chunk_head(kind: int, payload, version: int = FORMAT_VERSION) -> bytes:
    """The 16-byte head of a chunk: kind, CRC (traceformat.chunk_crc), payload length.
    Older versions are written only by tests, to check that the reader still reads them."""
    return CHUNK.pack(kind, chunk_crc(version, kind, payload), len(payload))


def append_chunk(fd: int, kind: int, payload) -> int:
    """Append one chunk (head and payload in one writev) to a trace opened with O_APPEND;
    the bytes written. Two writers of one trace never interleave inside a chunk."""
    head = chunk_head(kind, payload)
    _write_all(fd, [head, payload])
    return len(head) + len(payload)


def _blocks(batch: np.ndarray):
    """A batch in slices that each fit a block (MAX_BLOCK_BYTES): a reader refuses larger
    ones, so that a damaged or crafted block cannot make it allocate more."""
    rows = max(1, MAX_BLOCK_BYTES // batch.dtype.itemsize)
    for at in range(0, len(batch), rows):
        yield batch[at:at + rows]


def _write_all(fd: int, parts: list) -> None:
    views = [memoryview(p).cast("B") for p in parts]
    written = 0
    while views:
        try:
            done = os.writev(fd, views)
        except OSError:
            if written:
                _cut_torn_chunk(fd, written)
            raise
        written += done
        # a short write (a full disk) leaves the rest for the next writev, which then fails
        while views and done >= len(views[0]):
            done -= len(views[0])
            views.pop(0)
        if views:
            views[0] = views[0][done:]


def _cut_torn_chunk(fd: int, written: int) -> None:
    """A write that failed halfway (a full disk) leaves part of a chunk at the end: cut it off,
    so the trace ends on a whole chunk, readable up to the fault with nothing damaged. With
    O_APPEND our offset is just past our own bytes; anything another writer appended after them
    sat behind the torn part and could never have been read."""
    try:
        os.ftruncate(fd, os.lseek(fd, 0, os.SEEK_CUR) - written)
    except OSError:
        pass   # the reader still stops at the torn chunk and keeps what came before it


class TraceWriter:
    """Appends chunks to a new .iwt file. Safe to call from several threads."""

    def __init__(self, path, start_meta: dict, mode: int = DEFAULT_MODE, fd: int | None = None):
        """A new trace at `path` (an old file of that name is replaced, a symlink refused), with
        permissions `mode`; or, given `fd`, the new file the caller made exclusively there."""
        self.path = str(path)
        lay = layout()
        self._event, self._meta = lay.event, lay.meta
        # the collector's ring-buffer reader and its output pumps share one writer
        self._lock = threading.Lock()
        self._closed = False
        self._waiting: dict[int, list[np.ndarray]] = {}   # kind -> small batches not yet written
        self.bytes_written = 0
        # never through a planted name (iowitness/outputfile.py); O_APPEND: a chunk goes out in one
        # writev, whole, even when another process (the output capture of a launched benchmark,
        # collector/launch.py) appends chunks too
        self._fd = fd if fd is not None else Output(self.path, mode, "trace", TRACE_HINT).open_growing()
        # held until the file is closed: a reader (show of a trace still being recorded) can
        # tell a trace being written from one whose collector stopped (tracereader.being_written)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pass   # a file system without locks: readers cannot tell, and say "stopped before the end"
        self._write(HEADER.pack(MAGIC, FORMAT_VERSION, 0))
        self._chunk(START, json_bytes({**start_meta, "layout": describe_layout(lay)}))
        # a trace killed in its first second still names what it traced
        self.flush()

    def fileno(self) -> int:
        """The trace's fd (O_APPEND), for a process that appends chunks to this same file."""
        return self._fd

    def write_events(self, records) -> None:
        """One EVENTS chunk: an array of layout().event, or the raw bytes of such records."""
        self.write_records(EVENTS, records, self._event)

    def write_facts(self, records) -> None:
        """One FACTS chunk: an array of layout().meta, or the raw bytes of such records."""
        self.write_records(FACTS, records, self._meta)

    def write_records(self, kind: int, records, dtype: np.dtype) -> None:
        """Records of `kind` (an array of `dtype`, or the raw bytes of such records), stored as
        codec blocks in chunks of that kind. A batch of GATHER_ROWS or more is written at once;
        smaller ones are gathered and written together by the next flush (or sooner, once they
        add up to GATHER_ROWS). Nothing is written for an empty batch."""
        records = self._records_of(records, dtype)
        if not len(records):
            return
        with self._lock:
            if self._closed:
                raise ValueError(f"trace {self.path} is closed")
            waiting = self._waiting.setdefault(kind, [])
            if len(records) >= GATHER_ROWS:
                batch = _joined(waiting + [records]) if waiting else records
            else:
                # a copy: raw bytes may be a buffer the caller reuses
                waiting.append(np.frombuffer(records.tobytes(), dtype))
                if sum(len(w) for w in waiting) < GATHER_ROWS:
                    return
                batch = _joined(waiting)
            waiting.clear()
        # encoded outside the lock: the output pumps need not wait for the compression
        for block in _blocks(batch):
            self._chunk(kind, codec.encode(block))

    def _write_waiting(self) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, {}
        for kind, batches in waiting.items():
            if batches:
                for block in _blocks(_joined(batches)):
                    self._chunk(kind, codec.encode(block))

    def write_device(self, block, offcpu) -> None:
        """BLOCK and OFFCPU chunks: arrays of iow_block and iow_offcpu records (empty ones are skipped)."""
        lay = layout()
        self.write_records(BLOCK, block, lay.structs["iow_block"])
        self.write_records(OFFCPU, offcpu, lay.structs["iow_offcpu"])

    def write_printed(self, records) -> None:
        """PRINTED chunks: iow_output records, the benchmark's writes to its fd 1 and 2."""
        self.write_records(PRINTED, records, layout().structs["iow_output"])

    def write_sample(self, sample: dict) -> None:
        """One SAMPLES chunk: /proc/diskstats and /proc/stat read at one moment."""
        self._chunk(SAMPLES, json_bytes(sample))

    def write_output(self, stream: str, data: bytes) -> None:
        if stream not in STREAMS:
            raise ValueError(f"stream must be one of {sorted(STREAMS)}, not {stream!r}")
        if data:
            self._chunk(OUTPUT, bytes([STREAMS[stream]]) + bytes(data))

    def write_summary(self, records: np.ndarray) -> None:
        """One SUMMARY chunk: a snapshot of the kernel's aggregates (rows of any flat dtype)."""
        fields = [(name, records.dtype.fields[name][0]) for name in records.dtype.names]
        description = json_bytes([[name, sub.base.str, list(sub.shape)] for name, sub in fields])
        rows = np.ascontiguousarray(records)
        self._chunk(SUMMARY, SUMMARY_HEAD.pack(len(description)) + description + rows.tobytes())

    def file_bytes(self) -> int:
        """The trace's size now: this writer's chunks and any another process appended."""
        with self._lock:
            return self._guard(os.fstat, self._fd).st_size

    def write_counters(self, counters: dict) -> None:
        self._chunk(COUNTERS, json_bytes(counters))

    def flush(self) -> None:
        """Write the records waiting: from then on they survive a SIGKILL (every chunk is in the
        kernel's hands as soon as it is written)."""
        self._write_waiting()

    def close(self, end_meta: dict) -> None:
        """Write what is waiting, then END, the mark of a complete trace, and close."""
        if not self._closed:
            try:
                self._write_waiting()
                census = tracecensus.take(self._fd)   # what the file holds, for the reader to compare
                self._chunk(END, json_bytes({**end_meta, "chunks": census} if census else end_meta))
                kept = still_holds(self.path, self._fd)
            finally:
                self.abort()
            if not kept:   # say "saved" only of a file that is there
                lost = OutputError(f"the trace {self.path} was replaced or removed by another program while "
                                   "this run recorded into it: this run's events are not there; give each run "
                                   "its own -o")
                lost.trace_lost = True
                raise lost

    def abort(self) -> None:
        """Close without END: the trace will read as incomplete, with all it holds so far."""
        if self._closed:
            return
        try:
            self._write_waiting()
        finally:
            with self._lock:
                if not self._closed:
                    self._closed = True
                    os.close(self._fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.abort()   # a no-op after close(end_meta)

    @staticmethod
    def _records_of(records, dtype: np.dtype) -> np.ndarray:
        if isinstance(records, np.ndarray):
            if records.dtype != dtype:
                raise TypeError(f"records have dtype {records.dtype}, expected {dtype}")
            return records
        view = memoryview(records).cast("B")
        if len(view) % dtype.itemsize:
            raise ValueError(f"{len(view)} bytes are not whole {dtype.itemsize}-byte records")
        return np.frombuffer(view, dtype)

    def _chunk(self, kind: int, payload) -> None:
        with self._lock:
            if self._closed:
                raise ValueError(f"trace {self.path} is closed")
            self.bytes_written += self._guard(append_chunk, self._fd, kind, payload)

    def _write(self, data) -> None:
        self._guard(_write_all, self._fd, [data])
        self.bytes_written += len(data)

    def _guard(self, call, *args):
        try:
            return call(*args)
        except OSError as exc:
            raise self._cannot_write(exc) from None

    def _cannot_write(self, exc: OSError) -> OutputError:
        return OutputError(f"cannot write trace {self.path}: {exc.strerror or exc}; "
                           "choose another place with -o")

