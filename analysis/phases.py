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


def _codes(values: np.ndarray) -> np.ndarray:
    return pd.factorize(values)[0].astype(np.int64)


def _path_codes(events: pd.DataFrame) -> np.ndarray:
    path = events["path"]
    if isinstance(path.dtype, pd.CategoricalDtype):
        return path.cat.codes.to_numpy(np.int64)
    return _codes(path.astype(str).to_numpy())


def _fill_from_data(start, key, data_rows, data_phase, other_rows) -> np.ndarray:
    """For each row of other_rows: the phase of the last data call before it with the same key,
    else of the first one after it; NaN when its key has no data call."""
    right = pd.DataFrame({"t": start[data_rows], "key": key[data_rows], "phase": data_phase.astype(float)})
    right = right.sort_values("t", kind="stable")
    left = pd.DataFrame({"t": start[other_rows], "key": key[other_rows]})
    back = pd.merge_asof(left, right, on="t", by="key", direction="backward")["phase"].to_numpy()
    ahead = pd.merge_asof(left, right, on="t", by="key", direction="forward")["phase"].to_numpy()
    return np.where(np.isnan(back), ahead, back)


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

    # spans: per (process, file), a new span at an open made while no fd of it was open
    tgid_code, file_code, path_code = _codes(events["tgid"].to_numpy()), _codes(file_key), _path_codes(events) + 1
    file_group = (tgid_code * (file_code.max(initial=0) + 1) + file_code) * (path_code.max(initial=0) + 1) + path_code
    by_file = np.argsort(file_group, kind="stable")
    first_of_file = _new_group(file_group[by_file])
    f_kind, f_ok = kind[by_file], ok[by_file]
    delta = np.where(((f_kind == OPEN) | (f_kind == CREAT)) & f_ok, 1, np.where((f_kind == CLOSE) & f_ok, -1, 0))
    running = np.cumsum(delta) - delta
    group_starts = np.flatnonzero(first_of_file)
    open_before = running - np.repeat(running[group_starts], np.diff(np.r_[group_starts, n]))
    span = np.empty(n, dtype=np.int64)
    span[by_file] = np.cumsum(first_of_file | ((delta == 1) & (open_before <= 0))) - 1

    # data calls per (span, thread), in time order: runs of one direction
    stream = (span << 32) | tid
    idx = np.flatnonzero(_is_data(kind))
    order = idx[np.argsort(stream[idx], kind="stable")]
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
    operation = np.full(n, "", dtype=object)
    warmup = np.zeros(n, dtype=bool)
    if len(order):
        # number phases by the time of their first call
        first_time = np.full(local_phase[-1] + 1, np.iinfo(np.int64).max)
        np.minimum.at(first_time, local_phase, start[order])
        rank = np.empty_like(first_time)
        rank[np.argsort(first_time, kind="stable")] = np.arange(1, len(first_time) + 1)
        phase[order] = rank[local_phase]
        operation[order] = np.where(mixed, "mixed", np.where(d_kind == READ, "read", "write"))

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
        other = np.flatnonzero(phase < 0)
        if len(other):
            filled = _fill_from_data(start, stream, order, phase[order], other)
            missing = np.isnan(filled)
            if missing.any():
                filled[missing] = _fill_from_data(start, span, order, phase[order], other[missing])
            phase[other] = np.where(np.isnan(filled), -1, filled).astype(np.int64)
    return pd.DataFrame({"span": span, "phase": phase, "operation": operation, "warmup": warmup},
                        index=events.index)


def _pattern(phase, tid, offset, size) -> pd.DataFrame:
    """Per phase: access pattern and stride, from the steps between consecutive data calls of a thread.

    Input rows are the phase's data calls in time order; `size` is what each call moved.
    """
    order = np.lexsort((tid, phase))  # stable: time order kept within (phase, thread)
    phase, tid, offset, size = phase[order], tid[order], offset[order], size[order]
    same_stream = ~_new_group(phase, tid)
    step = np.r_[0, offset[1:] - offset[:-1]][:len(offset)]
    prev_size = np.r_[0, size[:-1]][:len(size)]
    steps = pd.DataFrame({"phase": phase, "step": step, "sequential": step == prev_size, "same": step == 0,
                          "backward": step == -size})[same_stream]
    counts = steps.groupby("phase").agg(steps=("step", "size"), sequential=("sequential", "sum"),
                                        same=("same", "sum"), backward=("backward", "sum"))
    # a phase of one call has no step at all
    counts = counts.reindex(np.unique(phase), fill_value=0)
    # the two most common steps: a stride that runs past the end of the file wraps around
    # (IOzone's stride read does), which alternates a forward step with a backward jump
    top = steps.groupby(["phase", "step"]).size().reset_index(name="n")
    top = top.sort_values(["phase", "n"], ascending=[True, False], kind="stable")
    top["rank"] = top.groupby("phase").cumcount()
    first = top[top["rank"] == 0].set_index("phase")[["step", "n"]]
    second = top[top["rank"] == 1].set_index("phase")[["step", "n"]].rename(columns={"step": "step2", "n": "n2"})
    counts = counts.join(first).join(second)
    need = counts["steps"] * PATTERN_SHARE
    step1, step2 = counts["step"].fillna(0), counts["step2"].fillna(0)
    wrapped = ((counts["n"].fillna(0) + counts["n2"].fillna(0)) >= need) & (step1 * step2 < 0)
    strided = ((counts["n"].fillna(0) >= need) & (step1 != 0)) | wrapped
    pattern = np.select(
        [counts["steps"] == 0, counts["sequential"] >= need, counts["same"] >= need,
         counts["backward"] >= need, strided],
        ["single call", "sequential", "same record", "backward", "strided"], "random")
    stride = np.where(pattern == "strided", np.where(wrapped, np.maximum(step1, step2), step1), 0)
    return pd.DataFrame({"pattern": pattern, "stride": stride.astype(np.int64)}, index=counts.index)


