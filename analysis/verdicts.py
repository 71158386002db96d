"""Claim against active measurement: a verdict per claim, with the reasons the trace proves.

For each claim the matching phase (or group of concurrent phases) gives several active
figures, because benchmarks time different things:

  calls     first data call's start to last data call's end
  +fsync    the same, up to the end of the phase's last fsync/fdatasync
  +close    the same, up to the end of its close
  busy      bytes over the time spent inside the data calls only (what the seed study's
            DTrace script summed, and why its figures came out higher than IOzone's)
  stonewall for concurrent phases whose benchmark stops counting when the first one ends
            (IOzone's throughput mode): each member's bytes done by then, over its time to then

The window is the figure the benchmark most likely timed, as its own flags say (IOzone -e
adds the fsync after the last write, -c the close; dd with conv=fdatasync its sync). A claim
agrees when it is within the tolerance of the window figure. When it is not, it is explained
when another figure fits within the tolerance (the simplest account first: PREFERENCE) or a
buffered stream's block reads account for it; otherwise it disagrees, or cannot be judged
when the phase is too short to time. The reasons that follow are ranked: the explanation,
then what could distort any figure (lost events, a phase too short, stonewalling, failed
calls), then what the trace shows about the calls themselves.

Example: `judge(claim, report.phases[report.phases.phase == 1], "calls", 0.05)` for IOzone's
"write" claim of a run with -e gives Verdict(verdict="explained", window="calls",
reasons=["fsync inside the timed window: ...", ...]) when the command line said nothing of -e.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from iowitness.analysis import units
from iowitness.analysis.claims import Claim

DEFAULT_TOLERANCE = 0.05
# user time between calls worth naming: this share of the phase's window
USER_SHARE = 0.10
# an fsync after the calls worth naming for an agreeing claim: this share of the calls' time
FSYNC_SHARE = 0.10
# the sizes of a C stdio buffer: glibc takes the file's st_blksize (4096 on ext4 and xfs),
# BUFSIZ is 8192 (glibc's stdio.h)
STDIO_BUFFERS = (4096, 8192)
# when several figures fit a claim, the simplest account of the difference comes first
PREFERENCE = ("calls", "+fsync", "+close", "stonewall", "parent stonewall", "parent to close", "parent", "busy")
WINDOWS = (("calls", None), ("+fsync", "sync_end_ns"), ("+close", "close_end_ns"))
READS = ("read", "pread64", "readv", "preadv", "preadv2")
WRITES = ("write", "pwrite64", "writev", "pwritev", "pwritev2")


@dataclass
class Verdict:
    claim: Claim
    phases: list[int]
    verdict: str                      # "agrees" | "disagrees" | "explained" | "cannot judge"
    figures: dict[str, float] = field(default_factory=dict)   # name -> bytes/s (or ops/s, s/op, bytes)
    window: str = "calls"
    ratio: float | None = None        # claim / window figure
    reasons: list[str] = field(default_factory=list)
    kind: str = "bytes"               # what the figures count: "bytes" (per s), "ops" (per s),
                                      # "latency" (s per op), "amount" (bytes, not a rate)

    @property
    def ok(self) -> bool:
        return self.verdict in ("agrees", "explained")


def _rate(amount: float, start_ns: float, end_ns: float) -> float:
    seconds = (end_ns - start_ns) / 1e9
    return amount / seconds if seconds > 0 else float("nan")


def _amount(r, direction: str | None, kind: str) -> float:
    """Bytes (or calls) of one phase row in the claim's direction: a mixed phase splits."""
    mixed = r.operation == "mixed"
    if kind == "ops":
        return r.read_ops if mixed and direction == "read" else \
            r.ops - r.read_ops if mixed and direction == "write" else r.ops
    return r.read_bytes if mixed and direction == "read" else \
        r.write_bytes if mixed and direction == "write" else r.bytes


def _end(r, end_col: str | None) -> float:
    return r.data_last_ns if end_col is None else max(r.data_last_ns, getattr(r, end_col))


