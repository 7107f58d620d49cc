"""The ``nki.language`` operations both front ends share, on the instruction layer.

AWS's two ``nki.language`` modules (legacy ``neuronxcc.nki.language`` and current ``nki.language``)
have the same high-level operations with slightly different signatures (the legacy ones take
``mask=``; comparisons default to ``dtype=bool`` there). Each front end defines its functions with
AWS's exact signature and calls the implementation here, which allocates the result tile and issues
the instructions.

What the ``nl`` layer adds over the instructions, per AWS's pages: element-wise binary operations
broadcast like NumPy, a one-partition operand included (legacy ``nl.add`` page: "x.shape and y.shape
must be broadcastable to a common shape"; "Broadcasting in the partition dimension is generally more
expensive"), while Python operators on tiles do not broadcast partitions (known-issues page:
"Partition dimension broadcasting is not supported on operator overloads"); ``nl.matmul`` accepts PSUM
operands and inserts the copy and the transpose it needs (``matmul(x, y)`` "lowers to
``nc_matmul(transpose(x), y)``"); reductions may cover any free axes of an access pattern
(programming model, "Case #3 - 2D pooling").
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes, instructions
from .context import current
from .errors import (err_invalid_instruction_argument, err_num_partition_mismatch, err_unsupported_memory)
from .instructions import fresh_result
from .memory import ON_CHIP, psum, sbuf
from .ops import binary, unary
from .tile import NkiTensor, broadcast_shape, is_tile

__all__ = ["SCALAR_ENGINE_FNS", "elementwise_unary", "elementwise_binary", "reduce", "load", "store", "copy",
           "broadcast_to", "matmul", "transpose", "softmax", "where", "to_sbuf", "full", "rand", "dropout",
           "rms_norm", "var", "mean", "gather_flattened", "shared_constant", "identity", "all_true",
           "loop_reduce", "atomic_rmw", "load_transpose2d"]

SCALAR_ENGINE_FNS = frozenset({
    "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_dx", "gelu_apprx_tanh",
    "gelu_apprx_sigmoid", "gelu_apprx_sigmoid_dx", "silu", "silu_dx", "erf", "erf_dx", "softplus", "sin",
    "cos", "tan", "arctan", "square", "reciprocal", "mish", "copy"})

_CMP = frozenset({"equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
                  "logical_or", "logical_xor"})


def to_sbuf(x: NkiTensor, api: str) -> NkiTensor:
    """``x`` itself when in SBUF; a PSUM tile is copied to a new SBUF tile first (the copy the
    compiler inserts for the ``nl`` APIs, charged to the cost model)."""
    if x.buffer.kind == "sbuf":
        return x
    if x.buffer.kind != "psum":
        raise err_unsupported_memory(f"'{api}': operand {x.describe()} must be in SBUF or PSUM (load it first)")
    t = fresh_result(x.shape, x.dtype, sbuf)
    instructions.tensor_copy(t, x, api="psum_to_sbuf_copy")
    return t


def _scalar(api: str, v: Any) -> Any:
    """``v`` unless it is a value no scalar operand of an element-wise operation takes (numbers, NumPy
    scalars and arrays, index expressions and loop registers pass).

    Raises:
        err_invalid_instruction_argument: a string, ``None``, a list, tuple, dict or set, or a complex number.
    """
    if not isinstance(v, (str, bytes, list, tuple, dict, set, complex, np.complexfloating, type(None))):
        return v
    raise err_invalid_instruction_argument(
        f"'{api}': operand {v!r} ({type(v).__name__}) is not a tile or a number")


def elementwise_unary(name: str, x: Any, dtype: Any, mask: Any) -> Any:
    """``nl.<name>(x)``: a new SBUF tile (Scalar Engine for transcendental functions, else Vector), or
    a Python number for a number."""
    if not is_tile(x):
        return float(unary(name)(np.float32(_scalar(name, x))))
    dt = dtypes.as_dtype(dtype) if dtype is not None else (dtypes.bool_ if name == "logical_not" else x.dtype)
    dst = fresh_result(x.shape, dt, sbuf, mask)
    if name in ("invert", "bitwise_not"):
        instructions.tensor_scalar(dst, x, "invert", None, mask=mask)
        return dst
    eng = "scalar" if name in SCALAR_ENGINE_FNS else "vector"
    instructions.activation(dst, name, x, mask=mask, engine=eng)
    return dst


def elementwise_binary(name: str, x: Any, y: Any, dtype: Any, mask: Any, partition_broadcast: bool = True) -> Any:
    """``nl.<name>(x, y)``: tiles and/or scalars -> a new SBUF tile (Vector ``tensor_tensor`` or
    ``tensor_scalar``), or a number for two numbers.

    Raises:
        err_num_partition_mismatch: partition counts differ and neither is 1, or a partition broadcast
            through a Python operator (``partition_broadcast=False``).
    """
    if not is_tile(x) and not is_tile(y):
        return binary(name)(np.float32(_scalar(name, x)), np.float32(_scalar(name, y))).item()
    if is_tile(x) and is_tile(y):
        shape = broadcast_shape(x, y)
        if x.shape[0] != y.shape[0] and not partition_broadcast:
            raise err_num_partition_mismatch(
                f"'{name}' operator on {x.describe()} and {y.describe()}: partition dimension broadcasting is not "
                f"supported on operator overloads; use nl.{name}(x, y) (AWS known-issues page)")
        dt = dtype if dtype is not None else dtypes.promote(x.dtype, y.dtype)
        dst = fresh_result(shape, dtypes.as_dtype(dt), sbuf, mask)
        xs = x if x.buffer.kind in ON_CHIP else None
        ys = y if y.buffer.kind in ON_CHIP else None
        if xs is None or ys is None:
            raise err_unsupported_memory(f"'{name}': operands must be on-chip tiles (load HBM tensors first)")
        if x.buffer.kind == "psum" and y.buffer.kind == "psum":
            y = to_sbuf(y, name)
        instructions.tensor_tensor(dst, x, y, name, mask=mask, bcast="all")
        return dst
    tile, scalar, rev = (x, y, False) if is_tile(x) else (y, x, True)
    scalar = _scalar(name, scalar)
    dt = dtype if dtype is not None else tile.dtype
    dst = fresh_result(tile.shape, dtypes.as_dtype(dt), sbuf, mask)
    instructions.tensor_scalar(dst, tile, name, scalar, reverse0=rev, mask=mask)
    return dst


def reduce(opname: str, x: NkiTensor, axis: Any, dtype: Any, mask: Any, keepdims: bool,
           negate: bool = False) -> NkiTensor:
    """``nl.sum/max/min/prod/all(x, axis)``: a Vector ``tensor_reduce`` over any free axes."""
    axes = instructions.reduce_axes(axis, len(x.shape), opname, x.describe(), any_free=True)
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keepdims else \
        tuple(s for i, s in enumerate(x.shape) if i not in axes)
    if len(shape) == 1:
        shape = (shape[0], 1)             # on-chip results stay 2-D
    dst = fresh_result(shape, dtypes.as_dtype(dtype) if dtype is not None else x.dtype, sbuf, mask)
    instructions.tensor_reduce(dst, opname, x, axes, negate=negate, keepdims=keepdims, mask=mask, any_free=True)
    return dst


def mean(x: NkiTensor, axis: Any, dtype: Any, mask: Any, keepdims: bool) -> NkiTensor:
    """Mean over free axes: a sum (fp32) then a scale."""
    s = reduce("add", x, axis, dtypes.float32, mask, keepdims)
    axes = instructions.reduce_axes(axis, len(x.shape), "mean", x.describe(), any_free=True)
    n = int(np.prod([x.shape[a] for a in axes]))
    dst = fresh_result(s.shape, dtypes.as_dtype(dtype) if dtype is not None else x.dtype, sbuf, mask)
    instructions.tensor_scalar(dst, s, "multiply", 1.0 / n, mask=mask)
    return dst


def var(x: NkiTensor, axis: Any, dtype: Any, mask: Any) -> NkiTensor:
    """Population variance over free axes: mean of squares minus the square of the mean (fp32)."""
    m = mean(x, axis, dtypes.float32, mask, True)
    d = fresh_result(x.shape, dtypes.float32, sbuf, mask)
    instructions.tensor_tensor(d, x, m, "subtract", mask=mask)
    sq = fresh_result(x.shape, dtypes.float32, sbuf, mask)
    instructions.tensor_tensor(sq, d, d, "multiply", mask=mask)
    return mean(sq, axis, dtype if dtype is not None else x.dtype, mask, False)


def all_true(x: NkiTensor, axis: Any, dtype: Any, mask: Any) -> NkiTensor:
    """``nl.all``: logical-and reduction over free axes."""
    return reduce("logical_and", x, axis, dtype if dtype is not None else dtypes.bool_, mask, False)


def load(src: NkiTensor, dtype: Any, mask: Any) -> NkiTensor:
    """HBM -> a new SBUF tile of ``src``'s (view) shape (a 0-D or 1-D view gives a [1, 1] / [n, 1] tile)."""
    if not is_tile(src):
        raise err_invalid_instruction_argument(f"nl.load: src must be an HBM tensor, got {type(src).__name__}")
    shape = src.shape if len(src.shape) >= 2 else ((1, 1) if not src.shape else (src.shape[0], 1))
    dst = fresh_result(shape, dtypes.as_dtype(dtype) if dtype is not None else src.dtype, sbuf, mask)
    instructions.load(dst, src, mask)
    return dst


