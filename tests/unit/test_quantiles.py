"""Exact per-phase percentiles over blocks (analysis/phasing/quantiles.py) against numpy on whole arrays.

The reference is np.percentile on each phase's whole array of latencies (what the in-memory
report computes, analysis/phasing/phases.py); the blocks are cut small and at odd sizes so that every
phase crosses many block boundaries. Equality is byte for byte, not approximate.
"""

from pathlib import Path

import numpy as np
import pytest

from iowitness.analysis.phasing import phases, quantiles
from iowitness.analysis.read.run import load
from tests.support.bench import script
from tests.support.blocks import calls_of

PERCENTS = [50, 90, 99, 99.9]
ROOT = Path(__file__).resolve().parents[2]


def blocks_of(phase, value, size):
    return lambda: ((phase[i:i + size], value[i:i + size]) for i in range(0, len(phase), size))


def by_numpy(phase, value, phases_count):
    out = np.full((phases_count, len(PERCENTS)), np.nan)
    for p in range(phases_count):
        mine = value[phase == p] / 1e3
        if len(mine):
            out[p] = np.percentile(mine, PERCENTS)
    return out


@pytest.mark.parametrize("shape", ["lognormal", "few values", "one value", "wide", "spike and tail"])
def test_block_percentiles_are_numpys_bit_for_bit(shape):
    # GIVEN latencies of one shape over five phases (and calls in none, phase -1), in blocks of 37
    rng = np.random.default_rng(7)
    n = 20_000
    phase = rng.integers(-1, 5, n)
    value = {"lognormal": lambda: rng.lognormal(7, 1.5, n).astype(np.int64),
             "few values": lambda: rng.integers(0, 4, n),
             "one value": lambda: np.full(n, 123_456),
             "wide": lambda: rng.integers(0, 2**40, n),
             "spike and tail": lambda: np.where(rng.random(n) < 0.995, 120, rng.integers(10**6, 10**9, n))}[shape]()
    # WHEN the percentiles are computed block by block
    got = quantiles.percentiles(blocks_of(phase, value, 37), 5, PERCENTS)
    # THEN they are np.percentile's on each phase's whole array, to the last bit
    assert got.tobytes() == by_numpy(phase, value, 5).tobytes()


def test_a_phase_without_calls_has_no_percentiles():
    # GIVEN three phases of which the middle one has no call
    phase, value = np.array([0, 0, 2]), np.array([5, 7, 9])
    # WHEN percentiles are asked for all three
    got = quantiles.percentiles(blocks_of(phase, value, 1), 3, PERCENTS)
    # THEN phase 1's are NaN and the others' are numbers
    assert np.isnan(got[1]).all() and not np.isnan(got[[0, 2]]).any()


def test_memory_is_counters_per_phase_not_per_call():
    # GIVEN one phase of a million calls whose latencies span 2^30 ns
    rng = np.random.default_rng(1)
    value = rng.integers(0, 2**30, 1_000_000)
    phase = np.zeros(len(value), dtype=np.int64)
    passes = []

    def blocks():
        passes.append(1)
        return ((phase[i:i + 65_536], value[i:i + 65_536]) for i in range(0, len(value), 65_536))
    # WHEN its percentiles are computed
    got = quantiles.percentiles(blocks, 1, PERCENTS)
    # THEN they are exact, after one pass for the extent and ceil(30 / BITS) passes of histograms
    assert got.tobytes() == by_numpy(phase, value, 1).tobytes()
    assert len(passes) == 1 + -(-30 // quantiles.BITS)


def _build_trace():
    return script("report_10m").build_trace


def test_report_percentiles_from_blocks_of_a_trace(tmp_path):
    # GIVEN an IOzone-shaped trace of 100 000 calls (4 processes, 2 rounds of write, rewrite,
    # read, reread, random read and write: 48 phases) and its in-memory report
    path = tmp_path / "iozone.iwt"
    _build_trace()(path, 100_000, children=4, rounds=2)
    trace = load(path)
    report = trace.report()
    calls = calls_of(report, trace.events)
    timed = calls.data & (calls.phase > 0) & ~phases.named(calls.syscall, phases.FAULTS)
    table = report.phases.set_index("phase")
    # WHEN the same calls' latencies are given in blocks of 1000 calls (every phase crosses blocks)
    got = quantiles.percentiles(blocks_of(np.where(timed, calls.phase, -1), calls.latency_ns, 1000),
                                int(table.index.max()) + 1, PERCENTS)
    # THEN each phase's p50 .. p99.9 are the report's, to the last bit
    columns = ["lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p99.9_us"]
    assert len(table) == 48
    assert got[table.index.to_numpy()].tobytes() == table[columns].to_numpy(np.float64).tobytes()


def test_no_phase_no_pass():
    # GIVEN no phase at all (a --summary trace has no call records)
    # WHEN percentiles are asked for
    got = quantiles.percentiles(lambda: iter(()), 0, PERCENTS)
    # THEN the answer is an empty table of the right width
    assert got.shape == (0, len(PERCENTS))


@pytest.mark.parametrize("seed", range(10))
def test_hundreds_of_fractions_are_np_quantile_bit_for_bit(seed):
    # GIVEN a few phases of lognormal latencies (or of three values), in blocks of 777
    rng = np.random.default_rng(seed)
    phases, n = int(rng.integers(1, 5)), int(rng.integers(1, 20_000))
    phase = rng.integers(0, phases, n)
    value = rng.integers(0, 3, n) if seed % 5 == 0 else rng.lognormal(8, 1.5, n).astype(np.int64)
    q = np.r_[np.linspace(0, 1, 401), 0.99]    # compare's latency curve and its p99

    def blocks():
        return ((phase[i:i + 777], value[i:i + 777]) for i in range(0, n, 777))
    # WHEN 402 quantiles of each phase are selected (many ranks per phase: looked up phase by phase)
    got = quantiles.quantiles(blocks, phases, q)
    # THEN each is np.quantile of the phase's values in µs, bit for bit
    for p in range(phases):
        mine = value[phase == p] / 1e3
        expected = np.quantile(mine, q) if len(mine) else np.full(len(q), np.nan)
        np.testing.assert_array_equal(got[p], expected)


@pytest.mark.parametrize("budget", [1 << 30, 4096], ids=["in memory", "spilled to files"])
def test_latency_store_percentiles_are_numpys_bit_for_bit(budget):
    # GIVEN lognormal latencies over six phases (phase 0 among them) added in blocks of 997,
    # one phase with one call, one phase without any; a budget that holds them all, or 512 calls
    from iowitness.analysis.phasing import latency_store

    rng = np.random.default_rng(11)
    n = 30_000
    phase = rng.integers(0, 6, n)
    phase[phase == 4] = 5
    phase[17] = 4
    value = (rng.lognormal(np.log(2_000), 1.2, n)).astype(np.int64)
    value[:50] = 7   # ties
    store = latency_store.Latencies(7, budget=budget)
    for i in range(0, n, 997):
        store.add(phase[i:i + 997], value[i:i + 997])
    extent = (np.bincount(phase, minlength=7),
              np.array([value[phase == p].min() if (phase == p).any() else np.iinfo(np.int64).max for p in range(7)]),
              np.array([value[phase == p].max() if (phase == p).any() else -1 for p in range(7)]))
    try:
        # WHEN its percentiles are taken
        got = store.percentiles(PERCENTS, extent)
        assert store.spilled == (budget == 4096)
    finally:
        store.close()
    # THEN they are np.percentile's of each phase's whole array, bit for bit (NaN for phase 6)
    want = by_numpy(phase, value, 7)
    assert np.array_equal(got, want, equal_nan=True)
