"""Peak memory and time of building a replay plan (replay/plan.py build) from a synthetic trace
of N events, no probe, no root.

The trace: THREADS threads of one process, each opening its own file and one of 2 shared files,
then pread64/pwrite64 of 4 KiB at random 4 KiB-aligned offsets within 64 MiB (a write one call in
4), an fsync every 100 calls, a close at the end; timestamps interleave the threads as a run
would. Each measure runs in a fresh process (`--child`): one reads the trace alone, one
reads it and builds the plan as `iowitness replay` does (plan.build(path): the build may drop
the trace's columns once it has taken the calls); each reports its peak RSS (getrusage
ru_maxrss) and its wall and CPU time; the figures are the median and range over --repeat runs.
"The plan's own" is the build's peak less the reading's, per call.

Usage: .venv/bin/python scripts/bench/replay_plan_memory.py --events 1000000 [--threads 8] [--repeat 3]
       [--order-from COMMIT]   (the waits computed by replay/order.py as it was at COMMIT: a before)
       [--plan-from COMMIT]    (replay/plan.py and order.py as they were at COMMIT: a before)
       [--pair-with COMMIT]    (both: each repeat builds with this tree, then with COMMIT's)
       [--stream]              (the streamed build iowitness replay runs for the native player,
                                replay/stream_plan.py, against the in-memory one, each repeat
                                both, and whether their native plan files are the same bytes)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

O_RDWR, O_CREAT = 0o2, 0o100
AT_FDCWD = -100
BATCH = 200_000


def make_trace(path: str, events: int, threads: int, seed: int = 1) -> None:
    from iowitness.collector.format.tracewriter import TraceWriter
    from iowitness.probes.layout import layout
    lay = layout()
    op = {name: number for number, name in lay.names("iow_op", "IOW_OP_").items()}
    kind = {name: number for number, name in lay.names("iow_meta_kind", "IOW_META_").items()}
    rng = np.random.default_rng(seed)
    dev = (8 << 20) | 1
    # per thread: fd 3 its own file (ino 1000 + t), fd 4 a shared file (ino 10 or 11)
    facts = np.zeros(threads + 2, lay.meta)
    for k in range(threads + 2):
        ino = 1000 + k if k < threads else 10 + (k - threads)
        name = f"/data/bench/{'own' if k < threads else 'shared'}{k}.dat".encode()
        facts[k]["kind"], facts[k]["dev"], facts[k]["ino"], facts[k]["tgid"] = kind["file"], dev, ino, 50
        facts[k]["fd"], facts[k]["dirfd"], facts[k]["ts_ns"] = 3, AT_FDCWD, 1_000_000_000
        facts[k]["path"][:len(name)] = np.frombuffer(name, np.uint8)
    start = {"command": ["bench"], "mode": "run", "cwd": "/data",
             "clock_start": {"monotonic_ns": 999_000_000, "realtime_ns": 0, "offset_ns": 0}}
    per_thread = events // threads
    with TraceWriter(path, start) as writer:
        writer.write_facts(facts)
        done = 0
        while done < per_thread * threads:
            n = min(BATCH, per_thread * threads - done)
            seq = np.arange(done, done + n)
            e = np.zeros(n, lay.event)
            t = seq % threads
            k = seq // threads          # the call's place in its thread
            e["tgid"], e["tid"], e["dev"] = 50, 100 + t, dev
            e["start_ns"] = 1_000_000_000 + seq * 2_000
            e["latency_ns"] = 1_500
            shared = (k % 2) == 1
            e["ino"] = np.where(shared, 10 + t % 2, 1000 + t)
            e["fd"] = np.where(shared, 4, 3)
            write = rng.integers(0, 4, n) == 0
            e["op"] = np.where(write, op["pwrite64"], op["pread64"])
            e["offset"] = rng.integers(0, 16384, n) * 4096
            e["requested"], e["ret"] = 4096, 4096
            sync = (k % 100) == 99
            e["op"][sync], e["offset"][sync], e["requested"][sync], e["ret"][sync] = op["fsync"], -1, 0, 0
            first = k < 2
            e["op"][first], e["offset"][first], e["ret"][first] = op["openat"], -1, e["fd"][first]
            e["flags"][first] = O_RDWR | O_CREAT
            last = k >= per_thread - 2
            e["op"][last], e["offset"][last], e["requested"][last], e["ret"][last] = op["close"], -1, 0, 0
            writer.write_events(e)
            done += n
        writer.write_counters({"events": done, "lost_events": 0, "lost_meta": 0})
        writer.close({"exit_code": 0, "clock_end": {"monotonic_ns": 1_000_000_000 + done * 2_000}})


def child(trace: str, order_from: str | None, plan_from: str | None = None, read_only: bool = False,
          stream_to: str | None = None) -> None:
    from iowitness.replay import plan
    if stream_to:
        from iowitness.replay import stream_plan
        t0, c0 = time.perf_counter(), time.process_time()
        info = stream_plan.build_native(trace, stream_to)
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"calls": info.count, "waits": info.wait_count, "peak_mib": peak / 1024, "build_s": took,
                          "build_cpu_s": cpu}))
        return
    # replay/order.py (and with --plan-from replay/plan.py too) as at that commit, in place of the tree's
    for commit, name in ((order_from, "order"), (plan_from, "order"), (plan_from, "plan")):
        if commit:
            module = _module_at(commit, name)
            if name == "plan":
                plan = module
    t0, c0 = time.perf_counter(), time.process_time()
    if read_only:
        plan.read_trace(trace)
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(json.dumps({"read_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "read_s": took,
                          "read_cpu_s": cpu}))
        return
    p = plan.build(trace)   # as `iowitness replay` builds it: the trace read inside
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if os.environ.get("REPLAY_PLAN_SAVE"):
        p.save_native(os.environ["REPLAY_PLAN_SAVE"])   # after the measure: the file the streamed one is held to
    print(json.dumps({"calls": len(p.calls), "waits": len(p.waits), "peak_mib": peak / 1024, "build_s": took,
                      "build_cpu_s": cpu}))


def _module_at(commit: str, name: str):
    import types

    import iowitness.replay
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    source = subprocess.run(["git", "-C", root, "show", f"{commit}:replay/{name}.py"], check=True,
                            capture_output=True, text=True).stdout
    old = types.ModuleType(f"iowitness.replay.{name}")
    exec(compile(source, f"{commit}:replay/{name}.py", "exec"), old.__dict__)
    sys.modules[f"iowitness.replay.{name}"] = old
    setattr(iowitness.replay, name, old)
    return old


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--order-from", metavar="COMMIT")
    ap.add_argument("--plan-from", metavar="COMMIT", help="replay/plan.py and order.py as at COMMIT (a before)")
    ap.add_argument("--pair-with", metavar="COMMIT", help="each repeat also builds with replay/plan.py and order.py "
                    "as at COMMIT, right after this tree's (a before measured under the same load)")
    ap.add_argument("--stream", action="store_true", help="the streamed build against the in-memory one")
    ap.add_argument("--stream-to", help=argparse.SUPPRESS)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--read-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.order_from, args.plan_from, args.read_only, args.stream_to)
        return
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "synthetic.iwt")
        make_trace(trace, args.events, args.threads)
        size = os.path.getsize(trace) / (1 << 20)
        print(f"trace: {args.events:,} events, {args.threads} threads, {size:.1f} MiB on disk")
        # with --pair-with, each repeat runs the tree's build and that commit's, one after the other
        sides = [("this tree", None)] + ([(f"at {args.pair_with}", args.pair_with)] if args.pair_with else [])
        if args.stream:
            sides = [("in memory (plan.build)", None), ("streamed (stream_plan.build_native)", "stream")]
        runs: dict = {name: [] for name, _ in sides}
        for _ in range(args.repeat):
            read = subprocess.run([sys.executable, __file__, "--child", trace, "--read-only"], check=True,
                                  capture_output=True, text=True).stdout
            for name, commit in sides:
                command = [sys.executable, __file__, "--child", trace]
                if commit == "stream":
                    command += ["--stream-to", os.path.join(tmp, "streamed.bin")]
                    commit = None
                command += ["--order-from", args.order_from] if args.order_from else []
                command += ["--plan-from", commit or args.plan_from] if (commit or args.plan_from) else []
                env = {**os.environ, "REPLAY_PLAN_SAVE": os.path.join(tmp, "whole.bin")} if args.stream else None
                out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
                runs[name].append({**json.loads(read.strip().splitlines()[-1]),
                                   **json.loads(out.strip().splitlines()[-1])})
        for name, _ in sides:
            _print(name, runs[name])
        if args.stream:
            import filecmp
            same = filecmp.cmp(os.path.join(tmp, "whole.bin"), os.path.join(tmp, "streamed.bin"), shallow=False)
            print(f"native plan files byte for byte the same: {same} "
                  f"({os.path.getsize(os.path.join(tmp, 'whole.bin')):,} bytes)")


def _print(name: str, runs: list[dict]) -> None:
    print(f"{name}: calls {runs[0]['calls']:,}, waits {runs[0]['waits']:,}")
    for key, what in (("read_mib", "peak RSS of reading the trace alone, MiB"),
                      ("peak_mib", "peak RSS of reading the trace and building the plan, MiB"),
                      ("read_s", "reading alone, s"), ("read_cpu_s", "reading alone, CPU s"),
                      ("build_s", "reading and building, s"),
                      ("build_cpu_s", "reading and building, CPU s (the process's own: steadier on a loaded machine)")):
        values = [r[key] for r in runs]
        print(f"  {what}: median {statistics.median(values):.2f} (range {min(values):.2f} to {max(values):.2f})")
    per_call = [(r["peak_mib"] - r["read_mib"]) * (1 << 20) / max(r["calls"], 1) for r in runs]
    print(f"  plan's own peak, bytes per call: median {statistics.median(per_call):.0f} "
          f"(range {min(per_call):.0f} to {max(per_call):.0f})")


if __name__ == "__main__":
    main()
