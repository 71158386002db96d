"""Data calls on fd 1 and 2 are output, never data (analysis/phasing/output_fds.py over
printed_timeline.OwnFiles), unless the program itself opened the file after its exec. Ground
truth: the calls and facts a shell's redirection and `dd of=FILE` make, written by hand."""

from __future__ import annotations

import numpy as np

from iowitness.analysis.phasing.output_fds import OutputFds
from iowitness.analysis.phasing.phases import WRITE
from iowitness.collector.format.printed_timeline import OwnFiles
from iowitness.probes.layout import layout

KINDS = {1: "file", 2: "fork", 3: "exec"}


def _facts(rows):
    """rows: (kind, ts, tgid, fd, ino)."""
    out = np.zeros(len(rows), dtype=layout().meta)
    for i, (kind, ts, tgid, fd, ino) in enumerate(rows):
        out[i]["kind"], out[i]["ts_ns"], out[i]["tgid"], out[i]["fd"], out[i]["ino"] = kind, ts, tgid, fd, ino
    return out


def _block(rows):
    """rows: (start, tgid, fd, ino): writes."""
    start, tgid, fd, ino = (np.array(col, dtype=np.int64) for col in zip(*rows))
    n = len(rows)
    c = {"start": start, "tgid": tgid, "fd": fd, "ino_raw": ino, "ret": np.zeros(n, np.int64),
         "dev_raw": np.zeros(n, np.int64),
         "fixed": np.zeros(n, bool), "on_map": np.zeros(n, bool), "fault": np.zeros(n, bool)}
    return c, np.full(n, WRITE)


def test_a_shell_redirection_before_exec_leaves_stdout_output():
    # GIVEN sh's child opening out.txt (ino 9) at 10, exec of the benchmark at 50
    own = OwnFiles(_facts([(1, 10, 5, 3, 9), (3, 50, 5, -1, 0)]), KINDS)
    c, kind = _block([(60, 5, 1, 9), (70, 5, 4, 8)])
    # THEN its write to fd 1 is output; its write to fd 4 is data
    assert OutputFds(own).rows(c, kind).tolist() == [True, False]
    assert not own.is_data(5, 0, 9, 60)


def test_a_file_the_program_opens_itself_and_writes_through_stdout_is_data():
    # GIVEN dd after its exec at 5, opening its of= file (ino 9) at 10, writing it through fd 1
    own = OwnFiles(_facts([(3, 5, 5, -1, 0), (1, 10, 5, 1, 9)]), KINDS)
    c, kind = _block([(20, 5, 1, 9), (30, 5, 2, 7)])
    assert OutputFds(own).rows(c, kind).tolist() == [False, True]


def test_an_attach_takes_the_files_open_before_it_as_output():
    # GIVEN out.txt registered at the attach (a file fact with fd -1), no exec seen
    own = OwnFiles(_facts([(1, 10, 5, -1, 9)]), KINDS)
    c, kind = _block([(20, 5, 1, 9), (21, 5, 2, 9)])
    assert OutputFds(own).rows(c, kind).tolist() == [True, True]
