"""Collectives of ``neuron`` tensors on a process group that is not a ``"neuron"`` group.

A C++ process group (``init_process_group("gloo")``, ``new_group(backend="gloo")``) runs every
collective by dispatching a ``c10d::*`` op whose kernel asks the group for the backend of the
tensors' device. ``"gloo"`` registers itself for ``cpu`` and ``cuda`` only, so a ``neuron`` tensor
found no backend (``No backend type associated with device type neuron``), and
``"cpu:gloo,neuron:gloo"`` handed the ``neuron`` tensor to gloo, which refuses every device but CPU
and CUDA (``ProcessGroupGloo::allreduce: unsupported device type neuron``). On a CUDA machine gloo
serves CUDA tensors: it stages them through host memory and runs its CPU algorithms
(``ProcessGroupGloo.cpp``, the ``*CUDAWork`` classes).

A ``neuron`` tensor's storage is host memory, so no staging is needed: :func:`run_on_aliases` hands
gloo zero-copy CPU aliases of the tensors (:mod:`.aliases`) and gloo reads and writes the ``neuron``
memory in place; the values are those of the same collective on CPU tensors. The ``neuron`` kernels
of the ``c10d`` ops (:mod:`.c10d_ops`, and :func:`register_barrier_kernel` here for ``barrier``,
which ``dist.barrier(device_ids=[i])`` dispatches with a ``neuron`` scratch tensor) call it for
every group whose ``neuron`` tensors gloo serves (:func:`gloo_backend`).
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.utils import _pytree as pytree

from .. import _C
from .work import NeuronWork

_work_from_future = torch._C._distributed_c10d._create_work_from_future  # type: ignore[attr-defined]
_CallbackWork = torch._C._distributed_c10d.PythonCallbackWork
_NEURON = torch.device("neuron")
_CPU = torch.device("cpu")


def _backend(group: dist.ProcessGroup, device: torch.device) -> Any:
    try:
        return group._get_backend(device)
    except RuntimeError:  # no backend registered for that device type
        return None


def gloo_backend(group: dist.ProcessGroup) -> Any:
    """The gloo backend that runs ``group``'s collectives of ``neuron`` tensors, or None.

    Returns:
        the group's ``ProcessGroupGloo`` for device ``neuron`` (``"cpu:gloo,neuron:gloo"``), else its
        ``ProcessGroupGloo`` for the CPU when it has no backend for ``neuron`` (``"gloo"``, as gloo
        serves CUDA tensors on a CUDA machine); None when the group has another backend for
        ``neuron`` (PyTorch's fake backend with ``"cpu:fake,neuron:fake"``), whose own kernel runs.

    Raises:
        RuntimeError: the group has no backend for ``neuron`` and no gloo backend for the CPU
            (``init_process_group("fake")``, ``"mpi"``), naming the group's backend and the fix.
    """
    neuron = _backend(group, _NEURON)
    if neuron is not None:
        return neuron if isinstance(neuron, dist.ProcessGroupGloo) else None
    cpu = _backend(group, _CPU)
    if isinstance(cpu, dist.ProcessGroupGloo):
        return cpu
    try:
        name = str(dist.get_backend(group))     # "fake", "mpi" (the group's own name() says "custom")
    except (RuntimeError, ValueError):           # a group c10d does not know
        name = group.name()
    raise RuntimeError(
        f"a collective of neuron tensors on a process group of backend {name!r}, which has no backend for "
        "device 'neuron' (only gloo runs on neuron tensors here). Create the group with backend='neuron' "
        f"(or a device map such as 'cpu:{name},neuron:neuron'), or move the tensors to the CPU."
    )


def _alias(t: torch.Tensor) -> torch.Tensor:
    return _C._cpu_alias(t) if t.device.type == "neuron" else t


def _outputs(first: Any) -> list[torch.Tensor]:
    """The tensors of a collective's first argument (its outputs, or its in-place tensors), flat."""
    return [t for t in pytree.tree_leaves(first) if isinstance(t, torch.Tensor)]


#: Coalesced ops that ``ProcessGroupGloo`` does not bind in Python: run pair by pair with the op
#: each pair stands for (same values; one handle over the pairs' works).
_PAIRWISE = {
    "allgather_into_tensor_coalesced": "_allgather_base",
    "reduce_scatter_tensor_coalesced": "_reduce_scatter_base",
}


def run_on_aliases(backend: Any, method: str, args: tuple[Any, ...], op: str) -> dist.Work:
    """Runs gloo's ``method`` (a ``ProcessGroupGloo`` method name: ``"allreduce"``, ``"_allgather_base"``,
    ...) with ``args`` (its arguments: tensors, lists of tensors, options), each ``neuron`` tensor
    replaced by its zero-copy CPU alias.

    Returns:
        a C++ ``Work`` (PyTorch's work over a future) that completes with gloo's work(s), and whose future
        resolves to the ``neuron`` tensors of the first argument (the outputs, as gloo's CUDA works answer
        with the CUDA tensors). Not a Python :class:`.NeuronWork`: the caller is C++ (the group's
        ``allreduce``, DDP's reducer), which keeps only the C++ part of a Python work, so the Python
        object would be collected and its ``wait`` never called; the future's callback keeps it alive
        until the transfer completed.

    Raises:
        whatever gloo raises for the same call on CPU tensors (a non-contiguous tensor, a dtype it does
        not move, mismatched sizes), unchanged.
    """
    aliases = pytree.tree_map_only(torch.Tensor, _alias, args)
    if method in _PAIRWISE:
        single = getattr(backend, _PAIRWISE[method])
        outs, ins, opts = aliases
        works = [single(o, i, opts) for o, i in zip(outs, ins, strict=True)]
    else:
        works = [getattr(backend, method)(*aliases)]
    handle = NeuronWork(works, _outputs(args[0]), op=op, keepalive=aliases)
    try:
        future = handle.get_future()
    except RuntimeError:
        # A gloo work without a future (its reduce_scatter: "Work::getFuture not implemented", on CPU
        # tensors too): a C++ work whose wait() runs the handle's, and which holds the handle.
        return _CallbackWork(handle.wait)
    return _work_from_future(future)


def _barrier(keyset: Any, tensor: torch.Tensor, group: Any, device_ids: list[int], async_op: bool = True,
             timeout: int = -1) -> Any:
    """``neuron`` kernel of ``c10d::barrier`` (the op's ``tensor`` is a scratch tensor of the
    device ``dist.barrier`` chose): gloo's barrier for a group gloo serves, else PyTorch's kernel."""
    pg = dist.ProcessGroup.unbox(group) if isinstance(group, torch.ScriptObject) else group
    backend = gloo_backend(pg)
    if backend is None:
        return _ORIGINAL_BARRIER.call_boxed(keyset, tensor, group, device_ids, async_op, timeout)
    opts = dist.BarrierOptions()
    opts.asyncOp = async_op
    opts.timeout = timedelta(milliseconds=timeout)   # -1: unset, gloo's own timeout applies
    return backend.barrier(opts).boxed()


_LIBRARY: torch.library.Library | None = None
_ORIGINAL_BARRIER: Any = None


def register_barrier_kernel() -> None:
    """Registers the ``neuron`` (``PrivateUse1``) kernel of ``c10d::barrier`` (idempotent).

    ``dist.barrier(device_ids=[i])`` (accelerate's ``wait_for_everyone()``, PyTorch's FSDP test base)
    dispatches it with a ``neuron`` scratch tensor on any group; a ``"neuron"`` group's barrier is its
    own Python method and never reaches this op. PyTorch's kernel, kept, runs for groups with another
    ``neuron`` backend.
    """
    global _LIBRARY, _ORIGINAL_BARRIER
    if _LIBRARY is not None:
        return
    import warnings

    _ORIGINAL_BARRIER = torch.library.get_kernel("c10d::barrier", "PrivateUse1")
    library = torch.library.Library("c10d", "IMPL")
    with warnings.catch_warnings():
        # PyTorch's notice that a kernel is replaced (one multi-line message): intended here
        warnings.filterwarnings("ignore", message="(?s).*Overriding a previously registered kernel")
        library.impl("barrier", _barrier, "PrivateUse1", with_keyset=True)
    _LIBRARY = library
