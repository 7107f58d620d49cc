"""The opt-in import hook: kernel files written for AWS's packages import ``nki*`` / ``neuronxcc.nki*``
unchanged and get this package.

:func:`install_import_hook` puts a finder first on ``sys.meta_path`` that serves

* ``nki`` and its submodules (``nki.language``, ``nki.isa``, ``nki.collectives``, ``nki.language.constants``,
  ``nki.isa.constants``) from the current front end :mod:`torch_neuronx.nki.current`, and
  ``nki.compiler`` (+ ``.sbuf``, ``.psum``) and ``nki.typing`` from the shared modules;
* ``neuronxcc.nki`` and its submodules (``.language``, ``.isa``, ``.typing``, ``.compiler``, and their
  ``constants``) from the legacy front end :mod:`torch_neuronx.nki` (``neuronxcc`` itself is a bare
  package holding ``nki``).

It never shadows AWS's packages: it refuses (``RuntimeError``) when an ``nki`` or ``neuronxcc`` that is
not ours is importable or imported. Names this package lacks are not invented: the import fails with
``ModuleNotFoundError`` naming the module. It is off by default; the ``torch-neuronx nki run`` runner
(:mod:`.runner`) switches it on.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

__all__ = ["install_import_hook", "uninstall_import_hook", "import_hook_installed", "served_module"]

_PKG = __name__.rsplit(".", 1)[0]          # "torch_neuronx.nki"
_CURRENT = _PKG + ".current"


def served_module(fullname: str) -> str | None:
    """The module of this package that serves import name ``fullname`` (None: not ours to serve)."""
    if fullname == "neuronxcc.nki" or fullname.startswith("neuronxcc.nki."):
        return _PKG + fullname[len("neuronxcc.nki"):]
    if fullname == "nki":
        return _CURRENT
    if fullname.startswith("nki."):
        rest = fullname[len("nki"):]
        for base in (_CURRENT, _PKG):
            cand = base + rest
            try:
                if importlib.util.find_spec(cand) is not None:
                    return cand
            except ModuleNotFoundError:
                continue
        return _CURRENT + rest
    return None


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves AWS's module names from this package (see the module docstring)."""

    def __init__(self) -> None:
        self._saved: dict[str, tuple] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == "neuronxcc":
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        real = served_module(fullname)
        if real is None:
            return None
        try:
            if importlib.util.find_spec(real) is None:
                return None
        except ModuleNotFoundError:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name == "neuronxcc":
            m = types.ModuleType("neuronxcc", "AWS's neuronxcc namespace, served by torch_neuronx.nki")
            m.__path__ = []
            return m
        real = served_module(spec.name)
        assert real is not None
        mod = importlib.import_module(real)
        self._saved[spec.name] = (mod.__spec__, getattr(mod, "__loader__", None), getattr(mod, "__path__", None))
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ == "neuronxcc":
            module.nki = importlib.import_module(_PKG)  # type: ignore[attr-defined]
            return
        for alias, (spec, loader, path) in list(self._saved.items()):
            if module.__spec__ is not None and module.__spec__.name == alias:
                module.__spec__ = spec          # keep the real module's identity intact
                module.__loader__ = loader
                if path is not None:
                    module.__path__ = path
                del self._saved[alias]


_FINDER = _Finder()


def _foreign(top: str) -> str | None:
    """Where a real (not ours) ``top`` package lives, or None."""
    m = sys.modules.get(top)
    if m is not None:
        name = getattr(m, "__name__", "")
        if name.startswith(_PKG) or (top == "neuronxcc" and getattr(m, "nki", None) is sys.modules.get(_PKG)):
            return None
        return repr(m)
    if _FINDER in sys.meta_path:
        return None
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is not None and spec.origin not in (None, "namespace"):
        return str(spec.origin)
    return None


def install_import_hook() -> None:
    """Serve ``import nki`` / ``import neuronxcc.nki`` (and their submodules) from this package.

    Idempotent. Raises ``RuntimeError`` when AWS's ``nki`` or ``neuronxcc`` package is importable or
    already imported (this package never shadows them; use them instead, or another environment).
    """
    if _FINDER in sys.meta_path:
        return
    for top in ("nki", "neuronxcc"):
        where = _foreign(top)
        if where is not None:
            raise RuntimeError(f"AWS's '{top}' package is installed ({where}); torch_neuronx does not shadow it. "
                               "Run the kernel with AWS's package, or in an environment without it.")
    sys.meta_path.insert(0, _FINDER)


def uninstall_import_hook() -> None:
    """Remove the hook and drop the module names it served from ``sys.modules``."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in list(sys.modules) if n in ("nki", "neuronxcc") or n.startswith(("nki.", "neuronxcc."))]:
        mod = sys.modules[name]
        if getattr(mod, "__name__", "").startswith(_PKG) or name == "neuronxcc" and \
                getattr(mod, "nki", None) is sys.modules.get(_PKG):
            del sys.modules[name]


def import_hook_installed() -> bool:
    """True while :func:`install_import_hook` is active."""
    return _FINDER in sys.meta_path
