#!/usr/bin/env python3
"""What probe_compare.py needs from one trace, printed as JSON, by whichever iowitness imports.

Run by scripts/bench/probe_compare.py under the Python path of the tree that wrote the trace
(the working tree's, or an older commit's: its reader, not today's, knows its format):

    python trace_window.py TRACE  ->  {"window": [first_s, last_s] | null, "lost": N,
                                       "not_followed": N, "collector_cpu_s_per_m": S | null,
                                       "programs": {name: {run_time_ns, run_cnt}}}

window: the first and last call the trace saw (CLOCK_MONOTONIC seconds); programs: the
kernel's own statistics of the probe's programs (struct bpf_prog_info) as the collector stored
them, taken only while BPF statistics were on.
"""

from __future__ import annotations

import json
import sys

try:
    from iowitness.analysis.read.run import load
except ImportError:   # trees before the analysis/collector split
    from iowitness.collector.trace import load


def main() -> int:
    trace = load(sys.argv[1])
    counters = trace.counters or {}
    window = None
    if getattr(trace, "summary", None) is not None and len(trace.summary):
        first, last = trace.summary["first_start_ns"], trace.summary["last_end_ns"]
        window = [float(first[first > 0].min()) / 1e9, float(last.max()) / 1e9]
    elif trace.event_count:
        start = trace.events["start_ns"].to_numpy()
        window = [float(start.min()) / 1e9, float(start.max()) / 1e9]
    programs = (counters.get("probe_cost") or {}).get("programs") or {}
    try:   # the collector's CPU while it recorded, per million calls (analysis/measure/observer.py)
        from iowitness.analysis.measure import observer
        collector = observer.cost(trace).get("collector_cpu_s_per_m")
    except (ImportError, KeyError, TypeError, ValueError, ZeroDivisionError):
        collector = None
    print(json.dumps({"window": window, "lost": int(trace.lost), "events": int(trace.event_count),
                      "not_followed": int(counters.get("requests_not_followed", 0)),
                      "collector_cpu_s_per_m": collector,
                      "programs": {n: {"run_time_ns": int(p.get("run_time_ns", 0)), "run_cnt": int(p.get("run_cnt", 0))}
                                   for n, p in programs.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
