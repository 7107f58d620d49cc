"""Per-op cost rules: what one ATen op asks of a logical NeuronCore.

For every op the program runs on ``neuron``, :class:`CostTable` returns an :class:`OpCost`: its class, its
FLOPs (``torch.utils.flop_counter``'s formulas, so the estimator and ``FlopCounterMode`` agree), the busy
seconds of each engine and the bytes it moves through HBM (inputs read + outputs written). The rules, in
order of precedence:

1. **no cost**: views and metadata ops (``func.is_view``, ``detach``, ``alias``, ``prim.device``...), and
   allocation without initialisation (``empty*``): memory only;
2. **Tensor Engine**: matmuls (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``_scaled_mm``), convolutions (as
   the matmul they lower to), fused attention (forward: ``QK^T`` and ``PV``; backward: five matmuls, the
   causal half skipped as flash-attention kernels do), on the tile model of :mod:`.roofline`; attention's
   exponentials on the Scalar Engine and its row statistics on the Vector Engine;
3. **Scalar Engine**: pointwise ops with a transcendental function (exp, log, tanh, sigmoid, SiLU, GELU,
   erf, rsqrt, sqrt, sin, cos, pow...) and their backward ops;
4. **Vector Engine**: other pointwise ops (``torch.Tag.pointwise``), reductions, normalisations (in
   passes over the data: layer/RMS norm 3 forward, 5 backward; softmax 2 Vector + 1 Scalar), copies and
   casts, fills, and the optimizer's ``_foreach_*`` / fused Adam ops;
5. **GpSimd**: random number generation, ``arange``, sort / top-k;
6. **DMA**: gathers and scatters (embedding, index, index_put, scatter, cat, pad...): the bytes they move
   plus the DMA fixed cost per transfer;
   FSDP2's own copy ops (``fsdp.all_gather_copy_in``, ``fsdp.chunk_cat``, ``fsdp.split_with_sizes_copy``)
   are data movement too;
7. **collectives** (``c10d.*``, ``_c10d_functional.*``) are costed by :mod:`.collectives`; **host syncs**
   (``.item()``: ``_local_scalar_dense``, ``nonzero``, ``equal``) are counted; **fp64 / complex** work is
   counted as a host fallback (NeuronCore engines have neither);
8. anything else is **uncosted**: counted by name and listed in every report, never silently costed at 0.

An op's time is ``max(slowest engine, HBM bytes / sustained bandwidth)`` (+ the DMA fixed cost); eager
ops add a launch overhead, compiled graphs fuse (:mod:`.fusion`). All ESTIMATES.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch._ops import OpOverload
from torch.utils import _pytree as pytree
from torch.utils.flop_counter import flop_registry

from .roofline import Roofline, dtype_name

__all__ = ["OpClass", "Engine", "OpCost", "CostRule", "CostTable", "ENGINES"]

aten = torch.ops.aten

OpClass = Literal["matmul", "attention", "elementwise", "reduction", "normalization", "data_movement",
                  "random", "optimizer", "collective", "nki_kernel", "compiled_graph", "host_sync", "host_fallback",
                  "memory", "view", "uncosted"]
Engine = Literal["tensor", "vector", "scalar", "gpsimd"]
ENGINES: tuple[Engine, ...] = ("tensor", "vector", "scalar", "gpsimd")


@dataclass
class OpCost:
    """What one op costs on one logical NeuronCore.

    Attributes:
        op_class: its class (see :data:`OpClass`).
        flops: FLOPs as ``torch.utils.flop_counter`` counts them (0 for ops it does not count).
        engine_s: busy seconds per engine (``"tensor"``, ``"vector"``, ``"scalar"``, ``"gpsimd"``).
        hbm_bytes: bytes read and written through HBM.
        dma_transfers: DMA transfers whose fixed cost the op pays.
        fusible: a graph compiler can fuse it with neighbouring fusible ops (no round trip through HBM).
    """

    op_class: OpClass
    flops: int = 0
    engine_s: dict = field(default_factory=dict)
    hbm_bytes: int = 0
    dma_transfers: int = 0
    fusible: bool = False


#: A cost rule: ``(func, args, kwargs, out) -> OpCost`` for one call of an op (``out`` is its result).
CostRule = Callable[[OpOverload, tuple[Any, ...], dict[str, Any], Any], OpCost]


# --- op sets ------------------------------------------------------------------------------------------------

_NO_COST = {"detach", "alias", "lift_fresh", "_unsafe_view", "view", "t", "transpose", "permute", "expand",
            "expand_as", "squeeze", "unsqueeze", "select", "slice", "split", "split_with_sizes", "unbind",
            "chunk", "narrow", "as_strided", "diagonal", "unfold", "movedim", "view_as", "unflatten",
            "real", "imag", "_reshape_alias", "reshape", "flatten", "contiguous", "set_", "resize_",
            "_has_compatible_shallow_copy_type", "is_same_size", "_assert_tensor_metadata", "sym_size",
            "sym_stride", "sym_numel", "sym_storage_offset", "_nested_tensor_size", "record_stream",
            "_assert_async", "_functional_assert_async", "_print", "dim", "size", "stride", "numel",
            "is_contiguous", "_version", "is_nonzero_", "_make_dep_token", "conj", "_conj", "_neg_view",
            "resolve_conj", "resolve_neg", "_unsafe_set_version_counter"}
_ALLOC = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted",
          "_empty_affine_quantized", "resize_as_"}
_HOST_SYNC = {"_local_scalar_dense", "nonzero", "equal", "is_nonzero", "allclose", "masked_select",
              "unique", "_unique2", "unique_consecutive", "unique_dim", "nonzero_static", "item"}
_TRANSCENDENTAL = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sigmoid", "silu", "gelu",
                   "erf", "erfc", "erfinv", "rsqrt", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan",
                   "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "pow", "softplus", "mish", "elu", "selu",
                   "celu", "logit", "hardswish", "hardsigmoid", "log_sigmoid_forward", "log_sigmoid_backward",
                   "sigmoid_backward", "tanh_backward", "silu_backward", "gelu_backward", "softplus_backward",
                   "elu_backward", "mish_backward", "logit_backward", "hardswish_backward", "float_power",
                   "xlogy", "special_xlog1py", "lgamma", "digamma", "reciprocal"}
_REDUCTION = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "var", "var_mean", "std",
              "std_mean", "norm", "linalg_vector_norm", "prod", "any", "all", "cumsum", "cumprod", "logsumexp",
              "nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward", "mse_loss",
              "mse_loss_backward", "_softmax_backward_data", "_log_softmax_backward_data", "count_nonzero",
              "aminmax", "logcumsumexp", "binary_cross_entropy", "binary_cross_entropy_with_logits"}
# normalisations: (vector passes, scalar passes) over the input
_NORMS = {"native_layer_norm": (3, 0), "native_layer_norm_backward": (5, 0), "_fused_rms_norm": (3, 0),
          "_fused_rms_norm_backward": (5, 0), "native_group_norm": (3, 0), "native_group_norm_backward": (5, 0),
          "native_batch_norm": (3, 0), "native_batch_norm_backward": (5, 0), "_native_batch_norm_legit": (3, 0),
          "_native_batch_norm_legit_no_training": (2, 0), "_softmax": (2, 1), "_log_softmax": (2, 1),
          "_safe_softmax": (2, 1)}
_COPY = {"_to_copy", "copy_", "clone", "_copy_from", "_copy_from_and_resize", "lift_fresh_copy", "fill_", "zero_",
         "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros", "new_ones", "new_full",
         "scalar_tensor", "triu", "tril", "triu_", "tril_", "masked_fill", "masked_fill_", "where", "clamp",
         "clamp_", "clamp_min", "clamp_max", "_to_dim_order_copy", "detach_copy", "alias_copy", "view_copy",
         "expand_copy", "permute_copy", "transpose_copy", "t_copy", "slice_copy", "select_copy", "_unsafe_view_copy"}
_RANDOM = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "uniform_", "normal_",
           "bernoulli", "bernoulli_", "random_", "exponential_", "randperm", "native_dropout", "multinomial",
           "arange", "linspace", "logspace", "eye", "native_dropout_backward", "cauchy_", "geometric_",
           "log_normal_"}
_SORT = {"sort", "topk", "argsort", "kthvalue", "median", "mode", "msort", "searchsorted", "bucketize", "histc"}
# data movement: how to count its HBM bytes ("out2": 2 x output + indices; "src2": 2 x the source/values
# argument + indices; "inout": inputs + outputs)
_MOVE = {"embedding": "out2", "index": "out2", "index_select": "out2", "gather": "out2", "_unsafe_index": "out2",
         "take": "out2", "index_put": "src2", "index_put_": "src2", "_index_put_impl_": "src2", "scatter": "src2",
         "scatter_": "src2", "scatter_add": "src2", "scatter_add_": "src2", "scatter_reduce": "src2",
         "scatter_reduce_": "src2", "index_add": "src2", "index_add_": "src2", "index_copy": "src2",
         "index_copy_": "src2", "index_fill": "inout", "index_fill_": "inout", "masked_scatter": "inout",
         "masked_scatter_": "inout", "embedding_dense_backward": "inout", "cat": "inout", "stack": "inout",
         "constant_pad_nd": "inout", "slice_scatter": "src2", "select_scatter": "src2", "diagonal_scatter": "src2",
         "as_strided_scatter": "src2", "roll": "inout", "flip": "inout", "repeat": "inout",
         "repeat_interleave": "inout", "narrow_copy": "inout", "unfold_copy": "inout", "split_copy": "inout",
         "split_with_sizes_copy": "inout", "_embedding_bag": "out2", "reflection_pad1d": "inout",
         "reflection_pad2d": "inout", "replication_pad2d": "inout", "upsample_nearest2d": "inout",
         "upsample_bilinear2d": "inout", "_upsample_nearest_exact2d": "inout", "col2im": "inout", "im2col": "inout",
         "pixel_shuffle": "inout", "pixel_unshuffle": "inout", "polar": "inout", "view_as_real": "inout",
         "view_as_complex": "inout", "slice_backward": "inout", "select_backward": "inout",
         "index_select_backward": "inout", "gather_backward": "inout", "diagonal_backward": "inout",
         "unfold_backward": "inout", "as_strided_copy": "inout", "embedding_backward": "inout",
         "_unsafe_masked_index": "out2", "_unsafe_masked_index_put_accumulate": "src2",
         "_unsafe_index_put": "src2"}
# prims ops that appear in compiled graphs -> rule
_PRIMS = {"convert_element_type": "_copy", "iota": "_random", "device_put": "_copy", "rng_uniform": "_random",
          "squeeze": "_view", "broadcast_in_dim": "_view", "view_of": "_view", "collapse_view": "_view",
          "split_dim": "_view", "transpose": "_view", "as_strided": "_view", "inductor_random": "_random",
          "inductor_seeds": "_random", "inductor_lookup_seed": "_random"}
_FSDP_COPIES = {"all_gather_copy_in", "chunk_cat", "split_with_sizes_copy"}
_MOVE.update(dict.fromkeys(_FSDP_COPIES, "inout"))
_ATTENTION = {"_scaled_dot_product_fused_attention_overrideable", "_scaled_dot_product_flash_attention_for_cpu",
              "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
              "_scaled_dot_product_cudnn_attention", "_flash_attention_forward", "_efficient_attention_forward"}
_ATTENTION_BWD = {n + "_backward" for n in _ATTENTION if not n.endswith("_forward")} | {
    "_flash_attention_backward", "_efficient_attention_backward"}
_MATMUL = {"mm", "addmm", "bmm", "baddbmm", "_scaled_mm", "matmul", "linear", "dot", "mv", "addmv", "addbmm",
           "_int_mm", "_weight_int8pack_mm"}
_CONV = {"convolution", "convolution_overrideable", "_convolution", "convolution_backward",
         "convolution_backward_overrideable", "_slow_conv2d_forward", "cudnn_convolution"}
_FALLBACK_DTYPES = {torch.float64, torch.complex64, torch.complex128, torch.complex32}


def _tensors(x) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(x) if isinstance(t, torch.Tensor)]


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _distinct(ts) -> list[torch.Tensor]:
    seen: set[int] = set()
    out = []
    for t in ts:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _io_bytes(args, kwargs, out) -> int:
    return sum(map(_nbytes, _distinct(_tensors((args, kwargs))))) + sum(map(_nbytes, _distinct(_tensors(out))))


def _shape(x):
    return x.shape if isinstance(x, torch.Tensor) else x


def _base_name(func) -> str:
    name = func._overloadpacket.__name__
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _tagged(func, tag) -> bool:
    if tag in func.tags:
        return True
    base = getattr(aten, _base_name(func), None)          # in-place ops carry no tags; their functional form does
    if base is None or base is func._overloadpacket:
        return False
    try:
        return any(tag in getattr(base, o).tags for o in base.overloads())
    except (AttributeError, RuntimeError):
        return False


def _arg(func, args, kwargs, name: str, default=None):
    """The value of argument ``name`` of ``func`` (positional or keyword)."""
    if name in kwargs:
        return kwargs[name]
    for i, a in enumerate(func._schema.arguments):
        if a.name == name:
            return args[i] if i < len(args) else default
    return default


class CostTable:
    """Costs ops on one logical core of ``roofline`` (rules in the module docstring).

    Args:
        roofline: engine and memory rates of the platform, LNC and fitted efficiencies.
    """

    def __init__(self, roofline: Roofline):
        self.roofline = roofline
        self._rules: dict[OpOverload, CostRule] = {}

    # --- dispatch -----------------------------------------------------------------------------------------
    def rule(self, func: OpOverload) -> CostRule:
        """The cost function of ``func`` (cached per overload)."""
        r = self._rules.get(func)
        if r is None:
            r = self._rules[func] = self._classify(func)
        return r

    def cost(self, func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> OpCost:
        """The :class:`OpCost` of one call of ``func`` (its ``args``, ``kwargs`` and result ``out``)."""
        tensors = _tensors((args, kwargs, out))
        if any(t.dtype in _FALLBACK_DTYPES for t in tensors):
            return OpCost("host_fallback", hbm_bytes=0)
        return self.rule(func)(func, args, kwargs, out)

    def _classify(self, func: OpOverload) -> CostRule:
        ns = func.namespace
        name = func._overloadpacket.__name__
        base = _base_name(func)
        if ns == "prims" and name in _PRIMS:
            return getattr(self, _PRIMS[name])              # primitives in compiled graphs' decompositions
        if ns in ("prim", "profiler") or (ns == "aten" and (name in _NO_COST or func.is_view)):
            return self._view
        if ns == "fsdp" and name in _FSDP_COPIES:
            return self._move                               # FSDP2's copies into / out of its flat buffers
        if ns != "aten":
            return self._uncosted
        if name in _ALLOC:
            return self._alloc
        if name in _HOST_SYNC:
            return self._host_sync
        if name in _ATTENTION:
            return self._attention
        if name in _ATTENTION_BWD:
            return self._attention_backward
        if name in _MATMUL or func._overloadpacket in flop_registry and name not in _CONV:
            return self._matmul
        if name in _CONV:
            return self._conv
        if name.startswith("_foreach_") or name.startswith("_fused_adam") or name.startswith("_fused_sgd"):
            return self._foreach
        if name in _NORMS:
            return self._norm
        if name in _RANDOM:
            return self._random
        if name in _SORT:
            return self._sort
        if name in _MOVE:
            return self._move
        if name in _COPY:
            return self._copy
        if name == "pow" or base == "pow":
            return self._pow
        if base in _TRANSCENDENTAL:
            return self._scalar
        if name in _REDUCTION or torch.Tag.reduction in func.tags:
            return self._reduction
        if _tagged(func, torch.Tag.pointwise) or (name.startswith("__") and name.endswith("__")):
            return self._vector                            # pointwise, and the bitwise dunder ops (__or__...)
        return self._uncosted

    # --- helpers ------------------------------------------------------------------------------------------
    def _flops(self, func, args, kwargs, out) -> int:
        formula = flop_registry.get(func._overloadpacket)
        if formula is None:
            return 0
        a, k, o = pytree.tree_map(_shape, (args, kwargs, out))
        return int(formula(*a, **k, out_val=o))

    @staticmethod
    def _main_dtype(args, kwargs, out) -> str:
        ts = _tensors(out) or _tensors((args, kwargs))
        return dtype_name(ts[0].dtype) if ts else "float32"

    @staticmethod
    def _out_elements(args, kwargs, out) -> int:
        ts = _tensors(out) or _tensors((args, kwargs))
        return max((t.numel() for t in ts), default=0)

    @staticmethod
    def _in_elements(args, kwargs) -> int:
        return max((t.numel() for t in _tensors((args, kwargs))), default=0)

    # --- rules --------------------------------------------------------------------------------------------
    def _view(self, func, args, kwargs, out) -> OpCost:
        return OpCost("view")

    def _alloc(self, func, args, kwargs, out) -> OpCost:
        return OpCost("memory")

    def _host_sync(self, func, args, kwargs, out) -> OpCost:
        return OpCost("host_sync", hbm_bytes=_io_bytes(args, kwargs, out))

    def _uncosted(self, func, args, kwargs, out) -> OpCost:
        return OpCost("uncosted")

    def _matmul(self, func, args, kwargs, out) -> OpCost:
        r = self.roofline
        name = func._overloadpacket.__name__
        mats = [t for t in _tensors((args, kwargs)) if t.dim() >= 1]
        if name in ("addmm", "baddbmm", "addmv", "addbmm"):
            mats = mats[1:3]
        a, b = mats[0], mats[1]
        dt = dtype_name(a.dtype)
        if a.dim() == 3 and b.dim() == 3:
            seconds = r.matmul_seconds(a.shape[1], a.shape[2], b.shape[2], dt, batch=a.shape[0])
        else:
            m = a.numel() // a.shape[-1] if a.dim() >= 2 else 1
            n = b.shape[-1] if b.dim() >= 2 else 1
            seconds = r.matmul_seconds(m, a.shape[-1], n, dt)
        return OpCost("matmul", self._flops(func, args, kwargs, out), {"tensor": seconds},
                      _io_bytes(args, kwargs, out))

    def _conv(self, func, args, kwargs, out) -> OpCost:
        r = self.roofline
        backward = "backward" in func._overloadpacket.__name__
        if backward:
            grad_out, x, w = args[0], args[1], args[2]
            groups = args[-2] if isinstance(args[-2], int) else 1
            out_t = grad_out
        else:
            x, w = args[0], args[1]
            groups = _arg(func, args, kwargs, "groups", 1) or 1
            out_t = out if isinstance(out, torch.Tensor) else _tensors(out)[0]
        m = out_t.shape[0] * (out_t[0, 0].numel() if out_t.dim() > 2 else 1)
        k = w[0].numel()                                   # Cin/groups x kernel elements
        n = w.shape[0] // groups
        seconds = r.matmul_seconds(m, k, n, dtype_name(x.dtype), batch=groups) * (2 if backward else 1)
        return OpCost("matmul", self._flops(func, args, kwargs, out), {"tensor": seconds},
                      _io_bytes(args, kwargs, out))

    def _attention_shapes(self, q, k, v, causal):
        b, h, sq, d = q.shape[0], q.shape[1], q.shape[-2], q.shape[-1]
        sk, dv = k.shape[-2], v.shape[-1]
        batch = b * h
        fraction = 0.5 if causal and sq == sk and sq > 1 else 1.0
        return batch, sq, sk, d, dv, fraction

    def _attention(self, func, args, kwargs, out) -> OpCost:
        r = self.roofline
        q, k, v = args[0], args[1], args[2]
        causal = bool(_arg(func, args, kwargs, "is_causal", False))
        batch, sq, sk, d, dv, f = self._attention_shapes(q, k, v, causal)
        dt = dtype_name(q.dtype)
        tensor = (r.matmul_seconds(sq, d, sk, dt, batch) + r.matmul_seconds(sq, sk, dv, dt, batch)) * f
        scores = batch * sq * sk * f
        engines = {"tensor": tensor, "scalar": r.engine_seconds("scalar", scores, dt),
                   "vector": r.engine_seconds("vector", 2 * scores, dt)}
        return OpCost("attention", self._flops(func, args, kwargs, out), engines, _io_bytes(args, kwargs, out))

    def _attention_backward(self, func, args, kwargs, out) -> OpCost:
        r = self.roofline
        q, k, v = args[1], args[2], args[3]
        causal = bool(_arg(func, args, kwargs, "is_causal", False))
        batch, sq, sk, d, dv, f = self._attention_shapes(q, k, v, causal)
        dt = dtype_name(q.dtype)
        tensor = (r.matmul_seconds(sq, d, sk, dt, batch) + r.matmul_seconds(sq, dv, sk, dt, batch)
                  + r.matmul_seconds(sk, sq, dv, dt, batch) + r.matmul_seconds(sq, sk, d, dt, batch)
                  + r.matmul_seconds(sk, sq, d, dt, batch)) * f
        scores = batch * sq * sk * f
        engines = {"tensor": tensor, "scalar": r.engine_seconds("scalar", scores, dt),
                   "vector": r.engine_seconds("vector", 3 * scores, dt)}
        return OpCost("attention", self._flops(func, args, kwargs, out), engines, _io_bytes(args, kwargs, out))

    def _elementwise(self, engine: str, passes: float, op_class: OpClass, func, args, kwargs, out,
                     elements: int | None = None) -> OpCost:
        n = self._out_elements(args, kwargs, out) if elements is None else elements
        dt = self._main_dtype(args, kwargs, out)
        return OpCost(op_class, 0, {engine: self.roofline.engine_seconds(engine, passes * n, dt)},
                      _io_bytes(args, kwargs, out), fusible=True)

    def _vector(self, func, args, kwargs, out) -> OpCost:
        return self._elementwise("vector", 1, "elementwise", func, args, kwargs, out)

    def _copy(self, func, args, kwargs, out) -> OpCost:
        return self._elementwise("vector", 1, "elementwise", func, args, kwargs, out)

    def _scalar(self, func, args, kwargs, out) -> OpCost:
        return self._elementwise("scalar", 1, "elementwise", func, args, kwargs, out)

    def _pow(self, func, args, kwargs, out) -> OpCost:
        exponent = args[1] if len(args) > 1 else kwargs.get("exponent")
        if isinstance(exponent, (int, float)) and exponent in (2, 1, 0):
            return self._vector(func, args, kwargs, out)       # x * x on the Vector Engine
        return self._scalar(func, args, kwargs, out)

    def _reduction(self, func, args, kwargs, out) -> OpCost:
        n = self._in_elements(args, kwargs)
        passes = 2 if func._overloadpacket.__name__ in ("_softmax_backward_data", "_log_softmax_backward_data",
                                                          "var", "var_mean", "std", "std_mean") else 1
        return self._elementwise("vector", passes, "reduction", func, args, kwargs, out, elements=n)

    def _norm(self, func, args, kwargs, out) -> OpCost:
        vector, scalar = _NORMS[func._overloadpacket.__name__]
        n = self._in_elements(args, kwargs)
        dt = self._main_dtype(args, kwargs, out)
        r = self.roofline
        engines = {"vector": r.engine_seconds("vector", vector * n, dt)}
        if scalar:
            engines["scalar"] = r.engine_seconds("scalar", scalar * n, dt)
        return OpCost("normalization", 0, engines, _io_bytes(args, kwargs, out), fusible=True)

    def _foreach(self, func, args, kwargs, out) -> OpCost:
        name = func._overloadpacket.__name__
        first = args[0] if args else []
        n = sum(t.numel() for t in _tensors(first))
        dt = dtype_name(_tensors(first)[0].dtype) if _tensors(first) else "float32"
        r = self.roofline
        if name.startswith("_fused_"):
            # fused Adam(W): ~10 Vector passes (moments, bias corrections, update) and one sqrt on Scalar
            engines = {"vector": r.engine_seconds("vector", 10 * n, dt), "scalar": r.engine_seconds("scalar", n, dt)}
        else:
            op = name[len("_foreach_"):].rstrip("_")
            engine = "scalar" if op in _TRANSCENDENTAL else "vector"
            engines = {engine: r.engine_seconds(engine, n, dt)}
        return OpCost("optimizer", 0, engines, _io_bytes(args, kwargs, out), fusible=True)

    def _random(self, func, args, kwargs, out) -> OpCost:
        return self._elementwise("gpsimd", 1, "random", func, args, kwargs, out)

    def _sort(self, func, args, kwargs, out) -> OpCost:
        import math

        n = self._in_elements(args, kwargs)
        passes = max(1.0, math.log2(max(n, 2))) if func._overloadpacket.__name__ in ("sort", "argsort", "msort") else 1
        cost = self._elementwise("gpsimd", passes, "data_movement", func, args, kwargs, out, elements=n)
        cost.fusible = False
        return cost

    def _move(self, func, args, kwargs, out) -> OpCost:
        how = _MOVE[func._overloadpacket.__name__]
        ins = _distinct(_tensors((args, kwargs)))
        outs = _distinct(_tensors(out))
        index_bytes = sum(_nbytes(t) for t in ins if not t.is_floating_point() and t.dtype != torch.bool)
        if how == "out2":
            nbytes = 2 * sum(map(_nbytes, outs)) + index_bytes
        elif how == "src2":
            src = _arg(func, args, kwargs, "src") if _arg(func, args, kwargs, "src") is not None else \
                _arg(func, args, kwargs, "values", _arg(func, args, kwargs, "source"))
            src_bytes = _nbytes(src) if isinstance(src, torch.Tensor) else sum(map(_nbytes, outs))
            nbytes = 2 * src_bytes + index_bytes
        else:
            nbytes = sum(map(_nbytes, ins)) + sum(map(_nbytes, outs))
        return OpCost("data_movement", 0, {}, nbytes, dma_transfers=1, fusible=True)
