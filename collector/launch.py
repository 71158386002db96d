"""Start a benchmark held at a gate until the probe follows it, and pass its output through.

The child is forked, blocks on a pipe, and execs only after the collector has put its PID
in the probe's process set: the benchmark is traced from its first instruction. Its stdout
is a pseudo-terminal when ours is a terminal (so stdio stays line-buffered and output stays
live), a pipe otherwise; stderr is a pipe.

Both are read by a capture process of their own, not by the collector: it copies them to our
own streams as they come and appends them to the trace as OUTPUT chunks. It outlives the
collector, so a collector that is killed or crashes loses none of the benchmark's output (to
the user and to the trace), and the benchmark never writes into a dead pipe. The capture is
also the benchmark's watchdog: when the collector ends without saying it has dealt with the
benchmark (Launched.let_go), the capture does what --on-fault says: stop it (stopping.py) or
let it run on. When our own stdout is a pipe that its reader closes, the capture closes the
benchmark's: the benchmark gets SIGPIPE, as it would have without us.
"""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import sys
import time

from iowitness.collector import statusline, stopping
from iowitness.collector.format.traceformat import OUTPUT, STREAMS
from iowitness.collector.format.tracewriter import append_chunk
from iowitness.errors import NotFound, UsageError

LET_GO = b"e"   # on the lifeline: the collector has dealt with the benchmark (Launched.let_go)
# after the benchmark exits, how long processes it left running may hold its output without a
# traced call before the trace ends without them (Launched.finish_output)
FOLLOW_IDLE_S = 5.0


