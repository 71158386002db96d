"""The device view: what reached the disk in each phase, in iostat -x terms, and what limited it.

Inputs are the trace's block requests (BLOCK: one record per completion, from the kernel's
block tracepoints, on the devices under the target files), its off-CPU stretches (OFFCPU:
from sched_switch, for the traced threads), both read block by block once by
analysis/read/device_records.py, and its /proc/diskstats and /proc/stat samples. Of the events
it needs a few facts per phase and thread (DeviceFacts), gathered block by block in the report's
last pass over the events (analysis/measure/stream_full.py) and finished by from_facts.

Per phase, over its window (first data call to the end of its last call, fsync and close
included), the figures iostat -x would show for the same interval:

  r/s w/s, rkB/s wkB/s   requests and bytes completed in the window (diskstats counts at completion)
  areq-sz                average request size
  r_await w_await        mean time from a request's start (as diskstats times it) to its completion
  aqu-sz                 time-weighted requests in flight: their summed time in the window / window
  %util                  share of the window with at least one request in flight

and beyond iostat: the ratio of device bytes to the phase's syscall bytes (its direction),
write-back after the phase that belongs to it, the time split of its threads (user CPU,
kernel CPU, blocked in calls, in fsync, waiting for a CPU) and the machine's iowait.

Concurrent phases (threads, IOzone -t children) share their windows: the benchmark's own
device bytes are credited to them once, each request to the phase whose thread submitted it
or split among the phases whose windows hold it (analysis/measure/device_credit.py), so the phases'
device bytes add up to what the device moved. The iostat -x figures stay those of the whole
window, as iostat would show them for the same interval.

Write-back is attributed first in, first out: a buffered write phase leaves `dirty` bytes
(its syscall bytes minus the device writes in its window); device writes on the same device
after its window and outside any later write phase's window pay them off, oldest phase first,
as the kernel's flusher writes the oldest dirty inodes first. Journal and metadata writes are
device writes too, so the figure is an upper bound of the file's own write-back.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.measure.device_credit import claims, credited, holding, threads_of
from iowitness.analysis.phasing.phases import SYNC, call_kinds, named, stable_order
from iowitness.analysis.read import device_records, distinct
from iowitness.analysis.read.device_records import READ_OP, is_write
from iowitness.collector import backends
from iowitness.collector.format.traceformat import async_ops, dev_name

# device bytes below this share of the syscall bytes: the page cache answered
CACHE_SHARE = 0.05
# at or above this share: the device did the work
DEVICE_SHARE = 0.90
# a claim this close to the device's ceiling is device-bound
DEVICE_BOUND_SHARE = 0.10
# /proc/diskstats and the probe agree when within this share (or a few requests in flight)
AGREEMENT = 0.05

I64 = np.iinfo(np.int64)
TID_BITS = 32   # DeviceFacts keys a phase's thread as (row of the phase) << TID_BITS | tid

LIMITERS = {
    "device": "waiting on the device",
    "kernel": "CPU in the kernel (memory copies from the page cache)",
    "user": "CPU in user space (the benchmark itself)",
    "fsync": "waiting on fsync",
    "cpu": "waiting for a CPU (runnable, preempted by other work)",
}

COLUMNS = ["phase", "device", "window_s", "read_bytes", "write_bytes", "reads", "writes", "read_Bps", "write_Bps",
           "areq_bytes", "r_await_ms", "w_await_ms", "aqu_sz", "util", "syscall_bytes", "device_bytes",
           "device_ratio", "calls_device_bytes", "other_bytes", "dirty_bytes", "writeback_bytes", "writeback_s", "user_s", "kernel_s", "blocked_s",
           "fsync_s", "runnable_s", "iowait", "limiter", "limiter_share", "cpu_source"]


class Requests:
    """One device's requests as analysis/read/device_records.py keeps them (sorted by completion,
    each once), with what the view derives of them. `traced`: the benchmark's processes (None:
    every request is its own)."""

    def __init__(self, columns: dict[str, np.ndarray], traced: np.ndarray | None = None):
        # the columns as they are (no copy): start is diskstats' (device_records says how)
        self.complete, self.start, self.bytes = columns["complete_ns"], columns["start_ns"], columns["bytes"]
        self.tid = columns["tid"]
        op = columns["op"]
        self.read = op == READ_OP
        self.write = is_write(op)
        self.longest = int((self.complete - self.start).max()) if len(self.complete) else 0
        # the benchmark's own requests: submitted by a traced process, by a kernel thread
        # (write-back, the journal) or by nobody known; not those of other programs on the device
        tgid = columns["tgid"]
        self.own = np.ones(len(tgid), dtype=bool) if traced is None else \
            (tgid == 0) | np.isin(tgid, traced) | columns["kernel"]

    @classmethod
    def of(cls, trace, dev: int, traced: np.ndarray | None = None) -> "Requests":
        """Device `dev`'s requests in `trace` (any trace, or an object with a `block` array)."""
        return cls(device_records.of(trace).requests(dev), traced)

    def window(self, a: int, b: int) -> dict:
        """iostat -x figures over [a, b]."""
        seconds = max(b - a, 1) / 1e9
        lo, hi = np.searchsorted(self.complete, [a, b], side="left")
        done = slice(lo, hi)
        rd, wr = self.read[done], self.write[done]
        size, wait = self.bytes[done], (self.complete[done] - self.start[done]) / 1e6
        # in flight during the window: completed after a, started before b
        far = np.searchsorted(self.complete, b + self.longest, side="right")
        s, c = self.start[lo:far], self.complete[lo:far]
        keep = s < b
        s, c = np.clip(s[keep], a, b), np.clip(c[keep], a, b)
        reads, writes = int(rd.sum()), int(wr.sum())
        own = self.own[done]
        return {"own_read_bytes": int(size[rd & own].sum()), "own_write_bytes": int(size[wr & own].sum()),
                "other_bytes": int(size[(rd | wr) & ~own].sum()),
            "read_bytes": int(size[rd].sum()), "write_bytes": int(size[wr].sum()), "reads": reads, "writes": writes,
            "read_Bps": size[rd].sum() / seconds, "write_Bps": size[wr].sum() / seconds,
            "areq_bytes": size[rd | wr].sum() / (reads + writes) if reads + writes else np.nan,
            "r_await_ms": wait[rd].mean() if reads else np.nan, "w_await_ms": wait[wr].mean() if writes else np.nan,
            "aqu_sz": (c - s).sum() / 1e9 / seconds, "util": _union(s, c) / 1e9 / seconds,
        }


