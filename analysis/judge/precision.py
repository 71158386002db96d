"""A figure judged to the precision it was printed with: "1.2 GB/s" is anything from 1.15 to
1.25 GB/s, "0.00 ms" anything below 0.005 ms. A claim that fits the trace once its last printed
digit is given its half either way agrees, and says so; "0.00" is not a zero that disagrees with
every figure but a value too small for the digits printed.

The rule (for a claim v printed to a last digit d, h = d / 2, against the window's figure a):
it agrees when [v - h, v + h] meets [a * (1 - tolerance), a * (1 + tolerance)] (for a latency,
widened by latency.ALLOWANCE_S either way, as latency's bands are). Only a claim that disagrees
is looked at again: every other verdict stands, a claim printed with many digits has a
negligible h, and a latency's percentile band (wider than a * (1 ± tolerance)) only makes the
agreement found here the more certain.

The printed text of the value is the claim's extra["printed_value"] (a claims spec's `value`
group, analysis/benchmarks/spec.py); claims without it (IOzone's whole kB/s, fio's JSON, dd's
rate, which its exact bytes and seconds give) are judged as they are.

Example: `half_digit("1.2")` is 0.05, `half_digit("0.00")` 0.005, `half_digit("146k")` 500.0.
"""

from __future__ import annotations

import re

from iowitness.analysis.benchmarks.spec_units import UNITS
from iowitness.analysis.judge.latency import ALLOWANCE_S
from iowitness.analysis.judge.verdict_rules import Verdict, claimed
from iowitness.analysis.measure.figures import fmt

_PRINTED = re.compile(r"^\s*[-+]?(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?\s*([kKmMgG]?)\s*$")
_MULTIPLIERS = {"": 0, "k": 1, "K": 1, "m": 2, "M": 2, "g": 3, "G": 3}


def half_digit(text: str, base: int = 1000) -> float | None:
    """Half the last printed digit of a number as printed (its multiplier applied), or None."""
    m = _PRINTED.match(text or "")
    if not m or not (m.group(1) or m.group(2)):
        return None
    places = len(m.group(2) or "")
    exponent = int(m.group(3) or 0) - places
    return 0.5 * 10.0 ** exponent * base ** _MULTIPLIERS[m.group(4)]


def _in_base(claim, half: float, value: float, kind: str) -> float | None:
    """The half digit in the units of the verdict's figures (bytes/s, ops/s, s/op, s)."""
    if claim.value:
        return half * value / claim.value
    return half * UNITS[claim.unit][1] if claim.unit in UNITS else None


def printed_span(claim, value: float, kind: str) -> tuple[float, float]:
    """How far below and above `value` (in its verdict's units) the figure printed as the claim
    may lie: half its last digit either way, or a whole digit above for a figure cut down
    (IOzone -N's whole microseconds); (0, 0) when the claim has no printed text."""
    half = half_digit(str(claim.extra.get("printed_value") or ""), int(claim.extra.get("multiplier_base") or 1000))
    h = _in_base(claim, half, value, kind) if half else None
    if not h:
        return 0.0, 0.0
    return (0.0, 2 * h) if claim.extra.get("printed_truncated") else (h, h)


def fit_words(value: float, low: float, high: float, printed: tuple[float, float], tolerance: float,
              kind: str) -> str:
    """How a claim that fits a bracket [low, high] fits it: itself, as printed (printed_span), or
    only within the tolerance; never "within" a bracket the printed value lies outside."""
    below, above = printed
    if low <= value <= high:
        return "lies within"
    if value - below <= high and value + above >= low:
        return f"lies within it as printed (from {fmt(value - below, kind)} to {fmt(value + above, kind)})"
    return f"lies within it to {tolerance:.0%}"


def apply(verdicts: list[Verdict], tolerance: float) -> None:
    """Each disagreeing claim that fits to its printed precision: agrees, with the reason."""
    for verdict in verdicts:
        claim = verdict.claim
        text = claim.extra.get("printed_value")
        # a claim the seam around its calls made CANNOT JUDGE (analysis/judge/seam.py) may still fit as printed
        seam = verdict.verdict == "cannot judge" and bool(verdict.reasons) and \
            verdict.reasons[0].startswith("gap in user space")
        if (verdict.verdict != "disagrees" and not seam) or not text or claim.extra.get("requests"):
            continue
        value, kind = claimed(claim)
        half = half_digit(str(text), int(claim.extra.get("multiplier_base") or 1000))
        active = verdict.figures.get(verdict.window)
        if value is None or not half or active is None or active != active:
            continue
        h = _in_base(claim, half, value, kind)
        if h is None:
            continue
        allowance = ALLOWANCE_S if kind == "latency" else 0.0
        low, high = active * (1 - tolerance) - allowance, active * (1 + tolerance) + allowance
        # a figure cut down to its last digit (IOzone's whole microseconds) stands for up to a
        # whole digit above it, never below
        cut = bool(claim.extra.get("printed_truncated"))
        below, above = (0.0, 2 * h) if cut else (h, h)
        if value - below <= high and value + above >= low:
            verdict.verdict = "agrees"
            # in the claim's own unit: "1.25 to 1.35 GB/s"
            shown, per_unit = f"{text.strip()} {claim.unit}", h / half
            if cut:
                span, how = f"{claim.value:g} to {claim.value + 2 * half:g} {claim.unit}", "its last digit cut down"
            else:
                span = (f"below {half:g} {claim.unit}" if value == 0 else
                        f"{claim.value - half:g} to {claim.value + half:g} {claim.unit}")
                how = "half its last digit either way"
            verdict.reasons.insert(0, f"judged to its printed precision: {shown!r} is {span} ({how}), "
                                      f"which meets the {verdict.window} figure {fmt(active, kind)} "
                                      f"(= {active / per_unit:.4g} {claim.unit}) within {tolerance:.0%}")

