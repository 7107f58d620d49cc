"""The Dynamo backend ``"neuron"``: ``torch.compile(model, backend="neuron")``.

Data flow of one graph:

    Dynamo FX graph → reject symbolic shapes (:mod:`.static_shapes`) → metrics (recompile
    diagnosis, :mod:`.graph_identity`, :mod:`.metrics`) → Inductor's ``compile_fx`` (pre-grad
    passes, AOTAutograd: forward/backward or inference graphs with core ATen decompositions,
    :mod:`.decompositions`) → for each ATen graph :func:`~.aten_compile.compile_aten_graph`:
    cache key → memory / disk hit? load : Inductor CPU C++ codegen on ``neuron`` memory
    (:mod:`.inductor_device`) → a callable run on its inputs' NeuronCore
    (:mod:`.device_pinning`) whose outputs are ``neuron`` tensors (no copy).

TorchNeuron semantics kept here:

* **static shapes**: ``dynamic=True`` (or ``mark_dynamic``) raises :class:`DynamicShapeError`,
  and every new input shape is a new static graph. For that, importing this module (which is
  what resolving the backend name ``"neuron"`` does) turns Dynamo's automatic dynamic shapes
  off for the whole process: :mod:`.dynamo_config` says why it cannot be scoped to our frames;
* ``mode`` other than ``"default"`` warns and is ignored; of ``options`` only
  ``fallback_execution`` is read, any other key warns and is ignored;
* a failing graph raises :class:`NeuronCompileError` with the graph, or runs eagerly with a
  warning under ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0`` or
  ``options={"fallback_execution": True}``, which overrides the variable (:mod:`.fallback`);
* forward and backward graphs (training), ``fullgraph=True`` and graph breaks are Dynamo's and
  work unchanged.

Inductor's own caches (FX graph cache, AOTAutograd cache) are off for our compiles: the
:mod:`.cache` of this package is the one source of cached graphs, so the metrics are exact.
"""
from __future__ import annotations

import copy
import logging
import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch

from . import debug, dynamo_config, inductor_device, metrics
from .aten_compile import INDUCTOR_PATCHES, compile_aten_graph
from .decompositions import decomposition_table
from .device_check import check_graph_devices
from .device_pinning import on_graph_core
from .fallback import OPTION as FALLBACK_OPTION
from .fallback import (
    DynamicShapeError,
    NeuronCompileError,
    fallback_execution_allowed,
    fallback_option,
    fallback_override,
    handle_compile_failure,
)
from .graph_identity import compile_id, current_function, input_signature, recompile_reason
from .precompile import AOTCompileUnsupportedError, refuse_aot
from .static_shapes import reject_dynamic

log = logging.getLogger(__name__)


class CompileModeWarning(UserWarning):
    """``torch.compile(mode=...)`` other than ``"default"`` (or ``options`` other than
    ``fallback_execution``) was given."""


def is_training_graph(example_inputs: Sequence[Any]) -> bool:
    """AOTAutograd's rule: a joint forward/backward graph when grad mode is on and an input
    (parameters are inputs) requires grad."""
    return torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)


def neuron_backend(gm: torch.fx.GraphModule, example_inputs: list[Any],
                   **kwargs: Any) -> Callable[..., Any]:
    """Dynamo backend ``"neuron"`` (``torch.compile(model, backend="neuron")``).

    Args:
        gm: the FX graph Dynamo captured.
        example_inputs: fake tensors (static shapes) and Python scalars, one per placeholder.
        mode / options: accepted from ``torch.compile``. ``options["fallback_execution"]``
            (bool) overrides ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION`` for this graph; a mode
            other than ``"default"`` and any other option warn (:class:`CompileModeWarning`) and
            are ignored.

    Returns:
        A callable with Dynamo's calling convention whose outputs are ``neuron`` tensors.

    Raises:
        DynamicShapeError: symbolic shapes (``dynamic=True``, ``mark_dynamic``).
        AOTCompileUnsupportedError: called for ``aot_compile`` / precompile (:mod:`.precompile`).
        NeuronCompileError: the graph failed to compile and fallback execution is disabled
            (the default); with ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0`` or
            ``options={"fallback_execution": True}`` the graph runs eagerly instead, with a
            :class:`~torch_neuronx.compile.fallback.CompileFallbackWarning`.
        TypeError: ``options["fallback_execution"]`` is not a bool.
    """
    mode = kwargs.pop("mode", None)
    options = kwargs.pop("options", None)
    if mode not in (None, "default"):
        warnings.warn(f"backend 'neuron' supports only mode='default' (as TorchNeuron); "
                      f"mode={mode!r} is ignored", CompileModeWarning, stacklevel=2)
    fallback = fallback_option(options)
    ignored = sorted(k for k in (options or {}) if k != FALLBACK_OPTION)
    if ignored:
        warnings.warn(f"backend 'neuron' reads only the option '{FALLBACK_OPTION}'; {ignored} ignored",
                      CompileModeWarning, stacklevel=2)
    reject_dynamic(gm, example_inputs)
    check_graph_devices(gm)
    refuse_aot()
    inductor_device.register()

    t0 = time.perf_counter()
    function = current_function()
    frame_id, attempt = compile_id()
    metrics.record_graph(frame_id, attempt, function, input_signature(gm, example_inputs),
                         recompile_reason() if attempt else None)
    dynamo_text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    log.debug("Dynamo graph of %s (compile %s/%s): %d nodes, inputs %s", function, frame_id, attempt,
              len(gm.graph.nodes), input_signature(gm, example_inputs))
    debug.dump_dynamo_graph(function.split(" ")[0].strip("'"), dynamo_text)

    with fallback_override(fallback):
        return _compile_graph(gm, example_inputs, function, dynamo_text, t0, fallback)


