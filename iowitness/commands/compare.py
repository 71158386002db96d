"""Put several traces side by side: per phase, claim, active, ratio and latency p99 of each run.

Phases are matched across runs by their name, record size and rank (the first "write, 4 KiB
records" of each run, then the second, ...). Each run's claims are read from the output
`run` captured. Runs are labelled with --label (in the order of the traces), else with the
file system and device of their files.

The first trace is the baseline: every later run's figures (throughput, latency percentiles,
duration, bytes, calls) are given with their change against it, absolute and in percent.
--fail-if METRIC OP CHANGE (repeatable) makes compare a gate: it exits 1 when any phase of
any later run crossed a threshold, 0 when none did. Metrics: active, wall, busy, iops, mean,
p50, p90, p99, p99.9, max, duration, bytes, ops. CHANGE is a percentage or an amount with a
unit (us, ms, s for latency and duration; MiB/s, MB/s, ... for throughput; KiB, MB, ... for
bytes). --json gives everything, with "schema_version" (docs/schema/compare.schema.json).
Each trace is read block by block: memory is bounded by its phases, not its events.

Example:
  iowitness compare ext4.iwt xfs.iwt btrfs.iwt --html fs.html
  iowitness compare a.iwt b.iwt --label "4 KiB" --label "64 KiB" --markdown
  iowitness compare before.iwt after.iwt --fail-if 'p99>+10%' --fail-if 'wall<-5%'
  iowitness compare before.iwt after.iwt --json > changes.json
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from iowitness.commands import _claims, _output, _reading
from iowitness.errors import UsageError
from iowitness.outputfile import add_mode_option


def add_arguments(parser) -> None:
    parser.add_argument("traces", metavar="TRACE", nargs="+", help="two or more traces saved by run or attach")
    parser.add_argument("--label", action="append", metavar="NAME",
                        help="a name for each run, in the order of the traces (repeat it)")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true", help="the tables as Markdown, on stdout")
    form.add_argument("--html", metavar="FILE",
                      help="write the tables and overlaid charts to FILE (one page; - for stdout)")
    form.add_argument("--json", action="store_true",
                      help="every phase's metrics and their changes against the first run, as JSON, on stdout")
    parser.add_argument("--fail-if", action="append", metavar="EXPR", default=[],
                        help="exit 1 when a phase of a later run changed this way against the first, "
                             "e.g. 'p99>+10%%' or 'wall<-5%%' (repeat it)")
    add_mode_option(parser)
    parser.add_argument("--tolerance", default=_claims.DEFAULT_TOLERANCE, metavar="PCT",
                        help="how far a claim may be from the active figure and still agree (default %(default)s)")
    _reading.add_stream_option(parser, "the same tables and page, in every form")


def execute(args) -> int:
    if len(args.traces) < 2:
        raise UsageError("compare needs two or more traces")
    if args.label and len(args.label) > len(args.traces):
        raise UsageError(f"{len(args.label)} --label for {len(args.traces)} traces: give at most one per trace")
    from iowitness.analysis import deltas

    thresholds = [deltas.parse_threshold(text) for text in args.fail_if]   # a bad one fails before any loading
    out = _output.page_destination(args, args.html) if args.html else None
    with contextlib.ExitStack() as opened:
        # the traces stay open together: a streamed one reads its blocks again for some verdicts
        traces = [opened.enter_context(_reading.trace_of(path, charts=bool(args.html)))
                  for path in args.traces]
        return _compare(args, traces, thresholds, out)


def _compare(args, traces: list, thresholds: list, out) -> int:
    from iowitness import escape, units
    from iowitness.analysis import deltas
    from iowitness.reporters import compare

    labels = compare.unique_labels(args.label, traces)
    claim_args = argparse.Namespace(claims=None, spec=None, format=None, tolerance=args.tolerance)
    runs = [compare.Run(label, t, t.report(), _claims.verdicts_for(t, claim_args, required=False)[0])
            for label, t in zip(labels, traces)]
    rows = deltas.table(runs, compare.labels(runs), compare.active_rate)
    judged = deltas.judge(thresholds, rows, [r.label for r in runs])
    if args.json:
        print(compare.to_json(runs, rows, judged))
    elif args.html:
        from iowitness.reporters import html

        out.write_text(html.render_compare(runs, rows))
    elif args.markdown:
        from iowitness.reporters import markdown

        print(markdown.render_compare(runs, rows), end="")
    else:
        parts = [units.table(compare.run_table(runs), title="runs")]
        parts += ["\n" + units.table(frame, title=escape.terminal(label)) for label, frame in compare.phase_tables(runs)]
        parts.append("\n" + units.table(compare.delta_table(runs, rows, deltas.TEXT_METRICS),
                                        title=escape.terminal(compare.changes_title(runs))))
        _output.print_text("\n".join(parts))
    return _gate(judged)


def _gate(judged: list[dict]) -> int:
    """Say on stderr which thresholds were crossed, where, and what could not be judged; 1 when any was crossed."""
    from iowitness.reporters.compare import shown, signed

    for j in judged:
        for hit in j["hits"]:
            pct = f", {hit['delta_pct']:+.1f}%" if hit["delta_pct"] is not None else ""
            print(f"iowitness: --fail-if {j['expression']}: crossed by {hit['phase']!r} in {hit['run']!r}: "
                  f"{shown(hit['baseline'], hit['unit'])} -> {shown(hit['value'], hit['unit'])} "
                  f"({signed(hit['delta'], hit['unit'])}{pct})", file=sys.stderr)
        for miss in j["not_judged"]:
            print(f"iowitness: --fail-if {j['expression']}: {miss['phase']!r} in {miss['run']!r} not judged "
                  f"({miss['why']})", file=sys.stderr)
    return 1 if any(j["crossed"] for j in judged) else 0
