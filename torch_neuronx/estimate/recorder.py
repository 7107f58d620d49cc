"""Seeing every op the program runs: an infra ``TorchDispatchMode`` plus module and phase tracking.

One mechanism for real and fake tensors: :class:`EstimateMode` is pushed by ``estimate()`` and hands each
op (after running it) to the session. It is an *infra* mode (``is_infra_mode() -> True``), like PyTorch's
own ``FakeTensorMode``: an ordinary dispatch mode makes Dynamo skip compiling (the program would silently
run eagerly), an infra mode does not.

* DTensor ops are passed on (``NotImplemented``): DTensor runs them as local ops, which come back here with
  the local shapes a rank really computes; the global-shape ops of DTensor's sharding propagation are
  skipped (:mod:`.dtensor_propagation`).
* :class:`ProgramContext` keeps the phase: backward while autograd's engine runs a graph task, optimizer
  between the global optimizer step hooks (``torch.optim.optimizer``), otherwise forward; and, when asked
  (``module_names``), the module stack from forward hooks on the given modules, to label the top ops.
  Module hooks are opt-in because Dynamo guards on them: a model compiled with them recompiles without
  them (and global module hooks make ``torch.compile`` warn and fire them twice).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._ops import OpOverload
from torch.utils._python_dispatch import TorchDispatchMode

from . import dtensor_propagation

__all__ = ["EstimateMode", "ProgramContext"]

_DTensor: type | None
try:
    from torch.distributed.tensor import DTensor as _DTensor
except ImportError:  # torch without distributed
    _DTensor = None


class EstimateMode(TorchDispatchMode):
    """Hands every op run on ``neuron`` (real or fake tensors) to ``sink(func, args, kwargs, out)``.

    Args:
        sink: the session's recording function.
    """

    def __init__(self, sink: Callable[[OpOverload, tuple[Any, ...], dict[str, Any], Any], None]):
        super().__init__()
        self.sink = sink
        self.paused = 0

    @classmethod
    def is_infra_mode(cls) -> bool:
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _DTensor is not None and any(issubclass(t, _DTensor) for t in types):
            return NotImplemented
        out = func(*args, **kwargs)
        if self.paused or dtensor_propagation.inside():
            return out
        self.sink(func, args, kwargs, out)
        return out


class ProgramContext:
    """Module stack and phase of the running program (installed while an estimate is active).

    Args:
        names: module -> fully qualified name of the modules to hook for module labels (empty: no hooks).
    """

    def __init__(self, names: dict | None = None):
        self.names = names or {}
        self.stack: list[str] = []
        self.optimizer_depth = 0
        self._handles: list = []

    def install(self) -> None:
        from torch.optim import optimizer as optim

        def pre(mod, args):
            self.stack.append(self.names.get(mod) or type(mod).__name__)

        def post(mod, args, out):
            if self.stack:
                self.stack.pop()

        def opt_pre(opt, args, kwargs):
            self.optimizer_depth += 1

        def opt_post(opt, args, kwargs):
            self.optimizer_depth -= 1

        self._handles = [optim.register_optimizer_step_pre_hook(opt_pre),
                         optim.register_optimizer_step_post_hook(opt_post)]
        for mod in self.names:
            self._handles.append(mod.register_forward_pre_hook(pre))
            self._handles.append(mod.register_forward_hook(post, always_call=True))

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    @property
    def module(self) -> str:
        """The innermost running module's name ("" outside modules)."""
        return self.stack[-1] if self.stack else ""

    @property
    def phase(self) -> str:
        """``"backward"``, ``"optimizer"`` or ``"forward"``."""
        if torch._C._current_graph_task_id() != -1:
            return "backward"
        if self.optimizer_depth:
            return "optimizer"
        return "forward"
