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

from iowitness.analysis.phases import named
from iowitness.collector.traceformat import async_ops
from iowitness.probes.layout import layout

AIO_DONE = layout().constants["IOW_BLOCK_AIO_DONE"]
AIO_OPS = tuple(name for name in async_ops() if name.startswith("aio_"))
COLUMNS = ("kernel_done", "kernel_mean_us", "kernel_p50_us", "kernel_p99_us", "reap_wait_mean_us")
# the pairing key: a request's record and its completion share these
_KEY = ("tgid", "tid", "start_ns", "offset")


def split(block: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(the block requests, the libaio completions) of a trace's BLOCK records."""
    if block is None:
        return None, None
    done = block["op"] == AIO_DONE
    return block[~done], block[done]


def done_ns(events: pd.DataFrame, done: np.ndarray | None) -> np.ndarray:
    """Per event: when the kernel completed it (CLOCK_MONOTONIC ns), 0 when not known. Requests
    of one io_submit at the same offset are paired in order (they are alike)."""
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
    theirs["nth"] = theirs.groupby(list(_KEY)).cumcount()
    paired = mine.merge(theirs, on=[*_KEY, "nth"], how="inner")
    out[paired["row"].to_numpy()] = paired["done_ns"].to_numpy()
    return out


def figures(phases: pd.DataFrame, events: pd.DataFrame, phase: np.ndarray, done: np.ndarray | None) -> pd.DataFrame:
    """COLUMNS per row of `phases` (NaN figures and 0 known where a phase has none)."""
    out = pd.DataFrame({c: np.full(len(phases), np.nan) for c in COLUMNS}, index=phases.index)
    out["kernel_done"] = np.zeros(len(phases), dtype=np.int64)
    kernel = done_ns(events, done)
    known = np.flatnonzero(kernel > 0)
    if not len(known) or not len(phases):
        return out
    start = events["start_ns"].to_numpy()[known].astype(np.int64)
    end = events["end_ns"].to_numpy()[known].astype(np.int64)
    frame = pd.DataFrame({"phase": phase[known], "kernel_us": (kernel[known] - start) / 1e3,
                          "wait_us": (end - kernel[known]) / 1e3})
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
