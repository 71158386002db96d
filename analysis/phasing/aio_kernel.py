"""libaio requests' kernel completion, beside their submission and their reap.

A libaio record runs from io_submit to the io_getevents that reaps it: what the program saw,
including the time a completed request waited to be reaped, which grows with iodepth. For
direct I/O on ext4, xfs and btrfs the probe also sends the moment the kernel completed the
request (iomap's direct-I/O completion, which posts the io_event: probes/aio.bpf.h), as a
BLOCK record of op IOW_BLOCK_AIO_DONE. This module pairs each with its request and gives,
per phase with libaio requests:

- kernel_done: how many of its requests have their kernel completion (buffered requests
  complete inside io_submit and have none; neither do requests on other file systems);
- kernel_mean_us, kernel_p50_us, kernel_p99_us: submission to kernel completion;
- reap_wait_mean_us: kernel completion to reap, the time the program left it in the ring.

Example (fio --ioengine=libaio --direct=1 --rw=randread --bs=4k --iodepth=32 --io_size=32m on
ext4 on a loop device; fio's lat mean 307.1 µs, the trace's submission to reap 305.9 µs):
kernel_mean_us 40.8, kernel_p50_us 18.7, kernel_p99_us 239.6, reap_wait_mean_us 265.1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phasing.phases import named
from iowitness.collector.format.traceformat import async_ops
from iowitness.probes.layout import layout

AIO_DONE = layout().constants["IOW_BLOCK_AIO_DONE"]
AIO_OPS = tuple(name for name in async_ops() if name.startswith("aio_"))
COLUMNS = ("kernel_done", "kernel_mean_us", "kernel_p50_us", "kernel_p99_us", "reap_wait_mean_us")
# the pairing key: a request's record and its completion share these
_KEY = ("tgid", "tid", "start_ns", "offset")


def done_ns(events: pd.DataFrame, done: np.ndarray | None, seen: dict | None = None) -> np.ndarray:
    """Per event: when the kernel completed it (CLOCK_MONOTONIC ns), 0 when not known. Requests
    of one io_submit at the same offset are paired in order (they are alike). `seen`: for events
    given block by block, how many requests of each key the blocks before held (updated here)."""
    out = np.zeros(len(events), dtype=np.int64)
    if done is None or not len(done) or not len(events):
        return out
    is_aio = named(events["syscall"], AIO_OPS)
    if not is_aio.any():
        return out
    rows = np.flatnonzero(is_aio)
    mine = pd.DataFrame({"tgid": events["tgid"].to_numpy()[rows].astype(np.int64),
                         "tid": events["tid"].to_numpy()[rows].astype(np.int64),
                         "start_ns": events["start_ns"].to_numpy()[rows].astype(np.int64),
                         "offset": events["offset"].to_numpy()[rows].astype(np.int64), "row": rows})
    theirs = pd.DataFrame({"tgid": done["tgid"].astype(np.int64), "tid": done["tid"].astype(np.int64),
                           "start_ns": done["start_ns"].astype(np.int64),
                           "offset": done["sector"].astype(np.int64), "done_ns": done["complete_ns"].astype(np.int64)})
    mine["nth"] = mine.groupby(list(_KEY)).cumcount()
    if seen is not None:
        _carry(mine, seen, int(events["start_ns"].to_numpy()[-1]))
    theirs["nth"] = theirs.groupby(list(_KEY)).cumcount()
    paired = mine.merge(theirs, on=[*_KEY, "nth"], how="inner")
    out[paired["row"].to_numpy()] = paired["done_ns"].to_numpy()
    return out


def _carry(mine: pd.DataFrame, seen: dict, last_start: int) -> None:
    """Number a block's requests after those of the same key in earlier blocks, and keep the
    counts of the keys a later block can still hold: events come in start order, so only
    those starting at this block's last start time. Only the rows at those two start times
    are looked at one by one (a libaio trace's requests are nearly all of its events)."""
    start = mine["start_ns"].to_numpy()
    if seen:
        # every key kept has the previous block's last start: only rows starting then can match
        at = np.flatnonzero(start == next(iter(seen))[2])
        keys = zip(*(mine[k].to_numpy()[at].tolist() for k in _KEY))
        mine.iloc[at, mine.columns.get_loc("nth")] += np.array([seen.get(k, 0) for k in keys], dtype=np.int64)
    last = np.flatnonzero(start == last_start)
    ends = {k: n + 1 for k, n in zip(zip(*(mine[k].to_numpy()[last].tolist() for k in _KEY)),
                                     mine["nth"].to_numpy()[last].tolist())}
    kept = {k: n for k, n in {**seen, **ends}.items() if k[2] == last_start}
    seen.clear()
    seen.update(kept)


def known(events: pd.DataFrame, phase: np.ndarray, done: np.ndarray | None, seen: dict | None = None) -> pd.DataFrame:
    """The requests with a kernel completion: their phase, submission to kernel completion and
    kernel completion to reap, in µs, in event order."""
    kernel = done_ns(events, done, seen)
    rows = np.flatnonzero(kernel > 0)
    start = events["start_ns"].to_numpy()[rows].astype(np.int64)
    end = events["end_ns"].to_numpy()[rows].astype(np.int64)
    return pd.DataFrame({"phase": phase[rows], "kernel_us": (kernel[rows] - start) / 1e3,
                         "wait_us": (end - kernel[rows]) / 1e3})


def figures(phases: pd.DataFrame, events: pd.DataFrame, phase: np.ndarray, done: np.ndarray | None) -> pd.DataFrame:
    """COLUMNS per row of `phases` (NaN figures and 0 known where a phase has none)."""
    return figures_of(phases, known(events, phase, done))


def figures_of(phases: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """COLUMNS per row of `phases` from `known`'s rows (of one table or of blocks, concatenated)."""
    out = pd.DataFrame({c: np.full(len(phases), np.nan) for c in COLUMNS}, index=phases.index)
    out["kernel_done"] = np.zeros(len(phases), dtype=np.int64)
    if not len(frame) or not len(phases):
        return out
    by = frame[frame["phase"] > 0].groupby("phase")
    stats = pd.DataFrame({"kernel_done": by.size(), "kernel_mean_us": by["kernel_us"].mean(),
                          "kernel_p50_us": by["kernel_us"].quantile(0.5),
                          "kernel_p99_us": by["kernel_us"].quantile(0.99),
                          "reap_wait_mean_us": by["wait_us"].mean()})
    at = phases["phase"].to_numpy()
    found = stats.reindex(at)
    for column in COLUMNS:
        values = found[column].to_numpy()
        out[column] = np.nan_to_num(values, nan=0).astype(np.int64) if column == "kernel_done" else values
    return out


def figures_streamed(phases: pd.DataFrame, assigned, done: np.ndarray | None) -> pd.DataFrame:
    """figures() from assigned.blocks() (event and phase blocks in time order), exactly: the
    requests with a completion are gathered (as many as the BLOCK records already held) and
    reduced as figures() reduces them."""
    if done is None or not len(done):
        return figures_of(phases, pd.DataFrame())
    seen: dict = {}
    # each block is paired with the completions of its own start times only (the key holds the
    # start time, so a key's completions stay together and in their order), not all of them:
    # device_records gives `done` sorted by start; a table made otherwise is sorted here
    starts = done["start_ns"].astype(np.int64)
    if np.any(starts[1:] < starts[:-1]):
        done = done[np.argsort(starts, kind="stable")]
        starts = done["start_ns"].astype(np.int64)
    parts = []
    for e, a in assigned.blocks():
        if len(e):
            block_starts = e["start_ns"].to_numpy().astype(np.int64)
            lo = np.searchsorted(starts, block_starts.min(), side="left")
            hi = np.searchsorted(starts, block_starts.max(), side="right")
            parts.append(known(e, a["phase"].to_numpy(), done[lo:hi], seen))
    return figures_of(phases, pd.concat(parts, ignore_index=True) if parts else pd.DataFrame())
