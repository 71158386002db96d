#!/usr/bin/env python3
"""How closely `iowitness replay` re-runs a recorded workload, and what a replayed call costs.

For each workload: record it once with `iowitness run`, replay it REPLAYS times into a fresh
directory on the same file system with --timing as-recorded (and once with fast), then
`iowitness compare --json` the original with its replays. Per phase (matched by compare:
name, record size, rank): bytes and calls of each replay against the original (must be equal),
and the wall-time error |replay - original| / original, its median over the replays and its
range. Then the player alone, with no probe, at --timing fast: wall ns per replayed call and
CPU seconds per million calls (getrusage of the player process).

Needs root (the probe), iozone, fio, sysbench and gcc. Prints one table per workload and a summary;
docs/replay.md keeps the figures with the command.

Usage: sudo .venv/bin/python scripts/bench/replay_fidelity.py --replays 5 --work /tmp/replay-bench [--player python]
       [--into-root /mnt/btrfs/replays]   (replays on another file system, the originals on --work's)
       [--into-fs xfs,btrfs]   (after the same-file-system replays, the first original replayed REPLAYS times
                                more into each file system named, made fresh on a loop device and removed after)
       [--into-fs-originals 3]   (and the workload itself run 3 times on each of those file systems, interleaved
                                  with the replays there: the replays against the originals on the same file system)
       [--originals 3]   (the workload run 3 times, interleaved with the replays: its own spread, the same way;
                          then each phase's replays' median against the originals' median and range)
       [--base-player /tmp/player-main]   (replayed REPLAYS times again by that build and by the tree's,
                          alternating: the time after a wait for libaio or io_uring completions, against the
                          original's)
Per kind of call it also prints the time from its end to the thread's next call, replay less original call
for call (the player's error in the gaps; a call that slept, a disk read, is where it was).
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
from pathlib import Path

IOWITNESS = [sys.executable, "-m", "iowitness.cli"]
ROOT = Path(__file__).resolve().parents[2]


def workloads(work: Path, scale: int) -> dict[str, list[str]]:
    bench = ROOT / "tests" / "workloads" / "threads_bench.c"
    exe = work / "threads_bench"
    subprocess.run(["gcc", "-O1", "-pthread", "-o", str(exe), str(bench)], check=True)
    return {
        "iozone -i0 -i1 -i2": ["iozone", "-i0", "-i1", "-i2", "-s", f"{16 * scale}m", "-r", "4k",
                               "-f", "{dir}/iozone.tmp"],
        "iozone -t 4": ["iozone", "-i0", "-i1", "-t", "4", "-s", f"{4 * scale}m", "-r", "4k",
                        "-F", "{dir}/f1", "{dir}/f2", "{dir}/f3", "{dir}/f4"],
        "fio psync randrw 4 jobs": ["fio", "--name=r", "--rw=randrw", "--bs=4k", f"--size={4 * scale}m",
                                    "--numjobs=4", "--ioengine=psync", "--directory={dir}",
                                    "--output-format=json", "--output={out}/fio.json"],
        "fio psync randread 4 jobs": ["fio", "--name=rr", "--rw=randread", "--bs=4k", f"--size={4 * scale}m",
                                      "--numjobs=4", "--ioengine=psync", "--directory={dir}",
                                      "--output-format=json", "--output={out}/fio.json"],
        "fio libaio iodepth 32": ["fio", "--name=a", "--rw=randrw", "--bs=4k", f"--size={8 * scale}m",
                                  "--ioengine=libaio", "--iodepth=32", "--direct=1", "--directory={dir}",
                                  "--output-format=json", "--output={out}/fio.json"],
        "fio io_uring iodepth 32": ["fio", "--name=u", "--rw=randrw", "--bs=4k", f"--size={8 * scale}m",
                                    "--ioengine=io_uring", "--iodepth=32", "--direct=1", "--directory={dir}",
                                    "--output-format=json", "--output={out}/fio.json"],
        # sysbench's files are laid out first (PREPARE, not traced) in the data directory, its cwd
        "sysbench fileio rndrw 2 threads": ["sysbench", "fileio", "--file-num=2", f"--file-total-size={8 * scale}M",
                                            "--file-test-mode=rndrw", "--threads=2", f"--events={2000 * scale}",
                                            "--time=0", "run"],
        "dd fdatasync": ["dd", "if=/dev/zero", "of={dir}/dd.out", "bs=1M", f"count={16 * scale}",
                         "conv=fdatasync"],
        "threads_bench 4 threads one file": [str(exe), "one", "{dir}/shared.dat", "4", str(8 * scale)],
    }


def run(argv: list[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check, **kw)


def fidelity(name: str, command: list[str], work: Path, replays: int, player: str,
             into_root: Path | None = None, originals: int = 1) -> dict:
    base = work / name.replace(" ", "_")
    shutil.rmtree(base, ignore_errors=True)
    original = base / "orig.iwt"

    def record(trace: Path) -> None:
        record_run(command, base / "data", base, trace)

    record(original)
    argv = [a.format(dir=base / "data", out=base) for a in command]
    traces = []
    again = []   # the workload's other runs, each against the first as a replay is: its own noise
    into_base = (into_root / name.replace(" ", "_")) if into_root else base
    for k in range(replays):
        out = base / f"replay-{k}.iwt"
        run([*IOWITNESS, "replay", "-q", str(original), "--into", str(into_base / f"into-{k}"), "-o", str(out),
             "--player", player])
        traces.append(out)
        # removed once its trace is written, as each original's data directory is before the next
        # run: kept, the replays' files piled up (5 x 32 MiB of IOzone's) and each replay ran
        # beside more of them than the last (IOzone's write phase 30.8 to 40.6 ms in turn, its
        # originals 30.8 to 38.7, replay31j's slot)
        shutil.rmtree(into_base / f"into-{k}", ignore_errors=True)
        if k + 1 < originals:   # interleaved with the replays: the same machine's load for both
            again.append(base / f"orig-{k + 1}.iwt")
            record(again[-1])
    fast = base / "replay-fast.iwt"
    run([*IOWITNESS, "replay", "-q", str(original), "--into", str(into_base / "into-fast"), "-o", str(fast),
         "--player", player, "--timing", "fast"])
    shutil.rmtree(into_base / "into-fast", ignore_errors=True)
    rows = phase_rows(original, traces)
    # per phase of the report (named, on its file, ranked in time), the duration less the
    # time its thread spent preempted (runnable, off the CPU) in its window, in each trace: the
    # error of the replay itself, apart from the machine's load at each run (signed: + slower);
    # and the same for the workload's other runs against the first: how far it is from itself
    base_phases = unloaded(original)
    quiet: list[dict] = []
    for label, runs in (("replay", traces), ("another original", again)):
        spread: dict[tuple, list[float]] = {}
        for trace in runs:
            other = unloaded(trace)
            for key, (d0, _, _) in base_phases.items():
                if key in other and d0 > 0:
                    spread.setdefault(key, []).append((other[key][0] - d0) / d0 * 100)
        quiet += [{"phase": " ".join(map(str, key)), "of": label, "original_s": base_phases[key][0],
                   "preempted_pct": base_phases[key][1], "error_pct_median": statistics.median(e),
                   "error_pct_range": (min(e), max(e))} for key, e in spread.items()]
    among = against_originals([original, *again], traces)
    # the whole run's data calls, first to last, every thread's: the time a multi-threaded
    # benchmark's own clock measures (threads_bench's one figure), whatever each thread's share;
    # and where its threads' time went in it
    runs_ms = {"originals": [run_times(t) for t in [original, *again]], "replays": [run_times(t) for t in traces]}
    return {"workload": name, "command": " ".join(argv), "phases": rows, "unloaded": quiet, "original": str(original),
            "originals": [str(t) for t in [original, *again]], "among_originals": among, "run_ms": runs_ms,
            "after_wait_ns": {"original": _median(gaps_after_waits(original)),
                              "replays": [_median(gaps_after_waits(t)) for t in traces],
                              "fast": _median(gaps_after_waits(fast)),
                              "matched": [waits_matched(original, t) for t in traces]},
            "own_gap_ns": {"original": median_gap(original), "replay_fast": median_gap(fast)},
            "gaps_after": gaps_after(original, traces, fast)}


def record_run(command: list[str], data: Path, out: Path, trace: Path) -> None:
    """The workload run afresh under the probe, its files in `data` (made anew: fio lays its
    files out again, sysbench prepares them again), its own outputs in `out`."""
    argv = [a.format(dir=data, out=out) for a in command]
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    cwd = out
    if argv[:2] == ["sysbench", "fileio"]:
        cwd = data
        run([*argv[:4], "prepare"], cwd=cwd)
        # written to disk, as the replay's own copies are: otherwise the run's first fsyncs
        # also write what prepare left dirty (4x slower fsyncs than the replay's, measured)
        run(["sync"])
    run([*IOWITNESS, "run", "-q", "-o", str(trace), "--file", str(data), "--", *argv], cwd=cwd)


def phase_rows(original: Path, traces: list[Path]) -> list[dict]:
    """Per phase `compare` pairs (name, record size, rank): bytes and calls of each replay against
    the original's (equal or not), and the wall-time error |replay - original| / original."""
    compared = json.loads(run([*IOWITNESS, "compare", "--json", str(original), *map(str, traces)]).stdout)
    rows: list[dict] = []
    for phase in compared["phases"]:
        metric = {m["metric"]: m["values"] for m in phase["metrics"]}
        if not all(phase["present"]) or "duration" not in metric:
            rows.append({"phase": phase["name"], "present": phase["present"]})
            continue
        d0 = metric["duration"][0]
        errors = [abs(d - d0) / d0 * 100 for d in metric["duration"][1:]] if d0 else []
        rows.append({"phase": phase["name"], "bytes_equal": len(set(metric["bytes"])) == 1,
                     "calls_equal": len(set(metric["ops"])) == 1, "original_s": d0,
                     "error_pct_median": statistics.median(errors) if errors else None,
                     "error_pct_range": (min(errors), max(errors)) if errors else None})
    return rows


