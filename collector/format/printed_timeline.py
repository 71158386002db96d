"""The benchmark's output timeline: its writes to fd 1 and 2, made into lines with times.

The probe records every write and writev a traced process makes to its fd 1 or 2, whatever
they point at (PRINTED chunks of struct iow_output: probes/output.bpf.h), with its kernel
times and its first IOW_OUTPUT_BYTES bytes. Here those records become lines:

- a write whose bytes are the next bytes of the text the capture process kept (`run`: the
  pipe or pty it reads) is aligned with that text, stream by stream, by bytes: the capture's
  lines keep their full text, and each gets the time the write that ended it completed;
- a write that went anywhere else (`run` with the benchmark's stdout sent to a file by a
  shell, every write under `attach`) gives its lines from its own bytes, per file it went to;
  a write longer than the bound is cut: the line it cuts is marked `cut` and the bytes not
  kept are counted.

No times (a trace made before the timeline, a write the ring had no room for): the lines are
the captured text's, with no time. Nothing here imports pandas or the analysis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

STREAM_OF_FD = {1: "stdout", 2: "stderr"}
_LINE_END = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True)
class Line:
    text: str              # without its line end; invalid UTF-8 replaced
    t_ns: int | None       # completion of the write that ended it (trace clock); None unknown
    stream: str            # "stdout" | "stderr"
    pid: int | None = None
    cut: bool = False      # a write of this line was longer than the bound: bytes of it are missing


@dataclass
class Timeline:
    lines: list[Line]
    writes: int = 0            # writes recorded (failed ones included)
    cut: int = 0               # of them longer than the bound: only their first bytes kept
    bytes_not_kept: int = 0
    bound: int = 4096
    rebuilt: set = field(default_factory=set)   # streams whose text comes from the timeline alone

    def summary(self, lost: int = 0) -> str:
        """"output: 12 writes, 1 cut at 4 KiB (8,000 bytes not kept)"."""
        cut = f"{self.cut:,} cut at {self.bound // 1024} KiB"
        if self.cut:
            cut += f" ({self.bytes_not_kept:,} bytes not kept)"
        lost_text = f", {lost:,} not recorded (the output ring was full)" if lost else ""
        return f"output: {self.writes:,} write{'s' if self.writes != 1 else ''}, {cut}{lost_text}"


@dataclass(frozen=True)
class Write:
    """One recorded write to fd 1 or 2 (a row of iow_output, or of an strace import)."""
    t_ns: int
    stream: str
    pid: int
    ret: int
    data: bytes          # its first bytes, at most the bound
    file: tuple = ()     # where it went: (dev, ino); () unknown


def writes_of(records: np.ndarray) -> list[Write]:
    """The records as Writes, in order of completion."""
    order = np.argsort(records["end_ns"], kind="stable")
    out = []
    for r in records[order]:
        stream = STREAM_OF_FD.get(int(r["fd"]))
        if stream is None:
            continue
        copied = max(0, min(int(r["copied"]), len(r["data"])))
        out.append(Write(int(r["end_ns"]), stream, int(r["tgid"]), int(r["ret"]), bytes(r["data"][:copied]),
                         (int(r["dev"]), int(r["ino"]))))
    return out


def timeline(records: np.ndarray | None, captured: dict[str, bytes], meta: dict | None = None) -> Timeline | None:
    """The timeline of a trace's PRINTED records joined with the captured text; None when the
    trace records no timeline (made before it, or by a backend without it)."""
    if records is None:
        return None
    bound = int(records.dtype["data"].itemsize) if "data" in (records.dtype.names or ()) else 4096
    return lines_of_writes(writes_of(records), captured, bound)


def lines_of_writes(writes: list[Write], captured: dict[str, bytes], bound: int = 4096) -> Timeline:
    """The lines of the captured text and of the writes, in time order (lines with no time
    last, each stream's in its own order)."""
    lines: list[Line] = []
    result = Timeline([], bound=bound)
    for stream in ("stdout", "stderr"):
        text = captured.get(stream, b"") or b""
        mine = [w for w in writes if w.stream == stream]
        aligned, elsewhere, pos = [], {}, 0
        for w in mine:
            result.writes += 1
            if w.ret > len(w.data):
                result.cut += 1
                result.bytes_not_kept += w.ret - len(w.data)
            if w.ret <= 0:
                continue
            # the capture's next bytes are this write's: it went to the capture
            if w.data and text[pos:pos + len(w.data)] == w.data and pos + w.ret <= len(text) \
                    and not elsewhere.get(w.file):
                pos += w.ret
                aligned.append((pos, w))
            else:
                elsewhere.setdefault(w.file, []).append(w)
        lines += _captured_lines(text, stream, aligned)
        for written in elsewhere.values():
            lines += _written_lines(written, stream)
        if elsewhere:
            result.rebuilt.add(stream)
    never = float("inf")
    result.lines = sorted(lines, key=lambda line: never if line.t_ns is None else line.t_ns)
    return result


def _captured_lines(text: bytes, stream: str, aligned: list) -> list[Line]:
    """The capture's lines; a line ended within the aligned bytes gets its write's time."""
    ends = [end for end, _ in aligned]
    out, begin = [], 0
    pieces = [(m.start(), m.end()) for m in _LINE_END.finditer(text)]
    if begin < len(text) and (not pieces or pieces[-1][1] < len(text)):
        pieces.append((len(text), len(text)))   # a last line with no line end
    for stop, after in pieces:
        last = max(begin, after - 1)   # its last byte (the line end's, when it has one)
        i = _first_above(ends, last)
        w = aligned[i][1] if i is not None else None
        out.append(Line(text[begin:stop].decode("utf-8", errors="replace"), w.t_ns if w else None, stream,
                        w.pid if w else None))
        begin = after
    return out


def _first_above(ends: list[int], byte: int) -> int | None:
    """Index of the first write whose bytes end past `byte`; None when none does."""
    lo, hi = 0, len(ends)
    while lo < hi:
        mid = (lo + hi) // 2
        if ends[mid] > byte:
            hi = mid
        else:
            lo = mid + 1
    return lo if lo < len(ends) else None


def _written_lines(writes: list[Write], stream: str) -> list[Line]:
    """Lines from the writes' own bytes (all to one file): each ends with the write that
    wrote its line end; a cut write ends the line it cuts (marked cut)."""
    out, pending, cut = [], b"", False
    last = None
    for w in writes:
        if w.ret <= 0:
            continue
        pending += w.data
        last = w
        # a "\r" at the very end may be the first half of "\r\n": it waits for the next write
        held = b"\r" if pending.endswith(b"\r") else b""
        pieces = _LINE_END.split(pending[:len(pending) - len(held)])
        complete, pending = pieces[:-1], pieces[-1] + held
        for piece in complete:
            out.append(Line(piece.decode("utf-8", errors="replace"), w.t_ns, stream, w.pid, cut))
            cut = False
        if w.ret > len(w.data):
            out.append(Line(pending.decode("utf-8", errors="replace"), w.t_ns, stream, w.pid, True))
            pending, cut = b"", False
    if pending and last is not None:
        out.append(Line(pending.decode("utf-8", errors="replace"), last.t_ns, stream, last.pid, cut))
    return out


def text_of(printed: Timeline | None, captured: dict[str, str]) -> dict[str, str]:
    """The output's text per stream: the capture's where the capture saw every write of the
    stream; rebuilt from the timeline's lines where it did not (a shell sent stdout to a
    file, an attach)."""
    if printed is None or not printed.rebuilt:
        return captured
    text = dict(captured)
    for stream in printed.rebuilt:
        lines = [line.text for line in printed.lines if line.stream == stream]
        text[stream] = "".join(line + "\n" for line in lines)
    return text