def figures_of(rows: pd.DataFrame, direction: str | None, kind: str, combine: str = "sum") -> dict[str, float]:
    """Active figures for one phase or a group of phases.

    combine "sum" adds the members' own rates (IOzone's children); "span" is all of them
    over the longest member's time (fio's group_reporting: bytes over the group's runtime).
    """
    if kind == "latency":
        return {"mean latency": float((rows["lat_mean_us"] * rows["ops"]).sum() / rows["ops"].sum() / 1e6)}
    out: dict[str, float] = {}
    amounts = [_amount(r, direction, kind) for r in rows.itertuples()]
    for name, end_col in WINDOWS:
        if combine == "span":
            longest = max((_end(r, end_col) - r.data_first_ns for r in rows.itertuples()), default=0)
            out[name] = _rate(sum(amounts), 0, longest)
        else:
            rates = [_rate(a, r.data_first_ns, _end(r, end_col)) for a, r in zip(amounts, rows.itertuples())]
            out[name] = float(np.nansum(rates)) if rates else float("nan")
    busy = [a / (r.data_ns / 1e9) if r.data_ns else float("nan") for a, r in zip(amounts, rows.itertuples())]
    if combine == "span":
        longest = rows["data_ns"].max() / 1e9 if len(rows) else 0
        out["busy"] = sum(amounts) / longest if longest else float("nan")
    else:
        out["busy"] = float(np.nansum(busy)) if busy and not all(b != b for b in busy) else float("nan")
    return out


@dataclass
class Stonewall:
    """Where a benchmark that stops counting when its first member finishes (IOzone's
    throughput mode without -x) stops each member: iozone.c sets a shared flag when a child
    ends its loop; every other child stops counting at its next look at the flag, between
    two calls, and leaves out the call it was in."""
    at_ns: int                 # the end of the finisher's last data call
    finisher: int              # its phase: the first member to move its whole file
    counted: dict              # phase -> bytes of its data calls that ended by then
    calls: dict                # phase -> how many
    stop_ns: dict              # phase -> the start of its next call after at_ns: it stops there
    share: float               # the group's bytes done by then, of the test's (or of all it moved)
    intended: float            # the test's bytes: processes × file size, when known


def stonewall_of(rows: pd.DataFrame, group=None, events: pd.DataFrame | None = None,
                 assigned: pd.DataFrame | None = None, file_size: int | None = None,
                 processes: int | None = None) -> Stonewall | None:
    """The stonewall of a group of concurrent phases, from its events when there are any, else
    from the group table (which takes the earliest end of any member and no next call).

    The share done at the stonewall is of the test's bytes (processes × file size) when they
    are known: members that stop at the flag (IOzone's rewriters break out of their loop)
    never move the rest, so a share of what they moved would hide it."""
    if len(rows) < 2:
        return None
    whole = rows[rows["bytes"] == file_size] if file_size else rows.iloc[0:0]
    finisher = (whole if len(whole) else rows).sort_values("data_last_ns").iloc[0]
    at = int(finisher["data_last_ns"])
    total = float(rows["bytes"].sum())
    if file_size and processes:
        total = max(total, float(file_size) * processes)
    if events is None or assigned is None:
        if group is None:
            return None
        # the group table counts at the earliest end of any member; at another point, each
        # member's bytes by then are estimated as if it moved them at an even pace
        done = dict(zip(group["phases"], group["bytes_at_stonewall"]))
        exact = int(group["stonewall_ns"]) == at
        counted = {int(r.phase): float(done.get(r.phase, 0)) if exact else
                   float(r.bytes) * min(max((at - r.data_first_ns) / max(r.data_last_ns - r.data_first_ns, 1), 0), 1)
                   for r in rows.itertuples()}
        calls = {int(r.phase): counted[int(r.phase)] / r.record_size if r.record_size else 0 for r in rows.itertuples()}
        stop = {int(p): at for p in rows["phase"]}
    else:
        phase = assigned["phase"].to_numpy()
        mine = np.isin(phase, rows["phase"].to_numpy())
        ev = pd.DataFrame({"phase": phase[mine], "tid": events["tid"].to_numpy()[mine],
                           "start": events["start_ns"].to_numpy()[mine], "end": events["end_ns"].to_numpy()[mine],
                           "ret": events["ret"].to_numpy()[mine], "warmup": assigned["warmup"].to_numpy()[mine],
                           "data": np.isin(events["syscall"].astype(str).to_numpy()[mine], READS + WRITES)})
        data = ev[ev["data"] & ~ev["warmup"] & (ev["end"] <= at)]
        counted = data.groupby("phase")["ret"].apply(lambda r: float(r.clip(lower=0).sum())).to_dict()
        calls = data.groupby("phase").size().to_dict()
        later = ev[ev["start"] > at].groupby("phase")["start"].min().to_dict()
        counted = {int(p): float(counted.get(p, 0)) for p in rows["phase"]}
        calls = {int(p): int(calls.get(p, 0)) for p in rows["phase"]}
        stop = {int(p): int(later.get(p, at)) for p in rows["phase"]}
    fin = int(finisher["phase"])
    counted[fin], calls[fin] = float(finisher["bytes"]), int(finisher["ops"])
    return Stonewall(at, fin, counted, calls, stop, sum(counted.values()) / total if total else float("nan"), total)


