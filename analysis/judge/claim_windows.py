"""Which calls a printed figure can be about: its window on the benchmark's output timeline.

A figure printed at time t is about calls that ended before t. Its test's window begins after
the benchmark's previous result line: the last line before it that gave claims of another test
(one its own burst does not name), or the same test's figure again (a second run of it),
counted in *bursts*, lines printed with no data call between them (a summary printed at the
end is one burst, and the tests in it share one window; a summary restating tests printed
before in other units takes their windows; per-request lines are progress inside a test, not
results, and bound no other line's window). A phase is in the window when its last data call
ended inside it; phases after the line are never part of it. Within the window the
benchmark's module (or the spec's order, name, operation, rank and scope) chooses, as without
times; a run-wide claim (scope "run") covers every phase before its line.

A figure printed before the trace's first call, or one whose line the recording does not hold
though it was given (--claims) and came before every line it does hold (an attach after that
test), is "before the trace": it cannot be judged, and is never matched to a later phase.

The timed period: a spec may say where, inside the window, the benchmark's timing starts
(`timing_line`: the last line before the claim that matches a regex; `warmup_seconds`: T
seconds after the first data call of the claim's phases). Calls that started before it are
left out of the claim's figures and latency statistics (timed_rows, and latency.py through
claim.extra["timed_ns"]).

Without times (a trace that holds only the captured text, or --claims given after the fact to
a trace without an output timeline) every claim's printed_ns stays None and the matching is
by order alone, as the module says (ORDER_NOTE).

    note = place(claims, printed.lines_of(trace), given=False, attached=False)
    find = finder(benchmark, report, claims, argv, trace, windows_of(claims, lines, report))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from iowitness import units
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.phasing import phases as phase_module

TIMELINE_NOTE = "claims placed on the benchmark's output timeline"
ORDER_NOTE = "claims matched by order: the output has no times"
UNMATCHED_NOTE = "claims matched by order: the lines given do not follow the recorded output"


@dataclass(frozen=True)
class Window:
    start_ns: int | None   # calls that ended after this (None: from the trace's start) ...
    end_ns: int            # ... and by this: when the claim's line was written
    burst: int             # the burst of lines the claim's line belongs to
    start_from: str        # where the start came from, in words
    before_trace: str = ""  # why the figure is about calls before the trace began, or ""
    by: str = "this line"  # the line the end is: this one, or its test's earlier line (a summary)
    cut: bool = False      # the claim's calls are cut at an end line (timing_end_line): a phase that
    #                        began by the line is in the window, its calls after the cut left out

    def holds(self, phases: pd.DataFrame) -> pd.Series:
        """Per phase: whether its last data call ended in the window (with `cut`: whether its
        first one began by its end)."""
        last = phases["data_last_ns"]
        inside = (phases["data_first_ns"] if self.cut else last) <= self.end_ns
        return inside if self.start_ns is None else inside & (last > self.start_ns)


def _at(t_ns: int | None, t0: int | None) -> str:
    return "?" if t_ns is None else f"+{units.seconds((t_ns - (t0 or 0)) / 1e9)}" if t0 is not None \
        else f"{t_ns} ns"


def describe(window: Window, t0: int | None, timed: str = "") -> str:
    """The window a verdict used and where its edges came from, in one reason."""
    return (f"window: calls that ended after {window.start_from} and by {window.by} (written at "
            f"{_at(window.end_ns, t0)}){timed}")   # how claims were placed is said once, above the verdicts


def place(claims: list[Claim], lines: list, given: bool, attached: bool) -> str:
    """Give each claim the time of its line (claim.printed_ns), joining the claims to the lines
    in order; the note says which way the claims are matched. `given`: the text was given
    after the fact (--claims); `attached`: the trace began mid-run."""
    timed = sorted((ln for ln in lines if ln.t_ns is not None), key=lambda ln: ln.t_ns)
    if not claims or not timed or len(timed) < len(lines):
        return ORDER_NOTE
    texts = [same_text(ln.text) for ln in timed]
    found: list[int | None] = []
    cursor = 0
    for claim in claims:
        printed_text = same_text(claim.printed or "")
        j = next((k for k in range(cursor, len(texts)) if texts[k] == printed_text), None)
        if j is None and not given:
            # a claim whose `printed` is not a line (a report the benchmark wrote whole, fio's
            # JSON): printed by the end of the output
            j = len(texts) - 1 if texts else None
        found.append(j)
        if j is not None:
            cursor = j
    placed = [j for j in found if j is not None]
    first = next((i for i, j in enumerate(found) if j is not None), None)
    # lines given that the recording lacks: only those before every recorded one, and only
    # when the trace began mid-run (their tests ended before the attach)
    if first is None or any(j is None for j in found[first:]) or (first and not attached) or not placed:
        for claim in claims:
            claim.printed_ns = None
        return UNMATCHED_NOTE if given else ORDER_NOTE
    for i, (claim, j) in enumerate(zip(claims, found)):
        claim.printed_ns = timed[j].t_ns if j is not None else None
        claim.extra["line_no"] = j
        if j is None:
            claim.extra["before_trace"] = ("before the trace: this line is not in the output the trace recorded, "
                                           "which begins later (iowitness attached after this test): its calls "
                                           "are not in the trace")
    return TIMELINE_NOTE


def same_text(line: str) -> str:
    """A line as a claim's `printed` and a recorded line are compared: its tabs expanded (IOzone's
    claims expand them, its output writes keep them) and its ends stripped."""
    return line.expandtabs(8).strip()


def _identity(claim: Claim) -> tuple:
    return (claim.extra.get("key") or claim.test, claim.record_size, claim.file_size, claim.job,
            claim.extra.get("child"))


def _said(claim: Claim) -> tuple:
    return (claim.unit, "requests" if claim.extra.get("requests") else claim.extra.get("statistic"),
            claim.extra.get("column"), claim.direction if claim.source == "fio" else None)


def windows_of(claims: list[Claim], phases: pd.DataFrame, t0: int | None) -> dict[int, Window]:
    """The window of each placed claim, by its position in `claims`."""
    placed = [(i, c) for i, c in enumerate(claims) if c.printed_ns is not None]
    if not placed:
        return {}
    out: dict[int, Window] = {}
    # lines in the order written: (time, line number, its claims)
    lines: dict[int, list] = {}
    for i, c in placed:
        lines.setdefault(c.extra.get("line_no", i), []).append((i, c))
    order = sorted(lines, key=lambda n: (lines[n][0][1].printed_ns, n))
    times = [lines[n][0][1].printed_ns for n in order]
    first, last = phases["data_first_ns"].to_numpy(np.float64), phases["data_last_ns"].to_numpy(np.float64)
    burst = [0]
    for a, b in zip(times, times[1:]):
        # a data call between two lines: the later one starts a new burst
        active = bool(((first < b) & (last > a)).any()) if len(phases) else False
        burst.append(burst[-1] + int(active))
    # a claim restates its test when an earlier burst gave that test in another unit (a summary
    # after per-test lines): it takes that claim's window; the others are the burst's own tests
    earlier: dict[tuple, list] = {}      # identity -> [(said, claim position)] of earlier bursts
    restates: dict[int, int] = {}
    tests_of: dict[int, set] = {}
    for k, n in enumerate(order):
        if k and burst[k] != burst[k - 1]:
            for back in range(k - 1, -1, -1):
                if burst[back] != burst[k - 1]:
                    break
                for i, c in lines[order[back]]:
                    if not c.extra.get("requests"):
                        # one request's line is progress, never its test's result in another unit
                        earlier.setdefault(_identity(c), []).append((_said(c), i))
        for i, c in lines[n]:
            before_it = earlier.get(_identity(c), [])
            if before_it and all(said != _said(c) for said, _ in before_it) and c.extra.get("scope") != "run":
                restates[i] = before_it[-1][1]
            else:
                tests_of.setdefault(burst[k], set()).add(_identity(c))
    for k, n in enumerate(order):
        for i, claim in lines[n]:
            start, start_from = None, "the trace's start"
            if i in restates and restates[i] in out:
                first = out[restates[i]]
                out[i] = Window(first.start_ns, first.end_ns, first.burst, first.start_from, first.before_trace,
                                f"its test's earlier line {claims[restates[i]].printed[:60]!r}")
                continue
            if claim.extra.get("scope") != "run":
                for back in range(k - 1, -1, -1):
                    if burst[back] == burst[k]:
                        continue
                    others = lines[order[back]]
                    if not claim.extra.get("requests") and all(o.extra.get("requests") for _, o in others):
                        # one request's line (ioping's "request=7 time=..."): progress inside a
                        # test, not a test's result; a summary after them is about them all
                        continue
                    # a line of a test this burst does not name, or this very figure again (a
                    # second run); a summary's tests printed before in other units are no edge
                    if any(_identity(o) not in tests_of.get(burst[k], set())
                           or (_identity(o) == _identity(claim) and _said(o) == _said(claim)) for _, o in others):
                        start = times[back]
                        start_from = (f"the benchmark's previous result line {others[0][1].printed[:60]!r} "
                                      f"(written at {_at(start, t0)})")
                        break
            before = claim.extra.get("before_trace", "")
            if not before and t0 is not None and claim.printed_ns < t0:
                before = (f"before the trace: printed at {_at(claim.printed_ns, t0)}, before the trace's first call; "
                          "its calls are not in the trace")
            out[i] = Window(start, claim.printed_ns, burst[k], start_from, before,
                            cut=bool(claim.extra.get("timing_end_line")))
    for i, claim in enumerate(claims):
        if claim.extra.get("before_trace") and i not in out:
            out[i] = Window(None, -1, -1, "the trace's start", claim.extra["before_trace"])
    _requests_together(claims, out)
    return out


def _requests_together(claims: list[Claim], windows: dict[int, Window]) -> None:
    """Per-request lines of one table are judged together: each takes the window of the set's
    first line, widened to its last line."""
    sets: dict[tuple, list[int]] = {}
    for i, c in enumerate(claims):
        if c.extra.get("requests") and i in windows and not windows[i].before_trace:
            sets.setdefault((c.extra.get("rule"), c.extra.get("column"), c.test), []).append(i)
    for members in sets.values():
        head, tail = windows[members[0]], windows[members[-1]]
        for i in members:
            windows[i] = Window(head.start_ns, tail.end_ns, tail.burst, head.start_from)


class _View:
    """A report whose phases are those of one window: what a benchmark's matcher sees;
    request_lines: the output's per-request lines, matched apart (a summary's seam is theirs)."""

    def __init__(self, report, phases: pd.DataFrame, request_lines: list[Claim] | None = None):
        self._report = report
        self.phases = phases
        self.request_lines = request_lines or []

    @property
    def all_phases(self) -> pd.DataFrame:
        return self._report.all_phases

    def __getattr__(self, name):
        return getattr(self._report, name)


def finder(benchmark, report, claims: list[Claim], argv: list[str], trace, windows: dict[int, Window]):
    """claim -> Match | None, as benchmark.matcher finds it, each claim among the phases of its
    window: one matcher per (window start, burst, per-request lines or not), fed that window's
    claims in order."""
    if not windows:
        return benchmark.matcher(report, claims, argv, trace)
    position = {id(c): i for i, c in enumerate(claims)}
    groups: dict[tuple, list[Claim]] = {}
    for i, c in enumerate(claims):
        w = windows.get(i)
        if w is not None and not w.before_trace:
            # per-request lines are matched apart: they use up no phase a summary of them is about
            groups.setdefault((w.start_ns, w.burst, bool(c.extra.get("requests"))), []).append(c)
    finders: dict[tuple, Callable] = {}
    for key, members in groups.items():
        end = max(windows[position[id(c)]].end_ns for c in members)
        w = windows[position[id(members[0])]]
        inside = Window(w.start_ns, end, w.burst, w.start_from, cut=w.cut).holds(report.phases)
        finders[key] = benchmark.matcher(_View(report, report.phases[inside],
                                               [c for c in claims if c.extra.get("requests")]), members, argv, trace)
    whole = benchmark.matcher(report, [c for i, c in enumerate(claims) if i not in windows], argv, trace)

    def find(claim: Claim):
        w = windows.get(position[id(claim)])
        if w is None:
            return whole(claim)
        return finders[(w.start_ns, w.burst, bool(claim.extra.get("requests")))](claim)

    return find


# the timed period

def _last_matching(pattern: str, lines: list, printed_ns: int):
    """The last timed output line up to `printed_ns` that the spec's `pattern` finds, or None."""
    regex = re.compile(pattern)
    hits = [ln for ln in lines if ln.t_ns is not None and ln.t_ns <= printed_ns and regex.search(ln.text)]
    return hits[-1] if hits else None


