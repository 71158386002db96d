"""Claims about a test the trace's end cut short: the benchmark ran on after the trace ended
(the collector killed, `run --on-fault continue`, a trace still being written), so a test under
way then is in the trace only in part. Its figure covers the whole test; the trace's covers the
part it saw, and a rate over that part may well match the claim (a steady writer writes at the
same rate throughout) without saying anything about the rest. Such a claim cannot be judged,
and the verdict says how far the trace got: "the trace ends 24.0 MiB into 256.0 MiB".

A phase is cut when the trace ended before the benchmark did and the phase is still open at the
trace's end: the last phase of its thread, with no close of its file after its last call. A
claim whose phases moved all the bytes it says its test moved (dd's "N bytes copied", IOzone's
file size) saw its test whole and is judged as any other.

Example: `apply(verdicts, report, trace)` after matching: dd's "268435456 bytes ... copied, 76.8
MB/s" over a trace killed 24 MiB in becomes CANNOT JUDGE, "the trace ends 24.0 MiB into 256.0
MiB (the trace ended before the benchmark: ...)".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness import units
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.judge.verdict_rules import Verdict, cannot_judge
from iowitness.analysis.report import ended_early


def why_cut(meta: dict) -> str | None:
    """Why the trace ended before the benchmark, or None when it saw the benchmark to its end."""
    early = ended_early(meta)
    if early:
        return early
    if meta.get("complete", True):
        return None
    if meta.get("being_written"):
        return "the trace is still being recorded: a test under way is seen only up to now"
    return ("the trace ended before the benchmark (the collector stopped before the end: killed, or its "
            "trace cut): a test under way then is seen only in part")


def cut_phases(phases: pd.DataFrame) -> set[int]:
    """The phases still open at the trace's end: the last of each thread, its file not closed
    after its last call."""
    if not len(phases):
        return set()
    last = phases.sort_values("first_ns", kind="stable").groupby("tid", sort=False).tail(1)
    closed = last["close_end_ns"].fillna(0).to_numpy(np.int64) > last["data_last_ns"].fillna(0).to_numpy(np.int64) \
        if "close_end_ns" in last else np.zeros(len(last), bool)
    return {int(p) for p in last["phase"].to_numpy()[~closed]}


def intended_bytes(claim: Claim, members: int) -> int | None:
    """The bytes the claim's test moved, as the benchmark says (dd's count, fio's io_bytes,
    IOzone's file size times its children), or None when it does not say."""
    if claim.scope == "phase" and claim.extra.get("bytes"):
        return int(claim.extra["bytes"])
    if claim.extra.get("io_bytes"):   # fio's JSON: the job's bytes in the claim's direction
        return int(claim.extra["io_bytes"])
    if claim.file_size and claim.scope == "phase":
        return int(claim.file_size)
    if claim.file_size and claim.scope in ("children", "parent"):
        return int(claim.file_size) * int(claim.processes or members)
    return None


def apply(verdicts: list[Verdict], report, trace) -> None:
    """Each verdict about a phase the trace's end cut: cannot judge, with how far the trace got."""
    why = why_cut(trace.meta) if trace is not None else None
    if not why:
        return
    cut = cut_phases(report.phases)
    if not cut:
        return
    by_phase = report.phases.set_index("phase")
    for verdict in verdicts:
        mine = [p for p in verdict.phases if p in cut]
        if not mine:
            continue
        seen = int(by_phase.loc[[int(p) for p in verdict.phases if p in by_phase.index], "bytes"].sum())
        intended = intended_bytes(verdict.claim, len(verdict.phases))
        if intended is not None and seen >= intended:
            continue   # its test's bytes are all in the trace: whole
        where = f"{units.bytes_(seen)} into {units.bytes_(intended)}" if intended else \
            f"{units.bytes_(seen)} into a test whose size the benchmark does not say"
        phases = ", ".join(str(p) for p in mine)
        verdict.reasons.insert(0, why)
        cannot_judge(verdict, f"the trace ends {where}: phase{'s' if len(mine) > 1 else ''} {phases} "
                              f"{'were' if len(mine) > 1 else 'was'} under way when it ended, and the claim is "
                              "about the whole test")
