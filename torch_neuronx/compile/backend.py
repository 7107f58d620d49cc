"""The Dynamo backend ``"neuron"``: ``torch.compile(model, backend="neuron")``.

Data flow of one graph (``shared/docs/ARCHITECTURE.md``, "Data flow of a compiled graph"):

    Dynamo FX graph → reject symbolic shapes → metrics (recompile diagnosis) → Inductor's
    ``compile_fx`` (pre-grad passes, AOTAutograd: forward/backward or inference graphs with
    core ATen decompositions) → for each ATen graph, :func:`_compile_aten_graph`: cache key →
    memory / disk hit? load : Inductor CPU C++ codegen on ``neuron`` memory
    (:mod:`.inductor_device`) → a callable whose outputs are ``neuron`` tensors (no copy).

TorchNeuron semantics kept here (``shared/docs/TRAINIUM.md``):

* **static shapes**: ``dynamic=True`` (or ``mark_dynamic``) raises :class:`DynamicShapeError`;
  automatic dynamic-shape promotion is turned off when this module loads
  (``torch._dynamo.config.automatic_dynamic_shapes = False``, process-wide: Dynamo reads it
  before any backend sees a graph), so every new input shape is a new static graph;
* ``mode`` other than ``"default"`` (and any ``options``) warn and are ignored;
* a failing graph raises :class:`NeuronCompileError` with the graph, or runs eagerly with a
  warning under ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0`` (:mod:`.fallback`);
* forward and backward graphs (training), ``fullgraph=True`` and graph breaks are Dynamo's and
  work unchanged.

Inductor's own caches (FX graph cache, AOTAutograd cache) are off for our compiles: the
:mod:`.cache` of this package is the one source of cached graphs, so the metrics are exact.
"""
from __future__ import annotations

import contextlib
import copy
import os
import pickle
import sys
import time
import warnings
from typing import Any

import torch

from . import cache, debug, inductor_device, metrics
from .decompositions import decomposition_table
from .fallback import (
    CompileFallbackWarning,
    DynamicShapeError,
    NeuronCompileError,
    failure_message,
    fallback_execution_allowed,
)

BACKEND_NAME = "neuron"

#: Inductor config while backend "neuron" compiles (forward at trace time, backward lazily):
#: ``fx_graph_cache`` off (our cache is the only one, so the metrics are exact);
#: ``cuda_backend="cpp"``: Inductor's ``get_current_backend()`` answers ``cuda_backend`` for
#: any device it does not know, and its C++ code generator needs "cpp" there (dtype
#: propagation of indirect indices); no CUDA device is involved in a neuron graph.
INDUCTOR_PATCHES = {"fx_graph_cache": False, "cuda_backend": "cpp"}


class CompileModeWarning(UserWarning):
    """``torch.compile(mode=...)`` other than ``"default"`` (or ``options``) was given."""


def _configure_dynamo() -> None:
    import torch._dynamo

    # Each new shape is a new static graph (TorchNeuron); Dynamo would otherwise mark a
    # changed dimension dynamic at the first recompile and hand us a symbolic graph.
    torch._dynamo.config.automatic_dynamic_shapes = False


# --- static shapes --------------------------------------------------------------------------

def _input_name(node) -> str:
    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    if source is not None:
        name = source.name
        name = name() if callable(name) else name
        return str(name)
    return node.name


def _symbolic_inputs(gm: torch.fx.GraphModule, example_inputs) -> list[str]:
    """Names of inputs that are SymInts or tensors with symbolic sizes/strides."""
    from torch.fx.experimental.symbolic_shapes import is_concrete_int

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    bad = []
    for node, x in zip(placeholders, example_inputs):
        if isinstance(x, torch.SymInt | torch.SymFloat | torch.SymBool):
            bad.append(f"{_input_name(node)} (a symbolic scalar)")
        elif isinstance(x, torch.Tensor):
            if not all(is_concrete_int(s) for s in (*x.shape, *x.stride())):
                bad.append(f"{_input_name(node)} shape {tuple(x.shape)}")
    return bad


