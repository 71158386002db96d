"""Rebuild the phases of a benchmark from its events alone.

A span is an open-to-close stretch of one file in one process (a file opened before tracing
starts a span at its first call). Within a span, the data calls of each thread are cut where
the direction changes (read ↔ write); a thread that alternates all the time (fio randrw) is
one "mixed" phase instead of hundreds of tiny ones. Every other call of the span (lseek,
fsync, open, close, ...) belongs to the phase of the data call before it in the same thread,
or to the first phase when it comes before any data call.

Everything is vectorised over the event table: a 10-million-event trace is a few passes of
numpy and pandas, with Python loops only over phases.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

READS = ("read", "pread64", "readv", "preadv", "preadv2")
WRITES = ("write", "pwrite64", "writev", "pwritev", "pwritev2")
OPENS = ("open", "openat", "openat2", "creat")
SYNCS = ("fsync", "fdatasync")

# an alternating thread is "mixed" when its direction runs average fewer calls than this
MIXED_RUN_LENGTH = 8
# a pattern names a phase when this share of its steps follows it
PATTERN_SHARE = 0.75
# IOzone's own rule of thumb, and the seed study's 1 ms tests: below these a phase cannot be timed
SHORT_SECONDS = 0.010
SHORT_OPS = 100

O_APPEND, O_SYNC, O_DSYNC, O_DIRECT, O_TRUNC, O_CREAT = 0o2000, 0o4010000, 0o10000, 0o40000, 0o1000, 0o100


def _direction(syscall: pd.Series) -> np.ndarray:
    """+1 read, -1 write, 0 anything else."""
    name = syscall.astype(str).to_numpy()
    return np.where(np.isin(name, READS), 1, np.where(np.isin(name, WRITES), -1, 0)).astype(np.int8)


def _new_group(*keys: np.ndarray) -> np.ndarray:
    """True where any key differs from the row before (rows already ordered by the keys)."""
    change = np.zeros(len(keys[0]), dtype=bool)
    if len(change):
        change[0] = True
        for k in keys:
            change[1:] |= k[1:] != k[:-1]
    return change


def assign(events: pd.DataFrame) -> pd.DataFrame:
    """Per event: span, phase (-1 = none) and operation; phases numbered from 1 in time order."""
    n = len(events)
    name = events["syscall"].astype(str).to_numpy()
    direction = _direction(events["syscall"])
    ok = events["ret"].to_numpy() >= 0
    tgid = events["tgid"].to_numpy(np.int64)
    tid = events["tid"].to_numpy(np.int64)
    file_key = (events["dev"].to_numpy(np.uint64) << np.uint64(44)) ^ events["ino"].to_numpy(np.uint64)
    path_code = events["path"].cat.codes.to_numpy(np.int64) if hasattr(events["path"], "cat") else 0
    start = events["start_ns"].to_numpy(np.int64)

    # spans: per (process, file), a new span at an open made while no fd of it was open
    by_file = np.lexsort((np.arange(n), start, np.broadcast_to(path_code, n), file_key, tgid))
    first_of_file = _new_group(tgid[by_file], file_key[by_file], np.broadcast_to(path_code, n)[by_file])
    f_name, f_ok = name[by_file], ok[by_file]
    delta = np.where(np.isin(f_name, OPENS) & f_ok, 1, np.where((f_name == "close") & f_ok, -1, 0))
    running = np.cumsum(delta) - delta
    group_starts = np.flatnonzero(first_of_file)
    open_before = running - np.repeat(running[group_starts], np.diff(np.r_[group_starts, n]))
    opens_span = (delta == 1) & (open_before <= 0)
    span = np.empty(n, dtype=np.int64)
    span[by_file] = np.cumsum(first_of_file | opens_span) - 1

    # data calls per (span, thread), in time order: runs of one direction
    data = direction != 0
    idx = np.flatnonzero(data)
    order = idx[np.lexsort((start[idx], tid[idx], span[idx]))]
    d_span, d_tid, d_dir = span[order], tid[order], direction[order]
    first_of_stream = _new_group(d_span, d_tid)
    run_start = first_of_stream | _new_group(d_dir)
    stream = np.cumsum(first_of_stream) - 1
    run = np.cumsum(run_start) - 1
    runs_per_stream = np.bincount(stream, weights=run_start) if len(stream) else np.empty(0)
    calls_per_stream = np.bincount(stream) if len(stream) else np.empty(0)
    mixed_stream = (runs_per_stream > 2) & (calls_per_stream < MIXED_RUN_LENGTH * runs_per_stream)
    mixed = mixed_stream[stream] if len(stream) else np.empty(0, bool)
    # a mixed stream is one phase: its runs merge
    cut = np.where(mixed, first_of_stream, run_start)
    local_phase = np.cumsum(cut) - 1

    # number phases by the time of their first call
    phase_of_data = np.full(n, -1, dtype=np.int64)
    if len(order):
        first_time = np.full(local_phase[-1] + 1, np.iinfo(np.int64).max)
        np.minimum.at(first_time, local_phase, start[order])
        rank = np.empty_like(first_time)
        rank[np.argsort(first_time, kind="stable")] = np.arange(1, len(first_time) + 1)
        phase_of_data[order] = rank[local_phase]
    operation = np.full(n, "", dtype=object)
    operation[order] = np.where(mixed, "mixed", np.where(d_dir > 0, "read", "write"))

    # a warm-up call: the first call of a phase whose next call goes back to the same offset
    # (IOzone's read test primes the cache with one record, then seeks back to 0). It stays
    # in its phase but out of the phase's bytes, counts and timing.
    warmup = np.zeros(n, dtype=bool)
    if len(order) > 2:
        d_offset = events["offset"].to_numpy(np.int64)[order]
        d_size = events["requested"].to_numpy(np.int64)[order]
        head = np.flatnonzero(cut)
        head = head[(head + 2 < len(order))]
        head = head[~cut[head + 1] & ~cut[head + 2] & ~mixed[head]]
        primes = head[(d_offset[head + 1] == d_offset[head]) & (d_size[head + 1] == d_size[head])
                      & (d_offset[head + 2] == d_offset[head + 1] + d_size[head + 1])]
        warmup[order[primes]] = True

    # other calls: the phase before them in their thread and span, else the next one, else the span's
    frame = pd.DataFrame({"span": span, "tid": tid, "start": start, "phase": phase_of_data})
    frame["phase"] = frame["phase"].where(frame["phase"] >= 0)
    frame = frame.sort_values(["span", "tid", "start"], kind="stable")
    for keys in (["span", "tid"], ["span"]):
        frame["phase"] = frame.groupby(keys, sort=False)["phase"].ffill()
        frame["phase"] = frame.groupby(keys, sort=False)["phase"].bfill()
    phase = frame["phase"].reindex(events.index).fillna(-1).to_numpy(np.int64)
    return pd.DataFrame({"span": span, "phase": phase, "operation": operation, "warmup": warmup},
                        index=events.index)


def _pattern(frame: pd.DataFrame) -> pd.DataFrame:
    """Per phase: access pattern and stride, from the steps between consecutive data calls of a thread."""
    frame = frame.sort_values(["phase", "tid", "start_ns"], kind="stable")
    offset = frame["offset"].to_numpy(np.int64)
    size = frame["size"].to_numpy(np.int64)
    same_stream = ~_new_group(frame["phase"].to_numpy(), frame["tid"].to_numpy())
    step = np.r_[0, offset[1:] - offset[:-1]][:len(offset)]
    prev_size = np.r_[0, size[:-1]][:len(size)]
    steps = pd.DataFrame({"phase": frame["phase"].to_numpy(), "step": step,
                          "sequential": step == prev_size, "same": step == 0,
                          "backward": step == -size})[same_stream]
    counts = steps.groupby("phase").agg(steps=("step", "size"), sequential=("sequential", "sum"),
                                        same=("same", "sum"), backward=("backward", "sum"))
    # a phase of one call has no step at all
    counts = counts.reindex(np.unique(frame["phase"].to_numpy()), fill_value=0)
    # the two most common steps: a stride that runs past the end of the file wraps around
    # (IOzone's stride read does), which alternates a forward step with a backward jump
    top = steps.groupby(["phase", "step"]).size().reset_index(name="n")
    top = top.sort_values(["phase", "n"], ascending=[True, False])
    top["rank"] = top.groupby("phase").cumcount()
    first = top[top["rank"] == 0].set_index("phase")
    second = top[top["rank"] == 1].set_index("phase").reindex(first.index)
    counts = counts.join(first[["step", "n"]]).join(second[["step", "n"]].rename(columns={"step": "step2", "n": "n2"}))
    need = counts["steps"] * PATTERN_SHARE
    stride = counts[["step", "step2"]].max(axis=1).fillna(0)
    wrapped = ((counts["n"] + counts["n2"].fillna(0)) >= need) & (counts["step"] * counts["step2"].fillna(0) < 0)
    strided = ((counts["n"] >= need) & (counts["step"] != 0)) | wrapped
    pattern = np.select(
        [counts["steps"] == 0, counts["sequential"] >= need, counts["same"] >= need,
         counts["backward"] >= need, strided],
        ["single call", "sequential", "same record", "backward", "strided"], "random")
    return pd.DataFrame({"pattern": pattern,
                         "stride": np.where(pattern == "strided", np.where(wrapped, stride, counts["step"]), 0).astype(np.int64)},
                        index=counts.index)


def table(events: pd.DataFrame, assigned: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per phase: who, what, how much, how fast, and how the time was spent."""
    assigned = assign(events) if assigned is None else assigned
    ev = events.join(assigned[["phase", "operation", "warmup"]])
    ev = ev[ev["phase"] >= 0]
    name = ev["syscall"].astype(str)
    direction = np.where(ev["warmup"].to_numpy(), 0, _direction(ev["syscall"]))
    latency = ev["latency_ns"].to_numpy(np.int64)
    ret = ev["ret"].to_numpy(np.int64)
    is_data = direction != 0
    work = pd.DataFrame({
        "phase": ev["phase"].to_numpy(), "tid": ev["tid"].to_numpy(), "start_ns": ev["start_ns"].to_numpy(np.int64),
        "end_ns": ev["end_ns"].to_numpy(np.int64), "latency": latency,
        "data": is_data, "read": direction > 0,
        "bytes": np.where(is_data & (ret > 0), ret, 0),
        "error": ret < 0,
        "short": is_data & (ret >= 0) & (ret < ev["requested"].to_numpy(np.int64)),
        "sync": name.isin(SYNCS).to_numpy(), "openclose": name.isin(OPENS + ("close",)).to_numpy(),
        "warmup": ev["warmup"].to_numpy(),
    })
    work["data_latency"] = np.where(work["data"], latency, 0)
    work["sync_latency"] = np.where(work["sync"], latency, 0)
    work["openclose_latency"] = np.where(work["openclose"], latency, 0)
    work["read_bytes"] = np.where(work["read"], work["bytes"], 0)
    work["sync_end"] = np.where(work["sync"], work["end_ns"], 0)
    work["close_end"] = np.where(name.to_numpy() == "close", work["end_ns"], 0)
    work["data_start"] = np.where(work["data"], work["start_ns"], np.iinfo(np.int64).max)
    work["data_end"] = np.where(work["data"], work["end_ns"], 0)
    work["read_ops"] = work["data"] & work["read"]
    g = work.groupby("phase")
    rows = g.agg(ops=("data", "sum"), read_ops=("read_ops", "sum"), bytes=("bytes", "sum"),
                 errors=("error", "sum"), short=("short", "sum"),
                 fsyncs=("sync", "sum"), fsync_ns=("sync_latency", "sum"),
                 data_ns=("data_latency", "sum"), openclose_ns=("openclose_latency", "sum"),
                 all_calls_ns=("latency", "sum"), first_ns=("start_ns", "min"), last_ns=("end_ns", "max"),
                 data_first_ns=("data_start", "min"), data_last_ns=("data_end", "max"),
                 threads=("tid", "nunique"), warmup_ops=("warmup", "sum"),
                 read_bytes=("read_bytes", "sum"), sync_end_ns=("sync_end", "max"),
                 close_end_ns=("close_end", "max"))
    rows["write_bytes"] = rows["bytes"] - rows["read_bytes"]

    first = ev.sort_values("start_ns", kind="stable").groupby("phase").first()
    rows["tgid"] = first["tgid"]
    rows["tid"] = first["tid"]
    rows["path"] = first["path"].astype(str)
    rows["operation"] = ev[is_data].groupby("phase")["operation"].first()

    data_rows = ev[is_data]
    sizes = pd.DataFrame({"phase": data_rows["phase"].to_numpy(), "size": data_rows["requested"].to_numpy()})
    rows["record_size"] = sizes.groupby("phase")["size"].agg(lambda s: s.mode().iloc[0])
    pattern_input = pd.DataFrame({
        "phase": data_rows["phase"].to_numpy(), "tid": data_rows["tid"].to_numpy(),
        "start_ns": data_rows["start_ns"].to_numpy(), "offset": data_rows["offset"].to_numpy(),
        # a failed call moved nothing: the next call starts where the one before it ended
        "size": np.clip(data_rows["ret"].to_numpy(), 0, None)})
    rows = rows.join(_pattern(pattern_input))

    lat = pd.DataFrame({"phase": data_rows["phase"].to_numpy(), "us": data_rows["latency_ns"].to_numpy() / 1e3})
    lg = lat.groupby("phase")["us"]
    rows["lat_min_us"], rows["lat_mean_us"], rows["lat_max_us"] = lg.min(), lg.mean(), lg.max()
    for q in (50, 90, 99, 99.9):
        rows[f"lat_p{q:g}_us"] = lg.quantile(q / 100)

    flags = ev[name.isin(OPENS).to_numpy() & (ev["ret"] >= 0).to_numpy()].groupby("phase")["flags"].agg(
        lambda f: int(np.bitwise_or.reduce(f.to_numpy(np.int64))) if len(f) else 0)
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
    rows = rows.reset_index().rename(columns={"index": "phase"})
    rows[["reread", "rewrite"]] = _repeats(rows, ev)
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


