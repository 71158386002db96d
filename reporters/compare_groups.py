"""Two groups of runs side by side: per phase and metric, each group's median and spread, the
change of the medians and whether it is more than the runs' scatter (analysis/runs/group_deltas.py).
The same table feeds the terminal and Markdown; --json gives every metric and every run's figure.
"""

from __future__ import annotations

import pandas as pd

from iowitness.reporters import compare

SCHEMA_VERSION = 1   # of compare --json with two groups; docs/schema/compare-groups.schema.json


def run_labels(groups: list[str], sizes: tuple[int, int]) -> list[str]:
    """'A 1', 'A 2', ..., 'B 1', ...: each run named by its group and its place in it."""
    return [f"{name} {i + 1}" for name, size in zip(groups, sizes) for i in range(size)]


def _figure(median, spread, unit: str, n: int) -> str:
    if median is None:
        return "-"
    low, high = spread
    scatter = "" if low == high else f" ({compare.shown(low, unit)}–{compare.shown(high, unit)})"
    return f"{compare.shown(median, unit)}{scatter} n={n}"


def _interval(test: dict, unit: str) -> str:
    if test["low"] is None:
        return "-"
    if test["scale"] == "log":
        return f"{100 * (test['low'] - 1):+.1f}% … {100 * (test['high'] - 1):+.1f}%"
    return f"{compare.signed(test['low'], unit)} … {compare.signed(test['high'], unit)}"


def _verdict(test: dict) -> str:
    if test["p"] is None:
        return f"no test (n={min(test['n'])})"
    return f"{'yes' if test['significant'] else 'no'} (p={test['p']:.2g})"


def changes(groups: list[str], rows: list[dict], metrics: tuple[str, ...]) -> pd.DataFrame:
    """Per phase and metric: each group's median (lowest–highest) and runs, the change of the
    medians, the 95 % interval of the change (of the geometric means: the test's), significant."""
    a, b = groups
    records = []
    for row in rows:
        for m in row["metrics"]:
            if m["metric"] not in metrics:
                continue
            pct = m["delta_pct"]
            records.append({"phase": row["phase"], "metric": m["metric"],
                            a: _figure(m["median"][0], m["spread"][0], m["unit"], m["test"]["n"][0]),
                            b: _figure(m["median"][1], m["spread"][1], m["unit"], m["test"]["n"][1]),
                            "Δ median": "-" if pct is None else f"{pct:+.1f}%",
                            "95% interval": _interval(m["test"], m["unit"]),
                            "significant": _verdict(m["test"])})
    return pd.DataFrame(records)


def to_json(groups: list[str], runs: list, sizes: tuple[int, int], rows: list[dict], judged: list[dict],
            alpha: float) -> str:
    import json

    records = [compare._run_record(r) for r in runs]
    doc = {"schema_version": SCHEMA_VERSION, "kind": "iowitness-compare-groups",
           "test": {"name": "welch-t", "on": "log of each run's figure where all are positive, else the figure",
                    "alpha": alpha, "two_sided": True},
           "groups": [{"label": groups[0], "runs": records[:sizes[0]]},
                      {"label": groups[1], "runs": records[sizes[0]:]}],
           "phases": rows, "fail_if": judged, "failed": any(j["crossed"] for j in judged)}
    return json.dumps(doc, indent=2, allow_nan=False)


def to_html(groups: list[str], runs: list, rows: list[dict], frame: pd.DataFrame, title: str) -> str:
    """One page: the runs, a bar chart of each group's median active throughput per phase, and
    the table of changes the terminal prints."""
    from iowitness.escape import html as esc
    from iowitness.reporters import charts, html

    body = [f"<h1>iowitness compare: {esc(' vs '.join(groups))}</h1>",
            '<p class="lead">Per phase, each group\'s median of its runs\' figures (lowest–highest, n runs), the '
            "change of the medians, the 95 % interval of the change and whether it is more than the runs' "
            "scatter (Welch's t on the logs of the per-run figures; docs/compare-groups.md).</p>",
            '<h2 id="runs">Runs</h2>', html.table(compare.run_table(runs), "runs")]
    shown = rows[:compare.MAX_BAR_PHASES]
    active = [next(m for m in row["metrics"] if m["metric"] == "active") for row in shown]
    if shown:
        values = [[m["median"][0] or 0.0, m["median"][1] or 0.0] for m in active]
        body.append(html.figure(charts.grouped_bars([row["phase"] for row in shown], groups, values,
                                                    "active throughput per phase: median of the runs"), "bars"))
    body += [f'<h2 id="changes">{esc(title)}</h2>', html.table(frame, "changes")]
    return html.page(f"iowitness compare: {' vs '.join(groups)}", "\n".join(body))
