"""NKI kernels as PyTorch ops on ``neuron`` tensors: ``nki_op``, ``wrap_nki`` and the kernel cache.

The TorchNeuron API (AWS "How to work with NKI kernels from torch-neuronx",
awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/how-to-work-with-nki.html)::

    from torch_neuronx import nki_op, wrap_nki

    @nki.jit
    def add_kernel(a, b): ...                     # a legacy-API NKI kernel (torch_neuronx.nki)

    @nki_op("mylib::add", mutates_args=())        # a torch.library.custom_op contract:
    def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:   # fully typed wrapper
        return wrap_nki(add_kernel)[2, 1](a, b)   # or add_kernel(a, b): same thing

    add.register_autograd(backward, setup_context=setup)       # training
    torch.ops.mylib.add(x, y); add(x, y)                       # eager; one node under torch.compile

How a call runs (eager). Tensor arguments must be ``neuron`` tensors on one device. Each becomes a
NumPy *view* of the tensor's own device bytes (``torch_neuronx._C._cpu_alias(t).numpy()``; bf16 and
fp8 are reinterpreted as ``ml_dtypes`` types, no copy). The NeuronCore simulator loads them into
its HBM model (it stores float values as fp32 internally, see :mod:`.dtypes`), runs the kernel with
all its checks, and each returned HBM tensor is written once into a freshly allocated ``neuron``
tensor (accounted to the device like any op result). Inputs annotated ``nt.mutable_tensor`` are
updated in place in the ``neuron`` tensor's own bytes.

Compilation cache. AWS compiles a kernel on the first eager call for each (input shapes, dtypes,
non-tensor argument values) and reuses it later. Here the first call per key is the "compile": the
kernel is traced and validated by the simulator and a :class:`CompiledKernel` records the output
specification, instruction count and *estimated* trn latency (cost model); later calls with the same
key reuse that record (fake-tensor shape inference answers from it without running anything, and
outputs are checked against it). There is no binary to reuse: every eager call executes the kernel
on the simulator, which is the device here.

Under ``torch.compile`` (any backend, ``"neuron"`` included) an ``nki_op`` is one graph node
(``torch.ops.<lib>.<name>.default``); its fake implementation runs the typed wrapper on fake tensors,
where each kernel call answers from the cache or, on a miss, simulates the kernel once on zero
placeholder arrays of the same shapes to learn its outputs; ``op.register_fake`` overrides it.
Backends find every registered op in :data:`NKI_OPS`.

Estimates: while ``torch_neuronx.estimate`` records, every launch is reported to it with this cost model's
estimated latency and engine busy times on the estimate's platform (one extra simulation on zero
placeholders when the kernel ran on another platform, cached per signature and platform).

Errors: ``RuntimeError`` for CPU or mixed-device tensor arguments (NKI kernels run on NeuronCores);
``TypeError`` for dtypes NeuronCores lack (float64, int64, complex: convert first);
:class:`SymbolicShapeError` when traced with symbolic shapes (``dynamic=True``, ``torch.export``
with ``dynamic_shapes``; kernels are compiled for static shapes); kernel rule
violations raise the simulator's ``NKIError`` subclasses (``err_...`` names, see :mod:`.errors`).

Autograd. A kernel has no gradient formula of its own: an ``nki_op`` gets one with
``register_autograd`` (without it, PyTorch's "no autograd formula was registered" error at backward).
A kernel called directly on tensors (``kernel(x)``, as the Hugging Face ``kernels`` Hub's NKI layers do)
with grad mode on and an input that requires grad returns outputs that stay in the autograd graph
and whose backward raises ``RuntimeError`` naming the kernel and the fixes (``nki_op`` +
``register_autograd``, ``torch.no_grad()``, or ``has_backward = False`` on a ``kernels`` layer so that
``kernelize(mode=Mode.TRAINING)`` keeps PyTorch's forward): the gradient is never silently cut.
"""
from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import torch
from torch.utils import _pytree as pytree

from .. import _C
from ..estimate import active as _estimate
from . import dtypes
from .benchmark import BenchmarkResult
from .launch import Kernel, register_framework_adapter
from .simulator import run_kernel

__all__ = ["nki_op", "wrap_nki", "CompiledKernel", "NkiOpInfo", "NKI_OPS", "kernel_cache",
           "clear_kernel_cache", "tensor_to_numpy"]

