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

Two groups of runs: A1 A2 A3 -- B1 B2 B3 (globs are expanded: 'before/*.iwt' -- 'after/*.iwt'),
or runs of a Parquet dataset (export --parquet DIR): DIR for all of them, DIR[KEY=VALUE,...] for
those whose runs-table columns match (a glob, a|b, != < <= > >=: 'sweep[host=a,benchmark=fio]',
'sweep[start_time>=2026-11-27T10:00]'); two selections alone are two groups. Quote them.
Per phase, each group's median and its spread (lowest–highest), the change of the medians, and
a test of whether it is more than the runs' scatter: Welch's t on the logs of the per-run
figures, 95 % interval, p (docs/compare-groups.md says why and its measured false-positive
rate). --fail-if then fails only on a change past its threshold AND significant (p below
--alpha divided by the phases judged); a change past it within the scatter is named on stderr. Each group needs 2 or more runs with a
figure; 3 or more are advised. --label names the groups. A gate that could judge no phase (no
phase of the runs matched, e.g. an IOzone trace against a fio one) exits 2 with one line.

Example:
  iowitness compare ext4.iwt xfs.iwt btrfs.iwt --html fs.html
  iowitness compare a.iwt b.iwt --label "4 KiB" --label "64 KiB" --markdown
  iowitness compare before.iwt after.iwt --fail-if 'p99>+10%' --fail-if 'wall<-5%'
  iowitness compare before.iwt after.iwt --json > changes.json
  iowitness compare a1.iwt a2.iwt a3.iwt -- b1.iwt b2.iwt b3.iwt --fail-if 'p99>+10%'
  iowitness compare 'sweep[host=old]' 'sweep[host=new]' --fail-if 'wall<-10%'
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from iowitness.commands import _claims, _output, _reading
from iowitness.errors import EXIT_USAGE, UsageError
from iowitness.outputfile import add_mode_option


def add_arguments(parser) -> None:
    parser.add_argument("traces", metavar="TRACE", nargs="+", help="two or more traces saved by run or attach, or a Parquet dataset's runs: "
                             "DIR or 'DIR[KEY=VALUE,...]' (a group)")
    parser.add_argument("--vs", nargs="+", metavar="TRACE", default=None,
                        help="a second group of runs, compared as a group with the first (also written "
                             "A1 A2 -- B1 B2)")
    parser.add_argument("--label", action="append", metavar="NAME",
                        help="a name for each run, in the order of the traces (repeat it); "
                             "with two groups, a name for each group")
    parser.add_argument("--alpha", type=float, default=0.05, metavar="P",
                        help="with two groups: a change is significant when the test's p is below P "
                             "(default %(default)s)")
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


def _expanded(paths: list[str]) -> list:
    """Each path, or the sorted files a glob the shell left alone matches (none: an error), or a
    Parquet dataset selection (DIR or DIR[KEY=VALUE,...]: analysis/runs/dataset_runs.py)."""
    import glob
    import os

    from iowitness.analysis.runs import dataset_runs

    out: list = []
    for path in paths:
        selection = dataset_runs.parse(path)
        if selection is not None:
            out.append(selection)
        elif glob.has_magic(path) and not os.path.exists(path):
            found = sorted(glob.glob(path))
            if not found:
                raise UsageError(f"no trace matches {path!r}")
            out += found
        else:
            out.append(path)
    return out


def _prelude(args) -> tuple[list, object]:
    """The --fail-if thresholds (a bad one fails before any loading) and the --html page's destination."""
    from iowitness.analysis.runs import deltas

    thresholds = [deltas.parse_threshold(text) for text in args.fail_if]
    return thresholds, (_output.page_destination(args, args.html) if args.html else None)


