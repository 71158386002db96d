"""Start a benchmark held at a gate until the probe follows it, and pass its output through.

The child is forked, blocks on a pipe, and execs only after the collector has put its PID
in the probe's process set: the benchmark is traced from its first instruction. Its stdout
is a pseudo-terminal when ours is a terminal (so stdio stays line-buffered and output stays
live), a pipe otherwise; stderr is a pipe.

Both are read by a capture process of their own, not by the collector: it copies them to our
own streams as they come and appends them to the trace as OUTPUT chunks. It outlives the
collector, so a collector that is killed loses neither the benchmark's output (to the user
and to the trace) nor the benchmark (which would otherwise write into a dead pipe). When our
own stdout is a pipe that its reader closes, the capture closes the benchmark's: the
benchmark gets SIGPIPE, as it would have without us.
"""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import sys
import time

from iowitness.collector.traceformat import OUTPUT, STREAMS
from iowitness.collector.tracewriter import append_chunk
from iowitness.errors import NotFound



def resolve_command(argv: list[str]) -> str:
    if not argv:
        raise NotFound("no command given; put it after --, e.g. iowitness run -- dd if=/dev/zero of=f bs=1M count=10")
    exe = argv[0]
    path = exe if "/" in exe else shutil.which(exe)
    if not path or not os.path.isfile(path):
        raise NotFound(f"command not found: {exe}; check the name or give its full path")
    if not os.access(path, os.X_OK):
        raise NotFound(f"command is not executable: {path}")
    return path


def _restore_signals() -> None:
    """Give the benchmark the signal dispositions it would have had without us.

    Python ignores SIGPIPE and SIGXFSZ from its start (a closed pipe or a file-size limit then
    gives EPIPE/EFBIG instead of the signal): `yes | head -1` would exit 1 with "Broken pipe"
    instead of dying of SIGPIPE (141). It also puts its own handlers on SIGINT (and iowitness
    on SIGTERM); a disposition the user gave us (an ignored SIGINT under nohup or in a
    background job) is not Python's and passes through, as a shell would pass it.
    """
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    for sig in (signal.SIGINT, signal.SIGTERM):
        if callable(signal.getsignal(sig)):
            signal.signal(sig, signal.SIG_DFL)


class Launched:
    def __init__(self, argv: list[str], trace_fd: int | None = None):
        """trace_fd: the trace, opened O_APPEND; the capture appends to this open file, never
        reopens it by name (the name could be swapped for a link meanwhile)."""
        self.argv = argv
        self.path = resolve_command(argv)
        self.returncode: int | None = None
        use_pty = sys.stdout.isatty()
        out_read, out_write = pty.openpty() if use_pty else os.pipe()
        err_read, err_write = os.pipe()
        gate_read, gate_write = os.pipe()
        self.capture_pid = os.fork()
        if self.capture_pid == 0:  # the capture: copy the benchmark's output until it closes it
            try:
                # only the output ends: an inherited fd would outlive the collector's close of it
                # (a BPF statistics fd kept open here would keep the kernel timing every program run)
                _close_all_but({0, 1, 2, out_read, err_read} | ({trace_fd} if trace_fd is not None else set()))
                # a Ctrl-C is for the benchmark and the collector; the capture ends with the output
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                _capture({out_read: "stdout", err_read: "stderr"}, trace_fd, use_pty)
            except BaseException as exc:  # noqa: BLE001 - a child must never return into the parent's code
                os.write(2, f"iowitness: the output capture stopped: {exc!r}\n".encode())
            os._exit(0)
        self.pid = os.fork()
        if self.pid == 0:  # the child: wait at the gate, then become the benchmark
            try:
                os.close(gate_write)
                go = os.read(gate_read, 1)
                if go != b"g":
                    os._exit(126)
                os.dup2(out_write, 1)
                os.dup2(err_write, 2)
                for fd in (out_read, out_write, err_read, err_write, gate_read):
                    os.close(fd)
                _restore_signals()
                os.execv(self.path, argv)
            except BaseException as exc:  # noqa: BLE001 - a child must never return into the parent's code
                os.write(2, f"iowitness: cannot start {argv[0]}: {exc}\n".encode())
            os._exit(127)
        for fd in (out_read, out_write, err_read, err_write, gate_read):
            os.close(fd)
        self._gate = gate_write

    def release(self) -> None:
        """Let the benchmark exec."""
        os.write(self._gate, b"g")
        os.close(self._gate)

    def abort(self) -> None:
        """The collector failed before release: the child exits at the gate without running."""
        os.close(self._gate)
        os.waitpid(self.pid, 0)
        self.finish_output()

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                if self.returncode < 0:  # killed by a signal: report it the way shells do
                    self.returncode = 128 - self.returncode
        return self.returncode

    def finish_output(self, timeout: float = 5.0) -> bool:
        """Wait until the capture has copied all output (the benchmark and anything it left
        running closed their ends); False when it is still copying after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.capture_pid:
            pid, _ = os.waitpid(self.capture_pid, os.WNOHANG)
            if pid:
                self.capture_pid = 0
            elif time.monotonic() >= deadline:
                return False
            else:
                time.sleep(0.01)
        return True

    def interrupt(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGINT)
            except ProcessLookupError:
                pass


def _close_all_but(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass   # the directory's own fd, closed by now


def _capture(sources: dict[int, str], trace: int | None, pty_stdout: bool) -> None:
    """The capture process's loop: each read goes to our stream of the same name and, as an
    OUTPUT chunk, to the trace (appended whole, next to the collector's own chunks)."""
    sinks = {"stdout": 1, "stderr": 2}
    poller = select.poll()
    for fd in sources:
        poller.register(fd, select.POLLIN)
    while sources:
        for fd, _ in poller.poll():
            name = sources.get(fd)
            if name is None:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:  # a pty reports EIO once the child side is closed
                data = b""
            if data and pty_stdout and name == "stdout":
                data = data.replace(b"\r\n", b"\n")
            if data and not _write_to(sinks[name], data):
                data = b""   # our reader is gone: close the benchmark's end, it gets SIGPIPE
            if data and trace is not None:
                try:
                    append_chunk(trace, OUTPUT, bytes([STREAMS[name]]) + data)
                except OSError:
                    trace = None
            if not data:
                poller.unregister(fd)
                os.close(fd)
                del sources[fd]


def _write_to(fd: int, data: bytes) -> bool:
    """Write all of data; False when the reader of fd has gone (EPIPE)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BrokenPipeError:
            return False
        except OSError:
            return True   # a terminal that went away: the trace still gets the output
    return True
