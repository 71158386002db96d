"""IOzone's throughput mode (-t N): which children a group claim is about, where IOzone
stopped counting them, and its per-process statistics counted as IOzone counts them.

A "Children see" or "Parent sees" claim is judged like any other (verdicts.judge) over the
group's members, with its stonewall; "Min/Max/Avg throughput per process" and "Min xfer" are
statistics over the children, judged here with the rules of analysis/judge/verdict_rules.py.

Example: `iozone_min([2880, 0, 0, 4096])` is 4096, as iozone.c computes its minimum.
"""

from __future__ import annotations

import os

import pandas as pd

from iowitness import units
from iowitness.analysis.benchmarks.iozone_stonewall import finisher_of, stonewall_of
from iowitness.analysis.judge import verdict_rules as verdicts
from iowitness.analysis.judge.claim import Claim, Match
from iowitness.analysis.measure import device, figures as active_figures, stonewall as stonewalling, stream_evidence
from iowitness.analysis.phasing import call_bounds

SCOPES = {"children", "parent", "min process", "max process", "avg process", "min xfer", "child"}
# figures of one child or a statistic over the children (the "child" lines are -C's)
PER_PROCESS = {"min process", "max process", "avg process", "child"}


def match(claim: Claim, rows: pd.DataFrame, group, report, trace, options: dict) -> Match:
    """What a group claim is about: its members (`rows`, the group's table row `group`), the
    children that moved no data, the end of the test's last call and the stonewall."""
    notes = _missing_members(claim, rows)
    last_ns = latest_ns = None
    if trace is not None and len(rows):
        # the next test's first call bounds this one's closes: the trace's next phase, not the
        # window's (a window ends at its line, and IOzone -t prints at its end, after its cleanup)
        last_ns = _last_call_on(report.evidence, options.get("files") or [], rows, report.all_phases)
        if claim.scope == "parent":
            woke = parent_woke(trace, rows, max(int(rows["last_ns"].max()), last_ns or 0))
            if woke is not None:
                last_ns, asleep_ns = woke
                notes.append(f"the parent was off the CPU at its children's last close and woke "
                             f"{units.seconds(asleep_ns / 1e9)} later: it reads its clock only then (iozone.c "
                             "polls its children's state between sleeps), so its time runs to that wake")
            closed = max(int(rows["last_ns"].max()), last_ns or 0)
            latest_ns = parent_last_wake(trace, rows, closed, claim.printed_ns)
    stonewall = stonewall_of(rows, group, report.evidence if trace is not None else None,
                             claim.file_size, claim.processes) \
        if options.get("stonewall", True) else None
    around = Around(report.evidence, rows) if trace is not None and len(rows) else None

    def refine(verdict, judged, tolerance):
        from_ready(claim, verdict, judged, stonewall, around, options, tolerance)
        if not options.get("delay_start_us"):   # with -d its clock starts at the last go (_last_go)
            parent_from_ready(claim, verdict, judged, stonewall, around, last_ns, tolerance, latest_ns)
        late_stop(verdict, stonewall)

    judge = None
    if claim.scope in PER_PROCESS | {"min xfer"} and len(rows):
        def judge(window, tolerance, missing):
            verdict = per_process(claim, rows, stonewall, window, tolerance, missing, options, notes)
            refine(verdict, rows, tolerance)
            return verdict
    parent_start = None
    if options.get("delay_start_us") and trace is not None and len(rows):
        parent_start = _last_go(report.evidence, options.get("files") or [], rows)
    return Match(rows, group, stonewall, notes=notes, last_ns=last_ns, judge=judge, parent_start_ns=parent_start,
                 refine=refine if trace is not None else None)


def parent_woke(trace, rows: pd.DataFrame, last: int) -> tuple[int, int] | None:
    """(when, how long after `last`) the children's parent process came back on a CPU, when it
    was off it at `last` (the group's last close: asleep in its poll, or waiting for a CPU);
    None when it was on a CPU then or the trace has no off-CPU records of it."""
    mine = _parent_records(trace, rows)
    if mine is None:
        return None
    around = mine[(mine["off_ns"].astype("int64") <= last) & (mine["on_ns"].astype("int64") > last)]
    if not len(around):
        return None
    woke = int(around["on_ns"].astype("int64").max())
    return woke, woke - last