def against_originals(originals: list[Path], replays: list[Path]) -> list[dict]:
    """Per one-thread phase, its wall time in every original and every replay, both whole and less
    its thread's preemption: the replays' median set against the originals' own median and range
    (not against the first original alone)."""
    durations: dict[str, dict[tuple, list[tuple[float, float]]]] = {"original": {}, "replay": {}}
    for which, traces in (("original", originals), ("replay", replays)):
        for trace in traces:
            for key, (less, _, whole) in unloaded(trace).items():
                durations[which].setdefault(key, []).append((less, whole))
    among = []
    for key, mine in durations["original"].items():
        theirs = durations["replay"].get(key)
        if not theirs or len(mine) < 2:
            continue
        row: dict = {"phase": " ".join(map(str, key))}
        for k, suffix in ((0, ""), (1, "_whole")):
            o, r = [d[k] for d in mine], [d[k] for d in theirs]
            mid = statistics.median(o)
            row |= {f"originals_ms{suffix}": [d * 1e3 for d in o], f"replays_ms{suffix}": [d * 1e3 for d in r],
                    f"replay_median_vs_originals_median_pct{suffix}": (statistics.median(r) - mid) / mid * 100,
                    f"originals_range_pct{suffix}": ((min(o) - mid) / mid * 100, (max(o) - mid) / mid * 100)}
        among.append(row)
    return among


