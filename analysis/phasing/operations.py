"""An operation of several calls: what one operation is, for rates and for latencies alike.

A benchmark's "operation" is not always one call. What a claim's `timed` may say:

  call           one data call (the default)
  call+sync      one data call and the fsync/fdatasync calls its thread makes after it
  open..close    one open file description: its open to its last close
  calls+sync     the data calls of a thread up to a sync, and the syncs right after them
                 (a loop of n writes and an fdatasync, n found in the trace)
  N calls        N data calls of one thread (n small O_DSYNC writes timed as one)
  N calls+sync   N data calls of one thread and the syncs after the N-th
  call or sync   every data call and every fsync/fdatasync, each one operation
  sync           every fsync/fdatasync, each one operation, the data calls none (sysbench
                 fileio's "fsyncs/s": its periodic fsyncs over its timed period)

A rate claim (ops/s) counts operations, not calls: `per_operation(rows, timed)` gives the
phase rows with `ops` (and `read_ops`) counting operations, so that every window figure of
analysis/measure/figures.py is per operation. A latency claim's operations are timed by `spans`
(first call's start to last call's end, per operation; analysis/judge/latency.py asks it for the
windows it does not time itself).

Where the spec is silent (`timed` left at "call"), `explain` finds a repeating group of calls
in the phases (a sync after every n writes, an open..close around every few calls) that makes
an ops/s claim fit, and says so with the `timed` to write in the spec:

    "one operation is 8 writes and a sync: counted per operation the rate is 185 ops/s, within
     0.8% of the claim (the calls' rate is 8.00× that); say timed = "calls+sync""
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import phases as phase_module

BASIC = ("call", "call+sync", "open..close")
# every data call and every fsync/fdatasync, each one operation (sysbench fileio's events)
EACH = "call or sync"
# every fsync/fdatasync, each one operation, and no data call (sysbench fileio's fsyncs/s)
SYNC = "sync"
GROUPS = ("calls+sync",)
# "8 calls", "8 calls+sync" (a whole number of data calls per operation)
COUNTED = re.compile(r"^\s*(\d{1,9})\s*calls?\s*(\+\s*sync)?\s*$")
# an operation of more calls than this is not an operation a benchmark times one by one
MOST_CALLS = 1_000_000


def parse(timed: str) -> tuple[str, int]:
    """(kind, n) of a `timed` text: kind one of BASIC + GROUPS + ("calls",), n the data calls per
    operation (0: found in the trace); ValueError when it is none of them."""
    text = str(timed).strip()
    if text == EACH:
        return text, 1
    if text == SYNC:
        return text, 0
    if text in BASIC or text in GROUPS:
        return text, 1 if text in BASIC[:2] else 0
    m = COUNTED.match(text)
    if m and 1 <= int(m.group(1)) <= MOST_CALLS:
        n = int(m.group(1))
        if n == 1:
            return ("call+sync" if m.group(2) else "call"), 1
        return ("calls+sync" if m.group(2) else "calls"), n
    known = ", ".join(BASIC + GROUPS + (EACH, SYNC))
    raise ValueError(f"{timed!r} is not one of {known}, \"N calls\", \"N calls+sync\"")


def canonical(timed: str) -> str:
    """The one spelling of a `timed` (ValueError when it is not one): "8 calls + sync" -> "8 calls+sync"."""
    kind, n = parse(timed)
    return kind if n in (0, 1) and kind != "calls" else f"{n} {kind}"


def is_several(timed: str | None) -> bool:
    """Whether an operation is counted otherwise than one per data call."""
    if not timed:
        return False
    try:
        kind, _ = parse(timed)
    except ValueError:
        return False
    return kind not in ("call", "call+sync")


def counts(rows: pd.DataFrame, timed: str) -> np.ndarray:
    """Operations per phase row (float: a last partial group counts its share)."""
    kind, n = parse(timed)
    ops = rows["ops"].to_numpy(np.float64)
    if kind == "open..close":
        opens = rows["opens"].to_numpy(np.float64) if "opens" in rows else np.ones(len(rows))
        return np.maximum(opens, 1.0)
    if kind in ("calls", "calls+sync") and n:
        return ops / n
    if kind == "calls+sync":
        return np.maximum(rows["fsyncs"].to_numpy(np.float64), 1.0)
    if kind == EACH:
        return ops + (rows["fsyncs"].to_numpy(np.float64) if "fsyncs" in rows else 0.0)
    if kind == SYNC:
        return rows["fsyncs"].to_numpy(np.float64) if "fsyncs" in rows else np.zeros(len(rows))
    return ops


def per_operation(rows: pd.DataFrame, timed: str | None) -> pd.DataFrame:
    """The phase rows with `ops` and `read_ops` counting operations of `timed`, not calls."""
    if not is_several(timed):
        return rows
    operations = counts(rows, str(timed))
    share = np.where(rows["ops"].to_numpy(np.float64) > 0,
                     operations / np.maximum(rows["ops"].to_numpy(np.float64), 1), 0.0)
    out = rows.copy()
    out["ops"] = operations
    if "read_ops" in out:
        out["read_ops"] = out["read_ops"].to_numpy(np.float64) * share
    kind, _ = parse(str(timed))
    if kind == "open..close" and {"first_ns", "last_ns"} <= set(out.columns):
        # the operations run from the first one's open to the last one's close, not data call to data call
        out["data_first_ns"] = np.minimum(out["data_first_ns"], out["first_ns"])
        out["data_last_ns"] = np.maximum(out["data_last_ns"], out["last_ns"])
    elif kind == "calls+sync" and "sync_end_ns" in out:
        # the last operation ends with its sync
        out["data_last_ns"] = np.fmax(out["data_last_ns"], out["sync_end_ns"])
    return out


def describe(rows: pd.DataFrame, timed: str) -> str:
    """One operation in words, from the calls of the phases: "8 writes and an fdatasync"."""
    kind, n = parse(timed)
    what = "reads" if set(rows["operation"]) == {"read"} else "writes" if set(rows["operation"]) == {"write"} \
        else "data calls"
    ops, syncs = float(rows["ops"].sum()), float(rows["fsyncs"].sum()) if "fsyncs" in rows else 0.0
    opens = float(rows["opens"].sum()) if "opens" in rows else 0.0
    if kind == "open..close":
        per = ops / opens if opens else ops
        return f"an open, {_calls(per, what)} and a close"
    if kind == "calls+sync":
        per = n or (ops / syncs if syncs else ops)
        return f"{_calls(per, what)} and a sync"
    if kind == SYNC:
        return "an fsync or fdatasync"
    return _calls(n or 1, what)


def _calls(per: float, what: str) -> str:
    shown = f"{per:,.0f}" if abs(per - round(per)) < 0.05 else f"{per:,.1f}"
    return f"{shown} {what[:-1] if shown == '1' else what}"


def candidates(rows: pd.DataFrame) -> list[str]:
    """The groups of calls the phases repeat, as `timed` texts: a sync after every few data
    calls (two or more), an open..close around every few (one or more: the window then runs
    from an open to a close)."""
    ops = float(rows["ops"].sum())
    out = []
    syncs = float(rows["fsyncs"].sum()) if "fsyncs" in rows else 0.0
    if syncs >= 2 and ops >= 2 * syncs * 0.95:
        out.append("calls+sync")
    opens = float(rows["opens"].sum()) if "opens" in rows else 0.0
    if opens >= 2:
        # even of one data call each: the operations' window runs from the first open to the last close
        out.append("open..close")
    return out


def explain(value: float, rows: pd.DataFrame, direction: str | None, window: str, tolerance: float,
            figures_of) -> tuple[str, str, float] | None:
    """(reason, timed, figure) when an ops/s claim fits the phases counted per group of calls
    they repeat, not per call; None otherwise. `figures_of(rows)` gives the window figures."""
    for timed in candidates(rows):
        figure = figures_of(per_operation(rows, timed)).get(window)
        if not figure or figure != figure or abs(value / figure - 1) > tolerance:
            continue
        calls_each = float(rows["ops"].sum()) / float(counts(rows, timed).sum())
        how = (f"the calls' rate is {calls_each:,.2f}× that" if calls_each >= 1.05
               else "timed from the first operation's open to the last one's close")
        reason = (f"one operation is {describe(rows, timed)}: counted per operation the rate is "
                  f"{figure:,.0f} ops/s, within {abs(value / figure - 1):.1%} of the claim ({how}); "
                  f"say timed = \"{timed}\"")
        return reason, timed, figure
    return None


# ---- latencies of operations of several calls (analysis/judge/latency.py asks) ----

def rewrite_reads(assigned: pd.DataFrame, calls: np.ndarray, in_phases: np.ndarray, direction: str | None,
                  kind: str) -> np.ndarray:
    """The reads a write phase makes of the records it rewrites (its read-before-write, out of
    its counts), as data calls of an operation of several calls: a rewrite loop times a read, a
    seek back and a write as one (bonnie++'s rewrite, timed = "2 calls"). None for one call."""
    if kind not in ("calls", "calls+sync") or direction != "write" or "fill" not in assigned:
        return np.zeros(len(calls), bool)
    return in_phases & (calls == phase_module.READ) & assigned["fill"].to_numpy()


def spans(events: pd.DataFrame, assigned: pd.DataFrame, phases: list[int], timed: str,
          direction: str | None) -> np.ndarray:
    """Seconds per operation of a group kind ("calls+sync", "N calls", "N calls+sync") in
    `phases`: each operation's first call's start to its last call's end, per thread, in time
    order of the operations' starts."""
    kind, n = parse(timed)
    calls = phase_module.call_kinds(events["syscall"])
    in_phases = np.isin(assigned["phase"].to_numpy(), phases)
    start, end = events["start_ns"].to_numpy(np.int64), events["end_ns"].to_numpy(np.int64)
    wanted = (phase_module.READ,) if direction == "read" else (phase_module.WRITE,) if direction == "write" else \
        (phase_module.READ, phase_module.WRITE)
    faults = phase_module.named(events["syscall"], phase_module.FAULTS)
    data = in_phases & np.isin(calls, wanted) & ~faults & ~phase_module.uncounted(assigned)
    data |= rewrite_reads(assigned, calls, in_phases, direction, kind) & ~faults
    syncs = in_phases & (calls == phase_module.SYNC) if kind == "calls+sync" else np.zeros(len(calls), bool)
    rows = np.flatnonzero(data | syncs)
    if not len(rows):
        return np.empty(0, np.float64)
    tid = events["tid"].to_numpy(np.int64)[rows]
    by = np.lexsort((start[rows], tid))             # per thread, in time order
    rows, tid = rows[by], tid[by]
    is_data = data[rows]
    new_thread = np.r_[True, tid[1:] != tid[:-1]]
    thread = np.cumsum(new_thread) - 1
    if n:
        # the k-th data call of its thread is in operation k // n; a sync joins the data call before it
        seen = np.cumsum(is_data) - 1
        first_of_thread = np.maximum.accumulate(np.where(new_thread, seen + (~is_data), -1))
        within = seen - first_of_thread
        op_local = np.where(within >= 0, within // n, -1)
    else:
        # a data call after a sync starts the next operation
        after_sync = np.r_[False, ~is_data[:-1]] & is_data & ~new_thread
        op_local = np.cumsum(after_sync)
        starts_at = np.maximum.accumulate(np.where(new_thread, np.arange(len(rows)), 0))
        op_local = op_local - op_local[starts_at]
        # syncs before a thread's first data call belong to none
        seen = np.cumsum(is_data)
        op_local = np.where(seen - (seen[starts_at] - is_data[starts_at]) > 0, op_local, -1)
    keep = op_local >= 0
    key = thread[keep] * (MOST_CALLS * 1_000) + op_local[keep]
    frame = pd.DataFrame({"op": key, "start": start[rows][keep], "end": end[rows][keep],
                          "data": is_data[keep]})
    per = frame.groupby("op").agg(start=("start", "min"), end=("end", "max"), data=("data", "sum"))
    per = per[per["data"] > 0].sort_values("start")
    return (per["end"] - per["start"]).to_numpy(np.float64) / 1e9


# ---- successive open..close stretches of one file by one thread: one phase ----

# so many successive stretches of one shape make one test: fewer may be several tests of one
# file (IOzone's write, rewrite, fwrite, frewrite of one file: four open..close stretches of
# the same write calls)
JOIN_CHAIN = 8


def joined(S: dict, eligible: np.ndarray) -> np.ndarray:
    """Per stream (an open..close stretch of one file by one thread, stream_walk's streams): the
    stream whose phase it joins (itself when none). Streams join when they follow one another
    on one file in one thread (the next one's first data call after the last one's last, no
    other stretch of the file by the thread between) with one shape (the same data calls,
    positioned calls, bytes and direction), JOIN_CHAIN of them or more in a row: a test that
    opens, works on and closes its file for every operation.

    S: per-stream arrays tgid, tid, file, first_data, l1_pos (last data call), calls, reads,
    positioned, bytes; `eligible`: streams of one direction run (not mixed, not cut)."""
    n = len(S["tgid"])
    head = np.arange(n, dtype=np.int64)
    if int(eligible.sum()) < JOIN_CHAIN:
        return head
    # every stream with data calls, in order per (process, thread, file): only neighbours join
    s = np.flatnonzero(S["first_data"] >= 0)
    s = s[np.lexsort((S["first_data"][s], S["file"][s], S["tid"][s], S["tgid"][s]))]
    calls, reads = S["calls"][s], S["reads"][s]
    direction = np.where(reads == 0, 2, np.where(reads == calls, 1, 0))

    def same(name):
        return S[name][s][1:] == S[name][s][:-1]

    link = same("tgid") & same("tid") & same("file") & same("calls") & same("bytes") & same("positioned") \
        & (direction[1:] == direction[:-1]) & (direction[1:] > 0) & eligible[s][1:] & eligible[s][:-1] \
        & (S["first_data"][s][1:] > S["l1_pos"][s][:-1])
    link = np.r_[False, link]
    chain = np.cumsum(~link) - 1                   # chain number per sorted stream
    length = np.bincount(chain)
    start = np.flatnonzero(~link)                  # each chain's first stream, in sorted order
    long = length[chain] >= JOIN_CHAIN
    head[s[long]] = s[start[chain[long]]]
    return head


# a ratio this near a whole number n of calls per operation is named, when no group is found
MOST_HINTED = 64


def whole_hint(calls_per_operation: float | None, calls: int, tolerance: float) -> str | None:
    """Why a claim that does not fit cannot be judged when it is n-fold off the per-call figure
    (n whole, 2 to MOST_HINTED, dividing the calls), and what to say if one operation is n
    calls; None otherwise. No group of calls in the trace shows it (n small O_DSYNC writes timed
    as one look like n operations of one call), so the claim is neither held to one call (a
    false DISAGREES at exactly 1/n) nor to n (a group never seen): it cannot be judged."""
    if not calls_per_operation or calls_per_operation != calls_per_operation or calls_per_operation < 1.5:
        return None
    n = round(calls_per_operation)
    if n > MOST_HINTED or abs(calls_per_operation / n - 1) > tolerance or (calls and calls % n):
        return None
    return (f"the claim and the per-call figure differ {calls_per_operation:.2f}-fold, and the phases' {calls:,} "
            f"calls make {calls // n:,} groups of {n}: one operation may be {n} calls (n small O_DSYNC writes timed "
            f"as one), which no call shows (no sync, no open..close between them), so the claim cannot be judged "
            f"per call; if it is, say timed = \"{n} calls\"")
