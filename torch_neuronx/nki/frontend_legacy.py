"""Kernel entry points of the legacy ``neuronxcc.nki`` API: ``jit``, ``simulate_kernel``,
``baremetal``, ``trace`` and the SPMD launch syntax ``kernel[g0, g1](*arrays)``.

Kernel inputs are NumPy arrays (copied into immutable HBM tensors); outputs are the tensors the
kernel returns (``nl.ndarray(..., buffer=nl.shared_hbm)``), handed back as NumPy arrays.
Every mode runs the CPU simulator of one NeuronCore (:mod:`.simulator`): there is no device.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .context import active
from .simulator import run_kernel
from .tile import is_tile

__all__ = ["Kernel", "jit", "simulate_kernel", "simulate", "baremetal", "trace", "register_framework_adapter"]

_SIM_MODES = ("auto", "simulation", "baremetal", "trace", "benchmark")

# Framework adapters: callables ``adapter(kernel, args, kwargs)`` returning the call's result, or
# ``NotImplemented`` when no argument belongs to their framework. This module imports no framework;
# ``torch_neuronx.nki.torch_op`` (imported by ``torch_neuronx.nki``) registers the torch adapter (torch
# tensors on ``neuron``), which is what nki.jit's mode "auto" means on AWS: detect the framework of the
# arguments.
_FRAMEWORK_ADAPTERS: list = []


def register_framework_adapter(adapter) -> None:
    """Add ``adapter`` (see ``_FRAMEWORK_ADAPTERS``) once; it sees every top-level kernel call."""
    if adapter not in _FRAMEWORK_ADAPTERS:
        _FRAMEWORK_ADAPTERS.append(adapter)


class Kernel:
    """A NKI kernel function plus launch options; call it with NumPy arrays.

    ``kernel[g0, g1, ...]`` returns the same kernel bound to an SPMD launch grid (program instances
    run one after the other on the simulated core). Called from inside a running kernel, the function
    is inlined (``trace`` semantics). After a call, ``last_run`` holds the simulator (for the cost
    model: ``last_run.timeline``).
    """

    fn: Callable[..., Any]
    __name__: str  # with __qualname__, __doc__... copied from ``fn`` by functools.update_wrapper

    def __init__(self, fn, mode="auto", platform=None, grid=(), **options):
        if isinstance(fn, Kernel):
            fn = fn.fn
        self.fn = fn
        self.mode = mode
        self.platform = platform
        self.grid = tuple(grid)
        self.options = options
        self.last_run = None
        functools.update_wrapper(self, fn, updated=())

    def __getitem__(self, grid):
        if not isinstance(grid, tuple):
            grid = (grid,)
        return Kernel(self.fn, self.mode, self.platform, grid, **self.options)

    def __call__(self, *args, **kwargs):
        if active() is not None:
            if self.grid:
                raise RuntimeError("calling a kernel with an SPMD grid inside another kernel is not "
                                   "supported (AWS: err_nested_kernel_with_spmd_grid)")
            return self.fn(*args, **kwargs)
        if self.mode not in _SIM_MODES:
            raise NotImplementedError(
                f"nki.jit mode={self.mode!r}: this package runs kernels on its NeuronCore simulator "
                f"only (modes {', '.join(_SIM_MODES)}); framework tensors are handled by the "
                "torch_neuronx device layer")
        for adapter in _FRAMEWORK_ADAPTERS:          # e.g. torch tensors (torch_neuronx.nki.torch_op)
            out = adapter(self, args, kwargs)
            if out is not NotImplemented:
                return out
        if any(is_tile(a) for a in args):
            raise TypeError("kernel arguments must be NumPy arrays")
        out, sim = run_kernel(self.fn, args, kwargs, self.grid, self.platform)
        self.last_run = sim
        return out

    def __repr__(self):
        g = f"[{', '.join(map(str, self.grid))}]" if self.grid else ""
        return f"<nki kernel {getattr(self.fn, '__name__', '?')}{g} mode={self.mode}>"


def jit(kernel=None, *, mode="auto", platform_target=None, **kwargs):
    """Decorator (``@nki.jit`` or ``@nki.jit(mode="simulation")``) making a NKI kernel callable with
    NumPy arrays (or ``neuron`` tensors). ``platform_target``: "trn1" | "trn2" | "trn3" | "inf2";
    default: the ``neuron`` device's platform, else ``TORCH_NEURONX_PLATFORM`` (see :mod:`.platforms`)."""
    if kernel is None:
        return lambda fn: Kernel(fn, mode, platform_target, **kwargs)
    return Kernel(kernel, mode, platform_target, **kwargs)


def baremetal(kernel=None, **kwargs):
    """``nki.baremetal``: on this package, the same as simulation (there is no device)."""
    return jit(kernel, mode="baremetal", **kwargs)


def trace(kernel=None, **kwargs):
    """``nki.trace``: a sub-kernel inlined when called from a kernel; simulated when called alone."""
    return jit(kernel, mode="trace", **kwargs)


def simulate_kernel(kernel, *args, platform=None, **kwargs):
    """Run ``kernel`` (a function, ``nki.jit`` kernel or ``kernel[grid]``) on NumPy arrays in the
    simulator and return its outputs as NumPy arrays."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    if platform is not None:
        k = Kernel(k.fn, "simulation", platform, k.grid, **k.options)
    return k(*args, **kwargs)


def simulate(kernel, *, platform=None):
    """Current-API spelling: ``nki.simulate(kernel)(*arrays)``."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)

    def run(*args, **kwargs):
        return simulate_kernel(k, *args, platform=platform, **kwargs)
    return run
