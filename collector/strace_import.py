"""`iowitness import`: an strace text trace into the same .iwt format a recording writes.

strace sees each syscall's arguments and return, not the kernel's state, so some of what the
probe reads in the kernel is rebuilt here from the calls themselves:

- the file position (the `offset` of read/write): followed per open file description, from 0
  at open, moved by each read, write and lseek, shared by dup'ed fds and by forked children
  (a thread shares its process's fd table, a fork copies it: clone's CLONE_FILES and
  CLONE_THREAD say which). A file open before the strace began starts at an unknown position
  (-1) until an lseek names one;
- file identity: strace names a file by path (-y), not by device and inode, so each path
  gets its own number (`ino`) and the device is 0 ("0:0");
- the thread group: strace prints thread ids; clone's flags (CLONE_THREAD) tell which
  children are threads.

What strace cannot see at all is left out and said so in every report (collector/backends.py):
block I/O and the device view, off-CPU time, the observer's cost. Latency is strace's -T,
which includes the ptrace stops around each call: it is inflated, most for short calls.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np

from iowitness.collector import backends, strace_lines
from iowitness.collector.targets import DEFAULT_EXCLUDES
from iowitness.probes.layout import layout
from iowitness.version import __version__

# Linux x86-64 and arm64 open flags (asm-generic), as the probe records them
_OPEN_FLAGS = {"O_RDONLY": 0, "O_WRONLY": 0o1, "O_RDWR": 0o2, "O_CREAT": 0o100, "O_EXCL": 0o200,
               "O_NOCTTY": 0o400, "O_TRUNC": 0o1000, "O_APPEND": 0o2000, "O_NONBLOCK": 0o4000,
               "O_NDELAY": 0o4000, "O_DSYNC": 0o10000, "O_ASYNC": 0o20000, "O_DIRECT": 0o40000,
               "O_LARGEFILE": 0o100000, "O_DIRECTORY": 0o200000, "O_NOFOLLOW": 0o400000,
               "O_NOATIME": 0o1000000, "O_CLOEXEC": 0o2000000, "O_SYNC": 0o4010000, "O_RSYNC": 0o4010000,
               "O_PATH": 0o10000000, "O_TMPFILE": 0o20200000}
O_APPEND, O_CLOEXEC, O_DIRECTORY, O_PATH = 0o2000, 0o2000000, 0o200000, 0o10000000
O_TMPFILE_OWN = 0o20000000   # O_TMPFILE without O_DIRECTORY's bit (include/uapi/asm-generic/fcntl.h)
_RWF = {"RWF_HIPRI": 0x1, "RWF_DSYNC": 0x2, "RWF_SYNC": 0x4, "RWF_NOWAIT": 0x8, "RWF_APPEND": 0x10}
_FALLOC = {"FALLOC_FL_KEEP_SIZE": 0x1, "FALLOC_FL_PUNCH_HOLE": 0x2, "FALLOC_FL_NO_HIDE_STALE": 0x4,
           "FALLOC_FL_COLLAPSE_RANGE": 0x8, "FALLOC_FL_ZERO_RANGE": 0x10, "FALLOC_FL_INSERT_RANGE": 0x20,
           "FALLOC_FL_UNSHARE_RANGE": 0x40}
_WHENCE = {"SEEK_SET": 0, "SEEK_CUR": 1, "SEEK_END": 2, "SEEK_DATA": 3, "SEEK_HOLE": 4}
_FCNTL = {"F_DUPFD": 0, "F_GETFD": 1, "F_SETFD": 2, "F_GETFL": 3, "F_SETFL": 4, "F_GETLK": 5, "F_SETLK": 6,
          "F_SETLKW": 7, "F_DUPFD_CLOEXEC": 1030}
_OPENS = {"open", "openat", "openat2", "creat"}
_DATA = {"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2"}
# the calls on an fd the probe records; mmap and its kin are left out: strace sees the mapping,
# never the page faults that move the data
_FD_CALLS = _DATA | {"lseek", "fsync", "fdatasync", "close", "dup", "dup2", "dup3", "fcntl", "ftruncate", "fallocate",
                     "fadvise64", "readahead"}
_ADVICE = {"POSIX_FADV_NORMAL": 0, "POSIX_FADV_RANDOM": 1, "POSIX_FADV_SEQUENTIAL": 2, "POSIX_FADV_WILLNEED": 3,
           "POSIX_FADV_DONTNEED": 4, "POSIX_FADV_NOREUSE": 5}
_CLONES = {"clone", "clone3", "fork", "vfork"}
_IOV_LEN = re.compile(r"iov_len=(\d+)")
# every call the importer reads; strace_lines skips the others unparsed
WANTED = frozenset(_OPENS | _FD_CALLS | _CLONES | {"execve", "getdents64"})


@dataclass
class OpenFile:
    """An open file description: what fds, dup'ed or inherited, share."""
    path: str
    ino: int
    flags: int
    pos: int | None          # None: unknown (opened before the strace began)


