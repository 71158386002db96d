"""A trace into a replay plan: per recorded thread, the calls to issue again, in its order.

The plan is numpy arrays (no pandas: the player imports only this module's constants):

  calls    one row per call to replay, grouped by thread, each thread's rows in its own order: op
           (OPS), file (index into files), tgid, fd (the recorded fd; an open's: the fd it
           returned), ret (the recorded result: a dup's new fd), flags (open flags, whence,
           fallocate mode, RWF flags, fadvise advice), offset, size (bytes to ask for: a read asks
           what it asked, a write writes what it wrote; an fadvise or readahead its length), gap_ns
           (the thread's think time before the call: its start minus the end of its previous call,
           or, for its first call, its start minus the first call of the trace, less the time the
           thread spent preempted in between; an asynchronous request ends, for this, at its
           submission, and a thread's time runs from the last of its requests' completions, when
           later), start_ns (against the trace's first call), ring (an asynchronous request's libaio
           context or io_uring ring, numbered as the trace numbers them; 0 otherwise), depth (an
           asynchronous request: how many of its thread's requests on its ring were in flight when
           it was submitted: the player reaps a libaio context down to it first, and holds an
           io_uring ring to the most it ever had (docs/replay.md); any other call: how many of its
           thread's requests were in flight when it started, so 0 means every one had completed)
  waits    rows (call, thread, count): before `call`, wait until `thread` has issued `count`
           calls. On a file several threads touch, a call waits for the calls of other
           threads on that file it conflicts with that had completed before it started
           (ARTC's rule for a shared resource, ROOT, SOSP 2013, narrowed to conflicts:
           replay/order.py); only the waits that add to the previous one are kept
  threads  one row per recorded thread: tgid, tid, first (row in calls), count
  files    JSON: per file, its place under DIR (rel), whether the replay makes it before it
           starts (precreate: the trace found it there), its size then, and whether the
           original read it from the disk (cold: replay/cache.py), so the replay drops it from
           the page cache once made

Calls that failed in the original, and kinds of I/O the player does not issue yet (mmap and
faults, copy_file_range/sendfile/splice, fcntl other than F_DUPFD, io_uring requests on a
registered file), are not
in the plan: `skipped` counts them by syscall and reason, and the replay says so.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import struct

import numpy as np

from iowitness.collector.format import tracereader
from iowitness.errors import NotFound, UsageError
from iowitness.replay import cache, paths, plan_layout
from iowitness.replay.plan_layout import ASYNC, CALL, OP, OPS, READS, THREAD, WAIT, WRITES  # noqa: F401 (the plan's names)

URING_FIXED_FILE = 0x100   # the request named a registered file: its fd is an index, not an fd
# recorded syscall -> what the player issues (an open of any form is an openat2 inside DIR)
RECORDED = {**{name: name for name in OPS if name not in ("open", "dup")},
            "open": "open", "openat": "open", "openat2": "open", "creat": "open",
            "dup": "dup", "dup2": "dup", "dup3": "dup"}
F_DUPFD, F_DUPFD_CLOEXEC = 0, 1030
O_CREAT, O_EXCL, O_TRUNC = 0o100, 0o200, 0o1000
# one call's buffer, and all the threads' together: a trace asking for more is refused
MAX_CALL_BYTES = 256 << 20
MAX_BUFFER_BYTES = 1 << 30
MAX_THREADS = 4096
MAX_FD = 1 << 20   # recorded fds replay/player.c's tables hold
MAX_DEPTH = 4096   # asynchronous requests in flight on one ring (io_uring takes up to 32,768 entries)

class Plan:
    def __init__(self, calls, waits, threads, files: list[dict], source: dict, skipped: dict):
        self.calls, self.waits, self.threads = calls, waits, threads
        self.files, self.source, self.skipped = files, source, skipped

    def save(self, path: str) -> None:
        extra = json.dumps({"files": self.files, "source": self.source, "skipped": self.skipped}).encode()
        with open(path, "wb") as f:
            np.savez(f, calls=self.calls, waits=self.waits, threads=self.threads,
                     extra=np.frombuffer(extra, dtype=np.uint8))

    def save_native(self, path: str) -> None:
        """The plan as replay/player.c reads it (its header comment has the layout)."""
        rels = [f["rel"] for f in self.files]
        dirs = paths.directories(rels)
        where = {d: k for k, d in enumerate(dirs)}
        notes = plan_notes(self.skipped, rels, self.source.get("original_paths") or [])
        with open(path, "wb") as f:
            f.write(b"IOWPLAN2" + struct.pack("<IIQQIII", len(self.threads), len(self.files), len(self.calls),
                                              len(self.waits), len(dirs), len(notes), self.root_tgid))
            for array in (self.threads, self.calls, self.waits):
                f.write(np.ascontiguousarray(array).tobytes())
            for d in dirs:
                raw = d.encode("utf-8", "surrogateescape")
                f.write(struct.pack("<I", len(raw)) + raw)
            for rel in rels:
                d, name = posixpath.split(rel)
                raw = name.encode("utf-8", "surrogateescape")
                f.write(struct.pack("<II", where[d], len(raw)) + raw)
            f.write(notes)

    @classmethod
    def load(cls, path: str) -> "Plan":
        with np.load(path, allow_pickle=False) as z:
            extra = json.loads(z["extra"].tobytes().decode())
            return cls(z["calls"], z["waits"], z["threads"], extra["files"], extra["source"], extra["skipped"])

    @property
    def root_tgid(self) -> int:
        """The recorded process the benchmark was launched as (0: unknown). The player's own
        process replays it, so the replay's launched process does what the original's did;
        every other recorded process is a process the player forks."""
        pid = self.source.get("pid")
        return int(pid) if isinstance(pid, int) and 0 < pid < 2**32 else 0

    @property
    def has_async(self) -> bool:
        """libaio or io_uring requests to replay (the native player's alone)."""
        return bool(np.isin(self.calls["op"], [OP[o] for o in ASYNC]).any())

    def bytes_by_direction(self) -> dict[str, int]:
        ops = self.calls["op"]
        return {"read": int(self.calls["size"][np.isin(ops, [OP[o] for o in READS])].sum()),
                "write": int(self.calls["size"][np.isin(ops, [OP[o] for o in WRITES])].sum())}


def read_trace(path: str):
    """The trace's arrays, or a one-line error (missing, not a trace, damaged, summary only)."""
    if not os.path.exists(path):
        raise NotFound(f"trace {path} does not exist")
    data = tracereader.read(path)
    if data.summary is not None:
        raise UsageError(f"{path} is a --summary trace: it holds the kernel's aggregates, no record per call, "
                         "so there is nothing to replay; record without --summary")
    if not data.event_count:
        raise UsageError(f"{path} holds no call on a target file: nothing to replay")
    return data


def build(path: str, data=None) -> Plan:
    """The plan of the trace at `path` (read here unless `data` is its TraceData: a trace read
    here has its event columns dropped once the calls are taken from them)."""
    owned = data is None
    data = data if data is not None else read_trace(path)
    cols = data.columns
    n = data.event_count

    def drop(*names: str) -> None:
        """A trace read here: its columns let go once taken (the build's peak is then the plan's)."""
        if owned:
            for name in names:
                cols.pop(name, None)

    # the columns as they are where they are int64 already or 8-byte unsigned (a view, no copy)
    ret = _int64(cols["ret"])
    start = _int64(cols["start_ns"])
    end = start + _int64(cols["latency_ns"])
    drop("latency_ns")
    flags = cols["flags"]
    # per distinct op code (a few dozen), not per event: what it is replayed as (-1: not replayed)
    codes, op_index = np.unique(cols["op"], return_inverse=True)
    drop("op")
    code_names = [_op_name(data.ops.get(int(o)), int(o)) for o in codes]
    as_op = np.array([OP.get(RECORDED.get(name, ""), -1) for name in code_names], dtype=np.int16)
    target = as_op[op_index]
    fcntl = np.array([name == "fcntl" for name in code_names], dtype=bool)[op_index]
    target[fcntl & np.isin(flags, [F_DUPFD, F_DUPFD_CLOEXEC])] = OP["dup"]
    is_uring = np.isin(target, [OP["uring_read"], OP["uring_write"], OP["uring_fsync"]])
    fixed = is_uring & ((flags & URING_FIXED_FILE) != 0)
    target[fixed] = -1
    keep = (target >= 0) & (ret >= 0)
    skipped: dict[str, int] = {}
    for mask, why in ((fixed, "registered file, not replayed yet"), ((target < 0) & ~fixed, "not replayed yet"),
                      ((target >= 0) & (ret < 0), "failed")):
        counts = np.bincount(op_index[mask], minlength=len(codes))
        for k in np.flatnonzero(counts):
            skipped[f"{code_names[k]} ({why})"] = skipped.get(f"{code_names[k]} ({why})", 0) + int(counts[k])
    del op_index, fcntl, is_uring, fixed   # a build's peak is its temporaries: each dropped when done
    if not keep.any():
        raise UsageError(f"{path} holds no call a replay can issue ("
                         + ", ".join(f"{k}: {v:,}" for k, v in sorted(skipped.items())) + ")")
    fd = cols["fd"]
    too_high = keep & ((fd >= MAX_FD) | (fd < -1) | ((target != OP["open"]) & (fd < 0))
                       | (np.isin(target, [OP["open"], OP["dup"]]) & (ret >= MAX_FD)))
    if too_high.any():
        raise UsageError(f"{path} has calls on fds below 0 or of {MAX_FD:,} and above, which a replay cannot "
                         f"issue (a replay's fd table holds fds 0 to {MAX_FD - 1:,})")

    file_of, abs_paths = _files_of(data, cols, end)
    drop("dev", "ino")
    rows = np.flatnonzero(keep)
    del keep, too_high
    # the calls grouped by thread, each thread's in time order (the reader's order is time order);
    # threads numbered in order of their first call
    tgid, tid = cols["tgid"][rows], cols["tid"][rows]
    drop("tgid", "tid")
    thread_key = (tgid.astype(np.int64) << 32) | tid.astype(np.int64)
    keys, first_row, key_index = np.unique(thread_key, return_index=True, return_inverse=True)
    if len(keys) > MAX_THREADS:
        raise UsageError(f"the trace has {len(keys):,} threads; a replay runs at most {MAX_THREADS:,}")
    rank = np.empty(len(keys), dtype=np.int32)
    rank[np.argsort(first_row, kind="stable")] = np.arange(len(keys))
    thread_index = rank[key_index]
    first_seen = range(len(keys))
    order = np.argsort(thread_index, kind="stable")
    rows, thread_index = rows[order], thread_index[order]
    tgid, tid = tgid[order], tid[order]
    del thread_key, key_index, order

    used, file_index = np.unique(file_of[rows], return_inverse=True)
    del file_of
    used = used.tolist()
    rels = paths.relative_layout([abs_paths[k] for k in used])

    calls = np.zeros(len(rows), CALL)
    calls["op"] = target[rows]
    calls["file"] = file_index
    del file_index
    calls["tgid"] = tgid
    calls["fd"] = np.where(calls["op"] == OP["open"], ret[rows], fd[rows])
    del target, fd, tgid
    drop("fd")
    calls["ret"] = ret[rows]
    calls["flags"] = flags[rows]
    del flags
    drop("flags")
    calls["offset"] = cols["offset"][rows]
    drop("offset")
    requested = cols["requested"][rows].astype(np.uint64).view(np.int64)
    drop("requested")
    is_write = np.isin(calls["op"], [OP[o] for o in WRITES])
    calls["size"] = np.where(is_write, ret[rows], requested)
    del is_write, requested, ret
    drop("ret")
    is_io = np.isin(calls["op"], [OP[o] for o in READS + WRITES])
    too_big = is_io & ((calls["size"] > MAX_CALL_BYTES) | (calls["size"] < 0))
    if too_big.any():
        raise UsageError(f"a call of the trace moves {int(calls['size'][too_big].max()):,} bytes, more than a "
                         f"replay issues in one call ({MAX_CALL_BYTES >> 20} MiB)")
    del too_big

    calls["ring"] = cols["ring"][rows] if "ring" in cols else 0
    drop("ring")
    t0 = int(start[rows].min()) if len(rows) else 0
    s, e = start[rows], end[rows]
    del start, end, rows
    drop(*list(cols))   # every call is in the plan now: the trace's columns are not needed again
    calls["start_ns"] = s - t0
    is_async = np.isin(calls["op"], [OP[o] for o in ASYNC])
    # a thread's think time runs from its previous call's end, and an asynchronous request's
    # thread was free again at its submission, not at its completion
    e_thread = np.where(is_async, s, e)
    threads = np.zeros(len(first_seen), THREAD)
    bounds = np.searchsorted(thread_index, np.arange(len(first_seen) + 1))
    gap = np.empty(len(calls), dtype=np.int64)
    preempted = _preempted(data.offcpu)
    held = start_held(data.offcpu, calls["tgid"][bounds[:-1]], tid[bounds[:-1]], s[bounds[:-1]], t0)
    for t in range(len(first_seen)):
        a, b = bounds[t], bounds[t + 1]
        threads[t] = (calls["tgid"][a], tid[a], a, b - a)
        gap[a] = s[a] - t0 - held[t]
        since = np.concatenate([[t0], e_thread[a:b - 1]])
        if is_async[a:b].any():
            # a thread waiting for its requests (io_getevents, io_uring_enter) was not thinking:
            # its time runs from the last of its requests' ends before the call, when later
            latest = _last_end_before(e[a:b][is_async[a:b]], s[a + 1:b])
            # a request the original waited before: marked for the player (WAITED_BEFORE)
            calls["flags"][a + 1:b][(latest > since[1:]) & is_async[a + 1:b]] |= np.uint32(plan_layout.WAITED_BEFORE)
            since[1:] = np.maximum(since[1:], latest)
        gap[a + 1:b] = s[a + 1:b] - since[1:]
        lost = preempted.get(int(tid[a]))
        if lost is not None:   # time the thread was runnable but off the CPU is not think time
            # (not before its first call: that one's start since the trace's first call places
            # it among the other threads, as the original had them; fio's 4 jobs start within
            # 0.5 ms of each other, and their starts less each one's preemption spread them by 9)
            gap[a + 1:b] -= lost(s[a + 1:b]) - lost(since[1:])
        if is_async[a:b].any():
            calls["depth"][a:b] = _depths(calls[a:b], is_async[a:b], s[a:b], e[a:b])
    calls["gap_ns"] = np.maximum(gap, 0)
    del gap, e_thread
    if len(calls) and int(calls["depth"].max()) >= MAX_DEPTH:
        raise UsageError(f"the trace had {int(calls['depth'].max()):,} asynchronous requests in flight on one ring; "
                         f"a replay keeps at most {MAX_DEPTH:,}")
    buffers = sum(int(calls["size"][a:b][is_io[a:b]].max(initial=0)) for a, b in zip(bounds[:-1], bounds[1:]))
    if buffers > MAX_BUFFER_BYTES:
        raise UsageError(f"the trace's threads would need {buffers >> 20:,} MiB of buffers at once; a replay "
                         f"takes at most {MAX_BUFFER_BYTES >> 20} MiB")

    files = _file_table(calls, rels, s, e)
    for entry, cold in zip(files, cache.cold_files(data.block, calls, tid, s, e, files)):
        entry["cold"] = cold
    from iowitness.replay import order as ordering  # it reads this module's op table
    waits = ordering.waits(calls, thread_index, bounds, s, e, [f["size"] if f["precreate"] else 0 for f in files])
    source = {"path": os.path.abspath(path), "command": data.meta.get("command"), "pid": data.meta.get("pid"),
              "host": data.meta.get("host"), "events": n, "calls": len(calls),
              "original_paths": [abs_paths[k] for k in used],
              # a damaged tail: the calls before it are replayed, and the replay says so
              "damaged": _damage(data.meta),
              # calls the recording lost (its collector fell behind): not in the trace, so not
              # replayed either; the replay says so rather than stand in for the whole run
              "missing": data.missing}
    return Plan(calls, waits, threads, files, source, skipped)


def _int64(column) -> np.ndarray:
    """A column as int64: a view of an 8-byte integer column (the values a cast gives), else a copy."""
    if column.dtype.kind in "iu" and column.dtype.itemsize == 8 and column.dtype.isnative:
        return column.view(np.int64)
    return column.astype(np.int64)


def _last_end_before(ends, at) -> np.ndarray:
    """For each time in `at`, the latest of `ends` not after it (0 when none): when a thread
    that waited for its asynchronous requests got the last of them back."""
    done = np.sort(ends)
    k = np.searchsorted(done, at, side="right") - 1
    return np.where(k >= 0, done[np.maximum(k, 0)], 0)


def start_held(offcpu, tgid, tid, first, t0: int) -> np.ndarray:
    """Per thread (its process, its id and its first call's start, in plan order): how much of
    the time from the trace's first call to the thread's first sign of life (its first call, or
    its first off-CPU record when earlier) its process had no thread on a CPU and one of them
    preempted. That is the machine's load, not the workload's: a new thread that waits for a
    CPU, or whose creator is preempted before it creates it, leaves no record of its own (the
    probe sees a thread leave the CPU, not wait for its first turn), and its first call kept
    that wait as its start. threads_bench's main thread made its 4 writers within 1.4 ms and
    slept in pthread_join; the first writer made 620 of its 1,024 writes before being
    preempted at 3.9 ms, and the 3 others, runnable all along, made their first at 8.2 ms:
    replayed at 8.2 ms, by then the first writer had written alone, and their contention on
    the file was not replayed. A time when one of the process's threads was on a CPU (it may
    be creating the thread), or none preempted (they slept: the workload's own wait), is kept;
    so is every start of a thread alone in its process (fio's jobs, which wait for fio's
    signal to start, spread when their own preemption was taken off)."""
    out = np.zeros(len(tid), dtype=np.int64)
    if offcpu is None or not len(offcpu):
        return out
    for process in np.unique(tgid):
        members = np.flatnonzero(tgid == process)
        recs = offcpu[offcpu["tgid"] == process]
        if len(members) < 2 or not len(recs):
            continue
        rec_tid = recs["tid"].astype(np.int64)
        off, on = recs["off_ns"].astype(np.int64), recs["on_ns"].astype(np.int64)
        # each of the process's threads (those with calls, and those only switched) seen from here on
        seen = {int(tid[m]): int(first[m]) for m in members}
        for k in np.unique(rec_tid).tolist():
            first_off = int(off[rec_tid == k].min())
            seen[k] = min(seen.get(k, first_off), first_off)
        # a sweep over the process's changes: threads on a CPU (+1 when seen, -1 off, +1 back
        # on), threads preempted (+1 off in state 0, -1 back on)
        times = np.concatenate([np.array(list(seen.values()), dtype=np.int64), off, on])
        on_cpu = np.concatenate([np.ones(len(seen), np.int64), -np.ones(len(off), np.int64),
                                 np.ones(len(on), np.int64)])
        state0 = (recs["state"] == 0).astype(np.int64)
        waiting = np.concatenate([np.zeros(len(seen), np.int64), state0, -state0])
        by_time = np.argsort(times, kind="stable")
        times, n_on, n_waiting = times[by_time], np.cumsum(on_cpu[by_time]), np.cumsum(waiting[by_time])
        # the held time up to each change: the spans after a change where none was on and one waited
        held = np.concatenate([[0], np.cumsum(np.where((n_on[:-1] <= 0) & (n_waiting[:-1] > 0),
                                                       np.diff(times), 0))])

        def held_by(t: int) -> int:
            k = int(np.searchsorted(times, t, side="right")) - 1
            if k < 0:
                return 0
            inside = t - int(times[k]) if n_on[k] <= 0 and n_waiting[k] > 0 else 0
            return int(held[k]) + inside
        for m in members:
            upto = seen[int(tid[m])]
            if upto > t0:
                out[m] = held_by(upto) - held_by(t0)
    return out


def _preempted(offcpu) -> dict:
    """Per recorded thread, P(t): the time it had spent preempted (switched out while still
    runnable) before t, from the trace's off-CPU records. A gap between two calls is the
    thread's own time only less that: a preemption is the machine's load, not the workload's
    think time, and the replay's machine adds its own. Sleeps and waits for I/O stay think time."""
    if offcpu is None or not len(offcpu):
        return {}
    mine = offcpu[offcpu["state"] == 0]
    out = {}
    for tid in np.unique(mine["tid"]):
        rows = mine[mine["tid"] == tid]
        rows = rows[np.argsort(rows["off_ns"], kind="stable")]
        off, on = rows["off_ns"].astype(np.int64), rows["on_ns"].astype(np.int64)
        length = np.maximum(on - off, 0)
        before = np.concatenate([[0], np.cumsum(length)[:-1]])

        def lost(t, off=off, length=length, before=before):
            k = np.searchsorted(off, t, side="right") - 1
            inside = np.clip(t - off[np.maximum(k, 0)], 0, length[np.maximum(k, 0)])
            return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0)
        out[int(tid)] = lost
    return out


