"""The phases' assignment streamed (analysis/phasing/stream_assign.py): the same frame, event for event, as the
whole table given as one block, whatever the blocks.

Every case builds a trace in memory and compares pd.concat of the streamed blocks with
stream_assign.of_frame(events, outside) exactly, for blocks of 1, 37 and 1,000 rows, so that every
piece of state (a stream's last two data calls, a run, a description, a file's last open)
crosses block boundaries. The cases of the existing phase tests are reused as they are:
their events are caught on their way into the assignment.
"""

from __future__ import annotations

import importlib
import inspect
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.phasing import stream_assign
from tests.support.blocks import cutting
from tests.support.synthetic import (
    COLUMNS,
    EIO,
    O_APPEND,
    O_CREAT,
    O_RDONLY,
    O_RDWR,
    O_TRUNC,
    O_WRONLY,
    SEEK_CUR,
    SEEK_SET,
    SYSCALLS,
    Calls,
)

BLOCKS = (1, 37, 1000)
REC = 4096
PROT_READ, PROT_EXEC = 0x1, 0x4
F_DUPFD, F_DUPFD_CLOEXEC, F_GETFL = 0, 1030, 3
MORE_SYSCALLS = ("mmap", "munmap", "msync", "madvise", "fault_read", "fault_write")


class Blocks:
    """A source as analysis/read/stream_events.py gives one: the events in blocks of `rows`."""

    def __init__(self, events: pd.DataFrame, rows: int):
        self.events, self.rows = events, rows
        self.passes = 0

    def blocks(self):
        self.passes += 1
        if not len(self.events):
            yield self.events.iloc[0:0]
        for at in range(0, len(self.events), self.rows):
            yield self.events.iloc[at:at + self.rows]


def streamed(events: pd.DataFrame, rows: int, outside=None) -> pd.DataFrame:
    with stream_assign.assign(Blocks(events, rows), outside) as assigned:
        return pd.concat([block for _, block in assigned.blocks()])


def assert_same_as_in_memory(events: pd.DataFrame, outside=None, blocks=BLOCKS) -> None:
    expected = stream_assign.of_frame(events, None if outside is None else outside(events))
    for rows in cutting(blocks, len(events)):
        if rows == 1 and len(events) > 2000:
            # a row costs a whole block's overhead: blocks of one row over the first 2,000 events,
            # a trace of their own
            assert_same_as_in_memory(events.iloc[:2000], outside, blocks=(1,))
            continue
        pd.testing.assert_frame_equal(streamed(events, rows, outside), expected, check_exact=True,
                                      check_categorical=True, obj=f"blocks of {rows}")
    return expected


# --- a builder for the calls synthetic.Calls has no method for ------------------------------

def frame(calls: Calls) -> pd.DataFrame:
    """Calls.frame, with mmap, munmap and faults kept in the syscall categories."""
    rows = sorted(calls.rows, key=lambda r: r["start_ns"])
    out = pd.DataFrame({c: np.array([r[c] for r in rows], dtype=t) for c, t in COLUMNS.items()})
    names = [r["syscall"] for r in rows]
    out["syscall"] = pd.Categorical(names, categories=[s for s in dict.fromkeys(SYSCALLS + MORE_SYSCALLS)
                                                       if s in set(names)])
    out["end_ns"] = out["start_ns"] + out["latency_ns"]
    out["device"] = pd.Categorical(["8:1"] * len(rows))
    paths = [r["path"] for r in rows]
    out["path"] = pd.Categorical(paths, categories=sorted(set(paths)))
    return out


def copy_fd(calls: Calls, syscall: str, old: int, new: int | None = None, *, flags: int = 0, ret=None) -> Calls:
    """dup, dup2 or fcntl(F_DUPFD): `new` names what `old` names (the builder's table too)."""
    table = calls.fds[calls.tgid]
    if new is None:
        new = next(n for n in range(3, 64) if n not in table)
    if ret is None or ret >= 0:
        table[new] = table[old]
    calls._record(syscall, old, -1, new if syscall == "dup2" else 0, new if ret is None else ret, flags)
    return calls


def mmap(calls: Calls, path: str, fd: int, *, prot: int = PROT_READ, ret: int = 0x7F00_0000_0000, **timing) -> Calls:
    calls._file(path)
    calls._record("mmap", fd, 0, 1 << 20, ret, prot, path=path, **timing)
    return calls


