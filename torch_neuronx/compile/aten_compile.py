"""Inductor's ``inner_compile`` for backend ``"neuron"``: one ATen graph (forward, backward or
inference, as AOTAutograd hands them over) through the compile cache.

For each graph: :func:`~torch_neuronx.compile.cache_key.graph_cache_key` → memory or disk hit?
load it (:mod:`.serialization`) : Inductor's ``compile_fx_inner`` (C++ code generation on
``neuron`` memory, :mod:`.inductor_device`) and store it. A failure follows the fallback
policy (:mod:`.fallback`); the metrics count compiles and hits (:mod:`.metrics`).
"""
from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import torch

from ..estimate import active as _estimate
from ..estimate.graphs import GraphLauncher, InductorCapture
from . import cache, debug, mega_cache, metrics
from .cache import GraphKind
from .output_devices import place_outputs
from .cache_key import graph_cache_key
from .fallback import NeuronCompileError, fallback_execution_allowed, handle_compile_failure
from .graph_identity import current_function
from .serialization import deserialize, inductor_cache_dir, serialize

log = logging.getLogger(__name__)

#: How the log names where a graph came from (:attr:`.cache.Lookup.source`).
_SOURCE_TEXT: Final[dict[str, str]] = {"compiled": "compiled", "memory": "loaded from the compile cache (memory)",
                                      "disk": "loaded from the compile cache (disk)"}

#: Inductor config while backend "neuron" compiles (forward at trace time, backward lazily):
#: ``fx_graph_cache`` off (our cache is the only one, so the metrics are exact);
#: ``cuda_backend="cpp"``: Inductor's ``get_current_backend()`` answers ``cuda_backend`` for
#: any device it does not know, and its C++ code generator needs "cpp" there (dtype
#: propagation of indirect indices); no CUDA device is involved in a neuron graph;
#: ``layout_optimization`` off: Inductor would make convolution inputs channels-last and then
#: assert the channels-last output strides its CPU heuristics predict, while PyTorch's fake kernel
#: for a PrivateUse1 convolution (the ``Overrideable`` backend) predicts contiguous outputs, so
#: every compiled UNet / VAE / conv stem failed its stride assertion; NHWC buys nothing here;
#: ``realize_opcount_threshold`` / ``realize_acc_reads_threshold``: when a pointwise value is
#: computed into a buffer instead of inlined into its users. Unset, Inductor takes its CPU values
#: only for ``device.type == "cpu"`` and its GPU values (30 ops, 8 reads) for any other device; set
#: to the CPU values (``config.realize_cpu_opcount_threshold``, ``realize_cpu_acc_reads_threshold``
#: of torch 2.13, checked by the tests), ``neuron`` fuses as Inductor does on the CPU;
#: ``max_pointwise_cat_inputs`` / ``max_complex_pointwise_cat_inputs`` 0: Inductor lowers ``cat`` on
#: the CPU always as a ``ConcatKernel`` (each input written into its slice of one buffer), on any
#: other device possibly as one pointwise kernel of masked loads (``pointwise_cat``) whose index
#: wraps each input's offset in ``Identity``. When an inlined producer clamps that index (a
#: replicate pad read by an average pool, as Diffusers' Helios does to its history latents),
#: Inductor's loop simplification, which the C++ code generator runs on every kernel, cannot take
#: the index apart ("The argument '2*(ModularIndexing((0), 4, 4))' is not comparable"): IR the CPU
#: never produces. With no input count allowed, ``neuron`` takes the CPU's ``ConcatKernel`` (and the
#: right pads Inductor rewrites as a cat follow it). Inductor's other CPU-only lowering choices and
#: what ``neuron`` gets for each are listed in docs/ARCHITECTURE.md (pinned by
#: ``tests/compile/test_lowering_choices.py``).
INDUCTOR_PATCHES: Final[dict[str, Any]] = {"fx_graph_cache": False, "cuda_backend": "cpp",
                                           "layout_optimization": False,
                                           "realize_opcount_threshold": 50,
                                           "realize_acc_reads_threshold": 12,
                                           "max_pointwise_cat_inputs": 0,
                                           "max_complex_pointwise_cat_inputs": 0}