def store(dst: NkiTensor, value: Any, mask: Any, psum_ok: bool) -> None:
    """SBUF tile (or scalar) -> HBM ``dst``; a PSUM tile is copied to SBUF first when ``psum_ok`` (the
    legacy ``nl.store`` page: "If the tile is in PSUM, an extra copy will be performed")."""
    if is_tile(value) and value.buffer.kind == "psum":
        if not psum_ok:
            raise err_unsupported_memory(f"nl.store: value {value.describe()} must be an SBUF tile (current "
                                         "nki.language.store page); copy PSUM to SBUF first (nl.copy)")
        value = to_sbuf(value, "store")
    instructions.store(dst, value, mask)


def copy(src: NkiTensor, dtype: Any, mask: Any) -> NkiTensor:
    """A new SBUF tile copied from ``src`` (SBUF or PSUM)."""
    dst = fresh_result(src.shape, dtypes.as_dtype(dtype) if dtype is not None else src.dtype, sbuf, mask)
    instructions.tensor_copy(dst, src, mask=mask)
    return dst


def broadcast_to(src: NkiTensor, shape: Any, dtype: Any = None) -> NkiTensor:
    """A new SBUF tile of ``shape``: size-1 partition / free dims of ``src`` replicated."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    dst = fresh_result(shape, dtypes.as_dtype(dtype) if dtype is not None else src.dtype, sbuf)
    if tuple(src.shape) == shape:
        instructions.tensor_copy(dst, src)
    else:
        instructions.broadcast_copy(dst, src)
    return dst


def load_transpose2d(src: NkiTensor, dtype: Any, mask: Any) -> NkiTensor:
    """HBM [A, B] -> a new SBUF tile [B, A] (DMA transpose)."""
    dst = fresh_result((src.shape[1], src.shape[0]), dtypes.as_dtype(dtype) if dtype is not None else src.dtype,
                       sbuf, mask)
    instructions.load_transpose2d(dst, src, mask)
    return dst


def matmul(x: NkiTensor, y: NkiTensor, transpose_x: bool, mask: Any) -> NkiTensor:
    """``x @ y`` (``x.T @ y`` with ``transpose_x``) -> a new fp32 PSUM tile; PSUM operands are copied
    to SBUF and, without ``transpose_x``, ``x`` is transposed on the Tensor Engine first."""
    x = to_sbuf(x, "matmul")
    y = to_sbuf(y, "matmul")
    if not transpose_x:
        instructions.check_transpose_shape(x, "tensor", "matmul")
        xt_ps = fresh_result((x.shape[1], x.shape[0]), x.dtype, psum)
        instructions.nc_transpose(xt_ps, x, engine="tensor")
        xt = fresh_result(xt_ps.shape, x.dtype, sbuf)
        instructions.tensor_copy(xt, xt_ps)
        x = xt
    instructions.check_matmul_operands(x, y, "matmul")
    if y.shape[1] > 512:
        from .errors import err_size_of_dimension_exceed_arch_limit
        raise err_size_of_dimension_exceed_arch_limit(f"'matmul': moving free size {y.shape[1]} > 512 "
                                                      f"(gemm_moving_fmax), {y.describe()}")
    dst = fresh_result((x.shape[1], y.shape[1]), dtypes.float32, psum, mask)
    instructions.nc_matmul(dst, x, y, mask=mask)
    return dst


def transpose(x: NkiTensor, dtype: Any, mask: Any) -> NkiTensor:
    """2-D partition<->free transpose of an SBUF tile (<= 128 x 128) on the Tensor Engine -> PSUM."""
    x = to_sbuf(x, "transpose")
    instructions.check_transpose_shape(x, "tensor", "transpose")
    dst = fresh_result((x.shape[1], x.shape[0]), dtypes.as_dtype(dtype) if dtype is not None else x.dtype, psum,
                       mask)
    instructions.nc_transpose(dst, x, engine="tensor", mask=mask)
    return dst


def softmax(x: NkiTensor, axis: Any, dtype: Any, mask: Any) -> NkiTensor:
    """softmax along trailing free axes: max (Vector), exp(x - max) with a fused sum (Scalar),
    reciprocal and scale (Vector) -> a new SBUF tile."""
    axes = instructions.reduce_axes(axis, len(x.shape), "softmax", x.describe())
    p = x.shape[0]
    keep_shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    mx = fresh_result(keep_shape, dtypes.float32, sbuf)
    instructions.tensor_reduce(mx, "maximum", x, axes, negate=True, keepdims=True, mask=mask)
    e = fresh_result(x.shape, dtypes.float32, sbuf)
    s = fresh_result((p, 1), dtypes.float32, sbuf)
    if len(axes) == len(x.shape) - 1:
        instructions.activation(e, "exp", x, bias=mx.reshape((p, 1)), reduce_res=s, mask=mask)
        r = fresh_result((p, 1), dtypes.float32, sbuf)
        instructions.reciprocal(r, s)
        dst = fresh_result(x.shape, dtypes.as_dtype(dtype) if dtype is not None else x.dtype, sbuf, mask)
        instructions.tensor_scalar(dst, e, "multiply", r, mask=mask)
        return dst
    instructions.tensor_tensor(e, x, mx, "add", mask=mask)
    instructions.activation(e, "exp", e, mask=mask)
    ssum = fresh_result(keep_shape, dtypes.float32, sbuf)
    instructions.tensor_reduce(ssum, "add", e, axes, keepdims=True)
    dst = fresh_result(x.shape, dtypes.as_dtype(dtype) if dtype is not None else x.dtype, sbuf, mask)
    instructions.tensor_tensor(dst, e, ssum, "divide", mask=mask)
    return dst


def where(condition: Any, x: Any, y: Any, dtype: Any, mask: Any) -> NkiTensor:
    """``x`` where ``condition`` else ``y`` (tiles or scalars) -> a new SBUF tile (Vector Engine)."""
    tiles = [t for t in (condition, x, y) if is_tile(t)]
    if not tiles:
        raise err_invalid_instruction_argument("nl.where needs at least one tile")
    shape = broadcast_shape(*tiles)
    dt = dtype if dtype is not None else dtypes.promote(*[t.dtype for t in (x, y) if is_tile(t)])
    dst = fresh_result(shape, dtypes.as_dtype(dt), sbuf, mask)
    instructions.select(dst, condition, x, y, mask=mask)
    return dst


def full(shape: Any, fill_value: Any, dtype: Any, buffer: Any, name: str, hbm_ok: bool) -> NkiTensor:
    """A new tensor filled with ``fill_value`` (an SBUF/PSUM fill is a memset instruction per block).

    Raises:
        err_hbm_tensor_with_init_value_not_supported: an HBM tensor (legacy front end, errors page).
    """
    from .errors import err_hbm_tensor_with_init_value_not_supported
    sim = current()
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    t = sim.new_tensor(shape, dtype, buffer, name)
    if t.buffer.kind in ON_CHIP:
        if t.pdim:
            for blk in np.ndindex(*t.shape[:t.pdim]):     # one memset per block
                instructions.memset(t[blk], fill_value)
        else:
            instructions.memset(t, fill_value)
    else:
        if not hbm_ok:
            raise err_hbm_tensor_with_init_value_not_supported(f"{t.describe()} filled with {fill_value!r}")
        st = t.storage
        st.data[...] = dtypes.from_f32(np.full(st.data.shape, fill_value, dtype=np.float64), st.dtype, st.keep)
        st.written = True
    return t


def identity(n: int, dtype: Any, dst: Any = None) -> NkiTensor:
    """An ``n x n`` identity matrix in SBUF (``nl.shared_identity_matrix``): an iota and a compare."""
    t = dst if dst is not None else current().new_tensor((n, n), dtype, sbuf)
    idx = fresh_result((n, n), dtypes.int32, sbuf)
    instructions.iota_pattern(idx, [[1, n]], 0, -1)                  # j - p
    instructions.tensor_scalar(t, idx, "equal", 0)
    return t


def shared_constant(constant: Any, dtype: Any) -> NkiTensor:
    """A shared-HBM tensor holding ``constant`` (an array, or the path of a ``.npy`` file; current
    ``nki.language.shared_constant`` page: "Can be a numpy array or a file path to a ``.npy`` file").

    Raises:
        err_invalid_instruction_argument: a path that is not a readable ``.npy`` file, or a value that is
            not an array of numbers.
    """
    if isinstance(constant, (str, bytes)) or hasattr(constant, "__fspath__"):
        try:
            arr = np.load(constant, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise err_invalid_instruction_argument(
                f"nl.shared_constant({constant!r}): not a readable .npy file ({e})") from None
    else:
        arr = np.asarray(constant)
    if arr.dtype.kind not in "biuf":
        raise err_invalid_instruction_argument(
            f"nl.shared_constant: the constant is {constant!r} ({arr.dtype}); it takes a NumPy array of numbers "
            "or the path of a .npy file")
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.as_dtype(arr.dtype if arr.dtype != np.float64
                                                                          else np.float32)
    sim = current()
    st_dtype = dtypes.storage_dtype(dt, sim.keep)
    data = dtypes.from_f32(arr.astype(np.float64) if arr.dtype.kind == "f" else arr, dt, sim.keep).astype(st_dtype)
    t = sim.new_tensor(arr.shape, dt, "hbm", name="shared_constant", data=data.reshape(-1))
    t.storage.written = True
    return t


def rand(shape: Any, dtype: Any, buffer: Any, name: str) -> NkiTensor:
    """A new tensor of uniform [0, 1) values from the Vector Engine's generator."""
    sim = current()
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    t = sim.new_tensor(shape, dtype, buffer, name)
    if t.buffer.kind in ON_CHIP:
        with sim.instruction("rand", "vector", max(int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1,
                                                    sim.platform.core.min_ii_cycles)) as ins:
            ins.write(t, sim.core.rng["vector"].random(t.shape, dtype=np.float32))
    else:
        st = t.storage
        st.data[...] = dtypes.from_f32(sim.core.rng["vector"].random(st.data.shape, dtype=np.float32), st.dtype,
                                       st.keep)
        st.written = True
    return t


