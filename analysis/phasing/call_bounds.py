"""The calls around a stretch of one thread's calls: the end of the thread's last call before
it and the start of its first call after it. A benchmark that reads its clock between its own
calls (IOzone: `starttime2 = time_so_far()` after the lseek or open before its loop, the clock
read again before the fsync or close after it) timed a window that holds the stretch and lies
between those two: the stretch is the least it timed, the gap between the calls around it the
most. So a phase too short to time on its own calls (IOzone -a, record = file size: one call
of 44 µs) is still bounded (analysis/benchmarks/iozone_bounds.py judges it so).

Answered block by block: each block gives, per question, its latest end before and earliest
start after; the answers over blocks are their max and min.

Example: `neighbours(events, [tid], [first_ns], [last_end_ns])` gives ([end of the lseek
before], ["lseek"], [start of the fsync after], ["fsync"]).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

NONE_BEFORE = np.iinfo(np.int64).min
NONE_AFTER = np.iinfo(np.int64).max


def neighbours(events: pd.DataFrame, tids, firsts, lasts) -> tuple[np.ndarray, list, np.ndarray, list]:
    """Per question i: (end of tid[i]'s last call starting before firsts[i], its name, start of
    its first call starting at lasts[i] or later, its name); NONE_BEFORE / NONE_AFTER and None where
    the block has none. Calls of one thread do not overlap: the last to start before is the
    last to end before."""
    tids, firsts, lasts = (np.asarray(x, np.int64) for x in (tids, firsts, lasts))
    before = np.full(len(tids), NONE_BEFORE, np.int64)
    after = np.full(len(tids), NONE_AFTER, np.int64)
    before_name: list = [None] * len(tids)
    after_name: list = [None] * len(tids)
    if not len(events) or not len(tids):
        return before, before_name, after, after_name
    tid = events["tid"].to_numpy(np.int64)
    start, end = events["start_ns"].to_numpy(np.int64), events["end_ns"].to_numpy(np.int64)
    before_row, after_row = np.full(len(tids), -1, np.int64), np.full(len(tids), -1, np.int64)
    for t in np.unique(tids):
        rows = np.flatnonzero(tid == t)
        if not len(rows):
            continue
        rows = rows[np.argsort(start[rows], kind="stable")]
        s = start[rows]
        asked = np.flatnonzero(tids == t)
        at = np.searchsorted(s, firsts[asked], side="left") - 1
        for q, i in zip(asked, at):
            if i >= 0:
                before[q], before_row[q] = end[rows[i]], rows[i]
        at = np.searchsorted(s, lasts[asked], side="left")   # starting at its end or later
        for q, i in zip(asked, at):
            if i < len(rows):
                after[q], after_row[q] = s[i], rows[i]
    # the names of the calls found, as text: of those rows alone (not of the block's every call)
    for row_of, name_of in ((before_row, before_name), (after_row, after_name)):
        found = np.flatnonzero(row_of >= 0)
        for q, name in zip(found.tolist(), events["syscall"].iloc[row_of[found]].astype(str).to_numpy()):
            name_of[q] = name
    return before, before_name, after, after_name


def combine(answers) -> tuple[np.ndarray, list, np.ndarray, list]:
    """The answers of every block as one: the latest before, the earliest after."""
    answers = list(answers)
    before, before_name, after, after_name = answers[0]
    before, after = before.copy(), after.copy()
    before_name, after_name = list(before_name), list(after_name)
    for b, bn, a, an in answers[1:]:
        later, earlier = b > before, a < after
        before[later], after[earlier] = b[later], a[earlier]
        for q in np.flatnonzero(later):
            before_name[q] = bn[q]
        for q in np.flatnonzero(earlier):
            after_name[q] = an[q]
    return before, before_name, after, after_name