def parent_last_wake(trace, rows: pd.DataFrame, after: int, line_ns: int | None) -> int | None:
    """The parent's last return to a CPU after `after` (its first wake after the last close)
    and before `line_ns`, the write of the claim's line; None when there is none. The parent
    reads its clock at one of its wakes between the two: at the first when it then sees every
    child done, at a later one when a child had not yet said so (at load 25, IOzone -O -t 2's
    parent slept 55 ms more after its first wake, woke, and printed its line 0.16 ms later:
    its "Parent sees" figure is the one timed to that last wake)."""
    mine = _parent_records(trace, rows)
    if mine is None or line_ns is None:
        return None
    on = mine["on_ns"].astype("int64")
    later = on[(on > after) & (on <= line_ns)]
    return int(later.max()) if len(later) else None


def _parent_records(trace, rows: pd.DataFrame):
    """The off-CPU records of the children's parent: the process that forked the members
    (trace.processes), else the traced or attached command's; None when unknown or none."""
    off = device.scheduler_records(trace)
    if off is None or not len(off):
        return None
    parents = set()
    processes = getattr(trace, "processes", None)
    processes = processes() if callable(processes) else processes
    if processes is not None and len(processes) and "parent_tgid" in processes:
        forked = processes[processes["tgid"].isin([int(t) for t in rows["tgid"]])]
        parents = {int(p) for p in forked["parent_tgid"] if int(p)}
    if not parents:
        # the traced command's process (`run`), else the one attached to (`attach --pid`): IOzone
        # -T's children are its threads
        attached = [int(p["pid"]) for p in trace.meta.get("attached") or [] if isinstance(p, dict) and p.get("pid")]
        parents = {int(trace.meta["pid"])} if trace.meta.get("pid") else set(attached[:1])
    if len(parents) != 1:
        return None
    parent = parents.pop()
    return off[(off["tgid"] == parent) & (off["tid"] == parent)]


def questions(claim: Claim, rows: pd.DataFrame, options: dict) -> list[tuple]:
    """What match() will ask of the trace's events for this claim (with a trace), as
    stream_evidence's questions: asked together for every group claim before any is matched
    (iozone.matcher), the groups' stonewalls, closes and neighbours take one pass over the
    blocks instead of one each. A question foreseen wrongly costs only its pass when asked."""
    if not len(rows):
        return []
    asked = []
    files = options.get("files") or []
    if files:   # _last_call_on
        asked.append(stream_evidence.closes_question([os.path.abspath(f) for f in files]))
    if options.get("stonewall", True) and len(rows) >= 2:   # stonewall_of
        at = int(finisher_of(rows, claim.file_size)["data_last_ns"])
        asked.append(stream_evidence.stonewall_question([int(p) for p in rows["phase"]], at))
    asked.append(stream_evidence.neighbours_question(*_around_of(rows)))   # Around
    return asked


def _around_of(rows: pd.DataFrame) -> tuple[list[int], list[int], list[int]]:
    """Around's question: each member's thread, first data call's start and last data call's end."""
    return ([int(t) for t in rows["tid"]], [int(f) for f in rows["data_first_ns"]],
            [int(x) for x in rows["data_last_ns"]])


# a wait for a CPU at the start signal the trace cannot bound is judged possible up to this
# long (a child's clock read 28 ms before its first call, on a two-CPU machine; EEVDF's slice
# is 3 ms, so a dozen runnable threads ahead of it)
START_WAIT_NS = 50_000_000


class Around:
    """The calls around each member of a group: `ready`, the children's barrier (the latest
    end, over the members, of each one's last call before its first data call: its open), with
    that call's name, or None when a member has none; `after`, per phase, the start of the
    member's next call after its last data call (its fsync or close), when it has one.

    iozone.c lets no child go before every child is ready (the parent polls each child's flag;
    in cluster mode the master waits for every client's ready message), and each child opens
    its file before it says so: no child's clock can start before the last of those calls. A
    child reads its clock again before the call after its loop (a stonewalled one when it sees
    the stop flag, after the call it was in): no child's clock can stop after that call starts."""

    def __init__(self, evidence, rows: pd.DataFrame):
        before, names, after, _ = evidence.neighbours(*_around_of(rows))
        self.ready: tuple[int, str] | None = None
        if len(before) and not (before == call_bounds.NONE_BEFORE).any():
            i = int(before.argmax())
            self.ready = (int(before[i]), str(names[i]))
        self.after = {int(p): int(a) for p, a in zip(rows["phase"], after) if a != call_bounds.NONE_AFTER}


