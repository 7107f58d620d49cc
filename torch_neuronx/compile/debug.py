"""``TORCH_NEURONX_DEBUG_DIR``: dump every graph backend ``"neuron"`` sees.

Files written (one folder, names sortable in compile order):
  * ``<NNNN>_<function>_dynamo.txt``: the FX graph Dynamo captured (Python code with shapes);
  * ``<key16>_<kind>_aten.txt``: the ATen forward / backward / inference graph after
    AOTAutograd (``kind``), under its cache key prefix;
  * ``<key16>_<kind>_code.py``: the code Inductor generated for it (Python wrapper with the
    C++ kernels inline), written on a compile and on a cache hit alike.
Unset or empty: nothing is written.
"""
from __future__ import annotations

import itertools
import os
import re
import warnings
from pathlib import Path

_counter = itertools.count()
_unwritable: set[str] = set()   # folders already warned about


def debug_dir() -> Path | None:
    """The dump folder, or None when ``TORCH_NEURONX_DEBUG_DIR`` is unset/empty."""
    value = os.environ.get("TORCH_NEURONX_DEBUG_DIR", "").strip()
    return Path(value) if value else None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:60] or "graph"


def dump(filename: str, text: str) -> Path | None:
    """Writes ``text`` to ``<debug dir>/<filename>``; returns the path (None when disabled, or when
    the folder cannot be written: then a ``UserWarning`` naming ``TORCH_NEURONX_DEBUG_DIR`` and the
    error, once per folder, and the compile goes on without the dump)."""
    root = debug_dir()
    if root is None:
        return None
    path = root / _safe(filename)
    try:
        root.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as err:
        if str(root) not in _unwritable:
            _unwritable.add(str(root))
            warnings.warn(f"TORCH_NEURONX_DEBUG_DIR={str(root)!r} cannot be written ({type(err).__name__}: "
                          f"{err}): graphs are not dumped; point it at a writable folder", UserWarning,
                          stacklevel=2)
        return None
    return path


def dump_dynamo_graph(function: str, text: str) -> Path | None:
    """Dumps a Dynamo graph as ``<NNNN>_<function>_dynamo.txt``."""
    if debug_dir() is None:
        return None
    return dump(f"{next(_counter):04d}_{_safe(function)}_dynamo.txt", text)


def dump_aten_graph(key: str, kind: str, graph_text: str, code: str | None) -> None:
    """Dumps an ATen graph and (when known) its generated code under the key prefix."""
    if debug_dir() is None:
        return
    dump(f"{key[:16]}_{kind}_aten.txt", graph_text)
    if code:
        dump(f"{key[:16]}_{kind}_code.py", code)
