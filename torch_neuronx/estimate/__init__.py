"""``torch_neuronx.estimate``: what a program would cost on Trainium — time, memory, compiles and dollars.

::

    import torch_neuronx
    with torch_neuronx.estimate(platform="trn2") as est:     # the module is callable: estimate(...)
        step()
    print(est.report.summary())

    from torch_neuronx.estimate import shape_only            # programs that do not fit here
    with shape_only(world_size=64) as so:
        model = so.causal_lm(config, tp=64)
        with torch_neuronx.estimate(platform="trn2", modules=[model]) as est:
            so.prefill(model, batch=1, seq=12288)

CLI: ``torch-neuronx estimate --model CONFIG --task {train,prefill,decode} ...``. Every number is an
ESTIMATE; hardware numbers come from ``torch_neuronx/runtime/platforms.py``; the fitted constants and
assumptions are in :mod:`.calibration`.
"""
from __future__ import annotations

import sys
import types

__all__ = ["estimate", "EstimateSession", "EstimateReport", "shape_only", "ShapeOnly", "active", "run_cli_estimate"]

_LAZY = {"estimate": ("session", "estimate"), "EstimateSession": ("session", "EstimateSession"),
         "EstimateReport": ("report", "EstimateReport"), "shape_only": ("shapes", "shape_only"),
         "ShapeOnly": ("shapes", "ShapeOnly"), "run_cli_estimate": ("workloads", "run_estimate")}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """Makes ``torch_neuronx.estimate(...)`` the same as ``torch_neuronx.estimate.estimate(...)``."""

    def __call__(self, *args, **kwargs):
        from .session import estimate

        return estimate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
