"""Variability of a sample as the Aries noise paper reports it (De Sensi, Di Girolamo, Hoefler,
SC'19, §3.3): the quartile coefficient of dispersion QCD = (Q3 - Q1) / (Q3 + Q1), the median
with a 95 % confidence interval, and max / median (how far the worst outlier is).

One function, :func:`from_order_statistics`, computes them from the sample's order statistics,
so the same figures come from an array in memory (:func:`variability`) and from a store that
only answers "the k-th smallest value" (the packet statistics' spilled latencies).  Everything
is exact and deterministic: quartiles are NumPy's default (linear, Hyndman and Fan's type 7)
percentiles, computed as ``np.percentile`` computes them; the confidence interval is two order
statistics.

The median's confidence interval is distribution-free: for a sample of ``n`` independent values
from a continuous law, the number below the true median is Binomial(n, 1/2), so the interval
from the ``j``-th to the ``(n - j + 1)``-th smallest value covers the median with probability
``1 - 2 P(B <= j - 1)``.  ``j`` is the largest rank whose coverage is still at least 95 %
(W. J. Conover, *Practical Nonparametric Statistics*, 3rd ed., Wiley 1999, §3.2, the
confidence interval for a quantile; J.-Y. Le Boudec, *Performance Evaluation of Computer and
Communication Systems*, EPFL Press 2010, Thm. 2.1, with the exact binomial instead of its normal
approximation for n > 70; the method T. Hoefler and R. Belli recommend for benchmarks,
"Scientific Benchmarking of Parallel Computing Systems", SC'15).  Below 6 values no interval
reaches 95 % and none is given.  Successive message times are not independent (a burst of
background delays several), so the interval is the paper's figure, not a guarantee.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from federation.results.model import Variability

#: the confidence level of the median's interval
CONFIDENCE = 0.95
#: the k-th smallest values (0-based ranks) of a sample
OrderStatistics = Callable[[list[int]], dict[int, int | float]]


def median_ci_ranks(n: int, level: float = CONFIDENCE) -> tuple[int, int, float] | None:
    """0-based ranks ``(lo, hi)`` of the median's distribution-free interval and its exact
    coverage; ``None`` when even the whole sample's range covers less than ``level``."""
    if n < 1:
        return None
    from scipy.stats import binom  # here, not at import: scipy.stats costs every run 0.3 s

    tail = (1 - level) / 2
    k = int(binom.ppf(tail, n, 0.5))  # the least k with P(B <= k) >= tail
    j = k + 1 if binom.cdf(k, n, 0.5) <= tail else k  # 1-based: P(B <= j - 1) <= tail
    if j < 1:
        return None
    return j - 1, n - j, float(1 - 2 * binom.cdf(j - 1, n, 0.5))


def _quantile(v: dict[int, int | float], n: int, q: float, per_unit: float) -> float:
    """NumPy's linear percentile from the order statistics (its own interpolation, so the
    result is bit for bit ``np.percentile(values / per_unit, 100 q)``)."""
    virtual = (n - 1) * q
    i = min(int(math.floor(virtual)), n - 1)
    a, b = v[i] / per_unit, v[min(i + 1, n - 1)] / per_unit
    t = virtual - i
    diff = b - a
    return float(b - diff * (1 - t)) if t >= 0.5 else float(a + diff * t)


def _ranks(n: int) -> list[int]:
    out = []
    for q in (0.25, 0.5, 0.75):
        i = min(int(math.floor((n - 1) * q)), n - 1)
        out += [i, min(i + 1, n - 1)]
    return out


def from_order_statistics(n: int, kth: OrderStatistics, per_unit: float = 1.0
                          ) -> Variability | None:
    """The variability figures of a sample of ``n`` values (``None`` for an empty one) that
    ``kth`` answers order statistics of; each value is divided by ``per_unit`` (1,000 for ps
    reported in ns)."""
    if n <= 0:
        return None
    ci = median_ci_ranks(n)
    ranks = _ranks(n) + [n - 1] + ([ci[0], ci[1]] if ci else [])
    v = kth(sorted(set(ranks)))
    q1, med, q3 = (_quantile(v, n, q, per_unit) for q in (0.25, 0.5, 0.75))
    top = float(v[n - 1] / per_unit)
    return Variability(
        samples=n, median=med,
        median_ci_low=float(v[ci[0]] / per_unit) if ci else None,
        median_ci_high=float(v[ci[1]] / per_unit) if ci else None,
        median_ci_coverage=ci[2] if ci else None,
        q1=q1, q3=q3,
        qcd=(q3 - q1) / (q3 + q1) if q3 + q1 > 0 else None,
        max=top, max_over_median=top / med if med > 0 else None)


def variability(values: np.ndarray, per_unit: float = 1.0) -> Variability | None:
    """The variability figures of an array of non-negative values (any order)."""
    x = np.asarray(values).ravel()
    if x.size == 0:
        return None

    def kth(ranks: list[int]) -> dict[int, int | float]:
        part = np.partition(x, ranks)
        return {k: part[k].item() for k in ranks}

    return from_order_statistics(int(x.size), kth, per_unit)