def table(events: pd.DataFrame, assigned: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per phase: who, what, how much, how fast, and how the time was spent."""
    assigned = assign(events) if assigned is None else assigned
    all_kinds = call_kinds(events["syscall"])
    rows_in = np.flatnonzero(assigned["phase"].to_numpy() >= 0)
    if not len(rows_in):
        return pd.DataFrame(columns=COLUMNS)

    def col(name, dtype=np.int64):
        return events[name].to_numpy(dtype)[rows_in]

    phase = assigned["phase"].to_numpy()[rows_in]
    warm = assigned["warmup"].to_numpy()[rows_in]
    kind = all_kinds[rows_in]
    data = _is_data(kind) & ~warm
    is_read = data & (kind == READ)
    start, end, latency, ret = col("start_ns"), col("end_ns"), col("latency_ns"), col("ret")
    sync, close = kind == SYNC, kind == CLOSE
    openclose = (kind == OPEN) | (kind == CREAT) | close
    moved = np.where(data & (ret > 0), ret, 0)
    work = pd.DataFrame({
        "phase": phase, "ops": data, "read_ops": is_read, "bytes": moved, "read_bytes": np.where(is_read, moved, 0),
        "errors": ret < 0, "short": data & (ret >= 0) & (ret < col("requested")),
        "fsyncs": sync, "fsync_ns": np.where(sync, latency, 0), "data_ns": np.where(data, latency, 0),
        "openclose_ns": np.where(openclose, latency, 0), "all_calls_ns": latency,
        "first_ns": start, "last_ns": end,
        "data_first_ns": np.where(data, start, np.iinfo(np.int64).max), "data_last_ns": np.where(data, end, 0),
        "sync_end_ns": np.where(sync, end, 0), "close_end_ns": np.where(close, end, 0), "warmup_ops": warm,
    })
    g = work.groupby("phase")
    rows = g[["ops", "read_ops", "bytes", "read_bytes", "errors", "short", "fsyncs", "fsync_ns", "data_ns",
              "openclose_ns", "all_calls_ns", "warmup_ops"]].sum()
    rows = rows.join(g[["first_ns", "data_first_ns"]].min()).join(
        g[["last_ns", "data_last_ns", "sync_end_ns", "close_end_ns"]].max())
    rows["write_bytes"] = rows["bytes"] - rows["read_bytes"]

    # who: the first call of the phase (rows are in time order)
    firsts = pd.DataFrame({"phase": phase, "tgid": col("tgid"), "tid": col("tid"),
                           "path": _path_codes(events)[rows_in]}).groupby("phase").first()
    rows["tgid"], rows["tid"] = firsts["tgid"], firsts["tid"]
    categories = events["path"].cat.categories if isinstance(events["path"].dtype, pd.CategoricalDtype) else \
        pd.Index(pd.unique(events["path"].astype(str)))
    rows["path"] = [str(categories[c]) if c >= 0 else "" for c in firsts["path"]]
    rows["threads"] = pd.DataFrame({"phase": phase, "tid": col("tid")}).groupby("phase")["tid"].nunique()

    d = np.flatnonzero(data)
    d_phase, d_ret = phase[d], ret[d]
    rows["operation"] = pd.Series(assigned["operation"].to_numpy()[rows_in][d], index=d_phase).groupby(level=0).first()
    sizes = pd.DataFrame({"phase": d_phase, "size": col("requested")[d]}).value_counts().reset_index(name="n")
    rows["record_size"] = sizes.sort_values(["phase", "n"], ascending=[True, False], kind="stable") \
        .drop_duplicates("phase").set_index("phase")["size"]
    # a failed call moved nothing: the next call starts where the one before it ended
    rows = rows.join(_pattern(d_phase, col("tid")[d], col("offset")[d], np.clip(d_ret, 0, None)))

    lat = pd.Series(latency[d] / 1e3, index=d_phase).groupby(level=0)
    rows["lat_min_us"], rows["lat_mean_us"], rows["lat_max_us"] = lat.min(), lat.mean(), lat.max()
    quantiles = lat.quantile([0.5, 0.9, 0.99, 0.999]).unstack()
    for q, name in zip(quantiles.columns, ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p99.9_us")):
        rows[name] = quantiles[q]

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
    extents = pd.DataFrame({"phase": d_phase, "lo": col("offset")[d], "hi": col("offset")[d] + np.clip(d_ret, 0, None)})
    extents = extents.groupby("phase").agg(lo=("lo", "min"), hi=("hi", "max"))
    rows = rows.reset_index().rename(columns={"index": "phase"})
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
    for path, t in zip(events["path"].to_numpy()[rows], events["start_ns"].to_numpy(np.int64)[rows]):
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
