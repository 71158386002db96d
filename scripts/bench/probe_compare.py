#!/usr/bin/env python3
"""The probe of a given commit against the working tree's, alternately inside one run.

Why: the machine's speed drifts by more than a probe change costs (issue 34: 0.045 of a
benchmark's throughput went unnoticed through changes each measured alone in 8-10 cycles).
Here every cycle runs both probes, in an order that alternates, so each difference is taken
between two measurements seconds apart, and the median of those paired differences is read.

The commit's tree is exported with `git archive` into a temporary directory, its probe built
there with its own probes/Makefile, and its own Python code run (its collector knows its
probe's maps, its reader its trace format) on this checkout's virtual environment. The working
tree's probe is rebuilt first (make -C probes).

Two parts, each interleaved:

cost        each cycle, one run of a workload (--cost-workloads: pread-loop, 1-byte preads of a
            cached file, scripts/bench/pread_loop.c; fio-rand-read, fio-seq-read: 4 KiB psync
            reads of a cached file) untraced, under the timing floor (probes/timing_floor.bpf.o:
            two clock reads per syscall and nothing else) and under each tree's `iowitness run
            --file F`, in an order that reverses every cycle. Per probe: on_sys_enter and
            on_sys_exit ns per run (run_time_ns / run_cnt, the kernel's struct bpf_prog_info as
            bpftool shows it), every other program's ns per traced call, and the workload's
            throughput per CPU-second of its own (user + system, the BPF programs included;
            other load on the machine moves it far less than wall-clock throughput) over the
            untraced run's. --stats sysctl (default) turns kernel.bpf_stats_enabled on for the
            part (restored after): per-run figures over every call, the timing floor's too, but
            every program pays two more clock reads; --stats sampled leaves the collector's own
            statistics windows, and the ratios are the ones users see.
throughput  scripts/bench/interleaved.py's method (one long fio run, observers switched on
            and off in it, rates from /proc/PID/io or fio's status dumps): each cycle the
            timing floor, the commit's iowitness and the tree's (`attach --pid`), each ratio
            over the untraced stretches around it, by wall-clock time and (@cpu) by the
            benchmark's CPU time (/proc/PID/task/*/schedstat); read "minus timing floor, same
            cycle" and "tree - base". Each stretch's on_sys_enter + on_sys_exit ns per run comes
            from its trace (the collector's sampled statistics windows).

The async floor (observer timing-floor-async, and --async-floor in the cost part): the timing
floor plus empty programs on io_uring_submit_req, io_uring_complete and iomap_dio_complete
(probes/timing_floor_async.bpf.c), the tracepoints iowitness follows an asynchronous request
through; "minus async floor" is what iowitness does on a request past their own price.

Every run's lost events are printed, and their total at the end.

Figures: docs/performance.md, "Issue 34". How much is noise: the same script with --base HEAD
on a clean tree compares two identical probes; the range of its paired differences is what a
real change must stand out of.

Usage (as root, from the repository, after scripts/setup.sh):
  .venv/bin/python scripts/bench/probe_compare.py --base f08ffda --cycles 20
  .venv/bin/python scripts/bench/probe_compare.py --base HEAD~3 --parts cost --cost-workloads pread-loop,fio-rand-read \
      --cycles 20 --seconds 2 --stats sampled
  .venv/bin/python scripts/bench/probe_compare.py --base f08ffda --parts throughput \
      --workloads fio-rand-read,fio-seq-read --cycles 20 --slot 2 --json r.json
  .venv/bin/python scripts/bench/probe_compare.py --base OLD --also MID --cycles 20
      (three probes in the same cycles: OLD, then MID as also1, then the working tree)
  .venv/bin/python scripts/bench/probe_compare.py --base HEAD --parts throughput --cycles 6 \
      --observers timing-floor,timing-floor-async,tree --workloads fio-iouring-rand-read
      (how much of the async requests' gap is their tracepoints' own price)
  .venv/bin/python scripts/bench/probe_compare.py --base HEAD --tree-args='--ring-buffer-mb 1' --parts cost
      (one probe, two settings of the collector)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import interleaved  # noqa: E402
from tracers import Floor, TimingFloor, kernel_has_tracepoint  # noqa: E402

PYTHON = sys.executable
HOOKS = ("on_sys_enter", "on_sys_exit")
ASYNC_FLOOR = "timing-floor-async"


class TimingFloorAsync(Floor):
    """The timing floor and empty programs on io_uring_submit_req, io_uring_complete and
    iomap_dio_complete (probes/timing_floor_async.bpf.c, the working tree's): what an async
    request's tracepoints cost before iowitness does anything on them."""
    name = ASYNC_FLOOR
    object = REPO / "probes" / "build" / "timing_floor_async.bpf.o"

    def start(self):
        from iowitness.collector.libbpf import BpfObject
        self._obj = BpfObject(self.object)
        for program, tracepoint in (("floor_async_uring_submit", "io_uring_submit_req"),
                                    ("floor_async_uring_complete", "io_uring_complete"),
                                    ("floor_async_dio_complete", "iomap_dio_complete")):
            if not kernel_has_tracepoint(tracepoint):
                self._obj.skip_program(program)
        self._obj.load()
        self._obj.attach_all()


def floor_slot(pid: int, files: list[str], slot: float, out: Path) -> tuple[float, float]:
    """interleaved.py's stretch of the async timing floor: on for `slot` seconds."""
    return interleaved.hold(TimingFloorAsync(), slot)
STATS_SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")


@dataclass
class Tree:
    """A tree of iowitness whose collector can be run: the working tree, or a commit's export."""
    name: str
    cli: list[str]
    env: dict = field(default_factory=dict)
    stretches: list = field(default_factory=list)   # throughput part: each stretch's figures
    options: list[str] = field(default_factory=list)   # --base-args / --tree-args: after `run` or `attach`

    def run(self, argv: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
        # cwd is never the repository: its iowitness/ folder would shadow the tree's on sys.path
        return subprocess.run([*self.cli, argv[0], *self.options, *argv[1:]], cwd=cwd,
                              env={**os.environ, **self.env}, **kw)

    def read(self, trace: Path, cwd: Path) -> dict:
        done = subprocess.run([PYTHON, str(HERE / "trace_window.py"), str(trace)], cwd=cwd,
                              env={**os.environ, **self.env}, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: reading {trace.name} failed: {done.stderr.strip()[-300:]}")
        return json.loads(done.stdout)


def working_tree() -> Tree:
    subprocess.run(["make", "-s", "-C", str(REPO / "probes")], check=True)
    env = {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}
    return Tree("tree", [PYTHON, "-m", "iowitness.cli"], {"PYTHONPATH": ""} if env else {})


def exported_tree(rev: str, work: Path, name: str = "base") -> Tree:
    """`rev` exported and its probe built in work/src; its packages laid out in work/site as its
    pyproject.toml maps them (the folders differ from their import names)."""
    src, site = work / "src", work / "site"
    src.mkdir(parents=True)
    site.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    subprocess.run(["make", "-s", "-C", str(src / "probes")], check=True, stdout=subprocess.DEVNULL)
    project = tomllib.loads((src / "pyproject.toml").read_text())
    for package, folder in project["tool"]["setuptools"]["package-dir"].items():
        natural = src.joinpath(*package.split("."))
        if not natural.exists():
            natural.symlink_to(src / folder)
    (site / "iowitness").symlink_to(src / "iowitness")
    module = project["project"]["scripts"]["iowitness"].split(":")[0]
    return Tree(name, [PYTHON, "-m", module], {"PYTHONPATH": str(site)})


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)} \
        if values else {}


def fmt(s: dict, pattern: str = "{:.0f}") -> str:
    if not s:
        return "-"
    return f"{pattern.format(s['median'])} ({pattern.format(s['min'])}..{pattern.format(s['max'])})"


# ---- cost: BPF statistics and CPU per byte, one traced run of a workload per probe ----

def cost_once(side: Tree | str | None, workload, work: Path) -> dict:
    """One run of the workload untraced (side None), under the timing floor, or under a tree's
    `iowitness run`: its throughput per CPU-second of its own, and the probe's figures."""
    workload.prepare()
    if side is None or side in ("timing-floor", ASYNC_FLOOR):
        floor = (TimingFloorAsync() if side == ASYNC_FLOOR else TimingFloor()) if side else None
        if floor:   # the tree's probes/timing_floor.bpf.o, loaded by this process
            floor.start()
        try:
            done = subprocess.run(workload.command, capture_output=True, text=True, check=True, cwd=work)
            programs = floor._obj.program_stats() if floor else {}
        finally:
            if floor:
                floor.stop()
        row = {"rate": workload.cpu_score(done.stdout, done.stderr), "lost": 0, "others_per_call": 0.0, "others": {}}
        for hook in HOOKS:
            p = programs.get("timing_" + hook.removeprefix("on_"), {})
            row[hook] = p["run_time_ns"] / p["run_cnt"] if p.get("run_cnt") else None
        # the async floor's empty programs: ns per run; no trace, so runs per traced call is
        # unknown (the CPU's runs over the part's, not per request)
        row["programs"] = {n: {"ns_per_run": p["run_time_ns"] / p["run_cnt"]}
                           for n, p in programs.items() if n.startswith("floor_async") and p.get("run_cnt")}
        return row
    trace = Path("/dev/shm") / f"iowitness-probe-compare-{os.getpid()}.iwt"
    done = side.run(["run", "-q", "-o", str(trace), *[a for f in workload.files for a in ("--file", f)], "--",
                     *workload.command], work, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{side.name}: iowitness run exited with {done.returncode}: {done.stderr.strip()[-300:]}")
    try:
        seen = side.read(trace, work)
    finally:
        trace.unlink(missing_ok=True)
    programs, calls = seen["programs"], max(seen["events"], 1)
    row = {"rate": workload.cpu_score(done.stdout, done.stderr), "lost": seen["lost"] + seen["not_followed"],
           "collector": seen.get("collector_cpu_s_per_m")}
    for hook in HOOKS:
        p = programs.get(hook, {})
        row[hook] = p["run_time_ns"] / p["run_cnt"] if p.get("run_cnt") else None
    row["others_per_call"] = sum(p["run_time_ns"] for n, p in programs.items() if n not in HOOKS) / calls
    row["others"] = {n: p["run_time_ns"] / calls for n, p in programs.items() if n not in HOOKS and p["run_cnt"]}
    # every program that ran: ns per run, and runs per traced call (per request, on the async
    # workloads, whose records are one a request): which programs a request pays for, and how much
    row["programs"] = {n: {"ns_per_run": p["run_time_ns"] / p["run_cnt"], "runs_per_call": p["run_cnt"] / calls}
                       for n, p in programs.items() if p["run_cnt"]}
    return row


# cpu_ns_per_call: the benchmark's CPU-ns per call (its CPU time, the programs' included)
COST_KEYS = ("on_sys_enter", "on_sys_exit", "others_per_call", "ratio", "cpu_ns_per_call")
# the async ones: 32 requests in flight, each a record, so "per traced call" reads per request
COST_WORKLOADS = ("pread-loop", "fio-rand-read", "fio-seq-read", "fio-libaio-rand-read", "fio-iouring-rand-read",
                  "fio-libaio-direct-rand-read", "fio-iouring-direct-rand-read")


def cost_part(trees: list[Tree], workload, cycles: int, sysctl: bool, work: Path, async_floor: bool = False) -> dict:
    floors = ["timing-floor", *([ASYNC_FLOOR] if async_floor else [])]
    sides = [None, *floors, *trees]
    rows: dict[str, list[dict]] = {**{f: [] for f in floors}, **{t.name: [] for t in trees}}
    before = STATS_SYSCTL.read_text().strip()
    if sysctl:
        STATS_SYSCTL.write_text("1\n")
    try:
        for cycle in range(cycles):
            order = sides if cycle % 2 == 0 else sides[::-1]
            got = {("untraced" if s is None else getattr(s, "name", s)): cost_once(s, workload, work) for s in order}
            for name in rows:
                got[name]["ratio"] = got[name]["rate"] / got["untraced"]["rate"]
                got[name]["cpu_ns_per_call"] = (workload.call_bytes * 1e9 / got[name]["rate"]
                                                if workload.call_bytes else None)
                rows[name].append(got[name])
            print(f"{workload.name} cost cycle {cycle + 1}: " + "  ".join(
                f"{n} {_ns(got[n]['on_sys_enter'])}+{_ns(got[n]['on_sys_exit'])} ns, {got[n]['ratio']:.3f}/cpu-s"
                for n in rows), flush=True)
    finally:
        STATS_SYSCTL.write_text(before + "\n")
    summary = {}
    for name, r in rows.items():
        summary[name] = {k: spread([x[k] for x in r if x[k] is not None]) for k in COST_KEYS}
        summary[name]["lost"] = sum(x["lost"] for x in r)
        summary[name]["collector_cpu_s_per_m"] = spread([x["collector"] for x in r if x.get("collector") is not None])
        others: dict[str, list[float]] = {}
        for x in r:
            for n, v in x["others"].items():
                others.setdefault(n, []).append(v)
        summary[name]["others"] = {n: statistics.median(v) for n, v in others.items()}
        each: dict[str, dict[str, list[float]]] = {}
        for x in r:
            for n, v in x.get("programs", {}).items():
                for k, f in v.items():
                    each.setdefault(n, {}).setdefault(k, []).append(f)
        summary[name]["programs"] = {n: {k: spread(f) for k, f in v.items()} for n, v in each.items()}
    for name in [t.name for t in trees]:
        summary[name + "_minus_timing_floor"] = _paired(rows[name], rows["timing-floor"])
        if async_floor:
            summary[name + "_minus_timing_floor_async"] = _paired(rows[name], rows[ASYNC_FLOOR])
    for later, earlier in pairs(trees):
        summary[f"{later}_minus_{earlier}"] = _paired(rows[later], rows[earlier])
    return {"workload": workload.name, "cycles": cycles, "sysctl": sysctl, "summary": summary, "rows": rows}


def pairs(trees: list[Tree]) -> list[tuple[str, str]]:
    """The paired differences read: the tree and each --also probe minus the base, the tree
    minus each --also probe."""
    names = [t.name for t in trees]
    out = [(n, "base") for n in names if n != "base"]
    return out + [("tree", n) for n in names if n not in ("base", "tree")]


def _ns(v) -> str:
    return "-" if v is None else f"{v:.0f}"


def _paired(a: list[dict], b: list[dict]) -> dict:
    return {k: spread([x[k] - y[k] for x, y in zip(a, b) if x[k] is not None and y[k] is not None])
            for k in COST_KEYS}


def print_cost(result: dict) -> None:
    s = result["summary"]
    stats = "sysctl kernel.bpf_stats_enabled=1" if result["sysctl"] else "the collector's sampled windows"
    print(f"\n{result['workload']}, {result['cycles']} cycles, BPF statistics from {stats}: "
          f"ns per run, median (range); ratio: throughput per CPU-second over the untraced run's")
    print(f"{'probe':<28}{'on_sys_enter':<18}{'on_sys_exit':<18}{'others ns/call':<20}{'ratio':<26}"
          f"{'CPU-ns per call':<22}lost")
    for name, r in s.items():
        signed = "minus" in name
        print(f"{name:<28}{fmt(r['on_sys_enter'], '{:+.0f}' if signed else '{:.0f}'):<18}"
              f"{fmt(r['on_sys_exit'], '{:+.0f}' if signed else '{:.0f}'):<18}"
              f"{fmt(r['others_per_call'], '{:+.1f}' if signed else '{:.1f}'):<20}"
              f"{fmt(r['ratio'], '{:+.3f}' if signed else '{:.3f}'):<26}"
              f"{fmt(r.get('cpu_ns_per_call', {}), '{:+.1f}' if signed else '{:.0f}'):<22}{r.get('lost', '')}")
    for name, r in s.items():
        if r.get("others"):
            top = sorted(r["others"].items(), key=lambda kv: -kv[1])[:6]
            print(f"  {name}: other programs, ns per traced call: " + ", ".join(f"{n} {v:.2f}" for n, v in top))
    for name, r in s.items():
        busiest = sorted((r.get("programs") or {}).items(),
                         key=lambda kv: -kv[1]["ns_per_run"]["median"] * kv[1].get("runs_per_call", {}).get("median", 1))
        for n, v in busiest[:10]:
            print(f"  {name}: {n:<26} ns per run {fmt(v['ns_per_run']):<18} runs per traced call "
                  f"{fmt(v.get('runs_per_call', {}), '{:.3f}')}")


# ---- throughput: interleaved.py's stretches, one per probe and the timing floor per cycle ----

def stretch_runner(tree: Tree, work: Path):
    def run_slot(pid: int, files: list[str], slot: float, out: Path):
        trace = out / f"{tree.name}.iwt"
        done = tree.run(["attach", "-q", "--pid", str(pid), "--duration", f"{slot:g}", "-o", str(trace),
                         *[a for f in files for a in ("--file", f)]], work, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            print(f"{tree.name}: iowitness attach exited with {done.returncode}: {last}", flush=True)
            trace.unlink(missing_ok=True)
            tree.stretches.append(None)
            return None
        try:
            seen = tree.read(trace, work)
        finally:
            trace.unlink(missing_ok=True)
        hooks = [seen["programs"].get(h, {}) for h in HOOKS]
        ns = sum(h["run_time_ns"] / h["run_cnt"] for h in hooks if h.get("run_cnt")) or None
        tree.stretches.append({"ns": ns, "lost": seen["lost"] + seen["not_followed"],
                               "collector": seen.get("collector_cpu_s_per_m")})
        if seen["lost"] or seen["not_followed"]:
            print(f"{tree.name}: {seen['lost']} events lost, {seen['not_followed']} requests not followed", flush=True)
        return tuple(seen["window"]) if seen["window"] else None
    return run_slot


def paired(measured: list[dict], a: str, b: str) -> dict:
    return spread([c[a] - c[b] for c in measured if a in c and b in c])


def ns_per_call(measured: list[dict], observers: list[str], call_bytes: int | None) -> dict:
    """The benchmark's CPU-ns per call under each observer (and untraced: the stretches around
    it), and each observer's minus the timing floor's of the same cycle: a ratio's difference
    in ns, which workloads whose calls take different times share (a sequential 4 KiB read is
    shorter than a random one, so the same ns weigh more in its ratio)."""
    if not call_bytes:
        return {}
    def ns(c: dict, o: str) -> float:
        return call_bytes * 1e9 / c[o + "@cpu-rate"]
    found = {o: [c for c in measured if o + "@cpu-rate" in c] for o in observers}
    out = {o: spread([ns(c, o) for c in cs]) for o, cs in found.items()}
    # the untraced stretches' own rate: the observer's over its ratio to them
    out["untraced"] = spread([ns(c, o) * c[o + "@cpu"] for o, cs in found.items() for c in cs])
    if "timing-floor" in observers:
        for o in observers:
            if o != "timing-floor":
                out[o + "_minus_timing_floor"] = spread([ns(c, o) - ns(c, "timing-floor") for c in found[o]
                                                          if "timing-floor@cpu-rate" in c])
    return out


def throughput_part(trees: list[Tree], workloads: list[str], observers: list[str], cycles: int, slot: float,
                    work: Path) -> dict:
    for t in trees:
        interleaved.SLOT_RUNNERS[t.name] = stretch_runner(t, work)
    interleaved.SLOT_RUNNERS[ASYNC_FLOOR] = floor_slot
    bench_dir = work / "bench"
    bench_dir.mkdir(exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="iowitness-probe-compare-", dir="/dev/shm"))
    # an attach of either tree, and reading its trace back, take a few seconds more than
    # interleaved.py allows for its own observers: fio must outlast every cycle. 6 s per attach
    # was too few at load average 18 (14 of 20 cycles); fio is stopped after the last cycle, so
    # a long budget costs nothing
    known = interleaved.all_workloads(bench_dir, interleaved.run_seconds(observers, cycles, slot)
                                      + cycles * 20 * len(trees))
    results = {}
    try:
        for name in workloads:
            for t in trees:
                t.stretches = []
            measured = interleaved.measure(known[name], observers, cycles, slot, out)
            # each ratio by wall-clock seconds and, under "NAME@cpu", by the benchmark's CPU-seconds
            keys = observers + [o + "@cpu" for o in observers]
            row = {k: spread([c[k] for c in measured if k in c]) for k in keys}
            row["minus_timing_floor"] = {
                k: paired(measured, k, "timing-floor" + k[len(k.split("@")[0]):]) for k in keys
                if k.split("@")[0] != "timing-floor" and "timing-floor" in observers}
            # past the async requests' tracepoints' own price (probes/timing_floor_async.bpf.c)
            row["minus_timing_floor_async"] = {
                k: paired(measured, k, ASYNC_FLOOR + k[len(k.split("@")[0]):]) for k in keys
                if k.split("@")[0] not in ("timing-floor", ASYNC_FLOOR) and ASYNC_FLOOR in observers}
            for later, earlier in pairs(trees):
                if {later, earlier} <= set(observers):
                    row[f"{later}_minus_{earlier}"] = {"wall": paired(measured, later, earlier),
                                                       "cpu": paired(measured, later + "@cpu", earlier + "@cpu")}
            row["cpu_ns_per_call"] = ns_per_call(measured, observers, known[name].call_bytes)
            row["probe_ns"] = {t.name: spread([s["ns"] for s in t.stretches if s and s["ns"]]) for t in trees}
            row["collector_cpu_s_per_m"] = {t.name: spread([s["collector"] for s in t.stretches
                                                            if s and s["collector"] is not None]) for t in trees}
            row["lost"] = {t.name: sum(s["lost"] for s in t.stretches if s) for t in trees}
            row["cycles"] = measured
            results[name] = row
            print_throughput(name, row, observers, trees)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {"cycles": cycles, "slot": slot, "results": results}


def print_throughput(name: str, row: dict, observers: list[str], trees: list[Tree]) -> None:
    print(f"\n{name}: ratio to the untraced stretches around it, median (range); paired: same cycle;"
          f" @cpu: per CPU-second of the benchmark")
    print(f"{'observer':<24}{'ratio':<24}{'minus timing floor':<26}{'minus async floor':<26}"
          f"{'sys_enter+exit ns/run':<24}{'collector CPU-s/M':<22}lost")
    for o in observers:
        for k in (o, o + "@cpu"):
            if not row.get(k):
                continue
            minus = row["minus_timing_floor"].get(k, {})
            minus_async = row.get("minus_timing_floor_async", {}).get(k, {})
            ns = row["probe_ns"].get(o, {}) if k == o else {}
            cpu = row["collector_cpu_s_per_m"].get(o, {}) if k == o else {}
            print(f"{k:<24}{fmt(row[k], '{:.3f}'):<24}{fmt(minus, '{:+.3f}'):<26}{fmt(minus_async, '{:+.3f}'):<26}"
                  f"{fmt(ns):<24}{fmt(cpu, '{:.3f}'):<22}{row['lost'].get(o, '') if k == o else ''}")
    for later, earlier in pairs(trees):
        for what, d in row.get(f"{later}_minus_{earlier}", {}).items():
            if d:
                print(f"{later} - {earlier} {what}: {fmt(d, '{:+.3f}')}  ({d['n']} cycles)")
    per_call = row.get("cpu_ns_per_call") or {}
    if per_call:
        print("benchmark CPU-ns per call, median (range): " + ", ".join(
            f"{o} {fmt(d, '{:+.1f}' if 'minus' in o else '{:.0f}')}" for o, d in per_call.items() if d))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the commit whose probe is compared (any git revision)")
    parser.add_argument("--tree", metavar="REV",
                        help="compare with this commit's probe instead of the working tree's (a bisect step: "
                             "--base REV^ --tree REV)")
    parser.add_argument("--also", metavar="REV", action="append", default=[],
                        help="one more commit's probe in the same cycles, named also1, also2, ... in the "
                             "tables (repeatable: before and after a change in one run)")
    parser.add_argument("--base-args", default="", metavar="ARGS",
                        help="options given to the base's `iowitness run`/`attach`, space-separated (with --base "
                             "HEAD and --tree-args: one probe under two settings, e.g. --tree-args='--ring-buffer-mb 1')")
    parser.add_argument("--tree-args", default="", metavar="ARGS", help="the same for the tree's")
    parser.add_argument("--parts", default="cost,throughput", help="cost, throughput or both (default)")
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=2.0, help="cost part: seconds per run")
    parser.add_argument("--cost-workloads", default="pread-loop",
                        help=f"cost part, comma-separated, of: {', '.join(COST_WORKLOADS)}")
    parser.add_argument("--stats", choices=("sysctl", "sampled"), default="sysctl",
                        help="cost part: BPF statistics on for the whole part (sysctl, default: per-run figures "
                             "over every call) or in the collector's own windows (sampled: throughput as users see it)")
    parser.add_argument("--slot", type=float, default=2.0, help="throughput part: seconds per stretch")
    parser.add_argument("--workloads", default="fio-rand-read,fio-seq-read",
                        help=f"throughput part, comma-separated, of: {', '.join(interleaved.WORKLOADS)}")
    parser.add_argument("--observers", default="timing-floor,base,also,tree",
                        help="throughput part: of floor, timing-floor, timing-floor-async (the timing floor and "
                             "empty programs on the async requests' tracepoints), base, also (every --also probe), "
                             "tree (default: timing-floor,base,also,tree)")
    parser.add_argument("--async-floor", action="store_true",
                        help="cost part: run the workload under timing-floor-async too (its empty programs' ns per "
                             "run, and each probe minus it)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run as root: the probes load BPF programs")
    parts = args.parts.split(",")
    also = [f"also{i + 1}" for i in range(len(args.also))]
    observers = [n for o in args.observers.split(",") for n in (also if o == "also" else [o])]
    workloads = args.workloads.split(",")
    unknown = ([p for p in parts if p not in ("cost", "throughput")]
               + [o for o in observers if o not in ("floor", "timing-floor", ASYNC_FLOOR, "base", "tree", *also)]
               + [w for w in workloads if w not in interleaved.WORKLOADS]
               + [w for w in args.cost_workloads.split(",") if w not in COST_WORKLOADS])
    if unknown:
        parser.error(f"unknown: {', '.join(unknown)}")
    for rev in filter(None, (args.base, args.tree, *args.also)):
        if subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "-q", rev + "^{commit}"],
                          capture_output=True).returncode != 0:
            parser.error(f"{rev} is no commit of {REPO}")
    if "throughput" in parts and any(w.startswith("fio") for w in workloads) and not shutil.which("fio"):
        parser.error("fio is not installed (scripts/setup.sh installs it)")
    # a kill ends the run through the finally clauses: the sysctl restored, the files removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="iowitness-probe-compare-", dir="/var/tmp"))
    result = {"base": args.base, "tree": args.tree or "working tree", "command": " ".join(sys.argv),
              **{name: rev for name, rev in zip(also, args.also)}}
    try:
        trees = [exported_tree(args.base, work / "base"),
                 *[exported_tree(rev, work / name, name) for name, rev in zip(also, args.also)],
                 exported_tree(args.tree, work / "tree", "tree") if args.tree else working_tree()]
        trees[0].options = args.base_args.split()
        trees[-1].options = args.tree_args.split()
        print(f"base {args.base} exported and built in {work / 'base'}; "
              + "".join(f"{name} {rev}; " for name, rev in zip(also, args.also)) + "tree: "
              f"{args.tree + ' exported and built' if args.tree else 'the working tree, its probe rebuilt'}", flush=True)
        if "cost" in parts:
            bench_dir = work / "cost"
            bench_dir.mkdir()
            known = interleaved.all_workloads(bench_dir, args.seconds)
            result["cost"] = []
            for name in args.cost_workloads.split(","):
                result["cost"].append(cost_part(trees, known[name], args.cycles, args.stats == "sysctl", bench_dir,
                                                args.async_floor))
                print_cost(result["cost"][-1])
        if "throughput" in parts:
            result["throughput"] = throughput_part(trees, workloads, observers, args.cycles, args.slot, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1))
    lost = (sum(v for r in result.get("throughput", {}).get("results", {}).values() for v in r["lost"].values())
            + sum(c["summary"][t]["lost"] for c in result.get("cost", []) for t in ("base", *also, "tree")))
    print(f"\nlost events or requests not followed, all runs: {lost}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
