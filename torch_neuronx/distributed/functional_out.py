"""The ``neuron`` kernel of ``_c10d_functional::all_gather_into_tensor_out``.

PyTorch's functional collectives (``torch.ops._c10d_functional.*``, what DTensor, FSDP2 and
Inductor-compiled graphs call) are C++ kernels that call the process group's C++ virtual methods.
C++ reaches a Python ``ProcessGroup`` such as :class:`.NeuronProcessGroup` only through the
virtuals its pybind trampoline forwards to Python, and in torch 2.13 that list lacks
``all_gather_single`` / ``_allgather_base``, the one ``all_gather_into_tensor_out`` calls. The
base class then dispatches ``c10d::_allgather_base_``, which asks the group for a C++ backend of
device ``neuron``; a Python group has none (PyTorch cannot build one in Python), so the op failed
with "Could not retrieve or create the backend for device type neuron" while its sibling
``all_gather_into_tensor`` (forwarded through ``all_gather_single_coalesced``) worked. Every other
``_c10d_functional`` op reaches a forwarded virtual.

:func:`register_kernels` gives the op a kernel for ``neuron`` tensors (dispatch key
``PrivateUse1``; the CPU keeps PyTorch's) that calls the group's Python-level ``_allgather_base``:
the :class:`.NeuronProcessGroup` method for a ``"neuron"`` group, the bound C++ method (what
PyTorch's kernel calls) for any other group.
"""
from __future__ import annotations

import torch
from torch.distributed import distributed_c10d
from torch.distributed.distributed_c10d import AllgatherOptions  # not re-exported by torch.distributed

_LIBRARY: torch.library.Library | None = None


def _all_gather_into_tensor_out(
    input: torch.Tensor, group_size: int, group_name: object, *, out: torch.Tensor
) -> torch.Tensor:
    """``all_gather_into_tensor_out`` on ``neuron`` tensors: ``out`` ← the ranks' ``input`` in
    rank order (``out`` holds ``group_size`` times ``input``'s elements, any dtype the group
    moves); returns ``out``, whose pending work ``wait_tensor(out)`` waits for.

    Raises:
        ValueError: ``input`` is not contiguous (as PyTorch's kernel refuses), or ``group_size`` is
            not the size of the group named ``group_name``.
    """
    if not input.is_contiguous():
        raise ValueError(
            "all_gather_into_tensor_out needs a contiguous input tensor (as PyTorch's kernel does); "
            "pass input.contiguous()."
        )
    group = distributed_c10d._resolve_process_group(group_name)  # type: ignore[arg-type]
    if group.size() != group_size:
        raise ValueError(
            f"all_gather_into_tensor_out: group_size={group_size} but the group {group_name!r} has "
            f"{group.size()} ranks; pass the group's size."
        )
    work = group._allgather_base(out, input, AllgatherOptions())
    torch._C._distributed_c10d._register_work(out, work)
    return out


def register_kernels() -> None:
    """Registers the ``neuron`` kernel of ``_c10d_functional::all_gather_into_tensor_out`` (idempotent).

    Called when the first ``"neuron"`` process group is created; before that no group exists for
    the op to name.
    """
    global _LIBRARY
    if _LIBRARY is not None:
        return
    library = torch.library.Library("_c10d_functional", "IMPL")
    library.impl("all_gather_into_tensor_out", _all_gather_into_tensor_out, "PrivateUse1")
    _LIBRARY = library
