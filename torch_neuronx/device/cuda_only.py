"""The ``torch.cuda`` names a program ported from CUDA reaches for that ``torch.neuron`` has no
counterpart of, each with what to use on ``neuron`` instead.

``torch.neuron``'s module ``__getattr__`` puts the hint into the ``AttributeError`` it raises, so
``torch.neuron.amp.autocast()`` (``torch.cuda.amp.autocast()`` with "cuda" replaced) names
``torch.autocast("neuron")`` instead of only saying the attribute is missing.
"""
from __future__ import annotations

_NVML = ("NVML readings of a GPU: the software NeuronCore has no sensors; read memory with "
         "torch.neuron.memory_allocated() / mem_get_info(), and list the cores with `torch-neuronx info`")
_CUDA_GRAPHS = ("CUDA graphs have no neuron counterpart: compile the step with torch.compile(model, "
                "backend='neuron'), which runs each graph as one compiled kernel, as TorchNeuron does")
_CACHING_ALLOCATOR = ("the CUDA caching allocator's API: the neuron allocator gives every tensor a block of its "
                      "own and caches nothing; allocate with torch.empty(..., device='neuron') and read "
                      "torch.neuron.memory_stats()")
_SYNC_DEBUG = ("every neuron op has finished when it returns (as with NEURON_LAUNCH_BLOCKING=1), so there is "
               "no implicit synchronization to report")

#: name → what to use on neuron instead (the text of the AttributeError).
CUDA_ONLY_NAMES: dict[str, str] = {
    "amp": ("torch.cuda.amp is deprecated in PyTorch: use torch.autocast('neuron') (bf16 by default) and "
            "torch.amp.GradScaler('neuron')"),
    "nvtx": ("NVTX ranges are CUDA's: use torch.profiler.record_function(name), which torch.profiler records "
             "on neuron"),
    "graphs": _CUDA_GRAPHS,
    "graph": _CUDA_GRAPHS,
    "CUDAGraph": _CUDA_GRAPHS,
    "make_graphed_callables": _CUDA_GRAPHS,
    "graph_pool_handle": _CUDA_GRAPHS,
    "memory_usage": _NVML,
    "utilization": _NVML,
    "temperature": _NVML,
    "power_draw": _NVML,
    "clock_rate": _NVML,
    "list_gpu_processes": _NVML,
    "device_memory_used": _NVML,
    "caching_allocator_alloc": _CACHING_ALLOCATOR,
    "caching_allocator_delete": _CACHING_ALLOCATOR,
    "caching_allocator_enable": _CACHING_ALLOCATOR,
    "change_current_allocator": _CACHING_ALLOCATOR,
    "CUDAPluggableAllocator": _CACHING_ALLOCATOR,
    "MemPool": _CACHING_ALLOCATOR,
    "use_mem_pool": _CACHING_ALLOCATOR,
    "get_sync_debug_mode": _SYNC_DEBUG,
    "set_sync_debug_mode": _SYNC_DEBUG,
    "nccl": "collectives on neuron go through torch.distributed with backend 'neuron'",
    "comm": "collectives on neuron go through torch.distributed with backend 'neuron'",
    "jiterator": "write the elementwise kernel in NKI (torch_neuronx.nki, the README's 'NKI kernels')",
    "current_blas_handle": "cuBLAS handles do not exist on neuron: matmuls need no handle",
    "tunable": "TunableOp tunes CUDA/ROCm GEMMs: neuron has no GEMM tuner",
}


def missing_attribute_message(name: str) -> str:
    """The text of the ``AttributeError`` for ``torch.neuron.<name>``: the hint from
    :data:`CUDA_ONLY_NAMES` when ``name`` is a CUDA-only name, else a pointer to the README's list."""
    hint = CUDA_ONLY_NAMES.get(name)
    if hint is not None:
        return f"module 'torch.neuron' has no attribute '{name}' ({hint})"
    return (f"module 'torch.neuron' has no attribute '{name}' (torch-neuronx's software NeuronCore "
            f"implements the CUDA-shaped functions listed in its README)")