def member_rates(rows: pd.DataFrame, stonewall: Stonewall | None, direction: str | None, kind: str,
                 end_col: str | None) -> pd.DataFrame:
    """Per member of a group: its rate over its own window ("own"), and as a benchmark that
    stops counting at the stonewall sees it ("stonewall"; the finisher counts everything).

    Each also "from go": timed from the group's first data call instead of its own. A
    benchmark that starts every member's clock at one signal (IOzone's parent says go, each
    child reads its clock, then writes) times a member that was not on a CPU at the signal
    from before its first call, by up to that much: the two figures bracket what it saw.
    """
    go = rows["data_first_ns"].min() if len(rows) else 0
    out = []
    for r in rows.itertuples():
        amount = _amount(r, direction, kind)
        end = _end(r, end_col)
        own, own_go = _rate(amount, r.data_first_ns, end), _rate(amount, go, end)
        if stonewall is None or r.phase == stonewall.finisher:
            at_stonewall, at_stonewall_go, done = own, own_go, amount
        else:
            done = stonewall.calls[r.phase] if kind == "ops" else stonewall.counted[r.phase]
            stop = stonewall.stop_ns[r.phase]
            at_stonewall = _rate(done, r.data_first_ns, stop) if done else 0.0
            at_stonewall_go = _rate(done, go, stop) if done else 0.0
        out.append({"phase": r.phase, "path": r.path, "own": own, "stonewall": at_stonewall,
                    "own from go": own_go, "stonewall from go": at_stonewall_go,
                    "amount": amount, "counted": done})
    return pd.DataFrame(out, columns=["phase", "path", "own", "stonewall", "own from go", "stonewall from go",
                                      "amount", "counted"])


def group_figures(rows: pd.DataFrame, stonewall: Stonewall | None, direction: str | None, kind: str,
                  window: str, last_ns: int | None = None) -> dict[str, float]:
    """The children's figures of a group (the sum of the members' rates: to the stonewall,
    and each of them and the window's timed from go, see member_rates) and the parent's: the
    group's bytes over its time from the first data call to the last data call, or to the
    last member's last call (its close, the nearest the trace comes to the children's exit), or
    to `last_ns` when that is later (a process of the group that moved no data closed last)."""
    members = member_rates(rows, stonewall, direction, kind, dict(WINDOWS).get(window))
    first = rows["data_first_ns"].min()
    last = max(int(rows["last_ns"].max()), last_ns or 0)
    total, counted = members["amount"].sum(), members["counted"].sum()
    out = {"parent": _rate(total, first, rows["data_last_ns"].max()),
           "parent to close": _rate(total, first, last),
           f"{window} from go": float(members["own from go"].sum())}
    if stonewall is not None:
        out["stonewall"] = float(members["stonewall"].sum())
        out["stonewall from go"] = float(members["stonewall from go"].sum())
        out["parent stonewall"] = _rate(counted, first, last)
    return out


