"""``nki.language`` (import as ``nl``): the legacy ``neuronxcc.nki.language`` API.

Calls return new tiles (SBUF by default; PSUM for ``matmul`` / ``transpose``), built on the
destination-passing instruction layer :mod:`.instructions`. Signatures follow AWS's
``nki.language`` API pages (Neuron SDK 2.2x). Tiles are ``(P, F...)`` with P <= 128 on axis 0.

Importing this module also installs the meaning of Python operators on tiles (``a + b`` is
``nl.add(a, b)``...) into :mod:`.tile`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes, instructions
from .context import active, current
from .dtypes import (bfloat16, bool_, float8_e4m3, float8_e5m2, float16, float32, int8, int16, int32,
                     tfloat32, uint8, uint16, uint32)
from .indexing import IndexExpr, Mask, arange, ds, mgrid  # noqa: F401  (re-exported)
from .instructions import fresh_result
from .memory import ON_CHIP, hbm, private_hbm, psum, sbuf, shared_hbm
from .ops import binary, unary
from .tile import broadcast_shape, install_operators, is_tile, par_dim

__all__ = [
    # dtypes and buffers
    "float32", "tfloat32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2", "int8", "int16",
    "int32", "uint8", "uint16", "uint32", "bool_", "sbuf", "psum", "hbm", "private_hbm", "shared_hbm",
    # creation, indexing, loops, SPMD
    "ndarray", "zeros", "ones", "full", "zeros_like", "empty_like", "arange", "mgrid", "ds",
    "par_dim", "affine_range", "sequential_range", "static_range", "tile_size", "program_id",
    "num_programs", "program_ndim", "nc", "static_cast",
    # memory
    "load", "store", "copy", "broadcast_to", "load_transpose2d",
    # math
    "matmul", "transpose", "softmax", "where", "device_print", "sum", "max", "min", "mean", "prod",
]


class tile_size:
    """Hardware tile limits (AWS ``nki.language.tile_size``)."""
    pmax = 128                  #: max partitions of an SBUF/PSUM tile
    psum_fmax = 512             #: max free size of a PSUM tile (one 2 KiB bank of fp32)
    gemm_stationary_fmax = 128  #: max free size of the matmul stationary (left) tile
    gemm_moving_fmax = 512      #: max free size of the matmul moving (right) tile
    bn_stats_fmax = 512         #: max free size of a bn_stats input
    bn_stats_dim = 6            #: elements per partition of a bn_stats result
    bn_aggr_dim = 2             #: elements per partition of a bn_aggr result (mean, var)
    psum_num_banks = 8          #: PSUM banks per partition


# ---- creation --------------------------------------------------------------------------------------
def _shape(shape):
    return tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)


def ndarray(shape, dtype, *, buffer=None, name="", **kwargs):
    """A new tensor of ``shape``/``dtype`` in ``buffer`` (default SBUF), filled with poison
    (NaN for floats, 4 for integers): memory is not initialised on a NeuronCore."""
    return current().new_tensor(_shape(shape), dtype, buffer, name)


def full(shape, fill_value, dtype, *, buffer=None, name="", **kwargs):
    """A new tensor filled with ``fill_value`` (an SBUF/PSUM fill is a memset instruction)."""
    sim = current()
    t = sim.new_tensor(_shape(shape), dtype, buffer, name)
    if t.buffer.kind in ON_CHIP:
        for blk in np.ndindex(*t.shape[:t.pdim]):   # one memset per block (none when pdim == 0)
            instructions.memset(t[blk] if blk else t, fill_value)
    else:
        t.data[...] = dtypes.round_to(np.full(t.shape, fill_value, dtype=np.float64), t.dtype)
        t.root.written = True
    return t


def zeros(shape, dtype, *, buffer=None, name="", **kwargs):
    """``full(shape, 0, dtype)``."""
    return full(shape, 0, dtype, buffer=buffer, name=name)


def ones(shape, dtype, *, buffer=None, name="", **kwargs):
    """``full(shape, 1, dtype)``."""
    return full(shape, 1, dtype, buffer=buffer, name=name)


def zeros_like(a, dtype=None, *, buffer=None, name="", **kwargs):
    """Zeros with ``a``'s shape (and dtype unless given)."""
    return zeros(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def empty_like(a, dtype=None, *, buffer=None, name="", **kwargs):
    """Uninitialised (poisoned) tensor with ``a``'s shape."""
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def static_cast(array, dtype):
    """Host helper: a NumPy array converted to an NKI dtype (e.g. bf16 inputs for a kernel)."""
    return np.asarray(array).astype(dtypes.as_dtype(dtype))


# ---- loops and SPMD --------------------------------------------------------------------------------
def affine_range(*args, **kwargs):
    """Loop whose iterations are independent: writing the same location in two iterations raises
    ``err_unexpected_output_dependencies`` (PSUM ``+=`` accumulation is allowed)."""
    sim = active()
    return sim.loop("affine", *args) if sim else iter(range(*args))


def sequential_range(*args, **kwargs):
    """Loop with loop-carried dependencies allowed (iterations run in order)."""
    sim = active()
    return sim.loop("sequential", *args) if sim else iter(range(*args))


def static_range(*args, **kwargs):
    """Fully unrolled loop (same semantics as sequential_range in the simulator)."""
    sim = active()
    return sim.loop("static", *args) if sim else iter(range(*args))


def program_id(axis):
    """Index of this program instance along launch-grid ``axis`` (``kernel[g0, g1](...)``)."""
    return current().program_id(int(axis))


def num_programs(axes=None):
    """Size of the launch grid along ``axes`` (all axes multiplied when None)."""
    return current().num_programs(axes)


def program_ndim():
    """Rank of the launch grid (0 when launched without a grid)."""
    return len(current().grid)


class nc(int):
    """``kernel[nl.nc(2)]``: a launch-grid axis spread over NeuronCores. The simulator models one
    core, so the instances run one after the other on it."""


# ---- memory ----------------------------------------------------------------------------------------
def load(src, *, mask=None, dtype=None, **kwargs):
    """HBM -> new SBUF tile of ``src``'s (view) shape. ``dtype`` converts on the way."""
    dst = fresh_result(src.shape, dtype or src.dtype, sbuf, mask)
    instructions.load(dst, src, mask)
    return dst


def store(dst, value, *, mask=None, **kwargs):
    """SBUF tile (or scalar) -> HBM ``dst``; PSUM values raise ``err_unsupported_memory``."""
    instructions.store(dst, value, mask)


def load_transpose2d(src, *, mask=None, dtype=None, **kwargs):
    """HBM [A, B] -> new SBUF tile [B, A]."""
    dst = fresh_result((src.shape[1], src.shape[0]), dtype or src.dtype, sbuf, mask)
    instructions.load_transpose2d(dst, src, mask)
    return dst


def copy(src, *, mask=None, dtype=None, **kwargs):
    """New SBUF tile copied from ``src`` (SBUF or PSUM), e.g. PSUM matmul result -> SBUF."""
    dst = fresh_result(src.shape, dtype or src.dtype, sbuf, mask)
    instructions.tensor_copy(dst, src, mask=mask)
    return dst


def broadcast_to(src, shape, **kwargs):
    """New SBUF tile of ``shape``: size-1 partition / free dims of ``src`` replicated."""
    shape = _shape(shape)
    dst = fresh_result(shape, src.dtype, sbuf)
    instructions.tensor_copy(dst, src, allow_partition_broadcast=True)
    return dst


# ---- element-wise math -----------------------------------------------------------------------------
_SCALAR_ENGINE = {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_apprx_tanh",
                  "silu", "erf", "softplus", "sin", "cos", "square", "reciprocal", "mish", "copy"}


def _unary(name):
    def fn(x, *, dtype=None, mask=None, **kwargs):
        if not is_tile(x):
            return float(unary(name)(np.float32(x)))
        dst = fresh_result(x.shape, dtype or x.dtype, sbuf, mask)
        eng = "scalar" if name in _SCALAR_ENGINE else "vector"
        instructions.activation(dst, name, x, mask=mask, engine=eng)
        return dst
    fn.__name__ = name
    fn._nki_op_name = name  # type: ignore[attr-defined]  # a function attribute (read by ops.op_name)
    fn.__doc__ = (f"Element-wise ``{name}`` of a tile -> new SBUF tile (float32 math, rounded to "
                  f"``dtype``, default the input's). Engine: "
                  f"{'Scalar' if name in _SCALAR_ENGINE else 'Vector'}; cost max(MIN_II, N) cycles.")
    return fn


def _binary(name):
    def fn(x, y, *, dtype=None, mask=None, **kwargs):
        if not is_tile(x) and not is_tile(y):
            return binary(name)(np.float32(x), np.float32(y)).item()
        if is_tile(x) and is_tile(y):
            shape = broadcast_shape(x, y)
            dst = fresh_result(shape, dtype or dtypes.promote(x.dtype, y.dtype), sbuf, mask)
            instructions.tensor_tensor(dst, x, y, name, mask=mask)
            return dst
        tile, scalar, rev = (x, y, False) if is_tile(x) else (y, x, True)
        dst = fresh_result(tile.shape, dtype or tile.dtype, sbuf, mask)
        instructions.tensor_scalar(dst, tile, name, scalar, reverse0=rev, mask=mask)
        return dst
    fn.__name__ = name
    fn._nki_op_name = name  # type: ignore[attr-defined]  # a function attribute (read by ops.op_name)
    fn.__doc__ = (f"Element-wise ``{name}`` of two tiles (Vector tensor_tensor) or a tile and a scalar "
                  "(tensor_scalar) -> new SBUF tile; partitions must match, free dims broadcast.")
    return fn


if TYPE_CHECKING:
    # The element-wise functions generated into globals() below (exp, add, ...): for type checkers.
    def __getattr__(name: str) -> Callable[..., Any]: ...


for _n in ("exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "tanh", "sigmoid", "relu", "gelu",
           "gelu_apprx_tanh", "silu", "abs", "negative", "sin", "cos", "erf", "softplus", "sign",
           "floor", "ceil", "trunc", "logical_not", "mish"):
    globals()[_n] = _unary(_n)
    __all__.append(_n)
for _n in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal",
           "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
           "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"):
    globals()[_n] = _binary(_n)
    __all__.append(_n)
