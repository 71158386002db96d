"""Pairing libaio requests with their kernel completions (analysis/phasing/aio_kernel.py), on records
written by hand: which completion belongs to which request follows from the key alone."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import aio_kernel
from iowitness.probes.layout import layout


def _done(rows) -> np.ndarray:
    """rows: (tgid, tid, submitted, offset, completed) as the probe sends them."""
    out = np.zeros(len(rows), dtype=layout().structs["iow_block"])
    for i, (tgid, tid, submitted, offset, completed) in enumerate(rows):
        out[i]["tgid"], out[i]["tid"], out[i]["start_ns"] = tgid, tid, submitted
        out[i]["sector"], out[i]["complete_ns"], out[i]["op"] = offset, completed, aio_kernel.AIO_DONE
    return out


def _events(rows) -> pd.DataFrame:
    """rows: (syscall, tgid, tid, start_ns, offset, end_ns)."""
    return pd.DataFrame(rows, columns=["syscall", "tgid", "tid", "start_ns", "offset", "end_ns"])


def test_each_request_gets_its_own_completion_and_others_none():
    # GIVEN one io_submit of three requests (two at the same offset), a buffered request with
    # no completion, a pread, and the completions in another order than the requests
    events = _events([("aio_read", 10, 11, 1000, 4096, 9000), ("aio_read", 10, 11, 1000, 0, 9100),
                      ("aio_read", 10, 11, 1000, 4096, 9200), ("aio_write", 10, 11, 2000, 8192, 2500),
                      ("pread64", 10, 11, 3000, 4096, 3100)])
    done = _done([(10, 11, 1000, 0, 5000), (10, 11, 1000, 4096, 6000), (10, 11, 1000, 4096, 7000)])
    # WHEN they are paired
    kernel = aio_kernel.done_ns(events, done)
    # THEN the offset-0 request has its own; the two at 4096 take the two at 4096 in order
    # (alike, so either pairing gives the same figures); the others have none
    assert kernel.tolist() == [6000, 5000, 7000, 0, 0]


def test_phase_figures_are_submission_to_completion_then_to_reap():
    events = _events([("aio_read", 10, 11, 1000, 0, 9000), ("aio_read", 10, 11, 1000, 4096, 5000),
                      ("aio_write", 10, 11, 2000, 8192, 2500)])
    done = _done([(10, 11, 1000, 0, 3000), (10, 11, 1000, 4096, 4000)])
    phases = pd.DataFrame({"phase": [1, 2]})
    figures = aio_kernel.figures(phases, events, np.array([1, 1, 2]), done)
    # phase 1: completions 2 and 3 µs after submission, then reaped 6 and 1 µs later
    assert figures["kernel_done"].tolist() == [2, 0]
    assert figures.loc[0, "kernel_mean_us"] == 2.5 and figures.loc[0, "reap_wait_mean_us"] == 3.5
    assert np.isnan(figures.loc[1, "kernel_mean_us"])


def test_a_trace_without_completions_has_empty_figures():
    phases = pd.DataFrame({"phase": [1]})
    events = _events([("pread64", 10, 11, 3000, 4096, 3100)])
    figures = aio_kernel.figures(phases, events, np.array([1]), None)
    assert figures["kernel_done"].tolist() == [0] and figures["kernel_mean_us"].isna().all()


class _Blocks:
    """(events, assigned) cut into blocks of `rows`, as a streamed report reads them."""

    def __init__(self, events, phase, rows):
        self.events, self.phase, self.rows = events, phase, rows

    def blocks(self):
        for at in range(0, len(self.events), self.rows):
            part = self.events.iloc[at:at + self.rows]
            yield part, pd.DataFrame({"phase": self.phase[at:at + self.rows]}, index=part.index)


def test_figures_over_blocks_are_the_whole_tables_even_when_a_submission_is_cut():
    # GIVEN 40 io_submits of 8 requests each at one start time, half of them at the same offset
    # (alike requests, paired in order), completions in another order, in blocks that cut
    # submissions apart
    rng = np.random.default_rng(7)
    rows, done = [], []
    for k in range(40):
        start = 1_000_000 + k * 10_000
        for j in range(8):
            offset = 4096 * (j if j % 2 else 0)
            rows.append(("aio_read", 10, 11, start, offset, start + 9_000 + int(rng.integers(0, 500))))
            done.append((10, 11, start, offset, start + 1_000 + int(rng.integers(0, 7_000))))
    events = _events(rows)
    done = _done([done[i] for i in rng.permutation(len(done))])
    phase = np.repeat([1, 2], len(rows) // 2)
    phases = pd.DataFrame({"phase": [1, 2]})
    whole = aio_kernel.figures(phases, events, phase, done)
    # WHEN the same figures are made block by block, THEN they are the same, bit for bit
    for size in (1, 3, 8, 37):
        pd.testing.assert_frame_equal(aio_kernel.figures_streamed(phases, _Blocks(events, phase, size), done), whole,
                                      check_exact=True)
    assert whole["kernel_done"].tolist() == [160, 160]
