"""The block requests one by one, as the tools of the block layer show them: a line per request
(bcc's biosnoop: `show --block`), a log2 latency histogram per device and phase (biolatency
-D), the iostat -x columns per interval (`report --interval 1s`) and the queue depth over time
(for the Perfetto export).

Inputs: the trace's block requests as analysis/read/device_records.py reads them (block by
block, once; each request once: a flush sequence's second completion of the same request is
left out, as /proc/diskstats counts it once) and the phase table (for the phase each request
belongs to). The histograms and the intervals are counted from the device's requests without a
row per request; the listings (`show --block`, the Perfetto tracks) print every request, and
their table (`requests`) holds a row per request.

Latency is issue to complete (block_rq_issue to block_rq_complete: the device's time, what
biolatency and biosnoop show by default); `queue_us` is start to issue (the time in the
scheduler queue, biolatency -Q adds it). A request the kernel did not time from its issue
(issue_ns 0) counts from its start.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.measure import device
from iowitness.analysis.read import device_records
from iowitness.analysis.read.device_records import DISCARD_OPS
from iowitness.analysis.read.event_lines import first_start
from iowitness.collector.format.traceformat import dev_name
from iowitness.escape import terminal

OP_NAMES = {0: "read", 1: "write", 2: "flush", 3: "discard", 5: "secure-erase", 9: "write-zeroes"}
HIST_WIDTH = 40   # bcc's star column
REQUEST_COLUMNS = ["complete_ns", "start_ns", "issue_ns", "dev", "device", "sector", "bytes", "op", "latency_ns",
                   "queue_ns", "tgid", "tid", "comm", "error", "phase", "phases"]


def _issued(columns: dict) -> tuple[np.ndarray, np.ndarray]:
    """(issued, started) of a device's requests: the issue, or else the start (the completion,
    when the kernel timed neither), never after the completion; the start never after the issue."""
    complete, start, issue = columns["complete_ns"], columns["start_ns"], columns["issue_ns"]
    issued = np.where(issue > 0, np.minimum(issue, complete), start)
    return issued, np.minimum(start, issued)


def requests(trace, phases: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per block request, in order of completion: times (ns, the trace's clock), device
    name, sector, bytes, op, latency_ns (issue to complete), queue_ns (start to issue), the
    submitter (tgid, tid, comm) and the phase it belongs to (`phase`: a phase number, -1 for
    none; `phases`: every candidate, "3,4" when several phases' windows hold it and no
    submitter tells which). A row per request: for the listings of every request."""
    records = device_records.of(trace, listing=True)
    devices = records.devices if records.has_block else []
    if not devices:
        return pd.DataFrame(columns=REQUEST_COLUMNS)
    names = device.block_dev_names(trace)
    each = [records.requests(d) for d in devices]
    block = {n: np.concatenate([c[n] for c in each]) for n in each[0]}
    block["dev"] = np.repeat(np.array(devices, dtype=np.int64), [len(c["complete_ns"]) for c in each])
    order = np.lexsort((block["row"], block["complete_ns"]))   # by completion, ties in file order
    block = {n: c[order] for n, c in block.items()}
    complete = block["complete_ns"]
    issued, started = _issued(block)
    op = block["op"].astype(np.int64)
    rows = pd.DataFrame({
        "complete_ns": complete, "start_ns": started, "issue_ns": issued, "dev": block["dev"],
        "device": _named(block["dev"], lambda d: names.get(int(d)) or dev_name(int(d))),
        "sector": block["sector"], "bytes": block["bytes"],
        "op": _named(op, lambda o: OP_NAMES.get(int(o), f"op{o}")),
        "latency_ns": complete - issued, "queue_ns": issued - started,
        "tgid": block["tgid"].astype(np.int64), "tid": block["tid"].astype(np.int64),
        "comm": _named(np.ascontiguousarray(block["comm"]).view(f"S{block['comm'].shape[1]}")[:, 0],
                       lambda c: c.split(b"\0", 1)[0].decode("utf-8", "replace")),
        "error": block["error"],
    })
    rows["phase"], found = _phases_of(complete, block["tid"].astype(np.int64), phases)
    rows["phases"] = _listed(rows["phase"].to_numpy(), found, complete, phases)
    return rows


