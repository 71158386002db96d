"""Everything `iowitness report` shows about a trace: phases with names, groups, outliers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from iowitness.analysis import benchmarks, groups, phases as phase_module

OUTLIERS_PER_PHASE = 5


@dataclass
class Report:
    phases: pd.DataFrame     # one row per phase
    groups: pd.DataFrame     # one row per group of concurrent phases
    outliers: pd.DataFrame   # the slowest calls of each phase
    assigned: pd.DataFrame   # per event: span, phase (-1: none), operation
    benchmark: str | None


def outliers(events: pd.DataFrame, table: pd.DataFrame, per_phase: int = OUTLIERS_PER_PHASE) -> pd.DataFrame:
    """The slowest data calls of each phase, and the share of the phase's time each took."""
    data = events[events["data"].to_numpy()]
    # only calls at or above their phase's 99th percentile can be among its slowest few
    # (all calls of a phase too small for that to leave enough)
    by_phase = table.set_index("phase")
    p99_ns = by_phase["lat_p99_us"].reindex(data["phase"]).to_numpy() * 1e3
    small = by_phase["ops"].reindex(data["phase"]).to_numpy() < 100 * per_phase
    candidates = data[(data["latency_ns"].to_numpy() >= np.floor(p99_ns)) | small]
    top = candidates.sort_values(["phase", "latency_ns"], ascending=[True, False], kind="stable")
    top = top[top.groupby("phase").cumcount() < per_phase]
    duration_ns = by_phase["duration_s"] * 1e9
    first = by_phase["data_first_ns"]
    return pd.DataFrame({
        "phase": top["phase"].to_numpy(),
        "syscall": top["syscall"].astype(str).to_numpy(),
        "tid": top["tid"].to_numpy(),
        "at_s": (top["start_ns"].to_numpy() - first.reindex(top["phase"]).to_numpy()) / 1e9,
        "offset": top["offset"].to_numpy(),
        "bytes": top["ret"].to_numpy(),
        "latency_us": top["latency_ns"].to_numpy() / 1e3,
        "share": top["latency_ns"].to_numpy() / duration_ns.reindex(top["phase"]).where(lambda d: d > 0).to_numpy(),
    })


def data_calls(events: pd.DataFrame, assigned: pd.DataFrame) -> pd.DataFrame:
    """The columns later stages need, per event, with `data` true for counted reads and writes."""
    kind = phase_module.call_kinds(events["syscall"])
    data = ((kind == phase_module.READ) | (kind == phase_module.WRITE)) & ~assigned["warmup"].to_numpy()
    ret = events["ret"].to_numpy()
    return pd.DataFrame({"phase": assigned["phase"].to_numpy(), "data": data,
                         "bytes": np.where(data & (ret > 0), ret, 0),
                         "end_ns": events["end_ns"].to_numpy(), "start_ns": events["start_ns"].to_numpy(),
                         "latency_ns": events["latency_ns"].to_numpy(), "tid": events["tid"].to_numpy(),
                         "offset": events["offset"].to_numpy(), "ret": ret, "syscall": events["syscall"]})


def build(trace) -> Report:
    events = trace.events
    assigned = phase_module.assign(events)
    table = phase_module.table(events, assigned)
    flat = data_calls(events, assigned)
    command = trace.meta.get("command") or []
    benchmark = trace.meta.get("benchmark") or benchmarks.recognise(command)
    # IOzone -t N runs N children per test: a group of N even when a short test's children
    # do not overlap in time
    members = benchmarks.iozone_children(command) if benchmark == "iozone" else None
    table.insert(1, "group", groups.assign(table, members) if len(table) else pd.Series(dtype=np.int64))
    group_table = groups.table(table, flat)
    table.insert(2, "benchmark_name", None)
    if benchmark == "iozone" and len(table):
        units = table.sort_values("data_first_ns").groupby("group", sort=False).agg(
            operation=("operation", lambda ops: ops.iloc[0] if len(set(ops)) == 1 else "mixed"))
        named = dict(zip(units.index, benchmarks.name_iozone(units, command)))
        table["benchmark_name"] = table["group"].map(named)
    elif benchmark == "fio":
        table["benchmark_name"] = benchmarks.name_fio(table, command, trace.meta.get("pid"))
    elif benchmark == "dd":
        table["benchmark_name"] = benchmarks.name_dd(table, command)
    return Report(table, group_table, outliers(flat, table), assigned, benchmark)
