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

import os
import re
from bisect import bisect_right
from dataclasses import dataclass, field, replace

import numpy as np

STREAM_OF_FD = {1: "stdout", 2: "stderr"}
REGULAR = 8   # struct iow_output.type of a regular file (S_IFREG >> 12)
_LINE_END = re.compile(rb"\r\n|\r|\n")
PENDING_MOST = 32   # writes kept waiting for their place in the capture (lines_of_writes)


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


class OwnFiles:
    """The one rule for what a write to fd 1 or 2 is: output, unless the program put the file
    there itself. What fd 1 and 2 point at when a program starts (its exec; for a process
    already running when the trace began, the trace's start) is its output: `sh -c 'bench >
    out.txt'` (the shell's child opens out.txt before the exec), a stdout redirected before an
    `attach`. A file the program opened itself after its exec and then wrote through fd 1 or 2
    (`dd of=FILE` reopens it as its fd 1; a program that closed its stdout and opened a file)
    is data, and so is a file open on fd 1 or 2 before an attach that the program opened itself
    as far as the attach tells (named_outputs: its command line names it, dd's of=, or its open
    flags are no shell redirection's). Known from the trace's facts and events: a FILE fact
    is an open the trace saw (fd >= 0; files registered at an attach have fd -1), as is an open
    event (the probe sends a FILE fact only for a file's first open as a target: `dd
    of=/dev/stdout > out` opens out a second time), an EXEC fact a program's start.

    Used by the timeline (such writes are no lines) and by the analysis's event walk
    (analysis/phasing/output_fds.py: other calls on fd 1 and 2 are no data)."""

    def __init__(self, facts: np.ndarray | None, meta_kinds: dict, meta: dict | None = None):
        kinds = {name: number for number, name in (meta_kinds or {}).items()}
        self.execs: dict[int, list[int]] = {}
        self.opens: dict[tuple[int, int, int], list[int]] = {}
        if facts is None or not len(facts):
            return
        for key in named_outputs(facts, kinds, meta):
            self.opens[key] = [0]   # opened by the program itself, before the trace began
        for tgid, ts in zip(*(facts[facts["kind"] == kinds.get("exec", -1)][k].tolist() for k in ("tgid", "ts_ns"))):
            self.execs.setdefault(int(tgid), []).append(int(ts))
        opened = facts[(facts["kind"] == kinds.get("file", -1)) & (facts["fd"] >= 0)]
        for tgid, dev, ino, ts in zip(*(opened[k].tolist() for k in ("tgid", "dev", "ino", "ts_ns"))):
            self.opens.setdefault((int(tgid), int(dev), int(ino)), []).append(int(ts))
        for times in (*self.execs.values(), *self.opens.values()):
            times.sort()

    def add_opens(self, tgid, dev, ino, ts) -> None:
        """Opens seen as events (arrays of the same length), in time order."""
        for p, d, i, t in zip(tgid.tolist(), dev.tolist(), ino.tolist(), ts.tolist()):
            times = self.opens.setdefault((int(p), int(d), int(i)), [])
            times.append(int(t))
            if len(times) > 1 and times[-2] > times[-1]:
                times.sort()

    def is_data(self, tgid: int, dev: int, ino: int, t_ns: int) -> bool:
        """Whether a call at t_ns by tgid on its fd 1 or 2, on file (dev, ino), is data."""
        times = self.opens.get((tgid, dev, ino))
        if not times:
            return False
        i = bisect_right(times, t_ns) - 1
        if i < 0:
            return False
        execs = self.execs.get(tgid, [])
        j = bisect_right(execs, times[i])
        # an exec between the open and the call: the file is the new program's output
        return not (j < len(execs) and execs[j] <= t_ns)