def bracketed(value: float, figures: dict, tolerance: float) -> str | None:
    """The first figure whose "from go" twin brackets the value, within the tolerance."""
    for name in ("calls", "+fsync", "+close", "stonewall"):
        low, high = figures.get(f"{name} from go"), figures.get(name)
        if low is None or high is None or not (low == low and high == high):
            continue
        low, high = min(low, high), max(low, high)
        if low * (1 - tolerance) <= value <= high * (1 + tolerance):
            return name
    return None


def bracket_reason(name: str, value: float, figures: dict, kind: str) -> str:
    what = "stonewalling, and " if name == "stonewall" else ""
    return (f"{what}a member's clock may start before its first call: timed from its own first call the "
            f"figure is {fmt(figures[name], kind)}, from the group's first call (the start signal) "
            f"{fmt(figures[name + ' from go'], kind)}; the claim, {fmt(value, kind)}, lies between: a member "
            f"waiting for a CPU at the signal started its calls late, which no call shows")


def _claimed(claim: Claim) -> tuple[float | None, str]:
    if claim.bytes_per_s is not None:
        return claim.bytes_per_s, "bytes"
    if claim.ops_per_s is not None:
        return claim.ops_per_s, "ops"
    if claim.seconds_per_op is not None:
        return claim.seconds_per_op, "latency"
    return None, "bytes"


def fmt(value: float, kind: str) -> str:
    """A figure as people read it, by what it counts."""
    if kind == "ops":
        return f"{value:,.0f} ops/s"
    if kind == "latency":
        return f"{value * 1e6:.2f} µs/op"
    if kind == "amount":
        return f"{value:,.0f} B"
    return units.rate(value)


def judge(claim: Claim, rows: pd.DataFrame, window: str, tolerance: float, lost: int = 0,
          group=None, *, stonewall: Stonewall | None = None, combine: str = "sum", notes: tuple = (),
          last_ns: int | None = None) -> Verdict:
    """The verdict on one claim about `rows` (one phase, or the members of a group).

    group: the group table's row when the claim is about concurrent phases; stonewall: where
    the benchmark stopped counting, when it stops at the first member's end (IOzone without
    -x; see stonewall_of); notes: evidence found elsewhere (late flushes, missing members),
    ranked after the causes found here; last_ns: the end of the group's last call, when a
    process of the group that moved no data made it.
    """
    value, kind = _claimed(claim)
    phases = [int(p) for p in rows["phase"]]
    if value is None or rows.empty:
        return Verdict(claim, phases, "cannot judge", kind=kind, reasons=[
            "no phase of the trace matches this claim" if rows.empty else "the claim is not a rate or a latency"])
    figures = figures_of(rows, claim.direction, kind, combine)
    if kind == "latency":
        window = "mean latency"
    if (group is not None or stonewall is not None) and kind != "latency":
        figures.update(group_figures(rows, stonewall, claim.direction, kind, window, last_ns))
        if claim.scope == "parent":
            window = "parent to close"
        else:
            figures.pop("parent"), figures.pop("parent to close"), figures.pop("parent stonewall", None)
    figures = {name: float(figure) for name, figure in figures.items()}
    active = figures.get(window, float("nan"))
    ratio = float(value / active) if active and active == active else 1.0 if value == 0 and active == 0 else None
    verdict = Verdict(claim, phases, "agrees", figures, window, ratio, kind=kind)
    reasons = verdict.reasons

    # what could distort any figure, whatever the verdict
    duration = float(rows["duration_s"].max())
    if lost:
        reasons.append(f"the observer lost {lost} events: active figures may miss calls")
    if bool(rows["too_short"].any()):
        reasons.append(f"phase too short to time: {units.seconds(duration)}, {int(rows['ops'].sum())} calls "
                       "(below 10 ms or 100 calls, a clock's resolution and the benchmark's own overhead dominate)")
    if stonewall is not None and stonewall.share < 0.999:
        counted_so = figures.get("parent stonewall" if claim.scope == "parent" else "stonewall")
        reasons.append(stonewall_reason(stonewall, rows)
                       + (f"; counted so, the figure is {fmt(counted_so, kind)}" if counted_so else ""))
    errors, short = int(rows["errors"].sum()), int(rows["short"].sum())
    if errors or short:
        reasons.append(", ".join(part for part in (f"{errors} failed calls" if errors else "",
                                                   f"{short} short calls (fewer bytes than asked: the end of "
                                                   f"the file, or a partial transfer)" if short else "") if part)
                       + " in the phase")
    reasons.extend(notes)

    if ratio is None or abs(ratio - 1) <= tolerance:
        _note_window(rows, figures, window, kind, reasons)
        _note_records(claim, rows, value, kind, tolerance, reasons)
        _note_user_time(rows, reasons)
        return verdict

    # a stonewall the benchmark is known to apply comes before any other account
    preference = PREFERENCE if stonewall is None or stonewall.share >= 0.999 else \
        ("stonewall", "parent stonewall") + PREFERENCE
    fitting = [name for name in dict.fromkeys(preference) if name != window and name in figures
               and figures[name] and figures[name] == figures[name] and abs(value / figures[name] - 1) <= tolerance]
    amplification = _read_amplification(claim, rows, value, kind, tolerance)
    between = bracketed(value, figures, tolerance) if claim.scope != "parent" else None
    if fitting:
        best = fitting[0]
        verdict.verdict = "explained"
        reasons.insert(0, _explain(best, window, figures, value, rows, kind))
    elif between:
        verdict.verdict = "explained"
        reasons.insert(0, bracket_reason(between, value, figures, kind))
    elif amplification:
        verdict.verdict = "explained"
        reasons.insert(0, amplification)
    elif bool(rows["too_short"].any()):
        verdict.verdict = "cannot judge"
        reasons.insert(0, f"no active figure within {tolerance:.0%} (claim {fmt(value, kind)}, {window} "
                          f"{fmt(active, kind)}, {ratio:.2f}×), and the phase is too short to tell why")
    else:
        verdict.verdict = "disagrees"
        reasons.insert(0, f"no active figure within {tolerance:.0%}: claim {fmt(value, kind)}, "
                          f"{window} {fmt(active, kind)} ({ratio:.2f}×)")
    if not amplification:
        _note_records(claim, rows, value, kind, tolerance, reasons)
    _note_user_time(rows, reasons)
    return verdict


