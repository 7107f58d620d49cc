"""The ``c10d::*`` ops of a ``"neuron"`` group's collectives, for ``TorchDispatchMode`` s.

A C++ process group (gloo, NCCL) runs every C10D-API collective (``dist.all_reduce``,
``dist.broadcast``, ...) by dispatching an op such as ``c10d::allreduce_`` with the group and the
tensors; the op's kernel then asks the group for its backend. A ``TorchDispatchMode`` therefore sees
each collective: ``torch.distributed.tensor.debug.CommDebugMode`` counts them, PyTorch's fake and
local-tensor collectives replace them, this package's estimator costs them.
:class:`.NeuronProcessGroup` is a Python ``ProcessGroup`` subclass: ``torch.distributed`` calls its
Python methods directly and no op is dispatched, so those modes saw nothing of a ``"neuron"`` group.

So, while a dispatch mode is active (:func:`active`), each collective method of the group turns its
call into the op gloo's C++ method would dispatch, with the same arguments (:func:`dispatch`). The
modes see the op; after them it reaches the ``neuron`` kernel registered here
(:func:`register_kernels`, dispatch key ``PrivateUse1``), which runs the group's method itself with
dispatching off and hands the same :class:`.NeuronWork` back to the caller. Without a mode nothing of
this runs: the collectives (and the C++ all_reduce fast path, which steps aside while a mode is
active) stay as they were. For a group that is not a ``"neuron"`` group (PyTorch's fake group given
``neuron`` tensors), the kernel calls PyTorch's own kernel, as before.

``all_reduce`` needs none of this: the group leaves ``allreduce`` to its C++ base class, which
dispatches ``c10d::allreduce_`` itself (modes see it), and PyTorch's kernel of that op calls the
group's C++ backend (``csrc/distributed/NeuronBackend.h``). The ``neuron`` kernel of that op registered
here (``_FOREIGN_ONLY``) serves ``"gloo"`` groups given ``neuron`` tensors and passes a ``"neuron"`` group's
call straight to PyTorch's kernel; ``dist.all_reduce`` does not reach it (the group's C++ ``allreduce``
method calls the backend without dispatching outside a mode).

Only collectives of ``neuron`` tensors are dispatched: PyTorch's CPU kernels ask the group for a C++
CPU backend, which a ``"neuron"`` group has only with ``"cpu:gloo,neuron:neuron"``. ``barrier``
carries no tensor of the caller (gloo's dispatches a scratch CPU tensor) and is not dispatched.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import AllgatherOptions  # not re-exported by torch.distributed
from torch.utils import _python_dispatch
from torch.utils import _pytree as pytree

from .. import _C
from . import foreign_groups

_MS = timedelta(milliseconds=1)
_stack_len = torch._C._len_torch_dispatch_stack


class _State(threading.local):
    """Per thread: inside a kernel of this module (its method calls are not dispatched again), and
    the work the kernel produced (the caller returns it, not a re-wrapped copy)."""

    inside = False
    work: Any = None


_state = _State()


def _first_tensor(x: Any) -> torch.Tensor | None:
    """The first tensor among ``x``'s leaves (nested lists/tuples), or None."""
    return next((t for t in pytree.tree_leaves(x) if isinstance(t, torch.Tensor)), None)


def active(*tensor_args: Any) -> bool:
    """True when the collective whose tensor arguments are ``tensor_args`` must be dispatched: a
    ``TorchDispatchMode`` is active in this thread, the call does not come from this module's kernel,
    and its first tensor is a ``neuron`` tensor."""
    if not _python_dispatch._is_in_torch_dispatch_mode or _state.inside or not _stack_len():
        return False
    t = _first_tensor(tensor_args)
    return t is not None and t.device.type == "neuron"


# --------------------------------------------------------------------------- argument conversions
def _ms(opts: Any) -> int:
    """An options object's timeout in ms, as the c10d ops take it (-1: the group's default)."""
    return int(opts.timeout / _MS)


def _opts(cls: Callable[[], Any], timeout_ms: int, async_op: bool, **fields: Any) -> Any:
    opts = cls()
    opts.timeout = timedelta(milliseconds=timeout_ms)
    opts.asyncOp = async_op
    for name, value in fields.items():
        setattr(opts, name, value)
    return opts