def dropout(x: NkiTensor, rate: Any, dtype: Any, mask: Any) -> NkiTensor:
    """A new tile: ``x`` with elements zeroed with probability ``rate``."""
    dst = fresh_result(x.shape, x.dtype, sbuf, mask)
    instructions.dropout(dst, x, rate, mask=mask)
    if dtype is not None and dtypes.as_dtype(dtype) != x.dtype:
        return copy(dst, dtype, mask)
    return dst


def rms_norm(x: NkiTensor, w: NkiTensor, axis: Any, n: int, epsilon: float, dtype: Any, mask: Any) -> NkiTensor:
    """``x / sqrt(mean(x^2 over axis, n values) + epsilon) * w`` in fp32 -> a new SBUF tile."""
    axes = instructions.reduce_axes(axis, len(x.shape), "rms_norm", x.describe())
    p = x.shape[0]
    sq = fresh_result(x.shape, dtypes.float32, sbuf)
    ss = fresh_result((p, 1), dtypes.float32, sbuf)
    instructions.activation(sq, "square", x, reduce_res=ss, mask=mask)
    rinv = fresh_result((p, 1), dtypes.float32, sbuf)
    instructions.tensor_scalar(rinv, ss, "multiply", 1.0 / float(n), op1="add", operand1=float(epsilon))
    instructions.activation(rinv, "rsqrt", rinv)
    y = fresh_result(x.shape, dtypes.float32, sbuf)
    instructions.tensor_scalar(y, x, "multiply", rinv, mask=mask)
    dst = fresh_result(x.shape, dtypes.as_dtype(dtype) if dtype is not None else x.dtype, sbuf, mask)
    instructions.tensor_tensor(dst, y, w, "multiply", mask=mask, bcast="all")
    _ = axes
    return dst


