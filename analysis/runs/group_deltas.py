"""How a group of runs differs from another, per phase and metric, and the gate on it.

`compare A1 A2 A3 -- B1 B2 B3`: each run gives one figure per phase and metric (the same
figures `compare` of single runs gives, deltas.value_of); a group's figure is the median of
its runs', its spread their lowest and highest. The change judged is of B's median against
A's, and it counts for `--fail-if` only when it is past the threshold AND significant: the
groups' figures differ by more than their runs scatter (significance.welch, p < 0.05). A
change past the threshold that the scatter explains is named, not failed.
"""

from __future__ import annotations

import statistics

from iowitness.analysis.runs import deltas, significance


def _median(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _spread(values: list) -> list[float] | None:
    present = [v for v in values if v is not None]
    return [min(present), max(present)] if present else None


def table(groups: tuple[list, list], keys: dict, active_rate, alpha: float = significance.ALPHA) -> list[dict]:
    """Per phase key (label as value): every metric's per-run figures in each group, the
    groups' medians and spreads, the change of the medians and the test of it."""
    out = []
    for key, label in keys.items():
        metrics = []
        for metric in deltas.METRICS:
            a, b = ([deltas.value_of(run, key, metric, active_rate) for run in g] for g in groups)
            ma, mb = _median(a), _median(b)
            change = deltas.change(ma, mb)
            metrics.append({"metric": metric.name, "unit": metric.unit, "values": [a, b],
                            "median": [ma, mb], "spread": [_spread(a), _spread(b)], **change,
                            "test": significance.welch(a, b, alpha).as_dict()})
        out.append({"phase": label, "name": key[0], "rank": key[1],
                    "present": [sum(run.keys.get(key) is not None for run in g) for g in groups],
                    "metrics": metrics})
    return out


def judge(thresholds: list, rows: list[dict], alpha: float = significance.ALPHA) -> list[dict]:
    """Per threshold: the phases whose change crossed it and is significant (hits), those whose
    change crossed it within the runs' scatter (not_significant), those it could not judge,
    and how many it judged.

    A gate fails when ANY phase fails it: with 4 phases each at alpha, identical runs would
    fail it about 4 times as often as one phase. So each phase is held to alpha divided by the
    phases judged (Bonferroni): the gate's false-positive rate stays at most alpha (alpha/2
    for a one-directional threshold), whatever the number of phases."""
    results = []
    for t in thresholds:
        hits: list[dict] = []
        calm: list[dict] = []
        not_judged: list[dict] = []
        judged = 0
        judgeable = [row for row in rows if _why_not(t, row) is None]
        level = alpha / max(1, len(judgeable))
        for row in rows:
            m = next(x for x in row["metrics"] if x["metric"] == t.metric.name)
            why = _why_not(t, row)
            if why is not None:
                not_judged.append({"phase": row["phase"], "why": why})
            else:
                judged += 1
                if t.crossed(m):
                    hit = {"phase": row["phase"], "unit": m["unit"], "baseline": m["median"][0],
                           "value": m["median"][1], "delta": m["delta"], "delta_pct": m["delta_pct"],
                           "p": m["test"]["p"]}
                    (hits if m["test"]["p"] is not None and m["test"]["p"] < level else calm).append(hit)
        results.append({"expression": t.text, "metric": t.metric.name, "crossed": bool(hits), "hits": hits,
                        "not_significant": calm, "not_judged": not_judged, "judged": judged,
                        "alpha_per_phase": level})
    return results


def _why_not(t, row: dict) -> str | None:
    m = next(x for x in row["metrics"] if x["metric"] == t.metric.name)
    if min(row["present"]) == 0:
        return "phase missing in a group"
    if min(m["test"]["n"]) < significance.MIN_RUNS:
        return (f"{min(m['test']['n'])} run(s) with a figure in a group: a test needs "
                f"{significance.MIN_RUNS} or more")
    if (m["delta_pct"] if t.percent else m["delta"]) is None:
        return "a zero baseline has no percentage"
    return None
