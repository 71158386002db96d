"""Rebuild the benchmark's phases from a trace: names, patterns, rates, latency, outliers.

Each phase is a stretch of one file in one thread with one operation and access pattern.
IOzone, fio and dd runs get the benchmark's own names for their phases. Needs no root.

When the benchmark's output is known (captured by `run`, or given with --claims), each
number it printed is matched to its phase and judged: agrees, explained (the trace shows
why it differs), disagrees, or cannot judge.

--html writes one self-contained page (no network needed to view it) with the tables and
charts: claim vs active, latency distribution, throughput over time, offset vs time, and
for an IOzone -a sweep throughput against file and record size. --markdown prints the same
tables without the charts, for an issue or a wiki.

The text report starts, for an IOzone -a sweep, with a grid per test (file size × record
size, as IOzone -R), then the phases, and the time spent inside the calls of each
open-to-close stretch of a file. On a terminal it fits its width (COLUMNS, else the
terminal's): a table too wide wraps its notes, then leaves out columns in a stated order and
says which; --wide shows them all. Longer than the screen, it is shown through $PAGER (else
less -FRX), as git does. A pipe or a file gets every column and no pager.

The trace is read block by block, in every form: memory is bounded by its phases, not its
events. The --html page's per-call charts are binned, so they are counted block by block
too, in one more pass over the trace.

Example:
  iowitness report iozone.iwt
  iowitness report iozone.iwt --wide | less -S
  iowitness report iozone.iwt --html report.html
  iowitness report iozone.iwt --markdown > report.md
  iowitness report iozone.iwt --json > phases.json
  iowitness report fio.iwt --interval 1s
  iowitness report long-fio.iwt --json > report.json
  iowitness report fio.iwt --claims fio.json
  iowitness report mybench.iwt --spec mybench.toml
  iowitness report host1.iwt host2.iwt --claims fio-client.json
  iowitness report host1.iwt host2.iwt --claims iozone-master.txt

The text and HTML reports end with a log2 histogram of the block requests' latency (issue to
complete) per device and phase, as biolatency -D prints it. --interval 1s adds the device's
iostat -x columns per interval of the recording (r/s, w/s, rkB/s, wkB/s, areq-sz, r_await,
w_await, aqu-sz, %util), as a table in the text and as a chart in the HTML page
(docs/block-and-perfetto.md).

Several traces are one benchmark run over several hosts: fio --client driving a fio --server
on each, each server traced by `iowitness attach --pid`; or IOzone's cluster mode (-+m), each
client host traced by `iowitness attach --file WORKDIR`. The traces are matched to the hosts
(by the fio server's address; by the workdir of the IOzone client list), aligned on the wall
clock, and the per-host and all-clients claims of the client's or master's output are judged
(docs/hosts.md).
"""

from __future__ import annotations

import sys

from iowitness.commands import _claims, _output, _reading
from iowitness.outputfile import add_mode_option


def add_arguments(parser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a trace saved by run or attach")
    parser.add_argument("more", metavar="TRACE", nargs="*",
                        help="the other hosts' traces of a benchmark run over several hosts (fio --client, iozone -+m): "
                             "judged together against --claims CLIENT-OUTPUT")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="everything, as JSON, on stdout")
    form.add_argument("--csv", action="store_true", help="the phase table (no claims), as CSV, on stdout")
    form.add_argument("--markdown", action="store_true", help="the report's tables as Markdown, on stdout")
    form.add_argument("--html", metavar="FILE",
                      help="write the report with its charts to FILE (one self-contained page; - for stdout)")
    _reading.add_stream_option(parser, "the same report, in every form")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="in the text report, the observer's cost with its ranges (per traced call, in all)")
    parser.add_argument("--wide", action="store_true",
                        help="the text report with every column, however wide (by default it fits the "
                             "terminal: columns are left out in a stated order, and the title says which)")
    parser.add_argument("--no-pager", action="store_true",
                        help="never page the text report (by default a report longer than the screen goes "
                             "through $PAGER, else less -FRX, when stdout is a terminal)")
    parser.add_argument("--interval", metavar="DURATION",
                        help="the device's iostat -x columns per interval (1s, 500ms), in the text report and "
                             "as a chart in --html")
    add_mode_option(parser)
    _claims.add_claim_options(parser)


