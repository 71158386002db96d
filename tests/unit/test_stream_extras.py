"""The report's groups, outliers, latency histograms and stretches streamed block by block
(analysis/measure/stream_extras.py) are the in-memory ones, exactly: every case is cut into blocks of
1, 37 and 1000 rows, so every per-group, per-phase and per-stretch state crosses block
boundaries, and compared with the one-block report's groups and outliers, machine.histograms and
stretches.stretch_frame, bit for bit."""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis import report
from iowitness.analysis.measure import stream_extras, stream_full
from iowitness.reporters import machine, stretches
from tests.support.blocks import BLOCKS, Blocks, assigned_of, calls_of, cutting
from tests.support.synthetic import (
    EIO,
    O_CREAT,
    O_RDONLY,
    O_RDWR,
    O_TRUNC,
    O_WRONLY,
    Calls,
)

REC = 4096
GATHER = {1: 50, 37: 1, 1000: None}
T = 2_000_000_000


def built(events: pd.DataFrame, command=("./bench",)):
    trace = SimpleNamespace(events=events, meta={"command": list(command), "pid": None})
    return stream_full.build(trace), trace


def same_extras(events: pd.DataFrame, sizes=BLOCKS, command=("./bench",), per_phase=report.OUTLIERS_PER_PHASE):
    """Streams the trace in blocks of each size and holds every answer to the in-memory one."""
    rep, trace = built(events, command)
    outliers = (rep.outliers if per_phase == report.OUTLIERS_PER_PHASE
                else report.outliers(calls_of(rep, events), rep.phases, per_phase))
    raw = stretches.stretch_frame(rep, trace)
    for rows in cutting(sizes, len(events)):
        # the slowest calls and the stretches' sums merged every few blocks, every block, at the end
        extras = stream_extras.Extras(rep.phases, per_phase, gather_rows=GATHER[rows])
        for e, a in Blocks(events, assigned_of(rep), rows).blocks():
            extras.add(e, a)
        extras.finish()
        pd.testing.assert_frame_equal(extras.groups, rep.groups, check_exact=True)
        pd.testing.assert_frame_equal(extras.outliers, outliers, check_exact=True)
        assert extras.histograms == machine.histograms(rep)
        pd.testing.assert_frame_equal(extras.stretches, raw, check_exact=True)
        if len(events):
            assert extras.t0 == int(events["start_ns"].min())
            pd.testing.assert_frame_equal(stretches.rows_of(extras.stretches, extras.t0),
                                          stretches.stretch_rows(rep, trace), check_exact=True)
    return rep, raw


def without_path(events: pd.DataFrame, rows) -> pd.DataFrame:
    """The trace with no path on these rows (a file whose name the trace never learnt)."""
    path = events["path"].astype(object)
    path.iloc[list(rows)] = None
    events = events.copy()
    events["path"] = pd.Categorical(path, categories=events["path"].cat.categories)
    return events


def iozone_like(children: int = 3, big: int = 700, small: int = 120, seed: int = 1) -> Calls:
    """IOzone -t: children writing their own files together (each at its own pace, so one
    finishes first: the stonewall), then a read test with its warm-up record; latencies from a
    few values, so that many calls tie for the slowest."""
    rng = random.Random(seed)
    calls = Calls()
    latencies = [1000, 1000, 2000, 5000, 9000]
    for test, (n, start) in enumerate(((big, T), (small, T + 10**9))):
        files = [f"/data/c{c}" for c in range(children)]
        for c in range(children):
            calls.process(3000 + 10 * c).open(files[c], O_WRONLY | O_CREAT | O_TRUNC if test == 0 else O_RDONLY,
                                              size=None if test == 0 else big * REC, at=start + 100 * c)
        for r in range(n):
            for c in range(children):
                calls.process(3000 + 10 * c)
                at = start + 10_000 + r * (12_000 + 3000 * c) + 100 * c
                if test == 0:
                    calls.write(REC, latency=rng.choice(latencies), at=at)
                else:
                    if r == 0:   # IOzone's warm-up: one record, then back to the start
                        calls.read(REC, at=at).lseek(0)
                    calls.read(REC, latency=rng.choice(latencies), at=at + 4000)
        end = start + 10_000 + n * (12_000 + 3000 * children)
        for c in range(children):
            calls.process(3000 + 10 * c).fsync(at=end + 1000 * c, latency=50_000).close()
    return calls


