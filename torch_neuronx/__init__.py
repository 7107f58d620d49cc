"""torch_neuronx: TorchNeuron, the native PyTorch backend for AWS Trainium, whose
``neuron`` device here is a software NeuronCore running on the host CPU.

``import torch`` loads it (entry point group ``torch.backends``), so
``torch.ones(2, device="neuron")`` works with no import of ours. Import
``torch_neuronx`` itself for its own API: op tracking, ``max_memory``, the compile
helpers (``get_dynamo_metrics``, ``pad_to_multiple``...), ``nki_op``,
(``torch_neuronx.nki``) the NKI kernel language and (``torch_neuronx.estimate``) the Trainium
time / memory / cost estimator.
"""
from __future__ import annotations

import atexit

from ._version import __version__

_registered = False


def _autoload() -> None:
    """Entry point of ``torch.backends``: runs inside ``import torch``.

    Loads the C++ core, renames PrivateUse1 to ``neuron``, registers the
    ``torch.neuron`` device module and the tensor/module/storage methods
    (``Tensor.neuron()``, ``is_neuron``...), and reads the topology. Imports
    nothing heavy (no transformers, no Inductor). An invalid environment does
    not fail ``import torch``: the first device use raises the error.
    """
    global _registered
    import torch

    if _registered or getattr(torch, "neuron", None) is not None:
        _registered = True
        return

    try:
        from . import _C  # static registrations run here
    except ImportError as err:
        raise ImportError(
            "torch_neuronx's C++ core (torch_neuronx._C) is missing or was built for another "
            f"torch than {torch.__version__}: reinstall with "
            "`pip install --no-build-isolation -e .` in the torch-neuronx checkout. "
            f"({err})"
        ) from err
    from . import _logging, _state

    # TORCH_NEURONX_LOG_LEVEL / TORCH_NEURONX_LOG_FILE (a bad value warns, never raises).
    _logging.configure()
    # The C++ core's records (first run of each host-fallback op, out-of-memory errors) go to these
    # loggers; the sink is removed at exit (atexit runs this handler after every later-registered one).
    _C._set_log_sink(_logging.cxx_record)
    atexit.register(_C._set_log_sink, None)
    torch.utils.rename_privateuse1_backend("neuron")
    _state.load_topology()
    # AWS's variables that concern Trainium's compiler or runtime: logged (INFO) when set, and
    # NEURON_CC_FLAGS that would change results warned about (runtime/environment.py).
    from .runtime import environment as _environment

    _environment.report_no_effect(lnc=_state.topology.lnc if _state.topology is not None else None)
    from . import device as _device_module

    torch._register_device_module("neuron", _device_module)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    # Trainium's mixed precision is bf16: torch.autocast("neuron") defaults to it.
    torch.set_autocast_dtype("neuron", torch.bfloat16)
    # FlopCounterMode counts the device's fused attention op (it has no formula for it otherwise).
    from .ops import flop_formulas as _flop_formulas

    _flop_formulas.register()
    # matmul, linear, ... of a nested tensor on neuron: the nested-tensor error, not PyTorch's internal one.
    from .ops import nested_refusals as _nested_refusals

    _nested_refusals.register()
    # avg_pool3d under torch.autocast("neuron"): float32, as the CPU's autocast (no bf16/fp16 CPU kernel).
    from .ops import autocast_fp32 as _autocast_fp32

    _autocast_fp32.register()
    # With TORCH_NEURONX_LOG_LEVEL=2/3, the ops that ran as host fallbacks are logged at exit.
    from .ops import tracking as _tracking

    _tracking.register_exit_summary()
    # neuron tensors cross processes (DataLoader workers) as shared-memory copies.
    from .device import sharing as _sharing

    _sharing.register()
    # torch.from_dlpack(t) of a neuron tensor: __dlpack_device__ knows the renamed device.
    from .device import dlpack as _dlpack

    _dlpack.install()
    # A clean exit after neuron backward passes (the autograd device threads' exit race).
    from .device import autograd_exit as _autograd_exit

    _autograd_exit.register()
    # c10d backend "neuron" for device neuron (imports no process group machinery).
    from .distributed import register as _register_distributed

    _register_distributed()
    # Adaptive eager execution (TORCH_NEURONX_ADAPTIVE_EAGER=1): the kernel compiler for the C++
    # recorder (Inductor itself loads at the first compile).
    from . import adaptive as _adaptive

    if _adaptive.read_env():
        _adaptive.install()
    # The Dynamo backend "neuron" registers itself through the torch_dynamo_backends
    # entry point when first used: nothing of Dynamo or Inductor loads here. Inductor finds the
    # device's code generators on torch.neuron (read only by Inductor, served lazily), and when
    # Dynamo loads, torch.compile without backend= starts selecting "neuron" for neuron graphs.
    for name in _INDUCTOR_CODEGEN:
        _device_module.register_lazy_attribute(name, _inductor_codegen(name))
    # torch.neuron's compilation-metrics functions (AWS's torch.neuron reference): the compile
    # layer's, imported on first access.
    for name in ("get_dynamo_metrics", "reset_dynamo_metrics"):
        _device_module.register_lazy_attribute(name, _compile_function(name))
    from . import _import_hooks

    _import_hooks.after_import("torch._dynamo", _on_dynamo_import)
    _registered = True