def traced_processes(trace, event_tgids=()) -> np.ndarray:
    """The benchmark's processes: those of its events (event_tgids), of its process table, its pid."""
    tgids = {int(t) for t in event_tgids}
    procs = getattr(trace, "processes", None)
    if procs is not None and len(procs):
        tgids |= set(procs["tgid"].tolist())
    if trace.meta.get("pid"):
        tgids.add(int(trace.meta["pid"]))
    return np.array(sorted(tgids), dtype=np.uint32)


def _union(start: np.ndarray, end: np.ndarray) -> int:
    """Nanoseconds covered by at least one of the intervals."""
    if not len(start):
        return 0
    order = np.argsort(start, kind="stable")
    s, e = start[order], np.maximum.accumulate(end[order])
    # a new run starts where an interval begins after everything before it ended
    new = np.r_[True, s[1:] > e[:-1]]
    run_start = s[new]
    run_end = np.r_[e[np.flatnonzero(new)[1:] - 1], e[-1]]
    return int((run_end - run_start).sum())


def block_dev_names(trace) -> dict[int, str]:
    view = trace.meta.get("device_view")
    if view is None:
        # a trace cut short (no END): the devices are those the records name
        records = device_records.of(trace)
        return {int(d): dev_name(int(d)) for d in records.devices} if records.has_block else {}
    return {int(d["dev"]): d.get("name") or d["device"] for d in view.get("devices", [])}


def _phase_devices(trace, first_dev: dict[int, int], phases: pd.DataFrame,
                   first_ino: dict[int, int] | None = None) -> dict[int, int]:
    """phase -> the block device under its file (the file system's device, or its source's, or
    the device it is: a block device opened as a file, fio on /dev/nvme0n1).
    first_dev, first_ino: phase -> the device number and inode of its first call's file."""
    names = block_dev_names(trace)
    if not names:
        return {}
    by_name, by_file = {}, {}
    for f in trace.meta.get("files", []):
        source = f.get("block_device") or ""
        match = [d for d, n in names.items() if source == f"/dev/{n}"]
        if match:
            by_name[int(f["dev"])] = match[0]
            by_file[(int(f["dev"]), int(f.get("ino", -1)))] = match[0]
    out = {}
    for p in phases["phase"]:
        fs_dev = int(first_dev.get(int(p), -1))
        # several disks opened as files share /dev's file system: each is known by its inode
        own = by_file.get((fs_dev, int((first_ino or {}).get(int(p), -1))))
        dev = own if own is not None else fs_dev if fs_dev in names else by_name.get(
            fs_dev, next(iter(names)) if len(names) == 1 else None)
        if dev is not None:
            out[int(p)] = dev
    return out