def _compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], function: str,
                   dynamo_text: str, t0: float, fallback: bool | None) -> Callable[..., Any]:
    """:func:`neuron_backend`'s compile of ``gm`` under the fallback policy in force
    (``fallback``: the compile option, also applied to the ATen graphs, the backward one included,
    which AOTAutograd compiles at the first backward, on the autograd thread)."""
    import torch._functorch.config as functorch_config
    from torch._inductor.compile_fx import compile_fx

    def inner_compile(aten_gm: torch.fx.GraphModule, inputs: Sequence[Any], **kw: Any) -> Any:
        with fallback_override(fallback):
            return compile_aten_graph(aten_gm, inputs, **kw)

    eager_allowed = fallback_execution_allowed()
    keep = copy.deepcopy(gm) if eager_allowed else None
    try:
        with functorch_config.patch(enable_autograd_cache=False):
            # (torch types inner_compile as returning an OutputCode; ours may return the eager
            # fallback's boxed callable, which AOTAutograd runs the same way.)
            compiled = compile_fx(gm, example_inputs, inner_compile=inner_compile,
                                  config_patches=INDUCTOR_PATCHES,
                                  decompositions=decomposition_table(is_training_graph(example_inputs)))
        # Not AOT mode: compile_fx returns a callable (its str / list / Weights results are AOT's).
        return after_queued_eager_ops(on_graph_core(cast(Callable[..., Any], compiled), example_inputs))
    except NeuronCompileError:
        raise
    except Exception as err:  # noqa: BLE001  (any compile failure: the fallback policy)
        handle_compile_failure(f"graph of {function}", dynamo_text, err, eager_allowed)
        assert keep is not None  # handle_compile_failure returned: eager_allowed, so the copy exists
        return keep.forward
    finally:
        metrics.record_compile_time(time.perf_counter() - t0)


def after_queued_eager_ops(compiled: Callable[..., Any]) -> Callable[..., Any]:
    """``compiled`` itself, or, with adaptive eager execution on (``TORCH_NEURONX_ADAPTIVE_EAGER=1``),
    a wrapper (keeping ``_boxed_call``) that first runs the eager ops still queued: a compiled graph
    reads device memory directly, so their results must exist before it starts."""
    if os.environ.get("TORCH_NEURONX_ADAPTIVE_EAGER", "0").strip() != "1":
        return compiled
    synchronize = torch.neuron.synchronize  # type: ignore[attr-defined]  # registered by the autoload
    from torch._dynamo.eval_frame import innermost_fn  # (compile time: Dynamo is loaded)

    boxed = getattr(compiled, "_boxed_call", False)
    compiled = innermost_fn(compiled)  # Dynamo's own disable wrapper covers the call (see on_graph_core)

    def run(*args: Any) -> Any:
        synchronize()
        return compiled(*args)

    run._boxed_call = boxed  # type: ignore[attr-defined]
    return run


__all__ = ["AOTCompileUnsupportedError", "CompileModeWarning", "DynamicShapeError", "NeuronCompileError",
           "is_training_graph", "neuron_backend"]

# Resolving the backend name "neuron" imports this module: that is the moment to set Dynamo up
# for static shapes, before it traces any frame for this backend (see dynamo_config).
dynamo_config.apply()
