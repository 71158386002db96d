"""Start a benchmark held at a gate until the probe follows it, and pass its output through.

The child is forked, blocks on a pipe, and execs only after the collector has put its PID
in the probe's process set: the benchmark is traced from its first instruction. Its stdout
is a pseudo-terminal when ours is a terminal (so stdio stays line-buffered and output stays
live), a pipe otherwise; stderr is a pipe. Both are copied to our own streams as they come
and kept for the trace.
"""

from __future__ import annotations

import os
import pty
import queue
import shutil
import signal
import sys
import threading

from iowitness.errors import NotFound

STREAMS = ("stdout", "stderr")


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
    def __init__(self, argv: list[str], passthrough: bool = True):
        self.argv = argv
        self.path = resolve_command(argv)
        self.output: queue.Queue[tuple[str, bytes]] = queue.Queue()
        self.returncode: int | None = None
        self._passthrough = passthrough
        use_pty = sys.stdout.isatty()
        out_read, out_write = pty.openpty() if use_pty else os.pipe()
        err_read, err_write = os.pipe()
        gate_read, gate_write = os.pipe()
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
        os.close(out_write)
        os.close(err_write)
        os.close(gate_read)
        self._gate = gate_write
        self._pty = use_pty
        self._fds = {"stdout": out_read, "stderr": err_read}
        self._threads = []

    def release(self) -> None:
        """Let the benchmark exec, and start copying its output."""
        os.write(self._gate, b"g")
        os.close(self._gate)
        for name, fd in self._fds.items():
            t = threading.Thread(target=self._copy, args=(name, fd), daemon=True)
            t.start()
            self._threads.append(t)

    def abort(self) -> None:
        """The collector failed before release: the child exits at the gate without running."""
        os.close(self._gate)
        os.waitpid(self.pid, 0)

    def _copy(self, name: str, fd: int) -> None:
        sink = getattr(sys, name).buffer
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:  # a pty reports EIO once the child side is closed
                data = b""
            if not data:
                os.close(fd)
                return
            if self._pty and name == "stdout":
                data = data.replace(b"\r\n", b"\n")
            if self._passthrough:
                try:
                    sink.write(data)
                    sink.flush()
                except (OSError, ValueError):
                    pass
            self.output.put((name, data))

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                if self.returncode < 0:  # killed by a signal: report it the way shells do
                    self.returncode = 128 - self.returncode
        return self.returncode

    def finish_output(self, timeout: float = 5.0) -> None:
        for t in self._threads:
            t.join(timeout)

    def interrupt(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
