"""The one process-wide setting backend ``"neuron"`` changes: Dynamo's automatic dynamic shapes.

**What.** :data:`STATIC_SHAPE_DYNAMO_CONFIG`: ``torch._dynamo.config.automatic_dynamic_shapes =
False``.

**Why.** TorchNeuron compiles static shapes. Dynamo's default, when a frame recompiles because a
size changed, marks that dimension dynamic and hands the backend a symbolic graph, which
backend ``"neuron"`` would have to refuse (:mod:`.static_shapes`). With the setting off, every
new input shape is a new static graph: compiled once, cached (:mod:`.cache`) and reported by
the recompile diagnostics (:mod:`.metrics`), which point to padding (:mod:`.padding`).

**Where it is applied.** :func:`apply` runs once per process, when
``torch_neuronx.compile.backend`` is imported, that is when Dynamo resolves the name
``"neuron"`` (``torch.compile(..., backend="neuron")`` loads the ``torch_dynamo_backends`` entry
point) or :func:`torch_neuronx.compile.register` runs. It must come before Dynamo traces the
first frame, not at the backend's first graph: Dynamo's local profile-guided optimisation
(``torch._dynamo.config.automatic_dynamic_local_pgo``, on by default) can mark dimensions
dynamic on a frame's very first trace, from a profile an earlier process recorded.
Importing ``torch`` or ``torch_neuronx`` (or ``torch_neuronx.compile``) does not apply it. With the
backend auto-selected (``torch.compile`` without ``backend=``, :mod:`.default_backend`), the module
loads when the first graph reaches backend ``"neuron"``: that first frame was traced with Dynamo's
default, every later trace (its recompiles included) is static.

**Why process-wide.** Dynamo reads the setting while it traces, before any backend sees the
graph. Dynamo has two ways to scope it to some frames: ``torch.compile(..., dynamic=False)``,
which sets exactly this setting around each call of the compiled function, and a backend's
``backend_ctx_ctor`` attribute (a context entered around each call). ``torch.compile`` wraps a
backend given by name in its ``_TorchCompileWrapper``, which does not forward that attribute
(torch 2.13), so a backend cannot scope the setting itself.

**Consequences.** Frames compiled in the same process for another backend (``"inductor"``...)
also get one static graph per input shape instead of automatic dynamic ones. To keep
automatic dynamic shapes there, pass ``dynamic=True`` to their ``torch.compile`` or wrap their
calls in ``torch._dynamo.config.patch(automatic_dynamic_shapes=True)``. A user who re-enables
the setting globally gets, for frames of backend ``"neuron"`` that then turn dynamic, a
:class:`~torch_neuronx.compile.fallback.DynamicShapeError` that says so.
"""
from __future__ import annotations

import threading
from typing import Any, Final

#: Dynamo settings backend ``"neuron"`` needs for the whole process (see the module docstring).
STATIC_SHAPE_DYNAMO_CONFIG: Final[dict[str, Any]] = {"automatic_dynamic_shapes": False}

_lock = threading.Lock()
_applied = False


def apply() -> None:
    """Sets :data:`STATIC_SHAPE_DYNAMO_CONFIG` in ``torch._dynamo.config``, once per process
    (a later change by the user is left alone). Imports ``torch._dynamo`` (not Inductor)."""
    global _applied
    with _lock:
        if _applied:
            return
        import torch._dynamo

        for name, value in STATIC_SHAPE_DYNAMO_CONFIG.items():
            setattr(torch._dynamo.config, name, value)
        _applied = True


def is_applied() -> bool:
    """True once :func:`apply` has run in this process."""
    return _applied
