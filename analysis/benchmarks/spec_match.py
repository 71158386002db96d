"""Which phases each claim of a spec (analysis/benchmarks/spec.py) is about, and how a
latency claim is judged: the matching rules of docs/claims-spec.md, in code.

  order      the k-th test of the output is about the k-th phase in time order (concurrent
             phases of one test are one step): a claim is a new test unless it shares one
             (below)
  name       the k-th claim of a phase name is about the k-th phase so named
  operation  the k-th claim of an (operation, access) is about the k-th phase with them
  record_size  only phases of that record size count, for either of the above
  rank       the rank-th phase that fits (1-based), whatever claims came before

Claims about the same test share their phases: those with the same `key`; else a claim read
from the same line as the one before it with the same test name (a line's ops/s and us/op),
or with the same test name and a unit (or latency statistic) not yet given for it (a test's
IOPS and its MB/s on two lines, its min/avg/max). Figures of one line with different test
names (a CSV line) are different tests.

A latency claim (seconds per operation) is judged by analysis/judge/latency.py over the operations
it names; a benchmark's per-request lines (`requests = true`) are judged together, once.
"""

from __future__ import annotations

import math
from collections import defaultdict

import pandas as pd

from iowitness.analysis.judge import latency, request_anchor
from iowitness.analysis.judge.claim import Claim, Match
from iowitness.analysis.judge.verdict_rules import claimed
from iowitness.analysis.measure.figures import figures_of


def matcher(report, claims: list[Claim], argv: list[str], trace=None):
    phases = report.phases
    seen: dict[tuple, int] = defaultdict(int)
    chosen: dict[tuple, Match] = {}
    current = {"key": ("claims", 0), "claim": None, "units": set(), "number": 0}
    by_name: dict[str, tuple] = {}   # test name -> (its key, what it stated), for claims on the timeline
    # per-request lines: every line of one [[claim]] table (or column) is one set, judged once
    request_sets: dict[tuple, list[Claim]] = defaultdict(list)
    for claim in claims:
        if claim.extra.get("requests"):
            request_sets[_request_set(claim)].append(claim)

    def same_test(claim: Claim) -> tuple:
        if claim.extra.get("key"):
            return ("key", claim.extra["key"])
        before = current["claim"]
        # what a test states once: a unit, or a latency statistic in it
        said = (claim.unit, "requests" if claim.extra.get("requests") else claim.extra.get("statistic"),
                claim.extra.get("column"))
        named = by_name.get(claim.test)
        if claim.printed_ns is not None and named is not None and said not in named[1]:
            # on the timeline, a window's claims of one test name are one test, whatever came
            # between them (a summary's "elapsed" line after the other tests' rates)
            named[1].add(said)
            current["claim"], current["key"], current["units"] = claim, named[0], named[1]
            return named[0]
        if before is not None and before.test == claim.test and (
                before.printed == claim.printed or said not in current["units"]
                or (claim.extra.get("requests") and before.extra.get("requests"))):
            current["units"].add(said)
        else:
            current["number"] += 1
            current["key"], current["units"] = ("claims", current["number"]), {said}
        current["claim"] = claim
        by_name[claim.test] = (current["key"], current["units"])
        return current["key"]

    def find(claim: Claim) -> Match | None:
        key = same_test(claim)
        if key not in chosen:
            chosen[key] = _widen(claim, _rows(claim, phases, seen), phases)
        found = chosen[key]
        value, kind = claimed(claim)
        if kind != "latency" or trace is None:
            return found
        if claim.extra.get("requests"):
            members = request_sets[_request_set(claim)]
            if claim is not members[0]:
                return None      # judged with the first request of its set
            start_ns, shift, start_why = _first_request(members, found.rows, report)
            return Match(found.rows, start_ns=start_ns, start_why=start_why,
                         judge=lambda window, tolerance, missing, rows=found.rows, members=members, shift=shift,
                         why=start_why: latency.judge_requests(members, rows, trace, report, tolerance, missing,
                                                               shift, why if shift else ""))
        # the same test's per-request lines carry the run's own seam (ioping's summary); on the
        # timeline they are matched apart, and the window's view hands them over
        lines = [c for c in getattr(report, "request_lines", None) or [c for s in request_sets.values() for c in s]
                 if c.test == claim.test and c.direction == claim.direction]
        lines = [c for c in lines if _request_set(c) == _request_set(lines[0])] if lines else None
        # a summary of the requests those lines print is about the same operations: from the first
        start_ns, _, start_why = _first_request(lines, found.rows, report) if lines else (None, 0, "")
        if start_ns is None and not lines and claim.extra.get("count") is not None:
            # no request line: its count_line says how many operations it counted, its last ones
            start_ns, start_why = request_anchor.counted_start(claim, [int(p) for p in found.rows["phase"]], report)
        return Match(found.rows, start_ns=start_ns, start_why=start_why,
                     judge=lambda window, tolerance, missing, rows=found.rows:
                     latency.judge(claim, rows, trace, report, tolerance, missing, lines))

    return find


