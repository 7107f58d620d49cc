"""torch_neuronx.nki: an open implementation of the NKI kernel API on a simulated NeuronCore.

Pure Python + NumPy + ml_dtypes (no torch import). Use it like AWS's legacy ``neuronxcc.nki``::

    from torch_neuronx import nki
    import torch_neuronx.nki.language as nl
    import torch_neuronx.nki.isa as nisa

    @nki.jit
    def add_kernel(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a) + nl.load(b))
        return out

    c = add_kernel(a_np, b_np)                         # simulated; NumPy in, NumPy out
    bench = nki.benchmark(add_kernel, platform="trn1"); bench(a_np, b_np)
    print(bench.benchmark_result)                      # ESTIMATED latency from the cost model

Layers (one concept per module): dtypes, indexing, tile, memory, platforms, errors, ops,
simulator (one NeuronCore), cost_model, instructions (destination-passing instruction layer),
language / isa (legacy front end), typing (``nt.mutable_tensor``), frontend_legacy (jit & co.),
benchmark, shim (opt-in ``import nki``). The torch integration (``nki_op``, ``wrap_nki``: kernels as torch
ops on ``neuron`` tensors) is :mod:`.torch_op`, the only module here that imports torch.
"""
from . import errors, language, isa, typing
from .benchmark import BenchmarkResult, benchmark
from .dtypes import get_keep_fp32, keep_fp32, set_keep_fp32
from .errors import NKIError
from .frontend_legacy import Kernel, baremetal, jit, simulate, simulate_kernel, trace
from .platforms import PLATFORMS, get_platform
from .shim import install_nki_shim, nki_shim_installed, uninstall_nki_shim

__all__ = ["jit", "simulate_kernel", "simulate", "baremetal", "trace", "benchmark", "BenchmarkResult",
           "Kernel", "NKIError", "errors", "language", "isa", "typing", "keep_fp32", "set_keep_fp32",
           "get_keep_fp32", "PLATFORMS", "get_platform", "install_nki_shim", "uninstall_nki_shim",
           "nki_shim_installed"]