def _entries(opened, inputs: list, tolerance, charts: bool = False) -> list[tuple]:
    """(trace, report, verdicts) of each input: a trace read (kept open in `opened`: a streamed
    one reads its blocks again for some verdicts), or each run of a dataset selection."""
    from iowitness.analysis.runs import dataset_runs

    claim_args = argparse.Namespace(claims=None, spec=None, format=None, tolerance=tolerance)
    out = []
    seen: dict = {}   # a file named twice (compare A A, a trace in both groups) is analysed once
    for item in inputs:
        if isinstance(item, dataset_runs.Selection):
            out += [(r.trace, r.report, r.verdicts) for r in dataset_runs.runs(item)]
            continue
        key = _same_file(item)
        if key is None or key not in seen:
            # no form of compare shows the open-to-close stretches: their table is not gathered
            trace = opened.enter_context(_reading.trace_of(item, charts=charts, stretches=False))
            entry = (trace, trace.report(), _claims.verdicts_for(trace, claim_args, required=False)[0])
            if key is None:
                out.append(entry)
                continue
            seen[key] = entry
        out.append(seen[key])
    return out


def _same_file(path: str) -> tuple | None:
    """What makes two names one trace: device, inode, size and times of change (None: the
    reading says why it cannot be read)."""
    import os

    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def execute(args) -> int:
    from iowitness.analysis.runs import dataset_runs

    args.traces = _expanded(args.traces)
    selections = [t for t in args.traces if isinstance(t, dataset_runs.Selection)]
    if args.vs is not None:
        return _execute_groups(args, _expanded(args.vs))
    if selections:
        if len(args.traces) != 2:
            raise UsageError(f"{selections[0].text!r} is a group of runs: give two groups, e.g. "
                             "'sweep[host=a]' 'sweep[host=b]', or A1.iwt A2.iwt -- 'sweep[host=b]'")
        first, second = args.traces     # two selections (or a selection and a trace): two groups
        args.traces = [first]
        return _execute_groups(args, [second])
    if len(args.traces) < 2:
        raise UsageError("compare needs two or more traces")
    if args.label and len(args.label) > len(args.traces):
        raise UsageError(f"{len(args.label)} --label for {len(args.traces)} traces: give at most one per trace")
    thresholds, out = _prelude(args)
    with contextlib.ExitStack() as opened:
        return _compare(args, _entries(opened, args.traces, args.tolerance, charts=bool(args.html)), thresholds, out)


def _compare(args, entries: list, thresholds: list, out) -> int:
    from iowitness import escape, units
    from iowitness.analysis.runs import deltas
    from iowitness.reporters import compare

    labels = compare.unique_labels(args.label, [trace for trace, _, _ in entries])
    runs = [compare.Run(label, *entry) for label, entry in zip(labels, entries)]
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
    return _gate(judged, len(rows) * (len(runs) - 1))


def _gate(judged: list[dict], pairs: int = 0) -> int:
    """Say on stderr which thresholds were crossed, where, and what could not be judged; 1 when any
    was crossed, 2 (one line) when a gate judged nothing at all."""
    from iowitness.reporters.compare import shown, signed

    if judged and all(pairs - len(j["not_judged"]) <= 0 for j in judged):
        return _nothing_judged(judged)

    def crossed(j: dict, hit: dict) -> str:
        pct = f", {hit['delta_pct']:+.1f}%" if hit["delta_pct"] is not None else ""
        return (f"crossed by {hit['phase']!r} in {hit['run']!r}: {shown(hit['baseline'], hit['unit'])} -> "
                f"{shown(hit['value'], hit['unit'])} ({signed(hit['delta'], hit['unit'])}{pct})")

    return _said(judged, {"hits": crossed,
                          "not_judged": lambda j, miss: f"{miss['phase']!r} in {miss['run']!r} not judged "
                                                        f"({miss['why']})"})


def _said(judged: list[dict], lines: dict) -> int:
    """Each gate's results on stderr, a line per item of each kind in `lines` (kind -> the line
    of one item), in that order; 1 when any gate was crossed."""
    for j in judged:
        for kind, line in lines.items():
            for item in j[kind]:
                print(f"iowitness: --fail-if {j['expression']}: {line(j, item)}", file=sys.stderr)
    return 1 if any(j["crossed"] for j in judged) else 0