def fault(calls: Calls, path: str, offset: int, *, write: bool = False, **timing) -> Calls:
    """A page fault on a mapping of `path`: fd -1, the page's offset, a page moved."""
    calls._file(path)
    calls._record("fault_write" if write else "fault_read", -1, offset, REC, 0, 0, path=path, **timing)
    return calls


def on_mapping(calls: Calls, syscall: str, path: str, **timing) -> Calls:
    calls._file(path)
    calls._record(syscall, -1, -1, 1 << 20, 0, 0, path=path, **timing)
    return calls


# --- the existing phase tests' events --------------------------------------------------------

def _phase_test_cases():
    cases = []
    for name in ("tests.unit.test_phases", "tests.unit.test_inflight", "tests.unit.test_device_credit"):
        module = importlib.import_module(name)
        cases += [pytest.param(module, fname, id=f"{name.rsplit('.', 1)[1]}::{fname}")
                  for fname, f in inspect.getmembers(module, inspect.isfunction)
                  if fname.startswith("test_") and not inspect.signature(f).parameters]
    return cases


@pytest.mark.parametrize("module, name", _phase_test_cases())
def test_every_event_table_of_the_phase_tests_is_assigned_alike(module, name, monkeypatch):
    # GIVEN an existing test of the phases, whose event tables are caught on their way in
    caught = []
    in_memory = stream_assign.of_frame

    def catching(events, outside=None):
        caught.append((events, outside))
        return in_memory(events, outside)
    monkeypatch.setattr(stream_assign, "of_frame", catching)
    getattr(module, name)()
    monkeypatch.undo()
    # WHEN each is assigned in blocks (a table an earlier case gave already is not cut again: the
    # depth-8 run of test_inflight is built by two of its tests, 10-11 s each in blocks at load 14)
    # THEN every block size gives what one block gives
    for events, outside in caught:
        assert outside is None
        seen = (len(events), int(pd.util.hash_pandas_object(events, index=True).sum()))
        if seen not in _CUT_ALREADY:
            assert_same_as_in_memory(events)
            _CUT_ALREADY.add(seen)


# the event tables of the phase tests cut so far (this file runs in one process: --dist loadfile)
_CUT_ALREADY: set[tuple[int, int]] = set()


# --- the cases the streamed version must carry across blocks -------------------------------

def _threads():
    # two threads, each its own fd on one file, and two threads sharing one fd (one span, two streams)
    calls = Calls(1000).thread(1001).open("/d/f", O_WRONLY | O_CREAT).thread(1002).open("/d/f", O_WRONLY)
    for i in range(6):
        calls.thread(1001).pwrite(REC, i * REC).thread(1002).pwrite(REC, (1 << 20) + i * REC)
    calls.thread(1001).close().thread(1002).close()
    calls.thread(1000).open("/d/g", O_RDWR | O_CREAT)
    for i in range(5):
        calls.thread(1003).pread(REC, i * REC, fd=3).thread(1004).pwrite(REC, i * REC, fd=3)
    calls.thread(1005).fsync(fd=3)          # a thread with no data call in the span
    return calls.thread(1000).close(fd=3).frame()


def _copies():
    calls = Calls().open("/d/f", O_RDWR | O_CREAT).write(REC).write(REC)
    copy_fd(calls, "dup", 3)                                  # fd 4
    calls.write(REC, fd=4).close(fd=3).write(REC, fd=4)
    copy_fd(calls, "dup2", 4, 9)                              # a copy of a copy
    copy_fd(calls, "fcntl", 9, flags=F_DUPFD_CLOEXEC)         # fd 3 again
    copy_fd(calls, "fcntl", 9, flags=F_GETFL, ret=O_RDWR)     # no copy
    copy_fd(calls, "dup", 9, ret=-EIO)                        # a failed copy
    calls.lseek(0, fd=9).read(REC, fd=3).read(REC, fd=9).close(fd=4).close(fd=9).read(REC, fd=3).close(fd=3)
    return calls.frame()


