"""Kernel entry points of both front ends: ``jit``, ``simulate_kernel``, ``simulate``, ``baremetal``,
``trace``, ``profile`` and the launch syntax ``kernel[grid](*arrays)``.

Kernel inputs are NumPy arrays (copied into immutable HBM tensors); outputs are the tensors the kernel
returns (``nl.ndarray(..., buffer=nl.shared_hbm)``), handed back as NumPy arrays. Every mode runs the
CPU simulator (:mod:`.simulator`): there is no device.

Launch grids. Legacy (``neuronxcc.nki``): ``kernel[g0, g1]`` runs the SPMD program instances one after
the other on one core; axes given as ``nl.nc(2)`` (or ``nl.spmd_dim(nl.nc(2), n)``) are spread over the
two cores of a logical NeuronCore. Current (``nki``): ``kernel[2]`` is LNC=2 on NeuronCore-v3+ (both
programs run, each on its own core, synchronising at ``core_barrier`` / ``sendrecv``).

Precision per entry point (:mod:`.dtypes`): the legacy simulator (``simulate_kernel``,
``jit(mode="simulation")``) keeps custom float types in fp32, as AWS's legacy simulator does; everything
else rounds to the declared types, as the hardware and AWS's current simulator do;
``TORCH_NEURONX_NKI_KEEP_FP32`` / ``NKI_PRECISE_FP`` override.

Options of AWS's entry points that steer its compiler or device run (``additional_compile_opt``,
``artifacts_dir``, ``save_neff_name``, ``warmup``, ``iters``...) are recorded in ``kernel.options``:
there is no compiler or device, so they do not change what the simulator computes.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from . import dtypes, scopes
from .context import active
from .errors import err_nested_kernel_with_spmd_grid, err_unsupported_on_target
from .platforms import get_platform
from .simulator import Launch, nc_axis, run_kernel
from .tile import is_tile

__all__ = ["Kernel", "jit", "jit_current", "simulate_kernel", "simulate", "baremetal", "trace",
           "register_framework_adapter", "COMPILER_OPTIONS", "check_options"]

_SIM_MODES = ("auto", "simulation", "baremetal", "trace", "benchmark", "profile")
# Modes of AWS's ``nki.jit`` that hand the kernel to a framework's device path, not to a simulator.
_FRAMEWORK_MODES = ("torchxla", "jax")

COMPILER_OPTIONS = frozenset({
    "platform_target", "additional_compile_opt", "artifacts_dir", "save_neff_name", "save_trace_name",
    "kernel_return", "experimental_flags", "debug_kernel", "show_compiler_tool", "enable_out_of_bound_check",
    "working_directory", "profile_nth", "overwrite", "warmup", "iters", "num_devices", "show_compiler_tb",
    "num_execs",    # nki.profile: executions to run (AWS's tested nki-samples profile test passes it)
})
"""Keyword options AWS's ``jit`` / ``baremetal`` / ``benchmark`` / ``profile`` accept (anything else is a
``TypeError``)."""

# Framework adapters: callables ``adapter(kernel, args, kwargs)`` returning the call's result, or
# ``NotImplemented`` when no argument belongs to their framework. ``torch_neuronx.nki.torch_op``
# registers the torch adapter (torch tensors on ``neuron``).
_FRAMEWORK_ADAPTERS: list = []


def register_framework_adapter(adapter: Callable) -> None:
    """Add ``adapter`` (see ``_FRAMEWORK_ADAPTERS``) once; it sees every top-level kernel call."""
    if adapter not in _FRAMEWORK_ADAPTERS:
        _FRAMEWORK_ADAPTERS.append(adapter)


def check_options(api: str, options: dict) -> None:
    """Reject launch options AWS's ``api`` does not take (no option is accepted and ignored).

    Raises:
        TypeError: naming the first unknown keyword, as Python does for a function signature.
    """
    unknown = sorted(set(options) - COMPILER_OPTIONS)
    if unknown:
        raise TypeError(f"{api}() got an unexpected keyword argument {unknown[0]!r}")


def _grid_dimension(g: Any, grid: tuple) -> Any:
    """One dimension of a launch grid ``kernel[g0, g1, ...]``, checked: a Python / NumPy integer
    >= 0 (``nl.nc`` / ``nl.spmd_dim`` axes kept as they are), a float with an integral value
    (``x.shape[0] / 128`` that divides exactly) or an object with an integer value (``__index__``:
    a 0-dim integer tensor). A symbolic size (a torch ``SymInt``, traced under dynamic shapes) is
    kept for the torch adapter, which refuses it naming the fix.

    Raises:
        TypeError: a fractional float, a string, a bool, ``None`` or another non-integer (the
            program instances past the truncated count would silently never run).
        ValueError: a negative dimension.
    """
    where = f"kernel[{', '.join(map(repr, grid))}]"
    if type(g).__name__.startswith("Sym"):
        return g
    if isinstance(g, (bool, np.bool_)) or g is None or isinstance(g, (str, bytes)):
        value = None
    elif isinstance(g, int):
        value = g
    elif isinstance(g, (float, np.floating)):
        value = int(g) if float(g).is_integer() else None
    else:
        try:
            value = operator.index(g)
        except TypeError:
            value = None
    if value is None:
        raise TypeError(f"{where}: launch grid dimension {g!r} is not an integer; compute it with integer "
                        f"division, e.g. kernel[x.shape[0] // 128], and cover the remainder rows with a "
                        f"mask or by padding the input to a whole tile")
    if value < 0:
        raise ValueError(f"{where}: launch grid dimension {g!r} is negative; each dimension is a count "
                         f"of program instances (>= 1)")
    return g if isinstance(g, int) else value


class Kernel:
    """An NKI kernel function plus launch options; call it with NumPy arrays (or ``neuron`` tensors).

    ``kernel[g0, g1, ...]`` returns the same kernel bound to a launch grid. Called from inside a running
    kernel, the function is inlined (``trace`` semantics). After a call, ``last_run`` holds the
    :class:`~.simulator.Launch` (for the cost model: ``last_run.timeline``).

    Attributes:
        fn: the kernel function; frontend: "legacy" or "current"; mode: AWS's mode string;
        platform: the platform it names (or None); grid: the launch grid; options: AWS options.
    """

    fn: Callable[..., Any]
    __name__: str

    def __init__(self, fn: Callable, mode: str = "auto", platform: Any = None, grid: tuple = (),
                 frontend: str = "legacy", **options: Any):
        if isinstance(fn, Kernel):
            frontend = fn.frontend if frontend is None else frontend
            fn = fn.fn
        if mode not in _SIM_MODES + _FRAMEWORK_MODES:
            raise ValueError(f"nki.jit(mode={mode!r}): unknown mode; use one of "
                             f"{', '.join(map(repr, _SIM_MODES + _FRAMEWORK_MODES))} (\"auto\" picks the simulator)")
        self.fn = fn
        self.mode = mode
        self.platform = platform
        self.grid = tuple(grid)
        self.frontend = frontend
        self.options = options
        self.last_run: Launch | None = None
        self.keep: bool | None = None
        functools.update_wrapper(self, fn, updated=())

    def _copy(self, **changes: Any) -> Kernel:
        k = Kernel(self.fn, changes.get("mode", self.mode), changes.get("platform", self.platform),
                   changes.get("grid", self.grid), changes.get("frontend", self.frontend), **self.options)
        k.keep = changes.get("keep", self.keep)
        return k

    def __getitem__(self, grid: Any) -> Kernel:
        if not isinstance(grid, tuple):
            grid = (grid,)
        return self._copy(grid=tuple(_grid_dimension(g, grid) for g in grid))

    def lnc(self, platform: Any) -> int:
        """Cores of the logical NeuronCore this launch uses (1 or 2)."""
        g = self.grid
        if any(nc_axis(x) for x in g):
            return max(int(getattr(x, "cores", x)) for x in g if nc_axis(x))
        if self.frontend == "current" and len(g) == 1 and int(g[0]) == 2:
            if get_platform(platform).core.generation < 3:
                raise err_unsupported_on_target(f"kernel[2] (LNC=2) on {get_platform(platform).name}: logical "
                                                "NeuronCores of two cores exist from NeuronCore-v3 (trn2)")
            return 2
        return 1

    def default_keep(self) -> bool:
        """fp32 storage unless rounding was asked for (see the module docstring)."""
        if self.keep is not None:
            return dtypes.get_keep_fp32(self.keep)
        legacy_sim = self.frontend == "legacy" and self.mode == "simulation"
        return dtypes.get_keep_fp32(legacy_sim)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if active() is not None:
            if self.grid:
                raise err_nested_kernel_with_spmd_grid(f"kernel '{self.__name__}' called with grid "
                                                       f"{list(self.grid)} from inside a kernel")
            if self.frontend == "legacy":
                return scopes.call(self.fn, *args, **kwargs)
            return self.fn(*args, **kwargs)
        if self.mode not in _SIM_MODES:
            raise NotImplementedError(f"nki.jit(mode={self.mode!r}): this package runs kernels on its NeuronCore "
                                      f"simulator (modes {', '.join(_SIM_MODES)})")
        for adapter in _FRAMEWORK_ADAPTERS:          # e.g. torch tensors (torch_neuronx.nki.torch_op)
            out = adapter(self, args, kwargs)
            if out is not NotImplemented:
                return out
        if any(is_tile(a) for a in args):
            raise TypeError("kernel arguments must be NumPy arrays (or neuron tensors)")
        return self.run(args, kwargs)

    def run(self, args: Any, kwargs: Any, keep: bool | None = None) -> Any:
        """Simulate the kernel on NumPy ``args`` / ``kwargs``; returns the outputs."""
        plat = self.platform or self.options.get("platform_target")
        writable = self.mode == "trace" or self.options.get("kernel_return") is False or \
            "enable-mutable-parameter" in str(self.options.get("experimental_flags", ""))
        out, launch = run_kernel(self.fn, args, kwargs, self.grid, plat, frontend=self.frontend,
                                 keep=self.default_keep() if keep is None else keep, lnc=self.lnc(plat),
                                 params_writable=writable, placeholders=self.mode in ("benchmark", "profile"))
        self.last_run = launch
        return out

    def __repr__(self) -> str:
        g = f"[{', '.join(map(str, self.grid))}]" if self.grid else ""
        return f"<nki kernel {getattr(self.fn, '__name__', '?')}{g} mode={self.mode} ({self.frontend} front end)>"


def jit(func: Callable | None = None, mode: str = "auto", **kwargs: Any) -> Any:
    """Legacy ``neuronxcc.nki.jit``: ``@nki.jit`` or ``@nki.jit(mode="simulation",
    platform_target="trn1")``. ``platform_target``: "trn1" | "trn2" | "trn3" | "inf2"; default: the
    ``neuron`` device's platform, else ``TORCH_NEURONX_PLATFORM`` (see :mod:`.platforms`).

    Raises:
        TypeError: an option AWS's ``jit`` does not take.
        ValueError: a ``mode`` that is not one of AWS's ("auto", "simulation", "baremetal", "trace",
            "benchmark", "profile", "torchxla", "jax").
        NotImplementedError: when called, a kernel of mode "torchxla" or "jax" (a framework's device path).
    """
    check_options("nki.jit", kwargs)
    plat = kwargs.get("platform_target")
    if func is None:
        return lambda fn: Kernel(fn, mode, plat, (), "legacy", **kwargs)
    return Kernel(func, mode, plat, (), "legacy", **kwargs)


def jit_current(fn: Callable | None = None, **kwargs: Any) -> Any:
    """Current ``nki.jit``: ``@nki.jit`` or ``@nki.jit(platform_target="trn3")``; ``kernel[2]`` launches
    LNC=2.

    Raises:
        TypeError: an option AWS's ``jit`` does not take.
    """
    mode = kwargs.pop("mode", "auto")
    check_options("nki.jit", kwargs)
    plat = kwargs.get("platform_target")
    if fn is None:
        return lambda f: Kernel(f, mode, plat, (), "current", **kwargs)
    return Kernel(fn, mode, plat, (), "current", **kwargs)


def baremetal(kernel: Callable | None = None, **kwargs: Any) -> Any:
    """``nki.baremetal``: the same as a simulation here (there is no device; values are rounded to the
    declared types as on hardware)."""
    return jit(kernel, mode="baremetal", **kwargs)


def trace(kernel: Callable | None = None, **kwargs: Any) -> Any:
    """``nki.trace``: a sub-kernel inlined when called from a kernel; simulated when called alone, with
    its array parameters writable and written back (AWS's tests pass outputs as arguments)."""
    return jit(kernel, mode="trace", **kwargs)


def simulate_kernel(kernel: Any, *args: Any, platform: Any = None, **kwargs: Any) -> Any:
    """Legacy ``nki.simulate_kernel(kernel, *arrays)``: run ``kernel`` (a function, ``nki.jit`` kernel or
    ``kernel[grid]``) on NumPy arrays in the legacy simulator (custom float types kept in fp32) and return
    its outputs as NumPy arrays."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    k = k._copy(mode="simulation" if k.mode in ("auto", "simulation") else k.mode,
                platform=platform or k.platform)
    if k.frontend == "legacy" and k.keep is None:
        k.keep = True
    return k.run(args, kwargs)


def simulate(kernel: Any, *, platform: Any = None) -> Callable[..., Any]:
    """Current ``nki.simulate(kernel)(*arrays)``: a callable running ``kernel`` (``kernel[lnc]`` for
    LNC=2) on the simulator with AWS's current simulator precision (low-precision values rounded;
    ``NKI_PRECISE_FP=0`` keeps fp32)."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel, frontend="current")
    k = k._copy(platform=platform or k.platform)
    if k.keep is None:
        k.keep = False

    def run(*args: Any, **kwargs: Any) -> Any:
        out = k.run(args, kwargs)
        if isinstance(kernel, Kernel):
            kernel.last_run = k.last_run
        return out
    run.kernel = k  # type: ignore[attr-defined]
    return run


def execute(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """Current ``nki.execute(kernel, *args, **kwargs)``: AWS specialises ``kernel`` (a ``nki.jit``
    kernel, ``kernel[lnc]``, or a plain function) into a NEFF and runs it on a NeuronCore; here it runs
    on the simulator with the hardware's rounding (as ``nki.baremetal``). NumPy arrays in, NumPy arrays
    out; ``neuron`` tensors in, ``neuron`` tensors out (as calling the kernel). After the call,
    ``kernel.last_run`` is the launch when ``kernel`` is a ``nki.jit`` kernel.

    Raises:
        NotImplementedError: a kernel whose mode the simulator does not run (``mode="torchxla"``).
    """
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel, frontend="current")
    if k.keep is None and k.mode == "auto":
        k = k._copy(mode="baremetal")
        out = k(*args, **kwargs)
        if isinstance(kernel, Kernel) and hasattr(k, "last_run"):
            kernel.last_run = k.last_run
        return out
    return k(*args, **kwargs)


_ = np