def from_ready(claim, verdict, rows, stonewall, around: Around | None, options, tolerance) -> None:
    """A children or per-process claim that disagrees only because a child's clock ran beyond
    its calls (it started before the group's first call, or stopped after its last call ended,
    a wait for a CPU at either edge): EXPLAINED when the figure timed from the barrier to the
    start of each child's next call (Around) brackets it with the calls' own; without a barrier
    before the first call, CANNOT JUDGE when a start wait of up to START_WAIT_NS brackets it,
    saying so. Otherwise left as it is."""
    kind, value = _kind_and_value(claim)
    if verdict.verdict != "disagrees" or verdict.kind != kind or kind not in ("bytes", "ops") \
            or claim.scope not in PER_PROCESS | {"children"} or not len(rows) or value is None or around is None:
        return
    go = int(rows["data_first_ns"].min())
    ready = around.ready
    bounded = ready is not None and ready[0] < go
    start = ready[0] if bounded else go - START_WAIT_NS
    # each member's clock stops at the latest where its next call starts
    wide = rows.assign(data_last_ns=[max(int(last), around.after.get(int(p), int(last)))
                                     for p, last in zip(rows["phase"], rows["data_last_ns"])])
    window, value = verdict.window, float(value)
    if claim.scope == "children":
        end_col = dict(active_figures.WINDOWS).get(window)
        members = stonewalling.member_rates(wide, stonewall, claim.direction, kind, end_col, start)
        early = {window: float(members["own from go"].sum()),
                 "stonewall": float(members["stonewall from go"].sum()) if stonewall is not None else None}
    else:
        figures = _statistic(claim, wide, stonewall, window, options, start)[0]
        early = {window: figures.get(f"{window} from go"), "stonewall": figures.get("stonewall from go")}
    for name, low in early.items():
        high = verdict.figures.get(name)
        if low is None or high is None or not (low == low and high == high):
            continue
        if not min(low, high) * (1 - tolerance) <= value <= max(low, high) * (1 + tolerance):
            continue
        fmt = active_figures.fmt
        lead = units.seconds((go - start) / 1e9)
        stops = "and stops no later than the start of its next call (its fsync or close)"
        if bounded:
            verdict.verdict = "explained"
            why = (f"a child's clock may run beyond its calls: it starts no earlier than the children's barrier "
                   f"(IOzone lets no child go before every child is ready, each after its {ready[1]}; the last of "
                   f"those ended {lead} before the group's first call) {stops}; so timed the {name} figure is "
                   f"{fmt(low, kind)}, from each child's own first to last call {fmt(high, kind)}; the claim, "
                   f"{fmt(value, kind)}, lies between: a child waiting for a CPU at the start signal or at a "
                   "call's return, which no call shows")
        else:
            verdict.verdict = "cannot judge"
            why = (f"a child's clock may have started before the group's first call, and the trace holds no call "
                   f"before it to bound where: with a wait for a CPU at the start signal of up to {lead} (a busy "
                   f"machine), {stops}, the {name} figure is {fmt(low, kind)} to {fmt(high, kind)}, and the "
                   f"claim, {fmt(value, kind)}, lies within")
        verdict.figures[f"{name} from ready" if bounded else f"{name} from a start wait"] = float(low)
        verdict.reasons[0] = why   # the disagreement's reason: now told
        return


