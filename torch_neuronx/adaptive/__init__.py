"""Adaptive Eager Execution (``TORCH_NEURONX_ADAPTIVE_EAGER=1``, off by default).

Eager ops on ``neuron`` are queued by the C++ recorder (``csrc/aten/AdaptiveEager.cpp``); each run
of queued ops is executed at the next cut as one Inductor kernel compiled by
:mod:`torch_neuronx.adaptive.compiler`, cached by op sequence, input metadata, scalar arguments and
live results. A sequence seen for the first time runs op by op while it is recorded, and so does a
sequence seen fewer than :func:`compile_after` times (``TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER``,
default 8): only sequences that repeat are compiled. A kernel that cannot be compiled leaves its
trace running op by op. Reading a value (``.item()``, ``.cpu()``,
``print``), ``torch.neuron.synchronize()``, an op outside the allow-list, a device change and
deterministic mode cut a merge. Counters: :func:`get_adaptive_eager_metrics`.
"""
from __future__ import annotations

import os
import warnings
from typing import Any

from .. import _C
from . import storage_access
from .metrics import AdaptiveEagerMetrics, get_adaptive_eager_metrics, reset_adaptive_eager_metrics

ENV = "TORCH_NEURONX_ADAPTIVE_EAGER"

__all__ = ["AdaptiveEagerMetrics", "clear_cache", "compile_after", "enabled", "flush",
           "get_adaptive_eager_metrics", "last_compile_error", "reset_adaptive_eager_metrics",
           "set_compile_after", "set_enabled"]


def _compile(description: Any) -> Any:
    # A compile runs inside whatever op cut the merge: the warnings of importing and running Inductor
    # (deprecations of modules it imports, its fake-tensor passes) are not the op's, so the caller never
    # sees them (a compile that fails is reported by last_compile_error()).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from .compiler import compile_trace

        return compile_trace(description)


def install() -> None:
    """Hands the kernel compiler to the C++ recorder (imports nothing heavy; Inductor loads at the
    first compile) and makes ``Tensor.untyped_storage()`` run the queued ops that write the storage
    first (:mod:`.storage_access`). Called by the autoload when ``TORCH_NEURONX_ADAPTIVE_EAGER=1``
    and by :func:`set_enabled`."""
    _C._adaptive_set_compiler(_compile)
    storage_access.install()


def read_env() -> bool:
    """True when ``TORCH_NEURONX_ADAPTIVE_EAGER`` is ``1``; ``0`` or unset is off. Any other value
    is off with a warning naming the accepted values (a bad value never breaks ``import torch``)."""
    value = os.environ.get(ENV, "0").strip()
    if value not in ("0", "1", ""):
        warnings.warn(f"{ENV}={value!r} is not 0 or 1: adaptive eager execution stays off. "
                      f"Set {ENV}=1 to turn it on.", stacklevel=2)
    return value == "1"


def enabled() -> bool:
    """True while eager ``neuron`` ops are queued and merged."""
    return bool(_C._adaptive_enabled())


def set_enabled(flag: bool) -> None:
    """Turns adaptive eager execution on or off for the process (off runs what is queued first).

    Overrides ``TORCH_NEURONX_ADAPTIVE_EAGER`` and sets it to match (graphs compiled with
    ``torch.compile`` afterwards, and child processes, follow it); the cached kernels stay.
    """
    os.environ[ENV] = "1" if flag else "0"
    if flag:
        install()
    _C._adaptive_set_enabled(bool(flag))


def flush() -> None:
    """Runs every queued op now (``torch.neuron.synchronize()`` does the same)."""
    _C._adaptive_flush()


def clear_cache() -> None:
    """Forgets every recorded trace and compiled kernel (runs what is queued first)."""
    _C._adaptive_clear_cache()


def compile_after() -> int:
    """How many times a recorded op sequence must end (be flushed) before its kernel is compiled;
    until then it runs op by op. From ``TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER`` (an integer >= 1,
    default 8; another value prints a message on stderr and uses 8)."""
    return int(_C._adaptive_compile_after())


def set_compile_after(count: int) -> None:
    """Sets :func:`compile_after` for the process (kernels already compiled stay).

    Raises ``ValueError`` when ``count`` is not an integer >= 1.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"compile_after must be an integer >= 1 (the number of times a trace ends "
                         f"before its kernel is compiled), got {count!r}")
    _C._adaptive_set_compile_after(count)


def last_compile_error() -> str:
    """The message of the last failed compile or kernel run ('' if none)."""
    return str(_C._adaptive_last_error())