def _spec_line(claim: Claim, lines: list, option: str, counted_too: str, where: str):
    """(the last timed output line up to the claim's own that the spec's `option` pattern finds,
    "") or (None, why not, in words: what is counted instead): timing_line's and timing_end_line's
    one rule."""
    pattern = claim.extra[option]
    if claim.printed_ns is None:
        return None, (f"the spec's {option} cannot be placed: the output has no times, so every call of the "
                      f"phases is counted, {counted_too} too")
    line = _last_matching(pattern, lines, claim.printed_ns)
    if line is None:
        return None, f"no line {where} this one matches the spec's {option} {pattern!r}: every call is counted"
    return line, ""


@dataclass(frozen=True)
class StatedPeriod:
    """A period its end line states the length of ("execute 4 sec": the figure is over the last
    4 s up to that line), to that number's printed precision (half its last digit either way),
    and never before the spec's timing_line."""
    end_ns: int          # when the line stating it was written
    seconds: float       # as printed
    half: float          # half its last printed digit, in seconds
    floor_ns: int | None  # the timing_line's time, or None
    line: str
    printed: str         # the seconds as the line gives them
    start_ns: int        # the one start the calls are counted from (stated_period says which)

    def _bounded(self, seconds: float) -> int:
        start = self.end_ns - int(round(seconds * 1e9))
        return start if self.floor_ns is None else max(start, self.floor_ns)

    @property
    def earliest_ns(self) -> int:
        return self._bounded(self.seconds + self.half)

    @property
    def latest_ns(self) -> int:
        return min(self._bounded(self.seconds - self.half), self.end_ns)


