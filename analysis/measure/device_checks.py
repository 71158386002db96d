"""What the device view proves beyond its figures: claim reasons, and the diskstats cross-check.

claim_reasons: whether a claim measured the page cache or the device (device bytes over the
window the benchmark timed), and how it stands against the device's ceiling.
cross_check: the block probe's bytes against /proc/diskstats over the same interval, the
independent source that says the probe saw every request.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness import units
from iowitness.analysis.measure.device import (
    AGREEMENT,
    CACHE_SHARE,
    DEVICE_BOUND_SHARE,
    DEVICE_SHARE,
    Requests,
    pct,
)
from iowitness.analysis.read import device_records


def claim_reasons(claim, rows: pd.DataFrame, table: pd.DataFrame | None, ceiling: dict | None = None,
                  window: str = "calls") -> list[str]:
    """What the device view proves about a claim: page cache or device, and the device's ceiling.

    window: what the benchmark timed ("calls", "+fsync", "+close"); with "calls", the device
    bytes that count are those completed while its data calls ran.
    """
    reasons = []
    if table is not None and not table.empty and len(rows):
        mine = table[table["phase"].isin(rows["phase"]) & table["device"].notna()]
        if len(mine):
            reasons += _source_reasons(rows, mine, window)
    value = claim.bytes_per_s
    if value is None and claim.ops_per_s and len(rows):
        # a rate of calls moves its calls' bytes: ops × the phases' record size
        value = claim.ops_per_s * float(rows["record_size"].max())
    limit = (ceiling or {}).get(claim.direction) if claim.direction in ("read", "write") else None
    if value and limit:
        how = (ceiling or {}).get("source", "given with --device-ceiling")
        if value > limit * (1 + DEVICE_BOUND_SHARE):
            reasons.append(f"claim exceeds the device's measured ceiling: claim {_as_bytes(claim, value)}, ceiling "
                           f"{units.rate(limit)} ({how}): {pct(value / limit)} of what the device can do")
        elif abs(value / limit - 1) <= DEVICE_BOUND_SHARE:
            reasons.append(f"device-bound: claim within {abs(value / limit - 1) * 100:.1f} % of the ceiling "
                           f"({_as_bytes(claim, value)} vs {units.rate(limit)}, {how})")
    return reasons


def _as_bytes(claim, value: float) -> str:
    """The claim as bytes per second; a rate of calls says how it was turned into one."""
    if claim.bytes_per_s is not None:
        return units.rate(value)
    return f"{units.rate(value)} ({claim.ops_per_s:,.0f} ops/s × {units.bytes_(value / claim.ops_per_s)})"


def _source_reasons(rows: pd.DataFrame, mine: pd.DataFrame, window: str) -> list[str]:
    syscall, whole = int(mine["syscall_bytes"].sum()), int(mine["device_bytes"].sum())
    timed = int(mine["calls_device_bytes"].sum()) if window == "calls" else whole
    if not syscall:
        return []
    share = timed / syscall
    where = "while its calls ran" if window == "calls" else "inside the phase"
    operations = set(rows["operation"])
    if operations == {"read"}:
        if share <= CACHE_SHARE:
            return [f"the page cache answered: {syscall:,} bytes read, {timed:,} from the device"]
        if share >= DEVICE_SHARE:
            return [f"the device answered: {syscall:,} bytes read, {timed:,} from the device ({share:.2f}×)"]
        return [f"partly from the page cache: {syscall:,} bytes read, {timed:,} from the device ({pct(share)})"]
    if operations != {"write"}:
        return []
    in_phase = max(0, whole - timed)
    later, after = int(mine["writeback_bytes"].sum()), float(mine["writeback_s"].max())
    flushed = [f"{in_phase:,} by the phase's own fsync/close after its calls" if in_phase else "",
               f"{later:,} written back in the {units.seconds(after)} after the phase" if later else ""]
    flushed = ", ".join(f for f in flushed if f) or "none written back while traced"
    if share <= CACHE_SHARE:
        head = "writes absorbed by the page cache, flushed after the phase" if in_phase + later else \
            "writes absorbed by the page cache"
        return [f"{head}: {syscall:,} bytes written, {timed:,} reached the device {where}; {flushed}"]
    if share >= DEVICE_SHARE:
        return [f"the writes reached the device {where}: {syscall:,} bytes written, {timed:,} device "
                f"bytes ({share:.2f}×)"]
    return [f"writes partly absorbed by the page cache: {syscall:,} bytes written, {timed:,} reached the device "
            f"{where} ({pct(share)}); {flushed}"]


def cross_check(trace) -> pd.DataFrame:
    """Per device: the block probe's totals against /proc/diskstats between two samples.

    From the first sample after the first target file was opened (with no --file, the probe
    starts watching a device at that open) to the last sample. Agreement is on bytes, which the
    device view is built on; request counts are shown too, but differ by design where a write
    carries a cache flush: the probe sees each completion step of the flush sequence, diskstats
    counts the request once (and counts a flush with no data as a write).
    """
    view = trace.meta.get("device_view") or {}
    fields = view.get("diskstats_fields") or []
    samples = [s for s in trace.samples if s.get("diskstats") is not None]
    rows = []
    if not device_records.of(trace).has_block or len(samples) < 2 or not fields:
        return pd.DataFrame(rows)
    opened = trace.files["ts_ns"].dropna()
    # a device seen only when a target on it was opened is compared from the next sample
    later = [s for s in samples if len(opened) and s["ts_ns"] >= int(opened.min())]
    from_start = set(view.get("watched_from_start", []))
    sector = int(view.get("sector_bytes", 512))
    for d in view.get("devices", []):
        key = d["device"]
        span = samples if int(d["dev"]) in from_start or len(later) < 2 else later
        first, last = span[0], span[-1]
        if key not in last["diskstats"]:
            continue
        before = dict(zip(fields, first["diskstats"].get(key, [0] * len(fields))))
        after = dict(zip(fields, last["diskstats"][key]))
        req = Requests.of(trace, int(d["dev"]))
        lo, hi = np.searchsorted(req.complete, [first["ts_ns"], last["ts_ns"]], side="right")
        rd, wr, size = req.read[lo:hi], req.write[lo:hi], req.bytes[lo:hi]
        probe = {"reads": int(rd.sum()), "writes": int(wr.sum()),
                 "read_bytes": int(size[rd].sum()), "write_bytes": int(size[wr].sum())}
        stats = {"reads": after["reads"] - before["reads"], "writes": after["writes"] - before["writes"],
                 "read_bytes": (after["sectors_read"] - before["sectors_read"]) * sector,
                 "write_bytes": (after["sectors_written"] - before["sectors_written"]) * sector}
        # requests in flight at either sample may fall on either side of it
        in_flight = max(before["in_flight"], after["in_flight"]) + 1
        agree = (all(_close(probe[k], stats[k], in_flight * 512 * 1024) for k in ("read_bytes", "write_bytes"))
                 and all(_close(probe[k], stats[k], in_flight) for k in ("reads", "writes")))
        rows.append({"device": d.get("name") or key, "seconds": (last["ts_ns"] - first["ts_ns"]) / 1e9,
                     **{f"probe_{k}": v for k, v in probe.items()}, **{f"diskstats_{k}": v for k, v in stats.items()},
                     "agree": agree})
    return pd.DataFrame(rows)


def _close(a: int, b: int, slack: int) -> bool:
    return abs(a - b) <= max(AGREEMENT * max(a, b), slack)