# torch dtype -> (NumPy/ml_dtypes dtype, integer torch dtype of the same width used to reinterpret
# the bytes when torch's .numpy() does not support the type; None = .numpy() works directly).
_DTYPES: dict = {
    torch.float32: (np.dtype(np.float32), None),
    torch.float16: (np.dtype(np.float16), None),
    torch.bfloat16: (np.dtype(ml_dtypes.bfloat16), torch.int16),
    torch.float8_e4m3fn: (np.dtype(ml_dtypes.float8_e4m3fn), torch.uint8),
    torch.float8_e5m2: (np.dtype(ml_dtypes.float8_e5m2), torch.uint8),
    torch.int8: (np.dtype(np.int8), None),
    torch.int16: (np.dtype(np.int16), None),
    torch.int32: (np.dtype(np.int32), None),
    torch.uint8: (np.dtype(np.uint8), None),
    torch.uint16: (np.dtype(np.uint16), None),     # nl.uint16 / nl.uint32 (MX x4 data arrives packed in uint32)
    torch.uint32: (np.dtype(np.uint32), None),
    torch.bool: (np.dtype(np.bool_), None),
}
_NP_TO_TORCH = {np_dt: t for t, (np_dt, _) in _DTYPES.items()}
_NP_TO_TORCH[np.dtype(getattr(ml_dtypes, "float8_e4m3", ml_dtypes.float8_e4m3fn))] = torch.float8_e4m3fn


def _np_dtype(t_dtype: torch.dtype, what: str) -> np.dtype:
    if t_dtype not in _DTYPES:
        raise TypeError(f"{what}: {t_dtype} is not supported by NKI kernels (NeuronCores have no "
                        "float64, int64 or complex arithmetic; supported: float32, bfloat16, float16, "
                        "float8_e4m3fn, float8_e5m2, int8/16/32, uint8/16/32, bool). Convert it first, "
                        "e.g. t.to(torch.int32) or t.to(torch.float32).")
    return _DTYPES[t_dtype][0]


def _torch_dtype(np_dtype) -> torch.dtype:
    np_dtype = np.dtype(np_dtype)
    if np_dtype not in _NP_TO_TORCH:
        raise TypeError(f"kernel output dtype {np_dtype} has no torch equivalent")
    return _NP_TO_TORCH[np_dtype]


def tensor_to_numpy(t: torch.Tensor) -> np.ndarray:
    """Zero-copy NumPy view of a ``neuron`` tensor's device bytes (same shape and strides).

    bf16 / fp8 tensors are viewed through an integer type of the same width and reinterpreted as
    ``ml_dtypes.bfloat16`` / ``float8_e4m3fn`` / ``float8_e5m2``. Writing to the array writes the
    tensor. Raises ``RuntimeError`` for non-``neuron`` tensors and ``TypeError`` for unsupported dtypes.
    """
    if t.device.type != "neuron":
        raise RuntimeError(f"NKI kernels run on neuron tensors; got a tensor on {t.device}. Move it "
                           "with .to('neuron').")
    np_dt = _np_dtype(t.dtype, "kernel argument")
    alias = _C._cpu_alias(t.detach())
    as_int = _DTYPES[t.dtype][1]
    if as_int is not None:
        return alias.view(as_int).numpy().view(np_dt)
    return alias.numpy()


def _numpy_to_new_tensor(arr: np.ndarray, device: torch.device) -> torch.Tensor:
    """A new ``neuron`` tensor on ``device`` holding ``arr`` (one copy into device memory)."""
    out = torch.empty(arr.shape, dtype=_torch_dtype(arr.dtype), device=device)
    if arr.size:
        np.copyto(tensor_to_numpy(out), arr, casting="no")
    return out


# ---------------------------------------------------------------------------------------------
# kernel cache
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass
class CompiledKernel:
    """What the first call of a kernel for one key established (the "compiled kernel").

    Attributes:
        key: (kernel function, grid, platform, argument signature); tensors enter as
            (shape, torch dtype), other arguments by value.
        name: kernel function name.
        outputs: flattened output specs, each ``("tensor", shape, torch dtype)``,
            ``("input", position)`` for a returned ``nt.mutable_tensor`` input, or ``("value", v)``.
        instructions: simulator instructions executed by the first run (0 if never run for real).
        estimated_latency_us: cost-model ESTIMATE of one launch on the platform (microseconds),
            ``None`` when the entry came from shape inference only.
        compile_seconds: host time of the first (tracing + validating) run.
        calls: eager executions that reused this entry after the first.
    """

    key: tuple
    name: str
    outputs: list
    instructions: int = 0
    estimated_latency_us: float | None = None
    compile_seconds: float = 0.0
    calls: int = 0


