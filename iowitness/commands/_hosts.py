"""`report A.iwt B.iwt ... --claims OUTPUT`: one benchmark run over several hosts.

Each trace is one host's: an `iowitness attach` of its fio --server, with the fio client's
JSON output as OUTPUT (analysis/benchmarks/fio_hosts.py), or an `iowitness attach --file WORKDIR`
of an IOzone cluster-mode client, with the IOzone master's output (analysis/benchmarks/iozone_cluster.py);
analysis/benchmarks/hosted.py tells which.
This module reads the files and prints: per host, its phases and verdicts; then the hosts on
one clock and the all-clients verdicts.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

from iowitness.analysis.measure import stream_full
from iowitness.analysis.read import stream_events
from iowitness.commands import _claims, _output
from iowitness.errors import UsageError

SCHEMA_VERSION = 1


def execute(args) -> int:
    paths = [args.trace, *args.more]
    if not args.claims:
        raise UsageError("several traces are one run over several hosts: give the fio client's JSON output "
                         "(fio --client ... --output-format=json) or the IOzone master's output (iozone -+m) "
                         "with --claims FILE")
    if args.spec or args.format not in (None, "fio", "iozone"):
        raise UsageError("several traces are judged against a fio --client output or an IOzone cluster-mode "
                         "master's output only (no --spec; --format fio or iozone)")
    if args.csv or args.markdown or args.html:
        raise UsageError("several traces: the text report or --json")
    if len(set(paths)) != len(paths):
        raise UsageError("a trace is given twice: give each host's trace once")
    tolerance = _claims.tolerance(args.tolerance)
    try:
        text = Path(args.claims).read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"--claims {args.claims}: cannot read it: {exc.strerror or exc}; "
                         "give the file that holds the benchmark's output") from None
    from iowitness.analysis.benchmarks import hosted

    judge = hosted.judge_of(text)
    with ExitStack() as stack:
        # each host's trace read block by block (its report built from its blocks when asked for),
        # whatever its size; open until the last line is printed
        traces = []
        for path in paths:
            source = stack.enter_context(stream_events.open_events(path))
            if source.trace_data.summary is not None:
                raise UsageError(f"{path} is a --summary trace: no per-call timing to judge claims against")
            # --json shows no host's stretches: their table is not gathered
            traces.append((path, stack.enter_context(stream_full.report_of(source, path, stretches=not args.json))))
        cluster = judge(traces, tolerance)
        stack.callback(cluster.close)
        if args.json:
            print(_json(cluster))
        else:
            _output.print_text(_text(cluster))
    return 0


def _text(cluster) -> str:
    from iowitness import escape, units
    from iowitness.reporters import text

    parts = []
    merged = cluster.doc.get("merged")
    if merged is not None:   # IOzone: each host's children are its lines of the master's figures
        parts.append(units.table(cluster.timeline, title="hosts on one clock (wall-clock offsets; ms from the "
                                                         "first data call on any host)"))
        parts.append("=== every host's phases on one clock (IOzone's groups span the hosts) ===")
        parts.append(text.render(merged.report(), merged))
        for host in cluster.hosts:
            parts.append(f"=== host {escape.terminal(host.name)}: {escape.terminal(host.path)} ===")
            parts.append(text.verdict_section(host.verdicts, None) if host.verdicts else
                         "claims: none of this host's own (the master prints a line per child with -C)")
        parts.append("=== all clients ===")
        parts.append(text.verdict_section(cluster.all_clients, None))
        return "\n\n".join(parts)
    for host in cluster.hosts:
        parts.append(f"=== host {escape.terminal(host.name)}: {escape.terminal(host.path)} ===")
        parts.append(text.render(host.trace.report(), host.trace))
        parts.append(text.verdict_section(host.verdicts, None))
    parts.append("=== all clients ===")
    parts.append(units.table(cluster.timeline, title="hosts on one clock (wall-clock offsets; ms from the "
                                                     "first data call on any host)"))
    parts.append(text.verdict_section(cluster.all_clients, None) if cluster.all_clients else
                 "claims: the client printed no all-clients figure (one host)")
    return "\n\n".join(parts)


def _json(cluster) -> str:
    from iowitness.reporters.machine import verdict_records

    merged = cluster.doc.get("merged")
    doc = {"schema_version": SCHEMA_VERSION, "kind": "iowitness-hosts",
           "benchmark": "iozone" if merged is not None else "fio",
           "fio_version": cluster.doc.get("fio version"), "iozone_version": cluster.doc.get("iozone version"),
           "phases_numbered": "on one clock over every host" if merged is not None else "in each host's own trace",
           "hosts": [{"host": h.name, "trace": h.path, "phases": int(len(h.trace.report().phases)),
                      "verdicts": verdict_records(h.verdicts)} for h in cluster.hosts],
           "timeline": json.loads(cluster.timeline.to_json(orient="records")),
           "all_clients": verdict_records(cluster.all_clients)}
    return json.dumps(doc, indent=2)