def into_file_system(fs: str, original: Path, originals: list[Path], replays: int, player: str,
                     size_mb: int, command: list[str] | None = None, originals_there: int = 0) -> dict:
    """The original replayed `replays` times into `fs`, made fresh on a loop device of `size_mb`
    (tests/support/blockdev.py: unmounted and detached after, whatever happens); each replay's
    directory removed once its trace is written, so that the device need hold one replay.
    With `originals_there`, the workload (`command`) itself also run that many times on the same
    device, interleaved with the replays: the replays set against the originals on that file
    system (ARTC's measure of a replay across platforms: replay on B against original on B), as
    well as against the `originals` the trace came from."""
    sys.path.insert(0, str(ROOT))
    from tests.support.blockdev import loop_fs

    base = original.parent
    traces: list[Path] = []
    there: list[Path] = []
    with loop_fs(fs, size_mb) as (_, mnt):
        for k in range(max(replays, originals_there)):
            if k < replays:
                out = base / f"replay-{fs}-{k}.iwt"
                into = Path(mnt) / f"into-{k}"
                run([*IOWITNESS, "replay", "-q", str(original), "--into", str(into), "-o", str(out),
                     "--player", player])
                shutil.rmtree(into, ignore_errors=True)
                traces.append(out)
            if command and k < originals_there:
                there.append(base / f"orig-{fs}-{k}.iwt")
                record_run(command, Path(mnt) / "orig-data", base, there[-1])
                shutil.rmtree(Path(mnt) / "orig-data", ignore_errors=True)
    return {"fs": fs, "phases": phase_rows(original, traces), "among_originals": against_originals(originals, traces),
            "among_originals_there": against_originals(there, traces) if there else [],
            "run_ms": [run_times(t) for t in traces], "originals_there_run_ms": [run_times(t) for t in there]}