def own_output_paths(meta: dict | None) -> list[tuple[int, str, str, str]]:
    """(pid, fd, path, why) of each regular file a process attached to had on its fd 1 or 2 at the
    attach (attach --pid's `output_files`) that the program opened itself, as far as the attach
    can tell: its own command line names it (`dd of=FILE` opens FILE as its fd 1, while a
    shell's `> FILE` is gone from the program's argv), or its open flags are none a shell's
    redirection gives (`output_flags`: open for reading too, O_DIRECT, O_SYNC or O_DSYNC; a
    shell's `>` is write-only, `>>` adds O_APPEND). The trace holds no open of it. A file the
    program opened write-only, unnamed, and writes with write(2) looks exactly like a redirect
    and stays output. Not for a process that exec'd after the attach: its fds were set before
    its program started."""
    meta = meta or {}
    exec_pid = (meta.get("command_exec") or {}).get("pid")
    found = []
    for process in meta.get("attached") or []:
        if not isinstance(process, dict) or process.get("pid") == exec_pid:
            continue
        cwd = process.get("cwd") or "/"
        named = {os.path.normpath(os.path.join(cwd, word.split("=", 1)[-1]))
                 for word in process.get("cmdline") or [] if isinstance(word, str)}
        flags = process.get("output_flags") or {}
        for fd, path in sorted((process.get("output_files") or {}).items()):
            why = ("a file its command line names (as dd's of= is)" if path in named
                   else _not_a_redirect(flags.get(fd)))
            if why:
                found.append((int(process["pid"]), fd, path, why))
    return found


def _not_a_redirect(flags: int | None) -> str | None:
    """Why a file with these open flags was not opened by a shell's `>` or `>>`; None if it may be."""
    if flags is None:
        return None
    shown = [name for name, bit in (("O_DIRECT", getattr(os, "O_DIRECT", 0o40000)), ("O_SYNC", os.O_SYNC))
             if bit and flags & bit == bit]
    if "O_SYNC" not in shown and flags & os.O_DSYNC:
        shown.append("O_DSYNC")
    said = (["for reading and writing"] if flags & os.O_ACCMODE == os.O_RDWR else []) + (
        ["with " + " and ".join(shown)] if shown else [])
    return f"opened {', '.join(said)}, as no shell's > or >> opens its output" if said else None


def named_outputs(facts: np.ndarray, kinds: dict, meta: dict | None) -> list[tuple[int, int, int]]:
    """(tgid, dev, ino) of the files own_output_paths finds, from their registration at the
    attach (FILE facts with fd -1)."""
    registered = facts[(facts["kind"] == kinds.get("file", -1)) & (facts["fd"] < 0)]
    found = []
    for pid, _, path, _ in own_output_paths(meta):
        for fact in registered[registered["tgid"] == pid]:
            if bytes(fact["path"]).split(b"\0", 1)[0].decode(errors="replace") == path:
                found.append((pid, int(fact["dev"]), int(fact["ino"])))
    return found


@dataclass(frozen=True)
class Write:
    """One recorded write to fd 1 or 2 (a row of iow_output, or of an strace import)."""
    t_ns: int
    stream: str
    pid: int
    ret: int
    data: bytes          # its first bytes, at most the bound
    file: tuple = ()     # where it went: (dev, ino); () unknown
    type: int = 0        # what it went to (struct iow_output.type): REGULAR a file; 0 unknown


def writes_of(records: np.ndarray, own: OwnFiles | None = None) -> list[Write]:
    """The records as Writes, in order of completion; those that are data (`own`) left out."""
    order = np.argsort(records["end_ns"], kind="stable")
    typed = "type" in (records.dtype.names or ())
    out = []
    for r in records[order]:
        stream = STREAM_OF_FD.get(int(r["fd"]))
        if stream is None:
            continue
        if own is not None and own.is_data(int(r["tgid"]), int(r["dev"]), int(r["ino"]), int(r["start_ns"])):
            continue
        copied = max(0, min(int(r["copied"]), len(r["data"])))
        out.append(Write(int(r["end_ns"]), stream, int(r["tgid"]), int(r["ret"]), bytes(r["data"][:copied]),
                         (int(r["dev"]), int(r["ino"])), int(r["type"]) if typed else 0))
    return out


