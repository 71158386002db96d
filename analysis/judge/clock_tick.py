"""A benchmark whose clock ticks coarsely: its figures judged to its clock's tick.

postmark times with time(): whole seconds. A test of 431 ms it prints as "1 seconds total", and
its rates as bytes over that 1 s. Each of its two clock reads is truncated to its tick, so the
elapsed time it computes lies within one tick of the true one either way. A spec says the tick
with `[benchmark] clock_seconds`.

fio counts a job's runtime in whole milliseconds, rounded up (backend.c, update_runtime: "(elapsed_us
+ 999) / 1000"), and prints its bandwidth as the bytes over that runtime: 4 MiB read in 14.0 ms of
calls is "267MiB/s (4096KiB/15msec)", 7 % below the calls' rate. Its parser says so in each rate
claim (extra clock_s, clock_rounds "up").

A claim that disagrees then agrees when some elapsed time its tick allows (its own, for a time;
bytes or operations over the claimed rate, for a rate) is within the tolerance of the trace's
window, and says so.
"""

from __future__ import annotations

from iowitness import units

SPEC_SAID = "spec clock_seconds"
TOO_SHORT = "too short to tell why"   # verdict_rules.settle's words


def fits(implied: float, window: float, extra: dict, tolerance: float) -> bool:
    """Whether an elapsed time a claim implies (s) may be the trace's `window` (s) as read by the
    benchmark's clock, whose tick (and rounding) its extra says (clock_s, clock_rounds)."""
    tick = float(extra.get("clock_s") or 0.0)
    # a clock read truncated at both ends is off by under a tick either way; one rounded up
    # (fio's runtime) is at most a tick above the true elapsed time, never below it
    shortest = max(implied - tick, 0.0)
    longest = implied if extra.get("clock_rounds") == "up" else implied + tick
    # the ratio window / elapsed within the tolerance: elapsed from window / (1 + t) to window / (1 - t)
    return shortest <= window / (1 - tolerance) and longest >= window / (1 + tolerance)


def apply(verdicts: list, phases, tolerance: float) -> None:
    """Each claim with a clock tick (extra clock_s) that disagrees, or cannot be judged for a phase
    too short, and fits to that tick: agrees."""
    for verdict in verdicts:
        tick = verdict.claim.extra.get("clock_s")
        # a phase "too short to tell why" is told why when the tick covers it
        too_short = verdict.verdict == "cannot judge" and verdict.reasons and \
            verdict.reasons[0].endswith(TOO_SHORT)
        if not (verdict.verdict == "disagrees" or too_short) or not tick or not verdict.phases or \
                verdict.kind not in ("ops", "bytes", "elapsed"):
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
        if fits(implied, window, verdict.claim.extra, tolerance):
            if too_short:
                verdict.reasons.pop(0)
            verdict.verdict = "agrees"
            said = verdict.claim.extra.get("clock_said", SPEC_SAID)
            verdict.reasons.insert(0, f"judged to its clock's tick: the claim implies {units.seconds(implied)} of "
                                      f"elapsed time, within the benchmark's clock tick of {units.seconds(tick)} "
                                      f"({said}) of the trace's {units.seconds(window)}: a clock that "
                                      "coarse cannot time this test closer")
