"""What `report` and `check` share: where the claims come from, and the verdicts."""

from __future__ import annotations

import argparse
from pathlib import Path

from iowitness.errors import NotFound, UsageError

DEFAULT_TOLERANCE = "5%"


def add_claim_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--claims", metavar="FILE",
                        help="the benchmark's output saved separately (default: the output captured by run)")
    parser.add_argument("--spec", metavar="SPEC.toml",
                        help="how to read a home-made benchmark's output (docs/claims-spec.md)")
    parser.add_argument("--format", choices=["iozone", "fio", "dd"],
                        help="which benchmark printed the output, when it cannot be recognised")
    parser.add_argument("--tolerance", default=DEFAULT_TOLERANCE, metavar="PCT",
                        help="how far a claim may be from the active figure and still agree (default %(default)s)")


def tolerance(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise UsageError(f"--tolerance {text!r}: give a percentage such as 5%") from None
    if not 0 <= value < 10:
        raise UsageError(f"--tolerance {text!r}: give a percentage such as 5%")
    return value


def verdicts_for(trace, args, required: bool):
    """Read the claims (captured output, --claims or --spec) and judge them against the trace."""
    from iowitness.analysis import matching
    from iowitness.analysis.claims import UnparsableOutput, detect, spec

    tol = tolerance(args.tolerance)
    if args.claims:
        try:
            text = Path(args.claims).read_text(errors="replace")
        except FileNotFoundError:
            raise NotFound(f"no such file: {args.claims}") from None
        except OSError as exc:
            raise NotFound(f"cannot read {args.claims}: {exc.strerror}") from None
    else:
        text = trace.output.get("stdout", "") + trace.output.get("stderr", "")
        if not text.strip():
            message = ("this trace holds no benchmark output (attach does not capture it); "
                       "give the saved output with --claims FILE")
            if required:
                raise UsageError(message)
            return None, message
    command = trace.meta.get("command") or []
    try:
        if args.spec:
            source, claims = "spec", spec.parse(text, spec.load(args.spec))
        else:
            source, claims = detect.claims_from(text, command, args.format)
    except UnparsableOutput as exc:
        if required:
            raise UsageError(str(exc)) from None
        return None, str(exc)
    except spec.SpecError as exc:
        raise UsageError(str(exc)) from None
    report = trace.report()
    return matching.match(report, claims, source, command, tol, trace.lost, trace=trace), None
