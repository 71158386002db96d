"""The device view's records, read block by block, once: the disk's requests (BLOCK) and the
traced threads' stretches off the CPU (OFFCPU), kept as every reader of them needs them.

    records = device_records.of(trace)      # one per trace, made when first asked for
    records.has_block                        # the trace has the block probe's records (a device view)
    records.requests(dev)                    # one device's requests: columns sorted by completion
    records.offcpu                           # the off-CPU stretches, by thread and time (None: not recorded)
    records.aio_done                         # libaio requests' kernel completions (analysis/phasing/aio_kernel.py)

A trace read block by block (analysis/read/streamed.py) holds no BLOCK or OFFCPU record: they
are decoded here a block of chunks at a time (collector/format/tracestream.record_blocks), only
the fields kept, and the block dropped; a trace read whole (`iowitness.load`, the tests' traces
built in memory) gives its arrays, cut into the same blocks. Every consumer reads these: the
device view per phase and its credits (analysis/measure/device.py, device_credit.py), the
diskstats cross-check (device_checks.py), `show --block`, the biolatency histograms, the iostat
columns per interval and the Perfetto tracks (block_views.py), the libaio kernel split, the
off-CPU stretches of a phase's threads and the verdicts that read them
(device.scheduler_records).

What is kept, per record (it grows with the trace, said in docs/tracing.md):
- a request: 42 bytes (completion, start as diskstats times it, issue, bytes: int64; submitter
  tgid and tid: uint32; op: uint8; submitted by a kernel thread: bool), in one array per field
  and device, instead of the 72-byte record; `listing=True` (`show --block`, the Perfetto
  export, which print every request) keeps the sector, error, submitter's name and file
  position too (36 bytes more). The second completion of a flush sequence (a zero-byte
  completion of a request already completed: /proc/diskstats counts it once) is never kept.
- an off-CPU stretch: its 32-byte record (off, on, tgid, tid, state).
- a libaio completion: the fields that pair it with its request (36 bytes).
While the device view is made (analysis/measure/device.py) a request costs 3 bytes more
(Requests: whether it is a read, a write, the benchmark's own), and a stretch inside a phase's
window about 45 (DeviceFacts: its latest end so far, the stretch clipped to the window and the
call it fell in).
"""

from __future__ import annotations

import numpy as np

from iowitness.analysis.phasing.aio_kernel import AIO_DONE
from iowitness.collector.format import tracestream

READ_OP = 0
DISCARD_OPS = (3, 5)
# the submitters that are the kernel's own (write-back, the journal, the loop device's worker)
KERNEL_THREADS = (b"kworker", b"jbd2", b"flush-", b"kswapd", b"ksoftirqd", b"loop", b"xfsaild", b"btrfs")
# what a listing of every request keeps besides what every reader needs (_TYPES)
LISTED = ("sector", "error", "comm", "row")
# the fields a request's pass decodes (and "error" for a listing)
_DECODED = ("start_ns", "issue_ns", "complete_ns", "sector", "bytes", "dev", "tgid", "tid", "op", "comm")
# records decoded at a time: a block of 256 Ki requests is 17 MiB of the fields decoded
BLOCK_ROWS = 1 << 18
_AIO_FIELDS = ("tgid", "tid", "start_ns", "sector", "complete_ns")
_OFFCPU_FIELDS = ("off_ns", "on_ns", "tgid", "tid", "state")
_OFFCPU_EMPTY = [("off_ns", "<u8"), ("on_ns", "<u8"), ("tgid", "<u4"), ("tid", "<u4"), ("state", "<u4")]


def is_write(op: np.ndarray) -> np.ndarray:
    """A write of data (REQ_OP_* odd: writes; not a discard or secure erase)."""
    return ((op & 1) == 1) & ~np.isin(op, DISCARD_OPS)


def is_data(op: np.ndarray) -> np.ndarray:
    """A read or a write (not a flush, a discard, ...)."""
    return (op == READ_OP) | is_write(op)


def kernel_submitted(comm: np.ndarray) -> np.ndarray:
    """True for the requests a kernel thread submitted (`comm`: the records' names, bytes)."""
    kernel = np.zeros(len(comm), dtype=bool)
    for prefix in KERNEL_THREADS:
        kernel |= np.all(comm[:, :len(prefix)] == np.frombuffer(prefix, dtype=np.uint8), axis=1)
    return kernel


def of(trace, listing: bool = False) -> "DeviceRecords":
    """The records of `trace`, read once and kept on it (`listing`: with what a listing of every
    request prints; made on its own, when asked, and not kept)."""
    if listing:
        return DeviceRecords(trace, listing=True)
    made = getattr(trace, "_device_records", None)
    # a trace read whole whose block array was replaced (a test's, by hand) is read again
    if made is None or made.whole_block is not getattr(trace, "block", None):
        made = DeviceRecords(trace)
        try:
            trace._device_records = made
        except AttributeError:
            pass
    return made


