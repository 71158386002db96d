"""What a recording sleeps on between drains: data to read, or a watched process exiting.

Both backends (the compiled probe's rings, bpftrace's pipe) sleep in one epoll set that
also holds a pidfd per process whose exit must end the wait at once, instead of at the next
periodic check.
"""

from __future__ import annotations

import os
import select


class Wakeups:
    def __init__(self):
        self._epoll = select.epoll()
        self._exit_fds: set[int] = set()

    def on_readable(self, fd: int) -> None:
        self._epoll.register(fd, select.EPOLLIN)

    def on_exit(self, pid: int) -> None:
        """Let wait() return as soon as this process exits."""
        try:
            fd = os.pidfd_open(pid)
        except (OSError, AttributeError):
            return   # gone already, or no pidfd (Linux < 5.3): the periodic check still sees it
        self._exit_fds.add(fd)
        self._epoll.register(fd, select.EPOLLIN)

    def wait(self, timeout: float) -> bool:
        """Sleep until an fd is readable, a watched process exits, or the timeout passes.
        True when a process exited."""
        exited = False
        for fd, _ in self._epoll.poll(timeout):
            if fd in self._exit_fds:
                # readable for good once the process is gone: woken once, then forgotten
                self._epoll.unregister(fd)
                self._exit_fds.discard(fd)
                os.close(fd)
                exited = True
        return exited

    def close(self) -> None:
        self._epoll.close()
        for fd in self._exit_fds:
            os.close(fd)
        self._exit_fds.clear()
