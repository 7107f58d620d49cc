"""``torch_neuronx.distributed``: the c10d backend ``"neuron"``.

* :func:`register` — registers backend ``"neuron"`` for device ``neuron``
  (called by torch_neuronx's autoload, so ``import torch`` is enough).
* :class:`NeuronProcessGroup` — the process group: gloo on zero-copy host
  aliases of ``neuron`` tensors, one machine or many.
* :func:`check_tp_degree` — raises when a tensor-parallel degree does not
  divide a model's attention or key/value heads.
* :mod:`.rendezvous` — one process per logical NeuronCore; launcher variables.
"""
from __future__ import annotations

from .process_group import BACKEND_NAME, NeuronProcessGroup
from .registration import create_process_group, register
from .rendezvous import (
    RendezvousError,
    RendezvousWarning,
    apply_launcher_environment,
    check_local_processes,
    local_device,
)
from .tp_degree import TensorParallelDegreeError, check_tp_degree
from .work import NeuronWork

__all__ = [
    "BACKEND_NAME",
    "NeuronProcessGroup",
    "NeuronWork",
    "RendezvousError",
    "RendezvousWarning",
    "TensorParallelDegreeError",
    "apply_launcher_environment",
    "check_local_processes",
    "check_tp_degree",
    "create_process_group",
    "local_device",
    "register",
]
