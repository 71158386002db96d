"""strace's text, line by line, as calls: the reading half of `iowitness import`.

What the lines look like (strace 5.x and 6.x, `strace -f -ttt -T -y -o run.strace CMD`):

    4745 1732500000.123456 read(3</d/f>, "..."..., 4096) = 4096 <0.000012>
    4745 1732500000.123460 openat(AT_FDCWD</d>, "f", O_RDWR|O_CREAT, 0644) = 3</d/f> <0.000020>
    5179 1732500000.123470 write(3</d/f>, "..."..., 4096 <unfinished ...>
    5180 1732500000.123480 <... write resumed>) = 4096 <0.000150>
    4745 1732500000.2 --- SIGCHLD {si_signo=SIGCHLD, ...} ---
    4745 1732500000.3 +++ exited with 0 +++

The pid column is there with -f (written "[pid N] " when strace writes to a terminal), absent
with -ff (one file per process: the pid is the file name's suffix) or without -f. -y and -yy
decorate an fd with the kernel's name for its file (`3</d/f>`); '<' and '>' inside a name are
escaped, so a decoration never holds a raw one. Strings are dropped before the arguments are
split: only their presence matters, except for execve's argv and what went to stdout, which
`strings()` gives back decoded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from iowitness.errors import BadTrace

_PREFIX = re.compile(r"^(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)?(\d+\.\d+)\s+")
_CLOCKLESS = re.compile(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?(?:\d+:\d+:\d+|[a-z_]\w*\(|<\.\.\.)")
_UNFINISHED = re.compile(r"\s*<unfinished \.\.\.>$")
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>\s?")
_LATENCY = re.compile(r"\s+<(\d+)\.(\d+)>$")
_CALL = re.compile(r"^(\w+)\((.*)$", re.DOTALL)
_NAME = re.compile(r"(\w+)\(")
# the return value, anchored at the end: strings printed before it may hold " = " themselves
_RETURN = re.compile(r"\)\s+=\s+(-?\d+|0x[0-9a-fA-F]+|\?)(<[^<>]*(?:<[^<>]*>)?>(?:\(deleted\))?)?"
                     r"(?:\s+(E[A-Z0-9_]+))?(?:\s+\(.*\))?$")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"(\.\.\.)?')
# -yy adds what a device or socket is inside the decoration: `2</dev/pts/0<char 136:0>>`
_DECORATED = re.compile(r"(-?\d+|AT_FDCWD)<([^<>]*)(?:<[^<>]*>)?>(\(deleted\))?")
_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"v": b"\v", b"f": b"\f", b"a": b"\a", b"b": b"\b"}


@dataclass
class Call:
    """One finished syscall. `args` are the top-level arguments as text, strings replaced by
    '""', decorations removed; `paths[i]` is argument i's decoration (-y), when it had one."""
    pid: int
    ts_ns: int
    name: str
    args: list[str]
    paths: dict[int, str]
    ret: int | None            # None: `= ?`, the call never returned
    ret_path: str | None       # the decoration of a returned fd
    latency_ns: int | None     # None: no -T
    raw: str = field(repr=False, default="")   # the argument text with its strings, for strings()


@dataclass
class Exit:
    pid: int
    ts_ns: int
    code: int | None           # None: killed by a signal
    signal: str | None


def unescape(text: str) -> bytes:
    """A C string as strace prints it (\\n, \\t, \\", \\xNN, octal) back to its bytes."""
    def one(m: re.Match) -> bytes:
        body = m.group(1)
        if body[:1] == b"x" and len(body) == 3:
            return bytes([int(body[1:], 16)])
        if body[:1].isdigit():
            return bytes([int(body, 8) & 0xFF])
        return _SIMPLE.get(body, body)
    return _ESCAPE.sub(one, text.encode("utf-8", "surrogateescape"))


def strings(raw: str) -> list[tuple[bytes, bool]]:
    """The string arguments of a call's text, decoded, each with whether strace cut it short."""
    return [(unescape(m.group(1)), bool(m.group(2))) for m in _STRING.finditer(raw)]


def _split(text: str) -> list[str]:
    """Top-level comma-separated arguments (strings already replaced)."""
    if "(" not in text and "[" not in text and "{" not in text:
        # most calls (read, pwrite64, lseek, close): no nesting, no walk character by character
        return [a.strip() for a in text.split(",")] if text.strip() else []
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail or out:
        out.append(tail)
    return out


def _decorate_path(text: str) -> str:
    return unescape(text).decode("utf-8", "surrogateescape")


def _without_strings(text: str) -> str:
    """`text` with every string "..." (and its ... when cut) as '""': _STRING.sub's result, by
    str.find from quote to quote (a regex steps through a -s 4096 string's 16 KB of escapes one
    by one; find does it at memchr speed, and strace escapes every quote inside a string)."""
    if '"' not in text:
        return text
    out: list[str] = []
    at = 0
    while True:
        start = text.find('"', at)
        if start < 0:
            break
        end = start
        while True:
            end = text.find('"', end + 1)
            if end < 0:
                return "".join(out) + _STRING.sub('""', text[at:])   # unclosed: as the regex reads it
            backslashes = 0
            while text[end - 1 - backslashes] == "\\":
                backslashes += 1
            if backslashes % 2 == 0:
                break
        out.append(text[at:start])
        out.append('""')
        at = end + 1
        if text.startswith("...", at):
            at += 3
    out.append(text[at:])
    return "".join(out)


