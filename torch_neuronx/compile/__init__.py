"""``torch.compile(backend="neuron")``: static-shape graphs, a compile cache, recompile
diagnostics.

The backend is registered with Dynamo through the ``torch_dynamo_backends`` entry point
(``neuron = torch_neuronx.compile.backend:neuron_backend``), so ``torch.compile(m,
backend="neuron")`` works right after ``import torch``; :func:`register` does the same by hand
(for a source tree without installed metadata). Importing this package is cheap and changes
no setting: Dynamo and Inductor load only when a graph is compiled, and the one process-wide
Dynamo setting of the backend is applied when the backend module loads (:mod:`.dynamo_config`).

Public API (also re-exported from ``torch_neuronx``):
  * :func:`get_dynamo_metrics` (returns :class:`DynamoMetrics`), :func:`reset_dynamo_metrics`
    (:mod:`.metrics`);
  * :func:`pad_to_multiple`, :func:`bucket_size`, :func:`pad_batch_to_bucket` (:mod:`.padding`).

Modules, one concern each: :mod:`.backend` (the Dynamo backend), :mod:`.default_backend`
(``torch.compile`` without ``backend=``: auto-selection), :mod:`.static_shapes`,
:mod:`.dynamo_config`, :mod:`.graph_identity`, :mod:`.aten_compile` (each ATen graph through the
cache), :mod:`.cache_key`, :mod:`.serialization`, :mod:`.cache`, :mod:`.mega_cache`
(``torch.compiler`` cache artifacts), :mod:`.precompile` (AOT compile refused), :mod:`.device_pinning`,
:mod:`.inductor_device`, :mod:`.decompositions`, :mod:`.fallback`, :mod:`.metrics`,
:mod:`.debug`, :mod:`.padding`.

Environment: ``TORCH_NEURONX_NEFF_CACHE_DIR``, ``TORCH_NEURONX_NEFF_DISABLE_CACHE``
(:mod:`.cache`), ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION`` (:mod:`.fallback`),
``TORCH_NEURONX_DEBUG_DIR`` (:mod:`.debug`), ``TORCH_NEURONX_RECOMPILE_WARN`` (:mod:`.metrics`).
"""
from __future__ import annotations

from .metrics import DynamoMetrics, RecompileWarning, get_dynamo_metrics, reset_dynamo_metrics
from .padding import bucket_size, pad_batch_to_bucket, pad_to_multiple

#: The name ``torch.compile(backend=...)`` takes (TorchNeuron's).
BACKEND_NAME = "neuron"


def register() -> None:
    """Registers the Dynamo backend ``"neuron"`` unless it already is (idempotent).

    Imports ``torch._dynamo`` (not Inductor) and the backend module, which turns Dynamo's
    automatic dynamic shapes off for the process (:mod:`.dynamo_config`): call it lazily, never
    inside ``import torch``. With the package installed the ``torch_dynamo_backends`` entry point makes this
    unnecessary.
    """
    from torch._dynamo.backends import registry

    if BACKEND_NAME in registry._COMPILER_FNS:
        return
    from .backend import neuron_backend  # lazy: loads the backend (and its Dynamo setting) on use

    registry.register_backend(compiler_fn=neuron_backend, name=BACKEND_NAME)


__all__ = [
    "BACKEND_NAME",
    "DynamoMetrics",
    "RecompileWarning",
    "bucket_size",
    "get_dynamo_metrics",
    "pad_batch_to_bucket",
    "pad_to_multiple",
    "register",
    "reset_dynamo_metrics",
]