def _reduce_op(boxed: Any) -> dist.ReduceOp:
    """The ``ReduceOp`` of a boxed ``__torch__.torch.classes.c10d.ReduceOp`` (a PREMUL_SUM loses its
    factor: the ``"neuron"`` group refuses PREMUL_SUM, naming the fix)."""
    return dist.ReduceOp(dist.ReduceOp.RedOpType(boxed.op()))


@dataclass(frozen=True)
class _Op:
    """One c10d op: the group method it stands for and the argument conversions both ways."""

    method: str
    group_index: int                                # position of the process group among the op's arguments
    to_op: Callable[..., tuple[Any, ...]]           # (boxed group, method arguments...) -> op arguments
    to_method: Callable[[tuple[Any, ...]], tuple[Any, ...]]  # op arguments -> method arguments
    returns_tensors: bool                           # the op returns (its first argument, work), else work


def _or(opts: Any, cls: Callable[[], Any]) -> Any:
    return opts if opts is not None else cls()


def _allreduce_args(a: tuple[Any, ...]) -> tuple[Any, ...]:
    if a[3] is not None:
        raise RuntimeError("sparse all_reduce of neuron tensors is not supported; all_reduce a dense tensor "
                           "(t.to_dense()).")
    return a[0], _opts(dist.AllreduceOptions, a[5], a[4], reduceOp=_reduce_op(a[2]))


def _reduce_scatter_args(a: tuple[Any, ...]) -> tuple[Any, ...]:
    return a[0], a[1], _opts(dist.ReduceScatterOptions, a[5], a[4], reduceOp=_reduce_op(a[3]))


