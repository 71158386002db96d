"""The phase table: one row per phase of analysis/phases.py `assign`, from the events.

Who (the thread of a phase's data calls), what (operation, access pattern and stride, record
size), how much and how fast (bytes, calls, wall and busy rates, latency percentiles), and how
the time was spent (in data calls, fsync, open/close, other calls, other targets, user space),
with the async queue depth, faults, errors and short calls, re-read and re-write. `table`
reduces the events to per-phase sums (`_sums`) and builds the rows from them (`phase_rows`,
`finish`): the streamed path (analysis/stream_table.py) makes the same sums block by block and
calls the same two functions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis import inflight
from iowitness.analysis.phases import (CLOSE, CREAT, FAULT_MAJOR, FAULTS, FTRUNCATE, O_APPEND, O_DIRECT, O_DSYNC, O_SYNC,
                                       O_TRUNC, OPEN, OPERATIONS, PATTERN_SAMPLE, PATTERN_SHARE, POSITIONED, READ,
                                       SHORT_OPS, SHORT_SECONDS, SYNC, TRANSFERS, _is_data, _new_group, _path_codes,
                                       assign, call_kinds, named, stable_order, uncounted)
from iowitness.collector.traceformat import async_ops, ops_of_kind

def _pattern(phase, tid, offset, size, by: _ByPhase) -> pd.DataFrame:
    """Per phase: access pattern and stride, from the steps between consecutive data calls of a
    thread. Input rows are the phases' data calls in time order; `size` is what each call moved."""
    order = by.perm if by.gathers else None
    if (by.min(tid) != by.max(tid)).any():   # several threads: steps within each thread
        order = np.lexsort((tid, phase))
    if order is not None:
        phase, tid, offset, size = phase[order], tid[order], offset[order], size[order]
    n = len(phase)
    starts = np.flatnonzero(_new_group(phase))   # rows are grouped by phase now
    same_stream = ~_new_group(phase, tid)
    step = np.zeros(n, dtype=np.int64)
    np.subtract(offset[1:], offset[:-1], out=step[1:])
    ends = offset + size
    sequential = np.zeros(n, dtype=bool)
    np.equal(offset[1:], ends[:-1], out=sequential[1:])
    del ends

    def per_phase(flags):
        return np.add.reduceat(flags, starts, dtype=np.int64) if len(starts) else np.empty(0, np.int64)

    counts = pd.DataFrame({"steps": per_phase(same_stream), "sequential": per_phase(same_stream & sequential),
                           "same": per_phase(same_stream & (step == 0)),
                           "backward": per_phase(same_stream & (step == -size))},
                          index=pd.Index(phase[starts], name="phase"))
    lengths = np.minimum(np.diff(np.r_[starts, n]), PATTERN_SAMPLE + 1)
    first_rows = np.repeat(starts, lengths) + (np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths))
    first_rows = first_rows[same_stream[first_rows]]
    return pattern_rule(counts, phase[first_rows], step[first_rows])


def pattern_rule(counts: pd.DataFrame, sample_phase: np.ndarray, sample_step: np.ndarray) -> pd.DataFrame:
    """Pattern and stride per phase (the index of `counts`: how many steps each phase has, and
    how many of them are sequential, on the same record, backward) from its sampled steps:
    those among the first PATTERN_SAMPLE + 1 data calls of the phase (its threads one after
    the other, by tid), phase by phase in that order (analysis/stream_table.py gives the same)."""
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


