"""Counters of adaptive eager execution, read from the C++ recorder."""
from __future__ import annotations

from typing import TypedDict

from .. import _C


class AdaptiveEagerMetrics(TypedDict):
    """Counters since start or the last :func:`reset_adaptive_eager_metrics` (ops are ATen ops).

    ``queued_ops``: ops queued without running (their results filled at the next flush);
    ``recorded_ops``: ops run at once while their trace was recorded (a trace seen the first time);
    ``cut_ops``: ops that ended a merge (outside the allow-list, a CPU operand, ...);
    ``flushes``: traces ended by a cut; ``kernel_hits``: flushes run by a cached compiled kernel;
    ``kernel_misses``: flushes of queued ops run op by op (no kernel yet, or it failed);
    ``merged_ops``: ops executed inside compiled kernels; ``replayed_ops``: queued ops run op by op;
    ``compiles`` / ``compile_failures`` / ``kernel_failures``: kernels built, refused by Inductor,
    or failing at run time (their traces run op by op from then on); ``compile_time_s``: seconds
    spent compiling; ``dead_flushes``: flushes with no live result (nothing had to run);
    ``waiting_flushes``: flushes of queued traces long enough to compile that ran op by op because
    the trace had ended fewer than :func:`~torch_neuronx.adaptive.compile_after` times;
    ``cached_kernels``: compiled kernels in memory; ``trie_nodes``: recorded op positions.
    """

    queued_ops: int
    recorded_ops: int
    cut_ops: int
    flushes: int
    kernel_hits: int
    kernel_misses: int
    merged_ops: int
    replayed_ops: int
    compiles: int
    compile_failures: int
    kernel_failures: int
    compile_time_s: float
    dead_flushes: int
    waiting_flushes: int
    cached_kernels: int
    trie_nodes: int


def get_adaptive_eager_metrics() -> AdaptiveEagerMetrics:
    """The counters of adaptive eager execution (all zero when it never ran)."""
    raw = dict(_C._adaptive_stats())
    compile_ns = raw.pop("compile_time_ns")
    return AdaptiveEagerMetrics(compile_time_s=compile_ns / 1e9, **raw)  # type: ignore[typeddict-item]


def reset_adaptive_eager_metrics() -> None:
    """Sets every counter of :func:`get_adaptive_eager_metrics` to zero (cached kernels stay)."""
    _C._adaptive_reset_stats()