def _nothing_judged(judged: list[dict]) -> int:
    whys = sorted({m["why"] for j in judged for m in j["not_judged"]})
    why = "no phase of the runs matched" if not whys or whys == ["phase missing"] or \
        whys == ["phase missing in a group"] else "; ".join(whys)
    print(f"iowitness: --fail-if: nothing to judge ({why}): the gate cannot pass or fail", file=sys.stderr)
    return EXIT_USAGE


def _execute_groups(args, second: list) -> int:
    if not args.traces or not second:
        raise UsageError("compare of two groups needs traces on both sides of --")
    if args.label and len(args.label) > 2:
        raise UsageError(f"{len(args.label)} --label for two groups: give at most one per group")
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha {args.alpha}: give a probability between 0 and 1, e.g. 0.05")
    thresholds, out = _prelude(args)
    with contextlib.ExitStack() as opened:
        first = _entries(opened, args.traces, args.tolerance)
        entries = first + _entries(opened, second, args.tolerance)
        return _compare_groups(args, entries, (len(first), len(entries) - len(first)), thresholds, out)


def _compare_groups(args, entries: list, sizes: tuple[int, int], thresholds: list, out=None) -> int:
    from iowitness import escape, units
    from iowitness.analysis.runs import deltas, group_deltas
    from iowitness.reporters import compare, compare_groups

    names = list(args.label or []) + ["A", "B"][len(args.label or []):]
    if names[0] == names[1]:
        names[1] += " (2)"
    labels = compare_groups.run_labels(names, sizes)
    runs = [compare.Run(label, *entry) for label, entry in zip(labels, entries)]
    groups = (runs[:sizes[0]], runs[sizes[0]:])
    rows = group_deltas.table(groups, compare.labels(runs), compare.active_rate, args.alpha)
    judged = group_deltas.judge(thresholds, rows, args.alpha)
    frame = compare_groups.changes(names, rows, deltas.TEXT_METRICS)
    title = f"{names[1]} against {names[0]}: medians of the runs, Welch's t on their logs (alpha {args.alpha:g})"
    if args.json:
        print(compare_groups.to_json(names, runs, sizes, rows, judged, args.alpha))
    elif args.html:
        out.write_text(compare_groups.to_html(names, runs, rows, frame, title))
    elif args.markdown:
        from iowitness.reporters import markdown

        print(f"## {escape.markdown(title)}\n\n{markdown.table(compare.run_table(runs))}\n\n{markdown.table(frame)}")
    else:
        _output.print_text(units.table(compare.run_table(runs), title="runs") + "\n\n"
                           + units.table(frame, title=escape.terminal(title)))
    return _gate_groups(judged, names)


def _gate_groups(judged: list[dict], names: list[str]) -> int:
    from iowitness.reporters.compare import shown

    if judged and all(j["judged"] == 0 for j in judged):
        return _nothing_judged(judged)

    def crossed(j: dict, hit: dict) -> str:
        pct = f", {hit['delta_pct']:+.1f}%" if hit["delta_pct"] is not None else ""
        return (f"crossed by {hit['phase']!r}: median {shown(hit['baseline'], hit['unit'])} -> "
                f"{shown(hit['value'], hit['unit'])}{pct}, significant (p={hit['p']:.2g})")

    def calm(j: dict, item: dict) -> str:
        pct = f" {item['delta_pct']:+.1f}%" if item["delta_pct"] is not None else ""
        p = "no test" if item["p"] is None else f"p={item['p']:.2g}"
        level = f", above {j['alpha_per_phase']:.2g}" if item["p"] is not None else ""
        return f"{item['phase']!r} changed{pct} but within the runs' scatter ({p}{level}): not failed"

    return _said(judged, {"hits": crossed, "not_significant": calm,
                          "not_judged": lambda j, miss: f"{miss['phase']!r} not judged ({miss['why']})"})
