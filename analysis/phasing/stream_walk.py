"""The one pass over the events behind analysis/phasing/stream_assign.py: each event's stream and what
it is, as the phases' rules find them, with state per fd, per file, per stream and per run.

The rules are applied here block by block, each block seeded with
what earlier blocks left: a key's open file description (`_spans`), a file's last open and
mapping by each process (`_fd_of_last`), a stream's last two data calls and its run so far
(the run cut, the warm-up rules, `_buffer_fills`). Results go to temporary files:

  stream  per event, its stream (span x thread), numbered in order of first appearance
  bits    per event, DATA | IS_READ | RUN | FIRST | WARM | FILL | CODE
  runs    per direction run of a stream, in time order: (row, start_ns, stream)

WARM and FILL are candidates: a warm-up counts only in a stream that is not mixed, a fill
only in one that writes, which the streams' counts tell once the pass is over.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from iowitness.analysis.phasing.output_fds import OutputFds
from iowitness.analysis.phasing.phases import (
    CREAT,
    F_DUPFD,
    F_DUPFD_CLOEXEC,
    FAULTS,
    FIXED_FD_BASE,
    MAPPED_FD_BASE,
    ON_MAPPINGS,
    OPEN,
    OTHER,
    POSITIONED,
    PROT_EXEC,
    READ,
    URING_FIXED_FILE,
    URING_OPS,
    WRITE,
    _new_group as new_group,
    call_kinds,
    named,
    stable_order,
    stable_order_of_few,
)
from iowitness.analysis.read import distinct
from iowitness.collector.format.traceformat import ops_of_kind

DATA, IS_READ, RUN, FIRST, WARM, FILL, CODE = (1 << b for b in range(7))
DUPS, FCNTL = ops_of_kind("dup"), ops_of_kind("fcntl")
WINDOW = 1 << 20      # rows per read of a temporary file
FILE_KEYS = ["tgid", "dev", "ino"]


class Column:
    """A growing array in a file, read and written through np.memmap windows: only the window
    in hand is mapped, so the file's pages never count as this process's memory for long."""

    def __init__(self, path: str, dtype):
        self.path, self.dtype, self.length, self._capacity = path, np.dtype(dtype), 0, 0
        open(path, "wb").close()

    def _map(self, mode: str, at: int, count: int) -> np.memmap:
        return np.memmap(self.path, self.dtype, mode, offset=at * self.dtype.itemsize, shape=(count,))

    def write(self, at: int, values: np.ndarray) -> None:
        if not len(values):
            return
        end = at + len(values)
        if end > self._capacity:
            grown = max(end, 2 * self._capacity)
            # blocks allocated now: a full disk is an OSError here, not a SIGBUS at a mapped write
            with open(self.path, "r+b") as handle:
                os.posix_fallocate(handle.fileno(), 0, grown * self.dtype.itemsize)
            self._capacity = grown
        window = self._map("r+", at, len(values))
        window[:] = values
        del window
        self.length = max(self.length, end)

    def append(self, values: np.ndarray) -> None:
        self.write(self.length, values)

    def read(self, at: int, count: int) -> np.ndarray:
        if not count:
            return np.empty(0, self.dtype)
        window = self._map("r", at, count)
        out = np.array(window)
        del window
        return out

    def set_bits(self, positions: np.ndarray, bit: int) -> None:
        """values[positions] |= bit, for rows written already (a decision that came later)."""
        if not len(positions):
            return
        lo, hi = int(positions.min()), int(positions.max()) + 1
        window = self._map("r+", lo, hi - lo)
        window[positions - lo] |= bit
        del window


class PerStream:
    """Named int64 arrays indexed by stream number, growing as streams appear."""

    FIELDS = {"span": -1, "first_row": -1, "first_ns": -1, "first_data": -1, "calls": 0, "runs": 0, "reads": 0,
              "fills": 0,
              "has": 0, "tgid": 0, "tid": 0, "file": 0, "bytes": 0, "positioned": 0,
              **{f"l{i}_{name}": 0 for i in (1, 2) for name in ("kind", "off", "req", "done", "pos", "rip")}}

    def __init__(self):
        self.count = 0
        self._arrays = {name: np.full(16, value, dtype=np.int64) for name, value in self.FIELDS.items()}

    def add(self, count: int) -> np.ndarray:
        new = np.arange(self.count, self.count + count)
        self.count += count
        size = len(self._arrays["span"])
        if self.count > size:
            grown = max(self.count, 2 * size)
            for name, value in self.FIELDS.items():
                array = np.full(grown, value, dtype=np.int64)
                array[:size] = self._arrays[name]
                self._arrays[name] = array
        return new

    def get(self, name: str) -> np.ndarray:
        return self._arrays[name][:self.count]

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]   # whole capacity, for writing at stream numbers


class _Restart(Exception):
    """A file mapped executable after faults on it were taken as data: walk again knowing it."""


class _Lookups:
    """What each syscall is (phases.call_kinds, phases.named), looked up once per category set
    rather than once per block: blocks share their categories."""

    NAMES = {"fault": FAULTS, "mmap": ("mmap",), "uring": URING_OPS, "on_map": ON_MAPPINGS, "dup": DUPS,
             "fcntl": FCNTL, "positioned": POSITIONED}

    def __init__(self):
        self._categories, self._tables = None, None

    def __call__(self, syscall: pd.Series) -> dict[str, np.ndarray]:
        if not isinstance(syscall.dtype, pd.CategoricalDtype):
            return {"kind": call_kinds(syscall), **{k: named(syscall, v) for k, v in self.NAMES.items()}}
        categories = syscall.cat.categories
        if self._categories is None or not (categories is self._categories or categories.equals(self._categories)):
            # every category once, and a missing value last (code -1), through phases' own functions
            every = pd.Series(pd.Categorical.from_codes(np.r_[np.arange(len(categories)), -1], dtype=syscall.dtype))
            self._tables = {"kind": call_kinds(every), **{k: named(every, v) for k, v in self.NAMES.items()}}
            self._categories = categories
        codes = syscall.cat.codes.to_numpy()
        return {name: table[codes] for name, table in self._tables.items()}


def _extract(block: pd.DataFrame, outside, lookups: _Lookups) -> dict[str, np.ndarray]:
    """What the walk needs of a block, as read from the events table."""
    fd = block["fd"].to_numpy(np.int64)
    flags = block["flags"].to_numpy(np.int64)
    what = lookups(block["syscall"])
    mmap = what["mmap"]
    out = {"tgid_raw": block["tgid"].to_numpy(), "dev_raw": block["dev"].to_numpy(), "ino_raw": block["ino"].to_numpy(),
           "start": block["start_ns"].to_numpy(), "tgid": block["tgid"].to_numpy(np.int64),
           "tid": block["tid"].to_numpy(np.int64), "fd": fd, "ret": block["ret"].to_numpy(np.int64),
           "offset": block["offset"].to_numpy(np.int64), "requested": block["requested"].to_numpy(np.int64),
           "kind": what["kind"], "fault": what["fault"], "mmap": mmap, "positioned": what["positioned"],
           "exec": mmap & ((flags & PROT_EXEC) != 0),
           "file": (block["dev"].to_numpy(np.int64) << 40) ^ block["ino"].to_numpy(np.int64),
           "fixed": what["uring"] & ((flags & URING_FIXED_FILE) != 0),
           "on_map": what["on_map"] & (fd < 0),
           "copy": what["dup"] | (what["fcntl"] & np.isin(flags, [F_DUPFD, F_DUPFD_CLOEXEC]))}
    own = outside(block) if outside is not None else None
    out["outside"] = np.zeros(len(block), bool) if own is None else np.asarray(own, dtype=bool)
    return out


class Walk:
    """The pass itself; its results are `stream_file`, `bits_file`, `runs`, `streams`, `span_count`."""

    def __init__(self, source, outside, folder: str):
        self.folder = folder
        exec_files: set[int] = set()
        self._source = source
        while True:
            try:
                self._walk(source, outside, exec_files)
                return
            except _Restart as restart:
                exec_files |= restart.args[0]

    def close(self) -> None:
        self.folder = None

    # --- the pass ---------------------------------------------------------------------------

    def _walk(self, source, outside, exec_files: set[int]) -> None:
        self.stream_file = Column(os.path.join(self.folder, "stream.i4"), np.int32)
        self.bits_file = Column(os.path.join(self.folder, "bits.u1"), np.uint8)
        self.runs = _Runs(self.folder)
        self.streams = PerStream()
        self.span_count, self.events, self.start_dtype = 0, 0, np.dtype(np.uint64)
        self._exec = np.array(sorted(exec_files), dtype=np.int64)
        self._exec_set, self._faulted = set(exec_files), set()
        self._description: dict[int, int] = {}             # (tgid, fd) key -> description (span)
        self._stream_of: dict[int, int] = {}               # (span, tid) key -> stream
        self._last_maker = ({}, {})                        # (tgid, dev, ino) -> fd of its last open, mmap
        self._last_start, self._unsorted, self._by_file = None, False, False
        # the benchmark's stdout and stderr are output, never data (analysis/phasing/output_fds.py)
        self._output = OutputFds.of(self._source)
        for at, chunk in _chunks(source, outside):
            self._chunk(at, chunk)
            self.events = at + len(chunk["start"])
        self._last_pairs()

    def _chunk(self, at: int, c: dict[str, np.ndarray]) -> None:
        self.start_dtype = c["start"].dtype
        kind = c["kind"].copy()
        ok = c["ret"] >= 0
        code = self._code(c) | c["outside"] | self._output.rows(c, kind)
        kind[code] = OTHER
        self._check_order(c)
        fd = self._description_fds(c, kind, ok)
        span = self._spans(c, kind, ok, fd)
        stream = self._streams(at, span, c["tid"], c["start"])
        bits = np.where(code, CODE, 0).astype(np.uint8)
        self._data_calls(at, c, kind, stream, bits)
        if self.streams.count >= 2 ** 31:
            raise ValueError("stream_assign: more than 2^31 streams")
        self.stream_file.write(at, stream.astype(np.int32))
        self.bits_file.write(at, bits)

    def _code(self, c) -> np.ndarray:
        """Faults on a file some process maps executable anywhere in the trace (phases._faults_on_code).
        A file mapped so only after faults on it were taken as data makes the walk start again."""
        new = set(np.unique(c["file"][c["exec"]]).tolist()) - self._exec_set
        if new & self._faulted:
            raise _Restart(self._exec_set | new)
        if new:
            self._exec_set |= new
            self._exec = np.array(sorted(self._exec_set), dtype=np.int64)
        code = c["fault"] & np.isin(c["file"], self._exec)
        self._faulted.update(np.unique(c["file"][c["fault"] & ~code]).tolist())
        return code

    def _check_order(self, c) -> None:
        start = c["start"]
        if len(start):
            self._unsorted |= bool(np.any(start[1:] < start[:-1])) or (
                self._last_start is not None and start[0] < self._last_start)
            self._last_start = start[-1]
        self._by_file |= bool(c["fixed"].any() or c["on_map"].any())
        if self._unsorted and self._by_file:
            # merge_asof needs them sorted too, and fails otherwise
            raise ValueError("stream_assign: events out of start_ns order, with io_uring registered files or "
                             "mapped-file calls to resolve: the events must be in time order")

    def _description_fds(self, c, kind, ok) -> np.ndarray:
        """phases._description_fds: a registered file's request and a call on a mapping take the
        fd of the process's last open (mmap) of the file at or before its start."""
        fd = c["fd"]
        if not c["fixed"].any() and not c["on_map"].any() and not (c["mmap"] & ok).any() \
                and not ((kind == OPEN) | (kind == CREAT)).any():
            return fd
        fd = fd.copy()
        for rows, makers, base, last in (
                (c["fixed"], ((kind == OPEN) | (kind == CREAT)) & ok, FIXED_FD_BASE, self._last_maker[0]),
                (c["on_map"], c["mmap"] & ok, MAPPED_FD_BASE, self._last_maker[1])):
            rows, makers = np.flatnonzero(rows), np.flatnonzero(makers)
            if len(rows):
                fd[rows] = _fd_of_last(c, rows, makers, fd, base, last)
            for key, value in zip(zip(*(c[f"{k}_raw"][makers].tolist() for k in FILE_KEYS)), fd[makers].tolist()):
                last[key] = value
        return fd

    def _spans(self, c, kind, ok, fd) -> np.ndarray:
        """phases._spans on one chunk: a key's first row here continues its description from
        earlier chunks unless an open or a copy starts a new one. Descriptions are numbered as
        they start, which is phases._spans's numbering by first call."""
        m = len(fd)
        tgid, ret = c["tgid"], c["ret"]
        copies = np.flatnonzero(ok & c["copy"])
        key = np.r_[(tgid << 32) | (fd & 0xFFFFFFFF), (tgid[copies] << 32) | (ret[copies] & 0xFFFFFFFF)]
        # by key, then time (a copy just after its call): the keys sorted stably over the rows
        # in time order, np.lexsort((time, key)) at a fraction of its cost
        if len(copies):
            by_time = np.argsort(np.r_[np.arange(m, dtype=np.int64) * 2, copies * 2 + 1], kind="stable")
            order = by_time[stable_order_of_few(key[by_time])]
        else:
            order = stable_order_of_few(key)
        key = key[order]
        first_of_key = new_group(key)
        is_copy = order >= m
        made = np.zeros(len(order), dtype=bool)
        made[~is_copy] = (((kind == OPEN) | (kind == CREAT)) & ok)[order[~is_copy]]
        starts = first_of_key | made | is_copy
        segment = np.cumsum(starts) - 1
        description = np.full(int(segment[-1]) + 1 if len(segment) else 0, -1, dtype=np.int64)
        firsts = np.flatnonzero(first_of_key & ~made & ~is_copy)
        carried = np.array([self._description.get(k, -1) for k in key[firsts].tolist()], dtype=np.int64)
        description[segment[firsts]] = carried
        fresh = np.flatnonzero(starts & ~is_copy)
        fresh = fresh[description[segment[fresh]] < 0]
        fresh = fresh[np.argsort(order[fresh], kind="stable")]
        description[segment[fresh]] = self.span_count + np.arange(len(fresh))
        self.span_count += len(fresh)
        segment_of = np.empty(m, dtype=np.int64)
        segment_of[order[~is_copy]] = segment[~is_copy]
        # a copy's description is the one it copies, resolved in time order (copies of copies)
        at_copy = np.flatnonzero(is_copy)
        at_copy = at_copy[np.argsort(order[at_copy], kind="stable")]
        for source_row, at in zip(copies[order[at_copy] - m].tolist(), at_copy.tolist()):
            description[segment[at]] = description[segment_of[source_row]]
        ends = np.r_[key[1:] != key[:-1], True] if len(key) else np.empty(0, bool)
        self._description.update(zip(key[ends].tolist(), description[segment[ends]].tolist()))
        return description[segment_of]

    def _streams(self, at: int, span: np.ndarray, tid: np.ndarray, start: np.ndarray) -> np.ndarray:
        """Stream numbers, in order of first appearance (phases._streams's numbering); each new
        stream's first row and its start time."""
        if not len(span):
            return np.empty(0, np.int64)
        pair = (span << 32) | tid
        unique, first, inverse = distinct.unique(pair, return_index=True, return_inverse=True)
        ids = np.array([self._stream_of.get(p, -1) for p in unique.tolist()], dtype=np.int64)
        new = np.flatnonzero(ids < 0)
        new = new[np.argsort(first[new], kind="stable")]
        ids[new] = self.streams.add(len(new))
        self._stream_of.update(zip(unique[new].tolist(), ids[new].tolist()))
        self.streams["span"][ids[new]] = span[first[new]]
        self.streams["first_row"][ids[new]] = at + first[new]
        self.streams["first_ns"][ids[new]] = start[first[new]].astype(np.int64)
        return ids[inverse.ravel()]

    def _data_calls(self, at: int, c, kind, stream, bits) -> None:
        """Per data call: the run cut, the warm-up and fill candidates, the streams' counts.
        Each stream's calls here follow its last two data calls from earlier chunks (virtual
        rows), so that every rule looks back at most two calls within the stream."""
        rows = np.flatnonzero((kind == READ) | (kind == WRITE))
        bits[rows] |= DATA
        bits[rows[kind[rows] == READ]] |= IS_READ
        if not len(rows):
            return
        S = self.streams
        present, real_code = distinct.unique(stream[rows], return_inverse=True)
        has = S["has"][present]
        two_code, one_code = np.flatnonzero(has >= 2), np.flatnonzero(has >= 1)
        two, one = present[two_code], present[one_code]
        # by stream; within one, its older virtual row, its newer, then its calls in row order:
        # the order they are put together in, so a stable sort by the stream's number among
        # `present` (a radix sort when a chunk has < 2^16 streams) keeps it
        code = np.r_[two_code, one_code, real_code]
        order = stable_order(code)
        code, st = code[order], present[code[order]]
        virtual = order < len(two) + len(one)

        def column(name, real):
            return np.r_[S[f"l2_{name}"][two], S[f"l1_{name}"][one], real][order]

        k = column("kind", kind[rows].astype(np.int64))
        off = column("off", c["offset"][rows])
        req = column("req", c["requested"][rows])
        done = column("done", np.maximum(c["ret"][rows], 0))
        pos = column("pos", at + rows)
        e = len(st)
        idx = np.arange(e)
        same = np.r_[False, st[1:] == st[:-1]]
        run_start = ~virtual & (~same | (k != np.r_[-1, k[:-1]]))
        reset = virtual | run_start
        last_reset = np.maximum.accumulate(np.where(reset, idx, -1))
        rip = column("rip", np.zeros(len(rows), np.int64))
        rip = np.where(virtual, rip, 0)[last_reset] + (idx - last_reset)
        real = ~virtual
        first = real & ~same
        local = pos - at
        bits[local[run_start]] |= RUN
        bits[local[first]] |= FIRST
        S["first_data"][st[first]] = pos[first]
        # who and what, for joining successive open..close stretches (stream_assign, analysis/phasing/operations.py)
        for name in ("tgid", "tid", "file"):
            S[name][st[first]] = c[name][local[first]]
        real_rows = np.flatnonzero(real)
        # integer sums per stream: the real rows are grouped by stream, so np.add.reduceat (exact)
        groups = np.flatnonzero(new_group(st[real_rows]))
        S["bytes"][st[real_rows[groups]]] += np.add.reduceat(done[real_rows], groups)

        def count(stream_codes):
            return np.bincount(stream_codes, minlength=len(present))

        S["positioned"][present] += count(real_code[c["positioned"][rows]])

        warm = []
        # a warm-up: the first of three calls where the second goes back to its offset, the third on
        third = np.flatnonzero(real & (rip == 2))
        a, b = third - 2, third - 1
        warm.append(pos[a[(off[b] == off[a]) & (req[b] == req[a]) & (off[third] == off[b] + req[b])]])
        # or a read run of exactly two calls of one size at one offset (its end is known now)
        ended = np.flatnonzero(run_start & same)
        ended = ended[rip[ended - 1] == 1]
        a, b = ended - 2, ended - 1
        warm.append(pos[a[(k[a] == READ) & (off[b] == off[a]) & (req[b] == req[a])]])
        self._mark(at, bits, np.concatenate(warm), WARM)
        # a buffer fill: a read whose next call in the stream writes inside what it read
        later = np.flatnonzero(real & same)
        a = later - 1
        fill = (k[a] == READ) & (k[later] == WRITE) & (off[later] >= off[a]) & (off[later] < off[a] + done[a])
        self._mark(at, bits, pos[a[fill]], FILL)
        S["fills"][present] += count(code[a[fill]])

        S["calls"][present] += count(code[real])
        S["runs"][present] += count(code[run_start])
        S["reads"][present] += count(code[real & (k == READ)])
        starts = np.flatnonzero(run_start)
        starts = starts[np.argsort(pos[starts], kind="stable")]
        self.runs.append(pos[starts], c["start"][local[starts]], st[starts])
        # what the next chunk looks back at: each stream's last two data calls
        ends = np.flatnonzero(np.r_[st[1:] != st[:-1], True])
        seconds = ends[same[ends]] - 1
        for name, values in (("kind", k), ("off", off), ("req", req), ("done", done), ("pos", pos), ("rip", rip)):
            S[f"l2_{name}"][st[seconds]] = values[seconds]
            S[f"l1_{name}"][st[ends]] = values[ends]
        S["has"][present] = np.minimum(2, has + count(real_code))

    def _mark(self, at: int, bits: np.ndarray, positions: np.ndarray, bit: int) -> None:
        here = positions >= at
        bits[positions[here] - at] |= bit
        self.bits_file.set_bits(np.sort(positions[~here]), bit)

    def _last_pairs(self) -> None:
        """The two-call read rule for each stream's last run, which the trace's end closes."""
        S = self.streams
        s = np.flatnonzero((S.get("has") >= 2) & (S.get("l1_rip") == 1) & (S.get("l2_kind") == READ)
                           & (S.get("l1_off") == S.get("l2_off")) & (S.get("l1_req") == S.get("l2_req")))
        self.bits_file.set_bits(np.sort(S.get("l2_pos")[s]), WARM)


