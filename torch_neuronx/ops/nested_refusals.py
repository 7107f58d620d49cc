"""The nested-tensor refusal for composite ops whose nested tensors have a CPU kernel of their own.

A nested tensor can exist on ``neuron`` when PyTorch builds it itself
(``torch.nested.nested_tensor(cpu_tensors, device="neuron")`` runs under the CPU key); every op
that reaches the device is then refused with the device's nested-tensor error
(``csrc/aten/Fallback.cpp``, the ``NestedTensorPrivateUse1`` fallback). A few ops have a
``CompositeImplicitAutograd`` kernel *and* a ``NestedTensorCPU`` kernel (``matmul``, ``linear``,
``chunk``, ``narrow``, ...): PyTorch replaces the composite for CPU nested tensors because the
composite cannot take one. For ``NestedTensorPrivateUse1`` the dispatcher still picks the composite,
which reads ``sizes()`` and stops with ``RuntimeError: Internal error: NestedTensorImpl doesn't
support sizes. Please file an issue.`` (``matmul``, ``linear``), an error naming neither the cause
nor the fix.

:func:`register` finds those ops in the dispatcher (a kernel for ``NestedTensorCPU`` and for
``CompositeImplicitAutograd``, none for ``NestedTensorPrivateUse1``) and registers, for
``NestedTensorPrivateUse1`` only, a kernel raising ``NotImplementedError`` that names the op and the
fix. CPU nested tensors are unaffected: their ``AutogradNestedTensor`` kernel was already chosen
with the ``NestedTensorCPU`` kernel present.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import torch

__all__ = ["register", "refused_ops"]

_KEY = "NestedTensorPrivateUse1"
_library: torch.library.Library | None = None
_registered: list[str] = []


def refused_ops() -> list[str]:
    """Names (``aten::matmul``, ``aten::narrow``, ...) of the ops :func:`register` gave the refusal,
    in registration order; empty before :func:`register`."""
    return list(_registered)


def _refusal(name: str) -> Callable[..., NoReturn]:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(
            f"neuron supports only dense (strided) tensors: {name} was called with a nested tensor on "
            "neuron. NeuronCores have no nested tensor support: keep nested tensors on the CPU, or call "
            ".to_padded_tensor() on the CPU and move the dense result to neuron.")

    return refuse


def register() -> None:
    """Registers the refusal for every such op once (a second call does nothing)."""
    global _library
    if _library is not None:
        return
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    library = torch.library.Library("aten", "IMPL")
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::"):
            continue
        if (has_kernel(name, "NestedTensorCPU") and has_kernel(name, "CompositeImplicitAutograd")
                and not has_kernel(name, _KEY)):
            library.impl(name[len("aten::"):], _refusal(name.partition(".")[0]), _KEY)
            _registered.append(name)
    _library = library
