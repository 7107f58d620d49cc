"""``nki.language`` of the current front end (import as ``nl``; AWS's NKI 0.6 reference).

Tensors (``nl.ndarray``) are views of storage with AWS's ``NkiTensor`` view methods (``t[...]``,
``reshape``, ``permute``, ``ap``, ``view``, ``select``...). The high-level helpers (``nl.load``,
``nl.add``, ``nl.matmul``, reductions...) return new tiles, as AWS's "experimental" ``nl`` APIs do, on
the shared instruction layer through :mod:`torch_neuronx.nki.highlevel`. Signatures are AWS's; an
unknown keyword is a ``TypeError``. There are no masks, ``nl.arange`` or block dimensions in this front
end; the loops (``affine_range``, ``sequential_range``, ``static_range``) are Python ``range``.
"""
from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ... import arguments, dtypes, highlevel, instructions
from ...context import current
from ...dtypes import (bfloat16, bool_, finfo, float4_e2m1fn_x4, float8_e4m3, float8_e4m3fn, float8_e4m3fn_x4,
                       float8_e5m2, float8_e5m2_x4, float8_e8m0fnu, float16, float32, fp32, int8, int16, int32,
                       tfloat32, uint8, uint16, uint32)
from ...errors import err_invalid_instruction_argument
from ...indexing import as_int, ds
from ...instructions import VirtualRegister
from ...limits import TileSize, tile_size
from ...memory import Buffer, Placement, hbm, is_hbm, is_on_chip, is_psum, is_sbuf, private_hbm, psum, sbuf, shared_hbm
from ...tile import NkiTensor, is_tile

__all__ = [
    "bool_", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "float32", "bfloat16", "tfloat32",
    "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "float8_e5m2_x4", "float8_e4m3fn_x4", "float8_e8m0fnu",
    "float4_e2m1fn_x4", "fp32", "bool", "finfo", "sbuf", "psum", "hbm", "private_hbm", "shared_hbm", "tile_size",
    "average", "prelu", "bypass", "MemoryRegion", "NKIObject", "NkiTensor", "DType", "_TileSize", "is_hbm",
    "is_on_chip", "is_psum", "is_sbuf", "ndarray", "zeros", "ones", "full", "zeros_like", "empty_like", "rand",
    "random_seed", "shared_constant", "shared_identity_matrix", "ds", "affine_range", "sequential_range",
    "static_range", "dynamic_range", "range", "fori_loop", "while_loop", "no_reorder", "program_id",
    "num_programs", "program_ndim", "load", "store", "load_transpose2d", "copy", "broadcast_to", "matmul",
    "transpose", "softmax", "rms_norm", "dropout", "where", "gather_flattened", "expand_dims", "device_print",
    "sum", "max", "min", "mean", "prod", "var", "all",
]

bool = bool_
DType = dtypes.PackedDType.__mro__[-1]     # dtypes are NumPy dtypes / TFloat32 / PackedDType objects
_TileSize = TileSize


class _Op:
    """An operator constant for ``op=`` fields (``nl.bypass``, ``nl.average``, ``nl.prelu``)."""

    def __init__(self, name: str):
        self._nki_op_name = name
        self.__name__ = name

    def __repr__(self) -> str:
        return f"nl.{self.__name__}"


average = _Op("average")
prelu = _Op("prelu")
bypass = _Op("bypass")


class MemoryRegion:
    """AWS's ``nl.MemoryRegion``: the buffers, as class attributes."""

    sbuf = sbuf
    psum = psum
    private_hbm = private_hbm
    shared_hbm = shared_hbm


class NKIObject:
    """Base class of NKI kernel dataclasses and configuration objects: keyword arguments become
    attributes. A subclass decorated with ``@dataclass`` gets the dataclass ``__init__``, whose fields
    include the class attributes declared without an annotation (``section_idx = None``): AWS's
    kernels construct such classes by keyword (nki-library's attention kernel does)."""

    def __init__(self, **kwargs: Any) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ann = cls.__dict__.get("__annotations__")
        if ann is None:
            ann = {}
            cls.__annotations__ = ann
        for name, val in list(cls.__dict__.items()):
            if name.startswith("_") or name in ann or callable(val) or \
                    isinstance(val, (classmethod, staticmethod, property, list, dict, set)):
                continue
            ann[name] = Any          # a field with its class value as default (last, so defaults follow)


# ---- creation --------------------------------------------------------------------------------------
def _shape(shape: Any) -> tuple:
    return tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)


def ndarray(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "", address: Any = None) -> NkiTensor:
    """A new tensor of ``shape`` / ``dtype`` in ``buffer`` (default SBUF), uninitialised (poisoned:
    NaN / 4). ``address=(partition_offset, free_offset)`` is kept as the tensor's requested placement
    (the simulator gives every tensor its own storage)."""
    buf: Any = buffer
    if address is not None:
        buf = Placement(("sbuf" if buffer is sbuf or buffer is None else getattr(buffer, "kind", "sbuf")),
                        {"address": tuple(address)})
    return current().new_tensor(_shape(shape), dtype, buf, name)