def _window(phases: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each phase's window: its first data call to the end of its last call, fsync and close included."""
    a = phases["data_first_ns"].to_numpy(np.int64)
    b = np.maximum.reduce([phases[c].to_numpy(np.int64) for c in ("data_last_ns", "sync_end_ns", "close_end_ns")])
    return a, b


def scheduler_records(trace):
    """The trace's off-CPU stretches (sched_switch), or None when it has none to trust (the probe
    watched every process, so the traced threads' stretches were not kept)."""
    if not (trace.meta.get("device_view") or {}).get("offcpu", True):
        return None
    return device_records.of(trace).offcpu


class _Stretches:
    """One thread's off-CPU stretches inside one phase's window (clipped to it), and the call
    of the phase each one's midpoint falls in so far: the latest-starting call that started
    by then (its start, end and kind)."""

    def __init__(self, off: np.ndarray, on: np.ndarray, state: np.ndarray, lo: int, hi: int):
        self.start, self.end = np.clip(off, lo, hi), np.clip(on, lo, hi)
        self.state = state
        self.call_start = np.full(len(off), I64.min)
        self.call_end = np.full(len(off), I64.min)
        self.call_kind = np.full(len(off), -1, dtype=np.int8)   # a call kind (phases.call_kinds), -1 none

    @property
    def mid(self) -> np.ndarray:
        """Each stretch's midpoint (made when asked: 8 bytes a stretch fewer held)."""
        return (self.start + self.end) // 2

    def meet(self, start: np.ndarray, end: np.ndarray, kind: np.ndarray) -> None:
        """A block's calls of this thread in this phase, sorted by start (ties in time order).
        A later block's call is later in time order, so it wins a tie on the start."""
        if not len(self.start):
            return
        k = np.searchsorted(start, self.mid, side="right") - 1
        at = np.flatnonzero(k >= 0)
        k = k[at]
        later = start[k] >= self.call_start[at]
        at, k = at[later], k[later]
        self.call_start[at], self.call_end[at], self.call_kind[at] = start[k], end[k], kind[k]


class DeviceFacts:
    """What from_facts needs of a trace's events, fed block by block: their processes, each
    phase's first device number and threads, its calls' time in its window and the call each
    off-CPU stretch of its threads fell in (a call's work is done in its block, against the
    sched_switch records: no call is kept), fed the events' blocks by the report's pass
    (analysis/measure/stream_full.py); any cut into blocks gives the same facts. Sums over calls
    or stretches are integer nanoseconds: exact in any order. Memory: arrays per phase, and per
    (phase, thread) the thread's stretches in the window.

    phases: the phase table the view is made for (its windows, threads, async_ops); trace: for
    its block records (no view without them) and its off-CPU stretches.
    """

    def __init__(self, phases: pd.DataFrame, trace):
        self.phase = phases["phase"].to_numpy(np.int64)
        self.wanted = device_records.of(trace).has_block and len(self.phase) > 0
        self.tgids: set[int] = set()
        self.first_dev: dict[int, int] = {}              # phase -> device number of its first call
        self.first_ino: dict[int, int] = {}              # phase -> inode of its first call's file
        self.thread_keys = np.empty(0, dtype=np.int64)   # (row of the phase) << TID_BITS | tid
        self._slot = np.full(int(self.phase.max(initial=0)) + 1, -1, dtype=np.int64)
        self._slot[self.phase[self.phase >= 0]] = np.flatnonzero(self.phase >= 0)
        self.offcpu = scheduler_records(trace) if self.wanted else None
        self.lo, self.hi = _window(phases) if len(self.phase) else (np.empty(0, np.int64),) * 2
        self.queued = (phases["async_ops"].to_numpy() > 0 if "async_ops" in phases
                       else np.zeros(len(self.phase), dtype=bool))
        self.in_calls_ns = np.zeros(len(self.phase), dtype=np.int64)
        self.sync_ns = np.zeros(len(self.phase), dtype=np.int64)
        self.stretches: dict[int, _Stretches] = {}      # thread key -> its stretches in the phase's window
        if self.offcpu is not None:
            self._by_thread(self.offcpu)

    @property
    def timed(self) -> bool:
        """Whether the trace's sched_switch records give the threads' time split."""
        return self.offcpu is not None

    def _by_thread(self, off: np.ndarray) -> None:
        """The stretches thread by thread, each thread's in the order they began, with the
        latest end so far: those that can overlap a window [lo, hi) lie between the first whose
        running end passes lo and the first that begins at hi."""
        tid, start = off["tid"], off["off_ns"]
        by_thread = bool(np.all((tid[1:] > tid[:-1]) | ((tid[1:] == tid[:-1]) & (start[1:] >= start[:-1]))))
        if by_thread:   # as analysis/read/device_records.py gives them: used as they are, no copy
            self._o_off, self._o_on, self._o_state = start.view(np.int64), off["on_ns"].view(np.int64), off["state"]
            tid = tid.astype(np.int64)
        else:
            by_off = np.argsort(start, kind="stable")
            tid = tid[by_off].astype(np.int64)
            by_tid = np.argsort(tid, kind="stable")
            order = by_off[by_tid]
            self._o_off, self._o_on = start[order].astype(np.int64), off["on_ns"][order].astype(np.int64)
            self._o_state = off["state"][order]
            tid = tid[by_tid]
        self._o_tids, first = distinct.unique(tid, return_index=True)
        self._o_bounds = np.r_[first, len(tid)]
        self._o_ended = np.empty_like(self._o_on)
        for lo, hi in zip(self._o_bounds[:-1], self._o_bounds[1:]):
            self._o_ended[lo:hi] = np.maximum.accumulate(self._o_on[lo:hi])

    def _stretches_of(self, slot: int, tid: int) -> _Stretches:
        lo, hi = self.lo[slot], self.hi[slot]
        k = int(np.searchsorted(self._o_tids, tid))
        if k == len(self._o_tids) or self._o_tids[k] != tid:
            empty = np.empty(0, dtype=np.int64)
            return _Stretches(empty, empty, self._o_state[:0], lo, hi)
        mine = slice(self._o_bounds[k], self._o_bounds[k + 1])
        off, on, ended = self._o_off[mine], self._o_on[mine], self._o_ended[mine]
        first = int(np.searchsorted(ended, lo, side="right"))
        near = slice(first, max(first, int(np.searchsorted(off, hi, side="left"))))
        sel = (on[near] > lo) & (off[near] < hi)
        return _Stretches(off[near][sel], on[near][sel], self._o_state[mine][near][sel], lo, hi)

    def add(self, events: pd.DataFrame, a: pd.DataFrame) -> None:
        """One block of events and of the phase assignment's rows for them, the blocks in time order."""
        if not self.wanted or not len(events):
            return
        self.tgids.update(pd.unique(events["tgid"].to_numpy()).tolist())
        phase = a["phase"].to_numpy().astype(np.int64)
        known = (phase >= 0) & (phase < len(self._slot))
        slot = np.where(known, self._slot[np.where(known, phase, 0)], -1)
        rows = np.flatnonzero(slot >= 0)
        if not len(rows):
            return
        slot = slot[rows]
        first = pd.Series(slot).drop_duplicates()   # hashed, in time order: no sort of the block
        at = rows[first.index.to_numpy()]
        for s, d, i in zip(first.tolist(), events["dev"].to_numpy()[at].tolist(), events["ino"].to_numpy()[at].tolist()):
            self.first_dev.setdefault(int(self.phase[s]), int(d))
            self.first_ino.setdefault(int(self.phase[s]), int(i))
        tid = events["tid"].to_numpy().astype(np.int64)[rows]
        group, keys = pd.factorize((slot << TID_BITS) | tid)
        self.thread_keys = np.union1d(self.thread_keys, keys)
        if self.timed:
            self._calls(events, rows, slot, group, keys)

    def _calls(self, events, rows, slot, group, keys) -> None:
        """Time in calls inside each phase's window, and the call each off-CPU stretch fell in.
        A queued phase's asynchronous requests are no time in a call (_cpu)."""
        for key in keys.tolist():
            if key not in self.stretches:
                self.stretches[key] = self._stretches_of(key >> TID_BITS, key & ((1 << TID_BITS) - 1))
        syscall = events["syscall"]
        counted = np.flatnonzero(~(self.queued[slot] & named(syscall, async_ops())[rows]))
        if not len(counted):
            return
        # each thread's calls in a phase, sorted by start, ties in time order
        order = counted[stable_order(group[counted].astype(np.int64))]
        start = events["start_ns"].to_numpy(np.int64)[rows]
        g, s = group[order], start[order]
        if np.any((s[1:] < s[:-1]) & (g[1:] == g[:-1])):   # calls out of time order: by start too
            order = counted[np.lexsort((start[counted], group[counted]))]
        rows, slot, g, start = rows[order], slot[order], group[order], start[order]
        kind = call_kinds(syscall)[rows].astype(np.int64)
        end = events["end_ns"].to_numpy(np.int64)[rows]
        in_window = np.clip(np.minimum(end, self.hi[slot]) - np.maximum(start, self.lo[slot]), 0, None)
        bounds = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        # integer sums per thread of a phase (reduceat: no np.add.at per call), added to the phase
        for target, values in ((self.in_calls_ns, in_window), (self.sync_ns, np.where(kind == SYNC, in_window, 0))):
            np.add.at(target, slot[bounds], np.add.reduceat(values, bounds))
        for lo, hi in zip(bounds, np.r_[bounds[1:], len(g)]):
            self.stretches[int(keys[g[lo]])].meet(start[lo:hi], end[lo:hi], kind[lo:hi])

    def thread_pairs(self) -> np.ndarray:
        """(phase, thread id) of every thread of every phase, as the distinct columns np.unique gives."""
        pairs = np.stack([self.phase[self.thread_keys >> TID_BITS], self.thread_keys & ((1 << TID_BITS) - 1)])
        return np.unique(pairs, axis=1)

    def threads(self, i: int) -> int:
        """How many threads the phase in row i has."""
        return int(np.count_nonzero((self.thread_keys >> TID_BITS) == i))

    def off_cpu(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The off-CPU stretches of the phase in row i's threads inside its window: (nanoseconds,
        preempted, inside a call of the phase, inside an fsync of the phase)."""
        mine = self.thread_keys[(self.thread_keys >> TID_BITS) == i].tolist()
        parts = [self.stretches[k] for k in mine]
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty.astype(bool), empty.astype(bool), empty.astype(bool)
        dur = np.concatenate([p.end - p.start for p in parts])
        preempted = np.concatenate([p.state == 0 for p in parts])
        inside = np.concatenate([p.call_end >= p.mid for p in parts])
        in_sync = inside & np.concatenate([p.call_kind == SYNC for p in parts])
        return dur, preempted, inside, in_sync


def _syscall_bytes(r) -> int:
    return int(r.read_bytes if r.operation == "read" else r.write_bytes if r.operation == "write" else r.bytes)


def from_facts(trace, phases: pd.DataFrame, facts: DeviceFacts) -> pd.DataFrame:
    """One row per phase (COLUMNS), from what DeviceFacts gathered of the events, in one block
    or many; empty when the trace has no device view."""
    if not device_records.of(trace).has_block or phases.empty:
        return pd.DataFrame(columns=COLUMNS)
    devices = _phase_devices(trace, facts.first_dev, phases, facts.first_ino)
    names = block_dev_names(trace)
    traced = traced_processes(trace, facts.tgids)
    requests = {d: Requests.of(trace, d, traced) for d in set(devices.values())}
    a, b = _window(phases)
    threads = threads_of(phases, facts.thread_pairs())
    moved = credited(phases, devices, requests, threads, a, b)
    # the same over the data calls alone: what a benchmark that times only its calls timed
    calls_end = np.maximum(phases["data_last_ns"].to_numpy(np.int64), a)
    calls_moved = credited(phases, devices, requests, threads, a, calls_end)
    rows = []
    for i, r in enumerate(phases.itertuples()):
        dev = devices.get(int(r.phase))
        row = {"phase": int(r.phase), "device": names.get(dev) if dev is not None else None,
               "window_s": (b[i] - a[i]) / 1e9, "syscall_bytes": _syscall_bytes(r)}
        if dev is not None:
            row.update(requests[dev].window(int(a[i]), int(b[i])))
            row["device_bytes"], row["calls_device_bytes"] = int(moved[i]), int(calls_moved[i])
            row["device_ratio"] = moved[i] / row["syscall_bytes"] if row["syscall_bytes"] else np.nan
        rows.append(row)
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    _writeback(table, phases, devices, requests, a, b)
    _cpu(table, phases, facts, a, b)
    _iowait(trace, table, a, b)
    _limiters(table, phases)
    return table


def _writeback(table, phases, devices, requests, a, b) -> None:
    """Device writes after a buffered write phase's window, first in first out (module docstring)."""
    table["dirty_bytes"] = 0
    table["writeback_bytes"] = 0
    table["writeback_s"] = np.nan
    is_write_phase = (phases["operation"] == "write").to_numpy() & ~phases["O_DIRECT"].to_numpy(bool)
    # a write inside the window of a phase that claims writes (mixed ones too) is in that
    # phase's device bytes already: paying it out again as write-back would count it twice
    _, claims_write = claims(phases)
    device_of = np.array([devices.get(int(p)) for p in phases["phase"]], dtype=object)
    for dev, req in requests.items():
        on_dev = device_of == dev
        mine = np.flatnonzero(is_write_phase & on_dev)
        if not len(mine):
            continue
        claimed = np.flatnonzero(claims_write & on_dev)
        inside = holding(req.complete, a[claimed], b[claimed]) > 0
        free = req.write & req.own & ~inside
        t, amount = req.complete[free], req.bytes[free]
        total = np.cumsum(amount)
        consumed = 0
        for i in mine[np.argsort(b[mine], kind="stable")]:
            dirty = max(0, int(table.at[i, "syscall_bytes"]) - int(table.at[i, "device_bytes"]))
            table.at[i, "dirty_bytes"] = dirty
            before = int(total[np.searchsorted(t, b[i], side="right") - 1]) if len(t) and t[0] <= b[i] else 0
            start = max(consumed, before)
            take = min(dirty, int(total[-1]) - start if len(total) else 0)
            if take <= 0:
                continue
            consumed = start + take
            table.at[i, "writeback_bytes"] = take
            last = int(np.searchsorted(total, consumed, side="left"))
            table.at[i, "writeback_s"] = (t[min(last, len(t) - 1)] - b[i]) / 1e9


def _cpu(table, phases, facts: DeviceFacts, a, b) -> None:
    """User CPU, kernel CPU, blocked and runnable time of each phase's threads over its window.

    Off-CPU stretches (sched_switch) inside a call of the phase are time blocked in that call
    (or waiting for a CPU, when the thread was preempted); the rest of the call is kernel CPU.
    A stretch is inside the call of its thread that started last by its midpoint, when that
    call had not ended by then (DeviceFacts finds it). Outside calls, the window's time on the
    CPU is user CPU (page faults and interrupts in user code count there too).

    Asynchronous requests (io_uring, libaio) are not time the thread spends in a call: it
    submits and goes on. Their phases count only their syscalls as calls; a thread that sleeps
    outside them is waiting for completions (in io_uring_enter or io_getevents, which are not
    recorded one by one), so it is blocked; its time on the CPU outside calls, submitting and
    reaping included, is user time (limiter_line says so).
    """
    table["cpu_source"] = "sched_switch" if facts.timed else None
    if not facts.timed:
        return
    queued = facts.queued
    table["queued"] = queued
    for i in range(len(phases)):
        dur, preempted, inside, sync_call = facts.off_cpu(i)
        sync_ns, in_calls_ns = facts.sync_ns[i], facts.in_calls_ns[i]
        off_in_calls = dur[inside].sum()
        blocked = dur[inside & ~preempted & ~sync_call].sum()
        if queued[i]:
            blocked += dur[~inside & ~preempted].sum()
        runnable = dur[preempted].sum()
        sync_off = dur[inside & sync_call].sum()
        table.at[i, "fsync_s"] = sync_ns / 1e9
        table.at[i, "blocked_s"] = blocked / 1e9
        table.at[i, "runnable_s"] = runnable / 1e9
        table.at[i, "kernel_s"] = max(0, in_calls_ns - sync_ns - (off_in_calls - sync_off)) / 1e9
        # on-CPU time outside calls: threads x window, minus calls, minus off-CPU outside calls
        table.at[i, "user_s"] = max(0, facts.threads(i) * (b[i] - a[i]) - in_calls_ns - dur[~inside].sum()) / 1e9


def _iowait(trace, table, a, b) -> None:
    """The machine's iowait share between the samples that bracket each phase."""
    samples = [s for s in trace.samples if s.get("cpu")]
    table["iowait"] = np.nan
    if len(samples) < 2:
        return
    fields = (trace.meta.get("device_view") or {}).get("cpu_fields") or []
    if "iowait" not in fields:
        return
    k = fields.index("iowait")
    ts = np.array([s["ts_ns"] for s in samples], dtype=np.int64)
    cpu = np.array([s["cpu"] for s in samples], dtype=np.int64)
    for i in range(len(table)):
        lo = np.searchsorted(ts, a[i], side="right") - 1
        hi = np.searchsorted(ts, b[i], side="left")
        if lo < 0 or hi >= len(ts):
            continue
        delta = cpu[hi] - cpu[lo]
        table.at[i, "iowait"] = delta[k] / delta.sum() if delta.sum() else np.nan


def _limiters(table, phases) -> None:
    """The largest share of the window: device, kernel CPU, user CPU, fsync, a CPU."""
    limiter, share = [], []
    for i, r in enumerate(table.itertuples()):
        window = r.window_s if r.window_s and r.window_s > 0 else np.nan
        parts = {"device": r.blocked_s, "kernel": r.kernel_s, "user": r.user_s, "fsync": r.fsync_s,
                 "cpu": r.runnable_s}
        if all(v != v for v in parts.values()):
            # no scheduler data: the device is the limiter when it was busy and moved the bytes
            estimate = "device" if (r.util == r.util and r.util >= 0.5 and r.device_ratio == r.device_ratio
                                    and r.device_ratio >= 0.5) else None
            limiter.append(estimate)
            share.append(r.util if estimate else np.nan)
            continue
        best = max(parts, key=lambda k: parts[k] if parts[k] == parts[k] else -1)
        threads = int(phases.iloc[i]["threads"]) or 1
        limiter.append(best)
        share.append(parts[best] / (window * threads))
    table["limiter"] = limiter
    table["limiter_share"] = share


def limiter_line(r) -> str:
    """'waiting on the device (81 % of the window; user 2 %, kernel 9 %, ...)'."""
    if r.limiter is None or r.limiter != r.limiter:
        return "limiter unknown: no scheduler data and no busy device"
    text = LIMITERS[r.limiter]
    if r.cpu_source is None:
        return f"{text} (estimated from the device: {pct(r.util)} busy; no scheduler data)"
    total = r.window_s or np.nan
    parts = [f"{name} {pct(value / total)}" for name, value in
             (("blocked", r.blocked_s), ("kernel", r.kernel_s), ("user", r.user_s), ("fsync", r.fsync_s),
              ("runnable", r.runnable_s)) if value == value]
    line = f"{text} ({pct(r.limiter_share)} of the window; {', '.join(parts)})"
    if getattr(r, "queued", False) is True:
        line += ("; asynchronous requests: blocked is the threads' sleep waiting for completions, user includes "
                 "the kernel's work submitting and reaping them (io_uring_enter, io_submit, io_getevents are counted, "
                 "not timed one by one)")
    if r.limiter == "device" and r.util == r.util and r.util < 0.5 * (r.limiter_share or 0):
        line += (f"; the device itself was busy {pct(r.util)} of it: the wait is ahead of the device "
                 "(an I/O throttle such as a cgroup limit, or a queue in a layer above)")
    return line


def no_device_lines(trace) -> list[str]:
    view = trace.meta.get("device_view")
    if view is None and backends.backend_of(trace.meta) != backends.LIBBPF:
        return [f"no device view: a trace made by {backends.backend_of(trace.meta)} holds no block I/O"]
    if view is None and device_records.of(trace).has_block:
        return ["device view from an incomplete trace: devices by number only, files without a device not named"]
    if view is None:
        return ["no device view: this trace was recorded without the block probe"]
    return [f"no device view for {path}: {why}" for path, why in (view.get("no_block_device") or {}).items()]


def pct(share) -> str:
    return "-" if share is None or share != share else f"{share * 100:.0f} %"
