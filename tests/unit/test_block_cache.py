"""The blocks a pass keeps for the next (analysis/read/block_cache.py): whatever the budget, every pass
gives the loaded events table, and every report is the same bytes.

The reference is `load(path).events` (the reader's own sort by start time) and the report of
the same trace with nothing kept (budget 0). The traces are written by the collector's own
TraceWriter, their records far out of time order (so the merge holds records back at the point
where a later pass takes over from the kept blocks)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.read import block_cache, stream_events
from iowitness.analysis.read.run import load
from tests.support.bench import script
from tests.support.cli import iowitness
from tests.unit.test_stream_events import T0, in_cpu_order, records, write_trace

# 0: nothing kept; a few frames' worth (of 37-row blocks); everything
BUDGETS = (0, 20_000, 1 << 40)


def displaced(tmp_path, seed: int):
    rng = np.random.default_rng(200 + seed)
    n = 3000
    start = T0 + np.sort(rng.integers(0, n * 50, n))
    latency = (rng.pareto(1.0, n) * 200).astype(np.int64)
    ops = rng.choice(["read", "pwrite64", "lseek"], n)
    return write_trace(tmp_path / f"t{seed}.iwt", records(start, latency, op=ops)[in_cpu_order(start, latency)],
                       [(11, "/data/f", T0 - 1)], seed=seed)


@pytest.fixture(scope="module")
def displaced_traces(tmp_path_factory):
    """Seed: (path, loaded events) of the three traces below, each written and loaded once for
    the three budgets (0.4 CPU-s a trace)."""
    folder = tmp_path_factory.mktemp("displaced")
    return {seed: (path, load(path).events) for seed in range(3) for path in [displaced(folder, seed)]}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("budget", BUDGETS)
def test_every_pass_gives_the_loaded_table(displaced_traces, monkeypatch, seed, budget):
    # GIVEN a trace whose records are far out of time order, and a budget for the kept blocks
    path, events = displaced_traces[seed]
    monkeypatch.setattr(block_cache, "BUDGET_BYTES", budget)
    with stream_events.open_events(path, block_rows=37) as source:
        assert source.straggler_count > 0
        # WHEN the blocks are read in three passes, the third left half way and read again
        passes = [list(source.blocks()), list(source.blocks())]
        for i, _ in enumerate(source.blocks()):
            if i == 3:
                break
        passes.append(list(source.blocks()))
        kept = len(source._cache._frames)
        resume = source._cache.resume
    # THEN each pass is the loaded table, block for block the same as the first
    for blocks in passes:
        pd.testing.assert_frame_equal(events, pd.concat(blocks), check_exact=True, check_categorical=True,
                                      check_frame_type=False)
        assert [len(b) for b in blocks] == [len(b) for b in passes[0]]
    # AND the budget said how much was kept: nothing, some (the rest decoded again), all
    if budget == 0:
        assert kept == 0
    elif budget == BUDGETS[1]:
        assert 0 < kept < len(passes[0]) and resume is not None
    else:
        assert kept == len(passes[0]) and resume is None


def test_a_caller_adding_a_column_does_not_change_the_next_pass(displaced_traces):
    # GIVEN a trace whose blocks are all kept
    path, _ = displaced_traces[0]
    with stream_events.open_events(path, block_rows=1000) as source:
        first = []
        for block in source.blocks():
            first.append(block.copy())
            # WHEN a caller adds a column to each block it is given
            block["mine"] = 1
        # THEN the next pass gives the blocks as they were
        again = list(source.blocks())
    assert "mine" not in again[0]
    for one, two in zip(first, again, strict=True):
        pd.testing.assert_frame_equal(one, two, check_exact=True)


@pytest.fixture(scope="module")
def iozone_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("cache") / "iozone.iwt"
    script("report_10m").build_trace(path, 30_000, 4, 2)
    return path


@pytest.mark.parametrize("form", [["--json"], ["--csv"], []], ids=["json", "csv", "text"])
def test_a_trace_larger_than_the_budget_gives_the_same_report(iozone_trace, form):
    # GIVEN an IOzone-shaped trace of 30,000 events read in blocks of 997 rows
    outputs = {}
    for budget in ("0", "300000", str(1 << 40)):
        env = {**os.environ, "IOWITNESS_STREAM_BLOCK_ROWS": "997", "IOWITNESS_BLOCK_CACHE_BYTES": budget}
        # WHEN it is reported with nothing kept, a few blocks kept (the rest decoded again), all kept
        outputs[budget] = iowitness("report", str(iozone_trace), *form, env=env).stdout
    # THEN the three reports are the same bytes
    assert outputs["0"].strip()
    assert outputs["300000"] == outputs["0"] and outputs[str(1 << 40)] == outputs["0"]


@pytest.mark.parametrize("name, value", [("IOWITNESS_BLOCK_CACHE_BYTES", "160M"), ("IOWITNESS_BLOCK_CACHE_BYTES", "-1"),
                                         ("IOWITNESS_STREAM_BLOCK_ROWS", "0"), ("IOWITNESS_STREAM_BLOCK_ROWS", "lots"),
                                         ("IOWITNESS_LATENCY_BYTES", "1.5")])
def test_a_bad_setting_is_one_line_and_exit_2(iozone_trace, name, value):
    # GIVEN a setting of the block reading that is not a whole number, or too small to mean anything
    # WHEN a trace is reported with it
    done = iowitness("report", str(iozone_trace), env={**os.environ, name: value}, check=False)
    # THEN one line names the setting and the default, and nothing is printed as if it were a report
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and name in done.stderr and "default" in done.stderr
    assert not done.stdout