def gather_flattened(data: NkiTensor, indices: NkiTensor, dtype: Any, mask: Any) -> NkiTensor:
    """Per partition, ``data`` (free dims flattened) gathered at ``indices`` -> a tile of ``indices``'
    shape."""
    dst = fresh_result(indices.shape, dtypes.as_dtype(dtype) if dtype is not None else data.dtype, sbuf, mask)
    instructions.gather_flattened(dst, data, indices, mask=mask)
    return dst


def loop_reduce(x: NkiTensor, op: Any, dtype: Any, mask: Any, name: str | None = None) -> NkiTensor:
    """``nl.loop_reduce(x, op, loop_indices)``: AWS: "The destination tile is also the rhs input to op",
    so ``dst[...] = nl.loop_reduce(x, op, ...)`` computes ``dst = op(x, dst)`` (a Vector tensor_tensor).
    The returned tile only carries ``x`` and ``op`` to that assignment; using it any other way raises
    ``NotImplementedError`` (the simulator cannot know which tile the reduction goes into)."""
    res = fresh_result(x.shape, dtypes.as_dtype(dtype) if dtype is not None else x.dtype, sbuf, mask)
    instructions.tensor_copy(res, x, mask=mask, name=name)
    res.loop_op = op
    return res


def atomic_rmw(dst: NkiTensor, value: Any, op: Any, mask: Any) -> None:
    """``dst = op(dst, value)`` on HBM by a read-modify-write DMA (``op``: add)."""
    from .ops import op_name
    if op_name(op) != "add":
        raise err_invalid_instruction_argument(f"nl.atomic_rmw: op {op_name(op)!r}; only np.add is supported")
    if dst.buffer.kind != "hbm":
        raise err_unsupported_memory(f"nl.atomic_rmw: dst {dst.describe()} must be in HBM")
    instructions.dma_copy(dst, value, mask, api="atomic_rmw", dst_rmw_op="add")