_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def kernel_cache() -> list:
    """Snapshot of the cache: one :class:`CompiledKernel` per (kernel, shapes, dtypes, constants)."""
    with _CACHE_LOCK:
        return list(_CACHE.values())


def clear_kernel_cache() -> None:
    """Forget every compiled kernel (the next call per key compiles again)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _is_tensor(x) -> bool:
    return isinstance(x, torch.Tensor)


def _is_fake(t: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import is_fake
    return t.device.type == "meta" or is_fake(t)


def _signature(x):
    if _is_tensor(x):
        return ("T", tuple(x.shape), x.dtype)
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_signature(v) for v in x))
    try:
        hash(x)
        return ("C", type(x).__name__, x)
    except TypeError:
        return ("C", type(x).__name__, repr(x))


def _cache_key(kernel: Kernel, args, kwargs) -> tuple:
    return (kernel.fn, kernel.grid, kernel.platform,
            tuple(_signature(a) for a in args),
            tuple(sorted((k, _signature(v)) for k, v in kwargs.items())))


def _output_specs(flat_out, np_inputs) -> list:
    specs: list[tuple[Any, ...]] = []
    ids = {id(a): i for i, a in enumerate(np_inputs)}
    for o in flat_out:
        if isinstance(o, np.ndarray) and id(o) in ids:
            specs.append(("input", ids[id(o)]))
        elif isinstance(o, np.ndarray):
            specs.append(("tensor", tuple(o.shape), _torch_dtype(o.dtype)))
        else:
            specs.append(("value", o))
    return specs


# ---------------------------------------------------------------------------------------------
# the torch adapter: an nki.jit kernel called with torch tensors
# ---------------------------------------------------------------------------------------------
def _tensors_in(args, kwargs) -> list:
    """The tensors among the arguments (nested in lists, tuples and dicts), in argument order."""
    return [x for x in pytree.tree_leaves((list(args), list(kwargs.values()))) if _is_tensor(x)]


def _map_tensors(x, fn):
    return pytree.tree_map_only(torch.Tensor, fn, x)


def _run_with_torch(kernel: Kernel, args, kwargs):
    """Adapter registered with :func:`.launch.register_framework_adapter`."""
    tensors = _tensors_in(args, kwargs)
    if not tensors:
        return NotImplemented
    if any(_is_fake(t) for t in tensors):
        _reject_symbolic(kernel, args, kwargs, tensors)
        return _infer_outputs(kernel, args, kwargs, tensors)
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise RuntimeError(f"Expected all tensors of NKI kernel '{kernel.__name__}' to be on the same "
                           f"device, but found {sorted(map(str, devices))}")
    device = tensors[0].device
    if device.type != "neuron":
        raise RuntimeError(f"NKI kernel '{kernel.__name__}' was called with tensors on {device}: NKI "
                           "kernels run on neuron tensors. Move the inputs with .to('neuron').")

    flat_inputs: list = []

    def to_np(t):
        arr = tensor_to_numpy(t)
        flat_inputs.append((t, arr))
        return arr
    np_args = [_map_tensors(a, to_np) for a in args]
    np_kwargs = {k: _map_tensors(v, to_np) for k, v in kwargs.items()}
    key = _cache_key(kernel, args, kwargs)
    with _CACHE_LOCK:
        entry = _CACHE.get(key)
    t0 = time.perf_counter()
    out = kernel.run(np_args, np_kwargs, keep=dtypes.get_keep_fp32(False))   # the hardware rounds
    sim = kernel.last_run
    assert sim is not None, "a kernel that ran has a last_run"
    flat = pytree.tree_leaves(out)
    specs = _output_specs(flat, [a for _, a in flat_inputs])
    if entry is None or entry.instructions == 0:
        entry = CompiledKernel(key=key, name=kernel.__name__, outputs=specs,
                               instructions=sim.instructions,
                               estimated_latency_us=BenchmarkResult(sim, kernel.__name__).latency_us,
                               compile_seconds=time.perf_counter() - t0)
        with _CACHE_LOCK:
            _CACHE[key] = entry
    else:
        if specs != entry.outputs:
            raise RuntimeError(f"NKI kernel '{kernel.__name__}' returned {specs} but its compiled "
                               f"version for the same inputs returned {entry.outputs}")
        entry.calls += 1
    by_id = {id(a): t for t, a in flat_inputs}

    def conv(o):
        if isinstance(o, np.ndarray):
            if id(o) in by_id:                    # a returned nt.mutable_tensor input
                return by_id[id(o)]
            return _numpy_to_new_tensor(o, device)
        return o
    result = pytree.tree_map(conv, out)
    if _estimate.current is not None:
        _report_to_estimate(kernel, args, kwargs, result, BenchmarkResult(sim, kernel.__name__))
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        result = _without_backward(kernel.__name__, result, tensors, by_id)
    return result


class _NoBackward(torch.autograd.Function):
    """Puts the fresh outputs of a direct kernel call in the autograd graph of its inputs, with a
    backward that raises: the gradient is never silently cut at the kernel."""

    @staticmethod
    def forward(ctx, name: str, outputs: tuple, *grad_inputs: torch.Tensor):
        ctx.kernel_name = name
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(
            f"Trying to backward through NKI kernel '{ctx.kernel_name}', which was called directly on tensors "
            "that require grad: an NKI kernel has no autograd formula. Wrap the call in an nki_op and add one "
            "with register_autograd(...), or call the kernel under torch.no_grad(). A Hugging Face kernels layer "
            "whose kernel has no backward must set has_backward = False, so that kernelize keeps the layer's "
            "PyTorch forward in Mode.TRAINING.")


def _without_backward(name: str, result, inputs: list, by_id: dict):
    """``result`` with each fresh floating-point output tensor replaced by one whose ``grad_fn``
    raises on backward (:class:`_NoBackward`). Called for a direct (non-``nki_op``) kernel call with
    grad mode on and an input that requires grad; inside an ``nki_op`` grad mode is off (the custom
    op's own autograd formula, or PyTorch's "no autograd formula" error, applies). Outputs that are
    the caller's own tensors (returned ``nt.mutable_tensor`` inputs) are left as they are."""
    returned_inputs = {id(t) for t in by_id.values()}
    leaves, spec = pytree.tree_flatten(result)
    fresh = [i for i, o in enumerate(leaves) if isinstance(o, torch.Tensor) and id(o) not in returned_inputs
             and (o.is_floating_point() or o.is_complex())]
    if not fresh:
        return result
    wrapped = _NoBackward.apply(name, tuple(leaves[i] for i in fresh),
                                *[t for t in inputs if t.requires_grad])
    for i, o in zip(fresh, wrapped, strict=True):
        leaves[i] = o
    return pytree.tree_unflatten(leaves, spec)


