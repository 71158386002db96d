"""Several runs side by side: per phase name, claim, active, ratio and latency p99, one column per run.

A phase is matched across runs by its name as the terminal report prints it and its rank
among the phases of that name (IOzone -t's children, an -a sweep's file and record sizes, in
the order the benchmark ran them): the first "write" of one run is the first "write" of the
other, whatever their record sizes (comparing two record sizes is a use of compare; each
column shows its record size).
The same tables, and the changes against the first run (deltas.py, delta_table here), feed
the terminal, Markdown and HTML forms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from iowitness import units
from iowitness.reporters import tables

MAX_BAR_PHASES = 40      # phase names in the throughput bar chart
MAX_CDF_PHASES = 12      # phase names that get an overlaid latency chart
METRICS = ("record", "claim", "active", "ratio", "verdict", "latency p99", "wall")


@dataclass
class Run:
    label: str
    trace: object
    report: object
    verdicts: list | None
    keys: dict = field(default_factory=dict)     # phase key -> phase number
    by_phase: object = None                      # the phase table indexed by phase number

    def __post_init__(self):
        self.by_phase = self.report.phases.set_index("phase")
        seen: dict[tuple, int] = {}
        for r in self.report.phases.sort_values("data_first_ns", kind="stable").itertuples():
            name = tables.phase_label(r)
            k = seen.get(name, 0)
            seen[name] = k + 1
            self.keys[(name, k)] = int(r.phase)

    def verdict_of(self, phase: int):
        return next((v for v in self.verdicts or [] if v.phases and v.phases[0] == phase), None)


def key_label(key: tuple, repeated: bool) -> str:
    name, k = key
    return name + (f" #{k + 1}" if repeated else "")


def ordered_keys(runs: list[Run]) -> list[tuple]:
    """Phase keys in the first run's time order, then those only later runs have."""
    keys: dict[tuple, None] = {}
    for run in runs:
        keys.update(dict.fromkeys(run.keys))
    return list(keys)


def labels(runs: list[Run]) -> dict[tuple, str]:
    keys = ordered_keys(runs)
    repeated = {n for n, k in keys if k > 0}
    return {key: key_label(key, key[0] in repeated) for key in keys}


def cells(run: Run, key: tuple) -> dict[str, str]:
    """The metrics of one phase of one run, as people read them."""
    phase = run.keys.get(key)
    if phase is None:
        return {m: "—" for m in METRICS} | {"verdict": "no such phase"}
    row = run.by_phase.loc[phase]
    v = run.verdict_of(phase)
    return {
        "record": units.bytes_(row["record_size"]),
        "claim": tables.claimed_value(v.claim) if v else "no claim",
        "active": tables.active_value(v) + (f" ({v.window})" if v and v.figures else "") if v
        else units.rate(row["wall_Bps"]) + " (wall)",
        "ratio": f"{v.ratio:.3f}" if v and v.ratio is not None else "-",
        "verdict": v.verdict if v else "-",
        "latency p99": units.latency(row["lat_p99_us"]),
        "wall": units.rate(row["wall_Bps"]),
    }


def phase_tables(runs: list[Run]) -> list[tuple[str, pd.DataFrame]]:
    """One table per phase name: a row per metric, a column per run."""
    out = []
    for key, label in labels(runs).items():
        columns = {run.label: cells(run, key) for run in runs}
        frame = pd.DataFrame({"": list(METRICS), **{name: [c[m] for m in METRICS] for name, c in columns.items()}})
        out.append((label, frame))
    return out


def run_table(runs: list[Run]) -> pd.DataFrame:
    """What each run was: command, file system, device, events, lost events."""
    rows = []
    for run in runs:
        meta = dict(zip(*tables.run_metadata(run.trace).T.to_numpy()))
        rows.append({"run": run.label, "trace": meta["trace"], "command": meta["command"],
                     "file system": meta["file system"], "device": meta["device"], "phases": len(run.report.phases),
                     "events": meta["events"], "lost events": meta["lost events"]})
    return pd.DataFrame(rows)


