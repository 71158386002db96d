"""Rebuild the phases of a benchmark from its events alone.

A span is an open-to-close stretch of one file in one process (a file opened before tracing
starts a span at its first call). Within a span, the data calls of each thread are cut where
the direction changes (read ↔ write); a thread that alternates all the time (fio randrw) is
one "mixed" phase instead of hundreds of tiny ones. Every other call of the span (lseek,
fsync, open, close, ...) belongs to the phase of the data call before it in the same thread,
or to the next one when it comes before any data call.

Everything is vectorised over the event table: syscall names are looked up once per
category, never per row, and the only Python loops run over phases.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

READS = ("read", "pread64", "readv", "preadv", "preadv2")
WRITES = ("write", "pwrite64", "writev", "pwritev", "pwritev2")
OPENS = ("open", "openat", "openat2", "creat")
SYNCS = ("fsync", "fdatasync")

# what a call is, as a small integer per event
OTHER, READ, WRITE, OPEN, CLOSE, SYNC, CREAT, FTRUNCATE = range(8)
_KIND_OF = {**{n: READ for n in READS}, **{n: WRITE for n in WRITES}, **{n: OPEN for n in OPENS},
            "creat": CREAT, "close": CLOSE, **{n: SYNC for n in SYNCS}, "ftruncate": FTRUNCATE}

# an alternating thread is "mixed" when its direction runs average fewer calls than this
MIXED_RUN_LENGTH = 8
# a pattern names a phase when this share of its steps follows it
PATTERN_SHARE = 0.75
# IOzone's own rule of thumb, and the seed study's 1 ms tests: below these a phase cannot be timed
SHORT_SECONDS = 0.010
SHORT_OPS = 100

O_APPEND, O_SYNC, O_DSYNC, O_DIRECT, O_TRUNC = 0o2000, 0o4010000, 0o10000, 0o40000, 0o1000
OPERATIONS = ["", "read", "write", "mixed"]
# stride detection looks at this many steps of a phase at most: a stride repeats
PATTERN_SAMPLE = 2000


def call_kinds(syscall: pd.Series) -> np.ndarray:
    """OTHER/READ/WRITE/OPEN/CREAT/CLOSE/SYNC/FTRUNCATE per event, looked up per category."""
    cat = syscall if isinstance(syscall.dtype, pd.CategoricalDtype) else syscall.astype("category")
    table = np.array([_KIND_OF.get(str(c), OTHER) for c in cat.cat.categories] + [OTHER], dtype=np.int8)
    return table[cat.cat.codes.to_numpy()]


def _is_data(kind: np.ndarray) -> np.ndarray:
    return (kind == READ) | (kind == WRITE)


def _new_group(*keys: np.ndarray) -> np.ndarray:
    """True where any key differs from the row before (rows already ordered by the keys)."""
    change = np.zeros(len(keys[0]), dtype=bool)
    if len(change):
        change[0] = True
        for k in keys:
            change[1:] |= k[1:] != k[:-1]
    return change


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """Stable argsort; numpy sorts 16-bit keys by radix in linear time, so small key ranges go there."""
    if len(keys) and keys.min() >= 0 and keys.max() < 2 ** 16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    return np.argsort(keys, kind="stable")


def _codes(values: np.ndarray) -> np.ndarray:
    return pd.factorize(values)[0].astype(np.int64)


def _path_codes(events: pd.DataFrame) -> np.ndarray:
    path = events["path"]
    if isinstance(path.dtype, pd.CategoricalDtype):
        return path.cat.codes.to_numpy(np.int64)
    return _codes(path.astype(str).to_numpy())


def _fill_within(keys: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """Rows without a phase (-1) take the last phase before them with the same key, else the
    next one after; rows whose key has none stay -1. Rows must be in time order."""
    order = _stable_order(keys)
    ph = phase[order]
    n = len(ph)
    first = _new_group(keys[order])
    positions = np.arange(n)
    group_start = np.maximum.accumulate(np.where(first, positions, 0))
    last_valid = np.maximum.accumulate(np.where(ph >= 0, positions, -1))
    filled = np.where(last_valid >= group_start, ph[np.maximum(last_valid, 0)], -1)
    # and from the other side, for rows before their key's first phase
    last = np.r_[first[1:], True]
    group_end = np.minimum.accumulate(np.where(last, positions, n)[::-1])[::-1]
    next_valid = np.minimum.accumulate(np.where(ph >= 0, positions, n)[::-1])[::-1]
    ahead = np.where(next_valid <= group_end, ph[np.minimum(next_valid, n - 1)], -1)
    filled = np.where(filled >= 0, filled, ahead)
    out = np.empty(n, dtype=np.int64)
    out[order] = filled
    return out


def assign(events: pd.DataFrame) -> pd.DataFrame:
    """Per event: span, phase (-1 = none), operation and warm-up; phases numbered from 1 in time order.

    `events` must be in time order (iowitness.load gives them so).
    """
    n = len(events)
    kind = call_kinds(events["syscall"])
    ok = events["ret"].to_numpy() >= 0
    tid = events["tid"].to_numpy(np.int64)
    start = events["start_ns"].to_numpy(np.int64)
    file_key = (events["dev"].to_numpy(np.uint64) << np.uint64(44)) ^ events["ino"].to_numpy(np.uint64)

    # spans: per (process, file), a new span at an open made while no fd of it was open.
    # (process, file, path) is mixed into one 64-bit key and factorized once; the odd
    # multipliers make two different triples share a key with odds of about 2^-64
    path_code = _path_codes(events).astype(np.uint64) + np.uint64(1)
    with np.errstate(over="ignore"):
        triple = (file_key * np.uint64(0x9E3779B97F4A7C15)
                  ^ events["tgid"].to_numpy(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
                  ^ path_code * np.uint64(0x165667B19E3779F9))
    file_group = _codes(triple)
    by_file = _stable_order(file_group)
    first_of_file = _new_group(file_group[by_file])
    f_kind, f_ok = kind[by_file], ok[by_file]
    delta = np.where(((f_kind == OPEN) | (f_kind == CREAT)) & f_ok, 1, np.where((f_kind == CLOSE) & f_ok, -1, 0))
    running = np.cumsum(delta) - delta
    group_starts = np.flatnonzero(first_of_file)
    open_before = running - np.repeat(running[group_starts], np.diff(np.r_[group_starts, n]))
    span = np.empty(n, dtype=np.int64)
    span[by_file] = np.cumsum(first_of_file | ((delta == 1) & (open_before <= 0))) - 1

    # data calls per (span, thread), in time order: runs of one direction
    stream = _codes((span << 32) | tid)
    idx = np.flatnonzero(_is_data(kind))
    order = idx[_stable_order(stream[idx])] if len(idx) else idx
    d_stream, d_kind = stream[order], kind[order]
    first_of_stream = _new_group(d_stream)
    run_start = first_of_stream | _new_group(d_kind)
    stream_no = np.cumsum(first_of_stream) - 1
    runs = np.bincount(stream_no, weights=run_start) if len(order) else np.empty(0)
    calls = np.bincount(stream_no) if len(order) else np.empty(0)
    mixed_stream = (runs > 2) & (calls < MIXED_RUN_LENGTH * runs)
    mixed = mixed_stream[stream_no] if len(order) else np.empty(0, bool)
    cut = np.where(mixed, first_of_stream, run_start)  # a mixed stream is one phase
    local_phase = np.cumsum(cut) - 1

    phase = np.full(n, -1, dtype=np.int64)
    operation = np.zeros(n, dtype=np.int8)
    warmup = np.zeros(n, dtype=bool)
    if len(order):
        # number phases by the time of their first call (a phase's calls are in time order)
        first_time = start[order][cut]
        rank = np.empty_like(first_time)
        rank[np.argsort(first_time, kind="stable")] = np.arange(1, len(first_time) + 1)
        phase[order] = rank[local_phase]
        operation[order] = np.where(mixed, 3, np.where(d_kind == READ, 1, 2))

        # a warm-up call: the first call of a phase whose next call goes back to the same offset
        # (IOzone's read test primes the cache with one record, then seeks back to 0). It stays
        # in its phase but out of the phase's bytes, counts and timing.
        d_offset = events["offset"].to_numpy(np.int64)[order]
        d_size = events["requested"].to_numpy(np.int64)[order]
        head = np.flatnonzero(cut)
        head = head[head + 2 < len(order)]
        head = head[~cut[head + 1] & ~cut[head + 2] & ~mixed[head]]
        primes = head[(d_offset[head + 1] == d_offset[head]) & (d_size[head + 1] == d_size[head])
                      & (d_offset[head + 2] == d_offset[head + 1] + d_size[head + 1])]
        warmup[order[primes]] = True

        # other calls: the phase before them in their thread and span, else the next one;
        # then the same within the span, for calls of a thread that did no I/O there
        if (phase < 0).any():
            phase = _fill_within(stream, phase)
        if (phase < 0).any():
            phase = _fill_within(_codes(span), phase)
    return pd.DataFrame({"span": span, "phase": phase,
                         "operation": pd.Categorical.from_codes(operation, OPERATIONS), "warmup": warmup},
                        index=events.index)


def _pattern(phase, tid, offset, size, by: _ByPhase) -> pd.DataFrame:
    """Per phase: access pattern and stride, from the steps between consecutive data calls of a
    thread. Input rows are the phases' data calls in time order; `size` is what each call moved."""
    order = by.perm
    if (by.min(tid) != by.max(tid)).any():   # several threads: steps within each thread
        order = np.lexsort((tid, phase))
    phase, tid, offset, size = phase[order], tid[order], offset[order], size[order]
    same_stream = ~_new_group(phase, tid)
    step = np.r_[0, offset[1:] - offset[:-1]][:len(offset)]
    prev_size = np.r_[0, size[:-1]][:len(size)]
    # rows are grouped by phase now: per-phase counts are sums over contiguous runs
    starts = np.flatnonzero(_new_group(phase))

    def per_phase(flags):
        return np.add.reduceat(flags.astype(np.int64), starts) if len(starts) else np.empty(0, np.int64)

    counts = pd.DataFrame({"steps": per_phase(same_stream), "sequential": per_phase(same_stream & (step == prev_size)),
                           "same": per_phase(same_stream & (step == 0)),
                           "backward": per_phase(same_stream & (step == -size))},
                          index=pd.Index(phase[starts], name="phase"))
    # the two most common steps, over the first steps of each phase: a stride that runs past
    # the end of the file wraps around (IOzone's stride read does), alternating a forward
    # step with a backward jump
    rank = np.arange(len(phase)) - np.repeat(starts, np.diff(np.r_[starts, len(phase)]))
    sample = same_stream & (rank <= PATTERN_SAMPLE)
    top = pd.DataFrame({"phase": phase[sample], "step": step[sample]}).value_counts().reset_index(name="n")
    top = top.sort_values(["phase", "n"], ascending=[True, False], kind="stable")
    top["rank"] = top.groupby("phase").cumcount()
    sampled = pd.Series(per_phase(sample), index=phase[starts])
    first = top[top["rank"] == 0].set_index("phase")[["step", "n"]]
    second = top[top["rank"] == 1].set_index("phase")[["step", "n"]].rename(columns={"step": "step2", "n": "n2"})
    counts = counts.join(first).join(second)
    need = counts["steps"] * PATTERN_SHARE
    need_sampled = sampled.reindex(counts.index).fillna(0) * PATTERN_SHARE
    step1, step2 = counts["step"].fillna(0), counts["step2"].fillna(0)
    n1, n2 = counts["n"].fillna(0), counts["n2"].fillna(0)
    wrapped = ((n1 + n2) >= need_sampled) & (step1 * step2 < 0) & (n1 > 0)
    strided = ((n1 >= need_sampled) & (n1 > 0) & (step1 != 0)) | wrapped
    pattern = np.select(
        [counts["steps"] == 0, counts["sequential"] >= need, counts["same"] >= need,
         counts["backward"] >= need, strided],
        ["single call", "sequential", "same record", "backward", "strided"], "random")
    stride = np.where(pattern == "strided", np.where(wrapped, np.maximum(step1, step2), step1), 0)
    return pd.DataFrame({"pattern": pattern, "stride": stride.astype(np.int64)}, index=counts.index)


