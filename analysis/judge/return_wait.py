"""A benchmark that times each call from its own thread: its clock runs on while the thread
waits for a CPU right after the call returns (spec `window = "busy"`).

stress-ng's hdd stressor (stress-hdd.c, 0.15) reads its clock before each lseek+read (write)
and after it, and prints bytes over the sum of those times, per instance ("MB/sec read rate",
MB = 2^20, the geometric mean over instances). The trace's busy figure (bytes over the time
inside the calls) leaves out what lies between a call's exit and the benchmark's next clock
read. On a machine with more runnable threads than CPUs most of that is a wait for a CPU: the
kernel preempts a thread whose time slice ran out during the call at the call's return to user
space, after the exit the trace records. The probe's off-CPU records (probes/offcpu.bpf.h) show
those waits: a stretch off the CPU that begins within RETURN_NS of the exit of a data call that
moved data (stress-ng adds a call's time only when it did: a 5 ms wait after a failed preadv2
under --hdd-opts fsync, counted, made the figure with the waits 3.6 GB/s against the claim's 6.2
and its busy 8.4, a false DISAGREES).

    apply(verdicts, report, trace, tolerance)

For a `busy` claim below the busy figure that disagrees: counting those waits, a figure that
fits makes the verdict EXPLAINED, saying so with the numbers; one that still does not fit but
leaves the claim between the calls' wall figure and the busy figure with the waits is CANNOT
JUDGE: the rest lies in user space between the call's exit and the benchmark's clock, where the
trace has no clock (measured on stress-ng --hdd under load 8-10: 11 µs per read left over on
one run, 1 µs on another). A claim outside that range still DISAGREES.
"""

from __future__ import annotations

import numpy as np

from iowitness import units
from iowitness.analysis.measure.device import scheduler_records
from iowitness.analysis.measure.figures import fmt
from iowitness.analysis.phasing import phases as phase_module

# a stretch off the CPU beginning this soon after a call's exit is the preemption at its return
# to user space (stress-ng --hdd under load: all such stretches began 2-5 µs after the exit,
# none between 5 and 20 µs)
RETURN_NS = 5_000


def _waits(trace, report, verdict) -> tuple[float, float, float, int, int] | None:
    """(amount, ns inside the calls, ns preempted at their return, calls so, calls) of the
    verdict's phases in its direction, or None without off-CPU records."""
    off = scheduler_records(trace)
    if off is None or not len(off):
        return None
    events, assigned = report.evidence.calls_of([int(p) for p in verdict.phases], ["tid", "start_ns", "end_ns", "ret"])
    kind = phase_module.call_kinds(events["syscall"])
    wanted = {"read": (phase_module.READ,), "write": (phase_module.WRITE,)}.get(
        verdict.claim.direction or "mixed", (phase_module.READ, phase_module.WRITE))
    # the calls that moved data: a failed call moves none, and a benchmark that times each call
    # adds its time only when it moved some (stress-ng: "if (ret > 0) duration += ..."): a wait
    # after a failed preadv2 (EOPNOTSUPP) is no part of its clock
    mine = np.isin(kind, wanted) & ~phase_module.uncounted(assigned) & (events["ret"].to_numpy(np.int64) > 0)
    if not mine.any():
        return None
    tid = events["tid"].to_numpy(np.int64)[mine]
    start, end = events["start_ns"].to_numpy(np.int64)[mine], events["end_ns"].to_numpy(np.int64)[mine]
    moved = np.maximum(events["ret"].to_numpy(np.int64)[mine], 0)
    amount = float(moved.sum()) if verdict.kind == "bytes" else float(len(moved))
    waited, calls = 0, 0
    for t in np.unique(tid):
        mask = off["tid"] == t
        leave = np.sort(off["off_ns"][mask].astype(np.int64))
        back = off["on_ns"][mask].astype(np.int64)[np.argsort(off["off_ns"][mask].astype(np.int64))]
        ends = end[tid == t]
        at = np.searchsorted(leave, ends, side="left")
        ok = at < len(leave)
        hit = np.zeros(len(ends), bool)
        hit[ok] = leave[at[ok]] <= ends[ok] + RETURN_NS
        waited += int((back[at[hit]] - leave[at[hit]]).sum())
        calls += int(hit.sum())
    return amount, float((end - start).sum()), float(waited), calls, len(moved)


def apply(out: list, report, trace, tolerance: float) -> None:
    """Each `busy` verdict below its busy figure, with the waits at the calls' return (module doc)."""
    if trace is None:
        return
    from iowitness.analysis.judge.verdict_rules import cannot_judge, claimed

    for verdict in out:
        if verdict.window != "busy" or verdict.verdict != "disagrees" or verdict.kind not in ("bytes", "ops") \
                or not verdict.ratio or verdict.ratio >= 1:
            continue
        value, kind = claimed(verdict.claim)
        if value is None:
            continue
        wall = verdict.figures.get("calls")
        between = bool(wall) and value >= wall * (1 - tolerance)
        found = _waits(trace, report, verdict)
        if found is None:
            if between:
                cannot_judge(verdict, f"{BELOW_BUSY}; the trace holds no off-CPU records to count the waits for a "
                                      "CPU at the calls' return (attach --file, or a backend without them)")
            continue
        amount, inside, waited, calls, total = found
        if not inside:
            continue
        figure = amount / ((inside + waited) / 1e9)
        said = (f"{BELOW_BUSY}: {calls:,} of {total:,} calls were preempted at their return to user space, "
                f"{units.seconds(waited / 1e9)} in all beside {units.seconds(inside / 1e9)} inside the calls; "
                f"counting those waits the rate is {fmt(figure, kind)} (ratio {value / figure:.3f})")
        if waited:
            verdict.figures["busy + waits at return"] = figure
        if waited and abs(value / figure - 1) <= tolerance:
            verdict.verdict = "explained"
            verdict.reasons.insert(0, said)
        elif value < figure and between:
            cannot_judge(verdict, f"{said}; the rest lies in user space between each call's exit and the "
                                  "benchmark's next clock read, where the trace has no clock")


BELOW_BUSY = ("the benchmark times each call from its own thread (spec window = \"busy\"), and its clock runs on "
              "after the call returns until it reads the clock again")
