"""TorchNeuron's static-shape policy: backend ``"neuron"`` compiles graphs whose every input
size and stride is a concrete int.

A graph with symbolic shapes comes from ``torch.compile(..., dynamic=True)``,
``torch._dynamo.mark_dynamic`` or Dynamo's automatic dynamic shapes (which this package turns
off: :mod:`.dynamo_config`); :func:`reject_dynamic` refuses it with the fix (pad to a few fixed
sizes: :mod:`.padding`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .fallback import DynamicShapeError
from .graph_identity import input_name


def symbolic_inputs(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> list[str]:
    """Descriptions of the inputs that are SymInts/SymFloats/SymBools or tensors with symbolic
    sizes or strides (``"L['x'] shape (s0, 3)"``); empty for a static graph."""
    from torch.fx.experimental.symbolic_shapes import is_concrete_int

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    bad = []
    for node, x in zip(placeholders, example_inputs):
        if isinstance(x, torch.SymInt | torch.SymFloat | torch.SymBool):
            bad.append(f"{input_name(node)} (a symbolic scalar)")
        elif isinstance(x, torch.Tensor):
            if not all(is_concrete_int(s) for s in (*x.shape, *x.stride())):
                bad.append(f"{input_name(node)} shape {tuple(x.shape)}")
    return bad


def reject_dynamic(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    """Returns if the graph is static.

    Raises:
        DynamicShapeError: the graph has symbolic inputs; the message names them, the cause
            (``dynamic=True``, or ``mark_dynamic`` / re-enabled automatic dynamic shapes) and
            the fix.
    """
    import torch._dynamo

    bad = symbolic_inputs(gm, example_inputs)
    if not bad:
        return
    explicit = not torch._dynamo.config.assume_static_by_default
    cause = ("torch.compile(..., dynamic=True) was requested" if explicit else
             "the graph has symbolic shapes (torch._dynamo.mark_dynamic, or "
             "torch._dynamo.config.automatic_dynamic_shapes was re-enabled)")
    raise DynamicShapeError(
        f"backend 'neuron' compiles static shapes only (as TorchNeuron on Trainium), but {cause}: "
        f"symbolic inputs {', '.join(bad[:6])}. Use torch.compile(..., dynamic=False) (or leave "
        "dynamic unset) and pad inputs to a few fixed sizes with "
        "torch_neuronx.compile.pad_to_multiple / pad_batch_to_bucket: each distinct shape "
        "compiles once and is cached."
    )
