"""An inode number reused by a new file (analysis/read/trace_view.py, `_paths`), on a real
trace (tests/data/traces/README.md): fs_mark -t 2's parent deletes each child's log file,
and ext4 gives its inode number to the next loop's new file. The open that creates the new
file is named after the file it opened, not the one deleted before it."""

from __future__ import annotations

import os
from pathlib import Path

from iowitness import load

TRACE = Path(__file__).resolve().parents[1] / "data" / "traces" / "fs_mark_reused_inodes.iwt"


def test_an_open_on_a_reused_inode_names_the_file_it_opened():
    # GIVEN fs_mark's trace: a parent and, per loop, two children
    trace = load(str(TRACE))
    events, parent = trace.events, int(trace.meta["pid"])
    opens = events[events["syscall"] == "openat"]
    reused = trace.files.groupby("ino")["path"].nunique()
    assert int((reused > 1).sum()) == 2   # two inode numbers named two files each

    # THEN (fs_mark.c) a child opens only its own log, fs_log.txt.<its pid>, and its data files
    # under -d; before, each child of the second loop opened its log under the name of the
    # first loop's log whose inode it reused
    for tgid, path in zip(opens["tgid"], opens["path"].astype(str)):
        if int(tgid) == parent:
            continue
        assert path.startswith("/tmp/o30/fsm/d/") or os.path.basename(path) == f"fs_log.txt.{int(tgid)}", \
            (int(tgid), path)
    # AND every open, data call and close of one process on one fd until its close names one file
    for (tgid, fd), calls in events[events["fd"] >= 0].groupby(["tgid", "fd"]):
        stretch = (calls["syscall"] == "openat").cumsum()
        assert (calls.groupby(stretch.to_numpy())["path"].nunique() <= 1).all(), (tgid, fd)
