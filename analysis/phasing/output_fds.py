"""The benchmark's own output is never data: data calls on fd 1 and 2 are output.

Why here, in the analysis's event walk (analysis/phasing/stream_walk.py), and not in the probe or the
collector: the same rule then holds for every way a trace is made (`run`, `attach`, an strace
import, the bpftrace backend), and for traces already recorded; the probe keeps the one
compare its plain-fd path pays (probes/output.bpf.h) and still records a target file on fd 1
or 2 as events, so that the walk can tell output from data with the trace alone. The rule
itself is collector/format/printed_timeline.OwnFiles, the one the output timeline uses too:
what fd 1 and 2 point at when a program starts is its output (`sh -c 'bench > out.txt'`, a
stdout redirected before an attach); a file the program opened itself after its exec and then
wrote through fd 1 or 2 (`dd of=FILE`, a program that closed its stdout and opened a file) is
data.

Cost: one vectorised test per block; a row is looked at alone only when its process opened
the file it has on fd 1 or 2 itself (dd's of=).
"""

from __future__ import annotations

import numpy as np

from iowitness.analysis.phasing.phases import CREAT, OPEN, READ, WRITE
from iowitness.collector.format.printed_timeline import OwnFiles

OUTPUT_FDS = (1, 2)


class OutputFds:
    """Per block, the data calls that are the benchmark's output (see the module's docstring)."""

    def __init__(self, own: OwnFiles):
        self._own = own

    @classmethod
    def of(cls, source) -> "OutputFds":
        """From the facts of `source`'s trace (none known: every fd 1 and 2 is output)."""
        trace = getattr(source, "trace", None)
        facts = getattr(trace, "_facts", None)
        return cls(OwnFiles(facts, getattr(trace, "_meta_kinds", None) or {}, getattr(trace, "meta", None)))

    def rows(self, c: dict, kind: np.ndarray) -> np.ndarray:
        """The rows of block `c` (stream_walk's columns) that are data calls on the output."""
        opens = ((kind == OPEN) | (kind == CREAT)) & (c["ret"] >= 0)
        if opens.any():   # blocks come in time order: an open is known before the calls after it
            self._own.add_opens(*(c[k][opens] for k in ("tgid", "dev_raw", "ino_raw", "start")))
        by_fd = ~c["fixed"] & ~c["on_map"] & ~c["fault"]
        out = by_fd & ((kind == READ) | (kind == WRITE)) & np.isin(c["fd"], OUTPUT_FDS)
        if not self._own.opens or not out.any():
            return out
        tgid, dev, ino, start = (c[k].astype(np.int64) for k in ("tgid", "dev_raw", "ino_raw", "start"))
        for (p, d, i), times in self._own.opens.items():
            rows = np.flatnonzero(out & (tgid == p) & (dev == d) & (ino == i))
            if not len(rows):
                continue
            # the open before each call, and whether an exec came between the two
            at = np.searchsorted(np.array(times, dtype=np.int64), start[rows], side="right") - 1
            opened = np.array(times, dtype=np.int64)[np.maximum(at, 0)]
            execs = np.array(self._own.execs.get(p, []), dtype=np.int64)
            nxt = np.searchsorted(execs, opened, side="right")
            exec_between = (nxt < len(execs)) & (execs[np.minimum(nxt, max(len(execs) - 1, 0))] <= start[rows]) \
                if len(execs) else np.zeros(len(rows), bool)
            out[rows[(at >= 0) & ~exec_between]] = False
        return out
