"""Make ``torch_neuronx.nki`` importable for these tests.

The NKI package needs nothing from its parent. If ``import torch_neuronx`` itself fails (the device
layer is developed in parallel and imports torch), the tests load ``torch_neuronx.nki`` under a bare
namespace parent instead, so that they test this package alone; a warning says so.
"""
import importlib
import os
import sys
import types
import warnings

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

try:
    importlib.import_module("torch_neuronx.nki")
except Exception as exc:  # the parent package failed to import: test the NKI package on its own
    for name in [n for n in sys.modules if n == "torch_neuronx" or n.startswith("torch_neuronx.")]:
        del sys.modules[name]
    parent = types.ModuleType("torch_neuronx")
    parent.__path__ = [os.path.join(_ROOT, "torch_neuronx")]
    sys.modules["torch_neuronx"] = parent
    importlib.import_module("torch_neuronx.nki")
    warnings.warn(f"torch_neuronx failed to import ({exc!r}); testing torch_neuronx.nki standalone")