def unique_labels(given: list[str] | None, traces: list) -> list[str]:
    """--label values in order, else each trace's file system and file name; made distinct."""
    names = list(given or []) + [tables.label_of(t) for t in traces[len(given or []):]]
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def active_rate(run: Run, key: tuple) -> float:
    phase = run.keys.get(key)
    if phase is None:
        return float("nan")
    v = run.verdict_of(phase)
    if v and v.figures and v.kind == "bytes" and v.window in v.figures:
        return float(v.figures[v.window])
    return float(run.by_phase.at[phase, "wall_Bps"])


SCHEMA_VERSION = 1   # of compare --json; docs/compare.schema.json describes it (a test validates against it)


def _run_record(run: Run) -> dict:
    meta = run.trace.meta
    files = [f for f in meta.get("files") or [] if isinstance(f, dict)]
    return {"label": run.label, "trace": meta.get("path"), "command": meta.get("command"),
            "host": meta.get("host"), "benchmark": run.report.benchmark,
            "file_systems": sorted({str(f["fs_type"]) for f in files if f.get("fs_type")}),
            "phases": int(len(run.report.phases)), "events": int(run.trace.event_count),
            "lost_events": int(run.trace.lost)}


def to_json(runs: list[Run], rows: list[dict], judged: list[dict]) -> str:
    """compare --json: the runs, every phase's metrics with their changes against the first run,
    and the --fail-if results."""
    import json

    phases = [{**row, "verdicts": [_verdict_cell(run, row) for run in runs]} for row in rows]
    doc = {"schema_version": SCHEMA_VERSION, "kind": "iowitness-compare", "baseline": runs[0].label,
           "runs": [_run_record(r) for r in runs], "phases": phases,
           "fail_if": judged, "failed": any(j["crossed"] for j in judged)}
    return json.dumps(doc, indent=2, allow_nan=False)


def _verdict_cell(run: Run, row: dict) -> str | None:
    phase = run.keys.get((row["name"], row["rank"]))
    v = run.verdict_of(phase) if phase is not None else None
    return v.verdict if v else None


def signed(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    text = shown(abs(value), unit)
    return ("+" if value > 0 else "-" if value < 0 else "±") + text


def shown(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "B/s":
        return units.rate(value)
    if unit == "us":
        return units.latency(value)
    if unit == "s":
        return units.seconds(value)
    if unit == "B":
        return units.bytes_(value)
    return f"{value:,.0f}" if unit == "" else f"{value:,.1f}{unit[1:]}"


# under the changes table in Markdown and HTML (the terminal's columns say it with Δ and Δ%)
CHANGES_NOTE = ("Per phase, the first run's figure, then each later run's figure, its change (Δ) and its "
                "change in percent (Δ%); compare --json gives every metric.")


def changes_title(runs: list[Run]) -> str:
    """The changes table's title, with the runs whose recording lost events: their figures count
    only the calls recorded (a --timing fast replay at 2 M calls/s outran its collector, and its
    phase's throughput read -75 % where the calls issued made it -49 %), said where they are read."""
    lossy = [f"{run.label} lost {run.trace.lost:,} events" for run in runs if run.trace.lost]
    said = f" ({'; '.join(lossy)}: figures of the calls recorded only)" if lossy else ""
    return f"changes against {runs[0].label}{said}"


def delta_table(runs: list[Run], rows: list[dict], metrics: tuple[str, ...]) -> pd.DataFrame:
    """The changes as people read them (terminal, Markdown and HTML alike): per phase and
    metric, the baseline's figure, then each later run's figure with its change, absolute and
    in percent. Metrics of different units share a column, so each cell carries its unit."""
    records = []
    for row in rows:
        for m in row["metrics"]:
            if m["metric"] not in metrics:
                continue
            record = {"phase": row["phase"], "metric": m["metric"], runs[0].label: shown(m["values"][0], m["unit"])}
            for i, run in enumerate(runs[1:], start=1):
                pct = m["delta_pct"][i]
                record[run.label] = shown(m["values"][i], m["unit"])
                record[f"Δ {run.label}"] = signed(m["delta"][i], m["unit"])
                record[f"Δ% {run.label}"] = "-" if pct is None else f"{pct:+.1f}%"
            records.append(record)
    return pd.DataFrame(records)
