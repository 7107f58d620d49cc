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

import atexit
import logging

from .. import _C

log = logging.getLogger(__name__)
_exit_summary_registered = False


def get_executed_ops() -> dict[str, int]:
    """ATen op name → number of executions on ``neuron`` since start or last clear."""
    return {name: n for name, (n, _) in sorted(_C._op_counts().items())}


def get_fallback_ops() -> dict[str, int]:
    """ATen op name → number of executions that ran as a host (CPU) fallback."""
    return {name: f for name, (_, f) in sorted(_C._op_counts().items()) if f}


def clear_op_tracking() -> None:
    """Resets both counters to empty."""
    _C._clear_op_counts()


def log_fallback_summary() -> dict[str, int]:
    """Logs (INFO, logger ``torch_neuronx.ops.tracking``) the ops that ran as host fallbacks so far,
    with their counts, when there are any and INFO records are enabled
    (``TORCH_NEURONX_LOG_LEVEL=2`` or ``3``).

    Returns:
        What was logged (op name → count), empty when nothing was.
    """
    if not log.isEnabledFor(logging.INFO):
        return {}
    ops = get_fallback_ops()
    if ops:
        log.info("ops that run as host (CPU) fallbacks on Trainium (fp64 / complex), with their counts: %s",
                 ", ".join(f"{name} x{n}" for name, n in sorted(ops.items(), key=lambda kv: -kv[1])))
    return ops


def register_exit_summary() -> None:
    """Logs :func:`log_fallback_summary` when the process exits (registered once, by the autoload)."""
    global _exit_summary_registered
    if not _exit_summary_registered:
        _exit_summary_registered = True
        atexit.register(log_fallback_summary)
