"""A spec's latency of one call, over asynchronous requests: the trace times each request from
its submission to its reaping (io_submit to io_getevents, an io_uring entry to its completion),
while a benchmark that reads its clock around its own call (`timed = "call"` or `"call or
sync"`) times only the submission, and any wait for room in its queue. sysbench fileio
--file-io-mode=async does so: it printed "avg: 0.01" ms over requests the trace timed at 767 µs
from submission to reaping (a queue of 128). A statistic below the requests' own cannot be set
against them, and so is not DISAGREES but CANNOT JUDGE, saying why; one above them still
disagrees (no submission takes longer than its request).

Example: `apply(verdicts, report.phases)` after matching, after precision.py and room_bound.py
(which may still find such a figure agrees).
"""

from __future__ import annotations

import pandas as pd

from iowitness.analysis.judge.verdict_rules import Verdict, cannot_judge
from iowitness.analysis.measure.figures import fmt

CLOCKED_CALLS = ("call", "call or sync")   # a spec's clock around one call of the benchmark's


def apply(verdicts: list[Verdict], phases: pd.DataFrame) -> None:
    """Each disagreeing latency below its asynchronous requests' figure: cannot judge, why first."""
    if "async_ops" not in phases:
        return
    for verdict in verdicts:
        claim = verdict.claim
        if verdict.verdict != "disagrees" or verdict.kind != "latency" or claim.source != "spec" \
                or claim.extra.get("timed", "call") not in CLOCKED_CALLS or claim.seconds_per_op is None:
            continue
        submitted = int(phases.loc[phases["phase"].isin(verdict.phases), "async_ops"].sum())
        active = next(iter(verdict.figures.values()), float("nan"))
        if not submitted or not claim.seconds_per_op < active:
            continue
        name = claim.extra.get("statistic", "mean")
        cannot_judge(verdict, f"{name}: claim {fmt(claim.seconds_per_op, 'latency')}, below the trace's "
                              f"{fmt(active, 'latency')}, but the phases' {submitted:,} requests are asynchronous: "
                              "the trace times each from its submission to its reaping, a clock around the "
                              "benchmark's own call only the submission (and any wait for room in its queue), "
                              "which the trace does not time apart")