def _two_opens_and_untraced():
    calls = Calls().open("/d/old", O_RDONLY, size=1 << 20, traced=False)
    calls.read(REC).read(REC)
    calls.open("/d/f", O_RDWR | O_CREAT).open("/d/f", O_RDONLY)
    for _ in range(4):
        calls.write(REC, fd=4).read(REC, fd=5)
    calls.read(REC, fd=3).close(fd=4).close(fd=5).close(fd=3)
    return calls.frame()


def _mixed_and_fills():
    rng = random.Random(3)
    calls = Calls().open("/d/rw", O_RDWR, size=1 << 20)
    for _ in range(60):
        (calls.pread if rng.random() < 0.7 else calls.pwrite)(REC, rng.randrange(256) * REC)
    calls.close()
    # a stdio stream open for update: the read of the block before each write into it
    calls.open("/d/stdio", O_RDWR, size=1 << 20)
    for i in range(30):
        calls.lseek(i * 8192).read(REC).lseek(i * 8192 + 100).write(200)
    return frame(calls.close())


def _warm_ups():
    calls = Calls().open("/d/f", O_RDONLY, size=8 * REC).read(REC).lseek(0)
    for _ in range(8):
        calls.read(REC)
    calls.close().open("/d/f", O_RDONLY, size=REC).read(REC).lseek(0).read(REC).close()
    calls.open("/d/g", O_RDWR, size=REC).write(REC).lseek(0).write(REC).lseek(0).write(REC).write(REC)
    calls.lseek(0).read(REC).lseek(0).read(REC)        # a read run of two calls ending the trace
    return calls.frame()


def _uring_fixed():
    calls = Calls().open("/d/f", O_RDONLY, size=1 << 30)
    t0 = calls.now + 10
    for i in range(50):
        calls.request("uring_read", REC, REC * i, latency=1000, fixed_index=0, at=t0 + i * 250)
    calls.at(t0 + 50 * 250 + 2000).close()
    # a registered file no traced open named, and an open at the very start time of a request
    calls.process(2000).open("/d/g", O_RDONLY, traced=False)
    for i in range(20):
        calls.request("uring_read", REC, REC * i, latency=3000, fixed_index=1, at=t0 + 100_000 + i * 100)
    calls.process(3000).open("/d/h", O_RDONLY, at=t0 + 200_000)
    for i in range(10):
        calls.request("uring_read", REC, REC * i, latency=3000, fixed_index=0, at=t0 + 200_000 + i * 100)
    calls.process(3000).open("/d/h", O_RDONLY, at=t0 + 200_500)
    # an open recorded after a request of the same nanosecond: an equal start counts (merge_asof)
    calls.process(4000).open("/d/k", O_RDONLY, traced=False)
    for i in range(3):
        calls.request("uring_read", REC, REC * i, latency=3000, fixed_index=0, at=t0 + 300_000)
        calls.open("/d/k", O_RDONLY, at=t0 + 300_000)
    return calls.frame()


def _async():
    calls = Calls().open("/d/f", O_RDWR, size=1 << 30)
    t0 = calls.now + 10
    for i in range(80):
        calls.request("aio_write" if i < 40 else "aio_read", REC, REC * (i % 40), latency=5000, at=t0 + i * 300)
    calls.request("aio_fsync", 0, 0, latency=2000, at=t0 + 80 * 300)
    return calls.at(t0 + 100_000).close().frame()


def _mappings():
    calls = Calls().open("/d/data", O_RDWR, size=1 << 20)
    mmap(calls, "/d/data", 3)
    calls.close()
    for i in range(12):
        fault(calls, "/d/data", i * REC, write=i % 3 == 0)
    on_mapping(calls, "msync", "/d/data")
    on_mapping(calls, "munmap", "/d/data")
    # a mapping made before tracing, and a library whose PROT_EXEC mapping comes after its faults
    for i in range(5):
        fault(calls, "/d/premapped", i * REC)
        fault(calls, "/lib/libc.so", i * REC)
    calls.open("/lib/libc.so", O_RDONLY)
    mmap(calls, "/lib/libc.so", calls.last[calls.tgid], prot=PROT_READ | PROT_EXEC)
    # a fault recorded before the mmap of its nanosecond: the mmap names its fd
    calls.open("/d/late", O_RDONLY, size=1 << 20)
    fault(calls, "/d/late", 0, latency=0)
    mmap(calls, "/d/late", calls.last[calls.tgid], at=calls.now)
    fault(calls, "/d/late", REC)
    return frame(calls.close())


