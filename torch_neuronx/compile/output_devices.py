"""Each output of a compiled graph on the NeuronCore eager execution would give it.

Inductor's wrapper allocates every buffer with ``device='neuron'``, i.e. on the calling thread's
current core (the inputs' core while :mod:`.device_pinning` holds it). A graph that moves a tensor
to another core (``x.to("neuron:1")``), combines tensors of several cores, or creates a tensor on
the current core while its inputs live elsewhere would otherwise return results on the wrong
core: right values, wrong device, and the next eager op fails with a device mismatch.
:func:`place_outputs` reads the device of each output from the graph's metadata (the fake
tensors AOTAutograd traced) and moves the outputs that differ, once per call.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from .device_pinning import graph_core


def output_devices(gm: torch.fx.GraphModule) -> list[torch.device | None]:
    """Per output of the ATen graph ``gm``: its ``neuron:<index>`` device, or None (not a
    ``neuron`` tensor, or no metadata)."""
    node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    values = node.args[0] if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
    devices: list[torch.device | None] = []
    for value in values:
        val = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
        if isinstance(val, torch.Tensor) and val.device.type == "neuron" and val.device.index is not None:
            devices.append(val.device)
        else:
            devices.append(None)
    return devices


class OutputPlacement:
    """A compiled ATen graph whose ``neuron`` outputs are moved to the cores eager gives them.

    Args:
        compiled: the compiled callable (boxed calling convention when it has ``_boxed_call``);
            it returns a list or tuple of outputs in graph order.
        devices: per output, its device (from :func:`output_devices`) or None to leave it.
    """

    def __init__(self, compiled: Callable[..., Any], devices: list[torch.device | None]) -> None:
        self.compiled = compiled
        self.devices = devices
        self._boxed_call = getattr(compiled, "_boxed_call", False)

    def __call__(self, *args: Any) -> Any:
        outs = self.compiled(*args)
        if not isinstance(outs, (list, tuple)):
            return outs
        fixed = [o.to(d) if d is not None and isinstance(o, torch.Tensor) and o.device != d else o
                 for o, d in zip(outs, self.devices, strict=False)]
        fixed.extend(outs[len(fixed):])
        return tuple(fixed) if isinstance(outs, tuple) else fixed

    def __getattr__(self, name: str) -> Any:       # Inductor's own attributes of the compiled graph
        return getattr(self.__dict__["compiled"], name)


def place_outputs(compiled: Callable[..., Any], gm: torch.fx.GraphModule,
                  example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """``compiled`` itself when every ``neuron`` output lives on the inputs' one core (the common
    case: no cost per call); else an :class:`OutputPlacement` that moves the outputs whose core
    differs (a copy between cores, accounted to the destination core, as eager ``.to`` does)."""
    devices = output_devices(gm)
    targets = {d.index for d in devices if d is not None}
    core = graph_core(example_inputs)
    if not targets or (core is not None and targets == {core}):
        return compiled
    return OutputPlacement(compiled, devices)