def _repeats(rows: pd.DataFrame, ev: pd.DataFrame) -> pd.DataFrame:
    """Whether each phase covers a range of its file already read (re-read) or written (re-write)
    earlier in the run. A truncating open (O_TRUNC, creat) starts the file's history again."""
    marks = np.zeros((len(rows), 2), dtype=bool)
    history: dict[str, dict[str, list]] = {}
    truncations = ev[ev["syscall"].astype(str).isin(OPENS).to_numpy() & (ev["ret"] >= 0).to_numpy()
                     & (((ev["flags"].to_numpy(np.int64) & O_TRUNC) != 0) | (ev["syscall"].astype(str) == "creat").to_numpy())]
    cuts = truncations.groupby(truncations["path"].astype(str))["start_ns"].apply(list).to_dict()
    extent = ev[(_direction(ev["syscall"]) != 0) & ~ev["warmup"].to_numpy()].assign(end=lambda f: f["offset"] + f["ret"].clip(lower=0))
    spans = extent.groupby("phase").agg(lo=("offset", "min"), hi=("end", "max"))
    for i, row in enumerate(rows.sort_values("data_first_ns").itertuples()):
        if row.phase not in spans.index:
            continue
        lo, hi = spans.loc[row.phase, "lo"], spans.loc[row.phase, "hi"]
        seen = history.setdefault(row.path, {"read": [], "write": []})
        last_cut = max([t for t in cuts.get(row.path, []) if t <= row.first_ns], default=None)
        if last_cut is not None:
            for kind in seen:
                seen[kind] = [r for r in seen[kind] if r[2] > last_cut]
        for col, kind in ((0, "read"), (1, "write")):
            if row.operation in (kind, "mixed"):
                marks[rows.index.get_loc(rows.index[rows["phase"] == row.phase][0]), col] = any(
                    a < hi and lo < b for a, b, _ in seen[kind])
        for kind in ("read", "write"):
            if row.operation in (kind, "mixed"):
                seen[kind].append((lo, hi, row.data_last_ns))
    return pd.DataFrame(marks, columns=["reread", "rewrite"], index=rows.index)
