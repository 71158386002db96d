"""Data calls on fd 1 and 2 are output, never data (analysis/phasing/output_fds.py over
printed_timeline.OwnFiles), unless the program itself opened the file after its exec. Ground
truth: the calls and facts a shell's redirection and `dd of=FILE` make, written by hand."""

from __future__ import annotations

import os

import numpy as np

from iowitness.analysis.phasing.output_fds import OutputFds
from iowitness.analysis.phasing.phases import WRITE
from iowitness.analysis.report import output_opened_before
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


def _registered(tgid: int, ino: int, path: str):
    """A file registered at an attach (fd -1) by `tgid`, named `path`."""
    facts = _facts([(1, 10, tgid, -1, ino)])
    raw = path.encode()
    facts[0]["path"][:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return facts


def test_a_file_on_stdout_before_an_attach_that_the_command_line_names_is_data():
    # GIVEN dd attached after it opened of=dd.bin (relative, in /w) as its fd 1: /proc showed
    # /w/dd.bin on fd 1 at the attach, and the collector registered it
    facts = _registered(5, 9, "/w/dd.bin")
    meta = {"mode": "attach", "attached": [{"pid": 5, "comm": "dd", "cwd": "/w", "output_files": {"1": "/w/dd.bin"},
                                            "cmdline": ["dd", "if=/dev/zero", "of=dd.bin", "bs=1M"]}]}
    c, kind = _block([(20, 5, 1, 9), (30, 5, 2, 7)])
    # THEN its writes through fd 1 are data; its stderr stays output
    assert OutputFds(OwnFiles(facts, KINDS, meta)).rows(c, kind).tolist() == [False, True]
    # AND a shell's `> dd.out` (a name the program's argv does not hold) stays output, as does
    # a named file on the fd of a process that exec'd after the attach (its fds came before)
    redirected = {**meta, "attached": [{**meta["attached"][0], "cmdline": ["dd", "if=/dev/zero", "bs=1M"]}]}
    assert OutputFds(OwnFiles(facts, KINDS, redirected)).rows(c, kind).tolist() == [True, True]
    execd = {**meta, "command_exec": {"pid": 5, "path": "/bin/dd", "ts_ns": 15}}
    assert OutputFds(OwnFiles(facts, KINDS, execd)).rows(c, kind).tolist() == [True, True]


def test_a_file_on_stdout_before_an_attach_opened_as_no_shell_opens_output_is_data():
    # GIVEN a program attached after it put an unnamed file on its fd 1 itself (closed stdout,
    # then opened /w/data.bin): /proc's fdinfo showed its open flags at the attach
    facts = _registered(5, 9, "/w/data.bin")
    base = {"pid": 5, "comm": "bench", "cwd": "/w", "output_files": {"1": "/w/data.bin"}, "cmdline": ["bench"]}
    c, kind = _block([(20, 5, 1, 9), (30, 5, 2, 7)])

    def rows(flags):
        meta = {"mode": "attach", "attached": [{**base, "output_flags": {"1": flags}}]}
        return OutputFds(OwnFiles(facts, KINDS, meta)).rows(c, kind).tolist()
    # THEN open for reading and writing, or O_DIRECT, O_SYNC or O_DSYNC (no shell's > or >>
    # opens its output so): its writes through fd 1 are data, its stderr stays output
    for flags in (os.O_RDWR, os.O_WRONLY | os.O_DIRECT, os.O_WRONLY | os.O_SYNC, os.O_WRONLY | os.O_DSYNC):
        assert rows(flags | 0o100000) == [False, True], oct(flags)
    # AND write-only, or write-only with O_APPEND (a shell's `>` and `>>`): output, as before
    for flags in (os.O_WRONLY, os.O_WRONLY | os.O_APPEND):
        assert rows(flags | 0o100000) == [True, True], oct(flags)
    # AND the report's line says why
    meta = {"mode": "attach", "attached": [{**base, "output_flags": {"1": os.O_RDWR | os.O_DIRECT}}]}
    assert output_opened_before(meta) == (
        "fd 1 of bench (PID 5) was open on /w/data.bin before the attach, opened for reading and writing, "
        "with O_DIRECT, as no shell's > or >> opens its output: its writes there are taken for data, not output; "
        "a shell's `> file` of the same name would be output")
