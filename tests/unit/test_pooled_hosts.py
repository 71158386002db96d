"""Every host's requests pooled on one clock from the hosts' own reports (analysis/runs/pooled_hosts.py):
what fio's all-clients latency is judged on, without a second reading of every host's events.

Ground truth: each host's events as the in-memory reader gives them (iowitness.load), moved by
hand and sorted stably by start time; and the merged trace (analysis/runs/merged_trace.py, itself
held to the same ground truth by test_merged_trace.py), whose phases and order the pooling must
give."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.benchmarks import fio_hosts
from iowitness.analysis.read import stream_events
from iowitness.analysis.read.run import load
from iowitness.analysis.runs import merged_trace, pooled_hosts
from tests.support.hosts import opened_hosts
from tests.support.trace_mutants import dd_events, write_dd_trace


def _write_hosts(tmp_path, count: int):
    """`count` hosts' traces: two threads writing at once (the second's calls start at the same
    nanoseconds as the first's), every call's latency its own."""
    paths = [tmp_path / f"{k}.iwt" for k in range(count)]
    rng = np.random.default_rng(29)
    for path in paths:
        events = dd_events()
        events["start_ns"][2::2] = events["start_ns"][1::2][:len(events[2::2])]
        events["tid"][2::2] += 1
        events["latency_ns"] = rng.integers(1_000, 90_000, len(events))
        write_dd_trace(path, events)
    return paths


def _writes_in_pooled_order(paths, shifts_ns) -> np.ndarray:
    """Every host's write latencies (ns), in stable time order of their moved starts."""
    starts, latencies = [], []
    for path, shift in zip(paths, shifts_ns):
        events = load(path).events
        writes = (events["syscall"].astype(str) == "write").to_numpy()
        starts.append(events["start_ns"].to_numpy().astype(np.int64)[writes] + shift)
        latencies.append(events["latency_ns"].to_numpy().astype(np.int64)[writes])
    order = np.argsort(np.concatenate(starts), kind="stable")
    return np.concatenate(latencies)[order]


@pytest.mark.parametrize("shift_ns", [1, 150_000, 40_000_000], ids=["one ns apart", "interleaved", "one after"])
@pytest.mark.parametrize("block_rows", [64, stream_events.BLOCK_ROWS])
def test_pooled_phases_and_requests_are_the_merged_traces(tmp_path, shift_ns, block_rows):
    # GIVEN three hosts' traces of two writing threads each, their clocks `shift_ns` apart
    paths = _write_hosts(tmp_path, 3)
    shifts = [0, shift_ns, 2 * shift_ns]
    with opened_hosts(paths, shifts, block_rows) as traces:
        # WHEN every host's phases and requests are pooled from the hosts' own reports
        with pooled_hosts.open_pooled(traces, ["dd"], "cluster") as pooled:
            assert pooled.numbers is not None   # no tie: the hosts' reports say the numbers
            rows = [pooled.rows_of(k, t.report().phases) for k, (_, t) in enumerate(traces)]
            numbers = [int(p) for r in rows for p in r["phase"]]
            calls = pooled.report.evidence.operation_values(numbers, "call", "write")
            around = pooled.report.evidence.operation_values(numbers, "around", "write")
            calls_ns, around_ns = calls.ns_at(0, len(calls)), around.ns_at(0, len(around))
        # THEN each request's latency comes in the time order of their starts on the common clock
        expected = _writes_in_pooled_order(paths, shifts)
        assert len(expected) == 3 * 200
        np.testing.assert_array_equal(calls_ns, expected)
        # AND the phases, their numbers, times and the gaps around each request are the merged trace's
        with merged_trace.open_merged(traces, ["dd"], "cluster", stretches=False) as merged:
            table = merged.trace.report().phases
            assert sorted(numbers) == list(range(1, len(table) + 1)) == sorted(table["phase"])
            for k, (_, t) in enumerate(traces):
                mine = merged_trace.phases_of(merged.trace, merged.where[k], t.report().phases)
                assert rows[k]["phase"].tolist() == mine["phase"].tolist()
                assert rows[k]["data_first_ns"].tolist() == mine["data_first_ns"].tolist()
                assert rows[k]["tid"].tolist() == mine["tid"].tolist()
            evidence = merged.trace.report().evidence
            merged_around = evidence.operation_values(numbers, "around", "write")
            np.testing.assert_array_equal(around_ns, merged_around.ns_at(0, len(merged_around)))
            merged_calls = evidence.operation_values(numbers, "call", "write")
            assert calls.mean() == merged_calls.mean() and calls.std(1) == merged_calls.std(1)


def test_hosts_numbered_by_calls_at_the_same_nanosecond_are_pooled_by_the_merged_trace(tmp_path):
    # GIVEN two hosts whose phases start at the same nanoseconds on the common clock (the merged
    # trace orders them by their streams' first appearance, which the hosts' reports do not say)
    paths = _write_hosts(tmp_path, 2)
    with opened_hosts(paths, [0, 0]) as traces:
        # WHEN they are pooled
        with pooled_hosts.open_pooled(traces, ["dd"], "cluster") as pooled:
            # THEN the pooled trace is the merged trace itself, and its requests are every host's
            assert pooled.numbers is None and pooled.merged is not None
            rows = [pooled.rows_of(k, t.report().phases) for k, (_, t) in enumerate(traces)]
            numbers = [int(p) for r in rows for p in r["phase"]]
            assert sorted(numbers) == list(range(1, 5))
            calls = pooled.report.evidence.operation_values(numbers, "call", "write")
            np.testing.assert_array_equal(calls.ns_at(0, len(calls)), _writes_in_pooled_order(paths, [0, 0]))


def test_a_hosts_fio_log_files_keep_the_pooled_trace_from_the_hosts_reports():
    # GIVEN two fio hosts whose traces opened a data file, and on one host a job writing fio's
    # latency log (one of fio's own files: in no phase of that host, but a phase of a trace
    # whose command names no job, as the pooled trace's)
    def host(command, paths):
        trace = SimpleNamespace(meta={"command": command, "cwd": "/srv"}, files=pd.DataFrame({"path": paths}))
        return SimpleNamespace(trace=trace)

    plain = host(["fio", "--name=r", "--rw=randread"], ["/srv/data.bin"])
    logging = host(["fio", "--name=r", "--rw=randread", "--write_lat_log=lat"], ["/srv/data.bin", "/srv/lat_lat.1.log"])
    # WHEN asked whether the pooled trace's phases are the hosts' own
    # THEN yes for the plain hosts, no once a host's log file would be a phase of the pooled trace
    assert fio_hosts._same_own_files([plain, plain], fio_hosts.POOLED_ARGV)
    assert not fio_hosts._same_own_files([plain, logging], fio_hosts.POOLED_ARGV)
