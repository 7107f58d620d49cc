"""Ahead-of-time compilation and packaging with backend ``"neuron"``: refused with what to use.

PyTorch's AOT paths need the backend to return a serializable compiled function
(``SerializableCallable``: ``torch.compile(...).aot_compile(...)``, Dynamo's ``caching_precompile``)
or Inductor's C++ wrapper (AOTInductor, ``aoti_compile_and_package``: refused by
:mod:`.inductor_device`'s C++ wrapper generator). Backend ``"neuron"`` returns a plain callable
over its own compile cache, so instead of PyTorch's internal "does not implement
SerializableCallable" at the end of a compile, :func:`refuse_aot` stops at the start with the
supported ways to ship compiled graphs: the disk cache folder (``TORCH_NEURONX_NEFF_CACHE_DIR``)
and ``torch.compiler.save_cache_artifacts`` / ``load_cache_artifacts`` (:mod:`.mega_cache`).
"""
from __future__ import annotations


class AOTCompileUnsupportedError(NotImplementedError):
    """``aot_compile`` / precompile was asked of backend ``"neuron"``."""


def aot_compile_active() -> bool:
    """True while Dynamo compiles for ``torch.compile(...).aot_compile`` (it patches these
    functorch settings together around the backend call, torch 2.13 ``_dynamo/aot_compile.py``)
    or with ``torch._dynamo.config.caching_precompile``."""
    import torch._dynamo.config as dynamo_config
    import torch._functorch.config as functorch_config

    in_aot_compile = (functorch_config.bundled_autograd_cache and functorch_config.bypass_autograd_cache_key
                      and functorch_config.force_non_lazy_backward_lowering)
    return bool(in_aot_compile or dynamo_config.caching_precompile)


def refuse_aot() -> None:
    """Raises :class:`AOTCompileUnsupportedError` if :func:`aot_compile_active`."""
    if aot_compile_active():
        raise AOTCompileUnsupportedError(
            "backend 'neuron' does not support ahead-of-time compilation or packaging "
            "(torch.compile(...).aot_compile, torch._dynamo.config.caching_precompile, AOTInductor): "
            "its compiled graphs are not serializable callables. To ship compiled graphs, copy the "
            "compile cache folder (TORCH_NEURONX_NEFF_CACHE_DIR) or use "
            "torch.compiler.save_cache_artifacts() / load_cache_artifacts(); a later process then "
            "loads every graph instead of compiling it.")


__all__ = ["AOTCompileUnsupportedError", "aot_compile_active", "refuse_aot"]
