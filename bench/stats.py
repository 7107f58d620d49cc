"""Statistics shared by the benchmarks."""
from __future__ import annotations

import math


def median_ci(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median of ``values`` (order statistics).

    The interval runs from the k-th smallest to the k-th largest value, with k the largest rank whose
    binomial(n, 1/2) tail probability on each side is at most ``(1 - level) / 2``. With fewer than 6
    values (at 95%) no such k exists and the whole range is returned. Makes no assumption about the
    distribution, so it suits timings, whose noise is skewed and often bimodal.
    """
    xs, n = sorted(values), len(values)
    tail, k = 0.0, 0
    for j in range(n // 2):
        tail += math.comb(n, j) / 2**n   # P(at most j values fall below the median)
        if tail > (1 - level) / 2:
            break
        k = j + 1
    return (xs[k - 1], xs[n - k]) if k else (xs[0], xs[-1])