#: What Inductor reads from a device module (torch_neuronx.compile.inductor_device.CODEGEN_ATTRIBUTES).
_INDUCTOR_CODEGEN = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen")


def _inductor_codegen(name: str):
    def factory():
        from .compile import inductor_device

        return inductor_device.codegen_class(name)

    return factory


def _compile_function(name: str):
    def factory():
        from . import compile as _compile

        return getattr(_compile, name)

    return factory


def _on_dynamo_import(module) -> None:
    """Runs when ``torch._dynamo`` is first imported: backend auto-selection for
    ``torch.compile`` without ``backend=``, and our c10d process group hidden from Dynamo."""
    from .compile import default_backend, mega_cache
    from .distributed import dynamo_opaque

    default_backend.install()
    mega_cache.register()  # torch.compiler.load_cache_artifacts knows our entries in a fresh process
    dynamo_opaque.hide_from_dynamo()


_autoload()

from .device.max_memory import max_memory  # noqa: E402
from .adaptive.metrics import get_adaptive_eager_metrics, reset_adaptive_eager_metrics  # noqa: E402
from .ops.tracking import clear_op_tracking, get_executed_ops, get_fallback_ops  # noqa: E402
# AWS's examples call these on torch_neuronx itself (torch_neuronx.Stream(device), with
# torch_neuronx.stream(s), torch_neuronx.synchronize()): the torch.neuron objects.
from .device.streams import Stream, stream, synchronize  # noqa: E402
# AWS's torch_neuronx also carries the device functions and the memory_* API at its top level
# (torch_neuronx.device_count(), torch_neuronx.memory_stats(), ...): torch.neuron's objects, and
# torch_neuronx.memory's AWS-shaped memory_stats and snapshot calls.
from .device import (  # noqa: E402
    Event,
    StreamContext,
    current_device,
    current_stream,
    default_stream,
    device_count,
    get_device_properties,
    set_device,
    set_stream,
)
from .device import is_initialized as is_neuron_runtime_initialized  # noqa: E402
from . import memory  # noqa: E402
from .memory import (  # noqa: E402
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_snapshot_start,
    memory_snapshot_stop,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)

_COMPILE_API = ("get_dynamo_metrics", "reset_dynamo_metrics", "pad_to_multiple", "bucket_size",
                "pad_batch_to_bucket")

__all__ = [
    # torch.neuron's device and stream functions, on torch_neuronx as AWS's package has them
    "Event", "StreamContext", "current_device", "current_stream", "default_stream", "device_count",
    "get_device_properties", "is_neuron_runtime_initialized", "set_device", "set_stream",
    # the memory_* API (torch_neuronx.memory)
    "empty_cache", "max_memory_allocated", "max_memory_reserved", "memory", "memory_allocated",
    "memory_reserved", "memory_snapshot", "memory_snapshot_start", "memory_snapshot_stop", "memory_stats",
    "memory_summary", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
    "NeuronProfiler", "Stream", "__version__", "clear_op_tracking", "get_adaptive_eager_metrics",
    "reset_adaptive_eager_metrics", "get_executed_ops", "get_fallback_ops", "max_memory", "nki_op", "stream",
    "synchronize", "wrap_nki", *_COMPILE_API]


def __getattr__(name):
    # Lazy: nothing of NKI (NumPy, ml_dtypes, the simulator) or of the compile layer is
    # imported inside `import torch`.
    if name in ("nki_op", "wrap_nki"):
        from .nki import torch_op

        return getattr(torch_op, name)
    if name in _COMPILE_API:
        from . import compile as _compile

        return getattr(_compile, name)
    if name == "NeuronProfiler":  # AWS's torch_neuronx.NeuronProfiler (torch.profiler loads with it)
        from .profiling import NeuronProfiler

        return NeuronProfiler
    if name in ("nki", "kernels", "compile", "distributed", "estimate", "adaptive", "profiling"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
