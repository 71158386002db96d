#!/usr/bin/env python3
"""fuzz_traces.py: damage and craft traces by the thousand, and check what iowitness makes of them.

Writes two small traces with the real writer (a dd run with everything a full trace holds, a
--summary run), makes N mutants of them (tests/support/trace_mutants.py: truncations, bit
flips, chunk heads edited, crafted JSON, record descriptions, blocks and SUMMARY chunks with
good CRCs, decompression bombs, unknown chunk kinds), and runs show, report --json, check and
export on each, in this process. tests/unit/test_trace_fuzz.py runs a few hundred of them.

    $ scripts/fuzz_traces.py --mutants 5000 --seed 1
    5,000 mutants in 398.4 s (80 ms each, slowest 1.16 s): 1,088 refused (exit 6), 3,754 read
    with their damage shown, 158 read whole; 0 problems (tracebacks, hangs, bad exit codes,
    silent losses); max RSS 139 MiB

How to read it: "refused" mutants failed the header, START or the format checks; "read with
their damage shown" read incomplete, with bytes left unread or chunks skipped; "read whole"
changed nothing the reader can tell (a crafted value that is still valid, a flipped bit in
the header's reserved field). Any problem is printed with its traceback, and the exit code
is 1. Overhead: one CPU for the run (about 80 ms per mutant).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import trace_mutants  # noqa: E402


def run(count: int, seed: int, folder: Path) -> dict:
    bases = trace_mutants.write_bases(folder)
    originals = trace_mutants.originals(folder, bases)
    outcomes, problems, slowest = Counter(), [], 0.0
    began = time.monotonic()
    for k, (base, how, data) in enumerate(trace_mutants.mutants(bases, count, seed)):
        path = folder / "mutant.iwt"
        path.write_bytes(data)
        t = time.monotonic()
        verdict = trace_mutants.judge(path, base, how, originals[base], folder)
        slowest = max(slowest, time.monotonic() - t)
        outcomes[verdict.outcome or "problem"] += 1
        if verdict.problems:
            problems.append({"mutant": k, "base": base, "how": how, "problems": verdict.problems})
            (folder / f"problem-{k}.iwt").write_bytes(data)
    return {"mutants": count, "seed": seed, "seconds": round(time.monotonic() - began, 1),
            "slowest_s": round(slowest, 2), "outcomes": dict(outcomes), "problems": problems,
            "max_rss_mib": _peak_rss_mib()}



def _peak_rss_mib() -> int:
    """This process's peak resident memory since its exec (VmHWM). Not getrusage's ru_maxrss:
    that keeps the peak of the process it was forked from (a large pytest, say) before the exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", metavar="DIR", help="keep the base traces and problem mutants here")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        summary = run(args.mutants, args.seed, folder)
    if args.json:
        print(json.dumps(summary))
    else:
        o = summary["outcomes"]
        n = summary["mutants"]
        print(f"{n:,} mutants in {summary['seconds']:,} s ({summary['seconds'] / max(n, 1) * 1e3:.0f} ms each, "
              f"slowest {summary['slowest_s']} s): {o.get('refused', 0):,} refused (exit 6), "
              f"{o.get('damaged', 0):,} read with their damage shown, {o.get('intact', 0):,} read whole; "
              f"{len(summary['problems'])} problems (tracebacks, hangs, bad exit codes, silent losses); "
              f"max RSS {summary['max_rss_mib']} MiB")
        for p in summary["problems"]:
            print(f"\nmutant {p['mutant']} ({p['base']}, {p['how']}):", *p["problems"], sep="\n  ")
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
