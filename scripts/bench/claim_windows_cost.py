#!/usr/bin/env python3
"""What judging claims in their windows on the output timeline costs: the claims of one trace
judged with their lines' times (analysis/judge/claim_windows.py) and with the times taken away (the
order fallback), alternately, N times each; median and range of each.

Usage: .venv/bin/python scripts/bench/claim_windows_cost.py TRACE [--spec SPEC] [--runs 5]
(an IOzone -a sweep makes a claim per test and record size: a window per result line.)
"""

from __future__ import annotations

import argparse
import statistics
import time

from iowitness.analysis.judge import trace_verdicts as judged
from iowitness.analysis.read.run import load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--spec")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    trace = load(args.trace)
    trace.report()
    source, claims = judged.claims_of(trace, spec=args.spec)
    times = [c.printed_ns for c in claims]
    if all(t is None for t in times):
        raise SystemExit("this trace has no output timeline: nothing to compare")
    judged.judge(trace, source, claims)   # warm: the evidence's passes are cached
    timed, untimed = [], []
    for _ in range(args.runs):
        for claim, t in zip(claims, times):
            claim.printed_ns = t
        start = time.perf_counter()
        judged.judge(trace, source, claims)
        timed.append(time.perf_counter() - start)
        for claim in claims:
            claim.printed_ns = None
        start = time.perf_counter()
        judged.judge(trace, source, claims)
        untimed.append(time.perf_counter() - start)
    print(f"{len(claims)} claims, {len(trace.report().phases)} phases, {args.runs} runs each")
    for name, values in (("windows", timed), ("by order", untimed)):
        print(f"{name:9} median {statistics.median(values):.3f} s (range {min(values):.3f}-{max(values):.3f} s)")


if __name__ == "__main__":
    main()
