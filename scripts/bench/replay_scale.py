"""A replay at scale: record a tight loop of N million file calls, replay it at --timing fast,
and set the replay against the original: wall times, the calls' spans, and peak memory.

The original: scripts/bench/pread_loop.c (1-byte preads of a cached file, as fast as one thread
makes them) for --seconds under `iowitness run`; or, with --workload, a benchmark issue 31 names
(fio psync 4 KiB random reads of 32 MiB, IOzone -i0 -i1 -i2 of 32 MiB), recorded afresh before each
of --pairs replays, and the ratio replay / original of the commands' wall times, of their CPU
(every process of each: a loaded machine moves it less than the wall) and of the calls' spans
said per pair and as median and range. Then, each in a fresh process:
  - the streamed plan build alone (replay/stream_plan.py, as `iowitness replay` runs it for the
    native player): wall, CPU and peak RSS;
  - the in-memory build (replay/plan.py) for comparison, unless --no-inmemory;
  - `iowitness replay ORIG --into DIR --timing fast -o REPLAY`: wall, and the peak RSS of the
    largest process of its tree (getrusage RUSAGE_CHILDREN: the Python side, the player, the
    collector);
and from both traces (read block by block): events, and the span from the first call's start to
the last call's end.

Usage: sudo .venv/bin/python scripts/bench/replay_scale.py --seconds 10 [--work /tmp/replay-scale] [--repeat 1]
       [--no-inmemory] [--original TRACE]   (replay a trace recorded before: no recording, no builds)
       [--timing fast --timing x1000000000]  (each repeat replays at each, in turn: at fast the player
                                              follows the plan as it is written; at x1e9, as fast too
                                              (no gap is waited for) but after the whole plan is built)
       sudo .venv/bin/python scripts/bench/replay_scale.py --workload fio-randread --pairs 5 [--work DIR]
       sudo .venv/bin/python scripts/bench/replay_scale.py --workload iozone --pairs 5
       sudo .venv/bin/python scripts/bench/replay_scale.py --seconds 60 --against main/.venv/bin/iowitness --cycles 3
            (old against new: each cycle records pread_loop afresh, then replays it at --timing fast with the
             other tree's iowitness and with this tree's, in turns (which goes first alternates): each replay's
             wall, CPU and peak RSS, and its wall / the original's; medians and ranges; the load average;
             with --original TRACE --original-wall S, that one trace in every cycle)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, ROOT)
IOWITNESS = [os.path.join(os.path.dirname(sys.executable), "iowitness")]


def measured(command: list[str], **kw) -> dict:
    """Run `command` in a child of a fresh process: its wall time and the peak RSS of the largest
    process of its tree."""
    probe = ("import json, resource, subprocess, sys, time\n"
             "t = time.perf_counter()\n"
             "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)\n"
             "took = time.perf_counter() - t\n"
             "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
             "print(json.dumps({'rc': p.returncode, 'wall_s': took, 'peak_mib': ru.ru_maxrss / 1024, "
             "'cpu_s': ru.ru_utime + ru.ru_stime, 'out': p.stdout[-2000:], 'err': p.stderr[-2000:]}))\n")
    out = subprocess.run([sys.executable, "-c", probe, *command], check=True, capture_output=True, text=True, **kw)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["rc"] != 0:
        sys.exit(f"{command[:3]}... failed ({result['rc']}): {result['err']}")
    return result


def span(trace: str) -> dict:
    """Events and the span from the first call's start to the last call's end, block by block."""
    from iowitness.collector.format import tracestream
    first, last, n = None, None, 0
    with tracestream.open_trace(trace) as stream:
        for block in stream.blocks(["start_ns", "latency_ns"]):
            s = block["start_ns"].astype("int64")
            e = s + block["latency_ns"].astype("int64")
            first = int(s.min()) if first is None else min(first, int(s.min()))
            last = int(e.max()) if last is None else max(last, int(e.max()))
            n += len(s)
        lost = stream.data.lost
    return {"events": n, "span_s": (last - first) / 1e9 if n else 0.0, "lost": lost}


def build_child(trace: str, out: str, kind: str) -> None:
    from iowitness.replay import plan, stream_plan
    t, c = time.perf_counter(), time.process_time()
    if kind == "stream":
        calls = stream_plan.build_native(trace, out).count
    else:
        p = plan.build(trace)
        p.save_native(out)
        calls = len(p.calls)
    print(json.dumps({"calls": calls, "wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
                      "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


# issue 31's requirement 5: at --timing fast a replay is not slower than the original run
WORKLOADS = {
    "fio-randread": ["fio", "--name=r", "--rw=randread", "--bs=4k", "--size=32m", "--ioengine=psync",
                     "--directory={data}"],
    "iozone": ["iozone", "-i0", "-i1", "-i2", "-s", "32m", "-r", "4k", "-f", "{data}/iozone.tmp"],
}


def pairs(args) -> None:
    """--pairs cycles of: the workload recorded afresh (its data directory emptied first, so that fio
    lays its file out again), then replayed at each --timing into a fresh directory."""
    data = os.path.join(args.work, "data")
    ratios: dict[str, dict[str, list[float]]] = {}
    print(f"load average before: {os.getloadavg()}", flush=True)
    for k in range(args.pairs):
        shutil.rmtree(data, ignore_errors=True)
        os.makedirs(data)
        orig = os.path.join(args.work, f"orig{k}.iwt")
        command = [a.format(data=data) for a in WORKLOADS[args.workload]]
        rec = measured([*IOWITNESS, "run", "-q", "-o", orig, "--", *command], cwd=ROOT)
        o = span(orig)
        print(f"pair {k + 1}: original wall {rec['wall_s']:.2f} s, CPU {rec['cpu_s']:.2f} s, {o['events']:,} events "
              f"(lost {o['lost']:,}), calls' span {o['span_s']:.3f} s; load {os.getloadavg()[0]:.1f}", flush=True)
        for timing in args.timing or ["fast"]:
            into = os.path.join(args.work, f"into{k}")
            rep_trace = os.path.join(args.work, f"replay{k}.iwt")
            rep = measured([*IOWITNESS, "replay", "-q", orig, "--into", into, "--timing", timing, "-o", rep_trace],
                           cwd=ROOT)
            r = span(rep_trace)
            wall, calls, cpu = rep["wall_s"] / rec["wall_s"], r["span_s"] / o["span_s"], rep["cpu_s"] / rec["cpu_s"]
            for what, ratio in (("wall", wall), ("span", calls), ("CPU", cpu)):
                ratios.setdefault(timing, {}).setdefault(what, []).append(ratio)
            print(f"  replay --timing {timing}: wall {rep['wall_s']:.2f} s ({wall:.2f} x the original's), CPU "
                  f"{rep['cpu_s']:.2f} s ({cpu:.2f} x), {r['events']:,} events (lost {r['lost']:,}), calls' span "
                  f"{r['span_s']:.3f} s ({calls:.2f} x)", flush=True)
            shutil.rmtree(into, ignore_errors=True)
    for timing, by in ratios.items():
        for what, v in by.items():
            print(f"{args.workload} --timing {timing}, replay / original, {what}: median {statistics.median(v):.2f} "
                  f"(range {min(v):.2f} to {max(v):.2f}, {len(v)} pairs)")
    print(f"load average after: {os.getloadavg()}")


def against(args, exe: str, target: str) -> None:
    """--against: old (another tree's iowitness) and new (this tree's) replays of the same original, in turns."""
    runs: dict[str, list[dict]] = {"other": [], "this tree": []}
    print(f"load average before: {os.getloadavg()}; other: {args.against}", flush=True)
    for k in range(args.cycles):
        if args.original:   # one trace for every cycle, its recording's wall given
            orig, rec = args.original, {"wall_s": args.original_wall, "cpu_s": float("nan")}
        else:
            orig = os.path.join(args.work, "orig.iwt")
            rec = measured([*IOWITNESS, "run", "-q", "-o", orig, "--file", target, "--", exe, target,
                            str(args.seconds)], cwd=ROOT)
        o = span(orig)
        print(f"cycle {k + 1}: original wall {rec['wall_s']:.1f} s, CPU {rec['cpu_s']:.1f} s, {o['events']:,} events "
              f"(lost {o['lost']:,}), calls' span {o['span_s']:.2f} s; load {os.getloadavg()}", flush=True)
        order = (("other", [args.against]), ("this tree", IOWITNESS))
        for name, command in order if k % 2 == 0 else order[::-1]:
            into = os.path.join(args.work, "into")
            rep = measured([*command, "replay", "-q", orig, "--into", into, "--timing", "fast", "-o",
                            os.path.join(args.work, "replay.iwt")], cwd=ROOT)
            r = span(os.path.join(args.work, "replay.iwt"))
            rep.update(ratio=rep["wall_s"] / rec["wall_s"], events=r["events"], original_events=o["events"])
            runs[name].append(rep)
            print(f"  {name}: replay wall {rep['wall_s']:.1f} s ({rep['ratio']:.2f} x the original's), CPU "
                  f"{rep['cpu_s']:.1f} s, peak RSS of its largest process {rep['peak_mib']:.0f} MiB, {r['events']:,} "
                  f"events (lost {r['lost']:,}); load {os.getloadavg()[0]:.1f}", flush=True)
            shutil.rmtree(into, ignore_errors=True)
    for name, rs in runs.items():
        for key, what in (("wall_s", "wall s"), ("ratio", "wall / original's"), ("cpu_s", "CPU s"),
                          ("peak_mib", "peak RSS MiB")):
            v = [r[key] for r in rs]
            print(f"{name}: {what} median {statistics.median(v):.2f} (range {min(v):.2f} to {max(v):.2f}, {len(v)})")
    print(f"load average after: {os.getloadavg()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="how long the original loops")
    ap.add_argument("--work", default="/tmp/replay-scale")
    ap.add_argument("--repeat", type=int, default=1, help="replays of the one original")
    ap.add_argument("--no-inmemory", action="store_true", help="skip the in-memory build")
    ap.add_argument("--original", metavar="TRACE", help="replay this trace (recorded by an earlier run of this "
                    "script) instead of recording one")
    ap.add_argument("--timing", action="append", help="replay at this --timing (repeatable; default fast)")
    ap.add_argument("--workload", choices=sorted(WORKLOADS), help="a benchmark instead of pread_loop, recorded afresh "
                    "for each of --pairs replays")
    ap.add_argument("--pairs", type=int, default=5, help="with --workload: originals, each replayed once per --timing")
    ap.add_argument("--against", metavar="IOWITNESS", help="another tree's iowitness command: old against new, "
                    "--cycles originals recorded afresh, each replayed at --timing fast by both in turns")
    ap.add_argument("--cycles", type=int, default=3, help="with --against: originals recorded (or, with --original, "
                    "replays of it by each)")
    ap.add_argument("--original-wall", type=float, help="with --against and --original: the wall time of the "
                    "original's recording, seconds (replay_scale.py's line 'original: ...')")
    ap.add_argument("--build-child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_child:
        build_child(*args.build_child)
        return
    if os.geteuid() != 0:
        sys.exit("replay_scale.py records with the probe: run it as root")
    if args.workload:
        os.makedirs(args.work, exist_ok=True)
        pairs(args)
        return
    if not args.original:
        shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(os.path.join(args.work, "data"), exist_ok=True)
    exe = os.path.join(args.work, "pread_loop")
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HERE, "pread_loop.c")], check=True)
    target = os.path.join(args.work, "data", "file")
    with open(target, "wb") as f:
        f.write(b"x" * 4096)
    if args.against:
        against(args, exe, target)
        return
    orig = args.original or os.path.join(args.work, "orig.iwt")
    print(f"load average before: {os.getloadavg()}")
    o = None
    if not args.original:
        rec = measured([*IOWITNESS, "run", "-q", "-o", orig, "--file", target, "--", exe, target, str(args.seconds)],
                       cwd=ROOT)
        o = span(orig)
        print(f"original: `iowitness run -- pread_loop FILE {args.seconds}`: wall {rec['wall_s']:.1f} s, CPU "
              f"{rec['cpu_s']:.1f} s (pread_loop and the collector), peak RSS "
              f"{rec['peak_mib']:.0f} MiB; {o['events']:,} events (lost {o['lost']:,}), calls' span "
              f"{o['span_s']:.2f} s; its output: {rec['out'].strip()}")
    else:
        o = span(orig)
        print(f"original {orig}: {o['events']:,} events, calls' span {o['span_s']:.2f} s")
    for kind in (() if args.original else ("stream",)) + (() if args.no_inmemory else ("inmemory",)):
        b = subprocess.run([sys.executable, __file__, "--build-child", orig, os.path.join(args.work, f"{kind}.bin"),
                            kind], check=True, capture_output=True, text=True, cwd=ROOT)
        r = json.loads(b.stdout.strip().splitlines()[-1])
        print(f"plan build, {kind}: {r['calls']:,} calls, wall {r['wall_s']:.1f} s, CPU {r['cpu_s']:.1f} s, "
              f"peak RSS {r['peak_mib']:.0f} MiB")
    if not args.no_inmemory and not args.original:
        import filecmp
        same = filecmp.cmp(os.path.join(args.work, "stream.bin"), os.path.join(args.work, "inmemory.bin"),
                           shallow=False)
        print(f"  the two native plans byte for byte the same: {same}")
    for k in range(args.repeat):
        for timing in args.timing or ["fast"]:
            into = os.path.join(args.work, f"into{k}")
            rep_trace = os.path.join(args.work, f"replay{k}.iwt")
            rep = measured([*IOWITNESS, "replay", orig, "--into", into, "--timing", timing, "-o", rep_trace], cwd=ROOT)
            r = span(rep_trace)
            said = [line for line in rep["out"].splitlines() if "calls in" in line]
            print(f"replay {k + 1} (--timing {timing}): rc {rep['rc']}, wall {rep['wall_s']:.1f} s, "
                  f"CPU {rep['cpu_s']:.1f} s "
                  f"(the build, the player and the collector), peak RSS of its largest "
                  f"process {rep['peak_mib']:.0f} MiB; {r['events']:,} events (lost {r['lost']:,}), calls' span "
                  f"{r['span_s']:.2f} s; {said[-1].strip() if said else rep['err'].strip()[-300:]}")
            shutil.rmtree(into, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