class _ByPhase:
    """Rows sorted by phase (time order kept within a phase), with per-phase reductions."""

    def __init__(self, phase: np.ndarray):
        ordered = len(phase) < 2 or bool(np.all(phase[1:] >= phase[:-1]))
        self.perm = np.arange(len(phase)) if ordered else stable_order(phase)
        self.gathers = not ordered
        self.bounds = np.flatnonzero(_new_group(phase[self.perm]))
        self.phases = phase[self.perm][self.bounds]

    def _sorted(self, x):
        return np.asarray(x)[self.perm] if self.gathers else np.asarray(x)

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
    """One row per phase: who, what, how much, how fast, and how the time was spent.

    The figures are reduced from the events to per-phase sums (`_sums`), from which
    `phase_rows` and `finish` make the table; analysis/stream_table.py reduces the same sums
    block by block and shares those two."""
    assigned = assign(events) if assigned is None else assigned
    all_kinds = call_kinds(events["syscall"])
    all_phase = assigned["phase"].to_numpy()
    if not len(all_phase) or all_phase.max() < 1:
        return pd.DataFrame(columns=COLUMNS)
    s, d = _sums(events, assigned, all_kinds, all_phase)
    rows = phase_rows(s)
    # what depends on the phases' windows: the timed fsync and close, the time in other targets
    slot, ends, starts = d["slot"], events["end_ns"].to_numpy(), events["start_ns"].to_numpy()
    for column, rows_of in (("sync_end_ns", d["sync_rows"]), ("close_end_ns", d["close_rows"])):
        rows[column] = _first_after(slot[rows_of], starts[rows_of], ends[rows_of], rows["data_last_ns"])

    def in_flight(wanted):
        mine = np.isin(d["phase_d"], wanted)
        p, a, b = d["phase_d"][mine], d["start_d"][mine], d["end_d"][mine]
        every = np.flatnonzero(np.isin(all_phase, wanted))
        return (inflight.covered_ns(p, a, b), inflight.depth_table(p, a, b),
                inflight.covered_ns(all_phase[every], starts[every], ends[every]))

    async_columns(rows, in_flight)
    rows["other_targets_ns"] = _other_targets_ns(events, slot, rows)
    return finish(rows, s, _truncations(events, all_kinds))


