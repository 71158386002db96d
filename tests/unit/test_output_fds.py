"""Data calls on fd 1 and 2 are output, never data (analysis/output_fds.py), unless the
program itself put the file there after its exec. Ground truth: the call sequences a shell's
redirection and `dd of=/dev/stdout` make, written by hand."""

from __future__ import annotations

import numpy as np

from iowitness.analysis.output_fds import OutputFds
from iowitness.analysis.phases import CLOSE, OPEN, OTHER, WRITE


def _block(rows):
    """rows: (start, tgid, fd, kind, ret, is_copy)."""
    start, tgid, fd, kind, ret, copy = (np.array(col) for col in zip(*rows))
    n = len(rows)
    c = {"start": start.astype(np.int64), "tgid": tgid.astype(np.int64), "fd": fd.astype(np.int64),
         "ret": ret.astype(np.int64), "copy": copy.astype(bool), "fixed": np.zeros(n, bool),
         "on_map": np.zeros(n, bool), "fault": np.zeros(n, bool)}
    return c, kind.astype(np.int64), c["ret"] >= 0


def test_a_shell_redirection_before_exec_leaves_stdout_output():
    # GIVEN sh's child: open out.txt = 3, dup2(3, 1), close(3), exec at 50, then the benchmark writes fd 1
    c, kind, ok = _block([(10, 5, 3, OPEN, 3, False), (20, 5, 3, OTHER, 1, True), (30, 5, 3, CLOSE, 0, False),
                          (60, 5, 1, WRITE, 40, False), (70, 5, 4, WRITE, 4096, False)])
    rows = OutputFds({5: np.array([50])}).rows(c, kind, ok)
    # THEN its write to fd 1 is output; its write to fd 4 is data
    assert rows.tolist() == [False, False, False, True, False]


def test_a_file_the_program_puts_on_stdout_itself_is_data():
    # GIVEN dd after its exec (at 5): open /dev/stdout = 3, dup2(3, 1), writes to fd 1
    c, kind, ok = _block([(10, 5, 3, OPEN, 3, False), (20, 5, 3, OTHER, 1, True), (30, 5, 1, WRITE, 512, False)])
    assert OutputFds({5: np.array([5])}).rows(c, kind, ok).tolist() == [False, False, False]


def test_an_open_that_returns_fd_1_after_stdout_was_closed_is_data_until_the_next_exec():
    c, kind, ok = _block([(10, 5, 1, OPEN, 1, False), (20, 5, 1, WRITE, 512, False), (40, 5, 1, WRITE, 9, False)])
    assert OutputFds({5: np.array([0, 30])}).rows(c, kind, ok).tolist() == [False, False, True]


def test_with_no_exec_known_an_attach_takes_fd_1_and_2_as_output():
    c, kind, ok = _block([(10, 5, 1, WRITE, 40, False), (11, 5, 2, WRITE, 4, False), (12, 6, 7, WRITE, 4, False)])
    assert OutputFds({}).rows(c, kind, ok).tolist() == [True, True, False]
