"""Registration of the c10d backend ``"neuron"`` for device type ``neuron``.

:func:`register` is what torch_neuronx's autoload calls inside ``import
torch``; it imports nothing beyond ``torch.distributed`` (already loaded by
torch) and creates nothing until ``init_process_group("neuron")``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch.distributed as dist

from . import rendezvous, tp_degree
from .process_group import BACKEND_NAME, NeuronProcessGroup

if TYPE_CHECKING:
    from torch._C._distributed_c10d import _DistributedBackendOptions


def create_process_group(opts: _DistributedBackendOptions, backend_options: object = None) -> NeuronProcessGroup:
    """c10d creator (extended API) of a ``"neuron"`` group.

    Called by ``init_process_group(backend="neuron")`` (the default group),
    ``new_group`` and ``init_device_mesh("neuron", ...)``. Applies the
    rendezvous rules (:func:`.rendezvous.apply_launcher_environment`), builds
    the gloo transport in the group's store; for the default group it fills
    ``NEURON_RT_ROOT_COMM_ID`` from the store's address if still unset
    (:func:`.rendezvous.fill_root_comm_id`), checks one rank per core
    (:func:`.rendezvous.claim_core`) and starts this process's heartbeat (used
    to name a rank that died); a sub-group installs the TP-degree check
    (:func:`.tp_degree.install_forward_check`).

    Args:
        opts: ``torch.distributed._DistributedBackendOptions`` (store,
            group_rank, group_size, timeout, group_id, global_ranks_in_group).
        backend_options: ``pg_options`` of the caller (unused).

    Raises:
        RendezvousError: more processes on this node than visible NeuronCores,
            or two ranks of one node driving the same core.
    """
    rendezvous.apply_launcher_environment()
    if not dist.is_initialized():
        rendezvous.fill_root_comm_id(opts.store, opts.group_size)
    global_ranks = list(opts.global_ranks_in_group) or list(range(opts.group_size))
    pg = NeuronProcessGroup(opts.store, opts.group_rank, opts.group_size, opts.timeout, global_ranks)
    if not dist.is_initialized():
        rendezvous.claim_core(opts.store, opts.group_rank, opts.group_size)
        pg.start_heartbeat(opts.store)
    else:
        # A sub-group: new_group or a DeviceMesh (transformers' DistributedConfig builds a 4-d mesh
        # whose size-1 dimensions come here even when "tp" spans the world). Tensor-parallel models
        # on it get their TP degree checked against their heads before their first forward.
        tp_degree.install_forward_check()
    return pg


def register() -> None:
    """Registers backend ``"neuron"`` for device ``neuron`` with ``torch.distributed`` (idempotent).

    After it, ``init_process_group()`` on a process whose accelerator is
    ``neuron`` picks ``"neuron"`` by default, and ``init_process_group("neuron")``,
    ``new_group(backend="neuron")`` and ``init_device_mesh("neuron", ...)``
    create :class:`NeuronProcessGroup` s.
    """
    if not dist.is_available() or BACKEND_NAME in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND_NAME, create_process_group, extended_api=True, devices=["neuron"])
