"""GNU dd's clock on a real trace, from the trace's own records, for the kernel tests that judge
dd: which of the judge's reasons is honest on a given run is decided here, not by widening.

coreutils dd.c (main): fd_reopen opens the output (an openat, a dup2 onto fd 1, a close of the
first fd), then dd reads its clock (start_time = gethrxtime ()), allocates its buffer, reads
and writes; finish_up closes its files and print_stats prints "records in/out" and reads the
clock again. So dd's clock starts after the end of the reopen's close and stops before its
summary line is written: a wait for a CPU between that close and its first write, or after its
last write, is inside dd's clock; one inside the reopen is not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iowitness.analysis.read import printed

PREEMPTED = 0   # an off-CPU record's state (probes/events.h, struct iow_offcpu)


@dataclass
class DdClock:
    tid: int
    reopen_close_end: int   # ns: dd's clock starts after it
    first_write: int        # the first write's start
    last_end: int           # the end of the output's last call (its close)
    line_ns: int            # when dd's summary line was written: its clock stopped before
    seconds: float          # dd's own seconds (its summary line)

    def preempted_at_edges(self, trace) -> int:
        """ns dd's thread waited for a CPU inside its clock but outside its calls: between the
        reopen's close and its first write, and between its output's close and its line."""
        off = trace.offcpu
        if off is None or not len(off):
            return 0
        mine = off[(off["tid"] == self.tid) & (off["state"] == PREEMPTED)]
        total = 0
        for low, high in ((self.reopen_close_end, self.first_write), (self.last_end, self.line_ns)):
            start = np.clip(mine["off_ns"].astype(np.int64), low, high)
            stop = np.clip(mine["on_ns"].astype(np.int64), low, high)
            total += int(np.maximum(stop - start, 0).sum())
        return total


def clock_of(trace, claim) -> DdClock:
    """dd's clock's bounds on this run: the output's calls (the writes of dd's blocks, on fd 1
    after its reopen) and its summary line's time (the trace's output timeline)."""
    events = trace.events
    name = events["syscall"].astype(str).to_numpy()
    writes = events[(name == "write") & (events["fd"].to_numpy() == 1) & (events["ret"].to_numpy() > 0)]
    tid = int(writes["tid"].iloc[0])
    first = int(writes["start_ns"].min())
    mine = events[(events["tid"].to_numpy() == tid)]
    mine_name = mine["syscall"].astype(str).to_numpy()
    before = mine[(mine_name == "close") & (mine["end_ns"].to_numpy() <= first)]
    after = mine[mine["start_ns"].to_numpy() >= int(writes["end_ns"].max())]
    [line] = [ln for ln in printed.lines_of(trace) if ln.text.strip() == claim.printed]
    return DdClock(tid, int(before["end_ns"].max()), first,
                   int(max(writes["end_ns"].max(), after["end_ns"].max() if len(after) else 0)),
                   int(line.t_ns), float(claim.extra["seconds"]))


def why_not_honest(verdict, trace) -> str | None:
    """None when the verdict of dd's claim is one the run's records bear out, else why not:
    AGREES; or EXPLAINED "preempted at the edge" when the off-CPU records show dd's thread waiting
    for a CPU inside its clock and outside its calls."""
    clock = clock_of(trace, verdict.claim)
    # dd's own seconds lie between its writes' span and its clock's widest bounds (dd.c's order)
    if not (clock.last_end - clock.first_write) / 1e9 * 0.999 <= clock.seconds <= \
            (clock.line_ns - clock.reopen_close_end) / 1e9:
        return f"dd's {clock.seconds} s is outside its clock's bounds on this run: {clock}"
    if verdict.verdict == "agrees":
        return None
    why = verdict.reasons[0] if verdict.reasons else ""
    if verdict.verdict == "explained" and why.startswith("preempted at the edge"):
        waited = clock.preempted_at_edges(trace)
        return None if waited > 0 else f"{why!r}, but the off-CPU records show no wait inside dd's clock: {clock}"
    return f"{verdict.verdict}: {why!r} ({clock}, {clock.preempted_at_edges(trace)} ns preempted at the edges)"
