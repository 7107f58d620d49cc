"""Op tracking (TorchNeuron's ``get_executed_ops`` / ``get_fallback_ops``).

Every ATen op that runs on a ``neuron`` tensor is counted by name
(``"aten::mm"``, ``"aten::add.Tensor"``...). An op is also counted as a
*fallback* when it is work a NeuronCore's engines cannot do and that Trainium
therefore runs on the host CPU: float64 and complex arithmetic (no fp64 or
complex engines, AWS Neuron docs "data types"). On the software NeuronCore
every op runs on the host, so "fallback" marks what would leave the device on
real hardware.
"""
from __future__ import annotations

from .. import _C


def get_executed_ops() -> dict[str, int]:
    """ATen op name → number of executions on ``neuron`` since start or last clear."""
    return {name: n for name, (n, _) in sorted(_C._op_counts().items())}


def get_fallback_ops() -> dict[str, int]:
    """ATen op name → number of executions that ran as a host (CPU) fallback."""
    return {name: f for name, (_, f) in sorted(_C._op_counts().items()) if f}


def clear_op_tracking() -> None:
    """Resets both counters to empty."""
    _C._clear_op_counts()
