"""How often does compare's gate fail on runs that are the same? The false-positive rate of
--fail-if on identical runs, for two single runs (the old gate) and for two groups.

Give it N traces of the same command run N times on the same machine (nothing changed between
them). It reads each once, then tries every way of splitting them into two disjoint groups of
K runs (or --splits of them, drawn at random), and counts, per gate, the splits where compare
of the two groups would fail; and every ordered pair of single runs, where compare of the two
would. A gate on identical runs should fail about alpha/2 of the time for one direction
(2.5 % at alpha 0.05) if the test holds; the single-run gate fails as often as the runs scatter.

    python scripts/bench/compare_fpr.py /tmp/runs/run*.iwt --group 3 --fail-if 'p99>+10%' --fail-if 'wall<-10%'
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from iowitness.analysis.runs import deltas, group_deltas, significance  # noqa: E402
from iowitness.commands import _claims, _reading  # noqa: E402
from iowitness.reporters import compare  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--group", type=int, default=3, help="runs a group (default 3)")
    parser.add_argument("--fail-if", action="append", default=[])
    parser.add_argument("--alpha", type=float, default=significance.ALPHA)
    parser.add_argument("--splits", type=int, default=2000, help="at most this many splits, drawn at random")
    args = parser.parse_args()
    thresholds = [deltas.parse_threshold(t) for t in args.fail_if or ["p99>+10%", "wall<-10%"]]
    claim_args = argparse.Namespace(claims=None, spec=None, format=None, tolerance=_claims.DEFAULT_TOLERANCE)
    runs = []
    for i, path in enumerate(args.traces):
        with _reading.trace_of(path) as t:
            runs.append(compare.Run(f"r{i}", t, t.report(), _claims.verdicts_for(t, claim_args, required=False)[0]))
    keys = compare.labels(runs)
    k = args.group
    splits = [(a, b) for a in itertools.combinations(range(len(runs)), k)
              for b in itertools.combinations([i for i in range(len(runs)) if i not in a], k)]
    random.Random(1).shuffle(splits)
    splits = splits[:args.splits]
    print(f"{len(runs)} identical runs, {len(keys)} phases; {len(splits)} splits into two groups of {k}; "
          f"alpha {args.alpha}")
    fired = dict.fromkeys(range(len(thresholds)), 0)
    for a, b in splits:
        rows = group_deltas.table(([runs[i] for i in a], [runs[i] for i in b]), keys, compare.active_rate,
                                  args.alpha)
        for n, j in enumerate(group_deltas.judge(thresholds, rows, args.alpha)):
            fired[n] += bool(j["hits"])
    pairs = list(itertools.permutations(range(len(runs)), 2))
    single = dict.fromkeys(range(len(thresholds)), 0)
    for x, y in pairs:
        rows = deltas.table([runs[x], runs[y]], keys, compare.active_rate)
        for n, j in enumerate(deltas.judge(thresholds, rows, ["x", "y"])):
            single[n] += bool(j["hits"])
    for n, t in enumerate(thresholds):
        print(f"--fail-if {t.text!r}: groups of {k}: {fired[n]}/{len(splits)} splits failed "
              f"({100 * fired[n] / len(splits):.1f} %); single runs: {single[n]}/{len(pairs)} pairs failed "
              f"({100 * single[n] / len(pairs):.1f} %)")
    # how the runs scatter: per phase, the highest run's figure over the lowest's
    for key, label in keys.items():
        for name in ("p99", "wall"):
            m = deltas.BY_NAME[name]
            values = [v for v in (deltas.value_of(r, key, m, compare.active_rate) for r in runs) if v]
            if values:
                print(f"  {label}: {name} highest/lowest run {max(values) / min(values):.2f}x")


if __name__ == "__main__":
    main()
