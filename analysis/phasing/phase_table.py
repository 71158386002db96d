"""The phase table: one row per phase of analysis/phasing/phases.py `assign`, from the events.

Who (the thread of a phase's data calls), what (operation, access pattern and stride, record
size), how much and how fast (bytes, calls, wall and busy rates, latency percentiles), and how
the time was spent (in data calls, fsync, open/close, other calls, other targets, user space),
with the async queue depth, faults, errors and short calls, re-read and re-write. `table`
reduces the events to per-phase sums (`_sums`) and builds the rows from them (`phase_rows`,
`finish`): the streamed path (analysis/phasing/stream_table.py) makes the same sums block by block and
calls the same two functions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import inflight
from iowitness.analysis.phasing.phases import (
    CREAT,
    FTRUNCATE,
    O_APPEND,
    O_DIRECT,
    O_DSYNC,
    O_SYNC,
    O_TRUNC,
    OPEN,
    OPERATIONS,
    PATTERN_SHARE,
    SHORT_OPS,
    SHORT_SECONDS,
)


def pattern_rule(counts: pd.DataFrame, sample_phase: np.ndarray, sample_step: np.ndarray) -> pd.DataFrame:
    """Pattern and stride per phase (the index of `counts`: how many steps each phase has, and
    how many of them are sequential, on the same record, backward) from its sampled steps:
    those among the first PATTERN_SAMPLE + 1 data calls of the phase (its threads one after
    the other, by tid), phase by phase in that order (analysis/phasing/stream_table.py gives the same)."""
    # the two most common steps, over the first steps of each phase: a stride that runs past
    # the end of the file wraps around (IOzone's stride read does), alternating a forward
    # step with a backward jump
    top = pd.DataFrame({"phase": sample_phase, "step": sample_step}).value_counts().reset_index(name="n")
    top = top.sort_values(["phase", "n"], ascending=[True, False], kind="stable")
    top["rank"] = top.groupby("phase").cumcount()
    sampled = pd.Series(np.bincount(np.searchsorted(counts.index.to_numpy(), sample_phase), minlength=len(counts)),
                        index=counts.index)
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


def phase_rows(s: dict) -> pd.DataFrame:
    """The table's rows, indexed by phase, from the per-phase sums: s[...] over every call of a
    phase are arrays along s["present"] (the phases), s[...] over its data calls (not warm-ups)
    are arrays along s["phases"] (the phases with data calls, ascending)."""
    present = s["present"]
    rows = pd.DataFrame({name: s[name] for name in (
        "errors", "fsyncs", "fsync_ns", "openclose_ns", "all_calls_ns", "warmup_ops", "fill_ops", "fill_bytes",
        "first_ns", "last_ns")}, index=pd.Index(present, name="phase"))

    def data(name):
        return pd.Series(s[name], index=s["phases"])

    for name in ("ops", "read_ops", "bytes", "read_bytes", "data_ns", "data_first_ns", "data_last_ns"):
        rows[name] = data(name)
    rows["write_bytes"] = rows["bytes"] - rows["read_bytes"]
    # who: the thread of the phase's data calls (its first one), not whoever opened the file
    has_data = data("tgid").reindex(rows.index).notna().to_numpy()
    for name in ("tgid", "tid"):
        rows[name] = np.where(has_data, data(name).reindex(rows.index).fillna(0).to_numpy(np.int64),
                              np.asarray(s["first_" + name], dtype=np.int64))
    rows["path"] = s["path"]
    several = s["threads"] > 1
    rows["threads"] = 1
    if several.any():
        rows.loc[several, "threads"] = s["threads"][several]
    rows["operation"] = pd.Series(np.asarray(OPERATIONS, dtype=object)[s["operation"]],
                                  index=s["phases"]).reindex(rows.index)
    rows["short"] = data("short")
    rows["positioned_ops"] = data("positioned_ops")
    rows["seeks"] = s["seeks"]
    rows["opens"] = s["opens"]
    rows["record_size"] = _record_sizes(s)
    rows = rows.join(s["pattern"])
    rows["lat_min_us"] = data("lat_min").replace(np.inf, np.nan)
    rows["lat_max_us"] = data("lat_max").replace(-np.inf, np.nan)
    timed = s["timed"]
    rows["lat_mean_us"] = pd.Series(s["lat_sum"] / np.where(timed > 0, timed, np.nan), index=s["phases"])
    names = ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p99.9_us")
    quantiles = {name: {} for name in names}
    for p, values in zip(s["phases"], s["percentiles"]):
        for name, v in zip(names, values):
            quantiles[name][p] = v
    for name in names:
        rows[name] = pd.Series(quantiles[name])
    rows["open_flags"] = s["open_flags"]
    for label, bit in (("O_DIRECT", O_DIRECT), ("O_SYNC", O_SYNC), ("O_DSYNC", O_DSYNC), ("O_APPEND", O_APPEND)):
        rows[label] = (rows["open_flags"] & bit) == bit
    rows["async_ops"] = data("async_ops").reindex(rows.index, fill_value=0).astype(np.int64)
    for name in ("faults", "fault_bytes", "major_faults"):
        rows[name] = data(name)
    return rows


def _record_sizes(s: dict) -> pd.Series:
    """Per phase with data calls: its record size, the size of its first call unless ..."""
    record = pd.Series(s["size_first"], index=s["phases"])
    for i in np.flatnonzero(s["size_min"] != s["size_max"]):   # several sizes: the most common one
        values, counts = s["histogram"](i, False)
        record.iloc[i] = values[np.argmax(counts)]
    # a copy's last call returns 0 at the end of the file: its record is the largest it moved
    all_transfers = pd.Series(s["all_transfers"], index=s["phases"])
    record = record.where(~all_transfers, pd.Series(s["size_max"], index=s["phases"]))
    # a load or store has no size the kernel sees: a phase with faults has the record of its
    # calls (IOzone -B writes one to size the file), 0 when it has none
    for i in np.flatnonzero(s["faults"] > 0):
        values, counts = s["histogram"](i, True)
        record.iloc[i] = values[np.argmax(counts)] if len(values) else 0
    return record


def finish(rows: pd.DataFrame, s: dict, cuts: dict[str, list[int]]) -> pd.DataFrame:
    """The figures derived from the others, and the table's columns in order."""
    rows["duration_s"] = (rows["data_last_ns"] - rows["data_first_ns"]).clip(lower=0) / 1e9
    rows["wall_Bps"] = rows["bytes"] / rows["duration_s"].where(rows["duration_s"] > 0)
    rows["busy_Bps"] = rows["bytes"] / (rows["data_ns"] / 1e9).where(rows["data_ns"] > 0)
    # loads and stores on mapped pages are not calls: a phase with faults has no time in calls
    rows["busy_Bps"] = rows["busy_Bps"].where(rows["faults"] == 0)
    rows["iops"] = rows["ops"] / rows["duration_s"].where(rows["duration_s"] > 0)
    window_ns = (rows["last_ns"] - rows["first_ns"]).clip(lower=0)
    # several threads in one phase overlap their calls: user time is what no call covered,
    # neither the phase's own nor its thread's calls on other targets meanwhile
    in_calls = rows["all_calls_ns"] / rows["threads"]
    # asynchronous requests overlap: the time covered by at least one call, not their sum
    in_calls = in_calls.where(rows["async_ops"] == 0, rows["covered_ns"])
    rows["user_ns"] = (window_ns - in_calls - rows["other_targets_ns"]).clip(lower=0)
    rows["other_calls_ns"] = rows["all_calls_ns"] - rows["data_ns"] - rows["fsync_ns"] - rows["openclose_ns"]
    rows["read_fraction"] = rows["read_ops"] / rows["ops"].where(rows["ops"] > 0)
    rows["too_short"] = (rows["duration_s"] < SHORT_SECONDS) | (rows["ops"] < SHORT_OPS)
    rows["name"] = [_generic_name(op, pat) for op, pat in zip(rows["operation"], rows["pattern"])]
    extents = pd.DataFrame({"lo": s["lo"], "hi": s["hi"]}, index=s["phases"])
    rows = rows.reset_index()
    rows[["reread", "rewrite"]] = _repeats(rows, extents, cuts)
    return rows[COLUMNS]


