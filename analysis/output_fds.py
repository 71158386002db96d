"""The benchmark's own output is never data: data calls on fd 1 and 2 are output.

Why here, in the analysis's event walk (analysis/stream_walk.py), and not in the probe or the
collector: the same rule then holds for every way a trace is made (`run`, `attach`, an strace
import, the bpftrace backend), and for traces already recorded. The probe keeps the one
compare its plain-fd path pays (probes/output.bpf.h) and still records a target file on fd 1
or 2 as events, so the walk can tell the two cases below apart from the trace alone.

The rule: what fd 1 and 2 point at when a program starts (its exec; for a process already
running when the trace began, the trace's start) is its output: `sh -c 'bench > out.txt'`
(the shell opens out.txt and dup2s it onto 1 in its child, before the exec), a stdout
redirected before an `attach`. What the program itself puts on fd 1 or 2 after its exec (an
open that returns 1 or 2 after it closed its stdout, a dup2/dup3 onto 1 or 2, as `dd
of=/dev/stdout` does) is data: it asked for that file to be written. A child forked after
that inherits its parent's fd table but is not followed here: its calls on fd 1 and 2 are
taken as output (rare; said in docs/tracing.md).

Cost: one vectorised test per block; the rows are walked one by one only in traces where a
program put a file on its own fd 1 or 2.
"""

from __future__ import annotations

import numpy as np

from iowitness.analysis.phases import CREAT, OPEN, READ, WRITE

OUTPUT_FDS = (1, 2)


class OutputFds:
    """Per block, the data calls that are the benchmark's output (see the module's docstring)."""

    def __init__(self, exec_times: dict[int, np.ndarray]):
        self._execs = exec_times                    # tgid -> its exec times, sorted
        self._own: dict[tuple[int, int], int] = {}  # (tgid, fd) -> when the program put a file there

    @classmethod
    def of(cls, source) -> "OutputFds":
        """From the exec facts of `source`'s trace (none known: every fd 1 and 2 is output)."""
        facts_of = getattr(getattr(source, "trace", None), "_facts_of", None)
        execs: dict[int, list] = {}
        if facts_of is not None:
            facts = facts_of("exec")
            for tgid, ts in zip(facts["tgid"].tolist(), facts["ts_ns"].tolist()):
                execs.setdefault(int(tgid), []).append(int(ts))
        return cls({tgid: np.sort(np.array(ts, dtype=np.int64)) for tgid, ts in execs.items()})

    def rows(self, c: dict, kind: np.ndarray, ok: np.ndarray) -> np.ndarray:
        """The rows of block `c` (stream_walk's columns) that are data calls on the output."""
        fd, ret = c["fd"], c["ret"]
        by_fd = ~c["fixed"] & ~c["on_map"] & ~c["fault"]
        data = by_fd & ((kind == READ) | (kind == WRITE)) & np.isin(fd, OUTPUT_FDS)
        made = ok & ((((kind == OPEN) | (kind == CREAT)) & np.isin(fd, OUTPUT_FDS))
                     | (c["copy"] & np.isin(ret, OUTPUT_FDS)))
        if not made.any() and not self._own:
            return data
        out = data.copy()
        tgid, start = c["tgid"], c["start"]
        copy = c["copy"]
        for row in np.flatnonzero(data | made).tolist():
            if made[row]:
                target = int(ret[row]) if copy[row] else int(fd[row])
                self._own[(int(tgid[row]), target)] = int(start[row])
                continue
            since = self._own.get((int(tgid[row]), int(fd[row])))
            if since is not None and not self._exec_between(int(tgid[row]), since, int(start[row])):
                out[row] = False
        return out

    def _exec_between(self, tgid: int, after: int, until: int) -> bool:
        times = self._execs.get(tgid)
        if times is None or not len(times):
            return False
        i = int(np.searchsorted(times, after, side="right"))
        return i < len(times) and int(times[i]) <= until