def parent_from_ready(claim, verdict, rows, stonewall, around: Around | None, last_ns: int | None,
                      tolerance, latest_ns: int | None = None) -> None:
    """A "Parent sees" claim that disagrees only because the parent's clock ran beyond the
    group's calls: EXPLAINED when timed from the children's barrier to the parent's last wake
    before its line, the parent's figure brackets the claim with the one timed from the group's
    first call to its first wake after the last close.

    iozone.c's parent reads its clock (starttime1) right after it lets the children go, and it
    lets none go before every child has opened its file and said it is ready. A child that was
    not on a CPU at the signal makes its first call later, by a wait inside the parent's time
    and inside no call (IOzone -O -t 2, a rewrite of 2,048 writes of 4 KiB a child, some 10 ms:
    the parent's line at 0.94x at load 17). It stops its clock at a wake once it sees every
    child done, which may be a later wake than the first after the last close (parent_last_wake:
    0.87x at load 25). Its count is each child's records until it saw the stop: between what it
    had done at the stonewall and all it did (late_stop), so the claim lies between the count
    at the stonewall timed over the longest span and every record timed over the shortest.
    With -d the parent's clock starts at the last go (_last_go): not here."""
    kind, value = _kind_and_value(claim)
    if verdict.verdict != "disagrees" or claim.scope != "parent" or verdict.kind != kind \
            or kind not in ("bytes", "ops") or value is None or not len(rows):
        return
    go = int(rows["data_first_ns"].min())
    ready = around.ready if around is not None and around.ready is not None and around.ready[0] < go else None
    later = latest_ns if latest_ns is not None and latest_ns > max(int(rows["last_ns"].max()), last_ns or 0) else None
    if ready is None and later is None:
        return
    early = stonewalling.group_figures(rows, stonewall, claim.direction, kind, "calls", later or last_ns,
                                       ready[0] if ready else None)
    names = [name for name in ("parent to close", "parent stonewall") if name in early and name in verdict.figures]
    if not names:
        return
    low, high = min(early[name] for name in names), max(verdict.figures[name] for name in names)
    value = float(value)
    if not (low == low and high == high) or not low * (1 - tolerance) <= value <= high * (1 + tolerance):
        return
    fmt = active_figures.fmt
    verdict.verdict = "explained"
    verdict.figures["parent from ready" if ready else "parent to its last wake"] = float(low)
    edges = []
    if ready:
        edges.append(f"starts when it lets the children go, no earlier than the children's barrier (IOzone lets no "
                     f"child go before every child is ready, each after its {ready[1]}; the last of those ended "
                     f"{units.seconds((go - ready[0]) / 1e9)} before the group's first call)")
    if later:
        closed = max(int(rows["last_ns"].max()), last_ns or 0)
        edges.append(f"stops at one of its wakes between the last close and its line, once it sees every child "
                     f"done (the last of them {units.seconds((later - closed) / 1e9)} after its first)")
    else:
        edges.append("stops when it sees the last child done")
    verdict.reasons[0] = (
        f"the parent's clock {', and '.join(edges)}; so timed, with each child's count between the stonewall "
        f"and all its records, the parent figure is {fmt(low, kind)}, from the group's first call to its first "
        f"wake {fmt(high, kind)}; the claim, {fmt(value, kind)}, lies between: children or the parent waiting "
        "for a CPU, which no call shows")


def late_stop(verdict, stonewall) -> None:
    """A "Min xfer" that disagrees only because the stop reached a child late: EXPLAINED.

    IOzone counts a child's records until the child sees the stop flag, which the first child
    to finish raises after its last call (in cluster mode the master relays it over the
    network): on a busy machine a child goes on writing for milliseconds after that last call
    ended. So a child's count lies between what it had done when the first one's last call
    ended (the "stonewall" figure) and all it did (the window's): a claim between the two, with
    IOzone's one record of rounding, is accounted for; outside, it still disagrees."""
    if verdict.verdict != "disagrees" or verdict.kind not in ("amount", "count") or stonewall is None \
            or verdict.claim.scope != "min xfer":
        value = None
    else:
        value = _kind_and_value(verdict.claim)[1]
    low, high = verdict.figures.get("stonewall"), verdict.figures.get(verdict.window)
    if value is None or low is None or high is None:
        return
    kind = verdict.kind
    record = float(verdict.claim.record_size or 0) if kind == "amount" else 1.0
    if not min(low, high) - record <= float(value) <= max(low, high) + record:
        return
    fmt = active_figures.fmt
    verdict.verdict = "explained"
    verdict.reasons[0] = (f"the stop reached the children after the first one finished: IOzone counts a child's "
                          f"records until it sees the stop flag, raised after the first child's last call (in "
                          f"cluster mode relayed by the master), later on a busy machine; counted when that call "
                          f"ended the min xfer is {fmt(low, kind)}, with every record {fmt(high, kind)}, and "
                          f"the claim, {fmt(float(value), kind)}, lies between")