def _first_request(lines: list[Claim], rows: pd.DataFrame, report) -> tuple[int | None, int, str]:
    """Where the benchmark's requests begin in the phases, as its request lines' times show
    (judge/request_anchor.py): (start, shift of their numbers, why); (None, 0, "") when the
    lines show the phases hold their requests alone."""
    return request_anchor.first_request(lines, [int(p) for p in rows["phase"]], report) or (None, 0, "")


def _request_set(claim: Claim) -> tuple:
    return (claim.extra.get("rule"), claim.extra.get("column"), claim.test)


def _rows(claim: Claim, phases: pd.DataFrame, seen) -> pd.DataFrame:
    how = claim.extra.get("match", "order")
    ordered = phases.sort_values("data_first_ns")
    direction = ""
    if how == "name":
        phase_name = claim.extra.get("phase", claim.test)
        rows = ordered[(ordered["benchmark_name"].astype(object) == phase_name) | (ordered["name"] == phase_name)]
    elif how == "operation":
        operation = claim.extra.get("operation", claim.direction)
        rows = ordered[ordered["operation"] == operation]
        if not len(rows) and operation in ("read", "write") and operation == claim.direction:
            # a test that reads and writes at once (sysbench's rndrw) has mixed phases only: a
            # read claim is about their reads, counted apart from their writes
            rows = ordered[ordered["operation"] == "mixed"]
        if claim.extra.get("pattern"):
            rows = rows[rows["pattern"] == claim.extra["pattern"]]
    else:
        rows = ordered
        if claim.printed_ns is not None and claim.direction in ("read", "write"):
            # inside a window on the timeline, a read claim is about the window's reads, counted
            # apart from its writes (ioping's summary of reads after its file's preparation)
            same = rows[rows["operation"] == claim.direction]
            if not len(same):
                same = rows[rows["operation"] == "mixed"]
            if len(same):
                rows, direction = same, claim.direction
    size = claim.extra.get("record_size")
    if size is not None:
        rows = rows[rows["record_size"] == size]
    if claim.extra.get("scope") in ("auto", "concurrent") and how == "order" and len(rows):
        # in order of tests: concurrent phases of one test are one step, not several
        rows = rows.drop_duplicates("group")
    if claim.extra.get("rank"):
        k = claim.extra["rank"] - 1
        return rows.iloc[k:k + 1]
    key = ("spec", how, size, claim.extra.get("phase", claim.test) if how == "name"
           else (claim.extra.get("operation", claim.direction), claim.extra.get("pattern")) if how == "operation"
           else direction)
    k = seen[key]
    seen[key] += 1
    return rows.iloc[k:k + 1]


def _widen(claim: Claim, rows: pd.DataFrame, phases: pd.DataFrame) -> Match:
    """The phases a claim speaks for, from the one its match found (docs/claims-spec.md, scope)."""
    scope = claim.extra.get("scope", "auto")
    if scope in ("run", "window"):
        # "mixed" over a run: all its reads and writes, not only its mixed phases ("window": the
        # phases here are its window's, claim_windows.finder)
        wanted = phases if claim.direction in (None, "mixed") else \
            phases[phases["operation"].isin([claim.direction, "mixed"])]
        return Match(wanted.sort_values("data_first_ns"), combine=_combine(claim))
    if scope == "phase" or len(rows) != 1:
        return Match(rows)
    concurrent = phases[phases["group"] == rows.iloc[0]["group"]].sort_values("data_first_ns")
    if len(concurrent) < 2:
        return Match(rows)
    if scope == "concurrent" or _fits_better(claim, concurrent, rows):
        return Match(concurrent, combine=_combine(claim))
    return Match(rows)


def _combine(claim: Claim) -> str:
    """How a figure over several phases adds up: all of them over their wall time, or each
    process's own figure added up (spec sum_of = "processes", figures.figures_of)."""
    return "processes" if claim.extra.get("sum_of") == "processes" else "wall"


def _fits_better(claim: Claim, concurrent: pd.DataFrame, one: pd.DataFrame) -> bool:
    """The claim's figure is nearer the concurrent set's (all its bytes over its wall time)
    than the one phase's: a total over the threads or files of a test."""
    value, kind = claimed(claim)
    if value is None or value <= 0 or kind in ("latency", "elapsed"):
        return False
    together = figures_of(concurrent, claim.direction, kind, "wall").get("calls")
    alone = figures_of(one, claim.direction, kind).get("calls")
    if not together or not alone or together != together or alone != alone:
        return False
    return abs(math.log(value / together)) < abs(math.log(value / alone))
