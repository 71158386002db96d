"""A trace read block by block: memory bounded by one block of events, not by the trace.

    >>> with tracestream.open_trace("run.iwt") as stream:
    ...     stream.data.meta, stream.data.facts          # all of it, as tracereader.read gives
    ...     for block in stream.blocks(["op", "latency_ns"]):
    ...         block["op"], block["latency_ns"]          # numpy columns, file order

The file is mapped, not read: the reader (collector/format/tracereader.py, `scan`) checks every
chunk exactly as `read` does (CRCs, heads, that each chunk of events decodes, the damaged
tail), so a streamed trace holds the same events, cut at the same place, with the same meta.
Pages already walked are handed back to the kernel (MADV_DONTNEED on a read-only shared
mapping drops them from this process; the page cache keeps them), so the resident size stays
that of the blocks being decoded.

Blocks are in file order. `read` sorts the events by start time when the CPUs' records
interleave; a consumer of blocks must not depend on order (aggregates, percentiles), or sort
itself. The first row of each block is its position in file order (`block.first_row`).
"""

from __future__ import annotations

import mmap
import os
import stat

import numpy as np

from iowitness.collector.format import codec
from iowitness.collector.format.traceformat import CHUNK
from iowitness.collector.format.tracereader import _NOT_REGULAR, TraceData, _mark_active, being_written, open_fd, scan
from iowitness.errors import BadTrace

# events decoded at once: 1 Mi rows of the probe's record are ~70 MiB of columns
BLOCK_ROWS = 1 << 20


class Block(dict):
    """One block's columns (name -> array), and where it starts among the trace's events."""

    first_row: int = 0
    number: int = 0    # its place among the blocks

    def __len__(self) -> int:
        return len(next(iter(self.values()))) if dict.__len__(self) else 0


class Stream:
    def __init__(self, path, data: TraceData, view: memoryview, mapped: mmap.mmap | None, block_rows: int):
        self.path, self.data, self._view, self._map, self.block_rows = path, data, view, mapped, block_rows

    @property
    def event_count(self) -> int:
        return self.data.event_rows

    def blocks(self, columns=None, block_rows: int | None = None, skip: int = 0):
        """The events, block by block of about `block_rows` rows (whole chunks: a chunk is
        never split), as a Block of the `columns` asked for (all fields by default); the
        first `skip` blocks are passed over without decoding them."""
        yield from _blocks(self.data, self.data.event_batches, self.data.event_dtype, columns,
                           block_rows or self.block_rows, skip)

    def release(self, begin: int, end: int) -> None:
        """Give the pages of [begin, end) back: walked once, they are not needed again."""
        if self._map is None or not hasattr(self._map, "madvise"):
            return
        page = mmap.PAGESIZE
        lo, hi = begin // page * page, min(-(-end // page) * page, len(self._map))
        if hi > lo:
            self._map.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def close(self) -> None:
        # the trace's arrays and the batches are views of the mapping: dropped before it closes
        self.data.event_batches = []
        self.data.device_batches = {}
        try:
            self._view.release()
            if self._map is not None:
                self._map.close()
        except BufferError:
            pass   # a view still held elsewhere (a summary's rows): the mapping closes with it

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_trace(path, block_rows: int = BLOCK_ROWS, device_blocks: bool = False) -> Stream:
    """Map a .iwt file and check it (BadTrace as `tracereader.read` raises it). `device_blocks`:
    its BLOCK and OFFCPU records are left in the file too, for record_blocks (the analysis:
    analysis/read/device_records.py), instead of decoded whole into data.block and data.offcpu."""
    fd = open_fd(path)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = next((name for test, name in _NOT_REGULAR if test(info.st_mode)), "not a regular file")
            raise BadTrace(f"{path} is {what}, not a trace file; give the file that `iowitness run -o` wrote")
        active = being_written(fd)
        # a trace still being written grows: what is mapped is what was there at this moment
        mapped = mmap.mmap(fd, info.st_size, access=mmap.ACCESS_READ) if info.st_size else None
    except OSError as exc:
        raise BadTrace(f"cannot read trace {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    view = memoryview(mapped) if mapped is not None else memoryview(b"")
    stream = Stream(path, None, view, mapped, block_rows)
    # the check walks every page: each stretch is handed back once walked
    stream.data = _mark_active(scan(path, view, stream.release, device_blocks), active)
    stream.data.release = stream.release   # record_blocks hands the device records' pages back too
    stream.release(0, len(view))
    return stream


def record_blocks(data: TraceData, name: str, columns, block_rows: int = BLOCK_ROWS, only=None):
    """A scanned trace's records of kind `name` ("block", "offcpu": TraceData.device_batches),
    block by block in file order, as Blocks of the `columns` asked for (`block.number`: its
    place among them); nothing when the trace holds no chunk of them. `only`: the numbers of
    the blocks wanted (the others are passed over without decoding them); None: all."""
    batches = data.device_batches.get(name)
    if batches is None:
        return
    yield from _blocks(data, batches, data.device_dtypes[name], columns, block_rows, 0, only)


def _blocks(data: TraceData, batches: list, dtype: np.dtype, columns, rows_wanted: int, skip: int, only=None):
    """Blocks of whole chunks of `batches` (records of `dtype`), about `rows_wanted` rows each,
    from the `skip`-th on (those in `only`, when given)."""
    names = [n for n in (columns or dtype.names) if not n.startswith("pad")]
    pending, held, first, number = [], 0, 0, 0

    def wanted() -> bool:
        return number >= skip and (only is None or number in only)
    for batch in batches:
        pending.append(batch)
        held += batch[2]
        if held >= rows_wanted:
            if wanted():
                yield _decode(data, dtype, pending, held, names, first, number)
            first += held
            number += 1
            pending, held = [], 0
    if pending and wanted():
        yield _decode(data, dtype, pending, held, names, first, number)


def _decode(data: TraceData, dtype: np.dtype, batches: list, rows: int, names, first: int, number: int) -> Block:
    block = Block({n: np.empty((rows, *dtype.fields[n][0].shape), dtype.fields[n][0].base) for n in names})
    block.first_row, block.number = first, number
    at = 0
    for _, payload, n in batches:
        if data.version == 1:
            records = np.frombuffer(payload, dtype)
            for name, column in block.items():
                column[at:at + n] = records[name]
        else:
            # scan() decoded each chunk once already: it cannot fail now
            codec.decode_columns(payload, dtype, block, at)
        at += n
    release = getattr(data, "release", None)
    if release is not None:
        release(batches[0][0], batches[-1][0] + CHUNK.size + len(batches[-1][1]))
    return block
