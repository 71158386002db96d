#!/usr/bin/env python3
"""Observers switched on and off inside one long benchmark run, untraced stretches between.

Why: this VM's speed moves in steps of up to ±30 % that last seconds (fio's own 100 ms
bandwidth log shows it), so two separate 3 s runs compare two machines. Here one benchmark
process runs for the whole measurement, and each observer's stretch is compared with the
untraced stretches just before and after it.

What is measured: the bytes the benchmark's processes got from read calls, /proc/PID/io
`rchar`, sampled every 20 ms by this script: a count the kernel keeps for every process,
independent of the benchmark's report and of iowitness. io_uring and libaio reads are no read
calls and add nothing to rchar: for those workloads (Workload.progress "fio-status") fio
prints its cumulative io_bytes every 100 ms (--status-interval), each dump stamped with the
wall-clock millisecond fio wrote it (timestamp_ms), mapped onto CLOCK_MONOTONIC by this
script's own wall-minus-monotonic offset. Each cycle runs, in an order that
rotates: untraced, observer, untraced, next observer, ..., untraced, each for --slot seconds.
floor and timing-floor (probes/*.bpf.o) are loaded and attached by this process; iowitness
and iowitness-summary are `iowitness attach --pid PID --file F --duration SLOT`, and their
stretch is what the trace itself saw (first call to last, or the summary's first and last
call), never the Python start-up around it. A stretch's ratio is its rate over the mean rate
of the two untraced stretches around it. The last column is the median, over the cycles in
which both ran, of the observer's ratio minus the floor's: the way to read "within X of the
floor", since the machine's slower drifts cancel out of that difference.

Example (2 vCPU VM, fio 4 KiB random reads of a cached file, 10 cycles of 2 s slots):

    workload       observer           ratio median (range)   stretches  minus floor, same cycle
    fio-rand-read  floor              0.97 (0.93..1.01)      10
    fio-rand-read  iowitness          0.89 (0.85..0.93)      10         -0.08 (10)

Usage (as root, from the repository, after scripts/setup.sh and make -C probes):
  .venv/bin/python scripts/bench/interleaved.py --cycles 10 --slot 2 --json r.json
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
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tracers import IOWITNESS, Floor, Iowitness, TimingFloor  # noqa: E402
from workloads import all_workloads  # noqa: E402

from iowitness.analysis.read.run import load  # noqa: E402

WORKLOADS = ("fio-seq-read", "fio-rand-read", "pread-loop", "fio-iouring-rand-read", "fio-libaio-rand-read",
             "fio-libaio-direct-rand-read", "fio-iouring-direct-rand-read")
DEFAULT_WORKLOADS = ("fio-seq-read", "fio-rand-read", "pread-loop")
OBSERVERS = ("floor", "timing-floor", "iowitness", "iowitness-summary", "iowitness-compat")
# iowitness-compat (the compatible probe object, --probe compat) only when asked for
DEFAULT_OBSERVERS = ("floor", "timing-floor", "iowitness", "iowitness-summary")
SAMPLE_SECONDS = 0.02
EDGE_SECONDS = 0.1   # trimmed from each end of a stretch: attach and detach are not instant
# observers another script adds (probe_compare.py: a commit's probe and the tree's), by name:
# run_slot(pid, files, slot, out) -> the stretch the observer was on for, or None
SLOT_RUNNERS: dict = {}


def descendants(pid: int) -> list[int]:
    """pid and every process below it, from /proc's parent links."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2:].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def rchar(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/io").read_text().splitlines():
                if line.startswith("rchar:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_ns(pids: list[int]) -> int:
    """Nanoseconds the threads of these processes have run (/proc/PID/task/TID/schedstat): the
    system time includes the BPF programs run in their syscalls."""
    total = 0
    for p in pids:
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tids:
            try:
                total += int(Path(f"/proc/{p}/task/{t}/schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total


class Sampler(threading.Thread):
    """(CLOCK_MONOTONIC seconds, rchar of the process tree) every SAMPLE_SECONDS."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        # one list of pairs: the reader's copy never holds a time without its count
        self.pid, self.samples = pid, []
        self.cpu = []   # (CLOCK_MONOTONIC seconds, bytes, CPU ns of the process tree)
        self.halt = threading.Event()

    def run(self):
        pids = descendants(self.pid)
        next_tree = time.monotonic() + 1.0
        while not self.halt.is_set():
            now = time.monotonic()
            if now >= next_tree:   # fio starts its job process after it lays out the file
                pids, next_tree = descendants(self.pid), now + 1.0
            count, cpu = rchar(pids), cpu_ns(pids)
            stamp = time.monotonic()
            self.samples.append((stamp, count))
            self.cpu.append((stamp, count, cpu))
            self.halt.wait(SAMPLE_SECONDS)

    def rate(self, begin: float, end: float) -> float | None:
        """Bytes per second between two CLOCK_MONOTONIC instants, interpolated between samples."""
        samples = np.array(self.samples[:], dtype=float).reshape(-1, 2)
        times, counts = samples[:, 0], samples[:, 1]
        if end - begin < 0.2 or len(times) < 2 or begin < times[0] or end > times[-1]:
            return None
        return float((np.interp(end, times, counts) - np.interp(begin, times, counts)) / (end - begin))


    def rate_per_cpu(self, begin: float, end: float) -> float | None:
        """Bytes per CPU-second the benchmark ran between two instants: other load on the
        machine moves it far less than bytes per wall-clock second."""
        samples = np.array(self.cpu[:], dtype=float).reshape(-1, 3)
        times = samples[:, 0]
        if end - begin < 0.2 or len(times) < 2 or begin < times[0] or end > times[-1]:
            return None
        moved = np.interp(end, times, samples[:, 1]) - np.interp(begin, times, samples[:, 1])
        ran = np.interp(end, times, samples[:, 2]) - np.interp(begin, times, samples[:, 2])
        return float(moved / (ran / 1e9)) if ran > 0 else None


class FioStatusSampler(threading.Thread):
    """(CLOCK_MONOTONIC seconds, bytes fio has moved) from fio's --status-interval JSON dumps on
    its stdout: the progress of io_uring and libaio jobs, which /proc/PID/io does not count.

    Each dump is placed by its own wall-clock stamp (timestamp_ms, taken when fio wrote it),
    not by its arrival (fio's stdout is a pipe it buffers) nor by job_runtime (the first dumps
    of a job that is still starting carry a runtime that later restarts from zero: placed by
    it, every sample fell seconds early and no stretch had a rate)."""

    def __init__(self, bench: subprocess.Popen):
        super().__init__(daemon=True)
        self.bench, self.samples = bench, []
        self.unreadable = 0
        self.halt = threading.Event()

    def run(self):
        text = []
        for line in self.bench.stdout:
            text.append(line)
            if not line.startswith("}"):   # a dump ends with a closing brace alone on its line
                continue
            doc = "".join(text)
            text = []
            try:
                dump = json.loads(doc[doc.index("{"):])
                moved = sum(job[d]["io_bytes"] for job in dump["jobs"] for d in ("read", "write"))
                stamp = dump["timestamp_ms"] / 1e3
            except (ValueError, KeyError, TypeError):
                self.unreadable += 1
                continue
            wall_minus_monotonic = time.time() - time.monotonic()
            self.samples.append((stamp - wall_minus_monotonic, moved))

    def rate(self, begin: float, end: float) -> float | None:
        return Sampler.rate(self, begin, end)


def kernel_window(trace_path: Path) -> tuple[float, float] | None:
    """First and last call the trace saw, CLOCK_MONOTONIC seconds."""
    trace = load(trace_path)
    not_seen = trace.lost + trace.counters.get("requests_not_followed", 0)
    if not_seen:   # the stretch's figures still count; what it missed is said
        print(f"{trace_path.name}: {trace.lost} events lost, "
              f"{trace.counters.get('requests_not_followed', 0)} requests not followed", flush=True)
    if trace.summary is not None and len(trace.summary):
        first, last = trace.summary["first_start_ns"], trace.summary["last_end_ns"]
        return float(first[first > 0].min()) / 1e9, float(last.max()) / 1e9
    if trace.event_count:
        start = trace.events["start_ns"].to_numpy()
        return float(start.min()) / 1e9, float(start.max()) / 1e9
    return None


def hold(floor, slot: float) -> tuple[float, float]:
    """A floor's programs attached for `slot` seconds: the stretch they were on for."""
    floor.start()
    try:
        began = time.monotonic()
        time.sleep(slot)
        return began, time.monotonic()
    finally:
        floor.stop()


def run_slot(observer: str, pid: int, files: list[str], slot: float, out: Path) -> tuple[float, float] | None:
    """Switch the observer on for about `slot` seconds; the stretch it was on for."""
    if observer in SLOT_RUNNERS:
        return SLOT_RUNNERS[observer](pid, files, slot, out)
    if observer in ("floor", "timing-floor"):
        return hold(Floor() if observer == "floor" else TimingFloor(), slot)
    trace = out / "slot.iwt"
    options = Iowitness(summary=observer == "iowitness-summary",
                        probe="compat" if observer == "iowitness-compat" else None).options(files)
    done = subprocess.run([*IOWITNESS, "attach", "-q", "--pid", str(pid), "--duration", f"{slot:g}", "-o", str(trace),
                           *options], capture_output=True, text=True)
    if done.returncode != 0:   # one stretch lost, said, and the measurement goes on
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"{observer}: iowitness attach exited with {done.returncode}: {last}", flush=True)
        trace.unlink(missing_ok=True)
        return None
    window = kernel_window(trace)
    trace.unlink()
    return window


def untraced(slot: float) -> tuple[float, float]:
    began = time.monotonic()
    time.sleep(slot)
    return began, time.monotonic()


def trimmed(window: tuple[float, float]) -> tuple[float, float]:
    return window[0] + EDGE_SECONDS, window[1] - EDGE_SECONDS


def run_seconds(observers: list[str], cycles: int, slot: float) -> float:
    """How long the benchmark must run: every stretch, the attaches' start-up, and a margin.
    An `iowitness attach` took 26-34 s to start, record 0.6 s and write its trace beside two
    CPU hogs at load average 17-21, more at 23 (1.5 s on a quiet machine): a budget of the quiet
    figure, and one of 40 s an attach, let the pread loop end before the cycle's last stretches. The benchmark is stopped after the
    last cycle, so a long budget costs nothing."""
    attaching = sum(1 for o in observers if o not in ("floor", "timing-floor"))
    per_cycle = (2 * len(observers) + 1) * slot + 1.5 * len(observers) + 90 * attaching
    return cycles * per_cycle + 30


def measure(workload, observers: list[str], cycles: int, slot: float, out: Path) -> list[dict[str, float]]:
    """Each cycle's ratios, by observer (an observer whose stretch failed is missing from its cycle)."""
    workload.prepare()
    command = workload.command
    if workload.progress == "fio-status":
        # fio's dumps are read as they come, by the sampler: the pipe never fills
        bench = subprocess.Popen([*command, "--status-interval=100ms"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        sampler = FioStatusSampler(bench)
    else:
        # nothing is read from the benchmark while it runs: a pipe it filled would stop it
        bench = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        sampler = Sampler(bench.pid)
    measured: list[dict[str, float]] = []
    try:
        sampler.start()
        time.sleep(2.0)   # fio lays out and warms its file; the loop opens its own
        for cycle in range(cycles):
            order = observers if cycle % 2 == 0 else observers[::-1]
            order = order[cycle // 2 % len(order):] + order[:cycle // 2 % len(order)]
            stretch = untraced(slot)
            before, before_cpu = sampler_rate(sampler, stretch), cpu_rate(sampler, stretch)
            this_cycle = {}
            for observer in order:
                window = run_slot(observer, bench.pid, workload.files, slot, out)
                stretch = untraced(slot)
                after, after_cpu = sampler_rate(sampler, stretch), cpu_rate(sampler, stretch)
                if bench.poll() is not None:
                    if this_cycle:
                        measured.append(this_cycle)
                    print(f"{workload.name} ended early (exit code {bench.returncode}): keeping the "
                          f"{cycle} cycles measured", flush=True)
                    return measured
                traced = sampler_rate(sampler, window) if window else None
                if traced is not None and before and after:
                    this_cycle[observer] = traced / ((before + after) / 2)
                # the same per CPU-second of the benchmark (rchar workloads), under "observer@cpu"
                traced_cpu = cpu_rate(sampler, window) if window else None
                if traced_cpu is not None and before_cpu and after_cpu:
                    this_cycle[observer + "@cpu"] = traced_cpu / ((before_cpu + after_cpu) / 2)
                    # the rate itself (bytes per CPU-second): CPU-ns per call, two observers' apart
                    this_cycle[observer + "@cpu-rate"] = traced_cpu
                before, before_cpu = after, after_cpu
            measured.append(this_cycle)
            print(f"{workload.name} cycle {cycle + 1}: " + "  ".join(
                (f"{o} {this_cycle[o]:.3f}" if o in this_cycle else f"{o} -")
                + (f" ({this_cycle[o + '@cpu']:.3f}/cpu-s)" if o + "@cpu" in this_cycle else "") for o in order), flush=True)
            if any(o not in this_cycle for o in order):
                print(f"  (a '-' has no rate: {progress_state(sampler)})", flush=True)
    finally:
        sampler.halt.set()
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGINT)
            try:
                bench.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(bench.pid, signal.SIGKILL)
                bench.wait()
    return measured


def progress_state(sampler) -> str:
    """What the sampler holds, for a stretch that got no rate."""
    samples = sampler.samples[:]
    state = f"{len(samples)} progress samples"
    if samples:
        state += (f" from {samples[0][0]:.2f} to {samples[-1][0]:.2f} s (now {time.monotonic():.2f}), "
                  f"{samples[-1][1]:.0f} bytes")
    if getattr(sampler, "unreadable", 0):
        state += f", {sampler.unreadable} fio dumps unreadable"
    return state


def sampler_rate(sampler: Sampler, window: tuple[float, float]) -> float | None:
    # the sampler must have a sample past the window's end
    deadline = time.monotonic() + 1.0
    while sampler.samples and sampler.samples[-1][0] < window[1] and time.monotonic() < deadline:
        time.sleep(SAMPLE_SECONDS)
    return sampler.rate(*trimmed(window))


def cpu_rate(sampler, window: tuple[float, float]) -> float | None:
    """Bytes per CPU-second of the benchmark in the window (after sampler_rate waited for it);
    None for a sampler that does not follow CPU time (fio's status dumps)."""
    return sampler.rate_per_cpu(*trimmed(window)) if hasattr(sampler, "rate_per_cpu") else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS),
                        help=f"comma-separated, of: {', '.join(WORKLOADS)}")
    parser.add_argument("--observers", default=",".join(DEFAULT_OBSERVERS))
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--slot", type=float, default=2.0, help="seconds per stretch (default 2)")
    parser.add_argument("--dir", type=Path, help="where the benchmark files go (default: a new directory in /var/tmp)")
    parser.add_argument("--json", type=Path, help="write the ratios here")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run as root: the observers load BPF programs")
    observers, workloads = args.observers.split(","), args.workloads.split(",")
    unknown = [w for w in workloads if w not in WORKLOADS] + [o for o in observers if o not in OBSERVERS]
    if unknown:
        parser.error(f"unknown or unsupported: {', '.join(unknown)} (workloads: {', '.join(WORKLOADS)}; "
                     f"observers: {', '.join(OBSERVERS)})")
    for name in ("floor", "timing-floor"):
        reason = (Floor() if name == "floor" else TimingFloor()).unavailable()
        if name in observers and reason:
            parser.error(reason)
    if any(w.startswith("fio") for w in workloads) and not shutil.which("fio"):
        parser.error("fio is not installed (scripts/setup.sh installs it)")
    work = args.dir or Path(tempfile.mkdtemp(prefix="iowitness-interleaved-", dir="/var/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="iowitness-interleaved-out-", dir="/dev/shm"))
    known = all_workloads(work, run_seconds(observers, args.cycles, args.slot))
    results = {}
    try:
        results = run_all(args, known, observers, work, out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)
    width = max([15, *(len(name) + 2 for name in results)])
    print(f"\n{'workload':<{width}}{'observer':<19}{'ratio median (range)':<24}stretches  minus floor, same cycle")
    for name, rows in results.items():
        for o, r in rows.items():
            paired = f"{r['minus_floor']:+.3f} ({r['paired']})" if "minus_floor" in r else ""
            print(f"{name:<{width}}{o:<19}{r['median']:.3f} ({r['min']:.3f}..{r['max']:.3f})".ljust(width + 43)
                  + f"{r['n']}".ljust(11) + paired)
    if args.json:
        args.json.write_text(json.dumps({"cycles": args.cycles, "slot": args.slot, "results": results}, indent=1))
    return 0


def run_all(args, known, observers, work, out) -> dict:
    results = {}
    print(f"benchmark files in {work}, traces in {out}; {args.cycles} cycles of {args.slot:g} s slots", flush=True)
    for name in args.workloads.split(","):
        workload = known[name]
        results[name] = summarize(measure(workload, observers, args.cycles, args.slot, out), observers)
    return results


def summarize(measured: list[dict[str, float]], observers: list[str]) -> dict:
    """Median and range of each observer's ratios and, where the floor ran in the same cycle,
    the median of (observer - floor) over those cycles: the untraced neighbours of the two
    stretches are seconds apart, so the machine's slower drifts cancel out of the difference."""
    summary = {}
    for o in observers:
        r = [cycle[o] for cycle in measured if o in cycle]
        if not r:
            continue
        summary[o] = {"median": statistics.median(r), "min": min(r), "max": max(r), "n": len(r), "all": r}
        differences = [cycle[o] - cycle["floor"] for cycle in measured if o in cycle and "floor" in cycle]
        if o != "floor" and differences:
            summary[o].update(minus_floor=statistics.median(differences), paired=len(differences))
    return summary


if __name__ == "__main__":
    sys.exit(main())