def async_columns(rows: pd.DataFrame, in_flight) -> None:
    """Phases with asynchronous requests (io_uring, libaio): their data time is the time
    covered by at least one request (analysis/phasing/inflight.py), and their queue depth is measured.
    Phases of plain syscalls keep the sum of their calls' latencies, and no depth.
    in_flight(wanted phases) -> (covered_ns of their data calls, inflight.depth_table of their
    data calls, covered_ns of all their calls)."""
    rows["covered_ns"] = 0
    for column in ("depth_max", "depth_mean"):
        rows[column] = np.nan
    rows["depth_levels"] = ""
    if not rows["async_ops"].any():
        return
    wanted = rows.index[rows["async_ops"] > 0].to_numpy(np.int64)
    data_covered, depth, covered = in_flight(wanted)
    rows.loc[wanted, "data_ns"] = data_covered.reindex(wanted).to_numpy()
    depth = depth.reindex(wanted)
    rows.loc[wanted, "depth_max"] = depth["depth_max"].to_numpy(np.float64)
    rows.loc[wanted, "depth_mean"] = depth["depth_mean"].to_numpy(np.float64)
    rows.loc[wanted, "depth_levels"] = [inflight.level_text(r) for _, r in depth.iterrows()]
    rows.loc[wanted, "covered_ns"] = covered.reindex(wanted).fillna(0).to_numpy(np.int64)


