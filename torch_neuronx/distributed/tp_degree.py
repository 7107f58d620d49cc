"""Tensor-parallel degree checks against a model's attention heads.

Colwise-sharding q/k/v projections over ``tp_size`` ranks gives each rank
``heads / tp_size`` heads, so ``tp_size`` must divide both the number of
attention heads and the number of key/value heads (grouped-query attention).
On Trainium a TP degree that does not divide the KV heads is a common failure,
and transformers itself only fails later, in the forward, with an unrelated
reshape error; this check says which count fails.

Call :func:`check_tp_degree` before sharding; the device also runs it by itself
(:func:`install_forward_check`, installed when a ``neuron`` sub-group such as
a DeviceMesh dimension is created): before the first forward of a module that has
a ``config`` with attention heads and parameters sharded (DTensor) over a
``neuron`` mesh with a ``"tp"`` dimension — transformers'
``from_pretrained(..., distributed_config=DistributedConfig(tp_size=N))`` — so
the forward raises :class:`TensorParallelDegreeError` instead of failing in a
reshape.
"""
from __future__ import annotations

import numbers
import weakref
from typing import Any

import torch


class TensorParallelDegreeError(ValueError):
    """``tp_size`` does not divide the model's attention or key/value heads."""


def check_tp_degree(config: Any, tp_size: int) -> None:
    """Checks that ``tp_size`` divides the heads of ``config``.

    Args:
        config: a transformers ``PretrainedConfig`` (or any object) with
            ``num_attention_heads`` and optionally ``num_key_value_heads``
            (defaults to the attention heads, as transformers does); a
            composite config's ``text_config`` is used when it has the heads.
        tp_size: tensor-parallel degree, ≥ 1.

    Raises:
        TensorParallelDegreeError: naming the count that ``tp_size`` does not
            divide, e.g. ``"tp_size=4 does not divide num_key_value_heads=2 ..."``.
        ValueError: ``tp_size`` < 1, or a config without ``num_attention_heads``.
        TypeError: ``tp_size`` is not an int (``"2"``, ``2.0``, ``True``).
    """
    if isinstance(tp_size, bool) or not isinstance(tp_size, numbers.Integral):
        raise TypeError(f"tp_size={tp_size!r}: the tensor-parallel degree is an int (the number of ranks), not a "
                        f"{type(tp_size).__name__}")
    if tp_size < 1:
        raise ValueError(f"tp_size must be at least 1, got {tp_size}")
    if getattr(config, "num_attention_heads", None) is None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    heads = getattr(config, "num_attention_heads", None)
    if heads is None:
        raise ValueError(f"{type(config).__name__} has no num_attention_heads to check tp_size against")
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    for name, count in (("num_attention_heads", heads), ("num_key_value_heads", kv_heads)):
        if count % tp_size:
            divisors = [d for d in range(1, count + 1) if count % d == 0 and heads % d == 0 and kv_heads % d == 0]
            raise TensorParallelDegreeError(
                f"tp_size={tp_size} does not divide {name}={count} of {type(config).__name__} "
                f"(attention heads {heads}, key/value heads {kv_heads}): each tensor-parallel rank must "
                f"hold whole heads. Use a tp_size among {divisors}."
            )


#: Modules already checked (or found not tensor-parallel on ``neuron``).
_checked: weakref.WeakSet[torch.nn.Module] = weakref.WeakSet()
_hook_handle: Any = None


def tp_mesh_size(module: torch.nn.Module) -> int | None:
    """Size of the ``"tp"`` dimension of the ``neuron`` DeviceMesh ``module``'s parameters are
    sharded over (DTensor parameters), or ``None`` when none is."""
    for p in module.parameters():
        mesh = getattr(p, "device_mesh", None)
        names = getattr(mesh, "mesh_dim_names", None) or ()
        if mesh is not None and mesh.device_type == "neuron" and "tp" in names:
            return int(mesh.size(names.index("tp")))
    return None


def _has_heads(config: Any) -> bool:
    if getattr(config, "num_attention_heads", None) is not None:
        return True
    get_text = getattr(config, "get_text_config", None)
    return callable(get_text) and getattr(get_text(), "num_attention_heads", None) is not None


def _check_before_forward(module: torch.nn.Module, args: Any) -> None:
    global _hook_handle
    if torch.compiler.is_compiling():  # checked by the eager call of the compiled wrapper
        return
    if type(module).__name__ == "OptimizedModule":  # torch.compile(model): check the model it wraps
        module = module._modules.get("_orig_mod") or module
    config = module.__dict__.get("config")
    if config is None or module in _checked:
        return
    tp_size = tp_mesh_size(module) if _has_heads(config) else None
    if tp_size is not None:
        check_tp_degree(config, tp_size)  # raises; the module stays unchecked, so every forward raises
        if _hook_handle is not None:  # a tensor-parallel model passed: no global hook left behind
            _hook_handle.remove()
            _hook_handle = None
    _checked.add(module)


def install_forward_check() -> None:
    """Registers (once per process) a global forward pre-hook running :func:`check_tp_degree`
    on the first forward of each module that has a ``config`` with attention heads and
    parameters sharded over a ``neuron`` mesh's ``"tp"`` dimension (:func:`tp_mesh_size`).

    Called by the c10d creator when a ``neuron`` sub-group is created (``new_group``, a
    DeviceMesh such as transformers' ``DistributedConfig`` builds), so programs with one
    group (DDP) never run the hook. It removes itself once a tensor-parallel model passed;
    until then modules without a ``config`` cost one dictionary lookup per call, and compiled
    code (Dynamo) skips it (a ``torch.compile`` wrapper is checked through the model it wraps).
    """
    global _hook_handle
    if _hook_handle is None:
        _hook_handle = torch.nn.modules.module.register_module_forward_pre_hook(_check_before_forward)
