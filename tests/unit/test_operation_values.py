"""A latency claim's values held as OperationValues (analysis/phasing/operation_values.py), in
memory and spilled to a file: every figure a band reads is numpy's own over the array of
seconds, bit for bit (numpy is the ground truth: the figures were numpy's before the values
left memory)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from iowitness.analysis.judge import latency
from iowitness.analysis.phasing import operation_values
from iowitness.analysis.phasing.operation_values import OperationValues
from iowitness.errors import OutputError

STATISTICS = ("mean", "stddev", "mdev", "min", "max", "median", "p1", "p5", "p90", "p99", "p99.5", "p99.9",
              "p99.99")


def _values(ns: np.ndarray, budget: int, block: int = 997) -> OperationValues:
    values = OperationValues(budget)
    for at in range(0, len(ns), block):
        values.add(ns[at:at + block])
    return values.finish()


@pytest.mark.parametrize("budget", [0, 8 * 5_000, 1 << 30])
@pytest.mark.parametrize("n", [1, 2, 129, 40_000])
def test_figures_and_bands_are_numpys_bit_for_bit_in_memory_and_spilled(monkeypatch, budget, n):
    # GIVEN latencies of a few µs with a long tail, added block by block, held in memory, spilled
    # at 5,000 values or spilled from the first; chunks of 1,000 values read back, so that
    # numpy's pairwise sum is rebuilt over many nodes
    monkeypatch.setattr(operation_values, "CHUNK", 1_000)
    rng = np.random.default_rng(n + budget)
    ns = (rng.lognormal(8.5, 0.6, n) + rng.integers(0, 3, n) * rng.pareto(1.5, n) * 1e4).astype(np.int64)
    seconds = ns / 1e9
    values = _values(ns, budget)
    assert values.spilled == (8 * n > budget)
    # WHEN each statistic's figure and band are asked of the values held, and of the array
    values.fetch(latency.ranks_read(n, STATISTICS))
    for name in STATISTICS:
        # THEN they are the same floats
        assert latency.figure(values, name) == latency.figure(seconds, name), name
        assert latency.band(values, name, 0.05) == latency.band(seconds, name, 0.05), name
    # AND without the first 7 (fio's ramp), likewise
    if n <= 7:
        return
    tail = values.tail(7)
    for name in STATISTICS:
        assert latency.figure(tail, name) == latency.figure(seconds[7:], name), name
        assert latency.band(tail, name, 0.05) == latency.band(seconds[7:], name, 0.05), name


@pytest.mark.parametrize("budget", [8_000, 1 << 20])
def test_a_value_set_later_lands_in_memory_or_in_the_file(budget):
    # GIVEN 3,000 values added 500 at a time, spilled after 1,000 (a budget of 8,000 bytes) or held
    ns = np.arange(3_000, dtype=np.int64) * 10
    values = OperationValues(budget)
    for at in range(0, 3_000, 500):
        values.add(ns[at:at + 500].copy())
    # WHEN values of the first block and of the last are given later
    values.set(10, 123_456)
    values.set(2_999, 7)
    values.finish()
    ns[10], ns[2_999] = 123_456, 7
    # THEN the values read back are those
    assert values.spilled == (budget == 8_000)
    assert values.at_ns([0, 1, 2_999]).tolist() == np.sort(ns)[[0, 1, 2_999]].tolist()
    assert values.mean() == float((ns / 1e9).mean())


def test_a_temporary_file_that_cannot_grow_is_one_error_saying_where_and_what_to_do():
    # GIVEN a process whose files may not grow past 4 KiB (RLIMIT_FSIZE: Python ignores SIGXFSZ,
    # so the write fails with EFBIG, as on a full $TMPDIR it fails with ENOSPC)
    code = ("import resource, numpy as np\n"
            "from iowitness.analysis.phasing.operation_values import OperationValues\n"
            "from iowitness.errors import OutputError\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
            "values = OperationValues(0)\n"
            "try:\n"
            "    values.add(np.arange(10_000, dtype=np.int64))\n"
            "except OutputError as exc:\n"
            "    print(exc, exc.exit_code)\n")
    # WHEN more than that is spilled
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    # THEN one error says where the file was, why it failed, and what to do
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert len(line.splitlines()) == 1 and "temporary file in" in line and "point TMPDIR at" in line, line
    assert line.endswith(f" {OutputError.exit_code}"), line
