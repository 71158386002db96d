"""Lossless columnar encoding of a structured numpy array: the record chunks of trace format 2.

A batch of probe records is mostly redundant from row to row: a 4 KiB sequential read differs
from the one before it in its start time, its latency and its offset (by +4096), and in
nothing else. Stored row by row (72 bytes per event) that redundancy is hard to see for a
fast compressor; stored column by column, a column that never changes is written once, a
column that grows steadily is written as differences, every column is narrowed to the bytes
its values need and split into byte planes, and zstd then stores long runs in almost nothing.

Everything is derived from the dtype (the START chunk's layout, itself parsed from events.h),
so the codec has no field list of its own, and it round-trips every byte of every record,
padding included: decode(encode(a)).tobytes() == a.tobytes() for any array of any such dtype.

Byte layout of a block (all integers little-endian; docs/trace-format.md has the tables):

    head     u32 rows, u32 itemsize, u16 columns, u8 compressor (1 = zstd), u8 reserved (0)
    frame    one zstd frame holding
               the column table: per column, in offset order, u8 transform, u8 width, u64 first
               the stored bytes of each column, one after the other

The column table is compressed too: it is mostly zeros, and a slow benchmark's batches of a
few events would otherwise pay 130 bytes each for it.

Columns are the dtype's fields in offset order, plus one byte column per gap between them.
Integer fields of 1, 2, 4 or 8 bytes are numbers; anything else (byte arrays, floats) is bytes.
"""

from __future__ import annotations

import struct
from functools import lru_cache

import numpy as np
import zstandard

from iowitness.collector.format.traceformat import MAX_BLOCK_BYTES

HEAD = struct.Struct("<IIHBB")      # rows, itemsize, columns, compressor, reserved
COLUMN = struct.Struct("<BBQ")      # transform, width, first
ZSTD = 1
# the fastest positive level: what there is to find here is runs and repeats, and the
# collector pays for every nanosecond (issue 5: 0.5 CPU-s per million events in all)
LEVEL = 1

# how a column is stored
ZERO = 0      # every byte of the column is 0: nothing stored
BYTES = 1     # rows * size bytes, row by row
CONST = 2     # numbers: every value is `first`: nothing stored
PLAIN = 3     # numbers, each narrowed to `width` bytes (sign-extended back if the field is signed)
DELTA = 4     # numbers: `first`, then rows-1 differences (mod 2**bits), each a signed `width`-byte number

_WIDTHS = (1, 2, 4, 8)


class CodecError(ValueError):
    """A block that does not decode: wrong dtype, damaged, or from an unknown writer."""


class _Column:
    __slots__ = ("index", "name", "offset", "size", "number", "signed", "words")

    def __init__(self, index, name, offset, size, number, signed, words):
        self.index, self.name, self.offset, self.size = index, name, offset, size
        self.number, self.signed, self.words = number, signed, words

    @property
    def key(self) -> str:
        return f"c{self.index}"