def _last_go(evidence, files: list[str], rows: pd.DataFrame) -> int | None:
    """With -d, where IOzone's parent starts its clock: after letting the last child go.

    iozone.c lets the children go one by one, `Poll(delay_start)` before each, and only then
    reads `starttime1`: its clock starts when the last child is let go. A child has opened its
    file before the barrier; its first call on the file after that is the first it makes once
    let go (its first write, or, when the stop flag is up already, its fsync or close). The
    latest of those first calls, over the test's files, is the last go.
    """
    if not files:
        return None
    start = int(rows["first_ns"].min())
    later = rows["last_ns"].max()
    goes = [evidence.first_call_on(f, start, later + 10**10) for f in files]
    goes = [g for g in goes if g is not None]
    return max(goes) if goes else None


def _last_call_on(evidence, files: list[str], rows: pd.DataFrame, phases: pd.DataFrame) -> int | None:
    """The end of the last close of the benchmark's files (IOzone's -F) during a group's test:
    from its first data call to the next phase's first call. A child that moved no data
    still opened and closed its file, and the parent waited for it. Closes only: the next
    test's children open their files before its first phase's first call, and on a busy
    machine some of those opens come before it."""
    if not files:
        return None
    start = int(rows["data_first_ns"].min())
    later = phases.loc[phases["first_ns"] > int(rows["last_ns"].max()), "first_ns"]
    end = int(later.min()) if len(later) else None
    closes = evidence.closes_on([os.path.abspath(f) for f in files])
    mine = closes["start_ns"].to_numpy() >= start
    if end is not None:
        mine &= closes["start_ns"].to_numpy() < end
    return int(closes["end_ns"].to_numpy()[mine].max()) if mine.any() else None


def _missing_members(claim: Claim, rows: pd.DataFrame) -> list[str]:
    if not claim.processes or len(rows) >= claim.processes:
        return []
    idle = claim.processes - len(rows)
    return [f"{idle} of the {claim.processes} processes moved no data in this test (the trace has "
            f"{len(rows)} phase{'s' if len(rows) != 1 else ''}): they count as 0 in the benchmark's figures"]


def iozone_min(values) -> float:
    """IOzone's "Min throughput" and "Min xfer": a minimum that restarts after a child at 0.

    iozone.c: `if(!min_throughput) min_throughput=child_stat->throughput; if(child_stat->throughput
    < min_throughput) min_throughput=...` over the children in order: a 0 is taken, then
    replaced by the next child's value.
    """
    low = 0.0
    for v in values:
        if not low:
            low = v
        if v < low:
            low = v
    return low


def _children(members: pd.DataFrame, processes: int, files: list[str]) -> pd.DataFrame:
    """The members in IOzone's child order (child i works on the i-th -F file), with a row of
    zeros for every child that moved no data."""
    slots = {os.path.abspath(f): i for i, f in enumerate(files)}
    members = members.assign(slot=[slots.get(os.path.abspath(str(p)), len(files) + i)
                                   for i, p in enumerate(members["path"])])
    members = members.sort_values("slot", kind="stable").reset_index(drop=True)
    if processes > len(members):
        taken = set(members["slot"])
        free = [i for i in range(processes + len(members)) if i not in taken][:processes - len(members)]
        idle = pd.DataFrame({"phase": -1, "path": "", "own": 0.0, "stonewall": 0.0, "own from go": 0.0,
                             "stonewall from go": 0.0, "amount": 0.0, "counted": 0.0, "slot": free})
        members = pd.concat([members, idle]).sort_values("slot", kind="stable").reset_index(drop=True)
    return members