def thread_phases(rows: pd.DataFrame) -> pd.DataFrame:
    """The phases of the threads whose phases overlap in time (the only ones that can spend a
    phase's time on other targets)."""
    by_thread = rows.sort_values(["tid", "first_ns"], kind="stable")
    p_tid = by_thread["tid"].to_numpy(np.int64)
    ends = by_thread.groupby("tid")["last_ns"].cummax().to_numpy(np.int64)
    overlapping = np.r_[False, (p_tid[1:] == p_tid[:-1]) & (by_thread["first_ns"].to_numpy(np.int64)[1:] < ends[:-1])]
    threads = np.unique(p_tid[overlapping])
    return rows[rows["tid"].isin(threads)] if len(threads) else rows.iloc[:0]


def once(s_tid: np.ndarray, s_start: np.ndarray, s_latency: np.ndarray) -> np.ndarray:
    """Latencies of a thread's calls in time order (threads one after the other), with both
    sides of one copy_file_range (or sendfile, splice) counted once: they are records of one call."""
    out = s_latency.copy()
    if len(out) > 1:
        out[1:][(s_tid[1:] == s_tid[:-1]) & (s_start[1:] == s_start[:-1]) & (s_latency[1:] == s_latency[:-1])] = 0
    return out


def first_late(phase: np.ndarray, start: np.ndarray, end: np.ndarray, after: pd.Series) -> pd.Series:
    """Per phase with one: the end of the first of these calls that starts at or after after[phase]."""
    if not len(phase):
        return pd.Series(dtype=np.int64)
    limit = after.reindex(phase).to_numpy()
    late = np.flatnonzero(start.astype(np.int64) >= np.nan_to_num(limit, nan=np.inf))
    calls = pd.DataFrame({"phase": phase[late], "start": start[late], "end": end[late]})
    return calls.sort_values(["phase", "start"], kind="stable").groupby("phase").first()["end"]

# the phase table's columns, in the order people read them
COLUMNS = [
    "phase", "name", "operation", "pattern", "stride", "record_size", "path", "tgid", "tid", "threads",
    "bytes", "read_bytes", "write_bytes", "ops", "read_ops", "read_fraction", "warmup_ops", "fill_ops", "fill_bytes",
    "duration_s", "wall_Bps", "busy_Bps", "iops",
    "lat_min_us", "lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p99.9_us", "lat_max_us",
    "async_ops", "depth_max", "depth_mean", "depth_levels", "faults", "major_faults", "fault_bytes",
    "data_ns", "fsyncs", "fsync_ns", "openclose_ns", "other_calls_ns", "other_targets_ns", "user_ns",
    "errors", "short", "positioned_ops", "seeks", "opens", "too_short", "reread", "rewrite",
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
    rows = np.flatnonzero((kind == CREAT) | (kind == OPEN) | (kind == FTRUNCATE))
    ok = events["ret"].to_numpy()[rows] >= 0
    flags = events["flags"].to_numpy(np.int64)[rows]
    k = kind[rows]
    emptied = ok & ((k == CREAT) | ((k == OPEN) & ((flags & O_TRUNC) != 0))
                    | ((k == FTRUNCATE) & (events["requested"].to_numpy(np.int64)[rows] == 0)))
    rows = rows[emptied]
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