def states_seconds(claim: Claim) -> bool:
    """Whether the claim's timing_end_line has a `seconds` group: its end line states how long
    the period it ends lasted."""
    pattern = claim.extra.get("timing_end_line")
    return isinstance(pattern, str) and "seconds" in re.compile(pattern).groupindex


def _stated(regex: re.Pattern, line) -> tuple[int, float, str] | None:
    """(the start a line states: its time less its seconds, half its last digit in seconds, the
    seconds as printed), or None when it states none."""
    from iowitness.analysis.judge.precision import half_digit

    found = regex.search(line.text)
    text: str | None = found.group("seconds") if found else None
    if text is None:
        return None
    try:
        seconds = float(text)
    except ValueError:
        return None
    return int(line.t_ns) - int(round(seconds * 1e9)), half_digit(text) or 0.0, text


def stated_period(claim: Claim, lines: list) -> StatedPeriod | None:
    """The period the claim's end line states (its timing_end_line's `seconds` group), or None
    when the spec states none or the line cannot be placed.

    Its one start: the lines the timing_end_line matches since the timing_line whose stated
    starts agree with the end line's to their precision count from one start (dbench's "execute
    T sec" lines, all since its reset); a line is written late (its process waiting for a CPU),
    never early, so the earliest start they state is the least delayed. A timing_line within
    that precision of it is the start itself (dbench without a warm-up: its clock starts at
    "releasing clients")."""
    if not states_seconds(claim) or claim.printed_ns is None:
        return None
    regex = re.compile(claim.extra["timing_end_line"])
    end = _last_matching(claim.extra["timing_end_line"], lines, claim.printed_ns)
    own = _stated(regex, end) if end is not None else None
    if own is None:
        return None
    floor = _last_matching(claim.extra["timing_line"], lines, claim.printed_ns) \
        if claim.extra.get("timing_line") else None
    floor_ns = None if floor is None else int(floor.t_ns)
    start, half, text = own
    for line in lines:
        if line.t_ns is None or line.t_ns > end.t_ns or (floor_ns is not None and line.t_ns < floor_ns):
            continue
        other = _stated(regex, line)
        if other is not None and abs(other[0] - own[0]) <= max(other[1], half) * 1e9:
            start = min(start, other[0])
    if floor_ns is not None and floor_ns >= start - int(half * 1e9):
        start = floor_ns
    return StatedPeriod(int(end.t_ns), float(text), half, floor_ns, end.text.strip(), text, start)