@dataclass
class Proc:
    tgid: int
    fds: dict = field(default_factory=dict)   # fd -> (OpenFile, cloexec); threads share the dict
    comm: str = ""


class Importer:
    """Feeds Calls and Exits (collector/strace_lines.py) into event and fact records."""

    def __init__(self, rules: list[str]):
        self.rules = [os.path.normpath(r) for r in rules]
        lay = layout()
        self.op = lay.enums["iow_op"]
        self.fact_kind = lay.enums["iow_meta_kind"]
        self.events: list[tuple] = []
        self.facts: list[dict] = []
        self.procs: dict[int, Proc] = {}
        self.pending_clones: dict[int, str] = {}   # parent pid -> clone text, child not yet known
        self.inos: dict[str, int] = {}
        self.sizes: dict[str, int] = {}           # file sizes the calls made known (O_TRUNC, writes)
        self.directories: set[str] = set()
        self.output: list[tuple[str, bytes]] = []
        self.output_cut = False                    # strace shortened a string written to stdout
        self.printed: list[tuple] = []             # every write to fd 1 or 2: the output timeline
        self.command: list[str] | None = None
        self.root_pid: int | None = None   # the process whose exec gave the command: the benchmark's first
        self.command_cut = False
        self.cwd: str | None = None
        self.first_pid: int | None = None
        self.exit_code: int | None = None
        self.exit_signal: str | None = None
        self.first_ns: int | None = None
        self.last_ns = 0
        self.without_latency = 0
        self.undecoded_fds = 0
        self.undecoded_example = ""

    # -- processes ---------------------------------------------------------------------------
    def proc(self, pid: int) -> Proc:
        known = self.procs.get(pid)
        if known is not None:
            return known
        if self.first_pid is None:
            self.first_pid = pid
        parent = next(reversed(self.pending_clones), None) if self.pending_clones else None
        if parent is not None:
            # the child spoke before its parent's clone returned: that clone made it
            return self._born(pid, parent, self.pending_clones.pop(parent))
        self.procs[pid] = Proc(pid)
        return self.procs[pid]

    def _born(self, child: int, parent: int, text: str) -> Proc:
        mother = self.proc(parent)
        if "CLONE_THREAD" in text:
            proc = Proc(mother.tgid, mother.fds, mother.comm)
        else:
            fds = mother.fds if "CLONE_FILES" in text else dict(mother.fds)
            proc = Proc(child, fds, mother.comm)
            self._fact("IOW_META_FORK", self.last_ns, child, parent_tgid=mother.tgid, comm=mother.comm)
        self.procs[child] = proc
        return proc

    # -- the calls -----------------------------------------------------------------------------
    def feed(self, item) -> None:
        if isinstance(item, tuple):            # an unfinished call: only clones matter now
            _, pid, name, text = item
            if name in _CLONES:
                self.proc(pid)
                self.pending_clones[pid] = text
            return
        if self.first_ns is None:
            self.first_ns = item.ts_ns
        self.last_ns = max(self.last_ns, item.ts_ns + (getattr(item, "latency_ns", 0) or 0))
        if isinstance(item, strace_lines.Exit):
            if item.pid == self.first_pid:
                self.exit_code, self.exit_signal = item.code, item.signal
            return
        self._call(item)

    def _call(self, c: strace_lines.Call) -> None:
        proc = self.proc(c.pid)
        if c.latency_ns is None and c.ret is not None:
            self.without_latency += 1
        name = c.name
        if name in _CLONES:
            self.pending_clones.pop(c.pid, None)
            if c.ret and c.ret > 0 and c.ret not in self.procs:
                self._born(c.ret, c.pid, c.raw)
            return
        if name == "execve":
            self._exec(c, proc)
            return
        if c.ret is None:
            return   # never returned (`= ?`): the probe, which records at exit, cannot see it either
        if self.cwd is None and c.paths and c.args and c.args[0] == "AT_FDCWD":
            self.cwd = c.paths[0]
        if name in _OPENS:
            self._open(c, proc)
            return
        if not c.args:
            return
        if name in ("write", "writev") and c.args[0] in ("1", "2"):
            # the output timeline has every write to fd 1 and 2, as the probe's; one to a file
            # is an event on it too, and the analysis's walk tells output from data
            # (analysis/phasing/output_fds.py), as for a trace the probe made
            self._printed(c, proc, name)
            if _is_terminal_or_pipe(c.paths.get(0)):
                self._stdout(c)
                return
        if name == "getdents64" and 0 in c.paths:
            self.directories.add(c.paths[0])
            return
        if name in _FD_CALLS:
            self._fd_call(c, proc, name, self.op[f"IOW_OP_{name.upper()}"])

    def _exec(self, c: strace_lines.Call, proc: Proc) -> None:
        if c.ret != 0:
            return
        texts = strace_lines.strings(c.raw)
        path = texts[0][0].decode("utf-8", "surrogateescape") if texts else ""
        argv = texts[1:]
        if self.command is None:
            self.command = [a.decode("utf-8", "surrogateescape") for a, _ in argv]
            self.root_pid = c.pid
            # an argv strace shortened: its strings end in "...", or the list in "...]"
            self.command_cut = any(cut for _, cut in argv) or "...]" in c.raw or "/* " in c.raw.split("]")[0]
        proc.comm = (os.path.basename(argv[0][0].decode("utf-8", "replace")) if argv else os.path.basename(path))[:15]
        # exec closes the close-on-exec fds
        for fd in [fd for fd, (_, cloexec) in proc.fds.items() if cloexec]:
            del proc.fds[fd]
        self._fact("IOW_META_EXEC", c.ts_ns, proc.tgid, comm=proc.comm, path=path)

    def _is_target(self, path: str | None) -> bool:
        if not path or not path.startswith("/") or path in self.directories:
            return False
        if self.rules:
            # as run --file: the file itself, or a file directly in the directory
            return any(path == r or os.path.dirname(path) == r for r in self.rules)
        return not path.startswith(DEFAULT_EXCLUDES)

    def _ino(self, path: str) -> int:
        return self.inos.setdefault(path, len(self.inos) + 1)

    def _open(self, c: strace_lines.Call, proc: Proc) -> None:
        if c.ret < 0 or not c.ret_path:
            return
        flags = self._open_flags(c)
        if flags & (O_DIRECTORY | O_PATH) and flags & O_TMPFILE_OWN != O_TMPFILE_OWN:
            # (O_TMPFILE carries O_DIRECTORY's bit: its fd is a new unnamed file, data like any other)
            self.directories.add(c.ret_path)
        path = c.ret_path
        if not self._is_target(path):
            proc.fds.pop(c.ret, None)
            return
        if flags & 0o1000:   # O_TRUNC
            self.sizes[path] = 0
        f = OpenFile(path, self._ino(path), flags, 0)
        proc.fds[c.ret] = (f, bool(flags & O_CLOEXEC))
        self._event(c, proc, self.op[f"IOW_OP_{c.name.upper()}"], f, fd=c.ret, offset=-1, flags=flags)
        dirfd = -100 if c.name in ("open", "creat") or (c.args and c.args[0] == "AT_FDCWD") else _int(c.args[0], -1)
        self._fact("IOW_META_FILE", c.ts_ns, proc.tgid, ino=f.ino, fd=c.ret, dirfd=dirfd, comm=proc.comm, path=path)

    def _open_flags(self, c: strace_lines.Call) -> int:
        if c.name == "creat":
            return 0o100 | 0o1 | 0o1000
        text = c.args[1] if c.name == "open" else (c.args[2] if len(c.args) > 2 else "")
        if c.name == "openat2":
            m = re.search(r"flags=([A-Z_|0-9x]+)", text)
            text = m.group(1) if m else ""
        return _symbols(text, _OPEN_FLAGS)

    def _file_of(self, c: strace_lines.Call, proc: Proc, fd: int) -> OpenFile | None:
        """The open file behind fd, as the call's -y decoration names it."""
        path = c.paths.get(0)
        held = proc.fds.get(fd)
        if path is None:
            if fd >= 0 and (c.ret is None or c.ret >= 0 or c.ret != -9):   # EBADF: no file to name
                self.undecoded_fds += 1
                self.undecoded_example = self.undecoded_example or f"{c.name}({fd}, ...)"
            return held[0] if held else None
        if held and held[0].path == path:
            return held[0]
        if not self._is_target(path):
            return None
        # open before the strace began (or opened where we could not see it): position unknown
        f = OpenFile(path, self._ino(path), 0, None)
        proc.fds[fd] = (f, False)
        return f

    def _fd_call(self, c: strace_lines.Call, proc: Proc, name: str, op: int) -> None:
        fd = _int(c.args[0], None)
        if fd is None:
            return
        f = self._file_of(c, proc, fd)
        if f is None:
            return
        a = c.args
        offset, requested, flags = -1, 0, 0
        if name in _DATA:
            requested = (sum(int(n) for n in _IOV_LEN.findall(a[1])) if name[-1] == "v" or name[-2:] == "v2"
                         else _int(a[2] if len(a) > 2 else "0", 0))
            explicit = _int(a[3], -1) if name.startswith("p") and len(a) > 3 else None
            if name.endswith("v2") and len(a) > 4:
                flags = _symbols(a[4], _RWF)
            if explicit is not None and explicit >= 0:
                offset = explicit
            else:
                writes = name.startswith(("write", "pwrite"))
                if writes and f.flags & O_APPEND:
                    f.pos = self.sizes.get(f.path, f.pos if f.pos is not None else None)
                offset = f.pos if f.pos is not None else -1
                if f.pos is not None and c.ret > 0:
                    f.pos += c.ret
            if c.ret > 0 and name.startswith(("write", "pwrite")) and offset >= 0:
                self.sizes[f.path] = max(self.sizes.get(f.path, 0), offset + c.ret)
        elif name == "lseek":
            requested = _int(a[1], 0) & (2**64 - 1)
            flags = _WHENCE.get(a[2], _int(a[2], 0)) if len(a) > 2 else 0
            if c.ret >= 0:
                f.pos = c.ret
        elif name == "close":
            proc.fds.pop(fd, None)
        elif name in ("dup", "dup2", "dup3") or (name == "fcntl" and len(a) > 1 and a[1].startswith("F_DUPFD")):
            if c.ret >= 0:
                proc.fds[c.ret] = (f, name == "dup3" and "O_CLOEXEC" in c.raw or "CLOEXEC" in (a[1] if len(a) > 1 else ""))
            if name == "fcntl":
                flags, requested = _FCNTL.get(a[1], 0), _int(a[2], 0) if len(a) > 2 else 0
        elif name == "fcntl":
            flags = _FCNTL.get(a[1], 0) if len(a) > 1 else 0
            requested = _int(a[2], 0) if len(a) > 2 else 0
        elif name == "ftruncate":
            requested = _int(a[1], 0)
            if c.ret == 0:
                self.sizes[f.path] = requested
        elif name == "fallocate" and len(a) > 3:
            flags, offset, requested = _symbols(a[1], _FALLOC), _int(a[2], -1), _int(a[3], 0)
        elif name in ("fadvise64", "readahead") and len(a) > 2:
            offset, requested = _int(a[1], -1), _int(a[2], 0)
            flags = _ADVICE.get(a[3], _int(a[3], 0)) if name == "fadvise64" and len(a) > 3 else 0
        self._event(c, proc, op, f, fd=fd, offset=offset, requested=requested, flags=flags)

    def _stdout(self, c: strace_lines.Call) -> None:
        stream = "stdout" if c.args[0] == "1" else "stderr"
        for text, cut in strace_lines.strings(c.raw):
            self.output.append((stream, text))
            self.output_cut |= cut

    def _printed(self, c: strace_lines.Call, proc: Proc, name: str) -> None:
        data = b"".join(text for text, _ in strace_lines.strings(c.raw))
        fd = int(c.args[0])
        held = proc.fds.get(fd)   # a target file on fd 1 or 2: its identity, as the events give it
        path = c.paths.get(0) or ""
        # what -y says fd 1 or 2 is, as struct iow_output.type (i_mode >> 12)
        kind = 1 if path.startswith("pipe:") else 12 if path.startswith("socket:") else \
            2 if path.startswith("/dev/") else 8 if path.startswith("/") else 0
        self.printed.append((c.ts_ns, c.ts_ns + (c.latency_ns or 0), c.ret, proc.tgid, c.pid, fd,
                             data, self.op[f"IOW_OP_{name.upper()}"], held[0].ino if held else 0, kind))

    # -- records -------------------------------------------------------------------------------
    def _event(self, c, proc: Proc, op: int, f: OpenFile, fd: int, offset: int, requested: int = 0,
               flags: int = 0) -> None:
        self.events.append((c.ts_ns, c.latency_ns or 0, f.ino, offset, requested & (2**64 - 1), c.ret,
                            proc.tgid, c.pid, 0, fd, flags & 0xFFFFFFFF, op))

    def _fact(self, kind: str, ts_ns: int, tgid: int, ino: int = 0, fd: int = -1, dirfd: int = -1,
              parent_tgid: int = 0, comm: str = "", path: str = "") -> None:
        self.facts.append({"ts_ns": ts_ns, "kind": self.fact_kind[kind], "tgid": tgid, "ino": ino, "fd": fd,
                           "dirfd": dirfd, "parent_tgid": parent_tgid, "comm": comm, "path": path})

    def event_records(self) -> np.ndarray:
        dtype = layout().event
        out = np.zeros(len(self.events), dtype=dtype)
        names = ("start_ns", "latency_ns", "ino", "offset", "requested", "ret", "tgid", "tid", "dev", "fd",
                 "flags", "op")
        if self.events:
            columns = list(zip(*self.events))
            for name, column in zip(names, columns):
                out[name] = np.array(column, dtype=dtype[name])
        return out[np.argsort(out["start_ns"], kind="stable")]

    def printed_records(self) -> np.ndarray:
        """The writes to fd 1 and 2 as iow_output records (the bytes strace printed of each: its
        -s cuts them, counted as cut where fewer than the call wrote)."""
        dtype = layout().structs["iow_output"]
        out = np.zeros(len(self.printed), dtype=dtype)
        room = dtype["data"].shape[0]
        for i, (start, end, ret, tgid, tid, fd, data, op, ino, kind) in enumerate(self.printed):
            row = out[i]
            row["start_ns"], row["end_ns"], row["ret"], row["tgid"], row["tid"] = start, end, ret, tgid, tid
            row["fd"], row["op"], row["ino"], row["type"] = fd, op, ino, kind
            kept = data[:max(0, min(room, ret))]
            row["copied"] = len(kept)
            row["data"][:len(kept)] = np.frombuffer(kept, dtype=np.uint8)
        return out

    def fact_records(self) -> np.ndarray:
        dtype = layout().meta
        out = np.zeros(len(self.facts), dtype=dtype)
        for i, f in enumerate(self.facts):
            for key in ("ts_ns", "kind", "tgid", "ino", "fd", "dirfd", "parent_tgid"):
                out[i][key] = f[key]
            for key in ("comm", "path"):
                raw = f[key].encode("utf-8", "surrogateescape")[:dtype[key].shape[0] - 1]
                out[i][key][:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        return out

    def files(self) -> list[dict]:
        return [{"dev": 0, "ino": ino, "path": path, "device": backends.NO_DEVICE}
                for path, ino in self.inos.items()]


def _is_terminal_or_pipe(path: str | None) -> bool:
    """fd 1 or 2 is the benchmark's output, not a file it writes (dd's of= is its fd 1)."""
    return path is None or not path.startswith("/") or path.startswith("/dev/")


def _symbols(text: str, table: dict) -> int:
    """`O_RDWR|O_CREAT|0x80000` as a number: known names by the table, numbers as they are."""
    value = 0
    for part in text.split("|"):
        part = part.strip()
        value |= _int(part, 0) if part[:1].isdigit() else table.get(part, 0)
    return value


def _int(text: str, default):
    try:
        return int(text, 0)
    except (TypeError, ValueError):
        return default


def start_meta(imp: Importer, sources: list[str], rules: list[str]) -> dict:
    first = imp.first_ns or 0
    return {
        "iowitness_version": __version__,
        "backend": backends.STRACE,
        "mode": "import",
        "command": imp.command,
        # the benchmark's first process, as under run (fio's layout is its main thread's work)
        "pid": imp.root_pid,
        "cwd": imp.cwd or "/",
        "host": "not recorded (strace import)",
        "kernel": "not recorded (strace import)",
        # strace's -ttt clock is the wall clock: both clocks are it
        "clock_start": {"monotonic_ns": first, "realtime_ns": first, "offset_ns": 0},
        "file_rules": [{"path": r, "directory": True} for r in rules],
        "all_files": not rules,
        "excluded_prefixes": [] if rules else list(DEFAULT_EXCLUDES),
        "all_processes": False,
        "targets": [],
        "summary_mode": False,
        "imported_from": [os.path.abspath(s) for s in sources],
    }