identity = _unary("copy")
identity.__name__ = "identity"


def where(condition, x, y, *, dtype=None, mask=None, **kwargs):
    """``x`` where ``condition`` else ``y`` (tiles or scalars) -> new SBUF tile (Vector Engine)."""
    tiles = [t for t in (condition, x, y) if is_tile(t)]
    shape = broadcast_shape(*tiles)
    dst = fresh_result(shape, dtype or dtypes.promote(*[t.dtype for t in (x, y) if is_tile(t)]), sbuf, mask)
    instructions.select(dst, condition, x, y, mask=mask)
    return dst


# ---- reductions ------------------------------------------------------------------------------------
def _reduce(opname, x, axis, dtype, mask, keepdims, negate=False):
    axes = instructions.reduce_axes(axis, len(x.shape), opname, x.describe())
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keepdims else \
        tuple(s for i, s in enumerate(x.shape) if i not in axes)
    dst = fresh_result(shape, dtype or x.dtype, sbuf, mask)
    instructions.tensor_reduce(dst, opname, x, axes, negate=negate, keepdims=keepdims, mask=mask)
    return dst


def sum(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Sum over trailing free ``axis`` (axes) -> new SBUF tile (Vector tensor_reduce)."""
    return _reduce("add", x, axis, dtype, mask, keepdims)


def max(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Maximum over trailing free ``axis`` (axes)."""
    return _reduce("maximum", x, axis, dtype, mask, keepdims)


def min(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Minimum over trailing free ``axis`` (axes)."""
    return _reduce("minimum", x, axis, dtype, mask, keepdims)


def prod(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Product over trailing free ``axis`` (axes)."""
    return _reduce("multiply", x, axis, dtype, mask, keepdims)


def mean(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
    """Mean over trailing free ``axis`` (axes): a sum (tensor_reduce) then a scale (tensor_scalar)."""
    s = _reduce("add", x, axis, float32, mask, keepdims)
    axes = instructions.reduce_axes(axis, len(x.shape), "mean", x.describe())
    n = int(np.prod([x.shape[a] for a in axes]))
    dst = fresh_result(s.shape, dtype or x.dtype, sbuf, mask)
    instructions.tensor_scalar(dst, s, "multiply", 1.0 / n, mask=mask)
    return dst


# ---- Tensor Engine ---------------------------------------------------------------------------------
def matmul(x, y, *, transpose_x=False, mask=None, **kwargs):
    """``x @ y`` (or ``x.T @ y`` with ``transpose_x=True``) -> new fp32 PSUM tile.

    x: SBUF [M, K] (or [K, M] when transposed), K <= 128, M <= 128; y: SBUF [K, N], N <= 512.
    Without ``transpose_x`` a Tensor-Engine transpose of x (and a PSUM->SBUF copy) is inserted.
    """
    if not transpose_x:
        instructions.check_memory(x, ("sbuf",), "matmul", "x")
        instructions.check_transpose_shape(x, "tensor", "matmul")
        xt_ps = fresh_result((x.shape[1], x.shape[0]), x.dtype, psum)
        instructions.nc_transpose(xt_ps, x, engine="tensor")
        xt = fresh_result(xt_ps.shape, x.dtype, sbuf)
        instructions.tensor_copy(xt, xt_ps)
        x = xt
    instructions.check_matmul_operands(x, y, "matmul")
    dst = fresh_result((x.shape[1], y.shape[1]), float32, psum, mask)
    instructions.nc_matmul(dst, x, y, mask=mask)
    return dst


def transpose(x, *, dtype=None, mask=None, **kwargs):
    """2-D partition<->free transpose of an SBUF tile (<= 128 x 128) on the Tensor Engine -> PSUM."""
    instructions.check_transpose_shape(x, "tensor", "transpose")
    dst = fresh_result((x.shape[1], x.shape[0]), dtype or x.dtype, psum, mask)
    instructions.nc_transpose(dst, x, engine="tensor", mask=mask)
    return dst


def softmax(x, axis, *, dtype=None, compute_dtype=None, mask=None, **kwargs):
    """softmax along the trailing free ``axis``: max (Vector), exp(x - max) with a fused sum
    (Scalar activation_reduce), reciprocal and scale (Vector) -> new SBUF tile."""
    axes = instructions.reduce_axes(axis, len(x.shape), "softmax", x.describe())
    if axes != (len(x.shape) - 1,) and len(x.shape) > 2:
        raise NotImplementedError("softmax over several axes")
    p = x.shape[0]
    mx = fresh_result((p, 1), float32, sbuf)
    instructions.tensor_reduce(mx, "maximum", x, axes, negate=True, keepdims=True, mask=mask)
    e = fresh_result(x.shape, float32, sbuf)
    s = fresh_result((p, 1), float32, sbuf)
    instructions.activation(e, "exp", x, bias=mx, reduce_res=s, mask=mask)
    r = fresh_result((p, 1), float32, sbuf)
    instructions.activation(r, "reciprocal", s, engine="vector")
    dst = fresh_result(x.shape, dtype or x.dtype, sbuf, mask)
    instructions.tensor_scalar(dst, e, "multiply", r, mask=mask)
    return dst


def device_print(prefix, x, *, mask=None, **kwargs):
    """Print a tile's values during simulation (no cost)."""
    instructions.device_print(prefix, x, mask=mask)


del _n

# Python operators on tiles mean these functions.
install_operators({name: globals()[name] for name in (
    "add", "subtract", "multiply", "divide", "power", "negative", "abs", "less", "less_equal",
    "greater", "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_xor",
    "logical_not", "broadcast_to")})
