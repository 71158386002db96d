"""Blocks of an in-memory trace, as analysis/phasing/stream_assign.py gives them to the streamed
report: the tests of every streamed piece cut a table into blocks of 1, 37 and 1000 rows, so
that every per-phase, per-thread and per-file state crosses block boundaries."""

from __future__ import annotations

import pandas as pd

BLOCKS = (1, 37, 1000)


def cutting(sizes, rows: int) -> tuple[int, ...]:
    """The block sizes of `sizes` that cut a table of `rows` rows into more than one block. A size
    of `rows` or more gives the table as one block, which is the one-block reference the test
    compares with: the same computation twice, so it is left out (the smallest size is kept when
    none cuts, and for an empty table, whose blocks are none at all)."""
    cut = tuple(size for size in sizes if size < rows)
    return cut or tuple(sorted(sizes)[:1])


class Blocks:
    """(events, assigned) sliced with .iloc: what stream_assign gives, for the test."""

    def __init__(self, events: pd.DataFrame, assigned: pd.DataFrame, rows: int):
        self.events, self.assigned, self.rows = events, assigned, rows

    def blocks(self):
        for at in range(0, len(self.events), self.rows):
            yield self.events.iloc[at:at + self.rows], self.assigned.iloc[at:at + self.rows]


def assigned_of(report) -> pd.DataFrame:
    """Each event's span, phase, operation, warm-up and fill, as one table: the report's blocks
    (what stream_assign gives) put together, for a test that looks at every event."""
    parts = [a for _, a in report.event_blocks()]
    return pd.concat(parts) if len(parts) > 1 else parts[0]


def calls_of(report, events: pd.DataFrame):
    """report.Calls over every event of `report`'s trace (`events`: its events table)."""
    from iowitness.analysis.report import Calls

    return Calls(events, assigned_of(report))