def timed_start(claim: Claim, rows: pd.DataFrame, lines: list) -> tuple[int | None, str]:
    """(where the claim's timed period starts, in words) as its spec says, or (None, "");
    (None, why) when the spec says one and it cannot be found."""
    pattern, warmup = claim.extra.get("timing_line"), claim.extra.get("warmup_seconds")
    period = stated_period(claim, lines)
    if period is not None:
        return period.start_ns, (f"the timed period starts {period.printed} s (± {period.half:g} s, as printed) "
                                 f"before the line {period.line[:60]!r}, as its timing_end_line's seconds say")
    if pattern:
        line, why = _spec_line(claim, lines, "timing_line", "the warm-up", "before")
        if line is None:
            return None, why
        return int(line.t_ns), f"the timed period starts at the line {line.text.strip()[:60]!r} (timing_line)"
    if warmup and len(rows):
        begin = int(rows["data_first_ns"].min())
        return begin + int(round(float(warmup) * 1e9)), (f"the timed period starts {units.seconds(float(warmup))} "
                                                         "after the phases' first data call (warmup_seconds)")
    return None, ""


def skipped_start(claim: Claim, rows: pd.DataFrame, report, low: int | None) -> tuple[int | None, str]:
    """A rate's timed period after the `skip` warm-up calls its spec names: it starts at the
    next data call (after `low`, the timing_line's, when there is one); (low, "") without a
    skip, for a latency (its values are skipped one by one, judge/latency.py), or when the
    phases have no call after those skipped."""
    skip = int(claim.extra.get("skip") or 0)
    if not skip or claim.seconds_per_op is not None or not len(rows):
        return low, ""
    start = report.evidence.nth_call_start([int(p) for p in rows["phase"]], skip, low or 0)
    if start is None:
        return low, ""
    return start, f"the first {skip:,} calls left out, as the spec's skip says"


