"""What `report` and `check` share: where the claims come from, and the verdicts."""

from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path

from iowitness import units
from iowitness.errors import NotFound, UsageError

DEFAULT_TOLERANCE = "5%"


def add_claim_options(parser: argparse.ArgumentParser) -> None:
    from iowitness.analysis import benchmarks

    parser.add_argument("--claims", metavar="FILE",
                        help="the benchmark's output saved separately (default: the output captured by run)")
    parser.add_argument("--spec", metavar="SPEC",
                        help="how to read a home-made benchmark's output: a spec file (docs/claims-spec.md) "
                             "or a shipped spec's name (--list-specs)")
    parser.add_argument("--format", choices=benchmarks.formats(),
                        help="which benchmark printed the output, when it cannot be recognised")
    parser.add_argument("--tolerance", default=DEFAULT_TOLERANCE, metavar="PCT",
                        help="how far a claim may be from the active figure and still agree (default %(default)s)")
    parser.add_argument("--device-ceiling", metavar="RATE",
                        help="what the device can do, to judge claims against: a rate for both directions "
                             "(200MB/s, 8MiB/s), read=RATE,write=RATE, or 'measure' (O_DIRECT writes and reads "
                             "of a scratch file next to the trace's target files, now, from this process)")


def tolerance(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise UsageError(f"--tolerance {text!r}: give a percentage such as 5%") from None
    if not 0 <= value < 10:
        raise UsageError(f"--tolerance {text!r}: give a percentage such as 5%")
    return value


_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*?)(?:/s)?\s*$")


def rate(text: str) -> float:
    """'200MB/s', '8MiB/s', '1.5GB', '4096' -> bytes per second."""
    m = _RATE.match(text)
    factor = units.BYTE_UNITS.get(m.group(2) or "B") if m else None
    value = float(m.group(1)) * factor if factor is not None else math.nan
    if not (math.isfinite(value) and value > 0):   # 0, or so many digits that it overflows
        raise UsageError(f"--device-ceiling {text!r}: give a rate such as 200MB/s or 8MiB/s")
    return value


def device_ceiling(trace, text: str | None) -> dict | None:
    """--device-ceiling as {"read": B/s, "write": B/s, "source": ...}, measuring it when asked."""
    if not text:
        return None
    if text.strip() == "measure":
        from iowitness.collector import ceiling

        dirs = [os.path.dirname(f["path"]) for f in trace.meta.get("files", []) if f.get("path")]
        dirs += [os.path.dirname(t["path"]) for t in trace.meta.get("targets", [])]
        existing = [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]
        if not existing:
            raise NotFound("--device-ceiling measure: no directory of this trace's target files exists on this "
                           "machine; give the rate instead, e.g. --device-ceiling 200MB/s")
        return ceiling.measure(existing[0])
    if "=" not in text:
        both = rate(text)
        return {"read": both, "write": both, "source": "given with --device-ceiling"}
    out = {"read": None, "write": None, "source": "given with --device-ceiling"}
    for part in text.split(","):
        key, _, value = part.partition("=")
        if key.strip() not in ("read", "write"):
            raise UsageError(f"--device-ceiling {text!r}: use read=RATE,write=RATE")
        out[key.strip()] = rate(value)
    return out


def verdicts_for(trace, args, required: bool):
    """Read the claims (captured output, --claims or --spec) and judge them against the trace:
    (verdicts, None), or (None, why there are none) when not `required`."""
    from iowitness.analysis.judge import trace_verdicts as judged

    tol = tolerance(args.tolerance)
    text = None
    if args.claims:
        try:
            # a benchmark may print bytes that are not UTF-8: they are shown as U+FFFD, the rest is read
            text = Path(args.claims).read_text(errors="replace")
        except OSError as exc:   # a bad argument (exit 2), as a --spec that cannot be read
            raise UsageError(f"--claims {args.claims}: cannot read it: {exc.strerror or exc}; "
                             "give the file that holds the benchmark's output") from None
    try:
        source, claims = judged.claims_of(trace, text, spec=args.spec, fmt=args.format)
    except judged.NoClaims as exc:
        if required:
            raise
        return None, str(exc)
    trace.report()   # phases before the ceiling is measured, as before
    ceiling = device_ceiling(trace, getattr(args, "device_ceiling", None))
    return judged.judge(trace, source, claims, tol, ceiling), None