def _after(rows: pd.DataFrame, col: str) -> float:
    """Seconds from the last data call to the end of `col` (the last fsync, the close), at most."""
    gaps = (rows[col] - rows["data_last_ns"]).clip(lower=0)
    return float(gaps.max()) / 1e9 if len(gaps) else 0.0


def _what(rows: pd.DataFrame) -> str:
    return "read" if set(rows["operation"]) == {"read"} else "write"


def _explain(best: str, window: str, figures: dict, value: float, rows, kind: str) -> str:
    gap = abs(value / figures[best] - 1)
    calls_s = float(rows["duration_s"].max())
    fitted = f"{fmt(figures[best], kind)}, within {gap:.1%} of the claim"
    last = f"last {_what(rows)}"
    if best == "+fsync" and window == "calls":
        return (f"fsync inside the timed window: the last fsync ends {units.seconds(_after(rows, 'sync_end_ns'))} "
                f"after the {last} ({units.seconds(calls_s)} of calls); counting it, the active figure is {fitted}")
    if best == "+close" and window in ("calls", "+fsync"):
        return (f"close inside the timed window: the close ends {units.seconds(_after(rows, 'close_end_ns'))} after "
                f"the {last} ({units.seconds(calls_s)} of calls); counting it, the active figure is {fitted}")
    if best == "calls" and window in ("+fsync", "+close"):
        what = "fsync" if window == "+fsync" else "close"
        added = _after(rows, "sync_end_ns" if window == "+fsync" else "close_end_ns")
        return (f"{what} outside the timed window: the {what} ends {units.seconds(added)} after the {last}, "
                f"yet the claim fits the calls alone: {fitted}")
    if best == "+fsync" and window == "+close":
        return (f"close outside the timed window: the claim fits the calls and the fsync, without the close: {fitted}")
    if best == "busy":
        user = max(calls_s - float(rows["data_ns"].max()) / 1e9, 0)
        return (f"the claim counts only the time inside the calls ({fitted}); "
                f"{units.seconds(user)} between calls is left out")
    if best == "stonewall":
        return (f"stonewalling: the benchmark stops counting when the first member finishes; "
                f"each member's bytes done by then over its time until then add up to {fitted}")
    if best == "parent stonewall":
        return (f"stonewalling: the parent counts the bytes the members had done "
                f"when the first member finished, over the time until the last member closed its file: {fitted}")
    if best == "parent":
        return f"the parent's time ends at the last data call, not at the members' close: {fitted}"
    return f"the claim fits the {best} figure: {fitted}"