def _reject_dynamic(gm, example_inputs) -> None:
    import torch._dynamo

    bad = _symbolic_inputs(gm, example_inputs)
    if not bad:
        return
    explicit = not torch._dynamo.config.assume_static_by_default
    cause = ("torch.compile(..., dynamic=True) was requested" if explicit else
             "the graph has symbolic shapes (torch._dynamo.mark_dynamic, or "
             "torch._dynamo.config.automatic_dynamic_shapes was re-enabled)")
    raise DynamicShapeError(
        f"backend 'neuron' compiles static shapes only (as TorchNeuron on Trainium), but {cause}: "
        f"symbolic inputs {', '.join(bad[:6])}. Use torch.compile(..., dynamic=False) (or leave "
        "dynamic unset) and pad inputs to a few fixed sizes with "
        "torch_neuronx.compile.pad_to_multiple / pad_batch_to_bucket: each distinct shape "
        "compiles once and is cached."
    )


# --- graph identity for metrics -------------------------------------------------------------

def _current_function() -> str:
    """``"'name' (file:line)"`` of the function Dynamo is compiling (its root code object)."""
    tc = torch._guards.TracingContext.try_get()
    codes = getattr(tc, "traced_code", None) if tc is not None else None
    if codes:
        code = codes[0]
        return f"'{code.co_name}' ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
    return "'<graph>'"


def _recompile_reason() -> str | None:
    """Dynamo's first failed guard for the compile in progress (read from Dynamo's metrics
    context, where ``convert_frame`` stores it; None if unavailable)."""
    try:
        from torch._dynamo.utils import get_metrics_context

        return get_metrics_context()._metrics.get("recompile_reason")
    except Exception:
        return None


def _signature(gm, example_inputs) -> list[tuple[str, tuple[int, ...]]]:
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    sig = []
    for node, x in zip(placeholders, example_inputs):
        if isinstance(x, torch.Tensor):
            sig.append((_input_name(node), tuple(int(s) for s in x.shape)))
    return sig


# --- the cache key --------------------------------------------------------------------------

def _graph_text(gm: torch.fx.GraphModule) -> str:
    """The graph's Python code (and its subgraphs'), without comments: stack-trace comments
    name files and lines that do not change what the graph computes."""
    parts = []
    for name, mod in gm.named_modules():
        if isinstance(mod, torch.fx.GraphModule):
            code = "\n".join(line for line in mod.code.splitlines()
                             if line.strip() and not line.strip().startswith("#"))
            parts.append(f"## {name or '<root>'}\n{code}")
    return "\n".join(parts)


def _tensor_meta(x: torch.Tensor) -> list:
    return [list(x.shape), list(x.stride()), str(x.dtype), str(x.device), x.storage_offset(),
            bool(x.requires_grad)]


def _constants_meta(gm: torch.fx.GraphModule) -> dict[str, Any]:
    """Tensor attributes the graph reads (``get_attr``): metadata and a content hash, since
    their values are baked into the compiled code."""
    import hashlib

    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    out = {}
    # AOTAutograd calls the inner compiler under its FakeTensorMode; a real constant (e.g. a
    # cache's index tensor captured by Dynamo) must be read outside that mode.
    with unset_fake_temporarily():
        for node in gm.graph.nodes:
            if node.op != "get_attr":
                continue
            obj = gm
            try:
                for part in str(node.target).split("."):
                    obj = getattr(obj, part)
            except AttributeError:
                continue
            if isinstance(obj, torch.Tensor):
                digest = ""
                if obj.numel() and not obj.is_meta and not isinstance(obj, FakeTensor):
                    data = obj.detach().cpu().contiguous().reshape(-1)  # 0-d tensors cannot be viewed as bytes
                    digest = hashlib.sha256(data.view(torch.uint8).numpy().tobytes()).hexdigest()
                out[str(node.target)] = _tensor_meta(obj) + [digest]
    return out


def _input_meta(example_inputs) -> list:
    meta = []
    for x in example_inputs:
        if isinstance(x, torch.Tensor):
            meta.append(_tensor_meta(x))
        elif isinstance(x, int | float | bool):
            meta.append(repr(x))
        else:
            meta.append(type(x).__name__)
    return meta


_VERSIONS: dict[str, str] | None = None


def versions() -> dict[str, str]:
    """What a compiled graph depends on besides itself: torch, torch_neuronx, Python, the
    host's CPU capability (the C++ kernels are built for it) and the cache format."""
    global _VERSIONS
    if _VERSIONS is None:
        import torch_neuronx

        _VERSIONS = {
            "torch": torch.__version__,
            "torch_neuronx": torch_neuronx.__version__,
            "python": sys.version.split()[0],
            # the ISA level ATen dispatches to (e.g. "AVX512"): cheap, and the C++ kernels are
            # built for the same host capabilities
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "format": str(cache.FORMAT_VERSION),
        }
    return _VERSIONS


