"""Where a benchmark's requests begin among its phase's calls, from when it printed their lines.

A per-request line (`requests = true`: ioping's "request=7 time=1.54 ms") is written just after
its own operation, so on the output timeline the request numbered k (after the spec's `skip`)
is the operation that ended last before its line: with c calls of the phase ended by the line
and m calls per operation, the phase held c - (skip + k) * m calls before the benchmark's first
request. Those calls are not its requests: the file it prepared, in the same phase (ioping -W
writes its whole working set, then times its write requests on that file). They are left out
of the request lines' operations and of a summary of the same requests (whose own skip then
counts from the first request).

The lines must agree: more than half of them, and at least two, give the same number of calls
before the first request (a benchmark that prints its lines in bursts gives each line of a
burst another). A number of 0 changes nothing: the phase holds only the requests. A negative
one is a trace that began after the benchmark's first requests (attached mid-run): request n is
then the trace's operation n minus that many. Lines written in bursts or all at the end (a stdout
that is a file) agree on no number; the least they give still bounds it, and a negative least is
such a start.

    start_ns, shift, why = first_request(lines, phases, report) or (None, 0, "")

A quiet run prints no request line, only its summary (ioping -q): a spec's `count_line` then
says how many operations the benchmark counted ("19 requests completed in ..."), which are the
phase's last ones before the summary, its warm-up (`skip`) just before them; the calls before
those are the file's preparation, left out the same way.

    start_ns, why = counted_start(claim, phases, report)
"""

from __future__ import annotations

from collections import Counter

from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.phasing import operations

# at least this many lines give the same count of calls before the first request
AGREEING_LINES = 2


def calls_per_operation(timed: str) -> int | None:
    """The data calls of one operation as `timed` says, or None when the trace decides it
    (calls+sync, open..close, call or sync: no fixed count to step back by)."""
    try:
        kind, n = operations.parse(timed)
    except ValueError:
        return None
    return n if kind in ("call", "call+sync", "calls", "calls+sync") and n >= 1 else None


def first_request(lines: list[Claim], phases: list[int], report) -> tuple[int | None, int, str] | None:
    """(when the benchmark's first request started, how many operations its request numbers run
    ahead of the trace's, in words) as its request lines, placed on the output timeline, show;
    None when the lines do not agree or show the phase holding their requests alone.

    Calls before the first request (its file's preparation) give a start and no shift; a trace
    that begins after the benchmark's first requests (an attach) gives a shift and no start:
    the request numbered n is the trace's operation n + shift (after the skipped ones)."""
    if len(lines) < AGREEING_LINES or any(c.printed_ns is None for c in lines) or not phases:
        return None
    per = calls_per_operation(lines[0].extra.get("timed", "call"))
    if per is None:
        return None
    skip = int(lines[0].extra.get("skip") or 0)
    numbers = [int(c.extra.get("request") or k + 1) for k, c in enumerate(lines)]
    ended = report.evidence.calls_ended_by(phases, lines[0].direction, [c.printed_ns or 0 for c in lines])
    before = [int(c) - (skip + n) * per for c, n in zip(ended, numbers)]
    (calls, agreeing), = Counter(before).most_common(1)
    if agreeing < AGREEING_LINES or agreeing * 2 <= len(lines):
        return _begun_after_first_requests(before, per, len(lines))
    if not calls:
        return None
    said = f"each request line was written just after its own operation ({agreeing:,} of {len(lines):,} lines say so)"
    if calls < 0:
        if calls % per:
            return None
        return None, calls // per, (f"the trace begins at the benchmark's request {1 - calls // per:,}: {said}, "
                                    "and the requests before it ran before the trace began")
    start = report.evidence.nth_call_start(phases, calls, 0, lines[0].direction)
    if start is None:
        return None
    return start, 0, (f"the benchmark's requests start at call {calls + 1:,} of the phase: {said}, so the "
                      f"{calls:,} calls before are not its requests (what it did before timing: its file's "
                      "preparation)")


def _begun_after_first_requests(before: list[int], per: int, lines: int) -> tuple[None, int, str] | None:
    """The shift of a trace that began after the benchmark's first requests, from request lines
    that agree on no count of calls before the first request: lines written in bursts or all at
    the benchmark's end (to a stdout that is a file); None when they do not show such a start.

    No line is written before its own operation ended, so each line's count is at least the true
    one, and the least of them bounds it from above. A least count below 0 is a trace that began
    after that many operations' calls (latency_bench attached in its request 1, stopped 4.7 s in
    it, prints its 2,000 lines at its end: they said 1,998 calls before down to -1, the last)."""
    least = min(before)
    if least >= 0 or least % per:
        return None
    return None, least // per, (f"the trace begins at the benchmark's request {1 - least // per:,}: its {lines:,} "
                                "request lines were written together, and none before its own operation ended; "
                                f"one was written when the trace held {-least // per:,} operation(s) fewer than "
                                "its number: the requests before ran before the trace began")


def counted_start(claim: Claim, phases: list[int], report) -> tuple[int | None, str]:
    """(when the first of the operations a summary's count_line counts started, in words): the
    phases' last `count` operations in its direction before its line, after its `skip` ones;
    (None, "") when they hold no more calls than that (nothing before the requests) or the
    operation has no fixed number of calls."""
    per = calls_per_operation(claim.extra.get("timed", "call"))
    count = claim.extra.get("count")
    if per is None or count is None or not phases:
        return None, ""
    skip = int(claim.extra.get("skip") or 0)
    at = claim.printed_ns if claim.printed_ns is not None else 2 ** 62
    ended = int(report.evidence.calls_ended_by(phases, claim.direction, [at])[0])
    before = ended - (int(count) + skip) * per
    if before <= 0:
        return None, ""
    start = report.evidence.nth_call_start(phases, before, 0, claim.direction)
    if start is None:
        return None, ""
    return start, (f"the benchmark's requests start at call {before + 1:,} of the phase: its count_line says it "
                   f"counted {int(count):,} ({claim.extra.get('count_line_text', '')[:60]!r}), its last ones"
                   + (f" after its {skip} skipped" if skip else "") + f"; the {before:,} calls before them "
                   "(the file's preparation) are left out")