def players_ab(original: Path, base_player: str, replays: int, into: Path, out: Path,
               phases: dict | None = None) -> dict[str, list[float]]:
    """The recorded original replayed `replays` times by the tree's native player and as often by
    `base_player` (an earlier build), alternating, the order reversed each time: each replay's
    median time from the last completion a thread waited for to its next call, less the
    original's. The base build is put in the native player's place for its replays, and the
    tree's put back after each. `phases`, when given, gets per build each one-thread phase's
    time less preemption per replay ({build: {phase: [s, ...]}}) and the calls before which
    the original and the replay slept ({build + " sleeps": [[original, replay, both], ...]})."""
    from iowitness.commands.replay import NATIVE_PLAYER

    tree = out / "tree-player"
    shutil.copy2(NATIVE_PLAYER, tree)
    base = _median(gaps_after_waits(original)) or 0.0
    found: dict[str, list[float]] = {"tree": [], "base": []}
    try:
        for k in range(replays):
            for which in (("tree", "base") if k % 2 == 0 else ("base", "tree")):
                shutil.copy2(tree if which == "tree" else base_player, NATIVE_PLAYER)
                trace = out / f"ab-{which}-{k}.iwt"
                shutil.rmtree(into / f"ab-{which}-{k}", ignore_errors=True)
                run([*IOWITNESS, "replay", "-q", str(original), "--into", str(into / f"ab-{which}-{k}"), "-o",
                     str(trace)])
                got = _median(gaps_after_waits(trace))
                if got is not None:
                    found[which].append(got - base)
                same = waits_matched(original, trace)
                if phases is not None:
                    for key, (less, _, _) in unloaded(trace).items():
                        phases.setdefault(which, {}).setdefault(" ".join(map(str, key)), []).append(less)
                    if same:
                        phases.setdefault(f"{which} sleeps", []).append(
                            [same["original"], same["replay"], same["both"]])
                if same and same["both_diff_ns"] is not None:   # at the calls before which both slept
                    found.setdefault(f"{which}, at the calls before which both slept", []).append(
                        same["both_diff_ns"])
    finally:
        shutil.copy2(tree, NATIVE_PLAYER)
    return found


def unloaded(trace: Path) -> dict[tuple, tuple[float, float, float]]:
    """Per one-thread phase of the trace's report, keyed (name, file name, rank among the
    phases of that name on that file in time order): its duration (first to last data call) less the time its
    thread spent preempted in that window (off-CPU records of state 0), the preempted
    share of the duration in %, and the whole duration (s)."""
    import numpy as np

    from iowitness.analysis.read.run import load

    report = json.loads(run([*IOWITNESS, "report", "--json", str(trace)]).stdout)
    off = load(trace).offcpu
    off = off[off["state"] == 0] if off is not None and len(off) else None
    out: dict[tuple, tuple[float, float, float]] = {}
    seen: dict[tuple, int] = {}
    for p in sorted(report["phases"], key=lambda p: int(p["data_first_ns"] or 0)):
        if p.get("threads") != 1:   # several threads' preemptions overlap: not one figure
            continue
        a, b = int(p["data_first_ns"] or 0), int(p["data_last_ns"] or 0)
        lost = 0
        if off is not None:
            mine = off[off["tid"] == p["tid"]]
            lo = np.maximum(mine["off_ns"].astype(np.int64), a)
            hi = np.minimum(mine["on_ns"].astype(np.int64), b)
            lost = int(np.maximum(hi - lo, 0).sum())
        span = max(b - a, 0)
        name = (p.get("benchmark_name") or p["name"], os.path.basename(str(p.get("path") or "")))
        rank = seen[name] = seen.get(name, -1) + 1
        out[(*name, rank)] = ((span - lost) / 1e9, lost / span * 100 if span else 0.0, span / 1e9)
    return out


RUN_TIMES = {"span": "first to last", "in_calls": "inside them", "blocked": "blocked (D)", "asleep": "asleep"}


def run_times(trace: Path) -> dict[str, float]:
    """The run's data calls, in ms: from the first one's start to the last one's end, over every
    thread (span); the time inside them, summed over the threads (in_calls: a lock the threads
    contend for is in it); and the off-CPU time of their threads in the span, blocked
    (uninterruptible, state 2: the lock, the disk) and asleep (state 1: a replay's waits on
    another thread, its starts)."""
    import numpy as np

    from iowitness.analysis.read.run import load
    from iowitness.replay.plan_layout import READS, WRITES

    run_ = load(trace)
    e = run_.events
    data = e[e["syscall"].astype(str).isin(READS + WRITES).to_numpy()]
    if not len(data):
        return dict.fromkeys(RUN_TIMES, 0.0)
    start, end = data["start_ns"].to_numpy(np.int64), data["end_ns"].to_numpy(np.int64)
    a, b = int(start.min()), int(end.max())
    out = {"span": (b - a) / 1e6, "in_calls": float((end - start).sum()) / 1e6, "blocked": 0.0, "asleep": 0.0}
    off = run_.offcpu
    if off is not None and len(off):
        off = off[np.isin(off["tid"], data["tid"].unique())]
        on, gone = off["on_ns"].astype(np.int64), off["off_ns"].astype(np.int64)
        within = np.maximum(np.minimum(on, b) - np.maximum(gone, a), 0)
        out["blocked"] = float(within[off["state"] == 2].sum()) / 1e6
        out["asleep"] = float(within[off["state"] == 1].sum()) / 1e6
    return out