def _named(values: np.ndarray, name_of) -> np.ndarray:
    """name_of(v) for each value, called once per distinct value (a few devices, ops, programs)."""
    distinct, codes = np.unique(values, return_inverse=True)
    return np.array([name_of(v) for v in distinct], dtype=object)[codes.reshape(-1)]


def _windows(phases: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each phase's number, thread and window: first call to the end of its last (fsync and close
    included)."""
    lo = phases["first_ns"].to_numpy(np.int64)
    hi = np.maximum.reduce([phases[c].to_numpy(np.int64) for c in ("last_ns", "sync_end_ns", "close_end_ns")])
    return phases["phase"].to_numpy(np.int64), phases["tid"].to_numpy(np.int64), lo, hi


def _phases_of(complete: np.ndarray, tid: np.ndarray, phases: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray]:
    """Each request's phase (`complete`: completions, sorted; `tid`: submitters): among the phases
    whose window holds its completion, the one whose thread submitted it; else the only one;
    else none (-1). And how many phases' windows hold it."""
    n = len(complete)
    phase = np.full(n, -1, np.int64)
    found = np.full(n, 0, np.int64)      # candidates so far
    owned = np.zeros(n, dtype=bool)
    if phases is None or phases.empty:
        return phase, found
    for p, ptid, lo, hi in zip(*_windows(phases)):
        a, b = int(np.searchsorted(complete, lo, side="left")), int(np.searchsorted(complete, hi, side="right"))
        if a == b:
            continue
        span = slice(a, b)
        mine = tid[span] == ptid
        take = ~owned[span] & (mine | (found[span] == 0))
        phase[span] = np.where(take, p, phase[span])
        owned[span] |= mine
        found[span] += 1
    # several candidates, none the submitter: no one phase
    phase[(found > 1) & ~owned] = -1
    return phase, found


def _listed(phase: np.ndarray, found: np.ndarray, complete: np.ndarray, phases: pd.DataFrame | None) -> list[str]:
    """Each request's phase as listed: its number, "-" for none, or every candidate ("3,4") when
    several phases' windows hold it and none is its submitter's."""
    if phases is None or phases.empty:
        return ["-"] * len(phase)
    listed = np.where(phase >= 0, phase.astype(str), "-").astype(object)
    unsure = np.flatnonzero((found > 1) & (phase < 0))
    if len(unsure):
        numbers, _, lo, hi = _windows(phases)
        a = np.searchsorted(complete, lo, side="left")
        b = np.searchsorted(complete, hi, side="right")
        for k in unsure:
            listed[k] = ",".join(str(p) for p, s, e in zip(numbers, a, b) if s <= k < e)
    return listed.tolist()


# ---- show --block: a line per request, as biosnoop prints them -----------------------------------

HEADER = (f"{'time (s)':>12}  {'process':<16} {'pid/tid':<13} {'device':<10} {'op':<7} {'sector':>12} "
          f"{'bytes':>9} {'queue (µs)':>11} {'latency (µs)':>13}  phase")


def lines(trace, phases: pd.DataFrame | None):
    """The text lines of `show --block` (HEADER first): one per request in order of
    completion; time: its completion, in seconds since the recording began."""
    rows = requests(trace, phases)
    origin = first_start(trace.meta, pd.DataFrame({"start_ns": rows["start_ns"].iloc[:1]}))
    yield HEADER
    for r in rows.itertuples(index=False):
        error = f"  error {r.error}" if r.error else ""
        yield (f"{(r.complete_ns - origin) / 1e9:12.6f}  {terminal(r.comm[:16]):<16} {f'{r.tgid}/{r.tid}':<13} "
               f"{r.device[:10]:<10} {r.op[:7]:<7} {r.sector:>12} {r.bytes:>9} {r.queue_ns / 1e3:>11.1f} "
               f"{r.latency_ns / 1e3:>13.1f}  {r.phase if r.phase >= 0 else r.phases}{error}")


