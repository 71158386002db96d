"""The protobuf wire format, a column at a time: many messages of one shape encoded together
with numpy, for reporters/perfetto.py (a trace of 10 M calls is 20 M packets; one Python call
per field per packet would take minutes).

A `Col` is n byte strings laid end to end (data, with each row's start and length). A field is
a Col (its tag and value for every row, or nothing for a row where it is absent); a message is
the row-wise concatenation of its fields (`join`); a sub-message field is `nested(number,
message)`. Only what Perfetto's TracePacket needs: varints (unsigned, and int64 as two's
complement, as protobuf writes a negative int64) and length-delimited fields.
https://protobuf.dev/programming-guides/encoding/
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VARINT, LEN = 0, 2


@dataclass
class Col:
    data: np.ndarray     # uint8, the rows end to end
    starts: np.ndarray   # int64, where each row begins in data
    lens: np.ndarray     # int64, its length (0: the field is absent from this row)

    def __len__(self) -> int:
        return len(self.lens)


def varint_bytes(value: int) -> bytes:
    """One varint (a non-negative int, or a negative int64 as two's complement)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint_bytes(number << 3 | wire)


def _ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The indices starts[i] .. starts[i] + lens[i] - 1 of every row, rows one after another."""
    total = int(lens.sum())
    if not total:
        return np.empty(0, np.int64)
    before = np.cumsum(lens) - lens
    return np.arange(total, dtype=np.int64) + np.repeat(starts - before, lens)


def varints(values: np.ndarray) -> Col:
    """Each value as a varint; int64 values below 0 take 10 bytes, as protobuf writes them."""
    x = np.asarray(values)
    x = x.astype(np.int64).view(np.uint64) if x.dtype.kind == "i" else x.astype(np.uint64)
    n = len(x)
    groups = np.zeros((n, 10), np.uint8)
    lens = np.ones(n, np.int64)
    for k in range(10):
        low = (x & np.uint64(0x7F)).astype(np.uint8)
        x = x >> np.uint64(7)
        more = x != 0
        groups[:, k] = low | (more.astype(np.uint8) << 7)
        if not more.any():
            break
        lens += more
    keep = np.arange(groups.shape[1]) < lens[:, None]
    return Col(groups[keep], np.cumsum(lens) - lens, lens)


def const(n: int, raw: bytes) -> Col:
    """The same bytes in each of n rows."""
    data = np.frombuffer(raw, np.uint8)
    return Col(np.tile(data, n), np.arange(n, dtype=np.int64) * len(data), np.full(n, len(data), np.int64))


def join(n: int, parts: list) -> Col:
    """Row i of the result is row i of every part, in order; a part may be bytes (the same in
    every row) or a Col."""
    lens = np.zeros(n, np.int64)
    for part in parts:
        lens += len(part) if isinstance(part, bytes) else part.lens
    starts = np.cumsum(lens) - lens
    out = np.empty(int(lens.sum()), np.uint8)
    at = starts.copy()
    for part in parts:
        if isinstance(part, bytes):
            if part:
                out[at[:, None] + np.arange(len(part))] = np.frombuffer(part, np.uint8)
                at += len(part)
        else:
            out[_ranges(at, part.lens)] = part.data[_ranges(part.starts, part.lens)]
            at += part.lens
    return Col(out, starts, lens)


def where(col: Col, present: np.ndarray) -> Col:
    """The column with rows left empty where `present` is False (the field absent there)."""
    return Col(col.data, col.starts, np.where(present, col.lens, 0))


def field_varint(number: int, values: np.ndarray, present: np.ndarray | None = None) -> Col:
    col = join(len(values), [tag(number, VARINT), varints(values)])
    return col if present is None else where(col, present)


def nested(number: int, message: Col) -> Col:
    """A length-delimited field holding each row of `message`."""
    col = join(len(message), [tag(number, LEN), varints(message.lens), message])
    return col


def packets(packet: Col) -> bytes:
    """Rows as `repeated TracePacket packet = 1` of a Trace: what a .perfetto-trace file is."""
    return nested(1, packet).data.tobytes() if len(packet) else b""


# one message at a time (descriptors, interned names): plain Python

def msg_varint(number: int, value: int) -> bytes:
    return tag(number, VARINT) + varint_bytes(value)


def msg_bytes(number: int, payload: bytes | str) -> bytes:
    raw = payload.encode("utf-8", "replace") if isinstance(payload, str) else payload
    return tag(number, LEN) + varint_bytes(len(raw)) + raw