def gaps_after_waits(trace: Path):
    """gaps_after_waits_per_thread's gaps after the calls before which the thread slept, every
    thread's together."""
    import numpy as np

    out = [gap[waited] for waited, gap in gaps_after_waits_per_thread(trace)]
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def waits_matched(original: Path, trace: Path) -> dict | None:
    """The replay's waits for completions set against the original's call for call (the k-th call
    of the k-th thread with requests, both in their order): before how many calls each slept,
    before how many both did, and at those the replay's time from the last completion to the
    call less the original's, median. The medians of gaps_after_waits compare different calls
    when the replay waits elsewhere than the original (an io_uring replay holds its ring to the
    most it ever held); this compares the same ones. None when the threads' calls do not pair."""
    import numpy as np

    mine, theirs = gaps_after_waits_per_thread(original), gaps_after_waits_per_thread(trace)
    if len(mine) != len(theirs) or any(len(a[0]) != len(b[0]) for a, b in zip(mine, theirs)):
        return None
    w0 = np.concatenate([w for w, _ in mine]) if mine else np.zeros(0, bool)
    w1 = np.concatenate([w for w, _ in theirs]) if theirs else np.zeros(0, bool)
    g0 = np.concatenate([g for _, g in mine]) if mine else np.zeros(0, np.int64)
    g1 = np.concatenate([g for _, g in theirs]) if theirs else np.zeros(0, np.int64)
    both = w0 & w1
    return {"original": int(w0.sum()), "replay": int(w1.sum()), "both": int(both.sum()),
            "both_diff_ns": float(np.median(g1[both] - g0[both])) if both.any() else None}


def gaps_after_waits_per_thread(trace: Path) -> list:
    """Per thread with libaio or io_uring requests (in tid order), for each of its calls but the
    first: whether the thread slept waiting for a completion before it, and the time from the
    last completion it got back to it. It slept before a call when that completion came after
    the thread was free again from its previous call and an off-CPU record of the thread asleep
    ended in between (the io_getevents that reaped a libaio request, the io_uring_enter that
    waited for a completion; an io_uring completion posted while the thread was busy is no
    wait). The plan's think time runs from that completion; the replay's
    gap there is that think time plus the way back from its own wait."""
    import numpy as np

    from iowitness.analysis.read.run import load

    run_ = load(trace)
    e = run_.events.sort_values(["tid", "start_ns"], kind="stable")
    off = run_.offcpu
    asleep = off[off["state"] != 0] if off is not None and len(off) else None
    out = []
    for tid, mine in e.groupby("tid", sort=True):   # in tid order: the order the threads were made
        is_async = mine["syscall"].astype(str).str.startswith(("aio_", "uring_")).to_numpy()
        if not is_async.any():
            continue
        start, end = mine["start_ns"].to_numpy(np.int64), mine["end_ns"].to_numpy(np.int64)
        free = np.where(is_async, start, end)   # the thread free again after the call
        done = np.sort(end[is_async])
        k = np.searchsorted(done, start[1:], side="right") - 1
        last = np.where(k >= 0, done[np.maximum(k, 0)], 0)
        woke = np.sort(asleep["on_ns"][asleep["tid"] == tid].astype(np.int64)) if asleep is not None \
            else np.zeros(0, np.int64)
        slept = np.searchsorted(woke, start[1:], side="right") > np.searchsorted(woke, free[:-1], side="right")
        waited = (last > free[:-1]) & slept
        out.append((waited, start[1:] - last))
    return out


def _median(values) -> float | None:
    return float(statistics.median(values.tolist())) if len(values) else None


def median_gap(trace: Path) -> float:
    """Median time between the end of a thread's call and the start of its next one: in a
    --timing fast replay, the player's own time per call (the probe's share is in both)."""
    import numpy as np

    from iowitness.analysis.read.run import load

    e = load(trace).events.sort_values(["tid", "start_ns"])
    same = e["tid"].to_numpy()[1:] == e["tid"].to_numpy()[:-1]
    gaps = e["start_ns"].to_numpy()[1:].astype(np.int64) - e["end_ns"].to_numpy()[:-1].astype(np.int64)
    return float(np.median(gaps[same])) if same.any() else float("nan")


