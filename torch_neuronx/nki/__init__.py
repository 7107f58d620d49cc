"""torch_neuronx.nki: AWS's Neuron Kernel Interface (NKI), both front ends, on a simulated NeuronCore.

This package is also AWS's legacy ``neuronxcc.nki`` namespace (``jit``, ``simulate_kernel``,
``benchmark``, ``baremetal``, ``trace``, ``profile``, ``language``, ``isa``, ``typing``, ``compiler``);
the current ``nki`` front end is :mod:`.current`. Both sit on one destination-passing instruction layer
(:mod:`.instructions`)::

    from torch_neuronx import nki
    import torch_neuronx.nki.language as nl            # legacy: calls return tiles

    @nki.jit
    def add_kernel(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a) + nl.load(b))
        return out

    c = add_kernel(a_np, b_np)                         # simulated; NumPy in, NumPy out

Kernel files written for AWS's packages run unchanged after :func:`install_import_hook` (``import nki``,
``import neuronxcc.nki.language``...) or through the runner ``torch-neuronx nki run FILE``
(:mod:`.runner`). Kernels also take ``neuron`` tensors (``torch_neuronx.nki_op``). The simulated platform
is the ``neuron`` device's unless a kernel names one (:mod:`.platforms`).

Layers, each importing only from the layers before it (``tests/test_layering.py`` checks it):
errors, truth -> dtypes, ops, typing -> indexing -> memory -> context -> tile -> platforms, cost_model, arguments ->
simulator -> instructions (a package) -> limits, highlevel -> language, isa, compiler (legacy) ->
launch -> benchmark -> current (the current front end) -> import_hook, runner -> torch_op.
"""
from . import compiler, errors, isa, language, typing
from . import torch_op  # noqa: F401  (registers the adapter that runs kernels on torch tensors)
from .benchmark import BenchmarkResult, benchmark, profile
from .dtypes import get_keep_fp32, keep_fp32, set_keep_fp32
from .errors import NKIError, NkiValidationError
from .import_hook import import_hook_installed, install_import_hook, uninstall_import_hook
from .launch import Kernel, baremetal, jit, simulate, simulate_kernel, trace
from .platforms import PLATFORMS, get_platform
from .typing import tensor
from . import current


class FrameworkKernel:
    """Legacy ``nki.FrameworkKernel`` (the base of AWS's JAX/PyTorch-XLA kernel adapters): not provided;
    torch tensors are handled by :func:`torch_neuronx.nki_op`.

    Raises:
        NotImplementedError: when instantiated.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError("nki.FrameworkKernel: framework adapters are not part of the simulator; use "
                                  "torch_neuronx.nki_op / wrap_nki for torch tensors")


__all__ = ["jit", "simulate_kernel", "simulate", "baremetal", "trace", "profile", "benchmark", "BenchmarkResult",
           "Kernel", "NKIError", "NkiValidationError", "errors", "language", "isa", "typing", "compiler", "current",
           "tensor", "FrameworkKernel", "keep_fp32", "set_keep_fp32", "get_keep_fp32", "PLATFORMS", "get_platform",
           "install_import_hook", "uninstall_import_hook", "import_hook_installed"]