def graph_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Inductor's ``inner_compile`` keyword arguments with the defaults ``compile_fx_inner``
    would use (no cudagraphs, no static inputs, a forward graph)."""
    from torch._inductor.utils import BoxedBool

    kw = dict(kwargs)
    kw.setdefault("cudagraphs", BoxedBool(False))
    kw.setdefault("static_input_idxs", ())
    kw.setdefault("is_backward", False)
    kw.setdefault("graph_id", None)
    kw.setdefault("is_inference", False)
    kw.setdefault("boxed_forward_device_index", None)
    if kw["cudagraphs"] is None:
        kw["cudagraphs"] = BoxedBool(False)
    return kw


def graph_kind(kw: dict[str, Any]) -> GraphKind:
    """``"backward"``, ``"inference"`` or ``"forward"`` from :func:`graph_kwargs`."""
    return "backward" if kw["is_backward"] else ("inference" if kw["is_inference"] else "forward")


def eager_callable(gm: torch.fx.GraphModule) -> Callable[..., Any]:
    """``gm`` with AOTAutograd's boxed calling convention (runs the ATen graph eagerly)."""
    from torch._functorch._aot_autograd.utils import make_boxed_func

    return make_boxed_func(gm)


def compile_aten_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                       **kwargs: Any) -> Callable[..., Any]:
    """Compiles (or loads from the cache) one ATen graph.

    Args:
        gm: the ATen graph from AOTAutograd.
        example_inputs: its inputs (fake tensors, static shapes).
        kwargs: Inductor's ``inner_compile`` keyword arguments (``is_backward``,
            ``is_inference``, ``cudagraphs``...).

    Returns:
        An Inductor ``CompiledFxGraph`` (boxed calling convention) in a
        :class:`~torch_neuronx.estimate.graphs.GraphLauncher`, or under fallback execution an
        eager boxed callable of ``gm``.

    Raises:
        NeuronCompileError: code generation failed and fallback execution is disabled.
    """
    from torch._inductor import config as inductor_config
    from torch._inductor.compile_fx import compile_fx_inner

    t0 = time.perf_counter()
    kw = graph_kwargs(kwargs)
    kind = graph_kind(kw)
    eager_allowed = fallback_execution_allowed()
    keep = copy.deepcopy(gm) if eager_allowed else None
    aten_text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    function = current_function()

    def compile_now() -> tuple[Any, bytes | None]:
        with inductor_cache_dir():
            compiled = compile_fx_inner(gm, example_inputs, **kwargs)
        return compiled, serialize(compiled)

    def load(blob: bytes) -> Any:
        return deserialize(blob, gm, example_inputs, kw)

    # while torch_neuronx.estimate records, capture what Inductor fuses (a private config: not in the cache key)
    capture = InductorCapture() if _estimate.current is not None else None
    patches = INDUCTOR_PATCHES if capture is None else {**INDUCTOR_PATCHES, "_post_fusion_custom_pass": capture}
    with inductor_config.patch(patches):
        key = graph_cache_key(gm, example_inputs, kind)
        header = cache.EntryDescription(kind=kind, name=function)
        try:
            found = cache.GLOBAL_CACHE.get_or_compile(key, compile_now, load, header=header)
        except NeuronCompileError:
            raise
        except Exception as err:  # noqa: BLE001  (any code generation failure: the fallback policy)
            handle_compile_failure(f"{kind} graph of {function} (cache key {key[:16]})", aten_text,
                                   err, eager_allowed)
            assert keep is not None  # handle_compile_failure returned: eager_allowed, so the copy exists
            return eager_callable(keep)
        finally:
            if kw["is_backward"]:  # forward/inference time is counted by the Dynamo-level backend
                metrics.record_compile_time(time.perf_counter() - t0)
    log.info("%s graph of %s %s in %.3f s (cache key %s)", kind, function,
             _SOURCE_TEXT.get(found.source, found.source), time.perf_counter() - t0, key[:16])
    if found.artifact is not None:  # for torch.compiler.save_cache_artifacts()
        mega_cache.record(key, dict(header), found.artifact)
    debug.dump_aten_graph(key, kind, aten_text, getattr(found.value, "source_code", None))
    # each launch is reported to torch_neuronx.estimate while one records (one attribute read otherwise)
    return place_outputs(GraphLauncher(found.value, gm, kind, key, capture), gm, example_inputs)