def _inductor_flags() -> str:
    import hashlib
    import json

    from torch._inductor import config as inductor_config

    blob = json.dumps(inductor_config.save_config_portable(), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def graph_cache_key(gm: torch.fx.GraphModule, example_inputs, kind: str) -> str:
    """Cache key of one ATen graph: normalized graph text + constants + input metadata + kind
    (forward/backward/inference) + Inductor flags + versions. Same on every process and rank
    for the same graph (device index included: with one process per NeuronCore every rank
    sees its core as ``neuron:0``)."""
    return cache.cache_key({
        "graph": _graph_text(gm),
        "constants": _constants_meta(gm),
        "inputs": _input_meta(example_inputs),
        "kind": kind,
        "flags": _inductor_flags(),
        "versions": versions(),
    })


# --- compiling one ATen graph ---------------------------------------------------------------

def _compile_failed(what: str, graph_text: str, err: Exception, keep) -> None:
    """The fallback policy for a graph that failed to compile.

    Raises:
        NeuronCompileError: with the graph and the reason, unless eager fallback is allowed
            (``keep`` is the eager graph, TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0); then it
            warns and records the fallback, and the caller runs ``keep`` eagerly.
    """
    if keep is None:
        raise NeuronCompileError(failure_message(what, graph_text, err)) from err
    warnings.warn(f"backend 'neuron' failed to compile the {what}: {type(err).__name__}: "
                  f"{err}; running it eagerly (TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0)",
                  CompileFallbackWarning, stacklevel=3)
    metrics.record_fallback(what, f"{type(err).__name__}: {err}")


@contextlib.contextmanager
def _inductor_cache_dir():
    """Points Inductor's kernel cache at ``<neff cache>/inductor`` while we compile or load,
    so the cache folder holds everything a later process needs (no C++ recompile)."""
    if cache.cache_disabled():
        yield
        return
    target = str(cache.inductor_dir())
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = target
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old


def _serialize(compiled) -> bytes | None:
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
    except Exception:
        return None


def _graph_kwargs(kwargs: dict) -> dict:
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


def _eager_callable(gm: torch.fx.GraphModule):
    from torch._functorch._aot_autograd.utils import make_boxed_func

    return make_boxed_func(gm)


def _compile_aten_graph(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """Inductor's ``inner_compile`` for backend ``"neuron"``: one ATen graph (forward,
    backward or inference) through the cache.

    Returns an Inductor ``CompiledFxGraph`` (boxed calling convention), or under fallback
    execution an eager boxed callable of ``gm``.

    Raises:
        NeuronCompileError: code generation failed and fallback execution is disabled.
    """
    from torch._inductor import config as inductor_config

    with inductor_config.patch(INDUCTOR_PATCHES):
        return _compile_aten_graph_patched(gm, example_inputs, kwargs)


def _compile_aten_graph_patched(gm, example_inputs, kwargs):
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.output_code import CompiledFxGraphConstantsWithGm
    from torch.utils._python_dispatch import _disable_current_modes

    t0 = time.perf_counter()
    kw = _graph_kwargs(kwargs)
    kind = "backward" if kw["is_backward"] else ("inference" if kw["is_inference"] else "forward")
    key = graph_cache_key(gm, example_inputs, kind)
    aten_text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    keep = copy.deepcopy(gm) if fallback_execution_allowed() else None
    constants = CompiledFxGraphConstantsWithGm(gm)
    function = _current_function()

    def compile_now():
        with _inductor_cache_dir():
            compiled = compile_fx_inner(gm, example_inputs, **kwargs)
        return compiled, _serialize(compiled)

    def load(blob: bytes):
        graph = pickle.loads(blob)
        with _disable_current_modes(), _inductor_cache_dir():
            graph.after_deserialization(constants)
            graph.post_compile(example_inputs, constants, kw)
        return graph

    try:
        found = cache.GLOBAL_CACHE.get_or_compile(
            key, compile_now, load, header={"kind": kind, "name": function})
    except Exception as err:
        if isinstance(err, NeuronCompileError):
            raise
        _compile_failed(f"{kind} graph of {function} (cache key {key[:16]})", aten_text, err, keep)
        return _eager_callable(keep)
    finally:
        if kw["is_backward"]:  # forward/inference time is counted by the Dynamo-level backend
            metrics.record_compile_time(time.perf_counter() - t0)
    debug.dump_aten_graph(key, kind, aten_text, getattr(found.value, "source_code", None))
    return found.value


# --- the Dynamo backend ---------------------------------------------------------------------

def _is_training_graph(example_inputs) -> bool:
    """AOTAutograd's rule: a joint forward/backward graph when grad mode is on and an input
    (parameters are inputs) requires grad."""
    return torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)


def _on_graph_core(compiled, example_inputs):
    """Runs ``compiled`` with the current device set to the NeuronCore of its inputs.

    Inductor's wrapper allocates buffers with ``device='neuron'`` (the current core) and emits
    a device guard only for GPU types, so a graph whose inputs live on ``neuron:1`` would put
    its intermediates on ``neuron:0``. Graphs with no neuron input, or whose inputs are on the
    core already current, pay one C call per invocation.
    """
    from .. import _C

    indices = {x.device.index for x in example_inputs
               if isinstance(x, torch.Tensor) and x.device.type == "neuron"}
    indices.discard(None)
    if len(indices) != 1:
        return compiled
    (index,) = indices

    def run(*args):
        previous = _C._current_device()
        if previous == index:
            return compiled(*args)
        _C._set_device(index)
        try:
            return compiled(*args)
        finally:
            _C._set_device(previous)

    run._boxed_call = getattr(compiled, "_boxed_call", False)
    return run


def neuron_backend(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any):
    """Dynamo backend ``"neuron"`` (``torch.compile(model, backend="neuron")``).

    Args:
        gm: the FX graph Dynamo captured.
        example_inputs: fake tensors (static shapes) and Python scalars, one per placeholder.
        mode / options: accepted from ``torch.compile``; anything but ``mode="default"``
            warns (:class:`CompileModeWarning`) and is ignored.

    Returns:
        A callable with Dynamo's calling convention whose outputs are ``neuron`` tensors.

    Raises:
        DynamicShapeError: symbolic shapes (``dynamic=True``, ``mark_dynamic``).
        NeuronCompileError: the graph failed to compile and fallback execution is disabled
            (the default); with ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0`` the graph runs
            eagerly instead, with a :class:`CompileFallbackWarning`.
    """
    mode = kwargs.pop("mode", None)
    options = kwargs.pop("options", None)
    if mode not in (None, "default"):
        warnings.warn(f"backend 'neuron' supports only mode='default' (as TorchNeuron); "
                      f"mode={mode!r} is ignored", CompileModeWarning, stacklevel=2)
    if options:
        warnings.warn(f"backend 'neuron' takes no options; {sorted(options)} ignored",
                      CompileModeWarning, stacklevel=2)
    _reject_dynamic(gm, example_inputs)
    inductor_device.register()

    t0 = time.perf_counter()
    function = _current_function()
    compile_id = torch._guards.CompileContext.current_compile_id()
    frame_id = getattr(compile_id, "frame_id", None)
    attempt = getattr(compile_id, "frame_compile_id", None)
    metrics.record_graph(frame_id, attempt, function, _signature(gm, example_inputs),
                         _recompile_reason() if attempt else None)
    dynamo_text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    debug.dump_dynamo_graph(function.split(" ")[0].strip("'"), dynamo_text)

    from torch._inductor.compile_fx import compile_fx
    import torch._functorch.config as functorch_config

    keep = copy.deepcopy(gm) if fallback_execution_allowed() else None
    try:
        with functorch_config.patch(enable_autograd_cache=False):
            compiled = compile_fx(gm, example_inputs, inner_compile=_compile_aten_graph,
                                  config_patches=INDUCTOR_PATCHES,
                                  decompositions=decomposition_table(_is_training_graph(example_inputs)))
        return _on_graph_core(compiled, example_inputs)
    except NeuronCompileError:
        raise
    except Exception as err:
        _compile_failed(f"graph of {function}", dynamo_text, err, keep)
        return keep.forward
    finally:
        metrics.record_compile_time(time.perf_counter() - t0)


_configure_dynamo()
