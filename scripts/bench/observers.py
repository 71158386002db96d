#!/usr/bin/env python3
"""How much each observer slows a workload: untraced vs floor vs iowitness vs strace/bpftrace/perf.

Each round runs, per workload, the command untraced, then under each observer (order rotated
from round to round, and reversed every other round), then untraced again; an observer's ratio is its throughput over the
mean of the two untraced runs around it. Machine noise thus hits both sides alike. Prints the
median and range of each ratio per workload and observer, and for iowitness: calls/s, lost
events, collector CPU-s per million calls, trace bytes per call and the probe's own time per
call as the kernel measured it (BPF statistics); then whether the targets of the performance
issue hold (see docs/performance.md).

Usage (as root, from the repository, after scripts/setup.sh):
  .venv/bin/python scripts/bench/observers.py --rounds 3 --seconds 4
  .venv/bin/python scripts/bench/observers.py --workloads fio-seq-read,pread-loop --observers iowitness,floor
  .venv/bin/python scripts/bench/observers.py --smoke --json result.json   # CI: one workload, one round
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tracers import Untraced, all_observers  # noqa: E402
from workloads import all_workloads  # noqa: E402

from iowitness.analysis.measure import observer as observer_cost  # noqa: E402
from iowitness.analysis.read.run import load  # noqa: E402

SMOKE_WORKLOAD = "fio-seq-read"


def run_once(workload, observer, out: Path, tag: str, timeout: float) -> dict:
    workload.prepare()
    wrapped = observer.wrap(workload.command, workload.files, out, tag)
    observer.start()
    try:
        proc = subprocess.run(wrapped.argv, capture_output=True, text=True, timeout=timeout)
    finally:
        observer.stop()
    result = {"observer": observer.name}
    try:
        if proc.returncode != 0:
            raise RuntimeError(f"exit code {proc.returncode}: {proc.stderr.strip()[-400:]}")
        result["score"] = workload.score(proc.stdout, proc.stderr)
        if workload.cpu_score:
            result["cpu_score"] = workload.cpu_score(proc.stdout, proc.stderr)
        result["lost"] = observer.lost(wrapped, proc.stderr)
        if wrapped.trace:
            trace = load(wrapped.trace)
            result.update(observer_cost.cost(trace))
            result["trace_bytes"] = wrapped.trace.stat().st_size
            result["trace_bytes_per_call"] = result["trace_bytes"] / max(result["calls"], 1)
    finally:
        for path in ([wrapped.trace] if wrapped.trace else []) + wrapped.cleanup:
            Path(path).unlink(missing_ok=True)
    return result


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)} if values else {}


def summarize(runs: list[dict]) -> dict:
    """Per observer: ratio median/range and the iowitness figures."""
    by_observer: dict[str, list[dict]] = {}
    for r in runs:
        by_observer.setdefault(r["observer"], []).append(r)
    out = {}
    for name, rs in by_observer.items():
        row = {"ratio": spread([r["ratio"] for r in rs]), "rounds": len(rs),
               "cpu_ratio": spread([r["cpu_ratio"] for r in rs if "cpu_ratio" in r])}
        losts = [r["lost"] for r in rs if r.get("lost") is not None]
        if losts:
            row["lost"] = spread(losts)
        if "calls" in rs[0]:
            row["calls_per_s"] = spread([r["calls_per_s"] for r in rs if r.get("calls_per_s")])
            row["collector_cpu_s_per_m"] = spread([r["collector_cpu_s_per_m"] for r in rs
                                                    if r.get("collector_cpu_s_per_m") is not None])
            row["trace_bytes_per_call"] = spread([r["trace_bytes_per_call"] for r in rs])
            probe = [r["probe_ns_per_call_max"] for r in rs if r.get("probe_ns_per_call_max") is not None]
            if probe:
                row["probe_ns_per_call"] = spread(probe)
            # the floor (the entry and exit programs' mean run time) is there whenever the programs
            # were timed; the ceiling above only when a traced call fell in a statistics window
            # (a benchmark that starts more than a second late on a busy machine and ends within
            # 5 s has none: collector/stats_windows.py)
            floor = [r["probe_ns_per_call_min"] for r in rs if r.get("probe_ns_per_call_min") is not None]
            if floor:
                row["probe_ns_per_call_min"] = spread(floor)
            row["probe_sampled_calls"] = spread([r["probe_sampled_calls"] for r in rs
                                                 if r.get("probe_sampled_calls") is not None])
        out[name] = row
    return out


def fmt(s: dict, pattern: str) -> str:
    if not s:
        return "-"
    return f"{pattern.format(s['median'])} ({pattern.format(s['min'])}..{pattern.format(s['max'])})"


def table_rows(results: dict) -> list[list[str]]:
    head = ["workload", "observer", "ratio median (range)", "per CPU-s ratio", "calls/s", "lost",
            "collector CPU-s/M", "B/call",
            "probe ns/call"]
    rows = [head]
    for wname, per in results.items():
        for oname, row in per.items():
            if "skipped" in row:
                rows.append([wname, oname, "skipped: " + row["skipped"], "", "", "", "", "", ""])
                continue
            if "failed" in row:
                rows.append([wname, oname, "FAILED: " + row["failed"][:80], "", "", "", "", "", ""])
                continue
            rows.append([wname, oname, fmt(row["ratio"], "{:.3f}"), fmt(row["cpu_ratio"], "{:.3f}"),
                         fmt(row.get("calls_per_s", {}), "{:,.0f}"),
                         fmt(row.get("lost", {}), "{:,.0f}"), fmt(row.get("collector_cpu_s_per_m", {}), "{:.3f}"),
                         fmt(row.get("trace_bytes_per_call", {}), "{:.1f}"),
                         fmt(row.get("probe_ns_per_call", {}), "{:,.0f}")])
    return rows


def print_table(results: dict) -> None:
    rows = table_rows(results)
    widths = [max(len(r[i]) for r in rows if len(r[i]) < 60) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def markdown(results: dict, checks: list) -> str:
    """The same table and targets, for docs/performance.md."""
    rows = table_rows(results)
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * len(rows[0])]
    lines += ["| " + " | ".join(c or "" for c in r) + " |" for r in rows[1:]]
    lines += ["", "| target (medians) | held | figures |", "| --- | --- | --- |"]
    lines += [f"| {what} | {'met' if held else '**missed**'} | {figures} |" for what, held, figures in checks]
    return "\n".join(lines) + "\n"


def targets(results: dict) -> list[tuple[str, bool | None, str]]:
    """The performance issue's targets, each: (what, held?, the figures). Ratios are judged on
    wall-clock throughput (the issue's measure) and, where the benchmark reports its CPU time,
    also per CPU-second (less moved by other load on a shared machine)."""
    checks = []

    def med(w, o, key="ratio"):
        row = results.get(w, {}).get(o, {})
        return row.get(key, {}).get("median")

    for w in ("fio-seq-read", "fio-rand-read"):
        for key, label in (("ratio", "wall"), ("cpu_ratio", "per CPU-s")):
            full, summary, floor = med(w, "iowitness", key), med(w, "iowitness-summary", key), med(w, "floor", key)
            if full is not None:
                checks.append((f"{w}: full mode >= 0.70 of untraced ({label})", full >= 0.70, f"{full:.3f}"))
            if full is not None and floor is not None:
                checks.append((f"{w}: full mode within 0.10 of the floor ({label})", full >= floor - 0.10,
                               f"{full:.3f} vs floor {floor:.3f}"))
            if summary is not None and floor is not None:
                checks.append((f"{w}: summary mode within 0.05 of the floor ({label})", summary >= floor - 0.05,
                               f"{summary:.3f} vs floor {floor:.3f}"))
    full = med("iozone-64k", "iowitness")
    if full is not None:
        checks.append(("iozone-64k: full mode >= 0.95", full >= 0.95, f"{full:.3f}"))
    for w, per in results.items():
        row = per.get("iowitness", {})
        if "lost" in row:
            checks.append((f"{w}: zero lost events in full mode", row["lost"]["max"] == 0,
                           f"max {row['lost']['max']:.0f}"))
        if "collector_cpu_s_per_m" in row:
            cpu = row["collector_cpu_s_per_m"]["median"]
            checks.append((f"{w}: collector CPU <= 0.5 s per million events (while recording)", cpu <= 0.5,
                           f"{cpu:.3f}"))
    return checks


def main() -> int:
    workloads_all = list(all_workloads(Path("/nonexistent"), 1))
    observers_all = list(all_observers())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="workloads: " + ", ".join(workloads_all)
                                     + "\nobservers: " + ", ".join(observers_all))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4, help="length of time-based workloads (fio, pread loop)")
    parser.add_argument("--workloads", default=",".join(workloads_all), help="comma-separated (default: all)")
    parser.add_argument("--observers", default=",".join(o for o in observers_all
                                                        if o not in ("untraced", "timing-floor")
                                                        and not o.endswith(("-nostats", "-bpftrace"))),
                        help="comma-separated (default: all); untraced always runs")
    parser.add_argument("--dir", help="where the benchmark's files go (default: a new directory in /var/tmp)")
    parser.add_argument("--smoke", action="store_true",
                        help=f"one workload ({SMOKE_WORKLOAD}), one round of 1 s: checks the machinery works")
    parser.add_argument("--json", metavar="FILE", help="also write every run and the summary as JSON")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table and targets as Markdown")
    parser.add_argument("--from-json", metavar="FILE", help="print (and --markdown) a saved --json result, run nothing")
    args = parser.parse_args()
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text())["results"]
        print_table(results)
        if args.markdown:
            Path(args.markdown).write_text(markdown(results, targets(results)))
        return 0
    if args.smoke:
        args.rounds, args.seconds, args.workloads = 1, 1, SMOKE_WORKLOAD
    if os.geteuid() != 0:
        print("observers.py: needs root (BPF); run it with sudo", file=sys.stderr)
        return 3

    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="iowitness-bench-", dir="/var/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="iowitness-bench-out-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    workloads = all_workloads(work, args.seconds)
    observers = all_observers()
    unknown = [w for w in args.workloads.split(",") if w not in workloads] + \
              [o for o in args.observers.split(",") if o not in observers]
    if unknown:
        parser.error(f"unknown workload or observer: {', '.join(unknown)}")
    chosen_w = [workloads[w] for w in args.workloads.split(",")]
    chosen_o, skipped = [], {}
    for name in args.observers.split(","):
        if name == "untraced":
            continue
        why = observers[name].unavailable()
        if why:
            skipped[name] = why
            print(f"skipping {name}: {why}", flush=True)
        else:
            chosen_o.append(observers[name])
    untraced = Untraced()
    timeout = 60 * max(args.seconds, 5)
    print(f"benchmark files in {work}, tracer output in {out}; load average {os.getloadavg()[0]:.2f}; "
          f"{args.rounds} rounds", flush=True)

    results, every_run = {}, []
    started = time.monotonic()
    try:
        for w in chosen_w:
            runs, failed = [], {}
            for r in range(args.rounds):
                shift = r % max(len(chosen_o), 1)
                order = chosen_o[shift:] + chosen_o[:shift]
                if r % 2:
                    # every other round backwards: no observer always runs right after the same
                    # other one (whatever a run leaves behind, freed memory, a cold cache, is
                    # paid by different observers from round to round)
                    order.reverse()
                before = run_once(w, untraced, out, f"{w.name}-{r}-a", timeout)
                measured = []
                for o in order:
                    try:
                        measured.append(run_once(w, o, out, f"{w.name}-{r}-{o.name}", timeout))
                    except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError, IndexError) as exc:
                        failed[o.name] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                        print(f"  {w.name} / {o.name}: FAILED {failed[o.name]}", flush=True)
                after = run_once(w, untraced, out, f"{w.name}-{r}-b", timeout)
                base = (before["score"] + after["score"]) / 2
                for m in measured:
                    m.update(workload=w.name, round=r, ratio=m["score"] / base, untraced=base)
                    if "cpu_score" in m:
                        m["cpu_ratio"] = m["cpu_score"] / ((before["cpu_score"] + after["cpu_score"]) / 2)
                    runs.append(m)
                line = "  ".join(f"{m['observer']} {m['ratio']:.3f}" for m in measured)
                print(f"{w.name} round {r + 1}: untraced {before['score']:,.0f} / {after['score']:,.0f} {w.unit}  "
                      f"{line}", flush=True)
            per = summarize(runs)
            per.update({name: {"failed": why} for name, why in failed.items() if name not in per})
            per.update({name: {"skipped": why} for name, why in skipped.items()})
            results[w.name] = per
            every_run += runs
    finally:
        shutil.rmtree(out, ignore_errors=True)
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)

    print(f"\n{args.rounds} rounds, {args.seconds:g} s time-based runs, {time.monotonic() - started:.0f} s in all; "
          f"ratio = throughput under the observer / untraced (1.000 = no slowdown); per CPU-s ratio: the same "
          f"with throughput per CPU-second the benchmark used (fio, pread loop), which other load moves less")
    print_table(results)
    checks = targets(results)
    if checks:
        print("\ntargets (medians)")
        for what, held, figures in checks:
            print(f"  {'met ' if held else 'MISSED'}  {what}: {figures}")
    if args.markdown:
        Path(args.markdown).write_text(markdown(results, checks))
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "runs": every_run,
                                               "targets": [{"what": w, "met": h, "figures": f}
                                                           for w, h, f in checks]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