def _errors():
    calls = Calls().open("/d/f", O_RDONLY).read(REC).read(REC, ret=-EIO).read(REC, ret=1000).read(REC)
    calls.lseek(-1, SEEK_SET).close(ret=-9).close()
    calls.open("/d/nope", O_RDONLY).close()
    calls.rows[-2]["ret"] = -2     # an open that failed
    return calls.frame()


def _equal_starts():
    # phases of several streams starting at one time: numbered in stream order; zero-latency calls
    calls = Calls(latency=0)
    for p in (3000, 1000, 2000):
        calls.process(p).open(f"/d/{p}", O_WRONLY | O_CREAT, at=START)
    for i in range(4):
        for p in (2000, 3000, 1000):
            calls.process(p).pwrite(REC, i * REC, at=START + 10 + i)
    for p in (1000, 2000, 3000):
        calls.process(p).pread(REC, 0, at=START + 100).close(at=START + 100)
    return calls.frame()


START = 1_000_000_000
CASES = {"threads": _threads, "copies": _copies, "two_opens_and_untraced": _two_opens_and_untraced,
         "mixed_and_fills": _mixed_and_fills, "warm_ups": _warm_ups, "uring_fixed": _uring_fixed,
         "async": _async, "mappings": _mappings, "errors": _errors, "equal_starts": _equal_starts}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_case_is_assigned_alike_in_blocks(name):
    # GIVEN a trace with the feature
    events = CASES[name]()
    # WHEN it is assigned in blocks of 1, 37 and 1,000 rows
    # THEN each gives exactly what the whole frame as one block gives
    assert_same_as_in_memory(events)


def test_the_cases_hold_what_they_are_about():
    # GIVEN the cases above, assigned in memory
    # THEN each one has the feature it is named after (so that a comparison of it means something)
    a = {name: stream_assign.of_frame(build()) for name, build in CASES.items()}
    assert (a["mixed_and_fills"]["operation"] == "mixed").any() and a["mixed_and_fills"]["fill"].any()
    assert a["warm_ups"]["warmup"].sum() >= 3
    assert a["threads"]["phase"].max() >= 4
    mappings = CASES["mappings"]()
    faults = mappings["syscall"].astype(str).str.startswith("fault")
    on_libc = mappings["path"] == "/lib/libc.so"
    assert (a["mappings"]["phase"][faults & ~on_libc] > 0).any() and (a["mappings"]["phase"][faults & on_libc] == -1).all()


def test_the_benchmarks_own_files_are_in_no_phase_alike():
    # GIVEN a trace with a job file read and an output written among the data files
    calls = Calls().open("/job.fio", O_RDONLY).read(512).close().open("/d/f", O_WRONLY | O_CREAT)
    for _ in range(10):
        calls.write(REC)
    calls.open("/out.json", O_WRONLY | O_CREAT | O_TRUNC).write(300).close().write(REC, fd=3).close(fd=3)
    events = calls.frame()
    # WHEN they are left out by a per-block callable
    # THEN the streamed assignment leaves them out as the whole frame does
    assert_same_as_in_memory(events, lambda block: block["path"].isin(["/job.fio", "/out.json"]).to_numpy())


def test_an_empty_trace_and_a_one_event_trace():
    # GIVEN no event, then one read on an fd opened before tracing
    # THEN both are assigned alike (an empty frame of the same columns, one span and phase)
    assert_same_as_in_memory(Calls().frame())
    assert_same_as_in_memory(Calls().open("/d/f", O_RDONLY, traced=False).read(REC).frame())
    assert_same_as_in_memory(Calls().open("/d/f", O_RDONLY).frame())


def test_blocks_may_be_asked_again_and_the_files_go_with_close():
    # GIVEN an assignment of a small trace
    events = _threads()
    source = Blocks(events, 37)
    assigned = stream_assign.assign(source)
    folder = Path(assigned._folder.name)
    # WHEN its blocks are asked for twice
    first = pd.concat([b for _, b in assigned.blocks()])
    second = pd.concat([b for _, b in assigned.blocks()])
    # THEN both passes agree, each event block comes with its own rows, and close removes the files
    pd.testing.assert_frame_equal(first, second, check_exact=True)
    assert all(e.index.equals(b.index) for e, b in assigned.blocks())
    assigned.close()
    assert not folder.exists()
    with pytest.raises(ValueError):
        next(assigned.blocks())


