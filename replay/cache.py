"""Whether a file the trace found already there was in the page cache when the original read it.

A replay makes such a file before it starts (replay/paths.py), which leaves its pages cached;
the original may have found it cold (after a reboot, a drop_caches, another program's use), and
then read it from the disk: the replay's reads would be served from memory, and faster. The
trace says which: a read call that missed the cache sent block read requests from its own
thread while it ran (the probe's block records carry the submitting thread; readahead started
by the call is sent from it too). A file is cold when those requests, during its first reads,
brought in at least half the bytes the reads returned; the replay then drops it from the page
cache (posix_fadvise DONTNEED, after its fsync) before it starts.

Example: `cold_files(data.block, calls, threads_tid, start, end, files)` from plan.build.
"""

from __future__ import annotations

import numpy as np

FIRST_READS = 256   # the file's first reads looked at: its state when the original started
SYNC_READS = ("read", "pread64", "readv", "preadv", "preadv2")
REQ_OP_READ = 0


def cold_files(block, calls, tid, start, end, files: list[dict]) -> list[bool]:
    """Per file of the plan: True when the trace found it already there and read it from the
    disk. `tid`: each call's thread id; `start`, `end`: each call's times on the trace's clock."""
    from iowitness.replay.plan_layout import OP

    out = [False] * len(files)
    if block is None or not len(block):
        return out
    reads = block[block["op"] == REQ_OP_READ]
    if not len(reads):
        return out
    when = np.where(reads["issue_ns"] > 0, reads["issue_ns"], np.where(reads["start_ns"] > 0, reads["start_ns"],
                                                                       reads["complete_ns"])).astype(np.int64)
    by_tid = {}
    for t in np.unique(reads["tid"]):
        mine = reads["tid"] == t
        order = np.argsort(when[mine], kind="stable")
        by_tid[int(t)] = (when[mine][order], np.cumsum(reads["bytes"][mine][order].astype(np.int64)))
    is_read = np.isin(calls["op"], [OP[o] for o in SYNC_READS]) & (calls["ret"] > 0)
    for f, entry in enumerate(files):
        if not entry.get("precreate"):
            continue
        rows = np.flatnonzero(is_read & (calls["file"] == f))
        rows = rows[np.argsort(start[rows], kind="stable")][:FIRST_READS]
        asked = int(calls["ret"][rows].sum())
        brought = 0
        for r in rows:
            found = by_tid.get(int(tid[r]))
            if found is None:
                continue
            times, total = found
            a, b = np.searchsorted(times, [start[r], end[r]], side="left")
            brought += int(total[b - 1] - (total[a - 1] if a else 0)) if b > a else 0
        out[f] = asked > 0 and brought * 2 >= asked
    return out
