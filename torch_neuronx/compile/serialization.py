"""A compiled ATen graph to bytes and back: what a disk cache entry's artifact holds.

The artifact is Inductor's ``CompiledFxGraph`` after ``prepare_for_serialization`` (the
generated Python wrapper with its C++ kernel sources), pickled. Loading it writes and builds
(or finds already built) the kernels in Inductor's kernel cache; while backend ``"neuron"``
compiles or loads, that cache is ``<disk cache>/inductor`` (:func:`inductor_cache_dir`), so the
disk cache folder holds everything a later process needs and no C++ is recompiled there.
"""
from __future__ import annotations

import contextlib
import copy
import os
import pickle
from collections.abc import Iterator, Sequence
from typing import Any

from torch.utils._python_dispatch import _disable_current_modes

from . import cache

_ENV = "TORCHINDUCTOR_CACHE_DIR"


@contextlib.contextmanager
def inductor_cache_dir() -> Iterator[None]:
    """Points Inductor's kernel cache (``TORCHINDUCTOR_CACHE_DIR``, read by Inductor at each
    use) at :func:`torch_neuronx.compile.cache.inductor_dir` for the duration, then restores
    the previous value. No-op when the disk cache is disabled."""
    if cache.cache_disabled():
        yield
        return
    old = os.environ.get(_ENV)
    os.environ[_ENV] = str(cache.inductor_dir())
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(_ENV, None)
        else:
            os.environ[_ENV] = old


def serialize(compiled: Any) -> bytes | None:
    """The artifact bytes of ``compiled`` (an Inductor ``CompiledFxGraph``), or None when it
    is something else or does not pickle (the graph then stays in memory only)."""
    from torch._inductor.output_code import CompiledFxGraph

    if not isinstance(compiled, CompiledFxGraph):
        return None
    disk = copy.copy(compiled)
    disk.prepare_for_serialization()
    # compile_fx keeps the decomposition table it was given (our training table) in fx_kwargs;
    # lowering is done and the table's closures do not pickle, so the disk entry leaves it out.
    disk.fx_kwargs = {k: v for k, v in getattr(disk, "fx_kwargs", {}).items() if k != "get_decomp_fn"}
    try:
        return pickle.dumps(disk)
    except Exception:  # noqa: BLE001  (any pickling failure means: not cacheable on disk)
        return None


def deserialize(blob: bytes, gm: Any, example_inputs: Sequence[Any],
                graph_kwargs: dict[str, Any]) -> Any:
    """Inverse of :func:`serialize`: a ready-to-call ``CompiledFxGraph`` for ATen graph ``gm``.

    Args:
        blob: artifact bytes.
        gm: the ATen graph being compiled (its constants are attached to the loaded graph).
        example_inputs: the graph's inputs (fake tensors), as Inductor's ``post_compile`` wants.
        graph_kwargs: Inductor's ``inner_compile`` keyword arguments, completed with their
            defaults.

    Raises:
        Any exception of unpickling or loading (the cache treats the entry as corrupt and
        recompiles).
    """
    from torch._inductor.output_code import CompiledFxGraphConstantsWithGm

    graph = pickle.loads(blob)
    constants = CompiledFxGraphConstantsWithGm(gm)
    with _disable_current_modes(), inductor_cache_dir():
        graph.after_deserialization(constants)
        graph.post_compile(example_inputs, constants, graph_kwargs)
    return graph