class SymbolicShapeError(RuntimeError):
    """An NKI kernel was traced with symbolic sizes (``torch.compile(dynamic=True)``,
    ``torch.export`` with ``dynamic_shapes``, ``opcheck``'s ``test_aot_dispatch_dynamic``): NKI
    kernels are compiled for static shapes."""


def _is_symbolic(x) -> bool:
    return isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool))


def _reject_symbolic(kernel: Kernel, args, kwargs, tensors) -> None:
    """Raises :class:`SymbolicShapeError` naming the symbolic sizes, grid or arguments of a launch
    traced with symbolic shapes, and the ways to keep them static."""
    found = [f"tensor argument {i} of shape {tuple(t.shape)}" for i, t in enumerate(tensors)
             if any(_is_symbolic(d) for d in (*t.shape, *t.stride()))]
    if any(_is_symbolic(g) for g in kernel.grid):
        found.append(f"launch grid {list(kernel.grid)}")
    found += [f"argument {v}" for v in pytree.tree_leaves((list(args), list(kwargs.values())))
              if _is_symbolic(v)]
    if found:
        raise SymbolicShapeError(
            f"NKI kernel '{kernel.__name__}' was traced with symbolic shapes ({'; '.join(found)}): NKI "
            "kernels are compiled for static shapes. Keep these dimensions static: "
            "torch.compile(..., dynamic=False) (backend 'neuron' compiles static shapes) and no "
            "torch._dynamo.mark_dynamic on them; in torch.export, no Dim for them in dynamic_shapes; "
            "for torch.library.opcheck, leave 'test_aot_dispatch_dynamic' out of test_utils. For "
            "varying sizes, pad to a few sizes (torch_neuronx.pad_to_multiple / bucket_size).")