class _Runs:
    """Where each direction run starts: (row, start_ns, stream), appended in time order."""

    def __init__(self, folder: str):
        self.folder = folder
        self._columns = None

    def append(self, pos, start, stream) -> None:
        if self._columns is None:
            self._columns = [Column(os.path.join(self.folder, f"runs.{name}"), dtype) for name, dtype in
                             (("pos", np.int64), ("start", start.dtype), ("stream", np.int64))]
        for column, values in zip(self._columns, (pos, start, stream)):
            column.append(values)

    def blocks(self):
        if self._columns is None:
            return
        length = self._columns[0].length
        for at in range(0, length, WINDOW):
            yield tuple(column.read(at, min(WINDOW, length - at)) for column in self._columns)


def _fd_of_last(c, rows, makers, fd, base, last: dict) -> np.ndarray:
    """phases._fd_of_last's rule on one chunk: the makers of earlier chunks are the last one per file
    and process, placed before any start so that pd.merge_asof takes them as it takes them
    over the whole trace (the last maker at or before the row's start; an equal start counts)."""
    keys = list(zip(*(c[f"{k}_raw"][rows].tolist() for k in FILE_KEYS)))
    earlier = [(key, last[key]) for key in dict.fromkeys(keys) if key in last]
    left = pd.DataFrame({k: c[f"{k}_raw"][rows] for k in FILE_KEYS}).assign(
        start_ns=c["start"][rows].astype(np.int64), row=rows)
    here = pd.DataFrame({k: c[f"{k}_raw"][makers] for k in FILE_KEYS}).assign(
        start_ns=c["start"][makers].astype(np.int64), maker_fd=fd[makers])
    before = pd.DataFrame({k: np.array([key[i] for key, _ in earlier], dtype=c[f"{k}_raw"].dtype)
                           for i, k in enumerate(FILE_KEYS)}).assign(
        start_ns=np.full(len(earlier), np.iinfo(np.int64).min), maker_fd=np.array([v for _, v in earlier], np.int64))
    found = pd.merge_asof(left, pd.concat([before, here], ignore_index=True), on="start_ns", by=FILE_KEYS,
                          direction="backward")
    made = found["maker_fd"].to_numpy(np.float64)[np.argsort(found["row"].to_numpy(np.int64))]
    return np.where(np.isnan(made), base - fd[rows], np.nan_to_num(made)).astype(np.int64)


def _chunks(source, outside):
    """(first row, columns) per chunk: the source's blocks, except that a call resolved by the
    last open of its file at or before its start (a registered file, a mapping) waits for the
    rest of the calls of its start time, which may hold that open."""
    carry, at, lookups = None, 0, _Lookups()
    for block in source.blocks():
        columns = _extract(block, outside, lookups)
        if carry is not None:
            columns = {name: np.concatenate([carry[name], values]) for name, values in columns.items()}
        start = columns["start"]
        if not len(start):
            carry = None
            continue
        tail = len(start) - int(np.argmax(start[::-1] != start[-1])) if (start != start[-1]).any() else 0
        waiting = np.flatnonzero((columns["fixed"] | columns["on_map"])[tail:])
        cut = tail + int(waiting[0]) if len(waiting) else len(start)
        if cut:
            yield at, {name: values[:cut] for name, values in columns.items()}
            at += cut
        carry = {name: values[cut:] for name, values in columns.items()} if cut < len(start) else None
    if carry is not None:
        yield at, carry