def _depths(calls, is_async, start, end) -> np.ndarray:
    """One thread's calls: for each asynchronous request, its ring's requests in flight at its
    submission (submitted before it, in the thread's order, and not completed by then); for
    each other call, all its rings' requests in flight when it started."""
    out = np.zeros(len(calls), dtype=np.int64)
    every = np.flatnonzero(is_async)
    for ring in np.unique(calls["ring"][every]):
        mine = every[calls["ring"][every] == ring]
        done = np.searchsorted(np.sort(end[mine]), start[mine], side="right")
        out[mine] = np.maximum(np.arange(len(mine)) - done, 0)
    others = np.flatnonzero(~is_async)
    if len(others):
        submitted = np.searchsorted(every, others)   # requests before each other call, in order
        done = np.searchsorted(np.sort(end[every]), start[others], side="right")
        out[others] = np.maximum(submitted - done, 0)
    return out


def _files_of(data, cols, end) -> tuple[np.ndarray, list[str]]:
    """Each event's file, as an index into a list of absolute paths: the path its (dev, ino)
    was last opened under before the event ended (an inode number may name several files over
    a run), else its first, else the trace's targets, else a name made of dev and ino."""
    facts = data.facts
    file_kind = [k for k, name in data.meta_kinds.items() if name == "file"]
    facts = facts[np.isin(facts["kind"], file_kind)] if len(facts) else facts
    facts = facts[np.argsort(facts["ts_ns"], kind="stable")] if len(facts) else facts
    cwd = data.meta.get("cwd")
    path_index: dict[str, int] = {}
    abs_paths: list[str] = []

    def index(p: str) -> int:
        if p not in path_index:
            path_index[p] = len(abs_paths)
            abs_paths.append(p)
        return path_index[p]

    key = (cols["dev"].astype(np.uint64) << np.uint64(44)) ^ cols["ino"].astype(np.uint64)
    fact_key = ((facts["dev"].astype(np.uint64) << np.uint64(44)) ^ facts["ino"].astype(np.uint64)) if len(facts) \
        else np.zeros(0, np.uint64)
    targets = target_names(data.meta)
    out = np.empty(len(key), dtype=np.int32)
    for k in np.unique(key):
        mine = key == k
        here = facts[fact_key == k]
        if len(here):
            codes = np.array([index(paths.absolute(_text(f["path"]), int(f["dirfd"]), cwd)) for f in here])
            at = np.searchsorted(here["ts_ns"].astype(np.int64), end[mine], side="right") - 1
            out[mine] = codes[np.maximum(at, 0)]
        elif int(k) in targets:
            out[mine] = index(paths.absolute(targets[int(k)], paths.AT_FDCWD, cwd))
        else:
            out[mine] = index(unnamed_path(int(cols["dev"][np.argmax(mine)]), int(k) & ((1 << 44) - 1)))
    return out, abs_paths


