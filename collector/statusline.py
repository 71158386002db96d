"""The terminal the collector's status line shares with the benchmark's own output.

The status line is drawn by the collector; the benchmark's output reaches the same terminal
through the capture process (launch.py), another process. Without a word between them the
status line's "\\r, clear the line" wiped what the benchmark had printed on its current line,
and the benchmark's next line ran on from the end of the status line; dd status=progress and
fio's "Jobs: ..." line, which rewrite their own line with \\r, were overwritten every second.

Three flags in a page shared by both processes (made before the capture is forked):
- SHOWN: the status line is on screen (the collector sets it; the capture clears the line
  and the flag before it writes the benchmark's bytes to a terminal);
- OPEN_LINE: the benchmark's last bytes on a terminal did not end its line: no status line
  until it does, so that it never lands in the middle of the benchmark's line;
- PROGRESS: the benchmark rewrites its own line with \\r (a progress line): the status line
  stays off for the rest of the run, the benchmark's progress is what the user watches.

Example: `shared = Shared(); shared.wrote(b"12 MB copied\\r")` sets PROGRESS; `shared.drawable`
is then False.
"""

from __future__ import annotations

import mmap

SHOWN, OPEN_LINE, PROGRESS = range(3)
CLEAR = b"\r\x1b[K"


class Shared:
    def __init__(self):
        # anonymous and MAP_SHARED: the forked capture and the collector see the same bytes
        self._page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_SHARED)

    def _get(self, flag: int) -> bool:
        return bool(self._page[flag])

    def _set(self, flag: int, value: bool) -> None:
        self._page[flag] = 1 if value else 0

    # ---- the collector ----

    @property
    def drawable(self) -> bool:
        """The status line may be drawn now: the benchmark has no line open and no progress line."""
        return not self._get(OPEN_LINE) and not self._get(PROGRESS)

    @property
    def benchmark_progress(self) -> bool:
        return self._get(PROGRESS)

    @property
    def is_shown(self) -> bool:
        return self._get(SHOWN)

    def shown(self, value: bool) -> None:
        self._set(SHOWN, value)

    # ---- the capture ----

    def before_write(self, fd: int) -> None:
        """Clear the status line (on stderr, the same terminal) before the benchmark's bytes go to fd."""
        if self._get(SHOWN):
            self._set(SHOWN, False)
            _write(2, CLEAR)

    def wrote(self, data: bytes) -> None:
        """Note what the benchmark's bytes, just written to a terminal, leave on screen."""
        if not data:
            return
        # a \r not followed by \n rewrites the line: a progress line (\r\n is a plain line end)
        if b"\r" in data.replace(b"\r\n", b"\n"):
            self._set(PROGRESS, True)
        self._set(OPEN_LINE, not data.endswith(b"\n"))


def _write(fd: int, data: bytes) -> None:
    import os

    try:
        os.write(fd, data)
    except OSError:
        pass   # a terminal that went away: nothing to clear
