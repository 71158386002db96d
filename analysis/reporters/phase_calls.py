"""Each phase's counted data calls, found once and shared by every chart that draws them
(the HTML report's per-phase charts, compare's latency columns)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phases import READS


class PhaseCalls:
    """Each phase's counted data calls (no warm-ups), found once for every chart."""

    def __init__(self, report):
        calls = report.calls
        counted = np.flatnonzero(calls.data & (calls.phase > 0))
        order = counted[np.argsort(calls.phase[counted], kind="stable")]
        self.calls = calls
        self.order = order
        phases = calls.phase[order]
        bounds = np.flatnonzero(np.r_[True, phases[1:] != phases[:-1]]) if len(phases) else np.empty(0, int)
        ends = np.r_[bounds[1:], len(phases)]
        self.slices = {int(phases[b]): (b, e) for b, e in zip(bounds, ends)}
        cats = calls.syscall.cat.categories if isinstance(calls.syscall.dtype, pd.CategoricalDtype) else None
        if cats is not None:
            read_codes = np.array([c in READS for c in cats] + [False])
            self.is_read = read_codes[calls.syscall.cat.codes.to_numpy()]
        else:
            self.is_read = calls.syscall.astype(str).isin(READS).to_numpy()
        self.counted = counted

    def of(self, phase: int) -> np.ndarray:
        b, e = self.slices.get(int(phase), (0, 0))
        return self.order[b:e]