class DeviceRecords:
    """A trace's BLOCK and OFFCPU records, each kind read in one pass over its blocks when first
    asked for. `block_rows`: records decoded at a time."""

    def __init__(self, trace, listing: bool = False, block_rows: int = BLOCK_ROWS):
        self._trace, self._listing, self._rows = trace, listing, block_rows
        self._requests: dict[int, dict[str, np.ndarray]] | None = None
        self._aio: np.ndarray | None = None
        self._offcpu_read = False
        self._offcpu: np.ndarray | None = None
        self.whole_block = getattr(trace, "block", None)

    # ---- where the records are --------------------------------------------------------------

    def _has(self, name: str) -> bool:
        data = getattr(self._trace, "_data", None)
        return getattr(self._trace, name, None) is not None or (
            data is not None and name in getattr(data, "device_batches", {}))

    def _blocks(self, name: str, fields, only=None):
        """The records of kind `name`, a block at a time, as columns: decoded from the file's
        chunks (a trace read block by block), or cut from the arrays of a trace read whole.
        `only`: the numbers of the blocks wanted (None: all)."""
        whole = getattr(self._trace, name, None)
        if whole is None:
            yield from tracestream.record_blocks(self._trace._data, name, fields, self._rows, only)
            return
        for number, first in enumerate(range(0, len(whole), self._rows)):
            if only is not None and number not in only:
                continue
            part = whole[first:first + self._rows]
            block = tracestream.Block({f: part[f] for f in fields})
            block.first_row, block.number = first, number
            yield block

    @property
    def has_block(self) -> bool:
        """Whether the trace holds the block probe's records (none at all: no device view)."""
        return self._has("block")

    # ---- the requests -------------------------------------------------------------------------

    @property
    def devices(self) -> list[int]:
        """The devices with a request, in order of their numbers."""
        return sorted(self._read_requests())

    def requests(self, dev: int) -> dict[str, np.ndarray]:
        """The requests of device `dev`, as columns sorted by completion (ties in file order):
        complete_ns, start_ns (as diskstats times it; the issue, or the completion, when the
        kernel did not time it; never after the completion), issue_ns (0: not seen), bytes
        (int64), tgid, tid (uint32), op (uint8), kernel (bool), and with `listing` sector,
        error, comm and row (their order in the file)."""
        found = self._read_requests().get(int(dev))
        return found if found is not None else _columns([], self._listing)

    @property
    def aio_done(self) -> np.ndarray | None:
        """The libaio completions (op IOW_BLOCK_AIO_DONE): tgid, tid, start_ns, sector (the
        request's offset), complete_ns, sorted by start_ns then complete_ns (ties in file
        order); None without block records."""
        self._read_requests()
        return self._aio

    def _read_requests(self) -> dict[int, dict[str, np.ndarray]]:
        if self._requests is not None:
            return self._requests
        parts: dict[int, list[dict]] = {}
        held: dict[int, int] = {}   # device -> its requests so far, in file order
        aio, zeros = [], []
        spans = []   # per block: the first and last start of its data completions (a flush's end is looked for there)
        decoded = (*_DECODED, "error") if self._listing else _DECODED
        for block in (self._blocks("block", decoded) if self.has_block else ()):
            op = block["op"]
            done = op == AIO_DONE
            if done.any():
                aio.append({f: block[f][done] for f in _AIO_FIELDS})
            zero = is_data(op) & (block["bytes"] == 0)
            data_starts = block["start_ns"][is_data(op) & (block["bytes"] > 0)]
            if len(data_starts):
                spans.append((block.number, int(data_starts.min()), int(data_starts.max())))
            row = block.first_row + np.arange(len(op), dtype=np.int64)
            for dev in np.unique(block["dev"][~done]).tolist():
                mine = (block["dev"] == dev) & ~done
                parts.setdefault(int(dev), []).append(_kept(block, mine, row, self._listing))
                if zero[mine].any():
                    # the end of a flush sequence, perhaps: looked for once all are read. Its key,
                    # and its place among its device's requests in file order
                    z = zero & mine
                    zeros.append(np.stack([*(block[f][z].astype(np.int64) for f in ("start_ns", "sector", "dev")),
                                           held.get(int(dev), 0) + np.flatnonzero(z[mine])]))
                held[int(dev)] = held.get(int(dev), 0) + int(np.count_nonzero(mine))
        drop: dict[int, list[int]] = {}
        if zeros:
            zero_rows = np.concatenate(zeros, axis=1)
            again = self._completed_again(zero_rows[:3], spans)
            for start, sector, dev, at in zero_rows.T.tolist():
                if (start, sector, dev) in again:
                    drop.setdefault(dev, []).append(at)
        self._requests = {dev: _columns(p, self._listing, drop.get(dev)) for dev, p in parts.items()}
        if self.has_block:
            found = _records({f: np.concatenate([a[f] for a in aio]) if aio else np.empty(0, np.uint64)
                              for f in _AIO_FIELDS})
            # by submission, ties by completion (the order aio_kernel pairs a key's requests in)
            self._aio = found[np.lexsort((found["complete_ns"], found["start_ns"]))]
        return self._requests

    def _completed_again(self, zero: np.ndarray, spans: list) -> set[tuple[int, int, int]]:
        """Of the zero-byte completions (start_ns, sector, dev as rows), those that complete a
        request completed with data before: the end of a flush sequence (a journal commit's
        PREFLUSH/FUA write with data, where the device has no FUA) completes the same request a
        second time, with no bytes left. /proc/diskstats counts that request once. An empty
        PREFLUSH write (no data completion of its own) is a write diskstats counts, and stays.
        A second pass, only when there are zero-byte completions, over only the blocks whose
        data completions' starts (`spans`: block number, first, last) reach one of theirs; of
        those, only the data completions that start when one of them does are looked at (few)."""
        starts = np.unique(zero[0])
        only = {k for k, lo, hi in spans
                if np.searchsorted(starts, lo, side="left") < np.searchsorted(starts, hi, side="right")}
        done: set[tuple[int, int, int]] = set()
        for block in self._blocks("block", ("start_ns", "sector", "dev", "bytes", "op"), only):
            data = is_data(block["op"]) & (block["bytes"] > 0) & np.isin(block["start_ns"].astype(np.int64), starts)
            done.update(zip(*(block[f][data].astype(np.int64).tolist() for f in ("start_ns", "sector", "dev"))))
        return {k for k in zip(*zero.tolist()) if k in done}

    # ---- the off-CPU stretches ----------------------------------------------------------------

    @property
    def offcpu(self) -> np.ndarray | None:
        """The off-CPU stretches (struct iow_offcpu records: off_ns, on_ns, tgid, tid, state)
        thread by thread, each thread's by off_ns (ties in file order): what every reader takes
        of them is a thread's stretches in time order (device.DeviceFacts uses them as they are,
        with no copy sorted by thread). None when the trace has none. A trace read whole gives
        its array as it is (sorted by off_ns)."""
        whole = getattr(self._trace, "offcpu", None)
        if whole is not None:
            return whole
        if not self._offcpu_read:
            self._offcpu_read = True
            if self._has("offcpu"):
                parts = [_records(block) for block in self._blocks("offcpu", _OFFCPU_FIELDS)]
                whole = np.concatenate(parts) if parts else np.empty(0, _OFFCPU_EMPTY)
                del parts
                self._offcpu = whole[np.lexsort((whole["off_ns"], whole["tid"]))]
        return self._offcpu