def stonewall_reason(stonewall: Stonewall, rows: pd.DataFrame) -> str:
    first = int(rows["data_first_ns"].min())
    done, total = sum(stonewall.counted.values()), stonewall.intended
    finisher = rows[rows["phase"] == stonewall.finisher].iloc[0]
    return (f"stonewalling: the first member to finish (phase {stonewall.finisher}, {finisher['path']}) ended "
            f"{units.seconds((stonewall.at_ns - first) / 1e9)} after the group's first call; by then the group "
            f"had done {stonewall.share:.0%} of the test's bytes ({units.bytes_(done)} of {units.bytes_(total)}), "
            f"and a benchmark that stops counting there reports only those")


def _note_window(rows, figures, window, kind, reasons) -> None:
    """For an agreeing claim: what the benchmark's window took in or left out, when it is large."""
    calls_s = float(rows["duration_s"].max())
    after = _after(rows, "sync_end_ns")
    if after <= FSYNC_SHARE * max(calls_s, 1e-9) or not figures.get("+fsync"):
        return
    if window == "calls":
        reasons.append(f"fsync outside the timed window: the last fsync ends {units.seconds(after)} after "
                       f"its last {_what(rows)} ({units.seconds(calls_s)} of calls); counting it, the rate would be "
                       f"{fmt(figures['+fsync'], kind)}")
    elif window in ("+fsync", "+close"):
        reasons.append(f"fsync inside the timed window: the last fsync ends {units.seconds(after)} after "
                       f"its last {_what(rows)} ({units.seconds(calls_s)} of calls); without it the rate would be "
                       f"{fmt(figures['calls'], kind)}")


def _note_user_time(rows: pd.DataFrame, reasons: list[str]) -> None:
    duration = float(rows["duration_s"].max())
    # time between the data calls that no call covered (several threads overlap theirs)
    user = ((rows["duration_s"] - rows["data_ns"] / 1e9 / rows["threads"]).clip(lower=0)).max()
    share = float(user) / duration if duration else 0
    if share >= USER_SHARE:
        reasons.append(f"user space between calls: {share:.0%} of the phase's time "
                       f"({units.seconds(float(user))} of {units.seconds(duration)})")


def _buffered(claim: Claim, rows: pd.DataFrame) -> bool:
    """A home-made benchmark whose calls all move one stdio buffer's size: the program's own
    records (unknown to the trace) went through a buffered stream."""
    if claim.source != "spec" or claim.record_size is not None or len(rows) != 1:
        return False
    r = rows.iloc[0]
    return int(r["record_size"]) in STDIO_BUFFERS and r["ops"] > 0


def _implied(value: float, kind: str, rows: pd.DataFrame) -> float | None:
    """Bytes the claim implies were moved in the phase's calls window."""
    return value * float(rows["duration_s"].max()) if kind == "bytes" else None


def _note_records(claim, rows, value, kind, tolerance, reasons) -> None:
    """The kernel's call sizes against what the claim implies, for a buffered stream."""
    if not _buffered(claim, rows) or kind != "bytes":
        return
    r = rows.iloc[0]
    implied = _implied(value, kind, rows)
    calls = "writes" if r["operation"] == "write" else "reads" if r["operation"] == "read" else "calls"
    text = (f"the kernel saw {int(r['ops']):,} {calls} of {int(r['record_size']):,} bytes (a stdio buffer's size), "
            f"not the program's own records")
    moved = float(r["bytes"])
    if implied and abs(implied / moved - 1) > tolerance:
        text += (f"; the claim implies {implied:,.0f} bytes in the phase's {units.seconds(float(r['duration_s']))}, "
                 f"the kernel moved {moved:,.0f} ({moved / implied:.2f}×)")
    else:
        text += "; the claim counts bytes, so they agree, but a rate of calls would count these blocks"
    reasons.append(text)