def resolve_command(argv: list[str]) -> str:
    if not argv:
        raise UsageError("no command given; put it after --, e.g. iowitness run -- dd if=/dev/zero of=f bs=1M count=10")
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
    """The benchmark, held at its gate until release(), and its output capture.

    on_fault: what the capture does with the benchmark if the collector dies without saying
    goodbye (SIGKILL, a crash): "stop" (stopping.py: SIGINT to its process tree, SIGKILL after
    a grace period) or "continue" (it runs on untraced; its output still reaches the user and
    the trace)."""

    def __init__(self, argv: list[str], trace_fd: int | None = None, on_fault: str = "stop"):
        """trace_fd: the trace, opened O_APPEND; the capture appends to this open file, never
        reopens it by name (the name could be swapped for a link meanwhile)."""
        self.argv = argv
        self.path = resolve_command(argv)
        self.returncode: int | None = None
        # the terminal the collector's status line shares with the benchmark's output (statusline.py)
        self.terminal = statusline.Shared()
        use_pty = sys.stdout.isatty()
        out_read, out_write = pty.openpty() if use_pty else os.pipe()
        err_read, err_write = os.pipe()
        gate_read, gate_write = os.pipe()
        # no SIGINT or SIGTERM between the forks and the children's own dispositions: a Ctrl-C
        # while the probe loads would otherwise raise KeyboardInterrupt inside a child; the
        # benchmark gets anything still pending once its own dispositions are set
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            self.pid = os.fork()
            if self.pid == 0:  # the child: wait at the gate, then become the benchmark
                _become_benchmark(self.path, argv, gate_read, gate_write, out_write, err_write,
                                  (out_read, err_read), mask)
            # opened before the benchmark can exit: the capture and stopping.py signal this
            # process and no other, whatever becomes of its PID
            self.tree = stopping.ProcessTree(self.pid, os.pidfd_open(self.pid))
            lifeline_read, self._lifeline = os.pipe()
            self.capture_pid = os.fork()
            if self.capture_pid == 0:  # the capture: copy the benchmark's output until it closes it
                try:
                    # only the output ends: an inherited fd would outlive the collector's close of it
                    # (a BPF statistics fd kept open here would keep the kernel timing every program run)
                    _close_all_but({0, 1, 2, out_read, err_read, lifeline_read, self.tree.pidfd}
                                   | ({trace_fd} if trace_fd is not None else set()))
                    # a Ctrl-C is for the benchmark and the collector; the capture ends with the output
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                    watchdog = _Watchdog(lifeline_read, self.tree, on_fault)
                    _capture({out_read: "stdout", err_read: "stderr"}, trace_fd, use_pty, watchdog,
                             self.terminal)
                except BaseException as exc:  # noqa: BLE001 - a child must never return into the parent's code
                    os.write(2, f"iowitness: the output capture stopped: {exc!r}\n".encode())
                os._exit(0)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for fd in (out_read, out_write, err_read, err_write, gate_read, lifeline_read):
            os.close(fd)
        self._gate = gate_write

    def release(self) -> None:
        """Let the benchmark exec."""
        os.write(self._gate, b"g")
        os.close(self._gate)

    def abort(self) -> None:
        """The collector failed before release: the child exits at the gate without running."""
        self.let_go()
        os.close(self._gate)
        os.waitpid(self.pid, 0)
        self.finish_output()

    def let_go(self) -> None:
        """Tell the capture that the collector has dealt with the benchmark (it ended, was
        stopped, or is left running on purpose): the collector's exit is then no fault."""
        if self._lifeline is not None:
            try:
                os.write(self._lifeline, LET_GO)
            except BrokenPipeError:
                pass   # the capture has ended already: it watches nothing any more
            os.close(self._lifeline)
            self._lifeline = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                if self.returncode < 0:  # killed by a signal: report it the way shells do
                    self.returncode = 128 - self.returncode
        return self.returncode

    def finish_output(self, timeout: float = FOLLOW_IDLE_S, meanwhile=time.sleep) -> bool:
        """Wait until the capture has copied all output (the benchmark and anything it left
        running closed their ends); False when it is still copying after `timeout` seconds in
        which nothing happened. meanwhile(s) is called between checks: the collector drains the
        probe's rings, which a process the benchmark left running keeps filling, and returns
        true when it traced a call: a process left running that still works (a shell's `fio
        ... &` on a busy machine, many seconds after the shell) is followed to its end; one that
        holds the output and does nothing (a daemon) ends the wait `timeout` s after its last call."""
        deadline = time.monotonic() + timeout
        while self.capture_pid:
            pid, _ = os.waitpid(self.capture_pid, os.WNOHANG)
            if pid:
                self.capture_pid = 0
            elif time.monotonic() >= deadline:
                return False
            elif meanwhile(0.01):
                deadline = time.monotonic() + timeout
        return True

    def stop(self, wait) -> stopping.Stopping:
        """SIGINT to the benchmark and its descendants, SIGKILL after stopping.GRACE_S; wait(s)
        is called in between (the collector traces the benchmark's last calls meanwhile)."""
        return stopping.stop(self.tree, wait)


def _become_benchmark(path, argv, gate_read, gate_write, out_write, err_write, readers, mask) -> None:
    """In the forked child: wait for the gate, then exec the benchmark. Never returns."""
    try:
        os.close(gate_write)
        go = os.read(gate_read, 1)
        if go != b"g":
            os._exit(126)
        os.dup2(out_write, 1)
        os.dup2(err_write, 2)
        for fd in (*readers, out_write, err_write, gate_read):
            os.close(fd)
        _restore_signals()
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.execv(path, argv)
    except BaseException as exc:  # noqa: BLE001 - a child must never return into the parent's code
        os.write(2, f"iowitness: cannot start {argv[0]}: {exc}\n".encode())
    os._exit(127)


