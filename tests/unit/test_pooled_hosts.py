"""Every host's requests pooled on one clock from the hosts' own reports (analysis/runs/pooled_hosts.py):
what fio's all-clients latency is judged on, without a second reading of every host's events.

Ground truth: each host's events as the in-memory reader gives them (iowitness.load), moved by
hand and sorted stably by start time; and the merged trace (analysis/runs/merged_trace.py, itself
held to the same ground truth by test_merged_trace.py), whose phases and order the pooling must
give."""

from __future__ import annotations

import numpy as np
import pytest

from iowitness.analysis.measure import stream_evidence
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


@pytest.mark.parametrize("earlier_stream", [0, 1], ids=["the earlier host's stream first", "the later host's"])
def test_hosts_numbered_by_calls_at_the_same_nanosecond_are_numbered_as_the_merged_trace(tmp_path, earlier_stream):
    # GIVEN two hosts whose phases start at the same nanoseconds on the common clock, within a
    # host too (two threads), and whose first streams appeared first on host `earlier_stream`
    # (its open 1 us earlier): the merged trace orders tied phases by their streams' first
    # appearance in the merged events, the earlier host first at a tie
    paths = _write_hosts(tmp_path, 2)
    if earlier_stream:
        events = load(paths[1]).events
        records = dd_events()
        records["start_ns"][2::2] = records["start_ns"][1::2][:len(records[2::2])]
        records["tid"][2::2] += 1
        records["latency_ns"] = events["latency_ns"].to_numpy()
        records["start_ns"][0] -= 1_000
        write_dd_trace(paths[1], records)
    with opened_hosts(paths, [0, 0]) as traces:
        # WHEN they are pooled from the hosts' own reports
        with pooled_hosts.open_pooled(traces, ["dd"], "cluster") as pooled:
            rows = [pooled.rows_of(k, t.report().phases) for k, (_, t) in enumerate(traces)]
            numbers = [int(p) for r in rows for p in r["phase"]]
            calls = pooled.report.evidence.operation_values(numbers, "call", "write")
            calls_ns = calls.ns_at(0, len(calls))
        # THEN every host's requests come in stable time order of their starts
        np.testing.assert_array_equal(calls_ns, _writes_in_pooled_order(paths, [0, 0]))
        # AND the phases' numbers are the merged trace's: the ties ordered by the streams
        with merged_trace.open_merged(traces, ["dd"], "cluster", stretches=False) as merged:
            assert sorted(numbers) == list(range(1, len(merged.trace.report().phases) + 1))
            for k, (_, t) in enumerate(traces):
                mine = merged_trace.phases_of(merged.trace, merged.where[k], t.report().phases)
                assert rows[k]["phase"].tolist() == mine["phase"].tolist()
                assert rows[k]["tid"].tolist() == mine["tid"].tolist()
        # (each host's first thread's phase, the host of the earlier open first, then the second threads')
        first, second = earlier_stream, 1 - earlier_stream
        assert rows[first]["phase"].tolist()[0] == 1 and rows[second]["phase"].tolist()[0] == 2


def test_a_hosts_requests_ride_along_in_the_pass_of_their_latencies(tmp_path):
    # GIVEN a host's trace of two writing threads, its evidence told what the pooling will ask
    [path] = _write_hosts(tmp_path, 1)
    events = load(path).events
    writes = (events["syscall"].astype(str) == "write").to_numpy()
    with opened_hosts([path], [0], 64) as [(_, trace)]:
        evidence = trace.report().evidence
        evidence.pooled_with = pooled_hosts.POOLED_WITH
        phases = [int(p) for p in trace.report().phases["phase"]]
        # WHEN the latencies are asked (as fio's matcher asks them: one pass)
        evidence.ask([stream_evidence.values_question(phases[::-1], "call", "write")])
        # THEN their start times and the gaps around them were answered in that pass, to a file,
        # and are the events' own: each write's start, one per latency, in the same order
        starts = evidence.operation_values(phases, "start", "write")
        calls = evidence.operation_values(phases, "call", "write")
        around = evidence.operation_values(phases, "around", "write")
        assert starts.spilled and around.spilled and not calls.spilled
        np.testing.assert_array_equal(starts.ns_at(0, len(starts)),
                                      events["start_ns"].to_numpy().astype(np.int64)[writes])
        np.testing.assert_array_equal(calls.ns_at(0, len(calls)),
                                      events["latency_ns"].to_numpy().astype(np.int64)[writes])
    # AND the gaps are those the same question gives asked alone
    with opened_hosts([path], [0], 64) as [(_, trace)]:
        alone = trace.report().evidence.operation_values(phases, "around", "write")
        np.testing.assert_array_equal(around.ns_at(0, len(around)), alone.ns_at(0, len(alone)))