def _read_amplification(claim, rows, value, kind, tolerance) -> str | None:
    """A buffered stream reading at random reads a whole block per seek and hands the program
    part of it: the kernel moves more bytes than the program counts."""
    if kind != "bytes" or not _buffered(claim, rows):
        return None
    r = rows.iloc[0]
    if r["operation"] != "read" or r["pattern"] in ("sequential", "single call"):
        return None
    implied, moved, block = _implied(value, kind, rows), float(r["bytes"]), int(r["record_size"])
    if not implied or implied >= moved * (1 - tolerance) or abs(moved / r["ops"] / block - 1) > 0.01:
        return None
    return (f"a buffered stream reads whole blocks: the kernel read {moved:,.0f} bytes in {int(r['ops']):,} "
            f"{r['pattern']} reads of {block:,} bytes, the claim implies {implied:,.0f} bytes in the phase's "
            f"{units.seconds(float(r['duration_s']))} ({implied / r['ops']:,.0f} bytes per read): the program used "
            f"{implied / moved:.1%} of what the kernel read for it")


def late_flushes(events: pd.DataFrame, assigned: pd.DataFrame, phases: pd.DataFrame) -> dict[int, dict]:
    """Per write phase: the writes of a buffered stream's final flush, when there is one.

    They are the last writes of the phase after its last full-record write, each shorter than
    the phase's record size, followed at once in their thread by the close of their fd: what
    fclose does with the bytes still in its buffer. A benchmark that stops its clock before
    fclose leaves them out of its window, though it counted them.
    """
    if events is None or phases.empty:
        return {}
    name = events["syscall"].astype(str).to_numpy()
    frame = pd.DataFrame({"phase": assigned["phase"].to_numpy(), "warmup": assigned["warmup"].to_numpy(),
                          "name": name, "tid": events["tid"].to_numpy(), "fd": events["fd"].to_numpy(),
                          "start": events["start_ns"].to_numpy(), "end": events["end_ns"].to_numpy(),
                          "requested": events["requested"].to_numpy(), "ret": events["ret"].to_numpy()})
    frame = frame.sort_values(["tid", "start"], kind="stable")
    following = frame.groupby("tid", sort=False)[["name", "fd", "start"]].shift(-1)
    frame["next_name"], frame["next_fd"], frame["next_start"] = following["name"], following["fd"], following["start"]
    writes = frame[np.isin(frame["name"], WRITES) & (frame["phase"] >= 0) & ~frame["warmup"]]
    table = phases.set_index("phase")
    out = {}
    for phase, w in writes.groupby("phase"):
        if phase not in table.index or table.at[phase, "operation"] != "write" or len(w) < 2:
            continue
        w = w.sort_values("start", kind="stable")
        record = int(table.at[phase, "record_size"])
        full = np.flatnonzero(w["requested"].to_numpy() == record)
        if not len(full) or full[-1] == len(w) - 1:
            continue
        tail = w.iloc[full[-1] + 1:]
        last = tail.iloc[-1]
        if (tail["requested"] >= record).any() or last["next_name"] != "close" or last["next_fd"] != last["fd"]:
            continue
        out[int(phase)] = {"bytes": int(tail["ret"].clip(lower=0).sum()), "calls": len(tail), "record": record,
                           "after_full_ns": int(tail["start"].iloc[0] - w["end"].iloc[full[-1]]),
                           "close_after_ns": int(last["next_start"] - last["end"])}
    return out


def late_flush_reason(flush: dict) -> str:
    calls = "a final flush" if flush["calls"] == 1 else f"{flush['calls']} final writes"
    return (f"{flush['bytes']:,} bytes written by {calls} just before close (a buffered stream): the phase's "
            f"last full {flush['record']:,}-byte write ended {units.seconds(flush['after_full_ns'] / 1e9)} earlier, "
            f"the close came {units.seconds(flush['close_after_ns'] / 1e9)} after; if the benchmark stopped its "
            f"clock before closing, they are outside its window")