def test_iozone_shaped_trace_from_the_benchmark_script(tmp_path):
    # GIVEN a small IOzone-shaped trace written as scripts/bench/report_10m.py writes its 10 M one
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "bench"))
    from report_10m import build_trace

    from iowitness.analysis.read.run import load
    build_trace(tmp_path / "t.iwt", 12_000, children=3, rounds=2)
    events = load(tmp_path / "t.iwt").events
    # WHEN it is assigned in blocks (of 1 row only its first 2,000 events: a row costs a block's overhead)
    # THEN as in memory
    assert_same_as_in_memory(events)


def test_a_trace_read_back_from_a_file():
    # GIVEN the dd trace the fuzz tests start from (tests/support/trace_mutants.py), read back
    import tempfile

    from iowitness.analysis.read.run import load
    from tests.support.trace_mutants import write_dd_trace
    with tempfile.TemporaryDirectory() as folder:
        write_dd_trace(Path(folder) / "dd.iwt")
        events = load(Path(folder) / "dd.iwt").events
    # THEN as in memory
    assert_same_as_in_memory(events)


# --- fuzz -----------------------------------------------------------------------------------

def random_trace(rng: random.Random) -> tuple[pd.DataFrame, set]:
    """A small trace mixing everything above: processes, threads, opens (twice, untraced),
    copies, data calls in runs and mixes, seeks, syncs, errors, async and registered-file
    requests, mappings and faults (some on executable mappings), equal start times."""
    calls = Calls(1000, latency=rng.choice([0, 1, 1000]))
    paths = [f"/d/f{i}" for i in range(rng.randint(1, 4))] + ["/lib/x.so"]
    procs = [1000 + 1000 * i for i in range(rng.randint(1, 3))]
    t = START
    for _ in range(rng.randint(0, 120)):
        p = rng.choice(procs)
        calls.process(p, p + rng.randint(0, 2))
        table = calls.fds.get(p, {})
        if rng.random() < 0.2:
            t += rng.choice([0, 0, 1, 500])
        calls.at(t if rng.random() < 0.3 else calls.now)
        choice = rng.random()
        if not table or choice < 0.08:
            calls.open(rng.choice(paths), rng.choice([O_RDONLY, O_RDWR, O_WRONLY | O_CREAT | O_TRUNC, O_RDWR | O_APPEND]),
                       size=1 << 20, traced=rng.random() > 0.15,
                       syscall=rng.choice(["openat", "openat", "open", "creat"]))
            continue
        fd = rng.choice(sorted(table))
        path = table[fd].path
        if choice < 0.12:
            calls.close(fd=fd, ret=0 if rng.random() > 0.1 else -9)
        elif choice < 0.17:
            kind = rng.choice(["dup", "dup2", "dup3", "fcntl", "fcntl_getfl"])
            if kind == "fcntl_getfl":
                copy_fd(calls, "fcntl", fd, flags=F_GETFL, ret=0)
            elif kind == "fcntl":
                copy_fd(calls, "fcntl", fd, flags=rng.choice([F_DUPFD, F_DUPFD_CLOEXEC]))
            else:
                copy_fd(calls, kind, fd, rng.choice([None, fd, 7, 8]), ret=None if rng.random() > 0.1 else -9)
        elif choice < 0.62:
            run = rng.randint(1, 6)
            for _ in range(run):
                size = rng.choice([REC, REC, 512, 8192])
                way = rng.random()
                ret = None if rng.random() > 0.05 else rng.choice([-EIO, 100])
                if way < 0.3:
                    calls.read(size, fd=fd, ret=ret)
                elif way < 0.55:
                    calls.write(size, fd=fd, ret=ret)
                elif way < 0.75:
                    calls.pread(size, rng.randrange(16) * REC, fd=fd, ret=ret)
                else:
                    calls.pwrite(size, rng.randrange(16) * REC, fd=fd, ret=ret)
        elif choice < 0.72:
            calls.lseek(rng.choice([0, REC, -REC]), rng.choice([SEEK_SET, SEEK_CUR]), fd=fd)
        elif choice < 0.76:
            calls.fsync(fd=fd, syscall=rng.choice(["fsync", "fdatasync"]))
        elif choice < 0.84:
            fixed = rng.choice([None, None, 0, 1])
            for i in range(rng.randint(1, 5)):
                calls.request(rng.choice(["uring_read", "uring_write", "aio_read", "aio_write", "uring_fsync"]),
                              REC, i * REC, latency=rng.choice([0, 700, 3000]), fd=fd, fixed_index=fixed)
        elif choice < 0.9:
            mmap(calls, path, fd, prot=rng.choice([PROT_READ, PROT_READ, PROT_READ | PROT_EXEC]),
                 ret=0 if rng.random() > 0.1 else -12)
        else:
            target = rng.choice(paths)
            for i in range(rng.randint(1, 4)):
                fault(calls, target, i * REC, write=rng.random() < 0.3)
            if rng.random() < 0.2:
                on_mapping(calls, rng.choice(["msync", "munmap", "madvise"]), target)
    events = frame(calls)
    outside = set(rng.sample(paths, 1)) if rng.random() < 0.2 else set()
    return events, outside