#: ``c10d::allreduce_`` is not here (see ``_FOREIGN_ONLY``): a ``"neuron"`` group's C++ base class
#: dispatches it and torch's kernel hands it to the group's C++ backend (``csrc/distributed/NeuronBackend.h``).
_OPS: dict[str, _Op] = {
    "allreduce_coalesced_": _Op(
        "allreduce_coalesced", 1,
        lambda g, t, o: (t, g, _C._boxed_reduce_op(o.reduceOp), o.asyncOp, _ms(o)),
        lambda a: (a[0], _opts(dist.AllreduceCoalescedOptions, a[4], a[3], reduceOp=_reduce_op(a[2]))), False),
    "allgather_": _Op(
        "allgather", 2, lambda g, outs, ins, o: (outs, ins, g, o.asyncOp, _ms(o)),
        lambda a: (a[0], a[1], _opts(AllgatherOptions, a[4], a[3])), True),
    "_allgather_base_": _Op(
        "_allgather_base", 2, lambda g, out, inp, o: (out, inp, g, o.asyncOp, _ms(o)),
        lambda a: (a[0], a[1], _opts(AllgatherOptions, a[4], a[3])), True),
    "allgather_coalesced_": _Op(
        "allgather_coalesced", 2, lambda g, outs, ins, o: (outs, ins, g, o.asyncOp),
        lambda a: (a[0], a[1], _opts(AllgatherOptions, -1, a[3])), False),
    "allgather_into_tensor_coalesced_": _Op(
        "allgather_into_tensor_coalesced", 2, lambda g, outs, ins, o: (outs, ins, g, o.asyncOp),
        lambda a: (a[0], a[1], _opts(AllgatherOptions, -1, a[3])), False),
    "reduce_scatter_": _Op(
        "reduce_scatter", 2,
        lambda g, outs, ins, o: (outs, ins, g, _C._boxed_reduce_op(o.reduceOp), o.asyncOp, _ms(o)),
        _reduce_scatter_args, True),
    "_reduce_scatter_base_": _Op(
        "_reduce_scatter_base", 2,
        lambda g, out, inp, o: (out, inp, g, _C._boxed_reduce_op(o.reduceOp), o.asyncOp, _ms(o)),
        _reduce_scatter_args, True),
    "reduce_scatter_tensor_coalesced_": _Op(
        "reduce_scatter_tensor_coalesced", 2,
        lambda g, outs, ins, o: (outs, ins, g, _C._boxed_reduce_op(o.reduceOp), o.asyncOp, _ms(o)),
        _reduce_scatter_args, False),
    "broadcast_": _Op(
        "broadcast", 1, lambda g, t, o: (t, g, o.rootRank, o.rootTensor, o.asyncOp, _ms(o)),
        lambda a: (a[0], _opts(dist.BroadcastOptions, a[5], a[4], rootRank=a[2], rootTensor=a[3])), True),
    "reduce_": _Op(
        "reduce", 1,
        lambda g, t, o: (t, g, _C._boxed_reduce_op(o.reduceOp), o.rootRank, o.rootTensor, o.asyncOp, _ms(o)),
        lambda a: (a[0], _opts(dist.ReduceOptions, a[6], a[5], reduceOp=_reduce_op(a[2]), rootRank=a[3],
                               rootTensor=a[4])), False),
    "gather_": _Op(
        "gather", 2, lambda g, outs, ins, o: (outs, ins, g, o.rootRank, o.asyncOp, _ms(o)),
        lambda a: (a[0], a[1], _opts(dist.GatherOptions, a[5], a[4], rootRank=a[3])), False),
    "scatter_": _Op(
        "scatter", 2, lambda g, outs, ins, o: (outs, ins, g, o.rootRank, o.asyncOp, _ms(o)),
        lambda a: (a[0], a[1], _opts(dist.ScatterOptions, a[5], a[4], rootRank=a[3])), True),
    "alltoall_": _Op(
        "alltoall", 2, lambda g, outs, ins, o: (outs, ins, g, o.asyncOp, _ms(o)),
        lambda a: (a[0], a[1], _opts(dist.AllToAllOptions, a[4], a[3])), True),
    "alltoall_base_": _Op(
        "alltoall_base", 2,
        lambda g, out, inp, out_splits, in_splits, o: (out, inp, g, list(out_splits), list(in_splits), o.asyncOp,
                                                         _ms(o)),
        lambda a: (a[0], a[1], a[3], a[4], _opts(dist.AllToAllOptions, a[6], a[5])), False),
    "send": _Op("send", 1, lambda g, t, dst, tag: (t, g, dst, tag), lambda a: (a[0], a[2], a[3]), False),
    "recv_": _Op("recv", 1, lambda g, t, src, tag: (t, g, src, tag), lambda a: (a[0], a[2], a[3]), False),
    "recv_any_source_": _Op("recv_anysource", 1, lambda g, t, tag: (t, g, tag), lambda a: (a[0], a[2]), False),
}

#: Ops whose ``neuron`` kernel serves only groups that are not ours (``"gloo"`` given ``neuron`` tensors,
#: :mod:`.foreign_groups`); for a ``"neuron"`` group it calls PyTorch's kernel, which hands the op to the
#: group's C++ backend. Not dispatched by :func:`dispatch`.
_FOREIGN_ONLY: dict[str, _Op] = {
    "allreduce_": _Op("allreduce", 1, lambda *a: a, _allreduce_args, True),
}

#: The options class of each op's last method argument (None: the op's method takes no options).
_OPTIONS: dict[str, Callable[[], Any] | None] = {
    "allreduce_coalesced_": dist.AllreduceCoalescedOptions,
    "allgather_": AllgatherOptions, "_allgather_base_": AllgatherOptions, "allgather_coalesced_": AllgatherOptions,
    "allgather_into_tensor_coalesced_": AllgatherOptions, "reduce_scatter_": dist.ReduceScatterOptions,
    "_reduce_scatter_base_": dist.ReduceScatterOptions, "reduce_scatter_tensor_coalesced_": dist.ReduceScatterOptions,
    "broadcast_": dist.BroadcastOptions, "reduce_": dist.ReduceOptions, "gather_": dist.GatherOptions,
    "scatter_": dist.ScatterOptions, "alltoall_": dist.AllToAllOptions, "alltoall_base_": dist.AllToAllOptions,
    "send": None, "recv_": None, "recv_any_source_": None,
}


