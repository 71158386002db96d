"""Stop a launched benchmark the way a Ctrl-C would, and make sure it stops.

`run` stops its benchmark when the recording ends before the benchmark does (--duration, a
signal to iowitness, a fault with --on-fault stop). A Ctrl-C at a terminal sends SIGINT to
the whole foreground process group, so the benchmark and every process it started get it;
here the benchmark shares our group, so the same SIGINT goes to it and its descendants one by
one. Most benchmarks end on it and still print what they measured (fio, dd, IOzone do). One
that ignores it (or hangs) gets SIGKILL after GRACE_S seconds, and the words say so.

Every process is held by a pidfd from the moment it is signalled: a PID that is reused after
the process exits can never be signalled by mistake.
"""

from __future__ import annotations

import os
import select
import signal
import time

from iowitness.collector.processes import descendants

GRACE_S = 5.0   # from SIGINT to SIGKILL: fio, dd and IOzone print their results well within it
# scans of the tree after signalling it, for children forked meanwhile, and the pause between
FORK_RACE_SCANS = 4
FORK_RACE_PAUSE_S = 0.01


def _exited(pidfd: int) -> bool:
    """A pidfd polls readable once its process has exited (a zombie counts)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(0))


class ProcessTree:
    """The benchmark (held by a pidfd its launcher opened before it could exit) and the
    descendants it has when it is signalled."""

    def __init__(self, pid: int, pidfd: int):
        self.pid = pid
        self.pidfd = pidfd
        # pid -> pidfd, kept open for the life of the process: a tree is stopped once, at its end
        self._held = {pid: pidfd}

    def signal(self, signum: int) -> None:
        """signum to the benchmark and every descendant, those found now included. A terminal
        signals a whole process group at once; a tree is signalled process by process, so a
        child forked between the scan and the signals would miss it (a shell script's `sleep`:
        the shell, told to stop while it waits, waits for the child, sees that it did not die
        of SIGINT and goes on). The tree is scanned again, a moment later, until a scan finds no
        one new."""
        targets = list(self._held.values())
        for scan in range(FORK_RACE_SCANS):
            found = []
            if not _exited(self._held[self.pid]):
                for pid in descendants({self.pid}) - set(self._held):
                    try:
                        self._held[pid] = os.pidfd_open(pid)
                    except OSError:
                        continue   # gone already
                    found.append(self._held[pid])
            for pidfd in targets + found:
                try:
                    signal.pidfd_send_signal(pidfd, signum)
                except OSError:
                    pass   # exited (ESRCH) since
            if scan and not found:
                return
            targets = []
            time.sleep(FORK_RACE_PAUSE_S)

    def alive(self) -> bool:
        return any(not _exited(pidfd) for pidfd in self._held.values())


class Stopping:
    """SIGINT now, SIGKILL at the deadline if anything of the tree still runs; the caller waits
    as it likes in between (the collector keeps tracing, the output capture keeps copying)."""

    def __init__(self, tree: ProcessTree, grace: float = GRACE_S):
        self.tree, self.grace = tree, grace
        self.deadline = time.monotonic() + grace
        self.killed = False
        tree.signal(signal.SIGINT)

    def done(self) -> bool:
        return not self.tree.alive()

    def left(self) -> float:
        """Seconds until the deadline (0 when it has passed)."""
        return max(0.0, self.deadline - time.monotonic())

    def escalate(self) -> bool:
        """SIGKILL to what still runs, once the grace period is over; True when it was needed."""
        if self.killed or self.left() > 0 or self.done():
            return False
        self.tree.signal(signal.SIGKILL)
        self.killed = True
        return True

    def outcome(self) -> str:
        """What happened to the benchmark, in words for the user."""
        if self.killed:
            return (f"the benchmark (PID {self.tree.pid}) did not stop within {self.grace:g} s of SIGINT "
                    "and was killed with SIGKILL")
        return f"the benchmark (PID {self.tree.pid}) was stopped with SIGINT"


def stop(tree: ProcessTree, wait, grace: float = GRACE_S) -> Stopping:
    """Stop the tree, calling wait(seconds) until it is gone or SIGKILLed (and gone)."""
    stopping = Stopping(tree, grace)
    while not stopping.done():
        if stopping.escalate():
            continue
        if stopping.killed and stopping.left() == 0 and time.monotonic() > stopping.deadline + grace:
            break   # SIGKILLed and still there: a process in uninterruptible sleep; do not hang
        wait(min(0.05, stopping.left()) or 0.05)
    return stopping
