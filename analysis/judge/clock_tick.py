"""A benchmark whose clock ticks coarsely: its figures judged to its clock's tick.

postmark times with time(): whole seconds. A test of 431 ms it prints as "1 seconds total", and
its rates as bytes over that 1 s. Each of its two clock reads is truncated to its tick, so the
elapsed time it computes lies within one tick of the true one either way. A spec says the tick
with `[benchmark] clock_seconds`; a claim that disagrees then agrees when the elapsed time it
implies (its own, for a time; bytes or operations over the claimed rate, for a rate) lies within
one tick of the trace's window, and says so.
"""

from __future__ import annotations

from iowitness import units


def apply(verdicts: list, phases) -> None:
    """Each disagreeing claim of a spec with clock_seconds that fits to its clock's tick: agrees."""
    for verdict in verdicts:
        tick = verdict.claim.extra.get("clock_s")
        if verdict.verdict != "disagrees" or not tick or not verdict.phases or verdict.kind not in (
                "ops", "bytes", "elapsed"):
            continue
        rows = phases[phases["phase"].isin(verdict.phases)]
        if rows.empty:
            continue
        window = float(rows["data_last_ns"].max() - rows["data_first_ns"].min()) / 1e9
        if verdict.kind == "elapsed":
            implied = float(verdict.claim.extra.get("seconds") or 0.0)
        elif verdict.ratio:
            # the claim is the same count over its own elapsed time: ratio = window / implied
            implied = window / verdict.ratio
        else:
            continue
        if abs(implied - window) < tick:
            verdict.verdict = "agrees"
            verdict.reasons.insert(0, f"judged to its clock's tick: the claim implies {units.seconds(implied)} of "
                                      f"elapsed time, within the benchmark's clock tick of {units.seconds(tick)} "
                                      f"(spec clock_seconds) of the trace's {units.seconds(window)}: a clock that "
                                      "coarse cannot time this test closer")