UNNAMED = "/unnamed/"   # where a file the trace has no name for is placed (unnamed_path)


def target_names(meta: dict) -> dict[int, str]:
    """The trace's targets (files named with --file, registered by inode before the recording:
    the probe records no open of them) by the events' (dev, ino) key, which is 64 bits: a
    device's major number lies above bit 20 of dev, so the key drops it (as every reader of a
    trace does: analysis/read/trace_view.py), and an unmasked key never matched one."""
    out = {}
    for t in meta.get("targets") or []:
        out[((int(t["dev"]) << 44) ^ int(t["ino"])) & ((1 << 64) - 1)] = str(t["path"])
    return out


def unnamed_path(dev: int, ino: int) -> str:
    """The place of a file the trace holds calls on but no name for: no open of it was recorded
    (it was opened before the recording began, the probe's record of its open was lost) and it
    is not a --file target. dev in the kernel's encoding (major << 20 | minor)."""
    return f"{UNNAMED}dev{dev >> 20}:{dev & ((1 << 20) - 1)}-ino{ino}"


def plan_notes(skipped: dict, rels: list[str], original_paths: list[str]) -> bytes:
    """The lines the player prints after its summary: what was not replayed, and each file the
    trace could not name, with why and where it was replayed."""
    lines = [f"iowitness replay:   not replayed: {what}: {count:,}\n" for what, count in sorted(skipped.items())]
    for rel, original in zip(rels, original_paths):
        if original.startswith(UNNAMED):
            lines.append(f"iowitness replay:   no name for {original[len(UNNAMED):]} in the trace (no open of it "
                         f"was recorded: opened before the recording began, or the record lost): replayed as "
                         f"{rel} under the replay's directory\n")
    return "".join(lines).encode("utf-8", "surrogateescape")