def _placeholder(t: torch.Tensor) -> np.ndarray:
    return np.zeros(tuple(t.shape), dtype=_np_dtype(t.dtype, "kernel argument"))


def _infer_outputs(kernel: Kernel, args, kwargs, tensors):
    """Fake/meta tensors: the outputs' shapes and dtypes from the cache, or from one simulation on
    zero placeholders of the same shapes (then cached, so the eager call is not a miss for shapes
    but still records its instruction count and estimate)."""
    key = _cache_key(kernel, args, kwargs)
    with _CACHE_LOCK:
        entry = _CACHE.get(key)
    flat_inputs: list = []
    if entry is None:
        def to_np(t):
            arr = _placeholder(t)
            flat_inputs.append((t, arr))
            return arr
        np_args = [_map_tensors(a, to_np) for a in args]
        np_kwargs = {k: _map_tensors(v, to_np) for k, v in kwargs.items()}
        out = kernel.run(np_args, np_kwargs, keep=dtypes.get_keep_fp32(False))
        if _estimate.current is not None and kernel.last_run is not None:
            # the one simulation also prices the launch when it ran on the estimate's platform
            _remember_cost(kernel, args, kwargs, BenchmarkResult(kernel.last_run, kernel.__name__))
        specs = _output_specs(pytree.tree_leaves(out), [a for _, a in flat_inputs])
        entry = CompiledKernel(key=key, name=kernel.__name__, outputs=specs)
        with _CACHE_LOCK:
            _CACHE.setdefault(key, entry)
        structure = out
    else:
        _map_tensors(list(args) + list(kwargs.values()), lambda t: flat_inputs.append((t, None)))
        structure = None
    device = tensors[0].device
    made = []
    for spec in entry.outputs:
        if spec[0] == "tensor":
            made.append(torch.empty(spec[1], dtype=spec[2], device=device))
        elif spec[0] == "input":
            made.append(flat_inputs[spec[1]][0])
        else:
            made.append(spec[1])
    if structure is None:
        result = made[0] if len(made) == 1 else tuple(made)
    else:
        it = iter(made)
        result = pytree.tree_map(lambda o: next(it), structure)
    if _estimate.current is not None:
        _report_to_estimate(kernel, args, kwargs, result)
    return result


# ---------------------------------------------------------------------------------------------
# torch_neuronx.estimate: NKI kernels are costed by this cost model
# ---------------------------------------------------------------------------------------------
_ESTIMATES: dict = {}          # (cache key, platform name) -> BenchmarkResult


def _remember_cost(kernel: Kernel, args, kwargs, result: BenchmarkResult) -> None:
    with _CACHE_LOCK:
        _ESTIMATES[(_cache_key(kernel, args, kwargs), result.platform)] = result


def _report_to_estimate(kernel: Kernel, args, kwargs, outputs, ran: BenchmarkResult | None = None) -> None:
    """Reports one launch of ``kernel`` to the recording ``torch_neuronx.estimate``, costed by the NKI cost
    model on the estimate's platform: the run's own simulation when it ran there, else one simulation on
    zero placeholders of the same shapes (cached per signature and platform)."""
    session = _estimate.current
    platform = session.platform.name
    key = (_cache_key(kernel, args, kwargs), platform)
    if ran is not None and ran.platform == platform:
        _remember_cost(kernel, args, kwargs, ran)
    with _CACHE_LOCK:
        result = _ESTIMATES.get(key)
    if result is None:
        np_args = [_map_tensors(a, _placeholder) for a in args]
        np_kwargs = {k: _map_tensors(v, _placeholder) for k, v in kwargs.items()}
        _, sim = run_kernel(kernel.fn, np_args, np_kwargs, kernel.grid, session.platform,
                            frontend=kernel.frontend, lnc=kernel.lnc(session.platform))
        result = BenchmarkResult(sim, kernel.__name__)
        _remember_cost(kernel, args, kwargs, result)
    busy = {engine: e["busy_us"] * 1e-6 for engine, e in result.engines.items()}
    session.record_nki_kernel(kernel.__name__, platform, result.latency_s, busy, result.flops, result.dma_bytes,
                              _tensors_in(args, kwargs), outputs)


