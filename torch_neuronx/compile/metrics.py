"""Compile metrics and recompile diagnostics of backend ``"neuron"``.

What a Trainium user wants to know before renting hardware: how many graphs a program
compiles, whether the cache served them, how long compiling took, and *why* a function
recompiled (which guard failed, which input dimension changed), because every recompile
on Trainium is minutes of neuronx-cc.

Counting rules (see :func:`get_dynamo_metrics`):
  * a **graph** is one FX graph Dynamo hands to the backend: the first compile of a
    function, one per graph break, one per recompile (new static shape or failed guard);
  * each graph becomes one inference graph, or a forward and (at the first backward) a
    backward graph; each of those is either **compiled** (code generated) or a **cache hit**
    (memory or disk): ``graphs_compiled + cache_hits_memory + cache_hits_disk`` is the
    number of forward/backward/inference graphs.

The recompile warning: when one function has recompiled ``TORCH_NEURONX_RECOMPILE_WARN``
times (default 3) a :class:`RecompileWarning` names the input dimension that keeps changing
and the fix (pad with :func:`torch_neuronx.compile.pad_to_multiple`, or bucket batches with
:func:`torch_neuronx.compile.pad_batch_to_bucket`).

Imports nothing from Dynamo or Inductor at import time.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal, TypedDict

log = logging.getLogger(__name__)


class RecompileWarning(UserWarning):
    """A function compiled for backend ``"neuron"`` keeps recompiling for new shapes."""


class ChangedDim(TypedDict):
    """One input dimension that changed between two compiles of a function: ``input`` (Dynamo's
    source name, e.g. ``"L['ids']"``), ``dim`` (None when the rank changed; ``before`` and
    ``after`` are then whole shapes), ``before`` and ``after`` (sizes)."""

    input: str
    dim: int | None
    before: int | list[int]
    after: int | list[int]


class RecompileRecord(TypedDict):
    """One recompile: ``function`` (``"'name' (file:line)"``), ``compile_id`` (Dynamo's
    ``"frame/attempt"``), ``guard`` (Dynamo's first failed guard, ``""`` if unknown) and
    ``changed`` (the input dimensions that differ from the previous compile)."""

    function: str
    compile_id: str
    guard: str
    changed: list[ChangedDim]


class CorruptRecord(TypedDict):
    """A disk cache entry found truncated or corrupt: its ``path`` and the ``reason``."""

    path: str
    reason: str


class FallbackRecord(TypedDict):
    """A graph that failed to compile and ran eagerly: which ``graph`` and the ``reason``."""

    graph: str
    reason: str


class DynamoMetrics(TypedDict):
    """What :func:`get_dynamo_metrics` returns (a plain dict at run time; keys below)."""

    graphs: int
    graphs_compiled: int
    cache_hits_memory: int
    cache_hits_disk: int
    cache_corrupt: list[CorruptRecord]
    compile_seconds: float
    recompiles: list[RecompileRecord]
    graph_breaks: dict[str, int]
    fallbacks: list[FallbackRecord]


@dataclass
class _State:
    graphs: int = 0
    graphs_compiled: int = 0
    cache_hits_memory: int = 0
    cache_hits_disk: int = 0
    cache_corrupt: list[CorruptRecord] = field(default_factory=list)
    compile_seconds: float = 0.0
    recompiles: list[RecompileRecord] = field(default_factory=list)
    fallbacks: list[FallbackRecord] = field(default_factory=list)
    graph_break_baseline: Counter = field(default_factory=Counter)
    # frame id -> list of input signatures [(name, shape)], in compile order
    frames: dict[int, list[list[tuple[str, tuple[int, ...]]]]] = field(default_factory=dict)
    frame_names: dict[int, str] = field(default_factory=dict)
    warned_frames: set[int] = field(default_factory=set)


_lock = threading.Lock()
_state = _State()


_bad_threshold_warned: set[str] = set()


def recompile_warn_threshold() -> int:
    """Recompiles of one function before :class:`RecompileWarning` (env
    ``TORCH_NEURONX_RECOMPILE_WARN``, default 3; 0 disables the warning).

    A value that is not an integer >= 0 (``abc``, ``-3``, ``2.5``) warns once (``UserWarning``,
    naming the variable and the values it takes) and the default 3 applies."""
    value = os.environ.get("TORCH_NEURONX_RECOMPILE_WARN", "").strip()
    if not value:
        return 3
    try:
        threshold = int(value)
    except ValueError:
        threshold = -1
    if threshold >= 0:
        return threshold
    if value not in _bad_threshold_warned:
        _bad_threshold_warned.add(value)
        warnings.warn(f"TORCH_NEURONX_RECOMPILE_WARN={value!r} is not an integer >= 0: using 3 (the number of "
                      f"recompiles of one function before the pad/bucket warning; 0 turns the warning off)",
                      UserWarning, stacklevel=2)
    return 3


def _graph_break_counter() -> Counter:
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return Counter()
    return Counter(utils.counters.get("graph_break", {}))


def get_dynamo_metrics() -> DynamoMetrics:
    """Metrics of backend ``"neuron"`` since process start or :func:`reset_dynamo_metrics`.

    Returns a new dict (typed :class:`DynamoMetrics`; mutating it changes nothing here):
      * ``graphs`` (int): FX graphs Dynamo handed to the backend (first compiles, graph
        breaks and recompiles; a cache hit still counts here: Dynamo traced it);
      * ``graphs_compiled`` (int): forward/backward/inference graphs whose code was generated;
      * ``cache_hits_memory`` / ``cache_hits_disk`` (int): such graphs served by the cache;
      * ``cache_corrupt`` (list of dict ``path``, ``reason``): disk entries found truncated or
        corrupt (each was recompiled and rewritten);
      * ``compile_seconds`` (float, s): wall time spent in the backend (tracing with
        AOTAutograd, code generation, C++ compilation, cache loads);
      * ``recompiles`` (list of dict): one per recompile, with ``function`` (name, file:line),
        ``compile_id`` (Dynamo's "frame/attempt"), ``guard`` (Dynamo's first failed guard, e.g.
        ``"tensor 'input_ids' size mismatch at index 1. expected 17, actual 23"``) and
        ``changed`` (list of ``{"input", "dim", "before", "after"}``);
      * ``graph_breaks`` (dict reason → count): Dynamo's graph-break reasons (all backends);
      * ``fallbacks`` (list of dict ``graph``, ``reason``): graphs run eagerly after a failed
        compile (only with ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0``).
    """
    with _lock:
        s = _state
        breaks = _graph_break_counter()
        breaks.subtract(s.graph_break_baseline)
        return DynamoMetrics(
            graphs=s.graphs,
            graphs_compiled=s.graphs_compiled,
            cache_hits_memory=s.cache_hits_memory,
            cache_hits_disk=s.cache_hits_disk,
            cache_corrupt=[CorruptRecord(**c) for c in s.cache_corrupt],
            compile_seconds=round(s.compile_seconds, 6),
            recompiles=[RecompileRecord(function=r["function"], compile_id=r["compile_id"],
                                        guard=r["guard"], changed=[ChangedDim(**c) for c in r["changed"]])
                        for r in s.recompiles],
            graph_breaks={k: v for k, v in breaks.items() if v > 0},
            fallbacks=[FallbackRecord(**f) for f in s.fallbacks],
        )


def reset_dynamo_metrics() -> None:
    """Zeroes every counter of :func:`get_dynamo_metrics` and forgets the shapes seen per
    function (the recompile warning counts again from zero). Compiled graphs stay cached."""
    global _state
    with _lock:
        _state = _State(graph_break_baseline=_graph_break_counter())


# --- recording (called by the backend and the cache) ---------------------------------------

def record_compile_time(seconds: float) -> None:
    """Adds ``seconds`` (wall time) to ``compile_seconds``."""
    with _lock:
        _state.compile_seconds += seconds


def record_compiled() -> None:
    """Counts one forward/backward/inference graph whose code was generated."""
    with _lock:
        _state.graphs_compiled += 1


def record_cache_hit(level: Literal["memory", "disk"]) -> None:
    """Counts one graph served by the cache's memory or disk level."""
    with _lock:
        if level == "memory":
            _state.cache_hits_memory += 1
        else:
            _state.cache_hits_disk += 1


def record_corrupt(path: str, reason: str) -> None:
    """Records a disk entry found truncated or corrupt (it is being recompiled)."""
    with _lock:
        _state.cache_corrupt.append(CorruptRecord(path=path, reason=reason))


def record_fallback(graph: str, reason: str) -> None:
    """Records a graph that failed to compile and runs eagerly."""
    with _lock:
        _state.fallbacks.append(FallbackRecord(graph=graph, reason=reason))


def record_graph(frame_id: int | None, attempt: int | None, function: str,
                 signature: list[tuple[str, tuple[int, ...]]], guard: str | None) -> None:
    """Counts one Dynamo graph; on a recompile (``attempt`` > 0) records the failed guard and
    the input dimensions that changed against the previous compile of that function, and
    warns (once per function) when the function reached the recompile threshold.

    Args:
        frame_id / attempt: Dynamo's compile id (``frame_id``, ``frame_compile_id``).
        function: ``"name (file:line)"`` of the compiled function.
        signature: (input name, static shape) per tensor input of the graph.
        guard: Dynamo's recompile reason, or None.
    """
    warn_msg = None
    log_recompile = None
    with _lock:
        s = _state
        s.graphs += 1
        if frame_id is None:
            return
        history = s.frames.setdefault(frame_id, [])
        s.frame_names.setdefault(frame_id, function)
        if attempt and history:
            changed = _diff(history[-1], signature)
            s.recompiles.append(RecompileRecord(function=function, compile_id=f"{frame_id}/{attempt}",
                                                guard=guard or "", changed=changed))
            log_recompile = (function, f"{frame_id}/{attempt}", guard or "unknown", _describe(changed))
            n = sum(1 for r in s.recompiles if r["compile_id"].split("/")[0] == str(frame_id))
            threshold = recompile_warn_threshold()
            if threshold and n >= threshold and frame_id not in s.warned_frames:
                s.warned_frames.add(frame_id)
                warn_msg = _advice(function, n, history + [signature])
        history.append(signature)
    if log_recompile:
        log.info("recompiling %s (compile %s): guard failed: %s; changed input dimensions: %s", *log_recompile)
    if warn_msg:
        warnings.warn(warn_msg, RecompileWarning, stacklevel=3)


def _describe(changed: list[ChangedDim]) -> str:
    """``"L['ids'][1] 8 -> 9, L['mask'] [2, 8] -> [2, 8, 1]"`` (``"none"`` when nothing changed)."""
    parts = []
    for c in changed:
        where = c["input"] if c["dim"] is None else f"{c['input']}[{c['dim']}]"
        parts.append(f"{where} {c['before']} -> {c['after']}")
    return ", ".join(parts) or "none"


def _diff(before: list[tuple[str, tuple[int, ...]]],
          after: list[tuple[str, tuple[int, ...]]]) -> list[ChangedDim]:
    old = dict(before)
    out: list[ChangedDim] = []
    for name, shape in after:
        prev = old.get(name)
        if prev is None:
            continue
        if len(prev) != len(shape):
            out.append(ChangedDim(input=name, dim=None, before=list(prev), after=list(shape)))
            continue
        for d, (a, b) in enumerate(zip(prev, shape, strict=True)):
            if a != b:
                out.append(ChangedDim(input=name, dim=d, before=a, after=b))
    return out


def _advice(function: str, n: int, history) -> str:
    """The warning text: which (input, dim) took most distinct sizes, and the fix."""
    sizes: dict[tuple[str, int], set[int]] = {}
    for sig in history:
        for name, shape in sig:
            for d, v in enumerate(shape):
                sizes.setdefault((name, d), set()).add(v)
    varying = sorted(((k, v) for k, v in sizes.items() if len(v) > 1), key=lambda kv: -len(kv[1]))
    head = (f"backend 'neuron': {function} recompiled {n} times (each new shape is a new static "
            f"graph; Dynamo runs the function eagerly after "
            f"torch._dynamo.config.recompile_limit recompiles).")
    if not varying:
        return head + " No input shape changed: see get_dynamo_metrics()['recompiles'] for the guard."
    (name, dim), seen = varying[0]
    seen_s = ", ".join(str(v) for v in sorted(seen)[:8])
    if dim == 0:
        fix = (f"input '{name}' dimension 0 (batch size) took sizes {seen_s}: bucket batch sizes "
               f"with torch_neuronx.compile.pad_batch_to_bucket(batch) (powers of two), or drop "
               f"the last short batch (drop_last=True).")
    else:
        fix = (f"input '{name}' dimension {dim} (sequence length) took sizes {seen_s}: pad it to a "
               f"multiple of 128 with torch_neuronx.compile.pad_to_multiple(x, 128, dim={dim}) "
               f"(tokenizer: padding='max_length' or pad_to_multiple_of=128).")
    others = [f"'{k[0]}' dim {k[1]}" for k, _ in varying[1:4]]
    tail = f" Also varying: {', '.join(others)}." if others else ""
    return f"{head} Pad or bucket {fix}{tail}"