def _damage(meta: dict) -> str | None:
    if not meta.get("truncated_bytes"):
        return None
    return f"{int(meta['truncated_bytes']):,} bytes at its end unread ({meta.get('unread_reason') or 'damaged'})"


def _op_name(name, code: int) -> str:
    """A syscall's name from the trace's own table: text a trace from elsewhere could make
    anything, so only a plain name is taken (it is printed by the player)."""
    return name if isinstance(name, str) and re.fullmatch(r"[a-z0-9_]{1,32}", name) else f"op{code}"


def _text(raw) -> str:
    return bytes(raw).split(b"\0", 1)[0].decode("utf-8", errors="surrogateescape")


def _file_table(calls, rels: list[str], start, end) -> list[dict]:
    """Per file: made before the replay (the trace found it there) and how large, from the
    calls: a file whose first call is an open with O_TRUNC, or with O_CREAT and no read of
    data it had not written, is the workload's to make; the others get as many bytes as the
    trace read from them beyond what it had written first."""
    # each file's calls in time order (ties in plan order): one stable sort by file, then start
    by_file = np.lexsort((start, calls["file"]))
    bounds = np.searchsorted(calls["file"][by_file], np.arange(len(rels) + 1))
    is_read = np.isin(calls["op"], [OP[o] for o in READS])
    is_write = np.isin(calls["op"], [OP[o] for o in WRITES])
    files = []
    for f, rel in enumerate(rels):
        rows = by_file[bounds[f]:bounds[f + 1]]
        op, offset = calls["op"][rows], calls["offset"][rows]
        r, w = is_read[rows], is_write[rows]
        read_end = np.where(r, offset + np.maximum(calls["ret"][rows], 0), 0)
        write_end = np.where(w, offset + calls["size"][rows], 0)
        before = np.concatenate([[0], np.maximum.accumulate(write_end)[:-1]]) if len(rows) else write_end
        unwritten = read_end[(read_end > before) & r]
        size = int(unwritten.max()) if len(unwritten) else 0
        opens = rows[op == OP["open"]][:1]
        first_flags = int(calls["flags"][opens[0]]) if len(opens) else 0
        makes_it = bool(len(opens)) and int(op[0]) == OP["open"] and (
            bool(first_flags & O_TRUNC) or (bool(first_flags & O_CREAT) and size == 0))
        files.append({"rel": rel, "precreate": not makes_it, "size": 0 if makes_it else size})
    return files