def _close_all_but(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass   # the directory's own fd, closed by now


def _capture(sources: dict[int, str], trace: int | None, pty_stdout: bool, watchdog: _Watchdog,
             terminal: statusline.Shared | None = None) -> None:
    """The capture process's loop: each read goes to our stream of the same name and, as an
    OUTPUT chunk, to the trace (appended whole, next to the collector's own chunks). It ends
    when the output is closed and the watchdog has nothing left to watch."""
    sinks = {"stdout": 1, "stderr": 2}
    ttys = {fd for fd in sinks.values() if os.isatty(fd)} if terminal is not None else set()
    poller = select.poll()
    for fd in (*sources, *watchdog.fds):
        poller.register(fd, select.POLLIN)
    while sources or watchdog.active:
        for fd, _ in poller.poll(watchdog.timeout_ms()):
            if fd in watchdog.fds:
                watchdog.ready(fd, poller)
                continue
            name = sources.get(fd)
            if name is None:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:  # a pty reports EIO once the child side is closed
                data = b""
            if data and pty_stdout and name == "stdout":
                data = data.replace(b"\r\n", b"\n")
            on_tty = data and sinks[name] in ttys
            if on_tty:
                terminal.before_write(sinks[name])
            if data and not _write_to(sinks[name], data):
                data = b""   # our reader is gone: close the benchmark's end, it gets SIGPIPE
            if on_tty:
                terminal.wrote(data)
            if data and trace is not None:
                try:
                    append_chunk(trace, OUTPUT, bytes([STREAMS[name]]) + data)
                except OSError:
                    trace = None
            if not data:
                poller.unregister(fd)
                os.close(fd)
                del sources[fd]
        watchdog.tick()


class _Watchdog:
    """In the capture: what becomes of the benchmark when the collector ends without let_go()
    (SIGKILL, a crash). It watches the lifeline (its pipe from the collector, which only the
    collector's end closes) and the benchmark's pidfd; either ends the watch when all is well."""

    def __init__(self, lifeline: int, tree: stopping.ProcessTree, on_fault: str):
        self.lifeline, self.tree, self.on_fault = lifeline, tree, on_fault
        self.fds = {lifeline, tree.pidfd}
        self.stopping: stopping.Stopping | None = None

    @property
    def active(self) -> bool:
        if self.stopping is not None:
            return not (self.stopping.killed or self.stopping.done())
        return bool(self.fds)

    def timeout_ms(self) -> int | None:
        """How long the capture may sleep: a short while when stopping (the tree is looked at
        for its end, and for the SIGKILL deadline), else until an fd is ready."""
        return None if self.stopping is None or not self.active else 100

    def ready(self, fd: int, poller) -> None:
        if fd == self.lifeline:
            said = os.read(self.lifeline, 1)
            self._unwatch(self.lifeline, poller)
            if said == LET_GO:
                self._unwatch(self.tree.pidfd, poller)
            else:
                self._collector_died(poller)
        else:   # the benchmark exited: nothing left to do for it
            self._unwatch(self.lifeline, poller)
            self._unwatch(self.tree.pidfd, poller)

    def tick(self) -> None:
        if self.stopping is not None and self.stopping.escalate():
            _say(f"{self.stopping.outcome()} (--on-fault stop)")

    def _collector_died(self, poller) -> None:
        if not self.tree.alive():   # it ended as the collector did: nothing to say or do
            self._unwatch(self.tree.pidfd, poller)
            return
        what = ("the collector ended without closing the trace (killed or crashed); the trace is readable "
                "up to its last flush")
        if self.on_fault == "continue":
            _say(f"{what}; the benchmark (PID {self.tree.pid}) runs on untraced (--on-fault continue), "
                 "its output still reaches you and the trace")
            self._unwatch(self.tree.pidfd, poller)
            return
        _say(f"{what}; stopping the benchmark (PID {self.tree.pid}) with SIGINT, SIGKILL after "
             f"{stopping.GRACE_S:g} s (--on-fault stop)")
        self.stopping = stopping.Stopping(self.tree)

    def _unwatch(self, fd: int, poller) -> None:
        if fd in self.fds:
            self.fds.discard(fd)
            poller.unregister(fd)


def _say(line: str) -> None:
    os.write(2, f"iowitness: {line}\n".encode())


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