def full(shape: Any, fill_value: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> NkiTensor:
    """A new tensor filled with ``fill_value`` (on chip: a memset instruction)."""
    return highlevel.full(shape, fill_value, dtype, buffer, name, hbm_ok=True)


def zeros(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> NkiTensor:
    """``full(shape, 0, dtype)``."""
    return full(shape, 0, dtype, buffer, name)


def ones(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> NkiTensor:
    """``full(shape, 1, dtype)``."""
    return full(shape, 1, dtype, buffer, name)


def zeros_like(x: NkiTensor, dtype: Any = None, buffer: Any = None, name: str = "") -> NkiTensor:
    """Zeros with ``x``'s shape (dtype and buffer default to ``x``'s)."""
    return full(x.shape, 0, dtype or x.dtype, buffer or x.buffer, name)


def empty_like(x: NkiTensor, dtype: Any = None, buffer: Any = None, name: str = "") -> NkiTensor:
    """An uninitialised tensor with ``x``'s shape (dtype and buffer default to ``x``'s)."""
    return ndarray(x.shape, dtype or x.dtype, buffer or x.buffer, name)


def rand(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> NkiTensor:
    """A new tensor of uniform [0, 1) values."""
    return highlevel.rand(shape, dtype, buffer, name)


def random_seed(seed: NkiTensor) -> None:
    """Seed ``rand`` / ``dropout`` from a [1, 1] 32-bit tile."""
    instructions.set_rng_seed(seed)


def shared_constant(constant: Any) -> NkiTensor:
    """A shared-HBM tensor holding ``constant`` (a NumPy array or a ``.npy`` path)."""
    return highlevel.shared_constant(constant, None)


def shared_identity_matrix(n: int, dtype: Any = uint8, dst: NkiTensor | None = None) -> NkiTensor:
    """An ``n x n`` identity matrix in SBUF (written into ``dst`` when given)."""
    return highlevel.identity(int(n), dtype, dst)


def expand_dims(x: NkiTensor, axis: int) -> NkiTensor:
    """A view of ``x`` with a size-1 axis inserted at ``axis``."""
    return x.expand_dim(as_int(axis, "nl.expand_dims axis"))


# ---- loops -----------------------------------------------------------------------------------------
def _ints(start: Any, stop: Any = None, step: Any = 1) -> list[int]:
    """``range`` arguments from ints or registers (``stop`` None: ``range(start)``)."""
    vals = [start] if stop is None else [start, stop, step]
    ints = [int(v.get()) if isinstance(v, VirtualRegister) else as_int(v, "range bound") for v in vals]
    if len(ints) == 3 and ints[2] == 0:
        raise err_invalid_instruction_argument(f"range({start!r}, {stop!r}, {step!r}): the step is 0")
    return ints


def affine_range(start: Any, stop: Any = None, step: int = 1) -> Iterator[int]:
    """``range(start, stop, step)`` (deprecated alias: fully unrolled)."""
    return iter(builtins.range(*_ints(start, stop, step)))


def sequential_range(start: Any, stop: Any = None, step: int = 1) -> Iterator[int]:
    """``range(start, stop, step)`` (deprecated alias)."""
    return iter(builtins.range(*_ints(start, stop, step)))


def static_range(start: Any, stop: Any = None, step: int = 1) -> Iterator[int]:
    """``range(start, stop, step)`` (deprecated alias)."""
    return iter(builtins.range(*_ints(start, stop, step)))


def range(start: Any, stop: Any = None, step: int = 1) -> Iterator[int]:
    """``range(start, stop, step)`` (the spelling AWS's library kernels use)."""
    return iter(builtins.range(*_ints(start, stop, step)))


def dynamic_range(start: Any, stop: Any = None, step: int = 1) -> Iterator[int]:
    """A loop with runtime bounds (ints or registers, read now): ``range`` over their values."""
    if isinstance(step, VirtualRegister):
        raise err_invalid_instruction_argument("nl.dynamic_range: step must be a compile-time integer")
    return iter(builtins.range(*_ints(start, stop, step)))


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[VirtualRegister], Any], step: int = 1) -> None:
    """``for i in range(lower, upper, step): body_fun(i)`` with ``i`` a register."""
    for i in builtins.range(*_ints(lower, upper, step)):
        body_fun(VirtualRegister(i))


def while_loop(init: VirtualRegister, body_fun: Callable[[VirtualRegister], VirtualRegister]) -> None:
    """``r = init; while r != 0: r = body_fun(r)``."""
    r = init
    while int(r.get() if isinstance(r, VirtualRegister) else r) != 0:
        r = body_fun(r if isinstance(r, VirtualRegister) else VirtualRegister(int(r)))


def no_reorder() -> Any:
    """Context manager keeping instructions in program order (the simulator's order anyway)."""
    from ...compiler import no_reorder as _nr
    return _nr()


def program_id(axis: int = 0) -> int:
    """This program's index along launch-grid ``axis`` (the core of an LNC=2 launch: 0 or 1)."""
    return current().program_id(axis)


def num_programs(axes: Any = None) -> int:
    """Programs along ``axes`` of the launch grid (all axes when None)."""
    return current().num_programs(axes)


def program_ndim() -> int:
    """Rank of the launch grid."""
    return len(current().grid)


# ---- memory ----------------------------------------------------------------------------------------
def load(src: NkiTensor, dtype: Any = None) -> NkiTensor:
    """HBM -> a new SBUF tile of ``src``'s shape (one element gives [1, 1])."""
    return highlevel.load(src, dtype, None)


def store(dst: NkiTensor, value: Any) -> None:
    """An SBUF tile -> HBM ``dst`` (a PSUM tile raises ``err_unsupported_memory``: the current page
    takes "an SBUF tile").

    Raises:
        err_unsupported_memory: ``value`` in PSUM.
    """
    highlevel.store(dst, value, None, psum_ok=False)


def load_transpose2d(src: NkiTensor, dtype: Any = None) -> NkiTensor:
    """HBM [A, B] -> a new SBUF tile [B, A]."""
    return highlevel.load_transpose2d(src, dtype, None)


def copy(x: NkiTensor, dtype: Any = None) -> NkiTensor:
    """A new SBUF tile copied from ``x`` (SBUF or PSUM)."""
    return highlevel.copy(x, dtype, None)


def broadcast_to(x: NkiTensor, shape: Any, dtype: Any = None) -> NkiTensor:
    """A tile of ``shape`` with ``x``'s size-1 dims replicated (``x`` itself, or a cast copy, when the
    shape already matches)."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if shape == tuple(x.shape) and (dtype is None or dtypes.as_dtype(dtype) == x.dtype):
        return x
    return highlevel.broadcast_to(x, shape, dtype)


def gather_flattened(data: NkiTensor, indices: NkiTensor, axis: int = 0, dtype: Any = None) -> NkiTensor:
    """Per partition, the elements of ``data`` (free dims flattened) at ``indices``."""
    if axis != 0:
        raise NotImplementedError(f"nki.language.gather_flattened(axis={axis}): only axis=0 (per partition) is "
                                  "supported by the torch_neuronx NKI simulator")
    return highlevel.gather_flattened(data, indices, dtype, None)


def device_print(print_prefix: str, tensor: NkiTensor) -> None:
    """Print a tensor's values during simulation (no cost)."""
    sim = current()
    with sim.instruction("device_print", None) as ins:
        vals = ins.read(tensor)
    print(print_prefix, np.asarray(vals))


# ---- math ------------------------------------------------------------------------------------------
def _unary(name: str) -> Callable[..., Any]:
    def fn(x: Any, dtype: Any = None) -> Any:
        return highlevel.elementwise_unary(name, x, dtype, None)
    fn.__name__ = fn.__qualname__ = name
    fn._nki_op_name = name  # type: ignore[attr-defined]
    fn.__doc__ = f"Element-wise ``{name}`` -> a new SBUF tile (fp32 math, rounded to ``dtype``)."
    return fn


def _binary(name: str) -> Callable[..., Any]:
    def fn(x: Any, y: Any, dtype: Any = None) -> Any:
        return highlevel.elementwise_binary(name, x, y, dtype, None)
    fn.__name__ = fn.__qualname__ = name
    fn._nki_op_name = name  # type: ignore[attr-defined]
    fn.__doc__ = (f"Element-wise ``{name}`` of tiles / scalars (NumPy broadcasting, a one-partition operand "
                  "included) -> a new SBUF tile.")
    return fn


_UNARY = ("exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "tanh", "sigmoid", "relu", "gelu", "gelu_dx",
          "gelu_apprx_tanh", "gelu_apprx_sigmoid", "gelu_apprx_sigmoid_dx", "silu", "silu_dx", "abs", "negative",
          "sin", "cos", "tan", "arctan", "erf", "erf_dx", "softplus", "sign", "floor", "ceil", "trunc", "mish",
          "invert", "logical_not")
_BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "abs_max", "abs_min",
           "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "mod", "fmod", "equal",
           "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or",
           "logical_xor")

exp, log, sqrt, rsqrt, reciprocal, square = (_unary(n) for n in _UNARY[:6])
tanh, sigmoid, relu, gelu, gelu_dx, gelu_apprx_tanh = (_unary(n) for n in _UNARY[6:12])
gelu_apprx_sigmoid, gelu_apprx_sigmoid_dx, silu, silu_dx, abs, negative = (
    _unary(n) for n in _UNARY[12:18])
sin, cos, tan, arctan, erf, erf_dx = (_unary(n) for n in _UNARY[18:24])
softplus, sign, floor, ceil, trunc, mish = (_unary(n) for n in _UNARY[24:30])
invert, logical_not = _unary("invert"), _unary("logical_not")
add, subtract, multiply, divide, maximum, minimum = (_binary(n) for n in _BINARY[:6])
power, abs_max, abs_min, bitwise_and, bitwise_or, bitwise_xor = (_binary(n) for n in _BINARY[6:12])
left_shift, right_shift, mod, fmod, equal, not_equal = (_binary(n) for n in _BINARY[12:18])
greater, greater_equal, less, less_equal, logical_and, logical_or = (_binary(n) for n in _BINARY[18:24])
logical_xor = _binary("logical_xor")
__all__ += list(_UNARY) + list(_BINARY)


def where(condition: Any, x: Any, y: Any, dtype: Any = None) -> NkiTensor:
    """``x`` where ``condition`` else ``y`` -> a new SBUF tile."""
    return highlevel.where(condition, x, y, dtype, None)


def sum(x: NkiTensor, axis: Any, dtype: Any = None, keepdims: builtins.bool = False) -> NkiTensor:
    """Sum over free ``axis`` (axes) -> a new SBUF tile."""
    return highlevel.reduce("add", x, axis, dtype, None, keepdims)


def max(x: NkiTensor, axis: Any, dtype: Any = None, keepdims: builtins.bool = False) -> NkiTensor:
    """Maximum over free ``axis`` (axes)."""
    return highlevel.reduce("maximum", x, axis, dtype, None, keepdims)


def min(x: NkiTensor, axis: Any, dtype: Any = None, keepdims: builtins.bool = False) -> NkiTensor:
    """Minimum over free ``axis`` (axes)."""
    return highlevel.reduce("minimum", x, axis, dtype, None, keepdims)


def prod(x: NkiTensor, axis: Any, dtype: Any = None, keepdims: builtins.bool = False) -> NkiTensor:
    """Product over free ``axis`` (axes)."""
    return highlevel.reduce("multiply", x, axis, dtype, None, keepdims)


def mean(x: NkiTensor, axis: Any, dtype: Any = None, keepdims: builtins.bool = False) -> NkiTensor:
    """Mean over free ``axis`` (axes)."""
    return highlevel.mean(x, axis, dtype, None, keepdims)


def var(x: NkiTensor, axis: Any, dtype: Any = None, keepdims: builtins.bool = False) -> NkiTensor:
    """Population variance over free ``axis`` (axes)."""
    v = highlevel.var(x, axis, dtype, None)
    if keepdims:
        axes = instructions.reduce_axes(axis, len(x.shape), "var", x.describe(), any_free=True)
        return v.reshape(tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    return v


def all(x: NkiTensor, axis: Any, dtype: Any = None) -> NkiTensor:
    """Whether every element along free ``axis`` is non-zero."""
    return highlevel.all_true(x, axis, dtype, None)


def matmul(x: NkiTensor, y: NkiTensor, transpose_x: builtins.bool = False) -> NkiTensor:
    """``x @ y`` (``x.T @ y`` with ``transpose_x``) -> a new fp32 PSUM tile."""
    return highlevel.matmul(x, y, transpose_x, None)


def transpose(x: NkiTensor, dtype: Any = None) -> NkiTensor:
    """2-D partition<->free transpose on the Tensor Engine -> a new PSUM tile."""
    return highlevel.transpose(x, dtype, None)


def softmax(x: NkiTensor, axis: Any = -1, dtype: Any = None) -> NkiTensor:
    """softmax along free ``axis`` -> a new SBUF tile."""
    return highlevel.softmax(x, axis, dtype, None)


def rms_norm(x: NkiTensor, w: NkiTensor, axis: Any, n: int, epsilon: float = 1e-06, dtype: Any = None,
             compute_dtype: Any = None) -> NkiTensor:
    """``x / RMS(x) * w`` -> a new SBUF tile (fp32 math)."""
    _ = compute_dtype
    return highlevel.rms_norm(x, w, axis, n, epsilon, dtype, None)


def dropout(x: NkiTensor, rate: Any, dtype: Any = None) -> NkiTensor:
    """``x`` with elements zeroed with probability ``rate`` -> a new SBUF tile."""
    return highlevel.dropout(x, rate, dtype, None)


_ = (Buffer, is_tile, fp32)

# wrong-typed arguments raise the NKI error naming the API and parameter (nki/arguments.py)
arguments.install(globals(), __all__, "nl", skip=("install_operators", "device_print", "static_cast"))