def _sums(events: pd.DataFrame, assigned: pd.DataFrame, all_kinds: np.ndarray, all_phase: np.ndarray):
    """The per-phase sums `phase_rows` takes, from the whole event table; and the per-event
    arrays the rest of `table` needs."""
    # Figures over every call of a phase are accumulated straight into arrays indexed by phase
    # number (slot 0 collects the calls of no phase); only the data calls are put in phase order.
    slot = np.maximum(all_phase, 0)
    slots = int(slot.max()) + 1

    def per_slot(ufunc, values, start_value, rows=None):
        acc = np.full(slots, start_value, dtype=np.int64)
        values = np.asarray(values)
        # the probe's u64 times and sizes, read as the int64 the table keeps (as astype would)
        ufunc.at(acc, slot if rows is None else slot[rows], values.view(np.int64) if values.dtype == np.uint64 else values)
        return acc

    def col(name, rows, dtype=np.int64):
        return events[name].to_numpy()[rows].astype(dtype, copy=False)

    n = len(all_phase)
    calls_in = np.bincount(slot, minlength=slots)
    present = np.flatnonzero(calls_in)
    present = present[present > 0]
    first_row = per_slot(np.minimum, np.arange(n), n)[present]
    latency = events["latency_ns"].to_numpy()
    ret = events["ret"].to_numpy()
    warm = uncounted(assigned)
    fill = assigned["fill"].to_numpy() if "fill" in assigned else np.zeros(len(warm), dtype=bool)
    sync_rows = np.flatnonzero(all_kinds == SYNC)
    close_rows = np.flatnonzero(all_kinds == CLOSE)
    open_rows = np.flatnonzero((all_kinds == OPEN) | (all_kinds == CREAT))
    openclose_rows = np.union1d(open_rows, close_rows)
    error_rows = np.flatnonzero(ret < 0)
    warm_rows = np.flatnonzero(warm & ~fill)
    fill_rows = np.flatnonzero(fill)
    seek_rows = np.flatnonzero(named(events["syscall"], ops_of_kind("seek")))
    opened = open_rows[ret[open_rows] >= 0]
    all_tid = events["tid"].to_numpy(np.int64)
    several = per_slot(np.minimum, all_tid, np.iinfo(np.int64).max) != per_slot(np.maximum, all_tid, -1)
    threads = np.ones(slots, dtype=np.int64)
    if several.any():
        among = np.flatnonzero(several[slot])
        pairs = np.unique(np.stack([slot[among], all_tid[among]]), axis=1)
        threads = np.bincount(pairs[0], minlength=slots)
    categories = events["path"].cat.categories if isinstance(events["path"].dtype, pd.CategoricalDtype) else \
        pd.Index(pd.unique(events["path"].astype(str)))
    s = {
        "present": present,
        "errors": np.bincount(slot[error_rows], minlength=slots)[present],
        "fsyncs": np.bincount(slot[sync_rows], minlength=slots)[present],
        "fsync_ns": per_slot(np.add, latency[sync_rows], 0, sync_rows)[present],
        "openclose_ns": per_slot(np.add, latency[openclose_rows], 0, openclose_rows)[present],
        "all_calls_ns": per_slot(np.add, latency, 0)[present],
        "warmup_ops": np.bincount(slot[warm_rows], minlength=slots)[present],
        "fill_ops": np.bincount(slot[fill_rows], minlength=slots)[present],
        "fill_bytes": per_slot(np.add, np.maximum(ret[fill_rows], 0), 0, fill_rows)[present],
        "first_ns": per_slot(np.minimum, events["start_ns"].to_numpy(), np.iinfo(np.int64).max)[present],
        "last_ns": per_slot(np.maximum, events["end_ns"].to_numpy(), 0)[present],
        "seeks": np.bincount(slot[seek_rows], minlength=slots)[present],
        "open_flags": per_slot(np.bitwise_or, col("flags", opened), 0, opened)[present],
        "threads": threads[present],
        "first_tgid": col("tgid", first_row), "first_tid": col("tid", first_row),
        "path": [str(categories[c]) if c >= 0 else "" for c in _path_codes(events)[first_row]],
    }

    # the data calls (not warm-ups), in phase order: time order within a phase
    d_rows = np.flatnonzero(_is_data(all_kinds) & ~warm & (all_phase > 0))
    d_rows = d_rows[stable_order(all_phase[d_rows])]
    phase_d = all_phase[d_rows]
    dby = _ByPhase(phase_d)
    kind_d = all_kinds[d_rows]
    ret_d, lat_d = col("ret", d_rows), col("latency_ns", d_rows)
    start_d, end_d = col("start_ns", d_rows), col("end_ns", d_rows)
    # a fault moved what it mapped (its record's `requested`; it returns nothing)
    fault_d = named(events["syscall"], FAULTS)[d_rows]
    moved = np.where(fault_d, col("requested", d_rows), np.maximum(ret_d, 0))
    is_read = kind_d == READ
    first_data = d_rows[dby.perm[dby.bounds]] if len(d_rows) else np.empty(0, np.int64)
    size = col("requested", d_rows)
    # a copy_file_range, sendfile or splice asks for "up to" its length (cp asks for 2^63): less
    # is no short call, and its record is what it moved
    transfer = named(events["syscall"], TRANSFERS)[d_rows]
    short = ((ret_d >= 0) & (ret_d < size) & ~transfer & ~fault_d).astype(np.int64)
    size = np.where(transfer, np.maximum(ret_d, 0), size)

    def histogram(i, calls_only):
        lo, hi = dby.bounds[i], (dby.bounds[i + 1] if i + 1 < len(dby.bounds) else len(d_rows))
        rows = dby.perm[lo:hi]
        return np.unique(size[rows[~fault_d[rows]] if calls_only else rows], return_counts=True)

    offset = col("offset", d_rows)
    # a fault has no latency the kernel can give (its entry only): not in the latency figures
    lat_us = np.where(fault_d, np.nan, lat_d / 1e3)
    percentiles = []
    sorted_lat = lat_us[dby.perm]
    for p, lo, hi in dby.slices():
        some = sorted_lat[lo:hi]
        some = some[~np.isnan(some)]
        percentiles.append(np.percentile(some, [50, 90, 99, 99.9]) if len(some) else [np.nan] * 4)
    major = (col("flags", d_rows) & FAULT_MAJOR) != 0
    s.update({
        "phases": dby.phases,
        "ops": dby.sum(np.ones(len(d_rows), dtype=np.int64)), "read_ops": dby.sum(is_read.astype(np.int64)),
        "bytes": dby.sum(moved), "read_bytes": dby.sum(np.where(is_read, moved, 0)), "data_ns": dby.sum(lat_d),
        "data_first_ns": dby.min(start_d), "data_last_ns": dby.max(end_d),
        "tgid": col("tgid", first_data), "tid": col("tid", first_data),
        "operation": dby.first(assigned["operation"].cat.codes.to_numpy()[d_rows]),
        "short": dby.sum(short),
        # calls that carry their own offset (pread, pwritev, ...): a C stdio stream never makes them
        "positioned_ops": dby.sum(named(events["syscall"], POSITIONED)[d_rows].astype(np.int64)),
        "size_first": dby.first(size), "size_min": dby.min(size), "size_max": dby.max(size),
        "all_transfers": dby.min(transfer.astype(np.int64)) == 1, "histogram": histogram,
        # a failed call moved nothing: the next call starts where the one before it ended
        "pattern": _pattern(phase_d, col("tid", d_rows), offset, moved, dby),
        "lat_min": dby.min(np.where(fault_d, np.inf, lat_us)), "lat_max": dby.max(np.where(fault_d, -np.inf, lat_us)),
        "lat_sum": dby.sum(np.nan_to_num(lat_us)),
        "timed": np.diff(np.r_[dby.bounds, len(d_rows)]) - dby.sum(fault_d.astype(np.int64)),
        "percentiles": percentiles,
        "async_ops": dby.sum(named(events["syscall"], async_ops())[d_rows].astype(np.int64)),
        "faults": dby.sum(fault_d.astype(np.int64)), "fault_bytes": dby.sum(np.where(fault_d, moved, 0)),
        "major_faults": dby.sum((fault_d & major).astype(np.int64)),
        "lo": dby.min(offset), "hi": dby.max(offset + moved),
    })
    d = {"slot": slot, "sync_rows": sync_rows, "close_rows": close_rows,
         "phase_d": phase_d, "start_d": start_d, "end_d": end_d}
    return s, d


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
    covered by at least one request (analysis/inflight.py), and their queue depth is measured.
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


