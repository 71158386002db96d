"""A trace's census of its own chunks: END says how many chunks of each kind came before it and
a digest of their heads in order, so that a whole chunk cut out, repeated or moved is seen.

Every chunk carries its own CRC, and END's counters say how many events, facts and block
requests were written; what neither sees is a whole chunk of another kind (OUTPUT, SAMPLES,
COUNTERS, SUMMARY, OFFCPU) cut out, repeated or reordered with its framing intact: a --summary
trace without its SUMMARY chunk would read as a complete trace of 0 events, and one without its
last COUNTERS chunk would show an earlier, smaller loss. At close, the writer walks the chunk
heads the file holds (its own and those the output capture appended from another process) and
writes into END

    "chunks": {"through": offset where the walk ended, "counts": {kind name: chunks},
               "digest": crc32 of the heads (kind, crc, length), in file order}

The reader walks the same heads up to `through` and compares (`gaps`). A trace written before
the census (no "chunks" in END) is read as it was.
"""

from __future__ import annotations

import os
import zlib

from iowitness.collector.format.traceformat import CHUNK, HEADER, KIND_NAMES, OUTPUT


def _name(kind: int) -> str:
    return KIND_NAMES.get(kind, str(kind))


def digest(heads) -> int:
    """crc32 over the (kind, crc, length) heads, in order."""
    value = 0
    for head in heads:
        value = zlib.crc32(CHUNK.pack(*head), value)
    return value


def take(fd: int) -> dict | None:
    """The census of the file open as `fd` (write-only, O_APPEND: read through /proc's link to
    it), every whole chunk from the header on; None when it cannot be read back."""
    try:
        reader = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        counts: dict[str, int] = {}
        size, at, heads = os.fstat(reader).st_size, HEADER.size, []
        while at + CHUNK.size <= size:
            head = CHUNK.unpack(os.pread(reader, CHUNK.size, at))
            if at + CHUNK.size + head[2] > size:
                break   # being appended right now (the output capture): not counted, not walked
            heads.append(head)
            counts[_name(head[0])] = counts.get(_name(head[0]), 0) + 1
            at += CHUNK.size + head[2]
    except OSError:
        return None
    finally:
        os.close(reader)
    return {"through": at, "counts": counts, "digest": digest(heads)}


def gaps(census: dict, data, chunks: list, said: tuple = ()) -> str | None:
    """What differs between END's census and the chunks read before its `through` ((offset,
    kind, payload) as the reader found them); None when nothing does. `said`: kinds whose
    shortfall the caller says already (the records END's counters count)."""
    counts: dict[str, int] = {}
    heads, later = [], []
    for at, kind, payload in chunks:
        if at >= census["through"]:
            later.append(kind)   # only the output capture may append between the census and END
            continue
        heads.append(CHUNK.unpack_from(data, at))
        counts[_name(kind)] = counts.get(_name(kind), 0) + 1
        walked = at + CHUNK.size + len(payload)
    written = census["counts"]
    differ = [f"{written.get(name, 0):,} {name} chunk(s) written, {counts.get(name, 0):,} held"
              for name in sorted(set(written) | set(counts))
              if written.get(name, 0) != counts.get(name, 0) and name not in said]
    if said and not differ:
        return None   # the records' shortfall explains the digest too
    if differ:
        return "; ".join(differ)
    if heads and walked != census["through"]:
        return "its chunks do not end where END's census says they did (a chunk cut, repeated or grown)"
    strangers = [_name(kind) for kind in later if kind != OUTPUT]
    if strangers:
        return f"{len(strangers)} chunk(s) ({', '.join(sorted(set(strangers)))}) after END's census, where only " \
               "the benchmark's output can come"
    if digest(heads) != census["digest"]:
        return "its chunks are not in the order they were written (moved or swapped whole)"
    return None
