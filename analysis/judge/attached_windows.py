"""A window that begins where an attached trace begins: its first tests may be before the trace.

A benchmark that prints all its results at its end, attached after its first tests, prints
every line into one window, from the trace's start (the attach) to the end. Matched by order,
the line of a test that ended before the attach would take the first phase the trace has (a
later test's), and every later line the phase after its own. The tests the window's lines name
run in the order printed; those the trace saw are the last ones. So, per direction, when the
window's lines name more tests than the window has phases in that direction, the surplus
tests at the window's front are "before the trace" (CANNOT JUDGE, no phase), and the others are
matched in order to the phases that remain, each to its own.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from iowitness.analysis.judge.claim import Claim

BEFORE = ("before the trace: this line comes {k} of {n} {direction} tests printed together at the end, and the "
          "trace (attached mid-run) has {phases} {direction} phase(s) in the window: the first tests ran before the "
          "attach and their calls are not in the trace")


def mark_surplus(claims: list[Claim], windows: dict, phases: pd.DataFrame) -> None:
    """Mark in `windows` (claim_windows.windows_of's, changed in place) the spec claims whose
    test, in a window from the trace's start, is one of the surplus tests at its front."""
    from iowitness.analysis.judge.claim_windows import Window, _identity

    groups: dict[tuple, list[int]] = {}
    for i, c in enumerate(claims):
        w = windows.get(i)
        if (w is None or w.start_ns is not None or w.before_trace or c.source != "spec"
                or c.extra.get("requests") or c.extra.get("scope") == "run" or c.extra.get("rank")
                or c.extra.get("match", "order") != "order" or c.direction not in ("read", "write")):
            continue
        groups.setdefault((w.burst, c.direction), []).append(i)
    for (_, direction), members in groups.items():
        tests: list[tuple] = []
        for i in members:
            if _identity(claims[i]) not in tests:
                tests.append(_identity(claims[i]))
        end = max(windows[i].end_ns for i in members)
        inside = phases[(phases["data_last_ns"] <= end) & phases["operation"].isin([direction, "mixed"])]
        steps = inside["group"].nunique() if "group" in inside else len(inside)
        surplus = len(tests) - steps
        if surplus <= 0:
            continue
        early = set(tests[:surplus])
        for i in members:
            if _identity(claims[i]) in early:
                k = tests.index(_identity(claims[i])) + 1
                edge: Window = windows[i]
                windows[i] = replace(edge, before_trace=BEFORE.format(k=k, n=len(tests), direction=direction,
                                                                   phases=steps))