def parse_call(pid: int, ts_ns: int, body: str) -> Call | None:
    """A complete `name(args) = ret <latency>` text; None when it is not one."""
    latency = None
    # only the line's tail can hold it: searching a 16 KB line of -s 4096 data whole is slow
    lat = _LATENCY.search(body, max(0, len(body) - 48))
    if lat:
        latency = int(lat.group(1)) * 1_000_000_000 + int(lat.group(2).ljust(9, "0")[:9])
        body = body[:lat.start()]
    call = _CALL.match(body)
    if not call:
        return None
    rest = call.group(2)
    # strings out first: they may hold anything, '<', ')' and " = " included
    plain = _without_strings(rest)
    ret_match = _RETURN.search(plain)
    if not ret_match:
        return None
    ret_text, ret_deco = ret_match.group(1), ret_match.group(2)
    errno = ret_match.group(3)
    if ret_text == "?":
        ret = None
    else:
        ret = int(ret_text, 16) if ret_text.startswith("0x") else int(ret_text)
        if errno and ret == -1:
            ret = -_errno_number(errno)
    args, paths = [], {}
    for i, arg in enumerate(_split(plain[:ret_match.start()])):
        deco = _DECORATED.fullmatch(arg)
        if deco:
            paths[i] = _decorate_path(deco.group(2))
            arg = deco.group(1)
        args.append(arg)
    ret_path = None
    if ret_deco:
        inner = ret_deco[1:]
        ret_path = _decorate_path(inner[:min(i for i in (inner.find("<"), inner.find(">")) if i >= 0)])
    return Call(pid, ts_ns, call.group(1), args, paths, ret, ret_path, latency, rest)


def _errno_number(name: str) -> int:
    import errno
    return getattr(errno, name, 0) or 1


class LineReader:
    """Turns lines (in the order strace wrote them) into Calls and Exits, joining each
    `<unfinished ...>` with its `<... resumed>`; the call keeps the start time of the first half."""

    def __init__(self, default_pid: int, wanted: frozenset | None = None):
        self.default_pid = default_pid
        # the calls worth parsing: others (mmap, futex, ...) are skipped after reading their name
        self.wanted = wanted
        self.pending: dict[int, tuple[int, str]] = {}   # pid -> (start ns, text so far)
        self.lines = self.skipped = self.unclocked = 0

    def feed(self, line: str):
        """The Call or Exit a line completes, the pending (pid, name, args) of a call it left
        unfinished (a clone whose child speaks before it returns), or None."""
        line = line.rstrip("\n")
        if not line.strip():
            return None
        self.lines += 1
        m = _PREFIX.match(line)
        if not m:
            if _CLOCKLESS.match(line):
                self.unclocked += 1
            self.skipped += 1
            return None
        pid = int(m.group(1) or m.group(2) or self.default_pid)
        ts_ns = _seconds_ns(m.group(3))
        body = line[m.end():]
        if body.startswith("+++ "):
            return _exit(pid, ts_ns, body)
        if body.startswith("---"):
            return None   # a signal delivered: it moves no file data
        # the tail only (as for the latency): a regex search over a long line is slow
        unfinished = _UNFINISHED.search(body, max(0, len(body) - 48)) if body.endswith("...>") else None
        if unfinished:
            self.pending[pid] = (ts_ns, body[:unfinished.start()])
            name = _CALL.match(body)
            return ("unfinished", pid, name.group(1) if name else "", body)
        resumed = _RESUMED.match(body)
        if resumed:
            start = self.pending.pop(pid, None)
            if start is None:
                self.skipped += 1   # its first half came before the file began (strace -p)
                return None
            ts_ns, head = start
            body = head + body[resumed.end():]
        if self.wanted is not None:
            name = _NAME.match(body)
            if name and name.group(1) not in self.wanted:
                return None
        call = parse_call(pid, ts_ns, body)
        if call is None:
            self.skipped += 1
        return call


def _seconds_ns(text: str) -> int:
    whole, frac = text.split(".")
    return int(whole) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def _exit(pid: int, ts_ns: int, body: str) -> Exit | None:
    m = re.match(r"\+\+\+ exited with (\d+) \+\+\+", body)
    if m:
        return Exit(pid, ts_ns, int(m.group(1)), None)
    m = re.match(r"\+\+\+ killed by (\w+)", body)
    return Exit(pid, ts_ns, None, m.group(1)) if m else None


def check_readable(reader: LineReader, name: str) -> None:
    """Refuse, in one line, a file that is not strace -ttt output."""
    if reader.lines and reader.unclocked > reader.lines // 2:
        raise BadTrace(f"{name}: strace lines without -ttt timestamps; record with "
                       "strace -f -ttt -T -y -o FILE -- COMMAND")
    if not reader.lines or reader.skipped == reader.lines:
        raise BadTrace(f"{name}: not strace output (no line reads as a call); record with "
                       "strace -f -ttt -T -y -o FILE -- COMMAND")