# --------------------------------------------------------------------------------- both directions
def dispatch(op: str, group: dist.ProcessGroup, *args: Any) -> Any:
    """Runs ``group``'s collective ``op`` (a ``c10d`` op name such as ``"allreduce_"``) with the
    group method's arguments ``args`` (tensors..., options or None) as ``torch.ops.c10d.<op>``, which
    the active dispatch modes see; returns the collective's work: the group method's own
    :class:`.NeuronWork`, or, when a mode answered without running the op (fake or local-tensor
    collectives), the ``torch.distributed.Work`` it answered with (hence typed ``Any``: the group's
    methods return it as their ``NeuronWork``).
    """
    spec = _OPS[op]
    options = _OPTIONS[op]
    if options is not None:
        args = (*args[:-1], _or(args[-1], options))
    _state.work = None
    out = getattr(torch.ops.c10d, op).default(*spec.to_op(group.boxed(), *args))
    work, _state.work = _state.work, None
    if work is not None:
        return work
    # A mode answered without running the kernel (fake or local-tensor collectives): its boxed work.
    boxed = out[1] if spec.returns_tensors else out
    return dist.Work.unbox(boxed) if isinstance(boxed, torch.ScriptObject) else boxed


def _kernel(op: str, spec: _Op, original: Any, group_type: type, foreign_only: bool = False) -> Callable[..., Any]:
    arguments = getattr(torch.ops.c10d, op).default._schema.arguments

    def kernel(keyset: Any, *given: Any, **named: Any) -> Any:
        # A Python kernel is called without the trailing arguments left at their defaults: fill them in.
        args = (*given, *(named.get(a.name, a.default_value) for a in arguments[len(given):]))
        boxed_group = args[spec.group_index]
        group = dist.ProcessGroup.unbox(boxed_group) if isinstance(boxed_group, torch.ScriptObject) else boxed_group
        if not isinstance(group, group_type):
            # Not a "neuron" group: gloo (its backend for neuron tensors, or its CPU backend) on the tensors'
            # CPU aliases; a group with another neuron backend (fake) keeps PyTorch's kernel.
            backend = foreign_groups.gloo_backend(group)
            if backend is None:
                return original.call_boxed(keyset, *given, **named)   # PyTorch's kernel: the group's C++ backend
            work = foreign_groups.run_on_aliases(backend, spec.method, spec.to_method(args), op)
            boxed = work.boxed()
            return (args[0], boxed) if spec.returns_tensors else boxed
        if foreign_only:
            return original.call_boxed(keyset, *given, **named)
        inside, _state.inside = _state.inside, True
        try:
            work = getattr(group, spec.method)(*spec.to_method(args))
        finally:
            _state.inside = inside
        _state.work = work
        boxed = work.boxed()
        return (args[0], boxed) if spec.returns_tensors else boxed

    kernel.__name__ = f"neuron_{op}"
    return kernel


_LIBRARY: torch.library.Library | None = None


def register_kernels(group_type: type) -> None:
    """Registers the ``neuron`` (``PrivateUse1``) kernels of the c10d collective ops (idempotent).

    Each replaces PyTorch's ``PrivateUse1`` kernel, which asks the group for a C++ ``neuron`` backend
    (a Python group has none), for groups of ``group_type`` (:class:`.NeuronProcessGroup`), and calls
    that kernel for any other group. Called when the first ``"neuron"`` process group is created.
    """
    global _LIBRARY
    if _LIBRARY is not None:
        return
    import warnings

    library = torch.library.Library("c10d", "IMPL")
    with warnings.catch_warnings():
        # PyTorch's notice that a kernel is replaced: intended here (the replaced one is kept and called)
        warnings.filterwarnings("ignore", message="(?s).*Overriding a previously registered kernel")
        for table, foreign_only in ((_OPS, False), (_FOREIGN_ONLY, True)):
            for op, spec in table.items():
                original = torch.library.get_kernel(f"c10d::{op}", "PrivateUse1")
                library.impl(op, _kernel(op, spec, original, group_type, foreign_only), "PrivateUse1",
                             with_keyset=True)
    _LIBRARY = library
