"""`show --events` block by block (analysis/read/event_lines.py `streamed`) against the lines of the
loaded trace (event_lines.select and lines over `load(path)`, what `show --events` printed
before it streamed): the same bytes, with every filter and their combinations, in blocks of 1,
37 and 1,000 rows, on traces written by the collector's own TraceWriter in chunks of 1 to 9
records, in the order a ring buffer receives them (by the end of each call), so that a long
call's record comes thousands of rows after calls that started later."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from iowitness import cli
from iowitness.analysis.read import event_lines, run
from iowitness.analysis.read.run import load
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.errors import BadTrace, UsageError
from iowitness.probes.layout import layout
from tests.support import trace_mutants
from tests.support.bench import script
from tests.support.blocks import BLOCKS
from tests.support.cli import IOWITNESS, iowitness
from tests.support.hostile import (
    HOSTILE,
    HOSTILE_BYTES,
    no_raw_controls,
    write_hostile_trace,
)
from tests.support.synthetic import (
    DEV,
    EIO,
    O_CREAT,
    O_RDONLY,
    O_WRONLY,
    SEEK_END,
    Calls,
    event_records,
)

T0 = 1_000_000_000
HOSTILE_FILE = "/data/" + HOSTILE
# each filter alone, several values of one, and all of them together (phase numbers as report gives them)
FILTERS = [{}, {"phases": [1]}, {"phases": [2, 4]}, {"syscalls": ["pread64", "lseek"]},
           {"files": ["/data/a"]}, {"files": [HOSTILE.rsplit("/", 1)[-1]]}, {"pids": [201]}, {"pids": [300, 100]},
           {"phases": [2, 3], "syscalls": ["pread64", "read"], "pids": [200, 201], "files": [HOSTILE_FILE]}]


def _text(value: bytes, size: int) -> np.ndarray:
    out = np.zeros(size, np.uint8)
    out[:min(len(value), size - 1)] = np.frombuffer(value[:size - 1], np.uint8)
    return out


def write_busy_trace(path: Path, *, clock: bool = True, seed: int = 0) -> None:
    """Three processes over 1,812 calls. 100 writes /data/a, fsyncs it, reads it back (a
    failed read among them); 200, forked by 100 and exec'd under a hostile name halfway, preads
    a file with a hostile name from two threads (a short read, an fsync of 1 s whose record
    comes after everything else); 300 writes a file no fact names (calls without a path) and
    seeks to its end. Records by their end, in chunks of 1 to 9; clock=False: no clock_start
    (times count from the first call)."""
    rng = np.random.default_rng(seed)

    def latency() -> int:
        return int(rng.pareto(1.0) * 3000) + 500   # heavy tail: some calls outlast hundreds of others

    calls = Calls(tgid=100, start_ns=T0).open("/data/a", O_WRONLY | O_CREAT)
    for _ in range(500):
        calls.write(4096, latency=latency())
    calls.fsync(latency=40_000_000).close().open("/data/a", O_RDONLY).lseek(0)
    for k in range(400):
        calls.read(4096, ret=-EIO if k == 123 else None, latency=latency())
    calls.close()
    calls.process(200).at(T0 + 200_000).open(HOSTILE_FILE, O_RDONLY, size=1 << 24)
    for k in range(350):
        calls.pread(8192, 8192 * k, ret=1000 if k == 77 else None, latency=latency())
    calls.thread(201)
    for k in range(350):
        calls.pread(4096, 4096 * k, latency=latency())
    calls.thread(200).fsync(latency=1_000_000_000).close()
    calls.process(300).at(T0 + 500_000).open("/data/nofact", O_WRONLY | O_CREAT)
    for _ in range(200):
        calls.write(512, latency=latency())
    calls.lseek(0, SEEK_END).close()
    frame = calls.frame()
    records = event_records(frame)
    records = records[np.lexsort((records["start_ns"], records["start_ns"] + records["latency_ns"]))]
    lay = layout()
    kind = {name: code for code, name in lay.names("iow_meta_kind", "IOW_META_").items()}
    facts = np.zeros(5, lay.meta)
    midway = int(frame.loc[frame["tgid"] == 200, "start_ns"].median())
    # (kind, ts, tgid, parent, comm, path, ino): 300 has no fact at all (its name shows as "?")
    for k, (what, ts, tgid, parent, comm, name, ino) in enumerate([
            ("exec", T0 - 1000, 100, 1, b"writer", b"/usr/bin/writer", 0),
            ("file", T0, 100, 0, b"writer", b"/data/a", calls.files["/data/a"].ino),
            ("fork", T0 + 100_000, 200, 100, b"writer", b"", 0),
            ("file", T0 + 200_000, 200, 0, b"writer", HOSTILE_FILE.encode(), calls.files[HOSTILE_FILE].ino),
            ("exec", midway, 200, 100, HOSTILE_BYTES, b"/usr/bin/" + HOSTILE_BYTES, 0)]):
        facts[k]["kind"], facts[k]["ts_ns"], facts[k]["tgid"], facts[k]["parent_tgid"] = kind[what], ts, tgid, parent
        facts[k]["dev"], facts[k]["ino"], facts[k]["fd"], facts[k]["dirfd"] = DEV if ino else 0, ino, 3, -100
        facts[k]["comm"] = _text(comm, facts["comm"].shape[1])
        facts[k]["path"] = _text(name, facts["path"].shape[1])
    start = {"mode": "run", "command": ["bench"], "cwd": "/data", "host": "unit", "kernel": "Linux", "targets": []}
    if clock:
        start["clock_start"] = {"monotonic_ns": T0 - 5000, "realtime_ns": 0, "offset_ns": 0}
    with TraceWriter(path, start) as writer:
        writer.write_facts(facts)
        trace_mutants.write_in_small_chunks(writer, records, rng)
        writer.close({"exit_code": 0, "stop_reason": "the command exited"})


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    folder = tmp_path_factory.mktemp("show-events")
    made = {"busy": folder / "busy.iwt", "no clock": folder / "noclock.iwt", "dd": folder / "dd.iwt",
            "hostile": folder / "hostile.iwt", "iozone": folder / "iozone.iwt"}
    write_busy_trace(made["busy"])
    write_busy_trace(made["no clock"], clock=False, seed=1)
    trace_mutants.write_dd_trace(made["dd"])
    write_hostile_trace(made["hostile"])
    script("report_10m").build_trace(made["iozone"], 20_000, 4, 1)
    return made


def loaded_text(path, **filters) -> str:
    """What `show --events` printed of the loaded trace, header aside (the refusals included)."""
    trace = load(path)
    if trace.summary is not None and len(trace.summary) and not trace.event_count:
        raise UsageError(f"{path} is a summary trace (--summary): it holds no record per call to print")
    return "".join(line + "\n" for line in event_lines.lines(trace, event_lines.select(trace, **filters)))


def streamed_text(path, block_rows: int, **filters) -> str:
    with event_lines.streamed(path, block_rows=block_rows, **filters) as lines:
        return "".join(line + "\n" for line in lines)


def test_the_busy_trace_is_what_it_says(traces):
    # GIVEN the busy trace, loaded: the records far out of order, the names it must show
    trace = load(traces["busy"])
    assert len(trace.report().phases) >= 4
    text = loaded_text(traces["busy"])
    names = {line.split()[0] for line in text.splitlines()}
    assert {"writer", "?"} <= names and any("RED" in n for n in names)
    assert "-EIO" in text and "/data/nofact" not in text and "/data/a" in text


@pytest.mark.parametrize("rows", BLOCKS)
def test_every_filter_gives_the_loaded_lines(traces, rows):
    for name in ("busy", "no clock"):
        # (a block of one row costs a round of pandas: there, no filter and every filter together, a
        # phase filter among them, on the busy trace, and no filter without the clock; every filter
        # alone in blocks of 37 and 1,000 rows; the filters are row by row, the block edges' state
        # is the phases and the first start, which every filter here reads)
        if rows == 1:
            chosen = [FILTERS[0], FILTERS[-1]] if name == "busy" else [FILTERS[0]]
        else:
            chosen = FILTERS if name == "busy" else [FILTERS[0], FILTERS[2], FILTERS[-1]]
        for filters in chosen:
            # WHEN the lines are made from the loaded trace, and block by block
            expected = loaded_text(traces[name], **filters)
            # THEN they are the same bytes (and some lines: no filter here keeps none)
            assert streamed_text(traces[name], rows, **filters) == expected, (name, filters)
            assert expected, (name, filters)


def test_the_other_traces_give_the_loaded_lines(traces):
    # GIVEN a dd run, a run on a file with a hostile name, an IOzone-shaped run of 4 processes
    for name, rows in (("dd", 1), ("hostile", 1), ("iozone", 997)):
        for filters in ({}, {"phases": [2]}, {"syscalls": ["write"]}):
            assert streamed_text(traces[name], rows, **filters) == loaded_text(traces[name], **filters), name


def test_the_command_prints_the_loaded_lines(traces):
    # GIVEN small blocks (every state crosses their boundaries)
    env = {**os.environ, "IOWITNESS_STREAM_BLOCK_ROWS": "37"}
    for argv, filters in ((["--phase", "1,3", "-e", "trace=pread64,read", "-p", "200", "-p", "201"],
                           {"phases": [1, 3], "syscalls": ["pread64", "read"], "pids": [200, 201]}),
                          (["--file", HOSTILE_FILE], {"files": [HOSTILE_FILE]}), ([], {})):
        # WHEN show --events runs on the busy trace
        got = iowitness("show", "--events", *argv, str(traces["busy"]), env=env)
        # THEN it prints the header and the loaded lines, and no control character raw
        assert got.stdout == event_lines.HEADER + "\n" + loaded_text(traces["busy"], **filters), argv
        assert got.stderr == "" and no_raw_controls(got.stdout) == []


def test_the_events_are_never_loaded(traces, monkeypatch, capsys):
    # GIVEN a reader of whole traces that fails
    expected = event_lines.HEADER + "\n" + loaded_text(traces["busy"], phases=[1])

    def no_load(path):
        raise AssertionError("the whole trace was read")
    monkeypatch.setattr(run, "read", no_load)
    # WHEN show --events runs, THEN it prints every line all the same
    assert cli.main(["show", "--events", "--phase", "1", str(traces["busy"])]) == 0
    assert capsys.readouterr().out == expected


def test_a_cut_trace_gives_what_loading_keeps(traces, tmp_path):
    # GIVEN the busy trace cut in the middle of its events
    whole = traces["busy"].read_bytes()
    path = tmp_path / "cut.iwt"
    path.write_bytes(whole[:len(whole) // 2])
    assert 0 < load(path).event_count < load(traces["busy"]).event_count
    # THEN the lines block by block are those of what loading keeps
    for rows in BLOCKS:
        for filters in FILTERS[:4] if rows > 1 else FILTERS[:1]:
            assert streamed_text(path, rows, **filters) == loaded_text(path, **filters), (rows, filters)


def test_damaged_copies_print_as_loading_reads_them(tmp_path):
    # GIVEN 40 damaged copies of the fuzzer's base traces (tests/support/trace_mutants.py)
    bases = trace_mutants.write_bases(tmp_path)
    printed = refused = 0
    for k, (_, how, data) in enumerate(trace_mutants.mutants(bases, 40, seed=28)):
        path = tmp_path / f"mutant-{k}.iwt"
        path.write_bytes(data)
        # WHEN each is printed from the loaded trace and block by block
        try:
            expected = loaded_text(path)
        except (BadTrace, UsageError) as exc:
            # THEN what cannot be printed is refused for the same reason
            with pytest.raises(type(exc)) as caught:
                streamed_text(path, 3)
            assert str(caught.value) == str(exc), how
            refused += 1
            continue
        # THEN otherwise the lines are the same
        assert streamed_text(path, 3) == expected, how
        printed += 1
    assert printed > 10 and refused > 5, (printed, refused)


def test_an_empty_trace_prints_the_header_alone(tmp_path):
    path = tmp_path / "empty.iwt"
    with TraceWriter(path, {"mode": "run", "command": ["true"], "host": "unit", "targets": []}) as writer:
        writer.close({"exit_code": 0})
    assert iowitness("show", "--events", str(path)).stdout == event_lines.HEADER + "\n"


def one_line(proc) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr


def test_what_cannot_be_shown_says_so_in_one_line(traces, tmp_path):
    not_a_trace = tmp_path / "notes.iwt"
    not_a_trace.write_text("hello")
    summary = tmp_path / "summary.iwt"
    trace_mutants.write_summary_trace(summary)
    for argv, code, said in (([str(tmp_path / "none.iwt")], 6, "no such trace"),
                             ([str(not_a_trace)], 6, "not an iowitness trace"),
                             ([str(tmp_path)], 6, "directory"),
                             ([str(summary)], 2, "summary trace"),
                             (["-e", "bogus", str(traces["busy"])], 2, "--syscall 'bogus'")):
        # WHEN show --events is given it
        proc = iowitness("show", "--events", *argv, check=False)
        # THEN its code and one line, before any line of events
        assert proc.returncode == code and said in one_line(proc), (argv, proc.stderr)
        assert proc.stdout == ""


def test_no_room_for_temporary_files_is_one_line(traces, monkeypatch, capsys):
    # GIVEN a temporary directory whose file system is full (the phases' rebuild writes there)
    from iowitness.analysis.phasing import stream_walk

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(stream_walk.os, "posix_fallocate", full)
    # WHEN show --events runs, THEN exit 5 and what to do, in one line, before any line of events
    assert cli.main(["show", "--events", str(traces["busy"])]) == 5
    out, err = capsys.readouterr()
    assert out == "" and "TMPDIR" in err and err.count("\n") == 1


def test_a_reader_that_stops_early_ends_it_quietly(traces, tmp_path):
    # GIVEN show --events piped into a reader that takes one line and quits (| head -1)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([*IOWITNESS, "show", "--events", str(traces["iozone"])], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.stdout.readline().decode().startswith("process")
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=120)
    # THEN it ends at once with 0, says nothing, and leaves no temporary file behind
    assert proc.returncode == 0 and stderr == b""
    assert list(tmp.iterdir()) == []
