"""torch_neuronx.nki: an open implementation of the NKI kernel API on a simulated NeuronCore.

Use it like AWS's legacy ``neuronxcc.nki``::

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

Kernels also take ``neuron`` tensors (and become torch ops with ``torch_neuronx.nki_op``). The
simulated platform is the ``neuron`` device's unless a kernel names one (:mod:`.platforms`); its
numbers come from the runtime's platform table.

Layers, each importing only from the layers before it (``tests/test_layering.py`` checks it):
errors -> dtypes, ops, typing -> indexing -> memory -> context (the running simulator) -> tile ->
platforms, cost_model -> simulator (one NeuronCore) -> instructions (the destination-passing
instruction layer) -> language, isa (the legacy front end) -> frontend_legacy (``jit`` & co.) ->
benchmark, shim (the opt-in ``import nki``) -> torch_op (torch tensors, ``nki_op``). Importing this
package imports torch (``torch_neuronx`` registers the ``neuron`` device first); NumPy and
ml_dtypes do the simulation.
"""
from . import errors, isa, language, typing
from . import torch_op  # noqa: F401  (registers the adapter that runs kernels on torch tensors)
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
