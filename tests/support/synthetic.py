"""Event tables written call by call, shaped like `Trace.events`, for the analysis tests.

    events = (Calls()
              .open("/data/f", O_WRONLY | O_CREAT | O_TRUNC)
              .write(4096).write(4096)          # at offsets 0 and 4096, like the kernel
              .fsync(latency=50_000)
              .close()
              .frame())

The builder keeps what the kernel keeps: a table of fds per process (threads of a process
share it, the lowest free fd is handed out from 3), a file position per open, a size per file
(for SEEK_END and O_APPEND). Each call records what the probe would (docs/trace-format.md,
"Per syscall"): `read`/`write` start at the file position and move it by the bytes done;
`pread`/`pwrite` carry their own offset; `lseek` records its argument in `requested` and its
whence in `flags`. Reads know no end of file: a read does all it asked unless `ret=` says
otherwise (a short count, or `-errno`).

Time: one clock for the whole table. A call starts where the previous one ended (plus any
`gap`), takes `latency` ns (1000 by default) and moves the clock to its end; `at=` (on any
call) or `.at(ns)` puts the clock anywhere, also back in time, so two threads can overlap.
Calls go to the selected process and thread (`.process(tgid)`, `.thread(tid)`), on the fd
that thread opened last unless `fd=` says which.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

O_RDONLY, O_WRONLY, O_RDWR = 0, 0o1, 0o2
O_CREAT, O_TRUNC, O_APPEND, O_DSYNC, O_DIRECT, O_SYNC = 0o100, 0o1000, 0o2000, 0o10000, 0o40000, 0o4010000
SEEK_SET, SEEK_CUR, SEEK_END = 0, 1, 2
EBADF, EIO, EINVAL = 9, 5, 22
URING_FIXED_FILE = 0x100     # probes/events.h IOW_URING_FIXED_FILE

DEV = (8 << 20) | 1          # kernel encoding of device 8:1
FIRST_INO = 11
START_NS = 1_000_000_000     # the clock when the first call starts
LATENCY_NS = 1000

# in the order of enum iow_op (probes/events.h)
SYSCALLS = ("open", "openat", "openat2", "creat", "read", "write", "pread64", "pwrite64", "readv", "writev",
            "preadv", "pwritev", "preadv2", "pwritev2", "lseek", "fsync", "fdatasync", "close",
            "dup", "dup2", "dup3", "fcntl", "ftruncate", "fallocate", "uring_read", "uring_write", "uring_fsync",
            "aio_read", "aio_write", "aio_fsync", "copy_file_range_from", "copy_file_range_to",
            "mmap", "fault_read", "fault_write", "sendfile_from", "sendfile_to")
READS = ("read", "readv", "pread64", "preadv", "preadv2")
WRITES = ("write", "writev", "pwrite64", "pwritev", "pwritev2")
ASYNC = ("uring_read", "uring_write", "uring_fsync", "aio_read", "aio_write", "aio_fsync")

COLUMNS = {"start_ns": "uint64", "latency_ns": "uint64", "ino": "uint64", "offset": "int64",
           "requested": "int64", "ret": "int64", "tgid": "uint32", "tid": "uint32", "dev": "uint32",
           "fd": "int32", "flags": "uint32", "ring": "uint16"}


@dataclass
class _File:
    ino: int
    size: int = 0


@dataclass
class _Open:
    path: str
    flags: int
    position: int = 0


class Calls:
    """A builder of event tables; every call method returns the builder, to chain."""

    def __init__(self, tgid: int = 1000, *, start_ns: int = START_NS, latency: int = LATENCY_NS):
        self.latency = latency
        self.now = start_ns
        self.tgid, self.tid = tgid, tgid
        self.rows: list[dict] = []
        self.files: dict[str, _File] = {}
        self.fds: dict[int, dict[int, _Open]] = {}          # tgid -> fd -> open file
        self.current: dict[tuple[int, int], int] = {}       # (tgid, tid) -> fd it opened last
        self.last: dict[int, int] = {}                      # tgid -> fd it opened last

    # who and when

    def process(self, tgid: int, tid: int | None = None) -> Calls:
        """The next calls are this process's, by its thread `tid` (the main thread by default)."""
        self.tgid, self.tid = tgid, tgid if tid is None else tid
        return self

    def thread(self, tid: int) -> Calls:
        """The next calls are this thread's, in the selected process."""
        self.tid = tid
        return self

    def at(self, start_ns: int) -> Calls:
        """The next call starts at this time."""
        self.now = start_ns
        return self

    def gap(self, ns: int) -> Calls:
        """Time outside any call (the benchmark's own work) before the next call."""
        self.now += ns
        return self

    # opening and closing

    def open(self, path: str, flags: int = O_RDONLY, *, fd: int | None = None, syscall: str = "openat",
             size: int | None = None, traced: bool = True, **timing) -> Calls:
        """Open `path`; `size`: the file's size before this open (a file the trace did not write);
        traced=False: opened before tracing began, so the fd exists but no event says so."""
        file = self._file(path)
        if size is not None:
            file.size = size
        if syscall == "creat":
            flags = O_CREAT | O_WRONLY | O_TRUNC
        if flags & O_TRUNC:
            file.size = 0
        table = self.fds.setdefault(self.tgid, {})
        if fd is None:
            fd = next(n for n in range(3, 3 + len(table) + 1) if n not in table)
        table[fd] = _Open(path, flags)
        self.current[(self.tgid, self.tid)] = self.last[self.tgid] = fd
        if traced:
            self._record(syscall, fd, -1, 0, fd, flags, **timing)
        return self

    def close(self, *, fd: int | None = None, ret: int = 0, **timing) -> Calls:
        fd = self._fd(fd)
        self._record("close", fd, -1, 0, ret, 0, **timing)
        if ret >= 0:
            del self.fds[self.tgid][fd]
        return self

    # data

    def read(self, size: int, offset: int | None = None, *, ret: int | None = None, fd: int | None = None,
             syscall: str = "read", **timing) -> Calls:
        """A read at the file position (or at `offset`, as if the position were there), which it moves."""
        assert syscall in READS
        return self._data(syscall, size, offset, ret, fd, positional=False, **timing)

    def write(self, size: int, offset: int | None = None, *, ret: int | None = None, fd: int | None = None,
              syscall: str = "write", **timing) -> Calls:
        """A write at the file position, or at the end of the file with O_APPEND; it moves the position."""
        assert syscall in WRITES
        return self._data(syscall, size, offset, ret, fd, positional=False, **timing)

    def pread(self, size: int, offset: int, *, ret: int | None = None, fd: int | None = None,
              syscall: str = "pread64", **timing) -> Calls:
        """A read at `offset`; the file position does not move."""
        assert syscall in READS
        return self._data(syscall, size, offset, ret, fd, positional=True, **timing)

    def pwrite(self, size: int, offset: int, *, ret: int | None = None, fd: int | None = None,
               syscall: str = "pwrite64", **timing) -> Calls:
        """A write at `offset`; the file position does not move."""
        assert syscall in WRITES
        return self._data(syscall, size, offset, ret, fd, positional=True, **timing)

    def request(self, syscall: str, size: int, offset: int, *, latency: int, ret: int | None = None,
                fd: int | None = None, ring: int = 1, flags: int = 0, fixed_index: int | None = None,
                at: int | None = None) -> Calls:
        """An asynchronous request (io_uring, libaio) submitted now (or `at`) that completes
        `latency` ns later; the thread goes on at once, so the clock does not move.
        fixed_index: an io_uring request on a registered file, which the probe records by its
        index in the ring's table (in `fd`) with IOW_URING_FIXED_FILE in `flags`."""
        assert syscall in ASYNC
        if at is not None:
            self.now = at
        fd = self._fd(fd)
        path = self.fds[self.tgid][fd].path
        if fixed_index is not None:
            fd, flags = fixed_index, flags | URING_FIXED_FILE
        done = size if ret is None else ret
        self._record(syscall, fd, offset, size, done, flags, latency=latency, ring=ring, path=path)
        self.now -= latency
        return self

    def copy(self, source_fd: int, dest_fd: int, asked: int, moved: int, offset: int, **timing) -> Calls:
        """copy_file_range between two target files: one record per side, one call's times
        (the probe's way); `flags` holds the other side's fd."""
        start = self.now if timing.get("at") is None else timing["at"]
        self._record("copy_file_range_from", source_fd, offset, asked, moved, dest_fd, **timing)
        self.now = start
        self._record("copy_file_range_to", dest_fd, offset, asked, moved, source_fd, **timing)
        return self

    # everything else

    def lseek(self, offset: int, whence: int = SEEK_SET, *, ret: int | None = None, fd: int | None = None,
              **timing) -> Calls:
        """Move the file position as the kernel does; a position below 0 fails with EINVAL."""
        fd = self._fd(fd)
        opened = self.fds[self.tgid][fd]
        base = {SEEK_SET: 0, SEEK_CUR: opened.position, SEEK_END: self.files[opened.path].size}[whence]
        if ret is None:
            ret = base + offset if base + offset >= 0 else -EINVAL
        if ret >= 0:
            opened.position = ret
        self._record("lseek", fd, -1, offset, ret, whence, **timing)
        return self

    def fsync(self, *, ret: int = 0, fd: int | None = None, syscall: str = "fsync", **timing) -> Calls:
        assert syscall in ("fsync", "fdatasync")
        self._record(syscall, self._fd(fd), -1, 0, ret, 0, **timing)
        return self

    def ftruncate(self, length: int, *, ret: int = 0, fd: int | None = None, **timing) -> Calls:
        fd = self._fd(fd)
        if ret >= 0:
            self.files[self.fds[self.tgid][fd].path].size = length
        self._record("ftruncate", fd, -1, length, ret, 0, **timing)
        return self

    def raw(self, syscall: str, *, fd: int = -1, path: str | None = None, offset: int = -1, requested: int = 0,
            ret: int = 0, flags: int = 0, **timing) -> Calls:
        """Any record as the probe writes it, moving no file position: an mmap, a page fault
        (fd -1 and the mapped file's `path`: flags IOW_FAULT_MAJOR for a major one), a sendfile side."""
        assert syscall in SYSCALLS
        if path is None:
            path = self.fds[self.tgid][self._fd(None if fd < 0 else fd)].path
        self._file(path)
        self._record(syscall, fd, offset, requested, ret, flags, path=path, **timing)
        return self

    # the table

    def frame(self) -> pd.DataFrame:
        """The events as `Trace.events` has them: its dtypes, sorted by start_ns, a RangeIndex."""
        rows = sorted(self.rows, key=lambda r: r["start_ns"])   # stable: equal starts keep call order
        frame = pd.DataFrame({c: np.array([r[c] for r in rows], dtype=t) for c, t in COLUMNS.items()})
        names = [r["syscall"] for r in rows]
        frame["syscall"] = pd.Categorical(names, categories=[s for s in SYSCALLS if s in set(names)])
        frame["end_ns"] = frame["start_ns"] + frame["latency_ns"]
        frame["device"] = pd.Categorical([f"{DEV >> 20}:{DEV & 0xFFFFF}"] * len(rows))
        paths = [r["path"] for r in rows]
        frame["path"] = pd.Categorical(paths, categories=sorted(set(paths)))
        return frame

    # inside

    def _file(self, path: str) -> _File:
        if path not in self.files:
            self.files[path] = _File(FIRST_INO + len(self.files))
        return self.files[path]

    def _fd(self, fd: int | None) -> int:
        if fd is None:
            # a thread that opened nothing works on the fd its process opened last
            fd = self.current.get((self.tgid, self.tid), self.last.get(self.tgid))
        if fd is None or fd not in self.fds.get(self.tgid, {}):
            raise ValueError(f"process {self.tgid} has no open fd {fd}: open a file first")
        return fd

    def _data(self, syscall, size, offset, ret, fd, *, positional, **timing) -> Calls:
        fd = self._fd(fd)
        opened = self.fds[self.tgid][fd]
        file = self.files[opened.path]
        if positional:
            where = offset
        elif offset is not None:
            where = offset
        elif syscall in WRITES and opened.flags & O_APPEND:
            where = file.size
        else:
            where = opened.position
        done = size if ret is None else ret
        if done > 0 and syscall in WRITES:
            file.size = max(file.size, where + done)
        if not positional:
            opened.position = where + max(done, 0)
        self._record(syscall, fd, where, size, done, 0, **timing)
        return self

    def _record(self, syscall, fd, offset, requested, ret, flags, *, latency: int | None = None,
                at: int | None = None, ring: int = 0, path: str | None = None) -> None:
        if at is not None:
            self.now = at
        latency = self.latency if latency is None else latency
        path = self.fds[self.tgid][fd].path if path is None else path
        self.rows.append({"start_ns": self.now, "latency_ns": latency, "ino": self.files[path].ino,
                          "offset": offset, "requested": requested, "ret": ret, "tgid": self.tgid,
                          "tid": self.tid, "dev": DEV, "fd": fd, "flags": flags, "ring": ring, "syscall": syscall,
                          "path": path})
        self.now += latency


def event_records(frame: pd.DataFrame) -> np.ndarray:
    """A Calls frame as the probe's event records (probes/events.h), as the trace writer takes them."""
    from iowitness.probes.layout import layout

    records = np.zeros(len(frame), layout().event)
    ops = {name: number for number, name in layout().names("iow_op", "IOW_OP_").items()}
    for name in records.dtype.names:
        if name == "op":
            records["op"] = [ops[s] for s in frame["syscall"]]
        elif name in frame:
            records[name] = frame[name].to_numpy().astype(records.dtype.fields[name][0])
    return records