def timed_end(claim: Claim, lines: list) -> tuple[int | None, str]:
    """(where the claim's timed period ends, in words) as its spec's timing_end_line says: the
    last line up to the claim's own that matches it (dbench's "Throughput" is its last
    "execute" line's figure); (None, "") without one, (None, why) when it cannot be found."""
    if not claim.extra.get("timing_end_line"):
        return None, ""
    line, why = _spec_line(claim, lines, "timing_end_line", "those after the benchmark stopped its clock", "up to")
    if line is None:
        return None, why
    own = line.text.strip() == claim.printed
    return int(line.t_ns), ("the timed period ends at this line, calls of phases still open at it cut there "
                            "(timing_end_line)" if own else
                            f"the timed period ends at the line {line.text.strip()[:60]!r} (timing_end_line): "
                            "calls after it are left out")


def calls_between(events: pd.DataFrame, assigned: pd.DataFrame, phases: list[int], low: int,
                  high: int | None = None) -> pd.DataFrame:
    """Per phase (one block's rows): the counted data calls that started at `low` or later (and
    ended by `high`), as the phase table's columns (ops, read_ops, bytes, read_bytes,
    write_bytes, data_first_ns, data_last_ns, data_ns)."""
    kind = phase_module.call_kinds(events["syscall"])
    start = events["start_ns"].to_numpy(np.int64)
    end = events["end_ns"].to_numpy(np.int64)
    mine = np.isin(assigned["phase"].to_numpy(), phases) & np.isin(kind, (phase_module.READ, phase_module.WRITE)) \
        & ~phase_module.uncounted(assigned) & (start >= low)
    if high is not None:
        mine &= end <= high
    moved = np.maximum(events["ret"].to_numpy(np.int64), 0)[mine]
    reads = (kind == phase_module.READ)[mine]
    frame = pd.DataFrame({"phase": assigned["phase"].to_numpy()[mine], "ops": 1, "read_ops": reads.astype(np.int64),
                          "bytes": moved, "read_bytes": np.where(reads, moved, 0),
                          "write_bytes": np.where(reads, 0, moved), "data_first_ns": start[mine],
                          "data_last_ns": end[mine], "data_ns": (end - start)[mine]})
    return frame.groupby("phase").agg(ops=("ops", "sum"), read_ops=("read_ops", "sum"), bytes=("bytes", "sum"),
                                      read_bytes=("read_bytes", "sum"), write_bytes=("write_bytes", "sum"),
                                      data_first_ns=("data_first_ns", "min"), data_last_ns=("data_last_ns", "max"),
                                      data_ns=("data_ns", "sum"))


