"""Is a change between two groups of runs more than the runs' own scatter? The test compare uses.

The unit of comparison is the run, not the call. Identical IOzone runs on one machine varied
2-7x in p99 from run to run, while the calls inside one run are neither independent nor
identically distributed (a run's page cache, its placement on disk, a neighbour's burst).
A test that pooled the calls of a group would call every such run-to-run swing significant:
with 100,000 calls per run even a 1 % difference passes. So each run gives one figure per
phase and metric (its p99, its throughput, ...), and the two groups of figures are compared.

The test: Welch's t on the logarithms of the per-run figures (figures of latency and
throughput are positive and their scatter is multiplicative, so the log makes it symmetric
and the ratio of geometric means is what is estimated), two-sided, with its confidence
interval of the ratio B/A. When a figure is zero or negative in some run, the same test on
the figures themselves (the interval is then of the difference).

Why not the alternatives, with 3 runs a group (what a CI job affords):
- Mann-Whitney U on the per-run figures: with 3 + 3 runs its smallest two-sided p is
  2/20 = 0.1; it can never say p < 0.05 however large the change (it needs 4 + 4 runs,
  smallest p 0.029).
- A bootstrap over runs: 3 runs have 10 distinct resamples; the percentile interval is
  narrower than the true one by about sqrt((n-1)/n) and too often excludes no change (its
  false-positive rate is far above its nominal level below about 10 runs a group).
- Welch's t works from 2 runs a group (one degree of freedom: only a very large change relative
  to the scatter passes) and is close to exact when the log-figures are near normal; its
  false-positive rate on identical runs is measured by scripts/bench/compare_fpr.py
  (docs/compare-groups.md has the figures).

Pure Python (no scipy): the t distribution's CDF is the regularized incomplete beta function.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

ALPHA = 0.05          # two-sided; a change is significant when p < ALPHA
MIN_RUNS = 2          # per group, for a test (a group of one run has no scatter)


@dataclass(frozen=True)
class Test:
    n: tuple[int, int]          # runs with a figure in each group
    scale: str                  # "log": ratio of geometric means; "linear": difference of means
    estimate: float | None      # the ratio B/A (log) or the difference B-A (linear)
    low: float | None           # its confidence interval at 1 - ALPHA
    high: float | None
    p: float | None             # None: no test (fewer than MIN_RUNS runs in a group)

    def significant(self, alpha: float = ALPHA) -> bool:
        return self.p is not None and self.p < alpha

    def as_dict(self) -> dict:
        return {"n": list(self.n), "scale": self.scale, "estimate": self.estimate, "low": self.low,
                "high": self.high, "p": self.p, "significant": self.significant()}


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom."""
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(q: float, df: float) -> float:
    """The t value with P(T <= value) = q (q > 0.5), by bisection on the CDF."""
    target = 2.0 * (1.0 - q)     # two-sided tail
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > target:
        high *= 2.0
    for _ in range(60):          # 2^-60 of the bracket: far below any printed digit
        mid = (low + high) / 2.0
        if t_two_sided_p(mid, df) > target:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def welch(a_given: list[float | None], b_given: list[float | None], alpha: float = ALPHA) -> Test:
    """Welch's t test of group B against group A, on the logs when every figure is positive
    (None or not finite: that run has no figure, left out)."""
    a = [float(v) for v in a_given if v is not None and math.isfinite(v)]
    b = [float(v) for v in b_given if v is not None and math.isfinite(v)]
    n = (len(a), len(b))
    log = all(v > 0 for v in a + b)
    scale = "log" if log else "linear"
    if min(n) < MIN_RUNS:
        return Test(n, scale, None, None, None, None)
    xa, xb = ([math.log(v) for v in a], [math.log(v) for v in b]) if log else (a, b)
    ma, mb = statistics.fmean(xa), statistics.fmean(xb)
    va, vb = statistics.variance(xa) / n[0], statistics.variance(xb) / n[1]
    diff, se2 = mb - ma, va + vb
    back = (lambda x: math.exp(x)) if log else (lambda x: x)
    if se2 <= 0.0:
        # neither group scatters at all (counts of bytes, of calls): any difference is real
        p = 1.0 if diff == 0 else 0.0
        return Test(n, scale, back(diff), back(diff), back(diff), p)
    df = se2 * se2 / ((va * va / (n[0] - 1) if va else 0.0) + (vb * vb / (n[1] - 1) if vb else 0.0))
    t = diff / math.sqrt(se2)
    half = t_quantile(1.0 - alpha / 2.0, df) * math.sqrt(se2)
    return Test(n, scale, back(diff), back(diff - half), back(diff + half), t_two_sided_p(t, df))
