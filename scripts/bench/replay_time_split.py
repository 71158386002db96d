#!/usr/bin/env python3
"""Where a replay's time goes, call by call: inside the calls or between them.

A replay issues the same calls as its original, thread by thread in the same order, so the
k-th call of a thread of each trace are the same call (a thread found in the other trace by
its calls' offsets and sizes, else by its rank in order of first calls). For each syscall kind
this prints, summed over those pairs: the time inside the calls (latency) in the original and in
each replay, and the time before them (the thread's gap since its previous call), with the
medians per call. A replay slower than its original because its calls take longer is the file
system's answer; one slower because of its gaps is the player's error.

Usage: .venv/bin/python scripts/bench/replay_time_split.py ORIGINAL.iwt REPLAY.iwt [REPLAY.iwt ...]
"""

from __future__ import annotations

import sys

import numpy as np


def per_thread(path: str):
    """Per thread, in order of its first call: its calls' names, latencies, gaps, and the key that
    finds the same thread in another trace (its calls' offsets and sizes, in its order)."""
    from iowitness.analysis.read.run import load

    e = load(path).events
    e = e.assign(name=e["syscall"].astype(str)).sort_values(["start_ns"], kind="stable")
    first = e.groupby("tid", sort=False)["start_ns"].min().sort_values(kind="stable")
    out = []
    for tid in first.index:
        mine = e[e["tid"] == tid]
        start = mine["start_ns"].to_numpy(np.int64)
        lat = mine["latency_ns"].to_numpy(np.int64)
        gap = np.concatenate([[0], start[1:] - (start[:-1] + lat[:-1])])
        async_ = mine["name"].str.startswith(("aio_", "uring_")).to_numpy()
        if async_.any():   # a thread is free again at a request's submission
            gap = np.concatenate([[0], start[1:] - np.where(async_[:-1], start[:-1], start[:-1] + lat[:-1])])
        key = (mine["offset"].to_numpy(np.int64).tobytes(), mine["requested"].to_numpy(np.int64).tobytes())
        out.append((mine["name"].to_numpy(), lat, gap, key))
    return out


def matched(base: list, other: list) -> list | None:
    """`other`'s threads in `base`'s order: each the thread that made the same calls (offsets and
    sizes), else the one at the same rank. Threads that start together (fio's jobs) do not keep
    their order by first call from run to run, and a rank alone paired one job's reads with
    another's writes; None when the calls per thread differ."""
    by_key: dict = {}
    for t in other:
        by_key.setdefault(t[3], []).append(t)
    out = [by_key[t[3]].pop(0) if by_key.get(t[3]) else None for t in base]
    spare = iter(t for t in other if not any(t is o for o in out))
    out = [o if o is not None else next(spare, None) for o in out]
    if any(o is None for o in out) or [len(t[0]) for t in out] != [len(t[0]) for t in base]:
        return None
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    base = per_thread(argv[1])
    print(f"{'call':<12} {'n':>7} {'trace':<8} {'in calls ms':>12} {'between ms':>11} {'p50 in ns':>10} "
          f"{'p50 gap ns':>10}")
    for k, path in enumerate(argv[2:]):
        other = matched(base, per_thread(path))
        if other is None:
            print(f"{path}: not the same calls per thread as the original; not split", file=sys.stderr)
            continue
        names = np.concatenate([t[0] for t in base])
        lat0, gap0 = np.concatenate([t[1] for t in base]), np.concatenate([t[2] for t in base])
        lat1, gap1 = np.concatenate([t[1] for t in other]), np.concatenate([t[2] for t in other])
        for name in sorted(set(names.tolist())):
            m = names == name
            for label, lat, gap in (("original", lat0, gap0), (f"replay{k}", lat1, gap1)):
                if label == "original" and k:
                    continue
                print(f"{name:<12} {int(m.sum()):>7} {label:<8} {lat[m].sum() / 1e6:>12.2f} "
                      f"{gap[m].sum() / 1e6:>11.2f} {np.median(lat[m]):>10.0f} {np.median(gap[m]):>10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
