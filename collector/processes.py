"""What /proc says of a running process: its name, command line, directory, age and descendants.

`attach --pid` records this at attach time, so that a trace that begins mid-run still names
its benchmark (and the analysis can recognise it from its command line), and says how long the
benchmark had been running before the trace began; and again when the process attached to execs
a program (a shell gate, `sh -c 'read go; exec iozone ...'`): the benchmark is what it runs.
"""

from __future__ import annotations

import os
import stat
import time


def describe(pid: int) -> dict:
    """{pid, comm, cmdline, cwd, age_s}: what can be read now; a field that cannot is None."""
    return {"pid": pid, "comm": _read(f"/proc/{pid}/comm", lambda raw: raw.decode(errors="replace").strip()),
            "cmdline": _read(f"/proc/{pid}/cmdline", _argv), "cwd": _link(f"/proc/{pid}/cwd"), "age_s": age_s(pid),
            "output_files": output_files(pid), "output_flags": output_flags(pid)}


def output_files(pid: int) -> dict[str, str]:
    """{"1": path} for each of fd 1 and 2 open on a regular file now. Opened before the trace,
    such a file is the program's output (a shell's `> file`) unless the program opened it
    itself (dd's of= is its fd 1), which the trace cannot show: its command line naming the file
    tells (collector/format/printed_timeline.own_output_paths), or its open flags (output_flags)."""
    found = {}
    for fd in ("1", "2"):
        try:
            if stat.S_ISREG(os.stat(f"/proc/{pid}/fd/{fd}").st_mode):
                found[fd] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
    return found


def output_flags(pid: int) -> dict[str, int]:
    """{"1": flags} for each of fd 1 and 2 open on a regular file now: its open flags as
    /proc/PID/fdinfo shows them (O_CREAT and O_TRUNC are gone by then). A shell opens `> file`
    write-only (`>>` with O_APPEND), never for reading too, never O_DIRECT, O_SYNC or O_DSYNC:
    such a file was opened by the program itself (printed_timeline.own_output_paths)."""
    found = {}
    for fd in output_files(pid):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                found[fd] = next(int(line.split()[1], 8) for line in f if line.startswith("flags:"))
        except (OSError, StopIteration, ValueError, IndexError):
            continue
    return found


def after_exec(pid: int, executed: str) -> dict:
    """What `pid` runs after it exec'd `executed` (the probe's EXEC fact: the path as passed):
    {pid, path, comm, cmdline, cwd}, read now. The command line is None when the process is gone,
    or runs another program by now (it exec'd again, or its PID was given to another process):
    the path alone then names the program."""
    cwd = _link(f"/proc/{pid}/cwd")
    exe = _link(f"/proc/{pid}/exe")
    now = describe(pid)
    same = exe is not None and os.path.realpath(os.path.join(cwd or "/", executed)) == exe
    return {"pid": pid, "path": executed, "comm": now["comm"] if same else None,
            "cmdline": now["cmdline"] if same else None, "cwd": cwd if same else None}


def alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def age_s(pid: int) -> float | None:
    """Seconds since the process started (field 22 of /proc/PID/stat: clock ticks after boot)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None
    return round(time.clock_gettime(time.CLOCK_BOOTTIME) - started, 3)


def _argv(raw: bytes) -> list[str] | None:
    parts = raw.split(b"\0")
    if parts and parts[-1] == b"":
        parts.pop()
    return [p.decode(errors="replace") for p in parts] or None   # a kernel thread has none


def _read(path: str, parse):
    try:
        with open(path, "rb") as f:
            return parse(f.read())
    except OSError:
        return None


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def descendants(pids: set[int]) -> set[int]:
    """pids and every process descended from them now, read from /proc."""
    parent_of = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    parent_of[int(entry)] = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue   # exited while we read
    found, frontier = set(pids), set(pids)
    while frontier:
        frontier = {pid for pid, ppid in parent_of.items() if ppid in frontier and pid not in found}
        found |= frontier
    return found