def _other_targets_ns(events: pd.DataFrame, slot: np.ndarray, rows: pd.DataFrame) -> pd.Series:
    """Per phase: time its thread spent in calls on other targets (another file, another open
    of the file) while the phase ran: a benchmark writing four files in turn from one thread
    spends three quarters of each file's phase on the other three, not in user space. Only
    threads whose phases overlap in time are looked at: the others have none."""
    out = pd.Series(0, index=rows.index, dtype=np.int64)
    rows = thread_phases(rows)
    if not len(rows):
        return out
    threads = np.unique(rows["tid"].to_numpy(np.int64))
    mine = np.flatnonzero(np.isin(events["tid"].to_numpy(), threads))   # time order kept
    tid = events["tid"].to_numpy()[mine].astype(np.int64)
    by = stable_order(tid)
    s_tid, s_start = tid[by], events["start_ns"].to_numpy()[mine][by].astype(np.int64)
    latency = events["latency_ns"].to_numpy()[mine].astype(np.int64)
    cum = np.r_[0, np.cumsum(once(s_tid, s_start, latency[by]))]
    del by
    p_tid, lo, hi = rows["tid"].to_numpy(np.int64), rows["first_ns"].to_numpy(np.int64), rows["last_ns"].to_numpy(np.int64)
    # the thread's calls that start inside the phase's window, as a range of the sorted rows
    key_lo = np.searchsorted(s_tid, p_tid, side="left")
    key_hi = np.searchsorted(s_tid, p_tid, side="right")
    a = np.array([k + np.searchsorted(s_start[k:e], x, side="left") for k, e, x in zip(key_lo, key_hi, lo)], np.int64)
    b = np.array([k + np.searchsorted(s_start[k:e], x, side="left") for k, e, x in zip(key_lo, key_hi, hi)], np.int64)
    in_window = cum[b] - cum[a]
    # minus the phase's own calls in that thread
    phase_tid = np.full(int(slot.max()) + 1, -1, dtype=np.int64)
    phase_tid[rows.index.to_numpy(np.int64)] = p_tid
    own_rows = tid == phase_tid[slot[mine]]
    own = np.bincount(slot[mine][own_rows], weights=latency[own_rows],
                      minlength=len(phase_tid))[rows.index.to_numpy(np.int64)]
    out.loc[rows.index] = np.maximum(in_window - own, 0).astype(np.int64)
    return out


def _first_after(phase: np.ndarray, start: np.ndarray, end: np.ndarray, after: pd.Series) -> pd.Series:
    """Per phase (the index of `after`): the end of its first call, of those given, that starts
    once the phase's last data call has ended; 0 where there is none."""
    out = pd.Series(0, index=after.index, dtype=np.int64)
    first = first_late(phase, start, end, after)
    out.loc[first.index.intersection(out.index)] = first.astype(np.int64)
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
    "errors", "short", "positioned_ops", "seeks", "too_short", "reread", "rewrite",
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
