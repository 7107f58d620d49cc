"""A compiled graph runs on the NeuronCore of its inputs.

Inductor's wrapper allocates buffers with ``device='neuron'`` (the calling thread's current
core) and emits a device guard only for GPU device types, so a graph whose inputs live on
``neuron:1`` would put its intermediates on ``neuron:0``. :func:`on_graph_core` wraps the
compiled callable to make the inputs' core current around each call.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from .. import _C


def graph_core(example_inputs: Sequence[Any]) -> int | None:
    """The index of the one NeuronCore the tensor inputs live on; None when there is no
    ``neuron`` input with an index, or they span several cores."""
    indices = {x.device.index for x in example_inputs
               if isinstance(x, torch.Tensor) and x.device.type == "neuron"}
    indices.discard(None)
    return next(iter(indices)) if len(indices) == 1 else None


def on_graph_core(compiled: Callable[..., Any], example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """``compiled`` run with the current device set to :func:`graph_core` of its inputs.

    Returns ``compiled`` itself when there is no such core; otherwise a wrapper (keeping
    ``_boxed_call``) that reads the current core once per call and switches only when it
    differs, restoring it afterwards. It calls the C++ core directly: the index came from a
    ``neuron`` tensor, so the device set exists and the index is valid.

    The wrapper calls the function inside ``compiled``'s ``torch._dynamo.disable`` wrappers:
    Dynamo wraps whatever the backend returns in ``disable`` once more (taking the innermost
    function of a callable that is already wrapped, as Inductor's result is on the CPU), so
    an inner wrapper would switch Dynamo's frame evaluation off and on again on every call,
    a cost Inductor's own graphs do not pay.
    """
    index = graph_core(example_inputs)
    if index is None:
        return compiled
    from torch._dynamo.eval_frame import innermost_fn  # (compile time: Dynamo is loaded)

    boxed = getattr(compiled, "_boxed_call", False)
    compiled = innermost_fn(compiled)
    current_device, set_device = _C._current_device, _C._set_device

    def run(*args: Any) -> Any:
        previous = current_device()
        if previous == index:
            return compiled(*args)
        set_device(index)
        try:
            return compiled(*args)
        finally:
            set_device(previous)

    run._boxed_call = boxed  # type: ignore[attr-defined]
    return run
