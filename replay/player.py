"""Run a replay plan: the process `iowitness replay` launches under the probe.

    python -m iowitness.replay.player PLAN DIR SPEED

SPEED: 1 keeps the recorded think time between a thread's calls, N > 1 divides it by N,
0 drops it. One thread per recorded thread; each issues its calls with the syscall the
original made (raw syscall(2) through ctypes, so read stays read and pwritev stays pwritev),
except that every open is an openat2 of the file's absolute path under DIR with
RESOLVE_NO_SYMLINKS (see Player._open_file). The buffers are
page-aligned (O_DIRECT calls work as they did). The last lines on stdout say what was
replayed and what differed from the original; exit code 1 when a call failed that had
succeeded in the original.
"""

from __future__ import annotations

import ctypes
import errno
import json
import mmap
import os
import platform
import posixpath
import sys
import threading
import time

from iowitness.replay import paths
from iowitness.replay.plan import OP, OPS, READS, WRITES, Plan, plan_notes

# syscall numbers (asm/unistd_64.h of each architecture); aarch64 has no open or creat, which
# the player never issues (every open is an openat2, or an openat)
SYSCALLS = {
    "x86_64": {"read": 0, "write": 1, "close": 3, "lseek": 8, "pread64": 17, "pwrite64": 18, "readv": 19,
               "writev": 20, "dup": 32, "fsync": 74, "fdatasync": 75, "ftruncate": 77, "openat": 257,
               "fallocate": 285, "fadvise64": 221, "readahead": 187,
               "preadv": 295, "pwritev": 296, "preadv2": 327, "pwritev2": 328, "openat2": 437},
    "aarch64": {"read": 63, "write": 64, "close": 57, "lseek": 62, "pread64": 67, "pwrite64": 68, "readv": 65,
                "writev": 66, "dup": 23, "fsync": 82, "fdatasync": 83, "ftruncate": 46, "openat": 56,
                "fallocate": 47, "fadvise64": 223, "readahead": 213,
                "preadv": 69, "pwritev": 70, "preadv2": 286, "pwritev2": 287, "openat2": 437},
}
# open flags a replay passes on; anything else (O_PATH, O_TMPFILE, O_DIRECTORY, ...) is dropped
KEPT_FLAGS = (os.O_ACCMODE | os.O_CREAT | os.O_EXCL | os.O_TRUNC | os.O_APPEND | os.O_NONBLOCK | os.O_DSYNC
              | os.O_SYNC | getattr(os, "O_DIRECT", 0) | getattr(os, "O_NOATIME", 0) | os.O_NOCTTY)
