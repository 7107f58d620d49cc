"""Our c10d process group is opaque to Dynamo, as a C++ process group is.

PyTorch's C++ calls back into the Python methods of :class:`~.process_group.NeuronProcessGroup`
and :class:`~.work.NeuronWork` (the ``PyProcessGroup`` / ``PyWork`` trampolines): DDP's forward
broadcasts its buffers (``broadcast_buffers=True``) through ``dist._broadcast_coalesced``, which
calls our ``broadcast``. Inside a ``torch.compile``-d region Dynamo's frame hook would trace those
Python frames like user code, graph-break in them and fail on the process group object
("Member '_work' is not registered for this opaque object type"). NCCL and gloo collectives are
C++, so Dynamo never sees them; :func:`hide_from_dynamo` gives ours the same treatment by wrapping
every method of the two classes in ``torch._dynamo.disable`` (they run eagerly, exactly as when
nothing is compiled).

It runs when Dynamo is first imported (``torch_neuronx._autoload`` arranges it through
:mod:`torch_neuronx._import_hooks`), so ``import torch`` does not load Dynamo for it.
"""
from __future__ import annotations

import threading
import types

from .process_group import NeuronProcessGroup
from .work import NeuronWork

#: The classes whose methods PyTorch's C++ calls back into.
OPAQUE_CLASSES: tuple[type, ...] = (NeuronProcessGroup, NeuronWork)
_MARK = "_torch_neuronx_dynamo_opaque"
_lock = threading.Lock()


def hide_from_dynamo() -> None:
    """Wraps every method (not dunder methods nor properties) of :data:`OPAQUE_CLASSES` in
    ``torch._dynamo.disable``. Idempotent; imports ``torch._dynamo``."""
    import torch._dynamo

    with _lock:
        for cls in OPAQUE_CLASSES:
            for name, value in list(vars(cls).items()):
                if name.startswith("__") or not callable(value) or isinstance(value, type):
                    continue
                if isinstance(getattr(value, "__func__", value), types.BuiltinFunctionType):
                    continue  # a C++ method (NeuronProcessGroup.allreduce): no frame for Dynamo to trace
                if getattr(value, _MARK, False):
                    continue
                wrapped = torch._dynamo.disable(value, recursive=True,
                                                reason="torch_neuronx c10d process group (runs eagerly, as a C++ one)")
                setattr(wrapped, _MARK, True)
                setattr(cls, name, wrapped)


def is_hidden(method: object) -> bool:
    """True if ``method`` (a function from one of :data:`OPAQUE_CLASSES`) is wrapped."""
    return bool(getattr(method, _MARK, False))


__all__ = ["OPAQUE_CLASSES", "hide_from_dynamo", "is_hidden"]
