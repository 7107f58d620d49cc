"""The package version, read once from the installed distribution's metadata.

The version is written in one place, ``pyproject.toml``; this leaf module (it imports nothing of
the package) lets submodules such as the compile cache key read it without importing the package
root, whose lazy ``__getattr__`` imports those submodules in turn.
"""
from __future__ import annotations

from importlib import metadata

#: The version of the installed ``torch-neuronx`` distribution; ``"0+unknown"`` when no
#: distribution metadata is installed (a source tree on ``PYTHONPATH`` only).
try:
    __version__: str = metadata.version("torch-neuronx")
except metadata.PackageNotFoundError:
    __version__ = "0+unknown"