SPIN_NS = 200_000
RESOLVE_NO_SYMLINKS = 0x04   # linux/openat2.h
PATH_RECORDED = 256          # the probe keeps a path of up to 255 bytes (probes/events.h IOW_PATH_MAX)
# how often a call waiting for another thread's call looks again (a sleep: ~60-80 us in fact)
WAIT_POLL_S = 20e-6
# a think time shorter than this is not waited for: the player's own time between two calls
# (about 1 to 3 us, docs/replay.md) already covers it
MIN_GAP_NS = 5_000   # a wait shorter than this is spun, not slept (a sleep overshoots by ~60 us)


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class Player:
    def __init__(self, plan: Plan, into: str, speed: float):
        machine = platform.machine()
        if machine not in SYSCALLS:
            raise SystemExit(f"iowitness replay: no syscall table for {machine}")
        self.nr = SYSCALLS[machine]
        libc = ctypes.CDLL(None, use_errno=True)
        self.sc = libc.syscall
        self.sc.restype = ctypes.c_long
        self.sc.argtypes = [ctypes.c_long] * 7
        self.plan, self.speed = plan, speed
        self.fds: dict[tuple[int, int], int] = {}
        # each thread's count of calls issued, in memory every replay process shares: a call
        # on a shared file waits on it (threads and processes alike)
        self.shared = mmap.mmap(-1, 8 * max(len(plan.threads), 1))
        self.progress = (ctypes.c_int64 * max(len(plan.threads), 1)).from_buffer(self.shared)
        self.lock = threading.Lock()
        self.outcome: dict[str, list[int]] = {}   # op -> [issued, failed, other bytes]
        self.implicit_opens = 0
        self.direct: set[int] = set()   # our fds opened O_DIRECT: their reads need aligned buffers
        self.failures: list[str] = []
        into_fd = paths.open_into(into, create=False)
        dir_fds = {}
        self.file_dir, self.file_name = [], []
        for f in plan.files:
            d, name = posixpath.split(f["rel"])
            if d not in dir_fds:
                dir_fds[d] = paths.walk(into_fd, into, d, create=False)
            self.file_dir.append(dir_fds[d])
            self.file_name.append(name)
        os.close(into_fd)
        # each file's absolute path (player.c's open_file says why), None when too long to record
        real = os.path.realpath(into)
        self.file_abs = []
        for f in plan.files:
            raw = os.fsencode(f"{real}/{f['rel']}")
            self.file_abs.append(ctypes.create_string_buffer(raw) if len(raw) < PATH_RECORDED else None)
        self.openat2 = True
        writes = plan.calls["size"][[int(o) in {OP[w] for w in WRITES} for o in plan.calls["op"]]]
        self.wbuf = _aligned(int(writes.max(initial=0)))
        pattern = paths.PATTERN * (len(self.wbuf) // len(paths.PATTERN) + 1)
        self.wbuf[:] = pattern[:len(self.wbuf)]

    def run(self) -> int:
        """One process per recorded process (its own fd table, as the original had), one
        thread per recorded thread; the launched process's (plan.root_tgid) run in this one."""
        groups: dict[int, list[int]] = {}
        for t, tgid in enumerate(self.plan.threads["tgid"].tolist()):
            groups.setdefault(tgid, []).append(t)
        self.t0 = time.perf_counter_ns()
        children = []
        local = groups.pop(self.plan.root_tgid, None)
        for members in groups.values():
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_end)
                self._threads(members)
                os.write(write_end, json.dumps([self.outcome, self.implicit_opens, self.failures]).encode())
                os._exit(0)
            os.close(write_end)
            children.append((pid, read_end))
        self._threads(local or [])
        for pid, read_end in children:
            with os.fdopen(read_end, "rb") as f:
                raw = f.read()
            os.waitpid(pid, 0)
            if not raw:
                self.failures.append(f"replay process {pid} ended without its figures")
                continue
            outcome, implicit, failures = json.loads(raw)
            for name, s in outcome.items():
                total = self.outcome.setdefault(name, [0, 0, 0])
                for k in range(3):
                    total[k] += s[k]
            self.implicit_opens += implicit
            self.failures += failures
        return self._summary()

    def _threads(self, members: list[int]) -> None:
        """The recorded process's main thread (tid = tgid) is replayed by this process's own,
        so that the replay's main thread does what the original's did (fio's layout, say)."""
        main = next((t for t in members if self.plan.threads["tid"][t] == self.plan.threads["tgid"][t]),
                    members[0] if members else None)
        workers = [threading.Thread(target=self._thread, args=(t,), daemon=True) for t in members if t != main]
        for w in workers:
            w.start()
        if main is not None:
            self._thread(main)
        for w in workers:
            w.join()

    def _thread(self, t: int) -> None:
        try:
            self._calls(t)
        except Exception as exc:   # said at the end; the other threads must not wait on this one
            self.failures.append(f"thread {t}: {type(exc).__name__}: {exc}")
        finally:
            self.progress[t] = 1 << 62

    def _calls(self, t: int) -> None:
        plan, fds = self.plan, self.fds
        first, count = int(plan.threads["first"][t]), int(plan.threads["count"][t])
        c = plan.calls[first:first + count]
        ops, files, tgids = c["op"].tolist(), c["file"].tolist(), c["tgid"].tolist()
        rfds, rets, flags = c["fd"].tolist(), c["ret"].tolist(), c["flags"].tolist()
        offsets, sizes, gaps = c["offset"].tolist(), c["size"].tolist(), c["gap_ns"].tolist()
        w = plan.waits[(plan.waits["call"] >= first) & (plan.waits["call"] < first + count)]
        waits: dict[int, list[tuple[int, int]]] = {}
        for call, u, n in zip(w["call"].tolist(), w["thread"].tolist(), w["count"].tolist()):
            waits.setdefault(call - first, []).append((u, n))
        reads = [s for o, s in zip(ops, sizes) if OPS[o] in READS]
        rbuf = _aligned(max(reads, default=0))
        raddr = ctypes.addressof(ctypes.c_char.from_buffer(rbuf))
        rview, wview = memoryview(rbuf), memoryview(self.wbuf)
        waddr = ctypes.addressof(ctypes.c_char.from_buffer(self.wbuf))
        rviews: dict[int, memoryview] = {}
        wviews: dict[int, memoryview] = {}
        direct = self.direct
        speed, progress = self.speed, self.progress
        # gaps shorter than what the player itself takes between two calls are not waited
        # for: the clock is read only around the calls that have a gap to keep
        timed = [speed > 0 and g > MIN_GAP_NS for g in gaps]
        stats = [[0, 0, 0] for _ in OPS]
        prev_end = self.t0
        for i in range(count):
            for u, n in waits.get(i, ()):
                while progress[u] < n:
                    time.sleep(WAIT_POLL_S)
            if timed[i]:
                target = prev_end + int(gaps[i] / speed)
                delay = target - time.perf_counter_ns()
                if delay > SPIN_NS:
                    time.sleep(delay / 1e9)
                else:
                    while time.perf_counter_ns() < target:
                        pass
            op, key = ops[i], (tgids[i], rfds[i])
            fd = fds.get(key) if op != OPEN else -1
            if fd is None:
                fd = self._implicit_open(key, files[i])
            size = sizes[i]
            try:
                if op in READ_OPS:
                    if fd in direct and op in (READ, PREAD64):   # os.read's buffer is not aligned
                        res = self._raw(op, fd, raddr, size, offsets[i])
                    elif op == READ:
                        res = len(os.read(fd, size))
                    elif op == PREAD64:
                        res = len(os.pread(fd, size, offsets[i]))
                    else:
                        view = rviews.get(size)
                        if view is None:
                            view = rviews[size] = rview[:size]
                        if op == READV:
                            res = os.readv(fd, [view])
                        elif op == PREADV2:
                            res = os.preadv(fd, [view], offsets[i], flags[i])
                        else:   # os.preadv is a preadv2 where the C library has it
                            res = self._vector(op, fd, raddr, size, offsets[i])
                elif op in WRITE_OPS:
                    view = wviews.get(size)
                    if view is None:
                        view = wviews[size] = wview[:size]
                    if op == WRITE:
                        res = os.write(fd, view)
                    elif op == PWRITE64:
                        res = os.pwrite(fd, view, offsets[i])
                    elif op == WRITEV:
                        res = os.writev(fd, [view])
                    elif op == PWRITEV2:
                        res = os.pwritev(fd, [view], offsets[i], flags[i])
                    else:
                        res = self._vector(op, fd, waddr, size, offsets[i])
                elif op == LSEEK:
                    res = os.lseek(fd, size, flags[i])
                elif op == OPEN:
                    res = self._open(key, files[i], flags[i])
                elif op == CLOSE:
                    os.close(fds.pop(key, fd))
                    direct.discard(fd)
                    res = 0
                elif op == FSYNC:
                    os.fsync(fd)
                    res = 0
                elif op == FDATASYNC:
                    os.fdatasync(fd)
                    res = 0
                elif op == FTRUNCATE:
                    os.ftruncate(fd, size)
                    res = 0
                elif op == FALLOCATE:   # os.posix_fallocate would emulate what the file system refuses
                    res = self._raw(op, fd, flags[i], offsets[i], size)
                elif op == FADVISE64:
                    res = self._raw(op, fd, offsets[i], size, flags[i])
                elif op == READAHEAD:
                    res = self._raw(op, fd, offsets[i], size, 0)
                else:   # dup (os.dup is an fcntl): the recorded new fd names our copy
                    res = self._raw(op, fd, 0, 0, 0)
                    if res >= 0:
                        fds[(tgids[i], rets[i])] = res
                        if fd in direct:
                            direct.add(res)
            except OSError as exc:
                res = -(exc.errno or 1)
            if timed[i + 1] if i + 1 < count else False:
                prev_end = time.perf_counter_ns()
            s = stats[op]
            s[0] += 1
            if res < 0:
                s[1] += 1
            elif op in DATA_OPS and res != rets[i]:
                s[2] += 1
            progress[t] += 1
        with self.lock:
            for op, s in enumerate(stats):
                if s[0]:
                    total = self.outcome.setdefault(OPS[op], [0, 0, 0])
                    for k in range(3):
                        total[k] += s[k]

    def _open(self, key, file: int, flags: int) -> int:
        """An open of the trace, never through a symlink."""
        try:
            fd = self._open_file(file, (flags & KEPT_FLAGS) | os.O_CLOEXEC)
        except OSError as exc:
            return -(exc.errno or 1)
        old = self.fds.pop(key, None)
        if old is not None:
            os.close(old)
            self.direct.discard(old)
        self.fds[key] = fd
        if flags & O_DIRECT:
            self.direct.add(fd)
        return fd

    def _open_file(self, file: int, flags: int) -> int:
        """The plan's file opened: an openat2 of its absolute path with RESOLVE_NO_SYMLINKS, so
        that the replay's trace names it from the call itself (a path relative to a directory
        fd is made absolute by the collector through /proc/PID/fd, too late for a replay process
        that has ended by then); an openat on its directory fd with O_NOFOLLOW when the path is
        too long for the probe or the kernel has no openat2."""
        path = self.file_abs[file]
        if path is not None and self.openat2:
            how = _OpenHow(flags & 0xFFFFFFFF, 0o644 if flags & os.O_CREAT else 0, RESOLVE_NO_SYMLINKS)
            res = self.sc(self.nr["openat2"], AT_FDCWD, ctypes.addressof(path), ctypes.addressof(how),
                          ctypes.sizeof(how), 0, 0, 0)
            if res >= 0:
                return res
            err = ctypes.get_errno()
            if err != errno.ENOSYS:
                raise OSError(err, os.strerror(err))
            self.openat2 = False
        return os.open(self.file_name[file], flags | os.O_NOFOLLOW, 0o644, dir_fd=self.file_dir[file])

    def _vector(self, op: int, fd: int, addr: int, size: int, offset: int) -> int:
        """preadv or pwritev of one buffer, as itself (not the preadv2 Python's os makes of it)."""
        iov = _Iovec(addr, size)
        res = self.sc(self.nr[OPS[op]], fd, ctypes.addressof(iov), 1, offset, 0, 0, 0)
        return res if res >= 0 else -ctypes.get_errno()

    def _raw(self, op: int, a: int, b: int, c: int, d: int) -> int:
        """The calls Python's os module cannot make as the original did, through syscall(2)."""
        res = self.sc(self.nr[OPS[op]], a, b, c, d, 0, 0, 0)
        return res if res >= 0 else -ctypes.get_errno()

    def _implicit_open(self, key, file: int) -> int:
        """A call on an fd the trace never saw opened (opened before the recording, or
        inherited): the file opened for it, once, and said in the summary."""
        for flags in (os.O_RDWR, os.O_RDONLY):
            try:
                fd = self._open_file(file, flags | os.O_CLOEXEC)
            except OSError:
                continue
            with self.lock:
                self.implicit_opens += 1
            self.fds[key] = fd
            return fd
        return -1

    def _summary(self) -> int:
        calls = sum(s[0] for s in self.outcome.values())
        failed = sum(s[1] for s in self.outcome.values())
        other = sum(s[2] for s in self.outcome.values())
        wall = (time.perf_counter_ns() - self.t0) / 1e9
        print(f"iowitness replay: {calls:,} calls in {len(self.plan.threads)} thread(s), {wall:.3f} s; "
              f"{failed:,} failed, {other:,} moved other byte counts than the original; "
              f"{self.implicit_opens} implicit open(s)")
        for name in sorted(self.outcome):
            issued, bad, diff = self.outcome[name]
            print(f"iowitness replay:   {name}: {issued:,} issued, {bad:,} failed, {diff:,} other bytes")
        sys.stdout.write(plan_notes(self.plan.skipped, [f["rel"] for f in self.plan.files],
                                    self.plan.source.get("original_paths") or []).decode("utf-8", "surrogateescape"))
        for line in self.failures:
            print(f"iowitness replay: error: {line}")
        sys.stdout.flush()
        return 1 if failed or self.failures else 0