class _Plan:
    """How records of one dtype split into columns, and the views that reach them quickly."""

    def __init__(self, dtype: np.dtype):
        if dtype.names is None:
            raise TypeError(f"the codec takes structured arrays, not {dtype}")
        fields = sorted(((dtype.fields[n][1], n, dtype.fields[n][0]) for n in dtype.names),
                        key=lambda f: f[0])
        spans, at = [], 0
        for offset, name, sub in fields:
            if offset < at:
                raise TypeError(f"field {name} overlaps the one before it: the codec cannot store {dtype}")
            if offset > at:
                spans.append((f"gap@{at}", at, offset - at, None))
            spans.append((name, offset, sub.itemsize, sub))
            at = offset + sub.itemsize
        if at < dtype.itemsize:
            spans.append((f"gap@{at}", at, dtype.itemsize - at, None))
        # records seen as rows of the widest words that divide them: one min/max per word
        # finds the constant columns (a column is constant when every word it touches is)
        self.word = next(w for w in (8, 4, 2, 1) if dtype.itemsize % w == 0)
        self.columns = tuple(
            _Column(k, name, offset, size, sub is not None and _is_number(sub),
                    sub is not None and _is_number(sub) and sub.kind == "i",
                    slice(offset // self.word, (offset + size - 1) // self.word + 1))
            for k, (name, offset, size, sub) in enumerate(spans))
        self.itemsize = dtype.itemsize
        self.view = np.dtype({
            "names": [c.key for c in self.columns],
            "formats": [f"<{'i' if c.signed else 'u'}{c.size}" if c.number else ("u1", (c.size,))
                        for c in self.columns],
            "offsets": [c.offset for c in self.columns],
            "itemsize": dtype.itemsize,
        })

    def words(self, records: np.ndarray) -> np.ndarray:
        return records.view(np.uint8).reshape(len(records), self.itemsize).view(f"<u{self.word}")


def _is_number(sub: np.dtype) -> bool:
    return sub.shape == () and sub.kind in "iub" and sub.itemsize in _WIDTHS


@lru_cache(maxsize=32)
def _plan(dtype: np.dtype) -> _Plan:
    return _Plan(dtype)


def _column_range(words: np.ndarray, rows_per_line: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Minimum and maximum of each column of a (rows, k) array.

    numpy reduces over axis 0 of a narrow array one short row at a time (about 140 ns per
    72-byte record here); folding 64 rows into one line first makes the inner loop long.
    """
    rows, k = words.shape
    full = rows // rows_per_line * rows_per_line
    lines = words[:full].reshape(-1, rows_per_line * k)
    lo = lines.min(axis=0).reshape(rows_per_line, k).min(axis=0) if full else words[:1].min(axis=0)
    hi = lines.max(axis=0).reshape(rows_per_line, k).max(axis=0) if full else words[:1].max(axis=0)
    if full < rows:
        lo = np.minimum(lo, words[full:].min(axis=0))
        hi = np.maximum(hi, words[full:].max(axis=0))
    return lo, hi


def _width(lo: int, hi: int, signed: bool) -> int:
    """Fewest bytes (1, 2, 4, 8) that hold every number in [lo, hi]."""
    for width in _WIDTHS:
        bits = 8 * width
        if (-(1 << (bits - 1)) <= lo and hi < 1 << (bits - 1)) if signed else hi < 1 << bits:
            return width
    return 8


def _planes(values: np.ndarray, width: int, signed: bool, out: np.ndarray) -> int:
    """Narrow to `width` bytes and split into byte planes (every low byte, then the next...)
    written at the start of `out`; returns how many bytes that took.

    One strided copy per plane: numpy's own transpose of a (rows, width) byte array walks
    the short axis innermost and is ten times slower.
    """
    narrow = values.astype(f"<{'i' if signed else 'u'}{width}", copy=False)
    rows = len(narrow)
    by_byte = narrow.view(np.uint8).reshape(rows, width)
    for plane in range(width):
        out[plane * rows:(plane + 1) * rows] = by_byte[:, plane]
    return rows * width


def _from_planes(body: bytes, at: int, count: int, width: int, signed: bool) -> np.ndarray:
    kind = f"<{'i' if signed else 'u'}{width}"
    planes = np.frombuffer(body, np.uint8, count * width, at)
    if width == 1:
        return planes.view(kind)
    values = planes[:count].astype(f"<u{width}")
    for plane in range(1, width):
        part = planes[plane * count:(plane + 1) * count].astype(f"<u{width}")
        part <<= 8 * plane
        values |= part
    return values.view(kind)


def _fill(words: np.ndarray, row: np.ndarray) -> None:
    """Every row of `words` (rows, k) set to `row`, in long runs (a broadcast of one short row
    over millions walks the short axis innermost, as in _planes)."""
    rows, k = words.shape
    block = min(rows, 256)
    tile = np.tile(row, (block, 1))
    full = rows // block * block
    words[:full].reshape(-1, block * k)[...] = tile.reshape(-1)
    words[full:] = tile[:rows - full]


def encode(records, dtype: np.dtype | None = None, level: int = LEVEL) -> bytes:
    """One block holding `records` (a 1-D structured array, or raw bytes of `dtype` records)."""
    if not isinstance(records, np.ndarray):
        records = np.frombuffer(records, dtype)
    plan = _plan(records.dtype)
    records = np.ascontiguousarray(records)
    rows = len(records)
    view = records.view(plan.view)
    if rows:
        lo, hi = _column_range(plan.words(records))
        steady = lo == hi
    heads = []
    # the column table, then the stored bytes of every column, one after the other; no
    # column stores more than its own size per row, so the record array's size is enough
    table = COLUMN.size * len(plan.columns)
    stored = np.empty(table + rows * plan.itemsize, np.uint8)
    at = table
    for column in plan.columns:
        values = view[column.key]
        if not column.number:
            raw = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
            if raw.any():
                heads.append(COLUMN.pack(BYTES, 0, 0))
                stored[at:at + raw.size] = raw
                at += raw.size
            else:
                heads.append(COLUMN.pack(ZERO, 0, 0))
            continue
        if not rows:
            heads.append(COLUMN.pack(ZERO, 0, 0))
            continue
        first = int(values[0]) & ((1 << 8 * column.size) - 1)
        if steady[column.words].all():
            heads.append(COLUMN.pack(CONST, 0, first) if first else COLUMN.pack(ZERO, 0, 0))
            continue
        values = np.ascontiguousarray(values)
        lo, hi = int(values.min()), int(values.max())
        if lo == hi:
            heads.append(COLUMN.pack(CONST, 0, first) if first else COLUMN.pack(ZERO, 0, 0))
            continue
        plain = _width(lo, hi, column.signed)
        if plain > 1:
            # differences mod 2**bits, read as signed: any sequence round-trips, wrap included
            unsigned = values.view(f"<u{column.size}")
            steps = (unsigned[1:] - unsigned[:-1]).view(f"<i{column.size}")
            delta = _width(int(steps.min()), int(steps.max()), True)
            if delta < plain:
                heads.append(COLUMN.pack(DELTA, delta, first))
                at += _planes(steps, delta, True, stored[at:])
                continue
        heads.append(COLUMN.pack(PLAIN, plain, 0))
        at += _planes(values, plain, column.signed, stored[at:])
    stored[:table] = np.frombuffer(b"".join(heads), np.uint8)
    body = zstandard.ZstdCompressor(level=level).compress(stored[:at])
    return HEAD.pack(rows, plan.itemsize, len(plan.columns), ZSTD, 0) + body


def rows_of(block) -> int:
    """How many records a block holds, from its head alone (unchecked: see checked_rows)."""
    if len(block) < HEAD.size:
        raise CodecError("block shorter than its head")
    return HEAD.unpack_from(block)[0]


def checked_rows(block, dtype: np.dtype) -> int:
    """How many records a block of `dtype` holds, once its head matches the dtype and what it
    would decode to is known to be bounded: at most MAX_BLOCK_BYTES of records (the writer
    splits larger batches), and a zstd frame that declares no more than that. CodecError
    otherwise, before anything is allocated or decompressed."""
    plan = _plan(dtype)
    rows, itemsize, count, compressor, _ = _head(block, plan)
    if rows * itemsize > MAX_BLOCK_BYTES:
        raise CodecError(f"block of {rows:,} records of {itemsize} bytes is larger than a writer writes "
                         f"({MAX_BLOCK_BYTES >> 20} MiB)")
    _check_declared(block, COLUMN.size * count + rows * itemsize)
    return rows


def _check_declared(block, most: int) -> None:
    """A frame that declares more than `most` bytes is refused before zstd allocates them."""
    try:
        # the frame header is at most 18 bytes
        declared = zstandard.frame_content_size(bytes(block[HEAD.size:HEAD.size + 18]))
    except zstandard.ZstdError as exc:
        raise CodecError(f"compressed frame has no valid header: {exc}") from None
    if declared > most:
        raise CodecError(f"compressed frame declares {declared:,} bytes, more than its records can take ({most:,})")


def decode(block, dtype: np.dtype) -> np.ndarray:
    """The records of one block, as a new array of `dtype`."""
    out = np.empty(checked_rows(block, dtype), dtype)
    decode_into(block, out)
    return out


def decode_into(block, out: np.ndarray) -> None:
    """Decode a block into `out`, a contiguous array of exactly rows_of(block) records."""
    plan = _plan(out.dtype)
    rows, heads, body = _parse(block, plan, len(out))
    view = out.view(plan.view)
    # constant columns first, all at once: a template record broadcast over every row
    template = np.zeros(1, plan.view)
    for (transform, _, first), column in zip(heads, plan.columns):
        if transform == CONST:
            template[column.key] = np.array(first, f"<u{column.size}").view(template[column.key].dtype)
    if rows:
        _fill(plan.words(out), plan.words(template)[0])
    at = COLUMN.size * len(heads)
    for (transform, width, first), column in zip(heads, plan.columns):
        target = view[column.key]
        if transform == BYTES:
            size = rows * column.size
            target[...] = np.frombuffer(body, np.uint8, size, at).reshape(rows, column.size)
            at += size
        elif transform == PLAIN:
            target[...] = _from_planes(body, at, rows, width, column.signed)
            at += rows * width
        elif transform == DELTA and rows:
            unsigned = f"<u{column.size}"
            steps = np.empty(rows, unsigned)
            steps[0] = first
            steps[1:] = _from_planes(body, at, rows - 1, width, True).astype(f"<i{column.size}").view(unsigned)
            at += (rows - 1) * width
            np.cumsum(steps, dtype=unsigned, out=target.view(unsigned))


def decode_columns(block, dtype: np.dtype, columns: dict, at_row: int) -> int:
    """Decode a block of `dtype` records into separate column arrays: columns[field][at_row:]
    gets the field's values (a 1-D array per number field, (rows, size) bytes per other
    field; fields not in `columns`, and padding, are skipped). Returns the block's rows.

    The analysis reads whole columns; decoding into them directly spares it a copy of each
    field out of 72-byte records."""
    plan = _plan(dtype)
    rows, heads, body = _parse(block, plan, checked_rows(block, dtype))
    at = COLUMN.size * len(heads)
    for (transform, width, first), column in zip(heads, plan.columns):
        target = columns.get(column.name)
        if target is not None:
            target = target[at_row:at_row + rows]
            if column.number:
                target = target.view(f"<u{column.size}")
            else:
                target = target.reshape(rows, -1).view(np.uint8)
        if transform == BYTES:
            size = rows * column.size
            if target is not None:
                target[...] = np.frombuffer(body, np.uint8, size, at).reshape(rows, column.size)
            at += size
        elif transform == PLAIN:
            if target is not None:
                values = _from_planes(body, at, rows, width, column.signed)
                wide = values.astype(f"<{'i' if column.signed else 'u'}{column.size}", copy=False)
                target[...] = wide.view(f"<u{column.size}")
            at += rows * width
        elif transform == DELTA and rows:
            if target is not None:
                unsigned = f"<u{column.size}"
                target[0] = first
                target[1:] = _from_planes(body, at, rows - 1, width, True).astype(f"<i{column.size}").view(unsigned)
                np.cumsum(target, dtype=unsigned, out=target)
            at += (rows - 1) * width
        elif target is not None:    # ZERO or CONST
            target[...] = first if transform == CONST else 0
    return rows


def _head(block, plan: _Plan) -> tuple:
    if len(block) < HEAD.size:
        raise CodecError("block shorter than its head")
    head = rows, itemsize, count, compressor, _ = HEAD.unpack_from(block)
    if itemsize != plan.itemsize or count != len(plan.columns):
        raise CodecError(f"block of {count} columns of {itemsize}-byte records does not match "
                         f"the layout ({len(plan.columns)} columns of {plan.itemsize}-byte records)")
    if compressor != ZSTD:
        raise CodecError(f"unknown compressor {compressor}")
    return head


def _parse(block, plan: _Plan, rows_wanted: int) -> tuple[int, list, bytes]:
    """Check a block's head against the plan, decompress its frame, check the column table.
    The caller has bounded the rows (checked_rows): zstd trusts a frame's declared size and
    would allocate it whole."""
    rows, _, count, _, _ = _head(block, plan)
    if rows != rows_wanted:
        raise CodecError(f"block holds {rows} records, not {rows_wanted}")
    table = COLUMN.size * count
    _check_declared(block, table + rows * plan.itemsize)
    try:
        body = zstandard.ZstdDecompressor().decompress(
            block[HEAD.size:], max_output_size=table + rows * plan.itemsize)
    except zstandard.ZstdError as exc:
        raise CodecError(f"compressed frame does not decode: {exc}") from None
    if len(body) < table:
        raise CodecError("compressed frame shorter than its column table")
    heads = [COLUMN.unpack_from(body, COLUMN.size * k) for k in range(count)]
    expected = table
    for (transform, width, first), column in zip(heads, plan.columns):
        if transform == BYTES and not column.number:
            expected += rows * column.size
        elif transform == PLAIN and column.number and width in _WIDTHS and width <= column.size:
            expected += rows * width
        elif transform == DELTA and column.number and width in _WIDTHS and width <= column.size:
            expected += max(rows - 1, 0) * width
        elif not (transform == ZERO or (transform == CONST and column.number and first >> 8 * column.size == 0)):
            raise CodecError(f"column {column.name}: transform {transform} (width {width}) is not valid")
    if len(body) != expected:
        raise CodecError(f"compressed frame holds {len(body)} bytes, not {expected}")
    return rows, heads, body
