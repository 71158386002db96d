"""The events table's first blocks kept in memory from one pass to the next, up to a budget.

    cache = block_cache.BlockCache()            # budget: IOWITNESS_BLOCK_CACHE_BYTES
    ... the first whole pass: cache.add(frame, resume) for each block it gives, cache.finish()
    for frame in cache.frames(): ...             # a later pass: the kept blocks, not decoded again
    cache.resume                                 # then where the decoding takes over (None: nowhere)

Every command reads a trace in passes (analysis/stream_events.py: the phase walk, the sums,
the percentiles' passes, the extras), and each pass decoded the file again: zstd, the byte
planes, the time-order merge, the naming of syscalls, devices and paths; about a second of
CPU per 10 M events and pass. The first whole pass now keeps the frames it gives (the same
arrays, no copy: a shallow copy of each frame, so a caller that adds a column to its block
does not add it to the kept one) until they fill the budget, and the state of the merge
after the last one kept (`resume`: the next block of the file and the records held back).
A later pass gives the kept frames, then decodes from there: a trace that fits is decoded
once; a larger one is decoded again only past the budget. The figures are the same either
way (the frames are those the decoding gives: tests/unit/test_block_cache.py holds a trace
larger than the budget to the same bytes).

Memory: at most BUDGET_BYTES (default 256 MiB: about 3 M events of the probe's records,
83 bytes each with their names and end time) on top of what a pass holds.
"""

from __future__ import annotations

import os

import pandas as pd

BUDGET_BYTES = int(os.environ.get("IOWITNESS_BLOCK_CACHE_BYTES") or 256 << 20)


def frame_bytes(frame: pd.DataFrame) -> int:
    """The bytes of a frame's columns (a categorical: its codes and categories)."""
    return int(frame.memory_usage(index=False, deep=False).sum())


def held_bytes(resume) -> int:
    """The bytes of the arrays a resume point holds (numpy arrays found in it, nested)."""
    if hasattr(resume, "nbytes"):
        return int(resume.nbytes)
    if isinstance(resume, dict):
        return sum(held_bytes(v) for v in resume.values())
    if isinstance(resume, (list, tuple)):
        return sum(held_bytes(v) for v in resume)
    return 0


class BlockCache:
    """The first frames of one whole pass, and where a later pass takes over (see the module's text)."""

    def __init__(self, budget: int | None = None):
        self.budget = BUDGET_BYTES if budget is None else budget
        self.ready = False        # a whole pass was recorded: frames() and resume hold
        self.recording = False
        self.resume = None        # after the kept frames: the decoding's state (None: all kept)
        self._frames: list = []
        self._full = False        # no more frame fits
        self._size = 0

    def start(self) -> bool:
        """Begin keeping a pass's frames (anew); False when one is being kept already or the
        budget holds nothing."""
        if self.recording or self.ready or self.budget <= 0:
            return False
        self._frames, self._full, self._size, self.resume = [], False, 0, None
        self.recording = True
        return True

    def add(self, frame: pd.DataFrame, resume) -> None:
        """Keep `frame` if it fits, with `resume`: the state to decode the frames after it from."""
        if not self.recording or self._full:
            return
        size = frame_bytes(frame)
        if self._size + size + held_bytes(resume) > self.budget:
            self._full = True
            return
        self._frames.append(frame.copy(deep=False))
        self._size += size
        self.resume = resume

    def finish(self) -> None:
        """The recorded pass reached its end: later passes read the kept frames."""
        if self.recording:
            self.recording, self.ready = False, bool(self._frames)
            if not self._full:
                self.resume = None   # every frame is kept
            if not self.ready:
                self.resume = None

    def abandon(self) -> None:
        """The pass being recorded stopped before its end: keep nothing of it."""
        self.recording = False
        self._frames, self._size, self.resume = [], 0, None

    def frames(self):
        """The kept frames, each a shallow copy (a caller's new column stays its own)."""
        for frame in self._frames:
            yield frame.copy(deep=False)

    @property
    def complete(self) -> bool:
        """Every frame of a pass is kept: nothing to decode."""
        return self.ready and self.resume is None

    def close(self) -> None:
        self.abandon()
        self.ready = False
