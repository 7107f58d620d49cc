"""Run a function right after a module is first imported, without importing it.

Two things of ours must happen when Dynamo (``torch._dynamo``) loads, and not before, because
importing Dynamo inside ``import torch`` would cost about a second to every program:

* ``torch.compile`` without ``backend=`` selects backend ``"neuron"`` for graphs on ``neuron``
  (:mod:`torch_neuronx.compile.default_backend`), through PyTorch's public
  ``torch.compiler.set_default_backend``, which lives in Dynamo;
* the Python methods of our c10d process group, which PyTorch's C++ calls back into, are hidden
  from Dynamo (:mod:`torch_neuronx.distributed.dynamo_opaque`).

PyTorch has no "Dynamo loaded" hook, so this module uses Python's import system: a finder at the
front of ``sys.meta_path`` (PEP 451) that, for a watched module name only, asks the other finders
for the module's spec and wraps its loader so the callbacks run after the module's code ran. The
module itself is loaded by its own loader, unchanged; nothing of torch is patched. If the module is
already imported, :func:`after_import` runs the callback at once.

A callback that raises does not break the user's import: its error is reported as an
:class:`ImportHookWarning` naming the callback.
"""
from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

Callback = Callable[[ModuleType], None]

_lock = threading.RLock()
_pending: dict[str, list[Callback]] = {}


class ImportHookWarning(UserWarning):
    """A function registered with :func:`after_import` raised; the import itself succeeded."""


def _run(name: str, module: ModuleType, callbacks: Sequence[Callback]) -> None:
    for callback in callbacks:
        try:
            callback(module)
        except Exception as err:  # noqa: BLE001  (a hook must never break the user's import)
            warnings.warn(f"torch_neuronx: {getattr(callback, '__qualname__', callback)} "
                          f"(run after importing {name}) failed: {type(err).__name__}: {err}",
                          ImportHookWarning, stacklevel=2)


class _NotifyingLoader:
    """The module's own loader, then the callbacks registered for it."""

    def __init__(self, inner: Any, name: str) -> None:
        self._inner = inner
        self._name = name

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        # Hand the module its real loader back (reload, linecache and pickle see the original).
        module.__loader__ = self._inner
        if module.__spec__ is not None:
            module.__spec__.loader = self._inner
        with _lock:
            callbacks = _pending.pop(self._name, [])
            if not _pending:
                _uninstall()
        _run(self._name, module, callbacks)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Finder:
    """``sys.meta_path`` entry answering only for the watched module names."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname not in _pending:
            return None
        for finder in list(sys.meta_path):
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _NotifyingLoader(spec.loader, fullname)
        return spec


_FINDER = _Finder()


def _uninstall() -> None:
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


def _fully_imported(name: str) -> ModuleType | None:
    module = sys.modules.get(name)
    if module is None:
        return None
    spec = getattr(module, "__spec__", None)
    if spec is not None and getattr(spec, "_initializing", False):
        return None  # being imported right now: the loader's callback will run
    return module


def after_import(name: str, callback: Callback) -> None:
    """Runs ``callback(module)`` once module ``name`` has been imported.

    Args:
        name: a fully qualified module name (``"torch._dynamo"``).
        callback: called with the module object after its code ran (at once if the module is
            already imported). An exception from it becomes an :class:`ImportHookWarning`.
    """
    with _lock:
        module = _fully_imported(name)
        if module is None:
            _pending.setdefault(name, []).append(callback)
            if _FINDER not in sys.meta_path:
                sys.meta_path.insert(0, _FINDER)
            return
    _run(name, module, [callback])


def pending() -> dict[str, int]:
    """Watched module names and how many callbacks wait for each (empty once all ran)."""
    with _lock:
        return {name: len(cbs) for name, cbs in _pending.items()}
