"""Put several traces side by side: per phase, claim, active, ratio and latency p99 of each run.

Phases are matched across runs by their name, record size and rank (the first "write, 4 KiB
records" of each run, then the second, ...). Each run's claims are read from the output
`run` captured. Runs are labelled with --label (in the order of the traces), else with the
file system and device of their files.

Example:
  iowitness compare ext4.iwt xfs.iwt btrfs.iwt --html fs.html
  iowitness compare a.iwt b.iwt --label "4 KiB" --label "64 KiB" --markdown
"""

from __future__ import annotations

import argparse

from iowitness.analysis.run import load
from iowitness.commands import _claims, _output
from iowitness.errors import UsageError
from iowitness.outputfile import add_mode_option


def add_arguments(parser) -> None:
    parser.add_argument("traces", metavar="TRACE", nargs="+", help="two or more traces saved by run or attach")
    parser.add_argument("--label", action="append", metavar="NAME",
                        help="a name for each run, in the order of the traces (repeat it)")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true", help="the tables as Markdown, on stdout")
    form.add_argument("--html", metavar="FILE", help="write the tables and overlaid charts to FILE (one page)")
    add_mode_option(parser)
    parser.add_argument("--tolerance", default=_claims.DEFAULT_TOLERANCE, metavar="PCT",
                        help="how far a claim may be from the active figure and still agree (default %(default)s)")


def execute(args) -> int:
    if len(args.traces) < 2:
        raise UsageError("compare needs two or more traces")
    if args.label and len(args.label) > len(args.traces):
        raise UsageError(f"{len(args.label)} --label for {len(args.traces)} traces: give at most one per trace")
    out = _output.destination(args, args.html) if args.html else None
    from iowitness import escape, units
    from iowitness.analysis.reporters import compare

    traces = [load(path) for path in args.traces]
    labels = compare.unique_labels(args.label, traces)
    claim_args = argparse.Namespace(claims=None, spec=None, format=None, tolerance=args.tolerance)
    runs = [compare.Run(label, t, t.report(), _claims.verdicts_for(t, claim_args, required=False)[0])
            for label, t in zip(labels, traces)]
    if args.html:
        from iowitness.analysis.reporters import html

        out.write_text(html.render_compare(runs))
    elif args.markdown:
        from iowitness.analysis.reporters import markdown

        print(markdown.render_compare(runs), end="")
    else:
        parts = [units.table(compare.run_table(runs), title="runs")]
        parts += ["\n" + units.table(frame, title=escape.terminal(label)) for label, frame in compare.phase_tables(runs)]
        _output.print_text("\n".join(parts))
    return 0