# the cases

def test_no_event_no_phase_no_stretch():
    # GIVEN a trace without events, and one whose only file is opened and closed
    # WHEN streamed THEN each answer is the in-memory one: empty
    same_extras(Calls().frame())
    rep, raw = same_extras(Calls().open("/data/f").close().frame())
    assert rep.outliers.empty and len(raw) == 1


def test_iozone_like_children_groups_stonewall_and_outliers_with_ties():
    # GIVEN three children writing 700 records each at their own pace, then reading 120
    rep, raw = same_extras(iozone_like().frame())
    # THEN there are groups with a stonewall before the slowest child ended
    assert len(rep.groups) == 2 and (rep.groups["stonewall_ns"] < rep.groups["last_ns"]).all()
    assert all(0 < share < 1 for share in rep.groups["share_at_stonewall"])
    # and outliers that tie: more calls of the top latency than are shown
    assert (rep.outliers["latency_us"] == 9.0).sum() == len(rep.outliers)
    assert len(raw) == 6


@pytest.mark.parametrize("per_phase", [1, 2, 7])
def test_outliers_kept_per_phase(per_phase):
    # GIVEN phases above and below 100 * per_phase calls WHEN another number per phase is asked
    same_extras(iozone_like(big=120 * per_phase, small=40, seed=per_phase).frame(),
                sizes=(1, 37) if per_phase == 1 else (37, 1000), per_phase=per_phase)


def test_iozone_command_groups_by_its_process_count():
    # GIVEN the children's phases grouped by IOzone's -t, not by overlap
    calls = iozone_like(children=2, big=30, small=20)
    rep, _ = same_extras(calls.frame(), command=("iozone", "-t", "2", "-i0", "-i1", "-r", "4k", "-s", "120k",
                                                 "-F", "/data/c0", "/data/c1"))
    assert len(rep.groups) >= 1


def test_stretches_opened_and_closed_several_times_and_calls_without_a_path():
    # GIVEN one file opened and closed four times (each open a stretch), two processes
    calls = Calls()
    for i in range(4):
        calls.open("/data/f", O_RDWR | O_CREAT).write(REC).write(REC).fsync().lseek(0).read(REC).close()
        calls.process(1001).open("/data/g", O_WRONLY | O_CREAT).write(512).close().process(1000).gap(5000)
    events = calls.frame()
    # and no path on some calls: the first of a stretch, the whole of another
    g = np.flatnonzero(events["path"].astype(str) == "/data/g")
    events = without_path(events, [0, 1, *g[:3]])
    _, raw = same_extras(events)
    assert len(raw) == 8 and raw["path"].isna().sum() == 1 and raw["path"].iloc[0] == "/data/f"


def test_every_path_unknown():
    calls = Calls().open("/data/f", O_RDWR).write(REC).write(REC).close()
    events = calls.frame()
    same_extras(without_path(events, range(len(events))))


def test_errors_negative_returns_and_spans_without_phase():
    calls = Calls().open("/data/f", O_RDWR | O_CREAT | O_TRUNC)
    for i in range(40):
        calls.write(REC, ret=-EIO if i % 7 == 0 else None, latency=1000 + 100 * (i % 3))
    calls.close().open("/data/g", O_RDONLY).lseek(REC).close()
    same_extras(calls.frame())


def test_the_report_10m_shaped_trace(tmp_path):
    # GIVEN the benchmark script's IOzone-shaped trace: 4 children, 3 rounds, random passes
    from iowitness.analysis.read.run import load
    from tests.support.bench import script
    script("report_10m").build_trace(tmp_path / "t.iwt", 60_000, 4, 3)
    trace = load(tmp_path / "t.iwt")
    rep = stream_full.build(trace)
    raw = stretches.stretch_frame(rep, trace)
    hist = machine.histograms(rep)
    assert len(rep.groups) and len(rep.outliers)
    for rows, gather in ((1000, None), (4096, 1)):
        extras = stream_extras.Extras(rep.phases, gather_rows=gather)
        for e, a in Blocks(trace.events, assigned_of(rep), rows).blocks():
            extras.add(e, a)
        extras.finish()
        pd.testing.assert_frame_equal(extras.groups, rep.groups, check_exact=True)
        pd.testing.assert_frame_equal(extras.outliers, rep.outliers, check_exact=True)
        assert extras.histograms == hist
        pd.testing.assert_frame_equal(extras.stretches, raw, check_exact=True)
        pd.testing.assert_frame_equal(stretches.rows_of(extras.stretches, extras.t0),
                                      stretches.stretch_rows(rep, trace), check_exact=True)


