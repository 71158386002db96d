"""Rebuild the benchmark's phases from a trace: names, patterns, rates, latency, outliers.

Each phase is a stretch of one file in one thread with one operation and access pattern.
IOzone, fio and dd runs get the benchmark's own names for their phases. Needs no root.

Example:
  iowitness report iozone.iwt
  iowitness report iozone.iwt --json > phases.json
"""

from __future__ import annotations

from iowitness.collector.trace import load


def add_arguments(parser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a trace saved by run or attach")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="everything, as JSON, on stdout")
    form.add_argument("--csv", action="store_true", help="the phase table, as CSV, on stdout")


def execute(args) -> int:
    from iowitness.analysis.reporters import machine, text  # pandas: only analysis pays for it

    trace = load(args.trace)
    report = trace.report()
    if args.json:
        print(machine.to_json(report, trace))
    elif args.csv:
        print(machine.to_csv(report), end="")
    else:
        print(text.render(report, trace))
    return 0