def timeline(records: np.ndarray | None, captured: dict[str, bytes], own: OwnFiles | None = None,
             captures: bool = False) -> Timeline | None:
    """The timeline of a trace's PRINTED records joined with the captured text; None when the
    trace records no timeline (made before it, or by a backend without it)."""
    if records is None:
        return None
    bound = int(records.dtype["data"].itemsize) if "data" in (records.dtype.names or ()) else 4096
    return lines_of_writes(writes_of(records, own), captured, bound, captures)


def lines_of_writes(writes: list[Write], captured: dict[str, bytes], bound: int = 4096,
                    captures: bool = False) -> Timeline:
    """The lines of the captured text and of the writes, in time order (lines with no time
    last, each stream's in its own order). A write goes to the capture whose next bytes are
    its own: its fd's stream first, then the other one (a shell's `echo x >&2` writes on fd 1
    after a dup2 of fd 2 onto it: the bytes reach stderr's pipe). With a capture (`captures`:
    `run`), a write the capture did not read is output only when it went to a regular file (a
    shell's `> out.txt`): one to a pipe is plumbing between the benchmark's own processes
    (`$(...)`, `a | b`), one to /dev/null was thrown away; neither gives a line."""
    result = Timeline([], bound=bound)
    streams = ("stdout", "stderr")
    text = {s: captured.get(s, b"") or b"" for s in streams}
    pos = dict.fromkeys(streams, 0)
    aligned: dict[str, list[tuple[int, Write]]] = {s: [] for s in streams}
    elsewhere: dict[str, dict[tuple, list[Write]]] = {s: {} for s in streams}
    # writes whose bytes are not the capture's next ones yet, kept for a while (`run` only): two
    # processes writing to one pipe, the first preempted after its bytes went in and before its
    # call returned, return in the other order; taken in order of return, the first one's bytes
    # come after the second's, and every later write missed the capture's next bytes: all the
    # lines after it had no time, and every claim fell back to matching by order
    pending: list[Write] = []

    def to_capture(w: Write) -> bool:
        for s in (w.stream, *(o for o in streams if o != w.stream)):
            at = pos[s]
            # the capture's next bytes are this write's: it went to the capture
            if w.data and text[s][at:at + len(w.data)] == w.data and at + w.ret <= len(text[s]) \
                    and not elsewhere[s].get(w.file):
                pos[s] = at + w.ret
                aligned[s].append((pos[s], w))
                return True
        return False

    for w in writes:
        result.writes += 1
        if w.ret > len(w.data):
            result.cut += 1
            result.bytes_not_kept += w.ret - len(w.data)
        if w.ret <= 0:
            continue
        if to_capture(w):
            # a write waiting may now be next, then another
            while (i := next((i for i, p in enumerate(pending) if to_capture(p)), None)) is not None:
                del pending[i]
        elif captures and w.type != REGULAR and len(pending) < PENDING_MOST:
            pending.append(w)
        elif not captures or w.type == REGULAR:
            elsewhere[w.stream].setdefault(w.file, []).append(w)
    lines: list[Line] = []
    for s in streams:
        lines += _captured_lines(text[s], s, _in_pipe_order(aligned[s]))
        for written in elsewhere[s].values():
            lines += _written_lines(written, s)
        if elsewhere[s]:
            result.rebuilt.add(s)
    never = float("inf")
    result.lines = sorted(lines, key=lambda line: never if line.t_ns is None else line.t_ns)
    return result


def _in_pipe_order(aligned: list[tuple[int, Write]]) -> list[tuple[int, Write]]:
    """The aligned writes, each timed no later than any write after it in the capture: bytes
    that reached the pipe before a write that returned at t were there by t, whenever their own
    call returned."""
    out, earliest = [], None
    for end, w in reversed(aligned):
        earliest = w.t_ns if earliest is None else min(earliest, w.t_ns)
        out.append((end, w if w.t_ns == earliest else replace(w, t_ns=earliest)))
    return out[::-1]


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
