"""Wrong placement in a compiled graph is the eager device-mismatch error, before tracing.

Dynamo runs each node of the captured graph on fake tensors, and FakeTensor's device rule raises
for most ops that mix devices — but not for every one: its convolution rule takes the input's
device without looking at the weight, so ``torch.compile(conv)`` with CPU weights and a ``neuron``
input reaches AOTAutograd, whose joint trace then fails with an internal autograd-engine assert.
:func:`check_graph_devices` walks the Dynamo graph first and raises the error eager execution
raises (``Expected all tensors to be on the same device ... neuron:0 and cpu!``), naming the node
and the user's source line.

A node is checked when its tensor operands (for an ``nn.Module`` call, its direct parameters and
buffers too) include a ``neuron`` tensor and a CPU tensor with at least one dimension. Exceptions,
as on CUDA: 0-dim CPU tensors (scalars), indexing (``x[cpu_index]`` and its assignment), copies and
conversions between devices (``to``, ``copy_``, ``type_as``), metadata-only uses of the other
tensor (``expand_as``, ``view_as``, ``reshape_as``, ``new_*``) and ``tensor_split``'s CPU indices.
"""
from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

import torch

# Call targets (functions, or method names for call_method nodes) whose CPU operands are legitimate.
_EXEMPT_FUNCTIONS = frozenset({operator.getitem, operator.setitem, torch.tensor_split,
                               torch.Tensor.to, torch.Tensor.copy_, torch.Tensor.type_as,
                               torch.Tensor.__getitem__, torch.Tensor.__setitem__})
_EXEMPT_METHODS = frozenset({"to", "copy_", "type_as", "expand_as", "view_as", "reshape_as",
                             "tensor_split", "__getitem__", "__setitem__", "new_tensor", "new_empty",
                             "new_zeros", "new_ones", "new_full", "index_put", "index_put_"})


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _example(arg: Any) -> Any:
    if isinstance(arg, torch.fx.Node):
        return arg.meta.get("example_value", arg.meta.get("val"))
    if isinstance(arg, (list, tuple)):
        return [_example(a) for a in arg]
    if isinstance(arg, dict):
        return {k: _example(v) for k, v in arg.items()}
    return arg


def _operands(gm: torch.fx.GraphModule, node: torch.fx.Node) -> list[tuple[str, torch.Tensor]]:
    named: list[tuple[str, torch.Tensor]] = []
    for i, arg in enumerate(node.args):
        label = f"argument {i}" + (f" ({arg.name})" if isinstance(arg, torch.fx.Node) else "")
        named += [(label, t) for t in _tensors(_example(arg))]
    for key, arg in node.kwargs.items():
        named += [(f"argument '{key}'", t) for t in _tensors(_example(arg))]
    if node.op == "call_module":
        module = gm.get_submodule(str(node.target))
        named += [(f"'{name}'", t) for name, t in module.named_parameters(recurse=False)]
        named += [(f"'{name}'", t) for name, t in module.named_buffers(recurse=False)]
    return named


def _exempt(node: torch.fx.Node) -> bool:
    if node.op == "call_method":
        return str(node.target) in _EXEMPT_METHODS
    return node.op == "call_function" and node.target in _EXEMPT_FUNCTIONS


def check_graph_devices(gm: torch.fx.GraphModule) -> None:
    """Raises the eager device-mismatch error for the first node mixing devices.

    Args:
        gm: the FX graph Dynamo captured (nodes carry fake tensors in ``meta["example_value"]``).

    Raises:
        RuntimeError: a node takes a ``neuron`` tensor and a CPU tensor with one dimension or more
            (outside the exceptions in the module docstring); the message names both devices,
            the operand, the node and the source line.
    """
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module") or _exempt(node):
            continue
        operands = _operands(gm, node)
        neuron = next((t for _, t in operands if t.device.type == "neuron"), None)
        if neuron is None:
            continue
        for name, t in operands:
            if t.device.type == "cpu" and t.dim() > 0:
                trace = (node.meta.get("stack_trace") or "").strip().splitlines()
                where = f" at {trace[-2].strip()}" if len(trace) >= 2 else ""
                raise RuntimeError(
                    f"Expected all tensors to be on the same device, but found at least two devices, "
                    f"{neuron.device} and cpu! (when checking {name} of {node.format_node()}{where}). "
                    f"Move the CPU tensor to the NeuronCore with .to('neuron') (for a module: "
                    f"model.to('neuron')) before compiling, or the neuron tensors to the CPU.")


__all__ = ["check_graph_devices"]
