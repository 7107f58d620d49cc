"""``torch.compile(model)`` without ``backend=``: backend ``"neuron"`` for graphs on ``neuron``.

TorchNeuron's backend reference: the backend is "'neuron'. Explicitly set, or auto-selected when
running on a Neuron device". :func:`auto_select_backend` is that selection, per graph: a graph whose
inputs, constants or intermediate values live on ``neuron`` goes to
:func:`~torch_neuronx.compile.backend.neuron_backend` (static shapes, ``mode`` other than
``"default"`` warns and is ignored, our compile cache and metrics); every other graph goes to
Inductor exactly as ``torch.compile``'s own default would send it (same ``mode`` and
``options``). So CPU and CUDA programs behave as without torch_neuronx.

It becomes Dynamo's default backend (PyTorch's public ``torch.compiler.set_default_backend``) when
Dynamo is first imported (``torch_neuronx._autoload`` arranges it with
:mod:`torch_neuronx._import_hooks`: importing Dynamo inside ``import torch`` would slow every
program), and only if the default is still PyTorch's ``"inductor"``: a default the user set is
kept. ``torch.compile(backend="inductor")`` written out is not redirected: it reaches Inductor,
which knows the ``neuron`` device (:mod:`.inductor_device`) and compiles with Inductor's own
semantics (``mode`` and dynamic shapes honoured).

Imports nothing heavy at module level.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from .fallback import OPTION as FALLBACK_OPTION

DEVICE = "neuron"


def _devices(value: Any) -> Iterable[torch.device]:
    if isinstance(value, torch.Tensor):
        yield value.device
    elif isinstance(value, torch.device):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _devices(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _devices(item)


def graph_on_neuron(gm: torch.fx.GraphModule, example_inputs: Iterable[Any]) -> bool:
    """True if anything of the graph lives on ``neuron``: an example input, a constant (parameter
    or buffer of ``gm``), a value Dynamo recorded for a node (``example_value`` / ``val``), or a
    ``device=`` argument of a node (a graph that creates ``neuron`` tensors from Python numbers,
    as ``create_block_mask`` does).

    Args:
        gm: the FX graph Dynamo captured.
        example_inputs: its example inputs (fake tensors, Python scalars).
    """
    if any(d.type == DEVICE for d in _devices(list(example_inputs))):
        return True
    if any(t.device.type == DEVICE for t in (*gm.parameters(), *gm.buffers())):
        return True
    for node in gm.graph.nodes:
        for key in ("example_value", "val"):
            if any(d.type == DEVICE for d in _devices(node.meta.get(key))):
                return True
        if any(d.type == DEVICE for d in _devices(dict(node.kwargs))):
            return True
        if any(d.type == DEVICE for d in _devices(list(node.args))):
            return True
    return False


def auto_select_backend(gm: torch.fx.GraphModule, example_inputs: list[Any],
                        **kwargs: Any) -> Callable[..., Any]:
    """Dynamo's default backend while torch_neuronx is loaded (see the module docstring).

    Args:
        gm: the FX graph Dynamo captured.
        example_inputs: its example inputs.
        mode / options: from ``torch.compile``; passed on to the backend chosen.

    Returns:
        The compiled callable of backend ``"neuron"`` (graph on ``neuron``) or of Inductor.

    Raises:
        Whatever the chosen backend raises (for ``neuron``: ``DynamicShapeError`` for symbolic
        shapes, ``NeuronCompileError``).
    """
    if graph_on_neuron(gm, example_inputs):
        from .backend import neuron_backend

        return neuron_backend(gm, example_inputs, **kwargs)
    # torch.compile's own default for the same arguments (a private torch class: the object
    # torch.compile builds for backend "inductor"; compiling through it keeps mode and options).
    # (backend "neuron"'s own option is not Inductor's: Inductor would refuse the unknown key.)
    options = {k: v for k, v in (kwargs.get("options") or {}).items() if k != FALLBACK_OPTION} or None
    inductor = torch._TorchCompileInductorWrapper(kwargs.get("mode"), options, None)
    return inductor(gm, example_inputs)


def install(module: object = None) -> bool:
    """Makes :func:`auto_select_backend` Dynamo's default backend unless the default was changed.

    Args:
        module: ignored (the imported ``torch._dynamo``, when called as an import hook).

    Returns:
        True if the default is now :func:`auto_select_backend` (also when it already was), False if
        the user had set another default.
    """
    import torch._dynamo  # already imported when run as the import hook
    from torch._dynamo.backends import registry

    current = registry.get_default_backend()
    if current is auto_select_backend:
        return True
    if current != "inductor":
        return False
    torch.compiler.set_default_backend(auto_select_backend)
    return True


__all__ = ["auto_select_backend", "graph_on_neuron", "install"]
