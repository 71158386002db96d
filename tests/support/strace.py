"""strace as a second, independent witness of the file syscalls a command makes.

The tracer's tests compare what iowitness saw with what strace saw for the same command.
strace stops the process at each syscall (ptrace), so it shares no code and no mechanism
with the BPF probe: when both agree, the count is right.

The command runs under

    strace -f -qq -y -e trace=<SYSCALLS> -o OUT -- cmd

and OUT is read back. What that output looks like (strace 6.1, x86-64):

    4745  read(3</dir/f>, "..."..., 4096) = 4096          fd decorated with its path (-y)
    4745  openat(AT_FDCWD</dir>, "f", O_RDWR) = 3</dir/f>  opens: the new fd, decorated
    5179  write(3</dir/f1>, "..."..., 4096 <unfinished ...>
    5180  <... write resumed>)              = 4096       another thread's call, in between
    5819  write(3</dir/a\\74b\\76>(deleted), "x", 1) = 1    '<' '>' and non-ASCII escaped in octal;
                                                         unlinked files marked after the '>'
    4569  read(4</dir/f>, 0x5594..., 10) = -1 EBADF (Bad file descriptor)

A call is counted for the file when its fd argument's decoration names the file, or, for
opens, when it succeeded and the returned fd's decoration names it. That decoration is the
kernel's name for the file (d_path: absolute, symlinks resolved), whatever path the program
passed. A call that never returned (`= ?`, the process died inside it) is not counted: the
tracer, which records at syscall exit, cannot see it either.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Callable, Union

import pytest

# The syscalls the iowitness probe records (probes/events.h, enum iow_op), by strace's names.
SYSCALLS = (
    "open", "openat", "openat2", "creat",
    "read", "write", "pread64", "pwrite64", "readv", "writev",
    "preadv", "pwritev", "preadv2", "pwritev2",
    "lseek", "fsync", "fdatasync", "close",
    "dup", "dup2", "dup3", "fcntl", "ftruncate", "fallocate",
)
OPENS = frozenset({"open", "openat", "openat2", "creat"})
# The calls whose positive return is a number of bytes moved.
DATA_CALLS = frozenset(
    {"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2"}
)

PathFilter = Union[str, "os.PathLike[str]", Callable[[str], bool]]

# With -f and -o, strace starts each line with the pid; on a terminal it writes "[pid N] ".
_PID = re.compile(r"^(?:\[pid\s+(\d+)\]|(\d+))\s+")
_UNFINISHED = " <unfinished ...>"
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>")
_NAME = re.compile(r"^(\w+)\(")
# A decoration cannot hold a raw '<' or '>': strace escapes both inside it.
_DECORATION = r"<(?P<{0}>[^<>]*)>(?:\(deleted\))?"
_FD_ARG = re.compile(r"^\w+\(-?\d+" + _DECORATION.format("path"))
# Anchored at the end of the line: string arguments, printed earlier, may hold " = " too.
_RETURN = re.compile(
    r"\)\s+=\s+(?P<ret>-?\d+|0x[0-9a-fA-F]+|\?)"
    r"(?:" + _DECORATION.format("path") + r")?"
    r"(?:\s+(?P<errno>E[A-Z0-9_]+))?"
    r"(?:\s+\([^()]*\))?"
    r"(?:\s+<unavailable>)?$"
)
_ESCAPE = re.compile(rb"\\([0-7]{1,3}|x[0-9a-fA-F]{2}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"v": b"\v", b"f": b"\f", b"a": b"\a", b"b": b"\b"}


def path_prefix(prefix: str) -> Callable[[str], bool]:
    """A path filter for every file whose path starts with prefix (IOzone's iozone.DUMMY.N files)."""
    return lambda path: path.startswith(prefix)


def _unescape(text: str) -> str:
    """strace's C-style escapes (octal, \\xNN, \\t ...) back to the file name's own bytes."""

    def one(m: re.Match) -> bytes:
        code = m.group(1)
        if code[:1].isdigit():
            return bytes([int(code, 8)])
        if code[:1] == b"x" and len(code) == 3:
            return bytes([int(code[1:], 16)])
        return _SIMPLE_ESCAPES.get(code, code)

    raw = text.encode("utf-8", "surrogateescape")
    return os.fsdecode(_ESCAPE.sub(one, raw))


def _matcher(path: PathFilter) -> Callable[[str], bool]:
    if callable(path):
        return path
    exact = os.fspath(path)
    return lambda candidate: candidate == exact


def _complete_calls(text: str):
    """Yield (line number, call text) for each finished syscall, pairing unfinished and resumed halves.

    A thread has at most one call in flight, so the halves pair up by pid.
    """
    pending: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        m = _PID.match(line)
        pid = (m.group(1) or m.group(2)) if m else ""
        body = line[m.end():] if m else line
        if not body or body.startswith(("---", "+++")):
            continue  # signals and exits, not calls
        resumed = _RESUMED.match(body)
        if resumed:
            if pid not in pending:
                raise ValueError(f"line {number}: '{resumed.group(1)}' resumed but never started: {line!r}")
            first_number, head = pending.pop(pid)
            if not head.startswith(resumed.group(1) + "("):
                raise ValueError(f"line {number}: resumes '{resumed.group(1)}' but line {first_number} began {head!r}")
            body = head + body[resumed.end():]
        if body.endswith(_UNFINISHED):
            if pid in pending:
                raise ValueError(f"line {number}: pid {pid} starts a call while one is unfinished: {line!r}")
            pending[pid] = (number, body[: -len(_UNFINISHED)])
            continue
        yield number, body
    # calls still pending never returned (the process exited inside them): not counted


def parse_strace(text: str, path: PathFilter) -> dict:
    """Count the calls on one file in the text of `strace -f -qq -y` output.

    path: the file's absolute path as the kernel names it (exact match), or a predicate on
    such paths, e.g. path_prefix("/dir/iozone.DUMMY.").
    Returns {"counts": {op: calls}, "bytes": {op: sum of positive returns}}; an op with no
    call on the file is absent, and "bytes" only has the data calls (DATA_CALLS).
    Raises ValueError on a call line it cannot read, rather than miscount quietly.
    """
    matches = _matcher(path)
    counts: Counter = Counter()
    moved: Counter = Counter()
    for number, call in _complete_calls(text):
        name = _NAME.match(call)
        if not name or name.group(1) not in SYSCALLS:
            continue
        op = name.group(1)
        ret_m = _RETURN.search(call)
        if ret_m is None:
            raise ValueError(f"line {number}: cannot read the return value of {call!r}")
        if ret_m.group("ret") == "?":
            continue
        ret = int(ret_m.group("ret"), 0)
        if op in OPENS:
            named = ret_m.group("path") if ret >= 0 else None
        else:
            fd_m = _FD_ARG.match(call)
            named = fd_m.group("path") if fd_m else None
        if named is None or not matches(_unescape(named)):
            continue
        counts[op] += 1
        if op in DATA_CALLS:
            moved[op] += max(ret, 0)
    return {"counts": dict(counts), "bytes": dict(moved)}


def strace_command(cmd: list[str], out) -> list[str]:
    """cmd under `strace -f -qq -y` of the file calls, its output to `out`: for a run another
    observer (iowitness) watches too, read afterwards with file_calls_in(). Skips when strace is
    missing."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed: no independent count of the file calls")
    return [strace, "-f", "-qq", "-y", "-e", "trace=" + ",".join(SYSCALLS), "-o", str(out), "--", *map(str, cmd)]


def file_calls_in(out, path: PathFilter) -> dict:
    """The calls on path in the strace output file `out`, as parse_strace() counts them. A path
    (not a predicate) is resolved with os.path.realpath first, since strace names files as the
    kernel does."""
    if not callable(path):
        path = os.path.realpath(path)
    return parse_strace(Path(out).read_text(encoding="utf-8", errors="surrogateescape"), path)


def strace_file_calls(cmd: list[str], path: PathFilter, workdir, *, out=None, timeout: float = 600) -> dict:
    """Run cmd under strace in workdir and count its calls on path (file_calls_in).

    The strace output is kept in `out` (default workdir/strace.txt) for inspection.
    Skips when strace is missing or not allowed to trace; fails when cmd fails.
    """
    workdir = Path(workdir)
    out = Path(out) if out is not None else workdir / "strace.txt"
    run = subprocess.run(strace_command(cmd, out), cwd=workdir, capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        # seccomp or a container's ptrace ban is a missing capability, not a failure
        if "ptrace" in run.stderr.lower() and "operation not permitted" in run.stderr.lower():
            pytest.skip(f"strace may not trace here: {run.stderr.strip().splitlines()[0]}")
        raise AssertionError(f"{cmd} under strace exited with {run.returncode}:\n{run.stderr}")
    return file_calls_in(out, path)


# The calls that move bytes from one fd to another in the kernel (probes/transfer.bpf.h).
TRANSFERS = ("copy_file_range", "sendfile", "splice")
_DECORATED_FD = re.compile(r"(?<![\w\[])(-?\d+)" + _DECORATION.format("path"))


def parse_transfers(text: str) -> list[dict]:
    """The copy_file_range, sendfile and splice calls in the text of `strace -f -qq -y` output.

    In order of return: dicts with op, in_fd, in_path, out_fd, out_path, ret (the
    decoration's path, or None for an fd strace could not name). sendfile's first argument
    is its output: in_* and out_* are the source and the destination whatever the call.
    """
    calls = []
    for number, line in _complete_calls(text):
        name = _NAME.match(line)
        if not name or name.group(1) not in TRANSFERS:
            continue
        ret_m = _RETURN.search(line)
        if ret_m is None:
            raise ValueError(f"line {number}: cannot read the return value of {line!r}")
        if ret_m.group("ret") == "?":
            continue
        fds = [(int(m.group(1)), _unescape(m.group("path")))
               for m in _DECORATED_FD.finditer(line[name.end():ret_m.start()])]
        if len(fds) != 2:
            raise ValueError(f"line {number}: expected two decorated fds in {line!r}")
        (in_fd, in_path), (out_fd, out_path) = fds if name.group(1) != "sendfile" else fds[::-1]
        calls.append({"op": name.group(1), "in_fd": in_fd, "in_path": in_path, "out_fd": out_fd, "out_path": out_path,
                      "ret": int(ret_m.group("ret"), 0)})
    return calls