def merge_blocks(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """calls_between of every block, as one table by phase."""
    if not parts:
        return pd.DataFrame(columns=["ops", "read_ops", "bytes", "read_bytes", "write_bytes", "data_first_ns",
                                     "data_last_ns", "data_ns"])
    both = pd.concat(parts)
    return both.groupby(level=0).agg({"ops": "sum", "read_ops": "sum", "bytes": "sum", "read_bytes": "sum",
                                      "write_bytes": "sum", "data_first_ns": "min", "data_last_ns": "max",
                                      "data_ns": "sum"})


def timed_rows(claim: Claim, rows: pd.DataFrame, report, low: int | None, high: int | None = None) -> pd.DataFrame:
    """The claim's phase rows with only the calls of its timed period (started at `low` or
    later, ended by `high`)."""
    phases = [int(p) for p in rows["phase"]]
    low = low if low is not None else 0
    counted = report.evidence.calls_between(phases, low) if high is None else \
        report.evidence.calls_between(phases, low, high)
    # a phase all of whose calls came before the timed period is no part of it
    out = rows[np.array([int(p) in counted.index for p in rows["phase"]], dtype=bool)].copy()
    for column in counted.columns:
        if column in out.columns:
            out[column] = [counted.at[int(p), column] for p in out["phase"]]
    return out


def before_trace(claim: Claim, window: Window):
    """The verdict on a figure about calls before the trace began: CANNOT JUDGE, no phase."""
    from iowitness.analysis.judge.verdict_rules import Verdict, claimed

    _, kind = claimed(claim)
    return Verdict(claim, [], "cannot judge", kind=kind, reasons=[window.before_trace], placement=TIMELINE_NOTE)


def finish_end(verdict, why: str, cut: bool) -> None:
    """Say where the timed period ended (timed_end); one the trace cannot place makes a
    disagreement one that cannot be judged."""
    from iowitness.analysis.judge.verdict_rules import cannot_judge

    if why and not cut and verdict.verdict == "disagrees":
        cannot_judge(verdict, why)
    elif why:
        verdict.reasons.append(why)


def finish(verdict, window: Window | None, t0: int | None, placement: str, timed_why: str, timed: bool) -> None:
    """Say on the verdict which window it used and where its edges came from; a timed period
    the spec gives and the trace cannot place makes a disagreement one that cannot be judged."""
    from iowitness.analysis.judge.verdict_rules import cannot_judge

    verdict.placement = placement
    if timed_why and not timed and verdict.verdict == "disagrees":
        cannot_judge(verdict, timed_why)
    elif timed_why:
        verdict.reasons.append(timed_why)
    if window is not None:
        verdict.reasons.append(describe(window, t0))
