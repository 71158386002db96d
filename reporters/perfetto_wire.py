"""The protobuf wire format, a column at a time: many messages of one shape encoded together
with numpy, for reporters/perfetto.py (a trace of 10 M calls is 20 M packets; one Python call
per field per packet would take minutes).

A `Col` is n byte strings, one per row of a matrix with a mask of the row's bytes. A field is
a Col (its tag and value for every row, or nothing for a row where it is absent); a message is
the row-wise concatenation of its fields (`join`: a stack of matrices, no per-byte index); a
sub-message field is `nested(number, message)`; the file is the masked bytes, row by row.
Only what Perfetto's TracePacket needs: varints (unsigned, and int64 as two's complement, as
protobuf writes a negative int64), fixed 8-byte doubles and length-delimited fields.
https://protobuf.dev/programming-guides/encoding/
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VARINT, LEN = 0, 2


@dataclass
class Col:
    """n rows of bytes as a matrix: row i is cells[i][mask[i]], in order (a row's bytes need not
    be contiguous: joined fields keep their padding, masked out, so that a join is a stack)."""
    cells: np.ndarray   # uint8 (n, width)
    mask: np.ndarray    # bool (n, width): which bytes are the row's

    def __len__(self) -> int:
        return len(self.cells)

    @property
    def lens(self) -> np.ndarray:
        return self.mask.sum(axis=1, dtype=np.int64)

    def flat(self) -> bytes:
        """The rows end to end."""
        return self.cells[self.mask].tobytes()

    def row(self, i: int) -> bytes:
        return self.cells[i][self.mask[i]].tobytes()


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


def varints(values: np.ndarray) -> Col:
    """Each value as a varint; int64 values below 0 take 10 bytes, as protobuf writes them."""
    x = np.asarray(values)
    x = x.astype(np.int64).view(np.uint64) if x.dtype.kind == "i" else x.astype(np.uint64)
    n = len(x)
    groups = np.zeros((n, 10), np.uint8)
    lens = np.ones(n, np.int64)
    width = 1
    for k in range(10):
        low = (x & np.uint64(0x7F)).astype(np.uint8)
        x = x >> np.uint64(7)
        more = x != 0
        groups[:, k] = low | (more.astype(np.uint8) << 7)
        width = k + 1
        if not more.any():
            break
        lens += more
    return Col(groups[:, :width], np.arange(width) < lens[:, None])


def fixed(raw: np.ndarray) -> Col:
    """Rows of raw bytes of one width (uint8 (n, width)), all present."""
    return Col(raw, np.ones(raw.shape, dtype=bool))


def join(n: int, parts: list) -> Col:
    """Row i of the result is row i of every part, in order; a part may be bytes (the same in
    every row) or a Col."""
    matrices, masks = [], []
    for part in parts:
        if isinstance(part, bytes):
            if part:
                matrices.append(np.broadcast_to(np.frombuffer(part, np.uint8), (n, len(part))))
                masks.append(np.ones((n, len(part)), dtype=bool))
        else:
            matrices.append(part.cells)
            masks.append(part.mask)
    if not matrices:
        return Col(np.empty((n, 0), np.uint8), np.empty((n, 0), dtype=bool))
    return Col(np.hstack(matrices), np.hstack(masks))


def where(col: Col, present: np.ndarray) -> Col:
    """The column with rows left empty where `present` is False (the field absent there)."""
    return Col(col.cells, col.mask & np.asarray(present, dtype=bool)[:, None])


def field_varint(number: int, values: np.ndarray, present: np.ndarray | None = None) -> Col:
    col = join(len(values), [tag(number, VARINT), varints(values)])
    return col if present is None else where(col, present)


def nested(number: int, message: Col) -> Col:
    """A length-delimited field holding each row of `message`."""
    return join(len(message), [tag(number, LEN), varints(message.lens), message])


def packets(packet: Col) -> bytes:
    """Rows as `repeated TracePacket packet = 1` of a Trace: what a .perfetto-trace file is."""
    return nested(1, packet).flat() if len(packet) else b""


# one message at a time (descriptors, interned names): plain Python

def msg_varint(number: int, value: int) -> bytes:
    return tag(number, VARINT) + varint_bytes(value)


def msg_bytes(number: int, payload: bytes | str) -> bytes:
    raw = payload.encode("utf-8", "replace") if isinstance(payload, str) else payload
    return tag(number, LEN) + varint_bytes(len(raw)) + raw
