"""Every host's requests pooled on one clock, from the hosts' own reports: the phases and the
requests' values the merged trace (analysis/runs/merged_trace.py) would give, without reading and
phasing every host's events a second time.

The merged trace's phases are the hosts' own (a phase is one thread's, and each thread is one
host's), numbered 1.. by the start of the call that numbers each (analysis/phasing/stream_assign.py),
across the hosts on the common clock; its requests come in time order, at equal start times the
earlier host's first (merged_trace.in_time_order). So here a host's phase keeps its rows, moved
to the common clock and given the pooled number, and a question of requests takes each host's
own values (the host's verdict asked them already) merged by their start times.

    with pooled_hosts.open_pooled(traces, argv, "cluster") as pooled:
        rows = pooled.rows_of(k, host_rows)          # host k's phases as the pooled trace's rows
        pooled.report.evidence.operation_values(list(rows["phase"]), "call", "read")
        pooled.trace.missing

Two hosts' phases numbered by calls that started at the same nanosecond are ordered as the merged
trace orders them: by their streams' first appearance in the merged events (each stream's first
event on the common clock, the earlier host first at a tie), which each host's report says
(Report.phase_keys_ns). The pooled trace's phases are the hosts' own whatever its command line:
a benchmark's own files (fio's logs, told apart by each host's command line) are in no phase
of their host, so in none of the pooled trace's.

Memory: a number per phase of each host, and a block of each host's requests while merged; the
values in memory up to their budget, past it in a temporary file (analysis/phasing/operation_values.py).
Cost: none of its own over the hosts' events; their start times and the gaps around them come in
the pass that reads their latencies for the host's own verdicts (POOLED_WITH).
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from iowitness.analysis.measure import stream_evidence
from iowitness.analysis.phasing.operation_values import OperationValues
from iowitness.analysis.runs import merged_trace

# the phase table's columns that are times (moved to the common clock) and process numbers (lifted)
TIME_COLUMNS = ("first_ns", "last_ns", "data_first_ns", "data_last_ns", "sync_end_ns", "close_end_ns")
PROCESS_COLUMNS = ("tid", "tgid", "first_tid", "first_tgid")


@dataclass
class _PooledReport:
    evidence: object   # what fio_latency.judge asks of a report: operation_values


@dataclass
class Pooled:
    """Every host's phases and requests as one trace's: `trace` (meta, missing), `report`
    (its evidence), `rows_of` (a host's phase rows as the pooled trace's)."""
    trace: object
    report: object
    where: list       # per host: its Placement on the common clock
    numbers: list     # per host: pooled number by host phase number

    def rows_of(self, k: int, host_rows: pd.DataFrame) -> pd.DataFrame:
        place, rows = self.where[k], host_rows.copy()
        for column in TIME_COLUMNS:
            if column in rows:
                rows[column] = rows[column] + place.shift_ns
        if place.lift:
            for column in PROCESS_COLUMNS:
                if column in rows:
                    rows[column] = rows[column] + place.lift
        rows["phase"] = self.numbers[k][rows["phase"].to_numpy(np.int64)]
        return rows


@contextmanager
def open_pooled(traces: list, argv: list[str], mode: str, requests: list | None = None):
    """The (path, trace) pairs (each opened block by block, its report built) pooled on one
    clock (see the module's text), valid until the `with` ends. `requests`: per host, where its
    requests come from (report_requests, the default: its report in this process; or
    saved_requests: written by the host's own process)."""
    sources = [t.source for _, t in traces]
    reports = [t.report() for _, t in traces]
    data, where, _ = merged_trace.merged_data([(p, s.trace_data) for (p, _), s in zip(traces, sources)],
                                              [s.processes for s in sources], argv, mode)
    numbers = _numbers([r.phase_keys_ns for r in reports], where)
    trace = merged_trace.MergedTrace(data, sum(s.event_count for s in sources))
    requests = requests or [report_requests(r) for r in reports]
    yield Pooled(trace, _PooledReport(PooledEvidence(requests, numbers, where)), where, numbers)


def _numbers(keys_ns: list[np.ndarray], where: list) -> list[np.ndarray]:
    """Per host, the pooled number of each of its phases (index: the host's number), as the
    merged trace numbers them (analysis/phasing/stream_assign.py): by the start of the call that
    numbers each on the common clock; at a tie, by its stream's first appearance in the merged
    events (its first event's start on the common clock, then the earlier host), then by the
    host's own order (its streams' order, then the calls')."""
    moved = [np.asarray(k[1:], np.int64) + place.shift_ns for k, place in zip(keys_ns, where)]
    start = np.concatenate([m[:, 0] for m in moved])
    stream = np.concatenate([m[:, 1] for m in moved])
    host = np.concatenate([np.full(len(m), i) for i, m in enumerate(moved)])
    local = np.concatenate([np.arange(1, len(m) + 1) for m in moved])
    pooled = np.empty(len(start), np.int64)
    pooled[np.lexsort((local, host, stream, start))] = np.arange(1, len(start) + 1)
    return [np.r_[np.int64(-1), pooled[host == i]] for i in range(len(moved))]


class PooledEvidence:
    """The pooled trace's requests (StreamedEvidence.operation_values' questions), each host's
    own values merged in the merged trace's order."""

    def __init__(self, requests: list, numbers: list[np.ndarray], where: list):
        self._requests, self._numbers, self._where = requests, numbers, where
        self._cache: dict = {}

    def operation_values(self, phases: list[int], timed: str, direction: str | None,
                         low: int | None = None) -> OperationValues:
        # one value per data call (a request, or the gap around it: each thread's own calls,
        # all of one host): the merge changes their order only
        assert timed in QUESTIONS and low is None, (timed, low)
        key = (tuple(int(p) for p in phases), timed, direction)
        if key not in self._cache:
            parts = []
            for k, requests in enumerate(self._requests):
                mine = [int(n) for n in np.flatnonzero(np.isin(self._numbers[k], list(key[0])))]
                if mine:
                    parts.append(_moved(requests(mine, timed, direction), self._where[k].shift_ns))
            pooled = OperationValues()
            for block in merged_trace.in_time_order(parts):
                pooled.add(block["ns"])
            self._cache[key] = pooled.finish()
        return self._cache[key]


# what the pooled trace is asked of its requests (fio_latency.judge): each request's latency, and
# the time around it (from its thread's previous call's end to its next call's start)
QUESTIONS = ("call", "around")
# what each host's evidence answers with its requests' latencies, in the same pass
# (StreamedEvidence.pooled_with): their start times, and the time around each
POOLED_WITH = ("start", "around")


def _moved(blocks, shift_ns: int):
    for block in blocks:
        yield {"start_ns": block["start_ns"] + shift_ns, "ns": block["ns"]}


def report_requests(report):
    """A host's requests of a question from its report (built in this process), block by block:
    each one's start time (the host's clock) and value, in the host's order."""
    def requests(phases: list[int], timed: str, direction: str | None):
        starts = report.evidence.operation_values(phases, "start", direction)
        values = report.evidence.operation_values(phases, timed, direction)
        if len(starts) != len(values):
            raise ValueError(f"pooled_hosts: {len(starts)} requests read, {len(values)} values asked")
        for at in range(0, len(values), SAVED_CHUNK):
            n = min(SAVED_CHUNK, len(values) - at)
            yield {"start_ns": starts.ns_at(at, n), "ns": values.ns_at(at, n)}
    return requests


def save_requests(report, questions: list[tuple[list[int], str | None]], folder: str) -> dict:
    """In a host's own process (analysis/runs/host_workers.py): every QUESTIONS of each (phases,
    direction) asked of its report and written to files in `folder`, the start times once per
    (phases, direction); for saved_requests in the command's process. 8 bytes a request per file."""
    saved: dict = {}
    # in one pass when the host's own verdicts did not ask them
    report.evidence.ask([stream_evidence.values_question(phases, timed, direction) for phases, direction in questions
                         for timed in ("start", *QUESTIONS)])
    for phases, direction in questions:
        phases = sorted(int(p) for p in phases)
        starts_path, count = _written(report.evidence.operation_values(phases, "start", direction), "starts-", folder)
        for timed in QUESTIONS:
            values_path, asked = _written(report.evidence.operation_values(phases, timed, direction), f"{timed}-",
                                          folder)
            if asked != count:
                raise ValueError(f"pooled_hosts: {count} requests read, {asked} values asked")
            saved[(tuple(phases), timed, direction)] = (starts_path, values_path, count)
    return saved


def _written(values, prefix: str, folder: str) -> tuple[str, int]:
    """`values` (OperationValues) written to a new file in `folder`: its path and their count."""
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".i8", dir=folder)
    with os.fdopen(fd, "wb") as out:
        for at in range(0, len(values), SAVED_CHUNK):
            out.write(values.ns_at(at, min(SAVED_CHUNK, len(values) - at)).tobytes())
    return path, len(values)


def saved_requests(saved: dict):
    """A host's requests as save_requests wrote them, block by block."""
    def requests(phases: list[int], timed: str, direction: str | None):
        starts_path, values_path, count = saved[(tuple(phases), timed, direction)]
        for at in range(0, count, SAVED_CHUNK):
            n = min(SAVED_CHUNK, count - at)
            yield {"start_ns": np.fromfile(starts_path, np.int64, n, offset=8 * at),
                   "ns": np.fromfile(values_path, np.int64, n, offset=8 * at)}
    return requests


SAVED_CHUNK = 1 << 20   # requests read or written at a time (8 MiB a file)
