"""dd's figure held to the edges of its clock (analysis/judge/rate_edges.py), on a real trace
(tests/data/traces/README.md): dd reads its clock after opening its output and again after it
prints "records in/out", so a wait for a CPU there is inside its clock and no call shows it."""

from __future__ import annotations

from pathlib import Path

from iowitness import load
from iowitness.analysis.judge import trace_verdicts

TRACE = Path(__file__).resolve().parents[1] / "data" / "traces" / "dd_preempted_at_edge.iwt"


def test_a_dd_preempted_at_the_edge_of_its_clock_is_explained_by_the_wait():
    trace = load(str(TRACE))
    [verdict] = trace_verdicts.verdicts(trace)
    # dd's own line: 268435456 bytes over 0.302776 s; the writes alone span 281.4 ms (0.929x)
    assert verdict.claim.extra["bytes"] == 256 << 20 and 0.92 < verdict.ratio < 0.94, verdict
    assert verdict.verdict == "explained", verdict.reasons
    why = verdict.reasons[0]
    assert why.startswith("preempted at the edge: the thread waited 20.9 ms for a CPU"), why
