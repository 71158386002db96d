"""Check every claim the benchmark printed against the trace; exit 1 if one is unexplained.

One line per claim, fit for CI logs: the verdict, the claim, the active figure of the
window the benchmark timed, their ratio, and the main reason. Exit codes: 0 every claim
agrees or is explained by the trace, 1 at least one disagrees or cannot be judged, or the
trace misses calls (lost events, files or processes the probe could not follow; --allow-loss
judges such a trace anyway), 2 usage error (no claims found, bad tolerance). A trace that is
incomplete or damaged is said on stderr, one line each, before the verdicts.

The trace is read block by block: memory is bounded by its phases, not its events.

Example:
  iowitness check iozone.iwt --tolerance 5%
  iowitness check fio.iwt --claims fio.json
  iowitness check small-files.iwt -v
"""

from __future__ import annotations

import sys

from iowitness.commands import _claims, _output, _reading
from iowitness.errors import UsageError


def add_arguments(parser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a trace saved by run or attach")
    _claims.add_claim_options(parser)
    parser.add_argument("--allow-loss", action="store_true",
                        help="pass even when the trace misses calls (lost events, files or processes the "
                             "probe could not follow): the verdicts alone decide")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="under each verdict line, every reason and every phase it is about "
                             "(the line gives the main reason and the phases as ranges)")
    _reading.add_stream_option(parser, "the same verdicts")


def execute(args) -> int:
    with _reading.trace_of(args.trace, stretches=False) as trace:   # the verdicts read no stretch
        return _check(trace, args)


def _check(trace, args) -> int:
    from iowitness.reporters import text

    verdicts, _ = _claims.verdicts_for(trace, args, required=True)
    if not verdicts:
        raise UsageError("the benchmark's output holds no claims to check")
    # after the claims are found: an error stays one line
    for note in _trace_notes(trace):
        print(f"iowitness: warning: {note}", file=sys.stderr)
    placement = next((v.placement for v in verdicts if v.placement), "")
    if placement:   # how the claims were placed: on the output timeline, or by order
        print(f"iowitness: {placement}", file=sys.stderr)
    for v in verdicts:
        _output.print_text(text.verdict_line(v))
        if getattr(args, "verbose", False):
            for line in text.verdict_details(v):
                _output.print_text(line)
    missing = "; ".join(m for m in (trace.missing, _events_missing(trace)) if m)
    if missing and not args.allow_loss:
        print(f"FAILS: the trace misses calls ({missing}); a claim that agrees may still be wrong "
              "(pass --allow-loss to let the verdicts alone decide)")
        return 1
    return 0 if all(v.ok for v in verdicts) else 1


def _events_missing(trace) -> str:
    """Events the collector counted and the file does not hold (whole chunks cut out, a tail
    torn off): calls known to be missing, as lost ones are; "" when none is."""
    counted, held = int(trace.counters.get("events", 0)), int(trace.event_count)
    return f"{counted - held:,} events counted by the collector are not in the file" if counted > held else ""


def _trace_notes(trace) -> list[str]:
    from iowitness.analysis.report import unseen
    from iowitness.collector.format.traceformat import names_lost_text
    from iowitness.reporters import tables

    meta = trace.meta
    incomplete = [] if meta.get("complete") else [f"the trace is {tables.status(meta)}"]
    names = names_lost_text(trace.counters)   # no call missing: said, not failed on
    return incomplete + tables.integrity_notes(meta) + [note for note in (unseen(trace), names) if note]
