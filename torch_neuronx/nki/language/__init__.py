"""``nki.language`` of the legacy front end (``neuronxcc.nki.language``; import as ``nl``).

Calls return new tiles (SBUF by default; PSUM for ``matmul`` / ``transpose``), built on the
destination-passing instruction layer (:mod:`..instructions`) through :mod:`..highlevel`. Signatures
are those of AWS's legacy ``nki.language`` reference (Neuron SDK 2.26), without its catch-all
``**kwargs``: an unknown keyword is a ``TypeError`` naming it. Tiles are ``(P, F...)`` with P <= 128 on
axis 0; ``mask=`` restricts an instruction to the elements of an affine predicate.

Importing this module installs the meaning of Python operators on tiles (``a + b`` is
``nl.add(a, b)``, without partition broadcasting, as AWS's known-issues page states).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .. import arguments, dtypes, highlevel, instructions
from ..context import active, current
from ..dtypes import (bf16, bfloat16, bool_, finfo, float8_e4m3, float8_e5m2, float16, float32, fp16, fp32,
                      int8, int16, int32, tf32, tfloat32, uint8, uint16, uint32)
from ..errors import err_invalid_instruction_argument
from ..indexing import IndexExpr, Mask, arange, as_int, ds, mgrid
from ..limits import tile_size
from ..memory import hbm, private_hbm, psum, sbuf, shared_hbm
from ..tile import NkiTensor, install_operators, is_tile, par_dim

__all__ = [
    # dtypes and buffers
    "float32", "tfloat32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2", "int8", "int16", "int32",
    "uint8", "uint16", "uint32", "bool_", "fp32", "tf32", "bf16", "fp16", "bfp16", "finfo",
    "sbuf", "psum", "hbm", "private_hbm", "shared_hbm",
    # creation, indexing, loops, SPMD
    "ndarray", "zeros", "ones", "full", "zeros_like", "empty_like", "rand", "random_seed", "shared_constant",
    "shared_identity_matrix", "arange", "mgrid", "ds", "par_dim", "affine_range", "sequential_range",
    "static_range", "tile_size", "program_id", "num_programs", "program_ndim", "nc", "spmd_dim", "static_cast",
    "expand_dims", "gemm_grid", "gemm_stationary_grid",
    # memory
    "load", "store", "copy", "broadcast_to", "load_transpose2d", "atomic_rmw", "gather_flattened",
    # math
    "matmul", "transpose", "softmax", "rms_norm", "dropout", "where", "device_print", "sum", "max", "min", "mean",
    "prod", "var", "all", "loop_reduce", "all_reduce", "IndexExpr", "Mask", "NkiTensor",
]

bfp16 = dtypes.DTypeAlias(bfloat16)


# ---- creation --------------------------------------------------------------------------------------
def _shape(shape: Any) -> tuple:
    return tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)


def ndarray(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "") -> NkiTensor:
    """A new tensor of ``shape`` / ``dtype`` in ``buffer`` (default SBUF), filled with poison (NaN for
    floats, 4 for integers): memory is not initialised on a NeuronCore. ``nl.par_dim(n)`` in ``shape``
    marks the partition dim; dims before it are block dims."""
    return current().new_tensor(_shape(shape), dtype, buffer, name)


def full(shape: Any, fill_value: Any, dtype: Any, *, buffer: Any = None, name: str = "",
         lazy_initialization: bool = False) -> NkiTensor:
    """A new on-chip tensor filled with ``fill_value`` (a memset instruction). ``lazy_initialization``
    (taken by AWS's reference kernels) lets AWS's compiler place the fill later; the values are the
    same, and the simulator fills at once.

    Raises:
        err_hbm_tensor_with_init_value_not_supported: in HBM (AWS's errors page).
    """
    _ = lazy_initialization
    return highlevel.full(shape, fill_value, dtype, buffer, name, hbm_ok=False)


def zeros(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "",
         lazy_initialization: bool = False) -> NkiTensor:
    """``full(shape, 0, dtype)`` (``lazy_initialization``: see :func:`full`)."""
    return full(shape, 0, dtype, buffer=buffer, name=name, lazy_initialization=lazy_initialization)


def ones(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "",
         lazy_initialization: bool = False) -> NkiTensor:
    """``full(shape, 1, dtype)`` (``lazy_initialization``: see :func:`full`)."""
    return full(shape, 1, dtype, buffer=buffer, name=name, lazy_initialization=lazy_initialization)


def zeros_like(a: NkiTensor, dtype: Any = None, *, buffer: Any = None, name: str = "") -> NkiTensor:
    """Zeros with ``a``'s shape (and dtype unless given)."""
    return zeros(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def empty_like(a: NkiTensor, dtype: Any = None, *, buffer: Any = None, name: str = "") -> NkiTensor:
    """An uninitialised (poisoned) tensor with ``a``'s shape."""
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def rand(shape: Any, dtype: Any = np.float32) -> NkiTensor:
    """A new SBUF tile of uniform [0, 1) values (the Vector Engine's generator)."""
    return highlevel.rand(shape, dtype, sbuf, "")


def random_seed(seed: Any, *, mask: Any = None) -> None:
    """Reseed the generator ``rand`` / ``dropout`` use (a number or a [1, 1] tile; legacy page: "a 32-bit
    scalar value to use as the seed").

    Raises:
        err_invalid_instruction_argument: a seed that is not a tile or an integer from 0 to 2**32 - 1.
    """
    if is_tile(seed):
        instructions.set_rng_seed(seed)
        return
    s = as_int(seed, "nl.random_seed seed")
    if not 0 <= s < 2 ** 32:
        raise err_invalid_instruction_argument(f"nl.random_seed({seed!r}): the seed is a 32-bit unsigned value")
    current().core.rng["vector"] = np.random.default_rng(s)
    _ = mask


def shared_constant(constant: Any, dtype: Any = None) -> NkiTensor:
    """An HBM tensor holding ``constant`` (a NumPy array or a ``.npy`` path)."""
    return highlevel.shared_constant(constant, dtype)


def shared_identity_matrix(n: int, dtype: Any = np.uint8) -> NkiTensor:
    """An ``n x n`` identity matrix in shared HBM: "the same behavior" as :func:`shared_constant`
    (legacy ``nki.language.shared_identity_matrix`` page; kernels ``nl.load`` it). The current front
    end's version is an SBUF tile."""
    return highlevel.shared_constant(np.identity(int(n)), dtype)


def static_cast(input_data: Any, dtype: Any) -> Any:
    """Host helper: a scalar or NumPy array converted to an NKI dtype (e.g. bf16 inputs)."""
    dt = dtypes.np_dtype(dtypes.as_dtype(dtype))
    if np.isscalar(input_data):
        return dt.type(input_data)
    return np.asarray(input_data).astype(dt)


def expand_dims(data: NkiTensor, axis: Any) -> NkiTensor:
    """A view of ``data`` with size-1 axes inserted at ``axis`` (after its last dim)."""
    axes = [axis] if isinstance(axis, int) else list(axis)
    t = data
    for a in sorted(int(x) for x in axes):
        if a == 0:
            raise err_invalid_instruction_argument("nl.expand_dims: axis 0 is the partition dim")
        t = t.expand_dim(a)
    return t


def gemm_grid() -> Any:
    """Not provided (a compiler-internal tile definition).

    Raises:
        NotImplementedError: always.
    """
    raise NotImplementedError("nki.language.gemm_grid is a compiler-internal tile definition; use "
                              "nl.tile_size.gemm_moving_fmax / pmax")


def gemm_stationary_grid() -> Any:
    """Not provided (a compiler-internal tile definition).

    Raises:
        NotImplementedError: always.
    """
    raise NotImplementedError("nki.language.gemm_stationary_grid is a compiler-internal tile definition; use "
                              "nl.tile_size.gemm_stationary_fmax / pmax")


# ---- loops and SPMD --------------------------------------------------------------------------------
def _loop(kind: str, args: tuple) -> Iterator[int]:
    sim = active()
    ints = tuple(as_int(getattr(a, "value", a), f"nl.{kind}_range bound") for a in args)
    if len(ints) == 3 and ints[2] == 0:
        raise err_invalid_instruction_argument(f"nl.{kind}_range{tuple(args)!r}: the step is 0")
    return sim.loop(kind, *ints) if sim else iter(range(*ints))


def affine_range(*args: Any, **kwargs: Any) -> Iterator[int]:
    """Loop whose iterations are independent: two iterations writing the same location raise
    ``err_unexpected_output_dependencies`` (PSUM ``+=`` accumulation excepted). ``directives=`` /
    ``precise_schedule=`` / ``multi_buffer=`` are scheduling directives of AWS's compiler: they order or
    buffer instructions, which the simulator executes in program order anyway."""
    _hints("affine_range", kwargs)
    return _loop("affine", args)


def sequential_range(*args: Any, **kwargs: Any) -> Iterator[int]:
    """Loop with loop-carried dependencies allowed (iterations run in order)."""
    _hints("sequential_range", kwargs)
    return _loop("sequential", args)


def static_range(*args: Any) -> Iterator[int]:
    """Fully unrolled loop (sequential_range semantics)."""
    return _loop("static", args)


_LOOP_HINTS = frozenset({"directives", "precise_schedule", "multi_buffer"})


def _hints(api: str, kwargs: dict) -> None:
    unknown = sorted(set(kwargs) - _LOOP_HINTS)
    if unknown:
        raise TypeError(f"nl.{api}() got an unexpected keyword argument {unknown[0]!r}")


def program_id(axis: int) -> int:
    """Index of this program instance along launch-grid ``axis`` (``kernel[g0, g1](...)``)."""
    return current().program_id(axis)


def num_programs(axes: Any = None) -> int:
    """Size of the launch grid along ``axes`` (all axes multiplied when None)."""
    return current().num_programs(axes)


def program_ndim() -> int:
    """Rank of the launch grid (0 when launched without a grid)."""
    return len(current().grid)


class nc(int):
    """``kernel[nl.nc(2), ...]``: a launch-grid axis spread over physical NeuronCores (LNC=2): the
    programs of its two indices run on two simulated cores."""

    is_nc = True


class spmd_dim(int):
    """``nl.spmd_dim(nl.nc(2), 2)``: a launch-grid axis of size ``2 x 2`` whose outer factor is spread
    over NeuronCores (legacy ``nki.language.spmd_dim`` page)."""

    def __new__(cls, *dims: Any) -> spmd_dim:
        size = int(np.prod([int(d) for d in dims])) if dims else 1
        obj = super().__new__(cls, size)
        obj.dims = dims                            # type: ignore[attr-defined]
        obj.is_nc = any(getattr(d, "is_nc", False) for d in dims)   # type: ignore[attr-defined]
        obj.cores = next((int(d) for d in dims if getattr(d, "is_nc", False)), 1)  # type: ignore[attr-defined]
        return obj


# ---- memory ----------------------------------------------------------------------------------------
def load(src: NkiTensor, *, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """HBM -> a new SBUF tile of ``src``'s (view) shape (a single element gives a [1, 1] tile).
    ``dtype`` converts on the way."""
    return highlevel.load(src, dtype, mask)


def store(dst: NkiTensor, value: Any, *, mask: Any = None) -> None:
    """SBUF tile (or scalar) -> HBM ``dst``; a PSUM tile is copied to SBUF first ("an extra copy will
    be performed", legacy ``nl.store`` page; charged to the cost model)."""
    highlevel.store(dst, value, mask, psum_ok=True)


def load_transpose2d(src: NkiTensor, *, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """HBM [A, B] -> a new SBUF tile [B, A]."""
    return highlevel.load_transpose2d(src, dtype, mask)


def copy(src: NkiTensor, *, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """A new SBUF tile copied from ``src`` (SBUF or PSUM), e.g. a PSUM matmul result -> SBUF."""
    return highlevel.copy(src, dtype, mask)


def broadcast_to(src: NkiTensor, *, shape: Any) -> NkiTensor:
    """A new SBUF tile of ``shape``: size-1 partition / free dims of ``src`` replicated."""
    return highlevel.broadcast_to(src, shape)


def atomic_rmw(dst: NkiTensor, value: Any, op: Any, *, mask: Any = None) -> None:
    """``dst = op(dst, value)`` on HBM (``op``: np.add), e.g. a scatter-add through tile indices."""
    highlevel.atomic_rmw(dst, value, op, mask)


def gather_flattened(data: NkiTensor, indices: NkiTensor, *, mask: Any = None, dtype: Any = None) -> NkiTensor:
    """Per partition, the elements of ``data`` (free dims flattened) at the uint32 ``indices``."""
    return highlevel.gather_flattened(data, indices, dtype, mask)


# ---- element-wise math -----------------------------------------------------------------------------
_UNARY = ("exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "tanh", "sigmoid", "relu", "gelu", "gelu_dx",
          "gelu_apprx_tanh", "gelu_apprx_sigmoid", "silu", "silu_dx", "abs", "negative", "sin", "cos", "tan",
          "arctan", "erf", "erf_dx", "softplus", "sign", "floor", "ceil", "trunc", "mish", "invert")
_BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "bitwise_and", "bitwise_or",
           "bitwise_xor", "left_shift", "right_shift", "mod", "fmod")
_COMPARE = ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
            "logical_or", "logical_xor")


def _unary(name: str) -> Callable[..., Any]:
    def fn(x: Any, *, dtype: Any = None, mask: Any = None) -> Any:
        return highlevel.elementwise_unary(name, x, dtype, mask)
    fn.__name__ = fn.__qualname__ = name
    fn._nki_op_name = name  # type: ignore[attr-defined]  # read by ops.op_name
    fn.__doc__ = (f"Element-wise ``{name}`` of a tile -> a new SBUF tile (fp32 math, rounded to ``dtype``, default "
                  f"the input's); {'Scalar' if name in highlevel.SCALAR_ENGINE_FNS else 'Vector'} Engine.")
    return fn


def _binary(name: str, default_dtype: Any = None) -> Callable[..., Any]:
    def fn(x: Any, y: Any, *, dtype: Any = default_dtype, mask: Any = None) -> Any:
        return highlevel.elementwise_binary(name, x, y, dtype, mask)
    fn.__name__ = fn.__qualname__ = name
    fn._nki_op_name = name  # type: ignore[attr-defined]
    fn.__doc__ = (f"Element-wise ``{name}`` of two tiles (Vector tensor_tensor; a one-partition operand is "
                  "broadcast) or of a tile and a scalar (tensor_scalar) -> a new SBUF tile.")
    return fn


def logical_not(x: Any, *, dtype: Any = bool, mask: Any = None) -> Any:
    """Element-wise logical not -> a new SBUF tile (bool by default)."""
    return highlevel.elementwise_unary("logical_not", x, dtype, mask)


logical_not._nki_op_name = "logical_not"  # type: ignore[attr-defined]

exp, log, sqrt, rsqrt, reciprocal, square = (_unary(n) for n in ("exp", "log", "sqrt", "rsqrt", "reciprocal",
                                                                 "square"))
tanh, sigmoid, relu, gelu, gelu_dx, gelu_apprx_tanh = (_unary(n) for n in ("tanh", "sigmoid", "relu", "gelu",
                                                                           "gelu_dx", "gelu_apprx_tanh"))
gelu_apprx_sigmoid, silu, silu_dx, abs, negative, sin = (_unary(n) for n in (
    "gelu_apprx_sigmoid", "silu", "silu_dx", "abs", "negative", "sin"))
cos, tan, arctan, erf, erf_dx, softplus = (_unary(n) for n in ("cos", "tan", "arctan", "erf", "erf_dx", "softplus"))
sign, floor, ceil, trunc, mish, invert = (_unary(n) for n in ("sign", "floor", "ceil", "trunc", "mish", "invert"))
add, subtract, multiply, divide, maximum, minimum = (_binary(n) for n in ("add", "subtract", "multiply", "divide",
                                                                          "maximum", "minimum"))
power, bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift = (_binary(n) for n in (
    "power", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"))
mod, fmod = _binary("mod"), _binary("fmod")
equal, not_equal, greater, greater_equal, less, less_equal = (_binary(n, bool) for n in (
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal"))
logical_and, logical_or, logical_xor = (_binary(n, bool) for n in ("logical_and", "logical_or", "logical_xor"))
__all__ += list(_UNARY) + list(_BINARY) + list(_COMPARE) + ["logical_not"]


def where(condition: Any, x: Any, y: Any, *, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """``x`` where ``condition`` else ``y`` (tiles or scalars) -> a new SBUF tile (Vector Engine)."""
    return highlevel.where(condition, x, y, dtype, mask)


# ---- reductions ------------------------------------------------------------------------------------
def sum(x: NkiTensor, axis: Any, *, dtype: Any = None, mask: Any = None, keepdims: bool = False) -> NkiTensor:
    """Sum over free ``axis`` (axes) -> a new SBUF tile (Vector tensor_reduce)."""
    return highlevel.reduce("add", x, axis, dtype, mask, keepdims)


def max(x: NkiTensor, axis: Any, *, dtype: Any = None, mask: Any = None, keepdims: bool = False) -> NkiTensor:
    """Maximum over free ``axis`` (axes)."""
    return highlevel.reduce("maximum", x, axis, dtype, mask, keepdims)


def min(x: NkiTensor, axis: Any, *, dtype: Any = None, mask: Any = None, keepdims: bool = False) -> NkiTensor:
    """Minimum over free ``axis`` (axes)."""
    return highlevel.reduce("minimum", x, axis, dtype, mask, keepdims)


def prod(x: NkiTensor, axis: Any, *, dtype: Any = None, mask: Any = None, keepdims: bool = False) -> NkiTensor:
    """Product over free ``axis`` (axes)."""
    return highlevel.reduce("multiply", x, axis, dtype, mask, keepdims)


def mean(x: NkiTensor, axis: Any, *, dtype: Any = None, mask: Any = None, keepdims: bool = False) -> NkiTensor:
    """Mean over free ``axis`` (axes): a sum then a scale."""
    return highlevel.mean(x, axis, dtype, mask, keepdims)


def var(x: NkiTensor, axis: Any, *, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """Population variance over free ``axis`` (axes)."""
    return highlevel.var(x, axis, dtype, mask)


def all(x: NkiTensor, axis: Any, *, dtype: Any = bool, mask: Any = None) -> NkiTensor:
    """Whether every element along free ``axis`` is non-zero."""
    return highlevel.all_true(x, axis, dtype, mask)


def loop_reduce(x: NkiTensor, op: Any, loop_indices: Any, *, dtype: Any = None, mask: Any = None,
                name: str | None = None) -> NkiTensor:
    """``dst[...] = nl.loop_reduce(x, op, loop_indices)`` computes ``dst = op(x, dst)`` (see
    :func:`..highlevel.loop_reduce`); ``loop_indices`` only tell AWS's compiler which loop carries
    the reduction (the simulator runs the loop as written); ``name`` names the instruction."""
    _ = loop_indices
    return highlevel.loop_reduce(x, op, dtype, mask, name=name)


def all_reduce(x: NkiTensor, op: Any, program_axes: Any, *, dtype: Any = None, mask: Any = None,
               parallel_reduce: bool = True, asynchronous: bool = False) -> NkiTensor:
    """Not simulated: a reduction across the SPMD program instances of a launch.

    Raises:
        NotImplementedError: always.
    """
    raise NotImplementedError("nki.language.all_reduce (a reduction across SPMD programs) is not supported by the "
                              "torch_neuronx NKI simulator: write partial results to a shared_hbm tensor and "
                              "reduce them after the launch")


# ---- Tensor Engine and composites ------------------------------------------------------------------
def matmul(x: NkiTensor, y: NkiTensor, *, transpose_x: bool = False, mask: Any = None) -> NkiTensor:
    """``x @ y`` (``x.T @ y`` with ``transpose_x``) -> a new fp32 PSUM tile. x: [M, K] (or [K, M]),
    K <= 128, M <= 128; y: [K, N], N <= 512; PSUM operands are copied to SBUF first."""
    return highlevel.matmul(x, y, transpose_x, mask)


def transpose(x: NkiTensor, *, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """2-D partition<->free transpose (<= 128 x 128) on the Tensor Engine -> a new PSUM tile."""
    return highlevel.transpose(x, dtype, mask)


def softmax(x: NkiTensor, axis: Any, *, dtype: Any = None, compute_dtype: Any = None, mask: Any = None) -> NkiTensor:
    """softmax along free ``axis`` -> a new SBUF tile (``compute_dtype``: the math is fp32)."""
    _ = compute_dtype
    return highlevel.softmax(x, axis, dtype, mask)


def rms_norm(x: NkiTensor, w: NkiTensor, axis: Any, n: int, epsilon: float = 1e-06, *, dtype: Any = None,
             compute_dtype: Any = None, mask: Any = None) -> NkiTensor:
    """``x / RMS(x) * w`` over ``axis`` (``n`` values) -> a new SBUF tile (fp32 math)."""
    _ = compute_dtype
    return highlevel.rms_norm(x, w, axis, n, epsilon, dtype, mask)


def dropout(x: NkiTensor, rate: Any, *, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """``x`` with elements zeroed with probability ``rate`` -> a new SBUF tile."""
    return highlevel.dropout(x, rate, dtype, mask)


def device_print(prefix: str, x: Any, *, mask: Any = None) -> None:
    """Print a tile's values during simulation (no cost)."""
    sim = current()
    with sim.instruction("device_print", None) as ins:
        vals = ins.read(x, mask) if is_tile(x) else x
    print(prefix, np.asarray(vals))


# Python operators on tiles mean these functions (no partition broadcast, AWS's known-issues page).
def _op(name: str) -> Callable[..., Any]:
    def fn(x: Any, y: Any) -> Any:
        return highlevel.elementwise_binary(name, x, y, None, None, partition_broadcast=False)
    return fn


install_operators({
    **{n: _op(n) for n in ("add", "subtract", "multiply", "divide", "power", "less", "less_equal", "greater",
                           "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_xor",
                           "mod", "left_shift", "right_shift")},
    "floordiv": lambda x, y: floor(_op("divide")(x, y)),
    "negative": negative, "abs": abs, "logical_not": logical_not,
    "broadcast_to": lambda x, shape, dtype=None: highlevel.broadcast_to(x, shape, dtype),
})

# wrong-typed arguments raise the NKI error naming the API and parameter (nki/arguments.py)
arguments.install(globals(), __all__, "nl", skip=("install_operators", "device_print", "static_cast"))