TRACES = 140


def test_random_traces_are_assigned_alike():
    # GIVEN 140 random small traces (seeded; 300 before, cut for the suite's time: the rarest
    # feature, a fill, is in 6 of the first 140 and in only 4 of the first 120)
    rng = random.Random(20240518)
    identical, seen = 0, {"mixed": 0, "fill": 0, "warmup": 0, "code fault": 0, "registered": 0, "copy": 0}
    for k in range(TRACES):
        events, own = random_trace(rng)
        outside = (lambda block, own=own: block["path"].isin(own).to_numpy()) if own else None
        # WHEN each is assigned in blocks of 1,000 rows and of a few: 1 row for every tenth trace, 2, 3
        # or 5 for every other one of the rest, 37 for the others (the choice is drawn for every trace
        # all the same: the traces are the ones the seed always gave)
        # THEN each is what the whole frame as one block gives
        few = 1 if k % 10 == 0 else rng.choice([2, 3, 5, 37])
        try:
            expected = assert_same_as_in_memory(events, outside, blocks=(few if k % 10 == 0 or k % 2 else 37, 1000))
        except AssertionError as exc:
            raise AssertionError(f"random trace {k} differs: {exc}") from None
        identical += 1
        syscall = events["syscall"].astype(str)
        seen["mixed"] += (expected["operation"] == "mixed").any()
        seen["fill"] += expected["fill"].any()
        seen["warmup"] += expected["warmup"].any()
        seen["code fault"] += (syscall.str.startswith("fault") & (expected["phase"] == -1)).any()
        seen["registered"] += ((events["flags"] & 0x100).astype(bool) & syscall.str.startswith("uring")).any()
        seen["copy"] += syscall.isin(["dup", "dup2", "dup3"]).any()
    # AND the traces held every feature, many times over
    assert identical == TRACES and min(seen.values()) >= 5, seen


def test_carried_forward_is_the_last_value_of_its_key_so_far():
    # GIVEN random blocks of keyed rows, values set at densities from none to all, a state
    # carried from earlier blocks, and the rule written as a loop over the rows
    rng = np.random.default_rng(20261207)
    for case in range(300):
        m, keys = int(rng.integers(0, 120)), int(rng.integers(1, 12))
        key = rng.integers(0, keys, m)
        value = np.where(rng.random(m) < rng.random(), rng.integers(0, 40, m), -1)
        state = rng.integers(-1, 5, keys + 2)
        expected, expected_state = np.empty(m, dtype=np.int64), state.copy()
        for i in range(m):
            if value[i] >= 0:
                expected_state[key[i]] = value[i]
            expected[i] = expected_state[key[i]]
        # WHEN the block is carried forward
        got_state = state.copy()
        got = stream_assign._carried_forward(key, value, got_state)
        # THEN each row has its key's last value at or before it, else the state's, and the
        # state holds each key's value at its last row
        assert np.array_equal(got, expected), case
        assert np.array_equal(got_state, expected_state), case