class _ByPhase:
    """Rows sorted by phase (time order kept within a phase), with per-phase reductions."""

    def __init__(self, phase: np.ndarray):
        ordered = len(phase) < 2 or bool(np.all(phase[1:] >= phase[:-1]))
        self.perm = np.arange(len(phase)) if ordered else _stable_order(phase)
        self._gather = not ordered
        self.bounds = np.flatnonzero(_new_group(phase[self.perm]))
        self.phases = phase[self.perm][self.bounds]

    def _sorted(self, x):
        return np.asarray(x)[self.perm] if self._gather else np.asarray(x)

    def sum(self, x):
        return np.add.reduceat(self._sorted(x), self.bounds) if len(self.bounds) else np.empty(0)

    def min(self, x):
        return np.minimum.reduceat(self._sorted(x), self.bounds)

    def max(self, x):
        return np.maximum.reduceat(self._sorted(x), self.bounds)

    def first(self, x):
        return np.asarray(x)[self.perm[self.bounds]]

    def slices(self):
        ends = np.r_[self.bounds[1:], len(self.perm)]
        return zip(self.phases, self.bounds, ends)


def table(events: pd.DataFrame, assigned: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per phase: who, what, how much, how fast, and how the time was spent."""
    assigned = assign(events) if assigned is None else assigned
    all_kinds = call_kinds(events["syscall"])
    rows_in = np.flatnonzero(assigned["phase"].to_numpy() >= 0)
    if not len(rows_in):
        return pd.DataFrame(columns=COLUMNS)
    # every per-event array below is taken in phase order (time order within a phase), once
    rows_in = rows_in[_stable_order(assigned["phase"].to_numpy()[rows_in])]

    def col(name, dtype=np.int64):
        return events[name].to_numpy()[rows_in].astype(dtype, copy=False)

    phase = assigned["phase"].to_numpy()[rows_in]
    warm = assigned["warmup"].to_numpy()[rows_in]
    kind = all_kinds[rows_in]
    data = _is_data(kind) & ~warm
    is_read = data & (kind == READ)
    start, end, latency, ret = col("start_ns"), col("end_ns"), col("latency_ns"), col("ret")
    sync, close = kind == SYNC, kind == CLOSE
    openclose = (kind == OPEN) | (kind == CREAT) | close
    moved = np.where(data & (ret > 0), ret, 0)
    by = _ByPhase(phase)
    big = np.iinfo(np.int64).max
    rows = pd.DataFrame({
        "ops": by.sum(data.astype(np.int64)), "read_ops": by.sum(is_read.astype(np.int64)),
        "bytes": by.sum(moved), "read_bytes": by.sum(np.where(is_read, moved, 0)),
        "errors": by.sum((ret < 0).astype(np.int64)),
        "short": by.sum((data & (ret >= 0) & (ret < col("requested"))).astype(np.int64)),
        "fsyncs": by.sum(sync.astype(np.int64)), "fsync_ns": by.sum(np.where(sync, latency, 0)),
        "data_ns": by.sum(np.where(data, latency, 0)), "openclose_ns": by.sum(np.where(openclose, latency, 0)),
        "all_calls_ns": by.sum(latency), "warmup_ops": by.sum(warm.astype(np.int64)),
        "first_ns": by.min(start), "data_first_ns": by.min(np.where(data, start, big)),
        "last_ns": by.max(end), "data_last_ns": by.max(np.where(data, end, 0)),
        "sync_end_ns": by.max(np.where(sync, end, 0)), "close_end_ns": by.max(np.where(close, end, 0)),
    }, index=pd.Index(by.phases, name="phase"))
    rows["write_bytes"] = rows["bytes"] - rows["read_bytes"]

    # who: the first call of the phase
    tid = col("tid")
    rows["tgid"], rows["tid"] = by.first(col("tgid")), by.first(tid)
    categories = events["path"].cat.categories if isinstance(events["path"].dtype, pd.CategoricalDtype) else \
        pd.Index(pd.unique(events["path"].astype(str)))
    rows["path"] = [str(categories[c]) if c >= 0 else "" for c in by.first(_path_codes(events)[rows_in])]
    one_thread = by.min(tid) == by.max(tid)
    rows["threads"] = 1
    if not one_thread.all():
        for i in np.flatnonzero(~one_thread):
            lo, hi = by.bounds[i], (by.bounds[i + 1] if i + 1 < len(by.bounds) else len(by.perm))
            rows.iloc[i, rows.columns.get_loc("threads")] = len(np.unique(tid[by.perm[lo:hi]]))

    # the data calls, by phase
    d = np.flatnonzero(data)
    dby = _ByPhase(phase[d])
    op_codes = assigned["operation"].cat.codes.to_numpy()[rows_in][d]
    rows["operation"] = pd.Series(np.asarray(OPERATIONS, dtype=object)[dby.first(op_codes)],
                                  index=dby.phases).reindex(rows.index)
    size = col("requested")[d]
    record = pd.Series(dby.first(size), index=dby.phases)
    for i in np.flatnonzero(dby.min(size) != dby.max(size)):   # several sizes: the most common one
        lo, hi = dby.bounds[i], (dby.bounds[i + 1] if i + 1 < len(dby.bounds) else len(d))
        values, counts = np.unique(size[dby.perm[lo:hi]], return_counts=True)
        record.iloc[i] = values[np.argmax(counts)]
    rows["record_size"] = record
    # a failed call moved nothing: the next call starts where the one before it ended
    done = np.clip(ret[d], 0, None)
    rows = rows.join(_pattern(phase[d], tid[d], col("offset")[d], done, dby))

    lat_us = latency[d] / 1e3
    rows["lat_min_us"] = pd.Series(dby.min(lat_us), index=dby.phases)
    rows["lat_max_us"] = pd.Series(dby.max(lat_us), index=dby.phases)
    rows["lat_mean_us"] = pd.Series(dby.sum(lat_us) / np.diff(np.r_[dby.bounds, len(d)]), index=dby.phases)
    names = ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p99.9_us")
    quantiles = {name: {} for name in names}
    sorted_lat = lat_us[dby.perm]
    for p, lo, hi in dby.slices():
        values = np.percentile(sorted_lat[lo:hi], [50, 90, 99, 99.9])
        for name, v in zip(names, values):
            quantiles[name][p] = v
    for name in names:
        rows[name] = pd.Series(quantiles[name])

    opened = np.flatnonzero(((kind == OPEN) | (kind == CREAT)) & (ret >= 0))
    flags = pd.Series(col("flags")[opened], index=phase[opened]).groupby(level=0).agg(np.bitwise_or.reduce)
    rows["open_flags"] = flags.reindex(rows.index).fillna(0).astype(np.int64)
    for label, bit in (("O_DIRECT", O_DIRECT), ("O_SYNC", O_SYNC), ("O_DSYNC", O_DSYNC), ("O_APPEND", O_APPEND)):
        rows[label] = (rows["open_flags"] & bit) == bit

    rows["duration_s"] = (rows["data_last_ns"] - rows["data_first_ns"]).clip(lower=0) / 1e9
    rows["wall_Bps"] = rows["bytes"] / rows["duration_s"].where(rows["duration_s"] > 0)
    rows["busy_Bps"] = rows["bytes"] / (rows["data_ns"] / 1e9).where(rows["data_ns"] > 0)
    rows["iops"] = rows["ops"] / rows["duration_s"].where(rows["duration_s"] > 0)
    window_ns = (rows["last_ns"] - rows["first_ns"]).clip(lower=0)
    # several threads in one phase overlap their calls: user time is what no call covered
    rows["user_ns"] = (window_ns - rows["all_calls_ns"] / rows["threads"]).clip(lower=0)
    rows["other_calls_ns"] = rows["all_calls_ns"] - rows["data_ns"] - rows["fsync_ns"] - rows["openclose_ns"]
    rows["read_fraction"] = rows["read_ops"] / rows["ops"].where(rows["ops"] > 0)
    rows["too_short"] = (rows["duration_s"] < SHORT_SECONDS) | (rows["ops"] < SHORT_OPS)
    rows["name"] = [_generic_name(op, pat) for op, pat in zip(rows["operation"], rows["pattern"])]
    offset = col("offset")[d]
    extents = pd.DataFrame({"lo": dby.min(offset), "hi": dby.max(offset + done)}, index=dby.phases)
    rows = rows.reset_index()
    rows[["reread", "rewrite"]] = _repeats(rows, extents, _truncations(events, all_kinds))
    return rows[COLUMNS]


# the phase table's columns, in the order people read them
COLUMNS = [
    "phase", "name", "operation", "pattern", "stride", "record_size", "path", "tgid", "tid", "threads",
    "bytes", "read_bytes", "write_bytes", "ops", "read_ops", "read_fraction", "warmup_ops",
    "duration_s", "wall_Bps", "busy_Bps", "iops",
    "lat_min_us", "lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p99.9_us", "lat_max_us",
    "data_ns", "fsyncs", "fsync_ns", "openclose_ns", "other_calls_ns", "user_ns",
    "errors", "short", "too_short", "reread", "rewrite",
    "open_flags", "O_DIRECT", "O_SYNC", "O_DSYNC", "O_APPEND",
    "first_ns", "last_ns", "data_first_ns", "data_last_ns", "sync_end_ns", "close_end_ns",
]


def _generic_name(operation: str, pattern: str) -> str:
    if operation == "mixed":
        return f"mixed read/write ({pattern})"
    if pattern == "single call":
        return f"single {operation}"
    if pattern == "same record":
        return "same-record rewrite" if operation == "write" else "same-record re-read"
    return f"{pattern} {operation}"


def _truncations(events: pd.DataFrame, kind: np.ndarray) -> dict[str, list[int]]:
    """When each file was emptied: creat, an open with O_TRUNC, ftruncate to 0. Looked for in
    every event, not only phases' (IOzone -a re-creates its file in a span with no I/O)."""
    ok = events["ret"].to_numpy() >= 0
    flags = events["flags"].to_numpy(np.int64)
    emptied = ok & ((kind == CREAT) | ((kind == OPEN) & ((flags & O_TRUNC) != 0))
                    | ((kind == FTRUNCATE) & (events["requested"].to_numpy(np.int64) == 0)))
    rows = np.flatnonzero(emptied)
    cuts: dict[str, list[int]] = {}
    for path, t in zip(events["path"].iloc[rows].astype(str), events["start_ns"].to_numpy(np.int64)[rows]):
        cuts.setdefault(str(path), []).append(int(t))
    return cuts


def _repeats(rows: pd.DataFrame, extents: pd.DataFrame, cuts: dict[str, list[int]]) -> pd.DataFrame:
    """Whether each phase covers a range of its file already read (re-read) or written (re-write)
    earlier in the run; emptying the file starts its history again."""
    marks = pd.DataFrame(False, index=rows.index, columns=["reread", "rewrite"])
    history: dict[str, dict[str, list]] = {}
    for i, row in rows.sort_values("data_first_ns", kind="stable").iterrows():
        if row["phase"] not in extents.index:
            continue
        lo, hi = extents.at[row["phase"], "lo"], extents.at[row["phase"], "hi"]
        seen = history.setdefault(row["path"], {"read": [], "write": []})
        last_cut = max((t for t in cuts.get(row["path"], []) if t <= row["data_first_ns"]), default=None)
        if last_cut is not None:
            for direction in seen:
                seen[direction] = [r for r in seen[direction] if r[2] > last_cut]
        for column, direction in (("reread", "read"), ("rewrite", "write")):
            if row["operation"] in (direction, "mixed"):
                marks.at[i, column] = any(a < hi and lo < b for a, b, _ in seen[direction])
        for direction in ("read", "write"):
            if row["operation"] in (direction, "mixed"):
                seen[direction].append((lo, hi, row["data_last_ns"]))
    return marks
