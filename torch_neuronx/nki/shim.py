"""Opt-in ``import nki`` shim.

:func:`install_nki_shim` makes ``import nki`` / ``import nki.language`` / ``import nki.isa`` resolve to
this package, so kernels written for AWS's module names run unchanged. It is OFF by default and never
installed on import: a top-level ``nki`` module would shadow AWS's own package. It refuses to
shadow an importable ``nki`` that is not ours unless ``force=True``.

Today the shim serves the legacy API (``nki.language`` = :mod:`.language`, ``nki.isa`` = :mod:`.isa`);
when the current ``nki`` >= 0.3 front end is added on the same instruction layer, the shim is the one
place that will point ``nki`` at it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["install_nki_shim", "uninstall_nki_shim", "nki_shim_installed"]

_PKG = __name__.rsplit(".", 1)[0]          # "torch_neuronx.nki"
_installed: list = []


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, alias):
        self.alias = alias

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.alias or fullname.startswith(self.alias + "."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        real = _PKG + spec.name[len(self.alias):]
        return importlib.import_module(real)

    def exec_module(self, module):
        pass


def install_nki_shim(alias: str = "nki", *, force: bool = False) -> None:
    """Make ``import <alias>`` (default ``nki``) and its submodules resolve to ``torch_neuronx.nki``."""
    if nki_shim_installed(alias):
        return
    if not force:
        existing = sys.modules.get(alias)
        if existing is None:
            try:
                spec = importlib.util.find_spec(alias)
            except (ImportError, ValueError):
                spec = None
            if spec is not None and spec.origin is not None:   # a bare namespace dir is not a package
                raise RuntimeError(f"a real '{alias}' package is importable ({spec.origin}); not "
                                   "shadowing it (pass force=True to override)")
        elif not existing.__name__.startswith(_PKG):
            raise RuntimeError(f"'{alias}' is already imported from {existing!r}; not shadowing it")
    finder = _Finder(alias)
    sys.meta_path.insert(0, finder)
    _installed.append(finder)
    pkg = importlib.import_module(_PKG)
    sys.modules[alias] = pkg
    for sub in ("language", "isa"):
        sys.modules[f"{alias}.{sub}"] = importlib.import_module(f"{_PKG}.{sub}")


def uninstall_nki_shim(alias: str = "nki") -> None:
    """Remove the shim installed for ``alias`` (modules imported through it are dropped)."""
    for f in [f for f in _installed if f.alias == alias]:
        sys.meta_path.remove(f)
        _installed.remove(f)
    for name in [n for n in sys.modules if n == alias or n.startswith(alias + ".")]:
        if getattr(sys.modules[name], "__name__", "").startswith(_PKG):
            del sys.modules[name]


def nki_shim_installed(alias: str = "nki") -> bool:
    """True when :func:`install_nki_shim` is active for ``alias``."""
    return any(f.alias == alias for f in _installed)
