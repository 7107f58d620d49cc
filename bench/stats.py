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


def median_block_bootstrap_ci(values: list[float], block: int, level: float = 0.95, resamples: int = 2000,
                              seed: int = 0) -> tuple[float, float]:
    """Confidence interval of the median of a time series ``values`` by the block bootstrap.

    ``values`` are cut into consecutive blocks of ``block`` values (a last, shorter block is dropped
    when the others suffice); each of ``resamples`` resamples draws as many blocks, with replacement,
    and takes the median of their values; the interval is the ``(1 - level)/2`` and ``(1 + level)/2``
    quantiles of those medians. Unlike :func:`median_ci`, it does not assume the values independent:
    timings taken one after the other share the machine's state (another job's burst, where the
    scheduler put a thread) for seconds, and resampling whole blocks keeps that dependence in the
    interval. Deterministic for a given ``seed``. Fewer than 2 blocks: :func:`median_ci` instead.
    """
    import random
    import statistics

    blocks = [values[i:i + block] for i in range(0, len(values) - block + 1, block)]
    if len(blocks) < 2:
        return median_ci(values, level)
    rng = random.Random(seed)
    medians = sorted(statistics.median([v for _ in blocks for v in rng.choice(blocks)])
                     for _ in range(resamples))
    lo = int(math.floor((1 - level) / 2 * resamples))
    hi = int(math.ceil((1 + level) / 2 * resamples)) - 1
    return medians[lo], medians[min(hi, resamples - 1)]
