"""The streamed plan build (replay/stream_plan.py) of one trace, this tree's against another
commit's, each in a fresh process, alternating: CPU seconds (`process_time`, which a loaded
machine moves much less than the wall time), wall seconds, peak RSS; and whether the two plan
files are the same bytes.

The trace: a given one, or replay_plan_memory.py's synthetic one (8 threads, each on its own file
and on one of 2 shared files, 4 KiB pread64/pwrite64 at random offsets, an fsync every 100 calls).

With --start-apart: how `iowitness replay` starts the build of a trace (stream_plan.start_apart,
forked from a process holding iowitness's imports) against a new interpreter running it
(`python -m iowitness.replay.stream_plan`, as before 2026-12-07), alternating in one process:
the time until the file table is announced (the player and the recording wait that long), the
whole build, and the CPU of the build's process.

Usage: .venv/bin/python scripts/bench/replay_build_ab.py --base main --events 10000000 [--threads 8] [--cycles 2]
       .venv/bin/python scripts/bench/replay_build_ab.py --base main --trace TRACE.iwt
       .venv/bin/python scripts/bench/replay_build_ab.py --start-apart --trace TRACE.iwt [--cycles 5]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)


def child(source: str | None, trace: str, out: str) -> None:
    if source:   # another commit's stream_plan.py, run against this tree's other modules
        import importlib.util
        spec = importlib.util.spec_from_file_location("iowitness.replay.stream_plan_base", source)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        from iowitness.replay import stream_plan as module
    if hasattr(module, "keep_heap"):   # as stream_plan.start_apart's process runs the build
        module.keep_heap()
    t, c = time.perf_counter(), time.process_time()
    info = module.build_native(trace, out)
    print(json.dumps({"wall": time.perf_counter() - t, "cpu": time.process_time() - c,
                      "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "calls": info.count,
                      "waits": info.wait_count}))


def start_apart(trace: str, cycles: int) -> None:
    """The build started forked against started in a new interpreter, alternating."""
    from iowitness.cli import build_parser
    from iowitness.replay import stream_plan

    build_parser()   # the imports `iowitness replay` holds when it forks the build

    def children_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    runs: dict[str, list[tuple[float, float, float]]] = {"forked": [], "new interpreter": []}
    print(f"trace {trace}; load average before {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="replay-build-start-") as tmp:
        out = os.path.join(tmp, "plan.bin")
        for _ in range(cycles):
            cpu, t = children_cpu(), time.perf_counter()
            build = stream_plan.start_apart(trace, out, follow=True)
            build.announced()
            announced = time.perf_counter() - t
            build.finish()
            runs["forked"].append((announced, time.perf_counter() - t, children_cpu() - cpu))
            cpu, t = children_cpu(), time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "iowitness.replay.stream_plan", trace, out, "--follow"],
                                    stdout=subprocess.PIPE, text=True, cwd=ROOT)
            assert proc.stdout is not None
            proc.stdout.readline()
            announced = time.perf_counter() - t
            proc.stdout.read()
            proc.wait()
            runs["new interpreter"].append((announced, time.perf_counter() - t, children_cpu() - cpu))
    for name, rs in runs.items():
        print(f"{name}: " + ", ".join(
            f"{what} median {statistics.median(r[k] for r in rs):.3f} s (range {min(r[k] for r in rs):.3f} to "
            f"{max(r[k] for r in rs):.3f})" for k, what in enumerate(("file table announced", "whole build",
                                                                       "build's CPU"))))
    print(f"load average after {os.getloadavg()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="main", help="the commit whose replay/stream_plan.py is measured against")
    ap.add_argument("--trace", help="a trace to build (else a synthetic one of --events)")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--cycles", type=int, default=2)
    ap.add_argument("--start-apart", action="store_true", help="time how the build of --trace is started (forked "
                    "against a new interpreter) instead of two commits' builds")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.start_apart:
        if not args.trace:
            sys.exit("--start-apart needs --trace")
        start_apart(args.trace, args.cycles)
        return
    if args.child:
        child(args.child[0] or None, args.child[1], args.child[2])
        return
    with tempfile.TemporaryDirectory(prefix="replay-build-ab-") as tmp:
        base = os.path.join(tmp, "stream_plan_base.py")
        with open(base, "w") as f:
            f.write(subprocess.run(["git", "-C", ROOT, "show", f"{args.base}:replay/stream_plan.py"], check=True,
                                   capture_output=True, text=True).stdout)
        trace = args.trace
        if not trace:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import replay_plan_memory
            trace = os.path.join(tmp, "synthetic.iwt")
            replay_plan_memory.make_trace(trace, args.events, args.threads)
        print(f"trace {trace}; load average before {os.getloadavg()}", flush=True)
        runs: dict[str, list] = {args.base: [], "this tree": []}
        for _ in range(args.cycles):
            for name, source in ((args.base, base), ("this tree", "")):
                out = os.path.join(tmp, f"{'base' if source else 'tree'}.bin")
                done = subprocess.run([sys.executable, __file__, "--child", source, trace, out], check=True,
                                      capture_output=True, text=True, cwd=ROOT)
                r = json.loads(done.stdout.strip().splitlines()[-1])
                runs[name].append(r)
                print(f"{name}: {r}", flush=True)
            same = filecmp.cmp(os.path.join(tmp, "base.bin"), os.path.join(tmp, "tree.bin"), shallow=False)
            print(f"the two plans the same bytes: {same}", flush=True)
        for name, rs in runs.items():
            print(f"{name}: calls {rs[0]['calls']:,}, waits {rs[0]['waits']:,}")
            for key, what in (("cpu", "CPU s"), ("wall", "wall s"), ("rss", "peak RSS MiB")):
                v = [r[key] for r in rs]
                print(f"  {what}: median {statistics.median(v):.2f} (range {min(v):.2f} to {max(v):.2f})")
        print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
