"""``torch.compile(backend="neuron")``: static-shape graphs, a compile cache, recompile
diagnostics.

The backend is registered with Dynamo through the ``torch_dynamo_backends`` entry point
(``neuron = torch_neuronx.compile.backend:neuron_backend``), so ``torch.compile(m,
backend="neuron")`` works right after ``import torch``; :func:`register` does the same by hand
(for a source tree without installed metadata). Importing this package is cheap: Dynamo and
Inductor load only when a graph is compiled.

Public API (also re-exported from ``torch_neuronx``):
  * :func:`get_dynamo_metrics`, :func:`reset_dynamo_metrics` (:mod:`.metrics`);
  * :func:`pad_to_multiple`, :func:`bucket_size`, :func:`pad_batch_to_bucket` (:mod:`.padding`).

Environment: ``TORCH_NEURONX_NEFF_CACHE_DIR``, ``TORCH_NEURONX_NEFF_DISABLE_CACHE``
(:mod:`.cache`), ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION`` (:mod:`.fallback`),
``TORCH_NEURONX_DEBUG_DIR`` (:mod:`.debug`), ``TORCH_NEURONX_RECOMPILE_WARN`` (:mod:`.metrics`).
"""
from __future__ import annotations

from .metrics import RecompileWarning, get_dynamo_metrics, reset_dynamo_metrics
from .padding import bucket_size, pad_batch_to_bucket, pad_to_multiple

BACKEND_NAME = "neuron"


def register() -> None:
    """Registers the Dynamo backend ``"neuron"`` unless it already is (idempotent).

    Imports ``torch._dynamo`` (not Inductor): call it lazily, never inside ``import torch``.
    With the package installed the ``torch_dynamo_backends`` entry point makes this
    unnecessary.
    """
    from torch._dynamo.backends import registry

    if BACKEND_NAME in registry._COMPILER_FNS:
        return
    from .backend import neuron_backend

    registry.register_backend(compiler_fn=neuron_backend, name=BACKEND_NAME)


__all__ = [
    "RecompileWarning",
    "bucket_size",
    "get_dynamo_metrics",
    "pad_batch_to_bucket",
    "pad_to_multiple",
    "register",
    "reset_dynamo_metrics",
]