def _kept(block, mine: np.ndarray, row: np.ndarray, listing: bool) -> dict[str, np.ndarray]:
    """What a request keeps of a block's records where `mine`."""
    complete = block["complete_ns"][mine].astype(np.int64)
    start = block["start_ns"][mine].astype(np.int64)
    issue = block["issue_ns"][mine].astype(np.int64)
    # a request the kernel did not time from its start (I/O statistics off) counts from its
    # issue, or its completion; never after its completion
    start = np.minimum(np.where(start > 0, start, np.where(issue > 0, issue, complete)), complete)
    kept = {"complete_ns": complete, "start_ns": start, "issue_ns": issue,
            "bytes": block["bytes"][mine].astype(np.int64), "tgid": block["tgid"][mine].astype(np.uint32),
            "tid": block["tid"][mine].astype(np.uint32), "op": block["op"][mine].astype(np.uint8),
            "kernel": kernel_submitted(block["comm"][mine])}
    if listing:
        kept.update(sector=block["sector"][mine].astype(np.int64), error=block["error"][mine].astype(np.int64),
                    comm=block["comm"][mine], row=row[mine])
    return kept


_TYPES = {"complete_ns": np.int64, "start_ns": np.int64, "issue_ns": np.int64, "bytes": np.int64, "tgid": np.uint32,
          "tid": np.uint32, "op": np.uint8, "kernel": bool, "sector": np.int64, "error": np.int64, "comm": np.uint8,
          "row": np.int64}


def _columns(parts: list[dict], listing: bool, again: list | None = None) -> dict[str, np.ndarray]:
    """One device's blocks as columns sorted by completion (stable: ties in file order), without
    the second completions of flush sequences (`again`: their places in file order)."""
    names = [n for n in _TYPES if listing or n not in LISTED]
    if not parts:
        out = {n: np.empty(0, _TYPES[n]) for n in names}
        if listing:
            out["comm"] = np.empty((0, 16), np.uint8)
        return out
    kept = None
    if again:
        kept = np.ones(sum(len(p["complete_ns"]) for p in parts), dtype=bool)
        kept[np.asarray(again, dtype=np.int64)] = False
    columns, order = {}, None
    # a column at a time, its blocks let go as it is made: the blocks, one column twice and the
    # order are what is held at once, not every column twice
    for n in names:
        column = np.concatenate([p.pop(n) for p in parts])
        if kept is not None:
            column = column[kept]
        if order is None:
            order = np.argsort(column, kind="stable")
        columns[n] = column[order]
        del column
    return columns


def _records(columns) -> np.ndarray:
    """Columns as one structured array (the fields in their order, no padding)."""
    out = np.empty(len(next(iter(columns.values()))), [(name, column.dtype) for name, column in columns.items()])
    for name, column in columns.items():
        out[name] = column
    return out