def gaps_after(original: Path, traces: list[Path], fast: Path) -> dict[str, dict]:
    """Per kind of call, the time from its end to the thread's next call, call for call (the same
    call of the same thread, threads matched as replay_time_split.py matches them): the
    original's median, each replay's median difference from it (+: the replay's gap longer), and
    the --timing fast replay's median (the player's own time after such a call). A call that slept
    (a disk read) costs the player more after it than one that did not: where its gaps go wrong."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import numpy as np
    from replay_time_split import matched, per_thread

    def after(threads: list) -> tuple:
        names = np.concatenate([t[0][:-1] for t in threads]) if threads else np.array([])
        gaps = np.concatenate([t[2][1:] for t in threads]) if threads else np.array([])
        return names, gaps

    base = per_thread(str(original))
    names, gap0 = after(base)
    diffs: dict[str, list[float]] = {}
    for trace in traces:
        other = matched(base, per_thread(str(trace)))
        if other is None:
            continue
        _, gap1 = after(other)
        for kind in set(names.tolist()):
            m = names == kind
            diffs.setdefault(kind, []).append(float(np.median(gap1[m] - gap0[m])))
    fast_names, fast_gaps = after(per_thread(str(fast)))
    out = {}
    for kind in sorted(set(names.tolist())):
        m = names == kind
        if m.sum() < 20:   # too few to say
            continue
        d = diffs.get(kind, [])
        f = fast_gaps[fast_names == kind]
        out[kind] = {"calls": int(m.sum()), "original_ns": float(np.median(gap0[m])),
                     "replay_minus_original_ns": d,
                     "fast_ns": float(np.median(f)) if len(f) else None}
    return out


def player_cost(original: str, work: Path, player: str) -> dict:
    """The player alone (no probe) at --timing fast: ns per call, CPU-s per million calls."""
    from iowitness.commands.replay import NATIVE_PLAYER
    from iowitness.replay import paths, plan as replay_plan

    p = replay_plan.build(original)
    into = work / "cost-into"
    shutil.rmtree(into, ignore_errors=True)
    paths.prepare(str(into), [f["rel"] for f in p.files], [f["size"] for f in p.files],
                  [f["precreate"] for f in p.files], force=False, cold=[f.get("cold", False) for f in p.files])
    if player == "native":
        plan_path = work / "cost-plan.bin"
        p.save_native(str(plan_path))
        argv = [NATIVE_PLAYER]
    else:
        plan_path = work / "cost-plan.npz"
        p.save(str(plan_path))
        argv = [sys.executable, "-m", "iowitness.replay.player"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = run([*argv, str(plan_path), str(into), "0"], check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = out.stdout.splitlines()[0]
    # the player's own figure: calls and seconds from its first call to its last
    calls = len(p.calls)
    replay_s = float(line.split(" calls in ")[1].split(", ")[1].split(" s;")[0])
    return {"calls": calls, "ns_per_call": replay_s / calls * 1e9, "process_wall_s": wall,
            "cpu_s_per_million": cpu / calls * 1e6}


def print_phases(rows: list[dict], among: list[dict]) -> None:
    """The per-phase table: bytes and calls against the original, then each one-thread phase's
    wall time, whole and less preemption, the replays' median against the originals'."""
    for row in rows:
        if "present" in row:
            print(f"  {row['phase']:<28} not in every run: {row['present']}")
            continue
        med, rng = row["error_pct_median"], row["error_pct_range"]
        print(f"  {row['phase']:<28} bytes equal {row['bytes_equal']!s:<5} calls equal {row['calls_equal']!s:<5} "
              f"original {row['original_s'] * 1e3:9.1f} ms  wall error median {med:6.1f} % "
              f"(range {rng[0]:.1f}-{rng[1]:.1f} %)")
    if among:
        print("  the replays' median against the originals' median (the originals' own range), "
              "whole | less preemption:")
    for row in among:
        whole = []
        for suffix in ("_whole", ""):
            lo, hi = row[f"originals_range_pct{suffix}"]
            whole.append(f"originals {'/'.join(f'{d:.1f}' for d in row[f'originals_ms{suffix}'])} ms, replays "
                         f"{'/'.join(f'{d:.1f}' for d in row[f'replays_ms{suffix}'])} ms: "
                         f"{row[f'replay_median_vs_originals_median_pct{suffix}']:+6.1f} % ({lo:+.1f} to {hi:+.1f} %)")
        print(f"    {row['phase']:<30} {whole[0]} | {whole[1]}")


def print_run_times(originals: list[dict], replays: list[dict]) -> None:
    """The run's data calls, first to last and where the threads' time went: the replays' median
    against the originals' median and range (run_times, per trace)."""
    if len(originals) < 2 or not replays:
        return
    print("  the run's data calls, every thread's (replays' median against the originals'):")
    for key, words in RUN_TIMES.items():
        mine, theirs = [t[key] for t in originals], [t[key] for t in replays]
        mid = statistics.median(mine)
        against = (f"{(statistics.median(theirs) - mid) / mid * 100:+.1f} % (originals "
                   f"{(min(mine) - mid) / mid * 100:+.1f} to {(max(mine) - mid) / mid * 100:+.1f} %)" if mid
                   else "-")
        print(f"    {words:<14} originals {'/'.join(f'{d:.1f}' for d in mine)} ms, replays "
              f"{'/'.join(f'{d:.1f}' for d in theirs)} ms; {against}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=5)
    parser.add_argument("--scale", type=int, default=2, help="workload size multiplier (default %(default)s)")
    parser.add_argument("--work", default="/tmp/replay-bench")
    parser.add_argument("--only", help="run only workloads whose name contains one of these, comma-separated")
    parser.add_argument("--player", choices=("native", "python"), default="native")
    parser.add_argument("--originals", type=int, default=1,
                        help="runs of the workload itself, the first replayed; each other one (interleaved with the "
                             "replays) set against the first as a replay is: how far the workload is from itself here")
    parser.add_argument("--base-player", help="an earlier build of replay/player.c: the original replayed as many "
                                              "times again by it and by the tree's, alternating, and each set's "
                                              "time after a wait for completions set against the original's")
    parser.add_argument("--into-root", help="replay under this directory (another file system: mount it first) "
                                            "instead of beside the original")
    parser.add_argument("--into-fs", default="", help="comma-separated file systems (xfs, btrfs, ext4): after the "
                                                     "same-file-system replays, the first original replayed REPLAYS "
                                                     "times more into each, made fresh on a loop device")
    parser.add_argument("--into-fs-only", help="only for workloads whose name contains one of these, comma-separated "
                                               "(default: every one)")
    parser.add_argument("--into-fs-mb", type=int, default=1024, help="the loop device's size (default %(default)s)")
    parser.add_argument("--into-fs-originals", type=int, default=0,
                        help="with --into-fs: the workload itself also run this many times on each file system, "
                             "interleaved with the replays there, and the replays set against those originals")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = []
    commands = workloads(work, args.scale)
    for name, command in commands.items():
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        if not shutil.which(command[0]) and not os.path.exists(command[0]):
            print(f"# {name}: {command[0]} not installed, skipped")
            continue
        print(f"# {name}: from {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.2f}")
        load_before = os.getloadavg()[0]
        r = fidelity(name, command, work, args.replays, args.player,
                     Path(args.into_root) if args.into_root else None, args.originals)
        r["player"] = player_cost(r["original"], work, args.player)
        if args.base_player:
            base = Path(r["original"]).parent
            r["players_ab_phases"] = {}
            r["players_ab"] = players_ab(Path(r["original"]), args.base_player, args.replays, base, base,
                                         r["players_ab_phases"])
        r["load"] = [load_before, os.getloadavg()[0]]   # the 1-minute load average before and after
        results.append(r)
        (work / "results.json").write_text(json.dumps(results, indent=1))   # kept as it goes: a run cut short
        print(f"## {name} (to {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {r['load'][0]:.2f} then "
              f"{r['load'][1]:.2f})\n$ {r['command']}")
        print_phases(r["phases"], r["among_originals"])
        print("  less each run's preemption, signed (+: slower than the first original):")
        for row in r["unloaded"]:
            med, rng = row["error_pct_median"], row["error_pct_range"]
            print(f"    {row['of']:<16} {row['phase']:<30} original {row['original_s'] * 1e3:8.1f} ms "
                  f"({row['preempted_pct']:3.0f} % preempted besides)  error median {med:+7.1f} % "
                  f"(range {rng[0]:+.1f} to {rng[1]:+.1f} %)")
        print_run_times(r["run_ms"]["originals"], r["run_ms"]["replays"])
        waits = r["after_wait_ns"]
        if waits["original"] is not None:
            diffs = [w - waits["original"] for w in waits["replays"] if w is not None]
            print(f"  time from the last completion a thread waited for to its next call, median: original "
                  f"{waits['original']:,.0f} ns; replay - original {statistics.median(diffs):+,.0f} ns (replays "
                  f"{min(diffs):+,.0f} to {max(diffs):+,.0f}); at --timing fast {waits['fast'] or 0:,.0f} ns")
            matched = [m for m in waits["matched"] if m]
            same = [m["both_diff_ns"] for m in matched if m["both_diff_ns"] is not None]
            if matched:
                print(f"    call for call: the original slept before {matched[0]['original']} calls, the replays "
                      f"before "
                      f"{'/'.join(str(m['replay']) for m in matched)}, both before "
                      f"{'/'.join(str(m['both']) for m in matched)}; there, replay - original "
                      + (f"{statistics.median(same):+,.0f} ns (replays {min(same):+,.0f} to {max(same):+,.0f})"
                         if same else "-"))
        print("  time from a call's end to its thread's next call, by the call (replay - original, call for call):")
        for kind, g in r["gaps_after"].items():
            d = g["replay_minus_original_ns"]
            spread = (f"median {statistics.median(d):+6.0f} ns (replays {min(d):+.0f} to {max(d):+.0f})" if d
                      else "not matched")
            fast = f"{g['fast_ns']:,.0f}" if g["fast_ns"] is not None else "-"
            print(f"    after {kind:<12} {g['calls']:>7} calls  original {g['original_ns']:7,.0f} ns  "
                  f"as-recorded {spread}  fast {fast} ns")
        for which, diffs in r.get("players_ab", {}).items():
            if diffs:
                print(f"  {which.replace(',', ' player,') if ',' in which else which + ' player'}, alternating: time "
                      f"after a wait for completions, replay - original, median "
                      f"{statistics.median(diffs):+,.0f} ns (replays {min(diffs):+,.0f} to {max(diffs):+,.0f})")
        ab = r.get("players_ab_phases") or {}
        for row in r["among_originals"] if ab else ():   # each build's replays against the originals
            mid = statistics.median(row["originals_ms"])
            said = []
            for which in ("tree", "base"):
                ms = [x * 1e3 for x in ab.get(which, {}).get(row["phase"], [])]
                if ms:
                    said.append(f"{which} {statistics.median(ms):.1f} ms "
                                f"({(statistics.median(ms) - mid) / mid * 100:+.1f} %, {min(ms):.1f}-{max(ms):.1f})")
            print(f"  {row['phase']:<28} less preemption, originals' median {mid:.1f} ms; alternating: "
                  + "; ".join(said))
        for which in ("tree", "base"):
            if ab.get(f"{which} sleeps"):
                print(f"  {which} player: calls before which the original / the replay / both slept: "
                      + ", ".join("/".join(map(str, x)) for x in ab[f"{which} sleeps"]))
        gap = r["own_gap_ns"]
        print(f"  time between a thread's calls, median: original {gap['original']:,.0f} ns, "
              f"{args.player} replay at --timing fast {gap['replay_fast']:,.0f} ns")
        pc = r["player"]
        print(f"  {args.player} player alone, fast: {pc['calls']:,} calls, {pc['ns_per_call']:,.0f} ns per call, "
              f"{pc['cpu_s_per_million']:.2f} CPU-s per million calls")
        sys.stdout.flush()
    # then across file systems, once every workload has its same-file-system table: the same
    # first original replayed into each file system, against the same originals
    for r in results if args.into_fs else ():
        if args.into_fs_only and not any(part in r["workload"] for part in args.into_fs_only.split(",")):
            continue
        r["into_fs"] = []
        for fs in args.into_fs.split(","):
            before = os.getloadavg()[0]
            other = into_file_system(fs, Path(r["original"]), [Path(t) for t in r["originals"]], args.replays,
                                     args.player, args.into_fs_mb, commands[r["workload"]], args.into_fs_originals)
            other["load"] = [before, os.getloadavg()[0]]
            r["into_fs"].append(other)
            (work / "results.json").write_text(json.dumps(results, indent=1))
            print(f"## {r['workload']} replayed into {fs} (a fresh loop device), against the originals on "
                  f"{args.work}'s file system (to {time.strftime('%H:%M:%S', time.gmtime())} UTC, load "
                  f"{before:.2f} then {other['load'][1]:.2f})")
            print_phases(other["phases"], other["among_originals"])
            if other["among_originals_there"]:
                print(f"  against {len(other['originals_there_run_ms'])} runs of the workload itself on {fs} "
                      "(replay on B against original on B):")
                print_phases([], other["among_originals_there"])
                print_run_times(other["originals_there_run_ms"], other["run_ms"])
            sys.stdout.flush()
    (work / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