def test_each_accumulator_alone():
    # GIVEN the IOzone-like trace WHEN each accumulator is fed by itself THEN it answers alone
    events = iozone_like(big=520, small=60).frame()
    rep, trace = built(events)
    parts = {"groups": stream_extras.GroupTable(rep.phases), "outliers": stream_extras.Outliers(rep.phases),
             "histograms": stream_extras.Histograms(rep.phases), "stretches": stream_extras.Stretches(),
             "first start": stream_extras.Stretches(sums=False)}   # what --json, check and compare gather
    for e, a in Blocks(events, assigned_of(rep), 37).blocks():
        for part in parts.values():
            part.add(e, a)
    pd.testing.assert_frame_equal(parts["groups"].result(), rep.groups, check_exact=True)
    pd.testing.assert_frame_equal(parts["outliers"].result(), rep.outliers, check_exact=True)
    assert parts["histograms"].result() == machine.histograms(rep)
    pd.testing.assert_frame_equal(parts["stretches"].result(), stretches.stretch_frame(rep, trace), check_exact=True)
    assert parts["stretches"].t0 == int(events["start_ns"].min())
    # AND without the stretches' sums: the same first start, no table
    assert parts["first start"].result() is None and parts["first start"].t0 == int(events["start_ns"].min())


# a seeded fuzz of small traces: several processes and threads at once, reopened files, ties,
# errors, calls without a path

def random_trace(seed: int) -> pd.DataFrame:
    rng = random.Random(seed)
    calls = Calls(latency=rng.choice([0, 1000, 1500]))
    files = [f"/data/z{i}" for i in range(rng.randint(1, 4))]
    processes = [1000 + 10 * i for i in range(rng.randint(1, 3))]
    for _ in range(rng.randint(1, 400)):
        tgid = rng.choice(processes)
        calls.process(tgid, tgid + rng.randint(0, 2))
        if rng.random() < 0.15:
            calls.at(calls.now - rng.randint(0, 40_000))
        if rng.random() < 0.2:
            calls.gap(rng.randint(0, 50_000))
        what = rng.random()
        size = rng.choice([512, 4096, 4096, 8192])
        ret = rng.choice([None] * 8 + [-EIO, 100, 0])
        timing = {"latency": rng.choice([500, 1000, 1000, 3000, 20_000])} if rng.random() < 0.6 else {}
        try:
            if what < 0.08 or not calls.fds.get(tgid):
                flags = rng.choice([O_RDONLY, O_WRONLY | O_CREAT, O_RDWR, O_RDWR | O_TRUNC | O_CREAT])
                calls.open(rng.choice(files), flags, size=rng.choice([None, 64 * REC]))
            elif what < 0.45:
                calls.write(size, ret=ret, **timing)
            elif what < 0.75:
                calls.read(size, ret=ret, **timing)
            elif what < 0.82:
                calls.pread(size, rng.randrange(64) * REC, ret=ret, **timing)
            elif what < 0.86:
                calls.lseek(rng.choice([0, REC]))
            elif what < 0.9:
                calls.fsync(**timing)
            elif what < 0.95:
                calls.close(**timing)
            else:
                for _ in range(rng.randint(1, 5)):
                    calls.request(rng.choice(["uring_read", "aio_write"]), size, rng.randrange(64) * REC,
                                  latency=rng.choice([1000, 5000]), at=calls.now + rng.randint(0, 3000))
        except ValueError:
            pass
    events = calls.frame()
    if len(events) and rng.random() < 0.5:
        events = without_path(events, sorted(rng.sample(range(len(events)), rng.randint(1, max(1, len(events) // 5)))))
    return events


@pytest.mark.parametrize("chunk", range(2))   # 30 seeds: a guard of block boundaries, not a search
def test_fuzzed_small_traces(chunk):
    for seed in range(chunk * 15, chunk * 15 + 15):
        events = random_trace(seed)
        try:
            same_extras(events, sizes=(1, 37) if seed % 2 else (37, 1000))
        except AssertionError as error:
            raise AssertionError(f"seed {seed}: {error}") from None