OPEN, CLOSE, READ, WRITE, PREAD64, PWRITE64 = (OP[o] for o in ("open", "close", "read", "write", "pread64", "pwrite64"))
READV, WRITEV, PREADV2, PWRITEV2 = (OP[o] for o in ("readv", "writev", "preadv2", "pwritev2"))
LSEEK, FSYNC, FDATASYNC, FTRUNCATE, FALLOCATE = (OP[o] for o in ("lseek", "fsync", "fdatasync", "ftruncate",
                                                                   "fallocate"))
FADVISE64, READAHEAD = OP["fadvise64"], OP["readahead"]
READ_OPS = frozenset(OP[o] for o in READS)
WRITE_OPS = frozenset(OP[o] for o in WRITES)
DATA_OPS = READ_OPS | WRITE_OPS
O_DIRECT = getattr(os, "O_DIRECT", 0)
AT_FDCWD = -100


def _aligned(size: int) -> mmap.mmap:
    """A page-aligned buffer (O_DIRECT needs one): an anonymous mapping."""
    return mmap.mmap(-1, max(size, mmap.PAGESIZE))


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: python -m iowitness.replay.player PLAN DIR SPEED", file=sys.stderr)
        return 2
    plan = Plan.load(argv[1])
    player = Player(plan, argv[2], float(argv[3]))
    return player.run()


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=False)  # type: ignore[union-attr]  # a TextIOWrapper here
    code = main(sys.argv)
    sys.stdout.flush()
    os._exit(code)   # no close of the fds the original left open at its exit either