# ---- biolatency: log2 histograms per device and phase -------------------------------------------

def log2_slots(latency_us: np.ndarray) -> np.ndarray:
    """bcc's slot of each value: floor(log2(v)), with 0 and 1 in slot 0."""
    v = np.maximum(np.asarray(latency_us, dtype=np.int64), 1)
    return np.floor(np.log2(v)).astype(np.int64)


def histograms(trace, phases: pd.DataFrame | None) -> list[dict]:
    """Per (device, phase) of the trace's requests, the counts per log2 slot of the issue-to-complete
    latency in µs (whole µs, as biolatency counts). phase -1: requests of no one phase.
    Counted device by device from the requests' columns: no row per request."""
    records = device_records.of(trace)
    names = device.block_dev_names(trace) if records.has_block else {}
    found: dict[tuple[str, int], dict] = {}
    for dev in records.devices if records.has_block else []:
        columns = records.requests(dev)
        if not len(columns["complete_ns"]):
            continue
        issued, _ = _issued(columns)
        us = (columns["complete_ns"] - issued) // 1000
        slots = log2_slots(us)
        phase, _ = _phases_of(columns["complete_ns"], columns["tid"].astype(np.int64), phases)
        name = names.get(int(dev)) or dev_name(int(dev))
        for p in np.unique(phase).tolist():
            where = phase == p
            counts = np.bincount(slots[where])
            h = found.setdefault((name, int(p)), {"device": name, "phase": int(p), "requests": 0,
                                                  "counts": np.zeros(0, np.int64), "max_us": 0})
            size = max(len(h["counts"]), len(counts))
            h["counts"] = np.pad(h["counts"], (0, size - len(h["counts"]))) + np.pad(counts, (0, size - len(counts)))
            h["requests"] += int(np.count_nonzero(where))
            h["max_us"] = max(h["max_us"], int(us[where].max()))
    out = [{**h, "counts": h["counts"].tolist()} for h in found.values()]
    return sorted(out, key=lambda h: (h["device"], h["phase"] < 0, h["phase"]))


def log2_text(counts: list[int], unit: str = "usecs") -> str:
    """The histogram as bcc's print_log2_hist draws it (rows from slot 0 to the last non-empty)."""
    top = max(counts) if counts else 0
    lines = [f"{unit:>10}{'':<14} : count     distribution"]
    for i, value in enumerate(counts):
        low, high = (1 << (i + 1)) >> 1, (1 << (i + 1)) - 1
        if low == high:
            low -= 1
        stars = int(HIST_WIDTH * value / top) if top else 0
        lines.append(f"{low:>10} -> {high:<10} : {value:<8} |{'*' * stars:<{HIST_WIDTH}}|")
    return "\n".join(lines)


# ---- iostat -x per interval ------------------------------------------------------------------

INTERVAL_COLUMNS = ["device", "t_s", "r/s", "w/s", "rkB/s", "wkB/s", "areq-sz", "rareq-sz", "wareq-sz", "r_await",
                    "w_await", "d/s", "dkB/s", "dareq-sz", "d_await", "f/s", "f_await", "aqu-sz", "%util"]
FLUSH_OP = 2


class _Others:
    """The discards and flushes of one device by completion (iostat's d/s, dkB/s, dareq-sz,
    d_await, f/s, f_await), each request once; `req`: the device's device.Requests, `op`: its ops."""

    def __init__(self, req: device.Requests, op: np.ndarray):
        self.complete = req.complete
        self.wait_ms = (req.complete - req.start) / 1e6
        self.bytes = req.bytes
        self.discard = np.isin(op, DISCARD_OPS)
        self.flush = op == FLUSH_OP

    def window(self, a: int, b: int) -> dict:
        lo, hi = np.searchsorted(self.complete, [a, b], side="left")
        d, f = self.discard[lo:hi], self.flush[lo:hi]
        wait = self.wait_ms[lo:hi]
        return {"discards": int(d.sum()), "discard_bytes": int(self.bytes[lo:hi][d].sum()), "flushes": int(f.sum()),
                "d_await_ms": float(wait[d].mean()) if d.any() else 0.0,
                "f_await_ms": float(wait[f].mean()) if f.any() else 0.0}