def execute(args) -> int:
    args.interval_ns = _interval(args)
    if args.more:   # one run over several hosts
        from iowitness.commands import _hosts

        return _hosts.execute(args)
    out = _output.page_destination(args, args.html) if args.html else None
    if args.html:
        from iowitness.extras import require

        require("matplotlib", "html", "report --html")   # before the trace is read: one line, at once
    if args.csv:   # the phase table alone: no pass for the rest
        from iowitness import escape
        from iowitness.analysis.phasing import stream_report

        table = stream_report.phase_table(args.trace)
        if table is not None:
            print(escape.csv(table), end="")
            return 0
    # --json shows no open-to-close stretch: their table is not gathered (5 % of its CPU)
    with _reading.trace_of(args.trace, charts=bool(args.html), stretches=not args.json) as trace:
        return _report(trace, args, out)


def _report(trace, args, out) -> int:
    from iowitness.reporters import machine, text  # pandas: only analysis pays for it

    if trace.summary is not None:   # --summary trace: no per-call events to rebuild phases from
        return _summary_report(trace, args)
    report = trace.report()
    if args.csv:  # the phase table only
        print(machine.to_csv(report), end="")   # escaped by escape.csv
        return 0
    explicit = bool(args.claims or args.spec or args.format)
    verdicts, note = _claims.verdicts_for(trace, args, required=explicit)
    if args.json:
        print(machine.to_json(report, trace, verdicts))
    elif args.markdown:
        from iowitness.reporters import markdown

        print(markdown.render(report, trace, verdicts, note), end="")   # escaped by escape.markdown
    elif args.html:
        from iowitness.reporters import html

        out.write_text(html.render(report, trace, verdicts, note, interval_ns=args.interval_ns))
    else:
        width = _output.width(args.wide)
        interval = ""
        if args.interval_ns:
            from iowitness.reporters import block

            interval = "\n\n" + block.interval_text(trace, args.interval_ns, width)
        _output.print_text(text.render(report, trace, verdicts, width) + interval + "\n\n"
                           + text.verdict_section(verdicts, note, width) + _verbose(args, trace),
                           pager=not args.no_pager)
    return 0


def _interval(args) -> int | None:
    """--interval in ns; only where it is shown (the text report and --html)."""
    from iowitness.errors import UsageError

    if args.interval is None:
        return None
    if args.json or args.csv or args.markdown or args.more:
        raise UsageError("--interval is shown in the text report and in --html; leave out --json, --csv, "
                         "--markdown and other hosts' traces")
    from iowitness.reporters import block

    try:
        return block.parse_interval(args.interval)
    except ValueError as exc:
        raise UsageError(f"--interval {exc}") from None


def _summary_report(trace, args) -> int:
    from iowitness.reporters import aggregate

    if args.claims or args.spec or args.format:
        print("iowitness: claims are not judged for a --summary trace (no per-call timing); "
              "showing the phases only", file=sys.stderr)
    if args.csv or args.json:
        print(aggregate.to_csv(trace) if args.csv else aggregate.to_json(trace), end="" if args.csv else "\n")
    else:
        _output.print_text(aggregate.render(trace) + _verbose(args, trace), pager=not args.no_pager)
    return 0


def _verbose(args, trace) -> str:
    """--verbose: the observer line with the ranges its one figure comes from."""
    from iowitness.analysis.measure import observer
    from iowitness.escape import terminal

    return "\n\n" + terminal(observer.detail(trace)) if getattr(args, "verbose", False) else ""