def _statistic(claim, rows, stonewall, window, options, go_ns: int | None = None):
    """(figures, children, columns) of a per-process claim: the statistic over the children of
    each figure, each as IOzone counts it; `go_ns`: the "from go" figures timed from there."""
    end_col = dict(active_figures.WINDOWS).get(window)
    members = stonewalling.member_rates(rows, stonewall, claim.direction, "ops" if _in_ops(claim) else "bytes",
                                        end_col, go_ns)
    processes = max(claim.processes or 0, len(members))
    children = _children(members, processes, options.get("files") or [])
    if claim.scope == "min xfer":
        columns = {window: "amount", "stonewall": "counted"}
    else:
        columns = {window: "own", "stonewall": "stonewall", f"{window} from go": "own from go",
                   "stonewall from go": "stonewall from go"}
    child = int(claim.extra.get("child", 0))
    statistic = {"min process": iozone_min, "min xfer": iozone_min, "max process": max,
                 "avg process": lambda v: sum(v) / processes,
                 "child": lambda v: v[child] if child < len(v) else 0.0}[claim.scope]
    figures = {name: float(statistic(list(children[col]))) for name, col in columns.items()
               if stonewall is not None or not name.startswith("stonewall")}
    return figures, children, columns


def _in_ops(claim) -> bool:
    """Whether a per-process claim counts operations (IOzone -O: ops/sec, "Min xfer = N ops")."""
    return "ops" in claim.extra if claim.scope == "min xfer" else claim.bytes_per_s is None and \
        claim.ops_per_s is not None


def _kind_and_value(claim) -> tuple[str, float | None]:
    if claim.scope == "min xfer":
        return ("count", claim.extra.get("ops")) if _in_ops(claim) else ("amount", claim.extra.get("bytes"))
    return ("ops", claim.ops_per_s) if _in_ops(claim) else ("bytes", claim.bytes_per_s)


def per_process(claim, rows, stonewall, window, tolerance, missing, options, notes) -> verdicts.Verdict:
    """IOzone's min/max/avg throughput per process and its min xfer: the same statistic over
    the children, each as IOzone counts it (to the stonewall unless -x), in bytes or, with -O,
    in operations."""
    figures, children, columns = _statistic(claim, rows, stonewall, window, options)
    kind, value = _kind_and_value(claim)
    reasons = [verdicts.missing_reason(missing)] if missing else []
    if bool(rows["too_short"].any()):
        reasons.append(verdicts.too_short_reason(rows, calls=False))
    if stonewall is not None and stonewall.share < 0.999:
        reasons.append(stonewalling.stonewall_reason(stonewall, rows))
    if claim.scope in ("min process", "min xfer"):
        col = columns["stonewall" if stonewall is not None else window]
        if iozone_min(list(children[col])) != min(children[col]):
            reasons.append(f"IOzone's minimum restarts after a child at 0 (iozone.c: if(!min) min=next): the "
                           f"lowest child is {active_figures.fmt(float(min(children[col])), kind)}, IOzone's rule gives "
                           f"{active_figures.fmt(figures.get('stonewall', figures[window]), kind)}")
    reasons += list(notes)
    active = figures[window]
    ratio = None if value is None else float(value / active) if active else 1.0 if value == 0 else None
    verdict = verdicts.Verdict(claim, [int(p) for p in rows["phase"]], "agrees", figures, window, ratio, reasons,
                               kind=kind)
    if value is None:
        return verdicts.cannot_judge(verdict, "the claim is not a rate or an amount")
    # a count of records: one record more or less at the stonewall is IOzone's own rounding
    record = rows["record_size"].max() if kind == "amount" else 1 if kind == "count" else 0
    slack = (record / value if value else 0) + tolerance
    if verdicts.within(ratio, slack, without_ratio=False):
        return verdict
    other = figures.get("stonewall")
    between = stonewalling.bracketed(value, figures, tolerance) if kind not in ("amount", "count") else None
    if window != "stonewall" and other is not None and (abs(value / other - 1) <= slack if other else value == 0):
        explanation = (f"stonewalling: counted up to the moment the first child finished, as IOzone does, "
                       f"the {claim.scope} is {active_figures.fmt(other, kind)}, within "
                       f"{abs(value / other - 1) if other else 0:.1%} of the claim")
    else:
        explanation = stonewalling.bracket_reason(between, value, figures, kind) if between else None
    verdicts.settle(verdict, value, active, explanation, bool(rows["too_short"].any()), tolerance,
                    statistic=claim.scope)
    return verdict