def intervals(trace, width_ns: int) -> pd.DataFrame:
    """Per device, per interval of `width_ns` from the recording's start to the last completion,
    the columns iostat -x prints for the same interval (device.Requests.window: every request
    on the device, the benchmark's or not, as iostat counts them). t_s: the interval's start,
    seconds since the recording began; areq-sz (all, reads, writes) in kB, awaits in ms, %util in
    percent; d/s, dkB/s, dareq-sz, d_await the discards, f/s and f_await the flushes (iostat -x's columns of the same
    names; merges, rrqm/s and wrqm/s, are not recorded: the probe sees requests, not bios)."""
    records = device_records.of(trace)
    each = {d: records.requests(d) for d in (records.devices if records.has_block else [])}
    each = {d: c for d, c in each.items() if len(c["complete_ns"])}
    if not each or width_ns <= 0:
        return pd.DataFrame(columns=INTERVAL_COLUMNS)
    names = device.block_dev_names(trace)
    first = min(int(c["complete_ns"][0]) for c in each.values())
    origin = first_start(trace.meta, pd.DataFrame({"start_ns": [first]}))
    out: list[dict] = []
    for dev, columns in each.items():
        reqs = device.Requests(columns)
        others = _Others(reqs, columns["op"])
        if not len(reqs.complete):
            continue
        end = int(reqs.complete.max())
        count = max(1, -(-(end - origin) // width_ns))
        name = names.get(int(dev)) or dev_name(int(dev))
        for k in range(count):
            a = origin + k * width_ns
            w, o, seconds = reqs.window(a, a + width_ns), others.window(a, a + width_ns), width_ns / 1e9
            out.append({"device": name, "t_s": k * seconds, "r/s": w["reads"] / seconds,
                        "w/s": w["writes"] / seconds, "rkB/s": w["read_Bps"] / 1024,
                        "wkB/s": w["write_Bps"] / 1024,
                        "areq-sz": w["areq_bytes"] / 1024 if w["reads"] + w["writes"] else 0.0,
                        "rareq-sz": w["read_bytes"] / w["reads"] / 1024 if w["reads"] else 0.0,
                        "wareq-sz": w["write_bytes"] / w["writes"] / 1024 if w["writes"] else 0.0,
                        "r_await": w["r_await_ms"] if w["reads"] else 0.0,
                        "w_await": w["w_await_ms"] if w["writes"] else 0.0,
                        "d/s": o["discards"] / seconds, "dkB/s": o["discard_bytes"] / seconds / 1024,
                        "dareq-sz": o["discard_bytes"] / o["discards"] / 1024 if o["discards"] else 0.0,
                        "d_await": o["d_await_ms"],
                        "f/s": o["flushes"] / seconds, "f_await": o["f_await_ms"],
                        "aqu-sz": w["aqu_sz"], "%util": 100 * w["util"],
                        "read_bytes": w["read_bytes"], "write_bytes": w["write_bytes"],
                        "reads": w["reads"], "writes": w["writes"], "discards": o["discards"],
                        "discard_bytes": o["discard_bytes"], "flushes": o["flushes"]})
    table = pd.DataFrame(out)
    return table


def queue_depth(rows: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per device, the requests in flight (start to complete) as a step series: (times, depth
    from that time on), one point per distinct time."""
    out = {}
    for name, part in rows.groupby("device", sort=False):
        t = np.concatenate([part["start_ns"].to_numpy(np.int64), part["complete_ns"].to_numpy(np.int64)])
        step = np.concatenate([np.ones(len(part), np.int64), -np.ones(len(part), np.int64)])
        order = np.lexsort((step, t))    # at a tie, the completion first
        t, depth = t[order], np.cumsum(step[order])
        last = np.r_[t[1:] != t[:-1], True]
        out[str(name)] = (t[last], depth[last])
    return out