register_framework_adapter(_run_with_torch)


def wrap_nki(kernel: Any) -> Kernel:
    """``torch_neuronx.wrap_nki(kernel)``: the kernel as a callable on torch tensors.

    ``kernel``: an ``nki.jit`` kernel or a plain kernel function. ``wrap_nki(k)[g0, g1](*tensors)``
    launches an SPMD grid. Calling an ``nki.jit`` kernel with torch tensors directly does the same;
    ``wrap_nki`` exists for source compatibility with AWS's torch-neuronx.
    """
    return kernel if isinstance(kernel, Kernel) else Kernel(kernel)


# ---------------------------------------------------------------------------------------------
# nki_op
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class NkiOpInfo:
    """A registered ``nki_op``: qualified name, the typed wrapper and the mutated argument names."""

    qualname: str
    wrapper: Callable
    mutates_args: tuple


NKI_OPS: dict = {}
"""qualname ("lib::name") -> :class:`NkiOpInfo` for every op made by :func:`nki_op` (for backends)."""


def _unalias(result, inputs: list):
    """custom_op outputs may not alias inputs: a returned input (an in-place kernel returning its
    mutated ``nt.mutable_tensor``) is returned as a copy; the input itself was updated in place."""
    in_ptrs = {(t.untyped_storage().data_ptr(), t.device) for t in inputs if _is_tensor(t)
               and not _is_fake(t) and t.untyped_storage().data_ptr()}
    in_ids = {id(t) for t in inputs}

    def fix(o):
        if not _is_tensor(o):
            return o
        if id(o) in in_ids or (not _is_fake(o) and o.untyped_storage().data_ptr()
                               and (o.untyped_storage().data_ptr(), o.device) in in_ptrs):
            return o.clone()
        return o
    if isinstance(result, (tuple, list)):
        return type(result)(fix(o) for o in result)
    return fix(result)


def nki_op(name: str, fn: Callable | None = None, /, *, mutates_args: Iterable[str] | str = (),
           device_types: str | Sequence[str] | None = None, schema: str | None = None) -> Any:
    """Decorator: make a typed wrapper that calls NKI kernels a PyTorch custom op.

    Args:
        name: "namespace::opname" (``torch.ops.namespace.opname``), as for ``torch.library.custom_op``.
        fn: the wrapper (when not used as a decorator). Its parameters and return need type hints
            (``torch.Tensor``, ``float``, ``int``, ``bool``, ``str``, ``Optional[...]``,
            ``tuple[torch.Tensor, ...]``); it calls one or more NKI kernels with its tensor arguments.
        mutates_args: names of tensor arguments the op writes in place (their kernel parameters are
            annotated ``nt.mutable_tensor``); ``"unknown"`` is accepted as in ``custom_op``.
        device_types: passed to ``custom_op`` (default: every device; CPU tensors then get a clear
            error from the kernel call, since NKI kernels run on ``neuron`` tensors).
        schema: explicit schema string instead of inference from the type hints.

    Returns:
        the ``torch.library.CustomOpDef``: call it like the wrapper; ``.register_autograd(backward,
        setup_context=...)`` adds training support; ``.register_fake`` replaces the default fake
        implementation (which runs the wrapper on fake tensors, see the module docstring).

    Raises whatever ``torch.library.custom_op`` raises for a bad name or untyped wrapper.
    """
    mut = (mutates_args,) if isinstance(mutates_args, str) and mutates_args != "unknown" else mutates_args

    def register(wrapper: Callable):
        @functools.wraps(wrapper)
        def impl(*args, **kwargs):
            return _unalias(wrapper(*args, **kwargs), _tensors_in(args, kwargs))

        @functools.wraps(wrapper)
        def fake(*args, **kwargs):
            return _unalias(wrapper(*args, **kwargs), _tensors_in(args, kwargs))

        op = torch.library.custom_op(name, mutates_args=mut, device_types=device_types,
                                     schema=schema)(impl)
        op.register_fake(fake)
        NKI_OPS[name] = NkiOpInfo(name, wrapper, tuple(mut) if mut != "unknown" else ("unknown",))
        return op

    if fn is not None:
        return register(fn)
    return register
