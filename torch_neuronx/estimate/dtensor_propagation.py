"""Telling DTensor's sharding propagation apart from the program's own ops.

DTensor learns the global shape of an op's result by running the op once more on fake tensors of the
*global* shapes (``ShardingPropagator._propagate_tensor_meta_non_cached``), under the fake mode it detects,
which is the user's own ``FakeTensorMode`` in a shape-only estimate. A dispatch mode therefore sees, beside
each local matmul of a tensor-parallel step, the matmul of the full unsharded shapes (Llama-3.1-8B at
TP 8 x FSDP 4: 39.8 TFLOP recorded instead of 23.05). That run happens inside
``with ShardingPropagator._fake_mode_lock:``, a class attribute PyTorch provides to be replaced (its comment:
multi-threaded tests set it to ``threading.Lock()``). :func:`install` replaces it, while an estimate is
active, by a context manager that wraps the original and counts how deep the process is inside
propagation; the recorder ignores ops run there.

This is the estimator's one use of a private torch attribute: it is pinned to torch 2.13
(:data:`PINNED_TORCH`) and checked against the original (``tests/estimate/test_pinned_torch.py``).
"""
from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any

import torch

__all__ = ["PINNED_TORCH", "install", "uninstall", "inside", "PropagationMarker"]

#: The torch minor version whose ``ShardingPropagator._fake_mode_lock`` use this was written against
#: (torch/distributed/tensor/_sharding_prop.py: ``with ShardingPropagator._fake_mode_lock:`` around the
#: fake run in ``_propagate_tensor_meta_non_cached``).
PINNED_TORCH = "2.13"


class PropagationMarker:
    """Context manager standing in for ``ShardingPropagator._fake_mode_lock``: enters the original and
    counts the depth of sharding propagation on this thread."""

    def __init__(self, inner: AbstractContextManager[Any]):
        self.inner = inner
        self._local = threading.local()

    @property
    def depth(self) -> int:
        """How many sharding propagations this thread is inside (0 outside)."""
        return getattr(self._local, "depth", 0)

    def __enter__(self):
        self.inner.__enter__()
        self._local.depth = self.depth + 1
        return self

    def __exit__(self, *exc):
        self._local.depth = self.depth - 1
        return self.inner.__exit__(*exc)


_marker: PropagationMarker | None = None


def _propagator():
    try:
        from torch.distributed.tensor._sharding_prop import ShardingPropagator
    except ImportError:        # torch built without distributed: no DTensor
        return None
    return ShardingPropagator


def install() -> None:
    """Puts the marker in place (idempotent). Does nothing without ``torch.distributed``.

    Raises:
        RuntimeError: torch is not 2.13.x, or ``_fake_mode_lock`` is missing (a new torch: check
            ``_propagate_tensor_meta_non_cached`` and update :data:`PINNED_TORCH`).
    """
    global _marker
    cls = _propagator()
    if cls is None:
        return
    current = getattr(cls, "_fake_mode_lock", None)
    if isinstance(current, PropagationMarker):
        _marker = current
        return
    if not torch.__version__.startswith(PINNED_TORCH + ".") or current is None or \
            not hasattr(current, "__enter__"):
        raise RuntimeError(
            f"torch_neuronx.estimate marks DTensor's sharding propagation through "
            f"ShardingPropagator._fake_mode_lock as in torch {PINNED_TORCH}; this is torch {torch.__version__}: "
            "check torch/distributed/tensor/_sharding_prop.py and update PINNED_TORCH in "
            "torch_neuronx/estimate/dtensor_propagation.py")
    _marker = PropagationMarker(current)
    cls._fake_mode_lock = _marker


def uninstall() -> None:
    """Restores the original ``_fake_mode_lock``."""
    global _marker
    cls = _propagator()
    if cls is not None and isinstance(getattr(cls, "_fake_mode_lock", None), PropagationMarker):
        cls._fake_mode_lock = cls._fake_mode_lock.inner
    _marker = None


def inside() -> bool:
    """True while this thread runs DTensor's sharding propagation."""
    return _marker is not None and _marker.depth > 0
