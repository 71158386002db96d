"""`report --csv` of a trace of any size: the phase table built block by block.

The events are read in time order a block at a time (analysis/read/stream_events.py), their phases
rebuilt (analysis/phasing/stream_assign.py) and tabulated (analysis/phasing/stream_table.py) in passes over the
blocks, so memory is bounded by the phases and by the records written out of time order, not
by the events. The table is finished by the same steps as the in-memory one
(analysis/report.py: groups, the benchmark's names), so both paths give the same figures:
tests/unit/test_stream_report.py holds them to each other on synthetic traces, and
tests/kernel/test_stream_report_real.py on real IOzone and fio traces (IOzone -t 2, a fio job
file, threads, libaio, io_uring).

Example: `phase_table("run.iwt")` equals `load("run.iwt").report().phases`.
"""

from __future__ import annotations

import errno
import tempfile
from contextlib import contextmanager

import numpy as np
import pandas as pd

from iowitness import tuning
from iowitness.analysis import report
from iowitness.analysis.phasing import aio_kernel, stream_assign, stream_table
from iowitness.analysis.read import stream_events
from iowitness.errors import OutputError

# events per block: a block of the probe's records is ~70 MiB of columns at 1 Mi rows; tests set
# small blocks (IOWITNESS_STREAM_BLOCK_ROWS) so that every state crosses many block boundaries
BLOCK_ROWS = tuning.count_from_env("IOWITNESS_STREAM_BLOCK_ROWS", 1 << 20)


def phase_table(path, block_rows: int = BLOCK_ROWS) -> pd.DataFrame | None:
    """The phase table of the trace at `path` (`report --csv`), streamed; None for a --summary
    trace (no events: its table is the kernel's aggregates, reporters/aggregate.py)."""
    with temporary_files(path):
        return _phase_table(path, block_rows)


@contextmanager
def temporary_files(path):
    """A temporary file that cannot be written (a full or read-only TMPDIR) as one OutputError
    saying where and what to do; the trace's own errors (the reader's) and the rest as they are."""
    try:
        yield
    except OSError as exc:
        where = tempfile.gettempdir()
        ours = str(exc.filename or "").startswith(where) or exc.errno in (errno.ENOSPC, errno.EDQUOT)
        if not ours or (path and exc.filename and str(exc.filename).startswith(str(path))):
            raise
        raise OutputError(f"reading the trace block by block: cannot write its temporary files in {where} "
                          f"({exc.strerror or exc}): it needs about 15 bytes per event there; point TMPDIR at a "
                          "file system with room") from None


def _phase_table(path, block_rows: int) -> pd.DataFrame | None:
    with stream_events.open_events(path, block_rows=block_rows) as source:
        if source.trace_data.summary is not None:
            return None
        with stream_assign.assign(source, outside_of(source.meta)) as assigned:
            return table_of(source, assigned)


def outside_of(meta: dict):
    """The calls on the benchmark's own files, per block (_outside), for a trace's meta."""
    command, _, module = report.benchmark_of(meta)
    return _outside(module, command, meta.get("cwd"))


def table_of(source, assigned, rider=None) -> pd.DataFrame:
    """The finished phase table of `source`'s events (as report.build finishes it: the aio
    kernel columns, groups, the benchmark's names); `rider` as stream_table.table takes it."""
    meta = source.meta
    command, _, module = report.benchmark_of(meta)
    table = stream_table.table(assigned, rider=rider)
    aio_done = getattr(source.trace, "aio_done", None)
    report.with_kernel_columns(table, aio_kernel.figures_streamed(table, assigned, aio_done))
    report.with_groups(table, module, command)
    report.with_names(table, module, command, meta, getattr(source, "trace", None))
    return table


def _outside(module, command: list, cwd):
    """Per block, the calls on the benchmark's own files (report.own_files), or None."""
    if getattr(module, "own_files", None) is None or not command:
        return None

    def outside(block: pd.DataFrame) -> np.ndarray:
        own = report.own_files(block, module, command, cwd)
        return np.zeros(len(block), dtype=bool) if own is None else own
    return outside
