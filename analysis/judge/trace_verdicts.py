"""The numbers a traced benchmark printed, judged against the trace: `report`'s verdicts, for Python.

    >>> import iowitness
    >>> t = iowitness.load("iozone.iwt")
    >>> t.report().verdicts                 # one row per claim: test, claimed, verdict, reasons...
    >>> verdicts(t, text=open("fio.json").read(), tolerance=0.10)   # Verdict objects, other output

The claims come from the output `run` captured, or from `text` (a benchmark's output saved
apart, what `report --claims FILE` reads); `report` and `check` call the same function.
"""

from __future__ import annotations

import os

import pandas as pd

from iowitness.analysis import benchmarks
from iowitness.analysis.benchmarks import spec as spec_module
from iowitness.analysis.judge import claim_windows, match_claims as matching
from iowitness.analysis.judge.claim import UnparsableOutput
from iowitness.analysis.judge.verdict_rules import DEFAULT_TOLERANCE, Verdict, claimed
from iowitness.analysis.read import printed
from iowitness.analysis.report import mid_run
from iowitness.errors import UsageError


class NoClaims(UsageError):
    """No claim to judge: no output captured, or one no benchmark module can read; the message says which."""


def no_output(meta: dict) -> str:
    """Why a trace holds no benchmark output, as it came to hold none, and what to do."""
    why = "this trace holds no benchmark output"
    if meta.get("mode") == "attach" and meta.get("all_processes"):
        why += (": attach --file follows every process that touches the file, and records no process's output "
                "(which of them is the benchmark is known only afterwards)")
    elif meta.get("mode") == "attach":
        why += (": iowitness attached to a running benchmark, which printed nothing on its standard output or "
                "error after the attach (traces made before the output timeline hold none under attach)")
    elif meta.get("mode") == "run":
        why += ": the benchmark printed nothing on its standard output or error while it was traced"
    saved = _output_option(meta.get("command") or [], meta.get("cwd") or "")
    if saved:
        return f"{why}; it wrote its results to {saved} (--output): give them with --claims {saved}"
    return f"{why}; give the output saved elsewhere (e.g. fio --output=FILE) with --claims FILE"


def _output_option(command: list, cwd: str) -> str | None:
    """The file a benchmark's --output=FILE (fio's, and many others') sent its results to."""
    for i, word in enumerate(command):
        word = str(word)
        path = word.split("=", 1)[1] if word.startswith("--output=") else \
            str(command[i + 1]) if word == "--output" and i + 1 < len(command) else None
        if path:
            return os.path.normpath(os.path.join(cwd, path))
    return None


def verdicts(trace, text: str | None = None, *, spec: str | None = None, fmt: str | None = None,
             tolerance: float = DEFAULT_TOLERANCE, ceiling: dict | None = None) -> list[Verdict]:
    """One Verdict per claim of `text` (default: the output the trace captured), in the output's
    order. `spec`: a claims spec file (docs/claims-spec.md); `fmt`: the benchmark, when neither
    the command line nor the output says. NoClaims when there is nothing to judge."""
    source, claims = claims_of(trace, text, spec=spec, fmt=fmt)
    return judge(trace, source, claims, tolerance, ceiling)


def claims_of(trace, text: str | None = None, *, spec: str | None = None, fmt: str | None = None):
    """(source, claims) of `text`, or of the output the trace captured; NoClaims when none. Each
    claim gets the time its line was written when the trace's output timeline holds it
    (claim.printed_ns; analysis/judge/claim_windows.py), and extra["placement"] says which way."""
    lines = printed.lines_of(trace)
    given = text is not None
    if text is None:
        # stdout and stderr interleaved as written, when the lines have times
        ordered = sorted(lines, key=lambda ln: ln.t_ns or 0) if lines and all(ln.t_ns is not None for ln in lines) \
            else None
        text = "\n".join(ln.text for ln in ordered) if ordered else \
            trace.output.get("stdout", "") + trace.output.get("stderr", "")
        if not text.strip():
            raise NoClaims(no_output(trace.meta))
    command = trace.meta.get("command") or []
    shell_note = benchmarks.shell_command.unwrapped(command)[1]   # `sh -c "a | b"`: not read as a benchmark
    # a program no module knows, whose output a shipped spec reads (ioping, sysbench fileio ...)
    known = None if spec or fmt or benchmarks.recognise(command) else \
        spec_module.shipped_for(benchmarks.shell_command.command_of(command) or [])
    try:
        if spec:
            source, claims = "spec", spec_module.parse(text, spec_module.load(spec))
        elif known:
            source, claims = "spec", spec_module.parse(text, known[1])
        else:
            source, claims = benchmarks.claims_from(text, command, fmt)
    except UnparsableOutput as exc:
        attached = mid_run(trace.meta) if not given else None
        # attached after the benchmark's header (IOzone's banner, its "Output is in" line): the
        # recorded output lacks what its reader needs; its whole output, saved apart, has it
        hint = ("; the trace began mid-run, after what the benchmark printed first: give its whole output "
                "with --claims FILE") if attached else ""
        raise NoClaims(str(exc) + (f" ({shell_note})" if shell_note else "") + hint) from None
    except spec_module.SpecError as exc:
        raise UsageError(str(exc)) from None
    placement = claim_windows.place(claims, lines, given, bool(mid_run(trace.meta)))
    placement = f"{placement}; {shell_note}" if shell_note else placement
    if known:
        placement += (f"; read with the shipped spec {known[0]} (iowitness --list-specs; --spec FILE to read it "
                      "otherwise)")
    for claim in claims:
        claim.extra["placement"] = placement
    return source, claims


def judge(trace, source: str, claims: list, tolerance: float = DEFAULT_TOLERANCE,
          ceiling: dict | None = None) -> list[Verdict]:
    command = trace.meta.get("command") or []
    return matching.match(trace.report(), claims, source, command, tolerance, trace.missing, trace=trace,
                          ceiling=ceiling)


def table(judged: list[Verdict]) -> pd.DataFrame:
    """The verdicts as a table, one row per claim: what was claimed (as printed and in the
    verdict's own unit, `kind`), the active figure in the benchmark's window, and why."""
    rows = []
    for v in judged:
        value, _ = claimed(v.claim)
        rows.append({
            "test": v.claim.test, "scope": v.claim.scope, "printed": v.claim.value, "unit": v.claim.unit,
            "claimed": value, "active": v.figures.get(v.window), "kind": v.kind, "window": v.window,
            "ratio": v.ratio, "verdict": v.verdict, "phases": list(v.phases), "reasons": list(v.reasons),
            "line": v.claim.printed,
        })
    columns = ["test", "scope", "printed", "unit", "claimed", "active", "kind", "window", "ratio", "verdict",
               "phases", "reasons", "line"]
    return pd.DataFrame(rows, columns=columns)
