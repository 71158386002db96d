#!/usr/bin/env python3
"""`iowitness report TRACE --FORM --stream` (block by block) vs `report TRACE --FORM` (in memory):
wall time, CPU time and peak memory against the event count, and whether the outputs are the same.
--form csv (the phase table alone: the default), json (everything: groups, outliers,
histograms, stretches, device view, verdicts) or html (the page with its charts, written to a
temporary file whose bytes are compared).

Each run is a fresh process (show_stream.measure: ru_maxrss and user + system time from
os.wait4, wall time with Python start-up; run as a user's would: bytecode written first, untimed,
and without this machine's PYTHONDONTWRITEBYTECODE, which made every run compile ~155 modules).
The trace is report_10m.py's synthetic IOzone-shaped one (the collector's own TraceWriter),
made once per size, or any trace given with --reuse.
The in-memory path needs ~240 bytes per event: leave it out (--no-loaded) above ~50 M events here.

Usage (from the repository, no root needed):
  .venv/bin/python scripts/bench/report_stream.py --events 10000000 --runs 3
  .venv/bin/python scripts/bench/report_stream.py --trace /tmp/t200m.iwt --reuse --runs 1 --no-loaded
  .venv/bin/python scripts/bench/report_stream.py --events 10000000 --runs 3 --form json
  .venv/bin/python scripts/bench/report_stream.py --trace /tmp/t10m.iwt --reuse --runs 3 --form html
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_10m import add_trace_options, synthetic_trace  # noqa: E402  (a sibling script)
from show_stream import compare  # noqa: E402

REPORT = [sys.executable, "-m", "iowitness.cli", "report"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_options(parser)
    parser.add_argument("--no-loaded", action="store_true", help="skip the in-memory path (~240 bytes per event)")
    parser.add_argument("--form", choices=("csv", "json", "html"), default="csv",
                        help="the report's form (default csv)")
    args = parser.parse_args()
    with synthetic_trace(args) as trace, tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "report.html"
        report = [*REPORT, *(["--html", str(page)] if args.form == "html" else [f"--{args.form}"])]
        commands = (("streamed", [*report, "--stream"]), ("loaded", report))
        compare(commands, trace, args.runs, f"report --{args.form}", skip=("loaded",) if args.no_loaded else (),
                output=page if args.form == "html" else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
