#!/usr/bin/env python3
"""A replay's player and cross-thread waits against an earlier commit's, interleaved, no probe.

For one trace: the plan's waits as an earlier commit's replay/plan.py and order.py make them and as the
tree's does, each run by that commit's replay/player.c and by the tree's, at --timing
as-recorded, in an order that reverses every cycle. Prints each variant's replay time (the
player's own figure: first call to last) as median and range, and the trace's own first call
to last. Only for traces whose plan op codes the two commits share (no async requests, no
advice: the ops added since are refused).

Usage (as root, after scripts/setup.sh):
  sudo .venv/bin/python scripts/bench/replay_waits_ab.py TRACE --base main --cycles 7
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    from iowitness.analysis.read.run import load
    from iowitness.commands.replay import NATIVE_PLAYER
    from iowitness.replay import paths, plan as rp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--base", default="main")
    parser.add_argument("--cycles", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="replay-ab-"))
    try:
        for name in ("plan.py", "order.py", "player.c", "uring_setup.h"):
            text = subprocess.run(["git", "-C", str(ROOT), "show", f"{args.base}:replay/{name}"], check=False,
                                  capture_output=True, text=True).stdout
            # the player's header beside it under its own name (a base before it has none)
            (work / (name if name.endswith(".h") else f"base_{name}")).write_text(text)
        subprocess.run(["clang", "-O2", "-pthread", "-o", str(work / "base_player"), str(work / "base_player.c")],
                       check=True)
        base_plan, base_order = (_module(f"base_{name}", work / f"base_{name}.py") for name in ("plan", "order"))
        new = rp.build(args.trace)
        # the base's waits from the base's order.py (plan.build imports it from the package when it runs)
        import iowitness.replay as package
        tree_order = package.order
        package.order = sys.modules["iowitness.replay.order"] = base_order
        try:
            old = base_plan.build(args.trace)
        finally:
            package.order = sys.modules["iowitness.replay.order"] = tree_order
        added = [rp.OP[o] for o in rp.OPS if o not in base_plan.OPS or rp.OP[o] != base_plan.OP[o]]
        if np.isin(new.calls["op"], added).any():
            sys.exit(f"{args.trace} has calls whose plan op codes changed since {args.base}: not comparable")
        variants = {f"{args.base} player, {args.base} waits": (str(work / "base_player"), old.waits),
                    f"tree player, {args.base} waits": (NATIVE_PLAYER, old.waits),
                    "tree player, tree waits": (NATIVE_PLAYER, new.waits)}
        times: dict[str, list[float]] = {k: [] for k in variants}
        for cycle in range(args.cycles):
            for name, (exe, waits) in list(variants.items())[::1 if cycle % 2 == 0 else -1]:
                into = work / "into"
                shutil.rmtree(into, ignore_errors=True)
                paths.prepare(str(into), [f["rel"] for f in new.files], [f["size"] for f in new.files],
                              [f["precreate"] for f in new.files], force=False,
                              cold=[f.get("cold", False) for f in new.files])
                subprocess.run(["sync"], check=True)
                rp.Plan(new.calls, waits, new.threads, new.files, new.source, new.skipped).save_native(
                    str(work / "plan.bin"))
                line = subprocess.run([exe, str(work / "plan.bin"), str(into), "1.0"], capture_output=True,
                                      text=True).stdout.splitlines()[0]
                times[name].append(float(line.split(" calls in ")[1].split(", ")[1].split(" s;")[0]))
        e = load(args.trace).events
        print(f"{args.trace}: {len(new.calls):,} calls; the original, first call to last: "
              f"{(e['end_ns'].max() - e['start_ns'].min()) / 1e6:.1f} ms; waits: {args.base} {len(old.waits)}, "
              f"tree {len(new.waits)}")
        for name, v in times.items():
            print(f"  {name:<32} median {statistics.median(v) * 1e3:7.1f} ms "
                  f"(range {min(v) * 1e3:.1f}-{max(v) * 1e3:.1f}) over {len(v)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main())
