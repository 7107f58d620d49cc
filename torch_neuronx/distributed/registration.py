"""Registration of the c10d backend ``"neuron"`` for device type ``neuron``.

:func:`register` is what torch_neuronx's autoload calls inside ``import
torch``; it imports nothing beyond ``torch.distributed`` (already loaded by
torch) and creates nothing until ``init_process_group("neuron")``.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import torch.distributed as dist

from . import c10d_ops, foreign_groups, functional_out, rendezvous, tp_degree
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
    (:func:`.tp_degree.install_forward_check`). The first group also registers the ``neuron``
    kernel of ``_c10d_functional.all_gather_into_tensor_out``
    (:func:`.functional_out.register_kernels`) and of the ``c10d::*`` collective ops that dispatch modes
    see (:func:`.c10d_ops.register_kernels`). A backend string that also maps
    ``cpu`` to ``gloo`` (``"cpu:gloo,neuron:neuron"``, the form CUDA users write
    as ``"cpu:gloo,cuda:nccl"``) registers the group's gloo transport for CPU
    tensors as well (:meth:`NeuronProcessGroup.serve_cpu_as_gloo`), so the group
    reports both devices, as c10d's own groups do for such a string.

    Args:
        opts: ``torch.distributed._DistributedBackendOptions`` (store,
            group_rank, group_size, timeout, group_id, global_ranks_in_group).
        backend_options: ``pg_options`` of the caller (unused).

    Raises:
        RendezvousError: more processes on this node than visible NeuronCores,
            or two ranks of one node driving the same core.
    """
    rendezvous.apply_launcher_environment()
    functional_out.register_kernels()
    c10d_ops.register_kernels(NeuronProcessGroup)
    if not dist.is_initialized():
        rendezvous.fill_root_comm_id(opts.store, opts.group_size)
    global_ranks = list(opts.global_ranks_in_group) or list(range(opts.group_size))
    pg = NeuronProcessGroup(opts.store, opts.group_rank, opts.group_size, opts.timeout, global_ranks)
    if _requested_device_backends().get("cpu") == "gloo":
        pg.serve_cpu_as_gloo()
    if not dist.is_initialized():
        rendezvous.claim_core(opts.store, opts.group_rank, opts.group_size)
        pg.start_heartbeat(opts.store)
    else:
        # A sub-group: new_group or a DeviceMesh (transformers' DistributedConfig builds a 4-d mesh
        # whose size-1 dimensions come here even when "tp" spans the world). Tensor-parallel models
        # on it get their TP degree checked against their heads before their first forward.
        tp_degree.install_forward_check()
    return pg


def _requested_device_backends() -> dict[str, str]:
    """The device → backend map of the ``init_process_group`` / ``new_group`` call creating a group.

    c10d hands a creator only the store, ranks and timeout, not the backend string; a string such as
    ``"cpu:gloo,neuron:neuron"`` is visible only in the caller, ``_new_process_group_helper``, whose
    ``backend_config`` this reads (read-only) from the call stack. And because c10d keeps a Python
    ``ProcessGroup`` returned by a creator as the whole group, the ``cpu:gloo`` part of such a string
    would otherwise be dropped. Returns ``{}`` when no such caller is found (a direct call).
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_new_process_group_helper":
            config = frame.f_locals.get("backend_config")
            get_map = getattr(config, "get_device_backend_map", None)
            return dict(get_map()) if callable(get_map) else {}
        frame = frame.f_back  # type: ignore[assignment]
    return {}


def register() -> None:
    """Registers backend ``"neuron"`` for device ``neuron`` with ``torch.distributed`` (idempotent).

    After it, ``init_process_group()`` on a process whose accelerator is
    ``neuron`` picks ``"neuron"`` by default, and ``init_process_group("neuron")``,
    ``new_group(backend="neuron")`` and ``init_device_mesh("neuron", ...)``
    create :class:`NeuronProcessGroup` s. Also registers the ``neuron`` kernels of the ``c10d::*``
    collective ops (:func:`.c10d_ops.register_kernels`, :func:`.foreign_groups.register_barrier_kernel`),
    so a ``"gloo"`` group runs collectives of ``neuron`` tensors on their CPU aliases.
    """
    if not dist.is_available() or BACKEND_NAME in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND_NAME, create_process_group, extended_api=True, devices=["neuron"])
    # neuron tensors given to a group that is not ours (gloo's own): the c10d ops' neuron kernels run them
    # with gloo on their CPU aliases (foreign_groups.py); registered now, before any such group exists.
    c10d_ops.register_kernels(NeuronProcessGroup)
    foreign_groups.register_barrier_kernel()
